//! The ground floor: plain data every other layer reads, importing nothing of the crate.
//!
//! - [`scenario`]: a resolved scenario — topology, clients, workload, faults, expectations.
//! - [`lock`]: the lock under test, [`LockSpec`], with each algorithm's own settings in
//!   [`AlgorithmSpec`].
//! - [`builtin`]: the registry of built-in algorithms, one file of settings each.
//! - [`script`]: the script lock's settings ([`ScriptSpec`]: command templates, Lua scripts,
//!   knobs).
//! - [`verdict`]: a checker's [`Verdict`].
//! - [`expect`]: what a scenario or an exploration expects the checkers to find.
//! - [`fault`]: the fault generator's vocabulary and strengths ([`FaultProfile`]).
//! - [`op`]: the client-operation vocabulary written into the history ([`Grant`], …).
//! - [`units`]: how times and lock values are written for people (one rule each).
//!
//! Nothing here parses or writes files (that is the scenario front end, `crate::scenario`) and
//! nothing runs: these are values, with small helpers over them.

pub mod builtin;
pub mod clock;
pub mod expect;
pub mod fault;
pub mod lock;
pub mod op;
pub mod scenario;
pub mod script;
pub mod units;
pub mod verdict;

pub(crate) use expect::checker_registry;
pub use expect::{
    ExploreExpect, ExploreSpec, CHECKERS, DEFAULT_EXPLORE_SEEDS, LIVENESS, MAX_EXPLORE_FAULTS, MAX_EXPLORE_SEEDS,
    VALID_UNLESS_NAMED,
};
pub use fault::{FaultProfile, DEFAULT_KINDS, GENERATED_KINDS, OPT_IN_KINDS};
pub use lock::{
    Algorithm, AlgorithmSpec, ClockKind, Fencing, KeyError, LockClaims, LockKeys, LockSpec, LockTokens, NaiveSpec,
    Preset, RedlockSpec, TokenReleaseSpec, WatchdogSpec,
};
pub use op::{Grant, GrantRef};
pub use scenario::{
    ClientSpec, NetworkSpec, NodeSpec, Scenario, TasksSpec, WorkMode, WorkMs, WorkloadSpec, RESOURCE_NODE,
    SERVED_DESCRIPTION,
};
pub use script::{
    Arithmetic, OnRenewFailure, RenewGrants, Renewal, RenewalAfterRelease, ScriptAction, ScriptOp, ScriptSpec,
    ScriptStep, Success, ValidityFrom, ValidityPolicy, ValuePolicy, ValueStorage, Wait, PLACEHOLDERS,
};
pub use verdict::Verdict;
