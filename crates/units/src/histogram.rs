//! `--histogram`: a latency histogram as text, as cyclictest prints one,
//! but on a logarithmic axis (five bins per decade) so that a 10 µs median
//! and a 20 ms spike fit on one screen; each bin's count is printed beside
//! its bar, so a single spike is never hidden by the scale. Here, with
//! the printing of durations it uses, so `rtrec record --histogram` and
//! `rtrec bench --histogram` draw the same bars without the recorder
//! depending on the bench.

use std::fmt::Write as _;

use crate::format_duration;

/// Bins per decade.
const PER_DECADE: f64 = 5.0;
/// Bins of a u64 (20 decades).
const BINS: usize = 20 * PER_DECADE as usize;
/// Width of the longest bar, characters.
const BAR: f64 = 40.0;

/// The histogram of `(value_ns, count)` pairs, one line per bin from the
/// smallest to the largest non-empty one; empty when there are no values.
pub fn render(values: impl IntoIterator<Item = (u64, u64)>) -> String {
    // Design choice: one counter per possible bin, an array: a u64 of
    // nanoseconds is below 10^20, so its bin is below BINS, and the
    // record-only binary carries no ordered map for this (docs/embedded.md).
    let bin = |ns: u64| ((ns.max(1) as f64).log10() * PER_DECADE).floor() as usize;
    let mut bins = [0u64; BINS];
    for (v, n) in values {
        bins[bin(v).min(BINS - 1)] += n;
    }
    let (Some(lo), Some(hi)) = (
        bins.iter().position(|&n| n > 0),
        bins.iter().rposition(|&n| n > 0),
    ) else {
        return String::new();
    };
    let top = bins.iter().copied().max().unwrap_or(1) as f64;
    let edge = |b: usize| 10f64.powf(b as f64 / PER_DECADE).round() as u64;
    let mut out = String::new();
    for (b, &n) in bins.iter().enumerate().take(hi + 1).skip(lo) {
        // A non-empty bin always shows at least one mark.
        let len = if n == 0 {
            0
        } else {
            ((n as f64).log10().max(0.0) / top.log10().max(1.0) * BAR)
                .ceil()
                .max(1.0) as usize
        };
        let _ = writeln!(
            out,
            "{:>9} – {:<9} |{:<width$}| {n}",
            format_duration(edge(b)),
            format_duration(edge(b + 1)),
            "#".repeat(len),
            width = BAR as usize
        );
    }
    out
}

/// [`render`] of raw samples.
pub fn of_samples(samples: &[u64]) -> String {
    render(samples.iter().map(|&v| (v, 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_lands_in_one_bin_and_a_single_spike_shows() {
        let mut v = vec![10_000u64; 999];
        v.push(20_000_000);
        let text = of_samples(&v);
        let lines: Vec<&str> = text.lines().collect();
        // 10 µs to 20 ms: 3.3 decades, 5 bins each.
        assert_eq!(lines.len(), 17, "{text}");
        assert!(lines[0].starts_with("    10 µs – 15.8 µs"), "{text}");
        assert!(lines[0].ends_with("| 999"), "{text}");
        assert!(
            lines[16].contains('#') && lines[16].ends_with("| 1"),
            "{text}"
        );
        let total: u64 = lines
            .iter()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 1000);
        assert_eq!(of_samples(&[]), "");
    }
}
