//! Writing one file atomically: a new temporary file beside it, synced, renamed into place — the
//! CLI's summaries, histories and counterexamples, and the checks that such a write can happen
//! before anything runs. A file written into a report directory is recorded in its manifest
//! ([`super::staging`]).

use super::staging;
use serde::Serialize;
use std::path::Path;

/// Refuses a `path` that exists and is not a regular file: an atomic write renames a new file
/// over it, which would replace a symbolic link, a device (`/dev/stdout`, `/dev/null`), a FIFO or a
/// socket with a plain file.
fn check_replaceable(path: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "a device, FIFO or socket"
    };
    Err(format!(
        "{}: is {what}, not a regular file; the output is written to a new file renamed into place, \
         which would replace it: give the path of a regular file or of a new one",
        path.display()
    ))
}

/// Writes `bytes` to `path` atomically: a uniquely named temporary file beside it (created
/// exclusively, so no file or symlink of the user's is ever followed or truncated), synced, then
/// renamed over `path`, readable by all (0644 on Unix, as the files of a report directory).
/// `path` must be a regular file or not exist (`check_replaceable`). Creates the directory if
/// needed. The one atomic write: the CLI's summaries, histories and counterexamples.
///
/// A file written into a report directory (`OUT/live.json`, `OUT/counterexamples/x.toml`: a
/// directory whose [`MANIFEST_FILE`] is in `path`'s parent or the parent's parent) is then
/// recorded in its manifest, so that the next report may still replace that directory. Recorded
/// only once the file is in place (issue 40): a write that fails (a name too long, a full disk,
/// a kill) leaves nothing listed, so a file of the user's later put at that name is never taken
/// for lockstep's and removed with the report.
///
/// [`MANIFEST_FILE`]: crate::report::MANIFEST_FILE
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    check_replaceable(path)?;
    write_file_atomically(path, bytes)?;
    staging::record_in_manifest(path)
}

/// [`write_atomic`] without recording `path` in a manifest (the manifest itself is written so).
/// On an error, the directories it created for `path` (empty) are removed again.
pub(super) fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = parent_dir(path);
    // The deepest ancestor there already: what is created below it is this write's.
    let existed = dir
        .ancestors()
        .find(|d| d.as_os_str().is_empty() || std::fs::symlink_metadata(d).is_ok());
    let written = write_new_file(path, bytes);
    if written.is_err() {
        for created in dir
            .ancestors()
            .take_while(|d| Some(*d) != existed && !d.as_os_str().is_empty())
        {
            // Only an empty directory goes; anything that appeared meanwhile keeps it.
            if std::fs::remove_dir(created).is_err() {
                break;
            }
        }
    }
    written
}

/// Writes `bytes` to a new temporary file beside `path` and renames it over `path`.
fn write_new_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let dir = parent_dir(path);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    // A temporary file is private (0600); what it becomes is as readable as any report file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    // On failure the temporary file is removed when dropped.
    tmp.persist(path)
        .map_err(|e| format!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

/// The directory `path` is in (`.` for a bare file name).
pub(super) fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Writes `value` as pretty JSON to `path`, atomically (summaries, merged results).
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), String> {
    // Plain data with string keys: serialisation cannot fail.
    let json = serde_json::to_string_pretty(value).unwrap_or_default();
    write_atomic(path, json.as_bytes())
}

/// Checks, before anything runs, that a file can be written atomically at `path`: its
/// directory exists (or can be created) and takes a new file, and `path` is a regular file or
/// does not exist.
pub fn check_writable_file(path: &Path) -> Result<(), String> {
    check_replaceable(path)?;
    let dir = parent_dir(path);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create {}: {e}", path.display(), dir.display()))?;
    tempfile::Builder::new()
        .prefix(".lockstep-probe.")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| format!("{}: cannot write in {}: {e}", path.display(), dir.display()))
}

/// Refuses an `--out` directory that is a symbolic link (issue 48): a counterexample written
/// through it would replace a same-named file in the link's target. `--report` refuses links
/// the same way. Checked before exploring and again before each counterexample is written.
pub fn check_out_dir(dir: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => Err(format!(
            "--out {}: is a symbolic link: not writing counterexamples through it (that would replace \
             same-named files where it points); give the directory itself",
            dir.display()
        )),
        _ => Ok(()),
    }
}

/// Writes a shrunk counterexample into the `--out` directory `out` ([`write_into_out`]); nothing
/// without `out` or without a counterexample.
pub fn write_shrunk(shrunk: &crate::explore::shrink::Shrunk, out: Option<&Path>) -> Result<(), String> {
    match (shrunk, out) {
        (crate::explore::shrink::Shrunk::Found { file, toml, .. }, Some(dir)) => {
            write_into_out(dir, file, toml.as_bytes())
        }
        _ => Ok(()),
    }
}

/// Writes a counterexample `file` into the `--out` directory `dir` ([`write_atomic`]), once more
/// refusing a `dir` that became a symbolic link since it was checked ([`check_out_dir`]).
pub fn write_into_out(dir: &Path, file: &Path, bytes: &[u8]) -> Result<(), String> {
    check_out_dir(dir)?;
    write_atomic(file, bytes)
}

/// Checks, before exploring, that the summary file (`--summary`) and counterexamples (`--out`)
/// can be written: an unwritable path is bad input up front, not after the exploration.
pub fn check_outputs(summary: Option<&Path>, out: Option<&Path>) -> Result<(), String> {
    if let Some(dir) = out {
        check_out_dir(dir)?;
    }
    if let Some(dir) = out.filter(|dir| dir.exists() && !dir.is_dir()) {
        return Err(format!("--out {}: exists and is not a directory", dir.display()));
    }
    let probe = out.map(|dir| dir.join("counterexample.toml"));
    for path in summary.into_iter().chain(probe.as_deref()) {
        check_writable_file(path)?;
    }
    Ok(())
}
