//! `loss`: a client–server link loses a share of its messages from now on. Each lost request
//! waits its whole timeout; at a high rate, several in a row.
//!
//! Drawn at random between a client and a master or the resource, up to the profile's largest
//! rate; aimed at an anchor on its client's link to the anchor's server, 10 % to 90 %. Its
//! strength is the rate (at most 1,000,000 ppm).

use super::{Aim, Draw, Effect, GenFault, Kind};
use lockstep_sim::{Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Make a link lossy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Loss {
    /// When.
    pub at_ms: u64,
    /// One side.
    pub a: String,
    /// The other.
    pub b: String,
    /// Per-message break probability, ppm.
    pub rate_ppm: u32,
}

impl Kind for Loss {
    const NAME: &'static str = "loss";
    const ABOUT: &'static str = "make a client-server link lose a share of its messages";

    fn nodes(&self) -> Vec<&str> {
        vec![&self.a, &self.b]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.rate_ppm = f(u64::from(self.rate_ppm)).min(1_000_000) as u32;
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        vec![ScheduledFault {
            at_ms: self.at_ms,
            fault: Fault::Loss {
                a: self.a.clone(),
                b: self.b.clone(),
                rate_ppm: self.rate_ppm,
            },
        }]
    }

    fn describe(&self) -> String {
        format!(
            "loss {} ppm on {} <-> {} from {} ms",
            self.rate_ppm, self.a, self.b, self.at_ms
        )
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::Loss {
            a: &self.a,
            b: &self.b,
            rate_ppm: self.rate_ppm,
        }]
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let pick = super::context::pick;
        Some(
            (d.at.clone(), pick(&d.clients), pick(&d.servers), 0..=d.profile.loss_ppm_max)
                .prop_map(|(at_ms, a, b, rate_ppm)| GenFault::from(Loss { at_ms, a, b, rate_ppm }))
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        Some(
            Loss {
                at_ms: aim.at_ms,
                a: aim.client.clone(),
                b: aim.server.clone(),
                rate_ppm: rng.random_range(100_000..=900_000),
            }
            .into(),
        )
    }
}
