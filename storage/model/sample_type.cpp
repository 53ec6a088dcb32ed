#include "storage/model/sample_type.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace kiln::storage {

namespace {

struct KnownType {
  std::string_view type, unit, label;
};
// Names from the Go runtime's profiles, pprof's conventions and the
// OpenTelemetry eBPF profiler.
constexpr KnownType kKnownTypes[] = {
    {"samples", "count", "On-CPU (samples)"},
    {"cpu", "nanoseconds", "CPU time (ns)"},
    {"wall", "nanoseconds", "Wall time (ns)"},
    {"off_cpu", "nanoseconds", "Off-CPU (ns)"},
    {"events", "count", "Probe events"},
    {"alloc_space", "bytes", "Allocated bytes"},
    {"alloc_objects", "count", "Allocated objects"},
    {"inuse_space", "bytes", "In-use bytes"},
    {"inuse_objects", "count", "In-use objects"},
    {"contentions", "count", "Contentions"},
    {"delay", "nanoseconds", "Contention delay (ns)"},
    {"goroutine", "count", "Goroutines"},
};

// Scale of a unit to the base unit of its class (ns or bytes); 0 when the
// unit is not a time or size unit.
int64_t UnitScale(std::string_view unit, UnitClass* cls) {
  struct Scale {
    std::string_view name;
    UnitClass cls;
    int64_t factor;
  };
  static constexpr Scale kScales[] = {
      {"nanoseconds", UnitClass::kTime, 1},
      {"ns", UnitClass::kTime, 1},
      {"microseconds", UnitClass::kTime, 1'000},
      {"us", UnitClass::kTime, 1'000},
      {"milliseconds", UnitClass::kTime, 1'000'000},
      {"ms", UnitClass::kTime, 1'000'000},
      {"seconds", UnitClass::kTime, 1'000'000'000},
      {"s", UnitClass::kTime, 1'000'000'000},
      {"bytes", UnitClass::kBytes, 1},
      {"byte", UnitClass::kBytes, 1},
      {"B", UnitClass::kBytes, 1},
      {"kilobytes", UnitClass::kBytes, 1024},
      {"megabytes", UnitClass::kBytes, 1024 * 1024},
      {"gigabytes", UnitClass::kBytes, int64_t{1024} * 1024 * 1024},
  };
  for (const Scale& s : kScales) {
    if (s.name == unit) {
      *cls = s.cls;
      return s.factor;
    }
  }
  *cls = UnitClass::kCount;
  return 0;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

SampleType OnCpuSamples() { return {"samples", "count"}; }
int64_t PeriodNs(const SampleTypeInfo& info) {
  UnitClass cls;
  const int64_t scale = UnitScale(info.period_unit, &cls);
  if (cls != UnitClass::kTime || info.period <= 0 || info.period > INT64_MAX / scale) return 0;
  return info.period * scale;
}

SampleType OffCpuTime() { return {"off_cpu", "nanoseconds"}; }
SampleType ProbeEvents() { return {"events", "count"}; }

std::string SampleTypeName(const SampleType& type) { return type.type + "/" + type.unit; }

std::string SampleTypeList(const std::vector<SampleType>& types) {
  if (types.empty()) return "none";
  std::string list;
  for (const SampleType& t : types) {
    if (!list.empty()) list += ", ";
    list += SampleTypeName(t);
  }
  return list;
}

std::string SampleTypeLabel(const SampleType& type) {
  for (const KnownType& k : kKnownTypes) {
    if (k.type == type.type && k.unit == type.unit) return std::string(k.label);
  }
  if (type.unit.empty()) return type.type.empty() ? "(unnamed)" : type.type;
  return (type.type.empty() ? std::string("(unnamed)") : type.type) + " (" + type.unit + ")";
}

UnitClass ClassOfUnit(std::string_view unit) {
  UnitClass cls;
  UnitScale(unit, &cls);
  return cls;
}

namespace {
// The noun of a count: "samples", "objects", "events", an unknown unit's
// own name, else the type's name.
std::string CountNoun(const SampleType& type) {
  if (type.unit != "count" && !type.unit.empty()) return type.unit;
  if (type.type == "samples") return "samples";
  if (EndsWith(type.type, "objects")) return "objects";
  if (type.type == "events") return "events";
  return type.type;
}
}  // namespace

std::string FormatValueShort(const SampleType& type, int64_t value) {
  UnitClass cls;
  const int64_t scale = UnitScale(type.unit, &cls);
  // Saturate rather than wrap: a sum of kilobytes near INT64_MAX is already
  // beyond any real profile, but must not print as negative.
  auto scaled = [&] {
    const double v = static_cast<double>(value) * static_cast<double>(scale);
    return v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(v);
  };
  switch (cls) {
    case UnitClass::kTime:
      return FormatDuration(scaled());
    case UnitClass::kBytes: {
      const int64_t b = scaled();
      return b < 0 ? "-" + FormatBytes(static_cast<uint64_t>(-(b + 1)) + 1) : FormatBytes(static_cast<uint64_t>(b));
    }
    case UnitClass::kCount:
      break;
  }
  return value < 0 ? "-" + FormatCount(static_cast<uint64_t>(-(value + 1)) + 1)
                   : FormatCount(static_cast<uint64_t>(value));
}

std::string FormatValue(const SampleType& type, int64_t value) {
  std::string text = FormatValueShort(type, value);
  if (ClassOfUnit(type.unit) != UnitClass::kCount) return text;
  std::string noun = CountNoun(type);
  if (noun.empty()) return text;
  // "1 sample", "1 object", "1 event"; other nouns are left as named.
  if ((value == 1 || value == -1) && (noun == "samples" || noun == "objects" || noun == "events")) {
    noun.pop_back();
  }
  return text + " " + noun;
}

std::string FormatCount(uint64_t n) {
  char buf[32];
  if (n < 1000) {
    std::snprintf(buf, sizeof buf, "%" PRIu64, n);
  } else if (n < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.*fk", n < 10'000 ? 2 : n < 100'000 ? 1 : 0, n / 1e3);
  } else if (n < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.*fM", n < 10'000'000 ? 2 : n < 100'000'000 ? 1 : 0, n / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2fG", n / 1e9);
  }
  return buf;
}

std::string FormatDuration(int64_t ns) {
  char buf[48];
  const double v = static_cast<double>(ns);
  const uint64_t a = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  if (a < 1'000) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " ns", ns);
  } else if (a < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.*f µs", a < 10'000 ? 2 : a < 100'000 ? 1 : 0, v / 1e3);
  } else if (a < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.*f ms", a < 10'000'000 ? 2 : a < 100'000'000 ? 1 : 0, v / 1e6);
  } else if (a < 60'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.2f s", v / 1e9);
  } else if (a < 3'600'000'000'000) {
    const uint64_t s = a / 1'000'000'000;
    std::snprintf(buf, sizeof buf, "%s%" PRIu64 "m %02" PRIu64 "s", ns < 0 ? "-" : "", s / 60, s % 60);
  } else {
    const uint64_t m = a / 60'000'000'000;
    std::snprintf(buf, sizeof buf, "%s%" PRIu64 "h %02" PRIu64 "m", ns < 0 ? "-" : "", m / 60, m % 60);
  }
  return buf;
}

std::string FormatBytes(uint64_t bytes) {
  char buf[32];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", bytes);
  } else {
    std::snprintf(buf, sizeof buf, "%.*f %s", v < 10 ? 1 : 0, v, units[u]);
  }
  return buf;
}

std::optional<SampleType> ParseSampleTypeName(std::string_view name) {
  if (name == "on-cpu") return OnCpuSamples();
  if (name == "off-cpu") return OffCpuTime();
  if (name == "probe") return ProbeEvents();
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  return SampleType{std::string(name.substr(0, slash)), std::string(name.substr(slash + 1))};
}

std::optional<SampleType> FindSampleType(std::string_view name, const std::vector<SampleType>& available) {
  if (std::optional<SampleType> named = ParseSampleTypeName(name)) {
    for (const SampleType& t : available) {
      if (t == *named) return t;
    }
  }
  for (const SampleType& t : available) {
    if (t.type == name) return t;
  }
  return std::nullopt;
}

SampleType DefaultSampleType(const std::vector<SampleType>& available, std::string_view default_type) {
  if (available.empty()) return OnCpuSamples();
  if (!default_type.empty()) {
    for (const SampleType& t : available) {
      if (t.type == default_type) return t;
    }
  }
  return available.back();
}

SampleType OnCpuOrFirst(const std::vector<SampleType>& available) {
  if (available.empty() || std::find(available.begin(), available.end(), OnCpuSamples()) != available.end()) {
    return OnCpuSamples();
  }
  return available.front();
}

}  // namespace kiln::storage
