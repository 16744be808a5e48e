//! The client-operation vocabulary lockstep writes into the world's history.
//!
//! The world records `Op` events with free-form JSON `data`; this module fixes what lockstep's
//! workload puts there, and [`crate::history`] reads it back (nothing else parses it). Every
//! operation is an `invoke` followed by `ok`, `fail` or `info` (outcome unknown) with the same `id`.
//!
//! | op | invoke data | ok data | fail / info data |
//! |---|---|---|---|
//! | `acquire` | [`AcquireInvoke`] | [`Grant`] | [`OpError`] |
//! | `extend` | [`GrantRef`] + `ttl_ms` | [`Grant`] (renewed validity) | [`OpError`] |
//! | `release` | [`GrantRef`] | `{"released": bool}` | [`OpError`] |
//! | `read` | `{"key"}` | [`ReadOk`] | [`OpError`] |
//! | `write` | [`WriteInvoke`] | `{"version"}` | [`OpError`] (a fencing rejection is a `fail`) |
//! | `abort` | [`GrantRef`] (the lock was lost; the workload gives up the critical section) | — | — |
//!
//! A client running several tasks adds `"task": n` (1, 2, …; [`TASK_FIELD`]) to every invoke's
//! data, so the history knows which task ran each operation; completions pair by id. A write
//! the holder refused itself (its validity ran out, `refuse_write_after_validity`) is a `write`
//! invoke and a `fail` whose error begins with `HOLDER_REFUSAL`; it never reaches the resource.

use lockstep_sim::{Node, Phase};
use serde::Serialize;

pub use crate::model::op::*;

/// Serialises op data (plain structs with string keys never fail to serialise).
pub(crate) fn to_data<T: Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

/// Records operations of one client into the history.
#[derive(Debug, Clone)]
pub struct Recorder {
    node: Node,
    task: Option<u32>,
}

impl Recorder {
    /// A recorder for `node`.
    pub fn new(node: &Node) -> Self {
        Recorder {
            node: node.clone(),
            task: None,
        }
    }

    /// A recorder for task `task` (1, 2, …) of `node`: every invoke names the task.
    pub(crate) fn for_task(node: &Node, task: u32) -> Self {
        Recorder {
            node: node.clone(),
            task: Some(task),
        }
    }

    /// The task this recorder names, if any.
    pub fn task(&self) -> Option<u32> {
        self.task
    }

    /// Records an invoke; returns the operation's id.
    pub fn invoke(&self, op: &str, mut data: serde_json::Value) -> u64 {
        if let (Some(task), serde_json::Value::Object(map)) = (self.task, &mut data) {
            map.insert(TASK_FIELD.to_string(), serde_json::Value::from(task));
        }
        let id = self.node.next_op_id();
        self.node.record(lockstep_sim::EventKind::Op {
            id,
            phase: Phase::Invoke,
            op: op.to_string(),
            data,
        });
        id
    }

    /// Records the completion of operation `id`.
    pub fn complete(&self, id: u64, op: &str, phase: Phase, data: serde_json::Value) {
        self.node.record(lockstep_sim::EventKind::Op {
            id,
            phase,
            op: op.to_string(),
            data,
        });
    }

    /// Records an error as `fail` or, when its outcome is unknown, `info`.
    pub(crate) fn complete_error(&self, id: u64, op: &str, error: &dyn OpFailure) {
        let phase = if error.outcome_unknown() {
            Phase::Info
        } else {
            Phase::Fail
        };
        self.complete(
            id,
            op,
            phase,
            to_data(&OpError {
                error: error.to_string(),
            }),
        );
    }
}

/// An error an operation can end with: its text, and whether the operation may have taken
/// effect (`info`) or certainly did not (`fail`). A lock's errors are one (`crate::lock`
/// implements it); this module, below the locks, names none of them.
pub(crate) trait OpFailure: std::fmt::Display {
    /// Whether the operation may have taken effect.
    fn outcome_unknown(&self) -> bool;
}
