//! `rtrec tune`: show the global changes rtrec has journaled (sysctls, I/O
//! schedulers, tracefs, mounts, loop devices) in words, and put them back.
//!
//! Every rtrec command that changes global state journals each change in
//! `/run/rtrec` before making it, and undoes it when done; `--restore` is
//! the manual way to undo what a killed rtrec left behind (the next rtrec
//! run that takes the global lock does it too). `rtrec tune` and
//! `rtrec tune status` read the journal without changing anything.

use rtrec_host::sysctl::DirtySettings;
use rtrec_host::{journal_status, restore_all_forced, restore_stale, JournalStatus};
use serde::Serialize;

use crate::cli::{TuneAction, TuneArgs};

/// `rtrec tune status --json`.
#[derive(Serialize)]
struct Status {
    journal: JournalStatus,
    vm_dirty: Option<DirtySettings>,
}

/// How long ago `unix_s` was, in words ("3 min ago").
fn ago(unix_s: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let s = now.saturating_sub(unix_s);
    format!("{} ago", rtrec_units::format_duration(s * 1_000_000_000))
}

fn render(s: &Status) -> String {
    let j = &s.journal;
    let mut out = format!("journal: {}\n", j.dir.display());
    if j.owners.is_empty() {
        out.push_str("  nothing is changed by rtrec now\n");
    }
    for o in &j.owners {
        let who = if o.alive {
            format!("pid {} ({}), running", o.pid, o.command)
        } else {
            format!(
                "pid {}, no longer running: `rtrec tune --restore` puts these back",
                o.pid
            )
        };
        out.push_str(&format!("  {who}, since {}:\n", ago(o.since_unix_s)));
        for c in &o.changes {
            out.push_str(&format!("    changed; undo: {c}\n"));
        }
    }
    out.push_str(&match &j.lock_holder {
        Some(h) => format!("global lock: held by {h}\n"),
        None => "global lock: free\n".into(),
    });
    if let Some(d) = &s.vm_dirty {
        out.push_str(&format!(
            "vm.dirty: {d}
"
        ));
    }
    out
}

/// Runs `rtrec tune`.
pub fn run(a: &TuneArgs) -> crate::error::Result<i32> {
    if a.restore {
        let report = if a.force {
            restore_all_forced()?
        } else {
            restore_stale()?
        };
        if report.is_empty() {
            println!("nothing to restore: no rtrec process left changes behind");
        } else {
            print!("{report}");
        }
        return Ok(if report.failed.is_empty() { 0 } else { 1 });
    }
    let json = matches!(a.action, Some(TuneAction::Status { json: true }));
    let s = Status {
        journal: journal_status()?,
        vm_dirty: DirtySettings::read().ok(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", render(&s));
    }
    Ok(0)
}
