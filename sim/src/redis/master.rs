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
//! is described in [`lockstep_redis::server`]. A `WAIT` and a blocking pop that blocked are logged without
//! the client's name (as they always were: the history digests pin it). A client that disconnects
//! while blocked stays blocked until its timeout; Redis would unblock it at once. The replication
//! stream a replica applies is logged as commands on connection 0.

use crate::node::Node;
use bytes::Bytes;
use lockstep_history::history::{bounded_lossy, cut_with_note, EventKind, MAX_EVENT_ARG_BYTES, MAX_EVENT_TEXT_BYTES};
use lockstep_redis::replication::SharedReplication;
use lockstep_redis::server::{render_reply, LocalFuture, RecordedCommand, RedisHost, RedisServer};
use lockstep_redis::{RedisEngine, Reply};
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

/// Logs a command and its reply, with what the command did to the keys it changed and the node
/// that sent it. Long arguments and replies are cut as the history cuts them
/// ([`lockstep_history::history::MAX_EVENT_ARG_BYTES`], [`lockstep_history::history::MAX_EVENT_TEXT_BYTES`]) without
/// rendering them whole first: a script may return or raise tens of megabytes.
fn record_with(
    node: &Node,
    conn: u64,
    args: &[Bytes],
    reply: &Reply,
    effects: Vec<lockstep_history::history::KeyEffect>,
    client: Option<&str>,
) {
    node.record(EventKind::Command {
        conn,
        args: args.iter().map(|a| bounded_lossy(a, MAX_EVENT_ARG_BYTES)).collect(),
        reply: render_reply_bounded(reply, MAX_EVENT_TEXT_BYTES),
        effects,
        client: client.map(str::to_string),
    });
}

/// The length of `bytes` as lossy UTF-8 (`String::from_utf8_lossy(bytes).len()`), without
/// converting them.
fn lossy_len(bytes: &[u8]) -> usize {
    bytes
        .utf8_chunks()
        .map(|chunk| chunk.valid().len() + if chunk.invalid().is_empty() { 0 } else { 3 })
        .sum()
}

/// The length of [`render_reply`]'s text for `reply`, without rendering it.
fn rendered_len(reply: &Reply) -> usize {
    match reply {
        Reply::Status(s) | Reply::Error(s) => 1 + s.len(),
        Reply::Integer(i) => 1 + usize::from(*i < 0) + i.unsigned_abs().checked_ilog10().unwrap_or(0) as usize + 1,
        Reply::Bulk(None) | Reply::Array(None) => "(nil)".len(),
        Reply::Bulk(Some(b)) => 2 + lossy_len(b),
        Reply::Array(Some(items)) => {
            2 + items.iter().map(rendered_len).sum::<usize>() + 2 * items.len().saturating_sub(1)
        }
    }
}

/// Appends [`render_reply`]'s text for `reply` to `out`, stopping once `out` holds `room` bytes.
fn render_prefix(reply: &Reply, out: &mut String, room: usize) {
    if out.len() >= room {
        return;
    }
    match reply {
        Reply::Bulk(Some(b)) => {
            out.push('"');
            let take = b.len().min(room.saturating_sub(out.len()));
            out.push_str(&String::from_utf8_lossy(&b[..take]));
            out.push('"');
        }
        Reply::Array(Some(items)) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if out.len() >= room {
                    return;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                render_prefix(item, out, room);
            }
            out.push(']');
        }
        Reply::Status(s) | Reply::Error(s) if s.len() > room => {
            out.push(if matches!(reply, Reply::Status(_)) { '+' } else { '-' });
            let mut cut = room.min(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            out.push_str(&s[..cut]);
        }
        other => out.push_str(&render_reply(other)),
    }
}

/// [`render_reply`], cut to at most `max` bytes ending with `… (N bytes)` (`N`: the length of
/// the whole text) when it is longer.
fn render_reply_bounded(reply: &Reply, max: usize) -> String {
    let total = rendered_len(reply);
    if total <= max {
        return render_reply(reply);
    }
    let mut out = String::new();
    render_prefix(reply, &mut out, max);
    cut_with_note(&mut out, max, total);
    out
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
        let client = (!c.blocking).then_some(c.peer);
        record_with(&self.node, c.conn, c.args, c.reply, c.effects, client);
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

#[cfg(test)]
mod render_tests {
    use super::*;

    #[test]
    fn replies_render_as_before_until_they_are_too_long_and_then_are_cut() {
        let small = [
            Reply::Status("OK".into()),
            Reply::error("ERR no"),
            Reply::Integer(-42),
            Reply::Integer(0),
            Reply::Integer(i64::MIN),
            Reply::Integer(1_000_000),
            Reply::Bulk(None),
            Reply::Array(None),
            Reply::Bulk(Some(Bytes::from_static(b"a\xffb\xc3"))),
            Reply::Array(Some(vec![
                Reply::Bulk(Some(Bytes::from_static(b"k"))),
                Reply::Array(Some(vec![Reply::Integer(1), Reply::Bulk(None)])),
            ])),
            Reply::Array(Some(Vec::new())),
        ];
        for reply in &small {
            assert_eq!(rendered_len(reply), render_reply(reply).len(), "{reply:?}");
            assert_eq!(render_reply_bounded(reply, MAX_EVENT_TEXT_BYTES), render_reply(reply));
        }
        let big = [
            Reply::Error(format!("ERR {}", "e".repeat(1_000_000))),
            Reply::Bulk(Some(Bytes::from(vec![b'v'; 10_000_000]))),
            Reply::Array(Some(vec![Reply::Bulk(Some(Bytes::from(vec![0xff; 5_000]))); 1_000])),
        ];
        for reply in &big {
            let full = render_reply(reply);
            let cut = render_reply_bounded(reply, MAX_EVENT_TEXT_BYTES);
            assert!(cut.len() <= MAX_EVENT_TEXT_BYTES, "{}", cut.len());
            assert!(
                cut.ends_with(&format!("… ({} bytes)", full.len())),
                "{}",
                &cut[cut.len() - 40..]
            );
            let kept = cut.split('…').next().unwrap_or_default();
            assert!(full.starts_with(kept));
        }
    }
}
