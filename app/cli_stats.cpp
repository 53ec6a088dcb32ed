// `kiln stats`: what a store holds, opened read-only.
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <memory>

#include "app/cli.h"
#include "storage/store.h"

namespace kiln::app {

int RunStats(const StatsOptions& options) {
  auto store = storage::Store::Open(options.data_dir, storage::Store::Mode::kReadOnly);
  if (!store.ok()) {
    std::cerr << "kiln stats: " << store.status().message() << "\n";
    return 1;
  }
  storage::StoreStats st = (*store)->Stats();
  std::printf("store:          %s\n", options.data_dir.c_str());
  std::printf("samples:        %llu\n", static_cast<unsigned long long>(st.samples));
  for (const storage::SampleTypeCount& c : st.sample_types) {
    std::printf("  %-24s %llu  (%s)\n", storage::SampleTypeName(c.info.type).c_str(),
                static_cast<unsigned long long>(c.samples), storage::SampleTypeLabel(c.info.type).c_str());
  }
  std::printf("stacks:         %llu\n", static_cast<unsigned long long>(st.stacks));
  std::printf("frames:         %llu\n", static_cast<unsigned long long>(st.frames));
  std::printf("attribute sets: %llu\n", static_cast<unsigned long long>(st.attribute_sets));
  std::printf("sample blocks:  %llu\n", static_cast<unsigned long long>(st.blocks));
  // What kiln holds of the dictionary in memory, as this reader loaded it
  // (kiln's own limit is its --dictionary-memory, not this reader's).
  std::printf("dictionary:     %.1f MiB in memory\n", st.dictionary_memory_bytes / 1048576.0);
  // Hours (per sample type) that long-range queries read pre-aggregated.
  std::printf("summarized:     %llu hours\n", static_cast<unsigned long long>(st.summarized_hours));
  if (st.samples > 0) {
    std::printf("time range:     %s .. %s\n", FormatTime(st.first_sample_ns).c_str(),
                FormatTime(st.last_sample_ns).c_str());
  } else {
    std::printf("time range:     (empty)\n");
  }
  std::printf("disk size:      %.1f MiB (%llu bytes", st.disk_bytes / 1048576.0,
              static_cast<unsigned long long>(st.disk_bytes));
  if (st.samples > 0) std::printf(", %.2f bytes/sample", static_cast<double>(st.disk_bytes) / st.samples);
  std::printf(")\n");
  // Where the disk goes; what is left is the write-ahead log (released
  // once kiln settles or stops) and RocksDB's manifests and logs.
  uint64_t in_parts = 0;
  for (const storage::StoreStats::PartBytes& p : st.part_bytes) {
    std::printf("  %-14s %10.1f MiB\n", p.part.c_str(), p.bytes / 1048576.0);
    in_parts += p.bytes;
  }
  if (!st.part_bytes.empty()) {
    std::printf("  %-14s %10.1f MiB\n", "other files",
                (st.disk_bytes > in_parts ? st.disk_bytes - in_parts : 0) / 1048576.0);
  }
  if (!st.retention_problem.empty()) std::printf("retention:      PROBLEM: %s\n", st.retention_problem.c_str());
  // What a --forward kiln still owes each destination (a destination owed
  // nothing has no line).
  for (const std::string& destination : (*store)->ForwardDestinations()) {
    const storage::ForwardBacklog owed = (*store)->ForwardBacklogOf(destination);
    std::printf("forwarding to %s: %llu requests (%s) owed", destination.c_str(),
                static_cast<unsigned long long>(owed.requests), storage::FormatBytes(owed.bytes).c_str());
    if (owed.requests > 0) std::printf(", oldest %s", FormatTime(owed.oldest_ns).c_str());
    std::printf("\n");
  }
  // Every reason data was refused, cut or deleted, kept across restarts
  // (storage/model/data_loss.h); zero rows too, so scripts can rely on them.
  const storage::DataLossCounts losses = (*store)->DataLossTotals();
  std::printf("data loss (totals kept by the store):\n");
  for (const storage::DataLossInfo& info : storage::DataLossTable()) {
    std::printf("  %-20s %-8s %12llu %-9s %s\n", std::string(info.name).c_str(),
                std::string(storage::SeverityName(info.severity)).c_str(),
                static_cast<unsigned long long>(losses[static_cast<size_t>(info.reason)]),
                std::string(info.unit).c_str(), std::string(info.description).c_str());
  }
  return 0;
}

Subcommand AddStatsCommand(CLI::App& cli, const std::string& default_data_dir) {
  auto o = std::make_shared<StatsOptions>();
  o->data_dir = default_data_dir;
  CLI::App* cmd = cli.add_subcommand("stats", "Show what a store holds");
  cmd->add_option("--data-dir", o->data_dir, "Store directory")->capture_default_str();
  return {cmd, [o] { return RunStats(*o); }};
}

}  // namespace kiln::app
