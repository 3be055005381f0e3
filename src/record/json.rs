//! `record --json`: the engine's summary and what the recording adds to it
//! ([`Extra`]), written as the one typed document of
//! `rtrec_engine::result` (docs/record-schema.md), each section straight
//! from its owner's type ([`Section`]).

use std::io::Write;
use std::path::Path;

use rtrec_engine::result::{RecordResult, ResidentSample};
use rtrec_engine::{RingSizing, Summary};
use serde::Serialize;

use super::session::Timeline;
use super::source::Total;
use crate::error::Context;

/// What `record --json` adds to the engine's summary (each section left
/// out when absent; docs/record-schema.md).
#[derive(Clone, Copy)]
pub struct Extra<'a> {
    /// `--rss`: resident memory after so many events.
    pub rss: Option<&'a [(u64, u64)]>,
    /// `--explain`: the slow calls' attribution.
    pub explained: Option<&'a crate::explain::Explanation>,
    /// `--io-class` / `--io-weight`: what was applied.
    pub isolation: Option<&'a crate::isolation::Applied>,
    /// `--device`: the emulated device.
    pub device: Option<&'a crate::device::DeviceReport>,
    /// `--timeline`: `record()` and lateness in order.
    pub timeline: &'a Timeline,
    /// `--total`: as asked, and the whole records it allowed.
    pub total: Option<Total>,
    /// Ring mode: how the ring was sized.
    pub ring: Option<&'a RingSizing>,
    /// What the recording and the pool hold on disk.
    pub disk: &'a crate::disk::DiskUse,
    /// What the recording wrote to the device.
    pub written: &'a crate::disk::Written,
    /// `--explain-baseline`: nothing was recorded.
    pub baseline: bool,
    /// Where and how the recording was made.
    pub context: &'a super::context::Context,
    /// What it cost in CPU.
    pub cost: &'a super::cost::Cost,
}

/// A section of the document, serialised from its owner's type as it
/// stands. Design choice: no `serde_json::Value` is built first (the
/// board's record-only binary has no room for serde_json's value
/// serialiser, docs/embedded.md); a section's keys are therefore in its
/// type's order, where a value sorted them (the same document to a JSON
/// reader).
#[derive(Serialize)]
#[serde(untagged)]
enum Section<'a> {
    /// `isolation`.
    Isolation(&'a crate::isolation::Applied),
    /// `explain`.
    Explain(&'a crate::explain::Explanation),
    /// `device`.
    Device(&'a crate::device::DeviceReport),
    /// `ring`.
    Ring(&'a RingSizing),
    /// `disk`.
    Disk(crate::disk::DiskJson<'a>),
    /// `context`.
    Context(&'a super::context::Context),
    /// `cost`.
    Cost(&'a super::cost::Cost),
}

/// `--json`: the summary and the sections `extra` holds, as the one typed
/// document of `rtrec_engine::result` (docs/record-schema.md).
pub fn write_json(path: &Path, s: &Summary, extra: &Extra<'_>) -> crate::error::Result<()> {
    let Extra {
        rss,
        explained,
        isolation,
        device,
        timeline,
        total,
        ring,
        disk,
        written,
        baseline,
        context,
        cost,
    } = *extra;
    let mut r = RecordResult::<Section<'_>>::new(s.clone());
    r.resident_after_events = rss
        .unwrap_or_default()
        .iter()
        .map(|&(events, resident_bytes)| ResidentSample {
            events,
            resident_bytes,
        })
        .collect();
    r.isolation = isolation.map(Section::Isolation);
    r.explain = explained.map(Section::Explain);
    r.explain_baseline = baseline;
    r.device = device.map(Section::Device);
    r.timeline_lateness_ns = timeline.lateness_ns.clone();
    r.total_bytes = total.map(|t| t.asked_bytes);
    r.total_records = total.map(|t| t.records);
    r.ring = ring.map(Section::Ring);
    r.disk = Some(Section::Disk(disk.json()));
    r.device_bytes_written = written.device_bytes;
    r.process_write_bytes = written.process_bytes;
    r.write_amplification = written.amplification;
    r.context = Some(Section::Context(context));
    // Feature `cost` (Cargo.toml): without it the section is absent.
    if cfg!(feature = "cost") {
        r.cost = Some(Section::Cost(cost));
    }
    let v = r;
    let text = serde_json::to_string_pretty(&v)? + "\n";
    if path == Path::new("-") {
        std::io::stdout().write_all(text.as_bytes())?;
    } else {
        // Replaced atomically relative to its directory: a symlink planted
        // at the name is replaced, never written through.
        rtrec_sys::write_atomic(path, text.as_bytes(), 0o644)
            .context(format!("writing '{}'", path.display()))?;
    }
    Ok(())
}
