//! Judging expectations: a scenario's expected verdict per checker against what the checker
//! found, and an exploration's `some-invalid` / `none-invalid` per checker against how many
//! seeds it found invalid. The one place where "did the expectation hold" is decided; the CLI,
//! the gate and every report read these answers.
//!
//! [`Outcome`] is the judgement of a whole command (all held, something unexpected, a run
//! failed); `crate::app::error` maps it, with the errors, to exit codes.
//!
//! Leaves out: how a judgement is explained or drawn (that is `report/`).

use crate::checker::CheckResult;
use crate::model::Verdict;
use crate::scenario::{ExploreExpect, LIVENESS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How one expectation came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The expectation failed, or the run could not be judged (❌). Sorted first.
    Fail,
    /// The scenario or exploration could not run at all (❌).
    Error,
    /// No expectation was stated, or it is decided only when shards are merged (⚠️).
    Unchecked,
    /// The expectation held (✅).
    Pass,
}

impl Status {
    /// ✅, ❌ or ⚠️.
    pub fn mark(&self) -> &'static str {
        match self {
            Status::Pass => "✅",
            Status::Fail | Status::Error => "❌",
            Status::Unchecked => "⚠️",
        }
    }

    /// `pass`, `fail`, `error` or `unchecked`.
    pub fn name(&self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Unchecked => "unchecked",
        }
    }

    /// Whether this status fails the gate.
    pub fn is_failure(&self) -> bool {
        matches!(self, Status::Fail | Status::Error)
    }

    /// The worst of a row's statuses (`Fail` < `Error` < `Unchecked` < `Pass`); `Pass` when empty.
    pub fn worst(statuses: impl IntoIterator<Item = Status>) -> Status {
        statuses.into_iter().min().unwrap_or(Status::Pass)
    }
}

/// How a command that ran to its end came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every expectation held; for `explore`, nothing was found.
    Held,
    /// Some expectation did not hold; for `explore`, a violation, an error or a nondeterministic seed.
    Unexpected,
    /// Something could not be judged because a run failed (a gate row in error).
    RunFailed,
}

impl Outcome {
    /// `Held` when `held`, else `Unexpected`.
    pub fn held_if(held: bool) -> Outcome {
        if held {
            Outcome::Held
        } else {
            Outcome::Unexpected
        }
    }

    /// The process exit code: 0 held, 1 unexpected, 2 a run failed (errors, also 2, are
    /// mapped beside this in `crate::app::error`).
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Held => 0,
            Outcome::Unexpected => 1,
            Outcome::RunFailed => 2,
        }
    }
}

/// A checker whose verdict differs from the scenario's expectation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The checker.
    pub checker: String,
    /// What the scenario expected.
    pub expected: Verdict,
    /// What the checker found.
    pub actual: Verdict,
}

/// One checker's verdict against the scenario's expectation (`None`: nothing expected).
pub fn verdict(expected: Option<Verdict>, actual: Verdict) -> Status {
    match expected {
        None => Status::Unchecked,
        Some(e) if e == actual => Status::Pass,
        Some(_) => Status::Fail,
    }
}

/// The expectations of `expect` that `results` do not meet, in `expect`'s order. An expectation
/// of a checker that did not run is not judged.
pub fn mismatches(expect: &BTreeMap<String, Verdict>, results: &[CheckResult]) -> Vec<Mismatch> {
    expect
        .iter()
        .filter_map(|(name, expected)| {
            let actual = results.iter().find(|r| r.checker == *name)?.verdict;
            (verdict(Some(*expected), actual) == Status::Fail).then(|| Mismatch {
                checker: name.clone(),
                expected: *expected,
                actual,
            })
        })
        .collect()
}

/// What `expect` says of `checker`: its entry, and for [`LIVENESS`] `valid` when the file says
/// nothing (a vacuous run is never a silent pass).
pub fn expected(expect: &BTreeMap<String, Verdict>, checker: &str) -> Option<Verdict> {
    expect
        .get(checker)
        .copied()
        .or((checker == LIVENESS).then_some(Verdict::Valid))
}

/// The liveness verdict of a run, as a check: `Some` when nobody got the lock (invalid: the run
/// is vacuous, whether clients waited in vain or never asked at all), or when `expect` names
/// `liveness` (so it is judged). `acquires` counts the grants, `waiting` the acquire episodes
/// that never got one.
pub(crate) fn liveness_check(expect: &BTreeMap<String, Verdict>, acquires: u64, waiting: u64) -> Option<CheckResult> {
    // A run with no grant checked nothing: its safety verdicts are valid over an empty history.
    // That is never a silent pass, whatever the reason (every client starting after the end,
    // `iterations = 0`, a lock that never answers).
    let vacuous = acquires == 0;
    if !vacuous && !expect.contains_key(LIVENESS) {
        return None;
    }
    let explanation = if waiting > 0 && acquires == 0 {
        format!(
            "{waiting} client{} wanted the lock and nobody ever got it: the safety verdicts are vacuous",
            if waiting == 1 { "" } else { "s" }
        )
    } else if acquires == 0 {
        "no client ever asked for the lock (check each client's start_ms, iterations and until_ms against \
         duration_ms): the run checks nothing, its safety verdicts are vacuous"
            .to_string()
    } else {
        format!("{acquires} grant{}", if acquires == 1 { "" } else { "s" })
    };
    Some(CheckResult {
        checker: LIVENESS.to_string(),
        verdict: if vacuous { Verdict::Invalid } else { Verdict::Valid },
        explanation,
        witness: Vec::new(),
    })
}

/// The liveness verdict of a run's `ops` ([`liveness_check`]), and its mismatch with `expect`
/// (an unnamed `progress` is expected valid: a vacuous run fails).
pub(crate) fn judge_liveness(
    expect: &BTreeMap<String, Verdict>,
    ops: &crate::history::OpHistory<'_>,
) -> (Option<CheckResult>, Option<Mismatch>) {
    let live = crate::liveness::of(ops);
    let Some(check) = liveness_check(expect, live.acquire_latencies_ms.len() as u64, live.acquires_abandoned) else {
        return (None, None);
    };
    let expected = expected(expect, &check.checker).unwrap_or(Verdict::Valid);
    let mismatch = (expected != check.verdict).then(|| Mismatch {
        checker: check.checker.clone(),
        expected,
        actual: check.verdict,
    });
    (Some(check), mismatch)
}

/// One checker over an exploration: `invalid_seeds` against the expectation. A shard that
/// covers only part of the seeds (`partial`) cannot decide a `some-invalid` that found nothing
/// yet: that is left unchecked until the shards are merged.
pub(crate) fn exploration_check(expected: Option<ExploreExpect>, invalid_seeds: u64, partial: bool) -> Status {
    match expected {
        None => Status::Unchecked,
        Some(e) if e.holds(invalid_seeds) => Status::Pass,
        Some(ExploreExpect::SomeInvalid) if partial => Status::Unchecked,
        Some(_) => Status::Fail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_passes_only_when_it_is_the_expected_one() {
        assert_eq!(verdict(None, Verdict::Invalid), Status::Unchecked);
        assert_eq!(verdict(Some(Verdict::Invalid), Verdict::Invalid), Status::Pass);
        assert_eq!(verdict(Some(Verdict::Valid), Verdict::Invalid), Status::Fail);
    }

    #[test]
    fn a_partial_shard_leaves_an_unfound_violation_unchecked() {
        let some = Some(ExploreExpect::SomeInvalid);
        assert_eq!(exploration_check(some, 0, true), Status::Unchecked);
        assert_eq!(exploration_check(some, 0, false), Status::Fail);
        assert_eq!(exploration_check(some, 3, true), Status::Pass);
        assert_eq!(
            exploration_check(Some(ExploreExpect::NoneInvalid), 1, true),
            Status::Fail
        );
    }
}
