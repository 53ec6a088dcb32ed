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
for tool in /usr/lib/go/pkg/tool/linux_amd64/pack /usr/lib/go-*/pkg/tool/linux_amd64/pack; do
  if [ -f "$tool" ] && command -v objcopy >/dev/null; then
    objcopy -O binary --only-section=.gopclntab "$tool" "$seeds/pack.gopclntab" 2>/dev/null && break
  fi
done
exec "$run" "$1" gopclntab "$1/ingest/symbols/fuzz_gopclntab" "$2" 524288 "$seeds"
