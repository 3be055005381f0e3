//! `rtrec bench --study throughput`: for each write back-end and record
//! size, the highest record rate the recorder keeps up with for
//! `--probe-duration` (default 60 s), as a fraction of the device's
//! sequential write bandwidth measured by fio in the same run (the
//! headline), beside the fraction of fio's job with the same back-end and
//! block size; whether some back-end reaches [`TARGET_OF_DEVICE`] of the
//! device, and for every row what stopped it, measured; `--repeat N` runs
//! the whole study N times and gives each cell's spread.
//!
//! Design choices:
//! - **A rate holds when the recorder loses nothing and keeps up**
//!   ([`holds`], rule [`HoldRule::Drops`], the default): 0 records dropped,
//!   no writer error, and at the producer's last record the writer's backlog
//!   (records queued but not yet written) at most half the ring
//!   ([`BACKLOG_LIMIT`]) and at most 5 % of the payload offered during the
//!   probe ([`BACKLOG_OF_OFFERED`]) or 4 records ([`BACKLOG_RECORDS`]),
//!   whichever is more: a writer slower than the rate would
//!   overflow the ring in a longer probe, and a ring sized for long stalls
//!   would otherwise hide it in a short one. Lateness and missed periods are reported beside it, not judged:
//!   one hypervisor hiccup makes a release late whatever the back-end does.
//!   `--hold-rule max` (every release within one period, no missed period)
//!   or `p99` adds the producer's schedule to the rule.
//! - **The search is reproducible: coarse bisection, then k-of-k
//!   confirmation.** A coarse search with short probes (`--coarse-duration`,
//!   default 5 s) starts at the device's bandwidth and halves the rate
//!   until a probe holds, then bisects that factor of 2 geometrically
//!   `--steps` times (default 5; 3 steps leave 2^(1/8), 9 %). It used to
//!   climb ×4 from 1 MiB/s and bisect a factor of 4 (3 steps: 19 %): on
//!   the host's disk the answers were the grid's points (2.0, 2.14, 2.38
//!   GiB/s), and the grid, not the recorder, decided up to a fifth of the
//!   fraction. Without a device figure it still climbs. The
//!   candidate is then confirmed: it must hold `--confirmations` (k, default
//!   3) full-length probes in a row; on the first that does not, the rate
//!   steps down 10 % ([`STEP_DOWN`]) and the k start again (at most
//!   [`MAX_STEP_DOWNS`] times; a row none of whose rates held k times says
//!   so, `confirmed` false, rate 0). The answer is the highest rate that
//!   held k of k. **Confirmation starts at most at the device's
//!   bandwidth**: no recording keeps up with more for long, and a short
//!   coarse probe above it measures the page cache (on `sd`, 8.75 MiB/s,
//!   buffered 2 s probes held 32 MiB/s, and eight 10 % steps from there
//!   never came down to the device: the row read 0).
//! - **The device's sequential write bandwidth is the best of fio's four
//!   1 MiB sequential jobs** (`device_bandwidth`): one per back-end's
//!   settings (psync buffered with `end_fsync`, psync `O_DIRECT`, io_uring
//!   `O_DIRECT` and buffered at the engine's depth), each ending with the
//!   data on the device. The best, because the question is what the device
//!   can absorb, and which way of writing gets the most out of it differs
//!   by device: queue-depth-1 `O_DIRECT` understates a virtio disk that
//!   serves several requests at once, and the page cache's writeback
//!   overlaps copying and writing. 1 MiB, because a device's sequential
//!   figure is a large-block one. Without fio it is our own sequential
//!   1 MiB `O_DIRECT` writer, and the like-for-like column is empty.
//! - **fio per back-end, like for like** ([`fio_job`]): sequential writes of
//!   the record size (at least 4 KiB for `O_DIRECT`, the engine's block)
//!   with `psync` (buffered: `direct=0`, `end_fsync=1`; direct:
//!   `direct=1`) and `io_uring` at the engine's default depth
//!   ([`rtrec_engine::DEFAULT_IO_DEPTH`]) for `uring` (`direct=1`) and
//!   `uring-buffered` (`direct=0`). At 1 MiB these are the device's jobs,
//!   so one measurement serves both columns. A buffered job writes at most
//!   what the best `O_DIRECT` job wrote in its time ([`buffered_len`]):
//!   fio's `--runtime` does not bound `end_fsync`, and 1 GiB in the page
//!   cache of an 8 MiB/s card is two minutes of flushing.
//! - **Every row says what stopped it, measured** ([`limit_of`]): the
//!   failed probe closest above the answer, with the CPU time of the
//!   producer and writer threads, of the whole process (io_uring's workers
//!   included) and of the machine's cores (`/proc/stat`: busy and steal)
//!   over the probe: the cores at least [`BUSY_SHARE`] busy is `cpu`, the
//!   writer or the producer on a CPU that share of the probe is
//!   `writer-cpu` / `producer-cpu`, else `device` (the writer waited in the
//!   kernel for the I/O to complete while its backlog grew).
//! - **Reproducibility is shown, not assumed**: `--repeat N` runs the
//!   whole study N times under the same lock, fio included, and each
//!   cell's spread is the highest held rate over the lowest; the cell
//!   agrees when that is at most [`AGREE_WITHIN`].
//! - **The producer is a real application**: each probe's producer thread
//!   gets the run's real-time setup ([`crate::producer`], `record --rt`'s:
//!   SCHED_FIFO 80, writer 79, mlockall; `--no-rt` for normal priority),
//!   raised after the recorder exists so its flush thread stays normal.
//! - **A probe is a whole recording** through the engine (ring mode, the
//!   framing and the ring size `rtrec record` would choose for that rate
//!   and record size), in a fresh directory that is deleted after it, so
//!   probes do not fill the file system; a rate whose recording would not
//!   fit in the free space is not probed (the row then says the limit was
//!   the space, `capped`).
//! - **A probe's files are fallocated as it goes** (`--alloc fallocate`),
//!   the state a long recording reaches once its pool's prepared files are
//!   spent (the pool's `on_empty` default): a fresh pool in every probe's
//!   fresh directory zero-filled 2 × 64 MiB before each probe, 16 s on
//!   `sd` (of a 5 s probe) and device time the previous probe's writeback
//!   competed with; the study measures the sustained rate, not the start.
//!   `--alloc pool` measures the other steady state, a logger whose
//!   retention recycles ([`POOL_FILES`]): each back-end and record size
//!   gets a pool in its probe directory, zero-filled once before its first
//!   probe, and the reclaim thread below recycles finished files into it
//!   instead of deleting them (`rtrec pool recycle`'s
//!   [`rtrec_engine::pool::Pool::recycle`]), so every file a probe writes
//!   is written space and a durable point needs no extent conversion. A
//!   probe that found the pool empty says so (`pool_fallbacks`: files it
//!   fell back to `fallocate` for).
//! - **A probe reclaims its own space as it records**, as a logger's
//!   retention job does: a thread at nice 10 deletes finished files, all but
//!   the newest [`KEEP_FILES`], so a 60 s probe at the device's full rate
//!   fits on the bench's 2 GiB file system. Each deletion frees a file's
//!   extents (a journal transaction, like the BGTRUNC load), and every
//!   back-end pays it alike; only when even that does not fit is a rate
//!   left unprobed (`capped`).
//! - **Reports combine** ([`combine`], `--combine A.json,B.json`): one
//!   invocation per device (each holds the machine-wide lock for its whole
//!   run), then one table and one plot of every device.
//! - **The back-ends are [`Io::ALL`](rtrec_engine::Io::ALL), never a list
//!   of our own** ([`backends`], [`device_job_order`]), and fio's job for
//!   each is derived from what it says of itself (`fio`): a new back-end is
//!   in the study without an edit here.
//!
//! The modules, lowest first: `options` (the study's numbers, the
//! back-ends, [`Options`]) · `report` (the result, the `--json` schema) ·
//! `judge` ([`holds`], [`limit_of`], [`verdicts`], [`spread`]) · `probe`
//! (one recording at one rate) · `search` ([`search()`]: coarse search,
//! bisection, confirmation) · `fio` (the device's bandwidth, [`fio_job`])
//! · `render` ([`render()`], [`combine`]) · `runs` ([`run`]). This file only
//! joins them; each imports only those before it.

mod fio;
mod judge;
mod options;
mod probe;
mod render;
mod report;
mod runs;
mod search;
#[cfg(test)]
mod tests;

pub use fio::{buffered_len, fio_job};
pub(crate) use fio::{fio_for, fio_json};
pub use judge::{holds, limit_of, spread, verdicts};
pub use options::{
    backends, device_job_order, usable_backends, HoldRule, Options, AGREE_WITHIN, BACKLOG_LIMIT,
    BACKLOG_OF_OFFERED, BACKLOG_RECORDS, BUSY_SHARE, DEFAULT_CONFIRMATIONS, DEVICE_BLOCK,
    KEEP_FILES, MAX_STEP_DOWNS, POOL_FILES, SIZES, STEP_DOWN, TARGET_OF_DEVICE,
};
pub(crate) use probe::probe_file_bytes;
pub(crate) use probe::record_ring;
pub(crate) use render::range;
pub use render::{combine, render};
pub use report::{FioFigure, Limit, Probe, ProbeLoad, Row, Run, Spread, ThroughputReport, Verdict};
pub use runs::run;
pub use search::search;
