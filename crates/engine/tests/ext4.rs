//! The recorder on a real ext4 (a loop-mounted image, mounted as the study
//! mounts its recording partition): every configuration S1 compares records
//! a complete file; the reserving strategies really reserve the whole file
//! before the first record; the file is cut to its valid length at the end;
//! and a pre-allocation larger than the filesystem fails at `create` with
//! `Error::NoSpace`, leaving nothing behind. Needs root and a loop device;
//! skipped (with the reason) otherwise.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rtrec_engine::format::FileHeader;
use rtrec_engine::reader::{recording_files, verify_file, FileStatus};
use rtrec_engine::{Alloc, Config, Error, Flush, Io, Mode, Recorder, DEFAULT_IO_BLOCK, MIB};
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};

const FILE_SIZE: u64 = 8 * MIB;
const RECORD: usize = 4096;
const RECORDS: u64 = 1000;

/// Bytes of disk the file holds (`st_blocks` × 512).
fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// The one recording file in `dir` (hidden files and the pool excluded).
fn the_file(dir: &Path) -> PathBuf {
    let files = recording_files(dir).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

/// Every file below `dir`, hidden ones and the pool's included.
fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(all_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn every_s1_configuration_records_a_complete_file_on_ext4() {
    if !require_privileged("every_s1_configuration_records_a_complete_file_on_ext4") {
        return;
    }
    let fs = LoopFs::create(&LoopFsOptions::default()).unwrap();
    // The O_DIRECT back-end with every allocation that reserves its blocks,
    // and io_uring, direct and over the page cache, with small buffers so
    // that several writes are in flight (depth 4) and buffers are reused.
    let configurations = [
        (Alloc::Append, Flush::Fdatasync, Io::Buffered),
        (Alloc::Fallocate, Flush::Sfr, Io::Buffered),
        (Alloc::Zero, Flush::Window, Io::Buffered),
        (Alloc::Pool, Flush::Window, Io::Buffered),
        (Alloc::Fallocate, Flush::Window, Io::Direct),
        (Alloc::Zero, Flush::Window, Io::Direct),
        (Alloc::Pool, Flush::Window, Io::Direct),
        (Alloc::Zero, Flush::Window, Io::Uring),
        (Alloc::Pool, Flush::Window, Io::Uring),
        (Alloc::Append, Flush::Fdatasync, Io::UringBuffered),
        (Alloc::Pool, Flush::Window, Io::UringBuffered),
    ];
    for mode in [Mode::Ring, Mode::Inline] {
        for (alloc, flush, io) in configurations {
            let what = format!("{mode} {alloc} {flush} {io}");
            let dir = fs.path().join(format!("{mode}-{alloc}-{flush}-{io}"));
            std::fs::create_dir(&dir).unwrap();
            let test = "every_s1_configuration_records_a_complete_file_on_ext4";
            if !rtrec_host::features::require_io(test, io.name(), &dir) {
                continue;
            }
            let cfg = Config {
                mode,
                alloc,
                flush,
                io,
                flush_every: 256 * 1024,
                file_size: FILE_SIZE,
                max_record: RECORD,
                // The whole recording fits: no drop however the writer is
                // scheduled.
                ring_bytes: 16 * MIB as usize,
                writer_poll_us: 100,
                io_block: if io.is_uring() {
                    64 * 1024
                } else {
                    DEFAULT_IO_BLOCK
                },
                io_depth: 4,
                ..Config::default()
            };
            if alloc == Alloc::Pool {
                // A pool file prepared beforehand, as `rtrec pool prepare`
                // leaves it (without one the first file is fallocated, a
                // counted fallback).
                let pool = rtrec_engine::pool::Pool::open_or_create(&dir, FILE_SIZE, 1).unwrap();
                assert_eq!(pool.prepare(|_, _| {}).unwrap(), 1, "{what}");
            }
            let mut rec = Recorder::create(&dir, cfg).unwrap();

            // Before the first record: the whole file is reserved on disk
            // (ext4 counts unwritten extents in st_blocks), or, appending,
            // nothing is.
            let file = the_file(&dir);
            let reserved = allocated(&file);
            match alloc {
                Alloc::Append => assert!(
                    reserved < FILE_SIZE / 2,
                    "{what}: {reserved} bytes allocated"
                ),
                _ => assert!(
                    reserved >= FILE_SIZE,
                    "{what}: only {reserved} of {FILE_SIZE} bytes allocated"
                ),
            }

            let mut buf = vec![0u8; RECORD];
            for i in 0..RECORDS {
                buf[..8].copy_from_slice(&i.to_le_bytes());
                rec.record(&buf)
                    .unwrap_or_else(|e| panic!("{what}: record {i}: {e}"));
            }
            let s = rec.finish().unwrap();
            assert_eq!(
                (s.records_written, s.records_dropped),
                (RECORDS, 0),
                "{what}"
            );
            assert!(s.error.is_none(), "{what}: {:?}", s.error);
            assert_eq!(s.files, vec![file.clone()], "{what}");

            let r = verify_file(&file).unwrap();
            assert_eq!(r.status, FileStatus::Complete, "{what}: {:?}", r.notes);
            assert_eq!(
                (r.records, r.first_seq, r.next_seq),
                (RECORDS, Some(0), Some(RECORDS)),
                "{what}"
            );
            let header = FileHeader::decode(&std::fs::read(&file).unwrap()).unwrap();
            assert_eq!(header.valid_len, r.valid_len, "{what}");
            let len = std::fs::metadata(&file).unwrap().len();
            if alloc == Alloc::Pool {
                // A pool file keeps its size for its next life; the header
                // says where the data end.
                assert_eq!(len, FILE_SIZE, "{what}");
            } else {
                // Cut to the valid length, and the space after it given back.
                assert_eq!(len, r.valid_len, "{what}");
                assert!(
                    allocated(&file) < FILE_SIZE,
                    "{what}: {} bytes still allocated",
                    allocated(&file)
                );
            }
        }
    }
    fs.remove().unwrap();
}

/// A 64 MiB filesystem.
fn small_fs() -> LoopFs {
    LoopFs::create(&LoopFsOptions {
        size: 64 * MIB,
        journal_mib: 4,
        ..LoopFsOptions::default()
    })
    .unwrap()
}

fn too_large(alloc: Alloc, file_size: u64) -> Config {
    Config {
        alloc,
        file_size,
        max_record: RECORD,
        ..Config::default()
    }
}

#[test]
fn a_preallocation_larger_than_the_filesystem_fails_at_create_with_no_space_and_leaves_no_file() {
    if !require_privileged(
        "a_preallocation_larger_than_the_filesystem_fails_at_create_with_no_space_and_leaves_no_file",
    ) {
        return;
    }
    let fs = small_fs();
    for (alloc, _) in Alloc::ALL {
        for mode in [Mode::Ring, Mode::Inline] {
            let what = format!("{mode} {alloc}");
            let dir = fs.path().join(format!("{mode}-{alloc}"));
            std::fs::create_dir(&dir).unwrap();
            let cfg = Config {
                mode,
                ..too_large(*alloc, 200 * MIB)
            };
            match Recorder::create(&dir, cfg) {
                Err(Error::NoSpace { need, avail, .. }) => {
                    assert_eq!(need, 200 * MIB, "{what}");
                    assert!(avail < need, "{what}: {avail}");
                }
                Err(e) => panic!("{what}: expected NoSpace, got {e:?}"),
                Ok(_) => panic!("{what}: a 200 MiB file was created on a 64 MiB filesystem"),
            }
            // Nothing that is, or is becoming, a file with data: no
            // recording, no hidden preparation, no pool slot. (The pool's
            // description, pool.json, and its empty lock file may stay.)
            let left: Vec<PathBuf> = all_files(&dir)
                .into_iter()
                .filter(|p| !p.ends_with(".pool/pool.json") && !p.ends_with(".pool/lock"))
                .collect();
            assert!(left.is_empty(), "{what}: left behind: {left:?}");
            // And the space is free again.
            assert!(
                free_bytes(&dir) > 40 * MIB,
                "{what}: {} bytes free",
                free_bytes(&dir)
            );
        }
    }
    fs.remove().unwrap();
}

/// Free bytes on the filesystem of `dir`, as an unprivileged writer sees them.
/// Free bytes of `dir`'s filesystem once its journal has committed: ext4
/// returns the blocks of an unlinked file (a failed pre-allocation's) only
/// at the commit of the transaction that freed them, so without the
/// `syncfs` a loaded machine can still count them as used.
fn free_bytes(dir: &Path) -> u64 {
    let d = std::fs::File::open(dir).unwrap();
    assert_eq!(
        // SAFETY: a valid descriptor of our own.
        unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&d)) },
        0
    );
    rtrec_sys::available_bytes(d).unwrap()
}

#[test]
fn the_no_space_error_reports_the_space_that_was_free() {
    if !require_privileged("the_no_space_error_reports_the_space_that_was_free") {
        return;
    }
    let fs = small_fs();
    for (alloc, _) in Alloc::ALL {
        let dir = fs.path().join(alloc.name());
        std::fs::create_dir(&dir).unwrap();
        // ext4 frees a deleted file's blocks at the next journal commit:
        // commit now, or free space may still grow after it is measured.
        rtrec_sys::sync_all_filesystems();
        let free = free_bytes(&dir);
        match Recorder::create(&dir, too_large(*alloc, 200 * MIB)) {
            // Not what was left once fallocate() had taken all it could.
            Err(Error::NoSpace { avail, .. }) => assert!(
                avail >= free / 2 && avail <= free,
                "{alloc}: 'not enough space ... {avail} bytes are available' with {free} bytes free"
            ),
            Err(e) => panic!("{alloc}: expected NoSpace, got {e:?}"),
            Ok(_) => panic!("{alloc}: a 200 MiB file was created on a 64 MiB filesystem"),
        }
    }
    fs.remove().unwrap();
}

#[test]
fn after_a_pool_ran_out_of_space_a_smaller_file_size_records() {
    // The failed attempt above leaves the pool's description; it must not
    // pin the next recording to the size that did not fit.
    if !require_privileged("after_a_pool_ran_out_of_space_a_smaller_file_size_records") {
        return;
    }
    let fs = small_fs();
    let dir = fs.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    assert!(matches!(
        Recorder::create(&dir, too_large(Alloc::Pool, 200 * MIB)),
        Err(Error::NoSpace { .. })
    ));
    let rec = Recorder::create(&dir, too_large(Alloc::Pool, 4 * MIB));
    let rec =
        rec.unwrap_or_else(|e| panic!("a 4 MiB recording on a 64 MiB filesystem failed: {e}"));
    let s = rec.finish().unwrap();
    assert_eq!(
        verify_file(&s.files[0]).unwrap().status,
        FileStatus::Complete
    );
    fs.remove().unwrap();
}
