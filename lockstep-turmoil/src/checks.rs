//! lockstep's checkers over a history recorded under turmoil.

use lockstep::checker::{CheckResult, Checker, MutualExclusion};
use lockstep::history::OpHistory;
use lockstep_sim::History;

/// The `mutual-exclusion` checker's verdict on `history` (no two holders of one lock key at
/// once).
pub fn mutual_exclusion(history: &History) -> CheckResult {
    MutualExclusion.check(&OpHistory::new(history))
}

/// Every lockstep checker's verdict on `history`, in report order.
pub fn check_all(history: &History) -> Vec<CheckResult> {
    let ops = OpHistory::new(history);
    lockstep::checker::all()
        .into_iter()
        .map(|checker| checker.check(&ops))
        .collect()
}
