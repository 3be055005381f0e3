//! The flight recorder (S2's fault-triggered use case), on the writer
//! thread: every record also goes into a bounded pre-trigger window in
//! memory; a trigger opens a new event file (from the pool), writes a trigger
//! frame and the window, then records live data until the post-trigger span
//! has passed. One file per event; memory is allocated once and never grows.
//!
//! Design choices:
//! - The window keeps records even after they were written to an event file,
//!   so a trigger right after (or during) an event still gets its full
//!   pre-window: each event file is self-contained, and records near two
//!   triggers appear in both files.
//! - A trigger during an event ends that event early (its end frame stores
//!   the post-trigger span actually captured) and starts the next one at once:
//!   no trigger waits.
//! - Records pushed out of the window (older than `pre_ns`, or beyond
//!   `pre_bytes`) without being in any event are counted as overwritten
//!   (drop-oldest), as the issue asks; drops in the ring are stored as loss
//!   frames in the event whose span they fall into.
//! - The trigger frame stores the trigger's wall-clock time as well as its
//!   monotonic one, so `rtrec events` lists events by the time of day.
//! - A write failure (full disk, EIO) ends only the event it happens in:
//!   its file is closed as aborted, with the failed record stored as a
//!   loss, and the recorder goes on; a later trigger opens a new event file
//!   if one can be had (the summary keeps the first failure and
//!   `complete: false`).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::config::FlightConfig;
use crate::format::{FrameKind, LossPayload, TriggerPayload};
use crate::ring::{ENTRY_DATA, ENTRY_LOSS};
use crate::sizing::ENTRY_HEADER_LEN;
use crate::writer::{Step, Writer};

/// What the flight recorder did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FlightStats {
    /// Events (triggers served; one file or more each).
    pub events: u64,
    /// Events ended early by the next trigger.
    pub events_cut_short: u64,
    /// Records that left the window without being saved in any event.
    pub overwritten_records: u64,
    /// Pre-trigger records saved, all events.
    pub pre_records_saved: u64,
    /// Post-trigger records saved, all events.
    pub post_records_saved: u64,
    /// Capacity of the window, bytes (allocated once).
    pub window_bytes: u64,
}

struct Active {
    trigger_ts: u64,
    deadline: u64,
    post_records: u64,
    last_ts: u64,
}

/// The flight recorder's state on the writer thread.
pub(crate) struct Flight {
    cfg: FlightConfig,
    window: VecDeque<u8>,
    cap: usize,
    /// Whether the oldest window entry was saved in an event.
    saved_upto_seq: u64,
    scratch: Vec<u8>,
    active: Option<Active>,
    stats: FlightStats,
}

fn entry_header(w: &VecDeque<u8>, at: usize) -> (u32, usize, u64, u64) {
    let mut h = [0u8; ENTRY_HEADER_LEN];
    for (i, b) in w.range(at..at + ENTRY_HEADER_LEN).enumerate() {
        h[i] = *b;
    }
    (
        u32::from_le_bytes(h[0..4].try_into().unwrap()),
        u32::from_le_bytes(h[4..8].try_into().unwrap()) as usize,
        u64::from_le_bytes(h[8..16].try_into().unwrap()),
        u64::from_le_bytes(h[16..24].try_into().unwrap()),
    )
}

impl Flight {
    pub(crate) fn new(cfg: FlightConfig, max_record: usize) -> Flight {
        let cap = cfg.pre_bytes as usize;
        Flight {
            window: VecDeque::with_capacity(cap),
            cap,
            saved_upto_seq: 0,
            scratch: vec![0u8; max_record.max(LossPayload::LEN)],
            active: None,
            stats: FlightStats {
                window_bytes: cap as u64,
                ..FlightStats::default()
            },
            cfg,
        }
    }

    fn pop_oldest(&mut self) {
        let (kind, len, seq, _) = entry_header(&self.window, 0);
        if kind == ENTRY_DATA && seq >= self.saved_upto_seq {
            self.stats.overwritten_records += 1;
        }
        self.window.drain(..ENTRY_HEADER_LEN + len);
    }

    /// Pushes out entries older than `pre_ns` before `now`.
    fn trim_to(&mut self, now: u64) {
        while !self.window.is_empty() {
            let (_, _, _, oldest_ts) = entry_header(&self.window, 0);
            if now.saturating_sub(oldest_ts) <= self.cfg.pre_ns {
                break;
            }
            self.pop_oldest();
        }
    }

    /// Adds an entry, pushing out the oldest to respect both bounds.
    fn remember(&mut self, kind: u32, seq: u64, ts: u64, payload: &[u8]) {
        let need = ENTRY_HEADER_LEN + payload.len();
        while !self.window.is_empty() && self.window.len() + need > self.cap {
            self.pop_oldest();
        }
        self.trim_to(ts);
        if need > self.cap {
            return;
        }
        let mut h = [0u8; ENTRY_HEADER_LEN];
        h[0..4].copy_from_slice(&kind.to_le_bytes());
        h[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        h[8..16].copy_from_slice(&seq.to_le_bytes());
        h[16..24].copy_from_slice(&ts.to_le_bytes());
        // Within capacity: VecDeque does not reallocate.
        self.window.extend(h);
        self.window.extend(payload);
    }

    /// Ends the active event if its post-trigger span is over at `now`.
    pub(crate) fn tick(&mut self, w: &mut Writer, now: u64) -> Step {
        if self.active.as_ref().is_some_and(|a| now >= a.deadline) {
            self.end_event(w)?;
        }
        Ok(())
    }

    fn end_event(&mut self, w: &mut Writer) -> Step {
        if let Some(a) = self.active.take() {
            self.stats.post_records_saved += a.post_records;
            w.end_event(a.last_ts.saturating_sub(a.trigger_ts), a.post_records)?;
        }
        Ok(())
    }

    pub(crate) fn on_data(&mut self, w: &mut Writer, seq: u64, ts: u64, payload: &[u8]) -> Step {
        self.tick(w, ts)?;
        if let Some(a) = &mut self.active {
            a.post_records += 1;
            a.last_ts = ts;
            w.write_data(seq, ts, payload)?;
            self.saved_upto_seq = seq + 1;
        }
        self.remember(ENTRY_DATA, seq, ts, payload);
        Ok(())
    }

    pub(crate) fn on_loss(&mut self, w: &mut Writer, loss: LossPayload, ts: u64) -> Step {
        self.tick(w, ts)?;
        if self.active.is_some() {
            w.write_loss(loss, ts)?;
        }
        self.remember(ENTRY_LOSS, loss.first_seq, ts, &loss.encode());
        Ok(())
    }

    pub(crate) fn on_trigger(&mut self, w: &mut Writer, seq: u64, ts: u64) -> Step {
        if self.active.is_some() {
            self.stats.events_cut_short += 1;
            self.end_event(w)?;
        }
        // The pre-trigger span is measured back from the trigger itself.
        self.trim_to(ts);
        let event = self.stats.events;
        self.stats.events += 1;
        let (first_seq, oldest_ts) = if self.window.is_empty() {
            (seq, ts)
        } else {
            let (_, _, s, t) = entry_header(&self.window, 0);
            (s, t)
        };
        let mut pre_records = 0;
        let mut at = 0;
        while at < self.window.len() {
            let (kind, len, _, _) = entry_header(&self.window, at);
            pre_records += (kind == ENTRY_DATA) as u64;
            at += ENTRY_HEADER_LEN + len;
        }
        w.begin_event(event, first_seq)?;
        // The trigger's wall-clock time: now on the real-time clock, moved
        // back by the time the trigger waited in the ring.
        let (wall, mono) = (rtrec_sys::realtime_ns(), rtrec_sys::monotonic_ns());
        let t = TriggerPayload {
            trigger_ns: ts,
            trigger_wall_ns: wall.saturating_sub(mono.saturating_sub(ts)),
            trigger_seq: seq,
            pre_ns: ts.saturating_sub(oldest_ts),
            pre_records,
        };
        w.write_marker(FrameKind::Trigger, first_seq, ts, &t.encode())?;
        let mut at = 0;
        while at < self.window.len() {
            let (kind, len, eseq, ets) = entry_header(&self.window, at);
            let start = at + ENTRY_HEADER_LEN;
            for (i, b) in self.window.range(start..start + len).enumerate() {
                self.scratch[i] = *b;
            }
            match kind {
                ENTRY_DATA => w.write_data(eseq, ets, &self.scratch[..len])?,
                _ => {
                    if let Some(l) = LossPayload::decode(&self.scratch[..len]) {
                        w.write_loss(l, ets)?;
                    }
                }
            }
            at = start + len;
        }
        self.stats.pre_records_saved += pre_records;
        self.saved_upto_seq = self.saved_upto_seq.max(seq);
        self.active = Some(Active {
            trigger_ts: ts,
            deadline: ts + self.cfg.post_ns,
            post_records: 0,
            last_ts: ts,
        });
        Ok(())
    }

    /// After a write failure: ends the active event's file as aborted (see
    /// [`Writer::abort_event`]); the recorder goes on and the next trigger
    /// opens a new event if there is room for it.
    pub(crate) fn abort(&mut self, w: &mut Writer) {
        let post = match self.active.take() {
            Some(a) => {
                self.stats.post_records_saved += a.post_records;
                (a.last_ts.saturating_sub(a.trigger_ts), a.post_records)
            }
            None => (0, 0),
        };
        w.abort_event(post);
    }

    /// Closes an active event at the end of the recording.
    pub(crate) fn finish(&mut self, w: &mut Writer) -> FlightStats {
        let _ = self.end_event(w);
        self.stats.clone()
    }
}
