//! `rtrec bench`'s producer runs as `record --rt` does: a short RTREC case
//! reports its timed thread's setup as requested and granted (SCHED_FIFO
//! 80, the writer at 79, mlockall) in the case's and the environment's
//! `rt`, and `--no-rt` reports it not requested, at SCHED_OTHER. Bad
//! `--priority` and `--cpu` values are refused before anything runs.
//! Asserts no timing. Privileged (skips with the reason, fails under
//! RTREC_REQUIRE_PRIVILEGED=1).

mod common;

use rtrec_host::loopfs::require_privileged;

/// `rtrec bench --cases RTREC` with a short protocol and `extra`, which
/// must exit 0: its JSON (written to stdout).
fn rtrec_case(extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "bench", "--cases", "RTREC", "--writes", "200", "--sets", "1", "--period", "1ms", "--json",
        "-",
    ];
    args.extend_from_slice(extra);
    let o = common::rtrec(&args);
    assert_eq!(o.status.code(), Some(0), "{}", common::show(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", common::show(&o)))
}

#[test]
fn the_timed_thread_runs_as_record_rt_and_no_rt_says_so() {
    if !require_privileged("the_timed_thread_runs_as_record_rt_and_no_rt_says_so") {
        return;
    }
    let v = rtrec_case(&[]);
    let rt = &v["cases"][0]["rt"];
    assert_eq!(rt["requested"], true, "{rt}");
    assert_eq!(rt["granted"], true, "{rt}");
    assert_eq!(rt["policy"], "SCHED_FIFO", "{rt}");
    assert_eq!(rt["priority"], 80, "{rt}");
    assert_eq!(rt["writer_priority"], 79, "{rt}");
    assert_eq!(rt["mlock"], true, "{rt}");
    assert_eq!(rt["failures"], serde_json::json!([]), "{rt}");
    assert_eq!(v["environment"]["rt"]["granted"], true);

    let v = rtrec_case(&["--no-rt"]);
    let rt = &v["cases"][0]["rt"];
    assert_eq!(rt["requested"], false, "{rt}");
    assert_eq!(rt["granted"], false, "{rt}");
    assert_eq!(rt["policy"], "SCHED_OTHER", "{rt}");
    assert_eq!(rt["priority"], serde_json::Value::Null, "{rt}");
    assert_eq!(rt["writer_priority"], serde_json::Value::Null, "{rt}");
    assert_eq!(v["environment"]["rt"]["requested"], false);
}

#[test]
fn a_bad_priority_or_cpu_is_refused_in_one_sentence() {
    let o = common::rtrec(&["bench", "--priority", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--priority must be within SCHED_FIFO's range 1-99"),
        "{}",
        common::show(&o)
    );
    let o = common::rtrec(&["bench", "--cpu", "4096"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--cpu must be a CPU this process may run on"),
        "{}",
        common::show(&o)
    );
    let o = common::rtrec(&["bench", "--no-rt", "--priority", "50"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::show(&o));
}
