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

/// A recording name unused in `dir`: `PREFIX-YYYYmmddTHHMMSSZ`, with `.N`
/// added when any file of that name exists (two recordings in the same
/// second; flight-recorder events add `-evNNNNN` to the name, so every entry
/// starting with `NAME-` counts).
pub(crate) fn recording_base(dir: &Path, cfg: &Config) -> String {
    let stamp = utc_stamp(sys::realtime_ns() / 1_000_000_000);
    let names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut n = 0;
    loop {
        let base = if n == 0 {
            format!("{}-{stamp}", cfg.prefix)
        } else {
            format!("{}-{stamp}.{n}", cfg.prefix)
        };
        let taken = |name: &String| {
            let name = name.strip_prefix('.').unwrap_or(name);
            name.strip_prefix(&base)
                .is_some_and(|rest| rest.starts_with('-'))
        };
        if !names.iter().any(taken) {
            return base;
        }
        n += 1;
    }
}

/// `YYYYmmddTHHMMSSZ` for seconds since the epoch (civil-from-days, H.
/// Hinnant): the time stamp in recording names.
pub fn utc_stamp(secs: u64) -> String {
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
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
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
        flags: 0,
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
pub(crate) fn prepare_at(
    dir: &Path,
    name: &str,
    alloc: Alloc,
    size: u64,
    framing: Framing,
    header: FileHeader,
) -> Result<OpenFile, Error> {
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    let file = sys::create_new(&tmp).map_err(|e| match e.kind() {
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
        _ => Error::io("creating", &tmp, e),
    })?;
    let r = allocate_and_name(&file, &tmp, &path, alloc, size, framing, header);
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let (header, offset) = r?;
    Ok(OpenFile {
        file: Arc::new(file),
        path,
        header,
        offset,
    })
}

fn allocate_and_name(
    file: &File,
    tmp: &Path,
    path: &Path,
    alloc: Alloc,
    size: u64,
    framing: Framing,
    mut header: FileHeader,
) -> Result<(FileHeader, u64), Error> {
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
            sys::fallocate(file, sys::FallocateMode::ExtendSize, 0, size).map_err(enospc)?
        }
        Alloc::FallocateKeepSize => {
            sys::fallocate(file, sys::FallocateMode::KeepSize, 0, size).map_err(enospc)?
        }
        Alloc::Zero => {
            sys::fallocate(file, sys::FallocateMode::ExtendSize, 0, size).map_err(enospc)?;
            let zeros = vec![0u8; 1 << 20];
            let mut off = 0;
            while off < size {
                let n = (size - off).min(zeros.len() as u64) as usize;
                sys::pwrite_all(file, &zeros[..n], off).map_err(enospc)?;
                off += n as u64;
            }
            // Commit the written extents now so the recording never waits
            // for their conversion.
            sys::fdatasync(file).map_err(|e| Error::io("zero-filling", tmp, e))?;
        }
    }
    header.created_ns = sys::realtime_ns();
    header.created_mono_ns = sys::monotonic_ns();
    let offset = if framing == Framing::Framed {
        sys::pwrite_all(file, &header.encode(), 0)
            .map_err(|e| Error::io("writing the header of", tmp, e))?;
        HEADER_LEN as u64
    } else {
        0
    };
    sys::seek_to(file, offset).map_err(|e| Error::io("seeking in", tmp, e))?;
    sys::rename_noreplace(tmp, path).map_err(|e| Error::io("naming", path, e))?;
    Ok((header, offset))
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
    if let Err(e) = sys::fallocate(&file, sys::FallocateMode::ExtendSize, 0, RESERVE_BYTES) {
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

/// Closes a file: records its valid length in the header, truncates unused
/// space and fsyncs (data and metadata), as S1 ends a recording.
///
/// A pooled file (see [`crate::pool`]) is not truncated: its header's valid
/// length is what counts, and its size stays ready for its next life.
pub(crate) fn close(f: &mut OpenFile, framing: Framing) -> io::Result<()> {
    if framing == Framing::Framed {
        f.header.valid_len = f.offset;
        sys::pwrite_all(&*f.file, &f.header.encode(), 0)?;
    }
    if f.header.flags & crate::format::FLAG_POOLED == 0 {
        sys::ftruncate(&*f.file, f.offset)?;
    }
    sys::fsync(&*f.file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamp_formats_known_dates() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(1_795_299_322), "20261121T221522Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
    }

    #[test]
    fn a_second_recording_in_the_same_second_gets_another_name_even_after_events() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config::default();
        let a = recording_base(dir.path(), &cfg);
        std::fs::write(dir.path().join(format!("{a}-ev00000-0000.rtr")), b"").unwrap();
        let b = recording_base(dir.path(), &cfg);
        assert_ne!(a, b);
        assert!(b.starts_with(&a[..a.len() - 1]), "{a} {b}");
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
