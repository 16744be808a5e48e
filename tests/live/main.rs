//! Real processes in real time: live runs of adapters against lockstep's servers, and `lockstep
//! serve` under redis-py's, python-redis-lock's, pottery's and npm redlock's own test suites, and
//! Redis's own Tcl test suite.
//!
//! One test binary for both (see `tests/cli/main.rs`), kept apart from the simulated tests: these
//! run on the wall clock (a busy CPU changes what they see), a live run inside this process
//! installs lockstep's SIGINT/SIGTERM/SIGHUP handlers and forks its guardian, and `live.rs` checks
//! every socket this process listens on.

#[path = "../common/mod.rs"]
mod common;

mod link;
mod live;
mod peers;
mod redis_suite;
mod serve;
mod serve_control;
mod serve_report;
