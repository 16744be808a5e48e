//! The deployment-fault scenarios (crash and restart under each persistence mode, delayed
//! restarts, failover): each tells its story with exact witnesses — which client got which
//! quorum, and when — and exploration finds the unsafe configurations in a few seeds while the
//! safe variants stay safe over a CI-sized sample (the 10,000-seed runs are in
//! docs/deployment-faults.md).

use lockstep::explore::{explore, ExploreConfig};
use lockstep::history::OpHistory;
use lockstep::model::fault::FaultProfile;
use lockstep::model::Verdict;
use lockstep::run::{run_scenario, ScenarioRun};
use lockstep::scenario::Scenario;
use lockstep::sim::EventKind;
use std::path::Path;

fn load(file: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(file);
    Scenario::from_file(&path).expect("the shipped file parses")
}

fn run(file: &str) -> ScenarioRun {
    let run = run_scenario(&load(file), None).expect("the world runs");
    assert!(run.as_expected(), "{file}: {:?}", run.mismatches);
    run
}

/// Every grant: (client, true ms of the acquire ok, the servers whose `SET NX` with the grant's
/// value succeeded, by name).
fn quorums(run: &ScenarioRun) -> Vec<(String, u64, Vec<String>)> {
    let events = run.history.events();
    OpHistory::new(&run.history)
        .holds()
        .iter()
        .map(|hold| {
            let masters = events
                .iter()
                .filter(|c| match &c.kind {
                    // Client commands only (connection 0 is the replication stream).
                    EventKind::Command { args, reply, conn, .. } if *conn > 0 => {
                        args.len() > 2
                            && args[0].eq_ignore_ascii_case("set")
                            && args[2] == hold.grant.value
                            && reply == "+OK"
                    }
                    _ => false,
                })
                .map(|c| c.node.clone())
                .collect::<std::collections::BTreeSet<String>>()
                .into_iter()
                .collect();
            (hold.process.to_string(), hold.granted.at_us / 1_000, masters)
        })
        .collect()
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn holders(run: &ScenarioRun) -> Vec<String> {
    let me = run.result("mutual-exclusion").expect("the checker ran");
    let mut nodes: Vec<String> = me.witness.iter().map(|e| e.node.clone()).collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

#[test]
fn a_master_restarted_empty_hands_out_a_second_quorum() {
    let run = run("redlock-crash-restart.toml");
    let q = quorums(&run);
    assert_eq!(q.len(), 2, "{q:?}");
    assert_eq!(q[0].0, "client-1");
    assert_eq!(q[0].2, owned(&["redis-1", "redis-2", "redis-3"]));
    assert_eq!(q[1].0, "client-2");
    assert_eq!(q[1].2, owned(&["redis-3", "redis-4", "redis-5"]));
    // client-2 starts at 2 s; its connects to the two masters it is partitioned from are never
    // answered and time out after 100 ms, which ends its first round at 2.1 s with a quorum.
    assert_eq!(q[1].1, 2_101, "client-2 gets its quorum in its first round");
    assert_eq!(holders(&run), owned(&["client-1", "client-2"]));
}

#[test]
fn a_restart_delayed_by_a_ttl_on_the_monotonic_clock_is_safe() {
    let run = run("redlock-crash-restart-delayed.toml");
    let q = quorums(&run);
    assert_eq!(q.len(), 2, "{q:?}");
    assert_eq!(q[0].2, owned(&["redis-1", "redis-2", "redis-3"]));
    assert_eq!(q[1].0, "client-2");
    assert_eq!(q[1].2, owned(&["redis-3", "redis-4", "redis-5"]));
    assert!(q[1].1 >= 11_000, "client-2 waits for redis-3, back at 11 s: {q:?}");
    let restarted = run
        .history
        .events()
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Note { text } if text.starts_with("restarted")))
        .expect("redis-3 restarts");
    assert_eq!((restarted.node.as_str(), restarted.at_us), ("redis-3", 11_000_000));
}

#[test]
fn aof_always_brings_the_key_back() {
    let run = run("redlock-crash-restart-aof-always.toml");
    let q = quorums(&run);
    assert_eq!(q.len(), 2, "{q:?}");
    // client-1's key is still on redis-3 after its restart at 1.5 s: client-2 waits until it
    // expires there (client-1's release could not reach redis-3 over its dead connection).
    let expired = run
        .history
        .events()
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Expired { key } if key == "lock"))
        .expect("the restored key expires");
    assert_eq!(expired.node, "redis-3");
    assert!(q[1].1 > expired.at_us / 1_000, "{q:?}");
    assert_eq!(q[1].2, owned(&["redis-3", "redis-4", "redis-5"]));
}

#[test]
fn a_wall_clock_restart_timer_is_cut_short_by_a_jump() {
    let run = run("redlock-crash-restart-delayed-wall-clock.toml");
    let q = quorums(&run);
    assert_eq!(q[1].0, "client-2");
    assert_eq!(q[1].2, owned(&["redis-3", "redis-4", "redis-5"]));
    assert_eq!(q[1].1, 2_101);
    assert_eq!(holders(&run), owned(&["client-1", "client-2"]));
}

#[test]
fn a_power_loss_within_the_fsync_window_loses_the_key() {
    let run = run("redlock-crash-restart-power-loss.toml");
    let q = quorums(&run);
    assert_eq!(q[0].2, owned(&["redis-1", "redis-2", "redis-3"]));
    assert_eq!(q[1].2, owned(&["redis-3", "redis-4", "redis-5"]));
    assert_eq!(q[1].1, 1_101);
    assert_eq!(run.verdict("mutual-exclusion"), Some(Verdict::Invalid));
}

#[test]
fn a_failover_to_a_lagging_replica_grants_the_lock_twice() {
    let run = run("single-master-failover.toml");
    let q = quorums(&run);
    assert_eq!(q.len(), 2, "{q:?}");
    assert_eq!((q[0].0.as_str(), q[0].2.clone()), ("client-1", owned(&["redis-1"])));
    assert_eq!(
        (q[1].0.as_str(), q[1].2.clone()),
        ("client-2", owned(&["redis-1-replica-1"])),
        "client-2 reaches the promoted replica under the master's name"
    );
    let promoted = run
        .history
        .events()
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Note { text } if text.starts_with("promoted")))
        .expect("the sentinel promotes the replica");
    assert_eq!(
        (promoted.node.as_str(), promoted.at_us),
        ("redis-1-replica-1", 2_100_000)
    );
    // The SET never reached the replica: the master crashed within the replication lag.
    let replicated = run
        .history
        .events()
        .iter()
        .any(|e| e.node == "redis-1-replica-1" && matches!(&e.kind, EventKind::Command { conn: 0, .. }));
    assert!(!replicated);
    assert_eq!(holders(&run), owned(&["client-1", "client-2"]));
}

#[test]
fn redlock_over_independent_masters_survives_the_same_failover() {
    let run = run("single-master-failover-redlock.toml");
    let q = quorums(&run);
    assert_eq!(q.len(), 2, "{q:?}");
    assert_eq!(q[0].2, owned(&["redis-1", "redis-2", "redis-3", "redis-4", "redis-5"]));
    // client-2 acquires only after client-1's release at ~5 s, through redis-1's promoted replica.
    assert!(q[1].1 > 5_000, "{q:?}");
    assert!(q[1].2.contains(&"redis-1-replica-1".to_string()), "{q:?}");
}

fn profile(kinds: &[&str]) -> FaultProfile {
    FaultProfile {
        kinds: kinds.iter().map(|k| k.to_string()).collect(),
        ..FaultProfile::default()
    }
}

fn explore_seeds(file: &str, seeds: u64, kinds: &[&str]) -> lockstep::explore::ExploreSummary {
    let config = ExploreConfig {
        seeds: 0..seeds,
        profile: profile(kinds),
        ..ExploreConfig::default()
    };
    let summary = explore(&load(file), &config);
    assert_eq!(summary.errors, 0, "{}", summary.render());
    summary
}

const RESTART_KINDS: &[&str] = &["crash", "power-loss", "rolling-restart"];

#[test]
fn exploration_finds_the_unsafe_deployments_within_a_few_seeds() {
    // The first seed that breaks mutual exclusion (lease-validity also flags earlier seeds in
    // which a master restarts empty under a live lease: the lease ended at the crash).
    let first_me = |summary: &lockstep::explore::ExploreSummary| {
        summary
            .first_failing
            .iter()
            .find(|f| f.checkers.iter().any(|c| c == "mutual-exclusion"))
            .map(|f| f.seed)
    };
    let summary = explore_seeds("redlock-crash-restart.toml", 20, RESTART_KINDS);
    assert_eq!(first_me(&summary), Some(18), "{}", summary.render());
    let summary = explore_seeds("single-master-failover.toml", 20, &["crash", "failover"]);
    assert_eq!(first_me(&summary), Some(9), "{}", summary.render());
}

#[test]
fn the_safe_deployments_hold_over_a_ci_sample() {
    for file in [
        "redlock-crash-restart-delayed.toml",
        "redlock-crash-restart-aof-always.toml",
    ] {
        let summary = explore_seeds(file, 100, RESTART_KINDS);
        assert_eq!(summary.seeds_run, 100);
        assert_eq!(
            summary.violations["mutual-exclusion"],
            0,
            "{file}: {}",
            summary.render()
        );
    }
}

const DEPLOYED: &str = r#"
name = "deployed"
description = "deployment keys"

[topology]
persistence = "aof-everysec"
restart_delay_ms = 5000
replicas = 1

[[topology.master]]
name = "a"
persistence = "aof-always"
restart_delay_clock = "wall"
replication_lag_ms = 50
failover_after_ms = 1000

[[topology.master]]
name = "b"
replicas = 0

[lock]
algorithm = "redlock"

[[fault]]
at_ms = 10
kind = "power-loss"
node = "a-replica-1"

[[fault]]
at_ms = 20
kind = "failover"
node = "a"
"#;

#[test]
fn deployment_keys_resolve_with_topology_defaults_and_write_back() {
    let s = Scenario::from_str(DEPLOYED, "deployed.toml").expect("it parses");
    let a = s.master_setup("a");
    assert_eq!(a.persistence, lockstep::sim::Persistence::AofAlways);
    assert_eq!(a.restart_delay_ms, 5_000, "the topology default");
    assert_eq!(a.restart_delay_clock, lockstep::sim::DelayClock::Wall);
    assert_eq!(
        (a.replicas, a.replication_lag_ms, a.failover_after_ms),
        (1, 50, Some(1_000))
    );
    let b = s.master_setup("b");
    assert_eq!(
        (b.persistence, b.replicas),
        (lockstep::sim::Persistence::AofEverysec, 0)
    );
    assert_eq!(
        s.node_names(),
        owned(&["a", "a-replica-1", "b", "resource", "client-1", "client-2"])
    );
    let back = Scenario::from_str(&s.to_toml(), "written.toml").expect("the written file parses");
    assert_eq!(back.deployment, s.deployment);
    assert_eq!(back.faults, s.faults);
}

#[test]
fn bad_deployment_keys_are_reported_at_their_line_and_field() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "persistence = \"aof-everysec\"",
            "persistence = \"rdb\"",
            "deployed.toml:6:15: field `topology.persistence`: unknown variant `rdb`",
        ),
        (
            "failover_after_ms = 1000",
            "failover_after_ms = 0",
            "deployed.toml:15:1: field `topology.master[0].failover_after_ms`: must be at least 1",
        ),
        (
            "name = \"b\"\nreplicas = 0",
            "name = \"b\"\nreplicas = 0\nreplication_lag_ms = 5",
            "deployed.toml:20:1: field `topology.master[1].replication_lag_ms`: master `b` has no replicas",
        ),
        (
            "replicas = 1\n",
            "replicas = 17\n",
            "deployed.toml:8:1: field `topology.replicas`: 17: must be at most 16",
        ),
        (
            "node = \"a\"\n",
            "node = \"b\"\n",
            "field `fault[1].node`: a failover needs a master with replicas (or one of its replicas); `b` is a master",
        ),
        (
            "node = \"a-replica-1\"",
            "node = \"client-1\"",
            "field `fault[0].node`: only Redis masters and replicas crash and restart; `client-1` is a client",
        ),
    ];
    for (from, to, expected) in cases {
        assert!(DEPLOYED.contains(from), "{from}");
        let source = DEPLOYED.replacen(from, to, 1);
        let err = Scenario::from_str(&source, "deployed.toml").unwrap_err().to_string();
        assert!(err.contains(expected), "{err}\n  expected: {expected}");
    }
}
