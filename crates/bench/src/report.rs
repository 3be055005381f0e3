//! The result schema: one set of serde structs *is* the `--json` output,
//! documented field by field in `docs/bench-schema.md` (a test checks that
//! every field the JSON holds is documented there, and the reverse). Field
//! names carry their unit (`_ns`, `_s`, `_bytes`, `_us`, `_pct`); optional
//! fields are null when they do not apply.

use rtrec_engine::{Config, LatencySummary};
use serde::{Deserialize, Serialize};

use crate::protocol::Protocol;
use crate::scenario::{Flusher, Load, Published, Scenario};
use crate::study::Study;

/// Version of this schema; raised on any incompatible change.
pub const SCHEMA_VERSION: u32 = 5;

/// The whole `--json` document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Where it ran.
    pub environment: Environment,
    /// Warnings about conditions that differ from the study's, one sentence
    /// each, saying what to do.
    pub warnings: Vec<String>,
    /// True once every selected case has run (false while running, after
    /// an interrupt or a failure).
    pub complete: bool,
    /// True when Ctrl-C or SIGTERM stopped the run.
    pub interrupted: bool,
    /// The cases run so far, in order.
    pub cases: Vec<CaseResult>,
    /// S3 (fsync under streaming writes), when `--study` selected it.
    #[serde(default)]
    pub s3: Option<crate::s3::S3Result>,
    /// S4 (BFQ weights and the recording under interference), when
    /// `--study` selected it.
    #[serde(default)]
    pub s4: Option<crate::s4::S4Result>,
}

/// The machine, filesystem and settings the bench ran on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Environment {
    /// `uname -r`.
    pub kernel: String,
    /// CPU model name.
    pub cpu: String,
    /// Online CPUs.
    pub cpus: u32,
    /// `MemTotal`, bytes.
    pub memory_bytes: u64,
    /// `loop-ext4` (our own image), `dir` (`--dir`) or `temp-dir`
    /// (fallback when not root).
    pub target: String,
    /// Directory the cases wrote in.
    pub path: String,
    /// Filesystem type (`ext4`).
    pub filesystem: String,
    /// Block device and what is under it (`loop0 (image … on vda, direct
    /// I/O on)`).
    pub device: String,
    /// Mount options as `/proc/mounts` shows them.
    pub mount_options: String,
    /// I/O scheduler of each device in the stack (`loop0: none; vda:
    /// mq-deadline`).
    pub io_scheduler: String,
    /// Size of the ext4 journal, bytes, when it could be read.
    pub journal_bytes: Option<u64>,
    /// The emulated device's profile (`--device`), `native` without one.
    pub device_profile: String,
    /// What the emulated device served and its timing error (asked against
    /// served delay), read after every case; `None` without emulation.
    pub emulator: Option<rtrec_emu::EmulatorStats>,
    /// The `vm.dirty_*` values found at start (the FON values).
    pub vm_dirty: VmDirty,
    /// True when the FOFF cases could change the sysctls (root).
    pub flusher_control: bool,
    /// rtrec version.
    pub rtrec_version: String,
    /// The exact command line, one word per element.
    pub command_line: Vec<String>,
    /// Start of the run, seconds since the Unix epoch.
    pub started_unix_s: u64,
    /// The timed threads' real-time setup as asked (`--no-rt`,
    /// `--priority`, `--cpu`) and as a probe thread was granted it before
    /// the first case; each case's own is in its `rt`.
    #[serde(default)]
    pub rt: crate::producer::RtReport,
}

/// The kernel's write-back settings (`vm.dirty_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmDirty {
    /// `vm.dirty_ratio`, %.
    pub dirty_ratio_pct: u64,
    /// `vm.dirty_background_ratio`, %.
    pub dirty_background_ratio_pct: u64,
    /// `vm.dirty_expire_centisecs`, 1/100 s.
    pub dirty_expire_centisecs: u64,
    /// `vm.dirty_writeback_centisecs`, 1/100 s.
    pub dirty_writeback_centisecs: u64,
    /// `vm.dirty_bytes` (0 when the ratio is in force).
    pub dirty_bytes: u64,
    /// `vm.dirty_background_bytes` (0 when the ratio is in force).
    pub dirty_background_bytes: u64,
}

impl From<rtrec_host::sysctl::DirtySettings> for VmDirty {
    fn from(d: rtrec_host::sysctl::DirtySettings) -> Self {
        VmDirty {
            dirty_ratio_pct: d.dirty_ratio,
            dirty_background_ratio_pct: d.dirty_background_ratio,
            dirty_expire_centisecs: d.dirty_expire_centisecs,
            dirty_writeback_centisecs: d.dirty_writeback_centisecs,
            dirty_bytes: d.dirty_bytes,
            dirty_background_bytes: d.dirty_background_bytes,
        }
    }
}

/// A published figure as exported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishedFigure {
    /// Where it is published (`S1 Table 1`).
    pub source: String,
    /// Minimum, µs (null when not published).
    pub min_us: Option<u64>,
    /// Average, µs.
    pub avg_us: Option<u64>,
    /// Maximum, µs.
    pub max_us: Option<u64>,
    /// The background reader's throughput during the case, % of alone.
    pub reader_throughput_pct: Option<u32>,
}

impl From<Published> for PublishedFigure {
    fn from(p: Published) -> Self {
        PublishedFigure {
            source: p.source.to_string(),
            min_us: p.min_us,
            avg_us: p.avg_us,
            max_us: p.max_us,
            reader_throughput_pct: p.reader_throughput_pct,
        }
    }
}

/// What the flusher was during a case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlusherSetting {
    /// What the case asks for (FON / FOFF).
    pub requested: Flusher,
    /// What was in force: differs from `requested` when FOFF was skipped
    /// (not root).
    pub applied: Flusher,
}

/// One set of one case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SetResult {
    /// 0-based.
    pub index: u32,
    /// Latency of the timed call (see `timed_call`), ns.
    pub write_ns: Option<LatencySummary>,
    /// Latency of `record()` on the producer (ring mode only), ns.
    pub record_ns: Option<LatencySummary>,
    /// Lateness of each period's release against the schedule, ns.
    pub lateness_ns: Option<LatencySummary>,
    /// Periods whose release was missed.
    pub missed_periods: u64,
    /// CPU time of the engine's flush thread, s (recording cases).
    pub flush_cpu_s: Option<f64>,
    /// CPU time of the engine's writer thread, s (ring-mode cases).
    #[serde(default)]
    pub writer_cpu_s: Option<f64>,
    /// Largest Dirty + Writeback memory seen during the set, bytes.
    pub dirty_peak_bytes: u64,
    /// Records the engine dropped (ring full), counted.
    pub records_dropped: u64,
    /// The background reader's throughput during the set, bytes/s.
    pub reader_bytes_per_s: Option<f64>,
    /// Wall time of the timed loop, s.
    pub duration_s: f64,
    /// An I/O error the engine reported, if any.
    pub error: Option<String>,
}

/// The background reader's throughput (S1 Fig. 5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReaderResult {
    /// Alone (before the case), bytes/s.
    pub alone_bytes_per_s: f64,
    /// During the reported set, bytes/s.
    pub during_bytes_per_s: Option<f64>,
    /// `during / alone`, %.
    pub during_pct: Option<f64>,
}

/// One case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseResult {
    /// Name, as published where it is.
    pub name: String,
    /// The study it reproduces.
    pub study: Study,
    /// One sentence.
    pub description: String,
    /// What `write_ns` times: `write`, `fallocate` or `memcpy`.
    pub timed_call: String,
    /// The engine configuration (recording cases only).
    pub strategies: Option<Config>,
    /// Background loads.
    pub loads: Vec<Load>,
    /// FON / FOFF.
    pub flusher: FlusherSetting,
    /// How it was measured.
    pub protocol: Protocol,
    /// The published figure, if any.
    pub published: Option<PublishedFigure>,
    /// One summary per set, in order.
    pub sets: Vec<SetResult>,
    /// Index of the reported set (the one with the largest maximum).
    pub reported_set: Option<u32>,
    /// Reported set: latency of the timed call, ns.
    pub write_ns: Option<LatencySummary>,
    /// Reported set: latency of `record()` on the producer (ring mode), ns.
    pub record_ns: Option<LatencySummary>,
    /// Reported set: lateness against the planned schedule, ns.
    pub lateness_ns: Option<LatencySummary>,
    /// Reported set: missed periods.
    pub missed_periods: u64,
    /// Reported set: CPU time of the flush thread, s.
    pub flush_cpu_s: Option<f64>,
    /// Reported set: CPU time of the writer thread, s.
    #[serde(default)]
    pub writer_cpu_s: Option<f64>,
    /// Reported set: peak Dirty + Writeback memory, bytes.
    pub dirty_peak_bytes: u64,
    /// Reported set: records dropped by the engine.
    pub records_dropped: u64,
    /// The background reader, for the reader cases.
    pub reader: Option<ReaderResult>,
    /// Reported set: every latency of the timed call, ns, in call order.
    pub write_samples_ns: Vec<u64>,
    /// Reported set: the latency histogram, HdrHistogram V2 serialised and
    /// base64-encoded (1 ns .. 100 s, 3 significant digits).
    pub write_histogram_v2_base64: Option<String>,
    /// Why the case did not complete, if it did not.
    pub error: Option<String>,
    /// True when an interrupt cut the case short.
    pub interrupted: bool,
    /// `--explain`: the attribution of the reported set's slow calls
    /// (null without `--explain` or when tracing was not possible).
    #[serde(default)]
    pub explain: Option<rtrec_trace::Explanation>,
    /// The scheduling the reported set's timed thread ran with (null when
    /// no set ran).
    #[serde(default)]
    pub rt: Option<crate::producer::RtReport>,
    /// This case's max ÷ NOISE-FLOOR's max (null when either is missing).
    #[serde(default)]
    pub max_over_noise_floor: Option<f64>,
    /// This case's max ÷ PAGECACHE-FLOOR's max: how far above a bare copy
    /// into the page cache (null when either is missing).
    #[serde(default)]
    pub max_over_pagecache_floor: Option<f64>,
    /// The noise floor run in this run under this case's loads
    /// (`NOISE-FLOOR-BGALL`); null for a case without loads, for the floors
    /// themselves, and when that floor did not run.
    #[serde(default)]
    pub same_load_floor: Option<String>,
    /// This case's max ÷ [`CaseResult::same_load_floor`]'s max.
    #[serde(default)]
    pub max_over_same_load_floor: Option<f64>,
    /// `record()` against the memcpy floors (ring-mode cases; null for
    /// the others).
    #[serde(default)]
    pub record_over_floor: Option<RecordOverFloor>,
}

/// A ring-mode case's `record()` on the producer divided by the memcpy
/// floors of the same run: the quiet NOISE-FLOOR and the one under the
/// case's own loads. What the load does to any code on the producer's
/// thread is in the second; what is left over it is rtrec's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordOverFloor {
    /// `record()` max ÷ NOISE-FLOOR's max (null when NOISE-FLOOR did not run).
    pub max_over_noise_floor: Option<f64>,
    /// `record()` p99 ÷ NOISE-FLOOR's p99.
    pub p99_over_noise_floor: Option<f64>,
    /// `record()` max ÷ the same-load floor's max (null without loads or
    /// when that floor did not run).
    pub max_over_same_load_floor: Option<f64>,
    /// `record()` p99 ÷ the same-load floor's p99.
    pub p99_over_same_load_floor: Option<f64>,
}

impl CaseResult {
    /// An empty result for `scenario`, filled in as sets run.
    pub fn new(s: &Scenario, protocol: &Protocol, applied: Flusher) -> CaseResult {
        CaseResult {
            name: s.name.to_string(),
            study: s.study,
            description: s.description.to_string(),
            timed_call: s.timed.call_name().to_string(),
            strategies: s.config(protocol),
            loads: s.loads.to_vec(),
            flusher: FlusherSetting {
                requested: s.flusher,
                applied,
            },
            protocol: protocol.clone(),
            published: s.published.map(PublishedFigure::from),
            sets: Vec::new(),
            reported_set: None,
            write_ns: None,
            record_ns: None,
            lateness_ns: None,
            missed_periods: 0,
            flush_cpu_s: None,
            writer_cpu_s: None,
            dirty_peak_bytes: 0,
            records_dropped: 0,
            reader: None,
            write_samples_ns: Vec::new(),
            write_histogram_v2_base64: None,
            error: None,
            interrupted: false,
            explain: None,
            rt: None,
            max_over_noise_floor: None,
            max_over_pagecache_floor: None,
            same_load_floor: None,
            max_over_same_load_floor: None,
            record_over_floor: None,
        }
    }

    /// The reported maximum, ns.
    pub fn max_ns(&self) -> Option<u64> {
        self.write_ns.map(|w| w.max)
    }

    /// The spread across sets: the smallest and the largest of the per-set
    /// maxima, ns (the reported set is the largest).
    pub fn set_max_range(&self) -> Option<(u64, u64)> {
        let maxima = self.sets.iter().filter_map(|s| s.write_ns.map(|w| w.max));
        maxima.fold(None, |r, m| match r {
            None => Some((m, m)),
            Some((a, b)) => Some((a.min(m), b.max(m))),
        })
    }
}

impl BenchReport {
    /// The case named `name`.
    pub fn case(&self, name: &str) -> Option<&CaseResult> {
        self.cases.iter().find(|c| c.name == name)
    }

    /// Fills every case's ratios to the floors (NOISE-FLOOR,
    /// PAGECACHE-FLOOR, and the noise floor under the case's own loads)
    /// from the cases of this report, that is of the same run: a floor
    /// from another run is never used.
    pub fn fill_floor_ratios(&mut self) {
        let write = |name: &str| self.case(name).and_then(|c| c.write_ns);
        let (noise, pagecache) = (write("NOISE-FLOOR"), write("PAGECACHE-FLOOR"));
        let floors: Vec<Option<(String, LatencySummary)>> = self
            .cases
            .iter()
            .map(|c| {
                let f = crate::scenario::same_load_floor(&c.loads).filter(|f| f.name != c.name)?;
                Some((f.name.to_string(), write(f.name)?))
            })
            .collect();
        for (c, floor) in self.cases.iter_mut().zip(floors) {
            let m = c.max_ns();
            let max = |f: Option<LatencySummary>| over(m, f.map(|f| f.max));
            c.max_over_noise_floor = max(noise);
            c.max_over_pagecache_floor = max(pagecache);
            c.max_over_same_load_floor = max(floor.as_ref().map(|f| f.1));
            c.record_over_floor = c.record_ns.map(|r| RecordOverFloor {
                max_over_noise_floor: over(Some(r.max), noise.map(|f| f.max)),
                p99_over_noise_floor: over(Some(r.p99), noise.map(|f| f.p99)),
                max_over_same_load_floor: over(Some(r.max), floor.as_ref().map(|f| f.1.max)),
                p99_over_same_load_floor: over(Some(r.p99), floor.as_ref().map(|f| f.1.p99)),
            });
            c.same_load_floor = floor.map(|f| f.0);
        }
    }
}

/// `a ÷ b`, when both are there and `b` is not 0.
fn over(a: Option<u64>, b: Option<u64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Overrides;
    use crate::scenario;

    fn case(name: &str, max: u64, p99: u64) -> CaseResult {
        let s = scenario::find(name).unwrap();
        let p = Protocol::for_study(s.study, &Overrides::default());
        let mut c = CaseResult::new(s, &p, s.flusher);
        let l = LatencySummary {
            count: 1,
            min: 1,
            mean: p99,
            p50: p99,
            p99,
            p999: max,
            max,
        };
        c.write_ns = Some(l);
        c.record_ns = name.starts_with("RTREC").then_some(l);
        c
    }

    fn report(cases: Vec<CaseResult>) -> BenchReport {
        let mut r = BenchReport {
            schema_version: SCHEMA_VERSION,
            environment: Environment::default(),
            warnings: Vec::new(),
            complete: true,
            interrupted: false,
            cases,
            s3: None,
            s4: None,
        };
        r.fill_floor_ratios();
        r
    }

    #[test]
    fn a_loaded_case_is_divided_by_the_floor_of_its_own_loads_in_the_same_run() {
        let r = report(vec![
            case("NOISE-FLOOR", 10, 2),
            case("NOISE-FLOOR-BGTRUNC", 40, 4),
            case("NOISE-FLOOR-BGALL", 100, 5),
            case("RTREC-BGALL", 300, 10),
            case("RTREC", 50, 6),
            case("ALL-BGALL", 1_000, 20),
        ]);
        let c = r.case("RTREC-BGALL").unwrap();
        assert_eq!(c.same_load_floor.as_deref(), Some("NOISE-FLOOR-BGALL"));
        assert_eq!(c.max_over_same_load_floor, Some(3.0));
        let f = c.record_over_floor.unwrap();
        assert_eq!(
            (f.max_over_same_load_floor, f.p99_over_same_load_floor),
            (Some(3.0), Some(2.0))
        );
        assert_eq!(
            (f.max_over_noise_floor, f.p99_over_noise_floor),
            (Some(30.0), Some(5.0))
        );
        // The studies' loaded cases are divided by it too; the unloaded
        // and the floors themselves have none.
        let all = r.case("ALL-BGALL").unwrap();
        assert_eq!(all.same_load_floor.as_deref(), Some("NOISE-FLOOR-BGALL"));
        assert!(all.record_over_floor.is_none());
        let quiet = r.case("RTREC").unwrap();
        assert!(quiet.same_load_floor.is_none() && quiet.max_over_same_load_floor.is_none());
        assert_eq!(
            quiet.record_over_floor.unwrap().max_over_noise_floor,
            Some(5.0)
        );
        assert!(r
            .case("NOISE-FLOOR-BGALL")
            .unwrap()
            .same_load_floor
            .is_none());
    }

    #[test]
    fn without_its_floor_in_the_run_a_loaded_case_has_no_same_load_ratio() {
        let r = report(vec![case("RTREC-BGREAD", 300, 10)]);
        let c = &r.cases[0];
        assert!(c.same_load_floor.is_none() && c.max_over_same_load_floor.is_none());
        let f = c.record_over_floor.unwrap();
        assert!(f.max_over_same_load_floor.is_none() && f.max_over_noise_floor.is_none());
    }
}
