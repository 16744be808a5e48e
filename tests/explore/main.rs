//! Exploration: finding, shrinking and replaying counterexamples, the pinned draws, guided and
//! exhaustive search, the assumption-bounded profile and its false-alarm regressions, and the
//! mutant catalogue.
//!
//! One test binary for all of these (see `tests/cli/main.rs`). `explore.rs`'s proptest finds its
//! regression file through this crate root: `tests/proptest-regressions/explore.txt`.

#[path = "../common/mod.rs"]
mod common;

mod explore;
mod explore_bounded;
mod explore_bugs;
mod explore_draws;
mod explore_findings;
mod explore_search;
mod false_alarms;
mod first_bug;
mod mutants;
mod mutants_classes;
mod shards;
