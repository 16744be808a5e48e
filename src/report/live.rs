//! Rendering live runs (`lockstep live`): the timeline and verdicts of each run, the verdict
//! frequencies over `--runs N`, and the report directory — the same formats as `lockstep ci`
//! (report.json, summary.md, junit.xml, charts, index.html) plus `live.json`, marked live
//! everywhere: real time is not reproducible, so the "replay" command reruns the scenario, and a
//! digest identifies a history without predicting the next one.

use crate::checker::Verdict;
use crate::live::output::{LiveSummary, Render};
use crate::live::LiveRun;
use crate::report::{self, Report};
use crate::run::ScenarioRun;
use crate::scenario::Scenario;
use crate::timeline;
use lockstep_sim::RunEnd;
use std::path::Path;

/// The console and report-directory renderer of live runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Renderer;

impl Render for Renderer {
    fn run(&self, path: &Path, scenario: &Scenario, run: &LiveRun, index: u32, runs: u32, quiet: bool) {
        print_run(path, scenario, run, index, runs, quiet);
    }

    fn summary(&self, summary: &LiveSummary) {
        print_summary(summary);
    }

    fn write(
        &self,
        out: &Path,
        path: &Path,
        scenario: &Scenario,
        runs: &[(LiveRun, f64)],
        summary: &LiveSummary,
    ) -> Result<(), String> {
        write_report(out, path, scenario, runs, summary)
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
fn print_run(path: &Path, scenario: &Scenario, run: &LiveRun, index: u32, runs: u32, quiet: bool) {
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
        print!("{}", timeline::text(&crate::history::OpHistory::new(&run.history)));
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

/// Prints the verdict frequencies.
fn print_summary(summary: &LiveSummary) {
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
fn write_report(
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
            liveness: None,
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
