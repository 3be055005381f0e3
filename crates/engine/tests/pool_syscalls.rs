//! Starting and finishing recordings with the file pool calls neither
//! fallocate nor ftruncate (counted through rtrec-sys's wrappers, through
//! which all of rtrec's allocation and truncation goes). Alone in its test
//! binary so no other test's calls are counted.

use std::sync::atomic::Ordering;

use rtrec_engine::pool::Pool;
use rtrec_engine::reader::{verify_file, FileStatus};
use rtrec_engine::{Alloc, Config, Recorder, MIB};
use rtrec_sys::testing::{FALLOCATE, FTRUNCATE};

fn counts() -> (u64, u64) {
    (
        FALLOCATE.load(Ordering::SeqCst),
        FTRUNCATE.load(Ordering::SeqCst),
    )
}

fn record(dir: &std::path::Path, alloc: Alloc) -> rtrec_engine::Summary {
    let cfg = Config {
        alloc,
        file_size: 2 * MIB,
        max_record: 4096,
        ..Config::default()
    };
    let mut rec = Recorder::create(dir, cfg).unwrap();
    for _ in 0..100 {
        rec.record(&[5u8; 4096]).unwrap();
    }
    rec.finish().unwrap()
}

#[test]
fn pooled_recordings_neither_allocate_nor_truncate_while_the_control_does() {
    let dir = tempfile::tempdir().unwrap();
    // Idle time: prepare three files.
    let pool = Pool::open_or_create(dir.path(), 2 * MIB, 3).unwrap();
    assert_eq!(pool.prepare(|_, _| {}).unwrap(), 3);

    let before = counts();
    let a = record(dir.path(), Alloc::Pool);
    let b = record(dir.path(), Alloc::Pool);
    let after = counts();
    assert_eq!(
        after, before,
        "a pooled start or finish called fallocate or ftruncate"
    );
    assert_eq!((a.pool.taken, b.pool.taken, a.pool.fallbacks), (1, 1, 0));
    for f in a.files.iter().chain(&b.files) {
        assert_eq!(verify_file(f).unwrap().status, FileStatus::Complete);
    }

    // Control: the counters do see the S1 design's calls.
    record(dir.path(), Alloc::Fallocate);
    let control = counts();
    assert!(
        control.0 > after.0 && control.1 > after.1,
        "{control:?} vs {after:?}"
    );
}
