#!/bin/sh
# Runs every capture fuzzer for a bounded time: run_fuzzers.sh BUILD_DIR
# SECONDS CORPUS_DIR. Seeds: the capture corpus (tests/data/corpus) and
# fuzz/seeds/ (see cmake/run_fuzzer.sh for where inputs and crashes go).
# Exit status is non-zero if any fuzzer found something.
set -u
build="$1"; seconds="$2"; corpus="$3"
here="$(dirname "$0")"
seeds_dir="$here/seeds"
status=0
for name in any pprof perf_script folded otlp otlp_json; do
  case $name in
    any) seeds="$corpus $seeds_dir" ;;
    pprof|otlp) seeds="$corpus/pprof $corpus/parca" ;;
    perf_script) seeds="$corpus/flamegraph $corpus/speedscope" ;;
    folded) seeds="$corpus/speedscope/folded $corpus/flamegraph/results" ;;
    otlp_json) seeds="$seeds_dir" ;;
  esac
  # shellcheck disable=SC2086
  "$here/../../../cmake/run_fuzzer.sh" "$build" "capture_$name" "$build/ingest/capture/fuzz_capture_$name" \
    "$seconds" 65536 $seeds || status=1
done
exit $status
