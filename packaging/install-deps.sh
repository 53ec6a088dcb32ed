#!/usr/bin/env bash
# Installs the packages Kiln builds, runs and tests with (listed in
# packaging/debian-packages.txt) when any is missing. Debian 12 / Ubuntu
# 22.04+; on macOS it installs the Homebrew formulas instead.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if [[ "$(uname -s)" == Darwin ]]; then
  brew install cmake ninja pkg-config grpc protobuf rocksdb doctest cli11 glfw abseil zstd llvm xz curl re2 nlohmann-json prometheus-cpp
  exit 0
fi

mapfile -t wanted < <(grep -v '^\s*#' "$here/debian-packages.txt" | grep -v '^\s*$')
missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if (( ${#missing[@]} )); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# npm installs the official MCP SDK that mcp_sdk_test drives `kiln mcp`
# with. Debian ships it as a package of its own; NodeSource's nodejs
# carries it (and conflicts with Debian's), so only a missing command asks
# for the package.
if ! command -v npm >/dev/null 2>&1; then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "setup: installing npm"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
echo "setup: all packages present"
