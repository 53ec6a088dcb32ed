#!/bin/sh
# A long fuzzing campaign, the README's table:
#   fuzz_campaign.sh BUILD_DIR CORPUS_ROOT RUNS SECONDS NAME[:MAX_LEN]...
# Runs each named fuzzer (capture_pprof, elf, storage_decode, ...) until RUNS
# executions or SECONDS, one per core at a time, at the lowest priority, on
# CORPUS_ROOT/NAME (seed it with a `ninja kiln_fuzz` run first; campaigns on
# one corpus add up). -entropic=0: with corpora of large inputs, libFuzzer's
# entropic scheduling took 64 % of the time (UpdateFeatureFrequency).
# Do not pause it (SIGSTOP): libFuzzer's timeout is wall-clock, so the
# unit running at the time is reported as a timeout. Findings go to
# CORPUS_ROOT/artifacts/NAME-*, one line per fuzzer to
# CORPUS_ROOT/campaign.txt. Build BUILD_DIR with -DKILN_FUZZ_SANITIZERS=
# undefined for speed, then replay each corpus in the ASan build:
#   build-fuzz/ingest/capture/fuzz_capture_pprof -runs=0 CORPUS_ROOT/capture_pprof
set -u
build="$1"; root="$2"; runs="$3"; seconds="$4"; shift 4
# nice alone does not yield to other sessions where the kernel groups
# processes by session (autogroup): builds then ran at half speed. Not 19:
# starved, a unit can pass libFuzzer's wall-clock timeout.
echo 10 > /proc/self/autogroup 2>/dev/null || true
mkdir -p "$root/artifacts"
binary() {
  case "$1" in
    capture_*) echo "$build/ingest/capture/fuzz_$1" ;;
    elf) echo "$build/ingest/symbols/fuzz_elf" ;;
    storage_decode) echo "$build/storage/fuzz_storage_decode" ;;
  esac
}
one() {
  name="${1%%:*}"; max_len=65536
  case "$1" in *:*) max_len="${1#*:}" ;; esac
  bin="$(binary "$name")"
  [ -x "$bin" ] || { echo "$name: missing $bin" >> "$root/campaign.txt"; return; }
  mkdir -p "$root/$name"
  start=$(date +%s)
  nice -n 19 "$bin" -entropic=0 -runs="$runs" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$root/artifacts/$name-" "$root/$name" \
    > "$root/artifacts/$name.log" 2>&1
  rc=$?
  execs=$(grep -E '^stat::number_of_executed_units' "$root/artifacts/$name.log" | awk '{ print $2 }')
  findings=$(ls "$root/artifacts" | grep -c "^$name-")
  echo "$name max_len=$max_len rc=$rc seconds=$(($(date +%s) - start)) executions=$execs findings=$findings" \
    >> "$root/campaign.txt"
}
if [ "${FUZZ_CAMPAIGN_ONE:-}" ]; then one "$FUZZ_CAMPAIGN_ONE"; exit 0; fi
jobs=$(nproc)
for spec in "$@"; do echo "$spec"; done |
  xargs -P "$jobs" -I{} env FUZZ_CAMPAIGN_ONE={} sh "$0" "$build" "$root" "$runs" "$seconds"
