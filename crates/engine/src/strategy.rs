//! The named strategies: every design choice of the published study (S1)
//! as an enum whose values have one name each, for the command line, JSON
//! and the C API ([`Alloc`], [`Flush`], [`Mode`], [`Framing`], [`Io`],
//! [`OnFull`], [`OnPoolEmpty`]), and the `named_enum!` macro that gives
//! them `ALL`, `name()`, `Display` and `FromStr`.
//!
//! A base module: it imports nothing from the rest of the engine, so both
//! [`crate::config`] (a configuration of these choices, and its checks) and
//! the storage back-ends in `io/` (each one value of [`Io`], with its row)
//! stand on it without importing each other. `config` re-exports every
//! type, so `rtrec_engine::config::Io` is the path users write.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How file space is obtained before and during a recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Alloc {
    /// Empty file, every write appends (S1's WAPPEND): block allocation and
    /// size updates happen inside `write()`.
    Append,
    /// `fallocate()` the whole file size first (S1's WPRE); the size is then
    /// fixed while recording and truncated at the end. Writes still convert
    /// unwritten extents at writeback.
    Fallocate,
    /// `fallocate(FALLOC_FL_KEEP_SIZE)`: blocks reserved, the size still grows
    /// with every write (an inode update per write).
    FallocateKeepSize,
    /// Pre-allocate and write zeros once before recording (then `fdatasync`),
    /// so no unwritten-extent conversion or allocation happens while
    /// recording.
    Zero,
    /// Take files from a pool prepared while idle (zero-filled, or recycled
    /// from finished recordings; see `docs/durability.md`, the pool): nothing is allocated
    /// when a recording starts, nothing truncated when it ends (the header
    /// records the valid length instead).
    Pool,
}

/// How and when written data are pushed to storage, always from the
/// background flush thread (never the producer's thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Flush {
    /// Never flush while recording; the kernel flusher decides.
    None,
    /// `fdatasync()` every `flush_every` bytes (S1's SALL, the NONE baseline).
    Fdatasync,
    /// `fsync()` every `flush_every` bytes.
    Fsync,
    /// `sync_file_range(WRITE)` on each new `flush_every` bytes (S1's SDATA):
    /// starts writeback of data only, no journal commit, no waiting.
    Sfr,
    /// Bounded trailing window (as LTTng and RocksDB do): start writeback of
    /// each completed chunk with `sync_file_range(WRITE)`, then for the chunk
    /// one window older `sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER)` and
    /// `posix_fadvise(DONTNEED)`, so dirty and cached memory stay bounded to
    /// about two windows and the chunk the producer is filling is never
    /// synced. WAIT_AFTER is added to the WAIT_BEFORE|WRITE so that
    /// DONTNEED finds the pages clean and really drops them.
    Window,
}

/// Who calls `write()`: the writer thread behind a ring, or the caller's
/// own thread inline. (Not to be confused with [`Io::Direct`], `O_DIRECT`:
/// the mode says which thread writes, [`Io`] how the bytes reach the file.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The caller's thread copies into a pre-allocated lock-free ring and a
    /// writer thread calls `write()`. `record()` never blocks.
    Ring,
    /// The caller's thread calls `write()` itself, inline in `record()` (as
    /// S1 measures it). Formerly named `direct`, which is still accepted.
    #[serde(alias = "direct")]
    #[cfg_attr(feature = "clap", value(alias = "direct"))]
    Inline,
}

/// How records are laid out in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Framing {
    /// Header plus one CRC-checked frame per record (see `docs/format.md`).
    Framed,
    /// Header plus frames that each carry many small records (a 1- or
    /// 2-byte length each, one CRC per frame), sealed when full (16 KiB), at
    /// a loss, a trigger, the end, and when the oldest record in it has
    /// waited `max_latency_ns`; larger records get a frame of their own.
    Packed,
    /// The bytes exactly as given (S1's byte stream); counters go to a
    /// `.meta.json` sidecar since the file itself cannot hold them.
    Raw,
}

/// How the writer hands frames to the kernel (the write path's back-end).
///
/// Each value is one back-end, `io/NAME.rs`, and everything particular to
/// it is that file's row (`io::Engine`): the help `--io` prints for it
/// ([`Io::help`]; clap's `ValueEnum` for this type is implemented from the
/// rows), whether it opens files with `O_DIRECT` ([`Io::is_direct`]) or
/// writes through io_uring ([`Io::is_uring`]), the configuration rules
/// [`crate::Config::validate`] runs for it, and its fallback when the
/// kernel refuses it. Only the name lives here (below, `named_enum!`).
///
/// Design choice: the back-end is the writer's business only; `record()` is
/// the same copy into the ring with every back-end, and the file format is
/// the same (see `docs/format.md`, "Direct I/O").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Io {
    /// `write()`/`writev()` into the page cache (`io/buffered.rs`).
    #[default]
    Buffered,
    /// `O_DIRECT` writes of whole blocks from an aligned buffer
    /// (`io/direct.rs`).
    Direct,
    /// `direct`'s block writes submitted through io_uring, several in
    /// flight (`io/uring.rs`).
    Uring,
    /// io_uring over the page cache, whole file-system blocks
    /// (`io/uring_buffered.rs`).
    UringBuffered,
}

impl Io {
    /// True for the default back-end, which the stored configuration leaves
    /// out (see `Config::io`). What a back-end *is* ([`Io::is_direct`],
    /// [`Io::is_uring`]) its row in `io/` says.
    pub(crate) fn is_buffered(&self) -> bool {
        *self == Io::Buffered
    }
}

macro_rules! named_enum {
    ($t:ty, $what:literal, [$($v:expr => $n:literal),+ $(,)?]) => {
        named_enum!($t, $what, [$($v => $n),+], aliases []);
    };
    ($t:ty, $what:literal, [$($v:expr => $n:literal),+ $(,)?], aliases [$($av:expr => $an:literal),* $(,)?]) => {
        impl $t {
            /// Every value with its name, in documentation order.
            pub const ALL: &'static [($t, &'static str)] = &[$(($v, $n)),+];
            /// The name used on the command line and in JSON.
            pub fn name(self) -> &'static str {
                Self::ALL.iter().find(|(v, _)| *v == self).map(|(_, n)| *n).unwrap_or("?")
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                // Former names still parse (old command lines, JSON, C
                // callers); only the current name is printed.
                let aliases: &[($t, &str)] = &[$(($av, $an)),*];
                Self::ALL.iter().chain(aliases).find(|(_, n)| *n == s).map(|(v, _)| *v).ok_or_else(|| {
                    let names: Vec<&str> = Self::ALL.iter().map(|(_, n)| *n).collect();
                    format!("unknown {} strategy '{}' (expected one of: {})", $what, s, names.join(", "))
                })
            }
        }
    };
}

named_enum!(Alloc, "allocation", [
    Alloc::Append => "append",
    Alloc::Fallocate => "fallocate",
    Alloc::FallocateKeepSize => "fallocate-keep-size",
    Alloc::Zero => "zero",
    Alloc::Pool => "pool",
]);
named_enum!(Flush, "flush", [
    Flush::None => "none",
    Flush::Fdatasync => "fdatasync",
    Flush::Fsync => "fsync",
    Flush::Sfr => "sfr",
    Flush::Window => "window",
]);
named_enum!(Io, "io", [
    Io::Buffered => "buffered",
    Io::Direct => "direct",
    Io::Uring => "uring",
    Io::UringBuffered => "uring-buffered",
]);
named_enum!(Mode, "mode", [Mode::Ring => "ring", Mode::Inline => "inline"], aliases [Mode::Inline => "direct"]);
named_enum!(Framing, "framing", [
    Framing::Framed => "framed",
    Framing::Packed => "packed",
    Framing::Raw => "raw",
]);

impl Framing {
    /// Records of at most this many bytes are packed by default
    /// ([`Framing::auto`]): above it a frame header (40 bytes) is under 4 %
    /// of a record, below it per-record frames cost more.
    pub const PACK_UP_TO: usize = 1024;

    /// The framing for records of at most `record_size` bytes when the user
    /// did not choose: packed up to [`Framing::PACK_UP_TO`] bytes, framed
    /// above (one frame per record keeps each record's own time).
    pub fn auto(record_size: usize) -> Framing {
        if record_size <= Self::PACK_UP_TO {
            Framing::Packed
        } else {
            Framing::Framed
        }
    }

    /// True when files have a header and frames (everything but raw).
    pub fn has_frames(self) -> bool {
        self != Framing::Raw
    }
}

/// What the writer does when it needs a file and the pool has none ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum OnPoolEmpty {
    /// Pre-allocate a new file with `fallocate` on the writer thread (the
    /// S1 design), counted in the summary as a pool fallback.
    Fallocate,
    /// Wait (on the writer thread, never the producer's) until a prepared
    /// file appears, e.g. from the background refiller or
    /// `rtrec pool prepare`; the ring absorbs the wait or counts drops.
    Wait,
}

named_enum!(OnPoolEmpty, "pool-empty", [OnPoolEmpty::Fallocate => "fallocate", OnPoolEmpty::Wait => "wait"]);

/// Which of the directory's earlier, closed recordings a loop's disk
/// budget covers (`rtrec record --keep-scope`; docs/unattended.md, "What
/// the budget owns").
///
/// Design choice: by default the budget owns only what the loop's own
/// recorder made — earlier *loop* recordings (header flag `LOOP`) whose
/// name has the loop's prefix (`PREFIX-YYYYmmddTHHMMSS.mmmZ`), as
/// journald vacuums only its own journal files and a dashcam's loop never
/// deletes a locked event file; any other recording beside it (another
/// prefix, not a loop, a flight-recorder event) is never retired. `dir`
/// widens it to every closed recording of the directory, and every
/// recording so retired that the loop does not own is named in the
/// summary and its warnings (the C library's log callback).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum KeepScope {
    /// The loop's own: earlier loop recordings of the same name prefix.
    #[default]
    Own,
    /// Every closed recording of the directory.
    Dir,
}

named_enum!(KeepScope, "keep-scope", [KeepScope::Own => "own", KeepScope::Dir => "dir"]);

/// What `record()` does when the ring has no room for a record (ring mode).
///
/// Design choice: the policy follows the producer, not the data. A
/// real-time producer must never wait, so dropping (counted, and stored as
/// a loss frame) is the library's default and the C API's; a producer that
/// can wait — a pipe, a file — loses nothing by waiting, so `rtrec record
/// --stdin` blocks by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum OnFull {
    /// Drop the newest record, count it and store the loss (drop-newest);
    /// `record()` never waits. The default: real-time safe.
    #[default]
    Drop,
    /// Wait until the writer has made room (spinning briefly, then sleeping
    /// in short steps), counted in the summary's `ring_waits`; nothing is
    /// dropped for a full ring. For producers that can wait (pipes, files),
    /// never for a real-time thread: waiting makes system calls.
    Block,
}

named_enum!(OnFull, "on-full", [OnFull::Drop => "drop", OnFull::Block => "block"]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_name_parses_back_to_itself() {
        for (v, n) in Alloc::ALL {
            assert_eq!(n.parse::<Alloc>().unwrap(), *v);
        }
        for (v, n) in Flush::ALL {
            assert_eq!(n.parse::<Flush>().unwrap(), *v);
        }
        for (v, n) in Mode::ALL {
            assert_eq!(n.parse::<Mode>().unwrap(), *v);
        }
        for (v, n) in Framing::ALL {
            assert_eq!(n.parse::<Framing>().unwrap(), *v);
        }
        for (v, n) in Io::ALL {
            assert_eq!(n.parse::<Io>().unwrap(), *v);
        }
    }

    #[test]
    fn the_former_name_of_inline_mode_still_parses_and_prints_as_inline() {
        assert_eq!("direct".parse::<Mode>().unwrap(), Mode::Inline);
        let m: Mode = serde_json::from_str("\"direct\"").unwrap();
        assert_eq!(m, Mode::Inline);
        assert_eq!(serde_json::to_string(&Mode::Inline).unwrap(), "\"inline\"");
        assert_eq!(Mode::Inline.to_string(), "inline");
        let e = "bogus".parse::<Mode>().unwrap_err();
        assert!(e.ends_with("(expected one of: ring, inline)"), "{e}");
    }

    #[test]
    fn an_unknown_strategy_names_the_choices() {
        let e = "bogus".parse::<Flush>().unwrap_err();
        assert_eq!(
            e,
            "unknown flush strategy 'bogus' (expected one of: none, fdatasync, fsync, sfr, window)"
        );
    }

    #[test]
    fn small_records_are_packed_by_default_and_larger_ones_framed() {
        assert_eq!(Framing::auto(64), Framing::Packed);
        assert_eq!(Framing::auto(Framing::PACK_UP_TO), Framing::Packed);
        assert_eq!(Framing::auto(Framing::PACK_UP_TO + 1), Framing::Framed);
    }
}
