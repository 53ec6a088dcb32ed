// The Store interface's free functions and Store::Open; RocksStore, the
// implementation on RocksDB, is in store_internal.h and the store_*.cpp
// files, one per concern. This file: the log and statistics.
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "absl/strings/match.h"
#include "storage/store_internal.h"

namespace kiln::storage {

std::vector<SampleType> StoreStats::Types() const {
  std::vector<SampleType> types;
  for (const SampleTypeCount& c : sample_types) types.push_back(c.info.type);
  return types;
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::string HtlhashSymbolKey(std::string_view htlhash_hex) {
  return absl::StrCat("htlhash:", store_internal::AsAbsl(htlhash_hex));
}
std::string GnuBuildIdSymbolKey(std::string_view build_id_hex) {
  return absl::StrCat("gnu:", store_internal::AsAbsl(build_id_hex));
}
std::vector<std::string> SymbolKeys(std::string_view htlhash_hex, std::string_view gnu_build_id_hex) {
  std::vector<std::string> keys;
  if (!htlhash_hex.empty()) keys.push_back(HtlhashSymbolKey(htlhash_hex));
  if (!gnu_build_id_hex.empty()) keys.push_back(GnuBuildIdSymbolKey(gnu_build_id_hex));
  return keys;
}

std::string_view SymbolStateName(SymbolStatus::State state) {
  switch (state) {
    case SymbolStatus::State::kNotAttempted:
      return "not attempted";
    case SymbolStatus::State::kSymbolized:
      return "symbolized";
    case SymbolStatus::State::kNoSymbols:
      return "no symbols found";
    case SymbolStatus::State::kFailed:
      return "failed";
  }
  return "not attempted";
}

std::string DefaultDataDirectory() {
  const char* home = std::getenv("HOME");
  std::string base = home ? home : ".";
#ifdef __APPLE__
  return base + "/Library/Application Support/kiln";
#else
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) return std::string(xdg) + "/kiln";
  return base + "/.local/share/kiln";
#endif
}

bool IsStoreInUse(const absl::Status& status) { return absl::IsUnavailable(status); }

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& dir, Mode mode,
                                                   const StoreOptions& options) {
  // A read-only open beside a running kiln races its compactions: a table
  // file the MANIFEST names can be deleted before it is opened. A new try
  // reads the newer MANIFEST; a read-write open owns the files, so it never
  // races and is not tried again.
  for (int attempt = 0;; ++attempt) {
    auto store = std::make_unique<store_internal::RocksStore>(dir, mode == Mode::kReadOnly, options);
    absl::Status s = store->OpenDb();
    if (s.ok()) {
      if (mode == Mode::kReadWrite) store->StartSettling();
      return std::unique_ptr<Store>(std::move(store));
    }
    const bool vanished = absl::StrContains(s.message(), "No such file");
    if (mode != Mode::kReadOnly || !vanished || attempt == 5) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(20 << attempt));
  }
}

namespace store_internal {

// ============================================================================
// [SECTION] Log, stats, maintenance
// ============================================================================

StoreStats RocksStore::Stats() const {
  StoreStats st;
  {
    const DictionaryPart::Reader read = dictionary_.Read();
    const ProfileDictionary& d = read.dict();
    const Counters counters = samples_.Get();
    for (size_t k = 0; k < counters.samples_by_type.size() && k < d.sample_types.size(); ++k) {
      if (counters.samples_by_type[k] != 0) {
        st.sample_types.push_back({d.sample_types[k], counters.samples_by_type[k]});
      }
    }
    st.samples = counters.samples();
    st.dictionary_memory_bytes = read.MemoryBytes();
    st.blocks = counters.blocks;
    st.first_sample_ns = counters.first_sample_ns;
    st.last_sample_ns = counters.last_sample_ns;
    st.stacks = d.StackCount() - 1;
    st.frames = d.frames.size() - 1;
    st.strings = d.strings.size() - 1;
    st.attribute_sets = d.AttributeSetCount() - 1;
  }
  st.disk_bytes = MeasureDirectory().directory;
  // Named for users ("dictionary", not RocksDB's "default"); a store
  // opened read-only from before symbols, summaries or forwarding lacks
  // those parts.
  const std::pair<const char*, rocksdb::ColumnFamilyHandle*> parts[] = {{"dictionary", meta_cf()},
                                                                        {"sample blocks", blocks_cf()},
                                                                        {"log", log_cf()},
                                                                        {"symbols", symbols_cf()},
                                                                        {"summaries", summaries_cf()},
                                                                        {"forward queue", forward_cf()},
                                                                        {"span index", spans_cf()}};
  for (const auto& [part, family] : parts) {
    if (family == nullptr) continue;
    uint64_t tables = 0, blobs = 0;
    db_->GetIntProperty(family, "rocksdb.total-sst-files-size", &tables);
    db_->GetIntProperty(family, "rocksdb.total-blob-file-size", &blobs);
    st.part_bytes.push_back({part, tables + blobs});
  }
  for (const std::string& destination : forward_->Destinations()) {
    st.forward.push_back({destination, forward_->Backlog(destination)});
  }
  st.data_version = data_version_.load();
  st.retention_age_ns = retention_.age_ns();
  st.retention_size_bytes = retention_.size_bytes();
  st.samples_deleted_by_retention = retention_.Deleted();
  st.dictionary_entries_forgotten = dictionary_.Forgotten();
  st.dictionary_memory_limit_bytes = options_.max_dictionary_memory;
  st.retention_problem = retention_.Problem();
  st.summarized_hours = summaries_.Size();
  st.summary_hours_read = summaries_.hours_read.load();
  st.blocks_read = blocks_read_.load();
  if (disk_) {
    const DiskState d = disk_->state();
    st.disk_free_bytes = d.free_bytes;
    st.disk_reserve_bytes = d.reserve_bytes;
    st.writes_refused = d.refusal;
  }
  return st;
}

std::vector<std::string> RocksStore::AttributeKeys() const {
  const DictionaryPart::Reader read = dictionary_.Read();
  const ProfileDictionary& d = read.dict();
  std::vector<uint32_t> ids;
  for (const Attribute& a : d.attributes) ids.push_back(a.key);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string> keys;
  for (uint32_t id : ids) keys.push_back(d.strings[id]);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<std::string> RocksStore::AttributeValues(std::string_view key, size_t max) const {
  const DictionaryPart::Reader read = dictionary_.Read();
  const ProfileDictionary& d = read.dict();
  auto key_it = read.global().string_ids.find(key);
  if (key_it == read.global().string_ids.end()) return {};
  std::vector<uint32_t> ids;
  for (const Attribute& a : d.attributes) {
    if (a.key == *key_it) ids.push_back(a.value);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string> values;
  for (uint32_t id : ids) values.push_back(d.strings[id]);
  std::sort(values.begin(), values.end());
  if (values.size() > max) values.resize(max);
  return values;
}

std::vector<std::vector<std::string>> RocksStore::AttributeCombinations(const std::vector<std::string>& keys,
                                                                        size_t max) const {
  const DictionaryPart::Reader read = dictionary_.Read();
  const ProfileDictionary& d = read.dict();
  std::vector<uint32_t> key_ids;
  for (const std::string& k : keys) {
    auto it = read.global().string_ids.find(std::string_view(k));
    key_ids.push_back(it == read.global().string_ids.end() ? UINT32_MAX : *it);
  }
  std::set<std::vector<uint32_t>> combos;
  std::vector<uint32_t> values(keys.size());
  for (uint32_t s = 1; s < d.AttributeSetCount(); ++s) {
    std::fill(values.begin(), values.end(), 0);
    for (const Attribute& a : d.AttributeSet(s)) {
      for (size_t k = 0; k < key_ids.size(); ++k) {
        if (a.key == key_ids[k]) values[k] = a.value;
      }
    }
    combos.insert(values);
  }
  std::vector<std::vector<std::string>> out;
  for (const std::vector<uint32_t>& c : combos) {
    std::vector<std::string> row;
    for (uint32_t v : c) row.push_back(d.strings[v]);
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end());
  if (out.size() > max) out.resize(max);
  return out;
}

absl::Status RocksStore::AppendLog(LogLevel level, std::string_view message) {
  if (read_only_) return absl::FailedPreconditionError("store is open read-only");
  return log_->Append(level, message);
}

std::vector<LogEntry> RocksStore::ReadLog(size_t max) const { return log_->Read(max); }

}  // namespace store_internal
}  // namespace kiln::storage
