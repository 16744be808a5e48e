//! The explorer's draws are pinned: for fixed seeds and templates, the generated fault plans
//! (random, lock-aware, anchored, operation-aimed, mutated, exhaustive), the steps of their
//! proptest shrinking, their expansion into world faults, their descriptions, strengths and the
//! assumption-bounded profile's judgement of them are what `tests/fixtures/explore-draws.jsonl`
//! says, byte for byte (the JSON is each fault's serialized form; long values by their digest).
//!
//! A change that moves a draw, a shrink step, an aim or a serialization moves every committed
//! exploration's digest; this test says which line moved first. A change that means to move them
//! regenerates the file with `LOCKSTEP_WRITE_DRAWS=1 cargo test --test explore explore_draws` and
//! says so in its commit.
//!
//! The kinds are the twelve the explorer had before `replica-clock` (listed here, not read from
//! `GENERATED_KINDS`): a kind added later leaves these lines as they are.

use lockstep::explore::anchors::{aims_at_operation, anchored_case, operation_case, record};
use lockstep::explore::assumptions::Assumptions;
use lockstep::explore::coverage::mutate;
use lockstep::explore::exhaustive::{schedules, Bounds};
use lockstep::explore::generate::{case_strategy, case_tree, ExploreCase};
use lockstep::explore::shrink::describe;
use lockstep::explore::{topology, LockRef};
use lockstep::model::fault::FaultProfile;
use lockstep::scenario::standard::standard_template;
use lockstep::scenario::Scenario;
use std::fmt::Write;
use std::path::Path;

const FIXTURE: &str = "tests/fixtures/explore-draws.jsonl";

/// The kinds of 2024's explorer, in `GENERATED_KINDS` order.
const KINDS: [&str; 12] = [
    "pause",
    "clock-jump",
    "drift",
    "partition",
    "hold",
    "latency",
    "loss",
    "crash",
    "power-loss",
    "failover",
    "rolling-restart",
    "drop-reply",
];

fn templates() -> Vec<Scenario> {
    use lockstep::model::{Algorithm, Fencing};
    use lockstep_sim::FencingMode;
    let mut out = vec![
        standard_template(Algorithm::TokenRelease, Fencing::None, FencingMode::Unfenced, 1).unwrap(),
        standard_template(Algorithm::Redlock, Fencing::None, FencingMode::Unfenced, 1).unwrap(),
    ];
    for file in [
        "scenarios/single-master-failover.toml",
        "scenarios/redlock-crash-restart-power-loss.toml",
        "tests/fixtures/false-alarms/failover-fenced.toml",
    ] {
        out.push(Scenario::from_file(Path::new(file)).unwrap());
    }
    out
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

/// A short stable digest of a value's JSON (FNV-1a), for the lines that would be long.
fn digest<T: serde::Serialize>(v: &T) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in json(v).bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Every line the fixture pins for one case: the case, its world plan, each fault's words and
/// strength, and what the assumption-bounded profile makes of it.
fn case_lines(out: &mut String, tag: &str, template: &Scenario, case: &ExploreCase) {
    let present = template.node_names();
    let _ = writeln!(out, "{tag} case {}", json(case));
    let _ = writeln!(out, "{tag} plan {}", digest(&case.plan(&present)));
    for f in &case.faults {
        let _ = writeln!(out, "{tag} fault {} | {} | {}", f.kind(), describe(f), f.magnitude());
    }
    let a = Assumptions::of(template);
    let _ = writeln!(out, "{tag} broken {}", json(&a.classify(case)));
    let _ = writeln!(out, "{tag} bound {}", json(&a.bound(case.clone())));
}

fn draws() -> String {
    let mut out = String::new();
    for template in templates() {
        let name = template.name.clone();
        let topo = topology(&template);
        for lock_aware in [false, true] {
            let profile = FaultProfile {
                kinds: KINDS.iter().map(|k| k.to_string()).collect(),
                lock_aware,
                ..FaultProfile::default()
            };
            let strategy = case_strategy(&topo, &profile);
            for seed in 0..12u64 {
                let tag = format!("{name} random aware={lock_aware} seed={seed}");
                let mut tree = case_tree(seed, &strategy);
                case_lines(&mut out, &tag, &template, &tree.current());
                // proptest's shrinking: a fixed walk of simplify and complicate steps.
                for step in 0..10 {
                    let moved = if step % 3 == 2 {
                        tree.complicate()
                    } else {
                        tree.simplify()
                    };
                    let _ = writeln!(out, "{tag} step {step} {moved} {}", digest(&tree.current()));
                }
            }
        }
        let prepared = LockRef::Template.prepare();
        let anchors = record(&template, &prepared).unwrap();
        let _ = writeln!(
            out,
            "{name} anchors {} operations {}",
            anchors.list.len(),
            anchors.operations.len()
        );
        let profile = FaultProfile {
            kinds: KINDS[..11].iter().map(|k| k.to_string()).collect(),
            ..FaultProfile::default()
        };
        for seed in 0..16u64 {
            let tag = format!("{name} anchored seed={seed}");
            let case = anchored_case(seed, &topo, &profile, &anchors);
            case_lines(&mut out, &tag, &template, &case);
            let _ = writeln!(out, "{tag} aims {}", aims_at_operation(seed, &profile));
            let faults = operation_case(seed, &topo, &profile, &anchors);
            let _ = writeln!(out, "{tag} operation {}", json(&faults));
            for m in 0..4u64 {
                let mutated = mutate(
                    &mut lockstep_sim::Seed(seed * 10 + m).stream("draws"),
                    &case,
                    &topo,
                    &profile,
                    &anchors,
                );
                let _ = writeln!(out, "{tag} mutated {m} {}", digest(&mutated));
            }
        }
        let (grid, singles, cases) = schedules(&template, &Bounds::default(), &prepared).unwrap();
        let _ = writeln!(out, "{name} exhaustive {grid} {singles} {}", cases.len());
        for case in cases.iter().take(singles) {
            let _ = writeln!(out, "{name} single {}", json(&case.faults));
        }
    }
    out
}

#[test]
fn the_explorers_draws_are_what_they_were() {
    let got = draws();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    if std::env::var_os("LOCKSTEP_WRITE_DRAWS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{FIXTURE}: {e}"));
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "{FIXTURE} line {} moved", i + 1);
    }
    assert_eq!(got.lines().count(), want.lines().count(), "{FIXTURE}: line count");
}

#[test]
fn serialized_plans_read_back_to_the_same_faults() {
    let want = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)).unwrap();
    let mut read = 0;
    for line in want.lines() {
        let Some((_, case)) = line.split_once(" case ") else {
            continue;
        };
        let parsed: ExploreCase = serde_json::from_str(case).unwrap();
        assert_eq!(json(&parsed), case);
        read += 1;
    }
    assert!(read > 100, "{read} cases");
}
