//! `rtrec export` of a whole recording: a directory or its files in any
//! order come back as one raw stream equal to the input (raw is the
//! default); a missing file in the middle, files of two recordings named
//! one by one and `--framed` over several files are refused in one
//! sentence, and nothing is written; a directory of two recordings exports
//! the newest; `--allow-gaps` exports around the hole and names it; idle
//! pool slots among the inputs are skipped.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::samples::record_stdin as record;
use common::{rtrec, show};

/// Files in `dir` ending in `ext`, in name order.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// Bytes that do not repeat (xorshift64*), so a reordered file shows.
fn noise(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The last line of stderr, which must be the only one (one sentence).
fn one_sentence(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).trim().to_string();
    assert_eq!(err.lines().count(), 1, "{}", show(o));
    err
}

/// A temporary directory with `len` bytes of noise recorded into `DIR/d`:
/// the directory, the recording directory and the input.
fn recorded(len: usize) -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let input = noise(len);
    record(&dir, &input);
    (tmp, dir, input)
}

#[test]
fn a_directory_or_its_files_in_any_order_export_as_one_raw_stream_equal_to_the_input() {
    let (tmp, dir, input) = recorded(300_000);
    let recs = files(&dir, "rtr");
    assert!(recs.len() >= 4, "{recs:?}");

    let out = tmp.path().join("out.bin");
    let o = rtrec(&["export", s(&dir), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        std::fs::read(&out).unwrap() == input,
        "raw export of the directory differs"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("from {} files", recs.len())));

    // The files named in reverse order, with the pool's idle slots among
    // them, to stdout: the same bytes; the slots are skipped and said so.
    let slots = files(&dir.join(".pool"), "rtp");
    assert!(!slots.is_empty(), "the pool kept no idle slot to test with");
    let mut args = vec!["export".to_string(), "-o".into(), "-".into()];
    args.extend(recs.iter().rev().map(|p| s(p).to_string()));
    args.extend(slots.iter().map(|p| s(p).to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rtrec(&args);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        o.stdout == input,
        "files named out of order came back out of order"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains(&format!("skipped {} idle pool slot(s)", slots.len())),
        "{}",
        show(&o)
    );
}

#[test]
fn a_missing_file_in_the_middle_is_refused_unless_allow_gaps_which_names_it() {
    let (tmp, dir, input) = recorded(300_000);
    let recs = files(&dir, "rtr");
    let gone = std::fs::read(&recs[2]).unwrap();
    std::fs::remove_file(&recs[2]).unwrap();

    let out = tmp.path().join("out.bin");
    let o = rtrec(&["export", s(&dir), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = one_sentence(&o);
    assert!(
        err.contains("file 2 of the recording is missing") && err.contains("--allow-gaps"),
        "{err}"
    );
    assert!(!out.exists(), "a refused export wrote a file");

    let o = rtrec(&["export", "--allow-gaps", s(&dir), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("file 2 of the recording is missing"));
    // What is left is the input without file 2's records: the export of
    // files 0-1 followed by that of files 3 on.
    let back = std::fs::read(&out).unwrap();
    assert!(back.len() < input.len() && back.len() + gone.len() > input.len());
    assert!(input.starts_with(&back[..back.len() / 4]));
    assert!(input.ends_with(&back[back.len() - back.len() / 4..]));
}

#[test]
fn files_of_two_recordings_and_framed_over_several_files_are_refused_in_one_sentence() {
    let (tmp, dir, input) = recorded(200_000);
    let first = files(&dir, "rtr");

    let out = tmp.path().join("out.rtr");
    let o = rtrec(&["export", "--framed", s(&dir), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(one_sentence(&o).contains("--framed exports one file"));
    // One file framed: verify reads the copy's records as it reads the
    // original's (file 0 of a longer recording). The copy is marked as
    // one (header flag COPY): one file taken out on purpose, so the files
    // after it are not missing, while the original alone lost its next.
    let o = rtrec(&["export", "--framed", s(&first[0]), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let verdict = |p: &Path| {
        let o = rtrec(&["verify", "--json", s(p)]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let f = &v["files"][0];
        (
            f["status"].clone(),
            f["records"].clone(),
            f["next_seq"].clone(),
        )
    };
    let (copy, original) = (verdict(&out), verdict(&first[0]));
    assert_eq!((&copy.1, &copy.2), (&original.1, &original.2));
    assert_eq!(
        (copy.0.as_str(), original.0.as_str()),
        (Some("complete"), Some("unfinished"))
    );
    assert!(copy.1.as_u64().unwrap() > 0, "{copy:?}");

    // A second recording: the directory exports the newest and says so;
    // files of both named one by one are refused (they were meant
    // together, and cannot be).
    std::thread::sleep(std::time::Duration::from_millis(20));
    record(&dir, &input);
    let o = rtrec(&["export", s(&dir), "-o", s(&tmp.path().join("newest"))]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("hold 2 recordings; exporting the newest"));
    assert!(std::fs::read(tmp.path().join("newest")).unwrap() == input);
    let mut args = vec![
        "export".to_string(),
        "-o".into(),
        s(&tmp.path().join("both")).into(),
    ];
    args.extend(files(&dir, "rtr").iter().map(|p| s(p).to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rtrec(&args);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(one_sentence(&o).contains("belong to 2 different recordings"));
    assert!(!tmp.path().join("both").exists());
}
