//! `rtrec record --io-class` and `--io-weight`: I/O isolation of the
//! recording from other processes' I/O (issue S4 of the studies).
//!
//! - `--io-class rt|be|idle[:LEVEL]` sets the ioprio of the threads that do
//!   the recording's I/O. Design choice: it is set on the calling thread
//!   right before `Recorder::create`, so the writer and flush threads the
//!   engine starts inherit it (Linux copies a set ioprio to new threads),
//!   and in ring mode the producer goes back to none after — the engine
//!   stays free of policy, as in the bench's RTREC-ISOLATED-* cases. In
//!   inline mode the producer does the writes itself and keeps the class.
//! - `--io-weight N` makes rtrec's own cgroup (`rtrec-<pid>-record`, v1
//!   `blkio` or v2 `io`, whichever the machine has) with BFQ weight N,
//!   journaled before it exists, moves this process in, and at the end
//!   moves it back and removes the group — also after Ctrl-C (the recording
//!   ends normally) and during a panic (the guard's drop); after SIGKILL the
//!   next rtrec that restores stale entries, or `rtrec tune --restore`,
//!   removes it.
//!
//! Both act only under the BFQ scheduler, and neither protects against
//! I/O that other processes make the kernel issue for them (buffered
//! writeback, journal commits): that is charged to kernel threads, not to
//! the group or class of the process that dirtied the pages. A weight or
//! class that cannot be applied (not root, no BFQ cgroup support) is one
//! warning and the recording goes on without it, as `--rt` does.

use std::path::{Path, PathBuf};

use rtrec_host::cgroup::{self, Group};
use rtrec_host::features::{self, Feature};
use rtrec_host::iosched;
use rtrec_host::Journal;
use serde::Serialize;

/// The isolation options of `rtrec record`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct IsolationArgs {
    /// I/O class of the recording's writer and flush threads: rt, be or idle, optionally with a level 0 (highest) to 7, e.g. rt:0 (acts under the bfq scheduler).
    #[arg(long, value_name = "CLASS[:LEVEL]", value_parser = parse_io_class)]
    pub io_class: Option<IoClass>,

    /// Record in rtrec's own cgroup with this BFQ weight, 1 to 1000 (default weight of others: 100); the group is removed at the end.
    #[arg(long, value_name = "N", value_parser = parse_weight)]
    pub io_weight: Option<u32>,
}

/// An I/O class and level as `ioprio_set` takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoClass {
    /// 1 real-time, 2 best-effort, 3 idle.
    pub class: u32,
    /// 0 (highest) to 7.
    pub level: u32,
}

impl std::fmt::Display for IoClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = ["none", "rt", "be", "idle"][self.class as usize & 3];
        write!(f, "{name}:{}", self.level)
    }
}

fn parse_io_class(s: &str) -> Result<IoClass, String> {
    let (name, level) = match s.split_once(':') {
        Some((n, l)) => (n, Some(l)),
        None => (s, None),
    };
    let class = match name {
        "rt" => 1,
        "be" => 2,
        "idle" => 3,
        _ => {
            return Err(format!(
                "'{s}' is not an I/O class; give rt, be or idle, optionally with :LEVEL (0-7)"
            ))
        }
    };
    let level = match level {
        // The kernel's default level for a class set without one.
        None => 4,
        Some(l) => match l.parse::<u32>() {
            Ok(n) if n <= 7 => n,
            _ => {
                return Err(format!(
                    "'{l}' is not an I/O priority level; give 0 (highest) to 7"
                ))
            }
        },
    };
    Ok(IoClass { class, level })
}

fn parse_weight(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{s}' is not a BFQ weight; give a whole number from 1 to 1000"
        )),
    }
}

/// What was applied, for the summary and `--json` (`isolation`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Applied {
    /// The I/O class of the writer and flush threads (`rt:0`), if set.
    pub io_class: Option<String>,
    /// The BFQ weight of the recording's cgroup, if set.
    pub io_weight: Option<u32>,
    /// Which cgroup interface carried the weight.
    pub cgroup_version: Option<String>,
    /// The group's directory (removed at the end).
    pub cgroup: Option<PathBuf>,
    /// The scheduler of the recording's device (the options act under `bfq`).
    pub scheduler: Option<String>,
}

/// The recording's own cgroup while it runs; dropping it moves the process
/// back and removes the group.
pub struct Isolation {
    applied: Applied,
    group: Option<(Journal, Group, PathBuf)>,
    class: Option<IoClass>,
}

impl Isolation {
    /// Applies `--io-weight` (the cgroup) for a recording into `dir`. With
    /// neither option, returns `None` and touches nothing.
    pub fn start(a: &IsolationArgs, dir: &Path) -> Option<Isolation> {
        if a.io_class.is_none() && a.io_weight.is_none() {
            return None;
        }
        let mut applied = Applied {
            scheduler: iosched::scheduler_of(dir),
            ..Applied::default()
        };
        let bfq = features::detect(Feature::Bfq);
        if let Err(m) = &bfq {
            let flags = match (a.io_class.is_some(), a.io_weight.is_some()) {
                (true, true) => "--io-class and --io-weight act",
                (true, false) => "--io-class acts",
                _ => "--io-weight acts",
            };
            eprintln!(
                "rtrec: warning: {} (recording without them)",
                m.sentence(&format!("{flags} only under the bfq scheduler"))
            );
        } else if applied.scheduler.as_deref().is_some_and(|s| s != "bfq") {
            eprintln!(
                "rtrec: warning: the device of '{}' uses the {} scheduler; --io-class and --io-weight act only under bfq",
                dir.display(),
                applied.scheduler.as_deref().unwrap_or("?")
            );
        }
        // Design choice: without BFQ's group weights (`bfq-cgroup`,
        // rtrec_host::features) no group is made: one sentence says why,
        // and the recording runs as it would without the flag.
        let weights = match (a.io_weight, &bfq) {
            (Some(_), Ok(())) => features::detect(Feature::BfqCgroup).map_err(|m| {
                eprintln!(
                    "rtrec: warning: {} (recording without it)",
                    m.sentence("--io-weight needs it for its group's weight")
                )
            }),
            _ => Err(()),
        };
        let group = a
            .io_weight
            .filter(|_| weights.is_ok())
            .and_then(|w| match join_group(w) {
                Ok((j, g, home, version)) => {
                    applied.io_weight = Some(w);
                    applied.cgroup_version = Some(version.to_string());
                    applied.cgroup = Some(g.path().to_path_buf());
                    Some((j, g, home))
                }
                Err(why) => {
                    eprintln!("rtrec: warning: --io-weight: {why} (recording without it)");
                    None
                }
            });
        Some(Isolation {
            applied,
            group,
            class: a.io_class,
        })
    }

    /// Call right before `Recorder::create`: the engine's threads inherit
    /// the I/O class set here.
    pub fn before_create(&mut self) {
        if let Some(c) = self.class {
            match rtrec_sys::set_thread_ioprio(c.class, c.level) {
                Ok(()) => self.applied.io_class = Some(c.to_string()),
                Err(e) => {
                    eprintln!("rtrec: warning: --io-class {c}: {e} (recording without it)")
                }
            }
        }
    }

    /// Call right after `Recorder::create`: in ring mode the producer makes
    /// no I/O and goes back to no class; in inline mode it keeps it.
    pub fn after_create(&self, direct: bool) {
        if self.applied.io_class.is_some() && !direct {
            let _ = rtrec_sys::set_thread_ioprio(0, 0);
        }
    }

    /// What was applied.
    pub fn applied(&self) -> &Applied {
        &self.applied
    }

    /// The summary line: which class, weight and cgroup interface were used.
    pub fn line(&self) -> String {
        let a = &self.applied;
        let class = a.io_class.as_deref().unwrap_or("not set");
        let weight = match (a.io_weight, &a.cgroup_version) {
            (Some(w), Some(v)) => format!("BFQ weight {w} in its own group ({v})"),
            _ => "no weight".to_string(),
        };
        let sched = a.scheduler.as_deref().unwrap_or("unknown");
        format!("isolation: I/O class {class}, {weight}; device scheduler {sched}")
    }
}

impl Drop for Isolation {
    fn drop(&mut self) {
        if let Some((journal, group, home)) = self.group.take() {
            let _ = cgroup::move_to(&home, std::process::id());
            if let Err(e) = group.remove(&journal) {
                eprintln!("rtrec: warning: removing the recording's cgroup failed ({e}); `rtrec tune --restore` removes it");
            }
        }
    }
}

/// Creates `rtrec-<pid>-record` with weight `w` and moves this process in;
/// also removes groups that killed rtrec processes left (stale journal
/// entries that need no global lock).
fn join_group(w: u32) -> Result<(Journal, Group, PathBuf, &'static str), String> {
    if rtrec_sys::effective_uid() != 0 {
        return Err("making a cgroup needs root".into());
    }
    let h = cgroup::detect()?;
    let _ = rtrec_host::restore_stale();
    let journal = Journal::open().map_err(|e| e.to_string())?;
    let me = std::process::id();
    let home = cgroup::group_of(&h, me).map_err(|e| format!("finding our own cgroup: {e}"))?;
    let group = Group::create(&journal, &h, "record").map_err(|e| e.to_string())?;
    let joined = group
        .set_weight(w)
        .and_then(|()| group.add_process(me))
        .map_err(|e| e.to_string());
    match joined {
        Ok(()) => Ok((journal, group, home, h.version.describe())),
        Err(why) => {
            let _ = cgroup::move_to(&home, me);
            let _ = group.remove(&journal);
            Err(why)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_weights_parse_and_bad_ones_are_one_sentence() {
        assert_eq!(
            parse_io_class("rt:0").unwrap(),
            IoClass { class: 1, level: 0 }
        );
        assert_eq!(parse_io_class("be").unwrap().to_string(), "be:4");
        assert_eq!(parse_io_class("idle").unwrap().class, 3);
        assert!(parse_io_class("fast")
            .unwrap_err()
            .contains("rt, be or idle"));
        assert!(parse_io_class("rt:8")
            .unwrap_err()
            .contains("0 (highest) to 7"));
        assert_eq!(parse_weight("500"), Ok(500));
        for bad in ["0", "1001", "x", "-1"] {
            assert!(
                parse_weight(bad).unwrap_err().contains("1 to 1000"),
                "{bad}"
            );
        }
    }
}
