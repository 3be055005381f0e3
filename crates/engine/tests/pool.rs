//! The file pool: recycled files never yield stale frames; an empty pool
//! falls back (counted) or the writer waits for a refill; status and recycle
//! behave as documented; a recording a crash left in the pool is moved
//! back, never reused; a recording of another file size resizes the pool,
//! the refill replaces only what was taken, trim and remove give disk back.

use rtrec_engine::format::{FileHeader, HEADER_LEN};
use rtrec_engine::pool::{Pool, WritersLock};
use rtrec_engine::reader::{verify_file, FileStatus};
use rtrec_engine::{Alloc, Config, Mode, OnPoolEmpty, PoolConfig, Recorder, MIB};

fn cfg(mode: Mode) -> Config {
    Config {
        mode,
        alloc: Alloc::Pool,
        file_size: 2 * MIB,
        max_record: 1024,
        ..Config::default()
    }
}

fn record(dir: &std::path::Path, c: Config, n: u64) -> rtrec_engine::Summary {
    let mut rec = Recorder::create(dir, c).unwrap();
    let mut buf = [0u8; 1024];
    for i in 0..n {
        buf[..8].copy_from_slice(&i.to_le_bytes());
        rec.record(&buf).unwrap();
    }
    rec.finish().unwrap()
}

#[test]
fn a_recycled_file_yields_only_its_new_records() {
    let dir = tempfile::tempdir().unwrap();
    // One file ready: the recording takes it (a file it had to fallocate
    // would lose its unused tail at the end, and only pool-sized files
    // are recycled).
    Pool::open_or_create(dir.path(), 2 * MIB, 1)
        .unwrap()
        .prepare(|_, _| {})
        .unwrap();
    let full = record(dir.path(), cfg(Mode::Ring), 1500);
    assert_eq!(full.pool.taken, 1);
    let pool = Pool::open(dir.path()).unwrap().unwrap();
    assert_eq!(pool.ready().unwrap().len(), 0);
    pool.recycle(&full.files[0], false).unwrap();
    assert_eq!(pool.ready().unwrap().len(), 1);

    // Finished: the valid length bounds the data.
    let again = record(dir.path(), cfg(Mode::Ring), 10);
    assert_eq!(again.pool.taken, 1);
    let r = verify_file(&again.files[0]).unwrap();
    assert_eq!(
        (r.status, r.records, r.next_seq),
        (FileStatus::Complete, 10, Some(10)),
        "{:?}",
        r.notes
    );

    // Unfinished (the process dies mid-recording): the generation bounds it.
    pool.recycle(&again.files[0], false).unwrap();
    let mut rec = Recorder::create(dir.path(), cfg(Mode::Inline)).unwrap();
    for _ in 0..7 {
        rec.record(&[9u8; 1024]).unwrap();
    }
    let path = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "rtr"))
        .unwrap();
    std::mem::forget(rec); // as if killed: no end frame, no valid length
    let r = verify_file(&path).unwrap();
    assert_eq!(
        (r.status, r.records),
        (FileStatus::Unfinished, 7),
        "{:?}",
        r.notes
    );
    assert!(r.gaps.is_empty() && r.corrupt_at.is_none());
}

#[test]
fn an_empty_pool_falls_back_to_fallocate_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    // 2 MiB files hold ~2000 records of 1 KiB: 5000 need three files; the
    // pool has none ready and nothing is zero-filled before the recording,
    // so all three are fallocated (the first one before the first record).
    let s = record(
        dir.path(),
        Config {
            pool: PoolConfig {
                files: 1,
                ..PoolConfig::default()
            },
            ..cfg(Mode::Ring)
        },
        5000,
    );
    assert_eq!(s.files.len(), 3);
    assert_eq!(
        (s.pool.prepared_at_start, s.pool.taken, s.pool.fallbacks),
        (0, 0, 3)
    );
    let mut reports: Vec<_> = s.files.iter().map(|f| verify_file(f).unwrap()).collect();
    rtrec_engine::reader::check_continuity(&mut reports);
    assert!(reports.iter().all(|r| r.status == FileStatus::Complete));
    assert_eq!(reports.iter().map(|r| r.records).sum::<u64>(), 5000);
}

#[test]
fn with_the_wait_policy_the_writer_waits_for_the_refiller_and_the_producer_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let c = Config {
        pool: PoolConfig {
            files: 1,
            on_empty: OnPoolEmpty::Wait,
            ..PoolConfig::default()
        },
        ring_bytes: 16 * MIB as usize,
        ..cfg(Mode::Ring)
    };
    let s = record(dir.path(), c, 5000);
    assert_eq!(s.files.len(), 3);
    // The first file is fallocated before the first record (nothing was
    // ready and the producer is not running yet); the others are waited for.
    assert_eq!(s.pool.fallbacks, 1);
    assert_eq!(s.pool.taken, 2);
    assert!(s.pool.waits >= 1);
    assert_eq!(s.records_written + s.records_dropped, 5000);
}

#[test]
fn status_counts_ready_files_and_recycle_refuses_foreign_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::open_or_create(dir.path(), MIB, 2).unwrap();
    pool.prepare(|_, _| {}).unwrap();
    let st = pool.status().unwrap();
    assert_eq!(
        (st.ready_files, st.target_files, st.ready_bytes),
        (2, 2, 2 * MIB)
    );
    let other = dir.path().join("other.bin");
    std::fs::write(&other, vec![0u8; 1000]).unwrap();
    let e = pool.recycle(&other, false).unwrap_err().to_string();
    assert!(e.contains("only pool-sized files can be recycled"), "{e}");
    // Slots are not recordings.
    let slot = &pool.ready().unwrap()[0];
    let r = verify_file(slot).unwrap();
    assert!(
        r.notes.iter().any(|n| n.contains("pool slot")),
        "{:?}",
        r.notes
    );
    assert!(rtrec_engine::reader::recording_files(dir.path())
        .unwrap()
        .is_empty());
}

/// What a power cut can leave: a recording of `n` records whose header and
/// frames are on storage but whose rename out of the pool is not, with no
/// valid length yet. Returns the pool, the slot and the recording's header.
fn crash_left_in_pool(dir: &std::path::Path, n: u64) -> (Pool, std::path::PathBuf, FileHeader) {
    use std::os::unix::fs::FileExt;
    let done = record(dir, cfg(Mode::Inline), n);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&done.files[0])
        .unwrap();
    let mut b = [0u8; HEADER_LEN];
    f.read_exact_at(&mut b, 0).unwrap();
    let mut h = FileHeader::decode(&b).unwrap();
    h.valid_len = 0;
    f.write_all_at(&h.encode(), 0).unwrap();
    let pool = Pool::open(dir).unwrap().unwrap();
    let slot = pool.dir().join("slot-00000000000000000001-1.rtp");
    std::fs::rename(&done.files[0], &slot).unwrap();
    (pool, slot, h)
}

#[test]
fn a_recording_a_crash_left_in_the_pool_is_moved_back_and_never_taken_as_free() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, _slot, h) = crash_left_in_pool(dir.path(), 50);
    assert_eq!(pool.unfinished().unwrap().len(), 1);

    // The next recording moves it back first, says so, and takes another
    // file.
    let next = record(dir.path(), cfg(Mode::Inline), 5);
    assert!(
        next.warnings.iter().any(|w| w.contains("moved back")),
        "{:?}",
        next.warnings
    );
    assert!(pool.unfinished().unwrap().is_empty());
    let name = "recovered-";
    let back: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(name))
        .collect();
    assert_eq!(back.len(), 1, "{back:?}");
    let r = verify_file(&back[0]).unwrap();
    // Every frame is there (the end frame too): all 50 records are back.
    assert_eq!((r.status, r.records), (FileStatus::Complete, 50));
    assert_eq!(r.recording_id, Some(h.recording_id));
    assert_ne!(next.files[0], back[0]);
}

#[test]
fn a_recording_of_another_file_size_resizes_the_pool_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let big = Pool::open_or_create(dir.path(), 4 * MIB, 2).unwrap();
    big.prepare(|_, _| {}).unwrap();
    // A recording asking for 2 MiB files gets 2 MiB files, not 4 MiB ones.
    let s = record(dir.path(), cfg(Mode::Ring), 100);
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("2 idle file(s) of the old size removed")),
        "{:?}",
        s.warnings
    );
    assert_eq!(s.config.file_size, 2 * MIB);
    assert!(std::fs::metadata(&s.files[0]).unwrap().len() <= 2 * MIB);
    let st = Pool::open(dir.path()).unwrap().unwrap().status().unwrap();
    assert_eq!(st.file_size, 2 * MIB);
    assert!(st.slots.iter().all(|slot| slot.bytes == 2 * MIB), "{st:?}");
    // The same size again: nothing to say.
    let again = record(dir.path(), cfg(Mode::Ring), 100);
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
}

#[test]
fn the_refill_replaces_the_bytes_recordings_wrote_not_the_whole_target() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg(Mode::Ring);
    c.pool.refill_on_finish = true;
    // 100 KiB written: owed to the pool, nothing zero-filled for it.
    let s = record(dir.path(), c.clone(), 100);
    assert_eq!((s.pool.taken, s.pool.refilled_on_finish), (0, 0));
    let st = Pool::open(dir.path()).unwrap().unwrap().status().unwrap();
    assert_eq!((st.ready_files, st.owed_bytes), (0, s.file_bytes));
    // Another 2 MiB: together more than one 2 MiB file's worth.
    let more = record(dir.path(), c, 2000);
    assert_eq!(more.pool.refilled_on_finish, 1);
    let st = Pool::open(dir.path()).unwrap().unwrap().status().unwrap();
    // Target 2, but one file is what the bytes written replace.
    assert_eq!((st.ready_files, st.target_files), (1, 2));
    assert_eq!(st.owed_bytes, s.file_bytes + more.file_bytes - 2 * MIB);
    assert_eq!(st.disk_bytes, 2 * MIB, "zero-filled: fully allocated");
}

#[test]
fn trim_gives_back_ready_files_and_remove_deletes_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::open_or_create(dir.path(), MIB, 3).unwrap();
    pool.prepare(|_, _| {}).unwrap();
    let (pool, t) = pool.trim(1).unwrap();
    assert_eq!((t.removed_files, t.freed_bytes), (2, 2 * MIB));
    let st = pool.status().unwrap();
    assert_eq!((st.ready_files, st.target_files), (1, 1));
    // Refills no longer grow it back past the new target.
    assert_eq!(pool.refill(5).unwrap(), 0);
    let t = pool.remove().unwrap();
    assert_eq!(t.removed_files, 1);
    assert!(!dir.path().join(".pool").exists());
    assert!(Pool::open(dir.path()).unwrap().is_none());
}

#[test]
fn trim_resize_and_remove_never_delete_a_recording_a_crash_left_in_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, slot, _) = crash_left_in_pool(dir.path(), 20);
    let (pool, t) = pool.trim(0).unwrap();
    assert_eq!(t.removed_files, 0, "a recording is not a free file");
    assert!(slot.exists());
    let (pool, _) = pool.resize(4 * MIB, 2).unwrap();
    assert!(slot.exists());
    let e = pool.remove().unwrap_err().to_string();
    assert!(e.contains("`rtrec recover "), "{e}");
    assert_eq!(
        verify_file(&slot).unwrap().records,
        20,
        "the crash-left recording is intact"
    );
}

#[test]
fn recorders_that_refill_at_once_prepare_the_missing_files_once() {
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::open_or_create(dir.path(), MIB, 4).unwrap();
    // Four recorders, each with its own handle, end at once having used 3
    // files each: together they top the pool up to 3, not to 3 per refill.
    let prepared: u32 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let p = Pool::open(dir.path()).unwrap().unwrap();
                    p.refill(3).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(prepared, 3);
    assert_eq!(pool.status().unwrap().ready_files, 3);
    // The refill lock goes with the pool.
    pool.remove().unwrap();
    assert!(!dir.path().join(".pool").exists());
}

#[test]
fn a_pooled_recorder_says_it_writes_in_its_directory_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [Mode::Ring, Mode::Inline] {
        let rec = Recorder::create(dir.path(), cfg(mode)).unwrap();
        // Whoever made the recorder (the command line, an application
        // through the C library), a recording ending beside it is not
        // alone and keeps its tail.
        let other = WritersLock::take(dir.path()).unwrap();
        assert!(!other.alone(), "{mode:?}");
        rec.finish().unwrap();
        assert!(other.alone(), "{mode:?}");
    }
    // Not pooled: no such lock is held.
    let c = Config {
        alloc: Alloc::Zero,
        ..cfg(Mode::Ring)
    };
    let rec = Recorder::create(dir.path(), c).unwrap();
    assert!(WritersLock::take(dir.path()).unwrap().alone());
    rec.finish().unwrap();
}
