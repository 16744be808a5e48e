//! The hidden directories a report is built and swapped through, beside OUT: `.OUT.new.XXXXXX`
//! (the new report, built then renamed to OUT) and `.OUT.old.XXXXXX` (the previous report,
//! renamed away then removed), where `XXXXXX` is `tempfile`'s six random alphanumerics. A run
//! killed (SIGKILL, power loss) between creating one and removing or renaming it leaves it
//! behind; the next report written to the same OUT removes it ([`remove_stale`]).
//!
//! Which ones are stale: a live run holds an exclusive `flock(2)` on each of its directories
//! for as long as it uses it ([`lock_dir`]; the kernel releases it when the process dies,
//! however it dies). A directory whose lock can be taken has no live owner and is removed; one
//! whose lock is held is left alone. A new staging directory is created, then locked, then
//! checked to still be the directory at its path (a cleaner may have taken the lock in between
//! and removed it: then another is created), so no cleaner ever removes a live one.
//!
//! Only entries of OUT's parent whose name matches the exact pattern are considered, only
//! directories, and symbolic links are never followed (a link with a matching name is left
//! alone). Left out: the `.lockstep-probe.XXXXXX` directory [`super::prepare_out`] creates and
//! removes at once (a kill within that instant leaves it), and platforms other than Unix (where
//! nothing is removed). A file system without `flock` (some network file systems) makes every
//! lock fail: then nothing is removed either.

use std::fs::File;
use std::path::{Path, PathBuf};

/// The random part `tempfile` appends to a prefix: six ASCII alphanumerics.
const SUFFIX_LEN: usize = 6;

/// The prefix of OUT's staging directory (`.OUT.new.`).
pub fn new_prefix(base: &str) -> String {
    format!(".{base}.new.")
}

/// The prefix of OUT's previous report, renamed away (`.OUT.old.`).
pub fn old_prefix(base: &str) -> String {
    format!(".{base}.old.")
}

/// Whether `name` is one of OUT's staging or old directories (`base` is OUT's file name).
pub fn is_staging_name(name: &str, base: &str) -> bool {
    [new_prefix(base), old_prefix(base)].iter().any(|prefix| {
        name.strip_prefix(prefix.as_str())
            .is_some_and(|rest| rest.len() == SUFFIX_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
    })
}

/// Opens the directory at `path` for locking, without following a symbolic link.
#[cfg(unix)]
fn open_dir(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
}

/// Takes the exclusive lock of the directory at `path` if it is free: `Ok(Some(handle))` (the
/// lock lasts as long as the handle), `Ok(None)` when another process holds it.
#[cfg(unix)]
pub fn try_lock_dir(path: &Path) -> std::io::Result<Option<File>> {
    let dir = open_dir(path)?;
    match dir.try_lock() {
        Ok(()) => Ok(Some(dir)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Locks the directory at `path` (waiting for a cleaner that holds it) and checks it is still
/// the directory at `path`; `None` when it was removed or replaced meanwhile.
#[cfg(unix)]
pub fn lock_dir(path: &Path) -> std::io::Result<Option<File>> {
    lock_opened(open_dir(path)?, path)
}

/// [`lock_dir`] of a directory already opened.
#[cfg(unix)]
fn lock_opened(dir: File, path: &Path) -> std::io::Result<Option<File>> {
    use std::os::unix::fs::MetadataExt;
    dir.lock()?;
    let held = dir.metadata()?;
    let same = std::fs::symlink_metadata(path).is_ok_and(|now| now.dev() == held.dev() && now.ino() == held.ino());
    Ok(same.then_some(dir))
}

/// The staging and old directories of `out` that are there now (`.OUT.new.*`, `.OUT.old.*`;
/// links excluded), sorted: after a report is written, one that could not be removed
/// (permissions) or the staging directory of a run writing `out` right now.
pub fn leftover_dirs(out: &Path) -> Vec<PathBuf> {
    let Some(base) = out.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(super::parent_dir(out)) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|name| is_staging_name(name, &base)))
        // `file_type` does not follow a link: a link is never a directory here.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

/// Removes every stale staging or old directory of `out` (see the module's doc); returns the
/// paths removed. Best effort: an entry that cannot be inspected, locked or removed is left.
pub fn remove_stale(out: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    #[cfg(unix)]
    for path in leftover_dirs(out) {
        // Held: a live run's. Taken: nobody's; removed while we hold it (`remove_dir_all`
        // removes a link in place of the directory, never what it points to).
        if let Ok(Some(_lock)) = try_lock_dir(&path) {
            if std::fs::remove_dir_all(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = out;
    removed
}

#[cfg(test)]
mod tests {
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
            std::fs::create_dir_all(dir.join("charts")).unwrap();
            std::fs::write(dir.join("report.json"), "{}").unwrap();
        }
        let held = lock_dir(&live).unwrap().expect("still there");
        assert_eq!(remove_stale(&out), vec![stale.clone()]);
        assert!(!stale.exists());
        assert!(live.join("report.json").is_file());
        drop(held);
        assert_eq!(remove_stale(&out), vec![live.clone()]);
        assert!(!live.exists());
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
}
