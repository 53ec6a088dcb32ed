#!/bin/sh
# Runs the ELF fuzzer for a bounded time: run_fuzzers.sh BUILD_DIR SECONDS
# SEEDS_DIR. Seeds: the test binaries (testbin/). ELF files are larger than
# text captures: the test binaries are allowed whole.
set -u
exec "$(dirname "$0")/../../../cmake/run_fuzzer.sh" "$1" elf "$1/ingest/symbols/fuzz_elf" "$2" 131072 "$3"
