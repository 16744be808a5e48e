//! The fault vocabulary and the fault plan.
//!
//! A plan is a list of faults at true simulated times, applied by the world's step loop and each
//! logged in the history. It is a plain serde value: it can be written in a scenario file,
//! generated from a seed, printed, shrunk and replayed.
//!
//! Network faults map onto the simulated network (`lockstep_sim::wire`): `partition`/`heal` drop or
//! restore messages on a link (dropped silently; the simulated TCP never retransmits, so a
//! connection that loses a segment is dead until the client reconnects); `hold`/`release` delay
//! every message on a link until released; `latency` fixes a link's delay; `loss` drops each
//! message with the given probability (its connection is then dead, as after a partition).
//!
//! Process faults target Redis servers (masters and replicas): `crash` (the process dies; the
//! machine keeps running), `power-loss` (the machine dies: unsynced AOF writes are lost too),
//! `shutdown` (a clean stop: the AOF is complete), `restart` (start a stopped server, after its
//! restart delay; a running one is shut down cleanly and started again), and `failover` (promote
//! a replica of the node's group now). What each loses depends on the server's persistence mode:
//! see `lockstep_sim::deployment`. `crash` and `restart` of a *client* are live-only (`lockstep live`
//! kills the client's process group and starts its command again); the simulated world refuses
//! them ([`FaultTargets::restarts_clients`]).
//!
//! `drop-reply` targets a server (a master, a replica or the resource): it runs the next `count`
//! requests of `client` (any client when unset), and their replies are lost on the way back — the
//! client sees a timeout, an outcome-unknown operation, although the command took effect. RESP is a
//! stream: a reply cannot vanish from it and leave the connection usable (the next reply would be
//! matched to the wrong request), so after dropping a reply the server answers nothing more on
//! that connection and ignores what else arrives on it; the client's request times out and its
//! reconnecting link opens a new connection. Each dropped reply is logged as a note on the server
//! right after the command's own event.
//!
//! Every fault is checked against the world's nodes before a run ([`Fault::validate`], which names
//! the faulty field), and has a one-line human rendering ([`Fault::describe`]).

use crate::role::Role;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;

/// The lowest drift is above this: at -1 000 000 ppm a clock stands still.
pub const MIN_DRIFT_PPM: i64 = -1_000_000;

/// The highest drift: 1 000 000 000 ppm, a clock running 1 001 times as fast as true time. Far
/// beyond any real oscillator (they err by tens of ppm) and beyond what a lock's drift factor
/// covers; above it a day of true time would be years of local time, and the readings would
/// leave the range of an `i64` of microseconds.
pub const MAX_DRIFT_PPM: i64 = 1_000_000_000;

/// Checks a rate error: `Err` says why a clock with it would not be a clock, or is out of range
/// (above [`MAX_DRIFT_PPM`]).
pub fn check_drift_ppm(drift_ppm: i64) -> Result<(), String> {
    if drift_ppm <= MIN_DRIFT_PPM {
        Err(format!(
            "{drift_ppm} ppm would stop or reverse the clock: must be above {MIN_DRIFT_PPM}"
        ))
    } else if drift_ppm > MAX_DRIFT_PPM {
        Err(format!(
            "{drift_ppm} ppm is out of range: must be at most {MAX_DRIFT_PPM} (a clock 1001 times as fast as true time)"
        ))
    } else {
        Ok(())
    }
}

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
        /// When set, each message's delay is drawn from `latency_ms..=max_latency_ms` (the
        /// network's exponential curve), instead of being fixed.
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
    /// The server `node` runs the next `count` requests of `client`, and their replies are lost
    /// (the client sees a timeout; see the module docs for what happens to the connection).
    DropReply {
        /// The server: a master, a replica or the resource.
        node: String,
        /// The client whose replies are lost; `None`: whichever client comes first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<String>,
        /// How many replies are lost (each on its own connection), at least 1.
        #[serde(default = "one")]
        count: u32,
    },
}

fn one() -> u32 {
    1
}

/// The one list of fault kinds: each variant and the name plans write it with. It makes
/// [`Fault::kind`] and [`Fault::KINDS`], so the two cannot disagree.
macro_rules! fault_kinds {
    ($($variant:ident $name:literal,)*) => {
        impl Fault {
            /// The fault's kind, as written in plans (`pause`, `clock-jump`, ...).
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Fault::$variant { .. } => $name,)*
                }
            }

            /// Every kind, for listings and validation messages (the order of the variants).
            pub const KINDS: &'static [&'static str] = &[$($name,)*];
        }
    };
}

fault_kinds! {
    Pause "pause",
    ClockJump "clock-jump",
    Drift "drift",
    Partition "partition",
    Heal "heal",
    Hold "hold",
    Release "release",
    Latency "latency",
    Loss "loss",
    Crash "crash",
    Restart "restart",
    PowerLoss "power-loss",
    Shutdown "shutdown",
    Failover "failover",
    DropReply "drop-reply",
}

impl Fault {
    /// A one-line description of fault `kind` with its fields (for listings); `None` for an
    /// unknown kind.
    pub fn summary(kind: &str) -> Option<&'static str> {
        Some(match kind {
            "pause" => "freeze every task of `node` for `duration_ms` of true time (GC pause, VM stall)",
            "clock-jump" => "step the wall clock of `node` by `delta_ms` (negative: backwards)",
            "drift" => "set the clock rate error of `node` to `drift_ppm`",
            "partition" => "drop the messages between `a` and `b` (`oneway = true`: from a to b only)",
            "heal" => "restore the link between `a` and `b` (`oneway = true`: from a to b only)",
            "hold" => "hold every message between `a` and `b` until a `release`",
            "release" => "deliver the messages held between `a` and `b`, and stop holding",
            "latency" => "fix the delay between `a` and `b` to `latency_ms` (or a range up to `max_latency_ms`)",
            "loss" => "break the link between `a` and `b` with probability `rate_ppm` per message",
            "crash" => "kill Redis server `node`: its memory is lost, what it persisted survives",
            "restart" => "start stopped Redis server `node` after its restart delay (a running one restarts cleanly)",
            "power-loss" => "cut the power of Redis server `node`: like a crash, and unsynced AOF writes are lost",
            "shutdown" => "stop Redis server `node` cleanly (with AOF nothing is lost)",
            "failover" => "promote the best replica of the replication group of `node` now",
            "drop-reply" => {
                "server `node` runs the next `count` requests of `client` (default: any), their replies are lost"
            }
            _ => return None,
        })
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
            Fault::DropReply { node, client, .. } => std::iter::once(node).chain(client).map(String::as_str).collect(),
            Fault::Partition { a, b, .. }
            | Fault::Heal { a, b, .. }
            | Fault::Hold { a, b }
            | Fault::Release { a, b }
            | Fault::Latency { a, b, .. }
            | Fault::Loss { a, b, .. } => vec![a, b],
        }
    }

    /// The node the fault's event is logged on; `None` for a link fault (logged on `net`).
    pub fn subject(&self) -> Option<&str> {
        match self {
            Fault::Partition { .. }
            | Fault::Heal { .. }
            | Fault::Hold { .. }
            | Fault::Release { .. }
            | Fault::Latency { .. }
            | Fault::Loss { .. } => None,
            Fault::Pause { node, .. }
            | Fault::ClockJump { node, .. }
            | Fault::Drift { node, .. }
            | Fault::Crash { node }
            | Fault::Restart { node }
            | Fault::PowerLoss { node }
            | Fault::Shutdown { node }
            | Fault::Failover { node }
            | Fault::DropReply { node, .. } => Some(node),
        }
    }

    /// [`Fault::validate`], under its old name.
    #[deprecated(since = "0.1.0", note = "renamed `Fault::validate` (what it does)")]
    pub fn check(&self, targets: &dyn FaultTargets) -> Result<(), FaultError> {
        self.validate(targets)
    }

    /// Validates the fault against the nodes of a world: every node it names exists and is of a
    /// kind the fault applies to, and every number is in range. The error names the faulty field.
    pub fn validate(&self, targets: &dyn FaultTargets) -> Result<(), FaultError> {
        let exists = |field: &'static str, node: &str| match targets.role(node) {
            Some(role) => Ok(role),
            None => Err(FaultError::UnknownNode {
                field,
                node: node.to_string(),
                known: targets.node_names(),
            }),
        };
        let wrong = |field: &'static str, node: &str, role: Role, rule: &'static str| FaultError::WrongRole {
            field,
            node: node.to_string(),
            role,
            rule,
        };
        match self {
            Fault::Pause { node, .. } | Fault::ClockJump { node, .. } => {
                exists("node", node)?;
            }
            Fault::Drift { node, drift_ppm } => {
                exists("node", node)?;
                check_drift_ppm(*drift_ppm).map_err(|reason| FaultError::OutOfRange {
                    field: "drift_ppm",
                    reason,
                })?;
            }
            Fault::Partition { a, b, .. }
            | Fault::Heal { a, b, .. }
            | Fault::Hold { a, b }
            | Fault::Release { a, b }
            | Fault::Latency { a, b, .. }
            | Fault::Loss { a, b, .. } => {
                exists("a", a)?;
                exists("b", b)?;
                if a == b {
                    return Err(FaultError::SameNode { field: "b" });
                }
                if let Fault::Loss { rate_ppm, .. } = self {
                    if *rate_ppm > 1_000_000 {
                        return Err(FaultError::OutOfRange {
                            field: "rate_ppm",
                            reason: format!("{rate_ppm}: must be at most 1000000"),
                        });
                    }
                }
            }
            Fault::Crash { node } | Fault::Restart { node } | Fault::PowerLoss { node } | Fault::Shutdown { node } => {
                let role = exists("node", node)?;
                if role == Role::Client && matches!(self, Fault::Crash { .. } | Fault::Restart { .. }) {
                    if !targets.restarts_clients() {
                        let rule = "clients crash and restart in live runs only (`lockstep live` kills the \
                                    client's process and starts its command again); in a simulation only Redis \
                                    masters and replicas crash and restart";
                        return Err(wrong("node", node, role, rule));
                    }
                } else if !role.is_redis_server() {
                    return Err(wrong(
                        "node",
                        node,
                        role,
                        "only Redis masters and replicas crash and restart",
                    ));
                }
            }
            Fault::Failover { node } => {
                let role = exists("node", node)?;
                if !targets.is_replicated(node) {
                    let rule = "a failover needs a master with replicas (or one of its replicas)";
                    return Err(wrong("node", node, role, rule));
                }
            }
            Fault::DropReply { node, client, count } => {
                let role = exists("node", node)?;
                if !role.is_server() {
                    let rule = "only a server (a master, a replica or the resource) drops replies";
                    return Err(wrong("node", node, role, rule));
                }
                if let Some(client) = client {
                    let role = exists("client", client)?;
                    if role != Role::Client {
                        return Err(wrong(
                            "client",
                            client,
                            role,
                            "replies are dropped on their way to a client",
                        ));
                    }
                }
                if *count == 0 {
                    return Err(FaultError::OutOfRange {
                        field: "count",
                        reason: "0: must be at least 1".to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The fault in words, as the text timeline prints it on the line of [`Fault::subject`]
    /// (`PAUSED for 15000 ms (GC / VM stall)`, `network partition a <-> b`, ...).
    pub fn describe(&self) -> String {
        match self {
            Fault::Pause { duration_ms, .. } => format!("PAUSED for {duration_ms} ms (GC / VM stall)"),
            Fault::ClockJump { delta_ms, .. } => format!("wall clock jumps {delta_ms:+} ms"),
            Fault::Drift { drift_ppm, .. } => format!("clock drift set to {drift_ppm:+} ppm"),
            Fault::Partition { a, b, oneway } => {
                format!("network partition {a} {} {b}", if *oneway { "->" } else { "<->" })
            }
            Fault::Heal { a, b, .. } => format!("network healed {a} <-> {b}"),
            Fault::Hold { a, b } => format!("network holds messages {a} <-> {b}"),
            Fault::Release { a, b } => format!("network releases held messages {a} <-> {b}"),
            Fault::Latency {
                a,
                b,
                latency_ms,
                max_latency_ms,
            } => match max_latency_ms {
                Some(max) => format!("latency {a} <-> {b} set to {latency_ms}..{max} ms"),
                None => format!("latency {a} <-> {b} set to {latency_ms} ms"),
            },
            Fault::Loss { a, b, rate_ppm } => format!("loss {a} <-> {b} set to {rate_ppm} ppm"),
            Fault::Crash { .. } => "CRASHED (memory lost; what its persistence kept survives)".to_string(),
            Fault::PowerLoss { .. } => "POWER LOSS (memory and unsynced AOF writes lost)".to_string(),
            Fault::Shutdown { .. } => "shut down cleanly".to_string(),
            Fault::Restart { .. } => "restart requested".to_string(),
            Fault::Failover { .. } => "FAILOVER forced".to_string(),
            Fault::DropReply { client, count, .. } => format!(
                "DROPS the next {count} {} to {} (the command runs, the reply is lost)",
                if *count == 1 { "reply" } else { "replies" },
                client.as_deref().unwrap_or("any client")
            ),
        }
    }

    /// A short label for a chart mark: `paused 15 s`, `clock +15 s`, `clock -500 ms`, and the
    /// kind for every other fault.
    pub fn short_label(&self) -> String {
        fn short_ms(ms: i64) -> String {
            if ms % 1000 == 0 {
                format!("{:+} s", ms / 1000)
            } else {
                format!("{ms:+} ms")
            }
        }
        match self {
            Fault::Pause { duration_ms, .. } => {
                let ms = i64::try_from(*duration_ms).unwrap_or(i64::MAX);
                format!("paused {}", short_ms(ms).trim_start_matches('+'))
            }
            Fault::ClockJump { delta_ms, .. } => format!("clock {}", short_ms(*delta_ms)),
            other => other.kind().to_string(),
        }
    }
}

/// What a fault is checked against: the nodes of a world (or of a scenario being read) and what
/// each is.
pub trait FaultTargets {
    /// What `node` is; `None` when there is no such node.
    fn role(&self, node: &str) -> Option<Role>;
    /// Whether `node` belongs to a replication group with at least one replica (a master with
    /// replicas, or one of them).
    fn is_replicated(&self, node: &str) -> bool;
    /// Every node's name, in definition order (for the message about an unknown node).
    fn node_names(&self) -> Vec<String>;
    /// Whether `crash` and `restart` may name a client: its process is killed and started again.
    /// Only live runs can (their clients are real processes); the simulated world cannot, and
    /// refuses such a fault before it runs.
    fn restarts_clients(&self) -> bool {
        false
    }
}

/// Why a fault does not fit the world it is planned for. [`FaultError::field`] names the fault's
/// field at fault (`node`, `a`, `b`, `client`, `drift_ppm`, `rate_ppm`, `count`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    /// A node that does not exist.
    #[error("unknown node `{node}` (nodes: {})", known.join(", "))]
    UnknownNode {
        /// The field naming it.
        field: &'static str,
        /// The name.
        node: String,
        /// Every node, in definition order.
        known: Vec<String>,
    },
    /// A node of a kind the fault does not apply to.
    #[error("{rule}; `{node}` is {}", role.describe())]
    WrongRole {
        /// The field naming it.
        field: &'static str,
        /// The node.
        node: String,
        /// What it is.
        role: Role,
        /// What the fault needs.
        rule: &'static str,
    },
    /// A link from a node to itself.
    #[error("a link needs two different nodes")]
    SameNode {
        /// The second side's field (`b`).
        field: &'static str,
    },
    /// A number out of range.
    #[error("{reason}")]
    OutOfRange {
        /// The field.
        field: &'static str,
        /// Why (starts with the value).
        reason: String,
    },
}

impl FaultError {
    /// The fault's field at fault.
    pub fn field(&self) -> &'static str {
        match self {
            FaultError::UnknownNode { field, .. }
            | FaultError::WrongRole { field, .. }
            | FaultError::SameNode { field }
            | FaultError::OutOfRange { field, .. } => field,
        }
    }
}

/// The `drop-reply` faults armed on one server: which client's replies to drop, how many more.
#[derive(Debug, Default)]
pub struct ReplyDrops(RefCell<Vec<(Option<String>, u32)>>);

impl ReplyDrops {
    /// Arms a `drop-reply` fault (other faults are ignored).
    pub fn arm(&self, fault: &Fault) {
        if let Fault::DropReply { client, count, .. } = fault {
            if *count > 0 {
                self.0.borrow_mut().push((client.clone(), *count));
            }
        }
    }

    /// Whether the reply about to go to `client` is to be dropped; counts it if so.
    pub fn take(&self, client: &str) -> bool {
        let mut armed = self.0.borrow_mut();
        let Some(at) = armed
            .iter()
            .position(|(who, _)| who.as_deref().is_none_or(|w| w == client))
        else {
            return false;
        };
        armed[at].1 -= 1;
        if armed[at].1 == 0 {
            armed.remove(at);
        }
        true
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

    #[test]
    fn every_kind_has_a_summary_and_kind_names_match() {
        for kind in Fault::KINDS {
            assert!(Fault::summary(kind).is_some_and(|s| !s.is_empty()), "{kind}");
        }
        assert_eq!(Fault::summary("meteor"), None);
        let drop = Fault::DropReply {
            node: "redis-1".into(),
            client: None,
            count: 1,
        };
        assert_eq!(drop.kind(), "drop-reply");
        assert!(Fault::KINDS.contains(&drop.kind()));
    }

    #[test]
    fn describe_and_short_label_give_the_timeline_and_chart_texts() {
        let pause = Fault::Pause {
            node: "client-1".into(),
            duration_ms: 15_000,
        };
        assert_eq!(pause.describe(), "PAUSED for 15000 ms (GC / VM stall)");
        assert_eq!(pause.short_label(), "paused 15 s");
        let jump = Fault::ClockJump {
            node: "redis-1".into(),
            delta_ms: -500,
        };
        assert_eq!(jump.describe(), "wall clock jumps -500 ms");
        assert_eq!(jump.short_label(), "clock -500 ms");
        let oneway = Fault::Partition {
            a: "a".into(),
            b: "b".into(),
            oneway: true,
        };
        assert_eq!(oneway.describe(), "network partition a -> b");
        assert_eq!(oneway.short_label(), "partition");
        let drop = Fault::DropReply {
            node: "redis-1".into(),
            client: Some("client-1".into()),
            count: 2,
        };
        assert_eq!(
            drop.describe(),
            "DROPS the next 2 replies to client-1 (the command runs, the reply is lost)"
        );
        assert_eq!(drop.subject(), Some("redis-1"));
        assert_eq!(drop.nodes(), vec!["redis-1", "client-1"]);
        assert_eq!(oneway.subject(), None);
    }

    #[test]
    fn reply_drops_count_down_per_client() {
        let drops = ReplyDrops::default();
        assert!(!drops.take("c1"), "nothing armed");
        drops.arm(&Fault::DropReply {
            node: "r".into(),
            client: Some("c1".into()),
            count: 2,
        });
        drops.arm(&Fault::DropReply {
            node: "r".into(),
            client: None,
            count: 1,
        });
        assert!(drops.take("c2"), "the any-client drop");
        assert!(!drops.take("c2"));
        assert!(drops.take("c1") && drops.take("c1"));
        assert!(!drops.take("c1"));
    }

    #[test]
    fn drop_reply_round_trips_and_defaults_its_count() {
        let json = r#"{"at_ms":5,"kind":"drop-reply","node":"redis-1"}"#;
        let s: ScheduledFault = serde_json::from_str(json).unwrap();
        assert_eq!(
            s.fault,
            Fault::DropReply {
                node: "redis-1".into(),
                client: None,
                count: 1
            }
        );
        let back = serde_json::to_string(&s).unwrap();
        assert_eq!(back, r#"{"at_ms":5,"kind":"drop-reply","node":"redis-1","count":1}"#);
    }
}
