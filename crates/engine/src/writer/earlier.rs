//! The directory's earlier recordings, for a loop recording's disk budget:
//! the budget (`--keep`, `--keep-files`, `--keep-for`) holds for what the
//! loop owns in its directory, not only for the recording that sets it,
//! so a recorder restarted after every power cut (a service) does not grow
//! the directory by a budget per restart. [`Earlier::list`] takes the
//! directory's budget lock and lists what the loop may retire before its
//! own files, oldest first.
//!
//! Design choices:
//! - **What the budget owns** ([`KeepScope`]): by default the loop's own
//!   earlier recordings only — loop recordings (header flag `LOOP`) whose
//!   name has the loop's prefix (`PREFIX-YYYYmmddTHHMMSS.mmmZ[.N]`), as
//!   journald vacuums only its own journal files; `--keep-scope dir`
//!   widens it to every closed recording of the directory, and each
//!   recording so retired that the loop does not own is named
//!   ([`Unit::own`], [`Unit::name`]). A loop file that `recover` moved
//!   back from the pool (`recovered-STAMP-ID-NNNN.rtr`: a power cut
//!   between a slot's taking and its rename) lost its prefix with its
//!   name; with one budget per directory (below) the directory's loop is
//!   its owner ([`owns`]). Left unowned, such files stayed for good: a
//!   thousand power-cut cycles (`rtrec bench --study crash
//!   --crash-cycles`) left a directory over its bound by two of them.
//! - **One budget per directory**: a loop holds an exclusive `flock` on
//!   `DIR/.budget.lock` for its whole life, and a second loop in the same
//!   directory refuses in one sentence (`EBUSY`). Two bounds over one
//!   directory each counted the other's files as earlier and together
//!   reached the sum of their bounds (issue 42, finding 7); refusing is
//!   the rule a person can predict. The kernel releases the lock however
//!   the loop dies, so a restart after a kill is never refused.
//! - Earlier means closed: a recording with a name claim in the directory
//!   (`.BASE-name.lock`: alive, or dead and waiting for `rtrec recover`)
//!   or with a file still marked open (`FLAG_OPEN`: recover's to close)
//!   is never touched, nor is a pool slot stranded in the directory (recover's),
//!   a file whose header does not decode (`export --salvage`'s) or a raw
//!   recording (no header to group by).
//! - **Empty recordings do not accumulate**: an earlier recording the loop
//!   owns that holds no record and no loss (one file with only its end
//!   frame: a restart whose source ended at once) is removed when the
//!   loop starts, whatever the budget ([`Earlier::empties`]); a thousand
//!   restarts left a thousand such files, which a byte budget never
//!   reached.
//! - A loop recording's files leave one at a time, oldest first; any
//!   other recording leaves whole. Each leaves only after the directory's
//!   retirement record names it durably ([`RetiredRecord`]; its ranges of
//!   recordings no longer there are dropped here): the reader counts a
//!   recording's missing leading files as retired only when a record
//!   covers them, so no recording is left with a hole `verify` would
//!   call a loss, and none loses a file silently.
//! - Earlier units count by the bytes they take on disk (allocated
//!   blocks), the loop's own finished files by their file size: the
//!   budget is the kept count times the file size.
//! - **The budget knows what was shipped** (issue 46): a directory is
//!   shipped when `rtrec ship` keeps its ledger there (`.shipped`,
//!   [`ShipLedger`]) or the loop was given `--unshipped-headroom`; each
//!   unit then carries whether its recording is shipped
//!   ([`Unit::shipped`]: its manifest is in the bucket), and
//!   `super::retire` lets shipped ones leave first. The ledger is read
//!   here, when the recording is created; while it records, the retire
//!   thread reads it again ([`Shipped`]), never the writer.
//! - A ledger that does not decode counts nothing as shipped (the worst
//!   it does is keep or count a shipped recording as unshipped, never let
//!   an unshipped one leave first), and the loop says why once, at its
//!   start ([`Earlier::ledger_unreadable`]).
//! - The listing reads one header per file when the recording is created
//!   (never on the writer's thread while it records).

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::claims::claimed_bases;
use crate::config::{Config, KeepScope};
use crate::error::Error;
use crate::file::{belongs_to, FRAMED_EXT};
use crate::format::{
    FileHeader, FrameKind, FLAG_COPY, FLAG_LOOP, FLAG_OPEN, FLAG_SLOT, HEADER_LEN,
};
use crate::reader::{
    group_files, recording_files, RetiredRange, RetiredRecord, ShipLedger, SHIP_LEDGER,
};

/// The budget lock's name in the recording directory (see the module
/// docs).
pub const BUDGET_LOCK: &str = ".budget.lock";

/// An empty recording is at most this long (header and end frame); longer
/// files are not read to find out.
const EMPTY_MAX_LEN: u64 = 64 << 10;

/// What may leave together: a file of an earlier loop recording, or a
/// whole earlier recording of another kind.
#[derive(Debug)]
pub(super) struct Unit {
    /// Its files.
    pub(super) files: Vec<PathBuf>,
    /// Bytes they take on disk (allocated blocks).
    pub(super) bytes: u64,
    /// Their newest modification time, ns since the epoch (the age limit).
    pub(super) newest_wall_ns: u64,
    /// The recording's name (`PREFIX-STAMP`).
    pub(super) name: String,
    /// The loop owns it (see the module docs); `false` only with
    /// `--keep-scope dir`.
    pub(super) own: bool,
    /// Its files as the retirement record names them (the recording id
    /// and the index range; the time is set when they are retired).
    pub(super) range: RetiredRange,
    /// The directory's shipping ledger says its recording is shipped (its
    /// manifest is in the bucket); `false` in a directory nobody ships.
    pub(super) shipped: bool,
}

/// A loop's view of its directory when it starts (see the module docs).
pub(super) struct Earlier {
    /// What the budget may retire, oldest first.
    pub(super) units: VecDeque<Unit>,
    /// Empty recordings the loop owns: removed at its start.
    pub(super) empties: Vec<Unit>,
    /// The budget lock, held for the recording's life.
    pub(super) lock: Option<File>,
    /// The directory's retirement record as found, without the ranges of
    /// recordings no longer there ([`RetiredRecord`]); `None`: not a loop.
    pub(super) record: Option<RetiredRecord>,
    /// Ranges of recordings no longer there left the record: before it is
    /// next written the directory is synced, so their deletions are
    /// durable before the record that forgets them.
    pub(super) pruned: bool,
    /// The directory.
    pub(super) dir: PathBuf,
    /// Why the record found could not be read, when it could not: a new
    /// one replaces it, and the loop says so at its start.
    pub(super) unreadable: Option<String>,
    /// The directory is shipped (see the module docs): its earlier
    /// recordings leave shipped ones first, and an unshipped one retired
    /// is counted.
    pub(super) shipping: bool,
    /// Why the shipping ledger found could not be read, when it could
    /// not: nothing counts as shipped, and the loop says so at its start.
    pub(super) ledger_unreadable: Option<String>,
    /// The ledger's version as read ([`Shipped::stamp`]): the retire
    /// thread reads it again only once it changed.
    pub(super) ledger_stamp: Option<Stamp>,
}

impl Earlier {
    /// Nothing: a recording that is not a loop.
    pub(super) fn none() -> Earlier {
        Earlier {
            units: VecDeque::new(),
            empties: Vec::new(),
            lock: None,
            record: None,
            pruned: false,
            dir: PathBuf::new(),
            unreadable: None,
            shipping: false,
            ledger_unreadable: None,
            ledger_stamp: None,
        }
    }

    /// For a loop recording by `cfg` in `dir`: takes the budget lock and
    /// lists the earlier recordings its budget covers. Not a loop:
    /// nothing.
    ///
    /// # Errors
    /// Another loop holds the directory's budget (`EBUSY`); the lock
    /// cannot be created (a symlink planted under its name, no
    /// permission).
    pub(super) fn list(dir: &Path, cfg: &Config) -> Result<Earlier, Error> {
        if !cfg.retention.loops() {
            return Ok(Earlier::none());
        }
        let lock = lock_budget(dir)?;
        let found = earlier_files(dir);
        // A record that cannot be read is replaced by the next one: the
        // files it covered then read as missing (said, not silent).
        let (mut record, unreadable) = match RetiredRecord::read(dir) {
            Ok(r) => (r, None),
            Err(e) => (RetiredRecord::default(), Some(e)),
        };
        let present: Vec<u64> = found.iter().map(|f| f.header.recording_id).collect();
        let pruned = record.retain(|id| present.contains(&id));
        let (mut units, empties) = earlier_units(found, &cfg.prefix, cfg.retention.scope);
        // Stamped before it is read: a ledger replaced in between is read
        // again by the retire thread.
        let ledger_stamp = Shipped::stamp(dir);
        let ledger = Shipped::read(dir);
        for u in &mut units {
            u.shipped = ledger.shipped(u.range.recording_id);
        }
        Ok(Earlier {
            units,
            empties,
            lock: Some(lock),
            record: Some(record),
            pruned,
            dir: dir.to_path_buf(),
            unreadable,
            shipping: ledger.present || cfg.retention.unshipped_headroom.is_some(),
            ledger_unreadable: ledger.unreadable,
            ledger_stamp,
        })
    }

    /// Bytes on disk of what the budget may retire.
    pub(super) fn bytes(&self) -> u64 {
        self.units.iter().map(|u| u.bytes).sum()
    }
}

/// What identifies a version of the shipping ledger: inode, size, change
/// time (s, ns).
pub(super) type Stamp = (u64, u64, i64, i64);

/// What the directory's shipping ledger says, as the loop reads it: at
/// the start ([`Earlier::list`]) and, while it records, on the retire
/// thread when the ledger's file changed ([`Shipped::stamp`]).
#[derive(Debug, Default)]
pub(super) struct Shipped {
    /// A ledger is there (readable or not).
    pub(super) present: bool,
    /// The recordings it says are shipped, sorted.
    pub(super) ids: Vec<u64>,
    /// Why it could not be read, when it could not (then `ids` is empty).
    pub(super) unreadable: Option<String>,
}

impl Shipped {
    /// The ledger of `dir` (see the module docs for one that does not
    /// decode).
    pub(super) fn read(dir: &Path) -> Shipped {
        let present = std::fs::symlink_metadata(dir.join(SHIP_LEDGER)).is_ok();
        match ShipLedger::read(dir) {
            Ok(l) => {
                let mut ids: Vec<u64> = l
                    .entries
                    .iter()
                    .filter_map(|e| match e {
                        crate::reader::LedgerEntry::Recording { recording_id, .. } => {
                            Some(*recording_id)
                        }
                        _ => None,
                    })
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                Shipped {
                    present,
                    ids,
                    unreadable: None,
                }
            }
            Err(e) => Shipped {
                present,
                ids: Vec::new(),
                unreadable: Some(e),
            },
        }
    }

    /// Whether recording `id` is shipped.
    pub(super) fn shipped(&self, id: u64) -> bool {
        self.ids.binary_search(&id).is_ok()
    }

    /// What identifies the ledger's current version without reading it:
    /// its inode, size and change time (`None`: none there). The ledger is
    /// replaced whole by a rename, so a new version is a new inode.
    pub(super) fn stamp(dir: &Path) -> Option<Stamp> {
        let m = std::fs::symlink_metadata(dir.join(SHIP_LEDGER)).ok()?;
        Some((m.ino(), m.size(), m.ctime(), m.ctime_nsec()))
    }
}

/// Takes the directory's budget lock (see the module docs).
fn lock_budget(dir: &Path) -> Result<File, Error> {
    let path = dir.join(BUDGET_LOCK);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| Error::io("creating the budget lock", &path, e))?;
    let locked =
        rtrec_sys::lock_exclusive(&file, false).map_err(|e| Error::io("locking", &path, e))?;
    if !locked {
        return Err(Error::Path {
            message: format!(
                "another recorder with a disk budget (--keep, --keep-files, --keep-for) is recording in '{}': recorders sharing a directory would each count the other's files against their own bound, so one budget per directory is allowed; give this recorder a directory of its own",
                dir.display()
            ),
            errno: libc::EBUSY,
        });
    }
    Ok(file)
}

/// True when a loop of `prefix` owns a loop recording named `base`: one of
/// its names ([`named_by`]), or a loop file `recover` moved back from the
/// pool under `recovered-…` (see the module docs).
fn owns(base: &str, prefix: &str) -> bool {
    named_by(base, prefix) || base.starts_with(crate::recovery::RECOVERED_PREFIX)
}

/// True when `base` is a recording name of `prefix`:
/// `PREFIX-YYYYmmddTHHMMSS.mmmZ`, with `.N` when that name was taken
/// ([`crate::file::claim_recording_base`]).
pub(crate) fn named_by(base: &str, prefix: &str) -> bool {
    let Some(rest) = base.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    let b = rest.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    let stamp = b.len() >= 20
        && digits(0..8)
        && b[8] == b'T'
        && digits(9..15)
        && b[15] == b'.'
        && digits(16..19)
        && b[19] == b'Z';
    stamp
        && match rest[20..].strip_prefix('.') {
            None => rest.len() == 20,
            Some(n) => !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()),
        }
}

/// The recordings among `found` (the directory's [`earlier_files`]) the
/// budget covers, in units the loop may retire, oldest first, and the
/// empty ones it owns (see the module docs).
fn earlier_units(found: Vec<Found>, prefix: &str, scope: KeepScope) -> (VecDeque<Unit>, Vec<Unit>) {
    // Grouped as every reader groups ([`group_files`]), from the headers.
    let by = group_files(&found, |f| {
        Some((
            None,
            f.header.recording_id,
            f.header.flags & FLAG_COPY != 0,
            f.header.index,
        ))
    });
    let mut found: Vec<Option<Found>> = found.into_iter().map(Some).collect();
    let mut groups: Vec<Vec<Found>> = by
        .iter()
        .map(|g| {
            g.iter()
                .filter_map(|&i| found[i].take())
                .collect::<Vec<Found>>()
        })
        .filter(|g| g.iter().all(|f| f.header.flags & FLAG_OPEN == 0))
        .collect();
    groups.sort_by_key(|g| {
        (
            g.iter().map(|f| f.header.created_ns).min(),
            g[0].path.clone(),
        )
    });
    let mut out = VecDeque::new();
    let mut empties = Vec::new();
    for g in groups {
        let name = base_of(&g[0].path);
        let looped = g[0].header.flags & FLAG_LOOP != 0;
        let own = looped && owns(&name, prefix);
        if !own && scope == KeepScope::Own {
            continue;
        }
        if own && g.len() == 1 && is_empty(&g[0]) {
            empties.push(unit(g, name, own));
        } else if looped {
            out.extend(g.into_iter().map(|f| unit(vec![f], name.clone(), own)));
        } else {
            out.push_back(unit(g, name, own));
        }
    }
    (out, empties)
}

/// One earlier file, as its header and metadata say.
struct Found {
    path: PathBuf,
    header: FileHeader,
    bytes: u64,
    wall_ns: u64,
}

/// The recording name of file `path` (`BASE-NNNN.rtr` gives `BASE`).
fn base_of(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    stem.rsplit_once('-')
        .map_or(stem, |(base, _)| base)
        .to_string()
}

/// True when the finished file `f` (the first of its recording) holds
/// nothing but its end frame (and a loop's claim): no record, no loss.
fn is_empty(f: &Found) -> bool {
    let Some(len) = f.header.finished_len() else {
        return false;
    };
    if f.header.index != 0 || len > EMPTY_MAX_LEN {
        return false;
    }
    let Ok(bytes) = std::fs::read(&f.path) else {
        return false;
    };
    if (bytes.len() as u64) < len || len < HEADER_LEN as u64 {
        return false;
    }
    let mut only_end = true;
    let (_, end) = crate::reader::walk_frames(&bytes, &f.header, |_, h, _| {
        only_end &= matches!(
            h.kind,
            FrameKind::End | FrameKind::Retired | FrameKind::Layout
        );
    });
    only_end && end == crate::reader::WalkEnd::EndFrame
}

/// The framed files of `dir` that no claim names, whose header decodes
/// and is not a pool slot's.
fn earlier_files(dir: &Path) -> Vec<Found> {
    let claims = claimed_bases(dir);
    let mut out = Vec::new();
    for path in recording_files(dir).unwrap_or_default() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.extension().and_then(|e| e.to_str()) != Some(FRAMED_EXT)
            || claims.iter().any(|b| belongs_to(name, b))
        {
            continue;
        }
        let Some((header, meta)) = read_header(&path) else {
            continue;
        };
        if header.flags & FLAG_SLOT != 0 {
            continue;
        }
        out.push(Found {
            path,
            header,
            bytes: meta.blocks() * 512,
            wall_ns: (meta.mtime().max(0) as u64) * 1_000_000_000 + meta.mtime_nsec() as u64,
        });
    }
    out
}

/// The header and metadata of `path`, when its header decodes (the
/// reader's [`read_header`](crate::reader::read_header)).
fn read_header(path: &Path) -> Option<(FileHeader, std::fs::Metadata)> {
    let f = std::fs::File::open(path).ok()?;
    let meta = f.metadata().ok()?;
    Some((crate::reader::read_header(&f).ok()?.ok()?, meta))
}

/// `found` as one unit of recording `name`.
fn unit(found: Vec<Found>, name: String, own: bool) -> Unit {
    let bytes: u64 = found.iter().map(|f| f.bytes).sum();
    let index = |f: &Found| f.header.index;
    let range = RetiredRange {
        recording_id: found.first().map_or(0, |f| f.header.recording_id),
        first_index: found.iter().map(index).min().unwrap_or(0),
        next_index: found.iter().map(index).max().map_or(0, |i| i + 1),
        wall_ns: 0,
    };
    Unit {
        range,
        newest_wall_ns: found.iter().map(|f| f.wall_ns).max().unwrap_or(0),
        bytes,
        files: found.into_iter().map(|f| f.path).collect(),
        name,
        own,
        shipped: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_name_of_the_prefix_is_the_prefix_a_stamp_and_a_suffix() {
        assert!(named_by("rec-20261206T172823.312Z", "rec"));
        assert!(named_by("rec-20261206T172823.312Z.3", "rec"));
        assert!(named_by("cam-a-20261206T172823.312Z", "cam-a"));
        // Another prefix that starts with this one, or a hand-made name.
        assert!(!named_by("rec-x-20261206T172823.312Z", "rec"));
        assert!(!named_by("important-20261206T172823.312Z", "rec"));
        assert!(!named_by("rec-20261206T172823.312Z.", "rec"));
        assert!(!named_by("rec-20261206T172823.312Zx", "rec"));
        assert!(!named_by("rec-2026", "rec"));
        assert!(!named_by("record-20261206T172823.312Z", "rec"));
    }

    #[test]
    fn a_loop_owns_its_names_and_the_loop_files_recover_moved_back() {
        assert!(owns("rec-20261206T172823.312Z", "rec"));
        assert!(owns("recovered-20261207T034328Z-c5e67ec9f08a67dc", "rec"));
        assert!(owns("recovered-20261207T034328Z-c5e67ec9f08a67dc", "cam"));
        assert!(!owns("cam-20261206T172823.312Z", "rec"));
    }

    #[test]
    fn the_name_of_a_file_is_its_recording_base() {
        assert_eq!(
            base_of(Path::new("/d/rec-20261206T172823.312Z.2-0036.rtr")),
            "rec-20261206T172823.312Z.2"
        );
    }
}
