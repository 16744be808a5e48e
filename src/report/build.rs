//! Building a report: the rows of what the gate ran (`crate::gate::CiRun`) — each scenario run
//! with its checks judged against the scenario's expectations, its liveness figures, history
//! digest and timeline; each exploration judged on its seeds — and the totals over them.
//! Nothing here runs a simulation, and nothing is written (see [`super::staging`]).

use super::model::*;
use super::timeline;
use crate::checker::CheckResult;
use crate::emit::shell_word;
use crate::explore::ExploreSummary;
use crate::gate::{CiRun, ExplorationOutcome, ScenarioOutcome};
use crate::history::OpHistory;
use crate::liveness::{self, percentile};
use crate::model::fault::FaultProfile;
use crate::model::Verdict;
use crate::run::expect::{self, Outcome};
use crate::run::ScenarioRun;
use crate::scenario::{ExploreExpect, Scenario};
use std::collections::BTreeMap;
use std::path::Path;

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
        classification: super::verdict::Classification::of_file(file),
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
        classification: super::verdict::Classification::of_file(file),
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
    pub(super) fn is_partial(&self) -> bool {
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
            shard_set: None,
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
        let t = self.counted_totals();
        // A report that checks nothing is never a green gate; only one shard of a fixed CI
        // matrix may be empty (it says so: `EMPTY`), its merged report may not.
        self.ok = (t.checks > 0 || self.shard.is_some())
            && t.failed == 0
            && self.scenarios.iter().all(|s| !s.status.is_failure())
            && self.explorations.iter().all(|e| !e.status.is_failure());
        self.totals = t;
    }

    /// The totals the rows add up to (what [`Self::finish`] sets).
    pub fn counted_totals(&self) -> Totals {
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
        t
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
        report.shard_set = ci.shard_set.clone();
        report.scenarios = ci.scenarios.iter().map(ScenarioReport::of).collect();
        report.explorations = ci.explorations.iter().map(ExplorationReport::of).collect();
        report.ttl_sweep = ci.ttl_sweep.clone();
        report.wall_s = ci.wall_s;
        report.finish();
        report
    }
}
