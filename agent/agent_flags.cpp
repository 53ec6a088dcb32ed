#include "agent_flags.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kiln::agent {
namespace {

constexpr int kMaxSamplesPerSecond = 10000;

std::string_view Trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<bool> ParseBool(std::string_view v) {
  if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") return true;
  if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False") return false;
  return std::nullopt;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// -tags: "a;b;key=value". key=value becomes a resource attribute; bare tags
// are joined into the `kiln.tags` attribute so they are not lost.
void AddTags(std::string_view text, AgentOptions& o) {
  std::string bare;
  while (!text.empty()) {
    std::size_t end = text.find(';');
    std::string_view tag = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (tag.empty()) continue;
    if (std::size_t eq = tag.find('='); eq != std::string_view::npos) {
      o.resource_attributes.emplace_back(std::string(Trim(tag.substr(0, eq))),
                                         std::string(Trim(tag.substr(eq + 1))));
    } else {
      if (!bare.empty()) bare += ';';
      bare += tag;
    }
  }
  if (!bare.empty()) o.resource_attributes.emplace_back("kiln.tags", bare);
}

struct FlagDef {
  std::string_view name;
  bool is_bool;
  std::string_view help;
  // Returns an empty string on success, else why the value is bad.
  std::function<std::string(std::string_view, AgentOptions&)> set;
};

const std::vector<FlagDef>& Flags() {
  static const std::vector<FlagDef> kFlags = {
      {"collection-agent", false,
       "HOST:PORT of the OTLP profiles gRPC receiver (kiln listens on 11000). "
       "Default: OTEL_EXPORTER_OTLP_ENDPOINT",
       [](std::string_view v, AgentOptions& o) -> std::string {
         if (v.find(':') == std::string_view::npos) return "want HOST:PORT";
         o.collection_agent = std::string(v);
         return {};
       }},
      {"disable-tls", true, "Send in plain text instead of TLS (TLS verifies the server)",
       [](std::string_view v, AgentOptions& o) -> std::string {
         o.disable_tls = *ParseBool(v);
         return {};
       }},
      {"tls-ca-file", false,
       "Verify the receiver's TLS certificate with this CA (PEM) instead of the system's",
       [](std::string_view v, AgentOptions& o) -> std::string {
         if (v.empty()) return "want a file";
         o.tls_ca_file = std::string(v);
         return {};
       }},
      {"auth-token-file", false,
       "Send the token in this file as 'authorization: Bearer <token>' (kiln --auth-token-file)",
       [](std::string_view v, AgentOptions& o) -> std::string {
         if (v.empty()) return "want a file";
         o.auth_token_file = std::string(v);
         return {};
       }},
      {"samples-per-second", false, "Samples per second on every CPU (default 20)",
       [](std::string_view v, AgentOptions& o) -> std::string {
         int n = 0;
         auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
         if (ec != std::errc() || p != v.data() + v.size()) return "parse error";
         if (n < 1 || n > kMaxSamplesPerSecond) return "must be between 1 and 10000";
         o.samples_per_second = n;
         return {};
       }},
      {"reporter-interval", false, "How often to send what was sampled (default 5s)",
       [](std::string_view v, AgentOptions& o) -> std::string {
         auto d = ParseGoDuration(v);
         if (!d) return "parse error (want a duration such as 5s or 500ms)";
         if (*d < std::chrono::milliseconds(100)) return "must be at least 100ms";
         o.reporter_interval = *d;
         return {};
       }},
      {"tags", false, "Resource attributes, separated by ';': key=value pairs, bare tags go to kiln.tags",
       [](std::string_view v, AgentOptions& o) -> std::string {
         AddTags(v, o);
         return {};
       }},
      {"no-symbolize", true, "Do not symbolize native frames on this host",
       [](std::string_view v, AgentOptions& o) -> std::string {
         o.symbolize = !*ParseBool(v);
         return {};
       }},
      {"max-unsent-bytes", false,
       "Unsent data kept while the receiver is unavailable, before dropping the oldest "
       "(default 16777216)",
       [](std::string_view v, AgentOptions& o) -> std::string {
         std::size_t n = 0;
         auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
         if (ec != std::errc() || p != v.data() + v.size()) return "parse error";
         o.max_unsent_bytes = n;
         return {};
       }},
      {"off-cpu-threshold", false,
       "Record off-CPU time: the probability (0..1) that a thread leaving a CPU is followed, "
       "as in the OpenTelemetry eBPF profiler (default 0: off)",
       [](std::string_view v, AgentOptions& o) -> std::string {
         std::string text(v);
         char* end = nullptr;
         double p = std::strtod(text.c_str(), &end);
         if (text.empty() || end != text.c_str() + text.size()) return "parse error";
         if (!(p >= 0.0 && p <= 1.0)) return "must be between 0 and 1 (0 turns off-CPU profiling off)";
         o.off_cpu_threshold = p;
         return {};
       }},
      {"unwind-table-rows", false,
       "Rows of call frame information the BPF maps hold, 4 bytes each (default 4194304: 16 MiB)",
       [](std::string_view v, AgentOptions& o) -> std::string {
         std::uint32_t n = 0;
         auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
         if (ec != std::errc() || p != v.data() + v.size()) return "parse error";
         if (n < 4096 || n > (1u << 26)) return "must be between 4096 and 67108864";
         o.unwind_table_rows = n;
         return {};
       }},
      {"verbose", true, "Print more about what the agent does",
       [](std::string_view v, AgentOptions& o) -> std::string {
         o.verbose = *ParseBool(v);
         return {};
       }},
      {"version", true, "Print the version and exit",
       [](std::string_view v, AgentOptions& o) -> std::string {
         o.show_version = *ParseBool(v);
         return {};
       }},
      {"help", true, "Print this help and exit",
       [](std::string_view v, AgentOptions& o) -> std::string {
         o.show_help = *ParseBool(v);
         return {};
       }},
  };
  return kFlags;
}

const FlagDef* FindFlag(std::string_view name) {
  if (name == "h") name = "help";
  for (const FlagDef& f : Flags())
    if (f.name == name) return &f;
  return nullptr;
}

// OTEL_EXPORTER_OTLP_ENDPOINT is a URL; http:// means plain text (as in the
// OpenTelemetry SDKs), https:// or no scheme keeps TLS on.
std::string ApplyEndpointEnv(std::string_view url, AgentOptions& o) {
  url = Trim(url);
  if (url.starts_with("http://")) {
    url.remove_prefix(7);
    o.disable_tls = true;
  } else if (url.starts_with("https://")) {
    url.remove_prefix(8);
  }
  if (std::size_t slash = url.find('/'); slash != std::string_view::npos) url = url.substr(0, slash);
  if (url.empty()) return "OTEL_EXPORTER_OTLP_ENDPOINT has no host";
  if (url.find(':') == std::string_view::npos) {
    o.collection_agent = std::string(url) + ":4317";  // OTLP/gRPC default port
  } else {
    o.collection_agent = std::string(url);
  }
  return {};
}

}  // namespace

std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (text == "0") return std::chrono::nanoseconds(0);
  double total_ns = 0;
  while (!text.empty()) {
    std::size_t digits = 0;
    while (digits < text.size() && ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.'))
      ++digits;
    if (digits == 0) return std::nullopt;
    double number = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + digits, number);
    if (ec != std::errc() || p != text.data() + digits) return std::nullopt;
    text.remove_prefix(digits);
    std::size_t unit_len = 0;
    while (unit_len < text.size() && !(text[unit_len] >= '0' && text[unit_len] <= '9') &&
           text[unit_len] != '.')
      ++unit_len;
    std::string_view unit = text.substr(0, unit_len);
    text.remove_prefix(unit_len);
    double scale;
    if (unit == "ns")
      scale = 1;
    else if (unit == "us" || unit == "µs")
      scale = 1e3;
    else if (unit == "ms")
      scale = 1e6;
    else if (unit == "s")
      scale = 1e9;
    else if (unit == "m")
      scale = 60e9;
    else if (unit == "h")
      scale = 3600e9;
    else
      return std::nullopt;
    total_ns += number * scale;
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(total_ns));
}

Result<std::vector<std::pair<std::string, std::string>>> ParseResourceAttributes(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    std::size_t end = text.find(',');
    std::string_view item = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (item.empty()) continue;
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Result<std::vector<std::pair<std::string, std::string>>>::Error(
          "OTEL_RESOURCE_ATTRIBUTES: \"" + std::string(item) + "\" is not key=value");
    out.emplace_back(PercentDecode(Trim(item.substr(0, eq))), PercentDecode(Trim(item.substr(eq + 1))));
  }
  return out;
}

Result<AgentOptions> ParseAgentFlags(std::span<const std::string_view> args, const GetEnvFn& getenv) {
  using R = Result<AgentOptions>;
  AgentOptions o;
  if (const char* attrs = getenv("OTEL_RESOURCE_ATTRIBUTES"); attrs && *attrs) {
    auto parsed = ParseResourceAttributes(attrs);
    if (!parsed) return R::Error(parsed.error());
    o.resource_attributes = std::move(parsed).value();
  }
  if (const char* headers = getenv("OTEL_EXPORTER_OTLP_HEADERS"); headers && *headers) {
    auto parsed = ParseResourceAttributes(headers);
    if (!parsed) return R::Error("OTEL_EXPORTER_OTLP_HEADERS: " + parsed.error());
    o.headers = std::move(parsed).value();
  }
  bool have_endpoint_flag = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--") {
      if (i + 1 < args.size()) return R::Error("unexpected argument \"" + std::string(args[i + 1]) + "\"");
      break;
    }
    if (arg.size() < 2 || arg[0] != '-')
      return R::Error("unexpected argument \"" + std::string(arg) + "\" (flags start with -)");
    std::string_view name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string_view> value;
    if (std::size_t eq = name.find('='); eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagDef* flag = FindFlag(name);
    if (!flag) return R::Error("flag provided but not defined: -" + std::string(name));
    if (flag->is_bool) {
      if (!value) value = "true";
      if (!ParseBool(*value))
        return R::Error("invalid boolean value \"" + std::string(*value) + "\" for -" + std::string(name));
    } else if (!value) {
      if (i + 1 >= args.size()) return R::Error("flag needs an argument: -" + std::string(name));
      value = args[++i];
    }
    if (std::string why = flag->set(*value, o); !why.empty())
      return R::Error("invalid value \"" + std::string(*value) + "\" for flag -" + std::string(name) + ": " +
                      why);
    if (flag->name == "collection-agent") have_endpoint_flag = true;
  }
  if (!have_endpoint_flag) {
    if (const char* endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); endpoint && *endpoint) {
      if (std::string why = ApplyEndpointEnv(endpoint, o); !why.empty()) return R::Error(why);
    }
  }
  return o;
}

std::string AgentUsage() {
  std::string out =
      "Usage: kiln-agent -collection-agent=HOST:PORT [-disable-tls] [flags]\n"
      "Samples every CPU with eBPF and sends OTLP profiles to kiln or any OTLP\n"
      "profiles receiver. Needs root (or CAP_BPF and CAP_PERFMON).\n\nFlags:\n";
  for (const FlagDef& f : Flags()) {
    out +=
        "  -" + std::string(f.name) + (f.is_bool ? "" : " value") + "\n        " + std::string(f.help) + "\n";
  }
  out +=
      "\nEnvironment:\n"
      "  OTEL_EXPORTER_OTLP_ENDPOINT  used when -collection-agent is not given\n"
      "                               (http://host:port means -disable-tls)\n"
      "  OTEL_RESOURCE_ATTRIBUTES     k1=v1,k2=v2 added to every process\n"
      "  OTEL_EXPORTER_OTLP_HEADERS   k1=v1,k2=v2 sent with every export\n"
      "                               (authorization=Bearer%20TOKEN for a kiln with a token)\n";
  return out;
}

namespace {

Result<std::string> ReadSmallFile(const std::string& path, std::string_view what) {
  constexpr std::size_t kMaxBytes = 1 << 20;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Result<std::string>::Error(std::string(what) + " " + path + " is not a readable regular file");
  if (std::filesystem::file_size(path, ec) > kMaxBytes)
    return Result<std::string>::Error(std::string(what) + " " + path + " is larger than 1 MiB");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return Result<std::string>::Error("cannot read " + std::string(what) + " " + path);
  return text.str();
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> ExportHeaders(const AgentOptions& options) {
  using R = Result<std::vector<std::pair<std::string, std::string>>>;
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [key, value] : options.headers) {
    std::string lower = key;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    headers.emplace_back(std::move(lower), value);
  }
  if (!options.auth_token_file.empty()) {
    auto text = ReadSmallFile(options.auth_token_file, "-auth-token-file");
    if (!text) return R::Error(text.error());
    std::string_view token = Trim(*text);
    if (token.empty()) return R::Error("-auth-token-file " + options.auth_token_file + " is empty");
    for (char c : token) {
      if (c < 0x21 || c > 0x7e)
        return R::Error("-auth-token-file " + options.auth_token_file +
                        " holds a character a header cannot carry (use printable ASCII)");
    }
    std::erase_if(headers, [](const auto& h) { return h.first == "authorization"; });
    headers.emplace_back("authorization", "Bearer " + std::string(token));
  }
  return headers;
}

Result<std::string> ReadTlsCaFile(const AgentOptions& options) {
  if (options.tls_ca_file.empty()) return std::string();
  auto text = ReadSmallFile(options.tls_ca_file, "-tls-ca-file");
  if (!text) return text;
  if (text->find("-----BEGIN ") == std::string::npos)
    return Result<std::string>::Error("-tls-ca-file " + options.tls_ca_file +
                                      " is not PEM (no '-----BEGIN' line)");
  return text;
}

}  // namespace kiln::agent
