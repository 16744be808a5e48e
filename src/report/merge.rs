//! `lockstep merge` as data: sharded results read back and combined — `report.json` files of
//! `lockstep ci --shard` runs into one [`Report`] (judged again on all seeds), or the JSON
//! summaries of sharded explorations into one [`ExploreSummary`]. Nothing is run.
//!
//! Summaries merge only when they are shards of one exploration, each once: the same run
//! identity ([`crate::explore::summary::RunSpan`]) and no seed in two of them. A summary given
//! twice, overlapping seed ranges and summaries of different runs are refused. Summaries of
//! older builds (no identity) merge with a warning, unless two are identical.

use super::{prepare_out, Report, FORMAT};
use crate::explore::summary::{ExploreSummary, RunSpan, SeedSpan};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What the inputs merged into.
#[derive(Debug, Clone)]
pub enum Merged {
    /// Reports: the merged report, and how many files it came from.
    Reports {
        /// The merged report.
        report: Box<Report>,
        /// Files merged.
        parts: usize,
    },
    /// Exploration summaries, and warnings for the user (old summaries without a run
    /// identity, shards missing from the merge).
    Summaries(Box<ExploreSummary>, Vec<String>),
}

/// Whether `value` is a lockstep report (its `format` field says so).
fn is_report(value: &serde_json::Value) -> bool {
    value.get("format").and_then(|f| f.as_str()) == Some(FORMAT)
}

/// Merges `texts` (file, content): all reports or all summaries. `report_dir`, when given,
/// must be a writable directory (checked first) and needs reports. Errors say which file and why
/// (a file that is not JSON at all says so, with the position).
pub fn merge_texts(texts: &[(PathBuf, String)], report_dir: Option<&Path>) -> Result<Merged, String> {
    let mut reports = 0;
    let mut values = Vec::new();
    for (file, text) in texts {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("{}:{}:{}: not valid JSON: {e}", file.display(), e.line(), e.column()))?;
        reports += usize::from(is_report(&value));
        values.push((file, value));
    }
    if reports == texts.len() {
        if let Some(dir) = report_dir {
            prepare_out(dir)?;
        }
        let mut parts = Vec::new();
        for (path, text) in texts {
            let origin = path.display().to_string();
            let report = Report::from_json(text, &origin)?;
            parts.push((origin, report));
        }
        let report = Report::merge(&parts)?;
        return Ok(Merged::Reports {
            report: Box::new(report),
            parts: parts.len(),
        });
    }
    if reports > 0 {
        return Err("cannot merge report.json files with exploration summaries".to_string());
    }
    if report_dir.is_some() {
        return Err("--report needs report.json files (written by `lockstep ci`)".to_string());
    }
    let mut parts = Vec::new();
    for (file, value) in values {
        // Valid JSON (checked above): what is left is the shape, named by its field.
        let part: ExploreSummary = serde_path_to_error::deserialize(value).map_err(|e| {
            let field = match e.path().to_string() {
                root if root == "." => String::new(),
                path => format!(" field `{path}`:"),
            };
            format!("{}:{field} not an exploration summary: {}", file.display(), e.inner())
        })?;
        part.check_counts()
            .map_err(|e| format!("{}: not a consistent exploration summary: {e}", file.display()))?;
        parts.push((file.display().to_string(), part));
    }
    let warnings = check_summaries(&parts)?;
    let mut merged = ExploreSummary::default();
    for (_, part) in &parts {
        merged.merge(part);
    }
    Ok(Merged::Summaries(Box::new(merged), warnings))
}

/// Checks that `parts` (file, summary) are shards of one exploration, each once: the same run
/// identity, and no seed in two of them. Summaries without an identity (written before
/// lockstep recorded one) are accepted with a warning when all of them lack one — only a
/// summary given twice is caught then — and refused beside summaries that have one.
/// Returns the warnings: no identity, or shards of the run missing from the merge.
fn check_summaries(parts: &[(String, ExploreSummary)]) -> Result<Vec<String>, String> {
    crate::explore::summary::check_strategies(parts)?;
    let (with, without): (Vec<_>, Vec<_>) = parts.iter().partition(|(_, p)| p.run.is_some());
    if let (Some((a, _)), Some((b, _))) = (with.first(), without.first()) {
        return Err(format!(
            "{b} has no run identity (written by an older lockstep) but {a} has one: merge summaries written by one lockstep version"
        ));
    }
    if with.is_empty() {
        for (i, (a, first)) in parts.iter().enumerate() {
            if let Some((b, _)) = parts[i + 1..].iter().find(|(_, p)| p.outcome() == first.outcome()) {
                return Err(format!(
                    "{a} and {b} hold the same summary: merging them would count its seeds twice"
                ));
            }
        }
        let files: Vec<&str> = parts.iter().map(|(f, _)| f.as_str()).collect();
        return Ok(vec![format!(
            "{}: no run identity (written by an older lockstep): cannot check that these are distinct shards of one exploration; merged as given",
            files.join(", ")
        )]);
    }
    let run = |p: &ExploreSummary| {
        p.run.clone().unwrap_or(RunSpan {
            run_id: String::new(),
            spans: Vec::new(),
            strategy: None,
        })
    };
    for (file, part) in parts {
        if let Some(bad) = run(part).spans.iter().find(|s| !s.is_valid()) {
            return Err(format!(
                "{file}: field `run.spans`: seeds {}..{} shard {}/{}: need start <= end and 1 <= K <= N",
                bad.seeds_start, bad.seeds_end, bad.shard_index, bad.shard_count
            ));
        }
    }
    let (first_file, first) = &parts[0];
    let first_run = run(first);
    for (i, (file, part)) in parts.iter().enumerate() {
        let mine = run(part);
        if mine.run_id != first_run.run_id {
            let what = if (&part.scenario, &part.algorithm) != (&first.scenario, &first.algorithm) {
                format!(
                    "exploration of {} ({}) vs {} ({})",
                    part.scenario, part.algorithm, first.scenario, first.algorithm
                )
            } else {
                "same scenario name, but another template, fault profile, lock or lockstep version".to_string()
            };
            return Err(format!(
                "{file}: a summary of another run than {first_file} ({what}; run_id {} vs {}): merge only the shards of one exploration",
                short(&mine.run_id),
                short(&first_run.run_id)
            ));
        }
        for (other_file, other) in &parts[..i] {
            for a in &mine.spans {
                if let Some(b) = run(other).spans.iter().find(|b| a.overlaps(b)) {
                    let what = if a == b {
                        format!("both cover {}", describe(a))
                    } else {
                        format!("{} and {} share seeds", describe(a), describe(b))
                    };
                    return Err(format!(
                        "{file} and {other_file}: {what}: merging them would count those seeds twice (each shard is needed once)"
                    ));
                }
            }
        }
    }
    Ok(missing_shards(parts.iter().flat_map(|(_, p)| run(p).spans)))
}

/// A warning per range whose shards are not all in the merge.
fn missing_shards(spans: impl Iterator<Item = SeedSpan>) -> Vec<String> {
    // Grouped by where the seeds start and how many shards: a shard cut by its time limit ends
    // early (its span covers the seeds it ran) and is still that run's shard.
    let mut by_range: BTreeMap<(u64, u64), (u64, Vec<u64>)> = BTreeMap::new();
    for s in spans {
        let (end, indexes) = by_range.entry((s.seeds_start, s.shard_count)).or_default();
        *end = (*end).max(s.seeds_end);
        indexes.push(s.shard_index);
    }
    by_range
        .into_iter()
        .filter(|((_, count), (_, indexes))| (indexes.len() as u64) < *count)
        .map(|((start, count), (end, indexes))| {
            let have: Vec<String> = indexes.iter().map(|i| i.to_string()).collect();
            format!(
                "seeds {start}..{end}: only shards {} of {count} merged: the summary covers part of the run",
                have.join(", ")
            )
        })
        .collect()
}

/// A span in words: `seeds 0..1000, shard 2/4` (or `seeds 0..1000` when unsharded).
fn describe(s: &SeedSpan) -> String {
    if s.shard_count == 1 {
        format!("seeds {}..{}", s.seeds_start, s.seeds_end)
    } else {
        format!(
            "seeds {}..{}, shard {}/{}",
            s.seeds_start, s.seeds_end, s.shard_index, s.shard_count
        )
    }
}

/// The first 12 hex digits of a run identity (`none` when empty).
fn short(id: &str) -> &str {
    if id.is_empty() {
        "none"
    } else {
        id.get(..12).unwrap_or(id)
    }
}
