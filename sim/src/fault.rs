//! The fault vocabulary and the fault plan.
//!
//! A plan is a list of faults at true simulated times, applied by the world's step loop and each
//! logged in the history. It is a plain serde value: it can be written in a scenario file,
//! generated from a seed, printed, shrunk and replayed.
//!
//! Network faults map onto turmoil: `partition`/`heal` drop or restore messages on a link (turmoil
//! drops them silently and its TCP never retransmits, so a connection that loses a segment is
//! dead until the client reconnects); `hold`/`release` delay every message on a link until
//! released; `latency` fixes a link's delay; `loss` sets turmoil's per-link failure rate (each
//! message may break the link until a later message repairs it).
//!
//! Process faults target Redis servers (masters and replicas): `crash` (the process dies; the
//! machine keeps running), `power-loss` (the machine dies: unsynced AOF writes are lost too),
//! `shutdown` (a clean stop: the AOF is complete), `restart` (start a stopped server, after its
//! restart delay; a running one is shut down cleanly and started again), and `failover` (promote
//! a replica of the node's group now). What each loses depends on the server's persistence mode:
//! see [`crate::deployment`].

use serde::{Deserialize, Serialize};

/// One fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fault {
    /// Freeze every task of `node` for `duration_ms` of true time (GC pause, VM stall).
    Pause {
        /// The node to freeze.
        node: String,
        /// How long, in true milliseconds.
        duration_ms: u64,
    },
    /// Step `node`'s wall clock by `delta_ms` (negative: backwards).
    ClockJump {
        /// The node whose clock jumps.
        node: String,
        /// The step, in ms.
        delta_ms: i64,
    },
    /// Set `node`'s clock rate error.
    Drift {
        /// The node.
        node: String,
        /// The new rate error in parts per million.
        drift_ppm: i64,
    },
    /// Drop messages between `a` and `b` (from `a` to `b` only, when `oneway`).
    Partition {
        /// One side.
        a: String,
        /// The other side.
        b: String,
        /// Only `a` → `b` is cut.
        #[serde(default)]
        oneway: bool,
    },
    /// Restore the link between `a` and `b` (from `a` to `b` only, when `oneway`).
    Heal {
        /// One side.
        a: String,
        /// The other side.
        b: String,
        /// Only `a` → `b` is restored.
        #[serde(default)]
        oneway: bool,
    },
    /// Hold every message between `a` and `b` until a `release`.
    Hold {
        /// One side.
        a: String,
        /// The other side.
        b: String,
    },
    /// Deliver the messages held between `a` and `b`, and stop holding.
    Release {
        /// One side.
        a: String,
        /// The other side.
        b: String,
    },
    /// Fix the one-way delay of every message between `a` and `b`.
    Latency {
        /// One side.
        a: String,
        /// The other side.
        b: String,
        /// The delay in ms; with `max_latency_ms`, the smallest delay.
        latency_ms: u64,
        /// When set, each message's delay is drawn from `latency_ms..=max_latency_ms` (turmoil's
        /// exponential curve), instead of being fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_latency_ms: Option<u64>,
    },
    /// Set the per-message probability that the link between `a` and `b` breaks.
    Loss {
        /// One side.
        a: String,
        /// The other side.
        b: String,
        /// Probability in parts per million (integer, so plans stay exact).
        rate_ppm: u32,
    },
    /// Crash a Redis server process: its memory is lost; what it persisted survives.
    Crash {
        /// The master or replica.
        node: String,
    },
    /// Start a stopped Redis server (once its restart delay has passed), or restart a running one
    /// cleanly.
    Restart {
        /// The master or replica.
        node: String,
    },
    /// Cut the power of a Redis server's machine: like a crash, and AOF writes not yet fsynced
    /// are lost too (`aof-everysec`: up to a second of writes).
    PowerLoss {
        /// The master or replica.
        node: String,
    },
    /// Stop a Redis server cleanly: with AOF nothing is lost.
    Shutdown {
        /// The master or replica.
        node: String,
    },
    /// Force a failover of the replication group `node` belongs to: its best replica becomes the
    /// master and the old master its replica.
    Failover {
        /// Any member of the group (usually the group's name, its original master).
        node: String,
    },
}

impl Fault {
    /// The fault's kind, as written in plans (`pause`, `clock-jump`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Pause { .. } => "pause",
            Fault::ClockJump { .. } => "clock-jump",
            Fault::Drift { .. } => "drift",
            Fault::Partition { .. } => "partition",
            Fault::Heal { .. } => "heal",
            Fault::Hold { .. } => "hold",
            Fault::Release { .. } => "release",
            Fault::Latency { .. } => "latency",
            Fault::Loss { .. } => "loss",
            Fault::Crash { .. } => "crash",
            Fault::Restart { .. } => "restart",
            Fault::PowerLoss { .. } => "power-loss",
            Fault::Shutdown { .. } => "shutdown",
            Fault::Failover { .. } => "failover",
        }
    }

    /// Every kind, for listings and validation messages.
    pub const KINDS: &'static [&'static str] = &[
        "pause",
        "clock-jump",
        "drift",
        "partition",
        "heal",
        "hold",
        "release",
        "latency",
        "loss",
        "crash",
        "restart",
        "power-loss",
        "shutdown",
        "failover",
    ];

    /// Whether the fault stops or starts a Redis server process (it must target a server).
    pub fn is_process_fault(&self) -> bool {
        matches!(
            self,
            Fault::Crash { .. } | Fault::Restart { .. } | Fault::PowerLoss { .. } | Fault::Shutdown { .. }
        )
    }

    /// The nodes the fault names (one for node faults, two for link faults).
    pub fn nodes(&self) -> Vec<&str> {
        match self {
            Fault::Pause { node, .. }
            | Fault::ClockJump { node, .. }
            | Fault::Drift { node, .. }
            | Fault::Crash { node }
            | Fault::Restart { node }
            | Fault::PowerLoss { node }
            | Fault::Shutdown { node }
            | Fault::Failover { node } => vec![node],
            Fault::Partition { a, b, .. }
            | Fault::Heal { a, b, .. }
            | Fault::Hold { a, b }
            | Fault::Release { a, b }
            | Fault::Latency { a, b, .. }
            | Fault::Loss { a, b, .. } => vec![a, b],
        }
    }
}

/// A fault at a true simulated time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduledFault {
    /// When, in true ms since the run began.
    pub at_ms: u64,
    /// What.
    #[serde(flatten)]
    pub fault: Fault,
}

/// Faults at times. Applied in time order; faults at the same time in plan order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// The faults.
    pub faults: Vec<ScheduledFault>,
}

impl FaultPlan {
    /// A plan of these faults.
    pub fn new(faults: Vec<ScheduledFault>) -> Self {
        FaultPlan { faults }
    }

    /// The faults sorted by time, ties kept in plan order.
    pub fn sorted(&self) -> Vec<ScheduledFault> {
        let mut faults = self.faults.clone();
        faults.sort_by_key(|f| f.at_ms);
        faults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_round_trips_through_json_and_toml_shapes() {
        let plan = FaultPlan::new(vec![
            ScheduledFault {
                at_ms: 1_000,
                fault: Fault::Pause {
                    node: "client-1".into(),
                    duration_ms: 15_000,
                },
            },
            ScheduledFault {
                at_ms: 500,
                fault: Fault::ClockJump {
                    node: "redis-3".into(),
                    delta_ms: 15_000,
                },
            },
        ]);
        let json = serde_json::to_string(&plan).unwrap();
        assert!(json.contains(r#""kind":"pause""#), "{json}");
        let back: FaultPlan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, plan);
        assert_eq!(plan.sorted()[0].at_ms, 500);
        assert_eq!(plan.faults[1].fault.kind(), "clock-jump");
    }
}
