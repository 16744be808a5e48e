//! Every shipped scenario, run as a user would: its verdicts must match its `[expect]` table,
//! and the witnesses must tell the story the file comments tell.

use lockstep::model::Verdict;
use lockstep::run::{run_scenario, ScenarioRun};
use lockstep::scenario::{load_dir, Scenario};
use lockstep::sim::EventKind;
use std::path::{Path, PathBuf};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn run(file: &str) -> ScenarioRun {
    let scenario = Scenario::from_file(&scenarios_dir().join(file)).expect("the shipped file parses");
    let run = run_scenario(&scenario, None).expect("the world runs");
    assert!(
        run.as_expected(),
        "{file}: {:?}\n{}",
        run.mismatches,
        run.results
            .iter()
            .map(|r| format!("{} {} {}", r.checker, r.verdict.name(), r.explanation))
            .collect::<Vec<_>>()
            .join("\n")
    );
    run
}

/// (node, value, token, accepted) of every resource write attempt, in order.
fn resource_writes(run: &ScenarioRun) -> Vec<(String, i64, Option<u64>, bool)> {
    run.history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ResourceWrite {
                client,
                value,
                token,
                accepted,
                ..
            } => Some((client.clone(), *value, *token, *accepted)),
            _ => None,
        })
        .collect()
}

#[test]
fn every_shipped_scenario_meets_its_expectations() {
    let all = load_dir(&scenarios_dir()).expect("the scenarios directory parses");
    assert!(all.len() >= 10, "expected the shipped scenarios, found {}", all.len());
    for (path, scenario) in all {
        let run = run_scenario(&scenario, None).expect("the world runs");
        assert!(!scenario.expect.is_empty(), "{} expects nothing", path.display());
        assert!(run.as_expected(), "{}: {:?}", path.display(), run.mismatches);
    }
}

#[test]
fn kleppmann_unfenced_the_paused_clients_stale_write_is_accepted() {
    let run = run("kleppmann-gc-pause.toml");
    assert_eq!(
        resource_writes(&run),
        vec![
            ("client-2".to_string(), 1, None, true),
            ("client-1".to_string(), 1, None, true),
        ],
        "client-2 writes 1, then client-1 wakes and writes the same 1"
    );
    let me = run.result("mutual-exclusion").unwrap();
    let holders: Vec<&str> = me.witness.iter().map(|e| e.node.as_str()).collect();
    assert!(
        holders.contains(&"client-1") && holders.contains(&"client-2"),
        "{holders:?}"
    );
}

#[test]
fn kleppmann_fenced_mutual_exclusion_fails_yet_the_resource_is_safe() {
    let run = run("kleppmann-gc-pause-fenced.toml");
    assert_eq!(run.verdict("mutual-exclusion"), Some(Verdict::Invalid));
    assert_eq!(run.verdict("stale-write"), Some(Verdict::Valid));
    assert_eq!(run.verdict("lost-update"), Some(Verdict::Valid));
    assert_eq!(
        resource_writes(&run),
        vec![
            ("client-2".to_string(), 1, Some(2), true),
            ("client-1".to_string(), 1, Some(1), false),
        ],
        "token 2 accepted, then token 1 rejected"
    );
}

#[test]
fn delayed_write_packet_arrives_after_the_lock_moved_on() {
    let run = run("delayed-write-packet.toml");
    let writes: Vec<_> = run
        .history
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ResourceWrite { .. }))
        .collect();
    assert_eq!(writes.len(), 2);
    assert_eq!(writes[1].node, "resource");
    assert!(
        writes[1].at_us >= 92_000_000,
        "the held write lands at 92 s, not before"
    );
}

#[test]
fn unsafe_release_naive_del_lets_a_third_client_in_and_token_release_does_not() {
    let naive = run("unsafe-release.toml");
    let me = naive.result("mutual-exclusion").unwrap();
    let holders: Vec<&str> = me.witness.iter().map(|e| e.node.as_str()).collect();
    assert!(
        holders.contains(&"client-2") && holders.contains(&"client-3"),
        "{holders:?}"
    );
    let token = run("unsafe-release-token.toml");
    assert_eq!(token.verdict("mutual-exclusion"), Some(Verdict::Valid));
}

#[test]
fn redlock_clock_jump_gives_two_quorums() {
    let run = run("redlock-clock-jump.toml");
    let expired_on: Vec<&str> = run
        .history
        .events()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Expired { key } if key == "lock"))
        .map(|e| e.node.as_str())
        .collect();
    assert_eq!(
        expired_on.first(),
        Some(&"redis-3"),
        "the jump expires the key on redis-3 first"
    );
}

#[test]
fn baselines_are_valid_for_every_algorithm() {
    for algo in ["naive", "token-release", "watchdog", "redlock"] {
        let run = run(&format!("baseline-{algo}.toml"));
        for result in &run.results {
            assert_eq!(
                result.verdict,
                Verdict::Valid,
                "{algo}: {} {}",
                result.checker,
                result.explanation
            );
        }
        let accepted = resource_writes(&run).iter().filter(|w| w.3).count();
        assert_eq!(accepted, 15, "{algo}: 3 clients x 5 critical sections all wrote");
    }
}
