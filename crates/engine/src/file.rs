//! Recording files: naming, safe creation, allocation strategies and the
//! closing steps. A file is prepared under a hidden temporary name
//! (`.NAME.tmp`) and renamed into place only once its space is allocated and
//! its header written, so an interrupted preparation never leaves a file that
//! looks like a recording.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rtrec_sys as sys;

use crate::config::{Alloc, Config, Framing};
use crate::error::Error;
use crate::format::{FileHeader, HEADER_LEN};

/// A file being recorded into.
pub(crate) struct OpenFile {
    pub(crate) file: Arc<File>,
    pub(crate) path: PathBuf,
    pub(crate) header: FileHeader,
    /// Where the next byte goes (also the file position).
    pub(crate) offset: u64,
    /// The bytes the file was made for (its pre-allocated size; in append
    /// mode, the size it may grow to): the writer fills it up to this less
    /// the reserved tail. Every file of a recording has the recording's
    /// `file_size` but a recording of known length's own file beside a
    /// pool, which has exactly what the pool's files left over.
    pub(crate) size: u64,
}

/// File extension of framed recordings.
pub const FRAMED_EXT: &str = "rtr";
/// File extension of raw recordings.
pub const RAW_EXT: &str = "raw";

/// Name of file `index` of recording `base`.
pub(crate) fn file_name(base: &str, index: u32, framing: Framing) -> String {
    let ext = if framing == Framing::Raw {
        RAW_EXT
    } else {
        FRAMED_EXT
    };
    format!("{base}-{index:04}.{ext}")
}

/// The claim of a recording name: the hidden file `.BASE-name.lock`,
/// created with `O_EXCL` before any file of the recording and removed when
/// this is dropped (the recording has ended, or failed to start). While it
/// exists no other recorder, in this process or another, picks `BASE`;
/// after it, the recording's own files keep the name taken.
///
/// The claim also says the recording is alive: its owner holds an
/// exclusive `flock` on it for the recording's whole life, which the
/// kernel releases however the owner dies. `rtrec recover` closes only the
/// recordings whose claim is gone or can be locked (`crate::recovery`), and
/// removes such a dead claim; a crash leaves the hidden file behind until
/// then (its name is skipped, nothing else).
#[derive(Debug)]
pub(crate) struct NameClaim {
    dir: PathBuf,
    file: String,
    /// The claim file, locked; closed (the lock released) after `Drop`
    /// removed the name.
    _lock: File,
}

impl Drop for NameClaim {
    fn drop(&mut self) {
        if let Ok(d) = sys::Dir::open_nofollow(&self.dir) {
            let _ = d.remove_file(&self.file);
        }
    }
}

/// The claim file's name for recording `base`.
fn claim_name(base: &str) -> String {
    format!(".{base}-name.lock")
}

/// The recording base a claim file's name claims (`.BASE-name.lock`);
/// `None` for any other name.
pub(crate) fn claimed_base(name: &str) -> Option<&str> {
    name.strip_prefix('.')?
        .strip_suffix("-name.lock")
        .filter(|b| !b.is_empty())
}

/// Whether directory entry `name` belongs to recording `base`: its files
/// (`BASE-NNNN.rtr`, events `BASE-evNNNNN-NNNN.rtr`), its hidden files
/// (temporary names, the append reserve, the claim) and its sidecar.
pub(crate) fn belongs_to(name: &str, base: &str) -> bool {
    let name = name.strip_prefix('.').unwrap_or(name);
    name.strip_prefix(base)
        .is_some_and(|rest| rest.starts_with('-') || rest == ".meta.json")
}

/// Picks and claims a recording name unused in `dir`:
/// `PREFIX-YYYYmmddTHHMMSS.mmmZ` (UTC, milliseconds: fixed width, so names
/// sort by time), with `.N` added, N the next free suffix, when any file of
/// that name exists or another recorder claims it at the same moment.
///
/// Uniqueness does not rest on the clock: a name is ours only once its
/// claim file was created with `O_EXCL` (see [`NameClaim`]) and no file of
/// that name appeared before it, so any number of recorders, threads or
/// processes, may start in the same directory in the same millisecond.
///
/// # Errors
/// The directory cannot be read or the claim file cannot be created.
pub(crate) fn claim_recording_base(dir: &Path, cfg: &Config) -> Result<(String, NameClaim), Error> {
    let stamp = utc_stamp_ms(sys::realtime_ns() / 1_000_000);
    let d = sys::Dir::open_nofollow(dir).map_err(|e| Error::io("opening", dir, e))?;
    let names = |d: &sys::Dir| -> Result<Vec<String>, Error> {
        Ok(d.names()
            .map_err(|e| Error::io("listing", dir, e))?
            .into_iter()
            .filter_map(|n| n.into_string().ok())
            .collect())
    };
    let mut existing = names(&d)?;
    let mut n = 0u64;
    loop {
        let base = if n == 0 {
            format!("{}-{stamp}", cfg.prefix)
        } else {
            format!("{}-{stamp}.{n}", cfg.prefix)
        };
        n += 1;
        if existing.iter().any(|name| belongs_to(name, &base)) {
            continue;
        }
        let claim = claim_name(&base);
        let file = match d.create_excl(&claim, 0o600) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::path(
                    format!("cannot create files in '{}': {e}", dir.display()),
                    &e,
                ))
            }
        };
        // Between the create and the lock a `rtrec recover` may lock the
        // claim first and take it for a dead one: it removes it then, so
        // the name is left to it (not removed by us) and another is picked.
        let locked = sys::lock_exclusive(&file, false)
            .map_err(|e| Error::io("locking", &d.join(&claim), e))?;
        if !locked || sys::file_info(&file).map_or(true, |i| i.nlink == 0) {
            continue;
        }
        let guard = NameClaim {
            dir: dir.to_path_buf(),
            file: claim.clone(),
            _lock: file,
        };
        // A recorder that listed the directory before our claim existed,
        // and ended before we created it, left its files: look again.
        existing = names(&d)?;
        if existing
            .iter()
            .any(|name| *name != claim && belongs_to(name, &base))
        {
            continue;
        }
        return Ok((base, guard));
    }
}

/// `YYYYmmddTHHMMSSZ` for seconds since the epoch.
pub fn utc_stamp(secs: u64) -> String {
    let (y, m, d, hh, mm, ss) = civil(secs);
    format!("{y:04}{m:02}{d:02}T{hh:02}{mm:02}{ss:02}Z")
}

/// `YYYYmmddTHHMMSS.mmmZ` for milliseconds since the epoch: the time stamp
/// in recording names.
pub fn utc_stamp_ms(ms: u64) -> String {
    let (y, m, d, hh, mm, ss) = civil(ms / 1000);
    format!("{y:04}{m:02}{d:02}T{hh:02}{mm:02}{ss:02}.{:03}Z", ms % 1000)
}

/// `YYYY-mm-ddTHH:MM:SS.mmmZ` (ISO 8601, UTC, milliseconds) for
/// nanoseconds since the epoch: how `verify`, `export` and `events` show
/// wall-clock times.
pub fn utc_iso(ns: u64) -> String {
    let ms = ns / 1_000_000;
    let (y, m, d, hh, mm, ss) = civil(ms / 1000);
    format!(
        "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{:03}Z",
        ms % 1000
    )
}

/// `ns` (`CLOCK_REALTIME` ns since the epoch) as RFC 3339 UTC with
/// nanoseconds (`2026-11-27T21:18:40.414123456Z`): the exports' time
/// column, which pandas (`pd.to_datetime`) and spreadsheets read.
pub fn utc_iso_ns(ns: u64) -> String {
    let (y, m, d, hh, mm, ss) = civil(ns / 1_000_000_000);
    format!(
        "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{:09}Z",
        ns % 1_000_000_000
    )
}

/// Parses RFC 3339 UTC as [`utc_iso`] and [`utc_iso_ns`] write it
/// (`2026-11-27T21:18:40Z`, with up to 9 digits of fraction, `Z` or
/// `+00:00`): ns since the epoch, `None` for anything else (another
/// offset, a date before 1970, a field out of range).
pub fn parse_utc_iso(s: &str) -> Option<u64> {
    let s = s.strip_suffix('Z').or_else(|| s.strip_suffix("+00:00"))?;
    let (date, time) = s.split_once('T')?;
    let num = |t: &str, len: usize| -> Option<u64> {
        (t.len() == len && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    let mut d = date.split('-');
    let (y, m, day) = (num(d.next()?, 4)?, num(d.next()?, 2)?, num(d.next()?, 2)?);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.split(':');
    let (hh, mm, ss) = (num(t.next()?, 2)?, num(t.next()?, 2)?, num(t.next()?, 2)?);
    let ok = d.next().is_none() && t.next().is_none() && y >= 1970;
    if !ok || !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns = format!("{frac:0<9}").parse::<u64>().ok()?;
    // Days from civil (H. Hinnant), the inverse of `civil`.
    let (y, m, day) = (y as i64, m as i64, day as i64);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe - 719_468) as u64;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// Year, month, day, hour, minute, second of seconds since the epoch
/// (civil-from-days, H. Hinnant).
fn civil(secs: u64) -> (i64, i64, i64, u64, u64, u64) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d, rem / 3600, rem / 60 % 60, rem % 60)
}

/// Checks that `dir` is an existing, writable directory; one sentence if not.
pub(crate) fn check_dir(dir: &Path) -> Result<(), Error> {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::path(
            format!("the directory '{}' does not exist", dir.display()),
            &e,
        )),
        Err(e) => Err(Error::io("reading", dir, e)),
        Ok(m) if !m.is_dir() => Err(Error::Path {
            message: format!("'{}' is not a directory", dir.display()),
            errno: libc::ENOTDIR,
        }),
        Ok(_) => Ok(()),
    }
}

/// Creates, allocates and names file `index` of recording `base`.
pub(crate) fn prepare(
    dir: &Path,
    base: &str,
    index: u32,
    cfg: &Config,
    generation: u64,
    recording_id: u64,
) -> Result<OpenFile, Error> {
    let name = file_name(base, index, cfg.framing);
    let header = FileHeader {
        flags: cfg.header_flags() | crate::format::FLAG_OPEN,
        generation,
        created_ns: 0,
        created_mono_ns: 0,
        config_digest: cfg.digest(),
        valid_len: 0,
        recording_id,
        index,
    };
    prepare_at(dir, &name, cfg.alloc, cfg.file_size, cfg.framing, header)
}

/// Creates `dir/name` through a hidden temporary name: allocates `size`
/// bytes with `alloc`, writes `header` (framed), renames into place without
/// replacing anything. On error nothing is left behind.
///
/// Every name is relative to one descriptor of `dir` (opened without
/// following a symlink, see [`sys::Dir`]): the temporary file is created
/// with `O_EXCL|O_NOFOLLOW` and renamed with `RENAME_NOREPLACE`, so nothing
/// planted in a shared directory is ever followed or replaced.
pub(crate) fn prepare_at(
    dir: &Path,
    name: &str,
    alloc: Alloc,
    size: u64,
    framing: Framing,
    header: FileHeader,
) -> Result<OpenFile, Error> {
    let path = dir.join(name);
    let tmp_name = format!(".{name}.tmp");
    let tmp = dir.join(&tmp_name);
    let refused = |e: io::Error| match e.kind() {
        io::ErrorKind::AlreadyExists => Error::path(
            format!(
                "'{}' already exists (rtrec never follows or replaces an existing file or symlink)",
                tmp.display()
            ),
            &e,
        ),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => Error::path(
            format!("cannot create files in '{}': {}", dir.display(), e),
            &e,
        ),
        _ if e.raw_os_error() == Some(libc::ELOOP) || e.raw_os_error() == Some(libc::ENOTDIR) => {
            Error::path(
                format!(
                    "'{}' is a symlink or not a directory; rtrec writes only into real directories",
                    dir.display()
                ),
                &e,
            )
        }
        _ => Error::io("creating", &tmp, e),
    };
    let d = sys::Dir::open_nofollow(dir).map_err(refused)?;
    let file = d.create_excl(&tmp_name, 0o644).map_err(refused)?;
    let r = allocate_and_name(&file, &d, &tmp_name, name, alloc, size, framing, header);
    if r.is_err() {
        let _ = d.remove_file(&tmp_name);
    }
    let (header, offset) = r?;
    Ok(OpenFile {
        file: Arc::new(file),
        path,
        header,
        offset,
        size,
    })
}

#[allow(clippy::too_many_arguments)] // the steps of prepare_at, in its order
fn allocate_and_name(
    file: &File,
    dir: &sys::Dir,
    tmp_name: &str,
    name: &str,
    alloc: Alloc,
    size: u64,
    framing: Framing,
    mut header: FileHeader,
) -> Result<(FileHeader, u64), Error> {
    let tmp = &dir.join(tmp_name);
    let nospace = |avail: u64| Error::NoSpace {
        dir: tmp.parent().unwrap_or(tmp).to_path_buf(),
        need: size,
        avail,
    };
    // Measured before allocating: a failed fallocate may have taken what
    // was free by the time it fails.
    let avail_before = sys::available_bytes(file).unwrap_or(0);
    let enospc = |e: io::Error| {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            nospace(avail_before)
        } else {
            Error::io("pre-allocating", tmp, e)
        }
    };
    match alloc {
        Alloc::Append => {
            // Nothing is reserved, so check the planned size against free
            // space now rather than failing halfway.
            if avail_before < size {
                return Err(nospace(avail_before));
            }
        }
        // A pool fallback pre-allocates like S1 does.
        Alloc::Fallocate | Alloc::Pool => {
            reserve(file, sys::FallocateMode::ExtendSize, size).map_err(enospc)?
        }
        Alloc::FallocateKeepSize => {
            reserve(file, sys::FallocateMode::KeepSize, size).map_err(enospc)?
        }
        Alloc::Zero => {
            // The zeros below reserve the blocks where fallocate cannot.
            match sys::fallocate(file, sys::FallocateMode::ExtendSize, 0, size) {
                Err(e) if !cannot_fallocate(&e) => return Err(enospc(e)),
                _ => {}
            }
            write_zeros(file, size).map_err(enospc)?;
            // Commit the written extents now so the recording never waits
            // for their conversion.
            sys::fdatasync(file).map_err(|e| Error::io("zero-filling", tmp, e))?;
        }
    }
    header.created_ns = sys::realtime_ns();
    header.created_mono_ns = sys::monotonic_ns();
    let offset = if framing.has_frames() {
        sys::pwrite_all(file, &header.encode(), 0)
            .map_err(|e| Error::io("writing the header of", tmp, e))?;
        HEADER_LEN as u64
    } else {
        0
    };
    sys::seek_to(file, offset).map_err(|e| Error::io("seeking in", tmp, e))?;
    // As PostgreSQL's durable_rename: the header is on storage before the
    // name appears, so a power cut never leaves a `.rtr` name over a file
    // without its header (the directory is synced before the first durable
    // point in the file: docs/durability.md, "New files and their names").
    if framing.has_frames() {
        sys::fdatasync(file).map_err(|e| Error::io("syncing the header of", tmp, e))?;
    }
    dir.rename_noreplace(tmp_name, dir, name)
        .map_err(|e| Error::io("naming", &dir.join(name), e))?;
    Ok((header, offset))
}

/// True when `fallocate` failed because the file system cannot
/// pre-allocate at all (`EOPNOTSUPP`: FAT over FUSE, many FUSE and some
/// network file systems), not for want of space.
fn cannot_fallocate(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EOPNOTSUPP)
}

/// Writes `size` zero bytes from the start of `file`, 1 MiB at a time.
fn write_zeros(file: &File, size: u64) -> io::Result<()> {
    let zeros = vec![0u8; 1 << 20];
    let mut off = 0;
    while off < size {
        let n = (size - off).min(zeros.len() as u64) as usize;
        sys::pwrite_all(file, &zeros[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

/// Reserves the first `size` bytes of `file` with `fallocate(mode)`.
///
/// Design choice: where the file system cannot pre-allocate at all
/// ([`cannot_fallocate`]), zeros are written and synced instead, as glibc's
/// `posix_fallocate` does, so the recording runs on such a card (a FAT
/// card through FUSE) rather than refusing it: the blocks are reserved the
/// only way that file system offers, at the cost of writing them once (a
/// `--alloc zero` file's cost; Linux's own vfat zero-fills a fallocate
/// that extends the size too). The file's size then covers the reserve
/// under `KeepSize` too: a file's header, not its size, says what it holds,
/// and [`close`] truncates. [`fallocate_note`] says so once per recording.
fn reserve(file: &File, mode: sys::FallocateMode, size: u64) -> io::Result<()> {
    match sys::fallocate(file, mode, 0, size) {
        Err(e) if cannot_fallocate(&e) => {
            write_zeros(file, size)?;
            sys::fdatasync(file)
        }
        r => r,
    }
}

/// File systems whose `fallocate` is known to work (`statfs` magic):
/// ext4, XFS, btrfs, tmpfs and f2fs. Design choice: on them no probe runs,
/// so a recording there makes no system call it does not need (the pool's
/// strace test counts `fallocate`s).
const FALLOCATES: [i64; 5] = [
    sys::EXT4_SUPER_MAGIC,
    0x5846_5342,
    0x9123_683E,
    0x0102_1994,
    0xF2F5_2010,
];

/// The warning a recording in `dir` gives when its file system cannot
/// pre-allocate (`fallocate` of a hidden probe file answers `EOPNOTSUPP`;
/// probed only on file systems not in [`FALLOCATES`]): each file is then
/// reserved by writing zeros ([`reserve`]). `None` where it can, or where
/// the probe itself fails (the recording's own steps say why in their own
/// words).
pub(crate) fn fallocate_note(dir: &Path) -> Option<String> {
    let magic = File::open(dir).and_then(sys::fs_magic).ok()?;
    if FALLOCATES.contains(&magic) {
        return None;
    }
    let probe = dir.join(format!(".rtrec-fallocate-probe-{}.tmp", std::process::id()));
    let file = sys::create_new(&probe).ok()?;
    let r = sys::fallocate(&file, sys::FallocateMode::KeepSize, 0, 4096);
    drop(file);
    let _ = std::fs::remove_file(&probe);
    match r {
        Err(e) if cannot_fallocate(&e) => Some(format!(
            "'{}' is on a file system that cannot pre-allocate (fallocate: {e}; FAT through FUSE is one): rtrec writes zeros to reserve each file instead, a file's size in writes before it is used; `rtrec pool prepare` beforehand takes that cost off the recording",
            dir.display()
        )),
        _ => None,
    }
}

/// Bytes of the append-mode reserve file: room for the loss and end frames
/// (`RESERVED_BYTES`), the raw sidecar and a directory block, with margin.
pub(crate) const RESERVE_BYTES: u64 = 256 * 1024;

/// Append mode keeps no room inside its files, so a recording keeps it in
/// a hidden file beside them, `.BASE-reserve.tmp`, allocated here; the
/// writer deletes it when the disk is full, and its blocks take the closing
/// frames. Too little space for it is a `NoSpace` error before recording.
pub(crate) fn create_reserve(dir: &Path, base: &str) -> Result<PathBuf, Error> {
    let path = dir.join(format!(".{base}-reserve.tmp"));
    let file = sys::create_new(&path).map_err(|e| Error::io("creating", &path, e))?;
    let avail = sys::available_bytes(&file).unwrap_or(0);
    if let Err(e) = reserve(&file, sys::FallocateMode::ExtendSize, RESERVE_BYTES) {
        let _ = std::fs::remove_file(&path);
        return Err(if e.raw_os_error() == Some(libc::ENOSPC) {
            Error::NoSpace {
                dir: dir.to_path_buf(),
                need: RESERVE_BYTES,
                avail,
            }
        } else {
            Error::io("pre-allocating", &path, e)
        });
    }
    Ok(path)
}

/// Closes a file: syncs its frames, then records its valid length in the
/// header, truncates unused space and syncs again (the data and the size;
/// S1 ends a recording with `fsync`, see the comment at the last sync).
///
/// A pooled file (see [`crate::pool`]) is not truncated: its header's valid
/// length is what counts, and its size stays ready for its next life; nor
/// is one the caller keeps `whole` (a loop's own file of the pool's size,
/// which its retirement may recycle into the pool).
pub(crate) fn close(f: &mut OpenFile, framing: Framing, whole: bool) -> io::Result<()> {
    if framing.has_frames() {
        // The frames the valid length points to are on storage before the
        // header says so (with their size or extent conversion, which
        // fdatasync includes): a power cut in between leaves an unfinished
        // file, never a header promising bytes that are not there.
        sys::fdatasync(&*f.file)?;
        f.header.valid_len = f.offset;
        f.header.flags &= !crate::format::FLAG_OPEN;
        sys::pwrite_all(&*f.file, &f.header.encode(), 0)?;
    }
    // Only a file longer than its data is cut: an appended file already
    // ends there, and some file systems refuse a truncate that changes
    // nothing (FAT through FUSE answers EPERM, as to one that extends).
    if f.header.flags & crate::format::FLAG_POOLED == 0
        && !whole
        && f.file.metadata()?.len() != f.offset
    {
        sys::ftruncate(&*f.file, f.offset)?;
    }
    // `fdatasync`, not `fsync`: the header is data and a truncated size is
    // the metadata a reader needs, which `fdatasync` includes; the
    // timestamps are all `fsync` adds, and under `lazytime` (the mount
    // option docs/durability.md recommends) it then writes them: a journal
    // commit the writer waited for at every file switch. Traced on ext4,
    // that commit now goes with the flush thread's directory sync, which
    // makes the next file's name durable before any durable point in it:
    // the device does as much, the writer waits less (`docs/bench.md`,
    // "`hdd-5400`: what a durable point and a file switch cost").
    sys::fdatasync(&*f.file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_parse_back_to_the_ns_they_were_written_from() {
        for ns in [
            0,
            1_796_600_814_550_593_733,
            951_782_400_123_000_000,
            4_102_444_799_999_999_999,
        ] {
            assert_eq!(
                parse_utc_iso(&utc_iso_ns(ns)),
                Some(ns),
                "{}",
                utc_iso_ns(ns)
            );
            assert_eq!(
                parse_utc_iso(&utc_iso(ns)),
                Some(ns / 1_000_000 * 1_000_000)
            );
        }
        assert_eq!(
            parse_utc_iso("1970-01-01T00:00:01+00:00"),
            Some(1_000_000_000)
        );
        for bad in [
            "2026-13-01T00:00:00Z",
            "2026-01-01T00:00:00",
            "2026-01-01 00:00:00Z",
            "x",
            "2026-01-01T00:00:00.1234567890Z",
            "2026-01-01T00:00:00+01:00",
        ] {
            assert_eq!(parse_utc_iso(bad), None, "{bad}");
        }
    }

    #[test]
    fn utc_stamp_formats_known_dates() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(1_795_299_322), "20261121T221522Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_stamp_ms(1_795_299_322_045), "20261121T221522.045Z");
        assert_eq!(
            utc_iso(1_795_299_322_045_999_999),
            "2026-11-21T22:15:22.045Z"
        );
    }

    #[test]
    fn names_of_the_same_second_sort_by_millisecond() {
        let a = utc_stamp_ms(1_795_299_322_045);
        let b = utc_stamp_ms(1_795_299_322_900);
        let c = utc_stamp_ms(1_795_299_323_001);
        assert!(a < b && b < c, "{a} {b} {c}");
    }

    #[test]
    fn a_second_recording_in_the_same_second_gets_another_name_even_after_events() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config::default();
        let (a, claim) = claim_recording_base(dir.path(), &cfg).unwrap();
        std::fs::write(dir.path().join(format!("{a}-ev00000-0000.rtr")), b"").unwrap();
        drop(claim);
        let (b, _claim) = claim_recording_base(dir.path(), &cfg).unwrap();
        // The same millisecond gets `.1`, a later one a later stamp: both
        // sort after the first.
        assert!(b > a, "{a} {b}");
    }

    #[test]
    fn recorders_starting_together_claim_different_names_and_leave_no_claim() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config::default();
        let bases: Vec<(String, NameClaim)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| claim_recording_base(dir.path(), &cfg).unwrap()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut names: Vec<&str> = bases.iter().map(|(b, _)| b.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 8, "{names:?}");
        // A live claim keeps its name taken, and its lock says its owner
        // lives (`rtrec recover` cannot take it); dropped, it leaves nothing.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 8);
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            assert!(claimed_base(&name).is_some(), "{name}");
            let f = File::open(dir.path().join(&name)).unwrap();
            assert!(
                !sys::lock_exclusive(&f, false).unwrap(),
                "{name} is not locked"
            );
        }
        drop(bases);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_failed_preparation_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            file_size: u64::MAX / 4,
            alloc: Alloc::Fallocate,
            ..Config::default()
        };
        let e = prepare(dir.path(), "x", 0, &cfg, 1, 1).err().unwrap();
        assert!(
            e.to_string().contains("space") || e.to_string().contains("pre-allocating"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
