//! Bounded-exhaustive exploration: every fault placement on a grid around the anchors, within
//! stated bounds — "no violation in all K schedules within these bounds", the model checker's
//! guarantee at lockstep's fidelity (one seed: the template's own).
//!
//! The grid ([`schedules`]): the template without its faults, its first `clients_max` clients;
//! the anchors of its fault-free run ([`anchors`]), one per distinct (event,
//! client, server) in time order, the first `anchors_max` of them; at each, three instants —
//! just before (1 ms), just after (1 ms), and halfway to the next anchor; at each instant, every
//! fault of the *lease-model* vocabulary below aimed at the anchor's client and master; then
//! every set of up to `faults_max` such faults (each set is one schedule, K in all).
//!
//! The vocabulary is what a correct lease lock is built to tolerate, so a violation inside the
//! bounds is a bug of the lock, not the lease model's inherent limit:
//! - the link between the client and its master held for TTL/2 (a request or its reply
//!   delayed), or cut for TTL/2;
//! - the master's reply to the client lost (`drop-reply`, one reply);
//! - the client's wall clock stepped by +TTL or −TTL (a lock times itself on its monotonic
//!   clock);
//! - client and master clocks drifting by ±100 ppm (1 ms on a 10 s lease: inside the
//!   lease-validity checker's tolerance, where ±1,000 ppm is not for a lock that does not
//!   subtract drift);
//! - the master paused for TTL/10 (its clock runs on; replies are late);
//! - a replica's clock stepped by +TTL, when the template has replicas.
//!
//! Left out on purpose (each breaks every lease lock, correct or not): client pauses and
//! resource-link delays longer than the validity left, master clock jumps, and restarts of a
//! master without persistence. A schedule is a counterexample when a checker the template
//! expects `valid` answers `invalid` (with no `[expect]`, any checker).
//!
//! Every schedule runs the exploration's subject lock (the template's algorithm, a preset, or a
//! user's Rust lock), whose fault-free run also gives the anchors. With a reference lock (the
//! differential oracle), a schedule counts only for the checkers the subject breaks and the
//! reference does not break on the same schedule.

use super::anchors::{self, Anchor};
use super::generate::ExploreCase;
use super::kinds::Grid;
use super::subject::{LockRef, PreparedLock};
use super::{case_scenario, topology};
use crate::explore::kinds::GenFault;
use crate::model::Verdict;
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// The bounds of a bounded-exhaustive exploration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// At most this many clients (the template's first ones).
    pub clients_max: usize,
    /// At most this many faults per schedule.
    pub faults_max: usize,
    /// At most this many anchors (distinct events of the fault-free run).
    pub anchors_max: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            clients_max: 2,
            faults_max: 2,
            anchors_max: 4,
        }
    }
}

impl std::fmt::Display for Bounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "clients <= {}, faults <= {}, the first {} anchors x 3 instants (1 ms before, 1 ms after, halfway to the next) x \
             the lease-model faults (holds and cuts of TTL/2 and lost replies on client-master links, client wall-clock \
             steps of +/-TTL, drift of +/-100 ppm, master pauses of TTL/10, replica clock steps)",
            self.clients_max, self.faults_max, self.anchors_max
        )
    }
}

/// One schedule that broke an expectation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The schedule.
    pub case: ExploreCase,
    /// The checkers expected valid that answered invalid.
    pub checkers: Vec<String>,
}

/// What a bounded-exhaustive exploration found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExhaustiveReport {
    /// The template's name.
    pub scenario: String,
    /// The lock under test (a built-in algorithm's name, or the user lock's).
    pub lock: String,
    /// The reference lock (differential oracle only): a schedule counts only for the checkers
    /// it breaks for `lock` and not for the reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The bounds.
    pub bounds: Bounds,
    /// Anchors the grid used.
    pub anchors: usize,
    /// Distinct single faults on the grid.
    pub single_faults: usize,
    /// K: schedules run.
    pub schedules: u64,
    /// Schedules that broke an expectation.
    pub violating: u64,
    /// The first (in grid order) of them, at most ten.
    pub counterexamples: Vec<Violation>,
    /// Schedules that could not run, and the first message.
    pub errors: u64,
    /// The first error.
    pub first_error: Option<String>,
    /// Wall time, s.
    pub wall_s: f64,
}

impl ExhaustiveReport {
    /// Whether every schedule kept the expectations — and at least one ran: a grid of no
    /// schedules tested nothing, and a gate over nothing must not pass.
    pub fn is_clean(&self) -> bool {
        self.schedules > 0 && self.violating == 0 && self.errors == 0
    }

    /// The human-readable result.
    pub fn render(&self) -> String {
        let against = self
            .reference
            .as_ref()
            .map(|r| format!(" against {r}"))
            .unwrap_or_default();
        let only = match &self.reference {
            Some(r) => format!(" where only {} fails ({r} holds)", self.lock),
            None => String::new(),
        };
        let mut out = format!(
            "bounded-exhaustive exploration of {} with {}{against}\n  bounds: {}\n  grid: {} anchors, {} single faults, K = {} schedules ({:.1} s)\n",
            self.scenario, self.lock, self.bounds, self.anchors, self.single_faults, self.schedules, self.wall_s
        );
        if self.schedules == 0 {
            out.push_str("  NOTHING TESTED: the grid has no schedule within these bounds (widen them)\n");
        } else if self.is_clean() {
            out.push_str(&format!(
                "  no violation{only} in all {} schedules within these bounds\n",
                self.schedules
            ));
        } else {
            out.push_str(&format!(
                "  {} of {} schedules violate an expectation{only}; {} could not run\n",
                self.violating, self.schedules, self.errors
            ));
            for v in &self.counterexamples {
                let faults: Vec<String> = v
                    .case
                    .faults
                    .iter()
                    .map(|f| serde_json::to_string(f).unwrap_or_default())
                    .collect();
                out.push_str(&format!("    [{}] {}\n", v.checkers.join(","), faults.join(" + ")));
            }
            if let Some(e) = &self.first_error {
                out.push_str(&format!("    first error: {e}\n"));
            }
        }
        out
    }
}

/// The template the grid runs: no faults, at most `clients_max` clients.
fn bounded_template(template: &Scenario, bounds: &Bounds) -> Scenario {
    let mut scenario = anchors::fault_free(template);
    scenario.clients.truncate(bounds.clients_max.max(1));
    scenario.expect = template.expect.clone();
    scenario
}

/// The anchors the grid uses: the first of each distinct (event, client, server), in time order.
fn grid_anchors(all: &[Anchor], bounds: &Bounds) -> Vec<Anchor> {
    let mut seen = std::collections::BTreeSet::new();
    all.iter()
        .filter(|a| seen.insert((a.kind, a.client.clone(), a.server.clone())))
        .take(bounds.anchors_max)
        .cloned()
        .collect()
}

/// Every single fault of the grid (see the [module](self) docs; each kind gives its values at
/// an instant, [`GenFault::exhaustive`]), in grid order.
fn single_faults(template: &Scenario, grid: &[Anchor]) -> Vec<GenFault> {
    let topo = topology(template);
    let ttl = topo.ttl_ms.max(2);
    let mut out = Vec::new();
    for (i, anchor) in grid.iter().enumerate() {
        let next = grid
            .get(i + 1)
            .map_or(anchor.at_ms + ttl / 2, |a| a.at_ms.max(anchor.at_ms));
        let instants = [
            anchor.at_ms.saturating_sub(1),
            anchor.at_ms + 1,
            (anchor.at_ms + next) / 2,
        ];
        let Some(client) = anchor
            .client
            .clone()
            .filter(|c| topo.clients.contains(c))
            .or_else(|| topo.clients.first().cloned())
        else {
            continue;
        };
        let Some(master) = anchor
            .server
            .clone()
            .filter(|s| topo.masters.contains(s))
            .or_else(|| topo.masters.first().cloned())
        else {
            continue;
        };
        for at_ms in instants {
            out.extend(GenFault::exhaustive(&Grid {
                at_ms,
                ttl_ms: ttl,
                client: &client,
                master: &master,
                replicas: &topo.replicas,
            }));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The `index`-th set of at most `faults_max` faults out of `n`, in order: every single fault,
/// then every pair `(i, j)` with `i < j`, and so on (sets of the same size in lexicographic
/// order).
fn combinations(n: usize, faults_max: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    fn extend(start: usize, n: usize, size: usize, current: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if current.len() == size {
            out.push(current.clone());
            return;
        }
        for i in start..n {
            current.push(i);
            extend(i + 1, n, size, current, out);
            current.pop();
        }
    }
    for size in 1..=faults_max {
        extend(0, n, size, &mut current, &mut out);
    }
    out
}

/// Every schedule of the grid around `lock`'s fault-free run, in grid order.
pub fn schedules(
    template: &Scenario,
    bounds: &Bounds,
    lock: &PreparedLock,
) -> Result<(usize, usize, Vec<ExploreCase>), String> {
    let bounded = bounded_template(template, bounds);
    let anchors = anchors::record(&bounded, lock)?;
    let grid = grid_anchors(&anchors.list, bounds);
    let singles = single_faults(&bounded, &grid);
    let clients = bounded.clients.len();
    let cases = combinations(singles.len(), bounds.faults_max)
        .into_iter()
        .map(|set| ExploreCase {
            clients,
            faults: set.into_iter().map(|i| singles[i].clone()).collect(),
            shape: None,
        })
        .collect();
    Ok((grid.len(), singles.len(), cases))
}

/// The checkers a run broke: expected `valid` but `invalid` (with no expectations, every
/// invalid checker).
fn broken(template: &Scenario, run: &crate::run::ScenarioRun) -> Vec<String> {
    run.results
        .iter()
        .filter(|r| r.verdict == Verdict::Invalid)
        .filter(|r| template.expect.is_empty() || template.expect.get(&r.checker) == Some(&Verdict::Valid))
        .map(|r| r.checker.clone())
        .collect()
}

/// The checkers `subject` broke on one schedule: those it broke and (with a reference) the
/// reference did not; an error when either lock could not run it.
fn judge(
    bounded: &Scenario,
    case: &ExploreCase,
    (subject, reference): (&PreparedLock, Option<&PreparedLock>),
) -> Result<Vec<String>, String> {
    let scenario = case_scenario(bounded, case, bounded.seed);
    let mine = broken(bounded, &subject.run(&scenario)?);
    let Some(reference) = reference.filter(|_| !mine.is_empty()) else {
        return Ok(mine);
    };
    let theirs = reference
        .run(&scenario)
        .map_err(|e| format!("the reference could not run: {e}"))?;
    Ok(mine
        .into_iter()
        .filter(|c| theirs.verdict(c) != Some(Verdict::Invalid))
        .collect())
}

/// Runs every schedule of the grid with `subject` (and `reference`, for the differential
/// oracle) on `jobs` workers; with `stop_at_first`, stops starting schedules once one breaks an
/// expectation.
pub fn explore_exhaustive(
    template: &Scenario,
    bounds: &Bounds,
    jobs: usize,
    stop_at_first: bool,
    (subject, reference): (LockRef<'_>, Option<LockRef<'_>>),
) -> ExhaustiveReport {
    let started = Instant::now();
    let mut report = ExhaustiveReport {
        scenario: template.name.clone(),
        lock: subject.name(template),
        reference: reference.map(|r| r.name(template)),
        bounds: *bounds,
        anchors: 0,
        single_faults: 0,
        schedules: 0,
        violating: 0,
        counterexamples: Vec::new(),
        errors: 0,
        first_error: None,
        wall_s: 0.0,
    };
    let bounded = bounded_template(template, bounds);
    let (anchors, singles, cases) = match schedules(template, bounds, &subject.prepare()) {
        Ok(grid) => grid,
        Err(message) => {
            report.errors = 1;
            report.first_error = Some(format!("the fault-free run failed: {message}"));
            return report;
        }
    };
    report.anchors = anchors;
    report.single_faults = singles;
    let next = AtomicUsize::new(0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut found: Vec<(usize, Violation)> = Vec::new();
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::channel();
        for _ in 0..jobs.max(1) {
            let sender = sender.clone();
            let (next, cases, stop, bounded) = (&next, &cases, &stop, &bounded);
            scope.spawn(move || {
                let prepared = (subject.prepare(), reference.map(|r| r.prepare()));
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { return };
                    let result = judge(bounded, case, (&prepared.0, prepared.1.as_ref()));
                    if sender.send((i, result)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        for (i, result) in receiver {
            report.schedules += 1;
            match result {
                Ok(checkers) if checkers.is_empty() => {}
                Ok(checkers) => {
                    report.violating += 1;
                    found.push((
                        i,
                        Violation {
                            case: cases[i].clone(),
                            checkers,
                        },
                    ));
                    if stop_at_first {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                Err(message) => {
                    report.errors += 1;
                    report.first_error.get_or_insert(message);
                }
            }
        }
    });
    found.sort_by_key(|(i, _)| *i);
    report.counterexamples = found.into_iter().take(10).map(|(_, v)| v).collect();
    report.wall_s = started.elapsed().as_secs_f64();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_of_no_schedules_is_never_clean() {
        let report = ExhaustiveReport {
            scenario: "s".into(),
            lock: "l".into(),
            reference: None,
            bounds: Bounds {
                clients_max: 2,
                faults_max: 1,
                anchors_max: 0,
            },
            anchors: 0,
            single_faults: 0,
            schedules: 0,
            violating: 0,
            counterexamples: Vec::new(),
            errors: 0,
            first_error: None,
            wall_s: 0.0,
        };
        assert!(!report.is_clean(), "a gate over nothing must not pass");
        assert!(report.render().contains("NOTHING TESTED"), "{}", report.render());
        let ran = ExhaustiveReport { schedules: 3, ..report };
        assert!(ran.is_clean());
    }

    #[test]
    fn combinations_count_every_set_once() {
        assert_eq!(combinations(4, 1).len(), 4);
        assert_eq!(combinations(4, 2).len(), 4 + 6);
        assert_eq!(combinations(5, 3).len(), 5 + 10 + 10);
        assert_eq!(combinations(3, 2)[3], vec![0, 1]);
    }

    #[test]
    fn the_grid_aims_the_lease_model_faults_at_the_anchors() {
        let template = crate::scenario::standard::standard_template(
            crate::model::Algorithm::TokenRelease,
            crate::model::Fencing::None,
            lockstep_sim::FencingMode::Unfenced,
            1,
        )
        .unwrap();
        let bounds = Bounds {
            clients_max: 2,
            faults_max: 1,
            anchors_max: 3,
        };
        let (anchors, singles, cases) = schedules(&template, &bounds, &LockRef::Template.prepare()).unwrap();
        assert_eq!(anchors, 3);
        assert_eq!(cases.len(), singles);
        assert!(cases.iter().all(|c| c.clients == 2 && c.faults.len() == 1));
        let kinds: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.faults[0].kind()).collect();
        assert!(kinds.contains("hold") && kinds.contains("drop-reply") && kinds.contains("clock-jump"));
        assert!(!kinds.contains("crash"));
    }
}
