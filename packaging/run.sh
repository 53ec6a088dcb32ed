#!/usr/bin/env bash
# Builds Kiln and starts it (window + OTLP receiver on 0.0.0.0:11000, store in
# ~/.local/share/kiln). Extra arguments go to kiln, e.g. --headless.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh >&2
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${KILN_CMAKE_ARGS:-} >&2
cmake --build build -j"$(nproc)" >&2
exec ./build/app/kiln "$@"
