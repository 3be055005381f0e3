//! The search of one back-end and record size (see the study's docs,
//! [`super`]): the coarse search with short probes from the device's
//! bandwidth down (or, without a device figure, up from 1 MiB/s), its
//! geometric bisection, then the k-of-k confirmation with full-length
//! probes, stepping down 10 % at a failure; the answer as a [`Row`].

use rtrec_engine::Io;

use super::judge::limit_of;
use super::options::{Options, MAX_STEP_DOWNS, STEP_DOWN};
use super::report::{Probe, Row};

/// `prober(bps, ns, phase)`: records one probe (`None`: it would not fit).
type Prober<'a> = dyn FnMut(f64, u64, &'static str) -> anyhow::Result<Option<Probe>> + 'a;

/// The search of one back-end and record size (see the study's docs):
/// `prober(bps, ns, phase)` records one probe (`None`: it would not fit),
/// `room(ns)` is the highest rate a recording of `ns` fits at.
pub fn search(
    io: Io,
    size: u64,
    o: &Options,
    device: f64,
    room: &dyn Fn(u64) -> f64,
    prober: &mut dyn FnMut(f64, u64, &'static str) -> anyhow::Result<Option<Probe>>,
) -> anyhow::Result<Row> {
    let mut probes = Probes {
        prober,
        probes: Vec::new(),
        capped: false,
    };
    let coarse_bps = coarse(&mut probes, size, o, device)?;
    let (sustained, room_capped) = confirm(&mut probes, o, device, coarse_bps, room)?;
    let Probes { probes, capped, .. } = probes;
    Ok(row(
        io,
        size,
        device,
        coarse_bps,
        sustained,
        probes,
        capped || room_capped,
    ))
}

/// The probes of one search so far, and whether a rate was left unprobed
/// because its recording would not fit.
struct Probes<'a, 'p> {
    prober: &'a mut Prober<'p>,
    probes: Vec<Probe>,
    capped: bool,
}

impl Probes<'_, '_> {
    /// Probes `bps` for `ns`: whether it held, `None` when it would not fit
    /// (the search is then `capped`).
    fn try_rate(&mut self, bps: f64, ns: u64, phase: &'static str) -> anyhow::Result<Option<bool>> {
        let Some(p) = (self.prober)(bps, ns, phase)? else {
            self.capped = true;
            return Ok(None);
        };
        let held = p.held;
        self.probes.push(p);
        Ok(Some(held))
    }
}

/// Phase 1, with short probes: the bracket ([`bracket_down`] from the
/// device's bandwidth, [`bracket_up`] without a device figure), then
/// `o.steps` geometric bisections between its ends; the candidate,
/// payload bytes/s.
fn coarse(p: &mut Probes, size: u64, o: &Options, device: f64) -> anyhow::Result<f64> {
    // Rates in payload bytes/s; at most one record a microsecond.
    let max_bps = (size as f64 * 1e6).min(device * 4.0);
    let coarse_ns = o.coarse_ns.min(o.probe_ns);
    let (mut lo, mut lo_bps, mut hi_bps) = if device > 0.0 {
        bracket_down(p, size, device, max_bps, coarse_ns)?
    } else {
        bracket_up(p, max_bps, coarse_ns)?
    };
    // Nothing to bisect when the device's own rate held.
    let steps = if lo_bps >= hi_bps { 0 } else { o.steps };
    for _ in 0..steps {
        let mid = (lo_bps * hi_bps).sqrt();
        if p.try_rate(mid, coarse_ns, "coarse")? == Some(true) {
            lo = Some(mid);
            lo_bps = mid;
        } else {
            hi_bps = mid;
        }
    }
    Ok(lo.unwrap_or(lo_bps))
}

/// The bracket from the device's bandwidth (`device`, at most `max_bps`)
/// halving until a rate holds, down to the larger of one record and 1/1024
/// of the device: (the rate that held, the bracket's low end, its high
/// end).
fn bracket_down(
    p: &mut Probes,
    size: u64,
    device: f64,
    max_bps: f64,
    ns: u64,
) -> anyhow::Result<(Option<f64>, f64, f64)> {
    let floor = (size as f64).max(device / 1024.0);
    let mut r = device.min(max_bps);
    let mut hi_bps = r;
    while r >= floor {
        if p.try_rate(r, ns, "coarse")? == Some(true) {
            return Ok((Some(r), r, hi_bps));
        }
        hi_bps = r;
        r /= 2.0;
    }
    Ok((None, r, hi_bps))
}

/// The bracket without a device figure: ×4 up from 1 MiB/s while a rate
/// holds, up to `max_bps`: (the last rate that held, the bracket's low
/// end, its high end).
fn bracket_up(p: &mut Probes, max_bps: f64, ns: u64) -> anyhow::Result<(Option<f64>, f64, f64)> {
    let mut lo = None;
    let mut r = (1 << 20) as f64;
    while r <= max_bps && p.try_rate(r, ns, "coarse")? == Some(true) {
        lo = Some(r);
        r *= 4.0;
    }
    Ok((lo, lo.unwrap_or((1 << 18) as f64 / 4.0), r))
}

/// Phase 2: k of k full-length probes, from the candidate `coarse_bps`
/// (at most the device's bandwidth, see the study's docs) down by 10 % (no
/// higher than a full-length recording fits, `room`): the rate that held
/// k of k, if one did, and whether the room lowered the start.
fn confirm(
    p: &mut Probes,
    o: &Options,
    device: f64,
    coarse_bps: f64,
    room: &dyn Fn(u64) -> f64,
) -> anyhow::Result<(Option<f64>, bool)> {
    let start_bps = if device > 0.0 {
        coarse_bps.min(device)
    } else {
        coarse_bps
    };
    let room_now = room(o.probe_ns);
    let room_capped = room_now < start_bps;
    let mut bps = start_bps.min(room_now);
    'rates: for _ in 0..=MAX_STEP_DOWNS {
        for _ in 0..o.confirmations.max(1) {
            if p.try_rate(bps, o.probe_ns, "confirm")? != Some(true) {
                bps *= STEP_DOWN;
                continue 'rates;
            }
        }
        return Ok((Some(bps), room_capped));
    }
    Ok((None, room_capped))
}

/// The row of a finished search: the sustained rate (0 when none held k
/// of k), its fraction of `device`, the producer's lateness and the CPU
/// cost at that rate, and what stopped it ([`limit_of`]).
fn row(
    io: Io,
    size: u64,
    device: f64,
    coarse_bps: f64,
    sustained: Option<f64>,
    probes: Vec<Probe>,
    capped: bool,
) -> Row {
    let at_rate: Vec<&Probe> = sustained
        .map(|l| {
            probes
                .iter()
                .filter(|p| p.phase == "confirm" && (p.rate_hz * size as f64 - l).abs() < 1.0)
                .collect()
        })
        .unwrap_or_default();
    let stored: u64 = at_rate.iter().map(|p| p.bytes).sum();
    let sustained_bps = sustained.unwrap_or(0.0);
    let limit = limit_of(&probes, sustained_bps, capped);
    Row {
        io,
        record_bytes: size,
        coarse_hz: coarse_bps / size as f64,
        sustained_hz: sustained_bps / size as f64,
        sustained_bytes_per_s: sustained_bps,
        confirmed: sustained.is_some(),
        fraction_of_device: if device > 0.0 {
            sustained_bps / device
        } else {
            0.0
        },
        fio_bytes_per_s: None,
        fraction_of_fio: None,
        fio_job: None,
        file_bytes: None,
        max_lateness_ns: at_rate.iter().map(|p| p.max_lateness_ns).max(),
        missed_periods: (!at_rate.is_empty())
            .then(|| at_rate.iter().map(|p| p.missed_periods).sum()),
        cpu_s_per_gib: (stored > 0).then(|| {
            at_rate.iter().map(|p| p.cpu_ns).sum::<u64>() as f64
                / 1e9
                / (stored as f64 / (1u64 << 30) as f64)
        }),
        capped,
        limit: Some(limit),
        probes,
    }
}
