//! Background loads as separate processes. The test binary is not rtrec,
//! so it re-executes itself (`bgload_child` below) with the load's words
//! in an environment variable, the way `rtrec __bgload` would run them.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rtrec_bench::bgload::{self, words_from_env, LoadSpec};
use rtrec_bench::scenario::Load;
use rtrec_bench::Launcher;

const WORDS_VAR: &str = "RTREC_BENCH_TEST_BGLOAD";
const SPAWNER_VAR: &str = "RTREC_BENCH_TEST_SPAWNER";

fn launcher() -> Launcher {
    Launcher::via_env(
        std::env::current_exe().unwrap(),
        ["--exact", "bgload_child", "--nocapture", "--test-threads=1"]
            .map(Into::into)
            .to_vec(),
        WORDS_VAR,
    )
}

/// The child: runs a load (as `rtrec __bgload` would), or, as the
/// "spawner", starts a load, prints its pid and dies without stopping it.
#[test]
fn bgload_child() {
    if let Some(words) = words_from_env(WORDS_VAR) {
        std::process::exit(rtrec_bench::bgload_main(&words));
    }
    if let Ok(dir) = std::env::var(SPAWNER_VAR) {
        let l = launcher();
        // The grandchild must not see this variable.
        std::env::remove_var(SPAWNER_VAR);
        let p = bgload::spawn(
            &l,
            &LoadSpec::new(Load::Trunc, Path::new(&dir).to_path_buf()),
        )
        .unwrap();
        println!("load pid {}", p.pid().unwrap());
        std::mem::forget(p);
        std::process::exit(0);
    }
}

fn size_of(p: &Path) -> Option<u64> {
    std::fs::metadata(p).ok().map(|m| m.len())
}

#[test]
fn trunc_load_shrinks_its_file_refills_it_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let start = dir.path().join("start");
    let spec = LoadSpec {
        file_bytes: 2 << 20,
        start_file: Some(start.clone()),
        ..LoadSpec::new(Load::Trunc, dir.path().join("load"))
    };
    let file = spec.dir.join("trunc.dat");
    let p = bgload::spawn(&launcher(), &spec).unwrap();
    // Ready means the file exists at full size; it is cut only once the
    // start file exists (after ready, the first cut is one period away,
    // less than the wait of a test thread on a loaded machine).
    let mut sizes = vec![size_of(&file).unwrap()];
    std::fs::write(&start, b"").unwrap();
    let end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < end {
        if let Some(s) = size_of(&file) {
            sizes.push(s);
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    let r = p.stop().unwrap();
    assert!(r.clean, "the load needed SIGKILL: {}", r.stderr);
    assert!(r.status.success(), "{}: {}", r.status, r.stderr);
    let res = r.result.expect("a result line");
    assert_eq!(sizes[0], 2 << 20);
    assert!(
        sizes.iter().any(|&s| s < 2 << 20 && s > 0),
        "the file never shrank: {sizes:?}"
    );
    // 2 MiB in 256 KiB steps every 5 ms: empty after 40 ms, refilled then.
    assert!(res.refills >= 1, "never refilled: {res:?}");
    assert!(
        sizes.windows(2).any(|w| w[1] > w[0]),
        "no refill seen: {sizes:?}"
    );
    assert!(!file.exists(), "the load left its file behind");
}

#[test]
fn reader_load_reports_its_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let spec = LoadSpec {
        file_bytes: 4 << 20,
        ..LoadSpec::new(Load::Read, dir.path().join("load"))
    };
    let p = bgload::spawn(&launcher(), &spec).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let r = p.stop().unwrap();
    let res = r
        .result
        .unwrap_or_else(|| panic!("no result: {}", r.stderr));
    assert!(
        res.bytes_read > 0 && res.read_bytes_per_s().is_some(),
        "{res:?}"
    );
    // The file to read is kept for the next set.
    assert_eq!(size_of(&spec.dir.join("read.dat")), Some(4 << 20));
}

#[test]
fn a_load_dies_with_the_process_that_started_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "bgload_child", "--nocapture", "--test-threads=1"])
        .env(SPAWNER_VAR, dir.path().join("load"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let pid: u32 = text
        .lines()
        .find_map(|l| l.split_once("load pid ").map(|(_, p)| p))
        .unwrap_or_else(|| {
            panic!(
                "no pid in {text:?} ({})",
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .parse()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true)
    };
    while !gone() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(gone(), "the load (pid {pid}) outlived its parent");
}

#[test]
fn an_unknown_load_is_refused_with_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let words = vec![
        "__bgload".to_string(),
        "bogus".into(),
        "--dir".into(),
        dir.path().display().to_string(),
    ];
    // Runs in this process: a bad command line is refused before the load
    // changes anything (signal handlers, parent-death signal).
    assert_eq!(rtrec_bench::bgload_main(&words), 2);
    let e = bgload::spawn(
        &launcher(),
        &LoadSpec {
            period_ns: 0,
            file_bytes: 1,
            ..LoadSpec::new(Load::Trunc, dir.path().join("x"))
        },
    )
    .unwrap_err();
    assert!(
        format!("{e:#}").contains("period and sizes must be more than 0"),
        "{e:#}"
    );
}
