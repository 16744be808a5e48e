//! `crash`: a Redis server (a master, or a replica when the template has some) crashes and
//! restarts after a while with what its persistence kept (without persistence: nothing; the
//! server's own restart delay may hold it down longer).
//!
//! Drawn at random and aimed at an anchor on any master or replica, down for up to the
//! profile's longest window (aimed: sized by the TTL). Its strength is its downtime. The
//! assumption-bounded profile makes a crash that would lose the lock's key a pause of that
//! server as long as its downtime.

use super::{Aim, Draw, Effect, GenFault, Kind, Pause, StopKind};
use lockstep_sim::ScheduledFault;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Crash a Redis server and restart it later (with what its persistence kept).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Crash {
    /// When, true ms.
    pub at_ms: u64,
    /// Which server.
    pub node: String,
    /// How long it stays down.
    pub down_ms: u64,
}

/// A stop that must not lose the key: a pause of the server as long as its downtime.
pub(super) fn as_pause(at_ms: u64, node: &str, down_ms: u64) -> GenFault {
    Pause {
        at_ms,
        node: node.to_string(),
        duration_ms: down_ms,
    }
    .into()
}

impl Kind for Crash {
    const NAME: &'static str = "crash";
    const ABOUT: &'static str = "crash a Redis server and restart it with what its persistence kept";

    fn nodes(&self) -> Vec<&str> {
        vec![&self.node]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.down_ms = f(self.down_ms);
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        StopKind::Crash.window(self.at_ms, &self.node, self.down_ms).to_vec()
    }

    fn describe(&self) -> String {
        format!("crash of {} for {} ms at {} ms", self.node, self.down_ms, self.at_ms)
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::Stop {
            node: &self.node,
            at_ms: self.at_ms,
            down_ms: self.down_ms,
            how: StopKind::Crash,
        }]
    }

    fn without_key_loss(&self, _resource: &str) -> Option<GenFault> {
        Some(as_pause(self.at_ms, &self.node, self.down_ms))
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let mut servers = d.masters.clone();
        servers.extend(d.topo.replicas.iter().cloned());
        Some(
            (d.at.clone(), super::context::pick(&servers), 1..=d.window_ms_max)
                .prop_map(|(at_ms, node, down_ms)| GenFault::from(Crash { at_ms, node, down_ms }))
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        let mut servers = aim.topo.masters.clone();
        servers.extend(aim.topo.replicas.iter().cloned());
        Some(
            Crash {
                at_ms: aim.at_ms,
                node: super::context::pick_one(rng, &servers)
                    .cloned()
                    .unwrap_or_else(|| aim.master.clone()),
                down_ms: aim.length(rng),
            }
            .into(),
        )
    }
}
