//! Any number of recorders share one directory: 8 threads × 20 rounds of
//! create → record → finish in one directory, with a file pool (taking and
//! refilling it at the same time), without one, and as flight recorders
//! whose triggers take event files from the pool. Every run succeeds,
//! every file verifies clean, no two recordings share a file, and the
//! pool's files add up: each one prepared is either still ready or was
//! taken by exactly one recording (none lost, none taken twice).
//!
//! The processes' side (8 `rtrec record` at once) is in the workspace's
//! `tests/concurrent_record.rs`.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rtrec_engine::format::{FileHeader, FLAG_POOLED, HEADER_LEN};
use rtrec_engine::pool::Pool;
use rtrec_engine::reader::{recording_files, verify_file};
use rtrec_engine::{Alloc, Config, FlightConfig, PoolConfig, Recorder, Summary, MIB};

const THREADS: usize = 8;
const ROUNDS: usize = 20;
const REC: usize = 1024;

/// Runs THREADS threads of ROUNDS recordings each in `dir`; returns every
/// summary. Any failure fails the test with its message.
fn run_all(dir: &Path, cfg: &Config, triggers: usize) -> Vec<Summary> {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    (0..ROUNDS)
                        .map(|r| {
                            let mut rec = Recorder::create(dir, cfg.clone())
                                .unwrap_or_else(|e| panic!("thread {t} round {r}: create: {e}"));
                            for i in 0..50u64 {
                                let _ = rec.record(&[i as u8; REC]);
                                if triggers > 0 && i % (50 / triggers as u64) == 12 {
                                    rec.trigger().unwrap();
                                }
                            }
                            let s = rec
                                .finish()
                                .unwrap_or_else(|e| panic!("thread {t} round {r}: finish: {e}"));
                            assert!(s.error.is_none(), "thread {t} round {r}: {:?}", s.error);
                            s
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

/// Every recording file verifies clean, belongs to exactly one summary,
/// and is a distinct file on disk; returns the recording files.
fn check_files(dir: &Path, summaries: &[Summary]) -> Vec<PathBuf> {
    let files = recording_files(dir).unwrap();
    for f in &files {
        let r = verify_file(f).unwrap();
        assert!(r.is_clean(), "{}: {:?}", f.display(), r.notes);
    }
    let listed: Vec<&PathBuf> = summaries.iter().flat_map(|s| &s.files).collect();
    let unique: HashSet<&PathBuf> = listed.iter().copied().collect();
    assert_eq!(unique.len(), listed.len(), "a file in two summaries");
    assert_eq!(listed.len(), files.len(), "files on disk vs in summaries");
    let inodes: HashSet<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().ino())
        .collect();
    assert_eq!(inodes.len(), files.len(), "two names of one file");
    // Nothing else is left: no claim, no temporary file.
    let hidden: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with('.') && n != ".pool")
        .collect();
    assert!(hidden.is_empty(), "left behind: {hidden:?}");
    files
}

fn pooled(f: &Path) -> bool {
    let b = std::fs::read(f).unwrap();
    FileHeader::decode(&b[..HEADER_LEN]).unwrap().flags & FLAG_POOLED != 0
}

/// The pool's books: ready now = ready before + prepared − taken, and
/// the files marked as taken from the pool are exactly the ones taken.
fn check_pool(dir: &Path, before: u64, summaries: &[Summary], files: &[PathBuf]) {
    let pool = Pool::open(dir).unwrap().unwrap();
    let st = pool.status().unwrap();
    let sum = |f: fn(&Summary) -> u64| summaries.iter().map(f).sum::<u64>();
    let taken = sum(|s| s.pool.taken);
    let prepared = sum(|s| {
        s.pool.prepared_at_start + s.pool.refilled_on_finish + s.pool.refilled_while_recording
    });
    assert_eq!(
        st.ready_files as u64 + taken,
        before + prepared,
        "pool files lost or taken twice: ready {} taken {taken} before {before} prepared {prepared}",
        st.ready_files
    );
    assert_eq!(st.preparing_files, 0);
    assert!(pool.unfinished().unwrap().is_empty());
    let from_pool = files.iter().filter(|f| pooled(f)).count() as u64;
    assert_eq!(from_pool, taken, "files marked as taken from the pool");
    assert!(taken > 0, "the pool was used");
    let slot_inodes: HashSet<u64> = pool
        .ready()
        .unwrap()
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().ino())
        .collect();
    let file_inodes: HashSet<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().ino())
        .collect();
    assert!(
        slot_inodes.is_disjoint(&file_inodes),
        "a slot is also a recording"
    );
}

fn base_config(alloc: Alloc) -> Config {
    Config {
        alloc,
        file_size: MIB,
        max_record: REC,
        ring_bytes: 256 * 1024,
        pool: PoolConfig {
            files: 4,
            refill_on_finish: true,
            ..PoolConfig::default()
        },
        ..Config::default()
    }
}

#[test]
fn eight_threads_share_a_directory_and_its_pool() {
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::open_or_create(dir.path(), MIB, 4).unwrap();
    let before = pool.prepare(|_, _| {}).unwrap() as u64;
    let cfg = base_config(Alloc::Pool);
    let summaries = run_all(dir.path(), &cfg, 0);
    assert_eq!(summaries.len(), THREADS * ROUNDS);
    let files = check_files(dir.path(), &summaries);
    check_pool(dir.path(), before, &summaries, &files);
}

#[test]
fn eight_threads_share_a_directory_without_a_pool() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = run_all(dir.path(), &base_config(Alloc::Fallocate), 0);
    let files = check_files(dir.path(), &summaries);
    assert_eq!(files.len(), THREADS * ROUNDS);
    assert!(Pool::open(dir.path()).unwrap().is_none());
}

#[test]
fn eight_flight_recorders_share_a_directory_and_its_pool() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        flight: Some(FlightConfig {
            pre_ns: 1_000_000_000,
            pre_bytes: 8 * (REC as u64 + 24),
            post_ns: 1_000_000_000,
        }),
        ..base_config(Alloc::Pool)
    };
    let summaries = run_all(dir.path(), &cfg, 2);
    let files = check_files(dir.path(), &summaries);
    // Two events a recording, one file each.
    assert_eq!(files.len(), THREADS * ROUNDS * 2);
    assert!(files
        .iter()
        .all(|f| f.file_name().unwrap().to_str().unwrap().contains("-ev")));
    check_pool(dir.path(), 0, &summaries, &files);
}
