//! The `replica-clock` kind: a replica's wall clock stepped ahead, then a failover of its group
//! (scenarios/replica-clock-failover.toml tells the story; docs/sources.md, "A promoted
//! replica's clock runs ahead").
//!
//! Over a template whose only master has an in-sync replica (no replication lag), failovers
//! alone lose nothing; switched on, `replica-clock` finds a mutual-exclusion violation, and the
//! shrunk counterexample is a replica clock fault that breaks the `masters` assumption and
//! replays. The kind is opt-in (the default kinds draw what they drew), and live runs accept
//! its world faults.

use lockstep::explore::assumptions::Assumption;
use lockstep::explore::generate::ExploreCase;
use lockstep::explore::kinds::GenFault;
use lockstep::explore::kinds::ReplicaClock;
use lockstep::explore::shrink::{counterexample_toml, shrink};
use lockstep::explore::{explore, ExploreConfig};
use lockstep::live::faults::{refusal, LiveNodes};
use lockstep::model::fault::FaultProfile;
use lockstep::model::fault::DEFAULT_KINDS;
use lockstep::model::fault::GENERATED_KINDS;
use lockstep::model::Verdict;
use lockstep::run::run_scenario;
use lockstep::scenario::Scenario;

/// One master with one replica that applies every write at once, three clients taking turns.
fn template() -> Scenario {
    Scenario::from_str(
        r#"
name = "replica-clock-template"
description = "A single-master lock over a master with an in-sync replica."
seed = 1
duration_ms = 8000

[topology]
clients = 3

[[topology.master]]
name = "redis-1"
replicas = 1
replication_lag_ms = 0

[lock]
algorithm = "token-release"
ttl_ms = 2000

[workload]
until_ms = 7000
work_ms = [50, 300]
"#,
        "<replica-clock template>",
    )
    .expect("a valid template")
}

fn profile(kinds: &[&str]) -> FaultProfile {
    FaultProfile {
        kinds: kinds.iter().map(|k| k.to_string()).collect(),
        faults_max: 2,
        lock_aware: true,
        ..FaultProfile::default()
    }
}

fn explore_seeds(kinds: &[&str], seeds: u64) -> lockstep::explore::ExploreSummary {
    explore(
        &template(),
        &ExploreConfig {
            seeds: 0..seeds,
            profile: profile(kinds),
            ..ExploreConfig::default()
        },
    )
}

#[test]
fn failovers_to_an_in_sync_replica_lose_nothing_until_its_clock_runs_ahead() {
    // The control: the same seeds with failovers alone keep mutual exclusion.
    let failovers = explore_seeds(&["failover"], 40);
    assert_eq!(failovers.errors, 0, "{}", failovers.render());
    assert!(
        !failovers
            .first_failing
            .iter()
            .any(|f| f.checkers.iter().any(|c| c == "mutual-exclusion")),
        "{}",
        failovers.render()
    );
    // Switched on, the replica's clock does it.
    let summary = explore_seeds(&["replica-clock"], 40);
    assert_eq!(summary.errors, 0, "{}", summary.render());
    let first = summary
        .first_failing
        .iter()
        .find(|f| f.checkers.iter().any(|c| c == "mutual-exclusion"))
        .unwrap_or_else(|| panic!("no seed breaks mutual exclusion:\n{}", summary.render()));
    let template = template();
    let cx = shrink(
        &template,
        &profile(&["replica-clock"]),
        first.seed,
        "mutual-exclusion",
        100,
    )
    .expect("the failing seed fails alone");
    assert_eq!(cx.run.verdict("mutual-exclusion"), Some(Verdict::Invalid));
    assert!(
        !cx.case.faults.is_empty() && cx.case.faults.iter().all(|f| f.kind() == "replica-clock"),
        "{:?}",
        cx.case
    );
    // It breaks the masters assumption, and says how.
    let notes = &cx.assumptions;
    assert!(!notes.promised, "{:?}", notes.lines());
    let masters = notes
        .plan
        .iter()
        .find(|b| b.assumption == Assumption::Masters)
        .unwrap_or_else(|| panic!("{:?}", notes.lines()));
    assert!(
        masters.detail.contains("redis-1-replica-1's wall clock runs"),
        "{}",
        masters.detail
    );
    // The counterexample replays to the same history.
    let toml = counterexample_toml(&cx);
    assert!(
        toml.contains("kind = \"clock-jump\"") && toml.contains("kind = \"failover\""),
        "{toml}"
    );
    let replayed = Scenario::from_str(&toml, "counterexample.toml").expect("it parses");
    assert_eq!(run_scenario(&replayed, None).expect("it runs").digest, cx.run.digest);
}

#[test]
fn it_is_opt_in_and_runs_live() {
    assert!(GENERATED_KINDS.contains(&"replica-clock"));
    assert!(!DEFAULT_KINDS.contains(&"replica-clock"));
    let fault = GenFault::from(ReplicaClock {
        at_ms: 1_000,
        node: "redis-1".into(),
        replica: "redis-1-replica-1".into(),
        ahead_ms: 9_000,
        lead_ms: 1_000,
    });
    let clients = ["client-1".to_string(), "client-2".to_string()];
    let redis = ["redis-1".to_string(), "redis-1-replica-1".to_string()];
    let nodes = LiveNodes {
        clients: &clients,
        redis: &redis,
        replicated: &redis,
        resource: "resource",
    };
    for scheduled in fault.expand() {
        assert_eq!(refusal(&scheduled.fault, &nodes, false), None, "{scheduled:?}");
    }
    // Its plan is the scenario's story: the step, then the failover.
    let case = ExploreCase {
        clients: 2,
        faults: vec![fault],
        shape: None,
    };
    let story = Scenario::from_file(std::path::Path::new("scenarios/replica-clock-failover.toml")).unwrap();
    assert_eq!(case.plan(&story.node_names()), story.faults);
}
