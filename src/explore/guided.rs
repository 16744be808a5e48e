//! Guided exploration (`--strategy anchored` or `mixed`): anchored placement, a generated
//! workload shape and coverage feedback, in batches.
//!
//! Before the first seed, the template runs once without faults and its anchors are recorded
//! ([`anchors::record`], with the user's lock when there is one). Seeds then run in batches of
//! [`coverage::BATCH`]. Each seed's case is drawn from its own stream (`explore/guided`): a
//! quarter of the seeds, once the corpus holds something, mutate a corpus case; under `mixed`
//! half of the others are placed at random exactly as `--strategy random` places them (plus a
//! workload shape when the template loops), the rest around the anchors; under `anchored`, all
//! the others around the anchors. After a batch, the cases that reached a new signature join the
//! corpus in seed order, so every case is fixed by the seeds and the template, whatever the
//! number of workers (see [`coverage`]). Failing seeds keep their case in the summary, since
//! their seed alone no longer regenerates it; [`shrink_case`] shrinks it.
//!
//! Left out: the corpus is not saved between explorations.

use super::anchors::{self, Anchors};
use super::coverage::{self, Corpus, CoverageSummary};
use super::generate::{case_strategy, case_tree, ExploreCase, PlacementStrategy};
use super::shrink::Counterexample;
use super::summary::{DeterminismFailure, ExploreSummary, Throughput};
use super::{
    case_scenario, judge_case, run_guarded, shard_len, shard_seed, topology, ExploreConfig, FactoryMaker, Progress,
    SeedOutcome,
};
use crate::checker::Verdict;
use crate::run::ScenarioRun;
use crate::scenario::Scenario;
use lockstep_sim::Seed;
use rand::Rng;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// Where a seed's case came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Anchored,
    Random,
    Mutated,
}

/// The case of `seed` in a guided exploration, given the corpus so far.
#[allow(clippy::too_many_arguments)]
fn guided_case(
    seed: u64,
    strategy: PlacementStrategy,
    random: &proptest::strategy::BoxedStrategy<ExploreCase>,
    topo: &super::generate::Topology,
    config: &ExploreConfig,
    anchors: &Anchors,
    corpus: &Corpus,
    reshape_ttl_ms: Option<u64>,
) -> (ExploreCase, Origin) {
    let mut rng = Seed(seed).stream("explore/guided");
    let roll = rng.random_range(0..4u8);
    if roll == 0 && !corpus.cases.is_empty() {
        let parent = &corpus.cases[rng.random_range(0..corpus.cases.len())];
        return (
            coverage::mutate(&mut rng, parent, topo, &config.profile, anchors),
            Origin::Mutated,
        );
    }
    if anchors.list.is_empty() || (strategy == PlacementStrategy::Mixed && roll % 2 == 1) {
        let mut case = case_tree(seed, random).current();
        if let Some(ttl_ms) = reshape_ttl_ms {
            case.shape = Some(anchors::draw_shape(&mut rng, ttl_ms));
        }
        return (case, Origin::Random);
    }
    (
        anchors::anchored_case(seed, topo, &config.profile, anchors),
        Origin::Anchored,
    )
}

/// Adds one seed's outcome to the summary (as the random exploration's aggregator does).
fn record_outcome(summary: &mut ExploreSummary, outcome: SeedOutcome, case: &ExploreCase) {
    match outcome {
        SeedOutcome::Judged {
            seed,
            verdicts,
            fault_kinds,
            faults,
            liveness,
            sim_ms,
            determinism,
        } => {
            summary.add_verdicts(seed, &verdicts, &fault_kinds, faults);
            if let Some(failing) = summary.first_failing.iter_mut().find(|f| f.seed == seed) {
                failing.case = Some(case.clone());
            }
            summary.add_liveness(&liveness, sim_ms);
            if let Some(result) = determinism {
                summary.determinism_checked += 1;
                if let Err(first_difference) = result {
                    summary
                        .determinism_failures
                        .push(DeterminismFailure { seed, first_difference });
                    summary.determinism_failures.sort();
                }
            }
        }
        SeedOutcome::Error { seed, message } => summary.add_error(seed, message),
    }
}

/// Explores `template` with anchored or mixed placement and coverage feedback.
pub(super) fn explore_guided(
    template: &Scenario,
    config: &ExploreConfig,
    maker: Option<&FactoryMaker>,
) -> ExploreSummary {
    run_guided(template, config, maker, false)
}

/// The guided exploration of `template` up to its first violation: no seed after the first
/// failing one is started, and every seed before it runs, so the summary's first failing seed
/// is the full exploration's (the corpus only changes between batches). For tests and
/// benchmarks that measure seeds-to-first-violation.
pub fn explore_until_violation(template: &Scenario, config: &ExploreConfig) -> ExploreSummary {
    run_guided(template, config, None, true)
}

fn run_guided(
    template: &Scenario,
    config: &ExploreConfig,
    maker: Option<&FactoryMaker>,
    stop_at_first: bool,
) -> ExploreSummary {
    let total = shard_len(config);
    let mut summary = ExploreSummary::new(&template.name, template.lock.algorithm.name());
    let topo = topology(template);
    let started = Instant::now();
    let mut progress = Progress::new(config.progress, total);
    let jobs = config.jobs.max(1);
    let strategy = config.profile.strategy;
    // The fault-free run; without anchors (it failed), placement falls back to random.
    let first_factory = maker.map(|make| make());
    let anchors = anchors::record(template, first_factory.as_ref()).unwrap_or_default();
    let reshape = anchors::shape_applies(template).then_some(template.lock.ttl_ms);
    let random = case_strategy(&topo, &config.profile);
    let mut corpus = Corpus::default();
    let mut cover = CoverageSummary {
        strategy: strategy.name().to_string(),
        anchors: anchors.list.len(),
        ..CoverageSummary::default()
    };
    let mut done = 0;
    let mut start = 0;
    let mut batches: u64 = 0;
    while start < total {
        if config.time_limit.is_some_and(|limit| started.elapsed() >= limit) {
            break;
        }
        let end = (start + coverage::BATCH).min(total);
        let cases: Vec<(u64, ExploreCase)> = (start..end)
            .filter_map(|i| shard_seed(config, i))
            .map(|seed| {
                let (case, origin) = guided_case(seed, strategy, &random, &topo, config, &anchors, &corpus, reshape);
                match origin {
                    Origin::Anchored => cover.anchored_seeds += 1,
                    Origin::Random => cover.random_seeds += 1,
                    Origin::Mutated => cover.mutated_seeds += 1,
                }
                (seed, case)
            })
            .collect();
        let next = AtomicUsize::new(0);
        // The lowest index in the batch that violated (usize::MAX: none yet).
        let first_bad = AtomicUsize::new(usize::MAX);
        let mut batch = Vec::new();
        std::thread::scope(|scope| {
            let (sender, receiver) = mpsc::channel();
            for _ in 0..jobs.min(cases.len()) {
                let sender = sender.clone();
                let (next, cases, first_bad) = (&next, &cases, &first_bad);
                scope.spawn(move || {
                    let factory = maker.map(|make| make());
                    loop {
                        if config.time_limit.is_some_and(|limit| started.elapsed() >= limit) {
                            return;
                        }
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if stop_at_first && i > first_bad.load(Ordering::SeqCst) {
                            return;
                        }
                        let Some((seed, case)) = cases.get(i) else { return };
                        let (outcome, signature) =
                            judge_case(template, case, *seed, config.determinism_per_10k, factory.as_ref());
                        let violated = matches!(&outcome, SeedOutcome::Judged { verdicts, .. }
                            if verdicts.iter().any(|(_, v)| *v == Verdict::Invalid));
                        if violated {
                            first_bad.fetch_min(i, Ordering::SeqCst);
                        }
                        if sender.send((i, outcome, signature)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(sender);
            for (i, outcome, signature) in receiver {
                let (seed, case) = &cases[i];
                record_outcome(&mut summary, outcome, case);
                if let Some(signature) = signature {
                    batch.push((*seed, signature, case.clone()));
                }
                done += 1;
                progress.update(done, total, summary.seeds_violating, started);
            }
        });
        corpus.add_batch(batch);
        // Growth points after batches 1, 2, 4, 8, ... and the last: memory stays bounded.
        batches += 1;
        let point = (done, corpus.seen.len() as u64);
        if batches.is_power_of_two() || cover.growth.len() < 2 {
            cover.growth.push(point);
        } else if let Some(last) = cover.growth.last_mut() {
            if !(batches - 1).is_power_of_two() {
                *last = point;
            } else {
                cover.growth.push(point);
            }
        }
        start = end;
        if stop_at_first && summary.seeds_violating > 0 {
            break;
        }
    }
    progress.finish();
    cover.signatures_distinct = corpus.seen.len() as u64;
    summary.coverage = Some(cover);
    let wall_s = started.elapsed().as_secs_f64();
    summary.throughput = Throughput {
        wall_s,
        scenarios_per_s: summary.seeds_run as f64 / wall_s.max(1e-9),
        sim_s_per_wall_s: summary.sim_ms as f64 / 1_000.0 / wall_s.max(1e-9),
        jobs,
    };
    summary
}

fn fails(template: &Scenario, case: &ExploreCase, seed: u64, checker: &str, runs: &mut usize) -> Option<ScenarioRun> {
    *runs += 1;
    let run = run_guarded(&case_scenario(template, case, seed), None).ok()?;
    (run.verdict(checker) == Some(Verdict::Invalid)).then_some(run)
}

/// Shrinks a guided seed's recorded `case`, keeping `checker` invalid: drops single faults, the
/// workload shape, then clients, while it still fails (at most `max_runs` runs, none started
/// after `deadline`). `None` when the case does not fail that checker.
pub fn shrink_case(
    template: &Scenario,
    case: &ExploreCase,
    seed: u64,
    checker: &str,
    max_runs: usize,
    deadline: Option<Instant>,
) -> Option<Counterexample> {
    let left = |runs: usize| runs < max_runs && deadline.is_none_or(|d| Instant::now() < d);
    let mut runs = 0;
    let mut best = case.clone();
    let faults_before = best.faults.len();
    let mut best_run = fails(template, &best, seed, checker, &mut runs)?;
    let mut changed = true;
    while changed && left(runs) {
        changed = false;
        let mut candidates: Vec<ExploreCase> = (0..best.faults.len())
            .rev()
            .map(|i| {
                let mut c = best.clone();
                c.faults.remove(i);
                c
            })
            .collect();
        if best.shape.is_some() {
            candidates.push(ExploreCase {
                shape: None,
                ..best.clone()
            });
        }
        if best.clients > 1 && best.shape.is_none() {
            candidates.push(ExploreCase {
                clients: best.clients - 1,
                ..best.clone()
            });
        }
        for candidate in candidates {
            if !left(runs) {
                break;
            }
            if let Some(run) = fails(template, &candidate, seed, checker, &mut runs) {
                best = candidate;
                best_run = run;
                changed = true;
                break;
            }
        }
    }
    let mut scenario = case_scenario(template, &best, seed);
    scenario.name = format!("{}-seed-{seed}-{checker}", template.name);
    scenario.description = format!(
        "Counterexample found by `lockstep explore` (guided) on {} (seed {seed}): {checker} is violated.\n\
         Shrunk from {faults_before} to {} faults and {} clients. History digest {}.",
        template.name,
        best.faults.len(),
        scenario.clients.len(),
        best_run.digest
    );
    scenario.expect = best_run
        .results
        .iter()
        .map(|r| (r.checker.clone(), r.verdict))
        .collect();
    Some(Counterexample {
        seed,
        checker: checker.to_string(),
        faults_before,
        case: best,
        scenario,
        run: best_run,
        runs,
    })
}
