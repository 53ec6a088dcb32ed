// The File menu's dialogs: Open, Add symbols from a file, Export and Save
// PNG of view. Open and Add symbols ask the desktop's chooser first
// (app/native_file_dialog.h) and fall back to the window's own browser;
// Export and Save PNG are small dialogs of their own whose Choose... button
// asks the desktop's save dialog. The window requests a dialog (menus,
// shortcuts, a view's request), calls TakeAnswers() at the start of a frame
// and Draw() inside it; what the user chose goes to the actions it gave.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/native_file_dialog.h"
#include "ingest/capture/export.h"

namespace kiln::app {

struct FileDialogActions {
  std::function<void(const std::string& path)> open;         // a capture (or an ELF file: symbols)
  std::function<void(const std::string& path)> add_symbols;  // an ELF file
  std::function<void(const std::string& message)> log;       // an info line for the Log
};

// What Export writes: the slice the view shows.
struct ExportTarget {
  std::string summary;  // "what the view shows: SOURCE, TYPE, RANGE, filters"
  std::function<void(capture::ExportFormat, const std::string& path)> write;
};

class FileDialogs {
 public:
  // `wake` is called (from the portal's thread) when the desktop answers.
  FileDialogs(FileDialogActions actions, std::function<void()> wake);

  void RequestOpen() { open_requested_ = true; }
  void RequestAddSymbols() { symbols_requested_ = true; }
  void RequestExport() { export_requested_ = true; }
  void RequestPng() { png_requested_ = true; }

  // Frame start: the desktop chooser's answers.
  void TakeAnswers();
  // Inside the frame. `view_id` names the PNG after the view shown;
  // `export_target` is asked for only while Export is open.
  void Draw(std::string_view view_id, const std::function<ExportTarget()>& export_target);
  // After rendering: the path to write the framebuffer to, once the Save
  // PNG dialog has gone from the frame.
  std::optional<std::string> TakePngToSave();
  // A PNG waits for the frames that take its dialog away.
  bool PngPending() const { return pending_png_frames_ > 0; }

 private:
  void AskForFile(const char* title, const char* purpose, bool* builtin);
  void ChooseSavePath(const char* title, const char* suggested, const char* purpose);
  void RefreshListing(std::string dir);
  void DrawFileBrowser(const char* hint, const char* action, const std::function<void(const std::string&)>& pick);
  void DrawExport(const std::function<ExportTarget()>& export_target);
  void DrawPng();

  FileDialogActions actions_;
  NativeFileDialog native_;
  bool open_requested_ = false, symbols_requested_ = false, export_requested_ = false, png_requested_ = false;
  bool open_builtin_ = false, symbols_builtin_ = false;  // the desktop has no chooser: the window's browser
  bool fallback_logged_ = false;
  char open_path_[1024] = {};
  std::string browse_dir_;                                    // listing cached for this directory
  std::vector<std::pair<std::string, bool>> browse_entries_;  // name, is directory
  std::string browse_error_;
  int export_format_ = 2;  // folded
  char export_path_[1024] = {};
  char png_path_[1024] = {};
  std::string png_auto_path_;  // the name png_path_ was given for the view, not typed
  std::string pending_png_;    // written from the framebuffer once the dialog is gone
  int pending_png_frames_ = 0;
};

}  // namespace kiln::app
