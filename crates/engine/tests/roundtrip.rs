//! Every strategy writes files that `verify` reads back complete, with every
//! record in order; losses and aborts are stored and reported.

use rtrec_engine::reader::{verify_file, FileStatus};
use rtrec_engine::{Alloc, Config, Flush, Framing, Mode, Recorder, MIB};

fn record_n(cfg: Config, n: u64, size: usize) -> (tempfile::TempDir, rtrec_engine::Summary) {
    let dir = tempfile::tempdir().unwrap();
    if cfg.alloc == Alloc::Pool {
        // A pool recording takes a prepared file; in a directory without
        // one its first file is fallocated (a counted fallback), by design
        // (nothing zero-filled for a recording that may write 3 bytes).
        prepare_pool(dir.path(), cfg.file_size);
    }
    let mut rec = Recorder::create(dir.path(), cfg).unwrap();
    let mut buf = vec![0u8; size];
    for i in 0..n {
        buf[..8].copy_from_slice(&i.to_le_bytes());
        if let Err(e) = rec.record(&buf) {
            panic!("record {i} was dropped ({e}) in a test that leaves the writer plenty of time");
        }
    }
    let s = rec.finish().unwrap();
    (dir, s)
}

/// One file of `file_size` ready in `dir`'s pool, as `rtrec pool prepare`
/// leaves it.
fn prepare_pool(dir: &std::path::Path, file_size: u64) {
    let pool = rtrec_engine::pool::Pool::open_or_create(dir, file_size, 1).unwrap();
    assert_eq!(pool.prepare(|_, _| {}).unwrap(), 1);
}

#[test]
fn every_allocation_and_flush_strategy_round_trips_in_both_modes() {
    for mode in [Mode::Ring, Mode::Inline] {
        for (alloc, _) in Alloc::ALL {
            for (flush, _) in Flush::ALL {
                let cfg = Config {
                    mode,
                    alloc: *alloc,
                    flush: *flush,
                    flush_every: 64 * 1024,
                    file_size: 4 * MIB,
                    max_record: 4096,
                    ring_bytes: 4 * MIB as usize,
                    writer_poll_us: 100,
                    ..Config::default()
                };
                let (dir, s) = record_n(cfg, 300, 4096);
                assert_eq!(
                    (s.records_written, s.records_dropped),
                    (300, 0),
                    "{mode} {alloc} {flush}"
                );
                assert_eq!(s.files.len(), 1);
                let r = verify_file(&s.files[0]).unwrap();
                assert_eq!(
                    r.status,
                    FileStatus::Complete,
                    "{mode} {alloc} {flush}: {:?}",
                    r.notes
                );
                assert_eq!(
                    (r.records, r.first_seq, r.next_seq),
                    (300, Some(0), Some(300))
                );
                let len = std::fs::metadata(&s.files[0]).unwrap().len();
                if *alloc == Alloc::Pool {
                    // Pool files keep their size; the header says what is valid.
                    assert_eq!(len, 4 * MIB);
                    assert_eq!(s.pool.taken, 1);
                } else {
                    // Truncated to what was used.
                    assert_eq!(len, r.valid_len);
                }
                drop(dir);
            }
        }
    }
}

#[test]
fn a_recording_larger_than_one_file_continues_in_the_next() {
    let cfg = Config {
        file_size: MIB,
        max_record: 16384,
        ring_bytes: 8 * MIB as usize,
        ..Config::default()
    };
    let (_dir, s) = record_n(cfg, 200, 16384);
    assert!(s.files.len() >= 3, "{:?}", s.files);
    let mut reports: Vec<_> = s.files.iter().map(|f| verify_file(f).unwrap()).collect();
    rtrec_engine::reader::check_continuity(&mut reports);
    let total: u64 = reports.iter().map(|r| r.records).sum();
    assert_eq!(total, 200);
    assert!(
        reports.iter().all(|r| r.status == FileStatus::Complete),
        "{reports:?}"
    );
    assert!(reports[..reports.len() - 1]
        .iter()
        .all(|r| r.stored.as_ref().unwrap().continued));
}

#[test]
fn record_when_ring_full_counts_a_drop_and_stores_the_loss() {
    // A ring that holds two records and a writer that polls rarely: a burst
    // must overflow it.
    let cfg = Config {
        ring_bytes: 2 * (4096 + 24) + 100,
        max_record: 4096,
        writer_poll_us: 200_000,
        ..Config::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::create(dir.path(), cfg).unwrap();
    let buf = [7u8; 4096];
    let mut dropped = 0;
    for _ in 0..50 {
        if rec.record(&buf).is_err() {
            dropped += 1;
        }
    }
    let s = rec.finish().unwrap();
    assert!(dropped > 0);
    assert_eq!(s.records_dropped, dropped);
    assert_eq!(s.drops.ring_full, dropped);
    assert_eq!(s.records_written + s.records_dropped, 50);
    assert_eq!(s.losses_stored, dropped, "every drop is stored in the file");
    let r = verify_file(&s.files[0]).unwrap();
    assert_eq!(r.status, FileStatus::Complete, "{:?}", r.notes);
    assert_eq!(r.lost_records, dropped);
    assert_eq!(r.records, s.records_written);
    assert!(r.gaps.is_empty());
    assert_eq!(r.stored.unwrap().records_dropped, dropped);
}

#[test]
fn a_too_large_record_is_refused_counted_and_stored() {
    for mode in [Mode::Ring, Mode::Inline] {
        let cfg = Config {
            mode,
            max_record: 100,
            ..Config::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let mut rec = Recorder::create(dir.path(), cfg).unwrap();
        rec.record(b"ok").unwrap();
        assert_eq!(
            rec.record(&[0u8; 101]),
            Err(rtrec_engine::RecordError::TooLarge)
        );
        rec.record(b"ok again").unwrap();
        let s = rec.finish().unwrap();
        assert_eq!((s.records_written, s.drops.too_large), (2, 1));
        let r = verify_file(&s.files[0]).unwrap();
        assert_eq!(
            (r.status, r.records, r.lost_records),
            (FileStatus::Complete, 2, 1),
            "{mode}: {:?}",
            r.notes
        );
    }
}

#[test]
fn an_aborted_recording_is_not_accepted_as_complete() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::create(dir.path(), Config::default()).unwrap();
    rec.record(b"one").unwrap();
    let s = rec.abort("stdin closed after 1 of 10 records").unwrap();
    assert!(!s.complete);
    let r = verify_file(&s.files[0]).unwrap();
    assert_eq!(r.status, FileStatus::Aborted);
    assert!(!r.is_clean());
    assert!(
        r.notes.iter().any(|n| n.contains("stdin closed")),
        "{:?}",
        r.notes
    );
}

#[test]
fn raw_framing_writes_exactly_the_bytes_given_and_a_sidecar() {
    let cfg = Config {
        framing: Framing::Raw,
        alloc: Alloc::Fallocate,
        ..Config::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::create(dir.path(), cfg).unwrap();
    rec.record(b"abc").unwrap();
    rec.record(b"defg").unwrap();
    let s = rec.finish().unwrap();
    assert_eq!(std::fs::read(&s.files[0]).unwrap(), b"abcdefg");
    let side: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            p.to_str().unwrap().ends_with(".meta.json").then_some(p)
        })
        .collect();
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&side[0]).unwrap()).unwrap();
    assert_eq!(meta["records_written"], 2);
    assert_eq!(meta["records_dropped"], 0);
}

#[test]
fn a_missing_directory_is_one_sentence() {
    let e = Recorder::create(
        std::path::Path::new("/nonexistent/rtrec"),
        Config::default(),
    )
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        "the directory '/nonexistent/rtrec' does not exist"
    );
}

#[test]
fn the_summary_reports_latencies_of_write_and_record() {
    let (_d, s) = record_n(Config::default(), 100, 1000);
    let w = s.write_ns.unwrap();
    let r = s.record_ns.unwrap();
    assert_eq!((w.count, r.count), (100, 100));
    assert!(w.min <= w.p50 && w.p50 <= w.p99 && w.p99 <= w.max);
    assert!(r.min <= r.mean && r.mean <= r.max);
    assert!(s.flush.cpu_ns > 0 || s.config.flush == Flush::None);
}
