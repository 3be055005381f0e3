//! The ring-full policy: drop-newest (counted and stored) by default, or
//! wait for room under `OnFull::Block`, so that a producer that can wait
//! loses nothing.

use rtrec_engine::reader::verify_file;
use rtrec_engine::{Alloc, Config, OnFull, Recorder};

/// A small ring (4 records) and a writer that polls only every 20 ms: a
/// producer offering records in a tight loop finds the ring full.
fn small_ring(on_full: OnFull) -> Config {
    Config {
        ring_bytes: 4 * (24 + 4096),
        max_record: 4096,
        writer_poll_us: 20_000,
        on_full,
        alloc: Alloc::Fallocate,
        file_size: 4 << 20,
        ..Config::default()
    }
}

fn offer(cfg: Config, n: u64) -> rtrec_engine::Summary {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::create(dir.path(), cfg).unwrap();
    let buf = vec![7u8; 4096];
    for _ in 0..n {
        let _ = rec.record(&buf);
    }
    let s = rec.finish().unwrap();
    let report = verify_file(&s.files[0]).unwrap();
    assert_eq!(report.records, s.records_written);
    assert_eq!(report.lost_records, s.records_dropped);
    s
}

#[test]
fn under_the_blocking_policy_a_full_ring_makes_the_producer_wait_and_nothing_is_dropped() {
    let s = offer(small_ring(OnFull::Block), 400);
    assert_eq!(s.records_written, 400);
    assert_eq!(s.records_dropped, 0);
    assert!(s.ring_wait_max_ns <= s.ring_wait_ns);
    assert_eq!(s.config.on_full, OnFull::Block);
}

#[test]
fn under_the_default_policy_a_full_ring_drops_counts_and_stores_without_waiting() {
    let s = offer(small_ring(OnFull::Drop), 400);
    assert_eq!(s.records_written + s.records_dropped, 400);
    assert_eq!(s.drops.ring_full, s.records_dropped);
    assert_eq!(s.ring_waits, 0);
    assert_eq!(Config::default().on_full, OnFull::Drop);
}
