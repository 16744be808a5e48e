//! The staging of report directories, tested on real directories.

use super::leftovers::is_staging_name;
#[cfg(unix)]
use super::leftovers::lock_opened;
use super::manifest::read_manifest;
#[cfg(unix)]
use super::removal::open_dir;
use super::*;

#[test]
fn leftover_dirs_names_the_hidden_directories_of_this_out_only() {
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for name in [
        ".out.old.abc123",
        ".out.new.XYZ789",
        ".other.old.abc123",
        ".out.old.toolong1",
        "keep",
    ] {
        std::fs::create_dir(parent.path().join(name)).unwrap();
    }
    let names: Vec<String> = leftover_dirs(&out)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [".out.new.XYZ789", ".out.old.abc123"]);
}

#[test]
fn only_the_exact_pattern_of_this_out_is_a_staging_name() {
    for name in [".out.new.a1B2c3", ".out.old.zzzzzz"] {
        assert!(is_staging_name(name, "out"), "{name}");
    }
    for name in [
        ".out.new.a1B2c",
        ".out.new.a1B2c34",
        ".out.new.a1B2c-",
        ".out.tmp.a1B2c3",
        ".other.new.a1B2c3",
        "out.new.a1B2c3",
        ".out.new.",
        ".out.new.new.abc123",
    ] {
        assert!(!is_staging_name(name, "out"), "{name}");
    }
    // OUT named `out.new` has its own.
    assert!(is_staging_name(".out.new.new.abc123", "out.new"));
}

#[cfg(unix)]
#[test]
fn a_locked_directory_is_left_and_an_unlocked_one_removed() {
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("out");
    let stale = parent.path().join(".out.new.abc123");
    let live = parent.path().join(".out.old.def456");
    for dir in [&stale, &live] {
        std::fs::create_dir(dir).unwrap();
        let mut journal = Journal::create(dir).unwrap();
        std::fs::create_dir_all(dir.join("charts")).unwrap();
        for file in ["report.json", "charts/x.svg"] {
            std::fs::write(dir.join(file), "{}").unwrap();
            journal.record(file).unwrap();
        }
    }
    // Killed between writing a file and recording it: that file is not known to be
    // lockstep's, and stays with its directory.
    let unrecorded = parent.path().join(".out.new.ghi789");
    std::fs::create_dir(&unrecorded).unwrap();
    Journal::create(&unrecorded).unwrap();
    std::fs::write(unrecorded.join("report.json"), "{}").unwrap();
    let held = lock_dir(&live).unwrap().expect("still there");
    assert_eq!(remove_stale(&out), vec![stale.clone()]);
    assert!(!stale.exists());
    assert!(live.join("report.json").is_file());
    assert!(unrecorded.join("report.json").is_file() && unrecorded.join(OWNER_FILE).is_file());
    drop(held);
    assert_eq!(remove_stale(&out), vec![live.clone()]);
    assert!(!live.exists());
}

#[cfg(unix)]
#[test]
fn a_directory_without_lockstep_s_own_marker_is_never_removed() {
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("out");
    // The user's: a matching name, a forged manifest listing everything in it.
    let backup = report_dir(parent.path(), ".out.new.backup");
    // A marker copied from another directory (a `cp -r` of a staging directory).
    let copy = parent.path().join(".out.old.copied");
    std::fs::create_dir(&copy).unwrap();
    let original = parent.path().join("orig");
    std::fs::create_dir(&original).unwrap();
    Journal::create(&original).unwrap();
    std::fs::copy(original.join(OWNER_FILE), copy.join(OWNER_FILE)).unwrap();
    std::fs::write(copy.join("report.json"), "mine").unwrap();
    // A marker that is a link to a good one.
    let linked = parent.path().join(".out.new.linked");
    std::fs::create_dir(&linked).unwrap();
    std::os::unix::fs::symlink(original.join(OWNER_FILE), linked.join(OWNER_FILE)).unwrap();
    assert!(remove_stale(&out).is_empty());
    assert!(backup.join("report.json").is_file() && backup.join(MANIFEST_FILE).is_file());
    assert_eq!(std::fs::read_to_string(copy.join("report.json")).unwrap(), "mine");
    assert!(linked.join(OWNER_FILE).is_symlink());
}

#[cfg(unix)]
#[test]
fn a_lock_on_a_directory_removed_meanwhile_is_refused() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join(".out.new.abc123");
    std::fs::create_dir(&dir).unwrap();
    // A cleaner holds the lock: another try fails, and a waiting lock waits.
    let cleaner = try_lock_dir(&dir).unwrap().expect("free");
    assert!(try_lock_dir(&dir).unwrap().is_none());
    let waiting = {
        let (opened, dir) = (open_dir(&dir).unwrap(), dir.clone());
        std::thread::spawn(move || lock_opened(opened, &dir).map(|lock| lock.is_some()))
    };
    // The cleaner removes it (and something else takes the name), then lets go.
    std::fs::remove_dir(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    drop(cleaner);
    assert!(
        !waiting.join().unwrap().unwrap(),
        "the locked directory is not the one at the path"
    );
    assert!(lock_dir(&dir).unwrap().is_some());
}

#[cfg(unix)]
#[test]
fn a_link_is_never_followed() {
    let parent = tempfile::tempdir().unwrap();
    let target = parent.path().join("precious");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep"), "mine").unwrap();
    let link = parent.path().join(".out.new.abc123");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(try_lock_dir(&link).is_err());
    assert!(remove_stale(&parent.path().join("out")).is_empty());
    assert!(link.is_symlink() && target.join("keep").is_file());
}

/// A report directory as lockstep leaves it: two files, a chart, a run, and the manifest.
fn report_dir(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(dir.join("charts")).unwrap();
    std::fs::create_dir_all(dir.join("runs/a")).unwrap();
    for file in ["report.json", "summary.md", "charts/x.svg", "runs/a/history.jsonl"] {
        std::fs::write(dir.join(file), file).unwrap();
    }
    let manifest = Manifest::of_dir(&dir, &super::super::Report::new(None)).unwrap();
    std::fs::write(dir.join(MANIFEST_FILE), manifest.to_json()).unwrap();
    dir
}

fn manifest_of(dir: &Path) -> Manifest {
    read_manifest(dir).unwrap().expect("a manifest")
}

#[test]
fn the_manifest_lists_every_file_and_directory_itself_included() {
    let parent = tempfile::tempdir().unwrap();
    let dir = report_dir(parent.path(), "out");
    let manifest = manifest_of(&dir);
    assert_eq!(manifest.format, MANIFEST_FORMAT);
    assert_eq!(manifest.dirs, ["charts", "runs", "runs/a"]);
    assert_eq!(
        manifest.files,
        [
            "charts/x.svg",
            "manifest.json",
            "report.json",
            "runs/a/history.jsonl",
            "summary.md"
        ]
    );
    assert!(matches!(existing(&dir), Ok(Existing::Report(m)) if m == manifest));
    assert!(matches!(
        existing(&parent.path().join("nothing")),
        Ok(Existing::Missing)
    ));
    // Below a file: missing as well (the parent's check then says it cannot be created).
    assert!(matches!(existing(&dir.join("report.json/x")), Ok(Existing::Missing)));
    std::fs::create_dir(parent.path().join("empty")).unwrap();
    assert!(matches!(existing(&parent.path().join("empty")), Ok(Existing::Empty)));
}

#[cfg(unix)]
#[test]
fn anything_unlisted_or_changed_in_kind_is_refused_by_name() {
    let parent = tempfile::tempdir().unwrap();
    let dir = report_dir(parent.path(), "out");
    let refused = |dir: &Path| match existing(dir) {
        Err(e) => e,
        Ok(found) => panic!("accepted: {found:?}"),
    };
    // An extra file deep inside; an empty directory; a listed file become a link.
    std::fs::write(dir.join("runs/a/notes.txt"), "mine").unwrap();
    let err = refused(&dir);
    assert!(err.contains("runs/a/notes.txt was not written by lockstep"), "{err}");
    std::fs::remove_file(dir.join("runs/a/notes.txt")).unwrap();
    std::fs::create_dir(dir.join("charts/mine")).unwrap();
    assert!(refused(&dir).contains("charts/mine was not written"));
    std::fs::remove_dir(dir.join("charts/mine")).unwrap();
    std::fs::remove_file(dir.join("summary.md")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("summary.md")).unwrap();
    let err = refused(&dir);
    assert!(
        err.contains("summary.md was not written") && err.contains("now a symbolic link"),
        "{err}"
    );
    // A listed file missing is fine: nothing of anyone's is at stake.
    std::fs::remove_file(dir.join("summary.md")).unwrap();
    assert!(existing(&dir).is_ok());
    // No manifest: the first entry is named.
    std::fs::remove_file(dir.join(MANIFEST_FILE)).unwrap();
    assert!(refused(&dir).contains("charts was not written by lockstep"));
    // A manifest that is a link, to a valid manifest elsewhere.
    let other = report_dir(parent.path(), "other");
    std::os::unix::fs::symlink(other.join(MANIFEST_FILE), dir.join(MANIFEST_FILE)).unwrap();
    let err = refused(&dir);
    assert!(
        err.contains("manifest.json was not written") && err.contains("symbolic link"),
        "{err}"
    );
    // OUT itself a link.
    let link = parent.path().join("link");
    std::os::unix::fs::symlink(&other, &link).unwrap();
    assert!(refused(&link).contains("symbolic link"));
}

#[test]
fn a_manifest_listing_a_path_outside_or_twice_is_not_lockstep_s() {
    let good = Manifest::of_dir(tempfile::tempdir().unwrap().path(), &super::super::Report::new(None)).unwrap();
    assert!(Manifest::parse(&good.to_json()).is_ok());
    for bad in ["../x", "/etc/passwd", "a//b", "./a", "a/..", "", "a\\b"] {
        let mut m = good.clone();
        m.files.push(bad.to_string());
        let err = Manifest::parse(&m.to_json()).unwrap_err();
        assert!(err.contains("not a path inside"), "{bad}: {err}");
    }
    let mut twice = good.clone();
    twice.dirs.push(MANIFEST_FILE.to_string());
    assert!(Manifest::parse(&twice.to_json()).unwrap_err().contains("twice"));
    let text = good.to_json().replace(MANIFEST_FORMAT, "lockstep-report");
    assert!(Manifest::parse(&text).unwrap_err().contains("format"));
    assert!(Manifest::parse("{\"hello\": 1}").is_err());
}

#[cfg(unix)]
#[test]
fn removal_removes_what_is_listed_only_and_never_through_a_link() {
    let parent = tempfile::tempdir().unwrap();
    let dir = report_dir(parent.path(), "out");
    let manifest = manifest_of(&dir);
    // Everything listed: all gone.
    remove_listed(&dir, &manifest).unwrap();
    assert!(!dir.exists());
    // A listed directory swapped for a link to someone's directory holding a file of a
    // listed name: nothing of theirs is removed.
    let dir = report_dir(parent.path(), "out");
    let theirs = parent.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("history.jsonl"), "mine").unwrap();
    std::fs::remove_dir_all(dir.join("runs/a")).unwrap();
    std::os::unix::fs::symlink(&theirs, dir.join("runs/a")).unwrap();
    assert!(remove_listed(&dir, &manifest).is_err());
    assert_eq!(std::fs::read_to_string(theirs.join("history.jsonl")).unwrap(), "mine");
    assert!(dir.join(MANIFEST_FILE).is_file(), "the manifest stays until the end");
    // An unlisted file: kept, with its directory and the manifest.
    let dir = report_dir(parent.path(), "again");
    std::fs::write(dir.join("charts/keep.txt"), "mine").unwrap();
    assert!(remove_listed(&dir, &manifest).is_err());
    assert_eq!(std::fs::read_to_string(dir.join("charts/keep.txt")).unwrap(), "mine");
    assert!(dir.join(MANIFEST_FILE).is_file() && !dir.join("report.json").exists());
    // And a stale directory like it is left by the cleaner.
    let stale = parent.path().join(".again.old.abc123");
    std::fs::rename(&dir, &stale).unwrap();
    assert!(remove_stale(&parent.path().join("again")).is_empty());
    assert!(stale.join("charts/keep.txt").is_file());
}

#[test]
fn a_file_written_into_a_report_is_recorded_with_its_directory() {
    let parent = tempfile::tempdir().unwrap();
    let dir = report_dir(parent.path(), "out");
    record_in_manifest(&dir.join("live.json")).unwrap();
    record_in_manifest(&dir.join("counterexamples/x.toml")).unwrap();
    // Listed already, or listed as the other kind: unchanged.
    record_in_manifest(&dir.join("report.json")).unwrap();
    record_in_manifest(&dir.join("charts")).unwrap();
    // Two levels below: not a report's file.
    record_in_manifest(&dir.join("a/b/c.txt")).unwrap();
    let manifest = manifest_of(&dir);
    assert_eq!(manifest.dirs, ["charts", "counterexamples", "runs", "runs/a"]);
    assert!(manifest.files.contains(&"live.json".to_string()));
    assert!(manifest.files.contains(&"counterexamples/x.toml".to_string()));
    assert!(!manifest.files.iter().any(|f| f.contains("c.txt") || f == "charts"));
    // Beside a directory without a manifest: nothing written.
    record_in_manifest(&parent.path().join("loose.txt")).unwrap();
    assert!(!parent.path().join(MANIFEST_FILE).exists());
}

#[cfg(target_os = "linux")]
#[test]
fn exchange_trades_two_directories_in_one_step() {
    let parent = tempfile::tempdir().unwrap();
    let (a, b) = (report_dir(parent.path(), "a"), parent.path().join("b"));
    std::fs::create_dir(&b).unwrap();
    std::fs::write(b.join("new"), "new").unwrap();
    exchange(&b, &a).unwrap();
    assert!(a.join("new").is_file() && b.join("report.json").is_file());
    // Missing on one side: an error, not a fallback.
    let e = exchange(&parent.path().join("missing"), &a).unwrap_err();
    assert!(!exchange_unsupported(&e), "{e}");
}

#[cfg(unix)]
#[test]
fn only_errors_of_the_kernel_or_file_system_fall_back_to_two_renames() {
    for code in [libc::EINVAL, libc::ENOSYS, libc::EOPNOTSUPP] {
        assert!(exchange_unsupported(&std::io::Error::from_raw_os_error(code)), "{code}");
    }
    for code in [libc::ENOENT, libc::EACCES, libc::EXDEV, libc::EBUSY] {
        assert!(
            !exchange_unsupported(&std::io::Error::from_raw_os_error(code)),
            "{code}"
        );
    }
    assert!(exchange_unsupported(&std::io::ErrorKind::Unsupported.into()));
}

#[test]
fn the_fallback_swaps_by_two_renames_and_says_where_the_old_report_is() {
    let parent = tempfile::tempdir().unwrap();
    let out = report_dir(parent.path(), "out");
    let new = parent.path().join(".out.new.abc123");
    std::fs::create_dir(&new).unwrap();
    std::fs::write(new.join("report.json"), "new").unwrap();
    let old = swap_by_renames(&new, &out).unwrap();
    assert_eq!(std::fs::read_to_string(out.join("report.json")).unwrap(), "new");
    assert!(!new.exists());
    let name = old.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(".out.old.") && is_staging_name(name, "out"), "{name}");
    assert_eq!(std::fs::read_to_string(old.join("report.json")).unwrap(), "report.json");
    // The old report is removed as any: by its manifest.
    remove_listed(&old, &manifest_of(&old)).unwrap();
    assert!(!old.exists());
    // A failed second rename puts OUT back.
    let err = swap_by_renames(&parent.path().join("missing"), &out).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(std::fs::read_to_string(out.join("report.json")).unwrap(), "new");
    assert!(leftover_dirs(&out).is_empty(), "{:?}", leftover_dirs(&out));
}
