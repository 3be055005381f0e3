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
//! - **A trait object, chosen once** ([`open`] returns a `Box<dyn
//!   Backend>`): a new back-end is a new file and one row of [`ENGINES`];
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

use std::io;

use crate::config::{Config, Io};

mod backend;
mod buffered;
mod direct;
mod gather;
mod uring;
mod uring_buffered;

pub(crate) use backend::{Backend, Refused};

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

/// One row of [`ENGINES`]: a back-end's name and how to make it.
pub(crate) struct Engine {
    /// The back-end this row makes.
    pub(crate) io: Io,
    /// Makes it for a recording (allocates its buffers: creation, not the
    /// data path).
    pub(crate) open: fn(&Config) -> io::Result<Box<dyn Backend>>,
    /// When the kernel refuses it: the recording writes buffered instead,
    /// with a warning naming this. `None`: the refusal is the recording's
    /// error.
    pub(crate) fallback: Option<Refused>,
}

/// Every back-end, by name: the one place that knows them all.
pub(crate) const ENGINES: &[Engine] = &[
    Engine {
        io: Io::Buffered,
        open: buffered::open,
        fallback: None,
    },
    Engine {
        io: Io::Direct,
        open: direct::open,
        fallback: None,
    },
    Engine {
        io: Io::Uring,
        open: uring::open,
        fallback: Some(uring::REFUSED),
    },
    Engine {
        io: Io::UringBuffered,
        open: uring_buffered::open,
        fallback: Some(uring::REFUSED),
    },
];

/// A back-end made by [`open`], and the warning when it is not the one
/// asked for.
pub(crate) struct Opened {
    /// The back-end to write with (its [`Backend::io`] is the one used).
    pub(crate) backend: Box<dyn Backend>,
    /// Set when the kernel refused the back-end asked for and the
    /// recording writes buffered instead.
    pub(crate) warning: Option<String>,
}

/// Makes the back-end `cfg.io` names (see [`ENGINES`]), or its fallback.
///
/// # Errors
/// The back-end's own error (allocating its buffers) when its row names
/// no fallback.
pub(crate) fn open(cfg: &Config) -> io::Result<Opened> {
    let engine = ENGINES
        .iter()
        .find(|e| e.io == cfg.io)
        .unwrap_or(&ENGINES[0]);
    match ((engine.open)(cfg), &engine.fallback) {
        (Ok(backend), _) => Ok(Opened {
            backend,
            warning: None,
        }),
        (Err(e), Some(r)) => Ok(Opened {
            backend: buffered::open(cfg)?,
            warning: Some(format!(
                "the kernel refused {} ({e}; {}); writing with buffered write() instead",
                r.what, r.hint
            )),
        }),
        (Err(e), None) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn open_makes_the_back_end_asked_for_or_says_why_not() {
        for (io, name) in Io::ALL {
            let cfg = Config {
                io: *io,
                ..Config::default()
            };
            let o = open(&cfg).unwrap();
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
