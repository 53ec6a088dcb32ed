// NativeFileDialog in builds without libportal (macOS, or Linux without
// libportal-dev): every request is answered "unavailable", so the window
// uses its own file browser.
#include <deque>
#include <mutex>

#include "app/native_file_dialog.h"

namespace kiln::app {

struct NativeFileDialog::Impl {
  std::function<void()> wake;
  std::mutex mu;
  std::deque<FileDialogAnswer> answers;
};

NativeFileDialog::NativeFileDialog(std::function<void()> wake) : impl_(std::make_unique<Impl>()) {
  impl_->wake = std::move(wake);
}
NativeFileDialog::~NativeFileDialog() = default;
bool NativeFileDialog::MaybeAvailable() const { return false; }
bool NativeFileDialog::Busy() const { return false; }

void NativeFileDialog::Ask(const FileDialogRequest& request) {
  std::lock_guard lock(impl_->mu);
  impl_->answers.push_back({FileDialogAnswer::Outcome::kUnavailable, request.purpose, "",
                            "this build of kiln has no desktop file chooser (built without libportal)"});
}

std::optional<FileDialogAnswer> NativeFileDialog::Poll() {
  std::lock_guard lock(impl_->mu);
  if (impl_->answers.empty()) return std::nullopt;
  FileDialogAnswer a = std::move(impl_->answers.front());
  impl_->answers.pop_front();
  return a;
}

}  // namespace kiln::app
