//! Issue 42 (findings 1–3, Deliver 2 and 3): the shipped unit's recorder
//! under a service manager that behaves as systemd documents it, with
//! faults a card has in the field.
//!
//! PID 1 here is not systemd, so the test is the manager (a fake systemd,
//! [`Manager`]): it takes `ExecStart=` from `dist/rtrec-recorder@.service`
//! itself (the shell's script, `%f` filled in, `/usr/bin/rtrec` the binary
//! under test), starts it as systemd does — `/bin/sh` is the process it
//! starts, so `WATCHDOG_PID` is the shell's pid (systemd.exec(5),
//! sd_watchdog_enabled(3)) and rtrec is the shell's child — with
//! `NOTIFY_SOCKET` a datagram socket of its own and `WATCHDOG_USEC`;
//! it stops the service with SIGTERM to every process of it
//! (`KillMode=control-group`), and when no `WATCHDOG=1` arrives within
//! `WATCHDOG_USEC` it sends SIGABRT (`WatchdogSignal=`'s default) to them.
//! Every datagram is printed with its time since the start (run with
//! `--nocapture` for the log).
//!
//! - the watchdog pings at half the interval under the unit's shell, and
//!   SIGTERM ends the recording cleanly (finding 1);
//! - another process fills the card: the recorder says so on stderr at
//!   once, `STATUS=failed`, no ping after it, exit 1; after the space is
//!   freed, `recover` and `verify` exit 0 and the restarted service
//!   records again (finding 2);
//! - the card vanishes (`umount -l`): the same loud end; once the card is
//!   back (mounted again), `recover` closes the recording and `verify`
//!   finds nothing missing or damaged (finding 2);
//! - the card frozen (`fsfreeze`): no ping while it is frozen, every time
//!   (three freezes), and the manager's SIGABRT ends the service; after
//!   `recover`, `verify` exits 0 (finding 3).
//!
//! - a source that is missing: `Restart=always` restarts the service,
//!   each start running the unit's `ExecStartPre=` lines, until the
//!   unit's `StartLimitBurst=` within `StartLimitIntervalSec=` refuses
//!   the next start; the restarts leave at most one recording (finding 4).
//!
//! The card tests need root and a loop device (skipped otherwise, failed
//! under `RTREC_REQUIRE_PRIVILEGED=1`).

mod common;
use common::show;

use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The script of the shipped unit's `ExecStart=/bin/sh -c '…'`, with the
/// instance's path for `%f` and the binary under test for
/// `/usr/bin/rtrec`.
fn unit_script(dir: &Path) -> String {
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/rtrec-recorder@.service"),
    )
    .unwrap();
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("the unit has ExecStart=");
    let script = line
        .strip_prefix("/bin/sh -c '")
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or_else(|| panic!("ExecStart= is not /bin/sh -c '…': {line}"));
    script
        .replace("%f", dir.to_str().unwrap())
        .replace("/usr/bin/rtrec", env!("CARGO_BIN_EXE_rtrec"))
}

/// A source that never ends: a line of 1,000 bytes every millisecond
/// (about 1 MB/s), as a serial port or a sensor would print.
fn source(tmp: &Path) -> String {
    let py = tmp.join("source.py");
    std::fs::write(
        &py,
        "import sys, time\n\
         line = ('x' * 999 + '\\n').encode()\n\
         while True:\n    sys.stdout.buffer.write(line)\n    sys.stdout.buffer.flush()\n    time.sleep(0.001)\n",
    )
    .unwrap();
    format!("python3 {}", py.display())
}

/// A stand-in for systemd (module docs): the service's processes, its
/// notification socket, and what arrived when.
struct Manager {
    sock: UnixDatagram,
    child: Child,
    t0: Instant,
    /// Every datagram, with its time since the start, in seconds.
    log: Vec<(f64, String)>,
    watchdog: Duration,
    last_ping: Instant,
    /// Set when the manager sent SIGABRT for a missed ping.
    aborted: bool,
    /// The manager enforces the watchdog (off while a test rides out
    /// stalls shorter than a real `WatchdogSec`).
    enforce: bool,
}

impl Manager {
    /// Starts the unit's `ExecStart=` for `dir`, recording what `src`
    /// prints with `args` (`RTREC_ARGS`), with a watchdog of `watchdog`.
    fn start(tmp: &Path, dir: &Path, src: &str, args: &str, watchdog: Duration) -> Manager {
        let path = tmp.join(format!("notify-{}", rand_suffix()));
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        // systemd forks, sets WATCHDOG_PID to the child's own pid and
        // execs /bin/sh: the same here with `exec`, which keeps the pid.
        let child = Command::new("/bin/sh")
            .arg("-c")
            .arg("export WATCHDOG_PID=$$; exec /bin/sh -c \"$UNIT_SCRIPT\"")
            .env("UNIT_SCRIPT", unit_script(dir))
            .env("RTREC_SOURCE", src)
            .env("RTREC_ARGS", args)
            .env("NOTIFY_SOCKET", &path)
            .env("WATCHDOG_USEC", watchdog.as_micros().to_string())
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // The service's processes, to signal together (the cgroup).
            .process_group(0)
            .spawn()
            .unwrap();
        Manager {
            sock,
            child,
            t0: Instant::now(),
            log: Vec::new(),
            watchdog,
            last_ping: Instant::now(),
            aborted: false,
            enforce: true,
        }
    }

    /// Takes what arrived within 20 ms; enforces the watchdog once READY
    /// came (SIGABRT to every process of the service when a ping is late).
    fn poll(&mut self) {
        let mut buf = [0u8; 4096];
        if let Ok(n) = self.sock.recv(&mut buf) {
            let d = String::from_utf8_lossy(&buf[..n]).into_owned();
            let t = self.t0.elapsed().as_secs_f64();
            println!("  +{t:6.2} s  {}", d.replace('\n', " | "));
            if d.starts_with("WATCHDOG=1") || d.starts_with("READY=1") {
                self.last_ping = Instant::now();
            }
            self.log.push((t, d));
        }
        let ready = self.log.iter().any(|(_, d)| d.starts_with("READY=1"));
        if ready && self.enforce && !self.aborted && self.last_ping.elapsed() > self.watchdog {
            let t = self.t0.elapsed().as_secs_f64();
            println!("  +{t:6.2} s  (manager) no WATCHDOG=1 within WATCHDOG_USEC: SIGABRT");
            self.signal("ABRT");
            self.aborted = true;
        }
    }

    /// Polls until `enough` holds of the log, or `limit` passed.
    fn until(&mut self, limit: Duration, enough: impl Fn(&[(f64, String)]) -> bool) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if enough(&self.log) {
                return true;
            }
            self.poll();
        }
        enough(&self.log)
    }

    /// Polls for `span`.
    fn for_span(&mut self, span: Duration) {
        let end = Instant::now() + span;
        while Instant::now() < end {
            self.poll();
        }
    }

    /// Sends SIG`name` to every process of the service.
    fn signal(&self, name: &str) {
        let _ = Command::new("kill")
            .args(["-s", name, "--", &format!("-{}", self.child.id())])
            .status();
    }

    /// Polls until the shell ended (or `limit`); its status and stderr.
    fn wait(&mut self, limit: Duration) -> (Option<ExitStatus>, String) {
        let end = Instant::now() + limit;
        let st = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break Some(st);
            }
            if Instant::now() > end {
                break None;
            }
            self.poll();
        };
        // Datagrams sent just before the end.
        for _ in 0..5 {
            self.poll();
        }
        let mut err = String::new();
        if st.is_some() {
            use std::io::Read;
            let _ = self.child.stderr.take().unwrap().read_to_string(&mut err);
        }
        (st, err)
    }

    /// The times of the `WATCHDOG=1` datagrams, s.
    fn pings(&self) -> Vec<f64> {
        pings(&self.log)
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.signal("KILL");
            let _ = self.child.wait();
        }
    }
}

fn pings(log: &[(f64, String)]) -> Vec<f64> {
    log.iter()
        .filter(|(_, d)| d.starts_with("WATCHDOG=1\n"))
        .map(|(t, _)| *t)
        .collect()
}

fn rand_suffix() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
    )
}

/// The gaps between pings, for the log.
fn cadence(p: &[f64]) -> String {
    p.windows(2)
        .map(|w| format!("{:.2}", w[1] - w[0]))
        .collect::<Vec<_>>()
        .join(" ")
}

fn rtrec_ok(args: &[&str], dir: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    println!("  rtrec {} DIR: exit {:?}", args.join(" "), o.status.code());
    assert_eq!(o.status.code(), Some(0), "rtrec {args:?}: {}", show(&o));
}

#[test]
fn the_watchdog_pings_under_the_units_shell_and_sigterm_ends_the_recording_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    let src = source(tmp.path());
    println!("service log (WATCHDOG_USEC=1 s, WATCHDOG_PID = the unit's shell):");
    let mut m = Manager::start(
        tmp.path(),
        &dir,
        &src,
        "--lines --file-size 4MiB",
        Duration::from_secs(1),
    );
    let got = m.until(Duration::from_secs(30), |l| pings(l).len() >= 4);
    assert!(
        m.log
            .first()
            .is_some_and(|(_, d)| d.starts_with("READY=1\n")),
        "{:?}",
        m.log
    );
    assert!(
        got,
        "fewer than 4 WATCHDOG=1 with WATCHDOG_PID the shell's: {:?}",
        m.log
    );
    println!("  ping cadence, s: {}", cadence(&m.pings()));
    m.signal("TERM");
    let (st, err) = m.wait(Duration::from_secs(30));
    println!("  exit: {st:?}");
    assert!(st.is_some(), "the service did not end on SIGTERM");
    assert!(!m.aborted, "the manager had to abort it: {:?}", m.log);
    assert!(
        m.log.iter().any(|(_, d)| d.starts_with("STOPPING=1")),
        "{:?}\n{err}",
        m.log
    );
    // Closed by rtrec itself: verify accepts it without recover.
    rtrec_ok(&["verify"], &dir);
}

/// Runs `f` with a journaled ext4 loop file system of `mib` MiB, removed
/// after; false (skipped) without the privileges.
fn with_card(test: &str, mib: u64, f: impl FnOnce(&Path)) -> bool {
    with_loopfs(test, mib, |fs| f(fs.path()))
}

/// [`with_card`], given the loop file system itself.
fn with_loopfs(test: &str, mib: u64, f: impl FnOnce(&rtrec_host::loopfs::LoopFs)) -> bool {
    if !rtrec_host::loopfs::require_privileged(test) {
        return false;
    }
    use rtrec_host::loopfs::{LoopFs, LoopFsOptions};
    let fs = LoopFs::create(&LoopFsOptions {
        size: mib << 20,
        journal_mib: 4,
        ..LoopFsOptions::default()
    })
    .unwrap();
    f(&fs);
    fs.remove().unwrap();
    true
}

#[test]
fn a_card_filled_by_another_process_ends_the_service_loudly_and_the_restart_records_again() {
    with_card(
        "a_card_filled_by_another_process_ends_the_service_loudly_and_the_restart_records_again",
        64,
        |card| {
            let tmp = tempfile::tempdir().unwrap();
            let dir = card.join("rec");
            std::fs::create_dir(&dir).unwrap();
            let src = source(tmp.path());
            let args = "--lines --file-size 1MiB";
            println!("service log (card full):");
            let mut m = Manager::start(tmp.path(), &dir, &src, args, Duration::from_secs(1));
            assert!(
                m.until(Duration::from_secs(30), |l| pings(l).len() >= 2),
                "{:?}",
                m.log
            );
            // Another process fills the card.
            let filler = card.join("filler");
            let o = Command::new("dd")
                .args(["if=/dev/zero", "bs=1M", "status=none"])
                .arg(format!("of={}", filler.display()))
                .output()
                .unwrap();
            let full_at = m.t0.elapsed().as_secs_f64();
            println!(
                "  +{full_at:6.2} s  (dd) card full: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            let (st, failed) = ends_loudly(&mut m, "the card filled");
            println!(
                "  full at +{full_at:.2} s, STATUS=failed at +{failed:.2} s, the service ended with {st}"
            );
            // The space is freed; systemd restarts: ExecStartPre= recover,
            // then the service records again.
            std::fs::remove_file(&filler).unwrap();
            rtrec_ok(&["recover"], &dir);
            let v = aborted_by_the_full_card(&dir);
            println!("  rtrec verify DIR: exit 1, {v}");
            println!("service log (restarted):");
            let mut m = Manager::start(tmp.path(), &dir, &src, args, Duration::from_secs(1));
            assert!(
                m.until(Duration::from_secs(30), |l| pings(l).len() >= 2),
                "{:?}",
                m.log
            );
            m.signal("TERM");
            let (st, err) = m.wait(Duration::from_secs(30));
            assert!(st.is_some(), "{err}");
            let v = aborted_by_the_full_card(&dir);
            assert!(v.starts_with("2 file(s)"), "the restart's recording: {v}");
        },
    );
}

/// After a fault that fails the writer (`what`): the service ends by
/// itself with exit 1, `STATUS=failed` came and no ping after it, stderr
/// said so at once (first line) and gave the reason; its exit status and
/// the time of `STATUS=failed`, s.
fn ends_loudly(m: &mut Manager, what: &str) -> (ExitStatus, f64) {
    let (st, err) = m.wait(Duration::from_secs(120));
    let st = st.unwrap_or_else(|| panic!("the service did not end after {what}"));
    println!(
        "  exit: {st:?}\n  stderr: {}",
        err.trim().replace('\n', "\n          ")
    );
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(!m.aborted, "ended by the watchdog, not by itself");
    let failed = m
        .log
        .iter()
        .find(|(_, d)| d.starts_with("STATUS=failed: "))
        .map(|(t, _)| *t)
        .unwrap_or_else(|| panic!("no STATUS=failed: {:?}", m.log));
    assert!(
        pings(&m.log).iter().all(|&t| t <= failed),
        "a ping after STATUS=failed: {:?}",
        m.log
    );
    assert!(
        err.starts_with("rtrec: writing failed after "),
        "not said at once on stderr: {err}"
    );
    assert!(
        err.contains("rtrec: the recording failed: "),
        "no reason: {err}"
    );
    (st, failed)
}

/// `rtrec verify DIR` of a directory whose one failed recording ended on
/// the full card: exit 1 for it alone (aborted, its drops stored as
/// losses: nothing lost silently), nothing missing or damaged; the last
/// line.
fn aborted_by_the_full_card(dir: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .arg("verify")
        .arg(dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(out.matches(": ABORTED - ").count(), 1, "{}", show(&o));
    assert!(out.contains("a file of 1 MiB is needed"), "{}", show(&o));
    let last = out.lines().last().unwrap_or_default().to_string();
    assert!(
        last.contains(" lost (stored), 0 missing, 0 damaged range(s)"),
        "{}",
        show(&o)
    );
    last
}

/// Thaws the file system when dropped (also when the test fails).
struct Thaw(PathBuf);

impl Drop for Thaw {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze").arg("-u").arg(&self.0).status();
    }
}

#[test]
fn a_frozen_card_stops_the_pings_every_time_and_the_managers_sigabrt_ends_the_service() {
    with_card(
        "a_frozen_card_stops_the_pings_every_time_and_the_managers_sigabrt_ends_the_service",
        256,
        |card| {
            let tmp = tempfile::tempdir().unwrap();
            let dir = card.join("rec");
            std::fs::create_dir(&dir).unwrap();
            let src = source(tmp.path());
            // A ring that holds what a frozen second queues.
            let args = "--lines --file-size 16MiB --ring 32MiB";
            let wd = Duration::from_secs(2);
            println!("service log (card frozen three times):");
            let mut m = Manager::start(tmp.path(), &dir, &src, args, wd);
            m.enforce = false;
            for round in 0..3 {
                let want = pings(&m.log).len() + 2;
                assert!(
                    m.until(Duration::from_secs(30), |l| pings(l).len() >= want),
                    "round {round}: no pings while the writer moves: {:?}",
                    m.log
                );
                let frozen = Thaw(card.to_path_buf());
                let o = Command::new("fsfreeze")
                    .arg("-f")
                    .arg(card)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{}", show(&o));
                let t_freeze = m.t0.elapsed().as_secs_f64();
                println!("  +{t_freeze:6.2} s  (fsfreeze -f) round {round}");
                if round < 2 {
                    // Shorter than the watchdog: a stall the service rides
                    // out. The look begun before the freeze may see
                    // progress; after one more interval none may.
                    m.for_span(wd);
                    let settled = m.t0.elapsed().as_secs_f64();
                    m.for_span(wd / 2);
                    drop(frozen);
                    let late: Vec<f64> =
                        pings(&m.log).into_iter().filter(|&t| t > settled).collect();
                    println!("  +{:6.2} s  (fsfreeze -u)", m.t0.elapsed().as_secs_f64());
                    assert!(
                        late.is_empty(),
                        "round {round}: pings while frozen: {late:?}"
                    );
                    assert!(
                        m.log
                            .iter()
                            .any(|(t, d)| *t > t_freeze && d.starts_with("STATUS=stuck: ")),
                        "round {round}: {:?}",
                        m.log
                    );
                } else {
                    // Frozen for good: the manager's watchdog aborts it.
                    m.enforce = true;
                    m.last_ping = Instant::now();
                    let end = Instant::now() + Duration::from_secs(30);
                    while !m.aborted && Instant::now() < end {
                        m.poll();
                    }
                    let aborted = m.aborted;
                    drop(frozen);
                    assert!(aborted, "no SIGABRT while frozen: {:?}", m.log);
                }
            }
            let (st, err) = m.wait(Duration::from_secs(60));
            let st = st.expect("the service did not end after SIGABRT");
            println!("  exit: {st:?}");
            use std::os::unix::process::ExitStatusExt;
            assert!(
                st.code() == Some(134) || st.signal() == Some(6),
                "{st:?}: {err}"
            );
            rtrec_ok(&["recover"], &dir);
            rtrec_ok(&["verify"], &dir);
        },
    );
}

#[test]
fn the_shipped_unit_passes_systemd_analyze_verify_with_start_limits() {
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/rtrec-recorder@.service"),
    )
    .unwrap();
    for key in [
        "Type=notify",
        "NotifyAccess=all",
        "WatchdogSec=",
        "Restart=always",
        "StartLimitIntervalSec=",
        "StartLimitBurst=",
    ] {
        assert!(
            unit.lines().any(|l| l.starts_with(key)),
            "the unit has no {key}"
        );
    }
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("RTREC_REQUIRE_PRIVILEGED").is_none(),
            "systemd-analyze is missing (Debian package systemd)"
        );
        println!("skipped: needs systemd-analyze (Debian package systemd)");
        return;
    }
    // As scripts/install.sh installs it: its commands point at the binary.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("rtrec-recorder@.service");
    std::fs::write(
        &path,
        unit.replace("/usr/bin/rtrec", env!("CARGO_BIN_EXE_rtrec")),
    )
    .unwrap();
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    println!("systemd-analyze verify: {}", show(&o));
    assert!(o.status.success(), "{}", show(&o));
    assert!(o.stderr.is_empty(), "warnings: {}", show(&o));
}

/// The value of `key=` in the shipped unit (its first line with it).
fn unit_value(key: &str) -> String {
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/rtrec-recorder@.service"),
    )
    .unwrap();
    let prefix = format!("{key}=");
    unit.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("the unit has no {key}="))
        .to_string()
}

/// A unit's time span (`5s`, `10min`) as seconds.
fn unit_seconds(v: &str) -> f64 {
    let (n, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: f64 = n.parse().unwrap();
    match unit {
        "" | "s" => n,
        "min" => n * 60.0,
        "h" => n * 3600.0,
        other => panic!("a time unit this test does not know: {other}"),
    }
}

/// Issue 42, Deliver 2 (finding 4): the shipped unit's restart policy
/// as systemd documents it, run. A service whose source is missing
/// (`cat` of a tty that is not there: rtrec records nothing and exits 0
/// at once) is restarted by `Restart=always` after `RestartSec=`, each
/// start running the unit's `ExecStartPre=` lines (mkdir, `rtrec
/// recover`) and `ExecStart=` under the manager, until it has started
/// `StartLimitBurst=` times within `StartLimitIntervalSec=`: the next
/// start is refused (systemd.unit(5): "start-limit-hit") and the restarts
/// end. The manager keeps a clock of its own for the waits (`RestartSec=`
/// is counted, not slept), so the test takes the starts' own time only.
/// And the empty recordings of the restarts do not pile up in the
/// directory.
#[test]
fn a_service_that_fails_fast_is_restarted_until_the_units_start_limit_and_then_stops() {
    let restart_sec = unit_seconds(&unit_value("RestartSec"));
    let interval = unit_seconds(&unit_value("StartLimitIntervalSec"));
    let burst: usize = unit_value("StartLimitBurst").parse().unwrap();
    assert_eq!(unit_value("Restart"), "always");
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/rtrec-recorder@.service"),
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("card/rec");
    let pre: Vec<String> = unit
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStartPre="))
        .map(|l| {
            l.replace("%f", dir.to_str().unwrap())
                .replace("/usr/bin/rtrec", env!("CARGO_BIN_EXE_rtrec"))
        })
        .collect();
    assert!(!pre.is_empty(), "the unit has ExecStartPre= lines");
    let args = "--lines --keep 1GiB";
    // The manager's clock (s): each start's own time, plus RestartSec=.
    let (mut clock, mut starts, mut refused) = (0.0f64, Vec::<f64>::new(), false);
    for _ in 0..burst + 5 {
        if starts.iter().filter(|&&t| clock - t < interval).count() >= burst {
            println!(
                "  +{clock:7.1} s  (manager) start request repeated too quickly: start-limit-hit"
            );
            refused = true;
            break;
        }
        starts.push(clock);
        let t0 = Instant::now();
        for cmd in &pre {
            let words: Vec<&str> = cmd.split_whitespace().collect();
            let o = Command::new(words[0]).args(&words[1..]).output().unwrap();
            assert!(o.status.success(), "ExecStartPre={cmd}: {}", show(&o));
        }
        let mut m = Manager::start(
            tmp.path(),
            &dir,
            "cat /dev/rtrec-no-such-tty",
            args,
            Duration::from_secs(30),
        );
        let (st, err) = m.wait(Duration::from_secs(60));
        let st = st.expect("the service ended by itself");
        println!(
            "  +{clock:7.1} s  start {}: exit {:?} after {:.2} s {}",
            starts.len(),
            st.code(),
            t0.elapsed().as_secs_f64(),
            err.trim()
        );
        clock += t0.elapsed().as_secs_f64() + restart_sec;
    }
    assert!(refused, "the start limit never stopped the restarts");
    assert_eq!(starts.len(), burst, "{starts:?}");
    let recordings: serde_json::Value = serde_json::from_slice(
        &Command::new(env!("CARGO_BIN_EXE_rtrec"))
            .args(["ls", "--json"])
            .arg(&dir)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap_or_default();
    let n = recordings["recordings"].as_array().map_or(0, Vec::len);
    assert!(
        n <= 1,
        "{n} recordings left by {burst} empty starts: {recordings}"
    );
}

/// Unmounts the card put back by the test when dropped (the journal's
/// undo then finds its mount point free and its loop device gone).
struct PutBack(PathBuf);

impl Drop for PutBack {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The loop device mounted at `card` (`/proc/self/mounts`).
fn card_device(card: &Path) -> PathBuf {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            Some((f.next()?, f.next()?))
        })
        .filter(|(_, at)| Path::new(at) == card)
        .map(|(dev, _)| PathBuf::from(dev))
        .next_back()
        .unwrap_or_else(|| panic!("{} is not mounted", card.display()))
}

/// The card comes back after `umount -l` of `dev`: once its last user
/// (the ended recorder) is gone, the detached file system is released
/// with its loop device; then `image` is mounted at `card` again.
fn put_back_after(dev: &Path, image: &Path, card: &Path) -> PutBack {
    let name = dev.file_name().unwrap().to_str().unwrap().to_string();
    let backing = PathBuf::from(format!("/sys/block/{name}/loop/backing_file"));
    let end = Instant::now() + Duration::from_secs(30);
    while backing.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!backing.exists(), "{} still holds the card", dev.display());
    let opts = rtrec_host::loopfs::DEFAULT_MOUNT_OPTIONS;
    let o = Command::new("mount")
        .args(["-t", "ext4", "-o", &format!("loop,{opts}")])
        .arg(image)
        .arg(card)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    PutBack(card.to_path_buf())
}

#[test]
fn a_vanished_card_ends_the_service_loudly_and_its_recording_is_closed_once_it_returns() {
    with_loopfs(
        "a_vanished_card_ends_the_service_loudly_and_its_recording_is_closed_once_it_returns",
        64,
        |fs| {
            let card = fs.path();
            let tmp = tempfile::tempdir().unwrap();
            let dir = card.join("rec");
            std::fs::create_dir(&dir).unwrap();
            let src = source(tmp.path());
            println!("service log (card vanished):");
            let mut m = Manager::start(
                tmp.path(),
                &dir,
                &src,
                "--lines --file-size 1MiB",
                Duration::from_secs(1),
            );
            assert!(
                m.until(Duration::from_secs(30), |l| pings(l).len() >= 2),
                "{:?}",
                m.log
            );
            let dev = card_device(card);
            let o = Command::new("umount").arg("-l").arg(card).output().unwrap();
            assert!(o.status.success(), "{}", show(&o));
            println!(
                "  +{:6.2} s  (umount -l) the card is gone",
                m.t0.elapsed().as_secs_f64()
            );
            ends_loudly(&mut m, "the card vanished");
            let _back = put_back_after(&dev, fs.image(), card);
            println!("  (mount) the card is back");
            rtrec_ok(&["recover"], &dir);
            let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
                .arg("verify")
                .arg(&dir)
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            let last = out.lines().last().unwrap_or_default();
            println!("  rtrec verify DIR: exit {:?}, {last}", o.status.code());
            // Every record written before the card went is there, closed
            // (aborted, or interrupted and closed by recover); nothing
            // missing or damaged.
            assert!(
                last.contains(" 0 missing, 0 damaged range(s)"),
                "{}",
                show(&o)
            );
        },
    );
}

/// The faults of the field soak, in the order its cycles take them.
const FAULTS: [&str; 5] = [
    "kill -9",
    "card full",
    "card vanished",
    "card frozen",
    "signal storm",
];
/// The field soak's bound on its directory: `--keep 48MiB`, one 1 MiB file
/// being written, and a MiB for metadata.
const FIELD_BOUND: u64 = 50 << 20;
/// The write back-ends, one a cycle in turn (`--io`): with five faults and
/// four back-ends, every 20 cycles meet every fault on every back-end.
const BACKENDS: [&str; 4] = ["buffered", "direct", "uring", "uring-buffered"];
/// The signals of a storm, as a shell, a terminal and a careless
/// `kill -USR1` rain them on a service: the two the recorder counts (it
/// has no flight recorder here) and four whose default action is to
/// ignore (or continue). Every thread of the process may take each one,
/// the writer's in the middle of a `write()`, `fdatasync()` or
/// `io_uring_enter()` too.
const STORM: [i32; 6] = [
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
    libc::SIGURG,
    libc::SIGCHLD,
    libc::SIGCONT,
];

/// The pids of the `rtrec` processes of the service's process group
/// `pgid` (the shell's pipeline has one).
fn rtrec_pids(pgid: u32) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces, so split
        // after its closing parenthesis.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if head.ends_with("(rtrec") && fields.get(2) == Some(&pgid.to_string().as_str()) {
            pids.push(pid);
        }
    }
    pids
}

/// A storm: `rounds` rounds of every signal of [`STORM`] to every thread
/// of each of `pids` (`tgkill`, so the writer and the flusher get theirs,
/// not only the main thread), about 20 µs apart; the signals sent.
fn signal_storm(pids: &[i32], rounds: usize) -> u64 {
    let mut sent = 0u64;
    for round in 0..rounds {
        for &pid in pids {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            let tids: Vec<i32> = tasks
                .flatten()
                .filter_map(|t| t.file_name().to_string_lossy().parse().ok())
                .collect();
            for tid in tids {
                let sig = STORM[(round + tid as usize) % STORM.len()];
                // SAFETY: tgkill takes plain integers; a thread that has
                // just ended answers ESRCH, which is ignored.
                if unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) } == 0 {
                    sent += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_micros(20));
    }
    sent
}

/// Issue 42, Deliver 5: the unit's pipeline through
/// `RTREC_FIELD_SOAK_CYCLES` cycles (default 10, what CI runs: each fault
/// twice, the back-ends in turn; the release check runs 200, every fault
/// on every back-end ten times: docs/unattended.md) of kill -9, a card
/// filled by another process, a card unmounted and mounted again, a card
/// frozen until the manager's SIGABRT, and a signal storm (thousands of
/// signals to every thread) followed by a clean SIGTERM. Every cycle ends
/// with `recover`, then `verify DIR` (every recording of every cycle) finds
/// nothing missing or damaged: the recordings the faults cut are closed
/// (interrupted, closed by recover) or aborted with their drops stored as
/// losses, and every recording is complete, recovered or aborted (verify
/// exits 0 unless one is aborted); a storm's recording is complete with nothing lost. A failed
/// writer is reported (`STATUS=failed`) and no ping follows; a frozen one
/// gets no ping until SIGABRT; a storm stops no ping. The directory stays
/// within the card. One row a cycle.
#[test]
fn field_faults_each_end_in_a_loud_exit_or_an_abort_and_recover_leaves_nothing_missing() {
    let cycles: usize = std::env::var("RTREC_FIELD_SOAK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    with_loopfs(
        "field_faults_each_end_in_a_loud_exit_or_an_abort_and_recover_leaves_nothing_missing",
        128,
        |fs| {
            let card = fs.path();
            let tmp = tempfile::tempdir().unwrap();
            let dir = card.join("rec");
            std::fs::create_dir(&dir).unwrap();
            let src = source(tmp.path());
            let mut back: Option<PutBack> = None;
            println!("cycle | fault         | back-end       | ended by            | fault to report, s | verify after recover");
            let t_soak = Instant::now();
            let mut longest_report = 0.0f64;
            let mut max_used = 0u64;
            for cycle in 0..cycles {
                let fault = FAULTS[cycle % FAULTS.len()];
                let backend = BACKENDS[cycle % BACKENDS.len()];
                // A budget the card holds (the unit's 1 GiB default is
                // clamped to the card, and said so, at every start).
                let args =
                    format!("--lines --file-size 1MiB --ring 32MiB --keep 48MiB --io {backend}");
                let mut m = Manager::start(tmp.path(), &dir, &src, &args, Duration::from_secs(2));
                m.enforce = fault == "card frozen";
                assert!(
                    m.until(Duration::from_secs(30), |l| pings(l).len() >= 2),
                    "cycle {cycle}: {:?}",
                    m.log
                );
                let t_fault = m.t0.elapsed().as_secs_f64();
                let mut thaw = None;
                let mut vanished = None;
                let mut recycled = false;
                match fault {
                    "kill -9" => m.signal("KILL"),
                    "signal storm" => {
                        let pids = rtrec_pids(m.child.id());
                        assert!(!pids.is_empty(), "cycle {cycle}: no rtrec in the service");
                        let sent = signal_storm(&pids, 2_000);
                        let t_storm = m.t0.elapsed().as_secs_f64();
                        println!("  +{t_storm:6.2} s  (storm) {sent} signals to rtrec's threads");
                        // The pings go on after the storm: the recorder lives.
                        let before = pings(&m.log).len();
                        assert!(
                            m.until(Duration::from_secs(10), |l| pings(l).len() >= before + 2),
                            "cycle {cycle}: no ping after the storm: {:?}",
                            m.log
                        );
                        m.signal("TERM");
                    }
                    "card full" => {
                        let _ = Command::new("dd")
                            .args(["if=/dev/zero", "bs=1M", "status=none"])
                            .arg(format!("of={}", card.join("filler").display()))
                            .output()
                            .unwrap();
                        // Either the writer meets the full card (a loud
                        // exit), or the loop is at its budget and goes on
                        // in the space of its own files, which it recycles
                        // (docs/unattended.md, "Faults"): then it must
                        // keep pinging, and SIGTERM ends it cleanly.
                        let failed = |l: &[(f64, String)]| {
                            l.iter().any(|(_, d)| d.starts_with("STATUS=failed: "))
                        };
                        if !m.until(Duration::from_secs(15), failed) {
                            let before = pings(&m.log).len();
                            assert!(
                                m.until(Duration::from_secs(10), |l| pings(l).len() >= before + 2),
                                "cycle {cycle}: neither failed nor pinging on a full card: {:?}",
                                m.log
                            );
                            recycled = true;
                            m.signal("TERM");
                        }
                    }
                    "card vanished" => {
                        vanished = Some(card_device(card));
                        let o = Command::new("umount").arg("-l").arg(card).output().unwrap();
                        assert!(o.status.success(), "{}", show(&o));
                    }
                    _ => {
                        thaw = Some(Thaw(card.to_path_buf()));
                        let o = Command::new("fsfreeze")
                            .arg("-f")
                            .arg(card)
                            .output()
                            .unwrap();
                        assert!(o.status.success(), "{}", show(&o));
                        m.last_ping = Instant::now();
                        let end = Instant::now() + Duration::from_secs(30);
                        while !m.aborted && Instant::now() < end {
                            m.poll();
                        }
                        assert!(m.aborted, "cycle {cycle}: no SIGABRT while frozen");
                    }
                }
                drop(thaw);
                let (st, err) = m.wait(Duration::from_secs(120));
                let st = st.unwrap_or_else(|| panic!("cycle {cycle}: the service did not end"));
                let reported = match fault {
                    "card full" if recycled => {
                        assert!(!m.aborted, "cycle {cycle}: {err}");
                        "- (went on in its own files)".to_string()
                    }
                    "card full" | "card vanished" => {
                        let failed = m
                            .log
                            .iter()
                            .find(|(_, d)| d.starts_with("STATUS=failed: "))
                            .map(|(t, _)| *t)
                            .unwrap_or_else(|| panic!("cycle {cycle}: no STATUS=failed: {err}"));
                        assert_eq!(st.code(), Some(1), "cycle {cycle}: {err}");
                        assert!(pings(&m.log).iter().all(|&t| t <= failed));
                        assert!(err.starts_with("rtrec: writing failed after "), "{err}");
                        longest_report = longest_report.max(failed - t_fault);
                        format!("{:.2} (STATUS=failed)", failed - t_fault)
                    }
                    "signal storm" => {
                        // SIGTERM ends the unit's shell too (as systemd's
                        // KillMode does): the recording's state, below,
                        // says how rtrec ended.
                        assert!(!m.aborted, "cycle {cycle}: aborted after a storm: {err}");
                        "- (clean SIGTERM)".to_string()
                    }
                    "card frozen" => {
                        let last = pings(&m.log).last().copied().unwrap_or(0.0);
                        format!("{:.2} (last ping)", last - t_fault)
                    }
                    _ => "-".to_string(),
                };
                if fault == "card full" {
                    std::fs::remove_file(card.join("filler")).unwrap();
                }
                if let Some(dev) = vanished {
                    // The old guard's mount is the one that vanished.
                    if let Some(b) = back.take() {
                        std::mem::forget(b);
                    }
                    back = Some(put_back_after(&dev, fs.image(), card));
                }
                rtrec_ok_quiet(&["recover"], &dir);
                let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
                    .arg("verify")
                    .arg(&dir)
                    .output()
                    .unwrap();
                let out = String::from_utf8_lossy(&o.stdout);
                let last = out.lines().last().unwrap_or_default().to_string();
                assert!(
                    last.contains(" 0 missing, 0 damaged range(s)"),
                    "cycle {cycle}: {}",
                    show(&o)
                );
                let listed = Command::new(env!("CARGO_BIN_EXE_rtrec"))
                    .args(["ls", "--json"])
                    .arg(&dir)
                    .output()
                    .unwrap();
                let v: serde_json::Value = serde_json::from_slice(&listed.stdout)
                    .unwrap_or_else(|e| panic!("cycle {cycle}: ls --json: {e}: {}", show(&listed)));
                let recs = v["recordings"].as_array().expect("recordings");
                // After recover every recording is closed: complete,
                // recovered (closed by recover) or aborted (its drops
                // stored as losses). verify exits 0 unless one is aborted,
                // which it reports as not clean by design
                // (docs/recordings.md, "States"): so exit 1 here means an
                // aborted recording and nothing worse.
                let mut aborted = 0;
                for r in recs {
                    match r["state"].as_str() {
                        Some("complete" | "recovered") => {}
                        Some("aborted") => aborted += 1,
                        _ => panic!("cycle {cycle}: a recording left {}: {r}", r["state"]),
                    }
                }
                assert_eq!(
                    o.status.code(),
                    Some(if aborted > 0 { 1 } else { 0 }),
                    "cycle {cycle}: {aborted} aborted: {}",
                    show(&o)
                );
                if fault == "signal storm" {
                    // This cycle's recording: complete, nothing lost.
                    let r = recs
                        .iter()
                        .max_by_key(|r| r["start_ns"].as_u64().unwrap_or(0))
                        .expect("a recording");
                    assert_eq!(r["state"], "complete", "cycle {cycle}: {r}");
                    assert_eq!(r["lost"], 0, "cycle {cycle}: {r}");
                }
                // The budget held the directory (docs/unattended.md's
                // bound: the budget, plus the file being written; a MiB
                // more for the metadata and a recording's end).
                let used = std::fs::read_dir(&dir)
                    .unwrap()
                    .flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.blocks() * 512)
                    .sum::<u64>();
                max_used = max_used.max(used);
                assert!(
                    used <= FIELD_BOUND,
                    "cycle {cycle}: {used} bytes, over {FIELD_BOUND}"
                );
                println!(
                    "{cycle:5} | {fault:13} | {backend:14} | {:19} | {reported:18} | exit {:?}: {last}",
                    format!("{st}"),
                    o.status.code()
                );
            }
            println!(
                "field soak: {cycles} cycles in {:.1} s; longest time from a fault to STATUS=failed {longest_report:.2} s; most the directory took {:.1} MiB of a {:.1} MiB bound",
                t_soak.elapsed().as_secs_f64(),
                max_used as f64 / (1 << 20) as f64,
                FIELD_BOUND as f64 / (1 << 20) as f64
            );
            drop(back);
        },
    );
}

fn rtrec_ok_quiet(args: &[&str], dir: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "rtrec {args:?}: {}", show(&o));
}
