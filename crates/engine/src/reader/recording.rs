//! A recording's check: the files of one recording against each other —
//! the recording's first file is there, indexes have no holes and no
//! doubles, each file continues the sequence numbers and the end frame's
//! counters of the one before, and a recording whose last file says
//! "continued" lost its next one. Also which files of a directory are
//! recording files.
//!
//! Design choice: files belong to one recording when they sit in the same
//! directory and carry the same random recording id (their header's),
//! never by name; [`check_group`] judges one such group in named steps —
//! the first file, each next file against the one before, the last file.

use std::io;
use std::path::{Path, PathBuf};

use crate::file::{utc_iso, FRAMED_EXT, RAW_EXT};
use crate::format::{EndPayload, RetiredPayload};

use super::report::{FileReport, FileStatus, Retired};
use super::retired::RetiredRecord;

/// The recording files in `dir` (`*.rtr`, `*.raw`), sorted by name; hidden
/// files (preparations in progress) are skipped.
pub fn recording_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !name.starts_with('.') && (ext == FRAMED_EXT || ext == RAW_EXT) && p.is_file() {
            v.push(p);
        }
    }
    v.sort();
    Ok(v)
}

/// What places a file in a recording ([`group_files`]): its directory,
/// its recording id, whether it is a copy (header flag `COPY`), and its
/// index in the recording.
pub type GroupKey = (Option<PathBuf>, u64, bool, u32);

/// Groups `items` into recordings by `key` (`None`: the item belongs to
/// none), as indexes into `items`, each group in file index order; groups
/// ordered by directory, then id (copies after their source). Files
/// belong to one recording when they sit in the same directory, carry the
/// same recording id (names are not trusted) and are all copies or all
/// not: a copy made by `rtrec export --framed` is a recording of its own.
///
/// This is the one place files are grouped into recordings: the verified
/// reports of [`recording_groups`] (the checks below, `rtrec ls`,
/// `verify`, `events`, `export`, `recover` and the Python package through
/// `ls --json`), and the headers a loop's budget reads at its start
/// (`writer::earlier`, which cannot afford to verify every frame of every
/// earlier recording) take their groups from it.
pub fn group_files<T>(items: &[T], key: impl Fn(&T) -> Option<GroupKey>) -> Vec<Vec<usize>> {
    grouped(
        items
            .iter()
            .enumerate()
            .filter_map(|(i, t)| key(t).map(|k| (k, i)))
            .collect(),
    )
}

/// [`group_files`]'s grouping of `(key, index)` pairs: not generic, so one
/// sort is compiled for every caller (the board binary's budget).
fn grouped(mut order: Vec<(GroupKey, usize)>) -> Vec<Vec<usize>> {
    // By key, then input order: two files claiming one place keep it.
    order.sort_unstable();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut last = None;
    for ((dir, id, copy, _), i) in order {
        let k = Some((dir, id, copy));
        match groups.last_mut() {
            Some(g) if last == k => g.push(i),
            _ => {
                groups.push(vec![i]);
                last = k;
            }
        }
    }
    groups
}

/// The files of each recording among `reports` ([`group_files`]); files
/// that belong to none (not rtrec files, unused pool slots, no header)
/// are left out.
pub fn recording_groups(reports: &[FileReport]) -> Vec<Vec<usize>> {
    group_files(reports, |r| {
        if r.slot || r.status == FileStatus::NotRtrec {
            return None;
        }
        Some((
            r.path.parent().map(Path::to_path_buf),
            r.recording_id?,
            r.copy,
            r.index?,
        ))
    })
}

/// What the inputs of a recording's check are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// All the files of its recording that exist (a directory): a missing
    /// first or last file is lost.
    Whole,
    /// Files named one by one (`rtrec export FILE…`): only holes between
    /// them are lost; files before the first or after the last are not
    /// among what was asked for.
    Between,
}

/// Checks the files of each recording against each other (all the files
/// of their recordings: [`Scope::Whole`]). Files belong to one recording as
/// [`recording_groups`] says. The first file (index 0) must be there, indexes must have no
/// holes and no doubles (a missing file is reported with the sequence
/// range it held), each file must follow a file whose end frame says
/// "continued" and continue its sequence numbers, its end frame's counters
/// must grow by exactly what the file holds, and a recording whose last
/// file says "continued" lost its next file (how many records it held is
/// not known). Missing files make the file next to them
/// [`FileStatus::Incomplete`].
pub fn check_continuity(reports: &mut [FileReport]) {
    check_continuity_in(reports, Scope::Whole);
}

/// [`check_continuity`] for inputs of the given scope. A copy (header flag
/// `COPY`) is always checked as [`Scope::Between`]: it is one file taken
/// out of its recording on purpose. A recording's missing leading files
/// count as retired only as far as its own RETIRED claims and its
/// directory's retirement record ([`RetiredRecord`], read once per
/// directory) cover them.
pub fn check_continuity_in(reports: &mut [FileReport], scope: Scope) {
    let mut records: Vec<(PathBuf, Result<RetiredRecord, String>)> = Vec::new();
    for group in recording_groups(reports) {
        let scope = if reports[group[0]].copy {
            Scope::Between
        } else {
            scope
        };
        let dir = reports[group[0]].path.parent().map(Path::to_path_buf);
        let dir = dir.unwrap_or_default();
        let k = match records.iter().position(|(d, _)| *d == dir) {
            Some(k) => k,
            None => {
                let r = RetiredRecord::read(&dir);
                records.push((dir, r));
                records.len() - 1
            }
        };
        check_group(reports, &group, scope, &records[k].1);
    }
}

/// [`check_continuity`] for the files of one recording, in index order;
/// `record`: its directory's retirement record.
fn check_group(
    reports: &mut [FileReport],
    group: &[usize],
    scope: Scope,
    record: &Result<RetiredRecord, String>,
) {
    let first = &reports[group[0]];
    if first.index.unwrap_or(0) > 0 && !first.opens_with_trigger {
        check_retired(reports, group, scope, record);
    } else {
        check_first(&mut reports[group[0]], scope);
    }
    for k in 1..group.len() {
        let p = Before::of(&reports[group[k - 1]]);
        check_next(&p, &mut reports[group[k]], k + 1 == group.len());
    }
    if scope == Scope::Whole {
        check_last(&mut reports[group[group.len() - 1]]);
    }
}

/// The recording's claims of what it retired (a loop recording's RETIRED
/// frames), each checked against the files present (a claim naming a
/// present file as the first kept one must agree with where it starts);
/// returns the newest.
fn newest_claim(reports: &mut [FileReport], group: &[usize]) -> Option<RetiredPayload> {
    let present: Vec<(u32, Option<u64>)> = group
        .iter()
        .map(|&i| (reports[i].index.unwrap_or(0), reports[i].first_seq))
        .collect();
    let mut newest: Option<RetiredPayload> = None;
    for &i in group {
        let Some(c) = reports[i].retired_claim else {
            continue;
        };
        if let Some((_, Some(s))) = present.iter().find(|(idx, _)| *idx == c.next_index) {
            if *s != c.next_seq {
                let s = *s;
                reports[i].corrupt(
                    0,
                    format!(
                        "its RETIRED frame says file {} starts at sequence {}, but it starts at {s}",
                        c.next_index, c.next_seq
                    ),
                );
            }
        }
        if newest.is_none_or(|n| c.next_index >= n.next_index) {
            newest = Some(c);
        }
    }
    newest
}

/// The first file present is not file 0. Its leading files are retired as
/// far as a durable record of their retirement covers them, from file 0
/// on: the recording's own newest RETIRED claim (a loop recording), then
/// the directory's retirement record ([`RetiredRecord::reach`], for a
/// recording a later loop's budget retired). Design choice (issue 44): a
/// leading file no record covers is MISSING, as a file in the middle is —
/// a power cut that kept a deletion and lost its record, or a file
/// removed by hand, is a loss `verify` reports, never "retired". Files
/// named one by one ([`Scope::Between`]) are only said retired: files
/// before the first are not among what was asked for.
fn check_retired(
    reports: &mut [FileReport],
    group: &[usize],
    scope: Scope,
    record: &Result<RetiredRecord, String>,
) {
    let newest = match reports[group[0]].loop_recording {
        true => newest_claim(reports, group),
        false => None,
    };
    let first = &mut reports[group[0]];
    let i0 = first.index.unwrap_or(0);
    let own = newest.map_or(0, |c| c.next_index);
    let (reach, record_wall) = match (record, first.recording_id) {
        (Ok(r), Some(id)) => r.reach(id, own),
        _ => (own, 0),
    };
    let covered = reach.min(i0);
    // The first kept file's first sequence number, or the claim's.
    let next_seq = first
        .first_seq
        .or(newest.filter(|c| c.next_index == i0).map(|c| c.next_seq));
    if covered < i0 {
        if scope == Scope::Between {
            return;
        }
        // Where the missing run starts, when a claim says so.
        let from = match covered {
            0 => Some(0),
            _ => newest
                .filter(|c| c.next_index == covered)
                .map(|c| c.next_seq),
        };
        let held = match (from, first.first_seq) {
            (Some(a), Some(s)) if s > a => {
                first.gap(a, s - a);
                format!("; they held sequence {a}..{} ({} records)", s - 1, s - a)
            }
            _ => String::new(),
        };
        let why = match record {
            Err(e) => format!(" ({e})"),
            Ok(_) => String::new(),
        };
        first.files_missing_before = i0 - covered;
        first.incomplete(format!(
            "file(s) {covered} to {} of this recording are missing, and no RETIRED claim or retirement record covers them{why}{held}",
            i0 - 1
        ));
        return;
    }
    let last_wall_ns = newest
        .filter(|c| c.files > 0)
        .map(|c| c.last_wall_ns)
        .max(Some(record_wall).filter(|&t| t > 0));
    let when = match (last_wall_ns, first.created_wall_ns) {
        (Some(t), _) => format!("the last at {}", utc_iso(t)),
        (None, Some(c)) => format!("before {}", utc_iso(c)),
        (None, None) => "before the first kept file".into(),
    };
    let seq = match next_seq {
        Some(0) | None => String::new(),
        Some(s) => format!("seq 0–{} ", s - 1),
    };
    let by = if own >= i0 {
        "by the loop"
    } else {
        "by a loop's disk budget (the directory's retirement record)"
    };
    first.note(format!("{seq}(files 0–{}) retired {by}, {when}", i0 - 1));
    first.retired = Some(Retired {
        first_index: 0,
        last_index: i0 - 1,
        first_seq: 0,
        next_seq,
        last_wall_ns,
    });
}

/// The first file of a recording: it must be file 0 (of a whole
/// recording: else its first files are missing, with the records they
/// held), and (unless it opens a flight-recorder event) its end frame's
/// counters are absolute.
fn check_first(first: &mut FileReport, scope: Scope) {
    let idx0 = first.index.unwrap_or(0);
    if idx0 != 0 {
        if scope == Scope::Between {
            return;
        }
        let held = match (first.opens_with_trigger, first.first_seq) {
            (false, Some(s)) if s > 0 => {
                first.gap(0, s);
                format!("; they held sequence 0..{} ({s} records)", s - 1)
            }
            _ => String::new(),
        };
        first.files_missing_before = idx0;
        first.incomplete(format!(
            "the recording's first {idx0} file(s) are missing{held}"
        ));
    } else if !first.opens_with_trigger && first.status != FileStatus::Corrupt {
        // File 0 of a recording: the end frame's counters are absolute.
        if let Some(e) = &first.stored {
            if (e.records_written, e.bytes_written, e.records_dropped)
                != (
                    first.records,
                    first.bytes,
                    first.lost_records + first.unstored_drops,
                )
            {
                first.corrupt(
                    first.valid_len,
                    "the end frame's counters do not match the records, bytes and drops read"
                        .into(),
                );
            }
        }
    }
}

/// What the next file of a recording is checked against: the file before
/// it.
struct Before {
    /// Its index.
    index: u32,
    /// The sequence number after its last one.
    next_seq: Option<u64>,
    /// Its end frame's counters.
    stored: Option<EndPayload>,
    /// A loop recording: its claim of what was retired before it.
    claim: Option<RetiredPayload>,
    /// Its layout (format version 6), `None` without one.
    layout: Option<String>,
}

impl Before {
    fn of(p: &FileReport) -> Before {
        Before {
            index: p.index.unwrap_or(0),
            next_seq: p.next_seq,
            stored: p.stored.clone(),
            claim: p.retired_claim,
            layout: p.layout.clone(),
        }
    }
}

/// File `r` against the file before it, `p`; `last`: `r` is the
/// recording's last file.
fn check_next(p: &Before, r: &mut FileReport, last: bool) {
    let idx = r.index.unwrap_or(0);
    if idx == p.index {
        r.corrupt(
            0,
            format!("another file of this recording also claims to be file {idx}"),
        );
        return;
    }
    same_layout(p, r);
    if idx != p.index + 1 {
        return missing_files(p, r, idx);
    }
    if p.stored.is_none() && last && r.records == 0 && r.first_seq.is_none() {
        // A recording opens its next file before it closes the current
        // one (so a full disk leaves room to end the current one): a
        // crash between the two leaves this, an unfinished file
        // followed by an empty one. Interrupted, not damaged.
        r.note(format!(
            "file {idx} was opened for the next records when the recording was interrupted; it holds none"
        ));
        if r.status != FileStatus::Corrupt {
            r.status = FileStatus::Unfinished;
        }
        return;
    }
    if !p.stored.as_ref().is_some_and(|e| e.continued) {
        r.corrupt(
            0,
            format!("file {idx} follows a file that did not say the recording continues"),
        );
    }
    continues_sequence(p, r);
    continues_counters(p, r);
    claims_grow(p, r);
}

/// `r` carries the layout `p` does (format version 6): a recording has
/// one layout, and a file whose layout differs, or that has none beside
/// one that has, is damage (never read by the other's layout).
fn same_layout(p: &Before, r: &mut FileReport) {
    // A file that holds no frame (opened when a crash came) has nothing
    // to read by any layout.
    let empty = r.layout.is_none() && r.valid_len <= crate::format::HEADER_LEN as u64;
    if p.layout != r.layout && !empty {
        let say = |l: &Option<String>| {
            l.as_ref()
                .map_or("no layout".into(), |t| format!("the layout '{t}'"))
        };
        r.corrupt(
            0,
            format!(
                "the file carries {}, the file before it {}: a recording has one layout",
                say(&r.layout),
                say(&p.layout)
            ),
        );
    }
}

/// A loop recording: `r`'s claim of what was retired covers at least
/// what `p`'s did (claims are cumulative).
fn claims_grow(p: &Before, r: &mut FileReport) {
    if let (Some(a), Some(b)) = (p.claim, r.retired_claim) {
        if b.next_index < a.next_index || b.files < a.files || b.bytes < a.bytes {
            r.corrupt(
                0,
                format!(
                    "its RETIRED frame claims less (files 0..{}) than the file before it (files 0..{})",
                    b.next_index, a.next_index
                ),
            );
        }
    }
}

/// Files between `p` and file `idx` (`r`) are missing, with the sequence
/// range they held when both sides tell it.
fn missing_files(p: &Before, r: &mut FileReport, idx: u32) {
    let held = match (p.next_seq, r.first_seq) {
        (Some(a), Some(b)) if b > a => {
            r.gap(a, b - a);
            format!("; they held sequence {a}..{} ({} records)", b - 1, b - a)
        }
        _ => String::new(),
    };
    r.files_missing_before = idx - p.index - 1;
    r.incomplete(format!(
        "file(s) {} to {} of this recording are missing{held}",
        p.index + 1,
        idx - 1
    ));
}

/// `r` starts at the sequence number `p` ended at.
fn continues_sequence(p: &Before, r: &mut FileReport) {
    if let (Some(a), Some(b)) = (p.next_seq, r.first_seq) {
        if b > a {
            r.missing(a, b - a, " between files");
            r.status = FileStatus::Corrupt;
        } else if b < a {
            r.corrupt(
                0,
                format!("the file starts at sequence {b}, the file before it ended at {a}"),
            );
        }
    }
}

/// `r`'s end frame's counters grow by exactly what `r` holds over `p`'s.
fn continues_counters(p: &Before, r: &mut FileReport) {
    if let (Some(pe), Some(e), false) = (&p.stored, &r.stored, r.status == FileStatus::Corrupt) {
        let delta = (
            e.records_written.wrapping_sub(pe.records_written),
            e.bytes_written.wrapping_sub(pe.bytes_written),
            e.records_dropped.wrapping_sub(pe.records_dropped),
        );
        if delta != (r.records, r.bytes, r.lost_records + r.unstored_drops) {
            let at = r.valid_len;
            r.corrupt(
                at,
                "the end frame's counters do not grow by the records, bytes and drops of this file"
                    .into(),
            );
        }
    }
}

/// The last file of a recording must not say the recording continues:
/// when it does, its next file is missing. Either a power cut during the
/// switch lost the next file's name (the flusher syncs a file's directory
/// before any durable point in it, so it held nothing durable: the
/// recording is unfinished and `rtrec recover` closes it), or the file
/// was removed: the records from its first sequence number on are lost,
/// how many is not known ([`FileReport::lost_after`]); no reader can tell
/// the two apart, so every reader counts it as a loss of unknown size.
fn check_last(last: &mut FileReport) {
    if last.stored.as_ref().is_some_and(|e| e.continued) {
        let at = last.next_seq.unwrap_or(0);
        last.lost_after = Some(at);
        last.note(format!(
            "the recording continues in file {}, which is missing: interrupted while changing files (`rtrec recover DIR` closes it) or removed; an unknown number of records from sequence {at} are lost",
            last.index.unwrap_or(0) + 1
        ));
        if last.status == FileStatus::Complete {
            last.status = FileStatus::Unfinished;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A complete file `index` of loop recording 7 holding `first..next`,
    /// opening (after file 0) with `claim`.
    fn file(index: u32, first: u64, next: u64, claim: Option<RetiredPayload>) -> FileReport {
        let mut r = FileReport::new(Path::new(&format!("/d/rec-{index:04}.rtr")));
        r.status = FileStatus::Complete;
        r.recording_id = Some(7);
        r.index = Some(index);
        r.loop_recording = true;
        r.first_seq = Some(first);
        r.next_seq = Some(next);
        r.records = next - first;
        r.retired_claim = claim;
        r.stored = Some(EndPayload {
            complete: true,
            continued: true,
            interrupted: false,
            records_written: next,
            records_dropped: 0,
            bytes_written: 0,
            post_ns: 0,
            post_records: 0,
            reason: String::new(),
        });
        r
    }

    /// Files 0..next_index retired, up to `next_seq` (100 records a file).
    fn claim(next_index: u32) -> Option<RetiredPayload> {
        Some(RetiredPayload {
            first_index: 0,
            next_index,
            first_seq: 0,
            next_seq: next_index as u64 * 100,
            files: next_index as u64,
            bytes: next_index as u64 * 1000,
            last_wall_ns: 1_000_000_000 * (1 + next_index as u64),
        })
    }

    /// Files 3 to 5 of a loop, each claiming the files two before it.
    fn kept() -> Vec<FileReport> {
        let mut v: Vec<FileReport> = (3..6)
            .map(|i| file(i, i as u64 * 100, i as u64 * 100 + 100, claim(i - 2)))
            .collect();
        v[2].stored.as_mut().unwrap().continued = false;
        v
    }

    #[test]
    fn the_leading_files_of_a_loop_are_retired_when_no_claim_contradicts_them() {
        let mut v = kept();
        check_continuity(&mut v);
        assert!(v.iter().all(|r| r.is_clean()), "{:?}", v[0].notes);
        let r = v[0].retired.unwrap();
        assert_eq!((r.last_index, r.next_seq), (2, Some(300)));
        assert_eq!(r.last_wall_ns, Some(4_000_000_000));
        assert!(
            v[0].notes[0].starts_with("seq 0–299 (files 0–2) retired by the loop, the last at "),
            "{:?}",
            v[0].notes
        );
        assert_eq!(v[0].missing_records, 0);
    }

    #[test]
    fn leading_files_no_claim_or_record_covers_are_missing_not_retired() {
        // The newest claim (file 5's) covers files 0..1: files 1 and 2
        // left with no record of why (a power cut, or a hand).
        let mut v = kept();
        v[2].retired_claim = claim(1);
        v[1].retired_claim = claim(1);
        check_continuity(&mut v);
        assert_eq!(v[0].status, FileStatus::Incomplete, "{:?}", v[0].notes);
        assert_eq!((v[0].files_missing_before, v[0].missing_records), (2, 200));
        assert!(v[0].retired.is_none());
        // The directory's retirement record covers them (a later loop's
        // budget retired them): retired, not lost.
        let d = tempfile::tempdir().unwrap();
        let mut rec = super::super::retired::RetiredRecord::default();
        rec.add(super::super::retired::RetiredRange {
            recording_id: 7,
            first_index: 1,
            next_index: 3,
            wall_ns: 9_000_000_000,
        });
        std::fs::write(d.path().join(".retired"), rec.encode()).unwrap();
        let mut v = kept();
        for r in &mut v {
            r.path = d.path().join(r.path.file_name().unwrap());
            r.retired_claim = claim(1);
        }
        check_continuity(&mut v);
        assert!(v.iter().all(|r| r.is_clean()), "{:?}", v[0].notes);
        assert!(
            v[0].notes[0].contains("retired by a loop's disk budget"),
            "{:?}",
            v[0].notes
        );
        assert_eq!(v[0].retired.unwrap().last_wall_ns, Some(9_000_000_000));
        // A damaged record covers nothing, and the reader says why.
        std::fs::write(d.path().join(".retired"), b"rtrec-retired-1\nx\n").unwrap();
        check_continuity(&mut v);
        assert_eq!(v[0].status, FileStatus::Incomplete, "{:?}", v[0].notes);
    }

    #[test]
    fn a_claim_that_disagrees_with_the_files_present_is_corrupt() {
        // File 5 claims file 3 is the first kept one, starting at 250.
        let mut v = kept();
        let mut c = claim(3).unwrap();
        c.next_seq = 250;
        v[2].retired_claim = Some(c);
        check_continuity(&mut v);
        assert_eq!(v[2].status, FileStatus::Corrupt, "{:?}", v[2].notes);
        // A claim that shrinks from one file to the next.
        let mut v = kept();
        v[2].retired_claim = claim(0);
        check_continuity(&mut v);
        assert_eq!(v[2].status, FileStatus::Corrupt, "{:?}", v[2].notes);
    }

    #[test]
    fn a_missing_file_in_the_middle_of_a_loop_or_of_a_plain_recording_is_still_missing() {
        let mut v = kept();
        v.remove(1);
        check_continuity(&mut v);
        assert_eq!(v[1].status, FileStatus::Incomplete, "{:?}", v[1].notes);
        assert_eq!((v[1].missing_records, v[1].files_missing_before), (100, 1));
        let mut v = kept();
        for r in &mut v {
            r.loop_recording = false;
        }
        check_continuity(&mut v);
        assert_eq!(v[0].status, FileStatus::Incomplete, "{:?}", v[0].notes);
        assert_eq!((v[0].missing_records, v[0].files_missing_before), (300, 3));
        assert_eq!(
            v[0].gaps[0],
            super::super::report::Gap {
                first_seq: 0,
                count: 300
            }
        );
        assert!(v[0].retired.is_none());
    }

    #[test]
    fn a_last_file_that_says_the_recording_continues_lost_an_unknown_count() {
        let mut v = kept();
        v.pop();
        check_continuity(&mut v);
        assert_eq!(v[1].status, FileStatus::Unfinished, "{:?}", v[1].notes);
        assert_eq!(v[1].lost_after, Some(500));
        // Named one by one, files around the inputs are not asked for.
        let mut v = kept();
        v.pop();
        check_continuity_in(&mut v, Scope::Between);
        assert!(v.iter().all(|r| r.is_clean()), "{:?}", v[1].notes);
    }

    #[test]
    fn a_file_whose_layout_differs_from_the_file_before_is_corrupt() {
        let stored = || Some("t:u32,x:f32,y:f32".to_string());
        for other in [Some("t:u32,x:f32,_:pad4".to_string()), None, stored()] {
            let mut v = kept();
            for r in &mut v {
                (r.layout, r.valid_len) = (stored(), 1000);
            }
            v[1].layout = other.clone();
            check_continuity(&mut v);
            assert!(v[0].is_clean(), "{:?}", v[0].notes);
            if other == stored() {
                assert!(v.iter().all(|r| r.is_clean()), "{:?}", v[1].notes);
                continue;
            }
            assert_eq!(v[1].status, FileStatus::Corrupt, "{:?}", v[1].notes);
            assert!(
                v[1].notes
                    .iter()
                    .any(|n| n.contains("a recording has one layout")),
                "{:?}",
                v[1].notes
            );
        }
    }

    #[test]
    fn a_copy_is_a_recording_of_its_own() {
        let mut v = kept();
        let mut c = v[1].clone();
        c.copy = true;
        c.path = PathBuf::from("/d/copy.rtr");
        v.push(c);
        assert_eq!(recording_groups(&v), vec![vec![0, 1, 2], vec![3]]);
        check_continuity(&mut v);
        assert!(v.iter().all(|r| r.is_clean()), "{:?}", v[3].notes);
    }
}
