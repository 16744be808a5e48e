//! The report's data: what `report.json` holds (see `docs/report-schema.md`), read back and
//! checked ([`Report::from_json`], [`Report::validate`]), and the names its files take (scenario
//! names become chart and run file names: [`slug`], [`chart_stems`]). Building a report from a
//! gate run is [`super::build`]; merging shard reports is [`super::merge`]; writing the directory
//! is [`super::staging`].

use super::timeline;
use crate::explore::summary::FailingSeed;
use crate::explore::ExploreSummary;
use crate::model::fault::FaultProfile;
use crate::model::Verdict;
use crate::run::expect;
use crate::scenario::ExploreExpect;
use lockstep_sim::{Event, ScheduledFault};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::run::expect::Status;

/// The `format` field of every report.
pub(crate) const FORMAT: &str = "lockstep-report";

/// The version of the report schema this build writes and reads. Readers reject other versions.
/// Bumped on any change that is not a pure addition of optional fields.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// The program that wrote the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// `lockstep`.
    pub name: String,
    /// Its version (Cargo package version).
    pub version: String,
}

impl Tool {
    /// This build.
    pub fn current() -> Self {
        Tool {
            name: "lockstep".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// Which shard of a CI matrix a report covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardInfo {
    /// 1-based index.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

/// Counts over the whole report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Totals {
    /// Scenario runs.
    pub scenarios: u64,
    /// Explorations.
    pub explorations: u64,
    /// Checks (scenario × checker and exploration × checker).
    pub checks: u64,
    /// Checks whose expectation held.
    pub passed: u64,
    /// Checks whose expectation failed (errors included).
    pub failed: u64,
    /// Checks without an expectation (or decided at merge).
    pub unchecked: u64,
}

/// A whole report: `report.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Always `FORMAT`.
    pub format: String,
    /// Always `SCHEMA_VERSION` for reports this build writes.
    pub schema_version: u32,
    /// The program that wrote it.
    pub tool: Tool,
    /// The identity of the run: SHA-256 of its inputs (each scenario file's path and content)
    /// and options; the same in every shard of one run. `None` in reports of older builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The shard this report covers; `None` for a whole run or a merge.
    pub shard: Option<ShardInfo>,
    /// A shard's record of the whole set it was cut from, so that `merge` can check the shards
    /// cover it exactly (issue 48); only in shard reports (and absent from older ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_set: Option<crate::gate::ShardSet>,
    /// How many shard reports were merged into this one (0: not a merge).
    pub merged_from: u64,
    /// Whether every expectation held (what the exit code says).
    pub ok: bool,
    /// Counts.
    pub totals: Totals,
    /// The scenario runs, in input order.
    pub scenarios: Vec<ScenarioReport>,
    /// The explorations, in input order.
    pub explorations: Vec<ExplorationReport>,
    /// The TTL trade-off sweep, when asked for.
    pub ttl_sweep: Option<crate::explore::sweep::TtlSweep>,
    /// Wall seconds the whole run took (not deterministic).
    pub wall_s: f64,
}

/// One checker on one scenario run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckReport {
    /// The checker's name.
    pub checker: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// What the scenario expects (`None`: no expectation).
    pub expected: Option<Verdict>,
    /// How the expectation came out.
    pub status: Status,
    /// The checker's one-line explanation.
    pub explanation: String,
    /// The events proving a violation (empty when valid).
    pub witness: Vec<Event>,
}

/// Liveness figures of one run (see [`crate::liveness`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LivenessReport {
    /// Completed acquire episodes.
    pub acquires: u64,
    /// Their median latency, ms.
    pub acquire_latency_p50_ms: Option<u64>,
    /// Their 99th-percentile latency, ms.
    pub acquire_latency_p99_ms: Option<u64>,
    /// Episodes that never got the lock.
    pub acquires_abandoned: u64,
    /// Time nobody held the lock while someone waited, ms.
    pub unavailable_ms: u64,
    /// Time someone held the lock, ms.
    pub held_ms: u64,
}

/// The run's history, summarised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryReport {
    /// Number of events.
    pub events: u64,
    /// SHA-256 over the events' canonical JSON lines (see `lockstep_sim::History::digest`).
    pub digest: String,
    /// When the run ended, true ms.
    pub end_ms: u64,
}

/// One scenario run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioReport {
    /// The scenario's name.
    pub name: String,
    /// The file, as given on the command line.
    pub file: String,
    /// The first line of its description.
    pub description: String,
    /// The seed used.
    pub seed: u64,
    /// The lock algorithm.
    pub algorithm: String,
    /// `none` or `incr`.
    pub fencing: String,
    /// `unfenced`, `fenced` or `strict`.
    pub resource: String,
    /// The lock's TTL, ms.
    pub ttl_ms: u64,
    /// The fault plan, as run.
    pub faults: Vec<ScheduledFault>,
    /// The row's status: the worst of its checks (`error` when the world failed).
    pub status: Status,
    /// Why the world could not run the scenario (then there are no checks).
    pub error: Option<String>,
    /// One per checker, in the checkers' order.
    pub checks: Vec<CheckReport>,
    /// Liveness figures.
    pub liveness: Option<LivenessReport>,
    /// The history's size and digest.
    pub history: Option<HistoryReport>,
    /// The command that replays this run.
    pub replay: String,
    /// What the timeline chart draws.
    pub timeline: Option<timeline::TimelineData>,
    /// Wall milliseconds the run took (not deterministic).
    pub wall_ms: f64,
    /// The scenario this run is shown beside (the file's `compare_with`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_with: Option<String>,
    /// For a counterexample `lockstep explore` wrote: the explorer's classification of it (an
    /// implementation bug, or an assumption broken) and the checker it rests on — what the
    /// report leads with ([`super::verdict`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<super::verdict::Classification>,
}

/// One checker over an exploration's seeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExploreCheckReport {
    /// The checker's name.
    pub checker: String,
    /// What the `[explore.expect]` table says (`None`: nothing).
    pub expected: Option<ExploreExpect>,
    /// Seeds on which it answered invalid.
    pub invalid_seeds: u64,
    /// Seeds on which it answered unknown.
    pub unknown_seeds: u64,
    /// How the expectation came out.
    pub status: Status,
    /// One line saying so.
    pub explanation: String,
    /// The smallest seed on which it answered invalid, with that seed's fault kinds.
    pub first_failing: Option<FailingSeed>,
    /// The command that replays (and shrinks) that seed.
    pub replay: Option<String>,
}

/// The seeds `start..end` (end excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedRange {
    /// The first seed.
    pub start: u64,
    /// One past the last seed.
    pub end: u64,
}

/// One exploration (a scenario's `[explore]` block).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplorationReport {
    /// The template scenario's name.
    pub name: String,
    /// Its file.
    pub file: String,
    /// The lock algorithm.
    pub algorithm: String,
    /// The seeds of the whole exploration (a shard runs some of them).
    pub seeds: SeedRange,
    /// The shards whose seeds this report covers (`None`: all seeds).
    pub shards: Option<Vec<ShardInfo>>,
    /// The fault generator's profile.
    pub profile: FaultProfile,
    /// The worst of its checks; `error` when seeds could not be judged.
    pub status: Status,
    /// One per checker.
    pub checks: Vec<ExploreCheckReport>,
    /// The counts (`throughput` in it is wall-clock, not deterministic).
    pub summary: ExploreSummary,
    /// SHA-256 of the summary's deterministic part (everything but `throughput`) as JSON.
    pub outcome_digest: String,
}

impl Report {
    /// The report with its wall-clock figures (`keep` false): every wall time, throughput and the
    /// worker count set to 0 — what `lockstep ci --no-timings` writes, so that a committed report
    /// regenerated on any machine changes only where the runs did (issue 52).
    pub fn timed(mut self, keep: bool) -> Report {
        if keep {
            return self;
        }
        self.wall_s = 0.0;
        for s in &mut self.scenarios {
            s.wall_ms = 0.0;
        }
        for e in &mut self.explorations {
            let t = &mut e.summary.throughput;
            (t.wall_s, t.scenarios_per_s, t.sim_s_per_wall_s, t.jobs) = (0.0, 0.0, 0.0, 0);
        }
        self
    }

    /// Parses a `report.json`, checking its format and schema version. Errors name `origin`.
    pub fn from_json(text: &str, origin: &str) -> Result<Report, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{origin}:{}:{}: not JSON: {e}", e.line(), e.column()))?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            _ => {
                return Err(format!(
                    "{origin}: field `format`: not a lockstep report (expected \"{FORMAT}\")"
                ))
            }
        }
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "{origin}: field `schema_version`: version {v}, but this lockstep reads version {SCHEMA_VERSION}"
                ))
            }
            None => return Err(format!("{origin}: field `schema_version`: missing or not an integer")),
        }
        let report: Report = serde_path_to_error::deserialize(value).map_err(|e| {
            format!(
                "{origin}: field `{}`: does not match report schema {SCHEMA_VERSION}: {}",
                e.path(),
                e.inner()
            )
        })?;
        report.validate().map_err(|e| format!("{origin}: {e}"))?;
        Ok(report)
    }

    /// Checks what the schema says beyond the JSON types: scenario and exploration names are
    /// `[a-z0-9-]+` (at most `NAME_MAX` bytes: they name chart files), shards are `1 ≤ K ≤ N`.
    /// A report read from a file is data, never a path: this is checked before anything is built
    /// from it.
    pub fn validate(&self) -> Result<(), String> {
        let names = self
            .scenarios
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("scenarios[{i}].name"), &s.name))
            .chain(
                self.explorations
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (format!("explorations[{i}].name"), &e.name)),
            );
        for (field, name) in names {
            if !is_valid_name(name) {
                return Err(format!(
                    "field `{field}`: {name:?} is not a scenario name (1 to {NAME_MAX} of a-z, 0-9 and `-`)"
                ));
            }
        }
        // The statuses follow from the verdicts: a report is data, and a gate trusts no
        // `status` it can recompute (an edited shard must not turn a failure into a pass).
        let mut seen = BTreeMap::new();
        for (i, row) in self.scenarios.iter().enumerate() {
            if let Some(first) = seen.insert(&row.name, i) {
                return Err(format!(
                    "field `scenarios[{i}].name`: `{}` is also scenarios[{first}]: each scenario runs once",
                    row.name
                ));
            }
            for (j, check) in row.checks.iter().enumerate() {
                let status = expect::verdict(check.expected, check.verdict);
                if check.status != status {
                    return Err(format!(
                        "field `scenarios[{i}].checks[{j}].status`: `{}`, but verdict `{}` against expectation `{}` is `{}`",
                        check.status.name(),
                        check.verdict.name(),
                        check.expected.map_or("none", |e| e.name()),
                        status.name()
                    ));
                }
            }
            let status = match row.error {
                Some(_) => Status::Error,
                None => Status::worst(row.checks.iter().map(|c| c.status)),
            };
            if row.status != status {
                return Err(format!(
                    "field `scenarios[{i}].status`: `{}`, but its checks make it `{}`",
                    row.status.name(),
                    status.name()
                ));
            }
        }
        let shards = self
            .shard
            .iter()
            .chain(self.explorations.iter().flat_map(|e| e.shards.iter().flatten()));
        for shard in shards {
            if shard.count == 0 || shard.index == 0 || shard.index > shard.count {
                return Err(format!("shard {}/{}: need 1 <= K <= N", shard.index, shard.count));
            }
        }
        Ok(())
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        // Plain data with string keys: serialisation cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// The longest scenario name a report may carry (names become chart file names): the scenario
/// file's own limit.
pub(crate) const NAME_MAX: usize = crate::scenario::SCENARIO_NAME_MAX;

/// The longest chart file stem: a name ([`NAME_MAX`]) with its kind's prefix (`timeline-`,
/// `explore-`) and a numeric suffix that keeps stems unique.
const STEM_MAX: usize = NAME_MAX + 40;

/// Whether `stem` may name a chart file: 1 to [`STEM_MAX`] bytes of `a-z`, `0-9` and `-`.
pub(super) fn is_chart_stem(stem: &str) -> bool {
    is_slug_of_at_most(stem, STEM_MAX)
}

/// Whether `text` is 1 to `max` bytes of `a-z`, `0-9` and `-`.
fn is_slug_of_at_most(text: &str, max: usize) -> bool {
    !text.is_empty()
        && text.len() <= max
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether `name` is a scenario name as the schema defines it: 1 to [`NAME_MAX`] bytes of
/// `a-z`, `0-9` and `-`.
fn is_valid_name(name: &str) -> bool {
    is_slug_of_at_most(name, NAME_MAX)
}

/// A file-name slug of `name`: `a-z`, `0-9` and `-` only (anything else becomes `-`), at most
/// [`NAME_MAX`] bytes, never empty. A valid name is its own slug.
pub(crate) fn slug(name: &str) -> String {
    let mut slug: String = name
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .take(NAME_MAX)
        .collect();
    if slug.is_empty() {
        slug.push('x');
    }
    slug
}

/// The chart files of a report, relative to its directory: `(stem, title)`; each exists as
/// `charts/{stem}.svg` and `charts/{stem}.png`. Stems are slugs (`slug`), made unique by a
/// numeric suffix: no stem is a path, and no two charts share a file.
pub fn chart_stems(report: &Report) -> Vec<(String, String)> {
    let mut stems = Vec::new();
    for s in &report.scenarios {
        if s.timeline.is_some() {
            stems.push((format!("timeline-{}", slug(&s.name)), format!("Timeline: {}", s.name)));
        }
    }
    if report.ttl_sweep.is_some() {
        stems.push(("ttl-tradeoff".to_string(), "The TTL trade-off".to_string()));
    }
    for e in &report.explorations {
        stems.push((format!("explore-{}", slug(&e.name)), format!("Exploration: {}", e.name)));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (stem, _) in &mut stems {
        if !seen.insert(stem.clone()) {
            let mut n = 2;
            while seen.contains(&format!("{stem}-{n}")) {
                n += 1;
            }
            *stem = format!("{stem}-{n}");
            seen.insert(stem.clone());
        }
    }
    stems
}
