//! `latency`: a client–server link delays every message by a fixed time from now on, or, as a
//! spike, for a while before it returns to the network's own delays. A request sent in a spike
//! can time out and land after the client's retry or its next operation, which went through at
//! the usual speed.
//!
//! Drawn at random between a client and a master or the resource, up to the profile's largest
//! latency (no spike); aimed at an anchor on its client's link to the anchor's server, up to a
//! tenth of the TTL; aimed at an operation as a spike on its client's link to a master it talks
//! to, starting just before it, longer than the request timeout. Its strength is the delay.

use super::{Aim, Draw, Effect, GenFault, Kind, OperationAim, NEAR_MS};
use lockstep_sim::{Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The end of a latency spike: how long it lasts and the network latency the link returns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Spike {
    /// How long the spike lasts, ms.
    pub length_ms: u64,
    /// The network's smallest one-way delay, ms, which the link returns to.
    pub min_latency_ms: u64,
    /// The network's largest one-way delay, ms.
    pub max_latency_ms: u64,
}

/// Set a link's latency.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Latency {
    /// When.
    pub at_ms: u64,
    /// One side.
    pub a: String,
    /// The other.
    pub b: String,
    /// The delay, ms.
    pub latency_ms: u64,
    /// A spike: the link returns to the network's latency after this window (absent: the
    /// latency stays). A request sent in a spike can time out and land after the client's
    /// retry or its next operation, which went through at the usual speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike: Option<Spike>,
}

impl Kind for Latency {
    const NAME: &'static str = "latency";
    const ABOUT: &'static str = "delay every message on a client-server link, for good or as a spike";
    const OPERATION_DRAW_PLACES: &'static [usize] = &[4];

    fn nodes(&self) -> Vec<&str> {
        vec![&self.a, &self.b]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.latency_ms = f(self.latency_ms);
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        let mut faults = vec![ScheduledFault {
            at_ms: self.at_ms,
            fault: Fault::Latency {
                a: self.a.clone(),
                b: self.b.clone(),
                latency_ms: self.latency_ms,
                max_latency_ms: None,
            },
        }];
        if let Some(spike) = self.spike {
            faults.push(ScheduledFault {
                at_ms: self.at_ms + spike.length_ms,
                fault: Fault::Latency {
                    a: self.a.clone(),
                    b: self.b.clone(),
                    latency_ms: spike.min_latency_ms,
                    max_latency_ms: Some(spike.max_latency_ms.max(spike.min_latency_ms)),
                },
            });
        }
        faults
    }

    fn describe(&self) -> String {
        let (a, b, latency_ms, at_ms) = (&self.a, &self.b, self.latency_ms, self.at_ms);
        match self.spike {
            None => format!("latency {latency_ms} ms on {a} <-> {b} from {at_ms} ms"),
            Some(spike) => format!(
                "latency {latency_ms} ms on {a} <-> {b} for {} ms from {at_ms} ms",
                spike.length_ms
            ),
        }
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::Latency {
            a: &self.a,
            b: &self.b,
            latency_ms: self.latency_ms,
        }]
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let pick = super::context::pick;
        Some(
            (d.at.clone(), pick(&d.clients), pick(&d.servers), 0..=d.profile.latency_ms_max)
                .prop_map(|(at_ms, a, b, latency_ms)| {
                    GenFault::from(Latency {
                        at_ms,
                        a,
                        b,
                        latency_ms,
                        spike: None,
                    })
                })
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        Some(
            Latency {
                at_ms: aim.at_ms,
                a: aim.client.clone(),
                b: aim.server.clone(),
                latency_ms: rng.random_range(1..=(aim.ttl_ms / 10).max(aim.profile.latency_ms_max).max(1)),
                spike: None,
            }
            .into(),
        )
    }

    /// A spike on the link to the operation's master, starting just before it, long enough for
    /// the request to time out and short enough that the client's retry, or its next
    /// operation, goes through first — and the delayed request lands after it.
    fn aim_at_operation(rng: &mut ChaCha8Rng, aim: &OperationAim) -> Option<GenFault> {
        let timeout = aim.topo.request_timeout_ms.max(1);
        let (min_latency_ms, max_latency_ms) = aim.topo.network_latency_ms;
        Some(
            Latency {
                at_ms: aim.start_ms.saturating_sub(NEAR_MS[rng.random_range(0..2usize)]),
                a: aim.client.clone(),
                b: aim.server.clone(),
                latency_ms: timeout + aim.length(rng),
                spike: Some(Spike {
                    length_ms: rng.random_range(1..=timeout.saturating_mul(4).max(2)),
                    min_latency_ms,
                    max_latency_ms,
                }),
            }
            .into(),
        )
    }
}
