#include "app/symbol_requests.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "storage/model/profile_model.h"

namespace kiln::app {
namespace fs = std::filesystem;

namespace {

constexpr char kRequest[] = ".request";
constexpr char kTaken[] = ".taken";
constexpr char kResult[] = ".result";

// Writes `text` under a name no reader looks at, then renames it into place.
absl::Status WriteAtomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + absl::StrCat(".tmp-", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return absl::InternalError(absl::StrCat("cannot rename into ", path.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadWhole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> NonEmptyLines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// Results hold paths and messages on one line each; a tab or newline inside
// them would break the format, so they become spaces.
std::string OneField(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }, ' ');
  return s;
}

}  // namespace

std::string SymbolRequestDir(const std::string& data_dir) {
  return (fs::path(data_dir) / "symbol-requests").string();
}

absl::StatusOr<std::string> SubmitSymbolRequest(const std::string& data_dir,
                                                const std::vector<std::string>& files) {
  const fs::path dir = SymbolRequestDir(data_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
  std::string text;
  for (const std::string& f : files) {
    fs::path absolute = fs::absolute(f, ec);
    absl::StrAppend(&text, OneField(ec ? f : absolute.lexically_normal().string()), "\n");
  }
  // Zero-padded time first, so a name sort is an age sort; pid and a counter
  // keep ids of concurrent commands apart.
  static std::atomic<int> counter{0};
  const std::string id =
      absl::StrFormat("%020d-%d-%d", storage::UnixNowNs(), static_cast<int>(getpid()), counter.fetch_add(1));
  if (absl::Status s = WriteAtomically(dir / (id + kRequest), text); !s.ok()) return s;
  return id;
}

absl::StatusOr<std::vector<SymbolRequestResult>> AwaitSymbolRequest(const std::string& data_dir,
                                                                    const std::string& id,
                                                                    std::chrono::milliseconds timeout) {
  const fs::path dir = SymbolRequestDir(data_dir);
  const fs::path result_path = dir / (id + kResult);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::error_code ec;
  while (!fs::exists(result_path, ec)) {
    if (!fs::exists(dir / (id + kRequest), ec) && !fs::exists(dir / (id + kTaken), ec) &&
        !fs::exists(result_path, ec))
      return absl::NotFoundError(
          absl::StrCat("request ", id, " vanished from ", dir.string(), " unanswered"));
    if (std::chrono::steady_clock::now() >= deadline)
      return absl::DeadlineExceededError(
          absl::StrCat("no answer to request ", id, " within ", timeout.count() / 1000, " s"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  absl::StatusOr<std::string> text = ReadWhole(result_path);
  if (!text.ok()) return text.status();
  fs::remove(result_path, ec);
  std::vector<SymbolRequestResult> results;
  for (const std::string& line : NonEmptyLines(*text)) {
    std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits('\t', 2));
    if (fields.size() != 3) continue;
    results.push_back({fields[1], fields[0] == "ok", fields[2]});
  }
  return results;
}

std::vector<TakenSymbolRequest> TakeSymbolRequests(const std::string& request_dir, bool retake_abandoned) {
  std::vector<fs::path> waiting;
  std::error_code ec;
  for (fs::directory_iterator it(request_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string ext = it->path().extension().string();
    if (ext == kRequest || (retake_abandoned && ext == kTaken)) waiting.push_back(it->path());
  }
  std::sort(waiting.begin(), waiting.end());
  std::vector<TakenSymbolRequest> taken;
  for (const fs::path& path : waiting) {
    fs::path taken_path = path;
    taken_path.replace_extension(kTaken);
    if (path != taken_path) {
      fs::rename(path, taken_path, ec);
      if (ec) continue;  // gone meanwhile
    }
    absl::StatusOr<std::string> text = ReadWhole(taken_path);
    if (!text.ok()) continue;
    taken.push_back({taken_path.stem().string(), NonEmptyLines(*text)});
  }
  return taken;
}

absl::Status AnswerSymbolRequest(const std::string& request_dir, const std::string& id,
                                 const std::vector<SymbolRequestResult>& results) {
  std::string text;
  for (const SymbolRequestResult& r : results)
    absl::StrAppend(&text, r.ok ? "ok" : "failed", "\t", OneField(r.path), "\t", OneField(r.message), "\n");
  const fs::path dir(request_dir);
  if (absl::Status s = WriteAtomically(dir / (id + kResult), text); !s.ok()) return s;
  std::error_code ec;
  fs::remove(dir / (id + kTaken), ec);
  return absl::OkStatus();
}

}  // namespace kiln::app
