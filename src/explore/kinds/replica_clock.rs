//! `replica-clock`: a replica's wall clock steps ahead, and a little later its group fails over
//! to it — the documented way a promoted replica expires a lock early. Redis replicates a key's
//! expiry as an absolute time (`SET key value PXAT t`, `PEXPIREAT`), so the replica judges it
//! by its own clock; once promoted, a replica whose clock is ahead expires the lock's key before
//! its holder's lease ends, and a second client acquires while the first still holds (Redis
//! documentation, "Distributed Locks with Redis" and "EXPIRE": expiries and replicas; the
//! Kleppmann/antirez exchange on clocks — docs/sources.md, "A promoted replica's clock runs
//! ahead").
//!
//! The replica stepped is the group's first: the one the Sentinel promotes when its replicas
//! are equally in sync (every replica applies the stream with the group's lag). Offered only
//! when a master has replicas; opt-in (`--kinds replica-clock`), so that no other kind's draws
//! move. Drawn at random (lock-aware: ahead by half to twice the TTL, the failover within half
//! a TTL, while a client holds the lock) and aimed at an anchor (ahead by a length sized by the
//! TTL and the validity left). Its strength is the clock step. Its effects are the replica's
//! forward step and the failover: it breaks the `masters` assumption (a failover loses the key
//! early — here even with every write replicated, which the classification says: "…'s wall
//! clock runs N ms ahead: promoted, it expires the key early"); the assumption-bounded profile
//! keeps the replica's step and drops the failover. Live runs apply it as a clock jump of the
//! replica's server and a failover, both of which they support.
//!
//! Left out: a replica stepped back (its keys outlive the lease: a liveness matter), drift on
//! the replica (a step is the same story told faster), and replicas that are not promoted.

use super::{Aim, ClockJump, Draw, Effect, GenFault, Kind};
use lockstep_sim::{replica_name, Fault, ScheduledFault};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Step a replica's wall clock ahead, then fail its group over to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReplicaClock {
    /// When the replica's clock steps, true ms.
    pub at_ms: u64,
    /// The group (its original master's name).
    pub node: String,
    /// The replica whose clock steps (and which the failover promotes).
    pub replica: String,
    /// How far ahead its wall clock steps, ms.
    pub ahead_ms: u64,
    /// How long after the step the group fails over, ms.
    pub lead_ms: u64,
}

impl ReplicaClock {
    /// A fault on `node`'s group: its first replica stepped ahead.
    fn on(node: String, at_ms: u64, ahead_ms: u64, lead_ms: u64) -> ReplicaClock {
        ReplicaClock {
            at_ms,
            replica: replica_name(&node, 1),
            node,
            ahead_ms,
            lead_ms,
        }
    }

    /// The step, as the world's signed clock step.
    fn delta_ms(&self) -> i64 {
        i64::try_from(self.ahead_ms).unwrap_or(i64::MAX)
    }

    /// The step alone: a replica's clock serves nobody until it is promoted.
    fn step(&self) -> ClockJump {
        ClockJump {
            at_ms: self.at_ms,
            node: self.replica.clone(),
            delta_ms: self.delta_ms(),
        }
    }
}

impl Kind for ReplicaClock {
    const NAME: &'static str = "replica-clock";
    const ABOUT: &'static str =
        "step a replica's wall clock ahead, then fail its group over to it (the promoted replica expires keys early)";

    fn nodes(&self) -> Vec<&str> {
        vec![&self.node, &self.replica]
    }

    fn scale_magnitude(&mut self, f: impl FnOnce(u64) -> u64) {
        self.ahead_ms = f(self.ahead_ms);
    }

    fn expand(&self) -> Vec<ScheduledFault> {
        let mut faults = self.step().expand();
        faults.push(ScheduledFault {
            at_ms: self.at_ms.saturating_add(self.lead_ms),
            fault: Fault::Failover {
                node: self.node.clone(),
            },
        });
        faults
    }

    fn describe(&self) -> String {
        format!(
            "wall-clock jump of replica {} by +{} ms at {} ms, then failover of {} at {} ms",
            self.replica,
            self.ahead_ms,
            self.at_ms,
            self.node,
            self.at_ms.saturating_add(self.lead_ms)
        )
    }

    fn effects(&self) -> Vec<Effect<'_>> {
        vec![
            Effect::ClockStep {
                node: &self.replica,
                delta_ms: self.delta_ms(),
            },
            Effect::Failover { node: &self.node },
        ]
    }

    fn without_key_loss(&self, _resource: &str) -> Option<GenFault> {
        Some(self.step().into())
    }

    fn strategy(d: &Draw) -> Option<BoxedStrategy<GenFault>> {
        let replicated = &d.topo.replicated;
        if replicated.is_empty() {
            return None;
        }
        let ttl = d.ttl_ms;
        let (ahead, lead) = if d.profile.lock_aware {
            (ttl / 2..=2 * ttl, 1..=(ttl / 2).max(1))
        } else {
            (1..=d.profile.jump_ms_max.unsigned_abs().max(1), 1..=d.window_ms_max)
        };
        Some(
            (d.at.clone(), super::context::pick(replicated), ahead, lead)
                .prop_map(|(at_ms, node, ahead_ms, lead_ms)| GenFault::from(ReplicaClock::on(node, at_ms, ahead_ms, lead_ms)))
                .boxed(),
        )
    }

    fn aim(rng: &mut ChaCha8Rng, aim: &Aim) -> Option<GenFault> {
        let node = super::context::pick_one(rng, &aim.topo.replicated)?.clone();
        let ahead_ms = aim.length(rng);
        let lead_ms = rng.random_range(1..=(aim.ttl_ms / 2).max(1));
        Some(ReplicaClock::on(node, aim.at_ms, ahead_ms, lead_ms).into())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::topology;
    use super::super::{Draw, GenFault};
    use super::*;
    use crate::model::fault::FaultProfile;
    use proptest::strategy::ValueTree;

    fn fault() -> ReplicaClock {
        ReplicaClock::on("redis-1".into(), 1_000, 9_000, 500)
    }

    #[test]
    fn it_steps_the_first_replica_then_fails_its_group_over() {
        let faults = fault().expand();
        assert_eq!(
            faults,
            vec![
                ScheduledFault {
                    at_ms: 1_000,
                    fault: Fault::ClockJump {
                        node: "redis-1-replica-1".into(),
                        delta_ms: 9_000
                    }
                },
                ScheduledFault {
                    at_ms: 1_500,
                    fault: Fault::Failover { node: "redis-1".into() }
                },
            ]
        );
        let mut f = GenFault::from(fault());
        assert_eq!(f.magnitude(), 9_000);
        f.scale_magnitude(|v| v / 3);
        assert_eq!(f.magnitude(), 3_000);
        assert_eq!(f.nodes(), ["redis-1", "redis-1-replica-1"]);
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"kind":"replica-clock","at_ms":1000,"node":"redis-1","replica":"redis-1-replica-1","ahead_ms":3000,"lead_ms":500}"#
        );
        // Bounded, the step stays and the failover goes.
        assert_eq!(
            f.without_key_loss("resource"),
            Some(GenFault::ClockJump(ClockJump {
                at_ms: 1_000,
                node: "redis-1-replica-1".into(),
                delta_ms: 3_000
            }))
        );
    }

    #[test]
    fn it_is_offered_only_to_groups_with_replicas_and_aimed_while_a_lease_runs() {
        let mut topo = topology();
        let profile = FaultProfile {
            lock_aware: true,
            ..FaultProfile::default()
        };
        let draw = Draw::new(&topo, &profile).unwrap();
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = GenFault::strategy("replica-clock", &draw).expect("redis-1 has a replica");
        for _ in 0..50 {
            let f = strategy.new_tree(&mut runner).unwrap().current();
            let GenFault::ReplicaClock(f) = f else { panic!("{f:?}") };
            assert_eq!((f.node.as_str(), f.replica.as_str()), ("redis-1", "redis-1-replica-1"));
            assert!((1_000..=4_000).contains(&f.ahead_ms) && (1..=1_000).contains(&f.lead_ms), "{f:?}");
        }
        topo.replicated.clear();
        assert!(GenFault::strategy("replica-clock", &Draw::new(&topo, &profile).unwrap()).is_none());
    }
}
