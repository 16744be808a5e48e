//! `lease-validity`: a lock never claims a lease longer than the one the masters actually hold.
//!
//! Every belief of a holder (the acquire `ok`, then each extension's `ok`) claims a deadline:
//! `validity_ms` counted on the client's monotonic clock from the instant the lock computed it
//! (the grant's `validity_from_ms`), converted to true time by the client's own clock rate (its
//! readings at its events). The lease the masters hold for that grant ends when fewer than a
//! majority of the masters its requests reached still hold its value: by the key's expiry, a
//! deletion the holder did not ask for, or another value set (see
//! [`lease`](crate::history::lease)). The history is invalid when a claimed deadline falls after
//! that end by more than the tolerance; the explanation and witness describe the first such
//! belief and the explanation counts them all.
//!
//! Both clock conversions are bounds, not estimates
//! (`ClockTrack::true_us_range`): a claim
//! is placed at the earliest instant the client's clock can have reached its deadline, a key's
//! natural expiry at the latest instant the master's clock can have reached it. A rate
//! extrapolated from millisecond readings can be a thousand ppm off, which over the seconds after
//! a client's last event made a correct lock look 2–3 ms past its lease (explore seed 61 of
//! token-release, bounded profile).
//!
//! **Tolerance: `TOLERANCE_US` (2 ms)**, for the millisecond resolution of the lock's own
//! arithmetic (its elapsed time and the TTL are whole milliseconds). Nothing more is allowed for
//! clock drift: both sides are measured in true time with each node's actual clock rate, so the
//! drift an algorithm allows for must already be inside its own validity (Redlock subtracts
//! `drift_factor × ttl + 2 ms`).
//! A pause never makes a correct lock lie (the deadline is counted from when it computed the
//! validity, not from when the client looked); a lock that forgets to subtract its acquisition
//! time, measures it on a wall clock that jumped, or under-estimates drift beyond what the
//! clocks actually did, does.
//!
//! **A lock that claims no validity is not judged.** A grant or extension whose validity is
//! exactly the TTL its operation asked for, and that does not say when it computed it
//! (`validity_from_ms`), computed none: a lock without validity arithmetic (redis-py's `Lock`,
//! Redisson's `RLock`: `validity = "none"` in a script lock; a live adapter that reports
//! nothing) hands the holder the whole TTL, counted from whenever it returns, and its
//! documentation promises no more than "the key expires after the timeout". Judged as a claim it
//! would be past the lease on every grant by the acquisition's reply time (and by seconds when a
//! restart loses the key), which says nothing about the lock. Such beliefs are left out, and a
//! history with nothing else is unknown, with an explanation that says so. A lock that computes
//! a validity states the instant it did: it is judged, even when its arithmetic came to the
//! whole TTL (a `TTL − elapsed` whose elapsed time read 0 ms, or a Redlock that forgets to
//! subtract anything).
//!
//! Unknown, rather than valid, when a belief cannot be judged: the lock did not record when it
//! computed the validity, it claimed none, or the masters' side of the lease is not fully shown
//! (a crash left the key in doubt, a script this reader does not know touched it). A violation
//! wins over unknowns. With no grant at all it is valid.

use super::{count, seconds, token_text, witness, CheckResult, Checker, CheckerName};
use crate::model::Verdict;
use crate::history::lease::{lease, ClockTracks, Downtimes};
use crate::history::{Belief, Hold, LockOp, OpData, OpHistory, OpName, StepKind};
use lockstep_sim::Event;
use std::collections::BTreeMap;

/// The slack allowed between a claimed deadline and the lease's end, µs.
pub(crate) const TOLERANCE_US: u64 = 2_000;

/// Checks that claimed validities stay inside the masters' lease; see the [module](self) docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeaseValidity;

/// The TTL each extension asked for, by the `seq` of its `ok` (a grant's is on its acquire's
/// invoke).
struct AskedTtls(BTreeMap<u64, u64>);

impl AskedTtls {
    fn of(history: &OpHistory<'_>) -> AskedTtls {
        let steps = history.steps();
        let invoked_ttl = |invoke: usize| match &steps[invoke].kind {
            StepKind::Op(op) => match &op.data {
                Some(OpData::Invoke(LockOp::Extend(extend))) => Some(extend.ttl_ms),
                _ => None,
            },
            _ => None,
        };
        let by_ok = history
            .operations()
            .iter()
            .filter(|op| op.name == OpName::Extend)
            .filter_map(|op| Some((steps[op.completion?].event.seq, invoked_ttl(op.invoke)?)))
            .collect();
        AskedTtls(by_ok)
    }

    /// The TTL the operation that told `belief` asked for (`None`: its invoke is not recorded).
    fn of_belief(&self, history: &OpHistory<'_>, hold: &Hold<'_>, belief: &Belief<'_>) -> Option<u64> {
        if belief.event.seq != hold.granted.seq {
            return self.0.get(&belief.event.seq).copied();
        }
        let invoke = history.operations().get(hold.acquire?)?.invoke;
        match &history.steps()[invoke].kind {
            StepKind::Op(op) => match &op.data {
                Some(OpData::Invoke(LockOp::Acquire(acquire))) => Some(acquire.ttl_ms),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A belief whose deadline falls after the lease's end.
struct Lie<'a, 'h> {
    hold: &'a Hold<'h>,
    belief: &'a Belief<'h>,
    claimed_us: u64,
    lease_end_us: u64,
    ended_by: Option<&'h Event>,
}

impl Checker for LeaseValidity {
    fn name(&self) -> CheckerName {
        CheckerName::LeaseValidity
    }

    fn check(&self, history: &OpHistory<'_>) -> CheckResult {
        let clocks = ClockTracks::of(history);
        let downtimes = Downtimes::of(history);
        let asked = AskedTtls::of(history);
        let (mut beliefs, mut unrecorded, mut undecided, mut unclaimed) = (0usize, 0usize, 0usize, 0usize);
        let mut lies: Vec<Lie<'_, '_>> = Vec::new();
        for hold in history.holds() {
            let lease = lease(history, hold, &clocks, &downtimes);
            let (earliest_end_us, latest_end_us, ended_by) = lease.majority_end();
            for belief in &hold.beliefs {
                beliefs += 1;
                if belief.validity_from_ms.is_none()
                    && asked.of_belief(history, hold, belief) == Some(belief.validity_ms)
                {
                    // The whole TTL: the lock computed no validity (see the module docs).
                    unclaimed += 1;
                    continue;
                }
                let Some(from_ms) = belief.validity_from_ms else {
                    unrecorded += 1;
                    continue;
                };
                let deadline_ms = from_ms.saturating_add_unsigned(belief.validity_ms);
                // The earliest instant the client's clock can have reached the deadline.
                let Some((claimed_us, _)) = clocks.true_us_range(hold.process, deadline_ms) else {
                    undecided += 1;
                    continue;
                };
                if claimed_us <= earliest_end_us.saturating_add(TOLERANCE_US) {
                    continue;
                }
                if latest_end_us == u64::MAX || claimed_us <= latest_end_us.saturating_add(TOLERANCE_US) {
                    undecided += 1;
                    continue;
                }
                lies.push(Lie {
                    hold,
                    belief,
                    claimed_us,
                    lease_end_us: latest_end_us,
                    ended_by,
                });
            }
        }

        let (verdict, explanation, witness) = if let Some(lie) = lies.first() {
            let what = if lie.belief.event.seq == lie.hold.granted.seq {
                "its grant"
            } else {
                "an extension"
            };
            let mut events = vec![lie.hold.granted, lie.belief.event];
            events.extend(lie.hold.master_grant);
            events.extend(lie.ended_by);
            (
                Verdict::Invalid,
                format!(
                    "{} (grant {}, {}) was told at {} by {what} that it held {:?} for {} ms, until {}, but the \
                     masters' lease ended at {} ({} ms earlier, tolerance {} ms); {} among {}",
                    lie.hold.holder(),
                    super::grant_text(&lie.hold.grant.value),
                    token_text(lie.hold.grant.fencing_token),
                    seconds(lie.belief.event.at_us),
                    lie.hold.grant.key,
                    lie.belief.validity_ms,
                    seconds(lie.claimed_us),
                    seconds(lie.lease_end_us),
                    (lie.claimed_us - lie.lease_end_us) / 1_000,
                    TOLERANCE_US / 1_000,
                    count(lies.len(), "claim past the lease", "claims past the lease"),
                    count(beliefs, "validity", "validities"),
                ),
                witness(&events),
            )
        } else if beliefs > 0 && unclaimed == beliefs {
            let grants = history.holds().len();
            let extensions = beliefs - grants;
            let told = if extensions == 0 {
                count(grants, "grant", "grants")
            } else {
                format!(
                    "{} and {}",
                    count(grants, "grant", "grants"),
                    count(extensions, "extension", "extensions")
                )
            };
            (
                Verdict::Unknown,
                format!(
                    "the lock claims no validity: its {told} {} the whole TTL asked for (no validity arithmetic: \
                     the holder trusts the TTL from whenever the lock returns), so there is no claim to check against \
                     the masters' lease",
                    if beliefs == 1 { "reported" } else { "each reported" }
                ),
                Vec::new(),
            )
        } else if unrecorded + undecided + unclaimed > 0 {
            let mut why = Vec::new();
            if unclaimed > 0 {
                why.push(format!("{unclaimed} that claim no validity (the whole TTL asked for)"));
            }
            if unrecorded > 0 {
                why.push(format!("{unrecorded} without the instant the lock computed them"));
            }
            if undecided > 0 {
                why.push(format!(
                    "{undecided} whose lease the masters' history does not fully show"
                ));
            }
            (
                Verdict::Unknown,
                format!(
                    "no claim past the lease among {}, but {} of them could not be judged: {}",
                    count(beliefs, "validity", "validities"),
                    unrecorded + undecided + unclaimed,
                    why.join(", ")
                ),
                Vec::new(),
            )
        } else if beliefs == 0 {
            (Verdict::Valid, "no grants".to_string(), Vec::new())
        } else {
            (
                Verdict::Valid,
                format!(
                    "{} ended within the masters' lease (tolerance {} ms)",
                    count(beliefs, "claimed validity", "claimed validities"),
                    TOLERANCE_US / 1_000
                ),
                Vec::new(),
            )
        };
        CheckResult::new(CheckerName::LeaseValidity, verdict, explanation, witness)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_sim::History;
    use serde_json::json;

    /// client-1's grant of `validity_ms` on a 10 s TTL: `SET` at 2 ms, the acquire `ok` at 4 ms,
    /// the key deleted by someone else at `deleted_ms` (if any).
    fn history(validity_ms: u64, deleted_ms: Option<u64>) -> History {
        let mut h = History::new();
        let mut push = |at_ms: u64, node: &str, kind: serde_json::Value| {
            let kind: lockstep_sim::EventKind = serde_json::from_value(kind).expect("an event kind");
            h.push(
                at_ms * 1_000,
                node,
                1_767_225_600_000 + at_ms as i64,
                at_ms as i64,
                kind,
            );
        };
        let op = |id: u64, phase: &str, op: &str, data: serde_json::Value| json!({ "type": "op", "id": id, "phase": phase, "op": op, "data": data });
        let command =
            |args: &[&str], reply: &str| json!({ "type": "command", "conn": 1, "args": args, "reply": reply });
        push(
            0,
            "client-1",
            op(1, "invoke", "acquire", json!({ "key": "lock", "ttl_ms": 10_000 })),
        );
        push(
            2,
            "redis-1",
            command(&["SET", "lock", "v1", "NX", "PX", "10000"], "+OK"),
        );
        // A lock that computes no validity states no instant it computed it at.
        let grant = if validity_ms == 10_000 {
            json!({ "key": "lock", "value": "v1", "fencing_token": null, "validity_ms": validity_ms })
        } else {
            json!({ "key": "lock", "value": "v1", "fencing_token": null, "validity_ms": validity_ms, "validity_from_ms": 4 })
        };
        push(4, "client-1", op(1, "ok", "acquire", grant));
        if let Some(at_ms) = deleted_ms {
            push(at_ms, "redis-1", command(&["DEL", "lock"], ":1"));
        }
        push(12_000, "world", json!({ "type": "note", "text": "end" }));
        h
    }

    fn check(history: &History) -> CheckResult {
        LeaseValidity.check(&OpHistory::new(history))
    }

    #[test]
    fn a_lock_that_claims_no_validity_is_not_judged() {
        // The whole TTL, counted from the reply: 2 ms past the lease on every grant, and past
        // it by seconds when the key is lost. No claim either way: unknown, saying why.
        for deleted in [None, Some(1_000)] {
            let result = check(&history(10_000, deleted));
            assert_eq!(result.verdict, Verdict::Unknown, "{}", result.explanation);
            assert!(
                result.explanation.starts_with("the lock claims no validity"),
                "{}",
                result.explanation
            );
        }
    }

    #[test]
    fn a_computed_validity_is_judged() {
        let result = check(&history(9_990, None));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
        let result = check(&history(9_990, Some(1_000)));
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.explanation);
        assert!(
            result.explanation.contains("masters' lease ended at 1.000 s"),
            "{}",
            result.explanation
        );
    }
}
