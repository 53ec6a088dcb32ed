#!/bin/sh
# Runs one libFuzzer target for a bounded time:
#   run_fuzzer.sh BUILD_DIR NAME BINARY SECONDS MAX_LEN [SEED_DIR...]
# New inputs go to BUILD_DIR/fuzz-corpus/NAME (kept between runs, so a
# campaign resumes), crashes to BUILD_DIR/fuzz-artifacts/NAME-*, the log to
# BUILD_DIR/fuzz-artifacts/NAME.log. Prints libFuzzer's closing line ("Done
# N runs in S second(s)"); exit status non-zero if it found something.
set -u
build="$1"; name="$2"; bin="$3"; seconds="$4"; max_len="$5"; shift 5
[ -x "$bin" ] || { echo "missing $bin"; exit 1; }
mkdir -p "$build/fuzz-corpus/$name" "$build/fuzz-artifacts"
existing=""
for s in "$@"; do [ -d "$s" ] && existing="$existing $s"; done
echo "== $name for ${seconds}s"
# shellcheck disable=SC2086
if ! "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$name-" "$build/fuzz-corpus/$name" $existing \
    > "$build/fuzz-artifacts/$name.log" 2>&1; then
  echo "$name FAILED, see $build/fuzz-artifacts/$name.log"
  grep -m 3 -E "ERROR|SUMMARY|runtime error" "$build/fuzz-artifacts/$name.log"
  exit 1
fi
grep -E "^Done [0-9]+ runs" "$build/fuzz-artifacts/$name.log" | tail -n 1
