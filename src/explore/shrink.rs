//! Shrinking a failing seed to a minimal counterexample, and writing it as a scenario file.
//!
//! First proptest's own shrinking runs over the seed's value tree (fewer faults, shorter pauses,
//! smaller jumps), keeping every step that still fails the same checker. Then a greedy pass
//! removes single faults and drops clients while the failure persists. The result is written as
//! an explicit scenario (faults spelled out, the violation as the expected verdict) that
//! `lockstep run` replays to the same history digest.
//!
//! Every run uses the exploration's lock ([`LockRef`]): the template's algorithm, a built-in
//! preset, or a user's Rust lock — whose counterexample names it in `[lock] rust_lock`, so that
//! only a harness holding that lock replays it. With a reference lock (the differential
//! oracle), a case "still fails" only while the subject violates the checker and the reference
//! does not.
//!
//! Like a proptest regression file, the file records what *should* hold — every checker the
//! run violated is expected `valid` — so it fails (`lockstep run`, `lockstep ci`) until the lock
//! is fixed, and adopting it into `scenarios/` guards against the bug's return.
//!
//! Every counterexample also says which of the lock's assumptions each of its faults broke, as
//! the assumption-bounded profile classifies plans ([`AssumptionNotes`], from
//! [`super::assumptions::Assumptions`]), and whether a correct lock keeps the violated checker
//! under the whole plan: a clock jump that lets a master lose its key early is the lease's limit,
//! not the lock's bug; a violation under a plan that broke nothing is an implementation bug.

use super::assumptions::{Assumption, Assumptions, Broken};
use super::generate::{case_strategy, case_tree, ExploreCase};
use super::subject::{LockRef, PreparedLock};
use super::{case_scenario, topology};
use crate::explore::kinds::GenFault;
use crate::model::fault::FaultProfile;
use crate::model::Verdict;
use crate::run::ScenarioRun;
use crate::scenario::Scenario;
use std::path::PathBuf;

/// A minimal failing case.
#[derive(Debug, Clone)]
pub struct Counterexample {
    /// The seed it came from.
    pub seed: u64,
    /// The checker it violates.
    pub checker: String,
    /// Faults before shrinking.
    pub faults_before: usize,
    /// The shrunk case.
    pub case: ExploreCase,
    /// The scenario that replays it, expecting what should hold (`valid` from every checker
    /// that did not answer unknown).
    pub scenario: Scenario,
    /// The run of that scenario (its digest is what a replay must reproduce).
    pub run: ScenarioRun,
    /// Scenario runs spent shrinking (the reference's runs included).
    pub runs: usize,
    /// The lock it was found with (a built-in algorithm's name, or the user lock's).
    pub lock: String,
    /// The reference lock that passes this case (differential oracle only).
    pub reference: Option<String>,
    /// Which assumption each fault broke, and whether a correct lock keeps the checker.
    pub assumptions: AssumptionNotes,
}

/// Which of the lock's assumptions (docs/assumptions.md) each fault of a counterexample broke,
/// as the assumption-bounded profile classifies plans ([`Assumptions::classify`]), what the whole
/// plan broke (delays add up against one budget), and whether the lock promises the violated
/// checker under that plan ([`Assumptions::promised`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AssumptionNotes {
    /// The algorithm whose assumptions these are.
    pub algorithm: String,
    /// The violated checker.
    pub checker: String,
    /// Each fault, described, with the assumptions it breaks on its own (empty: none).
    pub faults: Vec<(String, Vec<Broken>)>,
    /// The assumptions the whole plan breaks.
    pub plan: Vec<Broken>,
    /// Whether the lock promises the checker under the plan: a violation is then an
    /// implementation bug, not the lease's limit.
    pub promised: bool,
    /// Set when the plan has no fault and the workload alone outlives the lease (the
    /// template's, or its shape's): how.
    pub overrun: Option<String>,
    /// The faults of the plan as drawn that shrinking dropped (the violation does not need
    /// them), described; the counterexample is classified without them.
    pub dropped: Vec<String>,
    /// What the plan as drawn broke that the shrunk plan does not (by the dropped faults).
    pub drawn_broken: Vec<Broken>,
}

impl AssumptionNotes {
    /// The notes of `case` (its faults) run as `scenario` (its clients and workload), violating
    /// `checker`.
    pub fn of(scenario: &Scenario, case: &ExploreCase, checker: &str) -> AssumptionNotes {
        let a = Assumptions::of(scenario);
        let clients = scenario.clients.len().max(1);
        let judged = |faults: Vec<GenFault>| {
            a.classify(&ExploreCase {
                clients,
                faults,
                shape: None,
            })
        };
        let faults = case
            .faults
            .iter()
            .map(|f| (describe(f), judged(vec![f.clone()])))
            .collect();
        let plan = judged(case.faults.clone());
        // Without a fault, the workload alone is to blame when it outlives the lease; with faults,
        // the plan is judged as the bounded profile judges it (a tight workload leaves a small
        // budget: any delay breaks timing).
        let overrun = case
            .faults
            .is_empty()
            .then(|| workload_outlives_lease(scenario))
            .flatten();
        AssumptionNotes {
            algorithm: a.algorithm.clone(),
            checker: checker.to_string(),
            faults,
            promised: overrun.is_none() && a.promised(&plan).iter().any(|c| c.as_str() == checker),
            plan,
            overrun,
            dropped: Vec::new(),
            drawn_broken: Vec::new(),
        }
    }

    /// Notes the plan as drawn (`drawn`, run as `scenario`) that this counterexample was shrunk
    /// from: which of its faults the shrunk plan (`shrunk`) no longer has, and which assumptions
    /// only those broke. The classification stays the shrunk plan's: the violation needs only
    /// its faults (issue 42: a client's clock step with an unrelated master crash is the lock's
    /// bug, not the lease's limit).
    pub fn note_drawn(&mut self, scenario: &Scenario, drawn: &[GenFault], shrunk: &ExploreCase) {
        self.dropped = drawn
            .iter()
            .filter(|f| !shrunk.faults.contains(f))
            .map(describe)
            .collect();
        let a = Assumptions::of(scenario);
        let broken = a.classify(&ExploreCase {
            clients: scenario.clients.len().max(1),
            faults: drawn.to_vec(),
            shape: None,
        });
        let now: Vec<Assumption> = self.plan.iter().map(|b| b.assumption).collect();
        self.drawn_broken = broken.into_iter().filter(|b| !now.contains(&b.assumption)).collect();
    }

    /// The assumptions the plan broke, by name (empty: none).
    fn broken_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.plan.iter().map(|b| b.assumption.name()).collect();
        names.dedup();
        names
    }

    /// The notes as lines (the counterexample file's comments, the console's text).
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "assumptions of {} (docs/assumptions.md), as `explore --bounded` classifies this plan:",
            self.algorithm
        )];
        if self.faults.is_empty() {
            out.push(format!("  no fault: the workload alone violates {}", self.checker));
        }
        let with = |broken: &[Broken]| -> Vec<String> {
            if broken.is_empty() {
                vec!["breaks no assumption".to_string()]
            } else {
                broken
                    .iter()
                    .map(|b| format!("breaks {}: {}", b.assumption.name(), b.detail))
                    .collect()
            }
        };
        for (i, (fault, broken)) in self.faults.iter().enumerate() {
            for what in with(broken) {
                out.push(format!("  fault {} ({fault}): {what}", i + 1));
            }
        }
        // Several faults add up (pauses and delays against one budget): the plan as a whole.
        let singles: Vec<Assumption> = self
            .faults
            .iter()
            .flat_map(|(_, broken)| broken.iter().map(|b| b.assumption))
            .collect();
        for b in self.plan.iter().filter(|b| !singles.contains(&b.assumption)) {
            out.push(format!(
                "  the faults together: break {}: {}",
                b.assumption.name(),
                b.detail
            ));
        }
        if !self.dropped.is_empty() {
            out.push(format!(
                "  dropped while shrinking (the violation does not need them): {}",
                self.dropped.join("; ")
            ));
        }
        for b in &self.drawn_broken {
            out.push(format!(
                "  the plan as drawn also broke {} ({}); only dropped faults did, so this plan is judged without it",
                b.assumption.name(),
                b.detail
            ));
        }
        if let Some(overrun) = &self.overrun {
            out.push(format!(
                "  the workload outlives the lease ({overrun}): {} is violated without a fault — the template's \
                 (or its shape's) doing, not the lock's",
                self.checker
            ));
        } else if self.promised {
            out.push(format!(
                "  {} promises {} under this plan: a correct lock keeps it, so this is an IMPLEMENTATION BUG",
                self.algorithm, self.checker
            ));
        } else {
            out.push(format!(
                "  {} does not promise {} under a plan that breaks {}: outside the lock's assumptions (the \
                 lease's limit), not an implementation bug",
                self.algorithm,
                self.checker,
                self.broken_names().join(", ")
            ));
        }
        out
    }
}

/// How the workload of `scenario` alone outlives the lease its lock claims, if it does: the
/// longest critical section leaves no room, inside the TTL less the lock's drift allowance, for
/// the turn's two resource round trips and a margin.
pub fn workload_outlives_lease(scenario: &Scenario) -> Option<String> {
    let a = Assumptions::of(scenario);
    if a.budget_ms > 0 {
        return None;
    }
    let work_ms = scenario
        .clients
        .iter()
        .map(|c| c.effective_work_ms(&scenario.workload).max())
        .max()
        .unwrap_or(0);
    Some(format!(
        "work_ms up to {work_ms} ms against ttl_ms {} ms: {} ms of validity left after the work and the \
         drift allowance ({} ms), where the turn's resource round trips need up to {} ms",
        a.ttl_ms,
        a.lease_left_ms,
        a.drift_allowance_ms,
        2 * a.resource_timeout_ms
    ))
}

/// A fault in words: "pause of client-1 for 1200 ms at 300 ms" (each kind words itself:
/// [`GenFault::describe`]).
pub fn describe(fault: &GenFault) -> String {
    fault.describe()
}

/// What shrinking one failing seed gave.
#[derive(Debug, Clone)]
pub enum Shrunk {
    /// A counterexample, to be written to `file` as `toml`.
    Found {
        /// The counterexample.
        counterexample: Box<Counterexample>,
        /// Where its scenario file goes.
        file: PathBuf,
        /// The scenario file's text.
        toml: String,
    },
    /// The seed no longer fails `checker` on its own.
    NotReproduced {
        /// The seed.
        seed: u64,
        /// The checker it failed in the exploration.
        checker: String,
    },
    /// The time limit ran out before this failing seed's turn: it was not shrunk.
    OutOfTime {
        /// The seed.
        seed: u64,
        /// The checker it failed in the exploration.
        checker: String,
    },
}

impl Shrunk {
    /// Its entry in `lockstep explore --json`'s `counterexamples`: `{seed, checker, file,
    /// digest, faults, toml}`, `{seed, checker, reproduced: false}` or `{seed, checker, shrunk:
    /// false, reason}`; `file` is null unless the file was `written`.
    pub fn json(&self, written: bool) -> serde_json::Value {
        match self {
            Shrunk::Found {
                counterexample,
                file,
                toml,
            } => serde_json::json!({
                "seed": counterexample.seed,
                "checker": counterexample.checker,
                "file": written.then(|| file.display().to_string()),
                "digest": counterexample.run.digest,
                "faults": counterexample.case.faults.len(),
                "toml": toml,
            }),
            Shrunk::NotReproduced { seed, checker } => {
                serde_json::json!({"seed": seed, "checker": checker, "reproduced": false})
            }
            Shrunk::OutOfTime { seed, checker } => {
                serde_json::json!({"seed": seed, "checker": checker, "shrunk": false, "reason": "time limit"})
            }
        }
    }
}

/// How big a case is: fewer faults, then fewer clients, then weaker faults is smaller.
fn size(case: &ExploreCase) -> (usize, usize, u64) {
    let magnitude = case.faults.iter().map(GenFault::magnitude).sum();
    (case.faults.len(), case.clients, magnitude)
}

/// The subject's run of `case` when it violates `checker` (and the reference, if any, does not).
struct Judge<'a> {
    template: &'a Scenario,
    seed: u64,
    checker: &'a str,
    subject: PreparedLock<'a>,
    reference: Option<PreparedLock<'a>>,
}

/// Whether a shrink that has made `runs` runs may make another: fewer than `max_runs`, and
/// `deadline` (if any) not passed.
fn within_budget(runs: usize, max_runs: usize, deadline: Option<std::time::Instant>) -> bool {
    runs < max_runs && deadline.is_none_or(|d| std::time::Instant::now() < d)
}

impl<'a> Judge<'a> {
    /// Judges runs of `template` for `seed` failing `checker` by `subject` (and not by
    /// `reference`, if any).
    fn new(
        template: &'a Scenario,
        (seed, checker): (u64, &'a str),
        (subject, reference): (LockRef<'a>, Option<LockRef<'a>>),
    ) -> Self {
        Judge {
            template,
            seed,
            checker,
            subject: subject.prepare(),
            reference: reference.map(|r| r.prepare()),
        }
    }

    fn fails(&self, case: &ExploreCase, runs: &mut usize) -> Option<ScenarioRun> {
        let scenario = case_scenario(self.template, case, self.seed);
        *runs += 1;
        let run = self.subject.run(&scenario).ok()?;
        if run.verdict(self.checker) != Some(Verdict::Invalid) {
            return None;
        }
        if let Some(reference) = &self.reference {
            *runs += 1;
            let theirs = reference.run(&scenario).ok()?;
            if theirs.verdict(self.checker) == Some(Verdict::Invalid) {
                return None;
            }
        }
        Some(run)
    }
}

/// Shrinks seed `seed` of an exploration of `template` with `profile`, keeping `checker`
/// invalid. `None` when the seed does not fail that checker. At most `max_runs` runs.
pub fn shrink(
    template: &Scenario,
    profile: &FaultProfile,
    seed: u64,
    checker: &str,
    max_runs: usize,
) -> Option<Counterexample> {
    shrink_until(template, profile, seed, checker, max_runs, None)
}

/// [`shrink`], starting no run after `deadline` (wall time): the best case found by then is the
/// counterexample.
fn shrink_until(
    template: &Scenario,
    profile: &FaultProfile,
    seed: u64,
    checker: &str,
    max_runs: usize,
    deadline: Option<std::time::Instant>,
) -> Option<Counterexample> {
    shrink_with(
        template,
        profile,
        (seed, checker),
        (LockRef::Template, None),
        max_runs,
        deadline,
    )
}

/// Shrinks `seed` of an exploration of `template` with `profile` while `subject` violates
/// `checker` — and, with a `reference` (the differential oracle), while the reference does not.
/// `None` when the seed does not fail so. At most `max_runs` runs (the reference's included),
/// none started after `deadline`.
pub(crate) fn shrink_with(
    template: &Scenario,
    profile: &FaultProfile,
    (seed, checker): (u64, &str),
    (subject, reference): (LockRef<'_>, Option<LockRef<'_>>),
    max_runs: usize,
    deadline: Option<std::time::Instant>,
) -> Option<Counterexample> {
    let left = |runs: usize| within_budget(runs, max_runs, deadline);
    let judge = Judge::new(template, (seed, checker), (subject, reference));
    let strategy = case_strategy(&topology(template), profile);
    let mut tree = case_tree(seed, &strategy);
    let mut runs = 0;
    let mut best = tree.current();
    let drawn = best.faults.clone();
    let faults_before = best.faults.len();
    let mut best_run = judge.fails(&best, &mut runs)?;
    // proptest's shrinking: simplify while it still fails, complicate back when it passes.
    if tree.simplify() {
        while left(runs) {
            let candidate = tree.current();
            // A flat-mapped tree may regenerate its inner value when the outer one shrinks; a
            // candidate that is not smaller counts as passing, so the search moves on.
            let smaller = size(&candidate) <= size(&best);
            if let Some(run) = smaller.then(|| judge.fails(&candidate, &mut runs)).flatten() {
                best = candidate;
                best_run = run;
                if !tree.simplify() {
                    break;
                }
            } else if !tree.complicate() {
                break;
            }
        }
    }
    finish(
        &judge,
        (subject, reference),
        &drawn,
        (best, best_run),
        (faults_before, runs),
        &left,
    )
}

/// Shrinks a recorded `case` (a guided seed's: its seed alone does not regenerate it) as
/// [`shrink_with`] does, without proptest's pass: drops single faults, the workload shape, then
/// clients, while `subject` still violates `checker` (and `reference`, if any, does not).
/// `None` when the case does not fail so.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn shrink_case(
    template: &Scenario,
    case: &ExploreCase,
    (seed, checker): (u64, &str),
    (subject, reference): (LockRef<'_>, Option<LockRef<'_>>),
    max_runs: usize,
    deadline: Option<std::time::Instant>,
) -> Option<Counterexample> {
    let left = |runs: usize| within_budget(runs, max_runs, deadline);
    let judge = Judge::new(template, (seed, checker), (subject, reference));
    let mut runs = 0;
    let best_run = judge.fails(case, &mut runs)?;
    let faults_before = case.faults.len();
    finish(
        &judge,
        (subject, reference),
        &case.faults,
        (case.clone(), best_run),
        (faults_before, runs),
        &left,
    )
}

/// The greedy pass over `best` (drop single faults, the workload shape, then clients, while it
/// still fails) and the counterexample it leaves.
fn finish(
    judge: &Judge,
    (subject, reference): (LockRef<'_>, Option<LockRef<'_>>),
    drawn: &[GenFault],
    (mut best, mut best_run): (ExploreCase, ScenarioRun),
    (faults_before, mut runs): (usize, usize),
    left: &dyn Fn(usize) -> bool,
) -> Option<Counterexample> {
    let (template, seed, checker) = (judge.template, judge.seed, judge.checker);
    let deadline_passed = || !left(0);
    // Greedy: drop single faults, the workload shape, then clients, while it still fails.
    let mut changed = true;
    while changed && left(runs) {
        changed = false;
        for i in (0..best.faults.len()).rev() {
            if deadline_passed() {
                break;
            }
            let mut candidate = best.clone();
            candidate.faults.remove(i);
            if let Some(run) = judge.fails(&candidate, &mut runs) {
                best = candidate;
                best_run = run;
                changed = true;
            }
        }
        if best.shape.is_some() && left(runs) {
            let candidate = ExploreCase {
                shape: None,
                ..best.clone()
            };
            if let Some(run) = judge.fails(&candidate, &mut runs) {
                best = candidate;
                best_run = run;
                changed = true;
            }
        }
        // A shape sets the number of clients itself.
        while best.clients > 1 && best.shape.is_none() && left(runs) {
            let candidate = ExploreCase {
                clients: best.clients - 1,
                ..best.clone()
            };
            match judge.fails(&candidate, &mut runs) {
                Some(run) => {
                    best = candidate;
                    best_run = run;
                    changed = true;
                }
                None => break,
            }
        }
    }
    // The lock's own scenario: a preset's algorithm, or `rust_lock` naming a user's lock.
    let mut scenario = subject.scenario(&case_scenario(template, &best, seed)).into_owned();
    // Keep only the faults that apply to the remaining nodes (case_scenario already did), and
    // state what should hold as the expectation: the file fails until the bug is fixed.
    let lock = subject.name(template);
    let reference_name = reference.map(|r| r.name(template));
    // A user's lock names its counterexamples too: two harnesses sharing a directory must not
    // overwrite each other's files (a template's own lock or a preset keeps the plain name).
    scenario.name = match &subject {
        LockRef::User(..) => counterexample_name(&template.name, seed, &format!("{checker}-{}", lock_part(&lock))),
        _ => counterexample_name(&template.name, seed, checker),
    };
    let with = match (&subject, &reference_name) {
        (LockRef::Template, None) => String::new(),
        (LockRef::User(..), _) => format!(" with the Rust lock `{lock}`"),
        _ => format!(" with {lock}"),
    };
    let against = reference_name
        .as_ref()
        .map(|r| format!(" ({r} holds on this case)"))
        .unwrap_or_default();
    scenario.description = format!(
        "Counterexample found by `lockstep explore` on {}{with} (seed {seed}): {checker} is violated{against}.\n\
         Shrunk from {faults_before} to {} faults and {} clients. History digest {}.\n\
         The expectations state what should hold, so this file fails until the lock is fixed.",
        template.name,
        best.faults.len(),
        scenario.clients.len(),
        best_run.digest
    );
    // What should hold: every checker that answered — or, against a reference, the checkers this
    // run kept plus the one the reference holds on this case (where both locks fail, e.g. a pause
    // past the lease, no fix of this lock makes the file pass, so it states nothing there).
    scenario.expect = best_run
        .results
        .iter()
        .filter(|r| r.verdict != Verdict::Unknown)
        .filter(|r| reference_name.is_none() || r.verdict == Verdict::Valid || r.checker == checker)
        .map(|r| (r.checker.clone(), Verdict::Valid))
        .collect();
    let mut assumptions = AssumptionNotes::of(&scenario, &best, checker);
    assumptions.note_drawn(&scenario, drawn, &best);
    Some(Counterexample {
        seed,
        checker: checker.to_string(),
        faults_before,
        case: best,
        scenario,
        run: best_run,
        runs,
        lock,
        reference: reference_name,
        assumptions,
    })
}

/// The counterexample as a commented scenario file.
pub fn counterexample_toml(cx: &Counterexample) -> String {
    let replay = match &cx.scenario.lock.rust_lock {
        Some(name) => format!(
            "the Rust lock `{name}`: Harness::replay(<this file>) in a harness holding it (lockstep run refuses it)"
        ),
        None => "lockstep run <this file>".to_string(),
    };
    let against = cx
        .reference
        .as_ref()
        .map(|r| format!(" (the reference {r} does not)"))
        .unwrap_or_default();
    format!(
        "# Minimal counterexample written by `lockstep explore`.\n\
         # Seed {} violates {} with {}{against}; shrunk from {} to {} faults in {} runs.\n\
         # Replay: {replay}   (history digest {})\n\
         # Fault generator v{}: seed {} names this plan under v{} only; the faults written out below\n\
         # replay under any version.\n\
         #\n\
         # Like a proptest regression file, [expect] states what SHOULD hold (every checker valid),\n\
         # not what this run does: `lockstep run` and `lockstep ci` fail on this file until the lock\n\
         # is fixed. Keep it in your scenarios directory as a regression test.\n\
         #\n{}{}",
        cx.seed,
        cx.checker,
        cx.lock,
        cx.faults_before,
        cx.case.faults.len(),
        cx.runs,
        cx.run.digest,
        super::GENERATOR_VERSION,
        cx.seed,
        super::GENERATOR_VERSION,
        cx.assumptions
            .lines()
            .iter()
            .map(|l| format!("# {l}\n"))
            .collect::<String>(),
        cx.scenario.to_toml()
    )
}

/// A user's lock's name as a part of a counterexample's name: its slug, or when longer than 32
/// bytes its first 23 and a hash of the whole (two long names sharing a start stay apart).
fn lock_part(lock: &str) -> String {
    // `a-z`, `0-9` and `-` (a harness's own names already are), so the name stays a valid one.
    let slug: String = lock
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '-',
        })
        .collect();
    let slug = if slug.is_empty() { "x".to_string() } else { slug };
    if slug.len() <= 32 {
        return slug;
    }
    // FNV-1a: stable across runs and platforms (a file name must not move between runs).
    let hash = lock.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{}-{:08x}", slug[..23].trim_end_matches('-'), hash as u32)
}

/// The counterexample's scenario name: `{template}-seed-{seed}-{checker}`, the template's part cut
/// so that the whole stays a valid scenario name: the file must load.
fn counterexample_name(template: &str, seed: u64, checker: &str) -> String {
    crate::scenario::name_with_suffix(template, &format!("-seed-{seed}-{checker}"))
}

#[cfg(test)]
mod tests {
    use super::{counterexample_name, size, ExploreCase};
    use crate::explore::kinds::GenFault;
    use crate::explore::kinds::{ClockJump, Failover, PowerLoss};
    use crate::scenario::SCENARIO_NAME_MAX;

    /// Shrinking and coverage measure a fault the same way: a power loss's downtime counts (it
    /// once counted for coverage and not for shrinking), a failover has none.
    #[test]
    fn a_users_lock_part_is_short_and_tells_long_names_apart() {
        assert_eq!(super::lock_part("my-lock"), "my-lock");
        let (a, b) = (
            super::lock_part("a-very-long-lock-name-that-goes-on-and-on-one"),
            super::lock_part("a-very-long-lock-name-that-goes-on-and-on-two"),
        );
        assert_ne!(a, b);
        assert!(a.len() <= 32 && b.len() <= 32, "{a} {b}");
        let name = counterexample_name(&"t".repeat(200), u64::MAX, &format!("mutual-exclusion-{a}"));
        assert!(name.len() <= SCENARIO_NAME_MAX, "{name}");
    }

    #[test]
    fn every_kind_is_measured_once_for_shrinking_and_coverage() {
        let mut loss = GenFault::from(PowerLoss {
            at_ms: 10,
            node: "redis-1".into(),
            down_ms: 400,
        });
        let case = ExploreCase {
            clients: 2,
            faults: vec![
                loss.clone(),
                GenFault::from(Failover {
                    at_ms: 5,
                    node: "redis-1".into(),
                }),
            ],
            shape: None,
        };
        assert_eq!(size(&case), (2, 2, 400));
        loss.scale_magnitude(|v| v * 2);
        assert_eq!(loss.magnitude(), 800);
        let mut jump = GenFault::from(ClockJump {
            at_ms: 0,
            node: "redis-1".into(),
            delta_ms: -300,
        });
        jump.scale_magnitude(|v| v / 2);
        assert!(matches!(jump, GenFault::ClockJump(ClockJump { delta_ms: -150, .. })));
    }

    #[test]
    fn a_counterexample_of_a_longest_name_is_still_a_valid_name() {
        assert_eq!(
            counterexample_name("kleppmann", 7, "stale-write"),
            "kleppmann-seed-7-stale-write"
        );
        let long = "a-".repeat(50);
        let name = counterexample_name(&long, u64::MAX, "mutual-exclusion");
        assert_eq!(name.len(), SCENARIO_NAME_MAX, "{name}");
        assert!(name.ends_with("a-seed-18446744073709551615-mutual-exclusion"), "{name}");
        assert!(!name.contains("--"), "{name}");
        // A cut that ends on a `-` drops it.
        let name = counterexample_name(&long, u64::MAX, "stale-write");
        assert_eq!(
            name,
            format!(
                "{}-seed-18446744073709551615-stale-write",
                "a-".repeat(31).trim_end_matches('-')
            )
        );
    }
}
