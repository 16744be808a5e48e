//! # lockstep-sim: the deterministic world
//!
//! A seeded turmoil simulation with what distributed locks break on: per-node clocks that
//! drift and jump ([`clock`]), process pauses that freeze a node whatever it is doing
//! ([`pause`]), simulated Redis masters speaking RESP over simulated TCP with Lua scripting
//! ([`redis`], [`master`]), deployed with persistence, replicas and failover ([`deployment`]), a
//! resource that checks fencing tokens ([`resource`]), network and process faults on a schedule
//! ([`fault`]), and one history of everything that happened ([`history`]).
//!
//! This crate knows nothing about lock algorithms or checkers: it runs whatever software the
//! caller puts on client nodes and records what happens.

#![warn(missing_docs)]

pub mod clock;
pub mod deployment;
pub mod fault;
pub mod history;
pub mod lua_syntax;
pub mod master;
pub mod net;
pub mod node;
pub mod pause;
pub mod redis;
pub mod resource;
pub mod seed;
pub mod serve;
pub mod world;

pub use deployment::{replica_name, DelayClock, MasterSetup, Persistence};
pub use fault::{Fault, FaultPlan, ScheduledFault};
pub use history::{Event, EventKind, History, Phase};
pub use lua_syntax::{check_lua_syntax, LuaSyntaxError};
pub use master::{READONLY_ERROR, REDIS_PORT};
pub use net::{LinkError, LinkTimeouts, RedisLink};
pub use node::Node;
pub use resource::{FencingMode, ResourceClient, WriteOutcome, RESOURCE_PORT};
pub use seed::Seed;
pub use world::{ClockSpec, Role, RunEnd, World, WorldConfig, WorldError};
