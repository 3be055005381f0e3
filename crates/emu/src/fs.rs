//! The emulated device as a FUSE file system holding one file: the image
//! (`/image.ext4` under the mount point), passed through to the real image
//! file, every read, write and `fsync` served no earlier than the
//! [`DeviceModel`] says. A loop device on that file then behaves, to ext4
//! above it, like the emulated device.
//!
//! Design choices:
//! - The session thread only takes requests in: it does the real I/O at
//!   once and queues the reply on the [`Device`] ([`crate::queue`]), whose
//!   one thread serves them a command at a time in the profile's order.
//!   `FUSE_ASYNC_DIO` and a large `max_background` let the kernel keep many
//!   requests in flight, so the device's queue, not the kernel's FIFO,
//!   decides what is served next.
//! - A write to the image's superblock makes the server read the ext4
//!   journal's place again ([`crate::ext4`]); writes there and flushes are
//!   [`Class::Journal`], reads [`Class::Read`], other writes
//!   [`Class::Writeback`].
//! - `direct_io` on open: no FUSE page cache between the loop device and
//!   the model, so every block request of the loop device reaches it.
//! - A 1 MiB `max_write` (and `max_pages`, FUSE ABI 7.28), so a loop
//!   request is not split into 128 KiB FUSE requests that would each pay
//!   the per-request latency; the profile's `max_request` splits them as
//!   the emulated host would.
//! - `fsync` of the emulated file costs a device flush but does not fsync
//!   the real image: it is a scratch image, and a real flush would add this
//!   machine's disk latency to the model's.
//! - The device never replies before the asked delay has passed; it sleeps
//!   until `start + cost` and records asked against served
//!   ([`crate::timing`]).

use std::ffi::OsStr;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
};

use crate::ext4;
use crate::model::{DeviceModel, Op};
use crate::queue::{Class, Device};
use crate::timing::Timing;
use crate::writelog::WriteLog;

const ROOT: u64 = 1;
const IMAGE: u64 = 2;
/// Attributes may be cached this long (only we change the file).
const TTL: Duration = Duration::from_secs(1);
/// FUSE `max_write`.
pub const MAX_WRITE: u32 = 1 << 20;
/// Requests the kernel may keep in flight to the server (FUSE's
/// `max_background`; its default, 12, would keep a journal write queued
/// in the kernel behind writeback).
pub const MAX_BACKGROUND: u16 = 256;
/// `FUSE_ASYNC_DIO`: direct I/O is submitted without waiting for each
/// request in turn.
const FUSE_ASYNC_DIO: u32 = 1 << 15;

/// The file system: one file, its model, its timing.
pub struct EmuFs {
    file: File,
    name: String,
    device: Device,
    timing: Arc<Mutex<Timing>>,
    /// Where ext4's journal lies in the image (empty: unknown).
    journal: Vec<Range<u64>>,
    /// The write log, when asked for ([`crate::writelog`]).
    log: Option<Arc<Mutex<WriteLog>>>,
}

impl EmuFs {
    /// Serves `file` as `/NAME` under the mount point (`name` is the image's
    /// file name). `timing` is shared with whoever writes the stats file.
    /// Starts the device thread, which inherits the caller's scheduling
    /// policy and priority.
    pub fn new(file: File, name: String, model: DeviceModel, timing: Arc<Mutex<Timing>>) -> Self {
        let device = Device::start(model, Arc::clone(&timing));
        let mut fs = EmuFs {
            file,
            name,
            device,
            timing,
            journal: Vec::new(),
            log: None,
        };
        fs.find_journal();
        fs
    }

    /// Logs every completed write and flush into `log` from now on.
    pub fn with_log(mut self, log: WriteLog) -> Self {
        self.log = Some(Arc::new(Mutex::new(log)));
        self
    }

    /// Reads where the image's ext4 journal lies from its superblock.
    fn find_journal(&mut self) {
        let mut sb = [0u8; ext4::SUPERBLOCK_BYTES];
        self.journal = match self.file.read_exact_at(&mut sb, ext4::SUPERBLOCK_OFFSET) {
            Ok(()) => ext4::journal_ranges(&sb),
            Err(_) => Vec::new(),
        };
        let bytes = self.journal.iter().map(|r| r.end - r.start).sum();
        self.timing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_journal_bytes(bytes);
    }

    /// The class of a write of `bytes` at `offset`.
    fn write_class(&self, offset: u64, bytes: u64) -> Class {
        if self.journal.iter().any(|r| overlaps(offset, bytes, r)) {
            Class::Journal
        } else {
            Class::Writeback
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
}

/// Whether `bytes` at `offset` touch `range`.
fn overlaps(offset: u64, bytes: u64, range: &Range<u64>) -> bool {
    offset < range.end && range.start < offset + bytes
}

/// The log, even if a panic poisoned its lock (it holds only buffers).
fn lock(log: &Mutex<WriteLog>) -> std::sync::MutexGuard<'_, WriteLog> {
    log.lock().unwrap_or_else(|p| p.into_inner())
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
        // Without these the kernel still works, one request at a time.
        let _ = config.add_capabilities(FUSE_ASYNC_DIO);
        if let Err(max) = config.set_max_background(MAX_BACKGROUND) {
            let _ = config.set_max_background(max);
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
        match self.file.read_at(&mut buf, offset) {
            Ok(n) => {
                buf.truncate(n);
                self.device
                    .submit(op, Class::Read, Box::new(move || reply.data(&buf)));
            }
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
        if let Err(e) = self.file.write_all_at(data, offset) {
            return reply.error(errno(&e));
        }
        let bytes = data.len() as u64;
        let sb = ext4::SUPERBLOCK_OFFSET;
        if overlaps(offset, bytes, &(sb..sb + ext4::SUPERBLOCK_BYTES as u64)) {
            self.find_journal();
        }
        let class = self.write_class(offset, bytes);
        let n = data.len() as u32;
        let answer: Box<dyn FnOnce() + Send> = match &self.log {
            None => Box::new(move || reply.written(n)),
            Some(log) => {
                // Copied now: FUSE's buffer is gone when the write completes.
                let (log, data) = (Arc::clone(log), data.to_vec());
                Box::new(move || {
                    lock(&log).write(offset, &data);
                    reply.written(n);
                })
            }
        };
        self.device.submit(op, class, answer);
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        let answer: Box<dyn FnOnce() + Send> = match &self.log {
            None => Box::new(move || reply.ok()),
            Some(log) => {
                let log = Arc::clone(log);
                Box::new(move || {
                    lock(&log).flush();
                    reply.ok();
                })
            }
        };
        self.device.submit(Op::Flush, Class::Journal, answer);
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
