//! How a report directory is staged, recognised, swapped in and removed.
//!
//! **Staging.** The hidden directories a report is built and swapped through, beside OUT:
//! `.OUT.new.XXXXXX` (the new report, built then put in place of OUT; after an exchange it holds
//! the previous report until that is removed) and `.OUT.old.XXXXXX` (the previous report,
//! renamed away by the two-rename fallback, then removed), where `XXXXXX` is `tempfile`'s six
//! random alphanumerics. A run killed (SIGKILL, power loss) between creating one and removing
//! or renaming it leaves it behind; the next report written to the same OUT removes it
//! ([`remove_stale`]).
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
//! alone). A name proves nothing (a `.OUT.new.backup` of the user's has one): only a directory
//! holding lockstep's owner marker ([`OWNER_FILE`], created exclusively in the new directory
//! before anything else, naming that directory by device and inode, owned by this user) is
//! removed, and only at a name a run put it at (issue 48: a report its user renamed to
//! `.OUT.old.keep01` is the user's); anything else is left whole. One that holds a manifest (an earlier report,
//! exchanged out) is removed like OUT itself: only if everything in it is listed, and only
//! what is listed; one without (a staging directory killed while being built) only what the
//! marker's journal lists, entry by entry, never recursively. Left out: the
//! `.lockstep-probe.XXXXXX` directory [`super::prepare_out`] creates and removes at once (a kill
//! within that instant leaves it), and platforms other than Unix (where nothing is removed). A
//! file system without `flock` (some network file systems) makes every lock fail: then nothing
//! is removed either.
//!
//! **Recognising a report.** Every report directory holds a manifest, [`MANIFEST_FILE`]: a
//! format marker ([`MANIFEST_FORMAT`]), the report's schema version and run identity, and the
//! relative path of every file and directory lockstep wrote there (itself included). A name
//! alone (`report.json`) proves nothing: anyone can have one, or a link by that name to a
//! system file. An existing OUT is replaced only if it is a real directory (not a link) and
//! every entry under it, walked without following links, is listed with the same kind
//! ([`existing`]); anything else is refused naming the first entry lockstep did not write. The
//! old report is then removed entry by entry, never recursively ([`remove_listed`]), so a file
//! slipped in after the check survives.
//!
//! **Swapping.** On Linux the new report and the old one trade places in one step
//! (`renameat2(RENAME_EXCHANGE)`, [`exchange`]): at every instant OUT holds a whole report. Where
//! the kernel or file system refuses it, [`swap_by_renames`] is the fallback: OUT renamed away,
//! then the new report renamed into place; killed between the two, OUT is missing (both reports
//! survive beside it, and the next run removes them).

use super::model::is_chart_stem;
use super::{charts, html, interactive, junit, markdown, parent_dir, Report};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The random part `tempfile` appends to a prefix: six ASCII alphanumerics.
const SUFFIX_LEN: usize = 6;

/// The manifest's file name, at the top of every report directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// The `format` field of every manifest: what only lockstep writes.
pub const MANIFEST_FORMAT: &str = "lockstep-report-manifest";

/// A manifest larger than this is not one lockstep wrote (a report of ten thousand runs lists
/// some forty thousand paths, about 2 MB); the cap keeps a hostile file from being read whole.
const MANIFEST_MAX_BYTES: u64 = 64 << 20;

/// A report directory's manifest ([`MANIFEST_FILE`]): what lockstep wrote there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// The schema version of the `report.json` beside it ([`super::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The program that wrote it.
    pub tool: super::Tool,
    /// The report's run identity (`run_id`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The report's shard, when it covers one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::ShardInfo>,
    /// Every directory lockstep created, relative (`charts`, `runs/NAME`), sorted.
    pub dirs: Vec<String>,
    /// Every file lockstep wrote, relative (`report.json`, `charts/x.svg`, this manifest), sorted.
    pub files: Vec<String>,
}

/// What an entry of a directory is, read without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Link,
    Special,
}

impl Kind {
    fn of(meta: &std::fs::Metadata) -> Kind {
        let t = meta.file_type();
        if t.is_symlink() {
            Kind::Link
        } else if t.is_dir() {
            Kind::Dir
        } else if t.is_file() {
            Kind::File
        } else {
            Kind::Special
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::File => "a file",
            Kind::Dir => "a directory",
            Kind::Link => "a symbolic link",
            Kind::Special => "a device, FIFO or socket",
        })
    }
}

/// Whether `rel` is a path lockstep may list: `/`-separated names, none empty, `.` or `..`, no
/// backslash or NUL, not absolute. A manifest listing anything else is not lockstep's (and a
/// `..` would reach outside the directory when the old report is removed).
fn is_listable(rel: &str) -> bool {
    !rel.is_empty()
        && rel
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains(['\\', '\0']))
}

impl Manifest {
    /// The manifest of the report directory `dir` as built: every entry under it (walked
    /// without following links) and this manifest itself. `dir` is the private staging directory
    /// this run created and filled, so what is there is what lockstep wrote; a walk rather than
    /// the list of files written also catches the directories, empty ones included.
    pub(crate) fn of_dir(dir: &Path, report: &super::Report) -> std::io::Result<Manifest> {
        fn walk(dir: &Path, rel: &str, dirs: &mut Vec<String>, files: &mut Vec<String>) -> std::io::Result<()> {
            for name in sorted_names(&dir.join(rel))? {
                let name = name
                    .into_string()
                    .map_err(|n| std::io::Error::other(format!("{}: not a UTF-8 name", n.to_string_lossy())))?;
                let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
                match Kind::of(&std::fs::symlink_metadata(dir.join(&path))?) {
                    Kind::Dir => {
                        walk(dir, &path, dirs, files)?;
                        dirs.push(path);
                    }
                    Kind::File => files.push(path),
                    other => return Err(std::io::Error::other(format!("{path}: is {other}"))),
                }
            }
            Ok(())
        }
        let (mut dirs, mut files) = (Vec::new(), vec![MANIFEST_FILE.to_string()]);
        walk(dir, "", &mut dirs, &mut files)?;
        dirs.sort();
        files.sort();
        files.dedup();
        Ok(Manifest {
            format: MANIFEST_FORMAT.to_string(),
            schema_version: super::SCHEMA_VERSION,
            tool: super::Tool::current(),
            run_id: report.run_id.clone(),
            shard: report.shard,
            dirs,
            files,
        })
    }

    /// The manifest as written: pretty JSON.
    pub fn to_json(&self) -> String {
        // Plain data with string keys: serialisation cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Reads a manifest, refusing anything lockstep would not have written.
    fn parse(text: &str) -> Result<Manifest, String> {
        let manifest: Manifest =
            serde_json::from_str(text).map_err(|e| format!("{MANIFEST_FILE} is not a lockstep manifest: {e}"))?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(format!(
                "{MANIFEST_FILE} is not a lockstep manifest: `format` is not \"{MANIFEST_FORMAT}\""
            ));
        }
        let listing = manifest.listing();
        if listing.len() != manifest.dirs.len() + manifest.files.len() {
            return Err(format!("{MANIFEST_FILE} lists a path twice"));
        }
        if let Some(bad) = listing.keys().find(|rel| !is_listable(rel)) {
            return Err(format!(
                "{MANIFEST_FILE} lists {bad:?}, not a path inside the directory"
            ));
        }
        Ok(manifest)
    }

    /// Every listed path with its kind.
    fn listing(&self) -> BTreeMap<&str, Kind> {
        let dirs = self.dirs.iter().map(|d| (d.as_str(), Kind::Dir));
        dirs.chain(self.files.iter().map(|f| (f.as_str(), Kind::File)))
            .collect()
    }
}

/// The names in `dir`, sorted (so that the entry a refusal names is the same every time).
fn sorted_names(dir: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
    let mut names = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<std::io::Result<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

/// The manifest in `dir`: `Ok(None)` when there is none; an error saying why when what is
/// there is not one lockstep wrote (a link, a FIFO, too large, not a manifest). Never follows a
/// link and never blocks on a FIFO.
fn read_manifest(dir: &Path) -> Result<Option<Manifest>, String> {
    use std::io::Read;
    let path = dir.join(MANIFEST_FILE);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot inspect {MANIFEST_FILE}: {e}")),
    };
    let kind = Kind::of(&meta);
    if kind != Kind::File {
        return Err(format!("{MANIFEST_FILE} is {kind}"));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Swapped for a link or a FIFO since the look above: refused, not followed or waited on.
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut text = String::new();
    options
        .open(&path)
        .and_then(|file| file.take(MANIFEST_MAX_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| format!("cannot read {MANIFEST_FILE}: {e}"))?;
    if text.len() as u64 > MANIFEST_MAX_BYTES {
        return Err(format!("{MANIFEST_FILE} is larger than {MANIFEST_MAX_BYTES} bytes"));
    }
    Manifest::parse(&text).map(Some)
}

/// Checks that every entry under `root` is listed in `manifest` with its kind, walking in sorted
/// order without following links; the first that is not, as `(relative path, why)`.
fn check_listed(root: &Path, manifest: &Manifest) -> Result<(), (String, String)> {
    fn walk(root: &Path, rel_dir: &str, listed: &BTreeMap<&str, Kind>) -> Result<(), (String, String)> {
        let names =
            sorted_names(&root.join(rel_dir)).map_err(|e| (rel_dir.to_string(), format!("cannot read it: {e}")))?;
        for name in names {
            let shown = name.to_string_lossy();
            let rel = if rel_dir.is_empty() {
                shown.to_string()
            } else {
                format!("{rel_dir}/{shown}")
            };
            // A name that is not UTF-8 is never listed (lockstep writes ASCII names only).
            let want = name.to_str().and(listed.get(rel.as_str()).copied());
            let meta = std::fs::symlink_metadata(root.join(&rel))
                .map_err(|e| (rel.clone(), format!("cannot inspect it: {e}")))?;
            let kind = Kind::of(&meta);
            match want {
                None => return Err((rel, format!("it is not listed in {MANIFEST_FILE}"))),
                Some(want) if want != kind => {
                    return Err((rel, format!("{MANIFEST_FILE} lists it as {want}; it is now {kind}")))
                }
                Some(Kind::Dir) => walk(root, &rel, listed)?,
                Some(_) => {}
            }
        }
        Ok(())
    }
    walk(root, "", &manifest.listing())
}

/// What is at OUT before a new report takes its place ([`existing`]).
#[derive(Debug)]
pub(crate) enum Existing {
    /// Nothing: the new report is renamed into place.
    Missing,
    /// An empty directory: replaced the same way (`rename(2)` replaces an empty directory, and
    /// only an empty one, in one step).
    Empty,
    /// An earlier report: everything in it is listed in its manifest, the one returned.
    Report(Manifest),
}

/// What is at `out` and whether a report may replace it: nothing, an empty directory, or an
/// earlier report — a real directory (not a link) holding a valid manifest that lists every
/// entry under it with its kind (a listed file that became a link, or anything unlisted, is
/// refused). The error names the first entry lockstep did not write; the caller adds `out`.
pub fn existing(out: &Path) -> Result<Existing, String> {
    let meta = match std::fs::symlink_metadata(out) {
        Ok(meta) => meta,
        // Below a file (`file/out`): missing too; the caller's check of the parent says why.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Existing::Missing)
        }
        Err(e) => return Err(format!("cannot inspect it: {e}")),
    };
    match Kind::of(&meta) {
        Kind::Dir => {}
        Kind::Link => {
            return Err("is a symbolic link: not replacing it, nor what it points to; give the directory itself".into())
        }
        _ => return Err("exists and is not a directory".into()),
    }
    let names = sorted_names(out).map_err(|e| format!("cannot read it: {e}"))?;
    let Some(first) = names.first() else {
        return Ok(Existing::Empty);
    };
    let not_ours = |rel: &str, why: &str| {
        format!(
            "not replacing: {} was not written by lockstep ({why}): this is not a lockstep report, or one \
             changed since lockstep wrote it; move that away, or give another directory",
            out.join(rel).display()
        )
    };
    let manifest = match read_manifest(out) {
        Ok(Some(manifest)) => manifest,
        Ok(None) => {
            return Err(not_ours(
                &first.to_string_lossy(),
                &format!(
                    "the directory holds no {MANIFEST_FILE}, which every report directory lockstep writes has; \
                     a report of a lockstep without manifests is refused too: remove it yourself"
                ),
            ))
        }
        Err(why) => return Err(not_ours(MANIFEST_FILE, &why)),
    };
    check_listed(out, &manifest).map_err(|(rel, why)| not_ours(&rel, &why))?;
    Ok(Existing::Report(manifest))
}

/// Records `path`, just written by lockstep, in the manifest of the report directory it is in
/// (its parent, or its parent's parent: `OUT/live.json`, `OUT/counterexamples/x.toml`), with
/// any directory between them, so that the next report may replace that directory (only what a
/// manifest lists is ever removed). Nothing happens where there is no valid manifest, or when
/// `path` is listed already.
///
/// Called only once the file is in place (its atomic rename done): a listed name is always one
/// lockstep wrote. A write that failed (ENAMETOOLONG, ENOSPC) or a kill before this call leaves
/// the file, if any, unlisted: the next report refuses the directory naming it, and removes
/// nothing. Recording first, as lockstep once did, listed names that never existed, and the next
/// report deleted whatever the user later put there (issue 40).
pub(crate) fn record_in_manifest(path: &Path) -> Result<(), String> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Ok(());
    };
    let mut rel = vec![name.to_string()];
    let mut dir = super::parent_dir(path).to_path_buf();
    for _ in 0..2 {
        let found = match read_manifest(&dir) {
            Ok(found) => found,
            // Something that is not lockstep's manifest: not a report directory, nor is any above.
            Err(_) => return Ok(()),
        };
        if let Some(mut manifest) = found {
            // Top-down: the directories between the manifest and the file, then the file.
            let parts: Vec<&str> = rel.iter().rev().map(String::as_str).collect();
            let mut changed = false;
            for n in 1..=parts.len() {
                let entry = parts[..n].join("/");
                let (list, other) = if n == parts.len() {
                    (&mut manifest.files, &manifest.dirs)
                } else {
                    (&mut manifest.dirs, &manifest.files)
                };
                if other.contains(&entry) || !is_listable(&entry) {
                    // Listed as the other kind (the write fails on its own), or not a plain
                    // path: nothing to record.
                    return Ok(());
                }
                if !list.contains(&entry) {
                    list.push(entry);
                    list.sort();
                    changed = true;
                }
            }
            if changed {
                super::write_file_atomically(&dir.join(MANIFEST_FILE), manifest.to_json().as_bytes())
                    .map_err(|e| format!("{}: cannot record it in {MANIFEST_FILE}: {e}", path.display()))?;
            }
            return Ok(());
        }
        match dir.file_name().and_then(|n| n.to_str()) {
            Some(name) => rel.push(name.to_string()),
            None => return Ok(()),
        }
        dir = super::parent_dir(&dir).to_path_buf();
    }
    Ok(())
}

/// The prefix of OUT's staging directory (`.OUT.new.`).
pub(crate) fn new_prefix(base: &str) -> String {
    format!(".{base}.new.")
}

/// The prefix of OUT's previous report, renamed away (`.OUT.old.`).
fn old_prefix(base: &str) -> String {
    format!(".{base}.old.")
}

/// Whether `name` is one of OUT's staging or old directories (`base` is OUT's file name).
fn is_staging_name(name: &str, base: &str) -> bool {
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
        .tempdir_in(super::parent_dir(out))?
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
fn remove_entry(root: &Path, rel: &str, kind: Kind) -> std::io::Result<()> {
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
fn remove_entry(root: &Path, rel: &str, kind: Kind) -> std::io::Result<()> {
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
fn remove_lockstep_dir(path: &Path, lock: &File) -> std::io::Result<()> {
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

/// The owner marker lockstep creates in each directory it builds a report in, at its creation
/// (and which stays in the report, listed in its manifest): the proof that a hidden
/// `.OUT.new.XXXXXX` / `.OUT.old.XXXXXX` directory is lockstep's ([`remove_stale`]). Its first
/// line names the directory it was created in (device, inode, owner, and the name it was created
/// at); each further line records an entry lockstep writes there, before it is created (`f
/// charts/x.svg`, `d charts`): the journal of a staging directory killed before its manifest was
/// written, or a name a run moved the directory to (`m .OUT.new.XXXXXX`, before the move): a
/// leftover is removed only at a name a run put it at.
pub const OWNER_FILE: &str = ".lockstep-owner";

/// The `format` of an owner marker's first line.
const OWNER_FORMAT: &str = "lockstep-staging-owner";

/// The first line of an [`OWNER_FILE`]: which directory it was created in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct OwnerHeader {
    /// Always [`OWNER_FORMAT`].
    format: String,
    /// The directory's device number.
    dev: u64,
    /// The directory's inode number (kept by a rename or an exchange, not by a copy).
    ino: u64,
    /// The directory's owner (the user lockstep ran as).
    uid: u32,
    /// The name lockstep created the directory at (`.OUT.new.XXXXXX`); a later `m NAME` line
    /// of the journal names where a run moved it since (issue 48). Absent in markers of older
    /// builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

/// The owner marker of a staging directory being built: created with the directory, appended
/// to as each entry is written ([`Journal::record`]).
pub(crate) struct Journal {
    file: File,
    dirs: std::collections::BTreeSet<String>,
}

impl Journal {
    /// Creates the owner marker in `dir`, a directory this run has just created and locked:
    /// exclusively (`O_EXCL`; it fails if anything is at that name) and without following a
    /// link, naming `dir` by its device and inode.
    #[cfg(unix)]
    pub(crate) fn create(dir: &Path) -> std::io::Result<Journal> {
        use std::io::Write;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let meta = std::fs::symlink_metadata(dir)?;
        let header = OwnerHeader {
            format: OWNER_FORMAT.to_string(),
            dev: meta.dev(),
            ino: meta.ino(),
            uid: meta.uid(),
            name: dir.file_name().map(|n| n.to_string_lossy().into_owned()),
        };
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(dir.join(OWNER_FILE))?;
        // Plain data: serialisation cannot fail.
        writeln!(file, "{}", serde_json::to_string(&header).unwrap_or_default())?;
        Ok(Journal {
            file,
            dirs: std::collections::BTreeSet::new(),
        })
    }

    /// Elsewhere than Unix no leftover is ever removed: no marker is needed.
    #[cfg(not(unix))]
    pub(crate) fn create(dir: &Path) -> std::io::Result<Journal> {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(dir.join(OWNER_FILE))?;
        Ok(Journal {
            file,
            dirs: std::collections::BTreeSet::new(),
        })
    }

    /// Records the directory `rel` (its parent recorded already) before the caller creates
    /// it; `false` when it is recorded already (and so created).
    pub(crate) fn record_dir(&mut self, rel: &str) -> std::io::Result<bool> {
        use std::io::Write;
        if !self.dirs.insert(rel.to_string()) {
            return Ok(false);
        }
        self.file.write_all(format!("d {rel}\n").as_bytes())?;
        Ok(true)
    }

    /// Records `rel`, a file lockstep is about to create in the directory, with every
    /// directory above it not recorded yet, before any of them is created (issue 48: recorded
    /// after, a kill in between left an entry no journal listed). Returns those directories,
    /// outermost first, for the caller to create (all this run's: the directory is new and
    /// private while it is built). One `write(2)` on a file opened for appending: once it
    /// returns, a kill of the process cannot lose the lines.
    pub(crate) fn record(&mut self, rel: &str) -> std::io::Result<Vec<String>> {
        use std::io::Write;
        let mut lines = String::new();
        let mut created = Vec::new();
        let parts: Vec<&str> = rel.split('/').collect();
        for n in 1..parts.len() {
            let dir = parts[..n].join("/");
            if self.dirs.insert(dir.clone()) {
                lines.push_str(&format!("d {dir}\n"));
                created.push(dir);
            }
        }
        lines.push_str(&format!("f {rel}\n"));
        self.file.write_all(lines.as_bytes())?;
        Ok(created)
    }
}

/// The journal of the owner marker of `dir` (locked by the caller: `lock` is its handle), as a
/// manifest listing what lockstep wrote there (the marker included); an error saying why when
/// `dir` is not provably lockstep's: no marker, a marker that is a link or not a regular file,
/// that does not parse, or that names another directory (a copy, or a marker moved or forged:
/// the device and inode are those of the directory it was created in), or a directory or
/// marker owned by another user.
#[cfg(unix)]
fn read_owner(dir: &Path, lock: &File) -> Result<(Manifest, Option<Vec<String>>), String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut text = String::new();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(OWNER_FILE))
        .map_err(|e| format!("no owner marker {OWNER_FILE}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{OWNER_FILE}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{OWNER_FILE} is not a regular file"));
    }
    file.take(MANIFEST_MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {OWNER_FILE}: {e}"))?;
    if text.len() as u64 > MANIFEST_MAX_BYTES {
        return Err(format!("{OWNER_FILE} is larger than {MANIFEST_MAX_BYTES} bytes"));
    }
    // Whole lines only: a last line cut short by a kill may name a prefix of a real name.
    let mut lines = text.split_inclusive('\n').filter_map(|line| line.strip_suffix('\n'));
    let header: OwnerHeader = lines
        .next()
        .and_then(|line| serde_json::from_str(line).ok())
        .filter(|h: &OwnerHeader| h.format == OWNER_FORMAT)
        .ok_or_else(|| format!("{OWNER_FILE} is not a lockstep owner marker"))?;
    let held = lock
        .metadata()
        .map_err(|e| format!("cannot inspect the directory: {e}"))?;
    // SAFETY: `geteuid` has no arguments and cannot fail.
    let me = unsafe { libc::geteuid() };
    if (header.dev, header.ino, header.uid) != (held.dev(), held.ino(), held.uid()) {
        return Err(format!("{OWNER_FILE} was not created in this directory"));
    }
    if held.uid() != me || meta.uid() != me {
        return Err("the directory or its owner marker belongs to another user".to_string());
    }
    let (mut dirs, mut files) = (Vec::new(), vec![OWNER_FILE.to_string()]);
    // Every name a run put the directory at: where it was created, and where it was moved.
    let mut placed: Option<Vec<String>> = header.name.clone().map(|n| vec![n]);
    for line in lines {
        let (list, rel) = match line.split_once(' ') {
            Some(("d", rel)) => (&mut dirs, rel),
            Some(("f", rel)) => (&mut files, rel),
            Some(("m", name)) => {
                placed.get_or_insert_with(Vec::new).push(name.to_string());
                continue;
            }
            _ => continue,
        };
        if is_listable(rel) && !list.iter().any(|r| r == rel) {
            list.push(rel.to_string());
        }
    }
    let journal = Manifest {
        format: MANIFEST_FORMAT.to_string(),
        schema_version: super::SCHEMA_VERSION,
        tool: super::Tool::current(),
        run_id: None,
        shard: None,
        dirs,
        files,
    };
    Ok((journal, placed))
}

/// Appends to the owner marker of the report directory `dir` (about to be moved by this run:
/// a new report into OUT, the previous one aside) the name it is moved to (`m NAME`), before
/// the move: a later cleaner then removes it only at a name a run put it at, never at a name
/// someone else renamed it to (issue 48: a user's report renamed to `.OUT.old.keep01`,
/// the documented leftover pattern, was removed by the next run). A report without a marker
/// (an older build's) is moved all the same.
#[cfg(unix)]
fn note_move(dir: &Path, to: &Path) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let Some(name) = to.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Ok(());
    };
    let file = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(OWNER_FILE));
    match file {
        Ok(mut file) if file.metadata()?.is_file() => file.write_all(format!("m {name}\n").as_bytes()),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Elsewhere than Unix no leftover is ever removed: nothing to note.
#[cfg(not(unix))]
fn note_move(_dir: &Path, _to: &Path) -> std::io::Result<()> {
    Ok(())
}

/// Makes sure a report can be written to `out`, before anything runs: `out` does not exist
/// yet, is an empty directory, or is a directory of an earlier report — a real directory (not a
/// symbolic link) holding a valid [`MANIFEST_FILE`] that lists every entry under it (walked
/// without following links) with its kind; and its parent takes a new directory (the report is
/// built beside `out`, then swapped in). Anything else is refused naming the first entry that
/// lockstep did not write ("not replacing: FILE was not written by lockstep"): a file of
/// someone's, a link (`report.json` pointing at a system file), a listed file that became a link.
/// Checked again just before the swap ([`write_report_with`]).
pub fn prepare_out(out: &Path) -> Result<(), String> {
    let bad = |m: String| format!("report directory {}: {m}", out.display());
    existing(out).map_err(bad)?;
    let parent = parent_dir(out);
    std::fs::create_dir_all(parent).map_err(|e| bad(format!("cannot create {}: {e}", parent.display())))?;
    tempfile::Builder::new()
        .prefix(".lockstep-probe.")
        .tempdir_in(parent)
        .map(drop)
        .map_err(|e| bad(format!("cannot write in {}: {e}", parent.display())))
}

/// Writes the whole report directory — `report.json`, `summary.md`, `junit.xml`, the charts
/// (SVG and PNG), `index.html` and the manifest — consistent as a whole: everything is built in
/// a new, uniquely named directory beside `out`, synced, then swapped in (see [`swap_in`]: on
/// Linux the two directories trade places in one atomic step), and the old report removed,
/// exactly the entries its manifest lists. A reader sees the old report or the new one, never
/// a mix; charts of scenarios no longer in the report disappear; on an error nothing of `out`
/// has changed and no temporary file survives. `out` must be what [`prepare_out`] accepts.
/// Hidden directories of `out` left by a run that was killed are removed first, never one a
/// live run uses ([`staging`]). Returns the paths written.
pub fn write_report(report: &Report, out: &Path) -> Result<Vec<PathBuf>, String> {
    write_report_with(report, out, &BTreeMap::new())
}

/// [`write_report`], with the raw history of each run in `histories` (by scenario name):
/// `runs/NAME/history.jsonl` and the interactive `runs/NAME/timeline.html` ([`interactive`]).
pub fn write_report_with(
    report: &Report,
    out: &Path,
    histories: &BTreeMap<String, lockstep_sim::History>,
) -> Result<Vec<PathBuf>, String> {
    write_report_adding(report, out, histories, &Additions::default())
}

/// What a report of `lockstep live` or `lockstep serve` adds to the files every report has:
/// written in the staging directory with everything else, before the swap (issue 48: they were
/// written into OUT after it, so that concurrent runs mixed one run's header with another's
/// report, and a reader could see the report without them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Additions {
    /// Further files at the top of the report (`live.json`, `serve.json`): name and contents.
    /// A name is a plain file name, none of the report's own.
    pub files: Vec<(String, Vec<u8>)>,
    /// Markdown put before the top of `summary.md`.
    pub summary_head: String,
    /// HTML put at the top of `index.html`'s body.
    pub index_banner: String,
}

/// [`write_report_with`], with what a live or serve report adds ([`Additions`]), all of it
/// built in the staging directory and swapped in at once.
pub fn write_report_adding(
    report: &Report,
    out: &Path,
    histories: &BTreeMap<String, lockstep_sim::History>,
    additions: &Additions,
) -> Result<Vec<PathBuf>, String> {
    for (name, _) in &additions.files {
        let plain = !name.is_empty() && !name.contains(['/', '\\']) && !name.starts_with('.');
        let reserved = [
            MANIFEST_FILE,
            OWNER_FILE,
            "report.json",
            "summary.md",
            "junit.xml",
            "index.html",
        ];
        if !plain || reserved.contains(&name.as_str()) || additions.files.iter().filter(|(n, _)| n == name).count() > 1
        {
            return Err(format!("report file name {name:?} is not a new plain file name"));
        }
    }
    prepare_out(out)?;
    remove_stale(out);
    let (staging, _staging_lock, mut journal) = staging_dir(out)?;
    let files = build_report_dir(report, staging.path(), histories, additions, &mut journal)?;
    // The previous report, swapped out below, stays locked until it is removed.
    #[cfg(unix)]
    let _old_lock = try_lock_dir(out).ok().flatten();
    // Checked again: `out` may have changed while the report was built (minutes, for a big run).
    let existing = existing(out).map_err(|m| format!("report directory {}: {m}", out.display()))?;
    let old = swap_in(staging, out, &existing)?;
    if let (Some(old), Existing::Report(manifest)) = (old, &existing) {
        // The new report is in place; failing to remove the old one only leaves a hidden
        // directory, which the next run tries again to remove ([`leftover_dirs`] names it). Only
        // what its manifest lists is removed: a file slipped in since the check stays, with it.
        let _ = remove_listed(&old, manifest);
    }
    Ok(files.iter().map(|rel| out.join(rel)).collect())
}

/// A new staging directory beside `out`, (on Unix) the lock that tells a cleaner it is live,
/// and its owner marker, which proves it lockstep's to a later cleaner ([`staging`]). Created
/// again should a cleaner have removed it before it was locked.
fn staging_dir(out: &Path) -> Result<(tempfile::TempDir, Option<std::fs::File>, Journal), String> {
    let base = out
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    let fail = |e: String| {
        format!(
            "report directory {}: cannot create a directory beside it: {e}",
            out.display()
        )
    };
    for _ in 0..3 {
        let dir = tempfile::Builder::new()
            .prefix(&new_prefix(&base))
            .tempdir_in(parent_dir(out))
            .map_err(|e| fail(e.to_string()))?;
        // The owner marker, made once the directory is ours (locked, and still the one at its path).
        let mark = |dir: &Path| Journal::create(dir).map_err(|e| fail(format!("{}: {e}", OWNER_FILE)));
        #[cfg(unix)]
        match lock_dir(dir.path()) {
            Ok(Some(lock)) => {
                let journal = mark(dir.path())?;
                return Ok((dir, Some(lock), journal));
            }
            // Removed (and its name perhaps taken) before the lock: not ours to remove.
            Ok(None) => {
                let _ = dir.keep();
                continue;
            }
            // A file system without locks: no cleaner can take one either, so none removes it.
            Err(_) => {
                let journal = mark(dir.path())?;
                return Ok((dir, None, journal));
            }
        }
        #[cfg(not(unix))]
        {
            let journal = mark(dir.path())?;
            return Ok((dir, None, journal));
        }
    }
    Err(fail("removed by another process each time".to_string()))
}

/// Writes every file of the report into `dir` (synced), the manifest last (it lists everything
/// else: a staging directory killed before it has none, see [`staging`]), each recorded in the
/// owner marker's `journal` once written; returns their paths relative to it.
fn build_report_dir(
    report: &Report,
    dir: &Path,
    histories: &BTreeMap<String, lockstep_sim::History>,
    additions: &Additions,
    journal: &mut Journal,
) -> Result<Vec<PathBuf>, String> {
    // Every report has `charts/`, with charts or without (journalled first, as every entry).
    if journal
        .record_dir("charts")
        .map_err(|e| format!("cannot record charts/ in {}: {e}", OWNER_FILE))?
    {
        std::fs::create_dir(dir.join("charts")).map_err(|e| format!("cannot create charts/: {e}"))?;
    }
    let mut written = Vec::new();
    let mut put = |rel: &str, bytes: &[u8]| -> Result<(), String> {
        // Journalled before it is created (issue 48: a kill between creating an entry and
        // recording it left an entry no cleaner could prove lockstep's). A listed entry that
        // was never created is simply not there to remove.
        let created = journal
            .record(rel)
            .map_err(|e| format!("cannot record {rel} in {}: {e}", OWNER_FILE))?;
        for d in created {
            std::fs::create_dir(dir.join(&d)).map_err(|e| format!("cannot create {d}/: {e}"))?;
        }
        let path = dir.join(rel);
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            // A new directory of this run's: nothing is at the name, and nothing is followed.
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
            file.write_all(bytes)?;
            file.sync_all()
        };
        write().map_err(|e| format!("cannot write {rel}: {e}"))?;
        written.push(PathBuf::from(rel));
        Ok(())
    };
    put("report.json", report.to_json().as_bytes())?;
    put(
        "summary.md",
        format!("{}{}", additions.summary_head, markdown::summary(report)).as_bytes(),
    )?;
    put("junit.xml", junit::junit_xml(report)?.as_bytes())?;
    for (name, bytes) in &additions.files {
        put(name, bytes)?;
    }
    let mut svgs = BTreeMap::new();
    for (stem, chart) in charts::all(report) {
        // Stems are slugs (see `chart_stems`); checked again here, as nothing may land outside.
        if !is_chart_stem(&stem) {
            return Err(format!("chart name {stem:?} is not a file name"));
        }
        let svg = chart.svg()?;
        put(&format!("charts/{stem}.svg"), svg.as_bytes())?;
        // The PNG is the same SVG rasterised: draw once (the `cli` feature's: without it, SVG only).
        #[cfg(feature = "cli")]
        put(&format!("charts/{stem}.png"), &charts::svg::png(&svg)?)?;
        svgs.insert(stem, svg);
    }
    let runs = interactive::write_runs(report, histories, &mut put)?;
    let index = html::index_with(report, &svgs, &runs);
    let index = match additions.index_banner.is_empty() {
        true => index,
        false => index.replacen("<body>", &format!("<body>\n{}", additions.index_banner), 1),
    };
    put("index.html", index.as_bytes())?;
    let manifest = Manifest::of_dir(dir, report).map_err(|e| format!("cannot list the report: {e}"))?;
    put(MANIFEST_FILE, manifest.to_json().as_bytes())?;
    let run_dirs = std::fs::read_dir(dir.join("runs"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path());
    for d in run_dirs.chain([dir.join("charts"), dir.join("runs"), dir.to_path_buf()]) {
        sync_dir(&d);
    }
    Ok(written)
}

/// Syncs a directory's entries to disk (best effort: not every platform can open a directory).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Puts `staging` in place of `out`, as [`existing`] found `out` just before. Missing
/// or an empty directory: one `rename(2)` (atomic; it replaces an empty directory and fails on
/// anything else, so nothing that appeared meanwhile is replaced). An earlier report: the two
/// directories trade places in one atomic step ([`exchange`], Linux's
/// `renameat2(RENAME_EXCHANGE)`), so at every instant `out` holds a whole report; where the
/// kernel or the file system refuses it (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`; every platform but
/// Linux), the fallback is two renames ([`swap_by_renames`]: `out` renamed away, then
/// the new report renamed into place), which a kill between them leaves without `out`.
///
/// Returns where the old report now is (the staging path after an exchange, a `.OUT.old.XXXXXX`
/// after the fallback), to be removed by the caller. On an error `out` is as it was and
/// `staging` is removed.
fn swap_in(staging: tempfile::TempDir, out: &Path, existing: &Existing) -> Result<Option<PathBuf>, String> {
    let fail = |e: std::io::Error| {
        format!(
            "report directory {}: cannot put the new report in place: {e}",
            out.display()
        )
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // A temporary directory is private (0700); a report directory is as readable as any.
        std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o755)).map_err(fail)?;
    }
    // The new report records where this run puts it: a later cleaner removes a leftover only
    // at a name a run put it at (OUT itself may be a leftover's name: a report written there).
    note_move(staging.path(), out).map_err(fail)?;
    let old = match existing {
        Existing::Missing | Existing::Empty => {
            std::fs::rename(staging.path(), out).map_err(fail)?;
            None
        }
        Existing::Report(_) => match note_move(out, staging.path()).and_then(|()| exchange(staging.path(), out)) {
            // The staging path holds the old report now: its guard must not remove it whole.
            Ok(()) => Some(staging.path().to_path_buf()),
            Err(e) if exchange_unsupported(&e) => Some(swap_by_renames(staging.path(), out).map_err(fail)?),
            Err(e) => return Err(fail(e)),
        },
    };
    // The staging directory is now `out`, or the old report: do not let its guard remove it.
    let _ = staging.keep();
    sync_dir(parent_dir(out));
    Ok(old)
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
}
