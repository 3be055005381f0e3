//! The durable mark (format version 4) on real files: the writer moves it
//! while recording (every back-end), a crash hole after it is cut and
//! counted by `recovery::cut_crash_hole` and the file then reads to the
//! cut, damage below it is left alone, and version 3 files still read.

use std::path::{Path, PathBuf};

use rtrec_engine::format::{
    decode_frame, encode_frame_header, FileHeader, FrameKind, FLAG_POOLED, FRAME_HEADER_LEN,
    HEADER_LEN, PLAIN_FORMAT_VERSION,
};
use rtrec_engine::reader::{verify_bytes, verify_file, FileStatus};
use rtrec_engine::recovery::cut_crash_hole;
use rtrec_engine::{Alloc, Config, Flush, Framing, Io, Mode, Recorder, MIB};

/// A frame of a recording: where it is, what it is, its sequence number.
struct Frame {
    start: usize,
    end: usize,
    kind: FrameKind,
    seq: u64,
}

/// A finished recording of `n` records of 300 non-zero bytes (one frame
/// each) and its frames.
fn recording(dir: &Path, n: usize) -> (Vec<u8>, Vec<Frame>) {
    let cfg = Config {
        mode: Mode::Inline,
        alloc: Alloc::Append,
        flush: Flush::None,
        framing: Framing::Framed,
        file_size: MIB,
        max_record: 1024,
        ..Config::default()
    };
    let mut rec = Recorder::create(dir, cfg).unwrap();
    for i in 0..n {
        rec.record(&[(i % 250 + 1) as u8; 300]).unwrap();
    }
    let s = rec.finish().unwrap();
    let bytes = std::fs::read(&s.files[0]).unwrap();
    std::fs::remove_file(&s.files[0]).unwrap();
    let g = FileHeader::decode(&bytes).unwrap().generation;
    let (mut frames, mut off) = (Vec::new(), HEADER_LEN);
    while off < bytes.len() {
        let (h, _) = decode_frame(&bytes[off..], g).unwrap();
        let end = off + FRAME_HEADER_LEN + h.len as usize;
        frames.push(Frame {
            start: off,
            end,
            kind: h.kind,
            seq: h.seq,
        });
        off = end;
    }
    (bytes, frames)
}

/// `bytes` as a file a power cut interrupted: no end frame, its durable
/// mark at `mark`, 8 KiB of unwritten (zero) space after its frames.
fn interrupted(bytes: &[u8], frames: &[Frame], mark: usize) -> Vec<u8> {
    let end = frames.last().unwrap();
    assert_eq!(end.kind, FrameKind::End);
    let mut b = bytes[..end.start].to_vec();
    b.resize(b.len() + 8192, 0);
    let h = FileHeader::decode(&b).unwrap().with_mark(mark as u64);
    b[..HEADER_LEN].copy_from_slice(&h.encode());
    b
}

fn write(dir: &Path, bytes: &[u8]) -> PathBuf {
    let p = dir.join("crashed-0000.rtr");
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn a_crash_hole_after_the_mark_is_unfinished_and_recover_cuts_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, frames) = recording(dir.path(), 40);
    let mark = frames[9].end;
    let mut b = interrupted(&bytes, &frames, mark);
    // One write after the mark did not land: a sector of zeros in the
    // middle of the frames written after it.
    let zeros = frames[20].start.div_ceil(512) * 512;
    b[zeros..zeros + 512].fill(0);
    let broken = frames.iter().position(|f| f.end > zeros).unwrap();
    let resumed = frames.iter().position(|f| f.start >= zeros + 512).unwrap();
    let path = write(dir.path(), &b);

    let r = verify_file(&path).unwrap();
    assert_eq!(r.status, FileStatus::Unfinished, "{:?}", r.notes);
    assert_eq!(r.records, broken as u64);
    let hole = r.crash_hole.unwrap();
    assert_eq!(hole.start, frames[broken].start as u64);
    assert_eq!(
        hole.len,
        (frames[resumed].start - frames[broken].start) as u64
    );
    // Every data frame from `resumed` to the last one before the end frame.
    let after = frames.len() - 1 - resumed;
    assert_eq!(hole.records_after, after as u64);
    assert!(
        r.notes.iter().any(|n| n.contains("crash hole")),
        "{:?}",
        r.notes
    );

    let cut = cut_crash_hole(&r).unwrap().unwrap();
    assert_eq!(cut.at, hole.start);
    assert_eq!(cut.records_cut, after as u64);
    let last_seq = frames[frames.len() - 2].seq;
    assert_eq!(
        cut.loss,
        Some((broken as u64, last_seq + 1 - broken as u64))
    );

    let r2 = verify_file(&path).unwrap();
    assert_eq!(r2.status, FileStatus::Unfinished, "{:?}", r2.notes);
    assert!(r2.crash_hole.is_none());
    assert_eq!(r2.records, broken as u64);
    assert_eq!(r2.cut_records, last_seq + 1 - broken as u64);
    assert_eq!(r2.lost_records, 0);
    assert_eq!(r2.missing_records, 0);
    let loss_end = hole.start + (FRAME_HEADER_LEN + 20) as u64;
    assert_eq!(r2.durable_mark, Some(loss_end));
    assert_eq!(r2.valid_len, loss_end);
    // Every durable record byte-exact, nothing of ours after the loss
    // frame.
    let after_cut = std::fs::read(&path).unwrap();
    assert_eq!(
        after_cut[HEADER_LEN..cut.at as usize],
        b[HEADER_LEN..cut.at as usize]
    );
    assert!(after_cut[loss_end as usize..].iter().all(|&x| x == 0));
    // A second recover has nothing to cut.
    assert!(cut_crash_hole(&r2).unwrap().is_none());
}

#[test]
fn an_earlier_lifes_frame_where_a_write_is_missing_is_a_crash_hole_too() {
    // A pool file: a write after the mark that did not land leaves the
    // earlier life's bytes, here one whole frame of another generation.
    let dir = tempfile::tempdir().unwrap();
    let (bytes, frames) = recording(dir.path(), 30);
    let mut b = interrupted(&bytes, &frames, frames[5].end);
    let g = FileHeader::decode(&b).unwrap().generation;
    let at = frames[12].start.div_ceil(512) * 512;
    let payload = [0x5au8; 512 - FRAME_HEADER_LEN];
    let mut head = [0u8; FRAME_HEADER_LEN];
    encode_frame_header(&mut head, g ^ 1, FrameKind::Data, 7, 7, 7, &payload);
    b[at..at + FRAME_HEADER_LEN].copy_from_slice(&head);
    b[at + FRAME_HEADER_LEN..at + 512].copy_from_slice(&payload);
    let r = verify_bytes(Path::new("pooled.rtr"), &b);
    assert_eq!(r.status, FileStatus::Unfinished, "{:?}", r.notes);
    let hole = r.crash_hole.unwrap();
    let broken = frames.iter().position(|f| f.end > at).unwrap();
    assert_eq!(hole.start, frames[broken].start as u64);
    assert!(
        r.notes.iter().any(|n| n.contains("earlier life")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_pool_files_earlier_life_under_a_torn_frame_is_a_crash_hole_only_after_the_mark() {
    // Issue 44: a power cut after the mark kept the sectors of a frame of
    // ours but one, which still holds the earlier life's payload (no frame
    // header of it in the torn frame); the earlier life shows further on
    // (a frame header of another generation after our data). In a pool
    // file that is a missing write; in a file that never had another life,
    // and below the mark, it stays damage.
    let dir = tempfile::tempdir().unwrap();
    let (bytes, frames) = recording(dir.path(), 30);
    // A whole sector from the first sector boundary in frame 12 (frames
    // are 340 bytes: it tears frame 12 and the one or two after it).
    let torn = frames[12].start.div_ceil(512) * 512;
    let build = |mark: usize, pooled: bool| {
        let mut b = interrupted(&bytes, &frames, mark);
        let mut h = FileHeader::decode(&b).unwrap();
        if pooled {
            h.flags |= FLAG_POOLED;
        }
        b[..HEADER_LEN].copy_from_slice(&h.encode());
        let g = h.generation;
        // The earlier life's payload bytes in one sector of frame 12 …
        b[torn..torn + 512].fill(0x5a);
        // … and one of its frame headers after our data, in the space
        // `interrupted` left.
        let at = frames.last().unwrap().start.div_ceil(512) * 512;
        let payload = [0x5au8; 1000];
        let mut head = [0u8; FRAME_HEADER_LEN];
        encode_frame_header(&mut head, g ^ 2, FrameKind::Data, 9, 9, 9, &payload);
        b[at..at + FRAME_HEADER_LEN].copy_from_slice(&head);
        b[at + FRAME_HEADER_LEN..at + FRAME_HEADER_LEN + 1000].copy_from_slice(&payload);
        b
    };
    let r = verify_bytes(Path::new("pooled.rtr"), &build(frames[5].end, true));
    assert_eq!(r.status, FileStatus::Unfinished, "{:?}", r.notes);
    let hole = r.crash_hole.expect("a crash hole");
    let broken = frames.iter().position(|f| f.end > torn).unwrap();
    assert_eq!(hole.start, frames[broken].start as u64);
    assert!(
        r.notes.iter().any(|n| n.contains("earlier life")),
        "{:?}",
        r.notes
    );
    // recover cuts it: the records before it stay, the rest is a loss.
    let path = write(dir.path(), &build(frames[5].end, true));
    let r = verify_file(&path).unwrap();
    let cut = cut_crash_hole(&r).unwrap().expect("cut");
    assert_eq!(cut.at, hole.start);
    assert_eq!(
        verify_file(&path).unwrap().status,
        FileStatus::Unfinished,
        "closed by recover's next step, not corrupt"
    );
    // Not a pool file: the same bytes are damage.
    let r = verify_bytes(Path::new("fresh.rtr"), &build(frames[5].end, false));
    assert_eq!(r.status, FileStatus::Corrupt, "{:?}", r.notes);
    // Below the mark, even in a pool file: damage.
    let r = verify_bytes(Path::new("pooled.rtr"), &build(frames[20].end, true));
    assert_eq!(r.status, FileStatus::Corrupt, "{:?}", r.notes);
    assert!(r.crash_hole.is_none());
}

#[test]
fn a_flipped_byte_below_the_mark_or_after_it_in_non_zero_data_is_corrupt_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, frames) = recording(dir.path(), 30);
    // The byte is in frame 12: below a mark after frame 20, after one
    // after frame 5 (its payload holds no zero byte).
    for mark in [frames[20].end, frames[5].end] {
        let mut b = interrupted(&bytes, &frames, mark);
        b[frames[12].start + FRAME_HEADER_LEN + 5] ^= 0x10;
        let path = write(dir.path(), &b);
        let r = verify_file(&path).unwrap();
        assert_eq!(r.status, FileStatus::Corrupt, "mark {mark}: {:?}", r.notes);
        assert!(r.crash_hole.is_none());
        // recover cuts nothing: every durable byte stays.
        assert!(cut_crash_hole(&r).unwrap().is_none());
        assert_eq!(std::fs::read(&path).unwrap(), b);
    }
}

#[test]
fn a_version_3_file_still_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let (mut bytes, frames) = recording(dir.path(), 10);
    // The same layout, version 3 (the header CRC covers the version).
    bytes[8..10].copy_from_slice(&3u16.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[0..68]);
    bytes[68..72].copy_from_slice(&crc.to_le_bytes());
    let r = verify_bytes(Path::new("v3.rtr"), &bytes);
    assert_eq!(r.status, FileStatus::Complete, "{:?}", r.notes);
    assert_eq!(r.records, 10);
    // Interrupted (version 3 has no mark: valid_len 0): unfinished, read
    // as before.
    let mut open = bytes[..frames[6].start].to_vec();
    open[48..56].fill(0);
    let crc = crc32c::crc32c(&open[0..68]);
    open[68..72].copy_from_slice(&crc.to_le_bytes());
    let r = verify_bytes(Path::new("v3.rtr"), &open);
    assert_eq!(r.status, FileStatus::Unfinished, "{:?}", r.notes);
    assert_eq!((r.records, r.durable_mark), (6, None));
    assert_eq!(PLAIN_FORMAT_VERSION, 4);
}

#[test]
fn the_mark_advances_while_recording_with_every_back_end() {
    for io in [Io::Buffered, Io::Direct, Io::Uring, Io::UringBuffered] {
        let dir = tempfile::tempdir().unwrap();
        let test = "the_mark_advances_while_recording_with_every_back_end";
        if !rtrec_host::features::require_io(test, io.name(), dir.path()) {
            continue;
        }
        let cfg = Config {
            mode: Mode::Ring,
            io,
            alloc: Alloc::Zero,
            framing: Framing::Framed,
            file_size: 4 * MIB,
            sync_every_ns: 2_000_000,
            ..Config::default()
        };
        let mut rec = Recorder::create(dir.path(), cfg).unwrap();
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "rtr"))
            .unwrap();
        // Record until a sync has moved the mark (O_DIRECT: past the
        // first 4 KiB) and a later one moved it again (O_DIRECT: the first
        // block rewritten from the copy read at the first mark); bounded,
        // so a mark that never moves fails.
        let mut seen: Vec<(u64, Vec<u8>)> = Vec::new();
        for i in 0..40_000u32 {
            rec.record(&[(i % 250 + 1) as u8; 1000]).unwrap();
            std::thread::sleep(std::time::Duration::from_micros(200));
            let b = std::fs::read(&file).unwrap();
            // A read may meet the header while it is rewritten: next turn.
            let Ok(h) = FileHeader::decode(&b) else {
                continue;
            };
            assert!(h.is_open(), "{io}: the header of a live recording is open");
            if h.valid_len > 4096 && seen.last().is_none_or(|(m, _)| h.valid_len > *m) {
                seen.push((h.valid_len, b));
                if seen.len() == 2 {
                    break;
                }
            }
        }
        assert_eq!(seen.len(), 2, "{io}: the durable mark did not move twice");
        for (mark, b) in seen {
            assert!(mark <= b.len() as u64);
            // The frames up to the mark are intact and chained, and it ends one.
            let r = verify_bytes(&file, &b);
            assert_ne!(r.status, FileStatus::Corrupt, "{io}: {:?}", r.notes);
            assert_eq!(r.durable_mark, Some(mark));
            assert!(r.valid_len >= mark, "{io}");
        }
        let s = rec.finish().unwrap();
        let h = FileHeader::decode(&std::fs::read(&s.files[0]).unwrap()).unwrap();
        assert!(!h.is_open(), "{io}: the final header clears the mark");
        assert_eq!(
            verify_file(&s.files[0]).unwrap().status,
            FileStatus::Complete
        );
    }
}
