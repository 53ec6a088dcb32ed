/* Test program for kiln-agent: busy for a moment, then exits, well before
 * the agent's next report. Prints "pid=N". Usage: short_workload SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void short_leaf(double seconds) {
  double end = cpu_seconds() + seconds;
  while (cpu_seconds() < end)
    for (int i = 0; i < 20000; ++i) sink += (unsigned long)i * 40503u;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 1.5;
  printf("pid=%d\n", getpid());
  fflush(stdout);
  short_leaf(seconds);
  return 0;
}
