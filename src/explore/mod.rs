//! Exploration: one configuration over many seeds, with fault plans generated from each seed,
//! failures shrunk to a minimal counterexample that `lockstep run` replays.
//!
//! Each seed builds its own world on a worker thread (`jobs` of them); results stream to the
//! aggregating thread, which keeps counts, not histories. What one seed does — run, judge,
//! classify, aggregate, record — is the per-seed pipeline (`pipeline`); this module schedules
//! seeds over workers and shards. The summary's text is `crate::report`'s. Seeds can be split into shards for CI
//! matrices ([`Shard`]); shard summaries merge into the summary of the unsharded run.
//!
//! The lock is chosen in [`subject`] (the template's algorithm, a built-in preset, a user's
//! Rust lock); [`explore_with`] can also run a reference lock on the same seeds and fault plans
//! (the differential oracle) and hands every seed's [`record::SeedRecord`] to the caller as it
//! finishes (the `--jsonl` stream).
//!
//! Where faults are placed is the profile's [`generate::PlacementStrategy`]: at random (this
//! module), or around the lock's own events with coverage feedback ([`guided`], with
//! [`anchors`] and [`coverage`]); [`exhaustive`] runs every placement on a bounded grid. Every
//! mode runs the same subject (and reference) lock.
//!
//! What a search reports should be what the lock got wrong, not what no lease can promise: the
//! workload shapes guided placement draws stay inside the lock's contract unless
//! [`ExploreConfig::overrun_shapes`] asks otherwise ([`anchors::ShapeBounds`]); `lockstep
//! explore` runs the template without faults before exploring and stops when that already fails
//! (`crate::app::exploration::fault_free_check`: the template's verdict, not a finding); under
//! the assumption-bounded profile only implementation-bug seeds are shrunk
//! ([`summary::Bounded::first_bugs`]); and every counterexample says which assumption each of
//! its faults broke ([`shrink::AssumptionNotes`]).

pub mod anchors;
pub mod assumptions;
pub mod coverage;
pub mod exhaustive;
mod failing;
pub mod generate;
pub mod groups;
pub mod guided;
pub mod kinds;
mod pipeline;
pub mod record;
pub mod shrink;
pub mod subject;
pub mod summary;
pub mod sweep;

use crate::explore::kinds::Topology;
use crate::model::fault::FaultProfile;
use crate::run::RESOURCE_NODE;
use crate::scenario::Scenario;
use generate::{case_strategy, ExploreCase};
use pipeline::{aggregate, cut_by_wall_budget, explore_seed, judge_case, seed_record, SeedOutcome};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
// The panic guard lives with the runs (`crate::run::guard`), the standard template with the
// scenarios (`crate::scenario::standard`); their old paths here go in 0.3.0.
#[cfg(feature = "cli")]
pub(crate) use crate::run::guard::guarded;
pub(crate) use crate::run::guard::history_guarded;
/// [`crate::run::guard::run_guarded`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::run::guard::run_guarded`; removed in 0.3.0"
)]
pub fn run_guarded(
    scenario: &crate::scenario::Scenario,
    factory: Option<&crate::run::LockFactory>,
) -> Result<crate::run::ScenarioRun, String> {
    crate::run::guard::run_guarded(scenario, factory)
}
/// [`crate::scenario::standard::standard_template`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::scenario::standard::standard_template`; removed in 0.3.0"
)]
pub fn standard_template(
    algorithm: crate::model::Algorithm,
    fencing: crate::model::Fencing,
    resource: lockstep_sim::FencingMode,
    tick_ms: u64,
) -> Result<crate::scenario::Scenario, crate::scenario::ScenarioError> {
    crate::scenario::standard::standard_template(algorithm, fencing, resource, tick_ms)
}
pub use subject::{FactoryMaker, LockChoice, LockRef, UserLock};
pub use summary::ExploreSummary;

/// `K/N`: this process runs the seeds whose position modulo `N` is `K − 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based shard index.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (k, n) = s.split_once('/').ok_or_else(|| format!("shard `{s}` is not K/N"))?;
        let index: u64 = k
            .trim()
            .parse()
            .map_err(|_| format!("shard index `{k}` is not a number"))?;
        let count: u64 = n
            .trim()
            .parse()
            .map_err(|_| format!("shard count `{n}` is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard `{s}`: need 1 <= K <= N"));
        }
        Ok(Shard { index, count })
    }
}

/// How to explore.
#[derive(Debug, Clone)]
pub struct ExploreConfig {
    /// The seeds, in order.
    pub seeds: std::ops::Range<u64>,
    /// Worker threads.
    pub jobs: usize,
    /// Only this shard of the seeds.
    pub shard: Option<Shard>,
    /// Stop starting seeds after this much wall time; seeds still running then are stopped at
    /// their next simulated step and not counted.
    pub time_limit: Option<Duration>,
    /// Which faults to generate.
    pub profile: FaultProfile,
    /// Rerun this share of the seeds (per ten thousand) and compare digests; 0 = off.
    pub determinism_per_10k: u64,
    /// Progress output: a bar on a terminal, plain lines otherwise, or none.
    pub progress: bool,
    /// The assumption-bounded profile (`--profile assumptions`): every case is brought inside
    /// these assumptions ([`assumptions::Assumptions::bound`]) and each seed is classified by the
    /// assumptions its plan broke; a promised checker violated is an implementation bug. Random
    /// placement only.
    pub assumptions: Option<assumptions::Assumptions>,
    /// Set by the caller to stop starting seeds (a `--jsonl` stream that can no longer be
    /// written: exploring on would only lose every record). Seeds already started finish.
    pub cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Guided placement's workload shapes may outlive the lease (`--overrun-shapes`: critical
    /// sections up to 3/2 × TTL). Off by default: shapes stay inside the lock's contract
    /// ([`anchors::ShapeBounds`]), so that what the search finds needs a fault.
    pub overrun_shapes: bool,
    /// With a [`Self::time_limit`]: once a seed worth shrinking was found (an implementation-bug
    /// seed, [`ExploreSummary::first_bug`]), stop starting seeds this long before the limit, so
    /// that the shrink that follows inside the same limit has this time. `None`: explore to the
    /// limit. Set by `lockstep explore --time-limit` and the harness when they shrink
    /// ([`shrink_reserve_of`]).
    pub shrink_reserve: Option<Duration>,
}

impl ExploreConfig {
    /// Whether no further seed may start: the time limit passed since `started`, or the run was
    /// cancelled ([`Self::cancel`]).
    pub(crate) fn must_stop(&self, started: Instant) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.time_limit.is_some_and(|limit| started.elapsed() >= limit)
    }

    /// Stops starting seeds (through [`Self::cancel`]) when `summary` holds a seed to shrink and
    /// the time left is the [`Self::shrink_reserve`].
    pub(crate) fn keep_shrink_reserve(&self, started: Instant, summary: &ExploreSummary) {
        let (Some(limit), Some(reserve)) = (self.time_limit, self.shrink_reserve) else {
            return;
        };
        if started.elapsed().saturating_add(reserve) >= limit && summary.first_bug().is_some() {
            self.cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// The version of the fault generator: what a seed number means. A seed names a plan (kinds,
/// faults, their times and strengths) only under the generator that drew it; this number moves
/// whenever a seed's plan does (a kind joins the defaults, the draw order or a bound changes).
/// Summaries and counterexamples record it, `lockstep merge` refuses summaries of two versions,
/// and `lockstep explore --generator-version N` refuses a version this build does not draw. A
/// counterexample's `[[fault]]` entries replay under any version.
pub const GENERATOR_VERSION: u32 = 2;

/// The share of a time limit kept for shrinking once a bug seed is found: a third of it, at most
/// two minutes (shrinking one bug seed takes some 10–30 s on two cores).
pub fn shrink_reserve_of(time_limit: Duration) -> Duration {
    (time_limit / 3).min(Duration::from_secs(120))
}

/// Runs `body` under `config.time_limit` as a wall-clock budget that also reaches inside the
/// runs: a timer thread sets a flag when the limit passes since `started`, and every run on this
/// thread — and on the workers it starts, which watch the same flag
/// (`lockstep_history::stop::current`) — stops at its next simulated step. A seed that never ends
/// cannot hold an exploration past its limit. Without a limit, `body` runs as it is.
pub(crate) fn with_time_limit<T>(config: &ExploreConfig, started: Instant, body: impl FnOnce() -> T) -> T {
    let Some(limit) = config.time_limit else {
        return body();
    };
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (done, wait) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let timer_flag = flag.clone();
        scope.spawn(move || {
            let left = limit.saturating_sub(started.elapsed());
            if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(left) {
                timer_flag.store(true, Ordering::Relaxed);
            }
        });
        let _stop = lockstep_history::stop::stop_when(flag);
        let out = body();
        drop(done); // ends the timer
        out
    })
}

/// On a worker thread: watch the flag its starter watched (`wall`, from
/// `lockstep_history::stop::current` on the starting thread).
fn watch(wall: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) -> Option<lockstep_history::stop::StopGuard> {
    wall.map(lockstep_history::stop::stop_when)
}

impl Default for ExploreConfig {
    fn default() -> Self {
        ExploreConfig {
            seeds: 0..1_000,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            shard: None,
            time_limit: None,
            profile: FaultProfile::default(),
            determinism_per_10k: 0,
            progress: false,
            assumptions: None,
            cancel: Default::default(),
            overrun_shapes: false,
            shrink_reserve: None,
        }
    }
}

/// The topology a template offers the generator.
pub fn topology(template: &Scenario) -> Topology {
    Topology {
        masters: template.masters.iter().map(|m| m.name.clone()).collect(),
        clients: template.clients.iter().map(|c| c.name.clone()).collect(),
        resource: RESOURCE_NODE.to_string(),
        duration_ms: template.duration_ms,
        ttl_ms: template.lock.ttl_ms,
        replicas: template
            .masters
            .iter()
            .flat_map(|m| template.replicas_of(&m.name))
            .collect(),
        everysec: template
            .masters
            .iter()
            .filter(|m| template.master_setup(&m.name).persistence == lockstep_sim::Persistence::AofEverysec)
            .map(|m| m.name.clone())
            .collect(),
        replicated: template
            .masters
            .iter()
            .filter(|m| !template.replicas_of(&m.name).is_empty())
            .map(|m| m.name.clone())
            .collect(),
        request_timeout_ms: template.lock.request_timeout_ms,
        network_latency_ms: (template.network.min_latency_ms, template.network.max_latency_ms),
    }
}

/// The scenario one case runs: the template with the seed, the first `case.clients` clients,
/// the case's faults (the template's own faults are replaced), no expectations and no
/// `[explore]` block.
pub fn case_scenario(template: &Scenario, case: &ExploreCase, seed: u64) -> Scenario {
    let mut scenario = template.clone();
    scenario.seed = seed;
    scenario.clients.truncate(case.clients.max(1));
    // A shape sets the clients before the faults are planned on the nodes present.
    if let Some(shape) = &case.shape {
        anchors::apply_shape(&mut scenario, shape);
    }
    let present: Vec<String> = scenario.node_names();
    scenario.faults = case.plan(&present);
    scenario.expect.clear();
    // A case is one run: a counterexample written from it must not carry the template's
    // exploration along.
    scenario.explore = None;
    scenario
}

/// How many seeds this process runs (its shard's share of the seeds), computed without listing
/// them: memory does not grow with the number of seeds.
pub(crate) fn shard_len(config: &ExploreConfig) -> u64 {
    let all = config.seeds.end.saturating_sub(config.seeds.start);
    match config.shard {
        None => all,
        // Positions i with i % count == index - 1.
        Some(s) => all / s.count + u64::from(all % s.count >= s.index),
    }
}

/// The `i`-th seed this process runs (`None` past the last one).
pub(crate) fn shard_seed(config: &ExploreConfig, i: u64) -> Option<u64> {
    if i >= shard_len(config) {
        return None;
    }
    let position = match config.shard {
        None => i,
        Some(s) => i * s.count + (s.index - 1),
    };
    Some(config.seeds.start + position)
}

enum Progress {
    #[cfg(feature = "cli")]
    Bar(indicatif::ProgressBar),
    Lines {
        last: Instant,
    },
    Off,
}

impl Progress {
    fn new(enabled: bool, total: u64) -> Self {
        if !enabled {
            Progress::Off
        } else if cfg!(feature = "cli") && std::io::stderr().is_terminal() {
            Self::bar(total)
        } else {
            Progress::Lines { last: Instant::now() }
        }
    }

    /// The progress bar of a terminal (the `cli` feature's; without it, progress lines).
    fn bar(total: u64) -> Self {
        #[cfg(feature = "cli")]
        {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} seeds  {per_sec}  eta {eta}  {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            Progress::Bar(bar)
        }
        #[cfg(not(feature = "cli"))]
        {
            let _ = total;
            Progress::Lines { last: Instant::now() }
        }
    }

    fn update(&mut self, done: u64, total: u64, violating: u64, started: Instant) {
        match self {
            #[cfg(feature = "cli")]
            Progress::Bar(bar) => {
                bar.set_position(done);
                bar.set_message(format!("{violating} violating"));
            }
            Progress::Lines { last } => {
                if last.elapsed() >= Duration::from_secs(5) || done == total {
                    *last = Instant::now();
                    let elapsed = started.elapsed().as_secs_f64();
                    let rate = done as f64 / elapsed.max(1e-9);
                    let left = (total - done) as f64 / rate.max(1e-9);
                    crate::emit::stderr_line(&format!(
                        "explore: {done}/{total} seeds, {rate:.1}/s, {violating} violating, ~{left:.0} s left"
                    ));
                }
            }
            Progress::Off => {}
        }
    }

    fn finish(&self) {
        #[cfg(feature = "cli")]
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

/// Explores `template` over the configured seeds with the built-in algorithm it names.
pub fn explore(template: &Scenario, config: &ExploreConfig) -> ExploreSummary {
    explore_with_lock(template, config, None)
}

/// Explores `template` with a user-written lock (`maker` builds its factory on each worker),
/// named `user-lock` in the summary (see [`explore_with`] to name it). A panic in the lock's
/// code is reported as that seed's error; the exploration goes on.
pub fn explore_with_lock(template: &Scenario, config: &ExploreConfig, maker: Option<&FactoryMaker>) -> ExploreSummary {
    let subject = maker.map_or(LockRef::Template, |m| LockRef::User("user-lock", m));
    explore_with(template, config, subject, None, &mut |_| {})
}

/// Explores `template` over the configured seeds with `subject` and, for the differential
/// oracle, `reference` on the same seeds and fault plans (the summary's `differential` counts
/// where only the subject fails). `on_seed` sees every seed's record as it finishes (in
/// completion order, on the calling thread). A panic in lock code is that seed's error.
pub fn explore_with(
    template: &Scenario,
    config: &ExploreConfig,
    subject: LockRef<'_>,
    reference: Option<LockRef<'_>>,
    on_seed: &mut dyn FnMut(&record::SeedRecord),
) -> ExploreSummary {
    let started = Instant::now();
    with_time_limit(config, started, || {
        if config.profile.strategy != crate::model::fault::PlacementStrategy::Random {
            return guided::explore_guided(template, config, (subject, reference), on_seed);
        }
        explore_random(template, config, (subject, reference), on_seed, started)
    })
}

/// [`explore_with`] with random placement, started at `started`.
fn explore_random(
    template: &Scenario,
    config: &ExploreConfig,
    (subject, reference): (LockRef<'_>, Option<LockRef<'_>>),
    on_seed: &mut dyn FnMut(&record::SeedRecord),
    started: Instant,
) -> ExploreSummary {
    let total = shard_len(config);
    let (names, mut summary) = new_summary(template, (subject, reference));
    match config.assumptions {
        Some(_) => summary.assumptions = Some(summary::Bounded::default()),
        None => summary.classified = Some(summary::Bounded::default()),
    }
    let topo = topology(template);
    let next = AtomicU64::new(0);
    let mut progress = Progress::new(config.progress, total);
    let jobs = config.jobs.max(1);
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::channel::<SeedOutcome>();
        let wall = lockstep_history::stop::current();
        for _ in 0..jobs {
            let sender = sender.clone();
            let (next, topo, wall) = (&next, &topo, wall.clone());
            scope.spawn(move || {
                let _stop = watch(wall);
                // Strategies are not `Send`: each worker builds its own from the same profile.
                let strategy = case_strategy(topo, &config.profile);
                let prepared = (subject.prepare(), reference.map(|r| r.prepare()));
                loop {
                    if config.must_stop(started) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(seed) = shard_seed(config, i) else { return };
                    let locks = (&prepared.0, prepared.1.as_ref());
                    let bounds = config.assumptions.as_ref();
                    let outcome = explore_seed(template, &strategy, seed, config.determinism_per_10k, locks, bounds);
                    if sender.send(outcome).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        let mut done = 0;
        for outcome in receiver {
            if cut_by_wall_budget(&outcome) {
                continue;
            }
            on_seed(&seed_record(template, &names, &outcome));
            // A bounded case is not its seed's generated case: failing seeds keep it.
            aggregate(&mut summary, outcome, config.assumptions.is_some());
            config.keep_shrink_reserve(started, &summary);
            done += 1;
            progress.update(done, total, summary.seeds_violating, started);
        }
    });
    progress.finish();
    note_time_limit(&mut summary, config, total, started);
    finish_throughput(&mut summary, started, jobs);
    summary
}

/// Notes in `summary` that the time limit stopped it before all `total` seeds ran. Workers take
/// seeds in order; the seeds in flight when the limit passed are stopped and not counted.
pub(super) fn note_time_limit(summary: &mut ExploreSummary, config: &ExploreConfig, total: u64, started: Instant) {
    // Cut short by the limit, or by the shrink reserve kept before it (or another stop).
    let limit_passed =
        config.time_limit.is_some_and(|limit| started.elapsed() >= limit) || config.cancel.load(Ordering::Relaxed);
    if limit_passed && summary.seeds_run < total {
        summary.seeds_planned = Some(total);
    }
}

/// The lock names `(subject, reference)` and an empty summary naming them.
fn new_summary(template: &Scenario, (subject, reference): (LockRef, Option<LockRef>)) -> (LockNames, ExploreSummary) {
    let names = (subject.name(template), reference.map(|r| r.name(template)));
    let mut summary = ExploreSummary::new(&template.name, &names.0);
    if let Some(name) = &names.1 {
        summary.differential = Some(summary::Differential::new(name));
    }
    (names, summary)
}

/// The subject's name and the reference's, if any.
type LockNames = (String, Option<String>);

/// Fills in the wall-clock figures of an exploration started at `started`.
fn finish_throughput(summary: &mut ExploreSummary, started: Instant, jobs: usize) {
    summary.throughput.wall_s = started.elapsed().as_secs_f64();
    summary.throughput.jobs = jobs;
    summary.set_rates();
    // The first bug seed; its count needs the run's span (`app::identity::stamp_run`).
    summary.refresh_first_bug();
}
