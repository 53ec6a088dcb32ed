#!/usr/bin/env bash
# Builds Kiln and runs every test (unit, integration, GUI under Xvfb, agent
# with BPF when root). The README's test command; CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
build="${KILN_BUILD_DIR:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${KILN_CMAKE_ARGS:-}
# KILN_BUILD_TARGETS builds only what a narrowed run needs (CI's extra passes).
cmake --build "$build" -j"$(nproc)" ${KILN_BUILD_TARGETS:+--target $KILN_BUILD_TARGETS}
# KILN_CTEST_ARGS narrows the run (CI's extra passes); the README command runs everything.
ctest --test-dir "$build" --output-on-failure --timeout 900 ${KILN_CTEST_ARGS:-}
