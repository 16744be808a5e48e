//! Scenario files run for `lockstep run`: each through [`crate::run::run_scenario`], under the
//! panic guard ([`crate::explore::guarded`]): a world that cannot run one, or a panic inside
//! it, is that file's error, and the other files still run.

use super::AppError;
use crate::run::{run_scenario, ScenarioRun};
use crate::scenario::Scenario;
use std::path::Path;

/// Runs the scenario read from `path` (`seed` overrides its own); a world that cannot run it,
/// or a panic inside it, is a [`AppError::RunFailure`] naming the file.
pub fn run_file(path: &Path, scenario: &Scenario, seed: Option<u64>) -> Result<ScenarioRun, AppError> {
    super::exploration::refuse_rust_lock(path, scenario)?;
    crate::explore::guarded(|| run_scenario(scenario, seed).map_err(|e| e.to_string()))
        .map_err(|e| AppError::RunFailure(format!("{}: {e}", path.display())))
}
