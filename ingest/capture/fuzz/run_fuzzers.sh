#!/bin/sh
# Runs every capture fuzzer for a bounded time: run_fuzzers.sh BUILD_DIR
# SECONDS CORPUS_DIR. Seeds: the capture corpus (tests/data/corpus) and fuzz/seeds/. New inputs go to BUILD_DIR/fuzz-corpus/<name>; crashes
# to BUILD_DIR/fuzz-artifacts/. Exit status is non-zero if any fuzzer found
# something.
set -u
build="$1"; seconds="$2"; corpus="$3"
seeds_dir="$(dirname "$0")/seeds"
status=0
for name in any pprof perf_script folded otlp otlp_json; do
  bin="$build/ingest/capture/fuzz_capture_$name"
  [ -x "$bin" ] || { echo "missing $bin"; status=1; continue; }
  mkdir -p "$build/fuzz-corpus/$name" "$build/fuzz-artifacts"
  case $name in
    any) seeds="$corpus $seeds_dir" ;;
    pprof|otlp) seeds="$corpus/pprof $corpus/parca" ;;
    perf_script) seeds="$corpus/flamegraph $corpus/speedscope" ;;
    folded) seeds="$corpus/speedscope/folded $corpus/flamegraph/results" ;;
    otlp_json) seeds="$seeds_dir" ;;
  esac
  existing=""
  for s in $seeds; do [ -d "$s" ] && existing="$existing $s"; done
  echo "== fuzz_capture_$name for ${seconds}s"
  # shellcheck disable=SC2086
  if ! "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
      -artifact_prefix="$build/fuzz-artifacts/$name-" "$build/fuzz-corpus/$name" $existing \
      > "$build/fuzz-artifacts/$name.log" 2>&1; then
    echo "fuzz_capture_$name FAILED, see $build/fuzz-artifacts/$name.log"; status=1
  else
    tail -n 1 "$build/fuzz-artifacts/$name.log"
  fi
done
exit $status
