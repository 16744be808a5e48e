//! The fault plan of a live run: which faults a live run can apply, and applying them at their
//! (real) times.
//!
//! Supported: `pause` of a client (SIGSTOP/SIGCONT of its process group) or of a server (its
//! command processing freezes); `clock-jump` and `drift` of a server's clock; `partition`,
//! `heal`, `hold`, `release`, `latency` and `loss` on a client↔server link; `crash`,
//! `power-loss`, `shutdown` and `restart` of a master; `crash` of a client (SIGKILL of its process
//! group) and `restart` of a client (its command started again; a running one is killed first);
//! `clock-jump` and `drift` of a client through libfaketime when it is installed
//! ([`super::fakeclock`]). Refused with a reason: a client clock fault without libfaketime,
//! network faults between two servers or two clients (live runs have client↔server links only),
//! network faults on a client's link to a replicated master or a replica (a live link follows
//! failovers: it is the client's address for the group), `power-loss` and `shutdown` of a client,
//! and process faults on the resource. Replicas take the faults of masters (pause, clock, crash,
//! restart); `failover` promotes a replica at once ([`super::replication`]).

use super::fakeclock::FakeClock;
use super::link::Link;
use super::process::GroupControl;
use super::recorder::LiveRecorder;
use super::replication::LiveReplication;
use super::server::{Server, StopKind};
use lockstep_sim::{EventKind, Fault, FaultPlan};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// What a live run can reach.
pub struct Targets {
    /// Client process groups, by client name.
    pub clients: BTreeMap<String, GroupControl>,
    /// Servers by name (masters and the resource).
    pub servers: BTreeMap<String, Rc<Server>>,
    /// Every link.
    pub links: Vec<Rc<Link>>,
    /// Faked wall clocks of clients (libfaketime), by client name.
    pub client_clocks: BTreeMap<String, Rc<FakeClock>>,
    /// The replication groups (replicas, the Sentinel, promotion).
    pub replication: Rc<LiveReplication>,
}

/// The nodes of a live run, as [`refusal`] judges a fault.
pub struct LiveNodes<'a> {
    /// The clients.
    pub clients: &'a [String],
    /// Every Redis server: masters and replicas.
    pub redis: &'a [String],
    /// The members (masters and replicas) of groups with replicas.
    pub replicated: &'a [String],
    /// The resource's name.
    pub resource: &'a str,
}

/// Why a fault cannot be applied live (`None`: it can), given the run's nodes. `faketime`:
/// whether libfaketime is installed (client clock jumps need it).
pub fn refusal(fault: &Fault, nodes: &LiveNodes<'_>, faketime: bool) -> Option<String> {
    let is_client = |n: &str| nodes.clients.iter().any(|c| c == n);
    let is_master = |n: &str| nodes.redis.iter().any(|m| m == n);
    let is_replicated = |n: &str| nodes.replicated.iter().any(|m| m == n);
    let is_server = |n: &str| is_master(n) || n == nodes.resource;
    let link_ok = |a: &str, b: &str| (is_client(a) && is_server(b)) || (is_server(a) && is_client(b));
    match fault {
        Fault::Pause { node, .. } => (!is_client(node) && !is_server(node)).then(|| format!("no node named {node}")),
        Fault::ClockJump { node, .. } | Fault::Drift { node, .. } => {
            if is_server(node) {
                None
            } else if is_client(node) {
                let what = if matches!(fault, Fault::ClockJump { .. }) {
                    "a clock jump"
                } else {
                    "drift"
                };
                (!faketime).then(|| {
                    format!(
                        "{what} on client {node} needs libfaketime around its process, and it is not \
                         installed (apt-get install faketime, or set LOCKSTEP_LIBFAKETIME)"
                    )
                })
            } else {
                Some(format!("no node named {node}"))
            }
        }
        Fault::Partition { a, b, .. }
        | Fault::Heal { a, b, .. }
        | Fault::Hold { a, b }
        | Fault::Release { a, b }
        | Fault::Latency { a, b, .. }
        | Fault::Loss { a, b, .. } => {
            if let Some(member) = [a, b].into_iter().find(|n| is_replicated(n)) {
                return Some(format!(
                    "{member} is in a replication group: a client's live link to a replicated master follows \
                     failovers (it is the client's address for the group), so it cannot cut one server as the \
                     simulation does"
                ));
            }
            (!link_ok(a, b)).then(|| format!("live runs have client<->server links only; {a} <-> {b} is not one"))
        }
        Fault::Crash { node } | Fault::Restart { node } if is_client(node) => None,
        Fault::Crash { node } | Fault::PowerLoss { node } | Fault::Shutdown { node } | Fault::Restart { node } => {
            (!is_master(node)).then(|| {
                format!(
                    "process faults apply to Redis servers (masters, replicas; crash and restart to clients too) live; {node} is \
                     neither"
                )
            })
        }
        Fault::Failover { node } => {
            (!is_replicated(node)).then(|| format!("failover needs replicas, and {node} has none"))
        }
        #[allow(unreachable_patterns)]
        other => Some(format!("fault kind {} is not supported live", other.kind())),
    }
}

fn links_between<'a>(targets: &'a Targets, a: &'a str, b: &'a str) -> impl Iterator<Item = &'a Rc<Link>> + 'a {
    targets
        .links
        .iter()
        .filter(move |l| (l.client == a && l.group == b) || (l.client == b && l.group == a))
}

/// Applies one fault now (and schedules the end of a pause).
pub(crate) fn apply(rec: &LiveRecorder, targets: &Targets, fault: &Fault) {
    let target = match fault.nodes().as_slice() {
        [one] => one.to_string(),
        _ => "net".to_string(),
    };
    rec.record(&target, EventKind::Fault { fault: fault.clone() });
    let now_us = rec.now_us();
    match fault {
        Fault::Pause { node, duration_ms } => {
            let resume: Box<dyn Fn()> = if let Some(group) = targets.clients.get(node) {
                group.pause();
                let group = group.clone();
                Box::new(move || {
                    group.resume();
                })
            } else if let Some(server) = targets.servers.get(node) {
                server.set_paused(true);
                let server = server.clone();
                Box::new(move || server.set_paused(false))
            } else {
                return;
            };
            let (rec, node, ms) = (rec.clone(), node.clone(), *duration_ms);
            tokio::task::spawn_local(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                resume();
                rec.record(&node, EventKind::Resumed);
            });
        }
        Fault::ClockJump { node, delta_ms } => {
            if let Some(s) = targets.servers.get(node) {
                s.clock().jump(*delta_ms);
            } else if let Some(fake) = targets.client_clocks.get(node) {
                if let Err(e) = fake.jump(*delta_ms) {
                    rec.record(
                        node,
                        EventKind::Note {
                            text: format!("clock jump failed: {e}"),
                        },
                    );
                }
                if let Some(clock) = rec.clock(node) {
                    clock.jump(*delta_ms);
                }
            }
        }
        Fault::Drift { node, drift_ppm } => {
            if let Some(s) = targets.servers.get(node) {
                s.clock().set_drift(now_us, (*drift_ppm).max(-999_999));
            } else if let Some(fake) = targets.client_clocks.get(node) {
                if let Err(e) = fake.set_drift(*drift_ppm) {
                    rec.record(
                        node,
                        EventKind::Note {
                            text: format!("drift change failed: {e}"),
                        },
                    );
                }
                if let Some(clock) = rec.clock(node) {
                    clock.set_drift(now_us, (*drift_ppm).max(-999_999));
                }
            }
        }
        Fault::Partition { a, b, oneway } | Fault::Heal { a, b, oneway } => {
            let cut = matches!(fault, Fault::Partition { .. });
            for link in links_between(targets, a, b) {
                link.direction(a).partitioned.set(cut);
                if !oneway {
                    link.direction(b).partitioned.set(cut);
                }
            }
        }
        Fault::Hold { a, b } | Fault::Release { a, b } => {
            let hold = matches!(fault, Fault::Hold { .. });
            for link in links_between(targets, a, b) {
                link.up.held.set(hold);
                link.down.held.set(hold);
            }
        }
        Fault::Latency { a, b, latency_ms, .. } => {
            for link in links_between(targets, a, b) {
                link.up.latency_ms.set(*latency_ms);
                link.down.latency_ms.set(*latency_ms);
            }
        }
        Fault::Loss { a, b, rate_ppm } => {
            for link in links_between(targets, a, b) {
                link.up.loss_ppm.set(*rate_ppm);
                link.down.loss_ppm.set(*rate_ppm);
            }
        }
        Fault::Crash { node } if targets.clients.contains_key(node) => {
            targets.clients[node].crash();
        }
        Fault::Restart { node } if targets.clients.contains_key(node) => {
            targets.clients[node].request_restart();
        }
        Fault::Crash { node } | Fault::PowerLoss { node } | Fault::Shutdown { node } => {
            let kind = match fault {
                Fault::Crash { .. } => StopKind::Crash,
                Fault::PowerLoss { .. } => StopKind::PowerLoss,
                _ => StopKind::Shutdown,
            };
            if let Some(s) = targets.servers.get(node) {
                s.stop(kind);
                for link in targets.links.iter().filter(|l| l.server().name() == node) {
                    link.reset_connections();
                }
            }
        }
        Fault::Failover { node } => targets.replication.failover(node),
        Fault::Restart { node } => {
            if let Some(s) = targets.servers.get(node) {
                if s.is_running() {
                    for link in targets.links.iter().filter(|l| l.server().name() == node) {
                        link.reset_connections();
                    }
                }
                s.request_start();
            }
        }
        _ => {}
    }
}

/// Applies `plan` at its times (ms since the run began), in plan order at equal times.
pub async fn run_plan(rec: LiveRecorder, targets: Rc<Targets>, plan: FaultPlan) {
    for scheduled in plan.sorted() {
        let now_ms = rec.now_us() / 1000;
        if scheduled.at_ms > now_ms {
            tokio::time::sleep(Duration::from_millis(scheduled.at_ms - now_ms)).await;
        }
        apply(&rec, &targets, &scheduled.fault);
    }
}
