// The desktop's own file chooser, through the XDG desktop portal
// (org.freedesktop.portal.FileChooser, called with libportal), for File >
// Open, Add symbols, Export and Save PNG. Ask() returns at once; the
// portal's answer arrives on a thread of this class and is taken with
// Poll() on the UI thread (`wake` is called when one is ready, from that
// thread). When no portal can answer (no session bus, no
// xdg-desktop-portal on it, a build without libportal, macOS) the answer
// says kUnavailable with the reason, and the window uses its own browser.
//
//   UI thread                  portal thread (GMainContext of its own)
//   Ask(request) ──queue────►  xdp_portal_open_file / _save_file
//   Poll() ◄──answers──────── callback: uris[0] -> path, or the error
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace kiln::app {

struct FileDialogRequest {
  bool save = false;           // a save dialog (Export, PNG) instead of open
  std::string title;
  std::string suggested_name;  // save: the proposed file name
  std::string purpose;         // handed back in the answer ("open", "symbols", "export", "png")
};

struct FileDialogAnswer {
  enum class Outcome { kChosen, kCancelled, kUnavailable };
  Outcome outcome = Outcome::kUnavailable;
  std::string purpose;
  std::string path;    // kChosen: a local path
  std::string reason;  // kUnavailable: why ("no XDG desktop portal on the session bus")
};

class NativeFileDialog {
 public:
  explicit NativeFileDialog(std::function<void()> wake);
  ~NativeFileDialog();  // cancels what is open and joins the thread
  NativeFileDialog(const NativeFileDialog&) = delete;
  NativeFileDialog& operator=(const NativeFileDialog&) = delete;

  // False once a request found no portal: later ones go straight to the
  // window's own browser without asking again.
  bool MaybeAvailable() const;
  bool Busy() const;  // a dialog is open
  void Ask(const FileDialogRequest& request);
  std::optional<FileDialogAnswer> Poll();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::app
