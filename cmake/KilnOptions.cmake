# All of Kiln's build switches, in one place.
option(KILN_BUILD_TESTS "Build doctest unit and integration tests" ON)
option(KILN_BUILD_GUI "Build the desktop window (Dear ImGui + GLFW + OpenGL)" ON)
option(KILN_BUILD_AGENT "Build kiln-agent (Linux, needs libbpf, bpftool, clang)" ON)
option(KILN_BUILD_BENCHMARKS "Build the benchmarks in tests/bench" ON)
option(KILN_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(KILN_WERROR "Treat compiler warnings as errors" OFF)
option(KILN_BUILD_FUZZERS "Build libFuzzer targets for the capture parsers (clang)" OFF)
set(KILN_FUZZ_SECONDS 60 CACHE STRING "Seconds per fuzzer for the kiln_fuzz target")
# The sanitizers beside libFuzzer's coverage: CI and short runs keep both. A
# long campaign can build a second tree with "undefined" alone, for about
# twice the executions, and replay its corpus in the ASan tree.
set(KILN_FUZZ_SANITIZERS "address,undefined" CACHE STRING "Sanitizers of the fuzz targets, besides fuzzer")
# A sanitizer report must stop the run, or libFuzzer does not count it: UBSan
# by default prints and goes on (two campaigns missed signed overflows so).
if(KILN_FUZZ_SANITIZERS)
  set(kiln_fuzz_sanitize ",${KILN_FUZZ_SANITIZERS}")
else()
  set(kiln_fuzz_sanitize "")
endif()
set(kiln_fuzz_flags -fsanitize=fuzzer${kiln_fuzz_sanitize} -fno-sanitize-recover=all)
set(kiln_fuzz_lib_flags -fsanitize=fuzzer-no-link${kiln_fuzz_sanitize} -fno-sanitize-recover=all)
# ingest/symbols reads ELF/DWARF with elfutils (libelf, libdw; Linux) or with
# LLVM's libraries (LLVMObject, LLVMDebugInfoDWARF; macOS, where there is no
# elfutils). auto: elfutils when found, else LLVM, else no ELF reading.
set(KILN_SYMBOLS_BACKEND auto CACHE STRING "ELF/DWARF reader for ingest/symbols: auto, elfutils or llvm")
set_property(CACHE KILN_SYMBOLS_BACKEND PROPERTY STRINGS auto elfutils llvm)
option(KILN_INSTALL_AGENT_SERVICE "Install kiln-agent's systemd unit and /etc/default/kiln-agent (the .deb does)" ON)
