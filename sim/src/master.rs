//! A simulated Redis master: the command engine of [`crate::redis`] served over simulated TCP on
//! port 6379, reading time from its node's own wall clock.
//!
//! Every command is logged in the history with its reply. Keys that expire are logged too: the
//! world runs active expiry at every step, and the master runs it before each command, so an
//! `Expired` event always precedes the first command that no longer sees the key.

use crate::history::EventKind;
use crate::node::Node;
use crate::redis::RedisEngine;
use crate::serve::{render_args, render_reply, Handler};
use std::cell::RefCell;
use std::rc::Rc;

/// The TCP port masters listen on.
pub const REDIS_PORT: u16 = 6379;

/// Removes every key due at the node's current wall time and logs each expiry.
pub(crate) fn expire_due(node: &Node, engine: &RefCell<RedisEngine>) {
    let expired = engine.borrow_mut().expire_due(node.wall_ms());
    for key in expired {
        node.record(EventKind::Expired {
            key: String::from_utf8_lossy(&key).into_owned(),
        });
    }
}

/// The command handler of a master node.
pub(crate) fn handler(node: Node, engine: Rc<RefCell<RedisEngine>>) -> Handler {
    Rc::new(move |conn, _peer, args| {
        expire_due(&node, &engine);
        let reply = engine.borrow_mut().execute(args, node.wall_ms());
        node.record(EventKind::Command {
            conn,
            args: render_args(args),
            reply: render_reply(&reply),
        });
        reply
    })
}
