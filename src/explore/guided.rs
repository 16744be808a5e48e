//! Guided exploration (`--strategy anchored` or `mixed`): anchored placement, a generated
//! workload shape and coverage feedback, in batches.
//!
//! Before the first seed, the template runs once without faults and its anchors are recorded
//! ([`anchors::record`], with the user's lock when there is one). Seeds then run in batches of
//! `coverage::BATCH`. Each seed's case is drawn from its own stream (`explore/guided`): a
//! quarter of the seeds, once the corpus holds something, mutate a corpus case; under `mixed`
//! half of the others are placed at random exactly as `--strategy random` places them (plus a
//! workload shape when the template loops: inside the lock's contract, or with
//! [`ExploreConfig::overrun_shapes`] one that may outlive the lease — see
//! [`anchors::ShapeBounds`]), the rest around the anchors; under `anchored`, all
//! the others around the anchors. After a batch, the cases that reached a new signature join the
//! corpus in seed order, so every case is fixed by the seeds and the template, whatever the
//! number of workers (see [`coverage`]). Failing seeds keep their case in the summary, since
//! their seed alone no longer regenerates it; `super::shrink::shrink_case` shrinks it with the
//! exploration's locks.
//!
//! The subject lock (the template's algorithm, a preset, or a user's Rust lock) is the one whose
//! fault-free run gives the anchors and the one every case runs; with a reference lock (the
//! differential oracle), every case also runs the reference, as in a random exploration.
//!
//! Sharded (`--shard K/N`, issue 53), the shard's seeds — positions K−1, K−1+N, ... of the range —
//! are its own guided exploration: its own corpus and batches, so each case is fixed by the range,
//! K, N and the template; its summary lists its signatures with their first seeds
//! ([`CoverageSummary::first_seen`]) for `lockstep merge` to unite.
//!
//! An operation-aimed seed runs each distinct aim once and stops at the first implementation bug
//! (the aims after it could only report the same seed).
//!
//! Left out: the corpus is not saved between explorations.

use super::anchors::{self, Anchors, ShapeBounds};
use super::coverage::{self, Corpus, CoverageSummary};
use super::generate::{case_strategy, case_tree, ExploreCase};
use super::subject::LockRef;
use super::summary::ExploreSummary;
use super::{
    aggregate, finish_throughput, judge_case, new_summary, record, seed_record, shard_len, shard_seed, topology,
    ExploreConfig, Progress, SeedOutcome,
};
use crate::model::fault::PlacementStrategy;
use crate::model::Verdict;
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
    /// Aimed at one of the lock's operations in the seed's own fault-free run: the worker runs
    /// it first and fills the case's faults in ([`anchors::operation_case`]).
    Operation,
    Random,
    Mutated,
}

/// The case of `seed` in a guided exploration, given the corpus so far.
#[allow(clippy::too_many_arguments)]
fn guided_case(
    seed: u64,
    strategy: PlacementStrategy,
    random: &proptest::strategy::BoxedStrategy<ExploreCase>,
    topo: &crate::explore::kinds::Topology,
    config: &ExploreConfig,
    anchors: &Anchors,
    corpus: &Corpus,
    reshape: Option<&ShapeBounds>,
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
        if let Some(bounds) = reshape {
            case.shape = Some(anchors::draw_shape(&mut rng, bounds));
        }
        return (case, Origin::Random);
    }
    if anchors::aims_at_operation(seed, &config.profile) {
        // Aimed at its own run, so it can take a workload shape of its own too (a renewing
        // lock's long critical sections are where its extensions happen).
        let case = ExploreCase {
            clients: topo.clients.len().max(1),
            faults: Vec::new(),
            shape: reshape.map(|bounds| anchors::draw_shape(&mut rng, bounds)),
        };
        return (case, Origin::Operation);
    }
    (
        anchors::anchored_case(seed, topo, &config.profile, anchors),
        Origin::Anchored,
    )
}

/// How many aims an operation-aimed seed tries at its own run, until one violates a checker.
pub const OPERATION_ATTEMPTS: u64 = 6;

/// The [`OPERATION_ATTEMPTS`] operation-aimed cases of `seed` on its own fault-free run
/// ([`anchors::operation_case_try`]), the first being what a seed always aimed, then up to
/// [`anchors::LATE_ATTEMPTS`] aims at what outlives an operation ([`anchors::late_case_try`]),
/// then up to [`anchors::STEP_ATTEMPTS`] delays between two steps of one operation
/// ([`anchors::step_case_try`]); `case` alone when the run cannot be recorded.
fn aims_at_own_run(
    template: &Scenario,
    case: ExploreCase,
    seed: u64,
    topo: &crate::explore::kinds::Topology,
    config: &ExploreConfig,
    subject: &super::subject::PreparedLock,
) -> Vec<ExploreCase> {
    let own = super::case_scenario(template, &case, seed);
    let Ok(anchors) = anchors::record(&own, subject) else {
        return vec![case];
    };
    let aimed = (0..OPERATION_ATTEMPTS)
        .map(|attempt| anchors::operation_case_try(seed, attempt, topo, &config.profile, &anchors));
    // Then what outlives an operation (a late request, a renewal timer due with the release):
    // only the aims that found something to aim at.
    let late = (0..anchors::LATE_ATTEMPTS)
        .map(|attempt| anchors::late_case_try(seed, attempt, topo, &config.profile, &anchors))
        .filter(|faults| !faults.is_empty());
    // Then a delay between two steps of a multi-step operation, under the request timeout
    // (issue 50: a token taken before the lock, a check before the delete).
    let steps = (0..anchors::STEP_ATTEMPTS)
        .map(|attempt| anchors::step_case_try(seed, attempt, topo, &config.profile, &anchors))
        .filter(|faults| !faults.is_empty());
    // An aim drawn twice (the same faults: few operations to aim at, a late aim equal to a
    // stall) would only run the same world again: each plan runs once, in its first place, so
    // the seed's outcome is the one it always was.
    let mut tried = std::collections::BTreeSet::new();
    aimed
        .chain(late)
        .chain(steps)
        .filter(|faults| tried.insert(faults.clone()))
        .map(|faults| ExploreCase { faults, ..case.clone() })
        .collect()
}

/// Whether `outcome` is an implementation bug: a checker the lock promises under the plan
/// violated.
fn is_bug(outcome: &SeedOutcome) -> bool {
    matches!(outcome, SeedOutcome::Judged { classified: Some((_, bugs)), .. } if !bugs.is_empty())
}

/// Of an operation-aimed seed's judged aims (run lazily, in order): the first implementation
/// bug; else the first that `violates`; else the first. A violation outside the lock's
/// assumptions (the lease's limit) does not stop the search for a bug in the later aims, so a
/// seed shows the lock's own fault when one of its aims reaches it.
fn first_bug_or_violation(
    mut judged: impl Iterator<Item = (SeedOutcome, Option<u64>)>,
    violates: impl Fn(&SeedOutcome) -> bool,
) -> (SeedOutcome, Option<u64>) {
    let first = judged.next().expect("at least one case");
    if is_bug(&first.0) {
        return first;
    }
    let mut shown = first;
    let mut shown_violates = violates(&shown.0);
    for next in judged {
        if is_bug(&next.0) {
            return next;
        }
        if !shown_violates && violates(&next.0) {
            shown = next;
            shown_violates = true;
        }
    }
    shown
}

/// Explores `template` with anchored or mixed placement and coverage feedback, running
/// `subject` (and `reference`, for the differential oracle) on every case; `on_seed` sees every
/// seed's record.
pub(super) fn explore_guided(
    template: &Scenario,
    config: &ExploreConfig,
    locks: (LockRef<'_>, Option<LockRef<'_>>),
    on_seed: &mut dyn FnMut(&record::SeedRecord),
) -> ExploreSummary {
    run_guided(template, config, locks, on_seed, false)
}

/// The guided exploration of `template` with `subject` up to its first violation: no seed after
/// the first failing one is started, and every seed before it runs, so the summary's first
/// failing seed is the full exploration's (the corpus only changes between batches). For tests
/// and benchmarks that measure seeds-to-first-violation.
pub fn explore_until_violation(template: &Scenario, config: &ExploreConfig, subject: LockRef<'_>) -> ExploreSummary {
    run_guided(template, config, (subject, None), &mut |_| {}, true)
}

fn run_guided(
    template: &Scenario,
    config: &ExploreConfig,
    (subject, reference): (LockRef<'_>, Option<LockRef<'_>>),
    on_seed: &mut dyn FnMut(&record::SeedRecord),
    stop_at_first: bool,
) -> ExploreSummary {
    let total = shard_len(config);
    let (names, mut summary) = new_summary(template, (subject, reference));
    // Guided placement never bounds its plans: each seed is classified as generated.
    summary.classified = Some(super::summary::Bounded::default());
    let topo = topology(template);
    let started = Instant::now();
    let mut progress = Progress::new(config.progress, total);
    let jobs = config.jobs.max(1);
    let strategy = config.profile.strategy;
    // The subject's fault-free run; without anchors (it failed), placement falls back to random.
    let anchors = anchors::record(template, &subject.prepare()).unwrap_or_default();
    let reshape = anchors::shape_applies(template).then(|| {
        if config.overrun_shapes {
            ShapeBounds::overrun(template)
        } else {
            ShapeBounds::contract(template)
        }
    });
    let random = case_strategy(&topo, &config.profile);
    let mut corpus = Corpus::default();
    let mut cover = CoverageSummary {
        strategy: strategy.name().to_string(),
        anchors: anchors.list.len(),
        // Shapes come with random placement: mixed's random half, or anchored without anchors.
        shapes: reshape
            .as_ref()
            .filter(|_| strategy == PlacementStrategy::Mixed || anchors.list.is_empty())
            .map(ShapeBounds::describe),
        ..CoverageSummary::default()
    };
    let mut done = 0;
    let mut start = 0;
    let mut batches: u64 = 0;
    while start < total {
        if config.must_stop(started) {
            break;
        }
        let end = (start + coverage::BATCH).min(total);
        let cases: Vec<(u64, ExploreCase, Origin)> = (start..end)
            .filter_map(|i| shard_seed(config, i))
            .map(|seed| {
                let (case, origin) = guided_case(
                    seed,
                    strategy,
                    &random,
                    &topo,
                    config,
                    &anchors,
                    &corpus,
                    reshape.as_ref(),
                );
                match origin {
                    Origin::Anchored => cover.anchored_seeds += 1,
                    Origin::Operation => {
                        cover.anchored_seeds += 1;
                        cover.operation_seeds += 1;
                    }
                    Origin::Random => cover.random_seeds += 1,
                    Origin::Mutated => cover.mutated_seeds += 1,
                }
                (seed, case, origin)
            })
            .collect();
        let next = AtomicUsize::new(0);
        // The lowest index in the batch that violated (usize::MAX: none yet).
        let first_bad = AtomicUsize::new(usize::MAX);
        let mut batch = Vec::new();
        std::thread::scope(|scope| {
            let (sender, receiver) = mpsc::channel();
            let wall = lockstep_history::stop::current();
            for _ in 0..jobs.min(cases.len()) {
                let sender = sender.clone();
                let (next, cases, first_bad, wall, topo) = (&next, &cases, &first_bad, wall.clone(), &topo);
                scope.spawn(move || {
                    let _stop = super::watch(wall);
                    let prepared = (subject.prepare(), reference.map(|r| r.prepare()));
                    loop {
                        if config.must_stop(started) {
                            return;
                        }
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if stop_at_first && i > first_bad.load(Ordering::SeqCst) {
                            return;
                        }
                        let Some((seed, case, origin)) = cases.get(i) else {
                            return;
                        };
                        let locks = (&prepared.0, prepared.1.as_ref());
                        let cases = match origin {
                            Origin::Operation => {
                                aims_at_own_run(template, case.clone(), *seed, topo, config, &prepared.0)
                            }
                            _ => vec![case.clone()],
                        };
                        // An operation-aimed seed tries its other aims (another window, another
                        // stall length, a late request) while none is an implementation bug; it
                        // reports the first that is, else the first that violates a checker, or
                        // its first aim.
                        let violates = |outcome: &SeedOutcome| {
                            matches!(outcome, SeedOutcome::Judged { verdicts, .. }
                            if verdicts.iter().any(|(_, v)| *v == Verdict::Invalid))
                        };
                        let judged = cases
                            .into_iter()
                            .map(|case| judge_case(template, case, *seed, config.determinism_per_10k, locks));
                        let (outcome, signature) = first_bug_or_violation(judged, violates);
                        let violated = violates(&outcome);
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
                if super::cut_by_wall_budget(&outcome) {
                    continue;
                }
                let seed = cases[i].0;
                on_seed(&seed_record(template, &names, &outcome));
                // The case as run (an operation-aimed case's faults are filled in by its worker).
                let ran = match &outcome {
                    SeedOutcome::Judged { case, .. } | SeedOutcome::Error { case, .. } => case.clone(),
                };
                aggregate(&mut summary, outcome, true);
                config.keep_shrink_reserve(started, &summary);
                if let Some(signature) = signature {
                    batch.push((seed, signature, ran));
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
    // A shard lists its signatures with their first seeds, so that `merge` unites them.
    if config.shard.is_some() {
        cover.first_seen = corpus
            .seen
            .iter()
            .map(|(signature, seed)| (*signature, *seed))
            .collect();
    }
    summary.coverage = Some(cover);
    super::note_time_limit(&mut summary, config, total, started);
    finish_throughput(&mut summary, started, jobs);
    summary
}
