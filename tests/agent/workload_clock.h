/* Clocks the agent test workloads measure themselves with. */
#ifndef KILN_TESTS_AGENT_WORKLOAD_CLOCK_H
#define KILN_TESTS_AGENT_WORKLOAD_CLOCK_H

#include <time.h>

/* CPU time of the calling thread: splits measured in it are not skewed by
 * preemption. */
static inline double thread_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline double wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
