//! `token-order`: fencing tokens are unique and strictly increase in grant order, per lock key.
//!
//! Every grant (an `acquire` `ok`, a [`Hold`] of the [`OpHistory`]) that carries a fencing token
//! issues that token for the grant's key. Grants are ordered by when the masters granted them
//! ([`Hold::master_grant`]: the command that completed a majority of successful acquisitions),
//! not by when the client received the reply — a client paused while its reply was in flight
//! records its grant after later ones; a grant whose masters' side the history does not show is
//! placed at its acquire `ok`. A token equal to one issued earlier for the same key is a
//! duplicate, one below the highest issued so far a decrease. The explanation and
//! witness (the two acquire oks) describe the first such grant; the explanation counts them all.
//! When no grant carries a token the verdict is unknown: there is nothing to order.
//!
//! Left out: grants without a token (skipped), acquires whose outcome is unknown (`info`: a token
//! the client never saw), gaps between tokens (allowed), tokens sent with writes (that is
//! [`stale-write`](crate::checker::stale_write)), and whether the resource enforced them. Ops whose
//! data does not decode play no part (the history reader lists them as anomalies).
//!
//! [`Hold::master_grant`]: crate::history::Hold::master_grant
//! [`Hold`]: crate::history::Hold

use super::{count, witness, CheckResult, Checker, CheckerName};
use crate::model::Verdict;
use crate::history::{Hold, OpHistory};
use std::collections::BTreeMap;

/// Checks that fencing tokens strictly increase per lock key; see the [module](self) docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenOrder;

/// A token issued by one grant.
#[derive(Clone, Copy)]
struct Issued<'a> {
    token: u64,
    hold: &'a Hold<'a>,
}

/// What has been issued so far for one key.
#[derive(Default)]
struct KeyTokens<'a> {
    /// Every token issued, with its first grant.
    seen: BTreeMap<u64, Issued<'a>>,
    /// The highest token issued.
    highest: Option<Issued<'a>>,
}

/// The first violation: the earlier grant, the offending one, and whether it is a duplicate.
type Violation<'a> = (Issued<'a>, Issued<'a>, bool);

/// `client-1 (grant abc)`.
fn holder(hold: &Hold<'_>) -> String {
    format!("{} (grant {})", hold.granted.node, super::grant_text(&hold.grant.value))
}

impl Checker for TokenOrder {
    fn name(&self) -> CheckerName {
        CheckerName::TokenOrder
    }

    fn check(&self, history: &OpHistory<'_>) -> CheckResult {
        let mut keys: BTreeMap<&str, KeyTokens<'_>> = BTreeMap::new();
        let mut issued = 0usize;
        let mut violations = 0usize;
        let mut first: Option<(&str, Violation<'_>)> = None;

        // In the order the masters granted (the acquire `ok` when the history does not show it):
        // a client paused while its grant's reply was in flight records it late.
        let mut holds: Vec<&Hold<'_>> = history.holds().iter().collect();
        holds.sort_by_key(|h| (h.grant_order_seq(), h.granted.seq));
        for hold in holds {
            let Some(token) = hold.grant.fencing_token else {
                continue;
            };
            issued += 1;
            let this = Issued { token, hold };
            let state = keys.entry(hold.grant.key.as_str()).or_default();
            let violation = if let Some(&earlier) = state.seen.get(&token) {
                Some((earlier, this, true))
            } else {
                state
                    .highest
                    .filter(|highest| highest.token > token)
                    .map(|highest| (highest, this, false))
            };
            if let Some(violation) = violation {
                violations += 1;
                first.get_or_insert((hold.grant.key.as_str(), violation));
            }
            state.seen.entry(token).or_insert(this);
            if state.highest.is_none_or(|highest| token > highest.token) {
                state.highest = Some(this);
            }
        }

        let (verdict, explanation, witness) = match first {
            None if issued == 0 => (
                Verdict::Unknown,
                "no fencing tokens were issued".to_string(),
                Vec::new(),
            ),
            None => (
                Verdict::Valid,
                format!(
                    "{} on {}, unique and strictly increasing",
                    count(issued, "fencing token", "fencing tokens"),
                    count(keys.len(), "key", "keys"),
                ),
                Vec::new(),
            ),
            Some((key, (earlier, later, duplicate))) => {
                let what = if duplicate {
                    format!(
                        "token {} for {key:?} was issued twice: to {} and to {}",
                        later.token,
                        holder(earlier.hold),
                        holder(later.hold)
                    )
                } else {
                    format!(
                        "token {} for {key:?} was issued to {} after token {} to {}",
                        later.token,
                        holder(later.hold),
                        earlier.token,
                        holder(earlier.hold)
                    )
                };
                (
                    Verdict::Invalid,
                    format!(
                        "{what}; {} among {}",
                        count(violations, "violation", "violations"),
                        count(issued, "token", "tokens")
                    ),
                    witness(&[earlier.hold.granted, later.hold.granted]),
                )
            }
        };
        CheckResult::new(CheckerName::TokenOrder, verdict, explanation, witness)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::{kleppmann, malformed, seqs, Builder};
    use lockstep_sim::History;

    #[test]
    fn no_tokens_is_unknown() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", None);
        b.acquire(2_000, 3_000, "client-2", "lock", "b", None);
        let result = TokenOrder.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Unknown);
        assert_eq!(result.explanation, "no fencing tokens were issued");
        assert_eq!(result.checker, "token-order");
        assert_eq!(
            TokenOrder.check(&OpHistory::new(&History::new())).verdict,
            Verdict::Unknown
        );
    }

    #[test]
    fn increasing_tokens_are_valid() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        b.acquire(2_000, 3_000, "client-2", "lock", "b", Some(2));
        // Gaps and tokenless grants are fine.
        b.acquire(4_000, 5_000, "client-1", "lock", "c", None);
        b.acquire(6_000, 7_000, "client-3", "lock", "d", Some(9));
        let result = TokenOrder.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(
            result.explanation,
            "3 fencing tokens on 1 key, unique and strictly increasing"
        );
    }

    #[test]
    fn a_decrease_is_invalid() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        let five = b.acquire(2_000, 3_000, "client-2", "lock", "b", Some(5));
        let three = b.acquire(4_000, 5_000, "client-3", "lock", "c", Some(3));
        let result = TokenOrder.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![five, three]);
        assert_eq!(
            result.explanation,
            "token 3 for \"lock\" was issued to client-3 (grant c) after token 5 to client-2 (grant b); \
             1 violation among 3 tokens"
        );
    }

    #[test]
    fn a_duplicate_is_invalid() {
        let mut b = Builder::new();
        let one = b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        b.acquire(2_000, 3_000, "client-2", "lock", "b", Some(2));
        let again = b.acquire(4_000, 5_000, "client-3", "lock", "c", Some(1));
        b.acquire(6_000, 7_000, "client-3", "lock", "d", Some(2));
        let result = TokenOrder.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(seqs(&result), vec![one, again]);
        assert_eq!(
            result.explanation,
            "token 1 for \"lock\" was issued twice: to client-1 (grant a) and to client-3 (grant c); \
             2 violations among 4 tokens"
        );
    }

    #[test]
    fn different_keys_are_independent() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock-a", "a", Some(5));
        b.acquire(2_000, 3_000, "client-2", "lock-b", "b", Some(1));
        b.acquire(4_000, 5_000, "client-3", "lock-b", "c", Some(5));
        let result = TokenOrder.check(&OpHistory::new(&b.build()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(
            result.explanation,
            "3 fencing tokens on 2 keys, unique and strictly increasing"
        );
    }

    #[test]
    fn kleppmann_tokens_increase_fenced_or_not() {
        for fenced in [false, true] {
            let (history, _) = kleppmann(fenced);
            let result = TokenOrder.check(&OpHistory::new(&history));
            assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
            assert_eq!(
                result.explanation,
                "2 fencing tokens on 1 key, unique and strictly increasing"
            );
        }
    }

    #[test]
    fn malformed_data_does_not_panic() {
        let result = TokenOrder.check(&OpHistory::new(&malformed()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        assert_eq!(
            result.explanation,
            "1 fencing token on 1 key, unique and strictly increasing"
        );
    }
}
