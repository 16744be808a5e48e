//! A simulated Redis server — a master, or a replica of one: the command engine of
//! [`crate::redis`] served over simulated TCP on port 6379, reading time from its node's own wall
//! clock.
//!
//! Every command is logged in the history with its reply. Keys that expire are logged too: the
//! deployment runs active expiry after every step, and the server runs it before each command, so an
//! `Expired` event always precedes the first command that no longer sees the key.
//!
//! A master with replicas replicates each command's effect on its keyspace (see
//! [`crate::deployment`]) and answers `WAIT numreplicas timeout` with the number of replicas that
//! acknowledged everything it replicated so far (it blocks the connection until enough did or the
//! timeout, by the master's monotonic clock, ran out; 0 waits forever). A replica answers every
//! command the command table flags as a write with `READONLY` without running it, runs anything
//! else (a script) and undoes it with `READONLY` if it wrote, and answers `WAIT` with an error;
//! the replication stream it applies is logged as commands on connection 0.

use crate::deployment::replication::{diff, Effect, SharedReplication};
use crate::history::EventKind;
use crate::node::Node;
use crate::redis::{is_write_command, RedisEngine, Reply};
use crate::serve::{render_args, render_reply, DeferringHandler, Response};
use bytes::Bytes;
use std::cell::RefCell;
use std::rc::Rc;

/// The TCP port masters listen on.
pub const REDIS_PORT: u16 = 6379;

/// The error a replica gives a write.
pub const READONLY_ERROR: &str = "READONLY You can't write against a read only replica.";

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
    let publish = repl.borrow().has_replicas(node.name());
    if publish {
        let effects = expired.into_iter().map(|key| Effect { key, entry: None }).collect();
        repl.borrow_mut().publish(node.name(), effects, node.true_time_us());
    }
}

fn record(node: &Node, conn: u64, args: &[Bytes], reply: &Reply) {
    node.record(EventKind::Command {
        conn,
        args: render_args(args),
        reply: render_reply(reply),
    });
}

/// `WAIT numreplicas timeout` on master `node`.
fn wait(node: &Node, repl: &SharedReplication, conn: u64, args: &[Bytes]) -> Response {
    let reply_now = |reply: Reply| {
        record(node, conn, args, &reply);
        Response::Now(reply)
    };
    if args.len() != 3 {
        return reply_now(Reply::error("ERR wrong number of arguments for 'wait' command"));
    }
    if !repl.borrow().is_master(node.name()) {
        return reply_now(Reply::error("ERR WAIT cannot be used with replica instances."));
    }
    let parse = |b: &Bytes| std::str::from_utf8(b).ok().and_then(|s| s.parse::<i64>().ok());
    let (Some(want), Some(timeout_ms)) = (parse(&args[1]), parse(&args[2])) else {
        return reply_now(Reply::error("ERR value is not an integer or out of range"));
    };
    if timeout_ms < 0 {
        return reply_now(Reply::error("ERR timeout is negative"));
    }
    let target = repl.borrow().offset(node.name());
    let acked = repl.borrow().acked_count(node.name(), target) as i64;
    if acked >= want {
        return reply_now(Reply::Integer(acked));
    }
    let node = node.clone();
    let repl = repl.clone();
    let args = args.to_vec();
    Response::Later(Box::pin(async move {
        let start = node.monotonic_ms();
        loop {
            node.sleep_local_ms(1).await;
            let acked = repl.borrow().acked_count(node.name(), target) as i64;
            if acked >= want || (timeout_ms > 0 && node.monotonic_ms() - start >= timeout_ms) {
                let reply = Reply::Integer(acked);
                record(&node, conn, &args, &reply);
                return reply;
            }
        }
    }))
}

/// The command handler of a Redis server node (master or replica, as the replication state says).
pub(crate) fn handler(node: Node, engine: Rc<RefCell<RedisEngine>>, repl: SharedReplication) -> DeferringHandler {
    Rc::new(move |conn, _peer, args| {
        expire_due(&node, &engine, &repl);
        let name = args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .unwrap_or_default();
        if name == "wait" {
            return wait(&node, &repl, conn, args);
        }
        let (is_master, has_replicas) = {
            let r = repl.borrow();
            (r.is_master(node.name()), r.has_replicas(node.name()))
        };
        let reply = if !is_master {
            if is_write_command(name.as_bytes()) {
                Reply::error(READONLY_ERROR)
            } else {
                // Scripts and anything else: run, and undo it if it wrote.
                let before = engine.borrow().keyspace().clone();
                let reply = engine.borrow_mut().execute(args, node.wall_ms());
                if *engine.borrow().keyspace() != before {
                    engine.borrow_mut().restore(before);
                    Reply::error(READONLY_ERROR)
                } else {
                    reply
                }
            }
        } else if has_replicas {
            let before = engine.borrow().keyspace().clone();
            let reply = engine.borrow_mut().execute(args, node.wall_ms());
            let effects = diff(&before, engine.borrow().keyspace());
            if !effects.is_empty() {
                repl.borrow_mut().publish(node.name(), effects, node.true_time_us());
            }
            reply
        } else {
            engine.borrow_mut().execute(args, node.wall_ms())
        };
        record(&node, conn, args, &reply);
        Response::Now(reply)
    })
}
