//! Safety reports for CI: what `lockstep ci` writes and `lockstep merge` combines.
//!
//! A [`Report`] is the versioned, documented `report.json` (see `docs/report-schema.md` and the
//! JSON Schema `docs/report-schema.json`): the tool version, each scenario run with its seed,
//! fault plan, every checker's verdict against its expectation with the witness, liveness
//! figures, the history digest and the data of its timeline; each exploration with its seeds,
//! fault profile, counts and the digest of its outcome; optionally the TTL trade-off sweep.
//!
//! From a report alone (no history needed, so merged shard reports render too) [`write_report`]
//! writes the whole directory, built beside OUT and swapped in as a whole:
//!
//! ```text
//! OUT/report.json     the report (schema below)
//! OUT/summary.md      Markdown for a CI job summary or a PR comment ([`markdown`])
//! OUT/junit.xml       one test case per scenario × checker ([`junit`])
//! OUT/charts/*.svg    timelines, the TTL trade-off, exploration summaries ([`charts`]),
//! OUT/charts/*.png      drawn with an embedded font (DejaVu Sans)
//! OUT/index.html      one self-contained page ([`html`])
//! OUT/manifest.json   every file and directory lockstep wrote there ([`Manifest`])
//! OUT/.lockstep-owner the owner marker made with the directory (`staging::OWNER_FILE`): it
//!                     names this machine's device, inode and user, so it is no committed
//!                     output (the repository's .gitignore leaves it out; a clone's report
//!                     without it is replaced all the same)
//! ```
//!
//! The manifest is what makes OUT replaceable by the next report: a directory is replaced only
//! if everything in it is listed there, and only what is listed is ever removed
//! ([`prepare_out`]).
//!
//! The report is built ([`Report::build`]) from what the gate ran (`crate::gate::CiRun`,
//! produced by `crate::app::ci`), merged from shard reports ([`merge`]), and rendered; nothing
//! here runs a simulation. [`Headline`] is the one summary every renderer prints (the CLI's
//! closing lines in [`console`], the Markdown, the HTML); [`console`] also renders what the other
//! commands print.
//!
//! Everything in a report is deterministic except the wall-clock figures (`wall_ms`, `wall_s`,
//! `throughput`), so two runs on any machine give the same digests and verdicts.

mod atomic;
mod build;
pub mod charts;
#[cfg(feature = "cli")]
pub mod console;
mod exploration;
pub mod external;
pub mod headline;
pub mod html;
pub mod interactive;
pub mod junit;
#[cfg(feature = "cli")]
pub mod live;
pub mod markdown;
pub mod merge;
mod model;
pub mod narrative;
mod staging;
pub mod sweep;
pub mod timeline;
pub mod verdict;

/// [`crate::gate::ShardSet`], under its old path.
#[deprecated(since = "0.1.0", note = "moved to `lockstep::gate::ShardSet`; removed in 0.3.0")]
pub type ShardSet = crate::gate::ShardSet;
pub use atomic::{
    check_out_dir, check_outputs, check_writable_file, write_atomic, write_into_out, write_json, write_shrunk,
};
use atomic::{parent_dir, write_file_atomically};
pub use build::outcome_digest;
#[cfg(feature = "cli")]
pub(crate) use build::{scenario_error_report, scenario_report};
pub use external::{external_scenario_report, write_external_report, ExternalRun};
pub use headline::Headline;
pub use model::{
    chart_stems, CheckReport, ExplorationReport, ExploreCheckReport, HistoryReport, LivenessReport, Report,
    ScenarioReport, SeedRange, ShardInfo, Status, Tool, Totals,
};
pub(crate) use model::{slug, FORMAT, SCHEMA_VERSION};
pub use staging::{
    leftover_dirs, prepare_out, write_report, write_report_adding, write_report_with, Additions, Manifest,
    MANIFEST_FILE, MANIFEST_FORMAT,
};
