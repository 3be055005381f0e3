#!/bin/sh
# The test plan on the emulated board (docs/board.md). scripts/board-vm.sh
# puts this file in the guest's initramfs, where /init runs it with the
# card (ext4 on /dev/mmcblk0) mounted on /card:
#
#   plan.sh plan          the plan: the guest's view of the card, doctor,
#                         recordings (periodic, --rt, flight recorder,
#                         --stdin), verify and export, the C example, and the
#                         unattended step (recover)
#   plan.sh cut CYCLE     one power-cut cycle: recover, then record until the
#                         host cuts the power, publishing the durable point
#   plan.sh after-cuts    the boot after the last cut: recover and verify
#   plan.sh ship          (scripts/board-vm.sh --ship, with the full
#                         binary) record two recordings, ship them to the
#                         host's SeaweedFS (/etc/ship.env), ship again
#
# It talks to the host through the serial console: a line the host reads
# starts with "@@rtrec-board " and ends with "@@" (a marker); every other
# line is for the person reading the log. What the host checks after
# power-off stays on the card (/card/board, /card/cuts).
#
# Every time printed here is the emulator's (TCG on a shared host, several
# times slower than a board and at the host's mercy): it is printed with
# that label and never judged.
#
# Runs under busybox sh: no bash, no jq.
set -u

CARD=/card
BOARD=$CARD/board   # the plan's recordings
CUTS=$CARD/cuts     # the power-cut cycles' recording directory (one, as an unattended recorder has)
SHIP=$CARD/ship     # --ship: the recordings the board ships
DEV=mmcblk0
QUEUE=/sys/block/$DEV/queue
EMULATED="emulated time, TCG: not a board's"

mark() { echo "@@rtrec-board $*@@"; }
say() { echo "plan: $*"; }

# uptime_s: seconds since boot, to 1/100 s (the guest's clock).
uptime_s() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }'; }

# step NAME FUNCTION [ARGS...]: runs it between begin and ok/fail markers.
FAILED=""
step() {
  name=$1
  shift
  mark "step $name begin"
  t0=$(uptime_s)
  if "$@"; then
    mark "step $name ok $(since "$t0") s ($EMULATED)"
  else
    mark "step $name fail $(since "$t0") s ($EMULATED)"
    FAILED="$FAILED $name"
  fi
}

# expect_accounted DIR RECORDS: rtrec verify calls DIR's recording clean,
# and each of its RECORDS records is there or its loss is stored. A drop
# (the ring full while the emulated card stalled) is the emulator's timing:
# counted and said, never judged. Sets LOST.
expect_accounted() {
  out=$(rtrec verify "$1")
  rc=$?
  echo "$out"
  [ $rc = 0 ] || { say "verify $1 exited $rc"; return 1; }
  counts=$(echo "$out" | tail -n 1 |
    sed -n 's/^[0-9]* file(s), \([0-9]*\) records, \([0-9]*\) lost (stored), 0 missing, 0 damaged range(s): clean$/\1 \2/p')
  [ -n "$counts" ] && [ $((${counts% *} + ${counts#* })) = "$2" ] ||
    { say "verify $1: not $2 records stored or stored as losses"; return 1; }
  LOST=${counts#* }
  [ "$LOST" = 0 ] ||
    say "$LOST of $2 records dropped and stored as losses: the ring was full while the emulated card stalled ($EMULATED; not judged)"
}

# summary_of CMD...: runs a recording (its output through a file, so that
# it is not a terminal and shows no progress line) and prints its summary
# under the label that says whose timings these are.
summary_of() {
  "$@" >/tmp/summary.txt 2>&1
  rc=$?
  say "summary (its latencies, lateness and missed periods are the emulator's: $EMULATED)"
  cat /tmp/summary.txt
  return $rc
}

# status_of KEY FILE: KEY's number in a --status file (one JSON line).
status_of() {
  awk -F'[{},]' -v key="$1" '{
      for (i = 1; i <= NF; i++) { split($i, kv, ":"); gsub(/"/, "", kv[1]); if (kv[1] == key) print kv[2] }
    }' "$2" 2>/dev/null
}

# ===========================================================================
# Unattended operation (issue 31): the one place to extend.
#
# A recorder left alone on a board records in a loop within a disk budget,
# and every boot first closes what the last power cut interrupted. The plan's
# `unattended` step and every power-cut cycle go through the three
# definitions below, so the loop recording's options and the new recovery
# are added here and nowhere else:
#
# - UNATTENDED_RECORD_OPTS: options of every unattended recording: a loop
#   recording whose budget (3 files of 1 MiB, the directory's: earlier
#   cycles' recordings count and retire first) is smaller than what the
#   power-cut cycles write in all, so retiring happens under power cuts
#   (the host's check-records.py counts records below a recording's kept
#   window as retired, not missing; tests/soak.rs proves the bound).
# - unattended_recover DIR: what a boot runs before recording: `rtrec
#   recover DIR` closes every interrupted recording whose recorder is gone
#   (end frame "interrupted, closed by recover", unused space given back).
# - interrupted_verdict: what `rtrec verify` must say of an interrupted
#   recording after unattended_recover: "clean" (exit 0; the file's status
#   is `interrupted`). ("unfinished", exit 1 with nothing damaged, was the
#   verdict before recover closed recordings.)
UNATTENDED_RECORD_OPTS="--keep-files 3"
interrupted_verdict=clean

unattended_recover() {
  rtrec recover "$1"
}

# unattended: a loop recording killed (SIGKILL) once it has queued 500
# records (two file switches' worth), then what the next boot does: recover, then
# verify per interrupted_verdict.
unattended() {
  d=$BOARD/loop
  mkdir -p "$d"
  rm -f /tmp/loop.json
  # shellcheck disable=SC2086 # the options are words
  rtrec record --dir "$d" --period 2ms --size 4KiB --file-size 1MiB --status /tmp/loop.json --quiet \
    $UNATTENDED_RECORD_OPTS &
  pid=$!
  wait_queued $pid /tmp/loop.json 500 || return 1
  kill -9 $pid
  wait $pid 2>/dev/null
  unattended_recover "$d" || return 1
  check_interrupted "$d"
}
# ===========================================================================

# check_interrupted DIR: verify of DIR after unattended_recover is what
# interrupted_verdict says.
check_interrupted() {
  out=$(rtrec verify "$1")
  rc=$?
  echo "$out"
  case "$interrupted_verdict.$rc" in
    clean.0) return 0 ;;
    unfinished.0) return 0 ;;
    unfinished.1)
      # Not clean only for being unfinished: no damaged range, no corrupt file.
      echo "$out" | grep -q ' 0 damaged range(s): NOT CLEAN$' || { say "verify found damage in $1"; return 1; }
      if echo "$out" | grep -qi 'corrupt'; then say "verify calls a file corrupt in $1"; return 1; fi
      say "$1: unfinished after rtrec recover (no damage): what recover does today"
      ;;
    *) say "verify $1 exited $rc, expected $interrupted_verdict"; return 1 ;;
  esac
}

# card: the guest's view of the card, as its kernel says it.
card() {
  mark "card device $DEV"
  for f in rotational scheduler write_cache fua nr_requests max_sectors_kb max_hw_sectors_kb \
    logical_block_size physical_block_size discard_max_bytes wbt_lat_usec read_ahead_kb; do
    [ -r "$QUEUE/$f" ] && mark "card queue/$f $(cat "$QUEUE/$f")"
  done
  for f in type name manfid oemid; do
    [ -r /sys/block/$DEV/device/$f ] && mark "card device/$f $(cat /sys/block/$DEV/device/$f)"
  done
  mark "card size $(($(cat /sys/block/$DEV/size) * 512)) bytes"
  mark "card mount $(grep " $CARD " /proc/mounts)"
  dmesg | grep -iE 'mmc|sdhci|EXT4-fs' | sed 's/^/kernel: /'
}

# doctor: `rtrec doctor` on the card, its device facts compared with the
# guest kernel's own.
doctor() {
  mkdir -p "$BOARD"
  rtrec doctor "$BOARD"
  rtrec doctor "$BOARD" --json >"$BOARD/doctor.json"
  say "doctor exited $? (0: no check failed)"
  bad=0
  compare() { # WHAT KERNEL DOCTOR
    if [ "$2" = "$3" ]; then
      mark "doctor $1 kernel='$2' doctor='$3' match"
    else
      mark "doctor $1 kernel='$2' doctor='$3' MISMATCH"
      bad=1
    fi
  }
  field() { # ID KEY: the KEY (found, why, fix) of doctor's check ID
    awk -v id="\"id\": \"$1\"," -v key="\"$2\": " '
      index($0, id) { hit = 1 }
      hit && index($0, key) { sub(/^[^:]*: "/, ""); sub(/",?$/, ""); print; exit }' "$BOARD/doctor.json"
  }
  found() { field "$1" found; }
  # The device under the card's mount, by its numbers.
  majmin=$(awk -v m="$CARD" '$5 == m { print $3 }' /proc/self/mountinfo)
  under=$(basename "$(readlink "/sys/dev/block/$majmin")")
  kind=$(found device-kind)
  compare device "$under" "${kind%%:*}"
  # Its kind: the MMC core's type (SD or MMC) and rotational, against
  # doctor's kind (an SD card or eMMC is flash, never rotational).
  ktype=$(cat /sys/block/$DEV/device/type)
  krot=$(cat $QUEUE/rotational)
  case "$ktype.$krot" in
    SD.0 | SDcombo.0) kkind="SD card" ;;
    MMC.0) kkind=eMMC ;;
    *) kkind="$ktype, rotational $krot" ;;
  esac
  compare kind "$kkind" "${kind#*: }"
  # The write cache as the driver reports it, and the barrier check's
  # claim about it: no flush claimed for a cache the device says it lacks.
  cache=$(cat $QUEUE/write_cache)
  kcache=$cache
  [ -r $QUEUE/fua ] && kcache="$kcache, fua $(cat $QUEUE/fua)"
  compare write_cache "$kcache" "$(found write-cache)"
  case "$cache" in "write through") kbar="no cache to flush" ;; *) kbar="cache flushed" ;; esac
  case "$(field mount-barrier why)" in
    *"no volatile cache"*) dbar="no cache to flush" ;;
    *"flushes the device's write cache"*) dbar="cache flushed" ;;
    *) dbar="$(field mount-barrier why)" ;;
  esac
  compare barrier "$kbar" "$dbar"
  sched=$(sed 's/.*\[\(.*\)\].*/\1/' $QUEUE/scheduler)
  compare scheduler "$sched" "$(found io-scheduler)"
  offered=$(cat $QUEUE/scheduler)
  case " $offered " in *" bfq "* | *"[bfq]"*) kbfq="bfq offered" ;; *) kbfq="offered: $offered" ;; esac
  compare bfq "$kbfq" "$(found bfq-weight)"
  if [ -r $QUEUE/wbt_lat_usec ]; then
    tun=$(found io-scheduler-tunables)
    compare wbt_lat_usec "$(cat $QUEUE/wbt_lat_usec)" "$(echo "$tun" | sed -n 's/.*wbt_lat_usec=\([0-9]*\).*/\1/p')"
  fi
  compare fs-type "$(awk -v m="$CARD" '$2 == m { print $3 }' /proc/mounts)" "$(found fs-type | cut -d' ' -f1)"
  # The machine: qemu's virt board says so in its device tree; doctor's
  # hypervisor check must say a virtual machine, user-emulation native in
  # one.
  machine=$(tr '\0' ' ' </proc/device-tree/compatible 2>/dev/null)
  case "$(uname -m)" in armv*) arch=arm ;; *) arch=$(uname -m) ;; esac
  case " $machine " in
    *" linux,dummy-virt "*)
      kvm="qemu virt machine (device tree linux,dummy-virt)"
      knative="native $arch, in a virtual machine"
      ;;
    *) kvm="bare metal" knative="native $arch" ;;
  esac
  compare machine "$kvm" "$(found hypervisor)"
  compare native "$knative" "$(found user-emulation)"
  # The PREEMPT_RT kernel the fix names: Debian's for this architecture.
  case "$arch" in
    aarch64) kpkg=linux-image-rt-arm64 ;;
    arm) kpkg=linux-image-rt-armmp ;;
    x86_64) kpkg=linux-image-rt-amd64 ;;
    *) kpkg="(none)" ;;
  esac
  dfix=$(field preempt fix | sed -n 's/.*apt install \([^)]*\)).*/\1/p')
  compare preempt-fix "$kpkg" "${dfix:-(none)}"
  [ $bad = 0 ]
}

# periodic [OPTS...]: the synthetic periodic source, 400 records of 16 KiB
# every 5 ms, verified clean.
periodic() {
  d=$BOARD/periodic$1
  shift
  mkdir -p "$d"
  summary_of rtrec record --dir "$d" --period 5ms --size 16KiB --count 400 --json "$d.json" "$@" || return 1
  expect_accounted "$d" 400
}

# wait_queued PID FILE N: until the --status FILE of recorder PID counts N
# records queued; 1 when the recorder ended first. (The plan waits on
# records, never on time: the emulator's speed varies with the host's load.)
wait_queued() {
  until [ "$(status_of records_queued "$2")" -ge "$3" ] 2>/dev/null; do
    kill -0 "$1" 2>/dev/null || { say "the recorder ended before it queued $3 records"; return 1; }
    sleep 0.1
  done
}

# flight: the flight recorder, triggered once by `rtrec trigger` when its
# pre-trigger window is full (100 records of 5 ms; 200 queued), stopped
# with Ctrl-C (how an open-ended recording ends) 200 records after the
# trigger, past the post-trigger span: one complete event, verified clean.
flight() {
  d=$BOARD/flight
  mkdir -p "$d"
  rm -f /tmp/flight.json
  rtrec record --dir "$d" --period 5ms --size 4KiB --file-size 1MiB --pre 500ms --post 500ms \
    --trigger-on SIGUSR1 --status /tmp/flight.json --quiet &
  pid=$!
  wait_queued $pid /tmp/flight.json 200 || return 1
  rtrec trigger "$d" || return 1
  at=$(status_of records_queued /tmp/flight.json)
  wait_queued $pid /tmp/flight.json $((at + 200)) || return 1
  kill -INT $pid
  wait $pid || { say "the flight recorder exited $?"; return 1; }
  rtrec events "$d" || return 1
  rtrec events --json "$d" >/tmp/events.json || return 1
  events=$(grep -c '"trigger_wall_ns"' /tmp/events.json)
  complete=$(grep -c '"state": "complete"' /tmp/events.json)
  [ "$events" = 1 ] && [ "$complete" = 1 ] || { say "$events events, $complete complete (expected 1 and 1)"; return 1; }
  rtrec verify "$d"
}

# stdin: 1 MiB of random bytes through --stdin; the export is the input.
# The input stays on the card, for the host's export to be compared with.
stdin() {
  d=$BOARD/stdin
  mkdir -p "$d"
  head -c 1048576 /dev/urandom >"$BOARD/stdin-input.bin"
  rtrec record --stdin --size 16KiB --file-size 4MiB --dir "$d" --quiet <"$BOARD/stdin-input.bin" || return 1
  expect_accounted "$d" 64 || return 1
  rm -f /tmp/stdin.out
  rtrec export "$d" -o /tmp/stdin.out || return 1
  cmp "$BOARD/stdin-input.bin" /tmp/stdin.out
}

# export: the periodic recording's records back as raw bytes: 400 of
# 16 KiB, each starting with its sequence number (little-endian). (With
# drops, the records that are there: --allow-gaps.)
export_periodic() {
  expect_accounted "$BOARD/periodic" 400 >/dev/null || return 1
  rm -f /tmp/periodic.bin
  rtrec export --allow-gaps "$BOARD/periodic" -o /tmp/periodic.bin || return 1
  size=$(stat -c %s /tmp/periodic.bin)
  [ "$size" = $(((400 - LOST) * 16384)) ] || { say "export wrote $size bytes, not $((400 - LOST)) records of 16 KiB"; return 1; }
  [ "$LOST" = 0 ] || return 0
  for seq in 0 1 399; do
    got=$(dd if=/tmp/periodic.bin bs=16384 skip=$seq count=1 2>/dev/null | head -c 8 | od -An -tu8 | tr -d ' ')
    [ "$got" = $seq ] || { say "record $seq of the export starts with $got"; return 1; }
  done
  say "exported 400 records of 16 KiB, in sequence"
}

# c_example: examples/record.c, cross-compiled against the board's
# librtrec.so, records 1,000 records; the binary verifies them. The example
# exits 1 when it dropped records (its ring is 1 MiB: 0.26 s of its data):
# that is accepted when every drop is stored as a loss, as for the binary.
c_example() {
  d=$BOARD/c
  mkdir -p "$d"
  say "the example's summary (its latencies, lateness and missed periods are the emulator's: $EMULATED)"
  rtrec-example "$d" >/tmp/example.txt 2>&1
  rc=$?
  cat /tmp/example.txt
  case $rc in
    0) ;;
    1) grep -q 'records were dropped (stored as losses)$' /tmp/example.txt || return 1 ;;
    *) return 1 ;;
  esac
  expect_accounted "$d" 1000
}

plan() {
  step card card
  step doctor doctor
  step periodic periodic ""
  step periodic-rt periodic -rt --rt
  step flight-recorder flight
  step stdin stdin
  step export export_periodic
  step c-example c_example
  step unattended unattended
  sync
  if [ -z "$FAILED" ]; then mark "plan ok"; else mark "plan fail$FAILED"; fi
}

# cut CYCLE: recover, then record into CUTS until the power goes, and
# publish every new durable point (read from --status, which lives in
# /tmp, off the card) as "status written=W durable=D dropped=X".
cut_cycle() {
  mkdir -p "$CUTS"
  mark "cut $1"
  step recover unattended_recover "$CUTS"
  before=$(ls "$CUTS" | grep -- '^rec-.*-0000\.rtr$')
  # shellcheck disable=SC2086 # the options are words
  rtrec record --dir "$CUTS" --period 2ms --size 4KiB --file-size 1MiB --sync-every 100ms \
    --status /tmp/status.json --quiet $UNATTENDED_RECORD_OPTS &
  pid=$!
  # The recording's name: its first file, new in the directory.
  name=""
  while [ -z "$name" ] && kill -0 $pid 2>/dev/null; do
    for f in $(ls "$CUTS" | grep -- '^rec-.*-0000\.rtr$'); do
      echo "$before" | grep -qx -- "$f" || name=${f%-0000.rtr}
    done
    [ -n "$name" ] || sleep 0.05
  done
  [ -n "$name" ] && mark "recording $name"
  last=""
  while kill -0 $pid 2>/dev/null; do
    now=$(awk -F'[{},]' '{
        for (i = 1; i <= NF; i++) { split($i, kv, ":"); gsub(/"/, "", kv[1]); v[kv[1]] = kv[2] }
        printf "written=%s durable=%s dropped=%s", v["written_seq"], v["durable_seq"], v["records_dropped"]
      }' /tmp/status.json 2>/dev/null)
    # (One awk for the three: a fork is dear under emulation.)
    if [ -n "$now" ] && [ "$now" != "$last" ]; then
      mark "status $now"
      last=$now
    fi
    sleep 0.05
  done
  wait $pid
  mark "cut fail: the recorder exited ($?) before the power was cut"
}

# after_cuts: the boot after the last cut: recover, then verify per
# interrupted_verdict.
after_cuts() {
  step recover unattended_recover "$CUTS"
  step verify check_interrupted "$CUTS"
  rtrec pool status --dir "$CUTS"
  sync
  if [ -z "$FAILED" ]; then mark "after-cuts ok"; else mark "after-cuts fail$FAILED"; fi
}

# net_up: the guest's end of qemu's user-mode network (its DHCP is not
# needed: the addresses are fixed), the host being 10.0.2.2.
net_up() {
  ip link set lo up && ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 &&
    ip route add default via 10.0.2.2 || return 1
  ip addr show eth0
  ip route
}

# ship_record: what the board ships: a recording of several files (300
# records of 16 KiB every 20 ms in 1 MiB files: 5 files), and one file
# larger than a part (6 MiB through --stdin into one file, sent with
# --part-size 5MiB as a multipart upload of two parts).
ship_record() {
  mkdir -p "$SHIP"
  summary_of rtrec record --dir "$SHIP" --period 20ms --size 16KiB --count 300 --file-size 1MiB || return 1
  head -c 6291456 /dev/urandom >/tmp/stdin.bin
  rtrec record --stdin --size 64KiB --file-size 8MiB --dir "$SHIP" --quiet </tmp/stdin.bin || return 1
  rm -f /tmp/stdin.bin
  expect_accounted "$SHIP" 396 || return 1
  ls -l "$SHIP"
}

# ship_run N: `rtrec ship` of SHIP to the host's server; its last line and
# its --json counts as markers (shipN summary …, shipN json KEY=VALUE).
ship_run() {
  # shellcheck disable=SC1091 # written by scripts/board-vm.sh
  . /etc/ship.env
  rtrec ship "$SHIP" --to "s3://$BUCKET/$PREFIX" --endpoint "$ENDPOINT" \
    --secret-access-key-file /etc/ship.secret --device "$PREFIX" --part-size 5MiB \
    --json "/tmp/ship$1.json" >"/tmp/ship$1.txt" 2>&1
  rc=$?
  cat "/tmp/ship$1.txt"
  [ $rc = 0 ] || { say "rtrec ship exited $rc"; return 1; }
  cat "/tmp/ship$1.json"
  mark "ship$1 summary $(tail -n 1 "/tmp/ship$1.txt")"
  for k in recordings_shipped recordings_already_there files_shipped files_already_there bytes_shipped \
    bytes_resent uploads_resumed failures_retried seconds mib_per_s cpu_seconds; do
    mark "ship$1 json $k=$(sed -n "s/^ *\"$k\": \([^,]*\),\{0,1\}$/\1/p" "/tmp/ship$1.json")"
  done
}

# ship_again: the second run sends nothing (the ledger, DIR/.shipped).
ship_again() {
  ship_run 2 || return 1
  grep -q '"bytes_shipped": 0,' /tmp/ship2.json && grep -q '"recordings_shipped": 0,' /tmp/ship2.json ||
    { say "the second ship run sent something again"; return 1; }
  cat "$SHIP/.shipped"
}

# ship: record, ship, ship again (scripts/board-vm.sh --ship).
ship() {
  mark "ship clock $(date -u +%Y-%m-%dT%H:%M:%SZ) (the board's, from its RTC: S3 signatures need it within 15 minutes)"
  step net net_up
  step record ship_record
  step ship ship_run 1
  step ship-again ship_again
  sync
  if [ -z "$FAILED" ]; then mark "ship ok"; else mark "ship fail$FAILED"; fi
}

case "${1:-}" in
  plan) plan ;;
  cut) cut_cycle "${2:-?}" ;;
  after-cuts) after_cuts ;;
  ship) ship ;;
  *) echo "usage: plan.sh plan | cut CYCLE | after-cuts | ship" >&2; exit 2 ;;
esac
