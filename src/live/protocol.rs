//! The client protocol: JSON lines between lockstep and an adapter, over the adapter's stdin and
//! stdout (documented for adapter authors in `docs/live.md`).
//!
//! The adapter first prints a hello line, `{"hello": "<library and version>"}`. Then lockstep
//! writes one request per line and waits for the answer with the same `id` before it writes the
//! next. Requests: `acquire {key, ttl_ms}`, `extend {key, value, ttl_ms}`, `release {key,
//! value}`, `read {key, fencing_token}`, `write {key, value, fencing_token}`, and a final `quit`
//! (no answer). Answers carry a `status`: `ok` (with the operation's data), `busy` (the lock is
//! held by someone else: certainly not ours), `lost` (an extend or release found the lock gone),
//! `rejected` (the resource refused a write or read by its fencing rule), `fail` (certainly no
//! effect) or `unknown` (maybe applied: a timeout). Anything else on stdout is a protocol error;
//! an adapter's diagnostics belong on stderr.

use serde::{Deserialize, Serialize};

/// One request from lockstep to an adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Request {
    /// Take the lock `key` for `ttl_ms` (one attempt, or the library's own retries).
    Acquire {
        /// Request id, echoed in the answer.
        id: u64,
        /// The lock's key.
        key: String,
        /// The TTL, ms.
        ttl_ms: u64,
    },
    /// Extend the grant whose value is `value` to `ttl_ms` from now.
    Extend {
        /// Request id.
        id: u64,
        /// The lock's key.
        key: String,
        /// The grant's value (as the adapter reported it).
        value: String,
        /// The new TTL, ms.
        ttl_ms: u64,
    },
    /// Give the grant up.
    Release {
        /// Request id.
        id: u64,
        /// The lock's key.
        key: String,
        /// The grant's value.
        value: String,
    },
    /// Read the counter `key` at the resource (`FREAD key [token]`).
    Read {
        /// Request id.
        id: u64,
        /// The resource key.
        key: String,
        /// The grant's fencing token, if any.
        fencing_token: Option<u64>,
    },
    /// Write `value` to `key` at the resource (`FWRITE key value [token]`).
    Write {
        /// Request id.
        id: u64,
        /// The resource key.
        key: String,
        /// The value.
        value: i64,
        /// The grant's fencing token, if any.
        fencing_token: Option<u64>,
    },
    /// The run is over: close connections and exit (no answer).
    Quit,
}

impl Request {
    /// The operation's name (`acquire`, ...).
    pub fn op(&self) -> &'static str {
        match self {
            Request::Acquire { .. } => "acquire",
            Request::Extend { .. } => "extend",
            Request::Release { .. } => "release",
            Request::Read { .. } => "read",
            Request::Write { .. } => "write",
            Request::Quit => "quit",
        }
    }

    /// The request as one JSON line (with the newline).
    pub(crate) fn to_line(&self) -> String {
        // Plain data with string keys: serialising cannot fail.
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}

/// How an operation came out, as the adapter says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It succeeded.
    Ok,
    /// The lock is held by someone else.
    Busy,
    /// The lock is not ours any more (extend, release).
    Lost,
    /// The resource refused it by its fencing rule.
    Rejected,
    /// It certainly had no effect.
    Fail,
    /// It may have had an effect (a timeout after sending).
    Unknown,
}

/// One answer from an adapter.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct Answer {
    /// The request's id.
    pub id: u64,
    /// The outcome (`None` only in a malformed answer).
    pub status: Option<Status>,
    /// Acquire/extend: the grant's value. Read/write: see `number`.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
    /// Acquire: the fencing token, if the adapter took one.
    #[serde(default)]
    pub fencing_token: Option<u64>,
    /// Acquire/extend: how long the client may assume it holds the lock, ms.
    #[serde(default)]
    pub validity_ms: Option<u64>,
    /// Read/write: the resource key's version.
    #[serde(default)]
    pub version: Option<u64>,
    /// Release: whether a key was deleted (when the library says).
    #[serde(default)]
    pub released: Option<bool>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// The adapter's first line.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct Hello {
    /// The library (and version) the adapter drives.
    pub hello: String,
}

/// Parses one answer line; the error says what is wrong with it.
pub(crate) fn parse_answer(line: &str) -> Result<Answer, String> {
    let answer: Answer = serde_json::from_str(line.trim()).map_err(|e| format!("not a JSON answer ({e})"))?;
    if answer.status.is_none() {
        return Err("the answer has no \"status\"".to_string());
    }
    Ok(answer)
}

/// Parses the hello line.
pub(crate) fn parse_hello(line: &str) -> Result<Hello, String> {
    serde_json::from_str(line.trim()).map_err(|_| "expected {\"hello\": \"<library>\"} as the first line".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_tagged_json_lines() {
        let r = Request::Acquire {
            id: 3,
            key: "lock".into(),
            ttl_ms: 500,
        };
        assert_eq!(
            r.to_line(),
            "{\"op\":\"acquire\",\"id\":3,\"key\":\"lock\",\"ttl_ms\":500}\n"
        );
        assert_eq!(Request::Quit.to_line(), "{\"op\":\"quit\"}\n");
    }

    #[test]
    fn answers_parse_and_garbage_is_named() {
        let a = parse_answer(r#"{"id":3,"status":"ok","value":"abc","fencing_token":7,"validity_ms":480}"#)
            .expect("valid answer");
        assert_eq!(a.status, Some(Status::Ok));
        assert_eq!(a.fencing_token, Some(7));
        assert!(parse_answer("hello there").unwrap_err().contains("not a JSON answer"));
        assert!(parse_answer(r#"{"id":3}"#).unwrap_err().contains("status"));
        assert!(parse_answer(r#"{"id":3,"status":"maybe"}"#).is_err());
        assert!(parse_hello(r#"{"hello":"redis-py 5"}"#).is_ok());
        assert!(parse_hello("ready").is_err());
    }
}
