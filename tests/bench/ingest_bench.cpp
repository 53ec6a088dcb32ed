// Benchmark: agent-shaped OTLP requests sent over loopback gRPC to an
// in-process OtlpReceiver writing into a Store in a temporary directory.
// Prints acknowledged samples/s, disk bytes per sample after compaction and
// peak RSS, plus the single-thread cost of each stage (parse, normalize,
// store write) so a slow figure points at its stage. Asserts nothing.
//
//   ingest_bench [--requests N] [--streams S] [--cpus C] [--stage-repeat K] [--gzip]
//                [--paced-ms MS] [--forward up|down]
//
// --forward: the receiver forwards every request (kiln --forward) to a
// second receiver and store in this process, B. "up": B runs throughout;
// prints when B holds every sample, so forwarding's throughput stands beside
// plain ingest's. "down": B starts only after the clients are done (the
// requests wait in A's store), then how fast the backlog drains.
//
// Request shape (like the OpenTelemetry eBPF profiler at 20 Hz): a 5 s
// window, C CPUs ticking at 20 Hz (C = 100 gives 10,000 samples), 8
// processes, 1,500 distinct stacks of 15-45 frames (native, with kernel
// frames on top of some), per-sample attributes thread.name, thread.id and
// cpu.logical_number (threads mostly stay on their CPU), events grouped into
// Samples by (process, stack, thread, cpu) with their timestamps.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ingest/forward/forwarder.h"
#include "ingest/message_decompression.h"
#include "ingest/otlp_normalizer.h"
#include "ingest/otlp_receiver.h"
#include "ingest/otlp_request_builder.h"
#include "storage/store.h"
#include "tests/free_port.h"

namespace kiln::ingest {
namespace {

namespace collector = opentelemetry::proto::collector::profiles::v1development;
constexpr const char* kExportMethod =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";
constexpr int64_t kWindowNs = 5'000'000'000;
constexpr int kHz = 20;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

double CurrentRssMiB() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1048576.0);
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// ---------------------------------------------------------------------------
// The simulated machine: processes, their mappings, frames and stacks.
// ---------------------------------------------------------------------------

struct WorldFrame {
  int mapping;  // index into World::mappings
  uint64_t address;
  std::string function;  // "" for unsymbolized native frames
  const char* type;
};

struct World {
  struct Mapping {
    std::string file;
    std::string htlhash;
  };
  struct Process {
    int pid;
    std::string exe;
    std::vector<int> stacks;                           // indices into World::stacks, hottest first
    std::vector<std::pair<int, std::string>> threads;  // tid, name
  };
  std::vector<Mapping> mappings;
  std::vector<WorldFrame> frames;
  std::vector<std::vector<int>> stacks;  // leaf-first frame indices
  std::vector<Process> processes;
};

std::string Hex32(std::mt19937_64& rng) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

World MakeWorld(int processes, int stacks, std::mt19937_64& rng) {
  World w;
  const int vmlinux = 0;
  w.mappings.push_back({"vmlinux", ""});
  std::vector<int> kernel_frames;
  for (int i = 0; i < 300; ++i) {
    kernel_frames.push_back(static_cast<int>(w.frames.size()));
    w.frames.push_back(
        {vmlinux, 0xffffffff81000000ull + i * 0x1340, "kernel_function_" + std::to_string(i), "kernel"});
  }
  std::vector<int> libs;
  for (const char* lib : {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                          "/usr/lib/x86_64-linux-gnu/libssl.so.3", "/usr/lib/x86_64-linux-gnu/libz.so.1"}) {
    libs.push_back(static_cast<int>(w.mappings.size()));
    w.mappings.push_back({lib, Hex32(rng)});
  }
  std::vector<int> lib_frames;
  for (int i = 0; i < 2000; ++i) {
    lib_frames.push_back(static_cast<int>(w.frames.size()));
    w.frames.push_back({libs[i % libs.size()], 0x20000ull + i * 0x97, "", "native"});
  }
  for (int p = 0; p < processes; ++p) {
    World::Process proc;
    proc.pid = 1000 + p * 137;
    proc.exe = "/usr/bin/service-" + std::to_string(p);
    const int exe_mapping = static_cast<int>(w.mappings.size());
    w.mappings.push_back({proc.exe, Hex32(rng)});
    std::vector<int> own;
    for (int i = 0; i < 1500; ++i) {
      own.push_back(static_cast<int>(w.frames.size()));
      w.frames.push_back({exe_mapping, 0x401000ull + i * 0x53, "", "native"});
    }
    const int threads = 4 + static_cast<int>(rng() % 13);
    for (int t = 0; t < threads; ++t) {
      proc.threads.emplace_back(proc.pid + 1 + t, "worker-" + std::to_string(t));
    }
    // Stacks share prefixes like real call trees: start from a random
    // earlier stack of this process and replace its leafward part.
    const int my_stacks = stacks / processes + (p < stacks % processes ? 1 : 0);
    for (int s = 0; s < my_stacks; ++s) {
      const int depth = 15 + static_cast<int>(rng() % 31);
      std::vector<int> root_first;
      if (!proc.stacks.empty() && rng() % 4 != 0) {
        const auto& base = w.stacks[proc.stacks[rng() % proc.stacks.size()]];
        std::vector<int> base_root_first(base.rbegin(), base.rend());
        const size_t keep = std::min<size_t>(base_root_first.size(), 5 + rng() % 10);
        root_first.assign(base_root_first.begin(), base_root_first.begin() + keep);
        while (!root_first.empty() && w.frames[root_first.back()].mapping == vmlinux) root_first.pop_back();
      } else {
        root_first = {own[0], lib_frames[0], own[1]};  // _start, __libc_start_main, main
      }
      const bool kernel = rng() % 10 < 3;
      const int kernel_depth = kernel ? 3 + static_cast<int>(rng() % 6) : 0;
      while (static_cast<int>(root_first.size()) < depth - kernel_depth) {
        root_first.push_back(rng() % 4 == 0 ? lib_frames[rng() % lib_frames.size()]
                                            : own[rng() % own.size()]);
      }
      for (int k = 0; k < kernel_depth; ++k)
        root_first.push_back(kernel_frames[rng() % kernel_frames.size()]);
      proc.stacks.push_back(static_cast<int>(w.stacks.size()));
      w.stacks.emplace_back(root_first.rbegin(), root_first.rend());
    }
    std::shuffle(proc.stacks.begin(), proc.stacks.end(), rng);
    w.processes.push_back(std::move(proc));
  }
  return w;
}

// One 5 s export of the whole machine, serialized.
std::string MakeRequest(const World& w, int cpus, int64_t window_start, std::mt19937_64& rng,
                        size_t* events) {
  OtlpRequestBuilder b;
  std::vector<int32_t> mapping_index(w.mappings.size(), -1);
  std::map<int, int32_t> location_index;
  std::map<int, int32_t> stack_index;
  std::map<std::pair<int, int>, std::pair<int32_t, int32_t>> thread_attrs;  // (process, thread)
  std::vector<int32_t> cpu_attr(cpus, -1);

  auto mapping = [&](int m) {
    if (mapping_index[m] < 0) mapping_index[m] = b.Mapping(w.mappings[m].file, w.mappings[m].htlhash);
    return mapping_index[m];
  };
  auto stack = [&](int s) {
    auto it = stack_index.find(s);
    if (it != stack_index.end()) return it->second;
    std::vector<int32_t> locations;
    for (int f : w.stacks[s]) {
      auto lt = location_index.find(f);
      if (lt == location_index.end()) {
        const WorldFrame& frame = w.frames[f];
        std::vector<OtlpRequestBuilder::LineSpec> lines;
        if (!frame.function.empty()) lines.emplace_back(frame.function);
        lt = location_index.emplace(f, b.Location(mapping(frame.mapping), frame.address, lines, frame.type))
                 .first;
      }
      locations.push_back(lt->second);
    }
    return stack_index.emplace(s, b.Stack(locations)).first->second;
  };

  // (process, stack, thread, cpu) -> timestamps, like the agent's grouping.
  struct Key {
    int process, stack, thread, cpu;
    bool operator<(const Key& o) const {
      return std::tie(process, stack, thread, cpu) < std::tie(o.process, o.stack, o.thread, o.cpu);
    }
  };
  std::map<Key, std::vector<uint64_t>> groups;
  const int64_t tick = 1'000'000'000 / kHz;
  std::vector<int64_t> cpu_phase(cpus);
  for (int c = 0; c < cpus; ++c) cpu_phase[c] = static_cast<int64_t>(rng() % tick);
  // Skewed choices: a few hot processes, stacks and threads.
  auto pick_process = [&] {
    return static_cast<int>(std::min<uint64_t>(rng() % 16, rng() % 16) % w.processes.size());
  };
  // Threads mostly stay on the CPU they run on: each CPU has two resident
  // threads for this window, and 5% of ticks catch a migrating thread.
  std::vector<std::pair<int, int>> resident;  // cpu*2 + k -> (process, thread)
  for (int c = 0; c < cpus * 2; ++c) {
    const int p = pick_process();
    resident.emplace_back(p, static_cast<int>(rng() % w.processes[p].threads.size()));
  }
  *events = 0;
  for (int64_t t = 0; t < kWindowNs; t += tick) {
    for (int c = 0; c < cpus; ++c) {
      int p, th;
      if (rng() % 20 != 0) {
        std::tie(p, th) = resident[c * 2 + rng() % 2];
      } else {
        p = pick_process();
        th = static_cast<int>(rng() % w.processes[p].threads.size());
      }
      const auto& proc = w.processes[p];
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      const int s = proc.stacks[static_cast<size_t>(u * u * u * proc.stacks.size())];
      const uint64_t ts =
          static_cast<uint64_t>(window_start + t + cpu_phase[c] + static_cast<int64_t>(rng() % 20000));
      groups[{p, s, th, c}].push_back(ts);
      ++*events;
    }
  }
  std::vector<OtlpRequestBuilder::Profile*> profiles(w.processes.size(), nullptr);
  for (auto& [key, timestamps] : groups) {
    const auto& proc = w.processes[key.process];
    if (profiles[key.process] == nullptr) {
      std::string pid = std::to_string(proc.pid);
      std::string name = proc.exe.substr(proc.exe.rfind('/') + 1);
      std::string container = "container-" + std::to_string(key.process % 3);
      auto* rp = b.Resource({{"process.pid", pid},
                             {"process.executable.path", proc.exe},
                             {"process.executable.name", name},
                             {"container.id", container},
                             {"service.name", name}});
      profiles[key.process] =
          b.AddProfile(rp, "samples", "count", "cpu", "nanoseconds", static_cast<uint64_t>(window_start));
      profiles[key.process]->set_duration_nano(kWindowNs);
      profiles[key.process]->set_period(tick);
    }
    auto ta = thread_attrs.find({key.process, key.thread});
    if (ta == thread_attrs.end()) {
      const auto& [tid, tname] = proc.threads[key.thread];
      ta = thread_attrs
               .emplace(
                   std::make_pair(key.process, key.thread),
                   std::make_pair(b.StringAttribute("thread.name", tname), b.IntAttribute("thread.id", tid)))
               .first;
    }
    if (cpu_attr[key.cpu] < 0) cpu_attr[key.cpu] = b.IntAttribute("cpu.logical_number", key.cpu);
    OtlpRequestBuilder::AddSample(profiles[key.process], stack(key.stack),
                                  {ta->second.first, ta->second.second, cpu_attr[key.cpu]}, timestamps);
  }
  return b.request.SerializeAsString();
}

struct Options {
  int requests = 300;
  int streams = 4;
  int cpus = 100;
  int stage_repeat = 1;  // repeat the one-thread normalize stage (for perf)
  bool gzip = false;     // clients compress (costs client CPU in this process)
  // Requests spread over time: each stream waits this long between its
  // requests, and the store settles (flushes) after 1 s instead of minutes,
  // so a run of a minute sees as many flushes per sample as a day of a
  // 8-CPU laptop at 20 Hz does with the default 5-minute limit.
  int paced_ms = 0;
  std::string forward;  // "", "up" or "down"
};

// A receiver and its store in a temporary directory (the benchmark's
// kiln, and the forwarding destination B).
struct BenchKiln {
  std::string dir;
  std::unique_ptr<storage::Store> store;
  std::unique_ptr<OtlpReceiver> receiver;

  bool Open(const storage::StoreOptions& store_options) {
    dir = (std::filesystem::temp_directory_path() / "kiln-ingest-bench-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) return false;
    auto opened = storage::Store::Open(dir, storage::Store::Mode::kReadWrite, store_options);
    if (!opened.ok()) return false;
    store = std::move(*opened);
    return true;
  }
  bool Listen(const std::string& address) {
    ReceiverOptions options;
    options.listen_address = address;
    auto started = OtlpReceiver::Start(store.get(), options);
    if (!started.ok()) {
      std::printf("%s\n", started.status().ToString().c_str());
      return false;
    }
    receiver = std::move(*started);
    return true;
  }
  ~BenchKiln() {
    if (receiver) receiver->Stop();
    receiver.reset();
    store.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--gzip")) {
      o.gzip = true;
    } else if (has_value && !std::strcmp(argv[i], "--requests")) {
      o.requests = std::atoi(argv[++i]);
    } else if (has_value && !std::strcmp(argv[i], "--streams")) {
      o.streams = std::atoi(argv[++i]);
    } else if (has_value && !std::strcmp(argv[i], "--cpus")) {
      o.cpus = std::atoi(argv[++i]);
    } else if (has_value && !std::strcmp(argv[i], "--stage-repeat")) {
      o.stage_repeat = std::atoi(argv[++i]);
    } else if (has_value && !std::strcmp(argv[i], "--paced-ms")) {
      o.paced_ms = std::atoi(argv[++i]);
    } else if (has_value && !std::strcmp(argv[i], "--forward") &&
               (!std::strcmp(argv[i + 1], "up") || !std::strcmp(argv[i + 1], "down"))) {
      o.forward = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: ingest_bench [--requests N] [--streams S] [--cpus C] [--stage-repeat K] "
                   "[--gzip] [--paced-ms MS] [--forward up|down]\n");
      return 2;
    }
  }
  std::printf("ingest_bench on %s, %u hardware threads\n", CpuModel().c_str(),
              std::thread::hardware_concurrency());

  // --- Requests (generated up front so the clients cost little) ----------
  auto t0 = std::chrono::steady_clock::now();
  std::mt19937_64 rng(42);
  World world = MakeWorld(8, 1500, rng);
  std::vector<std::string> requests(o.requests);
  std::vector<size_t> events(o.requests);
  size_t total_events = 0, total_bytes = 0;
  const int64_t start = 1'763'700'000'000'000'000;
  for (int i = 0; i < o.requests; ++i) {
    requests[i] = MakeRequest(world, o.cpus, start + i * kWindowNs, rng, &events[i]);
    total_events += events[i];
    total_bytes += requests[i].size();
  }
  std::printf("generated %d requests: %.0f samples and %.0f KiB each (%.1f wire bytes/sample) in %.1f s\n",
              o.requests, double(total_events) / o.requests, total_bytes / 1024.0 / o.requests,
              double(total_bytes) / total_events, Seconds(t0));

  // --- Stage costs, one thread ------------------------------------------
  const int stage_requests = std::min(o.requests, 50);
  size_t stage_events = 0;
  for (int i = 0; i < stage_requests; ++i) stage_events += events[i];
  {
    auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < stage_requests; ++i) {
      google::protobuf::Arena arena;
      auto* r = google::protobuf::Arena::CreateMessage<collector::ExportProfilesServiceRequest>(&arena);
      if (!r->ParseFromString(requests[i])) return 1;
    }
    double parse = Seconds(t);
    // Server-side cost of gzip: inflate (the deflate happens in clients).
    double inflate = 0;
    for (int i = 0; i < stage_requests; ++i) {
      z_stream z{};
      if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
          Z_OK) {
        return 1;
      }
      std::string packed(deflateBound(&z, requests[i].size()), '\0');
      z.next_in = reinterpret_cast<Bytef*>(requests[i].data());
      z.avail_in = static_cast<uInt>(requests[i].size());
      z.next_out = reinterpret_cast<Bytef*>(packed.data());
      z.avail_out = static_cast<uInt>(packed.size());
      if (deflate(&z, Z_FINISH) != Z_STREAM_END) return 1;
      packed.resize(z.total_out);
      deflateEnd(&z);
      auto ti = std::chrono::steady_clock::now();
      if (!InflateMessage(packed, "gzip", 64 << 20).ok()) return 1;
      inflate += Seconds(ti);
    }
    std::vector<NormalizeResult> normalized;
    double normalize = 0;
    for (int i = 0; i < stage_requests; ++i) {
      google::protobuf::Arena arena;
      auto* r = google::protobuf::Arena::CreateMessage<collector::ExportProfilesServiceRequest>(&arena);
      if (!r->ParseFromString(requests[i])) return 1;
      auto tn = std::chrono::steady_clock::now();
      for (int k = 1; k < o.stage_repeat; ++k) NormalizeExportRequest(*r);
      normalized.push_back(NormalizeExportRequest(*r));
      normalize += Seconds(tn) / o.stage_repeat;
      if (normalized.back().rejected_profiles != 0) {
        std::printf("unexpected rejection: %s\n", normalized.back().error_message.c_str());
        return 1;
      }
    }
    size_t frames = 0, stacks = 0, sets = 0, strings = 0;
    for (const NormalizeResult& n : normalized) {
      frames += n.batch.dict.frames.size();
      stacks += n.batch.dict.StackCount();
      sets += n.batch.dict.AttributeSetCount();
      strings += n.batch.dict.strings.size();
    }
    std::printf(
        "normalized batch, per request: %.0f samples, %.0f stacks, %.0f frames, %.0f "
        "attribute sets, %.0f strings\n",
        double(stage_events) / stage_requests, double(stacks) / stage_requests,
        double(frames) / stage_requests, double(sets) / stage_requests, double(strings) / stage_requests);
    std::string dir = (std::filesystem::temp_directory_path() / "kiln-ingest-bench-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) return 1;
    double write = 0;
    {
      auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
      if (!store.ok()) return 1;
      auto tw = std::chrono::steady_clock::now();
      for (const NormalizeResult& n : normalized) {
        if (!(*store)->Write(n.batch).ok()) return 1;
      }
      write = Seconds(tw);
    }
    std::filesystem::remove_all(dir);
    std::printf(
        "one thread, %d requests: parse %.2f M samples/s, normalize %.2f M samples/s, "
        "Store::Write %.2f M samples/s; gunzip (when sent compressed) %.2f M samples/s\n",
        stage_requests, stage_events / parse / 1e6, stage_events / normalize / 1e6,
        stage_events / write / 1e6, stage_events / inflate / 1e6);
  }

  // --- End to end over loopback gRPC ------------------------------------
  std::string dir = (std::filesystem::temp_directory_path() / "kiln-ingest-bench-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return 1;
  storage::StoreOptions store_options;
  if (o.paced_ms > 0) store_options.settle_max_age = std::chrono::seconds(1);
  auto opened = storage::Store::Open(dir, storage::Store::Mode::kReadWrite, store_options);
  if (!opened.ok()) return 1;
  std::unique_ptr<storage::Store> store = std::move(*opened);
  ReceiverOptions options;
  options.listen_address = "127.0.0.1:0";
  // --forward: this receiver (A) forwards to B, which listens from the
  // start ("up") or from when the clients are done ("down").
  BenchKiln b;
  std::unique_ptr<Forwarder> forwarder;
  std::string b_address;
  if (!o.forward.empty()) {
    if (!b.Open({})) return 1;
    b_address = "127.0.0.1:" + std::to_string(testing::FreePort());
    if (o.forward == "up" && !b.Listen(b_address)) return 1;
    forwarder = std::make_unique<Forwarder>(store.get(), std::vector<ForwardTarget>{{.target = b_address}});
    options.forward_destinations = {b_address};
    options.on_forwarded = [f = forwarder.get()] { f->Notify(); };
  }
  auto started = OtlpReceiver::Start(store.get(), options);
  if (!started.ok()) {
    std::printf("%s\n", started.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<OtlpReceiver> receiver = std::move(*started);
  const std::string target = "127.0.0.1:" + std::to_string(receiver->port());
  const double rss_before = CurrentRssMiB();

  std::atomic<int> next{0};
  std::atomic<size_t> acknowledged{0};
  std::atomic<int> failures{0};
  const double cpu_before = CpuSeconds();
  auto t = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < o.streams; ++c) {
    clients.emplace_back([&] {
      // A channel per stream: separate connections, like separate agents.
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      args.SetMaxSendMessageSize(-1);
      auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
      grpc::GenericStub stub(channel);
      for (int i = next++; i < o.requests; i = next++) {
        grpc::ClientContext context;
        if (o.gzip) context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
        grpc::Slice slice(requests[i]);
        grpc::ByteBuffer request(&slice, 1);
        grpc::ByteBuffer response;
        std::promise<grpc::Status> done;
        stub.UnaryCall(&context, kExportMethod, grpc::StubOptions(), &request, &response,
                       [&done](grpc::Status s) { done.set_value(std::move(s)); });
        grpc::Status status = done.get_future().get();
        if (o.paced_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.paced_ms));
        if (status.ok()) {
          acknowledged += events[i];
        } else {
          if (failures++ < 3) std::printf("request failed: %s\n", status.error_message().c_str());
        }
      }
    });
  }
  for (std::thread& c : clients) c.join();
  const double seconds = Seconds(t);
  const double cpu = CpuSeconds() - cpu_before;
  receiver->Stop();
  if (!o.forward.empty()) {
    // B holds every acknowledged sample: forwarding's end to end. "down":
    // B starts now, and the forwarder's next attempt (its backoff reaches
    // up to 30 s while B is down) begins the drain.
    const storage::ForwardBacklog owed = store->ForwardBacklogOf(b_address);
    auto tb = std::chrono::steady_clock::now();
    if (o.forward == "down" && !b.Listen(b_address)) return 1;
    double first = -1;
    while (b.store->Stats().samples < acknowledged.load() && Seconds(tb) < 600) {
      if (first < 0 && b.store->Stats().samples > 0) first = Seconds(tb);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const double done = Seconds(tb);
    const uint64_t in_b = b.store->Stats().samples;
    if (o.forward == "up") {
      std::printf(
          "forwarding to B (up throughout): %llu of %zu samples in B %.2f s after the last acknowledgement, "
          "%.2f s after the first request = %.2f M samples/s forwarded; %llu requests (%.1f MiB) owed when the "
          "clients finished\n",
          static_cast<unsigned long long>(in_b), acknowledged.load(), done, seconds + done,
          in_b / (seconds + done) / 1e6, static_cast<unsigned long long>(owed.requests), owed.bytes / 1048576.0);
    } else {
      std::printf(
          "forwarding to B (down while the clients sent): %llu requests (%.1f MiB) owed; B up: first samples "
          "after %.2f s (the forwarder's backoff), all %llu of %zu after %.2f s = %.2f M samples/s drained\n",
          static_cast<unsigned long long>(owed.requests), owed.bytes / 1048576.0, first,
          static_cast<unsigned long long>(in_b), acknowledged.load(), done,
          first >= 0 && done > first ? in_b / (done - first) / 1e6 : 0.0);
    }
    forwarder.reset();
  }
  const double peak_rss = PeakRssMiB();

  // Disk as a user leaves it: kiln stopped (the store closed as kiln closes
  // it), nothing compacted by hand; then, for comparison, after Compact.
  auto directory_bytes = [&dir] {
    uint64_t bytes = 0, wal = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
      if (!e.is_regular_file(ec)) continue;
      bytes += e.file_size(ec);
      if (e.path().extension() == ".log") wal += e.file_size(ec);
    }
    return std::pair{bytes, wal};
  };
  const uint64_t stored = store->Stats().samples;
  receiver.reset();
  auto tclose = std::chrono::steady_clock::now();
  store.reset();
  const double close_s = Seconds(tclose);
  const auto [left_bytes, left_wal] = directory_bytes();
  std::printf(
      "disk as kiln leaves it (closed, %.1f s to close; no Compact): %.2f MiB = %.2f bytes/sample, "
      "of which write-ahead logs %.2f MiB\n",
      close_s, left_bytes / 1048576.0, stored ? double(left_bytes) / stored : 0.0, left_wal / 1048576.0);
  opened = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
  if (!opened.ok()) return 1;
  store = std::move(*opened);
  auto tc = std::chrono::steady_clock::now();
  if (!store->Compact().ok()) return 1;
  const double compact = Seconds(tc);
  storage::StoreStats stats = store->Stats();
  std::printf(
      "end to end%s: %d streams, %zu samples acknowledged in %.2f s = %.2f M samples/s "
      "(%d failed requests); process CPU %.2f s = %.2f M samples per CPU-second\n",
      o.gzip ? " (clients gzip)" : "", o.streams, acknowledged.load(), seconds, acknowledged / seconds / 1e6,
      failures.load(), cpu, acknowledged / cpu / 1e6);
  std::printf("disk after Compact (%.1f s): %.2f MiB for %llu stored samples = %.2f bytes/sample\n", compact,
              stats.disk_bytes / 1048576.0, static_cast<unsigned long long>(stats.samples),
              stats.samples ? double(stats.disk_bytes) / stats.samples : 0.0);
  std::printf("  by part:");
  for (const storage::StoreStats::PartBytes& p : stats.part_bytes) {
    std::printf(" %s %.2f MiB;", p.part.c_str(), p.bytes / 1048576.0);
  }
  std::printf(" (%llu stacks, %llu frames, %llu attribute sets)\n",
              static_cast<unsigned long long>(stats.stacks), static_cast<unsigned long long>(stats.frames),
              static_cast<unsigned long long>(stats.attribute_sets));
  std::printf(
      "peak RSS %.0f MiB (RSS before sending %.0f MiB, of which %.0f MiB are the "
      "pre-generated requests)\n",
      peak_rss, rss_before, total_bytes / 1048576.0);
  receiver.reset();
  store.reset();
  std::filesystem::remove_all(dir);
  return failures.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kiln::ingest

int main(int argc, char** argv) { return kiln::ingest::Main(argc, argv); }
