// `perf script` text: a header line per sample ("comm pid/tid [cpu] time:
// period event:"), then one line per frame, leaf first ("addr sym+off
// (dso)"), then a blank line. Field selection (-F) changes which header
// parts exist, so every part after comm and pid is optional.
//
// Frame names and grouping follow stackcollapse-perf.pl (FlameGraph) so
// that `kiln export --group-by process --annotate` prints what
// `stackcollapse-perf.pl --all` prints: the same name tidying (";" -> ":",
// arguments cut at the first "(", quotes dropped, Java "L" prefixes), the
// same kernel rule (dso "[...]" or ".../vmlinux") and JIT rule
// (/tmp/perf-PID.map), the period as weight, and only the first event
// type unless asked for another.
#include <charconv>
#include <ctime>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ingest/capture/batch_builder.h"
#include "ingest/capture/importers.h"

namespace kiln::capture {
namespace {

using storage::FrameType;

// The largest whole seconds whose nanoseconds fit in int64.
constexpr int64_t kMaxSeconds = INT64_MAX / 1000000000 - 1;

bool IsWs(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLowerHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }  // how perf prints addresses
bool IsWord(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

struct Header {
  std::string_view comm;
  std::string_view pid;  // empty when perf printed only the tid
  std::string_view tid;
  std::string_view cpu;
  int64_t time_ns = 0;
  bool has_time = false;
  int64_t period = 0;  // 0 = not printed
  std::string_view event;
};

// The comm is the shortest prefix (at least one character, first not a
// space) followed by whitespace, a number, optionally "/number", and
// whitespace or the end of the line.
bool ParseHeader(std::string_view line, Header* h) {
  for (size_t i = 1; i < line.size(); ++i) {
    if (!IsWs(line[i])) continue;
    size_t j = i;
    while (j < line.size() && IsWs(line[j])) ++j;
    size_t d0 = j;
    while (j < line.size() && IsDigit(line[j])) ++j;
    if (j == d0) continue;
    std::string_view first = line.substr(d0, j - d0);
    std::string_view second;
    if (j < line.size() && line[j] == '/') {
      size_t k = j;
      while (k < line.size() && line[k] == '/') ++k;
      size_t d1 = k;
      while (k < line.size() && IsDigit(line[k])) ++k;
      second = line.substr(d1, k - d1);
      j = k;
    }
    if (j < line.size() && !IsWs(line[j])) continue;
    h->comm = line.substr(0, i);
    if (second.empty()) {
      h->tid = first;
    } else {
      h->pid = first;
      h->tid = second;
    }
    // The remaining fields: "[cpu]", "secs.frac:", "period", "event:".
    std::string_view rest = line.substr(j);
    size_t p = 0;
    while (p < rest.size()) {
      while (p < rest.size() && IsWs(rest[p])) ++p;
      size_t e = p;
      while (e < rest.size() && !IsWs(rest[e])) ++e;
      std::string_view tok = rest.substr(p, e - p);
      p = e;
      if (tok.size() > 2 && tok.front() == '[' && tok.back() == ']' && h->cpu.empty() && !h->has_time) {
        h->cpu = tok.substr(1, tok.size() - 2);
      } else if (!h->has_time && tok.size() > 2 && tok.back() == ':' && IsDigit(tok[0]) &&
                 tok.find('.') != std::string_view::npos) {
        std::string_view t = tok.substr(0, tok.size() - 1);
        size_t dot = t.find('.');
        int64_t secs = 0;
        auto r1 = std::from_chars(t.data(), t.data() + dot, secs);
        std::string_view frac = t.substr(dot + 1);
        if (r1.ec != std::errc() || frac.empty() || frac.size() > 9) continue;
        int64_t f = 0;
        auto r2 = std::from_chars(frac.data(), frac.data() + frac.size(), f);
        if (r2.ec != std::errc() || r2.ptr != frac.data() + frac.size()) continue;
        // perf's clock counts up from boot; nanoseconds must fit in int64
        // (292 years), and so must the shift to the capture date below.
        if (secs < 0 || secs > kMaxSeconds) continue;
        for (size_t k = frac.size(); k < 9; ++k) f *= 10;
        h->time_ns = secs * 1000000000 + f;
        h->has_time = true;
      }
    }
    // Event and period, as stackcollapse-perf.pl finds them: the line ends
    // with "EVENT:" preceded by whitespace, an optional period, and the
    // colon that ends the time field.
    std::string_view t = line;
    while (!t.empty() && (IsWs(t.back()) || t.back() == '\r')) t.remove_suffix(1);
    if (!t.empty() && t.back() == ':') {
      t.remove_suffix(1);
      size_t ev = t.size();
      while (ev > 0 && !IsWs(t[ev - 1])) --ev;
      std::string_view event = t.substr(ev);
      size_t q = ev;
      while (q > 0 && IsWs(t[q - 1])) --q;
      if (!event.empty() && q < ev) {
        size_t digits_end = q;
        while (q > 0 && IsDigit(t[q - 1])) --q;
        std::string_view period = t.substr(q, digits_end - q);
        size_t c = q;
        if (!period.empty()) {
          while (c > 0 && IsWs(t[c - 1])) --c;
        }
        if (c > 0 && t[c - 1] == ':') {
          h->event = event;
          if (!period.empty()) std::from_chars(period.data(), period.data() + period.size(), h->period);
        }
      }
    }
    return true;
  }
  return false;
}

// What the imported values of `event` measure. With periods they are the
// event's own unit: nanoseconds for the clock events and `perf record
// --off-cpu`'s "offcpu-time", otherwise counts of the event ("cycles",
// "page-faults"). Without, each sample counts one: on-CPU samples for CPU
// events, probe events for the rest (tracepoints, uprobes).
storage::SampleType PerfSampleType(std::string_view event, bool periods) {
  auto has = [&](std::string_view s) { return event.find(s) != std::string_view::npos; };
  const bool off_cpu = has("offcpu") || has("off-cpu") || has("off_cpu");
  const bool clock = has("clock");
  const bool cpu = event.empty() || clock || has("cycles") || has("instructions") || has("cpu");
  if (periods) {
    if (off_cpu) return storage::OffCpuTime();
    if (clock) return {"cpu", "nanoseconds"};
    if (!event.empty()) {
      std::string name(event);
      if (name.back() == ':') name.pop_back();
      return {name, "count"};
    }
    return storage::OnCpuSamples();
  }
  return cpu && !off_cpu ? storage::OnCpuSamples() : storage::ProbeEvents();
}

bool ContainsPerfMap(std::string_view mod) {
  // "/tmp/perf-<digits>.map" anywhere in the dso.
  size_t p = 0;
  while ((p = mod.find("/tmp/perf-", p)) != std::string_view::npos) {
    size_t q = p + 10, d = q;
    while (q < mod.size() && IsDigit(mod[q])) ++q;
    if (q > d && mod.substr(q, 4) == ".map") return true;
    p += 1;
  }
  p = 0;
  while ((p = mod.find("/jitted-", p)) != std::string_view::npos) {
    size_t q = p + 8, d = q;
    while (q < mod.size() && IsDigit(mod[q])) ++q;
    if (q > d && q < mod.size() && mod[q] == '-') {
      size_t d2 = ++q;
      while (q < mod.size() && IsDigit(mod[q])) ++q;
      if (q > d2 && mod.substr(q, 3) == ".so") return true;
    }
    p += 1;
  }
  return false;
}

// stackcollapse-perf.pl's tidy_generic and tidy_java.
std::string TidyName(std::string_view func, bool java) {
  std::string s(func);
  for (char& c : s) {
    if (c == ';') c = ':';
  }
  // Go method names such as "net/http.(*Client).Do" keep their parens.
  size_t open = s.find(".(");
  bool go_method = open != std::string::npos && s.find(").", open + 2) != std::string::npos;
  if (!go_method) {
    size_t p = 0;
    while ((p = s.find('(', p)) != std::string::npos) {
      if (s.compare(p + 1, 20, "anonymous namespace)") == 0) {
        p += 21;
        continue;
      }
      s.resize(p);
      break;
    }
  }
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c != '"' && c != '\'') out.push_back(c);
  }
  if (java && out.size() > 1 && out[0] == 'L' && out.find('/') != std::string::npos) {
    out.erase(0, 1);
  }
  return out;
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// "4052c0 deflate_slow (/bin/gzip)": a hex address, whitespace, and a
// " (dso)" at the end.
bool IsUnindentedFrame(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && IsLowerHex(line[i])) ++i;
  return i > 0 && i < line.size() && IsWs(line[i]) && line.back() == ')' &&
         line.find(" (") != std::string_view::npos;
}

int64_t ParseCapturedOn(std::string_view line) {
  // "# captured on: Thu Jul  7 20:48:39 2016" (perf prints local time; UTC
  // is the best guess without a zone).
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return 0;
  std::string value(line.substr(colon + 1));
  struct tm tm {};
  if (strptime(value.c_str(), " %a %b %e %H:%M:%S %Y", &tm) == nullptr) return 0;
  time_t t = timegm(&tm);
  if (t <= 0 || t > kMaxSeconds) return 0;  // past 2262 is not a capture date
  return int64_t{t} * 1000000000;
}

}  // namespace

absl::Status ImportPerfScript(std::string_view text, ParseContext& ctx) {
  ImportedCapture* out = ctx.out();
  BatchBuilder builder(&out->batch);
  NameDemangler demangle(ctx.options().demangle);
  const ImportOptions& options = ctx.options();

  std::string event_filter = options.perf_event;
  bool any_period = false;
  bool event_defaulted = event_filter.empty();
  uint64_t filtered_samples = 0;
  std::string first_filtered_event;
  int64_t captured_on_ns = 0;

  bool active = false;  // inside a sample that passes the event filter
  Header header;
  std::vector<uint32_t> leaf_first;
  std::vector<uint32_t> root_first;
  std::vector<int64_t> times;  // parallel to samples, raw perf clock
  std::vector<bool> has_time;

  // Frame lines repeat a lot; cache "java flag + line text" -> frames.
  absl::flat_hash_map<std::string, std::vector<uint32_t>> frame_cache;
  absl::flat_hash_map<std::string, uint32_t> attr_cache;
  std::string key;

  auto finish_sample = [&]() {
    if (!active) return;
    active = false;
    root_first.assign(leaf_first.rbegin(), leaf_first.rend());
    leaf_first.clear();
    key.clear();
    absl::StrAppend(&key, Av(header.comm), "\x1f", Av(header.pid), "\x1f", Av(header.tid), "\x1f",
                    Av(header.cpu));
    uint32_t attrs;
    auto it = attr_cache.find(key);
    if (it != attr_cache.end()) {
      attrs = it->second;
    } else {
      std::string process(header.comm);
      for (char& c : process) {
        if (c == ' ') c = '_';  // stackcollapse-perf.pl's process names
      }
      std::vector<std::pair<std::string, std::string>> kv;
      kv.emplace_back(std::string(storage::attr::kProcessExecutableName), process);
      kv.emplace_back(std::string(storage::attr::kThreadName), std::string(header.comm));
      if (!header.tid.empty())
        kv.emplace_back(std::string(storage::attr::kThreadId), std::string(header.tid));
      if (!header.pid.empty())
        kv.emplace_back(std::string(storage::attr::kProcessPid), std::string(header.pid));
      if (!header.cpu.empty()) {
        std::string_view cpu = header.cpu;
        while (cpu.size() > 1 && cpu[0] == '0') cpu.remove_prefix(1);
        kv.emplace_back(std::string(storage::attr::kCpu), std::string(cpu));
      }
      attrs = builder.AttributeSet(std::move(kv));
      attr_cache.emplace(key, attrs);
    }
    storage::Sample s;
    s.stack = builder.Stack(root_first);
    s.attribute_set = attrs;
    s.value = options.perf_use_period && header.period > 0 ? header.period : 1;
    any_period = any_period || (options.perf_use_period && header.period > 0);
    out->batch.samples.push_back(s);
    times.push_back(header.time_ns);
    has_time.push_back(header.has_time);
  };

  size_t pos = 0;
  uint64_t line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if ((line_no & 1023) == 0) {
      if (absl::Status s = ctx.Tick(pos, text.size()); !s.ok()) return s;
    }
    if (!line.empty() && line[0] == '#') {
      if (line.substr(0, 14) == "# captured on:") captured_on_ns = ParseCapturedOn(line);
      continue;
    }
    if (line.empty()) {
      finish_sample();
      continue;
    }
    // Older perf versions print frames without leading whitespace: a line
    // that is no header but reads "hexaddr sym (dso)" inside a sample is a
    // frame, as stackcollapse-perf.pl reads it (header first, then frame).
    Header h;
    const bool header_line = !IsWs(line[0]) && ParseHeader(line, &h);
    if (!IsWs(line[0]) && !header_line && !IsUnindentedFrame(line)) {
      finish_sample();
      ctx.Skip(absl::StrCat(ctx.name(), ":", line_no, ": unrecognized perf script line"));
      continue;
    }
    if (header_line) {
      // A new header also ends a sample whose blank line is missing.
      finish_sample();
      if (!h.event.empty()) {
        if (event_filter.empty()) {
          event_filter = std::string(h.event);
        } else if (h.event != event_filter) {
          ++filtered_samples;
          ++out->skipped_records;
          if (first_filtered_event.empty()) first_filtered_event = std::string(h.event);
          continue;
        }
      }
      header = h;
      active = true;
      continue;
    }
    if (!active) continue;  // frames of a filtered or unrecognized sample

    // Frame line: "  addr sym+0xoff (dso)".
    size_t p = 0;
    while (p < line.size() && IsWs(line[p])) ++p;
    std::string_view body = line.substr(p);
    bool java = header.comm.substr(0, 4) == "java";
    key.assign(java ? "J" : "-");
    key.append(body);
    auto cached = frame_cache.find(key);
    if (cached != frame_cache.end()) {
      // Frames are cached root-first within the line; push leaf-first.
      leaf_first.insert(leaf_first.end(), cached->second.rbegin(), cached->second.rend());
      continue;
    }
    size_t pc_end = 0;
    while (pc_end < body.size() && IsWord(body[pc_end])) ++pc_end;
    size_t close = body.rfind(')');
    size_t open = close == std::string_view::npos ? std::string_view::npos : body.rfind(" (", close);
    size_t func_start = pc_end;
    while (func_start < body.size() && IsWs(body[func_start])) ++func_start;
    std::string_view pc = body.substr(0, pc_end);
    std::string_view rawfunc, mod;
    if (pc_end > 0 && open != std::string_view::npos && open + 1 >= func_start && open >= pc_end) {
      // An empty symbol ("4011a6  (/tmp/a.out)") is perf's "[unknown]".
      rawfunc = open > func_start ? body.substr(func_start, open - func_start) : "[unknown]";
      mod = body.substr(open + 2, close - open - 2);
    } else {
      // `-F ip,sym` without dso: "  addr sym". Only a hex address followed
      // by whitespace counts, so source lines (-F +srcline) stay skipped.
      bool hex_pc = pc_end > 0 && func_start > pc_end && func_start < body.size();
      for (char c : pc) hex_pc = hex_pc && IsLowerHex(c);
      if (!hex_pc) {
        ctx.Skip(absl::StrCat(ctx.name(), ":", line_no, ": unrecognized perf script frame line"));
        continue;
      }
      rawfunc = body.substr(func_start);
      mod = "[unknown]";
    }
    // "sym+0x1a" offsets (Linux 4.8+) are noise for aggregation.
    size_t plus = rawfunc.rfind("+0x");
    if (plus != std::string_view::npos) {
      std::string_view hex = rawfunc.substr(plus + 3);
      bool all_hex = !hex.empty();
      for (char c : hex) all_hex = all_hex && IsLowerHex(c);
      if (all_hex) rawfunc = rawfunc.substr(0, plus);
    }
    std::vector<uint32_t> line_frames;  // root-first within this line
    if (!rawfunc.empty() && rawfunc[0] == '(') {
      frame_cache.emplace(key, line_frames);  // perf's "(process name)" lines
      continue;
    }
    uint64_t address = 0;
    std::from_chars(pc.data(), pc.data() + pc.size(), address, 16);
    bool unknown_mod = mod.find("unknown") != std::string_view::npos;
    bool kernel = !unknown_mod && ((!mod.empty() && mod[0] == '[') ||
                                   (mod.size() >= 7 && mod.substr(mod.size() - 7) == "vmlinux"));
    bool jit = !kernel && ContainsPerfMap(mod);
    uint32_t executable = 0;
    if (!kernel && !jit && !mod.empty() && mod != "[unknown]") {
      storage::Executable e;
      e.file_name = builder.String(mod);
      executable = builder.Executable(e);
    }
    size_t fpos = 0;
    int index = 0;
    while (fpos <= rawfunc.size()) {
      size_t arrow = rawfunc.find("->", fpos);
      if (arrow == std::string_view::npos) arrow = rawfunc.size();
      std::string_view func = rawfunc.substr(fpos, arrow - fpos);
      fpos = arrow + 2;
      std::string name;
      if (func == "[unknown]") {
        name = mod != "[unknown]" ? absl::StrCat("[", Av(Basename(mod)), "]") : "[unknown]";
      } else {
        name = std::string(func);
      }
      storage::Frame f;
      f.function = builder.String(demangle(TidyName(name, java)));
      f.executable = executable;
      f.address = address;
      f.type = kernel        ? FrameType::kKernel
               : jit         ? FrameType::kJit
               : unknown_mod ? FrameType::kUnknown
                             : FrameType::kNative;
      f.inlined = index > 0;
      line_frames.push_back(builder.Frame(f));
      ++index;
    }
    leaf_first.insert(leaf_first.end(), line_frames.rbegin(), line_frames.rend());
    frame_cache.emplace(key, std::move(line_frames));
  }
  if (active && out->batch.samples.empty()) {
    finish_sample();  // the file's only sample: better than importing nothing
  } else if (active) {
    // No blank line after the last sample: the output was probably cut off
    // mid-stack, so the sample may be incomplete. stackcollapse-perf.pl
    // drops it too, which keeps folded output identical to it.
    ctx.Skip(absl::StrCat(ctx.name(), ":", line_no,
                          ": last sample has no terminating blank line (possibly truncated); "
                          "skipped"));
    active = false;
  }
  if (out->batch.samples.empty() && out->skipped_records > filtered_samples) {
    return absl::InvalidArgumentError(absl::StrCat(ctx.name(),
                                                   ": no perf script samples found; first problem: ",
                                                   out->warnings.empty() ? "" : out->warnings.front()));
  }

  if (filtered_samples > 0) {
    ctx.Warn(absl::StrCat(ctx.name(), ": ", filtered_samples, " samples of other events (first: \"",
                          first_filtered_event, "\") skipped; imported only \"", event_filter, "\"",
                          event_defaulted ? " (the first event in the file)" : ""));
  }
  out->perf_event = event_filter;
  const uint32_t sample_type = out->batch.dict.AddSampleType({PerfSampleType(event_filter, any_period)});
  for (storage::Sample& s : out->batch.samples) s.sample_type = sample_type;

  // perf's clock counts from boot. Anchor the last sample at the capture
  // time (the header's "captured on", else the caller's anchor) so data
  // lands in a sensible place on a Unix time axis.
  int64_t anchor = captured_on_ns != 0 ? captured_on_ns : options.anchor_time_ns;
  int64_t max_time = 0;
  bool any_time = false;
  for (size_t i = 0; i < times.size(); ++i) {
    if (has_time[i]) {
      max_time = any_time ? std::max(max_time, times[i]) : times[i];
      any_time = true;
    }
  }
  int64_t offset = anchor != 0 && any_time ? anchor - max_time : 0;
  for (size_t i = 0; i < times.size(); ++i) {
    out->batch.samples[i].time_ns = has_time[i] ? times[i] + offset : anchor;
  }
  return absl::OkStatus();
}

}  // namespace kiln::capture
