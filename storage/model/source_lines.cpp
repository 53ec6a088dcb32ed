#include "storage/model/source_lines.h"

#include <algorithm>
#include <map>

namespace kiln::storage {

int64_t FunctionSource::HottestLine() const {
  int64_t best = 0, weight = -1;
  for (const SourceLineWeight& l : lines) {
    if (l.total > weight) {
      weight = l.total;
      best = l.line;
    }
  }
  return best;
}

std::vector<FunctionSource> SourceLinesOf(const ProfileSlice& slice, std::string_view function, bool show_inline) {
  const ProfileDictionary& d = slice.dict;
  // Which frames are the function's, found once per frame.
  std::vector<int8_t> is_function(d.frames.size(), -1);
  auto of_function = [&](uint32_t f) {
    if (is_function[f] < 0) is_function[f] = FrameLabel(d, f) == function ? 1 : 0;
    return is_function[f] == 1;
  };
  std::map<uint32_t, std::map<int64_t, SourceLineWeight>> by_file;  // file string -> line -> weight
  std::map<uint32_t, std::pair<int64_t, int64_t>> file_totals;      // self, total
  // What this stack already counted toward totals (once per stack): lines
  // as (file, line), and files. Reused across stacks.
  std::vector<std::pair<uint32_t, int64_t>> seen;
  std::vector<uint32_t> files_counted;
  for (const StackWeight& w : slice.weights) {
    seen.clear();
    files_counted.clear();
    const auto stack = d.Stack(w.stack);
    uint32_t leaf = 0;
    for (uint32_t f : stack) {
      if (!show_inline && d.frames[f].inlined) continue;
      leaf = f;
    }
    for (uint32_t f : stack) {
      const Frame& frame = d.frames[f];
      if (!show_inline && frame.inlined) continue;
      if (!of_function(f) || frame.file == 0) continue;
      if (std::find(files_counted.begin(), files_counted.end(), frame.file) == files_counted.end()) {
        files_counted.push_back(frame.file);
        file_totals[frame.file].second += w.weight;
      }
      if (f == leaf) file_totals[frame.file].first += w.weight;
      if (frame.line <= 0) continue;
      SourceLineWeight& l = by_file[frame.file][frame.line];
      l.line = frame.line;
      if (f == leaf) l.self += w.weight;
      const std::pair<uint32_t, int64_t> key{frame.file, frame.line};
      if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
        seen.push_back(key);
        l.total += w.weight;
      }
    }
  }
  std::vector<FunctionSource> out;
  for (const auto& [file, totals] : file_totals) {
    FunctionSource s;
    s.file = d.strings[file];
    s.self = totals.first;
    s.total = totals.second;
    for (const auto& [line, weight] : by_file[file]) s.lines.push_back(weight);
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const FunctionSource& a, const FunctionSource& b) { return a.total > b.total; });
  return out;
}

std::string MapSourcePath(const std::string& path, const std::vector<std::pair<std::string, std::string>>& prefixes) {
  for (const auto& [from, to] : prefixes) {
    if (from.empty() || path.compare(0, from.size(), from) != 0) continue;
    // A whole component: "/src" maps "/src/a.c", not "/srcx/a.c".
    if (path.size() > from.size() && from.back() != '/' && path[from.size()] != '/') continue;
    return to + path.substr(from.size());
  }
  return path;
}

}  // namespace kiln::storage
