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
    /// List the lock algorithms, the fault kinds, the checkers and the shipped scenarios.
    List {
        /// Where the shipped scenarios are.
        #[arg(long, default_value = "scenarios")]
        dir: PathBuf,
    },
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
        "   algorithm {} · fencing {:?} · resource {} · ttl {} ms · seed {}",
        scenario.lock.algorithm.name(),
        scenario.lock.fencing,
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
            println!("\n   Mutual exclusion was violated, yet the resource stayed safe: fencing rejected the stale write.");
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
                    path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
                    first_line
                );
            }
        }
        Err(e) => println!("  (cannot read: {e})"),
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { files, seed, quiet } => cmd_run(&files, seed, quiet),
        Command::List { dir } => cmd_list(&dir),
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        ExitCode::from(2)
    })
}
