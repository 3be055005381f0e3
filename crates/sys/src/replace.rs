//! Atomic replacement of a file: after a crash (of the process or of the
//! machine) the name holds either the old content or the new, never a mix
//! and never nothing — PostgreSQL's `durable_rename()`.
//!
//! The sequence, all relative to one descriptor of the directory so that a
//! directory renamed or replaced by a symlink half-way cannot redirect it:
//!
//! 1. `open(dir, O_DIRECTORY|O_NOFOLLOW)`;
//! 2. `unlinkat(dir, NAME.tmp)`: a temporary file left by a crash goes (a
//!    symlink planted there is removed itself, never followed);
//! 3. `openat(dir, NAME.tmp, O_CREAT|O_EXCL|O_NOFOLLOW)`: a fresh file of
//!    ours, never someone else's;
//! 4. write, `fsync` the file;
//! 5. `renameat(dir, NAME.tmp, dir, NAME)`;
//! 6. `fsync` the directory: a name is not durable until its directory is.
//!
//! Design choices: the temporary name is `NAME.tmp` beside the target (the
//! same filesystem, so the rename is atomic; a fixed name, so a leftover is
//! found and replaced rather than piling up). One name has one writer at a
//! time: two processes replacing the same file at once may fail with
//! `EEXIST` or `ENOENT`, never mix their contents.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use crate::dir::Dir;

/// Replaces `path` with what `write` puts in a fresh temporary file (created
/// with permission bits `mode`), durably and atomically (see the module
/// doc). The temporary file is removed when `write` or a later step fails.
///
/// # Errors
/// `InvalidInput` for a path without a file name; `ELOOP`/`ENOTDIR` when
/// its directory is a symlink; otherwise the error of the failing step
/// (`write`'s own included), and `path` is left as it was.
pub fn replace_atomic(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let (dir, name) = Dir::of_file(path)?;
    replace_atomic_in(&dir, name, mode, write)
}

/// [`replace_atomic`] of `name` in the open directory `dir`.
///
/// # Errors
/// As [`replace_atomic`].
pub fn replace_atomic_in(
    dir: &Dir,
    name: impl AsRef<Path>,
    mode: u32,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let name = name.as_ref();
    let mut tmp_name = name.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp_name = Path::new(&tmp_name);

    dir.remove_file(tmp_name)?;
    let mut file = dir.create_excl(tmp_name, mode)?;
    let result = write(&mut file)
        .and_then(|()| file.sync_all())
        .and_then(|()| dir.rename_replace(tmp_name, name));
    if let Err(e) = result {
        let _ = dir.remove_file(tmp_name);
        return Err(e);
    }
    dir.sync()
}

/// [`replace_atomic`] with `bytes` as the new content.
///
/// # Errors
/// As [`replace_atomic`].
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace_atomic(path, mode, |f| f.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn write_atomic_replaces_the_content_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, b"old").unwrap();
        write_atomic(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(!dir.path().join("a.json.tmp").exists());
    }

    #[test]
    fn a_failed_write_keeps_the_old_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, b"old").unwrap();
        let e = replace_atomic(&path, 0o600, |f| {
            f.write_all(b"half")?;
            Err(io::Error::other("stopped"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "stopped");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert!(!dir.path().join("a.tmp").exists());
    }

    #[test]
    fn a_symlink_planted_as_the_temporary_file_is_removed_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("a.tmp")).unwrap();
        write_atomic(&dir.path().join("a"), b"new", 0o640).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        let mode = std::fs::metadata(dir.path().join("a"))
            .unwrap()
            .permissions();
        assert_eq!(mode.mode() & 0o777, 0o640 & !umask());
    }

    #[test]
    fn a_directory_given_as_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(write_atomic(&link.join("a"), b"x", 0o600).is_err());
        assert!(!real.join("a").exists());
    }

    fn umask() -> u32 {
        use rustix::fs::Mode;
        let old = rustix::process::umask(Mode::empty());
        rustix::process::umask(old);
        old.as_raw_mode()
    }

    #[test]
    fn a_symlink_planted_as_the_target_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("out.json")).unwrap();
        write_atomic(&dir.path().join("out.json"), b"new", 0o644).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(dir.path().join("out.json")).unwrap(), b"new");
    }
}
