//! Files in: scenario files and directories read for `run` and `ci`, and result files read
//! for `merge` — bad input is reported before anything runs. (Results are written by
//! `report::write_atomic`.)

use super::error::AppError;
use crate::scenario::{load_dir, Scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Parses every file of `files`, in order; the first that cannot be read or parsed, or that names
/// a Rust lock (`[lock] rust_lock`), is bad input.
pub(crate) fn load_files(files: &[PathBuf]) -> Result<Vec<(PathBuf, Scenario)>, AppError> {
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
pub(crate) const MAX_RESULT_BYTES: u64 = 256 << 20;

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

/// Where `path` is, resolved through links: its deepest existing ancestor canonicalised, the rest
/// appended with `.` dropped and `..` taken off by text (nothing below that ancestor exists, so
/// no link can redirect it). Two spellings of one place give one path.
fn resolved(path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let absolute = std::path::absolute(path).ok()?;
    let parts: Vec<Component> = absolute.components().collect();
    // The longest prefix that exists (the root always does).
    let (mut out, existing) = (1..=parts.len())
        .rev()
        .find_map(|k| Some((std::fs::canonicalize(parts[..k].iter().collect::<PathBuf>()).ok()?, k)))?;
    for part in &parts[existing..] {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Bad input when an output would overwrite an input: `files` are the outputs written as one
/// file each (`(flag, path)`), `dirs` the output directories replaced as a whole. An input
/// equal to an output file, or inside an output directory, would be destroyed by the run that
/// reads it — refused before anything runs.
pub fn check_outputs_spare_inputs(
    inputs: &[PathBuf],
    files: &[(&str, Option<&Path>)],
    dirs: &[(&str, Option<&Path>)],
) -> Result<(), AppError> {
    let inputs: Vec<(&PathBuf, PathBuf)> = inputs.iter().filter_map(|i| Some((i, resolved(i)?))).collect();
    for (flag, output) in files.iter().filter_map(|(f, o)| Some((f, (*o)?))) {
        let Some(real) = resolved(output) else { continue };
        if let Some((input, _)) = inputs.iter().find(|(_, r)| *r == real) {
            return Err(AppError::BadInput(format!(
                "{flag} {}: is the input {}; writing it would overwrite that input",
                output.display(),
                input.display()
            )));
        }
    }
    for (flag, output) in dirs.iter().filter_map(|(f, o)| Some((f, (*o)?))) {
        let Some(real) = resolved(output) else { continue };
        if let Some((input, _)) = inputs.iter().find(|(_, r)| r.starts_with(&real)) {
            return Err(AppError::BadInput(format!(
                "{flag} {}: holds the input {}; the directory is replaced as a whole, which would delete that input",
                output.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_place_spelled_through_links_missing_folders_or_dots_resolves_once() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("real");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("a.toml"), "x").unwrap();
        std::os::unix::fs::symlink(&dir, root.path().join("link")).unwrap();
        let a = resolved(&dir.join("a.toml")).unwrap();
        for other in [
            root.path().join("link/a.toml"),
            dir.join("missing/../a.toml"),
            dir.join("./missing/./../a.toml"),
        ] {
            assert_eq!(resolved(&other).unwrap(), a, "{}", other.display());
        }
        // Nothing of it exists yet, under a linked parent: the same place as through the real one.
        assert_eq!(
            resolved(&root.path().join("link/new/m.json")).unwrap(),
            resolved(&dir).unwrap().join("new/m.json")
        );
        // An input reached through `..` of a missing folder is refused as an output.
        let input = vec![dir.join("a.toml")];
        let sneaky = dir.join("nothere/../a.toml");
        assert!(check_outputs_spare_inputs(&input, &[("--summary", Some(&sneaky))], &[]).is_err());
        // A file that will be inside a directory reached through a link is inside it.
        let file = vec![root.path().join("link/out/m.json")];
        assert!(check_outputs_spare_inputs(&file, &[], &[("--report", Some(&dir.join("out")))]).is_err());
    }

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
