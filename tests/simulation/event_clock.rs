//! The event clock keeps its rule: jumping over idle ticks leaves every history exactly as
//! stepping every tick makes it — for every shipped scenario, and for generated fault plans of
//! every kind over templates with persistence, delayed restarts, replicas and the Sentinel.

use lockstep::explore::generate::{case_strategy, case_tree};
use lockstep::explore::{case_scenario, topology};
use lockstep::model::fault::FaultProfile;
use lockstep::model::fault::GENERATED_KINDS;
use lockstep::run::run_scenario;
use lockstep::scenario::standard::standard_template;
use lockstep::scenario::{load_dir, Scenario};
use std::path::Path;

fn digest(scenario: &Scenario, step_every_tick: bool) -> String {
    let scenario = Scenario {
        step_every_tick,
        ..scenario.clone()
    };
    match run_scenario(&scenario, None) {
        Ok(run) => run.digest,
        Err(e) => format!("error: {e}"),
    }
}

fn assert_same_both_ways(what: &str, scenario: &Scenario) {
    let skipping = digest(scenario, false);
    let stepping = digest(scenario, true);
    assert_eq!(skipping, stepping, "{what}: skipping idle ticks changed the history");
}

#[test]
fn every_shipped_scenario_has_the_same_history_with_and_without_skipping() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut count = 0;
    for dir in [root.clone(), root.join("libraries")] {
        for (path, scenario) in load_dir(&dir).expect("the shipped scenarios parse") {
            if scenario.lock.rust_lock.is_some() {
                continue;
            }
            assert_same_both_ways(&path.display().to_string(), &scenario);
            count += 1;
        }
    }
    assert!(count >= 40, "only {count} scenarios compared");
}

#[test]
fn generated_plans_of_every_kind_have_the_same_history_with_and_without_skipping() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut templates = vec![standard_template(
        lockstep::model::Algorithm::Redlock,
        lockstep::model::Fencing::None,
        lockstep::sim::FencingMode::Unfenced,
        1,
    )
    .expect("the standard template")];
    // Replicas and the Sentinel; a wall-clock restart delay; aof-everysec (power loss).
    for file in [
        "single-master-failover.toml",
        "redlock-crash-restart-delayed-wall-clock.toml",
        "redlock-crash-restart-power-loss.toml",
    ] {
        templates.push(Scenario::from_file(&root.join(file)).expect("the shipped file parses"));
    }
    let profile = FaultProfile {
        kinds: GENERATED_KINDS.iter().map(|k| k.to_string()).collect(),
        ..FaultProfile::default()
    };
    for template in &templates {
        let strategy = case_strategy(&topology(template), &profile);
        for seed in 0..12 {
            let case = case_tree(seed, &strategy).current();
            let scenario = case_scenario(template, &case, seed);
            assert_same_both_ways(&format!("{} seed {seed} ({case:?})", template.name), &scenario);
        }
    }
}
