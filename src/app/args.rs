//! The command-line arguments of the commands with many options (`clap` derive): `main.rs`
//! parses them and hands them to the app.

use crate::model::{Algorithm, Fencing};
use clap::builder::PossibleValue;
use lockstep_sim::FencingMode;
use std::path::PathBuf;

/// A built-in algorithm as a flag's value (`--algorithm`, `--sweep-algorithm`): the model's
/// algorithms and names, typed from the command line on (a script lock comes from its file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlgorithmArg(pub Algorithm);

impl clap::ValueEnum for AlgorithmArg {
    fn value_variants<'a>() -> &'a [Self] {
        // clap wants a slice of this type: built once from the registry's list.
        static BUILT_IN: std::sync::OnceLock<Vec<AlgorithmArg>> = std::sync::OnceLock::new();
        BUILT_IN.get_or_init(|| Algorithm::BUILT_IN.iter().copied().map(AlgorithmArg).collect())
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

/// Where tokens come from, as `--fencing`'s value ([`Fencing::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FencingArg(pub Fencing);

impl clap::ValueEnum for FencingArg {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [FencingArg; 2] = [FencingArg(Fencing::ALL[0]), FencingArg(Fencing::ALL[1])];
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

/// The resource's rule, as `--resource`'s value ([`FencingMode::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceArg(pub FencingMode);

impl clap::ValueEnum for ResourceArg {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [ResourceArg; 3] = [
            ResourceArg(FencingMode::ALL[0]),
            ResourceArg(FencingMode::ALL[1]),
            ResourceArg(FencingMode::ALL[2]),
        ];
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()))
    }
}

/// `lockstep run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Scenario files (TOML).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Override the seed of every file.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print only the verdicts, not the timeline.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write the run's raw history here, one event a line (`history.jsonl`; one scenario file).
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Print the result as JSON (each run as in report.json's `scenarios[]`) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Step every tick instead of jumping over the idle ones. The history and its digest are
    /// the same either way (that is the rule the event clock keeps); use it to rule the event
    /// clock out when a run looks wrong, or to measure what skipping saves.
    #[arg(long)]
    pub step_every_tick: bool,
}

impl RunArgs {
    /// How each file runs.
    pub fn run_options(&self) -> crate::app::run::RunOptions {
        crate::app::run::RunOptions {
            seed: self.seed,
            step_every_tick: self.step_every_tick,
        }
    }
}

/// `lockstep explore`.
#[derive(clap::Args)]
pub struct ExploreArgs {
    /// A scenario file used as the template (its faults are replaced by generated ones). It
    /// sets its own lock, fencing, resource and tick: the four flags below are refused with it.
    pub file: Option<PathBuf>,
    /// Without a file: the algorithm of the standard template.
    #[arg(long, conflicts_with = "file", value_enum, default_value = "token-release")]
    pub algorithm: AlgorithmArg,
    /// Without a file: explore the lock of this scenario file (its `[lock]` algorithm and
    /// settings: a script lock, say) in the standard template, in place of `--algorithm`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["file", "algorithm"])]
    pub lock: Option<PathBuf>,
    /// Without a file: where fencing tokens come from.
    #[arg(long, conflicts_with = "file", value_enum, default_value = "none")]
    pub fencing: FencingArg,
    /// Without a file: how the resource judges tokens.
    #[arg(long, conflicts_with = "file", value_enum, default_value = "unfenced")]
    pub resource: ResourceArg,
    /// Without a file: the scheduler tick in ms.
    #[arg(long, conflicts_with = "file", default_value_t = 1)]
    pub tick_ms: u64,
    /// Run seeds 0..N (default: the file's `[explore] seeds`, else 1000).
    #[arg(long, conflicts_with = "seed_range")]
    pub seeds: Option<u64>,
    /// Run seeds A..B (B excluded).
    #[arg(long)]
    pub seed_range: Option<String>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run only shard K of N (1-based), for CI matrices; merge the shards' summaries with
    /// `lockstep merge`. Any strategy: a guided shard grows its own corpus over its own seeds.
    #[arg(long)]
    pub shard: Option<crate::explore::Shard>,
    /// Stop starting new seeds after this many wall seconds.
    #[arg(long)]
    pub time_limit: Option<u64>,
    /// The fault generator version the seeds are meant under (a summary's or counterexample's
    /// `generator_version`): refused unless it is this build's, whose seeds name other plans.
    #[arg(long)]
    pub generator_version: Option<u32>,
    /// Fault kinds that may be generated (comma-separated; default: the file's, else all).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Option<Vec<String>>,
    /// At most this many generated faults per seed (default: the file's, else 4).
    #[arg(long)]
    pub faults_max: Option<usize>,
    /// Aim faults where locks break (also on when the file's `[explore]` block says so).
    #[arg(long)]
    pub lock_aware: bool,
    /// Rerun this percentage of seeds and fail on any digest mismatch.
    #[arg(long, num_args = 0..=1, default_missing_value = "5")]
    pub check_determinism: Option<f64>,
    /// The differential oracle, the per-seed stream and shrinking.
    #[command(flatten)]
    pub oracle: super::exploration::OracleArgs,
    /// Write counterexamples (TOML) to this directory; without it they are printed, not written.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the summary as JSON here.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Print the result as JSON (the summary and the counterexamples) instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// The assumption-bounded profile (docs/assumptions.md): timing, clock and key-loss faults
    /// brought inside what the template's lock is built to tolerate; failovers (the `failover`
    /// kind, `replica-clock`) are kept as drawn and break the masters assumption, under which
    /// only `ownership` is promised (leave them out with `--kinds`). Each violating seed says
    /// which assumptions its plan broke, and a checker the lock promises under its plan
    /// answering invalid is an implementation bug (exit code 1). Random placement.
    #[arg(long, conflicts_with = "exhaustive")]
    pub bounded: bool,
    /// Let the workload shapes guided placement draws outlive the lease: critical sections up to
    /// 3/2 × TTL. By default a shape stays inside the lock's contract (critical sections up to
    /// half the validity left after the lock's margins), so that what the search finds needs a
    /// fault; an overrun shape fails every lease lock without one. Guided placement only.
    #[arg(long)]
    pub overrun_shapes: bool,
    /// Where faults are placed, and the bounded-exhaustive mode.
    #[command(flatten)]
    pub search: SearchArgs,
}

/// How `lockstep explore` searches (see `crate::app::search`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SearchArgs {
    /// Fault placement: anchored (around the lock's own events), random, or mixed (default
    /// without an `[explore]` block; a block keeps random).
    #[arg(long)]
    pub strategy: Option<crate::model::fault::PlacementStrategy>,
    /// Bounded-exhaustive mode: run every fault placement on the grid around the anchors (with
    /// the template's seed; `--against` counts only schedules where the template's lock alone
    /// fails).
    #[arg(long, conflicts_with_all = [
        "strategy", "shard", "seeds", "seed_range", "jsonl", "out", "time_limit", "kinds", "faults_max",
        "lock_aware", "check_determinism", "overrun_shapes",
    ])]
    pub exhaustive: bool,
    /// Exhaustive: at most this many clients (default 2).
    #[arg(long, requires = "exhaustive")]
    pub exhaustive_clients: Option<usize>,
    /// Exhaustive: at most this many faults per schedule (default 2).
    #[arg(long, requires = "exhaustive")]
    pub exhaustive_faults: Option<usize>,
    /// Exhaustive: at most this many anchors on the grid (default 4).
    #[arg(long, requires = "exhaustive")]
    pub exhaustive_anchors: Option<usize>,
}

/// `lockstep ci`.
#[derive(clap::Args)]
pub struct CiArgs {
    /// Scenario files, or directories of them.
    #[arg(default_value = "scenarios")]
    pub paths: Vec<PathBuf>,
    /// The directory the report is written to (created if needed).
    #[arg(long, value_name = "OUT")]
    pub report: PathBuf,
    /// Run only shard K of N (1-based): scenario files round-robin, exploration seeds split.
    #[arg(long)]
    pub shard: Option<crate::explore::Shard>,
    /// Worker threads for explorations (default: all cores).
    #[arg(long, value_parser = at_least_one)]
    pub jobs: Option<usize>,
    /// Also sweep the lock TTL (13 TTLs from 100 ms to 60 s × seeds) and chart the safety/availability trade-off.
    #[arg(long)]
    pub ttl_sweep: bool,
    /// Seeds per TTL of the sweep (1 to 100000: each seed runs once per TTL).
    #[arg(long, default_value_t = crate::app::sweep::DEFAULT_SEEDS, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub sweep_seeds: u64,
    /// The algorithm of the sweep.
    #[arg(long, value_enum, default_value = "token-release")]
    pub sweep_algorithm: AlgorithmArg,
    /// No progress lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Leave the wall-clock figures out of the report (wall times, throughput and worker count
    /// written as 0): a report committed to a repository then changes on regeneration only where
    /// the runs did.
    #[arg(long)]
    pub no_timings: bool,
}

/// `lockstep bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Scenarios per measurement.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..))]
    pub scenarios: u64,
    /// The scheduler tick of the exploration profile, ms (1 to 1000, as `explore --tick-ms`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub tick_ms: u64,
}

/// A count of at least 1 (`--jobs`): zero workers would run nothing.
pub(crate) fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

impl ExploreArgs {
    /// The standard template's settings from the flags (used when no file is given).
    pub fn standard(&self) -> super::exploration::StandardSettings {
        super::exploration::StandardSettings {
            lock_file: self.lock.clone(),
            ..super::exploration::StandardSettings::new(self.algorithm.0, self.fencing.0, self.resource.0, self.tick_ms)
        }
    }

    /// What `lockstep explore`'s flags set.
    pub fn overrides(&self) -> super::exploration::Overrides {
        super::exploration::Overrides {
            seeds: self.seeds,
            seed_range: self.seed_range.clone(),
            jobs: self.jobs,
            shard: self.shard,
            time_limit_s: self.time_limit,
            kinds: self.kinds.clone(),
            faults_max: self.faults_max,
            lock_aware: self.lock_aware,
            check_determinism_pct: self.check_determinism,
            progress: !self.quiet,
            strategy: self.search.strategy,
            bounded: self.bounded,
            overrun_shapes: self.overrun_shapes,
        }
    }
}

/// `lockstep merge`.
#[derive(clap::Args)]
pub struct MergeArgs {
    /// `report.json` files, or summary files written by `lockstep explore --summary`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the merged summary (or the merged report.json) here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Reports only: write the whole merged report (JSON, Markdown, JUnit, charts, HTML) to
    /// this directory.
    #[arg(long)]
    pub report: Option<PathBuf>,
}
