//! `drop-reply`: a server runs a client's next 1–3 requests and loses their replies (the
//! client times out on a command that took effect, and retries or gives up). Opt-in: not among
//! the default kinds, and its strategy exists only when it is switched on, so the other kinds
//! draw what they always drew for a given seed; anchored placement draws it whenever the
//! profile holds every default kind.
//!
//! Drawn at random on a master or the resource and a client; aimed at an anchor on the
//! anchor's server and client; on the exhaustive grid, one reply of the master to the client.
//! Its strength is the number of replies (at most 8). It breaks none of a lock's assumptions: a
//! lost reply is what a correct lock is built to survive.

use super::{Aim, Draw, Effect, GenFault, Grid, Kind};
use lockstep_sim::{Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// A server runs a client's next requests and loses their replies.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DropReply {
    /// When, true ms.
    pub at_ms: u64,
    /// The server (a master or the resource).
    pub node: String,
    /// The client whose replies are lost.
    pub client: String,
    /// How many replies.
    pub count: u32,
}

impl Kind for DropReply {
    const NAME: &'static str = "drop-reply";
    const ABOUT: &'static str = "a server runs a client's next requests and loses their replies";
    const ANCHORED_WITH_DEFAULTS: bool = true;

    fn nodes(&self) -> Vec<&str> {
        vec![&self.node, &self.client]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.count = f(u64::from(self.count)).min(8) as u32;
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        vec![ScheduledFault {
            at_ms: self.at_ms,
            fault: Fault::DropReply {
                node: self.node.clone(),
                client: Some(self.client.clone()),
                count: self.count,
            },
        }]
    }

    fn describe(&self) -> String {
        format!(
            "{} replies from {} to {} lost from {} ms",
            self.count, self.node, self.client, self.at_ms
        )
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::RepliesLost {
            server: &self.node,
            client: &self.client,
            count: self.count,
        }]
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let pick = super::context::pick;
        Some(
            (d.at.clone(), pick(&d.servers), pick(&d.clients), 1..=3u32)
                .prop_map(|(at_ms, node, client, count)| {
                    GenFault::from(DropReply {
                        at_ms,
                        node,
                        client,
                        count,
                    })
                })
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        let topo = aim.topo;
        Some(
            DropReply {
                at_ms: aim.at_ms,
                node: if aim.server == topo.resource || topo.masters.contains(&aim.server) {
                    aim.server.clone()
                } else {
                    aim.master.clone()
                },
                client: aim.client.clone(),
                count: rng.random_range(1..=3u32),
            }
            .into(),
        )
    }

    fn exhaustive(grid: &Grid) -> Vec<GenFault> {
        vec![DropReply {
            at_ms: grid.at_ms,
            node: grid.master.to_string(),
            client: grid.client.to_string(),
            count: 1,
        }
        .into()]
    }
}
