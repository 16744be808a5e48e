//! The lock key's actual life on each server: from the command that put a value on it until what
//! took that value off — its holder's release, another sender's deletion, another value, its
//! expiry, the server stopping — or the end of the history. The timeline draws it
//! ([`crate::report::timeline`]).
//!
//! It answers another question than the lease reader ([`super::lease`]): a lease is what the
//! masters *would have held* for a grant, so its holder's own deletion does not end it; a key's
//! life is what a server *did* hold, so that deletion ends it.
//!
//! **How it reads.** Keys are the grants' lock keys (fencing counters and the resource's keys are
//! left out). On a server whose commands carry their key effects (the value and expiry before and
//! after each command, as lockstep's servers record them: what the `ownership` checker reads),
//! those decide: the key appearing starts a life, its value changing or its deletion ends one —
//! whatever the command (a script called by its SHA included). Otherwise (a real `redis-server`,
//! a replica's stream, an older history) the command is read: a successful `SET key value …`
//! (`SET`, `SETNX`, `GETSET`) starts a life, or a script (`EVAL`, `EVALSHA`, `FCALL`) carrying a
//! known grant's value that the key did not hold; a deletion (`DEL`, `UNLINK`, `GETDEL`, a
//! script with `del`) or another value set ends it. An `Expired` event or a stop of the server
//! (crash, power loss, shutdown) ends one either way.
//!
//! **Shared with the lease reader:** which replies say a command took effect
//! (`lease::reply_succeeded`) and which command names set a string value, delete a key or run
//! a script (one table: `lease::CommandName`).
//!
//! **Who.** A value belongs to the grant whose acquire `ok` recorded it (the last such grant when
//! several did), as does a hash lock's field named after it — the value, `:` and a suffix (the
//! Redisson model's `{value}:1`), the lease reader's `Ident` rule. A command's sender is the node its server recorded; else, on a server with
//! effects, the holder of a grant value among its arguments, else the last such holder seen on
//! its connection; on a server without effects, the last holder whose value came over its
//! connection (the recorded sender is not read there). A deletion by the value's own holder is
//! its release.
//!
//! Left out, where it reads less than the lease reader (kept as the timeline always drew it): a
//! script on a server without effects
//! is read from its text's words (`del` without `pexpire` deletes; a text without `del` carrying
//! a grant's value puts it on a free key), not from the commands it calls (the lease reader's
//! `ScriptEffect`); `HDEL` and TTL changes are not read (an expiry shows as the server's
//! `Expired` event).

use super::lease::{reply_succeeded, CommandName};
use super::{OpHistory, StepKind};
use lockstep_sim::Fault;
use std::collections::{BTreeMap, BTreeSet};

/// How a server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeStop {
    /// Crashed: the key survived only if persisted.
    Crash,
    /// Lost power: the key survived only if synced to disk.
    PowerLoss,
    /// Shut down: the key survived only if persisted.
    Shutdown,
}

/// What ended a key's life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLifeEnd<'h> {
    /// Its holder deleted it (a `DEL`, a release script): `by` is the holder's process.
    Released {
        /// The holder (and sender).
        by: &'h str,
    },
    /// Deleted by another sender than its holder, or by one not known.
    Deleted {
        /// The sender's process, when known.
        by: Option<&'h str>,
        /// The command's name, upper-cased (`DEL`, `EVALSHA`, …).
        command: String,
        /// Whether the deletion was read from a script's text (a server without effects), not
        /// from what the server recorded or a deleting command's name.
        from_script: bool,
    },
    /// Another value was set on the key.
    Overwritten {
        /// The sender's process, when known.
        by: Option<&'h str>,
    },
    /// The key expired (the server's `Expired` event).
    Expired,
    /// The server stopped.
    Stopped(NodeStop),
    /// Still set when the history ends.
    Alive,
}

/// One life of the lock key on one server: set with one value until something ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLife<'h> {
    /// The server.
    pub node: &'h str,
    /// The key.
    pub key: &'h str,
    /// The value it held (for a hash, its first field).
    pub value: &'h str,
    /// The process whose grant the value is, when one is.
    pub holder: Option<&'h str>,
    /// Set, true µs.
    pub start_us: u64,
    /// Ended, true µs (for [`KeyLifeEnd::Alive`], the history's end); never before `start_us`.
    pub end_us: u64,
    /// What ended it.
    pub end: KeyLifeEnd<'h>,
}

/// One server's copy of the lock key while the reader walks the history.
struct Copy<'h> {
    value: &'h str,
    start_us: u64,
}

/// The process whose grant `value` carries: the grant's value itself, or — a hash lock's field,
/// as the lease reader's `Ident` reads it — the value followed by `:` and a suffix (the Redisson
/// model's `{value}:1`), so that lock's key lives are labelled with their holder too.
fn holder_of<'h>(holders: &BTreeMap<&str, &'h str>, value: &str) -> Option<&'h str> {
    holders.get(value).copied().or_else(|| {
        value
            .match_indices(':')
            .find_map(|(at, _)| holders.get(&value[..at]).copied())
    })
}

/// The state of the walk: each server's copy of each key, and the lives ended so far.
struct Walk<'h, 'v> {
    copies: BTreeMap<(&'h str, &'h str), Copy<'h>>,
    lives: Vec<KeyLife<'h>>,
    /// The process of each grant's value.
    holders: &'v BTreeMap<&'v str, &'h str>,
}

impl<'h> Walk<'h, '_> {
    /// The value `node` holds under `key`, if any.
    fn held(&self, node: &'h str, key: &'h str) -> Option<&'h str> {
        self.copies.get(&(node, key)).map(|c| c.value)
    }

    /// The process whose grant `value` is.
    fn holder(&self, value: Option<&str>) -> Option<&'h str> {
        value.and_then(|v| holder_of(self.holders, v))
    }

    fn start(&mut self, node: &'h str, key: &'h str, value: &'h str, at_us: u64) {
        self.copies.insert((node, key), Copy { value, start_us: at_us });
    }

    /// Ends the life of `key` on `node`, if it has one.
    fn end(&mut self, node: &'h str, key: &'h str, at_us: u64, end: KeyLifeEnd<'h>) {
        if let Some(copy) = self.copies.remove(&(node, key)) {
            self.lives.push(KeyLife {
                node,
                key,
                value: copy.value,
                holder: holder_of(self.holders, copy.value),
                start_us: copy.start_us,
                end_us: at_us.max(copy.start_us),
                end,
            });
        }
    }
}

/// A deletion of a value held by `holder`, sent by `sender` with `command`: its holder's release,
/// or another's deletion.
fn deletion<'h>(sender: Option<&'h str>, holder: Option<&'h str>, command: &str, from_script: bool) -> KeyLifeEnd<'h> {
    match sender {
        Some(by) if holder == Some(by) => KeyLifeEnd::Released { by },
        by => KeyLifeEnd::Deleted {
            by,
            command: command.to_ascii_uppercase(),
            from_script,
        },
    }
}

/// Every life of the grants' lock keys on every server of `history` (see the [module](self)
/// docs), in the order they ended; those still alive at the end last, by server and key.
pub fn key_lives<'h>(history: &OpHistory<'h>) -> Vec<KeyLife<'h>> {
    let keys: Vec<&str> = history.holds().iter().map(|h| h.grant.key.as_str()).collect();
    let mut holders: BTreeMap<&str, &'h str> = BTreeMap::new();
    for hold in history.holds() {
        holders.insert(hold.grant.value.as_str(), hold.process);
    }
    // The last holder whose value came over each (server, connection).
    let mut conn_client: BTreeMap<(&'h str, u64), &'h str> = BTreeMap::new();
    let mut walk = Walk {
        copies: BTreeMap::new(),
        lives: Vec::new(),
        holders: &holders,
    };
    // The servers whose commands carry their key effects.
    let with_effects: BTreeSet<&str> = history
        .steps()
        .iter()
        .filter(|s| matches!(s.kind, StepKind::Command { effects, .. } if !effects.is_empty()))
        .map(|s| s.event.node.as_str())
        .collect();
    for step in history.steps() {
        let event: &'h lockstep_sim::Event = step.event;
        let node: &'h str = event.node.as_str();
        let at_us = event.at_us;
        match step.kind {
            StepKind::Command {
                conn,
                args,
                effects,
                client,
                ..
            } if with_effects.contains(node) => {
                let sender = client.or_else(|| {
                    args.iter()
                        .skip(1)
                        .find_map(|a| holder_of(&holders, a))
                        .inspect(|process| {
                            conn_client.insert((node, conn), process);
                        })
                        .or_else(|| conn_client.get(&(node, conn)).copied())
                });
                let name = args.first().map_or("", String::as_str);
                for effect in effects.iter().filter(|e| keys.contains(&e.key.as_str())) {
                    let key = effect.key.as_str();
                    let held = walk.held(node, key);
                    let after: Option<&'h str> = effect.after.as_ref().map(|a| {
                        a.value
                            .as_deref()
                            .or_else(|| a.fields.first().map(String::as_str))
                            .unwrap_or("")
                    });
                    if held.is_some() && held != after {
                        let end = match after {
                            Some(_) => KeyLifeEnd::Overwritten { by: sender },
                            None => deletion(sender, walk.holder(held), name, false),
                        };
                        walk.end(node, key, at_us, end);
                    }
                    if let Some(value) = after.filter(|v| held != Some(*v)) {
                        walk.start(node, key, value, at_us);
                    }
                }
            }
            StepKind::Command { conn, args, reply, .. } => {
                let Some(key) = args
                    .iter()
                    .skip(1)
                    .find(|a| keys.contains(&a.as_str()))
                    .map(String::as_str)
                else {
                    continue;
                };
                let carried = args
                    .iter()
                    .skip(1)
                    .find_map(|a| Some((a.as_str(), holder_of(&holders, a)?)));
                if let Some((_, process)) = carried {
                    if conn != 0 {
                        conn_client.insert((node, conn), process);
                    }
                }
                if !reply_succeeded(reply) {
                    continue;
                }
                let sender = conn_client.get(&(node, conn)).copied();
                let name = args[0].as_str();
                let command = CommandName::of(name);
                let held = walk.held(node, key);
                let holder = walk.holder(held);
                if command.sets_value() && args.get(1).map(String::as_str) == Some(key) {
                    let Some(value) = args.get(command.value_at()).map(String::as_str) else {
                        continue;
                    };
                    if held == Some(value) {
                        continue;
                    }
                    walk.end(node, key, at_us, KeyLifeEnd::Overwritten { by: sender });
                    walk.start(node, key, value, at_us);
                } else if command.deletes_key() {
                    walk.end(node, key, at_us, deletion(sender, holder, name, false));
                } else if command.runs_script() {
                    // The text of an `EVAL`; an `EVALSHA`'s digest, an `FCALL`'s function name.
                    let script = args.get(1).map(|s| s.to_ascii_lowercase()).unwrap_or_default();
                    match (held, carried) {
                        (Some(_), _) if script.contains("del") && !script.contains("pexpire") => {
                            walk.end(node, key, at_us, deletion(sender, holder, name, true));
                        }
                        (None, Some((value, _))) if !script.contains("del") => walk.start(node, key, value, at_us),
                        _ => {}
                    }
                }
            }
            StepKind::Expired(expiry) if keys.contains(&expiry.key) => {
                walk.end(node, expiry.key, at_us, KeyLifeEnd::Expired);
            }
            StepKind::Fault(
                fault @ (Fault::Crash { node: stopped }
                | Fault::PowerLoss { node: stopped }
                | Fault::Shutdown { node: stopped }),
            ) => {
                let how = match fault {
                    Fault::Crash { .. } => NodeStop::Crash,
                    Fault::PowerLoss { .. } => NodeStop::PowerLoss,
                    _ => NodeStop::Shutdown,
                };
                let held: Vec<(&'h str, &'h str)> = walk
                    .copies
                    .keys()
                    .filter(|(s, _)| *s == stopped.as_str())
                    .copied()
                    .collect();
                for (server, key) in held {
                    walk.end(server, key, at_us, KeyLifeEnd::Stopped(how));
                }
            }
            _ => {}
        }
    }
    let end_us = history.end_us();
    let open: Vec<(&'h str, &'h str)> = walk.copies.keys().copied().collect();
    for (node, key) in open {
        walk.end(node, key, end_us, KeyLifeEnd::Alive);
    }
    walk.lives
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::lease::{lease, ClockTracks, Downtimes, LeaseEnd};
    use crate::history::testkit::Builder;
    use lockstep_sim::EventKind;

    /// A life as the test compares it: server, value, holder, start, end, cause.
    type Shown<'h> = (&'h str, &'h str, Option<&'h str>, u64, u64, KeyLifeEnd<'h>);

    /// An event on `node` at true `at_us` (clocks reading true time).
    fn push(b: &mut Builder, at_us: u64, node: &str, kind: EventKind) {
        let ms = (at_us / 1_000) as i64;
        b.history.push(at_us, node, 1_700_000_000_000 + ms, ms, kind);
    }

    /// One life ended each way: by its holder's own `DEL` (which ends the key's life but not the
    /// grant's lease), by another client's `DEL`, by another value, by its expiry, by its server
    /// crashing; and one still set at the end.
    #[test]
    fn each_life_ends_where_and_as_the_server_shows() {
        let mut b = Builder::new();
        let set = |v: &'static str| ["SET", "lock", v, "NX", "PX", "10000"];
        let until = 1_700_000_010_000;
        // client-1's grant: set at 0.5 ms, released at 99 ms, its key deleted by it at 100 ms.
        let id = b.acquire_started(100, "client-1", "lock");
        b.command_from(
            500,
            "redis-1",
            Some("client-1"),
            &set("v1"),
            &[("lock", None, Some(("v1", until)))],
        );
        b.granted(1_000, "client-1", id, "lock", "v1");
        b.release(99_000, 99_500, "client-1", "lock", "v1", None);
        b.command_from(
            100_000,
            "redis-1",
            Some("client-1"),
            &["DEL", "lock"],
            &[("lock", Some(("v1", until)), None)],
        );
        // client-2's grant, deleted by client-1 at 300 ms.
        let id = b.acquire_started(150_000, "client-2", "lock");
        b.command_from(
            200_000,
            "redis-1",
            Some("client-2"),
            &set("v2"),
            &[("lock", None, Some(("v2", until)))],
        );
        b.granted(201_000, "client-2", id, "lock", "v2");
        b.command_from(
            300_000,
            "redis-1",
            Some("client-1"),
            &["DEL", "lock"],
            &[("lock", Some(("v2", until)), None)],
        );
        // client-3's grant, overwritten by client-4 (no grant of its own) at 500 ms; that value
        // expires at 600 ms.
        let id = b.acquire_started(350_000, "client-3", "lock");
        b.command_from(
            400_000,
            "redis-1",
            Some("client-3"),
            &set("v3"),
            &[("lock", None, Some(("v3", until)))],
        );
        b.granted(401_000, "client-3", id, "lock", "v3");
        b.command_from(
            500_000,
            "redis-1",
            Some("client-4"),
            &["SET", "lock", "v4", "PX", "100"],
            &[("lock", Some(("v3", until)), Some(("v4", until)))],
        );
        push(
            &mut b,
            600_000,
            "redis-1",
            EventKind::Expired {
                key: "lock".to_string(),
            },
        );
        // client-1's second grant on redis-2, which crashes at 800 ms.
        let id = b.acquire_started(650_000, "client-1", "lock");
        b.command_from(
            700_000,
            "redis-2",
            Some("client-1"),
            &set("v5"),
            &[("lock", None, Some(("v5", until)))],
        );
        b.granted(701_000, "client-1", id, "lock", "v5");
        push(
            &mut b,
            800_000,
            "world",
            EventKind::Fault {
                fault: Fault::Crash {
                    node: "redis-2".to_string(),
                },
            },
        );
        // client-2's second grant on redis-1, still set when the history ends at 1 s.
        let id = b.acquire_started(850_000, "client-2", "lock");
        b.command_from(
            900_000,
            "redis-1",
            Some("client-2"),
            &set("v6"),
            &[("lock", None, Some(("v6", until)))],
        );
        b.granted(901_000, "client-2", id, "lock", "v6");
        push(
            &mut b,
            1_000_000,
            "world",
            EventKind::Note {
                text: "end".to_string(),
            },
        );
        let history = b.build();
        let ops = OpHistory::new(&history);
        let lives: Vec<Shown<'_>> = key_lives(&ops)
            .into_iter()
            .map(|l| (l.node, l.value, l.holder, l.start_us, l.end_us, l.end))
            .collect();
        let deleted = KeyLifeEnd::Deleted {
            by: Some("client-1"),
            command: "DEL".to_string(),
            from_script: false,
        };
        assert_eq!(
            lives,
            [
                (
                    "redis-1",
                    "v1",
                    Some("client-1"),
                    500,
                    100_000,
                    KeyLifeEnd::Released { by: "client-1" }
                ),
                ("redis-1", "v2", Some("client-2"), 200_000, 300_000, deleted),
                (
                    "redis-1",
                    "v3",
                    Some("client-3"),
                    400_000,
                    500_000,
                    KeyLifeEnd::Overwritten { by: Some("client-4") }
                ),
                ("redis-1", "v4", None, 500_000, 600_000, KeyLifeEnd::Expired),
                (
                    "redis-2",
                    "v5",
                    Some("client-1"),
                    700_000,
                    800_000,
                    KeyLifeEnd::Stopped(NodeStop::Crash)
                ),
                ("redis-1", "v6", Some("client-2"), 900_000, 1_000_000, KeyLifeEnd::Alive),
            ]
        );
        // The lease reader reads the same DEL as the holder's release: the lease runs on to the
        // key's TTL (10 s after the SET), past the key's life.
        let (clocks, downtimes) = (ClockTracks::of(&ops), Downtimes::of(&ops));
        let first = lease(&ops, &ops.holds()[0], &clocks, &downtimes);
        let [(node, since_us, LeaseEnd::At(end_us, None))] = first.held[..] else {
            panic!("one copy, ended by its expiry: {:?}", first.held);
        };
        assert_eq!((node, since_us), ("redis-1", 500));
        assert!(end_us >= 10_000_000, "{end_us}");
    }

    /// A hash lock's key holds a field named after the grant (the Redisson model's `{value}:1`):
    /// its life is the grant's holder's, and the holder's release script is a release, not another
    /// client's deletion. A value that only starts like a grant's (`v70`) is nobody's.
    #[test]
    fn a_hash_locks_field_named_after_the_grant_is_its_holders() {
        let mut b = Builder::new();
        let until = 1_700_000_010_000;
        let id = b.acquire_started(100, "client-1", "lock");
        b.command_from(
            500,
            "redis-1",
            Some("client-1"),
            &[
                "EVAL",
                "redis.call('hincrby', KEYS[1], ARGV[2], 1)",
                "1",
                "lock",
                "10000",
                "v7:1",
            ],
            &[("lock", None, Some(("v7:1", until)))],
        );
        b.granted(1_000, "client-1", id, "lock", "v7");
        b.command_from(
            50_000,
            "redis-1",
            Some("client-1"),
            &["EVAL", "redis.call('del', KEYS[1])", "1", "lock", "v7:1"],
            &[("lock", Some(("v7:1", until)), None)],
        );
        b.command_from(
            60_000,
            "redis-1",
            Some("client-2"),
            &["SET", "lock", "v70", "PX", "100"],
            &[("lock", None, Some(("v70", until)))],
        );
        let history = b.build();
        let ops = OpHistory::new(&history);
        let lives: Vec<(&str, Option<&str>, KeyLifeEnd<'_>)> = key_lives(&ops)
            .into_iter()
            .map(|l| (l.value, l.holder, l.end))
            .collect();
        assert_eq!(
            lives,
            [
                ("v7:1", Some("client-1"), KeyLifeEnd::Released { by: "client-1" }),
                ("v70", None, KeyLifeEnd::Alive),
            ]
        );
    }
}
