//! Safety reports for CI: what `lockstep ci` writes and `lockstep merge` combines.
//!
//! A [`Report`] is the versioned, documented `report.json` (see `docs/report-schema.md` and the
//! JSON Schema `docs/report-schema.json`): the tool version, each scenario run with its seed,
//! fault plan, every checker's verdict against its expectation with the witness, liveness
//! figures, the history digest and the data of its timeline; each exploration with its seeds,
//! fault profile, counts and the digest of its outcome; optionally the TTL trade-off sweep.
//!
//! From a report alone (no history needed, so merged shard reports render too) [`write_report`]
//! writes the whole directory, built beside OUT and swapped in as a whole:
//!
//! ```text
//! OUT/report.json     the report (schema below)
//! OUT/summary.md      Markdown for a CI job summary or a PR comment ([`markdown`])
//! OUT/junit.xml       one test case per scenario × checker ([`junit`])
//! OUT/charts/*.svg    timelines, the TTL trade-off, exploration summaries ([`charts`]),
//! OUT/charts/*.png      drawn with an embedded font (DejaVu Sans)
//! OUT/index.html      one self-contained page ([`html`])
//! OUT/manifest.json   every file and directory lockstep wrote there ([`Manifest`])
//! OUT/.lockstep-owner the owner marker made with the directory (`staging::OWNER_FILE`)
//! ```
//!
//! The manifest is what makes OUT replaceable by the next report: a directory is replaced only
//! if everything in it is listed there, and only what is listed is ever removed
//! ([`prepare_out`]).
//!
//! The report is built ([`Report::build`]) from what the gate ran (`crate::gate::CiRun`,
//! produced by `crate::app::ci`), merged from shard reports ([`merge`]), and rendered; nothing
//! here runs a simulation. [`Headline`] is the one summary every renderer prints (the CLI's
//! closing lines in [`console`], the Markdown, the HTML); [`console`] also renders what the other
//! commands print.
//!
//! Everything in a report is deterministic except the wall-clock figures (`wall_ms`, `wall_s`,
//! `throughput`), so two runs on any machine give the same digests and verdicts.

pub mod charts;
pub mod console;
mod exploration;
pub mod headline;
pub mod html;
pub mod interactive;
pub mod junit;
pub mod live;
pub mod markdown;
pub mod merge;
mod staging;
pub use staging::{leftover_dirs, Manifest, MANIFEST_FILE, MANIFEST_FORMAT};
pub mod narrative;
pub mod sweep;
pub mod timeline;

use crate::checker::{CheckResult, Verdict};
use crate::emit::shell_word;
use crate::explore::generate::FaultProfile;
use crate::explore::summary::FailingSeed;
use crate::explore::ExploreSummary;
use crate::gate::{CiRun, ExplorationOutcome, ScenarioOutcome};
use crate::history::OpHistory;
use crate::liveness::{self, percentile};
use crate::run::expect::{self, Outcome};
use crate::run::ScenarioRun;
use crate::scenario::{ExploreExpect, Scenario};
pub use headline::Headline;
use lockstep_sim::{Event, ScheduledFault};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`SCHEMA_VERSION`] for reports this build writes.
    pub schema_version: u32,
    /// The program that wrote it.
    pub tool: Tool,
    /// The identity of the run: SHA-256 of its inputs (each scenario file's path and content)
    /// and options; the same in every shard of one run. `None` in reports of older builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
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
    /// The scenario this run is shown beside (the file's `compare_with`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_with: Option<String>,
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

/// The report of one scenario run.
pub(crate) fn scenario_report(file: &Path, scenario: &Scenario, run: &ScenarioRun, wall_ms: f64) -> ScenarioReport {
    let checks: Vec<CheckReport> = run
        .checks()
        .map(|r| check_report(r, expect::expected(&scenario.expect, &r.checker)))
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
        algorithm: scenario.lock.lock_name().to_string(),
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
        replay: match &scenario.lock.rust_lock {
            Some(name) => format!("Harness::replay({}) with the Rust lock `{name}`", file.display()),
            None => format!(
                "lockstep run {} --seed {}",
                shell_word(&file.display().to_string()),
                run.seed
            ),
        },
        timeline: Some(timeline::TimelineData::from_history(scenario, run, &history)),
        wall_ms,
        compare_with: scenario.compare_with.clone(),
    }
}

/// The report of a scenario the world could not run.
pub(crate) fn scenario_error_report(file: &Path, scenario: &Scenario, message: String) -> ScenarioReport {
    ScenarioReport {
        name: scenario.name.clone(),
        file: file.display().to_string(),
        description: first_line(&scenario.description),
        seed: scenario.seed,
        algorithm: scenario.lock.lock_name().to_string(),
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
        compare_with: scenario.compare_with.clone(),
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
    fn is_partial(&self) -> bool {
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
                replay: first_failing.as_ref().map(|f| {
                    // A Rust lock (not a built-in's name) is explored again through its harness.
                    match crate::model::Algorithm::from_name(&self.algorithm) {
                        Some(_) => explore_replay(&self.file, &self.profile, f.seed),
                        None => format!(
                            "lockstep::harness with the Rust lock `{}`: explore {} over seeds {}..{}",
                            self.algorithm,
                            self.file,
                            f.seed,
                            f.seed + 1
                        ),
                    }
                }),
                first_failing,
            });
        }
        self.status = s.status(crate::checker::NAMES, expect, partial);
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
            run_id: None,
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
        // A report that checks nothing is never a green gate; only one shard of a fixed CI
        // matrix may be empty (it says so: `EMPTY`), its merged report may not.
        self.ok = (t.checks > 0 || self.shard.is_some())
            && t.failed == 0
            && self.scenarios.iter().all(|s| !s.status.is_failure())
            && self.explorations.iter().all(|e| !e.status.is_failure());
        self.totals = t;
    }

    /// How the gate came out: held when every expectation held, unexpected otherwise (a
    /// scenario that could not run, or panicked, is a failed row: the gate goes on and fails).
    pub fn outcome(&self) -> Outcome {
        Outcome::held_if(self.ok)
    }

    /// The exit code of `lockstep ci` / `lockstep merge` for this report: 0 when every
    /// expectation held, 1 otherwise (a scenario in error included).
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
        report.run_id = Some(ci.run_id.clone());
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
    /// `[a-z0-9-]+` (at most [`NAME_MAX`] bytes: they name chart files), shards are `1 ≤ K ≤ N`.
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
/// `path` must be a regular file or not exist ([`check_replaceable`]). Creates the directory if
/// needed. The one atomic write: the CLI's summaries, histories and counterexamples.
///
/// A file written into a report directory (`OUT/live.json`, `OUT/counterexamples/x.toml`: a
/// directory whose [`MANIFEST_FILE`] is in `path`'s parent or the parent's parent) is then
/// recorded in its manifest, so that the next report may still replace that directory. Recorded
/// only once the file is in place (issue 40): a write that fails (a name too long, a full disk,
/// a kill) leaves nothing listed, so a file of the user's later put at that name is never taken
/// for lockstep's and removed with the report.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    check_replaceable(path)?;
    write_file_atomically(path, bytes)?;
    staging::record_in_manifest(path)
}

/// [`write_atomic`] without recording `path` in a manifest (the manifest itself is written so).
/// On an error, the directories it created for `path` (empty) are removed again.
fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
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
fn parent_dir(path: &Path) -> &Path {
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

/// Checks, before exploring, that the summary file (`--summary`) and counterexamples (`--out`)
/// can be written: an unwritable path is bad input up front, not after the exploration.
pub fn check_outputs(summary: Option<&Path>, out: Option<&Path>) -> Result<(), String> {
    if let Some(dir) = out.filter(|dir| dir.exists() && !dir.is_dir()) {
        return Err(format!("--out {}: exists and is not a directory", dir.display()));
    }
    let probe = out.map(|dir| dir.join("counterexample.toml"));
    for path in summary.into_iter().chain(probe.as_deref()) {
        check_writable_file(path)?;
    }
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
    staging::existing(out).map_err(bad)?;
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
    prepare_out(out)?;
    staging::remove_stale(out);
    let (staging, _staging_lock, mut journal) = staging_dir(out)?;
    let files = build_report_dir(report, staging.path(), histories, &mut journal)?;
    // The previous report, swapped out below, stays locked until it is removed.
    #[cfg(unix)]
    let _old_lock = staging::try_lock_dir(out).ok().flatten();
    // Checked again: `out` may have changed while the report was built (minutes, for a big run).
    let existing = staging::existing(out).map_err(|m| format!("report directory {}: {m}", out.display()))?;
    let old = swap_in(staging, out, &existing)?;
    if let (Some(old), staging::Existing::Report(manifest)) = (old, &existing) {
        // The new report is in place; failing to remove the old one only leaves a hidden
        // directory, which the next run tries again to remove ([`leftover_dirs`] names it). Only
        // what its manifest lists is removed: a file slipped in since the check stays, with it.
        let _ = staging::remove_listed(&old, manifest);
    }
    Ok(files.iter().map(|rel| out.join(rel)).collect())
}

/// A new staging directory beside `out`, (on Unix) the lock that tells a cleaner it is live,
/// and its owner marker, which proves it lockstep's to a later cleaner ([`staging`]). Created
/// again should a cleaner have removed it before it was locked.
fn staging_dir(out: &Path) -> Result<(tempfile::TempDir, Option<std::fs::File>, staging::Journal), String> {
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
            .prefix(&staging::new_prefix(&base))
            .tempdir_in(parent_dir(out))
            .map_err(|e| fail(e.to_string()))?;
        // The owner marker, made once the directory is ours (locked, and still the one at its path).
        let mark =
            |dir: &Path| staging::Journal::create(dir).map_err(|e| fail(format!("{}: {e}", staging::OWNER_FILE)));
        #[cfg(unix)]
        match staging::lock_dir(dir.path()) {
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
    journal: &mut staging::Journal,
) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    let mut put = |rel: &str, bytes: &[u8]| -> Result<(), String> {
        let path = dir.join(rel);
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut file = std::fs::File::create(&path)?;
            file.write_all(bytes)?;
            file.sync_all()
        };
        write().map_err(|e| format!("cannot write {rel}: {e}"))?;
        journal
            .record(rel)
            .map_err(|e| format!("cannot record {rel} in {}: {e}", staging::OWNER_FILE))?;
        written.push(PathBuf::from(rel));
        Ok(())
    };
    put("report.json", report.to_json().as_bytes())?;
    put("summary.md", markdown::summary(report).as_bytes())?;
    put("junit.xml", junit::junit_xml(report)?.as_bytes())?;
    std::fs::create_dir(dir.join("charts")).map_err(|e| format!("cannot create charts/: {e}"))?;
    let mut svgs = BTreeMap::new();
    for (stem, chart) in charts::all(report) {
        // Stems are slugs (see `chart_stems`); checked again here, as nothing may land outside.
        if !is_chart_stem(&stem) {
            return Err(format!("chart name {stem:?} is not a file name"));
        }
        let svg = chart.svg()?;
        put(&format!("charts/{stem}.svg"), svg.as_bytes())?;
        // The PNG is the same SVG rasterised: draw once.
        put(&format!("charts/{stem}.png"), &charts::svg::png(&svg)?)?;
        svgs.insert(stem, svg);
    }
    let runs = interactive::write_runs(report, histories, dir, &mut put)?;
    put("index.html", html::index_with(report, &svgs, &runs).as_bytes())?;
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

/// Puts `staging` in place of `out`, as [`staging::existing`] found `out` just before. Missing
/// or an empty directory: one `rename(2)` (atomic; it replaces an empty directory and fails on
/// anything else, so nothing that appeared meanwhile is replaced). An earlier report: the two
/// directories trade places in one atomic step ([`staging::exchange`], Linux's
/// `renameat2(RENAME_EXCHANGE)`), so at every instant `out` holds a whole report; where the
/// kernel or the file system refuses it (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`; every platform but
/// Linux), the fallback is two renames ([`staging::swap_by_renames`]: `out` renamed away, then
/// the new report renamed into place), which a kill between them leaves without `out`.
///
/// Returns where the old report now is (the staging path after an exchange, a `.OUT.old.XXXXXX`
/// after the fallback), to be removed by the caller. On an error `out` is as it was and
/// `staging` is removed.
fn swap_in(staging: tempfile::TempDir, out: &Path, existing: &staging::Existing) -> Result<Option<PathBuf>, String> {
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
    let old = match existing {
        staging::Existing::Missing | staging::Existing::Empty => {
            std::fs::rename(staging.path(), out).map_err(fail)?;
            None
        }
        staging::Existing::Report(_) => match staging::exchange(staging.path(), out) {
            // The staging path holds the old report now: its guard must not remove it whole.
            Ok(()) => Some(staging.path().to_path_buf()),
            Err(e) if staging::exchange_unsupported(&e) => {
                Some(staging::swap_by_renames(staging.path(), out).map_err(fail)?)
            }
            Err(e) => return Err(fail(e)),
        },
    };
    // The staging directory is now `out`, or the old report: do not let its guard remove it.
    let _ = staging.keep();
    sync_dir(parent_dir(out));
    Ok(old)
}

/// The longest scenario name a report may carry (names become chart file names): the scenario
/// file's own limit.
pub(crate) const NAME_MAX: usize = crate::scenario::SCENARIO_NAME_MAX;

/// The longest chart file stem: a name ([`NAME_MAX`]) with its kind's prefix (`timeline-`,
/// `explore-`) and a numeric suffix that keeps stems unique.
const STEM_MAX: usize = NAME_MAX + 40;

/// Whether `stem` may name a chart file: 1 to [`STEM_MAX`] bytes of `a-z`, `0-9` and `-`.
fn is_chart_stem(stem: &str) -> bool {
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
/// `charts/{stem}.svg` and `charts/{stem}.png`. Stems are slugs ([`slug`]), made unique by a
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
