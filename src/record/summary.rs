//! The summary table `record` prints at the end (docs/summary.md): what was
//! recorded and where, the strategies, the counts and what became of them,
//! the latency table, and a line each for the pool, the flight recorder
//! and the flush thread. One function per part, in the order printed.

use rtrec_engine::{
    Alloc, FileSizing, FlightStats, LatencySummary, Mode, OnFull, SizeFrom, Summary,
};
use rtrec_units::{format_duration, format_size};

/// Prints the summary table, on stderr when `to_stderr` (the JSON goes to
/// stdout).
pub fn print_summary(s: &Summary, to_stderr: bool) {
    let mut out = recorded_line(s);
    out += &incomplete_line(s);
    out += &strategies_line(s);
    if let Some(f) = &s.file_sizing {
        out += &files_line(f);
    }
    out += &counts_lines(s);
    out += &drops_line(s);
    out += &layout_line(s);
    if s.config.mode == Mode::Ring {
        out += &on_full_line(s);
    }
    out += &latency_table(s);
    if s.config.alloc == Alloc::Pool {
        out += &pool_line(s);
    }
    if s.retired_files > 0 || s.config.retention.loops() {
        out += &retired_line(s);
    }
    if let Some(f) = &s.flight {
        out += &flight_lines(f, s);
    }
    out += &flush_line(s);
    if to_stderr {
        eprint!("{out}");
    } else {
        print!("{out}");
    }
}

/// What was recorded, and to which file or directory.
fn recorded_line(s: &Summary) -> String {
    let files = match s.files.as_slice() {
        [] => "no file".to_string(),
        [one] => one.display().to_string(),
        many => format!(
            "{} files in {}",
            many.len(),
            many.first()
                .and_then(|f| f.parent())
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
    };
    format!(
        "recorded {} records ({}) to {}\n",
        s.records_written,
        format_size(s.bytes_written),
        files
    )
}

/// Whether the recording is incomplete, and why: a line of its own, right
/// under what was recorded (not a clause tacked onto the settings).
fn incomplete_line(s: &Summary) -> String {
    match (s.complete, &s.abort_reason) {
        (true, _) => String::new(),
        (false, Some(r)) => format!("INCOMPLETE: {r}\n"),
        (false, None) => format!(
            "INCOMPLETE: {} records dropped (each counted below and stored as a loss)\n",
            s.records_dropped
        ),
    }
}

/// The strategies in force.
fn strategies_line(s: &Summary) -> String {
    let c = &s.config;
    format!(
        "mode {}, alloc {}, flush {} every {}, {}\n",
        c.mode,
        c.alloc,
        c.flush,
        format_size(c.flush_every),
        c.framing,
    )
}

/// The files' size and why (`rtrec_engine::sizing`'s rule).
fn files_line(f: &FileSizing) -> String {
    let size = format_size(f.file_size);
    let why = match (f.pool, f.from) {
        (true, Some(from)) => format!("the pool's size, set by {}", from.name()),
        (true, None) => "the pool's size, set by an older rtrec".to_string(),
        (false, Some(SizeFrom::SmallCard)) => format!(
            "small card: a quarter of the {} free, in whole MiB; --file-size sets another",
            format_size(f.free_bytes.unwrap_or(0))
        ),
        (false, Some(SizeFrom::Default)) => {
            "the default for a recording of open-ended length; --file-size sets another".into()
        }
        (false, Some(SizeFrom::Rotating)) => {
            "rotating media: 10 s of data at the recording's rate, so the disk seeks for a file switch at most every 10 s; --file-size sets another".into()
        }
        (false, Some(SizeFrom::KnownLength)) => "exactly what the recording's length needs".into(),
        (false, _) => "--file-size".into(),
    };
    format!("files: {size} each ({why})\n")
}

/// One row of the latency table: its name and the six figures (`-` when
/// nothing was measured).
fn row(name: &str, l: &Option<LatencySummary>) -> String {
    match l {
        None => format!("{name:<10} {:>9}", "-"),
        Some(l) => format!(
            "{name:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            format_duration(l.min),
            format_duration(l.mean),
            format_duration(l.p50),
            format_duration(l.p99),
            format_duration(l.p999),
            format_duration(l.max)
        ),
    }
}

/// Which ring-full policy was in force, and what it cost.
fn on_full_line(s: &Summary) -> String {
    match s.config.on_full {
        OnFull::Drop => format!(
            "on a full ring: drop the record, counted and stored as a loss (the producer never waits); {} dropped so\n",
            s.drops.ring_full
        ),
        OnFull::Block => format!(
            "on a full ring: block ({} waits, {} in all, longest {})\n",
            s.ring_waits,
            format_duration(s.ring_wait_ns),
            format_duration(s.ring_wait_max_ns)
        ),
    }
}

/// The counts, in the words of docs/summary.md: offered = written +
/// dropped; queued (accepted by `record()`) and what became of it; how far
/// storage holds the recording (each record as data or as its stored
/// loss). One sentence per relation, so that no two lines can seem to
/// disagree.
fn counts_lines(s: &Summary) -> String {
    let c = &s.config;
    let mut out = if s.flight.is_some() {
        // Only what a trigger saved is written; the rest was held in memory.
        format!(
            "records: {} offered, {} written (saved around triggers), {} dropped",
            s.records_offered, s.records_written, s.records_dropped
        )
    } else {
        format!(
            "records: {} offered = {} written + {} dropped",
            s.records_offered, s.records_written, s.records_dropped
        )
    };
    // Accepted by record() but never written: dropped after queueing
    // (a write error), so counted among the dropped. Not so for the flight
    // recorder, whose queued records wait in memory for a trigger: those
    // not written were never saved (flight_lines says where they went).
    let lost_queued = s.records_queued.saturating_sub(s.records_written);
    if s.flight.is_some() {
        out += &format!(
            "; {} queued in memory, {lost_queued} of them not saved (no trigger near them)",
            s.records_queued
        );
    } else if lost_queued > 0 {
        out += &format!(
            "; {} queued, {lost_queued} of them dropped by the writer",
            s.records_queued
        );
    } else {
        out += &format!("; {} queued", s.records_queued);
    }
    out += "\n";
    let sync = if c.sync_every_ns == 0 {
        "at file close".to_string()
    } else {
        format!("every {}", format_duration(c.sync_every_ns))
    };
    out += &if s.durable_seq >= s.records_offered {
        format!(
            "durable: all {} offered records (as data or as a stored loss), synced {sync}\n",
            s.records_offered
        )
    } else {
        format!(
            "durable: the first {} of {} offered records (as data or as a stored loss), synced {sync}\n",
            s.durable_seq, s.records_offered
        )
    };
    out
}

/// The drops by cause, the losses stored, the missed periods. A source
/// without a schedule (`--stdin`: no lateness measured) has no periods to
/// miss, so that clause is left out rather than shown as 0.
fn drops_line(s: &Summary) -> String {
    let missed = match (&s.lateness_ns, s.missed_periods) {
        (None, _) => String::new(),
        (Some(_), 0) => "; missed periods 0".into(),
        (Some(_), n) => {
            format!("; missed periods {n} (woken too late, skipped: no record made, none lost)")
        }
    };
    format!(
        "dropped {} (ring full {}, too large {}, writer failed {}; {} stored as loss frames){missed}\n",
        s.records_dropped, s.drops.ring_full, s.drops.too_large, s.drops.writer_failed, s.losses_stored
    )
}

/// The layout stored with the recording (`--layout`), and the records
/// that do not fit it: recorded all the same, counted at record time.
fn layout_line(s: &Summary) -> String {
    let Some(l) = &s.config.layout else {
        return String::new();
    };
    let misfits = match s.layout_misfits {
        0 => "every record fits it".to_string(),
        n => format!(
            "{n} record(s) of another size, recorded as they came (export them with --format raw)"
        ),
    };
    format!("layout: '{l}' stored with the recording; {misfits}\n")
}

/// `write()`, `record()` and the lateness: min, mean, p50, p99, p99.9, max.
fn latency_table(s: &Summary) -> String {
    let mut out = format!(
        "{:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "", "min", "mean", "p50", "p99", "p99.9", "max"
    );
    out += &(row("write()", &s.write_ns) + "\n");
    out += &(row("record()", &s.record_ns) + "\n");
    // No schedule (--stdin): no lateness row rather than a row of `-`.
    if s.lateness_ns.is_some() {
        out += &(row("lateness", &s.lateness_ns) + "\n");
    }
    out
}

/// What a loop recording (or `--keep-events`) retired: the files and
/// bytes, the records below which everything was retired, the events.
fn retired_line(s: &Summary) -> String {
    let seq = if s.retired_seq_to > 0 {
        format!(", sequence 0..{}", s.retired_seq_to - 1)
    } else {
        String::new()
    };
    let events = if s.retired_events > 0 {
        format!(", {} flight-recorder event(s)", s.retired_events)
    } else {
        String::new()
    };
    let earlier = if s.retired_earlier_files > 0 {
        format!(
            "; {} file(s) ({}) of earlier recordings, for the budget",
            s.retired_earlier_files,
            format_size(s.retired_earlier_bytes)
        )
    } else {
        String::new()
    };
    let unshipped = if s.retired_unshipped_files > 0 {
        format!(
            "; of them, {} file(s) ({}) not yet shipped (beyond --unshipped-headroom, or older than --keep-for)",
            s.retired_unshipped_files,
            format_size(s.retired_unshipped_bytes)
        )
    } else {
        String::new()
    };
    let others = if s.retired_other_recordings.is_empty() {
        String::new()
    } else {
        format!(
            "; of them, {} recording(s) this loop does not own (--keep-scope dir): {}",
            s.retired_other_recordings.len(),
            s.retired_other_recordings.join(", ")
        )
    };
    let empty = if s.retired_empty_recordings > 0 {
        format!(
            "; {} empty recording(s) of earlier runs removed",
            s.retired_empty_recordings
        )
    } else {
        String::new()
    };
    let late = if s.retired_late_files > 0 {
        format!(
            "; {} deleted by the writer at a switch (the retire thread was behind; the bound held)",
            s.retired_late_files
        )
    } else {
        String::new()
    };
    format!(
        "retired: {} file(s) ({}){seq}{events}; {} kept{earlier}{unshipped}{others}{empty}{late}\n",
        s.retired_files,
        format_size(s.retired_bytes),
        s.files.len()
    )
}

/// What the pool gave and what it did to refill. What the pool holds on
/// disk is the disk line's (measured there, with the command that gives it
/// back): a product of refills and the file size here was not what the
/// pool held (it left out the files prepared before).
fn pool_line(s: &Summary) -> String {
    let p = &s.pool;
    format!(
        "pool: {} taken, {} fallbacks to fallocate, {} waits ({}), {} prepared at start, {} refilled after\n",
        p.taken,
        p.fallbacks,
        p.waits,
        format_duration(p.wait_ns),
        p.prepared_at_start,
        p.refilled_on_finish + p.refilled_while_recording,
    )
}

/// The flight recorder's events and what they saved; `offered`: the
/// records offered, all held in memory only when no trigger arrived.
fn flight_lines(f: &FlightStats, s: &Summary) -> String {
    let offered = s.records_offered;
    // The queued records not saved: overwritten in the ring before any
    // trigger wanted them, or still held there when the recording ended.
    let unsaved = s.records_queued.saturating_sub(s.records_written);
    let held = unsaved.saturating_sub(f.overwritten_records);
    let mut out = format!(
        "flight recorder: {} events ({} cut short by the next trigger), {} pre- and {} post-trigger records saved; of the {unsaved} not saved, {} were overwritten in memory and {held} still held there at the end\n",
        f.events, f.events_cut_short, f.pre_records_saved, f.post_records_saved, f.overwritten_records
    );
    if f.events == 0 {
        // Honest about what an untriggered flight recorder did.
        out += &format!(
            "no trigger arrived: the {offered} records offered were held in memory only and nothing was saved (trigger with --trigger-on SIGUSR1 or stdin, --trigger-every, or `rtrec trigger DIR`)\n"
        );
    }
    out
}

/// The flush thread's work and its first error.
fn flush_line(s: &Summary) -> String {
    format!(
        "flush thread: {} flushes, {} CPU{}\n",
        s.flush.flushes,
        format_duration(s.flush.cpu_ns),
        s.flush
            .error
            .as_ref()
            .map(|e| format!(", first error: {e}"))
            .unwrap_or_default()
    )
}
