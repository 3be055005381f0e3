//! What a person sees: the warnings (an enum whose text says what to do),
//! one factory for the per-case progress bars, the terminal tables of
//! results, of `--list` and of `--compare`, and their plain numbers. The
//! text histogram of `--histogram` is `rtrec_units::histogram`, shared
//! with `rtrec record --histogram`.

pub use rtrec_units::histogram;
pub mod numbers;
pub mod progress;
pub mod table;
mod warnings;

pub use warnings::Warning;
