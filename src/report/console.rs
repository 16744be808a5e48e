//! What the CLI prints, as text: one scenario run (its timeline and verdict table), the gate's
//! closing lines (the [`Headline`]), a merge's line, a shrunk counterexample, the `list` output.
//! `main.rs` prints these strings and nothing it computes itself.
//!
//! Verdicts and results carry ANSI colours (valid green, invalid red, unknown yellow; an
//! unexpected result bold red), always beside their word. `main.rs` prints through `anstream`,
//! which drops the colours when stdout is not a terminal or `NO_COLOR` is set.

use super::{Headline, Report};
use crate::explore::shrink::{Counterexample, Shrunk};
use crate::run::expect::Status;
use crate::run::{Safety, ScenarioRun};
use crate::scenario::Scenario;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::headline::match_words;
use crate::model::Verdict;
use anstyle::{AnsiColor, Style};

/// The terminal style of a verdict: valid green, invalid bold red, unknown yellow.
pub fn verdict_style(verdict: Verdict) -> Style {
    match verdict {
        Verdict::Valid => AnsiColor::Green.on_default(),
        Verdict::Invalid => AnsiColor::Red.on_default().bold(),
        Verdict::Unknown => AnsiColor::Yellow.on_default(),
    }
}

/// The terminal style of whether an expectation held.
fn status_style(status: Status) -> Style {
    match status {
        Status::Pass => AnsiColor::Green.on_default(),
        Status::Fail | Status::Error => AnsiColor::Red.on_default().bold().underline(),
        Status::Unchecked => Style::new().dimmed(),
    }
}

/// The line under a run's title: the lock, its fencing, the resource, the TTL and the seed
/// (`seed_label` names it: `seed`, or a live run's `fault-plan seed`).
pub(crate) fn lock_line(scenario: &Scenario, seed_label: &str, seed: u64) -> String {
    format!(
        "   algorithm {} · fencing {} · resource {} · ttl {} ms · {seed_label} {seed}",
        scenario.lock.algorithm.name(),
        scenario.lock.fencing_shown(),
        scenario.resource.name(),
        scenario.lock.ttl_ms,
    )
}

/// `text` padded to `width` columns, in `style` (the padding outside the colour).
fn paint(style: Style, text: &str, width: usize) -> String {
    let pad = width.saturating_sub(text.chars().count());
    format!("{style}{text}{style:#}{}", " ".repeat(pad))
}

/// One run of `lockstep run`: the header, the timeline (unless `quiet`), each checker's verdict
/// against the expectation, what the verdicts mean for the resource, the digest, and the
/// result (with the replay command when unexpected).
pub(crate) fn run_text(path: &Path, scenario: &Scenario, run: &ScenarioRun, quiet: bool) -> String {
    let mut out = String::new();
    // A counterexample leads with the explorer's verdict and the checker it rests on.
    if let Some(c) = crate::report::verdict::Classification::of_file(path) {
        let following: Vec<String> = run
            .checks()
            .filter(|r| r.checker != c.checker && r.verdict == Verdict::Invalid)
            .map(|r| r.checker.clone())
            .collect();
        let lead = crate::report::verdict::Lead {
            words: c.words(),
            checker: c.checker.clone(),
            following,
            following_words: crate::report::verdict::FOLLOWING,
        };
        let _ = writeln!(out, "{}", lead.line());
    }
    let _ = writeln!(out, "━━ {} ({})", scenario.name, path.display());
    let _ = writeln!(out, "{}", lock_line(scenario, "seed", run.seed));
    if !quiet {
        let _ = writeln!(out);
        out.push_str(&crate::report::narrative::text(&crate::history::OpHistory::new(
            &run.history,
        )));
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "   {:<18} {:<8} {:<9} {:<15} explanation",
        "checker", "verdict", "expected", "match"
    );
    for result in run.checks() {
        let expected = crate::run::expect::expected(&scenario.expect, &result.checker);
        let status = run.status(scenario, &result.checker);
        let _ = writeln!(
            out,
            "   {:<18} {} {:<9} {} {}",
            result.checker,
            paint(verdict_style(result.verdict), result.verdict.name(), 8),
            expected.map_or("-", |e| e.name()),
            paint(status_style(status), match_words(status), 15),
            result.explanation
        );
    }
    if run.is_vacuous() {
        let _ = writeln!(
            out,
            "\n   No client ever got the lock: the safety verdicts above are vacuous (expect `progress = \"invalid\"` if that is the point)."
        );
    }
    match run.safety() {
        Safety::Held => {}
        Safety::ViolatedResourceSafe => {
            let history = crate::history::OpHistory::new(&run.history);
            let _ = writeln!(
                out,
                "\n   Mutual exclusion was violated, yet the resource stayed safe: {}.",
                crate::report::narrative::why_resource_safe(&history)
            );
        }
        Safety::ViolatedResourceDamaged => {
            let _ = writeln!(out, "\n   Mutual exclusion was violated and the resource was damaged.");
        }
    }
    let _ = writeln!(
        out,
        "\n   history: {} events, digest {}",
        run.history.len(),
        &run.digest[..16.min(run.digest.len())]
    );
    if run.as_expected() {
        let _ = writeln!(
            out,
            "   result: {}",
            paint(status_style(Status::Pass), "as expected", 0)
        );
    } else {
        for m in &run.mismatches {
            let _ = writeln!(
                out,
                "   {}: {} is {} but the scenario expects {}",
                paint(status_style(Status::Fail), "UNEXPECTED", 0),
                m.checker,
                m.actual.name(),
                m.expected.name()
            );
        }
        let _ = writeln!(out, "   replay: lockstep run {} --seed {}", path.display(), run.seed);
    }
    let _ = writeln!(out);
    out
}

/// The gate's closing lines: the headline counts, each failure with its replay command, and
/// where the report is (`written` files in `dir`).
pub fn gate_text(report: &Report, dir: &Path, written: usize) -> String {
    let headline = Headline::of(report);
    let mut out = String::new();
    let style = if headline.ok {
        AnsiColor::Green.on_default().bold()
    } else {
        AnsiColor::Red.on_default().bold()
    };
    // A counterexample's verdict comes first: what the explorer concluded, and on which checker.
    if let Some(lead) = &headline.lead {
        let _ = writeln!(out, "{}", paint(style, lead, 0));
    }
    let _ = writeln!(out, "{} {}", paint(style, headline.word(), 0), headline.counts());
    for failure in &headline.failures {
        let _ = writeln!(
            out,
            "  {} {}: {}",
            paint(status_style(Status::Fail), "UNEXPECTED", 0),
            failure.subject,
            failure.explanation
        );
        if let Some(replay) = &failure.replay {
            let _ = writeln!(out, "     replay: {replay}");
        }
    }
    let _ = writeln!(
        out,
        "report: {} ({written} files; open {})",
        dir.display(),
        dir.join("index.html").display()
    );
    out
}

/// The line of a merge without a report directory.
pub fn merged_text(report: &Report, parts: usize) -> String {
    let headline = Headline::of(report);
    format!(
        "{} merged {parts} reports: {} checks passed, {} failed\n",
        headline.word(),
        headline.totals.passed,
        headline.totals.failed
    )
}

/// What shrinking one seed gave: the counterexample (written to its file) and the command that
/// replays it, or that the seed did not fail again on its own.
/// `written`: whether the counterexample was saved to its file (`--out`); when not, its TOML is
/// printed instead.
pub fn shrunk_text(shrunk: &Shrunk, written: bool) -> String {
    match shrunk {
        Shrunk::Found {
            counterexample, file, ..
        } if written => counterexample_text(counterexample, file),
        Shrunk::Found {
            counterexample, toml, ..
        } => {
            let mut out = counterexample_text(counterexample, Path::new(""));
            // Drop the two lines naming a file: nothing was written.
            out.truncate(out.rfind("  counterexample:").unwrap_or(out.len()));
            let _ = writeln!(
                out,
                "  counterexample (not written: pass --out DIR to save it, then `lockstep run` it):"
            );
            out.push_str(toml);
            out
        }
        Shrunk::NotReproduced { seed, checker } => not_shrunk_text(*seed, checker),
        Shrunk::OutOfTime { seed, checker } => out_of_time_text(*seed, checker),
    }
}

/// What `lockstep explore` prints for one shrink: [`shrunk_text`], and when the counterexample
/// was written (its file not shown), which assumption each of its faults broke.
pub fn shrunk_lines(shrunk: &Shrunk, written: bool) -> String {
    let mut out = shrunk_text(shrunk, written);
    if let (Shrunk::Found { counterexample, .. }, true) = (shrunk, written) {
        for line in counterexample.assumptions.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

/// [`run_text`] of a run, or [`run_error_text`] of a scenario that could not run.
fn run_result_text(path: &Path, scenario: &Scenario, run: &Result<ScenarioRun, String>, quiet: bool) -> String {
    match run {
        Ok(run) => run_text(path, scenario, run, quiet),
        Err(e) => run_error_text(path, scenario, e),
    }
}

/// A scenario that could not run (or panicked): its error, in place of its verdicts.
fn run_error_text(path: &Path, scenario: &Scenario, error: &str) -> String {
    format!(
        "━━ {} ({})\n   error: {error}\n   result: could not run\n",
        scenario.name,
        path.display()
    )
}

/// A shrunk counterexample written to `file`, and the command that replays it.
fn counterexample_text(cx: &Counterexample, file: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  shrunk seed {} ({}): {} -> {} faults, {} clients, in {} runs",
        cx.seed,
        cx.checker,
        cx.faults_before,
        cx.case.faults.len(),
        // The file's clients: a workload shape sets its own number, beyond `case.clients`.
        cx.scenario.clients.len(),
        cx.runs
    );
    for fault in &cx.scenario.faults.faults {
        let json = serde_json::to_string(&fault.fault).unwrap_or_default();
        let _ = writeln!(out, "    at {:>6} ms  {json}", fault.at_ms);
    }
    let _ = writeln!(
        out,
        "  counterexample: {}\n  replay: lockstep run {}",
        file.display(),
        file.display()
    );
    out
}

/// A failing seed that did not fail `checker` again when run on its own.
fn not_shrunk_text(seed: u64, checker: &str) -> String {
    format!("  seed {seed} no longer fails {checker} on its own (not shrunk)\n")
}

/// A failing seed the time limit left unshrunk.
fn out_of_time_text(seed: u64, checker: &str) -> String {
    format!("  seed {seed} ({checker}): not shrunk, the time limit ran out first (a longer --time-limit shrinks it)\n")
}

/// The first sentence of `text` (its lines joined): up to the first `.`, `!` or `?` followed
/// by a space or the end — never cut inside a sentence.
fn first_sentence(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let bytes = joined.as_bytes();
    for (i, c) in joined.char_indices() {
        if matches!(c, '.' | '!' | '?') && bytes.get(i + 1).is_none_or(|b| *b == b' ') {
            return joined[..=i].to_string();
        }
    }
    joined
}

/// `name` padded to `width`, or on its own line when longer (the text then starts below it,
/// at the column of the others).
fn aligned(name: &str, width: usize, indent: usize) -> String {
    if name.chars().count() <= width {
        format!("{name:<width$} ")
    } else {
        format!("{name}\n{}", " ".repeat(indent + width + 1))
    }
}

/// `lockstep list`: the algorithms, the fault kinds (which a scenario's `[[fault]]` table takes
/// and which `explore --kinds` takes, by the names each accepts), the checkers and the
/// scenarios loaded from a directory (`None`: no directory, which the listing says).
pub fn list_text(scenarios: Option<(&Path, &[(PathBuf, Scenario)])>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "algorithms:");
    let algorithms = crate::model::Algorithm::ALL;
    let width = algorithms.iter().map(|a| a.name().len()).max().unwrap_or(0);
    for algorithm in algorithms {
        let _ = writeln!(out, "  {}{}", aligned(algorithm.name(), width, 2), algorithm.about());
    }
    let mut kinds: Vec<&str> = lockstep_sim::Fault::KINDS.to_vec();
    kinds.extend(
        crate::model::GENERATED_KINDS
            .iter()
            .filter(|k| !lockstep_sim::Fault::KINDS.contains(k)),
    );
    let width = kinds.iter().map(|k| k.len()).max().unwrap_or(0).max(4);
    let _ = writeln!(
        out,
        "\nfault kinds ([[fault]]: a scenario's fault table takes it; --kinds: `explore --kinds` and\n\
         [explore] kinds take it, `default` = on when no kinds are named):"
    );
    let _ = writeln!(
        out,
        "  {:<width$} {:<9} {:<8} what it does",
        "kind", "[[fault]]", "--kinds"
    );
    for kind in kinds {
        let in_file = if lockstep_sim::Fault::KINDS.contains(&kind) {
            "yes"
        } else {
            "-"
        };
        let generated = if crate::model::DEFAULT_KINDS.contains(&kind) {
            "default"
        } else if crate::model::GENERATED_KINDS.contains(&kind) {
            "opt-in"
        } else {
            "-"
        };
        // A generated kind that is no `[[fault]]` kind says what it does itself (the generator
        // composes it from the world's faults).
        let about = lockstep_sim::Fault::summary(kind)
            .or_else(|| crate::explore::kinds::GenFault::about(kind))
            .unwrap_or("");
        let _ = writeln!(out, "  {kind:<width$} {in_file:<9} {generated:<8} {about}");
    }
    let _ = writeln!(out, "\n{}", crate::scenario::workload_help().trim_end());
    let _ = writeln!(out, "\n{}", crate::scenario::script_lock_help().trim_end());
    let _ = writeln!(out, "\ncheckers:");
    let _ = writeln!(out, "  {}", crate::checker::NAMES.join(", "));
    match scenarios {
        Some((dir, found)) => {
            let _ = writeln!(out, "\nscenarios ({}):", dir.display());
            let files: Vec<String> = found
                .iter()
                .map(|(path, _)| {
                    path.file_name()
                        .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
                })
                .collect();
            let width = files.iter().map(|f| f.chars().count()).max().unwrap_or(0).min(40);
            for (file, (_, s)) in files.iter().zip(found) {
                let _ = writeln!(out, "  {}{}", aligned(file, width, 2), first_sentence(&s.description));
            }
        }
        None => {
            let _ = writeln!(
                out,
                "\nscenarios: no ./scenarios directory here (the shipped scenarios are in the repository's \
                 scenarios/; `--dir DIR` lists the scenario files of DIR)"
            );
        }
    }
    out
}

/// What `lockstep run` prints: each run's text as it finishes, or with `json` one JSON
/// document at the end (`{"format": "lockstep-run", "ok", "runs": [...]}`, each run as in
/// report.json's `scenarios[]`); with `history`, the run's raw history is written there
/// (`history.jsonl`, see [`super::interactive`]).
#[derive(Debug, Default)]
pub struct RunOutput {
    /// Leave out the timeline.
    pub quiet: bool,
    /// Print JSON instead of text.
    pub json: bool,
    /// Where the raw history goes.
    pub history: Option<PathBuf>,
    runs: Vec<super::ScenarioReport>,
}

impl RunOutput {
    /// An output with these options.
    pub fn new(quiet: bool, json: bool, history: Option<PathBuf>) -> Self {
        RunOutput {
            quiet,
            json,
            history,
            runs: Vec::new(),
        }
    }

    /// Takes one finished run: writes its history when asked; returns what to print now.
    pub fn add(
        &mut self,
        path: &Path,
        scenario: &Scenario,
        run: &Result<ScenarioRun, String>,
        wall_ms: f64,
    ) -> Result<String, String> {
        let mut text = String::new();
        if let (Some(file), Ok(run)) = (&self.history, run) {
            super::write_atomic(file, super::interactive::history_jsonl(run.history.events()).as_bytes())?;
            if !self.json {
                let _ = writeln!(text, "   history written to {}", file.display());
            }
        }
        if self.json {
            self.runs.push(match run {
                Ok(run) => super::scenario_report(path, scenario, run, wall_ms),
                Err(e) => super::scenario_error_report(path, scenario, e.clone()),
            });
            return Ok(text);
        }
        let mut out = run_result_text(path, scenario, run, self.quiet);
        if !text.is_empty() {
            // Before the blank line that ends the run's block.
            let at = out.trim_end().len() + 1;
            out.insert_str(at.min(out.len()), &text);
        }
        Ok(out)
    }

    /// What to print at the end: the JSON document, or nothing.
    pub fn finish(&self, held: bool) -> String {
        if !self.json {
            return String::new();
        }
        let doc = serde_json::json!({"format": "lockstep-run", "ok": held, "runs": self.runs});
        serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
    }
}

/// What `lockstep explore --json` prints: `{"format": "lockstep-explore", "ok", "summary",
/// "counterexamples": [{seed, checker, file, digest, toml} | {seed, checker, reproduced: false}]}`.
pub fn explore_json(summary: &crate::explore::ExploreSummary, shrunk: &[Shrunk], written: bool) -> String {
    explore_json_with(summary, shrunk, written, serde_json::Value::Null)
}

/// [`explore_json`] with the exploration's distinct bugs (`distinct`:
/// `crate::app::exploration::DistinctBugs::json`, whose groups index `counterexamples`).
pub fn explore_json_with(
    summary: &crate::explore::ExploreSummary,
    shrunk: &[Shrunk],
    written: bool,
    distinct: serde_json::Value,
) -> String {
    let counterexamples: Vec<serde_json::Value> = shrunk.iter().map(|s| s.json(written)).collect();
    let doc = serde_json::json!({
        "format": "lockstep-explore",
        "ok": summary.passed(),
        "summary": summary,
        "distinct": distinct,
        "counterexamples": counterexamples,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}
