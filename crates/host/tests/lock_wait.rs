//! Waiting for the global lock names its holder, gives up after the
//! timeout, and ends on a stop signal. Its own test binary: the stop
//! signals' handlers are process-wide.

mod common;

use std::time::Duration;

use common::private_state_dir;
use rtrec_host::signals::{Repeat, StopSignals, SIGTERM};
use rtrec_host::testing::hold_global_lock;
use rtrec_host::{Error, GlobalLock, Wait};

#[test]
fn waiting_for_the_lock_names_the_holder_times_out_and_ends_on_a_stop_signal() {
    let state = private_state_dir();
    let mut holder = hold_global_lock(state.path());
    let pid = holder.id();

    let holder_named = GlobalLock::holder_in(state.path());
    // The command line follows in parentheses when /proc still shows it
    // (it can be momentarily unreadable); the pid is always named.
    assert!(
        holder_named == format!("pid {pid}") || holder_named.starts_with(&format!("pid {pid} (")),
        "{holder_named}"
    );

    let wait = Wait {
        timeout: Some(Duration::from_millis(200)),
        ..Wait::default()
    };
    let e = GlobalLock::acquire_with(state.path(), &wait).unwrap_err();
    assert!(matches!(e, Error::LockTimeout { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&format!("held by pid {pid}")), "{msg}");
    assert!(
        msg.contains("--lock-timeout") && !msg.contains('\n'),
        "{msg}"
    );

    // No timeout: only the signal ends the wait.
    let guard = StopSignals::install(Repeat::Records).unwrap();
    let state_path = state.path().to_owned();
    let waiter = std::thread::spawn(move || {
        let wait = Wait {
            timeout: None,
            ..Wait::default()
        };
        GlobalLock::acquire_with(&state_path, &wait)
    });
    std::thread::sleep(Duration::from_millis(100));
    signal_hook::low_level::raise(SIGTERM).unwrap();
    let e = waiter.join().unwrap().unwrap_err();
    drop(guard);
    assert!(
        matches!(
            e,
            Error::Interrupted {
                signal: "SIGTERM",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains(&format!("pid {pid}")), "{e}");
    assert_eq!(rtrec_host::signals::name(SIGTERM), "SIGTERM");

    holder.kill().unwrap();
    holder.wait().unwrap();
    // Free now: taken at once.
    drop(GlobalLock::acquire_with(state.path(), &wait).unwrap());
}
