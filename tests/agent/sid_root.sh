#!/usr/bin/env bash
# Builds, once, a Debian sid root with runtimes Debian 12 lacks, for the
# tests: CPython 3.13, 3.14 and 3.15 (kiln-agent's Python test) and Go 1.27
# (the Go 1.20+ line table, symbols_go_test): sid_root.sh DIR.
#
# DIR is kept between runs (the clone's .cache/sid-root): a root with
# DIR/.complete and every package is reused as it is; missing packages are
# added. Building it takes about 100 s for debootstrap and 55 s for the
# packages (about 830 MB).
# The mirror is the host's own Debian mirror (from its apt sources); sid's
# Release file can be older than the clock, so apt inside the root does not
# check its validity date.
set -euo pipefail
root="$1"
packages=(python3.13 python3.14 python3.15 golang-go)
missing() {
  local p
  for p in "${packages[@]}"; do
    chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
if [[ -f "$root/.complete" && -z "$(missing)" ]]; then
  echo "sid root: $root (cached)"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "sid root: needs root (debootstrap, chroot)" >&2
  exit 77
fi
if ! command -v debootstrap >/dev/null; then
  echo "sid root: debootstrap is not installed (packaging/debian-packages.txt lists it)" >&2
  exit 1
fi
sources=(/etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list)
mirror="$(cat "${sources[@]}" 2>/dev/null | grep -E '^(URIs:|deb\s)' | grep -oE 'https?://[^ ]+' |
          grep -v -e security -e cloud.google -e nodesource | head -n1 || true)"
mirror="${mirror:-http://deb.debian.org/debian}"
start=$(date +%s)
if [[ ! -f "$root/.complete" ]]; then
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  echo "sid root: debootstrap --variant=minbase sid $root $mirror"
  debootstrap --variant=minbase sid "$root" "$mirror" >"$root.log" 2>&1 || {
    tail -n 20 "$root.log" >&2
    exit 1
  }
fi
mid=$(date +%s)
chroot "$root" apt-get -o Acquire::Check-Valid-Until=false update -qq >>"$root.log" 2>&1
# shellcheck disable=SC2046
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -o Acquire::Check-Valid-Until=false install -y -qq \
  --no-install-recommends $(missing) >>"$root.log" 2>&1 || {
  tail -n 20 "$root.log" >&2
  exit 1
}
end=$(date +%s)
for v in 3.13 3.14 3.15; do
  printf 'sid root: %s\n' "$(chroot "$root" "python$v" -c 'import sys; print(sys.executable, sys.version.split()[0], hex(sys.hexversion))')"
done
printf 'sid root: %s\n' "$(chroot "$root" env GOROOT=/usr/lib/go GOTELEMETRY=off /usr/bin/go version)"
echo "sid root: debootstrap $((mid - start)) s, packages $((end - mid)) s, $(du -sh "$root" | cut -f1)"
touch "$root/.complete"
