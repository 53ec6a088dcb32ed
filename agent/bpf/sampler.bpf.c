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
#include <bpf/bpf_tracing.h>

#include "sampler_event.h"

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

/* A sample is built here, then copied into the ring buffer with only as many
 * frames as it has: most stacks are far shorter than the maximum. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct kiln_sample_event);
} scratch SEC(".maps");

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

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if ((pid_tgid >> 32) == 0)
    return 0; /* idle */

  __u32 zero = 0;
  struct kiln_sample_event *ev = bpf_map_lookup_elem(&scratch, &zero);
  if (!ev)
    return 0;
  fill_header(&ev->header, KILN_EVENT_SAMPLE);
  ev->flags = 0;

  /* Kernel stack: empty when the tick interrupted user mode. */
  long kbytes = bpf_get_stack(ctx, ev->frames, KILN_MAX_STACK_DEPTH * sizeof(__u64), 0);
  __u32 kn = 0;
  if (kbytes > 0)
    kn = kbytes / sizeof(__u64);
  else if (kbytes < 0)
    ev->flags |= KILN_SAMPLE_FLAG_KERNEL_TRUNCATED;
  if (kn > KILN_MAX_STACK_DEPTH)
    kn = KILN_MAX_STACK_DEPTH;

  /* User stack: the kernel walks frame pointers from the user registers saved
   * at kernel entry. Stage 2 replaces this call with an .eh_frame unwinder. */
  long ubytes = bpf_get_stack(ctx, &ev->frames[kn], KILN_MAX_STACK_DEPTH * sizeof(__u64),
                              BPF_F_USER_STACK);
  __u32 un = 0;
  if (ubytes > 0)
    un = ubytes / sizeof(__u64);
  else if (ubytes < 0)
    ev->flags |= KILN_SAMPLE_FLAG_USER_TRUNCATED;
  if (un > KILN_MAX_STACK_DEPTH)
    un = KILN_MAX_STACK_DEPTH;

  ev->kernel_frames = kn;
  ev->user_frames = un;
  __u64 size = __builtin_offsetof(struct kiln_sample_event, frames) + (kn + un) * sizeof(__u64);
  if (size > sizeof(*ev))
    size = sizeof(*ev);
  __sync_fetch_and_add(&sampled_events, 1);
  if (bpf_ringbuf_output(&events, ev, size, wakeup_flags()) != 0)
    __sync_fetch_and_add(&dropped_events, 1);
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
