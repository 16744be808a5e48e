//! Hostile but fair input (issue 13): over the binary — bad files, limits of memory and time,
//! gates over nothing, the report directory — and in-process, bounded fuzzing of the scenario
//! parser and of `merge`'s input, and a panicking user lock inside `lockstep ci`.
//!
//! One test binary for all of these (see `tests/cli/main.rs`). `tests/hostile_live.rs` stays a
//! crate of its own: it installs a counting global allocator, and it SIGKILLs live runs and looks
//! for their guardian processes.

#[path = "../common/mod.rs"]
mod common;

mod fuzz;
mod hardening;
mod hostile;
mod hostile_battery4;
mod hostile_data_loss;
mod hostile_gates;
mod hostile_gates_more;
mod hostile_limits;
mod hostile_report;
