//! Everything needed to write and test your own lock: `use lockstep::prelude::*;`.
//!
//! - To implement a lock: [`LockClient`] (with the [`async_trait`](macro@async_trait) attribute, `?Send`),
//!   [`LockEnv`] (the client node's clocks, sleeps, random stream and links), [`Grant`],
//!   [`LockError`], [`AutoExtend`] and what a failed one does ([`ExtendFailure`]), the [`RELEASE_SCRIPT`] / [`EXTEND_SCRIPT`] Lua scripts,
//!   [`random_value`], and the [`redis`] crate to build commands with.
//! - To hold a lock through a routine: [`using`] and its [`AbortSignal`].
//! - To run it: [`Scenario`] (load a scenario file), [`run_with_lock`] with a [`LockFactory`] ([`lock_factory`] makes one),
//!   and the [`ScenarioRun`]'s [`Verdict`]s.
//! - To gate CI on it: the [`Harness`] (scenarios, explorations with shrinking, the
//!   differential oracle, the report directory), what it gates on ([`Gate`]), the lock's
//!   declarations ([`LockTokens`]; a script lock's [`RenewalAfterRelease`]) and its [`HarnessRun`].
//!
//! See `examples/custom_lock.rs`.

pub use crate::checker::CheckResult;
#[cfg(feature = "cli")]
pub use crate::harness::{Gate, Harness, HarnessError, HarnessRun};
pub use crate::lock::using::{using, AbortSignal};
pub use crate::lock::{
    random_value, AutoExtend, ExtendFailure, LockClient, LockEnv, LockError, EXTEND_SCRIPT, RELEASE_SCRIPT,
};
pub use crate::model::{ClockKind, Grant, Scenario, Verdict};
pub use crate::model::{ExploreExpect, LockTokens, RenewalAfterRelease};
pub use crate::run::{lock_factory, run_scenario, run_with_lock, LockFactory, ScenarioRun};
pub use async_trait::async_trait;
pub use lockstep_sim::{LinkError, RedisLink};
pub use rand::{Rng, RngCore};
pub use redis;
