#include "app/capture_sources.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "ingest/capture/capture_commands.h"
#include "ingest/capture/capture_store_dirs.h"
#include "ui/format.h"
#include "ui/frame_colors.h"

namespace kiln::app {

std::string DisplayName(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.empty() ? path : name;
}

// ---------------------------------------------------------------------------
// CaptureLoad
// ---------------------------------------------------------------------------

CaptureLoad::CaptureLoad(std::string path, std::function<void()> on_done, bool demangle)
    : path_(std::move(path)),
      on_done_(std::move(on_done)),
      demangle_(demangle),
      result_(absl::UnknownError("not finished")) {
  thread_ = std::thread([this] { Run(); });
}

CaptureLoad::~CaptureLoad() {
  cancel_ = true;
  thread_.join();
}

CaptureLoadProgress CaptureLoad::Progress() const {
  CaptureLoadProgress p;
  p.bytes_done = bytes_done_;
  p.bytes_total = bytes_total_;
  p.samples = samples_;
  p.writing = writing_;
  return p;
}

absl::StatusOr<LoadedCapture> CaptureLoad::Take() { return std::move(result_); }

void CaptureLoad::Run() {
  auto finish = [this](absl::StatusOr<LoadedCapture> result) {
    result_ = std::move(result);
    done_ = true;
    if (on_done_) on_done_();
  };
  capture::ImportOptions options;
  options.cancel = &cancel_;
  options.demangle = demangle_;
  options.progress = [this](const capture::ImportProgress& p) {
    bytes_done_ = p.bytes_done;
    bytes_total_ = p.bytes_total;
    samples_ = p.samples;
    if (on_done_) on_done_();  // wake the UI so the progress bar moves
    return true;
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path_, ec)) {
    return finish(absl::InvalidArgumentError(absl::StrCat(path_, ": is a directory, not a capture file")));
  }
  auto imported = capture::ImportFile(path_, options);
  if (!imported.ok()) return finish(imported.status());
  if (cancel_) return finish(absl::CancelledError(absl::StrCat(path_, ": cancelled")));
  if (imported->batch.samples.empty()) {
    // An empty source would only show the "how to add data" help.
    std::string why = absl::StrCat(path_, ": no samples in this ",
                                   std::string(capture::CaptureFormatName(imported->format)), " file");
    if (imported->skipped_records > 0)
      absl::StrAppend(&why, " (", imported->skipped_records, " records skipped");
    if (!imported->warnings.empty()) absl::StrAppend(&why, "; first: ", imported->warnings.front());
    if (imported->skipped_records > 0) absl::StrAppend(&why, ")");
    return finish(absl::InvalidArgumentError(why));
  }
  samples_ = imported->batch.samples.size();
  bytes_done_ = bytes_total_ = imported->decompressed_bytes;
  writing_ = true;
  if (on_done_) on_done_();
  auto store = TemporaryStore::Create();
  if (!store.ok()) return finish(store.status());
  if (absl::Status s = (*store)->store().Write(imported->batch); !s.ok()) {
    return finish(absl::Status(s.code(), absl::StrCat(path_, ": ", s.message())));
  }
  // Cancel pressed while writing: the store (and its directory) goes now.
  if (cancel_) return finish(absl::CancelledError(absl::StrCat(path_, ": cancelled")));
  (void)(*store)->store().AppendLog(
      storage::LogLevel::kInfo,
      absl::StrCat("opened ", path_, " (", std::string(capture::CaptureFormatName(imported->format)),
                   "): ", imported->batch.samples.size(), " samples, ", imported->skipped_records,
                   " records skipped"));
  for (const std::string& w : imported->warnings) {
    (void)(*store)->store().AppendLog(storage::LogLevel::kWarning, w);
  }
  LoadedCapture out;
  out.path = path_;
  out.store = *std::move(store);
  out.format = imported->format;
  const std::optional<uint32_t> shown = imported->batch.dict.SampleTypeIndex(imported->default_sample_type);
  for (const storage::Sample& s : imported->batch.samples) out.samples += shown && s.sample_type == *shown;
  out.sample_types = imported->sample_types.size();
  out.skipped_records = imported->skipped_records;
  out.default_sample_type = imported->default_sample_type;
  out.timed = imported->timed;
  out.range_start_ns = imported->range_start_ns;
  out.range_end_ns = imported->range_end_ns;
  out.warnings = std::move(imported->warnings);
  finish(std::move(out));
}

// ---------------------------------------------------------------------------
// BackgroundTask and ExportSliceToFile
// ---------------------------------------------------------------------------

BackgroundTask::BackgroundTask(std::string what, std::function<absl::StatusOr<std::string>()> job,
                               std::function<void()> wake)
    : what_(std::move(what)), result_(absl::UnknownError("not finished")) {
  thread_ = std::thread([this, job = std::move(job), wake = std::move(wake)] {
    result_ = job();
    done_ = true;
    if (wake) wake();
  });
}

BackgroundTask::~BackgroundTask() { thread_.join(); }

absl::StatusOr<std::string> ExportSliceToFile(const std::shared_ptr<const storage::ProfileSlice>& slice,
                                              capture::ExportFormat format,
                                              const storage::FlameTreeOptions& tree, const std::string& path) {
  if (!slice) return absl::FailedPreconditionError("nothing to export yet: the view has no data");
  if (path.empty()) return absl::InvalidArgumentError("no output file given");
  capture::ExportOptions options;
  options.format = format;
  options.tree = tree;
  options.title = DisplayName(path);
  options.node_color = [](storage::NodeKind kind, storage::FrameType type, std::string_view label) {
    const ui::Rgba c = ui::NodeColor(kind, type, label);
    return capture::Rgb{ui::RedOf(c), ui::GreenOf(c), ui::BlueOf(c)};
  };
  auto bytes = capture::ExportSlice(slice, options);
  if (!bytes.ok()) return bytes.status();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return absl::StrCat("Exported ", bytes->size(), " bytes to ", ec ? path : absolute.string());
}

// ---------------------------------------------------------------------------
// SourceList
// ---------------------------------------------------------------------------

SourceList::SourceList(storage::Store& live, const ReceiverControl* receiver, std::string live_data_dir,
                       std::function<void()> wake_ui)
    : live_(live), wake_ui_(std::move(wake_ui)) {
  auto source = std::make_unique<Source>();
  source->name = "Live store";
  source->store = &live;
  source->shared_store = std::shared_ptr<const storage::Store>(std::shared_ptr<void>(), &live);
  source->worker = std::make_unique<GuiWorker>(live, receiver, std::move(live_data_dir), wake_ui_);
  sources_.push_back(std::move(source));
  // Capture stores left by kilns that were killed (kill -9, a crash): only
  // marked ones whose kiln is gone and whose store nobody holds open. Said
  // in the Log, not as a notice.
  storage::Store* log = &live_;
  RunTask("Removing leftover capture stores", [log]() -> absl::StatusOr<std::string> {
    auto sweep = capture::SweepCaptureStoreDirs();
    for (const std::string& dir : sweep.removed) {
      (void)log->AppendLog(storage::LogLevel::kInfo,
                           absl::StrCat("Removed ", dir,
                                        ", a capture store left by a kiln that ended without "
                                        "closing it"));
    }
    return std::string();
  });
}

SourceList::~SourceList() {
  tasks_.clear();    // an export or import finishes first
  loads_.clear();    // cancel and join the loads first: they may be writing
  sources_.clear();  // each worker joins before its store goes
}

void SourceList::Open(const std::string& path, bool demangle) {
  loads_.push_back(std::make_unique<CaptureLoad>(path, wake_ui_, demangle));
}

void SourceList::RunTask(std::string what, std::function<absl::StatusOr<std::string>()> job) {
  tasks_.push_back(std::make_unique<BackgroundTask>(std::move(what), std::move(job), wake_ui_));
}

void SourceList::ImportIntoLive(const std::string& path) {
  storage::Store* live = &live_;
  RunTask(absl::StrCat("Import of ", path), [live, path]() -> absl::StatusOr<std::string> {
    auto result = capture::ImportIntoStore(live, path, {});
    if (!result.ok()) return result.status();
    return absl::StrCat("Imported ", ui::FormatCount(result->samples), " samples from ", path,
                        " into the live store");
  });
}

void SourceList::Export(std::shared_ptr<const storage::ProfileSlice> slice,
                        std::shared_ptr<const storage::Store> store, const storage::Query& query,
                        capture::ExportFormat format, const storage::FlameTreeOptions& tree,
                        const std::string& path) {
  RunTask(absl::StrCat("Export to ", path),
          [slice = std::move(slice), store = std::move(store), query, format, tree, path]() mutable {
            if (slice && store && format == capture::ExportFormat::kOtlp && tree.transforms.empty()) {
              storage::Query with_samples = query;
              with_samples.keep_samples = true;
              auto full = store->Run(with_samples);
              if (!full.ok()) return absl::StatusOr<std::string>(full.status());
              slice = *std::move(full);
            }
            return ExportSliceToFile(slice, format, tree, path);
          });
}

bool SourceList::Poll() {
  bool changed = false;
  for (size_t i = 0; i < tasks_.size();) {
    if (!tasks_[i]->Done()) {
      ++i;
      continue;
    }
    auto result = tasks_[i]->Take();
    const std::string what = tasks_[i]->what();
    tasks_.erase(tasks_.begin() + static_cast<std::ptrdiff_t>(i));
    changed = true;
    if (result.ok()) {
      if (!result->empty()) Notify(false, *result);  // empty: nothing to say
    } else {
      Notify(true, absl::StrCat(what, " failed: ", std::string(result.status().message())));
    }
  }
  for (size_t i = 0; i < loads_.size();) {
    if (!loads_[i]->Done()) {
      ++i;
      continue;
    }
    auto loaded = loads_[i]->Take();
    const std::string path = loads_[i]->path();
    loads_.erase(loads_.begin() + static_cast<std::ptrdiff_t>(i));
    changed = true;
    if (!loaded.ok()) {
      if (absl::IsCancelled(loaded.status())) {
        Notify(false, absl::StrCat("Opening ", path, " was cancelled"));
      } else {
        Notify(true, absl::StrCat("Cannot open ", std::string(loaded.status().message())));
      }
      continue;
    }
    auto source = std::make_unique<Source>();
    // Names are how the Source combo and a diff's baseline tell sources
    // apart: a second "profile.pb.gz" (another folder, or the same file
    // again) becomes "profile.pb.gz (2)".
    source->name = DisplayName(path);
    for (int n = 2; std::any_of(sources_.begin(), sources_.end(),
                                [&](const auto& s) { return s->name == source->name; });
         ++n) {
      source->name = absl::StrCat(DisplayName(path), " (", n, ")");
    }
    source->path = path;
    source->capture_store = std::move(loaded->store);
    source->store = &source->capture_store->store();
    source->shared_store = std::shared_ptr<const storage::Store>(source->capture_store, source->store);
    source->worker = std::make_unique<GuiWorker>(*source->store, nullptr, path, wake_ui_);
    // A capture opens on its default sample type and its whole range.
    source->session.SetSampleType(loaded->default_sample_type);
    source->session.preset = ui::TimePreset::kAll;
    source->session.offline = true;
    source->session.untimed = !loaded->timed;
    source->session.profile_start_ns = loaded->range_start_ns;
    source->session.profile_end_ns = loaded->range_end_ns;
    source->session_initialized = true;
    std::string text =
        absl::StrCat("Opened ", path, " (", std::string(capture::CaptureFormatName(loaded->format)),
                     "): ", ui::FormatValue(storage::OnCpuSamples(), static_cast<int64_t>(loaded->samples)));
    if (loaded->sample_types > 1) {
      absl::StrAppend(&text, " (", storage::SampleTypeLabel(loaded->default_sample_type), "; ",
                      loaded->sample_types - 1, " more sample type", loaded->sample_types > 2 ? "s" : "", ")");
    }
    if (loaded->skipped_records > 0)
      absl::StrAppend(&text, ", ", loaded->skipped_records, " records skipped");
    Notify(false, text);
    sources_.push_back(std::move(source));
    selected_ = sources_.size() - 1;
  }
  return changed;
}

void SourceList::Select(size_t index) {
  if (index < sources_.size()) selected_ = index;
}

void SourceList::Close(size_t index) {
  if (index == 0 || index >= sources_.size()) return;
  sources_.erase(sources_.begin() + static_cast<std::ptrdiff_t>(index));
  if (selected_ >= index) selected_ = selected_ == index ? 0 : selected_ - 1;
}

void SourceList::ExpireNotices(std::chrono::steady_clock::time_point now) {
  std::erase_if(notices_, [now](const Notice& n) {
    return !n.error && now - n.time > std::chrono::seconds(kInfoNoticeSeconds);
  });
}

void SourceList::Notify(bool error, const std::string& text) {
  notices_.push_back({error, text, std::chrono::steady_clock::now()});
  constexpr size_t kMaxNotices = 8;
  if (notices_.size() > kMaxNotices) notices_.erase(notices_.begin());
  (void)live_.AppendLog(error ? storage::LogLevel::kError : storage::LogLevel::kInfo, text);
  sources_[0]->worker->RefreshStatus();  // the Log view shows it now, not in a second
}

}  // namespace kiln::app
