//! The application layer: what the commands do, as runs and judgements. With `crate::run`
//! (one scenario through a seeded world, and the plain results and judgements of runs), it is
//! the only place that runs simulations for the CLI.
//!
//! - [`run`]: scenario files run for `lockstep run`.
//! - [`exploration`]: the template and config of an exploration — one merge of a template's
//!   `[explore]` block with overrides, for both `lockstep explore` and `lockstep ci` — and
//!   shrinking the first failing seeds.
//! - [`search`]: `--strategy` and the bounded-exhaustive mode of `lockstep explore`.
//! - [`ci`]: the gate over a directory of scenario files (`lockstep ci`).
//! - [`sweep`]: the TTL trade-off sweep.
//! - [`mutants`]: the mutation suite (`lockstep mutants`).
//! - [`args`]: the command-line arguments of `run`, `explore`, `ci` and `bench`.
//! - [`files`]: reading inputs (bad input before anything runs).
//! - [`identity`]: an exploration's run identity and seed span (what `lockstep merge` checks).
//! - [`error`]: the one error type, and the one mapping to exit codes.
//!
//! Expectations are judged in `crate::run::expect` (one module, for scenarios and
//! explorations), so that both the app and `report/` (which re-judges merged shards) read it.
//!
//! Leaves out: rendering and writing results. The app produces results (runs, exploration
//! summaries, sweep data, judgements); `report/` builds the report from them, renders and
//! writes it; `main.rs` prints.

pub mod args;
pub mod ci;
pub mod error;
pub mod exploration;
pub mod files;
pub mod identity;
pub mod mutants;
pub mod run;
pub mod search;
pub mod sweep;

/// [`crate::run::expect::Outcome`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::run::expect::Outcome`; removed in 0.3.0"
)]
pub type Outcome = crate::run::expect::Outcome;
pub use error::AppError;
