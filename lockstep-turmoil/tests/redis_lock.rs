//! A redis-rs lock in a turmoil `Sim` against lockstep's Redis hosts, judged by lockstep's
//! mutual-exclusion checker: safe without faults, broken by the classic crash of a master without
//! persistence while the lock is held, and by a forward jump of the master's wall clock.

use lockstep_sim::{EventKind, Fault};
#[path = "../examples/common/redis_lock.rs"]
mod redis_lock;

use lockstep_turmoil::{Persistence, RedisHosts, Verdict};
use redis_lock::{release, try_acquire};
use std::time::Duration;

const KEY: &str = "orders-lock";
const TTL_MS: u64 = 10_000;
/// A fault the driver applies to the master while client-a holds the lock.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault_ {
    None,
    /// Crash at 500 ms, restart at 700 ms.
    CrashRestart,
    /// The master's wall clock jumps 15 s forward at 500 ms.
    ClockJump,
}

struct Outcome {
    verdict: Verdict,
    /// Every checker's result, by name.
    checks: Vec<lockstep::checker::CheckResult>,
    explanation: String,
    digest: String,
    history: lockstep_sim::History,
}

/// client-a takes the lock at once and holds it 2 s; client-b tries every 100 ms from 200 ms on,
/// holds it 100 ms when it gets it. The driver applies `fault` to the master meanwhile.
fn run(seed: u64, persistence: Persistence, fault: Fault_) -> Outcome {
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(60))
        .build();
    let hosts = RedisHosts::builder()
        .master("redis")
        .persistence(persistence)
        .install(&mut sim)
        .expect("one master");
    let a = hosts.recorder("client-a");
    sim.client("client-a", async move {
        let grant = try_acquire(&a, KEY, TTL_MS, "token-a")
            .await
            .ok_or("client-a was not granted the lock")?;
        tokio::time::sleep(Duration::from_millis(2_000)).await;
        release(&a, &grant).await;
        Ok(())
    });
    let b = hosts.recorder("client-b");
    sim.client("client-b", async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        for attempt in 0..100 {
            if let Some(grant) = try_acquire(&b, KEY, TTL_MS, &format!("token-b-{attempt}")).await {
                tokio::time::sleep(Duration::from_millis(100)).await;
                release(&b, &grant).await;
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err("client-b never got the lock".into())
    });
    let (mut faulted, mut restarted) = (false, false);
    loop {
        let done = sim.step().expect("the simulation runs");
        let now = sim.elapsed();
        if !faulted && now >= Duration::from_millis(500) {
            faulted = true;
            match fault {
                Fault_::None => {}
                Fault_::CrashRestart => hosts.crash(&mut sim, "redis").expect("a master"),
                Fault_::ClockJump => hosts.jump_clock(&mut sim, "redis", 15_000).expect("a master"),
            }
        }
        if fault == Fault_::CrashRestart && !restarted && now >= Duration::from_millis(700) {
            restarted = true;
            hosts.restart(&mut sim, "redis").expect("a master");
        }
        if done {
            break;
        }
    }
    let result = hosts.verdict();
    let history = hosts.history();
    Outcome {
        checks: lockstep_turmoil::check_all(&history),
        verdict: result.verdict,
        explanation: result.explanation,
        digest: history.digest(),
        history,
    }
}

fn commands(history: &lockstep_sim::History) -> Vec<String> {
    history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Command { args, reply, .. } => Some(format!("{} -> {reply}", args.join(" "))),
            _ => None,
        })
        .collect()
}

#[test]
fn a_correct_lock_without_faults_is_safe() {
    let out = run(7, Persistence::None, Fault_::None);
    assert_eq!(out.verdict, Verdict::Valid, "{}", out.explanation);
    assert_eq!(out.explanation, "no overlap among 2 grants on 1 key");
    let commands = commands(&out.history);
    // The master saw redis-rs' commands and answered them: the first SET won, and client-a's
    // release deleted its own key.
    assert!(
        commands
            .iter()
            .any(|c| c == "SET orders-lock token-a NX PX 10000 -> +OK"),
        "{commands:#?}"
    );
    assert!(commands
        .iter()
        .any(|c| c.starts_with("SET orders-lock token-b-") && c.ends_with("(nil)")));
    assert!(
        commands
            .iter()
            .any(|c| c.starts_with("EVAL") && c.contains("token-a") && c.ends_with(":1")),
        "{commands:#?}"
    );
}

impl Outcome {
    fn check(&self, name: &str) -> &lockstep::checker::CheckResult {
        self.checks
            .iter()
            .find(|c| c.checker == name)
            .expect("a checker of that name")
    }
}

/// redis-rs' `Script::invoke_async` sends `EVALSHA` (and `EVAL` once, after `NOSCRIPT`): the
/// lease reader resolves the digest through the body it saw, so the release of a correct lock is
/// read as a release, fault-free, and the crash's lost lease shows.
#[test]
fn an_evalsha_release_is_read_as_a_release_valid_without_faults_and_invalid_after_a_crash() {
    let out = run(7, Persistence::None, Fault_::None);
    let evalsha = commands(&out.history)
        .into_iter()
        .filter(|c| c.starts_with("EVALSHA") && c.ends_with(":1"))
        .count();
    assert!(evalsha >= 1, "{:#?}", commands(&out.history));
    let lease = out.check("lease-validity");
    assert_eq!(lease.verdict, Verdict::Valid, "{}", lease.explanation);
    let crashed = run(7, Persistence::None, Fault_::CrashRestart);
    let lease = crashed.check("lease-validity");
    assert_eq!(lease.verdict, Verdict::Invalid, "{}", lease.explanation);
}

#[test]
fn a_master_crash_without_persistence_while_held_breaks_mutual_exclusion() {
    let out = run(7, Persistence::None, Fault_::CrashRestart);
    assert_eq!(out.verdict, Verdict::Invalid, "{}", out.explanation);
    assert!(
        out.explanation.starts_with("client-a (grant token-a") && out.explanation.contains("client-b (grant token-b-"),
        "{}",
        out.explanation
    );
    let faults: Vec<&Fault> = out
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Fault { fault } => Some(fault),
            _ => None,
        })
        .collect();
    assert_eq!(
        faults,
        [
            &Fault::Crash { node: "redis".into() },
            &Fault::Restart { node: "redis".into() }
        ]
    );
    // client-a's late release found client-b's token: the Lua release deleted nothing.
    let commands = commands(&out.history);
    assert!(
        commands
            .iter()
            .any(|c| c.starts_with("EVAL") && c.contains("token-a") && c.ends_with(":0")),
        "{commands:#?}"
    );
}

#[test]
fn with_aof_always_the_lock_survives_the_crash() {
    let out = run(7, Persistence::AofAlways, Fault_::CrashRestart);
    assert_eq!(out.verdict, Verdict::Valid, "{}", out.explanation);
}

#[test]
fn a_forward_jump_of_the_masters_clock_expires_the_lock_under_its_holder() {
    let out = run(7, Persistence::None, Fault_::ClockJump);
    assert_eq!(out.verdict, Verdict::Invalid, "{}", out.explanation);
    let expired_at = out
        .history
        .events()
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Expired { key } if key == KEY))
        .expect("the lock's key expired");
    // Expired by the jump (at 500 ms of true time, within a tick), long before its 10 s TTL.
    assert!((500_000..=502_000).contains(&expired_at.at_us), "{}", expired_at.at_us);
}

#[test]
fn the_same_seed_gives_the_same_history_digest() {
    let first = run(11, Persistence::None, Fault_::CrashRestart);
    let second = run(11, Persistence::None, Fault_::CrashRestart);
    assert_eq!(first.history.first_divergence(&second.history), None);
    assert_eq!(first.digest, second.digest);
    assert!(first.history.len() > 20, "{}", first.history.len());
}

/// `BLPOP` through the shared server loop under turmoil: it blocks for its timeout by the
/// master's own clock (10 % fast here: 1 s of its time is ~909 ms of true time), and a push by
/// another client wakes a blocked one at once.
#[test]
fn blpop_blocks_by_the_masters_clock_and_wakes_on_a_push() {
    let mut sim = turmoil::Builder::new().rng_seed(3).build();
    let hosts = RedisHosts::builder()
        .master("redis")
        .clock(
            "redis",
            lockstep_turmoil::ClockSpec {
                offset_ms: 0,
                drift_ppm: 100_000,
            },
        )
        .install(&mut sim)
        .expect("one master");
    let results = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let out = results.clone();
    sim.client("consumer", async move {
        // BLPOP waits longer than redis-rs' default response timeout (500 ms).
        let patient = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
        let mut conn = lockstep_turmoil::connect_with("redis", patient).await?;
        let start = tokio::time::Instant::now();
        let nothing: Option<(String, String)> = redis::cmd("BLPOP").arg("empty").arg(1).query_async(&mut conn).await?;
        out.borrow_mut()
            .push(format!("{nothing:?} after {} ms", start.elapsed().as_millis()));
        let start = tokio::time::Instant::now();
        let job: Option<(String, String)> = redis::cmd("BLPOP").arg("jobs").arg(5).query_async(&mut conn).await?;
        out.borrow_mut()
            .push(format!("{job:?} after {} ms", start.elapsed().as_millis()));
        Ok(())
    });
    sim.client("producer", async move {
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let mut conn = lockstep_turmoil::connect("redis").await?;
        let _: i64 = redis::cmd("RPUSH")
            .arg("jobs")
            .arg("invoice-7")
            .query_async(&mut conn)
            .await?;
        Ok(())
    });
    sim.run().expect("the simulation runs");
    let results = results.borrow();
    assert_eq!(results.len(), 2, "{results:?}");
    // 1,000 ms of the master's clock, plus the round trip.
    let (timed_out, waited) = results[0].split_once(" after ").expect("a result");
    assert_eq!(timed_out, "None");
    let waited_ms: u64 = waited.trim_end_matches(" ms").parse().expect("ms");
    assert!((905..=960).contains(&waited_ms), "{}", results[0]);
    assert!(
        results[1].starts_with("Some((\"jobs\", \"invoice-7\")) after "),
        "{}",
        results[1]
    );
    let history = hosts.history();
    assert!(history.events().iter().any(|e| matches!(
        &e.kind,
        EventKind::Command { args, reply, client, .. }
            if args[0] == "BLPOP" && args[1] == "jobs" && reply == "[\"jobs\", \"invoice-7\"]"
                && client.as_deref() == Some("consumer")
    )));
}
