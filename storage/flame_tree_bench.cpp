// Benchmark: 10 M samples over 100 k distinct stacks (15-45 frames, 8
// processes) written to a store, then the query and the flame tree the
// views need. Prints figures; asserts nothing (see README for the latest).
//
//   flame_tree_bench [samples] [stacks]
//   flame_tree_bench --long-range [millions...]   (default 10 40 110)
//   flame_tree_bench --traces [millions]           (default 28: a day of 16 CPUs)
//
// --long-range: a 64-CPU host sampled at 20 Hz written as it arrives (the
// same stacks), and at each size (110 M = a day) the flamegraph of the
// whole range as the window makes it (query + tree) in a reopened store,
// with the hourly summaries and without them.
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "storage/model/diff.h"
#include "storage/model/flame_tree.h"
#include "storage/model/spans.h"
#include "storage/model/top_functions.h"
#include "storage/model/transforms.h"
#include "storage/store.h"

using namespace kiln::storage;

namespace {

struct Timer {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double WallMs() const { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count(); }
};

// The fastest of `runs` calls of `f`, in wall ms: the VM's neighbours add
// tens of ms of noise to single runs. `first`, when given, gets the first
// call's time (for scans: before the block cache held anything of it).
template <typename F>
double BestOf(int runs, F&& f, double* first = nullptr) {
  double best = 1e30;
  for (int run = 0; run < runs; ++run) {
    Timer t;
    f();
    best = std::min(best, t.WallMs());
    if (run == 0 && first != nullptr) *first = t.WallMs();
  }
  return best;
}

long PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// Distinct stacks that share prefixes the way real call trees do: each
// stack extends a random earlier stack's prefix with fresh frames.
ProfileDictionary MakeDictionary(int stacks, std::mt19937_64& rng) {
  ProfileDictionary d;
  const int kFunctions = 20000;
  for (int i = 0; i < kFunctions; ++i) {
    Frame f;
    f.function = d.AddString("ns::module" + std::to_string(i % 97) + "::Function" + std::to_string(i) +
                             "(std::vector<int> const&)");
    f.type = i % 10 == 0 ? FrameType::kKernel : FrameType::kNative;
    d.frames.push_back(f);
  }
  std::vector<std::vector<uint32_t>> made;
  made.reserve(stacks);
  std::uniform_int_distribution<int> depth(15, 45);
  std::uniform_int_distribution<uint32_t> func(1, kFunctions);
  for (int i = 0; i < stacks; ++i) {
    std::vector<uint32_t> s;
    int n = depth(rng);
    if (!made.empty()) {
      const auto& base = made[rng() % made.size()];
      size_t keep = std::min<size_t>(base.size(), rng() % (n - 1) + 1);
      s.assign(base.begin(), base.begin() + keep);
    }
    while (static_cast<int>(s.size()) < n) s.push_back(func(rng));
    made.push_back(s);
    d.AddStack(s);
  }
  for (int p = 0; p < 8; ++p) {
    for (int t = 0; t < 4; ++t) {
      d.AddAttributeSet({{d.AddString("process.executable.name"), d.AddString("service-" + std::to_string(p))},
                         {d.AddString("process.pid"), d.AddString(std::to_string(1000 + p))},
                         {d.AddString("thread.name"), d.AddString("worker-" + std::to_string(t))}});
    }
  }
  return d;
}

// Agent-shaped samples: `cpus` CPUs ticking at 20 Hz with a few us of
// jitter; every stack once first, then Zipf-like (a few hot stacks, a long
// tail). A stack belongs to one process and thread, as real stacks do.
class SampleSource {
 public:
  SampleSource(const ProfileDictionary& d, int stacks, int cpus)
      : stacks_(stacks), cpus_(cpus), sets_(static_cast<uint32_t>(d.AttributeSetCount() - 1)) {
    std::vector<double> w(stacks);
    for (int i = 0; i < stacks; ++i) w[i] = 1.0 / (1 + i % 5000);
    pick_ = std::discrete_distribution<uint32_t>(w.begin(), w.end());
  }
  void Fill(ProfileBatch* batch, int64_t n, std::mt19937_64& rng) {
    batch->samples.clear();
    for (int64_t i = 0; i < n; ++i) {
      uint32_t s = next_stack_ < static_cast<uint32_t>(stacks_) ? next_stack_++ : pick_(rng);
      if (++cpu_ == cpus_) {
        cpu_ = 0;
        tick_ += 50'000'000;
      }
      int64_t time = tick_ + cpu_ * (50'000'000 / cpus_) + static_cast<int64_t>(rng() % 4096);
      uint32_t set = 1 + (s % 8) * 4 + (s / 8) % 4;
      batch->samples.push_back({time, s + 1, std::min(set, sets_), 0, 0, 1});
    }
  }
  int64_t now_ns() const { return tick_; }

 private:
  int stacks_, cpus_;
  uint32_t sets_;
  std::discrete_distribution<uint32_t> pick_;
  int64_t tick_ = 1'700'000'000'000'000'000;
  int cpu_ = 0;
  uint32_t next_stack_ = 0;
};

std::unique_ptr<Store> OpenStore(const std::string& dir, bool use_summaries) {
  StoreOptions o;
  o.use_summaries = use_summaries;
  o.summarize_in_background = false;  // the benchmark summarizes, and times it
  auto store = Store::Open(dir, Store::Mode::kReadWrite, o);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", std::string(store.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(store);
}

// The whole range's flamegraph as the window makes it: the query, then
// the tree grouped by thread. Fastest of `runs`; `first` gets the first.
double FlameGraphMs(const Store& store, int runs, double* first, size_t* pairs) {
  return BestOf(
      runs,
      [&] {
        auto slice = store.Run({});
        if (!slice.ok()) std::exit(1);
        *pairs = (*slice)->weights.size();
        FlameTree tree = BuildFlameTree(*slice, {.group_by = GroupBy::kThread});
      },
      first);
}

int LongRange(const std::vector<int64_t>& millions) {
  std::string dir = (std::filesystem::temp_directory_path() / "kiln-long-range-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return 1;
  std::mt19937_64 rng(1);
  const int kStacks = 100'000, kCpus = 64;
  ProfileBatch batch;
  batch.dict = MakeDictionary(kStacks, rng);
  SampleSource source(batch.dict, kStacks, kCpus);
  std::printf(
      "a %d-CPU host at 20 Hz, %d distinct stacks over 32 threads, written in 200 k-sample batches;\n"
      "flamegraph = Store::Run over the whole range + BuildFlameTree by thread, in the store reopened\n"
      "(RocksDB's block cache empty, the OS page cache not)\n\n",
      kCpus, kStacks);
  int64_t written = 0;
  for (int64_t m : millions) {
    auto store = OpenStore(dir, true);
    Timer write_timer;
    while (written < m * 1'000'000) {
      source.Fill(&batch, std::min<int64_t>(200'000, m * 1'000'000 - written), rng);
      written += static_cast<int64_t>(batch.samples.size());
      if (auto s = store->Write(batch); !s.ok()) {
        std::fprintf(stderr, "write: %s\n", std::string(s.message()).c_str());
        return 1;
      }
    }
    const double write_s = write_timer.WallMs() / 1e3;
    Timer summarize_timer;
    absl::StatusOr<uint64_t> built = store->Summarize();
    const double summarize_s = summarize_timer.WallMs() / 1e3;
    if (!built.ok() || !store->Flush().ok()) return 1;
    const StoreStats st = store->Stats();
    store.reset();
    // Summaries live in blob files (the bench stores no symbols, the other
    // user of blob files): their share of the disk.
    uint64_t blob_bytes = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".blob") blob_bytes += e.file_size();
    }
    const double hours = static_cast<double>(st.last_sample_ns - st.first_sample_ns) / 3.6e12;
    std::printf(
        "%lld M samples (%.1f h): written in %.0f s; %llu hours summarized in %.1f s (background work); "
        "disk %.2f bytes/sample (summaries %.3f), flushed, not compacted\n",
        static_cast<long long>(m), hours, write_s, static_cast<unsigned long long>(st.summarized_hours),
        summarize_s, static_cast<double>(st.disk_bytes) / static_cast<double>(written),
        static_cast<double>(blob_bytes) / static_cast<double>(written));
    for (bool use : {true, false}) {
      auto reopened = OpenStore(dir, use);
      double first = 0;
      size_t pairs = 0;
      // Without summaries a run reads every sample: once is enough to see it.
      const double best = FlameGraphMs(*reopened, use ? 3 : 1, &first, &pairs);
      // The window's timeline: 300 buckets by default, up to 600 when wide.
      double timeline_first = 0;
      const double timeline = BestOf(
          use ? 3 : 1, [&] { (void)reopened->RunTimeline({}, 300); }, &timeline_first);
      const double timeline600 = BestOf(use ? 3 : 1, [&] { (void)reopened->RunTimeline({}, 600); });
      std::printf(
          "  %-18s flamegraph %5.0f ms (first %5.0f, %zu (stack, thread) pairs); timeline of 300 buckets "
          "%4.0f ms (first %4.0f), of 600 %4.0f ms; window (both) %5.0f ms; %llu summary reads\n",
          use ? "with summaries:" : "samples only:", best, first, pairs, timeline, timeline_first,
          timeline600, best + timeline,
          static_cast<unsigned long long>(reopened->Stats().summary_hours_read));
    }
    std::fflush(stdout);
  }
  // Retention's first pass on this store, as when a user lowers the size
  // limit to half: how long it takes, and how long an agent's write waits
  // meanwhile (retention counts what it deletes from a snapshot, and holds
  // the write lock only to delete and store the counters).
  {
    StoreOptions o;
    o.summarize_in_background = false;
    o.retention_interval = std::chrono::milliseconds(0);
    auto opened = Store::Open(dir, Store::Mode::kReadWrite, o);
    if (!opened.ok()) return 1;
    Store& store = **opened;
    const uint64_t disk = store.Stats().disk_bytes;
    std::atomic<bool> done{false};
    double worst_write_ms = 0;
    int writes = 0;
    ProfileBatch small;
    small.dict = batch.dict;
    std::thread writer([&] {
      std::mt19937_64 wrng(2);
      while (!done) {
        source.Fill(&small, 1280, wrng);  // a second of the 64-CPU host
        Timer t;
        if (!store.Write(small).ok()) std::exit(1);
        worst_write_ms = std::max(worst_write_ms, t.WallMs());
        ++writes;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    store.SetRetention(std::chrono::nanoseconds(0), disk / 2);
    Timer pass;
    absl::StatusOr<RetentionReport> r = store.ApplyRetention(source.now_ns());
    const double pass_s = pass.WallMs() / 1e3;
    done = true;
    writer.join();
    if (!r.ok()) return 1;
    std::printf(
        "retention to half the size (%.2f GiB): one pass deleted %.1f M samples in %llu blocks in %.1f s "
        "(compaction included); %d writes of 1,280 samples meanwhile, the slowest %.0f ms\n",
        static_cast<double>(disk / 2) / (1 << 30), static_cast<double>(r->samples_deleted) / 1e6,
        static_cast<unsigned long long>(r->blocks_deleted), pass_s, writes, worst_write_ms);
  }
  std::printf("peak RSS:             %ld MiB\n", PeakRssMiB());
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

// --traces: a day of a traced service (16 CPUs at 20 Hz, each CPU's
// samples in a 2 s span of its own trace), then one trace's samples found
// by --filter trace_id as `kiln export` and the window ask, in the store
// reopened.
int Traces(int64_t millions) {
  std::string dir = (std::filesystem::temp_directory_path() / "kiln-traces-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return 1;
  std::mt19937_64 rng(1);
  const int kStacks = 100'000, kCpus = 16;
  const int64_t kSpanNs = 2'000'000'000;
  ProfileBatch batch;
  batch.dict = MakeDictionary(kStacks, rng);
  const ProfileDictionary base = batch.dict;
  SampleSource source(batch.dict, kStacks, kCpus);
  auto store = OpenStore(dir, true);
  Timer write_timer;
  int64_t written = 0, links = 0;
  std::string some_trace;
  while (written < millions * 1'000'000) {
    source.Fill(&batch, std::min<int64_t>(200'000, millions * 1'000'000 - written), rng);
    // A batch's own links: (cpu, span number) -> link.
    batch.dict.links.resize(1);
    std::map<std::pair<int64_t, int>, uint32_t> link_of;
    for (Sample& sample : batch.samples) {
      const int cpu = static_cast<int>(sample.attribute_set % kCpus);
      const int64_t span = sample.time_ns / kSpanNs;
      auto [it, added] = link_of.try_emplace(std::pair{span, cpu}, 0);
      if (added) {
        std::string trace(16, '\0'), id(8, '\0');
        for (int b = 0; b < 8; ++b) trace[b] = static_cast<char>(span >> (8 * b));
        trace[8] = static_cast<char>(cpu);
        for (int b = 0; b < 8; ++b) id[b] = static_cast<char>((span * 31 + cpu) >> (8 * b));
        it->second = static_cast<uint32_t>(batch.dict.links.size());
        batch.dict.links.push_back({trace, id});
        ++links;
      }
      sample.link = it->second;
    }
    if (written >= millions * 500'000 && some_trace.empty()) some_trace = HexId(batch.dict.links[1].trace_id);
    written += static_cast<int64_t>(batch.samples.size());
    if (auto s = store->Write(batch); !s.ok()) {
      std::fprintf(stderr, "write: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  const double write_s = write_timer.WallMs() / 1e3;
  if (!store->Flush().ok()) return 1;
  const StoreStats st = store->Stats();
  store.reset();
  auto reopened = OpenStore(dir, true);
  Query q;
  q.filters = {{"trace_id", {some_trace}}};
  q.keep_samples = true;
  uint64_t found = 0;
  double first = 0;
  const uint64_t blocks_before = reopened->Stats().blocks_read;
  const double best = BestOf(3, [&] { found = (*reopened->Run(q))->total_events; }, &first);
  const uint64_t blocks = (reopened->Stats().blocks_read - blocks_before) / 3;
  Query whole;
  const double scan = BestOf(1, [&] { (void)reopened->Run(whole); });
  uint64_t span_index_bytes = 0;
  for (const auto& p : reopened->Stats().part_bytes) {
    if (p.part == "span index") span_index_bytes = p.bytes;
  }
  std::printf(
      "%lld M samples (%.1f h, %lld spans) written in %.0f s; disk %.2f bytes/sample, span index %.2f\n"
      "one trace (%llu samples) by trace_id: %.1f ms (first %.1f), %llu blocks read; "
      "the whole range's flamegraph query: %.0f ms\n",
      static_cast<long long>(millions), static_cast<double>(st.last_sample_ns - st.first_sample_ns) / 3.6e12,
      static_cast<long long>(links), write_s, static_cast<double>(st.disk_bytes) / static_cast<double>(written),
      static_cast<double>(span_index_bytes) / static_cast<double>(written), static_cast<unsigned long long>(found),
      best, first, static_cast<unsigned long long>(blocks), scan);
  reopened.reset();
  std::filesystem::remove_all(dir);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--traces") {
    return Traces(argc > 2 ? std::atoll(argv[2]) : 28);
  }
  if (argc > 1 && std::string_view(argv[1]) == "--long-range") {
    std::vector<int64_t> millions;
    for (int i = 2; i < argc; ++i) millions.push_back(std::atoll(argv[i]));
    if (millions.empty()) millions = {10, 40, 110};
    return LongRange(millions);
  }
  const int64_t samples = argc > 1 ? std::atoll(argv[1]) : 10'000'000;
  const int stacks = argc > 2 ? std::atoi(argv[2]) : 100'000;
  // KILN_BENCH_STORE=DIR keeps the store in DIR and, when DIR already
  // holds one, reuses it instead of writing again (for repeated runs).
  const char* reuse = std::getenv("KILN_BENCH_STORE");
  std::string dir = reuse != nullptr ? std::string(reuse)
                                     : (std::filesystem::temp_directory_path() / "kiln-flame-bench-XXXXXX").string();
  const bool existing = reuse != nullptr && std::filesystem::exists(dir + "/CURRENT");
  if (reuse == nullptr && mkdtemp(dir.data()) == nullptr) return 1;
  std::mt19937_64 rng(1);

  auto store_or = Store::Open(dir, Store::Mode::kReadWrite);
  if (!store_or.ok()) {
    std::fprintf(stderr, "%s\n", std::string(store_or.status().message()).c_str());
    return 1;
  }
  auto& store = *store_or;
  ProfileBatch batch;
  batch.dict = MakeDictionary(stacks, rng);
  SampleSource source(batch.dict, stacks, /*cpus=*/16);
  Timer write_timer;
  int64_t written = 0;
  while (!existing && written < samples) {
    source.Fill(&batch, std::min<int64_t>(200'000, samples - written), rng);
    written += static_cast<int64_t>(batch.samples.size());
    if (auto s = store->Write(batch); !s.ok()) {
      std::fprintf(stderr, "write: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  double write_s = write_timer.WallMs() / 1e3;
  if (!existing) (void)store->Compact();
  StoreStats st = store->Stats();

  absl::StatusOr<std::shared_ptr<const ProfileSlice>> slice;
  double query_cold_ms = 0;
  const double query_ms = BestOf(3, [&] { slice = store->Run({}); }, &query_cold_ms);
  if (!slice.ok()) return 1;

  FlameTree tree;
  const double tree_ms = BestOf(5, [&] {
    tree = FlameTree();  // the previous tree's memory is not part of the build
    tree = BuildFlameTree(*slice, {.group_by = GroupBy::kThread});
  });

  Timer top_timer;
  auto top = BuildTopFunctions(*slice);
  double top_ms = top_timer.WallMs();

  // The analysis views: each derived from the cached slice, as the worker
  // does (no store access).
  Timer stacks_timer;
  const Stacks stacks_all = StacksOf(*slice);
  const double stacks_ms = stacks_timer.WallMs();
  Timer inverted_timer;
  FlameTree inverted = BuildFlameTree(ApplyTransform(stacks_all, {Transform::Kind::kInvert, "", {}}),
                                      {.group_by = GroupBy::kThread});
  const double inverted_ms = inverted_timer.WallMs();
  Timer hide_timer;
  FlameTree hidden = BuildFlameTree(ApplyTransform(stacks_all, *ParseTransform("hide=^ns::module1[0-9]::")),
                                    {.group_by = GroupBy::kThread});
  const double hide_ms = hide_timer.WallMs();
  // Sandwich: the heaviest function, one from the middle of Top functions
  // and one from the tail; the slowest is what a user may wait for.
  double sandwich_ms = 0;
  std::string sandwich_worst;
  for (size_t k : {size_t{0}, top.size() / 2, top.size() - 1}) {
    Timer t;
    Sandwich sw = BuildSandwich(stacks_all, top[k].function);
    if (double ms = t.WallMs(); ms > sandwich_ms) {
      sandwich_ms = ms;
      sandwich_worst = top[k].function;
    }
    (void)sw;
  }
  // Diff as the window makes it when a baseline is chosen: the target's
  // stacks are cached (the flamegraph's); the baseline's query, its stacks,
  // the diff tree and the tree the diff flame graph lays out are made.
  // Both sides are 10 M-sample ranges of 100 k stacks (the baseline is the
  // same range queried again: any 10 M range costs the same to scan).
  const FlameTreeOptions diff_options{.group_by = GroupBy::kThread};
  const Stacks target_stacks = StacksFor(*slice, diff_options);
  absl::StatusOr<std::shared_ptr<const ProfileSlice>> base;
  double diff_query_ms = 0, diff_stacks_ms = 0;
  DiffTree diff;
  // The store reopened first: the first run's baseline query reads blocks
  // no scan has cached (a baseline outside the window); the later runs
  // find them cached (a range of the window the timeline has just read).
  auto reopen = [&] {
    store.reset();
    auto reopened = Store::Open(dir, Store::Mode::kReadWrite);
    if (reopened.ok()) store = *std::move(reopened);
    return store != nullptr;
  };
  if (!reopen()) return 1;
  double diff_cold_ms = 0, diff_cold_query_ms = 0;
  const double diff_ms = BestOf(
      3,
      [&] {
        diff = DiffTree();
        Timer t;
        base = store->Run({});
        diff_query_ms = t.WallMs();
        if (diff_cold_query_ms == 0) diff_cold_query_ms = diff_query_ms;
        if (!base.ok()) return;
        const Stacks base_stacks = StacksFor(*base, diff_options);
        diff_stacks_ms = t.WallMs() - diff_query_ms;
        diff = BuildDiffTree(base_stacks, target_stacks, diff_options);
      },
      &diff_cold_ms);
  if (!base.ok()) return 1;
  // FlameScope over all of it: 1,200 columns of 50 slices (60,000 buckets).
  absl::StatusOr<Timeline> heatmap;
  // Reopened first, so its first run reads cold blocks; the later runs find
  // them cached, as the window's heat map finds the blocks its timeline
  // scan of the same window has just read.
  if (!reopen()) return 1;
  double heatmap_cold_ms = 0;
  const double heatmap_ms = BestOf(3, [&] { heatmap = store->RunTimeline({}, 1200 * 50); }, &heatmap_cold_ms);
  if (!heatmap.ok()) return 1;
  std::printf("samples:              %lld over %d distinct stacks (%zu (stack, thread) pairs)\n",
              static_cast<long long>(samples), stacks, (*slice)->weights.size());
  if (!existing) {
    std::printf("store write:          %.2f s (%.2f M samples/s, direct Store::Write, 200k per batch)\n", write_s,
                samples / write_s / 1e6);
  }
  std::printf("disk after compaction: %.2f bytes/sample (%llu bytes)\n",
              static_cast<double>(st.disk_bytes) / samples, static_cast<unsigned long long>(st.disk_bytes));
  std::printf("figures are the fastest of 3 runs (5 for the tree), wall time\n");
  std::printf("query (scan+aggregate): %.0f ms (first, blocks not yet cached: %.0f ms)\n", query_ms, query_cold_ms);
  std::printf("flame tree build:     %.0f ms (%zu nodes, depth %d; budget 200 ms)\n", tree_ms, tree.nodes.size(),
              tree.max_depth);
  std::printf("top functions:        %.0f ms (%zu rows)\n", top_ms, top.size());
  std::printf("stacks of the slice:  %.0f ms (what every transform starts from; cached by the worker)\n", stacks_ms);
  std::printf("inverted tree:        %.0f ms (%zu nodes) vs top-down %.0f ms\n", inverted_ms, inverted.nodes.size(),
              tree_ms);
  std::printf("hide + tree:          %.0f ms (%zu nodes; a transform change, no store access)\n", hide_ms,
              hidden.nodes.size());
  std::printf("sandwich:             %.1f ms worst of 3 (%s; budget 50 ms)\n", sandwich_ms, sandwich_worst.c_str());
  std::printf("diff in the window:   %.0f ms (10 M vs 10 M samples: baseline query %.0f, its stacks %.0f, diff tree "
              "%.0f; %zu nodes; budget 500 ms); first run %.0f ms, its query %.0f ms with no block cached\n",
              diff_ms, diff_query_ms, diff_stacks_ms, diff_ms - diff_query_ms - diff_stacks_ms, diff.tree.nodes.size(),
              diff_cold_ms, diff_cold_query_ms);
  std::printf("heat map:             %.0f ms, first run %.0f ms with no block cached (FlameScope grid of 60,000 slices "
              "over all %lld samples; budget 100 ms)\n",
              heatmap_ms, heatmap_cold_ms, static_cast<long long>(samples));
  std::printf("peak RSS:             %ld MiB\n", PeakRssMiB());
  store.reset();
  if (reuse != nullptr) {
    std::printf("store kept in %s\n", dir.c_str());
  } else {
    std::filesystem::remove_all(dir);
  }
  return 0;
}
