//! `clock-jump`: a node's wall clock steps, forward or back (an NTP step, an operator setting
//! the time). Redis expires keys by its wall clock, so a master stepped forward drops keys
//! early; a client that times itself by its wall clock miscounts its validity.
//!
//! Drawn at random on any client or master, either way up to the profile's largest jump
//! (lock-aware: masters, forward by half to twice the TTL, inside a validity window); aimed at
//! an anchor on its client, master or a replica, forward seven times in ten; aimed at an
//! operation as a step of its client's clock strictly inside it (not at a release, which reads
//! no clock a lock depends on); on the exhaustive grid, the client stepped by ±TTL and a replica
//! by +TTL. Its strength is the step's size (it keeps its direction). Left out: the monotonic
//! clock, which never steps.

use super::{Aim, Draw, Effect, GenFault, Grid, Kind, OperationAim};
use lockstep_sim::{Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Step a node's wall clock.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClockJump {
    /// When.
    pub at_ms: u64,
    /// Which node.
    pub node: String,
    /// The step, ms.
    pub delta_ms: i64,
}

impl Kind for ClockJump {
    const NAME: &'static str = "clock-jump";
    const ABOUT: &'static str = "step a node's wall clock, forward or back";
    const OPERATION_DRAW_PLACES: &'static [usize] = &[3];
    const WASTED_ON_RELEASE: bool = true;

    fn nodes(&self) -> Vec<&str> {
        vec![&self.node]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.delta_ms = self.delta_ms.signum() * f(self.delta_ms.unsigned_abs()) as i64;
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        vec![ScheduledFault {
            at_ms: self.at_ms,
            fault: Fault::ClockJump {
                node: self.node.clone(),
                delta_ms: self.delta_ms,
            },
        }]
    }

    fn describe(&self) -> String {
        format!(
            "wall-clock jump of {} by {:+} ms at {} ms",
            self.node, self.delta_ms, self.at_ms
        )
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::ClockStep {
            node: &self.node,
            delta_ms: self.delta_ms,
        }]
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let max = d.profile.jump_ms_max.max(1);
        let jump = |(at_ms, node, delta_ms): (u64, String, i64)| GenFault::from(ClockJump { at_ms, node, delta_ms });
        Some(if d.profile.lock_aware {
            let ttl = d.ttl_ms as i64;
            (d.at.clone(), super::context::pick(&d.masters), ttl / 2..=2 * ttl)
                .prop_map(jump)
                .boxed()
        } else {
            (d.at.clone(), super::context::pick(&d.everyone), -max..=max)
                .prop_map(jump)
                .boxed()
        })
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        let magnitude = aim.length(rng) as i64;
        let node = match rng.random_range(0..3u8) {
            0 => aim.client.clone(),
            1 => aim.master.clone(),
            _ => super::context::pick_one(rng, &aim.topo.replicas)
                .cloned()
                .unwrap_or_else(|| aim.master.clone()),
        };
        Some(
            ClockJump {
                at_ms: aim.at_ms,
                node,
                delta_ms: if rng.random_bool(0.7) { magnitude } else { -magnitude },
            }
            .into(),
        )
    }

    fn aim_at_operation(rng: &mut ChaCha8Rng, aim: &OperationAim) -> Option<GenFault> {
        let magnitude = aim.length(rng) as i64;
        Some(
            ClockJump {
                at_ms: aim.inside_ms(rng),
                node: aim.client.clone(),
                delta_ms: if rng.random_bool(0.5) { magnitude } else { -magnitude },
            }
            .into(),
        )
    }

    fn exhaustive(grid: &Grid) -> Vec<GenFault> {
        let ttl = grid.ttl_ms as i64;
        let mut out: Vec<GenFault> = [ttl, -ttl]
            .into_iter()
            .map(|delta_ms| {
                ClockJump {
                    at_ms: grid.at_ms,
                    node: grid.client.to_string(),
                    delta_ms,
                }
                .into()
            })
            .collect();
        if let Some(replica) = grid.replicas.first() {
            out.push(
                ClockJump {
                    at_ms: grid.at_ms,
                    node: replica.clone(),
                    delta_ms: ttl,
                }
                .into(),
            );
        }
        out
    }
}
