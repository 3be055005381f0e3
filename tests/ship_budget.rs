//! Issue 46, item 4, "The budget knows" (docs/unattended.md): in a
//! directory `rtrec ship` sends (its ledger `.shipped`), a loop's budget
//! retires the earlier recordings the ledger says are shipped first; an
//! unshipped one leaves only beyond `--unshipped-headroom`, and then it is
//! counted (`retired_unshipped_files` in `--json` and Prometheus) and said;
//! a damaged ledger is said on stderr and ships nothing; `rtrec ls` shows
//! which recordings are shipped. Every recording here is a real loop
//! recording made by the built binary; the ledger is written with the
//! engine's own `ShipLedger`, as the shipper writes it.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::corpus::files;
use common::record_args::RecordArgs;
use common::{rtrec, rtrec_piped, show};
use rtrec_engine::reader::{LedgerEntry, ShipLedger, SHIP_LEDGER};
use serde_json::Value;

const MIB: u64 = 1 << 20;

/// The loop's budget in these tests: 2 files of 1 MiB.
const KEEP: &str = "2";

/// A directory `rec` in a fresh temporary one.
fn fresh() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    (tmp, rec)
}

/// A loop recording into `dir` (files of 1 MiB, fallocate, so no pool
/// hides a file): `count` records of 4 KiB, `keep` files kept, `extra`
/// flags; its output and `--json` summary.
fn loop_run(dir: &Path, count: u64, keep: &str, extra: &[&str]) -> (std::process::Output, Value) {
    let json = dir.with_extension("json");
    let _ = std::fs::remove_file(&json);
    let args = RecordArgs::short(dir, "4KiB", count)
        .set("--file-size", "1MiB")
        .set("--alloc", "fallocate")
        .set("--keep-files", keep)
        .set("--json", json.to_str().unwrap())
        .with(extra);
    let o = rtrec(&args.words());
    assert!(o.status.success(), "{}", show(&o));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (o, v)
}

/// `rtrec ls --json DIR`'s recordings.
fn ls(dir: &Path) -> Vec<Value> {
    let o = rtrec(&["ls", "--json", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["recordings"].as_array().unwrap().clone()
}

/// One earlier recording: its id and its one file.
struct Earlier {
    id: u64,
    file: PathBuf,
}

/// Three earlier loop recordings A, B, C (oldest first) of one file of
/// about 800 KiB each: 2.4 MiB in all, over the 2 MiB budget by less than
/// one of them.
fn three_earlier(dir: &Path) -> Vec<Earlier> {
    for _ in 0..3 {
        loop_run(dir, 200, "100", &[]);
    }
    let listed = ls(dir);
    assert_eq!(listed.len(), 3, "{listed:?}");
    listed
        .iter()
        .map(|r| {
            assert_eq!(r["files"], 1, "{r}");
            Earlier {
                id: u64::from_str_radix(r["id"].as_str().unwrap(), 16).unwrap(),
                file: PathBuf::from(r["first_file"].as_str().unwrap()),
            }
        })
        .collect()
}

/// Writes `dir`'s ledger as the shipper would once `shipped` are in the
/// bucket: each file verified, then the manifest.
fn ship(dir: &Path, shipped: &[&Earlier]) {
    let mut l = ShipLedger::default();
    for e in shipped {
        let bytes = std::fs::read(&e.file).unwrap();
        let name = e.file.file_name().unwrap().to_str().unwrap().to_string();
        l.entries.push(LedgerEntry::File {
            recording_id: e.id,
            index: 0,
            size: bytes.len() as u64,
            crc32c: 0,
            wall_ns: 1,
            name,
        });
        l.entries.push(LedgerEntry::Recording {
            recording_id: e.id,
            wall_ns: 2,
            key: format!("dev1/2026-12-07/{:016x}/manifest.json", e.id),
        });
    }
    l.write(&rtrec_sys::Dir::open_nofollow(dir).unwrap())
        .unwrap();
}

#[test]
fn a_loop_retires_the_shipped_earlier_recording_before_older_unshipped_ones() {
    // Control: nobody ships the directory, the oldest leaves first.
    let (_t, dir) = fresh();
    let e = three_earlier(&dir);
    let (_, v) = loop_run(&dir, 100, KEEP, &[]);
    assert_eq!(v["retired_earlier_files"], 1, "{v}");
    assert_eq!(v["retired_unshipped_files"], 0, "{v}");
    assert!(!e[0].file.exists() && e[1].file.exists() && e[2].file.exists());
    // Shipped: the middle one, not the oldest, leaves.
    let (_t, dir) = fresh();
    let e = three_earlier(&dir);
    ship(&dir, &[&e[1]]);
    let (_, v) = loop_run(&dir, 100, KEEP, &[]);
    assert_eq!(v["retired_earlier_files"], 1, "{v}");
    assert_eq!(v["retired_unshipped_files"], 0, "{v}");
    assert!(e[0].file.exists(), "the oldest, unshipped, left first");
    assert!(!e[1].file.exists(), "the shipped one was kept");
    assert!(e[2].file.exists());
    assert_eq!(
        rtrec(&["verify", dir.to_str().unwrap()]).status.code(),
        Some(0)
    );
}

#[test]
fn an_unshipped_recording_retired_under_pressure_is_counted_in_json_prometheus_and_said() {
    let (_t, dir) = fresh();
    let e = three_earlier(&dir);
    ship(&dir, &[&e[1]]);
    let prom = dir.with_extension("prom");
    // About 1.6 MiB: one switch, after which the loop's own finished file
    // and the two unshipped ones exceed the budget.
    let (o, v) = loop_run(&dir, 400, KEEP, &["--status", prom.to_str().unwrap()]);
    assert_eq!(v["retired_earlier_files"], 2, "{v}");
    assert_eq!(v["retired_unshipped_files"], 1, "{v}");
    let bytes = v["retired_unshipped_bytes"].as_u64().unwrap();
    assert!(bytes > 0 && bytes < MIB, "{v}");
    assert!(!e[0].file.exists() && !e[1].file.exists() && e[2].file.exists());
    let p = std::fs::read_to_string(&prom).unwrap();
    let metric = |name: &str| -> f64 {
        p.lines()
            .find(|l| l.starts_with(&format!("{name}{{")))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{p}"))
    };
    assert_eq!(metric("rtrec_retired_unshipped_files_total"), 1.0);
    assert_eq!(metric("rtrec_retired_unshipped_bytes_total"), bytes as f64);
    // Said, with the recording's warnings, not only counted.
    let warned = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("not yet shipped"));
    assert!(warned, "{v}\n{}", show(&o));
}

#[test]
fn the_headroom_keeps_unshipped_recordings_up_to_its_limit_and_no_further() {
    let (_t, dir) = fresh();
    let e = three_earlier(&dir);
    ship(&dir, &[&e[1]]);
    // One switch: own 1 MiB + A + C (1.6 MiB) is within 2 MiB + 1 MiB.
    let (_, v) = loop_run(&dir, 400, KEEP, &["--unshipped-headroom", "1MiB"]);
    assert_eq!(v["retired_earlier_files"], 1, "{v}");
    assert_eq!(v["retired_unshipped_files"], 0, "{v}");
    assert!(e[0].file.exists() && !e[1].file.exists() && e[2].file.exists());
    let (_t2, dir) = fresh();
    let e = three_earlier(&dir);
    ship(&dir, &[&e[1]]);
    // Several switches: own 2 MiB + A + C is beyond it; the oldest goes,
    // counted, and then C fits.
    let (_, v) = loop_run(&dir, 1200, KEEP, &["--unshipped-headroom", "1MiB"]);
    assert_eq!(v["retired_unshipped_files"], 1, "{v}");
    assert!(!e[0].file.exists() && !e[1].file.exists() && e[2].file.exists());
    // The directory is within the budget and the headroom, the file last
    // written aside (the bound of docs/unattended.md).
    let mut files = files(&dir);
    files.pop();
    let used: u64 = files
        .iter()
        .map(|f| std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(f).unwrap()) * 512)
        .sum();
    assert!(used <= 3 * MIB, "{used} bytes in {files:?}");
}

#[test]
fn a_damaged_ledger_is_said_at_the_start_and_ships_nothing() {
    let (_t, dir) = fresh();
    let e = three_earlier(&dir);
    ship(&dir, &[&e[1]]);
    let path = dir.join(SHIP_LEDGER);
    let mut b = std::fs::read(&path).unwrap();
    let at = b.iter().position(|&c| c == b'd').unwrap();
    b[at] = b'D';
    std::fs::write(&path, &b).unwrap();
    let (o, v) = loop_run(&dir, 100, KEEP, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("shipping ledger"))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("is damaged"), "{err}");
    // Nothing counts as shipped: the oldest leaves, counted as unshipped.
    assert_eq!(v["retired_unshipped_files"], 1, "{v}");
    assert!(!e[0].file.exists() && e[1].file.exists());
    // ls says so once too, and lists every recording as unshipped.
    let o = rtrec(&["ls", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("shipping ledger").count(), 1, "{err}");
    assert!(ls(&dir).iter().all(|r| r["shipped"] == false));
}

#[test]
fn ls_shows_which_recordings_are_shipped_and_what_left_unshipped() {
    let (_t, dir) = fresh();
    let e = three_earlier(&dir);
    // Nobody ships it: no column value, no field.
    assert!(ls(&dir).iter().all(|r| r.get("shipped").is_none()));
    ship(&dir, &[&e[1]]);
    // A fourth loop that retires two of its own files (never shipped) and
    // keeps A and C within the headroom.
    let (_, v) = loop_run(&dir, 1200, KEEP, &["--unshipped-headroom", "2MiB"]);
    assert_eq!(v["retired_files"], 2, "{v}");
    let listed = ls(&dir);
    let by_file = |f: &Path| {
        listed
            .iter()
            .find(|r| Path::new(r["first_file"].as_str().unwrap()) == f)
            .unwrap_or_else(|| panic!("{f:?} not in {listed:?}"))
            .clone()
    };
    assert_eq!(by_file(&e[0].file)["shipped"], false);
    assert_eq!(by_file(&e[0].file)["retired_unshipped_files"], 0);
    assert_eq!(by_file(&e[2].file)["shipped"], false);
    let fourth = listed.last().unwrap();
    assert_eq!(fourth["shipped"], false, "{fourth}");
    assert_eq!(fourth["retired_unshipped_files"], 2, "{fourth}");
    // The table: a SHIPPED column, `no+2` for the fourth.
    let o = rtrec(&["ls", dir.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().next().unwrap().contains("SHIPPED"), "{out}");
    assert!(out.lines().any(|l| l.contains(" no+2 ")), "{out}");
    // Shipped now: the table says yes for it.
    ship(&dir, &[&e[0]]);
    let o = rtrec(&["ls", dir.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    let name = e[0].file.file_name().unwrap().to_str().unwrap();
    assert!(
        out.lines().any(|l| l.contains(name) && l.contains(" yes ")),
        "{out}"
    );
}

#[test]
fn the_loop_reads_the_ledger_again_while_it_records() {
    // The recording runs from stdin; the shipper sends C meanwhile. At the
    // next switch the budget, over by the loop's own file, retires C
    // (shipped now) rather than A (the oldest, unshipped), which it would
    // have had to retire, counted, without the new ledger.
    let (_t, dir) = fresh();
    let e = three_earlier(&dir);
    ship(&dir, &[]);
    let json = dir.with_extension("json");
    let args = RecordArgs::into_dir(&dir)
        .switch("--stdin")
        .switch("--lines")
        .set("--file-size", "1MiB")
        .set("--alloc", "fallocate")
        .set("--keep-files", KEEP)
        .set("--unshipped-headroom", "1MiB")
        .set("--json", json.to_str().unwrap());
    let mut child = rtrec_piped(&args.words());
    let mut stdin = child.stdin.take().unwrap();
    let line = format!("{}\n", "x".repeat(99));
    stdin.write_all(line.as_bytes()).unwrap();
    stdin.flush().unwrap();
    // The loop has started (its first file is there) and kept all three.
    let t0 = std::time::Instant::now();
    while files(&dir).len() < 4 && t0.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(e.iter().all(|x| x.file.exists()));
    ship(&dir, &[&e[2]]);
    // The retire thread looks once a second; give it three.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let mib = line.repeat((3 * MIB / 2) as usize / line.len());
    stdin.write_all(mib.as_bytes()).unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["retired_earlier_files"], 1, "{v}");
    assert_eq!(v["retired_unshipped_files"], 0, "{v}");
    assert!(e[0].file.exists() && e[1].file.exists() && !e[2].file.exists());
}

#[test]
fn a_headroom_without_a_budget_is_refused_in_one_sentence() {
    let (_t, dir) = fresh();
    let args = RecordArgs::short(&dir, "4KiB", 10)
        .set("--keep-for", "1h")
        .set("--unshipped-headroom", "1MiB");
    let o = rtrec(&args.words());
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("needs --keep or --keep-files"), "{err}");
    assert!(files(&dir).is_empty());
}
