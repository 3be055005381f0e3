#!/usr/bin/env bash
# The release check: the long runs CI cannot afford (CI runs each of them
# short), at the counts the docs quote. Run it as root on the machine the
# release is qualified on, before tagging; it takes several hours.
#
#   bash scripts/release-check.sh            # every check, in the order below
#   bash scripts/release-check.sh --list     # the checks and their commands
#   bash scripts/release-check.sh NAME...    # only these checks
#
# Each check's output goes to target/release-check/STAMP/NAME.log; a table
# of the checks (exit code, seconds) is printed at the end, and the script
# exits 1 if any failed. The counts are the ones the docs state (a change
# here is a change there):
#
#   field-soak    docs/unattended.md "The field-fault soak": 200 cycles of
#                 kill -9, full card, vanished card, frozen card and signal
#                 storm on the four back-ends (CI: 10)
#   soak          docs/unattended.md "Soak test": 200 kill -9 cycles of a
#                 budgeted loop (CI: 20)
#   crash-cycles  docs/unattended.md "A year of power cuts compressed":
#                 1,000 power cuts in a row under the crash emulator
#   crash-states  docs/durability.md "Release qualification": 10,000
#                 crash states, every cell (CI: 200)
#   ship-power    docs/ship.md: 100 power cuts while shipping (CI: 10)
#   frame-props   the reader's and the frame fuzzer's properties at
#                 20,000 cases each (CI: proptest's default)
#
# Design choice: the counts go in as the environment variables and flags
# the tests read (tests/release_check.rs holds this script to them: a
# renamed variable would otherwise run the CI count silently).
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A cmd=(
  [field-soak]="RTREC_FIELD_SOAK_CYCLES=200 cargo test --release --test service field_faults -- --nocapture"
  [soak]="RTREC_SOAK_CYCLES=200 cargo test --release --test soak -- --nocapture"
  [crash-cycles]="./target/release/rtrec bench --study crash --crash-cycles 1000 --json \$out/crash-cycles.json"
  [crash-states]="./target/release/rtrec bench --study crash --crash-states 10000 --json \$out/crash-states.json"
  [ship-power]="bash scripts/seaweedfs.sh && RTREC_SHIP_CUTS=100 cargo test --release --test ship_power -- --nocapture"
  [frame-props]="PROPTEST_CASES=20000 cargo test --release -p rtrec-engine --test reader_props --test fuzz_frames"
)
order=(field-soak soak crash-cycles crash-states ship-power frame-props)

if [ "${1:-}" = --list ]; then
  for n in "${order[@]}"; do printf '%-13s %s\n' "$n" "${cmd[$n]}"; done
  exit 0
fi
chosen=("$@")
[ ${#chosen[@]} -gt 0 ] || chosen=("${order[@]}")
for n in "${chosen[@]}"; do
  [ -n "${cmd[$n]:-}" ] || { echo "release-check: no check named '$n' (--list shows them)"; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "release-check: run it as root (the checks mount loop images and freeze cards)"; exit 2; }

out=target/release-check/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
# Every check runs with a missing privilege or feature as a failure, not a
# skip, as in CI.
export RTREC_REQUIRE_PRIVILEGED=1
cargo build --release -q
declare -A rc secs
for n in "${chosen[@]}"; do
  echo "release-check: $n: ${cmd[$n]} (log: $out/$n.log)"
  t0=$SECONDS
  set +e
  out=$out bash -c "${cmd[$n]}" >"$out/$n.log" 2>&1
  rc[$n]=$?
  set -e
  secs[$n]=$((SECONDS - t0))
  echo "release-check: $n: exit ${rc[$n]} after ${secs[$n]} s"
done
echo
printf '%-13s %5s %8s\n' check exit seconds
failed=0
for n in "${chosen[@]}"; do
  printf '%-13s %5s %8s\n' "$n" "${rc[$n]}" "${secs[$n]}"
  [ "${rc[$n]}" = 0 ] || failed=1
done
echo "release-check: logs in $out"
exit "$failed"
