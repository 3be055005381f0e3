//! The C examples compile with `cc` against `include/rtrec.h` and the
//! static library, run, and leave recordings that `verify` reads back
//! complete: `examples/record.c` 1,000 records, counters in order, no gap,
//! with the default back-end and with `O_DIRECT` and io_uring;
//! `examples/flight.c` 10 event files, each opening with its trigger.
//!
//! # Finding `librtrec.a`
//!
//! This test binary lives in `<target>/<profile>/deps/`. Integration tests
//! link the library, so `cargo test` compiles it first, in one rustc call
//! for every crate type in `[lib]` (`rlib`, `cdylib`, `staticlib`), into
//! that same `deps/` directory: `deps/librtrec.a`, with no hash in the name
//! (checked with `cargo test -p rtrec-ffi` and `cargo test --workspace` on
//! an empty target directory, debug and release). It is therefore always
//! built from the sources under test. Cargo copies it up to
//! `<target>/<profile>/librtrec.a` only for `cargo build`, so that copy may
//! be missing or stale during `cargo test`; it is only a fallback.
//!
//! The test does not run `cargo build` itself. It would work (cargo holds
//! the build directory lock only while building, not while tests run), but
//! without the dev-dependencies the feature set differs, so it rebuilds
//! serde and friends (about 9 s) for a library that is already there.
//!
//! # Link flags
//!
//! `cargo rustc -p rtrec-ffi --crate-type staticlib -- --print
//! native-static-libs` prints what the static library needs on Linux:
//! `-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc` (see `common::NATIVE_LIBS`).

use std::path::Path;
use std::process::Command;

mod common;
use common::{repo_root, static_library, NATIVE_LIBS};

use rtrec_engine::format::{decode_frame, FileHeader, FrameKind, HEADER_LEN};
use rtrec_engine::reader::{recording_files, verify_file, walk_frames, FileStatus};

/// `cc` or `$CC`; `None` (the test skips) when there is none.
fn c_compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    Command::new(&cc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| cc)
}

/// Compiles `examples/<name>.c` into `out`, strictly (warnings are errors).
fn compile_example(cc: &str, name: &str, out: &Path) {
    let root = repo_root();
    let lib = static_library();
    let o = Command::new(cc)
        .args([
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Wpedantic",
            "-Werror",
            "-O2",
            "-I",
        ])
        .arg(root.join("include"))
        .arg(root.join(format!("examples/{name}.c")))
        .arg(&lib)
        .args(NATIVE_LIBS)
        .arg("-o")
        .arg(out)
        .output()
        .expect("running the C compiler");
    assert!(
        o.status.success(),
        "compiling examples/{name}.c against {} failed:\n{}",
        lib.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Compiles `examples/NAME.c`, runs it on a fresh directory and requires
/// success; returns the temporary directory (kept alive), the recording
/// directory and the example's stdout.
fn build_and_run(
    cc: &str,
    name: &str,
    args: &[&str],
) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join(name);
    compile_example(cc, name, &exe);
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    let o = Command::new(&exe)
        .arg(&dir)
        .args(args)
        .output()
        .expect("running the example");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "the example failed ({}):\n{stdout}{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    (tmp, dir, stdout)
}

/// The value of `key=` in the example's output.
fn value(stdout: &str, key: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key}= in the output:\n{stdout}"))
        .parse()
        .unwrap_or_else(|_| panic!("{key} is not a number in the output:\n{stdout}"))
}

#[test]
fn the_c_example_records_1000_records_that_verify_complete_and_in_order() {
    let Some(cc) = c_compiler() else {
        eprintln!("skipped: no C compiler (cc or $CC) to build examples/record.c");
        return;
    };
    check_record_example(&cc, &[]);
}

#[test]
fn the_c_example_records_the_same_with_o_direct_and_io_uring() {
    let Some(cc) = c_compiler() else {
        eprintln!("skipped: no C compiler (cc or $CC) to build examples/record.c");
        return;
    };
    // The temporary directory's file system must take O_DIRECT (as the
    // CI's ext4 does); a back-end this machine cannot give is skipped,
    // named (rtrec_host::features).
    for io in ["direct", "uring", "uring-buffered"] {
        let test = "the_c_example_records_the_same_with_o_direct_and_io_uring";
        if !rtrec_host::features::require_io(test, io, &std::env::temp_dir()) {
            continue;
        }
        check_record_example(&cc, &[io]);
    }
}

/// Runs `examples/record.c DIR ARGS` and checks its 1,000 records.
fn check_record_example(cc: &str, args: &[&str]) {
    let (_tmp, dir, stdout) = build_and_run(cc, "record", args);

    assert_eq!(value(&stdout, "records_offered"), 1000);
    assert_eq!(value(&stdout, "records_written"), 1000);
    assert_eq!(value(&stdout, "records_dropped"), 0);
    assert_eq!(value(&stdout, "complete"), 1);
    assert!(value(&stdout, "max_write_ns") > 0, "{stdout}");
    // The timer paced it, so the summary carries its lateness.
    value(&stdout, "max_lateness_ns");

    let files = recording_files(&dir).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let report = verify_file(&files[0]).unwrap();
    assert_eq!(report.status, FileStatus::Complete, "{:?}", report.notes);
    assert_eq!((report.records, report.lost_records), (1000, 0));
    assert!(report.gaps.is_empty(), "{:?}", report.gaps);
    assert_eq!((report.first_seq, report.next_seq), (Some(0), Some(1000)));

    // Each record is the example's: 4 KiB, its counter first.
    let bytes = std::fs::read(&files[0]).unwrap();
    let header = FileHeader::decode(&bytes).unwrap();
    let mut counters = Vec::new();
    walk_frames(&bytes, &header, |_, h, payload| {
        if h.kind == FrameKind::Data {
            assert_eq!(payload.len(), 4096);
            counters.push(u64::from_ne_bytes(payload[..8].try_into().unwrap()));
        }
    });
    assert_eq!(counters, (0..1000).collect::<Vec<u64>>());
}

#[test]
fn the_c_example_fails_with_the_reason_when_the_directory_is_missing() {
    let Some(cc) = c_compiler() else {
        eprintln!("skipped: no C compiler (cc or $CC) to build examples/record.c");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("record");
    compile_example(&cc, "record", &exe);
    let o = Command::new(&exe)
        .arg(tmp.path().join("missing"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("No such file or directory") && stderr.contains("does not exist"),
        "{stderr}"
    );
}

#[test]
fn the_header_compiles_as_cxx_when_a_cxx_compiler_is_present() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    if Command::new(&cxx)
        .arg("--version")
        .output()
        .map_or(true, |o| !o.status.success())
    {
        eprintln!("skipped: no C++ compiler ({cxx}) to check the header's cpp_compat");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("t.cpp");
    std::fs::write(
        &src,
        "#include \"rtrec.h\"\nint main() { rtrec_config c = {}; c.struct_size = sizeof c; return rtrec_config_init(&c) ? 1 : 0; }\n",
    )
    .unwrap();
    let o = Command::new(&cxx)
        .args([
            "-std=c++11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
            "-I",
        ])
        .arg(repo_root().join("include"))
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn the_flight_example_saves_10_complete_event_files_that_open_with_their_trigger() {
    let Some(cc) = c_compiler() else {
        eprintln!("skipped: no C compiler (cc or $CC) to build examples/flight.c");
        return;
    };
    let (_tmp, dir, stdout) = build_and_run(&cc, "flight", &[]);

    assert_eq!(value(&stdout, "pool_prepared"), 12);
    assert_eq!(value(&stdout, "records_offered"), 2000);
    assert_eq!(value(&stdout, "records_dropped"), 0);
    assert_eq!(value(&stdout, "triggers"), 10);
    assert_eq!(value(&stdout, "events"), 10);
    assert_eq!(value(&stdout, "events_cut_short"), 0);
    assert_eq!(value(&stdout, "files"), 10);
    // Every event file came from the prepared pool; two are left.
    assert_eq!(value(&stdout, "pool_taken"), 10);
    assert_eq!(value(&stdout, "pool_fallbacks"), 0);
    assert_eq!(value(&stdout, "pool_ready"), 2);
    // Samples between events were never saved.
    assert!(value(&stdout, "overwritten_records") > 0, "{stdout}");
    assert_eq!(value(&stdout, "complete"), 1);

    let files = recording_files(&dir).unwrap();
    assert_eq!(files.len(), 10, "one file per event: {files:?}");
    let mut first_seqs = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.contains(&format!("-ev{i:05}-")),
            "event {i} is in {name}"
        );
        let r = verify_file(f).unwrap();
        assert_eq!(r.status, FileStatus::Complete, "{name}: {:?}", r.notes);
        assert!(
            r.gaps.is_empty() && r.lost_records == 0,
            "{name}: {:?}",
            r.notes
        );

        // The first frame after the header is the trigger.
        let bytes = std::fs::read(f).unwrap();
        let header = FileHeader::decode(&bytes).unwrap();
        let (first, payload) = decode_frame(&bytes[HEADER_LEN..], header.generation).unwrap();
        assert_eq!(
            first.kind,
            FrameKind::Trigger,
            "{name} opens with its trigger frame"
        );
        assert_eq!(r.triggers.len(), 1, "{name}");
        let t = r.triggers[0];
        assert_eq!(
            rtrec_engine::format::TriggerPayload::decode(payload),
            Some(t)
        );
        // Triggered before sample 100 + 200 i, with samples before and
        // after it.
        assert_eq!(t.trigger_seq, 100 + 200 * i as u64, "{name}");
        assert!(t.pre_records >= 1, "{name}: {t:?}");
        let (first_seq, next_seq) = (r.first_seq.unwrap(), r.next_seq.unwrap());
        assert_eq!(first_seq + t.pre_records, t.trigger_seq, "{name}: {t:?}");
        assert!(
            next_seq > t.trigger_seq,
            "{name}: no sample after the trigger"
        );
        first_seqs.push(first_seq);

        // The samples are the example's: 1 KiB, their counter first, in
        // order.
        let (mut counters, mut pre_ts) = (Vec::new(), Vec::new());
        walk_frames(&bytes, &header, |_, h, p| {
            if h.kind == FrameKind::Data {
                assert_eq!(p.len(), 1024);
                assert_eq!(h.seq, u64::from_ne_bytes(p[..8].try_into().unwrap()));
                counters.push(h.seq);
                if h.seq < t.trigger_seq {
                    pre_ts.push(h.ts_ns);
                }
            }
        });
        assert_eq!(
            counters,
            (first_seq..next_seq).collect::<Vec<u64>>(),
            "{name}"
        );
        // The pre-trigger window spans at most 50 ms of samples (the window
        // is bounded by the samples' time stamps, so the trigger itself,
        // up to a period after the last sample, may be a bit more than
        // 50 ms after the first: `t.pre_ns`).
        let span = pre_ts.last().unwrap() - pre_ts.first().unwrap();
        assert!(span <= 50_000_000, "{name}: {span} ns, {t:?}");
    }
    assert!(first_seqs.windows(2).all(|w| w[0] < w[1]));
}
