// The GUI's analysis worker: one background thread that runs store queries
// and builds the flame tree, tables and timeline for the newest request,
// and polls store/receiver status about once a second. The UI thread
// submits requests and picks up finished immutable snapshots; it never
// waits for the worker (only for a mutex held around pointer swaps).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ui/snapshots.h"

namespace kiln::storage {
class Store;
}
namespace kiln::app {
class ReceiverControl;

class GuiWorker {
 public:
  // `store` and `receiver` (may be null) must outlive the worker.
  // `wake_ui` is called from the worker thread after each new result (for
  // glfwPostEmptyEvent); may be empty.
  GuiWorker(storage::Store& store, const ReceiverControl* receiver, std::string data_dir,
            std::function<void()> wake_ui);
  ~GuiWorker();  // joins the thread; an in-flight query finishes first
  GuiWorker(const GuiWorker&) = delete;
  GuiWorker& operator=(const GuiWorker&) = delete;

  // Replaces any pending request (only the newest matters). Returns its
  // generation; the snapshot answering it carries the same number.
  uint64_t Submit(const ui::AnalysisRequest& request);
  // Asks for a status refresh now instead of at the next tick.
  void RefreshStatus();

  std::shared_ptr<const ui::AnalysisSnapshot> LatestAnalysis() const;
  std::shared_ptr<const ui::StatusSnapshot> LatestStatus() const;
  // True while a submitted request has no snapshot yet.
  bool Busy() const;

 private:
  void Run();
  std::shared_ptr<const ui::AnalysisSnapshot> Analyze(uint64_t generation,
                                                      const ui::AnalysisRequest& request);
  std::shared_ptr<const ui::StatusSnapshot> PollStatus();

  storage::Store& store_;
  const ReceiverControl* receiver_;
  std::string data_dir_;
  std::function<void()> wake_ui_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool status_requested_ = true;
  uint64_t next_generation_ = 0;
  uint64_t pending_generation_ = 0;  // 0 = nothing pending
  ui::AnalysisRequest pending_;
  uint64_t latest_generation_submitted_ = 0;
  std::shared_ptr<const ui::AnalysisSnapshot> analysis_;
  std::shared_ptr<const ui::StatusSnapshot> status_;

  // Worker-thread only: the previous result, reused when only part of the
  // request changed (e.g. the inline toggle needs no new query).
  std::shared_ptr<const ui::AnalysisSnapshot> previous_;
  std::thread thread_;
};

}  // namespace kiln::app
