//! Step aims: a delay aimed *between two steps* of one of the lock's multi-step operations
//! (issue 50, item 4).
//!
//! An acquisition, extension or release that takes several round trips to one master (a token
//! `INCR` before the `SET NX`, a `GET` before the `DEL`, a failed `SET NX` and its clean-up) is
//! atomic only if the lock makes it so. What breaks a lock that is not is another client's whole
//! turn falling between two of its steps: that needs the steps far apart, while each round trip
//! still succeeds. The aim picks two consecutive commands the client sent to the same master in
//! the seed's own fault-free run ([`OpWindow::commands`]) and, from the instant the master applied
//! the first, delays the second by up to just under the lock's request timeout
//! ([`Topology::request_timeout_ms`]), so the operation still succeeds but its steps are far
//! apart:
//!
//! - a **latency spike** on the client's link to that master, as long as the second step's request
//!   takes to leave, slowing that request by up to the request timeout less the network's
//!   largest delay (its reply comes back at the usual speed);
//! - a **hold** of that link (the first step's reply held, then delivered) for up to the request
//!   timeout less the network's largest delay;
//! - a **pause** of the client for as long, the reply arriving while it is paused.
//!
//! A delay that long is well inside what a lock must tolerate (every request answers before its
//! timeout), so a violation it shows is the lock's own. Left out: operations whose steps go to
//! different masters (a quorum's commands run in parallel, not in sequence: the operation aims
//! stall those), and steps separated by the client's own sleeps (a retry's delay).

use super::super::kinds::{Hold, Latency, Pause, Spike};
use super::{Anchors, OpWindow};
use crate::explore::kinds::GenFault;
use crate::explore::kinds::Topology;
use crate::model::fault::FaultProfile;
use lockstep_sim::Seed;
use rand::Rng;

/// How many step aims an operation-aimed seed tries, after its operation aims and its aims at
/// what outlives an operation.
pub const STEP_ATTEMPTS: u64 = 2;

/// The kinds a step aim draws, in the order they are chosen from.
const STEP_KINDS: [&str; 3] = ["latency", "hold", "pause"];

/// One gap between two consecutive steps of an operation: the operation and the index of the
/// first of the two commands (the second is the next one, to the same master).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepGap<'a> {
    /// The operation.
    pub window: &'a OpWindow,
    /// The first step's index in [`OpWindow::commands`].
    pub step: usize,
}

impl StepGap<'_> {
    /// When the master applied the first step, true ms.
    pub fn first_ms(&self) -> u64 {
        self.window.commands[self.step].0
    }

    /// When the master applied the second step in the fault-free run, true ms.
    pub fn second_ms(&self) -> u64 {
        self.window.commands[self.step + 1].0
    }

    /// The master both steps went to.
    pub fn master(&self) -> &str {
        &self.window.commands[self.step].1
    }
}

/// Every gap between two consecutive commands a client of the topology sent to the same master
/// inside one of its operations, in operation order, for operations starting before the
/// faults' horizon.
pub fn step_gaps<'a>(topo: &Topology, anchors: &'a Anchors) -> Vec<StepGap<'a>> {
    let horizon_ms = topo.horizon_ms();
    anchors
        .operations
        .iter()
        .filter(|w| topo.clients.contains(&w.client) && w.start_ms < horizon_ms)
        .flat_map(|window| {
            (0..window.commands.len().saturating_sub(1))
                .filter(move |&step| {
                    window.commands[step].1 == window.commands[step + 1].1
                        && !window.handshakes.contains(&step)
                        && !window.handshakes.contains(&(step + 1))
                })
                .map(move |step| StepGap { window, step })
        })
        .collect()
}

/// Whether a command sets up a connection (the client library's `CLIENT SETINFO`, `HELLO`,
/// `AUTH`, `SELECT`: the connection group of lockstep's command table) rather than acts for the
/// lock.
pub(crate) fn is_handshake(args: &[String]) -> bool {
    use lockstep_sim::redis::table::{command, Group};
    args.first()
        .and_then(|name| command(name.as_bytes()))
        .is_some_and(|spec| spec.group == Group::Connection)
}

/// The longest delay between two steps that keeps each of the operation's round trips under
/// the request timeout, ms: the timeout less the network's largest one-way delay and 1 ms.
pub fn step_delay_max_ms(topo: &Topology) -> u64 {
    let (_, max_latency_ms) = topo.network_latency_ms;
    topo.request_timeout_ms
        .saturating_sub(max_latency_ms.saturating_add(1))
        .max(1)
}

/// The `attempt`-th step aim of `seed` on its own fault-free run (`anchors`), from a stream of
/// its own (`explore/operation/step/{attempt}`, so no earlier draw moves): one gap between two
/// steps of an operation, one of the allowed kinds (latency, hold, pause), and a delay of the
/// second step up to [`step_delay_max_ms`] — the largest half the time, else from half of it.
/// Empty when the profile allows none of the kinds or no operation has two steps to one master.
pub fn step_case_try(
    seed: u64,
    attempt: u64,
    topo: &Topology,
    profile: &FaultProfile,
    anchors: &Anchors,
) -> Vec<GenFault> {
    let mut rng = Seed(seed).stream(&format!("explore/operation/step/{attempt}"));
    let kinds: Vec<&str> = STEP_KINDS
        .into_iter()
        .filter(|k| profile.kinds.iter().any(|p| p == k))
        .collect();
    let gaps = step_gaps(topo, anchors);
    if profile.faults_max == 0 || kinds.is_empty() || gaps.is_empty() {
        return Vec::new();
    }
    let gap = gaps[rng.random_range(0..gaps.len())];
    let kind = kinds[rng.random_range(0..kinds.len())];
    let max_ms = step_delay_max_ms(topo);
    let delay_ms = if rng.random_bool(0.5) {
        max_ms
    } else {
        rng.random_range(max_ms.div_ceil(2)..=max_ms)
    };
    let (at_ms, client, master) = (gap.first_ms(), gap.window.client.clone(), gap.master().to_string());
    let fault: GenFault = match kind {
        "latency" => {
            // The whole delay one way, for as long as the second step's request takes to leave
            // (the first step's reply crosses the network first): the request is slowed, its
            // reply is not, and the round trip stays under the timeout.
            let (min_latency_ms, max_latency_ms) = topo.network_latency_ms;
            Latency {
                at_ms,
                a: client,
                b: master,
                latency_ms: delay_ms,
                spike: Some(Spike {
                    length_ms: (max_latency_ms + 1).min(delay_ms),
                    min_latency_ms,
                    max_latency_ms,
                }),
            }
            .into()
        }
        "hold" => Hold {
            at_ms,
            a: client,
            b: master,
            length_ms: delay_ms,
        }
        .into(),
        _ => Pause {
            at_ms,
            node: client,
            duration_ms: delay_ms,
        }
        .into(),
    };
    vec![fault]
}

#[cfg(test)]
mod tests {
    use super::super::{fault_free, record, LockOpKind};
    use super::*;
    use crate::scenario::Scenario;

    fn scenario(name: &str) -> Scenario {
        let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        Scenario::from_file(std::path::Path::new(&path)).unwrap()
    }

    /// Issue 50 item 4: on a lock whose acquisition takes its token (`INCR`) and the lock
    /// (`SET NX`) in two round trips, every step aim starts when the master applied one step of
    /// a client's operation, before the next step, on that client's link to that master (or the
    /// client itself), and delays the next step by less than the request timeout.
    #[test]
    fn step_aims_land_between_two_steps_and_below_the_request_timeout() {
        let template = scenario("bug-token-two-step");
        let topo = super::super::super::topology(&template);
        let anchors = record(
            &fault_free(&template),
            &super::super::super::LockRef::Template.prepare(),
        )
        .unwrap();
        let gaps = step_gaps(&topo, &anchors);
        assert!(
            gaps.iter().any(|g| g.window.op == LockOpKind::Acquire),
            "the two-step acquisition has a gap: {gaps:?}"
        );
        let profile = FaultProfile::default();
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..60 {
            for attempt in 0..STEP_ATTEMPTS {
                let faults = step_case_try(seed, attempt, &topo, &profile, &anchors);
                assert_eq!(faults, step_case_try(seed, attempt, &topo, &profile, &anchors));
                let [fault] = faults.as_slice() else {
                    panic!("one fault: {faults:?}");
                };
                let (at_ms, node, delay_ms) = match fault {
                    GenFault::Latency(Latency {
                        at_ms,
                        a,
                        latency_ms,
                        spike: Some(spike),
                        ..
                    }) => {
                        // Only the request leaving in the spike is slowed, not its reply.
                        assert!(spike.length_ms <= topo.network_latency_ms.1 + 1, "{fault:?}");
                        assert!(spike.length_ms <= *latency_ms, "{fault:?}");
                        (*at_ms, a, *latency_ms)
                    }
                    GenFault::Hold(Hold {
                        at_ms, a, length_ms, ..
                    }) => (*at_ms, a, *length_ms),
                    GenFault::Pause(Pause {
                        at_ms,
                        node,
                        duration_ms,
                    }) => (*at_ms, node, *duration_ms),
                    other => panic!("not a step aim: {other:?}"),
                };
                kinds.insert(fault.kind());
                let gap = gaps
                    .iter()
                    .find(|g| &g.window.client == node && g.first_ms() == at_ms)
                    .unwrap_or_else(|| panic!("{fault:?} starts at no step of {node}"));
                assert!(at_ms < gap.second_ms(), "{fault:?}: before the next step");
                assert!(
                    delay_ms < topo.request_timeout_ms,
                    "{fault:?}: below the request timeout"
                );
                assert!(delay_ms >= step_delay_max_ms(&topo) / 2, "{fault:?}: far apart");
            }
        }
        assert_eq!(kinds, ["hold", "latency", "pause"].into_iter().collect());
    }

    /// A one-step acquisition and release (`SET NX`, a compare-and-delete script) leave no gap
    /// to aim at: the step aims draw nothing.
    #[test]
    fn one_step_operations_have_no_step_aims() {
        let template = scenario("bug-token-two-step-safe");
        let topo = super::super::super::topology(&template);
        let anchors = record(
            &fault_free(&template),
            &super::super::super::LockRef::Template.prepare(),
        )
        .unwrap();
        assert!(step_gaps(&topo, &anchors).is_empty());
        assert!((0..20).all(|seed| step_case_try(seed, 0, &topo, &FaultProfile::default(), &anchors).is_empty()));
    }
}
