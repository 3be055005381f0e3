//! A corpus of recording directories, whole and damaged, made by the real
//! binary (and the library for a stored loss), for every reader of
//! recordings to agree on: `tests/corpus.rs` holds `ls`, `verify`,
//! `events`, `export` (every format) and the Python package to the same
//! state, record and loss counts and gaps on each entry. Reusable: a later
//! reader (shipping recordings off the device) takes the same corpus.
//!
//! Each entry is a directory and what was offered to it (`offered`: the
//! records its recorder was given, when known), never what a reader said:
//! the test asks every reader and compares them with each other and with
//! `offered` (records + lost = offered wherever the losses can be counted).
//!
//! Design choice: the damage is done the way it happens — a file removed,
//! replaced or copied, a recorder killed, bytes appended where a write was
//! cut — with the binary's own commands and plain file operations, never
//! by writing frames by hand, so the corpus follows the format as it
//! changes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::samples::recording_with_a_loss;
use super::{rtrec, rtrec_stdin, show};

/// Records of a multi-file recording: 12-byte lines, in files of 1 MiB
/// (four files).
pub const LINES: u64 = 300_000;

/// One directory of the corpus.
pub struct Entry {
    /// What it is (`missing-first`, `torn-tail`, ...).
    pub name: &'static str,
    /// The directory.
    pub dir: PathBuf,
    /// Records its recorder was offered, when the whole count is known
    /// (a killed recorder's is not).
    pub offered: Option<u64>,
    /// A recorder still writing it: stop it with [`Entry::stop`].
    pub live: Option<Child>,
}

impl Entry {
    /// Ends a live recorder (SIGKILL: it is not ours to finish).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.live.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `LINES` lines of 11 digits and a newline, recorded as 12-byte records.
fn lines(n: u64) -> Vec<u8> {
    (0..n)
        .flat_map(|i| format!("{i:011}\n").into_bytes())
        .collect()
}

/// A new directory `root/name`.
fn dir(root: &Path, name: &str) -> PathBuf {
    let d = root.join(name);
    std::fs::create_dir(&d).unwrap();
    d
}

/// Records `n` 12-byte records from stdin into `d`, files of 1 MiB, with
/// `extra` flags.
fn record_lines(d: &Path, n: u64, extra: &[&str]) {
    let mut args = vec!["record", "--stdin", "--size", "12B", "--file-size", "1MiB"];
    args.extend(extra);
    args.extend(["--quiet", "--dir", d.to_str().unwrap()]);
    let o = rtrec_stdin(&args, &lines(n));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
}

/// The recording files of `d`, by name.
pub fn files(d: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rtr"))
        .collect();
    v.sort();
    v
}

/// A recorder of 12-byte records from stdin into `d`, fed `n` records and
/// left running (its stdin open) until they are all on storage as
/// `rtrec verify` reads them.
// The child is returned: its owner (`Entry::stop`, `Drop`) kills and
// waits on it; a panic while feeding it ends the test process with it.
#[allow(clippy::zombie_processes)]
fn live_recorder(d: &Path, n: u64) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--stdin", "--size", "12B", "--file-size", "1MiB"])
        .args(["--quiet", "--dir"])
        .arg(d)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&lines(n)).unwrap();
    stdin.flush().unwrap();
    // Kept open in a thread that never writes again: the recorder waits.
    std::thread::spawn(move || {
        let _keep = stdin;
        std::thread::sleep(Duration::from_secs(3600));
    });
    let start = Instant::now();
    loop {
        let o = rtrec(&["verify", "--json", d.to_str().unwrap()]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        if v["records"].as_u64() == Some(n) {
            return child;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the recorder never stored its {n} records: {}", show(&o));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Builds the corpus under `root`.
pub fn build(root: &Path) -> Vec<Entry> {
    let entry = |name, dir, offered| Entry {
        name,
        dir,
        offered,
        live: None,
    };
    let mut v = Vec::new();

    let d = dir(root, "complete");
    record_lines(&d, LINES, &[]);
    v.push(entry("complete", d, Some(LINES)));

    for (name, which) in [
        ("missing-first", 0usize),
        ("missing-middle", 1),
        ("missing-last", 3),
    ] {
        let d = dir(root, name);
        record_lines(&d, LINES, &[]);
        let f = files(&d);
        assert_eq!(f.len(), 4, "{f:?}");
        std::fs::remove_file(&f[which]).unwrap();
        v.push(entry(name, d, Some(LINES)));
    }

    // File 1 replaced by a foreign file of the same name.
    let d = dir(root, "foreign-file");
    record_lines(&d, LINES, &[]);
    std::fs::write(&files(&d)[1], b"not a recording at all\n").unwrap();
    v.push(entry("foreign-file", d, Some(LINES)));

    // A plain copy of file 1 beside it: two files claim its place.
    let d = dir(root, "duplicate-file");
    record_lines(&d, LINES, &[]);
    std::fs::copy(&files(&d)[1], d.join("zz-copy-of-1.rtr")).unwrap();
    v.push(entry("duplicate-file", d, Some(LINES)));

    // `export --framed` of file 1 into the recording's own directory.
    let d = dir(root, "framed-copy");
    record_lines(&d, LINES, &[]);
    let one = files(&d)[1].clone();
    let o = rtrec(&[
        "export",
        "--framed",
        one.to_str().unwrap(),
        "-o",
        d.join("copy.rtr").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    v.push(entry("framed-copy", d, Some(LINES)));

    let d = dir(root, "two-recordings");
    record_lines(&d, 1000, &[]);
    std::thread::sleep(Duration::from_millis(20));
    record_lines(&d, 2000, &[]);
    v.push(entry("two-recordings", d, None));

    // stdin ends after 5 of 10 records: aborted.
    let d = dir(root, "aborted");
    let args = [
        "record",
        "--stdin",
        "--size",
        "16B",
        "--count",
        "10",
        "--quiet",
        "--dir",
        d.to_str().unwrap(),
    ];
    let o = rtrec_stdin(&args, &[b'a'; 5 * 16]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    v.push(entry("aborted", d, Some(5)));

    // A stored loss (a record too large), through the library.
    let d = dir(root, "stored-loss");
    recording_with_a_loss(&d).finish().unwrap();
    v.push(entry("stored-loss", d, Some(10)));

    // A loop recording (--keep) whose first files were retired.
    let d = dir(root, "retired");
    record_lines(&d, LINES * 2, &["--keep", "3MiB"]);
    v.push(entry("retired", d, None));

    // Killed while recording: unfinished; then a torn tail after its
    // frames; and one closed by recover.
    for name in ["interrupted", "torn-tail", "recovered"] {
        let d = dir(root, name);
        let mut child = live_recorder(&d, 50_000);
        child.kill().unwrap();
        child.wait().unwrap();
        if name == "torn-tail" {
            torn_tail(&d);
        }
        if name == "recovered" {
            let o = rtrec(&["recover", d.to_str().unwrap()]);
            assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        }
        v.push(entry(name, d, None));
    }

    let d = dir(root, "live");
    let child = live_recorder(&d, 20_000);
    v.push(Entry {
        name: "live",
        dir: d,
        offered: Some(20_000),
        live: Some(child),
    });
    v
}

/// Bad bytes right after the last valid frame of the last file (a write
/// cut short): where `verify` says the valid frames end.
fn torn_tail(d: &Path) {
    let o = rtrec(&["verify", "--json", d.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let last = v["files"].as_array().unwrap().last().unwrap().clone();
    let at = last["valid_len"].as_u64().unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(last["path"].as_str().unwrap())
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &[0xA5; 100], at).unwrap();
    f.sync_all().unwrap();
    let o = rtrec(&["verify", "--json", d.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let last = v["files"].as_array().unwrap().last().unwrap();
    assert!(last["torn_tail_bytes"].as_u64() > Some(0), "{last:#}");
}
