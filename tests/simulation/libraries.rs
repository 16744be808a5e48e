//! The library models (`scenarios/libraries/`): every file runs through the same gate as
//! `lockstep ci` (its explicit run and its `[explore]` block) and every expectation holds; the
//! guide's "Library models" table (docs/reproduce.md) has one row per file, and each row's claims — the checkers the
//! story breaks, the checkers some explored seed breaks — are the file's own expectations and the
//! verdicts its run produced. The wake-ups the models depend on (Redisson's unlock message,
//! python-redis-lock's signal list) are checked in the histories.

use lockstep::app::ci::{run_ci, CiOptions};
use lockstep::app::files::load_inputs;
use lockstep::model::ExploreExpect;
use lockstep::model::Verdict;
use lockstep::run::expect::Status;
use lockstep::sim::{EventKind, History, Phase};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where the table is: the guide's "Reproduce a story" chapter.
const GUIDE: &str = "docs/reproduce.md";

/// One row of the guide's table: the file, the checkers its story breaks, the checkers some
/// explored seed must break.
#[derive(Debug)]
struct Row {
    invalid: BTreeSet<String>,
    explore_invalid: BTreeSet<String>,
}

fn checker_set(cell: &str) -> BTreeSet<String> {
    cell.split(',')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty() && c != "none")
        .collect()
}

/// The rows of the "Library models" section's table, by file name.
fn readme_rows() -> BTreeMap<String, Row> {
    let readme = std::fs::read_to_string(root().join(GUIDE)).expect(GUIDE);
    let start = readme
        .find("## Library models")
        .expect("the guide (docs/reproduce.md) has a \"Library models\" section");
    let section = &readme[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let mut rows = BTreeMap::new();
    let mut header: Option<Vec<String>> = None;
    for line in section[..end].lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect();
        let Some(columns) = &header else {
            header = Some(cells);
            continue;
        };
        if cells.iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':')) {
            continue;
        }
        let at = |name: &str| {
            let i = columns
                .iter()
                .position(|c| c.starts_with(name))
                .unwrap_or_else(|| panic!("the table has a column `{name}`: {columns:?}"));
            cells[i].clone()
        };
        let file = at("model").trim_matches('`').to_string();
        assert!(file.ends_with(".toml"), "a row names its scenario file: {line}");
        let row = Row {
            invalid: checker_set(&at("invalid")),
            explore_invalid: checker_set(&at("explore")),
        };
        assert!(rows.insert(file.clone(), row).is_none(), "{file} has two rows");
    }
    rows
}

#[test]
fn every_library_model_meets_its_expectations_and_the_guide_says_what_it_shows() {
    let dir = root().join("scenarios/libraries");
    let inputs = load_inputs(std::slice::from_ref(&dir)).expect("the library models load");
    assert!(inputs.len() >= 5, "one model per library at least: {}", inputs.len());
    let ci = run_ci(&inputs, &CiOptions::default()).expect("the gate runs");
    let rows = readme_rows();

    let files: BTreeSet<String> = inputs.iter().map(|(p, _)| file_name(p)).collect();
    let listed: BTreeSet<String> = rows.keys().cloned().collect();
    assert_eq!(
        files, listed,
        "the guide's table lists exactly the files of scenarios/libraries/"
    );

    for outcome in &ci.scenarios {
        let file = file_name(&outcome.path);
        let run = outcome.run.as_ref().unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            !outcome.status.is_failure(),
            "{file}: {:?}\n{}",
            run.mismatches,
            run.results
                .iter()
                .map(|r| format!("{} {} {}", r.checker, r.verdict.name(), r.explanation))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(run.as_expected() && !run.is_vacuous(), "{file}");
        // The guide's "invalid" cell: what the file expects invalid, and what the run gave.
        let expected_invalid: BTreeSet<String> = outcome
            .scenario
            .expect
            .iter()
            .filter(|(_, v)| **v == Verdict::Invalid)
            .map(|(c, _)| c.clone())
            .collect();
        let row = &rows[&file];
        assert_eq!(
            row.invalid, expected_invalid,
            "{file}: the guide's row vs the file's [expect]"
        );
        for checker in &row.invalid {
            assert_eq!(run.verdict(checker), Some(Verdict::Invalid), "{file}: {checker}");
        }
        // Every stated expectation that is not invalid is valid or unknown as stated; and the
        // story breaks mutual exclusion in every model (that is what each story is about).
        assert_eq!(run.verdict("mutual-exclusion"), Some(Verdict::Invalid), "{file}");
    }

    assert_eq!(
        ci.explorations.len(),
        inputs.len(),
        "every model has an [explore] block"
    );
    for exploration in &ci.explorations {
        let file = file_name(&exploration.path);
        // Pass, or Unchecked where a checker has no stated expectation; never a failure.
        assert!(
            matches!(exploration.status, Status::Pass | Status::Unchecked),
            "{file}: {:?}",
            exploration.summary
        );
        let some_invalid: BTreeSet<String> = exploration
            .expect
            .iter()
            .filter(|(_, e)| **e == ExploreExpect::SomeInvalid)
            .map(|(c, _)| c.clone())
            .collect();
        assert_eq!(
            rows[&file].explore_invalid, some_invalid,
            "{file}: the guide's row vs the file's [explore.expect]"
        );
        for checker in &some_invalid {
            assert!(
                exploration.summary.violations.get(checker).copied().unwrap_or(0) > 0,
                "{file}: no seed broke {checker}"
            );
        }
    }

    // The fenced twins keep the resource safe where their unfenced files lose an update.
    for twin in ["node-redlock", "redisson-rlock"] {
        let unfenced = &rows[&format!("{twin}.toml")];
        let fenced = &rows[&format!("{twin}-fenced.toml")];
        assert!(unfenced.invalid.contains("lost-update") && !fenced.invalid.contains("lost-update"));
    }

    // The wake-ups: client-3 takes the lock right after client-2's release, not at the end of
    // its wait (an unlock message, a push onto the signal list).
    for file in ["redisson-rlock.toml", "python-redis-lock.toml"] {
        let outcome = ci
            .scenarios
            .iter()
            .find(|o| file_name(&o.path) == file)
            .expect("the model ran");
        let history = &outcome.run.as_ref().expect("it ran").history;
        let released_us = first_op(history, "client-2", "release", Phase::Ok).expect("client-2 released");
        let acquired_us = first_op(history, "client-3", "acquire", Phase::Ok).expect("client-3 acquired");
        assert!(
            acquired_us >= released_us && acquired_us - released_us < 100_000,
            "{file}: client-3 acquired at {acquired_us} µs, client-2 released at {released_us} µs"
        );
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// When `node` first completed `op` with `phase`, µs.
fn first_op(history: &History, node: &str, op: &str, phase: Phase) -> Option<u64> {
    history.events().iter().find_map(|e| match &e.kind {
        EventKind::Op { op: name, phase: p, .. } if e.node == node && name == op && *p == phase => Some(e.at_us),
        _ => None,
    })
}

#[test]
fn ci_does_not_read_subfolders() {
    // `lockstep ci scenarios` reads the top folder only: the library models (and the live
    // scenarios) are run by naming their folder.
    let top = load_inputs(&[root().join("scenarios")]).expect("the shipped scenarios load");
    let in_subfolder: Vec<PathBuf> = top
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| p.parent() != Some(&root().join("scenarios")))
        .collect();
    assert!(in_subfolder.is_empty(), "{in_subfolder:?}");
}

/// A script-lock scenario with `lock_extra` appended to `[lock]`.
fn with_lock(lock_extra: &str) -> String {
    format!(
        r#"name = "wait-input"
description = "wait settings"
duration_ms = 5000

[topology]
masters = 1

[lock]
algorithm = "script"
ttl_ms = 1000
{lock_extra}
"#
    )
}

#[test]
fn bad_wait_input_names_file_line_and_field() {
    let cases = [
        ("wait = \"poll\"", "lock.wait", "unknown wait `poll`"),
        (
            "wait = \"blpop\"\nwait_key = \"{list}\"",
            "lock.wait_key",
            "unknown placeholder `{list}`",
        ),
        (
            "wait = \"subscribe\"\nwait_key = \"{token}\"",
            "lock.wait_key",
            "while acquiring",
        ),
        ("wait_key = \"signal\"", "lock.wait_key", "goes with wait"),
        (
            "wait = \"blpop\"\nwait_key = \" \"",
            "lock.wait_key",
            "must not be empty",
        ),
    ];
    for (extra, field, message) in cases {
        let err = lockstep::scenario::Scenario::from_str(&with_lock(extra), "w.toml").expect_err(extra);
        assert_eq!(err.path, "w.toml", "{err}");
        assert_eq!(err.field.as_deref(), Some(field), "{extra}: {err}");
        assert!(err.line.is_some_and(|l| l >= 9), "{extra}: {err}");
        assert!(err.message.contains(message), "{extra}: {err}");
    }
    // Under another algorithm the keys are refused.
    let source = with_lock("wait = \"blpop\"").replace("\"script\"", "\"token-release\"");
    let err = lockstep::scenario::Scenario::from_str(&source, "w.toml").expect_err("refused");
    assert_eq!(err.field.as_deref(), Some("lock.wait"), "{err}");
}

#[test]
fn wait_settings_survive_a_written_counterexample() {
    for (extra, written) in [
        ("wait = \"blpop\"", "wait_key = \"{key}:signal\""),
        (
            "wait = \"subscribe\"\nwait_key = \"ch:{key}\"",
            "wait_key = \"ch:{key}\"",
        ),
        ("", ""),
    ] {
        let scenario = lockstep::scenario::Scenario::from_str(&with_lock(extra), "w.toml").expect(extra);
        let toml = scenario.to_toml();
        assert!(toml.contains(written), "{extra}: {toml}");
        assert_eq!(extra.is_empty(), !toml.contains("wait_key = "), "{toml}");
        let again = lockstep::scenario::Scenario::from_str(&toml, "again.toml").expect("it parses again");
        assert_eq!(again.to_toml(), toml);
    }
}
