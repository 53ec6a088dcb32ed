/* Test program for kiln-agent: a known call chain with a known CPU split.
 *
 *   main -> run_workload -> dispatch -> leaf_heavy   (3 parts of CPU time)
 *                                    -> leaf_light   (1 part)
 * plus a thread named "split-aux" (aux_main -> aux_leaf) that uses ~5%.
 *
 * Built with frame pointers, no inlining and no sibling calls so every
 * function keeps its frame. The split is by thread CPU time, so preemption
 * does not skew it. Prints "pid=N" at start and "cpu_seconds=S" (main thread)
 * at the end. Usage: split_workload SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "workload_clock.h"
#include <unistd.h>

static volatile unsigned long sink;
static volatile int stop;

__attribute__((noinline)) void spin_for(double cpu_seconds) {
  double end = thread_cpu_seconds() + cpu_seconds;
  while (thread_cpu_seconds() < end)
    for (int i = 0; i < 20000; ++i) sink += (unsigned long)i * 2654435761u;
}

__attribute__((noinline)) void leaf_heavy(void) { spin_for(0.003); }
__attribute__((noinline)) void leaf_light(void) { spin_for(0.001); }

__attribute__((noinline)) void dispatch(void) {
  leaf_heavy();
  leaf_light();
}

__attribute__((noinline)) void run_workload(double seconds) {
  double end = wall_seconds() + seconds;
  while (wall_seconds() < end) dispatch();
}

__attribute__((noinline)) void aux_leaf(void) { spin_for(0.0005); }

static void* aux_main(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "split-aux");
  while (!stop) {
    aux_leaf();
    usleep(9500);
  }
  return NULL;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 5.0;
  printf("pid=%d\n", getpid());
  fflush(stdout);
  pthread_t aux;
  pthread_create(&aux, NULL, aux_main, NULL);
  run_workload(seconds);
  stop = 1;
  pthread_join(aux, NULL);
  printf("cpu_seconds=%f\n", thread_cpu_seconds());
  return 0;
}
