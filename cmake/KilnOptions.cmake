# All of Kiln's build switches, in one place.
option(KILN_BUILD_TESTS "Build doctest unit and integration tests" ON)
option(KILN_BUILD_GUI "Build the desktop window (Dear ImGui + GLFW + OpenGL)" ON)
option(KILN_BUILD_AGENT "Build kiln-agent (Linux, needs libbpf, bpftool, clang)" ON)
option(KILN_BUILD_BENCHMARKS "Build the benchmarks in tests/bench" ON)
option(KILN_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(KILN_WERROR "Treat compiler warnings as errors" OFF)
option(KILN_BUILD_FUZZERS "Build libFuzzer targets for the capture parsers (clang)" OFF)
set(KILN_FUZZ_SECONDS 60 CACHE STRING "Seconds per fuzzer for the kiln_fuzz target")
# ingest/symbols reads ELF/DWARF with elfutils (libelf, libdw; Linux) or with
# LLVM's libraries (LLVMObject, LLVMDebugInfoDWARF; macOS, where there is no
# elfutils). auto: elfutils when found, else LLVM, else no ELF reading.
set(KILN_SYMBOLS_BACKEND auto CACHE STRING "ELF/DWARF reader for ingest/symbols: auto, elfutils or llvm")
set_property(CACHE KILN_SYMBOLS_BACKEND PROPERTY STRINGS auto elfutils llvm)
option(KILN_INSTALL_AGENT_SERVICE "Install kiln-agent's systemd unit and /etc/default/kiln-agent (the .deb does)" ON)
