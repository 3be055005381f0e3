//! The flight recorder: 50 back-to-back triggers give 50 event files, each
//! with its pre-trigger window and post-trigger records, sequence numbers
//! contiguous across the trigger; memory does not grow with events.

use std::sync::atomic::Ordering;
use std::time::Duration;

use rtrec_engine::format::{decode_frame, FileHeader, FrameKind, TriggerPayload, HEADER_LEN};
use rtrec_engine::reader::{verify_file, FileStatus};
use rtrec_engine::{Config, FlightConfig, Recorder, MIB};

const REC: usize = 1024;
const PRE_RECORDS: u64 = 10;

fn trigger_of(path: &std::path::Path) -> TriggerPayload {
    let bytes = std::fs::read(path).unwrap();
    let h = FileHeader::decode(&bytes).unwrap();
    let (fh, p) = decode_frame(&bytes[HEADER_LEN..], h.generation).unwrap();
    assert_eq!(
        fh.kind,
        FrameKind::Trigger,
        "an event file opens with its trigger frame"
    );
    TriggerPayload::decode(p).unwrap()
}

#[test]
fn back_to_back_triggers_make_one_complete_file_per_event_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        max_record: REC,
        file_size: MIB,
        // The window holds exactly 10 records (bytes bound); the time bound is loose.
        flight: Some(FlightConfig {
            pre_ns: 10_000_000_000,
            pre_bytes: PRE_RECORDS * (REC as u64 + 24),
            post_ns: 20_000_000,
        }),
        ..Config::default()
    };
    let mut rec = Recorder::create(dir.path(), cfg).unwrap();
    let live = rec.live();
    let buf = [3u8; REC];
    let mut rss_after_5 = 0;
    // At least `ms` of records, then `PRE_RECORDS` more: on a loaded
    // machine a 500 µs sleep can take many ms, so a span of time alone does
    // not fill the next pre-trigger window (records after the post span
    // are the next event's window).
    let record_for = |rec: &mut Recorder, ms: u64| {
        let until = std::time::Instant::now() + Duration::from_millis(ms);
        while std::time::Instant::now() < until {
            rec.record(&buf).unwrap();
            std::thread::sleep(Duration::from_micros(500));
        }
        for _ in 0..PRE_RECORDS {
            rec.record(&buf).unwrap();
            std::thread::sleep(Duration::from_micros(500));
        }
    };
    record_for(&mut rec, 15);
    for event in 0..50 {
        rec.trigger().unwrap();
        // Past the post-trigger span, then at once the next trigger.
        record_for(&mut rec, 25);
        if event == 4 {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while live.events.load(Ordering::Relaxed) < 5 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the writer never started event 5"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            rss_after_5 = rtrec_sys::resident_bytes().unwrap();
        }
    }
    record_for(&mut rec, 25);
    let rss_after_50 = rtrec_sys::resident_bytes().unwrap();
    let s = rec.finish().unwrap();
    let f = s.flight.clone().unwrap();
    assert_eq!(f.events, 50);
    assert_eq!(s.files.len(), 50, "one file per event");
    assert_eq!(s.records_dropped, 0);
    for (i, path) in s.files.iter().enumerate() {
        let r = verify_file(path).unwrap();
        assert_eq!(r.status, FileStatus::Complete, "event {i}: {:?}", r.notes);
        assert!(
            r.gaps.is_empty(),
            "event {i}: sequence numbers are contiguous"
        );
        let t = trigger_of(path);
        assert_eq!(
            t.pre_records, PRE_RECORDS,
            "event {i}: the whole pre-trigger window"
        );
        let (first, next) = (r.first_seq.unwrap(), r.next_seq.unwrap());
        assert_eq!(
            first + PRE_RECORDS,
            t.trigger_seq,
            "event {i}: the window ends just before the trigger"
        );
        assert!(
            next > t.trigger_seq,
            "event {i}: records after the trigger are saved"
        );
        let end = r.stored.unwrap();
        assert!(
            end.post_records >= 1 && end.post_records == next - t.trigger_seq,
            "event {i}: {end:?}"
        );
    }
    let growth = rss_after_50 as f64 / rss_after_5 as f64;
    assert!(
        growth < 1.10,
        "resident memory grew from {rss_after_5} to {rss_after_50} bytes"
    );
}
