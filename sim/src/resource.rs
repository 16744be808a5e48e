//! The fenced resource: a key-value store (integer values) reached over the simulated network,
//! which accepts or rejects each write by its fencing token.
//!
//! Modes:
//! - `unfenced`: every write is accepted (a storage service that knows nothing of locks);
//! - `fenced`: a token lower than the highest accepted for the key is rejected; an equal token is
//!   the same holder writing again and is accepted;
//! - `strict`: an equal token is rejected too (the `token <= highestSeen` rule).
//!
//! A write without a token is accepted only when unfenced. Every attempt, accepted or rejected,
//! is recorded in the history with its token and value. Values are integers because lockstep's
//! workload is a counter (so lost updates show); versions count accepted writes per key.
//!
//! Reads may carry a token too. When fenced (either mode), a read with a token lower than the
//! highest seen is rejected, and an accepted read raises the highest token seen: once the holder
//! of token 10 has read, a delayed write of token 9 can no longer land between that read and
//! token 10's write (a lost update that write-only fencing lets through). In `strict` mode the
//! holder's own read does not count against its write: a write must be above every earlier
//! *write* token and at least every read token.
//!
//! Wire protocol (RESP, so redis-rs is the client): `FWRITE key value [token]` answers the new
//! version or the error `FENCED ...`; `FREAD key [token]` answers `[value or nil, version]` or
//! `FENCED ...`.

use crate::node::Node;
use crate::redis::link::{LinkError, LinkTimeouts, RedisLink};
use crate::serve::Handler;
use bytes::Bytes;
use lockstep_history::history::EventKind;
use lockstep_redis::Reply;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The TCP port the resource listens on.
pub const RESOURCE_PORT: u16 = 7000;

/// How the resource judges fencing tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FencingMode {
    /// Accept every write.
    #[default]
    Unfenced,
    /// Reject a token lower than the highest accepted.
    Fenced,
    /// Reject a token lower than or equal to the highest accepted.
    Strict,
}

impl FencingMode {
    /// Every mode.
    pub const ALL: [FencingMode; 3] = [FencingMode::Unfenced, FencingMode::Fenced, FencingMode::Strict];

    /// The mode of that name (`unfenced`, `fenced`, `strict`), if any.
    pub fn from_name(name: &str) -> Option<FencingMode> {
        FencingMode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The mode's name as written in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            FencingMode::Unfenced => "unfenced",
            FencingMode::Fenced => "fenced",
            FencingMode::Strict => "strict",
        }
    }
}

/// One key's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slot {
    /// The value (`None` until the first accepted write).
    pub value: Option<i64>,
    /// Accepted writes so far.
    pub version: u64,
    /// The highest token seen in an accepted read or write.
    pub highest_token: Option<u64>,
    /// The highest token of an accepted write.
    pub highest_write_token: Option<u64>,
}

/// The outcome of one write attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteVerdict {
    /// Whether it was accepted.
    pub accepted: bool,
    /// The key's version after the attempt.
    pub version: u64,
    /// The highest token accepted before the attempt.
    pub highest_token_before: Option<u64>,
}

/// The store and its rule, without any networking.
#[derive(Debug, Clone, Default)]
pub struct FencedStore {
    mode: FencingMode,
    slots: BTreeMap<String, Slot>,
}

impl FencedStore {
    /// An empty store judging by `mode`.
    pub fn new(mode: FencingMode) -> Self {
        FencedStore {
            mode,
            slots: BTreeMap::new(),
        }
    }

    /// Attempts a write.
    pub fn write(&mut self, key: &str, value: i64, token: Option<u64>) -> WriteVerdict {
        let slot = self.slots.entry(key.to_string()).or_default();
        let before = slot.highest_token;
        let at_least = |t: u64, h: Option<u64>| h.is_none_or(|h| t >= h);
        let above = |t: u64, h: Option<u64>| h.is_none_or(|h| t > h);
        let accepted = match (self.mode, token) {
            (FencingMode::Unfenced, _) => true,
            (_, None) => false,
            (FencingMode::Fenced, Some(t)) => at_least(t, before),
            (FencingMode::Strict, Some(t)) => at_least(t, before) && above(t, slot.highest_write_token),
        };
        if accepted {
            slot.value = Some(value);
            slot.version += 1;
            if let Some(t) = token {
                slot.highest_token = Some(before.map_or(t, |h| h.max(t)));
                slot.highest_write_token = Some(slot.highest_write_token.map_or(t, |h| h.max(t)));
            }
        }
        WriteVerdict {
            accepted,
            version: slot.version,
            highest_token_before: before,
        }
    }

    /// Reads a key without a token (always allowed; changes nothing).
    pub fn read(&self, key: &str) -> Slot {
        self.slots.get(key).copied().unwrap_or_default()
    }

    /// Reads a key on behalf of the holder of `token`. When fenced, a token below the highest
    /// seen is refused (`None`), and an accepted one raises the highest seen.
    pub(crate) fn read_fenced(&mut self, key: &str, token: Option<u64>) -> Option<Slot> {
        if self.mode == FencingMode::Unfenced {
            return Some(self.read(key));
        }
        let Some(t) = token else {
            return Some(self.read(key));
        };
        let slot = self.slots.entry(key.to_string()).or_default();
        if slot.highest_token.is_some_and(|h| t < h) {
            return None;
        }
        slot.highest_token = Some(slot.highest_token.map_or(t, |h| h.max(t)));
        Some(*slot)
    }
}

fn arg_str(arg: &Bytes) -> Option<&str> {
    std::str::from_utf8(arg).ok()
}

fn parse_int<T: std::str::FromStr>(arg: &Bytes) -> Option<T> {
    arg_str(arg)?.parse().ok()
}

/// The command handler of a resource node serving `store`.
pub(crate) fn handler(node: Node, store: Rc<RefCell<FencedStore>>) -> Handler {
    Rc::new(move |_conn, peer, args| {
        execute(&store, peer, args, &mut |event| {
            node.record(event);
        })
    })
}

/// Runs one resource command (`FWRITE key value [token]`, `FREAD key [token]`, and what
/// redis-rs sends while connecting) from `peer` against `store`, handing each judged write or
/// read to `record`. The simulated resource and the live one (real TCP) both serve through it.
pub fn execute(store: &RefCell<FencedStore>, peer: &str, args: &[Bytes], record: &mut dyn FnMut(EventKind)) -> Reply {
    let name = args
        .first()
        .and_then(arg_str)
        .map(|s| s.to_ascii_uppercase())
        .unwrap_or_default();
    match (name.as_str(), args.len()) {
        ("FWRITE", 3 | 4) => {
            let (Some(key), Some(value)) = (arg_str(&args[1]), parse_int::<i64>(&args[2])) else {
                return Reply::Error("ERR value is not an integer or out of range".into());
            };
            let token = match args.get(3) {
                None => None,
                Some(t) => match parse_int::<u64>(t) {
                    Some(t) => Some(t),
                    None => return Reply::Error("ERR token is not an integer or out of range".into()),
                },
            };
            let verdict = store.borrow_mut().write(key, value, token);
            record(EventKind::ResourceWrite {
                client: peer.to_string(),
                key: key.to_string(),
                value,
                token,
                accepted: verdict.accepted,
                version: verdict.version,
                highest_token_before: verdict.highest_token_before,
            });
            if verdict.accepted {
                Reply::Integer(verdict.version as i64)
            } else {
                Reply::Error(format!(
                    "FENCED token {} rejected: highest accepted is {}",
                    token.map_or("none".to_string(), |t| t.to_string()),
                    verdict
                        .highest_token_before
                        .map_or("none".to_string(), |t| t.to_string())
                ))
            }
        }
        ("FREAD", 2 | 3) => {
            let Some(key) = arg_str(&args[1]) else {
                return Reply::Error("ERR invalid key".into());
            };
            let token = match args.get(2) {
                None => None,
                Some(t) => match parse_int::<u64>(t) {
                    Some(t) => Some(t),
                    None => return Reply::Error("ERR token is not an integer or out of range".into()),
                },
            };
            let highest_before = store.borrow().read(key).highest_token;
            let read = store.borrow_mut().read_fenced(key, token);
            let slot = read.unwrap_or_else(|| store.borrow().read(key));
            record(EventKind::ResourceRead {
                client: peer.to_string(),
                key: key.to_string(),
                value: slot.value,
                version: slot.version,
                token,
                accepted: read.is_some(),
            });
            match read {
                Some(slot) => Reply::Array(Some(vec![
                    slot.value.map_or(Reply::Bulk(None), Reply::Integer),
                    Reply::Integer(slot.version as i64),
                ])),
                None => Reply::Error(format!(
                    "FENCED token {} rejected: highest seen is {}",
                    token.map_or("none".to_string(), |t| t.to_string()),
                    highest_before.map_or("none".to_string(), |t| t.to_string())
                )),
            }
        }
        // What redis-rs sends while connecting, and health checks.
        ("CLIENT" | "SELECT", _) => Reply::Status("OK".into()),
        ("PING", _) => Reply::Status("PONG".into()),
        ("FWRITE" | "FREAD", _) => Reply::Error(format!(
            "ERR wrong number of arguments for '{}' command",
            name.to_ascii_lowercase()
        )),
        _ => Reply::Error(format!("ERR unknown command '{name}'")),
    }
}

/// What a client learns from a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Accepted; the key's new version.
    Accepted {
        /// The version after the write.
        version: u64,
    },
    /// Rejected by the fencing rule.
    Rejected {
        /// The resource's explanation.
        message: String,
    },
}

/// A client of the fenced resource, over a reconnecting link.
#[derive(Debug, Clone)]
pub struct ResourceClient {
    link: RedisLink,
}

impl ResourceClient {
    /// A client on `node` for the resource at `host`.
    pub fn new(node: &Node, host: &str, timeouts: LinkTimeouts) -> Self {
        ResourceClient {
            link: RedisLink::new(node, host, RESOURCE_PORT, timeouts),
        }
    }

    /// Writes `value` to `key` with an optional fencing token.
    pub async fn write(&self, key: &str, value: i64, token: Option<u64>) -> Result<WriteOutcome, LinkError> {
        let mut cmd = redis::cmd("FWRITE");
        cmd.arg(key).arg(value);
        if let Some(t) = token {
            cmd.arg(t);
        }
        match self.link.query::<u64>(&cmd).await {
            Ok(version) => Ok(WriteOutcome::Accepted { version }),
            Err(LinkError::Server { message, .. }) if message.starts_with("FENCED") => {
                Ok(WriteOutcome::Rejected { message })
            }
            Err(e) => Err(e),
        }
    }

    /// Reads `key` (with the reader's fencing token, if any): its value and version, or
    /// `LinkError::Server` with a `FENCED ...` message when the token is stale.
    pub async fn read(&self, key: &str, token: Option<u64>) -> Result<(Option<i64>, u64), LinkError> {
        let mut cmd = redis::cmd("FREAD");
        cmd.arg(key);
        if let Some(t) = token {
            cmd.arg(t);
        }
        self.link.query(&cmd).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lessons_example_in_strict_mode() {
        let mut store = FencedStore::new(FencingMode::Strict);
        assert!(store.write("k", 1, Some(33)).accepted);
        assert!(!store.write("k", 2, Some(32)).accepted);
        assert!(!store.write("k", 2, Some(33)).accepted, "strict rejects an equal token");
        assert!(store.write("k", 3, Some(34)).accepted);
        let slot = store.read("k");
        assert_eq!((slot.value, slot.version, slot.highest_token), (Some(3), 2, Some(34)));
    }

    #[test]
    fn a_fenced_read_shuts_out_a_late_write_of_an_older_token() {
        for mode in [FencingMode::Fenced, FencingMode::Strict] {
            let mut store = FencedStore::new(mode);
            assert!(store.write("k", 1, Some(9)).accepted);
            // Token 10 reads before token 9's delayed write lands: that write must be refused.
            assert!(store.read_fenced("k", Some(10)).is_some());
            assert!(!store.write("k", 9, Some(9)).accepted, "{mode:?}");
            assert!(store.read_fenced("k", Some(8)).is_none(), "a stale reader is refused");
            // The holder of 10 still writes after its own read, in both modes.
            assert!(store.write("k", 2, Some(10)).accepted, "{mode:?}");
        }
        let mut unfenced = FencedStore::new(FencingMode::Unfenced);
        assert!(unfenced.read_fenced("k", Some(10)).is_some());
        assert!(unfenced.write("k", 1, Some(9)).accepted);
    }

    #[test]
    fn fenced_accepts_equal_and_rejects_lower() {
        let mut store = FencedStore::new(FencingMode::Fenced);
        assert!(store.write("k", 1, Some(33)).accepted);
        assert!(store.write("k", 2, Some(33)).accepted);
        let rejected = store.write("k", 3, Some(32));
        assert!(!rejected.accepted);
        assert_eq!(rejected.highest_token_before, Some(33));
        assert!(!store.write("k", 4, None).accepted, "no token, no write");
        assert_eq!(store.read("k").value, Some(2));
        // Tokens are per key.
        assert!(store.write("other", 1, Some(1)).accepted);
    }

    #[test]
    fn unfenced_accepts_everything() {
        let mut store = FencedStore::new(FencingMode::Unfenced);
        assert!(store.write("k", 1, Some(34)).accepted);
        assert!(store.write("k", 2, Some(33)).accepted);
        assert!(store.write("k", 3, None).accepted);
        assert_eq!(store.read("k").version, 3);
        assert_eq!(store.read("missing"), Slot::default());
    }
}
