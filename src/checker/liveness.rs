//! `liveness`: nobody is locked out past the lease — a lock key whose holder is gone expires
//! within the lease it was given, and the lock never sits free for long while someone waits
//! without a fault to explain it.
//!
//! A lease lock's liveness promise is the lease itself: whatever happens to a holder (it
//! crashes, stalls for good, gives up, releases), its key is gone from every master once the
//! last lease it asked for has run out, so a waiting client gets the lock. The `progress`
//! verdict of a run only asks whether anybody ever got the lock; this checker asks whether the
//! others were locked out longer than the lock's own promise allows. Two rules, either makes the
//! verdict invalid:
//!
//! 1. **A key outlives every lease it could belong to, while another client waits.** For each
//!    life of a lock key on a master (from the command that put a value on it to what took that
//!    value off, read from the commands' key effects, [`lockstep_sim::KeyEffect`]), its *setter*
//!    is the process that sent that command. The setter *owns* the key while the acquisition
//!    that set it runs, while the grant it led to is held, and while any later grant of the
//!    setter with the key's value is held (a lock that takes its own key again); a crash of the
//!    setter (a live run's client crash) or a pause of it that lasts past the end of the history
//!    (nothing it does is seen again: a crash as far as this history shows) cuts ownership
//!    there. Once it owns it no more, the setter is *gone*: it crashed, it released, it aborted,
//!    or its acquisition ended without a grant. The key's *allowed expiry* is the latest expiry
//!    (on the master's own clock) that a command gave it while the setter owned it — or, sent by
//!    the setter, that a request in flight when it stopped owning could give it: a renewal or
//!    acquisition invoked before then and still running, or one that ended without a certain
//!    answer (a timed-out request may land late). A key that never had a TTL is allowed the TTL
//!    its acquisition asked for, from the command that set it. The key is *past its lease* at a
//!    command or expiry on its master whose clock reads more than the allowed expiry plus
//!    [`SLACK_MS`] while the key still holds the value and does not expire before that reading
//!    (no TTL at all, or one someone gave it after the setter was gone: a renewal by nobody
//!    alive). Invalid when that happens while a client of another process waits for the lock
//!    (is in an acquire episode, below). Judged on the master's own clock, so a clock that
//!    drifts or steps changes nothing: the master expires keys by that clock.
//! 2. **Unavailability beyond [`UNAVAILABLE_TTLS`] × TTL without a fault in effect.** A stretch
//!    of unavailability — after the first grant, nobody holds the lock (holds as the history
//!    reads them: from the acquire `ok` to the release, abort or next acquire, cut by a crash)
//!    while some client is in an acquire episode — longer than [`UNAVAILABLE_TTLS`] times the
//!    largest TTL any acquisition asked for, during which no fault is in effect. A fault is *in
//!    effect* from the event that applies it until: a pause's end (its duration); the matching
//!    `heal` of a partition or `release` of a hold (the end of the history when none comes); the
//!    end of the history for a crash, power loss, shutdown, drift, latency or loss (a server
//!    down or a link or clock changed keeps its consequences); its own instant for a clock jump,
//!    restart, failover, drop-reply, heal or release. A stretch is excused when a fault is in
//!    effect at any point from one TTL before it starts to its end (what a fault does to a lease
//!    lasts up to a TTL after it).
//!
//! An *acquire episode* of a client (one task of it) starts at an `acquire` invoke and ends at
//! the `ok` of an acquire; when the client never gets the lock and stops trying, at the
//! completion of its last attempt (a client that gave up waits for nothing).
//!
//! Valid when neither rule fires, some grant was given and two processes acquired (someone could
//! wait for someone else); unknown when the masters' log records no key effects, no acquisition
//! said its TTL, or no two processes ever wanted the lock.
//!
//! Left out: the replication stream (a replica's copy locks nobody out until it is promoted, and
//! then it is a master whose life started without a command: not judged), a key restored from
//! persistence after a restart (its setter is not known: not judged), and keys other than the
//! lock keys the acquisitions named (fencing counters, wait lists).
//!
//! [`SLACK_MS`]: crate::checker::liveness::SLACK_MS
//! [`UNAVAILABLE_TTLS`]: crate::checker::liveness::UNAVAILABLE_TTLS

use super::{count, seconds, witness, CheckResult, Checker, CheckerName};
use crate::model::Verdict;
use crate::history::{LockOp, OpHistory, OpName, Outcome, StepKind};
use lockstep_sim::{Event, Fault, KeyState};
use std::collections::{BTreeMap, BTreeSet};

/// How many TTLs of unavailability, without a fault in effect, rule 2 tolerates.
pub const UNAVAILABLE_TTLS: u64 = 3;

/// Slack on the master's clock before a key counts as past its lease, ms: the server's
/// millisecond resolution and the rounding between a `PX` and the expiry it stores (the 2 ms the
/// lease-validity checker allows).
pub const SLACK_MS: i64 = 2;

/// Checks that nobody is locked out past the lease; see the [module](self) docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Liveness;

/// One sequential actor: a process and, when its client runs several, the task.
type Actor<'h> = (&'h str, Option<u32>);

/// The identity a key state carries: a string's value, or a hash's first field.
fn ident(state: &KeyState) -> Option<&str> {
    state.value.as_deref().or_else(|| state.fields.first().map(String::as_str))
}

/// Whether a key holding `ident` holds the grant `value` (itself, or a hash lock's field
/// `{value}:…`).
fn carries(ident: &str, value: &str) -> bool {
    ident == value || ident.strip_prefix(value).is_some_and(|rest| rest.starts_with(':'))
}

/// A span of positions `[from, to)` in which a setter owned a key, and the event that ended it.
#[derive(Debug, Clone, Copy)]
struct Owned<'h> {
    from: u64,
    to: u64,
    end: Option<(&'h Event, &'static str)>,
}

/// One life of a lock key on one master.
struct Life<'h> {
    ident: &'h str,
    /// The process that set it (`None`: not known, not judged).
    setter: Option<&'h str>,
    set: &'h Event,
    /// Its current expiry on the master's clock (`None`: no TTL).
    expire_ms: Option<i64>,
    /// The latest expiry a command gave it while its setter owned it, and that command.
    allowed: Option<(i64, &'h Event)>,
    /// The TTL the setter's acquisition asked for.
    ttl_ms: Option<u64>,
    owned: Vec<Owned<'h>>,
    /// Already found past its lease: the first proof, and the largest excess seen, ms.
    past: Option<Past<'h>>,
}

/// The proof that a life outlived its lease.
struct Past<'h> {
    /// The command that set the key (the proof when it never had a TTL).
    set: &'h Event,
    master: &'h str,
    key: &'h str,
    setter: &'h str,
    at: &'h Event,
    gone: Option<(&'h Event, &'static str)>,
    waiter: &'h Event,
    waiter_process: &'h str,
    lease: Option<&'h Event>,
    excess_ms: i64,
}

/// The history, indexed for liveness questions.
struct Index<'a, 'h> {
    history: &'a OpHistory<'h>,
    /// The lock keys the acquisitions and grants named.
    keys: BTreeSet<&'a str>,
    /// Per process: positions (and events) after which it never acts again.
    deaths: BTreeMap<&'h str, Vec<(&'h Event, &'static str)>>,
    /// Per actor: its acquire episodes, `(start invoke, end position)`.
    episodes: Vec<(Actor<'h>, &'h Event, u64)>,
}

impl<'a, 'h> Index<'a, 'h> {
    fn new(history: &'a OpHistory<'h>) -> Self {
        let steps = history.steps();
        let end_us = history.end_us();
        let mut keys = BTreeSet::new();
        for op in history.operations() {
            if let Some(LockOp::Acquire(inv)) = history.invoked(op) {
                keys.insert(inv.key.as_str());
            }
        }
        keys.extend(history.holds().iter().map(|h| h.grant.key.as_str()));
        let mut deaths: BTreeMap<&str, Vec<(&Event, &str)>> = BTreeMap::new();
        for step in steps {
            if let StepKind::Fault(fault) = step.kind {
                match fault {
                    Fault::Crash { node } => deaths.entry(node.as_str()).or_default().push((step.event, "crashed")),
                    Fault::Pause { node, duration_ms }
                        if step.event.at_us.saturating_add(duration_ms.saturating_mul(1_000)) > end_us =>
                    {
                        deaths
                            .entry(node.as_str())
                            .or_default()
                            .push((step.event, "was paused past the end of the history"))
                    }
                    _ => {}
                }
            }
        }
        let mut by_actor: BTreeMap<Actor<'h>, Vec<usize>> = BTreeMap::new();
        for (i, op) in history.operations().iter().enumerate() {
            if op.name == OpName::Acquire {
                by_actor.entry((op.process, op.task)).or_default().push(i);
            }
        }
        let mut episodes: Vec<(Actor<'h>, &'h Event, u64)> = Vec::new();
        for (actor, ops) in by_actor {
            let mut start: Option<&Event> = None;
            let mut last_end = u64::MAX;
            for &i in &ops {
                let op = &history.operations()[i];
                start.get_or_insert(steps[op.invoke].event);
                last_end = op.completion.map_or(u64::MAX, |c| steps[c].event.seq);
                if history.outcome(op) == Outcome::Ok {
                    if let Some(s) = start.take() {
                        episodes.push((actor, s, last_end));
                    }
                }
            }
            if let Some(s) = start {
                episodes.push((actor, s, last_end));
            }
        }
        // A client that crashed or stopped for good waits for nothing more.
        for ((process, _), start, end) in episodes.iter_mut() {
            if let Some((death, _)) = deaths
                .get(process)
                .and_then(|d| d.iter().find(|(e, _)| e.seq > start.seq && e.seq < *end))
            {
                *end = death.seq;
            }
        }
        Index {
            history,
            keys,
            deaths,
            episodes,
        }
    }

    /// The first death of `process` in `(from, to)`.
    fn death_in(&self, process: &str, from: u64, to: u64) -> Option<(&'h Event, &'static str)> {
        self.deaths
            .get(process)?
            .iter()
            .find(|(e, _)| e.seq > from && e.seq < to)
            .copied()
    }

    /// The key an acquire operation asked for, and its TTL.
    fn acquire_of(&self, i: usize) -> Option<(&'a str, u64)> {
        match self.history.invoked(&self.history.operations()[i]) {
            Some(LockOp::Acquire(inv)) => Some((inv.key.as_str(), inv.ttl_ms)),
            _ => None,
        }
    }

    /// When `setter` owned the life of `key` holding `ident` set at `set`, and the TTL its
    /// acquisition asked for; see the [module](self) docs.
    fn ownership(&self, setter: &'h str, key: &str, ident: &str, set: u64) -> (Vec<Owned<'h>>, Option<u64>) {
        let steps = self.history.steps();
        let ops = self.history.operations();
        let mut owned = Vec::new();
        let mut ttl_ms = None;
        let mut cut = |from: u64, to: u64, end: Option<(&'h Event, &'static str)>| {
            let (to, end) = match self.death_in(setter, from, to) {
                Some(death) => (death.0.seq, Some(death)),
                None => (to, end),
            };
            owned.push(Owned { from, to, end });
        };
        for (i, op) in ops.iter().enumerate() {
            if op.process != setter || op.name != OpName::Acquire {
                continue;
            }
            let Some((op_key, ttl)) = self.acquire_of(i) else {
                continue;
            };
            let invoke = steps[op.invoke].event;
            if op_key != key {
                continue;
            }
            let completion = op.completion.map(|c| steps[c].event);
            // The acquisition running when the key took its value set it.
            let took_it = invoke.seq < set && completion.is_none_or(|c| c.seq > set);
            if took_it || (invoke.seq < set && ttl_ms.is_none()) {
                ttl_ms = Some(ttl);
            }
            let hold = self.history.holds().iter().find(|h| h.acquire == Some(i));
            match (hold, took_it) {
                // The acquisition that set the key, and the grant it led to, if any.
                (Some(hold), true) => {
                    let end = hold.end.map(|e| (e.event, end_kind(e.kind)));
                    cut(invoke.seq, hold.end_seq(), end);
                }
                (None, true) => {
                    let to = completion.map_or(u64::MAX, |c| c.seq);
                    cut(invoke.seq, to, completion.map(|c| (c, "its acquisition ended without a grant")));
                }
                // A later grant of the setter with the key's value: it took its own key again
                // (a reentrant lock), from the acquisition's invoke — its commands are its own.
                (Some(hold), false) if carries(ident, &hold.grant.value) => {
                    let end = hold.end.map(|e| (e.event, end_kind(e.kind)));
                    cut(invoke.seq, hold.end_seq(), end);
                }
                _ => {}
            }
        }
        // A grant with the key's value taken before the key was set (an extension re-created it).
        for hold in self.history.holds() {
            if hold.process == setter
                && hold.grant.key == key
                && carries(ident, &hold.grant.value)
                && hold.granted.seq < set
                && hold.end_seq() > set
                && !owned.iter().any(|o| o.from <= set && set < o.to)
            {
                let end = hold.end.map(|e| (e.event, end_kind(e.kind)));
                let (to, end) = match self.death_in(setter, hold.granted.seq, hold.end_seq()) {
                    Some(death) => (death.0.seq, Some(death)),
                    None => (hold.end_seq(), end),
                };
                owned.push(Owned {
                    from: hold.granted.seq,
                    to,
                    end,
                });
            }
        }
        (owned, ttl_ms)
    }

    /// Whether a command of `setter` at `seq`, after it stopped owning the key at `gone`, may be
    /// a request it sent before: an acquisition or extension invoked before `gone` and still
    /// running then, or one that ended without a certain answer.
    fn in_flight(&self, setter: &str, gone: u64, seq: u64) -> bool {
        let steps = self.history.steps();
        self.history.operations().iter().any(|op| {
            op.process == setter
                && matches!(op.name, OpName::Acquire | OpName::Extend)
                && steps[op.invoke].event.seq < gone
                && steps[op.invoke].event.seq < seq
                && (op.completion.is_none_or(|c| steps[c].event.seq > gone)
                    || matches!(self.history.outcome(op), Outcome::Info | Outcome::Fail))
        })
    }

    /// A client of another process than `process` in an acquire episode at `seq`: its invoke.
    fn waiter(&self, process: &str, seq: u64) -> Option<(&'h str, &'h Event)> {
        self.episodes
            .iter()
            .find(|((p, _), start, end)| *p != process && start.seq < seq && seq < *end)
            .map(|((p, _), start, _)| (*p, *start))
    }
}

/// What ended a grant's hold, in words.
fn end_kind(kind: crate::history::HoldEndKind) -> &'static str {
    match kind {
        crate::history::HoldEndKind::Release => "released",
        crate::history::HoldEndKind::Abort => "aborted",
        crate::history::HoldEndKind::NextAcquire => "acquired again",
    }
}

impl<'h> Life<'h> {
    /// Whether the setter owns the key at `seq`, and else when it stopped (the latest end).
    fn gone_at(&self, seq: u64) -> Option<(u64, Option<(&'h Event, &'static str)>)> {
        if self.owned.iter().any(|o| o.from < seq && seq < o.to) {
            return None;
        }
        self.owned
            .iter()
            .filter(|o| o.to <= seq)
            .max_by_key(|o| o.to)
            .map(|o| (o.to, o.end))
    }
}

/// Rule 1 over the whole history: every life past its lease while another process waited.
fn lockouts<'h>(index: &Index<'h, 'h>) -> (Vec<Past<'h>>, bool) {
    let history = index.history;
    let mut lives: BTreeMap<(&'h str, &'h str), Life<'h>> = BTreeMap::new();
    let mut found = Vec::new();
    let mut effects_seen = false;
    let finish = |life: Life<'h>, found: &mut Vec<Past<'h>>| found.extend(life.past);
    for step in history.steps() {
        let event = step.event;
        let node = event.node.as_str();
        match &step.kind {
            StepKind::Command {
                conn, effects, client, ..
            } if *conn != 0 => {
                for effect in effects.iter() {
                    effects_seen = true;
                    let Some(key) = index.keys.get(effect.key.as_str()).copied() else {
                        continue;
                    };
                    let slot = (node, key);
                    let Some(after) = effect.after.as_ref().and_then(|s| ident(s).map(|i| (s, i))) else {
                        if let Some(life) = lives.remove(&slot) {
                            finish(life, &mut found);
                        }
                        continue;
                    };
                    let (state, after_ident) = after;
                    let same = lives.get(&slot).is_some_and(|l| l.ident == after_ident);
                    if !same {
                        if let Some(life) = lives.remove(&slot) {
                            finish(life, &mut found);
                        }
                        // A value already there that this reader never saw set (restored after
                        // a restart): its setter is not known.
                        let restored = effect.before.as_ref().and_then(ident) == Some(after_ident);
                        let setter = if restored { None } else { *client };
                        let (owned, ttl_ms) = match setter {
                            Some(p) => index.ownership(p, key, after_ident, event.seq),
                            None => (Vec::new(), None),
                        };
                        lives.insert(
                            slot,
                            Life {
                                ident: after_ident,
                                setter,
                                set: event,
                                expire_ms: None,
                                allowed: None,
                                ttl_ms,
                                owned,
                                past: None,
                            },
                        );
                    }
                    let Some(life) = lives.get_mut(&slot) else { continue };
                    life.expire_ms = state.expire_at_ms;
                    let Some(setter) = life.setter else { continue };
                    let counted = match life.gone_at(event.seq) {
                        None => !life.owned.is_empty(),
                        Some((gone, _)) => *client == Some(setter) && index.in_flight(setter, gone, event.seq),
                    };
                    if let (true, Some(expire)) = (counted, state.expire_at_ms) {
                        if life.allowed.is_none_or(|(a, _)| expire > a) {
                            life.allowed = Some((expire, event));
                        }
                    }
                }
            }
            StepKind::Expired(expiry) => {
                if let Some(life) = lives.remove(&(node, expiry.key)) {
                    finish(life, &mut found);
                }
            }
            StepKind::Fault(
                Fault::Crash { node: n }
                | Fault::PowerLoss { node: n }
                | Fault::Shutdown { node: n }
                | Fault::Restart { node: n }
                | Fault::Failover { node: n },
            ) => {
                let gone: Vec<_> = lives.keys().filter(|(m, _)| *m == n.as_str()).copied().collect();
                for slot in gone {
                    if let Some(life) = lives.remove(&slot) {
                        finish(life, &mut found);
                    }
                }
                continue;
            }
            _ => continue,
        }
        // The master's clock at this command or expiry: is any of its keys past its lease?
        for (&(master, key), life) in lives.iter_mut() {
            if master != node {
                continue;
            }
            let Some(setter) = life.setter else { continue };
            let Some((_, gone)) = life.gone_at(event.seq) else {
                continue;
            };
            let (allowed_ms, lease) = match (life.allowed, life.ttl_ms) {
                (Some((ms, e)), _) => (ms, Some(e)),
                (None, Some(ttl)) => (life.set.wall_ms.saturating_add_unsigned(ttl), None),
                (None, None) => continue,
            };
            let now_ms = event.wall_ms;
            if now_ms <= allowed_ms.saturating_add(SLACK_MS) || life.expire_ms.is_some_and(|e| e <= now_ms) {
                continue;
            }
            let Some((waiter_process, waiter)) = index.waiter(setter, event.seq) else {
                continue;
            };
            let excess_ms = now_ms - allowed_ms;
            match life.past.as_mut() {
                Some(past) => past.excess_ms = past.excess_ms.max(excess_ms),
                None => {
                    life.past = Some(Past {
                        set: life.set,
                        master,
                        key,
                        setter,
                        at: event,
                        gone,
                        waiter,
                        waiter_process,
                        lease,
                        excess_ms,
                    })
                }
            }
        }
    }
    for (_, life) in std::mem::take(&mut lives) {
        finish(life, &mut found);
    }
    found.sort_by_key(|p| p.at.seq);
    (found, effects_seen)
}

/// A fault's span of effect, true µs; see the [module](self) docs.
fn fault_spans<'h>(history: &OpHistory<'h>) -> Vec<(u64, u64, &'h Event)> {
    let end_us = history.end_us();
    let steps = history.steps();
    let pair = |a: &str, b: &str, c: &str, d: &str| (a == c && b == d) || (a == d && b == c);
    let mut spans = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let StepKind::Fault(fault) = step.kind else { continue };
        let at_us = step.event.at_us;
        let until = |ends: &dyn Fn(&Fault) -> bool| {
            steps[i + 1..]
                .iter()
                .find_map(|s| match s.kind {
                    StepKind::Fault(f) if ends(f) => Some(s.event.at_us),
                    _ => None,
                })
                .unwrap_or(end_us)
        };
        let to_us = match fault {
            Fault::Pause { duration_ms, .. } => at_us.saturating_add(duration_ms.saturating_mul(1_000)),
            Fault::Partition { a, b, .. } => {
                until(&|f| matches!(f, Fault::Heal { a: c, b: d, .. } if pair(a, b, c, d)))
            }
            Fault::Hold { a, b } => until(&|f| matches!(f, Fault::Release { a: c, b: d } if pair(a, b, c, d))),
            Fault::Crash { .. }
            | Fault::PowerLoss { .. }
            | Fault::Shutdown { .. }
            | Fault::Drift { .. }
            | Fault::Latency { .. }
            | Fault::Loss { .. } => end_us,
            Fault::ClockJump { .. }
            | Fault::Restart { .. }
            | Fault::Failover { .. }
            | Fault::DropReply { .. }
            | Fault::Heal { .. }
            | Fault::Release { .. } => at_us,
        };
        spans.push((at_us, to_us, step.event));
    }
    spans
}

/// A stretch of unavailability: its bounds and a waiter's acquire invoke.
struct Stretch<'h> {
    from: &'h Event,
    to_us: u64,
    to: Option<&'h Event>,
    waiter: &'h Event,
}

/// Rule 2: stretches of unavailability after the first grant, in order.
fn unavailable<'h>(history: &OpHistory<'h>, index: &Index<'_, 'h>) -> Vec<Stretch<'h>> {
    let steps = history.steps();
    let Some(first_grant) = history.holds().iter().map(|h| h.granted.seq).min() else {
        return Vec::new();
    };
    // (position, +1/-1 holders, +1/-1 waiters, the event there, a waiter's invoke).
    type Point<'e> = (u64, i64, i64, Option<&'e Event>, Option<&'e Event>);
    let mut points: Vec<Point<'_>> = Vec::new();
    for hold in history.holds() {
        let end = match index.death_in(hold.process, hold.granted.seq, hold.end_seq()) {
            Some((death, _)) => Some(death),
            None => hold.end.map(|e| e.event),
        };
        points.push((hold.granted.seq, 1, 0, Some(hold.granted), None));
        if let Some(end) = end {
            points.push((end.seq, -1, 0, Some(end), None));
        }
    }
    for (_, start, end) in &index.episodes {
        points.push((start.seq, 0, 1, Some(start), Some(start)));
        if *end != u64::MAX {
            points.push((*end, 0, -1, steps.get(*end as usize).map(|s| s.event), None));
        }
    }
    points.sort_by_key(|p| p.0);
    let (mut holders, mut waiters) = (0i64, 0i64);
    let mut open: Option<(&Event, &Event)> = None;
    let mut waiter: Option<&Event> = None;
    let mut out = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let seq = points[i].0;
        let mut here = None;
        while i < points.len() && points[i].0 == seq {
            holders += points[i].1;
            waiters += points[i].2;
            here = here.or(points[i].3);
            if let Some(w) = points[i].4 {
                waiter = Some(w);
            }
            i += 1;
        }
        let free = seq >= first_grant && holders <= 0 && waiters > 0;
        match (free, open) {
            (true, None) => open = here.zip(waiter),
            (false, Some((from, w))) => {
                out.push(Stretch {
                    from,
                    to_us: here.map_or(history.end_us(), |e| e.at_us),
                    to: here,
                    waiter: w,
                });
                open = None;
            }
            _ => {}
        }
    }
    if let Some((from, w)) = open {
        out.push(Stretch {
            from,
            to_us: history.end_us(),
            to: None,
            waiter: w,
        });
    }
    out
}

impl Checker for Liveness {
    fn name(&self) -> CheckerName {
        CheckerName::Liveness
    }

    fn check(&self, history: &OpHistory<'_>) -> CheckResult {
        let index = Index::new(history);
        let (pasts, effects_seen) = lockouts(&index);
        if let Some(past) = pasts.first() {
            let (master, key, setter) = (past.master, past.key, past.setter);
            let how = match past.gone {
                Some((event, how)) => format!("{setter} {how} at {}", seconds(event.at_us)),
                None => format!("{setter} was gone"),
            };
            let lease = match past.lease {
                Some(_) => "its last lease".to_string(),
                None => "the TTL its acquisition asked for (the key had no TTL)".to_string(),
            };
            let explanation = format!(
                "key \"{key}\" on {master}, set by {setter}, outlived {lease} by {} after {how}, while {} waited \
                 (acquire invoked at {}): a lock key whose holder is gone must expire within its lease ({})",
                seconds(u64::try_from(past.excess_ms).unwrap_or(0).saturating_mul(1_000)),
                past.waiter_process,
                seconds(past.waiter.at_us),
                count(pasts.len(), "key past its lease", "keys past their lease"),
            );
            let mut events = vec![past.at, past.waiter, past.lease.unwrap_or(past.set)];
            events.extend(past.gone.map(|(e, _)| e));
            return CheckResult::new(self.name(), Verdict::Invalid, explanation, witness(&events));
        }
        let ttl_ms = history
            .operations()
            .iter()
            .enumerate()
            .filter_map(|(i, _)| index.acquire_of(i).map(|(_, ttl)| ttl))
            .max();
        let stretches = ttl_ms.map(|ttl| (ttl, unavailable(history, &index)));
        let mut longest_us = 0;
        if let Some((ttl, stretches)) = &stretches {
            let limit_us = ttl.saturating_mul(UNAVAILABLE_TTLS).saturating_mul(1_000);
            let spans = fault_spans(history);
            for s in stretches {
                let len_us = s.to_us.saturating_sub(s.from.at_us);
                longest_us = longest_us.max(len_us);
                if len_us <= limit_us {
                    continue;
                }
                let window_us = s.from.at_us.saturating_sub(ttl.saturating_mul(1_000));
                if spans.iter().any(|(f, t, _)| *f <= s.to_us && *t >= window_us) {
                    continue;
                }
                let explanation = format!(
                    "nobody held the lock for {} (from {} to {}) while {} waited, more than {UNAVAILABLE_TTLS} × TTL \
                     ({}) with no fault in effect",
                    seconds(len_us),
                    seconds(s.from.at_us),
                    seconds(s.to_us),
                    s.waiter.node,
                    seconds(limit_us),
                );
                let mut events = vec![s.from, s.waiter];
                events.extend(s.to);
                return CheckResult::new(self.name(), Verdict::Invalid, explanation, witness(&events));
            }
        }
        let processes: BTreeSet<&str> = index.episodes.iter().map(|((p, _), _, _)| *p).collect();
        let (verdict, explanation) = if !effects_seen {
            (
                Verdict::Unknown,
                "the masters' log records no key effects: key lives cannot be judged".to_string(),
            )
        } else if ttl_ms.is_none() {
            (Verdict::Unknown, "no acquisition said its TTL".to_string())
        } else if processes.len() < 2 || history.holds().is_empty() {
            (
                Verdict::Unknown,
                "no grant was contended: nobody could be locked out by someone else".to_string(),
            )
        } else {
            (
                Verdict::Valid,
                format!(
                    "no lock key outlived its lease after its holder was gone; longest unavailability {} (limit {} × \
                     TTL without a fault)",
                    seconds(longest_us),
                    UNAVAILABLE_TTLS
                ),
            )
        };
        CheckResult::new(self.name(), verdict, explanation, Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit;
    use crate::ops::names;
    use lockstep_sim::{EventKind, History, KeyEffect, Phase};
    use serde_json::{json, Value};

    const BASE_MS: i64 = 1_700_000_000_000;

    /// A hand-built history whose events may be written in any order: [`Story::build`] sorts
    /// them by time (stably) before numbering them.
    #[derive(Default)]
    struct Story {
        events: Vec<(u64, String, EventKind)>,
        next_id: u64,
    }

    /// A key state in [`Story::command`]: value, and expiry in ms after the run's start
    /// (`None`: no TTL).
    type State<'a> = Option<(&'a str, Option<i64>)>;

    impl Story {
        fn op(&mut self, at_ms: u64, node: &str, id: u64, phase: Phase, op: &str, data: Value) {
            let kind = EventKind::Op {
                id,
                phase,
                op: op.into(),
                data,
            };
            self.events.push((at_ms * 1_000, node.into(), kind));
        }

        fn id(&mut self) -> u64 {
            self.next_id += 1;
            self.next_id
        }

        fn acquire(&mut self, at_ms: u64, node: &str, outcome: Option<(u64, Phase, &str)>) {
            let id = self.id();
            self.op(at_ms, node, id, Phase::Invoke, names::ACQUIRE, json!({"key": "lock", "ttl_ms": 10000}));
            if let Some((done_ms, phase, value)) = outcome {
                let data = match phase {
                    Phase::Ok => json!({"key": "lock", "value": value, "fencing_token": null, "validity_ms": 9990}),
                    _ => json!({"error": "refused"}),
                };
                self.op(done_ms, node, id, phase, names::ACQUIRE, data);
            }
        }

        fn grant_op(&mut self, at_ms: u64, done_ms: Option<u64>, node: &str, op: &str, value: &str) {
            let id = self.id();
            let data = json!({"key": "lock", "value": value, "fencing_token": null, "ttl_ms": 10000});
            self.op(at_ms, node, id, Phase::Invoke, op, data);
            if let Some(done_ms) = done_ms {
                let data = match op {
                    names::RELEASE => json!({"released": true}),
                    _ => json!({"key": "lock", "value": value, "fencing_token": null, "validity_ms": 9990}),
                };
                self.op(done_ms, node, id, Phase::Ok, op, data);
            }
        }

        /// A command on redis-1 from `client`, changing `lock` from one state to another.
        fn command(&mut self, at_ms: u64, client: &str, args: &[&str], change: Option<(State<'_>, State<'_>)>) {
            let state = |s: State<'_>| {
                s.map(|(value, expire)| KeyState {
                    value: Some(value.to_string()),
                    fields: Vec::new(),
                    expire_at_ms: expire.map(|e| BASE_MS + e),
                })
            };
            let effects = change
                .map(|(before, after)| {
                    vec![KeyEffect {
                        key: "lock".into(),
                        before: state(before),
                        after: state(after),
                    }]
                })
                .unwrap_or_default();
            let kind = EventKind::Command {
                conn: 1,
                args: args.iter().map(|a| a.to_string()).collect(),
                reply: "+OK".into(),
                effects,
                client: Some(client.into()),
            };
            self.events.push((at_ms * 1_000, "redis-1".into(), kind));
        }

        fn fault(&mut self, at_ms: u64, fault: Fault) {
            let node = fault.nodes()[0].to_string();
            self.events.push((at_ms * 1_000, node, EventKind::Fault { fault }));
        }

        fn expired(&mut self, at_ms: u64) {
            let kind = EventKind::Expired { key: "lock".into() };
            self.events.push((at_ms * 1_000, "redis-1".into(), kind));
        }

        fn pause_for_good(&mut self, at_ms: u64, node: &str) {
            let pause = Fault::Pause {
                node: node.into(),
                duration_ms: 1_000_000,
            };
            self.fault(at_ms, pause);
        }

        /// client-0 holds 0–1 s: every story below has a first grant.
        fn first_grant(&mut self) {
            self.acquire(0, "client-0", Some((2, Phase::Ok, "v0")));
            let set = ["SET", "lock", "v0", "NX", "PX", "10000"];
            self.command(1, "client-0", &set, Some((None, Some(("v0", Some(10_001))))));
            self.grant_op(1_000, Some(1_002), "client-0", names::RELEASE, "v0");
            self.command(1_001, "client-0", &["EVAL", "del"], Some((Some(("v0", Some(10_001))), None)));
        }

        /// client-2 asks for the lock from 3 s and is refused every 3 s (its `SET NX` changes
        /// nothing) until `granted_ms`, when it gets it, or until 27 s.
        fn client_2_waits(&mut self, granted_ms: Option<u64>) {
            let outcome = granted_ms.map(|g| (g, Phase::Ok, "v2"));
            self.acquire(3_000, "client-2", outcome);
            for at_ms in (3_001..28_000).step_by(3_000) {
                if granted_ms.is_some_and(|g| at_ms > g) {
                    break;
                }
                self.command(at_ms, "client-2", &["SET", "lock", "v2", "NX"], None);
            }
        }

        fn build(mut self) -> History {
            self.events.sort_by_key(|e| e.0);
            let mut history = History::new();
            for (at_us, node, kind) in self.events {
                let wall_ms = BASE_MS + (at_us / 1_000) as i64;
                history.push(at_us, &node, wall_ms, (at_us / 1_000) as i64, kind);
            }
            history
        }
    }

    fn judge(story: Story) -> (CheckResult, History) {
        let raw = story.build();
        (Liveness.check(&OpHistory::new(&raw)), raw)
    }

    /// The seq of the first event of `raw` that `pick` accepts.
    fn seq_of(raw: &History, pick: impl Fn(&Event) -> bool) -> u64 {
        raw.events().iter().find(|e| pick(e)).map(|e| e.seq).expect("the event")
    }

    #[test]
    fn a_key_left_without_ttl_by_a_holder_that_died_between_its_steps_is_invalid() {
        let mut story = Story::default();
        story.first_grant();
        story.acquire(2_000, "client-1", None);
        story.command(2_001, "client-1", &["SET", "lock", "v1", "NX"], Some((None, Some(("v1", None)))));
        story.pause_for_good(2_002, "client-1");
        story.client_2_waits(None);
        let (result, raw) = judge(story);
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.explanation);
        for part in ["\"lock\" on redis-1", "set by client-1", "had no TTL", "client-2 waited", "paused past"] {
            assert!(result.explanation.contains(part), "{part}: {}", result.explanation);
        }
        // Past 2.001 s + the 10 s asked for, seen until client-2's last refusal at 27.001 s.
        assert!(result.explanation.contains("by 15.000 s"), "{}", result.explanation);
        let seqs = testkit::seqs(&result);
        let set = seq_of(&raw, |e| e.at_us == 2_001_000);
        let gone = seq_of(&raw, |e| e.at_us == 2_002_000);
        let waiter = seq_of(&raw, |e| e.at_us == 3_000_000);
        for seq in [set, gone, waiter] {
            assert!(seqs.contains(&seq), "{seq} in {seqs:?}");
        }
    }

    #[test]
    fn the_same_death_with_a_ttl_that_expires_on_time_is_valid() {
        let mut story = Story::default();
        story.first_grant();
        story.acquire(2_000, "client-1", None);
        let set = ["SET", "lock", "v1", "NX", "PX", "10000"];
        story.command(2_001, "client-1", &set, Some((None, Some(("v1", Some(12_001))))));
        story.pause_for_good(2_002, "client-1");
        story.client_2_waits(Some(12_051));
        story.expired(12_001);
        let set = ["SET", "lock", "v2", "NX", "PX", "10000"];
        story.command(12_050, "client-2", &set, Some((None, Some(("v2", Some(22_050))))));
        let (result, _) = judge(story);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    /// client-1 holds from 2 s with a 10 s lease and releases at 4 s, but its release never
    /// lands (the key stays); `renewed` adds a renewal it sends after its release.
    fn released_then(renewed: bool) -> CheckResult {
        let mut story = Story::default();
        story.first_grant();
        story.acquire(2_000, "client-1", Some((2_002, Phase::Ok, "v1")));
        let set = ["SET", "lock", "v1", "NX", "PX", "10000"];
        story.command(2_001, "client-1", &set, Some((None, Some(("v1", Some(12_001))))));
        let id = story.id();
        story.op(4_000, "client-1", id, Phase::Invoke, names::RELEASE, json!({"key": "lock", "value": "v1"}));
        story.op(6_000, "client-1", id, Phase::Info, names::RELEASE, json!({"error": "timed out"}));
        if renewed {
            // A renewal timer nobody cancelled: after the release, it renews the key for 10 s.
            story.grant_op(7_000, Some(7_002), "client-1", names::EXTEND, "v1");
            let change = (Some(("v1", Some(12_001))), Some(("v1", Some(17_001))));
            story.command(7_001, "client-1", &["PEXPIRE", "lock", "10000"], Some(change));
            story.expired(17_001);
        } else {
            story.expired(12_001);
        }
        story.client_2_waits(Some(if renewed { 17_050 } else { 12_050 }));
        judge(story).0
    }

    #[test]
    fn a_renewal_after_the_release_is_a_lease_nobody_alive_gave() {
        let result = released_then(true);
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.explanation);
        assert!(result.explanation.contains("its last lease"), "{}", result.explanation);
        assert!(result.explanation.contains("client-1 released at 4.000 s"), "{}", result.explanation);
        let result = released_then(false);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    #[test]
    fn a_renewal_in_flight_at_the_release_counts_as_the_holder_s() {
        let mut story = Story::default();
        story.first_grant();
        story.acquire(2_000, "client-1", Some((2_002, Phase::Ok, "v1")));
        let set = ["SET", "lock", "v1", "NX", "PX", "10000"];
        story.command(2_001, "client-1", &set, Some((None, Some(("v1", Some(12_001))))));
        // Sent at 3.9 s, answered after the release at 4 s: its PEXPIRE lands at 4.5 s.
        story.grant_op(3_900, Some(4_600), "client-1", names::EXTEND, "v1");
        let id = story.id();
        story.op(4_000, "client-1", id, Phase::Invoke, names::RELEASE, json!({"key": "lock", "value": "v1"}));
        let change = (Some(("v1", Some(12_001))), Some(("v1", Some(14_500))));
        story.command(4_500, "client-1", &["PEXPIRE", "lock", "10000"], Some(change));
        story.expired(14_500);
        story.client_2_waits(Some(14_550));
        let (result, _) = judge(story);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    #[test]
    fn a_holder_that_takes_its_own_key_again_owns_it_from_its_new_acquisition() {
        // A reentrant lock whose release only decrements: client-1's key stays after each
        // release, and its next acquisition (same value) renews it before the grant.
        let mut story = Story::default();
        story.first_grant();
        story.acquire(2_000, "client-1", Some((2_002, Phase::Ok, "v1")));
        let set = ["EVAL", "hincrby"];
        story.command(2_001, "client-1", &set, Some((None, Some(("v1", Some(12_001))))));
        for (release_ms, renewed_to_ms) in [(4_000, 14_003), (10_000, 20_003), (16_000, 26_003)] {
            story.grant_op(release_ms, Some(release_ms + 2), "client-1", names::RELEASE, "v1");
            story.acquire(release_ms + 2, "client-1", Some((release_ms + 4, Phase::Ok, "v1")));
            let before = renewed_to_ms - 6_000 + if release_ms == 4_000 { -2_002 } else { 0 };
            let change = (Some(("v1", Some(before))), Some(("v1", Some(renewed_to_ms))));
            story.command(release_ms + 3, "client-1", &set, Some(change));
        }
        story.client_2_waits(None);
        let (result, _) = judge(story);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    /// client-0 holds 0–1 s; client-2 asks every second from 1.5 s and is refused until 40 s;
    /// `fault` adds one fault at 20 s.
    fn long_wait(fault: Option<Fault>) -> CheckResult {
        let mut story = Story::default();
        story.first_grant();
        for at_ms in (1_500..40_000).step_by(1_000) {
            story.acquire(at_ms, "client-2", Some((at_ms + 100, Phase::Fail, "")));
        }
        if let Some(f) = fault {
            story.fault(20_000, f);
        }
        story.acquire(40_000, "client-2", Some((40_002, Phase::Ok, "v2")));
        judge(story).0
    }

    #[test]
    fn a_long_unavailability_is_invalid_without_a_fault_and_valid_with_one_in_effect() {
        let result = long_wait(None);
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.explanation);
        assert!(
            result.explanation.contains("nobody held the lock for 38.502 s (from 1.500 s to 40.002 s)"),
            "{}",
            result.explanation
        );
        assert!(result.explanation.contains("3 × TTL (30.000 s)"), "{}", result.explanation);
        let pause = Fault::Pause {
            node: "redis-1".into(),
            duration_ms: 5_000,
        };
        let result = long_wait(Some(pause));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.explanation);
    }

    #[test]
    fn a_run_without_a_waiter_or_without_effects_cannot_be_judged() {
        let mut story = Story::default();
        story.first_grant();
        let (result, _) = judge(story);
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.explanation);
        assert!(result.explanation.contains("no grant was contended"), "{}", result.explanation);
        let raw = testkit::kleppmann(false).0;
        let result = Liveness.check(&OpHistory::new(&raw));
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.explanation);
    }
}
