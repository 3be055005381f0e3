//! The emulated device as a FUSE file system holding one file: the image
//! (`/image.ext4` under the mount point), passed through to the real image
//! file, every read, write and `fsync` served no earlier than the
//! [`DeviceModel`] says. A loop device on that file then behaves, to ext4
//! above it, like the emulated device.
//!
//! Design choices:
//! - One request at a time: the session runs on one thread, so requests
//!   queue in the kernel as on a single-queue device (eMMC without command
//!   queuing, SD).
//! - `direct_io` on open: no FUSE page cache between the loop device and
//!   the model, so every block request of the loop device reaches it.
//! - A 1 MiB `max_write`, so a loop request is not split into 128 KiB
//!   FUSE requests that would each pay the per-request latency.
//! - `fsync` of the emulated file costs a device flush but does not fsync
//!   the real image: it is a scratch image, and a real flush would add this
//!   machine's disk latency to the model's.
//! - The server never replies before the asked delay has passed; it sleeps
//!   until `start + cost` and records asked against served
//!   ([`crate::timing`]).

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
};

use crate::model::{DeviceModel, Op};
use crate::timing::{Kind, Timing};

const ROOT: u64 = 1;
const IMAGE: u64 = 2;
/// Attributes may be cached this long (only we change the file).
const TTL: Duration = Duration::from_secs(1);
/// FUSE `max_write`.
pub const MAX_WRITE: u32 = 1 << 20;

/// The file system: one file, its model, its timing.
pub struct EmuFs {
    file: File,
    name: String,
    model: DeviceModel,
    timing: Arc<Mutex<Timing>>,
    /// The device clock's start (the model's `now_ns` counts from here).
    epoch: Instant,
}

impl EmuFs {
    /// Serves `file` as `/NAME` under the mount point (`name` is the image's
    /// file name). `timing` is shared with whoever writes the stats file.
    pub fn new(file: File, name: String, model: DeviceModel, timing: Arc<Mutex<Timing>>) -> Self {
        EmuFs {
            file,
            name,
            model,
            timing,
            epoch: Instant::now(),
        }
    }

    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let (kind, perm, size, nlink, t) = if ino == ROOT {
            (FileType::Directory, 0o700, 0, 2, SystemTime::now())
        } else if ino == IMAGE {
            let m = self.file.metadata().ok()?;
            let t = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            (FileType::RegularFile, 0o600, m.size(), 1, t)
        } else {
            return None;
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind,
            perm,
            nlink,
            uid: rtrec_sys::effective_uid(),
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    /// Serves `op` (whose real I/O, if any, `io` does) no earlier than the
    /// model says, and records the timing.
    fn serve<T>(&mut self, op: Op, io: impl FnOnce(&File) -> T) -> T {
        let start = Instant::now();
        let out = io(&self.file);
        let now_ns = start.duration_since(self.epoch).as_nanos() as u64;
        let asked = self.model.cost(op, now_ns);
        let deadline = start + Duration::from_nanos(asked);
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            std::thread::sleep(deadline - now);
        }
        let served = start.elapsed().as_nanos() as u64;
        let kind = match op {
            Op::Read { bytes, .. } => Kind::Read(bytes),
            Op::Write { bytes, .. } => Kind::Write(bytes),
            Op::Flush => Kind::Flush,
        };
        let mut t = self.timing.lock().unwrap_or_else(|p| p.into_inner());
        t.record(kind, asked, served);
        t.set_gc_pauses(self.model.gc_pauses);
        out
    }
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

impl Filesystem for EmuFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        // If the kernel refuses 1 MiB, it says what it takes instead.
        if let Err(max) = config.set_max_write(MAX_WRITE) {
            let _ = config.set_max_write(max);
        }
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        match self.attr(IMAGE) {
            Some(a) if parent == ROOT && name == OsStr::new(&self.name) => reply.entry(&TTL, &a, 0),
            _ => reply.error(libc::ENOENT),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(libc::ENOENT),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        if let (IMAGE, Some(len)) = (ino, size) {
            if let Err(e) = self.file.set_len(len) {
                return reply.error(errno(&e));
            }
        }
        match self.attr(ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(libc::ENOENT),
        }
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if ino == IMAGE {
            reply.opened(0, fuser::consts::FOPEN_DIRECT_IO);
        } else {
            reply.error(libc::EISDIR);
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let offset = offset.max(0) as u64;
        let mut buf = vec![0u8; size as usize];
        let op = Op::Read {
            offset,
            bytes: u64::from(size),
        };
        match self.serve(op, |f| f.read_at(&mut buf, offset)) {
            Ok(n) => reply.data(&buf[..n]),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let offset = offset.max(0) as u64;
        let op = Op::Write {
            offset,
            bytes: data.len() as u64,
        };
        match self.serve(op, |f| f.write_all_at(data, offset)) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        self.serve(Op::Flush, |_| ());
        reply.ok();
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lo: u64, reply: ReplyEmpty) {
        reply.ok();
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        if ino != ROOT {
            return reply.error(libc::ENOTDIR);
        }
        let entries = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (IMAGE, FileType::RegularFile, self.name.as_str()),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset.max(0) as usize) {
            if reply.add(*ino, (i + 1) as i64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

/// The path of the image as seen through a mount at `mount_point`.
pub fn served_path(mount_point: &std::path::Path, name: &str) -> PathBuf {
    mount_point.join(name)
}
