//! The state of one client connection that commands read and change: its id and name, its
//! library, its selected database, whether it authenticated, its open transaction and watched
//! keys, its subscriptions and its protocol.

use bytes::Bytes;
use std::collections::BTreeSet;

/// Connection-scoped state (`CLIENT SETNAME`, `CLIENT SETINFO`, `HELLO`). The engine keeps one
/// default session for [`RedisEngine::execute`]; a server that wants per-connection names uses
/// [`RedisEngine::execute_as`] with one session per connection.
///
/// [`RedisEngine::execute`]: crate::RedisEngine::execute
/// [`RedisEngine::execute_as`]: crate::RedisEngine::execute_as
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
    /// The keys this connection `WATCH`es, with their database.
    pub watched: Vec<(usize, Bytes)>,
    /// The database `SELECT` chose (0 to 15); commands, `WATCH`, `MULTI` and scripts work in it.
    pub db: usize,
    /// Whether the connection may run commands while `requirepass` is set: `None` until its
    /// first command, which decides it (authenticated when no password is set then, as Redis
    /// decides when the connection is accepted); `AUTH` or `HELLO ... AUTH` with the password
    /// sets it.
    pub authenticated: Option<bool>,
    /// The channels this connection is subscribed to (RESP2 subscribed mode when not empty).
    pub subscriptions: BTreeSet<Bytes>,
    /// The patterns this connection is subscribed to (`PSUBSCRIBE`).
    pub patterns: BTreeSet<Bytes>,
    /// The shard channels this connection is subscribed to (`SSUBSCRIBE`): a namespace apart
    /// from [`ClientSession::subscriptions`], counted apart in the confirmations.
    pub shard_subscriptions: BTreeSet<Bytes>,
    /// Whether the connection negotiated RESP3 (`HELLO 3`); the server's encoder
    /// ([`super::ReplyEncoder`]) writes the replies accordingly.
    pub resp3: bool,
    /// `CLIENT REPLY ON|OFF|SKIP`: whether the server writes this connection's replies.
    pub reply_mode: ReplyMode,
    /// The peer's address as `CLIENT LIST` shows it (`addr=`) and `CLIENT KILL ADDR` matches it:
    /// `ip:port` of a real socket, `<peer node>:<connection id>` of a simulated connection;
    /// `None`: `127.0.0.1:0`.
    pub addr: Option<String>,
    /// The local address the connection reached (`laddr=`); `None`: `127.0.0.1:6379`.
    pub laddr: Option<String>,
}

/// What `CLIENT REPLY` set: the server writes every reply (`On`), none (`Off`), or none for the
/// next command (`Skip`, then back to `On`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReplyMode {
    /// Every reply is written.
    #[default]
    On,
    /// No reply is written.
    Off,
    /// The next command's reply is not written.
    Skip,
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

    /// Whether the connection is in subscribed mode: any channel, pattern or shard channel.
    pub fn is_subscribed(&self) -> bool {
        !self.subscriptions.is_empty() || !self.patterns.is_empty() || !self.shard_subscriptions.is_empty()
    }

    /// Marks the open transaction as failed (a command refused while queueing, e.g. a write
    /// refused by a replica): `EXEC` will answer `EXECABORT`.
    pub(crate) fn flag_transaction(&mut self) {
        if self.multi.is_some() {
            self.multi_error = true;
        }
    }
}
