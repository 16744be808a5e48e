//! # lockstep-sim: the deterministic world
//!
//! A seeded simulation (one scheduler, one simulated network: [`world`], [`wire`]) with what
//! distributed locks break on: per-node clocks that
//! drift and jump ([`clock`]), process pauses that freeze a node whatever it is doing
//! ([`pause`]), simulated Redis masters speaking RESP over simulated TCP with Lua scripting
//! ([`redis`]), deployed with persistence, replicas and failover ([`deployment`]), a
//! resource that checks fencing tokens ([`resource`]), network and process faults on a schedule
//! ([`fault`]), and one history of everything that happened ([`history`]).
//!
//! Two parts. **The engine** knows no Redis: its scheduler and nodes ([`world`], `machine`,
//! [`timer`], [`node`]), the simulated network ([`wire`]), per-node clocks ([`clock`]), pause
//! gates ([`pause`]) and the seed's streams ([`seed`]). **lockstep's Redis** is one module,
//! [`redis`]: the command engine, the one server connection loop every host calls
//! ([`redis::server`]: the simulated masters here, `lockstep live`/`serve`, turmoil hosts), the
//! simulated master around it ([`redis::master`]), its replication ([`redis::replication`]) and
//! the reconnecting client link the simulated clients use ([`redis::link`]). `master` and
//! `replication` are still reachable at the crate root, where they were; `net` (the link's old
//! name) is deprecated.
//!
//! The [`world`] owns true time, the nodes, the network and the fault plan, and drives a list of
//! [`component`]s through a few hooks (before and after each step, on each fault, what each has
//! due), as madsim's plugins: the Redis deployment is the first, with its state private to it;
//! a test adds its own with [`World::add_component`].
//!
//! This crate knows nothing about lock algorithms or checkers: it runs whatever software the
//! caller puts on client nodes and records what happens.

#![warn(missing_docs)]

pub mod clock;
pub mod component;
pub mod deployment;
pub use lockstep_history::{fault, history, role, stop};
pub use lockstep_redis::directory;
pub use lockstep_redis::lua_syntax;
mod machine;
pub mod node;
pub mod pause;
pub mod redis;
pub mod resource;
pub mod seed;
pub mod serve;
pub mod timer;
pub mod wire;
pub mod world;

pub use clock::ClockSpec;
pub use component::{Component, Hosts};
pub use deployment::{replica_name, DelayClock, MasterSetup, Persistence};
pub use directory::Directory;
pub use fault::{Fault, FaultError, FaultPlan, FaultTargets, ScheduledFault};
pub use history::{Event, EventKind, History, KeyEffect, KeyState, Phase};
pub use lua_syntax::{check_lua_syntax, check_script_commands, LuaSyntaxError};
pub use machine::SoftwareResult;
pub use redis::link::{LinkError, LinkTimeouts, RedisLink};
pub use redis::master::{READONLY_ERROR, REDIS_PORT};
// The paths these modules had before lockstep's Redis became one module (see CHANGELOG.md).
pub use redis::{master, replication};

/// The Redis client link, moved to [`redis::link`].
#[deprecated(since = "0.1.0", note = "moved to `lockstep_sim::redis::link`")]
pub mod net {
    pub use crate::redis::link::*;
}
pub use node::Node;
pub use resource::{FencingMode, ResourceClient, WriteOutcome, RESOURCE_PORT};
pub use role::Role;
pub use seed::Seed;
pub use wire::{SegmentWhat, SentSegment, SimListener, SimStream};
pub use world::{ClockWork, RunEnd, World, WorldConfig, WorldError, DEFAULT_HISTORY_EVENTS_MAX, RESERVED_NODE_NAMES};
