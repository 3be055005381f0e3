# shellcheck shell=bash
# Sourced by scripts/msrv.sh, scripts/cross.sh, scripts/board-build.sh and
# scripts/board-vm.sh:
# the oldest compiler the workspace supports, as Debian 12 ships it
# (`rustc-web`, the one a board vendor's Debian build machine has), the ARM
# cross toolchains, qemu-user and qemu-system, and a pinned-package installer.
#
# The versions are pinned so that CI builds with exactly the compiler the
# workspace declares (`rust-version` in Cargo.toml). When Debian's mirror
# moves on (a point release replaces a version), the install stops with a
# sentence saying which pin to update; it never takes whatever is newest.

# Debian 12's rustc-web at the declared MSRV.
RUST_DEB_VERSION="1.85.0+dfsg3-1~deb12u3"
# The compiler and cargo it installs (rustup's, first on PATH, stay the default).
DEB_RUSTC=/usr/bin/rustc
DEB_CARGO=/usr/bin/cargo
# The packages that bring them, each pinned: rustc-web depends on its
# standard library at exactly its own version, and apt resolves an
# unpinned dependency to the newest candidate (the security updates'
# rustc-web 1.96), then refuses ("held broken packages"). So the standard
# library's two packages are named at the pin too.
rust_minor=${RUST_DEB_VERSION%%+*}
RUST_DEBS=("rustc-web=$RUST_DEB_VERSION" "cargo-web=$RUST_DEB_VERSION"
  "libstd-rust-web-dev=$RUST_DEB_VERSION" "libstd-rust-web-${rust_minor%.*}=$RUST_DEB_VERSION")

# The aarch64 board build's linker (scripts/board-build.sh): Debian 12's
# lld of LLVM 19 (it brings libllvm19 at exactly this version).
LLD_DEB_VERSION="1:19.1.7-3~deb12u1"
# The ARM targets' C cross compiler (the linker), C library and qemu-user.
GCC_DEB_VERSION="4:12.2.0-3"
LIBC_DEB_VERSION="2.36-8cross1"
QEMU_DEB_VERSION="1:7.2+dfsg-7+deb12u18+b3"
# The emulated boards of scripts/board-vm.sh: qemu-system-arm (it has
# qemu-system-aarch64 too), from the same qemu build as qemu-user. Its two
# companions are named at the pin as rustc-web's standard library is: the
# binary depends on qemu-system-common at exactly its version, and apt
# would otherwise pick the newest candidate of each and refuse.
QEMU_SYSTEM_DEBS=("qemu-system-arm=$QEMU_DEB_VERSION" "qemu-system-common=$QEMU_DEB_VERSION"
  "qemu-system-data=${QEMU_DEB_VERSION%+b*}")

# cross_target TARGET: sets arch (Debian's name), gnu (the cross
# toolchain's prefix), qemu (the user-mode emulator) and cross_rustflags
# (what the target's crates need from rustc) for an ARM target, and the
# packages that bring them in cross_debs (PKG=VERSION); returns 1 for any
# other target.
#
# armv7: the io-uring crate ships bindings generated for 64-bit targets
# only and refuses others; its x86-64 bindings, which it falls back to, use
# only fixed-width types (the kernel's io_uring ABI passes addresses as
# __u64), laid out the same on 32-bit ARM (AAPCS aligns u64 to 8), so the
# check is skipped there.
cross_target() {
  cross_rustflags=
  case "$1" in
    aarch64-unknown-linux-gnu) arch=arm64 gnu=aarch64-linux-gnu qemu=qemu-aarch64 ;;
    armv7-unknown-linux-gnueabihf) arch=armhf gnu=arm-linux-gnueabihf qemu=qemu-arm
      cross_rustflags="--cfg io_uring_skip_arch_check" ;;
    *) return 1 ;;
  esac
  # shellcheck disable=SC2034 # read by the scripts that source this file
  cross_debs=("gcc-$gnu=$GCC_DEB_VERSION" "libc6-dev-$arch-cross=$LIBC_DEB_VERSION"
    "qemu-user=$QEMU_DEB_VERSION")
}

# cross_env TARGET [RUSTFLAGS]: after cross_target, points cargo at the
# cross linker and C compiler, gives rustc the target's cross_rustflags
# (and RUSTFLAGS), and runs the target's test binaries under qemu-user
# against the target's C library (cargo's target runner).
cross_env() {
  local triple
  triple=$(echo "$1" | tr 'a-z-' 'A-Z_')
  export "CARGO_TARGET_${triple}_RUSTFLAGS=${2:+$2 }$cross_rustflags"
  export "CARGO_TARGET_${triple}_LINKER=$gnu-gcc"
  export "CARGO_TARGET_${triple}_RUNNER=$qemu -L /usr/$gnu"
  export "CC_${1//-/_}=$gnu-gcc"
}

# deb_install PKG=VERSION...: installs each package at exactly that version
# unless it is already installed at it. Runs `apt-get update` once when the
# index lacks a version, and fails with one sentence when it still does.
deb_install() {
  local want=() spec pkg ver have updated=0
  for spec in "$@"; do
    pkg=${spec%%=*} ver=${spec#*=}
    have=$(dpkg-query -W -f '${Status} ${Version}' "$pkg" 2>/dev/null || true)
    [ "$have" = "install ok installed $ver" ] && continue
    if ! apt-cache show "$pkg=$ver" >/dev/null 2>&1 && [ $updated = 0 ]; then
      apt-get update -qq
      updated=1
    fi
    if ! apt-cache show "$pkg=$ver" >/dev/null 2>&1; then
      echo "${0##*/}: Debian's package index has no $pkg $ver (it has: $(apt-cache madison "$pkg" 2>/dev/null | awk '{print $3}' | paste -sd' ')); the pin in scripts/ is out of sync with the mirror: pick a listed version and check it builds" >&2
      return 1
    fi
    want+=("$spec")
  done
  [ ${#want[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
}

# Fails unless the workspace's declared rust-version is the pinned compiler's.
check_declared_msrv() {
  local declared have
  declared=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
  have=$("$DEB_RUSTC" --version | awk '{print $2}')
  case "$have" in
    "$declared" | "$declared".*) ;;
    *) echo "${0##*/}: Cargo.toml declares rust-version $declared but the pinned Debian compiler is $have: make them agree" >&2
       return 1 ;;
  esac
}
