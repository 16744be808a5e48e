//! The mutation suite's lock-library bug classes beyond the first fifteen (`mutants/catalogue.toml`):
//! each is killed within a small seed budget under its parent's assumption-bounded profile, by
//! the checker its class breaks, and the parents they need raise no false alarm.
//!
//! Like `tests/explore/mutants.rs`, this runs the suite through the library API with a reduced budget:
//! only these mutants and their parents, [`SEEDS`] seeds per mutant (a mutant stops at its
//! first kill; the slowest of these classes needs about 50 today) and [`PARENT_SEEDS`] per
//! parent (as in `tests/explore/mutants.rs`; `lockstep mutants` gives each parent 500), so that it stays
//! within seconds in the test profile and about a minute on 2 busy cores.

use lockstep::app::mutants::{run_suite, SuiteOptions, SuiteResult};
use std::path::Path;
use std::sync::OnceLock;

/// Seeds per mutant.
const SEEDS: u64 = 200;
/// Seeds per parent.
const PARENT_SEEDS: u64 = 40;

/// The classes: mutant name, and whether its kill must include `ownership` (the bug changes a
/// key that holds another grant's value: it overwrites, deletes or extends the next holder's
/// lock).
const CLASSES: &[(&str, bool)] = &[
    // Renewal by `SET key value XX PX ttl`: no owner check, overwrites the next holder's value.
    ("renew-set-xx", true),
    // The compare-and-PEXPIRE script's comparison inverted.
    ("extend-inverted-compare", true),
    // Renewal as GET then PEXPIRE in two round trips.
    ("extend-check-then-pexpire", true),
    // Renewal by EXPIRE in whole seconds: a 2,500 ms lease renewed for 2 s.
    ("extend-seconds-rounding", false),
    // No renewal of work longer than the TTL.
    ("renewal-disabled", false),
    // Acquire without NX.
    ("acquire-without-nx", true),
    // Acquire as GET then SET in two round trips.
    ("acquire-check-then-set", true),
    // The compare-and-delete script's comparison inverted.
    ("release-inverted-compare", true),
    // The hash lock (HSET/HINCRBY owner field) released without the HEXISTS check.
    ("hash-release-no-owner-check", true),
    // The hash lock renewed without the HEXISTS check.
    ("hash-extend-no-owner-check", true),
    // The hash lock's acquire counting an entry without checking for another holder.
    ("hash-acquire-no-free-check", false),
    // Redlock timing its rounds on the wall clock.
    ("redlock-wall-clock", false),
    // Redlock releasing by a plain DEL on every master.
    ("redlock-release-no-owner-check", true),
];

/// The suite over [`CLASSES`], run once for both tests.
fn run_classes() -> &'static SuiteResult {
    static RESULT: OnceLock<SuiteResult> = OnceLock::new();
    RESULT.get_or_init(suite)
}

fn suite() -> SuiteResult {
    let mut catalogue =
        lockstep::scenario::mutants::load(Path::new("mutants/catalogue.toml")).expect("the catalogue loads");
    assert!(catalogue.mutants.len() >= 25, "{} mutants", catalogue.mutants.len());
    catalogue
        .mutants
        .retain(|m| CLASSES.iter().any(|(name, _)| *name == m.name));
    for (name, _) in CLASSES {
        assert!(
            catalogue.mutants.iter().any(|m| m.name == *name),
            "the catalogue has no mutant `{name}`"
        );
    }
    let needed: Vec<String> = catalogue.mutants.iter().map(|m| m.parent.clone()).collect();
    catalogue.parents.retain(|p| needed.contains(&p.name));
    let options = SuiteOptions {
        seeds: SEEDS,
        parent_seeds: PARENT_SEEDS,
        jobs: 2,
        standard: false,
    };
    let result = run_suite(&catalogue, &options);
    print!("{}", result.render());
    result
}

#[test]
fn each_new_bug_class_is_killed_without_a_false_alarm_on_its_parent() {
    let result = run_classes();
    for parent in &result.parents {
        assert!(parent.is_clean(), "parent {} is not clean: {parent:?}", parent.name);
        assert_eq!(parent.false_alarms, 0, "{parent:?}");
        assert_eq!(parent.seeds, PARENT_SEEDS);
    }
    assert_eq!(result.summary.false_alarms, 0);
    for (name, ownership) in CLASSES {
        let mutant = result.mutants.iter().find(|m| m.name == *name).expect("ran");
        let kill = mutant
            .kill
            .as_ref()
            .unwrap_or_else(|| panic!("mutant {name} survived {} seeds: {mutant:?}", mutant.seeds));
        assert_eq!(mutant.seeds_to_kill, Some(kill.seed + 1), "{name}");
        assert!(!kill.checkers.is_empty(), "{name}");
        // Judged: a checker the parent is promised on that plan (ownership on every plan).
        assert_eq!(kill.how, "judged", "{name}: {kill:?}");
        if *ownership {
            assert!(
                kill.checkers.iter().any(|c| c == "ownership"),
                "{name} changes another grant's key, yet ownership did not kill it: {kill:?}"
            );
        }
    }
    assert!(result.passed());
}

#[test]
fn the_suite_reports_false_alarms_and_seeds_to_kill() {
    let result = run_classes();
    let text = result.render();
    assert!(text.contains("false alarms on the correct parents: 0 over"), "{text}");
    assert!(text.contains("seeds to kill over the"), "{text}");
    assert!(
        text.contains(&format!("mutation score {}/{}", CLASSES.len(), CLASSES.len())),
        "{text}"
    );
    let markdown = result.render_markdown();
    assert!(
        markdown.contains("| mutant | parent | killed at seed | seeds to kill |"),
        "{markdown}"
    );
    for (name, _) in CLASSES {
        assert!(markdown.contains(&format!("| `{name}` |")), "{markdown}");
    }
    let json = serde_json::to_value(result).expect("serialises");
    assert_eq!(json["summary"]["false_alarms"], 0);
    assert_eq!(json["summary"]["killed"], CLASSES.len());
    assert!(json["summary"]["seeds_to_kill_max"].as_u64().is_some());
    for mutant in json["mutants"].as_array().expect("mutants") {
        assert!(mutant["seeds_to_kill"].as_u64().is_some(), "{mutant}");
        assert!(mutant["source"].as_str().is_some_and(|s| !s.is_empty()), "{mutant}");
    }
}
