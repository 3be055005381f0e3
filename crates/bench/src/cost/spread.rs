//! Each cell's spread over the runs of `--repeat` ([`spread`]): the
//! highest ratio over the lowest, whether the runs agree within
//! [`AGREE_WITHIN`], and why not when the runs say.

use super::options::AGREE_WITHIN;
use super::report::{Run, Spread};

/// The machine's steal over a recording that counts as a reason: 2 % of
/// its CPU time.
const STEAL_REASON: f64 = 0.02;

/// One [`Spread`] per cell of the first run, in its order, over `runs`.
pub fn spread(runs: &[Run]) -> Vec<Spread> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .cells
        .iter()
        .map(|c| {
            let same = |x: &&super::report::Cell| x.io == c.io && x.record_bytes == c.record_bytes;
            let cells: Vec<_> = runs
                .iter()
                .filter_map(|r| r.cells.iter().find(same))
                .collect();
            let ratios: Vec<f64> = cells.iter().map(|x| x.ratio).collect();
            let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ratios.iter().copied().fold(0.0f64, f64::max);
            let max_over_min = (ratios.len() > 1 && lo > 0.0).then(|| hi / lo);
            let agree = max_over_min.is_none_or(|m| m <= AGREE_WITHIN);
            let steal = cells.iter().map(|x| x.steal_share).fold(0.0f64, f64::max);
            let reason = (!agree && steal >= STEAL_REASON).then(|| {
                format!(
                    "the VM's steal: up to {:.0} % of the machine's CPU during a run",
                    steal * 100.0
                )
            });
            Spread {
                io: c.io,
                record_bytes: c.record_bytes,
                ratios,
                max_over_min,
                agree,
                reason,
            }
        })
        .collect()
}
