//! What a live run prints and writes: the timeline and verdicts of each run, the frequency of each
//! verdict over `--runs N`, and the report directory — the same formats as `lockstep ci`
//! (report.json, summary.md, junit.xml, charts, index.html), plus `live.json`, and marked live
//! everywhere: real time is not reproducible, so a replay command reruns the scenario rather than
//! a history, and digests identify a history without predicting the next one.

use super::{LiveOptions, LiveRun};
use crate::checker::{self, Verdict};
use crate::report::{self, Report};
use crate::run::ScenarioRun;
use crate::scenario::Scenario;
use crate::timeline;
use lockstep_sim::RunEnd;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// What `live.json` says: the verdict frequencies over the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveSummary {
    /// Always `true`: this came from real processes in real time.
    pub live: bool,
    /// A sentence saying what that means.
    pub note: String,
    /// The scenario's name.
    pub scenario: String,
    /// The file.
    pub file: String,
    /// The fault plan's seed.
    pub seed: u64,
    /// The adapter command.
    pub client: String,
    /// What each client's adapter drives, as the adapters said (first run).
    pub adapters: BTreeMap<String, String>,
    /// Runs made.
    pub runs: u32,
    /// Runs in which every expectation held.
    pub runs_as_expected: u32,
    /// Per checker: how often each verdict came out (`valid`, `invalid`, `unknown`).
    pub verdicts: BTreeMap<String, BTreeMap<String, u32>>,
    /// Per checker: the scenario's expectation.
    pub expected: BTreeMap<String, Verdict>,
    /// The command that repeats the runs.
    pub rerun: String,
}

impl LiveSummary {
    /// Whether every run met every expectation.
    pub fn all_as_expected(&self) -> bool {
        self.runs_as_expected == self.runs
    }

    /// How many runs gave `verdict` for `checker`.
    pub fn count(&self, checker: &str, verdict: Verdict) -> u32 {
        self.verdicts
            .get(checker)
            .and_then(|m| m.get(verdict.name()))
            .copied()
            .unwrap_or(0)
    }
}

fn mark(expected: Option<Verdict>, actual: Verdict) -> &'static str {
    match expected {
        None => " ",
        Some(e) if e == actual => "✓",
        Some(_) => "✗",
    }
}

/// Prints one run: header, timeline (unless `quiet`), verdicts.
pub fn print_run(path: &Path, scenario: &Scenario, run: &LiveRun, index: u32, runs: u32, quiet: bool) {
    if quiet && runs > 1 {
        let verdicts: Vec<String> = run
            .results
            .iter()
            .map(|r| {
                format!(
                    "{} {}{}",
                    r.checker,
                    r.verdict.name(),
                    mark(scenario.expected(&r.checker), r.verdict)
                )
            })
            .collect();
        println!(
            "   run {:>2}/{runs}: {}  ({} events, {:.1} s)",
            index + 1,
            verdicts.join(" · "),
            run.history.len(),
            run.end_ms as f64 / 1000.0
        );
        return;
    }
    println!("━━ {} ({}) — LIVE", scenario.name, path.display());
    println!(
        "   algorithm {} · fencing {} · resource {} · ttl {} ms · fault-plan seed {}",
        scenario.lock.algorithm.name(),
        scenario.lock.fencing.name(),
        scenario.resource.name(),
        scenario.lock.ttl_ms,
        run.seed
    );
    for (client, adapter) in &run.adapters {
        println!("   {client}: {adapter}");
    }
    println!("   real processes in real time on 127.0.0.1: not reproducible (the fault plan and its seed are)");
    if !quiet {
        println!();
        print!("{}", timeline::render(&run.history));
    }
    println!();
    println!("   {:<18} {:<8} {:<9}   explanation", "checker", "verdict", "expected");
    for result in &run.results {
        let expected = scenario.expected(&result.checker);
        println!(
            "   {:<18} {:<8} {:<9} {} {}",
            result.checker,
            result.verdict.name(),
            expected.map_or("-", |e| e.name()),
            mark(expected, result.verdict),
            result.explanation
        );
    }
    println!(
        "\n   history: {} events over {:.3} s{}",
        run.history.len(),
        run.end_ms as f64 / 1000.0,
        if run.clients_finished {
            ""
        } else {
            " (the scenario's duration ran out before every client finished)"
        }
    );
    if run.as_expected() {
        println!("   result: as expected");
    } else {
        for m in &run.mismatches {
            println!(
                "   UNEXPECTED: {} is {} but the scenario expects {}",
                m.checker,
                m.actual.name(),
                m.expected.name()
            );
        }
    }
    println!();
}

/// The verdict frequencies over `runs`.
pub fn summarize(path: &Path, scenario: &Scenario, options: &LiveOptions, runs: &[(LiveRun, f64)]) -> LiveSummary {
    let mut verdicts: BTreeMap<String, BTreeMap<String, u32>> = BTreeMap::new();
    for name in checker::NAMES {
        let counts = verdicts.entry(name.to_string()).or_default();
        for v in [Verdict::Valid, Verdict::Invalid, Verdict::Unknown] {
            counts.insert(v.name().to_string(), 0);
        }
    }
    for (run, _) in runs {
        for r in &run.results {
            *verdicts
                .entry(r.checker.clone())
                .or_default()
                .entry(r.verdict.name().to_string())
                .or_default() += 1;
        }
    }
    let file = path.display().to_string();
    LiveSummary {
        live: true,
        note: "live run: real client processes against servers on 127.0.0.1 in real time; not reproducible \
               (the fault plan and its seed are), so verdicts are counted over the runs"
            .to_string(),
        scenario: scenario.name.clone(),
        file: file.clone(),
        seed: scenario.seed,
        client: options.client.clone(),
        adapters: runs.first().map(|(r, _)| r.adapters.clone()).unwrap_or_default(),
        runs: runs.len() as u32,
        runs_as_expected: runs.iter().filter(|(r, _)| r.as_expected()).count() as u32,
        verdicts,
        expected: scenario.expect.clone(),
        rerun: format!(
            "lockstep live {} --client {} --runs {}",
            report::shell_word(&file),
            report::shell_word(&options.client),
            runs.len()
        ),
    }
}

/// Prints the verdict frequencies.
pub fn print_summary(summary: &LiveSummary) {
    println!(
        "━━ {} — LIVE, {} runs (fault-plan seed {})",
        summary.scenario, summary.runs, summary.seed
    );
    for (client, adapter) in &summary.adapters {
        println!("   {client}: {adapter}");
    }
    println!();
    println!(
        "   {:<18} {:>7} {:>7} {:>7}   expected",
        "checker", "valid", "invalid", "unknown"
    );
    for (name, counts) in &summary.verdicts {
        let c = |v: &str| counts.get(v).copied().unwrap_or(0);
        println!(
            "   {:<18} {:>7} {:>7} {:>7}   {}",
            name,
            c("valid"),
            c("invalid"),
            c("unknown"),
            summary.expected.get(name).map_or("-", |v| v.name())
        );
    }
    println!(
        "\n   as expected in {} of {} runs (real time: verdicts can vary between runs)",
        summary.runs_as_expected, summary.runs
    );
}

/// Writes the report directory: one scenario row per run, marked live, plus `live.json`.
pub fn write_report(
    out: &Path,
    path: &Path,
    scenario: &Scenario,
    runs: &[(LiveRun, f64)],
    summary: &LiveSummary,
) -> Result<(), String> {
    let mut report = Report::new(None);
    for (i, (run, wall_ms)) in runs.iter().enumerate() {
        let as_sim = ScenarioRun {
            name: run.name.clone(),
            seed: run.seed,
            end: RunEnd {
                at_ms: run.end_ms,
                clients_finished: run.clients_finished,
            },
            digest: run.history.digest(),
            history: run.history.clone(),
            results: run.results.clone(),
            mismatches: run.mismatches.clone(),
        };
        let mut row = report::scenario_report(path, scenario, &as_sim, *wall_ms);
        // Names become chart file names: no spaces or slashes.
        row.name = format!("{}-live-run-{}", scenario.name, i + 1);
        row.description = format!(
            "LIVE run {} of {} (real processes, real time, not reproducible): {}",
            i + 1,
            runs.len(),
            row.description
        );
        row.replay = summary.rerun.clone();
        report.scenarios.push(row);
    }
    report.finish();
    report::write_report(&report, out)?;
    let json = serde_json::to_string_pretty(summary).map_err(|e| e.to_string())?;
    report::write_atomic(&out.join("live.json"), json.as_bytes())?;
    // Mark the Markdown summary live at its top.
    let summary_md = out.join("summary.md");
    if let Ok(text) = std::fs::read_to_string(&summary_md) {
        let head = format!(
            "> **Live run** of `{}` with `{}`: real processes in real time on 127.0.0.1, not reproducible \
             (fault-plan seed {}). As expected in {} of {} runs.\n\n",
            summary.file, summary.client, summary.seed, summary.runs_as_expected, summary.runs
        );
        report::write_atomic(&summary_md, format!("{head}{text}").as_bytes())?;
    }
    // And the HTML page, with a banner at the top of its body.
    let index = out.join("index.html");
    if let Ok(html) = std::fs::read_to_string(&index) {
        let banner = format!(
            "<body>\n<p style=\"background:#fff3cd;border:1px solid #e0c060;padding:8px\"><strong>Live run</strong> \
             of <code>{}</code> with <code>{}</code>: real processes in real time on 127.0.0.1, not reproducible \
             (fault-plan seed {}). As expected in {} of {} runs.</p>",
            html_escape(&summary.file),
            html_escape(&summary.client),
            summary.seed,
            summary.runs_as_expected,
            summary.runs
        );
        report::write_atomic(&index, html.replacen("<body>", &banner, 1).as_bytes())?;
    }
    Ok(())
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
