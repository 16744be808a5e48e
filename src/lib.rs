//! # lockstep
//!
//! A deterministic simulation and fault-injection testbed for Redis-based distributed locks.
//!
//! Data flows one way: a [`scenario`] file is resolved into plain [`model`] data, which builds a
//! seeded world (the `lockstep-sim` crate); the [`workload`] drives [`lock`] clients through it,
//! the world records one history, and the [`checker`]s judge it.
//!
//! To test your own lock, start from [`prelude`]; to put it through everything the CLI does
//! (scenarios, explorations, differential oracle, report), see [`harness`].

#![warn(missing_docs)]

pub mod app;
pub mod bench;
pub mod checker;
pub mod emit;
pub mod explore;
pub mod gate;
pub mod harness;
pub mod history;
pub mod live;
pub mod liveness;
pub mod lock;
pub mod model;
pub mod ops;
pub mod prelude;
pub mod report;
pub mod run;
pub mod scenario;
pub mod workload;

pub use lockstep_sim as sim;
