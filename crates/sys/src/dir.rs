//! Directory handles: every file rtrec creates, opens for writing or renames
//! is named relative to one descriptor of its directory, so that nothing
//! planted in a directory others can write (a symlink, a hard link, a
//! directory swapped for a symlink half-way) can redirect a write by root to
//! a file elsewhere.
//!
//! The rules, each one system call:
//!
//! - a directory is opened with `O_DIRECTORY|O_NOFOLLOW`: a symlink in its
//!   place is refused (`ELOOP`/`ENOTDIR`), never followed;
//! - a file is created with `O_CREAT|O_EXCL|O_NOFOLLOW`: a fresh file of
//!   ours, never someone else's, never through a symlink;
//! - an existing file is opened with `O_NOFOLLOW`, and [`FileInfo`] (from
//!   `fstat` of the open descriptor, not of the name) tells its owner and
//!   link count, so a caller can refuse a file that is also linked elsewhere;
//! - a name is moved with `renameat2`: `RENAME_NOREPLACE` where nothing may
//!   be replaced, `RENAME_EXCHANGE` to swap two names atomically, plain
//!   `renameat` only to replace a name in the same directory (which replaces
//!   the entry, and never writes through a symlink there).
//!
//! Design choice: only the last component of a path is protected. The
//! components above it are the ones the user named; a symlink there is
//! theirs to have. What others can plant is a name *inside* a directory we
//! write to, and every such name goes through a [`Dir`].

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, CWD};

/// An open directory, named relative to which files are created, opened and
/// renamed (see the module doc).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// What `fstat` says of an open file, as far as the safety checks need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInfo {
    /// Owner (`st_uid`).
    pub uid: u32,
    /// Hard links (`st_nlink`): more than one means the same file is
    /// reachable under another name, perhaps outside our directory.
    pub nlink: u64,
    /// Permission bits (`st_mode & 07777`).
    pub mode: u32,
    /// A regular file.
    pub is_file: bool,
    /// A directory.
    pub is_dir: bool,
    /// Size in bytes.
    pub size: u64,
}

/// `fstat(fd)`, reduced to [`FileInfo`]. See fstat(2).
///
/// # Errors
/// The errno of `fstat`.
pub fn file_info(fd: impl AsFd) -> io::Result<FileInfo> {
    Ok(FileInfo::from(&rustix::fs::fstat(fd)?))
}

impl From<&rustix::fs::Stat> for FileInfo {
    fn from(st: &rustix::fs::Stat) -> FileInfo {
        let kind = FileType::from_raw_mode(st.st_mode);
        FileInfo {
            uid: st.st_uid,
            #[allow(clippy::useless_conversion)] // its width differs per architecture
            nlink: u64::from(st.st_nlink),
            mode: st.st_mode & 0o7777,
            is_file: kind == FileType::RegularFile,
            is_dir: kind == FileType::Directory,
            size: st.st_size as u64,
        }
    }
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

impl Dir {
    /// `open(path, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC)`: the directory
    /// `path`, refusing a symlink in its place. See open(2).
    ///
    /// # Errors
    /// `ELOOP` or `ENOTDIR` when `path` is a symlink or not a directory; the
    /// errno of `open` otherwise.
    pub fn open_nofollow(path: &Path) -> io::Result<Dir> {
        let fd = rustix::fs::openat(CWD, path, dir_flags(), Mode::empty())?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The directory holding `path` (`.` for a bare name), opened with
    /// [`open_nofollow`](Dir::open_nofollow), and the last component of
    /// `path`.
    ///
    /// # Errors
    /// `InvalidInput` for a path without a file name (`/`, `..`); as
    /// [`open_nofollow`](Dir::open_nofollow) otherwise.
    pub fn of_file(path: &Path) -> io::Result<(Dir, &OsStr)> {
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{}' names no file", path.display()),
            )
        })?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        Ok((Dir::open_nofollow(parent)?, name))
    }

    /// The path this directory was opened by, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `path()/name`, for messages.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }

    /// `openat(dir, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC)`: a
    /// subdirectory, refusing a symlink in its place.
    ///
    /// # Errors
    /// As [`open_nofollow`](Dir::open_nofollow).
    pub fn open_dir(&self, name: impl AsRef<Path>) -> io::Result<Dir> {
        let name = name.as_ref();
        let fd = rustix::fs::openat(&self.fd, name, dir_flags(), Mode::empty())?;
        Ok(Dir {
            fd,
            path: self.path.join(name),
        })
    }

    /// `mkdirat(dir, name, mode)`. See mkdir(2).
    ///
    /// # Errors
    /// `AlreadyExists` for an existing name (a symlink included); the errno
    /// of `mkdirat` otherwise.
    pub fn create_dir(&self, name: impl AsRef<Path>, mode: u32) -> io::Result<()> {
        rustix::fs::mkdirat(&self.fd, name.as_ref(), Mode::from_raw_mode(mode))?;
        Ok(())
    }

    /// `openat(dir, name, O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode)`:
    /// a new file, never an existing one or one reached through a symlink.
    ///
    /// # Errors
    /// `AlreadyExists` for an existing name (a symlink included); the errno
    /// of `openat` otherwise.
    pub fn create_excl(&self, name: impl AsRef<Path>, mode: u32) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name.as_ref(),
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        Ok(File::from(fd))
    }

    /// `openat(dir, name, O_RDWR|O_NOFOLLOW|O_CLOEXEC)` of an existing
    /// regular file (for reading only when `write` is false).
    ///
    /// # Errors
    /// `ELOOP` for a symlink; `InvalidInput` for anything but a regular file
    /// (a FIFO is opened without blocking, then refused); the errno of
    /// `openat` otherwise.
    pub fn open_existing_nofollow(&self, name: impl AsRef<Path>, write: bool) -> io::Result<File> {
        let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
        let fd = rustix::fs::openat(
            &self.fd,
            name.as_ref(),
            access | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        )?;
        if !file_info(&fd)?.is_file {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("'{}' is not a regular file", self.join(name).display()),
            ));
        }
        // Back to blocking I/O: NONBLOCK was only there so that opening a
        // planted FIFO cannot hang.
        rustix::fs::fcntl_setfl(&fd, access)?;
        Ok(File::from(fd))
    }

    /// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what `name` is, without
    /// following a symlink. See stat(2).
    ///
    /// # Errors
    /// The errno of `fstatat`.
    pub fn stat(&self, name: impl AsRef<Path>) -> io::Result<FileInfo> {
        let st = rustix::fs::statat(&self.fd, name.as_ref(), AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(FileInfo::from(&st))
    }

    /// `fstat` of the directory itself.
    ///
    /// # Errors
    /// The errno of `fstat`.
    pub fn info(&self) -> io::Result<FileInfo> {
        file_info(&self.fd)
    }

    /// `unlinkat(dir, name, 0)`: removes a name (a symlink itself, never its
    /// target). A name already gone is not an error.
    ///
    /// # Errors
    /// The errno of `unlinkat` other than `ENOENT`.
    pub fn remove_file(&self, name: impl AsRef<Path>) -> io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, name.as_ref(), AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// `renameat2(dir, from, to_dir, to, RENAME_NOREPLACE)`: moves a name,
    /// never replacing an existing one. See rename(2).
    ///
    /// Design choice: a file system without the flag (`EINVAL`: FUSE file
    /// systems that implement only the old rename, as FAT through FUSE)
    /// gets a look at `to` (`fstatat`, no symlink followed) and a plain
    /// `renameat`, as gnulib's `renameatu` does without the flag. The gap
    /// between the look and the move is open only to a process that
    /// creates that very name: rtrec's own names are claimed first (a
    /// recording's name claim, the pool's lock), so no other rtrec does.
    ///
    /// # Errors
    /// `AlreadyExists` when `to` exists; the errno of `renameat2` otherwise.
    pub fn rename_noreplace(
        &self,
        from: impl AsRef<Path>,
        to_dir: &Dir,
        to: impl AsRef<Path>,
    ) -> io::Result<()> {
        rename_noreplace_at(&self.fd, from.as_ref(), &to_dir.fd, to.as_ref())
    }

    /// `renameat2(dir, a, dir, b, RENAME_EXCHANGE)`: swaps two names
    /// atomically; both must exist. See rename(2).
    ///
    /// # Errors
    /// `NotFound` when either is missing; the errno of `renameat2` otherwise.
    pub fn exchange(&self, a: impl AsRef<Path>, b: impl AsRef<Path>) -> io::Result<()> {
        rustix::fs::renameat_with(
            &self.fd,
            a.as_ref(),
            &self.fd,
            b.as_ref(),
            RenameFlags::EXCHANGE,
        )?;
        Ok(())
    }

    /// `renameat(dir, from, dir, to)`: moves a name over another in this
    /// directory. Replaces the entry `to` (whatever it is, a symlink
    /// included) and writes through nothing. See rename(2).
    ///
    /// # Errors
    /// The errno of `renameat`.
    pub fn rename_replace(&self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
        rustix::fs::renameat(&self.fd, from.as_ref(), &self.fd, to.as_ref())?;
        Ok(())
    }

    /// `fsync(dir)`: makes the names created, renamed and removed in it
    /// durable.
    ///
    /// # Errors
    /// The errno of `fsync`.
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(&self.fd)?;
        Ok(())
    }

    /// The names in the directory (without `.` and `..`), in no order.
    ///
    /// # Errors
    /// The errno of `openat` or `getdents64`.
    pub fn names(&self) -> io::Result<Vec<std::ffi::OsString>> {
        use std::os::unix::ffi::OsStrExt;
        let fd = rustix::fs::openat(&self.fd, ".", dir_flags(), Mode::empty())?;
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                out.push(OsStr::from_bytes(name).to_os_string());
            }
        }
        Ok(out)
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// `renameat2(from_dir, from, to_dir, to, RENAME_NOREPLACE)`, with
/// [`Dir::rename_noreplace`]'s fallback (a look at `to`, then a plain
/// `renameat`) where the file system answers `EINVAL`: the one
/// implementation behind that method and [`crate::rename_noreplace`].
pub(crate) fn rename_noreplace_at(
    from_dir: impl AsFd,
    from: &Path,
    to_dir: impl AsFd,
    to: &Path,
) -> io::Result<()> {
    match rustix::fs::renameat_with(&from_dir, from, &to_dir, to, RenameFlags::NOREPLACE) {
        Err(rustix::io::Errno::INVAL) => {}
        r => return Ok(r?),
    }
    match rustix::fs::statat(&to_dir, to, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => return Err(io::Error::from_raw_os_error(libc::EEXIST)),
        Err(rustix::io::Errno::NOENT) => {}
        Err(e) => return Err(e.into()),
    }
    rustix::fs::renameat(&from_dir, from, &to_dir, to)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_symlink_in_place_of_a_directory_is_refused() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("real")).unwrap();
        symlink(t.path().join("real"), t.path().join("link")).unwrap();
        assert!(Dir::open_nofollow(&t.path().join("link")).is_err());
        let d = Dir::open_nofollow(t.path()).unwrap();
        assert!(d.open_dir("link").is_err());
        assert!(d.open_dir("real").unwrap().info().unwrap().is_dir);
    }

    #[test]
    fn create_excl_refuses_a_planted_symlink_and_leaves_its_target_alone() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        symlink(&victim, t.path().join("out")).unwrap();
        let d = Dir::open_nofollow(t.path()).unwrap();
        let e = d.create_excl("out", 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(d.open_existing_nofollow("out", true).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn a_second_hard_link_shows_in_the_link_count() {
        let t = tempfile::tempdir().unwrap();
        let d = Dir::open_nofollow(t.path()).unwrap();
        drop(d.create_excl("a", 0o600).unwrap());
        assert_eq!(d.stat("a").unwrap().nlink, 1);
        std::fs::hard_link(t.path().join("a"), t.path().join("b")).unwrap();
        let f = d.open_existing_nofollow("a", false).unwrap();
        assert_eq!(file_info(&f).unwrap().nlink, 2);
    }

    #[test]
    fn a_planted_fifo_is_refused_without_hanging() {
        let t = tempfile::tempdir().unwrap();
        rustix::fs::mknodat(
            CWD,
            t.path().join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let d = Dir::open_nofollow(t.path()).unwrap();
        assert!(d.open_existing_nofollow("fifo", false).is_err());
    }

    #[test]
    fn renames_never_replace_unless_asked_and_exchange_swaps() {
        let t = tempfile::tempdir().unwrap();
        let d = Dir::open_nofollow(t.path()).unwrap();
        std::fs::write(t.path().join("a"), b"a").unwrap();
        std::fs::write(t.path().join("b"), b"b").unwrap();
        let e = d.rename_noreplace("a", &d, "b").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        d.exchange("a", "b").unwrap();
        assert_eq!(std::fs::read(t.path().join("a")).unwrap(), b"b");
        d.rename_replace("a", "b").unwrap();
        assert_eq!(std::fs::read(t.path().join("b")).unwrap(), b"b");
        let mut names = d.names().unwrap();
        names.sort();
        assert_eq!(names, vec![std::ffi::OsString::from("b")]);
    }
}
