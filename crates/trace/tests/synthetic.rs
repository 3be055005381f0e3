//! Synthetic spikes with known causes, each made on a real ext4 (our own
//! loop image) while a [`Session`] traces the timed thread, and each
//! classified by the cause that made it: a jbd2 commit forced by another
//! process's fsync, an `i_rwsem` held by another thread's long write, a
//! busy SCHED_FIFO thread on the timed thread's CPU, dirty throttling under
//! a tiny `vm.dirty_bytes`.
//!
//! No test asserts a timing: each runs its load for a few short rounds
//! until the trace shows the planted cause, and asserts that it was named
//! (with the frames or the task that name it). Only calls slower than
//! [`THRESHOLD_NS`] are attributed, which selects the spikes; how slow they
//! were is never checked.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use rtrec_host::features::{self, Feature};
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};
use rtrec_host::GlobalLock;
use rtrec_trace::{table, Cause, Explanation, Session, Watch};

/// Calls slower than this are attributed (a selection, not an assertion).
const THRESHOLD_NS: u64 = 20_000;
/// Rounds tried before a test gives up on seeing its cause.
const ROUNDS: usize = 6;
/// One round of tracing.
const ROUND: Duration = Duration::from_millis(700);

/// What every test needs: the global lock (the dirty settings and the
/// tracefs instance are machine-wide), our own ext4 and root.
struct Rig {
    lock: GlobalLock,
    fs: LoopFs,
}

fn rig(test: &str) -> Option<Rig> {
    if !require_privileged(test) || !features::require(test, &[Feature::Tracefs]) {
        return None;
    }
    let lock = GlobalLock::acquire().expect("taking the global lock");
    let fs = LoopFs::create(&LoopFsOptions {
        size: 512 << 20,
        journal_mib: 8,
        ..LoopFsOptions::default()
    })
    .expect("making the ext4 image");
    Some(Rig { lock, fs })
}

/// A thread that sends its tid, then calls `body` until told to stop.
struct Timed {
    tid: i32,
    stop: Arc<AtomicBool>,
    handle: thread::JoinHandle<()>,
}

fn spawn_loop<F: FnMut() + Send + 'static>(name: &str, mut body: F) -> Timed {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let (tx, rx) = mpsc::channel();
    let handle = thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            tx.send(rtrec_sys::gettid()).unwrap();
            while !s.load(Ordering::Relaxed) {
                body();
            }
        })
        .unwrap();
    Timed {
        tid: rx.recv().unwrap(),
        stop,
        handle,
    }
}

impl Timed {
    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap();
    }
}

/// Traces `timed` (and `others`) for up to [`ROUNDS`] rounds, until a slow
/// call has a part with `cause`; returns the last explanation.
fn trace_until(rig: &Rig, timed: i32, others: Vec<i32>, cause: Cause) -> Explanation {
    trace_until_named(rig, timed, others, cause, "")
}

/// [`trace_until`], until the cause's row also names `who` (the task that
/// ran instead, the commit's starter...): on a loaded machine other tasks
/// can be the first to show up.
fn trace_until_named(
    rig: &Rig,
    timed: i32,
    others: Vec<i32>,
    cause: Cause,
    who: &str,
) -> Explanation {
    let mut session = Session::create().expect("a tracing session as root");
    let dev = std::fs::metadata(rig.fs.path()).unwrap().dev();
    let mut last = Explanation::default();
    for _ in 0..ROUNDS {
        session
            .start(Watch {
                timed_tids: vec![timed],
                other_tids: others.clone(),
                device: Some(dev),
                threshold_ns: Some(THRESHOLD_NS),
                producer: None,
            })
            .expect("starting the trace");
        thread::sleep(ROUND);
        last = session.stop().expect("reading the trace");
        let named = |r: &rtrec_trace::CauseRow| {
            r.cause == cause && r.detail.as_deref().unwrap_or("").contains(who)
        };
        if last.causes.iter().any(named) {
            break;
        }
    }
    session.remove().expect("removing the tracefs instance");
    last
}

fn row(x: &Explanation, cause: Cause) -> &rtrec_trace::CauseRow {
    x.causes
        .iter()
        .find(|r| r.cause == cause)
        .unwrap_or_else(|| {
            panic!(
                "no slow call was attributed to {}:\n{}",
                cause.name(),
                table::render(x, None)
            )
        })
}

fn open(path: &Path) -> File {
    OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(true)
        .open(path)
        .unwrap()
}

/// Appends `buf` to `f`, starting over at `wrap` bytes (the file keeps
/// growing, so every write changes `i_size` and needs a journal handle).
fn append_wrapping(f: &mut File, buf: &[u8], wrap: u64) {
    if f.metadata().unwrap().len() >= wrap {
        f.set_len(0).unwrap();
        f.sync_all().ok();
        std::io::Seek::rewind(f).unwrap();
    }
    f.write_all(buf).unwrap();
}

/// Set in the environment of this test binary run as the other process
/// of the jbd2 test ([`fsync_loop_child`]): the file it appends to.
const FSYNC_CHILD: &str = "RTREC_TRACE_TEST_FSYNC_LOOP";

/// The other process of the jbd2 test, when [`FSYNC_CHILD`] is set: appends
/// a line to its file and fsyncs it, again and again, until killed. One
/// process, no program started per fsync: its commits keep coming however
/// slowly a loaded machine starts processes.
#[test]
fn fsync_loop_child() {
    let Some(path) = std::env::var_os(FSYNC_CHILD) else {
        return; // only meaningful as a child of the test below
    };
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    loop {
        f.write_all(b"x\n").unwrap();
        f.sync_all().unwrap();
    }
}

/// A child process killed when this goes out of scope, also when a failed
/// assertion unwinds: the fsync loop never outlives its test (nor keeps
/// its file system busy).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_commit_forced_by_another_process_fsync_is_a_jbd2_wait() {
    let Some(rig) = rig("a_commit_forced_by_another_process_fsync_is_a_jbd2_wait") else {
        return;
    };
    let dir = rig.fs.path();
    let mut f = open(&dir.join("timed.dat"));
    let buf = vec![7u8; 4096];
    let timed = spawn_loop("timed", move || append_wrapping(&mut f, &buf, 16 << 20));
    // Another process: append to its own file on the same filesystem and
    // fsync it, again and again; every fsync forces a journal commit.
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "fsync_loop_child", "--test-threads=1", "-q"])
        .env(FSYNC_CHILD, dir.join("other.dat"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("starting the fsync loop");
    let child = KillOnDrop(child);
    let x = trace_until(&rig, timed.tid, vec![child.0.id() as i32], Cause::JbdHandle);
    drop(child);
    timed.stop();
    let r = row(&x, Cause::JbdHandle);
    assert!(
        r.stack.iter().any(|f| f.contains("start_this_handle")
            || f.contains("wait_transaction")
            || f.contains("do_get_write_access")
            || f.contains("jbd2")),
        "{r:?}"
    );
    drop(rig.lock);
}

#[test]
fn a_long_write_of_another_thread_to_the_same_file_holds_i_rwsem() {
    let Some(rig) = rig("a_long_write_of_another_thread_to_the_same_file_holds_i_rwsem") else {
        return;
    };
    let path = rig.fs.path().join("shared.dat");
    let f = Arc::new(open(&path));
    // Both on one CPU: the waiter cannot spin on a running owner, it
    // sleeps, and the sleep's stack names the lock.
    let (fh, fb) = (f.clone(), vec![1u8; 32 << 20]);
    let holder = spawn_loop("holder", move || {
        let _ = rtrec_sys::pin_to_cpu(0);
        fh.write_all_at(&fb, 0).unwrap();
    });
    let small = vec![2u8; 4096];
    let timed = spawn_loop("timed", move || {
        let _ = rtrec_sys::pin_to_cpu(0);
        f.write_all_at(&small, 0).unwrap();
    });
    let x = trace_until(&rig, timed.tid, vec![holder.tid], Cause::InodeRwsem);
    timed.stop();
    holder.stop();
    let r = row(&x, Cause::InodeRwsem);
    assert!(
        r.stack
            .iter()
            .any(|f| f.contains("down_write") || f.contains("rwsem")),
        "{r:?}"
    );
    drop(rig.lock);
}

#[test]
fn a_busy_fifo_thread_on_the_timed_cpu_is_platform_preemption() {
    let Some(rig) = rig("a_busy_fifo_thread_on_the_timed_cpu_is_platform_preemption") else {
        return;
    };
    let f = open(&rig.fs.path().join("timed.dat"));
    let buf = vec![3u8; 64 << 10];
    let timed = spawn_loop("timed", move || {
        let _ = rtrec_sys::pin_to_cpu(0);
        f.write_all_at(&buf, 0).unwrap();
    });
    // Busy for 2 ms, asleep for 3 ms, on the same CPU, above every
    // normal task.
    let hog = spawn_loop("rtrec-test-hog", || {
        let _ = rtrec_sys::pin_to_cpu(0);
        let _ = rtrec_sys::set_fifo_priority(50);
        let t0 = std::time::Instant::now();
        while t0.elapsed() < Duration::from_millis(2) {
            std::hint::spin_loop();
        }
        thread::sleep(Duration::from_millis(3));
    });
    let x = trace_until_named(
        &rig,
        timed.tid,
        vec![hog.tid],
        Cause::Preempted,
        "rtrec-test-hog",
    );
    hog.stop();
    timed.stop();
    let r = row(&x, Cause::Preempted);
    assert!(r.cause.is_platform());
    let d = r.detail.as_deref().unwrap_or("");
    assert!(
        d.contains("rtrec-test-hog"),
        "the task that ran instead: {d:?}"
    );
    drop(rig.lock);
}

#[test]
fn a_tiny_dirty_limit_throttles_the_writer() {
    let Some(rig) = rig("a_tiny_dirty_limit_throttles_the_writer") else {
        return;
    };
    let found = rtrec_host::sysctl::DirtySettings::read().unwrap();
    let j = rig.lock.journal();
    let ids = [
        rtrec_host::sysctl::set(j, "vm.dirty_bytes", &(2u64 << 20).to_string()).unwrap(),
        rtrec_host::sysctl::set(j, "vm.dirty_background_bytes", &(1u64 << 20).to_string()).unwrap(),
    ];
    let mut f = open(&rig.fs.path().join("timed.dat"));
    let buf = vec![4u8; 256 << 10];
    let timed = spawn_loop("timed", move || append_wrapping(&mut f, &buf, 128 << 20));
    let x = trace_until(&rig, timed.tid, Vec::new(), Cause::DirtyThrottle);
    timed.stop();
    for id in ids.into_iter().rev() {
        j.undo(id).unwrap();
    }
    assert_eq!(
        rtrec_host::sysctl::DirtySettings::read().unwrap(),
        found,
        "vm.dirty_* put back"
    );
    let r = row(&x, Cause::DirtyThrottle);
    assert!(
        r.stack.iter().any(|f| f.contains("balance_dirty_pages")),
        "{r:?}"
    );
}
