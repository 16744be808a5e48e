//! A simulated Redis server — a master, or a replica of one: the one server loop
//! ([`lockstep_redis::server::RedisServer`]) served over simulated TCP on port 6379, on a [`NodeHost`] that
//! reads time from its node's own clocks and sleeps by its node's clock rate.
//!
//! Every command is logged in the history with its reply. Keys that expire are logged too: the
//! deployment runs active expiry after every step, and the server runs it before each command, so an
//! `Expired` event always precedes the first command that no longer sees the key.
//!
//! What the server does — sessions, `MULTI`/`WATCH`, `WAIT` (blocking until enough replicas
//! acknowledged, by the master's monotonic clock), `BLPOP`/`BRPOP` blocking until a push or their
//! timeout on the node's wall clock, pub/sub pushes, replicas answering writes with `READONLY` —
//! is described in [`lockstep_redis::server`]. Commands are recorded as every host records them
//! ([`lockstep_redis::server::RecordedCommand::event`]). A client that disconnects
//! while blocked stays blocked until its timeout; Redis would unblock it at once. The replication
//! stream a replica applies is logged as commands on connection 0.

use crate::node::Node;
use lockstep_history::history::EventKind;
use lockstep_redis::replication::SharedReplication;
use lockstep_redis::server::{LocalFuture, RecordedCommand, RedisHost, RedisServer};
use lockstep_redis::RedisEngine;
use std::cell::RefCell;
use std::rc::Rc;

pub use lockstep_redis::server::{execute_member, publish_expired, READONLY_ERROR};

/// The TCP port masters listen on.
pub const REDIS_PORT: u16 = 6379;

/// Removes every key due at the node's current wall time and logs each expiry; a master with
/// replicas replicates each as a `DEL`.
pub(crate) fn expire_due(node: &Node, engine: &RefCell<RedisEngine>, repl: &SharedReplication) {
    let expired = engine.borrow_mut().expire_due(node.wall_ms());
    if expired.is_empty() {
        return;
    }
    for key in &expired {
        node.record(EventKind::Expired {
            key: String::from_utf8_lossy(key).into_owned(),
        });
    }
    publish_expired(repl, node.name(), expired, node.true_time_us());
}

/// A simulated node as the host of a Redis server: its clocks, its sleeps by its clock rate, its
/// history, its `drop-reply` fault (its pause gate freezes the server's tasks, so a command never
/// sees it paused).
#[derive(Clone)]
pub struct NodeHost {
    node: Node,
    on_command: Option<Rc<dyn Fn()>>,
}

impl NodeHost {
    /// `node` as a host; `on_command` is called as each command arrives.
    pub(crate) fn new(node: Node, on_command: Option<Rc<dyn Fn()>>) -> Self {
        NodeHost { node, on_command }
    }
}

impl RedisHost for NodeHost {
    fn name(&self) -> &str {
        self.node.name()
    }

    fn wall_ms(&self) -> i64 {
        self.node.wall_ms()
    }

    fn monotonic_ms(&self) -> i64 {
        self.node.monotonic_ms()
    }

    fn true_time_us(&self) -> u64 {
        self.node.true_time_us()
    }

    fn sleep_local_ms(&self, local_ms: u64) -> LocalFuture<()> {
        let node = self.node.clone();
        Box::pin(async move { node.sleep_local_ms(local_ms).await })
    }

    fn record(&self, event: EventKind) {
        self.node.record(event);
    }

    fn record_command(&self, c: RecordedCommand<'_>) {
        self.node.record(c.event());
    }

    fn before_command(&self) {
        if let Some(on_command) = &self.on_command {
            on_command();
        }
    }

    fn drops_reply_to(&self, peer: &str) -> bool {
        self.node.drops_reply_to(peer)
    }
}

/// The Redis server of a node (master or replica, as the replication state says). `on_command`
/// is called as each command arrives: the command may change the keyspace (the deployment then
/// files the server's next deadline again).
pub(crate) fn server(
    node: Node,
    engine: Rc<RefCell<RedisEngine>>,
    repl: SharedReplication,
    on_command: Rc<dyn Fn()>,
) -> Rc<RedisServer<NodeHost>> {
    RedisServer::new(NodeHost::new(node, Some(on_command)), engine, Some(repl))
}
