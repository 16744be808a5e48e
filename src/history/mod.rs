//! The run's history read once, as types: the [`OpHistory`] the checkers, both timelines and the
//! liveness figures read.
//!
//! The world records one flat log of events; client operations are `Op` events with free-form
//! JSON data (see [`crate::ops`]). [`OpHistory::new`] reads that log in one pass and keeps:
//! - every event as a typed [`Step`] (same order, same `seq`), op data decoded by `op::decode`;
//! - [`Operation`]s: each invoke paired with its completion (`ok`, `fail`, `info`) by process and
//!   id, or still open at the end of the history;
//! - [`Hold`]s, one per grant (an `acquire` `ok`), in grant order: the true-time interval its
//!   client was inside the critical section (to the release invoke, an abort, the client's next
//!   acquire on that key, or the end of the history), the client's whole *turn* (that interval
//!   stretched to the completion, or the resource's judgement, of every resource request it sent
//!   under the grant: a write held in the network is still the holder's), what the client
//!   believed along the way (the validity of the grant and of each renewal), and when the
//!   masters granted it (see [`lease`]);
//! - [`WriteRecord`]s: every write attempt the resource judged, attributed to the write operation
//!   that sent it and to the grant its client held when it invoked that write;
//! - [`Anomaly`]s: events that do not fit the vocabulary (unknown op names, data of the wrong
//!   shape, completions without invokes). They stay in the steps, typed as far as they go, and
//!   play no part in holds or attribution.
//!
//! Positions (`seq`) order everything: the history is a linearization, so events at equal true
//! times are ordered by `seq`. Left out: any judgement (that is the checkers').

pub mod key_life;
pub mod lease;
pub mod op;
pub mod step;
#[cfg(test)]
pub(crate) mod testkit;

pub use op::{AbortReason, ExtendInvoke, LockOp, OpData, OpName, ReadInvoke, Released, WriteOk};
pub use step::{Anomaly, AnomalyKind, Expiry, OpStep, ReadAttempt, Step, StepKind, WriteAttempt};

use crate::ops::{Grant, WriteInvoke};
use lockstep_sim::{Event, History, Phase};
use std::collections::BTreeMap;

/// A client operation: its invoke and, unless it is still open, its completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation<'h> {
    /// The process (client node) that ran it.
    pub process: &'h str,
    /// The client task that ran it, when the client runs several (`None`: one task).
    pub task: Option<u32>,
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: OpName,
    /// Its invoke: an index into [`OpHistory::steps`].
    pub invoke: usize,
    /// Its completion, an index into [`OpHistory::steps`]; `None` while open at the end.
    pub completion: Option<usize>,
}

/// `client-1`, or `client-1 task 2` for a task of a client that runs several.
pub(crate) fn holder_name(process: &str, task: Option<u32>) -> String {
    match task {
        Some(task) => format!("{process} task {task}"),
        None => process.to_string(),
    }
}

/// A process and, when its client runs several tasks, the task: one sequential actor.
type Actor<'h> = (&'h str, Option<u32>);

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It took effect.
    Ok,
    /// It certainly did not take effect.
    Fail,
    /// It may have taken effect (a timeout, a lost connection).
    Info,
    /// No completion was recorded before the history ended.
    Open,
}

/// What ended a client's stay inside the critical section under a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldEndKind {
    /// The release invoke of the grant.
    Release,
    /// An abort of the grant (the client learned it had lost the lock).
    Abort,
    /// The client's next acquire on the same key (its invoke, or another grant's `ok`).
    NextAcquire,
}

/// The event that ended a hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoldEnd<'h> {
    /// The event.
    pub event: &'h Event,
    /// What it was.
    pub kind: HoldEndKind,
}

/// What a holder believed at one point: its grant is valid for `validity_ms` more, by its own
/// clock, from `event` (the acquire `ok` or an extension's `ok`) — or, when the lock said so,
/// from the instant it computed the validity (`validity_from_ms`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Belief<'h> {
    /// The acquire or extend `ok`.
    pub event: &'h Event,
    /// The validity it reported.
    pub validity_ms: u64,
    /// The client's monotonic reading when the lock computed the validity, if recorded.
    pub validity_from_ms: Option<i64>,
}

impl Belief<'_> {
    /// The client's monotonic-clock reading (ms) until which it believed it held the lock.
    pub(crate) fn believed_until_monotonic_ms(&self) -> i64 {
        self.event.monotonic_ms.saturating_add_unsigned(self.validity_ms)
    }
}

/// One grant and the client's stay inside the critical section under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold<'h> {
    /// The process holding it.
    pub process: &'h str,
    /// The client task holding it, when the client runs several (`None`: one task).
    pub task: Option<u32>,
    /// What was granted.
    pub grant: Grant,
    /// The acquire `ok` (its `seq` orders grants; its `at_us` starts the hold).
    pub granted: &'h Event,
    /// The acquire operation ([`OpHistory::operations`] index), when its invoke was recorded.
    pub acquire: Option<usize>,
    /// What ended it; `None`: still held at the end of the history.
    pub end: Option<HoldEnd<'h>>,
    /// The resource requests (reads and writes, [`OpHistory::operations`] indices) the client
    /// invoked under this grant, before [`end`](Self::end).
    pub requests: Vec<usize>,
    /// The event that ends the client's turn: the latest of [`end`](Self::end), the completion
    /// of every request and the resource's judgement of every write it sent (`None`: still in
    /// its turn at the end of the history — not given up, or a request never completed).
    pub turn_end: Option<&'h Event>,
    /// The validity at the grant, then after each successful extension while held.
    pub beliefs: Vec<Belief<'h>>,
    /// The master command at which the acquisition took effect on a majority of the masters it
    /// reached (see [`lease`]); `None` when the history does not show it.
    pub master_grant: Option<&'h Event>,
}

impl Hold<'_> {
    /// Who holds it: the process, and its task when the client runs several
    /// (`client-1`, `client-1 task 2`).
    pub fn holder(&self) -> String {
        holder_name(self.process, self.task)
    }

    /// Whether `other` is held by the same process and task (one sequential actor).
    pub(crate) fn same_holder(&self, other: &Hold<'_>) -> bool {
        self.process == other.process && self.task == other.task
    }

    /// True time the hold began, µs.
    pub fn start_us(&self) -> u64 {
        self.granted.at_us
    }

    /// The first position at which the client is no longer inside (`u64::MAX` while held).
    pub(crate) fn end_seq(&self) -> u64 {
        self.end.map_or(u64::MAX, |end| end.event.seq)
    }

    /// True time the hold ended, µs, or `history_end_us` when still held.
    pub(crate) fn end_us_or(&self, history_end_us: u64) -> u64 {
        self.end.map_or(history_end_us, |end| end.event.at_us)
    }

    /// The first position at which the client's turn is over (`u64::MAX` while in it): the
    /// hold's end stretched over the requests it sent under the grant.
    pub(crate) fn turn_end_seq(&self) -> u64 {
        self.turn_end.map_or(u64::MAX, |e| e.seq)
    }

    /// The position that orders this grant among others: the masters' grant when the history
    /// shows it, else the client's acquire `ok`.
    pub(crate) fn grant_order_seq(&self) -> u64 {
        self.master_grant.map_or(self.granted.seq, |e| e.seq)
    }

    /// Whether it ended by a release or an abort (not by a next acquire or the history's end).
    pub fn given_up(&self) -> bool {
        matches!(
            self.end,
            Some(HoldEnd {
                kind: HoldEndKind::Release | HoldEndKind::Abort,
                ..
            })
        )
    }
}

/// A write attempt the resource judged, attributed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteRecord<'h> {
    /// The resource's event.
    pub event: &'h Event,
    /// What the resource saw and decided.
    pub attempt: WriteAttempt<'h>,
    /// The write operation that sent it ([`OpHistory::operations`] index): the latest `write`
    /// invoke by the same process before it with the same key, value and token.
    pub operation: Option<usize>,
    /// The grant ([`OpHistory::holds`] index) whose `ok` was that process's latest before that
    /// invoke.
    pub grant: Option<usize>,
}

/// The history, typed and paired; see the [module](self) docs.
#[derive(Debug, Clone)]
pub struct OpHistory<'h> {
    history: &'h History,
    steps: Vec<Step<'h>>,
    operations: Vec<Operation<'h>>,
    holds: Vec<Hold<'h>>,
    writes: Vec<WriteRecord<'h>>,
    anomalies: Vec<Anomaly>,
    /// What the lease reader needs, read once ([`lease::find_master_grants`]).
    lease_index: lease::LeaseIndex<'h>,
}

/// A process's write invoke, kept for attribution.
struct SentWrite {
    operation: usize,
    write: WriteInvoke,
    grant: Option<usize>,
}

/// The state of the one pass that builds an [`OpHistory`].
struct Reader<'h> {
    out: OpHistory<'h>,
    /// (process, id) -> its open operation.
    open_ops: BTreeMap<(&'h str, u64), usize>,
    /// (process, task, lock key) -> its open hold.
    open_holds: BTreeMap<(Actor<'h>, String), usize>,
    /// (process, task) -> its latest grant.
    latest_grant: BTreeMap<Actor<'h>, usize>,
    /// process -> its write invokes so far.
    sent: BTreeMap<&'h str, Vec<SentWrite>>,
}

impl<'h> Reader<'h> {
    fn read(&mut self, event: &'h Event) {
        let index = self.out.steps.len();
        let (step, anomaly) = Step::of(event);
        self.out.anomalies.extend(anomaly);
        match &step.kind {
            StepKind::Op(op) => {
                let operation = self.pair(event, op, index);
                self.track(event, op, operation);
            }
            StepKind::ResourceWrite(attempt) => self.attribute(event, *attempt),
            // A client's process killed (a live run's crash or restart of a client): it is out of
            // its critical section, and its holds end there, as abandoned.
            StepKind::Fault(lockstep_sim::Fault::Crash { node } | lockstep_sim::Fault::Restart { node })
                if self.open_holds.keys().any(|((p, _), _)| *p == node.as_str()) =>
            {
                let ended: Vec<_> = self
                    .open_holds
                    .keys()
                    .filter(|((p, _), _)| *p == node.as_str())
                    .cloned()
                    .collect();
                for slot in ended {
                    if let Some(i) = self.open_holds.remove(&slot) {
                        self.end_hold(i, event, HoldEndKind::Abort);
                    }
                }
            }
            _ => {}
        }
        self.out.steps.push(step);
    }

    /// Pairs an op step with its operation; returns the operation's index (`None`: an orphan
    /// or mismatched completion).
    fn pair(&mut self, event: &'h Event, op: &OpStep, index: usize) -> Option<usize> {
        let (out, seq) = (&mut self.out, event.seq);
        let key = (event.node.as_str(), op.id);
        if op.phase == Phase::Invoke {
            let operation = out.operations.len();
            if self.open_ops.insert(key, operation).is_some() {
                out.anomalies.push(Anomaly {
                    seq,
                    kind: AnomalyKind::DuplicateInvoke { op: op.op, id: op.id },
                });
            }
            out.operations.push(Operation {
                process: &event.node,
                task: op.task,
                id: op.id,
                name: op.op,
                invoke: index,
                completion: None,
            });
            return Some(operation);
        }
        let Some(&operation) = self.open_ops.get(&key) else {
            // An abort may be recorded as a one-off completion naming the lost grant.
            if op.op != OpName::Abort {
                out.anomalies.push(Anomaly {
                    seq,
                    kind: AnomalyKind::CompletionWithoutInvoke { op: op.op, id: op.id },
                });
            }
            return None;
        };
        let invoked = out.operations[operation].name;
        if invoked != op.op {
            out.anomalies.push(Anomaly {
                seq,
                kind: AnomalyKind::CompletionMismatch {
                    invoked,
                    completed: op.op,
                    id: op.id,
                },
            });
            return None;
        }
        self.open_ops.remove(&key);
        out.operations[operation].completion = Some(index);
        Some(operation)
    }

    /// Follows grants, holds, beliefs and write invokes through one op step.
    fn track(&mut self, event: &'h Event, op: &OpStep, operation: Option<usize>) {
        let process: &'h str = &event.node;
        // Invokes name their task; a completion belongs to its operation's.
        let task = operation.map_or(op.task, |i| self.out.operations[i].task);
        let actor: Actor<'h> = (process, task);
        match (&op.data, op.phase) {
            (Some(OpData::Invoke(LockOp::Acquire(invoke))), _) => {
                if let Some(i) = self.open_holds.remove(&(actor, invoke.key.clone())) {
                    self.end_hold(i, event, HoldEndKind::NextAcquire);
                }
            }
            (Some(OpData::Granted(grant)), Phase::Ok) if op.op == OpName::Acquire => {
                let hold = self.out.holds.len();
                // A grant without an acquire invoke in between still ends the one before.
                if let Some(i) = self.open_holds.insert((actor, grant.key.clone()), hold) {
                    self.end_hold(i, event, HoldEndKind::NextAcquire);
                }
                self.latest_grant.insert(actor, hold);
                self.out.holds.push(Hold {
                    process,
                    task,
                    grant: grant.clone(),
                    granted: event,
                    acquire: operation,
                    end: None,
                    requests: Vec::new(),
                    turn_end: None,
                    beliefs: vec![Belief {
                        event,
                        validity_ms: grant.validity_ms,
                        validity_from_ms: grant.validity_from_ms,
                    }],
                    master_grant: None,
                });
            }
            (Some(OpData::Granted(renewed)), Phase::Ok) => {
                let held = self.open_holds.get(&(actor, renewed.key.clone())).copied();
                if let Some(hold) = held.map(|i| &mut self.out.holds[i]) {
                    if hold.grant.value == renewed.value {
                        hold.beliefs.push(Belief {
                            event,
                            validity_ms: renewed.validity_ms,
                            validity_from_ms: renewed.validity_from_ms,
                        });
                    }
                }
            }
            (Some(OpData::Invoke(LockOp::Release(grant) | LockOp::Abort(grant)) | OpData::Lost(grant)), _) => {
                let slot = (actor, grant.key.clone());
                let held = self.open_holds.get(&slot).copied();
                if let Some(i) = held.filter(|&i| self.out.holds[i].grant.value == grant.value) {
                    let kind = if op.op == OpName::Release {
                        HoldEndKind::Release
                    } else {
                        HoldEndKind::Abort
                    };
                    self.end_hold(i, event, kind);
                    self.open_holds.remove(&slot);
                }
            }
            (Some(OpData::Invoke(LockOp::Write(write))), _) => {
                if let Some(operation) = operation {
                    self.sent.entry(process).or_default().push(SentWrite {
                        operation,
                        write: write.clone(),
                        grant: self.latest_grant.get(&actor).copied(),
                    });
                    self.under_grant(actor, operation);
                }
            }
            (Some(OpData::Invoke(LockOp::Read(_))), _) => {
                if let Some(operation) = operation {
                    self.under_grant(actor, operation);
                }
            }
            _ => {}
        }
    }

    /// Files a resource request of `actor` under its latest grant, if that grant is still held.
    fn under_grant(&mut self, actor: Actor<'h>, operation: usize) {
        if let Some(&hold) = self.latest_grant.get(&actor) {
            let hold = &mut self.out.holds[hold];
            if hold.end.is_none() {
                hold.requests.push(operation);
            }
        }
    }

    /// Ends every hold's turn: the latest of its end, its requests' completions and the
    /// resource's judgements of its writes.
    fn end_turns(&mut self) {
        let out = &mut self.out;
        let mut judged: BTreeMap<usize, &'h Event> = BTreeMap::new();
        for write in &out.writes {
            if let Some(operation) = write.operation {
                let latest = judged.entry(operation).or_insert(write.event);
                if write.event.seq > latest.seq {
                    *latest = write.event;
                }
            }
        }
        for hold in &mut out.holds {
            let mut turn_end = hold.end.map(|e| e.event);
            for &operation in &hold.requests {
                let op = &out.operations[operation];
                let Some(done) = op.completion.map(|i| out.steps[i].event) else {
                    turn_end = None;
                    break;
                };
                let last = judged
                    .get(&operation)
                    .map_or(done, |&j| if j.seq > done.seq { j } else { done });
                turn_end = turn_end.map(|end| if last.seq > end.seq { last } else { end });
            }
            hold.turn_end = turn_end;
        }
    }

    /// Attributes a write attempt to the latest matching write invoke of its client.
    fn attribute(&mut self, event: &'h Event, attempt: WriteAttempt<'h>) {
        let matching = self.sent.get(attempt.client).and_then(|list| {
            list.iter().rev().find(|s| {
                s.write.key == attempt.key && s.write.value == attempt.value && s.write.fencing_token == attempt.token
            })
        });
        self.out.writes.push(WriteRecord {
            event,
            attempt,
            operation: matching.map(|s| s.operation),
            grant: matching.and_then(|s| s.grant),
        });
    }

    fn end_hold(&mut self, hold: usize, event: &'h Event, kind: HoldEndKind) {
        self.out.holds[hold].end = Some(HoldEnd { event, kind });
    }
}

impl<'h> OpHistory<'h> {
    /// Reads `history` in one pass.
    pub fn new(history: &'h History) -> Self {
        let mut reader = Reader {
            out: OpHistory {
                history,
                steps: Vec::with_capacity(history.len()),
                operations: Vec::new(),
                holds: Vec::new(),
                writes: Vec::new(),
                anomalies: Vec::new(),
                lease_index: lease::LeaseIndex::default(),
            },
            open_ops: BTreeMap::new(),
            open_holds: BTreeMap::new(),
            latest_grant: BTreeMap::new(),
            sent: BTreeMap::new(),
        };
        for event in history.events() {
            reader.read(event);
        }
        reader.end_turns();
        let mut out = reader.out;
        lease::find_master_grants(&mut out);
        out
    }

    /// The node of step `i` as a small index, the same for every step of one node: per-node
    /// state kept by index costs no string comparison per look-up.
    pub(crate) fn node_of_step(&self, i: usize) -> usize {
        self.lease_index.node_of_step(i)
    }

    /// The raw history.
    pub fn history(&self) -> &'h History {
        self.history
    }

    /// Every event, typed, in history order (`steps()[i].event.seq == i`).
    pub fn steps(&self) -> &[Step<'h>] {
        &self.steps
    }

    /// The step of the event at position `seq`.
    pub fn step(&self, seq: u64) -> Option<&Step<'h>> {
        let at = usize::try_from(seq).ok()?;
        match self.steps.get(at) {
            Some(step) if step.event.seq == seq => Some(step),
            _ => self
                .steps
                .binary_search_by_key(&seq, |s| s.event.seq)
                .ok()
                .map(|i| &self.steps[i]),
        }
    }

    /// Every operation, in order of their invokes.
    pub fn operations(&self) -> &[Operation<'h>] {
        &self.operations
    }

    /// What `operation` asked for (`None` when its invoke's data did not fit).
    pub fn invoked(&self, operation: &Operation<'h>) -> Option<&LockOp> {
        match self.steps[operation.invoke].op()?.data.as_ref()? {
            OpData::Invoke(op) => Some(op),
            _ => None,
        }
    }

    /// How `operation` ended.
    pub fn outcome(&self, operation: &Operation<'h>) -> Outcome {
        let phase = operation.completion.and_then(|i| self.steps[i].op()).map(|op| op.phase);
        match phase {
            Some(Phase::Ok) => Outcome::Ok,
            Some(Phase::Fail) => Outcome::Fail,
            Some(Phase::Info) => Outcome::Info,
            Some(Phase::Invoke) | None => Outcome::Open,
        }
    }

    /// Every grant with its hold, in grant order (the order of their acquire `ok`s).
    pub fn holds(&self) -> &[Hold<'h>] {
        &self.holds
    }

    /// Every write attempt the resource judged, in order, attributed.
    pub fn writes(&self) -> &[WriteRecord<'h>] {
        &self.writes
    }

    #[cfg(test)]
    /// What did not fit the vocabulary, in order.
    pub(crate) fn anomalies(&self) -> &[Anomaly] {
        &self.anomalies
    }

    /// The true time of the last event, µs (0 when empty).
    pub fn end_us(&self) -> u64 {
        self.history.events().last().map_or(0, |e| e.at_us)
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::{kleppmann, malformed, Builder};
    use super::*;
    use crate::ops::{names, to_data, GrantRef};
    use lockstep_sim::EventKind;
    use serde_json::json;

    #[test]
    fn every_event_is_one_step_in_order() {
        let (raw, story) = kleppmann(false);
        let history = OpHistory::new(&raw);
        assert_eq!(history.steps().len(), raw.len());
        for (i, step) in history.steps().iter().enumerate() {
            assert_eq!(step.event.seq, i as u64);
            assert_eq!(history.step(step.event.seq).map(|s| s.event.seq), Some(i as u64));
        }
        assert!(history.step(raw.len() as u64).is_none());
        assert!(history.anomalies().is_empty(), "{:?}", history.anomalies());
        let granted = history.step(story.c2_acquired).and_then(Step::op).expect("an op step");
        assert_eq!((granted.op, granted.phase), (OpName::Acquire, Phase::Ok));
        assert!(matches!(&granted.data, Some(OpData::Granted(g)) if g.fencing_token == Some(2)));
        assert_eq!(history.end_us(), 17_101_000);
    }

    #[test]
    fn invokes_pair_with_their_completions() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        b.write(2_000, "client-1", "counter", 1, Some(1), false, 0);
        let id = b.id();
        b.op(
            5_000,
            "client-1",
            id,
            Phase::Invoke,
            names::READ,
            json!({ "key": "counter", "fencing_token": 1 }),
        );
        b.op(
            5_500,
            "client-1",
            id,
            Phase::Info,
            names::READ,
            json!({ "error": "timed out" }),
        );
        // Still open at the end: an acquire by client-2.
        let open = b.acquire_invoke(6_000, "client-2", "lock");
        let raw = b.build();
        let history = OpHistory::new(&raw);
        let summary: Vec<(&str, OpName, Outcome)> = history
            .operations()
            .iter()
            .map(|op| (op.process, op.name, history.outcome(op)))
            .collect();
        assert_eq!(
            summary,
            [
                ("client-1", OpName::Acquire, Outcome::Ok),
                ("client-1", OpName::Write, Outcome::Fail),
                ("client-1", OpName::Read, Outcome::Info),
                ("client-2", OpName::Acquire, Outcome::Open),
            ]
        );
        let last = history.operations()[3];
        assert_eq!(history.steps()[last.invoke].event.seq, open);
        assert_eq!(last.completion, None);
        assert!(matches!(history.invoked(&last), Some(LockOp::Acquire(a)) if a.key == "lock"));
        let read = history.operations()[2];
        let completion = read.completion.map(|i| history.steps()[i].event.at_us);
        assert_eq!(completion, Some(5_500));
        assert!(history.anomalies().is_empty(), "{:?}", history.anomalies());
    }

    #[test]
    fn pairing_anomalies_are_listed() {
        let mut b = Builder::new();
        // A completion nobody invoked, an id reused while open, a completion of another op.
        let orphan = b.op(0, "client-1", 7, Phase::Ok, names::RELEASE, json!({ "released": true }));
        b.acquire_invoke(1_000, "client-1", "lock");
        let id = b.history.next_op_id() - 1;
        let again = b.op(
            2_000,
            "client-1",
            id,
            Phase::Invoke,
            names::ACQUIRE,
            json!({ "key": "lock", "ttl_ms": 5 }),
        );
        let wrong = b.op(3_000, "client-1", id, Phase::Ok, names::WRITE, json!({ "version": 1 }));
        // The same id on another process is another operation.
        b.op(
            4_000,
            "client-2",
            id,
            Phase::Invoke,
            names::ACQUIRE,
            json!({ "key": "lock", "ttl_ms": 5 }),
        );
        let raw = b.build();
        let history = OpHistory::new(&raw);
        let kinds: Vec<(u64, &AnomalyKind)> = history.anomalies().iter().map(|a| (a.seq, &a.kind)).collect();
        assert_eq!(
            kinds,
            [
                (
                    orphan,
                    &AnomalyKind::CompletionWithoutInvoke {
                        op: OpName::Release,
                        id: 7
                    }
                ),
                (
                    again,
                    &AnomalyKind::DuplicateInvoke {
                        op: OpName::Acquire,
                        id
                    }
                ),
                (
                    wrong,
                    &AnomalyKind::CompletionMismatch {
                        invoked: OpName::Acquire,
                        completed: OpName::Write,
                        id
                    }
                ),
            ]
        );
        assert_eq!(history.operations().len(), 3);
        assert!(history
            .operations()
            .iter()
            .all(|op| history.outcome(op) == Outcome::Open));
        assert_eq!(
            history.anomalies()[0].to_string(),
            "seq 0: release completion of id 7 without an invoke"
        );
    }

    #[test]
    fn holds_run_from_grant_to_release_with_beliefs() {
        let (raw, story) = kleppmann(false);
        let history = OpHistory::new(&raw);
        let holds = history.holds();
        assert_eq!(holds.len(), 2);
        let (c1, c2) = (&holds[0], &holds[1]);
        assert_eq!((c1.process, c1.granted.seq), ("client-1", story.c1_acquired));
        assert_eq!((c2.process, c2.granted.seq), ("client-2", story.c2_acquired));
        assert_eq!(
            c1.end.map(|e| (e.event.seq, e.kind)),
            Some((story.c1_release, HoldEndKind::Release))
        );
        assert_eq!(
            c2.end.map(|e| (e.event.seq, e.kind)),
            Some((story.c2_release, HoldEndKind::Release))
        );
        assert_eq!((c1.start_us(), c1.end_us_or(0)), (2_000, 17_100_000));
        assert!(c1.given_up() && c2.given_up());
        assert_eq!(c1.acquire.map(|i| history.operations()[i].name), Some(OpName::Acquire));
        // What client-1 believed: 9.99 s from its grant, by its own clock.
        assert_eq!(c1.beliefs.len(), 1);
        assert_eq!(c1.beliefs[0].validity_ms, 9_990);
        assert_eq!(c1.beliefs[0].believed_until_monotonic_ms(), 2 + 9_990);
    }

    #[test]
    fn holds_end_at_aborts_and_next_acquires_and_extensions_renew_beliefs() {
        let mut b = Builder::new();
        b.acquire(0, 1_000, "client-1", "lock", "a", Some(1));
        let id = b.id();
        let extend = json!({ "key": "lock", "value": "a", "fencing_token": 1, "ttl_ms": 100 });
        b.op(2_000, "client-1", id, Phase::Invoke, names::EXTEND, extend);
        let renewed = json!({ "key": "lock", "value": "a", "fencing_token": 1, "validity_ms": 77 });
        let renewal = b.op(3_000, "client-1", id, Phase::Ok, names::EXTEND, renewed);
        let id = b.id();
        let grant = GrantRef {
            key: "lock".into(),
            value: "a".into(),
            fencing_token: Some(1),
            value_sent: None,
        };
        let abort = b.op(4_000, "client-1", id, Phase::Invoke, names::ABORT, to_data(&grant));
        b.op(
            4_000,
            "client-1",
            id,
            Phase::Info,
            names::ABORT,
            json!({ "reason": "lost" }),
        );
        b.acquire(5_000, 6_000, "client-2", "lock", "b", Some(2));
        let next = b.acquire_invoke(7_000, "client-2", "lock");
        b.acquire(8_000, 9_000, "client-3", "lock", "c", Some(3));
        let raw = b.build();
        let history = OpHistory::new(&raw);
        let ends: Vec<Option<(u64, HoldEndKind)>> = history
            .holds()
            .iter()
            .map(|h| h.end.map(|e| (e.event.seq, e.kind)))
            .collect();
        assert_eq!(
            ends,
            [
                Some((abort, HoldEndKind::Abort)),
                Some((next, HoldEndKind::NextAcquire)),
                None
            ]
        );
        let beliefs: Vec<(u64, u64)> = history.holds()[0]
            .beliefs
            .iter()
            .map(|b| (b.event.seq, b.validity_ms))
            .collect();
        assert_eq!(beliefs, [(1, 9_990), (renewal, 77)]);
        assert!(history.holds()[0].given_up() && !history.holds()[1].given_up());
        assert_eq!(history.holds()[2].end_us_or(history.end_us()), 9_000);
        assert!(history.anomalies().is_empty(), "{:?}", history.anomalies());
    }

    #[test]
    fn writes_are_attributed_to_their_operation_and_grant() {
        let (raw, story) = kleppmann(false);
        let history = OpHistory::new(&raw);
        let writes = history.writes();
        assert_eq!(writes.len(), 2);
        assert_eq!(writes[0].event.seq, story.c2_write);
        assert_eq!(writes[1].event.seq, story.c1_write);
        // client-2's write: grant 1 (token 2); client-1's late write: grant 0 (token 1).
        assert_eq!((writes[0].grant, writes[1].grant), (Some(1), Some(0)));
        for write in writes {
            let op = history.operations()[write.operation.expect("attributed")];
            assert_eq!((op.name, op.process), (OpName::Write, write.attempt.client));
            assert_eq!(history.outcome(&op), Outcome::Ok);
            // The invoke precedes the resource's judgement, which precedes the completion.
            let invoke = history.steps()[op.invoke].event.seq;
            let done = op.completion.map(|i| history.steps()[i].event.seq);
            assert!(invoke < write.event.seq && Some(write.event.seq) < done);
        }

        // A write nobody invoked, and one invoked before any grant.
        let mut b = Builder::new();
        b.resource_write(0, "client-9", "counter", 1, None, true, 1);
        b.write(1_000, "client-1", "counter", 2, None, false, 1);
        let raw = b.build();
        let history = OpHistory::new(&raw);
        let attributed: Vec<(Option<usize>, Option<usize>, bool)> = history
            .writes()
            .iter()
            .map(|w| (w.operation, w.grant, w.attempt.accepted))
            .collect();
        assert_eq!(attributed, [(None, None, true), (Some(0), None, false)]);
    }

    #[test]
    fn malformed_events_are_anomalies_and_play_no_part() {
        let raw = malformed();
        let history = OpHistory::new(&raw);
        assert_eq!(history.steps().len(), raw.len());
        // Only the one good grant is a hold.
        assert_eq!(history.holds().len(), 1);
        assert_eq!(history.holds()[0].grant.fencing_token, Some(u64::MAX));
        let unknown = history
            .anomalies()
            .iter()
            .filter(|a| matches!(a.kind, AnomalyKind::UnknownOp { .. }))
            .count();
        // Two unknown names ("" and "???"), eight payloads, four phases.
        assert_eq!(unknown, 2 * 8 * 4);
        let undecodable = history
            .anomalies()
            .iter()
            .filter(|a| matches!(a.kind, AnomalyKind::Undecodable { .. }))
            .count();
        assert!(undecodable > 100, "{undecodable}");
        // Every anomaly points at an op event, and the good grant has none.
        for anomaly in history.anomalies() {
            let step = history.step(anomaly.seq).expect("a step");
            assert!(matches!(step.event.kind, EventKind::Op { .. }), "{anomaly}");
            assert_ne!(step.node(), "client-2", "{anomaly}");
        }
        // The three resource writes nobody invoked are kept, unattributed.
        assert_eq!(history.writes().len(), 3);
        assert!(history
            .writes()
            .iter()
            .all(|w| w.operation.is_none() && w.grant.is_none()));
    }

    #[test]
    fn expiries_know_fencing_counters_from_lock_keys() {
        let mut b = Builder::new();
        for key in ["lock", "lockstep:fence:lock"] {
            let kind = EventKind::Expired { key: key.to_string() };
            b.history.push(0, "redis-1", 0, 0, kind);
        }
        let raw = b.build();
        let history = OpHistory::new(&raw);
        let expiries: Vec<(&str, bool)> = history
            .steps()
            .iter()
            .filter_map(|s| match &s.kind {
                StepKind::Expired(e) => Some((e.key, e.fencing_counter)),
                _ => None,
            })
            .collect();
        assert_eq!(expiries, [("lock", false), ("lockstep:fence:lock", true)]);
    }
}
