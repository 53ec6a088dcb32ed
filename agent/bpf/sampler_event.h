/* Records the BPF programs in sampler.bpf.c write into the ring buffer, read
 * by bpf_sampler.cpp. Shared by BPF C (types from vmlinux.h) and C++ (types
 * from <linux/types.h>), so it is plain C with fixed-width kernel types.
 *
 * Every record starts with kiln_event_header; `kind` says which struct it is.
 * A sample record has variable length: only the first
 * kernel_frames + user_frames entries of `frames` are present.
 *
 *   kiln_sample_event
 *   +--------------------+------------------+---------------------------------+
 *   | header (40 bytes)  | counts, regs     | frames: kernel (leaf first),    |
 *   | kind pid tid cpu   | kernel_frames    |   then user (leaf first)        |
 *   | ktime_ns comm[16]  | user_frames ...  | up to 2 x KILN_MAX_STACK_DEPTH  |
 *   +--------------------+------------------+---------------------------------+
 *
 * The user frames come from the CFI walker (unwind_abi.h) or, where no table
 * is loaded, from frame pointers; flags say which, and why the walk ended.
 * The first user frame is the sampled pc, the others are return addresses.
 */
#ifndef KILN_AGENT_BPF_SAMPLER_EVENT_H
#define KILN_AGENT_BPF_SAMPLER_EVENT_H

#define KILN_MAX_STACK_DEPTH 127 /* kernel frames */
#define KILN_MAX_USER_FRAMES 128 /* user frames: 127 + 128 fit the 256 entries */
#define KILN_COMM_LEN 16

enum kiln_event_kind {
  KILN_EVENT_SAMPLE = 1,   /* struct kiln_sample_event */
  KILN_EVENT_EXEC = 2,     /* struct kiln_event_header: pid exec'd a new image */
  KILN_EVENT_EXIT = 3,     /* struct kiln_event_header: process pid exited */
  /* Off-CPU: a thread chosen by -off-cpu-threshold was switched out; the
   * stack where it blocked (struct kiln_sample_event, ktime_ns = when). */
  KILN_EVENT_OFFCPU_BEGIN = 4,
  /* ... and ran again (struct kiln_offcpu_end_event, for the woken thread). */
  KILN_EVENT_OFFCPU_END = 5,
};

/* Set in kiln_sample_event.flags. */
#define KILN_SAMPLE_FLAG_KERNEL_TRUNCATED 0x1 /* bpf_get_stack failed (kernel) */
#define KILN_SAMPLE_FLAG_USER_TRUNCATED 0x2   /* bpf_get_stack failed (user) */
#define KILN_SAMPLE_FLAG_UNWOUND_CFI 0x4      /* some user frames walked with CFI rows */
#define KILN_SAMPLE_FLAG_FP_FALLBACK 0x8      /* some user frames walked with frame pointers */
#define KILN_SAMPLE_FLAG_PROCESS_UNKNOWN 0x10 /* the process's tables are not loaded (yet) */
#define KILN_SAMPLE_FLAG_NEW_MAPPING 0x20     /* a pc in no known mapping: maps changed? */
#define KILN_SAMPLE_FLAG_TABLE_MISSING 0x40   /* a pc in a file whose rows are not in (evicted, building, refused) */
#define KILN_SAMPLE_FLAG_PY_THREAD_UNKNOWN 0x80 /* in a Python eval loop, thread state not known: rescan */
/* Bits 8-15: why the user walk ended (enum kiln_walk_end in unwind_abi.h). */
#define KILN_SAMPLE_FLAG_PY_LOOP 0x10000 /* the Python frame chain loops: user space refuses the process */
#define KILN_SAMPLE_WALK_END_SHIFT 8

struct kiln_event_header {
  __u32 kind;
  __u32 pid;      /* tgid: the process */
  __u32 tid;      /* the thread */
  __u32 cpu;
  __u64 ktime_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
  char comm[KILN_COMM_LEN]; /* thread name */
};

struct kiln_sample_event {
  struct kiln_event_header header;
  __u16 kernel_frames; /* entries of frames[] that are kernel addresses */
  __u16 user_frames;   /* entries after them that are user addresses (<= KILN_MAX_USER_FRAMES) */
  __u32 flags;         /* KILN_SAMPLE_FLAG_* */
  /* 256 entries: indexes masked with 255 are always in bounds (verifier). */
  __u64 frames[2 * KILN_MAX_STACK_DEPTH + 2];
};

/* header.pid/tid/comm are the woken thread's, header.ktime_ns when it ran
 * again; user space pairs it with the OFFCPU_BEGIN of that tid and
 * start_ns, and the blocked time is the difference. */
struct kiln_offcpu_end_event {
  struct kiln_event_header header;
  __u64 start_ns;
};

#endif /* KILN_AGENT_BPF_SAMPLER_EVENT_H */
