//! The typed vocabulary of client operations, read back from the history's `Op` events.
//!
//! [`crate::ops`] fixes what the workload writes into an `Op` event's JSON `data`; this module
//! reads it back as types, once: an operation's name ([`OpName`]), what was invoked ([`LockOp`])
//! and what each completion carried ([`OpData`]). `decode` is the only place op data is parsed;
//! data that does not fit is an error naming what was expected (the builder records it as an
//! anomaly). Left out: any interpretation across events (pairing, grants, holds): that is the
//! [`OpHistory`](super::OpHistory) builder.

use crate::ops::{names, AcquireInvoke, Grant, GrantRef, OpError, ReadOk, WriteInvoke};
use lockstep_sim::Phase;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The name of a client operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpName {
    /// Taking the lock.
    Acquire,
    /// Extending the lock's TTL.
    Extend,
    /// Giving the lock up.
    Release,
    /// Reading the resource.
    Read,
    /// Writing the resource.
    Write,
    /// The lock was lost; the workload gives up the critical section.
    Abort,
}

impl OpName {
    /// Every op name, in vocabulary order.
    pub const ALL: [OpName; 6] = [
        OpName::Acquire,
        OpName::Extend,
        OpName::Release,
        OpName::Read,
        OpName::Write,
        OpName::Abort,
    ];

    /// The name as recorded in the history (`acquire`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            OpName::Acquire => names::ACQUIRE,
            OpName::Extend => names::EXTEND,
            OpName::Release => names::RELEASE,
            OpName::Read => names::READ,
            OpName::Write => names::WRITE,
            OpName::Abort => names::ABORT,
        }
    }

    /// The op called `name` in the history, if the vocabulary has it.
    pub fn parse(name: &str) -> Option<OpName> {
        OpName::ALL.into_iter().find(|op| op.as_str() == name)
    }
}

impl std::fmt::Display for OpName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an `extend` asks for: the grant to extend and the new TTL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtendInvoke {
    /// The lock's key.
    pub key: String,
    /// The grant's value.
    pub value: String,
    /// The grant's fencing token.
    pub fencing_token: Option<u64>,
    /// The requested TTL.
    pub ttl_ms: u64,
    /// The value the lock sent, when it is not the grant's (see [`GrantRef::value_sent`]).
    #[serde(default)]
    pub value_sent: Option<String>,
}

impl ExtendInvoke {
    /// The grant it names.
    pub fn grant(&self) -> GrantRef {
        GrantRef {
            key: self.key.clone(),
            value: self.value.clone(),
            fencing_token: self.fencing_token,
            value_sent: self.value_sent.clone(),
        }
    }
}

/// What a `read` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadInvoke {
    /// The resource key.
    pub key: String,
    /// The reader's fencing token.
    pub fencing_token: Option<u64>,
}

/// A `release`'s result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Released {
    /// Whether a key was deleted (`false`: the lock was already gone).
    pub released: bool,
}

/// A `write`'s result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteOk {
    /// The resource key's version after the write.
    pub version: u64,
}

/// Why a lock was lost (an `abort`'s `info`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortReason {
    /// The error that lost it.
    pub reason: String,
}

/// An operation as invoked: what the client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOp {
    /// Take the lock.
    Acquire(AcquireInvoke),
    /// Extend a grant.
    Extend(ExtendInvoke),
    /// Give a grant up.
    Release(GrantRef),
    /// Read the resource.
    Read(ReadInvoke),
    /// Write the resource.
    Write(WriteInvoke),
    /// The grant was lost; the critical section is abandoned.
    Abort(GrantRef),
}

impl LockOp {
    /// The operation's name.
    pub fn name(&self) -> OpName {
        match self {
            LockOp::Acquire(_) => OpName::Acquire,
            LockOp::Extend(_) => OpName::Extend,
            LockOp::Release(_) => OpName::Release,
            LockOp::Read(_) => OpName::Read,
            LockOp::Write(_) => OpName::Write,
            LockOp::Abort(_) => OpName::Abort,
        }
    }
}

/// The typed data of one `Op` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpData {
    /// An invoke: what was asked.
    Invoke(LockOp),
    /// An `acquire` or `extend` `ok`: the (renewed) grant.
    Granted(Grant),
    /// A `release` `ok`.
    Released(Released),
    /// A `read` `ok`.
    Read(ReadOk),
    /// A `write` `ok`.
    Written(WriteOk),
    /// A `fail` or `info` (other than an abort's): the error.
    Error(OpError),
    /// An `abort`'s `info`: why the lock was lost.
    Aborted(AbortReason),
    /// An `abort` completion naming the grant that was lost (the one-off form of an abort).
    Lost(GrantRef),
}

fn parse<T: DeserializeOwned>(data: &serde_json::Value) -> Option<T> {
    T::deserialize(data).ok()
}

/// Decodes the data of an `op` event in `phase` as [`crate::ops`] fixes it; `Err` names the
/// shape that was expected and did not fit.
pub(crate) fn decode(op: OpName, phase: Phase, data: &serde_json::Value) -> Result<OpData, &'static str> {
    let decoded = match (op, phase) {
        (OpName::Acquire, Phase::Invoke) => parse(data).map(LockOp::Acquire).map(OpData::Invoke),
        (OpName::Extend, Phase::Invoke) => parse(data).map(LockOp::Extend).map(OpData::Invoke),
        (OpName::Release, Phase::Invoke) => parse(data).map(LockOp::Release).map(OpData::Invoke),
        (OpName::Read, Phase::Invoke) => parse(data).map(LockOp::Read).map(OpData::Invoke),
        (OpName::Write, Phase::Invoke) => parse(data).map(LockOp::Write).map(OpData::Invoke),
        (OpName::Abort, Phase::Invoke) => parse(data).map(LockOp::Abort).map(OpData::Invoke),
        (OpName::Acquire | OpName::Extend, Phase::Ok) => parse(data).map(OpData::Granted),
        (OpName::Release, Phase::Ok) => parse(data).map(OpData::Released),
        (OpName::Read, Phase::Ok) => parse(data).map(OpData::Read),
        (OpName::Write, Phase::Ok) => parse(data).map(OpData::Written),
        (OpName::Abort, phase) => parse(data).map(OpData::Lost).or_else(|| {
            (phase == Phase::Info)
                .then(|| parse(data).map(OpData::Aborted))
                .flatten()
        }),
        (_, Phase::Fail | Phase::Info) => parse(data).map(OpData::Error),
    };
    decoded.ok_or_else(|| expected(op, phase))
}

/// The shape `decode` expects for `op` in `phase`.
fn expected(op: OpName, phase: Phase) -> &'static str {
    match (op, phase) {
        (OpName::Acquire, Phase::Invoke) => "{key, ttl_ms}",
        (OpName::Extend, Phase::Invoke) => "{key, value, fencing_token, ttl_ms}",
        (OpName::Release | OpName::Abort, Phase::Invoke) => "{key, value, fencing_token}",
        (OpName::Read, Phase::Invoke) => "{key, fencing_token}",
        (OpName::Write, Phase::Invoke) => "{key, value, fencing_token}",
        (OpName::Acquire | OpName::Extend, Phase::Ok) => "{key, value, fencing_token, validity_ms}",
        (OpName::Release, Phase::Ok) => "{released}",
        (OpName::Read, Phase::Ok) => "{value, version}",
        (OpName::Write, Phase::Ok) => "{version}",
        (OpName::Abort, Phase::Info) => "{key, value, fencing_token} or {reason}",
        (OpName::Abort, _) => "{key, value, fencing_token}",
        (_, _) => "{error}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip() {
        for op in OpName::ALL {
            assert_eq!(OpName::parse(op.as_str()), Some(op));
        }
        assert_eq!(OpName::parse("???"), None);
        assert_eq!(OpName::Acquire.to_string(), "acquire");
    }

    #[test]
    fn decodes_the_workloads_shapes() {
        let extend = json!({ "key": "lock", "value": "v", "fencing_token": 3, "ttl_ms": 100 });
        let Ok(OpData::Invoke(LockOp::Extend(e))) = decode(OpName::Extend, Phase::Invoke, &extend) else {
            panic!("extend invoke");
        };
        assert_eq!(e.grant().fencing_token, Some(3));
        assert_eq!(
            decode(OpName::Release, Phase::Ok, &json!({ "released": false })),
            Ok(OpData::Released(Released { released: false }))
        );
        assert_eq!(
            decode(OpName::Abort, Phase::Info, &json!({ "reason": "lost" })),
            Ok(OpData::Aborted(AbortReason { reason: "lost".into() }))
        );
        assert_eq!(
            decode(OpName::Write, Phase::Fail, &json!({ "error": "stale token" })),
            Ok(OpData::Error(OpError {
                error: "stale token".into()
            }))
        );
        let read = json!({ "key": "counter", "fencing_token": null });
        assert!(matches!(
            decode(OpName::Read, Phase::Invoke, &read),
            Ok(OpData::Invoke(LockOp::Read(_)))
        ));
    }

    #[test]
    fn misfits_name_what_was_expected() {
        assert_eq!(
            decode(OpName::Acquire, Phase::Ok, &json!(42)),
            Err("{key, value, fencing_token, validity_ms}")
        );
        assert_eq!(
            decode(OpName::Abort, Phase::Ok, &json!({ "reason": "x" })),
            Err("{key, value, fencing_token}")
        );
        let lost = json!({ "key": "lock", "value": "v", "fencing_token": null });
        assert!(matches!(decode(OpName::Abort, Phase::Info, &lost), Ok(OpData::Lost(_))));
        assert_eq!(decode(OpName::Write, Phase::Info, &json!(null)), Err("{error}"));
    }
}
