//! Hostile but fair input over the binary (issue 13): every case exits exactly 0, 1 or 2, never
//! panics (101) or aborts, never writes outside the directories it was given, and never turns
//! "nothing happened" into a green gate.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;
use common::lockstep_in;

fn lockstep(args: &[&str]) -> (i32, String, String) {
    lockstep_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// A fresh, empty temporary directory for one test.
fn temp(name: &str) -> common::TempPath {
    common::TempPath::dir("hostile", name)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn shipped(name: &str) -> String {
    root().join("scenarios").join(name).display().to_string()
}

/// Every file and directory under `dir`, relative, sorted.
pub(crate) fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(base).unwrap().display().to_string());
            if path.is_dir() && !path.is_symlink() {
                walk(base, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Runs the gate (`ci --quiet`) over `scenarios` into `report`, expects exit 1 (one scenario
/// fails) and returns the report's rows, by scenario name.
fn gate_rows(scenarios: &Path, report: &Path) -> Vec<(String, serde_json::Value)> {
    let (code, out, err) = lockstep(&[
        "ci",
        scenarios.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).unwrap()).unwrap();
    json["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| (row["name"].as_str().unwrap_or_default().to_string(), row.clone()))
        .collect()
}

/// The row of scenario `name` among `rows`.
fn row<'a>(rows: &'a [(String, serde_json::Value)], name: &str) -> &'a serde_json::Value {
    &rows
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no row `{name}`"))
        .1
}

/// A small scenario: one client, a short run; `extra` is appended.
fn small_scenario(name: &str, extra: &str) -> String {
    format!(
        r#"name = "{name}"
description = "hostile-input test scenario"
seed = 1
duration_ms = 3000

[topology]
masters = 1
clients = 1

[lock]
algorithm = "token-release"
ttl_ms = 1000
{extra}"#
    )
}

/// A client partitioned from its only master for the whole run: it wants the lock, never gets it.
const NEVER_GRANTED: &str = r#"
[workload]
until_ms = 2000

[[fault]]
at_ms = 0
kind = "partition"
a = "client-1"
b = "redis-1"
"#;

/// A client that keeps reconnecting to a master it is partitioned from, for 40 simulated
/// minutes. It used to exhaust the simulated network's ephemeral ports (a panic inside the
/// simulation); the link's reconnect backoff keeps its attempts bounded.
const PORTS: &str = r#"name = "ports"
description = "a client retries against a master it is partitioned from"
seed = 1
duration_ms = 2400000
tick_ms = 10

[topology]
masters = 1
clients = 1

[lock]
algorithm = "token-release"
ttl_ms = 1000

[workload]
acquire_retry_ms = 10
until_ms = 2400000

[[fault]]
at_ms = 0
kind = "partition"
a = "client-1"
b = "redis-1"
"#;

/// A `lockstep ci` report of the Kleppmann scenario, written once into `dir/r`.
fn kleppmann_report(dir: &Path) -> PathBuf {
    let out = dir.join("r");
    let (code, o, e) = lockstep(&[
        "ci",
        &shipped("kleppmann-gc-pause.toml"),
        "--report",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{o}{e}");
    out.join("report.json")
}

// 1. Path traversal in merge.

#[test]
fn merge_refuses_a_scenario_name_that_is_a_path_and_writes_nothing_outside_out() {
    let dir = temp("traversal");
    let report = std::fs::read_to_string(kleppmann_report(&dir)).unwrap();
    let evil = report.replace(
        "\"name\": \"kleppmann-gc-pause\"",
        "\"name\": \"x/../../../../elsewhere/evil\"",
    );
    assert_ne!(evil, report);
    let input = dir.join("evil.json");
    std::fs::write(&input, evil).unwrap();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let before = tree(&dir);
    let (code, _, err) = lockstep_in(&work, &["merge", input.to_str().unwrap(), "--report", "merged"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("scenarios[0].name") && err.contains("not a scenario name"),
        "{err}"
    );
    assert_eq!(tree(&dir), before, "merge wrote files");
    assert!(!Path::new("/elsewhere").exists());
}

#[test]
fn chart_files_are_collision_free_slugs() {
    let dir = temp("slugs");
    let text = std::fs::read_to_string(kleppmann_report(&dir)).unwrap();
    let mut report = lockstep::report::Report::from_json(&text, "r.json").unwrap();
    let mut twin = report.scenarios[0].clone();
    report.scenarios[0].name = "a/../../b".into();
    twin.name = "a-------b".into();
    report.scenarios.push(twin);
    let stems: Vec<String> = lockstep::report::chart_stems(&report)
        .into_iter()
        .map(|(stem, _)| stem)
        .collect();
    assert_eq!(stems, ["timeline-a-------b", "timeline-a-------b-2"]);
    assert!(report.validate().is_err());
}

// 2. Panics become the scenario's error; accepted input is bounded.

#[test]
fn a_client_cut_off_for_forty_minutes_runs_to_the_end_and_the_gate_goes_on() {
    let dir = temp("panic");
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(scenarios.join("ports.toml"), PORTS).unwrap();
    std::fs::copy(
        shipped("kleppmann-gc-pause.toml"),
        scenarios.join("kleppmann-gc-pause.toml"),
    )
    .unwrap();
    let started = Instant::now();
    let ports = scenarios.join("ports.toml");
    let kleppmann = scenarios.join("kleppmann-gc-pause.toml");
    let (code, out, err) = lockstep(&["run", "--quiet", ports.to_str().unwrap(), kleppmann.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains("panicked") && !err.contains("panicked"), "{out}{err}");
    // Nobody ever got the lock: a liveness failure, not a silent pass and not a crash.
    assert!(out.contains("progress is invalid"), "{out}");
    assert!(
        out.contains("kleppmann-gc-pause") && out.contains("result: as expected"),
        "{out}"
    );

    let rows = gate_rows(&scenarios, &dir.join("report"));
    assert_eq!(rows.len(), 2);
    let ports = row(&rows, "ports");
    assert_eq!(ports["status"], "fail", "{ports}");
    let kleppmann = row(&rows, "kleppmann-gc-pause");
    assert_eq!(kleppmann["status"], "pass", "{kleppmann}");
    assert!(started.elapsed() < Duration::from_secs(120));
}

/// One master, crashed at 0 and never restarted; two clients retry for a simulated day. It used
/// to record ~4,000 events a simulated second until it aborted at 19.5 GB. `{retry}` is the
/// retry delay, `{cap}` extra top-level lines.
fn day_of_retries(retry: u64, cap: &str) -> String {
    format!(
        r#"name = "day-of-retries"
description = "one master crashed at 0 and never restarted; clients retry for a day"
seed = 1
duration_ms = 86400000
{cap}
[topology]
masters = 1
clients = 2

[lock]
algorithm = "naive"
ttl_ms = 1000

[workload]
acquire_retry_ms = {retry}

[[fault]]
at_ms = 0
kind = "crash"
node = "redis-1"
"#
    )
}

/// The simulated time (ms) at which a run stopped on its history cap, from its message.
fn stopped_at_ms(text: &str) -> u64 {
    let rest = text.split("the run stopped at ").nth(1).expect("a history-cap message");
    rest.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn a_retry_without_delay_is_refused_naming_its_line() {
    let dir = temp("retry0");
    let file = dir.join("day.toml");
    std::fs::write(&file, day_of_retries(0, "")).unwrap();
    let (code, out, err) = lockstep(&["run", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("day.toml:15:1: field `workload.acquire_retry_ms`: must be at least 1"),
        "{err}"
    );
}

#[test]
fn a_day_of_retries_stops_at_the_history_cap_and_the_gate_goes_on() {
    let dir = temp("histcap");
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    // A small cap keeps the test quick; the default (1,000,000) stops the same run after about
    // 350 simulated seconds.
    let day = scenarios.join("day.toml");
    std::fs::write(&day, day_of_retries(1, "history_events_max = 20000\n")).unwrap();
    std::fs::copy(
        shipped("kleppmann-gc-pause.toml"),
        scenarios.join("kleppmann-gc-pause.toml"),
    )
    .unwrap();

    let (code, out, err) = lockstep(&["run", "--quiet", day.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    for words in [
        day.to_str().unwrap(),
        "cap of 20000 events",
        "history_events_max",
        "duration_ms",
        "acquire_retry_ms",
    ] {
        assert!(out.contains(words), "`{words}` missing: {out}");
    }
    // It stopped long before the day was over: its memory is bounded by the cap, not the duration.
    assert!(stopped_at_ms(&out) < 3_600_000, "{out}");

    // Under the gate it is that scenario's error; the other scenario still runs; exit 1.
    let rows = gate_rows(&scenarios, &dir.join("report"));
    let day_row = row(&rows, "day-of-retries");
    assert_eq!(day_row["status"], "error", "{day_row}");
    let error = day_row["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("day.toml") && error.contains("cap of 20000 events"),
        "{day_row}"
    );
    let kleppmann = row(&rows, "kleppmann-gc-pause");
    assert_eq!(kleppmann["status"], "pass", "{kleppmann}");
}

#[test]
fn an_exploration_seed_that_reaches_the_history_cap_is_reported() {
    let dir = temp("histcap-explore");
    let file = dir.join("busy.toml");
    // Explore replaces the faults; a workload that never ends fills the history by itself.
    std::fs::write(
        &file,
        small_scenario(
            "busy",
            "\n[workload]\nuntil_ms = 3000\nwork_ms = 1\nacquire_retry_ms = 1\n",
        )
        .replace("duration_ms = 3000", "duration_ms = 3000\nhistory_events_max = 500"),
    )
    .unwrap();
    let (code, out, err) = lockstep(&["explore", file.to_str().unwrap(), "--seeds", "2"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("errors: 2"), "{out}");
    assert!(
        out.contains("error on seed 0") && out.contains("cap of 500 events"),
        "{out}"
    );
}

#[test]
fn values_that_used_to_panic_are_bad_input_naming_the_field() {
    let dir = temp("bounds");
    for (extra, field) in [
        ("tick_ms = 10000000\n", "tick_ms"),
        ("duration_ms = 18446744073709551615\n", "duration_ms"),
    ] {
        let text = small_scenario("bounds", "").replace("seed = 1\n", &format!("seed = 1\n{extra}"));
        let text = if field == "duration_ms" {
            text.replace("duration_ms = 3000\n", "")
        } else {
            text
        };
        let file = dir.join(format!("{field}.toml"));
        std::fs::write(&file, text).unwrap();
        let (code, _, err) = lockstep(&["run", file.to_str().unwrap()]);
        assert_eq!(code, 2, "{field}: {err}");
        assert!(err.contains(&format!("field `{field}`")), "{err}");
    }
    let file = dir.join("ttl.toml");
    std::fs::write(
        &file,
        small_scenario("ttl", "").replace("ttl_ms = 1000", "ttl_ms = 9223372036854775807"),
    )
    .unwrap();
    let (code, _, err) = lockstep(&["run", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("field `lock.ttl_ms`"), "{err}");
    // The largest TTL accepted: lock-aware clock jumps over it have a non-empty range.
    let file = dir.join("ttl-max.toml");
    std::fs::write(
        &file,
        small_scenario("ttl-max", "").replace("ttl_ms = 1000", "ttl_ms = 86400000"),
    )
    .unwrap();
    let (code, out, err) = lockstep(&[
        "explore",
        file.to_str().unwrap(),
        "--lock-aware",
        "--kinds",
        "clock-jump,pause,partition",
        "--seeds",
        "3",
        "--jobs",
        "1",
        "--quiet",
    ]);
    assert!(code == 0 || code == 1, "{out}{err}");
    assert!(out.contains("seeds"), "{out}");
}

// 3. No green gate over nothing.

#[test]
fn a_run_in_which_nobody_ever_gets_the_lock_is_not_a_pass() {
    let dir = temp("vacuous");
    let file = dir.join("never.toml");
    std::fs::write(&file, small_scenario("never", NEVER_GRANTED)).unwrap();
    let (code, out, _) = lockstep(&["run", "--quiet", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("progress") && out.contains("vacuous"), "{out}");
    let report = dir.join("report");
    let (code, out, err) = lockstep(&["ci", file.to_str().unwrap(), "--report", report.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    let summary = std::fs::read_to_string(report.join("summary.md")).unwrap();
    assert!(summary.contains("progress"), "{summary}");
    // Expected, it passes.
    let expected = dir.join("expected.toml");
    std::fs::write(
        &expected,
        small_scenario(
            "expected",
            &format!("{NEVER_GRANTED}\n[expect]\nprogress = \"invalid\"\n"),
        ),
    )
    .unwrap();
    let (code, out, _) = lockstep(&["run", "--quiet", expected.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn empty_or_meaningless_exploration_options_are_bad_input() {
    for args in [
        &["--seeds", "0"][..],
        &["--time-limit", "0"],
        &["--check-determinism=-5"],
        &["--check-determinism=NaN"],
        &["--check-determinism=0"],
        &["--check-determinism=101"],
        &["--check-determinism=inf"],
        &["--faults-max", "65"],
        &["--faults-max", "0"],
        &["--jobs", "0"],
    ] {
        let mut all = vec!["explore", "--seeds", "2", "--quiet"];
        if args[0] == "--seeds" {
            all = vec!["explore", "--quiet"];
        }
        all.extend_from_slice(args);
        let (code, out, err) = lockstep(&all);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(!out.contains("seeds run"), "{args:?} explored: {out}");
    }
}

#[test]
fn merge_refuses_reports_of_different_runs_and_duplicate_shards() {
    let dir = temp("mixed");
    let shard = |file: &str, k: &str, out: &str| {
        let out = dir.join(out);
        let (code, o, e) = lockstep(&[
            "ci",
            &shipped(file),
            "--shard",
            k,
            "--report",
            out.to_str().unwrap(),
            "--quiet",
        ]);
        assert!(code == 0, "{o}{e}");
        out.join("report.json").display().to_string()
    };
    let a1 = shard("kleppmann-gc-pause.toml", "1/2", "a1");
    let a2 = shard("kleppmann-gc-pause.toml", "2/2", "a2");
    let b2 = shard("kleppmann-gc-pause-fenced.toml", "2/2", "b2");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&a1).unwrap()).unwrap();
    assert_eq!(json["run_id"].as_str().map(str::len), Some(64), "{json}");
    assert_eq!(json["shard"]["index"], 1);

    let (code, _, err) = lockstep(&["merge", &a1, &b2]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("another run"), "{err}");
    let (code, _, err) = lockstep(&["merge", &a1, &a1, &a2]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("shard 1/2 is also in"), "{err}");
    let (code, out, err) = lockstep(&["merge", &a1, &a2]);
    assert_eq!(code, 0, "{out}{err}");
    // A whole run merged with itself would count it twice.
    let whole = kleppmann_report(&dir).display().to_string();
    let (code, _, err) = lockstep(&["merge", &whole, &whole]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("twice"), "{err}");
}

// 4. A report directory consistent as a whole.

#[test]
fn the_report_directory_is_replaced_as_a_whole() {
    let dir = temp("swap");
    let out = dir.join("out");
    let run = |file: &str| {
        let (code, o, e) = lockstep(&["ci", &shipped(file), "--report", out.to_str().unwrap(), "--quiet"]);
        assert_eq!(code, 0, "{o}{e}");
    };
    run("kleppmann-gc-pause.toml");
    assert!(out.join("charts/timeline-kleppmann-gc-pause.svg").is_file());
    run("kleppmann-gc-pause-fenced.toml");
    let files = tree(&dir);
    assert!(
        !files.iter().any(|f| f.contains("timeline-kleppmann-gc-pause.")),
        "a chart of a scenario no longer in the report survived: {files:?}"
    );
    assert!(out.join("charts/timeline-kleppmann-gc-pause-fenced.png").is_file());
    // Only the report's owner marker is hidden (see report/staging.rs).
    assert!(
        !files.iter().any(|f| f
            .split('/')
            .any(|part| part.starts_with('.') && part != ".lockstep-owner")),
        "temporary files survived: {files:?}"
    );
}

#[test]
fn hidden_directories_left_by_a_killed_run_are_removed_and_nothing_else() {
    let dir = temp("stale");
    let out = dir.join("out");
    let put = |rel: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    };
    let report_into = |name: &str| {
        let (code, o, e) = lockstep(&[
            "ci",
            &shipped("kleppmann-gc-pause.toml"),
            "--report",
            dir.join(name).to_str().unwrap(),
            "--quiet",
        ]);
        assert_eq!(code, 0, "{o}{e}");
    };
    // What a run killed while building its report (or while removing the previous one) leaves:
    // a directory lockstep made (its owner marker inside), here a whole report.
    let stale = [".out.new.abc123", ".out.old.Zz9Zz9"];
    for name in stale {
        report_into(name);
    }
    // Not ours: other names, a file, a link to a directory, directories merely named like ours
    // (no owner marker: never removed, whatever they hold); and one of ours a live run holds.
    let kept = [
        ".out.new.toolong7",
        ".out.new.ab12",
        ".other.new.abc123",
        ".hidden",
        ".out.new.fil123",
        ".out.new.lnk123",
        ".out.new.liv123",
        "precious",
    ];
    for name in [".out.new.toolong7", ".out.new.ab12", ".other.new.abc123", ".hidden"] {
        put(&format!("{name}/report.json"));
    }
    put(".out.old.Nm4Nm4/charts/timeline-x.svg");
    report_into(".out.new.liv123");
    put(".out.new.fil123");
    put("precious/keep");
    std::os::unix::fs::symlink(dir.join("precious"), dir.join(".out.new.lnk123")).unwrap();
    let live = std::fs::File::open(dir.join(".out.new.liv123")).unwrap();
    live.lock().unwrap();

    let (code, o, e) = lockstep(&[
        "ci",
        &shipped("kleppmann-gc-pause.toml"),
        "--report",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{o}{e}");
    assert!(out.join("report.json").is_file());
    for name in stale {
        assert!(!dir.join(name).exists(), "{name} survived: {:?}", tree(&dir));
    }
    for name in kept {
        assert!(dir.join(name).exists(), "{name} was removed: {:?}", tree(&dir));
    }
    assert!(dir.join(".out.new.lnk123").is_symlink());
    assert!(
        dir.join(".out.old.Nm4Nm4/charts/timeline-x.svg").is_file(),
        "named like ours, not ours"
    );
    assert_eq!(std::fs::read_to_string(dir.join("precious/keep")).unwrap(), "x");
    assert!(dir.join(".out.new.liv123/report.json").is_file());
    // Once its run is gone, the next report removes it too.
    drop(live);
    let (code, o, e) = lockstep(&[
        "ci",
        &shipped("kleppmann-gc-pause.toml"),
        "--report",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{o}{e}");
    assert!(!dir.join(".out.new.liv123").exists(), "{:?}", tree(&dir));
    assert!(dir.join(".hidden/report.json").is_file());
}

#[test]
fn an_unwritable_or_foreign_report_location_is_bad_input_and_changes_nothing() {
    let dir = temp("unwritable");
    std::fs::write(dir.join("file"), "not a directory").unwrap();
    let inside_a_file = dir.join("file/out");
    let (code, _, err) = lockstep(&[
        "ci",
        &shipped("kleppmann-gc-pause.toml"),
        "--report",
        inside_a_file.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    // A directory that is not a report is never replaced.
    let foreign = dir.join("home");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let before = tree(&dir);
    let (code, _, err) = lockstep(&[
        "ci",
        &shipped("kleppmann-gc-pause.toml"),
        "--report",
        foreign.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a lockstep report"), "{err}");
    assert_eq!(tree(&dir), before);
}

// 5. --summary and counterexamples.

#[test]
fn an_unwritable_summary_is_bad_input_before_exploring() {
    let dir = temp("summary");
    std::fs::write(dir.join("file"), "x").unwrap();
    let bad = dir.join("file/summary.json");
    let (code, out, err) = lockstep(&["explore", "--seeds", "2", "--quiet", "--summary", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(!out.contains("seeds run"), "explored before failing: {out}");
}

#[cfg(unix)]
#[test]
fn the_summary_never_follows_a_symlink_and_leaves_no_temporary_file() {
    let dir = temp("symlink");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("summary.json.tmp")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(".summary.json.tmp")).unwrap();
    let summary = dir.join("summary.json");
    let (code, out, err) = lockstep_in(
        &dir,
        &[
            "explore",
            "--seeds",
            "2",
            "--jobs",
            "1",
            "--quiet",
            "--summary",
            "summary.json",
        ],
    );
    assert!(code == 0 || code == 1, "{out}{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::read_to_string(&summary).unwrap().contains("seeds_run"));
    let names = tree(&dir);
    assert_eq!(
        names,
        [".summary.json.tmp", "summary.json", "summary.json.tmp", "victim"],
        "{names:?}"
    );
    // Without --out, explore writes no counterexample directory into the current directory.
    assert!(!dir.join("reports").exists());
}

#[test]
fn explore_without_out_prints_counterexamples_and_creates_no_directory() {
    let dir = temp("no-out");
    let (code, out, err) = lockstep_in(
        &dir,
        &[
            "explore",
            "--kinds",
            "pause",
            "--lock-aware",
            "--seeds",
            "20",
            "--jobs",
            "2",
            "--quiet",
            "--shrink-runs",
            "10",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("not written: pass --out DIR"), "{out}");
    assert!(out.contains("[lock]"), "the TOML is printed: {out}");
    assert_eq!(tree(&dir), Vec::<String>::new());
}

// 6. Unbounded resources.

#[test]
fn the_largest_seed_count_runs_in_bounded_memory_and_time() {
    let started = Instant::now();
    let (code, out, err) = lockstep(&[
        "explore",
        "--seeds",
        "18446744073709551615",
        "--time-limit",
        "2",
        "--jobs",
        "2",
        "--quiet",
        "--shrink",
        "0",
    ]);
    assert!(code == 0 || code == 1, "{out}{err}");
    assert!(out.contains("seeds"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn the_time_limit_covers_shrinking_and_says_what_it_left_out() {
    let dir = temp("time-limit");
    let summary = dir.join("s.json");
    let started = Instant::now();
    let (code, out, err) = lockstep(&[
        "explore",
        "--summary",
        summary.to_str().unwrap(),
        "--kinds",
        "pause",
        "--lock-aware",
        "--seeds",
        "1000000",
        "--time-limit",
        "2",
        "--jobs",
        "2",
        "--quiet",
        "--shrink",
        "50",
        "--shrink-runs",
        "100000",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    // Not a silent cut: the seeds left out and the failures left unshrunk are named.
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let seeds_run = json["seeds_run"].as_u64().unwrap();
    assert!(seeds_run > 0 && seeds_run < 1_000_000, "{json}");
    assert_eq!(json["seeds_planned"], 1_000_000);
    assert!(
        out.contains(&format!("stopped by the time limit: {seeds_run} of 1000000 seeds ran")),
        "{out}"
    );
    // The run's span covers the seeds that ran, not the ones planned: a merge counts no more.
    assert_eq!(json["run"]["spans"][0]["seeds_end"], seeds_run, "{json}");
    let unshrunk = out.matches("not shrunk, the time limit ran out first").count();
    let shrunk = out.matches("shrunk seed").count();
    assert!(unshrunk > 0, "{out}");
    let not_reproduced = out.matches("no longer fails").count();
    // Every distinct bug the shrinker was to take (one seed each, at most 50) is accounted for.
    let groups: usize = out
        .lines()
        .find_map(|l| {
            l.strip_prefix("distinct ")?
                .split_once("): ")
                .or_else(|| l.split_once("bugs: "))
        })
        .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no distinct line: {out}"));
    assert!(groups > 0 && groups <= 50, "{out}");
    assert_eq!(shrunk + unshrunk + not_reproduced, groups, "{out}");
}

#[cfg(unix)]
#[test]
fn a_fifo_or_an_oversized_scenario_file_is_refused_without_blocking() {
    let dir = temp("fifo");
    let fifo = dir.join("fifo.toml");
    let status = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(status.success());
    let started = Instant::now();
    let (code, _, err) = lockstep(&["run", fifo.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    let big = dir.join("big.toml");
    std::fs::write(&big, "#".repeat(2 << 20)).unwrap();
    let (code, _, err) = lockstep(&["run", big.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("limit"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

// 7. Smaller.

#[test]
fn list_of_a_missing_directory_is_bad_input() {
    let (code, _, err) = lockstep(&["list", "--dir", "/nonexistent"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--dir /nonexistent"), "{err}");
}

#[test]
fn a_bad_standard_template_flag_names_the_flag() {
    for (flag, value) in [
        ("--resource", "bogus"),
        ("--fencing", "x\"\n[evil]"),
        ("--tick-ms", "0"),
    ] {
        let (code, _, err) = lockstep(&["explore", flag, value, "--seeds", "1"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(flag), "{err}");
        assert!(!err.contains("<standard template>"), "{err}");
    }
}

#[test]
fn a_truncated_report_is_not_valid_json_with_its_position() {
    let dir = temp("truncated");
    let text = std::fs::read_to_string(kleppmann_report(&dir)).unwrap();
    let cut = dir.join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let (code, _, err) = lockstep(&["merge", cut.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not valid JSON"), "{err}");
    assert!(err.contains(&format!("{}:", cut.display())), "{err}");
    assert!(!err.contains("exploration summary"), "{err}");
}

// Found on a later hostile pass.

/// Runs the binary with its standard output going to `stdout`.
fn lockstep_to(stdout: std::fs::File, args: &[&str]) -> (i32, String) {
    let (code, _, stderr) = common::Lockstep::new(args).stdout(stdout).run();
    (code, stderr)
}

#[test]
fn a_standard_output_that_cannot_be_written_is_an_error_not_a_panic() {
    // /dev/full: every write fails with ENOSPC, as on a full disk behind a redirect.
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full (Linux)")
    };
    let dir = temp("stdout-full");
    let report = dir.join("report");
    let naive = shipped("baseline-naive.toml");
    for args in [
        vec!["run", naive.as_str()],
        vec!["run", "--json", naive.as_str()],
        vec!["explore", "--algorithm", "naive", "--seeds", "2", "--json"],
        vec!["ci", naive.as_str(), "--report", report.to_str().unwrap(), "--quiet"],
        vec!["list"],
    ] {
        let (code, err) = lockstep_to(full(), &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("cannot write to standard output"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_summary_path_that_is_not_a_regular_file_is_refused_before_exploring() {
    let dir = temp("summary-kinds");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let fifo = dir.join("fifo.json");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (path, kind) in [(&link, "a symbolic link"), (&fifo, "a device, FIFO or socket")] {
        let started = Instant::now();
        let (code, out, err) = lockstep(&["explore", "--seeds", "100000", "--summary", path.to_str().unwrap()]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains(&format!("is {kind}, not a regular file")), "{err}");
        assert!(started.elapsed() < Duration::from_secs(30), "refused before exploring");
    }
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    // `merge --out` writes the same way.
    let report = kleppmann_report(&dir);
    let (code, _, err) = lockstep(&["merge", report.to_str().unwrap(), "--out", link.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn the_longest_scenario_name_makes_a_report_and_a_longer_one_is_refused_naming_the_field() {
    let dir = temp("long-name");
    let longest = dir.join("longest.toml");
    let name = "n".repeat(100);
    std::fs::write(&longest, small_scenario(&name, "")).unwrap();
    let report = dir.join("report");
    let (code, out, err) = lockstep(&[
        "ci",
        longest.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(report.join(format!("charts/timeline-{name}.svg")).is_file());

    let longer = dir.join("longer.toml");
    std::fs::write(&longer, small_scenario(&"n".repeat(101), "")).unwrap();
    let longer = longer.to_str().unwrap();
    for args in [
        vec!["run", longer],
        vec!["ci", longer, "--report", report.to_str().unwrap()],
    ] {
        let (code, out, err) = lockstep(&args);
        assert_eq!(code, 2, "{out}{err}");
        assert!(
            err.contains("longer.toml:1:1: field `name`: is 101 bytes long: a scenario name has at most 100"),
            "{err}"
        );
    }
}

#[test]
fn standard_template_flags_with_a_file_are_refused_not_ignored() {
    let naive = shipped("baseline-naive.toml");
    for (flag, value) in [
        ("--algorithm", "redlock"),
        ("--fencing", "incr"),
        ("--resource", "fenced"),
        ("--tick-ms", "0"),
    ] {
        let (code, out, err) = lockstep(&["explore", naive.as_str(), flag, value, "--seeds", "1"]);
        assert_eq!(code, 2, "{flag}: {out}{err}");
        assert!(err.contains(flag) && err.contains("cannot be used with"), "{err}");
    }
    // A value that names nothing is refused with the values there are.
    let (code, out, err) = lockstep(&["explore", "--algorithm", "bogus", "--seeds", "1"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("'bogus'") && err.contains("naive, token-release, watchdog, redlock"),
        "{err}"
    );
}

#[test]
fn counts_that_would_run_nothing_are_bad_input() {
    let dir = temp("zero-counts");
    let report = dir.join("report");
    let naive = shipped("baseline-naive.toml");
    for args in [
        vec![
            "ci",
            naive.as_str(),
            "--report",
            report.to_str().unwrap(),
            "--jobs",
            "0",
        ],
        vec![
            "ci",
            naive.as_str(),
            "--report",
            report.to_str().unwrap(),
            "--ttl-sweep",
            "--sweep-seeds",
            "0",
        ],
        vec!["mutants", "--jobs", "0"],
        vec!["bench", "--scenarios", "0"],
        vec!["bench", "--tick-ms", "0"],
    ] {
        let (code, out, err) = lockstep(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains("invalid value '0'"), "{args:?}: {err}");
    }
    assert!(!report.exists());
}

#[test]
fn a_shrunk_counterexample_states_the_clients_its_file_has() {
    let dir = temp("cx-clients");
    let out_dir = dir.join("cx");
    let (code, out, err) = lockstep(&[
        "explore",
        "--algorithm",
        "naive",
        "--seeds",
        "3",
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let mut checked = 0;
    for line in out.lines().filter(|l| l.trim_start().starts_with("shrunk seed")) {
        // "shrunk seed S (CHECKER): A -> B faults, N clients, in R runs"
        let seed = line.split_whitespace().nth(2).unwrap();
        let checker = line.split('(').nth(1).unwrap().split(')').next().unwrap();
        let clients: usize = line
            .split(" clients")
            .next()
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let file = out_dir.join(format!("explore-naive-seed-{seed}-{checker}.toml"));
        let toml = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(toml.matches("[[client]]").count(), clients, "{line}\n{toml}");
        assert!(toml.contains(&format!("faults and {clients} clients")), "{toml}");
        checked += 1;
    }
    assert!(checked > 0, "{out}");
}

#[test]
fn small_misuses_get_messages_that_name_the_flag_or_file() {
    let dir = temp("messages");
    let file = dir.join("afile");
    std::fs::write(&file, "x").unwrap();
    let (code, _, err) = lockstep(&["explore", "--seeds", "2", "--out", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("exists and is not a directory") && err.contains("--out"),
        "{err}"
    );
    let (code, _, err) = lockstep(&["explore", "--seed-range", "0..18446744073709551616"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not a number from 0 to 18446744073709551615"), "{err}");
    let (code, _, err) = lockstep(&["explore", "--kinds", "bogus", "--seeds", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--kinds: unknown fault kind `bogus`"), "{err}");
    // A FIFO among the scenarios is an error naming it, not a scenario left out of the gate.
    let scenarios = dir.join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    std::fs::copy(shipped("baseline-naive.toml"), scenarios.join("baseline-naive.toml")).unwrap();
    let fifo = scenarios.join("waiting.toml");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let report = dir.join("report");
    let (code, _, err) = lockstep(&["ci", scenarios.to_str().unwrap(), "--report", report.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("waiting.toml") && err.contains("not a regular file"),
        "{err}"
    );
}

#[test]
fn a_merged_summary_reports_the_throughput_of_its_parts() {
    let dir = temp("merged-throughput");
    for (shard, file) in [("1/2", "a.json"), ("2/2", "b.json")] {
        let (code, out, err) = lockstep_in(
            &dir,
            &[
                "explore",
                "--seeds",
                "4",
                "--shard",
                shard,
                "--summary",
                file,
                "--quiet",
                "--shrink",
                "0",
            ],
        );
        assert!(code == 0 || code == 1, "{out}{err}");
    }
    let (code, out, err) = lockstep_in(&dir, &["merge", "a.json", "b.json"]);
    assert!(code == 0 || code == 1, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains("throughput:"))
        .expect("a throughput line");
    let rate: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(rate > 0.0, "{line}");
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = temp("output-is-input");
    let file = dir.join("f.toml");
    std::fs::copy(shipped("baseline-naive.toml"), &file).unwrap();
    let original = std::fs::read_to_string(&file).unwrap();
    let f = file.to_str().unwrap();
    // The same file under another spelling is the same file.
    let other_spelling = dir.join(".").join("f.toml");
    let o = other_spelling.to_str().unwrap();
    for (args, flag) in [
        (vec!["run", f, "--history", o], "--history"),
        (vec!["explore", f, "--summary", o, "--seeds", "1"], "--summary"),
        (vec!["explore", f, "--jsonl", o, "--seeds", "1"], "--jsonl"),
    ] {
        let (code, out, err) = lockstep(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains(flag) && err.contains("would overwrite that input"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    }
    // merge: an input as --out, or inside --report; --out inside --report.
    let shard = dir.join("s1");
    let (code, out, err) = lockstep(&["ci", f, "--report", shard.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 0, "{out}{err}");
    let report = shard.join("report.json");
    let before = std::fs::read_to_string(&report).unwrap();
    let r = report.to_str().unwrap();
    let merged = dir.join("merged");
    let inside = merged.join("m.json");
    for (args, words) in [
        (vec!["merge", r, "--out", r], "would overwrite that input"),
        (
            vec!["merge", r, "--report", shard.to_str().unwrap()],
            "would delete that input",
        ),
        (
            vec![
                "merge",
                r,
                "--out",
                inside.to_str().unwrap(),
                "--report",
                merged.to_str().unwrap(),
            ],
            "is inside --report",
        ),
    ] {
        let (code, out, err) = lockstep(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(words), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&report).unwrap(), before);
    assert!(!merged.exists());
}

#[test]
fn a_catalogue_that_would_score_nothing_is_bad_input() {
    let dir = temp("catalogue");
    std::fs::copy(shipped("baseline-naive.toml"), dir.join("parent.toml")).unwrap();
    let parent = "[[parent]]\nname = \"p\"\nfile = \"parent.toml\"\nkinds = [\"pause\"]\n";
    let mutant = |name: &str, lock: &str| {
        format!("[[mutant]]\nname = \"{name}\"\nparent = \"p\"\nbreaks = \"b\"\nsource = \"s\"\nlock = {{ {lock} }}\n")
    };
    for (text, words) in [
        (String::new(), "no [[mutant]]"),
        (parent.to_string(), "no [[mutant]]"),
        (format!("{parent}{}", mutant("", "ttl_ms = 5")), "empty `name`"),
        (
            format!("{parent}{}{}", mutant("m", "ttl_ms = 5"), mutant("m", "ttl_ms = 6")),
            "two mutants are named `m`",
        ),
        (
            format!("{parent}{parent}{}", mutant("m", "ttl_ms = 5")),
            "two parents are named `p`",
        ),
        (format!("{parent}{}", mutant("m", "")), "changes nothing"),
        (
            format!("{parent}{}", mutant("m", "algorithm = \"naive\"")),
            "changes nothing",
        ),
    ] {
        let catalogue = dir.join("c.toml");
        std::fs::write(&catalogue, &text).unwrap();
        let (code, out, err) = lockstep(&["mutants", "--catalogue", catalogue.to_str().unwrap(), "--seeds", "1"]);
        assert_eq!(code, 2, "{text}\n{out}{err}");
        assert!(err.contains("c.toml") && err.contains(words), "{text}\n{err}");
    }
}

#[test]
fn mutants_report_never_writes_through_a_link() {
    let dir = temp("mutants-link");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("mutants.md")).unwrap();
    let started = Instant::now();
    let (code, o, err) = lockstep(&["mutants", "--report", out.to_str().unwrap(), "--seeds", "1"]);
    assert_eq!(code, 2, "{o}{err}");
    assert!(err.contains("mutants.md") && err.contains("symbolic link"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refused before the suite runs"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn a_ci_shard_with_nothing_to_run_says_so_and_still_writes_its_report() {
    let dir = temp("empty-shard");
    let report = dir.join("report");
    let naive = shipped("baseline-naive.toml");
    let (code, out, err) = lockstep(&[
        "ci",
        naive.as_str(),
        "--shard",
        "2/3",
        "--report",
        report.to_str().unwrap(),
    ]);
    // A fixed CI matrix may hold more shards than files; `merge` needs every shard's report.
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("--shard 2/3") && err.contains("this shard checks nothing"),
        "{err}"
    );
    assert!(report.join("report.json").is_file());
    let (code, out, err) = lockstep(&[
        "ci",
        naive.as_str(),
        "--shard",
        "1/3",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("checks nothing"), "{err}");
}

/// `lockstep explore --seeds N` of the standard template, its summary written to `dir/s.json`.
fn explore_summary(dir: &Path, seeds: u64) {
    let seeds = seeds.to_string();
    let args = [
        "explore",
        "--seeds",
        &seeds,
        "--summary",
        "s.json",
        "--quiet",
        "--shrink",
        "0",
    ];
    let (code, out, err) = lockstep_in(dir, &args);
    assert!(code == 0 || code == 1, "{out}{err}");
}

#[test]
fn a_summary_whose_counts_disagree_is_refused_naming_the_field() {
    let dir = temp("summary-counts");
    explore_summary(&dir, 3);
    let text = std::fs::read_to_string(dir.join("s.json")).unwrap();
    for (field, value) in [("seeds_violating", 999u64), ("errors", 4)] {
        let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
        json[field] = value.into();
        std::fs::write(dir.join("bad.json"), json.to_string()).unwrap();
        let (code, _, err) = lockstep_in(&dir, &["merge", "bad.json"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("field `{field}`: {value} is more than the 3 seeds run")),
            "{err}"
        );
    }
}

#[test]
fn merge_recomputes_every_status_and_refuses_an_edited_one() {
    let dir = temp("edited-status");
    let text = std::fs::read_to_string(kleppmann_report(&dir)).unwrap();
    let original: serde_json::Value = serde_json::from_str(&text).unwrap();
    let expected = original["scenarios"][0]["checks"][0]["expected"].clone();
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let edits: Vec<(Edit, &str)> = vec![
        (
            // A failing check passed off as a pass.
            Box::new(|r: &mut serde_json::Value| {
                let check = &mut r["scenarios"][0]["checks"][0];
                check["verdict"] = if check["expected"] == "valid" {
                    "invalid"
                } else {
                    "valid"
                }
                .into();
                check["status"] = "pass".into();
            }),
            "field `scenarios[0].checks[0].status`: `pass`, but verdict",
        ),
        (
            Box::new(|r: &mut serde_json::Value| r["scenarios"][0]["status"] = "unchecked".into()),
            "field `scenarios[0].status`: `unchecked`, but its checks make it",
        ),
        (
            Box::new(|r: &mut serde_json::Value| {
                let row = r["scenarios"][0].clone();
                r["scenarios"].as_array_mut().unwrap().push(row);
            }),
            "each scenario runs once",
        ),
    ];
    assert!(expected.is_string(), "the first check has an expectation: {expected}");
    for (edit, words) in edits {
        let mut report = original.clone();
        edit(&mut report);
        let file = dir.join("edited.json");
        std::fs::write(&file, report.to_string()).unwrap();
        let (code, out, err) = lockstep(&["merge", file.to_str().unwrap()]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains(words), "{err}");
    }
}

#[test]
fn a_merge_input_of_the_wrong_type_names_the_field() {
    let dir = temp("field-path");
    let mut report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kleppmann_report(&dir)).unwrap()).unwrap();
    report["totals"]["passed"] = (-5).into();
    let file = dir.join("typed.json");
    std::fs::write(&file, report.to_string()).unwrap();
    let (code, _, err) = lockstep(&["merge", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("field `totals.passed`") && err.contains("-5"), "{err}");

    explore_summary(&dir, 2);
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("s.json")).unwrap()).unwrap();
    summary["violations"]["mutual-exclusion"] = "many".into();
    std::fs::write(dir.join("bad.json"), summary.to_string()).unwrap();
    let (code, _, err) = lockstep_in(&dir, &["merge", "bad.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("field `violations.mutual-exclusion`"), "{err}");
}
