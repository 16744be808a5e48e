//! `partition`: the link between a client and a server drops every message, one way or both,
//! and heals after a while. A request lost waits its whole timeout, however short the cut.
//!
//! Drawn at random between a client and a master or the resource (lock-aware: up to half the
//! TTL, while clients acquire); aimed at an anchor on its client's link to the anchor's server;
//! on the exhaustive grid, the client–master link cut both ways for half the TTL. Its strength
//! is its length. Left out: partitions between two servers or two clients (a lock's traffic
//! does not cross them).

use super::{Aim, Draw, Effect, GenFault, Grid, Kind};
use lockstep_sim::{Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Cut a link for a while.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Partition {
    /// When.
    pub at_ms: u64,
    /// One side.
    pub a: String,
    /// The other.
    pub b: String,
    /// How long until healed.
    pub length_ms: u64,
    /// Only a → b.
    pub oneway: bool,
}

impl Kind for Partition {
    const NAME: &'static str = "partition";
    const ABOUT: &'static str = "cut a client-server link, one way or both, then heal it";

    fn nodes(&self) -> Vec<&str> {
        vec![&self.a, &self.b]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.length_ms = f(self.length_ms);
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        let (a, b, oneway) = (self.a.clone(), self.b.clone(), self.oneway);
        vec![
            ScheduledFault {
                at_ms: self.at_ms,
                fault: Fault::Partition {
                    a: a.clone(),
                    b: b.clone(),
                    oneway,
                },
            },
            ScheduledFault {
                at_ms: self.at_ms + self.length_ms,
                fault: Fault::Heal { a, b, oneway },
            },
        ]
    }

    fn describe(&self) -> String {
        format!(
            "partition {} {} {} for {} ms at {} ms",
            self.a,
            if self.oneway { "->" } else { "<->" },
            self.b,
            self.length_ms,
            self.at_ms
        )
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::Cut {
            a: &self.a,
            b: &self.b,
            length_ms: self.length_ms,
        }]
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let lengths = if d.profile.lock_aware {
            1..=(d.ttl_ms / 2).max(1)
        } else {
            1..=d.window_ms_max
        };
        let pick = super::context::pick;
        Some(
            (d.at.clone(), pick(&d.clients), pick(&d.servers), lengths, any::<bool>())
                .prop_map(|(at_ms, a, b, length_ms, oneway)| {
                    GenFault::from(Partition {
                        at_ms,
                        a,
                        b,
                        length_ms,
                        oneway,
                    })
                })
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        Some(
            Partition {
                at_ms: aim.at_ms,
                a: aim.client.clone(),
                b: aim.server.clone(),
                length_ms: aim.length(rng),
                oneway: rng.random_bool(0.3),
            }
            .into(),
        )
    }

    fn exhaustive(grid: &Grid) -> Vec<GenFault> {
        vec![Partition {
            at_ms: grid.at_ms,
            a: grid.client.to_string(),
            b: grid.master.to_string(),
            length_ms: grid.ttl_ms / 2,
            oneway: false,
        }
        .into()]
    }
}
