//! `failover`: a master's replication group fails over at once (an operator's `SENTINEL
//! FAILOVER`, or a Sentinel that lost sight of the master): its best replica is promoted with
//! what it had received, and the old master becomes its replica. Offered only when a master has
//! replicas.
//!
//! Drawn at random and aimed at an anchor on such a master. It has no strength. The
//! assumption-bounded profile makes a failover a zero step of that master's clock (a failover
//! cannot be made harmless).

use super::{Aim, ClockJump, Draw, Effect, GenFault, Kind};
use lockstep_sim::{Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Force a failover of a master's replication group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Failover {
    /// When, true ms.
    pub at_ms: u64,
    /// The group (its original master's name).
    pub node: String,
}

impl Kind for Failover {
    const NAME: &'static str = "failover";
    const ABOUT: &'static str = "promote a replica of a master at once";

    fn nodes(&self) -> Vec<&str> {
        vec![&self.node]
    }

    fn scale_magnitude(&mut self, _f: impl FnOnce(u64) -> u64) {}

    fn expand(&self) -> Vec<ScheduledFault> {
        vec![ScheduledFault {
            at_ms: self.at_ms,
            fault: Fault::Failover {
                node: self.node.clone(),
            },
        }]
    }

    fn describe(&self) -> String {
        format!("failover of {} at {} ms", self.node, self.at_ms)
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![Effect::Failover { node: &self.node }]
    }

    fn without_key_loss(&self, _resource: &str) -> Option<GenFault> {
        Some(
            ClockJump {
                at_ms: self.at_ms,
                node: self.node.clone(),
                delta_ms: 0,
            }
            .into(),
        )
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let replicated = &d.topo.replicated;
        (!replicated.is_empty()).then(|| {
            (d.at.clone(), super::context::pick(replicated))
                .prop_map(|(at_ms, node)| GenFault::from(Failover { at_ms, node }))
                .boxed()
        })
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        let replicated = &aim.topo.replicated;
        if replicated.is_empty() {
            return None;
        }
        Some(
            Failover {
                at_ms: aim.at_ms,
                node: super::context::pick_one(rng, replicated)?.clone(),
            }
            .into(),
        )
    }
}
