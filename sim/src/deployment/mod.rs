//! How Redis is deployed: persistence modes, delayed restarts, asynchronous replication with lag,
//! and Sentinel-like failover.
//!
//! These are the settings of one master ([`MasterSetup`]) and the deployment component that owns
//! the servers' state, shared only with their handlers. What is modelled:
//!
//! - **Persistence** ([`Persistence`]): `none` (a stopped master comes back empty), `aof-everysec`
//!   (the AOF is written before each reply and fsynced every second by the node's monotonic clock:
//!   a process crash loses nothing acknowledged, since the written AOF is in the OS page cache; a
//!   power loss loses every write since the last fsync), `aof-always` (fsynced before each reply:
//!   nothing acknowledged is ever lost). A clean shutdown with AOF loses nothing. The script cache
//!   is never persisted: every restart empties it (clients fall back from `EVALSHA` to `EVAL`).
//! - **Delayed restart**: after a stop (crash, power loss, shutdown), a `restart` keeps the server
//!   down until `restart_delay_ms` have passed since the stop on the node's own monotonic or wall
//!   clock ([`DelayClock`]); a wall-clock jump forward while it waits cuts the delay short.
//! - **Replication**: a master may have replicas (nodes named by [`replica_name`]). After every
//!   command the master's keyspace change is replicated as effects, as Redis 7 does: `SET key value
//!   PXAT t` (expiry as an absolute time, so the replica's own wall clock decides when the key
//!   expires there), or `DEL key` (also for keys that expire on the master). Each replica applies
//!   them `replication_lag_ms` of true time later, acknowledging at once (`WAIT` counts those
//!   acknowledgements). What a master had not yet delivered when it stops is lost. A replica that
//!   was down, that follows a new master or a restarted master resynchronises in full (its
//!   keyspace becomes a copy of its master's). Replicas answer writes with `READONLY`.
//! - **Failover**: when a group has `failover_after_ms`, a Sentinel-like process run before each step
//!   promotes a replica once the master has been unreachable (stopped or paused) for that long, in
//!   true time; the replica with the most acknowledged stream wins, ties going to the first
//!   defined. A `failover` fault forces it at once. The old master becomes a replica of the new one
//!   (at once if it runs, on restart otherwise). Clients follow through the [`Directory`]: a link
//!   to a group's name resolves to its current master on every (re)connect, as a Sentinel-aware
//!   client does, and moves when the directory changes.
//!
//! Left out: RDB snapshots, AOF rewrites and partial AOF files, partial resynchronisation
//! (`PSYNC`), replication over the simulated network (the lag is a fixed delay; partitions between
//! a master and its replicas are not modelled), replica-side read staleness rules, quorum and
//! partitions of the Sentinels themselves (one omniscient Sentinel judges reachability), `min-replicas-to-write`,
//!
//! The deployment is a component of the world (see `component.rs`): the world logs every
//! fault and hands it over; before each step the deployment starts servers whose delayed restart
//! is due and lets the Sentinel promote a replica of a master unreachable too long; after each
//! step it runs active expiry on every live server, fsyncs `aof-everysec` servers every second of
//! their monotonic clock and delivers the replication streams that are due. Each of these is
//! logged as a `note` event on the node concerned. Its state (servers, persistence, replication)
//! is its own: the world asks it questions (a server's keyspace, whether it is stopped) and never
//! edits it.

mod setup;

pub use crate::directory::Directory;
pub use setup::{replica_name, DelayClock, MasterSetup, Persistence};

use crate::component::{Component, Hosts};
use crate::fault::Fault;
use crate::history::EventKind;
use crate::master::{self, REDIS_PORT};
use crate::node::Node;
use crate::pause::TrueTime;
use crate::redis::{EngineConfig, Keyspace, RedisEngine};
use crate::replication::{apply_stream, full_sync_note, Due, Replication, SharedReplication};
use crate::serve::serve_with_hooks;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// How a server process stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopKind {
    Crash,
    PowerLoss,
    Shutdown,
}

/// One Redis server process (a master or a replica): its engine, and what it persists and how it
/// restarts.
struct Server {
    node: Node,
    engine: Rc<RefCell<RedisEngine>>,
    running: bool,
    persistence: Persistence,
    restart_delay_ms: u64,
    restart_delay_clock: DelayClock,
    /// The keyspace as of the last fsync (`aof-everysec`).
    synced: Keyspace,
    last_fsync_mono_ms: i64,
    /// (wall, monotonic) readings when it last stopped.
    stopped_at: Option<(i64, i64)>,
    /// A restart was asked for and waits for the delay.
    restart_pending: bool,
}

impl Server {
    /// Running and not paused: what the Sentinel and the replication stream can reach.
    fn reachable(&self) -> bool {
        self.running && !self.node.is_paused()
    }

    /// How many ms of the restart delay are still to wait (0: it may start).
    fn delay_left_ms(&self) -> u64 {
        let Some((wall, mono)) = self.stopped_at else {
            return 0;
        };
        let elapsed = match self.restart_delay_clock {
            DelayClock::Monotonic => self.node.monotonic_ms() - mono,
            DelayClock::Wall => self.node.wall_ms() - wall,
        };
        let left = i128::from(self.restart_delay_ms) - i128::from(elapsed);
        left.clamp(0, i128::from(u64::MAX)) as u64
    }

    fn note(&self, text: String) {
        self.node.record(EventKind::Note { text });
    }

    /// When, at the earliest (true µs), this server has something to do by itself: start after
    /// its restart delay, expire its next key, fsync.
    fn next_due_us(&self) -> Option<u64> {
        let clock = self.node.clock();
        let restart =
            (!self.running && self.restart_pending).then(|| match (self.stopped_at, self.restart_delay_clock) {
                (None, _) => 0,
                (Some((_, mono)), DelayClock::Monotonic) => {
                    clock.true_us_when_monotonic_ms(mono.saturating_add_unsigned(self.restart_delay_ms))
                }
                (Some((wall, _)), DelayClock::Wall) => {
                    clock.true_us_when_wall_ms(wall.saturating_add_unsigned(self.restart_delay_ms))
                }
            });
        let reachable = self.reachable();
        // Active expiry removes a key once the wall clock reads past its expiry.
        let expiry = reachable
            .then(|| self.engine.borrow().keyspace().next_expiry_ms())
            .flatten()
            .map(|at_ms| clock.true_us_when_wall_ms(at_ms.saturating_add(1)));
        let fsync = (reachable && self.persistence == Persistence::AofEverysec)
            .then(|| clock.true_us_when_monotonic_ms(self.last_fsync_mono_ms.saturating_add(1_000)));
        [restart, expiry, fsync].into_iter().flatten().min()
    }
}

/// The Redis deployment of a world: every master and replica, persistence, restarts,
/// replication, the Sentinel and the directory.
pub(crate) struct Deployment {
    time: TrueTime,
    lua_instruction_budget: u64,
    servers: BTreeMap<String, Server>,
    replication: SharedReplication,
    directory: Directory,
}

impl Deployment {
    /// A deployment without servers, on the world's true time.
    pub(crate) fn new(time: TrueTime, lua_instruction_budget: u64) -> Self {
        let directory = Directory::default();
        Deployment {
            time,
            lua_instruction_budget,
            servers: BTreeMap::new(),
            replication: Rc::new(RefCell::new(Replication {
                directory: directory.clone(),
                ..Replication::default()
            })),
            directory,
        }
    }

    /// The directory every node resolves group names through.
    pub(crate) fn directory(&self) -> Directory {
        self.directory.clone()
    }

    /// Makes `node` a Redis server listening on [`REDIS_PORT`], deployed as `setup` says.
    pub(crate) fn add_server(&mut self, node: Node, setup: &MasterSetup, hosts: &mut Hosts<'_>) {
        let engine = Rc::new(RefCell::new(RedisEngine::new(EngineConfig {
            lua_instruction_budget: self.lua_instruction_budget,
        })));
        let (handler, hooks) = master::handler(node.clone(), engine.clone(), self.replication.clone());
        let host_node = node.clone();
        hosts.host(node.name(), move || {
            let node = host_node.clone();
            let handler = handler.clone();
            host_node
                .gate()
                .gate(serve_with_hooks(node, REDIS_PORT, handler, Some(hooks.clone())))
        });
        self.servers.insert(
            node.name().to_string(),
            Server {
                node,
                engine,
                running: true,
                persistence: setup.persistence,
                restart_delay_ms: setup.restart_delay_ms,
                restart_delay_clock: setup.restart_delay_clock,
                synced: Keyspace::new(),
                last_fsync_mono_ms: 0,
                stopped_at: None,
                restart_pending: false,
            },
        );
    }

    /// Makes master `name` and its (already added) `replicas` a replication group named `name`.
    pub(crate) fn add_group(&mut self, name: &str, replicas: &[String], setup: &MasterSetup) {
        self.replication
            .borrow_mut()
            .add_group(name, replicas, setup.replication_lag_ms, setup.failover_after_ms);
    }

    /// Whether `name` is a server whose process is stopped.
    pub(crate) fn is_stopped(&self, name: &str) -> bool {
        self.servers.get(name).is_some_and(|s| !s.running)
    }

    /// Whether `name` belongs to a group with at least one replica.
    pub(crate) fn is_replicated(&self, name: &str) -> bool {
        self.replication
            .borrow()
            .group_of(name)
            .is_some_and(|g| g.members.len() >= 2)
    }

    /// A copy of server `name`'s keyspace.
    pub(crate) fn keyspace(&self, name: &str) -> Option<Keyspace> {
        Some(self.servers.get(name)?.engine.borrow().keyspace().clone())
    }

    /// Every replication group and its current master.
    pub(crate) fn masters_now(&self) -> BTreeMap<String, String> {
        self.directory.snapshot()
    }

    fn reachable(&self, name: &str) -> bool {
        self.servers.get(name).is_some_and(Server::reachable)
    }

    fn note(&self, name: &str, text: String) {
        if let Some(server) = self.servers.get(name) {
            server.note(text);
        }
    }

    /// Stops server `name`: its memory becomes what its persistence mode kept.
    fn stop(&mut self, name: &str, kind: StopKind, hosts: &mut Hosts<'_>) {
        let Some(server) = self.servers.get_mut(name) else {
            return;
        };
        if !server.running {
            return;
        }
        hosts.crash(name);
        server.running = false;
        let kept = match (server.persistence, kind) {
            (Persistence::None, _) => Keyspace::new(),
            (Persistence::AofEverysec, StopKind::PowerLoss) => server.synced.clone(),
            (Persistence::AofEverysec | Persistence::AofAlways, _) => server.engine.borrow().keyspace().clone(),
        };
        // The process is gone: the script cache, the Lua VM and the sessions with it.
        server.engine.borrow_mut().reset();
        server.engine.borrow_mut().restore(kept);
        server.stopped_at = Some((server.node.wall_ms(), server.node.monotonic_ms()));
        server.restart_pending = false;
        self.replication.borrow_mut().on_stop(name);
    }

    /// Starts server `name` now, or once its restart delay has passed.
    fn request_start(&mut self, name: &str, hosts: &mut Hosts<'_>) {
        let Some(server) = self.servers.get_mut(name) else {
            return;
        };
        if server.running {
            return;
        }
        let left = server.delay_left_ms();
        if left == 0 {
            self.start(name, hosts);
        } else {
            server.restart_pending = true;
            server.note(format!(
                "restart delayed: {left} ms of the {} ms restart delay left by its {} clock",
                server.restart_delay_ms,
                server.restart_delay_clock.name()
            ));
        }
    }

    fn start(&mut self, name: &str, hosts: &mut Hosts<'_>) {
        let Some(server) = self.servers.get_mut(name) else {
            return;
        };
        // The simulator checks itself: only a stopped server starts.
        assert!(!server.running, "simulator invariant: {name} started while running");
        hosts.bounce(name);
        server.running = true;
        server.synced = server.engine.borrow().keyspace().clone();
        server.last_fsync_mono_ms = server.node.monotonic_ms();
        if std::mem::take(&mut server.restart_pending) {
            server.note("restarted: the restart delay has passed".to_string());
        }
        self.replication.borrow_mut().on_start(name);
    }

    /// Starts the servers whose delayed restart is due.
    fn start_due(&mut self, hosts: &mut Hosts<'_>) {
        let due: Vec<String> = self
            .servers
            .iter()
            .filter(|(_, s)| !s.running && s.restart_pending && s.delay_left_ms() == 0)
            .map(|(name, _)| name.clone())
            .collect();
        for name in due {
            self.start(&name, hosts);
        }
    }

    /// When, at the earliest (true µs), the deployment has something to do by itself (a server's
    /// deadline, a replication stream entry, the Sentinel's timeout), as of `now_us`.
    pub(crate) fn next_due_us(&self, now_us: u64) -> Option<u64> {
        let servers = self.servers.values().filter_map(Server::next_due_us).min();
        let replication = self
            .replication
            .borrow()
            .next_due_us(now_us, &|name| self.reachable(name));
        servers.into_iter().chain(replication).min()
    }

    /// The Sentinel: promotes a replica of every master unreachable for its `failover_after_ms`.
    fn sentinel(&mut self) {
        let now_us = self.time.now_us();
        let due = self
            .replication
            .borrow_mut()
            .failovers_due(now_us, &|name| self.reachable(name));
        for (group_name, reason) in due {
            self.failover(&group_name, &reason);
        }
    }

    /// Promotes the best reachable replica of `group_name`; the old master becomes its replica.
    fn failover(&mut self, group_name: &str, reason: &str) {
        let promotion = self
            .replication
            .borrow_mut()
            .promote(group_name, &|name| self.reachable(name));
        match promotion {
            Some(promotion) => self.note(&promotion.promoted, promotion.note(reason)),
            None if reason.starts_with("forced") => self.note(
                group_name,
                "failover impossible: no replica is reachable and in sync".to_string(),
            ),
            None => {}
        }
    }

    /// Active expiry on every live server.
    fn active_expiry(&self) {
        for server in self.servers.values() {
            if server.reachable() {
                master::expire_due(&server.node, &server.engine, &self.replication);
            }
        }
    }

    /// Fsyncs every running `aof-everysec` server whose second has passed.
    fn fsync_due(&mut self) {
        for server in self.servers.values_mut() {
            if !server.reachable() || server.persistence != Persistence::AofEverysec {
                continue;
            }
            let mono = server.node.monotonic_ms();
            if mono - server.last_fsync_mono_ms >= 1_000 {
                server.synced = server.engine.borrow().keyspace().clone();
                server.last_fsync_mono_ms = mono;
            }
        }
    }

    /// Applies the replication streams that are due; resynchronises replicas that need it.
    fn deliver_replication(&mut self) {
        let now_us = self.time.now_us();
        let links = self.replication.borrow().replica_links();
        for (group_name, master, replica) in links {
            self.deliver_to(&group_name, &master, &replica, now_us);
        }
    }

    /// Brings `replica` of `group_name` up to date with `master`: a full copy when it must
    /// resynchronise, else the stream entries due by `now_us`.
    fn deliver_to(&self, group_name: &str, master: &str, replica: &str, now_us: u64) {
        let Some(target) = self.servers.get(replica).filter(|s| s.reachable()) else {
            return;
        };
        let due = self.replication.borrow_mut().due(group_name, replica, now_us);
        match due {
            Due::FullSync => {
                let Some(source) = self.servers.get(master).filter(|s| s.reachable()) else {
                    return;
                };
                let copy = source.engine.borrow().keyspace().clone();
                let keys = copy.len();
                target.engine.borrow_mut().restore(copy);
                self.replication.borrow_mut().synced(group_name, replica);
                target.note(full_sync_note(master, keys));
            }
            Due::Stream(batches) => {
                for effects in batches {
                    let mut keyspace = target.engine.borrow().keyspace().clone();
                    apply_stream(&mut keyspace, std::slice::from_ref(&effects), &mut |args| {
                        target.node.record(EventKind::Command {
                            conn: 0,
                            args,
                            reply: "+OK".to_string(),
                            effects: Vec::new(),
                            client: None,
                        });
                    });
                    target.engine.borrow_mut().restore(keyspace);
                }
            }
        }
    }
}

impl Component for Deployment {
    /// Process faults (crash, power loss, shutdown, restart) and forced failovers.
    fn on_fault(&mut self, fault: &Fault, hosts: &mut Hosts<'_>) {
        match fault {
            Fault::Crash { node } => self.stop(node, StopKind::Crash, hosts),
            Fault::PowerLoss { node } => self.stop(node, StopKind::PowerLoss, hosts),
            Fault::Shutdown { node } => self.stop(node, StopKind::Shutdown, hosts),
            Fault::Restart { node } => {
                // A restart of a running process is a clean shutdown and a start.
                self.stop(node, StopKind::Shutdown, hosts);
                self.request_start(node, hosts);
            }
            Fault::Failover { node } => {
                let group = self.replication.borrow().group_of.get(node).cloned();
                if let Some(group) = group {
                    self.failover(&group, "forced by a failover fault");
                }
            }
            _ => {}
        }
    }

    fn before_step(&mut self, hosts: &mut Hosts<'_>) {
        self.start_due(hosts);
        self.sentinel();
    }

    fn after_step(&mut self, _hosts: &mut Hosts<'_>) {
        self.active_expiry();
        self.fsync_due();
        self.deliver_replication();
    }
}
