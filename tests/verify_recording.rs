//! `rtrec verify DIR` judges whole recordings, not only each file: a
//! recording that continues into a file that is not there has lost data,
//! however intact each remaining file is. A kill while the recorder moves
//! on to its next file leaves exactly that (the previous file closed and
//! marked "continued", the next one not yet named); so does a lost file.

mod common;
use common::{rtrec, show};

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// A clean recording of 600 records of 4 KiB in files of 1 MiB (about 250
/// records each), and its files in order.
fn multi_file_recording() -> (tempfile::TempDir, PathBuf, Vec<PathBuf>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let args = [
        "record", "--quiet", "--period", "100us", "--size", "4KiB", "--count", "600",
    ];
    let o = rtrec(&[&args[..], &["--file-size", "1MiB", "--dir", d]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rtr"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    let (o, v) = verify(&dir);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the intact recording is clean\n{}",
        show(&o)
    );
    assert_eq!(v["records"], 600);
    (tmp, dir, files)
}

fn verify(dir: &Path) -> (Output, Value) {
    let o = rtrec(&["verify", "--json", dir.to_str().unwrap()]);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&o)));
    (o, v)
}

fn assert_not_clean(dir: &Path, what: &str) {
    let (o, v) = verify(dir);
    assert_eq!(
        v["clean"], false,
        "{what}: verify calls the recording clean\n{v:#}"
    );
    assert_eq!(o.status.code(), Some(1), "{what}\n{}", show(&o));
}

#[test]
fn a_recording_whose_last_file_continues_into_a_missing_file_is_not_clean() {
    let (_tmp, dir, files) = multi_file_recording();
    std::fs::remove_file(files.last().unwrap()).unwrap();
    assert_not_clean(&dir, "the last file is missing");
}

#[test]
fn a_recording_with_a_file_missing_in_the_middle_is_not_clean() {
    let (_tmp, dir, files) = multi_file_recording();
    std::fs::remove_file(&files[1]).unwrap();
    assert_not_clean(&dir, "file 1 is missing");
}

#[test]
fn a_recording_without_its_first_file_is_not_clean() {
    let (_tmp, dir, files) = multi_file_recording();
    std::fs::remove_file(&files[0]).unwrap();
    assert_not_clean(&dir, "file 0 is missing");
}
