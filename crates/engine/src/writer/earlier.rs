//! The directory's earlier recordings, for a loop recording's disk budget:
//! the budget (`--keep`, `--keep-files`, `--keep-for`) holds for the
//! directory, not only for the recording that sets it, so a recorder
//! restarted after every power cut (a service) does not grow the
//! directory by a budget per restart. [`earlier_units`] lists what the
//! loop may retire before its own files, oldest first.
//!
//! Design choices:
//! - Earlier means closed: a recording with a name claim in the directory
//!   (`.BASE-name.lock`: alive, or dead and waiting for `rtrec recover`)
//!   or with a file still marked open (`FLAG_OPEN`: recover's to close)
//!   is never touched, nor is a pool slot stranded in the directory (recover's),
//!   a file whose header does not decode (`export --salvage`'s) or a raw
//!   recording (no header to group by).
//! - A loop recording's files leave one at a time, oldest first (the
//!   reader accepts a loop recording whose leading files are gone); any
//!   other recording leaves whole, so no recording is left with a hole
//!   `verify` would call damage.
//! - Earlier units count by the bytes they take on disk (allocated
//!   blocks), the loop's own finished files by their file size: the
//!   budget is the kept count times the file size.
//! - The listing reads one header per file, once, when the recording is
//!   created (never while it records).

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::file::{belongs_to, claimed_base, FRAMED_EXT};
use crate::format::{FileHeader, FLAG_LOOP, FLAG_OPEN, FLAG_SLOT};
use crate::reader::recording_files;

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
}

/// One earlier file, as its header and metadata say.
struct Found {
    path: PathBuf,
    header: FileHeader,
    bytes: u64,
    wall_ns: u64,
}

/// The earlier recordings of `dir` in units the loop may retire, oldest
/// first (see the module docs). A directory that cannot be listed has
/// none.
pub(super) fn earlier_units(dir: &Path) -> VecDeque<Unit> {
    let mut groups: HashMap<u64, Vec<Found>> = HashMap::new();
    for f in earlier_files(dir) {
        groups.entry(f.header.recording_id).or_default().push(f);
    }
    let mut groups: Vec<Vec<Found>> = groups
        .into_values()
        .filter(|g| g.iter().all(|f| f.header.flags & FLAG_OPEN == 0))
        .collect();
    for g in &mut groups {
        g.sort_by_key(|f| f.header.index);
    }
    groups.sort_by_key(|g| {
        (
            g.iter().map(|f| f.header.created_ns).min(),
            g[0].path.clone(),
        )
    });
    let mut out = VecDeque::new();
    for g in groups {
        if g[0].header.flags & FLAG_LOOP != 0 {
            out.extend(g.into_iter().map(|f| unit(vec![f])));
        } else {
            out.push_back(unit(g));
        }
    }
    out
}

/// The framed files of `dir` that no claim names, whose header decodes
/// and is not a pool slot's.
fn earlier_files(dir: &Path) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let claims: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(claimed_base)
                .map(String::from)
        })
        .collect();
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

/// `found` as one unit.
fn unit(found: Vec<Found>) -> Unit {
    let bytes: u64 = found.iter().map(|f| f.bytes).sum();
    Unit {
        newest_wall_ns: found.iter().map(|f| f.wall_ns).max().unwrap_or(0),
        bytes,
        files: found.into_iter().map(|f| f.path).collect(),
    }
}
