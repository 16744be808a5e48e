//! The workload settings that use the grant, through the shipped `workload-*` scenarios: the
//! verdicts they expect, and the history facts behind them — the holder's refused write, the
//! work that lasts until the validity, the tasks the checkers name, the reads and writes of a
//! turn — plus the default workload writing exactly what it always wrote.

use lockstep::history::{OpData, OpHistory, OpName, Outcome};
use lockstep::model::Verdict;
use lockstep::ops::{OpError, TASK_FIELD};
use lockstep::run::{run_scenario, ScenarioRun};
use lockstep::scenario::Scenario;
use lockstep::sim::{EventKind, Phase};
use std::collections::BTreeSet;
use std::path::Path;

fn scenario(file: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(file);
    Scenario::from_file(&path).expect("the shipped file parses")
}

fn run(file: &str) -> ScenarioRun {
    let run = run_scenario(&scenario(file), None).expect("the world runs");
    assert!(run.as_expected(), "{file}: {:?}", run.mismatches);
    run
}

fn verdict(run: &ScenarioRun, checker: &str) -> Verdict {
    run.verdict(checker).expect("the checker ran")
}

fn explanation<'r>(run: &'r ScenarioRun, checker: &str) -> &'r str {
    &run.results
        .iter()
        .find(|r| r.checker == checker)
        .expect("ran")
        .explanation
}

/// (node, value, accepted) of every write the resource judged.
fn resource_writes(run: &ScenarioRun) -> Vec<(String, i64, bool)> {
    run.history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ResourceWrite {
                client,
                value,
                accepted,
                ..
            } => Some((client.clone(), *value, *accepted)),
            _ => None,
        })
        .collect()
}

/// The errors of the writes that failed, by process.
fn failed_writes(run: &ScenarioRun) -> Vec<(String, OpError)> {
    let ops = OpHistory::new(&run.history);
    ops.operations()
        .iter()
        .filter(|op| op.name == OpName::Write && ops.outcome(op) == Outcome::Fail)
        .filter_map(|op| {
            let done = ops.steps()[op.completion?].op()?;
            match &done.data {
                Some(OpData::Error(e)) => Some((op.process.to_string(), e.clone())),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn the_paused_holder_refuses_its_own_write_and_the_resource_stays_safe() {
    let on = run("workload-refuse-write-after-validity.toml");
    let off = run("workload-refuse-write-after-validity-off.toml");
    // Both overlap: the check cannot shorten the pause.
    assert_eq!(verdict(&on, "mutual-exclusion"), Verdict::Invalid);
    assert_eq!(verdict(&off, "mutual-exclusion"), Verdict::Invalid);
    // With the refusal, the resource is safe; without it, client-1's late write wins.
    for checker in ["stale-write", "lost-update"] {
        assert_eq!(verdict(&on, checker), Verdict::Valid, "{checker}");
        assert_eq!(verdict(&off, checker), Verdict::Invalid, "{checker}");
    }
    assert_eq!(resource_writes(&on), [("client-2".to_string(), 1, true)]);
    assert_eq!(
        resource_writes(&off),
        [("client-2".to_string(), 1, true), ("client-1".to_string(), 1, true)]
    );

    // The refusal is in the history: client-1's write fails, refused by itself, about 6 s
    // after its validity (9.995 s from 0.006 s) ran out — it woke at 16 s.
    let refused = failed_writes(&on);
    assert_eq!(refused.len(), 1, "{refused:?}");
    let (process, error) = &refused[0];
    assert_eq!(process, "client-1");
    assert!(error.is_holder_refusal(), "{error:?}");
    let over_ms: i64 = error
        .error
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .expect("the error says by how much");
    assert!((5_900..=6_100).contains(&over_ms), "{}", error.error);
    assert!(failed_writes(&off).is_empty());
    // The timeline shows it.
    let ops = OpHistory::new(&on.history);
    let lines: Vec<String> = ops
        .steps()
        .iter()
        .filter_map(lockstep::report::narrative::line)
        .collect();
    assert!(
        lines.iter().any(|l| l.starts_with("write refused by the holder")),
        "{lines:#?}"
    );
}

#[test]
fn work_until_validity_stops_at_the_margin_by_the_holders_clock() {
    let safe = run("workload-until-validity-drift.toml");
    let unsafe_run = run("workload-until-validity-drift-unsafe.toml");
    for checker in ["mutual-exclusion", "lost-update", "lease-validity"] {
        assert_eq!(verdict(&safe, checker), Verdict::Valid, "{checker}");
        assert_eq!(verdict(&unsafe_run, checker), Verdict::Invalid, "{checker}");
    }
    // In both runs client-1's write is invoked at its validity less the 50 ms margin, by its
    // own monotonic clock (within the read's round trip, a few ms).
    for run in [&safe, &unsafe_run] {
        let ops = OpHistory::new(&run.history);
        let hold = ops
            .holds()
            .iter()
            .find(|h| h.process == "client-1")
            .expect("client-1 held");
        let from_ms = hold
            .grant
            .validity_from_ms
            .expect("redlock says where validity counts from");
        let stop_ms = from_ms + hold.grant.validity_ms as i64 - 50;
        let write = ops
            .operations()
            .iter()
            .find(|op| op.process == "client-1" && op.name == OpName::Write)
            .expect("client-1 wrote");
        let at_ms = ops.steps()[write.invoke].event.monotonic_ms;
        assert!(
            (stop_ms..=stop_ms + 2).contains(&at_ms),
            "write at {at_ms}, stop at {stop_ms}"
        );
    }
    // The slow clock makes the same local work last longer in true time: past the 2 s TTL.
    let write_us = |run: &ScenarioRun| {
        run.history
            .events()
            .iter()
            .find(|e| {
                e.node == "client-1"
                    && matches!(&e.kind, EventKind::Op { op, phase: Phase::Invoke, .. } if op == "write")
            })
            .map(|e| e.at_us)
            .expect("client-1 wrote")
    };
    assert!(write_us(&safe) < 2_000_000, "{}", write_us(&safe));
    assert!(write_us(&unsafe_run) > 2_000_000, "{}", write_us(&unsafe_run));
}

#[test]
fn two_tasks_of_one_client_overlapping_is_a_mutual_exclusion_violation() {
    let run = run("workload-tasks-overlap.toml");
    assert_eq!(verdict(&run, "mutual-exclusion"), Verdict::Invalid);
    let text = explanation(&run, "mutual-exclusion");
    assert!(
        text.contains("client-1 task 1 (grant")
            && text.contains("client-1 task 2 (grant")
            && text.contains(" and client-1 task "),
        "{text}"
    );
    let ops = OpHistory::new(&run.history);
    let mut holders: Vec<(&str, Option<u32>)> = ops.holds().iter().map(|h| (h.process, h.task)).collect();
    holders.sort();
    assert_eq!(holders, [("client-1", Some(1)), ("client-1", Some(2))]);
    // The first task's hold ends at its own release, not at the other task's acquire.
    let first = &ops.holds()[0];
    let end = first.end.expect("released");
    assert_eq!(end.kind, lockstep::history::HoldEndKind::Release);
    assert!(end.event.at_us > ops.holds()[1].granted.at_us);
}

#[test]
fn tasks_sharing_a_lock_object_take_turns_with_several_reads_and_writes() {
    let run = run("workload-tasks-shared-lock-object.toml");
    for checker in ["mutual-exclusion", "stale-write", "lost-update", "token-order"] {
        assert_eq!(verdict(&run, checker), Verdict::Valid, "{checker}");
    }
    let ops = OpHistory::new(&run.history);
    // Four tasks (two per client), two grants each.
    let holders: BTreeSet<(&str, Option<u32>)> = ops.holds().iter().map(|h| (h.process, h.task)).collect();
    let expected: BTreeSet<(&str, Option<u32>)> = [
        ("client-1", Some(1)),
        ("client-1", Some(2)),
        ("client-2", Some(1)),
        ("client-2", Some(2)),
    ]
    .into();
    assert_eq!(holders, expected);
    assert_eq!(ops.holds().len(), 8);
    // Each turn: two reads, then two writes, every one under the hold's grant and token.
    for hold in ops.holds() {
        let names: Vec<OpName> = hold.requests.iter().map(|&i| ops.operations()[i].name).collect();
        assert_eq!(
            names,
            [OpName::Read, OpName::Read, OpName::Write, OpName::Write],
            "{}",
            hold.holder()
        );
        for &i in &hold.requests {
            let op = &ops.operations()[i];
            assert_eq!((op.process, op.task), (hold.process, hold.task));
        }
    }
    // 16 accepted writes counting 1..=16: nothing lost.
    let values: Vec<i64> = resource_writes(&run)
        .into_iter()
        .filter(|(_, _, accepted)| *accepted)
        .map(|(_, v, _)| v)
        .collect();
    assert_eq!(values, (1..=16).collect::<Vec<i64>>());
}

#[test]
fn a_default_workload_records_no_task_and_one_read_and_write_per_turn() {
    let run = run("baseline-token-release.toml");
    let ops = OpHistory::new(&run.history);
    for event in run.history.events() {
        if let EventKind::Op { data, .. } = &event.kind {
            assert!(data.get(TASK_FIELD).is_none(), "{data}");
        }
    }
    assert!(ops.holds().iter().all(|h| h.task.is_none()));
    for hold in ops.holds().iter().filter(|h| h.given_up()) {
        let names: Vec<OpName> = hold.requests.iter().map(|&i| ops.operations()[i].name).collect();
        assert_eq!(names, [OpName::Read, OpName::Write]);
    }
}

/// The times of the client's write invokes in `scenario` with `lock` lines in its `[lock]`.
fn write_times(lock: &str) -> Vec<u64> {
    let source = format!(
        "name = \"streams\"\ndescription = \"d\"\nseed = 11\nduration_ms = 6000\n[topology]\nmasters = 1\nclients = 1\n\
         [lock]\nttl_ms = 2000\n{lock}\n[workload]\nuntil_ms = 5000\nwork_ms = [20, 400]\nthink_ms = 30\n"
    );
    let scenario = lockstep::scenario::Scenario::from_str(&source, "<test>").expect("a valid scenario");
    let run = lockstep::run::run_scenario(&scenario, None).expect("it runs");
    run.history
        .events()
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::Op { op, phase, .. }
                if op == "write" && *phase == Phase::Invoke)
        })
        .map(|e| e.at_us)
        .collect()
}

#[test]
fn what_a_lock_draws_never_shifts_the_workloads_draws() {
    // A lock drawing a random value per acquisition and a lock drawing nothing (a per-client
    // value) meet the same work times: lock clients draw from the node's side stream.
    let random = write_times("algorithm = \"token-release\"");
    let fixed = write_times("algorithm = \"script\"\nvalue = \"per-client\"");
    assert!(random.len() > 5, "{random:?}");
    let gaps = |t: &[u64]| t.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>();
    // Compared as gaps rounded to 10 ms: the two locks' commands differ by a few µs per round.
    let rounded = |t: &[u64]| gaps(t).iter().map(|g| (g + 5_000) / 10_000).collect::<Vec<_>>();
    assert_eq!(rounded(&random), rounded(&fixed));
}

/// Issue 50, item 8: a renewal already sent when the holder stops the renewal (to release) is
/// recorded as ended with an unknown outcome (`info`) — its request may still land — not left
/// as an `extend` invoke with no completion, which no checker judged.
#[test]
fn a_renewal_in_flight_at_release_ends_as_info() {
    let text = r#"
name = "renewal-in-flight-at-release"
description = "a renewal held on the network when the holder releases"
seed = 1
duration_ms = 6000

[topology]
masters = 1

[lock]
algorithm = "script"
ttl_ms = 5000
renew = "every"
extend_every_ms = 1000

[lock.extend]
lua = '''
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0
'''
args = ["{value}", "{ttl_ms}"]
success = "one"

[workload]
iterations = 1

[[client]]
name = "client-1"
start_ms = 0
work_ms = 2020

[[fault]]
at_ms = 1990
kind = "hold"
a = "client-1"
b = "redis-1"

[[fault]]
at_ms = 2600
kind = "release"
a = "client-1"
b = "redis-1"
"#;
    let scenario = Scenario::from_str(text, "in-flight").expect("parses");
    let run = run_scenario(&scenario, None).expect("the world runs");
    let ops = OpHistory::new(&run.history);
    let extends: Vec<_> = ops.operations().iter().filter(|op| op.name == OpName::Extend).collect();
    assert!(extends.len() >= 2, "{extends:?}");
    // Every extension has a completion; the one in flight at the release is `info`.
    assert!(extends.iter().all(|op| op.completion.is_some()), "{extends:?}");
    let last = extends.last().unwrap();
    assert_eq!(ops.outcome(last), Outcome::Info);
    let completion = &ops.steps()[last.completion.unwrap()].event;
    let EventKind::Op { data, .. } = &completion.kind else {
        panic!("{completion:?}")
    };
    assert!(
        data["error"].as_str().unwrap_or_default().contains("in flight"),
        "{data}"
    );
    // It ended at the release, before the held request could land.
    let release = ops
        .operations()
        .iter()
        .find(|op| op.name == OpName::Release)
        .expect("released");
    assert!(
        ops.steps()[release.invoke].event.at_us <= completion.at_us + 1_000,
        "{completion:?}"
    );
}
