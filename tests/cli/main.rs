//! The binary and the repository as a user meets them: the `lockstep` command's output and exit
//! codes, `ci`, `merge` and the report directory, the Rust harness, the documentation run as
//! written, the citations and the import graph of the source.
//!
//! One test binary for all of these (each file was its own crate; linking each against the whole
//! library was most of the test build's time). The tests share a process: none sets an
//! environment variable, a signal handler or a current directory, and each names its temporary
//! files after its own module.

#[path = "../common/mod.rs"]
mod common;

mod api;
mod architecture;
mod ci;
mod cli;
mod contributing;
mod docs_run;
mod docs_sh;
mod example_checks;
mod harness;
mod merge_summaries;
mod report;
mod report_views;
mod sources;
