/* kiln-agent's stage 2 test program: a deep call chain with a known CPU
 * split, built WITHOUT frame pointers (-O2 -fomit-frame-pointer), through a
 * shared library built the same way (nofp_chain.c):
 *
 *   main -> outer_1 -> ... -> outer_5 -> chain_1 -> ... -> chain_6 -> leaf_heavy  (3 parts)
 *                                                                   -> leaf_light  (1 part)
 *   = 13 frames from main to each leaf (14 with _start, more with libc's
 *   __libc_start_call_main).
 *
 * With -DKILN_DLOPEN the library is not linked: the program runs `idle_first`
 * seconds without it, then dlopens it by the path given and calls chain_1
 * through dlsym, so the agent must learn about a mapping made after start.
 *
 * Two more shapes for the walker's edges (linked build only):
 *   "deep":   main -> descend x 200 -> spin_deep: deeper than the walker's
 *             128 user frames;
 *   "signal": a SIGALRM every 10 ms whose handler spins 3 ms, so samples
 *             land in on_alarm above glibc's signal trampoline
 *             (__restore_rt) above whatever main's chain was doing.
 *
 * Prints "pid=N" at start and "cpu_seconds=S" at the end.
 * Usage: nofp_workload SECONDS [LIBRARY_PATH IDLE_FIRST]   (dlopen build)
 *        nofp_workload SECONDS [deep|signal]               (linked build)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <stdio.h>
#include <stdlib.h>
#include "workload_clock.h"
#include <unistd.h>

typedef void (*chain_fn)(int);
#ifndef KILN_DLOPEN
void chain_1(int which);
#endif

static volatile unsigned long sink;
static chain_fn chain;

#define OUTER(name, next)                          \
  __attribute__((noinline)) void name(int which) { \
    volatile char pad[32 + 16 * (which & 1)];      \
    pad[0] = (char)which;                          \
    next(which);                                   \
    sink += pad[0];                                \
  }

__attribute__((noinline)) static void call_chain(int which) { chain(which); sink++; }
OUTER(outer_5, call_chain)
OUTER(outer_4, outer_5)
OUTER(outer_3, outer_4)
OUTER(outer_2, outer_3)
OUTER(outer_1, outer_2)

__attribute__((noinline)) static void spin_cpu(double cpu_seconds) {
  double end = thread_cpu_seconds() + cpu_seconds;
  while (thread_cpu_seconds() < end)
    for (int i = 0; i < 20000; ++i) sink += (unsigned long)i * 2654435761u;
}

__attribute__((noinline)) void spin_deep(double seconds) {
  double end = wall_seconds() + seconds;
  while (wall_seconds() < end) spin_cpu(0.001);
}

__attribute__((noinline)) void descend(int depth, double seconds) {
  volatile char pad[16];
  pad[0] = (char)depth;
  if (depth > 0)
    descend(depth - 1, seconds);
  else
    spin_deep(seconds);
  sink += pad[0];
}

__attribute__((noinline)) static void on_alarm(int sig) {
  (void)sig;
  spin_cpu(0.003);
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 5.0;
  printf("pid=%d\n", getpid());
  fflush(stdout);
#ifdef KILN_DLOPEN
  if (argc < 4) {
    fprintf(stderr, "usage: %s SECONDS LIBRARY IDLE_FIRST\n", argv[0]);
    return 2;
  }
  usleep((useconds_t)(atof(argv[3]) * 1e6));
  void* lib = dlopen(argv[2], RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  chain = (chain_fn)dlsym(lib, "chain_1");
  if (!chain) return 1;
#else
  chain = chain_1;
  if (argc > 2 && strcmp(argv[2], "deep") == 0) {
    descend(200, seconds);
    printf("cpu_seconds=%f\n", thread_cpu_seconds());
    return 0;
  }
  int signals = argc > 2 && strcmp(argv[2], "signal") == 0;
  if (signals) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
  }
#endif
  double start = wall_seconds(), end = start + seconds;
  while (wall_seconds() < end) {
#ifndef KILN_DLOPEN
    /* Signals start after half a second: what is checked is the signal
     * frame, not the moments before the agent loaded this process. */
    if (signals && wall_seconds() > start + 0.5) {
      struct itimerval every = {{0, 10000}, {0, 10000}};
      setitimer(ITIMER_REAL, &every, NULL);
      signals = 0;
    }
#endif
    outer_1(1); /* leaf_heavy: 3 ms of CPU */
    outer_1(0); /* leaf_light: 1 ms */
  }
  printf("cpu_seconds=%f\n", thread_cpu_seconds());
  return 0;
}
