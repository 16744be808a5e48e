//! # lockstep-sim: the deterministic world
//!
//! A seeded simulation (one scheduler, one simulated network: [`world`], [`wire`]) with what
//! distributed locks break on: per-node clocks that
//! drift and jump ([`clock`]), process pauses that freeze a node whatever it is doing
//! ([`pause`]), simulated Redis masters speaking RESP over simulated TCP with Lua scripting
//! ([`redis`]), deployed with persistence, replicas and failover ([`deployment`]), a
//! resource that checks fencing tokens ([`resource`]), network and process faults on a schedule
//! ([`Fault`], [`FaultPlan`]: `lockstep_history::fault`), and one history of everything that
//! happened ([`History`]: `lockstep_history::history`).
//!
//! Two parts. **The engine** knows no Redis: its scheduler and nodes ([`world`], `machine`,
//! [`timer`], [`node`]), the simulated network ([`wire`]), per-node clocks ([`clock`]), pause
//! gates ([`pause`]) and the seed's streams ([`seed`]). **lockstep's Redis** is one module,
//! [`redis`]: the command engine, the one server connection loop every host calls
//! ([`redis::server`]: the simulated masters here, `lockstep live`/`serve`, turmoil hosts), the
//! simulated master around it ([`redis::master`]), its replication ([`redis::replication`]) and
//! the reconnecting client link the simulated clients use ([`redis::link`]). The crate root's
//! modules `history`, `fault`, `stop`, `directory`, `lua_syntax`, `master`, `replication` and
//! `net` are the old paths of items that moved (to `lockstep-history`, `lockstep-redis` and
//! [`redis`]): each item there is deprecated and goes in 0.3.0.
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
/// The node roles, moved to [`lockstep_history::role`]. Each item is deprecated on its own; the
/// module goes in 0.3.0.
pub mod role {
    /// [`lockstep_history::role::Role`], under its old path (or `lockstep_sim::Role`).
    #[deprecated(since = "0.1.0", note = "moved to `lockstep_history::role::Role`; removed in 0.3.0")]
    pub type Role = lockstep_history::role::Role;
}
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
pub use lockstep_history::fault::{Fault, FaultError, FaultPlan, FaultTargets, ScheduledFault};
pub use lockstep_history::history::{Event, EventKind, History, KeyEffect, KeyState, Phase};
pub use lockstep_history::role::Role;
pub use lockstep_redis::directory::Directory;
pub use lockstep_redis::lua_syntax::{check_lua_syntax, check_script_commands, LuaSyntaxError};
pub use machine::SoftwareResult;
pub use node::Node;
pub use redis::link::{LinkError, LinkTimeouts, RedisLink};
pub use redis::master::{READONLY_ERROR, REDIS_PORT};
pub use resource::{FencingMode, ResourceClient, WriteOutcome, RESOURCE_PORT};
pub use seed::Seed;
pub use wire::{SegmentWhat, SentSegment, SimListener, SimStream};
pub use world::{ClockWork, RunEnd, World, WorldConfig, WorldError, DEFAULT_HISTORY_EVENTS_MAX, RESERVED_NODE_NAMES};

// The paths items had before they moved (see CHANGELOG.md): each item is deprecated and goes in
// 0.3.0, one address per item.

/// The history of a run, moved to [`lockstep_history::history`].
/// Each item is deprecated on its own (a `#[deprecated]` module or `pub use` warns nobody); the
/// module goes in 0.3.0.
pub mod history {
    /// [`lockstep_history::history::MAX_EVENT_TEXT_BYTES`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::MAX_EVENT_TEXT_BYTES`; removed in 0.3.0"
    )]
    pub const MAX_EVENT_TEXT_BYTES: usize = lockstep_history::history::MAX_EVENT_TEXT_BYTES;
    /// [`lockstep_history::history::MAX_EVENT_ARG_BYTES`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::MAX_EVENT_ARG_BYTES`; removed in 0.3.0"
    )]
    pub const MAX_EVENT_ARG_BYTES: usize = lockstep_history::history::MAX_EVENT_ARG_BYTES;
    /// [`lockstep_history::history::bound_text`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::bound_text`; removed in 0.3.0"
    )]
    pub fn bound_text(text: &mut String, max: usize) {
        lockstep_history::history::bound_text(text, max)
    }
    /// [`lockstep_history::history::bounded_lossy`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::bounded_lossy`; removed in 0.3.0"
    )]
    pub fn bounded_lossy(bytes: &[u8], max: usize) -> String {
        lockstep_history::history::bounded_lossy(bytes, max)
    }
    /// [`lockstep_history::history::cut_with_note`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::cut_with_note`; removed in 0.3.0"
    )]
    pub fn cut_with_note(text: &mut String, max: usize, total: usize) {
        lockstep_history::history::cut_with_note(text, max, total)
    }
    /// [`lockstep_history::history::text_bytes`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::text_bytes`; removed in 0.3.0"
    )]
    pub fn text_bytes(node: &str, kind: &lockstep_history::history::EventKind) -> usize {
        lockstep_history::history::text_bytes(node, kind)
    }
    /// [`lockstep_history::history::Phase`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::Phase`; removed in 0.3.0"
    )]
    pub type Phase = lockstep_history::history::Phase;
    /// [`lockstep_history::history::EventKind`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::EventKind`; removed in 0.3.0"
    )]
    pub type EventKind = lockstep_history::history::EventKind;
    /// [`lockstep_history::history::Event`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::Event`; removed in 0.3.0"
    )]
    pub type Event = lockstep_history::history::Event;
    /// [`lockstep_history::history::KeyState`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::KeyState`; removed in 0.3.0"
    )]
    pub type KeyState = lockstep_history::history::KeyState;
    /// [`lockstep_history::history::KeyEffect`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::KeyEffect`; removed in 0.3.0"
    )]
    pub type KeyEffect = lockstep_history::history::KeyEffect;
    /// [`lockstep_history::history::History`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::History`; removed in 0.3.0"
    )]
    pub type History = lockstep_history::history::History;
    /// [`lockstep_history::history::HistoryHandle`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::HistoryHandle`; removed in 0.3.0"
    )]
    pub type HistoryHandle = lockstep_history::history::HistoryHandle;
    /// [`lockstep_history::history::HistoryCap`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::history::HistoryCap`; removed in 0.3.0"
    )]
    pub type HistoryCap = lockstep_history::history::HistoryCap;
}

/// The fault vocabulary, moved to [`lockstep_history::fault`].
/// Each item is deprecated on its own (a `#[deprecated]` module or `pub use` warns nobody); the
/// module goes in 0.3.0.
pub mod fault {
    /// [`lockstep_history::fault::MIN_DRIFT_PPM`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::fault::MIN_DRIFT_PPM`; removed in 0.3.0"
    )]
    pub const MIN_DRIFT_PPM: i64 = lockstep_history::fault::MIN_DRIFT_PPM;
    /// [`lockstep_history::fault::MAX_DRIFT_PPM`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::fault::MAX_DRIFT_PPM`; removed in 0.3.0"
    )]
    pub const MAX_DRIFT_PPM: i64 = lockstep_history::fault::MAX_DRIFT_PPM;
    /// [`lockstep_history::fault::check_drift_ppm`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::fault::check_drift_ppm`; removed in 0.3.0"
    )]
    pub fn check_drift_ppm(drift_ppm: i64) -> Result<(), String> {
        lockstep_history::fault::check_drift_ppm(drift_ppm)
    }
    /// [`lockstep_history::fault::Fault`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::fault::Fault`; removed in 0.3.0"
    )]
    pub type Fault = lockstep_history::fault::Fault;
    /// [`lockstep_history::fault::FaultError`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::fault::FaultError`; removed in 0.3.0"
    )]
    pub type FaultError = lockstep_history::fault::FaultError;
    /// [`lockstep_history::fault::ReplyDrops`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::fault::ReplyDrops`; removed in 0.3.0"
    )]
    pub type ReplyDrops = lockstep_history::fault::ReplyDrops;
    /// [`lockstep_history::fault::ScheduledFault`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::fault::ScheduledFault`; removed in 0.3.0"
    )]
    pub type ScheduledFault = lockstep_history::fault::ScheduledFault;
    /// [`lockstep_history::fault::FaultPlan`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::fault::FaultPlan`; removed in 0.3.0"
    )]
    pub type FaultPlan = lockstep_history::fault::FaultPlan;
    /// A trait cannot be aliased: this re-export stays until 0.3.0 without a warning; name
    /// [`lockstep_history::fault::FaultTargets`] (or `lockstep_sim::FaultTargets`).
    pub use lockstep_history::fault::FaultTargets;
}

/// The stop flag, moved to [`lockstep_history::stop`].
/// Each item is deprecated on its own (a `#[deprecated]` module or `pub use` warns nobody); the
/// module goes in 0.3.0.
pub mod stop {
    /// [`lockstep_history::stop::STOPPED`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::stop::STOPPED`; removed in 0.3.0"
    )]
    pub const STOPPED: &str = lockstep_history::stop::STOPPED;
    /// [`lockstep_history::stop::stop_when`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::stop::stop_when`; removed in 0.3.0"
    )]
    pub fn stop_when(flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> lockstep_history::stop::StopGuard {
        lockstep_history::stop::stop_when(flag)
    }
    /// [`lockstep_history::stop::current`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::stop::current`; removed in 0.3.0"
    )]
    pub fn current() -> Option<std::sync::Arc<std::sync::atomic::AtomicBool>> {
        lockstep_history::stop::current()
    }
    /// [`lockstep_history::stop::requested`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::stop::requested`; removed in 0.3.0"
    )]
    pub fn requested() -> bool {
        lockstep_history::stop::requested()
    }
    /// [`lockstep_history::stop::StopGuard`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_history::stop::StopGuard`; removed in 0.3.0"
    )]
    pub type StopGuard = lockstep_history::stop::StopGuard;
}

/// The group directory, moved to [`lockstep_redis::directory`].
/// Each item is deprecated on its own (a `#[deprecated]` module or `pub use` warns nobody); the
/// module goes in 0.3.0.
pub mod directory {
    /// [`lockstep_redis::directory::Directory`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::directory::Directory`; removed in 0.3.0"
    )]
    pub type Directory = lockstep_redis::directory::Directory;
}

/// The Lua syntax check, moved to [`lockstep_redis::lua_syntax`].
/// Each item is deprecated on its own (a `#[deprecated]` module or `pub use` warns nobody); the
/// module goes in 0.3.0.
pub mod lua_syntax {
    /// [`lockstep_redis::lua_syntax::LuaSyntaxError`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::lua_syntax::LuaSyntaxError`; removed in 0.3.0"
    )]
    pub type LuaSyntaxError = lockstep_redis::lua_syntax::LuaSyntaxError;
    /// [`lockstep_redis::lua_syntax::check_lua_syntax`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::lua_syntax::check_lua_syntax`; removed in 0.3.0"
    )]
    pub fn check_lua_syntax(source: &str) -> Result<(), lockstep_redis::lua_syntax::LuaSyntaxError> {
        lockstep_redis::lua_syntax::check_lua_syntax(source)
    }
    /// [`lockstep_redis::lua_syntax::check_script_commands`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::lua_syntax::check_script_commands`; removed in 0.3.0"
    )]
    pub fn check_script_commands(source: &str) -> Result<(), lockstep_redis::lua_syntax::LuaSyntaxError> {
        lockstep_redis::lua_syntax::check_script_commands(source)
    }
}

/// The simulated master, moved to [`redis::master`] (and the server loop's items to
/// [`lockstep_redis::server`]).
/// Each item is deprecated on its own (a `#[deprecated]` module or `pub use` warns nobody); the
/// module goes in 0.3.0.
pub mod master {
    /// [`crate::redis::master::NodeHost`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `crate::redis::master::NodeHost`; removed in 0.3.0"
    )]
    pub type NodeHost = crate::redis::master::NodeHost;
    /// [`crate::redis::master::REDIS_PORT`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `crate::redis::master::REDIS_PORT`; removed in 0.3.0"
    )]
    pub const REDIS_PORT: u16 = crate::redis::master::REDIS_PORT;
    /// [`lockstep_redis::server::READONLY_ERROR`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::server::READONLY_ERROR`; removed in 0.3.0"
    )]
    pub const READONLY_ERROR: &str = lockstep_redis::server::READONLY_ERROR;
    /// [`lockstep_redis::server::execute_member`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::server::execute_member`; removed in 0.3.0"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn execute_member(
        repl: &std::cell::RefCell<lockstep_redis::replication::Replication>,
        node: &str,
        engine: &std::cell::RefCell<lockstep_redis::RedisEngine>,
        session: &mut lockstep_redis::ClientSession,
        name: &str,
        now_us: &dyn Fn() -> u64,
        run: &mut dyn FnMut(&mut lockstep_redis::ClientSession) -> Vec<lockstep_redis::Reply>,
        settle: &mut dyn FnMut(),
    ) -> Vec<lockstep_redis::Reply> {
        lockstep_redis::server::execute_member(repl, node, engine, session, name, now_us, run, settle)
    }
    /// [`lockstep_redis::server::publish_expired`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::server::publish_expired`; removed in 0.3.0"
    )]
    pub fn publish_expired(
        repl: &std::cell::RefCell<lockstep_redis::replication::Replication>,
        node: &str,
        expired: Vec<bytes::Bytes>,
        now_us: u64,
    ) {
        lockstep_redis::server::publish_expired(repl, node, expired, now_us)
    }
}

/// Replication, moved to [`lockstep_redis::replication`] (also [`redis::replication`]).
/// Each item is deprecated on its own (a `#[deprecated]` module or `pub use` warns nobody); the
/// module goes in 0.3.0.
pub mod replication {
    /// [`lockstep_redis::replication::Effect`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::replication::Effect`; removed in 0.3.0"
    )]
    pub type Effect = lockstep_redis::replication::Effect;
    /// [`lockstep_redis::replication::Link`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::replication::Link`; removed in 0.3.0"
    )]
    pub type Link = lockstep_redis::replication::Link;
    /// [`lockstep_redis::replication::Group`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::replication::Group`; removed in 0.3.0"
    )]
    pub type Group = lockstep_redis::replication::Group;
    /// [`lockstep_redis::replication::Replication`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::replication::Replication`; removed in 0.3.0"
    )]
    pub type Replication = lockstep_redis::replication::Replication;
    /// [`lockstep_redis::replication::Promotion`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::replication::Promotion`; removed in 0.3.0"
    )]
    pub type Promotion = lockstep_redis::replication::Promotion;
    /// [`lockstep_redis::replication::Due`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::replication::Due`; removed in 0.3.0"
    )]
    pub type Due = lockstep_redis::replication::Due;
    /// [`lockstep_redis::replication::SharedReplication`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::replication::SharedReplication`; removed in 0.3.0"
    )]
    pub type SharedReplication = lockstep_redis::replication::SharedReplication;
    /// [`lockstep_redis::replication::full_sync_note`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::replication::full_sync_note`; removed in 0.3.0"
    )]
    pub fn full_sync_note(master: &str, keys: usize) -> String {
        lockstep_redis::replication::full_sync_note(master, keys)
    }
    /// [`lockstep_redis::replication::apply_stream`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `lockstep_redis::replication::apply_stream`; removed in 0.3.0"
    )]
    pub fn apply_stream(
        keyspace: &mut lockstep_redis::Keyspace,
        batches: &[Vec<lockstep_redis::replication::Effect>],
        record: &mut dyn FnMut(Vec<String>),
    ) {
        lockstep_redis::replication::apply_stream(keyspace, batches, record)
    }
}

/// The Redis client link, moved to [`redis::link`] (deprecated since 0.1.0).
/// Each item is deprecated on its own (a `#[deprecated]` module or `pub use` warns nobody); the
/// module goes in 0.3.0.
pub mod net {
    /// [`crate::redis::link::LinkError`], under its old path.
    #[deprecated(since = "0.1.0", note = "moved to `crate::redis::link::LinkError`; removed in 0.3.0")]
    pub type LinkError = crate::redis::link::LinkError;
    /// [`crate::redis::link::LinkTimeouts`], under its old path.
    #[deprecated(
        since = "0.1.0",
        note = "moved to `crate::redis::link::LinkTimeouts`; removed in 0.3.0"
    )]
    pub type LinkTimeouts = crate::redis::link::LinkTimeouts;
    /// [`crate::redis::link::RedisLink`], under its old path.
    #[deprecated(since = "0.1.0", note = "moved to `crate::redis::link::RedisLink`; removed in 0.3.0")]
    pub type RedisLink = crate::redis::link::RedisLink;
}
