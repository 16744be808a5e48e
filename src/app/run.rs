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

/// One scenario file's run, as `lockstep run` hands it to the printer.
pub struct FileRun<'a> {
    /// The file, as given.
    pub path: &'a Path,
    /// Its scenario.
    pub scenario: &'a Scenario,
    /// The run, or why it could not run.
    pub run: Result<ScenarioRun, String>,
    /// Wall milliseconds it took (not deterministic).
    pub wall_ms: f64,
}

/// `lockstep run`: parses every file first (bad input before anything runs; `history`, the
/// `--history` file, takes exactly one scenario file and must be writable), then runs each,
/// handing it to `done` as it finishes (one that cannot run is its error; the others still
/// run). Held when every run met every expectation.
pub fn run_files(
    files: &[std::path::PathBuf],
    seed: Option<u64>,
    history: Option<&Path>,
    done: &mut dyn FnMut(FileRun) -> Result<(), AppError>,
) -> Result<super::Outcome, AppError> {
    if history.is_some() && files.len() != 1 {
        return Err(AppError::BadInput(format!(
            "--history FILE takes one scenario file, not {}",
            files.len()
        )));
    }
    let scenarios = super::files::load_files(files)?;
    if let Some(file) = history {
        if file.is_dir() {
            return Err(AppError::BadInput(format!(
                "--history {}: is a directory",
                file.display()
            )));
        }
    }
    let mut all_expected = true;
    for (path, scenario) in &scenarios {
        let started = std::time::Instant::now();
        let run = run_file(path, scenario, seed).map_err(|e| e.to_string());
        all_expected &= run.as_ref().is_ok_and(|run| run.as_expected());
        done(FileRun {
            path,
            scenario,
            run,
            wall_ms: started.elapsed().as_secs_f64() * 1e3,
        })?;
    }
    Ok(super::Outcome::held_if(all_expected))
}
