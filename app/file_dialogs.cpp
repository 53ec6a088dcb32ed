#include "app/file_dialogs.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <imgui.h>

#include "ui/theme.h"

namespace kiln::app {

namespace {
constexpr const char* kExportFormats[] = {"otlp", "pprof", "folded", "svg"};

bool CancelPressed() {
  return ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
}
}  // namespace

FileDialogs::FileDialogs(FileDialogActions actions, std::function<void()> wake)
    : actions_(std::move(actions)), native_(std::move(wake)) {}

void FileDialogs::TakeAnswers() {
  while (std::optional<FileDialogAnswer> a = native_.Poll()) {
    using Outcome = FileDialogAnswer::Outcome;
    if (a->outcome == Outcome::kUnavailable) {
      if (!std::exchange(fallback_logged_, true))
        actions_.log("No desktop file chooser (" + a->reason + "); using Kiln's own file browser");
      if (a->purpose == "open") open_builtin_ = true;
      if (a->purpose == "symbols") symbols_builtin_ = true;
      continue;  // Export and PNG: their dialog is still open, with its path field
    }
    if (a->outcome != Outcome::kChosen) continue;
    if (a->purpose == "open") {
      actions_.open(a->path);
    } else if (a->purpose == "symbols") {
      actions_.add_symbols(a->path);
    } else if (a->purpose == "export") {
      std::snprintf(export_path_, sizeof export_path_, "%s", a->path.c_str());
    } else if (a->purpose == "png") {
      std::snprintf(png_path_, sizeof png_path_, "%s", a->path.c_str());
    }
  }
}

// Open and Add symbols: the desktop's chooser when there may be one, else
// (or when it turns out there is none) the window's browser.
void FileDialogs::AskForFile(const char* title, const char* purpose, bool* builtin) {
  if (native_.Busy()) return;  // its window is already up
  if (native_.MaybeAvailable()) {
    native_.Ask({.save = false, .title = title, .purpose = purpose});
  } else {
    *builtin = true;
  }
}

// The Choose... button of Export and Save PNG.
void FileDialogs::ChooseSavePath(const char* title, const char* suggested, const char* purpose) {
  if (!native_.MaybeAvailable()) return;
  ImGui::SameLine();
  ImGui::BeginDisabled(native_.Busy());
  if (ImGui::Button("Choose...")) {
    native_.Ask({.save = true,
                 .title = title,
                 .suggested_name = std::filesystem::path(suggested).filename().string(),
                 .purpose = purpose});
  }
  ImGui::EndDisabled();
}

void FileDialogs::RefreshListing(std::string dir) {
  // "/a/b/" -> "/a/b", so Up goes to "/a".
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  browse_dir_ = dir;
  browse_entries_.clear();
  browse_error_.clear();
  std::error_code ec;
  constexpr size_t kMaxEntries = 2000;  // a listing, not a file manager
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator() && browse_entries_.size() < kMaxEntries; it.increment(ec)) {
    std::error_code type_ec;
    browse_entries_.emplace_back(it->path().filename().string(), it->is_directory(type_ec));
  }
  if (ec) browse_error_ = dir + ": " + ec.message();
  std::sort(browse_entries_.begin(), browse_entries_.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
}

// The Open dialog's body: a directory listing, a path field, a button
// labelled `action` that calls `pick` with the chosen file. Shared by
// File > Open... and Add symbols from a file.
void FileDialogs::DrawFileBrowser(const char* hint, const char* action,
                                  const std::function<void(const std::string&)>& pick) {
  const float em = ImGui::GetFontSize();
  ImGui::TextDisabled("%s", hint);
  ImGui::Text("Directory: %s", browse_dir_.c_str());
  ImGui::SameLine();
  if (ImGui::SmallButton("Up")) RefreshListing(std::filesystem::path(browse_dir_).parent_path().string());
  ImGui::BeginChild("##listing", ImVec2(0, -ImGui::GetFrameHeightWithSpacing() * 2.2f), true);
  if (!browse_error_.empty()) ImGui::TextColored(ui::CurrentPalette().error_text, "%s", browse_error_.c_str());
  std::string enter;
  for (const auto& [name, is_dir] : browse_entries_) {
    const std::string label = is_dir ? name + "/" : name;
    const std::string full = (std::filesystem::path(browse_dir_) / name).string();
    if (ImGui::Selectable(label.c_str(), full == open_path_, ImGuiSelectableFlags_AllowDoubleClick)) {
      // A click selects, a double-click enters or opens: entering on a
      // single click would let a double-click's second click land on
      // whatever the new listing shows there.
      std::snprintf(open_path_, sizeof open_path_, "%s", full.c_str());
      if (ImGui::IsMouseDoubleClicked(0)) {
        if (is_dir) {
          enter = full;
        } else {
          pick(open_path_);
          ImGui::CloseCurrentPopup();
        }
      }
    }
  }
  ImGui::EndChild();
  if (!enter.empty()) RefreshListing(enter);
  ImGui::SetNextItemWidth(-em * 9);
  const bool submitted = ImGui::InputText("##path", open_path_, sizeof open_path_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::Button(action) || submitted) && open_path_[0]) {
    std::error_code ec;
    if (std::filesystem::is_directory(open_path_, ec)) {
      RefreshListing(open_path_);
    } else {
      pick(open_path_);
      ImGui::CloseCurrentPopup();
    }
  }
  ImGui::SameLine();
  if (CancelPressed()) ImGui::CloseCurrentPopup();
}

void FileDialogs::Draw(std::string_view view_id, const std::function<ExportTarget()>& export_target) {
  const float em = ImGui::GetFontSize();
  if (std::exchange(open_requested_, false)) AskForFile("Open a capture", "open", &open_builtin_);
  if (std::exchange(symbols_requested_, false)) AskForFile("Add symbols from a file", "symbols", &symbols_builtin_);
  // Each opening lists the folder afresh (files written since the last
  // time were missing, and its last error stayed).
  const auto list_again = [this] {
    std::error_code ec;
    RefreshListing(browse_dir_.empty() ? std::filesystem::current_path(ec).string() : browse_dir_);
  };
  if (std::exchange(open_builtin_, false)) {
    list_again();
    ImGui::OpenPopup("Open capture");
  }
  if (std::exchange(symbols_builtin_, false)) {
    list_again();
    ImGui::OpenPopup("Add symbols from a file");
  }
  if (std::exchange(export_requested_, false)) {
    if (!export_path_[0])
      std::snprintf(export_path_, sizeof export_path_, "kiln-export.%s", kExportFormats[export_format_]);
    ImGui::OpenPopup("Export");
  }
  if (std::exchange(png_requested_, false)) {
    // The name follows the view shown unless the user wrote their own
    // (it said kiln-flamegraph.png over a Top functions view).
    if (!png_path_[0] || png_path_ == png_auto_path_) {
      png_auto_path_ = "kiln-" + std::string(view_id) + ".png";
      std::snprintf(png_path_, sizeof png_path_, "%s", png_auto_path_.c_str());
    }
    ImGui::OpenPopup("Save PNG of view");
  }

  ImGui::SetNextWindowSize(ImVec2(em * 46, em * 30), ImGuiCond_Appearing);
  if (ImGui::BeginPopupModal("Open capture")) {
    DrawFileBrowser(
        "OTLP (protobuf/JSON), pprof, folded stacks or perf script; gzip/zstd are fine. "
        "ELF files add symbols.",
        "Open", actions_.open);
    ImGui::EndPopup();
  }
  ImGui::SetNextWindowSize(ImVec2(em * 46, em * 30), ImGuiCond_Appearing);
  if (ImGui::BeginPopupModal("Add symbols from a file")) {
    DrawFileBrowser(
        "An executable, shared library or debug file of an executable in the profile; matched by "
        "htlhash or GNU build id.",
        "Add", actions_.add_symbols);
    ImGui::EndPopup();
  }
  DrawExport(export_target);
  DrawPng();
}

void FileDialogs::DrawExport(const std::function<ExportTarget()>& export_target) {
  if (!ImGui::BeginPopupModal("Export", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  const float em = ImGui::GetFontSize();
  const ExportTarget target = export_target();
  // The slice the view shows is what gets written: say what it is.
  ImGui::Text("Exports %s", target.summary.c_str());
  ImGui::SetNextItemWidth(em * 8);
  const int before = export_format_;
  ImGui::Combo("Format", &export_format_, kExportFormats, 4);
  if (before != export_format_) {
    // Keep the user's name, switch the extension.
    std::string path = export_path_;
    const std::string old_ext = std::string(".") + kExportFormats[before];
    if (path.size() >= old_ext.size() && path.compare(path.size() - old_ext.size(), old_ext.size(), old_ext) == 0) {
      path.resize(path.size() - old_ext.size());
      path += std::string(".") + kExportFormats[export_format_];
      std::snprintf(export_path_, sizeof export_path_, "%s", path.c_str());
    }
  }
  ImGui::SetNextItemWidth(em * 30);
  ImGui::InputText("File", export_path_, sizeof export_path_);
  ChooseSavePath("Export", export_path_, "export");
  if (ImGui::Button("Export") && export_path_[0]) {
    capture::ExportFormat format = capture::ExportFormat::kFolded;
    (void)capture::ParseExportFormat(kExportFormats[export_format_], &format);
    target.write(format, export_path_);
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (CancelPressed()) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

void FileDialogs::DrawPng() {
  if (!ImGui::BeginPopupModal("Save PNG of view", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30);
  ImGui::InputText("File", png_path_, sizeof png_path_);
  ChooseSavePath("Save PNG of view", png_path_, "png");
  if (ImGui::Button("Save") && png_path_[0]) {
    pending_png_ = png_path_;
    pending_png_frames_ = 2;  // the dialog is still in this frame and the next
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (CancelPressed()) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

std::optional<std::string> FileDialogs::TakePngToSave() {
  if (pending_png_.empty() || --pending_png_frames_ > 0) return std::nullopt;
  return std::exchange(pending_png_, {});
}

}  // namespace kiln::app
