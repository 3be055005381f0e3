# shellcheck shell=bash
# Sourced by scripts/msrv.sh and scripts/cross.sh: the oldest compiler the
# workspace supports, as Debian 12 ships it (`rustc-web`, the one a board
# vendor's Debian build machine has), and a pinned-package installer.
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
