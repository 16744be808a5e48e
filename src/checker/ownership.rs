//! `ownership`: a lock never deletes, overwrites or extends a key that holds another grant's
//! value, and never re-creates a key it no longer holds — judged from the masters' own log,
//! without any timing.
//!
//! Mutual exclusion, stale writes and lost updates can only be promised while the lock's timing
//! assumptions hold (a paused client outlives any lease). This property is different: it holds
//! under *every* fault. Whatever the network, the clocks or the pauses did, a correct lock's
//! commands only ever change its own grant's key: a compare-and-delete that finds another value
//! deletes nothing, a compare-and-extend that finds the key gone extends nothing. So a violation
//! here is an implementation bug, never an unlucky schedule — which is what makes it the
//! explorer's sharpest checker.
//!
//! What it reads: every master command records its effect on each key it changed (the key's
//! value and expiry before and after, [`lockstep_sim::KeyEffect`]). A key's *owner* on a master
//! is the grant whose value it holds (for a hash lock, whose field it holds): the latest grant
//! with that value whose acquire was invoked before the key took it (values reused across
//! acquisitions are told apart this way). Then, for each client command (the replication stream
//! only mirrors its master and is not judged):
//! - the owner's value **deleted or overwritten** is a violation unless the owner had given the
//!   grant up before (a release or abort invoked, or a next acquire by the same holder), or the
//!   owner's own acquire is still running (a Redlock cleaning up a failed attempt);
//! - the owner's key **extended** (its expiry changed, its value kept) is a violation unless the
//!   owner's holder had an `extend` or `acquire` running then, or one that ended without an
//!   answer (a timed-out request may land late), or the command is a late request of the
//!   holder's own extension that already ended: sent by the holder's process, carrying the
//!   owner's value among its arguments, a value one of the holder's extensions sent and no
//!   other task of the process did (a lock over several masters answers at a quorum while its
//!   request to a slow master is still on its way; that request may land after the holder's next
//!   operations reached that master — a late request may touch only its sender's own value, and
//!   here it does). A command without the value (a plain `PEXPIRE`) gets no such excuse;
//!   deletions and re-creations get none either (a late release that deletes the same holder's
//!   next grant of a reused value is a real bug);
//! - a key **created** with a grant's value after that grant was given, while its holder was
//!   extending it and not acquiring, is a violation: the extension re-created a lock it no
//!   longer held (someone else may have taken and released it meanwhile). "Acquiring" means an
//!   acquisition running then or one whose outcome stayed unknown — or a refused one, only when
//!   the holder reuses its values (a lock with a fresh value per attempt never sent this
//!   grant's value in a refused attempt; under contention every holder has been refused).
//!   Not when that master's key never held the grant before and the command is the holder's
//!   late request (its acquisition's, answered at a quorum of the other masters) landing while
//!   it still holds: it puts the holder's own value on a free key, and nothing was lost there
//!   that it could re-create;
//!
//! Expiries, restarts and failovers are not commands: they change keys without judgement. The
//! verdict is invalid on any violation (the explanation describes the first and counts them
//! all), valid otherwise, and unknown when the masters' log records no key effects at all while
//! grants were given (a history written before effects were recorded).
//!
//! Who sent a command: the masters' log names the process at the other end of its connection.
//! A command from another process than the owner's that deletes, overwrites or extends the
//! owner's key (which the owner had not given up) is a violation whatever the timing; between
//! the tasks of one process (a shared lock object), the owner's side decides: its holder did not
//! ask for it. Left out: two tasks of one process extending at the same instant hide one
//! another's foreign extension (a violation can be missed, never invented).

use super::{count, grant_text, seconds, witness, CheckResult, Checker, CheckerName};
use crate::model::Verdict;
use crate::history::{Hold, HoldEndKind, LockOp, OpHistory, OpName, Outcome, StepKind};
use lockstep_sim::{Event, KeyState};
use std::collections::{BTreeMap, BTreeSet};

/// Checks that a lock changes only its own grant's key; see the [module](self) docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ownership;

/// What a command did to another grant's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wrong {
    Deleted,
    Overwrote,
    Extended,
    Recreated,
}

impl Wrong {
    fn verb(self) -> &'static str {
        match self {
            Wrong::Deleted => "deleted",
            Wrong::Overwrote => "overwrote",
            Wrong::Extended => "extended",
            Wrong::Recreated => "re-created",
        }
    }
}

/// One violation: the command, what it did, and the grant it did it to.
struct Violation<'a, 'h> {
    command: &'h Event,
    wrong: Wrong,
    hold: &'a Hold<'h>,
}

/// The owner identities a key state carries: a string's value, or a hash's field names.
fn idents(state: Option<&KeyState>) -> Vec<&str> {
    match state {
        None => Vec::new(),
        Some(s) => s
            .value
            .iter()
            .map(String::as_str)
            .chain(s.fields.iter().map(String::as_str))
            .collect(),
    }
}

/// The history, indexed for ownership questions.
struct Index<'a, 'h> {
    history: &'a OpHistory<'h>,
    /// (key, value) -> holds with that grant, in grant order.
    grants: BTreeMap<(&'a str, &'a str), Vec<&'a Hold<'h>>>,
    /// (process, task) -> its operations (indices), in invoke order.
    actors: BTreeMap<(&'h str, Option<u32>), Vec<usize>>,
}

impl<'a, 'h> Index<'a, 'h> {
    fn new(history: &'a OpHistory<'h>) -> Self {
        let mut grants: BTreeMap<(&str, &str), Vec<&Hold<'h>>> = BTreeMap::new();
        for hold in history.holds() {
            grants
                .entry((hold.grant.key.as_str(), hold.grant.value.as_str()))
                .or_default()
                .push(hold);
        }
        let mut actors: BTreeMap<(&'h str, Option<u32>), Vec<usize>> = BTreeMap::new();
        for (i, op) in history.operations().iter().enumerate() {
            actors.entry((op.process, op.task)).or_default().push(i);
        }
        Index {
            history,
            grants,
            actors,
        }
    }

    /// The position of a hold's acquire invoke (its `ok` when the invoke is unknown).
    fn acquire_seq(&self, hold: &Hold<'h>) -> u64 {
        hold.acquire
            .map(|op| self.history.steps()[self.history.operations()[op].invoke].event.seq)
            .unwrap_or(hold.granted.seq)
    }

    /// The grant that owns `value` of `key` when the key took that value at `since`: the latest
    /// with that value whose acquire was invoked before.
    fn owner(&self, key: &str, value: &str, since: u64) -> Option<&'a Hold<'h>> {
        self.grants
            .get(&(key, value))?
            .iter()
            .rev()
            .find(|hold| self.acquire_seq(hold) < since)
            .copied()
    }

    /// The latest grant of `key` with `value` given before `seq`.
    fn granted_before(&self, key: &str, value: &str, seq: u64) -> Option<&'a Hold<'h>> {
        self.grants
            .get(&(key, value))?
            .iter()
            .rev()
            .find(|hold| hold.granted.seq < seq)
            .copied()
    }

    /// Whether the holder gave `hold` up before `seq`.
    fn given_up_before(hold: &Hold<'_>, seq: u64) -> bool {
        hold.end.is_some_and(|end| {
            end.event.seq < seq
                && matches!(
                    end.kind,
                    HoldEndKind::Release | HoldEndKind::Abort | HoldEndKind::NextAcquire
                )
        })
    }

    /// Whether the command at `seq` on `master` is the late request of the holder's last
    /// extension or acquisition: one that answered at a quorum while its request to this master
    /// was still on its way (a lock over several masters does not wait for the slowest). It is,
    /// when no other command from the holder's process reached this master since that
    /// operation began.
    fn late_request(&self, hold: &Hold<'h>, master: &str, seq: u64) -> bool {
        let steps = self.history.steps();
        let Some(ops) = self.actors.get(&(hold.process, hold.task)) else {
            return false;
        };
        let Some(last) = ops
            .iter()
            .map(|&i| &self.history.operations()[i])
            .filter(|op| matches!(op.name, OpName::Extend | OpName::Acquire) && steps[op.invoke].event.seq < seq)
            .max_by_key(|op| steps[op.invoke].event.seq)
        else {
            return false;
        };
        let sent_by_holder = |step: &crate::history::Step<'_>| matches!(step.kind, StepKind::Command { client, .. } if client == Some(hold.process));
        if !steps.get(seq as usize).is_some_and(sent_by_holder) {
            return false;
        }
        let from = steps[last.invoke].event.seq as usize;
        !steps[from..seq as usize].iter().any(|step| {
            step.event.node == master
                && matches!(step.kind, StepKind::Command { conn, client, .. } if conn != 0 && client == Some(hold.process))
        })
    }

    /// Whether an extension at `seq`, sent by `hold`'s process with `hold`'s value among its
    /// arguments, onto a key that still holds that value, may be the late request of one of the
    /// holder's own extensions that already ended: one of them sent that value, and no other task
    /// of the process did. A lock over several masters does not wait for the slowest: a renewal
    /// answered at a quorum (or timed out) while its request to one master was still on its way,
    /// and that request lands after the holder's next operations reached the master on another
    /// connection. A late request may touch only its sender's own value; here it does (a
    /// compare-and-extend carrying another grant's value finds the key holding another value and
    /// is judged as that grant's). Another task of the process that sent this value (a shared
    /// lock object) keeps the judgement: its holder did not ask for it.
    fn late_own_extension(&self, hold: &Hold<'h>, value: &str, seq: u64) -> bool {
        let steps = self.history.steps();
        let mut senders = self
            .history
            .operations()
            .iter()
            .filter(|op| op.process == hold.process && op.name == OpName::Extend && steps[op.invoke].event.seq < seq)
            .filter(|op| {
                matches!(self.history.invoked(op), Some(LockOp::Extend(ext))
                    if ext.key == hold.grant.key && ext.value_sent.as_deref().unwrap_or(ext.value.as_str()) == value)
            })
            .peekable();
        senders.peek().is_some() && senders.all(|op| op.task == hold.task)
    }

    /// Whether an acquisition of `hold`'s holder may have set the key to `hold`'s value at
    /// `seq` (rather than its extension): one running then, or one that ended without a certain
    /// answer — or that failed, when the holder reuses its values (two of its grants had the
    /// same one), since only then did a failed attempt send this grant's value. A lock with a
    /// fresh value per attempt sent other values in its failed attempts; counting those too
    /// would excuse every re-creation by a holder that was ever refused once.
    fn may_have_set(&self, hold: &Hold<'h>, seq: u64) -> bool {
        let steps = self.history.steps();
        let Some(ops) = self.actors.get(&(hold.process, hold.task)) else {
            return false;
        };
        let reused = self
            .grants
            .get(&(hold.grant.key.as_str(), hold.grant.value.as_str()))
            .is_some_and(|holds| holds.iter().filter(|h| h.same_holder(hold)).count() > 1);
        ops.iter().any(|&i| {
            let op = &self.history.operations()[i];
            if op.name != OpName::Acquire || steps[op.invoke].event.seq >= seq {
                return false;
            }
            let running = op.completion.is_none_or(|c| steps[c].event.seq > seq);
            running
                || match self.history.outcome(op) {
                    Outcome::Info => true,
                    Outcome::Fail => reused,
                    _ => false,
                }
        })
    }

    /// Whether the holder of `hold` had an operation named one of `names` (on `value`'s grant
    /// when `value` is given and it is an extension) that may have acted at `seq`: invoked
    /// before, and running then or ended without a certain answer (a request that timed out can
    /// still land).
    fn acting(&self, hold: &Hold<'h>, names: &[OpName], seq: u64) -> bool {
        let steps = self.history.steps();
        let Some(ops) = self.actors.get(&(hold.process, hold.task)) else {
            return false;
        };
        ops.iter().any(|&i| {
            let op = &self.history.operations()[i];
            if !names.contains(&op.name) || steps[op.invoke].event.seq >= seq {
                return false;
            }
            let running = op.completion.is_none_or(|c| steps[c].event.seq > seq);
            running || matches!(self.history.outcome(op), Outcome::Info | Outcome::Fail)
        })
    }
}

impl Checker for Ownership {
    fn name(&self) -> CheckerName {
        CheckerName::Ownership
    }

    fn check(&self, history: &OpHistory<'_>) -> CheckResult {
        let index = Index::new(history);
        // (master, by the history's node index; key) -> the position at which the key took its
        // current owners.
        let mut since: BTreeMap<(usize, &str), u64> = BTreeMap::new();
        // (master, key, value): the values each master's key ever held, so far.
        let mut ever: BTreeSet<(usize, &str, &str)> = BTreeSet::new();
        let mut effects_seen = false;
        let mut violations: Vec<Violation<'_, '_>> = Vec::new();
        for (i, step) in history.steps().iter().enumerate() {
            let StepKind::Command {
                conn,
                effects,
                client,
                args,
                ..
            } = &step.kind
            else {
                continue;
            };
            // A command sent by another process than the owner's is never the owner's own doing.
            let foreign = |hold: &Hold<'_>| client.is_some_and(|c| c != hold.process);
            let (event, seq) = (step.event, step.event.seq);
            for effect in effects.iter() {
                effects_seen = true;
                let key = effect.key.as_str();
                let slot = (history.node_of_step(i), key);
                let (before, after) = (idents(effect.before.as_ref()), idents(effect.after.as_ref()));
                let took_since = since.get(&slot).copied().unwrap_or(seq);
                // Whether this master's key held `value` before this command.
                let held_here_before = after.iter().map(|v| ever.contains(&(slot.0, key, *v))).collect::<Vec<_>>();
                ever.extend(after.iter().map(|v| (slot.0, key, *v)));
                if effect.after.is_none() {
                    since.remove(&slot);
                } else if before != after {
                    since.insert(slot, seq);
                }
                // The replication stream mirrors what its master decided (judged there).
                if *conn == 0 {
                    continue;
                }
                // Owners whose value left the key.
                for value in before.iter().filter(|v| !after.contains(v)) {
                    let Some(hold) = index.owner(key, value, took_since) else {
                        continue;
                    };
                    let acquiring = hold.granted.seq > seq && !foreign(hold);
                    if acquiring || Index::given_up_before(hold, seq) {
                        continue;
                    }
                    let wrong = if effect.after.is_none() {
                        Wrong::Deleted
                    } else {
                        Wrong::Overwrote
                    };
                    violations.push(Violation {
                        command: event,
                        wrong,
                        hold,
                    });
                }
                // The same owners, another expiry: an extension.
                let expiry = |s: Option<&KeyState>| s.and_then(|s| s.expire_at_ms);
                if !before.is_empty()
                    && before == after
                    && expiry(effect.before.as_ref()) != expiry(effect.after.as_ref())
                {
                    for value in &before {
                        let Some(hold) = index.owner(key, value, took_since) else {
                            continue;
                        };
                        let own = !foreign(hold)
                            && (hold.granted.seq > seq
                                || index.acting(hold, &[OpName::Extend, OpName::Acquire], seq)
                                || index.late_request(hold, &event.node, seq)
                                || (args.iter().any(|a| a == value) && index.late_own_extension(hold, value, seq)));
                        if own || Index::given_up_before(hold, seq) {
                            continue;
                        }
                        violations.push(Violation {
                            command: event,
                            wrong: Wrong::Extended,
                            hold,
                        });
                    }
                }
                // A key created with a grant's value, by its holder extending, not acquiring.
                // Not when the key never held the grant on this master and the command is the
                // holder's late request (its acquisition's, answered at a quorum without this
                // master) while it still holds: it puts the holder's own value on a free key and
                // takes nothing from anyone — nothing was lost here that it could re-create.
                if before.is_empty() {
                    for (value, held_here) in after.iter().zip(held_here_before) {
                        let Some(hold) = index.granted_before(key, value, seq) else {
                            continue;
                        };
                        if foreign(hold) || index.may_have_set(hold, seq) || !index.acting(hold, &[OpName::Extend], seq)
                        {
                            continue;
                        }
                        if !held_here
                            && !Index::given_up_before(hold, seq)
                            && index.late_request(hold, &event.node, seq)
                        {
                            continue;
                        }
                        violations.push(Violation {
                            command: event,
                            wrong: Wrong::Recreated,
                            hold,
                        });
                    }
                }
            }
        }
        let Some(first) = violations.first() else {
            let granted = !history.holds().is_empty();
            let (verdict, explanation) = if effects_seen {
                (
                    Verdict::Valid,
                    "every key change on the masters was its own grant's (or an expiry)".to_string(),
                )
            } else if granted {
                (
                    Verdict::Unknown,
                    "the masters' log records no key effects: ownership cannot be judged".to_string(),
                )
            } else {
                (Verdict::Valid, "no master changed any key".to_string())
            };
            return CheckResult::new(CheckerName::Ownership, verdict, explanation, Vec::new());
        };
        let command = match history.step(first.command.seq).map(|s| &s.kind) {
            Some(StepKind::Command { args, .. }) => args.join(" "),
            _ => String::new(),
        };
        let command: String = if command.chars().count() > 80 {
            format!("{}…", command.chars().take(80).collect::<String>())
        } else {
            command
        };
        let hold = first.hold;
        let state = if first.wrong == Wrong::Recreated {
            "after it was gone"
        } else {
            "which its holder had not given up"
        };
        let granted = if hold.granted.seq > first.command.seq {
            "its acquire answered at"
        } else {
            "granted at"
        };
        let sender = match history.step(first.command.seq).map(|s| &s.kind) {
            Some(StepKind::Command { client: Some(c), .. }) => format!(" (sent by {c})"),
            _ => String::new(),
        };
        let explanation = format!(
            "at {} {} {} the key `{}` of {}'s grant {} ({granted} {}) {state}: `{command}`{sender} — a lock may \
             change only its own grant's key ({})",
            seconds(first.command.at_us),
            first.command.node,
            first.wrong.verb(),
            hold.grant.key,
            hold.holder(),
            grant_text(&hold.grant.value),
            seconds(hold.granted.at_us),
            count(violations.len(), "violation", "violations"),
        );
        let mut events = vec![first.command, hold.granted];
        if let Some(end) = hold.end {
            events.push(end.event);
        }
        CheckResult::new(CheckerName::Ownership, Verdict::Invalid, explanation, witness(&events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;

    const K: &str = "lock";
    const TTL: i64 = 1_700_000_010_000;

    fn judge(b: Builder) -> CheckResult {
        let history = b.build();
        Ownership.check(&OpHistory::new(&history))
    }

    #[test]
    fn a_token_checked_release_of_the_own_key_is_valid() {
        let mut b = Builder::new();
        let id = b.acquire_started(500, "client-1", K);
        b.command(
            1_000,
            "redis-1",
            &["SET", K, "v1", "NX", "PX", "10000"],
            &[(K, None, Some(("v1", TTL)))],
        );
        b.granted(2_000, "client-1", id, K, "v1");
        b.release(3_000, 4_000, "client-1", K, "v1", None);
        b.command(
            4_500,
            "redis-1",
            &["EVAL", "…", "1", K, "v1"],
            &[(K, Some(("v1", TTL)), None)],
        );
        let r = judge(b);
        assert_eq!(r.verdict, Verdict::Valid, "{}", r.explanation);
    }

    #[test]
    fn a_plain_del_after_the_lease_ran_out_deletes_the_next_holders_key() {
        let mut b = Builder::new();
        let id = b.acquire_started(500, "client-1", K);
        b.command(
            1_000,
            "redis-1",
            &["SET", K, "v1", "NX"],
            &[(K, None, Some(("v1", TTL)))],
        );
        b.granted(2_000, "client-1", id, K, "v1");
        // client-1's key expired (no command); client-2 takes the lock.
        let id2 = b.acquire_started(10_999_000, "client-2", K);
        b.command(
            11_000_000,
            "redis-1",
            &["SET", K, "v2", "NX"],
            &[(K, None, Some(("v2", TTL + 11_000)))],
        );
        let granted = b.granted(11_001_000, "client-2", id2, K, "v2");
        b.release(12_000_000, 12_002_000, "client-1", K, "v1", None);
        let del = b.command(
            12_003_000,
            "redis-1",
            &["DEL", K],
            &[(K, Some(("v2", TTL + 11_000)), None)],
        );
        let r = judge(b);
        assert_eq!(r.verdict, Verdict::Invalid);
        assert!(
            r.explanation.contains("deleted") && r.explanation.contains("client-2"),
            "{}",
            r.explanation
        );
        assert!(seqs(&r).contains(&del) && seqs(&r).contains(&granted), "{:?}", seqs(&r));
    }

    #[test]
    fn a_late_release_with_a_reused_value_deletes_the_same_clients_next_grant() {
        let mut b = Builder::new();
        let id = b.acquire_started(500, "client-1", K);
        b.command(
            1_000,
            "redis-1",
            &["SET", K, "c1", "NX"],
            &[(K, None, Some(("c1", TTL)))],
        );
        b.granted(2_000, "client-1", id, K, "c1");
        // The retried release deletes the key: its own grant, given up — fine.
        b.release(3_000_000, 3_100_000, "client-1", K, "c1", None);
        b.command(
            3_150_000,
            "redis-1",
            &["EVAL", "…", "1", K, "c1"],
            &[(K, Some(("c1", TTL)), None)],
        );
        let id = b.acquire_started(3_160_000, "client-1", K);
        b.command(
            3_200_000,
            "redis-1",
            &["SET", K, "c1", "NX"],
            &[(K, None, Some(("c1", TTL + 3_200)))],
        );
        b.granted(3_250_000, "client-1", id, K, "c1");
        // The first, slow release lands now and deletes the new grant's key.
        b.command(
            5_000_000,
            "redis-1",
            &["EVAL", "…", "1", K, "c1"],
            &[(K, Some(("c1", TTL + 3_200)), None)],
        );
        let r = judge(b);
        assert_eq!(r.verdict, Verdict::Invalid, "{}", r.explanation);
        assert!(
            r.explanation.contains("deleted") && r.explanation.contains("3.250 s"),
            "{}",
            r.explanation
        );
    }

    #[test]
    fn an_extension_the_owner_did_not_ask_for_is_another_clients() {
        let extended = |owner_extends: bool| {
            let mut b = Builder::new();
            let id = b.acquire_started(500, "client-2", K);
            b.command(
                1_000,
                "redis-1",
                &["SET", K, "v2", "NX"],
                &[(K, None, Some(("v2", TTL)))],
            );
            b.granted(2_000, "client-2", id, K, "v2");
            if owner_extends {
                b.extend(2_900_000, None, "client-2", K, "v2");
            }
            b.command(
                3_000_000,
                "redis-1",
                &["PEXPIRE", K, "10000"],
                &[(K, Some(("v2", TTL)), Some(("v2", TTL + 3_000)))],
            );
            judge(b)
        };
        let foreign = extended(false);
        assert_eq!(foreign.verdict, Verdict::Invalid);
        assert!(foreign.explanation.contains("extended"), "{}", foreign.explanation);
        assert_eq!(extended(true).verdict, Verdict::Valid);
    }

    #[test]
    fn an_extension_that_recreates_a_lost_key_is_a_violation_and_a_new_acquire_is_not() {
        let recreate = |acquiring: bool, refused_before: bool| {
            let mut b = Builder::new();
            if refused_before {
                // Under contention every client has been refused before; a refused attempt of a
                // lock with a fresh value per attempt never sent this grant's value.
                let refused = b.acquire_started(100, "client-1", K);
                let busy = serde_json::json!({ "error": "lock is busy" });
                b.op(300, "client-1", refused, lockstep_sim::Phase::Fail, "acquire", busy);
            }
            let id = b.acquire_started(500, "client-1", K);
            b.command(
                1_000,
                "redis-1",
                &["SET", K, "v1", "NX"],
                &[(K, None, Some(("v1", TTL)))],
            );
            b.granted(2_000, "client-1", id, K, "v1");
            // The key is gone (expired); client-1 renews with "set if absent or mine".
            b.extend(5_600_000, None, "client-1", K, "v1");
            if acquiring {
                b.acquire_invoke(5_600_500, "client-1", K);
            }
            b.command(
                5_650_000,
                "redis-1",
                &["EVAL", "…", "1", K, "v1"],
                &[(K, None, Some(("v1", TTL + 5_650)))],
            );
            judge(b)
        };
        for refused_before in [false, true] {
            let r = recreate(false, refused_before);
            assert_eq!(r.verdict, Verdict::Invalid, "{}", r.explanation);
            assert!(r.explanation.contains("re-created"), "{}", r.explanation);
            assert_eq!(recreate(true, refused_before).verdict, Verdict::Valid);
        }
    }

    #[test]
    fn a_late_request_of_the_holders_own_extension_is_its_own() {
        // An extension answered at a quorum while its request to the slow master was still on
        // its way: it lands after the extension ended — still the holder's own.
        let judge_late = |late_is_own: bool| {
            let mut b = Builder::new();
            let id = b.acquire_started(500, "client-1", K);
            for master in ["redis-1", "redis-2"] {
                b.command_from(
                    1_000,
                    master,
                    Some("client-1"),
                    &["SET", K, "v1", "NX"],
                    &[(K, None, Some(("v1", TTL)))],
                );
            }
            b.granted(2_000, "client-1", id, K, "v1");
            let ext = b.id();
            let asked = serde_json::json!({ "key": K, "value": "v1", "fencing_token": null, "ttl_ms": 10_000 });
            b.op(5_000_000, "client-1", ext, lockstep_sim::Phase::Invoke, "extend", asked);
            b.command_from(
                5_005_000,
                "redis-1",
                Some("client-1"),
                &["EVAL", "…", "1", K, "v1"],
                &[(K, Some(("v1", TTL)), Some(("v1", TTL + 5_005)))],
            );
            let held = serde_json::json!({ "key": K, "value": "v1", "fencing_token": null, "validity_ms": 9_990 });
            b.op(5_010_000, "client-1", ext, lockstep_sim::Phase::Ok, "extend", held);
            if !late_is_own {
                // Something else of client-1's reached redis-2 since, and the late command does
                // not carry the grant's value: not the extension's request.
                b.command_from(5_020_000, "redis-2", Some("client-1"), &["GET", K], &[]);
            }
            let late: &[&str] = if late_is_own {
                &["EVAL", "…", "1", K, "v1"]
            } else {
                &["PEXPIRE", K, "10000"]
            };
            b.command_from(
                5_050_000,
                "redis-2",
                Some("client-1"),
                late,
                &[(K, Some(("v1", TTL)), Some(("v1", TTL + 5_050)))],
            );
            judge(b)
        };
        let late = judge_late(true);
        assert_eq!(late.verdict, Verdict::Valid, "{}", late.explanation);
        assert_eq!(judge_late(false).verdict, Verdict::Invalid);
    }

    /// Issue 42 item 3: a 3-master lock renewing by compare-and-PEXPIRE; the renewal's request to
    /// redis-3 is slow, the renewal answers by quorum, the next renewal reaches redis-3 on a new
    /// connection, and only then does the slow request land — on client-1's own key. `carry`:
    /// the late command carries the grant's value; `key_value`: what the key holds then;
    /// `task`: the task of client-1 whose extension sent `v1` (the holder is task 1).
    fn late_renewal(carry: bool, key_value: &str, task: u32) -> CheckResult {
        let mut b = Builder::new();
        let masters = ["redis-1", "redis-2", "redis-3"];
        let tasked = |mut data: serde_json::Value| {
            data["task"] = serde_json::json!(1);
            data
        };
        let id = b.id();
        b.op(
            500,
            "client-1",
            id,
            lockstep_sim::Phase::Invoke,
            "acquire",
            tasked(serde_json::json!({ "key": K, "ttl_ms": 10_000 })),
        );
        for master in masters {
            b.command_from(
                1_000,
                master,
                Some("client-1"),
                &["SET", K, "v1", "NX"],
                &[(K, None, Some(("v1", TTL)))],
            );
        }
        let held = serde_json::json!({ "key": K, "value": "v1", "fencing_token": null, "validity_ms": 9_990 });
        b.op(2_000, "client-1", id, lockstep_sim::Phase::Ok, "acquire", held.clone());
        let renew = |b: &mut Builder, at_us: u64, task: u32, to: &[&str]| {
            let ext = b.id();
            let mut asked = serde_json::json!({ "key": K, "value": "v1", "fencing_token": null, "ttl_ms": 10_000 });
            asked["task"] = serde_json::json!(task);
            b.op(at_us, "client-1", ext, lockstep_sim::Phase::Invoke, "extend", asked);
            for master in to {
                b.command_from(
                    at_us + 2_000,
                    master,
                    Some("client-1"),
                    &["EVAL", "…", "1", K, "v1", "10000"],
                    &[(K, Some(("v1", TTL)), Some(("v1", TTL + at_us as i64 / 1_000)))],
                );
            }
            b.op(
                at_us + 200_000,
                "client-1",
                ext,
                lockstep_sim::Phase::Ok,
                "extend",
                held.clone(),
            );
        };
        // The first renewal's request to redis-3 is on its way; redis-1 and redis-2 answer.
        renew(&mut b, 3_000_000, task, &["redis-1", "redis-2"]);
        // The next one reaches all three (redis-3 on a new connection).
        renew(&mut b, 4_200_000, 1, &masters);
        let late: &[&str] = if carry {
            &["EVAL", "…", "1", K, "v1", "10000"]
        } else {
            &["PEXPIRE", K, "10000"]
        };
        b.command_from(
            4_500_000,
            "redis-3",
            Some("client-1"),
            late,
            &[(K, Some((key_value, TTL + 4_202)), Some((key_value, TTL + 4_500)))],
        );
        judge(b)
    }

    #[test]
    fn a_late_renewal_request_after_the_next_renewal_extends_the_holders_own_key() {
        let late = late_renewal(true, "v1", 1);
        assert_eq!(late.verdict, Verdict::Valid, "{}", late.explanation);
    }

    #[test]
    fn a_late_extension_without_the_grants_value_or_from_another_task_is_still_judged() {
        // A plain PEXPIRE carries no value: nothing ties it to the ended renewal.
        let plain = late_renewal(false, "v1", 1);
        assert_eq!(plain.verdict, Verdict::Invalid, "{}", plain.explanation);
        assert!(plain.explanation.contains("extended"), "{}", plain.explanation);
        // Task 2 of client-1 sent task 1's value (a shared lock object): not task 1's request.
        let shared = late_renewal(true, "v1", 2);
        assert_eq!(shared.verdict, Verdict::Invalid, "{}", shared.explanation);
    }

    #[test]
    fn a_failed_acquisition_cleaning_up_is_not_judged() {
        let mut b = Builder::new();
        b.acquire_invoke(500, "client-1", K);
        b.command(
            1_000,
            "redis-1",
            &["SET", K, "v1", "NX"],
            &[(K, None, Some(("v1", TTL)))],
        );
        b.command(
            2_000,
            "redis-1",
            &["EVAL", "…", "1", K, "v1"],
            &[(K, Some(("v1", TTL)), None)],
        );
        assert_eq!(judge(b).verdict, Verdict::Valid);
    }

    #[test]
    fn grants_without_recorded_effects_cannot_be_judged() {
        let mut b = Builder::new();
        b.acquire(500, 2_000, "client-1", K, "v1", None);
        assert_eq!(judge(b).verdict, Verdict::Unknown);
    }
}
