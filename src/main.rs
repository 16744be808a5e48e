//! The `lockstep` command.

use anyhow::Result;
use clap::{Parser, Subcommand};
use lockstep::checker::{self, Verdict};
use lockstep::run::{run_scenario, ScenarioRun};
use lockstep::scenario::{Algorithm, Scenario};
use lockstep::{lock, timeline};
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
    /// Exit code 0: every expectation held. 1: a verdict differs from its expectation.
    /// 2: bad input (a file that cannot be read or parsed).
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
    /// Exit code 0: every expectation held. 1: some expectation did not. 2: bad input (a file
    /// that cannot be read or parsed, an unwritable report directory), before anything runs.
    Ci(CiArgs),
    /// Merge sharded results: `report.json` files of `lockstep ci --shard` runs, or the summaries
    /// (JSON) of sharded explorations.
    ///
    /// Exit code (reports): as `lockstep ci`, judged on the merged report. 2: bad input (files of
    /// different kinds or versions, missing or repeated shards).
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
    /// Fault kinds that may be generated (comma-separated; default: the file's `[explore]
    /// kinds`, else all).
    #[arg(long, value_delimiter = ',')]
    kinds: Option<Vec<String>>,
    /// At most this many generated faults per seed (default: the file's, else 4).
    #[arg(long)]
    faults_max: Option<usize>,
    /// Aim faults where locks break (pauses around the TTL, jumps inside validity windows);
    /// also on when the file's `[explore]` block says `lock_aware = true`.
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
    /// Where counterexamples are written.
    #[arg(long, default_value = "reports/counterexamples")]
    out: PathBuf,
    /// Also write the summary as JSON here.
    #[arg(long)]
    summary: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    quiet: bool,
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
    #[arg(long, default_value_t = lockstep::report::sweep::DEFAULT_SEEDS)]
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

fn mark(expected: Option<Verdict>, actual: Verdict) -> &'static str {
    match expected {
        None => " ",
        Some(e) if e == actual => "✓",
        Some(_) => "✗",
    }
}

fn print_run(path: &Path, scenario: &Scenario, run: &ScenarioRun, quiet: bool) {
    println!("━━ {} ({})", scenario.name, path.display());
    println!(
        "   algorithm {} · fencing {} · resource {} · ttl {} ms · seed {}",
        scenario.lock.algorithm.name(),
        scenario.lock.fencing.name(),
        scenario.resource.name(),
        scenario.lock.ttl_ms,
        run.seed
    );
    if !quiet {
        println!();
        print!("{}", timeline::render(&run.history));
    }
    println!();
    println!("   {:<18} {:<8} {:<9}   explanation", "checker", "verdict", "expected");
    for result in &run.results {
        let expected = scenario.expect.get(&result.checker).copied();
        println!(
            "   {:<18} {:<8} {:<9} {} {}",
            result.checker,
            result.verdict.name(),
            expected.map_or("-", |e| e.name()),
            mark(expected, result.verdict),
            result.explanation
        );
    }
    let resource_safe = ["stale-write", "lost-update"]
        .iter()
        .all(|c| run.verdict(c) != Some(Verdict::Invalid));
    if run.verdict("mutual-exclusion") == Some(Verdict::Invalid) {
        if resource_safe {
            let history = lockstep::history::OpHistory::new(&run.history);
            println!(
                "\n   Mutual exclusion was violated, yet the resource stayed safe: {}.",
                timeline::why_resource_safe(&history)
            );
        } else {
            println!("\n   Mutual exclusion was violated and the resource was damaged.");
        }
    }
    println!(
        "\n   history: {} events, digest {}",
        run.history.len(),
        &run.digest[..16]
    );
    if run.as_expected() {
        println!("   result: as expected");
    } else {
        for m in &run.mismatches {
            println!(
                "   UNEXPECTED: {} is {} but the scenario expects {}",
                m.checker,
                m.actual.name(),
                m.expected.name()
            );
        }
        println!("   replay: lockstep run {} --seed {}", path.display(), run.seed);
    }
    println!();
}

fn cmd_run(files: &[PathBuf], seed: Option<u64>, quiet: bool) -> Result<ExitCode> {
    // Parse every file first: bad input is reported before anything runs.
    let mut scenarios = Vec::new();
    for file in files {
        match Scenario::from_file(file) {
            Ok(s) => scenarios.push((file.clone(), s)),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    }
    let mut all_expected = true;
    for (path, scenario) in &scenarios {
        let run = match run_scenario(scenario, seed) {
            Ok(run) => run,
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                return Ok(ExitCode::from(2));
            }
        };
        print_run(path, scenario, &run, quiet);
        all_expected &= run.as_expected();
    }
    Ok(if all_expected {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn cmd_list(dir: &Path) -> Result<ExitCode> {
    println!("algorithms:");
    for (name, about) in lock::ALGORITHMS {
        println!("  {name:<14} {about}");
    }
    debug_assert_eq!(lock::ALGORITHMS.len(), Algorithm::ALL.len());
    println!("\nfault kinds:");
    println!("  {}", lockstep::sim::Fault::KINDS.join(", "));
    println!("\ncheckers:");
    println!("  {}", checker::NAMES.join(", "));
    println!("\nscenarios ({}):", dir.display());
    match lockstep::scenario::load_dir(dir) {
        Ok(found) => {
            for (path, s) in found {
                let first_line = s.description.lines().next().unwrap_or("").trim();
                println!(
                    "  {:<34} {}",
                    path.file_name()
                        .map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
                    first_line
                );
            }
        }
        Err(e) => println!("  (cannot read: {e})"),
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_range(s: &str) -> Result<std::ops::Range<u64>> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| anyhow::anyhow!("--seed-range `{s}` is not A..B"))?;
    let a: u64 = a
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("--seed-range start `{a}` is not a number"))?;
    let b: u64 = b
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("--seed-range end `{b}` is not a number"))?;
    anyhow::ensure!(a < b, "--seed-range `{s}` is empty");
    Ok(a..b)
}

fn cmd_explore(args: ExploreArgs) -> Result<ExitCode> {
    use lockstep::explore::{self, generate::FaultProfile, shrink, ExploreConfig};
    let template = match &args.file {
        Some(file) => Scenario::from_file(file),
        None => {
            if Algorithm::from_name(&args.algorithm).is_none() {
                eprintln!(
                    "error: unknown algorithm `{}` (known: {})",
                    args.algorithm,
                    lock::ALGORITHMS.iter().map(|a| a.0).collect::<Vec<_>>().join(", ")
                );
                return Ok(ExitCode::from(2));
            }
            explore::standard_template(&args.algorithm, &args.fencing, &args.resource, args.tick_ms)
        }
    };
    let template = match template {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let seeds = match &args.seed_range {
        Some(range) => match parse_range(range) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        },
        None => {
            0..args
                .seeds
                .or(template.explore.as_ref().map(|e| e.seeds))
                .unwrap_or(1_000)
        }
    };
    // A template's own `[explore]` block gives the defaults; flags override them.
    let declared = template.explore.clone();
    let mut profile = FaultProfile {
        faults_max: args
            .faults_max
            .or(declared.as_ref().map(|e| e.faults_max))
            .unwrap_or(FaultProfile::default().faults_max),
        lock_aware: args.lock_aware || declared.as_ref().is_some_and(|e| e.lock_aware),
        ..FaultProfile::default()
    };
    let kinds = args
        .kinds
        .or(declared.map(|e| e.kinds).filter(|kinds| !kinds.is_empty()));
    if let Some(kinds) = kinds {
        for kind in &kinds {
            if !explore::generate::GENERATED_KINDS.contains(&kind.as_str()) {
                eprintln!(
                    "error: unknown fault kind `{kind}` (known: {})",
                    explore::generate::GENERATED_KINDS.join(", ")
                );
                return Ok(ExitCode::from(2));
            }
        }
        profile.kinds = kinds;
    }
    let config = ExploreConfig {
        seeds,
        jobs: args.jobs.unwrap_or_else(|| ExploreConfig::default().jobs),
        shard: args.shard,
        time_limit: args.time_limit.map(std::time::Duration::from_secs),
        profile: profile.clone(),
        determinism_per_10k: args
            .check_determinism
            .map_or(0, |pct| (pct * 100.0).round().clamp(0.0, 10_000.0) as u64),
        progress: !args.quiet,
    };
    let summary = explore::explore(&template, &config);
    print!("{}", summary.render());
    if let Some(path) = &args.summary {
        write_atomically(path, &serde_json::to_string_pretty(&summary)?)?;
        println!("  summary written to {}", path.display());
    }
    for failing in summary.first_failing.iter().take(args.shrink) {
        let Some(checker) = failing.checkers.first() else {
            continue;
        };
        match shrink::shrink(&template, &profile, failing.seed, checker, args.shrink_runs) {
            Some(cx) => {
                let file = args.out.join(format!("{}.toml", cx.scenario.name));
                write_atomically(&file, &shrink::counterexample_toml(&cx))?;
                println!(
                    "  shrunk seed {} ({checker}): {} -> {} faults, {} clients, in {} runs",
                    cx.seed,
                    cx.faults_before,
                    cx.case.faults.len(),
                    cx.case.clients,
                    cx.runs
                );
                for fault in &cx.scenario.faults.faults {
                    println!("    at {:>6} ms  {}", fault.at_ms, serde_json::to_string(&fault.fault)?);
                }
                println!(
                    "  counterexample: {}\n  replay: lockstep run {}",
                    file.display(),
                    file.display()
                );
            }
            None => println!(
                "  seed {} no longer fails {checker} on its own (not shrunk)",
                failing.seed
            ),
        }
    }
    Ok(if summary.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn cmd_ci(args: CiArgs) -> Result<ExitCode> {
    use lockstep::report::{self, ci, sweep};
    // Bad input is reported before anything runs: the files, the options, the report directory.
    let inputs = match ci::load_inputs(&args.paths) {
        Ok(inputs) => inputs,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if args.ttl_sweep && Algorithm::from_name(&args.sweep_algorithm).is_none() {
        eprintln!(
            "error: --sweep-algorithm: unknown algorithm `{}` (known: {})",
            args.sweep_algorithm,
            lock::ALGORITHMS.iter().map(|a| a.0).collect::<Vec<_>>().join(", ")
        );
        return Ok(ExitCode::from(2));
    }
    if let Err(e) = report::prepare_out(&args.report) {
        eprintln!("error: {e}");
        return Ok(ExitCode::from(2));
    }
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
    let report = match ci::run_ci(&inputs, &options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    finish_report(&report, &args.report)
}

/// Writes `report` to `dir`, prints its verdict, and returns its exit code.
fn finish_report(report: &lockstep::report::Report, dir: &Path) -> Result<ExitCode> {
    let written = lockstep::report::write_report(report, dir).map_err(|e| anyhow::anyhow!(e))?;
    let t = &report.totals;
    println!(
        "{} {} scenario runs, {} explorations: {} checks passed, {} failed, {} without expectation",
        if report.ok { "✅" } else { "❌" },
        t.scenarios,
        t.explorations,
        t.passed,
        t.failed,
        t.unchecked
    );
    for s in report.scenarios.iter().filter(|s| s.status.is_failure()) {
        println!("  ❌ {}: {}", s.name, lockstep::report::markdown::row_explanation(s));
        println!("     replay: {}", s.replay);
    }
    for e in report.explorations.iter().filter(|e| e.status.is_failure()) {
        for c in e.checks.iter().filter(|c| c.status.is_failure()) {
            println!("  ❌ exploration {}: {}: {}", e.name, c.checker, c.explanation);
        }
        if e.summary.errors > 0 {
            println!(
                "  ❌ exploration {}: {} seeds could not be judged",
                e.name, e.summary.errors
            );
        }
    }
    println!(
        "report: {} ({} files; open {})",
        dir.display(),
        written.len(),
        dir.join("index.html").display()
    );
    Ok(ExitCode::from(report.exit_code()))
}

/// Merges `report.json` files of sharded `lockstep ci` runs.
fn merge_reports(texts: &[(PathBuf, String)], out: Option<&Path>, dir: Option<&Path>) -> Result<ExitCode> {
    use lockstep::report::{self, Report};
    if let Some(dir) = dir {
        if let Err(e) = report::prepare_out(dir) {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    }
    let mut parts = Vec::new();
    for (path, text) in texts {
        let origin = path.display().to_string();
        match Report::from_json(text, &origin) {
            Ok(r) => parts.push((origin, r)),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    }
    let merged = match Report::merge(&parts) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if let Some(out) = out {
        report::write_atomic(out, merged.to_json().as_bytes()).map_err(|e| anyhow::anyhow!(e))?;
    }
    match dir {
        Some(dir) => finish_report(&merged, dir),
        None => {
            println!(
                "{} merged {} reports: {} checks passed, {} failed",
                if merged.ok { "✅" } else { "❌" },
                parts.len(),
                merged.totals.passed,
                merged.totals.failed
            );
            Ok(ExitCode::from(merged.exit_code()))
        }
    }
}

fn cmd_merge(files: &[PathBuf], out: Option<&Path>, report_dir: Option<&Path>) -> Result<ExitCode> {
    let mut texts = Vec::new();
    for file in files {
        match std::fs::read_to_string(file) {
            Ok(t) => texts.push((file.clone(), t)),
            Err(e) => {
                eprintln!("error: {}: {e}", file.display());
                return Ok(ExitCode::from(2));
            }
        }
    }
    let is_report = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| {
                v.get("format")
                    .and_then(|f| f.as_str())
                    .map(|f| f == lockstep::report::FORMAT)
            })
            .unwrap_or(false)
    };
    let reports = texts.iter().filter(|(_, t)| is_report(t)).count();
    if reports == texts.len() {
        return merge_reports(&texts, out, report_dir);
    }
    if reports > 0 {
        eprintln!("error: cannot merge report.json files with exploration summaries");
        return Ok(ExitCode::from(2));
    }
    if report_dir.is_some() {
        eprintln!("error: --report needs report.json files (written by `lockstep ci`)");
        return Ok(ExitCode::from(2));
    }
    let mut merged = lockstep::explore::ExploreSummary::default();
    for (file, text) in &texts {
        let part: lockstep::explore::ExploreSummary = match serde_json::from_str(text) {
            Ok(p) => p,
            Err(e) => {
                eprintln!(
                    "error: {}:{}:{}: not an exploration summary: {e}",
                    file.display(),
                    e.line(),
                    e.column()
                );
                return Ok(ExitCode::from(2));
            }
        };
        merged.merge(&part);
    }
    print!("{}", merged.render());
    if let Some(out) = out {
        write_atomically(out, &serde_json::to_string_pretty(&merged)?)?;
    }
    Ok(if merged.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Writes `content` to a temporary file beside `path`, then renames it into place.
fn write_atomically(path: &Path, content: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { files, seed, quiet } => cmd_run(&files, seed, quiet),
        Command::List { dir } => cmd_list(&dir),
        Command::Explore(args) => cmd_explore(*args),
        Command::Ci(args) => cmd_ci(args),
        Command::Merge { files, out, report } => cmd_merge(&files, out.as_deref(), report.as_deref()),
        Command::Bench(args) => lockstep::bench::run(args.scenarios, args.tick_ms).map(|report| {
            print!("{report}");
            ExitCode::SUCCESS
        }),
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        ExitCode::from(2)
    })
}
