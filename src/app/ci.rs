//! The `lockstep ci` gate, as runs: every scenario file (its explicit run and, when it declares
//! one, its `[explore]` block) and optionally the TTL sweep. What ran and how each expectation
//! came out is a [`CiRun`] (plain data in `crate::run::gate`); `report/` turns it into the
//! report and renders it.
//!
//! Sharding (`--shard K/N`, for CI matrices) splits the work: scenario files are dealt round-robin
//! over the shards, and every exploration runs the shard's share of its seeds. A shard cannot
//! decide a `some-invalid` expectation that found nothing in its seeds: that check is left
//! unchecked until `lockstep merge` judges it on all seeds.

use super::exploration::{explore_config, refuse_rust_lock, run_exploration, Locks, Overrides};
use super::sweep::{ttl_sweep, SweepOptions};
use super::AppError;
use crate::checker::NAMES;
use crate::explore::{ExploreConfig, LockChoice, Shard};
/// [`crate::gate::CiRun`], under its old path.
#[deprecated(since = "0.1.0", note = "moved to `lockstep::gate::CiRun`; removed in 0.3.0")]
pub type CiRun = crate::gate::CiRun;
/// [`crate::gate::ExplorationOutcome`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::gate::ExplorationOutcome`; removed in 0.3.0"
)]
pub type ExplorationOutcome = crate::gate::ExplorationOutcome;
/// [`crate::gate::ScenarioOutcome`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::gate::ScenarioOutcome`; removed in 0.3.0"
)]
pub type ScenarioOutcome = crate::gate::ScenarioOutcome;
use crate::run::expect::{self, Status};
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
    /// The locks every scenario and exploration runs (default: each file's own algorithm; the
    /// harness passes a user's Rust lock, and may add a reference for its explorations).
    pub locks: Locks,
}

impl Default for CiOptions {
    fn default() -> Self {
        CiOptions {
            shard: None,
            jobs: ExploreConfig::default().jobs,
            ttl_sweep: None,
            progress: false,
            locks: Locks::default(),
        }
    }
}

/// The identity of a gate run: SHA-256 over the tool's version, every input (its path and its
/// scenario as explicit TOML) and the options that decide what runs (the shard count, not the
/// index; the sweep). Every shard of one run has the same identity; `lockstep merge` refuses
/// reports of different runs.
pub(crate) fn run_identity(inputs: &[(PathBuf, Scenario)], options: &CiOptions) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(env!("CARGO_PKG_VERSION").as_bytes());
    for (path, scenario) in inputs {
        field(path.display().to_string().as_bytes());
        field(scenario.to_toml().as_bytes());
    }
    field(&options.shard.map_or(1, |s| s.count).to_le_bytes());
    let sweep = options
        .ttl_sweep
        .as_ref()
        .map(|s| format!("{} {:?} {} {:?}", s.algorithm, s.ttls_ms, s.seeds, s.profile));
    field(format!("{sweep:?}").as_bytes());
    // The locks count only when they are not the files' own (the CLI's identity is unchanged).
    if let LockChoice::User(user) = &options.locks.subject {
        field(format!("rust lock {}", user.name()).as_bytes());
    }
    hex::encode(hash.finalize())
}

/// A progress line's status in words (a sign is never the only one): `as expected`,
/// `UNEXPECTED`, `ERROR`, `no expectation`.
fn status_words(status: Status) -> &'static str {
    match status {
        Status::Pass => "as expected   ",
        Status::Fail => "UNEXPECTED    ",
        Status::Error => "ERROR         ",
        Status::Unchecked => "no expectation",
    }
}

/// A scenario's progress words from its checks' statuses: as [`status_words`], except that a run
/// whose checks held where they had expectations is `as expected (N checkers without
/// expectation)` — gated, not unchecked.
fn row_words(checks: &[Status]) -> String {
    let unchecked = checks.iter().filter(|s| **s == Status::Unchecked).count();
    match Status::worst(checks.iter().copied()) {
        Status::Unchecked if unchecked < checks.len() => format!(
            "as expected ({unchecked} checker{} without expectation)",
            if unchecked == 1 { "" } else { "s" }
        ),
        status => status_words(status).to_string(),
    }
}

/// The raw history of each scenario run of `ci`, by scenario name (for `history.jsonl` and
/// the interactive timelines of the report).
pub fn histories(ci: &crate::gate::CiRun) -> std::collections::BTreeMap<String, lockstep_sim::History> {
    ci.scenarios
        .iter()
        .filter_map(|s| {
            s.run
                .as_ref()
                .ok()
                .map(|r| (s.scenario.name.clone(), r.history.clone()))
        })
        .collect()
}

/// Runs the gate over `inputs`.
pub fn run_ci(inputs: &[(PathBuf, Scenario)], options: &CiOptions) -> Result<crate::gate::CiRun, AppError> {
    let started = Instant::now();
    let mut ci = crate::gate::CiRun {
        run_id: run_identity(inputs, options),
        shard: options.shard,
        // The whole set, as every shard's rows name it (file and scenario name).
        shard_set: options.shard.map(|_| {
            let (subject, _) = options.locks.refs();
            let rows: Vec<(String, String)> = inputs
                .iter()
                .map(|(path, s)| (path.display().to_string(), subject.scenario(s).name.clone()))
                .collect();
            let explorations = inputs.iter().filter(|(_, s)| s.explore.is_some()).count() as u64;
            crate::gate::ShardSet::of(rows.iter().map(|(f, n)| (f.as_str(), n.as_str())), explorations)
        }),
        scenarios: Vec::new(),
        explorations: Vec::new(),
        ttl_sweep: None,
        wall_s: 0.0,
    };
    // A scenario that names a Rust lock runs only with that lock: refused before anything runs.
    for (path, scenario) in inputs {
        match (&scenario.lock.rust_lock, &options.locks.subject) {
            (Some(name), LockChoice::User(user)) if name == user.name() => {}
            (Some(_), _) => refuse_rust_lock(path, scenario)?,
            (None, _) => {}
        }
    }
    if let Some(shard) = options.shard {
        let files = inputs.len() as u64;
        let explores = inputs.iter().any(|(_, s)| s.explore.is_some());
        let sweeps = options.ttl_sweep.is_some() && shard.index == 1;
        if files < shard.index && !explores && !sweeps {
            // Not an error: a CI matrix has a fixed number of shards and `merge` needs every
            // shard's report, so an empty shard still writes one. But it checks nothing: say so.
            crate::emit::stderr_line(&format!(
                "warning: --shard {}/{}: no scenario falls in this shard ({files} files dealt over {} shards) and \
                 there is no exploration to split: this shard checks nothing; the merged report is the gate",
                shard.index, shard.count, shard.count
            ));
        }
    }
    let (subject, _) = options.locks.refs();
    let prepared = subject.prepare();
    for (i, (path, scenario)) in inputs.iter().enumerate() {
        let mine = options.shard.is_none_or(|s| i as u64 % s.count == s.index - 1);
        if !mine {
            continue;
        }
        let t0 = Instant::now();
        // A panic inside one scenario, or a run stopped by its history cap, is that scenario's
        // error (naming its file, as `lockstep run` does); the gate goes on.
        let run = prepared.run(scenario).map_err(|e| format!("{}: {e}", path.display()));
        let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        let checks: Vec<Status> = match &run {
            Ok(run) => run
                .checks()
                .map(|r| expect::verdict(expect::expected(&scenario.expect, &r.checker), r.verdict))
                .collect(),
            Err(_) => vec![Status::Error],
        };
        let status = Status::worst(checks.iter().copied());
        if options.progress {
            crate::emit::stderr_line(&format!(
                "ci: {} {} ({})",
                row_words(&checks),
                scenario.name,
                path.display()
            ));
        }
        ci.scenarios.push(crate::gate::ScenarioOutcome {
            path: path.clone(),
            // As the lock ran it: a user lock's scenario names it (`rust_lock`) for the report.
            scenario: subject.scenario(scenario).into_owned(),
            run,
            status,
            wall_ms,
        });
    }
    let partial = options.shard.is_some_and(|s| s.count != 1);
    for (path, scenario) in inputs {
        let Some(spec) = &scenario.explore else { continue };
        if options.progress {
            crate::emit::stderr_line(&format!("ci: exploring {} ({})", scenario.name, path.display()));
        }
        let overrides = Overrides {
            jobs: Some(options.jobs),
            shard: options.shard,
            progress: options.progress,
            ..Overrides::default()
        };
        let (template, config) = explore_config(scenario, &overrides)?;
        let mut summary = run_exploration(&template, &config, &options.locks, None);
        super::identity::stamp_run(&mut summary, &template, &config, &options.locks);
        let status = summary.status(NAMES, &spec.expect, partial);
        if options.progress {
            // Issue 52: an exploration whose expectations all held is `as expected`, with the
            // checkers it states nothing of counted, as a scenario's row is.
            let words = match status {
                Status::Unchecked => row_words(
                    &NAMES
                        .iter()
                        .map(|n| {
                            if spec.expect.contains_key(*n) {
                                Status::Pass
                            } else {
                                Status::Unchecked
                            }
                        })
                        .collect::<Vec<_>>(),
                ),
                status => status_words(status).to_string(),
            };
            crate::emit::stderr_line(&format!(
                "ci: {} exploration {} ({} seeds, {} violating)",
                words, summary.scenario, summary.seeds_run, summary.seeds_violating
            ));
        }
        ci.explorations.push(crate::gate::ExplorationOutcome {
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
                crate::emit::stderr_line(&format!(
                    "ci: TTL sweep of {} over {} TTLs × {} seeds",
                    sweep.algorithm,
                    sweep.ttls_ms.len(),
                    sweep.seeds
                ));
            }
            let sweep = SweepOptions {
                progress: sweep.progress || options.progress,
                ..sweep.clone()
            };
            ci.ttl_sweep = Some(ttl_sweep(&sweep)?);
        }
    }
    ci.wall_s = started.elapsed().as_secs_f64();
    Ok(ci)
}

#[cfg(test)]
mod tests {
    use super::{row_words, Status};

    #[test]
    fn a_gated_row_with_a_checker_left_unexpected_reads_as_expected() {
        assert_eq!(
            row_words(&[Status::Pass, Status::Unchecked, Status::Pass]),
            "as expected (1 checker without expectation)"
        );
        assert_eq!(row_words(&[Status::Unchecked, Status::Unchecked]), "no expectation");
        assert_eq!(
            row_words(&[Status::Pass, Status::Unchecked, Status::Fail]).trim(),
            "UNEXPECTED"
        );
        assert_eq!(row_words(&[Status::Pass]).trim(), "as expected");
    }
}
