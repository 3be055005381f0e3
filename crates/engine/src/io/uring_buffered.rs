//! The `uring-buffered` back-end ([`Io::UringBuffered`]): the `uring`
//! back-end's registered buffers and writes in flight over the page cache
//! (no `O_DIRECT`), whole file-system blocks as `direct` writes them (so a
//! recycled pool's blocks are never read before they are written: the
//! `gather` module's docs), and writes of successive frames are in flight
//! together. The flush thread writes the dirty pages back, as with
//! `buffered`. Any allocation mode.

use std::io;

use super::backend::{Backend, Engine, Settings};
use super::gather::{self, Gather};
use super::uring::{self, Ring};
use crate::strategy::Io;

/// This back-end's row of [`super::ENGINES`]: the gatherer's buffer and
/// the ring's depth (any allocation mode: no `O_DIRECT`); buffered writes
/// when the kernel refuses io_uring.
pub(super) const ENGINE: Engine = Engine {
    io: Io::UringBuffered,
    help: "io_uring over the page cache (no `O_DIRECT`): `uring`'s registered \
           buffers, writes in flight and whole blocks; the flusher writes back \
           dirty pages as with `buffered`. Any allocation mode",
    direct: false,
    uring: true,
    rules: &[gather::block_in_range, uring::depth_in_range],
    open,
    fallback: Some(uring::REFUSED),
};

/// Sets up the ring and its buffers; fails (with the errno) when the
/// kernel refuses io_uring.
fn open(s: &Settings) -> io::Result<Box<dyn Backend>> {
    let ring = Ring::new(s.io_block, s.io_depth)?;
    Ok(Box::new(Gather::new(ENGINE.io, ring, ENGINE.direct)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_file_holds_exactly_the_written_bytes_after_every_write() {
        super::super::gather::tests::check_engine(super::open);
    }
}
