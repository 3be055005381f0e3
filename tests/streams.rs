//! Real streams through `rtrec record --stdin`: an MPEG-TS video made by
//! ffmpeg goes through and comes back byte for byte with every frame
//! decodable; the flight recorder on a live stream saves one playable file
//! per trigger (SIGUSR1 and `rtrec trigger DIR`); a pipe at full speed loses
//! nothing with the default policy; the tail of a stream and the bytes read
//! before Ctrl-C are stored; lines come back exactly.
//!
//! ffmpeg and ffprobe are needed (CI installs them); without them the video
//! tests skip, unless `RTREC_REQUIRE_PRIVILEGED=1` (as in CI) makes that a
//! failure. The numbers each test measures are printed (`--nocapture`).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use rtrec_host::tools;
use serde_json::Value;

mod common;
use common::show;

fn rtrec() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtrec"))
}

/// Runs `rtrec record --stdin ARGS` on `input` written through a pipe as
/// fast as the recorder takes it; returns its output and the summary.
fn record_stdin(dir: &Path, args: &[&str], input: &[u8]) -> (Output, Value) {
    let json = dir.join("summary.json");
    let mut child = rtrec()
        .args(["record", "--stdin", "--quiet", "--dir"])
        .arg(dir)
        .arg("--json")
        .arg(&json)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&data));
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    let summary = std::fs::read_to_string(&json).unwrap_or_else(|_| panic!("{}", show(&out)));
    (out, serde_json::from_str(&summary).unwrap())
}

/// The recording files of `dir`, in name order.
fn recordings(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rtr"))
        .collect();
    v.sort();
    v
}

/// `rtrec verify FILE --json`: the file's report.
fn verify(file: &Path) -> Value {
    let o = rtrec()
        .arg("verify")
        .arg(file)
        .arg("--json")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", show(&o)));
    v["files"][0].clone()
}

/// `rtrec export FILE -o OUT` (raw, the default; asserting success); the
/// bytes.
fn export_raw(file: &Path, out: &Path) -> Vec<u8> {
    let o = rtrec()
        .args(["export", "-o"])
        .arg(out)
        .arg(file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    std::fs::read(out).unwrap()
}

/// Bytes that do not compress or repeat (xorshift64*).
fn noise(len: usize, mut x: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    v.truncate(len);
    v
}

/// An ffmpeg generating a test picture as MPEG-2 in MPEG-TS on stdout,
/// `secs` long; `live` paces it in real time (`-re`).
fn ffmpeg_ts(secs: u32, live: bool) -> Command {
    let mut c = Command::new("ffmpeg");
    c.args(["-hide_banner", "-loglevel", "error", "-nostdin"]);
    if live {
        c.arg("-re");
    }
    c.args(["-f", "lavfi", "-i"])
        .arg(format!("testsrc=size=320x240:rate=25:duration={secs}"))
        .args([
            "-c:v",
            "mpeg2video",
            "-g",
            "12",
            "-fflags",
            "+bitexact",
            "-f",
            "mpegts",
            "-",
        ]);
    c
}

/// Frames ffprobe decodes in `file`, and the stream's duration in seconds.
fn probe(file: &Path) -> (u64, f64) {
    let o = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args([
            "-show_entries",
            "stream=nb_read_frames:format=duration",
            "-of",
            "json",
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "ffprobe {}: {}",
        file.display(),
        show(&o)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let frames = v["streams"][0]["nb_read_frames"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let secs = v["format"]["duration"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    (frames, secs)
}

/// What ffmpeg reports as errors while decoding all of `file`.
fn decode_errors(file: &Path) -> String {
    let o = Command::new("ffmpeg")
        .args(["-hide_banner", "-v", "error", "-nostdin", "-i"])
        .arg(file)
        .args(["-f", "null", "-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_mpeg_ts_stream_through_stdin_comes_back_byte_for_byte_and_every_frame_decodes() {
    if !tools::require(
        "an_mpeg_ts_stream_through_stdin_comes_back_byte_for_byte_and_every_frame_decodes",
        &[tools::FFMPEG, tools::FFPROBE],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = ffmpeg_ts(10, false).output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let ts = o.stdout;
    let input = dir.path().join("in.ts");
    std::fs::write(&input, &ts).unwrap();
    // 100 TS packets per record; the stream's length is not a multiple.
    let (out, s) = record_stdin(dir.path(), &["--size", "18800B"], &ts);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(s["complete"], true);
    assert_eq!(s["records_dropped"], 0);
    let files = recordings(dir.path());
    let back = export_raw(&files[0], &dir.path().join("out.ts"));
    assert!(back == ts, "the exported stream differs from the input");
    let (frames_in, _) = probe(&input);
    let (frames_out, _) = probe(&dir.path().join("out.ts"));
    assert_eq!(frames_in, 250);
    assert_eq!(frames_out, frames_in);
    assert_eq!(decode_errors(&dir.path().join("out.ts")), "");
    println!(
        "ffmpeg round trip: {frames_in} frames in, {frames_out} frames out, {} bytes, bytes equal: {}",
        ts.len(),
        back == ts
    );
}

/// Waits until the flight recorder in `dir` listens for triggers (its
/// SIGUSR1 handler is installed before), or fails after 10 s.
fn wait_for_listener(dir: &Path, child: &mut Child) {
    for _ in 0..1000 {
        if dir.join(".rtrec-trigger").exists() {
            return;
        }
        assert!(child.try_wait().unwrap().is_none(), "the recorder ended");
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the flight recorder never listened for triggers");
}

fn kill(sig: &str, pid: u32) {
    let st = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn the_flight_recorder_on_a_live_stream_saves_one_playable_file_per_trigger() {
    if !tools::require(
        "the_flight_recorder_on_a_live_stream_saves_one_playable_file_per_trigger",
        &[tools::FFMPEG, tools::FFPROBE],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut ffmpeg = ffmpeg_ts(8, true).stdout(Stdio::piped()).spawn().unwrap();
    let json = dir.path().join("summary.json");
    // The pre-trigger window is the last 3 records (64 KiB; 56 KB of this
    // stream, more than two groups of pictures): what each event holds
    // before its trigger is then the same however the stream is paced,
    // where a window in time holds nothing while ffmpeg, slow to start on a
    // loaded machine, has sent nothing yet.
    let mut rec = rtrec()
        .args(["record", "--stdin", "--size", "18800B", "--quiet"])
        .args(["--pre", "60s", "--pre-bytes", "64KiB", "--post", "1500ms"])
        .args(["--trace-written", "--dir"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .stdin(ffmpeg.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_listener(dir.path(), &mut rec);
    // The first trigger once the window is full: the recorder takes it
    // after the records it has queued.
    let mut queued = BufReader::new(rec.stdout.take().unwrap()).lines();
    while queued.next().expect("the recorder ended").unwrap() != "queued 2" {}
    let drain = std::thread::spawn(move || queued.count());
    kill("-USR1", rec.id());
    std::thread::sleep(Duration::from_secs(3));
    let o = rtrec().arg("trigger").arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(ffmpeg.wait().unwrap().success());
    assert!(rec.wait().unwrap().success());
    drain.join().unwrap();
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(s["flight"]["events"], 2, "{s}");
    let files = recordings(dir.path());
    assert_eq!(files.len(), 2, "{files:?}");
    let mut seen = Vec::new();
    for (i, f) in files.iter().enumerate() {
        assert_eq!(verify(f)["status"], "complete");
        let ts = dir.path().join(format!("event{i}.ts"));
        export_raw(f, &ts);
        let (frames, secs) = probe(&ts);
        assert!(frames > 0, "{}: no frame decodes", ts.display());
        seen.push(format!("{frames} frames, {secs:.2} s"));
    }
    println!(
        "flight recorder on a live stream: {} events ({})",
        files.len(),
        seen.join("; ")
    );
    // The socket went with the recorder: nothing listens any more.
    let o = rtrec().arg("trigger").arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no flight recorder is running"));
}

#[test]
fn a_full_speed_pipe_of_50_mb_loses_nothing_with_the_default_policy() {
    let dir = tempfile::tempdir().unwrap();
    let input = noise(50_000_000, 0x9e37_79b9_7f4a_7c15);
    let (out, s) = record_stdin(dir.path(), &[], &input);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(s["config"]["on_full"], "block");
    assert_eq!(s["records_dropped"], 0);
    assert_eq!(s["records_written"], 50_000_000u64.div_ceil(16384));
    // The whole recording in one go, whatever number of files it took.
    let back = export_raw(dir.path(), &dir.path().join("out"));
    assert!(back == input, "the exported bytes differ from the input");
    println!(
        "full-speed pipe of 50 MB: {} records, {} dropped, producer waited {} times for {} ns in all (longest {} ns)",
        s["records_written"], s["records_dropped"], s["ring_waits"], s["ring_wait_ns"], s["ring_wait_max_ns"]
    );
}

#[test]
fn a_short_last_chunk_is_stored_as_a_shorter_record_and_the_recording_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let input = noise(4 * 18800 + 4136, 7);
    let (out, s) = record_stdin(dir.path(), &["--size", "18800B"], &input);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        (s["complete"].clone(), s["records_written"].clone()),
        (true.into(), 5.into())
    );
    let f = &recordings(dir.path())[0];
    let report = verify(f);
    assert_eq!(report["status"], "complete");
    assert_eq!(report["bytes"], input.len());
    assert!(export_raw(f, &dir.path().join("out")) == input);
}

#[test]
fn ctrl_c_mid_record_stores_the_bytes_already_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = rtrec()
        .args([
            "record",
            "--stdin",
            "--size",
            "10000B",
            "--quiet",
            "--trace-written",
            "--dir",
        ])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = noise(25_000, 3);
    // Two whole records and half of a third; the pipe stays open.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&input).unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Ring mode (the default): the trace says a record was queued.
    for want in ["queued 0", "queued 1"] {
        assert_eq!(lines.next().unwrap().unwrap(), want);
    }
    // The half record arrived with the two whole ones; give the reader a
    // moment in case the pipe split them, then stop the recording.
    std::thread::sleep(Duration::from_millis(300));
    kill("-INT", child.id());
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    drop(stdin);
    // An open-ended recording is stopped by Ctrl-C: that is its normal end.
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(rest, ["queued 2"], "{err}");
    let f = &recordings(dir.path())[0];
    let report = verify(f);
    assert_eq!(report["status"], "complete");
    assert_eq!(report["records"], 3);
    assert!(export_raw(f, &dir.path().join("out")) == input);
}

#[test]
fn lines_round_trip_exactly_and_a_line_over_the_limit_is_a_counted_gap() {
    let dir = tempfile::tempdir().unwrap();
    let text = "first line\n\nunicode: żółć ✓\r\ntab\there\nlast line\n";
    let (out, s) = record_stdin(dir.path(), &["--lines"], text.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(s["records_written"], 5);
    let f = &recordings(dir.path())[0];
    let back = export_raw(f, &dir.path().join("out.txt"));
    assert_eq!(String::from_utf8(back).unwrap(), text);

    let dir = tempfile::tempdir().unwrap();
    let long = format!("ok\n{}\nok again\n", "x".repeat(300));
    let (out, s) = record_stdin(
        dir.path(),
        &["--lines", "--max-line", "100B"],
        long.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(s["drops"]["too_large"], 1);
    let f = &recordings(dir.path())[0];
    let o = rtrec()
        .args(["export", "--raw", "-o"])
        .arg(dir.path().join("refused"))
        .arg(f)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("1 records are missing") && err.contains("--allow-gaps"),
        "{err}"
    );
    assert!(!dir.path().join("refused").exists());
    let o = rtrec()
        .args(["export", "--raw", "--allow-gaps", "-o", "-"])
        .arg(f)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\nok again\n");
}

#[test]
fn a_quiet_pipe_still_takes_triggers_from_the_schedule_and_from_rtrec_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("summary.json");
    let mut child = rtrec()
        .args(["record", "--stdin", "--lines", "--quiet"])
        .args(["--pre", "1s", "--post", "100ms", "--trigger-every", "200ms"])
        .arg("--dir")
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_listener(dir.path(), &mut child);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "one line, then silence").unwrap();
    // No input at all while the schedule and `rtrec trigger` fire.
    let o = rtrec().arg("trigger").arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // Waits (no time is asserted: a loaded machine may be slow) until the
    // directory holds two events: `rtrec trigger`'s and the schedule's.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let o = rtrec()
            .args(["events", "--json"])
            .arg(dir.path())
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        if v["events"].as_array().is_some_and(|e| e.len() >= 2) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the schedule never fired: {}",
            show(&o)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The schedule fired at least once, and `rtrec trigger` once.
    let triggers = s["triggers"].as_u64().unwrap();
    assert!(triggers >= 2, "{s}");
    assert!(s["flight"]["events"].as_u64().unwrap() > 0, "{s}");
}

#[test]
fn stdin_triggers_with_stdin_data_and_rtrec_trigger_without_a_recorder_are_refused_in_one_sentence()
{
    let dir = tempfile::tempdir().unwrap();
    let o = rtrec()
        .args([
            "record",
            "--stdin",
            "--pre",
            "1s",
            "--post",
            "1s",
            "--trigger-on",
            "stdin",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).lines().count(),
        1,
        "{}",
        show(&o)
    );
    let o = rtrec().arg("trigger").arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).lines().count(),
        1,
        "{}",
        show(&o)
    );
}
