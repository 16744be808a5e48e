//! # lockstep-history: what a run records and what ends it
//!
//! The vocabulary the engine (`lockstep-sim`) and lockstep's Redis (`lockstep-redis`) share, so
//! that neither depends on the other's insides: the history of a run ([`history`]: its events,
//! including what each Redis command did to each key), the faults a plan can hold ([`fault`]),
//! the roles of nodes ([`role`]) and the request from outside to stop a run ([`stop`]).
//!
//! It depends on no other crate of lockstep. The paths these items had in `lockstep-sim`
//! (`lockstep_sim::history::…`, `lockstep_sim::fault::…`, ...) are deprecated and go in 0.3.0: name
//! them here (or by `lockstep-sim`'s crate-root re-exports, `lockstep_sim::{Event, Fault, ...}`).

#![warn(missing_docs)]

pub mod fault;
pub mod history;
pub mod role;
pub mod stop;

pub use fault::{Fault, FaultError, FaultPlan, FaultTargets, ScheduledFault};
pub use history::{Event, EventKind, History, KeyEffect, KeyState, Phase};
pub use role::Role;
