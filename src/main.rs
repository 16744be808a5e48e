//! The `lockstep` command: parses arguments, calls `app`, prints what `report` renders.

use clap::{Parser, Subcommand};

// mimalloc: a simulation allocates and frees small objects at a high rate (segments, events,
// Lua values); measured by `lockstep bench`, the whole tool runs ~35% faster than on the system
// allocator. The allocator decides no outcome: nothing depends on addresses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use lockstep::app::{args::*, ci, error, exploration, files, run, search, sweep, AppError};
use lockstep::explore::shrink::Shrunk;
use lockstep::report::merge::{merge_texts, Merged};
use lockstep::report::{console, write_atomic, write_json, write_report_with, write_shrunk, Report};
use lockstep::{emit, run::expect::Outcome};
use lockstep_sim::History;
use std::collections::BTreeMap;
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
    /// could not run. 2: bad input, or a run that reached its history cap (`history_events_max`).
    Run(RunArgs),
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
    Merge(lockstep::app::args::MergeArgs),
    /// Measure the simulator: the event clock, the floor, scaling over jobs, scenarios/minute, node scaling.
    Bench(BenchArgs),
    Live(lockstep::live::LiveArgs),
    Serve(lockstep::live::serve::ServeArgs),
    Mutants(lockstep::app::mutants::MutantsArgs),
    /// List the lock algorithms, the fault kinds, the checkers and the shipped scenarios.
    /// Works anywhere: the scenarios of `--dir`, else of `./scenarios` when there is one.
    List {
        /// Where the scenarios to list are (default: `scenarios`, listed when it exists).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

fn cmd_run(args: RunArgs) -> Result<Outcome, AppError> {
    files::check_outputs_spare_inputs(&args.files, &[("--history", args.history.as_deref())], &[])?;
    let mut output = console::RunOutput::new(args.quiet, args.json, args.history.clone());
    let outcome = run::run_files(&args.files, args.run_options(), args.history.as_deref(), &mut |done| {
        let text = output.add(done.path, done.scenario, &done.run, done.wall_ms);
        say(&text.map_err(AppError::Io)?)
    })?;
    say(&output.finish(outcome == Outcome::Held))?;
    Ok(outcome)
}

fn cmd_explore(args: ExploreArgs) -> Result<Outcome, AppError> {
    let standard = args.standard();
    let started = std::time::Instant::now();
    let inputs: Vec<PathBuf> = args.file.iter().chain(args.lock.iter()).cloned().collect();
    let outputs = [
        ("--summary", args.summary.as_deref()),
        ("--jsonl", args.oracle.jsonl.as_deref()),
    ];
    files::check_outputs_spare_inputs(&inputs, &outputs, &[])?;
    let template = exploration::template(args.file.as_deref(), &standard)?;
    if args.search.exhaustive {
        lockstep::report::check_outputs(args.summary.as_deref(), None).map_err(AppError::BadInput)?;
        let report = search::exhaustive_cli(&template, &args)?;
        if let Some(path) = &args.summary {
            write_json(path, &report).map_err(AppError::Io)?;
        }
        match args.json {
            true => say(&(serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"))?,
            false => say(&report.render())?,
        }
        return Ok(Outcome::held_if(report.is_clean()));
    }
    let (template, config) =
        exploration::cli_config(&template, &args.overrides(), args.generator_version, args.oracle.shrink)?;
    lockstep::app::identity::check_shard_has_seeds(&config)?;
    lockstep::report::check_outputs(args.summary.as_deref(), args.out.as_deref()).map_err(AppError::BadInput)?;
    let locks = exploration::locks(&template, &args.oracle)?;
    let out = args.out.as_deref();
    let deadline = config.time_limit.and_then(|t| started.checked_add(t));
    // Without faults first: a workload outliving its lease stops here; a lock failing on its own is a note.
    let (stop, note) = exploration::fault_free_split(exploration::fault_free_check(&template, &config, &locks));
    if let Some(failure) = stop {
        let runs = (args.oracle.shrink_runs, deadline);
        let shrunk = exploration::fault_free_counterexample(&template, &failure, &locks, runs, out);
        write_shrunk(&shrunk, out).map_err(AppError::Io)?;
        say(&match args.json {
            true => exploration::fault_free_json(&failure, &shrunk, out.is_some()),
            false => failure.render() + &console::shrunk_text(&shrunk, out.is_some()),
        })?;
        return Ok(Outcome::held_if(false));
    }
    let mut summary = exploration::run_oracle(&template, &config, &args.oracle, &locks)?;
    lockstep::app::identity::stamp_run(&mut summary, &template, &config, &locks);
    if !args.json {
        say(&(summary.render() + &note))?;
    }
    if let Some(path) = &args.summary {
        write_json(path, &summary).map_err(AppError::Io)?;
        if !args.json {
            say(&format!("  summary written to {}\n", path.display()))?;
        }
    }
    let budget = (args.oracle.shrink, args.oracle.shrink_runs, deadline);
    if let Some(line) = exploration::no_bug_to_shrink(&summary, &locks).filter(|_| budget.0 > 0 && !args.json) {
        say(&line)?;
    }
    // Each counterexample written and shown as it comes; the first failure ends the output.
    let mut shown: Result<(), AppError> = Ok(());
    let mut show = |shrunk: &Shrunk| {
        if shown.is_ok() {
            shown = write_shrunk(shrunk, out)
                .map_err(AppError::Io)
                .and_then(|()| match args.json {
                    true => Ok(()),
                    false => say(&console::shrunk_lines(shrunk, out.is_some())),
                });
        }
    };
    let scope = ((&template, &config.profile), (&summary, &locks));
    let distinct = exploration::shrink_distinct(scope.0, scope.1, budget, out, &|_| true, &mut show);
    shown?;
    let all: Vec<Shrunk> = distinct.shrunk().cloned().collect();
    say(&match args.json {
        true => console::explore_json_with(&summary, &all, out.is_some(), distinct.json()),
        false => distinct.render(out),
    })?;
    Ok(Outcome::held_if(summary.passed()))
}

fn cmd_ci(args: CiArgs) -> Result<Outcome, AppError> {
    // Bad input is reported before anything runs: the files, the options, the report directory.
    let inputs = files::load_inputs(&args.paths)?;
    // The files loaded, not only the paths given: a directory's `x.toml` may link into OUT.
    let loaded: Vec<PathBuf> = inputs
        .iter()
        .map(|(path, _)| path.clone())
        .chain(args.paths.iter().cloned())
        .collect();
    files::check_outputs_spare_inputs(&loaded, &[], &[("--report", Some(&args.report))])?;
    lockstep::report::prepare_out(&args.report).map_err(AppError::BadInput)?;
    let options = ci::CiOptions {
        shard: args.shard,
        jobs: args.jobs.unwrap_or_else(|| ci::CiOptions::default().jobs),
        ttl_sweep: args.ttl_sweep.then(|| sweep::SweepOptions {
            algorithm: args.sweep_algorithm.0,
            seeds: args.sweep_seeds,
            ..sweep::SweepOptions::default()
        }),
        progress: !args.quiet,
        locks: Default::default(),
    };
    let ci = ci::run_ci(&inputs, &options)?;
    finish_report(
        &Report::build(&ci).timed(!args.no_timings),
        &args.report,
        &ci::histories(&ci),
    )
}

/// Writes `report` (with the runs' `histories`) to `dir`, prints its headline, returns its outcome.
fn finish_report(report: &Report, dir: &Path, histories: &BTreeMap<String, History>) -> Result<Outcome, AppError> {
    let written = write_report_with(report, dir, histories).map_err(AppError::Io)?;
    for left in lockstep::report::leftover_dirs(dir) {
        emit::stderr_line(&format!(
            "warning: {} is still there (the previous report, which could not be removed, or another run's \
             staging directory); the next run removes it if it can",
            left.display()
        ));
    }
    say(&console::gate_text(report, dir, written.len()))?;
    Ok(report.outcome())
}

fn cmd_merge(inputs: &[PathBuf], out: Option<&Path>, report_dir: Option<&Path>) -> Result<Outcome, AppError> {
    files::check_outputs_spare_inputs(inputs, &[("--out", out)], &[("--report", report_dir)])?;
    // Both outputs are checked before merging: `--out` inside the `--report` directory would be
    // written, then swept away when the directory is replaced.
    if let (Some(file), Some(dir)) = (out, report_dir) {
        files::check_outputs_spare_inputs(&[file.to_path_buf()], &[], &[("--report", Some(dir))]).map_err(|_| {
            AppError::BadInput(format!(
                "--out {}: is inside --report {}",
                file.display(),
                dir.display()
            ))
        })?;
        lockstep::report::check_writable_file(file).map_err(AppError::BadInput)?;
        lockstep::report::prepare_out(dir).map_err(AppError::BadInput)?;
    }
    let texts = files::read_texts(inputs)?;
    let merged = merge_texts(&texts, report_dir).map_err(AppError::BadInput)?;
    for warning in merged.warnings() {
        emit::stderr_line(&format!("warning: {warning}"));
    }
    let whole = !matches!(merged, Merged::Partial(..));
    match merged {
        Merged::Reports { report, parts, runs } => {
            if let Some(out) = out {
                write_atomic(out, report.to_json().as_bytes()).map_err(AppError::Io)?;
            }
            match report_dir {
                Some(dir) => finish_report(&report, dir, &runs.histories),
                None => {
                    say(&console::merged_text(&report, parts))?;
                    Ok(report.outcome())
                }
            }
        }
        Merged::Summaries(merged, _) | Merged::Partial(merged, _) => {
            say(&merged.render())?;
            if let Some(out) = out {
                write_json(out, &merged).map_err(AppError::Io)?;
            }
            // A merge with a shard missing covers part of the run: never a pass.
            Ok(Outcome::held_if(merged.passed() && whole))
        }
    }
}

/// `lockstep mutants`; `--report DIR` is checked before the suite runs and written atomically.
fn cmd_mutants(args: &lockstep::app::mutants::MutantsArgs) -> Result<Outcome, AppError> {
    use lockstep::app::mutants::REPORT_FILES;
    if let Some(dir) = &args.report {
        let paths: Vec<PathBuf> = REPORT_FILES.iter().map(|name| dir.join(name)).collect();
        let outputs: Vec<(&str, Option<&Path>)> = paths.iter().map(|p| ("--report", Some(p.as_path()))).collect();
        files::check_outputs_spare_inputs(std::slice::from_ref(&args.catalogue), &outputs, &[])?;
        for path in &paths {
            lockstep::report::check_writable_file(path).map_err(AppError::BadInput)?;
        }
    }
    let (outcome, contents) = lockstep::app::mutants::main(args)?;
    if let Some(dir) = &args.report {
        for (name, text) in REPORT_FILES.iter().zip(contents) {
            write_atomic(&dir.join(name), text.as_bytes()).map_err(AppError::Io)?;
        }
        say(&format!("  written to {}\n", dir.display()))?;
    }
    Ok(outcome)
}

/// Writes the command's result to standard output (see `lockstep::emit`).
fn say(text: &str) -> Result<(), AppError> {
    emit::stdout(text).map_err(AppError::Io)
}

fn main() -> ExitCode {
    let (cli, paths) = files::parse_with_path_check::<Cli>();
    if std::env::var_os("LOCKSTEP_PARSE_ONLY").is_some() {
        return ExitCode::SUCCESS; // the docs test: the arguments parse (tests/cli/docs_run.rs)
    }
    let result = paths.and_then(|()| match cli.command {
        Command::Live(args) => lockstep::live::main(&args, &lockstep::report::live::Renderer),
        Command::Run(args) => cmd_run(args),
        Command::Serve(args) => lockstep::live::serve::main(&args, &lockstep::report::live::Renderer),
        Command::List { dir } => files::list_scenarios(dir.as_deref()).and_then(|found| {
            let listed = found.as_ref().map(|(dir, s)| (dir.as_path(), s.as_slice()));
            say(&console::list_text(listed)).map(|()| Outcome::Held)
        }),
        Command::Explore(args) => cmd_explore(*args),
        Command::Ci(args) => cmd_ci(args),
        Command::Merge(m) => cmd_merge(&m.files, m.out.as_deref(), m.report.as_deref()),
        Command::Mutants(args) => cmd_mutants(&args),
        Command::Bench(args) => lockstep::bench::run(args.scenarios, args.tick_ms)
            .and_then(|report| say(&report.to_string()).map(|()| Outcome::Held)),
    });
    if let Err(e) = &result {
        emit::stderr_line(&format!("error: {e}"));
    }
    ExitCode::from(error::exit_code(&result))
}

#[test]
fn every_path_flag_of_every_subcommand_has_a_role_in_the_collision_check() {
    let missing = files::unclassified_path_args(&<Cli as clap::CommandFactory>::command());
    assert_eq!(missing, Vec::<String>::new());
}
