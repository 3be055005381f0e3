//! Thin, safe wrappers for the Linux calls rtrec makes: the engine, the C
//! library, the bench and the binary reach the kernel only through here.
//!
//! **Owns**: one safe function per system call (or small fixed sequence of
//! calls, like [`replace_atomic`]), taking `impl AsFd` or plain values and
//! returning `io::Result`, its doc opening with the C form it wraps.
//!
//! **Must not depend on**: the engine, or any state of the machine beyond
//! the call at hand — the journal of global changes, sysctls and loop
//! filesystems live in `rtrec-host`, which builds on this crate.
//!
//! Modules, by concern: [`dir`] (directory handles: creating, opening and
//! renaming files relative to a directory, never through a symlink),
//! [`blockdev`] (a device's sysfs directory and queue attributes),
//! [`direct`] (`O_DIRECT`, the device's logical block size, aligned buffers),
//! [`uring`] (io_uring writes from a registered buffer to a fixed file),
//! [`file`](mod@file) (create, allocate, write, rename, lock),
//! [`flush`] (write-back and durability), [`replace`] (atomic replacement of
//! a file), [`time`] (clocks and sleeps), [`sched`] (real-time scheduling of
//! a thread), [`process`] (signals to and from processes, ids, memory),
//! [`mount`] (unmounting, device numbers), [`hidden`] (kernel features
//! hidden by `RTREC_HIDE_FEATURES`, refused as a kernel without them
//! refuses). Everything but `hidden` and `blockdev` is re-exported at the
//! crate root.
//!
//! Design choices:
//! - Calls that `rustix` covers go through it; `libc` is used directly only
//!   where rustix has no call (`sync_file_range` flags, `sched_setscheduler`,
//!   `ioprio_set`, `CLOCK_THREAD_CPUTIME_ID`), behind [`cvt`] (in [`errno`]), the one
//!   errno-to-`Result` helper; io_uring goes through the `io-uring` crate.
//!   No other crate of the workspace calls `libc`.
//! - The error type is `std::io::Error`, not a crate error enum: every
//!   failure here is one errno, and callers add the context (which file,
//!   which step).
//! - Test support (a counting allocator, counters of `fallocate` and
//!   `ftruncate` calls) is in `testing`, behind the `testing` cargo feature,
//!   so it is in no library or binary, only in test builds that ask for it.
#![deny(missing_docs)]

pub mod blockdev;
pub mod dir;
pub mod direct;
pub mod errno;
pub mod file;
pub mod flush;
pub mod hidden;
pub mod mount;
pub mod process;
pub mod replace;
pub mod sched;
pub mod testing;
pub mod time;
pub mod uring;

pub use dir::*;
pub use direct::*;
pub use errno::cvt;
pub use file::*;
pub use flush::*;
pub use mount::*;
pub use process::*;
pub use replace::*;
pub use sched::*;
pub use time::*;
pub use uring::*;
