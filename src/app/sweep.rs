//! The TTL trade-off: one algorithm and one fault profile, explored over the same seeds at
//! several TTLs. A short TTL lets a paused or slow holder's lease run out while it still works
//! (violations); a long one leaves the lock stuck on a holder that has gone quiet (a lost
//! release, a partition) while others wait (unavailability). This is the lesson's "hardest
//! tuning decision", as data.
//!
//! The fault profile is fixed in absolute time on purpose: a lock-aware profile scales its
//! pauses with the TTL, which would cancel the very effect the sweep shows.
//!
//! The sweep's data ([`TtlSweep`]) is plain and lives in `crate::explore::sweep`: `report/`
//! stores and draws it.

use super::AppError;
use crate::model::fault::FaultProfile;
/// [`crate::explore::sweep::TtlPoint`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::sweep::TtlPoint`; removed in 0.3.0"
)]
pub type TtlPoint = crate::explore::sweep::TtlPoint;
/// [`crate::explore::sweep::TtlSweep`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::sweep::TtlSweep`; removed in 0.3.0"
)]
pub type TtlSweep = crate::explore::sweep::TtlSweep;
use crate::explore::{explore, ExploreConfig};
use crate::scenario::standard::standard_template;

/// The TTLs swept by default, ms: 100 ms to 60 s, the range teams use (5–30 s is common).
pub(crate) const DEFAULT_TTLS_MS: [u64; 13] = [
    100, 200, 400, 700, 1_000, 1_500, 2_000, 3_000, 5_000, 10_000, 20_000, 30_000, 60_000,
];

/// Seeds per TTL by default.
pub(crate) const DEFAULT_SEEDS: u64 = 40;

/// The fault profile of the sweep: pauses up to 2.5 s and partitions up to 1.5 s, at most three
/// faults per seed, not aimed at the TTL.
fn default_profile() -> FaultProfile {
    FaultProfile {
        kinds: vec!["pause".to_string(), "partition".to_string()],
        faults_max: 3,
        pause_ms_max: 2_500,
        window_ms_max: 1_500,
        lock_aware: false,
        ..FaultProfile::default()
    }
}

/// What to sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepOptions {
    /// The built-in lock algorithm (of the standard exploration template, unfenced).
    pub algorithm: crate::model::Algorithm,
    /// The TTLs, ms.
    pub ttls_ms: Vec<u64>,
    /// Seeds `0..seeds` at each TTL.
    pub seeds: u64,
    /// The fault profile.
    pub profile: FaultProfile,
    /// Worker threads.
    pub jobs: usize,
    /// Show each TTL's progress on stderr (as `lockstep explore` does).
    pub progress: bool,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            algorithm: crate::model::Algorithm::TokenRelease,
            ttls_ms: DEFAULT_TTLS_MS.to_vec(),
            seeds: DEFAULT_SEEDS,
            profile: default_profile(),
            jobs: ExploreConfig::default().jobs,
            progress: false,
        }
    }
}

/// Runs the sweep. The script lock (which has no standard form) or an empty or zero TTL is
/// bad input.
pub fn ttl_sweep(options: &SweepOptions) -> Result<crate::explore::sweep::TtlSweep, AppError> {
    let bad = AppError::BadInput;
    let algorithm = options.algorithm;
    if options.ttls_ms.is_empty() || options.ttls_ms.contains(&0) {
        return Err(bad(
            "TTL sweep: the TTLs must be a non-empty list of values above 0".to_string()
        ));
    }
    let base = standard_template(
        algorithm,
        crate::model::Fencing::None,
        lockstep_sim::FencingMode::Unfenced,
        1,
    )
    .map_err(|e| bad(e.to_string()))?;
    let mut ttls = options.ttls_ms.clone();
    ttls.sort_unstable();
    ttls.dedup();
    let mut points = Vec::new();
    for ttl in ttls {
        let mut template = base.clone();
        template.lock.ttl_ms = ttl;
        template.lock.algorithm.at_ttl(ttl);
        if options.progress {
            crate::emit::stderr_line(&format!("ci: TTL sweep: ttl {ttl} ms, {} seeds", options.seeds));
        }
        let config = ExploreConfig {
            seeds: 0..options.seeds,
            jobs: options.jobs.max(1),
            profile: options.profile.clone(),
            progress: options.progress,
            ..ExploreConfig::default()
        };
        points.push(crate::explore::sweep::TtlPoint::of(ttl, &explore(&template, &config)));
    }
    Ok(crate::explore::sweep::TtlSweep {
        algorithm: options.algorithm.name().to_string(),
        template: base.name,
        seeds: options.seeds,
        profile: options.profile.clone(),
        points,
    })
}
