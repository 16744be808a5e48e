//! Coverage feedback: a cheap signature of what a run did, and a corpus of cases that reached a
//! new one, mutated into later seeds' cases.
//!
//! A run's [`signature`] hashes the order of its lock-relevant events — every completion of an
//! acquire, extend, release, read, write or abort (which client, in order of first appearance,
//! and whether it was ok, failed or indeterminate), every resource judgement (accepted or
//! rejected) and every expiry of the lock key — so two runs that interleave the lock's steps the
//! same way, with the same outcomes for the same holders, share a signature, whatever their
//! exact times. Times, values and tokens are left out on purpose: they differ on every seed.
//!
//! Determinism: the exploration runs seeds in batches of `BATCH`; a batch's cases see the
//! corpus as it stood after the previous batch (its new signatures added in seed order), so the
//! cases are fixed by the seeds and the template, whatever the number of workers. A shard keeps
//! its own corpus (shards of a guided exploration are not the unsharded run split).

use super::anchors::{aimed_fault, Anchors};
use super::generate::ExploreCase;
use crate::explore::kinds::GenFault;
use crate::explore::kinds::Topology;
use crate::explore::kinds::NEAR_MS;
use crate::history::{OpHistory, StepKind};
use crate::model::fault::FaultProfile;
use lockstep_sim::Phase;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Seeds per batch of a guided (anchored or mixed) exploration.
pub(crate) const BATCH: u64 = 32;

/// Cases kept for mutation at most (the earliest new signatures).
pub(crate) const CORPUS_MAX: usize = 256;

/// FNV-1a over bytes: a stable 64-bit hash (the standard library's hasher is not stable).
fn fnv(hash: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *hash ^= u64::from(*b);
        *hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
}

/// The position of `name` among the clients seen so far (added when new).
fn index<'h>(name: &'h str, clients: &mut Vec<&'h str>) -> u8 {
    match clients.iter().position(|c| *c == name) {
        Some(i) => i as u8,
        None => {
            clients.push(name);
            (clients.len() - 1) as u8
        }
    }
}

/// The signature of a run (see the [module](self) docs).
pub fn signature(ops: &OpHistory<'_>) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut clients: Vec<&str> = Vec::new();
    for step in ops.steps() {
        match &step.kind {
            StepKind::Op(op) if op.phase != Phase::Invoke => {
                let who = index(&step.event.node, &mut clients);
                let phase = match op.phase {
                    Phase::Ok => 1u8,
                    Phase::Fail => 2,
                    _ => 3,
                };
                fnv(&mut hash, &[1, who, op.op as u8, phase]);
            }
            StepKind::ResourceWrite(w) => {
                let who = index(w.client, &mut clients);
                fnv(&mut hash, &[2, who, u8::from(w.accepted)]);
            }
            StepKind::Expired(e) if !e.fencing_counter => fnv(&mut hash, &[3]),
            _ => {}
        }
    }
    hash
}

/// What a guided exploration's summary says about coverage.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoverageSummary {
    /// `anchored` or `mixed`.
    pub strategy: String,
    /// Anchors of the template's fault-free run (0: that run failed, placement fell back to
    /// random).
    pub anchors: usize,
    /// Distinct signatures reached.
    pub signatures_distinct: u64,
    /// `(seeds run, distinct signatures)` after batches 1, 2, 4, 8, ... and after the last.
    pub growth: Vec<(u64, u64)>,
    /// Seeds whose case mutated a corpus case.
    pub mutated_seeds: u64,
    /// Seeds whose case was placed around the anchors (operation-aimed seeds included).
    pub anchored_seeds: u64,
    /// Of those, seeds whose case was aimed at one of the lock's operations in the seed's own
    /// fault-free run.
    #[serde(default)]
    pub operation_seeds: u64,
    /// Seeds whose case was placed at random (with a generated workload shape when the
    /// template loops).
    pub random_seeds: u64,
    /// The bounds of the generated workload shapes, in a sentence (`None`: no shapes; the
    /// template's workload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<String>,
    /// A shard's signatures, each with the first seed that reached it, sorted by signature: what
    /// `lockstep merge` unites into the distinct signatures and the growth of the whole range
    /// (issue 53). Only in shards' summaries (an unsharded run's figures are already whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_seen: Vec<(u64, u64)>,
}

impl CoverageSummary {
    /// The summary's coverage lines.
    pub fn render(&self) -> String {
        let growth: Vec<String> = sample_growth(&self.growth)
            .iter()
            .map(|(seeds, distinct)| format!("{seeds}:{distinct}"))
            .collect();
        let shapes = self
            .shapes
            .as_ref()
            .map(|s| format!("  workload shapes: {s}\n"))
            .unwrap_or_default();
        format!(
            "  placement: {} ({} anchors; {} seeds anchored ({} at the lock's operations), {} random, {} mutated \
             from the corpus)\n{shapes}  coverage: {} distinct signatures; growth (seeds:signatures) {}\n",
            self.strategy,
            self.anchors,
            self.anchored_seeds,
            self.operation_seeds,
            self.random_seeds,
            self.mutated_seeds,
            self.signatures_distinct,
            growth.join(" ")
        )
    }
}

impl CoverageSummary {
    /// Combines a shard's coverage into this one: placement counts add; signatures unite when
    /// both sides list them ([`Self::first_seen`]), else their counts add (an upper bound: two
    /// shards may reach the same signature); the growth is redrawn by [`Self::regrow`] once the
    /// merged span is known, else it is the merged total alone.
    pub fn merge(&mut self, other: &CoverageSummary, seeds_run: u64) {
        self.anchors = self.anchors.max(other.anchors);
        self.mutated_seeds = self.mutated_seeds.saturating_add(other.mutated_seeds);
        self.anchored_seeds = self.anchored_seeds.saturating_add(other.anchored_seeds);
        self.operation_seeds = self.operation_seeds.saturating_add(other.operation_seeds);
        self.random_seeds = self.random_seeds.saturating_add(other.random_seeds);
        if self.shapes.is_none() {
            self.shapes = other.shapes.clone();
        }
        if self.first_seen.is_empty() || other.first_seen.is_empty() {
            self.signatures_distinct = self.signatures_distinct.saturating_add(other.signatures_distinct);
            self.first_seen.clear();
        } else {
            let mut all: std::collections::BTreeMap<u64, u64> = self.first_seen.iter().copied().collect();
            for &(signature, seed) in &other.first_seen {
                let first = all.entry(signature).or_insert(seed);
                *first = (*first).min(seed);
            }
            self.first_seen = all.into_iter().collect();
            self.signatures_distinct = self.first_seen.len() as u64;
        }
        self.growth = vec![(seeds_run, self.signatures_distinct)];
    }

    /// Redraws the growth over `range`, run whole by the merged shards, from the signatures'
    /// first seeds: `(seeds of the range, signatures reached by them)` after 32, 64, 128, ...
    /// seeds and at the end, as one process's batches would give it.
    pub fn regrow(&mut self, range: std::ops::Range<u64>) {
        if self.first_seen.is_empty() {
            return;
        }
        let mut firsts: Vec<u64> = self.first_seen.iter().map(|(_, seed)| *seed).collect();
        firsts.sort_unstable();
        let total = range.end.saturating_sub(range.start);
        let mut growth = Vec::new();
        let mut seeds = BATCH;
        loop {
            let seeds_done = seeds.min(total);
            let reached = firsts.partition_point(|s| *s < range.start.saturating_add(seeds_done));
            growth.push((seeds_done, reached as u64));
            if seeds_done >= total {
                break;
            }
            seeds = seeds.saturating_mul(2);
        }
        self.growth = growth;
    }
}

/// At most eight points of the growth curve: the first, the last, and powers of two between.
fn sample_growth(growth: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut next = 1;
    for (i, point) in growth.iter().enumerate() {
        if i + 1 == next || i + 1 == growth.len() {
            out.push(*point);
            next *= 2;
        }
    }
    out.dedup();
    out
}

/// The cases that reached new signatures, and every signature seen.
#[derive(Debug, Clone, Default)]
pub(crate) struct Corpus {
    /// Distinct signatures, each with the first seed that reached it.
    pub seen: BTreeMap<u64, u64>,
    /// Cases that first reached a signature, in the order they were added.
    pub cases: Vec<ExploreCase>,
}

impl Corpus {
    /// Adds one batch's results (`(seed, signature, case)`), in seed order; returns how many
    /// signatures were new.
    pub(crate) fn add_batch(&mut self, mut batch: Vec<(u64, u64, ExploreCase)>) -> usize {
        batch.sort_by_key(|(seed, _, _)| *seed);
        let mut new = 0;
        for (seed, signature, case) in batch {
            if let std::collections::btree_map::Entry::Vacant(entry) = self.seen.entry(signature) {
                entry.insert(seed);
                new += 1;
                if self.cases.len() < CORPUS_MAX {
                    self.cases.push(case);
                }
            }
        }
        new
    }
}

/// A mutation of `parent` drawn from `rng`: one fault moved in time, made stronger or weaker,
/// removed, or a new anchored fault added.
pub fn mutate(
    rng: &mut ChaCha8Rng,
    parent: &ExploreCase,
    topo: &Topology,
    profile: &FaultProfile,
    anchors: &Anchors,
) -> ExploreCase {
    let mut case = parent.clone();
    let ttl = topo.ttl_ms.max(2);
    let horizon_ms = topo.horizon_ms();
    let choice = if case.faults.is_empty() {
        3
    } else {
        rng.random_range(0..4u8)
    };
    match choice {
        0 | 1 => {
            let i = rng.random_range(0..case.faults.len());
            let shift = NEAR_MS[rng.random_range(0..NEAR_MS.len())].max(rng.random_range(1..=(ttl / 4).max(1)));
            let earlier = rng.random_bool(0.5);
            let stronger = rng.random_bool(0.5);
            let fault = &mut case.faults[i];
            if choice == 0 {
                let at = fault.at_ms_mut();
                *at = if earlier {
                    at.saturating_sub(shift)
                } else {
                    (*at + shift).min(horizon_ms)
                };
            } else {
                scale(fault, stronger);
            }
        }
        2 if case.faults.len() > 1 => {
            let i = rng.random_range(0..case.faults.len());
            case.faults.remove(i);
        }
        _ => {
            if !anchors.list.is_empty() && case.faults.len() < profile.faults_max.max(1) {
                let kinds = &profile.kinds;
                if !kinds.is_empty() {
                    let i = rng.random_range(0..anchors.list.len());
                    let kind = &kinds[rng.random_range(0..kinds.len())];
                    if let Some(fault) = aimed_fault(rng, kind, topo, profile, &anchors.list, i) {
                        case.faults.push(fault);
                    }
                }
            }
        }
    }
    case
}

/// Halves or doubles a fault's strength (its length, step, rate or count).
fn scale(fault: &mut GenFault, stronger: bool) {
    fault.scale_magnitude(|v: u64| if stronger { v.saturating_mul(2) } else { (v / 2).max(1) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::kinds::Pause;
    use crate::explore::{anchors, topology};
    use crate::run::guard::run_guarded;
    use crate::scenario::standard::standard_template;

    #[test]
    fn equal_runs_share_a_signature_and_a_pause_past_the_ttl_changes_it() {
        let template = standard_template(
            crate::model::Algorithm::TokenRelease,
            crate::model::Fencing::None,
            lockstep_sim::FencingMode::Unfenced,
            1,
        )
        .unwrap();
        let free = anchors::fault_free(&template);
        let a = run_guarded(&free, None).unwrap();
        let b = run_guarded(&free, None).unwrap();
        let sig = |run: &crate::run::ScenarioRun| signature(&OpHistory::new(&run.history));
        assert_eq!(sig(&a), sig(&b));
        let case = ExploreCase {
            clients: 3,
            faults: vec![GenFault::Pause(Pause {
                at_ms: 100,
                node: "client-1".into(),
                duration_ms: 5_000,
            })],
            shape: None,
        };
        let paused = run_guarded(&crate::explore::case_scenario(&template, &case, 0), None).unwrap();
        assert_ne!(sig(&a), sig(&paused));
    }

    #[test]
    fn mutations_are_fixed_by_the_stream_and_the_corpus_keeps_first_signatures() {
        let template = standard_template(
            crate::model::Algorithm::TokenRelease,
            crate::model::Fencing::None,
            lockstep_sim::FencingMode::Unfenced,
            1,
        )
        .unwrap();
        let topo = topology(&template);
        let anchors = anchors::record(&template, &crate::explore::LockRef::Template.prepare()).unwrap();
        let profile = FaultProfile::default();
        let parent = anchors::anchored_case(1, &topo, &profile, &anchors);
        let m = |s: u64| {
            mutate(
                &mut lockstep_sim::Seed(s).stream("m"),
                &parent,
                &topo,
                &profile,
                &anchors,
            )
        };
        assert_eq!(m(5), m(5));
        assert!((0..20).any(|s| m(s) != parent));
        let mut corpus = Corpus::default();
        let new = corpus.add_batch(vec![(2, 9, parent.clone()), (1, 9, m(1)), (3, 4, m(3))]);
        assert_eq!(new, 2);
        assert_eq!(corpus.cases[0], m(1));
    }
}
