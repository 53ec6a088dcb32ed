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
 * Stage 2 (.eh_frame unwinding) keeps this layout: the BPF unwinder writes its
 * user frames where bpf_get_stack writes them today and sets
 * KILN_SAMPLE_FLAG_UNWOUND_EH; user space does not care who walked the stack.
 */
#ifndef KILN_AGENT_BPF_SAMPLER_EVENT_H
#define KILN_AGENT_BPF_SAMPLER_EVENT_H

#define KILN_MAX_STACK_DEPTH 127
#define KILN_COMM_LEN 16

enum kiln_event_kind {
  KILN_EVENT_SAMPLE = 1,   /* struct kiln_sample_event */
  KILN_EVENT_EXEC = 2,     /* struct kiln_event_header: pid exec'd a new image */
  KILN_EVENT_EXIT = 3,     /* struct kiln_event_header: process pid exited */
};

/* Set in kiln_sample_event.flags. */
#define KILN_SAMPLE_FLAG_KERNEL_TRUNCATED 0x1 /* bpf_get_stack failed (kernel) */
#define KILN_SAMPLE_FLAG_USER_TRUNCATED 0x2   /* bpf_get_stack failed (user) */
#define KILN_SAMPLE_FLAG_UNWOUND_EH 0x4       /* stage 2: user frames from .eh_frame */

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
  __u16 user_frames;   /* entries after them that are user addresses */
  __u32 flags;         /* KILN_SAMPLE_FLAG_* */
  __u64 frames[2 * KILN_MAX_STACK_DEPTH];
};

#endif /* KILN_AGENT_BPF_SAMPLER_EVENT_H */
