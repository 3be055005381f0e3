# Sourced by the ship scripts (ship-fleet.sh, ship-beside.sh,
# ship-rate.sh): a SeaweedFS `weed mini` serving S3 on 127.0.0.1:8333 for
# one script's run. After `weed_init NAME`, `weed` is the server binary
# (scripts/seaweedfs.sh's cached build; NAME's one sentence and exit 1
# without it), `weed_up DIR LOG [WRAPPER…]` starts it on data directory
# DIR (in DIR, its output appended to LOG, under WRAPPER such as `nice -n
# 19`) and waits until it serves, `weed_pid` is its pid, and
# `weed_down` (for the script's EXIT trap) kills it. `weed_init` first
# takes the lock the tests take around each of their servers
# (tests/common/weed.rs), held until the script ends: one server on the
# machine at a time, so that 8333 is this script's.
weed_pid=
weed_init() {
  weed=$(bash scripts/seaweedfs.sh --cached) || { echo "$1: no SeaweedFS yet (bash scripts/seaweedfs.sh builds it)" >&2; exit 1; }
  exec 9>"${TMPDIR:-/tmp}/rtrec-test-seaweedfs.lock"
  flock 9
}
weed_up() {
  local dir=$1 log=$2
  shift 2
  mkdir -p "$dir"
  (cd "$dir" && exec "$@" "$weed" mini -dir="$dir/data" >>"$log" 2>&1) &
  weed_pid=$!
  for _ in $(seq 120); do
    (exec 3<>/dev/tcp/127.0.0.1/8333) 2>/dev/null && break
    sleep 0.5
  done
  sleep 2
}
weed_down() {
  [ -n "$weed_pid" ] && kill "$weed_pid" 2>/dev/null && wait "$weed_pid" 2>/dev/null
  return 0
}
