//! Issue 40, items 5–7: extreme clock and time values (refused at their field, or run: never a
//! panic), gates that were green over a hidden failure or over nothing (`merge` of duplicate or
//! check-less rows, explorations in which no seed ever got the lock), and a time bound on
//! `lockstep mutants`. Runs of the binary are under the memory limit of
//! `common::lockstep_limited` (a panic, an abort or a hang fails).

use crate::common;
use crate::hostile_limits::run_limited;

use common::TempPath;
use lockstep::scenario::Scenario;
use std::path::Path;
use std::time::Duration;

/// The parts of a scenario the table below fills in, one field at a time.
#[derive(Default, Clone)]
struct Parts {
    top: String,
    network: String,
    topology: String,
    /// The body of one `[[topology.master]]` (then `masters = N` is not written).
    master: Option<String>,
    algorithm: &'static str,
    /// `lock.ttl_ms` (default 500).
    ttl_ms: Option<String>,
    lock: String,
    workload: String,
    /// The body of `[[client]]` `client-1` (a second client `client-2` is always there).
    client: Option<String>,
    fault: Option<String>,
    explore: Option<String>,
}

impl Parts {
    fn text(&self) -> String {
        let mut out = format!(
            "name = \"extreme\"\ndescription = \"an extreme value\"\nseed = 3\nduration_ms = 2000\n{}\n",
            self.top
        );
        out.push_str(&format!("[network]\n{}\n", self.network));
        out.push_str(&format!("[topology]\n{}\n", self.topology));
        if let Some(master) = &self.master {
            out.push_str(&format!("[[topology.master]]\nname = \"redis-1\"\n{master}\n"));
        }
        out.push_str(&format!(
            "[lock]\nalgorithm = \"{}\"\nttl_ms = {}\n{}\n",
            if self.algorithm.is_empty() {
                "token-release"
            } else {
                self.algorithm
            },
            self.ttl_ms.as_deref().unwrap_or("500"),
            self.lock
        ));
        // The workload's defaults here, unless the case writes the key (or excludes it).
        out.push_str("[workload]\n");
        if !self.workload.contains("work_ms") && !self.workload.contains("until-validity") {
            out.push_str("work_ms = 50\n");
        }
        if !self.workload.contains("until_ms") && !self.workload.contains("iterations") {
            out.push_str("until_ms = 1500\n");
        }
        out.push_str(&format!("{}\n", self.workload));
        if let Some(client) = &self.client {
            out.push_str(&format!(
                "[[client]]\nname = \"client-1\"\n{client}\n[[client]]\nname = \"client-2\"\n"
            ));
        }
        if let Some(fault) = &self.fault {
            out.push_str(&format!("[[fault]]\n{fault}\n"));
        }
        if let Some(explore) = &self.explore {
            out.push_str(&format!("[explore]\n{explore}\n"));
        }
        out
    }
}

/// One numeric field of a scenario: its dotted name, and the scenario with `value` written there.
type Case = (&'static str, Box<dyn Fn(&str) -> Parts>);

fn with(f: impl Fn(&mut Parts, &str) + 'static) -> Box<dyn Fn(&str) -> Parts> {
    Box::new(move |v| {
        let mut p = Parts::default();
        f(&mut p, v);
        p
    })
}

/// Every numeric field of a scenario file.
fn numeric_fields() -> Vec<Case> {
    let top = |key: &'static str| with(move |p, v| p.top = format!("{key} = {v}"));
    let net = |key: &'static str| with(move |p, v| p.network = format!("{key} = {v}"));
    let topo = |key: &'static str| {
        with(move |p, v| {
            p.topology = format!("replicas = 1\n{key} = {v}");
        })
    };
    let master = |key: &'static str| with(move |p, v| p.master = Some(format!("{key} = {v}")));
    let lock = |algorithm: &'static str, key: &'static str| {
        with(move |p, v| {
            p.algorithm = algorithm;
            p.lock = format!("{key} = {v}");
        })
    };
    let work = |key: &'static str| with(move |p, v| p.workload = format!("{key} = {v}"));
    let client = |key: &'static str| with(move |p, v| p.client = Some(format!("{key} = {v}")));
    let fault = |body: &'static str| with(move |p, v| p.fault = Some(body.replace("VALUE", v)));
    let explore = |key: &'static str| with(move |p, v| p.explore = Some(format!("{key} = {v}")));
    vec![
        ("seed", top("seed")),
        ("duration_ms", top("duration_ms")),
        ("tick_ms", top("tick_ms")),
        ("history_events_max", top("history_events_max")),
        ("history_bytes_max", top("history_bytes_max")),
        ("network.min_latency_ms", net("min_latency_ms")),
        ("network.max_latency_ms", net("max_latency_ms")),
        ("topology.masters", with(|p, v| p.topology = format!("masters = {v}"))),
        ("topology.clients", with(|p, v| p.topology = format!("clients = {v}"))),
        ("topology.restart_delay_ms", topo("restart_delay_ms")),
        ("topology.replicas", with(|p, v| p.topology = format!("replicas = {v}"))),
        ("topology.replica_offset_ms", topo("replica_offset_ms")),
        ("topology.replication_lag_ms", topo("replication_lag_ms")),
        ("topology.failover_after_ms", topo("failover_after_ms")),
        ("topology.master.offset_ms", master("offset_ms")),
        ("topology.master.drift_ppm", master("drift_ppm")),
        (
            "topology.master.offset_ms+drift_ppm",
            with(|p, v| p.master = Some(format!("offset_ms = {v}\ndrift_ppm = {v}"))),
        ),
        ("lock.ttl_ms", with(|p, v| p.ttl_ms = Some(v.to_string()))),
        ("lock.request_timeout_ms", lock("token-release", "request_timeout_ms")),
        ("lock.connect_timeout_ms", lock("token-release", "connect_timeout_ms")),
        ("lock.retry_count", lock("redlock", "retry_count")),
        ("lock.retry_delay_ms", lock("redlock", "retry_delay_ms")),
        ("lock.retry_jitter_ms", lock("redlock", "retry_jitter_ms")),
        ("lock.drift_factor", lock("redlock", "drift_factor")),
        ("lock.extend_every_ms", lock("watchdog", "extend_every_ms")),
        (
            "lock.extension_threshold_ms",
            with(|p, v| {
                p.algorithm = "redlock";
                p.lock = format!("auto_extend = true\nextension_threshold_ms = {v}");
            }),
        ),
        ("lock.masters (script)", lock("script", "masters")),
        ("lock.quorum (script)", lock("script", "quorum")),
        ("lock.tasks (script)", lock("script", "tasks")),
        ("lock.retry_count (script)", lock("script", "retry_count")),
        ("lock.retry_delay_ms (script)", lock("script", "retry_delay_ms")),
        ("lock.retry_jitter_ms (script)", lock("script", "retry_jitter_ms")),
        (
            "lock.release.retries (script)",
            with(|p, v| {
                p.algorithm = "script";
                p.lock = format!("[lock.release]\ncommand = [\"DEL\", \"{{key}}\"]\nretries = {v}");
            }),
        ),
        (
            "lock.release.retry_delay_ms (script)",
            with(|p, v| {
                p.algorithm = "script";
                p.lock = format!("[lock.release]\ncommand = [\"DEL\", \"{{key}}\"]\nretries = 2\nretry_delay_ms = {v}");
            }),
        ),
        ("workload.iterations", work("iterations")),
        ("workload.until_ms", work("until_ms")),
        ("workload.work_ms", work("work_ms")),
        ("workload.work_ms (pair)", with(|p, v| p.workload = format!("work_ms = [0, {v}]"))),
        ("workload.acquire_retry_ms", work("acquire_retry_ms")),
        ("workload.think_ms", work("think_ms")),
        ("workload.resource_timeout_ms", work("resource_timeout_ms")),
        (
            "workload.validity_margin_ms",
            with(|p, v| p.workload = format!("work = \"until-validity\"\nvalidity_margin_ms = {v}")),
        ),
        ("workload.reads_per_turn", work("reads_per_turn")),
        ("workload.writes_per_turn", work("writes_per_turn")),
        ("workload.tasks", work("tasks")),
        ("client.start_ms", client("start_ms")),
        ("client.offset_ms", client("offset_ms")),
        ("client.drift_ppm", client("drift_ppm")),
        ("client.iterations", client("iterations")),
        ("client.work_ms", client("work_ms")),
        ("client.tasks", client("tasks")),
        ("fault.at_ms", fault("at_ms = VALUE\nkind = \"pause\"\nnode = \"client-1\"\nduration_ms = 10")),
        ("fault.pause.duration_ms", fault("at_ms = 100\nkind = \"pause\"\nnode = \"client-1\"\nduration_ms = VALUE")),
        ("fault.clock-jump.delta_ms", fault("at_ms = 100\nkind = \"clock-jump\"\nnode = \"redis-1\"\ndelta_ms = VALUE")),
        ("fault.drift.drift_ppm", fault("at_ms = 100\nkind = \"drift\"\nnode = \"redis-1\"\ndrift_ppm = VALUE")),
        (
            "fault.latency.latency_ms",
            fault("at_ms = 100\nkind = \"latency\"\na = \"client-1\"\nb = \"redis-1\"\nlatency_ms = VALUE"),
        ),
        (
            "fault.latency.max_latency_ms",
            fault("at_ms = 100\nkind = \"latency\"\na = \"client-1\"\nb = \"redis-1\"\nlatency_ms = 1\nmax_latency_ms = VALUE"),
        ),
        ("fault.loss.rate_ppm", fault("at_ms = 100\nkind = \"loss\"\na = \"client-1\"\nb = \"redis-1\"\nrate_ppm = VALUE")),
        ("fault.drop-reply.count", fault("at_ms = 100\nkind = \"drop-reply\"\nnode = \"redis-1\"\ncount = VALUE")),
        ("explore.seeds", explore("seeds")),
        ("explore.faults_max", explore("faults_max")),
    ]
}

/// The values every numeric field is tried with: the integer extremes TOML can write (u64::MAX
/// is not a TOML integer: refused by the parser), the largest clock values a file may ask for,
/// and what a float field may be.
const EXTREMES: [&str; 10] = [
    "-9223372036854775808",
    "-9223372036854775807",
    "-1",
    "0",
    "9223372036854775807",
    "18446744073709551615",
    "3155760000000",
    "-3155760000000",
    "1000000000",
    "inf",
];

/// Parses `text`; when it loads, runs it (the `[explore]` block is not run: its template is
/// the same scenario). `Err`: a panic, with the field and the value.
fn refused_or_runs(field: &str, value: &str, text: &str) -> Result<&'static str, String> {
    let outcome = std::panic::catch_unwind(|| match Scenario::from_str(text, "extreme.toml") {
        Err(e) => {
            let message = e.to_string();
            // Refused at its position: `extreme.toml:LINE:COL: ...`.
            assert!(message.starts_with("extreme.toml:"), "{message}");
            "refused"
        }
        Ok(scenario) => match lockstep::run::run_scenario(&scenario, None) {
            Ok(_) => "ran",
            Err(_) => "world error",
        },
    });
    outcome.map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("{field} = {value}: panicked: {message}")
    })
}

#[test]
fn every_numeric_field_at_its_extremes_is_refused_with_a_message_or_runs_never_a_panic() {
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for (field, case) in numeric_fields() {
        for value in EXTREMES {
            let text = case(value).text();
            match refused_or_runs(field, value, &text) {
                Ok(outcome) => *counts.entry(outcome).or_insert(0) += 1,
                Err(failure) => failures.push(failure),
            }
        }
    }
    eprintln!("extreme values: {counts:?}");
    assert!(
        failures.is_empty(),
        "{} panics:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_master_with_offset_and_drift_at_i64_max_is_refused_at_its_field_with_the_range() {
    let dir = TempPath::dir("gates-more", "clock-extremes");
    let text = Parts {
        master: Some("offset_ms = 9223372036854775807\ndrift_ppm = 9223372036854775807".into()),
        ..Parts::default()
    }
    .text();
    let file = dir.join("extreme.toml");
    std::fs::write(&file, &text).unwrap();
    let file = file.display().to_string();
    let r = run_limited(&["run", &file], 60);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("field `topology.master[0].drift_ppm`") && r.stderr.contains("at most 1000000000"),
        "{}",
        r.stderr
    );
    // The offset alone: its own field and range.
    let text = text.replace("drift_ppm = 9223372036854775807", "drift_ppm = 0");
    std::fs::write(&file, &text).unwrap();
    let r = run_limited(&["run", &file], 60);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("field `topology.master[0].offset_ms`")
            && r.stderr.contains("between -3155760000000 and 3155760000000"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_harness_api_with_extreme_clocks_runs_or_refuses_never_panics() {
    // Around validation: a Rust caller builds the scenario itself. The world refuses an
    // out-of-range drift (`WorldError`); offsets and jumps past any range saturate.
    let base = Scenario::from_str(&Parts::default().text(), "api.toml").unwrap();
    for (offset_ms, drift_ppm) in [
        (i64::MAX, i64::MAX),
        (i64::MIN, i64::MAX),
        (i64::MAX, 0),
        (i64::MIN, 1_000_000_000),
        (i64::MAX, -999_999),
    ] {
        let mut scenario = base.clone();
        scenario.masters[0].offset_ms = offset_ms;
        scenario.masters[0].drift_ppm = drift_ppm;
        scenario.clients[0].offset_ms = offset_ms;
        scenario.clients[0].drift_ppm = drift_ppm;
        let outcome = std::panic::catch_unwind(|| lockstep::run::run_scenario(&scenario, None).map(|_| ()));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => assert!(e.to_string().contains("drift_ppm"), "{offset_ms} {drift_ppm}: {e}"),
            Err(_) => panic!("offset {offset_ms} drift {drift_ppm}: the run panicked"),
        }
    }
}

/// A token-release scenario `name` in `dir`; `safe` expects every checker to hold (it does),
/// otherwise it expects a mutual-exclusion violation that never comes (the row fails).
fn gate_scenario(dir: &Path, name: &str, safe: bool) -> String {
    let mutual_exclusion = if safe { "valid" } else { "invalid" };
    let text = format!(
        r#"name = "{name}"
description = "a merge case"
seed = 1
duration_ms = 3000

[topology]
masters = 1
clients = 2

[lock]
algorithm = "token-release"
ttl_ms = 2000

[workload]
iterations = 1
work_ms = 50

[expect]
mutual-exclusion = "{mutual_exclusion}"
stale-write = "valid"
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// `lockstep ci FILES --shard K/2` for K = 1, 2: each shard's `report.json`, parsed.
fn two_shards(dir: &Path, files: &[&str]) -> Vec<serde_json::Value> {
    (1..=2)
        .map(|k| {
            let out = dir.join(format!("shard-{k}"));
            let mut args = vec!["ci"];
            args.extend(files);
            let shard = format!("{k}/2");
            let out_s = out.display().to_string();
            args.extend(["--report", &out_s, "--shard", &shard, "-q"]);
            let r = run_limited(&args, 300);
            assert!(r.code == 0 || r.code == 1, "{}{}", r.stdout, r.stderr);
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
        })
        .collect()
}

/// Writes `report` as `dir/name` and returns its path.
fn write_json(dir: &Path, name: &str, report: &serde_json::Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(report).unwrap()).unwrap();
    path.display().to_string()
}

#[test]
fn a_scenario_in_two_shard_reports_is_refused_naming_both_files_and_it() {
    let dir = TempPath::dir("gates-more", "merge-duplicate");
    let failing = gate_scenario(&dir, "fails", false);
    let passing = gate_scenario(&dir, "passes", true);
    // Files are dealt round-robin: `fails` runs in shard 1, `passes` in shard 2.
    let shards = two_shards(&dir, &[&failing, &passing]);
    let fails_row = shards[0]["scenarios"][0].clone();
    assert_eq!(fails_row["name"], "fails");
    assert_eq!(fails_row["status"], "fail", "{fails_row}");
    // Shard 2 with an extra, passing copy of `fails` (same run, same history digest).
    let mut masking = shards[1].clone();
    // The copy expects what its checkers found: a row consistent in itself, which passes.
    let mut copy = fails_row.clone();
    copy["status"] = "pass".into();
    for check in copy["checks"].as_array_mut().unwrap() {
        check["expected"] = check["verdict"].clone();
        check["status"] = "pass".into();
    }
    masking["scenarios"].as_array_mut().unwrap().push(copy);
    let one = write_json(&dir, "one.json", &shards[0]);
    let two = write_json(&dir, "two.json", &masking);
    for order in [[&two, &one], [&one, &two]] {
        let out = dir.join(format!("merged-{}", order[0].len() % 7));
        let r = run_limited(&["merge", order[0], order[1], "--report", out.to_str().unwrap()], 120);
        // Either order: refused as bad input, naming both files and the scenario.
        assert_eq!(r.code, 2, "{order:?}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains("one.json") && r.stderr.contains("two.json") && r.stderr.contains("`fails`"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn a_shard_row_without_checks_merges_to_a_failure_not_a_pass() {
    let dir = TempPath::dir("gates-more", "merge-no-checks");
    let first = gate_scenario(&dir, "first", true);
    let second = gate_scenario(&dir, "second", true);
    let shards = two_shards(&dir, &[&first, &second]);
    let mut emptied = shards[1].clone();
    emptied["scenarios"][0]["checks"] = serde_json::json!([]);
    emptied["scenarios"][0]["status"] = "pass".into();
    // The totals made to agree with the rows, as a careful hand would: totals that do not are
    // refused on their own (issue 48).
    recount_totals(&mut emptied);
    let one = write_json(&dir, "one.json", &shards[0]);
    let two = write_json(&dir, "two.json", &emptied);
    let out = dir.join("merged");
    let r = run_limited(&["merge", &one, &two, "--report", out.to_str().unwrap()], 120);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("vacuous"), "{}", r.stdout);
    // Untouched, the same shards merge to a pass.
    let two = write_json(&dir, "two.json", &shards[1]);
    let out = dir.join("merged-whole");
    let r = run_limited(&["merge", &one, &two, "--report", out.to_str().unwrap()], 120);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

/// Sets `report`'s `totals` to what its rows add up to (`Report::counted_totals`).
fn recount_totals(report: &mut serde_json::Value) {
    let mut totals = serde_json::json!({"checks": 0, "passed": 0, "failed": 0, "unchecked": 0});
    for rows in ["scenarios", "explorations"] {
        let rows = report[rows].as_array().cloned().unwrap_or_default();
        for check in rows
            .iter()
            .flat_map(|r| r["checks"].as_array().cloned().unwrap_or_default())
        {
            let key = match check["status"].as_str() {
                Some("pass") => "passed",
                Some("fail" | "error") => "failed",
                _ => "unchecked",
            };
            for k in ["checks", key] {
                totals[k] = (totals[k].as_u64().unwrap() + 1).into();
            }
        }
    }
    for k in ["checks", "passed", "failed", "unchecked"] {
        report["totals"][k] = totals[k].clone();
    }
}

/// A script lock whose acquire never succeeds (the script answers 0), its single run expected
/// vacuous (`progress = "invalid"`), and an `[explore]` block expecting no violation.
fn never_grants(dir: &Path) -> String {
    let text = r#"name = "never-grants"
description = "a lock that never grants"
seed = 1
duration_ms = 2000

[topology]
masters = 1
clients = 2

[lock]
algorithm = "script"
ttl_ms = 1000

[lock.acquire]
lua = "return 0"

[workload]
until_ms = 1500
work_ms = 50

[expect]
progress = "invalid"

[explore]
seeds = 4
kinds = ["pause"]

[explore.expect]
mutual-exclusion = "none-invalid"
"#;
    let path = dir.join("never-grants.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn an_exploration_in_which_no_seed_ever_gets_the_lock_is_vacuous_not_a_pass() {
    let dir = TempPath::dir("gates-more", "explore-vacuous");
    let template = never_grants(&dir);
    let r = run_limited(&["explore", &template, "--seeds", "4", "--jobs", "2"], 300);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("violating: 0"), "{}", r.stdout);
    assert!(
        r.stdout.contains("vacuous: no seed of 4 ever granted the lock"),
        "{}",
        r.stdout
    );
    let r = run_limited(&["explore", &template, "--seeds", "4", "--jobs", "2", "--json"], 300);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], false);
    // The gate: the single run is vacuous as it expects, the exploration is not "safe as expected".
    let out = dir.join("report");
    let r = run_limited(&["ci", &template, "--report", out.to_str().unwrap()], 300);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("UNEXPECTED exploration never-grants: vacuous: no seed of 4 ever granted the lock"),
        "{}",
        r.stdout
    );
}

/// A catalogue in `dir`: the fenced-script parent, and a mutant whose acquire script spins on
/// every attempt, just inside the instruction budget (a script the budget stops stops its lock:
/// see the test below), so that each seed takes minutes.
fn spinning_catalogue(dir: &Path) -> String {
    let parent = Path::new(env!("CARGO_MANIFEST_DIR")).join("mutants/parents/fenced-script.toml");
    std::fs::create_dir_all(dir.join("parents")).unwrap();
    std::fs::copy(parent, dir.join("parents/fenced-script.toml")).unwrap();
    let text = r#"[[parent]]
name = "fenced-script"
file = "parents/fenced-script.toml"
kinds = ["latency", "pause"]
latency_ms_max = 700

[[mutant]]
name = "spins"
parent = "fenced-script"
breaks = "the acquire script spins (just inside the instruction budget) on every attempt"
source = "issue 40"
lock = { acquire = { lua = "for i = 1, 30000000 do end return 0", keys = ["{key}", "lockstep:fence:{key}"], args = ["{value}", "{ttl_ms}"], success = "token" } }
"#;
    let path = dir.join("catalogue.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn mutants_has_a_time_limit_and_a_runaway_mutant_is_reported_timed_out() {
    let dir = TempPath::dir("gates-more", "mutants-time");
    let catalogue = spinning_catalogue(&dir);
    let started = std::time::Instant::now();
    let r = run_limited(
        &[
            "mutants",
            "--catalogue",
            &catalogue,
            "--seeds",
            "3",
            "--time-limit",
            "5",
            "--jobs",
            "2",
        ],
        120,
    );
    let took = started.elapsed().as_secs_f64();
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("timed out"), "{}", r.stdout);
    assert!(r.stdout.contains("--time-limit of 5 s"), "{}", r.stdout);
    assert!(took < 60.0, "took {took:.1} s");
    // Without a suite limit, the per-seed bound reports it too.
    let r = run_limited(
        &[
            "mutants",
            "--catalogue",
            &catalogue,
            "--seeds",
            "3",
            "--seed-time-limit",
            "3",
            "--jobs",
            "2",
        ],
        120,
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("timed out at seed 0") && r.stdout.contains("bound of 3 s"),
        "{}",
        r.stdout
    );
    let r = run_limited(&["mutants", "--catalogue", &catalogue, "--time-limit", "0"], 60);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--time-limit 0"), "{}", r.stderr);
}

/// A script-lock scenario whose acquire script is `lua`, retried every 100 ms for 50 s.
fn costly_acquire(dir: &Path, name: &str, lua: &str) -> String {
    let text = format!(
        r#"name = "{name}"
description = "an acquire script that costs megabytes on every attempt"
seed = 1
duration_ms = 60000

[topology]
masters = 1
clients = 2

[lock]
algorithm = "script"
ttl_ms = 1000
request_timeout_ms = 2000

[lock.acquire]
lua = '{lua}'

[workload]
until_ms = 50000
work_ms = 50
acquire_retry_ms = 100
"#
    );
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    file.display().to_string()
}

#[test]
fn a_lock_script_costing_megabytes_on_every_attempt_is_bounded_not_a_hang() {
    // An acquire asking for 60 MB each time (past the server's Lua memory: an error after
    // allocating up to it) ran past 300 s, every retry paying again; one answering 20 MB sends
    // it, and the client reads it, on every retry. Either stops the lock, naming the cause.
    let dir = TempPath::dir("gates-more", "costly-acquire");
    for (name, lua, cause) in [
        (
            // Past the Lua memory cap of a script (64 MiB): the server's own bound.
            "eighty-mb",
            "return string.rep(\"x\", 80000000)",
            "ran into the simulated server's bound (ERR not enough memory",
        ),
        (
            "twenty-mb",
            "return string.rep(\"x\", 20000000)",
            "the replies to this client's lock commands carried",
        ),
    ] {
        let file = costly_acquire(&dir, name, lua);
        let history = dir.join(format!("{name}.jsonl"));
        let r = run_limited(&["run", &file, "--history", history.to_str().unwrap()], 240);
        // Nobody got the lock: a vacuous run, a failure (never a pass, never a hang).
        assert_eq!(r.code, 1, "{name}: {}{}", r.stdout, r.stderr);
        assert!(r.elapsed < Duration::from_secs(120), "{name}: took {:?}", r.elapsed);
        let events = std::fs::read_to_string(&history).unwrap();
        assert!(events.contains(cause), "{name}: the cause is in the history");
    }
}
