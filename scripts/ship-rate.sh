#!/usr/bin/env bash
# `rtrec ship`'s upload rate against boto3's on the same data and the same
# server (issue 46, "Done when": goal ≥ 0.9), in ROUNDS rounds that
# alternate the two so that both meet the same load: a real S3 server
# (SeaweedFS, `weed mini`, on 127.0.0.1:8333), one closed recording of
# SIZE in one file, read once into the page cache before each upload.
# rtrec ships it with its defaults (8 MiB parts, idle I/O class, nice
# 19, each chunk dropped from the page cache once read: it reads the file
# twice, once for its CRC32C and once to send, so the second read comes
# from the disk); boto3 uploads it with one thread in 8 MiB parts
# (`upload_file`, `TransferConfig(use_threads=False)`), at normal
# priority. The server is warmed first by one upload (a fresh server
# allocates its volumes on its first writes). Each round prints both
# rates (MiB/s, the wall time of the whole command) and their ratio; the
# last line the median ratio and the spread.
#
#   scripts/ship-rate.sh [ROUNDS] [SIZE]    # 5 100MiB
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
size=${2:-100MiB}
rtrec=${RTREC:-$PWD/target/release/rtrec}
. scripts/weed-mini.sh
weed_init ship-rate
python3 -c 'import boto3' 2>/dev/null || { echo "ship-rate: needs boto3 (python3 -m pip install boto3)" >&2; exit 1; }
work=$(mktemp -d /var/tmp/rtrec-ship-rate-XXXXXX)
cleanup() {
  weed_down
  rm -rf "$work"
}
trap cleanup EXIT
export AWS_ACCESS_KEY_ID=rtrec-rate AWS_SECRET_ACCESS_KEY=rtrec-rate-secret S3_BUCKET=rate
export AWS_ENDPOINT_URL=http://127.0.0.1:8333 AWS_REGION=us-east-1
weed_up "$work/weed" "$work/weed.log"
mkdir "$work/rec"
"$rtrec" record --quiet --dir "$work/rec" --period 1ms --size 64KiB --total "$size" --file-size 1GiB --no-refill >/dev/null
file=$(ls "$work"/rec/*.rtr)
bytes=$(stat -c %s "$file")
cat >"$work/boto.py" <<'EOF'
import sys, time, boto3
from boto3.s3.transfer import TransferConfig
s3 = boto3.client("s3")
cfg = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20, use_threads=False)
t0 = time.monotonic()
s3.upload_file(sys.argv[1], "rate", sys.argv[2], Config=cfg)
print(time.monotonic() - t0)
EOF
# A fresh server allocates its volumes on its first writes: whoever went
# first paid for them. One throwaway upload of the file warms it.
python3 "$work/boto.py" "$file" warm-up >/dev/null
echo "ship-rate: $bytes bytes in one file, $rounds rounds (rtrec ship, then boto3)" >&2
ratios=()
for r in $(seq "$rounds"); do
  cat "$file" >/dev/null
  rm -f "$work/rec/.shipped"
  t0=$EPOCHREALTIME
  "$rtrec" ship "$work/rec" --to "s3://rate/r$r" --device d >/dev/null
  t1=$EPOCHREALTIME
  cat "$file" >/dev/null
  t2=$EPOCHREALTIME
  python3 "$work/boto.py" "$file" "boto/r$r/$(basename "$file")" >/dev/null
  t3=$EPOCHREALTIME
  read -r ship_rate boto_rate ratio < <(python3 -c "b=$bytes/1048576; s=b/($t1-$t0); o=b/($t3-$t2); print(f'{s:.1f} {o:.1f} {s/o:.2f}')")
  ratios+=("$ratio")
  echo "round $r: rtrec ship $ship_rate MiB/s, boto3 $boto_rate MiB/s, ratio $ratio"
done
python3 -c "
import statistics, sys
r = sorted(float(x) for x in sys.argv[1:])
print(f'median ratio {statistics.median(r):.2f} (min {r[0]:.2f}, max {r[-1]:.2f}, {len(r)} rounds)')
" "${ratios[@]}"
