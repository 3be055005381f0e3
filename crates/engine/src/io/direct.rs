//! The `direct` back-end ([`Io::Direct`]): `O_DIRECT` writes of whole
//! logical blocks with `pwrite()`, from one aligned buffer of
//! [`crate::config::Config::io_block`] bytes that gathers each frame behind
//! the file's partial last block (the `gather` module). The call is the
//! completion: a frame is on the device when `write` returns. There is no
//! dirty page to write back; durability points are a device cache flush.

use std::fs::File;
use std::io;

use rtrec_sys as sys;

use super::backend::{Backend, Engine, Settings};
use super::gather::{self, Gather, Transport, ALIGN};
use crate::strategy::{Alloc, Io};

/// This back-end's row of [`super::ENGINES`].
pub(super) const ENGINE: Engine = Engine {
    io: Io::Direct,
    help: "`O_DIRECT`: each frame goes to the device from an aligned buffer that \
           gathers it behind the file's partial last block; there is no dirty page \
           to write back, durability points are a device cache flush (`fdatasync`). \
           While the writer is behind (its ring 25 % full, until empty) frames are \
           coalesced into writes of up to `io_block` (`--io-block`) bytes \
           (`docs/durability.md`, \"When the writer falls behind\")",
    direct: true,
    uring: false,
    rules: &[files_allocated, gather::block_in_range],
    open,
    fallback: None,
};

/// The rule of every `O_DIRECT` back-end (`direct`, `uring`): the files'
/// blocks exist before recording, so no write changes a file's size.
pub(super) fn files_allocated(s: &Settings) -> Result<(), String> {
    match s.alloc {
        Alloc::Append | Alloc::FallocateKeepSize => Err(format!(
            "direct I/O needs files whose blocks exist before recording (pool, zero or \
             fallocate): with {} every direct write would change the file's size, a \
             journal update per write, the very cost direct I/O avoids",
            s.alloc.name()
        )),
        Alloc::Fallocate | Alloc::Zero | Alloc::Pool => Ok(()),
    }
}

/// `pwrite()` from one aligned buffer.
struct Pwrite(sys::AlignedBuf);

/// Allocates the buffer (the recording's creation, not the data path).
fn open(s: &Settings) -> io::Result<Box<dyn Backend>> {
    let buf = sys::AlignedBuf::new(s.io_block as usize, ALIGN)?;
    Ok(Box::new(Gather::new(ENGINE.io, Pwrite(buf), ENGINE.direct)))
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
        let test = "the_file_holds_exactly_the_gathered_bytes_then_zeros_after_every_write";
        if !rtrec_host::features::require_io(test, "direct", &std::env::temp_dir()) {
            return;
        }
        super::super::gather::tests::check_engine(super::open);
    }
}
