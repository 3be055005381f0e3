//! How the study judges what it measured: whether a probe holds
//! ([`holds`]), what stopped a row ([`limit_of`]), whether some back-end
//! reached the target at a record size ([`verdicts`]) and whether a cell's
//! runs agree ([`spread`]).

use super::options::{
    HoldRule, AGREE_WITHIN, BACKLOG_LIMIT, BACKLOG_OF_OFFERED, BACKLOG_RECORDS, BUSY_SHARE,
    TARGET_OF_DEVICE,
};
use super::report::{Limit, Probe, Row, Run, Spread, Verdict};

/// True when `p` holds under `rule`: the recorder lost nothing (0 drops,
/// no writer error) and kept up (the backlog at the producer's last record
/// at most [`BACKLOG_LIMIT`] of the ring and [`BACKLOG_OF_OFFERED`] of the
/// payload offered); `max` and `p99` also judge the producer's lateness
/// against one period.
///
/// `full_ns` is the length of the confirmation's probes. Design choice
/// (issue 47): a shorter probe, the coarse search's screen, is judged
/// against what a full-length probe at its rate offers, not against its
/// own offer. A recording's start costs a disk a few hundred ms once (the
/// first file taken and synced with its directories, the first durable
/// mark): a 2 s probe cannot amortise it, and on `hdd-5400` the screen
/// failed `direct` and `uring` at 0.84 of the disk with 6 MiB queued,
/// where their 10 s probes ended with 2–3 MiB. The screen only proposes a
/// rate: the answer is still a rate that held `k` of `k` full-length
/// probes, judged on their own offer.
pub fn holds(p: &Probe, rule: HoldRule, full_ns: u64) -> bool {
    let backlog = p.backlog_bytes_at_end as f64;
    let stretch = (full_ns as f64 / p.duration_ns.max(1) as f64).max(1.0);
    let kept_up = p.dropped == 0
        && p.writer_error.is_none()
        && backlog <= BACKLOG_LIMIT * p.ring_bytes as f64
        && backlog
            <= (BACKLOG_OF_OFFERED * p.offered_bytes as f64 * stretch)
                .max((BACKLOG_RECORDS * p.record_bytes) as f64);
    kept_up
        && match rule {
            HoldRule::Drops => true,
            HoldRule::Max => p.max_lateness_ns <= p.period_ns && p.missed_periods == 0,
            HoldRule::P99 => p.p99_lateness_ns <= p.period_ns,
        }
}

/// What stopped a row (see the module docs): the failed probe closest
/// above `sustained_bps`, classified by where its CPU time went.
pub fn limit_of(probes: &[Probe], sustained_bps: f64, capped: bool) -> Limit {
    let failed = probes
        .iter()
        .filter(|p| !p.held && p.rate_hz * p.record_bytes as f64 > sustained_bps)
        .min_by(|a, b| a.rate_hz.total_cmp(&b.rate_hz));
    let Some(p) = failed else {
        return if capped {
            Limit {
                kind: "space".into(),
                at_bytes_per_s: 0.0,
                reason:
                    "the next rate up was not probed: its recording would not fit in the free space"
                        .into(),
            }
        } else {
            Limit {
                kind: "ceiling".into(),
                at_bytes_per_s: 0.0,
                reason: "no probe failed up to the search's highest rate (the device's bandwidth)"
                    .into(),
            }
        };
    };
    let bps = p.rate_hz * p.record_bytes as f64;
    let l = &p.load;
    let pct = |f: f64| format!("{:.0} %", f * 100.0);
    let lost = match &p.writer_error {
        Some(e) => format!("writer error: {e}"),
        None => format!(
            "{} records dropped, {} still queued at the last record",
            p.dropped,
            rtrec_units::format_size(p.backlog_bytes_at_end)
        ),
    };
    let threads = format!(
        "writer on a CPU {}, producer {} of the probe",
        pct(l.writer_share()),
        pct(l.producer_share())
    );
    let cores = format!(
        "the cores {} busy: rtrec {}, kernel threads {}, other processes {}, steal {}",
        pct(l.cores_share()),
        pct(l.process_share()),
        pct(l.kernel_threads_share()),
        pct(l.others_share()),
        pct(l.steal_share()),
    );
    let (kind, what) = if l.wall_ns == 0 {
        ("unmeasured", "no CPU figures in this report".to_string())
    } else if l.cores_share() >= BUSY_SHARE {
        ("cpu", format!("CPU: {cores}; {threads}"))
    } else if l.writer_share() >= BUSY_SHARE {
        (
            "writer-cpu",
            format!("the writer's CPU: {threads}; {cores}"),
        )
    } else if l.producer_share() >= BUSY_SHARE {
        (
            "producer-cpu",
            format!("the producer's CPU: {threads}; {cores}"),
        )
    } else {
        (
            "device",
            format!("the device: {threads}, the writer blocked in the kernel the rest (I/O, writeback throttling, the journal); {cores}"),
        )
    };
    Limit {
        kind: kind.into(),
        at_bytes_per_s: bps,
        reason: format!(
            "at {}: {what}; {lost}",
            rtrec_units::format_size_per_s(bps as u64)
        ),
    }
}

/// For each record size, the back-end with the highest fraction of the
/// device and whether it reaches [`TARGET_OF_DEVICE`].
pub fn verdicts(rows: &[Row]) -> Vec<Verdict> {
    let mut sizes: Vec<u64> = rows.iter().map(|r| r.record_bytes).collect();
    sizes.dedup();
    sizes
        .into_iter()
        .filter_map(|size| {
            let best = rows
                .iter()
                .filter(|r| r.record_bytes == size)
                .max_by(|a, b| a.fraction_of_device.total_cmp(&b.fraction_of_device))?;
            Some(Verdict {
                record_bytes: size,
                best: best.io,
                best_fraction: best.fraction_of_device,
                met: best.fraction_of_device >= TARGET_OF_DEVICE,
            })
        })
        .collect()
}

/// Each cell's held rates over `runs` and whether they agree within
/// [`AGREE_WITHIN`].
pub fn spread(runs: &[Run]) -> Vec<Spread> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .rows
        .iter()
        .map(|cell| {
            let same: Vec<&Row> = runs
                .iter()
                .filter_map(|r| r.row(cell.io, cell.record_bytes))
                .collect();
            let held: Vec<f64> = same.iter().map(|r| r.sustained_bytes_per_s).collect();
            let (lo, hi) = held.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &h| {
                (lo.min(h), hi.max(h))
            });
            let max_over_min = (lo > 0.0).then(|| hi / lo);
            Spread {
                io: cell.io,
                record_bytes: cell.record_bytes,
                fractions_of_device: same.iter().map(|r| r.fraction_of_device).collect(),
                held_bytes_per_s: held,
                max_over_min,
                agree: max_over_min.is_some_and(|m| m <= AGREE_WITHIN),
            }
        })
        .collect()
}
