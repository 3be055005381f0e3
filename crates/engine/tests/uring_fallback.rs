//! When the kernel refuses io_uring, a recording with [`Io::Uring`] says so
//! in one warning and writes buffered: every record is still stored.
//!
//! The refusal is made the way `kernel.io_uring_disabled=2` makes it —
//! `io_uring_setup` fails with `EPERM` — but for one child process only: a
//! seccomp filter (`SECCOMP_RET_ERRNO`) on that one system call, so no
//! machine-wide setting changes while other tests run. If the machine
//! itself has io_uring disabled the test holds all the same.

use std::process::Command;

use rtrec_engine::reader::{recording_files, verify_file, FileStatus};
use rtrec_engine::{Config, Io, Recorder};

/// Makes `io_uring_setup` fail with `EPERM` for this process from now on;
/// every other system call is allowed.
fn refuse_io_uring() {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET_K: u16 = 0x06;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    rtrec_sys::testing::install_seccomp(&[
        // seccomp_data.nr is at offset 0.
        (LD_W_ABS, 0, 0, 0),
        (JEQ_K, 0, 1, libc::SYS_io_uring_setup as u32),
        (RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32),
        (RET_K, 0, 0, RET_ALLOW),
    ])
    .unwrap();
}

fn child() -> ! {
    refuse_io_uring();
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        io: Io::Uring,
        max_record: 4096,
        ..Config::default()
    };
    let mut rec = Recorder::create(dir.path(), cfg).unwrap();
    for i in 0..200u64 {
        rec.record(&[i as u8; 4096]).unwrap();
    }
    let s = rec.finish().unwrap();
    assert_eq!((s.records_written, s.records_dropped), (200, 0));
    assert!(s.error.is_none(), "{:?}", s.error);
    let files = recording_files(dir.path()).unwrap();
    let r = verify_file(&files[0]).unwrap();
    assert_eq!(r.status, FileStatus::Complete, "{:?}", r.notes);
    for w in &s.warnings {
        println!("warning: {w}");
    }
    std::process::exit(0);
}

#[test]
fn uring_fallback_child() {
    if std::env::var_os("RTREC_URING_CHILD").is_some() {
        child();
    }
}

#[test]
fn a_refused_io_uring_falls_back_to_buffered_writes_with_one_warning() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "uring_fallback_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RTREC_URING_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}: {stdout} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let warnings: Vec<&str> = stdout
        .lines()
        // The harness may print the test's name on the same line first.
        .filter_map(|l| l.split_once("warning: the kernel refused io_uring"))
        .map(|(_, w)| w)
        .collect();
    assert_eq!(warnings.len(), 1, "{stdout}");
    // EPERM (the filter, or the sysctl) names the sysctl; ENOSYS (a kernel
    // without io_uring, or RTREC_HIDE_FEATURES=io_uring in CI's second
    // pass, checked before the call) names the kernel option.
    let why = if rtrec_sys::hidden::hidden("io_uring") {
        "this kernel has no io_uring (CONFIG_IO_URING)"
    } else {
        "kernel.io_uring_disabled"
    };
    assert!(
        warnings[0].contains("buffered") && warnings[0].contains(why),
        "{}",
        warnings[0]
    );
}
