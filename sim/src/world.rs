//! The world: builds the simulation, registers the nodes, steps it, and applies the fault plan.
//!
//! One [`WorldConfig::seed`] fixes everything: the network's delays and losses
//! ([`crate::wire`]), the scheduler's random choices (tokio's RNG, seeded since the crate is built
//! with `--cfg tokio_unstable`; see `machine.rs`) and every ChaCha stream of ours. The step
//! loop is the scheduler: before each step it applies the faults that are due and logs
//! resumptions; it then advances true time by one tick, delivers the segments due by then and
//! runs every task that is ready. Nothing here knows about locks or checkers.
//!
//! **The event clock.** After a step that left no task ready (no timer fired on its last
//! instant to wake one: a step ends before such a task runs), the loop asks what is due next — the
//! next fault, the next segment's delivery, the next timer the software armed, the end of a
//! pause, the deployment's next deadline (a key's expiry by its server's clock, an fsync, a
//! replication entry, a delayed restart, the Sentinel's timeout) — and jumps straight to the
//! tick before it (`World::skip_idle`). Only ticks in which nothing would have happened are
//! left out, so the history is the one stepping every tick gives ([`WorldConfig::skip_idle`]
//! turns the jumps off; `tests/simulation/event_clock.rs` runs every shipped scenario both ways). A
//! 40-second story with a 15-second pause is a few hundred steps, not 40,000. The whole loop runs
//! as one future on the machines' runtime (`machine.rs`'s `Engine::drive`): one entry into
//! the runtime per run, not one per step.
//!
//! The world owns true time, the nodes, their pause gates and clocks, the network and the fault
//! plan, and drives a list of components ([`crate::component`]): the Redis deployment (masters,
//! persistence, replicas, the Sentinel, the directory; see [`crate::deployment`]) first, then
//! any the caller added. Each fault, once logged and applied to the network and the node it
//! names, goes to each component in turn; each runs before and after every step; a jump over
//! idle time stops at what any of them has due.

use crate::clock::NodeClock;
use crate::component::{Component, Components, Hosts};
use crate::deployment::{replica_name, Deployment, MasterSetup};
use crate::machine::{Engine, Machines};
use crate::node::Node;
use crate::pause::TrueTime;
use crate::resource::{self, FencedStore, FencingMode, RESOURCE_PORT};
use crate::seed::Seed;
use crate::serve::serve;
use crate::wire::Wire;
use lockstep_history::fault::{check_drift_ppm, Fault, FaultError, FaultPlan, FaultTargets};
use lockstep_history::history::{EventKind, History, HistoryCap, HistoryHandle};
use lockstep_redis::{EngineConfig, Keyspace, MemoryPool, WorldLua, DEFAULT_WORLD_MEMORY_BYTES};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

pub use crate::clock::ClockSpec;
pub use lockstep_history::role::Role;

/// 2026-01-01T00:00:00Z: the wall time every node's clock starts from (plus its offset).
pub(crate) const DEFAULT_EPOCH_MS: i64 = 1_767_225_600_000;

/// The default cap on a run's history, in events ([`WorldConfig::history_events_max`]). The
/// largest shipped scenario records about 1,300; an event takes about 1 KB of memory, so a million
/// take about 1 GB.
pub const DEFAULT_HISTORY_EVENTS_MAX: u64 = 1_000_000;

/// The default cap on the bytes of text a run's history holds ([`WorldConfig::history_bytes_max`]):
/// 256 MiB. Keys, values, arguments, replies and error texts make up that text
/// ([`lockstep_history::history::text_bytes`]); the largest shipped scenario's whole history is under 300 KB
/// of JSON.
pub const DEFAULT_HISTORY_BYTES_MAX: u64 = 256 << 20;

/// Names no node may take: the history logs link faults on `net` and the world's own events on
/// `world`.
pub const RESERVED_NODE_NAMES: &[&str] = &["net", "world"];

/// Settings of a world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorldConfig {
    /// The one seed.
    pub seed: u64,
    /// The scheduler's step, in whole ms.
    pub tick_ms: u64,
    /// When the run stops if the clients have not finished, in true ms.
    pub duration_ms: u64,
    /// Wall time at true time 0, ms since the Unix epoch.
    pub epoch_ms: i64,
    /// The smallest one-way network delay, ms.
    pub min_latency_ms: u64,
    /// The largest one-way network delay, ms (delays follow an exponential curve; see
    /// [`crate::wire`]).
    pub max_latency_ms: u64,
    /// Lua instructions a script may run before it is killed.
    pub lua_instruction_budget: u64,
    /// The most events the history may hold: a run that would record more stops with
    /// [`WorldError::HistoryFull`] instead of growing without bound. Runs below the cap are
    /// unaffected.
    pub history_events_max: u64,
    /// The most bytes of text the history's events may carry ([`lockstep_history::history::text_bytes`]):
    /// a run whose events would carry more stops with [`WorldError::HistoryFull`]. Runs below
    /// the cap are unaffected.
    pub history_bytes_max: u64,
    /// Jump over idle time ([`crate::timer`]): steps in which no task would run and no deadline
    /// falls are left out. The history is the same either way; off, every tick is stepped (to
    /// measure what skipping saves, or to rule it out).
    #[serde(skip)]
    pub skip_idle: bool,
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
            history_events_max: DEFAULT_HISTORY_EVENTS_MAX,
            history_bytes_max: DEFAULT_HISTORY_BYTES_MAX,
            skip_idle: true,
        }
    }
}

/// Why a world could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// A node name is used twice.
    #[error("node `{0}` is defined twice")]
    DuplicateNode(String),
    /// A fault of the plan does not fit the world (an unknown node, a crash of a client, a link
    /// to itself, a number out of range).
    #[error("fault #{index} ({kind} at {at_ms} ms), field `{field}`: {error}", field = error.field())]
    BadFault {
        /// Position in the plan.
        index: usize,
        /// The fault's kind.
        kind: &'static str,
        /// When.
        at_ms: u64,
        /// What is wrong, and in which field.
        error: FaultError,
    },
    /// A setting is out of range.
    #[error("invalid world setting `{field}`: {reason}")]
    Config {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The caller asked the runs on this thread to stop ([`lockstep_history::stop::stop_when`]: a
    /// wall-clock budget ran out): the run has no verdict.
    #[error("{} at {at_ms} ms of simulated time (a wall-clock budget such as `explore --time-limit` ran out); the run has no verdict", lockstep_history::stop::STOPPED)]
    Stopped {
        /// True time when the run stopped, ms.
        at_ms: u64,
    },
    /// Software on a host failed (a panic or an error returned by a client).
    #[error("host software failed: {0}")]
    Host(String),
    /// The run would have recorded more than [`WorldConfig::history_events_max`] events, or
    /// events with more than [`WorldConfig::history_bytes_max`] bytes of text: it was stopped
    /// there, and has no verdict.
    #[error("{}", history_full_message(*.events_max, *.bytes_max, *.at_ms, *.duration_ms))]
    HistoryFull {
        /// The cap on events.
        events_max: u64,
        /// The cap on bytes, when it is the one that was reached (`None`: the cap on events).
        bytes_max: Option<u64>,
        /// True time when the run stopped, ms.
        at_ms: u64,
        /// The duration the run asked for, ms.
        duration_ms: u64,
    },
}

/// The text of [`WorldError::HistoryFull`].
fn history_full_message(events_max: u64, bytes_max: Option<u64>, at_ms: u64, duration_ms: u64) -> String {
    let stopped = format!("the run stopped at {at_ms} ms of simulated time (duration_ms = {duration_ms})");
    match bytes_max {
        None => format!(
            "{stopped}: its history reached the cap of {events_max} events (history_events_max). Shorten the run \
             (duration_ms, workload.until_ms), space the attempts (workload.acquire_retry_ms, workload.think_ms), \
             or raise history_events_max (memory grows with it)"
        ),
        Some(bytes_max) => format!(
            "{stopped}: its history reached the cap of {bytes_max} bytes of keys, values, arguments, replies and \
             error texts (history_bytes_max). Shorten the run (duration_ms, workload.until_ms), space the attempts \
             (workload.acquire_retry_ms, workload.think_ms), use shorter keys, values and scripts, or raise \
             history_bytes_max (memory grows with it)"
        ),
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunEnd {
    /// True time at the end, ms.
    pub at_ms: u64,
    /// Whether every client finished before the duration ran out.
    pub clients_finished: bool,
    /// How the world's clock got there.
    pub clock: ClockWork,
}

/// What the step loop did to cover a run's true time ([`crate::timer`]): the same for the same
/// seed, like the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClockWork {
    /// Ticks stepped (tasks run, messages delivered, deadlines met).
    pub steps: u64,
    /// Jumps over idle ticks.
    pub jumps: u64,
    /// Ticks jumped over without stepping them.
    pub ticks_skipped: u64,
    /// Jumps that stopped early because a task became ready (woken at the very end of the
    /// step before, or by a timer the simulator did not know).
    pub jumps_stopped: u64,
}

struct NodeEntry {
    node: Node,
    role: Role,
    store: Option<Rc<RefCell<FencedStore>>>,
}

/// The simulated world.
pub struct World {
    machines: Machines,
    wire: Wire,
    config: WorldConfig,
    seed: Seed,
    time: TrueTime,
    history: HistoryHandle,
    nodes: BTreeMap<String, NodeEntry>,
    order: Vec<String>,
    /// What the step loop has done so far.
    clock_work: ClockWork,
    /// How far the runtime's clock is past true time, µs: 0 except after a jump over idle time
    /// stopped inside a tick by a timer the world did not know ([`World::skip_idle`]).
    runtime_ahead_us: u64,
    /// Paused nodes and when (true µs) their pause ends, to log their resumption.
    pauses: Vec<(String, u64)>,
    /// What the world drives at each step beside its own nodes: the Redis deployment first,
    /// then what the caller added ([`World::add_component`]).
    components: Components,
    /// The memory budget every Redis server of this world shares.
    memory: std::rc::Rc<MemoryPool>,
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
        if config.history_events_max == 0 {
            return Err(WorldError::Config {
                field: "history_events_max",
                reason: "must be at least 1".into(),
            });
        }
        if config.history_bytes_max == 0 {
            return Err(WorldError::Config {
                field: "history_bytes_max",
                reason: "must be at least 1".into(),
            });
        }
        if config.epoch_ms < 0 {
            return Err(WorldError::Config {
                field: "epoch_ms",
                reason: "must not be before 1970".into(),
            });
        }
        let seed = Seed(config.seed);
        let machines = Machines::new(seed.derive_bytes("scheduler"))
            .map_err(|e| WorldError::Host(format!("cannot build the scheduler's runtime: {e}")))?;
        let wire = Wire::new(
            seed,
            config.min_latency_ms.saturating_mul(1_000),
            config.max_latency_ms.saturating_mul(1_000),
        );
        let history = HistoryHandle::with_caps(
            usize::try_from(config.history_events_max).unwrap_or(usize::MAX),
            usize::try_from(config.history_bytes_max).unwrap_or(usize::MAX),
        );
        let time = TrueTime::new();
        // One Lua VM for the world's servers (each keeps its own script cache): never shared with
        // another world, so a world depends on nothing but its seed.
        let mut components = Components::default();
        components.push(Box::new(Deployment::new(
            time.clone(),
            WorldLua::new(config.lua_instruction_budget),
        )));
        Ok(World {
            machines,
            wire,
            config,
            seed,
            time,
            history,
            nodes: BTreeMap::new(),
            order: Vec::new(),
            clock_work: ClockWork::default(),
            runtime_ahead_us: 0,
            pauses: Vec::new(),
            components,
            memory: MemoryPool::new(DEFAULT_WORLD_MEMORY_BYTES),
        })
    }

    /// Records every segment the network carries from now on: what `lockstep bench` routes
    /// again, with nothing behind it, as the cost floor of this world's traffic. Recording
    /// changes nothing in the run.
    pub fn record_wire(&self) {
        self.wire.record();
    }

    /// The segments recorded so far ([`World::record_wire`]), in the order they were sent.
    pub fn take_wire_record(&self) -> Vec<crate::wire::SentSegment> {
        self.wire.take_record()
    }

    /// The settings.
    pub fn config(&self) -> &WorldConfig {
        &self.config
    }

    /// The run's seed.
    pub fn seed(&self) -> Seed {
        self.seed
    }

    /// Adds `component`, driven at each step after the Redis deployment and the components added
    /// before it (see [`crate::component`]).
    pub fn add_component<C: Component>(&mut self, component: C) {
        self.components.push(Box::new(component));
    }

    /// The first component of type `T` (to read what it saw after a run).
    pub fn component<T: Component>(&self) -> Option<&T> {
        self.components.get::<T>()
    }

    /// The Redis deployment (always the first component).
    fn deployment(&self) -> Option<&Deployment> {
        self.components.get::<Deployment>()
    }

    fn new_node(&mut self, name: &str, clock: ClockSpec, role: Role) -> Result<Node, WorldError> {
        if self.nodes.contains_key(name) || RESERVED_NODE_NAMES.contains(&name) {
            return Err(WorldError::DuplicateNode(name.to_string()));
        }
        check_drift_ppm(clock.drift_ppm).map_err(|reason| WorldError::Config {
            field: "drift_ppm",
            reason: format!("on `{name}`: {reason}"),
        })?;
        let node = Node::new(
            name,
            NodeClock::new(self.config.epoch_ms, clock.offset_ms, clock.drift_ppm),
            self.time.clone(),
            self.history.clone(),
            (
                self.seed.stream(&format!("node/{name}")),
                self.seed.stream(&format!("node/{name}/side")),
            ),
            self.deployment().map(Deployment::directory).unwrap_or_default(),
            self.wire.clone(),
        );
        self.machines.add_node(name, node.tasks());
        self.nodes.insert(
            name.to_string(),
            NodeEntry {
                node: node.clone(),
                role,
                store: None,
            },
        );
        self.order.push(name.to_string());
        Ok(node)
    }

    /// Adds a Redis master listening on [`crate::REDIS_PORT`], without persistence or replicas.
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
        let master = self.new_node(name, setup.clock, Role::Master)?;
        // Every server's engine joins the world's memory budget.
        let memory = self.memory.clone();
        MemoryPool::scope(&memory, || {
            if let Some(deployment) = self.components.get_mut::<Deployment>() {
                deployment.add_server(master.clone(), setup, &mut Hosts::new(&mut self.machines, &self.wire));
            }
        });
        let replica_clock = ClockSpec {
            offset_ms: setup.replica_offset_ms,
            drift_ppm: 0,
        };
        for replica in &replicas {
            let node = self.new_node(replica, replica_clock, Role::Replica)?;
            MemoryPool::scope(&memory, || {
                if let Some(deployment) = self.components.get_mut::<Deployment>() {
                    deployment.add_server(node, setup, &mut Hosts::new(&mut self.machines, &self.wire));
                }
            });
        }
        if let Some(deployment) = self.components.get_mut::<Deployment>() {
            deployment.add_group(name, &replicas, setup);
        }
        Ok(master)
    }

    /// Adds the fenced resource listening on [`RESOURCE_PORT`].
    pub fn add_resource(&mut self, name: &str, mode: FencingMode, clock: ClockSpec) -> Result<Node, WorldError> {
        let node = self.new_node(name, clock, Role::Resource)?;
        let store = Rc::new(RefCell::new(FencedStore::new(mode)));
        let handler = resource::handler(node.clone(), store.clone());
        let host_node = node.clone();
        self.machines.host(name, move || {
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
        self.machines.client(
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

    /// The resource's store (to read its final state).
    pub fn store(&self, name: &str) -> Option<FencedStore> {
        self.nodes.get(name)?.store.as_ref().map(|s| s.borrow().clone())
    }

    /// Every replication group and its current master (groups are named after the master they
    /// were defined with).
    pub fn masters_now(&self) -> BTreeMap<String, String> {
        self.deployment().map(Deployment::masters_now).unwrap_or_default()
    }

    /// Whether the node's process is running (servers can be stopped; other nodes always run).
    pub fn is_running(&self, name: &str) -> bool {
        self.nodes.contains_key(name) && !self.deployment().is_some_and(|d| d.is_stopped(name))
    }

    /// A copy of a Redis server's keyspace (to inspect what survived a fault).
    pub fn keyspace(&self, name: &str) -> Option<Keyspace> {
        self.deployment()?.keyspace(name)
    }

    /// A copy of the history so far.
    pub fn history(&self) -> History {
        self.history.snapshot()
    }

    /// The history, moved out of the world once it has run (no copy: a long run's history is
    /// the largest thing in memory). The world's history is empty afterwards.
    pub fn take_history(&mut self) -> History {
        self.history.take()
    }

    /// Checks every fault of `plan` against the nodes ([`Fault::validate`]), before anything runs.
    pub fn validate_plan(&self, plan: &FaultPlan) -> Result<(), WorldError> {
        for (index, scheduled) in plan.faults.iter().enumerate() {
            scheduled.fault.validate(self).map_err(|error| WorldError::BadFault {
                index,
                kind: scheduled.fault.kind(),
                at_ms: scheduled.at_ms,
                error,
            })?;
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

    /// Logs `fault`, then applies it: to the network, to the node it names, to the deployment.
    fn apply(&mut self, fault: &Fault) {
        // Log first, so the fault precedes its consequences in the history.
        self.record_world(
            fault.subject().unwrap_or("net"),
            EventKind::Fault { fault: fault.clone() },
        );
        self.apply_to_network(fault);
        if let Some(entry) = fault.subject().and_then(|name| self.nodes.get(name)) {
            entry.node.apply_fault(fault);
            if let Fault::Pause { node, .. } = fault {
                if let Some(until) = entry.node.gate().paused_until_us() {
                    self.pauses.retain(|(n, _)| n != node);
                    self.pauses.push((node.clone(), until));
                }
            }
        }
        self.components
            .on_fault(fault, &mut Hosts::new(&mut self.machines, &self.wire));
    }

    /// The link faults, which the network applies.
    fn apply_to_network(&mut self, fault: &Fault) {
        match fault {
            Fault::Partition { a, b, oneway } => self.wire.partition(a, b, *oneway, true),
            Fault::Heal { a, b, oneway } => self.wire.partition(a, b, *oneway, false),
            Fault::Hold { a, b } => self.wire.hold(a, b, true),
            Fault::Release { a, b } => self.wire.hold(a, b, false),
            Fault::Latency {
                a,
                b,
                latency_ms,
                max_latency_ms,
            } => {
                let max_ms = max_latency_ms.unwrap_or(*latency_ms).max(*latency_ms);
                self.wire
                    .set_latency(a, b, latency_ms.saturating_mul(1_000), max_ms.saturating_mul(1_000));
            }
            Fault::Loss { a, b, rate_ppm } => self.wire.set_loss(a, b, *rate_ppm),
            _ => {}
        }
    }

    fn log_resumptions(&mut self) {
        let now_us = self.time.now_us();
        if self.pauses.iter().all(|(_, until)| *until > now_us) {
            return;
        }
        let (due, waiting): (Vec<_>, Vec<_>) = self.pauses.drain(..).partition(|(_, until)| *until <= now_us);
        self.pauses = waiting;
        for (name, _) in due {
            self.record_world(&name, EventKind::Resumed);
        }
    }

    /// [`WorldError::HistoryFull`] once the history has refused an event.
    fn check_history_cap(&self) -> Result<(), WorldError> {
        let Some(cap) = self.history.overflow() else {
            return Ok(());
        };
        Err(WorldError::HistoryFull {
            events_max: self.config.history_events_max,
            bytes_max: (cap == HistoryCap::Bytes).then_some(self.config.history_bytes_max),
            at_ms: self.time.now_us() / 1_000,
            duration_ms: self.config.duration_ms,
        })
    }

    /// The first true µs after `now_us` at which something can happen: a fault of the plan, a
    /// segment's delivery, an armed timer, the end of a pause, a deadline of the deployment, the
    /// end of the run. `None`: nothing is known to be due (the run ends at its duration).
    fn next_due_us(&self, now_us: u64, next_fault_ms: Option<u64>) -> Option<u64> {
        let runtime_now = self.machines.now();
        let timer_us = self
            .time
            .timers()
            .next_after(runtime_now)
            .map(|at| now_us.saturating_add(Machines::until_fires_us(runtime_now, at)));
        [
            next_fault_ms.map(|ms| ms.saturating_mul(1_000)),
            self.wire.next_due_us(),
            timer_us,
            self.pauses.iter().map(|(_, until)| *until).min(),
            self.components.next_due_us(now_us),
            Some(self.config.duration_ms.saturating_mul(1_000)),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Jumps from the tick boundary `now_ms` over the ticks in which nothing is due, to the
    /// boundary just before the first tick that has something to do; returns that boundary.
    /// A timer the world did not know stops the jump at the tick it falls in ([`crate::timer`]).
    /// Awaited inside [`Engine::drive`], without the [`Engine::between_steps`] guard.
    async fn skip_idle(&mut self, engine: &Engine, now_ms: u64, next_fault_ms: Option<u64>) -> u64 {
        let tick_us = self.config.tick_ms * 1_000;
        let now_us = now_ms * 1_000;
        let Some(due_us) = self.next_due_us(now_us, next_fault_ms) else {
            return now_ms;
        };
        // The step that handles a deadline is the one ending at the first boundary at or after it.
        let due_boundary_us = due_us.div_ceil(tick_us).saturating_mul(tick_us);
        if due_boundary_us <= now_us + tick_us {
            return now_ms;
        }
        let target_us = due_boundary_us - tick_us;
        let reached_us = now_us + self.machines.jump(target_us - now_us, self.time.timers()).await;
        let _between = engine.between_steps();
        // Stopped early by a ready task: step from the boundary at or before the instant it
        // stopped, as a timer firing there would have been met by stepping (on a boundary, its
        // task runs in the next step; inside a tick, in that tick's step).
        let landed_us = (reached_us / tick_us * tick_us).clamp(now_us, target_us);
        self.runtime_ahead_us = reached_us.saturating_sub(landed_us);
        self.clock_work.jumps += 1;
        self.clock_work.ticks_skipped += (landed_us - now_us) / tick_us;
        self.clock_work.jumps_stopped += u64::from(reached_us < target_us);
        self.time.advance_to(landed_us);
        self.wire.advance_to(landed_us);
        // The simulator checks itself (in test builds): nothing due was jumped over.
        debug_assert!(
            reached_us < target_us
                || self
                    .next_due_us(landed_us, next_fault_ms)
                    .is_none_or(|due| due > landed_us),
            "simulator invariant: a jump to {landed_us} µs passed something due"
        );
        landed_us / 1_000
    }

    /// Whether the step that just ended, `length` long, may have left a task ready at its very
    /// end: one woken by a timer that fired on its last instant (a step ends before such a task
    /// runs). A timer armed through the simulator is seen ([`Timers::any_due_within`]); one the
    /// simulator does not know stops the jump as soon as its task is polled, as at any other time.
    fn woken_at_step_end(&self, length: Duration) -> bool {
        let end = self.machines.now();
        self.time.timers().any_due_within(end - length, end)
    }

    /// Runs the world with `plan` until every client has finished or the duration has run out;
    /// [`WorldError::HistoryFull`] as soon as the history refuses an event (the cap is checked
    /// before every step, so at most one step's events are refused).
    pub fn run(&mut self, plan: &FaultPlan) -> Result<RunEnd, WorldError> {
        self.validate_plan(plan)?;
        let engine = self.machines.engine();
        engine.drive(self.run_inside(&engine, plan))
    }

    /// The step loop, on the runtime ([`Engine::drive`]). The world's own work between steps
    /// runs under [`Engine::between_steps`], so that tasks it wakes are queued as they always were.
    async fn run_inside(&mut self, engine: &Engine, plan: &FaultPlan) -> Result<RunEnd, WorldError> {
        let mut between = engine.between_steps();
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
        let mut now_ms = self.time.now_us() / 1_000;
        // Before the first step every client is ready. After a step, a task is left ready when a
        // timer fired on the step's last instant: the world then steps again rather than try a
        // jump that the task would stop at once.
        let mut last_step: Option<Duration> = None;
        loop {
            while let Some(scheduled) = faults.get(next_fault).filter(|f| f.at_ms <= now_ms) {
                self.apply(&scheduled.fault);
                next_fault += 1;
            }
            self.components
                .before_step(&mut Hosts::new(&mut self.machines, &self.wire));
            self.check_history_cap()?;
            if clients_finished || now_ms >= self.config.duration_ms {
                break;
            }
            if lockstep_history::stop::requested() {
                return Err(WorldError::Stopped { at_ms: now_ms });
            }
            let quiet = last_step.is_some_and(|length| !self.woken_at_step_end(length));
            if self.config.skip_idle && quiet {
                let next_fault_ms = faults.get(next_fault).map(|f| f.at_ms);
                drop(between);
                now_ms = self.skip_idle(engine, now_ms, next_fault_ms).await;
                between = engine.between_steps();
            }
            // Readings during the step are stamped with the step's end; a pause that ends by then
            // is over for the software that runs in this step.
            now_ms += tick_ms;
            self.time.advance_to(now_ms * 1_000);
            self.time.timers().release_held_back();
            self.wire.advance_to(now_ms * 1_000);
            self.log_resumptions();
            drop(between);
            let length = Duration::from_micros(tick_ms * 1_000 - std::mem::take(&mut self.runtime_ahead_us));
            last_step = Some(length);
            clients_finished = self
                .machines
                .step(length)
                .await
                .map_err(|e| WorldError::Host(format!("at {now_ms} ms of simulated time: {e}")))?;
            between = engine.between_steps();
            self.clock_work.steps += 1;
            self.components
                .after_step(&mut Hosts::new(&mut self.machines, &self.wire));
        }
        let at_ms = self.time.now_us() / 1_000;
        self.record_world(
            "world",
            EventKind::Note {
                text: format!("end clients_finished={clients_finished}"),
            },
        );
        self.check_history_cap()?;
        Ok(RunEnd {
            at_ms,
            clients_finished,
            clock: self.clock_work,
        })
    }
}

/// A fault is checked against the world's nodes and replication groups.
impl FaultTargets for World {
    fn role(&self, node: &str) -> Option<Role> {
        self.nodes.get(node).map(|e| e.role)
    }

    fn is_replicated(&self, node: &str) -> bool {
        self.deployment().is_some_and(|d| d.is_replicated(node))
    }

    fn node_names(&self) -> Vec<String> {
        self.order.clone()
    }
}
