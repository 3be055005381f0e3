//! The storage back-ends: how the writer's frames reach the file. One module
//! per back-end, each filling the one [`Backend`] trait, picked once by name
//! ([`Io`]) when the writer is created — as fio's `engines/` do with
//! `struct ioengine_ops`.
//!
//! | module | [`Io`] | how a frame is written |
//! |---|---|---|
//! | [`buffered`] | `buffered` | `writev()` of header and payload into the page cache, ending on a file-system block in ring mode |
//! | [`direct`] | `direct` | `O_DIRECT` `pwrite()` of whole blocks from an aligned buffer |
//! | [`uring`] | `uring` | the same blocks submitted through io_uring, several in flight |
//! | [`uring_buffered`] | `uring-buffered` | io_uring over the page cache, exact bytes, no padding |
//!
//! `direct`, `uring` and `uring_buffered` share the private `gather` module:
//! the aligned buffers that mirror the file from its partial last block and
//! the rules for what may be in flight together (its module docs). They
//! differ only in the transport under it (`pwrite()` or io_uring) and in
//! whether the file is switched to `O_DIRECT`.
//!
//! Design choices:
//! - **A back-end is its row** ([`Engine`], `pub(super) const ENGINE` in
//!   its own file): the help `--io` prints for it, whether it opens files
//!   with `O_DIRECT` and whether it writes through io_uring, the
//!   configuration rules it adds (each with its refusal sentence), how it
//!   is made and its fallback. [`ENGINES`] only lists the rows; the rest of
//!   the engine asks them: [`Io::is_direct`], [`Io::is_uring`],
//!   `Config::validate` ([`check`]) and clap's `ValueEnum` for [`Io`] (the
//!   `--io` value help). Rules shared by several back-ends live with what
//!   they are about: `O_DIRECT`'s in `direct`, the gathering buffer's in
//!   `gather`, io_uring's depth in `uring`.
//! - **The back-ends read [`Settings`], not `Config`**: `config` asks this
//!   module for the rules, so this module cannot import `config` back; the
//!   strategy enums they share sit below both, in `strategy`.
//! - **A trait object, chosen once** ([`open`] returns a `Box<dyn
//!   Backend>`): a new back-end is a new file and one line of [`ENGINES`];
//!   the writer does not change, and never asks which back-end it has —
//!   it asks what the back-end does ([`Backend::is_async`],
//!   [`Backend::bypasses_page_cache`]). The price is one indirect call per
//!   frame and per poll, on the writer thread (never in `record()`): a few
//!   nanoseconds beside the system call each frame costs. An enum would
//!   save that call but make every new back-end an edit of the dispatch.
//! - **A back-end the kernel refuses at creation** (io_uring under
//!   `kernel.io_uring_disabled`) may name a fallback in its row: the
//!   recording then writes buffered and says why in a warning, and the
//!   configuration stored with the recording names the back-end it used.
//! - **The trait sits in `backend`, below this module and every back-end**,
//!   so a back-end never imports the module that lists it.
//! - **Coalescing is two provided methods** ([`Backend::coalesce`],
//!   [`Backend::flush`]) that the writer calls from its pacing
//!   ([`coalesce_next`], from the ring's fill): `buffered` keeps the no-op
//!   defaults (the page cache coalesces for it), the gathering back-ends
//!   write a buffer at a time while the writer is behind. The policy lives
//!   here, once, not in each back-end.
//! - **The writer keeps the bookkeeping** (file offsets, the chain, which
//!   records count as written, the flusher): a back-end only moves bytes
//!   and says how far the file is written ([`Backend::completed_to`]).
//!
//! # Adding a back-end
//!
//! 1. `io/NAME.rs`: the back-end — a [`Backend`], or a `Transport` under
//!    `gather::Gather` as `direct` and `uring` are — its `open(&Settings)`,
//!    and its row, `pub(super) const ENGINE: Engine` (help, `direct`,
//!    `uring`, `rules`, `open`, `fallback`). A rule of its own is a
//!    function in this file, its sentence the `Err`.
//! 2. `io/mod.rs` (this file): `mod NAME;` and `NAME::ENGINE` in
//!    [`ENGINES`], at the position of its value in [`Io::ALL`].
//! 3. `strategy.rs`: the [`Io`] variant (a one-line doc naming the file)
//!    and its name in `named_enum!(Io, …)`: the name on the command line,
//!    in JSON and in the study's tables.
//! 4. `crates/ffi/src/config.rs`: an `RTREC_IO_NAME` value (the next
//!    number: the ABI never renumbers) with its C docs, and its line in
//!    `IOS`; then regenerate `include/rtrec.h` (`RTREC_BLESS=1 cargo test
//!    -p rtrec-ffi --test header`). Its tests fail until the value, the
//!    table and the header agree with [`Io::ALL`].
//! 5. Tests: this module's tests check the new row (one per value, help,
//!    the rules that follow from `direct`/`uring`, `open`); a gathering
//!    back-end runs `gather::tests::check_engine` in its own tests. The
//!    user's docs: `docs/durability.md` (what it guarantees) and
//!    `docs/bench.md` (the throughput study runs every value of
//!    [`Io::ALL`]).
//!
//! Nothing else changes: `--io`'s values and help, `Config::validate` and
//! the study's list follow from the row and [`Io::ALL`].

use std::io;

use crate::error::ConfigError;
use crate::strategy::Io;

mod backend;
mod buffered;
mod direct;
mod gather;
mod uring;
mod uring_buffered;

pub(crate) use backend::{Backend, Engine, Settings};
pub use backend::{DEFAULT_IO_BLOCK, DEFAULT_IO_DEPTH};

/// The writer is behind when its ring holds at least this share of its
/// capacity, percent: the `direct`, `uring` and `uring-buffered` back-ends
/// then coalesce frames into writes of up to
/// [`crate::config::Config::io_block`] bytes (1 MiB by default), until the
/// ring is empty again (see [`coalesce_next`] and the `gather` module).
pub(crate) const BEHIND_PERCENT: usize = 25;

/// The coalescing policy, from the ring's fill: on once `queued` bytes
/// reach [`BEHIND_PERCENT`] of `capacity`, off once the ring is empty
/// (caught up), unchanged (`was`) in between, so it does not flap at the
/// watermark.
pub(crate) fn coalesce_next(was: bool, queued: usize, capacity: usize) -> bool {
    if queued == 0 {
        false
    } else if queued.saturating_mul(100) >= capacity.saturating_mul(BEHIND_PERCENT) {
        true
    } else {
        was
    }
}

/// Every back-end's row, in the order of [`Io::ALL`]: the one place that
/// lists them all. Each row lives with its back-end (`io/NAME.rs`).
pub(crate) const ENGINES: &[Engine] = &[
    buffered::ENGINE,
    direct::ENGINE,
    uring::ENGINE,
    uring_buffered::ENGINE,
];

/// The row of `io` (buffered's if it had none; a test holds that every
/// [`Io`] has exactly one).
pub(crate) fn row(io: Io) -> &'static Engine {
    ENGINES.iter().find(|e| e.io == io).unwrap_or(&ENGINES[0])
}

/// Runs the rules of the chosen back-end's row on `s`, in order; the one
/// place `Config::validate` asks about back-ends.
///
/// # Errors
/// The first rule broken, as [`ConfigError::BackendRule`] with the rule's
/// sentence.
pub(crate) fn check(s: &Settings) -> Result<(), ConfigError> {
    row(s.io).rules.iter().try_for_each(|rule| {
        rule(s).map_err(|reason| ConfigError::BackendRule {
            io: s.io.name(),
            reason,
        })
    })
}

impl Io {
    /// True for the back-ends that open files with `O_DIRECT` (their row
    /// says so).
    pub fn is_direct(self) -> bool {
        row(self).direct
    }

    /// True for the io_uring back-ends (their row says so).
    pub fn is_uring(self) -> bool {
        row(self).uring
    }

    /// What the back-end does, one paragraph without a final period: the
    /// help `--io` prints beside its name (its row's).
    pub fn help(self) -> &'static str {
        row(self).help
    }
}

/// Every [`Io`] value, in the order of [`Io::ALL`], as clap lists them.
#[cfg(feature = "clap")]
const VALUES: [Io; Io::ALL.len()] = {
    let mut values = [Io::Buffered; Io::ALL.len()];
    let mut i = 0;
    while i < values.len() {
        values[i] = Io::ALL[i].0;
        i += 1;
    }
    values
};

/// `--io`'s values: each name from [`Io::ALL`], each help from its row.
///
/// Design choice: implemented by hand rather than derived from the
/// variants' doc comments, so that the help of a back-end is its row's,
/// in its own file, like the rest of what is particular to it.
#[cfg(feature = "clap")]
impl clap::ValueEnum for Io {
    fn value_variants<'a>() -> &'a [Io] {
        &VALUES
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
    }
}

/// A back-end made by [`open`], and the warning when it is not the one
/// asked for.
pub(crate) struct Opened {
    /// The back-end to write with (its [`Backend::io`] is the one used).
    pub(crate) backend: Box<dyn Backend>,
    /// Set when the kernel refused the back-end asked for and the
    /// recording writes buffered instead.
    pub(crate) warning: Option<String>,
}

/// Makes the back-end `settings` names (see [`ENGINES`]), or its
/// fallback. The writer passes its `&Config` (`config` makes the
/// [`Settings`] of it).
///
/// # Errors
/// The back-end's own error (allocating its buffers) when its row names
/// no fallback.
pub(crate) fn open(settings: impl Into<Settings>) -> io::Result<Opened> {
    let s = settings.into();
    let engine = row(s.io);
    match ((engine.open)(&s), &engine.fallback) {
        (Ok(backend), _) => Ok(Opened {
            backend,
            warning: None,
        }),
        (Err(e), Some(r)) => Ok(Opened {
            backend: (buffered::ENGINE.open)(&s)?,
            warning: Some(format!(
                "the kernel refused {} ({e}; {}); writing with buffered write() instead",
                r.what,
                (r.hint)(&e)
            )),
        }),
        (Err(e), None) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::Alloc;

    #[test]
    fn coalescing_starts_at_the_watermark_and_stops_only_when_caught_up() {
        let cap = 1000;
        // Caught up and below the watermark: small writes.
        assert!(!coalesce_next(false, 0, cap));
        assert!(!coalesce_next(false, 249, cap));
        // At the watermark: coalesce, and keep on below it while behind.
        assert!(coalesce_next(false, 250, cap));
        assert!(coalesce_next(true, 100, cap));
        assert!(coalesce_next(true, 1, cap));
        // The ring is empty: back to small writes.
        assert!(!coalesce_next(true, 0, cap));
    }

    #[test]
    fn every_io_value_has_exactly_one_engine_row() {
        for (io, name) in Io::ALL {
            let rows = ENGINES.iter().filter(|e| e.io == *io).count();
            assert_eq!(rows, 1, "{name}");
        }
        let order: Vec<Io> = ENGINES.iter().map(|e| e.io).collect();
        let all: Vec<Io> = Io::ALL.iter().map(|(io, _)| *io).collect();
        assert_eq!(order, all, "ENGINES lists the rows in the order of Io::ALL");
    }

    /// What `--io` prints beside each name: one paragraph, as clap prints
    /// a value's help (no line break, no final period).
    #[test]
    fn every_row_has_the_help_the_io_flag_prints() {
        for e in ENGINES {
            let name = e.io.name();
            assert!(e.help.len() > 20, "{name}: help is missing");
            assert!(!e.help.contains('\n'), "{name}: one paragraph");
            assert!(!e.help.ends_with('.'), "{name}: clap's style, no period");
            assert!(
                !e.help.contains("  "),
                "{name}: a line continuation left spaces"
            );
        }
    }

    #[cfg(feature = "clap")]
    #[test]
    fn the_io_flags_values_are_io_all_each_with_its_rows_help() {
        use clap::ValueEnum;
        let names: Vec<String> = Io::value_variants()
            .iter()
            .map(|v| v.to_possible_value().unwrap().get_name().to_string())
            .collect();
        let all: Vec<&str> = Io::ALL.iter().map(|(_, n)| *n).collect();
        assert_eq!(names, all);
        for (io, name) in Io::ALL {
            let value = io.to_possible_value().unwrap();
            let help = value.get_help().map(|h| h.to_string());
            assert_eq!(help.as_deref(), Some(io.help()), "{name}");
            assert_eq!(Io::from_str(name, false), Ok(*io));
        }
    }

    /// A row's rules follow from what it says it is, so a new back-end
    /// that forgets one fails here: an `O_DIRECT` back-end refuses files
    /// that grow, and every `O_DIRECT` or io_uring back-end its aligned
    /// buffers' size out of range; an io_uring one a depth out of range.
    /// Every row accepts the defaults.
    #[test]
    fn every_row_carries_the_rules_of_what_it_is() {
        for e in ENGINES {
            let name = e.io.name();
            let ok = Settings {
                io: e.io,
                ..Settings::default()
            };
            check(&ok).unwrap_or_else(|err| panic!("{name}: the defaults refused: {err}"));
            let refused = |s: Settings, what: &str| match check(&s) {
                Err(ConfigError::BackendRule { io, reason }) => {
                    assert_eq!(io, name);
                    assert!(!reason.is_empty(), "{name}: {what}");
                }
                other => panic!("{name}: {what} is not refused: {other:?}"),
            };
            if e.direct {
                for alloc in [Alloc::Append, Alloc::FallocateKeepSize] {
                    refused(Settings { alloc, ..ok }, "a file that grows");
                }
            }
            if e.direct || e.uring {
                for io_block in [0, 2048, 4096 + 512, 128 << 20] {
                    refused(Settings { io_block, ..ok }, "an io_block out of range");
                }
            }
            if e.uring {
                for io_depth in [0, 65] {
                    refused(Settings { io_depth, ..ok }, "an io_depth out of range");
                }
            }
        }
    }

    #[test]
    fn the_rows_say_which_back_ends_are_direct_and_which_use_io_uring() {
        let direct: Vec<&str> = Io::ALL
            .iter()
            .filter(|(io, _)| io.is_direct())
            .map(|(_, n)| *n)
            .collect();
        let uring: Vec<&str> = Io::ALL
            .iter()
            .filter(|(io, _)| io.is_uring())
            .map(|(_, n)| *n)
            .collect();
        assert_eq!(direct, ["direct", "uring"]);
        assert_eq!(uring, ["uring", "uring-buffered"]);
    }

    /// The first broken rule of the row is reported, in its words;
    /// buffered reads neither knob.
    #[test]
    fn a_broken_rule_is_refused_with_its_sentence() {
        let d = Settings::default();
        let cases = [
            (
                Settings {
                    io: Io::Uring,
                    alloc: Alloc::Append,
                    io_depth: 0,
                    ..d
                },
                Some(
                    "direct I/O needs files whose blocks exist before recording (pool, zero or \
                     fallocate): with append every direct write would change the file's size, a \
                     journal update per write, the very cost direct I/O avoids",
                ),
            ),
            (
                Settings {
                    io: Io::UringBuffered,
                    alloc: Alloc::Append,
                    io_block: 3,
                    ..d
                },
                Some("the direct I/O block must be a power of two between 4 KiB and 64 MiB, not 3 bytes"),
            ),
            (
                Settings {
                    io: Io::UringBuffered,
                    io_depth: 65,
                    ..d
                },
                Some("the io_uring queue depth must be between 1 and 64, not 65"),
            ),
            (
                Settings {
                    alloc: Alloc::Append,
                    io_block: 3,
                    io_depth: 0,
                    ..d
                },
                None,
            ),
        ];
        for (s, want) in cases {
            let got = check(&s).err().map(|e| e.to_string());
            assert_eq!(got.as_deref(), want, "{s:?}");
        }
    }

    #[test]
    fn open_makes_the_back_end_asked_for_or_says_why_not() {
        for (io, name) in Io::ALL {
            let s = Settings {
                io: *io,
                ..Settings::default()
            };
            let o = open(s).unwrap();
            match o.warning {
                None => assert_eq!(o.backend.io(), *io, "{name}"),
                Some(w) => {
                    assert_eq!(o.backend.io(), Io::Buffered, "{name}");
                    assert!(w.contains("writing with buffered write() instead"), "{w}");
                }
            }
        }
    }
}
