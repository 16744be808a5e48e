//! Asynchronous replication: each master's keyspace changes as effects (`SET key value PXAT t`,
//! `DEL key`), queued per replica with the group's lag, acknowledged when applied; the groups
//! (a master and its replicas) and who is master of each. Shared by the deployment's step hooks
//! and the servers' handlers. See `lockstep_sim::deployment` for what is modelled.
//!
//! The bookkeeping is public (the [`Replication`] methods documented here) so that a live run
//! (`lockstep live`) replicates, elects and promotes with the same rules as the simulation; the
//! servers and the clock are the caller's: it says which servers are reachable and what time it
//! is, and applies what is due to its replicas' engines.

use crate::directory::Directory;
use crate::{Entry, Keyspace, Value};
use bytes::Bytes;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

/// One replicated change: a key's new entry, or its deletion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// The key.
    pub key: Bytes,
    /// Its new entry; `None`: deleted.
    pub entry: Option<Entry>,
}

impl Effect {
    /// The commands Redis 7 would propagate for this effect.
    pub fn commands(&self) -> Vec<Vec<String>> {
        let key = String::from_utf8_lossy(&self.key).into_owned();
        let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
        match &self.entry {
            None => vec![vec!["DEL".into(), key]],
            Some(Entry {
                value: Value::String(v),
                expire_at_ms,
            }) => {
                let mut set = vec!["SET".into(), key, text(v)];
                if let Some(t) = expire_at_ms {
                    set.extend(["PXAT".to_string(), t.to_string()]);
                }
                vec![set]
            }
            Some(Entry {
                value: Value::List(items),
                expire_at_ms,
            }) => {
                let mut push = vec!["RPUSH".to_string(), key.clone()];
                push.extend(items.iter().map(text));
                let mut out = vec![vec!["DEL".to_string(), key.clone()], push];
                if let Some(t) = expire_at_ms {
                    out.push(vec!["PEXPIREAT".into(), key, t.to_string()]);
                }
                out
            }
            Some(Entry {
                value: Value::Hash(fields),
                expire_at_ms,
            }) => {
                let mut hset = vec!["HSET".to_string(), key.clone()];
                hset.extend(fields.iter().flat_map(|(f, v)| [text(f), text(v)]));
                let mut out = vec![vec!["DEL".to_string(), key.clone()], hset];
                if let Some(t) = expire_at_ms {
                    out.push(vec!["PEXPIREAT".into(), key, t.to_string()]);
                }
                out
            }
            Some(Entry {
                value: Value::Set(members),
                expire_at_ms,
            }) => {
                let mut sadd = vec!["SADD".to_string(), key.clone()];
                sadd.extend(members.iter().map(text));
                let mut out = vec![vec!["DEL".to_string(), key.clone()], sadd];
                if let Some(t) = expire_at_ms {
                    out.push(vec!["PEXPIREAT".into(), key, t.to_string()]);
                }
                out
            }
            Some(Entry {
                value: Value::ZSet(zset),
                expire_at_ms,
            }) => {
                // Scores as Redis 7.0 writes them (`%.17g`), which read back exactly.
                let mut zadd = vec!["ZADD".to_string(), key.clone()];
                zadd.extend(zset.iter().flat_map(|(m, s)| [crate::lua::fmt_g(s, 17), text(m)]));
                let mut out = vec![vec!["DEL".to_string(), key.clone()], zadd];
                if let Some(t) = expire_at_ms {
                    out.push(vec!["PEXPIREAT".into(), key, t.to_string()]);
                }
                out
            }
            Some(Entry {
                value: Value::Stream(stream),
                expire_at_ms,
            }) => crate::t_stream::replication_commands(&key, stream, *expire_at_ms),
        }
    }

    /// Applies the effect to `keyspace`.
    pub fn apply(&self, keyspace: &mut Keyspace) {
        match &self.entry {
            None => {
                keyspace.remove(&self.key);
            }
            Some(entry) => keyspace.insert(self.key.clone(), entry.value.clone(), entry.expire_at_ms),
        }
    }
}

/// The changes from `before` to `after`, in key order.
pub(crate) fn diff(before: &Keyspace, after: &Keyspace) -> Vec<Effect> {
    let mut effects = Vec::new();
    let mut old = before.iter().peekable();
    let mut new = after.iter().peekable();
    loop {
        match (old.peek(), new.peek()) {
            (None, None) => break,
            (Some((k, _)), None) => {
                effects.push(Effect {
                    key: (*k).clone(),
                    entry: None,
                });
                old.next();
            }
            (None, Some((k, e))) => {
                effects.push(Effect {
                    key: (*k).clone(),
                    entry: Some((*e).clone()),
                });
                new.next();
            }
            (Some((ko, eo)), Some((kn, en))) => match ko.cmp(kn) {
                std::cmp::Ordering::Less => {
                    effects.push(Effect {
                        key: (*ko).clone(),
                        entry: None,
                    });
                    old.next();
                }
                std::cmp::Ordering::Greater => {
                    effects.push(Effect {
                        key: (*kn).clone(),
                        entry: Some((*en).clone()),
                    });
                    new.next();
                }
                std::cmp::Ordering::Equal => {
                    if eo != en {
                        effects.push(Effect {
                            key: (*kn).clone(),
                            entry: Some((*en).clone()),
                        });
                    }
                    old.next();
                    new.next();
                }
            },
        }
    }
    effects
}

/// Effects on their way to one replica.
#[derive(Debug, Clone, Default)]
pub struct Link {
    /// `(due true µs, stream offset, effects)`, in order.
    pub queue: VecDeque<(u64, u64, Vec<Effect>)>,
    /// The stream offset the replica has applied and acknowledged.
    pub acked: u64,
    /// The replica must copy its master's whole keyspace before applying the stream.
    pub needs_sync: bool,
}

/// A master and its replicas.
#[derive(Debug, Clone)]
pub struct Group {
    /// Every member, the original master first, then the replicas in order.
    pub members: Vec<String>,
    /// The current master.
    pub master: String,
    /// How long each effect takes to reach a replica, ms.
    pub lag_ms: u64,
    /// After how long unreachable the Sentinel promotes a replica, ms (`None`: never).
    pub failover_after_ms: Option<u64>,
    /// The master's stream offset: one per replicated command.
    pub offset: u64,
    /// One link per member that is not the master.
    pub links: BTreeMap<String, Link>,
    /// Since when (true µs) the master has been unreachable.
    pub unreachable_since_us: Option<u64>,
}

/// Every replication group of a world (or of a live run).
#[derive(Debug, Default)]
pub struct Replication {
    pub(crate) groups: BTreeMap<String, Group>,
    pub(crate) group_of: BTreeMap<String, String>,
    pub(crate) directory: Directory,
    /// The groups with replicas (a promotion keeps their number): the only ones with streams to
    /// deliver. A world of many single masters never visits them at each step.
    pub(crate) replicated: BTreeSet<String>,
    /// The groups the Sentinel watches (with a `failover_after_ms`).
    pub(crate) watched: BTreeSet<String>,
}

/// A server's role in its group, as [`Replication::member_role`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemberRole {
    /// A master (or a server outside every group): it runs writes.
    pub is_master: bool,
    /// A master with replicas: it publishes its commands' effects.
    pub has_replicas: bool,
}

/// A replica promoted by [`Replication::promote`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Promotion {
    /// The group.
    pub group: String,
    /// The promoted replica, the group's new master.
    pub promoted: String,
    /// The stream offset it had applied.
    pub acked: u64,
    /// The old master, now its replica.
    pub old: String,
}

impl Promotion {
    /// The note logged on the promoted node (`reason`: why, e.g. `by the sentinel: ...`).
    pub fn note(&self, reason: &str) -> String {
        format!(
            "promoted to master of `{}` {reason}; had applied the stream up to offset {}; `{}` becomes its replica",
            self.group, self.acked, self.old
        )
    }
}

/// What a replica is due: see [`Replication::due`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    /// It must copy its master's whole keyspace first (then call [`Replication::synced`]).
    FullSync,
    /// The stream entries due, in order, each a command's effects (already acknowledged).
    Stream(Vec<Vec<Effect>>),
}

/// The note logged on a replica after a full resynchronisation from `master` copied `keys` keys.
pub fn full_sync_note(master: &str, keys: usize) -> String {
    format!("full resynchronisation from `{master}`: {keys} key(s) copied")
}

/// Applies stream entries (see [`Due::Stream`]) to `keyspace`, handing each propagated command to
/// `record` (the simulated replica logs them as commands on connection 0).
pub fn apply_stream(keyspace: &mut Keyspace, batches: &[Vec<Effect>], record: &mut dyn FnMut(Vec<String>)) {
    for effects in batches {
        for effect in effects {
            effect.apply(keyspace);
            for args in effect.commands() {
                record(args);
            }
        }
    }
}

/// Shared handle: the deployment's step hooks and the servers' handlers both use it.
pub type SharedReplication = Rc<RefCell<Replication>>;

impl Replication {
    /// Makes master `name` and its `replicas` a group named `name`, replicating with `lag_ms` of
    /// true time, watched by the Sentinel when `failover_after_ms` is set.
    pub fn add_group(&mut self, name: &str, replicas: &[String], lag_ms: u64, failover_after_ms: Option<u64>) {
        let mut members = vec![name.to_string()];
        members.extend(replicas.iter().cloned());
        for member in &members {
            self.group_of.insert(member.clone(), name.to_string());
        }
        let links = replicas
            .iter()
            .map(|r| (r.clone(), Link::default()))
            .collect::<BTreeMap<_, _>>();
        if !links.is_empty() {
            self.replicated.insert(name.to_string());
        }
        if failover_after_ms.is_some() {
            self.watched.insert(name.to_string());
        }
        self.groups.insert(
            name.to_string(),
            Group {
                members,
                master: name.to_string(),
                lag_ms,
                failover_after_ms,
                offset: 0,
                links,
                unreachable_since_us: None,
            },
        );
        self.directory.set(name, name);
    }

    /// No groups yet; failovers are published to `directory`.
    pub fn with_directory(directory: Directory) -> Self {
        Replication {
            directory,
            ..Replication::default()
        }
    }

    /// The group `node` belongs to.
    pub fn group_of(&self, node: &str) -> Option<&Group> {
        self.groups.get(self.group_of.get(node)?)
    }

    /// The name of the group `node` belongs to.
    pub fn group_name_of(&self, node: &str) -> Option<&str> {
        self.group_of.get(node).map(String::as_str)
    }

    fn group_of_mut(&mut self, node: &str) -> Option<&mut Group> {
        let name = self.group_of.get(node)?.clone();
        self.groups.get_mut(&name)
    }

    /// `node`'s role for the command it runs: [`Self::is_master`] and [`Self::has_replicas`] in
    /// one look-up of its group (a server asks at every command).
    pub(crate) fn member_role(&self, node: &str) -> MemberRole {
        // Without any replica in the world every server is a master of its own (the common case,
        // and a world of many masters would otherwise pay two look-ups by name per command).
        if self.replicated.is_empty() {
            return MemberRole {
                is_master: true,
                has_replicas: false,
            };
        }
        match self.group_of(node) {
            None => MemberRole {
                is_master: true,
                has_replicas: false,
            },
            Some(group) => MemberRole {
                is_master: group.master == node,
                has_replicas: group.master == node && !group.links.is_empty(),
            },
        }
    }

    /// Whether `node` is currently a master (a node outside every group counts as one).
    pub fn is_master(&self, node: &str) -> bool {
        self.group_of(node).is_none_or(|g| g.master == node)
    }

    /// Whether `node` is a master with at least one replica.
    pub(crate) fn has_replicas(&self, node: &str) -> bool {
        self.group_of(node)
            .is_some_and(|g| g.master == node && !g.links.is_empty())
    }

    /// Queues `effects` from master `node` for every replica; returns the new stream offset.
    pub fn publish(&mut self, node: &str, effects: Vec<Effect>, now_us: u64) -> u64 {
        let Some(group) = self.group_of_mut(node) else {
            return 0;
        };
        if group.master != node || effects.is_empty() {
            return group.offset;
        }
        group.offset += 1;
        let due = now_us.saturating_add(group.lag_ms.saturating_mul(1_000));
        let offset = group.offset;
        for link in group.links.values_mut() {
            link.queue.push_back((due, offset, effects.clone()));
        }
        offset
    }

    /// The stream offset of master `node`.
    pub fn offset(&self, node: &str) -> u64 {
        self.group_of(node).map_or(0, |g| g.offset)
    }

    /// How many replicas of master `node` have acknowledged `offset`.
    pub fn acked_count(&self, node: &str, offset: u64) -> usize {
        self.group_of(node).filter(|g| g.master == node).map_or(0, |g| {
            g.links.values().filter(|l| !l.needs_sync && l.acked >= offset).count()
        })
    }

    /// `node` stopped: what it had not delivered (as a master) or received (as a replica) is lost;
    /// a replica must resynchronise.
    pub fn on_stop(&mut self, node: &str) {
        let Some(group) = self.group_of_mut(node) else {
            return;
        };
        if group.master == node {
            // The replicas keep what they applied (one may be promoted); they resynchronise
            // when this master starts again.
            for link in group.links.values_mut() {
                link.queue.clear();
            }
        } else if let Some(link) = group.links.get_mut(node) {
            link.queue.clear();
            link.needs_sync = true;
        }
    }

    /// `node` started (again): a restarted master's replicas copy what it came back with; a
    /// restarted replica resynchronises.
    pub fn on_start(&mut self, node: &str) {
        let Some(group) = self.group_of_mut(node) else {
            return;
        };
        if group.master == node {
            for link in group.links.values_mut() {
                link.queue.clear();
                link.needs_sync = true;
            }
        } else if let Some(link) = group.links.get_mut(node) {
            link.needs_sync = true;
        }
    }

    /// The group `node` belongs to, by name.
    pub fn group_name(&self, node: &str) -> Option<&str> {
        self.group_of.get(node).map(String::as_str)
    }

    /// The Sentinel's judgement at `now_us` (true µs): for every watched group whose master is
    /// not `reachable`, since when it has been; the groups whose master has been unreachable for
    /// their `failover_after_ms`, in group order, each with the reason to give [`Self::promote`].
    pub fn failovers_due(&mut self, now_us: u64, reachable: &dyn Fn(&str) -> bool) -> Vec<(String, String)> {
        let mut due = Vec::new();
        for group_name in &self.watched {
            let Some(group) = self.groups.get_mut(group_name) else {
                continue;
            };
            let Some(after_ms) = group.failover_after_ms else {
                continue;
            };
            if reachable(&group.master) {
                group.unreachable_since_us = None;
                continue;
            }
            let since = *group.unreachable_since_us.get_or_insert(now_us);
            if now_us.saturating_sub(since) >= after_ms.saturating_mul(1_000) {
                due.push((
                    group_name.clone(),
                    format!("by the sentinel: `{}` unreachable for {after_ms} ms", group.master),
                ));
            }
        }
        due
    }

    /// Promotes the most advanced replica of `group_name` that is `reachable` and in sync (the
    /// first defined among equals); the old master becomes its replica and every replica
    /// resynchronises. `None`: no candidate (nothing changes).
    pub fn promote(&mut self, group_name: &str, reachable: &dyn Fn(&str) -> bool) -> Option<Promotion> {
        let group = self.groups.get_mut(group_name)?;
        let mut best: Option<(String, u64)> = None;
        for member in &group.members {
            let Some(link) = group.links.get(member) else {
                continue;
            };
            if link.needs_sync || !reachable(member) {
                continue;
            }
            if best.as_ref().is_none_or(|(_, b)| link.acked > *b) {
                best = Some((member.clone(), link.acked));
            }
        }
        let (promoted, acked) = best?;
        let old = std::mem::replace(&mut group.master, promoted.clone());
        group.links.remove(&promoted);
        group.links.insert(old.clone(), Link::default());
        for link in group.links.values_mut() {
            link.queue.clear();
            link.needs_sync = true;
            link.acked = 0;
        }
        group.offset = 0;
        group.unreachable_since_us = None;
        self.directory.set(group_name, &promoted);
        Some(Promotion {
            group: group_name.to_string(),
            promoted,
            acked,
            old,
        })
    }

    /// Every (group, current master, replica) with a replication link, in order.
    pub fn replica_links(&self) -> Vec<(String, String, String)> {
        self.replicated
            .iter()
            .filter_map(|name| Some((name, self.groups.get(name)?)))
            .flat_map(|(name, group)| {
                group
                    .links
                    .keys()
                    .map(move |replica| (name.clone(), group.master.clone(), replica.clone()))
            })
            .collect()
    }

    /// What `replica` of `group_name` is due at `now_us`: a full copy when it must resynchronise,
    /// else the stream entries due (taken off its queue and acknowledged).
    pub fn due(&mut self, group_name: &str, replica: &str, now_us: u64) -> Due {
        let Some(link) = self.groups.get_mut(group_name).and_then(|g| g.links.get_mut(replica)) else {
            return Due::Stream(Vec::new());
        };
        if link.needs_sync {
            return Due::FullSync;
        }
        let mut due = Vec::new();
        while link.queue.front().is_some_and(|(at, _, _)| *at <= now_us) {
            if let Some((_, offset, effects)) = link.queue.pop_front() {
                link.acked = offset;
                due.push(effects);
            }
        }
        Due::Stream(due)
    }

    /// When, at the earliest (true µs), a stream entry is due at a reachable replica, a replica
    /// must resynchronise (`now_us`), or the Sentinel's timeout for an unreachable master runs
    /// out.
    pub fn next_due_us(&self, now_us: u64, reachable: &dyn Fn(&str) -> bool) -> Option<u64> {
        let mut due: Option<u64> = None;
        let mut at = |us: u64| due = Some(due.map_or(us, |d| d.min(us)));
        let visited = self.replicated.union(&self.watched);
        for group in visited.filter_map(|name| self.groups.get(name)) {
            if let (Some(after_ms), Some(since_us)) = (group.failover_after_ms, group.unreachable_since_us) {
                at(since_us.saturating_add(after_ms.saturating_mul(1_000)));
            }
            for (replica, link) in &group.links {
                if !reachable(replica) {
                    continue;
                }
                if link.needs_sync {
                    at(now_us);
                } else if let Some((at_us, _, _)) = link.queue.front() {
                    at(*at_us);
                }
            }
        }
        due
    }

    /// `replica` of `group_name` copied its master's keyspace: it is in sync at the master's offset.
    pub fn synced(&mut self, group_name: &str, replica: &str) {
        if let Some(group) = self.groups.get_mut(group_name) {
            let offset = group.offset;
            if let Some(link) = group.links.get_mut(replica) {
                link.needs_sync = false;
                link.queue.clear();
                link.acked = offset;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Replication::member_role`] (with its shortcut for a world without replicas) says what
    /// [`Replication::is_master`] and [`Replication::has_replicas`] say, before and after a
    /// promotion.
    #[test]
    fn a_members_role_is_what_its_group_says() {
        let agree = |repl: &Replication, node: &str| {
            let role = repl.member_role(node);
            assert_eq!(role.is_master, repl.is_master(node), "{node}");
            assert_eq!(role.has_replicas, repl.has_replicas(node), "{node}");
            role
        };
        let mut repl = Replication::default();
        repl.add_group("redis-1", &[], 0, None);
        repl.add_group("redis-2", &[], 0, None);
        for node in ["redis-1", "redis-2", "elsewhere"] {
            assert!(agree(&repl, node).is_master);
        }
        repl.add_group("redis-3", &["redis-3r".to_string()], 0, Some(1_000));
        assert!(agree(&repl, "redis-1").is_master);
        assert!(agree(&repl, "redis-3").has_replicas);
        assert!(!agree(&repl, "redis-3r").is_master);
        repl.promote("redis-3", &|_| true).expect("a replica to promote");
        assert!(!agree(&repl, "redis-3").is_master);
        let promoted = agree(&repl, "redis-3r");
        assert!(promoted.is_master && promoted.has_replicas);
    }

    #[test]
    fn a_set_replicates_as_del_sadd() {
        let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        let effect = Effect {
            key: b("s"),
            entry: Some(Entry {
                value: Value::Set([b("m"), b("a")].into_iter().collect()),
                expire_at_ms: None,
            }),
        };
        let words = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            effect.commands(),
            vec![words(&["DEL", "s"]), words(&["SADD", "s", "a", "m"])]
        );
    }

    #[test]
    fn a_sorted_set_replicates_as_del_zadd_pexpireat() {
        let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        let effect = Effect {
            key: b("z"),
            entry: Some(Entry {
                value: Value::ZSet(
                    [(b("m"), 1.5), (b("a"), 2.0), (b("x"), f64::NEG_INFINITY)]
                        .into_iter()
                        .collect(),
                ),
                expire_at_ms: Some(7),
            }),
        };
        let words = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            effect.commands(),
            vec![
                words(&["DEL", "z"]),
                words(&["ZADD", "z", "-inf", "x", "1.5", "m", "2", "a"]),
                words(&["PEXPIREAT", "z", "7"])
            ]
        );
    }

    #[test]
    fn a_hash_replicates_as_del_hset_pexpireat() {
        let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        let effect = Effect {
            key: b("h"),
            entry: Some(Entry {
                value: Value::Hash(vec![(b("f"), b("1")), (b("g"), b("2"))]),
                expire_at_ms: Some(5_000),
            }),
        };
        let words = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            effect.commands(),
            vec![
                words(&["DEL", "h"]),
                words(&["HSET", "h", "f", "1", "g", "2"]),
                words(&["PEXPIREAT", "h", "5000"]),
            ]
        );
        let mut keyspace = Keyspace::new();
        effect.apply(&mut keyspace);
        assert_eq!(keyspace.get(b"h"), effect.entry.as_ref());
    }
}
