#!/usr/bin/env bash
# Builds the Debian packages with CPack from this build tree and checks them
# the way dpkg sees them: names, versions, the files each installs (binaries,
# desktop entry, icons, metainfo, MIME types, the agent's disabled systemd
# unit and its conffile), the run-time dependencies dpkg-shlibdeps computed,
# and that the unpacked kiln runs. Prints the package sizes.
#   package_test.sh BUILD_DIR VERSION
set -euo pipefail
build="$1"; version="$2"
out="$(mktemp -d /tmp/kiln-package-test-XXXXXX)"
trap 'rm -rf "$out"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }
# grep that reads all its input: `grep -q` stops at the first match, and
# under pipefail the writer's SIGPIPE then fails the check (gio mime, now
# and then: its first line already names kiln.desktop).
has() { grep "$@" >/dev/null; }

for tool in cpack dpkg-deb dpkg-shlibdeps desktop-file-validate update-desktop-database appstreamcli gio \
            update-mime-database; do
  command -v "$tool" >/dev/null || { echo "FAILED: $tool is not installed (packaging/install-deps.sh installs it)"; exit 1; }
done

(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; exit 1; }
arch="$(dpkg --print-architecture)"
kiln_deb="$out/kiln_${version}_${arch}.deb"
agent_deb="$out/kiln-agent_${version}_${arch}.deb"
check "kiln package built" "[ -f '$kiln_deb' ]"
check "kiln-agent package built" "[ -f '$agent_deb' ]"
[ $fail -eq 0 ] || { ls -l "$out"; cat "$out/cpack.log"; exit 1; }

field() { dpkg-deb -f "$1" "$2"; }
files() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./|/|'; }

# kiln: the window and its desktop integration.
kf="$(files "$kiln_deb")"
for f in /usr/bin/kiln /usr/share/applications/kiln.desktop /usr/share/metainfo/dev.kiln.Kiln.metainfo.xml \
         /usr/share/mime/packages/kiln.xml /usr/share/icons/hicolor/scalable/apps/kiln.svg \
         /usr/share/icons/hicolor/48x48/apps/kiln.png /usr/share/icons/hicolor/256x256/apps/kiln.png; do
  check "kiln installs $f" "grep -qx '$f' <<<\"\$kf\""
done
check "kiln installs no agent file" "! grep -q 'kiln-agent' <<<\"\$kf\""
kdeps="$(field "$kiln_deb" Depends)"
echo "kiln Depends: $kdeps"
for lib in libc6 'libgrpc++' librocksdb libglfw3 libprotobuf; do
  check "kiln depends on $lib" "grep -q '$lib' <<<\"\$kdeps\""
done
check "kiln version is $version" "[ \"\$(field '$kiln_deb' Version)\" = '$version' ]"

# kiln-agent: the agent, a disabled unit and its flags as a conffile.
af="$(files "$agent_deb")"
for f in /usr/bin/kiln-agent /lib/systemd/system/kiln-agent.service /etc/default/kiln-agent; do
  check "kiln-agent installs $f" "grep -qx '$f' <<<\"\$af\""
done
adeps="$(field "$agent_deb" Depends)"
echo "kiln-agent Depends: $adeps"
check "kiln-agent depends on libbpf" "grep -q 'libbpf' <<<\"\$adeps\""
check "kiln-agent does not pull in the GUI" "! grep -q 'libglfw' <<<\"\$adeps\""
mkdir -p "$out/control"
dpkg-deb -e "$agent_deb" "$out/control"
check "/etc/default/kiln-agent is a conffile" "grep -qx /etc/default/kiln-agent '$out/control/conffiles'"
check "the agent's postinst does not enable the service" "! grep -q 'enable' '$out/control/postinst'"

# Unpacked into a throwaway root: the files are what they claim to be.
root="$out/root"
dpkg-deb -x "$kiln_deb" "$root"
dpkg-deb -x "$agent_deb" "$root"
check "desktop entry validates" "desktop-file-validate '$root/usr/share/applications/kiln.desktop'"
check "desktop entry opens files (Exec with %F, MimeType)" \
  "grep -q '^Exec=kiln %F' '$root/usr/share/applications/kiln.desktop' && grep -q '^MimeType=.*application/x-pprof' '$root/usr/share/applications/kiln.desktop'"
check "metainfo validates" "appstreamcli validate --no-net '$root/usr/share/metainfo/dev.kiln.Kiln.metainfo.xml'"
check "unpacked kiln prints its version" "[ \"\$('$root/usr/bin/kiln' --version)\" = 'kiln $version' ]"
check "unpacked kiln-agent prints its version" "'$root/usr/bin/kiln-agent' -version 2>&1 | has '$version'"
check "the unit runs the packaged agent with the flags file" \
  "grep -q '^ExecStart=/usr/bin/kiln-agent \$KILN_AGENT_FLAGS' '$root/lib/systemd/system/kiln-agent.service' && grep -q '^EnvironmentFile=/etc/default/kiln-agent' '$root/lib/systemd/system/kiln-agent.service'"
# What a file manager sees (GIO reads the installed MIME types and desktop
# entries): a pprof capture is application/x-pprof and opens with Kiln.
update-mime-database "$root/usr/share/mime" >/dev/null 2>&1
update-desktop-database "$root/usr/share/applications"
cp "$(dirname "$0")/../data/corpus/pprof/sample.cpu.pb.gz" "$out/sample.cpu.pb.gz"
printf 'main;work 1\n' >"$out/stacks.folded"
mkdir -p "$out/home"
# PATH: GIO hides entries whose program it cannot find.
gio_env=(env PATH="$root/usr/bin:$PATH" XDG_DATA_HOME="$out/home" XDG_CONFIG_HOME="$out/home" XDG_DATA_DIRS="$root/usr/share:/usr/share")
check "a .pb.gz capture is application/x-pprof to GIO" \
  "\"\${gio_env[@]}\" gio info -a standard::content-type '$out/sample.cpu.pb.gz' | has 'application/x-pprof'"
check "a .folded file is text/x-folded-stacks to GIO" \
  "\"\${gio_env[@]}\" gio info -a standard::content-type '$out/stacks.folded' | has 'text/x-folded-stacks'"
check "Kiln is the application GIO opens pprof captures with" \
  "\"\${gio_env[@]}\" gio mime application/x-pprof | has 'kiln.desktop'"

if command -v systemd-analyze >/dev/null; then
  # verify wants the unit's programs in place: a copy whose paths point
  # into the unpacked root, everything else as packaged.
  mkdir -p "$out/unit"
  sed "s|/usr/bin/kiln-agent|$root/usr/bin/kiln-agent|; s|/etc/default/kiln-agent|$root/etc/default/kiln-agent|" \
    "$root/lib/systemd/system/kiln-agent.service" >"$out/unit/kiln-agent.service"
  check "systemd-analyze verify accepts the unit" \
    "systemd-analyze verify '$out/unit/kiln-agent.service' >'$out/verify.log' 2>&1 || { cat '$out/verify.log'; false; }"
fi

echo "package sizes: kiln $(du -k "$kiln_deb" | cut -f1) KiB, kiln-agent $(du -k "$agent_deb" | cut -f1) KiB" \
     "(installed: kiln $(field "$kiln_deb" Installed-Size) KiB, kiln-agent $(field "$agent_deb" Installed-Size) KiB)"
exit $fail
