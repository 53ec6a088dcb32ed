/* kiln-agent's off-CPU test program: a known split of wall time between
 * spinning, sleeping and waiting on a pipe, built without frame pointers.
 *
 *   main -> run -> spin_part  (on CPU, ~50 ms a round)
 *              -> sleep_part (nanosleep 50 ms)
 *              -> pipe_part  (read() until a helper thread writes, ~50 ms)
 *
 * Measures the wall time spent inside sleep_part and pipe_part with
 * CLOCK_MONOTONIC and prints "pid=N" at start, then "sleep_ns=... pipe_ns=..."
 * at the end. The same rounds run for half a second first under warmup(),
 * unmeasured: a process's first moments may come before the agent loaded
 * its tables (see the README's known limits), and are not what this checks.
 * Usage: offcpu_workload SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static int fds[2], go[2];
static volatile int stop;

static long long now_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void spin_part(void) {
  long long end = now_ns(CLOCK_MONOTONIC) + 50000000;
  while (now_ns(CLOCK_MONOTONIC) < end)
    for (int i = 0; i < 10000; ++i) sink += (unsigned long)i * 2654435761u;
}

__attribute__((noinline)) void sleep_part(void) {
  struct timespec ts = {0, 50000000};
  nanosleep(&ts, NULL);
  sink++;
}

__attribute__((noinline)) void pipe_part(void) {
  char c;
  if (write(go[1], "g", 1) != 1) exit(1); /* tell the writer to start its 50 ms */
  if (read(fds[0], &c, 1) != 1) exit(1);
  sink += c;
}

static void* writer(void* arg) {
  (void)arg;
  char c;
  while (read(go[0], &c, 1) == 1 && !stop) {
    usleep(50000);
    if (write(fds[1], "x", 1) != 1) break;
  }
  return NULL;
}

__attribute__((noinline)) void run(double seconds, long long* sleep_ns, long long* pipe_ns) {
  long long end = now_ns(CLOCK_MONOTONIC) + (long long)(seconds * 1e9);
  while (now_ns(CLOCK_MONOTONIC) < end) {
    spin_part();
    long long t0 = now_ns(CLOCK_MONOTONIC);
    sleep_part();
    long long t1 = now_ns(CLOCK_MONOTONIC);
    pipe_part();
    long long t2 = now_ns(CLOCK_MONOTONIC);
    *sleep_ns += t1 - t0;
    *pipe_ns += t2 - t1;
  }
}

__attribute__((noinline)) void warmup(double seconds) {
  long long end = now_ns(CLOCK_MONOTONIC) + (long long)(seconds * 1e9);
  while (now_ns(CLOCK_MONOTONIC) < end) {
    spin_part();
    sleep_part();
    pipe_part();
  }
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3.0;
  if (pipe(fds) != 0 || pipe(go) != 0) return 1;
  printf("pid=%d\n", getpid());
  fflush(stdout);
  pthread_t t;
  pthread_create(&t, NULL, writer, NULL);
  long long sleep_ns = 0, pipe_ns = 0;
  warmup(0.5);
  run(seconds, &sleep_ns, &pipe_ns);
  stop = 1;
  close(go[1]);
  pthread_join(t, NULL);
  printf("sleep_ns=%lld pipe_ns=%lld\n", sleep_ns, pipe_ns);
  return 0;
}
