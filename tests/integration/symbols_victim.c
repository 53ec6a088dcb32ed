/* A small program whose native frames the symbolization tests name: the
   tests send OTLP frames at addresses of these functions (from `nm`) and
   expect kiln to find the names in this file, its stripped copy's debug
   file, or from debuginfod. Built with -g; never run. */
#include <stdio.h>
#include <stdlib.h>

#ifndef VICTIM_VARIANT
#define VICTIM_VARIANT 1
#endif

__attribute__((noinline)) int kiln_victim_leaf(int n) {
  volatile int sum = VICTIM_VARIANT;
  for (int i = 0; i < n; ++i) sum += i * i;
  return sum;
}

__attribute__((noinline)) int kiln_victim_middle(int n) {
  return kiln_victim_leaf(n) + kiln_victim_leaf(n / 2);
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10;
  printf("%d\n", kiln_victim_middle(n));
  return 0;
}
