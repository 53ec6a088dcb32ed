#include "ingest/debuginfod/debuginfod_client.h"

#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kiln::symbols {
namespace {

std::mutex& EnvMutex() {
  static std::mutex m;
  return m;
}

// Sets an environment variable for one scope and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (value.empty()) return;
    active_ = true;
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (!active_) return;
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool active_ = false;
  std::optional<std::string> old_;
};

struct CallbackState {
  const DebuginfodOptions* options;
  bool cancelled = false;
};

int Progress(debuginfod_client* client, long done, long total) {
  auto* state = static_cast<CallbackState*>(debuginfod_get_user_data(client));
  if (!state) return 0;
  if (state->options->cancel && state->options->cancel->load()) {
    state->cancelled = true;
    return 1;  // non-zero aborts the transfer
  }
  if (state->options->progress) state->options->progress(done, total > 0 ? total : 0);
  return 0;
}

}  // namespace

absl::StatusOr<std::string> FetchDebugInfo(const std::string& build_id_hex,
                                           const DebuginfodOptions& options) {
  std::string id = absl::AsciiStrToLower(build_id_hex);
  if (id.empty() || id.size() % 2 != 0 || id.find_first_not_of("0123456789abcdef") != std::string::npos)
    return absl::InvalidArgumentError(
        absl::StrCat("build id '", build_id_hex, "' is not an even number of hex digits"));

  // Serialized: another fetch must not see (or restore over) our variables.
  std::lock_guard<std::mutex> lock(EnvMutex());
  ScopedEnv urls_env("DEBUGINFOD_URLS", options.urls);
  ScopedEnv cache_env("DEBUGINFOD_CACHE_PATH", options.cache_dir);
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  std::string server_list = urls ? urls : "";
  if (server_list.find_first_not_of(' ') == std::string::npos)
    return absl::FailedPreconditionError(
        "no debuginfod server configured (set DEBUGINFOD_URLS or give server URLs in the options)");
  if (options.cancel && options.cancel->load()) return absl::CancelledError("debuginfod fetch cancelled");

  debuginfod_client* client = debuginfod_begin();
  if (!client) return absl::ResourceExhaustedError("libdebuginfod could not start a client");
  CallbackState state{&options};
  debuginfod_set_user_data(client, &state);
  debuginfod_set_progressfn(client, &Progress);
  char* path = nullptr;
  int rc = debuginfod_find_debuginfo(client, reinterpret_cast<const unsigned char*>(id.c_str()), 0, &path);
  debuginfod_end(client);

  std::string where = absl::StrCat("build id ", id, " from ", server_list);
  if (rc >= 0) {
    close(rc);
    std::string out = path ? path : "";
    std::free(path);
    if (out.empty()) return absl::InternalError(absl::StrCat(where, ": libdebuginfod returned no path"));
    return out;
  }
  std::free(path);
  if (state.cancelled || (options.cancel && options.cancel->load()))
    return absl::CancelledError(absl::StrCat(where, ": cancelled"));
  int err = -rc;
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(absl::StrCat(where, ": not found (404)"));
    case ECONNREFUSED:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ETIMEDOUT:
    case ECONNRESET:
    case ECONNABORTED:
    case EAGAIN:
      return absl::UnavailableError(absl::StrCat(where, ": server unreachable (", std::strerror(err), ")"));
    case ENOSYS:
      return absl::FailedPreconditionError(absl::StrCat(where, ": no debuginfod server configured"));
    default:
      return absl::UnavailableError(absl::StrCat(where, ": ", std::strerror(err)));
  }
}

}  // namespace kiln::symbols
