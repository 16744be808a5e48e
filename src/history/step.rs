//! One history event read as a type: a [`Step`].
//!
//! [`Step::of`] classifies a single event on its own, without looking at any other: a client
//! operation's invoke or completion with its typed data, a Redis command, a key expiry (the
//! lock's key or a fencing counter), a write or read at the resource, a fault, a resumption, a
//! note. What does not fit the vocabulary is kept as a step and reported as an [`Anomaly`].
//! Left out: pairing, grants and attribution, which need the whole history (see
//! [`OpHistory`](super::OpHistory)).

use super::op::{decode, OpData, OpName};
use crate::lock::fencing;
use lockstep_sim::{Event, EventKind, Fault, Phase};

/// The task an op's data names (`"task": n`), if any.
fn data_task(data: &serde_json::Value) -> Option<u32> {
    data.get(crate::ops::TASK_FIELD)
        .and_then(serde_json::Value::as_u64)
        .and_then(|task| u32::try_from(task).ok())
}

/// One event of the history, typed.
#[derive(Debug, Clone)]
pub struct Step<'h> {
    /// The raw event (for `seq`, `at_us`, `node`, and witnesses).
    pub event: &'h Event,
    /// What it is.
    pub kind: StepKind<'h>,
}

/// What a history event is.
#[derive(Debug, Clone)]
pub enum StepKind<'h> {
    /// A client operation's invoke or completion.
    Op(OpStep),
    /// An `Op` event whose name is not in the vocabulary (an [`Anomaly`]).
    UnknownOp {
        /// The operation's id.
        id: u64,
        /// Its phase.
        phase: Phase,
        /// The unknown name.
        name: &'h str,
    },
    /// A Redis master applied a command (or rejected it).
    Command {
        /// The connection it arrived on (0: the replication stream).
        conn: u64,
        /// The command and its arguments.
        args: &'h [String],
        /// The reply, on one line.
        reply: &'h str,
        /// What it did to each key it changed (empty for reads and refused commands).
        effects: &'h [lockstep_sim::KeyEffect],
        /// The node that sent it, when recorded.
        client: Option<&'h str>,
    },
    /// A key expired on a master.
    Expired(Expiry<'h>),
    /// A write attempt at the resource.
    ResourceWrite(WriteAttempt<'h>),
    /// A read at the resource.
    ResourceRead(ReadAttempt<'h>),
    /// A fault was applied.
    Fault(&'h Fault),
    /// A paused node resumed.
    Resumed,
    /// A note (from the world, or a server's deployment event).
    Note(&'h str),
    /// An event kind this reader does not know.
    Other,
}

/// A client operation's event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpStep {
    /// The operation's id, shared by its invoke and its completion.
    pub id: u64,
    /// Its name.
    pub op: OpName,
    /// Invoke, ok, fail or info.
    pub phase: Phase,
    /// Its data, typed; `None` when it did not fit (an [`Anomaly`]).
    pub data: Option<OpData>,
    /// The client task that ran it, when the client runs several and this is an invoke (the
    /// data's `task`, see [`crate::ops`]).
    pub task: Option<u32>,
}

/// A key expiry on a master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry<'h> {
    /// The key.
    pub key: &'h str,
    /// Whether it is a fencing-token counter (`fencing::COUNTER_KEY_PREFIX`) rather than a
    /// lock key.
    pub fencing_counter: bool,
}

/// A write attempt at the resource, as the resource judged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteAttempt<'h> {
    /// The node the write came from.
    pub client: &'h str,
    /// The key written.
    pub key: &'h str,
    /// The value written.
    pub value: i64,
    /// The fencing token it carried.
    pub token: Option<u64>,
    /// Whether the resource accepted it.
    pub accepted: bool,
    /// The key's version after the attempt.
    pub version: u64,
    /// The highest token accepted for this key before it.
    pub highest_token_before: Option<u64>,
}

/// A read at the resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadAttempt<'h> {
    /// The node the read came from.
    pub client: &'h str,
    /// The key read.
    pub key: &'h str,
    /// Its value, if it exists.
    pub value: Option<i64>,
    /// Its version.
    pub version: u64,
    /// The reader's fencing token.
    pub token: Option<u64>,
    /// Whether the resource served it.
    pub accepted: bool,
}

/// Something in the history that does not fit the operation vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anomaly {
    /// The event's position.
    pub seq: u64,
    /// What is wrong with it.
    pub kind: AnomalyKind,
}

/// What is wrong with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnomalyKind {
    /// An `Op` event with a name outside the vocabulary.
    UnknownOp {
        /// The name.
        name: String,
    },
    /// Op data that does not have the shape its op and phase call for.
    Undecodable {
        /// The op.
        op: OpName,
        /// The phase.
        phase: Phase,
        /// The shape expected.
        expected: &'static str,
    },
    /// A completion with no open invoke of that id by that process.
    CompletionWithoutInvoke {
        /// The op.
        op: OpName,
        /// The id.
        id: u64,
    },
    /// A completion whose op differs from its invoke's.
    CompletionMismatch {
        /// The op invoked.
        invoked: OpName,
        /// The op completed.
        completed: OpName,
        /// The id.
        id: u64,
    },
    /// An invoke reusing the id of an operation still open (the earlier one stays open).
    DuplicateInvoke {
        /// The op.
        op: OpName,
        /// The id.
        id: u64,
    },
}

impl std::fmt::Display for Anomaly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "seq {}: ", self.seq)?;
        match &self.kind {
            AnomalyKind::UnknownOp { name } => write!(f, "unknown op {name:?}"),
            AnomalyKind::Undecodable { op, phase, expected } => {
                write!(f, "{op} {phase:?} data is not {expected}")
            }
            AnomalyKind::CompletionWithoutInvoke { op, id } => {
                write!(f, "{op} completion of id {id} without an invoke")
            }
            AnomalyKind::CompletionMismatch { invoked, completed, id } => {
                write!(f, "id {id} invoked as {invoked} but completed as {completed}")
            }
            AnomalyKind::DuplicateInvoke { op, id } => write!(f, "{op} invoke reuses the open id {id}"),
        }
    }
}

impl<'h> Step<'h> {
    /// `event` read on its own, with the anomaly it shows, if any.
    pub fn of(event: &'h Event) -> (Step<'h>, Option<Anomaly>) {
        let mut anomaly = None;
        let kind = match &event.kind {
            EventKind::Op { id, phase, op, data } => match OpName::parse(op) {
                Some(name) => {
                    let data_json = data;
                    let data = match decode(name, *phase, data) {
                        Ok(data) => Some(data),
                        Err(expected) => {
                            anomaly = Some(AnomalyKind::Undecodable {
                                op: name,
                                phase: *phase,
                                expected,
                            });
                            None
                        }
                    };
                    let task = data_task(data_json);
                    StepKind::Op(OpStep {
                        id: *id,
                        op: name,
                        phase: *phase,
                        data,
                        task,
                    })
                }
                None => {
                    anomaly = Some(AnomalyKind::UnknownOp { name: op.clone() });
                    StepKind::UnknownOp {
                        id: *id,
                        phase: *phase,
                        name: op,
                    }
                }
            },
            EventKind::Command {
                conn,
                args,
                reply,
                effects,
                client,
            } => StepKind::Command {
                conn: *conn,
                args,
                reply,
                effects,
                client: client.as_deref(),
            },
            EventKind::Expired { key } => StepKind::Expired(Expiry {
                key,
                fencing_counter: fencing::is_counter_key(key),
            }),
            EventKind::ResourceWrite {
                client,
                key,
                value,
                token,
                accepted,
                version,
                highest_token_before,
            } => StepKind::ResourceWrite(WriteAttempt {
                client,
                key,
                value: *value,
                token: *token,
                accepted: *accepted,
                version: *version,
                highest_token_before: *highest_token_before,
            }),
            EventKind::ResourceRead {
                client,
                key,
                value,
                version,
                token,
                accepted,
            } => StepKind::ResourceRead(ReadAttempt {
                client,
                key,
                value: *value,
                version: *version,
                token: *token,
                accepted: *accepted,
            }),
            EventKind::Fault { fault } => StepKind::Fault(fault),
            EventKind::Resumed => StepKind::Resumed,
            EventKind::Note { text } => StepKind::Note(text),
            // Event kinds added to the world later read as `Other` until they are typed here.
            #[allow(unreachable_patterns)]
            _ => StepKind::Other,
        };
        let anomaly = anomaly.map(|kind| Anomaly { seq: event.seq, kind });
        (Step { event, kind }, anomaly)
    }

    /// The op step, when it is one.
    pub fn op(&self) -> Option<&OpStep> {
        match &self.kind {
            StepKind::Op(op) => Some(op),
            _ => None,
        }
    }

    /// The node where it happened (for an op: the process that ran it).
    pub fn node(&self) -> &'h str {
        &self.event.node
    }
}
