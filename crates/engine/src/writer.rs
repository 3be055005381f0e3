//! The writer: turns records into frames and `write()` calls on the current
//! file, rotates to the next file when one is full, stores every loss as a
//! frame, times each `write()`, and feeds the flusher. In direct mode the
//! caller's thread drives it; in ring mode the writer thread does.
//!
//! Packed framing: records of consecutive sequence numbers are gathered in
//! one open frame (a buffer allocated once, [`PACKED_PAYLOAD`] bytes) and
//! written as one [`FrameKind::Packed`] frame when it is full, before a loss,
//! a trigger or the end frame, when rotating to the next file, and when its
//! oldest record has waited `max_latency_ns` (checked on each record and by
//! the writer thread's poll, [`Writer::tick`]; in direct mode, with no
//! writer thread, by the next record or the end). Records in the open frame
//! are queued, not written: they count as written only once their frame
//! is; a kill or power cut loses at most `max_latency_ns` of them (and the
//! writer poll interval), and a failed write of the frame counts them in
//! `lost_in_open_frame`.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rtrec_sys as sys;

use crate::config::{Alloc, Config, Framing, OnPoolEmpty};
use crate::error::{Error, Failure};
use crate::file::{self, OpenFile};
use crate::flusher::{FlushStats, Flusher};
use crate::format::{
    self, EndPayload, FileHeader, FrameKind, LossPayload, LossReason, PackedInfo, FRAME_HEADER_LEN,
    HEADER_LEN, PACKED_PAYLOAD,
};
use crate::pool::{Pool, Refiller};
use crate::sizing::END_PAYLOAD_MAX;
use crate::stats::Latency;

/// What the writer's steps return: a failure is also kept in the report
/// (the first one wins), typed, for the summary.
pub(crate) type Step = Result<(), Failure>;

/// Counters readable while recording (progress display), updated with
/// relaxed atomic stores: no lock, no system call.
#[derive(Debug, Default)]
pub struct LiveStats {
    /// Records stored so far.
    pub records_written: AtomicU64,
    /// Payload bytes stored so far.
    pub bytes_written: AtomicU64,
    /// Largest `write()` latency so far, ns.
    pub max_write_ns: AtomicU64,
    /// Records dropped so far (counted by the producer).
    pub records_dropped: AtomicU64,
    /// Flight-recorder events started so far.
    pub events: AtomicU64,
}

/// How the file pool served the recording.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PoolStats {
    /// Files taken from the pool.
    pub taken: u64,
    /// Files pre-allocated with fallocate because the pool was empty.
    pub fallbacks: u64,
    /// Times the writer waited for a prepared file.
    pub waits: u64,
    /// Total time waited, ns.
    pub wait_ns: u64,
    /// Files prepared when the recording was created (the pool was empty).
    pub prepared_at_start: u64,
    /// Files prepared by the background refiller while recording.
    pub refilled_while_recording: u64,
    /// Files prepared in `finish()` after the recording was closed.
    pub refilled_on_finish: u64,
}

/// What the writer did; merged into the recorder's summary.
#[derive(Debug, Default)]
pub(crate) struct WriterReport {
    pub(crate) records_written: u64,
    pub(crate) bytes_written: u64,
    pub(crate) file_bytes: u64,
    pub(crate) lost_stored: u64,
    pub(crate) files: Vec<PathBuf>,
    pub(crate) write_lat: Latency,
    pub(crate) write_samples: Vec<u64>,
    pub(crate) flush: FlushStats,
    pub(crate) pool: PoolStats,
    pub(crate) error: Option<Failure>,
    pub(crate) warnings: Vec<String>,
    /// Packed framing: records of an open frame whose write failed (they
    /// were neither written nor dropped by the producer).
    pub(crate) lost_in_open_frame: u64,
}

/// Packed framing: the frame being filled (see the module docs).
struct OpenPack {
    /// [`PackedInfo`] space, then each record behind its LEB128 length.
    buf: Vec<u8>,
    /// Records in it (0: no open frame).
    count: u32,
    /// Their payload bytes.
    bytes: u64,
    /// Sequence number and time of the first record.
    first_seq: u64,
    first_ts: u64,
    /// Time of the last record.
    last_ts: u64,
}

/// See the module docs.
pub(crate) struct Writer {
    dir: PathBuf,
    base: String,
    cfg: Config,
    cur: Option<OpenFile>,
    cur_base: String,
    cur_index: u32,
    pool: Option<Pool>,
    refiller: Option<Refiller>,
    flusher: Flusher,
    hdr: [u8; FRAME_HEADER_LEN],
    /// The recording id stored in each file header (new for each event).
    recording_id: u64,
    /// CRC of the last frame written: the next frame's link.
    chain: u32,
    /// Raw framing: chunk sums of the current file, and of the closed ones.
    raw_sum: format::RawSummer,
    raw_sums: Vec<format::RawFileSums>,
    next_seq: u64,
    dropped: u64,
    report: WriterReport,
    live: Arc<LiveStats>,
    pack: OpenPack,
}

impl Writer {
    /// Opens the pool (if used), prepares the first file (not in flight
    /// mode: event files come with triggers) and starts the flusher.
    pub(crate) fn create(dir: &Path, cfg: &Config, live: Arc<LiveStats>) -> Result<Writer, Error> {
        file::check_dir(dir)?;
        let mut cfg = cfg.clone();
        let mut report = WriterReport {
            write_samples: Vec::with_capacity(cfg.keep_write_samples),
            files: Vec::with_capacity(16),
            ..WriterReport::default()
        };
        let mut pool = None;
        if cfg.alloc == Alloc::Pool {
            let (p, resized) = Pool::open_resized(dir, cfg.file_size, cfg.pool.files)?;
            if let Some(r) = resized {
                report.warnings.push(r.to_string());
            }
            // The pool's file size decides; check that records still fit.
            cfg.file_size = p.file_size();
            if cfg.stored_len(cfg.max_record) > cfg.usable_file_bytes() {
                return Err(Error::Usage(format!(
                    "the pool's files ({} bytes) cannot hold a record of {} bytes; prepare a pool with larger files",
                    p.file_size(),
                    cfg.max_record
                )));
            }
            if p.ready()
                .map_err(|e| Error::io("listing", p.dir(), e))?
                .is_empty()
            {
                // Not recording yet: preparing here is idle time.
                p.prepare_one()?;
                report.pool.prepared_at_start += 1;
            }
            pool = Some(p);
        }
        let base = file::recording_base(dir, &cfg);
        let flusher =
            Flusher::start(&cfg).map_err(|e| Error::io("starting the flush thread for", dir, e))?;
        let refiller = match &pool {
            Some(p) if cfg.pool.refill_while_recording => Some(p.start_refiller()),
            _ => None,
        };
        let mut w = Writer {
            dir: dir.to_path_buf(),
            cur_base: base.clone(),
            base,
            cfg,
            cur: None,
            cur_index: 0,
            pool,
            refiller,
            flusher,
            hdr: [0; FRAME_HEADER_LEN],
            recording_id: format::new_recording_id(),
            chain: 0,
            raw_sum: format::RawSummer::default(),
            raw_sums: Vec::new(),
            next_seq: 0,
            dropped: 0,
            report,
            live,
            pack: OpenPack {
                buf: Vec::new(),
                count: 0,
                bytes: 0,
                first_seq: 0,
                first_ts: 0,
                last_ts: 0,
            },
        };
        if w.cfg.framing == Framing::Packed {
            w.pack.buf.reserve_exact(PACKED_PAYLOAD);
        }
        if w.cfg.flight.is_none() {
            w.open_next()?;
        }
        Ok(w)
    }

    /// The recording's name (files are `BASE-NNNN.rtr`, events `BASE-evNNNNN-NNNN.rtr`).
    #[allow(dead_code)]
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// Gets the next file of `cur_base`: from the pool, or as the strategy
    /// (or the pool's empty policy) says.
    fn open_next(&mut self) -> Result<(), Error> {
        let index = self.cur_index;
        let f = match self.pool.clone() {
            None => file::prepare(
                &self.dir,
                &self.cur_base,
                index,
                &self.cfg,
                sys::realtime_ns(),
                self.recording_id,
            )?,
            Some(pool) => {
                let path = self
                    .dir
                    .join(file::file_name(&self.cur_base, index, self.cfg.framing));
                let header = FileHeader {
                    flags: self.cfg.header_flags(),
                    generation: 0,
                    created_ns: 0,
                    created_mono_ns: 0,
                    config_digest: self.cfg.digest(),
                    valid_len: 0,
                    recording_id: self.recording_id,
                    index,
                };
                let mut waited_since = None;
                loop {
                    if let Some(f) = pool.take(&path, header.clone())? {
                        self.report.pool.taken += 1;
                        if let Some(t0) = waited_since {
                            self.report.pool.waits += 1;
                            self.report.pool.wait_ns += sys::monotonic_ns() - t0;
                        }
                        break f;
                    }
                    match self.cfg.pool.on_empty {
                        OnPoolEmpty::Fallocate => {
                            self.report.pool.fallbacks += 1;
                            break file::prepare(
                                &self.dir,
                                &self.cur_base,
                                index,
                                &self.cfg,
                                sys::realtime_ns(),
                                self.recording_id,
                            )?;
                        }
                        OnPoolEmpty::Wait => {
                            // Someone must prepare: make sure the refiller runs.
                            if self.refiller.is_none() {
                                self.refiller = Some(pool.start_refiller());
                            }
                            waited_since.get_or_insert_with(sys::monotonic_ns);
                            std::thread::sleep(std::time::Duration::from_millis(2));
                        }
                    }
                }
            }
        };
        self.flusher.switch(f.file.clone());
        self.report.files.push(f.path.clone());
        self.cur = Some(f);
        self.cur_index += 1;
        Ok(())
    }

    /// Flight recorder: opens the first file of event `event`, whose records
    /// start at `first_seq`.
    pub(crate) fn begin_event(&mut self, event: u64, first_seq: u64) -> Step {
        self.live.events.store(event + 1, Ordering::Relaxed);
        self.cur_base = format!("{}-ev{event:05}", self.base);
        self.cur_index = 0;
        self.recording_id = format::new_recording_id();
        self.next_seq = first_seq;
        self.open_next_or_fail()
    }

    /// [`Writer::open_next`] while recording: a failure (e.g. no space for
    /// the next file) is kept typed, with its errno.
    fn open_next_or_fail(&mut self) -> Step {
        self.open_next()
            .map_err(|e| self.fail(Failure::from_error(&e)))
    }

    /// Keeps the first failure for the summary and hands it back.
    fn fail(&mut self, f: Failure) -> Failure {
        self.report.error.get_or_insert_with(|| f.clone());
        f
    }

    /// Flight recorder: closes the current event's file.
    pub(crate) fn end_event(&mut self, post_ns: u64, post_records: u64) -> Step {
        self.close_current(true, false, "", (post_ns, post_records))
    }

    /// True once a write failed; later records are dropped and counted.
    pub(crate) fn failed(&self) -> bool {
        self.report.error.is_some()
    }

    /// Writes one record (packed framing: adds it to the open frame). Any
    /// gap before `seq` that no loss frame explained is stored as a loss
    /// first.
    pub(crate) fn write_data(&mut self, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        if seq > self.next_seq {
            let gap = LossPayload {
                first_seq: self.next_seq,
                count: seq - self.next_seq,
                reason: LossReason::RingFull,
            };
            self.write_loss(gap, ts_ns)?;
        }
        if self.cfg.framing == Framing::Packed && format::packable(payload.len()) {
            return self.pack(seq, ts_ns, payload);
        }
        self.seal()?;
        self.ensure_room(self.cfg.stored_len(payload.len()))?;
        let t0 = sys::monotonic_ns();
        let r = self.put(FrameKind::Data, seq, ts_ns, payload);
        let dt = sys::monotonic_ns() - t0;
        r?;
        self.next_seq = seq + 1;
        self.count_written(1, payload.len() as u64, dt);
        Ok(())
    }

    /// Counts records as written by one `write()` that took `dt` ns.
    fn count_written(&mut self, records: u64, bytes: u64, dt: u64) {
        self.report.write_lat.record(dt);
        if self.report.write_samples.len() < self.report.write_samples.capacity() {
            self.report.write_samples.push(dt);
        }
        self.report.records_written += records;
        self.report.bytes_written += bytes;
        self.live
            .records_written
            .store(self.report.records_written, Ordering::Relaxed);
        self.live
            .bytes_written
            .store(self.report.bytes_written, Ordering::Relaxed);
        self.live.max_write_ns.fetch_max(dt, Ordering::Relaxed);
    }

    /// Packed framing: adds a record to the open frame, writing the frame
    /// first when the record does not fit in it (or its file), and after
    /// when the frame's first record has waited `max_latency_ns`.
    fn pack(&mut self, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        let add = format::leb128_len(payload.len()) + payload.len();
        if self.pack.count > 0 {
            let framed = (FRAME_HEADER_LEN + self.pack.buf.len() + add) as u64;
            let in_file = self
                .cur
                .as_ref()
                .is_some_and(|c| c.offset + framed <= self.cfg.usable_file_bytes());
            if self.pack.buf.len() + add > PACKED_PAYLOAD || !in_file {
                self.seal()?;
            }
        }
        if self.pack.count == 0 {
            self.ensure_room((FRAME_HEADER_LEN + PackedInfo::LEN + add) as u64)?;
            self.pack.buf.clear();
            self.pack.buf.extend_from_slice(&[0; PackedInfo::LEN]);
            self.pack.first_seq = seq;
            self.pack.first_ts = ts_ns;
        }
        // Within the capacity reserved at creation: no allocation.
        format::put_leb128(&mut self.pack.buf, payload.len());
        self.pack.buf.extend_from_slice(payload);
        self.pack.count += 1;
        self.pack.bytes += payload.len() as u64;
        self.pack.last_ts = ts_ns;
        self.next_seq = seq + 1;
        self.tick(ts_ns)
    }

    /// Packed framing: writes the open frame when its first record has
    /// waited `max_latency_ns` at `now` (`CLOCK_MONOTONIC`). The writer
    /// thread calls it on each poll, so a frame never waits for the next
    /// record.
    pub(crate) fn tick(&mut self, now: u64) -> Step {
        if self.pack.count > 0 && now.saturating_sub(self.pack.first_ts) >= self.cfg.max_latency_ns
        {
            self.seal()?;
        }
        Ok(())
    }

    /// Packed framing: writes the open frame, if any, as one packed frame.
    fn seal(&mut self) -> Step {
        if self.pack.count == 0 {
            return Ok(());
        }
        let info = PackedInfo {
            count: self.pack.count,
            span_ns: self.pack.last_ts.saturating_sub(self.pack.first_ts),
        };
        self.pack.buf[..PackedInfo::LEN].copy_from_slice(&info.encode());
        let (records, bytes) = (self.pack.count as u64, self.pack.bytes);
        (self.pack.count, self.pack.bytes) = (0, 0);
        // Taken out for the call and put back: no allocation.
        let buf = std::mem::take(&mut self.pack.buf);
        let t0 = sys::monotonic_ns();
        let r = self.put(
            FrameKind::Packed,
            self.pack.first_seq,
            self.pack.first_ts,
            &buf,
        );
        let dt = sys::monotonic_ns() - t0;
        self.pack.buf = buf;
        match r {
            Ok(()) => {
                self.count_written(records, bytes, dt);
                Ok(())
            }
            Err(e) => {
                self.report.lost_in_open_frame += records;
                Err(e)
            }
        }
    }

    /// Stores that `loss.count` records from `loss.first_seq` were dropped.
    pub(crate) fn write_loss(&mut self, loss: LossPayload, ts_ns: u64) -> Step {
        // Frames stay in sequence order: the open frame goes first.
        self.seal()?;
        self.dropped += loss.count;
        self.next_seq = self.next_seq.max(loss.first_seq + loss.count);
        if self.cfg.framing == Framing::Raw {
            // Raw files cannot hold a loss; the sidecar stores the count.
            self.report.lost_stored += loss.count;
            return Ok(());
        }
        self.ensure_room(FRAME_HEADER_LEN as u64 + LossPayload::LEN as u64)?;
        self.put(FrameKind::Loss, loss.first_seq, ts_ns, &loss.encode())?;
        self.report.lost_stored += loss.count;
        Ok(())
    }

    /// Writes a frame of another kind (the flight recorder's trigger).
    #[allow(dead_code)]
    pub(crate) fn write_marker(
        &mut self,
        kind: FrameKind,
        seq: u64,
        ts_ns: u64,
        payload: &[u8],
    ) -> Step {
        if self.cfg.framing == Framing::Raw {
            return Ok(());
        }
        self.seal()?;
        self.ensure_room(self.cfg.stored_len(payload.len()))?;
        self.put(kind, seq, ts_ns, payload)
    }

    /// Rotates to the next file when `need` more bytes do not fit.
    fn ensure_room(&mut self, need: u64) -> Step {
        let Some(cur) = self.cur.as_ref() else {
            return Err(self.fail(Failure::closed()));
        };
        if cur.offset + need <= self.cfg.usable_file_bytes() || need > self.cfg.usable_file_bytes()
        {
            return Ok(());
        }
        self.close_current(true, true, "", (0, 0))?;
        self.open_next_or_fail()
    }

    /// One frame, one `writev()` (or `write()` for raw payloads), retried
    /// only for short writes and EINTR.
    fn put(&mut self, kind: FrameKind, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        self.put_inner(kind, seq, ts_ns, payload)
            .map_err(|e| self.fail(e))
    }

    fn put_inner(&mut self, kind: FrameKind, seq: u64, ts_ns: u64, payload: &[u8]) -> Step {
        let cur = self.cur.as_mut().ok_or_else(Failure::closed)?;
        let f: &File = &cur.file;
        let (mut head, mut body): (&[u8], &[u8]) = (&[], payload);
        if self.cfg.framing.has_frames() {
            // A file's first frame links to the header, every later one to
            // the frame before it (see the format module's chaining).
            let prev = if cur.offset == HEADER_LEN as u64 {
                format::chain_seed(&cur.header)
            } else {
                self.chain
            };
            self.chain = format::encode_frame_header(
                &mut self.hdr,
                cur.header.generation,
                kind,
                seq,
                ts_ns,
                prev,
                payload,
            );
            head = &self.hdr;
        }
        while !head.is_empty() || !body.is_empty() {
            let r = if head.is_empty() {
                sys::write_once(f, body)
            } else {
                sys::writev2_once(f, head, body)
            };
            match r {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero).into()),
                Ok(mut n) => {
                    cur.offset += n as u64;
                    let h = n.min(head.len());
                    head = &head[h..];
                    n -= h;
                    if self.cfg.framing == Framing::Raw {
                        self.raw_sum.update(&body[..n]);
                    }
                    body = &body[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.flusher.advance(cur.offset);
        Ok(())
    }

    fn close_current(
        &mut self,
        complete: bool,
        continued: bool,
        reason: &str,
        post: (u64, u64),
    ) -> Step {
        self.seal()?;
        if self.cfg.framing.has_frames() {
            let end = EndPayload {
                complete,
                continued,
                records_written: self.report.records_written,
                records_dropped: self.dropped,
                bytes_written: self.report.bytes_written,
                post_ns: post.0,
                post_records: post.1,
                reason: reason.to_string(),
            };
            let mut bytes = end.encode();
            bytes.truncate(END_PAYLOAD_MAX);
            let seq = self.next_seq;
            self.put(FrameKind::End, seq, sys::monotonic_ns(), &bytes)?;
        }
        let Some(mut cur) = self.cur.take() else {
            return Err(self.fail(Failure::closed()));
        };
        self.report.file_bytes += cur.offset;
        if self.cfg.framing == Framing::Raw {
            let name = cur
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            let sums = self.raw_sum.finish_file(name.unwrap_or_default());
            self.raw_sums.push(sums);
        }
        file::close(&mut cur, self.cfg.framing).map_err(|e| {
            let f = Failure::from_io(&e).context(&format!("closing '{}'", cur.path.display()));
            self.fail(f)
        })
    }

    /// Ends the recording: stores drops up to `end_seq`, writes the end frame,
    /// truncates, fsyncs, stops the flusher, writes the raw sidecar.
    pub(crate) fn finish(mut self, end_seq: u64, complete: bool, reason: &str) -> WriterReport {
        if end_seq > self.next_seq && !self.failed() && self.cur.is_some() {
            let gap = LossPayload {
                first_seq: self.next_seq,
                count: end_seq - self.next_seq,
                reason: LossReason::RingFull,
            };
            let _ = self.write_loss(gap, sys::monotonic_ns());
        }
        if end_seq > self.next_seq {
            // Could not be stored (the file had failed): still counted.
            self.dropped += end_seq - self.next_seq;
            self.next_seq = end_seq;
        }
        let closed = if self.cur.is_some() {
            self.close_current(complete, false, reason, (0, 0))
        } else {
            Ok(())
        };
        if let Err(e) = closed {
            // Already kept when it was the first failure.
            self.fail(e);
        }
        self.report.flush = self.flusher.stop();
        if let Some(r) = self.refiller.take() {
            self.report.pool.refilled_while_recording = r.stop();
        }
        if let (Some(pool), true) = (&self.pool, self.cfg.pool.refill_on_finish) {
            // Replace what this recording got, up to the target (see
            // `Pool::refill`): disk use stays what the next recording needs.
            let used = self.report.pool.taken + self.report.pool.fallbacks;
            match pool.refill(used) {
                Ok(n) => self.report.pool.refilled_on_finish = n as u64,
                // Every record is stored; only the next recording's start is
                // affected, so this is a warning, not a recording error.
                Err(e) => self
                    .report
                    .warnings
                    .push(format!("the pool could not be refilled: {e}")),
            }
        }
        if self.cfg.framing == Framing::Raw {
            self.write_sidecar(complete, reason);
        }
        self.report
    }

    fn write_sidecar(&mut self, complete: bool, reason: &str) {
        let meta = serde_json::json!({
            "format": "rtrec-raw-sidecar-2",
            "files": self.report.files,
            "chunk_bytes": format::RAW_CHUNK,
            "file_sums": self.raw_sums,
            "complete": complete,
            "reason": reason,
            "records_written": self.report.records_written,
            "records_dropped": self.dropped,
            "bytes_written": self.report.bytes_written,
            "config": self.cfg,
        });
        let path = self.dir.join(format!("{}.meta.json", self.base));
        let r = sys::create_new(&path).and_then(|mut f| {
            use std::io::Write;
            f.write_all(
                serde_json::to_string_pretty(&meta)
                    .unwrap_or_default()
                    .as_bytes(),
            )?;
            sys::fsync(&f)
        });
        if let Err(e) = r {
            self.fail(Failure::from_io(&e).context(&format!("writing '{}'", path.display())));
        }
    }
}
