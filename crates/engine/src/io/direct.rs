//! The `direct` back-end ([`Io::Direct`]): `O_DIRECT` writes of whole
//! logical blocks with `pwrite()`, from one aligned buffer of
//! [`crate::config::Config::io_block`] bytes that gathers each frame behind
//! the file's partial last block (the `gather` module). The call is the
//! completion: a frame is on the device when `write` returns. There is no
//! dirty page to write back; durability points are a device cache flush.

use std::fs::File;
use std::io;

use rtrec_sys as sys;

use super::backend::Backend;
use super::gather::{Gather, Transport, ALIGN};
use crate::config::{Config, Io};

/// `pwrite()` from one aligned buffer.
struct Pwrite(sys::AlignedBuf);

/// Allocates the buffer (the recording's creation, not the data path).
pub(super) fn open(cfg: &Config) -> io::Result<Box<dyn Backend>> {
    let buf = sys::AlignedBuf::new(cfg.io_block as usize, ALIGN)?;
    Ok(Box::new(Gather::new(Io::Direct, Pwrite(buf), true)))
}

impl Transport for Pwrite {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn buf(&mut self) -> &mut [u8] {
        &mut self.0
    }

    fn write(&mut self, f: &File, start: usize, end: usize, off: u64) -> io::Result<()> {
        sys::pwrite_all(f, &self.0[start..end], off)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_file_holds_exactly_the_gathered_bytes_then_zeros_after_every_write() {
        super::super::gather::tests::check_engine(super::open);
    }
}
