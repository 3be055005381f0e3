//! The terminal tables: results (published beside measured, with ratios),
//! the scenario list of `--list`, the comparison of `--compare`, and S3's
//! and S4's tables, one module each. Plain text, fixed columns; durations
//! and sizes print through `rtrec-units` (a unit in every cell, as
//! everywhere in rtrec), counts and ratios through
//! [`crate::output::numbers`]; the cells the tables share are in `cells`,
//! below them all.

mod cells;
mod compare;
mod list;
mod results;
mod studies;

pub use cells::published_us;
pub use compare::render_compare;
pub use list::render_list;
pub use results::{device_line, protocol_lines, render_results, rt_line, PUBLISHED_SCHEDULING};
pub use studies::{render_s3, render_s4};
