//! Fault plans from a seed: swarm testing over proptest strategies.
//!
//! For each seed, [`case_strategy`] first chooses which fault kinds are on and how strong they
//! are (swarm testing, as in TigerBeetle's VOPR: a run with only pauses finds what a run with
//! every fault at once would drown), then places that many faults in time. Because it is a
//! proptest [`Strategy`], users can write `proptest!` tests over fault plans and get proptest's
//! shrinking, and `explore` shrinks failing seeds with the very same value trees.
//!
//! A generated fault is a [`GenFault`]: windows (a partition, a held link, a crash) carry their
//! own length, so shrinking removes or shortens a window as one fault. [`GenFault::expand`] is
//! the one conversion into the sim's [`Fault`] values, and [`ExploreCase::plan`] builds the
//! world's [`FaultPlan`] with it.
//!
//! Why not generate [`Fault`]s directly: a window is one generated value that becomes two faults
//! (`partition` + `heal`, `crash` + `restart`, a rolling restart's `shutdown`/`restart` pairs),
//! and the proptest value trees, the order of their draws and the shrinker's steps are built on
//! that shape. Generating `Fault` pairs instead would draw, shrink and serialize differently, and
//! change every committed exploration digest. The windows stay here, private to the explorer;
//! what a fault *is* (its fields, check and describe) lives only in the sim.
//!
//! `drop-reply` (a server runs a client's next 1–3 requests and loses the replies) is opt-in: it
//! is not among the default kinds, and its strategy exists only when the kind is switched on, so
//! the other kinds draw what they always drew for a given seed.
//!
//! Lock-aware mode aims faults where locks break: pauses that straddle a lease expiry (lengths
//! around the TTL), clock jumps on masters of half to twice the TTL (inside a validity window),
//! and short partitions between clients and masters while clients acquire.
//!
//! Deployment faults: `crash` stops a Redis server (a master, or a replica when the template has
//! some) and restarts it after a window (the server's own restart delay may hold it down longer);
//! `power-loss` does the same with a power loss, and is only offered when some master runs
//! `aof-everysec` (elsewhere it is a crash); `failover` forces a failover of a master that has
//! replicas, and is only offered when one has. `rolling-restart` shuts down and restarts every
//! master in turn, `gap_ms` apart (an operator's rolling restart; without persistence each comes
//! back empty), and is only offered with two masters or more; lock-aware, the whole roll fits in
//! a TTL. Kinds a template cannot use generate nothing, so
//! the cases of templates without persistence or replicas are the same as before these kinds.

use lockstep_sim::{Fault, FaultPlan, ScheduledFault, Seed};
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::{Deserialize, Serialize};

pub use crate::model::fault::{FaultProfile, PlacementStrategy, DEFAULT_KINDS, GENERATED_KINDS};

/// The end of a latency spike: how long it lasts and the network latency the link returns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Spike {
    /// How long the spike lasts, ms.
    pub length_ms: u64,
    /// The network's smallest one-way delay, ms, which the link returns to.
    pub min_latency_ms: u64,
    /// The network's largest one-way delay, ms.
    pub max_latency_ms: u64,
}

/// One generated fault; windows carry their length so they shrink as one fault.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum GenFault {
    /// Freeze a node.
    Pause {
        /// When, true ms.
        at_ms: u64,
        /// Which node.
        node: String,
        /// How long.
        duration_ms: u64,
    },
    /// Step a node's wall clock.
    ClockJump {
        /// When.
        at_ms: u64,
        /// Which node.
        node: String,
        /// The step, ms.
        delta_ms: i64,
    },
    /// Change a node's clock rate.
    Drift {
        /// When.
        at_ms: u64,
        /// Which node.
        node: String,
        /// The new rate error, ppm.
        drift_ppm: i64,
    },
    /// Cut a link for a while.
    Partition {
        /// When.
        at_ms: u64,
        /// One side.
        a: String,
        /// The other.
        b: String,
        /// How long until healed.
        length_ms: u64,
        /// Only a → b.
        oneway: bool,
    },
    /// Hold every message on a link for a while (delayed packets).
    Hold {
        /// When.
        at_ms: u64,
        /// One side.
        a: String,
        /// The other.
        b: String,
        /// How long until released.
        length_ms: u64,
    },
    /// Set a link's latency.
    Latency {
        /// When.
        at_ms: u64,
        /// One side.
        a: String,
        /// The other.
        b: String,
        /// The delay, ms.
        latency_ms: u64,
        /// A spike: the link returns to the network's latency after this window (absent: the
        /// latency stays). A request sent in a spike can time out and land after the client's
        /// retry or its next operation, which went through at the usual speed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spike: Option<Spike>,
    },
    /// Make a link lossy.
    Loss {
        /// When.
        at_ms: u64,
        /// One side.
        a: String,
        /// The other.
        b: String,
        /// Per-message break probability, ppm.
        rate_ppm: u32,
    },
    /// Crash a Redis server and restart it later (with what its persistence kept).
    Crash {
        /// When, true ms.
        at_ms: u64,
        /// Which server.
        node: String,
        /// How long it stays down.
        down_ms: u64,
    },
    /// Cut a Redis server's power (unsynced AOF writes are lost) and restart it later.
    PowerLoss {
        /// When, true ms.
        at_ms: u64,
        /// Which server.
        node: String,
        /// How long it stays down.
        down_ms: u64,
    },
    /// Shut down and restart every master in turn.
    RollingRestart {
        /// When the first master stops, true ms.
        at_ms: u64,
        /// Between one master's stop and the next one's.
        gap_ms: u64,
        /// How long each stays down.
        down_ms: u64,
        /// The masters, in order.
        nodes: Vec<String>,
    },
    /// Force a failover of a master's replication group.
    Failover {
        /// When, true ms.
        at_ms: u64,
        /// The group (its original master's name).
        node: String,
    },
    /// A server runs a client's next requests and loses their replies.
    DropReply {
        /// When, true ms.
        at_ms: u64,
        /// The server (a master or the resource).
        node: String,
        /// The client whose replies are lost.
        client: String,
        /// How many replies.
        count: u32,
    },
}

impl GenFault {
    /// When it starts, true ms (a rolling restart: its first stop), to read or move.
    pub fn at_ms_mut(&mut self) -> &mut u64 {
        match self {
            GenFault::Pause { at_ms, .. }
            | GenFault::ClockJump { at_ms, .. }
            | GenFault::Drift { at_ms, .. }
            | GenFault::Partition { at_ms, .. }
            | GenFault::Hold { at_ms, .. }
            | GenFault::Latency { at_ms, .. }
            | GenFault::Loss { at_ms, .. }
            | GenFault::Crash { at_ms, .. }
            | GenFault::PowerLoss { at_ms, .. }
            | GenFault::RollingRestart { at_ms, .. }
            | GenFault::Failover { at_ms, .. }
            | GenFault::DropReply { at_ms, .. } => at_ms,
        }
    }

    /// How strong the fault is, in its kind's own unit — ms of stall, downtime or clock step, ppm
    /// of rate error or loss, replies lost; 0 for a failover. The one measure: shrinking makes it
    /// smaller, coverage feedback scales it ([`GenFault::scale_magnitude`]).
    pub fn magnitude(&self) -> u64 {
        // Read through the one place that knows each kind's strength field.
        let mut seen = 0;
        self.clone().scale_magnitude(|v| {
            seen = v;
            v
        });
        seen
    }

    /// Sets the magnitude to `f` of itself, kept within the kind's bounds (a step keeps its
    /// direction; drift stays within ±900,000 ppm, loss within 1,000,000 ppm, dropped replies
    /// at most 8). A failover has none.
    pub fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        match self {
            GenFault::Pause { duration_ms: v, .. }
            | GenFault::Partition { length_ms: v, .. }
            | GenFault::Hold { length_ms: v, .. }
            | GenFault::Latency { latency_ms: v, .. }
            | GenFault::Crash { down_ms: v, .. }
            | GenFault::PowerLoss { down_ms: v, .. }
            | GenFault::RollingRestart { down_ms: v, .. } => *v = f(*v),
            GenFault::ClockJump { delta_ms, .. } => *delta_ms = delta_ms.signum() * f(delta_ms.unsigned_abs()) as i64,
            GenFault::Drift { drift_ppm, .. } => {
                *drift_ppm = (drift_ppm.signum() * f(drift_ppm.unsigned_abs()) as i64).clamp(-900_000, 900_000)
            }
            GenFault::Loss { rate_ppm, .. } => *rate_ppm = f(u64::from(*rate_ppm)).min(1_000_000) as u32,
            GenFault::DropReply { count, .. } => *count = f(u64::from(*count)).min(8) as u32,
            GenFault::Failover { .. } => {}
        }
    }

    /// The kind, as in [`GENERATED_KINDS`].
    pub fn kind(&self) -> &'static str {
        match self {
            GenFault::Pause { .. } => "pause",
            GenFault::ClockJump { .. } => "clock-jump",
            GenFault::Drift { .. } => "drift",
            GenFault::Partition { .. } => "partition",
            GenFault::Hold { .. } => "hold",
            GenFault::Latency { .. } => "latency",
            GenFault::Loss { .. } => "loss",
            GenFault::Crash { .. } => "crash",
            GenFault::PowerLoss { .. } => "power-loss",
            GenFault::Failover { .. } => "failover",
            GenFault::RollingRestart { .. } => "rolling-restart",
            GenFault::DropReply { .. } => "drop-reply",
        }
    }

    /// The nodes it names.
    pub fn nodes(&self) -> Vec<&str> {
        match self {
            GenFault::Pause { node, .. }
            | GenFault::ClockJump { node, .. }
            | GenFault::Drift { node, .. }
            | GenFault::Crash { node, .. }
            | GenFault::PowerLoss { node, .. }
            | GenFault::Failover { node, .. } => vec![node],
            GenFault::RollingRestart { nodes, .. } => nodes.iter().map(String::as_str).collect(),
            GenFault::Partition { a, b, .. }
            | GenFault::Hold { a, b, .. }
            | GenFault::Latency { a, b, .. }
            | GenFault::Loss { a, b, .. } => vec![a, b],
            GenFault::DropReply { node, client, .. } => vec![node, client],
        }
    }

    /// The world faults it expands into.
    pub fn expand(&self) -> Vec<ScheduledFault> {
        let at = |at_ms: u64, fault: Fault| ScheduledFault { at_ms, fault };
        match self.clone() {
            GenFault::Pause {
                at_ms,
                node,
                duration_ms,
            } => vec![at(at_ms, Fault::Pause { node, duration_ms })],
            GenFault::ClockJump { at_ms, node, delta_ms } => vec![at(at_ms, Fault::ClockJump { node, delta_ms })],
            GenFault::Drift { at_ms, node, drift_ppm } => vec![at(at_ms, Fault::Drift { node, drift_ppm })],
            GenFault::Partition {
                at_ms,
                a,
                b,
                length_ms,
                oneway,
            } => vec![
                at(
                    at_ms,
                    Fault::Partition {
                        a: a.clone(),
                        b: b.clone(),
                        oneway,
                    },
                ),
                at(at_ms + length_ms, Fault::Heal { a, b, oneway }),
            ],
            GenFault::Hold { at_ms, a, b, length_ms } => vec![
                at(
                    at_ms,
                    Fault::Hold {
                        a: a.clone(),
                        b: b.clone(),
                    },
                ),
                at(at_ms + length_ms, Fault::Release { a, b }),
            ],
            GenFault::Latency {
                at_ms,
                a,
                b,
                latency_ms,
                spike,
            } => {
                let mut faults = vec![at(
                    at_ms,
                    Fault::Latency {
                        a: a.clone(),
                        b: b.clone(),
                        latency_ms,
                        max_latency_ms: None,
                    },
                )];
                if let Some(spike) = spike {
                    faults.push(at(
                        at_ms + spike.length_ms,
                        Fault::Latency {
                            a,
                            b,
                            latency_ms: spike.min_latency_ms,
                            max_latency_ms: Some(spike.max_latency_ms.max(spike.min_latency_ms)),
                        },
                    ));
                }
                faults
            }
            GenFault::Loss { at_ms, a, b, rate_ppm } => vec![at(at_ms, Fault::Loss { a, b, rate_ppm })],
            GenFault::Crash { at_ms, node, down_ms } => vec![
                at(at_ms, Fault::Crash { node: node.clone() }),
                at(at_ms + down_ms, Fault::Restart { node }),
            ],
            GenFault::PowerLoss { at_ms, node, down_ms } => vec![
                at(at_ms, Fault::PowerLoss { node: node.clone() }),
                at(at_ms + down_ms, Fault::Restart { node }),
            ],
            GenFault::Failover { at_ms, node } => vec![at(at_ms, Fault::Failover { node })],
            GenFault::DropReply {
                at_ms,
                node,
                client,
                count,
            } => vec![at(
                at_ms,
                Fault::DropReply {
                    node,
                    client: Some(client),
                    count,
                },
            )],
            GenFault::RollingRestart {
                at_ms,
                gap_ms,
                down_ms,
                nodes,
            } => nodes
                .into_iter()
                .enumerate()
                .flat_map(|(i, node)| {
                    let stop = at_ms + i as u64 * gap_ms;
                    [
                        at(stop, Fault::Shutdown { node: node.clone() }),
                        at(stop + down_ms, Fault::Restart { node }),
                    ]
                })
                .collect(),
        }
    }
}

/// What one seed explores: how many of the template's clients take part, and the faults.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExploreCase {
    /// The first `clients` clients of the template run.
    pub clients: usize,
    /// The faults.
    pub faults: Vec<GenFault>,
    /// A generated workload shape (anchored and mixed strategies only; `None`: the template's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<WorkloadShape>,
}

impl ExploreCase {
    /// The world's fault plan: every fault expanded, dropping those that name absent clients.
    pub fn plan(&self, present: &[String]) -> FaultPlan {
        let mut faults: Vec<ScheduledFault> = self
            .faults
            .iter()
            .filter(|f| f.nodes().iter().all(|n| present.iter().any(|p| p == n)))
            .flat_map(GenFault::expand)
            .collect();
        faults.sort_by_key(|f| f.at_ms);
        FaultPlan::new(faults)
    }
}

/// The workload shape a seed runs with (drawn and applied by `explore::anchors`).
///
/// Bounds: 2 to 4 clients; think time 0 to TTL/2; critical sections `[lo, hi]` with `lo` between
/// 1 ms and `hi`, and `hi` inside the lock's contract by default — one of W/10, W/4, W/2, W with
/// W half the validity the lock claims after its safety margins
/// (`anchors::ShapeBounds::contract`) — or, with `explore --overrun-shapes`, one of TTL/10,
/// TTL/2, TTL, 3/2 × TTL (`anchors::ShapeBounds::overrun`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WorkloadShape {
    /// How many clients run.
    pub clients: usize,
    /// Pause between iterations, ms.
    pub think_ms: u64,
    /// Shortest critical section, ms.
    pub work_ms_min: u64,
    /// Longest critical section, ms.
    pub work_ms_max: u64,
}

/// The nodes and timings a plan is generated for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Master names.
    pub masters: Vec<String>,
    /// Client names (the template's, in order).
    pub clients: Vec<String>,
    /// The resource's name.
    pub resource: String,
    /// The run's duration, ms.
    pub duration_ms: u64,
    /// The lock's TTL, ms.
    pub ttl_ms: u64,
    /// Every replica's name (crash targets besides the masters).
    pub replicas: Vec<String>,
    /// Masters that run `aof-everysec` (where a power loss loses more than a crash).
    pub everysec: Vec<String>,
    /// Masters with replicas (what a failover can target).
    pub replicated: Vec<String>,
    /// The lock client's per-request timeout, ms (a latency spike is sized by it).
    pub request_timeout_ms: u64,
    /// The network's one-way delays, smallest and largest, ms (what a spike returns to).
    pub network_latency_ms: (u64, u64),
}

fn pick(names: &[String]) -> BoxedStrategy<String> {
    proptest::sample::select(names.to_vec()).boxed()
}

/// The strategy of one fault kind, or `None` when the topology has no node it could target.
fn fault_strategy(kind: &str, topo: &Topology, p: &FaultProfile) -> Option<BoxedStrategy<GenFault>> {
    let horizon_ms = (topo.duration_ms * 4 / 5).max(1);
    let at = 0..horizon_ms;
    let ttl = topo.ttl_ms.max(2);
    let clients = topo.clients.clone();
    let masters = topo.masters.clone();
    let mut everyone = clients.clone();
    everyone.extend(masters.iter().cloned());
    let mut servers = masters.clone();
    servers.push(topo.resource.clone());
    if clients.is_empty() || masters.is_empty() {
        return None;
    }
    let window_max = p.window_ms_max.max(1);
    Some(match kind {
        "pause" => {
            let (lo, hi) = if p.lock_aware {
                (ttl / 2, (2 * ttl).max(ttl / 2 + 1))
            } else {
                (1, p.pause_ms_max.max(1))
            };
            let nodes = if p.lock_aware { clients } else { everyone };
            (at, pick(&nodes), lo..=hi)
                .prop_map(|(at_ms, node, duration_ms)| GenFault::Pause {
                    at_ms,
                    node,
                    duration_ms,
                })
                .boxed()
        }
        "clock-jump" => {
            let max = p.jump_ms_max.max(1);
            if p.lock_aware {
                let ttl = ttl as i64;
                (at, pick(&masters), ttl / 2..=2 * ttl)
                    .prop_map(|(at_ms, node, delta_ms)| GenFault::ClockJump { at_ms, node, delta_ms })
                    .boxed()
            } else {
                (at, pick(&everyone), -max..=max)
                    .prop_map(|(at_ms, node, delta_ms)| GenFault::ClockJump { at_ms, node, delta_ms })
                    .boxed()
            }
        }
        "drift" => {
            let max = p.drift_ppm_max.max(1);
            (at, pick(&everyone), -max..=max)
                .prop_map(|(at_ms, node, drift_ppm)| GenFault::Drift { at_ms, node, drift_ppm })
                .boxed()
        }
        "partition" => {
            let lengths = if p.lock_aware {
                1..=(ttl / 2).max(1)
            } else {
                1..=window_max
            };
            (at, pick(&clients), pick(&servers), lengths, any::<bool>())
                .prop_map(|(at_ms, a, b, length_ms, oneway)| GenFault::Partition {
                    at_ms,
                    a,
                    b,
                    length_ms,
                    oneway,
                })
                .boxed()
        }
        "hold" => (at, pick(&clients), pick(&servers), 1..=window_max)
            .prop_map(|(at_ms, a, b, length_ms)| GenFault::Hold { at_ms, a, b, length_ms })
            .boxed(),
        "latency" => (at, pick(&clients), pick(&servers), 0..=p.latency_ms_max)
            .prop_map(|(at_ms, a, b, latency_ms)| GenFault::Latency {
                at_ms,
                a,
                b,
                latency_ms,
                spike: None,
            })
            .boxed(),
        "loss" => (at, pick(&clients), pick(&servers), 0..=p.loss_ppm_max)
            .prop_map(|(at_ms, a, b, rate_ppm)| GenFault::Loss { at_ms, a, b, rate_ppm })
            .boxed(),
        "crash" => {
            let mut servers = masters.clone();
            servers.extend(topo.replicas.iter().cloned());
            (at, pick(&servers), 1..=window_max)
                .prop_map(|(at_ms, node, down_ms)| GenFault::Crash { at_ms, node, down_ms })
                .boxed()
        }
        "power-loss" if !topo.everysec.is_empty() => (at, pick(&topo.everysec), 1..=window_max)
            .prop_map(|(at_ms, node, down_ms)| GenFault::PowerLoss { at_ms, node, down_ms })
            .boxed(),
        "rolling-restart" if masters.len() >= 2 => {
            let (gap_max, down_max) = if p.lock_aware {
                ((ttl / masters.len() as u64).max(1), (ttl / 4).max(1))
            } else {
                (window_max, window_max)
            };
            (at, 1..=gap_max, 1..=down_max)
                .prop_map(move |(at_ms, gap_ms, down_ms)| GenFault::RollingRestart {
                    at_ms,
                    gap_ms,
                    down_ms,
                    nodes: masters.clone(),
                })
                .boxed()
        }
        // Only drawn when switched on (it is not among the default kinds): a server, a client,
        // one to three lost replies.
        "drop-reply" => (at, pick(&servers), pick(&clients), 1..=3u32)
            .prop_map(|(at_ms, node, client, count)| GenFault::DropReply {
                at_ms,
                node,
                client,
                count,
            })
            .boxed(),
        "failover" if !topo.replicated.is_empty() => (at, pick(&topo.replicated))
            .prop_map(|(at_ms, node)| GenFault::Failover { at_ms, node })
            .boxed(),
        _ => return None,
    })
}

/// The strategy of one seed's case: a swarm of kinds, then faults of those kinds in time.
pub fn case_strategy(topo: &Topology, profile: &FaultProfile) -> BoxedStrategy<ExploreCase> {
    let kinds: Vec<BoxedStrategy<GenFault>> = profile
        .kinds
        .iter()
        .filter_map(|k| fault_strategy(k, topo, profile))
        .collect();
    let client_count = topo.clients.len().max(1);
    let faults_max = profile.faults_max;
    if kinds.is_empty() || faults_max == 0 {
        return Just(ExploreCase {
            clients: client_count,
            faults: Vec::new(),
            shape: None,
        })
        .boxed();
    }
    let kind_count = kinds.len();
    let kinds = std::rc::Rc::new(kinds);
    // Swarm: a non-empty subset of the kinds is on for this seed.
    proptest::sample::subsequence((0..kind_count).collect::<Vec<_>>(), 1..=kind_count)
        .prop_flat_map(move |on| {
            let chosen: Vec<BoxedStrategy<GenFault>> = on.iter().map(|&i| kinds[i].clone()).collect();
            let faults = proptest::collection::vec(Union::new(chosen), 1..=faults_max);
            // Every client takes part; `explore`'s shrinker tries fewer clients on its own, since a
            // proptest range would start from a random count rather than the template's.
            (faults, Just(client_count))
        })
        .prop_map(|(faults, clients)| ExploreCase {
            clients,
            faults,
            shape: None,
        })
        .boxed()
}

/// The proptest runner of `seed`: a ChaCha stream derived from it, so the case is fixed by the
/// seed alone.
fn runner_for(seed: u64) -> TestRunner {
    let bytes = Seed(seed).derive_bytes("explore/case");
    TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// The value tree of `seed`'s case (its `current()` is the case; it shrinks).
pub fn case_tree(seed: u64, strategy: &BoxedStrategy<ExploreCase>) -> Box<dyn ValueTree<Value = ExploreCase>> {
    let mut runner = runner_for(seed);
    // The strategies above never filter, so generation cannot be rejected.
    strategy
        .new_tree(&mut runner)
        .expect("fault-plan strategies never reject a case")
}
