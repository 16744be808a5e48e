//! The `lockstep ci` gate, as runs: every scenario file (its explicit run and, when it declares
//! one, its `[explore]` block) and optionally the TTL sweep. What ran and how each expectation
//! came out is a [`CiRun`] (plain data in `crate::run::gate`); `report/` turns it into the
//! report and renders it.
//!
//! Sharding (`--shard K/N`, for CI matrices) splits the work: scenario files are dealt round-robin
//! over the shards, and every exploration runs the shard's share of its seeds. A shard cannot
//! decide a `some-invalid` expectation that found nothing in its seeds: that check is left
//! unchecked until `lockstep merge` judges it on all seeds.

use super::exploration::{explore_config, Overrides};
use super::sweep::{ttl_sweep, SweepOptions};
use super::AppError;
use crate::checker::NAMES;
use crate::explore::{explore, ExploreConfig, Shard};
use crate::run::expect::{self, Status};
pub use crate::run::gate::{CiRun, ExplorationOutcome, ScenarioOutcome};
use crate::run::run_scenario;
use crate::scenario::Scenario;
use std::path::PathBuf;
use std::time::Instant;

/// What `lockstep ci` runs.
#[derive(Debug, Clone)]
pub struct CiOptions {
    /// Only this shard.
    pub shard: Option<Shard>,
    /// Worker threads for explorations.
    pub jobs: usize,
    /// Also sweep the TTL (run only by shard 1 when sharded).
    pub ttl_sweep: Option<SweepOptions>,
    /// Print a line per scenario and exploration on stderr.
    pub progress: bool,
}

impl Default for CiOptions {
    fn default() -> Self {
        CiOptions {
            shard: None,
            jobs: ExploreConfig::default().jobs,
            ttl_sweep: None,
            progress: false,
        }
    }
}

/// Runs the gate over `inputs`.
pub fn run_ci(inputs: &[(PathBuf, Scenario)], options: &CiOptions) -> Result<CiRun, AppError> {
    let started = Instant::now();
    let mut ci = CiRun {
        shard: options.shard,
        scenarios: Vec::new(),
        explorations: Vec::new(),
        ttl_sweep: None,
        wall_s: 0.0,
    };
    for (i, (path, scenario)) in inputs.iter().enumerate() {
        let mine = options.shard.is_none_or(|s| i as u64 % s.count == s.index - 1);
        if !mine {
            continue;
        }
        let t0 = Instant::now();
        let run = run_scenario(scenario, None).map_err(|e| e.to_string());
        let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        let status = match &run {
            Ok(run) => expect::run_status(&scenario.expect, &run.results),
            Err(_) => Status::Error,
        };
        if options.progress {
            eprintln!("ci: {} {} ({})", status.mark(), scenario.name, path.display());
        }
        ci.scenarios.push(ScenarioOutcome {
            path: path.clone(),
            scenario: scenario.clone(),
            run,
            status,
            wall_ms,
        });
    }
    let partial = options.shard.is_some_and(|s| s.count != 1);
    for (path, scenario) in inputs {
        let Some(spec) = &scenario.explore else { continue };
        let overrides = Overrides {
            jobs: Some(options.jobs),
            shard: options.shard,
            ..Overrides::default()
        };
        let (template, config) = explore_config(scenario, &overrides)?;
        let summary = explore(&template, &config);
        let status = expect::exploration_status(NAMES, &spec.expect, &summary, partial);
        if options.progress {
            eprintln!(
                "ci: {} exploration {} ({} seeds, {} violating)",
                status.mark(),
                summary.scenario,
                summary.seeds_run,
                summary.seeds_violating
            );
        }
        ci.explorations.push(ExplorationOutcome {
            path: path.clone(),
            seeds: config.seeds,
            shard: options.shard,
            profile: config.profile,
            expect: spec.expect.clone(),
            summary,
            status,
        });
    }
    if let Some(sweep) = &options.ttl_sweep {
        if options.shard.is_none_or(|s| s.index == 1) {
            if options.progress {
                eprintln!(
                    "ci: TTL sweep of {} over {} TTLs × {} seeds",
                    sweep.algorithm,
                    sweep.ttls_ms.len(),
                    sweep.seeds
                );
            }
            ci.ttl_sweep = Some(ttl_sweep(sweep)?);
        }
    }
    ci.wall_s = started.elapsed().as_secs_f64();
    Ok(ci)
}
