//! The ring between the producer and the writer thread: a pre-allocated,
//! pre-faulted single-producer single-consumer byte ring ([`rtrb`]) holding
//! variable-length entries, the entry kinds, and the state both ends share.
//! Transport only: the writer thread's loop that drains it is
//! [`crate::writer_thread`].
//!
//! Entry layout ([`ENTRY_HEADER_LEN`] bytes of header, then the payload; the
//! length lives in [`crate::sizing`] because the configuration checks and
//! the sizing rules need it too), written and committed
//! whole so the consumer never sees half an entry:
//!
//! ```text
//! kind u32 | len u32 | seq u64 | ts_ns u64 | payload[len]
//! ```
//!
//! Losses travel in-band: after a drop the producer keeps a pending loss
//! (first sequence, count, reason) and pushes it as a `LOSS` entry ahead of
//! the next record that fits, so the writer stores exactly which sequence
//! numbers were lost and why, in order.
//!
//! Design choice: the producer never wakes the writer (a wake-up is a system
//! call); the writer polls every `writer_poll_us` when the ring is empty.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;

use rtrb::{Consumer, Producer};

use crate::format::{LossPayload, LossReason};
use crate::sizing::ENTRY_HEADER_LEN;
/// A record.
pub(crate) const ENTRY_DATA: u32 = 1;
/// A loss: payload is a [`LossPayload`].
pub(crate) const ENTRY_LOSS: u32 = 2;
/// A flight-recorder trigger (no payload; seq = the next record's).
pub(crate) const ENTRY_TRIGGER: u32 = 4;

/// State shared by producer and writer thread (atomics only on the hot path).
pub(crate) struct RingShared {
    /// Set by the producer once it will push nothing more.
    pub(crate) stop: AtomicBool,
    /// Set by the writer when writing failed.
    pub(crate) failed: AtomicBool,
    /// The sequence number after the last one the producer handed out.
    pub(crate) end_seq: AtomicU64,
    /// How the recording ended (set before `stop`).
    pub(crate) end: Mutex<(bool, String)>,
}

impl RingShared {
    pub(crate) fn new() -> RingShared {
        RingShared {
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            end_seq: AtomicU64::new(0),
            end: Mutex::new((true, String::new())),
        }
    }
}

/// Allocates the ring and touches every byte once, so no page fault happens
/// on the first laps of a recording.
///
/// # Errors
/// `ENOMEM` (one sentence) when `bytes` cannot be allocated: the size is
/// tried with a fallible reservation first, since the ring's own
/// allocation would abort the process (a C host included) on failure.
pub(crate) fn new_prefaulted(
    bytes: usize,
) -> Result<(Producer<u8>, Consumer<u8>), crate::error::Error> {
    let mut probe: Vec<u8> = Vec::new();
    if probe.try_reserve_exact(bytes).is_err() {
        return Err(crate::error::Error::Path {
            message: format!(
                "cannot allocate a ring of {bytes} bytes (out of memory); use a smaller ring"
            ),
            errno: libc::ENOMEM,
        });
    }
    drop(probe);
    let (mut p, mut c) = rtrb::RingBuffer::<u8>::new(bytes);
    if let Ok(mut chunk) = p.write_chunk_uninit(bytes) {
        let (a, b) = chunk.as_mut_slices();
        a.fill(MaybeUninit::new(0));
        b.fill(MaybeUninit::new(0));
        // SAFETY: every slot of the chunk was initialised just above.
        unsafe { chunk.commit_all() };
    }
    if let Ok(chunk) = c.read_chunk(bytes) {
        chunk.commit_all();
    }
    Ok((p, c))
}

/// Copies `parts` one after the other into the two slices of a ring chunk.
#[inline]
fn scatter(dst: (&mut [MaybeUninit<u8>], &mut [MaybeUninit<u8>]), parts: &[&[u8]]) {
    let (a, b) = dst;
    let mut pos = 0usize;
    for part in parts {
        let mut src: &[u8] = part;
        while !src.is_empty() {
            let (slice, off) = if pos < a.len() {
                (&mut *a, pos)
            } else {
                (&mut *b, pos - a.len())
            };
            let n = src.len().min(slice.len() - off);
            // SAFETY: u8 and MaybeUninit<u8> have the same layout; the
            // destination range is in bounds (n fits in slice from off).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr(),
                    slice.as_mut_ptr().add(off) as *mut u8,
                    n,
                );
            }
            src = &src[n..];
            pos += n;
        }
    }
}

/// Pushes one entry if it fits; returns false (nothing written) if not.
/// Wait-free, allocation-free, no system call.
#[inline]
pub(crate) fn push(p: &mut Producer<u8>, kind: u32, seq: u64, ts_ns: u64, payload: &[u8]) -> bool {
    let need = ENTRY_HEADER_LEN + payload.len();
    let Ok(mut chunk) = p.write_chunk_uninit(need) else {
        return false;
    };
    let mut h = [0u8; ENTRY_HEADER_LEN];
    h[0..4].copy_from_slice(&kind.to_le_bytes());
    h[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[8..16].copy_from_slice(&seq.to_le_bytes());
    h[16..24].copy_from_slice(&ts_ns.to_le_bytes());
    let (a, b) = chunk.as_mut_slices();
    if a.len() >= need {
        // The entry lies in one piece (all but one per lap): the header
        // as a fixed-size copy, which compiles to a few moves, and the
        // payload's one `memcpy` (issue 34: a copy call less per record).
        let dst = a.as_mut_ptr() as *mut u8;
        // SAFETY: u8 and MaybeUninit<u8> have the same layout, and `a`
        // holds `need` = header + payload bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(h.as_ptr(), dst, ENTRY_HEADER_LEN);
            std::ptr::copy_nonoverlapping(
                payload.as_ptr(),
                dst.add(ENTRY_HEADER_LEN),
                payload.len(),
            );
        }
    } else {
        scatter((a, b), &[&h, payload]);
    }
    // SAFETY: either copy above initialised all `need` slots of the chunk.
    unsafe { chunk.commit_all() };
    true
}

/// Copies bytes `[skip, skip + out.len())` of a chunk's two slices into `out`
/// (a header, or the one payload per lap of the ring that its end splits:
/// a byte loop is the least code for the board's binary).
fn gather(src: (&[u8], &[u8]), skip: usize, out: &mut [u8]) {
    let (a, b) = src;
    for (i, o) in out.iter_mut().enumerate() {
        let p = skip + i;
        *o = if p < a.len() { a[p] } else { b[p - a.len()] };
    }
}

/// One entry taken from the ring: its header fields and its payload.
pub(crate) struct Entry<'a> {
    /// [`ENTRY_DATA`], [`ENTRY_LOSS`] or [`ENTRY_TRIGGER`].
    pub(crate) kind: u32,
    /// The record's sequence number (a trigger's: the next record's).
    pub(crate) seq: u64,
    /// When the producer pushed it, monotonic ns.
    pub(crate) ts: u64,
    /// The payload: the ring's own memory, or the stage's copy of it.
    pub(crate) payload: &'a [u8],
}

/// Takes the next whole entry and hands it to `f`; the entry's slots go
/// back to the producer once `f` returns. Returns `f`'s result, or `None`
/// when the ring holds no entry.
///
/// Design choice (issue 34, a copy less per record): the payload is lent
/// straight from the ring's memory when it lies in one piece, which is
/// every entry but the one per lap that wraps around the ring's end (its
/// header or its payload split by it); only that one is copied into
/// `stage` (at least the largest payload). Before,
/// every payload was copied into `stage` first and the back-end copied or
/// wrote it from there: a `memcpy` of every byte recorded on the writer's
/// core. The producer cannot overwrite a lent payload: its slots are
/// committed (freed) only after `f` has written or copied it.
pub(crate) fn pop<R>(
    c: &mut Consumer<u8>,
    stage: &mut [u8],
    f: impl FnOnce(Entry<'_>) -> R,
) -> Option<R> {
    let mut h = [0u8; ENTRY_HEADER_LEN];
    {
        let chunk = c.read_chunk(ENTRY_HEADER_LEN).ok()?;
        gather(chunk.as_slices(), 0, &mut h);
        // Not committed: the whole entry is taken below.
    }
    let field = |at: usize, n: usize| {
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(&h[at..at + n]);
        u64::from_le_bytes(v)
    };
    let kind = field(0, 4) as u32;
    let len = field(4, 4) as usize;
    let (seq, ts) = (field(8, 8), field(16, 8));
    // An entry no producer makes (see `corrupt`) is left where it is.
    if len > stage.len() {
        return None;
    }
    // The producer commits whole entries, so the rest is there.
    let chunk = c.read_chunk(ENTRY_HEADER_LEN + len).ok()?;
    let (a, b) = chunk.as_slices();
    let payload: &[u8] = if a.len() >= ENTRY_HEADER_LEN + len {
        &a[ENTRY_HEADER_LEN..ENTRY_HEADER_LEN + len]
    } else {
        gather((a, b), ENTRY_HEADER_LEN, &mut stage[..len]);
        &stage[..len]
    };
    let r = f(Entry {
        kind,
        seq,
        ts,
        payload,
    });
    chunk.commit_all();
    Some(r)
}

/// Whether the entry at the ring's read end is one no producer makes: its
/// header is there but its length is more than `stage_len` (the largest
/// payload) or more than the ring holds (the producer commits whole
/// entries). (An unknown kind with a length that fits is taken by [`pop`]
/// and ignored by the writer: it stalls nothing.) [`pop`] leaves such an
/// entry where it
/// is, so without this check the writer would wait for the rest of it
/// forever and the producer, finding the ring full, for room.
///
/// Only misuse makes one: two threads recording into one recorder at once
/// (the C API's documented misuse), whose unsynchronized pushes interleave
/// in the single-producer ring. Cost: one look at a header, taken only
/// when [`pop`] found nothing to take.
pub(crate) fn corrupt(c: &mut Consumer<u8>, stage_len: usize) -> bool {
    let mut h = [0u8; ENTRY_HEADER_LEN];
    let Ok(chunk) = c.read_chunk(ENTRY_HEADER_LEN) else {
        return false;
    };
    gather(chunk.as_slices(), 0, &mut h);
    let len = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")) as usize;
    len > stage_len || c.read_chunk(ENTRY_HEADER_LEN + len).is_err()
}

/// A loss the producer could not push yet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingLoss {
    pub(crate) first_seq: u64,
    pub(crate) count: u64,
    pub(crate) reason: LossReason,
    pub(crate) ts_ns: u64,
}

impl PendingLoss {
    pub(crate) fn payload(&self) -> [u8; LossPayload::LEN] {
        LossPayload {
            first_seq: self.first_seq,
            count: self.count,
            reason: self.reason,
        }
        .encode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two producers' interleaved pushes as the single-producer ring sees
    /// them: a header whose length runs past what was committed, or a
    /// length past the largest payload. `pop` takes neither (and does not
    /// panic), and `corrupt` names each; an intact entry, or one of an
    /// unknown kind that fits, is taken and not corrupt.
    #[test]
    fn entries_no_producer_makes_are_corrupt_and_never_taken() {
        let header = |kind: u32, len: u32| {
            let mut h = [0u8; ENTRY_HEADER_LEN];
            h[0..4].copy_from_slice(&kind.to_le_bytes());
            h[4..8].copy_from_slice(&len.to_le_bytes());
            h
        };
        let cases: [(&[u8], bool); 4] = [
            (&header(ENTRY_DATA, 8), false),
            (&header(ENTRY_DATA, 40), true),
            (&header(99, 0), false),
            (&header(ENTRY_DATA, 1000), true),
        ];
        for (h, bad) in cases {
            let (mut p, mut c) = rtrb::RingBuffer::<u8>::new(256);
            let mut stage = vec![0u8; 64];
            let mut w = p.write_chunk_uninit(h.len() + 8).unwrap();
            let (a, _) = w.as_mut_slices();
            for (d, s) in a.iter_mut().zip(h.iter().chain([0u8; 8].iter())) {
                d.write(*s);
            }
            // SAFETY: every slot of the chunk was written above.
            unsafe { w.commit_all() };
            assert_eq!(corrupt(&mut c, stage.len()), bad, "{h:?}");
            assert_eq!(pop(&mut c, &mut stage, |_| ()).is_none(), bad, "{h:?}");
        }
    }

    /// Entries of every length up to 60 bytes through a 101-byte ring, so
    /// that over the laps the ring's end falls at every place of an entry:
    /// in its header, at the header's end, inside its payload and at its
    /// end. Each comes out whole, in order, with its fields; the stage is
    /// used only for entries the ring's end splits.
    #[test]
    fn every_entry_comes_out_whole_wherever_the_ring_wraps() {
        let (mut p, mut c) = new_prefaulted(101).unwrap();
        let mut stage = vec![0u8; 64];
        let mut copied = 0;
        for round in 0..300u64 {
            let len = (round % 61) as usize;
            let payload: Vec<u8> = (0..len).map(|i| (round as u8) ^ (i as u8)).collect();
            assert!(push(&mut p, ENTRY_DATA, round, round * 7, &payload));
            let stage_ptr = stage.as_ptr();
            let (kind, seq, ts, got, from_stage) = pop(&mut c, &mut stage, |e| {
                let from_stage = e.payload.as_ptr() == stage_ptr && !e.payload.is_empty();
                (e.kind, e.seq, e.ts, e.payload.to_vec(), from_stage)
            })
            .unwrap();
            assert_eq!((kind, seq, ts), (ENTRY_DATA, round, round * 7));
            assert_eq!(got, payload, "round {round}");
            copied += usize::from(from_stage);
        }
        assert!(pop(&mut c, &mut stage, |_| ()).is_none());
        assert!(
            !corrupt(&mut c, stage.len()),
            "an empty ring is not corrupt"
        );
        // Both ways were taken: entries the ring's end split (copied; in so
        // small a ring about every other one) and entries lent whole.
        assert!(copied > 0 && copied < 300, "copied {copied} of 300");
    }

    /// The ring as a recording uses it: a producer thread and a consumer
    /// thread at once (issue 43, item 6), through a 509-byte ring (a prime,
    /// so the ring's end falls at every place of an entry over the laps),
    /// 200,000 entries of 0 to 96 bytes, about 10,000 laps. Every entry
    /// comes out once, in order, with its kind, sequence number, time and
    /// every payload byte (each derived from its sequence number, so a
    /// torn, repeated or stale entry shows). The producer retries when the
    /// ring is full, as no recorder does (it counts an overrun instead):
    /// here it makes the two ends meet at the ring's boundaries as often as
    /// possible. Neither `loom` nor Miri fits here: the atomics are
    /// `rtrb`'s (loom would have to replace them inside that crate), and
    /// Miri is not in the toolchain this project builds with.
    #[test]
    fn two_threads_every_entry_once_in_order_whole() {
        const N: u64 = 200_000;
        fn payload_of(seq: u64, out: &mut [u8; 96]) -> usize {
            let len = (seq.wrapping_mul(2_654_435_761) % 97) as usize;
            for (i, b) in out[..len].iter_mut().enumerate() {
                *b = (seq as u8).wrapping_mul(31) ^ (i as u8) ^ ((seq >> 8) as u8);
            }
            len
        }
        let (mut p, mut c) = new_prefaulted(509).unwrap();
        let producer = std::thread::spawn(move || {
            let mut buf = [0u8; 96];
            let mut full = 0u64;
            for seq in 0..N {
                let len = payload_of(seq, &mut buf);
                let kind = if seq % 1000 == 999 {
                    ENTRY_TRIGGER
                } else {
                    ENTRY_DATA
                };
                while !push(&mut p, kind, seq, seq ^ 0x5a5a, &buf[..len]) {
                    full += 1;
                    std::hint::spin_loop();
                    std::thread::yield_now();
                }
            }
            full
        });
        let mut stage = vec![0u8; 96];
        let mut want = [0u8; 96];
        let mut next = 0u64;
        while next < N {
            let got = pop(&mut c, &mut stage, |e| {
                let len = payload_of(e.seq, &mut want);
                (e.kind, e.seq, e.ts, e.payload == &want[..len])
            });
            match got {
                Some((kind, seq, ts, same)) => {
                    assert_eq!(seq, next, "out of order or repeated");
                    let want_kind = if seq % 1000 == 999 {
                        ENTRY_TRIGGER
                    } else {
                        ENTRY_DATA
                    };
                    assert_eq!((kind, ts), (want_kind, seq ^ 0x5a5a), "seq {seq}");
                    assert!(same, "payload of seq {seq} differs");
                    next += 1;
                }
                None => {
                    assert!(!corrupt(&mut c, stage.len()), "corrupt at seq {next}");
                    std::thread::yield_now();
                }
            }
        }
        let full = producer.join().unwrap();
        assert!(
            pop(&mut c, &mut stage, |_| ()).is_none(),
            "an entry past the last"
        );
        // The two ends did meet: the producer found the ring full.
        assert!(full > 0, "the producer never found the ring full");
    }

    #[test]
    fn gather_copies_across_the_two_slices() {
        let (a, b) = (&[1u8, 2, 3][..], &[4u8, 5, 6][..]);
        for skip in 0..6 {
            for n in 0..=6 - skip {
                let mut out = vec![0u8; n];
                gather((a, b), skip, &mut out);
                let want: Vec<u8> = (skip..skip + n).map(|i| i as u8 + 1).collect();
                assert_eq!(out, want, "skip {skip} n {n}");
            }
        }
    }
}
