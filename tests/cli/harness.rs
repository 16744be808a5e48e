//! A Rust lock through everything the CLI does, with `lockstep::harness` (prelude only): a
//! correct fenced lock passes 200 explored seeds and its scenarios, and writes the report
//! directory; a deliberately broken one (release by a plain `DEL`) is caught by the
//! differential oracle against the built-in token-release, and its shrunk counterexample —
//! which names the Rust lock — replays to the same failure with the user's lock.
//! Explored bounded (`Harness::bounded`), the correct lock shows no implementation bug, while the
//! same lock forgetting to subtract its acquisition time is caught by lease-validity under plans
//! that broke no assumption, and its shrunk counterexample is one of those seeds.

use lockstep::prelude::*;
use std::path::Path;

use crate::common;
use common::lockstep;

/// A user's single-master lock: `SET key value NX PX ttl`, extension by a compare-and-PEXPIRE,
/// release by a compare-and-delete — or, `checked_release` off, by a plain `DEL` (the bug: a
/// client whose lease expired deletes the next holder's lock). Its validity is the TTL less the
/// round trip — or, `subtract_elapsed` off, the whole TTL counted from the reply (the bug: a grant
/// claims a lease the master does not hold).
pub(crate) struct MyLock {
    env: LockEnv,
    checked_release: bool,
    subtract_elapsed: bool,
}

#[async_trait(?Send)]
impl LockClient for MyLock {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        let value = random_value(&self.env);
        let set = redis::cmd("SET")
            .arg(key)
            .arg(&value)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .clone();
        let start_ms = self.env.monotonic_ms();
        match self.env.masters()[0].query::<Option<String>>(&set).await? {
            Some(_) => self.valid_for(key, value, ttl_ms, start_ms),
            None => Err(LockError::Busy),
        }
    }

    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        let eval = redis::cmd("EVAL")
            .arg(EXTEND_SCRIPT)
            .arg(1)
            .arg(&grant.key)
            .arg(&grant.value)
            .arg(ttl_ms)
            .clone();
        let start_ms = self.env.monotonic_ms();
        match self.env.masters()[0].query::<i64>(&eval).await? {
            1 => self.valid_for(&grant.key, grant.value.clone(), ttl_ms, start_ms),
            _ => Err(LockError::Lost("the key holds another value".into())),
        }
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        let command = if self.checked_release {
            redis::cmd("EVAL")
                .arg(RELEASE_SCRIPT)
                .arg(1)
                .arg(&grant.key)
                .arg(&grant.value)
                .clone()
        } else {
            redis::cmd("DEL").arg(&grant.key).clone()
        };
        Ok(self.env.masters()[0].query::<i64>(&command).await? == 1)
    }
}

impl MyLock {
    /// The correct lock (checked release, validity less the round trip): what the guide's
    /// example calls `MyLock::new`.
    pub(crate) fn new(env: LockEnv) -> MyLock {
        MyLock {
            env,
            checked_release: true,
            subtract_elapsed: true,
        }
    }

    /// The grant: valid for the TTL less the round trip, counted from now on the monotonic
    /// clock; none when nothing is left.
    fn valid_for(&self, key: &str, value: String, ttl_ms: u64, start_ms: i64) -> Result<Grant, LockError> {
        let now_ms = self.env.monotonic_ms();
        let elapsed_ms = if self.subtract_elapsed {
            (now_ms - start_ms).max(0) as u64
        } else {
            0
        };
        let validity_ms = ttl_ms.saturating_sub(elapsed_ms);
        if validity_ms == 0 {
            return Err(LockError::Lost("the lease ran out in flight".into()));
        }
        let fencing_token = None;
        let validity_from_ms = Some(now_ms);
        Ok(Grant {
            key: key.to_string(),
            value,
            fencing_token,
            validity_ms,
            validity_from_ms,
        })
    }
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lockstep-harness-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn scenario(file: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(file)
}

#[test]
fn a_correct_fenced_lock_passes_200_seeds_and_its_scenarios_and_writes_the_report() {
    let dir = scratch("correct");
    // What a user writes (docs/test-your-lock.md, "Put your Rust lock through the gate").
    let run = Harness::new("my-lock", |env| MyLock {
        env,
        checked_release: true,
        subtract_elapsed: true,
    })
    .scenarios(scenario("kleppmann-gc-pause-fenced.toml"))
    .fenced()
    .explore_standard(200)
    .report(dir.join("report"))
    .run()
    .expect("the harness runs");
    run.assert_safe();

    // Real outcomes: 200 seeds explored with the user's lock, named everywhere.
    let e = &run.explorations[0];
    assert_eq!(e.summary.seeds_run, 200);
    assert_eq!(e.summary.algorithm, "my-lock");
    assert_eq!(e.summary.errors, 0);
    assert_eq!(e.summary.violations["stale-write"], 0);
    assert_eq!(e.summary.violations["lost-update"], 0);
    // Pauses past the lease still break mutual exclusion: fencing is what saves the resource.
    assert!(e.summary.violations["mutual-exclusion"] > 0, "{}", e.summary.render());
    // The scenario ran with the user's lock against its own expectations.
    assert_eq!(run.report.scenarios.len(), 1);
    assert_eq!(run.report.scenarios[0].algorithm, "my-lock");
    assert!(run.report.scenarios[0].replay.contains("my-lock"));
    // The same report directory as `lockstep ci --report`.
    let report_json = std::fs::read_to_string(dir.join("report/report.json")).expect("report.json");
    assert!(report_json.contains("\"algorithm\": \"my-lock\"") || report_json.contains("\"algorithm\":\"my-lock\""));
    for file in [
        "summary.md",
        "junit.xml",
        "index.html",
        "runs/kleppmann-gc-pause-fenced/history.jsonl",
    ] {
        assert!(dir.join("report").join(file).is_file(), "{file} written");
    }
    // Nothing the gate judges failed, so nothing was shrunk: no counterexample that would fail
    // forever for a pause past the lease, which every lease lock suffers.
    assert_eq!(e.counterexamples().count(), 0);
    assert!(!dir.join("report/counterexamples").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_broken_lock_is_caught_against_the_reference_and_its_counterexample_replays_with_it() {
    let dir = scratch("broken");
    let harness = Harness::new("del-release", |env| MyLock {
        env,
        checked_release: false,
        subtract_elapsed: true,
    })
    .against_preset("token-release")
    .explore_standard(100)
    .shrink(1, 60)
    .jsonl(dir.join("seeds.jsonl"))
    .report(dir.join("report"));
    let run = harness.run().expect("the harness runs");
    assert!(!run.passed(), "{}", run.message());
    // The report on disk says what the harness says: a CI reading junit.xml fails too.
    assert!(!run.report.ok);
    let junit = std::fs::read_to_string(dir.join("report/junit.xml")).expect("junit.xml");
    assert!(junit.contains("<failure"), "{junit}");
    let e = &run.explorations[0];
    let differential = e.summary.differential.as_ref().expect("a reference ran");
    assert_eq!(differential.reference, "token-release");
    assert!(differential.seeds_only_subject > 0, "{}", e.summary.render());
    let message = run.message();
    assert!(
        message.contains("fail only with del-release (not with token-release)"),
        "{message}"
    );

    // The shrunk counterexample: the user's lock, named in the file; only it fails.
    let (cx, file) = e.counterexamples().next().expect("a counterexample");
    assert_eq!(cx.lock, "del-release");
    assert_eq!(cx.reference.as_deref(), Some("token-release"));
    let toml = std::fs::read_to_string(file).expect("the counterexample file is written");
    assert!(toml.contains("rust_lock = \"del-release\""), "{toml}");
    // It replays with the user's lock to the same failure and the same history.
    let replay = harness.replay(file).expect("it replays");
    assert_eq!(replay.verdict(&cx.checker), Some(Verdict::Invalid));
    assert_eq!(replay.digest, cx.run.digest);
    // Like a proptest regression file, the counterexample expects what should hold: while the
    // lock is broken, its replay misses that expectation on the violated checker.
    assert!(!replay.as_expected());
    assert!(
        replay.mismatches.iter().any(|m| m.checker == cx.checker),
        "{:?}",
        replay.mismatches
    );
    // `lockstep run` and `lockstep explore` refuse it rather than run the built-in algorithm.
    for command in ["run", "explore"] {
        let (code, _, stderr) = lockstep(&[command, &file.display().to_string()]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("runs the Rust lock `del-release`"), "{stderr}");
    }
    // A harness holding another lock refuses it.
    let other = Harness::new("my-lock", |env| MyLock {
        env,
        checked_release: true,
        subtract_elapsed: true,
    });
    let err = other.replay(file).unwrap_err().to_string();
    assert!(err.contains("needs the Rust lock `del-release`"), "{err}");

    // One JSON line per seed, with both locks' verdicts.
    let lines = std::fs::read_to_string(dir.join("seeds.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 100);
    assert!(records
        .iter()
        .all(|r| r["lock"] == "del-release" && r["reference"]["lock"] == "token-release"));
    let only: usize = records
        .iter()
        .filter(|r| r["only_subject"].as_array().is_some_and(|a| !a.is_empty()))
        .count();
    assert_eq!(only as u64, differential.seeds_only_subject);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_an_error_before_anything_runs() {
    let err = Harness::new("token-release", |env| MyLock {
        env,
        checked_release: true,
        subtract_elapsed: true,
    })
    .explore_standard(1)
    .run()
    .unwrap_err()
    .to_string();
    assert!(err.contains("not a built-in algorithm's name"), "{err}");
    let err = Harness::new("my-lock", |env| MyLock {
        env,
        checked_release: true,
        subtract_elapsed: true,
    })
    .against_preset("script")
    .explore_standard(1)
    .run()
    .unwrap_err()
    .to_string();
    assert!(err.contains("against: `script` is neither a preset"), "{err}");
    // A gate over nothing is bad input, not a pass.
    let err = Harness::new("my-lock", |env| MyLock {
        env,
        checked_release: true,
        subtract_elapsed: true,
    })
    .run()
    .unwrap_err()
    .to_string();
    assert!(err.contains("nothing to run"), "{err}");
}

#[test]
fn the_cli_explores_against_a_preset_and_streams_one_line_per_seed() {
    let dir = scratch("cli");
    let jsonl = dir.join("seeds.jsonl");
    let (code, stdout, _) = lockstep(&[
        "explore",
        "--algorithm",
        "naive",
        "--kinds",
        "pause",
        "--seeds",
        "30",
        "--shrink",
        "0",
        "-q",
        "--against",
        "token-release",
        "--jsonl",
        &jsonl.display().to_string(),
    ]);
    assert!(stdout.contains("against token-release:"), "{stdout}");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut seeds: Vec<u64> = records.iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    seeds.sort_unstable();
    assert_eq!(seeds, (0..30).collect::<Vec<_>>());
    assert!(records
        .iter()
        .all(|r| r["lock"] == "naive" && r["reference"]["lock"] == "token-release"));
    // Exit code 1 exactly when some seed fails only with the file's lock.
    let only = records
        .iter()
        .any(|r| r["only_subject"].as_array().is_some_and(|a| !a.is_empty()));
    assert_eq!(code, if only { 1 } else { 0 }, "{stdout}");
    // An unknown preset is bad input.
    let (bad, _, _) = lockstep(&["explore", "--seeds", "1", "--against", "script"]);
    assert_eq!(bad, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Harness::bounded` (the public API's `explore --bounded`): the lock explored inside the standard
/// template lock's assumptions.
fn bounded(name: &str, subtract_elapsed: bool) -> Harness {
    Harness::new(name, move |env| MyLock {
        env,
        checked_release: true,
        subtract_elapsed,
    })
    .explore_standard(30)
    .bounded()
    .jobs(2)
    .shrink(1, 40)
}

#[test]
fn a_correct_user_lock_shows_no_implementation_bug_under_its_assumptions() {
    let run = bounded("single-master", true).run().expect("the harness runs");
    let summary = &run.explorations[0].summary;
    let bounded = summary.assumptions.as_ref().expect("explored bounded");
    assert_eq!(summary.seeds_run, 30);
    assert_eq!(bounded.seeds_bug, 0, "{}", summary.render());
    // Some plans did break timing (a pause past the lease) and violate mutual exclusion there:
    // the lease's limit, which the bounded gate does not hold against the lock.
    assert!(
        bounded.seeds_in_bounds > 0 && bounded.seeds_in_bounds < 30,
        "{}",
        summary.render()
    );
    run.assert_safe();
}

#[test]
fn a_user_lock_that_forgets_its_acquisition_time_is_an_implementation_bug() {
    let run = bounded("no-elapsed", false).run().expect("the harness runs");
    assert!(!run.passed(), "{}", run.message());
    // The report row says what the harness says.
    assert!(!run.report.ok);
    let e = &run.explorations[0];
    let bounded = e.summary.assumptions.as_ref().expect("explored bounded");
    assert!(bounded.seeds_bug > 0, "{}", e.summary.render());
    // Seeds whose plan kept every assumption fail lease-validity: nothing but the lock to blame.
    assert!(
        bounded.first_violating.iter().any(|(_, checkers, broken, bug)| *bug
            && broken.is_empty()
            && checkers.iter().any(|c| c == "lease-validity")),
        "{:?}",
        bounded.first_violating
    );
    let message = run.message();
    assert!(message.contains("implementation bug"), "{message}");
    // The counterexample is a bug seed, shrunk for a checker the lock promised there.
    let (cx, _) = e.counterexamples().next().expect("a counterexample");
    assert_eq!(cx.lock, "no-elapsed");
    assert!(
        bounded
            .first_violating
            .iter()
            .any(|(seed, _, _, bug)| *seed == cx.seed && *bug),
        "seed {} is not a bug seed",
        cx.seed
    );
    assert_eq!(cx.checker, "lease-validity");
}
