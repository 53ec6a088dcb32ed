// Folded stacks ("a;b;c 12", root first): the text format of
// stackcollapse-*.pl and many tools. Lines that are not a stack and a count
// are skipped and counted, never fatal. The `_[k]` and `_[j]` suffixes of
// `stackcollapse-perf.pl --all` become kernel/JIT frame types (the folded
// exporter's --annotate writes them back).
#include <charconv>

#include "absl/strings/str_cat.h"
#include "ingest/capture/batch_builder.h"
#include "ingest/capture/importers.h"

namespace kiln::capture {

absl::Status ImportFolded(std::string_view text, ParseContext& ctx) {
  ImportedCapture* out = ctx.out();
  BatchBuilder builder(&out->batch);
  NameDemangler demangle(ctx.options().demangle);
  std::vector<uint32_t> frames;
  size_t pos = 0;
  uint64_t line_no = 0;
  const int64_t time = ctx.options().anchor_time_ns;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (absl::Status s = ctx.Tick(pos, text.size()); !s.ok()) return s;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (line.empty()) continue;
    size_t space = line.rfind(' ');
    int64_t count = 0;
    bool ok = space != std::string_view::npos && space > 0;
    if (ok) {
      std::string_view num = line.substr(space + 1);
      auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), count);
      ok = ec == std::errc() && p == num.data() + num.size();
    }
    if (!ok) {
      ctx.Skip(absl::StrCat(ctx.name(), ":", line_no, ": not a folded stack line (\"frames count\")"));
      continue;
    }
    if (count == 0) continue;
    std::string_view stack = line.substr(0, space);
    frames.clear();
    size_t fpos = 0;
    while (fpos <= stack.size()) {
      size_t semi = stack.find(';', fpos);
      if (semi == std::string_view::npos) semi = stack.size();
      std::string_view name = stack.substr(fpos, semi - fpos);
      fpos = semi + 1;
      storage::Frame frame;
      frame.type = storage::FrameType::kUnknown;
      if (name.size() > 4 && name.substr(name.size() - 4) == "_[k]") {
        frame.type = storage::FrameType::kKernel;
        name.remove_suffix(4);
      } else if (name.size() > 4 && name.substr(name.size() - 4) == "_[j]") {
        frame.type = storage::FrameType::kJit;
        name.remove_suffix(4);
      }
      name = demangle(name);
      if (frame.type == storage::FrameType::kUnknown) {
        // Nothing says otherwise: native code (what perf and most tools
        // fold), unless the label names a source file of another language.
        const storage::FrameType t = storage::FrameTypeOfLabel(name);
        frame.type = t != storage::FrameType::kUnknown ? t : storage::FrameType::kNative;
      }
      frame.function = builder.String(name);
      frames.push_back(builder.Frame(frame));
    }
    storage::Sample sample;
    sample.time_ns = time;
    sample.stack = builder.Stack(frames);
    sample.value = count;
    out->batch.samples.push_back(sample);
  }
  if (out->batch.samples.empty() && out->skipped_records > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(ctx.name(), ": no folded stack lines (\"frames count\"); ", out->skipped_records,
                     " lines skipped, first: ", out->warnings.empty() ? "" : out->warnings.front()));
  }
  return absl::OkStatus();
}

}  // namespace kiln::capture
