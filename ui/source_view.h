// Source tab: a function's source file read from disk with the self and
// total weight of each line beside it, scrolled to the hottest line (as
// pprof's `list`, Hotspot and Tracy show it). A file that is not where the
// profile says gets a clear "not found at PATH" and a prefix map (built in
// /build/src, found in /home/me/src).
//
// A view unit: its state per source is in SessionState::view_args
// ("source": the function, "source/file": which of its files, "source
// map": the path prefix map, kept across functions), its data its own
// product (SourceListing), built by the worker.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "storage/model/source_lines.h"
#include "ui/view.h"

namespace kiln::ui {

// What the Source view shows: a function's weight per line of its source
// files, and the chosen (else the heaviest) file's text as read from disk.
struct SourceListing {
  std::string function;
  std::vector<storage::FunctionSource> files;  // heaviest first
  size_t shown = 0;                            // which of files the text is
  std::string path;                            // where it was looked for (after the prefix map)
  std::vector<std::string> text;               // its lines; empty when not read
  std::string error;                           // "not found at PATH", ...
};

// The path prefix map (prefix -> prefix, first match wins) as the view
// keeps it in a session's view_args["source map"], and back.
using SourcePathMap = std::vector<std::pair<std::string, std::string>>;
std::string EncodeSourcePathMap(const SourcePathMap& map);
SourcePathMap DecodeSourcePathMap(const std::string& text);

class SourceView : public View {
 public:
  std::string_view Id() const override { return "source"; }
  std::string_view Title() const override { return "Source"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }
  Product OwnProduct() const override;
  std::vector<Flag> Flags() const override;
  std::vector<FunctionAction> FunctionActions() const override;

 private:
  std::shared_ptr<const SourceListing> listing_;
  bool scroll_to_hottest_ = false;
  char map_from_[512] = {};
  char map_to_[512] = {};
  bool settled_ = false;
};

}  // namespace kiln::ui
