//! The layout lives in the recording (issue 45, Deliver 2): `rtrec record
//! --layout` stores it in every file (format version 6, a layout frame
//! first), and `export` (CSV, JSON lines, Parquet, MCAP, numpy), `info`
//! and `ls --json` use it without being told again, to the byte what the
//! same `--layout` at export time gives; `--layout` overrides it and says
//! so; a record of another size is recorded and counted at record time; a
//! bad layout is one sentence and exit 2; a recording without a layout is
//! written as before (version 4, no layout anywhere).

use std::path::Path;
use std::process::Output;

mod common;
use common::{rtrec, rtrec_stdin, show};

const LAYOUT: &str = "t:u32,x:f32,y:f32";

/// `n` records `<Iff`: `i`, `i / 2`, `-i / 4`.
fn records(n: u32) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let mut r = i.to_le_bytes().to_vec();
            r.extend_from_slice(&(i as f32 * 0.5).to_le_bytes());
            r.extend_from_slice(&(i as f32 * -0.25).to_le_bytes());
            r
        })
        .collect()
}

/// `rtrec record --stdin ARGS --dir DIR` of `input`, which must succeed.
fn record(dir: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut all = vec!["record", "--stdin", "--dir", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = rtrec_stdin(&all, input);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    o
}

/// `rtrec export DIR --format F EXTRA -o OUT`, which must succeed; the
/// output's bytes and stderr.
fn export(dir: &Path, format: &str, extra: &[&str], out: &Path) -> (Vec<u8>, String) {
    let mut args = vec!["export", dir.to_str().unwrap(), "--format", format];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", out.to_str().unwrap(), "--force"]);
    let o = rtrec(&args);
    assert_eq!(o.status.code(), Some(0), "{format}: {}", show(&o));
    (
        std::fs::read(out).unwrap(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// The format versions of the `.rtr` files in `dir`, in name order
/// (the recording's files, as `ls` reads them).
fn versions(dir: &Path) -> Vec<u16> {
    let files = rtrec_engine::reader::recording_files(dir).unwrap();
    files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rtr"))
        .map(|p| {
            let b = std::fs::read(p).unwrap();
            u16::from_le_bytes([b[8], b[9]])
        })
        .collect()
}

#[test]
fn a_recording_with_a_layout_exports_without_the_flag_as_with_it_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    // Several files, each of which must carry the layout.
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    record(
        &dir,
        &[
            "--layout",
            LAYOUT,
            "--file-size",
            "64KiB",
            "--framing",
            "framed",
            "--quiet",
        ],
        &records(3000),
    );
    let v = versions(&dir);
    assert!(v.len() > 1 && v.iter().all(|&v| v == 6), "{v:?}");
    let verify = rtrec(&["verify", dir.to_str().unwrap()]);
    assert_eq!(verify.status.code(), Some(0), "{}", show(&verify));

    for (format, ext) in [
        ("csv", "csv"),
        ("jsonl", "jsonl"),
        ("parquet", "parquet"),
        ("mcap", "mcap"),
        ("numpy", "npr"),
        ("arrow", "arrow"),
        ("arrow-stream", "arrows"),
    ]
    .into_iter()
    .filter(|(f, _)| cfg!(feature = "arrow") || !f.starts_with("arrow"))
    {
        let out = tmp.path().join(format!("out.{ext}"));
        let (stored, err) = export(&dir, format, &[], &out);
        assert!(!err.contains("overrides"), "{format}: {err}");
        let (given, _) = export(&dir, format, &["--layout", LAYOUT], &out);
        assert!(
            stored == given,
            "{format}: the stored layout exports otherwise than --layout"
        );
    }
    let out = tmp.path().join("out.csv");
    let (csv, _) = export(&dir, "csv", &[], &out);
    let csv = String::from_utf8(csv).unwrap();
    assert!(
        csv.starts_with("kind,seq,wall_time,mono_ns,exact,len,t,x,y,"),
        "{csv:.80}"
    );
    assert!(
        csv.lines().nth(4).unwrap().contains(",3,1.5,-0.75,"),
        "{csv:.400}"
    );

    // --layout overrides it, and says so in one line; `none` asks for the bytes.
    let (_, err) = export(&dir, "csv", &["--layout", "<Iff"], &out);
    assert!(
        err.contains("--layout '<Iff' overrides the recording's own layout 't:u32,x:f32,y:f32'"),
        "{err}"
    );
    let (csv, _) = export(&dir, "csv", &["--layout", "none"], &out);
    assert!(String::from_utf8(csv).unwrap().contains(",len,payload,"));

    // ls --json and info say it.
    let ls = rtrec(&["ls", "--json", dir.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
    assert_eq!(doc["recordings"][0]["layout"], LAYOUT, "{}", show(&ls));
    let info = rtrec(&["info", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(
        text.contains("layout       t:u32,x:f32,y:f32 (12 B a record; every record fits it)"),
        "{text}"
    );
}

#[test]
fn a_record_of_another_size_is_recorded_and_counted_at_record_time() {
    let tmp = tempfile::tempdir().unwrap();
    let mut input = records(8);
    input.extend_from_slice(&[1, 2, 3, 4]);
    let d = tmp.path().join("d");
    std::fs::create_dir(&d).unwrap();
    let json = tmp.path().join("summary.json");
    let o = record(
        &d,
        &["--layout", "<Iff", "--json", json.to_str().unwrap()],
        &input,
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["records_written"], 9, "{}", show(&o));
    assert_eq!(doc["layout_misfits"], 1, "{}", show(&o));
    assert_eq!(doc["config"]["layout"], "f0:u32,f1:f32,f2:f32");
    assert!(
        show(&o).contains("1 record(s) of another size, recorded as they came"),
        "{}",
        show(&o)
    );
    // Never dropped: the bytes are all there, and the export by the
    // layout refuses the short record in its sentence.
    let raw = rtrec(&["export", d.to_str().unwrap(), "-o", "-"]);
    assert_eq!(raw.stdout, input);
    let csv = rtrec(&["export", d.to_str().unwrap(), "--format", "csv", "-o", "-"]);
    assert_eq!(csv.status.code(), Some(2), "{}", show(&csv));
    assert!(String::from_utf8_lossy(&csv.stderr)
        .contains("record 8 is 4 bytes, but the layout 'f0:u32,f1:f32,f2:f32' is 12 bytes"));
}

#[test]
fn a_bad_layout_is_one_sentence_and_exit_2_and_records_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    for (args, says) in [
        (
            vec!["--layout", "t:u33"],
            "--layout: layout 't:u33': 'u33' is not a type",
        ),
        (
            vec!["--layout", "t:u32", "--size", "8B"],
            "--size 8B is not the size of the layout 't:u32' (4 bytes)",
        ),
        (
            vec!["--layout", "t:u32", "--framing", "raw"],
            "a layout is stored in the recording's frames: it needs framed or packed files",
        ),
        (vec!["--layout", "@I"], "native alignment"),
    ] {
        let mut all = vec!["record", "--stdin", "--dir", d];
        all.extend_from_slice(&args);
        let o = rtrec_stdin(&all, b"");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(versions(tmp.path()).is_empty());
}

#[test]
fn a_recording_without_a_layout_is_written_and_read_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    record(tmp.path(), &["--size", "12B", "--quiet"], &records(10));
    assert_eq!(versions(tmp.path()), [4]);
    let ls = rtrec(&["ls", "--json", tmp.path().to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
    assert!(
        doc["recordings"][0].get("layout").is_none(),
        "{}",
        show(&ls)
    );
    let csv = rtrec(&[
        "export",
        tmp.path().to_str().unwrap(),
        "--format",
        "csv",
        "-o",
        "-",
    ]);
    assert!(String::from_utf8_lossy(&csv.stdout).contains(",len,payload,"));
    let info = rtrec(&["info", tmp.path().to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("layout       -\n"));
}

/// A power cut before a layout recording's first sync can leave its first
/// file's header on storage without the layout frame after it (and so
/// without any record: the frame comes first). `recover` cannot know the
/// layout (no file before it holds one); it closes the file as one
/// without a layout, and `verify` finds it clean (it was corrupt after
/// recover: the header claimed a layout frame the file did not hold).
#[test]
fn a_first_file_cut_before_its_layout_frame_was_durable_is_recovered_clean() {
    use rtrec_engine::format::{FileHeader, FLAG_OPEN, HEADER_LEN};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    record(&dir, &["--size", "12B", "--layout", LAYOUT], &records(50));
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "rtr"))
        .unwrap();
    // The state the cut leaves: the first header (OPEN, durable mark at
    // the header's end), nothing durable after it.
    let mut b = std::fs::read(&file).unwrap();
    let h = FileHeader::decode(&b[..HEADER_LEN]).unwrap();
    assert!(h.has_layout());
    let cut = FileHeader {
        flags: h.flags | FLAG_OPEN,
        valid_len: HEADER_LEN as u64,
        ..h
    };
    b[..HEADER_LEN].copy_from_slice(&cut.encode());
    b[HEADER_LEN..].fill(0);
    std::fs::write(&file, &b).unwrap();
    let o = rtrec(&["recover", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let o = rtrec(&["verify", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(versions(&dir), [4], "closed as a file without a layout");
}
