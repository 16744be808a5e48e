//! The public API a Rust team compiles against stays put (the guide's harness page is built as a
//! crate of its own by `tests/cli/harness.rs`), a lock built through a
//! [`LockFactory`] runs through the harness and `run_with_lock`, and the paths that moved still
//! resolve (deprecated, see CHANGELOG.md). A removal or a rename fails this build, not a user's.

use lockstep::prelude::*;
use std::path::Path;

use crate::harness::MyLock;

fn scenario_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/kleppmann-gc-pause-fenced.toml")
}

#[test]
fn a_lock_built_by_a_factory_runs_through_the_harness_and_run_with_lock() {
    let run = Harness::with_factory("factory-lock", || lock_factory(MyLock::new))
        .scenarios(scenario_file())
        .run()
        .expect("the harness runs");
    assert_eq!(run.report.scenarios.len(), 1);
    assert_eq!(run.report.scenarios[0].algorithm, "factory-lock");
    assert!(run.passed(), "{}", run.message());

    let scenario = Scenario::from_file(&scenario_file()).expect("the scenario loads");
    let factory: LockFactory = lock_factory(MyLock::new);
    let first = run_with_lock(&scenario, Some(3), factory.clone()).expect("runs");
    let again = run_with_lock(&scenario, Some(3), factory).expect("runs");
    assert_eq!(
        first.digest, again.digest,
        "a factory-built lock is as deterministic as any"
    );
}

#[test]
#[allow(deprecated)]
fn moved_items_still_resolve_where_they_were() {
    // `lockstep::timeline` became `lockstep::report::narrative`: the old path still resolves
    // (each item deprecated on its own, so a caller is warned) and tells the same timeline.
    let old: fn(&lockstep::history::OpHistory<'_>) -> String = lockstep::timeline::text;
    let new: fn(&lockstep::history::OpHistory<'_>) -> String = lockstep::report::narrative::text;
    let scenario = Scenario::from_file(&scenario_file()).expect("the scenario loads");
    let run = lockstep::run::run_scenario(&scenario, Some(3)).expect("runs");
    let ops = lockstep::history::OpHistory::new(&run.history);
    assert_eq!(old(&ops), new(&ops));
    assert!(!new(&ops).is_empty());
    // In the prelude: what the harness's gate, tokens and script locks are declared with.
    let _: (Option<Gate>, Option<LockTokens>, Option<RenewalAfterRelease>) = (None, None, None);
    // In the prelude: what a failed automatic extension does.
    assert_eq!(ExtendFailure::default(), ExtendFailure::Abort);
    // `Fault::check` became `Fault::validate` (issue 54): the old name still compiles, and warns.
    let old: fn(&lockstep_sim::Fault, &dyn lockstep_sim::FaultTargets) -> Result<(), lockstep_sim::FaultError> =
        lockstep_sim::Fault::check;
    let new: fn(&lockstep_sim::Fault, &dyn lockstep_sim::FaultTargets) -> Result<(), lockstep_sim::FaultError> =
        lockstep_sim::Fault::validate;
    let _ = (old, new);
}

/// lockstep's Redis and the history's vocabulary moved to crates of their own (issue 54:
/// `lockstep-redis`, `lockstep-history`); every path of `lockstep_sim` they had still resolves
/// (compiled, not run; deprecated, each item on its own, until 0.3.0).
#[allow(dead_code, deprecated)]
fn the_paths_of_lockstep_sim_before_the_crate_split_resolve() {
    use lockstep_sim::redis::server::{RedisHost, RedisServer};
    use lockstep_sim::redis::{ClientSession, CommandReader, EngineConfig, RedisEngine, Reply};
    fn served_by<H: RedisHost>(_: Option<&RedisServer<H>>) {}
    served_by::<lockstep_sim::master::NodeHost>(None);
    let _: Option<(ClientSession, CommandReader, RedisEngine, Reply)> = None;
    let _ = EngineConfig::default();
    let _: Option<lockstep_sim::replication::Replication> = None;
    let _: Option<lockstep_sim::master::NodeHost> = None;
    let _: Option<lockstep_sim::directory::Directory> = None;
    let _: Option<(lockstep_sim::history::KeyEffect, lockstep_sim::history::EventKind)> = None;
    let _: Option<(lockstep_sim::fault::Fault, lockstep_sim::role::Role)> = None;
    let _: fn(&str) -> Result<(), lockstep_sim::lua_syntax::LuaSyntaxError> =
        lockstep_sim::lua_syntax::check_lua_syntax;
    let _ = lockstep_sim::stop::STOPPED;
    let _ = lockstep_sim::clock::check_drift_ppm(0);
    let _ = lockstep_sim::clock::MAX_DRIFT_PPM;
    // The items of lockstep that moved: each old path is an alias or wrapper of the new item.
    let verdict: lockstep::checker::Verdict = lockstep::model::Verdict::Valid;
    let outcome: Option<lockstep::app::Outcome> = None::<lockstep::run::expect::Outcome>;
    let template: fn(
        lockstep::model::Algorithm,
        lockstep::model::Fencing,
        lockstep_sim::FencingMode,
        u64,
    ) -> Result<lockstep::scenario::Scenario, lockstep::scenario::ScenarioError> = lockstep::explore::standard_template;
    let role: lockstep_sim::role::Role = lockstep_sim::Role::Master;
    let _ = (verdict, outcome, template, role);
}

/// The issue-42 harness API, every signature a user compiles against (compiled, not run).
#[allow(dead_code)]
fn issue_42_harness_api(file: &Path) -> Result<(), HarnessError> {
    use lockstep::harness::{
        default_counterexample_dir, Bounds, ExhaustiveResult, Gate, LockTokens, Overrides, SearchArgs,
    };
    use lockstep::model::fault::PlacementStrategy;
    let dir: std::path::PathBuf = default_counterexample_dir("my-lock");
    let run: HarnessRun = Harness::new("my-lock", MyLock::new)
        .tokens(LockTokens::Durable)
        .drift_factor(0.0)
        .options(Overrides {
            kinds: Some(vec!["pause".into()]),
            ..Overrides::default()
        })
        .search(SearchArgs::default())
        .exhaustive(Bounds::default())
        .gate(Gate::Classification)
        .counterexamples(dir)
        .against_file(file)
        .explore_standard(1)
        .strategy(PlacementStrategy::Mixed)
        .run()?;
    let _: &Vec<ExhaustiveResult> = &run.exhaustive;
    Ok(())
}
