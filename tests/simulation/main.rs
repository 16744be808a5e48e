//! Simulated runs in-process: the shipped scenarios and what their histories show, the checkers,
//! deployment faults, replica clocks, the workload, the library models, script locks, `using`, and
//! the event clock's rule.
//!
//! One test binary for all of these (see `tests/cli/main.rs`).

#[path = "../common/mod.rs"]
mod common;

mod checkers;
mod deployment;
mod drop_reply;
mod event_clock;
mod libraries;
mod replica_clock;
mod scenarios;
mod script_lock;
mod using;
mod workload;
