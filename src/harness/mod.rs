//! Your Rust lock through everything the CLI does, in a plain `cargo test`.
//!
//! A [`Harness`] holds a named user lock (a [`LockClient`] built per client node) and, on
//! [`Harness::run`]:
//! - runs scenario files (a directory, or files) against their expectations and their
//!   `[explore]` blocks — the judgement of `lockstep ci` ([`crate::app::ci`]), with your lock;
//! - explores templates (a scenario file, or the standard template) over N seeds of generated
//!   faults with your lock, shrinking the first failures with your lock — optionally against a
//!   reference (a built-in preset or a second user lock: the differential oracle, which counts
//!   and shrinks the seeds where only your lock fails);
//! - writes the same report directory as `lockstep ci --report` (with the counterexample files
//!   in `counterexamples/`), and streams one JSON line per explored seed when asked;
//! - returns a [`HarnessRun`] whose [`HarnessRun::assert_safe`] fails the test with a readable
//!   message.
//!
//! Everything is named after your lock: summaries, report rows, counterexample files (which say
//! `[lock] rust_lock = "NAME"`, so that `lockstep run` refuses them and [`Harness::replay`]
//! replays them with your lock).
//!
//! The explorations take `lockstep explore`'s options in the CLI's own struct
//! ([`Harness::options`], [`Overrides`]; one at a time: [`Harness::kinds`],
//! [`Harness::faults_max`], [`Harness::strategy`], [`Harness::time_limit_s`]) and its
//! bounded-exhaustive mode ([`Harness::exhaustive`], [`Harness::search`]). Without a reference,
//! the gate is the classification `explore` prints ([`Gate`]): violations the lease's limit
//! explains are reported, implementation bugs fail. Every counterexample a failure names is
//! written: into the report directory, or [`Harness::counterexamples`], or
//! [`default_counterexample_dir`]. A lock that issues its own fencing tokens, or allows for clock
//! drift, says so ([`Harness::tokens`], [`Harness::drift_factor`]) and is judged by it.
//! docs/harness.md walks through them.
//!
//! [`Harness::bounded`] explores inside the assumptions of the template's lock (`explore
//! --bounded`, [`crate::explore::assumptions`]): a violation your lock shows under a plan that
//! kept them is a bug of your lock, not the lease's limit.
//!
//! ```no_run
//! use lockstep::prelude::*;
//! # struct MyLock { env: LockEnv }
//! # #[async_trait(?Send)]
//! # impl LockClient for MyLock {
//! #     async fn acquire(&self, _: &str, _: u64) -> Result<Grant, LockError> { Err(LockError::Busy) }
//! #     async fn extend(&self, _: &Grant, _: u64) -> Result<Grant, LockError> { Err(LockError::Busy) }
//! #     async fn release(&self, _: &Grant) -> Result<bool, LockError> { Ok(false) }
//! # }
//! let run = Harness::new("my-lock", |env| MyLock { env })
//!     .scenarios("scenarios")
//!     .explore_standard(200)
//!     .report("target/lockstep-report")
//!     .run()
//!     .unwrap();
//! run.assert_safe();
//! ```
//!
//! The build must have `--cfg tokio_unstable` (see `crate::run::require_tokio_unstable`): the
//! harness says how to set it instead of running non-deterministically.
//!
//! Leaves out: anything the application layer does not already do — the harness only chooses
//! the lock and collects the results (`crate::app`, `crate::explore`, `crate::report`).

use crate::app::ci::{run_ci, run_identity, CiOptions};
pub use crate::app::exploration::Overrides;
use crate::app::exploration::{explore_config, run_exploration, shrink_failures, JsonlSink, Locks, StandardSettings};
use crate::app::files::load_inputs;
pub use crate::app::search::SearchArgs;
pub use crate::app::AppError as HarnessError;
pub use crate::explore::exhaustive::{Bounds, ExhaustiveReport};
use crate::explore::shrink::{Counterexample, Shrunk};
use crate::explore::{ExploreConfig, ExploreSummary, LockChoice, UserLock};
use crate::gate::{CiRun, ExplorationOutcome};
use crate::lock::{LockClient, LockEnv};
pub use crate::model::fault::PlacementStrategy;
use crate::model::ExploreExpect;
pub use crate::model::LockTokens;
use crate::report::{prepare_out, write_report_with, Report};
use crate::run::{require_tokio_unstable, run_with_lock, LockFactory, ScenarioRun};
use crate::scenario::standard::standard_template;
use crate::scenario::Scenario;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

mod exhaustive;
mod output;

pub use exhaustive::ExhaustiveResult;
pub use output::default_counterexample_dir;

/// What an exploration of the harness expects by default: the resource is never damaged (no
/// stale write, no lost update). Mutual exclusion, token order and lease validity are counted
/// and reported but not required: a pause past the lease breaks every lease lock, and only
/// fencing keeps the resource safe then (use [`Harness::against_preset`] to tell your lock's
/// bugs from those limits).
pub(crate) const DEFAULT_EXPECT: &[(&str, ExploreExpect)] = &[
    ("stale-write", ExploreExpect::NoneInvalid),
    ("lost-update", ExploreExpect::NoneInvalid),
];

/// A template to explore.
#[derive(Debug, Clone)]
enum Template {
    /// A scenario file (its faults replaced by generated ones).
    File(PathBuf),
    /// The standard template (10 s, 3 clients).
    Standard(StandardSettings),
}

/// The differential oracle's reference.
#[derive(Debug, Clone)]
enum Reference {
    /// A built-in preset, by name (resolved per template: the watchdog's period is the TTL's
    /// third), or a scenario file's path.
    Preset(String),
    /// The lock of a scenario file.
    File(PathBuf),
    /// A second user lock.
    User(Result<UserLock, String>),
}

/// A Rust lock's trip through lockstep: scenarios, explorations, report. Build it with
/// [`Harness::new`], add what to run, then [`Harness::run`].
#[derive(Debug, Clone)]
pub struct Harness {
    lock: Result<UserLock, String>,
    reference: Option<Reference>,
    scenarios: Vec<PathBuf>,
    explorations: Vec<(Template, Overrides)>,
    expect: BTreeMap<String, ExploreExpect>,
    report: Option<PathBuf>,
    jsonl: Option<PathBuf>,
    jobs: Option<usize>,
    shrink: (usize, usize),
    fenced: bool,
    bounded: bool,
    progress: bool,
    options: Overrides,
    search: SearchArgs,
    gate: Gate,
    counterexample_dir: Option<PathBuf>,
    tokens: Option<LockTokens>,
    drift_factor: Option<f64>,
}

/// What fails an exploration of the harness that has no reference ([`Harness::against_preset`])
/// and is not bounded ([`Harness::bounded`]: then the implementation bugs are the gate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Gate {
    /// The classification `lockstep explore` prints (docs/assumptions.md): a seed fails the gate
    /// when it violates a checker while its plan broke none of the assumptions that checker
    /// needs — an implementation bug. Violations the lease's limit explains (a pause past the
    /// lease, a master losing the key) are counted and reported, not failed. The default.
    #[default]
    Classification,
    /// The per-checker expectations ([`Harness::expect`]; without a call to it, stale-write and
    /// lost-update `none-invalid`, `DEFAULT_EXPECT`): the gate before the classification was.
    Expectations,
}

/// Makes a factory of `make`'s lock (one lock object per client node).
fn factory_of<L, F>(make: Arc<F>) -> LockFactory
where
    L: LockClient + 'static,
    F: Fn(LockEnv) -> L + Send + Sync + 'static,
{
    crate::run::lock_factory(move |env| make(env))
}

impl Harness {
    /// A harness for the lock `name` (`[a-z0-9-]+`, not a built-in algorithm's name), built for
    /// each client node by `make` from the node's [`LockEnv`].
    pub fn new<L, F>(name: &str, make: F) -> Harness
    where
        L: LockClient + 'static,
        F: Fn(LockEnv) -> L + Send + Sync + 'static,
    {
        let make = Arc::new(make);
        Harness::with_factory(name, move || factory_of(make.clone()))
    }

    /// A harness for the lock `name` whose [`LockFactory`] `maker` builds — once on each worker
    /// thread, since a factory is not `Send` (build one with [`crate::run::lock_factory`], or
    /// hand over a factory that picks a lock per node). [`Harness::new`] is this with a closure.
    pub fn with_factory(name: &str, maker: impl Fn() -> LockFactory + Send + Sync + 'static) -> Harness {
        Harness {
            lock: UserLock::new(name, maker),
            reference: None,
            scenarios: Vec::new(),
            explorations: Vec::new(),
            expect: DEFAULT_EXPECT.iter().map(|(c, e)| (c.to_string(), *e)).collect(),
            report: None,
            jsonl: None,
            jobs: None,
            shrink: (crate::app::exploration::DEFAULT_SHRINKS, 300),
            fenced: false,
            bounded: false,
            progress: false,
            options: Overrides::default(),
            search: SearchArgs::default(),
            gate: Gate::default(),
            counterexample_dir: None,
            tokens: None,
            drift_factor: None,
        }
    }

    /// Runs these scenario files (a directory means its `*.toml` files) against their
    /// expectations, and explores their `[explore]` blocks, as `lockstep ci` does — with this
    /// lock.
    pub fn scenarios(mut self, path: impl Into<PathBuf>) -> Harness {
        self.scenarios.push(path.into());
        self
    }

    /// Explores the scenario file `path` as a template over seeds `0..seeds`.
    pub fn explore(mut self, path: impl Into<PathBuf>, seeds: u64) -> Harness {
        let overrides = Overrides {
            seeds: Some(seeds),
            ..Overrides::default()
        };
        self.explorations.push((Template::File(path.into()), overrides));
        self
    }

    /// Explores the standard template (one master, three clients, 10 s, a 2 s TTL; fenced when
    /// [`Harness::fenced`] was called) over seeds `0..seeds`.
    pub fn explore_standard(mut self, seeds: u64) -> Harness {
        let standard = StandardSettings::new(
            crate::model::Algorithm::TokenRelease,
            crate::model::Fencing::None,
            lockstep_sim::FencingMode::Unfenced,
            1,
        );
        let overrides = Overrides {
            seeds: Some(seeds),
            ..Overrides::default()
        };
        self.explorations.push((Template::Standard(standard), overrides));
        self
    }

    /// Fences the standard template: a token from `INCR` after each acquisition, and a strict
    /// resource that refuses a token not above the highest it accepted.
    pub fn fenced(mut self) -> Harness {
        self.fenced = true;
        self
    }

    /// Declares that this lock issues its own fencing tokens (each [`Grant`](crate::model::Grant)
    /// carries its `fencing_token`), and where they come from. The checkers judge the grants'
    /// tokens as they always do (token-order; stale-write and lost-update at a fencing
    /// resource); what the declaration changes is the judgement of a plan: with
    /// [`LockTokens::Counter`] a stop that loses the counter's master's latest writes makes
    /// tokens repeat — the lease's limit, not a bug, where an undeclared lock's repeat would be
    /// called one; with [`LockTokens::Durable`] a repeat is always the lock's bug. With
    /// [`Harness::fenced`], the standard template's resource checks the lock's tokens and no
    /// `INCR` token is added (`fenced` alone re-takes tokens by `INCR`, masking the lock's). A
    /// template file with `fencing = "incr"` is bad input then (two sources of tokens).
    pub fn tokens(mut self, tokens: LockTokens) -> Harness {
        self.tokens = Some(tokens);
        self
    }

    /// Declares the clock-drift factor this lock's validity computation allows for (as
    /// Redlock's `drift_factor`: the lock subtracts `factor × ttl + 2 ms`), in `[0, 1)`: the
    /// assumptions a plan is judged by (drift within the allowance is inside them, the validity
    /// budget is what is left) use it in place of the template algorithm's.
    pub fn drift_factor(mut self, factor: f64) -> Harness {
        self.drift_factor = Some(factor);
        self
    }

    /// Explores inside the assumptions of each template's lock (the CLI's `explore --bounded`,
    /// docs/assumptions.md): every generated plan is brought inside the faults that lock's
    /// safety argument tolerates (drift within its allowance, master restarts it survives, …)
    /// and random placement is used; each violating seed is told by the assumptions its plan
    /// broke. The gate is then the implementation: it fails when a checker the template's lock
    /// promises under a seed's plan answers invalid (with no assumption broken, all of them; with
    /// only timing broken — a pause past the lease — lease-validity, and the resource checkers
    /// when fenced), and only those seeds are shrunk. Per-checker expectations
    /// ([`Harness::expect`]) are then reported, not judged. With a reference
    /// ([`Harness::against_preset`]) the differential oracle stays the gate.
    ///
    /// Your lock is judged by the template's lock's assumptions, so explore a template whose
    /// `[lock]` is the kind of lock yours is (the standard template: a single-master lock with
    /// token-checked release, no drift allowance).
    ///
    /// ```no_run
    /// use lockstep::prelude::*;
    /// # struct MyLock { env: LockEnv }
    /// # #[async_trait(?Send)]
    /// # impl LockClient for MyLock {
    /// #     async fn acquire(&self, _: &str, _: u64) -> Result<Grant, LockError> { Err(LockError::Busy) }
    /// #     async fn extend(&self, _: &Grant, _: u64) -> Result<Grant, LockError> { Err(LockError::Busy) }
    /// #     async fn release(&self, _: &Grant) -> Result<bool, LockError> { Ok(false) }
    /// # }
    /// let run = Harness::new("my-lock", |env| MyLock { env })
    ///     .explore_standard(100)
    ///     .bounded()
    ///     .run()
    ///     .unwrap();
    /// let summary = &run.explorations[0].summary;
    /// let bounded = summary.assumptions.as_ref().expect("bounded counts");
    /// assert_eq!(bounded.seeds_bug, 0, "{}", run.message());
    /// run.assert_safe();
    /// ```
    pub fn bounded(mut self) -> Harness {
        self.bounded = true;
        self
    }

    /// Changes what every exploration of the harness expects of `checker` (see
    /// `DEFAULT_EXPECT`); `None` only reports it. The expectations become the gate
    /// ([`Gate::Expectations`]) in place of the classification.
    pub fn expect(mut self, checker: &str, expect: Option<ExploreExpect>) -> Harness {
        match expect {
            Some(e) => self.expect.insert(checker.to_string(), e),
            None => self.expect.remove(checker),
        };
        self.gate = Gate::Expectations;
        self
    }

    /// What fails an exploration without a reference (default: [`Gate::Classification`], as
    /// `lockstep explore` judges).
    pub fn gate(mut self, gate: Gate) -> Harness {
        self.gate = gate;
        self
    }

    /// The options of `lockstep explore` for every exploration of the harness, in the CLI's own
    /// struct: fault kinds (`--kinds`), their count (`--faults-max`), placement (`--strategy`),
    /// a time limit (`--time-limit`), `--lock-aware`, `--seed-range`, `--check-determinism`,
    /// `--overrun-shapes`, `--bounded`. The seeds given to [`Harness::explore`] and
    /// [`Harness::explore_standard`] win over `seeds` (a `seed_range` wins over both, as on the
    /// command line); `jobs` and `progress` are the harness's own ([`Harness::jobs`],
    /// [`Harness::progress`]). Out-of-range values are bad input when the harness runs, with the
    /// CLI's messages.
    pub fn options(mut self, options: Overrides) -> Harness {
        self.options = options;
        self
    }

    /// The fault kinds that may be generated (`explore --kinds`; `lockstep list` names them).
    pub fn kinds<S: AsRef<str>>(mut self, kinds: &[S]) -> Harness {
        self.options.kinds = Some(kinds.iter().map(|k| k.as_ref().to_string()).collect());
        self
    }

    /// At most this many generated faults per seed (`explore --faults-max`, 1 to 8).
    pub fn faults_max(mut self, faults_max: usize) -> Harness {
        self.options.faults_max = Some(faults_max);
        self
    }

    /// Where faults are placed (`explore --strategy`: anchored, random or mixed; default mixed
    /// for the standard template, random for a file's `[explore]` block).
    pub fn strategy(mut self, strategy: PlacementStrategy) -> Harness {
        self.options.strategy = Some(strategy);
        self
    }

    /// Stops starting new seeds (and shrinks) after this many wall seconds, per exploration
    /// (`explore --time-limit`).
    pub fn time_limit_s(mut self, seconds: u64) -> Harness {
        self.options.time_limit_s = Some(seconds);
        self
    }

    /// How the explorations search, in the CLI's struct (`--strategy`, `--exhaustive` and its
    /// bounds). With `exhaustive`, each template runs every schedule of the bounded-exhaustive
    /// grid instead of seeds ([`HarnessRun::exhaustive`]); the seed options (kinds, count, time
    /// limit, bounded) are then bad input, as on the command line.
    pub fn search(mut self, search: SearchArgs) -> Harness {
        if search.strategy.is_some() {
            self.options.strategy = search.strategy;
        }
        self.search = search;
        self
    }

    /// The bounded-exhaustive mode (`explore --exhaustive`) within `bounds`: see
    /// [`Harness::search`].
    pub fn exhaustive(mut self, bounds: Bounds) -> Harness {
        self.search.exhaustive = true;
        self.search.exhaustive_clients = Some(bounds.clients_max);
        self.search.exhaustive_faults = Some(bounds.faults_max);
        self.search.exhaustive_anchors = Some(bounds.anchors_max);
        self
    }

    /// Writes counterexample files here when no report directory is given (default:
    /// [`default_counterexample_dir`]).
    pub fn counterexamples(mut self, dir: impl Into<PathBuf>) -> Harness {
        self.counterexample_dir = Some(dir.into());
        self
    }

    /// The differential oracle against a built-in preset (`naive`, `token-release`, `watchdog`,
    /// `redlock`) — or, given the path of a scenario file (it exists, or ends in `.toml`), the
    /// lock of that file's `[lock]` (as `explore --against FILE`; see [`Harness::against_file`]):
    /// explorations also run it on the same seeds and fault plans, and the gate fails on the
    /// seeds where only this lock fails (shrunk while only this lock fails).
    pub fn against_preset(mut self, preset: &str) -> Harness {
        self.reference = Some(Reference::Preset(preset.to_string()));
        self
    }

    /// The differential oracle against the lock of the scenario file `path` (its `[lock]`
    /// algorithm and settings — a script lock's fixed twin, say; the template keeps its key,
    /// TTL and fencing), as `explore --against FILE`. A file that does not load, or whose lock
    /// does not fit the template, is bad input naming the file.
    pub fn against_file(mut self, path: impl Into<PathBuf>) -> Harness {
        self.reference = Some(Reference::File(path.into()));
        self
    }

    /// The differential oracle against a second user lock, `name`, built by `make`.
    pub fn against<L, F>(mut self, name: &str, make: F) -> Harness
    where
        L: LockClient + 'static,
        F: Fn(LockEnv) -> L + Send + Sync + 'static,
    {
        let make = Arc::new(make);
        self.reference = Some(Reference::User(UserLock::new(name, move || factory_of(make.clone()))));
        self
    }

    /// Writes the report directory (as `lockstep ci --report`) here, with the counterexample
    /// files in its `counterexamples/`.
    pub fn report(mut self, dir: impl Into<PathBuf>) -> Harness {
        self.report = Some(dir.into());
        self
    }

    /// Streams one JSON line per explored seed to this file (`docs/explore-jsonl.md`).
    pub fn jsonl(mut self, path: impl Into<PathBuf>) -> Harness {
        self.jsonl = Some(path.into());
        self
    }

    /// Worker threads (default: all cores).
    pub fn jobs(mut self, jobs: usize) -> Harness {
        self.jobs = Some(jobs);
        self
    }

    /// Shrinks one seed of each distinct bug of each exploration, at most `count` of them
    /// (`lockstep explore --shrink`: seeds grouped by cause, `crate::explore::groups`), `runs`
    /// scenario runs each at most (default: 4 bugs, 300 runs; before issue 50, the first
    /// `count` failing seeds, default 1).
    pub fn shrink(mut self, count: usize, runs: usize) -> Harness {
        self.shrink = (count, runs);
        self
    }

    /// Prints a line per scenario and exploration on stderr.
    pub fn progress(mut self) -> Harness {
        self.progress = true;
        self
    }

    /// The lock's name.
    pub fn name(&self) -> Result<&str, HarnessError> {
        self.lock
            .as_ref()
            .map(UserLock::name)
            .map_err(|e| HarnessError::BadInput(e.clone()))
    }

    fn user_lock(&self) -> Result<UserLock, HarnessError> {
        require_tokio_unstable(cfg!(tokio_unstable)).map_err(|e| HarnessError::BadInput(e.to_string()))?;
        self.lock.clone().map_err(HarnessError::BadInput)
    }

    /// The locks of one template: this lock, and the reference resolved for the template.
    fn locks(&self, subject: &UserLock, template: &Scenario) -> Result<Locks, HarnessError> {
        let reference = match &self.reference {
            None => None,
            // A preset's name, or a scenario file's path (as `explore --against`).
            Some(Reference::Preset(name)) => Some(LockChoice::against(name, template).map_err(|e| {
                let file = Path::new(name).exists() || name.ends_with(".toml");
                HarnessError::BadInput(match file {
                    true => format!("against {name}: expected a scenario file whose [lock] is the reference: {e}"),
                    false => format!("against: {e}"),
                })
            })?),
            Some(Reference::File(path)) => Some(LockChoice::from_file(path, template).map_err(|e| {
                HarnessError::BadInput(format!(
                    "against_file {}: expected a scenario file whose [lock] is the reference: {e}",
                    path.display()
                ))
            })?),
            Some(Reference::User(user)) => Some(LockChoice::User(
                user.clone()
                    .map_err(|e| HarnessError::BadInput(format!("against: {e}")))?,
            )),
        };
        Ok(Locks {
            subject: LockChoice::User(subject.clone()),
            reference,
        })
    }

    /// The options of one exploration: the harness's ([`Harness::options`]) with the
    /// exploration's seeds, the harness's jobs and progress, and bounded when either says so.
    fn overrides(&self, exploration: &Overrides) -> Overrides {
        Overrides {
            seeds: exploration.seeds.or(self.options.seeds),
            jobs: self.jobs,
            progress: self.progress,
            bounded: self.bounded || self.options.bounded || exploration.bounded,
            ..self.options.clone()
        }
    }

    /// The template, with what the lock declared about itself ([`Harness::tokens`],
    /// [`Harness::drift_factor`]) in its `[lock]`.
    fn template(&self, template: &Template, lock: &str) -> Result<Scenario, HarnessError> {
        let mut scenario = self.bare_template(template, lock)?;
        if let Some(factor) = self.drift_factor {
            if !(0.0..1.0).contains(&factor) {
                return Err(HarnessError::BadInput(format!(
                    "drift_factor {factor}: must be in [0, 1) (the fraction of the TTL the lock subtracts)"
                )));
            }
        }
        if let (Some(tokens), Template::File(path)) = (self.tokens, template) {
            if scenario.lock.fencing == crate::model::Fencing::Incr {
                return Err(HarnessError::BadInput(format!(
                    "{}: field `lock.fencing`: `incr` takes a token by INCR after each grant, and the lock declared its \
                     own ({} tokens): two sources of tokens; set `fencing = \"none\"` in the template",
                    path.display(),
                    tokens.name()
                )));
            }
        }
        scenario.lock.rust_tokens = self.tokens;
        scenario.lock.rust_drift_factor = self.drift_factor;
        Ok(scenario)
    }

    fn bare_template(&self, template: &Template, lock: &str) -> Result<Scenario, HarnessError> {
        let bad = |e: String| HarnessError::BadInput(e);
        match template {
            Template::File(path) => Scenario::from_file(path).map_err(|e| bad(e.to_string())),
            Template::Standard(standard) => {
                // The lock's own tokens checked at the resource: no INCR token on top.
                let (fencing, resource) = if self.fenced && self.tokens.is_some() {
                    (crate::model::Fencing::None, lockstep_sim::FencingMode::Strict)
                } else if self.fenced {
                    (crate::model::Fencing::Incr, lockstep_sim::FencingMode::Strict)
                } else {
                    (crate::model::Fencing::None, lockstep_sim::FencingMode::Unfenced)
                };
                let mut template = standard_template(standard.algorithm, fencing, resource, standard.tick_ms)
                    .map_err(|e| bad(e.to_string()))?;
                template.name = format!("{lock}-standard{}", if self.fenced { "-fenced" } else { "" });
                template.description = format!("The standard exploration profile with the Rust lock `{lock}`.");
                Ok(template)
            }
        }
    }

    /// Runs everything added, writes the report (when asked), and returns the results. An error
    /// only when something could not be done (bad input, a build without
    /// `--cfg tokio_unstable`, a file that cannot be written); what the runs found is in the
    /// [`HarnessRun`].
    pub fn run(&self) -> Result<HarnessRun, HarnessError> {
        let started = Instant::now();
        let subject = self.user_lock()?;
        let name = subject.name().to_string();
        if self.scenarios.is_empty() && self.explorations.is_empty() {
            // A gate over nothing must not pass.
            return Err(HarnessError::BadInput(
                "nothing to run: add scenarios (Harness::scenarios) or an exploration (Harness::explore)".into(),
            ));
        }
        // Bad input before anything runs: the files, the templates, the report directory.
        let inputs = if self.scenarios.is_empty() {
            Vec::new()
        } else {
            load_inputs(&self.scenarios)?
        };
        let templates = self
            .explorations
            .iter()
            .map(|(template, overrides)| {
                let scenario = self.template(template, &name)?;
                let (scenario, mut config) = explore_config(&scenario, &self.overrides(overrides))?;
                // A time limit keeps a reserve for the shrink that follows, once a bug is found.
                crate::app::exploration::keep_shrink_reserve(&mut config, self.shrink.0);
                let path = match template {
                    Template::File(path) => path.clone(),
                    Template::Standard(_) => PathBuf::from(format!("<{}>", scenario.name)),
                };
                let locks = self.locks(&subject, &scenario)?;
                Ok((path, scenario, config, locks))
            })
            .collect::<Result<Vec<(PathBuf, Scenario, ExploreConfig, Locks)>, HarnessError>>()?;
        if self.search.exhaustive {
            exhaustive::check_options(&self.options, self.bounded)?;
            self.search.bounds()?;
        }
        if let Some(dir) = &self.report {
            prepare_out(dir).map_err(HarnessError::BadInput)?;
        }
        // Counterexamples go to the report's `counterexamples/`, else to the directory asked
        // for, else to the default one: a file a failure names is always written.
        let counterexample_dir = match (&self.report, &self.counterexample_dir) {
            (Some(dir), _) => dir.join("counterexamples"),
            (None, Some(dir)) => dir.clone(),
            (None, None) => default_counterexample_dir(&name),
        };
        let options = CiOptions {
            jobs: self.jobs.unwrap_or_else(|| CiOptions::default().jobs),
            progress: self.progress,
            locks: Locks {
                subject: LockChoice::User(subject.clone()),
                reference: None,
            },
            ..CiOptions::default()
        };
        let mut ci = if inputs.is_empty() {
            CiRun {
                run_id: run_identity(&inputs, &options),
                shard: None,
                shard_set: None,
                scenarios: Vec::new(),
                explorations: Vec::new(),
                ttl_sweep: None,
                wall_s: 0.0,
            }
        } else {
            run_ci(&inputs, &options)?
        };
        let mut explorations = Vec::new();
        let mut exhaustive = Vec::new();
        // One stream for every exploration of the run (each line names its template).
        let mut sink = self.jsonl.as_deref().map(JsonlSink::create).transpose()?;
        for (path, template, config, locks) in templates {
            if self.search.exhaustive {
                let shrink = (self.shrink.0, self.shrink.1, counterexample_dir.as_path());
                exhaustive.push(exhaustive::run(
                    path,
                    &template,
                    &self.search,
                    self.jobs,
                    &locks,
                    shrink,
                )?);
                continue;
            }
            // The time limit covers shrinking too, as `explore --time-limit` does.
            let deadline = config.time_limit.and_then(|limit| Instant::now().checked_add(limit));
            let mut summary = run_exploration(&template, &config, &locks, sink.as_mut());
            // Its run and span, as `lockstep explore` stamps them: the seeds to the first bug
            // count from the span's start.
            crate::app::identity::stamp_run(&mut summary, &template, &config, &locks);
            let budget = (self.shrink.0, self.shrink.1, deadline);
            // Bounded without a reference: the gate is the implementation bugs, and only their
            // seeds are shrunk, each for a checker the lock promised under its plan.
            let judged_by_bugs = locks.reference.is_none() && config.assumptions.is_some();
            // Neither: the classification (by default) or the expectations.
            let classified = locks.reference.is_none() && !judged_by_bugs && self.gate == Gate::Classification;
            let to_shrink = if judged_by_bugs {
                Some(bug_seeds(&summary, config.assumptions.as_ref()))
            } else if classified {
                Some(classified_bug_seeds(&summary))
            } else {
                None
            };
            let shrunk: Vec<Shrunk> = shrink_failures(
                &template,
                &config.profile,
                to_shrink.as_ref().unwrap_or(&summary),
                &locks,
                budget,
                Some(&counterexample_dir),
                // Shrink only the failures the gate judges (a pause past the lease breaks mutual
                // exclusion for every lease lock: no counterexample to write for that).
                &|checker: &str| {
                    locks.reference.is_some()
                        || judged_by_bugs
                        || classified
                        || self.expect.get(checker) == Some(&ExploreExpect::NoneInvalid)
                },
            )
            .collect();
            // With a reference, the gate is the differential, bounded without one the
            // implementation bugs, else the classification's; the report row then only counts.
            let expect = if locks.reference.is_some() || judged_by_bugs || classified {
                BTreeMap::new()
            } else {
                self.expect.clone()
            };
            // (A bounded summary with a bug fails here, and in the report row alike.)
            let mut status = summary.status(crate::checker::NAMES, &expect, false);
            if classified && classified_bugs(&summary) > 0 && !status.is_failure() {
                status = crate::report::Status::Fail;
            }
            // The report row and the harness's gate are one judgement.
            let passed = !status.is_failure();
            ci.explorations.push(ExplorationOutcome {
                path: path.clone(),
                seeds: config.seeds.clone(),
                shard: config.shard,
                profile: config.profile.clone(),
                expect: expect.clone(),
                summary: summary.clone(),
                status,
            });
            explorations.push(ExplorationResult {
                template: template.name.clone(),
                file: path,
                expect,
                summary,
                shrunk,
                passed,
            });
        }
        sink.map(JsonlSink::finish).transpose()?;
        ci.wall_s = started.elapsed().as_secs_f64();
        let mut report = Report::build(&ci);
        // A row the classification gate failed (its judgement is the harness's, not the
        // expectations' the row recomputes its status from) fails in the report too.
        for (row, outcome) in report.explorations.iter_mut().zip(&ci.explorations) {
            if outcome.status.is_failure() && !row.status.is_failure() {
                row.status = outcome.status;
            }
        }
        report.finish();
        let mut written = Vec::new();
        if let Some(dir) = &self.report {
            written = write_report_with(&report, dir, &crate::app::ci::histories(&ci)).map_err(HarnessError::Io)?;
        }
        let shrunk = explorations.iter().flat_map(|e| &e.shrunk);
        for shrunk in shrunk.chain(exhaustive.iter().flat_map(|e| &e.shrunk)) {
            if let Shrunk::Found { file, toml, .. } = shrunk {
                output::write_counterexample(file, toml).map_err(HarnessError::Io)?;
                written.push(file.clone());
            }
        }
        Ok(HarnessRun {
            lock: name,
            report,
            explorations,
            exhaustive,
            report_dir: self.report.clone(),
            written,
        })
    }

    /// Replays a scenario file with this lock: a counterexample the harness wrote (its
    /// `[lock] rust_lock` must name this lock), or any scenario file (run with this lock in
    /// place of its algorithm). The run's `mismatches` compare it with the file's expectations.
    pub fn replay(&self, path: impl AsRef<Path>) -> Result<ScenarioRun, HarnessError> {
        let path = path.as_ref();
        let subject = self.user_lock()?;
        let scenario = Scenario::from_file(path).map_err(|e| HarnessError::BadInput(e.to_string()))?;
        if let Some(other) = scenario.lock.rust_lock.as_deref().filter(|n| *n != subject.name()) {
            return Err(HarnessError::BadInput(format!(
                "{}: field `lock.rust_lock`: the file needs the Rust lock `{other}`; this harness holds `{}`",
                path.display(),
                subject.name()
            )));
        }
        crate::explore::guarded(|| run_with_lock(&scenario, None, subject.factory()).map_err(|e| e.to_string()))
            .map_err(|e| HarnessError::RunFailure(format!("{}: {e}", path.display())))
    }
}

/// Why a bounded exploration failed: the seeds that violate a promised checker.
fn bounded_failure(summary: &ExploreSummary) -> Option<String> {
    let bounded = summary.assumptions.as_ref().filter(|b| b.seeds_bug > 0)?;
    let seeds: Vec<String> = bounded
        .first_violating
        .iter()
        .filter(|(_, _, _, bug)| *bug)
        .take(5)
        .map(|(seed, checkers, broken, _)| {
            let broke = if broken.is_empty() {
                "no assumption broken".to_string()
            } else {
                format!("broke {}", broken.join(", "))
            };
            format!("{seed} [{}] ({broke})", checkers.join(","))
        })
        .collect();
    Some(format!(
        "{} of {} seeds violate a checker the template's lock promises under their plan \
         (assumption-bounded: an implementation bug); first: {}",
        bounded.seeds_bug,
        summary.seeds_run,
        seeds.join("; ")
    ))
}

/// The seeds the classification calls implementation bugs (a violated checker whose
/// assumptions the seed's plan kept): what fails the default gate.
fn classified_bugs(summary: &ExploreSummary) -> u64 {
    summary.classified.as_ref().map_or(0, |c| c.seeds_bug)
}

/// `summary` as the classification gate shrinks it: its implementation-bug seeds only (none
/// when there are none: a violation the lease's limit explains gets no counterexample).
fn classified_bug_seeds(summary: &ExploreSummary) -> ExploreSummary {
    let mut kept = summary.clone();
    match kept.classified.as_ref().filter(|c| c.seeds_bug > 0) {
        Some(classified) => kept.first_failing = classified.first_bugs.clone(),
        None => {
            kept.first_failing.clear();
            kept.violation_groups = Default::default();
            if let Some(c) = kept.classified.as_mut() {
                c.first_bugs.clear();
            }
        }
    }
    kept
}

/// Why an exploration failed the classification gate: its implementation-bug seeds.
fn classified_failure(summary: &ExploreSummary) -> Option<String> {
    let classified = summary.classified.as_ref().filter(|c| c.seeds_bug > 0)?;
    let seeds: Vec<String> = classified
        .first_bugs
        .iter()
        .take(5)
        .map(|f| format!("{} [{}]", f.seed, f.checkers.join(",")))
        .collect();
    let ordered = summary.bug_groups.in_order(&[]);
    let classes: Vec<String> = ordered
        .iter()
        .take(5)
        .map(|c| format!("{} ({} seeds, first {})", c.class.describe(), c.seeds, c.first.seed))
        .collect();
    let classes = match classes.is_empty() {
        true => String::new(),
        false => format!("; {} classes of cause, first: {}", ordered.len(), classes.join("; ")),
    };
    Some(format!(
        "{} of {} seeds violate a checker while their plan broke none of the assumptions it needs (an \
         implementation bug; {} more violating seeds are the lease's limit, not failed); first: {}{classes}",
        classified.seeds_bug,
        summary.seeds_run,
        classified.seeds_violating_outside,
        seeds.join("; ")
    ))
}

/// `summary` with only its implementation-bug seeds kept, each listing only the checkers the
/// template's lock promised under its plan (what a bounded gate shrinks).
fn bug_seeds(
    summary: &ExploreSummary,
    assumptions: Option<&crate::explore::assumptions::Assumptions>,
) -> ExploreSummary {
    use crate::checker::CheckerName;
    let mut kept = summary.clone();
    let Some(bounded) = &summary.assumptions else {
        kept.first_failing.clear();
        return kept;
    };
    let fenced = assumptions.is_some_and(|a| a.fenced);
    let promised = |broken: &[String], checker: &str| {
        broken.is_empty()
            || broken.iter().all(|b| b == "timing")
                && (checker == CheckerName::LeaseValidity.as_str()
                    || fenced
                        && [
                            CheckerName::StaleWrite,
                            CheckerName::LostUpdate,
                            CheckerName::TokenOrder,
                        ]
                        .iter()
                        .any(|c| c.as_str() == checker))
    };
    kept.first_failing = summary
        .first_failing
        .iter()
        .filter_map(|failing| {
            let (_, _, broken, _) = bounded
                .first_violating
                .iter()
                .find(|(seed, _, _, bug)| *seed == failing.seed && *bug)?;
            let mut failing = failing.clone();
            failing.checkers.retain(|c| promised(broken, c));
            (!failing.checkers.is_empty()).then_some(failing)
        })
        .collect();
    kept
}

/// One exploration the harness ran.
#[derive(Debug, Clone)]
pub struct ExplorationResult {
    /// The template scenario's name.
    pub template: String,
    /// Its file (`<name>` for the standard template).
    pub file: PathBuf,
    /// What it was expected to find (empty with a reference: the gate is the differential).
    pub expect: BTreeMap<String, ExploreExpect>,
    /// What the seeds found (with a reference, `summary.differential` counts where only this
    /// lock failed).
    pub summary: ExploreSummary,
    /// The shrunk failures (with a reference: of seeds where only this lock failed).
    pub shrunk: Vec<Shrunk>,
    /// Whether it passed the gate.
    pub passed: bool,
}

impl ExplorationResult {
    /// The counterexamples found by shrinking.
    pub fn counterexamples(&self) -> impl Iterator<Item = (&Counterexample, &Path)> {
        self.shrunk.iter().filter_map(|s| match s {
            Shrunk::Found {
                counterexample, file, ..
            } => Some((counterexample.as_ref(), file.as_path())),
            Shrunk::NotReproduced { .. } | Shrunk::OutOfTime { .. } => None,
        })
    }
}

/// What [`Harness::run`] found.
#[derive(Debug, Clone)]
pub struct HarnessRun {
    /// The lock's name.
    pub lock: String,
    /// The report (as `lockstep ci` builds it): every scenario run and exploration, judged.
    pub report: Report,
    /// The explorations added with [`Harness::explore`] / [`Harness::explore_standard`].
    pub explorations: Vec<ExplorationResult>,
    /// The same templates in the bounded-exhaustive mode ([`Harness::exhaustive`]), in place
    /// of `explorations`.
    pub exhaustive: Vec<ExhaustiveResult>,
    /// The report directory, when one was written.
    pub report_dir: Option<PathBuf>,
    /// Every file written (report and counterexamples).
    pub written: Vec<PathBuf>,
}

impl HarnessRun {
    /// Whether everything passed: every scenario's expectations, every `[explore]` block's, and
    /// every exploration of the harness (no seed where only this lock fails, with a reference).
    pub fn passed(&self) -> bool {
        // An exhaustive-only run has no report row (and an empty report is never `ok`).
        let rowless = self.report.scenarios.is_empty() && self.report.explorations.is_empty();
        let report_ok = self.report.ok || (rowless && !self.exhaustive.is_empty());
        report_ok && self.explorations.iter().all(|e| e.passed) && self.exhaustive.iter().all(|e| e.passed)
    }

    /// One line per failure (empty when [`Self::passed`]).
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.report.scenarios {
            if s.status.is_failure() {
                let why: Vec<String> = s
                    .checks
                    .iter()
                    .filter(|c| c.status.is_failure())
                    .map(|c| {
                        format!(
                            "{} {} (expected {})",
                            c.checker,
                            c.verdict.name(),
                            c.expected.map_or("-", |v| v.name())
                        )
                    })
                    .collect();
                // A failure with no failing checker (a vacuous run, say) is told by its row's
                // explanation: the line never ends on an empty reason.
                let why = s.error.clone().unwrap_or_else(|| match why.is_empty() {
                    true => crate::report::headline::row_explanation(s),
                    false => why.join(", "),
                });
                out.push(format!("scenario {} ({}): {why}", s.name, s.file));
            }
        }
        for e in &self.report.explorations {
            if e.status.is_failure() {
                let why: Vec<String> = e
                    .checks
                    .iter()
                    .filter(|c| c.status.is_failure())
                    .map(|c| format!("{}: {}", c.checker, c.explanation))
                    .collect();
                let errors = e
                    .summary
                    .first_errors
                    .first()
                    .map(|x| format!("error on seed {}: {}", x.seed, x.message))
                    .or_else(|| bounded_failure(&e.summary));
                let why = match why.is_empty() {
                    true => classified_failure(&e.summary)
                        .or_else(|| e.summary.vacuity())
                        .unwrap_or_else(|| "no seed ran (a time limit shorter than one seed?)".to_string()),
                    false => why.join("; "),
                };
                out.push(format!(
                    "exploration {} ({}): {}",
                    e.name,
                    e.file,
                    errors.unwrap_or(why)
                ));
            }
        }
        for e in self.explorations.iter().filter(|e| !e.passed) {
            if let Some(d) = &e.summary.differential {
                let seeds: Vec<String> = d
                    .first_only_subject
                    .iter()
                    .take(5)
                    .map(|f| format!("{} [{}]", f.seed, f.checkers.join(",")))
                    .collect();
                out.push(format!(
                    "exploration {}: {} of {} seeds fail only with {} (not with {}); first: {}",
                    e.template,
                    d.seeds_only_subject,
                    e.summary.seeds_run,
                    self.lock,
                    d.reference,
                    seeds.join("; ")
                ));
                if e.summary.errors > 0 || d.reference_errors > 0 {
                    out.push(format!(
                        "exploration {}: {} seeds errored with {}, {} with {}",
                        e.template, e.summary.errors, self.lock, d.reference_errors, d.reference
                    ));
                }
            }
            for (cx, file) in e.counterexamples() {
                out.push(format!(
                    "  counterexample: seed {} violates {} with {} faults -> {}",
                    cx.seed,
                    cx.checker,
                    cx.case.faults.len(),
                    file.display()
                ));
            }
        }
        for e in self.exhaustive.iter().filter(|e| !e.passed) {
            out.extend(e.failure_lines());
        }
        out
    }

    /// A readable account: the lock, the counts, and every failure.
    pub fn message(&self) -> String {
        let mut out = format!(
            "lockstep harness, lock `{}`: {} ({} scenarios, {} explorations",
            self.lock,
            if self.passed() { "passed" } else { "FAILED" },
            self.report.scenarios.len(),
            self.report.explorations.len()
        );
        let seeds: u64 = self.explorations.iter().map(|e| e.summary.seeds_run).sum();
        out.push_str(&format!(", {seeds} seeds explored)"));
        if let Some(dir) = &self.report_dir {
            out.push_str(&format!("; report in {}", dir.display()));
        }
        // How soon each exploration found its first implementation bug, as `lockstep explore`
        // prints it.
        for e in &self.explorations {
            match e.summary.first_bug() {
                Some((seed, Some(n))) => out.push_str(&format!(
                    "\n  exploration {}: seeds to the first implementation bug: {n} (seed {seed})",
                    e.template
                )),
                Some((seed, None)) => out.push_str(&format!(
                    "\n  exploration {}: first implementation-bug seed: {seed}",
                    e.template
                )),
                None => {}
            }
        }
        for line in self.failures() {
            out.push_str(
                "
  ",
            );
            out.push_str(&line);
        }
        out
    }

    /// Panics with [`Self::message`] unless everything passed: the one line a test needs.
    #[track_caller]
    pub fn assert_safe(&self) {
        assert!(self.passed(), "{}", self.message());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::assumptions::Assumptions;

    use crate::scenario::standard::token_release_unfenced as standard;

    #[test]
    fn a_declared_drift_factor_is_the_assumptions_drift_allowance() {
        let mut template = standard();
        let before = Assumptions::of(&template);
        assert_eq!(before.drift_allowance_ms, 0);
        template.lock.rust_drift_factor = Some(0.01);
        let after = Assumptions::of(&template);
        // Redlock's rule: factor × TTL + 2 ms, out of the validity budget.
        assert_eq!(after.drift_allowance_ms, template.lock.ttl_ms / 100 + 2);
        assert!(after.drift_ppm_max > before.drift_ppm_max);
        assert_eq!(after.lease_left_ms + after.drift_allowance_ms, before.lease_left_ms);
    }

    #[test]
    fn declared_tokens_say_which_master_can_make_them_repeat() {
        let mut template = standard();
        assert_eq!(Assumptions::of(&template).fencing_master, None);
        template.lock.rust_tokens = Some(LockTokens::Counter);
        let counter = Assumptions::of(&template);
        assert_eq!(counter.fencing_master.as_ref(), Some(&template.lock.fencing_master));
        // The resource does not check them here: not fenced, but the counter is still known.
        assert!(!counter.fenced);
        template.lock.rust_tokens = Some(LockTokens::Durable);
        template.resource = lockstep_sim::FencingMode::Strict;
        let durable = Assumptions::of(&template);
        assert!(durable.fenced);
        assert_eq!(durable.fencing_master, None);
    }

    #[test]
    fn a_declaration_is_written_with_the_rust_lock_and_read_back() {
        let mut template = standard();
        template.lock.rust_lock = Some("my-lock".into());
        template.lock.rust_tokens = Some(LockTokens::Counter);
        template.lock.rust_drift_factor = Some(0.01);
        let toml = template.to_toml();
        assert!(toml.contains("rust_tokens = \"counter\""), "{toml}");
        assert!(toml.contains("rust_drift_factor = 0.01"), "{toml}");
        let back = Scenario::from_str(&toml, "<test>").unwrap();
        assert_eq!(back.lock, template.lock);
        // Without the lock it is about, a declaration is bad input naming its field.
        let orphan = toml.replace("rust_lock = \"my-lock\"\n", "");
        let err = Scenario::from_str(&orphan, "<test>").unwrap_err().to_string();
        assert!(
            err.contains("rust_tokens") && err.contains("only with `rust_lock`"),
            "{err}"
        );
        // A template holding a declaration but no Rust lock (the harness's, before a lock runs
        // it) writes a file that loads: the declaration goes only with the lock.
        let mut bare = template.clone();
        bare.lock.rust_lock = None;
        assert!(!bare.to_toml().contains("rust_tokens"));
        assert!(Scenario::from_str(&bare.to_toml(), "<test>").is_ok());
        let bad = toml.replace("rust_drift_factor = 0.01", "rust_drift_factor = 1.5");
        let err = Scenario::from_str(&bad, "<test>").unwrap_err().to_string();
        assert!(err.contains("rust_drift_factor") && err.contains("[0, 1)"), "{err}");
    }
}
