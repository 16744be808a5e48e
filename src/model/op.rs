//! The client-operation vocabulary: the op names and the typed data of each operation that
//! lockstep's workload writes into the world's history (see `crate::ops` for the table and the
//! recorder). A lock's [`Grant`] is part of it: it is what an acquire returns.

use serde::{Deserialize, Serialize};

/// The op names.
pub mod names {
    /// Taking the lock.
    pub(crate) const ACQUIRE: &str = "acquire";
    /// Extending the lock's TTL.
    pub(crate) const EXTEND: &str = "extend";
    /// Giving the lock up.
    pub(crate) const RELEASE: &str = "release";
    /// Reading the resource.
    pub(crate) const READ: &str = "read";
    /// Writing the resource.
    pub(crate) const WRITE: &str = "write";
    /// The lock was lost (a failed extension); a one-off `info` event.
    pub(crate) const ABORT: &str = "abort";
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
    /// The client's monotonic-clock reading (ms) at the instant the lock computed
    /// `validity_ms`: the validity counts from there. `None` when the lock did not say (the
    /// field is left out of the history then, so histories without it still decode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity_from_ms: Option<i64>,
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
    /// The value the lock actually sent to the masters for this operation, when it is not the
    /// grant's own (a lock object that keeps the value of another acquisition): a wrong-token
    /// release or extension is visible in the history. Left out when it is the grant's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_sent: Option<String>,
}

impl From<&Grant> for GrantRef {
    fn from(g: &Grant) -> Self {
        GrantRef {
            key: g.key.clone(),
            value: g.value.clone(),
            fencing_token: g.fencing_token,
            value_sent: None,
        }
    }
}

impl GrantRef {
    /// `grant`, sent with `value_sent` (recorded only when it differs from the grant's value).
    pub(crate) fn sent_with(grant: &Grant, value_sent: String) -> Self {
        GrantRef {
            value_sent: (value_sent != grant.value).then_some(value_sent),
            ..GrantRef::from(grant)
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

/// The key of an invoke's data naming the client task that ran the operation (1, 2, …), written
/// only when the client runs several tasks: histories of one-task clients do not carry it.
pub const TASK_FIELD: &str = "task";

/// How the error of a write the holder refused itself begins (its validity had run out by its
/// own clock): such a write is recorded as a `write` invoke and a `fail`, and never reaches the
/// resource.
pub(crate) const HOLDER_REFUSAL: &str = "refused by the holder";

/// Why an operation failed or has an unknown outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpError {
    /// The error text.
    pub error: String,
}

impl OpError {
    /// Whether this is the error of a write the holder refused itself (`HOLDER_REFUSAL`).
    pub fn is_holder_refusal(&self) -> bool {
        self.error.starts_with(HOLDER_REFUSAL)
    }
}
