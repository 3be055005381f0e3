//! What every storage back-end is made of: the one trait it fills
//! ([`Backend`]), the row that describes it ([`Engine`]: its help, what it
//! is, its configuration rules, its fallback), the part of the
//! configuration it reads ([`Settings`]) and what a warning says when the
//! kernel refuses one ([`Refused`]). Below the back-ends and the list that
//! picks them ([`super`]), so no back-end imports that list back.

use std::fs::File;
use std::io;

use crate::strategy::{Alloc, Framing, Io, Mode};

/// The default of `Config::io_block`: 1 MiB. The gathering back-ends'
/// knob, kept here beside the settings they read (re-exported by
/// `config`).
pub const DEFAULT_IO_BLOCK: u64 = 1 << 20;

/// The default of `Config::io_depth`: 4 writes in flight. The io_uring
/// back-ends' knob (re-exported by `config`).
pub const DEFAULT_IO_DEPTH: u32 = 4;

/// What a back-end reads of the configuration, to be made
/// ([`Engine::open`]) and checked ([`Engine::rules`]).
///
/// Design choice: the back-ends take this small copy, not `Config`, so
/// that `config` can ask their rows for their rules ([`super::check`])
/// without the two modules importing each other; `config` builds it
/// (`From<&Config>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    /// The back-end asked for.
    pub(crate) io: Io,
    /// Ring or inline: whether a partial last block may be held.
    pub(crate) mode: Mode,
    /// The file layout (packed frames are never held).
    pub(crate) framing: Framing,
    /// How file space is obtained (`O_DIRECT` needs it allocated).
    pub(crate) alloc: Alloc,
    /// The gathering buffer, bytes.
    pub(crate) io_block: u64,
    /// io_uring: writes in flight and registered buffers.
    pub(crate) io_depth: u32,
}

#[cfg(test)]
impl Default for Settings {
    /// The back-end's part of `Config::default()` (a test in `config`
    /// holds the two equal).
    fn default() -> Settings {
        Settings {
            io: Io::Buffered,
            mode: Mode::Ring,
            framing: Framing::Framed,
            alloc: Alloc::Pool,
            io_block: DEFAULT_IO_BLOCK,
            io_depth: DEFAULT_IO_DEPTH,
        }
    }
}

/// A configuration rule of a back-end: `Err` with the sentence that
/// refuses the settings (what to change), which `Config::validate` returns
/// as `ConfigError::BackendRule`.
pub(crate) type Rule = fn(&Settings) -> Result<(), String>;

/// A back-end's row: everything particular to it, in its own file
/// (`io/NAME.rs`, `pub(super) const ENGINE`); [`super::ENGINES`] lists the
/// rows, and the rest of the engine asks them ([`Io::is_direct`],
/// [`Io::is_uring`], `Config::validate`, the `--io` help).
pub(crate) struct Engine {
    /// The back-end this row makes.
    pub(crate) io: Io,
    /// What `--io NAME` does, one paragraph without a final period:
    /// `rtrec record --help` prints it beside the name (clap's
    /// `ValueEnum`, implemented from the rows).
    pub(crate) help: &'static str,
    /// Files are switched to `O_DIRECT`: writes are whole aligned blocks,
    /// no page cache (and so the files must be allocated up front).
    pub(crate) direct: bool,
    /// Writes are submitted through io_uring (`io_depth` applies; the
    /// kernel may refuse it).
    pub(crate) uring: bool,
    /// The rules `Config::validate` runs when this back-end is chosen, in
    /// order (the first broken one is reported).
    pub(crate) rules: &'static [Rule],
    /// Makes it for a recording (allocates its buffers: creation, not the
    /// data path).
    pub(crate) open: fn(&Settings) -> io::Result<Box<dyn Backend>>,
    /// When the kernel refuses it: the recording writes buffered instead,
    /// with a warning naming this. `None`: the refusal is the recording's
    /// error.
    pub(crate) fallback: Option<Refused>,
}

/// One storage back-end: what the writer asks of it for each file and each
/// frame. Calls come from one thread (the writer's, or the producer's in
/// inline mode). The provided methods are those of a synchronous back-end
/// (the call is the completion: nothing is ever in flight).
pub(crate) trait Backend: Send {
    /// The back-end's name, as [`Io`] spells it.
    fn io(&self) -> Io;

    /// True when a frame's writes may complete after [`Backend::write`]
    /// returns: the writer then counts frames through
    /// [`Backend::completed_to`] and reaps with [`Backend::poll`].
    fn is_async(&self) -> bool;

    /// True when written data leave no dirty page to write back
    /// (`O_DIRECT`): the flush thread then only makes durability points.
    fn bypasses_page_cache(&self) -> bool;

    /// Starts writing `f` at `offset` (the end of its header): no write of
    /// the previous file is in flight after it.
    fn start(&mut self, f: &File, offset: u64) -> io::Result<()>;

    /// Writes `head` then `body` at the current end of `f` (or submits
    /// them). On success every byte is written or in flight.
    fn write(&mut self, f: &File, head: &[u8], body: &[u8]) -> io::Result<()>;

    /// While `on` (the writer is behind), gathers frames into larger writes
    /// instead of writing each at once (see [`super::BEHIND_PERCENT`]); the
    /// writer calls [`Backend::flush`] when it turns it off.
    fn coalesce(&mut self, on: bool) {
        let _ = on;
    }

    /// While `on` (ring mode: the writer calls [`Backend::flush`] once no
    /// frame has followed for its bound, see `Writer::pace`), a frame's
    /// partial last block is not written with it but held, to be written
    /// whole by the next frame, or by that flush. Off (inline mode), every
    /// frame is written through to its last byte.
    fn hold_tail(&mut self, on: bool) {
        let _ = on;
    }

    /// The file offset of the first byte given to [`Backend::write`] and
    /// not yet written or submitted (a held tail, frames gathered while
    /// coalescing); `None` when there is none.
    fn unwritten_from(&self) -> Option<u64> {
        None
    }

    /// Writes (or submits) what is gathered and not yet written.
    fn flush(&mut self, f: &File) -> io::Result<()> {
        let _ = f;
        Ok(())
    }

    /// Reaps the completions that have come, without waiting.
    fn poll(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Waits for one completion when writes are in flight.
    fn wait_one(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Waits for every write in flight.
    fn wait_all(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// True while writes are in flight.
    fn in_flight(&self) -> bool {
        false
    }

    /// Every byte of the file before this offset is written; later ones
    /// may still be in flight, or failed (see [`Backend::take_error`]).
    fn completed_to(&self) -> u64;

    /// The first failed write since the last rollback: its file offset and
    /// error (asynchronous back-ends; the others return the error from
    /// [`Backend::write`]).
    fn take_error(&mut self) -> Option<(u64, io::Error)> {
        None
    }

    /// Writes submitted again because the kernel gave them up for a
    /// transient reason (io_uring: `-ECANCELED`, `-EINTR`, `-EAGAIN`
    /// completions under signals), counted over the recording.
    fn resubmitted(&self) -> u64 {
        0
    }

    /// After a failed write: waits for the writes in flight (their errors
    /// are forgotten); the next write goes to `offset` again.
    fn rollback(&mut self, f: &File, offset: u64) -> io::Result<()>;

    /// Waits for the writes in flight and leaves `f` as a buffered file
    /// (for the header rewrite at close).
    fn stop(&mut self, f: &File) -> io::Result<()>;
}

/// What a warning says when the kernel refuses a back-end.
pub(crate) struct Refused {
    /// What the kernel refused ("io_uring").
    pub(crate) what: &'static str,
    /// Why, from the kernel's error: "this kernel has no io_uring
    /// (CONFIG_IO_URING)" for `ENOSYS`, the sysctl that forbids it for
    /// `EPERM`, where to look otherwise.
    pub(crate) hint: fn(&io::Error) -> &'static str,
}
