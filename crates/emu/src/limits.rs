//! The request queue's two bounds on how long writes may be passed by
//! synchronous requests (see [`crate::queue`]). Below both the queue, which
//! applies them, and [`crate::timing`], whose summary names them, so
//! neither imports the other for them.

use std::time::Duration;

/// How long a write may wait behind synchronous requests before it is
/// served first (CFQ's and BFQ's `fifo_expire_async`: 250 ms).
pub const ASYNC_EXPIRE: Duration = Duration::from_millis(250);

/// After this many sync commands in a row served while a write waited, one
/// write command is served. Design choice: a count of commands, not of
/// mq-deadline's batches of 16 with `writes_starved` 2, because the
/// emulator's commands are large (up to `max_request`): four 1 MiB reads
/// (35 ms on `emmc`) already hold writeback as long as deadline's batches
/// of small reads would.
pub const SYNC_BATCH: u32 = 4;
