// SymbolsPart: symbol statuses in memory, tables loaded on first use; and
// the store's listing of executables, from the dictionary.
#include <algorithm>
#include <memory>

#include "storage/store_internal.h"

namespace kiln::storage::store_internal {

// ============================================================================
// [SECTION] SymbolsPart
// ============================================================================

namespace {

// Whether `key` has a table stored (its status says so); the part's mutex
// held.
bool HasTable(const std::map<std::string, SymbolStatus>& statuses, const std::string& key) {
  auto it = statuses.find(key);
  return it != statuses.end() && it->second.state == SymbolStatus::State::kSymbolized;
}

}  // namespace

absl::Status SymbolsPart::Load() {
  if (cf_ == nullptr) return absl::OkStatus();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_));
  const std::string prefix(1, kSymbolStatusTag);
  std::lock_guard lock(mutex_);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    SymbolStatus st;
    std::string key = it->key().ToString().substr(1);
    if (!DecodeSymbolStatus(std::string_view(it->value().data(), it->value().size()), &st)) {
      return absl::DataLossError(absl::StrCat("store: symbol status of ", key, " is corrupt"));
    }
    statuses_[key] = std::move(st);
  }
  return FromRocks(it->status(), "reading symbol statuses");
}

const std::shared_ptr<const SymbolTable>& SymbolsPart::Remember(const std::string& key,
                                                                 std::shared_ptr<const SymbolTable> table) const {
  Drop(key);
  const uint64_t bytes = table ? table->MemoryBytes() : 0;
  CachedTable& entry = tables_[key];
  entry = {std::move(table), bytes, ++use_clock_};
  cached_bytes_ += bytes;
  while (cached_bytes_ > cache_bytes_ && cache_bytes_ > 0) {
    // The least recently used other table goes (a linear pass: a store
    // holds tens to hundreds of tables, and this runs once per load).
    auto oldest = tables_.end();
    for (auto it = tables_.begin(); it != tables_.end(); ++it) {
      if (it->first == key || it->second.bytes == 0) continue;
      if (oldest == tables_.end() || it->second.last_use < oldest->second.last_use) oldest = it;
    }
    if (oldest == tables_.end()) break;
    const std::string victim = oldest->first;
    Drop(victim);
  }
  return tables_[key].table;
}

void SymbolsPart::Drop(const std::string& key) const {
  auto it = tables_.find(key);
  if (it == tables_.end()) return;
  cached_bytes_ -= it->second.bytes;
  tables_.erase(it);
}

std::shared_ptr<const SymbolTable> SymbolsPart::TableForKey(const std::string& key) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = tables_.find(key); it != tables_.end()) {
      it->second.last_use = ++use_clock_;
      return it->second.table;
    }
  }
  std::shared_ptr<const SymbolTable> table;
  if (cf_ != nullptr) {
    std::string target, bytes;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_, SymbolRecordKey(kSymbolAliasTag, key), &target);
    if (!s.ok()) target = key;
    s = db_->Get(rocksdb::ReadOptions(), cf_, SymbolRecordKey(kSymbolTableTag, target), &bytes);
    if (s.ok()) {
      auto parsed = SymbolTable::Deserialize(bytes);
      // A damaged table leaves frames unnamed rather than failing queries.
      if (parsed.ok()) table = std::make_shared<const SymbolTable>(std::move(*parsed));
    }
  }
  std::lock_guard lock(mutex_);
  if (auto it = tables_.find(key); it != tables_.end()) return it->second.table;  // loaded meanwhile
  return Remember(key, std::move(table));
}

std::shared_ptr<const SymbolTable> SymbolsPart::TableFor(std::string_view htlhash,
                                                         std::string_view gnu_build_id) const {
  for (const std::string& key : SymbolKeys(htlhash, gnu_build_id)) {
    {
      std::lock_guard lock(mutex_);
      if (!HasTable(statuses_, key)) continue;
    }
    if (auto table = TableForKey(key)) return table;
  }
  return nullptr;
}

absl::Status SymbolsPart::Put(const std::vector<std::string>& keys, SymbolTable table,
                              const SymbolStatus& status) {
  if (keys.empty()) return absl::InvalidArgumentError("symbols need at least one executable key");
  SymbolStatus st = status;
  st.state = SymbolStatus::State::kSymbolized;
  st.functions = table.function_count();
  // One copy of the table under the first key; the others point to it.
  rocksdb::WriteBatch wb;
  wb.Put(cf_, SymbolRecordKey(kSymbolTableTag, keys[0]), table.Serialize());
  wb.Delete(cf_, SymbolRecordKey(kSymbolAliasTag, keys[0]));
  for (size_t i = 1; i < keys.size(); ++i) {
    wb.Delete(cf_, SymbolRecordKey(kSymbolTableTag, keys[i]));
    wb.Put(cf_, SymbolRecordKey(kSymbolAliasTag, keys[i]), keys[0]);
  }
  for (const std::string& key : keys) wb.Put(cf_, SymbolRecordKey(kSymbolStatusTag, key), EncodeSymbolStatus(st));
  if (absl::Status s = writer_->Commit(&wb, "writing symbols"); !s.ok()) return s;
  auto shared = std::make_shared<const SymbolTable>(std::move(table));
  bool replaced = false;
  {
    std::lock_guard lock(mutex_);
    for (const std::string& key : keys) {
      replaced |= HasTable(statuses_, key);
      statuses_[key] = st;
      Remember(key, shared);
    }
  }
  if (replaced) renames_.fetch_add(1);  // before version_: see RenamesVersion
  version_.fetch_add(1);
  return absl::OkStatus();
}

absl::Status SymbolsPart::PutStatus(const std::vector<std::string>& keys, const SymbolStatus& status,
                                    bool drop_table) {
  rocksdb::WriteBatch wb;
  std::vector<SymbolStatus> written;
  bool dropped = false;  // a table goes: names it gave change
  {
    std::lock_guard lock(mutex_);
    for (const std::string& key : keys) {
      SymbolStatus st = status;
      auto old = statuses_.find(key);
      const bool has_table = HasTable(statuses_, key);
      dropped |= has_table && drop_table;
      if (has_table && !drop_table) {
        // The table stays in use: keep it described as it is, with the new
        // attempt's outcome as detail.
        st = old->second;
        st.detail = status.detail.empty() ? st.detail : status.detail;
        st.updated_ns = status.updated_ns;
      } else if (has_table) {
        wb.Delete(cf_, SymbolRecordKey(kSymbolTableTag, key));
        wb.Delete(cf_, SymbolRecordKey(kSymbolAliasTag, key));
      }
      wb.Put(cf_, SymbolRecordKey(kSymbolStatusTag, key), EncodeSymbolStatus(st));
      written.push_back(st);
    }
  }
  if (absl::Status s = writer_->Commit(&wb, "writing symbol status"); !s.ok()) return s;
  {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < keys.size(); ++i) {
      statuses_[keys[i]] = written[i];
      if (drop_table) Drop(keys[i]);
    }
  }
  if (dropped) renames_.fetch_add(1);
  version_.fetch_add(1);
  return absl::OkStatus();
}

std::vector<std::string> SymbolsPart::ForgetRecords(const absl::flat_hash_set<std::string>& live,
                                                    rocksdb::WriteBatch* wb) const {
  absl::flat_hash_set<std::string> gone;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, st] : statuses_) {
      const bool added = st.state == SymbolStatus::State::kSymbolized && st.source.starts_with("added:");
      if (!added && !live.contains(key)) gone.insert(key);
    }
  }
  if (gone.empty() || cf_ == nullptr) return {};
  // A key kept is an alias of a table under a key that goes: the table
  // stays (with its status, so a later pass finds it again).
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_));
  const std::string prefix(1, kSymbolAliasTag);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const absl::string_view from(it->key().data() + 1, it->key().size() - 1);
    if (!gone.contains(from)) gone.erase(absl::string_view(it->value().data(), it->value().size()));
  }
  std::vector<std::string> keys(gone.begin(), gone.end());
  for (const std::string& key : keys) {
    for (char tag : {kSymbolStatusTag, kSymbolTableTag, kSymbolAliasTag}) {
      wb->Delete(cf_, SymbolRecordKey(tag, key));
    }
  }
  return keys;
}

void SymbolsPart::Forget(const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  bool dropped = false;  // a fleet's forgotten keys are mostly statuses without a table
  {
    std::lock_guard lock(mutex_);
    for (const std::string& key : keys) {
      dropped |= HasTable(statuses_, key);
      statuses_.erase(key);
      Drop(key);
    }
  }
  if (dropped) renames_.fetch_add(1);
  version_.fetch_add(1);
}

// ============================================================================
// [SECTION] Executables (the dictionary's, with their symbol keys)
// ============================================================================

absl::flat_hash_set<std::string> RocksStore::LiveSymbolKeys(const ProfileDictionary& kept) {
  absl::flat_hash_set<std::string> live;
  for (size_t e = 1; e < kept.executables.size(); ++e) {
    const Executable& x = kept.executables[e];
    for (std::string& key : SymbolKeys(kept.strings[x.htlhash], kept.strings[x.gnu_build_id])) {
      live.insert(std::move(key));
    }
  }
  return live;
}

std::vector<ExecutableInfo> RocksStore::Executables() const {
  const DictionaryPart::Reader read = dictionary_.Read();
  const ProfileDictionary& d = read.dict();
  std::vector<ExecutableInfo> out;
  for (size_t e = 1; e < d.executables.size(); ++e) {
    const Executable& x = d.executables[e];
    out.push_back(
        {d.strings[x.file_name], d.strings[x.htlhash], d.strings[x.gnu_build_id], d.strings[x.go_build_id]});
  }
  return out;
}

}  // namespace kiln::storage::store_internal
