//! `rtrec ship` against a real S3 server (SeaweedFS, `weed mini`), no
//! mocks: a multi-file recording with a multipart file round-trips and
//! verifies, a second run sends nothing, a shipper killed mid-upload
//! resumes with at most one part again, a server killed mid-upload and a
//! connection stalled and reset are survived, wrong credentials are one
//! sentence, and a recording still being recorded stays home.
//!
//! The server and the proxy are `common::weed`'s.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::show;
use common::weed::{crc32c_of, ship_command as ship_command_to, weed, Proxy, Weed, BUCKET, KEY};
use serde_json::Value;

/// `rtrec ship DIR --to s3://fleet/plant` ([`ship_command_to`]) with
/// `extra`.
fn ship_command(dir: &Path, endpoint: &str, extra: &[&str]) -> Command {
    let mut c = ship_command_to(dir, endpoint, "plant");
    c.args(extra);
    c
}

/// Runs `rtrec ship` to the server (see [`ship_command`]) and returns its
/// output and its `--json` summary.
fn ship(w: &Weed, dir: &Path, extra: &[&str]) -> (Output, Value) {
    ship_to(dir, &format!("http://{}", w.s3), extra)
}

/// [`ship`] through `endpoint`.
fn ship_to(dir: &Path, endpoint: &str, extra: &[&str]) -> (Output, Value) {
    let json = dir.with_extension("summary.json");
    let _ = std::fs::remove_file(&json);
    let o = ship_command(dir, endpoint, extra)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default()).unwrap_or_default();
    (o, v)
}

/// Records `total` of 64 KiB records in files of `file_size` into a new
/// directory `name` under `root` ([`common::weed::record`]).
fn record(root: &Path, name: &str, total: &str, file_size: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    common::weed::record(&dir, total, file_size);
    dir
}

/// The manifest of the recording the ledger of `dir` says is shipped.
fn manifest(w: &Weed, dir: &Path) -> Value {
    let ledger = std::fs::read_to_string(dir.join(".shipped")).unwrap();
    let key = ledger
        .lines()
        .find_map(|l| l.strip_prefix("recording "))
        .and_then(|l| l.splitn(3, ' ').nth(2))
        .expect("a recording line in the ledger")
        .to_string();
    serde_json::from_slice(&w.object(&key).expect("the manifest is in the bucket")).unwrap()
}

/// Downloads every file the manifest lists into a new directory and
/// checks each against the manifest and the original; returns the copy.
fn download_and_compare(w: &Weed, m: &Value, original: &Path, into: &Path) -> PathBuf {
    std::fs::create_dir_all(into).unwrap();
    for f in m["files"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        let body = w
            .object(f["key"].as_str().unwrap())
            .expect("every listed file is there");
        assert_eq!(
            body.len() as u64,
            f["size_bytes"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            format!("{:08x}", crc32c_of(&body)),
            f["crc32c"].as_str().unwrap()
        );
        assert!(
            body == std::fs::read(original.join(name)).unwrap(),
            "{name} differs"
        );
        std::fs::write(into.join(name), body).unwrap();
    }
    into.to_path_buf()
}

/// The number of `part` lines in the ledger of `dir`.
fn parts_in_ledger(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join(".shipped"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("part "))
        .count()
}

/// Waits until `cond` holds (panics after `secs`).
fn wait_for(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "waited {secs} s for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_multi_file_recording_round_trips_verifies_and_a_second_run_sends_nothing() {
    let name = "a_multi_file_recording_round_trips_verifies_and_a_second_run_sends_nothing";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    // A 24 MiB file (five parts of 5 MiB) and a smaller one (one PUT).
    let dir = record(tmp.path(), "rec", "30MiB", "24MiB");
    let w = Weed::start(bin);
    let (o, s) = ship(&w, &dir, &[]);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(s["recordings_shipped"], 1, "{s}");
    assert_eq!(s["files_shipped"], 3, "two files and the manifest: {s}");
    let m = manifest(&w, &dir);
    assert_eq!(m["schema_version"], 1);
    assert_eq!(m["device"], "dev1");
    assert_eq!(m["state"], "complete");
    assert_eq!(m["files"].as_array().unwrap().len(), 2);
    assert!(
        m["files"][0]["size_bytes"].as_u64().unwrap() > 20 << 20,
        "{m}"
    );
    let key = m["files"][0]["key"].as_str().unwrap();
    assert!(
        key.starts_with(&format!(
            "plant/dev1/{}/{}/",
            &m["start"].as_str().unwrap()[..10],
            m["recording_id"].as_str().unwrap()
        )),
        "{key}"
    );
    // The downloaded copy is byte for byte the recording, and verifies.
    let copy = download_and_compare(&w, &m, &dir, &tmp.path().join("copy"));
    let v = common::rtrec(&["verify", copy.to_str().unwrap()]);
    assert!(v.status.success(), "{}", show(&v));
    // Again: nothing to send. Without the ledger: found in the bucket,
    // nothing sent either.
    let (o2, s2) = ship(&w, &dir, &[]);
    assert!(o2.status.success(), "{}", show(&o2));
    assert_eq!(
        (
            s2["bytes_shipped"].as_u64(),
            s2["recordings_shipped"].as_u64()
        ),
        (Some(0), Some(0)),
        "{s2}"
    );
    std::fs::remove_file(dir.join(".shipped")).unwrap();
    let (o3, s3) = ship(&w, &dir, &[]);
    assert!(o3.status.success(), "{}", show(&o3));
    assert_eq!(s3["bytes_shipped"], 0, "{s3}");
    assert_eq!(s3["files_already_there"], 2, "{s3}");
    assert_eq!(s3["recordings_already_there"], 1, "{s3}");
    assert!(std::fs::read_to_string(dir.join(".shipped"))
        .unwrap()
        .contains("\nrecording "));
}

/// Starts `rtrec ship` with `extra` at 4 MiB/s (a part every 1.25 s,
/// time to kill between two), kills it once the ledger holds two
/// acknowledged parts, and returns the parts it holds then.
fn kill_after_two_parts(w: &Weed, dir: &Path, extra: &[&str]) -> u64 {
    let slow = [extra, &["--bwlimit", "4MiB"]].concat();
    let mut child = ship_command(dir, &format!("http://{}", w.s3), &slow)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(120, "two parts in the ledger", || parts_in_ledger(dir) >= 2);
    child.kill().unwrap();
    child.wait().unwrap();
    parts_in_ledger(dir) as u64
}

#[test]
fn a_shipper_killed_mid_upload_resumes_with_at_most_one_part_sent_again() {
    let name = "a_shipper_killed_mid_upload_resumes_with_at_most_one_part_sent_again";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = record(tmp.path(), "rec", "30MiB", "64MiB");
    let size = std::fs::metadata(&common::corpus::files(&dir)[0])
        .unwrap()
        .len();
    let w = Weed::start(bin);
    let acked = kill_after_two_parts(&w, &dir, &[]);
    let (o, s) = ship(&w, &dir, &[]);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(s["uploads_resumed"], 1, "{s}");
    let manifest_bytes = w
        .object(&format!(
            "plant/dev1/{}/{}/manifest.json",
            &manifest(&w, &dir)["start"].as_str().unwrap()[..10],
            manifest(&w, &dir)["recording_id"].as_str().unwrap()
        ))
        .unwrap()
        .len() as u64;
    // Only the parts not acknowledged were sent, the first of them
    // counted as possibly sent before.
    assert_eq!(
        s["bytes_shipped"].as_u64().unwrap(),
        size - acked * (5 << 20) + manifest_bytes,
        "{s}"
    );
    assert!(s["bytes_resent"].as_u64().unwrap() <= 5 << 20, "{s}");
    eprintln!(
        "killed after {acked} parts; re-sent {} bytes",
        s["bytes_resent"]
    );
    download_and_compare(&w, &manifest(&w, &dir), &dir, &tmp.path().join("copy"));
    assert_eq!(
        parts_in_ledger(&dir),
        0,
        "the finished upload leaves the ledger"
    );
}

#[test]
fn a_server_killed_mid_upload_and_restarted_is_waited_for_by_watch() {
    let name = "a_server_killed_mid_upload_and_restarted_is_waited_for_by_watch";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = record(tmp.path(), "rec", "30MiB", "64MiB");
    let mut w = Weed::start(bin);
    let child = ship_command(
        &dir,
        &format!("http://{}", w.s3),
        &["--watch", "--interval", "1s", "--bwlimit", "4MiB"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    wait_for(120, "a part in the ledger", || parts_in_ledger(&dir) >= 1);
    w.kill();
    std::thread::sleep(Duration::from_secs(3));
    w.up();
    let shipped = || {
        std::fs::read_to_string(dir.join(".shipped"))
            .unwrap_or_default()
            .contains("\nrecording ")
    };
    wait_for(300, "the recording shipped after the restart", shipped);
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("trying again"), "the outage was said: {said}");
    download_and_compare(&w, &manifest(&w, &dir), &dir, &tmp.path().join("copy"));
}

#[test]
fn a_connection_stalled_and_reset_mid_upload_is_survived_and_the_copy_is_exact() {
    let name = "a_connection_stalled_and_reset_mid_upload_is_survived_and_the_copy_is_exact";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = record(tmp.path(), "rec", "16MiB", "64MiB");
    let w = Weed::start(bin);
    let proxy = Proxy::start(w.s3.clone(), 2);
    let (proxy, resets) = (proxy.addr, proxy.resets);
    // object_store retries within a request; what still fails is the
    // next run's (a service's next pass).
    let mut runs = 0;
    loop {
        runs += 1;
        let (o, s) = ship_to(&dir, &format!("http://{proxy}"), &[]);
        if o.status.success() {
            assert_eq!(s["recordings_shipped"], 1, "{s}");
            break;
        }
        assert_eq!(
            o.status.code(),
            Some(1),
            "a network failure is exit 1: {}",
            show(&o)
        );
        assert!(runs < 4, "still failing after {runs} runs: {}", show(&o));
    }
    assert_eq!(
        resets.load(Ordering::SeqCst),
        2,
        "the proxy reset two connections"
    );
    download_and_compare(&w, &manifest(&w, &dir), &dir, &tmp.path().join("copy"));
}

#[test]
fn wrong_credentials_or_a_bucket_refusing_writes_are_one_sentence_and_exit_2() {
    let name = "wrong_credentials_or_a_bucket_refusing_writes_are_one_sentence_and_exit_2";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = record(tmp.path(), "rec", "1MiB", "64MiB");
    let w = Weed::start(bin);
    for (id, secret, says) in [
        (KEY.0, "not-the-secret", "refused"),
        ("nobody", "nothing", "refused"),
        ("reader", "reader-secret", "refused"),
    ] {
        let o = ship_command(&dir, &format!("http://{}", w.s3), &[])
            .env("AWS_ACCESS_KEY_ID", id)
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{id}: {}", show(&o));
        assert_eq!(err.lines().count(), 1, "{id}: one sentence: {err}");
        assert!(
            err.contains(says) && err.contains("credentials"),
            "{id}: {err}"
        );
        assert!(o.stdout.is_empty(), "{id}: {}", show(&o));
    }
    assert!(!dir.join(".shipped").exists(), "nothing was shipped");
}

#[test]
fn a_recording_still_being_recorded_stays_home_until_it_closes() {
    let name = "a_recording_still_being_recorded_stays_home_until_it_closes";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("live");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rec = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--quiet", "--dir", dir.to_str().unwrap()])
        .args(["--period", "10ms", "--size", "4KiB", "--duration", "10min"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(60, "the recorder's first file", || {
        !common::corpus::files(&dir).is_empty()
    });
    let w = Weed::start(bin);
    let (o, s) = ship(&w, &dir, &[]);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(s["recordings_shipped"], 0, "{s}");
    assert_eq!(s["recordings_not_closed"], 1, "{s}");
    assert_eq!(s["bytes_shipped"], 0, "{s}");
    // A service started while it records ships it once it closes (its
    // claim released), and deletes its files after the manifest.
    let json = tmp.path().join("watch.json");
    let watch = ship_command(
        &dir,
        &format!("http://{}", w.s3),
        &["--watch", "--interval", "1s"],
    )
    .args(["--after-ship", "delete", "--json", json.to_str().unwrap()])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !dir.join(".shipped").exists(),
        "nothing shipped while it records"
    );
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(rec.id() as i32, libc::SIGTERM) };
    // A stop signal ends the recording complete, with exit code 130.
    let code = rec.wait().unwrap().code();
    assert!(
        matches!(code, Some(0 | 130)),
        "the recorder exited {code:?}"
    );
    wait_for(120, "its files to leave", || {
        common::corpus::files(&dir).is_empty()
    });
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(watch.id() as i32, libc::SIGTERM) };
    let o = watch.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let s: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(s["recordings_shipped"], 1, "{s}");
    assert_eq!(s["recordings_deleted"], 1, "{s}");
    let ledger = std::fs::read_to_string(dir.join(".shipped")).unwrap();
    assert!(!ledger.contains("\nfile "), "{ledger}");
}

/// `rtrec` with the admin's keys and the server's endpoint in the
/// environment (as `aws` takes them), and `args`.
fn rtrec_s3(w: &Weed, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(args)
        .env("AWS_ACCESS_KEY_ID", KEY.0)
        .env("AWS_SECRET_ACCESS_KEY", KEY.1)
        .env("AWS_ENDPOINT_URL", format!("http://{}", w.s3))
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Replaces the object `key` with `body` through the filer (`PUT`).
fn http_put(filer: &str, key: &str, body: &[u8]) -> u16 {
    let mut s = TcpStream::connect(filer).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "PUT /buckets/{BUCKET}/{key} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    String::from_utf8_lossy(&all)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// The Python package opens the recording at `location` from the bucket
/// (`rtrec.fetch` into `into`): the same id, records and payload bytes
/// as the device's directory `device` gives it. Skipped (one line)
/// without python3 and numpy, a failure when required.
fn python_fetches(w: &Weed, location: &str, into: &Path, device: &Path) {
    let have = Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        rtrec_host::tools::skip(
            "the_fleet_… (Python's rtrec.fetch)",
            "needs python3 with numpy (python3 -m pip install numpy)",
        );
        return;
    }
    let script = r#"
import hashlib, json, sys
import rtrec
def digest(rec):
    h, n = hashlib.sha256(), 0
    for x in rec.records():
        if isinstance(x, rtrec.Record):
            h.update(x.payload)
            n += 1
    return rec.info["id"], n, h.hexdigest()
there = rtrec.fetch(sys.argv[1], sys.argv[2])
here = rtrec.open(sys.argv[3])
print(json.dumps({"there": digest(there), "here": digest(here)}))
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(location)
        .arg(into)
        .arg(device)
        .env(
            "PYTHONPATH",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("python"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("RTREC", env!("CARGO_BIN_EXE_rtrec"))
        .env("AWS_ACCESS_KEY_ID", KEY.0)
        .env("AWS_SECRET_ACCESS_KEY", KEY.1)
        .env("AWS_ENDPOINT_URL", format!("http://{}", w.s3))
        .output()
        .unwrap();
    assert!(o.status.success(), "python: {}", show(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["there"], v["here"], "{v}");
    assert!(v["there"][1].as_u64().unwrap() > 0, "{v}");
}

#[test]
fn the_fleet_lists_every_devices_recordings_and_fetch_brings_one_back_verified() {
    let name = "the_fleet_lists_every_devices_recordings_and_fetch_brings_one_back_verified";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let a = record(tmp.path(), "a", "3MiB", "1MiB");
    let b = record(tmp.path(), "b", "2MiB", "1MiB");
    let w = Weed::start(bin);
    let (o, _) = ship(&w, &a, &[]);
    assert!(o.status.success(), "{}", show(&o));
    // A second device: the same command but its name.
    let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .arg("ship")
        .arg(&b)
        .args(["--to", "s3://fleet/plant", "--device", "dev2"])
        .args(["--endpoint", &format!("http://{}", w.s3)])
        .env("AWS_ACCESS_KEY_ID", KEY.0)
        .env("AWS_SECRET_ACCESS_KEY", KEY.1)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));

    // Every device's recordings, from the manifests, with the counts the
    // devices' own `ls` gives.
    let l = rtrec_s3(&w, &["ls", "s3://fleet/plant", "--json"]);
    assert!(l.status.success(), "{}", show(&l));
    let v: Value = serde_json::from_slice(&l.stdout).unwrap();
    let listed = v["recordings"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{v}");
    for (dir, device) in [(&a, "dev1"), (&b, "dev2")] {
        let local: Value =
            serde_json::from_slice(&common::rtrec(&["ls", "--json", dir.to_str().unwrap()]).stdout)
                .unwrap();
        let here = &local["recordings"][0];
        let there = listed
            .iter()
            .find(|m| m["device"] == device)
            .unwrap_or_else(|| panic!("{device} listed: {v}"));
        assert_eq!(there["recording_id"], here["id"], "{v}");
        assert_eq!(there["records"], here["records"], "{v}");
        assert_eq!(there["lost"], here["lost"], "{v}");
    }
    let text = rtrec_s3(&w, &["ls", "s3://fleet/plant"]);
    assert!(text.status.success(), "{}", show(&text));
    let table = String::from_utf8_lossy(&text.stdout).to_string();
    let location = table
        .lines()
        .find(|l| l.starts_with("dev1 "))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("a dev1 row: {table}"))
        .to_string();
    assert!(location.starts_with("s3://fleet/plant/dev1/"), "{table}");

    // Fetched: the same bytes as the device's, and it verifies.
    let got = tmp.path().join("got");
    let f = rtrec_s3(&w, &["fetch", &location, got.to_str().unwrap()]);
    assert!(f.status.success(), "{}", show(&f));
    let mut names: Vec<String> = std::fs::read_dir(&a)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".rtr"))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for n in &names {
        assert_eq!(
            std::fs::read(got.join(n)).unwrap(),
            std::fs::read(a.join(n)).unwrap(),
            "{n}"
        );
    }
    let v = common::rtrec(&["verify", got.to_str().unwrap()]);
    assert!(v.status.success(), "{}", show(&v));
    python_fetches(&w, &location, &tmp.path().join("py"), &a);
    // Not over files already there.
    let again = rtrec_s3(&w, &["fetch", &location, got.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2), "{}", show(&again));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already there"));

    // An object changed in the bucket is refused, and nothing of it lands.
    let key = format!(
        "{}/{}",
        location.trim_start_matches("s3://fleet/"),
        names[0]
    );
    let mut body = std::fs::read(a.join(&names[0])).unwrap();
    body[4096] ^= 1;
    let put = http_put(&w.filer, &key, &body);
    assert!((200..300).contains(&put), "the filer took the PUT: {put}");
    let bad = tmp.path().join("bad");
    let f = rtrec_s3(&w, &["fetch", &location, bad.to_str().unwrap()]);
    assert_eq!(f.status.code(), Some(1), "{}", show(&f));
    let err = String::from_utf8_lossy(&f.stderr);
    assert!(err.contains("does not match its manifest"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!bad.join(&names[0]).exists());

    // Not a recording: one sentence, exit 2.
    let none = rtrec_s3(
        &w,
        &["fetch", "s3://fleet/plant/nobody", got.to_str().unwrap()],
    );
    assert_eq!(none.status.code(), Some(2), "{}", show(&none));
}

/// The layout of [`record_samples`]' records.
#[cfg(feature = "tables")]
const LAYOUT: &str = "t:u32,x:f32,y:f32,n:u32";

/// Records `n` records of [`LAYOUT`] (16 bytes: the sample of
/// `common::samples` and its index) from stdin in files of 1 MiB into a
/// new directory under `root`: a multi-file recording in a moment.
#[cfg(feature = "tables")]
fn record_samples(root: &Path, name: &str, n: u32) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut input = Vec::with_capacity(n as usize * 16);
    for i in 0..n {
        input.extend(common::samples::sample(i));
        input.extend(i.to_le_bytes());
    }
    let d = dir.to_str().unwrap();
    let args = ["record", "--quiet", "--stdin", "--dir", d, "--size", "16B"];
    let o = common::rtrec_stdin(&[&args[..], &["--file-size", "1MiB"]].concat(), &input);
    assert!(o.status.success(), "{}", show(&o));
    dir
}

/// The converted copy the manifest `m` lists, checked against its
/// manifest entry (size, CRC32C) and against `rtrec export` of `dir`
/// with `export_args` run here: byte for byte the same. Returns it.
#[cfg(feature = "tables")]
fn converted_copy(w: &Weed, m: &Value, dir: &Path, export_args: &[&str]) -> Vec<u8> {
    let c = &m["converted"];
    let body = w
        .object(c["key"].as_str().expect("a converted object"))
        .expect("the converted copy is in the bucket");
    assert_eq!(body.len() as u64, c["size_bytes"].as_u64().unwrap(), "{m}");
    assert_eq!(format!("{:08x}", crc32c_of(&body)), c["crc32c"], "{m}");
    let local = dir.with_extension(c["format"].as_str().unwrap());
    let _ = std::fs::remove_file(&local);
    let o = common::rtrec(
        &[
            &[
                "export",
                dir.to_str().unwrap(),
                "-o",
                local.to_str().unwrap(),
            ],
            export_args,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        body == std::fs::read(&local).unwrap(),
        "the shipped copy is not what `rtrec export {export_args:?}` writes"
    );
    body
}

/// MCAP's Python reader's count of messages per topic in `path`, and the
/// first record's JSON (`None` after a skip line when the reader is not
/// installed).
#[cfg(feature = "tables")]
fn mcap_topics(test: &str, path: &Path) -> Option<Value> {
    const READ: &str = r#"
import json, sys
from mcap.reader import make_reader
topics, first = {}, None
with open(sys.argv[1], "rb") as f:
    for schema, channel, message in make_reader(f).iter_messages():
        topics[channel.topic] = topics.get(channel.topic, 0) + 1
        if first is None and channel.topic == "/rtrec/records":
            first = json.loads(message.data)
print(json.dumps({"topics": topics, "first": first}))
"#;
    let there = Command::new("python3")
        .args(["-c", "import mcap.reader"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !there && !rtrec_host::tools::skip(test, "needs MCAP's Python reader (pip install mcap)") {
        return None;
    }
    let o = Command::new("python3")
        .args(["-c", READ])
        .arg(path)
        .output()
        .unwrap();
    assert!(o.status.success(), "MCAP's reader refused it: {}", show(&o));
    Some(serde_json::from_slice(&o.stdout).unwrap())
}

#[cfg(feature = "tables")]
#[test]
fn a_converted_mcap_ships_beside_the_files_as_export_writes_it_and_a_refusal_is_in_the_manifest() {
    let name = "a_converted_mcap_ships_beside_the_files_as_export_writes_it_and_a_refusal_is_in_the_manifest";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    // 3 MiB of records in 4 files; its MCAP is over 5 MiB (multipart).
    let n = 196_608;
    let dir = record_samples(tmp.path(), "rec", n);
    let w = Weed::start(bin);
    let convert = ["--convert", "mcap", "--layout", LAYOUT];
    let (o, s) = ship(&w, &dir, &convert);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(s["recordings_shipped"], 1, "{s}");
    assert_eq!(s["converted_shipped"], 1, "{s}");
    assert_eq!(
        s["files_shipped"], 6,
        "4 files, the copy, the manifest: {s}"
    );
    let m = manifest(&w, &dir);
    assert_eq!(m["files"].as_array().unwrap().len(), 4, "{m}");
    let c = &m["converted"];
    assert_eq!(
        (c["format"].as_str(), c["layout"].as_str()),
        (Some("mcap"), Some(LAYOUT))
    );
    assert_eq!(
        (c["records"].as_u64(), c["gap_rows"].as_u64()),
        (Some(n as u64), Some(0))
    );
    let body = converted_copy(&w, &m, &dir, &["--format", "mcap", "--layout", LAYOUT]);
    assert!(body.len() > 5 << 20, "{} bytes: not multipart", body.len());
    let copy = tmp.path().join("copy.mcap");
    std::fs::write(&copy, &body).unwrap();
    if let Some(v) = mcap_topics(name, &copy) {
        assert_eq!(v["topics"]["/rtrec/records"], n, "{v}");
        let first = &v["first"];
        assert_eq!(
            (first["t"].as_u64(), first["n"].as_u64()),
            (Some(0), Some(0)),
            "{v}"
        );
    }
    // No copy is left behind, in the directory or in $TMPDIR.
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .contains(m["recording_id"].as_str().unwrap())
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // Again: nothing sent; without the ledger: converted again, found in
    // the bucket, nothing sent either.
    let (_, s2) = ship(&w, &dir, &convert);
    assert_eq!(
        (
            s2["bytes_shipped"].as_u64(),
            s2["recordings_shipped"].as_u64()
        ),
        (Some(0), Some(0)),
        "{s2}"
    );
    std::fs::remove_file(dir.join(".shipped")).unwrap();
    let (o3, s3) = ship(&w, &dir, &convert);
    assert!(o3.status.success(), "{}", show(&o3));
    assert_eq!(
        (
            s3["bytes_shipped"].as_u64(),
            s3["recordings_already_there"].as_u64()
        ),
        (Some(0), Some(1)),
        "{s3}"
    );

    // `fetch` brings the copy too, checked; `ls` reads the manifest.
    let location = format!(
        "s3://fleet/{}",
        m["files"][0]["key"]
            .as_str()
            .unwrap()
            .rsplit_once('/')
            .unwrap()
            .0
    );
    let got = tmp.path().join("got");
    let f = rtrec_s3(&w, &["fetch", &location, got.to_str().unwrap()]);
    assert!(f.status.success(), "{}", show(&f));
    assert!(std::fs::read(got.join(c["name"].as_str().unwrap())).unwrap() == body);
    let l = rtrec_s3(&w, &["ls", "s3://fleet/plant", "--json"]);
    assert!(l.status.success(), "{}", show(&l));
    let v: Value = serde_json::from_slice(&l.stdout).unwrap();
    assert_eq!(
        v["recordings"][0]["converted"]["crc32c"], c["crc32c"],
        "{v}"
    );

    // A recording with a gap: the exporter refuses it without
    // --allow-gaps; its .rtr files ship all the same (also with
    // --no-rtr) and the manifest says why.
    let gap = gap_recording(tmp.path());
    let (o, s) = ship(&w, &gap, &["--convert", "mcap", "--no-rtr"]);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(
        (
            s["conversions_refused"].as_u64(),
            s["converted_shipped"].as_u64()
        ),
        (Some(1), Some(0)),
        "{s}"
    );
    let m = manifest(&w, &gap);
    assert_eq!(m["files"].as_array().unwrap().len(), 1, "{m}");
    let why = m["converted"]["refused"].as_str().unwrap_or_default();
    assert!(why.contains("--allow-gaps"), "{m}");
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("is not converted to mcap") && said.contains(why),
        "{said}"
    );
    assert!(m["converted"].get("key").is_none(), "{m}");
}

#[cfg(feature = "tables")]
#[test]
fn a_parquet_copy_alone_ships_with_no_rtr_and_fetch_brings_it_back() {
    let name = "a_parquet_copy_alone_ships_with_no_rtr_and_fetch_brings_it_back";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let gap = gap_recording(tmp.path());
    let w = Weed::start(bin);
    let args = [
        "--convert",
        "parquet",
        "--layout",
        "t:u32,x:f32,y:f32",
        "--allow-gaps",
        "--no-rtr",
    ];
    let (o, s) = ship(&w, &gap, &args);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(
        (s["converted_shipped"].as_u64(), s["files_shipped"].as_u64()),
        (Some(1), Some(2)),
        "the copy and the manifest: {s}"
    );
    let m = manifest(&w, &gap);
    assert_eq!(m["files"], serde_json::json!([]), "{m}");
    assert_eq!(
        (
            m["converted"]["records"].as_u64(),
            m["converted"]["gap_rows"].as_u64()
        ),
        (Some(9), Some(1)),
        "{m}"
    );
    let export = [
        "--format",
        "parquet",
        "--layout",
        "t:u32,x:f32,y:f32",
        "--allow-gaps",
    ];
    let body = converted_copy(&w, &m, &gap, &export);
    let key = m["converted"]["key"].as_str().unwrap();
    let location = format!("s3://fleet/{}", key.rsplit_once('/').unwrap().0);
    let got = tmp.path().join("got");
    let f = rtrec_s3(&w, &["fetch", &location, got.to_str().unwrap()]);
    assert!(f.status.success(), "{}", show(&f));
    assert!(
        String::from_utf8_lossy(&f.stdout).contains("without its .rtr files"),
        "{}",
        show(&f)
    );
    assert!(std::fs::read(got.join(m["converted"]["name"].as_str().unwrap())).unwrap() == body);
}

#[test]
fn convert_flags_are_checked_before_anything_is_sent() {
    // No server needed: refused before the store is reached.
    let tmp = tempfile::tempdir().unwrap();
    let o = ship_command(tmp.path(), "http://127.0.0.1:9", &["--layout", "t:u32"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "--layout without --convert: {}",
        show(&o)
    );
    let o = ship_command(tmp.path(), "http://127.0.0.1:9", &["--convert", "csv"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    #[cfg(feature = "tables")]
    {
        let o = ship_command(
            tmp.path(),
            "http://127.0.0.1:9",
            &["--convert", "mcap", "--layout", "t:u33"],
        )
        .output()
        .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "one sentence: {err}");
        assert!(err.contains("u33"), "{err}");
    }
}

#[cfg(feature = "tables")]
#[test]
fn a_converted_copy_killed_mid_upload_is_made_again_and_resumed_with_at_most_one_part_again() {
    let name =
        "a_converted_copy_killed_mid_upload_is_made_again_and_resumed_with_at_most_one_part_again";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    // 7 MiB of records: an MCAP of about 17 MB, four parts of 5 MiB.
    let dir = record_samples(tmp.path(), "rec", 458_752);
    let w = Weed::start(bin);
    let convert = ["--convert", "mcap", "--layout", LAYOUT, "--no-rtr"];
    let acked = kill_after_two_parts(&w, &dir, &convert);
    let (o, s) = ship(&w, &dir, &convert);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(s["uploads_resumed"], 1, "{s}");
    let m = manifest(&w, &dir);
    let body = converted_copy(&w, &m, &dir, &["--format", "mcap", "--layout", LAYOUT]);
    let manifest_bytes = serde_json::to_vec_pretty(&m).unwrap().len() as u64;
    let sent = s["bytes_shipped"].as_u64().unwrap();
    // The parts acknowledged before the kill were not sent again (the
    // manifest's size is the test's re-encoding: within a few bytes).
    let expected = body.len() as u64 - acked * (5 << 20) + manifest_bytes;
    assert!(
        sent.abs_diff(expected) < 64,
        "{sent} sent, {expected} expected: {s}"
    );
    assert!(s["bytes_resent"].as_u64().unwrap() <= 5 << 20, "{s}");
    assert_eq!(
        parts_in_ledger(&dir),
        0,
        "the finished upload leaves the ledger"
    );
    eprintln!(
        "copy of {} bytes killed after {acked} parts; re-sent {} bytes",
        body.len(),
        s["bytes_resent"]
    );
}

/// A recording with a gap (a loss frame) in a new directory `gap` under
/// `root`: the exporter refuses to convert it without `--allow-gaps`.
#[cfg(feature = "tables")]
fn gap_recording(root: &Path) -> PathBuf {
    let gap = root.join("gap");
    std::fs::create_dir_all(&gap).unwrap();
    common::samples::recording_with_a_loss(&gap)
        .finish()
        .unwrap();
    gap
}

/// A refused conversion is said and counted once a recording, however
/// often an outage makes `--watch` try the recording again (it was
/// counted at every attempt).
#[cfg(feature = "tables")]
#[test]
fn a_refused_conversion_retried_through_an_outage_is_said_and_counted_once() {
    let name = "a_refused_conversion_retried_through_an_outage_is_said_and_counted_once";
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let gap = gap_recording(tmp.path());
    let mut w = Weed::start(bin);
    // The server is down when the service starts: each pass converts
    // (refused: a gap without --allow-gaps), then fails to reach it.
    w.kill();
    let json = tmp.path().join("watch.json");
    let watch = ship_command(
        &gap,
        &format!("http://{}", w.s3),
        &["--watch", "--interval", "1s", "--convert", "mcap"],
    )
    .args(["--json", json.to_str().unwrap()])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Passes fail while it is down (a refused connection, retried by the
    // client for a while); the summary, written at the end, counts them.
    std::thread::sleep(Duration::from_secs(6));
    w.up();
    wait_for(120, "the recording shipped after the outage", || {
        std::fs::read_to_string(gap.join(".shipped"))
            .unwrap_or_default()
            .contains("\nrecording ")
    });
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(watch.id() as i32, libc::SIGTERM) };
    let o = watch.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let said = String::from_utf8_lossy(&o.stderr);
    let s: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(
        s["failures_retried"].as_u64().unwrap_or(0) >= 1,
        "the outage made no pass fail, so nothing was tried again: {s}\n{said}"
    );
    assert_eq!(s["conversions_refused"], 1, "{s}\n{said}");
    assert_eq!(
        said.matches("is not converted to mcap").count(),
        1,
        "{said}"
    );
    assert!(manifest(&w, &gap)["converted"]["refused"].is_string());
}
