//! The lock operations a `lockstep serve` history implies, read off the servers' commands, so
//! that the checkers (which judge client operations) can judge a run whose clients lockstep does
//! not drive.
//!
//! `serve` records what its servers did: each command with its reply and its effect on every key
//! it changed (the key's value and expiry before and after). A lock client leaves a recognisable
//! trace there, and this module reads it as a lock's operations:
//! - **a grant**: a command that created a key holding a value, as a lock's acquisition does —
//!   `SET key value NX …`, `SETNX`, or a script (`EVAL`, `EVALSHA`, `FCALL`) sent with that value
//!   among its arguments. Over several masters a grant is one acquisition once a majority of the
//!   masters that ever granted the key hold the value (Redlock's quorum; one master: at once). It
//!   becomes an `acquire` invoke before the command and an `ok` after it, with the validity the
//!   key's expiry gives (expiry minus the server's clock at the grant);
//! - **a release**: a command from the holder that removed the value from a master — the holder
//!   being the connection that was granted it, or any command naming the value (a compare-and-
//!   delete script), or a `FLUSHALL`/`FLUSHDB` (a test suite's teardown);
//! - **an extension**: a command from the holder that changed the key's expiry, the value kept;
//! - **the end of the validity**: a holder that neither released nor extended gives the lock up
//!   when the validity it was granted ran out in true time (an `abort`): a client that knows its
//!   lock's TTL stops relying on it then. So mutual exclusion fails only when a server granted the
//!   key to someone else while an earlier grant was valid — a crash without persistence, a
//!   failover to a lagging replica, a server clock jumping forward.
//!
//! Holders are told apart by connection: the process of a grant is `CLIENT@SERVER#CONN` (its
//! client name, the server and the connection that granted it), and each command's sender is
//! rewritten so, so that `ownership` sees a foreign deletion (another connection's plain `DEL` of
//! a key holding someone else's value) as the violation it is. A pool that releases on another
//! connection with a plain `DEL` looks foreign; a compare-and-delete (the value named) does not.
//!
//! Left out: fencing tokens, resource reads and writes as operations (the clients' own), failed
//! acquisitions (they change nothing), and hash or other non-string locks. The ops carry
//! `"inferred": true` in their data.

use lockstep_sim::{EventKind, History, Phase};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// The checkers that judge an inferred history: the others need the clients' own operations
/// (resource writes under a grant, tokens, what each client believed).
pub const CHECKERS: [&str; 2] = ["mutual-exclusion", "ownership"];

/// The history with the inferred lock operations, and the processes (holders) that appear in it
/// in the order they first held.
pub struct Inferred {
    /// Every event of the served history, commands' senders rewritten, ops inserted.
    pub history: History,
    /// The holders, as `CLIENT@SERVER#CONN`.
    pub holders: Vec<String>,
    /// How many grants were read.
    pub grants: u64,
}

/// One value's hold on one key.
#[derive(Default)]
struct Hold {
    /// The masters holding the value now.
    masters: BTreeSet<String>,
    /// The connections that were granted it, `(server, conn)`.
    conns: BTreeSet<(String, u64)>,
    /// Its holder, once held.
    process: Option<String>,
    held: bool,
    /// The op id of its acquire.
    op_id: u64,
    /// When its validity runs out, true µs (`None`: no expiry).
    horizon_us: Option<u64>,
}

/// The sender of a command on `node`'s connection `conn` from client `peer`.
fn sender(peer: &str, node: &str, conn: u64) -> String {
    format!("{peer}@{node}#{conn}")
}

/// Whether `args` is a command that acquires a lock on `value` when it creates its key, by its
/// row of lockstep's command table: a store only if absent (`SETNX`, `MSETNX`), a `SET` with `NX`,
/// or a script or function carrying the value.
fn acquires(args: &[String], value: &str) -> bool {
    use lockstep_sim::redis::table::{self, LeaseEffect, StoreCondition, TtlSource};
    let Some(spec) = args.first().and_then(|name| table::command(name.as_bytes())) else {
        return false;
    };
    match spec.lease {
        LeaseEffect::SetsValue {
            when: StoreCondition::IfAbsent,
            ..
        } => true,
        LeaseEffect::SetsValue {
            ttl: TtlSource::SetOptions,
            ..
        } => args.iter().skip(3).any(|a| a.eq_ignore_ascii_case("nx")),
        LeaseEffect::RunsScript => args.iter().skip(2).any(|a| a == value),
        _ => false,
    }
}

/// Whether `args` clears whole databases.
fn flushes(args: &[String]) -> bool {
    args.first()
        .is_some_and(|a| a.eq_ignore_ascii_case("flushall") || a.eq_ignore_ascii_case("flushdb"))
}

/// Reads `raw` (a served history) as lock operations; see the [module](self) docs. `masters`
/// names the servers whose commands count.
pub fn infer(raw: &History, masters: &[String]) -> Inferred {
    let is_master = |node: &str| masters.iter().any(|m| m == node);
    // Which masters ever granted each key.
    let mut granted_on: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in raw.events() {
        if let EventKind::Command { args, effects, .. } = &e.kind {
            if !is_master(&e.node) {
                continue;
            }
            for effect in effects {
                let created = effect.before.is_none();
                if let Some(v) = effect.after.as_ref().and_then(|a| a.value.as_deref()) {
                    if created && acquires(args, v) {
                        granted_on
                            .entry(effect.key.as_str())
                            .or_default()
                            .insert(e.node.as_str());
                    }
                }
            }
        }
    }
    let need = |key: &str| granted_on.get(key).map_or(1, |m| m.len() / 2 + 1);

    let mut out = History::new();
    let mut holds: BTreeMap<(String, String), Hold> = BTreeMap::new();
    let mut horizons: BTreeSet<(u64, String, String)> = BTreeSet::new();
    let mut holders: Vec<String> = Vec::new();
    let mut grants = 0u64;
    let mut last_us = 0u64;
    let push = |out: &mut History, last_us: &mut u64, at_us: u64, node: &str, wall: i64, mono: i64, kind| {
        *last_us = at_us.max(*last_us);
        out.push(*last_us, node, wall, mono, kind);
    };
    let op = |id: u64, phase: Phase, name: &str, data: serde_json::Value| EventKind::Op {
        id,
        phase,
        op: name.to_string(),
        data,
    };
    let grant_ref =
        |key: &str, value: &str| json!({"key": key, "value": value, "fencing_token": null, "inferred": true});

    for e in raw.events() {
        // Validities that ran out before this event: their holders gave up.
        while let Some(first) = horizons.first().cloned() {
            if first.0 > e.at_us {
                break;
            }
            horizons.pop_first();
            let (at_us, key, value) = first;
            if let Some(hold) = holds.get_mut(&(key.clone(), value.clone())) {
                if hold.held && hold.horizon_us == Some(at_us) {
                    hold.held = false;
                    let process = hold.process.clone().unwrap_or_default();
                    let id = out.next_op_id();
                    let wall = e.wall_ms.saturating_sub(((e.at_us - at_us) / 1000) as i64);
                    push(
                        &mut out,
                        &mut last_us,
                        at_us,
                        &process,
                        wall,
                        e.monotonic_ms,
                        op(id, Phase::Invoke, "abort", grant_ref(&key, &value)),
                    );
                }
            }
        }
        let EventKind::Command {
            conn,
            args,
            reply,
            effects,
            client: Some(peer),
        } = &e.kind
        else {
            push(
                &mut out,
                &mut last_us,
                e.at_us,
                &e.node,
                e.wall_ms,
                e.monotonic_ms,
                e.kind.clone(),
            );
            continue;
        };
        if !is_master(&e.node) {
            push(
                &mut out,
                &mut last_us,
                e.at_us,
                &e.node,
                e.wall_ms,
                e.monotonic_ms,
                e.kind.clone(),
            );
            continue;
        }
        let here = (e.node.clone(), *conn);
        // The ops before and after the command, each with its holder.
        let mut before: Vec<(String, EventKind)> = Vec::new();
        let mut after: Vec<(String, EventKind)> = Vec::new();
        let mut from = sender(peer, &e.node, *conn);
        for effect in effects {
            let key = effect.key.as_str();
            let old = effect.before.as_ref().and_then(|s| s.value.as_deref());
            let new = effect.after.as_ref().and_then(|s| s.value.as_deref());
            let ttl_ms = |state: Option<&lockstep_sim::KeyState>| {
                state
                    .and_then(|s| s.expire_at_ms)
                    .map(|at| u64::try_from(at.saturating_sub(e.wall_ms)).unwrap_or(0))
            };
            // The value it held: removed, or its expiry changed.
            if let Some(v) = old {
                if let Some(hold) = holds.get_mut(&(key.to_string(), v.to_string())) {
                    let own = hold.conns.contains(&here) || args.iter().skip(1).any(|a| a == v) || flushes(args);
                    let process = hold.process.clone().unwrap_or_default();
                    if new != Some(v) {
                        hold.masters.remove(&e.node);
                        if hold.held && own {
                            hold.held = false;
                            from = process.clone();
                            let id = out.next_op_id();
                            let released = json!({"released": true, "inferred": true});
                            before.push((process.clone(), op(id, Phase::Invoke, "release", grant_ref(key, v))));
                            after.push((process.clone(), op(id, Phase::Ok, "release", released)));
                        }
                    } else if hold.held && own {
                        let ttl = ttl_ms(effect.after.as_ref());
                        if ttl != ttl_ms(effect.before.as_ref()) {
                            from = process.clone();
                            hold.horizon_us = ttl.map(|t| e.at_us.saturating_add(t.saturating_mul(1000)));
                            if let Some(h) = hold.horizon_us {
                                horizons.insert((h, key.to_string(), v.to_string()));
                            }
                            let id = out.next_op_id();
                            let grant = json!({"key": key, "value": v, "fencing_token": null,
                                "validity_ms": ttl.unwrap_or(0), "inferred": true});
                            let invoke = json!({"key": key, "value": v, "fencing_token": null,
                                "ttl_ms": ttl.unwrap_or(0), "inferred": true});
                            before.push((process.clone(), op(id, Phase::Invoke, "extend", invoke)));
                            after.push((process.clone(), op(id, Phase::Ok, "extend", grant)));
                        }
                    }
                }
            }
            // A value created as a lock's acquisition.
            if let Some(v) = new.filter(|v| old != Some(*v)) {
                if !(effect.before.is_none() && acquires(args, v) && reply_ok(reply)) {
                    continue;
                }
                let hold = holds.entry((key.to_string(), v.to_string())).or_default();
                if !hold.held && hold.masters.is_empty() {
                    hold.conns.clear();
                    hold.process = Some(sender(peer, &e.node, *conn));
                }
                hold.masters.insert(e.node.clone());
                hold.conns.insert(here.clone());
                if !hold.held && hold.masters.len() >= need(key) {
                    hold.held = true;
                    grants += 1;
                    let process = hold.process.clone().unwrap_or_default();
                    if !holders.contains(&process) {
                        holders.push(process.clone());
                    }
                    let ttl = ttl_ms(effect.after.as_ref());
                    hold.horizon_us = ttl.map(|t| e.at_us.saturating_add(t.saturating_mul(1000)));
                    if let Some(h) = hold.horizon_us {
                        horizons.insert((h, key.to_string(), v.to_string()));
                    }
                    hold.op_id = out.next_op_id();
                    let invoke = json!({"key": key, "ttl_ms": ttl.unwrap_or(0), "inferred": true});
                    let grant = json!({"key": key, "value": v, "fencing_token": null,
                        "validity_ms": ttl.unwrap_or(0), "inferred": true});
                    before.push((process.clone(), op(hold.op_id, Phase::Invoke, "acquire", invoke)));
                    after.push((process, op(hold.op_id, Phase::Ok, "acquire", grant)));
                }
            }
        }
        // The ops are the holder's; the command is its sender's.
        for (node, kind) in before {
            push(&mut out, &mut last_us, e.at_us, &node, e.wall_ms, e.monotonic_ms, kind);
        }
        let mut command = e.kind.clone();
        if let EventKind::Command { client, .. } = &mut command {
            *client = Some(from.clone());
        }
        push(
            &mut out,
            &mut last_us,
            e.at_us,
            &e.node,
            e.wall_ms,
            e.monotonic_ms,
            command,
        );
        for (node, kind) in after {
            push(&mut out, &mut last_us, e.at_us, &node, e.wall_ms, e.monotonic_ms, kind);
        }
    }
    Inferred {
        history: out,
        holders,
        grants,
    }
}

/// Whether a rendered reply says the command succeeded (not an error, not a nil).
fn reply_ok(reply: &str) -> bool {
    !reply.starts_with('-') && reply != "$-1" && reply != "_" && reply != "*-1" && reply != "(nil)"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::OpHistory;
    use lockstep_sim::{KeyEffect, KeyState};

    /// A lock primitive added to the command table (as a module would add it): `XLOCK key value
    /// ttl_ms` stores the value with a TTL if the key is absent.
    fn xlock(ks: &mut lockstep_sim::redis::Keyspace, args: &[bytes::Bytes], now_ms: i64) -> lockstep_sim::redis::Reply {
        use lockstep_sim::redis::{parse_ll, Reply, Value};
        let Some(ttl_ms) = parse_ll(&args[3]).filter(|t| *t > 0) else {
            return Reply::error("ERR invalid expire time in 'xlock' command");
        };
        if ks.lookup(&args[1], now_ms).is_some() {
            return Reply::Integer(0);
        }
        ks.insert(args[1].clone(), Value::String(args[2].clone()), Some(now_ms + ttl_ms));
        Reply::Integer(1)
    }

    static XLOCK: lockstep_sim::redis::table::CommandSpec = {
        use lockstep_sim::redis::table::*;
        row(
            "xlock",
            4,
            Flags::WRITE.with(Flags::DENYOOM),
            KeySpec::Range {
                first: 1,
                last: 1,
                step: 1,
            },
            LeaseEffect::SetsValue {
                value_at: 2,
                ttl: TtlSource::Relative { at: 3, unit_ms: 1 },
                when: StoreCondition::IfAbsent,
            },
            Group::String,
            Handler::Keys(xlock),
        )
    };

    #[test]
    fn a_command_added_to_the_table_is_dispatched_recorded_read_as_a_lease_and_recognised_as_a_grant() {
        use crate::history::lease::{store_ttl_ms, CommandName};
        use lockstep_sim::redis::table::{self, RegisterError, TtlSource};
        use lockstep_sim::redis::{EngineConfig, RedisEngine, Reply};
        table::register(&XLOCK).expect("xlock is new");
        assert!(matches!(table::register(&XLOCK), Err(RegisterError::Exists(_))));
        // Dispatch, arity and `COMMAND INFO` from the row.
        let mut engine = RedisEngine::new(EngineConfig::default());
        let args = |a: &[&str]| {
            a.iter()
                .map(|s| bytes::Bytes::copy_from_slice(s.as_bytes()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            engine.execute(&args(&["XLOCK", "lock", "v1", "10000"]), 1_000),
            Reply::Integer(1)
        );
        assert_eq!(
            engine.execute(&args(&["xlock", "lock"]), 1_000),
            Reply::error("ERR wrong number of arguments for 'xlock' command")
        );
        // The effect the server records.
        assert_eq!(
            engine.execute(&args(&["XLOCK", "other", "v2", "500"]), 1_000),
            Reply::Integer(1)
        );
        let effects = engine.take_effects();
        assert_eq!(effects.len(), 1);
        assert_eq!(effects[0].after.as_ref().and_then(|a| a.value.as_deref()), Some("v2"));
        assert_eq!(effects[0].after.as_ref().and_then(|a| a.expire_at_ms), Some(1_500));
        assert_eq!(engine.execute(&args(&["PTTL", "lock"]), 2_000), Reply::Integer(9_000));
        // The lease reader: a store of its value argument with a TTL from its argument 3.
        let line: Vec<String> = ["XLOCK", "lock", "v1", "10000"].iter().map(|s| s.to_string()).collect();
        let name = CommandName::of("XLOCK");
        assert_eq!(
            name,
            CommandName::Store {
                value_at: 2,
                ttl: TtlSource::Relative { at: 3, unit_ms: 1 }
            }
        );
        assert_eq!(
            store_ttl_ms(&line, TtlSource::Relative { at: 3, unit_ms: 1 }, 0),
            Some(10_000)
        );
        // The grant recogniser: a store only if absent is an acquisition.
        assert!(acquires(&line, "v1"));
        assert!(!acquires(&["GET".to_string(), "lock".to_string()], "v1"));
    }

    /// A history builder: commands on masters with their key effects.
    struct Served(History);

    impl Served {
        fn new() -> Self {
            Served(History::new())
        }

        /// `args` on `node`'s connection `conn` at `at_ms` (the server's wall clock = true ms),
        /// setting `key` from `before` to `after` (values; expiry `ttl_ms` after the command).
        #[allow(clippy::too_many_arguments)]
        fn command(
            &mut self,
            at_ms: u64,
            node: &str,
            conn: u64,
            args: &[&str],
            key: &str,
            before: Option<&str>,
            after: Option<&str>,
            ttl_ms: i64,
        ) -> &mut Self {
            let state = |v: Option<&str>| {
                v.map(|v| KeyState {
                    value: Some(v.to_string()),
                    fields: Vec::new(),
                    expire_at_ms: Some(at_ms as i64 + ttl_ms),
                })
            };
            let effects = if before == after {
                Vec::new()
            } else {
                vec![KeyEffect {
                    key: key.to_string(),
                    before: state(before),
                    after: state(after),
                }]
            };
            self.0.push(
                at_ms * 1000,
                node,
                at_ms as i64,
                at_ms as i64,
                EventKind::Command {
                    conn,
                    args: args.iter().map(|a| a.to_string()).collect(),
                    reply: "+OK".to_string(),
                    effects,
                    client: Some("app".to_string()),
                },
            );
            self
        }
    }

    fn verdict(history: &History, checker: &str) -> crate::checker::Verdict {
        let ops = OpHistory::new(history);
        crate::checker::check_all(&ops)
            .into_iter()
            .find(|r| r.checker == checker)
            .map(|r| r.verdict)
            .expect("the checker ran")
    }

    const NX: [&str; 6] = ["SET", "lock", "v1", "NX", "PX", "1000"];
    const CAD: [&str; 5] = ["EVAL", "compare-and-delete", "1", "lock", "v1"];

    #[test]
    fn a_grant_and_its_compare_and_delete_are_an_acquire_and_a_release() {
        let mut s = Served::new();
        s.command(10, "redis-1", 1, &NX, "lock", None, Some("v1"), 1000)
            .command(50, "redis-1", 2, &CAD, "lock", Some("v1"), None, 0)
            .command(
                60,
                "redis-1",
                3,
                &["SET", "lock", "v2", "NX"],
                "lock",
                None,
                Some("v2"),
                1000,
            );
        let inferred = infer(&s.0, &["redis-1".to_string()]);
        assert_eq!(inferred.grants, 2);
        assert_eq!(inferred.holders, ["app@redis-1#1", "app@redis-1#3"]);
        let ops = OpHistory::new(&inferred.history);
        assert_eq!(ops.holds().len(), 2);
        // The release came over another connection but named the value: the holder's own.
        assert_eq!(
            verdict(&inferred.history, "mutual-exclusion"),
            crate::checker::Verdict::Valid
        );
        assert_eq!(verdict(&inferred.history, "ownership"), crate::checker::Verdict::Valid);
    }

    #[test]
    fn a_second_grant_inside_the_first_ones_validity_breaks_mutual_exclusion() {
        // The key vanished from the server (a crash, a clock jump) at 20 ms; the first grant's
        // validity (1 s) still runs when another connection is granted the key.
        let mut s = Served::new();
        s.command(10, "redis-1", 1, &NX, "lock", None, Some("v1"), 1000)
            .command(
                300,
                "redis-1",
                2,
                &["SET", "lock", "v2", "NX", "PX", "1000"],
                "lock",
                None,
                Some("v2"),
                1000,
            );
        let inferred = infer(&s.0, &["redis-1".to_string()]);
        assert_eq!(
            verdict(&inferred.history, "mutual-exclusion"),
            crate::checker::Verdict::Invalid
        );
        // After the validity ran out, the same grant is no conflict.
        let mut later = Served::new();
        later
            .command(10, "redis-1", 1, &NX, "lock", None, Some("v1"), 1000)
            .command(
                1_500,
                "redis-1",
                2,
                &["SET", "lock", "v2", "NX", "PX", "1000"],
                "lock",
                None,
                Some("v2"),
                1000,
            );
        let inferred = infer(&later.0, &["redis-1".to_string()]);
        assert_eq!(
            verdict(&inferred.history, "mutual-exclusion"),
            crate::checker::Verdict::Valid
        );
    }

    #[test]
    fn a_plain_del_from_another_connection_is_a_foreign_deletion() {
        let mut s = Served::new();
        s.command(10, "redis-1", 1, &NX, "lock", None, Some("v1"), 1000)
            .command(20, "redis-1", 2, &["DEL", "lock"], "lock", Some("v1"), None, 0);
        let inferred = infer(&s.0, &["redis-1".to_string()]);
        assert_eq!(
            verdict(&inferred.history, "ownership"),
            crate::checker::Verdict::Invalid
        );
        // Over the granting connection, the same DEL is the holder's release.
        let mut own = Served::new();
        own.command(10, "redis-1", 1, &NX, "lock", None, Some("v1"), 1000)
            .command(20, "redis-1", 1, &["DEL", "lock"], "lock", Some("v1"), None, 0);
        let inferred = infer(&own.0, &["redis-1".to_string()]);
        assert_eq!(verdict(&inferred.history, "ownership"), crate::checker::Verdict::Valid);
    }

    #[test]
    fn over_three_masters_a_grant_needs_a_majority() {
        let masters: Vec<String> = ["redis-1", "redis-2", "redis-3"].map(String::from).to_vec();
        // Two clients split the masters: neither reaches two of three, then both clean up.
        let mut split = Served::new();
        split
            .command(10, "redis-1", 1, &NX, "lock", None, Some("v1"), 1000)
            .command(
                11,
                "redis-2",
                1,
                &["SET", "lock", "v2", "NX", "PX", "1000"],
                "lock",
                None,
                Some("v2"),
                1000,
            )
            .command(12, "redis-3", 1, &NX, "lock", None, Some("v1"), 1000)
            .command(13, "redis-3", 2, &CAD, "lock", Some("v1"), None, 0);
        let inferred = infer(&split.0, &masters);
        // v1 held two of three (redis-1, redis-3) at 12 ms: one grant; v2 never did.
        assert_eq!(inferred.grants, 1);
        assert_eq!(
            verdict(&inferred.history, "mutual-exclusion"),
            crate::checker::Verdict::Valid
        );
    }
}
