#!/usr/bin/env bash
# Builds, once, a Debian sid root with the CPython versions Debian 12 lacks
# (3.13, 3.14, 3.15), for kiln-agent's Python test: sid_root.sh DIR.
#
# DIR is kept between runs (the build directory's tests/agent/sid-root): a
# complete root has DIR/.complete and is reused as it is. Building it takes
# about 75 s for debootstrap and 20 s for the interpreters (about 510 MB).
# The mirror is the host's own Debian mirror (from its apt sources); sid's
# Release file can be older than the clock, so apt inside the root does not
# check its validity date.
set -euo pipefail
root="$1"
if [[ -f "$root/.complete" ]]; then
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
rm -rf "$root"
mkdir -p "$(dirname "$root")"
start=$(date +%s)
echo "sid root: debootstrap --variant=minbase sid $root $mirror"
debootstrap --variant=minbase sid "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -n 20 "$root.log" >&2
  exit 1
}
mid=$(date +%s)
chroot "$root" apt-get -o Acquire::Check-Valid-Until=false update -qq >>"$root.log" 2>&1
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -o Acquire::Check-Valid-Until=false install -y -qq \
  --no-install-recommends python3.13 python3.14 python3.15 >>"$root.log" 2>&1 || {
  tail -n 20 "$root.log" >&2
  exit 1
}
end=$(date +%s)
for v in 3.13 3.14 3.15; do
  printf 'sid root: %s\n' "$(chroot "$root" "python$v" -c 'import sys; print(sys.executable, sys.version.split()[0], hex(sys.hexversion))')"
done
echo "sid root: debootstrap $((mid - start)) s, interpreters $((end - mid)) s, $(du -sh "$root" | cut -f1)"
touch "$root/.complete"
