//! Explains slow calls: traces the timed threads through this process's
//! own tracefs instance and attributes the time of every slow call to a
//! named kernel cause (a jbd2 handle wait, page writeback, a lock, dirty
//! throttling, reclaim, device I/O) or to the platform (preempted, on the
//! CPU). Used by `rtrec bench --explain` and `rtrec record --explain`.
//!
//! **Must not depend on**: the engine, the bench or the binary; it reaches
//! tracefs only through `rtrec-host`'s journaled [`Instance`](rtrec_host::tracefs::Instance).
//!
//! | module | owns |
//! |---|---|
//! | [`parse`] | the text of a tracefs `trace` file |
//! | [`cause`] | the named causes; classifying a blocking stack |
//! | [`producer`] | the producer's missed periods, late wake-ups and slow `record()` calls |
//! | [`mod@attribute`] | slow calls and the split of their time |
//! | [`session`] | the instance: events, filters, triggers, reading back |
//! | [`table`] | the attribution table as text |
//! | [`tracer`] | one traced run: its threads, started and stopped |
//! | [`args`] | the `--explain` flags of every command that traces |
#![deny(missing_docs)]

pub mod args;
pub mod attribute;
pub mod cause;
pub mod parse;
pub mod producer;
pub mod session;
pub mod table;
pub mod tracer;

pub use args::ExplainArgs;
pub use attribute::{attribute, CauseRow, Explanation, Options, Part, SlowCall};
pub use cause::Cause;
pub use session::{Session, Watch};
pub use tracer::{threads_named, Tracer};
