//! The script lock (`algorithm = "script"`): every bug-class pair of `scenarios/bug-*.toml` runs
//! with its expectations — the unsafe file invalid on the checker its story is about, the safe
//! twin valid on it — and bad script-lock input is a clear error naming file, line and field.

use lockstep::model::Verdict;
use lockstep::run::{run_scenario, ScenarioRun};
use lockstep::scenario::{Scenario, ScenarioError};
use lockstep::sim::{EventKind, Phase};
use std::path::{Path, PathBuf};

use crate::common;
use common::lockstep;

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn run(file: &str) -> ScenarioRun {
    let scenario = Scenario::from_file(&scenarios_dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let run = run_scenario(&scenario, None).expect("the world runs");
    assert!(
        run.as_expected(),
        "{file}: {:?}\n{}",
        run.mismatches,
        run.results
            .iter()
            .map(|r| format!("{} {} {}", r.checker, r.verdict.name(), r.explanation))
            .collect::<Vec<_>>()
            .join("\n")
    );
    run
}

/// (bug class file stem, the checkers its unsafe file breaks and its safe twin keeps valid).
const PAIRS: &[(&str, &[&str])] = &[
    ("bug-release-no-owner-check", &["mutual-exclusion"]),
    ("bug-release-check-then-delete", &["mutual-exclusion"]),
    (
        "bug-extend-no-owner-check",
        &["mutual-exclusion", "stale-write", "lost-update"],
    ),
    ("bug-extend-recreates-lock", &["stale-write", "lost-update"]),
    // Issue 50: two defects in one lock (its story shows the re-creating renewal).
    ("bug-two-defects", &["stale-write", "lost-update"]),
    (
        "bug-value-reuse-release-retry",
        &["mutual-exclusion", "stale-write", "lost-update"],
    ),
    (
        "bug-redlock-no-recheck",
        &["mutual-exclusion", "stale-write", "lost-update"],
    ),
    (
        "bug-validity-wall-clock",
        &["mutual-exclusion", "stale-write", "lost-update"],
    ),
    (
        "bug-renewal-failure-ignored",
        &["mutual-exclusion", "stale-write", "lost-update"],
    ),
    (
        "bug-validity-wrapping",
        &["mutual-exclusion", "stale-write", "lost-update"],
    ),
    ("bug-shared-lock-object", &["mutual-exclusion"]),
    // Issue 42 item 7: three bugs from lock libraries' trackers.
    ("bug-validity-first-attempt", &["spurious-loss"]),
    ("bug-renewal-races-release", &["spurious-loss"]),
    (
        "bug-expiry-client-clock",
        &["mutual-exclusion", "ownership", "stale-write", "lost-update"],
    ),
    // Issue 50: a renewal armed for first-attempt grants only; a token taken before the lock.
    (
        "bug-renewal-lapse-retried-grant",
        &["mutual-exclusion", "stale-write", "lost-update"],
    ),
    ("bug-token-two-step", &["token-order"]),
    // Issue 50 item 2: a lock-out, judged by the liveness checker.
    ("bug-lockout-no-ttl", &["liveness"]),
];

#[test]
fn every_bug_class_pair_meets_its_expectations() {
    for (stem, checkers) in PAIRS {
        let unsafe_run = run(&format!("{stem}.toml"));
        let safe_run = run(&format!("{stem}-safe.toml"));
        for checker in *checkers {
            assert_eq!(
                unsafe_run.verdict(checker),
                Some(Verdict::Invalid),
                "{stem}: {checker} should be invalid"
            );
            assert_eq!(
                safe_run.verdict(checker),
                Some(Verdict::Valid),
                "{stem}-safe: {checker} should be valid"
            );
        }
        // The files state these verdicts themselves.
        let unsafe_file = Scenario::from_file(&scenarios_dir().join(format!("{stem}.toml"))).unwrap();
        for checker in *checkers {
            assert_eq!(
                unsafe_file.expected(checker),
                Some(Verdict::Invalid),
                "{stem}: [expect] {checker}"
            );
        }
    }
}

#[test]
fn every_bug_file_is_a_pair_and_uses_the_script_lock() {
    let mut stems: Vec<String> = std::fs::read_dir(scenarios_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|n| n.starts_with("bug-") && n.ends_with(".toml"))
        .collect();
    stems.sort();
    assert_eq!(stems.len(), PAIRS.len() * 2, "{stems:?}");
    for (stem, _) in PAIRS {
        for file in [format!("{stem}.toml"), format!("{stem}-safe.toml")] {
            let scenario = Scenario::from_file(&scenarios_dir().join(&file)).unwrap();
            assert!(scenario.lock.script().is_some(), "{file} uses algorithm = \"script\"");
            let text = std::fs::read_to_string(scenarios_dir().join(&file)).unwrap();
            assert!(text.contains("Source: docs/sources.md"), "{file} names its source");
        }
    }
}

#[test]
fn a_script_scenario_round_trips_through_toml() {
    for (stem, _) in PAIRS {
        let scenario = Scenario::from_file(&scenarios_dir().join(format!("{stem}.toml"))).unwrap();
        let text = scenario.to_toml();
        let back = Scenario::from_str(&text, "written.toml").unwrap_or_else(|e| panic!("{stem}: {e}\n{text}"));
        assert_eq!(back, scenario, "{stem}\n{text}");
    }
}

/// A minimal script-lock scenario with `lock_extra` appended to its `[lock]` table.
fn scenario_with(lock_extra: &str) -> String {
    format!(
        r#"name = "bad"
description = "bad script lock"

[topology]
masters = 3

[lock]
algorithm = "script"
{lock_extra}
"#
    )
}

fn error(source: &str, origin: &str) -> ScenarioError {
    Scenario::from_str(source, origin).expect_err("the file is refused")
}

#[test]
fn a_lua_syntax_error_names_the_scenario_line_and_field() {
    let source = scenario_with(
        "\n[lock.release]\nlua = '''\nlocal v = redis.call('get', KEYS[1])\nif v == ARGV[1] then\n  return redis.call('del' KEYS[1])\nend\nreturn 0\n'''\n",
    );
    let err = error(&source, "bad.toml");
    // The bad call is on the script's line 3, the file's line 14.
    assert_eq!(err.path, "bad.toml");
    assert_eq!(err.line, Some(14), "{err}");
    assert_eq!(err.field.as_deref(), Some("lock.release.lua"), "{err}");
    assert!(err.message.contains("Lua syntax error"), "{err}");
    assert!(err.to_string().starts_with("bad.toml:14"), "{err}");
}

#[test]
fn a_script_calling_a_command_lockstep_lacks_is_refused_at_load_with_its_line() {
    let source = scenario_with(
        "\n[lock.release]\nlua = '''\nlocal v = redis.call('get', KEYS[1])\nif v == ARGV[1] then\n  return redis.call('NOSUCHCMD', KEYS[1])\nend\nreturn 0\n'''\n",
    );
    let err = error(&source, "bad.toml");
    assert_eq!(err.line, Some(14), "{err}");
    assert_eq!(err.field.as_deref(), Some("lock.release.lua"), "{err}");
    assert!(
        err.message.contains("`NOSUCHCMD`") && err.message.contains("does not have"),
        "{err}"
    );
    // A command scripts may not call (BLPOP is `noscript`) is refused the same way.
    let source = scenario_with("\n[lock.release]\nlua = '''\nreturn redis.pcall(\"blpop\", KEYS[1], 0)\n'''\n");
    let err = error(&source, "bad.toml");
    assert!(err.message.contains("not allow"), "{err}");
    // SETNX is lockstep's Redis's now: a script calling it passes this check.
    let source = scenario_with(
        "\n[lock.acquire]\nlua = '''\nif redis.call('setnx', KEYS[1], ARGV[1]) == 1 then return redis.call('pexpire', KEYS[1], ARGV[2]) end\nreturn 0\n'''\n",
    );
    if let Err(e) = Scenario::from_str(&source, "ok.toml") {
        assert!(!e.message.contains("does not have"), "{e}");
    }
}

#[test]
fn a_script_file_is_read_beside_the_scenario_and_checked() {
    let dir = std::env::temp_dir().join(format!("lockstep-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("release.lua"),
        "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('del', KEYS[1])\nend\nreturn 0\n",
    )
    .unwrap();
    std::fs::write(dir.join("broken.lua"), "return 1\nlocal = 2\n").unwrap();
    let good = dir.join("good.toml");
    std::fs::write(&good, scenario_with("\n[lock.release]\nlua_file = \"release.lua\"\n")).unwrap();
    let scenario = Scenario::from_file(&good).unwrap();
    assert!(
        scenario.to_toml().contains("redis.call('del', KEYS[1])"),
        "the script is inlined when written"
    );

    let broken = dir.join("broken.toml");
    std::fs::write(&broken, scenario_with("\n[lock.release]\nlua_file = \"broken.lua\"\n")).unwrap();
    let err = Scenario::from_file(&broken).unwrap_err();
    assert!(err.path.ends_with("broken.lua"), "{err}");
    assert_eq!(err.line, Some(2), "{err}");
    assert_eq!(err.field.as_deref(), Some("lock.release.lua_file"), "{err}");

    let missing = dir.join("missing.toml");
    std::fs::write(&missing, scenario_with("\n[lock.release]\nlua_file = \"nope.lua\"\n")).unwrap();
    let err = Scenario::from_file(&missing).unwrap_err();
    assert!(err.path.ends_with("missing.toml"), "{err}");
    assert_eq!(err.line, Some(11), "{err}");
    assert_eq!(err.field.as_deref(), Some("lock.release.lua_file"), "{err}");
    assert!(err.message.contains("cannot read script file"), "{err}");

    let escape = dir.join("escape.toml");
    std::fs::write(
        &escape,
        scenario_with("\n[lock.release]\nlua_file = \"../release.lua\"\n"),
    )
    .unwrap();
    let err = Scenario::from_file(&escape).unwrap_err();
    assert!(err.message.contains("`..` is not allowed"), "{err}");
    assert_eq!(err.line, Some(11), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_placeholder_names_the_element() {
    let source = scenario_with("\n[lock.acquire]\ncommand = [\"SET\", \"{key}\",\n  \"{valeu}\", \"NX\"]\n");
    let err = error(&source, "bad.toml");
    assert_eq!(err.line, Some(12), "{err}");
    assert_eq!(err.field.as_deref(), Some("lock.acquire.command[2]"), "{err}");
    assert!(err.message.contains("unknown placeholder `{valeu}`"), "{err}");

    let source = scenario_with("\n[lock.release]\nsteps = [\n  { command = [\"GET\", \"{key}\"], success = \"value\" },\n  { command = [\"DEL\", \"{ttl_ms}\"] },\n]\n");
    let err = error(&source, "bad.toml");
    assert_eq!(err.line, Some(13), "{err}");
    assert_eq!(err.field.as_deref(), Some("lock.release.steps[1].command[1]"), "{err}");
}

#[test]
fn a_quorum_larger_than_the_masters_is_refused() {
    let err = error(&scenario_with("masters = 2\nquorum = 3"), "bad.toml");
    assert_eq!(err.line, Some(10), "{err}");
    assert_eq!(err.field.as_deref(), Some("lock.quorum"), "{err}");
    assert!(err.message.contains("larger than the lock's masters (2)"), "{err}");
    let err = error(&scenario_with("masters = 4"), "bad.toml");
    assert_eq!(err.field.as_deref(), Some("lock.masters"), "{err}");
    assert!(err.message.contains("(3)"), "{err}");
}

#[test]
fn script_keys_under_another_algorithm_are_refused() {
    let source = scenario_with("").replace("algorithm = \"script\"", "algorithm = \"redlock\"\nquorum = 2");
    let err = error(&source, "bad.toml");
    assert_eq!(err.field.as_deref(), Some("lock.quorum"), "{err}");
    assert!(err.message.contains("algorithm = \"script\""), "{err}");
}

#[test]
fn the_defaults_are_a_token_checked_single_master_lock() {
    let scenario = Scenario::from_str(&scenario_with(""), "ok.toml").unwrap();
    let script = scenario.lock.script().unwrap();
    assert_eq!((script.masters, script.quorum), (1, 1));
    assert_eq!(script.retry_count, 0);
    let release = format!("{:?}", script.release);
    assert!(
        release.contains("redis.call(\\\"get\\\",KEYS[1]) == ARGV[1]"),
        "{release}"
    );
}

#[test]
fn a_token_reply_is_an_acquire_only_and_one_source_of_tokens() {
    let err = error(
        &scenario_with("\n[lock.release]\ncommand = [\"INCR\", \"n\"]\nsuccess = \"token\"\n"),
        "bad.toml",
    );
    assert_eq!(err.field.as_deref(), Some("lock.release.success"), "{err}");
    assert!(err.message.contains("acquire"), "{err}");
    let err = error(
        &scenario_with("fencing = \"incr\"\n\n[lock.acquire]\ncommand = [\"INCR\", \"n\"]\nsuccess = \"token\"\n"),
        "bad.toml",
    );
    assert_eq!(err.field.as_deref(), Some("lock.fencing"), "{err}");
    assert!(err.message.contains("two sources of tokens"), "{err}");
}

/// The mutation suite's fenced parent: the acquire script issues the token with the SET, so
/// every grant carries one and tokens follow grant order.
#[test]
fn an_acquire_script_issues_the_grants_fencing_tokens() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("mutants/parents/fenced-script.toml");
    let scenario = Scenario::from_file(&path).expect("the parent loads");
    assert!(scenario.lock.script().expect("a script lock").issues_tokens());
    let text = scenario.to_toml();
    let back = Scenario::from_str(&text, "back.toml").expect("the written scenario loads");
    assert_eq!(back, scenario, "{text}");
    let run = run_scenario(&scenario, None).expect("the world runs");
    let verdict = |name: &str| {
        run.results
            .iter()
            .find(|r| r.checker == name)
            .map(|r| (r.verdict, r.explanation.clone()))
            .unwrap()
    };
    let (order, text) = verdict("token-order");
    assert_eq!(order, Verdict::Valid, "{text}");
    assert!(text.contains("fencing tokens"), "{text}");
    assert_eq!(verdict("stale-write").0, Verdict::Valid);
}

#[test]
fn a_release_with_another_grants_value_is_visible_in_the_history_and_the_timeline() {
    // Two tasks share one lock object, which keeps the value of the latest acquisition: task 2
    // releases its own grant with task 1's value. The history records the value sent; the
    // timeline says it, names the tasks, and shows successful extensions.
    let (_, text, _) = lockstep(&["run", "scenarios/bug-shared-lock-object.toml"]);
    assert!(text.contains("client-1 task 2  releasing with value "), "{text}");
    assert!(text.contains("— not this grant's ("), "{text}");
    let buggy = run("bug-shared-lock-object.toml");
    let sent: Vec<&serde_json::Value> = buggy
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            lockstep_sim::EventKind::Op { op, data, .. } if op == "release" => data.get("value_sent"),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1, "one release sent another grant's value");
    // A lock that sends its grant's own value records nothing extra.
    let fixed = run("bug-shared-lock-object-safe.toml");
    assert!(fixed.history.events().iter().all(|e| match &e.kind {
        lockstep_sim::EventKind::Op { data, .. } => data.get("value_sent").is_none(),
        _ => true,
    }));
    // Successful extensions are on the timeline.
    let (_, watchdog, _) = lockstep(&["run", "scenarios/bug-shared-lock-object-safe.toml"]);
    assert!(watchdog.contains("extended \"lock\" validity="));
}

/// Issue 42 item 7: the new script-lock options load, round-trip, and refuse bad values with the
/// file, the line and the field.
#[test]
fn the_library_bug_options_load_and_bad_values_name_file_line_and_field() {
    let good = scenario_with(
        "renew = \"every\"\nvalidity_from = \"first-attempt\"\nacquire_recheck = false\nextend_recheck = true\n\
         on_renew_failure = \"keep-schedule\"\nrenewal_after_release = \"runs-and-reports\"\n",
    );
    let scenario = Scenario::from_str(&good, "good.toml").unwrap_or_else(|e| panic!("{e}"));
    let script = scenario.lock.script().expect("a script lock");
    assert!(!script.validity_recheck && script.extend_rechecks());
    assert_eq!(script.validity_from.name(), "first-attempt");
    assert_eq!(script.on_renew_failure.name(), "keep-schedule");
    assert_eq!(script.renewal_after_release.name(), "runs-and-reports");
    let back = Scenario::from_str(&scenario.to_toml(), "written.toml").unwrap();
    assert_eq!(back, scenario);

    for (extra, line, field, says) in [
        (
            "validity_from = \"second-attempt\"",
            9,
            "lock.validity_from",
            "second-attempt",
        ),
        ("on_renew_failure = \"shrug\"", 9, "lock.on_renew_failure", "shrug"),
        (
            "renewal_after_release = \"later\"",
            9,
            "lock.renewal_after_release",
            "later",
        ),
        ("extend_recheck = \"yes\"", 9, "lock.extend_recheck", ""),
        (
            "validity_recheck = true\nacquire_recheck = false",
            10,
            "lock.acquire_recheck",
            "contradicts",
        ),
        (
            "renewal_after_release = \"runs-quietly\"",
            9,
            "lock.renewal_after_release",
            "renew",
        ),
    ] {
        let err = error(&scenario_with(extra), "bad.toml");
        assert_eq!(err.path, "bad.toml", "{extra}: {err}");
        assert_eq!(err.line, Some(line), "{extra}: {err}");
        assert_eq!(err.field.as_deref(), Some(field), "{extra}: {err}");
        assert!(err.message.contains(says), "{extra}: {err}");
    }
    let err = error(
        &scenario_with("[lock.acquire]\ncommand = [\"SET\", \"{key}\", \"{now}\"]"),
        "bad.toml",
    );
    assert!(err.message.contains("{now_ms}"), "the placeholders are listed: {err}");
}

/// Issue 42 item 8: `lock.share_lock_object` beside tasks that `[[client]] tasks` or
/// `[workload] tasks` set would be ignored; it is refused, naming the file, line and field.
#[test]
fn a_lock_share_setting_the_workloads_tasks_would_ignore_is_refused() {
    let base = "name = \"bad\"\ndescription = \"d\"\n\n[topology]\nmasters = 1\n\n[lock]\nalgorithm = \"script\"\nshare_lock_object = false\n";
    let client = format!("{base}\n[[client]]\nname = \"client-1\"\ntasks = 2\n");
    let err = error(&client, "tasks.toml");
    assert_eq!(err.line, Some(9), "{err}");
    assert_eq!(err.field.as_deref(), Some("lock.share_lock_object"), "{err}");
    assert!(err.message.contains("client[0].tasks"), "{err}");
    assert!(err.message.contains("[workload] share_lock_object"), "{err}");
    let workload = format!("{base}\n[workload]\ntasks = 2\n");
    let err = error(&workload, "tasks.toml");
    assert_eq!(err.field.as_deref(), Some("lock.share_lock_object"), "{err}");
    assert!(err.message.contains("workload.tasks"), "{err}");
    // The lock's own tasks still take it.
    let own = "name = \"ok\"\ndescription = \"d\"\n\n[topology]\nmasters = 1\n\n[lock]\nalgorithm = \"script\"\ntasks = 2\nshare_lock_object = false\n";
    assert!(Scenario::from_str(own, "ok.toml").is_ok());
}

/// Issue 42 item 7: the late renewal of `renewal_after_release = "runs-and-reports"` is recorded
/// after the release, and its abort is what `spurious-loss` cites; the quiet twin records the
/// failed renewal and no abort.
#[test]
fn a_renewal_after_the_release_is_reported_or_dropped() {
    let buggy = run("bug-renewal-races-release.toml");
    let result = buggy.results.iter().find(|r| r.checker == "spurious-loss").unwrap();
    assert!(
        result.explanation.contains("client-1 reported the loss"),
        "{}",
        result.explanation
    );
    assert_eq!(result.witness.len(), 2);
    let safe = run("bug-renewal-races-release-safe.toml");
    let text = serde_json::to_string(&safe.history).unwrap();
    assert!(!text.contains("\"abort\""), "no abort in the quiet twin");
}

/// Issue 42 item 7: `on_renew_failure = "keep-schedule"` says nothing about a failed renewal and
/// renews again on schedule: the renewal cut off at 3 s fails, the one at 6 s keeps the lock, no
/// abort is recorded, and client-2 waits for the release (with `keep-working` the lock expired).
#[test]
fn keep_schedule_renews_on_after_a_failed_renewal_without_telling_the_holder() {
    let text = std::fs::read_to_string(scenarios_dir().join("bug-renewal-failure-ignored.toml"))
        .unwrap()
        .replace(
            "on_renew_failure = \"keep-working\"",
            "on_renew_failure = \"keep-schedule\"",
        );
    let mut scenario = Scenario::from_str(&text, "keep-schedule.toml").unwrap();
    scenario.expect.clear();
    let run = run_scenario(&scenario, None).expect("the world runs");
    let history = serde_json::to_value(&run.history).unwrap().to_string();
    assert!(!history.contains("\"abort\""), "the holder is never told");
    let extends: Vec<&str> = history.matches("\"extend\"").collect();
    assert!(
        extends.len() >= 6,
        "renewals go on after the failed one: {}",
        extends.len()
    );
    assert_eq!(
        run.verdict("mutual-exclusion"),
        Some(Verdict::Valid),
        "{:?}",
        run.results
    );
}

/// Issue 42: `keep-schedule` renews on after an error, but a renewal refused because the key is not
/// the holder's any more ends the schedule (Redisson's watchdog drops a lock whose holder's field
/// is gone). The Redisson model, its master restarted without persistence at 5 s: client-1's
/// renewal at 10 s fails on the broken connection (an error: the schedule goes on), the one at
/// 20 s finds its field gone, and no other follows before its work ends at 35 s (before the fix:
/// another at 30 s, refused again).
#[test]
fn keep_schedule_stops_when_a_renewal_is_refused() {
    let text = std::fs::read_to_string(scenarios_dir().join("libraries/redisson-rlock.toml")).unwrap();
    let pause = "[[fault]]\nat_ms = 1000\nkind = \"pause\"\nnode = \"client-1\"\nduration_ms = 40000\n";
    assert!(
        text.contains(pause) && text.contains("work_ms = 3000\n"),
        "the model's story changed"
    );
    let text = text
        .replace(
            pause,
            "[[fault]]\nat_ms = 5000\nkind = \"crash\"\nnode = \"redis-1\"\n\n\
             [[fault]]\nat_ms = 5001\nkind = \"restart\"\nnode = \"redis-1\"\n",
        )
        .replace("work_ms = 3000\n", "work_ms = 35000\n");
    let mut scenario = Scenario::from_str(&text, "refused-renewal.toml").unwrap_or_else(|e| panic!("{e}"));
    scenario.expect.clear();
    let run = run_scenario(&scenario, None).expect("the world runs");
    // client-1's renewals that completed, each with what it said.
    let completed: Vec<(Phase, String)> = run
        .history
        .events()
        .iter()
        .filter(|e| e.node == "client-1")
        .filter_map(|e| match &e.kind {
            EventKind::Op { op, phase, data, .. } if op == "extend" && *phase != Phase::Invoke => {
                Some((*phase, data.to_string()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(completed.len(), 2, "an error, a refusal, then none: {completed:#?}");
    assert!(
        completed[0].0 == Phase::Info && completed[0].1.contains("broken pipe"),
        "the first renewal ended in an error: {completed:#?}"
    );
    assert!(
        completed[1].0 == Phase::Fail && completed[1].1.contains("lock lost"),
        "the second was refused: {completed:#?}"
    );
    let history = serde_json::to_value(&run.history).unwrap();
    assert!(!history.to_string().contains("\"abort\""), "the holder is never told");
}

/// `node`'s lock operations of `op` that completed with `phase`, in time order (true ms).
fn op_times(run: &ScenarioRun, node: &str, op_name: &str, phase: Phase) -> Vec<u64> {
    run.history
        .events()
        .iter()
        .filter(|e| e.node == node)
        .filter_map(|e| match &e.kind {
            EventKind::Op { op, phase: p, .. } if op == op_name && *p == phase => Some(e.at_us / 1_000),
            _ => None,
        })
        .collect()
}

/// Issue 50: `renew_grants = "first-attempt"`. client-2's acquisition is refused once (client-1,
/// paused, still holds) and its retry takes the lock: that grant is never renewed, its key
/// expires about a TTL later and client-3 is granted while client-2 still works. In the twin the
/// same retried grant is renewed until client-2 releases, and client-3 waits for it.
#[test]
fn a_grant_taken_by_a_retry_is_renewed_only_when_every_grant_is() {
    let buggy = run("bug-renewal-lapse-retried-grant.toml");
    let safe = run("bug-renewal-lapse-retried-grant-safe.toml");
    for run in [&buggy, &safe] {
        // One acquire call, granted after client-1's release at about 26.5 s (a retry).
        let granted = op_times(run, "client-2", "acquire", Phase::Ok);
        assert_eq!(granted.len(), 1, "{granted:?}");
        let released = op_times(run, "client-1", "release", Phase::Ok);
        assert!(
            granted[0] > released[0] && released[0] > 26_000,
            "{granted:?} {released:?}"
        );
        // client-1 renewed its first-attempt grant in both.
        assert!(op_times(run, "client-1", "extend", Phase::Ok).len() >= 7);
    }
    assert!(
        op_times(&buggy, "client-2", "extend", Phase::Invoke).is_empty(),
        "never renewed"
    );
    let renewals = op_times(&safe, "client-2", "extend", Phase::Ok);
    assert!(renewals.len() >= 7, "renewed every 3 s: {renewals:?}");
    let client3_buggy = op_times(&buggy, "client-3", "acquire", Phase::Ok);
    let client3_safe = op_times(&safe, "client-3", "acquire", Phase::Ok);
    let client2_released = op_times(&safe, "client-2", "release", Phase::Ok);
    assert!(
        client3_buggy[0] < 41_000,
        "granted at its first attempt: {client3_buggy:?}"
    );
    assert!(
        client3_safe[0] > client2_released[0],
        "waits for client-2: {client3_safe:?}"
    );
}

/// Issue 50: `renew_grants` loads, round-trips, and refuses a bad value or a lock that does not
/// renew, naming the file, the line and the field.
#[test]
fn renew_grants_loads_and_bad_values_name_file_line_and_field() {
    let good = scenario_with("renew = \"every\"\nrenew_grants = \"first-attempt\"\n");
    let scenario = Scenario::from_str(&good, "good.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.lock.script().unwrap().renew_grants.name(), "first-attempt");
    let back = Scenario::from_str(&scenario.to_toml(), "written.toml").unwrap();
    assert_eq!(back, scenario);
    for (extra, field, says) in [
        (
            "renew = \"every\"\nrenew_grants = \"retries\"",
            "lock.renew_grants",
            "retries",
        ),
        ("renew_grants = \"first-attempt\"", "lock.renew_grants", "renew"),
    ] {
        let err = error(&scenario_with(extra), "bad.toml");
        assert_eq!(err.path, "bad.toml", "{extra}: {err}");
        assert!(err.line.is_some(), "{extra}: {err}");
        assert_eq!(err.field.as_deref(), Some(field), "{extra}: {err}");
        assert!(err.message.contains(says), "{extra}: {err}");
    }
    // Under another algorithm it is a script-lock key, refused.
    let other = "name = \"bad\"\ndescription = \"d\"\n\n[topology]\nmasters = 1\n\n[lock]\nalgorithm = \"watchdog\"\nrenew_grants = \"all\"\n";
    assert!(Scenario::from_str(other, "other.toml").is_err());
}

/// Issue 50: the fencing token taken by an `INCR` before the `SET NX`. client-1's two steps
/// straddle client-2's whole turn (its `INCR`, its grant, its write, its release), so client-1 is
/// granted after client-2 with the lower token and the fenced resource refuses it; the one-script
/// twin issues the tokens in grant order and both clients write.
#[test]
fn a_token_taken_before_the_lock_is_granted_out_of_order() {
    let buggy = run("bug-token-two-step.toml");
    let c1 = op_times(&buggy, "client-1", "acquire", Phase::Ok);
    let c2_released = op_times(&buggy, "client-2", "release", Phase::Ok);
    assert!(c1[0] > c2_released[0], "client-1's grant follows client-2's turn");
    assert!(
        op_times(&buggy, "client-1", "write", Phase::Invoke).is_empty(),
        "refused before writing"
    );
    let explanation = &buggy
        .results
        .iter()
        .find(|r| r.checker == "token-order")
        .unwrap()
        .explanation;
    assert!(
        explanation.contains("token 1") && explanation.contains("after token 2"),
        "{explanation}"
    );
    let safe = run("bug-token-two-step-safe.toml");
    for node in ["client-1", "client-2"] {
        assert_eq!(op_times(&safe, node, "write", Phase::Ok).len(), 1, "{node} writes");
    }
}

/// Issue 50 item 2: `SET NX` then `PEXPIRE`, and the holder stops for good between them. The key
/// has no TTL: client-3 asks for the lock until the run ends and `liveness` says why, naming the
/// key, its holder and the waiter, with the `SET` that left the key bare in the witness. The
/// twin's `SET NX PX` key expires 5 s after it was set and client-3 gets the lock.
#[test]
fn a_key_left_without_ttl_locks_the_others_out_and_liveness_says_so() {
    let buggy = run("bug-lockout-no-ttl.toml");
    let result = buggy.results.iter().find(|r| r.checker == "liveness").unwrap();
    assert_eq!(result.verdict, Verdict::Invalid, "{}", result.explanation);
    for part in [
        "key \"lock\" on redis-1, set by client-2",
        "(the key had no TTL)",
        "client-2 was paused past the end of the history at 1.510 s",
        "while client-3 waited",
    ] {
        assert!(result.explanation.contains(part), "{part}: {}", result.explanation);
    }
    let bare_set = result.witness.iter().any(|e| {
        e.node == "redis-1"
            && matches!(&e.kind, EventKind::Command { args, client: Some(c), .. }
                if c == "client-2" && args.len() == 4 && args[0] == "SET" && args[3] == "NX")
    });
    assert!(bare_set, "{:#?}", result.witness);
    // client-3 never got the lock; progress is still valid (client-1 did).
    let grants = |run: &ScenarioRun, node: &str| {
        run.history
            .events()
            .iter()
            .filter(|e| {
                e.node == node && matches!(&e.kind, EventKind::Op { op, phase: Phase::Ok, .. } if op == "acquire")
            })
            .count()
    };
    assert_eq!(grants(&buggy, "client-3"), 0);
    let safe = run("bug-lockout-no-ttl-safe.toml");
    assert_eq!(safe.verdict("liveness"), Some(Verdict::Valid));
    assert_eq!(grants(&safe, "client-3"), 1);
}
