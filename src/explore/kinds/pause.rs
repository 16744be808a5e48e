//! `pause`: a node freezes (a GC pause, a stopped VM, SIGSTOP) and resumes after a while, its
//! state and connections intact; its clocks run on.
//!
//! Drawn at random on any client or master (lock-aware: on clients, for half to twice the TTL,
//! straddling a lease's expiry); aimed at an anchor on its client, master or a replica; aimed
//! at an operation as a stall of its client from inside it until past its key's expiry; on the
//! exhaustive grid, the master paused for a tenth of the TTL (its clock runs on, replies are
//! late). Its strength is its length. Left out: a pause of the resource's clock.

use super::{Aim, Draw, Effect, GenFault, Grid, Kind, OperationAim};
use lockstep_sim::{Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Freeze a node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Pause {
    /// When, true ms.
    pub at_ms: u64,
    /// Which node.
    pub node: String,
    /// How long.
    pub duration_ms: u64,
}

impl Kind for Pause {
    const NAME: &'static str = "pause";
    const ABOUT: &'static str = "freeze a node for a while (a GC pause, a stopped VM)";
    // Drawn twice as often as the others for an operation aim: a pause stalls every step of
    // the client, whatever its links.
    const OPERATION_DRAW_PLACES: &'static [usize] = &[0, 1];

    fn nodes(&self) -> Vec<&str> {
        vec![&self.node]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.duration_ms = f(self.duration_ms);
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        vec![ScheduledFault {
            at_ms: self.at_ms,
            fault: Fault::Pause {
                node: self.node.clone(),
                duration_ms: self.duration_ms,
            },
        }]
    }

    fn describe(&self) -> String {
        format!(
            "pause of {} for {} ms at {} ms",
            self.node, self.duration_ms, self.at_ms
        )
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::Freeze {
            node: &self.node,
            at_ms: self.at_ms,
            length_ms: self.duration_ms,
        }]
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let (p, ttl) = (d.profile, d.ttl_ms);
        let (lo, hi) = if p.lock_aware {
            (ttl / 2, (2 * ttl).max(ttl / 2 + 1))
        } else {
            (1, p.pause_ms_max.max(1))
        };
        let nodes = if p.lock_aware { &d.clients } else { &d.everyone };
        Some(
            (d.at.clone(), super::context::pick(nodes), lo..=hi)
                .prop_map(|(at_ms, node, duration_ms)| {
                    GenFault::from(Pause {
                        at_ms,
                        node,
                        duration_ms,
                    })
                })
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        Some(
            Pause {
                at_ms: aim.at_ms,
                node: aim.any_node(rng),
                duration_ms: aim.length(rng),
            }
            .into(),
        )
    }

    fn aim_at_operation(rng: &mut ChaCha8Rng, aim: &OperationAim) -> Option<GenFault> {
        let at_ms = aim.inside_ms(rng);
        Some(
            Pause {
                at_ms,
                node: aim.client.clone(),
                duration_ms: aim.past_lease_ms(rng, at_ms),
            }
            .into(),
        )
    }

    fn exhaustive(grid: &Grid) -> Vec<GenFault> {
        vec![Pause {
            at_ms: grid.at_ms,
            node: grid.master.to_string(),
            duration_ms: grid.ttl_ms / 10,
        }
        .into()]
    }
}
