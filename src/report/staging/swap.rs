//! Putting a new report in place of OUT: one atomic exchange on Linux, two renames elsewhere.

use super::leftovers::old_prefix;
use super::owner::note_move;
use std::path::{Path, PathBuf};

/// Puts the directory `new` at `out` and the directory at `out` at `new`, in one atomic step:
/// `renameat2(2)` with `RENAME_EXCHANGE` (Linux 3.15; ext4, xfs, btrfs, tmpfs and others). Called
/// as a raw system call rather than through the C library's wrapper, which older C libraries
/// lack: an old kernel answers `ENOSYS`, a file system that cannot exchange `EINVAL`, and the
/// caller falls back to [`swap_by_renames`] ([`exchange_unsupported`]).
#[cfg(target_os = "linux")]
pub fn exchange(new: &Path, out: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let new = std::ffi::CString::new(new.as_os_str().as_bytes())?;
    let out = std::ffi::CString::new(out.as_os_str().as_bytes())?;
    // SAFETY: both pointers are NUL-terminated strings that outlive the call, which only reads
    // them; the other arguments are plain integers.
    let status = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            new.as_ptr(),
            libc::AT_FDCWD,
            out.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if status == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// No atomic exchange outside Linux: always the fallback ([`swap_by_renames`]).
#[cfg(not(target_os = "linux"))]
pub fn exchange(_new: &Path, _out: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Whether [`exchange`] failed because the kernel or the file system cannot exchange (then the
/// two renames of [`swap_by_renames`] do it), not because of the directories themselves.
pub(crate) fn exchange_unsupported(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    if let Some(code) = e.raw_os_error() {
        return [libc::EINVAL, libc::ENOSYS, libc::EOPNOTSUPP, libc::ENOTSUP].contains(&code);
    }
    e.kind() == std::io::ErrorKind::Unsupported
}

/// The fallback of [`exchange`], where the kernel or the file system refuses it: two renames,
/// `out` to a new `.OUT.old.XXXXXX` beside it, then `new` to `out`. Not atomic: killed between
/// the two, `out` is missing (its old report waits in `.OUT.old.XXXXXX`, the new one in `new`,
/// and the next run removes both). On an error `out` is renamed back. Returns where the old
/// report is.
pub(crate) fn swap_by_renames(new: &Path, out: &Path) -> std::io::Result<PathBuf> {
    let base = out
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    // An empty directory with a unique name, that the old report replaces (rename(2) replaces an
    // empty directory).
    let old = tempfile::Builder::new()
        .prefix(&old_prefix(&base))
        .tempdir_in(super::super::parent_dir(out))?
        .keep();
    if let Err(e) = note_move(out, &old).and_then(|()| std::fs::rename(out, &old)) {
        let _ = std::fs::remove_dir(&old);
        return Err(e);
    }
    if let Err(e) = std::fs::rename(new, out) {
        let _ = std::fs::rename(&old, out);
        return Err(e);
    }
    Ok(old)
}
