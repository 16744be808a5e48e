//! The analysis of a history (typed history, checkers) reproduces the committed example report:
//! every shipped scenario's checker verdicts, explanations and witnesses, not only its history
//! digest (tests/cli/report.rs), so that a change made for speed cannot change what a checker says.
//! Regenerate `reports/example/` when a checker's output is meant to change.

use lockstep::report::Report;
use lockstep::run::run_scenario;
use lockstep::scenario::Scenario;
use std::path::Path;

#[test]
fn every_shipped_scenarios_checker_results_match_the_committed_example_report() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("reports/example/report.json")).expect("committed");
    let example = Report::from_json(&text, "reports/example/report.json").expect("a report");
    let mut compared = 0;
    for s in &example.scenarios {
        let scenario = Scenario::from_file(&root.join(&s.file)).expect("a shipped scenario");
        let run = run_scenario(&scenario, Some(s.seed)).expect("it runs");
        assert_eq!(run.results.len(), s.checks.len(), "{}", s.name);
        for (now, committed) in run.results.iter().zip(&s.checks) {
            let at = format!("{} (seed {}), {}", s.name, s.seed, committed.checker);
            assert_eq!(now.checker, committed.checker, "{at}");
            assert_eq!(now.verdict, committed.verdict, "{at}");
            assert_eq!(now.explanation, committed.explanation, "{at}");
            assert_eq!(now.witness, committed.witness, "{at}");
            compared += 1;
        }
    }
    assert!(compared >= 100, "only {compared} results compared");
}
