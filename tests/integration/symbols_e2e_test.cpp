// Native symbolization end to end through the real binary: OTLP frames of a
// real C program (its htlhash, build id and `nm` addresses) sent to `kiln
// --headless`, and the names checked in `kiln export`, with `kiln symbols
// add` / `kiln symbols list` for what kiln cannot find by itself.
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/symbols_fixture.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Where the stripped victim lives on the pretend other host: nowhere here.
constexpr const char* kMissing = "/nonexistent/kiln-test/victim";

// Sends the stripped victim's frames with its htlhash and build id as an
// agent on another host would, and waits until `kiln` has looked for its
// symbols and found none; returns `kiln symbols list` then.
std::string SendVictimFromElsewhere(const HeadlessKiln& kiln, const std::string& data_dir) {
  const std::string stripped = KILN_VICTIM_STRIPPED;
  Send(kiln.target(), VictimRequest(kMissing, HtlhashOf(stripped), BuildIdOf(stripped), KILN_VICTIM));
  return WaitForList(data_dir, "status:    no symbols found");
}

}  // namespace

TEST_CASE("names come from the executable's own path when it is the same file on this machine") {
  TempDir dir;
  const std::string victim = fs::canonical(KILN_VICTIM).string();
  HeadlessKiln kiln(dir.path);
  Send(kiln.target(), VictimRequest(victim, HtlhashOf(victim), "", victim));
  const std::string folded = WaitForFolded(dir.path, kNamed);
  CHECK_MESSAGE(Contains(folded, kNamed), folded);
  const std::string list = WaitForList(dir.path, "status:    symbolized");
  INFO(list);
  CHECK(Contains(list, victim + "\n  htlhash:   " + HtlhashOf(victim)));
  CHECK(Contains(list, "status:    symbolized"));
  CHECK(Contains(list, "source:    local file " + victim));
  CHECK_FALSE(Contains(list, "functions: 0\n"));
  CHECK(kiln.Stop(SIGTERM) == 0);
  // --headless prints each outcome, as the Log view shows it.
  CHECK_MESSAGE(Contains(kiln.output(), "kiln: symbols for " + victim + " (htlhash "), kiln.output());
}

TEST_CASE("a stripped binary's separate debug file is found through .gnu_debuglink next to it") {
  TempDir dir;
  const std::string stripped = fs::canonical(KILN_VICTIM_STRIPPED).string();
  // The stripped copy has no symbols of its own: names must come from
  // victim.debug beside it.
  CHECK(Shell("nm '" + stripped + "' 2>&1").find("kiln_victim_leaf") == std::string::npos);
  HeadlessKiln kiln(dir.path);
  Send(kiln.target(), VictimRequest(stripped, HtlhashOf(stripped), "", KILN_VICTIM));
  const std::string folded = WaitForFolded(dir.path, kNamed);
  CHECK_MESSAGE(Contains(folded, kNamed), folded);
  const std::string list = WaitForList(dir.path, "status:    symbolized");
  CHECK_MESSAGE(Contains(list, "source:    debug file "), list);
  CHECK(kiln.Stop(SIGTERM) == 0);
}

TEST_CASE("--debug-dir: a debug file under DIR/.build-id/xx/yyyy.debug is found by build id") {
  TempDir dir;
  TempDir debug_root;
  const std::string build_id = BuildIdOf(KILN_VICTIM_STRIPPED);
  REQUIRE(build_id.size() > 2);
  const fs::path by_id = fs::path(debug_root.path) / ".build-id" / build_id.substr(0, 2);
  fs::create_directories(by_id);
  fs::copy_file(KILN_VICTIM_DEBUG, by_id / (build_id.substr(2) + ".debug"));
  HeadlessKiln kiln(dir.path, {"--debug-dir", debug_root.path});
  // The binary's path does not exist here (profiled on another host).
  Send(kiln.target(), VictimRequest("/nonexistent/kiln-test/victim", HtlhashOf(KILN_VICTIM_STRIPPED),
                                    build_id, KILN_VICTIM));
  const std::string folded = WaitForFolded(dir.path, kNamed);
  CHECK_MESSAGE(Contains(folded, kNamed), folded);
  const std::string list = WaitForList(dir.path, "status:    symbolized");
  CHECK_MESSAGE(Contains(list, "source:    debug file " + debug_root.path), list);
  CHECK(kiln.Stop(SIGTERM) == 0);
}

TEST_CASE(
    "kiln symbols add: a debug file names a stripped binary whose path does not exist; bad files say why") {
  TempDir dir;
  const std::string stripped = KILN_VICTIM_STRIPPED;
  const std::string debug = fs::canonical(KILN_VICTIM_DEBUG).string();
  const std::string build_id = BuildIdOf(stripped);
  const std::string missing = kMissing;
  {
    HeadlessKiln kiln(dir.path);
    // kiln looks by itself first and finds nothing on this machine.
    const std::string list = SendVictimFromElsewhere(kiln, dir.path);
    CHECK_MESSAGE(Contains(list, missing + "\n"), list);
    CHECK_MESSAGE(Contains(list, "status:    no symbols found"), list);
    CHECK(Contains(list, "build id:  " + build_id));
    CHECK(kiln.Stop(SIGTERM) == 0);
  }
  const std::string unnamed = RunKiln({"export", "--data-dir", dir.path}).out;
  CHECK_MESSAGE(Contains(unnamed, "victim;victim+0x"), unnamed);

  CommandResult added = RunKiln({"symbols", "add", "--data-dir", dir.path, debug});
  INFO(added.out << added.err);
  CHECK(added.exit_code == 0);
  CHECK(Contains(added.out, debug + ": matched " + missing));
  CHECK(Contains(added.out, "stored "));
  CHECK(Contains(RunKiln({"export", "--data-dir", dir.path}).out, kNamed));
  const std::string list = RunKiln({"symbols", "list", "--data-dir", dir.path}).out;
  CHECK_MESSAGE(Contains(list, "status:    symbolized"), list);
  CHECK_MESSAGE(Contains(list, "source:    added file " + debug), list);

  // A file that is not ELF, an ELF file of another build and a truncated
  // one: each is named with its reason, nothing is stored, and the exit
  // code says so.
  const std::string text = dir.path + "-notes.txt";
  std::ofstream(text) << "not an executable\n";
  // A truncated copy of the program: ELF magic, headers past the end.
  const std::string truncated = dir.path + "-truncated";
  Shell("head -c 3000 '" + std::string(KILN_VICTIM) + "' > '" + truncated + "'");
  CommandResult bad = RunKiln({"symbols", "add", "--data-dir", dir.path, text, KILN_VICTIM_OTHER, truncated});
  fs::remove(text);
  fs::remove(truncated);
  INFO(bad.out << bad.err);
  CHECK(bad.exit_code == 1);
  CHECK(Contains(bad.out, text + ": not an ELF file"));
  CHECK(Contains(bad.out, std::string(KILN_VICTIM_OTHER) + ": matches no executable in " + dir.path));
  CHECK(Contains(bad.out, truncated + ": unreadable ELF file: " + truncated + ": "));
  CHECK(Contains(bad.err, "3 of 3 files failed"));
  CommandResult no_store = RunKiln({"symbols", "add", "--data-dir", dir.path + "-typo", debug});
  CHECK(no_store.exit_code == 1);
  CHECK(Contains(no_store.err, "no store at " + dir.path + "-typo"));
  CHECK_FALSE(fs::exists(dir.path + "-typo"));

  // Symbols survive a restart, and kiln does not replace them.
  {
    HeadlessKiln kiln(dir.path);
    std::this_thread::sleep_for(std::chrono::seconds(3));  // a scan of the executables happens at start
    CHECK(kiln.Stop(SIGTERM) == 0);
  }
  CHECK(Contains(RunKiln({"export", "--data-dir", dir.path}).out, kNamed));
  CHECK(Contains(RunKiln({"symbols", "list", "--data-dir", dir.path}).out, "source:    added file " + debug));
}

TEST_CASE("kiln symbols add while kiln runs on the store hands the files to it and prints its answer") {
  TempDir dir;
  const std::string debug = fs::canonical(KILN_VICTIM_DEBUG).string();
  const std::string missing = kMissing;
  HeadlessKiln kiln(dir.path);
  SendVictimFromElsewhere(kiln, dir.path);

  // Relative paths are the command's, not the running kiln's.
  const std::string text = dir.path + "-notes.txt";
  std::ofstream(text) << "not an executable\n";
  const fs::path previous = fs::current_path();
  fs::current_path(fs::path(debug).parent_path());
  CommandResult added =
      RunKiln({"symbols", "add", "--data-dir", dir.path, fs::path(debug).filename().string(), text});
  fs::current_path(previous);
  fs::remove(text);
  INFO(added.out << added.err);
  CHECK(added.exit_code == 1);  // the text file failed
  CHECK(Contains(added.err, "in use by a running kiln; handed 2 files to it"));
  CHECK(Contains(added.out, debug + ": matched " + missing));
  CHECK(Contains(added.out, text + ": not an ELF file"));
  CHECK(Contains(added.err, "1 of 2 files failed"));
  // The running kiln stored them: the names show while it still runs.
  WaitForFolded(dir.path, kNamed);
  CHECK(Contains(RunKiln({"export", "--data-dir", dir.path}).out, kNamed));
  CHECK(kiln.Stop(SIGTERM) == 0);
  CHECK(Contains(kiln.output(), debug + ": matched " + missing));
  // Nothing is left behind once answered.
  CHECK(fs::is_empty(fs::path(dir.path) / "symbol-requests"));
}

TEST_CASE("kiln symbols add: a request no running kiln answers is kept for the next kiln on the store") {
  TempDir dir;
  const std::string debug = fs::canonical(KILN_VICTIM_DEBUG).string();
  {
    HeadlessKiln kiln(dir.path);
    SendVictimFromElsewhere(kiln, dir.path);
    // A stopped kiln still holds the store's lock but answers nothing, like
    // a `kiln import` would; it is then killed without ever seeing the
    // request.
    REQUIRE(kill(kiln.pid(), SIGSTOP) == 0);
    CommandResult added = RunKiln({"symbols", "add", "--data-dir", dir.path, "--wait", "2", debug});
    INFO(added.out << added.err);
    CHECK(added.exit_code == 1);
    CHECK(Contains(added.err, "no answer to request"));
    CHECK(Contains(added.err, "handled when kiln next runs on this store"));
    CHECK(kiln.Stop(SIGKILL) == 128 + SIGKILL);
  }
  CHECK_FALSE(Contains(RunKiln({"export", "--data-dir", dir.path}).out, kNamed));
  HeadlessKiln next(dir.path);
  WaitForFolded(dir.path, kNamed);
  CHECK(Contains(RunKiln({"export", "--data-dir", dir.path}).out, kNamed));
  CHECK(next.Stop(SIGTERM) == 0);
}

TEST_CASE("kiln symbols add of a stripped binary brings its debug file along (.gnu_debuglink beside it)") {
  TempDir dir;
  const std::string stripped = fs::canonical(KILN_VICTIM_STRIPPED).string();
  {
    HeadlessKiln kiln(dir.path);
    // Only the htlhash: a stripped binary from another host, without build id.
    Send(kiln.target(), VictimRequest("/nonexistent/kiln-test/victim", HtlhashOf(stripped), "", KILN_VICTIM));
    WaitForList(dir.path, "status:    no symbols found");
    CHECK(kiln.Stop(SIGTERM) == 0);
  }
  CommandResult added = RunKiln({"symbols", "add", "--data-dir", dir.path, stripped});
  INFO(added.out << added.err);
  CHECK(added.exit_code == 0);
  CHECK(Contains(added.out,
                 stripped + ": matched /nonexistent/kiln-test/victim (htlhash " + HtlhashOf(stripped)));
  CHECK(Contains(RunKiln({"export", "--data-dir", dir.path}).out, kNamed));
  const std::string list = RunKiln({"symbols", "list", "--data-dir", dir.path}).out;
  CHECK_MESSAGE(Contains(list, "source:    added file " + stripped + " (debug file "), list);
}

}  // namespace kiln::testing
