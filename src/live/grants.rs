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
//! **Holders are told apart by the value they set**, each drawn in a lane named after the test
//! running when it was granted ([`super::attribution`]; without a label, the client's name): a
//! lane is reused once its holder released or gave up, and a second lane (`NAME #2`) opens while
//! the first holds. A connection becomes the holder's own when it was granted the value or sent a
//! command naming it (so a client that reconnected after a crash and renews or releases naming its
//! value is still the holder); `ownership` sees a foreign deletion — a plain `DEL` of a key holding
//! someone else's value, from a connection that never named it — as the violation it is. Each
//! command's sender is the holder's lane when it acts on the holder's value, else
//! `CLIENT@SERVER#CONN`.
//!
//! **One value, two holders.** A library whose callers share one value (and one connection)
//! cannot be told apart on the wire. One case still shows: a renewing holder (it extended its
//! lease) whose validity ran out with no release and no failed renewal never learned it lost the
//! key; when the same value is granted again and a renewal of it then succeeds, the first holder's
//! renewal took the new grant's key (a `SET … XX` renewal does not look at the value), and both
//! believe they hold: the first holder re-acquires at that renewal, which `mutual-exclusion` judges
//! against the second grant.
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
    /// Its holder extended it at least once (a renewing holder).
    renewed: bool,
    /// Its validity ran out with no release and no failed renewal seen: a renewing holder that
    /// never learned it lost the key.
    lapsed: bool,
    /// A renewing holder whose grant lapsed before this value was granted again: its next
    /// renewal may be taken for the new grant's ([`infer`]).
    stale: Option<String>,
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

/// Whether `args` acts on whole databases rather than on keys it names (`FLUSHALL`, `FLUSHDB`,
/// `SWAPDB`: a test suite's teardown), as lockstep's command table says: a command whose row moves
/// keys' state without naming a key. A lock removed that way was not taken by another holder.
fn whole_database(args: &[String]) -> bool {
    use lockstep_sim::redis::table::{self, KeySpec, LeaseEffect};
    args.first()
        .and_then(|name| table::command(name.as_bytes()))
        .is_some_and(|spec| spec.lease == LeaseEffect::Moves && matches!(spec.keys, KeySpec::None))
}

/// A lane for a new holder: `base`, or `base #2`, `#3`, ... — the first not in `busy`.
fn lane(base: &str, busy: &BTreeSet<String>) -> String {
    if !busy.contains(base) {
        return base.to_string();
    }
    (2..)
        .map(|n| format!("{base} #{n}"))
        .find(|l| !busy.contains(l))
        .unwrap_or_else(|| base.to_string())
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
    let mut labels = super::attribution::Labels::default();
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
                    hold.lapsed = true;
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
        labels.observe(e);
        // An expiry on a master: the values of that key are gone from it.
        if let EventKind::Expired { key } = &e.kind {
            if is_master(&e.node) {
                let from = (key.clone(), String::new());
                for ((k, _), hold) in holds.range_mut(from..) {
                    if k != key {
                        break;
                    }
                    hold.masters.remove(&e.node);
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
        // A connection that names a value someone holds is that holder's from now on.
        for ((_, v), hold) in holds.iter_mut() {
            if hold.process.is_some() && args.iter().skip(1).any(|a| a == v) {
                hold.conns.insert(here.clone());
            }
        }
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
                    let own = hold.conns.contains(&here) || args.iter().skip(1).any(|a| a == v) || whole_database(args);
                    let process = hold.process.clone().unwrap_or_default();
                    if new != Some(v) {
                        hold.masters.remove(&e.node);
                        if own {
                            hold.lapsed = false;
                            hold.stale = None;
                        }
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
                            hold.renewed = true;
                            hold.horizon_us = ttl.map(|t| e.at_us.saturating_add(t.saturating_mul(1000)));
                            if let Some(h) = hold.horizon_us {
                                horizons.insert((h, key.to_string(), v.to_string()));
                            }
                            // The first renewal after the value was granted again: the earlier
                            // holder's, which never learned it lost the key (module docs).
                            if let Some(stale) = hold.stale.take() {
                                let id = out.next_op_id();
                                let invoke = json!({"key": key, "ttl_ms": ttl.unwrap_or(0), "inferred": true,
                                    "renewal_of_a_lapsed_grant": true});
                                let grant = json!({"key": key, "value": v, "fencing_token": null,
                                    "validity_ms": ttl.unwrap_or(0), "inferred": true,
                                    "renewal_of_a_lapsed_grant": true});
                                before.push((stale.clone(), op(id, Phase::Invoke, "acquire", invoke)));
                                after.push((stale.clone(), op(id, Phase::Ok, "acquire", grant)));
                                from = stale;
                            } else {
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
            }
            // A value created as a lock's acquisition.
            if let Some(v) = new.filter(|v| old != Some(*v)) {
                if !(effect.before.is_none() && acquires(args, v) && reply_ok(reply)) {
                    continue;
                }
                // The lanes of the holders holding now (and of a lapsed renewing holder of this
                // value, which may still believe it holds).
                let busy: BTreeSet<String> = holds
                    .iter()
                    .filter(|((k, hv), h)| h.held || (k == key && hv == v && h.lapsed && h.renewed))
                    .filter_map(|(_, h)| h.process.clone())
                    .collect();
                let hold = holds.entry((key.to_string(), v.to_string())).or_default();
                if !hold.held && hold.masters.is_empty() {
                    if hold.lapsed && hold.renewed {
                        hold.stale = hold.process.clone();
                    }
                    hold.lapsed = false;
                    hold.renewed = false;
                    hold.conns.clear();
                    let base = labels.test_of(peer).unwrap_or(peer).to_string();
                    hold.process = Some(lane(&base, &busy));
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
        // A failed renewal of a value (nil, 0 or an error): its lapsed holder learned it lost it.
        if !reply_ok(reply) || reply == ":0" {
            for ((_, v), hold) in holds.iter_mut() {
                if hold.lapsed && args.iter().skip(1).any(|a| a == v) {
                    hold.lapsed = false;
                    hold.stale = None;
                }
            }
        }
        // A value released or gone from every master, whose holder no longer holds it (and is
        // no lapsed renewing holder that may still believe it does), is forgotten: a long serve
        // keeps only the holds that can still matter, not every value ever granted.
        holds.retain(|_, h| h.held || !h.masters.is_empty() || (h.lapsed && h.renewed) || h.stale.is_some());
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

    fn verdict(history: &History, checker: &str) -> crate::model::Verdict {
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
        assert_eq!(
            inferred.holders,
            ["app"],
            "one lane: the second grant came after the release"
        );
        let ops = OpHistory::new(&inferred.history);
        assert_eq!(ops.holds().len(), 2);
        // The release came over another connection but named the value: the holder's own.
        assert_eq!(
            verdict(&inferred.history, "mutual-exclusion"),
            crate::model::Verdict::Valid
        );
        assert_eq!(verdict(&inferred.history, "ownership"), crate::model::Verdict::Valid);
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
            crate::model::Verdict::Invalid
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
            crate::model::Verdict::Valid
        );
    }

    #[test]
    fn a_plain_del_from_another_connection_is_a_foreign_deletion() {
        let mut s = Served::new();
        s.command(10, "redis-1", 1, &NX, "lock", None, Some("v1"), 1000)
            .command(20, "redis-1", 2, &["DEL", "lock"], "lock", Some("v1"), None, 0);
        let inferred = infer(&s.0, &["redis-1".to_string()]);
        assert_eq!(verdict(&inferred.history, "ownership"), crate::model::Verdict::Invalid);
        // Over the granting connection, the same DEL is the holder's release.
        let mut own = Served::new();
        own.command(10, "redis-1", 1, &NX, "lock", None, Some("v1"), 1000)
            .command(20, "redis-1", 1, &["DEL", "lock"], "lock", Some("v1"), None, 0);
        let inferred = infer(&own.0, &["redis-1".to_string()]);
        assert_eq!(verdict(&inferred.history, "ownership"), crate::model::Verdict::Valid);
    }

    #[test]
    fn a_whole_database_command_from_another_connection_is_a_teardown_not_a_foreign_deletion() {
        for teardown in [&["FLUSHALL"][..], &["flushdb", "ASYNC"], &["SWAPDB", "0", "1"]] {
            let mut s = Served::new();
            s.command(10, "redis-1", 1, &NX, "lock", None, Some("v1"), 1000)
                .command(20, "redis-1", 2, teardown, "lock", Some("v1"), None, 0);
            let inferred = infer(&s.0, &["redis-1".to_string()]);
            assert_eq!(
                verdict(&inferred.history, "ownership"),
                crate::model::Verdict::Valid,
                "{teardown:?}"
            );
        }
        // A command naming the key is not one (the table says so, not the name's spelling).
        assert!(!whole_database(&["DEL".to_string(), "lock".to_string()]));
        assert!(!whole_database(&[
            "RENAME".to_string(),
            "lock".to_string(),
            "x".to_string()
        ]));
        assert!(!whole_database(&["NO-SUCH-COMMAND".to_string()]));
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
            crate::model::Verdict::Valid
        );
    }

    /// The history of one value granted, renewed, lapsed during a stall and granted again, with
    /// `between` (commands after the lapse, before the second grant) and a renewal after it.
    fn shared_value(renew_first: bool, between: &[(&str, &str)]) -> History {
        let mut s = Served::new();
        let v = "V";
        // A `SET lock V XX PX 1000` at `at` moving the expiry from `from_ms` to `at + 1000`.
        let renew = |s: &mut Served, at: u64, from_ms: u64| {
            let state = |exp: u64| {
                Some(KeyState {
                    value: Some(v.to_string()),
                    fields: Vec::new(),
                    expire_at_ms: Some(exp as i64),
                })
            };
            s.0.push(
                at * 1000,
                "redis-1",
                at as i64,
                at as i64,
                EventKind::Command {
                    conn: 1,
                    args: ["SET", "lock", v, "XX", "PX", "1000"].map(String::from).to_vec(),
                    reply: "+OK".to_string(),
                    effects: vec![KeyEffect {
                        key: "lock".to_string(),
                        before: state(from_ms),
                        after: state(at + 1000),
                    }],
                    client: Some("app".into()),
                },
            );
        };
        s.command(
            10,
            "redis-1",
            1,
            &["SET", "lock", v, "NX", "PX", "1000"],
            "lock",
            None,
            Some(v),
            1000,
        );
        let mut expires_ms = 1_010;
        if renew_first {
            renew(&mut s, 500, 1_010);
            expires_ms = 1_500;
        }
        s.0.push(
            expires_ms * 1000,
            "redis-1",
            expires_ms as i64,
            expires_ms as i64,
            EventKind::Expired { key: "lock".into() },
        );
        let mut at = expires_ms + 50;
        for (cmd, reply) in between {
            let args: Vec<String> = cmd.split(' ').map(str::to_string).collect();
            s.0.push(
                at * 1000,
                "redis-1",
                at as i64,
                at as i64,
                EventKind::Command {
                    conn: 1,
                    args,
                    reply: reply.to_string(),
                    effects: Vec::new(),
                    client: Some("app".into()),
                },
            );
            at += 10;
        }
        s.command(
            at + 100,
            "redis-1",
            1,
            &["SET", "lock", v, "NX", "PX", "1000"],
            "lock",
            None,
            Some(v),
            1000,
        );
        renew(&mut s, at + 300, at + 1100);
        s.0
    }

    #[test]
    fn callers_sharing_one_value_and_connection_both_holding_break_mutual_exclusion() {
        // A stall let the renewed key expire, another caller took it with the same value, and
        // the first caller's `SET … XX` renewal then succeeded on the new key: both hold.
        let h = shared_value(true, &[]);
        let inferred = infer(&h, &["redis-1".to_string()]);
        assert_eq!(inferred.holders, ["app", "app #2"]);
        assert_eq!(
            verdict(&inferred.history, "mutual-exclusion"),
            crate::model::Verdict::Invalid
        );
        // A holder that never renewed gave up at its validity's end: the second grant is
        // another acquisition, its renewal its own.
        let h = shared_value(false, &[]);
        let inferred = infer(&h, &["redis-1".to_string()]);
        assert_eq!(
            verdict(&inferred.history, "mutual-exclusion"),
            crate::model::Verdict::Valid
        );
        // A renewal that failed after the lapse told the first holder it lost the key.
        let h = shared_value(true, &[("SET lock V XX PX 1000", "$-1")]);
        let inferred = infer(&h, &["redis-1".to_string()]);
        assert_eq!(
            verdict(&inferred.history, "mutual-exclusion"),
            crate::model::Verdict::Valid
        );
    }

    #[test]
    fn a_holder_is_named_after_its_test_and_its_value_keeps_a_reconnected_connection_its_own() {
        let mut s = Served::new();
        s.0.push(
            1_000,
            "redis-1",
            1,
            1,
            EventKind::Command {
                conn: 1,
                args: vec!["ECHO".into(), "lockstep:test:test_crash".into()],
                reply: "lockstep:test:test_crash".into(),
                effects: Vec::new(),
                client: Some("app".into()),
            },
        );
        // Granted on connection 2; after a reconnection, connection 3 renews naming the value
        // (a script), then releases it with a plain DEL.
        s.command(10, "redis-1", 2, &NX, "lock", None, Some("v1"), 1000)
            .command(
                20,
                "redis-1",
                3,
                &["EVAL", "renew", "1", "lock", "v1", "1000"],
                "lock",
                Some("v1"),
                Some("v1"),
                2000,
            )
            .command(30, "redis-1", 3, &["DEL", "lock"], "lock", Some("v1"), None, 0);
        let inferred = infer(&s.0, &["redis-1".to_string()]);
        assert_eq!(inferred.holders, ["test_crash"]);
        assert_eq!(verdict(&inferred.history, "ownership"), crate::model::Verdict::Valid);
        let ops = OpHistory::new(&inferred.history);
        assert_eq!(ops.holds().len(), 1);
    }
}
