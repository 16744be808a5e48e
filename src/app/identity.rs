//! The identity of an exploration run and the seeds one process of it covers, stamped on its
//! summary ([`RunSpan`]) so that `lockstep merge` can tell the shards of one run from a summary
//! given twice or summaries of different runs.
//!
//! The identity is what decides what every seed does: lockstep's version, the template scenario
//! (as explicit TOML, so formatting and comments do not count), the fault profile, the strategy
//! (random, bounded, anchored or mixed; also stamped on the span, so that `merge` can refuse
//! summaries of two strategies and say why), the locks (subject and reference) and the determinism sample. The seeds are left out of it on
//! purpose: they are the span, so shards made with `--shard K/N` and shards made with disjoint
//! `--seed-range`s both merge. Worker threads and the time limit are left out too (they change
//! how fast seeds run, not what a seed does).

use super::exploration::Locks;
use crate::explore::summary::{ExploreSummary, RunSpan, RunStrategy, SeedSpan};
use crate::explore::ExploreConfig;
use crate::model::fault::PlacementStrategy;
use crate::scenario::Scenario;

/// SHA-256 (hex) of what defines an exploration apart from its seeds.
fn exploration_identity(template: &Scenario, config: &ExploreConfig, locks: &Locks) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(b"lockstep exploration");
    field(env!("CARGO_PKG_VERSION").as_bytes());
    field(template.to_toml().as_bytes());
    // Plain data with string keys: serialisation cannot fail.
    field(serde_json::to_string(&config.profile).unwrap_or_default().as_bytes());
    field(&config.determinism_per_10k.to_le_bytes());
    field(format!("{:?}", locks.subject).as_bytes());
    field(format!("{:?}", locks.reference).as_bytes());
    // The strategy (random placement adds nothing, so the identities of random runs stay those
    // earlier versions wrote; the placement is in the profile already, bounded is not).
    let strategy = run_strategy(config);
    if strategy != RunStrategy::Random {
        field(b"strategy");
        field(strategy.name().as_bytes());
    }
    // Shapes that may outlive the lease explore other workloads (only guided placement draws
    // shapes; off, nothing is added, so earlier identities stay).
    if config.overrun_shapes {
        field(b"overrun-shapes");
    }
    hex::encode(hash.finalize())
}

/// How `config` places faults.
fn run_strategy(config: &ExploreConfig) -> RunStrategy {
    match config.profile.strategy {
        PlacementStrategy::Anchored => RunStrategy::Anchored,
        PlacementStrategy::Mixed => RunStrategy::Mixed,
        PlacementStrategy::Random if config.assumptions.is_some() => RunStrategy::Bounded,
        PlacementStrategy::Random => RunStrategy::Random,
    }
}

/// The run and the seeds of one exploration process: its identity and its one span.
#[cfg(test)]
fn run_span(template: &Scenario, config: &ExploreConfig, locks: &Locks) -> RunSpan {
    run_span_of(template, config, locks, None)
}

/// Stamps `summary` with its run and span (`run_span_of`); when the time limit stopped it
/// (`seeds_planned`), the span ends after the last seed run, so a merge never counts the seeds
/// it did not run as covered; then sets the summary's seeds to the first bug
/// ([`ExploreSummary::refresh_first_bug`]).
pub fn stamp_run(summary: &mut ExploreSummary, template: &Scenario, config: &ExploreConfig, locks: &Locks) {
    let seeds_run = summary.seeds_planned.map(|_| summary.seeds_run);
    summary.run = Some(run_span_of(template, config, locks, seeds_run));
    // The seeds to the first bug count from the span's start: known only now.
    summary.refresh_first_bug();
}

/// [`run_span`] of an exploration that ran only its first `seeds_run` seeds (`Some`).
fn run_span_of(template: &Scenario, config: &ExploreConfig, locks: &Locks, seeds_run: Option<u64>) -> RunSpan {
    let (shard_index, shard_count) = config.shard.map_or((1, 1), |s| (s.index, s.count));
    let seeds_end = match seeds_run {
        Some(0) => config.seeds.start,
        Some(n) => crate::explore::shard_seed(config, n - 1).map_or(config.seeds.end, |last| last + 1),
        None => config.seeds.end,
    };
    RunSpan {
        run_id: exploration_identity(template, config, locks),
        spans: vec![SeedSpan {
            seeds_start: config.seeds.start,
            seeds_end,
            shard_index,
            shard_count,
        }],
        strategy: Some(run_strategy(config)),
    }
}

/// Bad input when the shard of `config` holds no seed (more shards than seeds): it would
/// explore nothing and pass.
pub fn check_shard_has_seeds(config: &ExploreConfig) -> Result<(), super::AppError> {
    match config.shard {
        Some(shard) if crate::explore::shard_len(config) == 0 => Err(super::AppError::BadInput(format!(
            "--shard {}/{}: no seed of {}..{} falls in this shard (more shards than seeds): nothing to explore",
            shard.index, shard.count, config.seeds.start, config.seeds.end
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::Shard;

    fn template() -> Scenario {
        Scenario::from_str(
            include_str!("../../scenarios/baseline-naive.toml"),
            "baseline-naive.toml",
        )
        .expect("a valid scenario")
    }

    #[test]
    fn the_identity_ignores_seeds_and_speed_but_not_what_a_seed_does() {
        let base = ExploreConfig::default();
        let locks = Locks::default();
        let id = exploration_identity(&template(), &base, &locks);
        let sharded = ExploreConfig {
            seeds: 500..900,
            shard: Some(Shard { index: 2, count: 3 }),
            jobs: 7,
            time_limit: Some(std::time::Duration::from_secs(3)),
            ..base.clone()
        };
        assert_eq!(exploration_identity(&template(), &sharded, &locks), id);
        let span = run_span(&template(), &sharded, &locks);
        assert_eq!(
            span.spans,
            vec![SeedSpan {
                seeds_start: 500,
                seeds_end: 900,
                shard_index: 2,
                shard_count: 3
            }]
        );
        let mut profile = base.clone();
        profile.profile.faults_max += 1;
        assert_ne!(exploration_identity(&template(), &profile, &locks), id);
        let determinism = ExploreConfig {
            determinism_per_10k: 100,
            ..base.clone()
        };
        assert_ne!(exploration_identity(&template(), &determinism, &locks), id);
        let mut other = template();
        other.lock.ttl_ms = 200;
        assert_ne!(exploration_identity(&other, &base, &locks), id);
    }

    #[test]
    fn the_strategy_is_part_of_the_identity_and_stamped_on_the_span() {
        let locks = Locks::default();
        let random = ExploreConfig::default();
        let id = exploration_identity(&template(), &random, &locks);
        assert_eq!(
            run_span(&template(), &random, &locks).strategy,
            Some(RunStrategy::Random)
        );
        let mut ids = vec![id];
        for placement in [PlacementStrategy::Anchored, PlacementStrategy::Mixed] {
            let mut guided = random.clone();
            guided.profile.strategy = placement;
            let span = run_span(&template(), &guided, &locks);
            assert!(span.strategy.is_some_and(RunStrategy::is_guided));
            ids.push(span.run_id);
        }
        // Bounded: the same profile, inside the template lock's assumptions.
        let bounded = ExploreConfig {
            assumptions: Some(crate::explore::assumptions::Assumptions::of(&template())),
            ..random.clone()
        };
        let span = run_span(&template(), &bounded, &locks);
        assert_eq!(span.strategy, Some(RunStrategy::Bounded));
        ids.push(span.run_id);
        // Overrun shapes explore other workloads.
        let mut overrun = random.clone();
        overrun.profile.strategy = PlacementStrategy::Mixed;
        overrun.overrun_shapes = true;
        ids.push(exploration_identity(&template(), &overrun, &locks));
        let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), 5, "{ids:?}");
    }

    #[test]
    fn a_shard_without_seeds_is_bad_input() {
        let config = |index| ExploreConfig {
            seeds: 10..13,
            shard: Some(Shard { index, count: 4 }),
            ..ExploreConfig::default()
        };
        assert!(check_shard_has_seeds(&config(3)).is_ok());
        let err = check_shard_has_seeds(&config(4)).unwrap_err().to_string();
        assert!(err.contains("--shard 4/4") && err.contains("10..13"), "{err}");
    }
}
