//! The staging and old directories beside OUT (`.OUT.new.XXXXXX`, `.OUT.old.XXXXXX`): their
//! names, their locks, and removing the stale ones a killed run left.

use super::manifest::{check_listed, read_manifest};
use super::owner::read_owner;
use super::removal::{open_dir, remove_listed};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The random part `tempfile` appends to a prefix: six ASCII alphanumerics.
pub(super) const SUFFIX_LEN: usize = 6;

/// The prefix of OUT's staging directory (`.OUT.new.`).
pub(crate) fn new_prefix(base: &str) -> String {
    format!(".{base}.new.")
}

/// The prefix of OUT's previous report, renamed away (`.OUT.old.`).
pub(super) fn old_prefix(base: &str) -> String {
    format!(".{base}.old.")
}

/// Whether `name` is one of OUT's staging or old directories (`base` is OUT's file name).
pub(super) fn is_staging_name(name: &str, base: &str) -> bool {
    [new_prefix(base), old_prefix(base)].iter().any(|prefix| {
        name.strip_prefix(prefix.as_str())
            .is_some_and(|rest| rest.len() == SUFFIX_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
    })
}

/// Takes the exclusive lock of the directory at `path` if it is free: `Ok(Some(handle))` (the
/// lock lasts as long as the handle), `Ok(None)` when another process holds it.
#[cfg(unix)]
pub(crate) fn try_lock_dir(path: &Path) -> std::io::Result<Option<File>> {
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
pub(crate) fn lock_dir(path: &Path) -> std::io::Result<Option<File>> {
    lock_opened(open_dir(path)?, path)
}

/// [`lock_dir`] of a directory already opened.
#[cfg(unix)]
pub(super) fn lock_opened(dir: File, path: &Path) -> std::io::Result<Option<File>> {
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
    let Ok(entries) = std::fs::read_dir(super::super::parent_dir(out)) else {
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
pub(crate) fn remove_stale(out: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    #[cfg(unix)]
    for path in leftover_dirs(out) {
        // Held: a live run's. Taken: nobody's; removed while we hold it (never through a link:
        // see `remove_lockstep_dir`).
        if let Ok(Some(lock)) = try_lock_dir(&path) {
            if remove_lockstep_dir(&path, &lock).is_ok() {
                removed.push(path);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = out;
    removed
}

/// Removes a stale staging or old directory (its lock held, `lock`): only one this tool
/// created, proved by its owner marker ([`read_owner`]: created exclusively by lockstep in that
/// very directory, naming it by device and inode); a directory with a matching name but no
/// valid marker is left alone, whatever it holds (issue 40: a `.OUT.new.backup` of the user's
/// was removed whole, and a manifest forged inside it trusted). Then, never recursively: one
/// with a manifest (an earlier report, exchanged or renamed out of OUT) only if everything in
/// it is listed, and only what is listed ([`remove_listed`]); one without (a staging directory
/// whose run was killed while building it) what its marker's journal lists, entry by entry,
/// leaving anything else and the directory with it.
#[cfg(unix)]
pub(super) fn remove_lockstep_dir(path: &Path, lock: &File) -> std::io::Result<()> {
    let (journal, placed) = read_owner(path, lock).map_err(std::io::Error::other)?;
    // Only at a name a run put it at (created there, or moved there by a run, which records the
    // name before the move): a directory renamed to a leftover's name by someone else (a user
    // keeping a report as `.OUT.old.keep01`) is not a leftover (issue 48). A marker of an older
    // build names no place: its name is all there is to go by.
    let here = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(placed) = placed.filter(|names| !names.contains(&here)) {
        return Err(std::io::Error::other(format!(
            "{}: lockstep put this directory at {}, not here: moved by someone else, left alone",
            path.display(),
            placed.join(", ")
        )));
    }
    match read_manifest(path) {
        Ok(Some(manifest)) => {
            check_listed(path, &manifest).map_err(|(rel, why)| std::io::Error::other(format!("{rel}: {why}")))?;
            remove_listed(path, &manifest)
        }
        Ok(None) => remove_listed(path, &journal),
        Err(why) => Err(std::io::Error::other(why)),
    }
}
