//! `rolling-restart`: an operator shuts down and restarts every master in turn, `gap_ms` apart
//! (without persistence each comes back empty). Offered with two masters or more.
//!
//! Drawn at random (lock-aware: the whole roll fits in a TTL, each master down at most a
//! quarter of it) and aimed at an anchor the same way. Its strength is each master's downtime.
//! The assumption-bounded profile drops a roll that would lose the lock's key (it becomes a
//! fault that does nothing: a zero drift of the resource, so the plan keeps its shape).

use super::{Aim, Draw, Drift, Effect, GenFault, Kind, StopKind};
use lockstep_sim::ScheduledFault;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Shut down and restart every master in turn.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RollingRestart {
    /// When the first master stops, true ms.
    pub at_ms: u64,
    /// Between one master's stop and the next one's.
    pub gap_ms: u64,
    /// How long each stays down.
    pub down_ms: u64,
    /// The masters, in order.
    pub nodes: Vec<String>,
}

impl RollingRestart {
    /// When the `i`-th master stops, true ms.
    fn stop_ms(&self, i: usize) -> u64 {
        self.at_ms.saturating_add(self.gap_ms.saturating_mul(i as u64))
    }
}

impl Kind for RollingRestart {
    const NAME: &'static str = "rolling-restart";
    const ABOUT: &'static str = "stop and restart the masters one after another (generated as shutdown + restart pairs)";

    fn nodes(&self) -> Vec<&str> {
        self.nodes.iter().map(String::as_str).collect()
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.down_ms = f(self.down_ms);
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        self.nodes
            .iter()
            .enumerate()
            .flat_map(|(i, node)| StopKind::Shutdown.window(self.at_ms + i as u64 * self.gap_ms, node, self.down_ms))
            .collect()
    }

    fn describe(&self) -> String {
        format!(
            "rolling restart of {} masters {} ms apart, each down {} ms, from {} ms",
            self.nodes.len(),
            self.gap_ms,
            self.down_ms,
            self.at_ms
        )
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, node)| Effect::Stop {
                node,
                at_ms: self.stop_ms(i),
                down_ms: self.down_ms,
                how: StopKind::Shutdown,
            })
            .collect()
    }

    fn without_key_loss(&self, resource: &str) -> Option<GenFault> {
        Some(
            Drift {
                at_ms: 0,
                node: resource.to_string(),
                drift_ppm: 0,
            }
            .into(),
        )
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let masters = d.masters.clone();
        if masters.len() < 2 {
            return None;
        }
        let (gap_max, down_max) = if d.profile.lock_aware {
            ((d.ttl_ms / masters.len() as u64).max(1), (d.ttl_ms / 4).max(1))
        } else {
            (d.window_ms_max, d.window_ms_max)
        };
        Some(
            (d.at.clone(), 1..=gap_max, 1..=down_max)
                .prop_map(move |(at_ms, gap_ms, down_ms)| {
                    GenFault::from(RollingRestart {
                        at_ms,
                        gap_ms,
                        down_ms,
                        nodes: masters.clone(),
                    })
                })
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        let masters = &aim.topo.masters;
        if masters.len() < 2 {
            return None;
        }
        Some(
            RollingRestart {
                at_ms: aim.at_ms,
                gap_ms: rng.random_range(1..=(aim.ttl_ms / masters.len() as u64).max(1)),
                down_ms: rng.random_range(1..=(aim.ttl_ms / 4).max(1)),
                nodes: masters.clone(),
            }
            .into(),
        )
    }
}
