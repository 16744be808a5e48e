//! What the CLI prints, as text: one scenario run (its timeline and verdict table), the gate's
//! closing lines (the [`Headline`]), a merge's line, a shrunk counterexample, the `list` output.
//! `main.rs` prints these strings and nothing it computes itself.

use super::{Headline, Report};
use crate::explore::shrink::{Counterexample, Shrunk};
use crate::lock;
use crate::run::expect::Status;
use crate::run::{Safety, ScenarioRun};
use crate::scenario::Scenario;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// ✓ (the expectation held), ✗ (it did not) or a blank (nothing expected).
fn tick(status: Status) -> &'static str {
    match status {
        Status::Pass => "✓",
        Status::Fail | Status::Error => "✗",
        Status::Unchecked => " ",
    }
}

/// One run of `lockstep run`: the header, the timeline (unless `quiet`), each checker's verdict
/// against the expectation, what the verdicts mean for the resource, the digest, and the
/// result (with the replay command when unexpected).
pub fn run_text(path: &Path, scenario: &Scenario, run: &ScenarioRun, quiet: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "━━ {} ({})", scenario.name, path.display());
    let _ = writeln!(
        out,
        "   algorithm {} · fencing {} · resource {} · ttl {} ms · seed {}",
        scenario.lock.algorithm.name(),
        scenario.lock.fencing.name(),
        scenario.resource.name(),
        scenario.lock.ttl_ms,
        run.seed
    );
    if !quiet {
        let _ = writeln!(out);
        out.push_str(&crate::timeline::text(&crate::history::OpHistory::new(&run.history)));
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "   {:<18} {:<8} {:<9}   explanation",
        "checker", "verdict", "expected"
    );
    for result in run.checks() {
        let expected = crate::run::expect::expected(&scenario.expect, &result.checker);
        let _ = writeln!(
            out,
            "   {:<18} {:<8} {:<9} {} {}",
            result.checker,
            result.verdict.name(),
            expected.map_or("-", |e| e.name()),
            tick(run.status(scenario, &result.checker)),
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
                crate::timeline::why_resource_safe(&history)
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
        let _ = writeln!(out, "   result: as expected");
    } else {
        for m in &run.mismatches {
            let _ = writeln!(
                out,
                "   UNEXPECTED: {} is {} but the scenario expects {}",
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
    let _ = writeln!(out, "{} {}", headline.mark(), headline.counts());
    for failure in &headline.failures {
        let _ = writeln!(out, "  ❌ {}: {}", failure.subject, failure.explanation);
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
        headline.mark(),
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
    }
}

/// [`run_text`] of a run, or [`run_error_text`] of a scenario that could not run.
pub fn run_result_text(path: &Path, scenario: &Scenario, run: &Result<ScenarioRun, String>, quiet: bool) -> String {
    match run {
        Ok(run) => run_text(path, scenario, run, quiet),
        Err(e) => run_error_text(path, scenario, e),
    }
}

/// A scenario that could not run (or panicked): its error, in place of its verdicts.
pub fn run_error_text(path: &Path, scenario: &Scenario, error: &str) -> String {
    format!(
        "━━ {} ({})\n   error: {error}\n   result: could not run\n",
        scenario.name,
        path.display()
    )
}

/// A shrunk counterexample written to `file`, and the command that replays it.
pub fn counterexample_text(cx: &Counterexample, file: &Path) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  shrunk seed {} ({}): {} -> {} faults, {} clients, in {} runs",
        cx.seed,
        cx.checker,
        cx.faults_before,
        cx.case.faults.len(),
        cx.case.clients,
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
pub fn not_shrunk_text(seed: u64, checker: &str) -> String {
    format!("  seed {seed} no longer fails {checker} on its own (not shrunk)\n")
}

/// `lockstep list`: the algorithms, the fault kinds, the checkers and the scenarios of `dir`
/// (or why they cannot be read).
pub fn list_text(dir: &Path, scenarios: &Result<Vec<(PathBuf, Scenario)>, String>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "algorithms:");
    for (name, about) in lock::ALGORITHMS {
        let _ = writeln!(out, "  {name:<14} {about}");
    }
    let _ = writeln!(out, "\nfault kinds (scenario [[fault]] tables):");
    for kind in lockstep_sim::Fault::KINDS {
        let about = lockstep_sim::Fault::summary(kind).unwrap_or("");
        let _ = writeln!(out, "  {kind:<14} {about}");
    }
    let _ = writeln!(out, "\ngenerated fault kinds (explore --kinds, [explore] kinds):");
    let _ = writeln!(out, "  {}", crate::model::GENERATED_KINDS.join(", "));
    let _ = writeln!(
        out,
        "  (on by default: all but {})",
        crate::model::GENERATED_KINDS
            .iter()
            .filter(|k| !crate::model::DEFAULT_KINDS.contains(k))
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(out, "\n{}", crate::scenario::workload_help().trim_end());
    let _ = writeln!(out, "\ncheckers:");
    let _ = writeln!(out, "  {}", crate::checker::NAMES.join(", "));
    let _ = writeln!(out, "\nscenarios ({}):", dir.display());
    match scenarios {
        Ok(found) => {
            for (path, s) in found {
                let first_line = s.description.lines().next().unwrap_or("").trim();
                let file = path
                    .file_name()
                    .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
                let _ = writeln!(out, "  {file:<34} {first_line}");
            }
        }
        Err(e) => {
            let _ = writeln!(out, "  (cannot read: {e})");
        }
    }
    out
}
