//! Rendering live runs (`lockstep live`): the timeline and verdicts of each run, the verdict
//! frequencies over `--runs N`, and the report directory — the same formats as `lockstep ci`
//! (report.json, summary.md, junit.xml, charts, index.html) plus `live.json`, marked live
//! everywhere: real time is not reproducible, so the "replay" command reruns the scenario, and a
//! digest identifies a history without predicting the next one.

use crate::live::output::{LiveSummary, Render, ReportExtra};
use crate::live::LiveRun;
use crate::model::Verdict;
use crate::report::narrative as timeline;
use crate::report::{self, Report};
use crate::run::{expect, ScenarioRun};
use crate::scenario::Scenario;
use lockstep_sim::RunEnd;
use std::fmt::Write;
use std::path::Path;

/// The console and report-directory renderer of live runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Renderer;

impl Render for Renderer {
    fn run(&self, path: &Path, scenario: &Scenario, run: &LiveRun, index: u32, runs: u32, quiet: bool) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = run_text(&mut text, path, scenario, run, index, runs, quiet);
        text
    }

    fn summary(&self, summary: &LiveSummary) -> String {
        let mut text = String::new();
        let _ = summary_text(&mut text, summary);
        text
    }

    fn check_out(&self, out: &Path) -> Result<(), String> {
        report::prepare_out(out)
    }

    fn check_file(&self, file: &Path) -> Result<(), String> {
        report::check_writable_file(file)
    }

    fn write_file(&self, file: &Path, bytes: &[u8]) -> Result<(), String> {
        report::write_atomic(file, bytes)
    }

    fn write(
        &self,
        out: &Path,
        path: &Path,
        scenario: &Scenario,
        runs: &[(LiveRun, f64)],
        summary: &LiveSummary,
        extra: &ReportExtra,
    ) -> Result<(), String> {
        write_report(out, path, scenario, runs, summary, extra)
    }
}

fn mark(expected: Option<Verdict>, actual: Verdict) -> &'static str {
    match expected {
        None => " ",
        Some(e) if e == actual => "✓",
        Some(_) => "✗",
    }
}

/// One run: header, timeline (unless `quiet`), verdicts.
fn run_text(
    s: &mut String,
    path: &Path,
    scenario: &Scenario,
    run: &LiveRun,
    index: u32,
    runs: u32,
    quiet: bool,
) -> std::fmt::Result {
    if quiet && runs > 1 {
        let verdicts: Vec<String> = run
            .results
            .iter()
            .map(|r| {
                format!(
                    "{} {}{}",
                    r.checker,
                    r.verdict.name(),
                    mark(expect::expected(&scenario.expect, &r.checker), r.verdict)
                )
            })
            .collect();
        writeln!(
            s,
            "   run {:>2}/{runs}: {}  ({} events, {:.1} s)",
            index + 1,
            verdicts.join(" · "),
            run.history.len(),
            run.end_ms as f64 / 1000.0
        )?;
        return Ok(());
    }
    writeln!(s, "━━ {} ({}) — LIVE", scenario.name, path.display())?;
    writeln!(
        s,
        "{}",
        super::console::lock_line(scenario, "fault-plan seed", run.seed)
    )?;
    for (client, adapter) in &run.adapters {
        writeln!(s, "   {client}: {adapter}")?;
    }
    writeln!(
        s,
        "   real processes in real time on 127.0.0.1: not reproducible (the fault plan and its seed are)"
    )?;
    if !quiet {
        writeln!(s)?;
        write!(s, "{}", timeline::text(&crate::history::OpHistory::new(&run.history)))?;
    }
    writeln!(s)?;
    writeln!(
        s,
        "   {:<18} {:<8} {:<9}   explanation",
        "checker", "verdict", "expected"
    )?;
    for result in &run.results {
        let expected = expect::expected(&scenario.expect, &result.checker);
        writeln!(
            s,
            "   {:<18} {:<8} {:<9} {} {}",
            result.checker,
            result.verdict.name(),
            expected.map_or("-", |e| e.name()),
            mark(expected, result.verdict),
            result.explanation
        )?;
    }
    writeln!(
        s,
        "\n   history: {} events over {:.3} s{}",
        run.history.len(),
        run.end_ms as f64 / 1000.0,
        if run.clients_finished {
            ""
        } else {
            " (the scenario's duration ran out before every client finished)"
        }
    )?;
    if run.as_expected() {
        writeln!(s, "   result: as expected")?;
    } else {
        for m in &run.mismatches {
            if m.checker == crate::live::SERVER_FAILURE_CHECK {
                let failures: Vec<String> = run
                    .server_failures
                    .iter()
                    .map(|(what, n)| format!("{n} × {what}"))
                    .collect();
                writeln!(
                    s,
                    "   UNEXPECTED: the servers failed clients' commands on lockstep's own bounds ({}); \
                     the verdicts judge a broken server, not the lock",
                    failures.join(", ")
                )?;
                continue;
            }
            writeln!(
                s,
                "   UNEXPECTED: {} is {} but the scenario expects {}",
                m.checker,
                m.actual.name(),
                m.expected.name()
            )?;
        }
    }
    writeln!(s)
}

/// The verdict frequencies.
fn summary_text(s: &mut String, summary: &LiveSummary) -> std::fmt::Result {
    writeln!(
        s,
        "━━ {} — LIVE, {} runs (fault-plan seed {})",
        summary.scenario, summary.runs, summary.seed
    )?;
    for (client, adapter) in &summary.adapters {
        writeln!(s, "   {client}: {adapter}")?;
    }
    writeln!(s)?;
    writeln!(
        s,
        "   {:<18} {:>7} {:>7} {:>7}   expected",
        "checker", "valid", "invalid", "unknown"
    )?;
    for (name, counts) in &summary.verdicts {
        let c = |v: &str| counts.get(v).copied().unwrap_or(0);
        writeln!(
            s,
            "   {:<18} {:>7} {:>7} {:>7}   {}",
            name,
            c("valid"),
            c("invalid"),
            c("unknown"),
            expect::expected(&summary.expected, name).map_or("-", |v| v.name())
        )?;
    }
    writeln!(
        s,
        "\n   as expected in {} of {} runs (real time: verdicts can vary between runs)",
        summary.runs_as_expected, summary.runs
    )
}

/// Writes the report directory: one scenario row per run, marked live, plus `live.json` and
/// what `extra` adds — everything built in staging and swapped in at once (issue 48).
fn write_report(
    out: &Path,
    path: &Path,
    scenario: &Scenario,
    runs: &[(LiveRun, f64)],
    summary: &LiveSummary,
    extra: &ReportExtra,
) -> Result<(), String> {
    let mut report = Report::new(None);
    // Each run's raw history and interactive timeline (`runs/NAME/`), keyed by its row's name.
    let mut histories = std::collections::BTreeMap::new();
    for (i, (run, wall_ms)) in runs.iter().enumerate() {
        let as_sim = ScenarioRun {
            name: run.name.clone(),
            seed: run.seed,
            end: RunEnd {
                at_ms: run.end_ms,
                clients_finished: run.clients_finished,
                ..RunEnd::default()
            },
            digest: run.history.digest(),
            history: run.history.clone(),
            results: run.results.clone(),
            mismatches: run.mismatches.clone(),
            liveness: None,
        };
        let mut row = report::scenario_report(path, scenario, &as_sim, *wall_ms);
        // Names become chart file names: no spaces or slashes.
        // Cut the scenario's part so the row's name stays a valid name (charts, runs/NAME/).
        row.name = crate::scenario::name_with_suffix(&scenario.name, &format!("-live-run-{}", i + 1));
        row.description = format!(
            "LIVE run {} of {} (real processes, real time, not reproducible): {}",
            i + 1,
            runs.len(),
            row.description
        );
        row.replay = summary.rerun.clone();
        histories.insert(row.name.clone(), run.history.clone());
        report.scenarios.push(row);
    }
    report.finish();
    let json = serde_json::to_string_pretty(summary).map_err(|e| e.to_string())?;
    // The Markdown summary and the HTML page are marked live at their top.
    let head = format!(
        "> **Live run** of `{}` with `{}`: real processes in real time on 127.0.0.1, not reproducible \
         (fault-plan seed {}). As expected in {} of {} runs.\n\n",
        summary.file, summary.client, summary.seed, summary.runs_as_expected, summary.runs
    );
    let banner = format!(
        "<p style=\"background:#fff3cd;border:1px solid #e0c060;padding:8px\"><strong>Live run</strong> \
         of <code>{}</code> with <code>{}</code>: real processes in real time on 127.0.0.1, not reproducible \
         (fault-plan seed {}). As expected in {} of {} runs.</p>",
        super::html::escape(&summary.file),
        super::html::escape(&summary.client),
        summary.seed,
        summary.runs_as_expected,
        summary.runs
    );
    let mut files = vec![("live.json".to_string(), json.into_bytes())];
    files.extend(extra.files.iter().cloned());
    let additions = report::Additions {
        files,
        summary_head: match extra.summary_head.is_empty() {
            true => head,
            false => format!("{}\n{head}", extra.summary_head),
        },
        index_banner: format!("{}{banner}", extra.index_head),
    };
    report::write_report_adding(&report, out, &histories, &additions)?;
    Ok(())
}
