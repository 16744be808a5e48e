//! Issue 42's judgement of bug seeds: what `lockstep explore` shrinks and how it classifies it.
//!
//! - The first implementation-bug seed is the one shrunk, for the checker nearest its cause
//!   (a promised one), with default flags and `--against` the safe twin alike; the others are
//!   listed.
//! - The default draw includes every fault kind the deployment can suffer: a replica's clock
//!   step before a failover is drawn for a template with replicas, without `--kinds`.
//! - A renewing lock is judged on its promise to stop at a failed renewal under heavy loss: the
//!   lock that keeps working is flagged, its abort twin stays clean.
//! - What outlives an operation is aimed at: a late release landing in the holder's next grant,
//!   a renewal timer due with the release in one pause.
//! - Every distinct bug is reported (issue 50): a lock with two defects gets a counterexample
//!   for each, its fixed twin none; without a bug, the violations of the scenario's own story
//!   are shrunk first (a replica-clock failover, not the crash an earlier seed shows).
//! - Issue 50: a renewal never armed for a grant a retry took, and a fencing token taken by an
//!   `INCR` before the `SET NX` (two steps a delay under the request timeout pulls apart), are
//!   found with default flags; their twins are not flagged.

use lockstep::explore::assumptions::Assumptions;
use lockstep::explore::case_scenario;
use lockstep::explore::generate::ExploreCase;
use lockstep::explore::kinds::GenFault;
use lockstep::explore::kinds::Loss;
use lockstep::model::Verdict;
use lockstep::run::guard::run_guarded;
use lockstep::scenario::Scenario;

use crate::common;
use common::lockstep;

/// `explore ARGS --json --shrink 1 --jobs 2`: the document.
fn explore_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["explore"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--shrink", "1", "--json", "--jobs", "2"]);
    let (_, out, err) = lockstep(&all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"))
}

#[test]
fn the_first_bug_seed_is_shrunk_for_its_cause_by_default_and_against_the_safe_twin() {
    let bug = "scenarios/bug-release-no-owner-check.toml";
    let safe = "scenarios/bug-release-no-owner-check-safe.toml";
    for against in [None, Some(safe)] {
        let mut args = vec![bug, "--seeds", "30"];
        args.extend(against.iter().flat_map(|s| ["--against", s]));
        let doc = explore_json(&args);
        let summary = &doc["summary"];
        let bugs = match against {
            None => &summary["classified"]["first_bugs"],
            Some(_) => &summary["differential"]["first_bugs"],
        };
        let first = &bugs[0];
        assert!(first["seed"].is_u64(), "{against:?}: no bug seed in {summary}");
        let cx = &doc["counterexamples"][0];
        assert_eq!(
            cx["seed"], first["seed"],
            "{against:?}: the first bug seed is the one shrunk"
        );
        // The cause of a release without an ownership check: another grant's key deleted.
        assert_eq!(cx["checker"], "ownership", "{against:?}: {cx}");
        let promised: Vec<&str> = first["checkers"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c.as_str())
            .collect();
        assert!(promised.contains(&"ownership"), "{promised:?}");
        let toml = cx["toml"].as_str().unwrap();
        assert!(toml.contains("IMPLEMENTATION BUG"), "{toml}");
    }
    // The text says how many seeds it took.
    let (_, out, _) = lockstep(&["explore", bug, "--seeds", "30", "--shrink", "0", "--jobs", "2"]);
    let doc = explore_json(&[bug, "--seeds", "30"]);
    let first = doc["summary"]["classified"]["first_bugs"][0]["seed"].as_u64().unwrap();
    assert!(
        out.contains(&format!(
            "seeds to the first implementation bug: {} (seed {first})",
            first + 1
        )),
        "{out}"
    );
}

/// The first implementation-bug seed of `explore ARGS --seed-range 3..4` and its promised
/// checkers violated (none: no bug seed).
fn bug_at_seed_3(args: &[&str]) -> Option<(u64, Vec<String>)> {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--seed-range", "3..4"]);
    let doc = explore_json_unshrunk(&all);
    let first = &doc["summary"]["classified"]["first_bugs"][0];
    let checkers = first["checkers"]
        .as_array()?
        .iter()
        .filter_map(|c| c.as_str().map(String::from))
        .collect();
    Some((first["seed"].as_u64()?, checkers))
}

/// `explore ARGS --json --shrink 0 --jobs 1`: the document.
fn explore_json_unshrunk(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["explore"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--shrink", "0", "--json", "--jobs", "1"]);
    let (_, out, err) = lockstep(&all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"))
}

/// Issue 42: what outlives an operation, aimed at by default. Two pairs once not found within
/// 100 seeds are found at seed 3 (4 seeds; measured over 100 seeds in the closing note): a
/// release of a value-reusing lock delayed until the holder's next grant, which it deletes
/// (its own file; `ownership`), and a renewal timer due with the release in one pause, whose
/// renewal reports the released lock lost (`--lock` on the standard template;
/// `spurious-loss`). Their safe twins on the same seed: no implementation bug.
#[test]
fn a_late_release_and_a_renewal_racing_the_release_are_found_at_seed_3_and_not_in_their_twins() {
    let pairs = [
        (vec!["scenarios/bug-value-reuse-release-retry.toml"], "ownership"),
        (
            vec!["--lock", "scenarios/bug-renewal-races-release.toml"],
            "spurious-loss",
        ),
    ];
    for (args, cause) in pairs {
        let (seed, checkers) = bug_at_seed_3(&args).unwrap_or_else(|| panic!("{args:?}: no bug at seed 3"));
        assert_eq!(seed, 3);
        assert!(checkers.iter().any(|c| c == cause), "{args:?}: {checkers:?}");
        let safe: Vec<String> = args.iter().map(|a| a.replace(".toml", "-safe.toml")).collect();
        let safe: Vec<&str> = safe.iter().map(String::as_str).collect();
        assert_eq!(bug_at_seed_3(&safe), None, "{safe:?}");
    }
}

#[test]
fn a_replica_clock_failover_is_drawn_by_default_for_a_template_with_replicas() {
    let doc = explore_json(&["scenarios/replica-clock-failover.toml", "--seeds", "60"]);
    let summary = &doc["summary"];
    let kinds = &summary["fault_kinds"]["replica-clock"];
    assert!(kinds["violating"].as_u64().unwrap_or(0) > 0, "{summary}");
    // The story of the scenario: two holders at once after the promoted replica expired the key.
    let failing = summary["first_failing"].as_array().unwrap();
    assert!(
        failing.iter().any(|f| {
            let has = |field: &str, what: &str| f[field].as_array().unwrap().iter().any(|v| v == what);
            has("fault_kinds", "replica-clock") && has("checkers", "mutual-exclusion")
        }),
        "{failing:?}"
    );
}

/// The renewal-failure-ignored template (or its safe twin) with its faults replaced by 85 % loss
/// on the holder's link to the master from 1 s on; its verdicts and the checkers its lock
/// promises under that plan.
fn under_heavy_loss(file: &str, seed: u64) -> (Vec<(String, Verdict)>, Vec<String>) {
    let mut template = Scenario::from_file(std::path::Path::new(file)).unwrap();
    template.faults = Default::default();
    template.expect.clear();
    let case = ExploreCase {
        clients: 2,
        faults: vec![GenFault::from(Loss {
            at_ms: 1_000,
            a: "client-1".into(),
            b: "redis-1".into(),
            rate_ppm: 850_000,
        })],
        shape: None,
    };
    let scenario = case_scenario(&template, &case, seed);
    let run = run_guarded(&scenario, None).expect("runs");
    let a = Assumptions::of(&scenario);
    let promised = a.promised(&a.classify(&case)).iter().map(|c| c.to_string()).collect();
    (
        run.results.iter().map(|r| (r.checker.clone(), r.verdict)).collect(),
        promised,
    )
}

#[test]
fn a_watchdog_is_judged_on_its_promise_to_stop_under_heavy_loss() {
    for seed in 1..4 {
        let (verdicts, promised) = under_heavy_loss("scenarios/bug-renewal-failure-ignored.toml", seed);
        let bugs: Vec<&String> = verdicts
            .iter()
            .filter(|(c, v)| *v == Verdict::Invalid && promised.contains(c))
            .map(|(c, _)| c)
            .collect();
        assert!(
            bugs.iter().any(|c| *c == "mutual-exclusion"),
            "seed {seed}: {verdicts:?}, promised {promised:?}"
        );
        let (verdicts, _) = under_heavy_loss("scenarios/bug-renewal-failure-ignored-safe.toml", seed);
        assert!(
            verdicts.iter().all(|(_, v)| *v != Verdict::Invalid),
            "seed {seed}: the abort twin {verdicts:?}"
        );
    }
}

/// `explore ARGS --json --jobs 2`: the document.
fn explore_doc(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["explore"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "--jobs", "2"]);
    let (_, out, err) = lockstep(&all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"))
}

/// The shrunk groups of a `--json` document: `(checker, ops, fault kinds)`, with each one's
/// counterexample.
fn shrunk_groups(doc: &serde_json::Value) -> Vec<(String, Vec<String>, Vec<String>, serde_json::Value)> {
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    doc["distinct"]["groups"]
        .as_array()
        .unwrap_or_else(|| panic!("no distinct groups: {doc}"))
        .iter()
        .filter(|g| g["shrunk"] == true)
        .map(|g| {
            let index = g["counterexample"].as_u64().unwrap() as usize;
            (
                g["checker"].as_str().unwrap().to_string(),
                strings(&g["ops"]),
                strings(&g["fault_kinds"]),
                doc["counterexamples"][index].clone(),
            )
        })
        .collect()
}

#[test]
fn a_lock_with_two_defects_reports_both_and_its_twin_none() {
    let doc = explore_doc(&["scenarios/bug-two-defects.toml", "--seeds", "150"]);
    assert_eq!(doc["distinct"]["implementation_bugs"], true, "{}", doc["distinct"]);
    let groups = shrunk_groups(&doc);
    // The renewal that re-creates the expired key: ownership, sent by `extend`.
    let renewal = groups
        .iter()
        .find(|(c, ops, _, _)| c == "ownership" && ops == &["extend"])
        .unwrap_or_else(|| panic!("no extend group: {groups:?}"));
    // The plain DEL: ownership, sent by a release (or an acquisition's clean-up release).
    let delete = groups
        .iter()
        .find(|(c, ops, _, _)| c == "ownership" && ops.iter().all(|o| o == "release" || o == "acquire"))
        .unwrap_or_else(|| panic!("no release group: {groups:?}"));
    for (_, _, _, cx) in [renewal, delete] {
        assert_eq!(cx["checker"], "ownership", "{cx}");
        let toml = cx["toml"].as_str().unwrap();
        assert!(toml.contains("IMPLEMENTATION BUG"), "{toml}");
    }
    // Replayed, the renewal's counterexample shows the re-created key.
    let file = std::env::temp_dir().join(format!("lockstep-two-defects-{}.toml", std::process::id()));
    std::fs::write(&file, renewal.3["toml"].as_str().unwrap()).unwrap();
    let (code, out, _) = lockstep(&["run", file.to_str().unwrap()]);
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("re-created the key"), "{out}");
    // The summary counts every class, for merges and the CI report.
    let classes = doc["summary"]["bug_groups"]["classes"].as_array().unwrap();
    assert!(classes.len() >= 2, "{classes:?}");
    // The fixed twin: no implementation-bug class at all.
    let twin = explore_doc(&["scenarios/bug-two-defects-safe.toml", "--seeds", "150", "--shrink", "0"]);
    assert!(
        twin["summary"]["bug_groups"].is_null(),
        "{}",
        twin["summary"]["bug_groups"]
    );
}

#[test]
fn without_a_bug_the_scenarios_own_story_is_shrunk_first() {
    // replica-clock-failover's seeds also violate under crashes without persistence (the lease's
    // limit, like the replica's clock): its own story, a replica-clock failover, comes first.
    let doc = explore_doc(&[
        "scenarios/replica-clock-failover.toml",
        "--seeds",
        "75",
        "--shrink",
        "2",
    ]);
    assert_eq!(doc["distinct"]["implementation_bugs"], false, "{}", doc["distinct"]);
    let groups = shrunk_groups(&doc);
    let (_, _, kinds, cx) = groups.first().unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(kinds, &["replica-clock"], "{groups:?}");
    let toml = cx["toml"].as_str().unwrap();
    assert!(
        toml.contains("redis-1-replica-1") && toml.contains("kind = \"failover\""),
        "{toml}"
    );
    // The groups past the first are other fault kinds, not the same one again.
    let mut seen: Vec<(&String, &Vec<String>, &Vec<String>)> = groups.iter().map(|(c, o, k, _)| (c, o, k)).collect();
    seen.dedup();
    assert_eq!(seen.len(), groups.len(), "{groups:?}");
}

/// Issue 50, items 3 and 4: two shipped pairs found with default flags within a dozen seeds (the
/// renewal lapse at seed 3, the two-step token at seed 10 when measured), each first bug seed
/// shrunk for its cause; their twins show no implementation bug on the same seeds.
#[test]
fn a_renewal_lapse_on_a_retried_grant_and_a_two_step_token_are_found_by_default_and_not_in_their_twins() {
    for (bug, cause) in [
        ("scenarios/bug-renewal-lapse-retried-grant.toml", "mutual-exclusion"),
        ("scenarios/bug-token-two-step.toml", "token-order"),
    ] {
        let doc = explore_json(&[bug, "--seeds", "12"]);
        let summary = &doc["summary"];
        let first = &summary["classified"]["first_bugs"][0];
        assert!(first["seed"].is_u64(), "{bug}: no implementation bug in {summary}");
        let checkers: Vec<&str> = first["checkers"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c.as_str())
            .collect();
        assert!(checkers.contains(&cause), "{bug}: {checkers:?}");
        let cx = &doc["counterexamples"][0];
        assert_eq!(cx["seed"], first["seed"], "{bug}: the first bug seed is shrunk");
        assert!(
            cx["toml"].as_str().unwrap().contains("IMPLEMENTATION BUG"),
            "{bug}: {cx}"
        );
        let safe = bug.replace(".toml", "-safe.toml");
        let (_, out, err) = lockstep(&[
            "explore", &safe, "--seeds", "12", "--shrink", "0", "--json", "--jobs", "2",
        ]);
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        let bugs = &doc["summary"]["classified"]["first_bugs"];
        assert!(bugs.as_array().is_none_or(|b| b.is_empty()), "{safe}: {bugs}");
    }
}

/// Issue 50 item 2: a lock whose acquisition is `SET NX` then `PEXPIRE` is found by default
/// (seed 23, the 24th seed run; measured over 300 seeds in the closing note): a lossy link cuts
/// client-2 off between its two steps, its acquisition fails without cleaning up, and its key —
/// with no TTL — locks the others out for the rest of the run. The counterexample is shrunk for
/// `liveness`, promised under the plan; the twin (`SET NX PX`) has no implementation bug on the
/// same seeds.
#[test]
fn a_key_left_without_ttl_is_found_by_default_for_liveness_and_not_in_its_twin() {
    let bug = "scenarios/bug-lockout-no-ttl.toml";
    let doc = explore_json(&[bug, "--seed-range", "20..24"]);
    let first = &doc["summary"]["classified"]["first_bugs"][0];
    assert_eq!(first["seed"], 23, "{}", doc["summary"]);
    assert_eq!(first["checkers"], serde_json::json!(["liveness"]));
    let cx = &doc["counterexamples"][0];
    assert_eq!(cx["checker"], "liveness", "{cx}");
    let toml = cx["toml"].as_str().unwrap();
    assert!(toml.contains("script promises liveness under this plan"), "{toml}");
    let safe = "scenarios/bug-lockout-no-ttl-safe.toml";
    let doc = explore_json_unshrunk(&[safe, "--seeds", "30"]);
    assert!(
        doc["summary"]["classified"]["first_bugs"]
            .as_array()
            .is_none_or(|b| b.is_empty()),
        "{}",
        doc["summary"]
    );
}
