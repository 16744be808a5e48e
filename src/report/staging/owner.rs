//! The owner marker lockstep creates in each directory it builds a report in, and its journal:
//! the proof that a hidden staging or old directory is lockstep's.

use super::manifest::{is_listable, Manifest, MANIFEST_FORMAT, MANIFEST_MAX_BYTES};
use std::fs::File;
use std::path::Path;

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
pub(super) const OWNER_FORMAT: &str = "lockstep-staging-owner";

/// The first line of an [`OWNER_FILE`]: which directory it was created in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct OwnerHeader {
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
pub(super) fn read_owner(dir: &Path, lock: &File) -> Result<(Manifest, Option<Vec<String>>), String> {
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
        schema_version: super::super::SCHEMA_VERSION,
        tool: super::super::Tool::current(),
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
pub(super) fn note_move(dir: &Path, to: &Path) -> std::io::Result<()> {
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
pub(super) fn note_move(_dir: &Path, _to: &Path) -> std::io::Result<()> {
    Ok(())
}
