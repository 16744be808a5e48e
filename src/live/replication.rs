//! Replicas and failover in a live run: the simulation's replication bookkeeping
//! ([`lockstep_sim::redis::replication::Replication`]: the stream with its lag, full
//! resynchronisation, the Sentinel's judgement, the choice of the replica to promote) driven by
//! real time, over live servers ([`super::server`]).
//!
//! Every millisecond [`LiveReplication::tick`] runs the Sentinel (a group whose master has been
//! unreachable — stopped or paused — for its `failover_after_ms` of true time gets a replica
//! promoted) and delivers to each reachable replica the stream entries whose lag has passed (or a
//! full copy of its master's keyspace when it must resynchronise), logging them exactly as the
//! simulated deployment does: stream commands on connection 0 of the replica, a note for a full
//! resynchronisation, a note on the promoted replica. A `failover` fault forces a promotion at
//! once ([`LiveReplication::failover`]).
//!
//! A promotion re-points every client's link to the group (its address for the master's name) to
//! the promoted replica and closes the connections open on it, as a failover does to a
//! Sentinel-aware client; the client's next connection reaches the new master. Left out, as in
//! the simulation: partial resynchronisation, Sentinel quorum and partitions between a master and
//! its replicas.

use super::link::Link;
use super::server::Server;
use lockstep_sim::redis::record::replicated_command;
use lockstep_sim::redis::replication::{apply_stream, full_sync_note, Due, Replication};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The replication groups of a live run and their servers.
pub struct LiveReplication {
    /// The groups, shared with their servers.
    pub repl: Rc<RefCell<Replication>>,
    /// Every member of every group, by name.
    servers: BTreeMap<String, Rc<Server>>,
    /// Every client link (the links to a group are re-pointed on promotion).
    links: Vec<Rc<Link>>,
}

impl LiveReplication {
    /// The groups `repl` over `servers` (at least their members), for `links`.
    pub fn new(repl: Rc<RefCell<Replication>>, servers: BTreeMap<String, Rc<Server>>, links: Vec<Rc<Link>>) -> Self {
        LiveReplication { repl, servers, links }
    }

    fn reachable(&self, name: &str) -> bool {
        self.servers.get(name).is_some_and(|s| s.reachable())
    }

    /// The Sentinel, then the replication streams due at `now_us` (true µs).
    pub fn tick(&self, now_us: u64) {
        let due = self.repl.borrow_mut().failovers_due(now_us, &|n| self.reachable(n));
        for (group, reason) in due {
            self.promote(&group, &reason);
        }
        let links = self.repl.borrow().replica_links();
        for (group, master, replica) in links {
            self.deliver(&group, &master, &replica, now_us);
        }
    }

    /// A `failover` fault on `node`: promotes a replica of its group now.
    pub fn failover(&self, node: &str) {
        let group = self.repl.borrow().group_name(node).map(str::to_string);
        if let Some(group) = group {
            self.promote(&group, "forced by a failover fault");
        }
    }

    /// Promotes the best reachable replica of `group` and re-points the clients' links to it.
    fn promote(&self, group: &str, reason: &str) {
        let promotion = self.repl.borrow_mut().promote(group, &|n| self.reachable(n));
        let Some(promotion) = promotion else {
            if reason.starts_with("forced") {
                if let Some(server) = self.servers.get(group) {
                    server.note("failover impossible: no replica is reachable and in sync".to_string());
                }
            }
            return;
        };
        let Some(promoted) = self.servers.get(&promotion.promoted) else {
            return;
        };
        promoted.note(promotion.note(reason));
        for link in self.links.iter().filter(|l| l.group == group) {
            link.repoint(promoted.clone());
        }
    }

    /// Brings `replica` of `group` up to date with `master`, as the simulated deployment does.
    fn deliver(&self, group: &str, master: &str, replica: &str, now_us: u64) {
        let Some(target) = self.servers.get(replica).filter(|s| s.reachable()) else {
            return;
        };
        let Some(engine) = target.engine() else {
            return;
        };
        let due = self.repl.borrow_mut().due(group, replica, now_us);
        match due {
            Due::FullSync => {
                let Some(source) = self.servers.get(master).filter(|s| s.reachable()) else {
                    return;
                };
                let Some(copy) = source.engine().map(|e| e.borrow().keyspace().clone()) else {
                    return;
                };
                let keys = copy.len();
                engine.borrow_mut().restore(copy);
                self.repl.borrow_mut().synced(group, replica);
                target.note(full_sync_note(master, keys));
            }
            Due::Stream(batches) => {
                for effects in batches {
                    let mut keyspace = engine.borrow().keyspace().clone();
                    apply_stream(&mut keyspace, std::slice::from_ref(&effects), &mut |args| {
                        target.record(replicated_command(args))
                    });
                    engine.borrow_mut().restore(keyspace);
                }
            }
        }
    }
}
