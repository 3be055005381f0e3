//! `rtrec bench --study cost`: what a byte costs (issue 34). For each
//! write back-end and record size (64 B, 1 KiB, 16 KiB, 1 MiB), the CPU
//! time of the producer, writer and flush threads and of the whole process
//! per MiB of payload recorded, beside the floor of the same bytes
//! measured in the same run: fio's CPU for the like-for-like job plus a
//! memcpy and a CRC32C. The headline is the ratio total ÷ floor, against
//! a goal per record size ([`goal`]); `--repeat N` gives each cell's
//! spread.
//!
//! Design choices:
//! - **A cell is a whole recording through the engine**, as the
//!   throughput study's probe: ring mode, [`rtrec_engine::Framing::auto`]
//!   (64 B and 1 KiB packed), the ring `rtrec record` would size for the
//!   rate, the producer with the run's real-time setup, files fallocated
//!   as they are opened (the throughput study's default, a long
//!   recording once its pool is spent: the default pool's zero-filling
//!   writes every byte twice, which fio's job does not); `--cost-bytes`
//!   of payload ([`DEFAULT_BYTES`], 256 MiB) in a fresh directory,
//!   deleted after it.
//! - **At a rate the device holds comfortably**: [`RATE_OF_DEVICE`] (¼)
//!   of the device's sequential write bandwidth, measured once per run by
//!   fio's 1 MiB job of the first `O_DIRECT` back-end, at most
//!   [`MAX_RATE`] (64 MiB/s); every cell of a run at the same rate. The
//!   cost of a rate the recorder keeps up with, not of a saturated one:
//!   a writer that falls behind writes bigger batches and looks cheaper.
//! - **The producer records in bursts** [`BURST_NS`] apart and reads its
//!   thread's CPU clock before and after each burst, not per record, so
//!   the timer's sleeps are not charged to `record()`. The writer's CPU
//!   is the engine's `writer_cpu_ns`, the flush thread's `flush.cpu_ns`.
//! - **The total is the process's CPU** (`CLOCK_PROCESS_CPUTIME_ID`: every
//!   thread, ended ones and io_uring's workers included) from the
//!   recorder's creation to after it finished, so nothing hides: threads
//!   the thread columns do not name, the last file's closing. Creating the
//!   recorder (the ring, its threads, the first file) is paid once per
//!   recording, not per byte: it is reported apart (`setup_cpu_ns`), not
//!   in the total (a 4 MiB smoke run's setup outweighed its bytes 30
//!   times). Writeback by the kernel's flusher threads is charged to
//!   neither the recorder nor fio.
//! - **The floor, per cell, in the same run**, = fio + memcpy + CRC32C:
//!   fio's whole process CPU per MiB it wrote (every thread, io_uring's
//!   workers included, read with `getrusage(RUSAGE_CHILDREN)` around the
//!   run, less the same job writing one block: see `floor::fio_cpu` for
//!   why not the `usr_cpu` + `sys_cpu` fio reports, which is in the JSON
//!   beside it), with the throughput study's job for the back-end
//!   ([`crate::throughput::fio_job`]) writing the same volume, the least
//!   of [`FLOOR_PASSES`] runs of it (`floor::fio_cpu` says why); memcpy
//!   of the same bytes in record-size pieces into a ring-sized buffer on
//!   one thread, and CRC32C (the engine's, `rtrec_engine::crc`) of them in
//!   record-size pieces on another thread pinned to another CPU, behind
//!   it, as the recorder's producer and writer do (`floor::fair_cpu`: the
//!   fair floor of issue 47), each the best of [`FLOOR_PASSES`] timed
//!   with its thread's CPU clock. The floor before it (both on one
//!   thread, the data hot in its cache) is published beside it for one
//!   release (`hot_ns_per_mib`, `ratio_hot`). Without fio the floor is
//!   memcpy + CRC32C alone and its fio column is empty.
//! - **Like for like is the recorder's own write size**: rtrec writes
//!   frames and packed blocks, not single 64 B records, so fio's block size
//!   is the mean bytes of the cell's writes (file bytes ÷ the writer's
//!   writes), rounded up to 4 KiB for `O_DIRECT` and 512 B for buffered
//!   (`floor`'s `fio_block`). A floor of 64 B `write()`s would charge the
//!   system call per record to the floor and flatter the packed framing.
//! - **Goals are constants** ([`GOAL_1MIB`] 1.5, [`GOAL_16KIB`] 2,
//!   [`GOAL_PACKED`] 4 at 64 B and, our choice, at 1 KiB, which is packed
//!   too). A cell that dropped records was not at a comfortable rate; the
//!   table says so.
//! - **Reproducibility is shown**: `--repeat N` runs the whole study N
//!   times; a cell agrees when its highest ratio is within
//!   [`AGREE_WITHIN`] of its lowest, and one that does not names the VM's
//!   steal time when the runs measured some.
//! - **The back-ends are [`rtrec_engine::Io::ALL`]**
//!   ([`crate::throughput::backends`]), never a list of our own.
//!
//! The modules, lowest first: `options` (the numbers, [`Options`]) ·
//! `report` (the result, the `--json` schema) · `record` (one cell's
//! recording) · `floor` (fio, memcpy and CRC32C) · `spread` ·
//! `render` ([`render()`]) · `runs` ([`run`]). This file only joins them.

mod floor;
mod options;
mod record;
mod render;
mod report;
mod runs;
mod spread;

pub use options::{
    goal, Options, AGREE_WITHIN, BURST_NS, DEFAULT_BYTES, FIO_MAX_NS, FLOOR_PASSES, GOAL_16KIB,
    GOAL_1MIB, GOAL_PACKED, MAX_RATE, RATE_OF_DEVICE, SIZES,
};
pub use render::render;
pub use report::{Cell, CostReport, Floor, Run, Spread};
pub use runs::run;
pub use spread::spread;
