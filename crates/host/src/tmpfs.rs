//! A tmpfs of our own: a private directory `rtrec-tmpfs-<pid>-<n>` under
//! the system's temporary directory with a size-limited tmpfs mounted on
//! it, unmounted and removed when dropped. The bench's PAGECACHE-FLOOR
//! case writes there: page cache only, no filesystem journal, no
//! writeback.
//!
//! Design choice: as [`crate::loopfs`], each step is recorded in the
//! journal before it is taken (the directory, then the mount), so the
//! next rtrec process puts it back after SIGKILL; the allowlist accepts a
//! tmpfs mount only on such a directory.

use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::allowlist::TMPFS_DIR_PREFIX;
use crate::change::{Change, EntryId};
use crate::error::{io_err, Result};
use crate::journal::Journal;

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// A mounted tmpfs, unmounted and removed when dropped.
#[derive(Debug)]
pub struct TmpFs {
    journal: Journal,
    dir: PathBuf,
    ids: Vec<EntryId>,
}

impl TmpFs {
    /// Makes the directory and mounts a tmpfs of at most `size` bytes on
    /// it (mode 0700), journaling in this process's journal.
    ///
    /// # Errors
    /// Not root, or `mount` failed; what was done before is undone.
    pub fn create(size: u64) -> Result<TmpFs> {
        let journal = Journal::open()?;
        let parent = std::env::temp_dir();
        let parent = parent
            .canonicalize()
            .map_err(io_err(format_args!("resolving {}", parent.display())))?;
        let mut fs = TmpFs {
            journal,
            dir: PathBuf::new(),
            ids: Vec::new(),
        };
        loop {
            let dir = parent.join(format!(
                "{TMPFS_DIR_PREFIX}{}-{}",
                std::process::id(),
                NEXT_DIR.fetch_add(1, Ordering::Relaxed)
            ));
            let id = fs.journal.record(Change::RemoveDir { path: dir.clone() })?;
            match DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    fs.ids.push(id);
                    fs.dir = dir;
                    break;
                }
                Err(e) => {
                    // Not ours: it must not be removed.
                    fs.journal.forget(id)?;
                    if e.kind() != io::ErrorKind::AlreadyExists {
                        return Err(io_err(format_args!("creating {}", dir.display()))(e));
                    }
                }
            }
        }
        fs.ids.push(fs.journal.record(Change::Mount {
            target: fs.dir.clone(),
        })?);
        crate::loopdev::run(
            "mount",
            &[
                "-t".as_ref(),
                "tmpfs".as_ref(),
                "-o".as_ref(),
                format!("size={size},mode=0700").as_ref(),
                "tmpfs".as_ref(),
                fs.dir.as_os_str(),
            ],
        )?;
        Ok(fs)
    }

    /// The mount point: where to put files.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Unmounts and removes it now (also done on drop).
    ///
    /// # Errors
    /// The unmount failed (busy); the entry stays in the journal.
    pub fn remove(mut self) -> Result<()> {
        self.undo()
    }

    fn undo(&mut self) -> Result<()> {
        self.journal.undo_each(&mut self.ids)
    }
}

impl Drop for TmpFs {
    fn drop(&mut self) {
        let _ = self.undo();
    }
}
