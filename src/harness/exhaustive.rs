//! The harness's bounded-exhaustive mode ([`super::Harness::exhaustive`], `explore
//! --exhaustive`): every schedule of the grid around the anchors, with the user's lock (and the
//! reference, when there is one), through the CLI's own function ([`crate::app::search::exhaustive`]);
//! the first violating schedule is shrunk into a counterexample file, as a seed's would be.
//!
//! Leaves out: the report directory (an exhaustive run has no seeds to put in a report row; its
//! result is [`ExhaustiveResult`]).

use super::{HarnessError, Overrides};
use crate::app::exploration::Locks;
use crate::app::search::SearchArgs;
use crate::explore::exhaustive::ExhaustiveReport;
use crate::explore::shrink::{self, Shrunk};
use crate::scenario::Scenario;
use std::path::{Path, PathBuf};

/// One template explored in the bounded-exhaustive mode.
#[derive(Debug, Clone)]
pub struct ExhaustiveResult {
    /// The template scenario's name.
    pub template: String,
    /// Its file (`<name>` for the standard template).
    pub file: PathBuf,
    /// What the grid found (with a reference: schedules where only this lock fails).
    pub report: ExhaustiveReport,
    /// The first violating schedule, shrunk (empty when none violated, or shrinking is off).
    pub shrunk: Vec<Shrunk>,
    /// Whether every schedule kept the expectations and ran.
    pub passed: bool,
}

impl ExhaustiveResult {
    /// The lines [`super::HarnessRun::failures`] gives for it.
    pub(super) fn failure_lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "exhaustive {} ({}): {} of {} schedules violate an expectation{}; {} could not run{}",
            self.template,
            self.file.display(),
            self.report.violating,
            self.report.schedules,
            self.report
                .reference
                .as_ref()
                .map(|r| format!(" where only {} fails ({r} holds)", self.report.lock))
                .unwrap_or_default(),
            self.report.errors,
            self.report
                .first_error
                .as_ref()
                .map(|e| format!(" (first error: {e})"))
                .unwrap_or_default()
        )];
        for shrunk in &self.shrunk {
            if let Shrunk::Found {
                counterexample, file, ..
            } = shrunk
            {
                out.push(format!(
                    "  counterexample: violates {} with {} faults -> {}",
                    counterexample.checker,
                    counterexample.case.faults.len(),
                    file.display()
                ));
            }
        }
        out
    }
}

/// Bad input when seed options are set with the exhaustive mode (the CLI refuses the same
/// flags together): the grid has no seeds, kinds, fault count or time limit of its own choosing.
pub(super) fn check_options(options: &Overrides, bounded: bool) -> Result<(), HarnessError> {
    let conflicting = [
        ("kinds", options.kinds.is_some()),
        ("faults_max", options.faults_max.is_some()),
        ("time_limit_s", options.time_limit_s.is_some()),
        ("seed_range", options.seed_range.is_some()),
        ("strategy", options.strategy.is_some()),
        ("bounded", bounded || options.bounded),
        ("lock_aware", options.lock_aware),
        ("overrun_shapes", options.overrun_shapes),
        ("check_determinism_pct", options.check_determinism_pct.is_some()),
    ];
    match conflicting.iter().find(|(_, set)| *set) {
        Some((name, _)) => Err(HarnessError::BadInput(format!(
            "exhaustive: `{name}` is an option of the seeded exploration; the bounded-exhaustive mode runs every \
             schedule of its grid (as `explore --exhaustive` refuses `--{}`)",
            name.replace('_', "-").trim_end_matches("-s").trim_end_matches("-pct")
        ))),
        None => Ok(()),
    }
}

/// Runs the grid of `template` with `locks`, and shrinks its first violating schedule into
/// `dir` (`(count, runs, dir)`: at most `count` shrinks of `runs` scenario runs).
pub(super) fn run(
    file: PathBuf,
    template: &Scenario,
    search: &SearchArgs,
    jobs: Option<usize>,
    locks: &Locks,
    (count, runs, dir): (usize, usize, &Path),
) -> Result<ExhaustiveResult, HarnessError> {
    let report = crate::app::search::exhaustive(template, search, jobs, locks)?;
    let shrunk = report
        .counterexamples
        .iter()
        .take(count)
        .filter_map(|violation| {
            let checker = violation.checkers.first()?;
            let seed = template.seed;
            let found = shrink::shrink_case(template, &violation.case, (seed, checker), locks.refs(), runs, None);
            Some(match found {
                Some(cx) => Shrunk::Found {
                    file: dir.join(format!("{}.toml", cx.scenario.name)),
                    toml: shrink::counterexample_toml(&cx),
                    counterexample: Box::new(cx),
                },
                None => Shrunk::NotReproduced {
                    seed,
                    checker: checker.clone(),
                },
            })
        })
        .collect();
    Ok(ExhaustiveResult {
        template: template.name.clone(),
        file,
        passed: report.is_clean(),
        report,
        shrunk,
    })
}
