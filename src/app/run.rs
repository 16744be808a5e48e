//! Scenario files run for `lockstep run`: each through [`crate::run::run_scenario`], under the
//! panic guard (`crate::explore::guarded`): a world that cannot run one, or a panic inside
//! it, is that file's error, and the other files still run. A run stopped by its history cap
//! (`history_events_max`) is the file asking for more than lockstep records: bad input, exit 2.

use super::AppError;
use crate::run::{run_scenario, ScenarioRun};
use crate::scenario::Scenario;
use lockstep_sim::WorldError;
use std::path::Path;

/// Runs the scenario read from `path` (`seed` overrides its own); a world that cannot run it,
/// or a panic inside it, is a [`AppError::RunFailure`] naming the file; a run stopped by its
/// history cap is [`AppError::BadInput`] naming the file and the cap.
pub fn run_file(path: &Path, scenario: &Scenario, seed: Option<u64>) -> Result<ScenarioRun, AppError> {
    super::exploration::refuse_rust_lock(path, scenario)?;
    match crate::explore::guarded(|| Ok(run_scenario(scenario, seed))) {
        Ok(Ok(run)) => Ok(run),
        Ok(Err(e @ WorldError::HistoryFull { .. })) => Err(AppError::BadInput(format!("{}: {e}", path.display()))),
        Ok(Err(e)) => Err(AppError::RunFailure(format!("{}: {e}", path.display()))),
        Err(e) => Err(AppError::RunFailure(format!("{}: {e}", path.display()))),
    }
}

/// How `lockstep run` runs each file.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Overrides every file's seed.
    pub seed: Option<u64>,
    /// Step every tick ([`Scenario::step_every_tick`]).
    pub step_every_tick: bool,
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
/// run). Held when every run met every expectation; [`super::Outcome::RunFailed`] (exit 2) when
/// a file was bad input found only by running it (its history cap).
pub fn run_files(
    files: &[std::path::PathBuf],
    options: RunOptions,
    history: Option<&Path>,
    done: &mut dyn FnMut(FileRun) -> Result<(), AppError>,
) -> Result<crate::run::expect::Outcome, AppError> {
    if history.is_some() && files.len() != 1 {
        return Err(AppError::BadInput(format!(
            "--history FILE takes one scenario file, not {}",
            files.len()
        )));
    }
    if let Some(dir) = files.iter().find(|f| f.is_dir()) {
        let shown = dir.display();
        return Err(AppError::BadInput(format!(
            "{shown}: is a directory; `lockstep run` takes scenario files (`lockstep run {}/*.toml`), and \
             `lockstep ci {shown} --report OUT` runs a whole directory as the CI gate",
            shown.to_string().trim_end_matches('/')
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
    let mut bad_input = false;
    for (path, scenario) in &scenarios {
        let started = std::time::Instant::now();
        let stepped;
        let scenario = if options.step_every_tick {
            stepped = Scenario {
                step_every_tick: true,
                ..scenario.clone()
            };
            &stepped
        } else {
            scenario
        };
        let run = run_file(path, scenario, options.seed);
        bad_input |= matches!(run, Err(AppError::BadInput(_)));
        let run = run.map_err(|e| e.to_string());
        all_expected &= run.as_ref().is_ok_and(|run| run.as_expected());
        done(FileRun {
            path,
            scenario,
            run,
            wall_ms: started.elapsed().as_secs_f64() * 1e3,
        })?;
    }
    if bad_input {
        return Ok(crate::run::expect::Outcome::RunFailed);
    }
    Ok(crate::run::expect::Outcome::held_if(all_expected))
}
