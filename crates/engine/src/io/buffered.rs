//! The `buffered` back-end ([`Io::Buffered`]): each frame is one
//! `writev()` of its header and payload (one `write()` when there is no
//! header: raw framing) into the page cache at the file's position, retried
//! only for short writes and `EINTR`. The call is the completion; the flush
//! thread writes the dirty pages back.

use std::fs::File;
use std::io;

use rtrec_sys as sys;

use super::backend::Backend;
use crate::config::{Config, Io};

/// See the module docs.
struct Buffered {
    /// The file position: where the next frame goes.
    pos: u64,
}

/// Makes the back-end (nothing to allocate).
pub(super) fn open(_cfg: &Config) -> io::Result<Box<dyn Backend>> {
    Ok(Box::new(Buffered { pos: 0 }))
}

impl Backend for Buffered {
    fn io(&self) -> Io {
        Io::Buffered
    }

    fn is_async(&self) -> bool {
        false
    }

    fn bypasses_page_cache(&self) -> bool {
        false
    }

    fn start(&mut self, _f: &File, offset: u64) -> io::Result<()> {
        // The file was just created or taken with its position after the
        // header.
        self.pos = offset;
        Ok(())
    }

    fn write(&mut self, f: &File, mut head: &[u8], mut body: &[u8]) -> io::Result<()> {
        while !head.is_empty() || !body.is_empty() {
            let r = if head.is_empty() {
                sys::write_once(f, body)
            } else {
                sys::writev2_once(f, head, body)
            };
            match r {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(mut n) => {
                    self.pos += n as u64;
                    let h = n.min(head.len());
                    head = &head[h..];
                    n -= h;
                    body = &body[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn completed_to(&self) -> u64 {
        self.pos
    }

    /// Moves the file position back to `offset` when part of the frame was
    /// written (a partial frame there is overwritten by the closing frames,
    /// or cut off at close).
    fn rollback(&mut self, f: &File, offset: u64) -> io::Result<()> {
        if self.pos != offset {
            self.pos = offset;
            sys::seek_to(f, offset)?;
        }
        Ok(())
    }

    fn stop(&mut self, _f: &File) -> io::Result<()> {
        Ok(())
    }
}
