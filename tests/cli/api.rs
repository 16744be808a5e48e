//! The public API a Rust team compiles against stays put: the guide's harness example compiles
//! as written (its body is checked to be this file's, word for word), a lock built through a
//! [`LockFactory`] runs through the harness and `run_with_lock`, and the paths that moved still
//! resolve (deprecated, see CHANGELOG.md). A removal or a rename fails this build, not a user's.

use lockstep::prelude::*;
use std::path::Path;

use crate::harness::MyLock;

/// The guide's example (docs/test-your-lock.md, "Put your Rust lock through the gate"), compiled,
/// not run (500 seeds belong to a user's suite, not to this one). Between the markers, the
/// guide's lines exactly.
#[allow(dead_code, clippy::redundant_closure)]
#[rustfmt::skip]
fn my_lock_passes_the_gate() {
    // GUIDE BEGIN
    Harness::new("my-lock", |env| MyLock::new(env)) // your LockClient, named everywhere
        .scenarios("tests/scenarios")               // each file against its [expect] and [explore]
        .fenced()                                   // the standard template with INCR fencing
        .explore_standard(500)                      // 500 seeds of generated faults, shrunk on failure
        .report("target/lockstep-report")           // the `lockstep ci --report` directory
        .run()
        .expect("the harness runs")
        .assert_safe();                             // fails the test with a readable message
    // GUIDE END
}

/// Where the harness example is: the guide's "Test your lock" chapter.
const GUIDE: &str = "docs/test-your-lock.md";

/// The lines of the guide's Rust block whose function is `fn_name`, its body only.
fn guide_body(fn_name: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(GUIDE)).expect(GUIDE);
    let lines = readme
        .lines()
        .skip_while(|l| !l.contains(&format!("fn {fn_name}()")))
        .skip(1);
    let body: Vec<String> = lines.take_while(|l| l.trim() != "}").map(words).collect();
    assert!(!body.is_empty(), "{GUIDE} has no `fn {fn_name}()` block");
    body
}

fn this_body() -> Vec<String> {
    let source = include_str!("api.rs");
    source
        .lines()
        .skip_while(|l| l.trim() != "// GUIDE BEGIN")
        .skip(1)
        .take_while(|l| l.trim() != "// GUIDE END")
        .map(words)
        .collect()
}

/// A line with its runs of blanks made one space (alignment is not content).
fn words(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_guides_harness_example_compiles_as_written() {
    assert_eq!(
        guide_body("my_lock_passes_the_gate"),
        this_body(),
        "the harness example of docs/test-your-lock.md and the compiled copy in tests/cli/api.rs differ: change both"
    );
}

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
/// (compiled, not run).
#[allow(dead_code)]
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
}

/// docs/harness.md's example (issue 42: explore options, the lock's declarations), compiled, not
/// run. Between the markers, the document's Rust block exactly.
#[allow(dead_code, clippy::redundant_closure)]
#[rustfmt::skip]
fn harness_doc_example() {
    // HARNESS DOC BEGIN
    use lockstep::prelude::*;
    use lockstep::harness::{Bounds, LockTokens, PlacementStrategy};

    Harness::new("my-lock", |env| MyLock::new(env))
        .tokens(LockTokens::Counter)          // its grants carry its own fencing tokens
        .drift_factor(0.01)                   // its validity subtracts 0.01 × TTL + 2 ms
        .kinds(&["crash", "pause"])           // explore --kinds
        .faults_max(2)                        // explore --faults-max
        .strategy(PlacementStrategy::Random)  // explore --strategy
        .time_limit_s(60)                     // explore --time-limit
        .explore_standard(1000)
        .run()
        .expect("the harness runs")
        .assert_safe();
    // HARNESS DOC END
    let _ = Bounds::default();
}

/// The issue-42 harness API, every signature a user compiles against (compiled, not run).
#[allow(dead_code)]
fn issue_42_harness_api(file: &Path) -> Result<(), HarnessError> {
    use lockstep::harness::{
        default_counterexample_dir, Bounds, ExhaustiveResult, Gate, LockTokens, Overrides, PlacementStrategy,
        SearchArgs,
    };
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

#[test]
fn the_harness_doc_example_compiles_as_written() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/harness.md"))
        .expect("docs/harness.md");
    let block: Vec<String> = doc
        .lines()
        .skip_while(|l| l.trim() != "```rust")
        .skip(1)
        .take_while(|l| l.trim() != "```")
        .map(words)
        .filter(|l| !l.is_empty())
        .collect();
    let compiled: Vec<String> = include_str!("api.rs")
        .lines()
        .skip_while(|l| l.trim() != "// HARNESS DOC BEGIN")
        .skip(1)
        .take_while(|l| l.trim() != "// HARNESS DOC END")
        .map(words)
        .filter(|l| !l.is_empty())
        .collect();
    assert!(!block.is_empty(), "docs/harness.md has no Rust block");
    assert_eq!(
        block, compiled,
        "docs/harness.md's example and the compiled copy in tests/cli/api.rs differ: change both"
    );
}
