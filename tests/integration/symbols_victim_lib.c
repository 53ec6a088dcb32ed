/* A shared library for the symbolization tests: stripped with
   --strip-all it keeps only .dynsym, which names kiln_lib_exported but not
   the static kiln_lib_internal; its debug file names both. */
__attribute__((noinline)) static int kiln_lib_internal(int n) {
  volatile int sum = 0;
  for (int i = 0; i < n; ++i) sum += i ^ n;
  return sum;
}

int kiln_lib_exported(int n) { return kiln_lib_internal(n) + 1; }
