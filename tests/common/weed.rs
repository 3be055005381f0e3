//! A real S3 server for the tests that ship (SeaweedFS's `weed mini`,
//! the binary `scripts/seaweedfs.sh` builds, or `RTREC_WEED`): its start,
//! a crash and a restart, reading an object back, a CRC32C of the test's
//! own, and a TCP proxy in front of it that counts the bytes sent up and
//! can stall and reset connections.
//!
//! Without the binary each test skips with one line naming the script,
//! and fails instead when `RTREC_REQUIRE_FEATURES` names `seaweedfs` (or
//! says `all`). `weed mini` takes its default ports (S3 on 8333) or the
//! next free ones and says which: the tests take a file lock around each
//! server (one at a time on the machine), read its ports from what it
//! prints, and kill it on drop, also when a test panics.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The SeaweedFS version `scripts/seaweedfs.sh` builds.
pub const WEED_VERSION: &str = "v0.0.0-20261109003541-7506e5f91cd6";
/// The bucket the server creates.
pub const BUCKET: &str = "fleet";
/// The admin identity's key id and secret.
pub const KEY: (&str, &str) = ("rtrec-test", "rtrec-secret");

/// The weed binary, or `None` after the skip line (a panic when
/// required).
pub fn weed(test: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = std::env::var_os("RTREC_WEED")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(format!("target/seaweedfs/{WEED_VERSION}/weed")));
    if path.is_file() {
        return Some(path);
    }
    let required = std::env::var("RTREC_REQUIRE_FEATURES").unwrap_or_default();
    let why = format!(
        "no SeaweedFS server at '{}' (bash scripts/seaweedfs.sh builds it)",
        path.display()
    );
    if required.split(',').any(|f| f == "seaweedfs" || f == "all") {
        panic!("{test} needs SeaweedFS, and RTREC_REQUIRE_FEATURES forbids skipping it: {why}");
    }
    eprintln!("skipped {test}: {why}");
    None
}

/// A `weed mini` serving S3 with bucket [`BUCKET`], killed on
/// drop; its lock is held as long as it lives.
pub struct Weed {
    /// The binary.
    bin: PathBuf,
    /// Its data directory (kept across a restart).
    dir: tempfile::TempDir,
    /// The server.
    pub child: Option<Child>,
    /// Its S3 address (`127.0.0.1:PORT`).
    pub s3: String,
    /// Its filer's address (where `/buckets/BUCKET/KEY` reads an object).
    pub filer: String,
    /// The port lock (`flock`, released when closed).
    _lock: File,
    /// Arguments of `weed mini` beside the tests' own (TLS).
    extra: Vec<String>,
}

impl Weed {
    /// Takes the lock and starts the server.
    pub fn start(bin: PathBuf) -> Weed {
        Weed::start_with(bin, Vec::new())
    }

    /// [`Weed::start`] with `extra` arguments of `weed mini`.
    pub fn start_with(bin: PathBuf, extra: Vec<String>) -> Weed {
        let lock = File::create(std::env::temp_dir().join("rtrec-test-seaweedfs.lock")).unwrap();
        // SAFETY: flock on a descriptor this function owns.
        assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
        let mut w = Weed {
            bin,
            dir: tempfile::tempdir().unwrap(),
            child: None,
            s3: String::new(),
            filer: String::new(),
            _lock: lock,
            extra,
        };
        w.up();
        w
    }

    /// Starts the server on its directory (on the ports of its first
    /// start, when it had one) and waits until the bucket answers.
    pub fn up(&mut self) {
        let config = self.dir.path().join("s3.json");
        std::fs::write(
            &config,
            serde_json::json!({"identities": [
                {"name": "admin", "credentials": [{"accessKey": KEY.0, "secretKey": KEY.1}],
                 "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
                {"name": "reader", "credentials": [{"accessKey": "reader", "secretKey": "reader-secret"}],
                 "actions": ["Read", "List"]}
            ]})
            .to_string(),
        )
        .unwrap();
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let log = self.dir.path().join("weed.log");
        let mut ports = Vec::new();
        if !self.s3.is_empty() {
            let port = |a: &str| a.rsplit(':').next().unwrap().to_string();
            ports.push(format!("-s3.port={}", port(&self.s3)));
            ports.push(format!("-filer.port={}", port(&self.filer)));
        }
        let child = Command::new(&self.bin)
            .arg("mini")
            .args(&ports)
            .args(&self.extra)
            .arg(format!("-dir={}", data.display()))
            .arg(format!("-s3.config={}", config.display()))
            .env("AWS_ACCESS_KEY_ID", KEY.0)
            .env("AWS_SECRET_ACCESS_KEY", KEY.1)
            .env("S3_BUCKET", BUCKET)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(File::create(&log).unwrap())
            .stderr(Stdio::from(
                File::options().append(true).open(&log).unwrap(),
            ))
            .spawn()
            .unwrap();
        self.child = Some(child);
        let t0 = Instant::now();
        let give_up = |what: &str| {
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "weed did not {what} in 120 s: {:?}",
                std::fs::read_to_string(&log)
            );
            std::thread::sleep(Duration::from_millis(250));
        };
        // "S3 Endpoint:     http://HOST:PORT", "Filer UI:   http://HOST:PORT"
        let port_of = |text: &str, label: &str| {
            let line = text.lines().find(|l| l.trim_start().starts_with(label))?;
            Some(format!("127.0.0.1:{}", line.rsplit(':').next()?.trim()))
        };
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let (Some(s3), Some(filer)) =
                (port_of(&text, "S3 Endpoint:"), port_of(&text, "Filer UI:"))
            {
                (self.s3, self.filer) = (s3, filer);
                break;
            }
            give_up("say its ports");
        }
        while http_get(&self.filer, &format!("/buckets/{BUCKET}/")).map(|r| r.0) != Some(200) {
            give_up("serve the bucket");
        }
    }

    /// Kills the server (SIGKILL), as a crash does.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Its ports close with it; the next start binds them again.
        let t0 = Instant::now();
        while TcpStream::connect(&self.s3).is_ok() && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Weed {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `GET PATH` from a server's filer (at `filer`, where a bucket's
/// objects are `/buckets/BUCKET/KEY`): status and body, or `None` when
/// it does not answer.
pub fn http_get(filer: &str, path: &str) -> Option<(u16, Vec<u8>)> {
    http_get_as(filer, path, "*/*")
}

/// [`http_get`] asking for `accept`.
fn http_get_as(filer: &str, path: &str, accept: &str) -> Option<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(filer).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\n\r\n"
    )
    .ok()?;
    let mut all = Vec::new();
    s.read_to_end(&mut all).ok()?;
    let end = all.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&all[..end]).to_string();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, all[end + 4..].to_vec()))
}

impl Weed {
    /// The object `key` of the bucket, or `None` when absent.
    pub fn object(&self, key: &str) -> Option<Vec<u8>> {
        match http_get(&self.filer, &format!("/buckets/{BUCKET}/{key}")) {
            Some((200, body)) => Some(body),
            _ => None,
        }
    }

    /// Every object under `dir` of the bucket (a folder path, without
    /// slashes at its ends; `""`: the bucket), with its size, walking the
    /// filer's folders (SeaweedFS keeps a multipart upload under way in
    /// the bucket's `.uploads/UPLOAD_ID/`).
    pub fn list(&self, dir: &str) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut todo = vec![format!("/buckets/{BUCKET}/{dir}")];
        while let Some(d) = todo.pop() {
            let path = format!("{}/?limit=100000", d.trim_end_matches('/'));
            let Some((200, body)) = http_get_as(&self.filer, &path, "application/json") else {
                continue;
            };
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            for e in v["Entries"].as_array().into_iter().flatten() {
                let full = e["FullPath"].as_str().unwrap_or_default().to_string();
                // Go's os.ModeDir.
                if e["Mode"].as_u64().unwrap_or(0) & (1 << 31) != 0 {
                    todo.push(full);
                } else {
                    let key = full
                        .strip_prefix(&format!("/buckets/{BUCKET}/"))
                        .unwrap_or(&full)
                        .to_string();
                    out.push((key, e["FileSize"].as_u64().unwrap_or(0)));
                }
            }
        }
        out.sort();
        out
    }
}

/// `rtrec ship DIR --to s3://fleet/PREFIX` with the admin's keys, at
/// `endpoint`, as the device `dev1`, in 5 MiB parts, stdin closed.
pub fn ship_command(dir: &Path, endpoint: &str, prefix: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtrec"));
    c.arg("ship")
        .arg(dir)
        .args(["--to", &format!("s3://{BUCKET}/{prefix}")])
        .args(["--device", "dev1", "--part-size", "5MiB"])
        .args(["--endpoint", endpoint])
        .env("AWS_ACCESS_KEY_ID", KEY.0)
        .env("AWS_SECRET_ACCESS_KEY", KEY.1)
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null());
    c
}

/// CRC32C (Castagnoli), bitwise: the test's own, not the shipper's.
pub fn crc32c_of(b: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &x in b {
        crc ^= x as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A TCP proxy in front of the server: it counts the bytes the client
/// sends up (requests and bodies: what a metered uplink bills), and on
/// each of the first `faults` connections to carry 2 MiB up it stalls
/// 3 s and then resets it.
pub struct Proxy {
    /// Its address (`127.0.0.1:PORT`).
    pub addr: String,
    /// Connections it reset.
    pub resets: Arc<AtomicU64>,
    /// Bytes the client sent up through it.
    pub sent_up: Arc<AtomicU64>,
}

impl Proxy {
    /// A proxy to `upstream` that resets the first `faults` connections
    /// carrying 2 MiB up (none: `0`).
    pub fn start(upstream: String, faults: u64) -> Proxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = Proxy {
            addr: l.local_addr().unwrap().to_string(),
            resets: Arc::new(AtomicU64::new(0)),
            sent_up: Arc::new(AtomicU64::new(0)),
        };
        let (r, sent) = (p.resets.clone(), p.sent_up.clone());
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(down) = c else { continue };
                let Ok(up) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let (r, sent) = (r.clone(), sent.clone());
                let (down2, up2) = (down.try_clone().unwrap(), up.try_clone().unwrap());
                std::thread::spawn(move || pump(up2, down2, None));
                std::thread::spawn(move || pump(down, up, Some((r, faults, sent))));
            }
        });
        p
    }
}

/// What the client → server direction of a [`Proxy`] holds: its resets,
/// how many connections to reset, its byte count.
type Up = (Arc<AtomicU64>, u64, Arc<AtomicU64>);

/// Copies `src` → `dst`; with `up` (the client → server direction) it
/// counts and stalls and resets as [`Proxy`] says.
fn pump(mut src: TcpStream, mut dst: TcpStream, up: Option<Up>) {
    let mut buf = vec![0u8; 64 << 10];
    let mut n_total = 0u64;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        n_total += n as u64;
        if let Some((resets, faults, sent)) = &up {
            if n_total > 2 << 20 && resets.load(Ordering::SeqCst) < *faults {
                resets.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_secs(3));
                let _ = src.shutdown(Shutdown::Both);
                let _ = dst.shutdown(Shutdown::Both);
                return;
            }
            sent.fetch_add(n as u64, Ordering::SeqCst);
        }
        if dst.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = dst.shutdown(Shutdown::Write);
}

/// Records `total` of 64 KiB records (at 500 µs) in files of
/// `file_size` into `dir`: a closed recording to ship.
pub fn record(dir: &Path, total: &str, file_size: &str) {
    let o = super::rtrec(&[
        "record",
        "--quiet",
        "--dir",
        dir.to_str().unwrap(),
        "--period",
        "500us",
        "--size",
        "64KiB",
        "--total",
        total,
        "--file-size",
        file_size,
    ]);
    assert!(o.status.success(), "{}", super::show(&o));
}
