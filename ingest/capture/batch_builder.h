// BatchBuilder: fills a storage::ProfileBatch with deduplicated strings,
// executables, frames, stacks and attribute sets, so importers hand the
// store (and the converter) compact dictionaries. Not thread safe: one
// builder per import.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "storage/model/profile_model.h"

namespace kiln::capture {

class BatchBuilder {
 public:
  explicit BatchBuilder(storage::ProfileBatch* batch);

  uint32_t String(std::string_view s);
  uint32_t Executable(const storage::Executable& executable);
  uint32_t Frame(const storage::Frame& frame);
  // Appends without deduplication (see AppendStack).
  uint32_t AppendFrame(const storage::Frame& frame) {
    batch_->dict.frames.push_back(frame);
    return static_cast<uint32_t>(batch_->dict.frames.size() - 1);
  }
  // Root-first frame indices.
  uint32_t Stack(const uint32_t* frames, size_t count);
  uint32_t Stack(const std::vector<uint32_t>& frames) { return Stack(frames.data(), frames.size()); }
  // Appends without deduplication, for callers that deduplicate on a
  // cheaper key of their own (a repeat is harmless: the store interns).
  uint32_t AppendStack(const uint32_t* frames, size_t count);
  // Sorted by key string here; the last value of a repeated key wins.
  uint32_t AttributeSet(std::vector<storage::Attribute> attributes);
  uint32_t AttributeSet(std::vector<std::pair<std::string, std::string>> key_values);

  storage::ProfileBatch& batch() { return *batch_; }

 private:
  struct FrameKey {
    storage::Frame frame;
    bool operator==(const FrameKey& o) const { return frame == o.frame; }
    template <typename H>
    friend H AbslHashValue(H h, const FrameKey& k) {
      const auto& f = k.frame;
      return H::combine(std::move(h), f.function, f.file, f.executable, f.line, f.address,
                        static_cast<uint8_t>(f.type), f.inlined);
    }
  };
  struct ExecutableKey {
    storage::Executable e;
    bool operator==(const ExecutableKey& o) const { return e == o.e; }
    template <typename H>
    friend H AbslHashValue(H h, const ExecutableKey& k) {
      return H::combine(std::move(h), k.e.file_name, k.e.htlhash, k.e.gnu_build_id, k.e.go_build_id);
    }
  };

  storage::ProfileBatch* batch_;
  absl::flat_hash_map<std::string, uint32_t> strings_;
  absl::flat_hash_map<ExecutableKey, uint32_t> executables_;
  absl::flat_hash_map<FrameKey, uint32_t> frames_;
  absl::flat_hash_map<std::string, uint32_t> stacks_;     // key: raw uint32 bytes
  absl::flat_hash_map<std::string, uint32_t> attr_sets_;  // key: raw Attribute bytes
};

}  // namespace kiln::capture
