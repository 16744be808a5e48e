//! `stale-write`: the resource never accepts a write made under an earlier grant after it accepted
//! a write made under a later one.
//!
//! Grants are ordered by the position (`seq`) of their `acquire` `ok`. Each accepted write at the
//! resource (a `ResourceWrite` event with `accepted: true`) is attributed to a grant: the latest
//! `write` invoke by the same process (`ResourceWrite.client`) before it whose data has the same
//! key, value and fencing token; its grant is that process's latest `acquire` `ok` before that
//! invoke. The history is invalid when an accepted write's grant is older than the grant of an
//! earlier accepted write to the same resource key; the explanation and witness describe the first
//! such write and the explanation counts them all.
//!
//! Left out: rejected writes (they are what fencing is for), writes that cannot be attributed (no
//! matching invoke, or no grant before it: ignored, but if any exist and no violation is found the
//! verdict is unknown rather than valid), whether the grant was still held when the write was sent
//! (that is [`mutual-exclusion`](crate::checker::mutual_exclusion)), and the written values (that
//! is [`lost-update`](crate::checker::lost_update)). Ops whose data does not decode play no part
//! (the history reader lists them as anomalies). The attribution is the [`OpHistory`]'s.

use super::{count, seconds, token_text, witness, CheckResult, Checker, CheckerName};
use crate::model::Verdict;
use crate::history::{OpHistory, WriteRecord};
use std::collections::BTreeMap;

/// Checks that accepted writes follow grant order; see the [module](self) docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StaleWrite;

/// An accepted write attributed to a grant (an index into the holds, which are in grant order).
#[derive(Clone, Copy)]
struct Attributed<'a> {
    grant: usize,
    write: &'a WriteRecord<'a>,
}

/// The first stale write found: the earlier accepted write with the later grant, then the stale
/// one.
type Stale<'a> = (Attributed<'a>, Attributed<'a>);

impl Checker for StaleWrite {
    fn name(&self) -> CheckerName {
        CheckerName::StaleWrite
    }

    fn check(&self, history: &OpHistory<'_>) -> CheckResult {
        let grants = history.holds();
        // resource key -> the accepted write with the latest grant so far.
        let mut newest: BTreeMap<&str, Attributed<'_>> = BTreeMap::new();

        let (mut accepted, mut unattributed, mut stale) = (0usize, 0usize, 0usize);
        let mut first: Option<Stale<'_>> = None;

        for write in history.writes().iter().filter(|w| w.attempt.accepted) {
            accepted += 1;
            let Some(grant) = write.grant else {
                unattributed += 1;
                continue;
            };
            let this = Attributed { grant, write };
            match newest.get(write.attempt.key) {
                Some(prev) if grant < prev.grant => {
                    stale += 1;
                    first.get_or_insert((*prev, this));
                }
                Some(prev) if grant == prev.grant => {}
                _ => {
                    newest.insert(write.attempt.key, this);
                }
            }
        }

        let describe = |a: &Attributed<'_>| {
            let g = &grants[a.grant];
            (
                g.holder(),
                format!(
                    "grant {}, {}",
                    super::grant_text(&g.grant.value),
                    token_text(g.grant.fencing_token)
                ),
            )
        };
        let (verdict, explanation, witness) = if let Some((later, older)) = first {
            let (older_process, older_grant) = describe(&older);
            let (later_process, later_grant) = describe(&later);
            let key = older.write.attempt.key;
            (
                Verdict::Invalid,
                format!(
                    "{older_process}'s write of {} to {key:?} ({older_grant}) was accepted at {} after \
                     {later_process}'s write of {} under a later grant ({later_grant}) at {}; {} in all",
                    older.write.attempt.value,
                    seconds(older.write.event.at_us),
                    later.write.attempt.value,
                    seconds(later.write.event.at_us),
                    count(stale, "stale write", "stale writes"),
                ),
                witness(&[
                    grants[older.grant].granted,
                    grants[later.grant].granted,
                    later.write.event,
                    older.write.event,
                ]),
            )
        } else if unattributed > 0 {
            (
                Verdict::Unknown,
                format!(
                    "no stale write among {} attributed to grants, but {unattributed} of {accepted} could not be \
                     attributed",
                    count(accepted - unattributed, "accepted write", "accepted writes"),
                ),
                Vec::new(),
            )
        } else if accepted == 0 {
            (Verdict::Valid, "no accepted writes".to_string(), Vec::new())
        } else {
            (
                Verdict::Valid,
                format!(
                    "{} to {} followed grant order",
                    count(accepted, "accepted write", "accepted writes"),
                    count(newest.len(), "key", "keys"),
                ),
                Vec::new(),
            )
        };
        CheckResult::new(CheckerName::StaleWrite, verdict, explanation, witness)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::{kleppmann, malformed, seqs, Builder};

    #[test]
    fn no_writes_is_valid() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        // A rejected write does not count.
        b.write(2_000, "client-1", "counter", 1, Some(1), false, 0);
        let result = StaleWrite.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid);
        assert_eq!(result.explanation, "no accepted writes");
        assert_eq!(result.checker, "stale-write");
    }

    #[test]
    fn writes_in_grant_order_are_valid() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        b.write(2_000, "client-1", "counter", 1, Some(1), true, 1);
        b.write(5_000, "client-1", "counter", 2, Some(1), true, 2);
        b.release(9_000, 9_500, "client-1", "lock", "a", Some(1));
        b.acquire(10_000, 11_000, "client-2", "lock", "b", Some(2));
        b.write(12_000, "client-2", "counter", 3, Some(2), true, 3);
        b.release(19_000, 19_500, "client-2", "lock", "b", Some(2));
        let result = StaleWrite.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(result.explanation, "3 accepted writes to 1 key followed grant order");
    }

    #[test]
    fn an_older_grant_written_after_a_newer_one_is_invalid() {
        let mut b = Builder::new();
        let a_ok = b.acquire(0, 1_000, "client-1", "lock", "a", None);
        let b_ok = b.acquire(2_000, 3_000, "client-2", "lock", "b", None);
        let b_write = b.write(4_000, "client-2", "counter", 1, None, true, 1);
        let a_write = b.write(8_000, "client-1", "counter", 1, None, true, 2);
        // A second stale write, counted but not the witness.
        b.write(12_000, "client-1", "counter", 2, None, true, 3);
        let result = StaleWrite.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![a_ok, b_ok, b_write, a_write]);
        assert_eq!(
            result.explanation,
            "client-1's write of 1 to \"counter\" (grant a, no token) was accepted at 0.009 s after client-2's \
             write of 1 under a later grant (grant b, no token) at 0.005 s; 2 stale writes in all"
        );
    }

    #[test]
    fn the_witness_cites_the_newest_earlier_grant() {
        let mut b = Builder::new();
        let _one = b.acquire(0, 1_000, "client-1", "lock", "a", None);
        let two = b.acquire(2_000, 3_000, "client-2", "lock", "b", None);
        let three = b.acquire(4_000, 5_000, "client-3", "lock", "c", None);
        b.write(6_000, "client-1", "counter", 1, None, true, 1);
        let w3 = b.write(10_000, "client-3", "counter", 2, None, true, 2);
        let w2 = b.write(14_000, "client-2", "counter", 3, None, true, 3);
        let result = StaleWrite.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![two, three, w3, w2]);
    }

    #[test]
    fn unattributed_writes_make_it_unknown() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        b.write(2_000, "client-1", "counter", 1, Some(1), true, 1);
        // No invoke for this one, and one whose invoke differs in value.
        b.resource_write(5_000, "client-2", "counter", 2, None, true, 2);
        b.write_invoke(6_000, "client-1", "counter", 3, Some(1));
        b.resource_write(7_000, "client-1", "counter", 4, Some(1), true, 3);
        // A write invoke with no grant before it.
        b.write(8_000, "client-3", "counter", 5, None, true, 4);
        let result = StaleWrite.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Unknown);
        assert_eq!(
            result.explanation,
            "no stale write among 1 accepted write attributed to grants, but 3 of 4 could not be attributed"
        );
        assert!(result.witness.is_empty());
    }

    #[test]
    fn a_violation_wins_over_unattributed_writes() {
        let mut b = Builder::new();
        b.resource_write(0, "client-9", "counter", 7, None, true, 1);
        b.acquire(0, 1_000, "client-1", "lock", "a", None);
        b.acquire(2_000, 3_000, "client-2", "lock", "b", None);
        b.write(4_000, "client-2", "counter", 1, None, true, 2);
        b.write(8_000, "client-1", "counter", 1, None, true, 3);
        let result = StaleWrite.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
    }

    #[test]
    fn the_latest_matching_invoke_decides_the_grant() {
        // client-1 sent the same write under two grants; the resource saw the later one.
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", None);
        b.write_invoke(2_000, "client-1", "counter", 1, None);
        b.release(3_000, 3_500, "client-1", "lock", "a", None);
        b.acquire(4_000, 5_000, "client-2", "lock", "b", None);
        b.write(6_000, "client-2", "counter", 1, None, true, 1);
        b.release(9_000, 9_500, "client-2", "lock", "b", None);
        b.acquire(10_000, 11_000, "client-1", "lock", "c", None);
        b.write(12_000, "client-1", "counter", 1, None, true, 2);
        let result = StaleWrite.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    #[test]
    fn different_keys_are_independent() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        b.acquire(2_000, 3_000, "client-2", "lock", "b", Some(2));
        b.write(4_000, "client-2", "x", 1, Some(2), true, 1);
        b.write(8_000, "client-1", "y", 1, Some(1), true, 1);
        let result = StaleWrite.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(result.explanation, "2 accepted writes to 2 keys followed grant order");
    }

    #[test]
    fn kleppmann_unfenced_is_a_stale_write() {
        let (history, story) = kleppmann(false);
        let result = StaleWrite.check(&OpHistory::new(&history));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(
            seqs(&result),
            vec![story.c1_acquired, story.c2_acquired, story.c2_write, story.c1_write]
        );
        assert_eq!(
            result.explanation,
            "client-1's write of 1 to \"counter\" (grant g1, token 1) was accepted at 17.001 s after client-2's \
             write of 1 under a later grant (grant g2, token 2) at 10.601 s; 1 stale write in all"
        );
    }

    #[test]
    fn kleppmann_fenced_is_valid() {
        let (history, _) = kleppmann(true);
        let result = StaleWrite.check(&OpHistory::new(&history));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(result.explanation, "1 accepted write to 1 key followed grant order");
    }

    #[test]
    fn malformed_data_does_not_panic() {
        let result = StaleWrite.check(&OpHistory::new(&malformed()));
        // The two accepted writes nobody invoked cannot be attributed.
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.explanation);
        assert!(
            result.explanation.contains("2 of 2 could not be attributed"),
            "{}",
            result.explanation
        );
    }
}
