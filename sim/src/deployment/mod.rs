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
//!   Every server's scripts run on the world's one Lua VM (`WorldLua`, made by the world), each
//!   server with its own script cache: see the Lua module (`redis/lua.rs`) for what that VM
//!   shares.
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
//!
//! **Cost.** A step visits only the servers that have something due, not every server: each
//! server's next deadline (its first key to expire by its wall clock, its next fsync, its delayed
//! restart) is filed in an index by true time, and filed again whenever it may have moved — the
//! server ran a command, a fault named it, its process stopped or started, its pause ended, the
//! step expired its keys or fsynced it, a replication stream reached it. A server whose deadline
//! has not come would have done nothing, so the history is the one visiting every server gives
//! (test builds check the index against every server's deadline after each refiling). Likewise
//! the Sentinel and the replication streams visit only the groups that have replicas or a
//! failover timeout. A world of 200 masters costs per step what its busy servers cost.

mod setup;

pub use lockstep_redis::directory::Directory;
pub use setup::{replica_name, DelayClock, MasterSetup, Persistence, StopKind};

use crate::component::{Component, Hosts};
use crate::node::Node;
use crate::pause::TrueTime;
use crate::redis::master::{self, REDIS_PORT};
use crate::serve::serve_redis;
use lockstep_history::fault::Fault;
use lockstep_history::history::EventKind;
use lockstep_redis::record::replicated_command;
use lockstep_redis::replication::{apply_stream, full_sync_note, Due, Replication, SharedReplication};
use lockstep_redis::{EngineConfig, Keyspace, RedisEngine, WorldLua};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

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
    /// Its deadline as last filed in [`Deployment::deadlines`] ([`Server::next_due_us`] then).
    filed_due_us: Option<u64>,
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

/// Servers whose deadline may have moved since it was filed, shared with their command handlers
/// (a command may change the keyspace, hence the first key to expire).
type Moved = Rc<RefCell<BTreeSet<Rc<str>>>>;

/// The Redis deployment of a world: every master and replica, persistence, restarts,
/// replication, the Sentinel and the directory.
pub(crate) struct Deployment {
    time: TrueTime,
    /// The world's Lua VM, which every server's scripts run on.
    lua: WorldLua,
    servers: BTreeMap<Rc<str>, Server>,
    replication: SharedReplication,
    directory: Directory,
    /// Every server's next deadline, `(due true µs, name)`: what [`Server::next_due_us`] gives
    /// for it, for the servers that have one. A step visits the servers whose deadline has come.
    deadlines: BTreeSet<(u64, Rc<str>)>,
    /// Servers whose deadline may have moved since it was filed; filed again before the
    /// deadlines are read ([`Deployment::refile`]).
    moved: Moved,
    /// When the pauses of servers end, `(true µs, name)`: a paused server expires nothing and
    /// does not fsync, so its deadline moves when the pause ends, with no event of its own.
    pause_ends: BTreeSet<(u64, Rc<str>)>,
}

impl Deployment {
    /// A deployment without servers, on the world's true time and Lua VM.
    pub(crate) fn new(time: TrueTime, lua: WorldLua) -> Self {
        let directory = Directory::default();
        Deployment {
            time,
            lua,
            servers: BTreeMap::new(),
            replication: Rc::new(RefCell::new(Replication::with_directory(directory.clone()))),
            directory,
            deadlines: BTreeSet::new(),
            moved: Moved::default(),
            pause_ends: BTreeSet::new(),
        }
    }

    /// The directory every node resolves group names through.
    pub(crate) fn directory(&self) -> Directory {
        self.directory.clone()
    }

    /// Makes `node` a Redis server listening on [`REDIS_PORT`], deployed as `setup` says.
    pub(crate) fn add_server(&mut self, node: Node, setup: &MasterSetup, hosts: &mut Hosts<'_>) {
        let config = EngineConfig {
            lua_instruction_budget: self.lua.budget(),
        };
        let engine = Rc::new(RefCell::new(RedisEngine::with_lua(config, self.lua.clone())));
        let name: Rc<str> = Rc::from(node.name());
        let moved = self.moved.clone();
        let command_name = name.clone();
        let on_command = Rc::new(move || {
            moved.borrow_mut().insert(command_name.clone());
        });
        let server = master::server(node.clone(), engine.clone(), self.replication.clone(), on_command);
        let host_node = node.clone();
        hosts.host(node.name(), move || {
            let node = host_node.clone();
            host_node.gate().gate(serve_redis(node, REDIS_PORT, server.clone()))
        });
        self.moved.borrow_mut().insert(name.clone());
        self.servers.insert(
            name,
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
                filed_due_us: None,
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
        let kept = server
            .persistence
            .kept_after(kind, server.engine.borrow().keyspace(), &server.synced);
        // The process is gone: the script cache, the Lua VM and the sessions with it.
        server.engine.borrow_mut().reset();
        server.engine.borrow_mut().restore(kept);
        server.stopped_at = Some((server.node.wall_ms(), server.node.monotonic_ms()));
        server.restart_pending = false;
        self.mark_moved(name);
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
            self.mark_moved(name);
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
        self.mark_moved(name);
        self.replication.borrow_mut().on_start(name);
    }

    /// Notes that server `name`'s deadline may have moved.
    fn mark_moved(&self, name: &str) {
        if let Some((name, _)) = self.servers.get_key_value(name) {
            self.moved.borrow_mut().insert(name.clone());
        }
    }

    /// Files again the deadlines that may have moved: those of the servers in `moved`, and of
    /// the servers whose pause has ended by now.
    fn refile(&mut self) {
        let now_us = self.time.now_us();
        while self.pause_ends.first().is_some_and(|(end_us, _)| *end_us <= now_us) {
            if let Some((_, name)) = self.pause_ends.pop_first() {
                self.moved.borrow_mut().insert(name);
            }
        }
        let moved = std::mem::take(&mut *self.moved.borrow_mut());
        for name in moved {
            let Some(server) = self.servers.get_mut(&name) else {
                continue;
            };
            let due_us = server.next_due_us();
            if due_us == server.filed_due_us {
                continue;
            }
            if let Some(filed_us) = server.filed_due_us {
                self.deadlines.remove(&(filed_us, name.clone()));
            }
            if let Some(due_us) = due_us {
                self.deadlines.insert((due_us, name));
            }
            server.filed_due_us = due_us;
        }
        self.check_deadlines();
    }

    /// The simulator checks itself (in test builds): every server's filed deadline is the one
    /// it has now, so that no step leaves out a server with something due.
    fn check_deadlines(&self) {
        if cfg!(debug_assertions) {
            for (name, server) in &self.servers {
                let filed = server.filed_due_us.map(|due_us| (due_us, name.clone()));
                assert!(
                    server.filed_due_us == server.next_due_us()
                        && filed.is_none_or(|entry| self.deadlines.contains(&entry)),
                    "simulator invariant: {name}'s deadline moved to {:?} µs without being filed again ({:?})",
                    server.next_due_us(),
                    server.filed_due_us
                );
            }
        }
    }

    /// The servers whose deadline has come by now, in name order: the only ones a step has
    /// anything to do for.
    fn due_servers(&self) -> Vec<Rc<str>> {
        let now_us = self.time.now_us();
        let mut due: Vec<Rc<str>> = self
            .deadlines
            .iter()
            .take_while(|(due_us, _)| *due_us <= now_us)
            .map(|(_, name)| name.clone())
            .collect();
        due.sort();
        due
    }

    /// Starts the servers whose delayed restart is due.
    fn start_due(&mut self, hosts: &mut Hosts<'_>) {
        let due: Vec<Rc<str>> = self
            .due_servers()
            .into_iter()
            .filter(|name| {
                self.servers
                    .get(name)
                    .is_some_and(|s| !s.running && s.restart_pending && s.delay_left_ms() == 0)
            })
            .collect();
        for name in due {
            self.start(&name, hosts);
        }
    }

    /// When, at the earliest (true µs), the deployment has something to do by itself (a server's
    /// deadline, a replication stream entry, the Sentinel's timeout), as of `now_us`. Reads the
    /// deadlines as the last step hook filed them: nothing moves them between a hook and the
    /// next step.
    fn next_deadline_us(&self, now_us: u64) -> Option<u64> {
        debug_assert!(
            self.moved.borrow().is_empty(),
            "simulator invariant: deadlines read before they were filed again"
        );
        let servers = self.deadlines.first().map(|(due_us, _)| *due_us);
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

    /// Active expiry on every live server among `due` (the others have no key due).
    fn active_expiry(&self, due: &[Rc<str>]) {
        for server in due.iter().filter_map(|name| self.servers.get(name)) {
            if server.reachable() {
                master::expire_due(&server.node, &server.engine, &self.replication);
            }
        }
    }

    /// Fsyncs every running `aof-everysec` server among `due` whose second has passed.
    fn fsync_due(&mut self, due: &[Rc<str>]) {
        for name in due {
            let Some(server) = self.servers.get_mut(name) else {
                continue;
            };
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
        // What it applies may change its first key to expire.
        self.mark_moved(replica);
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
                        target.node.record(replicated_command(args));
                    });
                    target.engine.borrow_mut().restore(keyspace);
                }
            }
        }
    }
}

impl Component for Deployment {
    /// Process faults (crash, power loss, shutdown, restart) and forced failovers. Any fault
    /// naming a server may move its deadline (a clock jump or drift change moves its clocks, a
    /// pause stops its expiry and fsync until the pause ends).
    fn on_fault(&mut self, fault: &Fault, hosts: &mut Hosts<'_>) {
        if let Some((name, server)) = fault.subject().and_then(|name| self.servers.get_key_value(name)) {
            self.moved.borrow_mut().insert(name.clone());
            if let Some(end_us) = server.node.gate().paused_until_us() {
                self.pause_ends.insert((end_us, name.clone()));
            }
        }
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
                let group = self.replication.borrow().group_name_of(node).map(str::to_string);
                if let Some(group) = group {
                    self.failover(&group, "forced by a failover fault");
                }
            }
            _ => {}
        }
    }

    fn before_step(&mut self, hosts: &mut Hosts<'_>) {
        self.refile();
        self.start_due(hosts);
        self.sentinel();
        self.refile();
    }

    fn next_due_us(&self, now_us: u64) -> Option<u64> {
        self.next_deadline_us(now_us)
    }

    fn after_step(&mut self, _hosts: &mut Hosts<'_>) {
        self.refile();
        let due = self.due_servers();
        self.active_expiry(&due);
        self.fsync_due(&due);
        // Their keys expired, their second was synced: their next deadlines are later.
        self.moved.borrow_mut().extend(due);
        self.deliver_replication();
        self.refile();
    }
}
