#include "app/store_settings_dialog.h"

#include <imgui.h>

#include <chrono>
#include <cstdio>

#include "app/retention_limits.h"
#include "ui/format.h"
#include "ui/theme.h"
#include "ui/widgets.h"

namespace kiln::app {

absl::Status ApplySavedRetention(storage::Store* store, const DesktopSettings& settings, bool age_given,
                                 bool size_given) {
  const storage::StoreStats st = store->Stats();
  std::chrono::nanoseconds age(st.retention_age_ns);
  uint64_t size = st.retention_size_bytes;
  if (!settings.retention_age.empty() && !age_given) {
    absl::StatusOr<std::chrono::nanoseconds> parsed = ParseRetentionAge(settings.retention_age);
    if (!parsed.ok()) return absl::InvalidArgumentError("retention_age " + std::string(parsed.status().message()));
    age = *parsed;
  }
  if (!settings.retention_size.empty() && !size_given) {
    absl::StatusOr<uint64_t> parsed = ParseRetentionSize(settings.retention_size);
    if (!parsed.ok()) return absl::InvalidArgumentError("retention_size " + std::string(parsed.status().message()));
    size = *parsed;
  }
  store->SetRetention(age, size);
  return absl::OkStatus();
}

void StoreSettingsDialog::Open() {
  const storage::StoreStats st = target_.store->Stats();
  std::snprintf(size_text_, sizeof size_text_, "%s", FormatRetentionSize(st.retention_size_bytes).c_str());
  std::snprintf(age_text_, sizeof age_text_, "%s",
                FormatRetentionAge(std::chrono::nanoseconds(st.retention_age_ns)).c_str());
  error_.clear();
  open_ = true;
  ImGui::SetWindowFocus("Store settings");
}

void StoreSettingsDialog::Apply() {
  absl::StatusOr<uint64_t> size = ParseRetentionSize(size_text_);
  absl::StatusOr<std::chrono::nanoseconds> age = ParseRetentionAge(age_text_);
  if (!size.ok()) {
    error_ = "Keep at most: " + std::string(size.status().message());
    return;
  }
  if (!age.ok()) {
    error_ = "Delete samples older than: " + std::string(age.status().message());
    return;
  }
  target_.store->SetRetention(*age, *size);
  // Saved as typed (it parsed): "14d" stays "14d".
  DesktopSettings& settings = *target_.settings;
  settings.retention_size = size_text_;
  settings.retention_age = age_text_;
  if (std::string error = SaveSettings(*target_.paths, settings); !error.empty()) {
    target_.notify(true, "Settings: " + error);
  }
  const std::string done =
      *size == 0 && age->count() == 0
          ? std::string("Retention off: the store keeps everything")
          : "Retention: the store keeps " +
                (*size > 0 ? "at most " + storage::FormatBytes(*size) : std::string("any size")) +
                (age->count() > 0 ? " of the last " + settings.retention_age : std::string(" of any age")) +
                "; the oldest samples past that are deleted within seconds, then every minute";
  (void)target_.store->AppendLog(storage::LogLevel::kInfo, done);
  target_.notify(false, done);
  open_ = false;
}

void StoreSettingsDialog::Draw(const ui::StatusSnapshot* status) {
  if (!open_) return;
  const float em = ImGui::GetFontSize();
  // Height 0: fitted every frame, so an error line never hides the buttons.
  ImGui::SetNextWindowSize(ImVec2(36 * em, 0), ImGuiCond_Always);
  if (!ImGui::Begin("Store settings", &open_, ImGuiWindowFlags_NoCollapse)) {
    ImGui::End();
    return;
  }
  if (ui::EscapeCloses()) open_ = false;
  ImGui::TextWrapped("Store: %s", target_.data_dir.c_str());
  // The live store's status as the worker last read it: Stats() walks the
  // data directory, too much to do every frame.
  if (status != nullptr) {
    ImGui::Text("It holds %s samples in %s.", ui::FormatCount(status->stats.samples).c_str(),
                storage::FormatBytes(status->stats.disk_bytes).c_str());
  }
  ImGui::Separator();
  ImGui::TextWrapped(
      "Retention deletes the oldest samples, ten seconds of them at a time, while the store is past either "
      "limit (0 = no limit):");
  ImGui::SetNextItemWidth(10 * em);
  ImGui::InputTextWithHint("Keep at most (size)", "4GiB", size_text_, sizeof size_text_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("e.g. 4GiB, 512MiB, 2GB; 0 = no size limit");
  ImGui::SetNextItemWidth(10 * em);
  ImGui::InputTextWithHint("Delete samples older than", "14d", age_text_, sizeof age_text_);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "e.g. 90s, 30m, 12h, 14d, 2w; 0 = keep every age.\nCaptures imported into the store "
        "keep their own times: an age limit deletes old ones too.");
  }
  ImGui::TextDisabled("Applied now and saved for the next start. --retention-age and --retention-size");
  ImGui::TextDisabled("on the command line take precedence over what is saved here.");
  if (!error_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ui::CurrentPalette().error_text);
    ImGui::TextWrapped("%s", error_.c_str());
    ImGui::PopStyleColor();
  }
  if (ImGui::Button("Apply")) Apply();
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) open_ = false;
  ImGui::End();
}

}  // namespace kiln::app
