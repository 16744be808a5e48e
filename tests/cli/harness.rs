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
    /// The correct lock (checked release, validity less the round trip).
    pub(crate) fn new(env: LockEnv) -> MyLock {
        MyLock {
            env,
            checked_release: true,
            subtract_elapsed: true,
        }
    }

    /// The grant: valid for the TTL less the round trip, counted from now on the monotonic
    /// clock; none when nothing is left.
    pub(crate) fn valid_for(&self, key: &str, value: String, ttl_ms: u64, start_ms: i64) -> Result<Grant, LockError> {
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
    // What a user writes (docs/harness.md, "A test file to copy").
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

// ---- Issue 42, item 11: the harness chooses the faults, gates on the classification, writes
// every counterexample it names, and says what a reference file is.

use lockstep::explore::shrink::Shrunk;
use lockstep::harness::{Bounds, Gate, LockTokens, Overrides};
use lockstep::model::fault::PlacementStrategy;

fn correct(name: &str) -> Harness {
    Harness::new(name, MyLock::new)
}

fn del_release(name: &str) -> Harness {
    Harness::new(name, |env| MyLock {
        env,
        checked_release: false,
        subtract_elapsed: true,
    })
}

#[test]
fn the_default_gate_is_the_classification_a_correct_unfenced_lock_passes_it() {
    // Pauses past the lease break every unfenced lease lock's writes: the lease's limit.
    let run = correct("unfenced")
        .kinds(&["pause"])
        .explore_standard(60)
        .jobs(2)
        .run()
        .expect("the harness runs");
    let summary = &run.explorations[0].summary;
    let classified = summary.classified.as_ref().expect("every seed classified");
    assert!(summary.violations["stale-write"] > 0, "{}", summary.render());
    assert_eq!(classified.seeds_bug, 0, "{}", summary.render());
    assert!(classified.seeds_violating_outside > 0, "{}", summary.render());
    run.assert_safe();
    assert!(run.report.ok);
    // Nothing the gate judges failed: nothing shrunk, no file.
    assert_eq!(run.explorations[0].shrunk.len(), 0);

    // The same seeds judged by the old expectations (stale-write none-invalid) fail.
    let strict = correct("unfenced")
        .kinds(&["pause"])
        .explore_standard(60)
        .jobs(2)
        .gate(Gate::Expectations)
        .shrink(0, 0)
        .run()
        .expect("the harness runs");
    assert!(!strict.passed(), "{}", strict.message());
    assert_eq!(strict.explorations[0].summary.violations, summary.violations);
}

#[test]
fn an_implementation_bug_fails_the_default_gate_and_its_counterexample_is_written() {
    let dir = scratch("gate-bug");
    let run = del_release("del-release-gate")
        .explore_standard(80)
        .jobs(2)
        .shrink(1, 60)
        .counterexamples(dir.join("cx"))
        .run()
        .expect("the harness runs");
    assert!(!run.passed(), "{}", run.message());
    assert!(!run.report.ok);
    let e = &run.explorations[0];
    let classified = e.summary.classified.as_ref().expect("classified");
    assert!(classified.seeds_bug > 0, "{}", e.summary.render());
    let message = run.message();
    assert!(message.contains("implementation bug"), "{message}");
    // The counterexample is a bug seed's, and the file the message names exists.
    let (cx, file) = e.counterexamples().next().expect("a counterexample");
    assert!(
        classified.first_bugs.iter().any(|b| b.seed == cx.seed),
        "seed {} is not a bug seed: {message}",
        cx.seed
    );
    assert!(file.starts_with(dir.join("cx")), "{}", file.display());
    assert!(message.contains(&file.display().to_string()), "{message}");
    let toml = std::fs::read_to_string(file).expect("the named counterexample is written");
    assert!(toml.contains("rust_lock = \"del-release-gate\""), "{toml}");
    assert!(run.written.contains(&file.to_path_buf()));
    // The seeds to the first bug, in the summary and in the message (issue 50, item 11).
    let first = classified.first_bugs.iter().map(|b| b.seed).min().expect("a bug seed");
    assert_eq!(e.summary.first_bug_seed, Some(first));
    assert_eq!(
        e.summary.seeds_to_first_bug,
        Some(first + 1),
        "seeds 0..: seed {first} is the {}th",
        first + 1
    );
    assert!(
        message.contains(&format!(
            "seeds to the first implementation bug: {} (seed {first})",
            first + 1
        )),
        "{message}"
    );
    // A second lock writing to the same directory keeps the first one's file: the names carry
    // the lock.
    let other = del_release("del-release-other")
        .explore_standard(80)
        .jobs(2)
        .shrink(1, 60)
        .counterexamples(dir.join("cx"))
        .run()
        .expect("the harness runs");
    let (_, other_file) = other.explorations[0]
        .counterexamples()
        .next()
        .expect("a counterexample");
    assert_ne!(other_file, file);
    assert!(
        other_file.to_string_lossy().contains("del-release-other"),
        "{}",
        other_file.display()
    );
    let kept = std::fs::read_to_string(file).expect("the first lock's counterexample is still there");
    assert!(kept.contains("rust_lock = \"del-release-gate\""), "{kept}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_report_directory_the_counterexample_goes_under_the_target_directory() {
    let name = format!("del-release-default-{}", std::process::id());
    let default = lockstep::harness::default_counterexample_dir(&name);
    let _ = std::fs::remove_dir_all(&default);
    // Under this build's target directory (the test binary's), named after the lock.
    assert!(
        default.starts_with(Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
            || std::env::var_os("CARGO_TARGET_DIR").is_some(),
        "{}",
        default.display()
    );
    let run = del_release(&name)
        .against_preset("token-release")
        .explore_standard(60)
        .jobs(2)
        .shrink(1, 60)
        .run()
        .expect("the harness runs");
    assert!(!run.passed(), "{}", run.message());
    let (_, file) = run.explorations[0].counterexamples().next().expect("a counterexample");
    assert_eq!(file.parent(), Some(default.as_path()));
    assert!(file.is_file(), "{} is named but not written", file.display());
    assert!(run.message().contains(&file.display().to_string()));
    let _ = std::fs::remove_dir_all(&default);
}

#[test]
fn options_choose_the_kinds_the_count_the_placement_and_a_time_limit() {
    let run = correct("options")
        .kinds(&["crash", "pause"])
        .faults_max(1)
        .strategy(PlacementStrategy::Random)
        .explore_standard(40)
        .jobs(2)
        .run()
        .expect("the harness runs");
    let summary = &run.explorations[0].summary;
    assert_eq!(summary.seeds_run, 40);
    let kinds: Vec<&str> = summary.fault_kinds.keys().map(String::as_str).collect();
    assert!(
        !kinds.is_empty() && kinds.iter().all(|k| ["crash", "pause"].contains(k)),
        "{kinds:?}"
    );
    // Random placement: no coverage of a guided search.
    assert!(summary.coverage.is_none(), "{}", summary.render());
    // At most one fault per seed: no seed's plan has two kinds.
    let planned: u64 = summary.fault_kinds.values().map(|k| k.seeds).sum();
    assert!(planned <= 40, "{planned} kind-seeds over 40 one-fault seeds");

    // The CLI's own struct, with its time limit: a million seeds stop after a second.
    let started = std::time::Instant::now();
    let run = correct("time-limit")
        .options(Overrides {
            seeds: Some(1_000_000),
            time_limit_s: Some(1),
            ..Overrides::default()
        })
        .explore_standard(1_000_000)
        .jobs(2)
        .run()
        .expect("the harness runs");
    let summary = &run.explorations[0].summary;
    assert!(
        summary.seeds_run > 0 && summary.seeds_run < 1_000_000,
        "{}",
        summary.seeds_run
    );
    assert!(started.elapsed().as_secs() < 120);

    // Out of range: the CLI's message, before anything runs.
    let err = correct("bad")
        .faults_max(0)
        .explore_standard(1)
        .run()
        .unwrap_err()
        .to_string();
    assert!(err.contains("--faults-max 0"), "{err}");
    let err = correct("bad")
        .kinds(&["nonsense"])
        .explore_standard(1)
        .run()
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown fault kind `nonsense`"), "{err}");
}

#[test]
fn the_exhaustive_mode_runs_every_schedule_of_its_grid_with_the_users_lock() {
    let bounds = Bounds {
        clients_max: 2,
        faults_max: 1,
        anchors_max: 2,
    };
    let run = correct("exhaustive")
        .exhaustive(bounds)
        .explore_standard(1)
        .jobs(2)
        .run()
        .expect("the harness runs");
    assert!(run.explorations.is_empty());
    let e = &run.exhaustive[0];
    assert_eq!(e.report.lock, "exhaustive");
    assert_eq!(e.report.bounds, bounds);
    assert!(e.report.schedules > 0 && e.report.anchors > 0, "{}", e.report.render());
    assert!(e.passed, "{}", e.report.render());
    run.assert_safe();
    // A lock that counts its TTL from the reply claims more than the master holds when a reply
    // is held: the grid finds it, and the shrunk schedule is written where the message says.
    let dir = scratch("exhaustive-bug");
    let run = Harness::new("no-elapsed-grid", |env| MyLock {
        env,
        checked_release: true,
        subtract_elapsed: false,
    })
    .exhaustive(bounds)
    .explore_standard(1)
    .jobs(2)
    .shrink(1, 40)
    .counterexamples(&dir)
    .run()
    .expect("the harness runs");
    let e = &run.exhaustive[0];
    assert!(!e.passed && !run.passed(), "{}", e.report.render());
    assert!(e.report.violating > 0);
    let message = run.message();
    let Some(Shrunk::Found { file, .. }) = e.shrunk.first() else {
        panic!("no counterexample: {message}");
    };
    assert!(
        file.is_file() && message.contains(&file.display().to_string()),
        "{message}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    // Seed options with the grid are bad input, as `explore --exhaustive --kinds` is.
    let err = correct("exhaustive")
        .exhaustive(bounds)
        .kinds(&["pause"])
        .explore_standard(1)
        .run()
        .unwrap_err()
        .to_string();
    assert!(err.contains("exhaustive: `kinds`"), "{err}");
}

#[test]
fn against_preset_takes_a_scenario_file_and_names_one_it_cannot_use() {
    let file = scenario("bug-release-no-owner-check-safe.toml");
    let run = del_release("del-release-file")
        .against_preset(&file.display().to_string())
        .explore_standard(20)
        .jobs(2)
        .shrink(0, 0)
        .run()
        .expect("a scenario file is a reference");
    let d = run.explorations[0]
        .summary
        .differential
        .as_ref()
        .expect("a reference ran");
    assert_eq!(d.reference, "bug-release-no-owner-check-safe");
    // The explicit form says the same, with the lock's declarations in the template.
    let run = correct("my-lock")
        .tokens(LockTokens::Durable)
        .drift_factor(0.01)
        .against_file(&file)
        .explore_standard(5)
        .run()
        .expect("runs");
    assert_eq!(
        run.explorations[0].summary.differential.as_ref().unwrap().reference,
        "bug-release-no-owner-check-safe"
    );
    // A missing file is named, with what was expected of it.
    for err in [
        correct("my-lock")
            .against_preset("no/such-twin.toml")
            .explore_standard(1)
            .run()
            .unwrap_err(),
        correct("my-lock")
            .against_file("no/such-twin.toml")
            .explore_standard(1)
            .run()
            .unwrap_err(),
    ] {
        let err = err.to_string();
        assert!(err.contains("no/such-twin.toml"), "{err}");
        assert!(err.contains("expected a scenario file"), "{err}");
    }
}

// ---- Issue 42, item 10: a Rust lock that issues its own fencing tokens declares them.

/// A single-master lock whose acquisition takes a fencing token from its own counter on the
/// master, in the same script as the `SET NX PX` (so the token's order is the grants' order):
/// correct. With `stale` on, a client keeps the first token it ever got and hands it out again
/// on every later grant (the bug: a token an earlier grant already used).
struct TokenLock {
    inner: MyLock,
    stale: bool,
    kept: std::cell::Cell<Option<u64>>,
}

/// Sets the lock key when free and, only then, increments the token counter: one script, so no
/// other grant comes between the two (written for this test from the Redis `SET`/`INCR` docs).
const ACQUIRE_WITH_TOKEN: &str = r#"if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("incr", KEYS[2]) else return false end"#;

#[async_trait(?Send)]
impl LockClient for TokenLock {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        let value = random_value(&self.inner.env);
        let eval = redis::cmd("EVAL")
            .arg(ACQUIRE_WITH_TOKEN)
            .arg(2)
            .arg(key)
            .arg(format!("lockstep:fence:{key}"))
            .arg(&value)
            .arg(ttl_ms)
            .clone();
        let start_ms = self.inner.env.monotonic_ms();
        let Some(token) = self.inner.env.masters()[0].query::<Option<u64>>(&eval).await? else {
            return Err(LockError::Busy);
        };
        let token = match (self.stale, self.kept.get()) {
            (true, Some(kept)) => kept,
            _ => token,
        };
        self.kept.set(Some(token));
        let grant = self.inner.valid_for(key, value, ttl_ms, start_ms)?;
        Ok(Grant {
            fencing_token: Some(token),
            ..grant
        })
    }

    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        let extended = self.inner.extend(grant, ttl_ms).await?;
        Ok(Grant {
            fencing_token: grant.fencing_token,
            ..extended
        })
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        self.inner.release(grant).await
    }
}

fn token_lock(name: &str, stale: bool) -> Harness {
    Harness::new(name, move |env| TokenLock {
        inner: MyLock::new(env),
        stale,
        kept: std::cell::Cell::new(None),
    })
}

/// Implementation-bug seeds of one exploration, and those among them with token-order.
fn bug_counts(run: &HarnessRun) -> (u64, usize) {
    let classified = run.explorations[0].summary.classified.as_ref().expect("classified");
    let token_order = classified
        .first_bugs
        .iter()
        .filter(|b| b.checkers.iter().any(|c| c == "token-order"))
        .count();
    (classified.seeds_bug, token_order)
}

#[test]
fn a_lock_declaring_its_counter_tokens_has_no_false_alarm_when_a_crash_wipes_the_counter() {
    const SEEDS: u64 = 1_000;
    let explore = |harness: Harness| {
        harness
            .kinds(&["crash", "pause"])
            .explore_standard(SEEDS)
            .jobs(2)
            .shrink(0, 0)
            .run()
            .expect("the harness runs")
    };
    // Undeclared (`fencing = "none"`): a crash held past the TTL keeps every lease, but wipes
    // the counter; the repeated tokens look like the lock's bug.
    let undeclared = explore(token_lock("own-tokens", false));
    let (false_alarms, token_order) = bug_counts(&undeclared);
    eprintln!(
        "undeclared: {false_alarms} implementation-bug seeds of {SEEDS} (token-order among the first: {token_order})"
    );
    assert!(false_alarms > 0 && token_order > 0, "{}", undeclared.message());
    assert!(!undeclared.passed());
    // Declared: the same seeds, the same verdicts; a crash that loses the counter's increments
    // broke the lock's assumptions.
    let declared = explore(token_lock("own-tokens", false).tokens(LockTokens::Counter));
    let summary = &declared.explorations[0].summary;
    eprintln!(
        "declared: {} implementation-bug seeds of {SEEDS}",
        bug_counts(&declared).0
    );
    assert_eq!(summary.seeds_run, SEEDS);
    assert_eq!(summary.violations, undeclared.explorations[0].summary.violations);
    assert!(summary.violations["token-order"] > 0, "{}", summary.render());
    assert_eq!(bug_counts(&declared).0, 0, "{}", declared.message());
    declared.assert_safe();
}

#[test]
fn a_lock_that_issues_a_stale_token_is_caught_by_token_order() {
    let run = token_lock("stale-token", true)
        .tokens(LockTokens::Counter)
        .explore_standard(30)
        .jobs(2)
        .shrink(1, 60)
        .counterexamples(scratch("stale-token"))
        .run()
        .expect("the harness runs");
    assert!(!run.passed(), "{}", run.message());
    let (bugs, token_order) = bug_counts(&run);
    assert!(bugs > 0 && token_order > 0, "{}", run.message());
    let (cx, file) = run.explorations[0].counterexamples().next().expect("a counterexample");
    assert_eq!(cx.checker, "token-order");
    // The file says what the lock declared, and replays.
    let toml = std::fs::read_to_string(file).unwrap();
    assert!(toml.contains("rust_tokens = \"counter\""), "{toml}");
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn declared_tokens_are_checked_at_a_fencing_resource_without_an_incr_on_top() {
    // `fenced` with declared tokens: the resource checks the lock's own tokens; no INCR token
    // replaces them, so the stale lock's bug shows at the resource too.
    let run = token_lock("stale-fenced", true)
        .tokens(LockTokens::Counter)
        .fenced()
        .kinds(&["pause"])
        .explore_standard(30)
        .jobs(2)
        .shrink(0, 0)
        .run()
        .expect("the harness runs");
    let summary = &run.explorations[0].summary;
    assert!(summary.violations["token-order"] > 0, "{}", summary.render());
    assert!(!run.passed(), "{}", run.message());
    // Re-taking tokens by INCR (`fenced` alone) masks it: that is why the lock declares its own.
    let masked = token_lock("stale-fenced", true)
        .fenced()
        .kinds(&["pause"])
        .explore_standard(30)
        .jobs(2)
        .shrink(0, 0)
        .run()
        .expect("the harness runs");
    assert!(
        masked.explorations[0].summary.violations["token-order"] < summary.violations["token-order"],
        "{}",
        masked.explorations[0].summary.render()
    );
    // A template file that takes INCR tokens too is refused.
    let err = token_lock("stale-fenced", true)
        .tokens(LockTokens::Counter)
        .explore(scenario("kleppmann-gc-pause-fenced.toml"), 1)
        .run()
        .unwrap_err()
        .to_string();
    assert!(err.contains("two sources of tokens"), "{err}");
}

/// [`MyLock`] whose validity also subtracts a drift allowance of 1 % of the TTL + 2 ms (Redlock's
/// rule) — or, `subtract_drift` off, claims the allowance but subtracts nothing (the bug).
struct DriftLock {
    inner: MyLock,
    subtract_drift: bool,
}

impl DriftLock {
    fn less_drift(&self, grant: Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        let drift_ms = if self.subtract_drift { ttl_ms / 100 + 2 } else { 0 };
        match grant.validity_ms.checked_sub(drift_ms).filter(|v| *v > 0) {
            Some(validity_ms) => Ok(Grant { validity_ms, ..grant }),
            None => Err(LockError::Lost("no validity left after the drift allowance".into())),
        }
    }
}

#[async_trait(?Send)]
impl LockClient for DriftLock {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        let grant = self.inner.acquire(key, ttl_ms).await?;
        self.less_drift(grant, ttl_ms)
    }

    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        let grant = self.inner.extend(grant, ttl_ms).await?;
        self.less_drift(grant, ttl_ms)
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        self.inner.release(grant).await
    }
}

#[test]
fn a_declared_drift_allowance_is_what_the_lock_is_judged_by() {
    let explore = |name: &str, subtract_drift: bool, declared: bool| {
        let harness = Harness::new(name, move |env| DriftLock {
            inner: MyLock::new(env),
            subtract_drift,
        });
        let harness = if declared { harness.drift_factor(0.01) } else { harness };
        let run = harness
            .kinds(&["drift"])
            .explore_standard(150)
            .jobs(2)
            .shrink(0, 0)
            .run()
            .expect("the harness runs");
        let bugs = run.explorations[0]
            .summary
            .classified
            .as_ref()
            .expect("classified")
            .seeds_bug;
        (run, bugs)
    };
    // Claiming the allowance without subtracting it: drift inside the allowance breaks its
    // lease-validity, and that is its bug.
    let (claims, bugs) = explore("drift-claimed", false, true);
    assert!(bugs > 0, "{}", claims.message());
    assert!(claims.explorations[0].summary.violations["lease-validity"] > 0);
    // Undeclared, the same lock's violations are the drift beyond a zero allowance: excused.
    let (_, undeclared) = explore("drift-claimed", false, false);
    assert_eq!(undeclared, 0);
    // Subtracting what it declares, the lock keeps its leases under that drift.
    let (keeps, kept_bugs) = explore("drift-kept", true, true);
    eprintln!("drift 150 seeds: claimed, not subtracted: {bugs} bug seeds declared, {undeclared} undeclared; subtracted: {kept_bugs}");
    assert_eq!(kept_bugs, 0, "{}", keeps.message());
    keeps.assert_safe();
}

/// Issue 52: the guide's harness page is enough to write a harness test. Its `[dev-dependencies]`
/// line (the path pointed at this repository), its `.cargo/config.toml` and its ```` ```rust
/// example ```` blocks (as `tests/lock_gate.rs`) make a crate of their own, outside this
/// workspace, whose test compiles (`cargo test --no-run`). Cheap: it shares this workspace's
/// target directory, lock file and profiles, so nothing but the new crate is built.
#[test]
fn the_guide_s_harness_page_builds_as_a_crate_of_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/harness.md")).unwrap();
    let blocks = crate::docs_run::blocks(&page);
    let toml = |needle: &str| {
        blocks
            .iter()
            .find(|b| b.info == "toml" && b.lines.iter().any(|l| l.trim() == needle))
            .unwrap_or_else(|| panic!("docs/harness.md shows no ```toml block with {needle}"))
            .lines
            .join("\n")
    };
    let dependency = toml("[dev-dependencies]");
    assert!(dependency.contains("path = \"../lockstep\""), "{dependency}");
    let dependency = dependency.replace("../lockstep", &root.display().to_string());
    let config = toml("[build]");
    let example: Vec<String> = blocks
        .iter()
        .filter(|b| b.info == "rust example")
        .map(|b| b.lines.join("\n"))
        .collect();
    assert!(!example.is_empty(), "docs/harness.md marks no ```rust example block");
    // The workspace's profiles, so that its dependencies' builds are reused as they are.
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let profiles: Vec<&str> = manifest
        .split("\n[")
        .filter(|section| section.starts_with("profile."))
        .collect();
    // lockstep itself is built anew here (a dependency, not this workspace's member): without
    // optimisation, which is what a type and link check needs, in a fraction of the time.
    const UNOPTIMISED: &str = "[profile.dev.package.lockstep]\nopt-level = 0\n\n\
                               [profile.dev.package.lockstep-sim]\nopt-level = 0\n";
    let krate = common::TempPath::dir("harness", "guide-crate");
    let write = |rel: &str, text: &str| {
        let path = krate.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "Cargo.toml",
        &format!(
            "[package]\nname = \"guide-harness\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
             [workspace]\n\n{dependency}\n\n[{}\n\n{UNOPTIMISED}",
            profiles.join("\n[")
        ),
    );
    write(".cargo/config.toml", &config);
    write("src/lib.rs", "");
    write("tests/lock_gate.rs", &example.join("\n\n"));
    std::fs::copy(root.join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["test", "--no-run", "--offline", "--test", "lock_gate"])
        .current_dir(&*krate)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "the guide's harness page does not build as a crate:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
