//! Hostile but fair input over the binary (issue 13): every case exits exactly 0, 1 or 2, never
//! panics (101) or aborts, never writes outside the directories it was given, and never turns
//! "nothing happened" into a green gate.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::lockstep_in;

fn lockstep(args: &[&str]) -> (i32, String, String) {
    lockstep_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// A fresh, empty temporary directory for one test.
fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lockstep-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn shipped(name: &str) -> String {
    root().join("scenarios").join(name).display().to_string()
}

/// Every file and directory under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
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
/// minutes: 240,000 failed connects. It used to exhaust turmoil's ephemeral ports (a panic
/// inside the simulation); the link's reconnect backoff now keeps it within them.
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

    let report = dir.join("report");
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
    let rows = json["scenarios"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let ports = rows.iter().find(|r| r["name"] == "ports").unwrap();
    assert_eq!(ports["status"], "fail", "{ports}");
    let kleppmann = rows.iter().find(|r| r["name"] == "kleppmann-gc-pause").unwrap();
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
    let report = dir.join("report");
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
    let rows = json["scenarios"].as_array().unwrap();
    let row = rows.iter().find(|r| r["name"] == "day-of-retries").unwrap();
    assert_eq!(row["status"], "error", "{row}");
    let error = row["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("day.toml") && error.contains("cap of 20000 events"),
        "{row}"
    );
    let kleppmann = rows.iter().find(|r| r["name"] == "kleppmann-gc-pause").unwrap();
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
    assert!(
        !files.iter().any(|f| f.split('/').any(|part| part.starts_with('.'))),
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
    // What a run killed while building its report (or while removing the previous one) leaves.
    let stale = [".out.new.abc123", ".out.old.Zz9Zz9"];
    for name in stale {
        put(&format!("{name}/charts/timeline-x.svg"));
    }
    // Not ours: other names, a file, a link to a directory; and one a live run holds.
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
    for name in [
        ".out.new.toolong7",
        ".out.new.ab12",
        ".other.new.abc123",
        ".hidden",
        ".out.new.liv123",
    ] {
        put(&format!("{name}/report.json"));
    }
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
fn the_time_limit_covers_shrinking() {
    let started = Instant::now();
    let (code, out, err) = lockstep(&[
        "explore",
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
