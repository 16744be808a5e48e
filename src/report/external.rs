//! The report of a run lockstep did not drive itself — a turmoil simulation
//! (`lockstep-turmoil`), a test harness of your own — from its history and the checkers'
//! results: the same row, timeline and directory (`report.json`, `summary.md`, `junit.xml`,
//! `charts/`, `index.html`, the interactive run page) as `lockstep ci` writes for a scenario.
//!
//! What a scenario file would say about the run (its name, lock, clients, servers, faults) is
//! given as an [`ExternalRun`]: there is no scenario file, so the row's replay line is the
//! caller's, and each checker is judged against the expectation given (none: `unchecked`).

use super::model::{CheckReport, HistoryReport, LivenessReport, Report, ScenarioReport, Status};
use super::timeline::TimelineData;
use crate::checker::CheckResult;
use crate::history::OpHistory;
use crate::liveness::{self, percentile};
use crate::model::Verdict;
use crate::run::expect;
use lockstep_sim::{History, ScheduledFault};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a scenario file would say about a run lockstep did not drive: the report's row and
/// timeline title are made of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExternalRun {
    /// The run's name (`[a-z0-9-]+` reads best: it names the chart's and the run page's files).
    pub name: String,
    /// What the run shows (its first line is the row's description).
    pub description: String,
    /// Where it comes from, as the row's `file` (a test's path, say).
    pub file: String,
    /// The seed of the run (turmoil's `rng_seed`, say).
    pub seed: u64,
    /// The lock, in words (`set-nx-px`, `redis-rs lock of service X`).
    pub algorithm: String,
    /// `none` or `incr` (who issues fencing tokens).
    pub fencing: String,
    /// `unfenced`, `fenced` or `strict` (what the resource checks).
    pub resource: String,
    /// The lock's TTL, ms.
    pub ttl_ms: u64,
    /// The clients (one timeline lane each, in this order).
    pub clients: Vec<String>,
    /// The Redis servers (one lane each, after the clients; other servers seen in the history
    /// get one too).
    pub servers: Vec<String>,
    /// The faults as planned (or as applied).
    pub faults: Vec<ScheduledFault>,
    /// How to run it again (the row's replay line).
    pub replay: String,
    /// The expected verdict per checker name; a checker without one is `unchecked`.
    pub expect: BTreeMap<String, Verdict>,
}

/// The report's row of `run`, whose history is `history` and whose checkers answered `checks`
/// (in report order: `lockstep::checker::all()`'s).
pub fn external_scenario_report(run: &ExternalRun, history: &History, checks: &[CheckResult]) -> ScenarioReport {
    let rows: Vec<CheckReport> = checks
        .iter()
        .map(|r| {
            let expected = expect::expected(&run.expect, &r.checker);
            CheckReport {
                checker: r.checker.clone(),
                verdict: r.verdict,
                expected,
                status: expect::verdict(expected, r.verdict),
                explanation: r.explanation.clone(),
                witness: r.witness.clone(),
            }
        })
        .collect();
    let ops = OpHistory::new(history);
    let live = liveness::of(&ops);
    let mut latencies = live.acquire_latencies_ms.clone();
    latencies.sort_unstable();
    let clients: Vec<&str> = run.clients.iter().map(String::as_str).collect();
    let servers: Vec<&str> = run.servers.iter().map(String::as_str).collect();
    let title = format!(
        "{} · {} · fencing {} · resource {} · TTL {} ms · seed {}",
        run.name, run.algorithm, run.fencing, run.resource, run.ttl_ms, run.seed
    );
    ScenarioReport {
        name: run.name.clone(),
        file: run.file.clone(),
        description: run
            .description
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string(),
        seed: run.seed,
        algorithm: run.algorithm.clone(),
        fencing: run.fencing.clone(),
        resource: run.resource.clone(),
        ttl_ms: run.ttl_ms,
        faults: run.faults.clone(),
        status: Status::worst(rows.iter().map(|c| c.status)),
        error: None,
        checks: rows,
        liveness: Some(LivenessReport {
            acquires: latencies.len() as u64,
            acquire_latency_p50_ms: percentile(&latencies, 50),
            acquire_latency_p99_ms: percentile(&latencies, 99),
            acquires_abandoned: live.acquires_abandoned,
            unavailable_ms: live.unavailable_ms,
            held_ms: live.held_ms,
        }),
        history: Some(HistoryReport {
            events: history.len() as u64,
            digest: history.digest(),
            end_ms: ops.end_us() / 1_000,
        }),
        replay: run.replay.clone(),
        timeline: Some(TimelineData::of_parts(title, &clients, &servers, checks, &ops)),
        wall_ms: 0.0,
        compare_with: None,
        classification: None,
    }
}

/// Writes the report directory of `run` to `out` (replacing a report lockstep wrote there
/// before, as `lockstep ci --report` does): `report.json`, `summary.md`, `junit.xml`, the
/// timeline chart (`charts/*.svg`, and `*.png` with the `cli` feature), `index.html` and the
/// run's interactive page. Returns the paths of the files written; `Err` says which file or
/// directory could not be written, and why.
pub fn write_external_report(
    run: &ExternalRun,
    history: &History,
    checks: &[CheckResult],
    out: &Path,
) -> Result<Vec<PathBuf>, String> {
    let mut report = Report::new(None);
    report.scenarios.push(external_scenario_report(run, history, checks));
    report.finish();
    let histories = BTreeMap::from([(run.name.clone(), history.clone())]);
    super::write_report_with(&report, out, &histories)
}
