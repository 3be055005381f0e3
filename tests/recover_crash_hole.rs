//! `rtrec recover` after a power cut, from the command line: a crash hole
//! after the durable mark is cut and counted, the recording is closed
//! ("interrupted, closed by recover": `verify` exits 0) and `export DIR`
//! reads every record before the cut without a flag; a file damaged below its mark is left byte for byte; a hidden
//! `.NAME.tmp` a crash left between two renames is named by `verify` and
//! removed by `recover` (it holds no record, header or not).

mod common;
use common::{rtrec, show};

use std::path::{Path, PathBuf};

use rtrec_engine::format::{decode_frame, FileHeader, FrameKind, FRAME_HEADER_LEN, HEADER_LEN};

/// Records `n` records of 200 bytes (record `i` all `i + 1`) into `dir`
/// with per-record frames, and returns the file, its bytes and the
/// frames' (start, end).
fn record(dir: &Path, n: usize) -> (PathBuf, Vec<u8>, Vec<(usize, usize)>) {
    let data: Vec<u8> = (0..n).flat_map(|i| vec![(i + 1) as u8; 200]).collect();
    let src = dir.join("src.bin");
    std::fs::write(&src, &data).unwrap();
    let rec = dir.join("rec");
    std::fs::create_dir(&rec).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--stdin", "--size", "200B", "--framing", "framed"])
        .args(["--alloc", "append", "--dir"])
        .arg(&rec)
        .stdin(std::fs::File::open(&src).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let file = std::fs::read_dir(&rec)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "rtr"))
        .unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let g = FileHeader::decode(&bytes).unwrap().generation;
    let (mut frames, mut off) = (Vec::new(), HEADER_LEN);
    while off < bytes.len() {
        let (h, _) = decode_frame(&bytes[off..], g).unwrap();
        let end = off + FRAME_HEADER_LEN + h.len as usize;
        if h.kind == FrameKind::End {
            break;
        }
        frames.push((off, end));
        off = end;
    }
    assert_eq!(frames.len(), n);
    (file, bytes, frames)
}

/// The recording as a power cut left it: no end frame, the durable mark
/// after frame `mark`, zeros after the frames.
fn interrupted(bytes: &[u8], frames: &[(usize, usize)], mark: usize) -> Vec<u8> {
    let mut b = bytes[..frames.last().unwrap().1].to_vec();
    b.resize(b.len() + 4096, 0);
    let h = FileHeader::decode(&b)
        .unwrap()
        .with_mark(frames[mark].1 as u64);
    b[..HEADER_LEN].copy_from_slice(&h.encode());
    b
}

fn text(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn recover_cuts_a_crash_hole_and_export_then_reads_every_record_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (file, bytes, frames) = record(tmp.path(), 40);
    let mut b = interrupted(&bytes, &frames, 9);
    let zeros = frames[25].0.div_ceil(512) * 512;
    b[zeros..zeros + 512].fill(0);
    let kept = frames.iter().take_while(|f| f.1 <= zeros).count();
    std::fs::write(&file, &b).unwrap();
    let dir = file.parent().unwrap().to_str().unwrap();

    let o = rtrec(&["verify", dir]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o).contains("UNFINISHED"), "{}", show(&o));
    assert!(text(&o).contains("crash hole"), "{}", show(&o));

    let o = rtrec(&["recover", dir]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o).contains("cut a crash hole"), "{}", show(&o));

    let o = rtrec(&["verify", "--json", dir]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["files"][0];
    assert_eq!(f["status"], "interrupted", "{}", show(&o));
    let reason = f["stored"]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("durable_seq=10 cut_records={}", 40 - kept)),
        "{reason}"
    );
    assert_eq!(f["records"], kept as u64);
    assert_eq!(f["cut_records"], (40 - kept) as u64);
    assert!(f.get("crash_hole").is_none());

    let out = tmp.path().join("out.bin");
    let o = rtrec(&["export", dir, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let want: Vec<u8> = (0..kept).flat_map(|i| vec![(i + 1) as u8; 200]).collect();
    assert_eq!(std::fs::read(&out).unwrap(), want);
}

#[test]
fn recover_leaves_a_file_damaged_below_its_mark_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let (file, bytes, frames) = record(tmp.path(), 30);
    let mut b = interrupted(&bytes, &frames, 20);
    b[frames[10].0 + FRAME_HEADER_LEN + 3] ^= 0x40;
    std::fs::write(&file, &b).unwrap();
    let dir = file.parent().unwrap().to_str().unwrap();
    let o = rtrec(&["recover", dir]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o).contains("left alone"), "{}", show(&o));
    assert_eq!(std::fs::read(&file).unwrap(), b);
    let o = rtrec(&["verify", dir]);
    assert!(text(&o).contains("CORRUPT"), "{}", show(&o));
}

#[test]
fn verify_names_a_temporary_file_a_crash_left_and_recover_removes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (file, bytes, _) = record(tmp.path(), 3);
    let rec = file.parent().unwrap();
    // A preparation caught between its header and its rename, and one
    // caught before its header.
    let headed = rec.join(".rec-x-0001.rtr.tmp");
    std::fs::write(&headed, &bytes[..HEADER_LEN]).unwrap();
    let headless = rec.join(".rec-y-0000.rtr.tmp");
    std::fs::write(&headless, vec![0u8; 4096]).unwrap();
    let dir = rec.to_str().unwrap();
    let o = rtrec(&["verify", dir]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(
        text(&o).contains("A TEMPORARY RECORDING FILE"),
        "{}",
        show(&o)
    );

    // Both removed: a file is written only once its name appeared, so
    // neither holds a record (a header alone is no data); nothing is moved
    // into place as a lone file verify would call incomplete.
    let o = rtrec(&["recover", dir]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    for p in [&headed, &headless] {
        assert!(
            text(&o).contains(&format!("removed '{}'", p.display())),
            "{}",
            show(&o)
        );
        assert!(!p.exists());
    }
    let names: Vec<PathBuf> = std::fs::read_dir(rec)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(names, std::slice::from_ref(&file), "{}", show(&o));
    let o = rtrec(&["verify", dir]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
}
