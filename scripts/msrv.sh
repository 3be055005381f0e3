#!/usr/bin/env bash
# Builds the whole workspace with the oldest compiler it declares
# (`rust-version` in Cargo.toml): Debian 12's rustc-web, installed at a
# pinned version, with the dependency versions of Cargo.lock (--locked:
# a dependency that needs a newer rustc fails here, not on a user's board
# build machine). Own target directory, so the stock toolchain's artifacts
# are not rebuilt; scripts/cross.sh shares it. The record-only binary
# (`--no-default-features`, docs/embedded.md) is built first and kept as
# target/debian/release/rtrec-record-only, then checked
# (scripts/record-only.sh); only the root crate is compiled twice.
#
#   scripts/msrv.sh            # as CI runs it
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/debian-rust.sh
. scripts/debian-rust.sh

deb_install "${RUST_DEBS[@]}"
check_declared_msrv
echo "msrv: $("$DEB_RUSTC" --version)"
build() { RUSTC="$DEB_RUSTC" CARGO_PROFILE_RELEASE_DEBUG=0 "$DEB_CARGO" build --release --locked --target-dir target/debian -q "$@"; }
build -p rtrec --no-default-features
cp target/debian/release/rtrec target/debian/release/rtrec-record-only
# --build-only: build, run nothing (CI runs that beside its test suite
# under SCHED_IDLE, then this script in full; .ci/run).
if [ "${1:-}" = --build-only ]; then
  build --workspace
  exit 0
fi
bash scripts/record-only.sh target/debian/release/rtrec-record-only
build --workspace
echo "msrv: the workspace builds with rust-version $(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)"
