//! `power-loss`: a Redis server loses power — what its append-only file had not fsynced is
//! lost too — and restarts after a while. Offered only where it differs from a crash: masters
//! that run `aof-everysec`.
//!
//! Drawn at random and aimed at an anchor on such a master, down for up to the profile's
//! longest window (aimed: sized by the TTL). Its strength is its downtime; bounded like a crash.

use super::crash::as_pause;
use super::{Aim, Draw, Effect, GenFault, Kind, StopKind};
use lockstep_sim::ScheduledFault;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Cut a Redis server's power (unsynced AOF writes are lost) and restart it later.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PowerLoss {
    /// When, true ms.
    pub at_ms: u64,
    /// Which server.
    pub node: String,
    /// How long it stays down.
    pub down_ms: u64,
}

impl Kind for PowerLoss {
    const NAME: &'static str = "power-loss";
    const ABOUT: &'static str = "cut a Redis server's power (unsynced AOF writes are lost) and restart it";

    fn nodes(&self) -> Vec<&str> {
        vec![&self.node]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.down_ms = f(self.down_ms);
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        StopKind::PowerLoss.window(self.at_ms, &self.node, self.down_ms).to_vec()
    }

    fn describe(&self) -> String {
        format!("power loss of {} for {} ms at {} ms", self.node, self.down_ms, self.at_ms)
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::Stop {
            node: &self.node,
            at_ms: self.at_ms,
            down_ms: self.down_ms,
            how: StopKind::PowerLoss,
        }]
    }

    fn without_key_loss(&self, _resource: &str) -> Option<GenFault> {
        Some(as_pause(self.at_ms, &self.node, self.down_ms))
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let everysec = &d.topo.everysec;
        (!everysec.is_empty()).then(|| {
            (d.at.clone(), super::context::pick(everysec), 1..=d.window_ms_max)
                .prop_map(|(at_ms, node, down_ms)| GenFault::from(PowerLoss { at_ms, node, down_ms }))
                .boxed()
        })
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        let everysec = &aim.topo.everysec;
        if everysec.is_empty() {
            return None;
        }
        Some(
            PowerLoss {
                at_ms: aim.at_ms,
                node: super::context::pick_one(rng, everysec)?.clone(),
                down_ms: aim.length(rng),
            }
            .into(),
        )
    }
}
