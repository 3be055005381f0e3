//! The file-name patterns the C API documents (`include/rtrec.h`, the
//! `prefix` field; `docs/c-api.md`, "File names" and the flight recorder)
//! match the names real recordings make: each backquoted
//! `PREFIX-...` pattern is turned into a matcher (`YYYY` four digits,
//! `mm`/`dd`/`HH`/`MM`/`SS` two, `.mmm` a dot and three, `[.N]` an
//! optional dot and number, `NNNN` four digits or more, `NNNNN` five) and
//! tried on a plain recording's name, on one that got a `.N` suffix, and
//! on a flight-recorder event's.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::null_mut;

use rtrec::{
    rtrec_config, rtrec_recorder_create, rtrec_recorder_finish, rtrec_recorder_record,
    rtrec_recorder_trigger,
};

/// One piece of a documented pattern.
#[derive(Debug)]
enum Piece {
    Lit(String),
    /// At least `min`, at most `max` digits.
    Digits(usize, usize),
    /// `[.N]`: nothing, or a dot and a number.
    Suffix,
}

/// The pieces of `pattern`, with `PREFIX` standing for `prefix`.
fn pieces(pattern: &str, prefix: &str) -> Vec<Piece> {
    const TOKENS: &[(&str, usize, usize)] = &[
        ("YYYY", 4, 4),
        ("NNNNN", 5, 5),
        ("NNNN", 4, 10),
        ("mmm", 3, 3),
        ("mm", 2, 2),
        ("dd", 2, 2),
        ("HH", 2, 2),
        ("MM", 2, 2),
        ("SS", 2, 2),
    ];
    let mut out = Vec::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("PREFIX") {
            out.push(Piece::Lit(prefix.into()));
            rest = r;
        } else if let Some(r) = rest.strip_prefix("[.N]") {
            out.push(Piece::Suffix);
            rest = r;
        } else if let Some((t, min, max)) = TOKENS.iter().find(|(t, ..)| rest.starts_with(t)) {
            out.push(Piece::Digits(*min, *max));
            rest = &rest[t.len()..];
        } else {
            let c = rest.chars().next().unwrap();
            out.push(Piece::Lit(c.to_string()));
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Whether `name` is exactly `pieces` (with backtracking over the
/// variable-length pieces).
fn matches(pieces: &[Piece], name: &str) -> bool {
    let Some((first, more)) = pieces.split_first() else {
        return name.is_empty();
    };
    let digits = name.bytes().take_while(u8::is_ascii_digit).count();
    match first {
        Piece::Lit(l) => name
            .strip_prefix(l.as_str())
            .is_some_and(|r| matches(more, r)),
        Piece::Digits(min, max) => (*min..=(*max).min(digits)).any(|n| matches(more, &name[n..])),
        Piece::Suffix => {
            matches(more, name)
                || name.strip_prefix('.').is_some_and(|r| {
                    let d = r.bytes().take_while(u8::is_ascii_digit).count();
                    (1..=d).any(|n| matches(more, &r[n..]))
                })
        }
    }
}

/// The backquoted `PREFIX-...` patterns of `text`.
fn documented_patterns(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("PREFIX-") && !s.contains(' '))
        .map(str::to_string)
        .collect()
}

/// Creates a recorder in `dir` (the defaults but small records, and the
/// flight recorder when `flight`), records 10 records (a trigger first
/// when `flight`), finishes, and returns the non-empty `.rtr` files.
fn record(dir: &Path, flight: bool) -> Vec<PathBuf> {
    let d = CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: all-zero is a valid rtrec_config (integers, NULL pointer).
    let mut cfg: rtrec_config = unsafe { std::mem::zeroed() };
    cfg.struct_size = std::mem::size_of::<rtrec_config>();
    (cfg.max_record, cfg.file_size) = (64, 1 << 20);
    if flight {
        (cfg.flight_enabled, cfg.flight_pre_bytes) = (1, 64 * 1024);
    }
    let mut rec = null_mut();
    // SAFETY: valid pointers; finish frees the handle.
    unsafe {
        assert_eq!(rtrec_recorder_create(d.as_ptr(), &cfg, &mut rec), 0);
        if flight {
            assert_eq!(rtrec_recorder_trigger(rec), 0);
        }
        for _ in 0..10 {
            assert_eq!(rtrec_recorder_record(rec, [1u8; 64].as_ptr().cast(), 64), 0);
        }
        assert_eq!(rtrec_recorder_finish(rec, null_mut()), 0);
    }
    rtrec_engine::reader::recording_files(dir)
        .unwrap()
        .into_iter()
        .filter(|f| std::fs::metadata(f).is_ok_and(|m| m.len() > 0))
        .collect()
}

/// The one name `files` holds.
fn only_name(files: &[PathBuf]) -> String {
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].file_name().unwrap().to_string_lossy().into_owned()
}

/// A name made while every millisecond stamp of the next 5 s is taken by
/// an empty file of another recording: the recorder adds `.1`.
fn suffixed_name() -> String {
    let dir = tempfile::tempdir().unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    for ms in now_ms..now_ms + 5000 {
        let stamp = rtrec_engine::utc_stamp_ms(ms);
        std::fs::write(dir.path().join(format!("rec-{stamp}-0000.rtr")), b"").unwrap();
    }
    let name = only_name(&record(dir.path(), false));
    assert!(name.contains("Z.1-"), "{name}");
    name
}

#[test]
fn the_documented_file_name_patterns_match_the_names_recordings_make() {
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = only_name(&record(plain_dir.path(), false));
    let flight_dir = tempfile::tempdir().unwrap();
    let event = only_name(&record(flight_dir.path(), true));
    assert!(event.contains("-ev00000-"), "{event}");
    let suffixed = suffixed_name();

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for doc in ["include/rtrec.h", "docs/c-api.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let patterns = documented_patterns(&text);
        let (events, files): (Vec<&String>, Vec<&String>) =
            patterns.iter().partition(|p| p.contains("-ev"));
        assert!(
            !files.is_empty() && !events.is_empty(),
            "{doc}: {patterns:?}"
        );
        for p in files {
            let m = pieces(p, "rec");
            for name in [&plain, &suffixed] {
                assert!(matches(&m, name), "{doc}: `{p}` does not match '{name}'");
            }
            assert!(
                !matches(&m, &event),
                "{doc}: `{p}` matches the event '{event}'"
            );
        }
        for p in events {
            let m = pieces(p, "rec");
            assert!(matches(&m, &event), "{doc}: `{p}` does not match '{event}'");
        }
    }
}

#[test]
fn the_matcher_refuses_the_old_pattern_and_wrong_widths() {
    let name = "rec-20261121T221522.045Z-0000.rtr";
    let old = pieces("PREFIX-YYYYmmddTHHMMSSZ-NNNN.rtr", "rec");
    assert!(!matches(&old, name), "the pattern without milliseconds");
    let new = pieces("PREFIX-YYYYmmddTHHMMSS.mmmZ[.N]-NNNN.rtr", "rec");
    assert!(matches(&new, name));
    assert!(matches(&new, "rec-20261121T221522.045Z.12-10000.rtr"));
    assert!(!matches(&new, "rec-20261121T221522.45Z-0000.rtr"));
    assert!(!matches(&new, "rec-20261121T221522.045Z.-0000.rtr"));
}
