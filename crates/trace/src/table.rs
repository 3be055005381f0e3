//! The attribution table as text: cause — slow calls — share of slow-call
//! time — worst — detail and example stack.

use std::fmt::Write as _;

use rtrec_units::format_duration;

use crate::attribute::Explanation;

/// The table of `x`, indented by two spaces, with `published` (the
/// study's cause, if it names one) on its own line.
pub fn render(x: &Explanation, published: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  {} timed calls, median {}, {} slower than {} ({} in all){}{}",
        x.timed_calls,
        format_duration(x.median_ns),
        x.slow_calls,
        format_duration(x.threshold_ns),
        format_duration(x.slow_total_ns),
        if x.lost_events > 0 {
            format!(
                "; {} trace entries lost (attribution incomplete)",
                x.lost_events
            )
        } else {
            String::new()
        },
        if x.steal_ns > 0 {
            format!("; hypervisor steal {}", format_duration(x.steal_ns))
        } else {
            String::new()
        },
    );
    if let Some(p) = published {
        let _ = writeln!(out, "  published cause: {p}");
    }
    if x.causes.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "  {:<28} {:>6} {:>7} {:>9}  example",
        "cause", "calls", "share", "worst"
    );
    for r in &x.causes {
        let _ = writeln!(
            out,
            "  {:<28} {:>6} {:>6.1}% {:>9}  {}",
            r.name,
            r.calls,
            r.share_pct,
            format_duration(r.worst_ns),
            r.detail.as_deref().unwrap_or("")
        );
        if !r.stack.is_empty() {
            let _ = writeln!(out, "  {:<28} {}", "", r.stack.join(" < "));
        }
    }
    out
}
