//! A loop-mounted ext4 leaves nothing behind: not on drop, not during a
//! panic, not when its owner is SIGKILLed, not when it is busy.

mod common;

use rtrec_host::features::{self, Feature};
use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};
use rtrec_host::{iosched, restore_stale_in, GlobalLock};

/// Small and quick to format.
fn small() -> LoopFsOptions {
    LoopFsOptions {
        size: 64 << 20,
        journal_mib: 4,
        ..LoopFsOptions::default()
    }
}

/// Whether journal file `path` (shared by the tests of this process) still
/// names `image`.
fn journal_mentions(path: &Path, image: &Path) -> bool {
    fs::read_to_string(path).is_ok_and(|s| s.contains(image.to_str().unwrap()))
}

/// What a LoopFs consists of, to check after it is gone.
struct Parts {
    mount_point: PathBuf,
    device: PathBuf,
    image: PathBuf,
}

impl Parts {
    fn of(fs: &LoopFs) -> Parts {
        Parts {
            mount_point: fs.path().to_owned(),
            device: fs.device().to_owned(),
            image: fs.image().to_owned(),
        }
    }

    fn assert_gone(&self) {
        assert!(
            !is_mounted(&self.mount_point),
            "{} still mounted",
            self.mount_point.display()
        );
        let image = self.image.to_str().unwrap();
        assert!(
            eventually(|| !loop_backing_file(&self.device).is_some_and(|b| b.starts_with(image))),
            "{} still attached",
            self.device.display()
        );
        assert!(!self.image.exists());
        assert!(!self.mount_point.parent().unwrap().exists());
    }
}

#[test]
fn a_loop_mounted_ext4_has_the_studys_options_and_is_removed_on_drop() {
    if !require_privileged("a_loop_mounted_ext4_has_the_studys_options_and_is_removed_on_drop") {
        return;
    }
    let journal = shared_journal();
    let journal_file = journal.path();
    let fs = LoopFs::create_with(journal, &small()).unwrap();
    let parts = Parts::of(&fs);
    assert!(journal_mentions(&journal_file, &parts.image));

    assert!(is_mounted(fs.path()));
    let options = fs.mount_options().unwrap();
    for option in ["noatime", "lazytime", "data=ordered"] {
        assert!(
            options.split(',').any(|o| o == option),
            "{option} not in {options}"
        );
    }
    assert_eq!(
        loop_backing_file(fs.device()).unwrap(),
        fs.image().to_str().unwrap()
    );
    fs::write(fs.path().join("data"), vec![1u8; 1 << 20]).unwrap();

    drop(fs);
    parts.assert_gone();
    assert!(!journal_mentions(&journal_file, &parts.image));
}

#[test]
fn a_loop_mounted_ext4_is_removed_when_its_owner_panics() {
    if !require_privileged("a_loop_mounted_ext4_is_removed_when_its_owner_panics") {
        return;
    }
    let panicked = std::thread::spawn(|| {
        let fs = LoopFs::create_with(shared_journal(), &small()).unwrap();
        std::panic::panic_any(Parts::of(&fs));
    })
    .join()
    .unwrap_err();

    let parts = panicked.downcast::<Parts>().unwrap();
    parts.assert_gone();
    assert!(!journal_mentions(&shared_journal().path(), &parts.image));
}

#[test]
fn a_busy_loop_mount_is_detached_lazily_and_freed_when_its_last_file_closes() {
    if !require_privileged(
        "a_busy_loop_mount_is_detached_lazily_and_freed_when_its_last_file_closes",
    ) {
        return;
    }
    let fs = LoopFs::create_with(shared_journal(), &small()).unwrap();
    let parts = Parts::of(&fs);
    let open_file = fs::File::create(fs.path().join("busy")).unwrap();

    fs.remove().unwrap();
    assert!(!is_mounted(&parts.mount_point));
    assert!(!parts.image.exists());

    drop(open_file);
    parts.assert_gone();
}

const LOOP_CHILD: &str = "child_mounts_a_loop_ext4_and_waits_to_be_killed";

#[test]
fn child_mounts_a_loop_ext4_and_waits_to_be_killed() {
    if !is_child(LOOP_CHILD) {
        return;
    }
    let fs = LoopFs::create(&small()).unwrap();
    let (path, device, image) = (fs.path(), fs.device(), fs.image());
    ready_and_wait(&[
        path.to_str().unwrap(),
        device.to_str().unwrap(),
        image.to_str().unwrap(),
    ]);
}

#[test]
fn a_loop_mounted_ext4_of_a_process_killed_with_sigkill_is_removed_by_restore_stale() {
    if !require_privileged(
        "a_loop_mounted_ext4_of_a_process_killed_with_sigkill_is_removed_by_restore_stale",
    ) {
        return;
    }
    let state = private_state_dir();
    let child = spawn_child(LOOP_CHILD, state.path(), &[]);
    let [mount_point, device, image] = &child.ready[..] else {
        panic!("{:?}", child.ready)
    };
    let parts = Parts {
        mount_point: mount_point.into(),
        device: device.into(),
        image: image.into(),
    };
    assert!(is_mounted(&parts.mount_point));
    let pid = child.pid();

    child.kill();
    // Still there: nobody has cleaned up yet.
    assert!(is_mounted(&parts.mount_point));
    let report = restore_stale_in(state.path()).unwrap();

    parts.assert_gone();
    assert!(journal_files(state.path()).is_empty());
    let line = |what: &str, path: &Path| format!("{what} {} (left by pid {pid})", path.display());
    assert_eq!(
        report.restored,
        vec![
            format!(
                "detach {} ({}) (left by pid {pid})",
                parts.device.display(),
                parts.image.display()
            ),
            line("unmount", &parts.mount_point),
            line("remove directory", &parts.mount_point),
            line("remove file", &parts.image),
            line("remove directory", parts.mount_point.parent().unwrap()),
        ],
        "{report}"
    );
}

#[test]
fn the_io_scheduler_of_a_loop_device_is_put_back() {
    if !require_privileged("the_io_scheduler_of_a_loop_device_is_put_back") {
        return;
    }
    let fs = LoopFs::create_with(shared_journal(), &small()).unwrap();
    let device = fs.device().to_str().unwrap();
    let lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();
    let found = iosched::read_scheduler(device).unwrap();
    let other = if found == "mq-deadline" {
        "none"
    } else {
        "mq-deadline"
    };

    iosched::set_scheduler(lock.journal(), device, other).unwrap();
    assert_eq!(iosched::read_scheduler(device).unwrap(), other);

    lock.journal().undo_all().unwrap();
    assert_eq!(iosched::read_scheduler(device).unwrap(), found);
}

#[test]
fn bfq_tunables_are_put_back() {
    let name = "bfq_tunables_are_put_back";
    if !require_privileged(name) || !features::require(name, &[Feature::Bfq]) {
        return;
    }
    let fs = LoopFs::create_with(shared_journal(), &small()).unwrap();
    let device = fs.device().to_str().unwrap();
    let lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();
    let found = iosched::read_scheduler(device).unwrap();
    iosched::set_scheduler(lock.journal(), device, "bfq").unwrap();
    let strict = iosched::read_tunable(device, "strict_guarantees").unwrap();
    let flipped = if strict == "0" { "1" } else { "0" };
    iosched::set_tunable(lock.journal(), device, "strict_guarantees", flipped).unwrap();
    assert_eq!(
        iosched::read_tunable(device, "strict_guarantees").unwrap(),
        flipped
    );
    let names: Vec<String> = iosched::bfq_tunables(device)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, iosched::BFQ_TUNABLES);
    lock.journal().undo_all().unwrap();
    assert_eq!(iosched::read_scheduler(device).unwrap(), found);
}

/// A group with a member (and, where the kernel has BFQ's group support, a
/// weight): the undo moves the member out and removes the group. Needs
/// only an I/O hierarchy, so it runs on kernels without BFQ too.
#[test]
fn an_io_cgroup_with_a_member_is_put_back() {
    let name = "an_io_cgroup_with_a_member_is_put_back";
    if !require_privileged(name) || !features::require(name, &[Feature::IoCgroup]) {
        return;
    }
    let lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();
    let h = rtrec_host::cgroup::detect().expect("an I/O cgroup hierarchy");
    let g = rtrec_host::cgroup::Group::create(lock.journal(), &h, "test").unwrap();
    if features::detect(Feature::BfqCgroup).is_ok() {
        g.set_weight(300).unwrap();
    }
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    g.add_process(child.id()).unwrap();
    let path = g.path().to_path_buf();
    assert!(fs::read_to_string(path.join("cgroup.procs"))
        .unwrap()
        .contains(&child.id().to_string()));

    lock.journal().undo_all().unwrap();
    assert!(!path.exists(), "{} is left", path.display());
    let _ = child.kill();
    let _ = child.wait();
}
