//! Issue 44, item 1: nothing disappears before the record of why is
//! durable. Seen from the kernel (strace follows every thread, so no
//! path around the rule goes unseen): in a loop recording, every retired
//! file is recycled into the pool (opened, given a slot header, renamed
//! into `.pool/`) or deleted only after the file holding the RETIRED
//! claim that covers it was synced (`fdatasync`/`fsync` begun after the
//! claim's write returned) and so was the directory naming it. And
//! `recover` completes a retirement whose claim is durable but whose
//! deletion did not happen: the deletions are made to do nothing
//! (strace's syscall injection), as a power cut that kept the claim and
//! lost them would, then `recover` removes the covered files and
//! `verify` exits 0 saying they were retired by the loop.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::record_args::RecordArgs;
use common::{rtrec, show};

/// `--keep-files`: finished files kept.
const KEPT: u32 = 2;

/// One traced system call: its name, its entry line, and the positions
/// (line numbers) of its entry and of its return.
struct Call {
    name: String,
    line: String,
    entry: usize,
    exit: usize,
}

/// Reads an `strace -f` log into calls, joining `<unfinished ...>` lines
/// with their `<... resumed>` line (by thread id).
fn calls(log: &str) -> Vec<Call> {
    let mut out: Vec<Call> = Vec::new();
    let mut open: std::collections::HashMap<String, usize> = Default::default();
    for (pos, l) in log.lines().enumerate() {
        // strace pads short thread ids: "2516  renameat2(...".
        let Some((pid, rest)) = l.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        if rest.starts_with("<... ") {
            if let Some(i) = open.remove(pid) {
                out[i].exit = pos;
            }
            continue;
        }
        let Some(name) = rest.split('(').next() else {
            continue;
        };
        out.push(Call {
            name: name.to_string(),
            line: rest.to_string(),
            entry: pos,
            exit: pos,
        });
        if rest.ends_with("<unfinished ...>") {
            open.insert(pid.to_string(), out.len() - 1);
            out.last_mut().unwrap().exit = usize::MAX;
        }
    }
    out
}

/// The file index of a `BASE-NNNN.rtr` name at the start of `s` (up to
/// the quote or bracket that ends it); `None` for any other name.
fn index_of(s: &str) -> Option<u32> {
    let end = s.find(['"', '>'])?;
    let name = s[..end].strip_suffix(".rtr")?;
    let (_, n) = name.rsplit_once('-')?;
    (n.len() == 4).then(|| n.parse().ok()).flatten()
}

/// The file a call works on: the path of its first file descriptor
/// (`strace -y`) for calls on a descriptor, else its first string.
fn target(c: &Call) -> Option<u32> {
    let args = c.line.split_once('(')?.1;
    if matches!(
        c.name.as_str(),
        "openat" | "unlinkat" | "renameat" | "renameat2" | "unlink"
    ) {
        let q = args.find('"')?;
        return index_of(&args[q + 1..]);
    }
    let lt = args.find('<')?;
    let path = &args[lt + 1..];
    let slash = path[..path.find('>')?].rfind('/')?;
    index_of(&path[slash + 1..])
}

/// Whether the call works on the descriptor of directory `dir`.
fn on_dir(c: &Call, dir: &Path) -> bool {
    c.line
        .split_once('(')
        .is_some_and(|(_, a)| a.contains(&format!("<{}>", dir.display())))
}

/// Records a loop of 8 files of 1 MiB keeping 2 under strace (`extra`:
/// the allocation; `inject`: strace's injection flags); returns the
/// calls.
fn traced_loop(dir: &Path, log: &Path, extra: &[&str], inject: &[&str]) -> Vec<Call> {
    let traced = "trace=openat,write,writev,pwrite64,pwritev,fdatasync,fsync,unlink,unlinkat,rename,renameat,renameat2";
    let args = RecordArgs::short(dir, "4KiB", 2000)
        .set("--file-size", "1MiB")
        .set("--keep-files", KEPT.to_string())
        .with(extra);
    let out = Command::new("strace")
        .args(["-f", "-qq", "-y", "-s", "0", "-e", traced])
        .args(inject)
        .arg("-o")
        .arg(log)
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(args.words())
        .output()
        .unwrap();
    assert!(out.status.success(), "rtrec record failed: {}", show(&out));
    calls(&std::fs::read_to_string(log).unwrap())
}

/// A fresh directory `sub` in a temporary one (kept by the returned
/// guard), when strace is there (else the test `name` is skipped).
fn fresh(name: &str, sub: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    if !rtrec_host::tools::require(name, &[rtrec_host::tools::STRACE]) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join(sub);
    std::fs::create_dir(&rec).unwrap();
    Some((dir, rec))
}

/// Checks the order for every retired file; returns how many were
/// retired and how many of them recycled into the pool.
fn check_order(calls: &[Call], dir: &Path) -> (usize, usize) {
    let mut retired = 0;
    let mut recycled = 0;
    for k in 0..64u32 {
        // File k left: unlinked, or renamed into the pool as a slot.
        let gone = |c: &Call| {
            target(c) == Some(k)
                && (c.name.starts_with("unlink")
                    || (c.name.starts_with("rename") && c.line.contains("slot-")))
        };
        if !calls.iter().any(gone) {
            continue;
        }
        retired += 1;
        if calls
            .iter()
            .any(|c| gone(c) && c.name.starts_with("rename"))
        {
            recycled += 1;
        }
        // The retirement's first step on file k: opened again by name for
        // writing (a recycle, to write the slot header), or its leaving.
        let Some(start) = calls.iter().find(|c| {
            gone(c)
                || (c.name == "openat"
                    && c.line.contains("O_RDWR")
                    && !c.line.contains("O_CREAT")
                    && target(c) == Some(k))
        }) else {
            continue;
        };
        // Its claim is first in file k + KEPT + 1; any later file's
        // (cumulative) covers it too.
        let claimed = calls.iter().any(|w| {
            let j = match target(w) {
                Some(j) if j > k + KEPT && w.name.starts_with("write") => j,
                _ => return false,
            };
            // The claim is the first frame written to file j.
            let first = calls
                .iter()
                .find(|c| c.name.starts_with("write") && target(c) == Some(j));
            if first.is_none_or(|f| f.entry != w.entry) {
                return false;
            }
            let synced = |c: &Call| c.entry > w.exit && c.exit < start.entry;
            let file_synced = calls.iter().any(|c| {
                matches!(c.name.as_str(), "fdatasync" | "fsync")
                    && target(c) == Some(j)
                    && synced(c)
            });
            let dir_synced = calls
                .iter()
                .any(|c| c.name == "fsync" && on_dir(c, dir) && synced(c));
            file_synced && dir_synced
        });
        assert!(
            claimed,
            "file {k} was retired ({}) before a claim covering it was synced with its directory",
            start.line
        );
    }
    (retired, recycled)
}

#[test]
fn a_retired_file_leaves_only_after_the_claim_covering_it_is_synced() {
    let name = "a_retired_file_leaves_only_after_the_claim_covering_it_is_synced";
    // Recycled into the pool (the default: a pool of 2 spare files).
    let Some((dir, rec)) = fresh(name, "pooled") else {
        return;
    };
    let pooled = traced_loop(&rec, &dir.path().join("pooled.log"), &[], &[]);
    let (retired, recycled) = check_order(&pooled, &rec);
    assert_eq!(retired, 8 - KEPT as usize - 1, "files retired");
    assert!(recycled > 0, "no retired file was recycled");

    // Deleted (no pool).
    let rec = dir.path().join("deleted");
    std::fs::create_dir(&rec).unwrap();
    let log = dir.path().join("deleted.log");
    let deleted = traced_loop(&rec, &log, &["--alloc", "fallocate"], &[]);
    let (retired, recycled) = check_order(&deleted, &rec);
    assert_eq!((retired, recycled), (8 - KEPT as usize - 1, 0));
    for d in ["pooled", "deleted"] {
        let v = rtrec(&["verify", dir.path().join(d).to_str().unwrap()]);
        assert!(v.status.success(), "{}", show(&v));
    }
}

#[test]
fn recover_completes_a_retirement_whose_claim_is_durable() {
    let name = "recover_completes_a_retirement_whose_claim_is_durable";
    let Some((dir, rec)) = fresh(name, "rec") else {
        return;
    };
    // Every unlink does nothing and says it did: the directory a power
    // cut leaves when it keeps the (synced) claims and loses the
    // deletions.
    let inject = ["-e", "inject=unlink,unlinkat:retval=0"];
    let log = dir.path().join("rec.log");
    traced_loop(&rec, &log, &["--alloc", "fallocate"], &inject);
    let rtr = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".rtr"))
            .collect();
        v.sort();
        v
    };
    let before = rtr(&rec);
    assert_eq!(before.len(), 8, "{before:?}");

    let r = rtrec(&["recover", rec.to_str().unwrap()]);
    assert!(r.status.success(), "{}", show(&r));
    let after = rtr(&rec);
    // The newest claim (in file 7) covers files 0..=4.
    assert_eq!(after, before[5..].to_vec(), "{}", show(&r));
    let said =
        String::from_utf8_lossy(&r.stdout).into_owned() + &String::from_utf8_lossy(&r.stderr);
    for gone in &before[..5] {
        assert!(
            said.contains(gone.as_str()) && said.contains("durable RETIRED claim"),
            "recover did not name {gone}: {said}"
        );
    }
    let v = rtrec(&["verify", rec.to_str().unwrap()]);
    assert!(v.status.success(), "{}", show(&v));
    assert!(show(&v).contains("retired by the loop"), "{}", show(&v));

    // Done once: a second run changes nothing.
    let again = rtrec(&["recover", rec.to_str().unwrap()]);
    assert!(again.status.success(), "{}", show(&again));
    assert_eq!(rtr(&rec), after);
    assert!(
        show(&again).contains("nothing to recover"),
        "{}",
        show(&again)
    );
}

/// The files of `dir` named `*.rtr`, sorted.
fn rtr_names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".rtr"))
        .collect();
    v.sort();
    v
}

/// Issue 44, an earlier recording's files: a loop's disk budget retires
/// the files of the loop's earlier recording (at its start, and at a
/// switch) only after the directory's retirement record (`.retired`)
/// naming them is durable — written to `.retired.tmp`, that file
/// `fsync`ed, renamed over `.retired`, the directory `fsync`ed, each
/// call returned before the file's retirement begins. The record names
/// them, and the partly retired earlier recording verifies clean.
#[test]
fn an_earlier_recordings_file_leaves_only_after_the_record_naming_it_is_synced() {
    let name = "an_earlier_recordings_file_leaves_only_after_the_record_naming_it_is_synced";
    let Some((dir, rec)) = fresh(name, "rec") else {
        return;
    };
    // The earlier recording: 8 files, 3 left (2 kept, the last).
    let first = RecordArgs::short(&rec, "4KiB", 2000)
        .set("--file-size", "1MiB")
        .set("--keep-files", KEPT.to_string());
    let o = rtrec(&first.words());
    assert!(o.status.success(), "{}", show(&o));
    let earlier = rtr_names(&rec);
    assert_eq!(earlier.len(), 3, "{earlier:?}");
    // The record names the earlier recording by its id.
    let id = rtrec(&["ls", "--json", rec.to_str().unwrap()]);
    let id: serde_json::Value = serde_json::from_slice(&id.stdout).unwrap();
    let id = id["recordings"][0]["id"].as_str().unwrap().to_string();

    // The next start (same prefix and budget), traced: 2 files of its
    // own, so the budget retires one earlier file at the start and one at
    // the switch.
    let traced = "trace=openat,write,fsync,fdatasync,unlink,unlinkat,rename,renameat,renameat2";
    let args = RecordArgs::short(&rec, "4KiB", 400)
        .set("--file-size", "1MiB")
        .set("--keep-files", KEPT.to_string());
    let log = dir.path().join("earlier.log");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-y", "-s", "64", "-e", traced, "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(args.words())
        .output()
        .unwrap();
    assert!(out.status.success(), "rtrec record failed: {}", show(&out));
    let calls = calls(&std::fs::read_to_string(&log).unwrap());

    let record_synced = |before: usize| {
        let renamed = calls.iter().filter(|c| {
            c.name.starts_with("rename")
                && c.line.contains("\".retired.tmp\"")
                && c.line.contains("\".retired\"")
                && c.exit < before
        });
        renamed.into_iter().any(|r| {
            let tmp_synced = calls.iter().any(|c| {
                c.name == "fsync" && c.line.contains("/.retired.tmp>") && c.exit < r.entry
            });
            let dir_synced = calls.iter().any(|c| {
                c.name == "fsync" && on_dir(c, &rec) && c.entry > r.exit && c.exit < before
            });
            tmp_synced && dir_synced
        })
    };
    let mut left = 0;
    for f in &earlier {
        // Its retirement's first step: opened again for writing (a
        // recycle's slot header), renamed or unlinked.
        let start = calls.iter().find(|c| {
            (c.line.contains(&format!("\"{f}\"")) || c.line.contains(&format!("/{f}\"")))
                && (c.name.starts_with("unlink")
                    || c.name.starts_with("rename")
                    || (c.name == "openat"
                        && c.line.contains("O_RDWR")
                        && !c.line.contains("O_CREAT")))
        });
        let Some(start) = start else {
            continue;
        };
        left += 1;
        assert!(
            record_synced(start.entry),
            "{f} was retired ({}) before a retirement record naming it was synced with its directory",
            start.line
        );
    }
    assert_eq!(left, 2, "earlier files retired: {:?}", rtr_names(&rec));
    let after = rtr_names(&rec);
    assert!(!after.contains(&earlier[0]) && !after.contains(&earlier[1]));
    assert!(after.contains(&earlier[2]), "{after:?}");
    let record = std::fs::read_to_string(rec.join(".retired")).unwrap();
    assert!(record.starts_with("rtrec-retired-1\n"), "{record}");
    let first_kept = earlier[0].rsplit_once('-').unwrap().1;
    let first_kept: u32 = first_kept.trim_end_matches(".rtr").parse().unwrap();
    assert!(
        record.contains(&format!("{id} {first_kept} {} ", first_kept + 2)),
        "{record}"
    );

    // The earlier recording, its first two files retired by the record:
    // clean, and said to be retired.
    let v = rtrec(&["verify", rec.to_str().unwrap()]);
    assert!(v.status.success(), "{}", show(&v));
    assert!(
        show(&v).contains("retired by a loop's disk budget"),
        "{}",
        show(&v)
    );
}

/// Issue 44: a loop recording's leading file removed by hand (no claim
/// and no record covers it) is a loss, not "retired by the loop":
/// `verify` exits 1 naming it, `rtrec ls` counts lost records, and
/// `export` refuses without `--allow-gaps`. Its legitimately retired
/// files before it stay retired.
#[test]
fn a_leading_file_removed_by_hand_is_missing_not_retired() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    let args = RecordArgs::short(&rec, "4KiB", 2000)
        .set("--file-size", "1MiB")
        .set("--keep-files", KEPT.to_string());
    let o = rtrec(&args.words());
    assert!(o.status.success(), "{}", show(&o));
    let files = rtr_names(&rec);
    assert_eq!(files.len(), 3, "{files:?}");
    let d = rec.to_str().unwrap();
    let v = rtrec(&["verify", d]);
    assert!(v.status.success(), "{}", show(&v));

    std::fs::remove_file(rec.join(&files[0])).unwrap();
    let v = rtrec(&["verify", d]);
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    assert!(
        show(&v).contains("no RETIRED claim or retirement record covers them"),
        "{}",
        show(&v)
    );
    let ls = rtrec(&["ls", "--json", d]);
    assert!(ls.status.success(), "{}", show(&ls));
    let j: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
    let r = &j["recordings"][0];
    assert!(r["lost"].as_u64().unwrap() > 0, "{j}");
    assert_ne!(r["state"], "complete", "{j}");
    let out = dir.path().join("out.bin");
    let e = rtrec(&["export", d, "-o", out.to_str().unwrap()]);
    assert_eq!(e.status.code(), Some(1), "{}", show(&e));
    let e = rtrec(&["export", d, "--allow-gaps", "-o", out.to_str().unwrap()]);
    assert!(e.status.success(), "{}", show(&e));
    // `recover` removes nothing no record covers.
    let r = rtrec(&["recover", d]);
    assert!(r.status.success(), "{}", show(&r));
    assert_eq!(rtr_names(&rec), files[1..].to_vec());
}

/// Issue 44: `recover` completes an earlier recording's retirement whose
/// record is durable but whose deletions did not happen (strace makes
/// every unlink do nothing, as a power cut that kept the synced record
/// and lost them would): it removes the files the record names, says so,
/// and the directory verifies clean.
#[test]
fn recover_completes_an_earlier_recordings_retirement_whose_record_is_durable() {
    let name = "recover_completes_an_earlier_recordings_retirement_whose_record_is_durable";
    let Some((dir, rec)) = fresh(name, "rec") else {
        return;
    };
    let args = |count: u64| {
        RecordArgs::short(&rec, "4KiB", count)
            .set("--file-size", "1MiB")
            .set("--keep-files", KEPT.to_string())
            .set("--alloc", "fallocate")
    };
    let o = rtrec(&args(2000).words());
    assert!(o.status.success(), "{}", show(&o));
    let earlier = rtr_names(&rec);
    assert_eq!(earlier.len(), 3, "{earlier:?}");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=unlink,unlinkat"])
        .args(["-e", "inject=unlink,unlinkat:retval=0", "-o"])
        .arg(dir.path().join("inject.log"))
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(args(400).words())
        .output()
        .unwrap();
    assert!(out.status.success(), "rtrec record failed: {}", show(&out));
    // Every earlier file is still there; the record names the first two.
    let before = rtr_names(&rec);
    assert!(earlier.iter().all(|f| before.contains(f)), "{before:?}");

    let r = rtrec(&["recover", rec.to_str().unwrap()]);
    assert!(r.status.success(), "{}", show(&r));
    let after = rtr_names(&rec);
    for gone in &earlier[..2] {
        assert!(!after.contains(gone), "{after:?}\n{}", show(&r));
        assert!(
            show(&r).contains(gone.as_str()) && show(&r).contains("durable retirement record"),
            "recover did not name {gone}: {}",
            show(&r)
        );
    }
    assert!(after.contains(&earlier[2]), "{after:?}");
    let v = rtrec(&["verify", rec.to_str().unwrap()]);
    assert!(v.status.success(), "{}", show(&v));
    let again = rtrec(&["recover", rec.to_str().unwrap()]);
    assert!(
        show(&again).contains("nothing to recover"),
        "{}",
        show(&again)
    );
}

/// A retirement record that cannot be read (here: damaged) is replaced
/// by the next loop, and the loop says so at its start, on stderr: the
/// earlier files it named would otherwise read as missing with no word
/// of why.
#[test]
fn an_unreadable_retirement_record_is_replaced_and_said_at_the_start() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    std::fs::write(rec.join(".retired"), b"rtrec-retired-1\nnot a range\n").unwrap();
    let args = RecordArgs::short(&rec, "4KiB", 400)
        .set("--file-size", "1MiB")
        .set("--keep-files", KEPT.to_string());
    let o = rtrec(&args.words());
    assert!(o.status.success(), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("a new record replaces it"),
        "no word of the unreadable record: {err}"
    );
    // The record was replaced by one that reads.
    let again = std::fs::read_to_string(rec.join(".retired")).unwrap();
    assert!(
        again.starts_with("rtrec-retired-1\n")
            && again.contains("\ncrc32c ")
            && !again.contains("not a range"),
        "{again}"
    );
}
