//! The exploration summary: counts that stream in seed by seed (memory does not grow with the
//! number of seeds), merge across shards, and print.
//!
//! Failing seeds are kept per checker: the `KEEP_FIRST` smallest seeds of every checker (a seed
//! appears once, with all its checkers), so a checker that fails only late still has its first
//! seeds. The rule is stable under merging: pruning each shard, then the union, keeps exactly
//! what pruning all seeds at once keeps. With a reference lock (the differential oracle), the
//! [`Differential`] counts per checker the seeds where only the lock under test fails.

use crate::checker;
use crate::liveness::percentile;
use crate::model::Verdict;
use crate::run::expect::{exploration_check, Status};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many failing seeds (the smallest, per checker) and errors a summary keeps.
pub(crate) const KEEP_FIRST: usize = 10;

pub use super::failing::FailingSeed;

/// A seed that could not be judged: the world failed or user code panicked.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeedError {
    /// The seed.
    pub seed: u64,
    /// What happened.
    pub message: String,
}

/// Two runs of one seed that did not give the same history.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DeterminismFailure {
    /// The seed.
    pub seed: u64,
    /// Where the histories part, and how.
    pub first_difference: String,
}

/// Per fault kind: how many seeds had it, and how many of those violated some checker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCount {
    /// Seeds whose plan had this kind.
    pub seeds: u64,
    /// Of those, seeds with a violation.
    pub violating: u64,
}

/// Wall-clock figures (they differ between runs and machines, so they are not part of the
/// outcome that shards must reproduce).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Wall seconds spent.
    pub wall_s: f64,
    /// Scenarios per wall second.
    pub scenarios_per_s: f64,
    /// Simulated seconds per wall second.
    pub sim_s_per_wall_s: f64,
    /// Worker threads.
    pub jobs: usize,
}

/// Adds the counts of `from` into `into`, key by key, saturating (counts read from a file may be
/// as large as u64 allows).
fn add_counts<K: Ord + Clone>(into: &mut BTreeMap<K, u64>, from: &BTreeMap<K, u64>) {
    for (key, n) in from {
        let count = into.entry(key.clone()).or_default();
        *count = count.saturating_add(*n);
    }
}

/// Everything an exploration found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExploreSummary {
    /// The template scenario's name.
    pub scenario: String,
    /// The lock algorithm.
    pub algorithm: String,
    /// Seeds run to the end (errors included).
    pub seeds_run: u64,
    /// Set when `--time-limit` stopped the exploration before every seed ran: the seeds it was
    /// to run (`seeds_run` of them did: the first ones, in order; [`RunSpan`] covers only those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds_planned: Option<u64>,
    /// Seeds with at least one violation.
    pub seeds_violating: u64,
    /// Invalid verdicts per checker.
    pub violations: BTreeMap<String, u64>,
    /// Unknown verdicts per checker.
    pub unknown: BTreeMap<String, u64>,
    /// The smallest failing seeds of each checker, in seed order.
    pub first_failing: Vec<FailingSeed>,
    /// Seeds that could not be judged (count).
    pub errors: u64,
    /// The smallest such seeds.
    pub first_errors: Vec<SeedError>,
    /// Per fault kind.
    pub fault_kinds: BTreeMap<String, KindCount>,
    /// Acquire latency histogram: ms → episodes.
    pub acquire_latency_ms: BTreeMap<u64, u64>,
    /// Acquire episodes that never got the lock.
    pub acquires_abandoned: u64,
    /// Total time the lock was free while someone waited, ms.
    pub unavailable_ms: u64,
    /// Total simulated time, ms.
    pub sim_ms: u64,
    /// Seeds rerun to check determinism.
    pub determinism_checked: u64,
    /// Seeds whose rerun differed.
    pub determinism_failures: Vec<DeterminismFailure>,
    /// Wall-clock figures.
    pub throughput: Throughput,
    /// The differential oracle's counts, when a reference lock ran on the same seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differential: Option<Differential>,
    /// Which run this is, and which of its seeds it covers (what `lockstep merge` checks); not
    /// part of [`Self::outcome`]. `None` in summaries of older builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunSpan>,
    /// Coverage of a guided (anchored or mixed) exploration: distinct signatures and their
    /// growth over seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<super::coverage::CoverageSummary>,
    /// The assumption-bounded profile's counts (`explore --bounded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assumptions: Option<Bounded>,
    /// Without `--bounded`: every seed's plan classified by the lock's assumptions it broke,
    /// the plans left as generated. A violating seed whose plan broke none of the assumptions
    /// the violated checker needs is the lock's own bug; shrinking and the counterexample take
    /// those seeds first (`first_bugs`), before seeds that only show the lease's limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classified: Option<Bounded>,
    /// The first implementation-bug seed ([`Self::first_bug`]), for machines: what the console's
    /// "seeds to the first implementation bug" line names. Derived from the counts above, set by
    /// [`Self::refresh_first_bug`] when an exploration or a merge ends; not part of
    /// [`Self::outcome`]. `None` without a bug seed, and in summaries of older builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bug_seed: Option<u64>,
    /// The seeds run up to and including [`Self::first_bug_seed`] (issue 42: seeds to the first
    /// bug): set only when the summary covers one whole range of seeds ([`Self::whole_range`]:
    /// unsharded, or every shard of it merged), as the console line; not part of
    /// [`Self::outcome`] (a shard's count is not the whole's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds_to_first_bug: Option<u64>,
    /// The fault generator's version ([`super::GENERATOR_VERSION`]) whose plans the seeds name;
    /// `None` in summaries of older builds. Not part of [`Self::outcome`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_version: Option<u32>,
    /// The implementation-bug seeds (as [`Self::first_bug`] counts them: with a reference, the
    /// checkers it keeps) per class of cause ([`super::groups`]): what `explore` shrinks one of
    /// each. Empty in summaries of older builds.
    #[serde(default, skip_serializing_if = "super::groups::Groups::is_empty")]
    pub bug_groups: super::groups::Groups,
    /// Every violating seed (with a reference, where only the subject fails) per class of
    /// cause: what `explore` shrinks one of each when no seed is an implementation bug, so that a
    /// violation of one fault class does not hide the others.
    #[serde(default, skip_serializing_if = "super::groups::Groups::is_empty")]
    pub violation_groups: super::groups::Groups,
}

/// An exploration under the assumption-bounded profile: every plan was brought inside the
/// lock's hard assumptions (clocks, masters); a plan may still break the timing assumption (a
/// pause past the validity left), under which fewer checkers are promised. A promised checker
/// answering invalid is an implementation bug, not the lease model's limit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounded {
    /// Seeds whose plan kept every assumption.
    pub seeds_in_bounds: u64,
    /// Seeds whose plan broke each assumption.
    pub broken: BTreeMap<String, u64>,
    /// Seeds that violated a promised checker (implementation bugs).
    pub seeds_bug: u64,
    /// Violating seeds (any checker) whose plan broke an assumption: the lease's limit, not a bug.
    pub seeds_violating_outside: u64,
    /// The first violating seeds: seed, checkers violated, assumptions its plan broke (empty:
    /// none), and whether a promised checker is among them.
    pub first_violating: Vec<(u64, Vec<String>, Vec<String>, bool)>,
    /// The smallest implementation-bug seeds of each checker (`checkers`: only the promised
    /// checkers it violated), with their bounded case: what `explore --bounded` shrinks. Kept
    /// apart from `first_violating`, whose first seeds may all be outside the assumptions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_bugs: Vec<FailingSeed>,
}

impl Bounded {
    /// Adds one seed: its verdicts, the assumptions its plan broke, the promised checkers it
    /// violated.
    pub fn add(&mut self, seed: u64, verdicts: &[(String, Verdict)], broken: &[String], bugs: &[String]) {
        if broken.is_empty() {
            self.seeds_in_bounds += 1;
        }
        for b in broken {
            *self.broken.entry(b.clone()).or_default() += 1;
        }
        let invalid: Vec<String> = verdicts
            .iter()
            .filter(|(_, v)| *v == Verdict::Invalid)
            .map(|(c, _)| c.clone())
            .collect();
        if !bugs.is_empty() {
            self.seeds_bug += 1;
        } else if !invalid.is_empty() {
            self.seeds_violating_outside += 1;
        }
        if !invalid.is_empty() {
            self.first_violating
                .push((seed, invalid, broken.to_vec(), !bugs.is_empty()));
            self.first_violating.sort();
            self.first_violating.truncate(KEEP_FIRST);
        }
    }

    /// Adds an implementation-bug seed (its promised checkers violated, and its case).
    pub(crate) fn add_bug(&mut self, bug: FailingSeed) {
        self.first_bugs.push(bug);
        keep_smallest_per_checker(&mut self.first_bugs);
    }

    /// Combines a shard's counts into these.
    pub fn merge(&mut self, other: &Bounded) {
        self.first_bugs.extend(other.first_bugs.iter().cloned());
        keep_smallest_per_checker(&mut self.first_bugs);
        self.seeds_in_bounds = self.seeds_in_bounds.saturating_add(other.seeds_in_bounds);
        add_counts(&mut self.broken, &other.broken);
        self.seeds_bug = self.seeds_bug.saturating_add(other.seeds_bug);
        self.seeds_violating_outside = self
            .seeds_violating_outside
            .saturating_add(other.seeds_violating_outside);
        self.first_violating.extend(other.first_violating.iter().cloned());
        self.first_violating.sort();
        self.first_violating.truncate(KEEP_FIRST);
    }

    /// `seed [checkers]; …` for the first implementation-bug seeds.
    fn first_bugs_text(&self) -> String {
        let seeds: Vec<String> = self
            .first_bugs
            .iter()
            .map(|f| format!("{} [{}]", f.seed, f.checkers.join(",")))
            .collect();
        seeds.join("; ")
    }

    /// The summary's lines for an exploration whose plans were not bounded
    /// ([`ExploreSummary::classified`]): which violating seeds are the lock's own bugs.
    /// `shrunk`: these seeds are what `explore` shrinks (no reference lock: with one, the
    /// differential's own bug seeds are).
    pub(crate) fn render_classified(&self, lock: &str, shrunk: bool) -> String {
        let mut out = format!(
            "  by {lock}'s assumptions (docs/assumptions.md): {} violating seeds broke none that the violated checker \
             needs: {}\n",
            self.seeds_bug,
            if self.seeds_bug == 0 {
                "no implementation bug among them"
            } else {
                "IMPLEMENTATION BUG (a correct lock keeps these)"
            }
        );
        if !self.first_bugs.is_empty() {
            out.push_str(&format!(
                "    first implementation-bug seeds: {}{}\n",
                self.first_bugs_text(),
                if shrunk {
                    " (one seed of each distinct bug is shrunk, for the checker the lock promises)"
                } else {
                    ""
                }
            ));
        }
        let mut broken: Vec<(&String, &u64)> = self.broken.iter().collect();
        broken.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        out.push_str(&format!(
            "    {} violating seeds broke an assumption (the lease's limit, not a bug){}\n",
            self.seeds_violating_outside,
            if self.seeds_violating_outside == 0 {
                String::new()
            } else {
                format!(
                    "; plans breaking each, violating or not: {}",
                    broken
                        .iter()
                        .map(|(a, n)| format!("{a} {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        ));
        out
    }

    /// The summary's lines.
    pub fn render(&self, lock: &str) -> String {
        let mut out = format!(
            "  assumption-bounded profile: {} seeds kept every assumption; broken: {}\n",
            self.seeds_in_bounds,
            if self.broken.is_empty() {
                "none".to_string()
            } else {
                self.broken
                    .iter()
                    .map(|(a, n)| format!("{a} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        out.push_str(&format!(
            "    {} seeds violate a checker {lock} promises under their plan: {}\n    {} violating seeds broke an \
             assumption (the lease's limit, not a bug)\n",
            self.seeds_bug,
            if self.seeds_bug == 0 {
                "no implementation bug found"
            } else {
                "IMPLEMENTATION BUG (a correct lock keeps these)"
            },
            self.seeds_violating_outside
        ));
        if !self.first_bugs.is_empty() {
            out.push_str(&format!(
                "    first implementation-bug seeds (promised checkers violated): {}\n",
                self.first_bugs_text()
            ));
        }
        for (seed, checkers, broken, bug) in &self.first_violating {
            out.push_str(&format!(
                "    seed {seed} [{}]: broke {}{}\n",
                checkers.join(","),
                if broken.is_empty() {
                    "no assumption".to_string()
                } else {
                    broken.join(", ")
                },
                if *bug { " -> implementation bug" } else { "" }
            ));
        }
        out
    }
}

/// The differential oracle: the lock under test against a reference lock, on the same seeds and
/// fault plans. A seed counts as "only the lock under test fails" for a checker when the subject
/// answered invalid and the reference did not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Differential {
    /// The reference lock's name.
    pub reference: String,
    /// Seeds where the subject fails some checker the reference does not.
    pub seeds_only_subject: u64,
    /// Per checker: seeds invalid for the subject only.
    pub only_subject: BTreeMap<String, u64>,
    /// Per checker: seeds invalid for the reference only.
    pub only_reference: BTreeMap<String, u64>,
    /// Per checker: seeds invalid for both.
    pub both: BTreeMap<String, u64>,
    /// Seeds the reference could not run (they count for no checker).
    pub reference_errors: u64,
    /// The smallest seeds where only the subject fails, per checker (`checkers`: those).
    pub first_only_subject: Vec<FailingSeed>,
    /// The smallest implementation-bug seeds (a checker the subject promises under the plan
    /// violated, [`ExploreSummary::classified`]) where the reference keeps that checker, per
    /// checker (`checkers`: those promised checkers): what `--against` shrinks first, each for
    /// its promised checker, before seeds where the subject only shows the lease's limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_bugs: Vec<FailingSeed>,
    /// With `--against FILE`: the parts of FILE that differ from the template and were not used
    /// (only its `[lock]` algorithm settings are; the template's are used for the rest), by
    /// section (`[topology]`, `[[client]]`, ...). Empty for a preset, or for a file that differs
    /// only in its lock (issue 42, item 8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub against_unused: Vec<String>,
}

impl Differential {
    /// Empty counts against `reference`.
    pub fn new(reference: &str) -> Self {
        let zero = || checker::NAMES.iter().map(|n| (n.to_string(), 0)).collect();
        Differential {
            reference: reference.to_string(),
            only_subject: zero(),
            only_reference: zero(),
            both: zero(),
            ..Differential::default()
        }
    }

    /// Adds one seed: the subject's and the reference's verdicts (`None`: it could not run).
    pub fn add(
        &mut self,
        seed: u64,
        subject: &[(String, Verdict)],
        reference: Option<&[(String, Verdict)]>,
        fault_kinds: &[String],
        faults: usize,
    ) {
        let Some(reference) = reference else {
            self.reference_errors += 1;
            return;
        };
        let is = |list: &[(String, Verdict)], name: &str, verdict: Verdict| {
            list.iter().any(|(c, v)| c == name && *v == verdict)
        };
        let mut only = Vec::new();
        for name in checker::NAMES {
            // A checker the reference cannot be judged on (no fencing tokens: `token-order`
            // unknown) compares nothing: it is left out of the difference.
            if is(subject, name, Verdict::Invalid) && is(reference, name, Verdict::Unknown) {
                continue;
            }
            let (s, r) = (
                is(subject, name, Verdict::Invalid),
                is(reference, name, Verdict::Invalid),
            );
            let counter = match (s, r) {
                (true, false) => &mut self.only_subject,
                (false, true) => &mut self.only_reference,
                (true, true) => &mut self.both,
                (false, false) => continue,
            };
            *counter.entry(name.to_string()).or_default() += 1;
            if s && !r {
                only.push(name.to_string());
            }
        }
        if !only.is_empty() {
            self.seeds_only_subject += 1;
            let mut kinds = fault_kinds.to_vec();
            kinds.sort();
            kinds.dedup();
            self.first_only_subject.push(FailingSeed {
                seed,
                checkers: only,
                fault_kinds: kinds,
                faults,
                case: None,
                drawn: Vec::new(),
            });
            keep_smallest_per_checker(&mut self.first_only_subject);
        }
    }

    /// Combines a shard's counts into these.
    pub fn merge(&mut self, other: &Differential) {
        self.seeds_only_subject = self.seeds_only_subject.saturating_add(other.seeds_only_subject);
        for (mine, theirs) in [
            (&mut self.only_subject, &other.only_subject),
            (&mut self.only_reference, &other.only_reference),
            (&mut self.both, &other.both),
        ] {
            add_counts(mine, theirs);
        }
        self.reference_errors = self.reference_errors.saturating_add(other.reference_errors);
        self.first_only_subject.extend(other.first_only_subject.iter().cloned());
        keep_smallest_per_checker(&mut self.first_only_subject);
        self.first_bugs.extend(other.first_bugs.iter().cloned());
        keep_smallest_per_checker(&mut self.first_bugs);
        // Shards of one exploration share the reference file: keep the note (once).
        if self.against_unused.is_empty() {
            self.against_unused = other.against_unused.clone();
        }
    }

    /// Adds an implementation-bug seed of the subject (`bug.checkers`: the promised checkers it
    /// violated), keeping only the checkers the reference (its verdicts `reference`) holds on
    /// the same plan — where both fail, no fix of the subject makes it pass.
    pub(crate) fn add_bug(&mut self, mut bug: FailingSeed, reference: Option<&[(String, Verdict)]>) {
        let Some(reference) = reference else { return };
        bug.checkers
            .retain(|c| reference.iter().any(|(name, v)| name == c && *v == Verdict::Valid));
        if !bug.checkers.is_empty() {
            self.first_bugs.push(bug);
            keep_smallest_per_checker(&mut self.first_bugs);
        }
    }
}

fn keep_smallest<T: Ord>(list: &mut Vec<T>) {
    list.sort();
    list.truncate(KEEP_FIRST);
}

/// Keeps the seeds that are among the [`KEEP_FIRST`] smallest of any of their checkers, in seed
/// order (one entry per seed).
fn keep_smallest_per_checker(list: &mut Vec<FailingSeed>) {
    list.sort();
    list.dedup_by_key(|f| f.seed);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    list.retain(|f| {
        let mut keep = false;
        for c in &f.checkers {
            let n = seen.entry(c.clone()).or_default();
            if *n < KEEP_FIRST {
                keep = true;
            }
            *n += 1;
        }
        keep
    });
}

impl ExploreSummary {
    /// An empty summary for a template.
    pub fn new(scenario: &str, algorithm: &str) -> Self {
        ExploreSummary {
            scenario: scenario.to_string(),
            algorithm: algorithm.to_string(),
            violations: checker::NAMES.iter().map(|n| (n.to_string(), 0)).collect(),
            unknown: checker::NAMES.iter().map(|n| (n.to_string(), 0)).collect(),
            generator_version: Some(super::GENERATOR_VERSION),
            ..Default::default()
        }
    }

    /// Adds one seed's verdicts.
    pub(crate) fn add_verdicts(
        &mut self,
        seed: u64,
        verdicts: &[(String, Verdict)],
        fault_kinds: &[String],
        faults: usize,
    ) {
        self.seeds_run += 1;
        let invalid: Vec<String> = verdicts
            .iter()
            .filter(|(_, v)| *v == Verdict::Invalid)
            .map(|(c, _)| c.clone())
            .collect();
        for (checker, verdict) in verdicts {
            match verdict {
                Verdict::Invalid => *self.violations.entry(checker.clone()).or_default() += 1,
                Verdict::Unknown => *self.unknown.entry(checker.clone()).or_default() += 1,
                Verdict::Valid => {}
            }
        }
        let mut kinds = fault_kinds.to_vec();
        kinds.sort();
        kinds.dedup();
        for kind in &kinds {
            let count = self.fault_kinds.entry(kind.clone()).or_default();
            count.seeds += 1;
            count.violating += u64::from(!invalid.is_empty());
        }
        if !invalid.is_empty() {
            self.seeds_violating += 1;
            self.first_failing.push(FailingSeed {
                seed,
                checkers: invalid,
                fault_kinds: kinds,
                faults,
                case: None,
                drawn: Vec::new(),
            });
            keep_smallest_per_checker(&mut self.first_failing);
        }
    }

    /// Adds a seed that could not be judged.
    pub(crate) fn add_error(&mut self, seed: u64, message: String) {
        self.seeds_run += 1;
        self.errors += 1;
        self.first_errors.push(SeedError { seed, message });
        keep_smallest(&mut self.first_errors);
    }

    /// Adds a run's liveness figures and simulated time.
    pub(crate) fn add_liveness(&mut self, liveness: &crate::liveness::Liveness, sim_ms: u64) {
        for latency in &liveness.acquire_latencies_ms {
            *self.acquire_latency_ms.entry(*latency).or_default() += 1;
        }
        self.acquires_abandoned += liveness.acquires_abandoned;
        self.unavailable_ms += liveness.unavailable_ms;
        self.sim_ms += sim_ms;
    }

    /// Checks that the counts agree with each other (a summary read from a file may have been
    /// edited or damaged): no count of seeds above `seeds_run`, and the seeds planned at least
    /// those run. The message names the field.
    pub(crate) fn check_counts(&self) -> Result<(), String> {
        let run = self.seeds_run;
        let over = |field: &str, value: u64| -> Result<(), String> {
            if value > run {
                return Err(format!("field `{field}`: {value} is more than the {run} seeds run"));
            }
            Ok(())
        };
        over("seeds_violating", self.seeds_violating)?;
        over("errors", self.errors)?;
        over("determinism_checked", self.determinism_checked)?;
        over("seeds_to_first_bug", self.seeds_to_first_bug.unwrap_or(0))?;
        for (name, map) in [("violations", &self.violations), ("unknown", &self.unknown)] {
            for (checker, count) in map {
                over(&format!("{name}.{checker}"), *count)?;
            }
        }
        for (kind, count) in &self.fault_kinds {
            over(&format!("fault_kinds.{kind}.seeds"), count.seeds)?;
            if count.violating > count.seeds {
                return Err(format!(
                    "field `fault_kinds.{kind}.violating`: {} is more than its {} seeds",
                    count.violating, count.seeds
                ));
            }
        }
        if let Some(planned) = self.seeds_planned.filter(|p| *p < run) {
            return Err(format!(
                "field `seeds_planned`: {planned} is fewer than the {run} seeds run"
            ));
        }
        Ok(())
    }

    /// Sets the throughput's rates from `throughput.wall_s`, the seeds run and the simulated time.
    pub(crate) fn set_rates(&mut self) {
        let wall_s = self.throughput.wall_s.max(1e-9);
        self.throughput.scenarios_per_s = self.seeds_run as f64 / wall_s;
        self.throughput.sim_s_per_wall_s = self.sim_ms as f64 / 1_000.0 / wall_s;
    }

    /// The first implementation-bug seed and the seeds run up to and including it (issue 42:
    /// seeds to the first bug) — with a reference, of the bug seeds the reference keeps; else
    /// of the bounded profile's or the classification's. The count needs the run's span (one
    /// whole range, [`Self::whole_range`]); `None` without a bug seed.
    pub fn first_bug(&self) -> Option<(u64, Option<u64>)> {
        let bugs = match &self.differential {
            Some(d) => &d.first_bugs,
            None => match (&self.assumptions, &self.classified) {
                (Some(b), _) | (None, Some(b)) => &b.first_bugs,
                (None, None) => return None,
            },
        };
        let seed = bugs.iter().map(|f| f.seed).min()?;
        let count = self
            .whole_range()
            .filter(|range| range.start <= seed)
            .map(|range| seed - range.start + 1);
        Some((seed, count))
    }

    /// The one range of seeds this summary covers whole: one unsharded span, or every shard
    /// `1..=N` of one range (merged), none cut short by a time limit. The seeds to the first bug
    /// count from its start (issue 53: the merge of a sharded run prints them for the range).
    pub fn whole_range(&self) -> Option<std::ops::Range<u64>> {
        let spans = self.run.as_ref().map(|r| r.spans.as_slice())?;
        let first = spans.first()?;
        let count = first.shard_count;
        let whole = self.seeds_planned.is_none()
            && spans.len() as u64 == count
            && spans.iter().enumerate().all(|(i, s)| {
                (s.seeds_start, s.seeds_end, s.shard_count, s.shard_index)
                    == (first.seeds_start, first.seeds_end, count, i as u64 + 1)
            });
        whole.then_some(first.seeds_start..first.seeds_end)
    }

    /// Sets [`Self::first_bug_seed`] and [`Self::seeds_to_first_bug`] from [`Self::first_bug`]:
    /// the machine-readable copy of the console's line.
    pub fn refresh_first_bug(&mut self) {
        let first = self.first_bug();
        self.first_bug_seed = first.map(|(seed, _)| seed);
        self.seeds_to_first_bug = first.and_then(|(_, count)| count);
    }

    /// Combines a shard's summary into this one (counts saturate: a damaged input cannot wrap
    /// them around).
    pub fn merge(&mut self, other: &ExploreSummary) {
        let fresh = self.scenario.is_empty() && self.seeds_run == 0;
        if self.scenario.is_empty() {
            self.scenario = other.scenario.clone();
            self.algorithm = other.algorithm.clone();
        }
        // Parts of one run share a generator ([`check_strategies`] refuses two).
        self.generator_version = self.generator_version.or(other.generator_version);
        // A part cut short by its time limit leaves the whole cut short: planned seeds add up.
        if self.seeds_planned.is_some() || other.seeds_planned.is_some() {
            let planned = |s: &ExploreSummary| s.seeds_planned.unwrap_or(s.seeds_run);
            self.seeds_planned = Some(planned(self).saturating_add(planned(other)));
        }
        self.seeds_run = self.seeds_run.saturating_add(other.seeds_run);
        self.seeds_violating = self.seeds_violating.saturating_add(other.seeds_violating);
        add_counts(&mut self.violations, &other.violations);
        add_counts(&mut self.unknown, &other.unknown);
        self.first_failing.extend(other.first_failing.iter().cloned());
        keep_smallest_per_checker(&mut self.first_failing);
        match (&mut self.differential, &other.differential) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.differential = Some(theirs.clone()),
            _ => {}
        }
        match (&mut self.assumptions, &other.assumptions) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.assumptions = Some(theirs.clone()),
            _ => {}
        }
        self.bug_groups.merge(&other.bug_groups);
        self.violation_groups.merge(&other.violation_groups);
        match (&mut self.coverage, &other.coverage) {
            (Some(mine), Some(theirs)) => mine.merge(theirs, self.seeds_run),
            (None, Some(theirs)) => self.coverage = Some(theirs.clone()),
            _ => {}
        }
        match (&mut self.classified, &other.classified) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.classified = Some(theirs.clone()),
            _ => {}
        }
        self.errors = self.errors.saturating_add(other.errors);
        self.first_errors.extend(other.first_errors.iter().cloned());
        keep_smallest(&mut self.first_errors);
        for (k, v) in &other.fault_kinds {
            let count = self.fault_kinds.entry(k.clone()).or_default();
            count.seeds = count.seeds.saturating_add(v.seeds);
            count.violating = count.violating.saturating_add(v.violating);
        }
        add_counts(&mut self.acquire_latency_ms, &other.acquire_latency_ms);
        self.acquires_abandoned = self.acquires_abandoned.saturating_add(other.acquires_abandoned);
        self.unavailable_ms = self.unavailable_ms.saturating_add(other.unavailable_ms);
        self.sim_ms = self.sim_ms.saturating_add(other.sim_ms);
        self.determinism_checked = self.determinism_checked.saturating_add(other.determinism_checked);
        self.determinism_failures
            .extend(other.determinism_failures.iter().cloned());
        self.determinism_failures.sort();
        self.throughput.wall_s = self.throughput.wall_s.max(other.throughput.wall_s);
        self.throughput.jobs = self.throughput.jobs.saturating_add(other.throughput.jobs);
        // Parts that ran side by side: their seeds over the longest part's wall time.
        self.set_rates();
        self.run = match (self.run.take(), &other.run) {
            (None, theirs) if fresh => theirs.clone(),
            (Some(mut mine), Some(theirs)) if mine.run_id == theirs.run_id => {
                mine.spans.extend(theirs.spans.iter().copied());
                mine.spans.sort();
                Some(mine)
            }
            // Spans of different or unknown runs do not add up to a span.
            _ => None,
        };
        // Shards of one whole range: the coverage grows over the range as one run's would.
        if let (Some(range), Some(coverage)) = (self.whole_range(), self.coverage.as_mut()) {
            coverage.regrow(range);
        }
        self.refresh_first_bug();
    }

    /// The summary without its wall-clock figures: what shards must reproduce exactly.
    pub fn outcome(&self) -> ExploreSummary {
        ExploreSummary {
            throughput: Throughput::default(),
            run: None,
            first_bug_seed: None,
            seeds_to_first_bug: None,
            generator_version: None,
            ..self.clone()
        }
    }

    /// SHA-256 (hex) of the deterministic part ([`Self::outcome`]) as JSON: what two runs of the
    /// same exploration, on any machine and in any sharding, must agree on.
    pub fn outcome_digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let json = serde_json::to_string(&self.outcome()).unwrap_or_default();
        hex::encode(Sha256::digest(json.as_bytes()))
    }

    /// Acquire latency percentile `p`, ms.
    pub(crate) fn acquire_latency_percentile(&self, p: u64) -> Option<u64> {
        // u128: counts read from a file may be as large as u64 allows.
        let total: u128 = self.acquire_latency_ms.values().map(|c| u128::from(*c)).sum();
        if total == 0 {
            return None;
        }
        let rank = (u128::from(p.min(100)) * total).div_ceil(100).max(1);
        let mut seen: u128 = 0;
        for (latency, count) in &self.acquire_latency_ms {
            seen += u128::from(*count);
            if seen >= rank {
                return Some(*latency);
            }
        }
        // Unreachable: the ranks add up to `total`. Fall back to the nearest-rank helper.
        percentile(&[], p)
    }

    /// Unavailability as a share of simulated time.
    pub fn unavailability(&self) -> f64 {
        if self.sim_ms == 0 {
            0.0
        } else {
            self.unavailable_ms as f64 / self.sim_ms as f64
        }
    }

    /// Grants over every seed run: the acquire episodes that got the lock (saturating: counts
    /// read from a file may be as large as u64 allows).
    pub fn grants(&self) -> u64 {
        self.acquire_latency_ms
            .values()
            .fold(0u64, |sum, n| sum.saturating_add(*n))
    }

    /// Whether the exploration checked nothing although seeds ran: no seed that could be judged
    /// ever granted the lock, so every safety verdict holds over an empty history — the vacuity
    /// rule of a single run (`progress`, see `crate::run::expect::liveness_check`) over all the
    /// seeds. A vacuous exploration is never a pass, whatever its expectations.
    pub fn is_vacuous(&self) -> bool {
        self.seeds_run > self.errors && self.grants() == 0
    }

    /// Why [`Self::is_vacuous`], in words (`None` when it is not).
    pub fn vacuity(&self) -> Option<String> {
        self.is_vacuous().then(|| {
            let abandoned = self.acquires_abandoned;
            let why = if abandoned > 0 {
                format!("{abandoned} acquires waited in vain")
            } else {
                "no client ever asked for it".to_string()
            };
            format!(
                "vacuous: no seed of {} ever granted the lock ({why}): every safety verdict holds over an empty \
                 history, nothing was tested (not a pass)",
                self.seeds_run - self.errors
            )
        })
    }

    /// Whether nothing went wrong: no violation, no error, no determinism failure.
    pub fn is_clean(&self) -> bool {
        self.seeds_violating == 0 && self.errors == 0 && self.determinism_failures.is_empty()
    }

    /// The smallest kept failing seeds of `checker`, in seed order.
    #[cfg(test)]
    fn first_failing_of<'a>(&'a self, checker: &'a str) -> impl Iterator<Item = &'a FailingSeed> + 'a {
        self.first_failing
            .iter()
            .filter(move |f| f.checkers.iter().any(|c| c == checker))
    }

    /// The status of a whole exploration: the worst of its checks over `checkers`, and `Error`
    /// when seeds could not be judged or were not deterministic.
    pub fn status(
        &self,
        checkers: &[&str],
        expect: &BTreeMap<String, crate::scenario::ExploreExpect>,
        partial: bool,
    ) -> Status {
        if self.errors > 0 || !self.determinism_failures.is_empty() {
            return Status::Error;
        }
        // No seed got the lock: nothing was checked. One shard's seeds may all miss it while
        // another's do not: as a `some-invalid` not yet found, that is left to the merge.
        if self.is_vacuous() && !partial {
            return Status::Fail;
        }
        // With a reference lock (the differential oracle), a seed where only the lock under test
        // fails is a failure whatever the per-checker expectations say; a reference that could not
        // run leaves the comparison incomplete.
        if let Some(differential) = &self.differential {
            if differential.reference_errors > 0 {
                return Status::Error;
            }
            if differential.seeds_only_subject > 0 {
                return Status::Fail;
            }
        }
        // Under the assumption-bounded profile (no reference), a checker the template's lock
        // promised under a seed's plan answering invalid is an implementation bug.
        if self.differential.is_none() && self.assumptions.as_ref().is_some_and(|b| b.seeds_bug > 0) {
            return Status::Fail;
        }
        Status::worst(checkers.iter().map(|name| {
            let invalid = self.violations.get(*name).copied().unwrap_or(0);
            exploration_check(expect.get(*name).copied(), invalid, partial)
        }))
    }

    /// Whether the exploration passes as a gate (exit code 0, `"ok"` in JSON): some seed ran,
    /// some seed granted the lock ([`Self::is_vacuous`]), and
    /// [`Self::is_clean_against_reference`]. An exploration that ran no seed (a time limit
    /// shorter than one seed), or in which nobody ever got the lock, checked nothing: it never
    /// passes.
    pub fn passed(&self) -> bool {
        self.seeds_run > 0 && !self.is_vacuous() && self.is_clean_against_reference()
    }

    /// With a reference: whether the lock under test failed no checker that the reference
    /// passed, and no seed errored or diverged. Without one: [`Self::is_clean`].
    pub fn is_clean_against_reference(&self) -> bool {
        match &self.differential {
            Some(d) => {
                d.seeds_only_subject == 0
                    && self.errors == 0
                    && d.reference_errors == 0
                    && self.determinism_failures.is_empty()
            }
            // Under the assumption-bounded profile only a promised checker violated fails.
            None => match &self.assumptions {
                Some(b) => b.seeds_bug == 0 && self.errors == 0 && self.determinism_failures.is_empty(),
                None => self.is_clean(),
            },
        }
    }
}

/// Which run a summary belongs to and which of its seeds it covers: `lockstep merge` merges
/// summaries of one run (the same `run_id`) whose spans share no seed, and refuses the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSpan {
    /// SHA-256 (hex) of what defines the run apart from its seeds: lockstep's version, the
    /// template scenario, the fault profile and strategy, the locks and the determinism sample.
    pub run_id: String,
    /// The seeds covered: one span per shard merged into the summary, in order.
    pub spans: Vec<SeedSpan>,
    /// How the run placed its faults (`None`: a summary written before lockstep recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<RunStrategy>,
}

/// How an exploration placed its faults, as far as merging its shards is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStrategy {
    /// At random: a seed's case depends on the seed alone.
    Random,
    /// At random inside the template lock's assumptions (`--bounded`): seed by seed too.
    Bounded,
    /// Around the lock's own events, with coverage feedback (`--strategy anchored`).
    Anchored,
    /// Half anchored, half random, with coverage feedback (`--strategy mixed`).
    Mixed,
}

impl RunStrategy {
    /// The name a summary and `merge`'s messages use.
    pub const fn name(self) -> &'static str {
        match self {
            RunStrategy::Random => "random",
            RunStrategy::Bounded => "bounded",
            RunStrategy::Anchored => "anchored",
            RunStrategy::Mixed => "mixed",
        }
    }

    /// Guided placement: a seed's case depends on the corpus grown from the seeds its process ran
    /// before it, so a shard does not reproduce its seeds of the unsharded run (its own run of
    /// them is deterministic from the range, K and N).
    pub const fn is_guided(self) -> bool {
        matches!(self, RunStrategy::Anchored | RunStrategy::Mixed)
    }
}

impl ExploreSummary {
    /// The run's strategy: recorded, or for an older summary `Some(Mixed)` when it reports
    /// coverage (only guided runs do), else `None` (unknown).
    pub fn strategy(&self) -> Option<RunStrategy> {
        self.run
            .as_ref()
            .and_then(|r| r.strategy)
            .or_else(|| self.coverage.is_some().then_some(RunStrategy::Mixed))
    }
}

/// Refuses to merge `parts` (file, summary) that are not parts of one run: summaries of two
/// generator versions or of different strategies. Shards of a guided strategy merge: each grew
/// its own corpus over its own seeds (issue 53), so the merge is the union of their findings,
/// every seed's case kept with it where its seed alone does not give it.
pub(crate) fn check_strategies(parts: &[(String, ExploreSummary)]) -> Result<(), String> {
    let Some((first_file, first)) = parts.first() else {
        return Ok(());
    };
    for (file, part) in &parts[1..] {
        if let (Some(a), Some(b)) = (first.generator_version, part.generator_version) {
            if a != b {
                return Err(format!(
                    "{file}: its seeds are plans of fault generator v{b} but {first_file}'s of v{a}: the same seed \
                     names another plan under each, so they are different runs and do not merge as one"
                ));
            }
        }
        let (a, b) = (first.strategy(), part.strategy());
        if let (Some(a), Some(b)) = (a, b) {
            if a != b {
                return Err(format!(
                    "{file}: explored with strategy {} but {first_file} with {}: summaries of different strategies are \
                     different runs and do not merge as one",
                    b.name(),
                    a.name()
                ));
            }
        }
    }
    Ok(())
}

/// The seeds one exploration process ran: shard `shard_index` of `shard_count` (1 of 1: all)
/// of `seeds_start..seeds_end`, that is the seeds at positions `i` with
/// `i % shard_count == shard_index - 1` (as `crate::explore::shard_seed` deals them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeedSpan {
    /// The first seed of the range.
    pub seeds_start: u64,
    /// The end of the range (exclusive).
    pub seeds_end: u64,
    /// The shard (1-based).
    pub shard_index: u64,
    /// The number of shards.
    pub shard_count: u64,
}

impl SeedSpan {
    /// Whether the span is well formed: `start <= end`, `1 <= index <= count`.
    pub(crate) fn is_valid(&self) -> bool {
        self.seeds_start <= self.seeds_end && self.shard_index >= 1 && self.shard_index <= self.shard_count
    }

    /// The residue of its seeds modulo `shard_count`.
    fn residue(&self) -> u64 {
        let count = u128::from(self.shard_count.max(1));
        ((u128::from(self.seeds_start) + u128::from(self.shard_index.saturating_sub(1))) % count) as u64
    }

    /// Whether some seed is in both spans. Exact unless the two shard counts are both above
    /// a million and coprime-ish over a huge common range; then it answers `true` (refusing a
    /// merge is safe, double counting is not).
    pub(crate) fn overlaps(&self, other: &SeedSpan) -> bool {
        let (lo, hi) = (
            self.seeds_start.max(other.seeds_start),
            self.seeds_end.min(other.seeds_end),
        );
        if lo >= hi {
            return false;
        }
        // Walk the progression with the larger step; the other's residue repeats within
        // `small / gcd` steps.
        let (big, small) = if self.shard_count >= other.shard_count {
            (self, other)
        } else {
            (other, self)
        };
        let (step, small_count) = (big.shard_count.max(1), small.shard_count.max(1));
        let period = small_count / gcd(step, small_count);
        // The first seed of `big` at or after `lo`.
        let offset =
            (u128::from(big.residue()) + u128::from(step) - u128::from(lo) % u128::from(step)) % u128::from(step);
        let mut seed = u128::from(lo) + offset;
        for _ in 0..period.min(1_000_000) {
            if seed >= u128::from(hi) {
                return false;
            }
            if (seed % u128::from(small_count)) as u64 == small.residue() {
                return true;
            }
            seed += u128::from(step);
        }
        period > 1_000_000
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a.max(1)
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_cut_by_its_time_limit_leaves_the_merge_cut_and_says_so() {
        let part = |run: u64, planned: Option<u64>| ExploreSummary {
            seeds_run: run,
            seeds_planned: planned,
            ..ExploreSummary::new("t", "naive")
        };
        let mut whole = ExploreSummary::default();
        whole.merge(&part(10, None));
        assert_eq!(whole.seeds_planned, None);
        whole.merge(&part(4, Some(10)));
        assert_eq!((whole.seeds_run, whole.seeds_planned), (14, Some(20)));
        whole.merge(&part(10, None));
        assert_eq!((whole.seeds_run, whole.seeds_planned), (24, Some(30)));
        assert!(whole.render().contains("stopped by the time limit: 24 of 30 seeds ran"));
    }

    fn verdicts(invalid: &[&str]) -> Vec<(String, Verdict)> {
        checker::NAMES
            .iter()
            .map(|n| {
                let v = if invalid.contains(n) {
                    Verdict::Invalid
                } else {
                    Verdict::Valid
                };
                (n.to_string(), v)
            })
            .collect()
    }

    /// Seeds 0..40 fail mutual exclusion; seeds 30 and 35 also fail lost-update.
    fn add_seeds(summary: &mut ExploreSummary, seeds: impl Iterator<Item = u64>) {
        for seed in seeds {
            let invalid: &[&str] = if seed == 30 || seed == 35 {
                &["mutual-exclusion", "lost-update"]
            } else if seed < 40 {
                &["mutual-exclusion"]
            } else {
                &[]
            };
            summary.add_verdicts(seed, &verdicts(invalid), &["pause".into()], 1);
        }
    }

    #[test]
    fn the_smallest_failing_seeds_are_kept_per_checker() {
        let mut summary = ExploreSummary::new("t", "naive");
        add_seeds(&mut summary, 0..60);
        let seeds = |c: &str| summary.first_failing_of(c).map(|f| f.seed).collect::<Vec<_>>();
        assert_eq!(seeds("mutual-exclusion"), (0..10).chain([30, 35]).collect::<Vec<_>>());
        // A checker that fails only late still has its first seeds (the overall ten would not).
        assert_eq!(seeds("lost-update"), vec![30, 35]);
        assert_eq!(summary.first_failing.len(), 12);
    }

    #[test]
    fn implementation_bug_seeds_are_kept_apart_and_merge_exactly() {
        let bug = |seed: u64| FailingSeed {
            seed,
            checkers: vec!["lease-validity".into()],
            fault_kinds: vec!["pause".into()],
            faults: 1,
            case: None,
            drawn: Vec::new(),
        };
        // The first violating seeds all broke timing; the bugs come later.
        let mut whole = Bounded::default();
        for seed in 0..40 {
            let bugs: Vec<String> = if seed >= 25 {
                vec!["lease-validity".into()]
            } else {
                Vec::new()
            };
            whole.add(seed, &verdicts(&["mutual-exclusion"]), &["timing".into()], &bugs);
            if !bugs.is_empty() {
                whole.add_bug(bug(seed));
            }
        }
        assert!(whole.first_violating.iter().all(|(_, _, _, is_bug)| !is_bug));
        assert_eq!(whole.first_bugs.first().map(|f| f.seed), Some(25));
        assert_eq!(whole.first_bugs.len(), KEEP_FIRST);
        assert!(whole
            .render("naive")
            .contains("first implementation-bug seeds (promised checkers violated): 25"));
        let mut merged = Bounded::default();
        for shard in 0..2u64 {
            let mut part = Bounded::default();
            for seed in (25..40).filter(|s| s % 2 == shard) {
                part.add_bug(bug(seed));
            }
            merged.merge(&part);
        }
        assert_eq!(merged.first_bugs, whole.first_bugs);
    }

    #[test]
    fn sharded_summaries_merge_to_the_unsharded_one() {
        let mut whole = ExploreSummary::new("t", "naive");
        add_seeds(&mut whole, 0..60);
        let mut merged = ExploreSummary::new("t", "naive");
        for shard in 0..3u64 {
            let mut part = ExploreSummary::new("t", "naive");
            add_seeds(&mut part, (0..60).filter(|s| s % 3 == shard));
            merged.merge(&part);
        }
        assert_eq!(merged.first_failing, whole.first_failing);
        assert_eq!(merged.violations, whole.violations);
    }

    #[test]
    fn guided_shards_merge_their_signatures_and_growth_over_the_range() {
        use crate::explore::coverage::CoverageSummary;
        // Two guided shards of 0..80: signatures with the first seed that reached each.
        let part = |index: u64, first_seen: Vec<(u64, u64)>| {
            let mut s = ExploreSummary::new("t", "naive");
            s.seeds_run = 40;
            s.coverage = Some(CoverageSummary {
                strategy: "mixed".into(),
                signatures_distinct: first_seen.len() as u64,
                growth: vec![(32, 2), (40, first_seen.len() as u64)],
                random_seeds: 20,
                anchored_seeds: 20,
                first_seen,
                ..CoverageSummary::default()
            });
            s.run = Some(RunSpan {
                run_id: "r".into(),
                spans: vec![span(0..80, index, 2)],
                strategy: Some(RunStrategy::Mixed),
            });
            s
        };
        let mut merged = ExploreSummary::default();
        merged.merge(&part(1, vec![(7, 0), (9, 40), (11, 70)]));
        merged.merge(&part(2, vec![(7, 1), (8, 3), (12, 79)]));
        let coverage = merged.coverage.clone().unwrap();
        // 7 reached first by seed 0; 8, 9, 11, 12 once each: five signatures, not six.
        assert_eq!(coverage.signatures_distinct, 5);
        assert_eq!(coverage.first_seen, vec![(7, 0), (8, 3), (9, 40), (11, 70), (12, 79)]);
        assert_eq!((coverage.random_seeds, coverage.anchored_seeds), (40, 40));
        // The growth over the range, as one process's batches: after 32, 64 and all 80 seeds.
        assert_eq!(coverage.growth, vec![(32, 2), (64, 3), (80, 5)]);
        // One shard alone keeps its own figures; the merge is whole only with both.
        let mut one = ExploreSummary::default();
        one.merge(&part(2, vec![(7, 1)]));
        assert_eq!(one.coverage.unwrap().growth, vec![(32, 2), (40, 1)]);
    }

    #[test]
    fn the_differential_counts_where_only_the_subject_fails() {
        let mut d = Differential::new("token-release");
        d.add(1, &verdicts(&["mutual-exclusion"]), Some(&verdicts(&[])), &[], 1);
        d.add(
            2,
            &verdicts(&["mutual-exclusion"]),
            Some(&verdicts(&["mutual-exclusion"])),
            &[],
            1,
        );
        d.add(3, &verdicts(&[]), Some(&verdicts(&["lost-update"])), &[], 1);
        d.add(4, &verdicts(&["lost-update"]), None, &[], 1);
        // A reference without fencing tokens is not judged on token-order: no difference there.
        let untokened: Vec<(String, Verdict)> = verdicts(&[])
            .into_iter()
            .map(|(c, v)| {
                let v = if c == "token-order" { Verdict::Unknown } else { v };
                (c, v)
            })
            .collect();
        d.add(5, &verdicts(&["token-order"]), Some(&untokened), &[], 1);
        assert_eq!(d.seeds_only_subject, 1);
        assert!(!d.only_subject.contains_key("token-order") || d.only_subject["token-order"] == 0);
        assert_eq!(d.only_subject["mutual-exclusion"], 1);
        assert_eq!(d.both["mutual-exclusion"], 1);
        assert_eq!(d.only_reference["lost-update"], 1);
        assert_eq!(d.reference_errors, 1);
        assert_eq!(d.first_only_subject.iter().map(|f| f.seed).collect::<Vec<_>>(), vec![1]);
        let mut summary = ExploreSummary::new("t", "my-lock");
        summary.differential = Some(d);
        assert!(!summary.is_clean_against_reference());
        assert!(summary.render().contains("1 seeds where only my-lock fails"));
    }

    fn span(seeds: std::ops::Range<u64>, shard_index: u64, shard_count: u64) -> SeedSpan {
        SeedSpan {
            seeds_start: seeds.start,
            seeds_end: seeds.end,
            shard_index,
            shard_count,
        }
    }

    #[test]
    fn seed_spans_overlap_exactly_when_they_share_a_seed() {
        // Brute force over small spans: the answer is the intersection of the seed sets.
        let seeds = |s: &SeedSpan| -> Vec<u64> {
            (s.seeds_start..s.seeds_end)
                .filter(|x| (x - s.seeds_start) % s.shard_count == s.shard_index - 1)
                .collect()
        };
        let mut spans = Vec::new();
        for (start, end) in [(0, 12), (3, 9), (5, 6), (7, 7), (10, 30)] {
            for count in 1..=4 {
                for index in 1..=count {
                    spans.push(span(start..end, index, count));
                }
            }
        }
        for a in &spans {
            for b in &spans {
                let shared = seeds(a).iter().any(|x| seeds(b).contains(x));
                assert_eq!(a.overlaps(b), shared, "{a:?} {b:?}");
            }
        }
        // Huge ranges and counts stay cheap.
        assert!(!span(0..u64::MAX, 1, 2).overlaps(&span(0..u64::MAX, 2, 2)));
        assert!(span(0..u64::MAX, 3, u64::MAX).overlaps(&span(0..u64::MAX, 1, 1)));
    }

    #[test]
    fn merging_summaries_of_one_run_unites_their_spans_and_the_outcome_ignores_them() {
        let part = |index| {
            let mut s = ExploreSummary::new("t", "naive");
            add_seeds(&mut s, (0..60).filter(|x| x % 2 == index - 1));
            s.run = Some(RunSpan {
                run_id: "r".into(),
                spans: vec![span(0..60, index, 2)],
                strategy: Some(RunStrategy::Random),
            });
            s
        };
        let mut merged = ExploreSummary::default();
        merged.merge(&part(2));
        merged.merge(&part(1));
        let run = merged.run.clone().expect("one run");
        assert_eq!(run.spans, vec![span(0..60, 1, 2), span(0..60, 2, 2)]);
        let mut whole = ExploreSummary::new("t", "naive");
        add_seeds(&mut whole, 0..60);
        assert_eq!(merged.outcome_digest(), whole.outcome_digest());
        // A part of another run: the merged span is unknown.
        let mut other = part(1);
        other.run.as_mut().unwrap().run_id = "s".into();
        merged.merge(&other);
        assert_eq!(merged.run, None);
    }

    #[test]
    fn the_seeds_to_the_first_bug_are_fields_of_a_whole_run_and_only_the_seed_of_merged_shards() {
        let with_bugs = |seeds: &[u64], span: RunSpan| {
            let mut s = ExploreSummary::new("t", "naive");
            let mut classified = Bounded::default();
            for &seed in seeds {
                classified.add_bug(FailingSeed {
                    seed,
                    checkers: vec!["ownership".into()],
                    fault_kinds: vec!["pause".into()],
                    faults: 1,
                    case: None,
                    drawn: Vec::new(),
                });
            }
            s.classified = Some(classified);
            s.seeds_run = 50;
            s.run = Some(span);
            s.refresh_first_bug();
            s
        };
        let run = |spans| RunSpan {
            run_id: "r".into(),
            spans,
            strategy: Some(RunStrategy::Random),
        };
        // Seeds 10..60 in one process: the first bug, seed 17, is the 8th seed run.
        let whole = with_bugs(&[17, 23, 40], run(vec![span(10..60, 1, 1)]));
        assert_eq!((whole.first_bug_seed, whole.seeds_to_first_bug), (Some(17), Some(8)));
        assert_eq!(whole.first_bug(), Some((17, Some(8))));
        // Not part of the outcome.
        let mut bare = whole.clone();
        (bare.first_bug_seed, bare.seeds_to_first_bug) = (None, None);
        assert_eq!(bare.outcome_digest(), whole.outcome_digest());
        // Two shards: each one's count is not the whole's; merged, every shard of the range is
        // there, so the count is the range's (issue 53); one shard alone, the seed only.
        let one = with_bugs(&[23], run(vec![span(10..60, 1, 2)]));
        assert_eq!(one.seeds_to_first_bug, None);
        let mut merged = ExploreSummary::default();
        merged.merge(&one);
        merged.merge(&with_bugs(&[17, 40], run(vec![span(10..60, 2, 2)])));
        assert_eq!((merged.first_bug_seed, merged.seeds_to_first_bug), (Some(17), Some(8)));
        let mut part = ExploreSummary::default();
        part.merge(&with_bugs(&[17, 40], run(vec![span(10..60, 2, 3)])));
        part.merge(&with_bugs(&[23], run(vec![span(10..60, 1, 3)])));
        assert_eq!((part.first_bug_seed, part.seeds_to_first_bug), (Some(17), None));
        // A count past the seeds run is a damaged file.
        let mut damaged = whole.clone();
        damaged.seeds_to_first_bug = Some(damaged.seeds_run + 1);
        assert!(damaged.check_counts().unwrap_err().contains("seeds_to_first_bug"));
    }

    #[test]
    fn seeds_that_could_not_be_judged_make_the_exploration_an_error() {
        let mut summary = ExploreSummary::default();
        assert_eq!(summary.status(&["a"], &BTreeMap::new(), false), Status::Unchecked);
        summary.errors = 1;
        assert_eq!(summary.status(&["a"], &BTreeMap::new(), false), Status::Error);
    }
}
