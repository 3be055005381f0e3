//! `rtrec ship` over TLS (issue 46, item 1: "TLS with the system's roots
//! or a CA file"), against a real SeaweedFS serving S3 over HTTPS with a
//! certificate a private CA signed (made here with `openssl`): with
//! `--ca-file` the recording ships and its objects are byte-exact; without
//! it the run is refused in one sentence that names the certificate and
//! `--ca-file` (exit code 2, nothing in the ledger); a CA file without a
//! certificate is one sentence too.

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::show;
use common::weed::{crc32c_of, record, ship_command, weed, Weed};
use rtrec_host::tools;

/// A private CA (`ca.pem`) and a certificate it signed for 127.0.0.1 and
/// localhost (`srv.pem`, key `srv.key`), in `dir`.
fn private_ca(dir: &Path) {
    let openssl = |args: &[&str]| {
        let o = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "openssl {args:?}: {}", show(&o));
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=rtrec test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         extendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "srv.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
}

/// A port free now (the server binds it next).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `rtrec ship DIR` to `endpoint` with `extra`.
fn ship(dir: &Path, endpoint: &str, extra: &[&str]) -> Output {
    ship_command(dir, endpoint, "tls")
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_private_cas_server_is_trusted_with_ca_file_and_refused_in_one_sentence_without() {
    let name = "a_private_cas_server_is_trusted_with_ca_file_and_refused_in_one_sentence_without";
    if !tools::require(name, &[tools::OPENSSL]) {
        return;
    }
    let Some(bin) = weed(name) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let pki = tmp.path();
    private_ca(pki);
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    record(&dir, "2MiB", "1MiB");
    let port = free_port();
    let w = Weed::start_with(
        bin,
        vec![
            format!("-s3.port.https={port}"),
            format!("-s3.cert.file={}", pki.join("srv.pem").display()),
            format!("-s3.key.file={}", pki.join("srv.key").display()),
        ],
    );
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(60), "no HTTPS on {port}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let https = format!("https://localhost:{port}");

    // The system's roots do not hold the private CA.
    let o = ship(&dir, &https, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert_eq!(err.lines().count(), 1, "one sentence: {err}");
    assert!(
        err.contains("TLS certificate is not trusted") && err.contains("--ca-file"),
        "{err}"
    );
    assert!(!dir.join(".shipped").exists(), "nothing was shipped");

    // A CA file that holds no certificate.
    let not_pem = pki.join("ca.key.txt");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let o = ship(&dir, &https, &["--ca-file", not_pem.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert_eq!(err.lines().count(), 1, "one sentence: {err}");

    // With the CA: shipped, each object as the file.
    let ca = pki.join("ca.pem");
    let o = ship(&dir, &https, &["--ca-file", ca.to_str().unwrap()]);
    assert!(o.status.success(), "{}", show(&o));
    let ledger = std::fs::read_to_string(dir.join(".shipped")).unwrap();
    let manifest = ledger
        .lines()
        .find_map(|l| l.strip_prefix("recording "))
        .and_then(|l| l.splitn(3, ' ').nth(2))
        .expect("a recording line in the ledger");
    let m: serde_json::Value = serde_json::from_slice(&w.object(manifest).unwrap()).unwrap();
    let files = m["files"].as_array().unwrap();
    assert!(files.len() >= 2, "{m}");
    for f in files {
        let body = w.object(f["key"].as_str().unwrap()).unwrap();
        let local = std::fs::read(dir.join(f["name"].as_str().unwrap())).unwrap();
        assert!(body == local, "{f}");
        assert_eq!(format!("{:08x}", crc32c_of(&body)), f["crc32c"]);
    }
}
