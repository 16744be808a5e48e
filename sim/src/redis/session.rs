//! The state of one client connection that commands read and change: its id and name, its
//! library, its open transaction and watched keys, its subscriptions and its protocol.

use bytes::Bytes;
use std::collections::BTreeSet;

/// Connection-scoped state (`CLIENT SETNAME`, `CLIENT SETINFO`, `HELLO`). The engine keeps one
/// default session for [`RedisEngine::execute`]; a server that wants per-connection names uses
/// [`RedisEngine::execute_as`] with one session per connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientSession {
    /// The id `CLIENT ID` and `HELLO` report.
    pub id: i64,
    /// The name set by `CLIENT SETNAME` / `HELLO ... SETNAME`.
    pub name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-NAME`.
    pub lib_name: Option<Bytes>,
    /// `CLIENT SETINFO LIB-VER`.
    pub lib_ver: Option<Bytes>,
    /// The commands queued since `MULTI`; `None` outside a transaction.
    pub multi: Option<Vec<Vec<Bytes>>>,
    /// Whether a command was refused while queueing (`EXEC` then answers `EXECABORT`).
    pub multi_error: bool,
    /// The keys this connection `WATCH`es.
    pub watched: Vec<Bytes>,
    /// The channels this connection is subscribed to (RESP2 subscribed mode when not empty).
    pub subscriptions: BTreeSet<Bytes>,
    /// The patterns this connection is subscribed to (`PSUBSCRIBE`).
    pub patterns: BTreeSet<Bytes>,
    /// Whether the connection negotiated RESP3 (`HELLO 3`); the server's encoder
    /// ([`super::ReplyEncoder`]) writes the replies accordingly.
    pub resp3: bool,
}

impl ClientSession {
    /// A session with the given client id and no name.
    pub fn new(id: i64) -> Self {
        ClientSession { id, ..Self::default() }
    }

    /// Whether the connection is inside `MULTI`.
    pub fn in_multi(&self) -> bool {
        self.multi.is_some()
    }

    /// Channels and patterns subscribed to (the count pub/sub confirmations carry).
    pub fn subscription_count(&self) -> usize {
        self.subscriptions.len() + self.patterns.len()
    }

    /// Marks the open transaction as failed (a command refused while queueing, e.g. a write
    /// refused by a replica): `EXEC` will answer `EXECABORT`.
    pub(crate) fn flag_transaction(&mut self) {
        if self.multi.is_some() {
            self.multi_error = true;
        }
    }
}
