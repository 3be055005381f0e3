#!/usr/bin/env bash
# What shipping beside a recording costs the recorder (issue 46, item 6),
# measured in one run: the same recording (4 KiB every 1 ms for 10 s,
# as `record --rt` where permitted) alone, then with `rtrec ship`
# uploading a backlog of closed recordings at full speed beside it, the
# pair repeated ROUNDS times; then record()'s and write()'s maxima, the
# schedule's lateness and the drops of each, each "beside" run over the
# "alone" run before it, and what the shipper moved (MiB/s, CPU s per
# MiB shipped, from its own --json summary).
#
#   sudo scripts/ship-beside.sh [ROUNDS] [BACKLOG_MIB]   # defaults 2, 1024
#
# Design choices:
# - The server is a real S3 server, SeaweedFS (scripts/seaweedfs.sh
#   builds it), on this machine: its data on tmpfs and its processes at
#   nice 19, so that what the recorder meets is the shipper (reading the
#   backlog from the recording's disk, signing and sending), not a
#   server that a device would reach over a network. It still takes CPU
#   on the same cores: the ratios are an upper bound of a device's.
# - Alone and beside alternate, so a drift of the machine over the run
#   lands on both; the ratio is each beside over the alone run just
#   before it (the VM's maxima move several times between runs).
# - Nothing global changes: a private directory under /var/tmp (a disk,
#   not tmpfs) and one under /dev/shm, both removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
backlog_mib=${2:-1024}
rtrec=${RTREC:-target/release/rtrec}
[ -x "$rtrec" ] || { echo "ship-beside: no $rtrec (cargo build --release)" >&2; exit 1; }
. scripts/weed-mini.sh
weed_init ship-beside
work=$(mktemp -d /var/tmp/rtrec-ship-beside-XXXXXX)
shm=$(mktemp -d /dev/shm/rtrec-ship-beside-XXXXXX)
cleanup() {
  weed_down
  rm -rf "$work" "$shm"
}
trap cleanup EXIT
export AWS_ACCESS_KEY_ID=rtrec-bench AWS_SECRET_ACCESS_KEY=rtrec-bench-secret S3_BUCKET=fleet
weed_up "$shm" "$work/weed.log" nice -n 19
echo "ship-beside: SeaweedFS up; recording a backlog of ${backlog_mib} MiB" >&2
mkdir -p "$work/backlog"
for i in $(seq $(( backlog_mib / 64 ))); do
  "$rtrec" record --quiet --dir "$work/backlog" --period 1ms --size 64KiB --total 64MiB --file-size 64MiB --no-refill >/dev/null 2>&1
done
rec() { mkdir -p "$work/$1"; "$rtrec" record --quiet --rt --dir "$work/$1" --period 1ms --size 4KiB --duration 10s --json "$work/$1.json" >/dev/null 2>"$work/$1.err" \
  || "$rtrec" record --quiet --dir "$work/$1" --period 1ms --size 4KiB --duration 10s --json "$work/$1.json" >/dev/null; }
for r in $(seq "$rounds"); do
  echo "ship-beside: round $r: alone" >&2
  rec "alone-$r"
  echo "ship-beside: round $r: beside a full-speed upload" >&2
  rm -f "$work/backlog/.shipped"
  "$rtrec" ship "$work/backlog" --to "s3://fleet/round-$r" --endpoint http://127.0.0.1:8333 \
    --device bench --json "$work/ship-$r.json" >"$work/ship-$r.out" 2>&1 &
  ship_pid=$!
  sleep 2
  rec "beside-$r"
  if kill -0 "$ship_pid" 2>/dev/null; then
    still=1
  else
    still=0
  fi
  wait "$ship_pid" || true
  echo "$still" >"$work/ship-$r.still"
done
python3 - "$work" "$rounds" <<'EOF'
import json, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def j(name):
    return json.load(open(f"{work}/{name}.json"))
print("round  run      record() max   write() max  lateness max  dropped | beside ÷ alone: record()  write()  lateness | ship MiB/s  CPU s/MiB  busy all along")
for r in range(1, rounds + 1):
    a, b, s = j(f"alone-{r}"), j(f"beside-{r}"), j(f"ship-{r}")
    still = open(f"{work}/ship-{r}.still").read().strip() == "1"
    for name, v in (("alone", a), ("beside", b)):
        print(f"{r:>5}  {name:<7} {v['record_ns']['max']/1e3:>10.1f} µs {v['write_ns']['max']/1e3:>10.1f} µs {v['lateness_ns']['max']/1e3:>10.1f} µs {v['records_dropped']:>8}", end="")
        if name == "beside":
            ratio = lambda k: v[k]['max'] / max(a[k]['max'], 1)
            cpu = s.get("cpu_s_per_mib")
            print(f" | {ratio('record_ns'):>24.2f} {ratio('write_ns'):>8.2f} {ratio('lateness_ns'):>9.2f} | {s['mib_per_s']:>10.1f} {cpu if cpu is not None else float('nan'):>10.4f}  {'yes' if still else 'no (ended first)'}")
        else:
            print()
EOF
