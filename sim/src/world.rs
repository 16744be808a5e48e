//! The world: builds the turmoil simulation, registers the nodes, steps it, and applies the
//! fault plan.
//!
//! One [`WorldConfig::seed`] fixes everything: turmoil's own RNG (and through it each host's
//! tokio RNG, since the crate is built with `--cfg tokio_unstable`) and every ChaCha stream of
//! ours. The step loop is the scheduler: before each step it applies the faults that are due and
//! logs resumptions; it then advances true time by one tick, steps every host, and runs active
//! expiry on every live master. Nothing here knows about locks or checkers.
//!
//! The step loop also runs the deployment (see [`crate::deployment`]): before each step it starts
//! servers whose delayed restart is due and lets the Sentinel promote a replica of a master that
//! has been unreachable too long; after each step it fsyncs `aof-everysec` servers every second
//! of their monotonic clock and delivers the replication streams that are due. Each of these is
//! logged as a `note` event on the node concerned.

use crate::clock::NodeClock;
use crate::deployment::{
    replica_name, DelayClock, Directory, MasterSetup, Persistence, Replication, SharedReplication,
};
use crate::fault::{Fault, FaultPlan};
use crate::history::{EventKind, History, HistoryHandle};
use crate::master::{self, REDIS_PORT};
use crate::node::Node;
use crate::pause::TrueTime;
use crate::redis::{EngineConfig, Keyspace, RedisEngine};
use crate::resource::{self, FencedStore, FencingMode, RESOURCE_PORT};
use crate::seed::Seed;
use crate::serve::{serve, serve_deferring};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};
use turmoil::Sim;

/// 2026-01-01T00:00:00Z: the wall time every node's clock starts from (plus its offset).
pub const DEFAULT_EPOCH_MS: i64 = 1_767_225_600_000;

/// Settings of a world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorldConfig {
    /// The one seed.
    pub seed: u64,
    /// The scheduler's step, in whole ms (turmoil's timers misbehave below 1 ms).
    pub tick_ms: u64,
    /// When the run stops if the clients have not finished, in true ms.
    pub duration_ms: u64,
    /// Wall time at true time 0, ms since the Unix epoch.
    pub epoch_ms: i64,
    /// The smallest one-way network delay, ms.
    pub min_latency_ms: u64,
    /// The largest one-way network delay, ms (delays follow turmoil's exponential curve).
    pub max_latency_ms: u64,
    /// Lua instructions a script may run before it is killed.
    pub lua_instruction_budget: u64,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            seed: 0,
            tick_ms: 1,
            duration_ms: 60_000,
            epoch_ms: DEFAULT_EPOCH_MS,
            min_latency_ms: 1,
            max_latency_ms: 5,
            lua_instruction_budget: EngineConfig::default().lua_instruction_budget,
        }
    }
}

/// A node's clock at the start of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClockSpec {
    /// Wall-clock offset from true time, ms.
    pub offset_ms: i64,
    /// Rate error, parts per million.
    pub drift_ppm: i64,
}

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A Redis master.
    Master,
    /// A replica of a Redis master (a master after a failover promotes it).
    Replica,
    /// The fenced resource.
    Resource,
    /// A client running user code.
    Client,
}

/// Why a world could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// A node name is used twice.
    #[error("node `{0}` is defined twice")]
    DuplicateNode(String),
    /// A fault names a node that does not exist.
    #[error("fault #{index} ({kind} at {at_ms} ms) names unknown node `{node}`")]
    UnknownNode {
        /// Position in the plan.
        index: usize,
        /// The fault's kind.
        kind: &'static str,
        /// When.
        at_ms: u64,
        /// The unknown name.
        node: String,
    },
    /// A fault does not apply to that kind of node (a crash of a client, a link to itself).
    #[error("fault #{index} ({kind} at {at_ms} ms) cannot target `{node}`: {reason}")]
    BadTarget {
        /// Position in the plan.
        index: usize,
        /// The fault's kind.
        kind: &'static str,
        /// When.
        at_ms: u64,
        /// The node.
        node: String,
        /// Why.
        reason: String,
    },
    /// A setting is out of range.
    #[error("invalid world setting `{field}`: {reason}")]
    Config {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// Software on a host failed (a panic or an error returned by a client).
    #[error("host software failed: {0}")]
    Host(String),
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunEnd {
    /// True time at the end, ms.
    pub at_ms: u64,
    /// Whether every client finished before the duration ran out.
    pub clients_finished: bool,
}

/// How a server process stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopKind {
    Crash,
    PowerLoss,
    Shutdown,
}

/// What a Redis server persists and how it restarts.
struct ServerState {
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

struct NodeEntry {
    node: Node,
    role: Role,
    engine: Option<Rc<RefCell<RedisEngine>>>,
    store: Option<Rc<RefCell<FencedStore>>>,
    server: Option<ServerState>,
    running: bool,
}

/// The simulated world.
pub struct World {
    sim: Sim<'static>,
    config: WorldConfig,
    seed: Seed,
    time: TrueTime,
    history: HistoryHandle,
    nodes: BTreeMap<String, NodeEntry>,
    order: Vec<String>,
    pauses: Vec<(String, u64)>,
    replication: SharedReplication,
    directory: Directory,
}

impl World {
    /// A world with no nodes yet.
    pub fn new(config: WorldConfig) -> Result<Self, WorldError> {
        if config.tick_ms == 0 {
            return Err(WorldError::Config {
                field: "tick_ms",
                reason: "must be at least 1".into(),
            });
        }
        if config.min_latency_ms > config.max_latency_ms {
            return Err(WorldError::Config {
                field: "min_latency_ms",
                reason: format!(
                    "{} is above max_latency_ms {}",
                    config.min_latency_ms, config.max_latency_ms
                ),
            });
        }
        if config.epoch_ms < 0 {
            return Err(WorldError::Config {
                field: "epoch_ms",
                reason: "must not be before 1970".into(),
            });
        }
        let seed = Seed(config.seed);
        let sim = turmoil::Builder::new()
            .rng_seed(seed.derive_u64("turmoil"))
            .tick_duration(Duration::from_millis(config.tick_ms))
            // Our own loop decides when to stop; turmoil must never cut the run short.
            .simulation_duration(Duration::from_millis(config.duration_ms.saturating_add(3_600_000)))
            .epoch(UNIX_EPOCH + Duration::from_millis(config.epoch_ms as u64))
            .min_message_latency(Duration::from_millis(config.min_latency_ms))
            .max_message_latency(Duration::from_millis(config.max_latency_ms))
            .tcp_capacity(1 << 16)
            .build();
        let directory = Directory::default();
        Ok(World {
            sim,
            config,
            seed,
            time: TrueTime::new(),
            history: HistoryHandle::new(),
            nodes: BTreeMap::new(),
            order: Vec::new(),
            pauses: Vec::new(),
            replication: Rc::new(RefCell::new(Replication {
                directory: directory.clone(),
                ..Replication::default()
            })),
            directory,
        })
    }

    /// The settings.
    pub fn config(&self) -> &WorldConfig {
        &self.config
    }

    /// The run's seed.
    pub fn seed(&self) -> Seed {
        self.seed
    }

    fn new_node(&mut self, name: &str, clock: ClockSpec, role: Role) -> Result<Node, WorldError> {
        if self.nodes.contains_key(name) || name == "net" || name == "world" {
            return Err(WorldError::DuplicateNode(name.to_string()));
        }
        if clock.drift_ppm <= -1_000_000 {
            return Err(WorldError::Config {
                field: "drift_ppm",
                reason: format!("{} on `{name}` would stop or reverse the clock", clock.drift_ppm),
            });
        }
        let node = Node::new(
            name,
            NodeClock::new(self.config.epoch_ms, clock.offset_ms, clock.drift_ppm),
            self.time.clone(),
            self.history.clone(),
            self.seed.stream(&format!("node/{name}")),
            self.directory.clone(),
        );
        self.nodes.insert(
            name.to_string(),
            NodeEntry {
                node: node.clone(),
                role,
                engine: None,
                store: None,
                server: None,
                running: true,
            },
        );
        self.order.push(name.to_string());
        Ok(node)
    }

    /// Adds a Redis master listening on [`REDIS_PORT`], without persistence or replicas.
    pub fn add_master(&mut self, name: &str, clock: ClockSpec) -> Result<Node, WorldError> {
        self.add_master_with(
            name,
            &MasterSetup {
                clock,
                ..MasterSetup::default()
            },
        )
    }

    /// Adds a Redis master deployed as `setup` says, with its replicas (named by
    /// [`replica_name`], role [`Role::Replica`]); the master names the replication group.
    pub fn add_master_with(&mut self, name: &str, setup: &MasterSetup) -> Result<Node, WorldError> {
        if setup.failover_after_ms.is_some() && setup.replicas == 0 {
            return Err(WorldError::Config {
                field: "failover_after_ms",
                reason: format!("master `{name}` has no replica to promote"),
            });
        }
        let replicas: Vec<String> = (1..=setup.replicas).map(|i| replica_name(name, i)).collect();
        for replica in &replicas {
            if self.nodes.contains_key(replica) {
                return Err(WorldError::DuplicateNode(replica.clone()));
            }
        }
        let node = self.add_server(name, setup.clock, Role::Master, setup)?;
        let replica_clock = ClockSpec {
            offset_ms: setup.replica_offset_ms,
            drift_ppm: 0,
        };
        for replica in &replicas {
            self.add_server(replica, replica_clock, Role::Replica, setup)?;
        }
        self.replication
            .borrow_mut()
            .add_group(name, &replicas, setup.replication_lag_ms, setup.failover_after_ms);
        Ok(node)
    }

    fn add_server(
        &mut self,
        name: &str,
        clock: ClockSpec,
        role: Role,
        setup: &MasterSetup,
    ) -> Result<Node, WorldError> {
        let node = self.new_node(name, clock, role)?;
        let engine = Rc::new(RefCell::new(RedisEngine::new(EngineConfig {
            lua_instruction_budget: self.config.lua_instruction_budget,
        })));
        let handler = master::handler(node.clone(), engine.clone(), self.replication.clone());
        let host_node = node.clone();
        self.sim.host(name, move || {
            let node = host_node.clone();
            let handler = handler.clone();
            host_node.gate().gate(serve_deferring(node, REDIS_PORT, handler))
        });
        if let Some(entry) = self.nodes.get_mut(name) {
            entry.engine = Some(engine);
            entry.server = Some(ServerState {
                persistence: setup.persistence,
                restart_delay_ms: setup.restart_delay_ms,
                restart_delay_clock: setup.restart_delay_clock,
                synced: Keyspace::new(),
                last_fsync_mono_ms: 0,
                stopped_at: None,
                restart_pending: false,
            });
        }
        Ok(node)
    }

    /// Adds the fenced resource listening on [`RESOURCE_PORT`].
    pub fn add_resource(&mut self, name: &str, mode: FencingMode, clock: ClockSpec) -> Result<Node, WorldError> {
        let node = self.new_node(name, clock, Role::Resource)?;
        let store = Rc::new(RefCell::new(FencedStore::new(mode)));
        let handler = resource::handler(node.clone(), store.clone());
        let host_node = node.clone();
        self.sim.host(name, move || {
            let node = host_node.clone();
            let handler = handler.clone();
            host_node.gate().gate(serve(node, RESOURCE_PORT, handler))
        });
        if let Some(entry) = self.nodes.get_mut(name) {
            entry.store = Some(store);
        }
        Ok(node)
    }

    /// Adds a client node running `software(node)`. The run ends when every client's software
    /// has returned (or the duration runs out).
    pub fn add_client<F, Fut>(&mut self, name: &str, clock: ClockSpec, software: F) -> Result<Node, WorldError>
    where
        F: FnOnce(Node) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let node = self.new_node(name, clock, Role::Client)?;
        let gate = node.gate().clone();
        let software_node = node.clone();
        self.sim.client(
            name,
            gate.gate(async move {
                software(software_node).await;
                Ok(())
            }),
        );
        Ok(node)
    }

    /// A node by name.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.get(name).map(|e| &e.node)
    }

    /// The names of the nodes with `role`, in the order they were added.
    pub fn nodes_with_role(&self, role: Role) -> Vec<String> {
        self.order
            .iter()
            .filter(|n| self.nodes.get(*n).is_some_and(|e| e.role == role))
            .cloned()
            .collect()
    }

    /// The resource's store (to read its final state).
    pub fn store(&self, name: &str) -> Option<FencedStore> {
        self.nodes.get(name)?.store.as_ref().map(|s| s.borrow().clone())
    }

    /// Every replication group and its current master (groups are named after the master they
    /// were defined with).
    pub fn masters_now(&self) -> BTreeMap<String, String> {
        self.directory.snapshot()
    }

    /// Whether the node's process is running (servers can be stopped; other nodes always run).
    pub fn is_running(&self, name: &str) -> bool {
        self.nodes.get(name).is_some_and(|e| e.running)
    }

    /// A copy of a Redis server's keyspace (to inspect what survived a fault).
    pub fn keyspace(&self, name: &str) -> Option<Keyspace> {
        Some(self.nodes.get(name)?.engine.as_ref()?.borrow().keyspace().clone())
    }

    /// A copy of the history so far.
    pub fn history(&self) -> History {
        self.history.snapshot()
    }

    /// Checks every fault of `plan` against the nodes, before anything runs.
    pub fn validate_plan(&self, plan: &FaultPlan) -> Result<(), WorldError> {
        for (index, scheduled) in plan.faults.iter().enumerate() {
            let fault = &scheduled.fault;
            let bad = |node: &str, reason: &str| WorldError::BadTarget {
                index,
                kind: fault.kind(),
                at_ms: scheduled.at_ms,
                node: node.to_string(),
                reason: reason.to_string(),
            };
            for name in fault.nodes() {
                let Some(entry) = self.nodes.get(name) else {
                    return Err(WorldError::UnknownNode {
                        index,
                        kind: fault.kind(),
                        at_ms: scheduled.at_ms,
                        node: name.to_string(),
                    });
                };
                if fault.is_process_fault() && entry.server.is_none() {
                    return Err(bad(name, "only Redis masters and replicas crash and restart"));
                }
                if matches!(fault, Fault::Failover { .. })
                    && self
                        .replication
                        .borrow()
                        .group_of(name)
                        .is_none_or(|g| g.members.len() < 2)
                {
                    return Err(bad(name, "a failover needs a master with at least one replica"));
                }
            }
            let names = fault.nodes();
            if names.len() == 2 && names[0] == names[1] {
                return Err(bad(names[0], "a link needs two different nodes"));
            }
            if let Fault::Loss { rate_ppm, .. } = fault {
                if *rate_ppm > 1_000_000 {
                    return Err(bad(names[0], "rate_ppm must be at most 1000000"));
                }
            }
            if let Fault::Drift { drift_ppm, node } = fault {
                if *drift_ppm <= -1_000_000 {
                    return Err(bad(node, "drift_ppm must be above -1000000"));
                }
            }
        }
        Ok(())
    }

    fn record_world(&self, node: &str, kind: EventKind) {
        match self.nodes.get(node) {
            Some(entry) => {
                entry.node.record(kind);
            }
            None => {
                let at_us = self.time.now_us();
                let ms = (at_us / 1_000) as i64;
                self.history.push(at_us, node, ms, ms, kind);
            }
        }
    }

    fn apply(&mut self, fault: &Fault) {
        let target = match fault.nodes().as_slice() {
            [one] => one.to_string(),
            _ => "net".to_string(),
        };
        // Log first, so the fault precedes its consequences in the history.
        self.record_world(&target, EventKind::Fault { fault: fault.clone() });
        let now_us = self.time.now_us();
        match fault {
            Fault::Pause { node, duration_ms } => {
                if let Some(entry) = self.nodes.get(node) {
                    entry.node.gate().pause_for_us(duration_ms.saturating_mul(1_000));
                    if let Some(until) = entry.node.gate().paused_until_us() {
                        self.pauses.retain(|(n, _)| n != node);
                        self.pauses.push((node.clone(), until));
                    }
                }
            }
            Fault::ClockJump { node, delta_ms } => {
                if let Some(entry) = self.nodes.get(node) {
                    entry.node.clock().jump(*delta_ms);
                }
            }
            Fault::Drift { node, drift_ppm } => {
                if let Some(entry) = self.nodes.get(node) {
                    entry.node.clock().set_drift(now_us, *drift_ppm);
                }
            }
            Fault::Partition { a, b, oneway } => {
                if *oneway {
                    self.sim.partition_oneway(a.as_str(), b.as_str());
                } else {
                    self.sim.partition(a.as_str(), b.as_str());
                }
            }
            Fault::Heal { a, b, oneway } => {
                if *oneway {
                    self.sim.repair_oneway(a.as_str(), b.as_str());
                } else {
                    self.sim.repair(a.as_str(), b.as_str());
                }
            }
            Fault::Hold { a, b } => self.sim.hold(a.as_str(), b.as_str()),
            Fault::Release { a, b } => self.sim.release(a.as_str(), b.as_str()),
            Fault::Latency {
                a,
                b,
                latency_ms,
                max_latency_ms,
            } => {
                self.sim
                    .set_link_latency(a.as_str(), b.as_str(), Duration::from_millis(*latency_ms));
                if let Some(max_ms) = max_latency_ms.filter(|max| max > latency_ms) {
                    self.sim
                        .set_link_max_message_latency(a.as_str(), b.as_str(), Duration::from_millis(max_ms));
                }
            }
            Fault::Loss { a, b, rate_ppm } => {
                self.sim
                    .set_link_fail_rate(a.as_str(), b.as_str(), f64::from(*rate_ppm) / 1e6);
            }
            Fault::Crash { node } => self.stop(node, StopKind::Crash),
            Fault::PowerLoss { node } => self.stop(node, StopKind::PowerLoss),
            Fault::Shutdown { node } => self.stop(node, StopKind::Shutdown),
            Fault::Restart { node } => {
                // A restart of a running process is a clean shutdown and a start.
                self.stop(node, StopKind::Shutdown);
                self.request_start(node);
            }
            Fault::Failover { node } => {
                let group = self.replication.borrow().group_of.get(node).cloned();
                if let Some(group) = group {
                    self.failover(&group, "forced by a failover fault");
                }
            }
        }
    }

    fn note(&self, node: &str, text: String) {
        self.record_world(node, EventKind::Note { text });
    }

    /// Stops server `name`: its memory becomes what its persistence mode kept.
    fn stop(&mut self, name: &str, kind: StopKind) {
        let Some(entry) = self.nodes.get_mut(name) else {
            return;
        };
        if !entry.running {
            return;
        }
        let (Some(engine), Some(server)) = (&entry.engine, &mut entry.server) else {
            return;
        };
        self.sim.crash(name);
        entry.running = false;
        let kept = match (server.persistence, kind) {
            (Persistence::None, _) => Keyspace::new(),
            (Persistence::AofEverysec, StopKind::PowerLoss) => server.synced.clone(),
            (Persistence::AofEverysec | Persistence::AofAlways, _) => engine.borrow().keyspace().clone(),
        };
        // The process is gone: the script cache, the Lua VM and the sessions with it.
        engine.borrow_mut().reset();
        engine.borrow_mut().restore(kept);
        server.stopped_at = Some((entry.node.wall_ms(), entry.node.monotonic_ms()));
        server.restart_pending = false;
        self.replication.borrow_mut().on_stop(name);
    }

    /// How many ms of the restart delay of `entry` are still to wait (0: it may start).
    fn delay_left(entry: &NodeEntry) -> u64 {
        let Some(server) = &entry.server else {
            return 0;
        };
        let Some((wall, mono)) = server.stopped_at else {
            return 0;
        };
        let elapsed = match server.restart_delay_clock {
            DelayClock::Monotonic => entry.node.monotonic_ms() - mono,
            DelayClock::Wall => entry.node.wall_ms() - wall,
        };
        let left = i128::from(server.restart_delay_ms) - i128::from(elapsed);
        left.clamp(0, i128::from(u64::MAX)) as u64
    }

    /// Starts server `name` now, or once its restart delay has passed.
    fn request_start(&mut self, name: &str) {
        let Some(entry) = self.nodes.get_mut(name) else {
            return;
        };
        if entry.running {
            return;
        }
        let left = Self::delay_left(entry);
        if left == 0 {
            self.start(name);
        } else if let Some(server) = &mut entry.server {
            server.restart_pending = true;
            let text = format!(
                "restart delayed: {left} ms of the {} ms restart delay left by its {} clock",
                server.restart_delay_ms,
                server.restart_delay_clock.name()
            );
            self.note(name, text);
        }
    }

    fn start(&mut self, name: &str) {
        let Some(entry) = self.nodes.get_mut(name) else {
            return;
        };
        self.sim.bounce(name);
        entry.running = true;
        let mono = entry.node.monotonic_ms();
        let was_pending = match (&mut entry.server, &entry.engine) {
            (Some(server), Some(engine)) => {
                server.synced = engine.borrow().keyspace().clone();
                server.last_fsync_mono_ms = mono;
                std::mem::take(&mut server.restart_pending)
            }
            _ => false,
        };
        if was_pending {
            self.note(name, "restarted: the restart delay has passed".to_string());
        }
        let mut repl = self.replication.borrow_mut();
        if let Some(group) = repl.group_of.get(name).cloned().and_then(|g| repl.groups.get_mut(&g)) {
            if group.master == name {
                // A restarted master: its replicas copy what it came back with.
                for link in group.links.values_mut() {
                    link.queue.clear();
                    link.needs_sync = true;
                }
            } else if let Some(link) = group.links.get_mut(name) {
                link.needs_sync = true;
            }
        }
    }

    /// Starts the servers whose delayed restart is due.
    fn start_due(&mut self) {
        let due: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, e)| !e.running && e.server.as_ref().is_some_and(|s| s.restart_pending))
            .filter(|(_, e)| Self::delay_left(e) == 0)
            .map(|(name, _)| name.clone())
            .collect();
        for name in due {
            self.start(&name);
        }
    }

    fn reachable(&self, name: &str) -> bool {
        self.nodes.get(name).is_some_and(|e| e.running && !e.node.is_paused())
    }

    /// The Sentinel: promotes a replica of every master unreachable for its `failover_after_ms`.
    fn sentinel(&mut self) {
        let now_us = self.time.now_us();
        let watched: Vec<(String, String, u64)> = self
            .replication
            .borrow()
            .groups
            .iter()
            .filter_map(|(g, group)| Some((g.clone(), group.master.clone(), group.failover_after_ms?)))
            .collect();
        for (group_name, master, after_ms) in watched {
            let reachable = self.reachable(&master);
            let since = {
                let mut repl = self.replication.borrow_mut();
                let Some(group) = repl.groups.get_mut(&group_name) else {
                    continue;
                };
                if reachable {
                    group.unreachable_since_us = None;
                    continue;
                }
                *group.unreachable_since_us.get_or_insert(now_us)
            };
            if now_us.saturating_sub(since) >= after_ms.saturating_mul(1_000) {
                let reason = format!("by the sentinel: `{master}` unreachable for {after_ms} ms");
                self.failover(&group_name, &reason);
            }
        }
    }

    /// Promotes the best reachable replica of `group_name`; the old master becomes its replica.
    fn failover(&mut self, group_name: &str, reason: &str) {
        let candidates: Vec<(String, u64)> = {
            let repl = self.replication.borrow();
            let Some(group) = repl.groups.get(group_name) else {
                return;
            };
            group
                .members
                .iter()
                .filter_map(|m| group.links.get(m).map(|l| (m, l)))
                .filter(|(m, l)| !l.needs_sync && self.reachable(m))
                .map(|(m, l)| (m.clone(), l.acked))
                .collect()
        };
        // The most advanced replica; the first defined among equals.
        let mut best: Option<(String, u64)> = None;
        for (name, acked) in candidates {
            if best.as_ref().is_none_or(|(_, b)| acked > *b) {
                best = Some((name, acked));
            }
        }
        let Some((promoted, acked)) = best else {
            if reason.starts_with("forced") {
                self.note(
                    group_name,
                    "failover impossible: no replica is reachable and in sync".to_string(),
                );
            }
            return;
        };
        let old = {
            let mut repl = self.replication.borrow_mut();
            let Some(group) = repl.groups.get_mut(group_name) else {
                return;
            };
            let old = std::mem::replace(&mut group.master, promoted.clone());
            group.links.remove(&promoted);
            group.links.insert(old.clone(), crate::deployment::Link::default());
            for link in group.links.values_mut() {
                link.queue.clear();
                link.needs_sync = true;
                link.acked = 0;
            }
            group.offset = 0;
            group.unreachable_since_us = None;
            repl.directory.set(group_name, &promoted);
            old
        };
        self.note(
            &promoted,
            format!("promoted to master of `{group_name}` {reason}; had applied the stream up to offset {acked}; `{old}` becomes its replica"),
        );
    }

    /// Fsyncs every running `aof-everysec` server whose second has passed.
    fn fsync_due(&mut self) {
        for entry in self.nodes.values_mut() {
            if !entry.running || entry.node.is_paused() {
                continue;
            }
            let (Some(server), Some(engine)) = (&mut entry.server, &entry.engine) else {
                continue;
            };
            if server.persistence != Persistence::AofEverysec {
                continue;
            }
            let mono = entry.node.monotonic_ms();
            if mono - server.last_fsync_mono_ms >= 1_000 {
                server.synced = engine.borrow().keyspace().clone();
                server.last_fsync_mono_ms = mono;
            }
        }
    }

    /// Applies the replication streams that are due; resynchronises replicas that need it.
    fn deliver_replication(&mut self) {
        let now_us = self.time.now_us();
        // Every master is a group; only groups with replicas have anything to deliver, and
        // skipping the others keeps this per-step pass free of allocations.
        let group_names: Vec<String> = self
            .replication
            .borrow()
            .groups
            .iter()
            .filter(|(_, group)| !group.links.is_empty())
            .map(|(name, _)| name.clone())
            .collect();
        for group_name in group_names {
            let (master, replicas) = {
                let repl = self.replication.borrow();
                let Some(group) = repl.groups.get(&group_name) else {
                    continue;
                };
                (group.master.clone(), group.links.keys().cloned().collect::<Vec<_>>())
            };
            for replica in replicas {
                if !self.reachable(&replica) {
                    continue;
                }
                let Some(engine) = self.nodes.get(&replica).and_then(|e| e.engine.clone()) else {
                    continue;
                };
                let needs_sync = self
                    .replication
                    .borrow()
                    .groups
                    .get(&group_name)
                    .and_then(|g| g.links.get(&replica))
                    .is_some_and(|l| l.needs_sync);
                if needs_sync {
                    if !self.reachable(&master) {
                        continue;
                    }
                    let Some(source) = self.nodes.get(&master).and_then(|e| e.engine.clone()) else {
                        continue;
                    };
                    let copy = source.borrow().keyspace().clone();
                    let keys = copy.len();
                    engine.borrow_mut().restore(copy);
                    {
                        let mut repl = self.replication.borrow_mut();
                        if let Some(group) = repl.groups.get_mut(&group_name) {
                            let offset = group.offset;
                            if let Some(link) = group.links.get_mut(&replica) {
                                link.needs_sync = false;
                                link.queue.clear();
                                link.acked = offset;
                            }
                        }
                    }
                    self.note(
                        &replica,
                        format!("full resynchronisation from `{master}`: {keys} key(s) copied"),
                    );
                    continue;
                }
                let due: Vec<(u64, Vec<crate::deployment::Effect>)> = {
                    let mut repl = self.replication.borrow_mut();
                    let Some(link) = repl.groups.get_mut(&group_name).and_then(|g| g.links.get_mut(&replica)) else {
                        continue;
                    };
                    let mut due = Vec::new();
                    while link.queue.front().is_some_and(|(at, _, _)| *at <= now_us) {
                        if let Some((_, offset, effects)) = link.queue.pop_front() {
                            link.acked = offset;
                            due.push((offset, effects));
                        }
                    }
                    due
                };
                if due.is_empty() {
                    continue;
                }
                let Some(node) = self.nodes.get(&replica).map(|e| e.node.clone()) else {
                    continue;
                };
                for (_, effects) in due {
                    let mut keyspace = engine.borrow().keyspace().clone();
                    for effect in &effects {
                        effect.apply(&mut keyspace);
                        for args in effect.commands() {
                            node.record(EventKind::Command {
                                conn: 0,
                                args,
                                reply: "+OK".to_string(),
                            });
                        }
                    }
                    engine.borrow_mut().restore(keyspace);
                }
            }
        }
    }

    fn log_resumptions(&mut self) {
        let now_us = self.time.now_us();
        let (due, waiting): (Vec<_>, Vec<_>) = self.pauses.drain(..).partition(|(_, until)| *until <= now_us);
        self.pauses = waiting;
        for (name, _) in due {
            self.record_world(&name, EventKind::Resumed);
        }
    }

    fn active_expiry(&self) {
        for entry in self.nodes.values() {
            if let (Some(engine), true, false) = (&entry.engine, entry.running, entry.node.is_paused()) {
                master::expire_due(&entry.node, engine, &self.replication);
            }
        }
    }

    /// Runs the world with `plan` until every client has finished or the duration has run out.
    pub fn run(&mut self, plan: &FaultPlan) -> Result<RunEnd, WorldError> {
        self.validate_plan(plan)?;
        let faults = plan.sorted();
        let mut next_fault = 0;
        let tick_ms = self.config.tick_ms;
        self.record_world(
            "world",
            EventKind::Note {
                text: format!("start seed={} tick_ms={}", self.config.seed, tick_ms),
            },
        );
        let mut clients_finished = false;
        loop {
            let now_ms = self.sim.elapsed().as_millis() as u64;
            self.time.advance_to(now_ms * 1_000);
            while let Some(scheduled) = faults.get(next_fault).filter(|f| f.at_ms <= now_ms) {
                self.apply(&scheduled.fault);
                next_fault += 1;
            }
            self.start_due();
            self.sentinel();
            if clients_finished || now_ms >= self.config.duration_ms {
                break;
            }
            // Readings during the step are stamped with the step's end; a pause that ends by then
            // is over for the software that runs in this step.
            self.time.advance_to((now_ms + tick_ms) * 1_000);
            self.log_resumptions();
            clients_finished = self.sim.step().map_err(|e| WorldError::Host(e.to_string()))?;
            self.active_expiry();
            self.fsync_due();
            self.deliver_replication();
        }
        let at_ms = self.time.now_us() / 1_000;
        self.record_world(
            "world",
            EventKind::Note {
                text: format!("end clients_finished={clients_finished}"),
            },
        );
        Ok(RunEnd {
            at_ms,
            clients_finished,
        })
    }
}
