//! Exploration: one configuration over many seeds, with fault plans generated from each seed,
//! failures shrunk to a minimal counterexample that `lockstep run` replays.
//!
//! Each seed builds its own world on a worker thread (`jobs` of them); results stream to the
//! aggregating thread, which keeps counts, not histories. Seeds can be split into shards for CI
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
pub mod generate;
pub mod guided;
pub mod kinds;
pub mod record;
pub mod shrink;
pub mod subject;
pub mod summary;
pub mod sweep;

use crate::checker::Verdict;
use crate::run::{run_scenario, run_with_lock, LockFactory, ScenarioRun, RESOURCE_NODE};
use crate::scenario::Scenario;
use generate::{case_strategy, case_tree, ExploreCase, FaultProfile, Topology};
use lockstep_sim::{History, Seed};
use std::io::IsTerminal;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use subject::PreparedLock;
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
}

impl ExploreConfig {
    /// Whether no further seed may start: the time limit passed since `started`, or the run was
    /// cancelled ([`Self::cancel`]).
    pub(crate) fn must_stop(&self, started: Instant) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.time_limit.is_some_and(|limit| started.elapsed() >= limit)
    }
}

/// Runs `body` under `config.time_limit` as a wall-clock budget that also reaches inside the
/// runs: a timer thread sets a flag when the limit passes since `started`, and every run on this
/// thread — and on the workers it starts, which watch the same flag
/// (`lockstep_sim::stop::current`) — stops at its next simulated step. A seed that never ends
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
        let _stop = lockstep_sim::stop::stop_when(flag);
        let out = body();
        drop(done); // ends the timer
        out
    })
}

/// On a worker thread: watch the flag its starter watched (`wall`, from
/// `lockstep_sim::stop::current` on the starting thread).
fn watch(wall: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) -> Option<lockstep_sim::stop::StopGuard> {
    wall.map(lockstep_sim::stop::stop_when)
}

/// Whether the wall budget stopped this seed's run (or its reference's) before it ended: such a
/// seed has no verdict and is not counted.
fn cut_by_wall_budget(outcome: &SeedOutcome) -> bool {
    let stopped = |message: &str| message.contains(lockstep_sim::stop::STOPPED);
    match outcome {
        SeedOutcome::Error { message, .. } => stopped(message),
        SeedOutcome::Judged { reference, .. } => matches!(reference, Some(Err(message)) if stopped(message)),
    }
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

thread_local! {
    /// The first panic message seen on this thread since the last [`run_guarded`] began.
    static FIRST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Chains a panic hook that remembers, per thread, the first panic's message and location.
///
/// A panic inside a simulated node is caught by the node's runtime and resurfaces as a generic
/// "a spawned task panicked" error; the hook keeps the user's own message for the report.
fn install_panic_capture() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(non-text panic payload)".to_string());
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            FIRST_PANIC.with(|first| {
                first.borrow_mut().get_or_insert_with(|| format!("{payload}{location}"));
            });
            previous(info);
        }));
    });
}

/// Runs `scenario` with the built-in algorithm it names, or with `factory`'s lock, turning a
/// panic anywhere (user lock code included) into an error.
pub fn run_guarded(scenario: &Scenario, factory: Option<&LockFactory>) -> Result<ScenarioRun, String> {
    guarded(|| {
        match factory {
            Some(factory) => run_with_lock(scenario, None, factory.clone()),
            None => run_scenario(scenario, None),
        }
        .map_err(|e| e.to_string())
    })
}

/// The history of `scenario` alone ([`crate::run::history_with_lock`]: no checkers, no digest),
/// with the built-in algorithm it names or with `factory`'s lock, under the panic guard.
pub(crate) fn history_guarded(scenario: &Scenario, factory: Option<&LockFactory>) -> Result<History, String> {
    guarded(|| {
        let factory = factory.cloned().unwrap_or_else(|| crate::run::builtin_lock(scenario));
        crate::run::history_with_lock(scenario, None, factory).map_err(|e| e.to_string())
    })
}

/// Calls `f`, turning a panic anywhere inside it (a simulated node's task included) into an
/// error carrying the first panic's message and location. The one panic guard: explorations
/// use it per seed, `lockstep run` and `lockstep ci` per scenario.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    install_panic_capture();
    FIRST_PANIC.with(|first| first.borrow_mut().take());
    let outcome = catch_unwind(AssertUnwindSafe(f));
    let first_panic = FIRST_PANIC.with(|first| first.borrow_mut().take());
    match (outcome, first_panic) {
        (Ok(Ok(value)), _) => Ok(value),
        (_, Some(message)) => Err(format!("panicked: {message}")),
        (Ok(Err(e)), None) => Err(e),
        (Err(panic), None) => Err(panic_message(&panic)),
    }
}

/// The text of a caught panic.
fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = panic.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}

/// Whether `seed` is in the determinism sample (a fixed choice, the same in every shard).
fn in_determinism_sample(seed: u64, per_10k: u64) -> bool {
    per_10k > 0 && Seed(seed).derive_u64("explore/determinism") % 10_000 < per_10k
}

/// A run's verdicts per checker and its history digest.
type Judged = (Vec<(String, Verdict)>, String);

/// What one seed produced, as sent to the aggregator.
#[allow(clippy::large_enum_variant)] // one per seed, moved once to the aggregator
enum SeedOutcome {
    Judged {
        seed: u64,
        verdicts: Vec<(String, Verdict)>,
        fault_kinds: Vec<String>,
        faults: usize,
        liveness: crate::liveness::Liveness,
        sim_ms: u64,
        determinism: Option<Result<(), String>>,
        digest: String,
        case: ExploreCase,
        /// The reference's verdicts and digest, or why it could not run (differential only).
        reference: Option<Result<Judged, String>>,
        /// Under the assumption-bounded profile: the assumptions the plan broke, and the
        /// checkers the lock promises under it that answered invalid (an implementation bug).
        bounded: Option<(Vec<String>, Vec<String>)>,
        /// The same, for a plan left as generated (without `--bounded`), judged by the
        /// assumptions of the case's own scenario (its workload shape included).
        classified: Option<(Vec<String>, Vec<String>)>,
        /// When the violation is an implementation bug only once the faults it does not need
        /// are dropped ([`reduce_to_bug`]): that smaller case (shrinking starts from it).
        bug_case: Option<ExploreCase>,
    },
    Error {
        seed: u64,
        message: String,
        case: ExploreCase,
    },
}

fn explore_seed(
    template: &Scenario,
    strategy: &proptest::strategy::BoxedStrategy<ExploreCase>,
    seed: u64,
    per_10k: u64,
    locks: (&PreparedLock, Option<&PreparedLock>),
    bounds: Option<&assumptions::Assumptions>,
) -> SeedOutcome {
    let case = case_tree(seed, strategy).current();
    let Some(bounds) = bounds else {
        return judge_case(template, case, seed, per_10k, locks).0;
    };
    let mut outcome = judge_case_as(template, bounds.bound(case), seed, per_10k, locks, false).0;
    if let SeedOutcome::Judged {
        verdicts,
        case,
        bounded,
        classified,
        ..
    } = &mut outcome
    {
        *bounded = Some(classify(bounds, case, verdicts));
        *classified = None;
    }
    outcome
}

/// Runs one case with the subject (and the reference, if any) and judges it; with the subject
/// run's coverage signature ([`coverage::signature`]).
fn judge_case(
    template: &Scenario,
    case: ExploreCase,
    seed: u64,
    per_10k: u64,
    locks: (&PreparedLock, Option<&PreparedLock>),
) -> (SeedOutcome, Option<u64>) {
    judge_case_as(template, case, seed, per_10k, locks, true)
}

/// [`judge_case`]; `reduce`: a violation outside the assumptions of the plan as drawn is
/// classified again without the faults it may not need ([`reduce_to_bug`]; off under the
/// assumption-bounded profile, which classifies the bounded plan itself).
fn judge_case_as(
    template: &Scenario,
    case: ExploreCase,
    seed: u64,
    per_10k: u64,
    (subject, reference): (&PreparedLock, Option<&PreparedLock>),
    reduce: bool,
) -> (SeedOutcome, Option<u64>) {
    let scenario = case_scenario(template, &case, seed);
    let run = match subject.run(&scenario) {
        Ok(run) => run,
        Err(message) => return (SeedOutcome::Error { seed, message, case }, None),
    };
    let determinism = in_determinism_sample(seed, per_10k).then(|| match subject.run(&scenario) {
        Ok(again) if again.digest == run.digest => Ok(()),
        Ok(again) => Err(match run.history.first_divergence(&again.history) {
            Some((i, a, b)) => format!(
                "histories diverge at event #{i}: {} vs {}",
                a.map_or("(end)".to_string(), |e| e.canonical_json()),
                b.map_or("(end)".to_string(), |e| e.canonical_json())
            ),
            None => "digests differ but events are equal".to_string(),
        }),
        Err(message) => Err(format!("the rerun failed: {message}")),
    });
    let reference = reference.map(|lock| {
        lock.run(&scenario).map(|r| {
            (
                r.results.iter().map(|c| (c.checker.clone(), c.verdict)).collect(),
                r.digest,
            )
        })
    });
    let ops = crate::history::OpHistory::new(&run.history);
    let signature = coverage::signature(&ops);
    let verdicts: Vec<(String, Verdict)> = run.results.iter().map(|r| (r.checker.clone(), r.verdict)).collect();
    let assumptions = assumptions::Assumptions::of(&scenario);
    let mut classified = classify(&assumptions, &case, &verdicts);
    let mut bug_case = None;
    let violated = reduce && verdicts.iter().any(|(_, v)| *v == Verdict::Invalid);
    let reduced = violated
        .then(|| reduce_to_bug(template, (&case, seed), (&assumptions, &classified), subject))
        .flatten();
    if let Some((reduced, bugs)) = reduced {
        classified.1 = bugs;
        bug_case = Some(reduced);
    }
    let classified = Some(classified);
    let outcome = SeedOutcome::Judged {
        seed,
        verdicts,
        fault_kinds: case.faults.iter().map(|f| f.kind().to_string()).collect(),
        faults: case.faults.len(),
        liveness: crate::liveness::of(&ops),
        sim_ms: run.end.at_ms,
        determinism,
        digest: run.digest,
        case,
        reference,
        bounded: None,
        classified,
        bug_case,
    };
    (outcome, Some(signature))
}

/// The assumptions of `assumptions` that `case`'s plan broke, and the checkers answering invalid
/// in `verdicts` that the lock promises under that plan (implementation bugs).
fn classify(
    assumptions: &assumptions::Assumptions,
    case: &ExploreCase,
    verdicts: &[(String, Verdict)],
) -> (Vec<String>, Vec<String>) {
    let broken = assumptions.classify(case);
    let promised = assumptions.promised(&broken);
    let bugs = verdicts
        .iter()
        .filter(|(c, v)| *v == Verdict::Invalid && promised.iter().any(|p| p.to_string() == *c))
        .map(|(c, _)| c.clone())
        .collect();
    let mut names: Vec<String> = broken.iter().map(|b| b.assumption.name().to_string()).collect();
    names.dedup();
    (names, bugs)
}

/// An implementation-bug seed's entry: `bugs` (the promised checkers it violated) and the case
/// that shows them — the plan without the faults the violation does not need (`reduced`,
/// [`reduce_to_bug`]), else the plan as run — with that case's fault kinds and count.
fn bug_seed(seed: u64, bugs: &[String], case: &ExploreCase, reduced: Option<&ExploreCase>) -> summary::FailingSeed {
    let drawn = reduced.map(|_| case.faults.clone()).unwrap_or_default();
    let case = reduced.unwrap_or(case);
    let mut kinds: Vec<String> = case.faults.iter().map(|f| f.kind().to_string()).collect();
    kinds.sort();
    kinds.dedup();
    summary::FailingSeed {
        seed,
        checkers: bugs.to_vec(),
        fault_kinds: kinds,
        faults: case.faults.len(),
        case: Some(case.clone()),
        drawn,
    }
}

/// A violating seed whose plan broke an assumption, classified by the faults the violation
/// needs rather than the plan as drawn (issue 42): the faults that break a hard assumption
/// (clock, masters) on their own are dropped and the rest run again (one run); when a checker
/// the lock promises
/// under that smaller plan is still violated, the violation never needed the dropped faults —
/// an implementation bug, with that smaller case. `None` otherwise (nothing to drop, nothing
/// left, or the violation went with the dropped faults).
fn reduce_to_bug(
    template: &Scenario,
    (case, seed): (&ExploreCase, u64),
    (assumptions, (broken, bugs)): (&assumptions::Assumptions, &(Vec<String>, Vec<String>)),
    subject: &PreparedLock,
) -> Option<(ExploreCase, Vec<String>)> {
    if broken.is_empty() || !bugs.is_empty() {
        return None;
    }
    let clients = case.clients;
    // A fault that breaks a hard assumption on its own (a clock, a master's keys) leaves only
    // `ownership` promised: it goes. Timing faults stay (under them the lease's own checkers
    // are still promised), and so do faults that break nothing (a client's wall-clock step).
    let innocent = |f: &generate::GenFault| {
        assumptions
            .classify(&ExploreCase {
                clients,
                faults: vec![f.clone()],
                shape: case.shape,
            })
            .iter()
            .all(|b| b.assumption == assumptions::Assumption::Timing)
    };
    let kept: Vec<generate::GenFault> = case.faults.iter().filter(|f| innocent(f)).cloned().collect();
    if kept.is_empty() || kept.len() == case.faults.len() {
        return None;
    }
    let reduced = ExploreCase {
        faults: kept,
        ..case.clone()
    };
    let run = subject.run(&case_scenario(template, &reduced, seed)).ok()?;
    let verdicts: Vec<(String, Verdict)> = run.results.iter().map(|r| (r.checker.clone(), r.verdict)).collect();
    let (_, bugs) = classify(assumptions, &reduced, &verdicts);
    (!bugs.is_empty()).then_some((reduced, bugs))
}

/// Adds one seed's outcome to `summary` (and its differential); with `keep_case`, a failing
/// seed keeps its case (guided explorations: the seed alone does not regenerate it).
fn aggregate(summary: &mut ExploreSummary, outcome: SeedOutcome, keep_case: bool) {
    match outcome {
        SeedOutcome::Judged {
            seed,
            verdicts,
            fault_kinds,
            faults,
            liveness,
            sim_ms,
            determinism,
            reference,
            case,
            bounded,
            classified,
            bug_case,
            ..
        } => {
            summary.add_verdicts(seed, &verdicts, &fault_kinds, faults);
            let counted = [
                (summary.assumptions.as_mut(), &bounded),
                (summary.classified.as_mut(), &classified),
            ];
            for (counts, found) in counted {
                let (Some(counts), Some((broken, bugs))) = (counts, found) else {
                    continue;
                };
                counts.add(seed, &verdicts, broken, bugs);
                if !bugs.is_empty() {
                    counts.add_bug(bug_seed(seed, bugs, &case, bug_case.as_ref()));
                }
            }
            if let Some(differential) = &mut summary.differential {
                let theirs = reference
                    .as_ref()
                    .and_then(|r| r.as_ref().ok())
                    .map(|(v, _)| v.as_slice());
                differential.add(seed, &verdicts, theirs, &fault_kinds, faults);
                // The subject's own bugs where the reference keeps the promised checker: what
                // `--against` shrinks first.
                if let Some((_, bugs)) = bounded.as_ref().or(classified.as_ref()).filter(|(_, b)| !b.is_empty()) {
                    differential.add_bug(bug_seed(seed, bugs, &case, bug_case.as_ref()), theirs);
                }
            }
            if keep_case {
                let only_subject = summary
                    .differential
                    .iter_mut()
                    .flat_map(|d| d.first_only_subject.iter_mut());
                for failing in summary.first_failing.iter_mut().chain(only_subject) {
                    if failing.seed == seed {
                        failing.case = Some(case.clone());
                    }
                }
            }
            summary.add_liveness(&liveness, sim_ms);
            if let Some(result) = determinism {
                summary.determinism_checked += 1;
                if let Err(first_difference) = result {
                    summary
                        .determinism_failures
                        .push(summary::DeterminismFailure { seed, first_difference });
                    summary.determinism_failures.sort();
                }
            }
        }
        SeedOutcome::Error { seed, message, .. } => summary.add_error(seed, message),
    }
}

/// The record of one seed's outcome (the `--jsonl` line).
fn seed_record(template: &Scenario, names: &LockNames, outcome: &SeedOutcome) -> record::SeedRecord {
    let (case, seed) = match outcome {
        SeedOutcome::Judged { case, seed, .. } | SeedOutcome::Error { case, seed, .. } => (case, *seed),
    };
    let mut fault_kinds: Vec<String> = case.faults.iter().map(|f| f.kind().to_string()).collect();
    fault_kinds.sort();
    fault_kinds.dedup();
    let (subject, reference) = match outcome {
        SeedOutcome::Judged {
            verdicts,
            digest,
            reference,
            ..
        } => (
            record::LockRun::judged(&names.0, verdicts, digest),
            reference.as_ref().zip(names.1.as_deref()).map(|(r, name)| match r {
                Ok((verdicts, digest)) => record::LockRun::judged(name, verdicts, digest),
                Err(message) => record::LockRun::failed(name, message),
            }),
        ),
        SeedOutcome::Error { message, .. } => (record::LockRun::failed(&names.0, message), None),
    };
    // Only what the reference was judged on and passed: a checker it cannot be judged on (no
    // fencing tokens: `token-order` unknown) is no difference between the two locks.
    let only_subject = reference.as_ref().map(|r| {
        subject
            .invalid()
            .into_iter()
            .filter(|c| r.error.is_none() && r.verdicts.get(c) == Some(&Verdict::Valid))
            .collect()
    });
    record::SeedRecord {
        v: record::RECORD_VERSION,
        scenario: template.name.clone(),
        seed,
        clients: case
            .shape
            .map_or(case.clients.max(1).min(template.clients.len()), |shape| shape.clients),
        fault_kinds,
        faults: case.faults.clone(),
        shape: case.shape,
        subject,
        reference,
        only_subject,
    }
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
    Bar(indicatif::ProgressBar),
    Lines { last: Instant },
    Off,
}

impl Progress {
    fn new(enabled: bool, total: u64) -> Self {
        if !enabled {
            Progress::Off
        } else if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} seeds  {per_sec}  eta {eta}  {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            Progress::Bar(bar)
        } else {
            Progress::Lines { last: Instant::now() }
        }
    }

    fn update(&mut self, done: u64, total: u64, violating: u64, started: Instant) {
        match self {
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
        if config.profile.strategy != generate::PlacementStrategy::Random {
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
        let wall = lockstep_sim::stop::current();
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
    let limit_passed = config.time_limit.is_some_and(|limit| started.elapsed() >= limit);
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
}

/// What every standard template shares — the run, the clients, the TTL and the workload — as a
/// scenario file would write it: the lock, its fencing, the resource, the tick and the name are
/// set as values by [`standard_template`].
const STANDARD_BASE: &str = r#"
name = "explore-standard"
description = "The standard exploration profile."
seed = 0
duration_ms = 10000

[topology]
masters = 1
clients = 3

[lock]
algorithm = "naive"
ttl_ms = 2000

[workload]
until_ms = 9000
work_ms = [50, 500]
acquire_retry_ms = 50
"#;

/// The standard exploration template for `algorithm`: 10 simulated seconds, 3 clients, 5 masters
/// for Redlock (1 otherwise), a 2 s TTL, clients looping until 9 s — the built-in algorithm with
/// its defaults ([`AlgorithmSpec::preset`]), `fencing` tokens, a `resource` of that mode and a
/// scheduler step of `tick_ms` (1 to 10,000). A script lock has no standard form (it needs its
/// scenario file: `--lock FILE`).
pub fn standard_template(
    algorithm: crate::model::Algorithm,
    fencing: crate::model::Fencing,
    resource: lockstep_sim::FencingMode,
    tick_ms: u64,
) -> Result<Scenario, crate::scenario::ScenarioError> {
    const ORIGIN: &str = "<standard template>";
    let refuse = |message: String| crate::scenario::ScenarioError::file(ORIGIN, message);
    let masters = algorithm.standard_masters();
    let base = match masters {
        1 => Scenario::from_str(STANDARD_BASE, ORIGIN)?,
        _ => Scenario::from_str(
            &STANDARD_BASE.replacen("masters = 1", &format!("masters = {masters}"), 1),
            ORIGIN,
        )?,
    };
    if tick_ms == 0 || tick_ms > base.duration_ms {
        return Err(refuse(format!(
            "tick_ms {tick_ms}: must be between 1 and the run's {} ms",
            base.duration_ms
        )));
    }
    let spec = crate::model::AlgorithmSpec::preset(algorithm, base.lock.ttl_ms).ok_or_else(|| {
        refuse(format!(
            "`{algorithm}` has no standard form: a script lock is explored from its scenario file (--lock FILE)"
        ))
    })?;
    let mut template = base;
    template.name = format!("explore-{algorithm}");
    template.description =
        format!("The standard exploration profile: {algorithm}, {masters} master(s), 3 clients, 10 s.");
    template.tick_ms = tick_ms;
    template.resource = resource;
    template.lock.fencing = fencing;
    template.lock.algorithm = spec;
    Ok(template)
}

#[cfg(test)]
mod tests {
    use super::standard_template;
    use crate::checker::Verdict;
    use crate::model::{Algorithm, Fencing};
    use crate::scenario::Scenario;
    use lockstep_sim::FencingMode;

    /// The standard template as it was written before it became a value: the choices formatted
    /// into a scenario file and parsed back. The value must be exactly what that gave.
    fn by_text(algorithm: &str, fencing: &str, resource: &str, tick_ms: u64) -> Scenario {
        let masters = if algorithm == "redlock" { 5 } else { 1 };
        let source = format!(
            "name = \"explore-{algorithm}\"\ndescription = \"The standard exploration profile: {algorithm}, \
             {masters} master(s), 3 clients, 10 s.\"\nseed = 0\nduration_ms = 10000\ntick_ms = {tick_ms}\n\
             [topology]\nmasters = {masters}\nclients = 3\nresource = \"{resource}\"\n\
             [lock]\nalgorithm = \"{algorithm}\"\nttl_ms = 2000\nfencing = \"{fencing}\"\n\
             [workload]\nuntil_ms = 9000\nwork_ms = [50, 500]\nacquire_retry_ms = 50\n"
        );
        Scenario::from_str(&source, "<standard template>").expect("the written template parses")
    }

    #[test]
    fn the_standard_template_as_a_value_is_the_one_its_file_form_gave() {
        for algorithm in [
            Algorithm::Naive,
            Algorithm::TokenRelease,
            Algorithm::Watchdog,
            Algorithm::Redlock,
        ] {
            for fencing in Fencing::ALL {
                for resource in FencingMode::ALL {
                    for tick_ms in [1, 7] {
                        let value = standard_template(algorithm, fencing, resource, tick_ms).unwrap();
                        let text = by_text(algorithm.name(), fencing.name(), resource.name(), tick_ms);
                        assert_eq!(value, text, "{algorithm} {fencing:?} {resource:?} tick {tick_ms}");
                        assert_eq!(value.to_toml(), text.to_toml());
                    }
                }
            }
        }
        assert!(standard_template(Algorithm::Script, Fencing::None, FencingMode::Unfenced, 1).is_err());
        assert!(standard_template(Algorithm::Naive, Fencing::None, FencingMode::Unfenced, 0).is_err());
        assert!(standard_template(Algorithm::Naive, Fencing::None, FencingMode::Unfenced, 10_001).is_err());
    }

    /// What the registry of built-in locks promises every entry, a new one included: a scenario
    /// file naming it gets its preset, its settings survive the writer at several TTLs, the
    /// standard template runs it and its clients take the lock, and the explorer's claims and
    /// the sweep's TTL rule stay inside the lock's own bounds.
    #[test]
    fn every_built_in_lock_is_whole() {
        use crate::model::{AlgorithmSpec, LockKeys};
        assert!(!Algorithm::BUILT_IN.is_empty());
        assert_eq!(
            Algorithm::ALL.len(),
            Algorithm::BUILT_IN.len() + 1,
            "the script lock comes last"
        );
        for &algorithm in Algorithm::BUILT_IN {
            for ttl_ms in [30, 2_000, 30_000] {
                let preset = AlgorithmSpec::preset(algorithm, ttl_ms).expect("a built-in has a preset");
                let resolved = algorithm
                    .resolve(&LockKeys::default(), ttl_ms)
                    .expect("a built-in resolves");
                assert_eq!(
                    resolved,
                    Ok(preset.clone()),
                    "{algorithm} at {ttl_ms} ms: unwritten keys give the preset"
                );
                let mut template = standard_template(algorithm, Fencing::Incr, FencingMode::Fenced, 1).unwrap();
                template.lock.ttl_ms = ttl_ms;
                template.lock.algorithm = preset.clone();
                let back = Scenario::from_str(&template.to_toml(), "<round trip>").unwrap();
                assert_eq!(
                    back.lock, template.lock,
                    "{algorithm} at {ttl_ms} ms survives the writer"
                );
                let claims = preset.claims(ttl_ms, 5);
                assert!((1..=5).contains(&claims.masters_used), "{algorithm}: {claims:?}");
                assert!((0.0..1.0).contains(&claims.drift_factor), "{algorithm}: {claims:?}");
                assert_eq!(preset.renews(), claims.renewal_ms.is_some(), "{algorithm}");
                let mut swept = preset.clone();
                swept.at_ttl(ttl_ms * 2);
                assert_eq!(swept.kind(), algorithm);
            }
            let template = standard_template(algorithm, Fencing::Incr, FencingMode::Fenced, 1).unwrap();
            assert_eq!(template.masters.len(), algorithm.standard_masters());
            let run = crate::run::run_scenario(&template, Some(1)).expect("the standard template runs");
            let ops = crate::history::OpHistory::new(&run.history);
            assert!(!ops.holds().is_empty(), "{algorithm}: no client ever took the lock");
        }
    }

    /// Issue 42, item 2: a drawn plan with the faults a wall-clock bug needs (a stalled link and
    /// a client's clock stepped back) and an unrelated master crash after every turn. As drawn,
    /// the crash breaks the masters assumption (only `ownership` promised): no bug. Classified
    /// by the faults the violation needs, it is the lock's bug (`lease-validity` promised under
    /// timing alone), its case without the crash; the counterexample says the crash was dropped.
    #[test]
    fn a_violation_is_classified_by_the_faults_it_needs_not_the_plan_as_drawn() {
        use super::generate::GenFault;
        use super::kinds::{ClockJump, Crash, Hold};
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/bug-validity-wall-clock.toml");
        let mut template = Scenario::from_file(std::path::Path::new(path)).unwrap();
        template.faults = Default::default();
        let needed = vec![
            GenFault::from(Hold {
                at_ms: 0,
                a: "client-1".into(),
                b: "redis-3".into(),
                length_ms: 11_000,
            }),
            GenFault::from(ClockJump {
                at_ms: 5_000,
                node: "client-1".into(),
                delta_ms: -5_000,
            }),
        ];
        let crash = GenFault::from(Crash {
            at_ms: 30_000,
            node: "redis-3".into(),
            down_ms: 100,
        });
        let mut faults = needed.clone();
        faults.push(crash.clone());
        let drawn = super::generate::ExploreCase {
            clients: 2,
            faults,
            shape: None,
        };
        let subject = super::LockRef::Template.prepare();
        let (outcome, _) = super::judge_case(&template, drawn.clone(), 1, 0, (&subject, None));
        let super::SeedOutcome::Judged {
            classified: Some((broken, bugs)),
            bug_case: Some(reduced),
            ..
        } = outcome
        else {
            panic!("not classified as a bug without the crash");
        };
        assert!(broken.contains(&"masters".to_string()), "{broken:?}");
        assert_eq!(bugs, vec!["lease-validity".to_string()]);
        assert_eq!(reduced.faults, needed);
        // As drawn, nothing but ownership would have been promised.
        let drawn_only = super::classify(
            &super::assumptions::Assumptions::of(&template),
            &drawn,
            &[("lease-validity".to_string(), Verdict::Invalid)],
        );
        assert!(drawn_only.1.is_empty());
        // The counterexample is classified by its own plan and names what was dropped.
        let mut cx = super::shrink::shrink_case(
            &template,
            &reduced,
            (1, "lease-validity"),
            (super::LockRef::Template, None),
            50,
            None,
        )
        .expect("the reduced case fails");
        let (scenario, case) = (cx.scenario.clone(), cx.case.clone());
        cx.assumptions.note_drawn(&scenario, &drawn.faults, &case);
        assert!(cx.assumptions.promised, "{:?}", cx.assumptions);
        let lines = cx.assumptions.lines().join("\n");
        assert!(
            lines.contains(&format!(
                "dropped while shrinking (the violation does not need them): {}",
                crash.describe()
            )),
            "{lines}"
        );
        assert!(lines.contains("the plan as drawn also broke masters"), "{lines}");
        assert!(lines.contains("IMPLEMENTATION BUG"), "{lines}");
    }
}
