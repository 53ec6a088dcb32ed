#!/bin/sh
# Runs the ELF fuzzer for a bounded time: run_fuzzers.sh BUILD_DIR SECONDS
# SEEDS_DIR. Seeds: the test binaries (testbin/); new inputs go to
# BUILD_DIR/fuzz-corpus/elf, crashes to BUILD_DIR/fuzz-artifacts/. Exit
# status is non-zero if the fuzzer found something.
set -u
build="$1"; seconds="$2"; seeds="$3"
bin="$build/ingest/symbols/fuzz_elf"
[ -x "$bin" ] || { echo "missing $bin"; exit 1; }
mkdir -p "$build/fuzz-corpus/elf" "$build/fuzz-artifacts"
echo "== fuzz_elf for ${seconds}s"
# ELF files are larger than text captures: allow the test binaries whole.
if ! "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=131072 \
    -artifact_prefix="$build/fuzz-artifacts/elf-" "$build/fuzz-corpus/elf" "$seeds" \
    > "$build/fuzz-artifacts/elf.log" 2>&1; then
  echo "fuzz_elf FAILED, see $build/fuzz-artifacts/elf.log"; exit 1
fi
tail -n 1 "$build/fuzz-artifacts/elf.log"
