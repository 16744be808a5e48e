//! `lockstep merge` as data: sharded results read back and combined — `report.json` files of
//! `lockstep ci --shard` runs into one [`Report`] (judged again on all seeds), or the JSON
//! summaries of sharded explorations into one [`ExploreSummary`]. Nothing is run.
//!
//! Summaries merge only when they are shards of one exploration, each once: the same run
//! identity ([`crate::explore::summary::RunSpan`]) and no seed in two of them. A summary given
//! twice, overlapping seed ranges and summaries of different runs are refused. Summaries of
//! older builds (no identity) merge with a warning, unless two are identical.

use super::{outcome_digest, prepare_out, Report, ScenarioReport, ShardInfo, Status, FORMAT};
use crate::explore::summary::{ExploreSummary, RunSpan, SeedSpan};
use crate::gate::ShardSet;
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
        /// The runs' histories read back from the shards' report directories.
        runs: ShardRuns,
    },
    /// Exploration summaries, and warnings for the user (old summaries without a run
    /// identity, shards missing from the merge).
    Summaries(Box<ExploreSummary>, Vec<String>),
    /// Exploration summaries with shards of the run missing (each named in the warnings): the
    /// summary covers part of the run, so it never passes the gate (issue 53).
    Partial(Box<ExploreSummary>, Vec<String>),
}

impl Merged {
    /// The warnings for the user: histories left out of a merged report, or old summaries and
    /// shards missing from a merge of summaries.
    pub fn warnings(&self) -> &[String] {
        match self {
            Merged::Reports { runs, .. } => &runs.warnings,
            Merged::Summaries(_, warnings) | Merged::Partial(_, warnings) => warnings,
        }
    }
}

/// Each run's history, by scenario name, read back from its shard's report directory
/// (`runs/NAME/history.jsonl` beside the shard's `report.json`) when it is there and its digest
/// is the run's: what the merged directory's `runs/` is written from (`shard_histories`).
#[derive(Debug, Clone, Default)]
pub struct ShardRuns {
    /// The histories, by scenario name.
    pub histories: BTreeMap<String, lockstep_sim::History>,
    /// Why a run's history was left out (a file that did not read back to the run's digest).
    pub warnings: Vec<String>,
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
        let runs = match report_dir {
            Some(_) => shard_histories(
                texts
                    .iter()
                    .map(|(path, _)| path.as_path())
                    .zip(parts.iter().map(|(_, r)| r)),
            ),
            None => Default::default(),
        };
        return Ok(Merged::Reports {
            report: Box::new(report),
            parts: parts.len(),
            runs,
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
    let (warnings, missing) = check_summaries(&parts)?;
    let mut merged = ExploreSummary::default();
    for (_, part) in &parts {
        merged.merge(part);
    }
    Ok(match missing {
        false => Merged::Summaries(Box::new(merged), warnings),
        true => Merged::Partial(Box::new(merged), warnings),
    })
}

/// The largest `history.jsonl` a merge reads back (a run's history is bounded by the simulator's
/// event cap; this only keeps a hostile file from exhausting memory).
const MAX_HISTORY_BYTES: u64 = 512 << 20;

/// The histories of the runs of shard reports (`report.json` path, report), read from
/// `runs/NAME/history.jsonl` beside each `report.json` — what `lockstep ci` wrote there — so the
/// merged report carries every run's history and interactive timeline as an unsharded run does.
/// A history is kept only when it reads back to the digest its report states (and its events
/// are in order: `seq` counting up from 0, true time never going back); a missing file is left
/// out silently (a report moved without its directory), one that does not match with a warning.
pub(crate) fn shard_histories<'a>(parts: impl Iterator<Item = (&'a Path, &'a Report)>) -> ShardRuns {
    let mut histories = BTreeMap::new();
    let mut warnings = Vec::new();
    for (path, report) in parts {
        let dir = super::parent_dir(path);
        for s in &report.scenarios {
            let Some(digest) = s.history.as_ref().map(|h| h.digest.as_str()) else {
                continue;
            };
            let file = dir.join("runs").join(super::slug(&s.name)).join("history.jsonl");
            if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
                continue;
            }
            match read_history(&file, digest) {
                Ok(history) => {
                    histories.insert(s.name.clone(), history);
                }
                Err(e) => warnings.push(format!(
                    "{}: left out of the merged report (run `{}`): {e}",
                    file.display(),
                    s.name
                )),
            }
        }
    }
    ShardRuns { histories, warnings }
}

/// A run's history read back from its `history.jsonl`, checked against the run's `digest`.
fn read_history(file: &Path, digest: &str) -> Result<lockstep_sim::History, String> {
    let bytes = crate::scenario::read_limited(file, MAX_HISTORY_BYTES)?;
    let text = String::from_utf8(bytes).map_err(|e| format!("not valid UTF-8: {e}"))?;
    let events = super::interactive::read_jsonl(&text)?;
    let mut last_us = 0;
    for (i, event) in events.iter().enumerate() {
        if event.seq != i as u64 || event.at_us < last_us {
            return Err(format!(
                "history.jsonl:{}: event out of order (seq {}, at_us {})",
                i + 1,
                event.seq,
                event.at_us
            ));
        }
        last_us = event.at_us;
    }
    let found = super::interactive::digest_of_jsonl(&text)?;
    if found != digest {
        return Err(format!(
            "its digest is {found}, but the report states {digest}: not this run's history"
        ));
    }
    let history: lockstep_sim::History = serde_json::from_value(serde_json::json!({
        "events": events,
        "next_op_id": 0,
    }))
    .map_err(|e| format!("not a history: {e}"))?;
    Ok(history)
}

/// Checks that `parts` (file, summary) are shards of one exploration, each once: the same run
/// identity, and no seed in two of them. Summaries without an identity (written before
/// lockstep recorded one) are accepted with a warning when all of them lack one — only a
/// summary given twice is caught then — and refused beside summaries that have one.
/// Returns the warnings (no identity, or shards of the run missing from the merge) and whether
/// shards are missing.
fn check_summaries(parts: &[(String, ExploreSummary)]) -> Result<(Vec<String>, bool), String> {
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
        return Ok((
            vec![format!(
                "{}: no run identity (written by an older lockstep): cannot check that these are distinct shards of one \
                 exploration; merged as given",
                files.join(", ")
            )],
            false,
        ));
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
    let missing = missing_shards(parts.iter().flat_map(|(_, p)| run(p).spans));
    let partial = !missing.is_empty();
    Ok((missing, partial))
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
                "seeds {start}..{end}: only shards {} of {count} merged: the summary covers part of the run, \
                 so it does not pass the gate (exit 1)",
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

impl Report {
    /// Merges shard reports into one. Scenario runs are combined (a run in two shards must have
    /// the same digest), explorations of the same file merge their summaries and are judged
    /// again on all seeds. Errors: different schema or tool versions, conflicting runs.
    pub fn merge(parts: &[(String, Report)]) -> Result<Report, String> {
        let Some((first_origin, first)) = parts.first() else {
            return Err("nothing to merge".to_string());
        };
        let mut merged = Report::new(None);
        merged.tool = first.tool.clone();
        merged.run_id = first.run_id.clone();
        let mut seen_shards: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        let mut seen: Vec<(&str, Option<ShardInfo>)> = Vec::new();
        let mut totals_error: Option<String> = None;
        // The report each merged scenario row came from (by index).
        let mut scenario_origins: Vec<&str> = Vec::new();
        for (origin, part) in parts {
            if part.run_id != first.run_id {
                return Err(format!(
                    "{origin}: a report of another run than {first_origin} (run_id {} vs {}): merge only the shards of one `lockstep ci` run",
                    part.run_id.as_deref().unwrap_or("none"),
                    first.run_id.as_deref().unwrap_or("none")
                ));
            }
            let shard = part.shard;
            if let Some((other, _)) = seen.iter().find(|(_, s)| shard.is_none() || *s == shard || s.is_none()) {
                return Err(match shard {
                    Some(s) if parts.iter().all(|(_, p)| p.shard.is_some()) => {
                        format!("{origin}: shard {}/{} is also in {other}: each shard is needed once", s.index, s.count)
                    }
                    _ => format!(
                        "{origin} and {other} both cover the whole run (not one shard of it): merging them would count it twice"
                    ),
                });
            }
            seen.push((origin.as_str(), shard));
            // Totals a hand could change without the rows (issue 48): they must add up. Said
            // after the rows are checked, which name more of what is wrong.
            let counted = part.counted_totals();
            if counted != part.totals && totals_error.is_none() {
                totals_error = Some(format!(
                    "{origin}: field `totals`: states {} checks ({} passed, {} failed) over {} scenario runs and {} \
                     explorations, but its rows hold {} checks ({} passed, {} failed) over {} and {}: the report was \
                     changed since lockstep wrote it",
                    part.totals.checks,
                    part.totals.passed,
                    part.totals.failed,
                    part.totals.scenarios,
                    part.totals.explorations,
                    counted.checks,
                    counted.passed,
                    counted.failed,
                    counted.scenarios,
                    counted.explorations
                ));
            }
            if part.tool != first.tool {
                return Err(format!(
                    "{origin}: written by {} {}, but {first_origin} by {} {}",
                    part.tool.name, part.tool.version, first.tool.name, first.tool.version
                ));
            }
            if let Some(shard) = part.shard {
                seen_shards.entry(shard.count).or_default().push(shard.index);
            }
            merged.merged_from += part.merged_from.max(1);
            merged.wall_s = merged.wall_s.max(part.wall_s);
            for scenario in &part.scenarios {
                // `lockstep ci --shard` deals each file to one shard: a run in two reports is not
                // one of its merges, and keeping either copy would hide the other's outcome.
                let same =
                    |s: &ScenarioReport| s.file == scenario.file && s.name == scenario.name && s.seed == scenario.seed;
                if let Some(i) = merged.scenarios.iter().position(same) {
                    return Err(format!(
                        "scenario `{}` ({} seed {}) is in two reports, {} and {origin}: each scenario runs in one shard \
                         of a `lockstep ci` run, so one of them is not a shard of it (merging would hide one \
                         copy's outcome)",
                        scenario.name, scenario.file, scenario.seed, scenario_origins[i]
                    ));
                }
                merged.scenarios.push(rejudged_row(scenario, origin));
                scenario_origins.push(origin.as_str());
            }
            for exploration in &part.explorations {
                match merged
                    .explorations
                    .iter_mut()
                    .find(|e| e.file == exploration.file && e.name == exploration.name)
                {
                    Some(existing) => {
                        if existing.seeds != exploration.seeds || existing.profile != exploration.profile {
                            return Err(format!(
                                "{origin}: exploration `{}` has other seeds or another fault profile than in another report",
                                exploration.name
                            ));
                        }
                        let mut shards = existing.shards.clone().unwrap_or_default();
                        let theirs = exploration.shards.clone().unwrap_or_default();
                        if theirs.iter().any(|s| shards.contains(s)) {
                            return Err(format!(
                                "{origin}: exploration `{}`: shard {} is already in another report",
                                exploration.name,
                                theirs
                                    .iter()
                                    .map(|s| format!("{}/{}", s.index, s.count))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ));
                        }
                        shards.extend(theirs);
                        shards.sort();
                        existing.shards = Some(shards);
                        existing.summary.merge(&exploration.summary);
                    }
                    None => merged.explorations.push(exploration.clone()),
                }
            }
            if merged.ttl_sweep.is_none() {
                merged.ttl_sweep = part.ttl_sweep.clone();
            }
        }
        for (count, indexes) in &mut seen_shards {
            indexes.sort_unstable();
            let expected: Vec<u64> = (1..=*count).collect();
            if *indexes != expected {
                return Err(format!(
                    "the reports cover shards {} of {count}: each of 1..={count} is needed exactly once",
                    indexes.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if let Some(e) = totals_error {
            return Err(e);
        }
        check_shard_set(parts, &merged)?;
        for e in &mut merged.explorations {
            if !e.is_partial() {
                e.shards = None;
            }
            e.outcome_digest = outcome_digest(&e.summary);
            let expect = e.expectations();
            e.judge(&expect);
        }
        merged.finish();
        Ok(merged)
    }
}

/// A shard's scenario row as `merge` keeps it: judged again from its checks, as `lockstep ci`
/// judges a run. A row without checks and without an error checked nothing (a report written by
/// `ci` always has them): vacuous, so an error, never a pass; a row whose status is better than
/// its checks' worst takes theirs.
fn rejudged_row(scenario: &ScenarioReport, origin: &str) -> ScenarioReport {
    let mut row = scenario.clone();
    if row.error.is_none() && row.checks.is_empty() {
        row.status = Status::Error;
        row.error = Some(format!(
            "{origin}: this run has no checks in its shard report: a run that checks nothing is vacuous, not a pass"
        ));
    } else if row.error.is_none() {
        row.status = row.status.min(Status::worst(row.checks.iter().map(|c| c.status)));
    }
    row
}

/// Checks that shard reports cover the whole set they were cut from, exactly (issue 48: a row
/// deleted from a shard's `report.json` left a green merge over 52 of 53 runs): every shard
/// records the same set ([`ShardSet`]), each holds its share of the scenario runs (files are
/// dealt round-robin), and the merged rows are that set, by count and by names' digest, with
/// every exploration. Reports of older builds (no shard records its set) are merged as before.
fn check_shard_set(parts: &[(String, Report)], merged: &Report) -> Result<(), String> {
    let sharded: Vec<&(String, Report)> = parts.iter().filter(|(_, p)| p.shard.is_some()).collect();
    let Some((first_origin, first)) = sharded
        .iter()
        .find(|(_, p)| p.shard_set.is_some())
        .map(|p| (&p.0, &p.1))
    else {
        return Ok(());
    };
    let Some(set) = &first.shard_set else {
        return Ok(());
    };
    for (origin, part) in &sharded {
        match &part.shard_set {
            None => {
                return Err(format!(
                    "{origin}: field `shard_set` is missing, but {first_origin} records the set it was cut from: \
                     each shard of one run records it; this report was changed or is not a shard of that run"
                ))
            }
            Some(theirs) if theirs != set => {
                return Err(format!(
                    "{origin}: field `shard_set`: cut from a set of {} scenario runs and {} explorations ({}), but \
                     {first_origin} from one of {} and {} ({}): not shards of one run",
                    theirs.scenarios,
                    theirs.explorations,
                    short(&theirs.digest),
                    set.scenarios,
                    set.explorations,
                    short(&set.digest)
                ))
            }
            Some(_) => {}
        }
        if let Some(shard) = part.shard {
            // Files `i` with `i % N == K - 1`.
            let share = (set.scenarios + shard.count - shard.index) / shard.count.max(1);
            if part.scenarios.len() as u64 != share {
                return Err(format!(
                    "{origin}: shard {}/{} holds {} scenario runs, but its share of the {} it was cut from is {share}: \
                     a run is missing from its `scenarios` (or one was added); the merged gate would not cover the run",
                    shard.index,
                    shard.count,
                    part.scenarios.len(),
                    set.scenarios
                ));
            }
            if part.explorations.len() as u64 != set.explorations {
                return Err(format!(
                    "{origin}: shard {}/{} holds {} explorations, but every shard runs its share of all {}: one is \
                     missing from its `explorations` (or one was added)",
                    shard.index,
                    shard.count,
                    part.explorations.len(),
                    set.explorations
                ));
            }
        }
    }
    let covered = ShardSet::of(
        merged.scenarios.iter().map(|s| (s.file.as_str(), s.name.as_str())),
        merged.explorations.len() as u64,
    );
    if &covered != set {
        return Err(format!(
            "the reports cover {} scenario runs and {} explorations ({}), but were cut from a set of {} and {} ({}): \
             the merged gate would not cover the run they were cut from",
            covered.scenarios,
            covered.explorations,
            short(&covered.digest),
            set.scenarios,
            set.explorations,
            short(&set.digest)
        ));
    }
    Ok(())
}
