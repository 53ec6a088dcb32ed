// A small C program for the symbol reader tests: static and global
// functions, a loop, a helper the optimizer may inline, and a call through a
// pointer so nothing is folded away.
#include <stdio.h>
#include <stdlib.h>

static int square(int x) { return x * x; }

__attribute__((noinline)) int sum_of_squares(int n) {
  int total = 0;
  for (int i = 0; i < n; ++i) {
    total += square(i);
  }
  return total;
}

__attribute__((noinline)) static long fib(int n) {
  if (n < 2) return n;
  return fib(n - 1) + fib(n - 2);
}

typedef long (*op_fn)(int);

__attribute__((noinline)) long apply(op_fn f, int v) { return f(v) + 1; }

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10;
  long r = apply(fib, n % 20);
  printf("%d %ld\n", sum_of_squares(n), r);
  return 0;
}
