//! The emulated device's request queue and the thread that serves it: the
//! FUSE session ([`crate::fs`]) does each request's real I/O on arrival and
//! hands its reply here; the device thread picks the next request in the
//! profile's [`Order`], serves it one command at a time through the
//! [`DeviceModel`], and replies when the model says it is done.
//!
//! Why a queue of its own: the loop device (in direct-I/O mode, submitting
//! asynchronously) and FUSE (`FUSE_ASYNC_DIO`) keep several requests in
//! flight, but a FUSE server that replies before reading the next request
//! sees them one at a time, in arrival order. Real eMMC below CFQ, BFQ or
//! mq-deadline gets a journal commit's log writes ahead of queued
//! writeback; with one FIFO a log write waits behind every writeback
//! queued before it, and a `write()` that needs a buffer under that log
//! write stalls as long (docs/devices.md, "Calibration status").
//!
//! Design choices:
//! - Sync first, with two bounds: flushes and writes to ext4's journal
//!   ([`crate::ext4`]) are served first (every file-system handle may wait
//!   on a commit; CFQ let such metadata requests preempt a queue doing
//!   regular I/O), then reads, then other writes; but after
//!   [`SYNC_BATCH`] of them in a row while a write waited, one write
//!   command goes (as mq-deadline's `writes_starved` bounds how long reads
//!   may pass waiting writes), and a write that has waited
//!   [`ASYNC_EXPIRE`] (CFQ's and BFQ's `fifo_expire_async` default) goes
//!   first. So a reader that keeps the device busy slows writeback down but
//!   cannot stop it, and a journal write passes at most the command in
//!   service and a few others.
//! - Commands of at most `max_request` bytes: a long read or write is
//!   served in pieces and the queue is looked at between them, as the block layer
//!   splits at the host's limit and the scheduler dispatches in between.
//!   A request is replied to when its last piece is done.
//! - One device thread, at the emulator's real-time priority (it inherits
//!   it from the thread that starts it): one queue, one command at a time.
//! - The real I/O is done at arrival, so the image always holds every
//!   write the kernel issued; the model decides only when it completes. A
//!   flush covers what was completed before it, which is all a flush
//!   promises.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::limits::{ASYNC_EXPIRE, SYNC_BATCH};
use crate::model::{DeviceModel, Op};
use crate::profile::Order;
use crate::timing::{Kind, Timing};

/// What a request is to the scheduler, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A write to ext4's journal or a flush: every handle of the file
    /// system may wait on a commit, so it goes first (as CFQ let metadata
    /// requests preempt a queue doing regular I/O).
    Journal,
    /// A read: synchronous, someone waits for it.
    Read,
    /// Any other write: writeback, which nobody waits on at once.
    Writeback,
}

impl Class {
    fn is_sync(self) -> bool {
        self != Class::Writeback
    }
}

/// How to answer a request once served (the FUSE reply, with the bytes a
/// read got at arrival); called on the device thread.
pub type Answer = Box<dyn FnOnce() + Send>;

struct Pending {
    op: Op,
    class: Class,
    arrived: Instant,
    /// Bytes already served (long writes are served in pieces).
    done: u64,
    answer: Answer,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Pending>,
    closed: bool,
    /// Nothing is served while set (tests queue requests first).
    paused: bool,
}

/// The device: its queue and its serving thread. Dropping it serves what
/// is queued and ends the thread.
pub struct Device {
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Device {
    /// Starts serving through `model`, recording into `timing`.
    pub fn start(model: DeviceModel, timing: Arc<Mutex<Timing>>) -> Device {
        Device::start_as(model, timing, false)
    }

    fn start_as(model: DeviceModel, timing: Arc<Mutex<Timing>>, paused: bool) -> Device {
        let state = State {
            paused,
            ..State::default()
        };
        let shared = Arc::new((Mutex::new(state), Condvar::new()));
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("rtrec-emu-device".into())
                .spawn(move || serve(&shared, model, &timing))
                .expect("a thread")
        };
        Device {
            shared,
            thread: Some(thread),
        }
    }

    /// Queues a request whose real I/O is done; `answer` is sent when the
    /// model has served it.
    pub fn submit(&self, op: Op, class: Class, answer: Answer) {
        let (lock, cv) = &*self.shared;
        let mut s = lock.lock().unwrap_or_else(|p| p.into_inner());
        s.queue.push_back(Pending {
            op,
            class,
            arrived: Instant::now(),
            done: 0,
            answer,
        });
        cv.notify_one();
    }
}

#[cfg(test)]
impl Device {
    /// A device that serves nothing until [`Device::resume`].
    fn paused(model: DeviceModel, timing: Arc<Mutex<Timing>>) -> Device {
        Device::start_as(model, timing, true)
    }

    fn resume(&self) {
        let (lock, cv) = &*self.shared;
        lock.lock().unwrap().paused = false;
        cv.notify_one();
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        {
            let (lock, cv) = &*self.shared;
            lock.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
            cv.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Which waiting request to serve next, by the profile's order, from each
/// request's class and arrival (oldest first): the oldest journal request,
/// else the oldest read, else the oldest write. Also whether it was taken
/// ahead of an older request, and whether it was an expired write.
///
/// `passed` is how many sync commands in a row were served while a write
/// waited; at [`SYNC_BATCH`] the oldest write goes.
fn pick<I>(items: I, order: Order, now: Instant, passed: u32) -> (usize, bool, bool)
where
    I: Iterator<Item = (Class, Instant)> + Clone,
{
    if order == Order::Arrival {
        return (0, false, false);
    }
    let oldest_async = items
        .clone()
        .enumerate()
        .find(|(_, (c, _))| *c == Class::Writeback);
    if let Some((i, (_, arrived))) = oldest_async {
        if now.duration_since(arrived) >= ASYNC_EXPIRE {
            return (i, false, true);
        }
        if passed >= SYNC_BATCH {
            return (i, false, false);
        }
    }
    let first = |class| items.clone().position(|(c, _)| c == class);
    match first(Class::Journal).or_else(|| first(Class::Read)) {
        Some(i) => (i, i > 0, false),
        None => (0, false, false),
    }
}

fn serve(shared: &(Mutex<State>, Condvar), mut model: DeviceModel, timing: &Mutex<Timing>) {
    let epoch = Instant::now();
    let order = model.profile().order;
    let max_command = model.profile().max_request_bytes;
    let (lock, cv) = shared;
    // Sync commands served in a row while a write waited.
    let mut passed = 0u32;
    loop {
        let (op, finished) = {
            let mut s = lock.lock().unwrap_or_else(|p| p.into_inner());
            while (s.queue.is_empty() || s.paused) && !s.closed {
                s = cv.wait(s).unwrap_or_else(|p| p.into_inner());
            }
            if s.queue.is_empty() {
                return;
            }
            let waiting = s.queue.len() as u64;
            let items = s.queue.iter().map(|p| (p.class, p.arrived));
            let (i, ahead, expired) = pick(items, order, Instant::now(), passed);
            let async_waits = s.queue.iter().any(|p| p.class == Class::Writeback);
            let p = &mut s.queue[i];
            passed = if p.class.is_sync() && async_waits {
                passed + 1
            } else {
                0
            };
            // The next command of the request: all of it, or its next
            // `max_request` bytes.
            let first = p.done == 0;
            let op = p.op.piece(p.done, max_command);
            p.done += op.bytes();
            let finished = p.done >= p.op.bytes();
            let answer = finished.then(|| s.queue.remove(i).expect("picked").answer);
            let mut t = timing.lock().unwrap_or_else(|p| p.into_inner());
            t.note_queue(waiting, first && ahead, first && expired);
            (op, answer)
        };
        let start = Instant::now();
        let asked = model.cost(op, start.duration_since(epoch).as_nanos() as u64);
        let deadline = start + Duration::from_nanos(asked);
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            std::thread::sleep(deadline - now);
        }
        let served = start.elapsed().as_nanos() as u64;
        if let Some(answer) = finished {
            answer();
        }
        let kind = match op {
            Op::Read { bytes, .. } => Kind::Read(bytes),
            Op::Write { bytes, .. } => Kind::Write(bytes),
            Op::Flush => Kind::Flush,
        };
        let mut t = timing.lock().unwrap_or_else(|p| p.into_inner());
        t.record(kind, asked, served);
        t.set_gc_pauses(model.gc_pauses);
        t.set_seeks(model.seeks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(class: Class, age_ms: u64, now: Instant) -> (Class, Instant) {
        (class, now - Duration::from_millis(age_ms))
    }

    fn pick_on(items: &[(Class, Instant)], order: Order, now: Instant) -> (usize, bool, bool) {
        pick(items.iter().copied(), order, now, 0)
    }

    #[test]
    fn sync_requests_pass_writeback_until_it_expires() {
        let now = Instant::now() + Duration::from_secs(10);
        let q = [
            pending(Class::Writeback, 10, now),
            pending(Class::Writeback, 5, now),
            pending(Class::Read, 1, now),
        ];
        assert_eq!(pick_on(&q, Order::SyncFirst, now), (2, true, false));
        assert_eq!(pick_on(&q, Order::Arrival, now), (0, false, false));
        let old = [
            pending(Class::Writeback, 300, now),
            pending(Class::Read, 1, now),
        ];
        assert_eq!(pick_on(&old, Order::SyncFirst, now), (0, false, true));
        // A journal write passes reads queued before it.
        let j = [
            pending(Class::Read, 9, now),
            pending(Class::Writeback, 8, now),
            pending(Class::Journal, 1, now),
        ];
        assert_eq!(pick_on(&j, Order::SyncFirst, now), (2, true, false));
        let only_async = [pending(Class::Writeback, 1, now)];
        assert_eq!(
            pick_on(&only_async, Order::SyncFirst, now),
            (0, false, false)
        );
    }

    /// A model of the shipped `emmc` profile without cache or GC, 10 ms a
    /// write and 5 ms a read, in `order`, commands of at most `max`.
    fn model(order: &str, max: &str) -> DeviceModel {
        let mut v: serde_json::Value = serde_json::from_str(crate::profile::BUILTIN[0].1).unwrap();
        for (k, val) in [
            ("write_latency", "10ms"),
            ("read_latency", "5ms"),
            ("write_bandwidth", "0B"),
            ("read_bandwidth", "0B"),
            ("cache", "0B"),
            ("gc_every", "0B"),
            ("order", order),
            ("max_request", max),
        ] {
            v[k] = val.into();
        }
        DeviceModel::new(crate::profile::Profile::from_json(&v.to_string(), "t").unwrap())
    }

    /// Queues `requests` (name, op, class) while the device is paused,
    /// resumes it, and returns the order of completion with each one's time
    /// since the resume, and the timing counters.
    fn serve_all(
        order: &str,
        max: &str,
        requests: &[(char, Op, Class)],
    ) -> (Vec<(char, Duration)>, Timing) {
        let timing = Arc::new(Mutex::new(Timing::new("t")));
        let device = Device::paused(model(order, max), Arc::clone(&timing));
        let done = Arc::new(Mutex::new(Vec::new()));
        let t0 = Arc::new(Mutex::new(Instant::now()));
        for &(name, op, class) in requests {
            let (done, t0) = (Arc::clone(&done), Arc::clone(&t0));
            let answer: Answer = Box::new(move || {
                let at = t0.lock().unwrap().elapsed();
                done.lock().unwrap().push((name, at));
            });
            device.submit(op, class, answer);
        }
        *t0.lock().unwrap() = Instant::now();
        device.resume();
        drop(device);
        let done = done.lock().unwrap().clone();
        let timing = timing.lock().unwrap().clone();
        (done, timing)
    }

    fn read(name: char) -> (char, Op, Class) {
        let op = Op::Read {
            offset: 0,
            bytes: 4096,
        };
        (name, op, Class::Read)
    }

    fn write(name: char, i: u64, bytes: u64) -> (char, Op, Class) {
        let op = Op::Write {
            offset: i * bytes,
            bytes,
        };
        (name, op, Class::Writeback)
    }

    /// Writes A, B, C (writeback) of `write_bytes` each, then read R.
    fn run(order: &str, max: &str, write_bytes: u64) -> (Vec<(char, Duration)>, Timing) {
        let requests = [
            write('A', 0, write_bytes),
            write('B', 1, write_bytes),
            write('C', 2, write_bytes),
            read('R'),
        ];
        serve_all(order, max, &requests)
    }

    #[test]
    fn a_read_passes_queued_writeback_and_nothing_ends_before_its_model_time() {
        let ms = Duration::from_millis;
        let (done, t) = run("sync-first", "0B", 4096);
        let names: String = done.iter().map(|d| d.0).collect();
        assert_eq!(names, "RABC");
        // Lower bounds only: each completes no earlier than the costs of
        // everything served before it and its own (5 ms read, 10 ms writes).
        for ((_, at), least) in done.iter().zip([ms(5), ms(15), ms(25), ms(35)]) {
            assert!(*at >= least, "{at:?} < {least:?}");
        }
        let s = t.snapshot();
        assert_eq!((s.reads, s.writes, s.early), (1, 3, 0));
        assert_eq!(s.sync_ahead, 1);
        assert_eq!(s.queue_max, 4);

        let (done, _) = run("arrival", "0B", 4096);
        let names: String = done.iter().map(|d| d.0).collect();
        assert_eq!(names, "ABCR");
        assert!(done[3].1 >= ms(35));
    }

    #[test]
    fn a_long_write_is_served_in_commands_of_max_request() {
        // Three 1 MiB writes in 256 KiB commands: twelve commands of 10 ms.
        let (done, t) = run("sync-first", "256KiB", 1 << 20);
        let names: String = done.iter().map(|d| d.0).collect();
        assert_eq!(names, "RABC");
        let s = t.snapshot();
        assert_eq!(s.writes, 12);
        assert_eq!(s.bytes_written, 3 << 20);
        assert!(done[1].1 >= Duration::from_millis(45));
        assert!(done[3].1 >= Duration::from_millis(125));
    }

    #[test]
    fn a_stream_of_reads_lets_a_waiting_write_through_after_a_batch() {
        let mut requests = vec![write('W', 0, 4096)];
        requests.extend((0..6).map(|_| read('R')));
        let (done, _) = serve_all("sync-first", "0B", &requests);
        let order: String = done.iter().map(|d| d.0).collect();
        let batch = "R".repeat(SYNC_BATCH as usize);
        assert_eq!(order, format!("{batch}WRR"));
    }
}
