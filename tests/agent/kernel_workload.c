/* Test program for kiln-agent: spends its time in the kernel.
 *   main -> read_loop -> read(/dev/zero) -> [kernel: entry_SYSCALL_64 ...]
 * Prints "pid=N" at start. Usage: kernel_workload SECONDS
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buffer[1 << 20];

static double wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void read_loop(int fd, double seconds) {
  double end = wall_seconds() + seconds;
  while (wall_seconds() < end)
    if (read(fd, buffer, sizeof(buffer)) < 0) break;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3.0;
  printf("pid=%d\n", getpid());
  fflush(stdout);
  int fd = open("/dev/zero", O_RDONLY);
  if (fd < 0) return 1;
  read_loop(fd, seconds);
  close(fd);
  return 0;
}
