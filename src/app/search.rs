//! How `lockstep explore` searches: the placement strategy (`--strategy`) and the
//! bounded-exhaustive mode (`--exhaustive` with its bounds), as CLI options and the one function
//! that runs the exhaustive mode.
//!
//! Leaves out: the search itself (`crate::explore::anchors`, `coverage`, `guided`,
//! `exhaustive`).

pub use super::args::SearchArgs;
use super::error::AppError;
use super::exploration::Locks;
use crate::explore::exhaustive::{explore_exhaustive, Bounds, ExhaustiveReport};
use crate::scenario::Scenario;

impl SearchArgs {
    /// The exhaustive bounds these options give; bad input when one is 0 or too large.
    pub fn bounds(&self) -> Result<Bounds, AppError> {
        let default = Bounds::default();
        let bounds = Bounds {
            clients_max: self.exhaustive_clients.unwrap_or(default.clients_max),
            faults_max: self.exhaustive_faults.unwrap_or(default.faults_max),
            anchors_max: self.exhaustive_anchors.unwrap_or(default.anchors_max),
        };
        let check = |name: &str, value: usize, max: usize| {
            if value == 0 || value > max {
                Err(AppError::BadInput(format!(
                    "--{name} {value}: must be between 1 and {max}"
                )))
            } else {
                Ok(())
            }
        };
        check("exhaustive-clients", bounds.clients_max, 64)?;
        check("exhaustive-faults", bounds.faults_max, 3)?;
        check("exhaustive-anchors", bounds.anchors_max, 64)?;
        Ok(bounds)
    }
}

/// Runs the bounded-exhaustive mode over `template` (its faults removed) with `locks` (the
/// subject, and the `--against` reference: then only schedules where the subject alone breaks
/// an expectation count). Held when no schedule broke an expectation.
pub fn exhaustive(
    template: &Scenario,
    search: &SearchArgs,
    jobs: Option<usize>,
    locks: &Locks,
) -> Result<ExhaustiveReport, AppError> {
    let bounds = search.bounds()?;
    if jobs == Some(0) {
        return Err(AppError::BadInput("--jobs 0: need at least 1 worker".into()));
    }
    let jobs = jobs.unwrap_or_else(|| crate::explore::ExploreConfig::default().jobs);
    Ok(explore_exhaustive(template, &bounds, jobs, false, locks.refs()))
}

/// `lockstep explore --exhaustive`: the grid of `template` with the `--against` reference, if
/// any (the caller prints the report and writes `--summary`).
pub fn exhaustive_cli(template: &Scenario, args: &super::args::ExploreArgs) -> Result<ExhaustiveReport, AppError> {
    let locks = super::exploration::locks(template, &args.oracle)?;
    exhaustive(template, &args.search, args.jobs, &locks)
}
