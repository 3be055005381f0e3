//! The `uring-buffered` back-end ([`Io::UringBuffered`]): the `uring`
//! back-end's registered buffers and writes in flight over the page cache
//! (no `O_DIRECT`), so frames are written exactly — no padding, no rewrite
//! of a partial block — and writes of successive frames are in flight
//! together. The flush thread writes the dirty pages back, as with
//! `buffered`. Any allocation mode.

use std::io;

use super::backend::Backend;
use super::gather::Gather;
use super::uring::Ring;
use crate::config::{Config, Io};

/// Sets up the ring and its buffers; fails (with the errno) when the
/// kernel refuses io_uring.
pub(super) fn open(cfg: &Config) -> io::Result<Box<dyn Backend>> {
    let ring = Ring::new(cfg.io_block, cfg.io_depth)?;
    Ok(Box::new(Gather::new(Io::UringBuffered, ring, false)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_file_holds_exactly_the_written_bytes_after_every_write() {
        super::super::gather::tests::check_engine(super::open);
    }
}
