//! The TTL trade-off sweep's figures: one algorithm and one fault profile explored over the
//! same seeds at several TTLs, one [`TtlPoint`] per TTL. Plain data: run by
//! `crate::app::sweep`, stored in `report.json`, drawn by the report's charts.

use super::summary::ExploreSummary;
use crate::checker::CheckerName;
use crate::model::fault::FaultProfile;
use serde::{Deserialize, Serialize};

/// The figures at one TTL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TtlPoint {
    /// The TTL, ms.
    pub ttl_ms: u64,
    /// Seeds run.
    pub seeds_run: u64,
    /// Seeds with a violation of any checker.
    pub seeds_violating: u64,
    /// `seeds_violating / seeds_run`.
    pub violation_rate: f64,
    /// Seeds violating mutual exclusion.
    pub mutual_exclusion_violations: u64,
    /// Mean time per run nobody held the lock while someone waited, ms.
    pub mean_unavailable_ms: f64,
    /// Unavailable time as a share of simulated time.
    pub unavailability: f64,
    /// Median acquire latency, ms.
    pub acquire_latency_p50_ms: Option<u64>,
    /// 99th-percentile acquire latency, ms.
    pub acquire_latency_p99_ms: Option<u64>,
    /// Seeds that could not be judged.
    pub errors: u64,
    /// The digest of this TTL's exploration outcome.
    pub outcome_digest: String,
}

/// The sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TtlSweep {
    /// The lock algorithm.
    pub algorithm: String,
    /// The template (`explore-<algorithm>`, the standard exploration profile).
    pub template: String,
    /// Seeds per TTL.
    pub seeds: u64,
    /// The fault profile.
    pub profile: FaultProfile,
    /// One point per TTL, in increasing TTL.
    pub points: Vec<TtlPoint>,
}

impl TtlPoint {
    /// The figures of the exploration `s` at `ttl_ms`.
    pub fn of(ttl_ms: u64, s: &ExploreSummary) -> TtlPoint {
        let run = s.seeds_run.max(1) as f64;
        TtlPoint {
            ttl_ms,
            seeds_run: s.seeds_run,
            seeds_violating: s.seeds_violating,
            violation_rate: s.seeds_violating as f64 / run,
            mutual_exclusion_violations: s
                .violations
                .get(CheckerName::MutualExclusion.as_str())
                .copied()
                .unwrap_or(0),
            mean_unavailable_ms: s.unavailable_ms as f64 / run,
            unavailability: s.unavailability(),
            acquire_latency_p50_ms: s.acquire_latency_percentile(50),
            acquire_latency_p99_ms: s.acquire_latency_percentile(99),
            errors: s.errors,
            outcome_digest: s.outcome_digest(),
        }
    }
}
