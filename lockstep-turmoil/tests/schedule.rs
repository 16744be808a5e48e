//! The fault schedule, the pause, the resource and the report: a crash "while redis-1 holds the
//! lock" declared in a few lines fires inside the holder's grant, a second trigger after that
//! crash fires as promptly, a paused host's links are held, resource writes make `stale-write`
//! judged (invalid without fencing, valid with it), the report directory is written, the same
//! seed gives the same history, and the crate depends on none of the `lockstep` command's
//! dependencies.

#[path = "../examples/common/redis_lock.rs"]
mod redis_lock;

use lockstep_sim::{Event, EventKind, Fault, History, Phase};
use lockstep_turmoil::{fault, FaultSchedule, FencingMode, OpRecorder, RedisHosts, Verdict};
use redis_lock::{release_on, try_acquire_on};
use std::time::Duration;

const KEY: &str = "invoices";
const TTL_MS: u64 = 5_000;

/// A worker of the service: from `start_ms`, tries the lock on `redis-1` every 100 ms; once it has
/// it, takes a fencing token (`INCR` on `redis-2`, when there is one), works `work_ms`, reads the
/// resource's counter and writes it back plus one with its token, and releases.
async fn worker(rec: OpRecorder, start_ms: u64, work_ms: u64, tokens: bool) -> turmoil::Result {
    tokio::time::sleep(Duration::from_millis(start_ms)).await;
    for attempt in 0..100 {
        let token = format!("{}-{attempt}", rec.node());
        let Some(mut grant) = try_acquire_on("redis-1", &rec, KEY, TTL_MS, &token).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if tokens {
            let mut fence = lockstep_turmoil::connect("redis-2").await?;
            let t: u64 = redis::cmd("INCR").arg("invoices:fence").query_async(&mut fence).await?;
            grant.fencing_token = Some(t);
        }
        tokio::time::sleep(Duration::from_millis(work_ms)).await;
        let current = rec
            .read("invoice-count", grant.fencing_token)
            .map(|read| read.value.unwrap_or(0))
            .unwrap_or(0);
        // A refusal is the resource's answer, recorded: nothing more to do about it here.
        let _ = rec.write("invoice-count", current + 1, grant.fencing_token);
        release_on("redis-1", &rec, &grant).await;
        return Ok(());
    }
    Err(format!("{} never got the lock", rec.node()).into())
}

/// A two-worker service with `masters` Redis hosts (`redis-1` holds the lock; `redis-2`, if
/// any, the fencing counter), the resource judging by `resource`, and `schedule` in force.
fn run(seed: u64, masters: usize, resource: FencingMode, schedule: FaultSchedule, works_ms: (u64, u64)) -> RedisHosts {
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(60))
        .build();
    let hosts = RedisHosts::builder()
        .masters(masters)
        .resource(resource)
        .run_name("crash-while-held", seed)
        .install(&mut sim)
        .expect("the masters");
    let tokens = masters > 1;
    sim.client("worker-1", worker(hosts.recorder("worker-1"), 0, works_ms.0, tokens));
    sim.client("worker-2", worker(hosts.recorder("worker-2"), 200, works_ms.1, tokens));
    hosts.schedule(&sim, schedule).expect("a schedule that fits");
    hosts.run(&mut sim).expect("the simulation runs");
    hosts
}

/// The crash while held, and the restart 300 ms later.
fn crash_while_held() -> FaultSchedule {
    FaultSchedule::new()
        .when_holds("worker-1", KEY, fault::crash("redis-1"))
        .then_after_ms(300, fault::restart("redis-1"))
}

/// The true µs of `node`'s grant of `KEY`: its `acquire` `ok` and its `release` invoke.
fn grant_of(history: &History, node: &str) -> (u64, u64) {
    let op = |e: &Event, name: &str, want: Phase| {
        e.node == node && matches!(&e.kind, EventKind::Op { op, phase, .. } if op == name && *phase == want)
    };
    let events = history.events();
    let ok = events.iter().find(|e| op(e, "acquire", Phase::Ok)).expect("a grant");
    let released = events
        .iter()
        .find(|e| e.seq > ok.seq && op(e, "release", Phase::Invoke))
        .expect("a release");
    (ok.at_us, released.at_us)
}

/// The true µs of each fault, in order.
fn faults(history: &History) -> Vec<(u64, Fault)> {
    history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Fault { fault } => Some((e.at_us, fault.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_crash_while_redis_1_holds_the_lock_fires_inside_the_grant_and_the_report_is_written() {
    let hosts = run(7, 1, FencingMode::Unfenced, crash_while_held(), (1_500, 100));
    let history = hosts.history();
    let (granted_us, released_us) = grant_of(&history, "worker-1");
    let applied = faults(&history);
    assert_eq!(applied.len(), 2, "{applied:?}");
    let (crash_us, crash) = &applied[0];
    assert_eq!(crash, &Fault::Crash { node: "redis-1".into() });
    // Inside worker-1's grant, and at the end of the step its grant was recorded in.
    assert!(
        (granted_us..=released_us).contains(crash_us),
        "{granted_us} {crash_us} {released_us}"
    );
    assert!(crash_us - granted_us <= 1_000, "{granted_us} {crash_us}");
    let (restart_us, restart) = &applied[1];
    assert_eq!(restart, &Fault::Restart { node: "redis-1".into() });
    assert!(
        (300_000..=301_000).contains(&(restart_us - crash_us)),
        "{crash_us} {restart_us}"
    );
    assert_eq!(hosts.verdict().verdict, Verdict::Invalid);

    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("report");
    let written = hosts.report(&out).expect("the report is written");
    for file in ["report.json", "summary.md", "junit.xml", "index.html"] {
        assert!(written.contains(&out.join(file)), "{file} in {written:?}");
    }
    let svg = written
        .iter()
        .find(|w| w.starts_with(out.join("charts")) && w.extension().is_some_and(|e| e == "svg"))
        .expect("the timeline chart");
    let chart = std::fs::read_to_string(svg).expect("the chart");
    assert!(chart.contains("worker-1") && chart.contains("redis-1"), "{svg:?}");
    let report = std::fs::read_to_string(out.join("report.json")).expect("report.json");
    assert!(report.contains("\"name\": \"crash-while-held\""), "{report}");
    let text = hosts.timeline_text();
    assert!(
        text.contains("worker-1") && text.contains("redis-1      CRASHED"),
        "{text}"
    );
}

#[test]
fn a_second_trigger_after_the_crash_fires_as_soon_as_its_grant_is_recorded() {
    let schedule = crash_while_held().when_holds("worker-2", KEY, fault::clock_jump("redis-1", 1_000));
    let hosts = run(7, 1, FencingMode::Unfenced, schedule, (1_500, 100));
    let history = hosts.history();
    let (granted_us, _) = grant_of(&history, "worker-2");
    let applied = faults(&history);
    let (jump_us, jump) = applied.last().expect("the clock jump");
    assert!(matches!(jump, Fault::ClockJump { .. }), "{applied:?}");
    // The masters lost worker-1's key in the crash; worker-2's grant still sets the trigger off
    // in the step it is recorded in (the keys of redis-1 are not what it reads).
    assert!(
        *jump_us >= granted_us && jump_us - granted_us <= 1_000,
        "{granted_us} {jump_us}"
    );
}

#[test]
fn each_time_fires_at_every_grant() {
    let schedule = FaultSchedule::new().each_time_holds("worker-2", KEY, fault::clock_jump("redis-1", 1));
    let mut sim = turmoil::Builder::new().rng_seed(3).build();
    let hosts = RedisHosts::builder().masters(1).install(&mut sim).expect("a master");
    let rec = hosts.recorder("worker-2");
    sim.client("worker-2", async move {
        for round in 0..3 {
            let grant = try_acquire_on("redis-1", &rec, KEY, TTL_MS, &format!("t{round}"))
                .await
                .ok_or("the lock is free")?;
            // Held across a step boundary: a trigger is judged between steps.
            tokio::time::sleep(Duration::from_millis(50)).await;
            release_on("redis-1", &rec, &grant).await;
        }
        Ok(())
    });
    hosts.schedule(&sim, schedule).expect("fits");
    hosts.run(&mut sim).expect("runs");
    assert_eq!(faults(&hosts.history()).len(), 3);
}

#[test]
fn a_paused_host_has_its_links_held_for_the_duration() {
    let mut sim = turmoil::Builder::new()
        .rng_seed(5)
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(1))
        .build();
    let hosts = RedisHosts::builder().masters(1).install(&mut sim).expect("a master");
    let waits = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let out = waits.clone();
    sim.client("pinger", async move {
        let patient = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(5)));
        let mut conn = lockstep_turmoil::connect_with("redis-1", patient).await?;
        for _ in 0..12 {
            let sent = tokio::time::Instant::now();
            let _: String = redis::cmd("PING").query_async(&mut conn).await?;
            out.borrow_mut().push(sent.elapsed().as_millis() as u64);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    });
    hosts
        .schedule(&sim, FaultSchedule::new().at_ms(300, fault::pause("redis-1", 400)))
        .expect("fits");
    hosts.run(&mut sim).expect("runs");
    let waits = waits.borrow();
    // One PING waited out the pause; the others took a round trip.
    let long: Vec<&u64> = waits.iter().filter(|w| **w >= 100).collect();
    assert_eq!(long.len(), 1, "{waits:?}");
    assert!((250..=450).contains(long[0]), "{waits:?}");
    let history = hosts.history();
    let commands: Vec<u64> = history
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Command { .. }))
        .map(|e| e.at_us)
        .collect();
    // Nothing reached the master while it was paused.
    assert!(
        !commands.iter().any(|at| (302_000..699_000).contains(at)),
        "{commands:?}"
    );
    let resumed = history
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Resumed))
        .expect("the end of the pause is recorded");
    assert_eq!((resumed.node.as_str(), resumed.at_us / 1_000), ("redis-1", 700));
}

#[test]
fn resource_writes_make_stale_write_judged_invalid_unfenced_and_valid_with_fencing() {
    let verdict = |resource| {
        let hosts = run(7, 2, resource, crash_while_held(), (2_000, 200));
        let checks = hosts.check_all();
        let stale = checks.iter().find(|c| c.checker == "stale-write").expect("stale-write");
        (stale.verdict, stale.explanation.clone(), hosts.history())
    };
    let (unfenced, why, _) = verdict(FencingMode::Unfenced);
    assert_eq!(unfenced, Verdict::Invalid, "{why}");
    let (fenced, why, history) = verdict(FencingMode::Fenced);
    assert_eq!(fenced, Verdict::Valid, "{why}");
    // worker-1's late write carried the older token and was refused.
    assert!(history.events().iter().any(|e| matches!(
        &e.kind,
        EventKind::ResourceWrite { client, accepted: false, token: Some(1), .. } if client == "worker-1"
    )));
}

#[test]
fn the_same_seed_gives_the_same_history_digest_with_a_schedule() {
    let first = run(11, 2, FencingMode::Fenced, crash_while_held(), (2_000, 200)).history();
    let second = run(11, 2, FencingMode::Fenced, crash_while_held(), (2_000, 200)).history();
    assert_eq!(first.first_divergence(&second), None);
    assert_eq!(first.digest(), second.digest());
}

#[test]
fn the_schedule_refuses_what_the_simulation_cannot_apply() {
    let mut sim = turmoil::Builder::new().rng_seed(1).build();
    let hosts = RedisHosts::builder().masters(1).install(&mut sim).expect("a master");
    sim.client("worker-1", async { Ok(()) });
    let err = |schedule: FaultSchedule| hosts.schedule(&sim, schedule).expect_err("refused").to_string();
    let clock = err(FaultSchedule::new().at_ms(10, fault::clock_jump("worker-1", 5_000)));
    assert!(
        clock.contains("clock-jump of `worker-1`: clock faults apply to the Redis hosts only (redis-1)"),
        "{clock}"
    );
    let unknown = err(FaultSchedule::new().when_holds("worker-9", KEY, fault::crash("redis-1")));
    assert!(
        unknown.contains("`worker-9` is not a host of this simulation"),
        "{unknown}"
    );
    let crash = err(FaultSchedule::new().at_ms(1, fault::crash("worker-1")));
    assert!(crash.starts_with("fault schedule: fault[0] (crash)"), "{crash}");
    let loss = err(FaultSchedule::new().at_ms(
        1,
        Fault::Loss {
            a: "redis-1".into(),
            b: "worker-1".into(),
            rate_ppm: 10,
        },
    ));
    assert!(loss.contains("fault `loss` is not applied under turmoil"), "{loss}");
    assert!(hosts.jump_clock(&mut sim, "worker-1", 1).is_err());
    assert!(hosts.history().is_empty());
}

#[test]
fn a_toml_schedule_declares_the_crash_while_held() {
    let schedule = FaultSchedule::from_toml(
        r#"
[[fault]]
kind = "crash"
node = "redis-1"
when_holds = { node = "worker-1", key = "invoices" }

[[fault]]
kind = "restart"
node = "redis-1"
after = { fault = 0, after_ms = 300 }
"#,
    )
    .expect("a schedule");
    assert_eq!(schedule, crash_while_held());
}

/// The crate runs without the `lockstep` command's dependencies (its `cli` feature).
#[test]
fn the_dependency_tree_has_none_of_the_commands_dependencies() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = std::process::Command::new(cargo)
        .args(["tree", "-p", "lockstep-turmoil", "-e", "normal", "--prefix", "none"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.lines().any(|l| l.starts_with("lockstep v")), "{tree}");
    for name in ["clap", "resvg", "indicatif", "anstream", "anstyle", "png"] {
        let prefix = format!("{name} ");
        assert!(!tree.lines().any(|l| l.starts_with(&prefix)), "{name} in\n{tree}");
    }
}
