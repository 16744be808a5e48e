//! # lockstep
//!
//! A deterministic simulation and fault-injection testbed for Redis-based distributed locks.
//!
//! Data flows one way: a [`scenario`] file is resolved into plain [`model`] data, which builds a
//! seeded world (the `lockstep-sim` crate); the [`workload`] drives [`lock`] clients through it,
//! the world records one history, and the [`checker`]s judge it.
//!
//! To test your own lock, start from [`prelude`]; to put it through everything the CLI does
//! (scenarios, explorations, differential oracle, report), see `harness`.
//!
//! ## Features
//!
//! `cli` (on by default) is the `lockstep` command and what only it needs: the modules `app` (the
//! commands), `bench`, `harness` and `live` (live runs, `serve`), argument parsing (clap),
//! coloured output, the progress bar, and the PNG copies of a report's charts (resvg). With
//! `default-features = false` (as `lockstep-turmoil` depends on it) the library still resolves
//! scenarios, runs worlds, explores, judges histories with every checker and writes report
//! directories (charts as SVG only), without those dependencies.

#![warn(missing_docs)]

#[cfg(feature = "cli")]
pub mod app;
#[cfg(feature = "cli")]
pub mod bench;
pub mod checker;
pub mod emit;
pub mod explore;
pub mod gate;
#[cfg(feature = "cli")]
pub mod harness;
pub mod history;
#[cfg(feature = "cli")]
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

/// The text timeline of a run, moved to [`report::narrative`]; this path stays for code written
/// against it (see CHANGELOG.md). Each item is deprecated on its own: a `#[deprecated]` module
/// warns nobody who calls into it.
pub mod timeline {
    use crate::history::{OpHistory, Step};

    /// [`crate::report::narrative::line`], under its old path.
    #[deprecated(since = "0.1.0", note = "moved to `lockstep::report::narrative::line`")]
    pub fn line(step: &Step<'_>) -> Option<String> {
        crate::report::narrative::line(step)
    }

    /// [`crate::report::narrative::why_resource_safe`], under its old path.
    #[deprecated(since = "0.1.0", note = "moved to `lockstep::report::narrative::why_resource_safe`")]
    pub fn why_resource_safe(history: &OpHistory<'_>) -> &'static str {
        crate::report::narrative::why_resource_safe(history)
    }

    /// [`crate::report::narrative::text`], under its old path.
    #[deprecated(since = "0.1.0", note = "moved to `lockstep::report::narrative::text`")]
    pub fn text(history: &OpHistory<'_>) -> String {
        crate::report::narrative::text(history)
    }
}

pub use lockstep_sim as sim;
