#!/usr/bin/env bash
# A fleet run of `rtrec ship` with faults at random (issue 46, "Done
# when"): DEVICES devices with RECORDINGS closed recordings each (every
# fifth 12 MiB in one file, so it goes up in 5 MiB parts; the others 2
# MiB in 1 MiB files) ship to one real S3 server (SeaweedFS) while the
# shippers are killed with SIGKILL at random moments (three runs in four,
# up to a device's eighth) and the server is
# killed and restarted once in the middle; each device's shipper is run
# again until it exits 0, as a service manager restarts it. Then every
# device's recordings are listed from the bucket (`rtrec ls s3://`), each
# is fetched (`rtrec fetch`: every file checked against its manifest's
# size and CRC32C) and verified, and the table says: recordings expected,
# present, duplicated (listed more than once), corrupt (a fetch or verify
# that failed), the kills, and the bytes sent again after them (the
# shippers' `bytes_resent`).
#
#   sudo scripts/ship-fleet.sh [DEVICES] [RECORDINGS] [SEED]   # 5 20 1
set -euo pipefail
cd "$(dirname "$0")/.."
devices=${1:-5}
per=${2:-20}
RANDOM=${3:-1}
rtrec=${RTREC:-$PWD/target/release/rtrec}
. scripts/weed-mini.sh
weed_init ship-fleet
work=$(mktemp -d /var/tmp/rtrec-ship-fleet-XXXXXX)
cleanup() {
  weed_down
  rm -rf "$work"
}
trap cleanup EXIT
export AWS_ACCESS_KEY_ID=rtrec-fleet AWS_SECRET_ACCESS_KEY=rtrec-fleet-secret S3_BUCKET=fleet
export AWS_ENDPOINT_URL=http://127.0.0.1:8333
weed_up "$work/weed" "$work/weed.log"
echo "ship-fleet: recording $devices × $per recordings" >&2
for d in $(seq "$devices"); do
  mkdir -p "$work/dev$d"
  for r in $(seq "$per"); do
    if [ $(( r % 5 )) = 0 ]; then
      "$rtrec" record --quiet --dir "$work/dev$d" --period 1ms --size 64KiB --total 12MiB --file-size 12MiB --no-refill >/dev/null 2>&1
    else
      "$rtrec" record --quiet --dir "$work/dev$d" --period 1ms --size 16KiB --total 2MiB --file-size 1MiB --no-refill >/dev/null 2>&1
    fi
  done
done
kills=0
runs=0
restarted=0
for d in $(seq "$devices"); do
  n=0
  while :; do
    n=$((n + 1))
    runs=$((runs + 1))
    "$rtrec" ship "$work/dev$d" --to s3://fleet/plant --device "dev$d" --part-size 5MiB \
      --json "$work/ship-$d-$n.json" >"$work/ship-$d-$n.out" 2>&1 &
    pid=$!
    # Three runs in four are cut by SIGKILL after 0.10–0.99 s, up to a
    # device's eighth run (then it is let finish, as a service's restarts
    # would get there).
    if [ $(( RANDOM % 4 )) != 0 ] && [ "$n" -lt 8 ]; then
      sleep "0.$(( RANDOM % 9 + 1 ))$(( RANDOM % 10 ))"
      if kill -9 "$pid" 2>/dev/null; then kills=$((kills + 1)); fi
    fi
    # Once, in the middle of the fleet, the server goes down and comes back.
    if [ "$restarted" = 0 ] && [ "$d" = $(( (devices + 1) / 2 )) ] && [ "$n" = 2 ]; then
      kill -9 "$weed_pid"; wait "$weed_pid" 2>/dev/null || true
      sleep 1
      weed_up "$work/weed" "$work/weed.log"
      restarted=1
    fi
    if wait "$pid"; then
      break
    fi
    [ "$n" -lt 40 ] || { echo "ship-fleet: dev$d did not finish in 40 runs: $(tail -2 "$work/ship-$d-$n.out")" >&2; exit 1; }
  done
done
echo "ship-fleet: listing and fetching" >&2
"$rtrec" ls s3://fleet/plant --json >"$work/ls.json"
present=0
corrupt=0
while read -r loc; do
  present=$((present + 1))
  out="$work/fetch/$present"
  if ! "$rtrec" fetch "$loc" "$out" >/dev/null 2>"$work/fetch-$present.err" || ! "$rtrec" verify "$out" >/dev/null 2>&1; then
    corrupt=$((corrupt + 1))
    echo "ship-fleet: $loc: $(cat "$work/fetch-$present.err")" >&2
  fi
  rm -rf "$out"
done < <(python3 -c '
import json,sys
v=json.load(open(sys.argv[1]))
for m in v["recordings"]:
    print("s3://fleet/" + m["manifest_key"][: -len("/manifest.json")])
' "$work/ls.json")
python3 - "$work" "$devices" "$per" "$present" "$corrupt" "$kills" "$runs" <<'EOF'
import glob, json, sys
work, devices, per, present, corrupt, kills, runs = sys.argv[1], *map(int, sys.argv[2:])
v = json.load(open(f"{work}/ls.json"))
ids = [m["recording_id"] for m in v["recordings"]]
dup = len(ids) - len(set(ids))
resent = shipped = 0
for f in glob.glob(f"{work}/ship-*.json"):
    try:
        s = json.load(open(f))
    except ValueError:
        continue  # a run killed before it wrote its summary
    resent += s.get("bytes_resent", 0)
    shipped += s.get("bytes_shipped", 0)
print(f"recordings expected {devices * per}, present {present}, duplicated {dup}, corrupt {corrupt}")
print(f"shipper runs {runs}, killed {kills}, server restarted once; bytes shipped {shipped} (the runs that wrote a summary), re-sent after a kill {resent}")
EOF
