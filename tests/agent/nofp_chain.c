/* The shared-library half of nofp_workload's call chain, built like the
 * executable: -O2 -fomit-frame-pointer, so only call frame information can
 * walk through it. Each function keeps a frame of its own (a stack buffer)
 * and does work after its call, so the compiler neither inlines it nor turns
 * the call into a jump.
 *
 *   chain_1 -> chain_2 -> ... -> chain_6 -> leaf_heavy | leaf_light
 */
#include "workload_clock.h"

static volatile unsigned long sink;

/* rbp is an ordinary register here: fill it with non-pointers so a
 * frame-pointer walk through this code goes nowhere. */
__attribute__((noinline)) static void spin_for(double cpu_seconds) {
  double end = thread_cpu_seconds() + cpu_seconds;
  while (thread_cpu_seconds() < end) {
    unsigned long a = sink, b = 3, c = 5, d = 7, e = 11, f = 13;
    for (int i = 0; i < 20000; ++i) {
      a = a * 2654435761u + b;
      b ^= a >> 3;
      c += b * d;
      d = d * 31 + e;
      e ^= c;
      f += a ^ e;
    }
    sink = a + b + c + d + e + f;
  }
}

__attribute__((noinline)) void leaf_heavy(void) {
  volatile char pad[24];
  pad[0] = 1;
  spin_for(0.003);
  sink += pad[0];
}

__attribute__((noinline)) void leaf_light(void) {
  volatile char pad[40];
  pad[0] = 2;
  spin_for(0.001);
  sink += pad[0];
}

#define CHAIN(name, next)                   \
  __attribute__((noinline)) void name(int which) { \
    volatile char pad[16 + 8 * (which & 1)]; \
    pad[0] = (char)which;                   \
    next(which);                            \
    sink += pad[0];                         \
  }

static void leaf(int which) {
  if (which) leaf_heavy(); else leaf_light();
}
CHAIN(chain_6, leaf)
CHAIN(chain_5, chain_6)
CHAIN(chain_4, chain_5)
CHAIN(chain_3, chain_4)
CHAIN(chain_2, chain_3)
CHAIN(chain_1, chain_2)
