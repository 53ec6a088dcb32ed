#include "ingest/debuginfod/debuginfod_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln::symbols {
namespace {

// The transfer loop wakes at least this often with nothing to do, so a
// cancel is seen within about this long, also while connecting.
constexpr int kPollMs = 100;
constexpr auto kProgressInterval = std::chrono::seconds(1);

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// An integer environment variable; `fallback` when unset or not a number.
int64_t EnvInt(const char* name, int64_t fallback) {
  int64_t value = 0;
  return absl::SimpleAtoi(Env(name), &value) ? value : fallback;
}

bool IsCancelled(const DebuginfodOptions& options) { return options.cancel && options.cancel->load(); }

// libdebuginfod splits DEBUGINFOD_URLS on spaces and tolerates "url/";
// a server listed twice is asked once.
std::vector<std::string> ServerList(const std::string& urls) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(urls, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    std::string url(part);
    while (!url.empty() && url.back() == '/') url.pop_back();
    if (!url.empty() && std::find(out.begin(), out.end(), url) == out.end()) out.push_back(url);
  }
  return out;
}

// libdebuginfod's choice of folder, so every client on the machine shares it.
absl::StatusOr<std::string> CacheFolder(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (std::string path = Env("DEBUGINFOD_CACHE_PATH"); !path.empty()) return path;
  if (std::string xdg = Env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/debuginfod_client";
  if (std::string home = Env("HOME"); !home.empty()) return home + "/.cache/debuginfod_client";
  return absl::FailedPreconditionError("no debuginfod cache folder: set DEBUGINFOD_CACHE_PATH or HOME");
}

// curl_global_init is not thread-safe in every libcurl kiln may load (macOS
// SDKs ship older ones), so it runs once, guarded, and is never undone.
bool CurlReady() {
  static const bool ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  return ok;
}

struct EasyCleanup {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};

// One server's download. The body of a 200 answer goes to a temporary file
// next to the cache entry (so the final rename stays on one file system);
// error pages are read and dropped.
struct Transfer {
  std::string server;
  std::string temp_pattern;  // for mkstemp
  std::string temp_path;     // "" until the first byte of a 200 body
  int fd = -1;
  int64_t max_size = 0;
  int64_t bytes = 0;
  bool too_big = false;
  int write_errno = 0;
  CURLcode result = CURLE_OK;
  long http_code = 0;
  char error[CURL_ERROR_SIZE] = {};
  std::unique_ptr<CURL, EasyCleanup> easy;

  ~Transfer() { Discard(); }
  void Discard() {
    if (fd >= 0) close(fd);
    fd = -1;
    if (!temp_path.empty()) unlink(temp_path.c_str());
    temp_path.clear();
  }
  // What happened, for an error message.
  std::string Outcome() const {
    if (write_errno != 0)
      return absl::StrCat("cannot write ", temp_pattern, ": ", std::strerror(write_errno));
    if (too_big || result == CURLE_FILESIZE_EXCEEDED)
      return absl::StrCat("file larger than DEBUGINFOD_MAXSIZE (", max_size, " bytes)");
    std::string curl_error = error[0] ? error : curl_easy_strerror(result);
    if (result != CURLE_OK && http_code == 0) return absl::StrCat("server unreachable (", curl_error, ")");
    if (result != CURLE_OK)
      return absl::StrCat("transfer failed after HTTP ", http_code, " (", curl_error, ")");
    if (http_code == 404) return "not found (404)";
    if (http_code == 200) return "empty answer (HTTP 200 with no data)";
    return absl::StrCat("server error (HTTP ", http_code, ")");
  }
};

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * count;
  long code = 0;
  curl_easy_getinfo(t->easy.get(), CURLINFO_RESPONSE_CODE, &code);
  if (code != 200) return len;
  // Returning less than `len` makes curl abort the transfer.
  if (t->max_size > 0 && t->bytes + static_cast<int64_t>(len) > t->max_size) {
    t->too_big = true;
    return 0;
  }
  if (t->fd < 0) {
    std::string path = t->temp_pattern;
    t->fd = mkstemp(path.data());
    if (t->fd < 0) {
      t->write_errno = errno;
      return 0;
    }
    t->temp_path = path;
  }
  for (size_t off = 0; off < len;) {
    const ssize_t n = write(t->fd, data + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      t->write_errno = errno;
      return 0;
    }
    off += static_cast<size_t>(n);
  }
  t->bytes += static_cast<int64_t>(len);
  return len;
}

// The transfers of one fetch in one curl multi handle. Destroying it aborts
// whatever still runs and deletes every temporary file not renamed away.
class ServerRace {
 public:
  ServerRace() : multi_(curl_multi_init()) {}
  ~ServerRace() {
    for (auto& t : transfers_) curl_multi_remove_handle(multi_, t->easy.get());
    transfers_.clear();
    curl_multi_cleanup(multi_);
  }
  ServerRace(const ServerRace&) = delete;
  ServerRace& operator=(const ServerRace&) = delete;

  CURLM* multi() const { return multi_; }
  const std::vector<std::unique_ptr<Transfer>>& transfers() const { return transfers_; }

  // Starts GET <server>/buildid/<id>/debuginfo, with libdebuginfod's limits.
  bool Add(const std::string& server, const std::string& id, const std::string& target) {
    auto t = std::make_unique<Transfer>();
    t->server = server;
    t->temp_pattern = target + ".XXXXXX";
    t->max_size = EnvInt("DEBUGINFOD_MAXSIZE", 0);
    t->easy.reset(curl_easy_init());
    CURL* e = t->easy.get();
    if (!e) return false;
    const std::string url = absl::StrCat(server, "/buildid/", id, "/debuginfo");
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &WriteBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
    // No SIGALRM for DNS timeouts: fetches run on worker threads.
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, 16L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "kiln-debuginfod-client/1 " LIBCURL_VERSION);
    // Servers are HTTP(S); neither a configured URL nor a redirect may reach
    // another scheme (file://, ftp://, ...).
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    // As libdebuginfod: a server must connect, and then deliver 100 KiB per
    // DEBUGINFOD_TIMEOUT seconds, or it is given up on.
    const int64_t timeout = EnvInt("DEBUGINFOD_TIMEOUT", 90);
    if (timeout > 0) {
      curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, static_cast<long>(timeout));
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(timeout));
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT,
                       static_cast<long>(std::max<int64_t>(1, 100 * 1024 / timeout)));
    }
    if (const int64_t max_time = EnvInt("DEBUGINFOD_MAXTIME", 0); max_time > 0)
      curl_easy_setopt(e, CURLOPT_TIMEOUT, static_cast<long>(max_time));
    // Refused up front when the server sends a Content-Length; WriteBody
    // checks the bytes too, for answers without one.
    if (t->max_size > 0) curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(t->max_size));
    if (curl_multi_add_handle(multi_, e) != CURLM_OK) return false;
    transfers_.push_back(std::move(t));
    return true;
  }

  // Bytes and total (0 when unknown) of the 200 answer furthest along.
  std::pair<int64_t, int64_t> Progress() const {
    std::pair<int64_t, int64_t> best{0, 0};
    for (const auto& t : transfers_) {
      if (t->bytes < best.first || t->bytes == 0) continue;
      curl_off_t length = -1;
      curl_easy_getinfo(t->easy.get(), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
      best = {t->bytes, length > 0 ? static_cast<int64_t>(length) : 0};
    }
    return best;
  }

 private:
  CURLM* multi_;
  std::vector<std::unique_ptr<Transfer>> transfers_;
};

// Moves the winner's file to `target`. rename() replaces atomically, so a
// reader sees the old complete file or the new one; a concurrent fetch of
// the same id renames an identical file over it.
absl::Status Publish(Transfer& t, const std::string& target) {
  // Flushed first, or a crash right after the rename could leave an empty
  // "debuginfo" that every client would take for the real file.
  if (fsync(t.fd) != 0 || close(t.fd) != 0) {
    t.fd = -1;
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", t.temp_path, ": ", std::strerror(errno)));
  }
  t.fd = -1;
  if (rename(t.temp_path.c_str(), target.c_str()) != 0)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot rename ", t.temp_path, " to ", target, ": ", std::strerror(errno)));
  t.temp_path.clear();
  return absl::OkStatus();
}

// Why no server delivered, naming each server and what it answered.
absl::Status NoWinner(const std::string& id, const ServerRace& race) {
  const auto& transfers = race.transfers();
  std::vector<std::string> servers;
  std::vector<std::string> outcomes;
  bool all_not_found = true;
  bool too_big = false;
  bool local_error = false;
  for (const auto& t : transfers) {
    servers.push_back(t->server);
    outcomes.push_back(absl::StrCat(t->server, ": ", t->Outcome()));
    all_not_found &= t->result == CURLE_OK && t->http_code == 404;
    too_big |= t->too_big || t->result == CURLE_FILESIZE_EXCEEDED;
    local_error |= t->write_errno != 0;
  }
  if (all_not_found)
    return absl::NotFoundError(
        absl::StrCat("build id ", id, " from ", absl::StrJoin(servers, " "), ": not found (404)"));
  const std::string message = absl::StrCat("build id ", id, ": ", absl::StrJoin(outcomes, "; "));
  if (local_error) return absl::FailedPreconditionError(message);
  if (too_big) return absl::ResourceExhaustedError(message);
  return absl::UnavailableError(message);
}

absl::StatusOr<FetchedDebugInfo> Download(const std::string& id, const std::vector<std::string>& servers,
                                          const std::string& target, const DebuginfodOptions& options) {
  if (!CurlReady()) return absl::InternalError("libcurl could not be initialized");
  ServerRace race;
  if (!race.multi()) return absl::InternalError("libcurl could not start a transfer");
  for (const std::string& server : servers) {
    if (!race.Add(server, id, target))
      return absl::InternalError(absl::StrCat("libcurl could not start a transfer from ", server));
  }
  auto next_progress = std::chrono::steady_clock::now() + kProgressInterval;
  Transfer* winner = nullptr;
  for (;;) {
    if (IsCancelled(options)) return absl::CancelledError(absl::StrCat("build id ", id, ": cancelled"));
    int running = 0;
    const CURLMcode mc = curl_multi_perform(race.multi(), &running);
    if (mc != CURLM_OK) return absl::InternalError(absl::StrCat("libcurl: ", curl_multi_strerror(mc)));
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(race.multi(), &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      char* user = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &user);
      auto* t = reinterpret_cast<Transfer*>(user);
      t->result = msg->data.result;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &t->http_code);
      if (!winner && t->result == CURLE_OK && t->http_code == 200 && t->fd >= 0) winner = t;
    }
    if (winner || running == 0) break;
    if (options.progress && std::chrono::steady_clock::now() >= next_progress) {
      const auto [done, total] = race.Progress();
      options.progress(done, total);
      next_progress += kProgressInterval;
    }
    curl_multi_poll(race.multi(), nullptr, 0, kPollMs, nullptr);
  }
  if (!winner) return NoWinner(id, race);
  if (absl::Status published = Publish(*winner, target); !published.ok()) return published;
  if (options.progress) options.progress(winner->bytes, winner->bytes);
  return FetchedDebugInfo{target, winner->server, false};
}

}  // namespace

absl::StatusOr<FetchedDebugInfo> FetchDebugInfo(const std::string& build_id_hex,
                                                const DebuginfodOptions& options) {
  const std::string id = absl::AsciiStrToLower(build_id_hex);
  if (id.empty() || id.size() % 2 != 0 || id.find_first_not_of("0123456789abcdef") != std::string::npos)
    return absl::InvalidArgumentError(
        absl::StrCat("build id '", build_id_hex, "' is not an even number of hex digits"));
  const std::vector<std::string> servers =
      ServerList(options.urls.empty() ? Env("DEBUGINFOD_URLS") : options.urls);
  if (servers.empty())
    return absl::FailedPreconditionError(
        "no debuginfod server configured (set DEBUGINFOD_URLS or give server URLs in the options)");
  if (IsCancelled(options)) return absl::CancelledError(absl::StrCat("build id ", id, ": cancelled"));

  absl::StatusOr<std::string> cache = CacheFolder(options.cache_dir);
  if (!cache.ok()) return cache.status();
  const std::string folder = *cache + "/" + id;
  const std::string target = folder + "/debuginfo";
  // libdebuginfod records a failed query as an empty file at this path; that
  // is not a debug file, so the servers are asked again.
  struct stat st {};
  if (stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    return FetchedDebugInfo{target, "", true};
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec)
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the debuginfod cache folder ", folder, ": ", ec.message()));
  return Download(id, servers, target, options);
}

}  // namespace kiln::symbols
