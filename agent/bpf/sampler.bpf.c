// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* kiln-agent's BPF side: a perf_event program that records one stack sample
 * per cpu-clock tick, and two sched tracepoints that tell user space when a
 * process exec'd or exited (so cached /proc/PID/maps are dropped in time).
 * The tracepoints are raw (bpf_raw_tracepoint_open): no tracefs needed.
 *
 * Contract with user space (bpf_sampler.cpp):
 *   - records go to the `events` ring buffer, layouts in sampler_event.h;
 *   - samples of pid 0 (the idle task) are not recorded;
 *   - when the ring buffer is full the record is dropped and counted in
 *     dropped_events (never silent);
 *   - the consumer is woken only when `wakeup_bytes` are waiting, otherwise
 *     it polls on a timer: waking a thread per sample would cost more than
 *     taking the sample.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_tracing.h>

#include "python_abi.h"
#include "sampler_event.h"
#include "unwind_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space before load (skeleton rodata). */
const volatile __u64 wakeup_bytes = 256 * 1024;

/* Read by user space through the skeleton's mmap'ed .bss. */
__u64 sampled_events = 0;
__u64 dropped_events = 0;

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 * 1024 * 1024); /* resized by user space before load */
} events SEC(".maps");

/* ---- User stacks from call frame information ----------------------------
 *
 * User space compiles each file's CFI into rows (unwind_abi.h) and loads a
 * process's executable mappings into proc_mappings the first time the process
 * is sampled. Per frame the walker finds the mapping of the pc (one LPM
 * lookup), the file's row for the pc (its page, then a binary search), computes the CFA and
 * reads the return address and the saved frame pointer. Where there is no
 * row (no table loaded yet, code without CFI, a rule we do not evaluate) it
 * takes one frame-pointer step instead, and says so in the sample's flags.
 *
 * The walk is split into programs of KILN_FRAMES_PER_PROG frames chained by
 * tail calls, which keeps each program small for the verifier on 5.10-era
 * kernels (no bpf_loop). State lives in the per-CPU scratch record.
 *
 * Interpreters (stage 3) take over here: a mapping flag can say "this file
 * is an interpreter loop", and the step that finds a pc in it hands the
 * state to the interpreter's unwinder program through another tail call.
 */

#define KILN_FRAMES_PER_PROG 16
#define KILN_MAX_TAIL_CALLS 8 /* 1 + 8 programs x 16 = up to 144 steps >= KILN_MAX_USER_FRAMES */
#define KILN_ROW_SEARCH_STEPS 17 /* binary search in one page: up to 64K rows */
#define KILN_MIN_USER_ADDRESS 0x1000ULL
#define KILN_MAX_USER_ADDRESS (1ULL << 47) /* x86-64 4-level paging, arm64 48-bit VA */

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1); /* sized by user space before load */
  __type(key, __u32);
  __type(value, __u32);
} unwind_rows SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, KILN_UNWIND_INFOS);
  __type(key, __u32);
  __type(value, struct kiln_unwind_info);
} unwind_infos SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1); /* sized by user space before load */
  __type(key, __u32);
  __type(value, struct kiln_unwind_file);
} unwind_files SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LPM_TRIE);
  __uint(max_entries, 1); /* sized by user space before load */
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct kiln_mapping_key);
  __type(value, struct kiln_unwind_mapping);
} proc_mappings SEC(".maps");

/* pid -> KILN_PROCESS_*: whether proc_mappings holds the process. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* sized by user space before load */
  __type(key, __u32);
  __type(value, __u32);
} proc_state SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} unwind_progs SEC(".maps");

struct kiln_walk_state {
  __u64 pc, sp, fp;
  __u64 py_frame;  /* the next Python frame to record (see python_abi.h) */
  /* Brent's cycle check on the frame chain: a frame seen again means the
   * chain loops (CPython's never does: damaged or hostile memory). */
  __u64 py_saved;
  __u16 py_power, py_steps;
  __u32 pid;
  __u32 kernel_frames;
  __u32 user_frames;
  __u32 flags;
  __u8 exact_pc;   /* pc is where execution stopped, not a return address */
  __u8 process;    /* KILN_PROCESS_* or 0 */
  __u8 tail_calls;
  __u8 wake;       /* force a wakeup: user space has a process to load */
  __u8 py;         /* KILN_PY_WALK_* */
  __u8 py_group;   /* recording the Python frames of the eval-loop frame at pc */
  __u8 py_done;    /* ... and they are recorded: unwind that frame, do not record it */
};

/* st->py: where the walk stands with the thread's Python frames. */
#define KILN_PY_WALK_NONE 0     /* not a Python process user space can read */
#define KILN_PY_WALK_PENDING 1  /* one: the thread's frame chain is not read yet */
#define KILN_PY_WALK_CHAIN 2    /* py_frame is the next frame to record */
#define KILN_PY_WALK_FAILED 3   /* the chain could not be read: native frames only */

struct sample_scratch {
  struct kiln_walk_state st;
  struct kiln_py_proc py; /* copied from py_procs when the walk begins */
  struct kiln_sample_event ev;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sample_scratch);
} scratch SEC(".maps");

/* Read by user space: why walks ended, and how frames were found. */
__u64 walk_ends[KILN_WALK_END_COUNT] = {};
__u64 cfi_frames = 0;
__u64 fp_frames = 0;

/* ---- Python (python_abi.h) ---------------------------------------------- */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* sized by user space before load */
  __type(key, __u32);     /* pid */
  __type(value, struct kiln_py_proc);
} py_procs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* sized by user space before load */
  __type(key, __u64);     /* the host's tid, or pthread_self() for 3.10 */
  __type(value, struct kiln_py_thread);
} py_threads SEC(".maps");

/* Read by user space: Python frames recorded, and walks that could not
 * read a thread's frames, by reason. */
__u64 py_frames = 0;
__u64 py_thread_unknown = 0; /* no PyThreadState for the tid (yet) */
__u64 py_thread_stale = 0;   /* its native_thread_id is another thread's: rescan */
__u64 py_read_failed = 0;    /* a frame or thread state read failed or made no sense */
__u64 py_chain_loops = 0;    /* a frame chain that came back to a frame (the process is refused) */

static __always_inline __u64 wakeup_flags(void) {
  return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes
             ? BPF_RB_FORCE_WAKEUP
             : BPF_RB_NO_WAKEUP;
}

static __always_inline void fill_header(struct kiln_event_header *h, __u32 kind) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  h->kind = kind;
  h->pid = pid_tgid >> 32;
  h->tid = (__u32)pid_tgid;
  h->cpu = bpf_get_smp_processor_id();
  h->ktime_ns = bpf_ktime_get_ns();
  bpf_get_current_comm(h->comm, sizeof(h->comm));
}

static __always_inline int plausible_user_address(__u64 a) {
  return a >= KILN_MIN_USER_ADDRESS && a < KILN_MAX_USER_ADDRESS;
}

/* The user registers of the current task, as saved at kernel entry. */
static __always_inline int read_task_user_regs(__u64 *pc, __u64 *sp, __u64 *fp) {
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  if (!BPF_CORE_READ(task, mm))
    return -1; /* a kernel thread has no user stack */
#if defined(__TARGET_ARCH_x86)
  /* x86-64 keeps them at the top of the kernel stack: task->stack +
   * THREAD_SIZE (16 KiB without KASAN, as distributions build) - the
   * size of the running kernel's struct pt_regs (CO-RE), with
   * TOP_OF_KERNEL_STACK_PADDING 0 (kernels built without FRED). */
  void *stack = BPF_CORE_READ(task, stack);
  if (!stack)
    return -1;
  struct pt_regs *regs = (struct pt_regs *)((char *)stack + 16384 - bpf_core_type_size(struct pt_regs));
  *pc = BPF_CORE_READ(regs, ip);
  *sp = BPF_CORE_READ(regs, sp);
  *fp = BPF_CORE_READ(regs, bp);
  return plausible_user_address(*pc) ? 0 : -1;
#else
  /* arm64: the same place (task_pt_regs), pc/sp/regs[29]; user_mode() is
   * (pstate & PSR_MODE_MASK) == 0. Not built yet. */
  return -1;
#endif
}

/* The user registers at a cpu-clock tick: the sampled ones when the tick
 * hit user mode (ctx->regs is rewritten by the verifier into a read of the
 * interrupted registers), else those saved at kernel entry. */
static __always_inline int read_sample_user_regs(struct bpf_perf_event_data *ctx, __u64 *pc, __u64 *sp,
                                                 __u64 *fp) {
#if defined(__TARGET_ARCH_x86)
  /* The context is the UAPI struct pt_regs (a stable ABI: r15 ... rbp at
   * 4, rip 16, cs 17, rsp 19), read as whole words by index rather than
   * through vmlinux.h's kernel layout: CO-RE would relocate `cs` to the
   * running kernel's field, 2 bytes wide before 6.9, and the verifier only
   * allows 8-byte reads of this context. */
  const volatile __u64 *uregs = (const volatile __u64 *)ctx;
  if ((uregs[17] & 3) != 0) {
    *pc = uregs[16];
    *sp = uregs[19];
    *fp = uregs[4];
    return plausible_user_address(*pc) ? 0 : -1;
  }
#endif
  return read_task_user_regs(pc, sp, fp);
}

static __always_inline void end_walk(struct kiln_walk_state *st, __u32 reason) {
  if (reason < KILN_WALK_END_COUNT)
    __sync_fetch_and_add(&walk_ends[reason], 1);
  st->flags |= reason << KILN_SAMPLE_WALK_END_SHIFT;
}

static __always_inline void submit_sample(struct sample_scratch *s) {
  struct kiln_sample_event *ev = &s->ev;
  __u32 kn = s->st.kernel_frames, un = s->st.user_frames;
  ev->kernel_frames = kn;
  ev->user_frames = un;
  ev->flags |= s->st.flags;
  __u64 size = __builtin_offsetof(struct kiln_sample_event, frames) + (__u64)(kn + un) * sizeof(__u64);
  if (size > sizeof(*ev))
    size = sizeof(*ev);
  __u64 flags = s->st.wake ? BPF_RB_FORCE_WAKEUP : wakeup_flags();
  if (bpf_ringbuf_output(&events, ev, size, flags) != 0)
    __sync_fetch_and_add(&dropped_events, 1);
}

/* Appends the current pc as a user frame. */
static __always_inline int push_frame(struct sample_scratch *s) {
  __u32 at = s->st.kernel_frames + s->st.user_frames;
  if (s->st.user_frames >= KILN_MAX_USER_FRAMES || at > 255)
    return -1;
  s->ev.frames[at & 255] = s->st.pc;
  s->st.user_frames++;
  return 0;
}

static __always_inline __u32 *row_word(__u32 at) {
  return bpf_map_lookup_elem(&unwind_rows, &at);
}

/* The rule of `file` that holds `vaddr`, or NULL. The run's page index
 * (unwind_abi.h) narrows the search to one 64 KiB page; a pc before the
 * page's first row is held by the row before it, from an earlier page.
 * user space's FindCompactRow is the same lookup, tested against the rows
 * before compaction. */
static __always_inline struct kiln_unwind_info *find_row(struct kiln_unwind_file *file, __u64 vaddr) {
  __u64 page = vaddr >> KILN_PAGE_BITS;
  __u32 base = file->first_row;
  __u32 *w = row_word(base);
  if (!w || page < file->first_page)
    return NULL;
  __u32 rows_start = *w;
  page -= file->first_page;
  if (page + 1 >= rows_start) /* past the last page */
    return NULL;
  w = row_word(base + (__u32)page);
  if (!w)
    return NULL;
  __u32 page_start = *w, lo = *w, found = 0; /* 0 is a page start, never a row */
  w = row_word(base + (__u32)page + 1);
  if (!w)
    return NULL;
  __u32 hi = *w, low = vaddr & 0xffff;
  for (int i = 0; i < KILN_ROW_SEARCH_STEPS; i++) {
    if (lo >= hi)
      break;
    __u32 mid = lo + (hi - lo) / 2;
    w = row_word(base + mid);
    if (!w)
      return NULL;
    if (KILN_ROW_PC_LOW(*w) <= low) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (found == 0) {
    if (page_start <= rows_start)
      return NULL;
    found = page_start - 1;
  }
  w = row_word(base + found);
  if (!w)
    return NULL;
  __u32 info = KILN_ROW_INFO(*w);
  return bpf_map_lookup_elem(&unwind_infos, &info);
}

/* One frame-pointer step: [fp] is the caller's fp, [fp + 8] the return address. */
static __always_inline int fp_step(struct kiln_walk_state *st) {
  __u64 frame[2];
  if (st->fp == 0) {
    end_walk(st, KILN_WALK_FP_ZERO);
    return 1;
  }
  if (st->fp < st->sp || bpf_probe_read_user(frame, sizeof(frame), (void *)st->fp) != 0) {
    end_walk(st, KILN_WALK_NO_FP);
    return 1;
  }
  st->flags |= KILN_SAMPLE_FLAG_FP_FALLBACK;
  __sync_fetch_and_add(&fp_frames, 1);
  st->sp = st->fp + 16;
  st->fp = frame[0];
  st->pc = frame[1];
  st->exact_pc = 0;
  return 0;
}

/* Moves st from a frame to its caller; `m` is the pc's mapping, NULL when
 * the process is not loaded. 0 = continue, 1 = the walk ended. */
static __always_inline int unwind_step(struct kiln_walk_state *st, struct kiln_unwind_mapping *m) {
  struct kiln_unwind_info *row = NULL;
  if (m && !(m->flags & KILN_MAPPING_JIT)) {
    struct kiln_unwind_file *file = bpf_map_lookup_elem(&unwind_files, &m->file_slot);
    if (file && file->row_count > 0)
      row = find_row(file, st->pc - m->bias - (st->exact_pc ? 0 : 1));
    else {
      st->flags |= KILN_SAMPLE_FLAG_TABLE_MISSING; /* user space reloads evicted tables */
      if (file && (file->flags & KILN_FILE_WAKE_ON_MISS)) {
        file->flags = 0;
        st->wake = 1;
      }
    }
  }
  __u8 rule = row ? KILN_CFA_RULE_OF(row) : KILN_CFA_NONE;
  if (rule == KILN_CFA_NONE || rule == KILN_CFA_UNSUPPORTED)
    return fp_step(st);
  if (rule == KILN_CFA_OUTERMOST) {
    end_walk(st, KILN_WALK_OUTERMOST);
    return 1;
  }

  __u64 cfa = 0, ra = 0, fp = st->fp;
  __s64 off = (__s64)row->cfa_offset * 8;
  __u8 fp_rule = KILN_FP_RULE_OF(row);
  if (rule == KILN_CFA_SP_DEREF) {
    /* A signal frame: the interrupted registers are in the ucontext. */
    __u64 saved[2]; /* sp, then pc */
    if (bpf_probe_read_user(saved, sizeof(saved), (void *)(st->sp + off)) != 0) {
      end_walk(st, KILN_WALK_READ_FAILED);
      return 1;
    }
    if (fp_rule == KILN_REG_AT_SP &&
        bpf_probe_read_user(&fp, sizeof(fp), (void *)(st->sp + (__s64)row->fp_offset * 8)) != 0)
      fp = 0;
    cfa = saved[0];
    ra = saved[1];
    st->exact_pc = 1;
  } else {
    if (rule == KILN_CFA_SP)
      cfa = st->sp + off;
    else if (rule == KILN_CFA_FP)
      cfa = st->fp + off;
    else /* KILN_CFA_PLT */
      cfa = st->sp + 8 + ((st->pc & 15) >= (__u64)row->cfa_offset ? 8 : 0);
    if (cfa <= st->sp) {
      end_walk(st, KILN_WALK_SP_NOT_GROWING);
      return 1;
    }
    if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)) != 0) {
      end_walk(st, KILN_WALK_READ_FAILED);
      return 1;
    }
    if (fp_rule == KILN_REG_AT_CFA) {
      if (bpf_probe_read_user(&fp, sizeof(fp), (void *)(cfa + (__s64)row->fp_offset * 8)) != 0)
        fp = 0;
    } else if (fp_rule != KILN_REG_SAME) {
      fp = 0;
    }
    st->exact_pc = 0;
  }
  st->flags |= KILN_SAMPLE_FLAG_UNWOUND_CFI;
  __sync_fetch_and_add(&cfi_frames, 1);
  st->sp = cfa;
  st->fp = fp;
  st->pc = ra;
  return 0;
}

static __always_inline int py_read_ptr(__u64 base, __u16 off, __u64 *out) {
  return bpf_probe_read_user(out, sizeof(*out), (void *)(base + off));
}

/* The eval loop's frame at st->pc: find the thread's innermost Python frame
 * the first time. 0 = there are frames to record. */
static __always_inline int py_begin_group(struct sample_scratch *s) {
  struct kiln_walk_state *st = &s->st;
  struct kiln_py_layout *l = &s->py.layout;
  if (st->py == KILN_PY_WALK_PENDING) {
    st->py = KILN_PY_WALK_FAILED;
    /* The key (python_abi.h): the host's tid, or for 3.10 pthread_self(),
     * which is the thread's fs base on x86-64. */
    __u64 key = s->ev.header.tid;
#if defined(__TARGET_ARCH_x86)
    if (l->model == KILN_PY_MODEL_ONE_FRAME) {
      struct task_struct *task = (struct task_struct *)bpf_get_current_task();
      key = BPF_CORE_READ(task, thread.fsbase);
    }
#endif
    struct kiln_py_thread *thread = bpf_map_lookup_elem(&py_threads, &key);
    if (!thread) {
      __sync_fetch_and_add(&py_thread_unknown, 1);
      st->flags |= KILN_SAMPLE_FLAG_PY_THREAD_UNKNOWN;
      return 1;
    }
    __u64 t = thread->tstate, native_tid = 0, frame = 0;
    if (py_read_ptr(t, l->tstate_native_tid, &native_tid) != 0) {
      __sync_fetch_and_add(&py_read_failed, 1);
      return 1;
    }
    if (native_tid != thread->ident) {
      __sync_fetch_and_add(&py_thread_stale, 1);
      st->flags |= KILN_SAMPLE_FLAG_PY_THREAD_UNKNOWN;
      return 1;
    }
    if (py_read_ptr(t, l->tstate_frame, &frame) != 0 ||
        (l->cframe_frame != 0xffff && frame && py_read_ptr(frame, l->cframe_frame, &frame) != 0)) {
      __sync_fetch_and_add(&py_read_failed, 1);
      return 1;
    }
    st->py_frame = frame;
    st->py_saved = frame;
    st->py_power = 1;
    st->py_steps = 0;
    st->py = KILN_PY_WALK_CHAIN;
  }
  if (st->py != KILN_PY_WALK_CHAIN || !st->py_frame)
    return 1;
  st->py_group = 1;
  return 0;
}

/* Records the next Python frame of the group (or steps over a C-stack shim
 * frame). 0 = the group goes on, 1 = it is over (or the chain is broken):
 * the eval loop's own frame is unwound next. */
static __always_inline int py_step(struct sample_scratch *s) {
  struct kiln_walk_state *st = &s->st;
  struct kiln_py_layout *l = &s->py.layout;
  __u64 f = st->py_frame, code = 0, previous = 0, instr = 0;
  __u8 entry = 0;
  if (!plausible_user_address(f) || py_read_ptr(f, l->frame_code, &code) != 0 ||
      py_read_ptr(f, l->frame_previous, &previous) != 0 ||
      (l->model != KILN_PY_MODEL_ONE_FRAME &&
       bpf_probe_read_user(&entry, sizeof(entry), (void *)(f + l->frame_entry)) != 0)) {
    __sync_fetch_and_add(&py_read_failed, 1);
    st->py = KILN_PY_WALK_FAILED;
    return 1;
  }
  if (previous && previous == st->py_saved) {
    __sync_fetch_and_add(&py_chain_loops, 1);
    st->flags |= KILN_SAMPLE_FLAG_PY_LOOP;
    st->py = KILN_PY_WALK_FAILED;
    return 1;
  }
  if (++st->py_steps >= st->py_power) {
    st->py_saved = previous;
    st->py_power = st->py_power < 0x4000 ? st->py_power * 2 : st->py_power;
    st->py_steps = 0;
  }
  st->py_frame = previous;
  if (l->model == KILN_PY_MODEL_CSTACK && entry == l->owner_cstack)
    return 1; /* the shim the C call pushed: the group ends below it */
  code &= ~(__u64)l->code_tag_bits;
  __u64 index = KILN_PY_NO_INDEX;
  if (py_read_ptr(f, l->frame_instr, &instr) == 0) {
    if (l->model == KILN_PY_MODEL_ONE_FRAME) {
      __s32 lasti = (__s32)instr;
      if (lasti >= 0 && lasti < (__s32)KILN_PY_NOT_STARTED)
        index = lasti;
      else if (lasti == -1)
        index = KILN_PY_NOT_STARTED;
    } else {
      /* 3.11/3.12 point at the instruction before the next one: a frame
       * just pushed points before the first (Python gives it its def line). */
      __u64 first = code + l->code_adaptive;
      if (instr >= first && (instr - first) / 2 < KILN_PY_NOT_STARTED)
        index = (instr - first) / 2;
      else if (instr < first && first - instr <= 2)
        index = KILN_PY_NOT_STARTED;
    }
  }
  if (!plausible_user_address(code)) {
    __sync_fetch_and_add(&py_read_failed, 1);
    st->py = KILN_PY_WALK_FAILED;
    return 1;
  }
  __u32 at = st->kernel_frames + st->user_frames;
  if (st->user_frames >= KILN_MAX_USER_FRAMES || at > 255)
    return 1;
  s->ev.frames[at & 255] = KILN_PY_FRAME_BIT | (index << KILN_PY_INDEX_SHIFT) | (code & KILN_PY_CODE_MASK);
  st->user_frames++;
  __sync_fetch_and_add(&py_frames, 1);
  if (l->model == KILN_PY_MODEL_ONE_FRAME)
    return 1;
  if (l->model == KILN_PY_MODEL_IS_ENTRY && entry)
    return 1;
  return 0;
}

static __always_inline int in_eval_loop(struct sample_scratch *s, __u64 pc) {
  /* A return address points after the call: pc - 1 is in the caller. */
  __u64 a = s->st.exact_pc ? pc : pc - 1;
  return (a >= s->py.eval_start && a < s->py.eval_end) || (a >= s->py.cold_start && a < s->py.cold_end);
}

/* Walks up to KILN_FRAMES_PER_PROG frames; 1 when the walk is over. */
static __always_inline int unwind_frames(struct sample_scratch *s) {
  struct kiln_walk_state *st = &s->st;
  for (int i = 0; i < KILN_FRAMES_PER_PROG; i++) {
    if (st->py_group) {
      if (py_step(s) == 0)
        continue;
      st->py_group = 0;
      if (st->user_frames >= KILN_MAX_USER_FRAMES) {
        end_walk(st, KILN_WALK_DEPTH);
        return 1;
      }
      continue; /* the next round unwinds the eval loop's frame itself */
    }
    if (st->pc == 0) {
      end_walk(st, KILN_WALK_FP_ZERO);
      return 1;
    }
    if (!plausible_user_address(st->pc)) {
      end_walk(st, KILN_WALK_BAD_ADDRESS);
      return 1;
    }
    /* A loaded process's pc must be in one of its executable mappings: a
     * return address elsewhere is junk (stop before emitting it); a sampled
     * pc elsewhere is anonymous code (JIT) or a library mapped since we
     * loaded the process (user space re-reads its maps). */
    struct kiln_unwind_mapping *m = NULL;
    if (st->process == KILN_PROCESS_LOADED) {
      struct kiln_mapping_key key = {
          .prefix_len = KILN_MAPPING_KEY_PID_BITS + 64,
          .pid = bpf_htonl(st->pid),
          .address = bpf_cpu_to_be64(st->pc),
      };
      m = bpf_map_lookup_elem(&proc_mappings, &key);
      if (!m) {
        if (st->user_frames == 0)
          push_frame(s);
        st->flags |= KILN_SAMPLE_FLAG_NEW_MAPPING;
        end_walk(st, KILN_WALK_PC_NOT_MAPPED);
        return 1;
      }
    }
    /* The eval loop: its Python frames instead of its own, the first time
     * this frame is met (py_done: the group was recorded, unwind it). */
    if (st->py != KILN_PY_WALK_NONE && !st->py_done && in_eval_loop(s, st->pc) && py_begin_group(s) == 0) {
      st->py_done = 1;
      continue;
    }
    if (!st->py_done && push_frame(s) != 0) {
      end_walk(st, KILN_WALK_DEPTH);
      return 1;
    }
    st->py_done = 0;
    if (unwind_step(st, m))
      return 1;
  }
  return 0;
}

/* After unwind_frames: tail-call the next program of the walk, or submit. */
static __always_inline void continue_walk(void *ctx, struct sample_scratch *s, void *progs) {
  if (!unwind_frames(s)) {
    if (s->st.tail_calls < KILN_MAX_TAIL_CALLS) {
      s->st.tail_calls++;
      bpf_tail_call(ctx, progs, 0);
    }
    end_walk(&s->st, KILN_WALK_DEPTH);
  }
  submit_sample(s);
}

/* Everything before the user walk: kernel stack, user registers, whether
 * user space has loaded the process. `regs_ok` says the registers are in
 * st already. Returns 1 when there is no user stack to walk (submitted). */
static __always_inline int begin_walk(void *ctx, struct sample_scratch *s, __u32 pid, int regs_ok) {
  struct kiln_sample_event *ev = &s->ev;
  struct kiln_walk_state *st = &s->st;
  /* Kernel stack: empty when a tick interrupted user mode. */
  long kbytes = bpf_get_stack(ctx, ev->frames, KILN_MAX_STACK_DEPTH * sizeof(__u64), 0);
  __u32 kn = 0;
  if (kbytes > 0)
    kn = kbytes / sizeof(__u64);
  else if (kbytes < 0)
    ev->flags |= KILN_SAMPLE_FLAG_KERNEL_TRUNCATED;
  if (kn > KILN_MAX_STACK_DEPTH)
    kn = KILN_MAX_STACK_DEPTH;
  st->pid = pid;
  st->kernel_frames = kn;
  st->user_frames = 0;
  st->flags = 0;
  st->exact_pc = 1;
  st->tail_calls = 0;
  st->wake = 0;
  st->py_group = 0;
  st->py_done = 0;
  st->py_frame = 0;
  struct kiln_py_proc *py = bpf_map_lookup_elem(&py_procs, &pid);
  if (py) {
    s->py = *py;
    st->py = KILN_PY_WALK_PENDING;
  } else {
    st->py = KILN_PY_WALK_NONE;
  }
  if (!regs_ok) {
    end_walk(st, KILN_WALK_KERNEL_THREAD);
    submit_sample(s);
    return 1;
  }
  __u32 *state = bpf_map_lookup_elem(&proc_state, &pid);
  if (state) {
    st->process = *state;
  } else {
    /* First sample of this process: ask user space to load its mappings,
     * once, and walk this one with frame pointers. */
    __u32 requested = KILN_PROCESS_REQUESTED;
    if (bpf_map_update_elem(&proc_state, &pid, &requested, BPF_NOEXIST) == 0)
      st->wake = 1;
    st->process = KILN_PROCESS_REQUESTED;
  }
  if (st->process != KILN_PROCESS_LOADED)
    st->flags |= KILN_SAMPLE_FLAG_PROCESS_UNKNOWN;
  return 0;
}

/* Hands the walk to the first program of `progs`; records what there is if
 * the tail call fails (the program array not set up). */
static __always_inline void start_walk(void *ctx, struct sample_scratch *s, void *progs) {
  bpf_tail_call(ctx, progs, 0);
  end_walk(&s->st, KILN_WALK_DEPTH);
  submit_sample(s);
}

SEC("perf_event")
int unwind_user(struct bpf_perf_event_data *ctx) {
  __u32 zero = 0;
  struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
  if (s)
    continue_walk(ctx, s, &unwind_progs);
  return 0;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 pid = pid_tgid >> 32;
  if (pid == 0)
    return 0; /* idle */

  __u32 zero = 0;
  struct sample_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s)
    return 0;
  fill_header(&s->ev.header, KILN_EVENT_SAMPLE);
  s->ev.flags = 0;
  __sync_fetch_and_add(&sampled_events, 1);
  struct kiln_walk_state *st = &s->st;
  int regs_ok = read_sample_user_regs(ctx, &st->pc, &st->sp, &st->fp) == 0;
  if (!begin_walk(ctx, s, pid, regs_ok))
    start_walk(ctx, s, &unwind_progs);
  return 0;
}

/* ---- Off-CPU ------------------------------------------------------------
 *
 * At every context switch: if the thread coming back was recorded when it
 * left, say how long it was away (OFFCPU_END); if the thread leaving is
 * chosen (probability off_cpu_threshold, as the OpenTelemetry profiler's
 * -off-cpu-threshold), note when and send the stack where it blocked
 * (OFFCPU_BEGIN, walked like a CPU sample: we run as that thread here).
 * Kernel threads are left out: their waiting is not a program's. */

/* P(record) = off_cpu_threshold / 2^32; 2^32 = always. 0 = not attached. */
const volatile __u64 off_cpu_threshold = 0;

__u64 offcpu_recorded = 0;
__u64 offcpu_dropped = 0;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, __u32);   /* tid */
  __type(value, __u64); /* ktime when it was switched out */
} offcpu_start SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} offcpu_progs SEC(".maps");

/* Its own scratch record: a tick's program and this one never share one. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sample_scratch);
} offcpu_scratch SEC(".maps");

SEC("raw_tp/sched_switch")
int unwind_user_offcpu(struct bpf_raw_tracepoint_args *ctx) {
  __u32 zero = 0;
  struct sample_scratch *s = bpf_map_lookup_elem(&offcpu_scratch, &zero);
  if (s)
    continue_walk(ctx, s, &offcpu_progs);
  return 0;
}

SEC("raw_tp/sched_switch")
int on_sched_switch(struct bpf_raw_tracepoint_args *ctx) {
  struct task_struct *prev = (struct task_struct *)ctx->args[1];
  struct task_struct *next = (struct task_struct *)ctx->args[2];
  __u64 now = bpf_ktime_get_ns();

  __u32 next_tid = BPF_CORE_READ(next, pid);
  __u64 *start = bpf_map_lookup_elem(&offcpu_start, &next_tid);
  if (start) {
    struct kiln_offcpu_end_event *end = bpf_ringbuf_reserve(&events, sizeof(*end), 0);
    if (end) {
      end->header.kind = KILN_EVENT_OFFCPU_END;
      end->header.pid = BPF_CORE_READ(next, tgid);
      end->header.tid = next_tid;
      end->header.cpu = bpf_get_smp_processor_id();
      end->header.ktime_ns = now;
      BPF_CORE_READ_STR_INTO(&end->header.comm, next, comm);
      end->start_ns = *start;
      bpf_ringbuf_submit(end, wakeup_flags());
    } else {
      __sync_fetch_and_add(&offcpu_dropped, 1);
    }
    bpf_map_delete_elem(&offcpu_start, &next_tid);
  }

  __u32 prev_pid = BPF_CORE_READ(prev, tgid);
  if (prev_pid == 0 || !BPF_CORE_READ(prev, mm))
    return 0; /* idle, kernel thread */
  if (off_cpu_threshold < (1ULL << 32) && (__u64)bpf_get_prandom_u32() >= off_cpu_threshold)
    return 0;
  __u32 prev_tid = BPF_CORE_READ(prev, pid);
  if (bpf_map_update_elem(&offcpu_start, &prev_tid, &now, BPF_ANY) != 0) {
    __sync_fetch_and_add(&offcpu_dropped, 1);
    return 0;
  }
  __sync_fetch_and_add(&offcpu_recorded, 1);

  __u32 zero = 0;
  struct sample_scratch *s = bpf_map_lookup_elem(&offcpu_scratch, &zero);
  if (!s)
    return 0;
  /* We run as prev: current's registers, stack and comm are prev's. */
  fill_header(&s->ev.header, KILN_EVENT_OFFCPU_BEGIN);
  s->ev.header.ktime_ns = now;
  s->ev.flags = 0;
  struct kiln_walk_state *st = &s->st;
  int regs_ok = read_task_user_regs(&st->pc, &st->sp, &st->fp) == 0;
  if (!begin_walk(ctx, s, prev_pid, regs_ok))
    start_walk(ctx, s, &offcpu_progs);
  return 0;
}

static __always_inline int emit_process_event(__u32 kind) {
  struct kiln_event_header *h = bpf_ringbuf_reserve(&events, sizeof(*h), 0);
  if (!h) {
    __sync_fetch_and_add(&dropped_events, 1);
    return 0;
  }
  fill_header(h, kind);
  bpf_ringbuf_submit(h, wakeup_flags());
  return 0;
}

SEC("raw_tp/sched_process_exec")
int on_process_exec(void *ctx) {
  return emit_process_event(KILN_EVENT_EXEC);
}

SEC("raw_tp/sched_process_exit")
int on_process_exit(void *ctx) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if ((pid_tgid >> 32) != (__u32)pid_tgid)
    return 0; /* a thread, not the process */
  return emit_process_event(KILN_EVENT_EXIT);
}
