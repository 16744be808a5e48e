//! No gate is green over nothing: runs in which no client ever asked for the lock, empty CI
//! shards and their merge, and counts that would run without end. Each case runs the binary as a
//! user would, under the memory limit of `common::lockstep_limited` (a panic, an abort or a hang
//! fails).

use crate::common;

use common::{lockstep_limited, TempPath};
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn run(args: &[&str]) -> common::LimitedRun {
    lockstep_limited(Path::new(env!("CARGO_MANIFEST_DIR")), args, LIMIT)
}

/// A token-release scenario whose workload is `workload` (TOML lines), every expectation valid.
fn scenario(dir: &Path, name: &str, workload: &str, clients: &str) -> String {
    // Without `[[client]]` tables, two generated clients.
    let count = if clients.is_empty() { "clients = 2" } else { "" };
    let text = format!(
        r#"name = "{name}"
description = "a gate case"
seed = 1
duration_ms = 5000

[topology]
masters = 1
resource = "unfenced"
{count}

[lock]
algorithm = "token-release"
ttl_ms = 2000

[workload]
{workload}

{clients}

[expect]
mutual-exclusion = "valid"
stale-write = "valid"
lost-update = "valid"
token-order = "unknown"
lease-validity = "valid"
ownership = "valid"
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_run_in_which_nobody_asks_for_the_lock_is_vacuous_not_a_pass() {
    let dir = TempPath::dir("gates", "vacuous");
    let clients_late =
        "[[client]]\nname = \"client-1\"\nstart_ms = 6000\n\n[[client]]\nname = \"client-2\"\nstart_ms = 9000";
    let cases = [
        scenario(&dir, "late-start", "iterations = 1", clients_late),
        scenario(&dir, "no-iterations", "iterations = 0", ""),
        scenario(&dir, "until-zero", "until_ms = 0", ""),
    ];
    for file in &cases {
        let r = run(&["run", file]);
        // Judged vacuous (1), or refused as bad input naming the field (2); never a pass.
        match r.code {
            1 => assert!(r.stdout.contains("vacuous"), "{file}: {}", r.stdout),
            2 => assert!(
                r.stderr.contains("start_ms") || r.stderr.contains("iterations") || r.stderr.contains("until_ms"),
                "{file}: refused for another reason: {}",
                r.stderr
            ),
            _ => panic!("{file}: a run that checks nothing passed\n{}{}", r.stdout, r.stderr),
        }
    }
    // Through the CI gate too: the row fails, the gate is red.
    let out = TempPath::unused("gates", "vacuous-report");
    let r = run(&["ci", &cases[0], "--report", out.to_str().unwrap(), "-q"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
}

#[test]
fn an_empty_shard_says_it_checks_nothing_and_a_merge_of_nothing_is_not_a_pass() {
    let dir = TempPath::dir("gates", "shards");
    let file = scenario(
        &dir,
        "one",
        "iterations = 1\nwork_ms = 50",
        "[[client]]\nname = \"client-1\"\n\n[[client]]\nname = \"client-2\"",
    );
    let empty = TempPath::unused("gates", "empty-shard");
    let r = run(&["ci", &file, "--report", empty.to_str().unwrap(), "--shard", "2/2", "-q"]);
    // A fixed CI matrix may have more shards than files: the empty shard writes its report (merge
    // needs every shard) but never says PASS.
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("PASS"), "{}", r.stdout);
    assert!(
        r.stdout.contains("EMPTY") && r.stderr.contains("checks nothing"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    // Merging only empty shards checks nothing: not a green gate.
    let report = empty.join("report.json");
    let merged = TempPath::unused("gates", "merged-nothing");
    let r = run(&["merge", report.to_str().unwrap(), "--report", merged.to_str().unwrap()]);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

#[test]
fn counts_that_would_run_without_end_are_refused() {
    let r = run(&[
        "ci",
        "scenarios",
        "--report",
        "/nonexistent-out",
        "--ttl-sweep",
        "--sweep-seeds",
        "18446744073709551615",
    ]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--sweep-seeds"), "{}", r.stderr);
}

/// A template whose every seed runs for minutes (200 clients hammering three masters for a
/// simulated hour), for the time limit to cut.
fn endless_template(dir: &Path) -> String {
    let text = r#"name = "endless"
description = "every seed runs for minutes of wall time"
seed = 1
duration_ms = 3600000
history_events_max = 10000000

[topology]
masters = 3
clients = 200

[lock]
algorithm = "token-release"
ttl_ms = 2000

[workload]
until_ms = 3600000
work_ms = [5, 10]
acquire_retry_ms = 1
"#;
    let path = dir.join("endless.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn the_time_limit_stops_seeds_in_flight_and_an_exploration_of_nothing_is_not_a_pass() {
    let dir = TempPath::dir("gates", "time-limit");
    let template = endless_template(&dir);
    // Guided placement (the fault-free check and the batches) and random placement alike.
    for strategy in ["mixed", "random"] {
        let args = [
            "explore",
            &template,
            "--seeds",
            "4",
            "--time-limit",
            "1",
            "--jobs",
            "2",
            "--strategy",
            strategy,
            "--json",
        ];
        let out = run(&args);
        // Not a pass: no seed ran to its end, so nothing was checked.
        assert_eq!(out.code, 1, "{strategy}: {}{}", out.stdout, out.stderr);
        let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("one JSON document");
        assert_eq!(doc["ok"], false, "{strategy}");
        assert_eq!(doc["summary"]["seeds_run"], 0, "{strategy}: a cut seed is not counted");
        assert_eq!(doc["summary"]["errors"], 0, "{strategy}: a cut seed is not an error");
        assert_eq!(doc["summary"]["seeds_planned"], 4, "{strategy}");
    }
    let text = run(&["explore", &template, "--seeds", "2", "--time-limit", "1", "--jobs", "2"]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout.contains("nothing was explored: no seed ran to its end"),
        "{}",
        text.stdout
    );
}

#[test]
fn a_waiter_whose_subscription_closes_does_not_retry_without_time_passing() {
    // Redisson's model waits on the unlock channel between attempts and retries forever; on seed
    // 12 of the bounded profile its master crashes for good while a client waits. The closed
    // subscription once ended every wait at once: the run never ended (nor let time pass).
    let out = run(&[
        "explore",
        "scenarios/libraries/redisson-rlock.toml",
        "--bounded",
        "--seed-range",
        "10..14",
        "--jobs",
        "2",
        "--json",
    ]);
    assert!(out.code == 0 || out.code == 1, "{}{}", out.stdout, out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("one JSON document");
    assert_eq!(doc["summary"]["seeds_run"], 4, "{}", out.stdout);
    assert_eq!(doc["summary"]["errors"], 0, "{}", out.stdout);
}
