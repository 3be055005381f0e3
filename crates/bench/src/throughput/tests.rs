//! The throughput study's unit tests: what holds, the search, what
//! stopped a row, the verdicts and the spread, a buffered fio job's length.

use rtrec_engine::{Alloc, Io};

use super::*;
use crate::producer::RtRequest;

/// The confirmation's probe length of these tests: [`clean`]'s.
const FULL: u64 = 5_000_000_000;

/// A probe at 1,000 records/s of 16 KiB into a 16 MiB ring that lost
/// nothing, was never late and ended with an empty ring.
fn clean() -> Probe {
    Probe {
        rate_hz: 1000.0,
        period_ns: 1_000_000,
        duration_ns: 5_000_000_000,
        phase: "confirm".into(),
        held: false,
        dropped: 0,
        writer_error: None,
        ring_bytes: 16 << 20,
        record_bytes: 16384,
        offered_bytes: 5000 * 16384,
        backlog_bytes_at_end: 0,
        missed_periods: 0,
        max_lateness_ns: 10_000,
        p99_lateness_ns: 5_000,
        bytes: 5000 * 16384,
        cpu_ns: 1,
        rt_granted: true,
        load: ProbeLoad::default(),
        pool_fallbacks: 0,
    }
}

#[test]
fn a_late_release_does_not_fail_a_probe_that_lost_nothing() {
    let late = Probe {
        max_lateness_ns: 9_000_000,
        missed_periods: 8,
        ..clean()
    };
    assert!(holds(&clean(), HoldRule::Drops, FULL));
    assert!(holds(&late, HoldRule::Drops, FULL));
    assert!(!holds(&late, HoldRule::Max, FULL));
    assert!(holds(&late, HoldRule::P99, FULL));
    assert!(!holds(
        &Probe {
            p99_lateness_ns: 2_000_000,
            ..late
        },
        HoldRule::P99,
        FULL
    ));
}

#[test]
fn a_short_screen_is_judged_against_what_a_full_probe_offers() {
    // hdd-5400, `direct` at 18.6 MiB/s of 1 MiB records: the 2 s screen
    // ended with 6 MiB queued (its first file and first mark), 16 % of its
    // own 37 MiB; a 10 s probe offers 186 MiB, of which 5 % is 9.3 MiB.
    let screen = Probe {
        rate_hz: 18.6,
        period_ns: 53_763_440,
        duration_ns: 2_000_000_000,
        phase: "coarse".into(),
        ring_bytes: 42 << 20,
        record_bytes: 1 << 20,
        offered_bytes: 37 << 20,
        backlog_bytes_at_end: 6 << 20,
        ..clean()
    };
    assert!(holds(&screen, HoldRule::Drops, 10_000_000_000));
    // Judged on its own offer, as before, it fails; so does a backlog past
    // the full probe's 5 %.
    assert!(!holds(&screen, HoldRule::Drops, 2_000_000_000));
    let behind = Probe {
        backlog_bytes_at_end: 10 << 20,
        ..screen.clone()
    };
    assert!(!holds(&behind, HoldRule::Drops, 10_000_000_000));
    // A full-length probe is judged on its own offer whatever `full_ns`.
    let full = Probe {
        duration_ns: 10_000_000_000,
        offered_bytes: 186 << 20,
        backlog_bytes_at_end: 10 << 20,
        ..screen
    };
    assert!(!holds(&full, HoldRule::Drops, 10_000_000_000));
}

#[test]
fn a_drop_an_error_or_a_ring_over_half_full_fails_it() {
    assert!(!holds(
        &Probe {
            dropped: 1,
            ..clean()
        },
        HoldRule::Drops,
        FULL
    ));
    let error = Probe {
        writer_error: Some("ENOSPC".into()),
        ..clean()
    };
    assert!(!holds(&error, HoldRule::Drops, FULL));
    // 5 % of the 78 MiB offered is 3.9 MiB: within it holds, past it not.
    let small = Probe {
        backlog_bytes_at_end: 250 * 16384,
        ..clean()
    };
    assert!(holds(&small, HoldRule::Drops, FULL));
    let behind = Probe {
        backlog_bytes_at_end: 251 * 16384,
        ..clean()
    };
    assert!(!holds(&behind, HoldRule::Drops, FULL));
    // A big probe in a small ring: half the ring is the limit.
    let big = Probe {
        offered_bytes: 1 << 40,
        ..clean()
    };
    let half = Probe {
        backlog_bytes_at_end: 8 << 20,
        ..big.clone()
    };
    assert!(holds(&half, HoldRule::Drops, FULL));
    let over = Probe {
        backlog_bytes_at_end: (8 << 20) + 16384,
        ..big
    };
    assert!(!holds(&over, HoldRule::Drops, FULL));
    // A slow rate: the last records still queued are not falling behind.
    let slow = Probe {
        record_bytes: 1 << 20,
        offered_bytes: 2 << 20,
        ring_bytes: 64 << 20,
        backlog_bytes_at_end: 1 << 20,
        ..clean()
    };
    assert!(holds(&slow, HoldRule::Drops, FULL));
    assert!(!holds(
        &Probe {
            backlog_bytes_at_end: 5 << 20,
            ..slow
        },
        HoldRule::Drops,
        FULL
    ));
}

/// A device that keeps up with everything at or below `limit` bytes/s
/// except the probes whose index is in `hiccups` (one late-ring glitch
/// each); the search's probes in order.
fn searched(limit: f64, hiccups: &[usize], k: u32) -> Row {
    searched_on(1e9, limit, hiccups, k)
}

/// [`searched`] on a device of `device` bytes/s.
fn searched_on(device: f64, limit: f64, hiccups: &[usize], k: u32) -> Row {
    let o = Options {
        probe_ns: 10_000_000_000,
        coarse_ns: 1_000_000_000,
        steps: 5,
        confirmations: k,
        sizes: vec![1 << 20],
        rule: HoldRule::Drops,
        rt: RtRequest::default(),
        repeat: 1,
        alloc: Alloc::Fallocate,
    };
    let mut n = 0;
    let mut prober = |bps: f64, ns: u64, phase: &'static str| {
        let i = n;
        n += 1;
        let mut p = Probe {
            rate_hz: bps / (1 << 20) as f64,
            duration_ns: ns,
            phase: phase.into(),
            dropped: u64::from(bps > limit || hiccups.contains(&i)),
            ..clean()
        };
        p.held = holds(&p, o.rule, o.probe_ns);
        Ok(Some(p))
    };
    search(
        Io::Direct,
        1 << 20,
        &o,
        device,
        &|_| f64::INFINITY,
        &mut prober,
    )
    .unwrap()
}

#[test]
fn the_answer_held_k_of_k_and_a_hiccup_only_steps_it_down() {
    let limit = 300.0 * (1 << 20) as f64;
    let row = searched(limit, &[], 3);
    assert!(row.confirmed && row.sustained_bytes_per_s <= limit);
    let confirms: Vec<&Probe> = row.probes.iter().filter(|p| p.phase == "confirm").collect();
    assert_eq!(confirms.len(), 3);
    assert!(confirms.iter().all(|p| p.held));
    // The same search, its second confirmation losing a record: the
    // answer is the next rate down, held 3 of 3.
    let first_confirm = row.probes.len() - 3;
    let hiccup = searched(limit, &[first_confirm + 1], 3);
    assert!(hiccup.confirmed);
    let ratio = hiccup.sustained_bytes_per_s / row.sustained_bytes_per_s;
    assert!((ratio - STEP_DOWN).abs() < 1e-9, "{ratio}");
    assert_eq!(hiccup.missed_periods, Some(0));
    // Short probes that hold above the device (the page cache): the
    // confirmation starts at the device's bandwidth.
    let device = 200.0 * (1 << 20) as f64;
    let cached = searched_on(device, limit, &[], 3);
    assert_eq!(cached.sustained_bytes_per_s, device);
    // The coarse search starts at the device and halves until a rate
    // holds: on a device 3 times faster than the writer, 900 and 450
    // fail, 225 holds, then 5 bisection steps of that factor of 2.
    let slow = searched_on(3.0 * limit, limit, &[], 3);
    let coarse: Vec<f64> = slow
        .probes
        .iter()
        .filter(|p| p.phase == "coarse")
        .map(|p| p.rate_hz)
        .collect();
    assert_eq!(coarse.len(), 3 + 5, "{coarse:?}");
    assert_eq!(coarse[0], 3.0 * 300.0);
    assert!(slow.coarse_hz <= 300.0 && slow.coarse_hz > 300.0 / 2f64.powf(1.0 / 32.0) / 1.0001);
}
/// A failed probe at 2,000 records/s whose CPU figures are `load`.
fn failed(load: ProbeLoad) -> Probe {
    Probe {
        rate_hz: 2000.0,
        held: false,
        dropped: 7,
        load,
        ..clean()
    }
}

#[test]
fn the_limit_is_named_from_where_the_cpu_went() {
    let wall = 1_000_000_000;
    let load = |writer: u64, producer: u64, busy: u64| ProbeLoad {
        wall_ns: wall,
        producer_cpu_ns: producer,
        writer_cpu_ns: writer,
        process_cpu_ns: writer + producer,
        kernel_threads_cpu_ns: 0,
        machine_busy_ns: busy,
        machine_steal_ns: 0,
        machine_total_ns: 2 * wall,
    };
    let held = Probe {
        held: true,
        ..clean()
    };
    let kind = |l: ProbeLoad| limit_of(&[held.clone(), failed(l)], 1000.0 * 16384.0, false).kind;
    assert_eq!(kind(load(300_000_000, 100_000_000, 1_900_000_000)), "cpu");
    assert_eq!(
        kind(load(950_000_000, 100_000_000, 1_200_000_000)),
        "writer-cpu"
    );
    assert_eq!(
        kind(load(100_000_000, 950_000_000, 1_200_000_000)),
        "producer-cpu"
    );
    let device = limit_of(
        &[
            held.clone(),
            failed(load(200_000_000, 50_000_000, 400_000_000)),
        ],
        1000.0 * 16384.0,
        false,
    );
    assert_eq!(device.kind, "device");
    assert!(
        device.reason.contains("writer on a CPU 20 %"),
        "{}",
        device.reason
    );
    assert!(
        device.reason.contains("7 records dropped"),
        "{}",
        device.reason
    );
    // The failed probe closest above the answer is the one judged.
    let higher = Probe {
        rate_hz: 4000.0,
        ..failed(load(950_000_000, 0, 0))
    };
    let l = limit_of(
        &[higher, failed(load(0, 0, 1_900_000_000))],
        1000.0 * 16384.0,
        false,
    );
    assert_eq!(
        (l.kind.as_str(), l.at_bytes_per_s),
        ("cpu", 2000.0 * 16384.0)
    );
    // Nothing failed above the answer: the space or the search's ceiling.
    assert_eq!(
        limit_of(std::slice::from_ref(&held), 1000.0 * 16384.0, true).kind,
        "space"
    );
    assert_eq!(limit_of(&[held], 1000.0 * 16384.0, false).kind, "ceiling");
}

fn run_of(held: &[(Io, f64)], device: f64) -> Run {
    let rows: Vec<Row> = held
        .iter()
        .map(|&(io, bps)| Row {
            sustained_bytes_per_s: bps,
            fraction_of_device: bps / device,
            io,
            ..searched(300.0 * (1 << 20) as f64, &[], 1)
        })
        .collect();
    Run {
        device_bytes_per_s: device,
        device_method: "fio".into(),
        device_jobs: Vec::new(),
        load_avg: [0.0, 0.0],
        verdicts: verdicts(&rows),
        rows,
    }
}

#[test]
fn the_target_and_the_spread_are_judged_per_cell() {
    let a = run_of(&[(Io::Buffered, 95.0), (Io::Direct, 50.0)], 100.0);
    let b = run_of(&[(Io::Buffered, 80.0), (Io::Direct, 55.0)], 100.0);
    assert!(a.verdicts[0].met && a.verdicts[0].best == Io::Buffered);
    assert!(!b.verdicts[0].met);
    let s = spread(&[a, b]);
    assert_eq!(s.len(), 2);
    // 95 ÷ 80 = 1.19: within 20 %; 55 ÷ 50 = 1.1.
    assert!(s.iter().all(|c| c.agree), "{s:?}");
    let c = run_of(&[(Io::Buffered, 70.0), (Io::Direct, 0.0)], 100.0);
    let s = spread(&[
        run_of(&[(Io::Buffered, 95.0), (Io::Direct, 50.0)], 100.0),
        c,
    ]);
    assert!(!s[0].agree && s[0].max_over_min.is_some());
    assert!(!s[1].agree && s[1].max_over_min.is_none());
}

#[test]
fn a_buffered_fio_job_writes_no_more_than_the_device_does_in_its_time() {
    let gib = 1 << 30;
    let ns = 5_000_000_000;
    assert_eq!(buffered_len(Io::Direct, gib, 8e6, ns), gib);
    assert_eq!(buffered_len(Io::Buffered, gib, 0.0, ns), gib);
    // 8 MiB/s for 5 s: 40 MiB; a fast device: the whole length.
    assert_eq!(
        buffered_len(Io::Buffered, gib, 8.0 * (1 << 20) as f64, ns),
        40 << 20
    );
    assert_eq!(buffered_len(Io::UringBuffered, gib, 1e10, ns), gib);
    // Never below 16 MiB.
    assert_eq!(buffered_len(Io::Buffered, gib, 1.0, ns), 16 << 20);
}
