//! Issue 53's acceptance, in small: a shipped bug pair explored with default flags (guided,
//! `mixed`) as 4 shards, merged, finds what one run of the same seeds finds — implementation-bug
//! groups with the same causes (the checker nearest the cause and the lock operations of its
//! witness), a first bug seed, the seeds to it over the whole range — and the safe twin's shards
//! find no implementation bug, as its one run does. The release-build table over every pair and
//! 300 seeds is the report; this holds a few pairs to it on fewer seeds.

use lockstep::app::exploration::{explore_config, Locks, Overrides, DEFAULT_STRATEGY};
use lockstep::app::identity::stamp_run;
use lockstep::explore::summary::ExploreSummary;
use lockstep::explore::{explore_with, LockRef, Shard};
use lockstep::scenario::Scenario;
use std::collections::BTreeSet;

/// The default exploration of `file` over `0..seeds`, shard `shard` of it when given, stamped
/// with its run and span as `lockstep explore --summary` writes it.
fn explore(file: &str, seeds: u64, shard: Option<Shard>) -> ExploreSummary {
    explore_on(file, seeds, shard, 2)
}

/// [`explore`] on `jobs` workers.
fn explore_on(file: &str, seeds: u64, shard: Option<Shard>, jobs: usize) -> ExploreSummary {
    let scenario = Scenario::from_file(std::path::Path::new(file)).unwrap();
    let overrides = Overrides {
        seeds: Some(seeds),
        shard,
        jobs: Some(jobs),
        ..Overrides::default()
    };
    let (template, config) = explore_config(&scenario, &overrides).unwrap();
    assert_eq!(
        config.profile.strategy, DEFAULT_STRATEGY,
        "{file}: shards explore as the whole run"
    );
    let mut summary = explore_with(&template, &config, LockRef::Template, None, &mut |_| {});
    stamp_run(&mut summary, &template, &config, &Locks::default());
    summary
}

/// The causes of the implementation-bug groups: the checker nearest each group's cause. (A
/// group's fault kinds are those of its plans as drawn, and its operations those of its witness:
/// two explorations of different plans find the same defect through other faults and, now and
/// then, one more operation.)
fn causes(summary: &ExploreSummary) -> BTreeSet<String> {
    summary
        .bug_groups
        .classes
        .iter()
        .map(|c| c.class.checker.clone())
        .collect()
}

fn merged_shards(file: &str, seeds: u64, count: u64) -> ExploreSummary {
    let mut merged = ExploreSummary::default();
    for index in 1..=count {
        merged.merge(&explore(file, seeds, Some(Shard { index, count })));
    }
    merged
}

#[test]
fn four_guided_shards_merged_find_the_bug_groups_of_one_run() {
    // (pair, seeds): seeds enough for both layouts to find every group the pair shows.
    for (pair, seeds) in [
        ("bug-release-no-owner-check", 40),
        ("bug-extend-no-owner-check", 40),
        ("bug-lockout-no-ttl", 40),
    ] {
        let bug = format!("scenarios/{pair}.toml");
        let whole = explore(&bug, seeds, None);
        let merged = merged_shards(&bug, seeds, 4);
        assert_eq!(merged.seeds_run, whole.seeds_run, "{pair}");
        assert!(whole.first_bug_seed.is_some(), "{pair}: one run finds the bug");
        let first = merged
            .first_bug_seed
            .unwrap_or_else(|| panic!("{pair}: the merged shards find the bug"));
        // Seeds to the first bug over the whole range, as the merge prints them.
        assert_eq!(merged.seeds_to_first_bug, Some(first + 1), "{pair}");
        assert_eq!(causes(&merged), causes(&whole), "{pair}: the same causes");
        eprintln!(
            "{pair}: {seeds} seeds: one run first bug {:?}, 4 shards {first}; causes {:?}",
            whole.first_bug_seed,
            causes(&merged)
        );
        let twin = format!("scenarios/{pair}-safe.toml");
        let merged_twin = merged_shards(&twin, seeds, 4);
        assert!(
            merged_twin.bug_groups.is_empty(),
            "{pair}-safe: {:?}",
            merged_twin.bug_groups
        );
        assert_eq!(merged_twin.first_bug_seed, None, "{pair}-safe");
    }
}

/// The same shard arguments give the same shard, every time and whatever the workers.
#[test]
fn a_guided_shard_is_deterministic_from_its_range_and_shard() {
    let file = "scenarios/bug-release-no-owner-check.toml";
    let shard = Some(Shard { index: 3, count: 4 });
    let once = explore(file, 24, shard);
    let again = explore_on(file, 24, shard, 1);
    assert_eq!(once.outcome_digest(), again.outcome_digest());
    assert_eq!(once.coverage, again.coverage);
    assert_eq!(once.run, again.run);
    assert_eq!(once.seeds_run, 6);
}
