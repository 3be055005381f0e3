//! A recycled pool is not read back as it is written (issue 34): its
//! files are written space whose pages left the page cache after their
//! last life, and a write that ends inside such a block makes the kernel
//! read it first. Packed frames (`buffered`: padded to their block's end;
//! `uring-buffered`: whole blocks) must not cost a device read each.
//! Counted from the loop device's `stat` on a real ext4 image.

use std::path::Path;

mod common;
use common::{rtrec, show};
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};

/// Drops the cached pages of every file under `dir` (after `syncfs`, so
/// they are clean): the state of a pool whose files were written back.
fn drop_pages(dir: &Path) {
    rtrec_sys::syncfs(std::fs::File::open(dir).unwrap()).unwrap();
    for e in walk(dir) {
        let f = std::fs::File::open(&e).unwrap();
        rtrec_sys::fadvise_dontneed(&f, 0, 0).unwrap();
    }
}

/// Every regular file under `dir`, hidden ones (the pool's) included.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.is_file() {
            out.push(p);
        }
    }
    out
}

#[test]
fn packed_frames_into_a_recycled_pool_are_not_read_back_per_frame() {
    let test = "packed_frames_into_a_recycled_pool_are_not_read_back_per_frame";
    if !require_privileged(test) {
        return;
    }
    let fs = LoopFs::create(&LoopFsOptions {
        size: 512 << 20,
        journal_mib: 4,
        ..LoopFsOptions::default()
    })
    .unwrap();
    for io in ["buffered", "uring-buffered"] {
        let dir = fs.path().join(io);
        std::fs::create_dir(&dir).unwrap();
        if !rtrec_host::features::require_io(test, io, &dir) {
            continue;
        }
        let d = dir.to_str().unwrap();
        let o = rtrec(&["pool", "prepare", d, "--files", "2", "--file-size", "16MiB"]);
        assert!(o.status.success(), "{}", show(&o));
        let record = |json: &str| {
            let json = dir.join(json);
            let o = rtrec(&[
                "record",
                "--dir",
                d,
                "--alloc",
                "pool",
                "--io",
                io,
                "--period",
                "100us",
                "--size",
                "1KiB",
                "--count",
                "4000",
                "--quiet",
                "--json",
                json.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{io}: {}", show(&o));
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
            assert_eq!(v["config"]["framing"], "packed", "{v}");
            assert_eq!(
                v["pool"]["fallbacks"], 0,
                "{io}: the pool served every file: {v}"
            );
            v
        };
        record("first.json");
        let o = rtrec(&["pool", "recycle", d, "--all"]);
        assert!(o.status.success(), "{}", show(&o));
        drop_pages(&dir);
        let reads = || rtrec_host::machine::device_reads(fs.path()).unwrap();
        let before = reads();
        let v = record("second.json");
        drop_pages(&dir);
        let n = reads() - before;
        // 4,000 records of 1 KiB seal about 250 frames of 16 KiB: one read
        // each before the fix (268 and 269 counted); a handful of reads
        // (the files' metadata) after.
        assert!(
            n <= 25,
            "{io}: {n} device reads for 4,000 records into a recycled pool: {v}"
        );
        let verify = rtrec(&["verify", d]);
        assert!(verify.status.success(), "{io}: {}", show(&verify));
    }
    fs.remove().unwrap();
}
