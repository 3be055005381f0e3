#!/usr/bin/env bash
# The board build: the record-only binary and the C library with a standard
# library rebuilt for size, with Debian 12's pinned rustc 1.85 only
# (docs/embedded.md, "The board build"):
#
#   scripts/board-build.sh aarch64-unknown-linux-gnu
#   scripts/board-build.sh armv7-unknown-linux-gnueabihf
#   scripts/board-build.sh x86_64-unknown-linux-gnu
#
# 1. installs the pinned compiler and std's sources (`rust-web-src`, same
#    version: /usr/lib/rustlib/src/rust, where cargo's build-std looks in
#    the compiler's sysroot /usr), and for the ARM targets the cross
#    toolchain and qemu-user (scripts/debian-rust.sh, which also gives
#    armv7 the io-uring crate's `--cfg io_uring_skip_arch_check`);
# 2. builds `-p rtrec --no-default-features` and `-p rtrec-ffi` with the
#    `release-small` profile and `-Z build-std=std,panic_abort
#    -Z build-std-features=panic_immediate_abort,optimize_for_size`:
#    std is compiled from those sources (its own dependencies come from
#    crates.io) with the program, so std's panic message formatting,
#    backtrace printer and unwind tables are left out. `-Z` options need a
#    nightly compiler or RUSTC_BOOTSTRAP=1, set for these two cargo calls
#    only;
# 3. checks the binary (scripts/record-only.sh) and the C library
#    (examples/record.c linked against librtrec.so, its recording verified
#    by the binary), under qemu-user for the ARM targets;
# 4. prints the stripped sizes.
#
# A panic (a bug) aborts the process at once, with no message: in the
# binary as with `panic = "abort"`, but in the C library it ends the host
# program instead of becoming an error return (-ENOTRECOVERABLE). That is
# why this C library is a separate build, never the one scripts/install.sh
# installs.
#
# Artifacts: target/board/TARGET/release-small/{rtrec,librtrec.so}.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/debian-rust.sh
. scripts/debian-rust.sh

target=${1:-}
# --build-only: build the binary and the C library, run nothing (CI runs
# that beside its test suite under SCHED_IDLE; .ci/run, "The ARM builds").
build_only=0
[ "${2:-}" = --build-only ] && build_only=1
step() { echo "board[$target]: $* ($SECONDS s)"; }
debs=("${RUST_DEBS[@]}" "rust-web-src=$RUST_DEB_VERSION")
run=()
cc=cc strip=strip
if [ "$target" = x86_64-unknown-linux-gnu ]; then
  :
elif cross_target "$target"; then
  debs+=("${cross_debs[@]}")
  # armv7: std and the program in Thumb-2, the ARMv7-A encoding of 16- and
  # 32-bit instructions that Debian's armhf packages are built in (its gcc
  # defaults to -mthumb), instead of the target's default 32-bit ARM
  # instructions: the binary is 28 % smaller (docs/embedded.md). Every
  # ARMv7-A core runs it. rustc 1.85 warns once that `thumb-mode` is not a
  # stable target feature; this build is checked with that compiler only.
  #
  # Both: no panic locations (-Zlocation-detail=none, unstable like
  # build-std, RUSTC_BOOTSTRAP below). A panic here aborts at once
  # (panic_immediate_abort) and prints nothing, so the file, line and
  # column every panic site carried were never read: bytes on the board
  # for nothing (docs/embedded.md, "Footprint").
  extra="-Zlocation-detail=none"
  [ "$arch" = armhf ] && extra+=" -C target-feature=+thumb-mode"
  # aarch64: linked by LLVM's lld (Debian 12's lld-19, of LLVM 19 as
  # rustc 1.85 is, pinned in scripts/debian-rust.sh) instead of
  # binutils' ld. Design choice: ld pads the file so that RELRO ends on a
  # 64 KiB boundary (the largest page an aarch64 kernel may use), so the
  # binary grew in 64 KiB steps and every few KB of code took it past its
  # 1,000,000-byte budget; lld keeps the segments 64 KiB apart in memory
  # (right on 4, 16 and 64 KiB kernels) without padding the file, which
  # then grows with its code (docs/embedded.md, "Linked by lld").
  if [ "$arch" = arm64 ]; then
    debs+=("lld-19=$LLD_DEB_VERSION")
    extra+=" -C link-arg=-fuse-ld=lld -C link-arg=-B/usr/lib/llvm-19/bin"
  fi
  cross_env "$target" "$extra"
  run=(env "QEMU_LD_PREFIX=/usr/$gnu" "$qemu")
  cc=$gnu-gcc strip=$gnu-strip
else
  echo "usage: scripts/board-build.sh aarch64-unknown-linux-gnu|armv7-unknown-linux-gnueabihf|x86_64-unknown-linux-gnu [--build-only]" >&2
  exit 2
fi

step "installing the pinned toolchain and std's sources"
deb_install "${debs[@]}"
check_declared_msrv
[ -f /usr/lib/rustlib/src/rust/library/std/Cargo.toml ] || {
  echo "board-build.sh: rust-web-src left no std sources in /usr/lib/rustlib/src/rust/library" >&2
  exit 1
}

tdir=$PWD/target/board
out=$tdir/$target/release-small
build() {
  RUSTC="$DEB_RUSTC" RUSTC_BOOTSTRAP=1 "$DEB_CARGO" build -q --locked \
    --profile release-small --target "$target" --target-dir "$tdir" \
    -Z build-std=std,panic_abort \
    -Z build-std-features=panic_immediate_abort,optimize_for_size "$@"
}
step "building the record-only binary (std built with it)"
build -p rtrec --no-default-features
step "building the C library"
build -p rtrec-ffi

[ $build_only = 1 ] && { step "built (--build-only)"; exit 0; }
step "checking the record-only binary"
bash scripts/record-only.sh "$out/rtrec" "${run[@]}"

step "checking the C library: examples/record.c against librtrec.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The program asks for the SONAME, librtrec.so.0 (an install's link).
mkdir "$work/lib" "$work/rec"
ln -s "$out/librtrec.so" "$work/lib/librtrec.so.0"
"$cc" -std=c99 -Wall -Wextra -Werror -O2 -Iinclude examples/record.c \
  -L"$out" -Wl,-rpath,"$work/lib" -lrtrec -o "$work/record"
"${run[@]}" "$work/record" "$work/rec" >"$work/summary.txt"
"${run[@]}" "$out/rtrec" verify "$work/rec" >"$work/verify.txt"
grep -q '1000 records, 0 lost (stored), 0 missing, 0 damaged range(s): clean' "$work/verify.txt" || {
  echo "board-build.sh: the C example's recording is not 1,000 clean records: $(cat "$work/verify.txt")" >&2
  exit 1
}
echo "board[$target]: examples/record.c recorded 1,000 records through librtrec.so; verify: clean"

for f in rtrec librtrec.so; do
  "$strip" -o "$work/s" "$out/$f"
  echo "board[$target]: $f $(stat -c %s "$work/s") bytes stripped"
done
step "done"
