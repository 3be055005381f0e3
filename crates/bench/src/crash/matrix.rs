//! What the crash study runs: its [`Options`], the matrix of cells
//! ([`CELLS`], each a recording the crash states are drawn from, chosen by
//! [`selected`]) and the record every cell writes ([`synthetic`]).

use std::path::PathBuf;
use std::time::Duration;

use rtrec_host::emufs::EmulatorCommand;

/// Bytes per record in every cell.
pub const RECORD_BYTES: usize = 4096;
/// Size of each cell's ext4 image (sparse): 512 MiB, the smallest
/// that `mkfs.ext4` formats with 4 KiB blocks, as a card's file system is.
pub(super) const IMAGE_BYTES: u64 = 512 << 20;
/// Its journal, MiB.
pub(super) const JOURNAL_MIB: u32 = 16;

/// Where records come from in a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `rtrec record`'s synthetic source, every 2 ms.
    Synthetic,
    /// `--stdin`, fed by the study every 2 ms.
    Stdin,
}

/// One cell of the matrix: a recording the states are drawn from.
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    /// Its name in lines, `--crash-cells` and the report.
    pub name: &'static str,
    /// What it varies from the base cell `default`, in a few words.
    pub varies: &'static str,
    /// `rtrec record` arguments beside the common ones.
    pub args: &'static [&'static str],
    /// Where records come from.
    pub source: Source,
    /// `--sync-every`, or `None` for rtrec's own default (1 s).
    pub sync: Option<&'static str>,
    /// A flight recorder (the arguments in `FLIGHT` added): each event is a
    /// recording of its own.
    pub flight: bool,
    /// A loop recording (the arguments in `LOOP` added): its older files
    /// are retired (recycled into the pool or deleted) while it records,
    /// and a record the loop retired under a claim the crash image holds
    /// is not owed (issue 44).
    pub looped: bool,
}

/// The flight recorder's arguments: an event every 700 ms, 200 ms before
/// it and 300 ms after (about four event files in a 3 s recording).
pub(super) const FLIGHT: [&str; 6] = [
    "--pre",
    "200ms",
    "--post",
    "300ms",
    "--trigger-every",
    "700ms",
];

/// A loop recording's arguments: 1 MiB files (about 253 records of 4 KiB
/// each), one finished file kept and two pool files, so a recording of
/// 1,000 records retires two files and recycles them into the pool.
pub const LOOP: [&str; 6] = [
    "--file-size",
    "1MiB",
    "--keep-files",
    "1",
    "--pool-files",
    "2",
];

/// The stated bound of a [`LOOP`] cell's directory, bytes of its
/// recording and pool files (docs/unattended.md, "The bound": K + 1
/// finished files, the file being written and the pool's spares, less
/// the one the new file came from): (1 + 1 + 2) × 1 MiB. The small
/// metadata files are not counted. It holds in every crash state, before
/// and after `recover` (issue 44: a retirement waits for its claim within
/// it, so the bound does not grow).
pub const LOOP_BOUND_BYTES: u64 = 4 << 20;

/// The matrix, in run order: the base cell (buffered ring, pool,
/// synthetic records, `--sync-every 200ms`), each axis of the issue varied
/// one at a time around it, then combinations where the moments meet: file
/// switches (1 MiB files) with each allocation mode and back-end, the
/// pool refilled while recording, a flight recorder on appended files,
/// no periodic sync across file switches, and loop recordings that retire
/// and recycle files with each write back-end (issue 44).
#[rustfmt::skip]
pub const CELLS: [Cell; 18] = [
    cell("default", "the base: buffered ring, pool, synthetic, --sync-every 200ms", &[], Source::Synthetic),
    cell("direct", "back-end --io direct", &["--io", "direct"], Source::Synthetic),
    cell("uring", "back-end --io uring", &["--io", "uring"], Source::Synthetic),
    cell("zero", "allocation --alloc zero", &["--alloc", "zero"], Source::Synthetic),
    cell("append", "allocation --alloc append", &["--alloc", "append"], Source::Synthetic),
    cell("stdin", "source --stdin", &[], Source::Stdin),
    Cell { flight: true, ..cell("flight", "source: the flight recorder (an event file every 700 ms)", &[], Source::Synthetic) },
    Cell { sync: None, ..cell("sync-default", "--sync-every left at rtrec's default (1 s)", &[], Source::Synthetic) },
    Cell { sync: Some("0"), ..cell("sync-0", "--sync-every 0 (durable only at a file's close)", &[], Source::Synthetic) },
    cell("switch", "1 MiB files: a file switch about every half second", &["--file-size", "1MiB"], Source::Synthetic),
    cell("switch-refill", "1 MiB files, the pool refilled while recording", &["--file-size", "1MiB", "--refill-while-recording"], Source::Synthetic),
    cell("switch-zero-uring", "1 MiB zero-filled files, --io uring", &["--alloc", "zero", "--file-size", "1MiB", "--io", "uring"], Source::Synthetic),
    cell("switch-append-stdin", "1 MiB appended files, --stdin", &["--alloc", "append", "--file-size", "1MiB"], Source::Stdin),
    Cell { sync: Some("0"), ..cell("switch-direct-sync-0", "1 MiB files, --io direct, --sync-every 0", &["--file-size", "1MiB", "--io", "direct"], Source::Synthetic) },
    Cell { flight: true, ..cell("flight-append", "the flight recorder on appended files", &["--alloc", "append"], Source::Synthetic) },
    Cell { looped: true, ..cell("loop", "a loop recording: 1 MiB files, one kept, retired files recycled into the pool", &[], Source::Synthetic) },
    Cell { looped: true, ..cell("loop-direct", "a loop recording, --io direct", &["--io", "direct"], Source::Synthetic) },
    Cell { looped: true, ..cell("loop-uring", "a loop recording, --io uring", &["--io", "uring"], Source::Synthetic) },
];

const fn cell(
    name: &'static str,
    varies: &'static str,
    args: &'static [&'static str],
    source: Source,
) -> Cell {
    Cell {
        name,
        varies,
        args,
        source,
        sync: Some("200ms"),
        flight: false,
        looped: false,
    }
}

/// The period of every cell.
pub(super) const PERIOD: Duration = Duration::from_millis(2);

/// How to run the study.
#[derive(Clone, Debug)]
pub struct Options {
    /// Crash states in all, shared evenly by the cells.
    pub states: u64,
    /// Records per recording.
    pub count: u64,
    /// Atomic unit of a torn write, bytes (512 or 4096).
    pub atomic: u64,
    /// Seed of every draw (printed, so a run can be repeated).
    pub seed: u64,
    /// The emulator (the write log's arguments are added here).
    pub emulator: EmulatorCommand,
    /// The rtrec binary.
    pub rtrec: PathBuf,
    /// Where images, logs and crash images go (a directory on this
    /// machine's disk).
    pub parent: PathBuf,
    /// Only these cells (by name; empty: every one).
    pub only: Vec<String>,
    /// Also record the first cell once with the write log off, to report
    /// the log's cost on the emulator's timing error.
    pub log_cost: bool,
    /// Power-cut cycles of one loop recording in a row instead of the
    /// matrix (0: the matrix; `--crash-cycles`, the module `cycles`).
    pub cycles: u64,
}

/// The cells `names` selects: none named or `all`, every one; else those
/// named.
pub fn selected(names: &[String]) -> Vec<&'static Cell> {
    CELLS
        .iter()
        .filter(|c| match names {
            [] => true,
            [all] if all == "all" => true,
            names => names.iter().any(|n| n == c.name),
        })
        .collect()
}

/// The synthetic record `seq`: its sequence number, then `i % 251`.
pub fn synthetic(seq: u64) -> Vec<u8> {
    let mut b: Vec<u8> = (0..RECORD_BYTES).map(|i| (i % 251) as u8).collect();
    b[..8].copy_from_slice(&seq.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_record_is_the_one_rtrec_record_writes() {
        let r = synthetic(0x0102);
        assert_eq!(r.len(), RECORD_BYTES);
        assert_eq!(&r[..8], &0x0102u64.to_le_bytes());
        assert_eq!(r[8], 8);
        assert_eq!(r[251], 0);
        assert_eq!(r[4095], (4095 % 251) as u8);
    }

    #[test]
    fn cells_are_picked_by_name_and_all_of_them_by_default() {
        assert_eq!(selected(&[]).len(), CELLS.len());
        assert_eq!(selected(&["all".into()]).len(), CELLS.len());
        let some = selected(&["flight".into(), "sync-0".into()]);
        let names: Vec<&str> = some.iter().map(|c| c.name).collect();
        assert_eq!(names, ["flight", "sync-0"]);
    }
}
