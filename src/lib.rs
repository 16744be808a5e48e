//! # lockstep
//!
//! A deterministic simulation and fault-injection testbed for Redis-based distributed locks.
//!
//! Data flows one way: a [`scenario`] file builds a seeded world (the `lockstep-sim` crate),
//! the [`workload`] drives [`lock`] clients through it, the world records one history, and the
//! [`checker`]s judge it.

#![warn(missing_docs)]

pub mod bench;
pub mod checker;
pub mod explore;
pub mod live;
pub mod liveness;
pub mod lock;
pub mod ops;
pub mod report;
pub mod run;
pub mod scenario;
pub mod timeline;
pub mod workload;

pub use lockstep_sim as sim;
