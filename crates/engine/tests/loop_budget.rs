//! A loop recording (`Config::retention`): it keeps its newest files, the
//! older ones are retired (recycled into the pool or deleted) off the
//! writer's path; every file carries `LOOP` and every file after the first
//! opens with its `RETIRED` claim; the recording verifies clean with its
//! leading files gone, and a file missing in the middle is still missing.

use std::path::{Path, PathBuf};

use rtrec_engine::format::{FileHeader, FLAG_LOOP, HEADER_LEN};
use rtrec_engine::pool::Pool;
use rtrec_engine::reader::{
    check_continuity, recording_files, verify_file, FileReport, FileStatus,
};
use rtrec_engine::{Alloc, Config, Mode, Recorder, Retention, MIB};

const RECORD: usize = 1000;

fn looped(alloc: Alloc, keep_files: u32) -> Config {
    Config {
        mode: Mode::Inline,
        alloc,
        file_size: MIB,
        max_record: RECORD,
        retention: Retention {
            keep_files,
            ..Retention::default()
        },
        ..Config::default()
    }
}

fn record(dir: &Path, c: Config, n: u64) -> rtrec_engine::Summary {
    let mut rec = Recorder::create(dir, c).unwrap();
    let mut buf = [0u8; RECORD];
    for i in 0..n {
        buf[..8].copy_from_slice(&i.to_le_bytes());
        rec.record(&buf).unwrap();
    }
    rec.finish().unwrap()
}

fn verify_dir(dir: &Path) -> Vec<FileReport> {
    let files: Vec<PathBuf> = recording_files(dir).unwrap();
    let mut reports: Vec<FileReport> = files.iter().map(|f| verify_file(f).unwrap()).collect();
    check_continuity(&mut reports);
    reports
}

fn header(p: &Path) -> FileHeader {
    let b = std::fs::read(p).unwrap();
    FileHeader::decode(&b[..HEADER_LEN]).unwrap()
}

#[test]
fn a_loop_keeps_its_newest_files_and_verifies_clean_without_the_retired_ones() {
    for alloc in [Alloc::Pool, Alloc::Fallocate] {
        let dir = tempfile::tempdir().unwrap();
        // About 1,000 records a 1 MiB file: 12 files, 3 kept + the last.
        let s = record(dir.path(), looped(alloc, 3), 12_000);
        assert!(s.complete, "{alloc:?}: {:?}", s.error);
        assert_eq!(s.files.len(), 4, "{alloc:?}: the kept files and the last");
        assert!(s.retired_files >= 8, "{alloc:?}: {}", s.retired_files);
        assert_eq!(
            s.retired_files + s.files.len() as u64,
            header(s.files.last().unwrap()).index as u64 + 1
        );
        let on_disk = recording_files(dir.path()).unwrap();
        assert_eq!(on_disk, s.files, "{alloc:?}: only the kept files are left");
        for f in &on_disk {
            assert_ne!(header(f).flags & FLAG_LOOP, 0);
            assert_eq!(std::fs::read(f).unwrap()[8], 5, "format version 5");
        }
        let reports = verify_dir(dir.path());
        for r in &reports {
            assert!(
                r.is_clean(),
                "{alloc:?} {}: {:?}",
                r.path.display(),
                r.notes
            );
        }
        let first = &reports[0];
        let retired = first
            .retired
            .expect("the first kept file says what was retired");
        assert_eq!(retired.next_seq, first.first_seq);
        assert_eq!(retired.next_seq, Some(s.retired_seq_to));
        assert!(retired.last_wall_ns.is_some());
        assert!(
            first
                .notes
                .iter()
                .any(|n| n.contains("retired by the loop")),
            "{:?}",
            first.notes
        );
        let records: u64 = reports.iter().map(|r| r.records).sum();
        assert_eq!(records + s.retired_seq_to, 12_000, "{alloc:?}");
        if alloc == Alloc::Pool {
            // Recycled while the pool was below its target (2), the rest
            // deleted: the pool never holds more than its target.
            let pool = Pool::open(dir.path()).unwrap().unwrap();
            assert!(pool.ready().unwrap().len() <= 2);
            assert!(s.retired_files > 0);
        }
    }
}

#[test]
fn a_file_missing_in_the_middle_of_a_loop_is_still_missing() {
    let dir = tempfile::tempdir().unwrap();
    let s = record(dir.path(), looped(Alloc::Fallocate, 3), 8_000);
    std::fs::remove_file(&s.files[1]).unwrap();
    let reports = verify_dir(dir.path());
    // Intact files beside a missing one: the recording is incomplete (a
    // state verify refuses), its records counted as missing.
    assert!(reports.iter().any(|r| r.status == FileStatus::Incomplete));
    assert!(reports.iter().map(|r| r.missing_records).sum::<u64>() > 0);
}

#[test]
fn a_recording_that_is_not_a_loop_still_misses_its_first_files_and_stays_version_4() {
    let dir = tempfile::tempdir().unwrap();
    let c = Config {
        retention: Retention::default(),
        ..looped(Alloc::Fallocate, 1)
    };
    let s = record(dir.path(), c, 3_000);
    assert_eq!(s.retired_files, 0);
    assert_eq!(std::fs::read(&s.files[0]).unwrap()[8], 4);
    std::fs::remove_file(&s.files[0]).unwrap();
    let reports = verify_dir(dir.path());
    assert_eq!(
        reports[0].status,
        FileStatus::Incomplete,
        "{:?}",
        reports[0].notes
    );
}

#[test]
fn the_flight_recorder_keeps_its_newest_events_and_the_loop_never_touches_them() {
    use rtrec_engine::FlightConfig;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        max_record: 64,
        file_size: MIB,
        flight: Some(FlightConfig {
            pre_ns: 10_000_000,
            pre_bytes: 64 << 10,
            post_ns: 10_000_000,
        }),
        retention: Retention {
            keep_events: 2,
            ..Retention::default()
        },
        ..Config::default()
    };
    let mut rec = Recorder::create(dir.path(), cfg).unwrap();
    let live = rec.live();
    let buf = [5u8; 64];
    for event in 1..=5u64 {
        rec.trigger().unwrap();
        // Until the writer has started this event and its post span has
        // passed (records keep coming, so the event can end).
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut started = None;
        loop {
            rec.record(&buf).unwrap();
            std::thread::sleep(Duration::from_micros(500));
            if live.events.load(Ordering::Relaxed) >= event {
                let t = *started.get_or_insert_with(Instant::now);
                if t.elapsed() > Duration::from_millis(40) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "event {event} never started");
        }
    }
    let s = rec.finish().unwrap();
    assert_eq!(s.flight.as_ref().unwrap().events, 5);
    assert_eq!((s.retired_events, s.retired_files), (3, 3), "{:?}", s.files);
    let left = recording_files(dir.path()).unwrap();
    assert_eq!(left, s.files);
    let names: Vec<String> = left
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.len() == 2 && names[0].contains("-ev00003-") && names[1].contains("-ev00004-"),
        "the newest two events: {names:?}"
    );
    for r in verify_dir(dir.path()) {
        assert!(r.is_clean(), "{}: {:?}", r.path.display(), r.notes);
    }
}

/// File 1 of a loop recording (header `LOOP`), finished, holding one data
/// record at sequence 100, opening with `claim` (none: with the record).
fn loop_file_1(claim: Option<rtrec_engine::format::RetiredPayload>) -> Vec<u8> {
    use rtrec_engine::format::{
        chain_seed, encode_frame_header, EndPayload, FrameKind, FRAME_HEADER_LEN,
    };
    let mut h = FileHeader {
        flags: FLAG_LOOP,
        generation: 9,
        created_ns: 1,
        created_mono_ns: 1,
        config_digest: 1,
        valid_len: 0,
        recording_id: 5,
        index: 1,
    };
    let mut frames = Vec::new();
    let mut prev = chain_seed(&h);
    let mut put = |kind, seq, payload: &[u8]| {
        let mut fh = [0u8; FRAME_HEADER_LEN];
        prev = encode_frame_header(&mut fh, 9, kind, seq, 10, prev, payload);
        frames.extend_from_slice(&fh);
        frames.extend_from_slice(payload);
    };
    if let Some(c) = claim {
        put(FrameKind::Retired, 100, &c.encode());
    }
    put(FrameKind::Data, 100, b"x");
    let end = EndPayload {
        complete: true,
        continued: false,
        interrupted: false,
        records_written: 101,
        records_dropped: 0,
        bytes_written: 101,
        post_ns: 0,
        post_records: 0,
        reason: String::new(),
    };
    put(FrameKind::End, 101, &end.encode());
    h.valid_len = (HEADER_LEN + frames.len()) as u64;
    let mut b = h.encode().to_vec();
    b.extend_from_slice(&frames);
    b
}

#[test]
fn a_loop_file_without_its_claim_or_with_a_claim_of_itself_is_corrupt() {
    use rtrec_engine::format::RetiredPayload;
    use rtrec_engine::reader::verify_bytes;
    let good = RetiredPayload {
        first_index: 0,
        next_index: 1,
        first_seq: 0,
        next_seq: 100,
        files: 1,
        bytes: 4096,
        last_wall_ns: 7,
    };
    let p = Path::new("rec-0001.rtr");
    let r = verify_bytes(p, &loop_file_1(Some(good)));
    assert_eq!(r.status, FileStatus::Complete, "{:?}", r.notes);
    assert_eq!(r.retired_claim, Some(good));
    let r = verify_bytes(p, &loop_file_1(None));
    assert_eq!(r.status, FileStatus::Corrupt, "no claim: {:?}", r.notes);
    for bad in [
        // It claims itself retired.
        RetiredPayload {
            next_index: 2,
            files: 2,
            ..good
        },
        // It names itself the first kept one, starting elsewhere.
        RetiredPayload {
            next_seq: 90,
            ..good
        },
    ] {
        let r = verify_bytes(p, &loop_file_1(Some(bad)));
        assert_eq!(r.status, FileStatus::Corrupt, "{bad:?}: {:?}", r.notes);
    }
}

/// Issue 42, finding 7, from the library's side (the C API's path): a
/// recorder with `keep_bytes = 2 MiB` deleted an earlier, unrelated
/// recording before recording anything, and `keep_for_ns = 1` every
/// closed recording of the directory. The budget owns only earlier loop
/// recordings of its own prefix; a second budgeted recorder in the
/// directory is refused with `EBUSY` while the first records.
#[test]
fn a_budget_never_retires_what_its_loop_does_not_own_and_one_budget_holds_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let plain = |prefix: &str| Config {
        mode: Mode::Inline,
        alloc: Alloc::Fallocate,
        file_size: MIB,
        max_record: RECORD,
        prefix: prefix.into(),
        ..Config::default()
    };
    let important = record(dir.path(), plain("important"), 10);
    let unbudgeted = record(dir.path(), plain("rec"), 10);
    let before: Vec<PathBuf> = important
        .files
        .iter()
        .chain(&unbudgeted.files)
        .cloned()
        .collect();
    let budget = |keep_bytes, keep_for_ns| Config {
        retention: Retention {
            keep_bytes,
            keep_for_ns,
            ..Retention::default()
        },
        ..plain("rec")
    };
    for (bytes, age) in [(2 * MIB, 0), (2 * MIB, 1), (0, 1)] {
        let s = record(dir.path(), budget(bytes, age), 10);
        assert!(s.complete, "{:?}", s.error);
        assert_eq!(s.retired_other_recordings, Vec::<String>::new());
        for p in &before {
            assert!(
                p.exists(),
                "{} was retired by a budget that does not own it",
                p.display()
            );
        }
    }
    // The loops' own earlier recordings are the budget's: with an age
    // limit of 1 ns each start retired the one before.
    let loops: Vec<PathBuf> = recording_files(dir.path())
        .unwrap()
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(loops.len(), 1, "{loops:?}");
    // One budget per directory.
    let first = Recorder::create(dir.path(), budget(2 * MIB, 0)).unwrap();
    match Recorder::create(dir.path(), budget(2 * MIB, 0)) {
        Err(e @ rtrec_engine::Error::Path { .. }) => {
            assert_eq!(e.errno(), Some(libc::EBUSY), "{e}");
            assert!(e.to_string().contains("one budget per directory"), "{e}");
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("a second budget in the directory was accepted"),
    }
    first.finish().unwrap();
    record(dir.path(), budget(2 * MIB, 0), 1);
}
