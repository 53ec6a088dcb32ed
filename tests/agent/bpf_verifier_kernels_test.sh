#!/usr/bin/env bash
# kiln-agent's BPF programs must pass the verifier of Debian 12's kernel
# (6.1) as well as the running one (which the agent tests load them into).
# Boots that kernel under qemu (software emulation, ~15 s) with a tiny
# initramfs: busybox, bpftool and the object; bpftool loads every program
# with CO-RE relocations against that kernel's own BTF, as the agent does.
#
# Usage: bpf_verifier_kernels_test.sh SAMPLER_BPF_OBJECT WORK_DIR
# The kernel package is downloaded with apt once and kept in WORK_DIR.
set -euo pipefail
obj=$(realpath "$1")
work=$2
skip() { echo "SKIP: $*"; exit 77; }
[ "$(uname -m)" = x86_64 ] || skip "the kernels checked here are x86-64 builds"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed (qemu-system-x86)"
[ -x /bin/busybox ] || skip "/bin/busybox is not installed (busybox-static)"
bpftool=$(command -v bpftool || echo /usr/sbin/bpftool)
[ -x "$bpftool" ] || skip "bpftool is not installed"

mkdir -p "$work"
cd "$work"
deb=$(ls linux-image-6.1.0-*-amd64_*.deb 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$deb" ]; then
  pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' | sort -V | tail -1)
  [ -n "$pkg" ] || skip "no linux-image-6.1.0-*-amd64 package in this machine's apt sources (not Debian 12)"
  apt-get download -q "$pkg" >/dev/null 2>&1 || skip "cannot download $pkg (no package registry?)"
  deb=$(ls linux-image-6.1.0-*-amd64_*.deb | sort -V | tail -1)
fi
rm -rf kernel initrd && mkdir -p kernel initrd/{bin,lib,lib64,proc,sys,tmp}
dpkg-deb -x "$deb" kernel
vmlinuz=$(ls kernel/boot/vmlinuz-* | head -1)

cp /bin/busybox "$bpftool" initrd/bin/
for lib in $(ldd "$bpftool" | awk '/=>/ {print $3}'); do cp -L "$lib" initrd/lib/; done
cp -L /lib64/ld-linux-x86-64.so.2 initrd/lib64/
cp "$obj" initrd/sampler.bpf.o
cat > initrd/init <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export LD_LIBRARY_PATH=/lib
mount -t proc proc /proc
mount -t sysfs sys /sys
mkdir -p /sys/fs/bpf && mount -t bpf bpf /sys/fs/bpf
echo "KERNEL $(uname -r)"
/bin/bpftool prog loadall /sampler.bpf.o /sys/fs/bpf/kiln > /tmp/load.log 2>&1
echo "LOADALL rc=$?"
tail -40 /tmp/load.log
/bin/bpftool prog show | grep ' name ' | sed 's/^/PROG /'
echo DONE
poweroff -f
INIT
chmod +x initrd/init
(cd initrd && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip > ../initrd.gz)

timeout 300 qemu-system-x86_64 -m 1024 -kernel "$vmlinuz" -initrd initrd.gz \
  -append "console=ttyS0 panic=-1 quiet" -nographic -no-reboot > qemu.log 2>&1 || true
tr -d '\r' < qemu.log | grep -a -E '^(KERNEL|LOADALL|PROG|DONE|libbpf|Error)' || true
grep -a -q "LOADALL rc=0" qemu.log || { echo "FAIL: the verifier of $(basename "$vmlinuz") refused the programs"; exit 1; }
programs=$(grep -a -c '^PROG' qemu.log || true)
# on_cpu_sample, unwind_user, on_sched_switch, unwind_user_offcpu, on_process_exec, on_process_exit
[ "$programs" -eq 6 ] || { echo "FAIL: $programs programs loaded, want 6"; exit 1; }
echo "PASS: all 6 programs verified under $(basename "$vmlinuz")"
