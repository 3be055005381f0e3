//! Safe wrappers for the Linux calls rtrec uses, and the persisted journal of
//! the global state (sysctls, mounts, loop devices, I/O schedulers) that rtrec
//! changes and always puts back.
//!
//! Each wrapper takes `impl AsFd` (or plain values), returns `io::Result`, and
//! its doc opens with the C form it wraps. Raw calls stay private behind one
//! errno-to-Result helper, [`cvt`].
#![deny(missing_docs)]

pub mod calls;
pub mod loopfs;
pub mod state;
pub mod sysctl;
pub mod testing;

pub use calls::*;
