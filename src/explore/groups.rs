//! Distinct bugs: violating seeds grouped by cause, so that a lock with two defects — or a
//! scenario whose violations come in several fault classes — reports each, not only the one its
//! first seed shows (issue 50).
//!
//! A seed's *class* ([`BugClass`]) is what its violation is made of: the checker nearest its
//! cause ([`cause_first`]), the lock operations in that checker's witness ([`witness_ops`]), and the fault kinds of the plan that shows it. While an exploration runs,
//! seeds are counted per class ([`Groups`]: a count and the smallest seed of each class, exact
//! under merging, memory bounded by the number of classes, not seeds). A class names the plan as
//! drawn, which holds faults the violation does not need; after the exploration, shrinking one
//! seed per class tells which fault kinds it needs ([`Distinct`]): a class whose kinds contain
//! those of an already shrunk group with the same checker and operations joins that group
//! unshrunk, any other class is shrunk and either joins the group its shrunk plan matches or
//! starts a new one. So the groups reported are (checker, operations, the shrunk plan's fault
//! kinds), each with its count, first seed and counterexample.
//!
//! Two kinds of groups are kept: implementation-bug seeds (a checker the lock promised under
//! the plan, [`super::summary::Bounded`]) and every violating seed (what an exploration with no
//! bug seed shrinks: one per fault class, so that a lease-limit violation of one kind does not
//! hide the others). Left out: grouping by the shape of the workload, and telling apart two
//! defects that show with the same checker, operations and fault kinds.

use super::failing::FailingSeed;
use crate::checker::CheckResult;
use crate::model::op::names;
use lockstep_sim::EventKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many classes a [`Groups`] keeps; seeds of further classes are counted in
/// [`Groups::seeds_unclassed`] (a plan generator with many kinds could otherwise grow a summary
/// with every combination).
pub const MAX_CLASSES: usize = 200;

/// What one violating seed's violation is made of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BugClass {
    /// The checker nearest the cause ([`cause_first`]).
    pub checker: String,
    /// The lock operations (`acquire`, `extend`, `release`, ...) in that checker's witness,
    /// sorted, each once.
    pub ops: Vec<String>,
    /// The fault kinds of the seed's plan (as drawn, or without the faults a bug does not
    /// need), sorted, each once.
    pub fault_kinds: Vec<String>,
}

impl BugClass {
    /// `checker · faults: a, b · operations: x, y`.
    pub fn describe(&self) -> String {
        let list = |items: &[String]| match items.is_empty() {
            true => "none".to_string(),
            false => items.join(", "),
        };
        format!(
            "{} · faults: {} · operations: {}",
            self.checker,
            list(&self.fault_kinds),
            list(&self.ops)
        )
    }
}

/// One class's seeds: how many, and the smallest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassSeeds {
    /// The class.
    pub class: BugClass,
    /// Seeds of this class.
    pub seeds: u64,
    /// The smallest seed of this class (with its case, when the seed alone does not give it).
    pub first: FailingSeed,
}

/// Violating seeds counted per [`BugClass`]: streamed seed by seed, merged across shards exactly
/// (counts add, the smallest seed wins).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Groups {
    /// Per class, in class order.
    pub classes: Vec<ClassSeeds>,
    /// Seeds of classes beyond [`MAX_CLASSES`] (counted, not kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seeds_unclassed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Groups {
    /// Whether no seed was counted.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.seeds_unclassed == 0
    }

    /// Adds `seeds` seeds of `class`, the smallest being `first`.
    fn add_many(&mut self, class: BugClass, seeds: u64, first: FailingSeed) {
        match self.classes.binary_search_by(|c| c.class.cmp(&class)) {
            Ok(i) => {
                let entry = &mut self.classes[i];
                entry.seeds = entry.seeds.saturating_add(seeds);
                if first.seed < entry.first.seed {
                    entry.first = first;
                }
            }
            Err(i) if self.classes.len() < MAX_CLASSES => self.classes.insert(i, ClassSeeds { class, seeds, first }),
            Err(_) => self.seeds_unclassed = self.seeds_unclassed.saturating_add(seeds),
        }
    }

    /// Adds one seed of `class`.
    pub fn add(&mut self, class: BugClass, seed: FailingSeed) {
        self.add_many(class, 1, seed);
    }

    /// Combines a shard's counts into these. Exact while the union stays within
    /// [`MAX_CLASSES`]; beyond, which classes are kept depends on the order of merging.
    pub fn merge(&mut self, other: &Groups) {
        for c in &other.classes {
            self.add_many(c.class.clone(), c.seeds, c.first.clone());
        }
        self.seeds_unclassed = self.seeds_unclassed.saturating_add(other.seeds_unclassed);
    }

    /// The classes in the order they are shrunk: those whose fault kinds share one with
    /// `prefer` first (the kinds of the template's own story, [`story_kinds`]), then by their
    /// smallest seed.
    pub fn in_order(&self, prefer: &[String]) -> Vec<&ClassSeeds> {
        let mut all: Vec<&ClassSeeds> = self.classes.iter().collect();
        let apart = |c: &ClassSeeds| !c.class.fault_kinds.iter().any(|k| prefer.contains(k));
        all.sort_by_key(|c| (apart(c), c.first.seed, c.class.clone()));
        all
    }
}

/// The fault kinds of `template`'s own story (its `[[fault]]` entries), as the generator names
/// them: a clock step on a replica is the `replica-clock` kind. What the scenario is about: an
/// exploration without an implementation bug shrinks the violations of these kinds first.
pub fn story_kinds(template: &crate::scenario::Scenario) -> Vec<String> {
    let replicas = super::topology(template).replicas;
    let mut kinds: Vec<String> = template
        .faults
        .sorted()
        .iter()
        .map(|f| match &f.fault {
            lockstep_sim::Fault::ClockJump { node, .. } if replicas.contains(node) => "replica-clock".to_string(),
            fault => fault.kind().to_string(),
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The checker a violation is classed (and shrunk) by, among `checkers` that `wanted` accepts:
/// the one nearest the cause — `ownership` (a command on another grant's key), then
/// `lease-validity` (a holder told of validity its masters do not hold), then `liveness` (a key
/// left behind), then the checkers of what follows from those (two holders, the resource's
/// writes) in the checkers' order.
pub fn cause_first(checkers: &[String], wanted: &dyn Fn(&str) -> bool) -> Option<String> {
    let rank = |c: &String| match c.as_str() {
        "ownership" => 0,
        "lease-validity" => 1,
        "liveness" => 2,
        _ => 3,
    };
    let mut ordered: Vec<&String> = checkers.iter().filter(|c| wanted(c)).collect();
    ordered.sort_by_key(|c| rank(c)); // stable: the checkers' own order among the rest
    ordered.first().map(|c| c.to_string())
}

/// Which lock operation sent each master command of a history ([`Senders::of`]): what a
/// witness's commands are attributed to ([`witness_ops`]).
#[derive(Debug, Default)]
pub struct Senders {
    /// The operation that sends commands of each shape ([`command_shape`]), learnt from the
    /// commands that arrived while their sender had exactly one lock operation in flight (the
    /// first seen wins).
    by_shape: BTreeMap<String, String>,
    /// Per command (its history position): its sender's lock operation in flight when it
    /// arrived (the latest begun of those), else its sender's latest begun.
    by_seq: BTreeMap<u64, String>,
}

impl Senders {
    /// One pass over `history`.
    pub fn of(history: &[lockstep_sim::Event]) -> Senders {
        let mut senders = Senders::default();
        // Per process: its lock operations begun, in order, and whether each has ended.
        let mut begun: BTreeMap<&str, Vec<(u64, &String, bool)>> = BTreeMap::new();
        for e in history {
            match &e.kind {
                EventKind::Op { id, op, phase, .. } if is_lock_op(op) => {
                    let ops = begun.entry(e.node.as_str()).or_default();
                    match phase {
                        lockstep_sim::Phase::Invoke => ops.push((*id, op, false)),
                        _ => ops.iter_mut().filter(|o| o.0 == *id).for_each(|o| o.2 = true),
                    }
                }
                EventKind::Command {
                    client: Some(client),
                    args,
                    ..
                } => {
                    let Some(ops) = begun.get(client.as_str()) else {
                        continue;
                    };
                    let mut in_flight = ops.iter().filter(|o| !o.2);
                    if let (Some(only), None) = (in_flight.next(), in_flight.next()) {
                        senders
                            .by_shape
                            .entry(command_shape(args))
                            .or_insert_with(|| only.1.clone());
                    }
                    let sender = ops.iter().rev().find(|o| !o.2).or(ops.last());
                    if let Some((_, op, _)) = sender {
                        senders.by_seq.insert(e.seq, op.to_string());
                    }
                }
                _ => {}
            }
        }
        senders
    }

    /// The lock operation that sent `command`: the one its shape is known to come from (a late
    /// request — a renewal held on the network until its client releases — is still told by its
    /// shape), else its sender's operation in flight when it arrived, else its latest begun.
    fn sender_of(&self, command: &lockstep_sim::Event) -> Option<String> {
        let EventKind::Command { args, .. } = &command.kind else {
            return None;
        };
        self.by_shape
            .get(&command_shape(args))
            .or_else(|| self.by_seq.get(&command.seq))
            .cloned()
    }
}

/// The lock operations a checker's witness involves, sorted, each once: for a witness with
/// master commands, the operations that sent them ([`Senders`]: `extend` for a renewal that
/// re-created a key, `release` for a release that deleted another grant's); otherwise the
/// operations in the witness (`acquire` for two grants that overlap). The command names
/// themselves are left out: which of them a witness shows depends on the plan, the operation
/// that sent them does not; nor are a hold's end markers (a release's invoke, an abort).
pub fn witness_ops(result: &CheckResult, senders: &Senders) -> Vec<String> {
    let commands: Vec<&lockstep_sim::Event> = result
        .witness
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Command { client: Some(_), .. }))
        .collect();
    let mut ops: Vec<String> = match commands.is_empty() {
        false => commands.iter().filter_map(|e| senders.sender_of(e)).collect(),
        // The operations that completed in the witness (two grants: `acquire`); a hold's end
        // (a release's invoke, an abort) marks when a grant was given up, not what went wrong.
        true => result
            .witness
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Op { op, phase, .. } if *phase != lockstep_sim::Phase::Invoke && op != names::ABORT => {
                    Some(op.clone())
                }
                _ => None,
            })
            .collect(),
    };
    ops.sort();
    ops.dedup();
    ops
}

/// A command's shape, without its keys and values: its name, the arguments before its first key
/// by lockstep's command table (a script's text and key count for `EVAL`, a function's name for
/// `FCALL`), and the flags among the rest as sent in capitals (`SET … NX PX` and `SET … XX PX`
/// differ; a lock's values are not capitals). One lock operation sends commands of one shape.
fn command_shape(args: &[String]) -> String {
    let name = args.first().map(|a| a.to_ascii_uppercase()).unwrap_or_default();
    let first_key = lockstep_sim::redis::table::resolve(args)
        .and_then(|spec| spec.key_positions(args).into_iter().min())
        .unwrap_or(args.len());
    let before: Vec<&str> = args.iter().take(first_key).skip(1).map(String::as_str).collect();
    let flags: Vec<&str> = args
        .iter()
        .skip(first_key + 1)
        .filter(|a| !a.is_empty() && a.chars().all(|c| c.is_ascii_uppercase()))
        .map(String::as_str)
        .collect();
    format!("{name} {} | {}", before.join(" "), flags.join(" "))
}

/// Whether `op` is a lock operation (the resource's reads and writes send no command to a
/// master).
fn is_lock_op(op: &str) -> bool {
    op != names::READ && op != names::WRITE
}

/// The sorted, deduplicated fault kinds of `faults`.
pub fn kinds_of(faults: &[crate::explore::kinds::GenFault]) -> Vec<String> {
    let mut kinds: Vec<String> = faults.iter().map(|f| f.kind().to_string()).collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// A distinct bug after shrinking: the class of its representative with the fault kinds its
/// shrunk plan needs, the seeds counted into it, and what its shrink gave.
#[derive(Debug, Clone)]
pub struct DistinctGroup<T> {
    /// Checker and operations of the class shrunk; fault kinds of the shrunk plan (or, when not
    /// shrunk, of the class's plan).
    pub class: BugClass,
    /// Seeds counted into this group (its own class and every class that joined it).
    pub seeds: u64,
    /// Its smallest seed.
    pub first_seed: u64,
    /// The seed shrunk, with its shrink's result (`None`: not shrunk — the shrink budget ran
    /// out before this group).
    pub shrunk: Option<(u64, T)>,
}

/// Shrinks one class's first seed: the result and the fault kinds of its shrunk plan (`None`:
/// nothing found).
pub type ShrinkOne<'a, T> = dyn FnMut(&ClassSeeds) -> (T, Option<Vec<String>>) + 'a;

/// The distinct groups of a [`Groups`], built by shrinking one class at a time
/// ([`Distinct::build`]).
#[derive(Debug, Clone)]
pub struct Distinct<T> {
    /// The groups, in the order they were found.
    pub groups: Vec<DistinctGroup<T>>,
}

impl<T> Distinct<T> {
    /// Groups `groups`' classes in [`Groups::in_order`] (`prefer`: the kinds to take first),
    /// shrinking at most `max_shrinks` of them: `shrink(class seeds)`
    /// gives the shrink's result and the fault kinds of its plan (`None` kinds: the shrink found
    /// nothing; the class then stands as a group of its own, its drawn kinds kept). A class is
    /// not shrunk when an earlier group has its checker and operations and its kinds contain
    /// that group's kinds (the violation needs no more than what the class already has).
    pub fn build(
        groups: &Groups,
        (max_shrinks, prefer): (usize, &[String]),
        shrink: &mut ShrinkOne<'_, T>,
    ) -> Distinct<T> {
        let mut out: Vec<DistinctGroup<T>> = Vec::new();
        let mut shrinks = 0;
        for class in groups.in_order(prefer) {
            let same_cause =
                |g: &DistinctGroup<T>| g.class.checker == class.class.checker && g.class.ops == class.class.ops;
            let subsumed = out.iter().position(|g| {
                g.shrunk.is_some()
                    && same_cause(g)
                    && g.class.fault_kinds.iter().all(|k| class.class.fault_kinds.contains(k))
            });
            if let Some(i) = subsumed {
                out[i].join(class);
                continue;
            }
            if shrinks >= max_shrinks {
                // Past the shrink budget: the class as drawn is listed as a group of its own.
                out.push(DistinctGroup {
                    class: class.class.clone(),
                    seeds: class.seeds,
                    first_seed: class.first.seed,
                    shrunk: None,
                });
                continue;
            }
            shrinks += 1;
            let (result, kinds) = shrink(class);
            let kinds = kinds.unwrap_or_else(|| class.class.fault_kinds.clone());
            let shrunk_class = BugClass {
                fault_kinds: kinds,
                ..class.class.clone()
            };
            match out.iter().position(|g| g.shrunk.is_some() && g.class == shrunk_class) {
                // The same bug by another plan: counted there; its shrink is not another group.
                Some(i) => out[i].join(class),
                None => out.push(DistinctGroup {
                    class: shrunk_class,
                    seeds: class.seeds,
                    first_seed: class.first.seed,
                    shrunk: Some((class.first.seed, result)),
                }),
            }
        }
        Distinct { groups: out }
    }
}

impl<T> DistinctGroup<T> {
    /// Counts `class`'s seeds into this group.
    fn join(&mut self, class: &ClassSeeds) {
        self.seeds = self.seeds.saturating_add(class.seeds);
        self.first_seed = self.first_seed.min(class.first.seed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(checker: &str, ops: &[&str], kinds: &[&str]) -> BugClass {
        BugClass {
            checker: checker.into(),
            ops: ops.iter().map(|s| s.to_string()).collect(),
            fault_kinds: kinds.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn seed(seed: u64) -> FailingSeed {
        FailingSeed {
            seed,
            checkers: vec!["ownership".into()],
            fault_kinds: Vec::new(),
            faults: 0,
            case: None,
            drawn: Vec::new(),
        }
    }

    fn event(seq: u64, node: &str, kind: EventKind) -> lockstep_sim::Event {
        lockstep_sim::Event {
            seq,
            at_us: seq * 1_000,
            node: node.into(),
            wall_ms: 0,
            monotonic_ms: 0,
            kind,
        }
    }

    fn op(id: u64, name: &str, phase: lockstep_sim::Phase) -> EventKind {
        EventKind::Op {
            id,
            phase,
            op: name.into(),
            data: serde_json::Value::Null,
        }
    }

    fn command(args: &[&str]) -> EventKind {
        EventKind::Command {
            conn: 1,
            args: args.iter().map(|a| a.to_string()).collect(),
            reply: "1".into(),
            effects: Vec::new(),
            client: Some("client-1".into()),
        }
    }

    /// A renewal's request held on the network lands while its client releases: the command is
    /// told by its shape (learnt from the renewal that arrived while only `extend` was in
    /// flight), not by the operation in flight when it landed.
    #[test]
    fn a_witness_command_is_the_operation_that_sends_its_shape() {
        use lockstep_sim::Phase::{Invoke, Ok};
        let history = vec![
            event(0, "client-1", op(1, "extend", Invoke)),
            event(
                1,
                "redis-1",
                command(&["EVAL", "renew-script", "1", "lock", "v1", "5000"]),
            ),
            event(2, "client-1", op(1, "extend", Ok)),
            event(3, "client-1", op(2, "extend", Invoke)),
            event(4, "client-1", op(3, "write", Invoke)),
            event(5, "client-1", op(4, "release", Invoke)),
            event(
                6,
                "redis-1",
                command(&["EVAL", "renew-script", "1", "lock", "v1", "5000"]),
            ),
            event(7, "redis-1", command(&["DEL", "lock"])),
        ];
        let result = |seq: usize| {
            CheckResult::new(
                crate::checker::CheckerName::Ownership,
                crate::model::Verdict::Invalid,
                String::new(),
                vec![history[seq].clone()],
            )
        };
        let senders = Senders::of(&history);
        assert_eq!(witness_ops(&result(6), &senders), vec!["extend".to_string()]);
        // A shape never seen alone: the sender's latest lock operation in flight (not its write).
        assert_eq!(witness_ops(&result(7), &senders), vec!["release".to_string()]);
        // Without commands: the operations that completed in the witness, not a hold's end.
        let grants = CheckResult::new(
            crate::checker::CheckerName::MutualExclusion,
            crate::model::Verdict::Invalid,
            String::new(),
            vec![history[2].clone(), history[5].clone()],
        );
        assert_eq!(witness_ops(&grants, &senders), vec!["extend".to_string()]);
    }

    #[test]
    fn counts_merge_exactly_whatever_the_order() {
        let a = class("ownership", &["DEL", "release"], &["pause"]);
        let b = class("mutual-exclusion", &["acquire"], &["clock-jump", "pause"]);
        let mut one = Groups::default();
        let mut left = Groups::default();
        let mut right = Groups::default();
        for (i, c) in [(7, &a), (3, &b), (9, &a), (1, &a), (12, &b)] {
            one.add(c.clone(), seed(i));
            match i % 2 {
                0 => left.add(c.clone(), seed(i)),
                _ => right.add(c.clone(), seed(i)),
            }
        }
        let mut merged = right.clone();
        merged.merge(&left);
        assert_eq!(merged, one);
        let first: Vec<(u64, u64)> = one.in_order(&[]).iter().map(|c| (c.first.seed, c.seeds)).collect();
        assert_eq!(first, vec![(1, 3), (3, 2)]);
    }

    #[test]
    fn classes_past_the_cap_are_counted_not_kept() {
        let mut groups = Groups::default();
        for i in 0..(MAX_CLASSES as u64 + 5) {
            groups.add(class("ownership", &[], &[&format!("k{i:04}")]), seed(i));
        }
        assert_eq!(groups.classes.len(), MAX_CLASSES);
        assert_eq!(groups.seeds_unclassed, 5);
    }

    /// Two defects of one lock with the same checker and operations, told apart by the fault
    /// kinds their shrunk plans need; a third class whose plan holds the first's kinds joins it
    /// without a shrink; a fourth shrinks to the second's kinds and joins it.
    #[test]
    fn classes_are_shrunk_once_per_distinct_cause() {
        let mut groups = Groups::default();
        groups.add(class("mutual-exclusion", &["acquire"], &["crash", "pause"]), seed(0));
        groups.add(
            class("mutual-exclusion", &["acquire"], &["failover", "replica-clock-jump"]),
            seed(4),
        );
        groups.add(class("mutual-exclusion", &["acquire"], &["crash", "latency"]), seed(6));
        groups.add(
            class(
                "mutual-exclusion",
                &["acquire"],
                &["failover", "pause", "replica-clock-jump"],
            ),
            seed(8),
        );
        groups.add(class("ownership", &["DEL", "release"], &["pause"]), seed(9));
        let mut shrunk = Vec::new();
        let distinct = Distinct::build(&groups, (10, &[]), &mut |c: &ClassSeeds| {
            shrunk.push(c.first.seed);
            let kinds = match c.first.seed {
                0 | 6 => vec!["crash".to_string()],
                4 | 8 => vec!["failover".to_string(), "replica-clock-jump".to_string()],
                _ => vec!["pause".to_string()],
            };
            (c.first.seed, Some(kinds))
        });
        // Seed 6's class holds `crash`: it joins seed 0's group unshrunk; 8 holds failover and
        // replica-clock-jump: it joins 4's unshrunk too.
        assert_eq!(shrunk, vec![0, 4, 9]);
        let summary: Vec<(String, Vec<String>, u64, u64)> = distinct
            .groups
            .iter()
            .map(|g| {
                (
                    g.class.checker.clone(),
                    g.class.fault_kinds.clone(),
                    g.seeds,
                    g.first_seed,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("mutual-exclusion".into(), vec!["crash".into()], 2, 0),
                (
                    "mutual-exclusion".into(),
                    vec!["failover".into(), "replica-clock-jump".into()],
                    2,
                    4
                ),
                ("ownership".into(), vec!["pause".into()], 1, 9),
            ]
        );
    }

    #[test]
    fn a_class_shrinking_to_a_known_group_joins_it_and_the_budget_leaves_the_rest_listed() {
        let mut groups = Groups::default();
        groups.add(class("ownership", &["DEL"], &["pause"]), seed(1));
        groups.add(class("ownership", &["DEL"], &["latency"]), seed(2));
        groups.add(class("ownership", &["DEL"], &["partition"]), seed(3));
        groups.add(class("ownership", &["DEL"], &["hold"]), seed(5));
        let distinct = Distinct::build(&groups, (2, &[]), &mut |c: &ClassSeeds| match c.first.seed {
            // A latency plan whose shrink needs only a pause, as seed 1's: it joins that group.
            2 => ((), Some(vec!["pause".to_string()])),
            _ => ((), Some(c.class.fault_kinds.clone())),
        });
        let rows: Vec<(Vec<String>, u64, bool)> = distinct
            .groups
            .iter()
            .map(|g| (g.class.fault_kinds.clone(), g.seeds, g.shrunk.is_some()))
            .collect();
        assert_eq!(
            rows,
            vec![
                (vec!["pause".to_string()], 2, true),
                (vec!["partition".to_string()], 1, false),
                (vec!["hold".to_string()], 1, false),
            ]
        );
    }
}
