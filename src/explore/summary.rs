//! The exploration summary: counts that stream in seed by seed (memory does not grow with the
//! number of seeds), merge across shards, and print.

use crate::checker::{self, Verdict};
use crate::liveness::percentile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many failing seeds (the smallest) and errors a summary keeps.
pub const KEEP_FIRST: usize = 10;

/// A seed on which some checker found a violation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FailingSeed {
    /// The seed.
    pub seed: u64,
    /// The checkers that answered invalid.
    pub checkers: Vec<String>,
    /// The fault kinds in its plan.
    pub fault_kinds: Vec<String>,
    /// How many faults its plan had.
    pub faults: usize,
    /// Its case, when the seed alone does not regenerate it (guided explorations: anchored
    /// and mutated cases depend on the template's anchors and the corpus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<super::generate::ExploreCase>,
}

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

/// Everything an exploration found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExploreSummary {
    /// The template scenario's name.
    pub scenario: String,
    /// The lock algorithm.
    pub algorithm: String,
    /// Seeds run to the end (errors included).
    pub seeds_run: u64,
    /// Seeds with at least one violation.
    pub seeds_violating: u64,
    /// Invalid verdicts per checker.
    pub violations: BTreeMap<String, u64>,
    /// Unknown verdicts per checker.
    pub unknown: BTreeMap<String, u64>,
    /// The smallest failing seeds.
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
    /// Coverage of a guided (anchored or mixed) exploration: distinct signatures and their
    /// growth over seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<super::coverage::CoverageSummary>,
}

fn keep_smallest<T: Ord>(list: &mut Vec<T>) {
    list.sort();
    list.truncate(KEEP_FIRST);
}

impl ExploreSummary {
    /// An empty summary for a template.
    pub fn new(scenario: &str, algorithm: &str) -> Self {
        ExploreSummary {
            scenario: scenario.to_string(),
            algorithm: algorithm.to_string(),
            violations: checker::NAMES.iter().map(|n| (n.to_string(), 0)).collect(),
            unknown: checker::NAMES.iter().map(|n| (n.to_string(), 0)).collect(),
            ..Default::default()
        }
    }

    /// Adds one seed's verdicts.
    pub fn add_verdicts(&mut self, seed: u64, verdicts: &[(String, Verdict)], fault_kinds: &[String], faults: usize) {
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
            });
            keep_smallest(&mut self.first_failing);
        }
    }

    /// Adds a seed that could not be judged.
    pub fn add_error(&mut self, seed: u64, message: String) {
        self.seeds_run += 1;
        self.errors += 1;
        self.first_errors.push(SeedError { seed, message });
        keep_smallest(&mut self.first_errors);
    }

    /// Adds a run's liveness figures and simulated time.
    pub fn add_liveness(&mut self, liveness: &crate::liveness::Liveness, sim_ms: u64) {
        for latency in &liveness.acquire_latencies_ms {
            *self.acquire_latency_ms.entry(*latency).or_default() += 1;
        }
        self.acquires_abandoned += liveness.acquires_abandoned;
        self.unavailable_ms += liveness.unavailable_ms;
        self.sim_ms += sim_ms;
    }

    /// Combines a shard's summary into this one.
    pub fn merge(&mut self, other: &ExploreSummary) {
        if self.scenario.is_empty() {
            self.scenario = other.scenario.clone();
            self.algorithm = other.algorithm.clone();
        }
        self.seeds_run += other.seeds_run;
        self.seeds_violating += other.seeds_violating;
        for (k, v) in &other.violations {
            *self.violations.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.unknown {
            *self.unknown.entry(k.clone()).or_default() += v;
        }
        self.first_failing.extend(other.first_failing.iter().cloned());
        keep_smallest(&mut self.first_failing);
        self.errors += other.errors;
        self.first_errors.extend(other.first_errors.iter().cloned());
        keep_smallest(&mut self.first_errors);
        for (k, v) in &other.fault_kinds {
            let count = self.fault_kinds.entry(k.clone()).or_default();
            count.seeds += v.seeds;
            count.violating += v.violating;
        }
        for (k, v) in &other.acquire_latency_ms {
            *self.acquire_latency_ms.entry(*k).or_default() += v;
        }
        self.acquires_abandoned += other.acquires_abandoned;
        self.unavailable_ms += other.unavailable_ms;
        self.sim_ms += other.sim_ms;
        self.determinism_checked += other.determinism_checked;
        self.determinism_failures
            .extend(other.determinism_failures.iter().cloned());
        self.determinism_failures.sort();
        self.throughput.wall_s = self.throughput.wall_s.max(other.throughput.wall_s);
        self.throughput.jobs += other.throughput.jobs;
    }

    /// The summary without its wall-clock figures: what shards must reproduce exactly.
    pub fn outcome(&self) -> ExploreSummary {
        ExploreSummary {
            throughput: Throughput::default(),
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
    pub fn acquire_latency_percentile(&self, p: u64) -> Option<u64> {
        let total: u64 = self.acquire_latency_ms.values().sum();
        if total == 0 {
            return None;
        }
        let rank = (p.min(100) * total).div_ceil(100).max(1);
        let mut seen = 0;
        for (latency, count) in &self.acquire_latency_ms {
            seen += count;
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

    /// Whether nothing went wrong: no violation, no error, no determinism failure.
    pub fn is_clean(&self) -> bool {
        self.seeds_violating == 0 && self.errors == 0 && self.determinism_failures.is_empty()
    }

    /// A human-readable report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line(
            &mut out,
            format!("exploration of {} ({})", self.scenario, self.algorithm),
        );
        line(
            &mut out,
            format!(
                "  seeds run: {}   violating: {}   errors: {}",
                self.seeds_run, self.seeds_violating, self.errors
            ),
        );
        line(&mut out, "  violations per checker:".to_string());
        for name in checker::NAMES {
            line(
                &mut out,
                format!(
                    "    {:<18} {:>7} invalid {:>7} unknown",
                    name,
                    self.violations.get(*name).copied().unwrap_or(0),
                    self.unknown.get(*name).copied().unwrap_or(0)
                ),
            );
        }
        if !self.fault_kinds.is_empty() {
            line(&mut out, "  seeds per fault kind (violating):".to_string());
            for (kind, count) in &self.fault_kinds {
                line(
                    &mut out,
                    format!("    {:<12} {:>7} ({})", kind, count.seeds, count.violating),
                );
            }
        }
        if !self.first_failing.is_empty() {
            let seeds: Vec<String> = self
                .first_failing
                .iter()
                .map(|f| format!("{} [{}]", f.seed, f.checkers.join(",")))
                .collect();
            line(&mut out, format!("  first failing seeds: {}", seeds.join("; ")));
        }
        for e in &self.first_errors {
            line(&mut out, format!("  error on seed {}: {}", e.seed, e.message));
        }
        if let Some(coverage) = &self.coverage {
            out.push_str(&coverage.render());
        }
        line(
            &mut out,
            format!(
                "  liveness: acquire latency p50 {} ms, p99 {} ms; unavailability {:.2}% of simulated time; {} acquires never granted",
                self.acquire_latency_percentile(50).map_or("-".into(), |v| v.to_string()),
                self.acquire_latency_percentile(99).map_or("-".into(), |v| v.to_string()),
                self.unavailability() * 100.0,
                self.acquires_abandoned
            ),
        );
        if self.determinism_checked > 0 {
            line(
                &mut out,
                format!(
                    "  determinism: {} seeds rerun, {} mismatches",
                    self.determinism_checked,
                    self.determinism_failures.len()
                ),
            );
            for d in &self.determinism_failures {
                line(&mut out, format!("    seed {}: {}", d.seed, d.first_difference));
            }
        }
        line(
            &mut out,
            format!(
                "  throughput: {:.1} scenarios/s, {:.1} simulated s per wall s, {:.1} s wall on {} jobs",
                self.throughput.scenarios_per_s,
                self.throughput.sim_s_per_wall_s,
                self.throughput.wall_s,
                self.throughput.jobs
            ),
        );
        out
    }
}
