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

mod leftovers;
mod manifest;
mod owner;
mod removal;
mod swap;

use super::model::is_chart_stem;
use super::{charts, html, interactive, junit, markdown, parent_dir, Report};
pub use leftovers::leftover_dirs;
#[cfg(unix)]
use leftovers::{lock_dir, try_lock_dir};
use leftovers::{new_prefix, remove_stale};
pub(crate) use manifest::record_in_manifest;
use manifest::{existing, Existing};
pub use manifest::{Manifest, MANIFEST_FILE, MANIFEST_FORMAT};
pub use owner::OWNER_FILE;
use owner::{note_move, Journal};
use removal::remove_listed;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use swap::{exchange, exchange_unsupported, swap_by_renames};

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
/// a new, uniquely named directory beside `out`, synced, then swapped in (see `swap_in`: on
/// Linux the two directories trade places in one atomic step), and the old report removed,
/// exactly the entries its manifest lists. A reader sees the old report or the new one, never
/// a mix; charts of scenarios no longer in the report disappear; on an error nothing of `out`
/// has changed and no temporary file survives. `out` must be what [`prepare_out`] accepts.
/// Hidden directories of `out` left by a run that was killed are removed first, never one a
/// live run uses (`staging`). Returns the paths written.
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
mod tests;
