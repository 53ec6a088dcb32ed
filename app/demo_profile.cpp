#include "app/demo_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "storage/model/spans.h"

namespace kiln::app {

namespace {

using storage::Attribute;
using storage::Executable;
using storage::Frame;
using storage::FrameType;
using storage::ProfileBatch;
using storage::Sample;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int kDemoSeconds = 15 * 60;

// A frame as the demo describes it; turned into dictionary entries once.
struct FrameSpec {
  std::string function;  // empty: unsymbolized native frame (label exe+0xaddr)
  FrameType type = FrameType::kNative;
  std::string exe;  // executable file name for native frames
  std::string file;
  int64_t line = 0;
  bool inlined = false;
  uint64_t address = 0;
};

FrameSpec K(std::string f) { return {std::move(f), FrameType::kKernel, "", "", 0, false, 0}; }
FrameSpec N(std::string f, std::string exe, std::string file = "", int64_t line = 0) {
  return {std::move(f), FrameType::kNative, std::move(exe), std::move(file), line, false, 0};
}
FrameSpec Inl(std::string f, std::string exe, std::string file, int64_t line) {
  return {std::move(f), FrameType::kNative, std::move(exe), std::move(file), line, true, 0};
}
FrameSpec Raw(std::string exe, uint64_t address) {
  return {"", FrameType::kNative, std::move(exe), "", 0, false, address};
}
FrameSpec Py(std::string f, std::string file, int64_t line) {
  return {std::move(f), FrameType::kPython, "", std::move(file), line, false, 0};
}
FrameSpec Go(std::string f, std::string file, int64_t line) {
  return {std::move(f), FrameType::kGo, "api-server", std::move(file), line, false, 0};
}
FrameSpec Jvm(std::string f, std::string file, int64_t line) {
  return {std::move(f), FrameType::kJvm, "", std::move(file), line, false, 0};
}

using Stack = std::vector<FrameSpec>;

Stack Concat(std::initializer_list<Stack> parts) {
  Stack out;
  for (const Stack& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Stack Repeat(const FrameSpec& f, int n) { return Stack(static_cast<size_t>(n), f); }

// One source of samples: a stack in a thread of a process, with a rate.
struct Workload {
  std::string process;
  int pid;
  std::string thread;
  int tid;
  Stack stack;
  bool off_cpu;             // else on-CPU samples
  double per_second;       // on-CPU: samples/s; off-CPU: blocking events/s
  int64_t off_cpu_ns = 0;  // value of each off-CPU sample
  double phase = 0;        // shifts the load curve so processes differ over time
  std::string service;
  std::string container;
};

class DemoWriter {
 public:
  explicit DemoWriter(ProfileBatch* batch) : batch_(batch) {}

  uint32_t String(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, 0);
    if (inserted) it->second = batch_->dict.AddString(s);
    return it->second;
  }

  uint32_t ExecutableOf(const std::string& name) {
    if (name.empty()) return 0;
    auto [it, inserted] = executables_.try_emplace(name, 0);
    if (inserted) {
      // Deterministic fake ids derived from the name.
      uint64_t h = 1469598103934665603ull;
      for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
      char htl[33], build[41];
      std::snprintf(htl, sizeof htl, "%016llx%016llx", static_cast<unsigned long long>(h),
                    static_cast<unsigned long long>(h * 31));
      std::snprintf(build, sizeof build, "%016llx%016llx%08x", static_cast<unsigned long long>(h * 7),
                    static_cast<unsigned long long>(h * 13), static_cast<unsigned>(h >> 7));
      Executable e;
      e.file_name = String(name.find('/') == std::string::npos ? "/usr/bin/" + name : name);
      e.htlhash = String(htl);
      e.gnu_build_id = String(build);
      it->second = static_cast<uint32_t>(batch_->dict.executables.size());
      batch_->dict.executables.push_back(e);
    }
    return it->second;
  }

  uint32_t FrameOf(const FrameSpec& spec) {
    const std::string key = std::to_string(static_cast<int>(spec.type)) + '\x1f' + spec.function + '\x1f' +
                            spec.exe + '\x1f' + spec.file + '\x1f' + std::to_string(spec.line) +
                            (spec.inlined ? "i" : "") + std::to_string(spec.address);
    auto [it, inserted] = frames_.try_emplace(key, 0);
    if (inserted) {
      Frame f;
      f.function = spec.function.empty() ? 0 : String(spec.function);
      f.file = spec.file.empty() ? 0 : String(spec.file);
      f.line = spec.line;
      f.type = spec.type;
      f.inlined = spec.inlined;
      f.executable =
          spec.type == FrameType::kNative || spec.type == FrameType::kGo ? ExecutableOf(spec.exe) : 0;
      f.address = spec.address != 0 ? spec.address : (0x401000 + 0x40 * frames_.size());
      it->second = static_cast<uint32_t>(batch_->dict.frames.size());
      batch_->dict.frames.push_back(f);
    }
    return it->second;
  }

  uint32_t StackOf(const Stack& stack) {
    std::vector<uint32_t> ids;
    ids.reserve(stack.size());
    for (const FrameSpec& f : stack) ids.push_back(FrameOf(f));
    return batch_->dict.AddStack(ids);
  }

  uint32_t AttributesOf(const Workload& w) {
    std::vector<Attribute> attrs = {
        {String(std::string(storage::attr::kProcessExecutableName)), String(w.process)},
        {String(std::string(storage::attr::kProcessPid)), String(std::to_string(w.pid))},
        {String(std::string(storage::attr::kThreadName)), String(w.thread)},
        {String(std::string(storage::attr::kThreadId)), String(std::to_string(w.tid))},
        {String(std::string(storage::attr::kHostName)), String("demo-host")},
    };
    if (!w.service.empty()) {
      attrs.push_back({String(std::string(storage::attr::kServiceName)), String(w.service)});
      // What its requests' spans are called (as a pprof span_name label).
      attrs.push_back({String(std::string(storage::attr::kSpanName)),
                       String(w.service == "orders-api" ? "POST /orders" : "GET /report")});
    }
    if (!w.container.empty()) {
      attrs.push_back({String(std::string(storage::attr::kContainerId)), String(w.container)});
    }
    return batch_->dict.AddAttributeSet(std::move(attrs));
  }

 private:
  ProfileBatch* batch_;
  std::map<std::string, uint32_t> strings_;
  std::map<std::string, uint32_t> executables_;
  std::map<std::string, uint32_t> frames_;
};

// The workloads: what a busy little server might run.
std::vector<Workload> DemoWorkloads() {
  std::vector<Workload> w;
  const Stack syscall = {K("entry_SYSCALL_64_after_hwframe"), K("do_syscall_64")};
  const Stack sched = {K("schedule"), K("__schedule"), K("finish_task_switch.isra.0")};

  // postgres: native + kernel, several backends.
  const Stack pg_base = {N("_start", "postgres"),
                         N("__libc_start_main", "libc.so.6"),
                         N("main", "postgres", "main.c", 199),
                         N("PostmasterMain", "postgres", "postmaster.c", 1412),
                         N("ServerLoop", "postgres", "postmaster.c", 1790),
                         N("BackendStartup", "postgres", "postmaster.c", 4230),
                         N("PostgresMain", "postgres", "postgres.c", 4593),
                         N("exec_simple_query", "postgres", "postgres.c", 1240),
                         N("PortalRun", "postgres", "pquery.c", 770),
                         N("standard_ExecutorRun", "postgres", "execMain.c", 365)};
  for (int b = 0; b < 4; ++b) {
    const int pid = 1201 + b;
    const std::string thread = "postgres: backend " + std::to_string(pid);
    w.push_back({"postgres", pid, thread, pid,
                 Concat({pg_base,
                         {N("ExecScan", "postgres", "execScan.c", 198),
                          N("heap_getnextslot", "postgres", "heapam.c", 1097),
                          N("heapgettup_pagemode", "postgres", "heapam.c", 893),
                          N("ReadBufferExtended", "postgres", "bufmgr.c", 772)},
                         syscall,
                         {K("__x64_sys_pread64"), K("vfs_read"), K("filemap_read"), K("copy_page_to_iter")}}),
                 false, 2.0 - 0.3 * b, 0, b * 0.7, "postgres", ""});
    w.push_back({"postgres", pid, thread, pid,
                 Concat({pg_base,
                         {N("ExecHashJoin", "postgres", "nodeHashjoin.c", 402),
                          N("ExecHashTableInsert", "postgres", "nodeHash.c", 1640),
                          Inl("hash_uint32", "postgres", "hashfn.h", 58), Raw("postgres", 0x5a3f10)}}),
                 false, 1.2, 0, b * 0.5, "postgres", ""});
    w.push_back({"postgres", pid, thread, pid,
                 Concat({pg_base,
                         {N("pq_getbyte", "postgres", "pqcomm.c", 960),
                          N("secure_read", "postgres", "be-secure.c", 181),
                          N("WaitEventSetWait", "postgres", "latch.c", 1452), N("epoll_wait", "libc.so.6")},
                         syscall,
                         {K("__x64_sys_epoll_wait"), K("do_epoll_wait"), K("schedule_hrtimeout_range")},
                         sched}),
                 true, 6.0, 40'000'000, b * 0.3, "postgres", ""});
  }

  // python: interpreter frames over libpython, with deep recursion.
  const Stack py_base = {N("_start", "python3.11"),
                         N("Py_BytesMain", "libpython3.11.so.1.0"),
                         N("Py_RunMain", "libpython3.11.so.1.0"),
                         N("_PyEval_EvalFrameDefault", "libpython3.11.so.1.0", "ceval.c", 5400),
                         Py("<module>", "/srv/app/server.py", 88),
                         Py("serve_forever", "/usr/lib/python3.11/socketserver.py", 233),
                         Py("handle_request", "/srv/app/server.py", 41)};
  for (int t = 0; t < 3; ++t) {
    const std::string thread = t == 0 ? "MainThread" : "worker-" + std::to_string(t);
    w.push_back({"python3", 2200, thread, 2200 + t,
                 Concat({py_base,
                         {Py("render_report", "/srv/app/report.py", 120)},
                         Repeat(Py("fib", "/srv/app/report.py", 17), 24 + 4 * t),
                         {N("long_add", "libpython3.11.so.1.0", "longobject.c", 3391)}}),
                 false, 2.5, 0, 1.0 + t, "report-service", "c0ffee42d00d"});
    w.push_back({"python3", 2200, thread, 2200 + t,
                 Concat({py_base,
                         {Py("parse_payload", "/srv/app/server.py", 63),
                          Py("loads", "/usr/lib/python3.11/json/__init__.py", 346),
                          Py("decode", "/usr/lib/python3.11/json/decoder.py", 337),
                          N("scanstring_unicode", "_json.cpython-311-x86_64-linux-gnu.so", "_json.c", 440)}}),
                 false, 1.3, 0, 2.0 + t, "report-service", "c0ffee42d00d"});
    w.push_back(
        {"python3", 2200, thread, 2200 + t,
         Concat({py_base,
                 {Py("fetch_rows", "/srv/app/db.py", 30), N("PQexec", "libpq.so.5"), N("poll", "libc.so.6")},
                 syscall,
                 {K("__x64_sys_poll"), K("do_sys_poll")},
                 sched}),
         true, 4.0, 25'000'000, t * 0.4, "report-service", "c0ffee42d00d"});
  }

  // Go: an HTTP API server.
  const Stack go_base = {Go("runtime.goexit", "runtime/asm_amd64.s", 1650),
                         Go("net/http.(*conn).serve", "net/http/server.go", 2009),
                         Go("net/http.serverHandler.ServeHTTP", "net/http/server.go", 2936),
                         Go("github.com/example/api/internal/handlers.(*OrderHandler).ServeHTTP",
                            "internal/handlers/orders.go", 77)};
  for (int t = 0; t < 6; ++t) {
    const int tid = 3300 + t;
    w.push_back({"api-server", 3300, "api-server", tid,
                 Concat({go_base,
                         {Go("encoding/json.Marshal", "encoding/json/encode.go", 161),
                          Go("encoding/json.(*encodeState).reflectValue", "encoding/json/encode.go", 358),
                          Go("runtime.mallocgc", "runtime/malloc.go", 1024),
                          Go("runtime.memclrNoHeapPointers", "runtime/memclr_amd64.s", 93)}}),
                 false, 1.1, 0, 3.0 + t * 0.2, "orders-api", "4ee1a8b0c1d2"});
    w.push_back({"api-server", 3300, "api-server", tid,
                 Concat({{Go("runtime.goexit", "runtime/asm_amd64.s", 1650),
                          Go("runtime.gcBgMarkWorker", "runtime/mgc.go", 1295),
                          Go("runtime.gcDrain", "runtime/mgcmark.go", 1130),
                          Go("runtime.scanobject", "runtime/mgcmark.go", 1360)}}),
                 false, 0.6, 0, t * 0.9, "orders-api", "4ee1a8b0c1d2"});
    w.push_back({"api-server", 3300, "api-server", tid,
                 Concat({go_base,
                         {Go("database/sql.(*DB).QueryContext", "database/sql/sql.go", 1728),
                          Go("internal/poll.(*FD).Read", "internal/poll/fd_unix.go", 167),
                          Go("syscall.Syscall", "syscall/syscall_linux.go", 69)},
                         syscall,
                         {K("__x64_sys_read"), K("sock_read_iter"), K("tcp_recvmsg")},
                         sched}),
                 true, 3.0, 12'000'000, t * 0.6, "orders-api", "4ee1a8b0c1d2"});
  }

  // JVM: interpreted/JIT Java over libjvm.
  const Stack jvm_base = {
      N("start_thread", "libc.so.6"),
      N("thread_native_entry(Thread*)", "libjvm.so"),
      N("JavaThread::thread_main_inner()", "libjvm.so"),
      N("JavaCalls::call_helper(JavaValue*, methodHandle const&, JavaCallArguments*, JavaThread*)",
        "libjvm.so"),
      Jvm("java.lang.Thread.run", "Thread.java", 833),
      Jvm("java.util.concurrent.ThreadPoolExecutor$Worker.run", "ThreadPoolExecutor.java", 635),
      Jvm("com.example.orders.OrderService.placeOrder", "OrderService.java", 212)};
  for (int t = 0; t < 4; ++t) {
    const std::string thread = "pool-1-thread-" + std::to_string(t + 1);
    w.push_back({"java", 4400, thread, 4410 + t,
                 Concat({jvm_base,
                         {Jvm("com.example.orders.PriceCalculator.total", "PriceCalculator.java", 88),
                          Jvm("java.util.stream.ReferencePipeline.collect", "ReferencePipeline.java", 682),
                          Jvm("java.util.HashMap.resize", "HashMap.java", 702)}}),
                 false, 1.4, 0, 4.0 + t, "orders-jvm", ""});
    w.push_back({"java", 4400, thread, 4410 + t,
                 Concat({jvm_base,
                         {Jvm("com.example.orders.AuditLog.append", "AuditLog.java", 51),
                          Jvm("java.io.FileOutputStream.write", "FileOutputStream.java", 349),
                          N("writeBytes", "libjava.so"), N("write", "libc.so.6")},
                         syscall,
                         {K("__x64_sys_write"), K("ext4_file_write_iter"), K("jbd2_log_wait_commit")},
                         sched}),
                 true, 1.5, 60'000'000, 1.0 * t, "orders-jvm", ""});
  }
  w.push_back({"java",
               4400,
               "GC Thread#0",
               4401,
               {N("start_thread", "libc.so.6"), N("thread_native_entry(Thread*)", "libjvm.so"),
                N("GangWorker::loop()", "libjvm.so"), N("G1ParTask::work(unsigned int)", "libjvm.so"),
                N("G1ParScanThreadState::trim_queue()", "libjvm.so"), Raw("libjvm.so", 0x7c1a20)},
               false,
               0.9,
               0,
               0.3,
               "orders-jvm",
               ""});

  // A C++ renderer: long template names and deep recursion through a scene graph.
  const std::string lambda =
      "std::_Function_handler<void (), kiln::render::(anonymous namespace)::RenderPass<kiln::gfx::Backend<"
      "kiln::gfx::OpenGL, std::allocator<kiln::gfx::CommandBuffer>>>::Execute(kiln::render::FrameContext&)::"
      "{lambda()#1}>::_M_invoke(std::_Any_data const&)";
  const Stack render_base = {
      N("_start", "scene-render"), N("main", "scene-render", "main.cpp", 40),
      N("kiln::render::Renderer::RunFrameLoop(std::chrono::duration<long, std::ratio<1l, 1000000000l>>)",
        "scene-render", "renderer.cpp", 311),
      N(lambda, "scene-render", "render_pass.h", 97)};
  for (int t = 0; t < 2; ++t) {
    w.push_back(
        {"scene-render", 5500, t == 0 ? "render-main" : "render-worker", 5500 + t,
         Concat({render_base,
                 Repeat(N("kiln::scene::Node::Traverse(kiln::scene::Visitor&) const", "scene-render",
                          "node.cpp", 64),
                        36 + 8 * t),
                 {N("kiln::scene::MeshVisitor::Visit(kiln::scene::MeshNode const&)", "scene-render",
                    "mesh_visitor.cpp", 120),
                  Inl("std::vector<kiln::math::Vec4<float>, "
                      "std::allocator<kiln::math::Vec4<float>>>::push_back(kiln::math::Vec4<float> const&)",
                      "scene-render", "stl_vector.h", 1189),
                  N("__memmove_avx_unaligned_erms", "libc.so.6")}}),
         false, 2.0, 0, 5.0 + t, "", ""});
  }
  w.push_back({"scene-render", 5500, "render-main", 5500,
               Concat({render_base,
                       {N("glXSwapBuffers", "libGLX_mesa.so.0"), Raw("libgallium-23.so", 0x1a2b3c)},
                       syscall,
                       {K("__x64_sys_futex"), K("futex_wait")},
                       sched}),
               true, 60.0, 8'000'000, 0, "", ""});

  // Small fry so the process list is long, as on a real host.
  const char* kDaemons[] = {"sshd",    "systemd-journald", "containerd", "dockerd",
                            "chronyd", "rsyslogd",         "cron",       "dbus-daemon"};
  int pid = 700;
  for (const char* d : kDaemons) {
    w.push_back({d, pid, d, pid,
                 Concat({{N("_start", d), N("main", d), N("event_loop_run", d), N("epoll_wait", "libc.so.6")},
                         syscall,
                         {K("__x64_sys_epoll_wait"), K("ep_poll")}}),
                 false, 0.08, 0, pid * 0.01, "", ""});
    ++pid;
  }
  // Interrupt work on a kernel thread: kernel frames only.
  w.push_back({"kworker/u8:2",
               90,
               "kworker/u8:2",
               90,
               {K("ret_from_fork"), K("kthread"), K("worker_thread"), K("process_one_work"),
                K("blk_mq_run_work_fn"), K("nvme_queue_rq")},
               false,
               0.4,
               0,
               0.1,
               "",
               ""});
  return w;
}

}  // namespace

namespace {

// The link of request `request` of workload `w`'s thread: the trace is the
// service's request (its threads share it), the span the thread's part.
uint32_t RequestLink(storage::ProfileDictionary* dict, std::map<std::pair<int, int>, uint32_t>* links,
                     const Workload& w, int request) {
  auto [it, added] = links->try_emplace(std::pair{w.tid, request}, 0);
  if (added) {
    uint64_t h = 1469598103934665603ull;
    for (char c : w.service) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    const uint64_t trace_hi = h ^ static_cast<uint64_t>(request) * 0x9e3779b97f4a7c15ull;
    const uint64_t trace_lo = trace_hi * 31 + 7;
    const uint64_t span = (trace_hi ^ static_cast<uint64_t>(w.tid)) * 0xff51afd7ed558ccdull;
    std::string trace_id, span_id;
    for (int b = 7; b >= 0; --b) trace_id.push_back(static_cast<char>(trace_hi >> (8 * b)));
    for (int b = 7; b >= 0; --b) trace_id.push_back(static_cast<char>(trace_lo >> (8 * b)));
    for (int b = 7; b >= 0; --b) span_id.push_back(static_cast<char>(span >> (8 * b)));
    it->second = static_cast<uint32_t>(dict->links.size());
    dict->links.push_back({trace_id, span_id});
  }
  return it->second;
}

}  // namespace

ProfileBatch BuildDemoProfile(int64_t now_ns) {
  ProfileBatch batch;
  std::map<std::pair<int, int>, uint32_t> links;  // (thread, request) -> link
  DemoWriter writer(&batch);
  const uint32_t off_cpu_type = batch.dict.AddSampleType({storage::OffCpuTime()});
  const std::vector<Workload> workloads = DemoWorkloads();
  std::vector<uint32_t> stacks, attrs;
  for (const Workload& w : workloads) {
    stacks.push_back(writer.StackOf(w.stack));
    attrs.push_back(writer.AttributesOf(w));
  }
  // xorshift64: deterministic, so the demo is the same every run.
  uint64_t rng = 0x2545f4914f6cdd1dull;
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  const int64_t start = now_ns - kDemoSeconds * kSecond;
  for (int s = 0; s < kDemoSeconds; ++s) {
    for (size_t i = 0; i < workloads.size(); ++i) {
      const Workload& w = workloads[i];
      // Load varies slowly (minutes) and differs per workload, so the
      // timeline and range selections show something.
      const double load = 1.0 + 0.6 * std::sin(s / 90.0 + w.phase) + (s > 400 && s < 460 ? 1.5 : 0.0);
      const double expected = w.per_second * std::max(load, 0.05);
      int count = static_cast<int>(expected);
      if (static_cast<double>(next() % 1000) / 1000.0 < expected - count) ++count;
      for (int c = 0; c < count; ++c) {
        Sample sample;
        sample.time_ns = start + s * kSecond + static_cast<int64_t>(next() % kSecond);
        sample.stack = stacks[i];
        sample.attribute_set = attrs[i];
        sample.sample_type = w.off_cpu ? off_cpu_type : 0;
        sample.value =
            w.off_cpu
                ? w.off_cpu_ns / 2 + static_cast<int64_t>(next() % static_cast<uint64_t>(w.off_cpu_ns))
                : 1;
        // The services' threads each serve one request at a time, about
        // 3 s long: their samples link to its trace and span (the Spans
        // view, trace filters).
        if (!w.service.empty()) sample.link = RequestLink(&batch.dict, &links, w, (s + w.tid % 3) / 3);
        batch.samples.push_back(sample);
      }
    }
  }
  return batch;
}

}  // namespace kiln::app
