//! `rtrec export -o OUT`: the format from OUT's extension, `.gz` and
//! `.zst` compression that decompresses to the plain export, a name that
//! contradicts `--format` refused, and OUT written whole or not at all:
//! an existing OUT is refused unless `--force`, and a failed export
//! leaves the old OUT as it was and no temporary file.

// The table exports and `info` (feature `tables`).
#![cfg(feature = "tables")]

use std::io::Read;
use std::path::Path;

mod common;
use common::samples::{record_stdin, recording_with_a_loss};
use common::{rtrec, show};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `rtrec export ARGS`, which must succeed; its output file's bytes.
fn exported(args: &[&str], out: &Path) -> Vec<u8> {
    let o = rtrec(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", show(&o));
    std::fs::read(out).unwrap()
}

/// The names in `dir`, hidden ones included, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn the_extension_names_the_format_and_gz_or_zst_compress_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let input: Vec<u8> = (0..10_000u32).map(|i| (i % 241) as u8).collect();
    record_stdin(&dir, &input);
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let at = |n: &str| out.join(n);

    let csv = exported(&["export", s(&dir), "-o", s(&at("a.csv"))], &at("a.csv"));
    let csv_text = String::from_utf8(csv.clone()).unwrap();
    assert!(csv_text.starts_with("kind,seq,wall_time,"), "{csv_text}");
    assert_eq!(csv_text.lines().count(), 1 + 3);
    let jsonl = exported(
        &["export", s(&dir), "-o", s(&at("a.jsonl"))],
        &at("a.jsonl"),
    );
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&jsonl).lines().next().unwrap()).unwrap();
    assert_eq!(
        (&first["kind"], &first["seq"]),
        (&"record".into(), &0.into())
    );
    let mcap = exported(&["export", s(&dir), "-o", s(&at("a.mcap"))], &at("a.mcap"));
    assert_eq!(&mcap[..8], b"\x89MCAP0\r\n");
    // Arrow IPC: the file format's magic at both ends, the stream's
    // continuation marker first (feature `arrow`).
    if cfg!(feature = "arrow") {
        for name in ["a.arrow", "a.feather"] {
            let f = exported(&["export", s(&dir), "-o", s(&at(name))], &at(name));
            assert!(
                f.starts_with(b"ARROW1\0\0") && f.ends_with(b"ARROW1"),
                "{name}"
            );
        }
        let st = exported(
            &["export", s(&dir), "-o", s(&at("a.arrows"))],
            &at("a.arrows"),
        );
        assert!(st.starts_with(&[0xff; 4]) && !st.ends_with(b"ARROW1"));
    }
    let raw = exported(&["export", s(&dir), "-o", s(&at("a.bin"))], &at("a.bin"));
    assert_eq!(raw, input);
    let other = exported(&["export", s(&dir), "-o", s(&at("a.dat"))], &at("a.dat"));
    assert_eq!(other, input, "a name that says nothing is raw, as before");
    // .rtr: a framed copy, which verify accepts.
    exported(&["export", s(&dir), "-o", s(&at("a.rtr"))], &at("a.rtr"));
    let o = rtrec(&["verify", s(&at("a.rtr"))]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));

    // Compressed: the same bytes once decompressed.
    let gz = exported(
        &["export", s(&dir), "-o", s(&at("b.csv.gz"))],
        &at("b.csv.gz"),
    );
    let mut back = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut back)
        .unwrap();
    assert_eq!(back, csv);
    let zst = exported(
        &["export", s(&dir), "-o", s(&at("b.raw.zst"))],
        &at("b.raw.zst"),
    );
    assert_eq!(zstd::decode_all(&zst[..]).unwrap(), input);
    let zst = exported(
        &[
            "export",
            s(&dir),
            "--format",
            "jsonl",
            "-o",
            s(&at("c.zst")),
        ],
        &at("c.zst"),
    );
    assert_eq!(zstd::decode_all(&zst[..]).unwrap(), jsonl);
    assert!(
        !names(&out).iter().any(|n| n.starts_with('.')),
        "{:?}",
        names(&out)
    );
}

#[test]
fn a_name_that_contradicts_the_format_is_one_sentence_and_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    record_stdin(&dir, b"twelve bytes");
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for (name, flags, says) in [
        (
            "x.jsonl",
            &["--format", "csv"][..],
            "names --format jsonl but --format csv was given",
        ),
        (
            "x.csv",
            &["--raw"][..],
            "names --format csv but --format raw was given",
        ),
        ("x.npy", &[][..], "NumPy's .npy, which rtrec does not write"),
        ("x.mcap.zst", &[][..], "MCAP compresses its own chunks"),
        ("x.rtr.gz", &[][..], "a framed copy stays uncompressed"),
        ("x.arrow.gz", &[][..], "Arrow IPC stays uncompressed"),
        (
            "x.arrows",
            &["--format", "csv"][..],
            "names --format arrow-stream but --format csv was given",
        ),
    ] {
        let o_path = out.join(name);
        let mut args = vec!["export", s(&dir), "-o", s(&o_path)];
        args.extend_from_slice(flags);
        let o = rtrec(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{}", show(&o));
        assert!(err.contains(says), "{args:?}: {}", show(&o));
        assert!(names(&out).is_empty(), "{args:?} left {:?}", names(&out));
    }
}

#[test]
fn an_existing_output_is_kept_unless_force_and_a_failed_export_keeps_it_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    recording_with_a_loss(&dir).finish().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let csv = out.join("run.csv");
    std::fs::write(&csv, b"an earlier export\n").unwrap();
    let base = ["export", "--allow-gaps", s(&dir), "-o", s(&csv)];

    let o = rtrec(&base);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.trim().ends_with("exists: --force replaces it"), "{err}");
    assert_eq!(std::fs::read(&csv).unwrap(), b"an earlier export\n");

    // A layout that does not fit fails on the first record: the old file
    // stays as it was, and no temporary file is left.
    let mut bad = base.to_vec();
    bad.extend_from_slice(&["--force", "--layout", "a:u64,b:u64"]);
    let o = rtrec(&bad);
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(std::fs::read(&csv).unwrap(), b"an earlier export\n");
    assert_eq!(names(&out), ["run.csv"]);

    let mut force = base.to_vec();
    force.push("--force");
    let text = String::from_utf8(exported(&force, &csv)).unwrap();
    assert!(text.starts_with("kind,seq,"), "{text}");
    // 9 records and the gap of seq 3.
    assert_eq!(text.lines().count(), 1 + 10);
    assert_eq!(names(&out), ["run.csv"]);
}
