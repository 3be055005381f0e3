//! The one way a source reaches the recorder: a [`Session`] takes each
//! record (or, with `--explain-baseline`, copies it aside), takes the
//! trigger requests before every record and while the source waits for
//! input ([`Triggers`]), prints `--trace-written`'s lines and keeps
//! `--timeline`'s lateness samples; and how a source ended ([`Outcome`]).

use std::io::Write;
use std::sync::atomic::Ordering;

use rtrec_engine::Recorder;

use crate::signals;

/// How a source ended.
pub enum Outcome {
    /// It ran to its end (its count, the end of stdin, or Ctrl-C of an
    /// open-ended recording).
    Done,
    /// It could not go on: the sentence says why.
    Aborted(String),
    /// A stop signal cut a recording of a known length short.
    Interrupted(String),
}

/// The outcome of stop signal `sig` after `n` records offered of `count`.
pub fn interrupted(sig: i32, n: u64, count: Option<u64>) -> Outcome {
    let name = rtrec_host::signals::name(sig);
    match count {
        Some(c) => Outcome::Interrupted(format!("interrupted by {name} after {n} of {c} records")),
        // An open-ended recording ends normally on Ctrl-C: that is how it is stopped.
        None => Outcome::Done,
    }
}

/// Trigger intake, one per recording. Every request — SIGUSR1, a line on
/// stdin (`--trigger-on stdin`), a datagram from `rtrec trigger DIR` (each
/// counted into [`signals::TRIGGERS`] by its handler or thread) and the
/// `--trigger-every` schedule — becomes one `trigger()` call here.
///
/// Design choice: sources never hold the recorder; they hand records to a
/// [`Session`], which takes the requests before every record and while the
/// source waits for input. No source can skip triggers again.
pub struct Triggers {
    taken: u64,
    every_ns: Option<u64>,
    next_ns: u64,
}

impl Triggers {
    /// The intake, with `--trigger-every`'s schedule if given.
    pub fn new(every_ns: Option<u64>) -> Triggers {
        Triggers {
            taken: 0,
            every_ns,
            next_ns: rtrec_sys::monotonic_ns().saturating_add(every_ns.unwrap_or(0)),
        }
    }

    /// Turns the requests that arrived since the last call into
    /// `trigger()` calls. Real-time safe: atomics and the vDSO clock.
    pub fn take(&mut self, rec: &mut Recorder) {
        if let Some(every) = self.every_ns {
            let now = rtrec_sys::monotonic_ns();
            if now >= self.next_ns {
                signals::TRIGGERS.fetch_add(1, Ordering::Relaxed);
                // A stalled source gets one trigger, not a burst.
                self.next_ns = (self.next_ns + every).max(now + 1);
            }
        }
        let asked = signals::TRIGGERS.load(Ordering::Relaxed);
        while self.taken < asked {
            let _ = rec.trigger();
            self.taken += 1;
        }
    }
}

/// `--trace-written`: one line per record `record()` accepted. In direct
/// mode that record was written; in ring mode only queued (the writer
/// writes it later), so the line says `queued` — the written count of ring
/// mode is in `--status`.
#[derive(Clone, Copy)]
pub struct Trace {
    word: Option<&'static str>,
}

impl Trace {
    /// `on`: `--trace-written`; `ring`: the recorder is in ring mode.
    pub fn new(on: bool, ring: bool) -> Trace {
        Trace {
            word: on.then_some(if ring { "queued" } else { "written" }),
        }
    }
}

fn trace(seq: u64, t: Trace) {
    if let Some(w) = t.word {
        // Not println!: a reader that went away must not panic a recording.
        let _ = writeln!(std::io::stdout(), "{w} {seq}");
    }
}

/// The one way a source reaches the recorder: records go in through
/// [`Session::record`], waits for input through [`Session::idle`]; both take
/// the trigger requests first.
pub struct Session<'a> {
    /// The recorder.
    pub rec: &'a mut Recorder,
    /// Trigger requests, taken before every record.
    pub triggers: Triggers,
    /// Records handed to the recorder (stored or dropped and counted).
    pub offered: u64,
    /// `--explain-baseline`: records go here instead of `record()`.
    pub baseline: Option<Baseline>,
    /// `--trace-written`.
    pub trace: Trace,
    /// A `write()` failed: the recording ends (the summary says why).
    pub writer_failed: bool,
    /// The recorder's live counters: [`Session::failed`] looks at
    /// `writer_failed` there while no record is offered.
    pub live: std::sync::Arc<rtrec_engine::LiveStats>,
    /// `--timeline`: each period's lateness, allocated before the
    /// recording (never grown on the hot path).
    pub timeline: Timeline,
}

/// `--timeline`'s lateness samples, in period order; a full vector takes
/// no more (the capacity is the limit). The `record()` samples are the
/// engine's (`Summary::record_samples`), from the clock reads that time
/// `record()` anyway.
#[derive(Default)]
pub struct Timeline {
    /// Each period's lateness, ns.
    pub lateness_ns: Vec<u64>,
}

impl Timeline {
    /// Room for `n` samples, allocated now.
    pub fn with_capacity(n: usize) -> Timeline {
        Timeline {
            lateness_ns: Vec::with_capacity(n),
        }
    }

    /// `--timeline` was given.
    pub fn on(&self) -> bool {
        self.lateness_ns.capacity() > 0
    }

    /// Adds a sample while there is room (never grows `v`).
    pub fn push(v: &mut Vec<u64>, ns: u64) {
        if v.len() < v.capacity() {
            v.push(ns);
        }
    }
}

/// `--explain-baseline`: the producer's loop without rtrec's code. Each
/// record is copied into the next slot of a buffer of the ring's size, as
/// `record()` copies it into the ring, so the loop touches as much memory
/// in the same order; no atomics, no framing, no writer to wake.
///
/// Design choice: the baseline is the same command and the same loop, not
/// a second program, so that everything but `record()` — the timer, the
/// real-time setup, the CPU pin, the tracer, the writer and flush threads
/// idling beside it — is what a real run has. What its trace counts as
/// the producer's own time above the threshold is then the platform's
/// (the hypervisor's exits, which the guest sees as neither steal nor an
/// interrupt), and a real run's excess over it is rtrec's.
pub struct Baseline {
    sink: Vec<u8>,
    at: usize,
}

impl Baseline {
    /// A buffer of `bytes` (the ring's size), touched once now.
    pub fn new(bytes: usize) -> Baseline {
        // Written once now, so that no page is first touched in the loop.
        Baseline {
            sink: vec![1u8; bytes.max(1)],
            at: 0,
        }
    }

    fn copy(&mut self, data: &[u8]) {
        let n = data.len().min(self.sink.len());
        if self.at + n > self.sink.len() {
            self.at = 0;
        }
        self.sink[self.at..self.at + n].copy_from_slice(&data[..n]);
        std::hint::black_box(&self.sink[self.at..self.at + n]);
        self.at += n;
    }
}

impl Session<'_> {
    /// Offers one record: trigger requests first, then `record()` (or the
    /// baseline's copy); a failed writer is noted, and the source stops.
    pub fn record(&mut self, data: &[u8]) {
        if let Some(b) = &mut self.baseline {
            b.copy(data);
            self.offered += 1;
            return;
        }
        self.triggers.take(self.rec);
        let seq = self.rec.next_seq();
        let r = self.rec.record(data);
        match r {
            Ok(()) => trace(seq, self.trace),
            Err(rtrec_engine::RecordError::WriterFailed) => self.note_failed(),
            Err(_) => {}
        }
        self.offered += 1;
    }

    /// Between records: takes trigger requests; the stop signal caught, if
    /// any.
    pub fn idle(&mut self) -> Option<i32> {
        self.triggers.take(self.rec);
        signals::caught()
    }

    /// True once writing has failed for good (a record was refused for
    /// it, or the writer thread said so between records); the first time,
    /// one line on stderr says so at once, before the recording is ended
    /// (which may take a while on a failing card). The sources stop on it:
    /// docs/unattended.md, "Faults".
    pub fn failed(&mut self) -> bool {
        if self.writer_failed {
            return true;
        }
        if self.live.writer_failed.load(Ordering::Acquire) {
            self.note_failed();
        }
        self.writer_failed
    }

    fn note_failed(&mut self) {
        if !self.writer_failed {
            self.writer_failed = true;
            eprintln!(
                "rtrec: writing failed after {} records written; the recording ends now and rtrec exits 1 (the reason follows once it is closed)",
                self.live.records_written.load(Ordering::Relaxed)
            );
        }
    }

    /// `count` records have been offered.
    pub fn reached(&self, count: Option<u64>) -> bool {
        count.is_some_and(|c| self.offered >= c)
    }
}
