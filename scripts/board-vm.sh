#!/usr/bin/env bash
# The board in a virtual machine (docs/board.md): Debian 12's kernel for an
# ARM board boots under qemu-system (TCG) with an SD card behind an SDHCI
# controller, runs the test plan (scripts/board/plan.sh) on its own kernel,
# MMC stack and ext4, then has its power cut while it records, N times:
#
#   scripts/board-vm.sh aarch64-unknown-linux-gnu [--cuts N] [--seed S]
#   scripts/board-vm.sh armv7-unknown-linux-gnueabihf [--cuts N] [--seed S]
#   scripts/board-vm.sh aarch64-unknown-linux-gnu --ship
#
# --ship instead (a manual check, not in CI; docs/board.md, "Shipping from
# the board"): the FULL binary (scripts/cross.sh's, feature `ship`) on the
# board, a SeaweedFS (scripts/seaweedfs.sh) on the host, reached from the
# guest through qemu's user-mode network (the host is 10.0.2.2 there): the
# board records two recordings on its card, ships them with `rtrec ship`,
# then ships again (nothing may go the second time: the ledger); the host
# lists the bucket (`rtrec ls s3://…`), fetches each recording, verifies
# it and compares it byte for byte with the card's files.
#
# 1. installs the cross toolchain (scripts/debian-rust.sh), qemu-system-arm
#    and cpio, each at a pinned version; downloads Debian's kernel for the
#    board (arm64, or armmp for armv7) and busybox-static of its
#    architecture with `apt-get download`, pinned below, into
#    target/board-vm/debs, with apt's state for that architecture in
#    target/board-vm/apt-ARCH (the system's dpkg is not told about it);
# 2. takes the board build (scripts/board-build.sh TARGET:
#    target/board/TARGET/release-small/{rtrec,librtrec.so}), running it
#    only when an artifact is missing or older than the sources, and the
#    host's rtrec (target/release/rtrec, built the same way when needed);
# 3. builds the initramfs: busybox, the dynamic loader and the libraries
#    the programs need from Debian's cross C library (/usr/GNU/lib), the
#    board's rtrec and librtrec.so, examples/record.c compiled with the
#    cross gcc against that librtrec.so, the kernel modules of the SD
#    card's path (SDHCI over PCI, the MMC block driver where it is a
#    module, ext4 and their dependencies), /init
#    (scripts/board/init) and the plan;
# 4. formats the card (a 512 MiB image, mkfs.ext4 on the host) and boots
#    the plan; the guest reports through the serial console with markers
#    (`@@rtrec-board …@@`); after it powers off, the host checks the card:
#    `e2fsck -fn`, then its recordings read with `debugfs rdump` (no mount,
#    no loop device) are verified and exported by the host's x86 rtrec;
# 5. power cuts, N times (--cuts, default 5): boot, `rtrec recover`,
#    record (publishing each durable point on the console), then SIGKILL
#    to qemu at a random moment (--seed repeats the moments); on a copy of
#    the card the host replays the journal (`e2fsck -E journal_only`),
#    checks `e2fsck -fn` finds nothing beyond the free counts that ext4
#    recomputes at mount, reads the directory out, runs `rtrec recover`,
#    `rtrec verify` and checks every record below each published durable
#    point is there and byte-exact (scripts/board/check-records.py), for
#    every recording the card holds so far; the card itself goes to the
#    next boot as the cut left it. A last boot recovers on the board and
#    the host checks once more;
# 6. prints the guest's view of the card, the doctor's comparison, the
#    power-cut table and the wall time of each phase, and writes them to
#    target/board-vm/TARGET/report.txt. Exit 1 on any failure or timeout.
#
# Times measured in the guest are the emulator's: printed with that label,
# never judged. Nothing is mounted on the host; a Ctrl-C kills the qemu
# (and with --ship the SeaweedFS) this script started, by its pid, and
# leaves target/board-vm as it was (the server's data directory removed).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/debian-rust.sh
. scripts/debian-rust.sh

# Debian 12's kernel for the boards: the point release's build (the
# security updates' moves more often), its ABI name with it; busybox and
# cpio, all pinned. When the mirror moves on, the download stops with a
# sentence naming the pin to update.
KERNEL_DEB_VERSION="6.1.176-1"
KERNEL_ABI="6.1.0-50"
BUSYBOX_DEB_VERSION="1:1.35.0-4+deb12u1+b1"
CPIO_DEB_VERSION="2.13+dfsg-7.1"
# The card's modules: the SDHCI controller on PCI, the MMC block driver
# (built in on arm64, a module on armmp) and ext4 with the CRC32C it asks
# the crypto API for; their dependencies come from the modules themselves.
MODULES="sdhci-pci mmc_block ext4 crc32c_generic"
# --ship: the network card of qemu's user-mode network (virtio over PCI)
# and a virtio RNG, so that the shipper's first random numbers do not wait
# on the emulated kernel's entropy.
SHIP_MODULES="virtio_pci virtio_net virtio_rng"
# --ship: the bucket, the prefix (the board's keys go under it) and the
# server's test identity (a server of our own on the host's loopback).
SHIP_BUCKET=board-vm
SHIP_PREFIX=board1
SHIP_KEY=board-vm-key
SHIP_SECRET=board-vm-secret
# What the host waits for, in seconds of wall time, on a loaded machine.
PLAN_TIMEOUT=1200
START_TIMEOUT=600
# The power is cut this long after the recording started (drawn per cycle).
CUT_MIN_MS=300
CUT_MAX_MS=6000

usage() {
  echo "usage: scripts/board-vm.sh aarch64-unknown-linux-gnu|armv7-unknown-linux-gnueabihf [--cuts N] [--seed S] | [--ship]" >&2
  exit 2
}
target=${1:-}
[ $# -gt 0 ] && shift
cuts=5
seed=$((RANDOM * 32768 + RANDOM))
ship=0
cut_opts=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cuts) cuts=${2:-}; cut_opts=1; shift 2 || usage ;;
    --seed) seed=${2:-}; cut_opts=1; shift 2 || usage ;;
    --ship) ship=1; shift ;;
    *) usage ;;
  esac
done
[[ $cuts =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ ]] || usage
[ $ship = 0 ] || [ $cut_opts = 0 ] || { echo "board-vm.sh: --ship runs no power cuts: give it without --cuts and --seed" >&2; exit 2; }
cross_target "$target" || usage
case "$arch" in
  arm64)
    flavour=arm64 kpkg=linux-image-$KERNEL_ABI-arm64-unsigned qemu_system=qemu-system-aarch64
    machine=(-M virt -cpu cortex-a53 -smp 2 -m 1024) ;;
  armhf)
    # highmem=off: qemu's virt board puts its PCIe configuration space
    # above 4 GiB otherwise, which the armmp kernel (no LPAE) cannot
    # address ("can't claim ECAM area"): no PCI, so no SDHCI and no card.
    flavour=armmp kpkg=linux-image-$KERNEL_ABI-armmp qemu_system=qemu-system-arm
    machine=(-M virt,highmem=off -cpu cortex-a15 -smp 2 -m 1024) ;;
esac

vm=$PWD/target/board-vm
work=$vm/$target
[ $ship = 0 ] || work=$vm/$target-ship
mkdir -p "$work"
report=$work/report.txt
: >"$report"
t_start=$SECONDS
t_phase=$SECONDS
phases=()
step() { echo "board-vm[$target]: $* ($((SECONDS - t_start)) s)"; }
# phase NAME: the wall time since the last phase ended is NAME's.
phase() {
  phases+=("$(printf '%-34s %5d s' "$1" $((SECONDS - t_phase)))")
  t_phase=$SECONDS
}
fail() {
  echo "board-vm[$target]: FAIL: $*" >&2
  exit 1
}
# out LINE...: to the terminal and the report.
out() { printf '%s\n' "$@" | tee -a "$report"; }

qpid=
tailpid=
weedpid=
cleanup() {
  [ -z "$tailpid" ] || kill "$tailpid" 2>/dev/null || true
  [ -z "$qpid" ] || kill -9 "$qpid" 2>/dev/null || true
  if [ -n "$weedpid" ]; then
    kill "$weedpid" 2>/dev/null || true
    wait "$weedpid" 2>/dev/null || true
    # Its log stays beside the consoles' (target/board-vm/TARGET-ship).
    cp "$work/weed/weed.log" "$work/weed.log" 2>/dev/null || true
    rm -rf "$work/weed"
  fi
  rm -rf "$work/tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "installing the cross toolchain, qemu-system-arm and cpio (pinned)"
deb_install "${cross_debs[@]}" "${QEMU_SYSTEM_DEBS[@]}" "cpio=$CPIO_DEB_VERSION"
for tool in mkfs.ext4:e2fsprogs e2fsck:e2fsprogs debugfs:e2fsprogs python3:python3; do
  command -v "${tool%%:*}" >/dev/null || fail "${tool%%:*} is missing (Debian package ${tool#*:})"
done

# deb_fetch PIN PKG=VERSION [LISTED]: the path of PKG's .deb for $arch at
# exactly VERSION, downloaded once into target/board-vm/debs. When the
# mirror no longer has it, one sentence names the pin and what the index
# has of LISTED (default PKG).
apt_updated=
deb_fetch() {
  local pin=$1 pkg=${2%%=*} ver=${2#*=} listed=${3:-${2%%=*}} file state
  file=$vm/debs/${pkg}_${ver//:/%3a}_$arch.deb
  if [ ! -f "$file" ]; then
    state=$vm/apt-$arch
    mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$vm/debs"
    local apt=(-o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache"
      -o "Dir::State::status=/dev/null" -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch")
    if [ -z "$apt_updated" ]; then
      # A mirror half-synced (one index failing) need not stop us: the
      # pinned version is either found below or reported as missing.
      apt-get "${apt[@]}" update -qq >&2 || echo "board-vm.sh: apt-get update for $arch failed in part; trying with what it fetched" >&2
      apt_updated=1
    fi
    (cd "$vm/debs" && apt-get "${apt[@]}" download -qq "$pkg=$ver" 2>&1 |
      grep -v 'Download is performed unsandboxed' >&2) || true
    [ -f "$file" ] || {
      echo "board-vm.sh: Debian's index has no $arch $pkg $ver ($listed: $(apt-cache "${apt[@]}" madison "$listed" | awk '{print $3}' | paste -sd' ')); the pin $pin in scripts/board-vm.sh is out of sync with the mirror: pick a listed version and check the board boots" >&2
      return 1
    }
  fi
  echo "$file"
}

# unpacked DEB: the directory DEB is unpacked in (once, by dpkg -x).
unpacked() {
  local dir=$vm/$arch/$(basename "$1" .deb)
  if [ ! -d "$dir" ]; then
    rm -rf "$dir.part"
    mkdir -p "$dir.part"
    dpkg -x "$1" "$dir.part" && mv "$dir.part" "$dir" || return 1
  fi
  echo "$dir"
}

step "fetching Debian's $flavour kernel $KERNEL_DEB_VERSION and busybox-static (cached in target/board-vm)"
kdeb=$(deb_fetch "KERNEL_DEB_VERSION (and KERNEL_ABI, the 6.1.0-N that linux-image-$flavour of that version depends on)" \
  "$kpkg=$KERNEL_DEB_VERSION" "linux-image-$flavour") || exit 1
bdeb=$(deb_fetch BUSYBOX_DEB_VERSION "busybox-static=$BUSYBOX_DEB_VERSION") || exit 1
kroot=$(unpacked "$kdeb") || exit 1
broot=$(unpacked "$bdeb") || exit 1
kernel=$kroot/boot/vmlinuz-$KERNEL_ABI-$flavour
moddir=$kroot/lib/modules/$KERNEL_ABI-$flavour
[ -f "$kernel" ] && [ -f "$moddir/modules.builtin" ] || fail "$kdeb holds no kernel $kernel or no $moddir/modules.builtin"
phase "tools and downloads"

# stale ARTIFACT... : why the artifacts must be built again (nothing when
# they are newer than every source, or than the stamp of our last build).
sources=(Cargo.toml Cargo.lock build.rs src crates include)
stale() {
  local a ref=
  for a in "$@"; do
    [ -f "$a" ] || { echo "${a#"$PWD"/} is missing"; return; }
    [ -n "$ref" ] && [ "$ref" -ot "$a" ] || ref=$a
  done
  [ -f "$stamp" ] && [ "$stamp" -nt "$ref" ] && ref=$stamp
  a=$(find "${sources[@]}" "${extra_sources[@]}" -type f -newer "$ref" -print -quit)
  [ -z "$a" ] || echo "$a is newer than ${ref#"$PWD"/}"
}
board=$PWD/target/board/$target/release-small
# What the guest runs: the board build's record-only binary, or with
# --ship the full binary of scripts/cross.sh (the board build leaves the
# shipper out: feature `ship`).
if [ $ship = 1 ]; then
  guest_rtrec=$PWD/target/debian/$target/release/rtrec
  stamp=$work/cross-build.stamp extra_sources=(scripts/cross.sh)
  why=$(stale "$guest_rtrec")
  if [ -n "$why" ]; then
    step "the full $target binary is out of date ($why): running scripts/cross.sh $target --no-tests"
    bash scripts/cross.sh "$target" --no-tests
    touch "$stamp"
  else
    step "the full binary is up to date: target/debian/$target/release/rtrec"
  fi
else
  guest_rtrec=$board/rtrec
  stamp=$work/board-build.stamp extra_sources=(scripts/board-build.sh)
  why=$(stale "$board/rtrec" "$board/librtrec.so")
  if [ -n "$why" ]; then
    step "the board build is out of date ($why): running scripts/board-build.sh $target"
    bash scripts/board-build.sh "$target"
    touch "$stamp"
  else
    step "the board build is up to date: target/board/$target/release-small"
  fi
fi
host_rtrec=$PWD/target/release/rtrec
stamp=$vm/host-build.stamp extra_sources=()
why=$(stale "$host_rtrec")
if [ -n "$why" ]; then
  step "the host's rtrec is out of date ($why): cargo build --release"
  cargo build --release -q
  touch "$stamp"
else
  step "the host's rtrec is up to date: target/release/rtrec"
fi
phase "board build and host rtrec"

# --ship: the server, before the initramfs (which is told its port).
# `weed mini` takes its default ports (S3 on 8333) or the next free ones
# and prints which; bound to the host's loopback only (the guest reaches
# it through qemu's user-mode network, whose 10.0.2.2 is the host's
# 127.0.0.1). tests/ship.rs starts its servers holding a lock
# (rtrec-test-seaweedfs.lock in the temporary directory); taking it while
# ours starts means two servers never race for the same ports, and a test
# run beside this one finds ours bound and takes the next ones.
if [ $ship = 1 ]; then
  weed=$(bash scripts/seaweedfs.sh) || fail "no SeaweedFS server (scripts/seaweedfs.sh builds it; it needs Go)"
  wdir=$work/weed
  rm -rf "$wdir"
  mkdir -p "$wdir/data"
  : >"$wdir/weed.log"
  printf '{"identities": [{"name": "board", "credentials": [{"accessKey": "%s", "secretKey": "%s"}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}\n' \
    "$SHIP_KEY" "$SHIP_SECRET" >"$wdir/s3.json"
  step "starting SeaweedFS ($weed) on the host's loopback, data in ${wdir#"$PWD"/}"
  exec 9>"${TMPDIR:-/tmp}/rtrec-test-seaweedfs.lock"
  flock -n 9 || { step "waiting for the lock a test holds while its SeaweedFS starts"; flock 9; }
  (cd "$wdir" && AWS_ACCESS_KEY_ID=$SHIP_KEY AWS_SECRET_ACCESS_KEY=$SHIP_SECRET S3_BUCKET=$SHIP_BUCKET \
    exec "$weed" -logtostderr mini -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$wdir/data" -s3.config="$wdir/s3.json" \
    </dev/null >"$wdir/weed.log" 2>&1 9>&-) &
  weedpid=$!
  s3port=
  for _ in $(seq 1 600); do
    s3port=$(sed -n 's|^ *S3 Endpoint: *http://[^:]*:\([0-9]*\).*|\1|p' "$wdir/weed.log" | head -n 1)
    [ -z "$s3port" ] || break
    kill -0 "$weedpid" 2>/dev/null || break
    sleep 0.2
  done
  flock -u 9
  exec 9>&-
  [ -n "$s3port" ] || { tail -n 20 "$wdir/weed.log" >&2; fail "SeaweedFS did not say its S3 port within 120 s (log above)"; }
  export AWS_ACCESS_KEY_ID=$SHIP_KEY AWS_SECRET_ACCESS_KEY=$SHIP_SECRET AWS_ENDPOINT_URL=http://127.0.0.1:$s3port
  # The bucket answers (S3_BUCKET made it) once a listing succeeds.
  for _ in $(seq 1 600); do
    "$host_rtrec" ls "s3://$SHIP_BUCKET/$SHIP_PREFIX" >/dev/null 2>&1 && break
    sleep 0.2
  done
  "$host_rtrec" ls "s3://$SHIP_BUCKET/$SHIP_PREFIX" >/dev/null || fail "SeaweedFS on port $s3port does not serve the bucket $SHIP_BUCKET"
  out "board-vm[$target]: SeaweedFS $(bash scripts/seaweedfs.sh --version) serving S3 on 127.0.0.1:$s3port (the guest's http://10.0.2.2:$s3port), bucket $SHIP_BUCKET"
  phase "SeaweedFS on the host"
fi

step "building the initramfs"
rm -rf "$work/tmp"
root=$work/tmp/root
mkdir -p "$root"/{bin,lib,usr/bin,usr/lib,etc,lib/modules}
cp "$broot/bin/busybox" "$root/bin/busybox"
install -m 755 scripts/board/init "$root/init"
install -m 755 scripts/board/plan.sh "$root/plan.sh"
cp "$guest_rtrec" "$root/usr/bin/rtrec"
if [ $ship = 1 ]; then
  # Where the board ships to; the secret in a file, as a service keeps it.
  printf 'BUCKET=%s\nPREFIX=%s\nENDPOINT=http://10.0.2.2:%s\nexport AWS_ACCESS_KEY_ID=%s\n' \
    "$SHIP_BUCKET" "$SHIP_PREFIX" "$s3port" "$SHIP_KEY" >"$root/etc/ship.env"
  printf '%s\n' "$SHIP_SECRET" >"$root/etc/ship.secret"
  pending=("$guest_rtrec")
  MODULES="$MODULES $SHIP_MODULES"
else
  # The example asks for the SONAME, librtrec.so.0 (an install's name).
  cp "$board/librtrec.so" "$root/usr/lib/librtrec.so.0"
  "$gnu-gcc" -std=c99 -Wall -Wextra -Werror -O2 -Iinclude examples/record.c \
    -L"$board" -lrtrec -o "$root/usr/bin/rtrec-example"
  pending=("$board/rtrec" "$board/librtrec.so" "$root/usr/bin/rtrec-example")
fi
# The loader, and every library the programs need, from the cross C library.
interp=$("$gnu-readelf" -lW "$guest_rtrec" | sed -n 's/.*interpreter: \(.*\)]$/\1/p')
[ -n "$interp" ] || fail "the board's rtrec names no program interpreter"
mkdir -p "$root$(dirname "$interp")"
cp -L "/usr/$gnu/lib/$(basename "$interp")" "$root$interp"
while [ ${#pending[@]} -gt 0 ]; do
  f=${pending[0]}
  pending=("${pending[@]:1}")
  for lib in $("$gnu-readelf" -dW "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    [ "$lib" = librtrec.so.0 ] || [ -e "$root/lib/$lib" ] && continue
    [ -e "/usr/$gnu/lib/$lib" ] || fail "$lib, which $(basename "$f") needs, is not in /usr/$gnu/lib"
    cp -L "/usr/$gnu/lib/$lib" "$root/lib/$lib"
    pending+=("$root/lib/$lib")
  done
done
# The modules, dependencies first (each module's own `depends=`, read from
# its .modinfo section: the package ships no modules.dep, which depmod
# makes at install); a module built into this kernel is skipped.
builtin=$(sed 's|.*/||; s|\.ko.*||; s|-|_|g' "$moddir/modules.builtin")
declare -A modpath=() seen=()
while read -r p; do
  n=${p##*/}
  n=${n%.ko}
  modpath[${n//-/_}]=$p
done < <(cd "$moddir" && find kernel -name '*.ko')
order=()
add_module() {
  local n=${1//-/_} dep
  [ -z "${seen[$n]:-}" ] || return 0
  seen[$n]=1
  grep -qx "$n" <<<"$builtin" && return 0
  [ -n "${modpath[$n]:-}" ] || fail "the $flavour kernel has no module $1 (neither built in nor a .ko)"
  for dep in $("$gnu-objcopy" -O binary --only-section=.modinfo "$moddir/${modpath[$n]}" /dev/stdout |
    tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' '); do
    add_module "$dep"
  done
  order+=("${modpath[$n]}")
}
for m in $MODULES; do add_module "$m"; done
for m in "${order[@]}"; do
  cp "$moddir/$m" "$root/lib/modules/"
  basename "$m" >>"$root/etc/modules"
done
initrd=$work/initrd.gz
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$initrd"
if [ $ship = 1 ]; then progs="the full rtrec"; else progs="rtrec, librtrec.so, rtrec-example"; fi
out "board-vm[$target]: initramfs $(stat -c %s "$initrd") bytes: busybox, $(ls "$root/lib" | grep -c '\.so') libraries, $progs, modules: $(paste -sd' ' "$root/etc/modules" | sed 's/\.ko//g')"

card=$work/sd.img
rm -f "$card"
truncate -s 512M "$card"
mkfs.ext4 -q -F -L rtrec-card "$card"
phase "initramfs and card"

# The network: none, or with --ship qemu's user-mode network (the guest
# 10.0.2.15, the host 10.0.2.2; nothing of the host is changed) and the RNG.
# No option ROM for the card (romfile=): the kernel boots directly, and
# Debian puts qemu's network boot ROMs in another package (ipxe-qemu).
nic=(-nic none)
[ $ship = 0 ] || nic=(-netdev user,id=net -device virtio-net-pci,netdev=net,romfile= -device virtio-rng-pci)
# boot NAME MODE [CYCLE]: starts the board in the background (qpid), its
# console in target/board-vm/TARGET/serial-NAME.log.
boot() {
  log=$work/serial-$1.log
  : >"$log"
  "$qemu_system" "${machine[@]}" -kernel "$kernel" -initrd "$initrd" \
    -append "console=ttyAMA0 rdinit=/init panic=-1 loglevel=4 rtrec.mode=$2 rtrec.cycle=${3:-0}" \
    -display none -monitor none -serial "file:$log" -no-reboot "${nic[@]}" \
    -device sdhci-pci -drive "if=none,id=sd,file=$card,format=raw" -device sd-card,drive=sd &
  qpid=$!
}
# markers: the markers of the console log so far, one a line, without @@.
markers() { { grep -ao '@@rtrec-board [^@]*@@' "$log" || true; } | sed 's/^@@rtrec-board //; s/@@$//'; }
# wait_exit SECONDS: waits for qemu to end; 1 (qemu killed) after SECONDS.
wait_exit() {
  local n=0
  while kill -0 "$qpid" 2>/dev/null; do
    n=$((n + 1))
    if [ $n -gt $(($1 * 5)) ]; then
      kill -9 "$qpid" 2>/dev/null || true
      wait "$qpid" 2>/dev/null || true
      qpid=
      return 1
    fi
    sleep 0.2
  done
  wait "$qpid" 2>/dev/null || true
  qpid=
}
# wait_marker REGEX SECONDS: waits for a marker; 1 when qemu ended or the
# time ran out first (then qemu is killed).
wait_marker() {
  local n=0
  # (Not `markers | grep -q`: grep leaving early is a SIGPIPE, a failure under pipefail.)
  until grep -qE "$1" <<<"$(markers)"; do
    kill -0 "$qpid" 2>/dev/null || return 1
    n=$((n + 1))
    [ $n -le $(($2 * 5)) ] || { wait_exit 0 || true; return 1; }
    sleep 0.2
  done
}
tail_log() { tail -n 30 "$log" | tr -d '\r' | sed 's/^/  | /' >&2; }

# card_copy: a copy of the card to check, its journal replayed, judged by
# `e2fsck -fn`: anything it would repair beyond the free block and inode
# counts (which ext4 keeps current only in memory and recomputes at mount)
# is damage. Sets replayed (yes/no) and fsck (what it found).
card_copy() {
  copy=$work/tmp/card.img
  cp --sparse=always "$card" "$copy"
  local r
  r=$(e2fsck -E journal_only -y "$copy" 2>&1) || true
  if grep -q 'recovering journal' <<<"$r"; then replayed=yes; else replayed=no; fi
  r=$(e2fsck -fn "$copy" 2>&1) || true
  local damage
  damage=$(awk '
    /^Free (blocks|inodes) count wrong/ { summary = 1; next }
    /\? no$/ { if (!summary) { print (length($0) > 7 ? $0 : before); exit } summary = 0 }
    NF { before = $0 }' <<<"$r")
  [ -z "$damage" ] || { echo "$r" >&2; fail "e2fsck -fn finds ext4 damaged after the journal replay: $damage"; }
  if grep -q 'count wrong' <<<"$r"; then fsck="free counts only"; else fsck=clean; fi
}
# read_dir DIR: DIR of the copy, read out with debugfs into work/tmp/host.
read_dir() {
  rm -rf "$work/tmp/host"
  mkdir -p "$work/tmp/host"
  debugfs -R "rdump $1 $work/tmp/host" "$copy" 2>/dev/null
  [ -d "$work/tmp/host/$(basename "$1")" ] || fail "the card holds no $1"
  echo "$work/tmp/host/$(basename "$1")"
}

# boot_to_end NAME MODE WHAT: boots MODE with its console streamed here,
# waits until the guest powers off (a failure naming WHAT after
# PLAN_TIMEOUT) and reads its markers into m.
boot_to_end() {
  boot "$1" "$2"
  tail -n +1 -F --pid="$qpid" "$log" 2>/dev/null | sed -u 's/\r$//; s/^/  | /' &
  tailpid=$!
  local ok=yes
  wait_exit "$PLAN_TIMEOUT" || ok=timeout
  wait "$tailpid" 2>/dev/null || true
  tailpid=
  [ $ok = yes ] || fail "$3 did not end within $PLAN_TIMEOUT s (console: $log)"
  m=$(markers)
}

# -------------------------------------------------------------------- ship
# --ship: the board records, ships and ships again (plan.sh ship); then the
# host lists the bucket, fetches every recording, verifies it and compares
# its files with the card's.
if [ $ship = 1 ]; then
  step "booting the board with the full binary: record, ship to http://10.0.2.2:$s3port, ship again (its console below; times in it are the emulator's)"
  boot_to_end ship ship "the board"
  grep -qx 'ship ok' <<<"$m" || fail "the board's shipping failed: $(grep -E ' fail|^init fail|^ship fail' <<<"$m" | paste -sd';')"
  phase "record and ship in the guest"
  # ship_field RUN KEY: KEY of the board's RUN-th ship summary (--json).
  ship_field() { sed -n "s/^ship$1 json $2=//p" <<<"$m"; }
  out "" "The board's ship runs (rtrec ship --json; seconds and rates are the emulator's, TCG: not judged):"
  for run in 1 2; do
    out "  run $run: $(sed -n "s/^ship$run summary //p" <<<"$m")"
  done
  [ "$(ship_field 2 bytes_shipped)" = 0 ] && [ "$(ship_field 2 recordings_shipped)" = 0 ] ||
    fail "the board's second ship run sent something again: $(sed -n 's/^ship2 summary //p' <<<"$m")"

  step "the host checks: the card (e2fsck -fn, read with debugfs), the bucket (rtrec ls), each recording fetched, verified and compared with the card's files"
  copy=$card
  r=$(e2fsck -fn "$card" 2>&1) || { echo "$r" >&2; fail "e2fsck -fn finds errors on the card after the board's clean shutdown"; }
  b=$(read_dir /ship)
  listing=$("$host_rtrec" ls "s3://$SHIP_BUCKET/$SHIP_PREFIX") || fail "rtrec ls s3://$SHIP_BUCKET/$SHIP_PREFIX failed"
  out "" "rtrec ls s3://$SHIP_BUCKET/$SHIP_PREFIX (the host's x86-64 rtrec):" "$(sed 's/^/  /' <<<"$listing")"
  on_card=$("$host_rtrec" ls "$b" --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["recordings"]))')
  locations=$(awk 'NR > 1 { print $NF }' <<<"$listing")
  listed=$(grep -c . <<<"$locations") || true
  [ "$listed" = "$on_card" ] && [ "$listed" = "$(ship_field 1 recordings_shipped)" ] ||
    fail "the bucket lists $listed recordings; the card holds $on_card and the board shipped $(ship_field 1 recordings_shipped)"
  fetched=$work/tmp/fetched
  files=0 bytes=0
  for loc in $locations; do
    d=$fetched/${loc##*/}
    f=$("$host_rtrec" fetch "$loc" "$d" 2>&1) || { echo "$f" >&2; fail "rtrec fetch $loc failed"; }
    out "  fetch: ${f//"$PWD"\//}"
    v=$("$host_rtrec" verify "$d") || { echo "$v" >&2; fail "rtrec verify of the fetched $loc is not clean"; }
    out "  verify: $(tail -n 1 <<<"$v")"
    for x in "$d"/*.rtr; do
      cmp -s "$x" "$b/${x##*/}" || fail "the fetched ${x##*/} differs from the card's"
      files=$((files + 1)) bytes=$((bytes + $(stat -c %s "$x")))
    done
  done
  [ "$files" = "$(ls "$b" | grep -c '\.rtr$')" ] || fail "fetched $files files; the card holds $(ls "$b" | grep -c '\.rtr$')"
  out "  every fetched file is byte for byte the card's: $files files, $bytes bytes"
  phase "host checks of the bucket"

  # The binaries' sizes, stripped (as scripts/footprint.sh measures them).
  stripped() { if [ -f "$1" ]; then "$gnu-strip" -o "$work/tmp/stripped" "$1" && echo "$(stat -c %s "$work/tmp/stripped") bytes"; else echo "not built"; fi; }
  out "" "Binaries (stripped): the full rtrec that shipped, $(stripped "$guest_rtrec"); the record-only board build (no shipper), $(stripped "$board/rtrec")"
  out "" "Wall time of each phase (the host's, on this machine):" "${phases[@]/#/  }" \
    "$(printf '  %-34s %5d s' total $((SECONDS - t_start)))"
  step "done: the board shipped $(ship_field 1 recordings_shipped) recordings ($(ship_field 1 bytes_shipped) bytes), the second run sent nothing, and the host fetched and verified each (report: ${report#"$PWD"/})"
  exit 0
fi

# ---------------------------------------------------------------- the plan
step "booting the board: the plan (its console below; times in it are the emulator's)"
boot_to_end plan plan "the plan"
grep -qx 'plan ok' <<<"$m" || fail "the plan failed: $(grep -E ' fail|MISMATCH|^init fail|^plan fail' <<<"$m" | paste -sd';')"
phase "plan in the guest"

out "" "The guest's view of the card (its kernel's sysfs):"
out "$(sed -n 's/^card //p' <<<"$m" | sed 's/^/  /')"
out "" "doctor against the guest's kernel:"
out "$(sed -n 's/^doctor //p' <<<"$m" | sed 's/^/  /')"
out "" "The plan's steps (times are the emulator's, TCG on a shared host: not a board's):"
out "$(sed -n 's/^step \([^ ]*\) \(ok\|fail\) /  \1 \2 /p' <<<"$m")"

step "the host checks the card: e2fsck -fn, then its recordings read with debugfs and verified by the host's rtrec"
copy=$card
r=$(e2fsck -fn "$card" 2>&1) || { echo "$r" >&2; fail "e2fsck -fn finds errors on the card after the plan's clean shutdown"; }
b=$(read_dir /board)
for d in periodic periodic-rt flight stdin c; do
  v=$("$host_rtrec" verify "$b/$d") || { echo "$v" >&2; fail "the host's rtrec verify of the board's $d recording is not clean"; }
  out "host verify $d: $(tail -n 1 <<<"$v")"
done
"$host_rtrec" export "$b/stdin" -o "$work/tmp/stdin.out" 2>/dev/null
cmp "$b/stdin-input.bin" "$work/tmp/stdin.out" || fail "the host's export of the board's --stdin recording differs from its input"
out "host export stdin: identical to the board's input ($(stat -c %s "$work/tmp/stdin.out") bytes)"
python3 scripts/board/check-records.py "$host_rtrec" "$b/loop" "$(sed -n 's/^interrupted_verdict=//p' scripts/board/plan.sh)" >/dev/null ||
  fail "the host's check of the board's interrupted loop recording failed"
out "host verify loop (killed, then recovered on the board): nothing damaged"
phase "host checks of the plan"

# -------------------------------------------------------------- power cuts
verdict=$(sed -n 's/^interrupted_verdict=//p' scripts/board/plan.sh)
# A loop recording on the board (plan.sh's UNATTENDED_RECORD_OPTS with
# --keep…): check-records.py counts what the loop retired as retired.
if grep -q '^UNATTENDED_RECORD_OPTS=".*--keep' scripts/board/plan.sh; then export LOOP=1; fi
recs=()
rows=()
RANDOM=$seed
[ "$cuts" = 0 ] || step "power cuts: $cuts cycles, seed $seed (scripts/board-vm.sh $target --cuts $cuts --seed $seed repeats the moments)"
for k in $(seq 1 "$cuts"); do
  cut_ms=$((CUT_MIN_MS + (RANDOM * 32768 + RANDOM) % (CUT_MAX_MS - CUT_MIN_MS)))
  t0=$SECONDS
  boot "cut-$k" cut "$k"
  wait_marker '^recording ' "$START_TIMEOUT" || { tail_log; fail "cycle $k: the recording did not start within $START_TIMEOUT s (console: $log)"; }
  sleep "$((cut_ms / 1000)).$(printf %03d $((cut_ms % 1000)))"
  kill -9 "$qpid" 2>/dev/null || true
  wait "$qpid" 2>/dev/null || true
  qpid=
  m=$(markers)
  grep -q '^cut fail' <<<"$m" && { tail_log; fail "cycle $k: $(grep '^cut fail' <<<"$m")"; }
  grep -q '^step recover fail' <<<"$m" && { tail_log; fail "cycle $k: rtrec recover failed at boot"; }
  name=$(sed -n 's/^recording //p' <<<"$m" | tail -n 1)
  last=$(grep '^status ' <<<"$m" | tail -n 1)
  written=$(sed -n 's/.*written=\([0-9]*\).*/\1/p' <<<"$last")
  durable=$(sed -n 's/.*durable=\([0-9]*\).*/\1/p' <<<"$last")
  dropped=$(sed -n 's/.*dropped=\([0-9]*\).*/\1/p' <<<"$last")
  recs+=("$name:${durable:-0}:${written:-0}:${dropped:-0}")
  card_copy
  dir=$(read_dir /cuts)
  "$host_rtrec" recover "$dir" >"$work/tmp/recover.txt" 2>&1 || { cat "$work/tmp/recover.txt" >&2; fail "cycle $k: the host's rtrec recover failed"; }
  checked=$(python3 scripts/board/check-records.py "$host_rtrec" "$dir" "$verdict" "${recs[@]}") ||
    { echo "$checked" >&2; fail "cycle $k: the card after the cut breaks the contract (seed $seed)"; }
  this=$(grep "^$name " <<<"$checked")
  v() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$this"; }
  rows+=("$(printf '| %d | %d.%03d s | %d s | %s | %s | %s | %s | %s | %s | %s | %s |' "$k" $((cut_ms / 1000)) $((cut_ms % 1000)) \
    $((SECONDS - t0)) "$(v durable)" "$(v written)" "$(v window)" "$(v recovered)" "$(v beyond)" "$(v lost_above)" "$(v missing_below)" \
    "$replayed, $fsck")")
  step "cycle $k: cut ${cut_ms} ms into the recording; durable $(v durable), recovered $(v recovered), missing below the durable point $(v missing_below); every earlier recording intact where the loop keeps it"
done
if [ "$cuts" != 0 ]; then
  phase "power cuts ($cuts cycles)"
  step "the boot after the last cut: rtrec recover on the board, then the host checks again"
  boot after-cuts after-cuts
  wait_exit "$PLAN_TIMEOUT" || { tail_log; fail "the boot after the cuts did not end within $PLAN_TIMEOUT s"; }
  m=$(markers)
  grep -qx 'after-cuts ok' <<<"$m" || { tail_log; fail "the boot after the cuts failed: $(grep -E 'fail' <<<"$m" | paste -sd';')"; }
  copy=$card
  r=$(e2fsck -fn "$card" 2>&1) || { echo "$r" >&2; fail "e2fsck -fn finds errors on the card after the last boot's clean shutdown"; }
  dir=$(read_dir /cuts)
  checked=$(python3 scripts/board/check-records.py "$host_rtrec" "$dir" "$verdict" "${recs[@]}") ||
    { echo "$checked" >&2; fail "after the last boot's recover, the card breaks the contract (seed $seed)"; }
  phase "last boot and its check"
  out "" "Power cuts ($cuts cycles, seed $seed; kill -9 of qemu at the moment drawn; the journal replayed on a copy of the card):" "" \
    "| cycle | cut after | cycle's wall time | durable (published) | written (published) | kept from (the loop retired below) | records recovered | beyond durable | lost above durable | missing below durable | journal replayed, e2fsck -fn |" \
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |" "${rows[@]}"
fi

out "" "Wall time of each phase (the host's, on this machine):" "${phases[@]/#/  }" \
  "$(printf '  %-34s %5d s' total $((SECONDS - t_start)))"
if [ "$cuts" = 0 ]; then
  step "done: the plan passed; no power cuts asked (report: ${report#"$PWD"/})"
else
  step "done: the plan passed and $cuts power cuts lost nothing below a published durable point (report: ${report#"$PWD"/})"
fi
