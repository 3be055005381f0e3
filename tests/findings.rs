//! The findings of a new user's trial (issue 33), each held by an
//! assertion so that it cannot come back unnoticed: messages that name the
//! flag, help that says what it should, the summary's words and
//! arithmetic, and the pool's hints and commands. (The output paths, the
//! stray signals, `--require-rt` and `export DIR` have tests of their own:
//! tests/self_describing.rs, tests/user_signals.rs, tests/export_tables.rs.)

use std::process::Output;

mod common;
use common::{rtrec, rtrec_stdin, show};

/// stderr as text.
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout as text.
fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A usage error: exit 2 and one line on stderr that starts with `start`.
fn assert_refused(args: &[&str], start: &str) {
    let o = rtrec(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    assert!(e.starts_with(start), "{args:?}: {e}");
}

#[test]
fn bad_values_are_answered_about_the_flag_in_one_sentence() {
    assert_refused(
        &["record", "--count", "-5"],
        "rtrec: --count: a count is a whole number of at least 1",
    );
    assert_refused(
        &["record", "--count", "3", "--size", "100GiB"],
        "rtrec: --size 100GiB: a record is at most 1GiB",
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    // A CPU this machine does not have is refused before anything is
    // recorded (it was a warning, and the recording ran unpinned).
    assert_refused(
        &[
            "record", "--count", "3", "--rt", "--cpu", "4000", "--dir", dir,
        ],
        "rtrec: --cpu 4000: this process may run only on CPUs [",
    );
    assert!(std::fs::read_dir(dir).unwrap().next().is_none());
}

#[test]
fn help_lists_the_commands_and_says_the_defaults_and_exit_codes() {
    // Bare `rtrec`: the whole help (every command), not one line.
    let o = rtrec(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    for c in ["record", "verify", "export", "ls", "pool", "recover"] {
        assert!(err(&o).contains(&format!("\n  {c} ")), "{c}: {}", show(&o));
    }
    let verify = out(&rtrec(&["verify", "--help"]));
    assert!(
        verify.contains("Exit status: 0 every file clean, 1 not clean"),
        "{verify}"
    );
    let record = out(&rtrec(&["record", "--help"]));
    assert!(
        record.contains("[default: block with --stdin (a pipe can wait), drop for the synthetic")
            && !record.contains("[default: drop]"),
        "{record}"
    );
}

#[cfg(all(feature = "man", feature = "completions"))]
#[test]
fn man_pages_name_rtrec_and_completion_offers_no_hidden_helper() {
    let man = out(&rtrec(&["man", "recover"]));
    let th = man.lines().find(|l| l.starts_with(".TH ")).unwrap();
    assert!(th.contains("\"rtrec "), "{th}");
    let bash = out(&rtrec(&["completions", "bash"]));
    assert!(bash.contains("record") && !bash.contains("__bgload") && !bash.contains("__emulate"));
}

/// The summary's numbers in the line starting with `start`.
fn numbers_in(text: &str, start: &str) -> Vec<u64> {
    let line = text
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no {start:?} line: {text}"));
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect()
}

#[test]
fn the_summary_says_what_it_means() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    // A stdin recording has no schedule: no missed periods, no lateness row.
    let o = rtrec_stdin(
        &["record", "--stdin", "--size", "1KiB", "--dir", d],
        &[7u8; 10_000],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = out(&o) + &err(&o);
    assert!(
        !text.contains("missed periods") && !text.contains("lateness"),
        "{text}"
    );
    assert!(text.contains("on a full ring: block ("), "{text}");
    // A synthetic one names the policy as a policy, and INCOMPLETE (when
    // it is) has its own line: here the recording is complete.
    let o = rtrec(&[
        "record", "--count", "20", "--period", "1ms", "--size", "64B", "--dir", d,
    ]);
    let text = out(&o) + &err(&o);
    assert!(text.contains("on a full ring: drop the record"), "{text}");
    assert!(text.contains("missed periods"), "{text}");
    assert!(
        !text.contains("INCOMPLETE") && !text.contains("ring full: drop ("),
        "{text}"
    );
}

#[test]
fn the_flight_recorders_summary_adds_up() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("f");
    std::fs::create_dir(&dir).unwrap();
    let o = rtrec(&[
        "record",
        "--period",
        "1ms",
        "--size",
        "64B",
        "--count",
        "1500",
        "--pre",
        "50ms",
        "--post",
        "50ms",
        "--trigger-every",
        "500ms",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = out(&o) + &err(&o);
    // records: OFFERED offered, WRITTEN written (saved around triggers),
    // DROPPED dropped; QUEUED queued in memory, UNSAVED of them not saved
    let r = numbers_in(&text, "records: ");
    let (written, queued, unsaved) = (r[1], r[3], r[4]);
    assert_eq!(unsaved, queued - written, "{text}");
    // flight recorder: ... of the UNSAVED not saved, OVERWRITTEN were
    // overwritten in memory and HELD still held there at the end
    let f = numbers_in(&text, "flight recorder: ");
    let n = f.len();
    assert_eq!(f[n - 3], unsaved, "{text}");
    assert_eq!(f[n - 2] + f[n - 1], unsaved, "{text}");
    assert!(!text.contains("dropped by the writer"), "{text}");
}

#[test]
fn the_pool_hints_and_commands_act_on_the_recordings_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let o = rtrec(&["pool", "prepare", d, "--files", "2", "--file-size", "1MiB"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let o = rtrec(&[
        "record", "--count", "30", "--period", "1ms", "--size", "16KiB", "--alloc", "pool",
        "--dir", d,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = out(&o) + &err(&o);
    // The hint names this directory (not the default ./rtrec-data), and
    // the pool line no longer claims a holding the disk line contradicts.
    assert!(
        text.contains(&format!("`rtrec pool trim {d}` gives it back")),
        "{text}"
    );
    assert!(!text.contains("holding "), "{text}");
    // `recycle DIR --all` takes DIR as the directory, and says what it
    // left alone (here: the recording, its tail given back).
    let o = rtrec(&["pool", "recycle", d, "--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        out(&o).contains("left alone in ") && out(&o).contains("1 not of the pool's file size"),
        "{}",
        show(&o)
    );
    // `trim` alone gives every ready file back.
    let o = rtrec(&["pool", "trim", d]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(out(&o).starts_with("removed 1 file(s)"), "{}", show(&o));
}
