//! The engine's own threads never inherit the creating thread's real-time
//! policy: a producer that raised itself to SCHED_FIFO before creating the
//! recorder (as a C application may) still gets a writer and a flusher at
//! the normal policy, unless a writer priority is asked for, so neither
//! runs above it and delays its periods.
//!
//! Needs SCHED_FIFO (root or RLIMIT_RTPRIO); skipped with the reason
//! otherwise, and failed instead under `RTREC_REQUIRE_PRIVILEGED=1`.

use rtrec_engine::{Config, Recorder};

/// The scheduling policy (field 41 of `/proc/self/task/TID/stat`) of each
/// of this process's threads named `comm`.
fn policies(comm: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap() {
        let t = t.unwrap().path();
        let Ok(name) = std::fs::read_to_string(t.join("comm")) else {
            continue;
        };
        if name.trim_end() != comm {
            continue;
        }
        let stat = std::fs::read_to_string(t.join("stat")).unwrap();
        // Fields after the parenthesised name, which may hold spaces.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split(' ').collect();
        // Field 3 is f[0], so field 41 is f[38].
        out.push(f[38].parse().unwrap());
    }
    out
}

const SCHED_OTHER: u32 = 0;
const SCHED_FIFO: u32 = 1;

#[test]
fn a_sched_fifo_creator_hands_its_policy_to_neither_the_writer_nor_the_flusher() {
    let name = "a_sched_fifo_creator_hands_its_policy_to_neither_the_writer_nor_the_flusher";
    // The producer's setup, on a thread of its own so the test harness's
    // other threads keep theirs.
    let result = std::thread::spawn(move || {
        if let Err(e) = rtrec_sys::set_fifo_priority(20) {
            return Err(e.to_string());
        }
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::create(dir.path(), Config::default()).unwrap();
        // Read at once: the threads' policies are settled before create()
        // returns (a writer still at SCHED_FIFO here would be the bug).
        let normal = (policies("rtrec-writer"), policies("rtrec-flush"));
        rec.finish().unwrap();
        // A writer priority asked for is still given.
        let mut cfg = Config::default();
        cfg.rt.writer_priority = Some(19);
        let rec = Recorder::create(dir.path(), cfg).unwrap();
        let asked = policies("rtrec-writer");
        rec.finish().unwrap();
        Ok((normal, asked))
    })
    .join()
    .unwrap();
    let ((writer, flusher), asked) = match result {
        Ok(r) => r,
        Err(e) => {
            assert!(
                std::env::var_os(rtrec_host::tools::REQUIRE_PRIVILEGED_ENV)
                    .is_none_or(|v| v != "1"),
                "{name} needs SCHED_FIFO: {e}"
            );
            eprintln!("skipped {name}: SCHED_FIFO not allowed ({e})");
            return;
        }
    };
    assert_eq!(writer, [SCHED_OTHER], "writer");
    assert_eq!(flusher, [SCHED_OTHER], "flusher");
    assert_eq!(asked, [SCHED_FIFO], "writer with a priority");
}
