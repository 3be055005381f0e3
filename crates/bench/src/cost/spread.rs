//! Each cell's spread over the runs of `--repeat` ([`spread`]): the
//! highest ratio over the lowest, whether the runs agree within
//! [`AGREE_WITHIN`], and why not, as far as the runs say.
//!
//! Design choice (issue 34, "or the report says which cell did not and
//! why"): a ratio is the recorder's total over the floor, and either side
//! can move. A cell that does not agree is given the spread of each side
//! (and of fio's part of the floor), the recorder's thread whose CPU
//! moved the most, and the machine's steal when a run had
//! [`STEAL_REASON`] of it: where the spread came from, measured, not a
//! guess at its cause.

use super::options::AGREE_WITHIN;
use super::report::{Cell, Run, Spread};

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
            let same = |x: &&Cell| x.io == c.io && x.record_bytes == c.record_bytes;
            let cells: Vec<_> = runs
                .iter()
                .filter_map(|r| r.cells.iter().find(same))
                .collect();
            let ratios: Vec<f64> = cells.iter().map(|x| x.ratio).collect();
            let of_ratios = max_over_min(&ratios);
            let agree = of_ratios.is_none_or(|m| m <= AGREE_WITHIN);
            let total = max_over_min(&cells.iter().map(|x| x.total_ns_per_mib).collect::<Vec<_>>());
            let floor = max_over_min(&cells.iter().map(|x| x.floor.ns_per_mib).collect::<Vec<_>>());
            let reason = (!agree).then(|| reason(&cells, total, floor));
            Spread {
                io: c.io,
                record_bytes: c.record_bytes,
                ratios,
                max_over_min: of_ratios,
                agree,
                total_max_over_min: total,
                floor_max_over_min: floor,
                reason,
            }
        })
        .collect()
}

/// Highest over lowest of `v`; `None` with fewer than two values or a
/// value of 0 or less.
fn max_over_min(v: &[f64]) -> Option<f64> {
    let (lo, hi) = extremes(v);
    (v.len() > 1 && lo > 0.0).then(|| hi / lo)
}

/// The lowest and highest of `v`.
fn extremes(v: &[f64]) -> (f64, f64) {
    v.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
        (lo.min(x), hi.max(x))
    })
}

/// Where a cell's spread came from over its runs `cells`: the spread of
/// the recorder's total (`total`) and of the thread whose CPU per MiB
/// moved the most ns (not the largest multiple: a thread of a few µs
/// per MiB can move 10× and explain nothing), of the floor (`floor`)
/// and of fio's part, and the steal when high enough.
fn reason(cells: &[&Cell], total: Option<f64>, floor: Option<f64>) -> String {
    let values = |f: &dyn Fn(&Cell) -> f64| cells.iter().map(|c| f(c)).collect::<Vec<_>>();
    let spread_of = |v: &[f64]| max_over_min(v).unwrap_or(1.0);
    let ns_moved = |v: &[f64]| {
        let (lo, hi) = extremes(v);
        hi - lo
    };
    let (name, moved) = [
        ("producer", values(&|c| c.producer_ns_per_mib)),
        ("writer", values(&|c| c.writer_ns_per_mib)),
        ("flusher", values(&|c| c.flusher_ns_per_mib)),
    ]
    .into_iter()
    // `max_by` keeps the last of equals: reversed, a tie names the first.
    .rev()
    .max_by(|a, b| ns_moved(&a.1).total_cmp(&ns_moved(&b.1)))
    .map(|(name, v)| (name, spread_of(&v)))
    .unwrap_or(("producer", 1.0));
    let fio = spread_of(&values(&|c| c.floor.fio_ns_per_mib.unwrap_or(0.0)));
    let mut r = format!(
        "total ×{:.2} (most the {name}'s, ×{:.2}), floor ×{:.2} (fio ×{fio:.2})",
        total.unwrap_or(1.0),
        moved,
        floor.unwrap_or(1.0),
    );
    let steal = cells.iter().map(|x| x.steal_share).fold(0.0f64, f64::max);
    if steal >= STEAL_REASON {
        r.push_str(&format!(
            "; the VM's steal: up to {:.0} % of the machine's CPU during a run",
            steal * 100.0
        ));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrec_engine::Io;

    fn run(cells: Vec<Cell>) -> Run {
        Run {
            device_bytes_per_s: None,
            rate_bytes_per_s: 1.0,
            cells,
        }
    }

    #[test]
    fn a_cell_that_does_not_agree_says_which_side_of_its_ratio_moved() {
        // Buffered: the floor halves (fio), the total stays; direct: the
        // writer's CPU moves the total by 10 %, within the agreement.
        let mut fast_writer = Cell::for_test(Io::Direct, 64, 4.4, 1.0);
        fast_writer.writer_ns_per_mib = 1.4;
        let runs = [
            run(vec![
                Cell::for_test(Io::Buffered, 64, 4.0, 1.0),
                Cell::for_test(Io::Direct, 64, 4.0, 1.0),
            ]),
            run(vec![
                Cell::for_test(Io::Buffered, 64, 4.0, 0.5),
                fast_writer,
            ]),
        ];
        let s = spread(&runs);
        assert_eq!(s.len(), 2);
        let b = &s[0];
        assert!(!b.agree);
        assert_eq!(
            (b.total_max_over_min, b.floor_max_over_min),
            (Some(1.0), Some(2.0))
        );
        assert_eq!(
            b.reason.as_deref(),
            Some("total ×1.00 (most the producer's, ×1.00), floor ×2.00 (fio ×2.00)")
        );
        let d = &s[1];
        assert!(d.agree, "{d:?}");
        assert_eq!(d.reason, None);
        let total = d.total_max_over_min.unwrap();
        assert!((total - 1.1).abs() < 1e-9, "{total}");
    }

    #[test]
    fn the_thread_named_is_the_one_that_moved_the_most_ns_not_the_largest_multiple() {
        let mut a = Cell::for_test(Io::Uring, 16 << 10, 3.0, 1.0);
        a.flusher_ns_per_mib = 0.01;
        let mut b = Cell::for_test(Io::Uring, 16 << 10, 3.85, 1.0);
        (b.writer_ns_per_mib, b.flusher_ns_per_mib) = (1.8, 0.05);
        let s = spread(&[run(vec![a]), run(vec![b])]);
        let reason = s[0].reason.as_deref().unwrap();
        assert!(reason.contains("(most the writer's, ×1.80)"), "{reason}");
    }

    #[test]
    fn one_run_has_no_spread() {
        let s = spread(&[run(vec![Cell::for_test(Io::Uring, 1 << 20, 3.0, 1.0)])]);
        assert!(s[0].agree);
        assert_eq!(
            (
                s[0].max_over_min,
                s[0].total_max_over_min,
                s[0].floor_max_over_min
            ),
            (None, None, None)
        );
    }
}
