#include "ui/source_view.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ui/format.h"
#include "ui/frame_colors.h"
#include "ui/theme.h"
#include "ui/widgets.h"

namespace kiln::ui {

namespace {

constexpr const char* kFunction = "source";
constexpr const char* kFile = "source/file";  // reset when another function is opened
constexpr const char* kMap = "source map";    // kept across functions
// Separators that no path or function name holds.
constexpr char kField = '\x1f', kPair = '\x1e', kEntry = '\x1d';

// Reads listing->path into listing->text: a regular file of at most
// 16 MiB (never a FIFO or device, which could block the worker), else a
// clear error naming the path.
void ReadSourceFile(SourceListing* listing) {
  std::error_code ec;
  const std::filesystem::path path(listing->path);
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    listing->error = "not found at " + listing->path;
    return;
  }
  if (!std::filesystem::is_regular_file(status)) {
    listing->error = listing->path + " is not a regular file";
    return;
  }
  constexpr uintmax_t kMaxBytes = 16 << 20;
  if (std::filesystem::file_size(path, ec) > kMaxBytes) {
    listing->error = listing->path + " is larger than 16 MiB";
    return;
  }
  std::ifstream in(path);
  if (!in) {
    listing->error = "cannot read " + listing->path;
    return;
  }
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    listing->text.push_back(std::move(line));
  }
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = text.find(separator, start)) != std::string::npos; start = at + 1) {
    parts.push_back(text.substr(start, at - start));
  }
  parts.push_back(text.substr(start));
  return parts;
}

// Worker thread: the function's lines from the slice, and its file read
// through the path map. `inputs` is "function, file, map" (SourceInputs).
std::shared_ptr<const void> BuildListing(const storage::Store&, const AnalysisSnapshot& snapshot,
                                         const std::string& inputs) {
  const std::vector<std::string> fields = Split(inputs, kField);
  if (fields.size() != 3 || !snapshot.slice) return nullptr;
  auto listing = std::make_shared<SourceListing>();
  listing->function = fields[0];
  listing->files =
      storage::SourceLinesOf(*snapshot.slice, listing->function, snapshot.request.tree_options.show_inline);
  for (size_t i = 0; i < listing->files.size(); ++i) {
    if (listing->files[i].file == fields[1]) listing->shown = i;
  }
  if (!listing->files.empty()) {
    listing->path = storage::MapSourcePath(listing->files[listing->shown].file, DecodeSourcePathMap(fields[2]));
    ReadSourceFile(listing.get());
  }
  return listing;
}

std::string SourceInputs(const SessionState& session) {
  const std::string& function = session.ViewArg(kFunction);
  if (function.empty()) return "";
  return function + kField + session.ViewArg(kFile) + kField + session.ViewArg(kMap);
}

}  // namespace

std::string EncodeSourcePathMap(const SourcePathMap& map) {
  std::string text;
  for (const auto& [from, to] : map) {
    if (!text.empty()) text += kEntry;
    text += from + kPair + to;
  }
  return text;
}

SourcePathMap DecodeSourcePathMap(const std::string& text) {
  SourcePathMap map;
  if (text.empty()) return map;
  for (const std::string& entry : Split(text, kEntry)) {
    const size_t pair = entry.find(kPair);
    if (pair != std::string::npos) map.emplace_back(entry.substr(0, pair), entry.substr(pair + 1));
  }
  return map;
}

View::Product SourceView::OwnProduct() const { return {.inputs = &SourceInputs, .build = &BuildListing}; }

namespace {

// --source-map FROM=TO ... as the view keeps its path map.
std::string EncodeMapFlags(const std::vector<std::string>& values, std::string* error) {
  SourcePathMap map;
  for (const std::string& value : values) {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) {
      *error = "--source-map wants FROM=TO, got \"" + value + "\"";
      return "";
    }
    map.emplace_back(value.substr(0, eq), value.substr(eq + 1));
  }
  return EncodeSourcePathMap(map);
}

}  // namespace

std::vector<FunctionAction> SourceView::FunctionActions() const {
  return {{.view = kFunction, .label = "Show source", .tooltip = "Its source file with the weight of each line"}};
}

std::vector<View::Flag> SourceView::Flags() const {
  return {{.name = "--source", .help = "Open the Source view's function (exact name)", .key = kFunction},
          {.name = "--source-map",
           .help = "Find sources under another prefix here: FROM=TO (repeatable)",
           .key = kMap,
           .repeatable = true,
           .encode = &EncodeMapFlags}};
}

void SourceView::Draw(const ViewContext& context) {
  settled_ = false;
  SessionState* session = context.session;
  if (session == nullptr) return;
  const std::string& function = session->ViewArg(kFunction);
  if (function.empty()) {
    ImGui::TextDisabled("Right-click a frame in the Flamegraph, Call tree or Top functions > Show source.");
    settled_ = true;
    return;
  }
  const AnalysisSnapshot* a = context.analysis;
  const auto listing = a ? a->ViewResult<SourceListing>(kFunction) : nullptr;
  if (!listing || listing->function != function) {
    DrawLoadingOrError(context);
    return;
  }
  if (listing != listing_) {
    listing_ = listing;
    scroll_to_hottest_ = true;
  }
  const SourceListing& l = *listing_;
  const storage::SampleType& type = a->request.query.sample_type;
  ImGui::TextUnformatted(ShortenLabel(l.function, 100).c_str());
  if (l.files.empty()) {
    ImGui::TextDisabled("The profile names no source file and line for this function.");
    settled_ = !context.computing;
    return;
  }
  const storage::FunctionSource& file = l.files[l.shown];
  // Its files (inlined code brings others), heaviest first.
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 36.f);
  if (ImGui::BeginCombo("##file", file.file.c_str())) {
    for (const storage::FunctionSource& f : l.files) {
      const std::string item = f.file + "  (" + FormatValue(type, f.total) + ")";
      if (ImGui::Selectable(item.c_str(), &f == &file)) session->view_args[kFile] = f.file;
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::TextDisabled("self %s, total %s in this file", FormatValue(type, file.self).c_str(),
                      FormatValue(type, file.total).c_str());
  if (!l.error.empty()) {
    ImGui::TextColored(CurrentPalette().error_text, "Source %s", l.error.c_str());
    // Where the file is here: a prefix of the profile's path, and what it
    // is on this machine.
    if (map_from_[0] == 0) {
      const std::string dir = file.file.substr(0, file.file.rfind('/') + 1);
      std::snprintf(map_from_, sizeof map_from_, "%s", dir.c_str());
    }
    ImGui::TextDisabled("Map the path prefix");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 20.f);
    ImGui::InputText("##from", map_from_, sizeof map_from_);
    ImGui::SameLine();
    ImGui::TextDisabled("to");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 20.f);
    ImGui::InputTextWithHint("##to", "/home/me/src/", map_to_, sizeof map_to_);
    ImGui::SameLine();
    if (ImGui::Button("Apply") && map_from_[0] != 0) {
      SourcePathMap map = DecodeSourcePathMap(session->ViewArg(kMap));
      map.insert(map.begin(), {map_from_, map_to_});
      session->view_args[kMap] = EncodeSourcePathMap(map);
    }
  }
  if (const SourcePathMap map = DecodeSourcePathMap(session->ViewArg(kMap)); !map.empty()) {
    ImGui::TextDisabled("Path map: %s -> %s%s", map[0].first.c_str(), map[0].second.c_str(),
                        map.size() > 1 ? " (and more)" : "");
    ImGui::SameLine();
    if (ImGui::SmallButton("Clear")) session->view_args.erase(kMap);
  }
  // Lines with weight, and the text when it was read: every line of the
  // file, or only the weighted ones.
  std::vector<const storage::SourceLineWeight*> by_line(l.text.size() + 1, nullptr);
  int64_t max_line = static_cast<int64_t>(l.text.size());
  for (const storage::SourceLineWeight& w : file.lines) max_line = std::max(max_line, w.line);
  by_line.resize(static_cast<size_t>(max_line) + 1, nullptr);
  for (const storage::SourceLineWeight& w : file.lines) by_line[static_cast<size_t>(w.line)] = &w;
  std::vector<int64_t> rows;
  if (!l.text.empty()) {
    for (int64_t i = 1; i <= max_line; ++i) rows.push_back(i);
  } else {
    for (const storage::SourceLineWeight& w : file.lines) rows.push_back(w.line);
  }
  const int64_t hottest = file.HottestLine();
  const double total = static_cast<double>(std::max<int64_t>(a->slice ? a->slice->total_weight : 1, 1));
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("##source", 4, flags)) return;
  const float em = ImGui::GetFontSize();
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("Self", 0, em * 9);
  ImGui::TableSetupColumn("Total", 0, em * 9);
  ImGui::TableSetupColumn("Line", 0, em * 4);
  ImGui::TableSetupColumn("Source", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  if (context.mono_font) ImGui::PushFont(context.mono_font);
  if (scroll_to_hottest_) {
    // A few lines of context above the hottest line (rows are one text
    // line plus the cell padding).
    const auto at = std::find(rows.begin(), rows.end(), hottest);
    const float row_h = ImGui::GetTextLineHeight() + 2.f * ImGui::GetStyle().CellPadding.y;
    ImGui::SetScrollY(std::max(0.f, (static_cast<float>(at - rows.begin()) - 5.f) * row_h));
    scroll_to_hottest_ = false;
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const int64_t line = rows[i];
      const storage::SourceLineWeight* w = by_line[static_cast<size_t>(line)];
      ImGui::TableNextRow();
      if (line == hottest) {
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1,
                               BlendTowards(CurrentPalette().background, CurrentPalette().total_bar, 0.5f));
      }
      if (w != nullptr) {
        ImGui::TableSetColumnIndex(0);
        if (w->self > 0) ImGui::TextUnformatted((FormatValue(type, w->self) + " " + FormatPercent(w->self / total)).c_str());
        ImGui::TableSetColumnIndex(1);
        ImGui::TextUnformatted((FormatValue(type, w->total) + " " + FormatPercent(w->total / total)).c_str());
      }
      ImGui::TableSetColumnIndex(2);
      ImGui::TextDisabled("%lld", static_cast<long long>(line));
      ImGui::TableSetColumnIndex(3);
      if (line >= 1 && static_cast<size_t>(line) <= l.text.size()) {
        ImGui::TextUnformatted(l.text[static_cast<size_t>(line) - 1].c_str());
      }
    }
  }
  if (context.mono_font) ImGui::PopFont();
  ImGui::EndTable();
  settled_ = !context.computing;
}

}  // namespace kiln::ui
