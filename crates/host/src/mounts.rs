//! The mount table: the one parser of `/proc/self/mounts` in rtrec, the
//! mount holding a path, and unmounting (the undo of
//! [`Change::Mount`](crate::change::Change::Mount)). Knows nothing of the
//! journal.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use rtrec_sys::{errno_of, Errno};

use crate::error::{io_err, Result};

/// The mount table of this process's mount namespace.
pub const MOUNTS_FILE: &str = "/proc/self/mounts";

/// A line of `/proc/self/mounts`, its octal escapes (`\040` for a space)
/// undone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MountEntry {
    /// Device or source (`/dev/loop0`, `tmpfs`).
    pub source: String,
    /// Mount point, exactly as the kernel names it.
    pub target: PathBuf,
    /// Filesystem type (`ext4`).
    pub fstype: String,
    /// Options in effect (`rw,noatime,…`; the kernel omits defaults).
    pub options: String,
}

/// Parses the text of `/proc/self/mounts` (lines with fewer than four fields
/// are skipped).
pub fn parse_mounts(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split(' ');
            Some(MountEntry {
                source: String::from_utf8_lossy(&unescape(f.next()?)).into_owned(),
                target: PathBuf::from(OsStr::from_bytes(&unescape(f.next()?))),
                fstype: f.next()?.to_string(),
                options: f.next()?.to_string(),
            })
        })
        .collect()
}

/// Reads and parses [`MOUNTS_FILE`].
///
/// # Errors
/// The file cannot be read.
pub fn read_mounts() -> io::Result<Vec<MountEntry>> {
    Ok(parse_mounts(&fs::read_to_string(MOUNTS_FILE)?))
}

/// The mount holding `path` (canonical): the last entry whose mount point
/// is the longest prefix of it.
pub fn mount_of(path: &Path, mounts: &[MountEntry]) -> Option<MountEntry> {
    let mut best: Option<&MountEntry> = None;
    for m in mounts {
        if path.starts_with(&m.target)
            && best.is_none_or(|b| m.target.as_os_str().len() >= b.target.as_os_str().len())
        {
            best = Some(m);
        }
    }
    best.cloned()
}

/// The last (topmost) mount on exactly `mount_point`, if any.
///
/// # Errors
/// [`MOUNTS_FILE`] cannot be read.
pub fn mount_at(mount_point: &Path) -> io::Result<Option<MountEntry>> {
    Ok(read_mounts()?
        .into_iter()
        .rev()
        .find(|m| m.target == mount_point))
}

/// Undoes the octal escapes (`\040` for a space) of `/proc/self/mounts`.
fn unescape(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// Unmounts `target` (the undo of a mount). Nothing mounted there is fine. A
/// busy file system is retried for about half a second, then detached
/// lazily (`MNT_DETACH`: gone from the tree at once, freed — with its loop
/// device — when its last user closes it).
///
/// Design choice: `umount2` rather than `umount(8)`, whose errno tells "not
/// mounted" from "busy" without parsing messages.
pub(crate) fn unmount(target: &Path) -> Result<()> {
    let what = || format!("unmounting {}", target.display());
    let mut delay = Duration::from_millis(20);
    for _ in 0..5 {
        match rtrec_sys::unmount(target, false) {
            Ok(()) => return Ok(()),
            Err(e) => match errno_of(&e) {
                // Not a mount point (never mounted, or already unmounted).
                Some(Errno::INVAL) | Some(Errno::NOENT) => return Ok(()),
                Some(Errno::BUSY) | Some(Errno::INTR) => {
                    thread::sleep(delay);
                    delay *= 2;
                }
                _ => return Err(io_err(what())(e)),
            },
        }
    }
    match rtrec_sys::unmount(target, true) {
        Ok(()) => {
            eprintln!(
                "rtrec: {} was busy; detached it lazily (it goes away when its last user closes it)",
                target.display()
            );
            Ok(())
        }
        Err(e) if errno_of(&e) == Some(Errno::INVAL) => Ok(()),
        Err(e) => Err(io_err(what())(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Root, a tmpfs over /tmp, a loop mount below it, one with a space.
    const MOUNTS: &str = "/dev/vda / ext4 rw 0 0\ntmpfs /tmp tmpfs rw 0 0\n\
        /dev/loop0 /tmp/rtrec-loopfs-1-0/mnt ext4 rw 0 0\n/dev/loop1 /tmp/a\\040b ext4 rw 0 0\n";

    #[test]
    fn mount_table_escapes_are_undone() {
        assert_eq!(unescape(r"/tmp/a\040b\134c"), b"/tmp/a b\\c");
        assert_eq!(unescape(r"/x\0"), b"/x\\0");
        assert_eq!(unescape("/plain"), b"/plain");
    }

    #[test]
    fn the_mount_of_a_path_is_the_longest_prefix() {
        let m = parse_mounts(MOUNTS);
        assert_eq!(
            mount_of(Path::new("/tmp/rtrec-loopfs-1-0/mnt/x"), &m)
                .unwrap()
                .source,
            "/dev/loop0"
        );
        assert_eq!(
            mount_of(Path::new("/tmp/other"), &m).unwrap().fstype,
            "tmpfs"
        );
        assert_eq!(mount_of(Path::new("/home"), &m).unwrap().source, "/dev/vda");
        assert_eq!(
            mount_of(Path::new("/tmp/a b/c"), &m).unwrap().source,
            "/dev/loop1"
        );
    }

    #[test]
    fn the_root_mount_is_in_this_process_table() {
        let mounts = read_mounts().unwrap();
        assert!(mount_of(Path::new("/"), &mounts).is_some());
    }
}
