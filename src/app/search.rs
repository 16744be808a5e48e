//! How `lockstep explore` searches: the placement strategy (`--strategy`) and the
//! bounded-exhaustive mode (`--exhaustive` with its bounds), as CLI options and the one function
//! that runs the exhaustive mode.
//!
//! Leaves out: the search itself (`crate::explore::anchors`, `coverage`, `guided`,
//! `exhaustive`).

use super::error::AppError;
use super::Outcome;
use crate::explore::exhaustive::{explore_exhaustive, Bounds, ExhaustiveReport};
use crate::explore::generate::PlacementStrategy;
use crate::scenario::Scenario;

/// The search options of `lockstep explore`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SearchArgs {
    /// Fault placement: anchored (around the lock's own events), random, or mixed (default
    /// without an `[explore]` block; a block keeps random).
    #[arg(long)]
    pub strategy: Option<PlacementStrategy>,
    /// Bounded-exhaustive mode: run every fault placement on the grid around the anchors.
    #[arg(long, conflicts_with_all = ["strategy", "shard", "seeds", "seed_range"])]
    pub exhaustive: bool,
    /// Exhaustive: at most this many clients (default 2).
    #[arg(long, requires = "exhaustive")]
    pub exhaustive_clients: Option<usize>,
    /// Exhaustive: at most this many faults per schedule (default 2).
    #[arg(long, requires = "exhaustive")]
    pub exhaustive_faults: Option<usize>,
    /// Exhaustive: at most this many anchors on the grid (default 4).
    #[arg(long, requires = "exhaustive")]
    pub exhaustive_anchors: Option<usize>,
}

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

/// Runs the bounded-exhaustive mode over `template` (its faults removed) and prints the result;
/// held when no schedule broke an expectation.
pub fn exhaustive(template: &Scenario, search: &SearchArgs, jobs: Option<usize>) -> Result<Outcome, AppError> {
    let bounds = search.bounds()?;
    let jobs = jobs.unwrap_or_else(|| crate::explore::ExploreConfig::default().jobs);
    let report: ExhaustiveReport = explore_exhaustive(template, &bounds, jobs, false);
    print!("{}", report.render());
    Ok(Outcome::held_if(report.is_clean()))
}
