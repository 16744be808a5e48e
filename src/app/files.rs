//! Files in: scenario files and directories read for `run` and `ci`, and result files read
//! for `merge` — bad input is reported before anything runs. (Results are written by
//! `report::write_atomic`.)

use super::error::AppError;
use crate::scenario::{load_dir, Scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Parses every file of `files`, in order; the first that cannot be read or parsed, or that names
/// a Rust lock (`[lock] rust_lock`), is bad input.
pub fn load_files(files: &[PathBuf]) -> Result<Vec<(PathBuf, Scenario)>, AppError> {
    files
        .iter()
        .map(|file| {
            let scenario = Scenario::from_file(file).map_err(|e| AppError::BadInput(e.to_string()))?;
            // A Rust lock's scenario cannot run here: refused before anything runs.
            super::exploration::refuse_rust_lock(file, &scenario)?;
            Ok((file.clone(), scenario))
        })
        .collect()
}

/// Loads the scenario files named by `paths` (a directory means its `*.toml` files), in order.
/// Errors name the file and field; two scenarios with the same name are an error (their chart
/// files would collide).
pub fn load_inputs(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Scenario)>, AppError> {
    let bad = |e: String| AppError::BadInput(e);
    let mut inputs = Vec::new();
    for path in paths {
        if path.is_dir() {
            inputs.extend(load_dir(path).map_err(|e| bad(e.to_string()))?);
        } else {
            let scenario = Scenario::from_file(path).map_err(|e| bad(e.to_string()))?;
            inputs.push((path.clone(), scenario));
        }
    }
    if inputs.is_empty() {
        return Err(bad(format!(
            "no scenario files in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut names: BTreeMap<&str, &Path> = BTreeMap::new();
    for (path, scenario) in &inputs {
        if let Some(first) = names.insert(&scenario.name, path) {
            return Err(bad(format!(
                "{}: field `name`: scenario name `{}` is also used by {}",
                path.display(),
                scenario.name,
                first.display()
            )));
        }
    }
    Ok(inputs)
}

/// The largest result file `merge` reads (256 MiB).
pub const MAX_RESULT_BYTES: u64 = 256 << 20;

/// Reads every file of `files` as text, in order; one that cannot be read (not a regular file,
/// too large, not UTF-8) is bad input.
pub fn read_texts(files: &[PathBuf]) -> Result<Vec<(PathBuf, String)>, AppError> {
    files
        .iter()
        .map(|file| {
            let bad = |e: String| AppError::BadInput(format!("{}: {e}", file.display()));
            let bytes = crate::scenario::read_limited(file, MAX_RESULT_BYTES).map_err(bad)?;
            String::from_utf8(bytes)
                .map(|t| (file.clone(), t))
                .map_err(|e| bad(format!("not valid UTF-8: {e}")))
        })
        .collect()
}

/// Bad input unless `dir` is a readable directory; the message names `flag`.
pub fn check_dir(dir: &Path, flag: &str) -> Result<(), AppError> {
    std::fs::read_dir(dir)
        .map(drop)
        .map_err(|e| AppError::BadInput(format!("{flag} {}: cannot read directory: {e}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_input_list_is_bad_input() {
        let dir = std::env::temp_dir().join(format!("lockstep-files-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = load_inputs(std::slice::from_ref(&dir)).unwrap_err();
        assert!(
            matches!(err, AppError::BadInput(ref m) if m.contains("no scenario files")),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
