//! lockstep's Redis in the world: the crate `lockstep-redis` (the command engine, the one server
//! loop, replication; re-exported here whole, so `lockstep_sim::redis::…` paths keep working), and
//! its two hosts on the world's nodes: the simulated master ([`master`], a
//! [`RedisHost`](server::RedisHost) on a [`crate::Node`]) and the reconnecting client link of
//! the simulated clients ([`link`]).

pub use lockstep_redis::*;

pub mod link;
pub mod master;
