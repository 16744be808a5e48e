//! `junit.xml`: one test suite per scenario run and per exploration, one test case per checker.
//!
//! A check whose expectation held is a success; one whose expectation failed is a `failure`
//! carrying the explanation as its message and the witness (one line per event) and the replay
//! command as its text, so CI systems show them natively. A check without an expectation is
//! `skipped` (nothing to judge; its verdict in the message and `system-out`); a scenario the
//! world could not run, or an exploration with seeds that could not be judged, is an `error`.
//!
//! Every test case carries a `time`: the run's wall time shared out over its checks (the
//! checkers judge one history, so a scenario's time is its run's), an exploration's wall time
//! likewise.

use super::{Report, Status};
use crate::history::Step;
use lockstep_sim::Event;
use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// The witness as text, one event a line: true time, node, what happened.
pub(crate) fn witness_lines(witness: &[Event]) -> Vec<String> {
    witness
        .iter()
        .map(|e| {
            let what = crate::report::narrative::line(&Step::of(e).0).unwrap_or_else(|| e.canonical_json());
            format!("#{:<5} {:>9.3} s  {:<10} {}", e.seq, e.at_us as f64 / 1e6, e.node, what)
        })
        .collect()
}

fn case(name: &str, classname: &str, status: Status, message: &str, detail: String) -> TestCase {
    let status = match status {
        Status::Pass => TestCaseStatus::success(),
        Status::Unchecked => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("no expectation stated: {message}"));
            s.set_type("no-expectation");
            s
        }
        Status::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(message);
            s.set_type("unexpected-verdict");
            s.set_description(detail.clone());
            s
        }
        Status::Error => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(message);
            s.set_type("error");
            s.set_description(detail.clone());
            s
        }
    };
    let mut case = TestCase::new(name, status);
    case.set_classname(classname);
    case
}

/// The JUnit XML of `report`.
pub fn junit_xml(report: &Report) -> Result<String, String> {
    let mut junit = quick_junit::Report::new("lockstep");
    junit.set_time(secs(report.wall_s.max(0.0)));
    for s in &report.scenarios {
        let mut suite = TestSuite::new(format!("scenario {}", s.name));
        suite.add_property(Property::new("file", s.file.clone()));
        suite.add_property(Property::new("seed", s.seed.to_string()));
        if let Some(h) = &s.history {
            suite.add_property(Property::new("history_digest", h.digest.clone()));
        }
        suite.set_time(secs(s.wall_ms.max(0.0) / 1e3));
        let classname = format!("lockstep.scenario.{}", s.name);
        let per_case = secs(s.wall_ms.max(0.0) / 1e3 / s.checks.len().max(1) as f64);
        if let Some(error) = &s.error {
            suite.add_test_case(case(
                "run",
                &classname,
                Status::Error,
                error,
                format!("replay: {}", s.replay),
            ));
        }
        for c in &s.checks {
            let message = match c.expected {
                Some(e) if c.status == Status::Fail => format!(
                    "{} is {} but the scenario expects {}: {}",
                    c.checker,
                    c.verdict.name(),
                    e.name(),
                    c.explanation
                ),
                _ => c.explanation.clone(),
            };
            let mut detail = witness_lines(&c.witness).join("\n");
            detail.push_str(&format!("\nreplay: {}", s.replay));
            let mut tc = case(&c.checker, &classname, c.status, &message, detail);
            tc.set_time(per_case);
            tc.set_system_out(format!(
                "verdict {} (expected {}): {}",
                c.verdict.name(),
                c.expected.map_or("nothing", |e| e.name()),
                c.explanation
            ));
            suite.add_test_case(tc);
        }
        junit.add_test_suite(suite);
    }
    for e in &report.explorations {
        let mut suite = TestSuite::new(format!("exploration {}", e.name));
        suite.add_property(Property::new("file", e.file.clone()));
        suite.add_property(Property::new("seeds", format!("{}..{}", e.seeds.start, e.seeds.end)));
        suite.add_property(Property::new("outcome_digest", e.outcome_digest.clone()));
        suite.set_time(secs(e.summary.throughput.wall_s.max(0.0)));
        let classname = format!("lockstep.exploration.{}", e.name);
        let per_case = secs(e.summary.throughput.wall_s.max(0.0) / e.checks.len().max(1) as f64);
        if e.summary.errors > 0 || !e.summary.determinism_failures.is_empty() {
            let mut detail: Vec<String> = e
                .summary
                .first_errors
                .iter()
                .map(|x| format!("seed {}: {}", x.seed, x.message))
                .collect();
            detail.extend(
                e.summary
                    .determinism_failures
                    .iter()
                    .map(|d| format!("seed {} is not deterministic: {}", d.seed, d.first_difference)),
            );
            suite.add_test_case(case(
                "seeds",
                &classname,
                Status::Error,
                &format!(
                    "{} seeds could not be judged, {} determinism failures",
                    e.summary.errors,
                    e.summary.determinism_failures.len()
                ),
                detail.join("\n"),
            ));
        }
        if let Some(d) = &e.summary.differential {
            // The differential oracle is its own test: seeds where only the lock under test
            // fails (or where the reference could not run) fail it, whatever each checker expects.
            let status = if d.reference_errors > 0 {
                Status::Error
            } else if d.seeds_only_subject > 0 {
                Status::Fail
            } else {
                Status::Pass
            };
            let seeds: Vec<String> = d.first_only_subject.iter().map(|f| f.seed.to_string()).collect();
            suite.add_test_case(case(
                &format!("against {}", d.reference),
                &classname,
                status,
                &format!(
                    "{} seeds where only {} fails, {} seeds the reference could not run",
                    d.seeds_only_subject, e.algorithm, d.reference_errors
                ),
                format!("first such seeds: {}", seeds.join(", ")),
            ));
        }
        for c in &e.checks {
            let mut detail = String::new();
            if let Some(f) = &c.first_failing {
                detail.push_str(&format!(
                    "first failing seed {}: checkers {}, fault kinds {}, {} faults\n",
                    f.seed,
                    f.checkers.join(", "),
                    f.fault_kinds.join(", "),
                    f.faults
                ));
            }
            if let Some(r) = &c.replay {
                detail.push_str(&format!("replay: {r}"));
            }
            let message = match c.expected {
                Some(x) if c.status == Status::Fail => {
                    format!("{} expected {}: {}", c.checker, x.name(), c.explanation)
                }
                _ => c.explanation.clone(),
            };
            let mut tc = case(&c.checker, &classname, c.status, &message, detail);
            tc.set_time(per_case);
            tc.set_system_out(format!(
                "{} invalid, {} unknown of {} seeds (expected {})",
                c.invalid_seeds,
                c.unknown_seeds,
                e.summary.seeds_run,
                c.expected.map_or("nothing", |x| x.name())
            ));
            suite.add_test_case(tc);
        }
        junit.add_test_suite(suite);
    }
    junit.to_string().map_err(|e| format!("writing junit.xml: {e}"))
}

/// Seconds as a duration: negative, NaN or too large (a crafted report.json) is zero, never a
/// panic.
fn secs(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or_default()
}
