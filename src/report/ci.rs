//! The `lockstep ci` gate: run every scenario file (its explicit run and, when it declares one,
//! its `[explore]` block), compare each verdict with its expectation, and build the [`Report`].
//!
//! Sharding (`--shard K/N`, for CI matrices) splits the work: scenario files are dealt round-robin
//! over the shards, and every exploration runs the shard's share of its seeds. A shard's report
//! cannot decide a `some-invalid` expectation that found nothing in its seeds: that check is
//! left ⚠️ until `lockstep merge` judges it on all seeds.

use super::sweep::{ttl_sweep, SweepOptions};
use super::{scenario_error_report, scenario_report, ExplorationReport, Report, SeedRange, ShardInfo};
use crate::explore::{explore, ExploreConfig, Shard};
use crate::run::run_scenario;
use crate::scenario::{load_dir, Scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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

/// Loads the scenario files named by `paths` (a directory means its `*.toml` files), in order.
/// Errors name the file and field; two scenarios with the same name are an error (their chart
/// files would collide).
pub fn load_inputs(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Scenario)>, String> {
    let mut inputs = Vec::new();
    for path in paths {
        if path.is_dir() {
            inputs.extend(load_dir(path).map_err(|e| e.to_string())?);
        } else {
            let scenario = Scenario::from_file(path).map_err(|e| e.to_string())?;
            inputs.push((path.clone(), scenario));
        }
    }
    if inputs.is_empty() {
        return Err(format!(
            "no scenario files in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut names: BTreeMap<&str, &Path> = BTreeMap::new();
    for (path, scenario) in &inputs {
        if let Some(first) = names.insert(&scenario.name, path) {
            return Err(format!(
                "{}: field `name`: scenario name `{}` is also used by {}",
                path.display(),
                scenario.name,
                first.display()
            ));
        }
    }
    Ok(inputs)
}

/// Runs the gate over `inputs` and returns the finished report.
pub fn run_ci(inputs: &[(PathBuf, Scenario)], options: &CiOptions) -> Result<Report, String> {
    let started = Instant::now();
    let shard_info = options.shard.map(|s| ShardInfo {
        index: s.index,
        count: s.count,
    });
    let mut report = Report::new(shard_info);
    for (i, (path, scenario)) in inputs.iter().enumerate() {
        let mine = options.shard.is_none_or(|s| i as u64 % s.count == s.index - 1);
        if !mine {
            continue;
        }
        let t0 = Instant::now();
        let row = match run_scenario(scenario, None) {
            Ok(run) => scenario_report(path, scenario, &run, t0.elapsed().as_secs_f64() * 1e3),
            Err(e) => scenario_error_report(path, scenario, e.to_string()),
        };
        if options.progress {
            eprintln!("ci: {} {} ({})", row.status.mark(), row.name, path.display());
        }
        report.scenarios.push(row);
    }
    for (path, scenario) in inputs {
        let Some(spec) = &scenario.explore else { continue };
        let mut template = scenario.clone();
        template.explore = None;
        let config = ExploreConfig {
            seeds: spec.seed_range(),
            jobs: options.jobs.max(1),
            shard: options.shard,
            time_limit: None,
            profile: spec.profile(),
            determinism_per_10k: 0,
            progress: false,
        };
        let summary = explore(&template, &config);
        let row = ExplorationReport::new(
            &path.display().to_string(),
            SeedRange {
                start: spec.seed_range().start,
                end: spec.seed_range().end,
            },
            shard_info.map(|s| vec![s]),
            config.profile.clone(),
            &spec.expect,
            summary,
        );
        if options.progress {
            eprintln!(
                "ci: {} exploration {} ({} seeds, {} violating)",
                row.status.mark(),
                row.name,
                row.summary.seeds_run,
                row.summary.seeds_violating
            );
        }
        report.explorations.push(row);
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
            report.ttl_sweep = Some(ttl_sweep(sweep)?);
        }
    }
    report.wall_s = started.elapsed().as_secs_f64();
    report.finish();
    Ok(report)
}
