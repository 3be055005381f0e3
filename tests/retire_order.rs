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
