//! The real-time contract of `Recorder::record` in ring mode: once recording
//! has started it allocates nothing, takes no lock and makes no system call.
//!
//! - Allocations: a counting global allocator counts per thread.
//! - System calls (which include every lock that can sleep: a futex): the
//!   producer thread installs a seccomp filter that kills the whole process
//!   on *any* system call, then records. The test runs that in a child
//!   process and requires it to exit normally. A control case proves the
//!   filter really kills on a system call, so the test cannot pass vacuously.
//!
//! Both hold for every write back-end ([`Io`]): the back-end is the writer
//! thread's business, `record()` is the same copy into the ring.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rtrec_engine::{Config, Io, OnFull, Recorder};

#[global_allocator]
static A: rtrec_sys::testing::CountingAllocator = rtrec_sys::testing::CountingAllocator;

fn allocs() -> u64 {
    rtrec_sys::testing::thread_allocations()
}

#[test]
fn record_allocates_nothing_once_started_even_when_the_ring_overflows() {
    for (io, _) in Io::ALL {
        allocates_nothing(*io);
    }
}

fn allocates_nothing(io: Io) {
    let dir = tempfile::tempdir().unwrap();
    let test = "record_allocates_nothing_once_started_even_when_the_ring_overflows";
    if !rtrec_host::features::require_io(test, io.name(), dir.path()) {
        return;
    }
    // With a stored layout (16 KiB records): the size check and the
    // misfit count (the 20,000-byte records) are on the hot path too.
    let cfg = Config {
        ring_bytes: 256 * 1024,
        max_record: 16384,
        io,
        layout: Some("t:u64,_:pad16376".into()),
        ..Config::default()
    };
    let mut rec = Recorder::create(dir.path(), cfg).unwrap();
    let buf = vec![1u8; 16384];
    let big = vec![2u8; 20000];
    let before = allocs();
    let mut dropped = 0;
    for i in 0..5000 {
        let r = if i % 1000 == 999 {
            rec.record(&big)
        } else {
            rec.record(&buf)
        };
        dropped += r.is_err() as u64;
    }
    let during = allocs() - before;
    let s = rec.finish().unwrap();
    assert_eq!(during, 0, "{io}: record() allocated {during} times");
    assert!(dropped >= 5, "the test must also exercise the drop path");
    assert_eq!(s.records_dropped, dropped);
    assert_eq!(s.layout_misfits, 5, "{io}: the 20,000-byte records");
}

/// BPF program: kill the process on every system call.
fn install_kill_all_filter() {
    const BPF_RET_K: u16 = 0x06;
    const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
    rtrec_sys::testing::install_seccomp(&[(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS)]).unwrap();
}

/// Runs in the child: record under the filter; `control` makes one system
/// call on purpose instead. With `block`, the recorder waits when the ring
/// is full ([`OnFull::Block`]) and the ring holds every record: while there
/// is room, the blocking policy must be exactly as free of system calls as
/// the default.
fn child(control: bool, block: bool) -> ! {
    let io: Io = std::env::var("RTREC_SECCOMP_IO")
        .unwrap_or_default()
        .parse()
        .unwrap_or_default();
    let dir = tempfile::tempdir().unwrap();
    let records = if block { 200 } else { 20_000 };
    let cfg = Config {
        ring_bytes: if block { 8 << 20 } else { 256 * 1024 },
        max_record: 16384,
        on_full: if block { OnFull::Block } else { OnFull::Drop },
        io,
        // A stored layout: its size check runs in every record() too.
        layout: Some("t:u64,_:pad16376".into()),
        ..Config::default()
    };
    let rec = Recorder::create(dir.path(), cfg).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let buf = vec![1u8; 16384];
    let t = std::thread::spawn(move || {
        let mut rec = rec;
        install_kill_all_filter();
        if control {
            // SAFETY: getppid has no preconditions; it is the syscall under test.
            unsafe { libc::getppid() };
        }
        for _ in 0..records {
            let _ = rec.record(&buf);
        }
        // Hand the recorder back without a system call: leak it into a
        // static-lifetime slot guarded by the flag.
        SLOT.with_raw(rec);
        d.store(true, Ordering::Release);
        loop {
            std::hint::spin_loop();
        }
    });
    drop(t);
    while !done.load(Ordering::Acquire) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let rec = SLOT.take();
    let s = rec.finish().unwrap();
    assert_eq!(s.records_offered, records);
    if block {
        assert_eq!((s.records_dropped, s.ring_waits), (0, 0));
    }
    assert!(s.error.is_none(), "{io}: {:?}", s.error);
    println!(
        "child recorded {} and dropped {} ({io})",
        s.records_written, s.records_dropped
    );
    std::process::exit(0);
}

/// A one-shot hand-over slot that needs no lock or system call to fill.
struct Slot(std::cell::UnsafeCell<Option<Recorder>>);
// SAFETY: written once by the producer before `done` is set (Release) and
// read by the main thread only after it sees `done` (Acquire).
unsafe impl Sync for Slot {}
impl Slot {
    fn with_raw(&self, r: Recorder) {
        // SAFETY: see the Sync impl.
        unsafe { std::ptr::write(self.0.get(), Some(r)) }
    }
    fn take(&self) -> Recorder {
        // SAFETY: see the Sync impl.
        unsafe { (*self.0.get()).take().unwrap() }
    }
}
static SLOT: Slot = Slot(std::cell::UnsafeCell::new(None));

fn run_child(mode: &str) -> std::process::Output {
    run_child_io(mode, Io::Buffered)
}

fn run_child_io(mode: &str, io: Io) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "seccomp_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RTREC_SECCOMP_CHILD", mode)
        .env("RTREC_SECCOMP_IO", io.name())
        .output()
        .unwrap()
}

#[test]
fn seccomp_child() {
    match std::env::var("RTREC_SECCOMP_CHILD").as_deref() {
        Ok("record") => child(false, false),
        Ok("block") => child(false, true),
        Ok("control") => child(true, false),
        _ => {} // only meaningful as a child of the test below
    }
}

#[test]
fn record_makes_no_system_call_once_started() {
    use std::os::unix::process::ExitStatusExt;
    let control = run_child("control");
    assert_eq!(
        control.status.signal(),
        Some(libc::SIGSYS),
        "control: a system call under the filter must kill the child ({:?})",
        control.status
    );
    for (io, _) in Io::ALL {
        let test = "record_makes_no_system_call_once_started";
        if !rtrec_host::features::require_io(test, io.name(), &std::env::temp_dir()) {
            continue;
        }
        let out = run_child_io("record", *io);
        assert!(
            out.status.success(),
            "{io}: record() made a system call (child ended with {:?}); stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("({io})")));
    }
}

#[test]
fn record_under_the_blocking_policy_makes_no_system_call_while_the_ring_has_room() {
    let out = run_child("block");
    assert!(
        out.status.success(),
        "record() under OnFull::Block made a system call with room in the ring (child ended with {:?}); stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("child recorded 200 and dropped 0"));
}
