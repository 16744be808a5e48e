//! `mutual-exclusion`: no two clients are inside the critical section under different grants at
//! the same true instant.
//!
//! A holder is a client, or one task of a client that runs several (its invokes name the task):
//! two tasks of the same client overlapping is a violation like two clients overlapping, and the
//! explanation names the tasks (`client-1 task 2`).
//!
//! A client (the process that ran the operations, `event.node`) is inside from its `acquire` `ok`
//! to the `invoke` of the `release` of that grant (matched by the grant's key and value), pauses
//! included: a frozen client that has not released still believes it holds the lock. An `abort`
//! of that grant (the client learned it lost the lock and gave the critical section up) ends it
//! too. Without either, the client is inside until its next `acquire` invoke on the same key, or
//! else until the end of the history (still open). Its turn then lasts until every resource
//! request it sent under the grant has completed (or timed out) and been judged by the resource
//! ([`Hold::turn_end`]): a write held in the network acts for the holder when it lands, however
//! long after the holder gave up. Positions in the history (`seq`) order
//! everything: the history is a linearization, so events at equal true times are ordered by `seq`.
//! A grant holds only its own key; grants on different keys never conflict.
//!
//! The verdict is invalid on any overlap; the explanation and witness describe the first (the one
//! that begins earliest) and the explanation counts them all. With no grant at all it is valid.
//!
//! Left out: the grant's validity (a client past it that has not released still counts as inside:
//! that is exactly the paused client of the Kleppmann story), acquires with an unknown outcome
//! (`info`: the client does not act as a holder), `extend`, and whether anyone actually touched the
//! resource while overlapping (that is [`stale-write`](crate::checker::stale_write) and
//! [`lost-update`](crate::checker::lost_update)). Ops whose data does not decode play no part (the
//! history reader lists them as anomalies). The holds are the [`OpHistory`]'s.
//!
//! [`Hold::turn_end`]: crate::history::Hold::turn_end

use super::{count, seconds, token_text, witness, CheckResult, Checker, CheckerName};
use crate::model::Verdict;
use crate::history::{Hold, OpHistory};
use std::collections::BTreeMap;

/// Checks that no two clients hold the same lock key at once; see the [module](self) docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MutualExclusion;

/// `client-1 (grant abc, token 1)`, or `client-1 task 2 (grant abc, token 1)`.
fn describe(hold: &Hold<'_>) -> String {
    format!(
        "{} (grant {}, {})",
        hold.holder(),
        super::grant_text(&hold.grant.value),
        token_text(hold.grant.fencing_token)
    )
}

impl Checker for MutualExclusion {
    fn name(&self) -> CheckerName {
        CheckerName::MutualExclusion
    }

    fn check(&self, history: &OpHistory<'_>) -> CheckResult {
        let holds = history.holds();
        let mut by_key: BTreeMap<&str, Vec<&Hold<'_>>> = BTreeMap::new();
        for hold in holds {
            by_key.entry(hold.grant.key.as_str()).or_default().push(hold);
        }

        // Every overlapping pair (earlier, later), by order of their acquire oks.
        let mut overlaps = 0usize;
        let mut first: Option<(&Hold<'_>, &Hold<'_>)> = None;
        for key_holds in by_key.values() {
            for (i, a) in key_holds.iter().enumerate() {
                let a_end = a.turn_end_seq();
                // Holds are in acquire-ok order, so the later ones that start before `a` ends are
                // a prefix of the rest.
                for b in key_holds[i + 1..].iter().take_while(|b| b.granted.seq < a_end) {
                    // A holder's own late request overlapping its next grant is not two holders.
                    if b.same_holder(a) {
                        continue;
                    }
                    overlaps += 1;
                    let earlier =
                        first.is_none_or(|(fa, fb)| (b.granted.seq, a.granted.seq) < (fb.granted.seq, fa.granted.seq));
                    if earlier {
                        first = Some((a, b));
                    }
                }
            }
        }

        let (verdict, explanation, witness) = match first {
            None if holds.is_empty() => (Verdict::Valid, "no grants".to_string(), Vec::new()),
            None => (
                Verdict::Valid,
                format!(
                    "no overlap among {} on {}",
                    count(holds.len(), "grant", "grants"),
                    count(by_key.len(), "key", "keys")
                ),
                Vec::new(),
            ),
            Some((a, b)) => {
                // The overlap runs from b's grant to whichever of the two turns ends first.
                let until = match (a.turn_end, b.turn_end) {
                    (None, None) => "the end of the history (still held)".to_string(),
                    (Some(e), None) | (None, Some(e)) => seconds(e.at_us),
                    (Some(ea), Some(eb)) => seconds(if ea.seq < eb.seq { ea.at_us } else { eb.at_us }),
                };
                let mut events = vec![a.granted, b.granted];
                if let Some(end) = a.end.filter(|_| a.given_up()) {
                    events.push(end.event);
                }
                // A request that kept a's turn going past its end.
                if let Some(turn_end) = a.turn_end.filter(|e| Some(e.seq) != a.end.map(|end| end.event.seq)) {
                    events.push(turn_end);
                }
                (
                    Verdict::Invalid,
                    format!(
                        "{} and {} both held {:?} from {} to {}; {} among {}",
                        describe(a),
                        describe(b),
                        a.grant.key,
                        seconds(b.granted.at_us),
                        until,
                        count(overlaps, "overlap", "overlaps"),
                        count(holds.len(), "grant", "grants"),
                    ),
                    witness(&events),
                )
            }
        };
        CheckResult::new(CheckerName::MutualExclusion, verdict, explanation, witness)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::{kleppmann, malformed, seqs, Builder};
    use crate::ops::{self, names, GrantRef};
    use lockstep_sim::{History, Phase};

    #[test]
    fn empty_history_has_no_grants() {
        let result = MutualExclusion.check(&OpHistory::new(&History::new()));
        assert_eq!(result.verdict, Verdict::Valid);
        assert_eq!(result.explanation, "no grants");
        assert_eq!(result.checker, "mutual-exclusion");
        assert!(result.witness.is_empty());
    }

    #[test]
    fn grants_one_after_another_are_valid() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        b.write(2_000, "client-1", "counter", 1, Some(1), true, 1);
        b.release(5_000, 6_000, "client-1", "lock", "a", Some(1));
        b.acquire(7_000, 7_000, "client-2", "lock", "b", Some(2));
        b.release(8_000, 9_000, "client-2", "lock", "b", Some(2));
        // client-1 again, never released: open until the end, but alone.
        b.acquire(10_000, 11_000, "client-1", "lock", "c", Some(3));
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(result.explanation, "no overlap among 3 grants on 1 key");
        assert!(result.witness.is_empty());
    }

    #[test]
    fn release_and_grant_at_the_same_instant_do_not_overlap() {
        // Same true time, ordered by seq: client-1's release invoke comes first.
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", None);
        b.release(5_000, 5_000, "client-1", "lock", "a", None);
        b.acquire(5_000, 5_000, "client-2", "lock", "b", None);
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    #[test]
    fn overlapping_grants_are_invalid_with_witness() {
        let mut b = Builder::new();
        let a_ok = b.acquire(0, 1_000, "client-1", "lock", "abc", Some(1));
        let b_ok = b.acquire(10_000_000, 10_502_000, "client-2", "lock", "def", Some(2));
        let b_rel = b.release(12_000_000, 12_001_000, "client-2", "lock", "def", Some(2));
        let a_rel = b.release(17_001_000, 17_002_000, "client-1", "lock", "abc", Some(1));
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![a_ok, b_ok, a_rel]);
        assert_eq!(
            result.explanation,
            "client-1 (grant abc, token 1) and client-2 (grant def, token 2) both held \"lock\" \
             from 10.502 s to 12.000 s; 1 overlap among 2 grants"
        );
        assert!(b_rel < a_rel);
    }

    #[test]
    fn the_first_overlap_is_reported_and_all_are_counted() {
        let mut b = Builder::new();
        let one = b.acquire(0, 1_000, "client-1", "lock", "a", None);
        let two = b.acquire(2_000, 3_000, "client-2", "lock", "b", None);
        b.acquire(4_000, 5_000, "client-3", "lock", "c", None);
        let rel = b.release(6_000, 7_000, "client-1", "lock", "a", None);
        // No releases for client-2 and client-3: open until the end.
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![one, two, rel]);
        assert_eq!(
            result.explanation,
            "client-1 (grant a, no token) and client-2 (grant b, no token) both held \"lock\" \
             from 0.003 s to 0.006 s; 3 overlaps among 3 grants"
        );
    }

    #[test]
    fn open_holds_overlap_until_the_end_of_the_history() {
        let mut b = Builder::new();
        let one = b.acquire(0, 1_000, "client-1", "lock", "a", None);
        let two = b.acquire(2_000, 3_000, "client-2", "lock", "b", None);
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![one, two]);
        assert!(
            result
                .explanation
                .contains("from 0.003 s to the end of the history (still held)"),
            "{}",
            result.explanation
        );
    }

    #[test]
    fn the_next_acquire_ends_an_unreleased_hold() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", None);
        // client-1 never releases "a" but asks again; the second try fails.
        let id = b.id();
        b.acquire_invoke(2_000, "client-1", "lock");
        b.op(
            2_500,
            "client-1",
            id,
            Phase::Fail,
            names::ACQUIRE,
            serde_json::json!({ "error": "taken" }),
        );
        b.acquire(3_000, 4_000, "client-2", "lock", "b", None);
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    #[test]
    fn an_abort_ends_the_hold() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        let id = b.id();
        let grant = GrantRef {
            key: "lock".into(),
            value: "a".into(),
            fencing_token: Some(1),
            value_sent: None,
        };
        b.op(2_000, "client-1", id, Phase::Info, names::ABORT, ops::to_data(&grant));
        b.acquire(3_000, 4_000, "client-2", "lock", "b", Some(2));
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    #[test]
    fn releasing_another_grant_does_not_end_the_hold() {
        let mut b = Builder::new();
        let one = b.acquire(0, 1_000, "client-1", "lock", "a", None);
        // A release of a value client-1 does not hold.
        b.release(2_000, 2_500, "client-1", "lock", "zzz", None);
        let two = b.acquire(3_000, 4_000, "client-2", "lock", "b", None);
        let rel = b.release(5_000, 6_000, "client-1", "lock", "a", None);
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![one, two, rel]);
    }

    #[test]
    fn different_keys_are_independent() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock-a", "a", Some(1));
        b.acquire(2_000, 3_000, "client-2", "lock-b", "b", Some(1));
        b.release(4_000, 5_000, "client-1", "lock-a", "a", Some(1));
        b.release(6_000, 7_000, "client-2", "lock-b", "b", Some(1));
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(result.explanation, "no overlap among 2 grants on 2 keys");
    }

    #[test]
    fn kleppmann_pause_is_a_violation_fenced_or_not() {
        for fenced in [false, true] {
            let (history, story) = kleppmann(fenced);
            let result = MutualExclusion.check(&OpHistory::new(&history));
            assert_eq!(result.verdict, Verdict::Invalid, "fenced: {fenced}");
            assert_eq!(
                seqs(&result),
                vec![story.c1_acquired, story.c2_acquired, story.c1_release]
            );
            assert_eq!(
                result.explanation,
                "client-1 (grant g1, token 1) and client-2 (grant g2, token 2) both held \"lock\" \
                 from 10.502 s to 10.700 s; 1 overlap among 2 grants"
            );
            assert!(story.c2_release < story.c1_release);
        }
    }

    #[test]
    fn malformed_data_does_not_panic() {
        let result = MutualExclusion.check(&OpHistory::new(&malformed()));
        // Only the one good grant counts.
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(result.explanation, "no overlap among 1 grant on 1 key");
    }

    /// An acquire by `task` of client-1 (invoke and ok), with `value`.
    fn task_acquire(b: &mut Builder, at_us: u64, task: Option<u32>, value: &str) {
        let id = b.id();
        let mut invoke = serde_json::json!({ "key": "lock", "ttl_ms": 1000 });
        if let Some(task) = task {
            invoke["task"] = serde_json::json!(task);
        }
        b.op(at_us, "client-1", id, Phase::Invoke, names::ACQUIRE, invoke);
        let grant = serde_json::json!({ "key": "lock", "value": value, "fencing_token": null, "validity_ms": 900 });
        b.op(at_us + 1_000, "client-1", id, Phase::Ok, names::ACQUIRE, grant);
    }

    #[test]
    fn two_tasks_of_one_client_overlapping_are_invalid_and_named() {
        let mut b = Builder::new();
        task_acquire(&mut b, 0, Some(1), "a");
        // Task 2's acquire neither ends task 1's hold nor counts as the same holder.
        task_acquire(&mut b, 5_000, Some(2), "b");
        let result = MutualExclusion.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(
            result
                .explanation
                .starts_with("client-1 task 1 (grant a, no token) and client-1 task 2 (grant b, no token)"),
            "{}",
            result.explanation
        );

        // Without task names (one task), the next acquire ends the client's previous hold.
        let mut b = Builder::new();
        task_acquire(&mut b, 0, None, "a");
        task_acquire(&mut b, 5_000, None, "b");
        let history_raw = b.build();
        let history = OpHistory::new(&history_raw);
        assert_eq!(MutualExclusion.check(&history).verdict, Verdict::Valid);
        assert!(history.holds().iter().all(|h| h.task.is_none()));
    }
}
