//! `hold`: the link between a client and a server holds every message for a while, then
//! delivers them all (delayed packets: a request that lands after its sender gave up on it).
//!
//! Drawn at random between a client and a master or the resource; aimed at an anchor on its
//! client's link to the anchor's server; aimed at an operation on its client's link to a master
//! it talks to, from inside it until past its key's expiry (a release held past the TTL); on the
//! exhaustive grid, the client–master link held for half the TTL. Its strength is its length.

use super::{Aim, Draw, Effect, GenFault, Grid, Kind, OperationAim};
use lockstep_sim::{Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Hold every message on a link for a while (delayed packets).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Hold {
    /// When.
    pub at_ms: u64,
    /// One side.
    pub a: String,
    /// The other.
    pub b: String,
    /// How long until released.
    pub length_ms: u64,
}

impl Kind for Hold {
    const NAME: &'static str = "hold";
    const ABOUT: &'static str = "hold every message on a client-server link, then deliver them";
    const OPERATION_DRAW_PLACES: &'static [usize] = &[2];

    fn nodes(&self) -> Vec<&str> {
        vec![&self.a, &self.b]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.length_ms = f(self.length_ms);
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        vec![
            ScheduledFault {
                at_ms: self.at_ms,
                fault: Fault::Hold {
                    a: self.a.clone(),
                    b: self.b.clone(),
                },
            },
            ScheduledFault {
                at_ms: self.at_ms + self.length_ms,
                fault: Fault::Release {
                    a: self.a.clone(),
                    b: self.b.clone(),
                },
            },
        ]
    }

    fn describe(&self) -> String {
        format!(
            "hold of {} <-> {} for {} ms at {} ms",
            self.a, self.b, self.length_ms, self.at_ms
        )
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::Held {
            a: &self.a,
            b: &self.b,
            length_ms: self.length_ms,
        }]
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let pick = super::context::pick;
        Some(
            (d.at.clone(), pick(&d.clients), pick(&d.servers), 1..=d.window_ms_max)
                .prop_map(|(at_ms, a, b, length_ms)| GenFault::from(Hold { at_ms, a, b, length_ms }))
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        Some(
            Hold {
                at_ms: aim.at_ms,
                a: aim.client.clone(),
                b: aim.server.clone(),
                length_ms: aim.length(rng),
            }
            .into(),
        )
    }

    fn aim_at_operation(rng: &mut ChaCha8Rng, aim: &OperationAim) -> Option<GenFault> {
        let at_ms = aim.inside_ms(rng);
        Some(
            Hold {
                at_ms,
                a: aim.client.clone(),
                b: aim.server.clone(),
                length_ms: aim.past_lease_ms(rng, at_ms),
            }
            .into(),
        )
    }

    fn exhaustive(grid: &Grid) -> Vec<GenFault> {
        vec![Hold {
            at_ms: grid.at_ms,
            a: grid.client.to_string(),
            b: grid.master.to_string(),
            length_ms: grid.ttl_ms / 2,
        }
        .into()]
    }
}
