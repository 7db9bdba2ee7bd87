#!/usr/bin/env bash
# kernlab: boot Debian's own kernel under QEMU (TCG, no KVM needed) with
# Soft-RoCE, configfs and RDMA netlink, and run rdmaform's guest tests in
# it as root. `make kernel-test` calls this script.
#
# What it does, in order:
#   1. fetch: `apt-get download` the kernel and user-space packages into a
#      cache directory (kept between runs) and unpack them with
#      `dpkg-deb -x`; nothing is installed into this machine's /boot or
#      /lib/modules.
#   2. build: a static rdmaform and the guest test binaries
#      (`go test -c -tags kernlab`), an initramfs with busybox, kmod, the
#      RDMA modules and their dependencies, iproute2's ip/rdma/dcb, ethtool, rdma-core's
#      tools and rxe provider.
#   3. boot: qemu-system-x86_64 with the tests as /init's work; the serial
#      console carries each test's output, its exit status and coverage.
#      A test that prints a KERNLAB-REBOOT NAME line gets a second boot
#      with the same virtio disk (/dev/vda, blank at the first), running
#      only the tests that asked, with KERNLAB_BOOT=2 (guest/ledger_test.go).
#   4. judge: a test that fails, a skip under RDMAFORM_REQUIRE_LAB=1, a
#      kernel panic, a missing module, or a guest that hangs past
#      KERNLAB_TIMEOUT fails this script.
#
# Environment:
#   RDMAFORM_KERNLAB_CACHE  cache directory (default /var/cache/rdmaform-kernlab)
#   KERNLAB_TIMEOUT         seconds the guest may run (default 900)
#   KERNLAB_RUN             a -test.run pattern for every guest test binary
#   KERNLAB_OUT             where the console log and coverage go (default a temp dir)
#   RDMAFORM_REQUIRE_LAB=1  a skipped guest test is a failure
set -euo pipefail

top=$(cd "$(dirname "$0")/../../.." && pwd)
cache=${RDMAFORM_KERNLAB_CACHE:-/var/cache/rdmaform-kernlab}
timeout_s=${KERNLAB_TIMEOUT:-900}
# A guest test binary may run until a minute before the guest's own bound
# (it was a fixed 10 minutes, which a loaded machine reached first).
gotimeout=$(( timeout_s > 120 ? timeout_s - 60 : timeout_s ))s
require=${RDMAFORM_REQUIRE_LAB:-}
t0=$(date +%s.%N)

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
die() { echo "kernlab: FAIL: $*" >&2; exit 1; }
# A missing tool skips the lab with the reason, as a lab test skips;
# under RDMAFORM_REQUIRE_LAB=1 it fails.
need() {
  command -v "$1" >/dev/null 2>&1 && return
  [ "$require" = 1 ] && die "$1 is missing: apt-get install -y $2 (and RDMAFORM_REQUIRE_LAB=1)"
  echo "kernlab: SKIP: $1 is missing: apt-get install -y $2" >&2
  exit 0
}

need qemu-system-x86_64 qemu-system-x86
need dpkg-deb dpkg
need apt-get apt
need cpio cpio
need depmod kmod
need go "the Go toolchain"
need unshare util-linux
need ip iproute2

# ---------------------------------------------------------------- fetch
# The kernel is the one linux-image-amd64 depends on today.
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$kpkg" ] || die "apt-cache knows no linux-image-amd64 (run apt-get update)"
kver=${kpkg#linux-image-}
pkgs=("$kpkg" busybox-static kmod libkmod2 liblzma5 libzstd1 libssl3 iproute2 libmnl0 libelf1 libbpf1 libcap2 libselinux1 libpcre2-8-0 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libcom-err2 libkrb5support0 libkeyutils1 zlib1g libdb5.3 libxtables12 libatm1 libbsd0 libmd0 rdmacm-utils ibverbs-utils ibverbs-providers libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libc6 libgcc-s1 iputils-ping ethtool perftest libibumad3 libpci3 libudev1 util-linux)
# Debian's real update-grub and what grub-mkconfig runs (grub-probe,
# grub-mkrelpath, grub-script-check and their libraries), for the kernel
# command line across a second boot (guest/cmdline_test.go).
pkgs+=(grub-common grub2-common libdevmapper1.02.1)
mkdir -p "$cache/debs"
# The stamp names the kernel and the package list, so a changed list
# unpacks again.
stamp="$cache/x/.unpacked-$kver-$(printf '%s\n' "${pkgs[@]}" | cksum | cut -d' ' -f1)"
if [ ! -e "$stamp" ]; then
  echo "kernlab: fetching ${#pkgs[@]} packages into $cache/debs"
  (cd "$cache/debs" && apt-get download "${pkgs[@]}" >/dev/null 2>"$cache/download.err") ||
    { cat "$cache/download.err" >&2; die "apt-get download failed"; }
  rm -rf "$cache/x" && mkdir -p "$cache/x"
  for d in "$cache"/debs/*.deb; do dpkg-deb -x "$d" "$cache/x"; done
  # The package leaves modules.dep to its postinst: make it here.
  depmod -b "$cache/x" "$kver"
  touch "$stamp"
fi
x=$cache/x
[ -e "$x/boot/vmlinuz-$kver" ] || die "no kernel image in $x/boot (package $kpkg)"

# ---------------------------------------------------------------- build
work=$(mktemp -d /tmp/kernlab.XXXXXX)
out=${KERNLAB_OUT:-$work/out}
mkdir -p "$out"
trap 'rm -rf "$work/root" "$work/initrd.gz" "$work/disk.img" "$work/cmdline.img"' EXIT
r=$work/root
mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,lib/x86_64-linux-gnu,lib64,etc,proc,sys,dev,run,tmp,tests,var/tmp,etc/modules-load.d,root}

# busybox for the shell and the basics; everything rdmaform runs is the real tool.
cp "$x/bin/busybox" "$r/bin/busybox"
for a in sh mount umount mkdir cat echo ls ln sleep poweroff sync rm cp grep sed head tail tr wc date hostname uname dmesg env true false test mv chmod touch readlink basename dirname seq printf kill ps sysctl; do
  ln -sf busybox "$r/bin/$a"
done

libdir=$x/usr/lib/x86_64-linux-gnu:$x/lib/x86_64-linux-gnu
copy_bin() { # copy_bin SRC DEST: a binary and the libraries it needs
  install -m 0755 "$1" "$r$2"
  LD_LIBRARY_PATH=$libdir ldd "$1" 2>/dev/null | awk '/=> \// {print $3} /^\t\/lib64/ {print $1}' | while read -r lib; do
    case "$lib" in
      */ld-linux-x86-64.so.2) cp -L "$lib" "$r/lib64/ld-linux-x86-64.so.2" ;;
      *) cp -L -n "$lib" "$r/lib/x86_64-linux-gnu/" ;;
    esac
  done
}
copy_bin "$x/bin/kmod" /sbin/kmod
for a in modprobe lsmod rmmod insmod depmod modinfo; do ln -sf kmod "$r/sbin/$a"; done
copy_bin "$x/bin/ip" /sbin/ip
copy_bin "$x/usr/bin/rdma" /sbin/rdma
copy_bin "$x/sbin/dcb" /sbin/dcb
copy_bin "$x/sbin/ethtool" /sbin/ethtool
copy_bin "$x/bin/ping" /bin/ping
# perftest (guest/traffic_perf_test.go) and util-linux's taskset, which pins it.
for t in rping ucmatose udaddy rdma_server rdma_client ibv_devinfo ibv_devices ibv_rc_pingpong ib_write_bw ib_read_bw ib_send_bw ib_write_lat taskset; do
  copy_bin "$x/usr/bin/$t" "/usr/bin/$t"
done
# rping's pthread_exit loads libgcc_s at run time; ldd does not name it.
cp -L "$x/lib/x86_64-linux-gnu/libgcc_s.so.1" "$r/lib/x86_64-linux-gnu/" 2>/dev/null ||
  cp -L "$x/usr/lib/x86_64-linux-gnu/libgcc_s.so.1" "$r/lib/x86_64-linux-gnu/"
# The rxe provider of libibverbs.
mkdir -p "$r/etc/libibverbs.d" "$r/lib/x86_64-linux-gnu/libibverbs"
cp "$x/etc/libibverbs.d/rxe.driver" "$r/etc/libibverbs.d/"
cp -L "$x"/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so "$r/lib/x86_64-linux-gnu/libibverbs/"
ln -s ../lib "$r/usr/lib"
# GRUB's configuration generator, as grub2-common and grub-common install
# it (sysconfdir /etc, pkgdatadir /usr/share/grub): the guest's rdmaform
# runs this update-grub (guest/cmdline_test.go).
install -m 0755 "$x/usr/sbin/update-grub" "$x/usr/sbin/grub-mkconfig" "$r/usr/sbin/"
copy_bin "$x/usr/sbin/grub-probe" /usr/sbin/grub-probe
for t in grub-mkrelpath grub-script-check grub-editenv; do copy_bin "$x/usr/bin/$t" "/usr/bin/$t"; done
mkdir -p "$r/etc/default" "$r/usr/share/grub/default"
cp -r "$x/etc/grub.d" "$r/etc/grub.d"
cp "$x/usr/share/grub/grub-mkconfig_lib" "$r/usr/share/grub/"
cp "$x/usr/share/grub/default/grub" "$r/usr/share/grub/default/grub"

# Modules and what they depend on.
mods=(rdma_rxe rdma_ucm rdma_cm ib_uverbs ib_ipoib ib_umad configfs veth crc32_generic)
# The staged ledger's disk (guest/ledger_test.go): virtio, and ext2 through ext4.
mods+=(virtio_pci virtio_blk ext4)
# virtio_net drives the multi-queue virtio-net device on a PCIe root port
# (see boot_guest); no test sees it until one loads it.
mods+=(virtio_net)
# Kernel users of RDMA that activate refuses to reset under
# (guest/rdma_users_test.go): NVMe over RDMA, host and target (null_blk
# backs the target's namespace), and NFS over RDMA, server and client.
mods+=(nvme_rdma nvmet_rdma null_blk rpcrdma nfsd nfsv4)
mkdir -p "$r/lib/modules/$kver"
for m in "${mods[@]}"; do
  deps=$(modprobe -d "$x" -S "$kver" --show-depends "$m" 2>&1) || die "module $m: $deps"
  echo "$deps" | awk '$1 == "insmod" {print $2}' | while read -r ko; do
    rel=${ko#"$x"}
    mkdir -p "$r$(dirname "$rel")"
    cp "$ko" "$r$rel"
  done
done
cp "$x/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$r/lib/modules/$kver/"
depmod -b "$r" "$kver"

echo "rdmaform-guest" > "$r/etc/hostname"
printf '127.0.0.1 localhost\n' > "$r/etc/hosts"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$r/etc/passwd"
printf 'root:x:0:\n' > "$r/etc/group"
: > "$r/etc/machine-id"; printf '%032x\n' 4711 > "$r/etc/machine-id"

echo "kernlab: building rdmaform and the guest tests"
export CGO_ENABLED=0
(cd "$top" && go build -trimpath -o "$r/usr/sbin/rdmaform" ./cmd/rdmaform)
# The boot unit names the installed path; make install puts it under /usr/local.
mkdir -p "$r/usr/local/sbin" && ln -s ../../sbin/rdmaform "$r/usr/local/sbin/rdmaform"
# Every package with kernlab-tagged tests gets a guest test binary.
guestpkgs=$(cd "$top" && grep -rl --include='*_test.go' '^//go:build kernlab' . | xargs -n1 dirname | sort -u)
[ -n "$guestpkgs" ] || die "no guest tests (files with //go:build kernlab)"
for p in $guestpkgs; do
  name=$(echo "${p#./}" | tr / _)
  (cd "$top" && go test -c -tags kernlab -cover -coverpkg=./... -o "$r/tests/$name.test" "$p" 2>&1 | grep -v 'no packages being tested depend on matches' >&2 || true)
  [ -x "$r/tests/$name.test" ] || die "building guest tests of $p failed"
done

# TestPerftestCapture (guest/traffic_perf_test.go) prints the perftest
# captures of probe/testdata/real and takes minutes under TCG: it runs
# only when KERNLAB_RUN names it, and is left out (not skipped) otherwise.
skipcap=
[ -n "${KERNLAB_RUN:-}" ] || skipcap="-test.skip '^TestPerftestCapture\$'"
cat > "$r/init" <<EOF
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
hostname rdmaform-guest
ip link set lo up
echo "KERNLAB-BOOTED \$(cut -d' ' -f1 /proc/uptime)"
for t in /tests/*.test; do
  n=\$(basename \$t .test)
  echo "KERNLAB-BEGIN \$n"
  cd /root
  if [ -n "\$KERNLAB_REBOOT_RUN" ]; then
    # A second boot (KERNLAB_BOOT=2): only the tests that asked for it.
    RDMAFORM_IN_GUEST=1 RDMAFORM_REQUIRE_LAB=$require \$t -test.v -test.count=1 -test.timeout=$gotimeout -test.run "\$KERNLAB_REBOOT_RUN" 2>&1
  else
  RDMAFORM_IN_GUEST=1 RDMAFORM_REQUIRE_LAB=$require \$t -test.v -test.count=1 -test.timeout=$gotimeout ${KERNLAB_RUN:+-test.run '$KERNLAB_RUN'} $skipcap -test.coverprofile=/tmp/\$n.cov 2>&1
  fi
  rc=\$?
  echo "KERNLAB-END \$n rc=\$rc"
  if [ -s /tmp/\$n.cov ]; then
    echo "KERNLAB-COVER-BEGIN \$n"; cat /tmp/\$n.cov; echo "KERNLAB-COVER-END \$n"
  fi
done
echo "KERNLAB-DONE \$(cut -d' ' -f1 /proc/uptime)"
sync
poweroff -f
EOF
chmod 0755 "$r/init"
(cd "$r" && find . | cpio -o -H newc --quiet | gzip -1 > "$work/initrd.gz")
t1=$(date +%s.%N)
echo "kernlab: initramfs $(du -h "$work/initrd.gz" | cut -f1) built in $(secs "$t1" "$t0") s; kernel $kver"

# ---------------------------------------------------------------- boot
# A blank disk that outlives the guest: a test that asks for a second boot
# (a KERNLAB-REBOOT line) finds what it wrote there in the next boot.
disk=$work/disk.img
truncate -s 16M "$disk"
# A second one for the kernel command line test (guest/cmdline_test.go):
# its ext2 holds the root trees whose /etc/default, /boot and ledger
# rdmaform writes, and the second boot's command line is read from it.
cmddisk=$work/cmdline.img
truncate -s 24M "$cmddisk"
# no_timer_check: on a loaded machine TCG's emulated timer can tick too
# late for the kernel's IO-APIC timer check, which then panics at boot
# ("IO-APIC + timer doesn't work!"); a virtual machine needs no such check.
# boot_guest LOG [KEY=VALUE...]: one boot; qrc is qemu's exit status.
boot_guest() {
  local log=$1; shift
  set +e
  # The machine is q35 with one PCIe root port holding a virtio-net device
  # with four queue pairs (mq=on; vectors = 2 per pair + 2): a PCI Express
  # function for the PCIe tests and a multi-queue netdev for the ethtool
  # ones. Its two CPUs are two NUMA nodes (one each, 768 MiB each), and a
  # PCI Express expander bridge (pxb-pcie, root bus 0x80) of node 1 holds
  # a second root port (krp2) with a two-pair virtio-net device (6
  # vectors): a function whose NUMA-local CPU is CPU 1 alone, for the IRQ
  # affinity tests (guest/irq_affinity_test.go); the main bus's functions
  # have no node (-1). The backends are multi-queue taps that exist only
  # in a network namespace of QEMU's own (unshare -n), so this machine's
  # network is never touched. The ledger's disk is placed on the main bus
  # by name (if=virtio would pick the expander's bus, which takes only
  # bridges). An emulated IOMMU (intel-iommu, with intel_iommu=on) makes
  # the kernel enable ACS on every port, as on a server (0x001d on the
  # root ports), and a third root port (krp3) holds QEMU's ati-vga, an
  # AMD VGA function the inventory counts as a GPU: the NIC and it are
  # PHB, so the ACS tests (guest/acs_test.go) clear bits the kernel set
  # on both ports.
  timeout --kill-after=10 "$timeout_s" unshare -n sh -c '
    ip tuntap add dev ktap0 mode tap multi_queue && ip link set ktap0 up &&
    ip tuntap add dev ktap1 mode tap multi_queue && ip link set ktap1 up && exec "$@"' sh \
    qemu-system-x86_64 -M q35 -m 1536 -smp 2 -accel tcg \
    -object memory-backend-ram,id=kmem0,size=768M -object memory-backend-ram,id=kmem1,size=768M \
    -numa node,nodeid=0,cpus=0,memdev=kmem0 -numa node,nodeid=1,cpus=1,memdev=kmem1 \
    -device intel-iommu \
    -kernel "$x/boot/vmlinuz-$kver" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 no_timer_check intel_iommu=on RDMAFORM_REQUIRE_LAB=$require $*" \
    -drive "file=$disk,format=raw,if=none,id=kdisk" -device virtio-blk-pci,drive=kdisk,bus=pcie.0 \
    -drive "file=$cmddisk,format=raw,if=none,id=kcmd" -device virtio-blk-pci,drive=kcmd,bus=pcie.0 \
    -netdev tap,id=kn0,ifname=ktap0,script=no,downscript=no,queues=4 \
    -device pcie-root-port,id=krp1,bus=pcie.0,chassis=1 \
    -device virtio-net-pci,bus=krp1,netdev=kn0,mq=on,vectors=10 \
    -device pxb-pcie,id=kpxb1,bus_nr=0x80,numa_node=1,bus=pcie.0 \
    -netdev tap,id=kn1,ifname=ktap1,script=no,downscript=no,queues=2 \
    -device pcie-root-port,id=krp2,bus=kpxb1,chassis=2 \
    -device virtio-net-pci,bus=krp2,netdev=kn1,mq=on,vectors=6 \
    -device pcie-root-port,id=krp3,bus=pcie.0,chassis=3 -device ati-vga,bus=krp3 \
    -nographic -no-reboot -nic none -monitor none -serial "file:$log" </dev/null >>"$out/qemu.log" 2>&1
  qrc=$?
  set -e
  # CRLF line ends and the firmware's terminal escapes off.
  tr -d '\r' < "$log" | sed 's/\x1bc//g; s/\x1b\[[0-9;?]*[a-zA-Z]//g' > "$log.txt"
}
log=$out/console.log
boot_guest "$log"
# A second boot, with the same disk, for the tests that asked (only them).
again=$(awk '/^KERNLAB-REBOOT / {printf "%s%s", sep, $2; sep="|"}' "$log.txt")
qrc2=0
if [ -n "$again" ] && [ $qrc -ne 124 ] && [ $qrc -ne 137 ]; then
  echo "kernlab: booting the guest again for ^($again)\$"
  qrc1=$qrc
  # The kernel command line a test's rdmaform wrote: a
  # "KERNLAB-CMDLINE-FROM FILE [DROP ARG]" line names the grub.cfg (on the
  # second disk) that the real update-grub generated in the guest; its
  # first entry's linux line is this boot's command line, as GRUB would
  # give it (BOOT_IMAGE= first), less ARG, which the lab leaves out as a
  # cloud image's boot entry that overrides GRUB's would.
  bootargs=()
  if read -r _ from _ drop < <(grep '^KERNLAB-CMDLINE-FROM ' "$log.txt" | head -n1); then
    need debugfs e2fsprogs
    cfg=$(debugfs -R "cat $from" "$cmddisk" 2>/dev/null)
    read -r -a linux < <(printf '%s\n' "$cfg" | awk '$1 == "linux" {$1 = ""; print; exit}')
    [ ${#linux[@]} -gt 0 ] || die "no linux line in the guest's $from:
$cfg"
    bootargs+=("BOOT_IMAGE=${linux[0]}")
    for a in "${linux[@]:1}"; do [ "$a" = "${drop:-}" ] || bootargs+=("$a"); done
    echo "kernlab: the second boot's command line from the guest's $from: ${bootargs[*]}${drop:+ (left out: $drop)}"
  fi
  boot_guest "$out/console2.log" "${bootargs[@]}" KERNLAB_BOOT=2 "KERNLAB_REBOOT_RUN=^($again)\$"
  qrc2=$qrc qrc=$qrc1
  boot2=$out/console2.log.txt
fi
t2=$(date +%s.%N)

# ---------------------------------------------------------------- judge
# Show the guest's output (without coverage blocks) in the log.
awk '/^KERNLAB-COVER-BEGIN/ {skip=1} !skip {print} /^KERNLAB-COVER-END/ {skip=0}' "$log.txt"
[ -z "${boot2:-}" ] || { echo "kernlab: the second boot:"; cat "$boot2"; }
for f in $(awk '/^KERNLAB-COVER-BEGIN/ {print $2}' "$log.txt"); do
  awk -v n="$f" '$0 == "KERNLAB-COVER-BEGIN " n {on=1; next} $0 == "KERNLAB-COVER-END " n {on=0} on' "$log.txt" > "$out/$f.cov"
done
booted=$(awk '/^KERNLAB-BOOTED/ {print $2; exit}' "$log.txt")
echo "kernlab: qemu exit $qrc; guest booted to /init at ${booted:-?} s (guest clock); whole run $(secs "$t2" "$t0") s; console log $log"
done_at=$(awk '/^KERNLAB-DONE/ {print $2; exit}' "$log.txt")
# Timings for `make bench` (rdmaform-bench -only kernel), one "key seconds"
# a line: host-side build, boot to the first test (guest clock), the
# guest's whole life (guest clock), and the script from start to end.
{
  echo "build_s $(secs "$t1" "$t0")"
  echo "boot_to_first_test_s ${booted:-?}"
  echo "guest_s ${done_at:-?}"
  echo "total_s $(secs "$t2" "$t0")"
} > "$out/times"

grep -q 'Kernel panic' "$log.txt" && die "the guest kernel panicked (see $log)"
if [ -n "${boot2:-}" ]; then
  grep -q 'Kernel panic' "$boot2" && die "the guest kernel panicked in its second boot (see $boot2)"
  [ $qrc2 -eq 124 ] || [ $qrc2 -eq 137 ] && die "the guest hung in its second boot (see $boot2)"
  grep -q '^KERNLAB-DONE' "$boot2" || die "the guest's second boot stopped before its tests finished (see $boot2)"
  for n in ${again//|/ }; do
    grep -q "^--- \(PASS\|FAIL\|SKIP\): $n " "$boot2" || die "the second boot did not run $n (see $boot2)"
  done
  # Its results are judged with the first boot's.
  grep -E '^(KERNLAB-END|--- )' "$boot2" >> "$log.txt"
fi
[ $qrc -eq 124 ] || [ $qrc -eq 137 ] && die "the guest hung: no poweroff within ${timeout_s} s (see $log)"
[ -n "$booted" ] || die "the guest never reached /init (qemu exit $qrc; see $log and $out/qemu.log)"
grep -q '^KERNLAB-DONE' "$log.txt" || die "the guest stopped before its tests finished (see $log)"
fail=0
while read -r _ n rcf; do
  rc=${rcf#rc=}
  [ "$rc" = 0 ] || { echo "kernlab: guest tests $n failed (exit $rc)" >&2; fail=1; }
done < <(grep '^KERNLAB-END' "$log.txt")
if grep -q -- '--- SKIP' "$log.txt"; then
  if [ "$require" = 1 ]; then
    grep -- '--- SKIP' "$log.txt" >&2
    echo "kernlab: skipped guest tests under RDMAFORM_REQUIRE_LAB=1" >&2; fail=1
  fi
fi
npass=$(grep -c -- '^--- PASS' "$log.txt" || true)
nfail=$(grep -c -- '^--- FAIL' "$log.txt" || true)
nskip=$(grep -c -- '^--- SKIP' "$log.txt" || true)
echo "kernlab: $npass passed, $nfail failed, $nskip skipped"
[ $fail -eq 0 ] || die "guest tests failed"
echo "kernlab: ok"
