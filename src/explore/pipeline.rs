//! The per-seed pipeline of an exploration: one seed's case run with the subject (and the
//! reference, if any), judged by the checkers and classified by the lock's assumptions
//! ([`judge_case`]), sent to the aggregating thread as a [`SeedOutcome`], added to the summary
//! ([`aggregate`]) and written as the seed's `--jsonl` record ([`seed_record`]).
//!
//! A violation is classified by the faults it needs, not the plan as drawn ([`reduce_to_bug`]):
//! faults that break a hard assumption on their own are dropped and the rest run once more.
//!
//! Left out: which seeds run, on which threads, and where faults are placed (the parent module
//! and [`super::guided`]).

use super::generate::{case_tree, ExploreCase};
use super::subject::PreparedLock;
use super::{assumptions, case_scenario, coverage, groups, record, summary, ExploreSummary, LockNames};
use crate::model::Verdict;
use crate::scenario::Scenario;
use lockstep_sim::Seed;

/// Whether the wall budget stopped this seed's run (or its reference's) before it ended: such a
/// seed has no verdict and is not counted.
pub(super) fn cut_by_wall_budget(outcome: &SeedOutcome) -> bool {
    let stopped = |message: &str| message.contains(lockstep_history::stop::STOPPED);
    match outcome {
        SeedOutcome::Error { message, .. } => stopped(message),
        SeedOutcome::Judged { reference, .. } => matches!(reference, Some(Err(message)) if stopped(message)),
    }
}

/// Whether `seed` is in the determinism sample (a fixed choice, the same in every shard).
fn in_determinism_sample(seed: u64, per_10k: u64) -> bool {
    per_10k > 0 && Seed(seed).derive_u64("explore/determinism") % 10_000 < per_10k
}

/// Verdicts per checker.
type Verdicts = [(String, Verdict)];

/// A run's verdicts per checker and its history digest.
type Judged = (Vec<(String, Verdict)>, String);

/// What one seed produced, as sent to the aggregator.
#[allow(clippy::large_enum_variant)] // one per seed, moved once to the aggregator
pub(super) enum SeedOutcome {
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
        /// Per checker that answered invalid: the operations and commands of its witness
        /// ([`groups::witness_ops`]), what the seed's class is made of.
        witness_ops: Vec<(String, Vec<String>)>,
    },
    Error {
        seed: u64,
        message: String,
        case: ExploreCase,
    },
}

pub(super) fn explore_seed(
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
pub(super) fn judge_case(
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
    // Who sent each command: read once, and only from a history with a violation.
    let invalid: Vec<&crate::checker::CheckResult> =
        run.results.iter().filter(|r| r.verdict == Verdict::Invalid).collect();
    let witness_ops = match invalid.is_empty() {
        true => Vec::new(),
        false => {
            let senders = groups::Senders::of(run.history.events());
            invalid
                .iter()
                .map(|r| (r.checker.clone(), groups::witness_ops(r, &senders)))
                .collect()
        }
    };
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
        witness_ops,
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
    let innocent = |f: &crate::explore::kinds::GenFault| {
        assumptions
            .classify(&ExploreCase {
                clients,
                faults: vec![f.clone()],
                shape: case.shape,
            })
            .iter()
            .all(|b| b.assumption == assumptions::Assumption::Timing)
    };
    let kept: Vec<crate::explore::kinds::GenFault> = case.faults.iter().filter(|f| innocent(f)).cloned().collect();
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
pub(super) fn aggregate(summary: &mut ExploreSummary, outcome: SeedOutcome, keep_case: bool) {
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
            witness_ops,
            ..
        } => {
            summary.add_verdicts(seed, &verdicts, &fault_kinds, faults);
            let theirs = reference
                .as_ref()
                .and_then(|r| r.as_ref().ok())
                .map(|(v, _)| v.as_slice());
            let found = bounded.as_ref().or(classified.as_ref());
            let cases = (&case, bug_case.as_ref(), keep_case);
            add_to_groups(summary, (seed, &verdicts, theirs), found, cases, &witness_ops);
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

/// Counts one judged seed into the summary's groups ([`groups`]): as an implementation bug when
/// `found` says it is one (with a reference, only for the checkers the reference keeps), and as
/// a violating seed when a checker answered invalid (with a reference, only for the checkers
/// where the subject alone fails). Its class: the checker nearest the cause (for a violation
/// that is no bug, its first checker), that checker's witness operations, the fault kinds of
/// the case that shows it. `keep_case`: a violating seed keeps its case (guided placement).
fn add_to_groups(
    summary: &mut ExploreSummary,
    (seed, verdicts, theirs): (u64, &[(String, Verdict)], Option<&Verdicts>),
    found: Option<&(Vec<String>, Vec<String>)>,
    (case, bug_case, keep_case): (&ExploreCase, Option<&ExploreCase>, bool),
    witness_ops: &[(String, Vec<String>)],
) {
    let with_reference = summary.differential.is_some();
    // A checker counts against a reference only where the reference was judged and held.
    let kept = |checker: &str| {
        !with_reference || theirs.is_some_and(|r| r.iter().any(|(c, v)| c == checker && *v == Verdict::Valid))
    };
    // An implementation bug is classed by the checker nearest its cause; any other violation by
    // its first checker in report order (the lease's limit shows first as two holders).
    let class_of = |checkers: &[String], case: &ExploreCase, bug: bool| {
        let checker = match bug {
            true => groups::cause_first(checkers, &|_| true)?,
            false => checkers.first()?.clone(),
        };
        let ops = witness_ops
            .iter()
            .find(|(c, _)| *c == checker)
            .map(|(_, ops)| ops.clone())
            .unwrap_or_default();
        Some(groups::BugClass {
            checker,
            ops,
            fault_kinds: groups::kinds_of(&case.faults),
        })
    };
    if let Some((_, bugs)) = found {
        let bugs: Vec<String> = bugs.iter().filter(|c| kept(c)).cloned().collect();
        let shown = bug_case.unwrap_or(case);
        if let Some(class) = class_of(&bugs, shown, true) {
            summary.bug_groups.add(class, bug_seed(seed, &bugs, case, bug_case));
        }
    }
    let invalid: Vec<String> = verdicts
        .iter()
        .filter(|(c, v)| *v == Verdict::Invalid && kept(c))
        .map(|(c, _)| c.clone())
        .collect();
    if let Some(class) = class_of(&invalid, case, false) {
        let mut failing = bug_seed(seed, &invalid, case, None);
        // As `first_failing`: a seed of random placement regenerates its case (and shrinks with
        // the generator's value tree); a guided seed's case is kept.
        if !keep_case {
            failing.case = None;
        }
        summary.violation_groups.add(class, failing);
    }
}

/// The record of one seed's outcome (the `--jsonl` line).
pub(super) fn seed_record(template: &Scenario, names: &LockNames, outcome: &SeedOutcome) -> record::SeedRecord {
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

#[cfg(test)]
mod tests {
    use crate::model::Verdict;
    use crate::scenario::Scenario;

    /// Issue 42: a request of an operation that already ended, delivered late. client-1's
    /// release (a compare-and-delete, retried once after its 50 ms timeout) is sent into a 30 ms
    /// latency spike on its link to the master; the retry deletes the key and client-1 is
    /// granted again at once — with the same value when the lock reuses it. Delayed 1 s, the
    /// first request lands inside that next grant and deletes it: `ownership` invalid, an
    /// implementation bug (the spike costs the holder at most its timeout: no assumption is
    /// broken, and `ownership` is promised under every plan anyway). Delayed 60 ms, it lands
    /// before the retry, on the sender's own grant it had already given up: nothing to judge.
    /// With a fresh value per grant (the safe twin), the late request finds another value and
    /// deletes nothing.
    #[test]
    fn a_late_deletion_of_an_ended_release_is_a_bug_on_a_later_grant_and_nothing_on_its_own() {
        use crate::explore::kinds::GenFault;
        use crate::explore::kinds::{Latency, Spike};
        let file = |name: &str| {
            let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
            let mut template = Scenario::from_file(std::path::Path::new(&path)).unwrap();
            template.faults = Default::default();
            template
        };
        let spike = |latency_ms: u64| super::ExploreCase {
            clients: 2,
            faults: vec![GenFault::from(Latency {
                at_ms: 3_020,
                a: "client-1".into(),
                b: "redis-1".into(),
                latency_ms,
                spike: Some(Spike {
                    length_ms: 30,
                    min_latency_ms: 1,
                    max_latency_ms: 5,
                }),
            })],
            shape: None,
        };
        let subject = crate::explore::LockRef::Template.prepare();
        let judged = |name: &str, latency_ms: u64| {
            let (outcome, _) = super::judge_case(&file(name), spike(latency_ms), 1, 0, (&subject, None));
            let super::SeedOutcome::Judged {
                verdicts,
                classified: Some((broken, bugs)),
                ..
            } = outcome
            else {
                panic!("{name}: not judged");
            };
            let ownership = verdicts.iter().find(|(c, _)| c == "ownership").unwrap().1;
            (ownership, broken, bugs)
        };
        let (ownership, broken, bugs) = judged("bug-value-reuse-release-retry", 1_000);
        assert_eq!(ownership, Verdict::Invalid);
        assert!(broken.is_empty(), "{broken:?}");
        assert!(bugs.contains(&"ownership".to_string()), "{bugs:?}");
        // Landing before the retry: the sender's own grant, given up.
        let (ownership, _, bugs) = judged("bug-value-reuse-release-retry", 60);
        assert_eq!(ownership, Verdict::Valid);
        assert!(bugs.is_empty(), "{bugs:?}");
        // A fresh value per grant: the late request deletes nothing.
        let (ownership, _, bugs) = judged("bug-value-reuse-release-retry-safe", 1_000);
        assert_eq!(ownership, Verdict::Valid);
        assert!(bugs.is_empty(), "{bugs:?}");
    }

    /// Issue 42, item 2: a drawn plan with the faults a wall-clock bug needs (a stalled link and
    /// a client's clock stepped back) and an unrelated master crash after every turn. As drawn,
    /// the crash breaks the masters assumption (only `ownership` promised): no bug. Classified
    /// by the faults the violation needs, it is the lock's bug (`lease-validity` promised under
    /// timing alone), its case without the crash; the counterexample says the crash was dropped.
    #[test]
    fn a_violation_is_classified_by_the_faults_it_needs_not_the_plan_as_drawn() {
        use crate::explore::kinds::GenFault;
        use crate::explore::kinds::{ClockJump, Crash, Hold};
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
        let drawn = super::ExploreCase {
            clients: 2,
            faults,
            shape: None,
        };
        let subject = crate::explore::LockRef::Template.prepare();
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
        let mut cx = crate::explore::shrink::shrink_case(
            &template,
            &reduced,
            (1, "lease-validity"),
            (crate::explore::LockRef::Template, None),
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
