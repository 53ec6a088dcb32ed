#include "ingest/capture/dump.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "storage/model/sample_type.h"
#include "storage/model/time_text.h"

namespace kiln::capture {
namespace {

using storage::ProfileBatch;

std::string TimeText(int64_t unix_ns) {
  if (unix_ns == 0) return "(no time)";
  return storage::FormatTime(unix_ns);
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

const std::string& String(const ProfileBatch& b, uint32_t i) {
  static const std::string kEmpty;
  return i < b.dict.strings.size() ? b.dict.strings[i] : kEmpty;
}

std::string ExecutableName(const ProfileBatch& b, const storage::Frame& f) {
  if (f.executable == 0 || f.executable >= b.dict.executables.size()) return "";
  return String(b, b.dict.executables[f.executable].file_name);
}

const storage::SampleTypeInfo& TypeOf(const ProfileBatch& b, const storage::Sample& s) {
  static const storage::SampleTypeInfo kNone;
  return s.sample_type < b.dict.sample_types.size() ? b.dict.sample_types[s.sample_type] : kNone;
}

const storage::Link* LinkOf(const ProfileBatch& b, const storage::Sample& s) {
  if (s.link == 0 || s.link >= b.dict.links.size()) return nullptr;
  const storage::Link& l = b.dict.links[s.link];
  return l.trace_id.empty() && l.span_id.empty() ? nullptr : &l;
}

}  // namespace

std::string DumpSampleText(const ProfileBatch& b, const storage::Sample& s, uint64_t number) {
  const storage::SampleTypeInfo& type = TypeOf(b, s);
  std::string out = absl::StrCat("sample ", number, ": ", type.type.type, "/", type.type.unit, " = ",
                                 storage::FormatValue(type.type, s.value), " at ", TimeText(s.time_ns), "\n");
  const auto attributes = b.dict.AttributeSet(s.attribute_set);
  if (attributes.size() > 0) {
    absl::StrAppend(&out, "  attributes:");
    for (const storage::Attribute& a : attributes)
      absl::StrAppend(&out, " ", String(b, a.key), "=", String(b, a.value));
    absl::StrAppend(&out, "\n");
  }
  if (const storage::Link* link = LinkOf(b, s))
    absl::StrAppend(&out, "  link: trace ", absl::BytesToHexString(link->trace_id), " span ",
                    absl::BytesToHexString(link->span_id), "\n");
  const auto stack = b.dict.Stack(s.stack);
  absl::StrAppend(&out, "  stack, leaf first (", stack.size(), " frames):\n");
  for (size_t i = stack.size(); i-- > 0;) {
    const storage::Frame& f = b.dict.frames[stack[i]];
    const std::string& function = String(b, f.function);
    absl::StrAppend(&out, "    ", function.empty() ? "(unknown)" : function);
    if (f.file != 0) absl::StrAppend(&out, "  ", String(b, f.file), f.line ? absl::StrCat(":", f.line) : "");
    absl::StrAppend(&out, "  [", std::string(storage::FrameTypeName(f.type)), f.inlined ? ", inlined" : "", "]");
    if (const std::string exe = ExecutableName(b, f); !exe.empty()) absl::StrAppend(&out, "  ", exe);
    if (f.address != 0) absl::StrAppend(&out, " ", Hex(f.address));
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "\n");
  return out;
}

std::string DumpSampleJson(const ProfileBatch& b, const storage::Sample& s) {
  const storage::SampleTypeInfo& type = TypeOf(b, s);
  nlohmann::ordered_json j;
  j["sample_type"] = type.type.type;
  j["unit"] = type.type.unit;
  j["value"] = s.value;
  j["time_unix_nano"] = s.time_ns;
  j["time"] = TimeText(s.time_ns);
  nlohmann::ordered_json attributes = nlohmann::ordered_json::object();
  for (const storage::Attribute& a : b.dict.AttributeSet(s.attribute_set)) attributes[String(b, a.key)] = String(b, a.value);
  j["attributes"] = std::move(attributes);
  if (const storage::Link* link = LinkOf(b, s)) {
    j["trace_id"] = absl::BytesToHexString(link->trace_id);
    j["span_id"] = absl::BytesToHexString(link->span_id);
  }
  nlohmann::ordered_json frames = nlohmann::ordered_json::array();
  const auto stack = b.dict.Stack(s.stack);
  for (size_t i = stack.size(); i-- > 0;) {
    const storage::Frame& f = b.dict.frames[stack[i]];
    nlohmann::ordered_json frame;
    frame["function"] = String(b, f.function);
    if (f.file != 0) frame["file"] = String(b, f.file);
    if (f.line != 0) frame["line"] = f.line;
    frame["type"] = std::string(storage::FrameTypeName(f.type));
    if (const std::string exe = ExecutableName(b, f); !exe.empty()) frame["executable"] = exe;
    if (f.address != 0) frame["address"] = Hex(f.address);
    if (f.inlined) frame["inlined"] = true;
    frames.push_back(std::move(frame));
  }
  j["stack"] = std::move(frames);
  // Names may hold invalid UTF-8 (a producer's bytes): replace, not throw.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace kiln::capture
