#!/bin/sh
# Runs the symbol readers' fuzzers for a bounded time each:
#   run_fuzzers.sh BUILD_DIR SECONDS SEEDS_DIR
# elf: ELF files, seeded with the test binaries (SEEDS_DIR, testbin/); ELF
# files are larger than text captures: the test binaries are allowed whole.
# gopclntab: Go line tables, seeded with the .gopclntab of a Go tool on this
# machine (Debian's golang-go) when there is one.
set -u
run="$(dirname "$0")/../../../cmake/run_fuzzer.sh"
"$run" "$1" elf "$1/ingest/symbols/fuzz_elf" "$2" 131072 "$3" || exit 1
seeds="$1/fuzz-seeds/gopclntab"
mkdir -p "$seeds"
# Debian 12's Go (1.19: the 1.18 header) and, when the tests built the
# clone's sid root, sid's (1.27: the 1.20 header).
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
for goroot in /usr/lib/go-* "$repo"/.cache/sid-root/usr/lib/go-*; do
  for t in buildid pack preprofile; do
    tool="$goroot/pkg/tool/linux_amd64/$t"
    [ -f "$tool" ] && command -v objcopy >/dev/null || continue
    objcopy -O binary --only-section=.gopclntab "$tool" "$seeds/$(basename "$goroot")-$t.gopclntab" 2>/dev/null || true
    break
  done
done
exec "$run" "$1" gopclntab "$1/ingest/symbols/fuzz_gopclntab" "$2" 1048576 "$seeds"
