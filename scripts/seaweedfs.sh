#!/usr/bin/env bash
# Prints the path of the SeaweedFS server (`weed`) the shipping tests
# start (tests/ship.rs, docs/ship.md), building it first when it is not
# cached: the module github.com/seaweedfs/seaweedfs at a pinned version,
# from the Go module proxy, built in a writable copy of the module
# (`go install MODULE/weed@VERSION` is refused: its go.mod has replace
# directives). The build takes 4-8 minutes of CPU and gives a 233 MB
# binary, cached by version under target/seaweedfs/VERSION/weed.
#
#   scripts/seaweedfs.sh             # the path (building it if needed)
#   scripts/seaweedfs.sh --cached    # the path, or exit 1 when not built
#   scripts/seaweedfs.sh --version   # the pinned version
#
# Design choice: SeaweedFS (Apache-2.0) is a real S3 server that builds
# from a registry this project reaches (Go's module proxy); no mock
# stands in for it.
set -euo pipefail
cd "$(dirname "$0")/.."
module=github.com/seaweedfs/seaweedfs
version=v0.0.0-20261109003541-7506e5f91cd6
out=target/seaweedfs/$version/weed

usage() { echo "usage: scripts/seaweedfs.sh [--cached | --version]" >&2; exit 2; }
mode=build
case $# in
  0) ;;
  1) case $1 in
       --cached) mode=cached ;;
       --version) echo "$version"; exit 0 ;;
       -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
       *) usage ;;
     esac ;;
  *) usage ;;
esac

if [ -x "$out" ]; then
  echo "$PWD/$out"
  exit 0
fi
if [ "$mode" = cached ]; then
  echo "seaweedfs.sh: no weed at $out (scripts/seaweedfs.sh builds it)" >&2
  exit 1
fi
command -v go >/dev/null || { echo "seaweedfs.sh: no Go toolchain (go) on PATH to build SeaweedFS" >&2; exit 1; }
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
echo "seaweedfs.sh: building $module@$version (several minutes)" >&2
src=$(cd "$work" && go mod download -json "$module@$version" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
mkdir -p "$(dirname "$out")"
(cd "$work/src/weed" && nice -n 19 go build -trimpath -ldflags='-s -w' -o "$work/weed" .)
mv "$work/weed" "$out"
echo "$PWD/$out"
