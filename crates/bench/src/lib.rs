//! `rtrec bench`: the published studies (S1, S2; see `docs/studies.md`) run on
//! the user's own machine, the published figure beside the measured one.
//!
//! **Must not depend on**: the binary. It records through the engine, reaches
//! the kernel through `rtrec-sys` and changes machine-wide state only through
//! `rtrec-host`'s journal.
//!
//! This crate owns:
//! - [`scenario`]: the cases as one table of data — every recording case a
//!   composition of the engine's strategies ([`rtrec_engine::Config`]);
//! - [`study`]: the published studies and their own protocols, below both
//!   [`scenario`] and [`protocol`];
//! - [`protocol`]: how many sets of how many calls, the period and sizes;
//! - [`benchmark`]: what runs and how it is timed;
//! - [`producer`]: the timed thread's real-time setup (`record --rt`'s,
//!   unless `--no-rt`) and what was granted;
//! - [`bgload`]: the background loads, as separate processes
//!   (`rtrec __bgload`, entry point [`bgload_main`]);
//! - [`target`]: the filesystem under test (our own loop-mounted ext4 by
//!   default) and the environment;
//! - [`flusher`]: FON / FOFF through the journaled sysctl helpers;
//! - [`s3`], [`s4`]: the fsync-tester and BFQ-weight studies; [`s4_fio`]:
//!   S4's matrix run by fio (`--with-fio`); [`export::s4_plot`]: S4's throughput
//!   shares as an SVG;
//! - [`report`]: the result schema (`--json`); [`export`]: JSON and SVG;
//!   [`output`]: tables, progress bars and warnings;
//! - [`crash`]: `--study crash`, crash states of the emulated device's write
//!   log checked against the durability contract;
//! - [`throughput`]: `--study throughput`, each write back-end's sustained
//!   rate as a fraction of the device's bandwidth, what stopped it, the
//!   spread over `--repeat` runs, and `--combine` of several devices;
//! - [`cost`]: `--study cost`, each write back-end's CPU per MiB recorded
//!   beside the floor of the same bytes (fio, memcpy, CRC32C);
//! - [`endurance`]: `--study endurance`, one long `record --rt --explain`
//!   with every slow `record()` and missed period attributed;
//! - [`Error`]: what the bench refuses before it runs (exit code 2), and
//!   [`Error::Failed`] for what fails while it runs (exit code 1).
//! - the command (private modules, their items re-exported here): `args`
//!   ([`BenchArgs`], every flag and its parser), `plan` ([`Plan`], built
//!   without I/O), `dispatch` ([`run_with`]: check, then run), `alone`
//!   (the studies that run alone and `--combine`) and `cases` (a run of
//!   the cases, S3 and S4).
//!
//! Sizes and durations on its command line and in its tables follow
//! rtrec's one grammar (`rtrec-units`): `16KiB`, `5ms`.
//!
//! Global state the bench changes — `vm.dirty_*`, a mount, a loop device —
//! is journaled before it is changed and put back on every exit path,
//! including Ctrl-C and panics; after SIGKILL the next rtrec run does it.
#![deny(missing_docs)]

mod alone;
mod args;
pub mod benchmark;
pub mod bgload;
mod cases;
pub mod cost;
pub mod crash;
mod dispatch;
pub mod endurance;
mod error;
pub mod explain;
pub mod export;
pub mod flusher;
pub mod output;
mod plan;
pub mod producer;
pub mod protocol;
pub mod report;
pub mod s3;
pub mod s4;
pub mod s4_fio;
pub mod scenario;
pub mod signal;
pub mod study;
pub mod target;
pub mod throughput;

pub use args::{parse_lock_timeout, BenchArgs};
pub use bgload::{bgload_main, Launcher};
pub use dispatch::{read_report, read_report_bytes, run, run_with, RunOptions};
pub use error::Error;
pub use plan::Plan;
pub use rtrec_emu::DeviceArg;
