//! The `lockstep` command as a user runs it: output and exit codes.

use std::path::Path;

use crate::common;

use common::lockstep;

/// A file `name` holding `content`, removed when the returned path is dropped.
fn temp_file(name: &str, content: &str) -> common::TempPath {
    let path = common::TempPath::unused("cli", name);
    std::fs::write(&*path, content).unwrap();
    path
}

#[test]
fn kleppmann_shows_the_violation_and_exits_0_because_it_is_expected() {
    let (code, out, err) = lockstep(&["run", "scenarios/kleppmann-gc-pause.toml"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("PAUSED for 15000 ms"), "{out}");
    assert!(out.contains("ACCEPTED write value=1"), "{out}");
    assert!(out.contains("mutual-exclusion   invalid"), "{out}");
    assert!(out.contains("result: as expected"), "{out}");
}

#[test]
fn run_writes_the_history_and_prints_json() {
    let dir = common::TempPath::dir("cli", "history");
    let history = dir.join("history.jsonl");
    let (code, out, err) = lockstep(&[
        "run",
        "scenarios/kleppmann-gc-pause.toml",
        "--json",
        "--history",
        history.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("--json prints one JSON document");
    assert_eq!(doc["format"], "lockstep-run");
    assert_eq!(doc["ok"], true);
    let run = &doc["runs"][0];
    assert_eq!(run["name"], "kleppmann-gc-pause");
    let text = std::fs::read_to_string(&history).unwrap();
    let digest = lockstep::report::interactive::digest_of_jsonl(&text).unwrap();
    assert_eq!(run["history"]["digest"].as_str(), Some(digest.as_str()));
    // --history takes one file.
    let (code, _, err) = lockstep(&[
        "run",
        "scenarios/kleppmann-gc-pause.toml",
        "scenarios/kleppmann-gc-pause-fenced.toml",
        "--history",
        history.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explore_prints_json() {
    let (code, out, err) = lockstep(&[
        "explore",
        "--algorithm",
        "naive",
        "--kinds",
        "pause",
        "--seeds",
        "30",
        "--shrink",
        "1",
        "--json",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("--json prints one JSON document");
    assert_eq!(doc["format"], "lockstep-explore");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["summary"]["seeds_run"], 30);
    assert!(
        doc["counterexamples"][0]["toml"].as_str().unwrap().contains("[expect]"),
        "{out}"
    );
}

#[test]
fn fenced_kleppmann_says_plainly_that_the_resource_stayed_safe() {
    let (code, out, _) = lockstep(&["run", "scenarios/kleppmann-gc-pause-fenced.toml"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("REJECTED write value=1 token=1"), "{out}");
    assert!(
        out.contains("Mutual exclusion was violated, yet the resource stayed safe"),
        "{out}"
    );
}

#[test]
fn a_wrong_expectation_exits_1_and_prints_the_replay_command() {
    let source =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/kleppmann-gc-pause.toml"))
            .unwrap();
    let wrong = source.replace("mutual-exclusion = \"invalid\"", "mutual-exclusion = \"valid\"");
    assert_ne!(source, wrong);
    let path = temp_file("wrong-expectation.toml", &wrong);
    let (code, out, _) = lockstep(&["run", "--quiet", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("UNEXPECTED: mutual-exclusion is invalid but the scenario expects valid"),
        "{out}"
    );
    assert!(out.contains("replay: lockstep run"), "{out}");
}

#[test]
fn a_malformed_file_exits_2_naming_the_line_and_field() {
    let source =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/kleppmann-gc-pause.toml"))
            .unwrap();
    let bad = source.replace("ttl_ms = 10000", "ttl_ms = 10000\nttl_secs = 10");
    let line = bad.lines().position(|l| l.starts_with("ttl_secs")).unwrap() + 1;
    let path = temp_file("malformed.toml", &bad);
    let (code, out, err) = lockstep(&["run", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains(&format!(":{line}:")), "names line {line}: {err}");
    assert!(err.contains("ttl_secs"), "names the field: {err}");
    let (code, _, err) = lockstep(&["run", "no/such/file.toml"]);
    assert_eq!(code, 2);
    assert!(err.contains("no/such/file.toml"), "{err}");
}

#[test]
fn list_shows_algorithms_faults_and_scenarios() {
    let (code, out, _) = lockstep(&["list"]);
    assert_eq!(code, 0);
    for needle in [
        "redlock",
        "watchdog",
        "clock-jump",
        "pause",
        "kleppmann-gc-pause.toml",
        "mutual-exclusion",
        // The script lock's reference: its fields, operations and placeholders.
        "script lock ([lock] algorithm = \"script\")",
        "wait_key",
        "{ttl_ms}",
    ] {
        assert!(out.contains(needle), "missing {needle}: {out}");
    }
    // Every fault kind with its summary and where it is accepted, by the names each place takes.
    let row = |kind: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{kind} ")))
            .unwrap_or_else(|| panic!("no row for {kind}: {out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(row("drop-reply")[1..3], ["yes", "opt-in"], "{out}");
    assert_eq!(row("rolling-restart")[1..3], ["-", "default"], "{out}");
    assert_eq!(row("heal")[1..3], ["yes", "-"], "{out}");
    assert!(out.contains("server `node` runs the next `count` requests"), "{out}");
    // Scenario descriptions end at a sentence's end, never mid-sentence.
    let line = out.lines().find(|l| l.contains("kleppmann-gc-pause.toml")).unwrap();
    assert!(line.trim_end().ends_with('.'), "{line}");
}

/// Issue 52: outside the repository `lockstep list` still lists what is built in (algorithms,
/// fault kinds, checkers, the script lock's reference) and says that no scenarios directory is
/// there; a `--dir` that is not a directory stays bad input.
#[test]
fn list_works_in_any_directory_and_says_when_there_are_no_scenarios() {
    let elsewhere = common::TempPath::dir("cli", "list-elsewhere");
    let (code, out, err) = common::lockstep_in(&elsewhere, &["list"]);
    assert_eq!(code, 0, "{out}{err}");
    for needle in ["algorithms:", "redlock", "checkers:", "mutual-exclusion", "wait_key"] {
        assert!(out.contains(needle), "missing {needle}: {out}");
    }
    assert!(out.contains("scenarios: no ./scenarios directory here"), "{out}");
    assert!(!out.contains("kleppmann-gc-pause.toml"), "{out}");
    // With a scenarios directory of its own, that one is listed.
    std::fs::create_dir(elsewhere.join("scenarios")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/kleppmann-gc-pause.toml"),
        elsewhere.join("scenarios/mine.toml"),
    )
    .unwrap();
    let (code, out, err) = common::lockstep_in(&elsewhere, &["list"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("scenarios (scenarios):") && out.contains("mine.toml"),
        "{out}"
    );
}

#[test]
fn list_without_a_readable_scenario_directory_is_bad_input() {
    let (code, out, err) = lockstep(&["list", "--dir", "/nonexistent/lockstep-scenarios"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("cannot read directory"), "{err}");
}

#[test]
fn explore_takes_a_files_explore_block_as_defaults_and_flags_override_it() {
    let (code, out, err) = lockstep(&[
        "explore",
        "scenarios/explore-token-release-pause-crash.toml",
        "--seeds",
        "6",
        "--shrink",
        "0",
        "--quiet",
    ]);
    assert!(code == 0 || code == 1, "{out}{err}");
    assert!(
        out.contains("seeds run: 6"),
        "the flag overrides the file's 80 seeds: {out}"
    );
    let kinds: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("seeds per fault kind"))
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(!kinds.is_empty(), "{out}");
    assert!(
        kinds.iter().all(|k| *k == "pause" || *k == "crash"),
        "only the file's kinds: {kinds:?}"
    );
    let (code, _, err) = lockstep(&["explore", "--kinds", "nonsense", "--seeds", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown fault kind `nonsense`"), "{err}");
}

#[test]
fn run_given_a_directory_points_to_the_files_and_to_ci() {
    let (code, out, err) = lockstep(&["run", "scenarios/"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("scenarios/: is a directory")
            && err.contains("lockstep run scenarios/*.toml")
            && err.contains("lockstep ci scenarios/ --report OUT"),
        "{err}"
    );
}

/// Issue 42 item 8: `explore --against FILE` uses only the file's `[lock]` algorithm; when the
/// file says more (another workload, other faults), stderr names what is not used, and so do the
/// summary (`differential.against_unused` in `--summary`'s JSON) and the rendered report. A
/// fixed twin that differs only in its lock gets no such note.
#[test]
fn explore_against_a_file_names_what_it_does_not_use() {
    let dir = common::TempPath::dir("cli", "against-unused");
    let summary = dir.join("summary.json");
    let summary_arg = summary.to_string_lossy().into_owned();
    // One seed of `template` against the safe twin of bug-release-no-owner-check, its summary kept.
    let explore = |template: &str| {
        lockstep(&[
            "explore",
            template,
            "--against",
            "scenarios/bug-release-no-owner-check-safe.toml",
            "--seeds",
            "1",
            "--shrink",
            "0",
            "--quiet",
            "--summary",
            &summary_arg,
        ])
    };
    let (_, out, err) = explore("scenarios/bug-renewal-failure-ignored.toml");
    assert!(err.contains("only its [lock] algorithm settings are used"), "{err}");
    for part in ["[topology]", "[[client]]", "[[fault]]"] {
        assert!(err.contains(part), "{part}: {err}");
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("the summary is written")).expect("JSON");
    let unused: Vec<&str> = doc["differential"]["against_unused"]
        .as_array()
        .unwrap_or_else(|| panic!("the summary names what was not used: {doc}"))
        .iter()
        .filter_map(|p| p.as_str())
        .collect();
    for part in ["[topology]", "[[client]]", "[[fault]]"] {
        assert!(unused.contains(&part), "{part}: {unused:?}");
    }
    assert!(
        out.contains("were not used (the template's were): ") && out.contains("[[fault]]"),
        "the rendered summary says it too: {out}"
    );
    let (_, _, err) = explore("scenarios/bug-release-no-owner-check.toml");
    assert!(!err.contains("algorithm settings are used"), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert!(doc["differential"].is_object(), "{doc}");
    assert!(doc["differential"].get("against_unused").is_none(), "{doc}");
}
