//! The scenario table of `--list`: every case grouped by what `--study`
//! selects, in its order, with the published figures beside each; then
//! S3's variants and S4's matrix and recording cases.

use std::fmt::Write as _;

use rtrec_units::format_size;

use super::cells::published;
use crate::scenario::{Flusher, SCENARIOS};
use crate::study::Study;

/// The groups of `--study s1`, `s2`, `rtrec` and `backends`, in its
/// order: the title and the studies listed under it (`--study backends`
/// also runs rtrec's group, its references).
const GROUPS: [(&str, &[Study]); 4] = [
    (
        "s1: design cases and a background reader (S1 Tables 1 and 3)",
        &[Study::S1Table1, Study::S1Table3],
    ),
    (
        "s2: fallocate with ftruncate + fsync in the background (S2 Table 1)",
        &[Study::S2],
    ),
    (
        "rtrec: rtrec's own design and the platform floors, each loaded floor run only with its rtrec case (no published figure)",
        &[Study::Rtrec, Study::Platform],
    ),
    (
        "backends: rtrec with --io direct and --io uring beside the rtrec group (not in the default run)",
        &[Study::Backends],
    ),
];

/// The scenario table of `--list`.
pub fn render_list() -> String {
    let mut out = String::new();
    for (i, (title, studies)) in GROUPS.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        group(&mut out, title, studies);
    }
    s3(&mut out);
    s4(&mut out);
    let _ = writeln!(
        out,
        "\nPublished figures come from a 1 GHz dual-core ARM board with eMMC (S1 Table 1 and 3, S2 Table 1), a 5,400 rpm laptop disk (S3) and the BFQ paper's figures (S4)."
    );
    out
}

/// One group: its title, the heads, and two lines per case (its figures,
/// then its description).
fn group(out: &mut String, title: &str, studies: &[Study]) {
    let _ = writeln!(out, "--study {title}");
    let _ = writeln!(
        out,
        "{:<24} {:<8} {:<4} {:<12} {:>8} {:>8} {:>9}  strategies",
        "case", "study", "fl.", "loads", "pub min", "pub avg", "pub max"
    );
    for s in SCENARIOS.iter().filter(|s| studies.contains(&s.study)) {
        let p = s.published;
        let _ = writeln!(
            out,
            "{:<24} {:<8} {:<4} {:<12} {:>8} {:>8} {:>9}  {}",
            s.name,
            s.study.label(),
            match s.flusher {
                Flusher::On => "on",
                Flusher::Off => "off",
            },
            s.loads_text(),
            published(p.and_then(|p| p.min_us)),
            published(p.and_then(|p| p.avg_us)),
            published(p.and_then(|p| p.max_us)),
            s.strategies_text()
        );
        let _ = writeln!(out, "{:<24} {}", "", s.description);
    }
}

/// S3's variants, the article's figures in the heads.
fn s3(out: &mut String) {
    let p = crate::s3::published();
    let _ = writeln!(
        out,
        "\n--study s3: fsync-tester under streaming buffered overwrites (LWN 2009; root)"
    );
    let _ = writeln!(
        out,
        "{:<24} {:<8} {:<10}  published: fsync {}–{} s unpatched, {}–{} s patched; streamer {} → {} MB/s",
        "case", "data=", "window", p.unpatched_fsync_s.0, p.unpatched_fsync_s.1,
        p.patched_fsync_s.0, p.patched_fsync_s.1, p.stream_mb_per_s.0, p.stream_mb_per_s.1
    );
    for v in crate::s3::VARIANTS {
        let window = if v.window_bytes == 0 {
            "-".to_string()
        } else {
            format_size(v.window_bytes)
        };
        let _ = writeln!(out, "{:<24} {:<8} {}", v.name, v.data, window);
    }
}

/// S4's matrix in one line, its published finding, and the recording
/// cases with their scheduler, I/O class and weight.
fn s4(out: &mut String) {
    let _ = writeln!(
        out,
        "\n--study s4: BFQ weights per request size, and the recording under interference (root)"
    );
    let scheds: Vec<&str> = crate::s4::SCHEDS.iter().map(|s| s.label).collect();
    let sizes: Vec<String> = crate::s4::SIZES.iter().map(|b| format_size(*b)).collect();
    let _ = writeln!(
        out,
        "{:<24} weights 2:1 (and 1:4:5 under bfq, direct), reads and writes, direct and buffered; schedulers {}; request sizes {}",
        "S4 matrix",
        scheds.join(", "),
        sizes.join(", ")
    );
    let _ = writeln!(
        out,
        "{:<24} published: the 2:1 share holds for small requests and breaks beyond BFQ's budget (35–50 MB); strict_guarantees restores it at a cost in throughput; buffered writes escape the weights",
        ""
    );
    let _ = writeln!(
        out,
        "{:<28} {:<12} {:<9} weight",
        "case", "scheduler", "I/O class"
    );
    for (name, s, class, weight) in crate::s4::ISOLATED {
        let class = class.map_or("-".to_string(), |(k, l)| {
            format!("{}:{l}", ["none", "rt", "be", "idle"][k as usize & 3])
        });
        let weight = weight.map_or("-".to_string(), |w| w.to_string());
        let _ = writeln!(out, "{name:<28} {:<12} {class:<9} {weight}", s.label);
    }
}
