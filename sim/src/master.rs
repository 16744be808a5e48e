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
//!
//! Each connection has its own [`ClientSession`] (`CLIENT SETNAME`, `MULTI` queue, `WATCH`ed
//! keys, subscriptions). `PUBLISH` pushes `message`s to the subscribed connections. `BLPOP` on
//! empty lists blocks the connection until a push by any connection (served right after the
//! pushing command, to the longest-blocked client first, like Redis) or until its timeout runs
//! out on the server's wall clock (checked when a timer on the node's clock rate fires: no
//! polling). A client that disconnects while blocked stays blocked until its timeout; Redis would
//! unblock it at once. A replica refuses writes queued inside `MULTI` with `READONLY`, and `EXEC`
//! then answers `EXECABORT`, as Redis does.

use crate::history::{bounded_lossy, cut_with_note, EventKind, MAX_EVENT_ARG_BYTES, MAX_EVENT_TEXT_BYTES};
use crate::node::Node;
use crate::redis::{blocking_timeout_ms, is_write_command, ClientSession, RedisEngine, Reply};
use crate::replication::{diff, Effect, MemberRole, Replication, SharedReplication};
use crate::serve::{render_reply, ConnectionHooks, DeferringHandler, Response};
use bytes::Bytes;
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use tokio::sync::{mpsc, oneshot};

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
    publish_expired(repl, node.name(), expired, node.true_time_us());
}

/// Logs a command and its reply. Long arguments and replies are cut as the history cuts them
/// ([`crate::history::MAX_EVENT_ARG_BYTES`], [`crate::history::MAX_EVENT_TEXT_BYTES`]) without
/// rendering them whole first: a script may return or raise tens of megabytes.
fn record(node: &Node, conn: u64, args: &[Bytes], reply: &Reply) {
    record_with(node, conn, args, reply, Vec::new(), None);
}

/// [`record`], with what the command did to the keys it changed and the node that sent it.
fn record_with(
    node: &Node,
    conn: u64,
    args: &[Bytes],
    reply: &Reply,
    effects: Vec<crate::history::KeyEffect>,
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

/// Runs one command (`name`, lower case) of a connection on server `node` as its role in `repl`
/// says. A replica answers a write with [`READONLY_ERROR`] without running it (flagging an open
/// transaction), runs anything else (a script) and undoes it with `READONLY` if it wrote; a master
/// with replicas publishes the command's effects at true time `now_us()`. `run` executes the
/// command on `engine`; `settle` runs after a command that is kept (the simulated server serves
/// blocked clients and pushes there), before its effects are taken. Shared by the simulated
/// servers and the live ones (`lockstep live`).
#[allow(clippy::too_many_arguments)]
pub fn execute_member(
    repl: &RefCell<Replication>,
    node: &str,
    engine: &RefCell<RedisEngine>,
    session: &mut ClientSession,
    name: &str,
    now_us: &dyn Fn() -> u64,
    run: &mut dyn FnMut(&mut ClientSession) -> Vec<Reply>,
    settle: &mut dyn FnMut(),
) -> Vec<Reply> {
    let role = repl.borrow().member_role(node);
    execute_as_member(role, repl, node, engine, session, name, now_us, run, settle)
}

/// [`execute_member`] for a server whose `role` the caller has read already.
#[allow(clippy::too_many_arguments)]
fn execute_as_member(
    MemberRole {
        is_master,
        has_replicas,
    }: MemberRole,
    repl: &RefCell<Replication>,
    node: &str,
    engine: &RefCell<RedisEngine>,
    session: &mut ClientSession,
    name: &str,
    now_us: &dyn Fn() -> u64,
    run: &mut dyn FnMut(&mut ClientSession) -> Vec<Reply>,
    settle: &mut dyn FnMut(),
) -> Vec<Reply> {
    if !is_master {
        if is_write_command(name.as_bytes()) {
            session.flag_transaction();
            return vec![Reply::error(READONLY_ERROR)];
        }
        // Scripts and anything else: run, and undo it if it wrote.
        let before = engine.borrow().keyspace().clone();
        let replies = run(session);
        if *engine.borrow().keyspace() != before {
            engine.borrow_mut().restore(before);
            return vec![Reply::error(READONLY_ERROR)];
        }
        settle();
        replies
    } else if has_replicas {
        let before = engine.borrow().keyspace().clone();
        let replies = run(session);
        settle();
        let effects = diff(&before, engine.borrow().keyspace());
        if !effects.is_empty() {
            repl.borrow_mut().publish(node, effects, now_us());
        }
        replies
    } else {
        let replies = run(session);
        settle();
        replies
    }
}

/// Replicates keys that expired on master `node` (`expired`) as `DEL`s at true time `now_us`,
/// when it has replicas.
pub fn publish_expired(repl: &RefCell<Replication>, node: &str, expired: Vec<Bytes>, now_us: u64) {
    let publish = repl.borrow().has_replicas(node);
    if publish {
        let effects = expired.into_iter().map(|key| Effect { key, entry: None }).collect();
        repl.borrow_mut().publish(node, effects, now_us);
    }
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

/// One open connection of a server.
struct Conn {
    session: ClientSession,
    pushes: mpsc::UnboundedSender<Reply>,
}

/// A client blocked in `BLPOP`.
struct Blocked {
    id: u64,
    keys: Vec<Bytes>,
    wake: oneshot::Sender<Reply>,
}

/// The connections of one server and its blocked clients, oldest first.
#[derive(Default)]
struct Conns {
    open: BTreeMap<u64, Conn>,
    blocked: VecDeque<Blocked>,
    next_blocked_id: u64,
}

type SharedConns = Rc<RefCell<Conns>>;

/// Hands the head of a non-empty list to each blocked client that waits on it, oldest client
/// first (each tries its keys in argument order), then delivers published messages.
fn serve_blocked_and_pushes(node: &Node, engine: &RefCell<RedisEngine>, conns: &SharedConns) {
    let now = node.wall_ms();
    let mut conns = conns.borrow_mut();
    let mut i = 0;
    while i < conns.blocked.len() {
        let ready = conns.blocked[i].keys.iter().find(|key| {
            engine
                .borrow()
                .keyspace()
                .peek(key, now)
                .is_some_and(|e| matches!(e.value, crate::redis::Value::List(_)))
        });
        let Some(key) = ready.cloned() else {
            i += 1;
            continue;
        };
        let popped = engine
            .borrow_mut()
            .execute(&[Bytes::from_static(b"LPOP"), key.clone()], now);
        if let Some(blocked) = conns.blocked.remove(i) {
            let _ = blocked
                .wake
                .send(Reply::Array(Some(vec![Reply::Bulk(Some(key)), popped])));
        }
    }
    for (id, push) in engine.borrow_mut().take_pushes() {
        if let Some(conn) = u64::try_from(id).ok().and_then(|id| conns.open.get(&id)) {
            let _ = conn.pushes.send(push);
        }
    }
}

/// `BLPOP` that found every list empty: blocks until served or timed out.
fn block(node: &Node, conns: &SharedConns, conn: u64, args: &[Bytes]) -> Response {
    let timeout_ms = blocking_timeout_ms(&args[args.len() - 1]).unwrap_or(0);
    let (wake, woken) = oneshot::channel();
    let id = {
        let mut c = conns.borrow_mut();
        c.next_blocked_id += 1;
        let id = c.next_blocked_id;
        c.blocked.push_back(Blocked {
            id,
            keys: args[1..args.len() - 1].to_vec(),
            wake,
        });
        id
    };
    let node = node.clone();
    let conns = conns.clone();
    let args = args.to_vec();
    Response::Later(Box::pin(async move {
        let deadline_ms = node.wall_ms().saturating_add(timeout_ms);
        let mut woken = woken;
        let reply = loop {
            let remaining_ms = deadline_ms - node.wall_ms();
            if timeout_ms > 0 && remaining_ms <= 0 {
                conns.borrow_mut().blocked.retain(|b| b.id != id);
                break Reply::Array(None);
            }
            let timer = async {
                if timeout_ms > 0 {
                    node.sleep_local_ms(remaining_ms as u64).await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                biased;
                served = &mut woken => break served.unwrap_or(Reply::Array(None)),
                _ = timer => {}
            }
        };
        record(&node, conn, &args, &reply);
        reply
    }))
}

/// The command handler of a Redis server node (master or replica, as the replication state says),
/// and its connection hooks. `on_command` is called as each command arrives: the command may
/// change the keyspace (the deployment then files the server's next deadline again).
pub(crate) fn handler(
    node: Node,
    engine: Rc<RefCell<RedisEngine>>,
    repl: SharedReplication,
    on_command: Rc<dyn Fn()>,
) -> (DeferringHandler, ConnectionHooks) {
    let conns: SharedConns = Rc::default();
    let hooks = {
        let (open_conns, open_engine) = (conns.clone(), engine.clone());
        let (close_conns, close_engine) = (conns.clone(), engine.clone());
        ConnectionHooks {
            open: Rc::new(move |conn| {
                let (pushes, received) = mpsc::unbounded_channel();
                let fresh = Conn {
                    session: ClientSession::new(conn as i64),
                    pushes,
                };
                if let Some(mut stale) = open_conns.borrow_mut().open.insert(conn, fresh) {
                    open_engine.borrow_mut().forget_session(&mut stale.session);
                }
                received
            }),
            close: Rc::new(move |conn| {
                if let Some(mut gone) = close_conns.borrow_mut().open.remove(&conn) {
                    close_engine.borrow_mut().forget_session(&mut gone.session);
                }
            }),
        }
    };
    let handler: DeferringHandler = Rc::new(move |conn, peer, args| {
        on_command();
        expire_due(&node, &engine, &repl);
        let name = args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .unwrap_or_default();
        // Inside MULTI, WAIT is queued like any command (and answers at once in EXEC).
        let in_multi = conns.borrow().open.get(&conn).is_some_and(|c| c.session.in_multi());
        if name == "wait" && !in_multi {
            return wait(&node, &repl, conn, args);
        }
        // Read once for the command: its role decides how it runs and what is kept of it.
        let role = repl.borrow().member_role(node.name());
        let is_master = role.is_master;
        let mut session = conns
            .borrow_mut()
            .open
            .get_mut(&conn)
            .map(|c| std::mem::take(&mut c.session))
            .unwrap_or_else(|| ClientSession::new(conn as i64));
        // The command's key effects are taken right after it runs, before blocked clients are
        // served; a replica keeps no client write (it refuses or undoes them), so none are kept.
        let mut effects = Vec::new();
        let replies = execute_as_member(
            role,
            &repl,
            node.name(),
            &engine,
            &mut session,
            &name,
            &|| node.true_time_us(),
            &mut |session| {
                let replies = engine.borrow_mut().execute_conn(session, args, node.wall_ms());
                effects = engine.borrow_mut().take_effects();
                replies
            },
            &mut || serve_blocked_and_pushes(&node, &engine, &conns),
        );
        if !is_master {
            effects.clear();
        }
        let blocks = is_master && name == "blpop" && !session.in_multi() && replies == [Reply::Array(None)];
        if let Some(c) = conns.borrow_mut().open.get_mut(&conn) {
            c.session = session;
        }
        if blocks {
            return block(&node, &conns, conn, args);
        }
        match <[Reply; 1]>::try_from(replies) {
            Ok([reply]) => {
                record_with(&node, conn, args, &reply, effects, Some(peer));
                Response::Now(reply)
            }
            Err(replies) => {
                record_with(
                    &node,
                    conn,
                    args,
                    &Reply::Array(Some(replies.clone())),
                    effects,
                    Some(peer),
                );
                Response::Many(replies)
            }
        }
    });
    (handler, hooks)
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
