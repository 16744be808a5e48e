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
//! ([`ClockTrack::true_us_range`](crate::history::lease::ClockTrack::true_us_range)): a claim
//! is placed at the earliest instant the client's clock can have reached its deadline, a key's
//! natural expiry at the latest instant the master's clock can have reached it. A rate
//! extrapolated from millisecond readings can be a thousand ppm off, which over the seconds after
//! a client's last event made a correct lock look 2–3 ms past its lease (explore seed 61 of
//! token-release, bounded profile).
//!
//! **Tolerance: [`TOLERANCE_US`] (2 ms)**, for the millisecond resolution of the lock's own
//! arithmetic (its elapsed time and the TTL are whole milliseconds). Nothing more is allowed for
//! clock drift: both sides are measured in true time with each node's actual clock rate, so the
//! drift an algorithm allows for must already be inside its own validity (Redlock subtracts
//! `drift_factor × ttl + 2 ms`).
//! A pause never makes a correct lock lie (the deadline is counted from when it computed the
//! validity, not from when the client looked); a lock that forgets to subtract its acquisition
//! time, measures it on a wall clock that jumped, or under-estimates drift beyond what the
//! clocks actually did, does.
//!
//! Unknown, rather than valid, when a belief cannot be judged: the lock did not record when it
//! computed the validity, or the masters' side of the lease is not fully shown (a crash left the
//! key in doubt, a script this reader does not know touched it). A violation wins over unknowns.
//! With no grant at all it is valid.

use super::{count, seconds, token_text, witness, CheckResult, Checker, CheckerName, Verdict};
use crate::history::lease::{lease, ClockTracks, Downtimes};
use crate::history::{Belief, Hold, OpHistory};
use lockstep_sim::Event;

/// The slack allowed between a claimed deadline and the lease's end, µs.
pub const TOLERANCE_US: u64 = 2_000;

/// Checks that claimed validities stay inside the masters' lease; see the [module](self) docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeaseValidity;

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
        let (mut beliefs, mut unrecorded, mut undecided) = (0usize, 0usize, 0usize);
        let mut lies: Vec<Lie<'_, '_>> = Vec::new();
        for hold in history.holds() {
            let lease = lease(history, hold, &clocks, &downtimes);
            let (earliest_end_us, latest_end_us, ended_by) = lease.majority_end();
            for belief in &hold.beliefs {
                beliefs += 1;
                let Some(from_ms) = belief.validity_from_ms else {
                    unrecorded += 1;
                    continue;
                };
                let clock = clocks.node(hold.process);
                let deadline_ms = from_ms.saturating_add_unsigned(belief.validity_ms);
                // The earliest instant the client's clock can have reached the deadline.
                let Some((claimed_us, _)) = clock.true_us_range(deadline_ms) else {
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
        } else if unrecorded + undecided > 0 {
            let mut why = Vec::new();
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
                    unrecorded + undecided,
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
        CheckResult {
            checker: CheckerName::LeaseValidity.as_str().to_string(),
            verdict,
            explanation,
            witness,
        }
    }
}
