#!/bin/bash
# The window live on a developer's loop, for its RSS (issue 29 row 10):
# kiln (flamegraph, Last 15m) under Xvfb, fed by kiln-agent (20 Hz, off-CPU
# at 0.1) sampling this host while three of kiln's unit test binaries run
# once (large DWARF), then every minute a compile and a freshly built small
# program (a new build id each time), python every 20 s. Prints the window's
# RSS and CPU ticks every 30 s. Needs root (the agent), Xvfb, a built tree.
#
#   tests/bench/window_live_rss.sh [BUILD_DIR] [SECONDS]
#   HEAPTRACK_AT=90 tests/bench/window_live_rss.sh   # heaptrack -p from 90 s on
set -u
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$src/build}"
duration="${2:-600}"
work="$(mktemp -d /tmp/kiln-window-rss-XXXXXX)"
export DISPLAY=:91
Xvfb :91 -screen 0 1400x900x24 >/dev/null 2>&1 &
xp=$!
sleep 2
"$build/app/kiln" --data-dir "$work/data" --listen 127.0.0.1:11091 --tab flamegraph --size 1400x900 \
  > "$work/kiln.out" 2>&1 &
kp=$!
sleep 3
"$build/agent/kiln-agent" -collection-agent 127.0.0.1:11091 -disable-tls -off-cpu-threshold 0.1 \
  > "$work/agent.out" 2>&1 &
ap=$!
(
  for t in storage/storage_test ui/ui_test ingest/capture/capture_test; do
    KILN_SOURCE_DIR="$src" KILN_BINARY_DIR="$build" timeout 20 "$build/$t" > /dev/null 2>&1
  done
  i=0
  while true; do
    i=$((i + 1))
    nice -n 10 c++ -I"$src" -O2 -g -std=c++20 -o "$work/x.o" -c "$src/storage/model/sample_type.cpp"
    printf '#include <stdio.h>\nvolatile long k=%d;\nlong spin(long n){long s=0;for(long j=0;j<n;j++)s+=j^k;return s;}\nint main(){long s=0;for(int r=0;r<40;r++)s+=spin(5000000);printf("%%ld",s);return 0;}\n' \
      "$i" > "$work/p$i.c"
    gcc -g -O1 -o "$work/p$i" "$work/p$i.c" && "$work/p$i" > /dev/null
    sleep 45
  done
) > /dev/null 2>&1 &
wp=$!
( while true; do python3 -c "
import time
e = time.time() + 5
while time.time() < e: sum(range(1000))"; sleep 20; done ) > /dev/null 2>&1 &
pp=$!
hp=""
start=$SECONDS
while [ $((SECONDS - start)) -lt "$duration" ]; do
  echo "t=$((SECONDS - start))s $(grep -E 'VmRSS|VmHWM|RssAnon|RssFile' /proc/$kp/status | tr -s ' ' | tr '\n' ' ') cpu_ticks=$(awk '{print $14+$15}' /proc/$kp/stat)"
  if [ -n "${HEAPTRACK_AT:-}" ] && [ $((SECONDS - start)) -ge "$HEAPTRACK_AT" ] && [ -z "$hp" ]; then
    heaptrack -o "$work/heaptrack" -p $kp > "$work/heaptrack.out" 2>&1 &
    hp=$!
  fi
  sleep 30
done
kill $ap $wp $pp 2>/dev/null
pkill -f "python3 -c" 2>/dev/null
sleep 2
kill $kp
wait $kp 2>/dev/null
kill $xp
[ -n "$hp" ] && wait $hp && echo "heaptrack data: $work/heaptrack.zst"
tail -1 "$work/agent.out"
echo "kept in $work"
