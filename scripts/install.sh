#!/usr/bin/env bash
# Builds rtrec in release mode and installs it under a prefix. The C library
# is built on its own (`cargo build -p rtrec-ffi`), before the command line,
# so that none of the CLI's dependencies (clap and the engine's clap
# feature) end up in it, and its shared object is linked from librtrec.a
# with the version script crates/ffi/rtrec.map (rtrec_*@@RTREC_0.2 and 0.3, as
# crates/ffi/build.rs links the build tree's cdylib; relinking here also
# gives versions when the linker is not GCC, and --gc-sections), without
# debug information (--strip-debug: the standard library's and ours made
# the installed library 10.9 MB; its symbol table stays, for backtraces):
#   bin/rtrec
#   lib/librtrec.so.X.Y.Z, lib/librtrec.so.X (the SONAME), lib/librtrec.so
#   lib/librtrec.a, lib/pkgconfig/rtrec.pc
#   include/rtrec.h
#   share/man/man1/rtrec.1 and rtrec-COMMAND.1 (from `rtrec man`)
#   share/bash-completion/completions/rtrec, share/zsh/site-functions/_rtrec,
#   share/fish/vendor_completions.d/rtrec.fish
#   lib/systemd/system/rtrec-recorder@.service (dist/'s unit, its commands
#     pointed at PREFIX/bin/rtrec; /usr/local/lib/systemd/system is on
#     systemd's unit path, so `systemctl enable --now
#     rtrec-recorder@$(systemd-escape -p /data/rec).service` finds it)
#
# Usage: scripts/install.sh [--prefix DIR] [--destdir DIR] [--no-build]
#   --prefix   where it will live (default /usr/local); written into rtrec.pc
#   --destdir  staging root for packagers (files go to DESTDIR/PREFIX)
#   --no-build install what target/release already holds
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=/usr/local
destdir=
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --destdir) destdir=$2; shift 2 ;;
    --destdir=*) destdir=${1#*=}; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,/^#   --no-build/p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$prefix" in /*) ;; *) echo "install.sh: --prefix must be an absolute path" >&2; exit 2 ;; esac

# The C library's version (RTREC_VERSION_* in rtrec.h) and the CLI's.
version=$(sed -n 's/^version = "\(.*\)"/\1/p' crates/ffi/Cargo.toml | head -1)
cli_version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
major=${version%%.*}
if [ "$build" = 1 ]; then
  cargo build --release -q -p rtrec-ffi
fi
rel=target/release
# What a static link needs besides librtrec.a (rustc's native-static-libs).
private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cc -shared -Wl,--whole-archive "$rel/librtrec.a" -Wl,--no-whole-archive \
  -Wl,--version-script=crates/ffi/rtrec.map -Wl,-soname,"librtrec.so.$major" \
  -Wl,--gc-sections -Wl,--strip-debug $private -o "$stage/librtrec.so"
cp "$rel/librtrec.a" "$stage/librtrec.a"
if [ "$build" = 1 ]; then
  cargo build --release -q -p rtrec
fi
root="$destdir$prefix"
libdir="$prefix/lib"
install -d "$root/bin" "$root/lib/pkgconfig" "$root/lib/systemd/system" "$root/include" "$root/share/man/man1" \
  "$root/share/bash-completion/completions" "$root/share/zsh/site-functions" \
  "$root/share/fish/vendor_completions.d"

install -m 0755 "$rel/rtrec" "$root/bin/rtrec"
install -m 0755 "$stage/librtrec.so" "$root/lib/librtrec.so.$version"
ln -sf "librtrec.so.$version" "$root/lib/librtrec.so.$major"
ln -sf "librtrec.so.$major" "$root/lib/librtrec.so"
install -m 0644 "$stage/librtrec.a" "$root/lib/librtrec.a"
install -m 0644 include/rtrec.h "$root/include/rtrec.h"

# The unit runs the binary installed here, not /usr/bin's: `systemd-analyze
# verify` refuses a command that is not executable (issue 42, finding 4).
sed -e "s|/usr/bin/rtrec|$prefix/bin/rtrec|g" dist/rtrec-recorder@.service \
  > "$root/lib/systemd/system/rtrec-recorder@.service"
chmod 0644 "$root/lib/systemd/system/rtrec-recorder@.service"

sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$libdir|" -e "s|@VERSION@|$version|" \
    -e "s|@PRIVATE@|$private|" crates/ffi/rtrec.pc.in > "$root/lib/pkgconfig/rtrec.pc"

"$rel/rtrec" man > "$root/share/man/man1/rtrec.1"
# Every command the binary lists (hidden ones, such as __bgload, are not),
# so a new command gets its page without this list being kept by hand.
commands=$("$rel/rtrec" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF && $1 != "help" {print $1}')
[ -n "$commands" ] || { echo "install.sh: 'rtrec --help' lists no commands" >&2; exit 1; }
for c in $commands; do
  "$rel/rtrec" man "$c" > "$root/share/man/man1/rtrec-$c.1"
done
"$rel/rtrec" completions bash > "$root/share/bash-completion/completions/rtrec"
"$rel/rtrec" completions zsh > "$root/share/zsh/site-functions/_rtrec"
"$rel/rtrec" completions fish > "$root/share/fish/vendor_completions.d/rtrec.fish"
echo "installed rtrec $cli_version (librtrec $version) under $root"
