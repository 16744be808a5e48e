//! Removing a report directory as its manifest lists it, entry by entry, never recursively and
//! never through a link.

use super::manifest::{sorted_names, Kind, Manifest, MANIFEST_FILE};
use super::owner::OWNER_FILE;
use std::fs::File;
use std::path::Path;

/// Opens the directory at `path` for locking, without following a symbolic link.
#[cfg(unix)]
pub(super) fn open_dir(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
}

/// Removes the report directory `root` as `manifest` lists it: the listed files (each only if
/// it is still a regular file), then the listed directories deepest first (each only if it is
/// still a directory, and empty), then the manifest, then `root`. Nothing is removed
/// recursively and no link is followed (each entry is reached through directories opened
/// without following links), so an entry lockstep did not write survives: the directory holding
/// it is then left, with its manifest, and this returns the error.
pub(crate) fn remove_listed(root: &Path, manifest: &Manifest) -> std::io::Result<()> {
    let depth = |rel: &&String| std::cmp::Reverse(rel.matches('/').count());
    let mut files: Vec<&String> = manifest
        .files
        .iter()
        .filter(|f| *f != MANIFEST_FILE && *f != OWNER_FILE)
        .collect();
    let mut dirs: Vec<&String> = manifest.dirs.iter().collect();
    files.sort_by_key(depth);
    dirs.sort_by_key(depth);
    for rel in files {
        remove_entry(root, rel, Kind::File)?;
    }
    for rel in dirs {
        remove_entry(root, rel, Kind::Dir)?;
    }
    // Last: until everything else is gone, what remains stays recognisable as lockstep's (an
    // unlisted entry left at the top keeps the marker and the manifest with it).
    if let Some(other) = sorted_names(root)?
        .iter()
        .find(|name| ![MANIFEST_FILE, OWNER_FILE].iter().any(|ours| name.as_os_str() == *ours))
    {
        return Err(std::io::Error::other(format!(
            "{}: not listed, left in place",
            other.to_string_lossy()
        )));
    }
    if manifest.files.iter().any(|f| f == OWNER_FILE) {
        remove_entry(root, OWNER_FILE, Kind::File)?;
    }
    remove_entry(root, MANIFEST_FILE, Kind::File)?;
    std::fs::remove_dir(root)
}

/// Removes `root/rel` if it is `kind` (a file or a directory); nothing when it is gone already.
#[cfg(unix)]
pub(super) fn remove_entry(root: &Path, rel: &str, kind: Kind) -> std::io::Result<()> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    let mut parts: Vec<&str> = rel.split('/').collect();
    let name = std::ffi::CString::new(parts.pop().unwrap_or_default())?;
    let mut dir = open_dir(root)?;
    for part in parts {
        let part = std::ffi::CString::new(part)?;
        // SAFETY: `dir` is an open descriptor and `part` a NUL-terminated string, both alive for
        // the call; a descriptor returned is owned by the `File` made of it, once.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                part.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return if gone(&e) { Ok(()) } else { Err(e) };
        }
        dir = unsafe { File::from_raw_fd(fd) };
    }
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: as above; `stat` is written by the call before it is read, and read only on success.
    if unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            stat.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    } != 0
    {
        let e = std::io::Error::last_os_error();
        return if gone(&e) { Ok(()) } else { Err(e) };
    }
    let mode = unsafe { stat.assume_init() }.st_mode & libc::S_IFMT;
    let (want, flags) = match kind {
        Kind::Dir => (libc::S_IFDIR, libc::AT_REMOVEDIR),
        _ => (libc::S_IFREG, 0),
    };
    if mode != want {
        return Err(std::io::Error::other(format!(
            "{rel}: not {kind} any more, left in place"
        )));
    }
    // SAFETY: as above. A file swapped for a link since the look above: the link itself is
    // removed, never what it points to.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) } != 0 {
        let e = std::io::Error::last_os_error();
        return if gone(&e) { Ok(()) } else { Err(e) };
    }
    Ok(())
}

/// Removes `root/rel` if it is `kind`, by path (elsewhere than Unix: no descriptor-relative
/// calls; each parent is checked not to be a link first).
#[cfg(not(unix))]
pub(super) fn remove_entry(root: &Path, rel: &str, kind: Kind) -> std::io::Result<()> {
    let mut path = root.to_path_buf();
    for part in rel.split('/') {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
            Ok(meta) if path.as_os_str().len() < root.join(rel).as_os_str().len() && Kind::of(&meta) != Kind::Dir => {
                return Err(std::io::Error::other(format!(
                    "{rel}: a parent is not a directory any more"
                )))
            }
            Ok(_) => {}
        }
    }
    let now = Kind::of(&std::fs::symlink_metadata(&path)?);
    match (kind, now) {
        (Kind::Dir, Kind::Dir) => std::fs::remove_dir(&path),
        (Kind::File, Kind::File) => std::fs::remove_file(&path),
        _ => Err(std::io::Error::other(format!(
            "{rel}: not {kind} any more, left in place"
        ))),
    }
}
