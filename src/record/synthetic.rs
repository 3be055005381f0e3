//! The synthetic periodic source (the S1 workload by default): one record
//! of `--size` bytes every `--period`, released by an absolute-deadline
//! timer, its first eight bytes the sequence number and the rest a
//! recognisable pattern.

use rtrec_engine::PeriodicTimer;

use super::session::{interrupted, Outcome, Session, Timeline};

/// Offers a record every period of `timer` until `count` records, a stop
/// signal, or a failed writer.
pub fn synthetic(
    s: &mut Session,
    timer: &mut PeriodicTimer,
    size: usize,
    count: Option<u64>,
) -> Outcome {
    let mut buf = vec![0u8; size];
    // A recognisable pattern after the sequence number.
    for (i, b) in buf.iter_mut().enumerate().skip(8) {
        *b = (i % 251) as u8;
    }
    while !s.reached(count) {
        if let Some(sig) = s.idle() {
            return interrupted(sig, s.offered, count);
        }
        let tick = timer.wait();
        if s.timeline.on() {
            Timeline::push(&mut s.timeline.lateness_ns, tick.lateness_ns);
        }
        let seq = s.rec.next_seq();
        let k = 8.min(size);
        buf[..k].copy_from_slice(&seq.to_le_bytes()[..k]);
        s.record(&buf);
        if s.failed() {
            // A write error ends the recording (the summary says why).
            return Outcome::Done;
        }
    }
    Outcome::Done
}
