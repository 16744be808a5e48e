//! A scenario, fully resolved: the world (seed, network, masters and their deployment, the
//! resource, clients), the lock under test, the workload, the fault schedule and the
//! expectations. The scenario front end (`crate::scenario`) builds it from a TOML file and
//! writes it back.

use super::expect::ExploreSpec;
use super::lock::LockSpec;
use super::verdict::Verdict;
use lockstep_sim::{ClockSpec, FaultPlan, FencingMode, MasterSetup, WorldConfig};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// The start of a served report's scenario description (`lockstep serve`): the timeline's title
/// says what ran instead of the scenario file's lock settings, which serve does not use.
pub const SERVED_DESCRIPTION: &str = "Served in real time by `lockstep serve`:";

/// The name of the resource node.
pub const RESOURCE_NODE: &str = "resource";

/// One scenario, fully resolved: every default filled in, every name checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    /// The scenario's name, `[a-z0-9-]+`.
    pub name: String,
    /// What the scenario shows.
    pub description: String,
    /// The one seed of the run.
    pub seed: u64,
    /// When the run stops if the clients have not finished, true ms.
    pub duration_ms: u64,
    /// The scheduler's step, ms (≥ 1).
    pub tick_ms: u64,
    /// Step every tick instead of jumping over idle ones (not a file setting: `lockstep run
    /// --step-every-tick`). The history is the same either way; this rules the event clock out
    /// when a run looks wrong ([`lockstep_sim::WorldConfig::skip_idle`]).
    #[serde(skip)]
    pub step_every_tick: bool,
    /// The most events a run's history may hold ([`lockstep_sim::WorldConfig::history_events_max`]):
    /// a run that would record more stops with an error naming it.
    pub history_events_max: u64,
    /// The most bytes of text a run's history may hold
    /// ([`lockstep_sim::WorldConfig::history_bytes_max`]): a run whose events would carry more
    /// stops with an error naming it.
    pub history_bytes_max: u64,
    /// Message delays.
    pub network: NetworkSpec,
    /// The Redis masters, in file order (never empty).
    pub masters: Vec<NodeSpec>,
    /// How the resource judges fencing tokens.
    pub resource: FencingMode,
    /// The lock under test.
    pub lock: LockSpec,
    /// What each client does.
    pub workload: WorkloadSpec,
    /// The clients, in file order (never empty).
    pub clients: Vec<ClientSpec>,
    /// The fault schedule, in file order.
    pub faults: FaultPlan,
    /// The expected verdict per checker name (a subset of [`CHECKERS`](super::CHECKERS)).
    pub expect: BTreeMap<String, Verdict>,
    /// How each master is deployed, by master name (an entry for every master; its `clock` is
    /// the master's).
    pub deployment: BTreeMap<String, MasterSetup>,
    /// The `[explore]` block: how `lockstep ci` explores this scenario, if it does.
    pub explore: Option<ExploreSpec>,
    /// Another scenario's name: reports show the two runs' timelines side by side (e.g. a lock
    /// without fencing beside the same lock with it).
    pub compare_with: Option<String>,
}

/// Message delays of the simulated network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NetworkSpec {
    /// The smallest one-way delay, ms.
    pub min_latency_ms: u64,
    /// The largest one-way delay, ms (≥ `min_latency_ms`).
    pub max_latency_ms: u64,
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            min_latency_ms: 1,
            max_latency_ms: 5,
        }
    }
}

/// A Redis master and its clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeSpec {
    /// The node's name.
    pub name: String,
    /// Wall-clock offset from true time, ms.
    pub offset_ms: i64,
    /// Clock rate error, ppm (> −1000000).
    pub drift_ppm: i64,
}

impl NodeSpec {
    /// The node's clock at the start of the run.
    pub fn clock(&self) -> ClockSpec {
        ClockSpec {
            offset_ms: self.offset_ms,
            drift_ppm: self.drift_ppm,
        }
    }
}

/// How long a client works inside the critical section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkMs {
    /// Always this many ms.
    Fixed(u64),
    /// Uniformly between the two bounds, inclusive (`min <= max`).
    Range(u64, u64),
}

impl WorkMs {
    /// The smallest possible duration.
    pub fn min(&self) -> u64 {
        match *self {
            WorkMs::Fixed(ms) => ms,
            WorkMs::Range(min, _) => min,
        }
    }

    /// The largest possible duration.
    pub fn max(&self) -> u64 {
        match *self {
            WorkMs::Fixed(ms) => ms,
            WorkMs::Range(_, max) => max,
        }
    }
}

impl Default for WorkMs {
    fn default() -> Self {
        WorkMs::Fixed(100)
    }
}

impl fmt::Display for WorkMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkMs::Fixed(ms) => write!(f, "{ms}"),
            WorkMs::Range(min, max) => write!(f, "[{min}, {max}]"),
        }
    }
}

impl Serialize for WorkMs {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            WorkMs::Fixed(ms) => serializer.serialize_u64(ms),
            WorkMs::Range(min, max) => [min, max].serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for WorkMs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = WorkMs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer or a [min, max] pair of them")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<WorkMs, E> {
                Ok(WorkMs::Fixed(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<WorkMs, E> {
                u64::try_from(v)
                    .map(WorkMs::Fixed)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<WorkMs, A::Error> {
                use serde::de::Error;
                let min: u64 = seq.next_element()?.ok_or_else(|| A::Error::invalid_length(0, &self))?;
                let max: u64 = seq.next_element()?.ok_or_else(|| A::Error::invalid_length(1, &self))?;
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::invalid_length(3, &self));
                }
                Ok(WorkMs::Range(min, max))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// How long a critical section works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case", tag = "mode")]
pub enum WorkMode {
    /// For `work_ms` (fixed or drawn from a range): today's workload.
    #[default]
    Fixed,
    /// Until the grant's validity runs out, less `margin_ms`, by the client's monotonic clock
    /// (counted from where the lock computed the validity; the validity known when the work
    /// starts — a renewal during the work does not lengthen it).
    UntilValidity {
        /// Stop this long before the validity runs out, ms.
        margin_ms: u64,
    },
}

impl WorkMode {
    /// The name in scenario files (`work = ...`).
    pub fn name(&self) -> &'static str {
        match self {
            WorkMode::Fixed => "fixed",
            WorkMode::UntilValidity { .. } => "until-validity",
        }
    }
}

/// Several concurrent tasks per client, set at the workload level (for every algorithm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TasksSpec {
    /// Concurrent tasks per client running the workload loop (1..=16).
    pub tasks: u32,
    /// With several tasks: they all use the client's one lock object (else each its own).
    pub share_lock_object: bool,
}

/// What each client does (every default resolved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkloadSpec {
    /// The resource key holding the counter.
    pub key: String,
    /// Iterations per client; `None` = unlimited (until `until_ms` or the end of the run).
    pub iterations: Option<u64>,
    /// Stop starting new iterations after this true time, ms.
    pub until_ms: Option<u64>,
    /// Work inside the critical section.
    pub work_ms: WorkMs,
    /// Delay between failed acquire attempts, ms.
    pub acquire_retry_ms: u64,
    /// Pause between iterations, ms.
    pub think_ms: u64,
    /// Per-request timeout of the clients' resource connection, ms (resolved; the lock's
    /// `request_timeout_ms` unless written).
    pub resource_timeout_ms: u64,
    /// How long a critical section works (`Fixed`: `work_ms`, today's default).
    pub work: WorkMode,
    /// The holder refuses its own write once its validity has run out by its own clock (the
    /// refusal is recorded as a failed write); off by default.
    pub refuse_write_after_validity: bool,
    /// Reads of the counter at the start of each turn (≥ 1; the last one's value counts).
    pub reads_per_turn: u32,
    /// Writes at the end of each turn, back to back: the value read plus 1, plus 2, … (0: a
    /// read-only turn), each with the grant's fencing token.
    pub writes_per_turn: u32,
    /// Several tasks per client (`None`: as the lock says — the script lock's `tasks`, else 1).
    pub tasks: Option<TasksSpec>,
}

impl WorkloadSpec {
    /// A workload with every default (what an absent `[workload]` table resolves to, with the
    /// lock's default request timeout).
    pub fn defaults() -> Self {
        WorkloadSpec {
            key: "counter".into(),
            iterations: Some(1),
            until_ms: None,
            work_ms: WorkMs::default(),
            acquire_retry_ms: 100,
            think_ms: 0,
            resource_timeout_ms: 50,
            work: WorkMode::Fixed,
            refuse_write_after_validity: false,
            reads_per_turn: 1,
            writes_per_turn: 1,
            tasks: None,
        }
    }
}

/// A client node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientSpec {
    /// The node's name.
    pub name: String,
    /// When the client starts, true ms.
    pub start_ms: u64,
    /// Wall-clock offset from true time, ms.
    pub offset_ms: i64,
    /// Clock rate error, ppm (> −1000000).
    pub drift_ppm: i64,
    /// Override of [`WorkloadSpec::iterations`] (`None`: the workload's).
    pub iterations: Option<u64>,
    /// Override of [`WorkloadSpec::work_ms`] (`None`: the workload's).
    pub work_ms: Option<WorkMs>,
    /// Override of the workload's task count (`None`: the workload's, else the lock's).
    pub tasks: Option<u32>,
}

impl ClientSpec {
    /// A client named `name` with the default settings.
    pub fn named(name: impl Into<String>) -> Self {
        ClientSpec {
            name: name.into(),
            start_ms: 0,
            offset_ms: 0,
            drift_ppm: 0,
            iterations: None,
            work_ms: None,
            tasks: None,
        }
    }

    /// The node's clock at the start of the run.
    pub fn clock(&self) -> ClockSpec {
        ClockSpec {
            offset_ms: self.offset_ms,
            drift_ppm: self.drift_ppm,
        }
    }

    #[cfg(test)]
    /// This client's iterations: its override, else the workload's (`None` = unlimited).
    pub(crate) fn effective_iterations(&self, workload: &WorkloadSpec) -> Option<u64> {
        self.iterations.or(workload.iterations)
    }

    /// This client's work duration: its override, else the workload's.
    pub(crate) fn effective_work_ms(&self, workload: &WorkloadSpec) -> WorkMs {
        self.work_ms.unwrap_or(workload.work_ms)
    }

    /// This client's tasks set at the workload level: its override (sharing as the workload
    /// says, by default one lock object), else the workload's; `None`: as the lock says.
    pub(crate) fn effective_tasks(&self, workload: &WorkloadSpec) -> Option<TasksSpec> {
        match (self.tasks, workload.tasks) {
            (Some(tasks), Some(spec)) => Some(TasksSpec { tasks, ..spec }),
            (Some(tasks), None) => Some(TasksSpec {
                tasks,
                share_lock_object: true,
            }),
            (None, spec) => spec,
        }
    }
}

impl Scenario {
    /// What a scenario file used only for its lock's algorithm (`explore --against FILE`) says
    /// differently from `template`, which keeps its own: each part by its name in scenario files.
    /// Empty when the file differs only in its name, description, `[expect]` (its own story's
    /// verdicts, not a setting of the run) and `[lock]` algorithm settings.
    pub fn parts_kept_from(&self, template: &Scenario) -> Vec<&'static str> {
        let (a, b) = (self, template);
        [
            (a.lock.key != b.lock.key, "lock.key"),
            (a.lock.ttl_ms != b.lock.ttl_ms, "lock.ttl_ms"),
            (
                a.lock.fencing != b.lock.fencing || a.lock.fencing_master != b.lock.fencing_master,
                "lock.fencing",
            ),
            (
                a.lock.request_timeout_ms != b.lock.request_timeout_ms
                    || a.lock.connect_timeout_ms != b.lock.connect_timeout_ms,
                "lock's timeouts",
            ),
            (
                a.masters != b.masters || a.resource != b.resource || a.deployment != b.deployment,
                "[topology]",
            ),
            (a.network != b.network, "[network]"),
            (a.workload != b.workload, "[workload]"),
            (a.clients != b.clients, "[[client]]"),
            (a.faults != b.faults, "[[fault]]"),
            (a.explore != b.explore, "[explore]"),
            (
                a.seed != b.seed || a.duration_ms != b.duration_ms || a.tick_ms != b.tick_ms,
                "seed/duration_ms/tick_ms",
            ),
        ]
        .into_iter()
        .filter_map(|(differs, part)| differs.then_some(part))
        .collect()
    }

    /// The world settings of this scenario (the rest at [`WorldConfig::default`]).
    pub(crate) fn world_config(&self) -> WorldConfig {
        WorldConfig {
            seed: self.seed,
            tick_ms: self.tick_ms,
            skip_idle: !self.step_every_tick,
            duration_ms: self.duration_ms,
            history_events_max: self.history_events_max,
            history_bytes_max: self.history_bytes_max,
            min_latency_ms: self.network.min_latency_ms,
            max_latency_ms: self.network.max_latency_ms,
            ..WorldConfig::default()
        }
    }

    /// How master `name` is deployed (the defaults, with its clock, if it has no entry).
    pub fn master_setup(&self, name: &str) -> MasterSetup {
        let clock = self.masters.iter().find(|m| m.name == name).map(NodeSpec::clock);
        let mut setup = self.deployment.get(name).cloned().unwrap_or_default();
        setup.clock = clock.unwrap_or(setup.clock);
        setup
    }

    /// The names of master `name`'s replicas.
    pub(crate) fn replicas_of(&self, name: &str) -> Vec<String> {
        let count = self.deployment.get(name).map_or(0, |d| d.replicas);
        (1..=count).map(|i| lockstep_sim::replica_name(name, i)).collect()
    }

    /// Every node's name: the masters (each followed by its replicas), then [`RESOURCE_NODE`],
    /// then the clients.
    pub fn node_names(&self) -> Vec<String> {
        self.masters
            .iter()
            .flat_map(|m| std::iter::once(m.name.clone()).chain(self.replicas_of(&m.name)))
            .chain(std::iter::once(RESOURCE_NODE.to_string()))
            .chain(self.clients.iter().map(|c| c.name.clone()))
            .collect()
    }

    /// The expected verdict of `checker`, if the file states one.
    pub fn expected(&self, checker: &str) -> Option<Verdict> {
        self.expect.get(checker).copied()
    }
}
