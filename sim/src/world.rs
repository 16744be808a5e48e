//! The world: builds the turmoil simulation, registers the nodes, steps it, and applies the
//! fault plan.
//!
//! One [`WorldConfig::seed`] fixes everything: turmoil's own RNG (and through it each host's
//! tokio RNG, since the crate is built with `--cfg tokio_unstable`) and every ChaCha stream of
//! ours. The step loop is the scheduler: before each step it applies the faults that are due and
//! logs resumptions; it then advances true time by one tick, steps every host, and runs active
//! expiry on every live master. Nothing here knows about locks or checkers.

use crate::clock::NodeClock;
use crate::fault::{Fault, FaultPlan};
use crate::history::{EventKind, History, HistoryHandle};
use crate::master::{self, REDIS_PORT};
use crate::node::Node;
use crate::pause::TrueTime;
use crate::redis::{EngineConfig, RedisEngine};
use crate::resource::{self, FencedStore, FencingMode, RESOURCE_PORT};
use crate::seed::Seed;
use crate::serve::serve;
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

struct NodeEntry {
    node: Node,
    role: Role,
    engine: Option<Rc<RefCell<RedisEngine>>>,
    store: Option<Rc<RefCell<FencedStore>>>,
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
        Ok(World {
            sim,
            config,
            seed,
            time: TrueTime::new(),
            history: HistoryHandle::new(),
            nodes: BTreeMap::new(),
            order: Vec::new(),
            pauses: Vec::new(),
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
        );
        self.nodes.insert(
            name.to_string(),
            NodeEntry {
                node: node.clone(),
                role,
                engine: None,
                store: None,
                running: true,
            },
        );
        self.order.push(name.to_string());
        Ok(node)
    }

    /// Adds a Redis master listening on [`REDIS_PORT`].
    pub fn add_master(&mut self, name: &str, clock: ClockSpec) -> Result<Node, WorldError> {
        let node = self.new_node(name, clock, Role::Master)?;
        let engine = Rc::new(RefCell::new(RedisEngine::new(EngineConfig {
            lua_instruction_budget: self.config.lua_instruction_budget,
        })));
        let handler = master::handler(node.clone(), engine.clone());
        let host_node = node.clone();
        self.sim.host(name, move || {
            let node = host_node.clone();
            let handler = handler.clone();
            host_node.gate().gate(serve(node, REDIS_PORT, handler))
        });
        if let Some(entry) = self.nodes.get_mut(name) {
            entry.engine = Some(engine);
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
                if matches!(fault, Fault::Crash { .. } | Fault::Restart { .. }) && entry.role != Role::Master {
                    return Err(bad(name, "only Redis masters crash and restart"));
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
            Fault::Latency { a, b, latency_ms } => {
                self.sim
                    .set_link_latency(a.as_str(), b.as_str(), Duration::from_millis(*latency_ms));
            }
            Fault::Loss { a, b, rate_ppm } => {
                self.sim
                    .set_link_fail_rate(a.as_str(), b.as_str(), f64::from(*rate_ppm) / 1e6);
            }
            Fault::Crash { node } => {
                if let Some(entry) = self.nodes.get_mut(node) {
                    if entry.running {
                        self.sim.crash(node.as_str());
                        entry.running = false;
                        if let Some(engine) = &entry.engine {
                            engine.borrow_mut().reset();
                        }
                    }
                }
            }
            Fault::Restart { node } => {
                if let Some(entry) = self.nodes.get_mut(node) {
                    // A restart of a running process loses its memory just like a crash.
                    if let Some(engine) = &entry.engine {
                        engine.borrow_mut().reset();
                    }
                    self.sim.bounce(node.as_str());
                    entry.running = true;
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
                master::expire_due(&entry.node, engine);
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
            if clients_finished || now_ms >= self.config.duration_ms {
                break;
            }
            // Readings during the step are stamped with the step's end; a pause that ends by then
            // is over for the software that runs in this step.
            self.time.advance_to((now_ms + tick_ms) * 1_000);
            self.log_resumptions();
            clients_finished = self.sim.step().map_err(|e| WorldError::Host(e.to_string()))?;
            self.active_expiry();
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
