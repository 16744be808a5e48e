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

/// A directory and the scenario files loaded from it.
pub type Listed = (PathBuf, Vec<(PathBuf, Scenario)>);

/// The scenarios `lockstep list` lists (what it prints is `report::console::list_text`; the
/// algorithms, fault kinds, checkers and the script lock's reference are built in, so it works
/// in any directory): those of `dir` (bad input when it is not a readable directory), else of
/// `./scenarios` when it is a directory, else none (`None`: the listing says so).
pub fn list_scenarios(dir: Option<&Path>) -> Result<Option<Listed>, AppError> {
    let default = Path::new("scenarios");
    Ok(match dir {
        Some(dir) => {
            check_dir(dir, "--dir")?;
            Some((dir.to_path_buf(), load(dir)?))
        }
        None if default.is_dir() => Some((default.to_path_buf(), load(default)?)),
        None => None,
    })
}

fn load(dir: &Path) -> Result<Vec<(PathBuf, Scenario)>, AppError> {
    load_dir(dir).map_err(|e| AppError::BadInput(e.to_string()))
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

/// What a command-line flag's path is to its command ([`PATH_FLAGS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Read: a scenario file or directory, a lock file, a catalogue, a program. Never written
    /// over, never inside a directory replaced as a whole.
    Input,
    /// An output written as one file (renamed into place, or streamed).
    File,
    /// An output directory replaced as a whole (a report directory).
    Dir,
    /// An output directory files are written into by name (counterexamples, the mutants' table).
    Into,
}

/// Every flag of every subcommand whose value is a path, with its role: `(subcommand, clap id,
/// the flag as the user types it, role)`. The collision check ([`check_command_paths`]) reads
/// this table for whatever subcommand runs, so a flag listed here is checked against every
/// other; a path flag missing from it is found by [`unclassified_path_args`] (a unit test over
/// the whole command line), not by a user's lost file.
pub const PATH_FLAGS: &[(&str, &str, &str, Role)] = &[
    ("run", "files", "FILE", Role::Input),
    ("run", "history", "--history", Role::File),
    ("explore", "file", "FILE", Role::Input),
    ("explore", "lock", "--lock", Role::Input),
    // A preset's name or a scenario file: a file when one is there.
    ("explore", "against", "--against", Role::Input),
    ("explore", "jsonl", "--jsonl", Role::File),
    ("explore", "summary", "--summary", Role::File),
    ("explore", "out", "--out", Role::Into),
    ("ci", "paths", "PATH", Role::Input),
    ("ci", "report", "--report", Role::Dir),
    ("merge", "files", "FILE", Role::Input),
    ("merge", "out", "--out", Role::File),
    ("merge", "report", "--report", Role::Dir),
    ("live", "file", "FILE", Role::Input),
    ("live", "redis_server", "--redis-server", Role::Input),
    ("live", "report", "--report", Role::Dir),
    ("live", "history", "--history", Role::File),
    ("serve", "file", "FILE", Role::Input),
    ("serve", "history", "--history", Role::File),
    ("serve", "report", "--report", Role::Dir),
    ("serve", "junit", "--junit", Role::Input),
    ("mutants", "catalogue", "--catalogue", Role::Input),
    ("mutants", "report", "--report", Role::Into),
    ("list", "dir", "--dir", Role::Input),
];

/// Whether a clap argument takes a path: typed `PathBuf`, or a value named `FILE`, `PATH`,
/// `DIR` or `OUT` (`--against PRESET|FILE`, `--redis-server PATH`).
fn takes_a_path(arg: &clap::Arg) -> bool {
    let typed = arg.get_value_parser().type_id() == std::any::TypeId::of::<PathBuf>();
    let named = arg.get_value_names().into_iter().flatten().any(|name| {
        name.as_str()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| ["FILE", "PATH", "DIR", "OUT"].contains(&word))
    });
    typed || named
}

/// The path arguments of `command`'s subcommands that [`PATH_FLAGS`] does not classify, and the
/// entries of [`PATH_FLAGS`] that name no argument (`subcommand id` each): both empty, or a
/// flag escapes the collision check.
pub fn unclassified_path_args(command: &clap::Command) -> Vec<String> {
    let mut missing = Vec::new();
    for sub in command.get_subcommands() {
        let name = sub.get_name();
        for arg in sub.get_arguments().filter(|arg| takes_a_path(arg)) {
            let id = arg.get_id().as_str();
            if !PATH_FLAGS.iter().any(|(c, i, ..)| *c == name && *i == id) {
                missing.push(format!("{name} {id}: a path flag without a role in PATH_FLAGS"));
            }
        }
    }
    for (c, id, ..) in PATH_FLAGS {
        let found = command
            .find_subcommand(c)
            .is_some_and(|sub| sub.get_arguments().any(|arg| arg.get_id().as_str() == *id));
        if !found {
            missing.push(format!("{c} {id}: in PATH_FLAGS, not an argument"));
        }
    }
    missing
}

/// Parses the command line as `C` (as `C::parse` does, exiting on bad arguments) and checks every
/// path flag of its subcommand against every other ([`check_command_paths`]): the parsed
/// arguments, and the check's verdict for the caller to report.
pub fn parse_with_path_check<C: clap::Parser>() -> (C, Result<(), AppError>) {
    let matches = C::command().get_matches();
    let cli = C::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut C::command()).exit());
    let paths = matches
        .subcommand()
        .map_or(Ok(()), |(name, sub)| check_command_paths(name, sub));
    (cli, paths)
}

/// Bad input, before anything runs, when two paths of the command line `subcommand`'s
/// `matches` (every flag of [`PATH_FLAGS`], defaults included) collide: an output that is an
/// input or would replace a directory holding one ([`check_outputs_spare_inputs`]'s rule), two
/// outputs at one path (`--jsonl X --summary X`: the second would overwrite the first), an
/// output inside an output directory replaced as a whole, or a file output at an output
/// directory's path. Paths are compared where they resolve, through links, `.` and `..`. An
/// input that does not exist is skipped (a preset's name, `--against naive`; or a missing file,
/// which its command reports).
pub fn check_command_paths(subcommand: &str, matches: &clap::ArgMatches) -> Result<(), AppError> {
    let mut inputs: Vec<PathBuf> = Vec::new();
    let mut outputs: Vec<(&str, Role, PathBuf)> = Vec::new();
    for (_, id, flag, role) in PATH_FLAGS.iter().filter(|(c, ..)| *c == subcommand) {
        let Ok(Some(values)) = matches.try_get_raw(id) else {
            continue;
        };
        for value in values {
            let path = PathBuf::from(value);
            match role {
                Role::Input if std::fs::symlink_metadata(&path).is_ok() => inputs.push(path),
                Role::Input => {}
                _ => outputs.push((flag, *role, path)),
            }
        }
    }
    let files: Vec<(&str, Option<&Path>)> = outputs
        .iter()
        .filter(|(_, role, _)| *role == Role::File)
        .map(|(flag, _, path)| (*flag, Some(path.as_path())))
        .collect();
    let dirs: Vec<(&str, Option<&Path>)> = outputs
        .iter()
        .filter(|(_, role, _)| *role == Role::Dir)
        .map(|(flag, _, path)| (*flag, Some(path.as_path())))
        .collect();
    check_outputs_spare_inputs(&inputs, &files, &dirs)?;
    check_outputs_apart(&outputs)
}

/// Bad input when two of `outputs` (`(flag, role, path)`) collide (see [`check_command_paths`]).
fn check_outputs_apart(outputs: &[(&str, Role, PathBuf)]) -> Result<(), AppError> {
    let resolved: Vec<Option<PathBuf>> = outputs.iter().map(|(_, _, path)| resolved(path)).collect();
    for (i, (flag_a, role_a, path_a)) in outputs.iter().enumerate() {
        for (j, (flag_b, role_b, path_b)) in outputs.iter().enumerate().skip(i + 1) {
            let (Some(a), Some(b)) = (&resolved[i], &resolved[j]) else {
                continue;
            };
            let shown = |flag: &str, path: &Path| format!("{flag} {}", path.display());
            let (first, second) = (shown(flag_a, path_a), shown(flag_b, path_b));
            if a == b && *role_a != Role::Dir && *role_b != Role::Dir {
                return Err(AppError::BadInput(format!(
                    "{second}: is the same path as {first}; one would overwrite the other: give each output \
                     its own path"
                )));
            }
            // An output at or inside a directory replaced as a whole is swept away with it.
            let pairs = [
                ((&second, b), (&first, *role_a, a)),
                ((&first, a), (&second, *role_b, b)),
            ];
            for ((flag, inner), (dir_flag, dir_role, dir)) in pairs {
                if dir_role == Role::Dir && inner.starts_with(dir) {
                    return Err(AppError::BadInput(format!(
                        "{flag}: is inside {dir_flag}, a directory replaced as a whole, which would delete \
                         it: give it a path outside"
                    )));
                }
            }
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
    fn a_path_flag_without_a_role_or_a_role_without_a_flag_is_found() {
        use clap::{value_parser, Arg, Command};
        let path = |id: &'static str| Arg::new(id).long(id).value_parser(value_parser!(PathBuf));
        // `run` with its two path flags and a new one nobody classified; `explore` without
        // any of its flags (every entry of the table for it is stale).
        let cli = Command::new("lockstep")
            .subcommand(
                Command::new("run")
                    .arg(path("files"))
                    .arg(path("history"))
                    .arg(path("trace")),
            )
            .subcommand(Command::new("explore").arg(Arg::new("dump").long("dump").value_name("FILE")));
        let missing = unclassified_path_args(&cli);
        assert!(missing.iter().any(|m| m.starts_with("run trace:")), "{missing:?}");
        assert!(missing.iter().any(|m| m.starts_with("explore dump:")), "{missing:?}");
        assert!(
            missing.iter().any(|m| m.starts_with("explore jsonl: in PATH_FLAGS")),
            "{missing:?}"
        );
        assert!(!missing.iter().any(|m| m.starts_with("run history")), "{missing:?}");
    }

    #[test]
    fn two_outputs_at_one_place_or_one_inside_a_replaced_directory_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let (a, dir) = (root.path().join("a.json"), root.path().join("out"));
        let same = root.path().join("x/../a.json");
        let refused = |outputs: &[(&str, Role, PathBuf)]| match check_outputs_apart(outputs) {
            Err(AppError::BadInput(m)) => m,
            other => panic!("{other:?}"),
        };
        let m = refused(&[("--jsonl", Role::File, a.clone()), ("--summary", Role::File, same)]);
        assert!(
            m.contains("--summary") && m.contains("--jsonl") && m.contains("same path"),
            "{m}"
        );
        let m = refused(&[
            ("--history", Role::File, dir.join("h.jsonl")),
            ("--report", Role::Dir, dir.clone()),
        ]);
        assert!(m.contains("--history") && m.contains("is inside --report"), "{m}");
        let m = refused(&[
            ("--summary", Role::File, dir.clone()),
            ("--out", Role::Into, dir.clone()),
        ]);
        assert!(m.contains("same path"), "{m}");
        // Files written into a directory by name, beside another output there: fine.
        check_outputs_apart(&[
            ("--summary", Role::File, dir.join("s.json")),
            ("--out", Role::Into, dir),
        ])
        .unwrap();
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
