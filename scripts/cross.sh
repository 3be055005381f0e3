#!/usr/bin/env bash
# Cross-builds rtrec for an ARM board and tests it under qemu-user, with
# Debian 12's own packages only (rustup's targets are not needed):
#
#   scripts/cross.sh aarch64-unknown-linux-gnu
#   scripts/cross.sh armv7-unknown-linux-gnueabihf
#
# 1. installs the pinned compiler (scripts/debian-rust.sh), the target's C
#    cross toolchain and libc, and qemu-user;
# 2. unpacks Debian's standard library for the target (libstd-rust-web-dev
#    of that architecture) into a sysroot beside the host's: a multiarch
#    install of it fails on dependencies, while `apt-get download` (with
#    apt's state for that architecture kept in target/debian) + `dpkg -x`
#    changes nothing on the system;
# 3. builds the binary and the C library (librtrec.so, librtrec.a);
# 4. runs the engine's unit tests (unprivileged) through cargo's target
#    runner under qemu-user, then a record -> verify -> export round trip
#    of the release binary, the export compared byte for byte with the input.
#
# The record-only binary (`--no-default-features`) of these targets is
# scripts/board-build.sh's, with the same compiler, checked there under
# qemu-user: building it here too (with Debian's prebuilt std) cost CI
# minutes and proved nothing more (docs/embedded.md).
#
# Artifacts: target/debian/TARGET/release/{rtrec,librtrec.so,librtrec.a}.
# Under qemu only correctness is judged, never a timing (docs/embedded.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/debian-rust.sh
. scripts/debian-rust.sh

target=${1:-}
# --build-only: compile everything below (the binaries, the C library and
# the engine's unit tests) and stop before running any of it. CI runs that
# beside its test suite under SCHED_IDLE, then this script again in full,
# which finds the builds done (.ci/run, "The ARM builds").
# --no-tests: the binary and the C library only, no test built or run
# (scripts/board-vm.sh --ship boots that binary). The same cargo call as
# the other modes, so that all share one build: building the binary alone
# would unify the dependencies' features differently and build them again.
build_only=0 no_tests=0
case "${2:-}" in
  --build-only) build_only=1 ;;
  --no-tests) no_tests=1 ;;
esac
cross_target "$target" || {
  echo "usage: scripts/cross.sh aarch64-unknown-linux-gnu|armv7-unknown-linux-gnueabihf [--build-only | --no-tests]" >&2
  exit 2
}

step() { echo "cross[$target]: $* ($SECONDS s)"; }
step "installing the pinned toolchain"
deb_install "${RUST_DEBS[@]}" "${cross_debs[@]}"
check_declared_msrv

# The sysroot: the host's standard library (a link) and the target's.
tdir=$PWD/target/debian
sysroot=$tdir/sysroot-$RUST_DEB_VERSION
host=$("$DEB_RUSTC" -vV | sed -n 's/^host: //p')
if [ ! -d "$sysroot/lib/rustlib/$target/lib" ]; then
  step "unpacking Debian's $arch standard library into $sysroot"
  # apt's own state for the target architecture, in target/debian: the
  # system's dpkg is not told about a foreign architecture.
  debs=$(mktemp -d)
  state=$tdir/apt-$arch
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
  apt_arch=(-o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache"
    -o "Dir::State::status=/dev/null" -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch")
  # A mirror half-synced (one index failing) need not stop us: the pinned
  # version is either found below or reported as missing.
  apt-get "${apt_arch[@]}" update -qq || echo "cross.sh: apt-get update for $arch failed in part; trying with what it fetched" >&2
  (cd "$debs" && apt-get "${apt_arch[@]}" download -qq "libstd-rust-web-dev=$RUST_DEB_VERSION" 2>&1 |
    grep -v 'Download is performed unsandboxed') || true
  if ! ls "$debs"/*.deb >/dev/null 2>&1; then
    echo "cross.sh: Debian's index has no $arch libstd-rust-web-dev $RUST_DEB_VERSION (it has: $(apt-cache "${apt_arch[@]}" madison libstd-rust-web-dev | awk '{print $3}' | paste -sd' ')); the pin in scripts/debian-rust.sh is out of sync with the mirror" >&2
    exit 1
  fi
  for d in "$debs"/*.deb; do dpkg -x "$d" "$debs/root"; done
  mkdir -p "$sysroot/lib/rustlib"
  ln -sfn "$(dirname "$("$DEB_RUSTC" --print target-libdir)")" "$sysroot/lib/rustlib/$host"
  rm -rf "$sysroot/lib/rustlib/$target"
  mv "$debs/root/usr/lib/rustlib/$target" "$sysroot/lib/rustlib/$target"
  rm -rf "$debs"
fi

export RUSTC="$DEB_RUSTC"
# The target's std is Debian's, from the sysroot.
cross_env "$target" "--sysroot=$sysroot"
# No debug info: the artifacts are for a board, and it halves the link time.
export CARGO_PROFILE_RELEASE_DEBUG=0
cargo=("$DEB_CARGO" --locked)
opts=(--release --target "$target" --target-dir "$tdir")

step "building rtrec and the C library"
out=$tdir/$target/release
# The features: every command on aarch64, so that this build compiles
# every crate and feature of the workspace with the pinned rustc 1.85
# (check_declared_msrv: the declared rust-version), which is how CI proves
# the oldest compiler (docs/embedded.md); armv7 without the Arrow IPC
# export (Cargo.toml, `full-no-arrow`: its five crates are about a minute
# of CPU more per build, and tables are made on the host).
features=()
[ "$target" = armv7-unknown-linux-gnueabihf ] && features=(--no-default-features --features rtrec/full-no-arrow)
"${cargo[@]}" build -q "${opts[@]}" -p rtrec -p rtrec-ffi "${features[@]}"
file "$out/rtrec" "$out/librtrec.so" | sed "s|$tdir/||"
if [ $no_tests = 1 ]; then
  step "built (--no-tests)"
  exit 0
fi
if [ $build_only = 1 ]; then
  "${cargo[@]}" test -q --no-run "${opts[@]}" -p rtrec-engine --lib
  step "built (--build-only)"
  exit 0
fi

step "the engine's unit tests under $qemu"
log=$(mktemp)
if ! "${cargo[@]}" test "${opts[@]}" -p rtrec-engine --lib >"$log" 2>&1; then
  cat "$log"
  exit 1
fi
grep -E '^test result:' "$log"
rm -f "$log"

step "record -> verify -> export round trip under $qemu"
run=(env "QEMU_LD_PREFIX=/usr/$gnu" "$qemu" "$out/rtrec")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/rec" "$work/periodic"
head -c $((6400 * 1024)) /dev/urandom >"$work/in.bin"
"${run[@]}" record --stdin --size 16KiB --dir "$work/rec" --quiet --json "$work/summary.json" <"$work/in.bin"
"${run[@]}" verify "$work/rec"
# The real-time path too: the synthetic periodic source through the ring.
"${run[@]}" record --period 5ms --size 16KiB --count 400 --dir "$work/periodic" --quiet
"${run[@]}" verify "$work/periodic"
"${run[@]}" export "$work/rec" -o "$work/out.bin"
cmp "$work/in.bin" "$work/out.bin"
echo "cross[$target]: $(stat -c %s "$work/out.bin") bytes recorded, verified and exported back identical under $qemu"
step "done"
