//! `spurious-loss`: the lock never tells its holder it lost a lock it gave up itself, and never
//! hands out a grant it already calls expired.
//!
//! A loss report is spurious when nothing took the lock from its holder:
//! - **a loss reported after the holder's own release**: an `abort` of a grant invoked after the
//!   same holder (process and task) invoked the release of that grant. The holder had given the
//!   lock up; a renewal that raced the release and found the key gone is no news of a loss
//!   (redis-semaphore #205, <https://github.com/swarthy/redis-semaphore/issues/205>: a refresh
//!   scheduled just before `release()` failed after it and the library threw "Lost lock");
//! - **a grant handed out already expired**: an `acquire` `ok` whose lock computed the validity
//!   (`validity_from_ms` recorded) and found none left (`validity_ms` = 0). The holder is told
//!   at once that its fresh lock has run out, although the masters have just taken it (node-redlock
//!   #296/#299, <https://github.com/mike-marcacci/node-redlock/issues/299>: the validity counted
//!   from the first attempt of a retried acquisition, `lock.expiration` in the past, and
//!   `using()` aborting with "Cannot extend an already-expired lock").
//!
//! Both are judged on the client's own operations, whatever the faults: a lock that re-checks
//! its validity never returns a grant without one, and a loss after the release is never news.
//! Left out: a loss reported while the masters still held the grant (a renewal that could not be
//! confirmed may honestly say "lost"), and what the holder does with the report (the other
//! checkers judge its writes). Ops whose data does not decode play no part.

use super::{count, witness, CheckResult, Checker, CheckerName};
use crate::model::Verdict;
use crate::history::{LockOp, OpData, OpHistory, OpName, OpStep, StepKind};
use lockstep_sim::Event;
use std::collections::BTreeMap;

/// Checks that no loss report is spurious; see the [module](self) docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpuriousLoss;

impl Checker for SpuriousLoss {
    fn name(&self) -> CheckerName {
        CheckerName::SpuriousLoss
    }

    fn check(&self, history: &OpHistory<'_>) -> CheckResult {
        // Grants expired at hand-out.
        let expired: Vec<_> = history
            .holds()
            .iter()
            .filter(|h| h.grant.validity_ms == 0 && h.grant.validity_from_ms.is_some())
            .collect();
        // Loss reports after the holder's own release of the same grant: the release invoke
        // per (process, task, key, value), in history order.
        let mut released: BTreeMap<(&str, Option<u32>, &str, &str), &Event> = BTreeMap::new();
        let mut after_release: Vec<(&Event, &Event)> = Vec::new();
        let mut reports = 0usize;
        for op in history.operations() {
            let actor = (op.process, op.task);
            match (op.name, history.invoked(op)) {
                // A new acquisition of the same value (a lock whose value is the client's name)
                // is a new grant: its loss is news again.
                (OpName::Acquire, _) => {
                    let granted = op.completion.and_then(|i| match &history.steps()[i].kind {
                        StepKind::Op(OpStep {
                            data: Some(OpData::Granted(grant)),
                            ..
                        }) => Some(grant),
                        _ => None,
                    });
                    if let Some(grant) = granted {
                        released.remove(&(actor.0, actor.1, grant.key.as_str(), grant.value.as_str()));
                    }
                }
                (OpName::Release, Some(LockOp::Release(grant))) => {
                    let event = history.steps()[op.invoke].event;
                    released
                        .entry((actor.0, actor.1, grant.key.as_str(), grant.value.as_str()))
                        .or_insert(event);
                }
                (OpName::Abort, Some(LockOp::Abort(grant))) => {
                    reports += 1;
                    let event = history.steps()[op.invoke].event;
                    if let Some(release) = released.get(&(actor.0, actor.1, grant.key.as_str(), grant.value.as_str())) {
                        after_release.push((release, event));
                    }
                }
                _ => {}
            }
        }
        let grants = history.holds().len();
        if let Some((release, abort)) = after_release.first() {
            let explanation = format!(
                "{} reported the loss of a lock it had released itself at {} ({} after the release; {} in all)",
                abort.node,
                super::seconds(abort.at_us),
                super::seconds(abort.at_us.saturating_sub(release.at_us)),
                count(after_release.len(), "such report", "such reports"),
            );
            return CheckResult::new(self.name(), Verdict::Invalid, explanation, witness(&[release, abort]));
        }
        if let Some(hold) = expired.first() {
            let explanation = format!(
                "{} was handed grant {} at {} with no validity left: the lock called a lock the masters had just \
                 granted expired ({})",
                hold.holder(),
                super::grant_text(&hold.grant.value),
                super::seconds(hold.granted.at_us),
                count(expired.len(), "such grant", "such grants"),
            );
            return CheckResult::new(self.name(), Verdict::Invalid, explanation, witness(&[hold.granted]));
        }
        CheckResult::new(
            self.name(),
            Verdict::Valid,
            format!(
                "{} with validity left, {} and none after the holder's release",
                count(grants, "grant", "grants"),
                count(reports, "loss report", "loss reports"),
            ),
            Vec::new(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::{self, Builder};
    use crate::ops::{names, to_data, Grant, GrantRef};
    use lockstep_sim::Phase;
    use serde_json::json;

    fn grant(value: &str, validity_ms: u64) -> Grant {
        Grant {
            key: "lock".into(),
            value: value.into(),
            fencing_token: None,
            validity_ms,
            validity_from_ms: Some(0),
        }
    }

    fn grant_ref(value: &str) -> serde_json::Value {
        to_data(&GrantRef {
            key: "lock".into(),
            value: value.into(),
            fencing_token: None,
            value_sent: None,
        })
    }

    fn verdict(b: Builder) -> CheckResult {
        let raw = b.build();
        SpuriousLoss.check(&OpHistory::new(&raw))
    }

    #[test]
    fn a_loss_reported_after_the_release_is_spurious() {
        let mut b = Builder::new();
        b.op(0, "client-1", 1, Phase::Invoke, names::ACQUIRE, json!({"key": "lock", "ttl_ms": 10000}));
        b.op(1_000, "client-1", 1, Phase::Ok, names::ACQUIRE, to_data(&grant("v1", 9_000)));
        b.op(3_000, "client-1", 2, Phase::Invoke, names::RELEASE, grant_ref("v1"));
        b.op(3_001, "client-1", 2, Phase::Ok, names::RELEASE, json!({"released": true}));
        b.op(3_002, "client-1", 3, Phase::Invoke, names::ABORT, grant_ref("v1"));
        b.op(3_002, "client-1", 3, Phase::Info, names::ABORT, json!({"reason": "lock lost"}));
        let result = verdict(b);
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.explanation);
        assert!(result.explanation.contains("released itself"), "{}", result.explanation);
        assert_eq!(testkit::seqs(&result).len(), 2);
    }

    #[test]
    fn a_loss_before_the_release_or_of_another_grant_is_not() {
        let mut b = Builder::new();
        b.op(0, "client-1", 1, Phase::Invoke, names::ACQUIRE, json!({"key": "lock", "ttl_ms": 10000}));
        b.op(1_000, "client-1", 1, Phase::Ok, names::ACQUIRE, to_data(&grant("v1", 9_000)));
        b.op(2_000, "client-1", 3, Phase::Invoke, names::ABORT, grant_ref("v1"));
        b.op(2_000, "client-1", 3, Phase::Info, names::ABORT, json!({"reason": "lock lost"}));
        b.op(3_000, "client-1", 2, Phase::Invoke, names::RELEASE, grant_ref("v1"));
        // Another client's release of its own grant says nothing of client-1's.
        b.op(3_500, "client-2", 4, Phase::Invoke, names::RELEASE, grant_ref("v2"));
        b.op(4_000, "client-1", 5, Phase::Invoke, names::ABORT, grant_ref("v3"));
        let result = verdict(b);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert!(result.explanation.contains("2 loss reports"), "{}", result.explanation);
    }

    #[test]
    fn a_loss_of_a_new_grant_with_the_same_value_is_not_after_its_release() {
        // A lock whose value is the client's name: the second grant's loss is news.
        let mut b = Builder::new();
        b.op(0, "client-1", 1, Phase::Invoke, names::ACQUIRE, json!({"key": "lock", "ttl_ms": 10000}));
        b.op(1_000, "client-1", 1, Phase::Ok, names::ACQUIRE, to_data(&grant("client-1", 9_000)));
        b.op(2_000, "client-1", 2, Phase::Invoke, names::RELEASE, grant_ref("client-1"));
        b.op(2_001, "client-1", 2, Phase::Ok, names::RELEASE, json!({"released": true}));
        b.op(3_000, "client-1", 3, Phase::Invoke, names::ACQUIRE, json!({"key": "lock", "ttl_ms": 10000}));
        b.op(3_001, "client-1", 3, Phase::Ok, names::ACQUIRE, to_data(&grant("client-1", 9_000)));
        b.op(4_000, "client-1", 4, Phase::Invoke, names::ABORT, grant_ref("client-1"));
        b.op(4_000, "client-1", 4, Phase::Info, names::ABORT, json!({"reason": "lock lost"}));
        let result = verdict(b);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    #[test]
    fn a_grant_handed_out_expired_is_spurious_unless_the_lock_computes_no_validity() {
        let mut b = Builder::new();
        b.op(0, "client-1", 1, Phase::Invoke, names::ACQUIRE, json!({"key": "lock", "ttl_ms": 10000}));
        b.op(1_000, "client-1", 1, Phase::Ok, names::ACQUIRE, to_data(&grant("v1", 0)));
        let result = verdict(b);
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.explanation);
        assert!(result.explanation.contains("no validity left"), "{}", result.explanation);

        let mut b = Builder::new();
        let unclaimed = Grant {
            validity_from_ms: None,
            ..grant("v1", 0)
        };
        b.op(0, "client-1", 1, Phase::Invoke, names::ACQUIRE, json!({"key": "lock", "ttl_ms": 10000}));
        b.op(1_000, "client-1", 1, Phase::Ok, names::ACQUIRE, to_data(&unclaimed));
        assert_eq!(verdict(b).verdict, Verdict::Valid);
    }
}
