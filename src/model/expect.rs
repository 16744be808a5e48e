//! Expectations: what a scenario's `[expect]` table and its `[explore]` block say the checkers
//! must find.
//!
//! A scenario's own expectations are a map from checker name to [`Verdict`](super::Verdict)
//! (see [`Scenario::expect`](super::Scenario::expect)); an exploration's are [`ExploreExpect`]s
//! over many seeds. Judging them against results is the application's business, not this
//! module's.

use super::fault::{FaultProfile, DEFAULT_KINDS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The registry of checkers, the one list every other list of them is made from: one line per
/// checker, in report order — its module in `crate::checker`, its type there (and its
/// `CheckerName` variant), its name in scenario files and reports. It lives here, below the
/// checkers, because scenario files name checkers ([`CHECKERS`]); `crate::checker` makes its
/// modules, `CheckerName`, `ALL` and the checker table from it. Adding a checker is one file in
/// `crate::checker` plus one line here.
///
/// Called with the name of a macro that takes the list.
macro_rules! checker_registry {
    ($callback:ident) => {
        $callback! {
            mutual_exclusion MutualExclusion "mutual-exclusion",
            stale_write StaleWrite "stale-write",
            lost_update LostUpdate "lost-update",
            token_order TokenOrder "token-order",
            lease_validity LeaseValidity "lease-validity",
            ownership Ownership "ownership",
            spurious_loss SpuriousLoss "spurious-loss",
            liveness Liveness "liveness",
        }
    };
}
pub(crate) use checker_registry;

/// The names of the registry, in its order.
macro_rules! checker_names {
    ($($module:ident $variant:ident $name:literal,)*) => {
        /// The checkers an `[expect]` or `[explore.expect]` table may name, in the order the
        /// checkers run (the registry's order).
        pub const CHECKERS: &[&str] = &[$($name,)*];
    };
}
checker_registry!(checker_names);

/// Checkers a correct lock keeps in every story, whatever the faults: a scenario whose `[expect]`
/// (or `[explore.expect]`) names some checker expects these `valid` (`none-invalid`) unless it
/// names them too — so a checker added to the registry leaves no row of an existing file
/// unchecked.
pub const VALID_UNLESS_NAMED: &[&str] = &["spurious-loss"];

/// The `[expect]` key of the progress (liveness) verdict: `valid` when some client that wanted the lock got
/// it (the default expectation of every scenario), `invalid` when clients wanted it and nobody
/// ever got it — a run whose safety verdicts say nothing (a vacuous run).
pub const LIVENESS: &str = "progress";

/// Seeds an `[explore]` block runs when it does not say (`seeds`).
pub const DEFAULT_EXPLORE_SEEDS: u64 = 100;

/// The most seeds an `[explore]` block may ask for.
pub const MAX_EXPLORE_SEEDS: u64 = 1_000_000;

/// The most generated faults per seed an `[explore]` block may ask for (`faults_max`).
pub const MAX_EXPLORE_FAULTS: u64 = 64;

/// What a checker is expected to find over an exploration's seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExploreExpect {
    /// At least one seed is invalid: the exploration must find the violation.
    SomeInvalid,
    /// No seed is invalid: the property must hold on every seed.
    NoneInvalid,
}

impl ExploreExpect {
    /// `some-invalid` or `none-invalid`.
    pub fn name(&self) -> &'static str {
        match self {
            ExploreExpect::SomeInvalid => "some-invalid",
            ExploreExpect::NoneInvalid => "none-invalid",
        }
    }

    /// Whether `invalid_seeds` (the number of seeds on which the checker answered invalid)
    /// meets the expectation.
    pub fn holds(&self, invalid_seeds: u64) -> bool {
        match self {
            ExploreExpect::SomeInvalid => invalid_seeds > 0,
            ExploreExpect::NoneInvalid => invalid_seeds == 0,
        }
    }
}

/// A resolved `[explore]` block: the seeds and fault profile `lockstep ci` explores a scenario
/// with (as a template, its own faults replaced by generated ones), and what each checker is
/// expected to find over those seeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExploreSpec {
    /// Seeds `0..seeds` are explored (≥ 1).
    pub seeds: u64,
    /// The fault kinds that may be generated (a non-empty subset of [`GENERATED_KINDS`](super::fault::GENERATED_KINDS)).
    pub kinds: Vec<String>,
    /// At most this many generated faults per seed.
    pub faults_max: usize,
    /// Aim faults where locks break (see [`FaultProfile::lock_aware`]).
    pub lock_aware: bool,
    /// Where faults are placed (`strategy = "mixed"`, `"anchored"` or `"random"`); `None`: at
    /// random, what every block explored before it could name one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<super::fault::PlacementStrategy>,
    /// The expectation per checker name (a subset of [`CHECKERS`]).
    pub expect: BTreeMap<String, ExploreExpect>,
}

impl Default for ExploreSpec {
    fn default() -> Self {
        ExploreSpec {
            seeds: DEFAULT_EXPLORE_SEEDS,
            kinds: DEFAULT_KINDS.iter().map(|k| k.to_string()).collect(),
            faults_max: FaultProfile::default().faults_max,
            lock_aware: false,
            strategy: None,
            expect: BTreeMap::new(),
        }
    }
}

impl ExploreSpec {
    /// The generator's profile: these kinds, `faults_max` and `lock_aware`, the other strengths at
    /// their defaults.
    pub fn profile(&self) -> FaultProfile {
        FaultProfile {
            kinds: self.kinds.clone(),
            faults_max: self.faults_max,
            lock_aware: self.lock_aware,
            strategy: self.strategy.unwrap_or_default(),
            ..FaultProfile::default()
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_checker_names_are_the_checkers() {
        assert_eq!(super::CHECKERS, crate::checker::NAMES);
    }
}
