//! Running as root in directories others can write: everything planted
//! there — a symlink in place of `.pool`, of `.pool/.pool.json.tmp`, of a
//! slot, of a sidecar, of a `--json` or export output; a hard link to a
//! slot — is refused with a message or replaced, and nothing outside is
//! touched. And waiting for the global lock: the holder is named, SIGTERM
//! ends the wait with exit 130, the timeout gives up in one sentence.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::record_args::RecordArgs;
use common::show;
use rtrec_host::loopfs::require_privileged;
use rtrec_host::testing::hold_global_lock;

fn rtrec_cmd(cwd: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtrec"));
    c.args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn rtrec(cwd: &Path, args: &[&str]) -> Output {
    rtrec_cmd(cwd, args).output().unwrap()
}

/// Exit `code` and exactly one line on stderr, ours.
fn assert_one_sentence(o: &Output, code: i32, containing: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", show(o));
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{}", show(o));
    assert!(lines[0].starts_with("rtrec: "), "{}", show(o));
    assert!(lines[0].contains(containing), "{}", show(o));
}

/// A work directory with a victim file (content "keep") beside it.
struct Scene {
    tmp: tempfile::TempDir,
    dir: PathBuf,
    victim: PathBuf,
}

fn scene() -> Scene {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shared");
    std::fs::create_dir(&dir).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    Scene { tmp, dir, victim }
}

impl Scene {
    fn d(&self) -> &str {
        self.dir.to_str().unwrap()
    }
    fn assert_victim_untouched(&self) {
        assert_eq!(std::fs::read_to_string(&self.victim).unwrap(), "keep");
    }
    fn prepare(&self) -> Output {
        rtrec(
            self.tmp.path(),
            &[
                "pool",
                "prepare",
                "--dir",
                self.d(),
                "--files",
                "1",
                "--file-size",
                "1MiB",
            ],
        )
    }
    /// Three records of 64 bytes in 1 MiB files.
    fn small_record(&self) -> RecordArgs {
        RecordArgs::short(&self.dir, "64B", 3).set("--file-size", "1MiB")
    }
    fn record_pooled(&self) -> Output {
        let args = RecordArgs::short(&self.dir, "1KiB", 3)
            .set("--alloc", "pool")
            .set("--file-size", "1MiB");
        rtrec(self.tmp.path(), &args.words())
    }
}

#[test]
fn a_pool_directory_that_is_a_symlink_is_refused() {
    let s = scene();
    let elsewhere = s.tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, s.dir.join(".pool")).unwrap();
    let o = s.prepare();
    assert_one_sentence(&o, 2, "symlink");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn a_symlink_planted_as_the_pool_description_temporary_is_removed_not_followed() {
    let s = scene();
    std::fs::create_dir(s.dir.join(".pool")).unwrap();
    symlink(&s.victim, s.dir.join(".pool/.pool.json.tmp")).unwrap();
    let o = s.prepare();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    s.assert_victim_untouched();
    assert!(s.dir.join(".pool/pool.json").is_file());
}

#[test]
fn a_slot_that_is_a_symlink_or_has_a_second_hard_link_is_refused() {
    let s = scene();
    assert_eq!(s.prepare().status.code(), Some(0));
    let slot = std::fs::read_dir(s.dir.join(".pool"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "rtp"))
        .unwrap();
    // A second name for the slot, outside the pool.
    let outside = s.tmp.path().join("outside-link");
    std::fs::hard_link(&slot, &outside).unwrap();
    let before = std::fs::read(&outside).unwrap();
    let o = s.record_pooled();
    assert_one_sentence(&o, 2, "hard links");
    assert_eq!(std::fs::read(&outside).unwrap(), before);

    // The same name as a symlink to a victim.
    std::fs::remove_file(&slot).unwrap();
    std::fs::remove_file(&outside).unwrap();
    symlink(&s.victim, &slot).unwrap();
    let o = s.record_pooled();
    assert_one_sentence(&o, 2, "not a regular file");
    s.assert_victim_untouched();
}

#[test]
fn a_symlink_planted_as_the_json_output_is_replaced_not_written_through() {
    let s = scene();
    let out = s.dir.join("summary.json");
    symlink(&s.victim, &out).unwrap();
    let args = s.small_record().set("--json", out.to_str().unwrap());
    let o = rtrec(s.tmp.path(), &args.words());
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    s.assert_victim_untouched();
    assert!(!out.symlink_metadata().unwrap().file_type().is_symlink());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(v.is_object());
}

#[test]
fn a_symlink_planted_as_the_export_output_is_refused_and_force_replaces_the_link() {
    let s = scene();
    let o = rtrec(s.tmp.path(), &s.small_record().words());
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let rec = std::fs::read_dir(&s.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "rtr"))
        .unwrap();
    let out = s.dir.join("export.rtr");
    symlink(&s.victim, &out).unwrap();
    let o = rtrec(
        s.tmp.path(),
        &["export", rec.to_str().unwrap(), "-o", out.to_str().unwrap()],
    );
    assert_one_sentence(&o, 2, "exists: --force replaces it");
    s.assert_victim_untouched();
    // --force replaces the link itself (a rename over it), never writes
    // through it.
    let o = rtrec(
        s.tmp.path(),
        &[
            "export",
            rec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--force",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    s.assert_victim_untouched();
    assert!(!out.symlink_metadata().unwrap().file_type().is_symlink());
}

#[test]
fn a_symlink_planted_as_the_raw_sidecar_is_never_followed() {
    let s = scene();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Every name the sidecar can take in the next half minute.
    for t in now - 2..=now + 30 {
        let name = format!("rec-{}.meta.json", rtrec_engine::utc_stamp(t as u64));
        symlink(&s.victim, s.dir.join(name)).unwrap();
    }
    let args = s.small_record().set("--framing", "raw");
    let o = rtrec(s.tmp.path(), &args.words());
    assert!(o.status.code().is_some(), "{}", show(&o));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"));
    s.assert_victim_untouched();
}

#[test]
fn waiting_for_the_global_lock_names_the_holder_ends_on_sigterm_and_times_out() {
    if !require_privileged(
        "waiting_for_the_global_lock_names_the_holder_ends_on_sigterm_and_times_out",
    ) {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut holder = hold_global_lock(state.path());
    let pid = holder.id();
    let bench = |timeout: &str| {
        let mut c = rtrec_cmd(
            work.path(),
            &[
                "bench",
                "--cases",
                "NOISE-FLOOR",
                "--writes",
                "10",
                "--lock-timeout",
                timeout,
            ],
        );
        c.env("RTREC_STATE_DIR", state.path());
        c
    };

    let o = bench("300ms").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let last: Vec<&str> = err.lines().filter(|l| l.starts_with("rtrec: ")).collect();
    assert_eq!(last.len(), 1, "{}", show(&o));
    assert!(
        last[0].contains("gave up") && last[0].contains(&format!("pid {pid} (")),
        "{err}"
    );

    let mut child = bench("1h").spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    while !line.contains("waiting for it to finish") {
        line.clear();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "no waiting line");
    }
    assert!(line.contains(&format!("pid {pid}")), "{line}");
    rtrec_sys::terminate(child.id()).unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("interrupted by SIGTERM"), "{rest}");

    holder.kill().unwrap();
    holder.wait().unwrap();
}

#[test]
fn sighup_ends_a_recording_like_sigterm_with_its_end_frame() {
    let s = scene();
    // Open-ended: no --count.
    let args = RecordArgs::into_dir(&s.dir)
        .switch("--trace-written")
        .set("--period", "1ms")
        .set("--size", "64B")
        .set("--file-size", "1MiB");
    let mut child = rtrec_cmd(s.tmp.path(), &args.words()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("queued "), "{line}");
    let kill = Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    std::io::Read::read_to_string(&mut out, &mut String::new()).unwrap();
    let o = child.wait_with_output().unwrap();
    // An open-ended recording is stopped by a stop signal: exit 0, not
    // death by the signal (which would be no exit code and no end frame).
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let rec = std::fs::read_dir(&s.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "rtr"))
        .unwrap();
    let v = rtrec(s.tmp.path(), &["verify", rec.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", show(&v));
}
