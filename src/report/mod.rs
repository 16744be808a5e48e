//! Safety reports for CI: what `lockstep ci` writes and `lockstep merge` combines.
//!
//! A [`Report`] is the versioned, documented `report.json` (see `docs/report-schema.md` and the
//! JSON Schema `docs/report-schema.json`): the tool version, each scenario run with its seed,
//! fault plan, every checker's verdict against its expectation with the witness, liveness
//! figures, the history digest and the data of its timeline; each exploration with its seeds,
//! fault profile, counts and the digest of its outcome; optionally the TTL trade-off sweep.
//!
//! From a report alone (no history needed, so merged shard reports render too) [`write_report`]
//! writes the whole directory, each file atomically:
//!
//! ```text
//! OUT/report.json     the report (schema below)
//! OUT/summary.md      Markdown for a CI job summary or a PR comment ([`markdown`])
//! OUT/junit.xml       one test case per scenario × checker ([`junit`])
//! OUT/charts/*.svg    timelines, the TTL trade-off, exploration summaries ([`charts`]),
//! OUT/charts/*.png      drawn with an embedded font (DejaVu Sans)
//! OUT/index.html      one self-contained page ([`html`])
//! ```
//!
//! The report is built ([`Report::build`]) from what the gate ran (`crate::run::gate::CiRun`,
//! produced by `crate::app::ci`), merged from shard reports ([`merge`]), and rendered; nothing
//! here runs a simulation. [`Headline`] is the one summary every renderer prints (the CLI's
//! closing lines in [`console`], the Markdown, the HTML); [`console`] also renders what the other
//! commands print.
//!
//! Everything in a report is deterministic except the wall-clock figures (`wall_ms`, `wall_s`,
//! `throughput`), so two runs on any machine give the same digests and verdicts.

pub mod charts;
pub mod console;
pub mod headline;
pub mod html;
pub mod junit;
pub mod live;
pub mod markdown;
pub mod merge;
pub mod sweep;
pub mod timeline;

use crate::checker::{CheckResult, Verdict};
use crate::explore::generate::FaultProfile;
use crate::explore::summary::FailingSeed;
use crate::explore::ExploreSummary;
use crate::history::OpHistory;
use crate::liveness::{self, percentile};
use crate::run::expect::{self, Outcome};
use crate::run::gate::{CiRun, ExplorationOutcome, ScenarioOutcome};
use crate::run::ScenarioRun;
use crate::scenario::{ExploreExpect, Scenario};
pub use headline::Headline;
use lockstep_sim::{Event, ScheduledFault};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::run::expect::Status;

/// The `format` field of every report.
pub const FORMAT: &str = "lockstep-report";

/// The version of the report schema this build writes and reads. Readers reject other versions.
/// Bumped on any change that is not a pure addition of optional fields.
pub const SCHEMA_VERSION: u32 = 1;

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
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`SCHEMA_VERSION`] for reports this build writes.
    pub schema_version: u32,
    /// The program that wrote it.
    pub tool: Tool,
    /// The shard this report covers; `None` for a whole run or a merge.
    pub shard: Option<ShardInfo>,
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
    pub ttl_sweep: Option<sweep::TtlSweep>,
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

/// SHA-256 of the deterministic part of an exploration summary (see
/// [`ExploreSummary::outcome_digest`]).
pub fn outcome_digest(summary: &ExploreSummary) -> String {
    summary.outcome_digest()
}

/// The first line of `text`, trimmed.
fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// The report of one checker result against its expectation.
fn check_report(result: &CheckResult, expected: Option<Verdict>) -> CheckReport {
    let status = expect::verdict(expected, result.verdict);
    CheckReport {
        checker: result.checker.clone(),
        verdict: result.verdict,
        expected,
        status,
        explanation: result.explanation.clone(),
        witness: result.witness.clone(),
    }
}

/// A shell word: quoted when it has anything but `A-Za-z0-9._/-`.
pub(crate) fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-' | ',' | ':'))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The report of one scenario run.
pub fn scenario_report(file: &Path, scenario: &Scenario, run: &ScenarioRun, wall_ms: f64) -> ScenarioReport {
    let checks: Vec<CheckReport> = run
        .results
        .iter()
        .map(|r| check_report(r, scenario.expected(&r.checker)))
        .collect();
    // The history is read once, for the liveness figures and the timeline.
    let history = OpHistory::new(&run.history);
    let live = liveness::of(&history);
    let mut latencies = live.acquire_latencies_ms.clone();
    latencies.sort_unstable();
    ScenarioReport {
        name: scenario.name.clone(),
        file: file.display().to_string(),
        description: first_line(&scenario.description),
        seed: run.seed,
        algorithm: scenario.lock.algorithm.name().to_string(),
        fencing: scenario.lock.fencing.name().to_string(),
        resource: scenario.resource.name().to_string(),
        ttl_ms: scenario.lock.ttl_ms,
        faults: scenario.faults.faults.clone(),
        status: Status::worst(checks.iter().map(|c| c.status)),
        error: None,
        checks,
        liveness: Some(LivenessReport {
            acquires: latencies.len() as u64,
            acquire_latency_p50_ms: percentile(&latencies, 50),
            acquire_latency_p99_ms: percentile(&latencies, 99),
            acquires_abandoned: live.acquires_abandoned,
            unavailable_ms: live.unavailable_ms,
            held_ms: live.held_ms,
        }),
        history: Some(HistoryReport {
            events: run.history.len() as u64,
            digest: run.digest.clone(),
            end_ms: run.end.at_ms,
        }),
        replay: format!(
            "lockstep run {} --seed {}",
            shell_word(&file.display().to_string()),
            run.seed
        ),
        timeline: Some(timeline::TimelineData::from_history(scenario, run, &history)),
        wall_ms,
    }
}

/// The report of a scenario the world could not run.
pub fn scenario_error_report(file: &Path, scenario: &Scenario, message: String) -> ScenarioReport {
    ScenarioReport {
        name: scenario.name.clone(),
        file: file.display().to_string(),
        description: first_line(&scenario.description),
        seed: scenario.seed,
        algorithm: scenario.lock.algorithm.name().to_string(),
        fencing: scenario.lock.fencing.name().to_string(),
        resource: scenario.resource.name().to_string(),
        ttl_ms: scenario.lock.ttl_ms,
        faults: scenario.faults.faults.clone(),
        status: Status::Error,
        error: Some(message),
        checks: Vec::new(),
        liveness: None,
        history: None,
        replay: format!("lockstep run {}", shell_word(&file.display().to_string())),
        timeline: None,
        wall_ms: 0.0,
    }
}

/// The command that explores `seed` alone with `profile` (and shrinks it).
fn explore_replay(file: &str, profile: &FaultProfile, seed: u64) -> String {
    let mut cmd = format!(
        "lockstep explore {} --seed-range {seed}..{} --kinds {} --faults-max {}",
        shell_word(file),
        seed + 1,
        shell_word(&profile.kinds.join(",")),
        profile.faults_max
    );
    if profile.lock_aware {
        cmd.push_str(" --lock-aware");
    }
    cmd
}

impl ScenarioReport {
    /// The row of one of the gate's scenario runs.
    pub fn of(outcome: &ScenarioOutcome) -> ScenarioReport {
        match &outcome.run {
            Ok(run) => scenario_report(&outcome.path, &outcome.scenario, run, outcome.wall_ms),
            Err(message) => scenario_error_report(&outcome.path, &outcome.scenario, message.clone()),
        }
    }
}

impl ExplorationReport {
    /// The row of one of the gate's explorations.
    pub fn of(outcome: &ExplorationOutcome) -> ExplorationReport {
        let shard = outcome.shard.map(|s| ShardInfo {
            index: s.index,
            count: s.count,
        });
        ExplorationReport::new(
            &outcome.path.display().to_string(),
            SeedRange {
                start: outcome.seeds.start,
                end: outcome.seeds.end,
            },
            shard.map(|s| vec![s]),
            outcome.profile.clone(),
            &outcome.expect,
            outcome.summary.clone(),
        )
    }

    /// A report of `summary`, judged against `expect`. `deferred`: this is one shard, so a
    /// `some-invalid` expectation that found nothing yet is left to the merge (⚠️, not ❌).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        file: &str,
        seeds: SeedRange,
        shards: Option<Vec<ShardInfo>>,
        profile: FaultProfile,
        expect: &BTreeMap<String, ExploreExpect>,
        summary: ExploreSummary,
    ) -> Self {
        let mut report = ExplorationReport {
            name: summary.scenario.clone(),
            file: file.to_string(),
            algorithm: summary.algorithm.clone(),
            seeds,
            shards,
            profile,
            status: Status::Pass,
            checks: Vec::new(),
            outcome_digest: outcome_digest(&summary),
            summary,
        };
        report.judge(expect);
        report
    }

    /// Whether this report covers only part of the seeds (some shards).
    pub fn is_partial(&self) -> bool {
        self.shards
            .as_ref()
            .is_some_and(|s| s.first().is_some_and(|f| s.len() as u64 != f.count))
    }

    /// The expectations as the report states them.
    pub fn expectations(&self) -> BTreeMap<String, ExploreExpect> {
        self.checks
            .iter()
            .filter_map(|c| c.expected.map(|e| (c.checker.clone(), e)))
            .collect()
    }

    /// (Re)computes the checks and the status from the summary.
    pub fn judge(&mut self, expect: &BTreeMap<String, ExploreExpect>) {
        let partial = self.is_partial();
        let s = &self.summary;
        let mut checks = Vec::new();
        for name in crate::checker::NAMES {
            let invalid = s.violations.get(*name).copied().unwrap_or(0);
            let unknown = s.unknown.get(*name).copied().unwrap_or(0);
            let expected = expect.get(*name).copied();
            let first_failing = s
                .first_failing
                .iter()
                .find(|f| f.checkers.iter().any(|c| c == name))
                .cloned();
            let status = expect::exploration_check(expected, invalid, partial);
            let mut explanation = format!("invalid on {invalid} of {} seeds ({} unknown)", s.seeds_run, unknown);
            if let Some(f) = &first_failing {
                explanation.push_str(&format!(
                    "; first on seed {} with {} ({} fault{})",
                    f.seed,
                    f.fault_kinds.join(", "),
                    f.faults,
                    if f.faults == 1 { "" } else { "s" }
                ));
            }
            if expected == Some(ExploreExpect::SomeInvalid) && invalid == 0 {
                explanation.push_str(if partial {
                    "; no violation in this shard yet (decided when the shards are merged)"
                } else {
                    "; the exploration was expected to find a violation"
                });
            }
            checks.push(ExploreCheckReport {
                checker: name.to_string(),
                expected,
                invalid_seeds: invalid,
                unknown_seeds: unknown,
                status,
                explanation,
                replay: first_failing
                    .as_ref()
                    .map(|f| explore_replay(&self.file, &self.profile, f.seed)),
                first_failing,
            });
        }
        self.status = expect::exploration_status(crate::checker::NAMES, expect, s, partial);
        self.checks = checks;
    }
}

impl Report {
    /// An empty report of this build.
    pub fn new(shard: Option<ShardInfo>) -> Self {
        Report {
            format: FORMAT.to_string(),
            schema_version: SCHEMA_VERSION,
            tool: Tool::current(),
            shard,
            merged_from: 0,
            ok: true,
            totals: Totals::default(),
            scenarios: Vec::new(),
            explorations: Vec::new(),
            ttl_sweep: None,
            wall_s: 0.0,
        }
    }

    /// Recomputes `totals` and `ok` from the rows.
    pub fn finish(&mut self) {
        let mut t = Totals {
            scenarios: self.scenarios.len() as u64,
            explorations: self.explorations.len() as u64,
            ..Totals::default()
        };
        let statuses = self
            .scenarios
            .iter()
            .flat_map(|s| s.checks.iter().map(|c| c.status))
            .chain(self.explorations.iter().flat_map(|e| e.checks.iter().map(|c| c.status)));
        for status in statuses {
            t.checks += 1;
            match status {
                Status::Pass => t.passed += 1,
                Status::Fail | Status::Error => t.failed += 1,
                Status::Unchecked => t.unchecked += 1,
            }
        }
        self.ok = t.failed == 0
            && self.scenarios.iter().all(|s| !s.status.is_failure())
            && self.explorations.iter().all(|e| !e.status.is_failure());
        self.totals = t;
    }

    /// How the gate came out: held when every expectation held, a run failure when a scenario
    /// could not run, unexpected otherwise.
    pub fn outcome(&self) -> Outcome {
        if self.scenarios.iter().any(|s| s.status == Status::Error) {
            Outcome::RunFailed
        } else {
            Outcome::held_if(self.ok)
        }
    }

    /// The exit code of `lockstep ci` / `lockstep merge` for this report: 0 when every
    /// expectation held, 2 when a scenario could not run (bad input), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        self.outcome().exit_code()
    }

    /// The report of a gate run: one row per scenario run and per exploration, judged, with
    /// the totals.
    pub fn build(ci: &CiRun) -> Report {
        let mut report = Report::new(ci.shard.map(|s| ShardInfo {
            index: s.index,
            count: s.count,
        }));
        report.scenarios = ci.scenarios.iter().map(ScenarioReport::of).collect();
        report.explorations = ci.explorations.iter().map(ExplorationReport::of).collect();
        report.ttl_sweep = ci.ttl_sweep.clone();
        report.wall_s = ci.wall_s;
        report.finish();
        report
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
        serde_json::from_value(value)
            .map_err(|e| format!("{origin}: does not match report schema {SCHEMA_VERSION}: {e}"))
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        // Plain data with string keys: serialisation cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Merges shard reports into one. Scenario runs are combined (a run in two shards must have
    /// the same digest), explorations of the same file merge their summaries and are judged
    /// again on all seeds. Errors: different schema or tool versions, conflicting runs.
    pub fn merge(parts: &[(String, Report)]) -> Result<Report, String> {
        let Some((first_origin, first)) = parts.first() else {
            return Err("nothing to merge".to_string());
        };
        let mut merged = Report::new(None);
        merged.tool = first.tool.clone();
        let mut seen_shards: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (origin, part) in parts {
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
                match merged
                    .scenarios
                    .iter()
                    .find(|s| s.file == scenario.file && s.name == scenario.name && s.seed == scenario.seed)
                {
                    Some(existing) => {
                        let digest = |s: &ScenarioReport| s.history.as_ref().map(|h| h.digest.clone());
                        if digest(existing) != digest(scenario) {
                            return Err(format!(
                                "{origin}: scenario `{}` seed {} has a different history digest than in another report",
                                scenario.name, scenario.seed
                            ));
                        }
                    }
                    None => merged.scenarios.push(scenario.clone()),
                }
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

/// Writes `bytes` to `path` atomically: a temporary file beside it, then a rename. Creates the
/// directory if needed. The one atomic write: the report's files, and the CLI's summaries and
/// counterexamples.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// Writes `value` as pretty JSON to `path`, atomically (summaries, merged results).
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), String> {
    // Plain data with string keys: serialisation cannot fail.
    let json = serde_json::to_string_pretty(value).unwrap_or_default();
    write_atomic(path, json.as_bytes())
}

/// Makes sure `out` is a directory we can write into (creating it), before anything runs.
pub fn prepare_out(out: &Path) -> Result<(), String> {
    if out.exists() && !out.is_dir() {
        return Err(format!(
            "report directory {}: exists and is not a directory",
            out.display()
        ));
    }
    std::fs::create_dir_all(out.join("charts"))
        .map_err(|e| format!("report directory {}: cannot create it: {e}", out.display()))?;
    let probe = out.join(format!(".lockstep-write-probe.{}", std::process::id()));
    std::fs::write(&probe, b"probe").map_err(|e| format!("report directory {}: not writable: {e}", out.display()))?;
    std::fs::remove_file(&probe)
        .map_err(|e| format!("report directory {}: cannot remove a probe file: {e}", out.display()))?;
    Ok(())
}

/// The chart files of a report, relative to its directory: `(stem, title)`; each exists as
/// `charts/{stem}.svg` and `charts/{stem}.png`.
pub fn chart_stems(report: &Report) -> Vec<(String, String)> {
    let mut stems = Vec::new();
    for s in &report.scenarios {
        if s.timeline.is_some() {
            stems.push((format!("timeline-{}", s.name), format!("Timeline: {}", s.name)));
        }
    }
    if report.ttl_sweep.is_some() {
        stems.push(("ttl-tradeoff".to_string(), "The TTL trade-off".to_string()));
    }
    for e in &report.explorations {
        stems.push((format!("explore-{}", e.name), format!("Exploration: {}", e.name)));
    }
    stems
}

/// Writes the whole report directory: `report.json`, `summary.md`, `junit.xml`, the charts (SVG
/// and PNG) and `index.html`, each atomically. Returns the paths written.
pub fn write_report(report: &Report, out: &Path) -> Result<Vec<PathBuf>, String> {
    prepare_out(out)?;
    let mut written = Vec::new();
    let mut put = |rel: &str, bytes: &[u8]| -> Result<(), String> {
        let path = out.join(rel);
        write_atomic(&path, bytes)?;
        written.push(path);
        Ok(())
    };
    put("report.json", report.to_json().as_bytes())?;
    put("summary.md", markdown::summary(report).as_bytes())?;
    put("junit.xml", junit::junit_xml(report)?.as_bytes())?;
    let mut svgs = BTreeMap::new();
    for (stem, chart) in charts::all(report) {
        let svg = chart.svg()?;
        put(&format!("charts/{stem}.svg"), svg.as_bytes())?;
        put(&format!("charts/{stem}.png"), &chart.png()?)?;
        svgs.insert(stem, svg);
    }
    put("index.html", html::index(report, &svgs).as_bytes())?;
    Ok(written)
}
