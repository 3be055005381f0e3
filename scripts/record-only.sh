#!/usr/bin/env bash
# Checks a record-only rtrec (`cargo build --no-default-features`,
# docs/embedded.md): it records, verifies and exports, and refuses what it
# left out (bench, report, record --explain, record --device, completions,
# man, the table exports, ls, ship) with one sentence naming the cargo feature and exit code 2, never
# clap's "unrecognized subcommand".
#
#   scripts/record-only.sh BINARY                 # on this machine
#   scripts/record-only.sh BINARY RUNNER...       # e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu
#
# .ci/run runs it on the stock toolchain's build, scripts/board-build.sh
# on the boards' (rustc 1.85; the ARM ones under qemu-user).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/record-only.sh BINARY [RUNNER...]" >&2; exit 2; }
bin=$1
shift
run=("$@" "$bin")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "record-only.sh: $*" >&2; exit 1; }

if "${run[@]}" --help | grep -qE '^  (bench|report|completions|man) '; then
  fail "$bin lists bench, report, completions or man in --help: it is not a record-only build"
fi
mkdir "$work/rec"
"${run[@]}" record --period 5ms --size 16KiB --count 400 --dir "$work/rec" --quiet
"${run[@]}" verify "$work/rec" >"$work/verify.txt"
grep -q '400 records, 0 lost (stored), 0 missing, 0 damaged range(s): clean' "$work/verify.txt" ||
  fail "verify did not find 400 clean records: $(cat "$work/verify.txt")"
"${run[@]}" export "$work/rec" -o "$work/out.bin"
[ "$(stat -c %s "$work/out.bin")" = $((400 * 16384)) ] || fail "export wrote $(stat -c %s "$work/out.bin") bytes, not 400 records of 16 KiB"

# refuse FEATURE ARGS...: exit code 2 and one line naming FEATURE.
refuse() {
  local feature=$1 out rc
  shift
  set +e
  out=$("${run[@]}" "$@" 2>&1 >/dev/null)
  rc=$?
  set -e
  if [ "$rc" != 2 ] || [ "$(wc -l <<<"$out")" != 1 ] ||
    ! grep -q "built without .* (cargo feature \`$feature\`)" <<<"$out"; then
    fail "\`rtrec $*\` exited $rc with: $out (expected one sentence naming the cargo feature \`$feature\`, exit code 2)"
  fi
}
refuse bench bench --cases ALL
refuse bench __bgload
refuse report report "$work/x.json" -o "$work/x.html"
refuse emu __emulate
refuse trace record --explain --count 1 --dir "$work/rec"
refuse emu record --device sd --count 1 --dir "$work/rec"
refuse completions completions bash
refuse man man record
refuse tables export --format csv "$work/rec" -o -
refuse tables ls "$work/rec"
refuse ship ship "$work/rec" --to s3://fleet/rec
echo "record-only: 400 records recorded, verified clean and exported; bench, report, --explain, --device, completions, man, the table exports, ls and ship refused in one sentence"
