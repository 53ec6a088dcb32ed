// The window's data sources: the live store plus every opened capture file.
// An opened capture is imported into a private temporary store (no receiver
// writes it, so it is read-only to the user) and gets its own worker and
// session (kind, time range, filters), so switching sources keeps each one's
// view. Loading runs on a thread of its own with progress and cancel.
//
// Threads: CaptureLoad runs its import on its own thread; SourceList and
// everything else are UI-thread only. No ImGui or GL here, so it is tested
// without a display (capture_sources_test.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "app/gui_worker.h"
#include "ingest/capture/capture.h"
#include "ingest/capture/capture_store_dirs.h"
#include "ingest/capture/export.h"
#include "storage/store.h"
#include "ui/session_state.h"
#include "ui/snapshots.h"

namespace kiln::app {
class ReceiverControl;

using capture::TemporaryStore;

// What a finished load hands over.
struct LoadedCapture {
  std::string path;
  std::unique_ptr<TemporaryStore> store;
  capture::CaptureFormat format = capture::CaptureFormat::kUnknown;
  uint64_t samples = 0;  // of the default sample type (a pprof sample has a value per type)
  size_t sample_types = 0;
  uint64_t skipped_records = 0;
  storage::SampleType default_sample_type;  // what the capture opens on
  // The capture's own time facts (ImportedCapture): samples with times of
  // their own get a timeline; others show the profile's time and duration.
  bool timed = false;
  int64_t range_start_ns = 0;
  int64_t range_end_ns = 0;
  std::vector<std::string> warnings;
};

struct CaptureLoadProgress {
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;  // 0 until the file is read and decompressed
  uint64_t samples = 0;
  bool writing = false;  // parsed; now interning into the temporary store
};

// One capture file being opened: ImportFile, then Store::Write into a new
// TemporaryStore, on a thread of its own. `on_done` runs on that thread when
// the result is ready (the app passes glfwPostEmptyEvent).
class CaptureLoad {
 public:
  // `demangle`: capture::ImportOptions::demangle.
  CaptureLoad(std::string path, std::function<void()> on_done, bool demangle = true);
  ~CaptureLoad();  // cancels and joins
  CaptureLoad(const CaptureLoad&) = delete;
  CaptureLoad& operator=(const CaptureLoad&) = delete;

  const std::string& path() const { return path_; }
  CaptureLoadProgress Progress() const;
  void Cancel() { cancel_ = true; }
  bool Done() const { return done_; }
  // After Done(): the capture, or the error naming the file and position
  // (absl::CancelledError after Cancel()). Call once.
  absl::StatusOr<LoadedCapture> Take();

 private:
  void Run();

  const std::string path_;
  std::function<void()> on_done_;
  const bool demangle_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> bytes_done_{0}, bytes_total_{0}, samples_{0};
  std::atomic<bool> writing_{false};
  absl::StatusOr<LoadedCapture> result_;  // written by the thread before done_
  std::thread thread_;
};

// A one-off job off the UI thread (export, import into the store) whose
// result, a line for the user, is picked up on a later frame. `wake` runs on
// the job's thread when it finishes.
class BackgroundTask {
 public:
  BackgroundTask(std::string what, std::function<absl::StatusOr<std::string>()> job,
                 std::function<void()> wake);
  ~BackgroundTask();  // joins: a running job finishes first
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;

  const std::string& what() const { return what_; }
  bool Done() const { return done_; }
  absl::StatusOr<std::string> Take() { return std::move(result_); }  // after Done(), once

 private:
  const std::string what_;
  std::atomic<bool> done_{false};
  absl::StatusOr<std::string> result_;
  std::thread thread_;
};

// One source the window can show, with the app's per-source bookkeeping.
struct Source {
  std::string name;  // "Live store" or the capture's file name
  std::string path;  // the capture file; empty for the live store
  // Capture sources own their store; it must outlive `worker` (declared
  // first, so destroyed last).
  std::shared_ptr<TemporaryStore> capture_store;
  storage::Store* store = nullptr;
  // The same store, shared: another source's diff may hold it as its
  // baseline (ui::BaselineRequest), so a closed capture's store lives on
  // until no request or snapshot refers to it. The live store outlives
  // everything; its pointer owns nothing.
  std::shared_ptr<const storage::Store> shared_store;
  std::unique_ptr<GuiWorker> worker;

  ui::SessionState session;
  bool session_initialized = false;
  bool startup_choices_applied = false;  // GuiOptions' transforms, sandwich, source, compare
  bool has_request = false;
  ui::AnalysisRequest last_request;
  uint64_t submitted_generation = 0;
  uint64_t data_version = 0;
  std::shared_ptr<const ui::AnalysisSnapshot> analysis;
  std::shared_ptr<const ui::StatusSnapshot> status;

  bool IsCapture() const { return capture_store != nullptr; }
};

// A message for the user (shown over the window's bottom-right corner) that
// is also in the live store's Log.
// Errors stay until dismissed; other notices go after kInfoNoticeSeconds.
struct Notice {
  bool error = false;
  std::string text;
  std::chrono::steady_clock::time_point time;
};
inline constexpr int kInfoNoticeSeconds = 20;

// The live store first, then the opened captures in opening order; loads in
// flight; notices. The live store and receiver outlive the list.
class SourceList {
 public:
  SourceList(storage::Store& live, const ReceiverControl* receiver, std::string live_data_dir,
             std::function<void()> wake_ui);
  ~SourceList();  // cancels loads, stops the workers, removes temporary stores

  // Starts loading a capture file (command line, drop, Open...);
  // `demangle` as capture::ImportOptions::demangle.
  void Open(const std::string& path, bool demangle = true);
  // Runs `job` as a BackgroundTask; its result becomes a notice.
  void RunTask(std::string what, std::function<absl::StatusOr<std::string>()> job);
  // File > Import into store: copies a capture file into the live store
  // (capture::ImportIntoStore, which also logs it) as a task.
  void ImportIntoLive(const std::string& path);
  // File > Export...: ExportSliceToFile as a task. An OTLP export without
  // transforms queries `store` again for `query`'s samples, so each keeps
  // its time (the view's slice has only weights per stack).
  void Export(std::shared_ptr<const storage::ProfileSlice> slice, std::shared_ptr<const storage::Store> store,
              const storage::Query& query, capture::ExportFormat format,
              const storage::FlameTreeOptions& tree, const std::string& path);
  // Frame start: finished loads become sources (the newest is selected) or
  // error notices (also logged in the live store); finished tasks become
  // notices. True when anything finished.
  bool Poll();
  bool Busy() const { return !loads_.empty() || !tasks_.empty(); }

  const std::vector<std::unique_ptr<Source>>& sources() const { return sources_; }
  const std::vector<std::unique_ptr<CaptureLoad>>& loads() const { return loads_; }
  const std::vector<std::unique_ptr<BackgroundTask>>& tasks() const { return tasks_; }
  size_t selected() const { return selected_; }
  void Select(size_t index);
  Source& Current() { return *sources_[selected_]; }
  const Source& Current() const { return *sources_[selected_]; }
  storage::Store& live_store() { return live_; }
  // Closes a capture source (never the live store).
  void Close(size_t index);

  const std::vector<Notice>& notices() const { return notices_; }
  // Drops info notices older than kInfoNoticeSeconds at `now`.
  void ExpireNotices(std::chrono::steady_clock::time_point now);
  // Adds a notice and writes it to the live store's Log.
  void Notify(bool error, const std::string& text);
  void DismissNotices() { notices_.clear(); }
  void DismissNotice(size_t index) {
    if (index < notices_.size()) notices_.erase(notices_.begin() + static_cast<std::ptrdiff_t>(index));
  }

 private:
  storage::Store& live_;
  std::function<void()> wake_ui_;
  std::vector<std::unique_ptr<Source>> sources_;
  std::vector<std::unique_ptr<CaptureLoad>> loads_;
  std::vector<std::unique_ptr<BackgroundTask>> tasks_;
  std::vector<Notice> notices_;
  size_t selected_ = 0;
};

// Writes `slice` (what the current view shows: source, range, kind and
// filters) to `path` in `format`, folded and svg as `tree` (grouping,
// inline frames, transforms) builds it; svg uses the window's node colours.
// Returns a line for the user ("wrote 12 kB to PATH"). Any thread.
[[nodiscard]] absl::StatusOr<std::string> ExportSliceToFile(
    const std::shared_ptr<const storage::ProfileSlice>& slice, capture::ExportFormat format,
    const storage::FlameTreeOptions& tree, const std::string& path);

// "perf.data.txt" for "/a/b/perf.data.txt".
std::string DisplayName(const std::string& path);

}  // namespace kiln::app
