//! What commands reach ([`Db`]): the keyspace with its databases, the pub/sub channels and the
//! messages to deliver, the database a command runs in, and the settings handlers read
//! (encoding thresholds, keyspace-notification classes).

use super::keyspace::Keyspace;
use super::reply::Reply;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// What commands reach: the keyspace, and the pub/sub channels with the messages to deliver.
pub(crate) struct Db {
    pub(crate) ks: Keyspace,
    /// Channel -> ids of the subscribed sessions.
    pub(crate) channels: BTreeMap<Bytes, BTreeSet<i64>>,
    /// Pattern -> ids of the sessions subscribed to it (`PSUBSCRIBE`).
    pub(crate) patterns: BTreeMap<Bytes, BTreeSet<i64>>,
    /// Shard channel -> ids of the subscribed sessions (`SSUBSCRIBE`, a namespace of its own).
    pub(crate) shard_channels: BTreeMap<Bytes, BTreeSet<i64>>,
    /// Messages to push: `(session id, message)`, in publishing order.
    pub(crate) outbox: Vec<(i64, Reply)>,
    /// While a script runs: the most bytes the keyspace may hold before a command that may grow
    /// it is refused ([`MemoryShare::limit`], fixed when the script starts: nothing else runs
    /// meanwhile).
    pub(crate) memory_limit: usize,
    /// The database the running command works in: the connection's (`ClientSession::db`),
    /// or what a script `SELECT`ed for itself.
    pub(crate) selected: usize,
    /// The encoding thresholds `OBJECT ENCODING` applies (`CONFIG SET hash-max-listpack-entries`...).
    pub(crate) limits: EncodingLimits,
    /// `notify-keyspace-events` as classes ([`super::notify`]); 0: none.
    pub(crate) notify: u32,
}

impl Default for Db {
    fn default() -> Self {
        Db {
            ks: Keyspace::default(),
            channels: BTreeMap::new(),
            patterns: BTreeMap::new(),
            shard_channels: BTreeMap::new(),
            outbox: Vec::new(),
            memory_limit: usize::MAX,
            selected: 0,
            limits: EncodingLimits::default(),
            notify: 0,
        }
    }
}

/// The encoding thresholds `OBJECT ENCODING` applies (Redis converts a small listpack or intset
/// to a hashtable or skiplist past them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EncodingLimits {
    pub(crate) hash_entries: usize,
    pub(crate) hash_value: usize,
    pub(crate) set_intset_entries: usize,
    pub(crate) zset_entries: usize,
    pub(crate) zset_value: usize,
}

impl Default for EncodingLimits {
    fn default() -> Self {
        EncodingLimits {
            hash_entries: 128,
            hash_value: 64,
            set_intset_entries: 512,
            zset_entries: 128,
            zset_value: 64,
        }
    }
}
