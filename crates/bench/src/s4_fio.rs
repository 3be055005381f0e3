//! S4 with `fio` (`rtrec bench --study s4 --with-fio`): the same weighted
//! jobs as S4's own load processes, run by fio's `libaio` engine as the
//! published study ran them. This module owns starting one fio per job in
//! a given cgroup, the job file each gets, and reading fio's
//! `--output-format=json` (serde). Groups, weights, schedulers and their
//! undo stay with [`crate::s4`], which calls this for the fio half of a
//! cell.
//!
//! Design choices:
//!
//! - **How a job joins its group.** Each job is its own `fio` process,
//!   started with its job file to come on stdin (`fio -`). While it waits
//!   for that file it has done no I/O; rtrec moves it into the job's group
//!   (`cgroup.procs`, the same [`rtrec_host::cgroup::move_to`] the own loads
//!   use), and only when every job's fio is in its group are the job files
//!   written, so the jobs start together (the gap is fio's parse time, not
//!   a start-up each) and fio's forked job process inherits the group.
//!   fio's own `cgroup=`/`cgroup_weight=` options are not used: (1)
//!   `cgroup_weight=` writes CFQ's `blkio.weight`, which no kernel since
//!   CFQ's removal (5.0) has — BFQ's is `blkio.bfq.weight`, and on cgroup
//!   v2 fio refuses weights; (2) fio takes the first `blkio` v1 *or*
//!   cgroup2 mount in `/proc/mounts`, which on a hybrid system need not be
//!   the hierarchy rtrec detected; (3) a group fio makes is not in rtrec's
//!   journal, so a killed run would leave it behind.
//! - **The job.** `ioengine=libaio`, `iodepth=1` (one request in flight,
//!   as the own loads and the paper's jobs, which name no depth),
//!   sequential over the own loads' 256 MiB files (written data, so a
//!   direct read reaches the device), `time_based` for the cell's length.
//!   Buffered reads re-invalidate the page cache each time fio wraps
//!   around (`invalidate=1`, fio's default), as the own reader drops it.
//! - **The measure.** Each job's `bw_bytes` (bytes over its own runtime)
//!   for its direction.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Deserialize;

/// How the jobs joined their groups, as the JSON names it.
pub const JOIN_METHOD: &str =
    "one fio per job, moved into its group (cgroup.procs) while it waits for its job file on stdin";

/// One fio job of a cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioJob {
    /// Job name (`fio-0`).
    pub name: String,
    /// The file it reads or writes (written data, `file_bytes` long).
    pub file: PathBuf,
    /// Size of `file`.
    pub file_bytes: u64,
    /// Writes (else reads).
    pub write: bool,
    /// `O_DIRECT` (else buffered).
    pub direct: bool,
    /// Bytes per request (`bs`).
    pub request_bytes: u64,
    /// How long it runs.
    pub runtime: Duration,
    /// The cgroup directory the fio process is moved into.
    pub cgroup: PathBuf,
}

impl FioJob {
    /// The job file fio reads on stdin. A `:` in the file name is escaped
    /// (fio separates file names with it).
    pub fn text(&self) -> String {
        let file = self.file.to_string_lossy().replace(':', "\\:");
        format!(
            "[{name}]\nfilename={file}\nsize={size}\nrw={rw}\nbs={bs}\ndirect={direct}\n\
             ioengine=libaio\niodepth=1\ntime_based=1\nruntime={ms}ms\n",
            name = self.name,
            size = self.file_bytes,
            rw = if self.write { "write" } else { "read" },
            bs = self.request_bytes,
            direct = u8::from(self.direct),
            ms = self.runtime.as_millis().max(1),
        )
    }
}

/// fio's version (`fio-3.33`), or why it cannot be used (one sentence).
///
/// # Errors
/// `fio` is not on `PATH` or does not run.
pub fn version() -> Result<String, String> {
    let missing = || {
        "--with-fio needs fio, which is not installed here (Debian/Ubuntu: apt-get install fio)"
            .to_string()
    };
    let out = Command::new("fio")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|_| missing())?;
    if !out.status.success() {
        return Err(format!(
            "--with-fio needs fio, but 'fio --version' failed ({})",
            out.status
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// fio's JSON output, the part read.
#[derive(Debug, Deserialize)]
struct Output {
    jobs: Vec<JobOutput>,
}

#[derive(Debug, Deserialize)]
struct JobOutput {
    jobname: String,
    error: i64,
    read: DirOutput,
    write: DirOutput,
}

#[derive(Debug, Deserialize)]
struct DirOutput {
    bw_bytes: u64,
}

/// The throughput of job `name` in its direction, bytes/s, from fio's
/// `--output-format=json` output (anything before the first `{`, such as
/// a note fio prints, is skipped).
///
/// # Errors
/// Not fio JSON, no job `name`, or fio reports the job's error.
pub fn parse(stdout: &[u8], name: &str, write: bool) -> anyhow::Result<f64> {
    let start = stdout
        .iter()
        .position(|&b| b == b'{')
        .context("fio printed no JSON")?;
    let out: Output =
        serde_json::from_slice(&stdout[start..]).context("reading fio's JSON output")?;
    let Some(j) = out.jobs.iter().find(|j| j.jobname == name) else {
        bail!("fio's output has no job '{name}'");
    };
    if j.error != 0 {
        bail!("fio job '{name}' failed with error {}", j.error);
    }
    Ok(if write { &j.write } else { &j.read }.bw_bytes as f64)
}

/// A started fio; killed when dropped before it was given its job (it has
/// forked no job process yet then), waited for after.
struct Waiting {
    child: Option<Child>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs `jobs` together, each in its own fio process in its own group
/// (see the module's design choices), in directory `work`; returns each
/// job's throughput, bytes/s, in order.
///
/// # Errors
/// fio does not start, cannot be moved into its group, fails, or prints
/// no usable JSON (its stderr is quoted).
pub fn run(jobs: &[FioJob], work: &Path) -> anyhow::Result<Vec<f64>> {
    let mut started = Vec::new();
    for j in jobs {
        let child = Command::new("fio")
            .args(["--output-format=json", "-"])
            .current_dir(work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting fio")?;
        let pid = child.id();
        started.push(Waiting { child: Some(child) });
        rtrec_host::cgroup::move_to(&j.cgroup, pid)
            .with_context(|| format!("moving fio job '{}' into its group", j.name))?;
    }
    // Every fio is in its group: hand out the jobs, together.
    for (w, j) in started.iter_mut().zip(jobs) {
        let child = w.child.as_mut().expect("started");
        let mut stdin = child.stdin.take().expect("piped");
        stdin
            .write_all(j.text().as_bytes())
            .with_context(|| format!("giving fio job '{}' its job file", j.name))?;
    }
    // Wait for every fio before judging any: a fio killed early would leave
    // its forked job process running in the group.
    let done: Vec<_> = started
        .into_iter()
        .map(|mut w| w.child.take().expect("started").wait_with_output())
        .collect();
    let mut out = Vec::new();
    for (done, j) in done.into_iter().zip(jobs) {
        let done = done.context("waiting for fio")?;
        let stderr = String::from_utf8_lossy(&done.stderr);
        if !done.status.success() {
            bail!(
                "fio job '{}' ended with {}: {}",
                j.name,
                done.status,
                stderr.trim()
            );
        }
        out.push(
            parse(&done.stdout, &j.name, j.write)
                .with_context(|| format!("fio said: {}", stderr.trim()))?,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> FioJob {
        FioJob {
            name: "fio-1".into(),
            file: "/w/a:b/job.dat".into(),
            file_bytes: 256 << 20,
            write: false,
            direct: true,
            request_bytes: 35 << 20,
            runtime: Duration::from_millis(1500),
            cgroup: "/sys/fs/cgroup/blkio/rtrec-1-fio-0".into(),
        }
    }

    #[test]
    fn the_job_file_names_the_libaio_job_and_escapes_colons() {
        let t = job().text();
        assert_eq!(
            t,
            "[fio-1]\nfilename=/w/a\\:b/job.dat\nsize=268435456\nrw=read\nbs=36700160\n\
             direct=1\nioengine=libaio\niodepth=1\ntime_based=1\nruntime=1500ms\n"
        );
    }

    /// A trimmed fio 3.33 output, with a note line before the JSON.
    const OUTPUT: &str = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "fio-1",
      "groupid" : 0,
      "error" : 0,
      "read" : { "io_bytes" : 509607936, "bw_bytes" : 509098837, "runtime" : 1001 },
      "write" : { "io_bytes" : 0, "bw_bytes" : 0, "runtime" : 0 }
    }
  ]
}"#;

    #[test]
    fn fio_json_gives_the_jobs_throughput_in_its_direction() {
        let b = parse(OUTPUT.as_bytes(), "fio-1", false).unwrap();
        assert_eq!(b, 509098837.0);
        assert_eq!(parse(OUTPUT.as_bytes(), "fio-1", true).unwrap(), 0.0);
        let e = parse(OUTPUT.as_bytes(), "fio-2", false).unwrap_err();
        assert!(e.to_string().contains("no job 'fio-2'"), "{e}");
        let failed = OUTPUT.replace("\"error\" : 0", "\"error\" : 5");
        let e = parse(failed.as_bytes(), "fio-1", false).unwrap_err();
        assert!(e.to_string().contains("error 5"), "{e}");
        assert!(parse(b"fio: no such file", "fio-1", false).is_err());
    }
}
