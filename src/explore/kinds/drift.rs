//! `drift`: a node's clock runs fast or slow from now on (a bad oscillator, a throttled VM).
//! A lease lock's validity arithmetic allows for some drift (Redlock's drift factor); more
//! than that lets a key expire on a fast master before a slow client thinks its lease ended.
//!
//! Drawn at random on any client or master, either way up to the profile's largest drift;
//! aimed at an anchor on its client, master or a replica, 1,000 ppm or more either way; on the
//! exhaustive grid, the client and the master drifting ±100 ppm. Its strength is the rate error
//! (it keeps its direction, within ±900,000 ppm).

use super::{Aim, Draw, Effect, GenFault, Grid, Kind};
use lockstep_sim::{Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Change a node's clock rate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Drift {
    /// When.
    pub at_ms: u64,
    /// Which node.
    pub node: String,
    /// The new rate error, ppm.
    pub drift_ppm: i64,
}

impl Kind for Drift {
    const NAME: &'static str = "drift";
    const ABOUT: &'static str = "make a node's clock run fast or slow";

    fn nodes(&self) -> Vec<&str> {
        vec![&self.node]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.drift_ppm =
            (self.drift_ppm.signum() * f(self.drift_ppm.unsigned_abs()) as i64).clamp(-900_000, 900_000);
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        vec![ScheduledFault {
            at_ms: self.at_ms,
            fault: Fault::Drift {
                node: self.node.clone(),
                drift_ppm: self.drift_ppm,
            },
        }]
    }

    fn describe(&self) -> String {
        format!(
            "drift of {} to {:+} ppm at {} ms",
            self.node, self.drift_ppm, self.at_ms
        )
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::Drift {
            node: &self.node,
            drift_ppm: self.drift_ppm,
        }]
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let max = d.profile.drift_ppm_max.max(1);
        Some(
            (d.at.clone(), super::context::pick(&d.everyone), -max..=max)
                .prop_map(|(at_ms, node, drift_ppm)| GenFault::from(Drift { at_ms, node, drift_ppm }))
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        let max = aim.profile.drift_ppm_max.max(1_000);
        let ppm = rng.random_range(1_000..=max);
        Some(
            Drift {
                at_ms: aim.at_ms,
                node: aim.any_node(rng),
                drift_ppm: if rng.random_bool(0.5) { ppm } else { -ppm },
            }
            .into(),
        )
    }

    fn exhaustive(grid: &Grid) -> Vec<GenFault> {
        [grid.client, grid.master]
            .into_iter()
            .flat_map(|node| {
                [100, -100].map(|drift_ppm| {
                    GenFault::from(Drift {
                        at_ms: grid.at_ms,
                        node: node.to_string(),
                        drift_ppm,
                    })
                })
            })
            .collect()
    }
}
