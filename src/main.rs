//! The `lockstep` command: parses arguments, calls `app`, prints what `report` renders.

use clap::{Parser, Subcommand};
use lockstep::app::exploration::{self, Overrides, Shrunk, StandardSettings};
use lockstep::app::{ci, error, files, run, search, sweep, AppError, Outcome};
use lockstep::report::{console, merge::merge_texts, merge::Merged, write_atomic, write_json, write_report, Report};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Deterministic simulation and fault-injection testbed for Redis-based distributed locks.
#[derive(Parser)]
#[command(name = "lockstep", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}
#[derive(Subcommand)]
enum Command {
    /// Run scenario files and compare each checker's verdict with the file's expectation.
    ///
    /// Exit code 0: every expectation held. 1: a verdict differs, a vacuous run, a scenario that
    /// could not run. 2: bad input.
    Run {
        /// Scenario files (TOML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Override the seed of every file.
        #[arg(long)]
        seed: Option<u64>,
        /// Print only the verdicts, not the timeline.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Explore one configuration over many seeds with generated fault plans; shrink failures.
    ///
    /// Exit code 0: no violation, error or determinism mismatch. 1: something was found.
    /// 2: bad input.
    Explore(Box<ExploreArgs>),
    /// The CI gate: run every scenario (and its `[explore]` block), compare each verdict with
    /// its expectation, and write the report (report.json, summary.md, junit.xml, charts,
    /// index.html) to the `--report` directory.
    ///
    /// Exit code 0: every expectation held. 1: some did not. 2: bad input, before anything runs.
    Ci(CiArgs),
    /// Merge `report.json` files of `lockstep ci --shard` runs, or exploration summaries.
    ///
    /// Exit code: as `lockstep ci`. 2: bad input (other kinds, versions or runs; shards missing
    /// or repeated).
    Merge {
        /// `report.json` files, or summary files written by `lockstep explore --summary`.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Write the merged summary (or the merged report.json) here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Reports only: write the whole merged report (JSON, Markdown, JUnit, charts, HTML) to
        /// this directory.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Measure the simulator: overhead against bare turmoil, scaling over jobs, scenarios/minute.
    Bench(BenchArgs),
    Live(lockstep::live::LiveArgs),
    /// List the lock algorithms, the fault kinds, the checkers and the shipped scenarios.
    List {
        /// Where the shipped scenarios are.
        #[arg(long, default_value = "scenarios")]
        dir: PathBuf,
    },
}

#[derive(clap::Args)]
struct ExploreArgs {
    /// A scenario file used as the template (its faults are replaced by generated ones).
    file: Option<PathBuf>,
    /// Without a file: the algorithm of the standard template.
    #[arg(long, default_value = "token-release")]
    algorithm: String,
    /// Without a file: `none` or `incr`.
    #[arg(long, default_value = "none")]
    fencing: String,
    /// Without a file: `unfenced`, `fenced` or `strict`.
    #[arg(long, default_value = "unfenced")]
    resource: String,
    /// Without a file: the scheduler tick in ms.
    #[arg(long, default_value_t = 1)]
    tick_ms: u64,
    /// Run seeds 0..N (default: the file's `[explore] seeds`, else 1000).
    #[arg(long, conflicts_with = "seed_range")]
    seeds: Option<u64>,
    /// Run seeds A..B (B excluded).
    #[arg(long)]
    seed_range: Option<String>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run only shard K of N (1-based), for CI matrices.
    #[arg(long)]
    shard: Option<lockstep::explore::Shard>,
    /// Stop starting new seeds after this many wall seconds.
    #[arg(long)]
    time_limit: Option<u64>,
    /// Fault kinds that may be generated (comma-separated; default: the file's, else all).
    #[arg(long, value_delimiter = ',')]
    kinds: Option<Vec<String>>,
    /// At most this many generated faults per seed (default: the file's, else 4).
    #[arg(long)]
    faults_max: Option<usize>,
    /// Aim faults where locks break (also on when the file's `[explore]` block says so).
    #[arg(long)]
    lock_aware: bool,
    /// Rerun this percentage of seeds and fail on any digest mismatch.
    #[arg(long, num_args = 0..=1, default_missing_value = "5")]
    check_determinism: Option<f64>,
    /// Shrink this many of the first failing seeds.
    #[arg(long, default_value_t = 1)]
    shrink: usize,
    /// Scenario runs a shrink may spend.
    #[arg(long, default_value_t = 300)]
    shrink_runs: usize,
    /// Write counterexamples (TOML) to this directory; without it they are printed, not written.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write the summary as JSON here.
    #[arg(long)]
    summary: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    search: search::SearchArgs,
}

#[derive(clap::Args)]
struct CiArgs {
    /// Scenario files, or directories of them.
    #[arg(default_value = "scenarios")]
    paths: Vec<PathBuf>,
    /// The directory the report is written to (created if needed).
    #[arg(long, value_name = "OUT")]
    report: PathBuf,
    /// Run only shard K of N (1-based): scenario files round-robin, exploration seeds split.
    #[arg(long)]
    shard: Option<lockstep::explore::Shard>,
    /// Worker threads for explorations (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Also sweep the lock TTL (8 values × seeds) and chart the safety/availability trade-off.
    #[arg(long)]
    ttl_sweep: bool,
    /// Seeds per TTL of the sweep.
    #[arg(long, default_value_t = lockstep::app::sweep::DEFAULT_SEEDS)]
    sweep_seeds: u64,
    /// The algorithm of the sweep.
    #[arg(long, default_value = "token-release")]
    sweep_algorithm: String,
    /// No progress lines.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Scenarios per measurement.
    #[arg(long, default_value_t = 40)]
    scenarios: u64,
    /// The scheduler tick of the exploration profile, ms.
    #[arg(long, default_value_t = 1)]
    tick_ms: u64,
}

fn cmd_run(files: &[PathBuf], seed: Option<u64>, quiet: bool) -> Result<Outcome, AppError> {
    // Parse every file first: bad input is reported before anything runs.
    let scenarios = files::load_files(files)?;
    let mut all_expected = true;
    for (path, scenario) in &scenarios {
        // One scenario that cannot run (or panics) is its error; the others still run.
        let run = run::run_file(path, scenario, seed).map_err(|e| e.to_string());
        print!("{}", console::run_result_text(path, scenario, &run, quiet));
        all_expected &= run.is_ok_and(|run| run.as_expected());
    }
    Ok(Outcome::held_if(all_expected))
}

fn cmd_explore(args: ExploreArgs) -> Result<Outcome, AppError> {
    let standard = StandardSettings::new(args.algorithm, args.fencing, args.resource, args.tick_ms);
    let started = std::time::Instant::now();
    let template = exploration::template(args.file.as_deref(), &standard)?;
    if args.search.exhaustive {
        return search::exhaustive(&template, &args.search, args.jobs);
    }
    let overrides = Overrides {
        seeds: args.seeds,
        seed_range: args.seed_range,
        jobs: args.jobs,
        shard: args.shard,
        time_limit_s: args.time_limit,
        kinds: args.kinds,
        faults_max: args.faults_max,
        lock_aware: args.lock_aware,
        check_determinism_pct: args.check_determinism,
        progress: !args.quiet,
        strategy: args.search.strategy,
    };
    let (template, config) = exploration::explore_config(&template, &overrides)?;
    lockstep::report::check_outputs(args.summary.as_deref(), args.out.as_deref()).map_err(AppError::BadInput)?;
    let summary = lockstep::explore::explore(&template, &config);
    print!("{}", summary.render());
    if let Some(path) = &args.summary {
        write_json(path, &summary).map_err(AppError::Io)?;
        println!("  summary written to {}", path.display());
    }
    let (out, budget) = (
        args.out.as_deref(),
        (args.shrink, args.shrink_runs, config.time_limit.map(|t| started + t)),
    );
    for shrunk in exploration::shrink_failures(&template, &config.profile, &summary, budget, out) {
        if let (Shrunk::Found { file, toml, .. }, Some(_)) = (&shrunk, out) {
            write_atomic(file, toml.as_bytes()).map_err(AppError::Io)?;
        }
        print!("{}", console::shrunk_text(&shrunk, out.is_some()));
    }
    Ok(Outcome::held_if(summary.is_clean()))
}

fn cmd_ci(args: CiArgs) -> Result<Outcome, AppError> {
    // Bad input is reported before anything runs: the files, the options, the report directory.
    let inputs = files::load_inputs(&args.paths)?;
    if args.ttl_sweep {
        exploration::known_algorithm(&args.sweep_algorithm, "--sweep-algorithm: ")?;
    }
    lockstep::report::prepare_out(&args.report).map_err(AppError::BadInput)?;
    let options = ci::CiOptions {
        shard: args.shard,
        jobs: args.jobs.unwrap_or_else(|| ci::CiOptions::default().jobs),
        ttl_sweep: args.ttl_sweep.then(|| sweep::SweepOptions {
            algorithm: args.sweep_algorithm.clone(),
            seeds: args.sweep_seeds,
            ..sweep::SweepOptions::default()
        }),
        progress: !args.quiet,
    };
    let report = Report::build(&ci::run_ci(&inputs, &options)?);
    finish_report(&report, &args.report)
}

/// Writes `report` to `dir`, prints its headline, and returns its outcome.
fn finish_report(report: &Report, dir: &Path) -> Result<Outcome, AppError> {
    let written = write_report(report, dir).map_err(AppError::Io)?;
    print!("{}", console::gate_text(report, dir, written.len()));
    Ok(report.outcome())
}

fn cmd_merge(files: &[PathBuf], out: Option<&Path>, report_dir: Option<&Path>) -> Result<Outcome, AppError> {
    let texts = files::read_texts(files)?;
    match merge_texts(&texts, report_dir).map_err(AppError::BadInput)? {
        Merged::Reports { report, parts } => {
            if let Some(out) = out {
                write_atomic(out, report.to_json().as_bytes()).map_err(AppError::Io)?;
            }
            match report_dir {
                Some(dir) => finish_report(&report, dir),
                None => {
                    print!("{}", console::merged_text(&report, parts));
                    Ok(report.outcome())
                }
            }
        }
        Merged::Summaries(merged) => {
            print!("{}", merged.render());
            if let Some(out) = out {
                write_json(out, &merged).map_err(AppError::Io)?;
            }
            Ok(Outcome::held_if(merged.is_clean()))
        }
    }
}
fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Live(args) => return lockstep::live::main(args, &lockstep::report::live::Renderer),
        Command::Run { files, seed, quiet } => cmd_run(&files, seed, quiet),
        Command::List { dir } => files::check_dir(&dir, "--dir").map(|()| {
            let loaded = lockstep::scenario::load_dir(&dir).map_err(|e| e.to_string());
            print!("{}", console::list_text(&dir, &loaded));
            Outcome::Held
        }),
        Command::Explore(args) => cmd_explore(*args),
        Command::Ci(args) => cmd_ci(args),
        Command::Merge { files, out, report } => cmd_merge(&files, out.as_deref(), report.as_deref()),
        Command::Bench(args) => lockstep::bench::run(args.scenarios, args.tick_ms).map(|report| {
            print!("{report}");
            Outcome::Held
        }),
    };
    if let Err(e) = &result {
        eprintln!("error: {e}");
    }
    ExitCode::from(error::exit_code(&result))
}
