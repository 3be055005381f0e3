//! The writer thread's loop: drains the [`crate::ring`] entry by entry into
//! the [`Writer`] (through the [`Flight`] recorder in flight mode), sleeps
//! `writer_poll_us` when the ring is empty, and closes the recording once
//! the producer stops.
//!
//! It sits above the ring (transport), the writer (one recording's files)
//! and the flight recorder, and below the [`crate::recorder`] that spawns
//! it: none of those imports it back.
//!
//! Pacing (issue 23): after each entry the loop tells the writer whether it
//! is behind — the ring filled past [`crate::io::BEHIND_PERCENT`] of its
//! capacity, until it is empty again ([`crate::io::coalesce_next`]) — so
//! the back-ends that can coalesce frames into larger writes do so only
//! while the device is not keeping up, and write each frame through (the
//! lowest latency) otherwise — and whether another entry waits behind
//! this one, so a back-end may hold a frame's partial last block for the
//! next frame to write whole; the idle loop paces too, and writes a block
//! held for `max_latency_ns` with no frame coming (`Writer::pace`).
//!
//! Design choice (issue 34, what each small record costs the writer): the
//! loop looks at the producer's end of the ring (`Consumer::slots`, an
//! atomic the producer writes with every record, so a cache line moved
//! between the cores) once per wake and again only when the entries it
//! found are all taken, not after every entry; in between it counts down
//! what it took. The pacing decisions see the same thing as before where
//! they depend on it: "another entry waits" is exact (a count above zero
//! is entries really there; at zero the ring is looked at again), and
//! "behind" is judged on the count at the last look. The clock is read
//! only when pacing needs it (a partial block held with no entry
//! waiting), not once per entry. At 64 B records these were two cache
//! misses and a clock read per record.
//!
//! Design choice: after a write failure the loop keeps draining and
//! discarding, so the producer is never blocked by a full ring; the
//! producer sees `failed` and counts its drops. In flight mode a failure
//! ends only the current event (see [`crate::flight`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rtrb::Consumer;

use crate::flight::{Flight, FlightStats};
use crate::format::LossPayload;
use crate::io::coalesce_next;
use crate::ring::{corrupt, pop, Entry, RingShared, ENTRY_DATA, ENTRY_LOSS, ENTRY_TRIGGER};
use crate::sizing::ENTRY_HEADER_LEN;
use crate::stats::LiveStats;
use crate::writer::{Writer, WriterReport};

/// What the writer thread hands back when it ends.
pub(crate) struct ThreadReport {
    /// The writer's counters, files and failure.
    pub(crate) writer: WriterReport,
    /// The flight recorder's counters (flight mode only).
    pub(crate) flight: Option<FlightStats>,
}

/// Hands one entry to the writer (or the flight recorder in front of it);
/// its payload may be the ring's own memory ([`pop`]), so nothing here keeps
/// it past the call. True when it was a data record and it was handed on
/// without the recording failing ([`LiveStats::records_taken`]).
fn handle(
    w: &mut Writer,
    mut flight: Option<&mut Flight>,
    shared: &RingShared,
    live: &LiveStats,
    e: Entry<'_>,
) -> bool {
    let Entry {
        kind,
        seq,
        ts,
        payload,
    } = e;
    let is_data = kind == ENTRY_DATA && flight.is_none();
    if w.failed() {
        if is_data {
            w.discard();
        }
        return false;
    }
    let r = match (flight.as_deref_mut(), kind) {
        (None, ENTRY_DATA) => w.write_data(seq, ts, payload),
        (None, ENTRY_LOSS) => match LossPayload::decode(payload) {
            Some(l) => w.write_loss(l, ts),
            None => Ok(()),
        },
        (Some(f), ENTRY_DATA) => f.on_data(w, seq, ts, payload),
        (Some(f), ENTRY_LOSS) => match LossPayload::decode(payload) {
            Some(l) => f.on_loss(w, l, ts),
            None => Ok(()),
        },
        (Some(f), ENTRY_TRIGGER) => f.on_trigger(w, seq, ts),
        _ => Ok(()),
    };
    if let (Err(_), Some(f)) = (&r, flight) {
        // Only this event ends; the recorder goes on.
        if w.record_failed() {
            w.discard();
        }
        f.abort(w);
        return kind == ENTRY_DATA;
    }
    if r.is_err() {
        if is_data {
            // Its write() failed: not stored, so dropped (stored as a loss
            // at the end).
            w.discard();
        }
        // From now on the producer drops and counts; the writer keeps
        // draining so the producer is never blocked by a full ring.
        failed(shared, live);
        return false;
    }
    kind == ENTRY_DATA
}

/// The recording has failed: the producer drops and counts from now on,
/// and whoever watches ([`LiveStats::writer_failed`]) is told.
fn failed(shared: &RingShared, live: &LiveStats) {
    shared.failed.store(true, Ordering::Release);
    live.writer_failed.store(true, Ordering::Release);
}

/// After a failure outside an entry (a poll, pacing): in flight mode only
/// the event ends and the recorder goes on; otherwise the producer drops
/// and counts from now on.
fn fail(w: &mut Writer, flight: Option<&mut Flight>, shared: &RingShared, live: &LiveStats) {
    match flight {
        Some(f) => f.abort(w),
        None => failed(shared, live),
    }
}

/// Within one drain, the heartbeat ([`LiveStats::records_taken`]) is
/// published every this many records (and at the drain's end): a store
/// per record would move the counters' cache line to the writer's core
/// for every record the producer queues beside it.
const TAKEN_PUBLISH: u64 = 256;

/// The writer's heartbeat ([`LiveStats::records_taken`]): counted here,
/// published after every drain and every [`TAKEN_PUBLISH`] records within
/// one, so a writer that keeps up with a busy ring still beats.
#[derive(Default)]
struct Heartbeat {
    taken: u64,
}

impl Heartbeat {
    /// One more data record handed on.
    fn took(&mut self, live: &LiveStats) {
        self.taken += 1;
        if self.taken % TAKEN_PUBLISH == 0 {
            self.publish(live);
        }
    }

    /// Publishes the count.
    fn publish(&self, live: &LiveStats) {
        live.records_taken.store(self.taken, Ordering::Release);
    }
}

/// How long the writer thread sleeps when it finds the ring empty.
///
/// Design choice (issue 34, batching where records are small): with
/// packed framing a record already waits up to `max_latency_ns` in the
/// open frame, so the writer need not wake every `writer_poll_us` to take
/// each one: its sleep doubles after every wake that found less than an
/// eighth of the ring filled ([`REFILL_SHARE`]) and drops back to
/// `writer_poll_us` after one that found more, never longer than the
/// writer allows ([`Writer::idle_bound_ns`]: a quarter of
/// `max_latency_ns`, and never past the open frame's due time, so no
/// record waits longer than before). A steady rate thus fills at most
/// about a quarter of the ring between wakes. At 64 B every 20 µs the
/// 1 ms poll woke the writer ~50 times per 3,200 records, each wake
/// (a `clock_nanosleep`, two context switches) costing more in a VM than
/// the records it took. The other framings keep the fixed poll: their
/// records are written through, and a later wake would only delay them.
struct Idle {
    /// `writer_poll_us`, ns: the shortest sleep.
    min_ns: u64,
    /// The next sleep, ns.
    next_ns: u64,
}

/// A wake that found more than `1 / REFILL_SHARE` of the ring filled
/// drops the sleep back to its shortest ([`Idle`]).
const REFILL_SHARE: usize = 8;

impl Idle {
    fn new(poll_us: u64) -> Idle {
        let min_ns = poll_us.saturating_mul(1000);
        Idle {
            min_ns,
            next_ns: min_ns,
        }
    }

    /// After a wake that found `found` bytes in a ring of `capacity`.
    fn woke(&mut self, found: usize, capacity: usize) {
        self.next_ns = if found.saturating_mul(REFILL_SHARE) >= capacity {
            self.min_ns
        } else {
            self.next_ns.saturating_mul(2)
        };
    }

    /// The sleep now, within `bound` (`None`: the shortest).
    fn sleep(&mut self, bound: Option<u64>) -> Duration {
        let ns = match bound {
            Some(b) => self.next_ns.min(b).max(self.min_ns),
            None => self.min_ns,
        };
        self.next_ns = ns;
        Duration::from_nanos(ns)
    }
}

/// The writer thread: drains the ring into `w` until the producer stops,
/// then closes the recording.
// long: one pass of the writer's loop (take, write, pace, the corrupt-ring
// check, the heartbeat) reads best whole.
pub(crate) fn run_writer(
    mut c: Consumer<u8>,
    mut w: Writer,
    shared: Arc<RingShared>,
    max_record: usize,
    poll_us: u64,
    mut flight: Option<Flight>,
    live: Arc<LiveStats>,
) -> ThreadReport {
    let mut stage = vec![0u8; max_record.max(LossPayload::LEN)];
    let capacity = c.buffer().capacity();
    let mut behind = false;
    let mut idle = Idle::new(poll_us);
    w.hold_tails();
    let mut beat = Heartbeat::default();
    loop {
        let stopping = shared.stop.load(Ordering::Acquire);
        let found = c.slots();
        live.note_ring_fill(found as u64);
        idle.woke(found, capacity);
        let mut any = false;
        // Bytes known to be in the ring: what the last look at the
        // producer's end found, less what was taken since (module docs, issue 34).
        let mut known = found;
        while let Some(took) = pop(&mut c, &mut stage, |e| {
            let took = ENTRY_HEADER_LEN + e.payload.len();
            if handle(&mut w, flight.as_mut(), &shared, &live, e) {
                beat.took(&live);
            }
            took
        }) {
            any = true;
            known = known.saturating_sub(took);
            if known == 0 {
                known = c.slots();
            }
            behind = coalesce_next(behind, known, capacity);
            if !w.failed() && w.pace(behind, known > 0, rtrec_sys::monotonic_ns).is_err() {
                fail(&mut w, flight.as_mut(), &shared, &live);
            }
        }
        // Nothing taken although something is there: an entry no producer
        // makes (two threads recorded at once). The recording fails with
        // that sentence instead of both ends waiting for each other.
        if !any && !w.failed() && corrupt(&mut c, stage.len()) {
            w.ring_corrupt();
            shared.failed.store(true, Ordering::Release);
        }
        beat.publish(&live);
        if stopping {
            break;
        }
        if !any {
            let now = rtrec_sys::monotonic_ns();
            if let Some(f) = flight.as_mut() {
                if !w.failed() && f.tick(&mut w, now).is_err() {
                    f.abort(&mut w);
                }
            }
            // Packed framing: an open frame is written once its oldest
            // record has waited the maximum latency, even if no record
            // follows.
            if !w.failed() && w.tick(now).is_err() {
                fail(&mut w, flight.as_mut(), &shared, &live);
            }
            // A last block held for the next frame is written once it has
            // waited its bound (`Writer::pace`).
            if !w.failed() && w.pace(behind, false, || now).is_err() {
                fail(&mut w, flight.as_mut(), &shared, &live);
            }
            // io_uring: a write in flight is waited for (and counted) in
            // place of the sleep.
            match w.wait_in_flight() {
                Ok(true) => {}
                Ok(false) => {
                    let bound = if flight.is_some() {
                        None
                    } else {
                        w.idle_bound_ns(rtrec_sys::monotonic_ns())
                    };
                    std::thread::sleep(idle.sleep(bound));
                }
                Err(_) => fail(&mut w, flight.as_mut(), &shared, &live),
            }
        }
    }
    let end_seq = shared.end_seq.load(Ordering::Acquire);
    let (complete, reason) = shared.end.lock().map(|g| g.clone()).unwrap_or_default();
    let flight = flight.map(|mut f| f.finish(&mut w));
    ThreadReport {
        writer: w.finish(end_seq, complete, &reason),
        flight,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_sleep_doubles_on_a_quiet_ring_stays_in_its_bound_and_drops_back_when_it_fills() {
        let mut idle = Idle::new(1000);
        let ms = Duration::from_millis;
        // Other framings (no bound): always the poll.
        assert_eq!(idle.sleep(None), ms(1));
        idle.woke(0, 1024);
        assert_eq!(idle.sleep(None), ms(1));
        // Packed: doubles while each wake finds under an eighth filled.
        let bound = Some(12_500_000);
        let mut got = Vec::new();
        for _ in 0..6 {
            idle.woke(100, 1024);
            got.push(idle.sleep(bound));
        }
        let want: Vec<Duration> = [2, 4, 8, 12, 12, 12]
            .iter()
            .map(|&m| {
                if m == 12 {
                    Duration::from_micros(12_500)
                } else {
                    ms(m)
                }
            })
            .collect();
        assert_eq!(got, want);
        // An open frame due sooner shortens it, never below the poll.
        idle.woke(0, 1024);
        assert_eq!(idle.sleep(Some(3_000_000)), ms(3));
        idle.woke(0, 1024);
        assert_eq!(idle.sleep(Some(10)), ms(1));
        // A wake that found an eighth of the ring drops it to the poll.
        idle.woke(0, 1024);
        idle.sleep(bound);
        idle.woke(128, 1024);
        assert_eq!(idle.sleep(bound), ms(1));
    }
}
