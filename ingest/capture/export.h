// Capture files out: a ProfileSlice (a store query or a capture opened
// without a store) written as OTLP (gzip protobuf), pprof (gzip), folded
// stacks or a standalone flamegraph SVG.
//
// Threads: pure functions of their inputs; call from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ingest/capture/frame_palette.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"
#include "pprof/profile.pb.h"
#include "storage/model/diff.h"
#include "storage/model/flame_tree.h"
#include "storage/model/query.h"
#include "storage/model/profile_model.h"
#include "storage/store.h"

namespace kiln::capture {

enum class ExportFormat : uint8_t { kOtlp, kPprof, kFolded, kSvg };
bool ParseExportFormat(std::string_view name, ExportFormat* format);  // "otlp", "pprof", ...

struct ExportOptions {
  ExportFormat format = ExportFormat::kFolded;
  // folded and svg: how the tree is rooted, inline frames, transforms.
  storage::FlameTreeOptions tree;
  // folded: "_[k]" / "_[j]" suffixes (stackcollapse-perf.pl --all).
  bool annotate = false;
  // svg: the title line at the top.
  std::string title = "Flame Graph";
  int svg_width = 1200;
  // svg: fill colour of a node. Empty: frame_palette.h. The app passes its
  // own (ui::NodeColor) so the SVG matches the window.
  std::function<Rgb(storage::NodeKind, storage::FrameType, std::string_view label)> node_color;
};

// The whole file content (gzip-compressed for otlp and pprof).
[[nodiscard]] absl::StatusOr<std::string> ExportSlice(
    const std::shared_ptr<const storage::ProfileSlice>& slice, const ExportOptions& options);

// The same from raw samples (a capture opened without a store): OTLP keeps
// every sample's timestamp and link (a value per timestamp), so a
// converted capture keeps its timeline; the other formats aggregate.
[[nodiscard]] absl::StatusOr<std::string> ExportBatch(const storage::ProfileBatch& batch,
                                                      const storage::Query& query,
                                                      const ExportOptions& options);
opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest
BuildOtlpRequestFromBatch(const storage::ProfileBatch& batch, const storage::Query& query);

// The messages behind the otlp and pprof formats (for tests and callers that
// want to send or inspect rather than write a file).
//
// OTLP: process-level attributes (process.*, container.*, service.*,
// host.*, os.*, k8s.*) become resource attributes, one ResourceProfiles per
// distinct set; the rest are sample attributes; one sample per stack weight
// with a single value (the weight) at the slice's first sample time, or,
// when the slice lists its samples (Query::keep_samples), with a value per
// timestamp.
opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest BuildOtlpRequest(
    const storage::ProfileSlice& slice);
// Both write the slice's sample type, period type and period.
perftools::profiles::Profile BuildPprofProfile(const storage::ProfileSlice& slice);

// Folded lines (via storage::FoldedLines) joined with '\n'.
std::string FoldedText(const std::shared_ptr<const storage::ProfileSlice>& slice,
                       const ExportOptions& options);

// A standalone SVG flame graph (icicle: roots at the top, as in the app),
// colours from frame_palette.h, a <title> tooltip per frame.
std::string FlameGraphSvg(const storage::FlameTree& tree, const ExportOptions& options);

// The diff flame graph: widths are the mean of a node's shares of both
// sides (so gone nodes stay visible), fill DiffColor of its change,
// tooltips both values, both shares, the change and significance.
std::string DiffFlameGraphSvg(const storage::DiffTree& diff, const ExportOptions& options, bool normalized);
// The diff as JSON: sample type, both totals, the test used, and per node
// (depth first, path "a;b;c") both self and total weights, shares, change,
// z, significance and "new" / "gone" / "both".
std::string DiffJson(const storage::DiffTree& diff, bool normalized);

// gzip with the default level (also used by tests and the benchmark).
std::string GzipCompress(std::string_view data);

}  // namespace kiln::capture
