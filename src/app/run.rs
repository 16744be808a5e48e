//! Scenario files run for `lockstep run`: each through [`crate::run::run_scenario`], a world
//! that cannot run one being a run failure that names the file.

use super::AppError;
use crate::run::{run_scenario, ScenarioRun};
use crate::scenario::Scenario;
use std::path::Path;

/// Runs the scenario read from `path` (`seed` overrides its own); a world that cannot run it
/// is a [`AppError::RunFailure`] naming the file.
pub fn run_file(path: &Path, scenario: &Scenario, seed: Option<u64>) -> Result<ScenarioRun, AppError> {
    run_scenario(scenario, seed).map_err(|e| AppError::RunFailure(format!("{}: {e}", path.display())))
}
