//! Recognising a report: the manifest every report directory holds, and what is at OUT before
//! a new report takes its place (see the parent module's doc).

use std::collections::BTreeMap;
use std::path::Path;

/// The manifest's file name, at the top of every report directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// The `format` field of every manifest: what only lockstep writes.
pub const MANIFEST_FORMAT: &str = "lockstep-report-manifest";

/// A manifest larger than this is not one lockstep wrote (a report of ten thousand runs lists
/// some forty thousand paths, about 2 MB); the cap keeps a hostile file from being read whole.
pub(super) const MANIFEST_MAX_BYTES: u64 = 64 << 20;

/// A report directory's manifest ([`MANIFEST_FILE`]): what lockstep wrote there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// The schema version of the `report.json` beside it (`super::super::SCHEMA_VERSION`).
    pub schema_version: u32,
    /// The program that wrote it.
    pub tool: super::super::Tool,
    /// The report's run identity (`run_id`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The report's shard, when it covers one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::super::ShardInfo>,
    /// Every directory lockstep created, relative (`charts`, `runs/NAME`), sorted.
    pub dirs: Vec<String>,
    /// Every file lockstep wrote, relative (`report.json`, `charts/x.svg`, this manifest), sorted.
    pub files: Vec<String>,
}

/// What an entry of a directory is, read without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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
pub(super) fn is_listable(rel: &str) -> bool {
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
            schema_version: super::super::SCHEMA_VERSION,
            tool: super::super::Tool::current(),
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
    pub(super) fn parse(text: &str) -> Result<Manifest, String> {
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
pub(super) fn sorted_names(dir: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
    let mut names = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<std::io::Result<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

/// The manifest in `dir`: `Ok(None)` when there is none; an error saying why when what is
/// there is not one lockstep wrote (a link, a FIFO, too large, not a manifest). Never follows a
/// link and never blocks on a FIFO.
pub(super) fn read_manifest(dir: &Path) -> Result<Option<Manifest>, String> {
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
pub(super) fn check_listed(root: &Path, manifest: &Manifest) -> Result<(), (String, String)> {
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
    let mut dir = super::super::parent_dir(path).to_path_buf();
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
                super::super::write_file_atomically(&dir.join(MANIFEST_FILE), manifest.to_json().as_bytes())
                    .map_err(|e| format!("{}: cannot record it in {MANIFEST_FILE}: {e}", path.display()))?;
            }
            return Ok(());
        }
        match dir.file_name().and_then(|n| n.to_str()) {
            Some(name) => rel.push(name.to_string()),
            None => return Ok(()),
        }
        dir = super::super::parent_dir(&dir).to_path_buf();
    }
    Ok(())
}
