//! The object store `rtrec ship` writes to: where it is (`--to
//! s3://BUCKET/PREFIX`), how to reach it (endpoint, region, credentials
//! and TLS roots the way S3 tools take them), the client that speaks to
//! it (the Apache Arrow project's `object_store`, its S3 signer, retries
//! and multipart uploads), and what an error from it means for the
//! shipper: try again later, or stop with one sentence.
//!
//! Design choices:
//! - **Flags, else the environment** `AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_ENDPOINT_URL`,
//!   `AWS_REGION` (`AWS_DEFAULT_REGION`), as the AWS CLI reads them. The
//!   secret key is never a flag (a command line is visible to every user
//!   of the machine): the environment, or `--secret-access-key-file`.
//! - **TLS with rustls and ring** (ring's few C and assembly files
//!   build with the target's C compiler the cross builds already use;
//!   aws-lc-rs, object_store's default, is a large C build that wants
//!   cmake), the system's roots, plus `--ca-file`. An `http://`
//!   endpoint is taken as given (a server on the local network), and
//!   without the system's roots: reqwest's platform verifier refuses to
//!   build a client, TLS used or not, on a system that has none (a
//!   board's minimal image; found on the emulated board,
//!   `scripts/board-vm.sh --ship`).
//! - **Bounded retries inside a request** (object_store's `RetryConfig`:
//!   timeouts, 5xx and dropped connections, with exponential backoff and
//!   jitter); what still fails is [`Failure::Later`] and the shipper's own
//!   backoff takes over ([`super::pace`]).
//! - **Refusals are final** ([`Failure::Refused`]): wrong credentials, a
//!   missing bucket, a bucket that refuses writes (403) and a clock too
//!   far from the server's end the run with one sentence and exit code 2
//!   (a service does not retry them: its unit says so), never a retry
//!   storm.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, Checksum};
use object_store::{BackoffConfig, Certificate, ClientOptions, RetryConfig};

/// Where recordings go: `s3://BUCKET/PREFIX`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The bucket.
    pub bucket: String,
    /// The key prefix, without a trailing `/` (may be empty).
    pub prefix: String,
}

impl Target {
    /// Reads `s3://BUCKET[/PREFIX]`.
    ///
    /// # Errors
    /// One sentence: not an `s3://` address, or no bucket.
    pub fn parse(s: &str) -> Result<Target, String> {
        let rest = s
            .strip_prefix("s3://")
            .ok_or_else(|| format!("--to '{s}' is not an s3://BUCKET/PREFIX address"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.len() < 3 {
            return Err(format!(
                "--to '{s}' names no bucket (S3 bucket names have 3 characters or more)"
            ));
        }
        Ok(Target {
            bucket: bucket.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
        })
    }

    /// The key `parts` under the prefix, joined with `/`.
    pub fn key(&self, parts: &[&str]) -> String {
        let mut k = self.prefix.clone();
        for p in parts {
            if !k.is_empty() {
                k.push('/');
            }
            k.push_str(p);
        }
        k
    }
}

/// How to reach the store (flags, else the environment).
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// The endpoint URL (`--endpoint`, `AWS_ENDPOINT_URL`); none: AWS.
    pub endpoint: Option<String>,
    /// The region (`--region`, `AWS_REGION`, `AWS_DEFAULT_REGION`).
    pub region: Option<String>,
    /// The access key id (`--access-key-id`, `AWS_ACCESS_KEY_ID`).
    pub access_key_id: Option<String>,
    /// A file holding the secret access key (else `AWS_SECRET_ACCESS_KEY`).
    pub secret_access_key_file: Option<PathBuf>,
    /// PEM CA certificates trusted beside the system's (a private CA's endpoint).
    pub ca_file: Option<PathBuf>,
    /// What a request may take in all, retries included.
    pub retry_timeout: Duration,
}

/// The client (object_store's S3 store).
pub type Store = Arc<AmazonS3>;

/// The environment variable `name`, when set and not empty.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The HTTP client's options: timeouts, and the certificates trusted —
/// `ca_file`'s beside the system's; over plain HTTP (`http`) none are
/// asked for, since nothing is verified (a board may have none).
fn client_options(ca_file: Option<&std::path::Path>, http: bool) -> Result<ClientOptions, String> {
    let mut options = ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(10))
        .with_timeout(Duration::from_secs(120))
        .with_no_system_certificates(http);
    if let Some(f) = ca_file {
        let pem = std::fs::read(f)
            .map_err(|e| format!("cannot read the CA file '{}': {e}", f.display()))?;
        let certs = Certificate::from_pem_bundle(&pem).map_err(|e| {
            format!(
                "the CA file '{}' holds no PEM certificate: {e}",
                f.display()
            )
        })?;
        for c in certs {
            options = options.with_root_certificate(c);
        }
    }
    Ok(options)
}

/// Builds the client for `target`.
///
/// # Errors
/// One sentence: no credentials, an unreadable key or CA file, a bad
/// endpoint.
pub fn open(target: &Target, a: &Access) -> Result<Store, String> {
    // reqwest's rustls is built without a provider (the default would be
    // aws-lc-rs, a C build): ring's, once per process. rustls deprecates
    // it for lacking post-quantum key exchange, which aws-lc-rs alone has.
    #[allow(deprecated)]
    let _ = rustls::crypto::ring::default_provider().install_default();
    let key_id = a
        .access_key_id
        .clone()
        .or_else(|| env("AWS_ACCESS_KEY_ID"))
        .ok_or("no access key id: set AWS_ACCESS_KEY_ID or give --access-key-id")?;
    let secret = match &a.secret_access_key_file {
        Some(f) => std::fs::read_to_string(f)
            .map(|s| s.trim().to_string())
            .map_err(|e| format!("cannot read the secret key file '{}': {e}", f.display()))?,
        None => env("AWS_SECRET_ACCESS_KEY").ok_or(
            "no secret access key: set AWS_SECRET_ACCESS_KEY or give --secret-access-key-file",
        )?,
    };
    let region = a
        .region
        .clone()
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".into());
    let endpoint = a.endpoint.clone().or_else(|| env("AWS_ENDPOINT_URL"));
    let http = endpoint
        .as_deref()
        .is_some_and(|e| e.starts_with("http://"));
    let options = client_options(a.ca_file.as_deref(), http)?;
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
            base: 2.0,
        },
        max_retries: 5,
        retry_timeout: a.retry_timeout,
    };
    let mut b = AmazonS3Builder::new()
        .with_bucket_name(&target.bucket)
        .with_region(region)
        .with_access_key_id(key_id)
        .with_secret_access_key(secret)
        .with_checksum_algorithm(Checksum::SHA256)
        .with_retry(retry)
        .with_client_options(options);
    if let Some(t) = env("AWS_SESSION_TOKEN") {
        b = b.with_token(t);
    }
    if let Some(e) = endpoint {
        b = b.with_allow_http(http).with_endpoint(e);
    }
    b.build().map(Arc::new).map_err(|e| {
        let why = with_causes(&e);
        if why.contains("No CA certificates were loaded") {
            "cannot set up the S3 client: this system has no CA certificates to verify the \
             server's with (install them, e.g. Debian's ca-certificates, or give --ca-file)"
                .to_string()
        } else {
            format!("cannot set up the S3 client: {why}")
        }
    })
}

/// `e`'s text followed by its causes' (object_store names only the HTTP
/// client's error, not why the client failed).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// What an error from the store means for the shipper.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// Worth another try later (timeouts, 5xx, the network): the queue
    /// stays in the ledger.
    Later(String),
    /// No retry will help until someone changes something: one sentence.
    Refused(String),
}

impl Failure {
    /// The sentence.
    pub fn text(&self) -> &str {
        match self {
            Failure::Later(s) | Failure::Refused(s) => s,
        }
    }
}

/// Classifies `e`, met while `doing` (e.g. "writing 'dev/…/rec.rtr'").
pub fn classify(e: &object_store::Error, doing: &str, bucket: &str) -> Failure {
    let text = e.to_string();
    // The causes too: a TLS failure is named only in the HTTP client's
    // error under object_store's ("error sending request").
    if let Some(why) = untrusted(&with_causes(e)) {
        return Failure::Refused(format!(
            "{doing} failed: the server's TLS certificate is not trusted ({why}); give the CA \
             that signed it with --ca-file, or use the name the certificate holds"
        ));
    }
    let has = |s: &str| text.contains(s);
    if has("RequestTimeTooSkewed") {
        return Failure::Refused(format!(
            "the server refused {doing}: this machine's clock is too far from the server's \
             (RequestTimeTooSkewed); set the clock (NTP) and run again"
        ));
    }
    if has("InvalidAccessKeyId") || has("SignatureDoesNotMatch") || has("InvalidToken") {
        return Failure::Refused(format!(
            "the server refused {doing}: wrong credentials (the access key id or secret key \
             is not the server's)"
        ));
    }
    if has("NoSuchBucket") {
        return Failure::Refused(format!(
            "the server refused {doing}: the bucket '{bucket}' does not exist"
        ));
    }
    match e {
        object_store::Error::PermissionDenied { .. } => Failure::Refused(format!(
            "the server refused {doing}: access denied (403): wrong credentials, or ones the \
             bucket '{bucket}' does not let write"
        )),
        object_store::Error::Unauthenticated { .. } => Failure::Refused(format!(
            "the server refused {doing}: not authenticated (401): wrong credentials"
        )),
        _ => Failure::Later(format!("{doing} failed: {}", one_line(&text))),
    }
}

/// What rustls said of a server certificate it did not accept, from an
/// error's text and its causes' (`None`: not that).
fn untrusted(chain: &str) -> Option<String> {
    let at = chain.find("invalid peer certificate")?;
    let rest = &chain[at..];
    Some(one_line(
        rest.split(": ")
            .take(2)
            .collect::<Vec<_>>()
            .join(": ")
            .as_str(),
    ))
}

/// `s` on one line (object_store's errors chain their causes with
/// newlines in some versions).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The flags that reach the store, the same for `ship` and `fetch` (one
/// definition, flattened into both).
#[derive(Debug, Clone, clap::Args)]
pub struct AccessArgs {
    /// The S3 endpoint URL (else AWS_ENDPOINT_URL; none: AWS); http:// is allowed.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The region (else AWS_REGION, AWS_DEFAULT_REGION, us-east-1).
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// The access key id (else AWS_ACCESS_KEY_ID).
    #[arg(long, value_name = "ID")]
    pub access_key_id: Option<String>,
    /// A file holding the secret access key (else AWS_SECRET_ACCESS_KEY; never a flag's value).
    #[arg(long, value_name = "FILE")]
    pub secret_access_key_file: Option<PathBuf>,
    /// PEM CA certificates trusted beside the system's (a private CA's endpoint).
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
}

impl AccessArgs {
    /// The store's [`Access`].
    pub fn access(&self) -> Access {
        Access {
            endpoint: self.endpoint.clone(),
            region: self.region.clone(),
            access_key_id: self.access_key_id.clone(),
            secret_access_key_file: self.secret_access_key_file.clone(),
            ca_file: self.ca_file.clone(),
            retry_timeout: Duration::from_secs(60),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_a_bucket_and_a_prefix_without_slashes_at_its_ends() {
        let t = Target::parse("s3://fleet/rec/plant-a/").unwrap();
        assert_eq!(t.bucket, "fleet");
        assert_eq!(t.prefix, "rec/plant-a");
        assert_eq!(t.key(&["dev", "x.rtr"]), "rec/plant-a/dev/x.rtr");
        let bare = Target::parse("s3://fleet").unwrap();
        assert_eq!(bare.key(&["dev", "x.rtr"]), "dev/x.rtr");
        assert!(Target::parse("fleet/rec").unwrap_err().contains("s3://"));
        assert!(Target::parse("s3://ab/x")
            .unwrap_err()
            .contains("no bucket"));
    }

    #[test]
    fn refusals_are_final_and_named_and_the_rest_is_tried_later() {
        let generic = |msg: &str| object_store::Error::Generic {
            store: "S3",
            source: msg.to_string().into(),
        };
        let skew = classify(&generic("403 RequestTimeTooSkewed"), "writing 'k'", "b");
        assert!(matches!(&skew, Failure::Refused(s) if s.contains("clock")));
        let bucket = classify(&generic("NoSuchBucket"), "writing 'k'", "b");
        assert!(matches!(&bucket, Failure::Refused(s) if s.contains("'b' does not exist")));
        let denied = object_store::Error::PermissionDenied {
            path: "k".into(),
            source: "403".to_string().into(),
        };
        assert!(matches!(
            classify(&denied, "writing 'k'", "b"),
            Failure::Refused(_)
        ));
        let tls = classify(
            &generic("error sending request: invalid peer certificate: UnknownIssuer"),
            "reading 'k'",
            "b",
        );
        assert!(
            matches!(&tls, Failure::Refused(s) if s.contains("(invalid peer certificate: UnknownIssuer)") && s.contains("--ca-file")),
            "{tls:?}"
        );
        let down = classify(
            &generic("error sending request\nconnection refused"),
            "w",
            "b",
        );
        assert_eq!(
            down,
            Failure::Later(
                "w failed: Generic S3 error: error sending request connection refused".into()
            )
        );
    }

    /// The child's marker: set, it builds the clients without CA certificates.
    const NO_ROOTS: &str = "RTREC_TEST_NO_SYSTEM_ROOTS";

    #[test]
    fn a_system_without_ca_certificates_ships_over_http_and_says_so_for_https() {
        // The system's roots are the process's (rustls-native-certs reads
        // SSL_CERT_FILE and SSL_CERT_DIR, else /etc/ssl): pointed at
        // nothing in a child process, this test binary running the test
        // below, so that no other test sees the change.
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "ship::store::tests::clients_built_without_system_roots",
                "--ignored",
                "--test-threads=1",
            ])
            .env(NO_ROOTS, "1")
            .env("SSL_CERT_FILE", "/nonexistent/rtrec-test-roots.pem")
            .env("SSL_CERT_DIR", "/nonexistent/rtrec-test-roots")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    #[ignore = "run by a_system_without_ca_certificates_ships_over_http_and_says_so_for_https, in a child process without the system's roots"]
    fn clients_built_without_system_roots() {
        assert!(
            std::env::var_os(NO_ROOTS).is_some(),
            "run only by its parent test"
        );
        let t = Target::parse("s3://fleet/board").unwrap();
        let key = std::env::temp_dir().join(format!("rtrec-test-key-{}", std::process::id()));
        std::fs::write(&key, "secret\n").unwrap();
        let access = |endpoint: &str| Access {
            endpoint: Some(endpoint.into()),
            access_key_id: Some("id".into()),
            secret_access_key_file: Some(key.clone()),
            retry_timeout: Duration::from_secs(1),
            ..Access::default()
        };
        let http = open(&t, &access("http://127.0.0.1:9"));
        let https = open(&t, &access("https://127.0.0.1:9"));
        std::fs::remove_file(&key).unwrap();
        assert!(http.is_ok(), "{:?}", http.err());
        let e = https.expect_err("an https client without CA certificates");
        assert!(
            e.contains("no CA certificates") && e.contains("--ca-file"),
            "{e}"
        );
    }
}
