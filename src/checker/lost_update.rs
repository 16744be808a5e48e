//! `lost-update`: every accepted increment of the resource's counter survives.
//!
//! The workload's critical section reads the resource's counter and writes it back plus one, so
//! starting from nothing, `n` accepted writes to a key must leave it at `n`. For each resource
//! key, the final counter (the value of the last `ResourceWrite` with `accepted: true`) must equal
//! the number of accepted writes. When it does not, the witness is the accepted writes whose value
//! repeats an earlier accepted value of that key (two critical sections read the same counter), or
//! the last accepted write when none repeats; the explanation describes the first such key (in key
//! order) and counts the keys that are off.
//!
//! Left out: rejected writes, reads (a read-only history is valid: "no writes"), who wrote and under
//! which grant (that is [`stale-write`](crate::checker::stale_write)), and writes whose outcome the
//! client never learned: the resource's own record decides.

use super::{count, witness, CheckResult, Checker, CheckerName};
use crate::model::Verdict;
use crate::history::OpHistory;
use lockstep_sim::Event;
use std::collections::{BTreeMap, BTreeSet};

/// Checks that each key's final counter equals its accepted writes; see the [module](self) docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LostUpdate;

impl Checker for LostUpdate {
    fn name(&self) -> CheckerName {
        CheckerName::LostUpdate
    }

    fn check(&self, history: &OpHistory<'_>) -> CheckResult {
        // resource key -> its accepted writes, in order, with their values.
        let mut writes: BTreeMap<&str, Vec<(&Event, i64)>> = BTreeMap::new();
        for write in history.writes().iter().filter(|w| w.attempt.accepted) {
            writes
                .entry(write.attempt.key)
                .or_default()
                .push((write.event, write.attempt.value));
        }

        let total: usize = writes.values().map(Vec::len).sum();
        let mut off = writes.iter().filter_map(|(key, list)| {
            let (last, final_value) = *list.last()?;
            let n = list.len();
            (i128::from(final_value) != n as i128).then_some((*key, list, last, final_value, n))
        });
        let (verdict, explanation, witness) = match off.next() {
            None if total == 0 => (Verdict::Valid, "no writes".to_string(), Vec::new()),
            None => (
                Verdict::Valid,
                format!(
                    "each key's final counter equals its accepted writes ({} to {})",
                    count(total, "write", "writes"),
                    count(writes.len(), "key", "keys"),
                ),
                Vec::new(),
            ),
            Some((key, list, last, final_value, n)) => {
                let others = off.count();
                let mut seen = BTreeSet::new();
                let mut events: Vec<&Event> = list
                    .iter()
                    .filter(|(_, value)| !seen.insert(*value))
                    .map(|(event, _)| *event)
                    .collect();
                if events.is_empty() {
                    events.push(last);
                }
                let accepted = if n == 1 {
                    "1 write was accepted".to_string()
                } else {
                    format!("{n} writes were accepted")
                };
                let difference = n as i128 - i128::from(final_value);
                let outcome = if difference == 1 {
                    "1 update lost".to_string()
                } else if difference > 0 {
                    format!("{difference} updates lost")
                } else {
                    format!("the counter is {} ahead", -difference)
                };
                let also = if others > 0 {
                    format!("; {} more off", count(others, "key", "keys"))
                } else {
                    String::new()
                };
                (
                    Verdict::Invalid,
                    format!("final counter {final_value} but {accepted}: {outcome} (key {key:?}){also}"),
                    witness(&events),
                )
            }
        };
        CheckResult::new(CheckerName::LostUpdate, verdict, explanation, witness)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::{kleppmann, malformed, seqs, Builder};

    #[test]
    fn no_writes_is_valid() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", None);
        b.resource_write(2_000, "client-1", "counter", 1, None, false, 0);
        let result = LostUpdate.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid);
        assert_eq!(result.explanation, "no writes");
        assert_eq!(result.checker, "lost-update");
    }

    #[test]
    fn counting_writes_are_valid() {
        let mut b = Builder::new();
        for (i, client) in ["client-1", "client-2", "client-1"].iter().enumerate() {
            let i = i as u64;
            b.write(i * 10_000, client, "counter", i as i64 + 1, None, true, i + 1);
        }
        // A rejected write with a wrong value does not matter.
        b.write(40_000, "client-2", "counter", 1, None, false, 3);
        let result = LostUpdate.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(
            result.explanation,
            "each key's final counter equals its accepted writes (3 writes to 1 key)"
        );
    }

    #[test]
    fn a_repeated_value_is_a_lost_update() {
        let mut b = Builder::new();
        b.write(0, "client-1", "counter", 1, None, true, 1);
        b.write(10_000, "client-2", "counter", 2, None, true, 2);
        let dup = b.write(20_000, "client-3", "counter", 2, None, true, 3);
        b.write(30_000, "client-1", "counter", 3, None, true, 4);
        let result = LostUpdate.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![dup]);
        assert_eq!(
            result.explanation,
            "final counter 3 but 4 writes were accepted: 1 update lost (key \"counter\")"
        );
    }

    #[test]
    fn without_a_repeat_the_last_write_is_the_witness() {
        let mut b = Builder::new();
        b.write(0, "client-1", "counter", 1, None, true, 1);
        let last = b.write(10_000, "client-2", "counter", 5, None, true, 2);
        let result = LostUpdate.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![last]);
        assert_eq!(
            result.explanation,
            "final counter 5 but 2 writes were accepted: the counter is 3 ahead (key \"counter\")"
        );
    }

    #[test]
    fn different_keys_are_independent() {
        let mut b = Builder::new();
        b.write(0, "client-1", "x", 1, None, true, 1);
        b.write(10_000, "client-2", "y", 1, None, true, 1);
        b.write(20_000, "client-2", "x", 2, None, true, 2);
        let result = LostUpdate.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(
            result.explanation,
            "each key's final counter equals its accepted writes (3 writes to 2 keys)"
        );

        // Two keys off: the first in key order is described, the other counted.
        let mut b = Builder::new();
        b.write(0, "client-1", "b", 1, None, true, 1);
        let b_dup = b.write(10_000, "client-2", "b", 1, None, true, 2);
        b.write(20_000, "client-1", "a", 0, None, true, 1);
        let a_last = b.write(30_000, "client-2", "a", 7, None, true, 2);
        let result = LostUpdate.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![a_last]);
        assert_eq!(
            result.explanation,
            "final counter 7 but 2 writes were accepted: the counter is 5 ahead (key \"a\"); 1 key more off"
        );
        assert!(b_dup < a_last);
    }

    #[test]
    fn kleppmann_unfenced_loses_an_update() {
        let (history, story) = kleppmann(false);
        let result = LostUpdate.check(&OpHistory::new(&history));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![story.c1_write]);
        assert_eq!(
            result.explanation,
            "final counter 1 but 2 writes were accepted: 1 update lost (key \"counter\")"
        );
    }

    #[test]
    fn kleppmann_fenced_loses_nothing() {
        let (history, _) = kleppmann(true);
        let result = LostUpdate.check(&OpHistory::new(&history));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    #[test]
    fn malformed_data_and_extreme_values_do_not_panic() {
        let result = LostUpdate.check(&OpHistory::new(&malformed()));
        // Accepted values i64::MIN then i64::MAX: final counter far ahead of 2 writes.
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(result.witness.len(), 1);

        let mut b = Builder::new();
        b.resource_write(0, "c", "k", i64::MIN, None, true, 1);
        let result = LostUpdate.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(result.explanation.contains("updates lost"), "{}", result.explanation);
    }
}
