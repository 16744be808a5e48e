use super::*;
use crate::model::{Verdict, DEFAULT_KINDS, GENERATED_KINDS, OPT_IN_KINDS};
use lockstep_sim::{Fault, FencingMode, ScheduledFault};

/// Every key of the format, none at its default.
const FULL: &str = r#"
name = "full-example"
description = """
Every key written out.
With "quotes" and a second line."""
seed = 7
duration_ms = 40000
tick_ms = 2

[network]
min_latency_ms = 2
max_latency_ms = 9

[topology]
resource = "strict"

[[topology.master]]
name = "redis-a"
offset_ms = -250
drift_ppm = 100

[[topology.master]]
name = "redis-b"

[lock]
algorithm = "redlock"
key = "the-lock"
ttl_ms = 9000
fencing = "incr"
fencing_master = "redis-b"
request_timeout_ms = 60
connect_timeout_ms = 120
retry_count = -1
retry_delay_ms = 150
retry_jitter_ms = 50
drift_factor = 0.02
clock = "wall"
extend_every_ms = 1000
auto_extend = true
extension_threshold_ms = 700

[workload]
key = "ctr"
iterations = 3
until_ms = 30000
work_ms = [100, 2000]
acquire_retry_ms = 25
think_ms = 10
resource_timeout_ms = 90000

[[client]]
name = "alice"
start_ms = 5
offset_ms = 1000
drift_ppm = -50
iterations = 1
work_ms = 2000

[[client]]
name = "bob"

[[fault]]
at_ms = 1000
kind = "pause"
node = "alice"
duration_ms = 15000

[[fault]]
at_ms = 2000
kind = "partition"
a = "bob"
b = "redis-a"
oneway = true

[expect]
mutual-exclusion = "invalid"
stale-write = "valid"
token-order = "unknown"
"#;

/// The smallest valid file.
const MINIMAL: &str = r#"
name = "minimal"
description = "defaults everywhere"
[lock]
algorithm = "watchdog"
"#;

fn parse(source: &str) -> Scenario {
    match Scenario::from_str(source, "test.toml") {
        Ok(s) => s,
        Err(e) => panic!("unexpected error: {e}\n{source}"),
    }
}

fn parse_err(source: &str) -> ScenarioError {
    match Scenario::from_str(source, "test.toml") {
        Ok(s) => panic!("expected an error, parsed {s:?}\n{source}"),
        Err(e) => e,
    }
}

/// `MINIMAL` plus `extra` lines (which may open tables).
fn with(extra: &str) -> String {
    format!("{MINIMAL}{extra}")
}

/// Asserts the error's field and line (1-based, counting the source's own lines).
#[track_caller]
fn assert_at(err: &ScenarioError, field: &str, line: usize) {
    assert_eq!(err.field.as_deref(), Some(field), "field of: {err}");
    assert_eq!(err.line, Some(line), "line of: {err}");
    assert!(err.column.is_some(), "column of: {err}");
    assert_eq!(err.path, "test.toml");
}

/// The 1-based line of the first line of `source` that starts with `prefix`.
fn line_of(source: &str, prefix: &str) -> usize {
    source
        .lines()
        .position(|l| l.trim_start().starts_with(prefix))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("no line starts with {prefix:?}"))
}

#[test]
fn full_example_parses_every_key() {
    let s = parse(FULL);
    assert_eq!(s.name, "full-example");
    assert!(s.description.contains("\"quotes\""));
    assert_eq!((s.seed, s.duration_ms, s.tick_ms), (7, 40_000, 2));
    assert_eq!(
        s.network,
        NetworkSpec {
            min_latency_ms: 2,
            max_latency_ms: 9
        }
    );
    assert_eq!(
        s.masters,
        vec![
            NodeSpec {
                name: "redis-a".into(),
                offset_ms: -250,
                drift_ppm: 100
            },
            NodeSpec {
                name: "redis-b".into(),
                offset_ms: 0,
                drift_ppm: 0
            },
        ]
    );
    assert_eq!(s.resource, FencingMode::Strict);
    let l = &s.lock;
    assert_eq!(l.kind(), Algorithm::Redlock);
    assert_eq!(l.key, "the-lock");
    assert_eq!(l.ttl_ms, 9000);
    assert_eq!(l.fencing, Fencing::Incr);
    assert_eq!(l.fencing_master, "redis-b");
    assert_eq!((l.request_timeout_ms, l.connect_timeout_ms), (60, 120));
    let r = l.redlock().expect("redlock settings");
    assert_eq!((r.retry_count, r.retry_delay_ms, r.retry_jitter_ms), (-1, 150, 50));
    assert_eq!(r.drift_factor, 0.02);
    assert_eq!(r.clock, ClockKind::Wall);
    assert!(r.auto_extend);
    assert_eq!(r.extension_threshold_ms, 700);
    // The watchdog's period is checked for every algorithm but kept only by the watchdog.
    assert_eq!(l.watchdog(), None);
    let as_watchdog = parse(&FULL.replace("\"redlock\"", "\"watchdog\""));
    assert_eq!(
        as_watchdog.lock.algorithm,
        AlgorithmSpec::Watchdog(WatchdogSpec { extend_every_ms: 1000 })
    );
    assert_eq!(
        s.workload,
        WorkloadSpec {
            key: "ctr".into(),
            iterations: Some(3),
            until_ms: Some(30_000),
            work_ms: WorkMs::Range(100, 2000),
            acquire_retry_ms: 25,
            think_ms: 10,
            resource_timeout_ms: 90_000,
            ..WorkloadSpec::defaults()
        }
    );
    assert_eq!(
        s.clients[0],
        ClientSpec {
            name: "alice".into(),
            start_ms: 5,
            offset_ms: 1000,
            drift_ppm: -50,
            iterations: Some(1),
            work_ms: Some(WorkMs::Fixed(2000)),
            tasks: None,
        }
    );
    assert_eq!(s.clients[1], ClientSpec::named("bob"));
    assert_eq!(s.clients[1].effective_iterations(&s.workload), Some(3));
    assert_eq!(s.clients[1].effective_work_ms(&s.workload), WorkMs::Range(100, 2000));
    assert_eq!(s.clients[0].effective_work_ms(&s.workload), WorkMs::Fixed(2000));
    assert_eq!(
        s.faults.faults,
        vec![
            ScheduledFault {
                at_ms: 1000,
                fault: Fault::Pause {
                    node: "alice".into(),
                    duration_ms: 15_000
                }
            },
            ScheduledFault {
                at_ms: 2000,
                fault: Fault::Partition {
                    a: "bob".into(),
                    b: "redis-a".into(),
                    oneway: true
                }
            },
        ]
    );
    // The three named, and spurious-loss: expected valid unless a file that states expectations
    // names it.
    assert_eq!(s.expect.len(), 4);
    assert_eq!(s.expected("spurious-loss"), Some(Verdict::Valid));
    assert_eq!(s.expected("mutual-exclusion"), Some(Verdict::Invalid));
    assert_eq!(s.expected("stale-write"), Some(Verdict::Valid));
    assert_eq!(s.expected("token-order"), Some(Verdict::Unknown));
    assert_eq!(s.expected("lost-update"), None);
}

#[test]
fn minimal_file_resolves_every_default() {
    let s = parse(MINIMAL);
    assert_eq!((s.seed, s.duration_ms, s.tick_ms), (0, 60_000, 1));
    assert_eq!(s.network, NetworkSpec::default());
    assert_eq!(s.network.min_latency_ms, 1);
    assert_eq!(s.network.max_latency_ms, 5);
    assert_eq!(
        s.masters,
        vec![NodeSpec {
            name: "redis-1".into(),
            offset_ms: 0,
            drift_ppm: 0
        }]
    );
    assert_eq!(s.resource, FencingMode::Unfenced);
    let l = &s.lock;
    assert_eq!(l.kind(), Algorithm::Watchdog);
    assert_eq!(l.key, "lock");
    assert_eq!(l.ttl_ms, 10_000);
    assert_eq!(l.fencing, Fencing::None);
    assert_eq!(l.fencing_master, "redis-1");
    assert_eq!((l.request_timeout_ms, l.connect_timeout_ms), (50, 100));
    assert_eq!(l.watchdog().map(|w| w.extend_every_ms), Some(3333));
    assert_eq!(l.redlock(), None);
    let as_redlock = parse(&MINIMAL.replace("\"watchdog\"", "\"redlock\""));
    let r = as_redlock.lock.redlock().expect("redlock settings");
    assert_eq!(*r, RedlockSpec::default());
    assert_eq!((r.retry_count, r.retry_delay_ms, r.retry_jitter_ms), (10, 200, 100));
    assert_eq!(r.drift_factor, 0.01);
    assert_eq!(r.clock, ClockKind::Monotonic);
    assert!(!r.auto_extend);
    assert_eq!(r.extension_threshold_ms, 500);
    assert_eq!(
        s.workload,
        WorkloadSpec {
            key: "counter".into(),
            iterations: Some(1),
            until_ms: None,
            work_ms: WorkMs::Fixed(100),
            acquire_retry_ms: 100,
            think_ms: 0,
            resource_timeout_ms: 50,
            work: crate::model::WorkMode::Fixed,
            refuse_write_after_validity: false,
            reads_per_turn: 1,
            writes_per_turn: 1,
            tasks: None,
        }
    );
    assert_eq!(s.workload, WorkloadSpec::defaults());
    assert_eq!(
        s.clients,
        vec![ClientSpec::named("client-1"), ClientSpec::named("client-2")]
    );
    assert!(s.faults.faults.is_empty());
    assert!(s.expect.is_empty());
}

#[test]
fn generated_topology_and_iteration_defaults() {
    let s = parse(&with(
        "[topology]\nmasters = 3\nclients = 4\nresource = \"fenced\"\n[workload]\nuntil_ms = 5000\n",
    ));
    let names: Vec<&str> = s.masters.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["redis-1", "redis-2", "redis-3"]);
    assert_eq!(s.clients.len(), 4);
    assert_eq!(s.clients[3].name, "client-4");
    assert_eq!(s.resource, FencingMode::Fenced);
    assert_eq!(s.workload.iterations, None, "unlimited when until_ms is set");
    assert_eq!(s.clients[0].effective_iterations(&s.workload), None);
    // Explicit clients win over topology.clients.
    let s = parse(&with("[topology]\nclients = 5\n[[client]]\nname = \"solo\"\n"));
    assert_eq!(s.clients, vec![ClientSpec::named("solo")]);
}

#[test]
fn node_names_and_world_config() {
    let s = parse(FULL);
    assert_eq!(s.node_names(), ["redis-a", "redis-b", "resource", "alice", "bob"]);
    let w = s.world_config();
    assert_eq!((w.seed, w.tick_ms, w.duration_ms), (7, 2, 40_000));
    assert_eq!((w.min_latency_ms, w.max_latency_ms), (2, 9));
    let d = lockstep_sim::WorldConfig::default();
    assert_eq!(
        (w.epoch_ms, w.lua_instruction_budget),
        (d.epoch_ms, d.lua_instruction_budget)
    );
    assert_eq!(s.masters[0].clock().offset_ms, -250);
    assert_eq!(s.clients[0].clock().drift_ppm, -50);
}

#[test]
fn algorithm_names() {
    for &algorithm in Algorithm::ALL {
        assert_eq!(Algorithm::from_name(algorithm.name()), Some(algorithm));
        assert_eq!(algorithm.to_string(), algorithm.name());
        let s = parse(&format!(
            "name = \"a\"\ndescription = \"d\"\n[lock]\nalgorithm = \"{}\"\n",
            algorithm.name()
        ));
        assert_eq!(s.lock.kind(), algorithm);
        assert_eq!(s.lock.algorithm.name(), algorithm.name());
    }
    assert_eq!(Algorithm::from_name("paxos"), None);
    assert_eq!(Fencing::Incr.name(), "incr");
    assert_eq!(ClockKind::Wall.name(), "wall");
}

#[test]
fn every_fault_kind_parses() {
    let cases: &[(&str, &str)] = &[
        ("pause", "node = \"client-1\"\nduration_ms = 500"),
        ("clock-jump", "node = \"redis-1\"\ndelta_ms = -2000"),
        ("drift", "node = \"client-2\"\ndrift_ppm = 5000"),
        ("partition", "a = \"client-1\"\nb = \"redis-1\""),
        ("heal", "a = \"client-1\"\nb = \"redis-1\"\noneway = true"),
        ("hold", "a = \"client-1\"\nb = \"resource\""),
        ("release", "a = \"client-1\"\nb = \"resource\""),
        ("latency", "a = \"client-2\"\nb = \"redis-1\"\nlatency_ms = 40"),
        ("loss", "a = \"client-2\"\nb = \"redis-1\"\nrate_ppm = 1000000"),
        ("crash", "node = \"redis-1\""),
        ("restart", "node = \"redis-1\""),
        ("power-loss", "node = \"redis-1-replica-1\""),
        ("shutdown", "node = \"redis-1\""),
        ("failover", "node = \"redis-1\""),
        ("drop-reply", "node = \"redis-1\"\nclient = \"client-1\"\ncount = 2"),
    ];
    // A replica, so that `failover` has something to promote.
    const REPLICATED: &str = "\n[topology]\nreplicas = 1\n";
    let covered: Vec<&str> = cases.iter().map(|c| c.0).collect();
    assert_eq!(covered, Fault::KINDS, "a case per kind");
    let mut all = String::new();
    for (i, (kind, body)) in cases.iter().enumerate() {
        let block = format!("\n[[fault]]\nat_ms = {}\nkind = \"{kind}\"\n{body}\n", i * 10);
        let s = parse(&with(&format!("{REPLICATED}{block}")));
        assert_eq!(s.faults.faults.len(), 1);
        assert_eq!(s.faults.faults[0].fault.kind(), *kind);
        assert_eq!(s.faults.faults[0].at_ms, i as u64 * 10);
        all.push_str(&block);
    }
    let s = parse(&with(&format!("{REPLICATED}{all}")));
    assert_eq!(s.faults.faults.len(), Fault::KINDS.len());
    assert_eq!(
        s.faults.faults[1].fault,
        Fault::ClockJump {
            node: "redis-1".into(),
            delta_ms: -2000
        }
    );
    assert_eq!(
        s.faults.faults[3].fault,
        Fault::Partition {
            a: "client-1".into(),
            b: "redis-1".into(),
            oneway: false
        }
    );
    // And they all survive the round trip.
    assert_eq!(parse(&s.to_toml()), s);
}

#[test]
fn round_trip_full_minimal_and_odd_values() {
    for source in [FULL, MINIMAL] {
        let s = parse(source);
        let text = s.to_toml();
        let back = Scenario::from_str(&text, "written.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, s, "{text}");
        assert!(text.contains("[[topology.master]]"), "{text}");
        assert!(text.contains("[[client]]"), "{text}");
        // Writing is stable.
        assert_eq!(back.to_toml(), text);
    }
    let mut s = parse(FULL);
    s.seed = u64::MAX;
    s.description = "tab\there, backslash \\ and 'single' and \"\"\" triple\nünïcödé".into();
    s.lock.ttl_ms = 2;
    if let AlgorithmSpec::Redlock(r) = &mut s.lock.algorithm {
        r.drift_factor = 0.0;
        r.auto_extend = false;
    }
    s.workload.iterations = None;
    s.workload.work_ms = WorkMs::Fixed(0);
    s.clients[1].work_ms = Some(WorkMs::Range(5, 5));
    s.expect.clear();
    let text = s.to_toml();
    assert!(text.contains("seed = \"18446744073709551615\""), "{text}");
    assert_eq!(parse(&text), s, "{text}");
}

#[test]
fn seed_accepts_a_decimal_string_and_rejects_negatives() {
    let s = parse(&with("").replace("[lock]", "seed = \"18446744073709551615\"\n[lock]"));
    assert_eq!(s.seed, u64::MAX);
    let source = with("").replace("[lock]", "seed = -1\n[lock]");
    assert_at(&parse_err(&source), "seed", line_of(&source, "seed"));
    let source = with("").replace("[lock]", "seed = \"0x10\"\n[lock]");
    assert_at(&parse_err(&source), "seed", line_of(&source, "seed"));
}

// ---- errors: structure and types (serde) ----

#[test]
fn unknown_fields_name_the_key_and_its_line() {
    let cases: &[(&str, &str, &str)] = &[
        ("[network]\njitter_ms = 3\n", "network.jitter_ms", "jitter_ms"),
        ("[topology]\nsentinels = 2\n", "topology.sentinels", "sentinels"),
        (
            "[topology]\n[[topology.master]]\nname = \"r\"\nclock = 1\n",
            "topology.master[0].clock",
            "clock",
        ),
        ("[workload]\nworks = 1\n", "workload.works", "works"),
        (
            "[[client]]\nname = \"c\"\n[[client]]\nname = \"d\"\nstart = 1\n",
            "client[1].start",
            "start",
        ),
        (
            "[[fault]]\nat_ms = 1\nkind = \"pause\"\nnode = \"client-1\"\nduration_ms = 1\nnodes = 2\n",
            "fault[0].nodes",
            "nodes",
        ),
    ];
    for (extra, field, key) in cases {
        let source = with(extra);
        let err = parse_err(&source);
        assert_at(&err, field, line_of(&source, key));
        assert!(err.message.contains("unknown field"), "{err}");
    }
    let source = MINIMAL.replace("[lock]", "colour = 1\n[lock]");
    assert_at(&parse_err(&source), "colour", line_of(&source, "colour"));
    // In [lock], which MINIMAL opened last.
    let source = with("ttl = 5\n");
    let err = parse_err(&source);
    assert_at(&err, "lock.ttl", line_of(&source, "ttl ="));
    assert!(err.message.contains("expected one of"), "lists the known keys: {err}");
}

#[test]
fn wrong_types_name_the_value() {
    let cases: &[(&str, &str, &str)] = &[
        ("ttl_ms = \"ten\"\n", "lock.ttl_ms", "ttl_ms"),
        ("ttl_ms = -5\n", "lock.ttl_ms", "ttl_ms"),
        ("ttl_ms = 1.5\n", "lock.ttl_ms", "ttl_ms"),
        ("auto_extend = 1\n", "lock.auto_extend", "auto_extend"),
        ("algorithm2 = 1\n", "lock.algorithm2", "algorithm2"),
        ("fencing = \"tokens\"\n", "lock.fencing", "fencing"),
        ("clock = \"sundial\"\n", "lock.clock", "clock ="),
        ("[workload]\nwork_ms = \"long\"\n", "workload.work_ms", "work_ms"),
        ("[workload]\nwork_ms = [1, 2, 3]\n", "workload.work_ms", "work_ms"),
        ("[workload]\nwork_ms = [1]\n", "workload.work_ms", "work_ms"),
        ("[workload]\nwork_ms = -1\n", "workload.work_ms", "work_ms"),
        ("[topology]\nresource = \"maybe\"\n", "topology.resource", "resource"),
        ("[topology]\nmasters = \"three\"\n", "topology.masters", "masters"),
        (
            "[expect]\nmutual-exclusion = \"broken\"\n",
            "expect.mutual-exclusion",
            "mutual-exclusion",
        ),
        (
            "[expect]\nmutual-exclusion = true\n",
            "expect.mutual-exclusion",
            "mutual-exclusion",
        ),
    ];
    for (extra, field, key) in cases {
        let source = with(extra);
        let err = parse_err(&source);
        assert_at(&err, field, line_of(&source, key));
    }
    // A value inside an array: the element is named.
    let source = with("[workload]\nwork_ms = [1, \"x\"]\n");
    assert_at(&parse_err(&source), "workload.work_ms[1]", line_of(&source, "work_ms"));
    // A table where a value belongs.
    let source = "name = \"x\"\ndescription = \"d\"\nlock = 5\n";
    assert_at(&parse_err(source), "lock", 3);
}

#[test]
fn huge_numbers_are_errors_not_panics() {
    for extra in [
        "ttl_ms = 99999999999999999999999\n",
        "ttl_ms = 18446744073709551616\n",
        "retry_count = -99999999999999999999\n",
        "drift_factor = 1e999\n",
    ] {
        let source = with(extra);
        let err = parse_err(&source);
        assert_eq!(
            err.line,
            Some(line_of(&source, extra.split(' ').next().unwrap())),
            "{err}"
        );
        assert!(err.field.as_deref().unwrap_or("").starts_with("lock."), "{err}");
    }
    let source = with("[[fault]]\nat_ms = 99999999999999999999\nkind = \"crash\"\nnode = \"redis-1\"\n");
    assert_eq!(parse_err(&source).line, Some(line_of(&source, "at_ms")));
    // toml reads u64 settings in full; the TTL is bounded (one day): the largest is an error
    // naming the field, the limit parses and round-trips.
    let source = with("ttl_ms = 18446744073709551615\n");
    assert_at(&parse_err(&source), "lock.ttl_ms", line_of(&source, "ttl_ms"));
    let s = parse(&with("ttl_ms = 86400000\n"));
    assert_eq!(s.lock.ttl_ms, 86_400_000);
    assert_eq!(parse(&s.to_toml()), s);
}

#[test]
fn missing_required_fields() {
    let err = parse_err("description = \"d\"\n[lock]\nalgorithm = \"naive\"\n");
    assert_eq!(err.field.as_deref(), Some("name"));
    assert_eq!(err.line, None, "nowhere to point: {err}");
    let err = parse_err("name = \"n\"\n[lock]\nalgorithm = \"naive\"\n");
    assert_eq!(err.field.as_deref(), Some("description"));
    let err = parse_err("name = \"n\"\ndescription = \"d\"\n");
    assert_eq!(err.field.as_deref(), Some("lock.algorithm"));
    assert!(err.message.contains("token-release"), "{err}");
    // [lock] without an algorithm: the [lock] header.
    let err = parse_err("name = \"n\"\ndescription = \"d\"\n\n[lock]\nttl_ms = 5\n");
    assert_at(&err, "lock.algorithm", 4);
    let source = with("[[client]]\nname = \"a\"\n[[client]]\nstart_ms = 1\n");
    let err = parse_err(&source);
    assert_at(&err, "client[1].name", line_of(&source, "start_ms") - 1);
    let source = with("[topology]\n[[topology.master]]\noffset_ms = 1\n");
    assert_at(
        &parse_err(&source),
        "topology.master[0].name",
        line_of(&source, "[[topology"),
    );
    // A blank description.
    let source = "name = \"n\"\ndescription = \"  \"\n[lock]\nalgorithm = \"naive\"\n";
    assert_at(&parse_err(source), "description", 2);
}

#[test]
fn syntax_errors_have_a_position() {
    let err = parse_err("name = \"x\"\n[lock\nalgorithm = \"naive\"\n");
    assert_eq!(err.line, Some(2), "{err}");
    assert!(err.column.is_some());
    let err = parse_err("name = \"x\"\nname = \"y\"\n");
    assert_eq!((err.line, err.field.as_deref()), (Some(2), Some("name")), "{err}");
    let err = parse_err(&with("ttl_ms = 1\nttl_ms = 2\n"));
    assert_eq!(err.field.as_deref(), Some("lock.ttl_ms"), "{err}");
    assert!(err.message.contains("duplicate key"), "{err}");
    let err = parse_err("name = \"x\ndescription = \"d\"\n");
    assert_eq!(err.line, Some(1), "{err}");
}

// ---- errors: semantic validation ----

#[test]
fn scenario_settings_out_of_range() {
    let source = "name = \"Bad_Name\"\ndescription = \"d\"\n[lock]\nalgorithm = \"naive\"\n";
    let err = parse_err(source);
    assert_at(&err, "name", 1);
    assert!(err.message.contains("a-z, 0-9"), "{err}");
    assert_at(&parse_err("name = \"\"\ndescription = \"d\"\n"), "name", 1);
    let source = with("").replace("[lock]", "tick_ms = 0\n[lock]");
    assert_at(&parse_err(&source), "tick_ms", line_of(&source, "tick_ms"));
    let source = with("").replace("[lock]", "duration_ms = 0\n[lock]");
    assert_at(&parse_err(&source), "duration_ms", line_of(&source, "duration_ms"));
}

#[test]
fn network_latency_min_above_max() {
    let source = with("[network]\nmin_latency_ms = 10\nmax_latency_ms = 3\n");
    let err = parse_err(&source);
    assert_at(&err, "network.max_latency_ms", line_of(&source, "max_latency_ms"));
    assert!(err.message.contains("below min_latency_ms 10"), "{err}");
    // Only min written (above the default max of 5): min is the culprit.
    let source = with("[network]\nmin_latency_ms = 10\n");
    assert_at(
        &parse_err(&source),
        "network.min_latency_ms",
        line_of(&source, "min_latency_ms"),
    );
}

#[test]
fn lock_settings_out_of_range() {
    let cases: &[(&str, &str)] = &[
        ("ttl_ms = 0\n", "lock.ttl_ms"),
        ("ttl_ms = 900\nextend_every_ms = 900\n", "lock.extend_every_ms"),
        ("ttl_ms = 900\nextend_every_ms = 5000\n", "lock.extend_every_ms"),
        ("extend_every_ms = 0\n", "lock.extend_every_ms"),
        ("fencing_master = \"redis-9\"\n", "lock.fencing_master"),
        ("retry_count = -2\n", "lock.retry_count"),
        ("drift_factor = 1.0\n", "lock.drift_factor"),
        ("drift_factor = -0.1\n", "lock.drift_factor"),
        ("drift_factor = nan\n", "lock.drift_factor"),
        ("request_timeout_ms = 0\n", "lock.request_timeout_ms"),
        ("connect_timeout_ms = 0\n", "lock.connect_timeout_ms"),
        ("key = \"\"\n", "lock.key"),
        ("auto_extend = true\nttl_ms = 400\n", "lock.extension_threshold_ms"),
    ];
    for (extra, field) in cases {
        let source = with(extra);
        let err = parse_err(&source);
        let key = field.trim_start_matches("lock.");
        let line = source
            .lines()
            .position(|l| l.starts_with(&format!("{key} =")))
            .map(|i| i + 1)
            .unwrap_or_else(|| line_of(&source, "[lock]"));
        assert_at(&err, field, line);
    }
    // The error lists the masters.
    let err = parse_err(&with("fencing_master = \"redis-9\"\n"));
    assert!(err.message.contains("redis-1"), "{err}");
    // A watchdog whose default period would be 0 points at ttl_ms.
    let source = with("ttl_ms = 2\n");
    assert_at(&parse_err(&source), "lock.ttl_ms", line_of(&source, "ttl_ms"));
    // Other algorithms do not care.
    let s = parse(&with("ttl_ms = 2\n").replace("watchdog", "naive"));
    assert_eq!(s.lock.algorithm, AlgorithmSpec::Naive(crate::model::NaiveSpec {}));
}

#[test]
fn topology_errors() {
    let source = with("[topology]\nmasters = 2\n[[topology.master]]\nname = \"r1\"\n");
    let err = parse_err(&source);
    assert_at(&err, "topology.masters", line_of(&source, "masters"));
    assert!(err.message.contains("not both"), "{err}");
    let source = with("[topology]\nmasters = 0\n");
    assert_at(&parse_err(&source), "topology.masters", line_of(&source, "masters"));
    let source = with("[topology]\nmasters = 5000000000\n");
    assert_at(&parse_err(&source), "topology.masters", line_of(&source, "masters"));
    let source = with("[topology]\nclients = 0\n");
    assert_at(&parse_err(&source), "topology.clients", line_of(&source, "clients"));
    let source = with("[topology]\nmaster = []\n");
    assert_at(&parse_err(&source), "topology.master", line_of(&source, "master"));
    let source =
        with("client = []\n").replace("[lock]\nalgorithm = \"watchdog\"\n", "") + "[lock]\nalgorithm = \"naive\"\n";
    assert_at(&parse_err(&source), "client", line_of(&source, "client"));
}

#[test]
fn duplicate_and_bad_node_names() {
    let masters = "[topology]\n[[topology.master]]\nname = \"r1\"\n[[topology.master]]\nname = \"r1\"\n";
    let source = with(masters);
    let err = parse_err(&source);
    assert_at(&err, "topology.master[1].name", source.lines().count());
    assert!(err.message.contains("already a master"), "{err}");

    let source = with("[[client]]\nname = \"c\"\n[[client]]\nname = \"c\"\n");
    let err = parse_err(&source);
    assert_at(&err, "client[1].name", source.lines().count());
    assert!(err.message.contains("already a client"), "{err}");

    let source = with("[[client]]\nname = \"redis-1\"\n");
    let err = parse_err(&source);
    assert_at(&err, "client[0].name", source.lines().count());
    assert!(err.message.contains("already a master"), "{err}");

    let source = with("[[client]]\nname = \"resource\"\n");
    let err = parse_err(&source);
    assert_at(&err, "client[0].name", source.lines().count());
    assert!(err.message.contains("resource"), "{err}");

    let source = with("[[client]]\nname = \"has space\"\n");
    assert_at(&parse_err(&source), "client[0].name", source.lines().count());
    let source = with("[[client]]\nname = \"net\"\n");
    assert!(parse_err(&source).message.contains("reserved"));

    // A generated client clashing with an explicit master.
    let source = with("[topology]\nclients = 1\n[[topology.master]]\nname = \"client-1\"\n");
    let err = parse_err(&source);
    assert_at(&err, "topology.clients", line_of(&source, "clients"));
}

#[test]
fn drift_and_work_ranges() {
    let source = with("[[client]]\nname = \"c\"\ndrift_ppm = -1000000\n");
    assert_at(
        &parse_err(&source),
        "client[0].drift_ppm",
        line_of(&source, "drift_ppm"),
    );
    let source = with("[topology]\n[[topology.master]]\nname = \"r\"\ndrift_ppm = -2000000\n");
    assert_at(
        &parse_err(&source),
        "topology.master[0].drift_ppm",
        line_of(&source, "drift_ppm"),
    );
    // Just above the limit is fine.
    let s = parse(&with("[[client]]\nname = \"c\"\ndrift_ppm = -999999\n"));
    assert_eq!(s.clients[0].drift_ppm, -999_999);

    let source = with("[workload]\nwork_ms = [500, 100]\n");
    let err = parse_err(&source);
    assert_at(&err, "workload.work_ms", line_of(&source, "work_ms"));
    assert!(err.message.contains("min is above max"), "{err}");
    let source = with("[workload]\nresource_timeout_ms = 0\n");
    assert_at(
        &parse_err(&source),
        "workload.resource_timeout_ms",
        line_of(&source, "resource_timeout_ms"),
    );
    // It follows the lock's request timeout unless written.
    let s = parse(&with("request_timeout_ms = 75\n"));
    assert_eq!(s.workload.resource_timeout_ms, 75);
    let source = with("[[client]]\nname = \"c\"\nwork_ms = [3, 2]\n");
    assert_at(&parse_err(&source), "client[0].work_ms", line_of(&source, "work_ms"));
}

fn fault_err(block: &str) -> (String, ScenarioError) {
    let source = with(&format!(
        "[[fault]]\nat_ms = 1\nkind = \"crash\"\nnode = \"redis-1\"\n{block}"
    ));
    let err = parse_err(&source);
    (source, err)
}

#[test]
fn fault_errors_name_the_fault_key() {
    // Unknown node (the second fault, so fault[1]).
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"pause\"\nnode = \"ghost\"\nduration_ms = 1\n");
    assert_at(&err, "fault[1].node", line_of(&source, "node = \"ghost\""));
    assert!(err.message.contains("unknown node `ghost`"), "{err}");
    assert!(
        err.message.contains("(nodes: redis-1, resource, client-1, client-2)"),
        "lists the nodes in order: {err}"
    );
    // Unknown node on the b side of a link.
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"partition\"\na = \"client-1\"\nb = \"redis-7\"\n");
    assert_at(&err, "fault[1].b", line_of(&source, "b = "));
    // Crash of a client, restart of the resource.
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"crash\"\nnode = \"client-1\"\n");
    assert_at(&err, "fault[1].node", line_of(&source, "node = \"client-1\""));
    assert!(err.message.contains("only Redis masters"), "{err}");
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"restart\"\nnode = \"resource\"\n");
    assert_at(&err, "fault[1].node", line_of(&source, "node = \"resource\""));
    // After the end of the run.
    let (source, err) = fault_err("[[fault]]\nat_ms = 60001\nkind = \"crash\"\nnode = \"redis-1\"\n");
    assert_at(&err, "fault[1].at_ms", line_of(&source, "at_ms = 60001"));
    assert!(err.message.contains("after the end"), "{err}");
    // At the very end is fine.
    parse(&with(
        "[[fault]]\nat_ms = 60000\nkind = \"crash\"\nnode = \"redis-1\"\n",
    ));
    // A link to itself, an impossible loss rate, a stopping drift.
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"hold\"\na = \"client-1\"\nb = \"client-1\"\n");
    assert_at(&err, "fault[1].b", line_of(&source, "b = "));
    let (source, err) =
        fault_err("[[fault]]\nat_ms = 5\nkind = \"loss\"\na = \"client-1\"\nb = \"redis-1\"\nrate_ppm = 1000001\n");
    assert_at(&err, "fault[1].rate_ppm", line_of(&source, "rate_ppm"));
    let (source, err) =
        fault_err("[[fault]]\nat_ms = 5\nkind = \"drift\"\nnode = \"client-1\"\ndrift_ppm = -1000000\n");
    assert_at(&err, "fault[1].drift_ppm", line_of(&source, "drift_ppm"));
    // drop-reply (checked by the sim's own `Fault::validate`): a client cannot drop replies, the
    // `client` must be a client, at least one reply is dropped.
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"drop-reply\"\nnode = \"client-2\"\n");
    assert_at(&err, "fault[1].node", line_of(&source, "node = \"client-2\""));
    assert!(err.message.contains("only a server"), "{err}");
    let (source, err) =
        fault_err("[[fault]]\nat_ms = 5\nkind = \"drop-reply\"\nnode = \"resource\"\nclient = \"redis-1\"\n");
    assert_at(&err, "fault[1].client", line_of(&source, "client = "));
    assert!(err.message.contains("`redis-1` is a master"), "{err}");
    let (source, err) =
        fault_err("[[fault]]\nat_ms = 5\nkind = \"drop-reply\"\nnode = \"redis-1\"\nclient = \"ghost\"\n");
    assert_at(&err, "fault[1].client", line_of(&source, "client = "));
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"drop-reply\"\nnode = \"redis-1\"\ncount = 0\n");
    assert_at(&err, "fault[1].count", line_of(&source, "count = 0"));
    // A node may not take a name the world reserves.
    let source = with("").replace("[lock]", "[topology]\n[[topology.master]]\nname = \"net\"\n[lock]");
    let err = parse_err(&source);
    assert_at(&err, "topology.master[0].name", line_of(&source, "name = \"net\""));
    assert!(err.message.contains("reserved"), "{err}");
}

#[test]
fn fault_structure_errors_name_the_fault_key() {
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"nap\"\nnode = \"client-1\"\n");
    assert_at(&err, "fault[1].kind", line_of(&source, "kind = \"nap\""));
    assert!(err.message.contains("clock-jump"), "lists the kinds: {err}");
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = 3\n");
    assert_at(&err, "fault[1].kind", line_of(&source, "kind = 3"));
    // Missing keys point at the [[fault]] header.
    let (source, err) = fault_err("\n[[fault]]\nat_ms = 5\nnode = \"client-1\"\n");
    assert_at(&err, "fault[1].kind", source.lines().count() - 2);
    let (source, err) = fault_err("\n[[fault]]\nkind = \"crash\"\nnode = \"redis-1\"\n");
    assert_at(&err, "fault[1].at_ms", source.lines().count() - 2);
    let (source, err) = fault_err("\n[[fault]]\nat_ms = 5\nkind = \"pause\"\nnode = \"client-1\"\n");
    assert_at(&err, "fault[1].duration_ms", source.lines().count() - 3);
    // Mistyped values point at the value's key.
    let (source, err) =
        fault_err("[[fault]]\nat_ms = 5\nkind = \"pause\"\nnode = \"client-1\"\nduration_ms = \"long\"\n");
    assert_at(&err, "fault[1].duration_ms", line_of(&source, "duration_ms"));
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"pause\"\nnode = 1\nduration_ms = 1\n");
    assert_at(&err, "fault[1].node", line_of(&source, "node = 1"));
    let (source, err) =
        fault_err("[[fault]]\nat_ms = 5\nkind = \"heal\"\na = \"client-1\"\nb = \"redis-1\"\noneway = 1\n");
    assert_at(&err, "fault[1].oneway", line_of(&source, "oneway"));
    let (source, err) =
        fault_err("[[fault]]\nat_ms = 5\nkind = \"loss\"\na = \"client-1\"\nb = \"redis-1\"\nrate_ppm = -1\n");
    assert_at(&err, "fault[1].rate_ppm", line_of(&source, "rate_ppm"));
    let (source, err) = fault_err("[[fault]]\nat_ms = -5\nkind = \"crash\"\nnode = \"redis-1\"\n");
    assert_at(&err, "fault[1].at_ms", line_of(&source, "at_ms = -5"));
    // A key of another kind.
    let (source, err) = fault_err("[[fault]]\nat_ms = 5\nkind = \"crash\"\nnode = \"redis-1\"\nduration_ms = 3\n");
    assert_at(&err, "fault[1].duration_ms", source.lines().count());
    // Not a table at all.
    let source = with("").replace("[lock]", "fault = [1]\n[lock]");
    assert_at(&parse_err(&source), "fault[0]", line_of(&source, "fault"));
}

#[test]
fn expect_errors() {
    // Not a checker (`liveness` was one's name until issue 50 made it a checker).
    let source = with("[expect]\nmutual-exclusion = \"valid\"\nlinearizable = \"valid\"\n");
    let err = parse_err(&source);
    assert_at(&err, "expect.linearizable", line_of(&source, "linearizable"));
    assert!(err.message.contains("token-order"), "lists the checkers: {err}");
    let source = with("[expect]\nstale-write = \"VALID\"\n");
    let err = parse_err(&source);
    assert_at(&err, "expect.stale-write", line_of(&source, "stale-write"));
    assert!(err.message.contains("invalid"), "{err}");
    for name in CHECKERS {
        let s = parse(&with(&format!("[expect]\n{name} = \"unknown\"\n")));
        assert_eq!(s.expected(name), Some(Verdict::Unknown));
    }
    let source = with("[expect]\n\"odd key\" = \"valid\"\n");
    assert_at(
        &parse_err(&source),
        "expect.\"odd key\"",
        line_of(&source, "\"odd key\""),
    );
}

#[test]
fn error_display_leaves_out_what_is_unknown() {
    let full = ScenarioError {
        path: "s.toml".into(),
        line: Some(3),
        column: Some(1),
        field: Some("lock.ttl_ms".into()),
        message: "must be greater than 0".into(),
    };
    assert_eq!(
        full.to_string(),
        "s.toml:3:1: field `lock.ttl_ms`: must be greater than 0"
    );
    let no_column = ScenarioError {
        column: None,
        ..full.clone()
    };
    assert_eq!(
        no_column.to_string(),
        "s.toml:3: field `lock.ttl_ms`: must be greater than 0"
    );
    let no_line = ScenarioError {
        line: None,
        column: None,
        ..full.clone()
    };
    assert_eq!(
        no_line.to_string(),
        "s.toml: field `lock.ttl_ms`: must be greater than 0"
    );
    let bare = ScenarioError::file("s.toml", "cannot read file");
    assert_eq!(bare.to_string(), "s.toml: cannot read file");
    // A real one.
    let err = Scenario::from_str(&with("ttl_ms = 0\n"), "scenarios/x.toml").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "scenarios/x.toml:{}:1: field `lock.ttl_ms`: must be greater than 0",
            with("ttl_ms = 0\n").lines().count()
        )
    );
}

#[test]
fn columns_count_characters() {
    let source = "name = \"é\"\ndescription = \"d\"\n[lock]\nalgorithm = \"naive\"\n[workload]\n  \"wörk\" = 1\n";
    let err = parse_err(source);
    assert_eq!((err.line, err.column), (Some(6), Some(3)), "{err}");
    assert_eq!(err.field.as_deref(), Some("workload.\"wörk\""));
    let err = parse_err("name = \"é\"\ndescription = \"d\"\n[lock]\nalgorithm = \"naive\"\nttl_ms =    \"x\"\n");
    assert_eq!((err.line, err.column), (Some(5), Some(13)), "{err}");
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lockstep-scenario-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn files_and_directories() {
    let missing = Path::new("/nonexistent/lockstep/x.toml");
    let err = Scenario::from_file(missing).unwrap_err();
    assert_eq!(err.path, "/nonexistent/lockstep/x.toml");
    assert!(
        err.to_string()
            .starts_with("/nonexistent/lockstep/x.toml: cannot read file"),
        "{err}"
    );

    let dir = temp_dir("dir");
    std::fs::write(dir.join("b.toml"), MINIMAL.replace("minimal", "bee")).unwrap();
    std::fs::write(dir.join("a.toml"), FULL).unwrap();
    std::fs::write(dir.join("notes.md"), "not a scenario").unwrap();
    std::fs::create_dir(dir.join("sub.toml")).unwrap();
    let loaded = load_dir(&dir).unwrap();
    let names: Vec<(&str, &str)> = loaded
        .iter()
        .map(|(p, s)| (p.file_name().unwrap().to_str().unwrap(), s.name.as_str()))
        .collect();
    assert_eq!(names, [("a.toml", "full-example"), ("b.toml", "bee")]);

    // Errors name the file.
    std::fs::write(dir.join("c.toml"), with("ttl_ms = 0\n")).unwrap();
    let err = load_dir(&dir).unwrap_err();
    assert!(err.path.ends_with("c.toml"), "{err}");
    assert_eq!(err.field.as_deref(), Some("lock.ttl_ms"));
    std::fs::remove_file(dir.join("c.toml")).unwrap();

    // Two files, one name.
    std::fs::write(dir.join("c.toml"), format!("\n{MINIMAL}").replace("minimal", "bee")).unwrap();
    let err = load_dir(&dir).unwrap_err();
    assert!(err.path.ends_with("c.toml"), "{err}");
    assert_eq!((err.field.as_deref(), err.line), (Some("name"), Some(3)), "{err}");
    assert!(err.message.contains("b.toml"), "{err}");
    std::fs::remove_file(dir.join("c.toml")).unwrap();

    // Not UTF-8.
    std::fs::write(dir.join("d.toml"), [0xff, 0xfe, b'\n']).unwrap();
    let err = load_dir(&dir).unwrap_err();
    assert!(err.message.contains("UTF-8"), "{err}");

    assert!(load_dir(&dir.join("absent"))
        .unwrap_err()
        .message
        .contains("cannot read directory"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tiny deterministic generator for the fuzz tests (no seed-dependent flakiness).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn fuzz_truncations_never_panic() {
    for source in [FULL, MINIMAL] {
        for end in (0..=source.len()).filter(|&i| source.is_char_boundary(i)) {
            let _ = Scenario::from_str(&source[..end], "t.toml");
        }
    }
}

#[test]
fn fuzz_mutations_never_panic() {
    let replacements = [
        "",
        "\"",
        "[",
        "]",
        "=",
        "\n",
        "-1",
        "0",
        "99999999999999999999",
        "1e400",
        "nan",
        "-inf",
        "true",
        "[[fault]]",
        "[1, 2]",
        "{}",
        "{ a = 1 }",
        "\"x\"",
        "é",
        "#",
        "'''",
        "\"\"\"",
        "1979-05-27T07:32:00Z",
        "0x7fffffffffffffff",
        "-9223372036854775808",
        "[lock]",
        "[[client]]",
        ".",
        "a.b.c.d.e",
    ];
    let mut rng = Lcg(42);
    let mut parsed = 0;
    for _ in 0..4000 {
        let mut text = FULL.to_string();
        for _ in 0..1 + rng.below(3) {
            let mut at = rng.below(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + rng.below(8)).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.replace_range(at..end, replacements[rng.below(replacements.len())]);
        }
        match Scenario::from_str(&text, "m.toml") {
            Ok(s) => {
                parsed += 1;
                // Whatever parses, round-trips.
                let written = s.to_toml();
                assert_eq!(Scenario::from_str(&written, "w.toml").as_ref(), Ok(&s), "{written}");
            }
            Err(e) => {
                assert_eq!(e.path, "m.toml");
                assert!(!e.message.is_empty());
                if let Some(line) = e.line {
                    assert!(line <= text.lines().count() + 1, "{e}");
                }
            }
        }
    }
    assert!(parsed > 0, "some mutations are harmless");
}

#[test]
fn fuzz_value_substitutions_never_panic() {
    // Every value of FULL replaced by every odd value.
    let odd = [
        "-1",
        "0",
        "9223372036854775807",
        "-9223372036854775808",
        "1.5",
        "\"s\"",
        "true",
        "[]",
        "[0, 0]",
        "[5, 1]",
        "{}",
        "1979-05-27",
    ];
    let lines: Vec<&str> = FULL.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some((key, _)) = line.split_once(" = ") else {
            continue;
        };
        for value in odd {
            let mut mutated = lines.clone();
            let replacement = format!("{key} = {value}");
            mutated[i] = &replacement;
            let text = mutated.join("\n");
            if let Ok(s) = Scenario::from_str(&text, "v.toml") {
                assert_eq!(parse(&s.to_toml()), s);
            }
        }
    }
}

#[test]
fn fuzz_deep_nesting_is_an_error_not_a_crash() {
    let deep_array = format!(
        "{MINIMAL}[workload]\nwork_ms = {}{}\n",
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    let deep_table = format!("{MINIMAL}x = {}1{}\n", "{a = ".repeat(20_000), "}".repeat(20_000));
    let long_key = format!("{} = 1\n{MINIMAL}", vec!["a"; 20_000].join("."));
    for source in [deep_array, deep_table, long_key] {
        let err = parse_err(&source);
        assert!(!err.message.is_empty());
    }
}

#[test]
fn explore_block_parses_with_defaults_and_round_trips() {
    assert_eq!(parse(MINIMAL).explore, None);
    let s = parse(&with("[explore]\n"));
    let e = s.explore.clone().unwrap();
    assert_eq!(e.seeds, DEFAULT_EXPLORE_SEEDS);
    assert_eq!(e.kinds, DEFAULT_KINDS);
    assert_eq!(
        DEFAULT_KINDS,
        &GENERATED_KINDS[..GENERATED_KINDS.len() - OPT_IN_KINDS.len()],
        "the opt-in kinds are off by default"
    );
    assert!(!e.lock_aware && e.expect.is_empty());
    assert_eq!(parse(&s.to_toml()), s);

    let s = parse(&with(
        "[explore]\nseeds = 200\nkinds = [\"pause\", \"crash\"]\nfaults_max = 2\nlock_aware = true\n\n\
         [explore.expect]\nmutual-exclusion = \"some-invalid\"\nstale-write = \"none-invalid\"\n",
    ));
    let e = s.explore.clone().unwrap();
    assert_eq!((e.seeds, e.faults_max, e.lock_aware), (200, 2, true));
    assert_eq!(e.kinds, ["pause", "crash"]);
    assert_eq!(e.expect["mutual-exclusion"], ExploreExpect::SomeInvalid);
    assert_eq!(e.expect["stale-write"], ExploreExpect::NoneInvalid);
    assert_eq!(e.profile().kinds, e.kinds);
    assert!(e.profile().lock_aware);
    assert_eq!(e.seeds, 200);
    assert_eq!(parse(&s.to_toml()), s);
    assert!(ExploreExpect::SomeInvalid.holds(1) && !ExploreExpect::SomeInvalid.holds(0));
    assert!(ExploreExpect::NoneInvalid.holds(0) && !ExploreExpect::NoneInvalid.holds(3));
}

#[test]
fn explore_block_errors_name_the_field() {
    let cases = [
        ("[explore]\nseeds = 0\n", "explore.seeds", "between 1 and"),
        ("[explore]\nfaults_max = 0\n", "explore.faults_max", "between 1 and"),
        ("[explore]\nkinds = []\n", "explore.kinds", "at least one"),
        ("[explore]\nkinds = [\"meteor\"]\n", "explore.kinds", "meteor"),
        ("[explore]\nkinds = [\"pause\", \"pause\"]\n", "explore.kinds", "twice"),
        ("[explore]\nseed = 3\n", "explore.seed", "unknown field"),
        (
            "[explore.expect]\nlinearizable = \"none-invalid\"\n",
            "explore.expect.linearizable",
            "unknown checker",
        ),
        (
            "[explore.expect]\nstale-write = \"sometimes\"\n",
            "explore.expect.stale-write",
            "sometimes",
        ),
    ];
    for (extra, field, message) in cases {
        let err = parse_err(&with(extra));
        assert_eq!(err.field.as_deref(), Some(field), "{extra}: {err}");
        assert!(err.message.contains(message), "{extra}: {err}");
        assert!(err.line.is_some(), "{extra}: {err}");
    }
}

#[test]
fn the_history_cap_defaults_to_a_million_is_bounded_and_written_only_when_set() {
    let s = parse(MINIMAL);
    assert_eq!(s.history_events_max, 1_000_000);
    assert_eq!(
        s.world_config().history_events_max,
        lockstep_sim::DEFAULT_HISTORY_EVENTS_MAX
    );
    // Not written at its default: the TOML of every existing file (and the run identities
    // hashed over it) stays as it was.
    assert!(!s.to_toml().contains("history_events_max"), "{}", s.to_toml());
    let capped = parse(&format!("history_events_max = 5000\n{MINIMAL}"));
    assert_eq!(capped.world_config().history_events_max, 5_000);
    let text = capped.to_toml();
    assert!(text.contains("history_events_max = 5000"), "{text}");
    assert_eq!(parse(&text), capped);
    for bad in ["0", "10000001"] {
        let source = format!("history_events_max = {bad}\n{MINIMAL}");
        let err = parse_err(&source);
        assert_at(&err, "history_events_max", 1);
        assert!(err.to_string().contains("between 1 and 10000000"), "{err}");
    }
}

#[test]
fn a_retry_without_delay_is_refused() {
    let source = with("[workload]\nacquire_retry_ms = 0\n");
    let err = parse_err(&source);
    assert_at(&err, "workload.acquire_retry_ms", line_of(&source, "acquire_retry_ms"));
    assert!(err.to_string().contains("must be at least 1"), "{err}");
    assert_eq!(
        parse(&with("[workload]\nacquire_retry_ms = 1\n"))
            .workload
            .acquire_retry_ms,
        1
    );
}

#[test]
fn the_history_byte_cap_defaults_to_256_mib_is_bounded_and_written_only_when_set() {
    let s = parse(MINIMAL);
    assert_eq!(s.history_bytes_max, 256 << 20);
    assert_eq!(
        s.world_config().history_bytes_max,
        lockstep_sim::world::DEFAULT_HISTORY_BYTES_MAX
    );
    assert!(!s.to_toml().contains("history_bytes_max"), "{}", s.to_toml());
    let capped = parse(&format!("history_bytes_max = 5000000\n{MINIMAL}"));
    assert_eq!(capped.world_config().history_bytes_max, 5_000_000);
    let text = capped.to_toml();
    assert!(text.contains("history_bytes_max = 5000000"), "{text}");
    assert_eq!(parse(&text), capped);
    for bad in ["0", "8589934593"] {
        let source = format!("history_bytes_max = {bad}\n{MINIMAL}");
        let err = parse_err(&source);
        assert_at(&err, "history_bytes_max", 1);
        assert!(err.to_string().contains("between 1 and 8589934592"), "{err}");
    }
}

#[test]
fn node_tables_count_against_the_node_limits() {
    let clients: String = (0..=1000).map(|i| format!("[[client]]\nname = \"c{i}\"\n")).collect();
    let source = with(&clients);
    let err = parse_err(&source);
    assert_at(&err, "client[1000]", line_of(&source, "name = \"c1000\"") - 1);
    assert!(
        err.message.contains("1001 [[client]] tables: at most 1000 clients"),
        "{err}"
    );
    // A thousand is fine.
    let clients: String = (0..1000).map(|i| format!("[[client]]\nname = \"c{i}\"\n")).collect();
    assert_eq!(parse(&with(&clients)).clients.len(), 1000);

    let masters: String = (0..=1000)
        .map(|i| format!("[[topology.master]]\nname = \"m{i}\"\n"))
        .collect();
    let source = with(&masters);
    let err = parse_err(&source);
    assert_at(&err, "topology.master[1000]", line_of(&source, "name = \"m1000\"") - 1);

    // Replicas are servers: 58 masters of 16 replicas are 986 servers, 59 are 1,003.
    let source = with("[topology]\nmasters = 59\nreplicas = 16\n");
    let err = parse_err(&source);
    assert_at(&err, "topology.replicas", line_of(&source, "replicas"));
    assert!(
        err.message.contains("master `redis-59` makes 1003 Redis servers"),
        "{err}"
    );
    assert_eq!(
        parse(&with("[topology]\nmasters = 58\nreplicas = 16\n")).masters.len(),
        58
    );
    let source = with("[topology]\nmasters = 1001\n");
    assert_at(&parse_err(&source), "topology.masters", line_of(&source, "masters"));
}

#[test]
fn client_tasks_times_masters_are_bounded() {
    let source = with("[topology]\nmasters = 100\nclients = 101\n");
    let err = parse_err(&source);
    assert_at(&err, "topology.clients", line_of(&source, "clients"));
    assert!(
        err.message.contains("more than 10000 client task × master pairs"),
        "{err}"
    );
    parse(&with("[topology]\nmasters = 100\nclients = 100\n"));
    // Tasks multiply; the error names the [[client]] table that goes past the limit.
    let clients: String = (0..700).map(|i| format!("[[client]]\nname = \"c{i}\"\n")).collect();
    let source = with(&format!("[workload]\ntasks = 16\n{clients}"));
    let err = parse_err(&source);
    assert_at(&err, "client[625]", line_of(&source, "name = \"c625\"") - 1);
}

#[test]
fn names_keys_and_steps_are_bounded() {
    let long_name = "n".repeat(256);
    let source = with(&format!("[[client]]\nname = \"{long_name}\"\n"));
    let err = parse_err(&source);
    assert_at(&err, "client[0].name", line_of(&source, "name = \"nnn"));
    assert!(err.message.contains("256 bytes long: at most 255"), "{err}");
    parse(&with(&format!("[[client]]\nname = \"{}\"\n", "n".repeat(255))));

    let source = with(&format!("key = \"{}\"\n", "k".repeat(4097)));
    let err = parse_err(&source);
    assert_at(&err, "lock.key", line_of(&source, "key ="));
    assert!(err.message.contains("at most 4096"), "{err}");
    assert_eq!(
        parse(&with(&format!("key = \"{}\"\n", "k".repeat(4096))))
            .lock
            .key
            .len(),
        4096
    );
    let source = with(&format!("[workload]\nkey = \"{}\"\n", "k".repeat(4097)));
    assert_at(&parse_err(&source), "workload.key", line_of(&source, "key ="));

    let script = |body: &str| {
        format!(
            "name = \"s\"\ndescription = \"d\"\n[lock]\nalgorithm = \"script\"\nkey = \"{}\"\n{body}",
            "k".repeat(2000)
        )
    };
    // {key} is the lock key: twice is 4,000 bytes, three times 6,000.
    parse(&script("wait = \"blpop\"\nwait_key = \"{key}{key}\"\n"));
    let source = script("wait = \"blpop\"\nwait_key = \"{key}{key}{key}\"\n");
    let err = parse_err(&source);
    assert_at(&err, "lock.wait_key", line_of(&source, "wait_key"));
    assert!(err.message.contains("expands to up to 6000 bytes"), "{err}");
    let source = script("[lock.release]\nlua = \"return 1\"\nkeys = [\"{key}{key}{key}\"]\n");
    let err = parse_err(&source);
    assert_eq!(err.field.as_deref(), Some("lock.release.keys[0]"), "{err}");
    // A step sends at most 64 KiB, placeholders at their longest ({value} 255 bytes).
    let values = vec!["\"{value}\""; 257].join(", ");
    let source = script(&format!("[lock.acquire]\ncommand = [\"SET\", {values}]\n"));
    let err = parse_err(&source);
    assert_eq!(err.field.as_deref(), Some("lock.acquire.command[257]"), "{err}");
    assert!(err.message.contains("at most 65536"), "{err}");
    let words = vec!["\"x\""; 1025].join(", ");
    let source = script(&format!("[lock.acquire]\ncommand = [{words}]\n"));
    let err = parse_err(&source);
    assert_eq!(err.field.as_deref(), Some("lock.acquire.command"), "{err}");
    assert!(err.message.contains("1025 words: at most 1024"), "{err}");
    let steps = vec!["{ command = [\"GET\", \"{key}\"] }"; 65].join(", ");
    let source = script(&format!("[lock.release]\nsteps = [{steps}]\n"));
    let err = parse_err(&source);
    assert_at(&err, "lock.release.steps", line_of(&source, "steps"));
    assert!(err.message.contains("65 steps: at most 64"), "{err}");
    let source = script(&format!("[lock.release]\nlua = \"return '{}'\"\n", "x".repeat(65_528)));
    let err = parse_err(&source);
    assert_at(&err, "lock.release.lua", line_of(&source, "lua ="));
    assert!(
        err.message.contains("the script is 65537 bytes: at most 65536"),
        "{err}"
    );
    parse(&script(&format!(
        "[lock.release]\nlua = \"return '{}'\"\n",
        "x".repeat(65_527)
    )));
}

#[test]
fn settings_without_effect_or_sense_are_refused() {
    for key in [
        "replication_lag_ms = 5",
        "failover_after_ms = 100",
        "replica_offset_ms = 3",
    ] {
        let source = with(&format!("[topology]\nmasters = 2\n{key}\n"));
        let err = parse_err(&source);
        let name = key.split(' ').next().unwrap_or_default();
        assert_at(&err, &format!("topology.{name}"), line_of(&source, name));
        assert!(err.message.contains("no master has replicas"), "{err}");
    }
    // As topology defaults they concern the masters that have replicas: one is enough.
    let source = with(
        "[topology]\nreplication_lag_ms = 5\nfailover_after_ms = 100\n[[topology.master]]\nname = \"a\"\nreplicas = 1\n[[topology.master]]\nname = \"b\"\n",
    );
    let s = parse(&source);
    assert_eq!(s.master_setup("a").replication_lag_ms, 5);
    assert_eq!(s.master_setup("b").failover_after_ms, None);

    let latency = |max: u64| {
        with(&format!(
            "[[fault]]\nat_ms = 1\nkind = \"latency\"\na = \"client-1\"\nb = \"redis-1\"\nlatency_ms = 20\nmax_latency_ms = {max}\n"
        ))
    };
    let source = latency(19);
    let err = parse_err(&source);
    assert_at(&err, "fault[0].max_latency_ms", line_of(&source, "max_latency_ms"));
    assert!(err.message.contains("19 is below latency_ms (20)"), "{err}");
    parse(&latency(20));

    let source = with("[expect]\nprogress = \"unknown\"\n");
    let err = parse_err(&source);
    assert_at(&err, "expect.progress", line_of(&source, "progress"));
    assert!(
        err.message.contains("`valid`") && err.message.contains("`invalid`"),
        "{err}"
    );
    for verdict in ["valid", "invalid"] {
        parse(&with(&format!("[expect]\nprogress = \"{verdict}\"\n")));
    }
    // Checkers may still be expected `unknown`.
    parse(&with("[expect]\ntoken-order = \"unknown\"\n"));
}

/// A scenario beside `script.lua` whose release script is that file.
const LUA_FILE_SCENARIO: &str = r#"name = "lua-file"
description = "a script file"
[lock]
algorithm = "script"
[lock.release]
lua_file = "script.lua"
"#;

#[test]
fn lua_files_are_read_with_the_scenario_file_limits() {
    let dir = temp_dir("lua-file-limits");
    let scenario = dir.join("s.toml");
    std::fs::write(&scenario, LUA_FILE_SCENARIO).unwrap();
    let script = dir.join("script.lua");
    let load = || Scenario::from_file(&scenario);

    std::fs::write(&script, "return redis.call('del', KEYS[1])").unwrap();
    assert!(load().is_ok());
    std::fs::write(&script, "x".repeat(MAX_SCRIPT_BYTES + 1)).unwrap();
    let err = load().unwrap_err();
    assert_eq!(err.field.as_deref(), Some("lock.release.lua_file"), "{err}");
    assert!(err.message.contains("larger than the limit of 65536 bytes"), "{err}");
    std::fs::remove_file(&script).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &script).unwrap();
    assert!(load().unwrap_err().message.contains("not a regular file"));
    std::fs::remove_file(&script).unwrap();
    let c_path = std::ffi::CString::new(script.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    assert!(load().unwrap_err().message.contains("not a regular file"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a fuzzed script file holds.
#[derive(Debug, Clone)]
enum ScriptBytes {
    Random(Vec<u8>),
    Lua(String),
    Huge(usize),
    Invalid(Vec<u8>),
}

fn script_bytes() -> impl proptest::strategy::Strategy<Value = ScriptBytes> {
    use proptest::prelude::*;
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..600).prop_map(ScriptBytes::Random),
        // Lua-ish text: keywords, operators, strings, long brackets, unbalanced ends.
        proptest::collection::vec(
            prop_oneof![
                Just("return ".to_string()),
                Just("redis.call('get', KEYS[1])".to_string()),
                Just("if ".to_string()),
                Just(" then ".to_string()),
                Just(" end".to_string()),
                Just("local x = ".to_string()),
                Just("[[".to_string()),
                Just("]]".to_string()),
                Just("--[==[".to_string()),
                Just("\"".to_string()),
                Just("(".to_string()),
                Just(")".to_string()),
                Just("\n".to_string()),
                Just("function() ".to_string()),
                Just("\\0".to_string()),
                "[ -~]{0,8}",
            ],
            0..60
        )
        .prop_map(|parts| ScriptBytes::Lua(parts.concat())),
        (MAX_SCRIPT_BYTES - 2..MAX_SCRIPT_BYTES + 3).prop_map(ScriptBytes::Huge),
        proptest::collection::vec(0x80u8..=0xff, 1..40).prop_map(ScriptBytes::Invalid),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Whatever a script file holds, loading the scenario answers (an error names the scenario
    /// or the script file, and the field) and never panics.
    #[test]
    fn fuzz_lua_files_never_panic(content in script_bytes(), prefix in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4)) {
        let dir = std::env::temp_dir().join(format!("lockstep-scenario-lua-fuzz-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::create_dir_all(&dir);
        let scenario = dir.join("s.toml");
        std::fs::write(&scenario, LUA_FILE_SCENARIO).unwrap();
        let mut bytes = prefix;
        match &content {
            ScriptBytes::Random(b) | ScriptBytes::Invalid(b) => bytes.extend_from_slice(b),
            ScriptBytes::Lua(text) => bytes.extend_from_slice(text.as_bytes()),
            ScriptBytes::Huge(n) => bytes.extend(std::iter::repeat_n(b'-', *n)),
        }
        std::fs::write(dir.join("script.lua"), &bytes).unwrap();
        match Scenario::from_file(&scenario) {
            Ok(s) => {
                proptest::prop_assert!(bytes.len() <= MAX_SCRIPT_BYTES);
                proptest::prop_assert!(std::str::from_utf8(&bytes).is_ok());
                proptest::prop_assert_eq!(Scenario::from_str(&s.to_toml(), "again.toml").ok(), Some(s));
            }
            Err(e) => {
                proptest::prop_assert!(e.path.ends_with("s.toml") || e.path.ends_with("script.lua"), "{}", e);
                proptest::prop_assert_eq!(e.field.as_deref(), Some("lock.release.lua_file"));
                proptest::prop_assert!(!e.message.is_empty() && e.message.len() < 2048, "{}", e.message.len());
            }
        }
    }
}
