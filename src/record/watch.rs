//! The threads that watch a recording from beside it, each reading the
//! engine's live counters: the progress bar on a terminal, `--status FILE`
//! (written by [`crate::status`]), the flight recorder's
//! resident-memory samples, and systemd's notifications
//! ([`crate::notify`]: `READY=1`, `WATCHDOG=1` while the writer makes
//! progress, `STOPPING=1`).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rtrec_engine::LiveStats;
use rtrec_units::{format_duration, format_size};

use super::output::OutputArgs;
use super::plan::Plan;

/// The threads that watch a recording from beside it, each reading the
/// live counters: the progress bar, `--status FILE`, and the flight
/// recorder's resident-memory samples.
pub struct Watchers {
    /// Set when the recording has ended: progress and status stop.
    done: Arc<AtomicBool>,
    progress: Option<std::thread::JoinHandle<()>>,
    status: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    rss: Option<RssMonitor>,
    /// systemd's notifications under `$NOTIFY_SOCKET` ([`crate::notify`]).
    notify: Option<std::thread::JoinHandle<()>>,
}

/// The resident-memory sampler: its stop flag, and the thread that returns
/// the samples (events, bytes).
type RssMonitor = (Arc<AtomicBool>, std::thread::JoinHandle<Vec<(u64, u64)>>);

impl Watchers {
    /// Starts what `output` asks for: the progress bar on a terminal
    /// unless `--quiet`, `--status`, and with the flight recorder the
    /// memory samples.
    pub fn start(output: &OutputArgs, plan: &Plan, live: Arc<LiveStats>) -> Watchers {
        let done = Arc::new(AtomicBool::new(false));
        let show = !output.quiet && std::io::stderr().is_terminal();
        let progress = show.then(|| spawn_progress(live.clone(), plan.source.count, done.clone()));
        let status = output.status.clone().map(|path| {
            let labels = crate::status::Labels {
                // Absolute, so every board's series name the place alike.
                dir: std::fs::canonicalize(&plan.dir)
                    .unwrap_or_else(|_| plan.dir.clone())
                    .display()
                    .to_string(),
                prefix: plan.cfg.prefix.clone(),
            };
            crate::status::spawn(path, labels, live.clone(), done.clone())
        });
        let notify = crate::notify::spawn(live.clone(), done.clone());
        let rss = plan.cfg.flight.is_some().then(|| spawn_rss_monitor(live));
        Watchers {
            done,
            progress,
            status,
            rss,
            notify,
        }
    }

    /// Takes the last memory sample: before `finish()` frees the ring, so
    /// that the figure is the recording's, not the clean-up's.
    pub fn stop_rss(&mut self) -> Option<Vec<(u64, u64)>> {
        self.rss.take().map(|(stop, h)| {
            stop.store(true, Ordering::Release);
            h.join().unwrap_or_default()
        })
    }

    /// Stops the progress bar, and the status after its last line (done:
    /// true, what the summary says).
    pub fn stop(self) {
        self.done.store(true, Ordering::Release);
        // The pings end before STOPPING=1 is sent: it is the last word.
        if let Some(n) = self.notify {
            let _ = n.join();
        }
        crate::notify::stopping();
        if let Some(p) = self.progress {
            let _ = p.join();
        }
        if let Some(h) = self.status {
            if let Err(e) = h.join().unwrap_or(Ok(())) {
                eprintln!("rtrec: warning: the status file could not be written: {e}");
            }
        }
    }
}

/// Samples the resident memory after the 10th event and at the end, so a
/// flight-recorder run shows that memory does not grow with events.
fn spawn_rss_monitor(live: Arc<LiveStats>) -> RssMonitor {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let h = std::thread::spawn(move || {
        let mut samples = Vec::new();
        let mut took_10 = false;
        while !s.load(Ordering::Acquire) {
            let ev = live.events.load(Ordering::Relaxed);
            if !took_10 && ev >= 10 {
                samples.push((ev, rtrec_sys::resident_bytes().unwrap_or(0)));
                took_10 = true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        samples.push((
            live.events.load(Ordering::Relaxed),
            rtrec_sys::resident_bytes().unwrap_or(0),
        ));
        samples
    });
    (stop, h)
}

/// The progress bar: records written of `total` (a spinner when the
/// total is unknown) and the counters beside it, until `done`.
fn spawn_progress(
    live: Arc<LiveStats>,
    total: Option<u64>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        #[cfg(feature = "progress-bar")]
        let bar = match total {
            Some(t) => indicatif::ProgressBar::new(t).with_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} records {msg} (eta {eta})",
                )
                .expect("valid template"),
            ),
            None => indicatif::ProgressBar::new_spinner().with_style(
                indicatif::ProgressStyle::with_template("{spinner} {pos} records {msg}")
                    .expect("valid template"),
            ),
        };
        #[cfg(not(feature = "progress-bar"))]
        let mut line = crate::progress::Line::default();
        while !done.load(Ordering::Acquire) {
            let w = live.records_written.load(Ordering::Relaxed);
            let events = live.events.load(Ordering::Relaxed);
            // Queued is cumulative (never below written): what helps here
            // is how many are accepted but not yet written.
            let queued = live.records_queued.load(Ordering::Relaxed);
            let msg = format!(
                "written | {} waiting in the ring, durable to {} | {} | max write {} | {} dropped{}",
                queued.saturating_sub(w),
                live.durable_seq.load(Ordering::Relaxed),
                format_size(live.bytes_written.load(Ordering::Relaxed)),
                format_duration(live.max_write_ns.load(Ordering::Relaxed)),
                live.records_dropped.load(Ordering::Relaxed),
                if events > 0 {
                    format!(" | {events} events")
                } else {
                    String::new()
                }
            );
            #[cfg(feature = "progress-bar")]
            {
                bar.set_position(w);
                bar.set_message(msg);
            }
            #[cfg(not(feature = "progress-bar"))]
            line.show(&match total {
                Some(t) => format!("{w}/{t} records {msg}"),
                None => format!("{w} records {msg}"),
            });
            std::thread::sleep(Duration::from_millis(200));
        }
        #[cfg(feature = "progress-bar")]
        bar.finish_and_clear();
        #[cfg(not(feature = "progress-bar"))]
        line.finish();
    })
}
