#include "python_tracker.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "elf_file.h"
#include "ingest/symbols/elf_image_elfutils.h"
#include "unwind_table.h"

namespace kiln::agent {
namespace {

// Bounds on what is read from a process: a str or line table larger than
// these is not a name or a line table a program has.
constexpr std::size_t kMaxStringBytes = 4096;
constexpr std::size_t kMaxLineTableBytes = 1 << 20;
constexpr int kMaxInterpreters = 64;
constexpr int kMaxThreads = 16384;

bool ReadMemory(std::uint32_t pid, std::uint64_t address, void* out, std::size_t size) {
  if (size == 0) return true;
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  return process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

template <typename T>
bool ReadValue(std::uint32_t pid, std::uint64_t address, T* out) {
  return ReadMemory(pid, address, out, sizeof(T));
}

std::uint64_t Field(const std::vector<std::uint8_t>& block, std::uint16_t offset) {
  std::uint64_t v = 0;
  if (offset != kPyNoField && offset + sizeof(v) <= block.size()) std::memcpy(&v, block.data() + offset, sizeof(v));
  return v;
}

struct ElfSymbolHit {
  std::uint64_t value = 0, size = 0;
};

// The named symbols of .symtab and .dynsym (first found wins), and a
// section's bytes.
struct InterpreterElf {
  std::map<std::string, ElfSymbolHit> symbols;
  std::string py_runtime;  // .PyRuntime's bytes (the start is enough)
};

void ScanElf(const std::string& path, const std::vector<std::string>& wanted, InterpreterElf* out,
             bool want_section) {
  absl::StatusOr<symbols::internal::ElfImage> image = symbols::internal::ElfImage::Open(path);
  if (image.ok()) {
    Elf* elf = image->elf();
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr) || (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM)) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data || shdr.sh_entsize == 0) continue;
      std::size_t n = shdr.sh_size / shdr.sh_entsize;
      for (std::size_t i = 0; i < n; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_value == 0) continue;
        const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
        if (!name || std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
        out->symbols.try_emplace(name, ElfSymbolHit{sym.st_value, sym.st_size});
      }
    }
    if (want_section) {
      if (auto s = image->FindSectionWithData(".PyRuntime")) {
        Elf_Data* data = elf_getdata(s->scn, nullptr);
        if (data && data->d_buf) {
          std::size_t n = std::min<std::size_t>(data->d_size, 8192);
          out->py_runtime.assign(static_cast<const char*>(data->d_buf), n);
        }
      }
    }
  }
}

// The process's threads: tid in its own pid namespace -> tid on the host,
// from the NSpid lines of /proc/PID/task/*/status (one number outside a
// container: both the same).
std::unordered_map<std::uint64_t, std::uint64_t> HostTids(std::uint32_t pid) {
  std::unordered_map<std::uint64_t, std::uint64_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream status(entry.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("NSpid:", 0) != 0) continue;
      std::istringstream in(line.substr(6));
      std::vector<std::uint64_t> ids;
      for (std::uint64_t v; in >> v;) ids.push_back(v);
      if (!ids.empty()) out[ids.back()] = ids.front();
      break;
    }
  }
  return out;
}

std::string Basename(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

PythonTracker::PythonTracker(ProcessTracker& processes, PythonMapFds fds) : processes_(processes), fds_(fds) {}

void PythonTracker::Refuse(const std::string& what) { ++stats_.refused[what]; }

const PythonTracker::Interpreter& PythonTracker::InterpreterFor(const std::string& key, const std::string& open_path,
                                                                const std::string& name,
                                                                const std::string& build_id) {
  auto& slot = interpreters_[key];
  if (slot) return *slot;
  slot = std::make_unique<Interpreter>();
  Interpreter& in = *slot;
  auto file_name = ParsePythonFileName(name);
  std::string version = file_name ? std::to_string(file_name->major) + "." + std::to_string(file_name->minor) : "";
  InterpreterElf elf;
  const std::vector<std::string> wanted = {"_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault.cold", "_PyRuntime",
                                           "PyCode_Type"};
  ScanElf(open_path, wanted, &elf, file_name && file_name->minor >= 13);
  if (!elf.symbols.count("_PyEval_EvalFrameDefault")) {
    in.refusal = "";  // python3.X that links libpython: the library is the interpreter
    return in;
  }
  // The split-off .cold part is a local symbol: in .symtab, which
  // distributions strip into the debug file.
  if (!elf.symbols.count("_PyEval_EvalFrameDefault.cold")) {
    std::string debug = DebugFilePathForBuildId(build_id);
    if (!debug.empty() && access(debug.c_str(), R_OK) == 0) ScanElf(debug, wanted, &elf, false);
  }
  auto refuse = [&](const std::string& why) -> const Interpreter& {
    in.refusal = name + " (" + (version.empty() ? "version unknown" : version) + "): " + why;
    return in;
  };
  if (!file_name || file_name->major != 3) return refuse("not a CPython 3 file name");
  if (file_name->free_threaded) return refuse("free-threaded build, not supported");
  if (!elf.symbols.count("_PyRuntime") || !elf.symbols.count("PyCode_Type"))
    return refuse("no _PyRuntime or PyCode_Type symbol");
  Result<PythonLayout> layout = file_name->minor >= 13
                                    ? PythonLayoutFromDebugOffsets(elf.py_runtime, file_name->minor)
                                    : PythonLayoutFromTable(file_name->minor);
  if (!layout.ok()) return refuse(layout.error());
  in.layout = *layout;
  in.eval = elf.symbols["_PyEval_EvalFrameDefault"].value;
  in.eval_size = elf.symbols["_PyEval_EvalFrameDefault"].size;
  if (in.eval_size == 0) return refuse("_PyEval_EvalFrameDefault has no size");
  if (auto it = elf.symbols.find("_PyEval_EvalFrameDefault.cold"); it != elf.symbols.end()) {
    in.cold = it->second.value;
    in.cold_size = it->second.size;
  } else {
    int fd = open(open_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (auto cold = FindSplitColdPart(fd, in.eval, in.eval_size)) std::tie(in.cold, in.cold_size) = *cold;
      close(fd);
    }
  }
  in.runtime = elf.symbols["_PyRuntime"].value;
  in.code_type = elf.symbols["PyCode_Type"].value;
  in.ok = true;
  notices_.push_back(name + " (" + version + "): layout from " +
                     (file_name->minor >= 13 ? "its _Py_DebugOffsets" : "kiln-agent's table") + ", eval loop " +
                     std::to_string(in.eval_size) + " bytes" +
                     (in.cold_size ? " + cold part " + std::to_string(in.cold_size) + " bytes"
                                   : " (no cold part found)"));
  return in;
}

void PythonTracker::LoadProcess(ProcessInfo& process) {
  if (fds_.procs < 0 || refused_pids_.count(process.pid)) return;
  for (std::size_t i = 0; i < process.maps.size(); ++i) {
    const MapsEntry& e = process.maps[i];
    if (!e.executable || !e.IsFile()) continue;
    std::string name = Basename(e.path);
    if (!ParsePythonFileName(name)) continue;
    if (!processes_.EnsureMapping(process, i)) continue;
    const ExecutableEntry& exe = *process.executables[i];
    // The version comes from the name: one file under two names is two.
    std::string key = (exe.file->htlhash.empty() ? exe.open_path : exe.file->htlhash) + " " + name;
    const Interpreter& in = InterpreterFor(key, exe.open_path, name, exe.file->gnu_build_id);
    if (!in.ok) {
      if (!in.refusal.empty()) Refuse(in.refusal);
      continue;
    }
    auto [it, added] = procs_.try_emplace(process.pid);
    Proc& p = it->second;
    if (!added && p.interp == &in) return;  // reloaded after a dlopen: the same interpreter
    p.interp = &in;
    p.bias = e.start - exe.elf.FileOffsetToVaddr(e.file_offset);
    kiln_py_proc value{};
    value.eval_start = p.bias + in.eval;
    value.eval_end = value.eval_start + in.eval_size;
    if (in.cold) {
      value.cold_start = p.bias + in.cold;
      value.cold_end = value.cold_start + in.cold_size;
    }
    value.layout = in.layout.bpf;
    if (bpf_map_update_elem(fds_.procs, &process.pid, &value, BPF_ANY) != 0) {
      Refuse(std::string("py_procs full: ") + std::strerror(errno));
      procs_.erase(it);
      return;
    }
    if (added) ++stats_.versions["3." + std::to_string(in.layout.minor)];
    stats_.processes = procs_.size();
    WalkThreads(process.pid, p);
    return;
  }
}

void PythonTracker::ChainLoops(ProcessInfo& process) {
  auto it = procs_.find(process.pid);
  if (it == procs_.end()) return;
  const PythonLayout& l = it->second.interp->layout;
  Refuse(process.executable_name + " (3." + std::to_string(l.minor) + "): its frame chain loops");
  ForgetProcess(process.pid);
  refused_pids_.insert(process.pid);
}

void PythonTracker::ThreadUnknown(ProcessInfo& process) {
  auto it = procs_.find(process.pid);
  if (it == procs_.end()) return;
  if (std::chrono::steady_clock::now() - it->second.walked_at < kRescanAfter) return;
  WalkThreads(process.pid, it->second);
}

// _PyRuntime.interpreters.head -> each interpreter's threads -> next: every
// thread state, matched to its thread by native_thread_id.
void PythonTracker::WalkThreads(std::uint32_t pid, Proc& p) {
  const PythonLayout& l = p.interp->layout;
  p.walked_at = std::chrono::steady_clock::now();
  ++stats_.thread_walks;
  std::unordered_set<std::uint64_t> seen;
  // 3.11+ records the thread's tid in its own pid namespace; the walker
  // looks threads up by the host's.
  const bool by_tid = l.bpf.model != KILN_PY_MODEL_ONE_FRAME;
  std::unordered_map<std::uint64_t, std::uint64_t> host_tid;
  if (by_tid) host_tid = HostTids(pid);
  std::uint64_t interp = 0;
  if (!ReadValue(pid, p.bias + p.interp->runtime + l.runtime_interpreters_head, &interp)) return;
  int threads = 0;
  for (int i = 0; i < kMaxInterpreters && interp; ++i) {
    std::uint64_t t = 0;
    if (!ReadValue(pid, interp + l.interp_threads_head, &t)) break;
    for (; t && threads < kMaxThreads; ++threads) {
      std::uint64_t native = 0, next = 0;
      if (!ReadValue(pid, t + l.bpf.tstate_native_tid, &native) || !ReadValue(pid, t + l.tstate_next, &next)) break;
      std::uint64_t key = native;
      if (by_tid) {
        auto h = host_tid.find(native);
        key = h == host_tid.end() ? 0 : h->second;
      }
      kiln_py_thread value{t, native};
      if (key != 0 && seen.insert(key).second) bpf_map_update_elem(fds_.threads, &key, &value, BPF_ANY);
      if (next == t) break;
      t = next;
    }
    std::uint64_t next_interp = 0;
    if (!ReadValue(pid, interp + l.interp_next, &next_interp) || next_interp == interp) break;
    interp = next_interp;
  }
  for (std::uint64_t id : p.tids)
    if (!seen.count(id)) bpf_map_delete_elem(fds_.threads, &id);
  stats_.threads += seen.size();
  stats_.threads -= std::min(stats_.threads, p.tids.size());
  p.tids = std::move(seen);
}

void PythonTracker::ForgetProcess(std::uint32_t pid) {
  refused_pids_.erase(pid);  // an exec'd or gone process starts afresh
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  for (std::uint64_t id : it->second.tids) bpf_map_delete_elem(fds_.threads, &id);
  stats_.threads -= std::min(stats_.threads, it->second.tids.size());
  bpf_map_delete_elem(fds_.procs, &pid);
  procs_.erase(it);
  stats_.processes = procs_.size();
}

void PythonTracker::Sweep() {
  std::vector<std::uint32_t> gone;
  for (const auto& [pid, p] : procs_)
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) gone.push_back(pid);
  for (std::uint32_t pid : refused_pids_)
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) gone.push_back(pid);
  for (std::uint32_t pid : gone) ForgetProcess(pid);
}

std::string ReadPythonString(std::uint32_t pid, const PythonLayout& l, std::uint64_t address) {
  // The ASCII header first: most names are ASCII, and a short str may end
  // before the larger header would.
  std::vector<std::uint8_t> head(l.unicode_ascii_size);
  if (!address || l.unicode_state + 4u > head.size() || !ReadMemory(pid, address, head.data(), head.size()))
    return "";
  std::uint64_t length = Field(head, l.unicode_length);
  std::uint32_t state = 0;
  std::memcpy(&state, head.data() + l.unicode_state, sizeof(state));
  int kind = (state >> 2) & 7;
  bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4) || length > kMaxStringBytes / kind) return "";
  std::string data(length * kind, '\0');
  std::uint64_t at = address + (ascii ? l.unicode_ascii_size : l.unicode_compact_size);
  if (!ReadMemory(pid, at, data.data(), data.size())) return "";
  return ascii ? data : PythonString(data, kind);
}

std::optional<PythonCode> ReadPythonCode(std::uint32_t pid, const PythonLayout& l, std::uint64_t code_type,
                                         std::uint64_t address, const PythonCode* cached) {
  std::uint16_t last = std::max({l.object_type, l.code_filename, l.code_name, l.code_firstlineno, l.code_linetable,
                                 l.code_qualname == kPyNoField ? std::uint16_t{0} : l.code_qualname});
  auto gone = [&]() -> std::optional<PythonCode> {
    if (!cached) return std::nullopt;
    PythonCode code = *cached;
    code.gone = true;
    return code;
  };
  std::vector<std::uint8_t> block(last + 8u);
  if (!ReadMemory(pid, address, block.data(), block.size())) return gone();
  std::uint64_t name_ptr = Field(block, l.code_qualname != kPyNoField ? l.code_qualname : l.code_name);
  std::array<std::uint64_t, 4> fp = {Field(block, l.object_type), name_ptr, Field(block, l.code_filename),
                                     Field(block, l.code_linetable)};
  // Only a code object: its type is PyCode_Type of this interpreter.
  if (fp[0] != code_type) return gone();
  if (cached && cached->fingerprint == fp) return *cached;
  PythonCode code;
  code.fingerprint = fp;
  code.function = ReadPythonString(pid, l, fp[1]);
  code.file = ReadPythonString(pid, l, fp[2]);
  std::int32_t first_line = 0;
  std::memcpy(&first_line, block.data() + l.code_firstlineno, sizeof(first_line));
  code.first_line = first_line;
  std::uint64_t table_size = 0;
  if (fp[3] && ReadValue(pid, fp[3] + l.bytes_size, &table_size) && table_size <= kMaxLineTableBytes) {
    code.linetable.resize(table_size);
    if (!ReadMemory(pid, fp[3] + l.bytes_data, code.linetable.data(), table_size)) code.linetable.clear();
  }
  return code;
}

Frame PythonTracker::NameFrame(std::uint32_t pid, std::uint64_t entry) {
  Frame f;
  f.type = FrameType::kPython;
  std::uint64_t code = entry & KILN_PY_CODE_MASK;
  auto index = static_cast<std::uint32_t>((entry >> KILN_PY_INDEX_SHIFT) & KILN_PY_NO_INDEX);
  f.address = code;
  auto it = procs_.find(pid);
  if (it == procs_.end()) {
    ++stats_.frames_unreadable;
    return f;
  }
  Proc& p = it->second;
  auto cached = p.code.find(code);
  std::optional<PythonCode> info = ReadPythonCode(pid, p.interp->layout, p.bias + p.interp->code_type, code,
                                                  cached == p.code.end() ? nullptr : &cached->second);
  if (!info) {
    ++stats_.frames_unreadable;
    return f;
  }
  if (cached == p.code.end() || cached->second.fingerprint != info->fingerprint) {
    if (p.code.size() >= kMaxCodePerProcess) p.code.clear();
    p.code[code] = *info;
  }
  ++stats_.frames_named;
  stats_.frames_named_gone += info->gone;
  f.function = info->function;
  f.file = info->file;
  if (auto line = PythonLine(p.interp->layout.minor, info->linetable, info->first_line, index)) f.line = *line;
  return f;
}

}  // namespace kiln::agent
