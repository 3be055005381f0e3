//! A recording, as every command reads it: the one reader of a directory
//! (or of files named one by one) that verifies each file, groups the
//! files into recordings ([`crate::reader::recording_groups`]), checks
//! each recording's continuity, ranks its state, tells whether a recorder
//! is still writing it (its name claim), finds the newest and resolves an
//! id, a prefix of one or a file name. `rtrec ls`, `verify`, `events` and
//! `export` read through it, and the Python package through `ls --json`
//! (a versioned document, [`SCHEMA_VERSION`]).
//!
//! Design choices:
//! - **One precedence of states** ([`State::PRECEDENCE`], written once in
//!   `docs/recordings.md` with the sentence each command prints): a
//!   recording's state is its worst file's, and `in progress` (a live
//!   recorder holds its name claim) before all.
//! - **A missing file is never an absence**: a recording whose first,
//!   middle or last file is missing is `incomplete`, and its loss counts
//!   the records the missing files held where the neighbours tell
//!   ([`Summary::lost`]); a missing last file leaves it `unfinished` (a
//!   power cut during a file switch leaves the same, and recover closes
//!   it) and says from which sequence number an unknown count is lost
//!   ([`Summary::lost_after`]).
//! - **A copy is not its source**: a copy made by `rtrec export --framed`
//!   (header flag `COPY`) is a recording of its own with the source's id;
//!   picking by id takes the source, a copy is picked by its file name.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;
use crate::file::utc_iso;
use crate::pool::Pool;
use crate::reader::{
    check_continuity_in, recording_files, recording_groups, verify_file, FileReport, FileStatus,
    LedgerEntry, Scope, ShipLedger,
};
use crate::recovery::leftover_tmp;
use crate::recovery::Live;

/// The version of the JSON documents `rtrec ls --json`, `verify --json`
/// and `events --json` print (`docs/recordings-schema.md`); it grows when
/// a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// A recording's state: its worst file's, in [`State::PRECEDENCE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// A live recorder holds the recording's name claim: the figures are
    /// what is on storage so far.
    InProgress,
    /// Damaged, misplaced or doubled data (`--salvage` saves what is
    /// intact).
    Corrupt,
    /// A file that is not an rtrec recording (or of a format version this
    /// rtrec does not read): an entry of its own.
    NotRecording,
    /// Files of the recording are missing (its first or middle ones; a
    /// missing last file leaves it unfinished with a loss of unknown
    /// size).
    Incomplete,
    /// Interrupted and not closed yet (`rtrec recover DIR` closes it).
    Unfinished,
    /// Ended by the recorder as aborted (the end frame says why).
    Aborted,
    /// Raw files without a sidecar to check them against.
    Unverifiable,
    /// Interrupted, then closed by `rtrec recover`.
    Recovered,
    /// Raw files that match their sidecar.
    Raw,
    /// Ended as asked, every check passed.
    Complete,
}

impl State {
    /// Worst first: a recording's state is the first of these any of its
    /// files has (`in progress` comes from the name claim, not a file).
    pub const PRECEDENCE: [State; 10] = [
        State::InProgress,
        State::Corrupt,
        State::NotRecording,
        State::Incomplete,
        State::Unfinished,
        State::Aborted,
        State::Unverifiable,
        State::Recovered,
        State::Raw,
        State::Complete,
    ];

    /// The state a file's verdict gives.
    pub fn of_file(s: FileStatus) -> State {
        match s {
            FileStatus::Complete => State::Complete,
            FileStatus::Aborted => State::Aborted,
            FileStatus::Unfinished => State::Unfinished,
            FileStatus::Interrupted => State::Recovered,
            FileStatus::Corrupt => State::Corrupt,
            FileStatus::Incomplete => State::Incomplete,
            FileStatus::NotRtrec => State::NotRecording,
            FileStatus::Raw => State::Raw,
            FileStatus::Unverifiable => State::Unverifiable,
        }
    }

    /// The worst state of `files` (`live`: in progress).
    pub fn of(files: &[FileReport], live: bool) -> State {
        if live {
            return State::InProgress;
        }
        let rank = |s: State| State::PRECEDENCE.iter().position(|p| *p == s);
        files
            .iter()
            .map(|f| State::of_file(f.status))
            .min_by_key(|s| rank(*s))
            .unwrap_or(State::Complete)
    }

    /// Its name, as `ls` and `events` print it and every `--json` gives it.
    pub fn name(self) -> &'static str {
        match self {
            State::InProgress => "in progress",
            State::Corrupt => "corrupt",
            State::NotRecording => "not a recording",
            State::Incomplete => "incomplete",
            State::Unfinished => "unfinished",
            State::Aborted => "aborted",
            State::Unverifiable => "unverifiable",
            State::Recovered => "recovered",
            State::Raw => "raw",
            State::Complete => "complete",
        }
    }

    /// The sentence `verify` prints after a recording's id.
    pub fn sentence(self) -> &'static str {
        match self {
            State::InProgress => "in progress: a recorder is writing it; the figures are what is on storage so far",
            State::Corrupt => "CORRUPT: damaged, misplaced or doubled data; `rtrec export --salvage` saves the intact records",
            State::NotRecording => "NOT A RECORDING: not an rtrec file this rtrec reads",
            State::Incomplete => "INCOMPLETE: files of the recording are missing; their records are lost",
            State::Unfinished => "UNFINISHED: interrupted; `rtrec recover DIR` closes it",
            State::Aborted => "ABORTED: the recorder ended it early",
            State::Unverifiable => "UNVERIFIABLE: raw files without a sidecar to check them against",
            State::Recovered => "recovered: interrupted, closed by `rtrec recover`",
            State::Raw => "raw: matches its sidecar",
            State::Complete => "complete",
        }
    }

    /// True for the states `verify` and `events` exit 0 on.
    pub fn is_clean(self) -> bool {
        matches!(self, State::Complete | State::Recovered | State::Raw)
    }
}

impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One recording: its files (in index order) with their reports, its
/// state, whether a recorder holds it.
#[derive(Clone, Debug)]
pub struct Recording {
    /// The header's recording id (`None`: a file that is not a recording).
    pub id: Option<u64>,
    /// A copy made by `rtrec export --framed` (header flag `COPY`).
    pub copy: bool,
    /// A live recorder holds its name claim.
    pub live: bool,
    /// Its state.
    pub state: State,
    /// Its files' reports, in index order.
    pub files: Vec<FileReport>,
}

/// What `rtrec ls` lists of a recording (one entry of `ls --json`'s
/// `recordings`, and of `verify --json`'s).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The header's recording id, 16 hex digits (`-` for a file that is
    /// not a recording).
    pub id: String,
    /// Its first file present (by file index).
    pub first_file: PathBuf,
    /// Its state ([`State::name`]).
    pub state: State,
    /// A copy made by `rtrec export --framed`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub copy: bool,
    /// Wall time of its first record, RFC 3339 (ms), when it has one.
    pub start: Option<String>,
    /// Wall time of its first record, ns since the epoch.
    pub start_ns: Option<u64>,
    /// When its first file was created, ns since the epoch (orders a
    /// recording that has no record on storage yet).
    pub created_ns: Option<u64>,
    /// From its first record to its last, seconds.
    pub duration_s: Option<f64>,
    /// Its layout (`rtrec record --layout`, format version 6): the
    /// canonical text its files carry, which `export`, `info` and the
    /// Python package decode the records by; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// Records intact.
    pub records: u64,
    /// Payload bytes of those records.
    pub bytes: u64,
    /// Records not in the recording: `dropped` + `missing` + `cut`.
    pub lost: u64,
    /// Of these: dropped while recording (stored losses, drops the end
    /// frame counts).
    pub dropped: u64,
    /// Of these: missing without a trace (missing files included, where
    /// their neighbours tell how many records they held).
    pub missing: u64,
    /// Of these: cut by recover after a crash hole.
    pub cut: u64,
    /// Files after its last are missing: from this sequence number an
    /// unknown count of records is lost (not in `lost`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_after: Option<u64>,
    /// Records a loop retired before its first kept file (not lost).
    pub retired: u64,
    /// Which budget owns it: `"loop"` for a loop recording (header flag
    /// `LOOP`), which the next loop of its prefix may retire, oldest
    /// first; `"-"` for any other, which no budget retires unless a loop
    /// runs with `--keep-scope dir` (docs/unattended.md, "What the budget
    /// owns").
    pub budget: &'static str,
    /// Files present.
    pub files: usize,
    /// Their size on storage, bytes.
    pub size_bytes: u64,
    /// In a directory `rtrec ship` sends (its ledger `.shipped` is
    /// there): whether the recording is shipped (its manifest is in the
    /// bucket, [`Recording::shipping`]); absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shipped: Option<bool>,
    /// In such a directory: of the leading files a loop retired, those the
    /// ledger has no verified copy of in the bucket (gone before they were
    /// shipped); absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired_unshipped_files: Option<u64>,
}

impl Recording {
    /// Its id as `ls` shows it: 16 hex digits, `-` without one.
    pub fn id_hex(&self) -> String {
        self.id
            .map_or_else(|| "-".to_string(), |id| format!("{id:016x}"))
    }

    /// The wall time of its first record, else its first file's creation.
    pub fn started_ns(&self) -> Option<u64> {
        self.files
            .iter()
            .find_map(|r| r.first_record_wall_ns)
            .or(self.files.first().and_then(|r| r.created_wall_ns))
    }

    /// A flight-recorder event: its file 0 opens with a trigger frame.
    pub fn is_event(&self) -> bool {
        self.files
            .first()
            .is_some_and(|f| f.index == Some(0) && f.opens_with_trigger)
    }

    /// What the directory's shipping `ledger` says of it: whether it is
    /// shipped (its manifest is in the bucket), and how many of the
    /// leading files a loop retired have no verified copy there (no
    /// `file` line of the ledger names their recording and index).
    pub fn shipping(&self, ledger: &ShipLedger) -> (bool, u64) {
        let Some(id) = self.id else {
            return (false, 0);
        };
        let retired = self.files.iter().find_map(|r| r.retired.as_ref());
        let unshipped = retired.map_or(0, |r| {
            (r.first_index..=r.last_index)
                .filter(|&i| {
                    !ledger.entries.iter().any(|e| {
                        matches!(e, LedgerEntry::File { recording_id, index, .. }
                            if *recording_id == id && *index == i)
                    })
                })
                .count() as u64
        });
        (ledger.recording_shipped(id), unshipped)
    }

    /// Its layout (`rtrec record --layout`): the canonical text its files
    /// carry (verify has checked that they all carry the same one).
    pub fn layout(&self) -> Option<&str> {
        self.files.iter().find_map(|r| r.layout.as_deref())
    }

    /// What `ls` lists of it.
    pub fn summary(&self) -> Summary {
        let g = &self.files;
        let sum = |f: fn(&FileReport) -> u64| g.iter().map(f).sum::<u64>();
        let dropped = sum(|r| r.lost_records + r.unstored_drops);
        let (missing, cut) = (sum(|r| r.missing_records), sum(|r| r.cut_records));
        let start_ns = g.iter().find_map(|r| r.first_record_wall_ns);
        let end_ns = g.iter().rev().find_map(|r| r.last_record_wall_ns);
        Summary {
            id: self.id_hex(),
            first_file: g.first().map(|r| r.path.clone()).unwrap_or_default(),
            state: self.state,
            copy: self.copy,
            start: start_ns.map(utc_iso),
            start_ns,
            created_ns: g.first().and_then(|r| r.created_wall_ns),
            duration_s: start_ns
                .zip(end_ns)
                .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9),
            layout: self.layout().map(str::to_string),
            records: sum(|r| r.records),
            bytes: sum(|r| r.bytes),
            lost: dropped + missing + cut,
            dropped,
            missing,
            cut,
            lost_after: g.last().and_then(|r| r.lost_after),
            retired: g
                .iter()
                .find_map(|r| r.retired.as_ref())
                .map_or(0, |r| r.next_seq.unwrap_or(0).saturating_sub(r.first_seq)),
            budget: if g.first().is_some_and(|r| r.loop_recording) {
                "loop"
            } else {
                "-"
            },
            files: g.len(),
            size_bytes: g
                .iter()
                .filter_map(|r| std::fs::metadata(&r.path).ok())
                .map(|m| m.len())
                .sum(),
            shipped: None,
            retired_unshipped_files: None,
        }
    }
}

/// What one read of directories and files found.
#[derive(Debug, Default)]
pub struct Directory {
    /// The recordings, oldest first (by first record, else creation; then
    /// id, a source before its copies). A file that is not a recording is
    /// an entry of its own ([`State::NotRecording`]).
    pub recordings: Vec<Recording>,
    /// Unused pool slots among the files named (not recordings).
    pub slots: Vec<PathBuf>,
    /// Pool slots of the directories holding an unfinished recording (a
    /// crash came before its move out of the pool was on storage).
    pub unfinished_in_pool: Vec<PathBuf>,
    /// Hidden `.NAME.tmp` recording files in the directories.
    pub leftover_tmp: Vec<PathBuf>,
}

impl Directory {
    /// Reads the recordings of one directory (all their files, so a
    /// missing first or last file is lost).
    ///
    /// # Errors
    /// As [`Directory::read_paths`].
    pub fn read(dir: &Path) -> Result<Directory, Error> {
        Directory::read_paths(&[dir.to_path_buf()], Scope::Whole)
    }

    /// Reads `paths`: directories (all their recording files, their pool
    /// and leftover temporary files) and files named one by one, whose
    /// recordings are checked as `named` says ([`Scope::Between`]: only
    /// holes between the files named are lost).
    ///
    /// # Errors
    /// A path that cannot be read or listed, a directory that holds no
    /// recording (one sentence each, [`Error::Usage`]).
    pub fn read_paths(paths: &[PathBuf], named: Scope) -> Result<Directory, Error> {
        let mut d = Directory::default();
        let (mut in_dirs, mut files) = (Vec::new(), Vec::new());
        let mut lives = Vec::new();
        for p in paths {
            let meta = std::fs::metadata(p)
                .map_err(|e| Error::Usage(format!("cannot read '{}': {e}", p.display())))?;
            if !meta.is_dir() {
                files.push(p.clone());
                continue;
            }
            let more = recording_files(p)
                .map_err(|e| Error::Usage(format!("cannot list '{}': {e}", p.display())))?;
            if let Ok(Some(pool)) = Pool::open(p) {
                let hidden = pool.unfinished().unwrap_or_default();
                d.unfinished_in_pool
                    .extend(hidden.into_iter().map(|u| u.slot));
            }
            d.leftover_tmp.extend(leftover_tmp(p).unwrap_or_default());
            if more.is_empty() && d.unfinished_in_pool.is_empty() && d.leftover_tmp.is_empty() {
                return Err(Error::Usage(format!(
                    "'{}' holds no recordings (*.rtr or *.raw files)",
                    p.display()
                )));
            }
            lives.push(Live::of(p)?);
            in_dirs.extend(more);
        }
        let read = |p: &PathBuf| {
            verify_file(p).map_err(|e| Error::Usage(format!("cannot read '{}': {e}", p.display())))
        };
        let mut whole = in_dirs.iter().map(read).collect::<Result<Vec<_>, _>>()?;
        check_continuity_in(&mut whole, Scope::Whole);
        files.retain(|f| !in_dirs.contains(f));
        files.dedup();
        let mut alone = files.iter().map(read).collect::<Result<Vec<_>, _>>()?;
        check_continuity_in(&mut alone, named);
        let live = |r: &FileReport| {
            let name = r.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            lives.iter().any(|l| l.is_live(name))
        };
        for reports in [whole, alone] {
            let (recs, slots) = group(reports, &live);
            d.recordings.extend(recs);
            d.slots.extend(slots);
        }
        d.recordings.sort_by_key(|r| (r.started_ns(), r.id, r.copy));
        Ok(d)
    }

    /// The newest recording (the latest first record), what `export DIR`
    /// and the Python package's `open(DIR)` take: a source before a copy
    /// of it; a copy only when the directory holds nothing else.
    pub fn newest(&self) -> Option<&Recording> {
        let rec = |copy: bool| {
            self.recordings
                .iter()
                .rev()
                .find(|r| r.id.is_some() && r.copy == copy)
        };
        rec(false).or_else(|| rec(true))
    }

    /// The recording `want` names: its id or a unique prefix of it (a
    /// source before its copies), or the name of one of its files.
    ///
    /// # Errors
    /// No recording matches, or several ids start with `want`: the
    /// sentence names the matching ids.
    pub fn resolve(&self, want: &str) -> Result<&Recording, String> {
        let lower = want.to_ascii_lowercase();
        let named = |r: &&Recording| {
            r.files.iter().any(|f| {
                f.path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy() == want)
            })
        };
        if let Some(r) = self.recordings.iter().find(named) {
            return Ok(r);
        }
        let by_id = |copy: bool| -> Vec<&Recording> {
            self.recordings
                .iter()
                .filter(|r| r.id.is_some() && r.copy == copy && r.id_hex().starts_with(&lower))
                .collect()
        };
        let hits = match by_id(false) {
            v if v.is_empty() => by_id(true),
            v => v,
        };
        match hits.as_slice() {
            [r] => Ok(r),
            [] => Err(format!(
                "no recording has the id or a file named '{want}' (`rtrec ls DIR` lists them)"
            )),
            many => {
                let ids: Vec<String> = many.iter().map(|r| r.id_hex()).collect();
                Err(format!(
                    "'{want}' is the start of several recording ids ({}); give more digits",
                    ids.join(", ")
                ))
            }
        }
    }
}

/// The recordings of `reports` (checked) and the unused pool slots among
/// them.
fn group(
    reports: Vec<FileReport>,
    live: &dyn Fn(&FileReport) -> bool,
) -> (Vec<Recording>, Vec<PathBuf>) {
    let groups = recording_groups(&reports);
    let mut left: Vec<Option<FileReport>> = reports.into_iter().map(Some).collect();
    let mut out = Vec::new();
    for g in groups {
        let files: Vec<FileReport> = g.iter().filter_map(|&i| left[i].take()).collect();
        let is_live = files.iter().any(live);
        out.push(Recording {
            id: files[0].recording_id,
            copy: files[0].copy,
            live: is_live,
            state: State::of(&files, is_live),
            files,
        });
    }
    let mut slots = Vec::new();
    for r in left.into_iter().flatten() {
        if r.slot {
            slots.push(r.path);
            continue;
        }
        out.push(Recording {
            id: None,
            copy: false,
            live: false,
            state: State::of(std::slice::from_ref(&r), false),
            files: vec![r],
        });
    }
    (out, slots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::verify_bytes;

    /// A file `name` of recording `id` with verdict `status`.
    fn file(name: &str, id: u64, status: FileStatus) -> FileReport {
        let mut r = verify_bytes(Path::new(name), b"");
        r.recording_id = Some(id);
        r.index = Some(0);
        r.status = status;
        r
    }

    fn recording(name: &str, id: u64, copy: bool) -> Recording {
        let files = vec![file(name, id, FileStatus::Complete)];
        Recording {
            id: Some(id),
            copy,
            live: false,
            state: State::of(&files, false),
            files,
        }
    }

    #[test]
    fn the_precedence_lists_every_state_once_and_unfinished_before_aborted() {
        for s in State::PRECEDENCE {
            assert_eq!(
                State::PRECEDENCE.iter().filter(|p| **p == s).count(),
                1,
                "{s:?}"
            );
        }
        // ls said unfinished, events said aborted: one answer now.
        let files = [
            file("/d/a-0000.rtr", 1, FileStatus::Aborted),
            file("/d/a-0001.rtr", 1, FileStatus::Unfinished),
        ];
        assert_eq!(State::of(&files, false), State::Unfinished);
        assert_eq!(State::of(&files, true), State::InProgress);
        assert!(!State::Unfinished.is_clean() && State::Recovered.is_clean());
    }

    #[test]
    fn a_prefix_of_several_ids_names_those_ids_only_and_an_id_picks_the_source() {
        let d = Directory {
            recordings: vec![
                recording("/d/a-0000.rtr", 0xabc1_0000_0000_0000, false),
                recording("/d/b-0000.rtr", 0xabc2_0000_0000_0000, false),
                recording("/d/c-0000.rtr", 0xdef0_0000_0000_0000, false),
                recording("/d/copy.rtr", 0xdef0_0000_0000_0000, true),
            ],
            ..Directory::default()
        };
        let why = d.resolve("ABC").unwrap_err();
        assert!(
            why.contains("abc1000000000000, abc2000000000000") && !why.contains("def0"),
            "{why}"
        );
        assert_eq!(d.resolve("abc2").unwrap().id, Some(0xabc2_0000_0000_0000));
        assert!(!d.resolve("def").unwrap().copy);
        assert!(d.resolve("copy.rtr").unwrap().copy);
        assert_eq!(
            d.resolve("b-0000.rtr").unwrap().id,
            Some(0xabc2_0000_0000_0000)
        );
        assert!(d.resolve("99").unwrap_err().starts_with("no recording has"));
        // The newest is a source, never a copy of one.
        assert!(!d.newest().unwrap().copy);
    }
}
