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

use crate::lock::LockError;
use lockstep_sim::{LinkError, Node, Phase};
use serde::{Deserialize, Serialize};

/// The op names.
pub mod names {
    /// Taking the lock.
    pub const ACQUIRE: &str = "acquire";
    /// Extending the lock's TTL.
    pub const EXTEND: &str = "extend";
    /// Giving the lock up.
    pub const RELEASE: &str = "release";
    /// Reading the resource.
    pub const READ: &str = "read";
    /// Writing the resource.
    pub const WRITE: &str = "write";
    /// The lock was lost (a failed extension); a one-off `info` event.
    pub const ABORT: &str = "abort";
}

/// What an acquire asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcquireInvoke {
    /// The lock's key.
    pub key: String,
    /// The requested TTL.
    pub ttl_ms: u64,
}

/// A lock grant: what a successful acquire returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The lock's key.
    pub key: String,
    /// The random value stored under the key (identifies this grant).
    pub value: String,
    /// The fencing token, when the algorithm issues one.
    pub fencing_token: Option<u64>,
    /// How long the client may assume it holds the lock, by its own clock, from the grant.
    pub validity_ms: u64,
}

/// Names a grant in later operations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantRef {
    /// The lock's key.
    pub key: String,
    /// The grant's value.
    pub value: String,
    /// The grant's fencing token.
    pub fencing_token: Option<u64>,
}

impl From<&Grant> for GrantRef {
    fn from(g: &Grant) -> Self {
        GrantRef {
            key: g.key.clone(),
            value: g.value.clone(),
            fencing_token: g.fencing_token,
        }
    }
}

/// A resource read's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadOk {
    /// The value (`None` when never written).
    pub value: Option<i64>,
    /// The version.
    pub version: u64,
}

/// A resource write request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteInvoke {
    /// The resource key.
    pub key: String,
    /// The value written.
    pub value: i64,
    /// The fencing token sent with it.
    pub fencing_token: Option<u64>,
}

/// Why an operation failed or has an unknown outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpError {
    /// The error text.
    pub error: String,
}

/// Serialises op data (plain structs with string keys never fail to serialise).
pub fn to_data<T: Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

/// Records operations of one client into the history.
#[derive(Debug, Clone)]
pub struct Recorder {
    node: Node,
}

impl Recorder {
    /// A recorder for `node`.
    pub fn new(node: &Node) -> Self {
        Recorder { node: node.clone() }
    }

    /// Records an invoke; returns the operation's id.
    pub fn invoke(&self, op: &str, data: serde_json::Value) -> u64 {
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

    /// Records a lock error as `fail` or, when its outcome is unknown, `info`.
    pub fn complete_error(&self, id: u64, op: &str, error: &LockError) {
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

    /// Records a link error as `fail` or `info`.
    pub fn complete_link_error(&self, id: u64, op: &str, error: &LinkError) {
        self.complete_error(id, op, &LockError::from(error.clone()));
    }
}
