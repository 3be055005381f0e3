#!/usr/bin/env bash
# Checks the whole workspace with the oldest compiler it declares
# (`rust-version` in Cargo.toml): Debian 12's rustc-web, installed at a
# pinned version, with the dependency versions of Cargo.lock (--locked:
# a dependency that needs a newer rustc fails here, not on a user's board
# build machine). Own target directory, so the stock toolchain's artifacts
# are not rebuilt.
#
# Design choice (CI's 40 minutes): `cargo check`, not `cargo build`. What
# the oldest compiler must accept is the source — syntax, types, the
# standard library's API at that version, every dependency's — and check
# compiles all of it without generating code. The code that compiler
# generates is built and run where it ships: scripts/cross.sh (the full binary, the C library and
# the engine's tests on aarch64 and armv7) and scripts/board-build.sh (the
# record-only binary and the C library of the boards), both with this
# rustc. The x86-64 sizes in docs/embedded.md are the stock toolchain's
# (scripts/footprint.sh).
#
#   scripts/msrv.sh            # as CI runs it
#   scripts/msrv.sh --build-only   # the same (CI runs it beside its suite)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/debian-rust.sh
. scripts/debian-rust.sh

deb_install "${RUST_DEBS[@]}"
check_declared_msrv
echo "msrv: $("$DEB_RUSTC" --version)"
check() { RUSTC="$DEB_RUSTC" "$DEB_CARGO" check --release --locked --target-dir target/debian -q "$@"; }
# The record-only build's features (docs/embedded.md) and the workspace's.
check -p rtrec --no-default-features
check --workspace
[ "${1:-}" = --build-only ] && exit 0
echo "msrv: the workspace compiles with rust-version $(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)"
