//! A failing seed as summaries keep it: its checkers, fault kinds and case — what shrinking
//! starts from. Its own module so that the summary and the grouping of seeds by cause
//! ([`super::groups`]) both use it without importing each other.

use serde::{Deserialize, Serialize};

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
    /// The faults of the plan as drawn, when `case` is that plan without the faults the
    /// violation does not need (an implementation bug only without them): the counterexample
    /// says which it dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drawn: Vec<crate::explore::kinds::GenFault>,
}
