//! `lockstep mutants`: the mutation suite — every correct parent and every deliberately buggy
//! mutant of `mutants/catalogue.toml` explored on the same seeds under the parent's
//! assumption-bounded profile ([`crate::explore::assumptions`]).
//!
//! For each seed the generated case is bounded by the parent's assumptions, then classified: the
//! checkers the parent's safety argument still promises under that plan are the ones that count.
//! A parent is **clean** when no seed of its budget violates a promised checker. A mutant is
//! **killed** at the first seed where it violates a checker its parent keeps on the same seed:
//! a promised checker (a *judged* kill — the parent is correct there by its assumptions), or, on
//! a plan outside the timing assumption, any checker the parent's run of that seed keeps (a
//! *differential* kill). Exploring a mutant stops at its first kill; seeds to first kill are the
//! kill seed's position plus one.
//!
//! `ownership` is promised on every plan of the bounded profile, whatever assumption it broke:
//! it is judged from the masters' own key effects, without timing (a correct lock's commands
//! change only its own grant's key under any delay, pause, clock or restart), so a parent that
//! violates it is a false alarm and a mutant that violates it is killed by a judgement, not by a
//! difference from its parent's run.
//!
//! Besides the score the suite counts the **false alarms**: parent seeds that violated a checker
//! the parent was promised on that plan (each one fails the suite: a correct lock must not be
//! flagged), and reports the seeds to kill per mutant with their median, mean and maximum.
//!
//! Work is spread over `jobs` threads (mutants first, then parent seeds); results do not depend
//! on the number of jobs.
//!
//! Time is bounded where the input decides the cost (a mutant's script may loop until its
//! instruction budget on every attempt): every seed has a wall-clock bound ([`TimeBounds`],
//! `--seed-time-limit`, 60 s by default), and `--time-limit` bounds the whole suite as it bounds
//! `lockstep explore` (no seed starts after it; seeds still running stop at their next simulated
//! step and are not counted). A seed stopped either way is reported `timed out`: its mutant is
//! explored no further and is not killed, its parent is not clean — the suite does not pass.
//!
//! Leaves out shrinking (a kill names its seed: `lockstep run` of the
//! mutant's scenario with that seed's plan replays it).

use super::AppError;
use crate::checker::CheckerName;
use crate::explore::assumptions::{Assumptions, Broken};
use crate::explore::generate::{case_strategy, case_tree, ExploreCase};
use crate::explore::kinds::GenFault;
use crate::explore::kinds::Topology;
use crate::explore::{case_scenario, topology};
use crate::model::fault::FaultProfile;
use crate::model::Scenario;
use crate::model::Verdict;
use crate::run::expect::Outcome;
use crate::run::guard::run_guarded;
use crate::scenario::mutants::{self, Catalogue};
use proptest::strategy::BoxedStrategy;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The default seed budget per mutant (and per parent).
pub(crate) const DEFAULT_SEEDS: u64 = 500;

/// The default wall-clock bound of one seed, s: the catalogue's seeds take milliseconds, a mutant
/// whose script spins on every attempt would take hours.
pub const DEFAULT_SEED_TIME_LIMIT_S: u64 = 60;

/// `lockstep mutants`' options.
#[derive(Debug, Clone, clap::Args)]
#[command(
    about = "The mutation suite: every parent lock and every mutant of the catalogue explored on the same seeds \
             under the parent's assumption-bounded profile; prints the table and `mutation score K/N`. Exit 0: \
             every parent clean and every mutant killed; 1: not; 2: bad input"
)]
pub struct MutantsArgs {
    /// The catalogue of parents and mutants.
    #[arg(long, default_value = "mutants/catalogue.toml")]
    pub catalogue: PathBuf,
    /// Seeds per mutant (exploring a mutant stops at its first kill).
    #[arg(long, default_value_t = DEFAULT_SEEDS)]
    pub seeds: u64,
    /// Seeds per parent (default: as many as per mutant).
    #[arg(long)]
    pub parent_seeds: Option<u64>,
    /// Worker threads (default: all cores).
    #[arg(long, value_parser = super::args::at_least_one)]
    pub jobs: Option<usize>,
    /// Explore with today's standard profile instead (every default kind, unbounded, every
    /// checker judged; a kill is any checker the parent keeps on the same seed): the baseline.
    #[arg(long)]
    pub standard: bool,
    /// Only the mutants whose name contains this (every parent still runs).
    #[arg(long)]
    pub only: Option<String>,
    /// Also write the table (`mutants.md`) and the results (`mutants.json`) to this directory.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Stop starting new seeds after this many wall seconds; seeds still running then are
    /// stopped at their next simulated step and not counted (as `explore --time-limit`). What
    /// was cut short is reported `timed out`, and the suite does not pass.
    #[arg(long)]
    pub time_limit: Option<u64>,
    /// The most wall seconds one seed (a mutant's run and its parent's) may take; a seed past it
    /// is stopped and reported `timed out` (its mutant is explored no further).
    #[arg(long, default_value_t = DEFAULT_SEED_TIME_LIMIT_S)]
    pub seed_time_limit: u64,
}

/// The wall-clock bounds of a suite (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct TimeBounds {
    /// Stop starting seeds after this much wall time; seeds running then are stopped.
    pub time_limit: Option<Duration>,
    /// The most wall time one seed may take.
    pub seed_time_limit: Option<Duration>,
}

impl Default for TimeBounds {
    fn default() -> Self {
        TimeBounds {
            time_limit: None,
            seed_time_limit: Some(Duration::from_secs(DEFAULT_SEED_TIME_LIMIT_S)),
        }
    }
}

/// How to run the suite.
#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// Seeds per mutant, from 0.
    pub seeds: u64,
    /// Seeds per parent, from 0.
    pub parent_seeds: u64,
    /// Worker threads.
    pub jobs: usize,
    /// The baseline: the standard profile, no bounds, paired comparison only.
    pub standard: bool,
}

/// One parent's exploration.
#[derive(Debug, Clone, Serialize)]
pub struct ParentResult {
    /// The parent's name.
    pub name: String,
    /// Its algorithm.
    pub algorithm: String,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds whose plan kept every assumption (every checker promised).
    pub seeds_inside: u64,
    /// Seeds that violated a promised checker (each one a false alarm).
    pub dirty: Vec<Dirty>,
    /// Seeds that violated a promised checker: `dirty.len()`, the parent's false alarms.
    pub false_alarms: u64,
    /// Seeds that violated only checkers the plan's broken assumptions excuse (not alarms: a
    /// correct lock is not promised those there).
    pub excused: u64,
    /// Seeds that could not run, with the error.
    pub errors: Vec<(u64, String)>,
    /// Seeds not run or stopped by a time bound (not counted in `seeds`).
    pub timed_out: u64,
    /// The first seed a time bound stopped, and why.
    pub first_timed_out: Option<(u64, String)>,
}

impl ParentResult {
    /// No promised checker violated, no error, every seed run to its end.
    pub fn is_clean(&self) -> bool {
        self.dirty.is_empty() && self.errors.is_empty() && self.timed_out == 0
    }
}

/// A parent's seed that violated a promised checker.
#[derive(Debug, Clone, Serialize)]
pub struct Dirty {
    /// The seed.
    pub seed: u64,
    /// The checker.
    pub checker: String,
    /// The assumptions the plan broke.
    pub broken: Vec<Broken>,
    /// The plan's faults.
    pub faults: Vec<GenFault>,
}

/// How a mutant was killed.
#[derive(Debug, Clone, Serialize)]
pub struct Kill {
    /// The seed.
    pub seed: u64,
    /// Seeds explored up to and including it.
    pub seeds_to_kill: u64,
    /// The checkers the mutant violated and the parent kept.
    pub checkers: Vec<String>,
    /// `judged` (a promised checker) or `differential` (the parent's own run of the seed kept it).
    pub how: &'static str,
    /// The assumptions the plan broke (empty for a plan inside them).
    pub broken: Vec<Broken>,
    /// The plan's faults (with the seed, what `lockstep run` needs to replay the kill).
    pub faults: Vec<GenFault>,
}

/// One mutant's exploration.
#[derive(Debug, Clone, Serialize)]
pub struct MutantResult {
    /// The mutant's name.
    pub name: String,
    /// Its parent's name.
    pub parent: String,
    /// What it breaks.
    pub breaks: String,
    /// Where the bug class comes from.
    pub source: String,
    /// Its change to the parent's `[lock]`.
    pub change: String,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds explored up to and including the first kill (`None`: survived).
    pub seeds_to_kill: Option<u64>,
    /// The first kill, if any.
    pub kill: Option<Kill>,
    /// The first error, if a seed could not run.
    pub error: Option<(u64, String)>,
    /// The seed a time bound stopped (or would have started), and why: the mutant was explored
    /// no further (`seeds` counts the seeds run to their end).
    pub timed_out: Option<(u64, String)>,
}

/// The suite's numbers: the score, the false alarms and the seeds to kill.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Mutants killed.
    pub killed: usize,
    /// Mutants run.
    pub mutants: usize,
    /// Parent seeds that violated a promised checker, over every parent (must be 0).
    pub false_alarms: u64,
    /// Parent seeds run, over every parent.
    pub parent_seeds: u64,
    /// Parent seeds that violated only excused checkers.
    pub excused: u64,
    /// Seeds to kill over the killed mutants: median (the lower middle for an even count).
    pub seeds_to_kill_median: Option<u64>,
    /// Seeds to kill over the killed mutants: mean.
    pub seeds_to_kill_mean: Option<f64>,
    /// Seeds to kill over the killed mutants: the largest.
    pub seeds_to_kill_max: Option<u64>,
}

/// The whole suite's result.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteResult {
    /// The score, the false alarms and the seeds to kill.
    pub summary: Summary,
    /// Per parent.
    pub parents: Vec<ParentResult>,
    /// Per mutant.
    pub mutants: Vec<MutantResult>,
    /// Wall time, s.
    pub wall_s: f64,
}

impl Summary {
    fn of(parents: &[ParentResult], mutants: &[MutantResult]) -> Summary {
        let mut kills: Vec<u64> = mutants.iter().filter_map(|m| m.seeds_to_kill).collect();
        kills.sort_unstable();
        Summary {
            killed: kills.len(),
            mutants: mutants.len(),
            false_alarms: parents.iter().map(|p| p.false_alarms).sum(),
            parent_seeds: parents.iter().map(|p| p.seeds).sum(),
            excused: parents.iter().map(|p| p.excused).sum(),
            seeds_to_kill_median: kills.get(kills.len().saturating_sub(1) / 2).copied(),
            seeds_to_kill_mean: (!kills.is_empty()).then(|| kills.iter().sum::<u64>() as f64 / kills.len() as f64),
            seeds_to_kill_max: kills.last().copied(),
        }
    }
}

impl MutantResult {
    /// Why a mutant was not killed, for the table: a time bound, an error, or nothing.
    fn not_killed_why(&self) -> String {
        if let Some((seed, why)) = &self.timed_out {
            return format!("timed out at seed {seed}: {why}");
        }
        self.error
            .as_ref()
            .map_or("-".into(), |(s, e)| format!("seed {s}: {e}"))
    }
}

impl SuiteResult {
    /// Mutants killed.
    pub fn killed(&self) -> usize {
        self.mutants.iter().filter(|m| m.kill.is_some()).count()
    }

    /// Parent seeds that violated a promised checker, over every parent.
    pub fn false_alarms(&self) -> u64 {
        self.parents.iter().map(|p| p.false_alarms).sum()
    }

    /// Every parent clean and every mutant killed.
    pub fn passed(&self) -> bool {
        self.parents.iter().all(ParentResult::is_clean) && self.killed() == self.mutants.len()
    }

    /// The false-alarm, seeds-to-kill and score lines (the end of [`render`](Self::render)).
    fn summary_lines(&self) -> Vec<String> {
        let s = &self.summary;
        let mut lines = vec![format!(
            "false alarms on the correct parents: {} over {} parent seeds ({} more seeds violated only checkers \
             their plan's broken assumptions excuse)",
            s.false_alarms, s.parent_seeds, s.excused
        )];
        lines.push(
            match (s.seeds_to_kill_median, s.seeds_to_kill_mean, s.seeds_to_kill_max) {
                (Some(median), Some(mean), Some(max)) => format!(
                    "seeds to kill over the {} killed mutants: median {median}, mean {mean:.1}, max {max}",
                    s.killed
                ),
                _ => "seeds to kill: no mutant killed".to_string(),
            },
        );
        let mutants_cut = self.mutants.iter().filter(|m| m.timed_out.is_some()).count();
        let parent_seeds_cut: u64 = self.parents.iter().map(|p| p.timed_out).sum();
        if mutants_cut > 0 || parent_seeds_cut > 0 {
            lines.push(format!(
                "timed out: {mutants_cut} mutants and {parent_seeds_cut} parent seeds were stopped by a time bound \
                 (--time-limit, --seed-time-limit): the suite does not pass"
            ));
        }
        lines.push(format!(
            "mutation score {}/{}  ({:.1} s)",
            self.killed(),
            self.mutants.len(),
            self.wall_s
        ));
        lines
    }

    /// The table, the parents' lines, the false alarms, the seeds to kill and `mutation score K/N`.
    pub fn render(&self) -> String {
        let name_w = self.mutants.iter().map(|m| m.name.len()).max().unwrap_or(0).max(6);
        let parent_w = self
            .mutants
            .iter()
            .map(|m| m.parent.len())
            .chain(self.parents.iter().map(|p| p.name.len()))
            .max()
            .unwrap_or(0)
            .max(6);
        let mut out = String::from("mutation suite\n");
        out.push_str(&format!(
            "  {:<name_w$} {:<parent_w$} {:<7} {:>10} {:>14}  {:<13} {}\n",
            "mutant", "parent", "killed", "kill seed", "seeds to kill", "how", "checker"
        ));
        for m in &self.mutants {
            let (killed, seed, seeds, how, checker) = match &m.kill {
                Some(k) => (
                    "yes",
                    k.seed.to_string(),
                    k.seeds_to_kill.to_string(),
                    k.how,
                    k.checkers.join(","),
                ),
                None => (
                    "NO",
                    "-".to_string(),
                    format!("> {}", m.seeds),
                    if m.timed_out.is_some() { "timed out" } else { "-" },
                    m.not_killed_why(),
                ),
            };
            out.push_str(&format!(
                "  {:<name_w$} {:<parent_w$} {:<7} {:>10} {:>14}  {:<13} {}\n",
                m.name, m.parent, killed, seed, seeds, how, checker
            ));
        }
        out.push_str("  parents (every promised checker kept on every seed):\n");
        for p in &self.parents {
            let verdict = if p.is_clean() { "clean" } else { "NOT CLEAN" };
            out.push_str(&format!(
                "    {:<parent_w$} {:<14} {verdict}: {} seeds, {} inside every assumption, {} false alarm{}, {} excused",
                p.name,
                p.algorithm,
                p.seeds,
                p.seeds_inside,
                p.false_alarms,
                if p.false_alarms == 1 { "" } else { "s" },
                p.excused
            ));
            if let Some(d) = p.dirty.first() {
                let why: Vec<&str> = d.broken.iter().map(|b| b.detail.as_str()).collect();
                let plan = serde_json::to_string(&d.faults).unwrap_or_default();
                out.push_str(&format!(
                    "; seed {} violates {} (broken: [{}]; plan {plan})",
                    d.seed,
                    d.checker,
                    why.join("; ")
                ));
            }
            if let Some((seed, error)) = p.errors.first() {
                out.push_str(&format!("; seed {seed}: {error}"));
            }
            if let Some((seed, why)) = &p.first_timed_out {
                out.push_str(&format!(
                    "; {} seeds timed out, the first seed {seed}: {why}",
                    p.timed_out
                ));
            }
            out.push('\n');
        }
        for line in self.summary_lines() {
            out.push_str(&format!("  {line}\n"));
        }
        out
    }

    /// `mutants.md`: the score lines, the mutants' table (with what each breaks) and the parents'
    /// table, in Markdown.
    pub fn render_markdown(&self) -> String {
        let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
        let mut out = String::from("# Mutation suite\n\n");
        for line in self.summary_lines() {
            out.push_str(&format!("- {line}\n"));
        }
        out.push_str(
            "\n| mutant | parent | killed at seed | seeds to kill | how | checkers | breaks |\n\
             |---|---|---:|---:|---|---|---|\n",
        );
        for m in &self.mutants {
            let (seed, seeds, how, checkers) = match &m.kill {
                Some(k) => (
                    k.seed.to_string(),
                    k.seeds_to_kill.to_string(),
                    k.how.to_string(),
                    k.checkers.join(", "),
                ),
                None => (
                    if m.timed_out.is_some() { "timed out" } else { "survived" }.to_string(),
                    format!("> {}", m.seeds),
                    "-".to_string(),
                    m.not_killed_why(),
                ),
            };
            out.push_str(&format!(
                "| `{}` | {} | {seed} | {seeds} | {how} | {} | {} |\n",
                m.name,
                m.parent,
                cell(&checkers),
                cell(&m.breaks)
            ));
        }
        out.push_str(
            "\n| parent | algorithm | verdict | seeds | inside every assumption | false alarms | excused |\n\
             |---|---|---|---:|---:|---:|---:|\n",
        );
        for p in &self.parents {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                p.name,
                p.algorithm,
                if p.is_clean() { "clean" } else { "NOT CLEAN" },
                p.seeds,
                p.seeds_inside,
                p.false_alarms,
                p.excused
            ));
        }
        out.push_str(&format!("\n```text\n{}```\n", self.render()));
        out
    }
}

/// What one seed of one lock did under the parent's assumptions.
struct Judged {
    /// Checkers judged invalid.
    violated: Vec<CheckerName>,
    /// Checkers the parent's assumptions promise under this plan.
    promised: Vec<CheckerName>,
    /// The assumptions the plan broke.
    broken: Vec<Broken>,
    /// The plan's faults.
    faults: Vec<GenFault>,
}

/// One parent as explored: its template, assumptions, topology and profile.
struct Explored<'c> {
    template: &'c Scenario,
    assumptions: Assumptions,
    standard: bool,
    topology: Topology,
    profile: FaultProfile,
}

impl Explored<'_> {
    /// The bounded case of `seed`.
    fn case(&self, strategy: &BoxedStrategy<ExploreCase>, seed: u64) -> ExploreCase {
        let case = case_tree(seed, strategy).current();
        if self.standard {
            case
        } else {
            self.assumptions.bound(case)
        }
    }

    /// Runs `lock` (the parent's template or a mutant's) on `seed`'s bounded case.
    fn judge(&self, lock: &Scenario, strategy: &BoxedStrategy<ExploreCase>, seed: u64) -> Result<Judged, String> {
        let case = self.case(strategy, seed);
        let run = run_guarded(&case_scenario(lock, &case, seed), None)?;
        let violated = run
            .results
            .iter()
            .filter(|r| r.verdict == Verdict::Invalid)
            .filter_map(|r| r.checker.parse().ok())
            .collect();
        let broken = self.assumptions.classify(&case);
        // The baseline promises nothing: only the paired comparison kills. The bounded profile
        // promises `ownership` on every plan: it is timing-free (see the module docs).
        let promised = if self.standard {
            Vec::new()
        } else {
            let mut promised = self.assumptions.promised(&broken);
            if !promised.contains(&CheckerName::Ownership) {
                promised.push(CheckerName::Ownership);
            }
            promised
        };
        Ok(Judged {
            violated,
            promised,
            broken,
            faults: case.faults,
        })
    }
}

enum Task {
    Mutant(usize),
    ParentSeed(usize, u64),
}

/// The suite's time bounds at work: the suite's deadline, and each worker's seed in flight with
/// its deadline and the stop flag its run watches (`lockstep_history::stop`). A watchdog (the thread
/// that started the workers) sets the flags ([`Watch::tick`]); the world stops at its next step.
struct Watch {
    bounds: TimeBounds,
    /// When the suite's time limit passes.
    suite_deadline: Option<Instant>,
    /// Set once the suite's time limit has passed.
    suite_passed: AtomicBool,
    /// Per worker: its seed in flight, if any.
    slots: Mutex<Vec<Option<InFlight>>>,
}

/// A seed in flight: its deadline (none without a per-seed bound), and its runs' stop flag.
type InFlight = (Option<Instant>, Arc<AtomicBool>);

/// Why a time bound stopped a seed: its words, kept to tell a stopped run from a failed one.
enum Ran<T> {
    Done(T),
    TimedOut(String),
}

impl Watch {
    fn new(bounds: TimeBounds, started: Instant, workers: usize) -> Self {
        Watch {
            bounds,
            // A limit past what the clock can represent is no limit (issue 48: the sum overflowed).
            suite_deadline: bounds.time_limit.and_then(|limit| started.checked_add(limit)),
            suite_passed: AtomicBool::new(false),
            slots: Mutex::new(vec![None; workers]),
        }
    }

    /// Whether the suite's time limit has passed (no seed may start).
    fn suite_over(&self) -> bool {
        self.suite_passed.load(Ordering::Relaxed) || self.suite_deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Why seeds stop now.
    fn why(&self) -> String {
        if self.suite_over() {
            format!(
                "not run to its end: the suite's --time-limit of {} s passed",
                self.bounds.time_limit.map_or(0, |l| l.as_secs())
            )
        } else {
            format!(
                "ran past its bound of {} s of wall time (--seed-time-limit)",
                self.bounds.seed_time_limit.map_or(0, |l| l.as_secs())
            )
        }
    }

    /// Runs one seed's work `f` on `worker` under the bounds: `TimedOut` when the suite's limit
    /// had passed before it started, or when a bound stopped one of its runs (`f`'s runs
    /// answer `Err` with [`lockstep_history::stop::STOPPED`] then).
    fn seed<T>(&self, worker: usize, f: impl FnOnce() -> Result<T, String>) -> Ran<Result<T, String>> {
        if self.suite_over() {
            return Ran::TimedOut(self.why());
        }
        let flag = Arc::new(AtomicBool::new(false));
        let deadline = self
            .bounds
            .seed_time_limit
            .and_then(|limit| Instant::now().checked_add(limit));
        self.slot(worker, Some((deadline, flag.clone())));
        let out = {
            let _stop = lockstep_history::stop::stop_when(flag.clone());
            f()
        };
        self.slot(worker, None);
        match out {
            Err(message) if flag.load(Ordering::Relaxed) && message.contains(lockstep_history::stop::STOPPED) => {
                Ran::TimedOut(self.why())
            }
            out => Ran::Done(out),
        }
    }

    fn slot(&self, worker: usize, value: Option<InFlight>) {
        if let Some(slot) = self.slots.lock().unwrap_or_else(|e| e.into_inner()).get_mut(worker) {
            *slot = value;
        }
    }

    /// Sets the stop flag of every seed past its deadline, and of every seed once the suite's
    /// limit has passed.
    fn tick(&self) {
        let now = Instant::now();
        let suite = self.suite_deadline.is_some_and(|d| now >= d);
        if suite {
            self.suite_passed.store(true, Ordering::Relaxed);
        }
        for (deadline, flag) in self.slots.lock().unwrap_or_else(|e| e.into_inner()).iter().flatten() {
            if suite || deadline.is_some_and(|d| now >= d) {
                flag.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// Runs the suite of `catalogue` under the default [`TimeBounds`] (each seed at most
/// [`DEFAULT_SEED_TIME_LIMIT_S`] of wall time, no limit on the whole).
pub fn run_suite(catalogue: &Catalogue, options: &SuiteOptions) -> SuiteResult {
    run_suite_bounded(catalogue, options, TimeBounds::default())
}

/// Runs the suite of `catalogue` under `bounds`.
pub fn run_suite_bounded(catalogue: &Catalogue, options: &SuiteOptions, bounds: TimeBounds) -> SuiteResult {
    let started = Instant::now();
    let explored: Vec<Explored<'_>> = catalogue
        .parents
        .iter()
        .map(|p| {
            let assumptions = Assumptions::of(&p.scenario);
            let profile = if options.standard {
                FaultProfile::default()
            } else {
                assumptions.profile(&p.kinds, p.latency_ms_max)
            };
            Explored {
                standard: options.standard,
                template: &p.scenario,
                topology: topology(&p.scenario),
                assumptions,
                profile,
            }
        })
        .collect();
    let parent_of: Vec<usize> = catalogue
        .mutants
        .iter()
        .map(|m| catalogue.parents.iter().position(|p| p.name == m.parent).unwrap_or(0))
        .collect();
    let mut tasks: Vec<Task> = (0..catalogue.mutants.len()).map(Task::Mutant).collect();
    for p in 0..catalogue.parents.len() {
        tasks.extend((0..options.parent_seeds).map(|seed| Task::ParentSeed(p, seed)));
    }
    let parents = Mutex::new(
        catalogue
            .parents
            .iter()
            .map(|p| ParentResult {
                name: p.name.clone(),
                algorithm: p.scenario.lock.algorithm.name().to_string(),
                seeds: 0,
                seeds_inside: 0,
                dirty: Vec::new(),
                false_alarms: 0,
                excused: 0,
                errors: Vec::new(),
                timed_out: 0,
                first_timed_out: None,
            })
            .collect::<Vec<_>>(),
    );
    let mutant_results: Mutex<Vec<Option<MutantResult>>> = Mutex::new(vec![None; catalogue.mutants.len()]);
    let next = AtomicUsize::new(0);
    let workers = options.jobs.max(1);
    let watch = Watch::new(bounds, started, workers);
    let finished = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (watch, finished, next, tasks, explored) = (&watch, &finished, &next, &tasks, &explored);
            let (parents, mutant_results, parent_of) = (&parents, &mutant_results, &parent_of);
            scope.spawn(move || {
                // Counted however the worker ends, so the watchdog below always returns.
                struct Finished<'a>(&'a AtomicUsize);
                impl Drop for Finished<'_> {
                    fn drop(&mut self) {
                        self.0.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let _finished = Finished(finished);
                // Strategies are not `Send`: each worker builds its own, per parent.
                let strategies: Vec<BoxedStrategy<ExploreCase>> = explored
                    .iter()
                    .map(|e| case_strategy(&e.topology, &e.profile))
                    .collect();
                loop {
                    let Some(task) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    match *task {
                        Task::Mutant(i) => {
                            let p = parent_of[i];
                            let bounded = (watch, worker);
                            let result =
                                explore_mutant(catalogue, i, &explored[p], &strategies[p], options.seeds, bounded);
                            mutant_results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
                        }
                        Task::ParentSeed(p, seed) => {
                            let e = &explored[p];
                            let judged = watch.seed(worker, || e.judge(e.template, &strategies[p], seed));
                            let mut parents = parents.lock().unwrap_or_else(|e| e.into_inner());
                            let result = &mut parents[p];
                            let judged = match judged {
                                Ran::Done(judged) => judged,
                                Ran::TimedOut(why) => {
                                    result.timed_out += 1;
                                    if result.first_timed_out.as_ref().is_none_or(|(first, _)| seed < *first) {
                                        result.first_timed_out = Some((seed, why));
                                    }
                                    continue;
                                }
                            };
                            result.seeds += 1;
                            match judged {
                                Ok(j) => {
                                    result.seeds_inside += u64::from(j.broken.is_empty());
                                    // The baseline counts every violation: it shows what the profile removes.
                                    let counted = if options.standard {
                                        j.violated.first()
                                    } else {
                                        j.violated.iter().find(|c| j.promised.contains(c))
                                    };
                                    if counted.is_none() && !j.violated.is_empty() {
                                        result.excused += 1;
                                    }
                                    if let Some(c) = counted {
                                        result.false_alarms += 1;
                                        result.dirty.push(Dirty {
                                            seed,
                                            checker: c.as_str().to_string(),
                                            broken: j.broken,
                                            faults: j.faults,
                                        });
                                        result.dirty.sort_by_key(|d| d.seed);
                                    }
                                }
                                Err(e) => {
                                    result.errors.push((seed, e));
                                    result.errors.sort();
                                }
                            }
                        }
                    }
                }
            });
        }
        // The watchdog: the bounds are checked every 10 ms until every worker has finished.
        while finished.load(Ordering::Relaxed) < workers {
            watch.tick();
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let mutants: Vec<MutantResult> = mutant_results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect();
    let parents = parents.into_inner().unwrap_or_else(|e| e.into_inner());
    SuiteResult {
        summary: Summary::of(&parents, &mutants),
        parents,
        mutants,
        wall_s: started.elapsed().as_secs_f64(),
    }
}

/// Explores mutant `i` until its first kill or `seeds` seeds, each seed on `worker` under
/// `watch`'s bounds; a seed they stop ends the exploration (`timed_out`).
fn explore_mutant(
    catalogue: &Catalogue,
    i: usize,
    parent: &Explored<'_>,
    strategy: &BoxedStrategy<ExploreCase>,
    seeds: u64,
    (watch, worker): (&Watch, usize),
) -> MutantResult {
    let mutant = &catalogue.mutants[i];
    let mut result = MutantResult {
        name: mutant.name.clone(),
        parent: mutant.parent.clone(),
        breaks: mutant.breaks.clone(),
        source: mutant.source.clone(),
        change: mutant.change.clone(),
        seeds: 0,
        seeds_to_kill: None,
        kill: None,
        error: None,
        timed_out: None,
    };
    for seed in 0..seeds {
        // The mutant's run and, when it violates a checker, the parent's on the same seed (what
        // the parent keeps, the mutant must not): one seed, one bound.
        let ran = watch.seed(worker, || {
            let judged = parent.judge(&mutant.scenario, strategy, seed)?;
            let kept = if judged.violated.is_empty() {
                None
            } else {
                Some(parent.judge(parent.template, strategy, seed))
            };
            Ok((judged, kept))
        });
        let (judged, kept) = match ran {
            Ran::TimedOut(why) => {
                result.timed_out = Some((seed, why));
                break;
            }
            Ran::Done(Ok(done)) => done,
            Ran::Done(Err(e)) => {
                result.seeds = seed + 1;
                result.error.get_or_insert((seed, e));
                continue;
            }
        };
        result.seeds = seed + 1;
        // A parent's run stopped by the bound stops the mutant's exploration too.
        if let Some(Err(message)) = &kept {
            if message.contains(lockstep_history::stop::STOPPED) {
                result.seeds = seed;
                result.timed_out = Some((seed, watch.why()));
                break;
            }
        }
        let Some(Ok(kept_by_parent)) = kept else {
            continue;
        };
        let fresh: Vec<CheckerName> = judged
            .violated
            .iter()
            .copied()
            .filter(|c| !kept_by_parent.violated.contains(c))
            .collect();
        let promised: Vec<CheckerName> = fresh.iter().copied().filter(|c| judged.promised.contains(c)).collect();
        let only_timing = parent.standard || judged.promised.contains(&CheckerName::LeaseValidity);
        let (checkers, how) = if !promised.is_empty() {
            (promised, "judged")
        } else if only_timing && !fresh.is_empty() {
            (fresh, "differential")
        } else {
            continue;
        };
        result.seeds_to_kill = Some(seed + 1);
        result.kill = Some(Kill {
            seed,
            seeds_to_kill: seed + 1,
            checkers: checkers.iter().map(|c| c.as_str().to_string()).collect(),
            how,
            broken: judged.broken,
            faults: judged.faults,
        });
        break;
    }
    result
}

/// The files `lockstep mutants --report DIR` writes into DIR.
pub const REPORT_FILES: [&str; 2] = ["mutants.md", "mutants.json"];

/// `lockstep mutants`: loads the catalogue, runs the suite, prints the table. Returns the
/// outcome and the contents of [`REPORT_FILES`] (the CLI writes them).
pub fn main(args: &MutantsArgs) -> Result<(Outcome, [String; 2]), AppError> {
    if args.seeds == 0 || args.parent_seeds == Some(0) {
        return Err(AppError::BadInput(
            "--seeds and --parent-seeds must be at least 1".into(),
        ));
    }
    let mut catalogue = mutants::load(&args.catalogue).map_err(|e| AppError::BadInput(e.to_string()))?;
    if let Some(only) = &args.only {
        catalogue.mutants.retain(|m| m.name.contains(only.as_str()));
        if catalogue.mutants.is_empty() {
            // A score over no mutants would be a gate over nothing.
            return Err(AppError::BadInput(format!(
                "--only {only}: no mutant's name contains it"
            )));
        }
    }
    if args.time_limit == Some(0) {
        return Err(AppError::BadInput(
            "--time-limit 0: no seed could run (need at least 1 second)".into(),
        ));
    }
    if args.seed_time_limit == 0 {
        return Err(AppError::BadInput(
            "--seed-time-limit 0: no seed could run (need at least 1 second)".into(),
        ));
    }
    let bounds = TimeBounds {
        time_limit: args.time_limit.map(Duration::from_secs),
        seed_time_limit: Some(Duration::from_secs(args.seed_time_limit)),
    };
    let options = SuiteOptions {
        seeds: args.seeds,
        parent_seeds: args.parent_seeds.unwrap_or(args.seeds),
        jobs: args
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        standard: args.standard,
    };
    let result = run_suite_bounded(&catalogue, &options, bounds);
    let text = result.render();
    crate::emit::stdout(&text).map_err(AppError::Io)?;
    // Plain data with string keys: serialisation cannot fail.
    let json = serde_json::to_string_pretty(&result).unwrap_or_default();
    Ok((Outcome::held_if(result.passed()), [result.render_markdown(), json]))
}
