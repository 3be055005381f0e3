//! `rtrec pool`: prepare, inspect, trim, remove and refill the file pool of a recording
//! directory (see `rtrec_engine::pool`). Preparing is the slow, allocating
//! work; do it while nothing records.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use rtrec_engine::pool::Pool;
use rtrec_engine::reader::{recording_files, verify_file, FileStatus};
use rtrec_engine::SizeFrom;

use crate::cli::{PoolAction, PoolArgs};
use crate::error::usage;
use rtrec_units::format_size;

/// The pool of `dir`, or a usage error that says how to make one.
fn existing(dir: &std::path::Path) -> crate::error::Result<Pool> {
    match Pool::open(dir)? {
        Some(p) => Ok(p),
        None => usage(format!(
            "'{}' has no pool; create one with `rtrec pool prepare {}`",
            dir.display(),
            dir.display()
        )),
    }
}

/// `rtrec pool status` as text: the pool, then each ready file.
fn render_status(st: &rtrec_engine::pool::PoolStatus) -> String {
    let mut s = format!(
        "{}: {} file(s) ready of {} each (size from {}), target {}; {} on disk; {} in preparation\n",
        st.dir.display(),
        st.ready_files,
        format_size(st.file_size),
        st.size_from
            .map_or("an older rtrec, which did not record it", |f| f.name()),
        st.target_files,
        format_size(st.disk_bytes),
        st.preparing_files
    );
    if st.owed_bytes > 0 {
        s += &format!(
            "  {} written by recordings not replaced yet (a file is prepared for each {} owed)\n",
            format_size(st.owed_bytes),
            format_size(st.file_size)
        );
    }
    if st.ready_files > st.target_files {
        s += &format!(
            "  {} more than the target (recycled files): `rtrec pool trim --keep {} {}` gives them back\n",
            st.ready_files - st.target_files,
            st.target_files,
            shell_word(&st.dir)
        );
    }
    for slot in &st.slots {
        s += &format!(
            "  {}  {}  ({} on disk)\n",
            slot.name,
            format_size(slot.bytes),
            format_size(slot.disk_bytes)
        );
    }
    s
}

/// Runs `rtrec pool`.
pub fn run(a: &PoolArgs) -> crate::error::Result<i32> {
    match &a.action {
        PoolAction::Prepare {
            dir,
            files,
            file_size,
        } => prepare(&dir.path(), *files, file_size.bytes()),
        PoolAction::Status { dir, json } => {
            let st = existing(&dir.path())?.status()?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&st)?);
            } else {
                print!("{}", render_status(&st));
            }
            Ok(0)
        }
        PoolAction::Trim { dir, keep } => {
            let pool = existing(&dir.path())?;
            let (pool, t) = pool.trim(*keep)?;
            println!(
                "removed {} file(s), {} freed; target now {} file(s) of {}",
                t.removed_files,
                format_size(t.freed_bytes),
                pool.target_files(),
                format_size(pool.file_size())
            );
            Ok(0)
        }
        PoolAction::Remove { dir } => {
            let pool = existing(&dir.path())?;
            let shown = pool.dir().display().to_string();
            let t = pool.remove()?;
            println!(
                "removed {shown}: {} file(s), {} freed",
                t.removed_files,
                format_size(t.freed_bytes)
            );
            Ok(0)
        }
        PoolAction::Recycle {
            dir,
            files,
            all,
            force,
        } => recycle(dir, files, *all, *force),
    }
}

/// `rtrec pool prepare`: a pool of `files` files of `size` bytes in `dir`
/// (made, resized or grown to it), with a progress bar on a terminal.
fn prepare(dir: &Path, files: u32, size: u64) -> crate::error::Result<i32> {
    if size < 64 * 1024 {
        return usage("--file-size: pool files must be at least 64KiB");
    }
    if files == 0 {
        return usage("--files: the pool needs at least 1 file");
    }
    let (pool, resized) = Pool::open_resized_from(dir, size, files, SizeFrom::PoolPrepare)?;
    if let Some(r) = resized {
        eprintln!("rtrec pool: {r}");
    }
    // The target becomes --files (ready files beyond it stay:
    // `rtrec pool trim` gives them back).
    let pool = if pool.target_files() == files {
        pool
    } else {
        pool.set_target(files)?
    };
    #[cfg(feature = "progress-bar")]
    let mut bar = std::io::stderr().is_terminal().then(|| {
        indicatif::ProgressBar::new(pool.target_files() as u64).with_style(
            indicatif::ProgressStyle::with_template("preparing {bar:30} {pos}/{len} files")
                .expect("valid template"),
        )
    });
    #[cfg(not(feature = "progress-bar"))]
    let mut bar = std::io::stderr()
        .is_terminal()
        .then(crate::progress::Line::default);
    let n = pool.prepare(|done, todo| {
        if let Some(b) = &mut bar {
            #[cfg(feature = "progress-bar")]
            {
                b.set_length(todo as u64);
                b.set_position(done as u64);
            }
            #[cfg(not(feature = "progress-bar"))]
            b.show(&format!("preparing {done}/{todo} files"));
        }
    })?;
    if let Some(b) = &mut bar {
        #[cfg(feature = "progress-bar")]
        b.finish_and_clear();
        #[cfg(not(feature = "progress-bar"))]
        b.finish();
    }
    let st = pool.status()?;
    println!(
        "prepared {n} file(s); {} of {} ready, {} each, in {}",
        st.ready_files,
        st.target_files,
        format_size(st.file_size),
        st.dir.display()
    );
    Ok(0)
}

/// `dir` as one shell word for a hint to copy ([`rtrec_units::shell_word`]).
pub fn shell_word(dir: &Path) -> String {
    rtrec_units::shell_word(&dir.display().to_string())
}

/// Why `recycle --all` left a recording file alone.
#[derive(Default)]
struct Left {
    /// Not finished (recording now, or interrupted and not recovered).
    unfinished: u32,
    /// Not the pool's file size (its tail was given back).
    other_size: u32,
}

/// `rtrec pool recycle`: `files` (and with `all` every finished,
/// pool-sized recording in `dir`) renamed into the pool of `dir`. With
/// `all`, one directory named where the files go is taken as the directory
/// (`rtrec pool recycle p --all`), as `status` and `trim` take it.
fn recycle(dir: &Path, files: &[PathBuf], all: bool, force: bool) -> crate::error::Result<i32> {
    let (dir, files) = match files {
        [one] if all && one.is_dir() => (one.as_path(), &[][..]),
        _ => (dir, files),
    };
    if let Some(d) = files.iter().find(|f| f.is_dir()) {
        return usage(format!(
            "'{}' is a directory: `rtrec pool recycle --all {}` recycles its finished recordings (FILE names recording files)",
            d.display(),
            shell_word(d)
        ));
    }
    let Some(pool) = Pool::open(dir)? else {
        return usage(format!("'{}' has no pool to recycle into", dir.display()));
    };
    let mut targets = files.to_vec();
    let mut left = Left::default();
    if all {
        for f in recording_files(dir)? {
            // Only finished, pool-sized recordings; others are left alone.
            let finished = verify_file(&f)
                .map(|r| {
                    matches!(
                        r.status,
                        FileStatus::Complete | FileStatus::Aborted | FileStatus::Interrupted
                    )
                })
                .unwrap_or(false);
            let sized = std::fs::metadata(&f)
                .map(|m| m.len() == pool.file_size())
                .unwrap_or(false);
            match (finished, sized) {
                (true, true) => targets.push(f),
                (false, _) => left.unfinished += 1,
                (true, false) => left.other_size += 1,
            }
        }
    }
    for f in &targets {
        let slot = pool.recycle(f, force)?;
        println!("recycled {} -> {}", f.display(), slot.display());
    }
    if all && (left.unfinished > 0 || left.other_size > 0 || targets.is_empty()) {
        println!("{}", left_alone(dir, &left, pool.file_size()));
    }
    let st = pool.status()?;
    println!("{} of {} files ready", st.ready_files, st.target_files);
    Ok(0)
}

/// The line that says what `recycle --all` did not take, and why.
fn left_alone(dir: &Path, left: &Left, file_size: u64) -> String {
    if left.unfinished == 0 && left.other_size == 0 {
        return format!(
            "nothing to recycle: '{}' holds no recording file",
            dir.display()
        );
    }
    let mut why = Vec::new();
    if left.unfinished > 0 {
        why.push(format!(
            "{} unfinished (recording now, or interrupted: `rtrec recover {}` closes those)",
            left.unfinished,
            shell_word(dir)
        ));
    }
    if left.other_size > 0 {
        why.push(format!(
            "{} not of the pool's file size {} (their unused tail was given back)",
            left.other_size,
            format_size(file_size)
        ));
    }
    format!("left alone in '{}': {}", dir.display(), why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycle_all_says_what_it_left_alone_and_why() {
        let dir = Path::new("p");
        let none = left_alone(dir, &Left::default(), 1 << 20);
        assert_eq!(none, "nothing to recycle: 'p' holds no recording file");
        let both = Left {
            unfinished: 1,
            other_size: 2,
        };
        let line = left_alone(dir, &both, 1 << 20);
        assert!(
            line.contains("1 unfinished") && line.contains("`rtrec recover p`"),
            "{line}"
        );
        assert!(
            line.contains("2 not of the pool's file size 1 MiB"),
            "{line}"
        );
    }
}
