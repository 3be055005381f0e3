#!/usr/bin/env python3
"""The host's check of a recording directory read off the board's card
after a power cut (scripts/board-vm.sh, docs/board.md).

    check-records.py RTREC DIR VERDICT NAME:DURABLE:WRITTEN:DROPPED...

RTREC is the host's rtrec, DIR the directory after `rtrec recover`,
VERDICT what verify must say of an interrupted recording: `unfinished`
(today: exit 1, each file complete or unfinished, nothing damaged, nothing
left in the pool or hidden) or `clean` (exit 0). Each NAME (the prefix of
a recording's files, `rec-STAMP`) comes with the last durable point,
written sequence number and drop count the guest published on the serial
console before the cut.

For each recording: its files are the ones whose recording id is that of
a file named NAME-*.rtr (a file `rtrec recover` moved out of the pool is
named recovered-…, with the same id); `rtrec export --allow-gaps` of them
gives every intact record, and each must be what the synthetic source
wrote (`rtrec record` without --stdin, as tests/durability.rs checks it):
4 KiB, the sequence number in its first 8 bytes (little-endian), then
byte i = i % 251. Every record below DURABLE must be there, unless the
recording stored drops (then as many missing as it stored are allowed,
and said). A loop recording (UNATTENDED_RECORD_OPTS with --keep…) keeps a
window: records below its first kept file's (what its `retired` claim or
verify's `retired` says was retired by the loop, or by a later recording
for the directory's budget) are not counted missing, and a recording
none of whose files is left while a later one is in the directory was
retired whole for the budget (LOOP=1 in the environment allows both).
Prints one line per recording:

    NAME recovered=R durable=D written=W beyond=B lost_above=L missing_below=M wrong=X window=S

and exits 1 on any violation (each named on stderr).
"""

import json
import os
import subprocess
import sys
import tempfile

RECORD = 4096
PATTERN = bytes(i % 251 for i in range(8, RECORD))


def main():
    if len(sys.argv) < 4 or sys.argv[3] not in ("unfinished", "clean"):
        sys.exit("usage: check-records.py RTREC DIR unfinished|clean NAME:DURABLE:WRITTEN:DROPPED...")
    rtrec, d, verdict = sys.argv[1:4]
    bad = []

    v = subprocess.run([rtrec, "verify", "--json", d], capture_output=True, text=True)
    if v.returncode not in (0, 1):
        sys.exit(f"check-records: rtrec verify --json {d} exited {v.returncode}: {v.stderr.strip()}")
    report = json.loads(v.stdout)
    if verdict == "clean" and v.returncode != 0:
        bad.append(f"verify {d} is not clean after recover (exit {v.returncode})")
    for f in report["files"]:
        name = os.path.basename(f["path"])
        if f["damaged_ranges"]:
            bad.append(f"{name}: {f['damaged_ranges']} damaged range(s)")
        if verdict == "unfinished" and f["status"] not in ("complete", "unfinished"):
            bad.append(f"{name}: {f['status']}")
    for key in ("unfinished_in_pool", "leftover_tmp"):
        if report.get(key):
            bad.append(f"{key} after recover: {report[key]}")

    loop = os.environ.get("LOOP") == "1"
    names = [os.path.basename(f["path"]) for f in report["files"]]
    for spec in sys.argv[4:]:
        name, durable, written, dropped = spec.split(":")
        durable, written, dropped = int(durable), int(written), int(dropped)
        ids = {f["recording_id"] for f in report["files"] if os.path.basename(f["path"]).startswith(name + "-")}
        mine = [f for f in report["files"] if f["recording_id"] in ids]
        files = [f["path"] for f in mine]
        # The loop's window: the first kept record (nothing retired: 0).
        window = 0
        if loop and mine:
            first = min(mine, key=lambda f: f.get("index") or 0)
            if first.get("retired") or (first.get("index") or 0) > 0:
                window = first.get("first_seq") or (first.get("retired") or {}).get("next_seq") or 0
        if loop and not mine and any(n > name for n in names):
            window = written
        seqs, wrong = set(), 0
        if files:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "records.bin")
                e = subprocess.run([rtrec, "export", "--allow-gaps", *files, "-o", out], capture_output=True, text=True)
                if e.returncode != 0:
                    bad.append(f"{name}: rtrec export exited {e.returncode}: {e.stderr.strip()}")
                else:
                    data = open(out, "rb").read()
                    if len(data) % RECORD:
                        bad.append(f"{name}: the export holds {len(data)} bytes, not whole records of 4 KiB")
                    for off in range(0, len(data) - len(data) % RECORD, RECORD):
                        rec = data[off : off + RECORD]
                        if rec[8:] == PATTERN:
                            seqs.add(int.from_bytes(rec[:8], "little"))
                        else:
                            wrong += 1
        elif durable and window < durable:
            bad.append(f"{name}: no file of the recording, whose records below {durable} were durable")
        missing = sum(1 for s in range(window, durable) if s not in seqs)
        if wrong:
            bad.append(f"{name}: {wrong} record(s) with wrong bytes")
        if missing > dropped:
            bad.append(f"{name}: {missing} record(s) below the durable point {durable} missing ({dropped} dropped and stored)")
        recovered = len(seqs)
        # Above the durable point and inside the kept window: what the cut
        # kept (beyond) and what it took (lost_above, allowed).
        beyond = sum(1 for s in seqs if s >= durable)
        lost_above = sum(1 for s in range(max(durable, window), written) if s not in seqs)
        print(
            f"{name} recovered={recovered} durable={durable} written={written} "
            f"beyond={beyond} lost_above={lost_above} "
            f"missing_below={missing} wrong={wrong} window={window}"
        )

    for b in bad:
        print(f"check-records: {b}", file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
