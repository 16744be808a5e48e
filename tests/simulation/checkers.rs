//! Regression tests of issue 12's checker fixes and of the `lease-validity` checker, on whole
//! simulated runs: a write in flight outlives an abort; token order follows the masters' grant;
//! the built-in locks refuse a grant whose validity ran out; a Redlock that forgets to subtract
//! its acquisition time lies about its lease while the correct one never does.

use lockstep::history::OpHistory;
use lockstep::model::Fencing;
use lockstep::model::Verdict;
use lockstep::prelude::*;
use lockstep::run::ScenarioRun;
use lockstep::sim::FencingMode;
use std::path::Path;
use std::rc::Rc;

fn scenario_file(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name);
    Scenario::from_file(&path).expect("the shipped file parses")
}

fn verdicts(run: &ScenarioRun) -> Vec<(String, Verdict)> {
    run.results.iter().map(|r| (r.checker.clone(), r.verdict)).collect()
}

fn verdict(run: &ScenarioRun, checker: &str) -> Verdict {
    run.verdict(checker).unwrap_or_else(|| panic!("{checker} ran"))
}

#[test]
fn a_write_in_flight_keeps_the_holders_turn_past_its_abort() {
    let scenario = scenario_file("watchdog-write-in-flight.toml");
    let run = run_scenario(&scenario, None).expect("the world runs");
    assert!(run.as_expected(), "{:?}", run.mismatches);
    let me = run.result("mutual-exclusion").expect("ran");
    assert_eq!(me.verdict, Verdict::Invalid, "{}", me.explanation);
    assert!(
        me.explanation.contains("from 10.") && me.explanation.contains("to 11."),
        "{}",
        me.explanation
    );
    // The witness shows the write that kept client-1's turn going: completed after 20 s.
    assert!(
        me.witness.iter().any(|e| e.node == "client-1" && e.at_us >= 20_000_000),
        "{:?}",
        me.witness
    );
    // The timeline says the write was already sent, not that it was skipped.
    let text = lockstep::report::narrative::text(&OpHistory::new(&run.history));
    assert!(
        text.contains("lock lost: abort signal raised, but the write sent at 2.022 s is still in flight"),
        "{text}"
    );
    assert!(!text.contains("write skipped"), "{text}");

    // Fenced, the resource rejects the late write: the resource is safe, the lock is not.
    let mut fenced = scenario.clone();
    fenced.lock.fencing = Fencing::Incr;
    fenced.resource = FencingMode::Fenced;
    let run = run_scenario(&fenced, None).expect("the world runs");
    let names = [
        "mutual-exclusion",
        "stale-write",
        "lost-update",
        "token-order",
        "lease-validity",
        "ownership",
        "spurious-loss",
        "liveness",
    ];
    let expected = [
        Verdict::Invalid,
        Verdict::Valid,
        Verdict::Valid,
        Verdict::Valid,
        Verdict::Valid,
        Verdict::Valid,
        Verdict::Valid,
        Verdict::Valid,
    ];
    let want: Vec<(String, Verdict)> = names.iter().map(|n| n.to_string()).zip(expected).collect();
    assert_eq!(verdicts(&run), want, "{:#?}", run.results);
    let history = OpHistory::new(&run.history);
    assert_eq!(
        lockstep::report::narrative::why_resource_safe(&history),
        "fencing rejected the stale write"
    );
}

/// A lock that takes the key and its fencing token in one atomic script, and (unlike the
/// built-ins) hands out whatever validity is left, even none.
struct AtomicSetIncr {
    env: LockEnv,
}

const SET_INCR: &str = r#"if redis.call("set",KEYS[1],ARGV[1],"NX","PX",ARGV[2]) then return redis.call("incr",KEYS[2]) else return 0 end"#;

#[async_trait(?Send)]
impl LockClient for AtomicSetIncr {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        let value = random_value(&self.env);
        let start_ms = self.env.monotonic_ms();
        let mut eval = redis::cmd("EVAL");
        eval.arg(SET_INCR)
            .arg(2)
            .arg(key)
            .arg(format!("fence:{key}"))
            .arg(&value)
            .arg(ttl_ms);
        let token: u64 = self.env.masters()[0].query(&eval).await?;
        if token == 0 {
            return Err(LockError::Busy);
        }
        let now_ms = self.env.monotonic_ms();
        Ok(Grant {
            key: key.to_string(),
            value,
            fencing_token: Some(token),
            validity_ms: ttl_ms.saturating_sub((now_ms - start_ms).max(0) as u64),
            validity_from_ms: Some(now_ms),
        })
    }

    async fn extend(&self, _grant: &Grant, _ttl_ms: u64) -> Result<Grant, LockError> {
        Err(LockError::Failed("no extension".into()))
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        let mut eval = redis::cmd("EVAL");
        eval.arg(RELEASE_SCRIPT).arg(1).arg(&grant.key).arg(&grant.value);
        Ok(self.env.masters()[0].query::<i64>(&eval).await? == 1)
    }
}

/// client-1's acquisition reaches the master at once; client-1 is paused before the reply
/// comes back, for longer than the TTL. client-2 takes the lock (token 2) while client-1 is
/// frozen; client-1 then records its grant (token 1, validity 0) after client-2's.
const PAUSED_IN_FLIGHT: &str = r#"
name = "paused-while-the-grant-is-in-flight"
description = "client-1 is paused while its grant's reply is in flight"
seed = 1
duration_ms = 10000

[network]
min_latency_ms = 5
max_latency_ms = 5

[topology]
masters = 1
resource = "fenced"

[lock]
algorithm = "token-release"
ttl_ms = 1000
fencing = "incr"

[workload]
iterations = 1
acquire_retry_ms = 50

[[client]]
name = "client-1"
start_ms = 0
work_ms = 10

[[client]]
name = "client-2"
start_ms = 200
work_ms = 10

[[fault]]
at_ms = 17
kind = "pause"
node = "client-1"
duration_ms = 2000
"#;

#[test]
fn token_order_follows_the_masters_grant_not_the_reply() {
    let scenario = Scenario::from_str(PAUSED_IN_FLIGHT, "test").expect("parses");
    let factory: LockFactory = Rc::new(|env| Rc::new(AtomicSetIncr { env }) as Rc<dyn LockClient>);
    let mut plain = scenario.clone();
    plain.lock.fencing = Fencing::None;
    let run = run_with_lock(&plain, None, factory).expect("the world runs");
    let history = OpHistory::new(&run.history);
    let holds: Vec<(&str, Option<u64>, u64)> = history
        .holds()
        .iter()
        .map(|h| (h.process, h.grant.fencing_token, h.grant.validity_ms))
        .collect();
    // The client received the grants out of the masters' order ...
    assert_eq!(holds.len(), 2, "{holds:?}");
    assert_eq!((holds[0].0, holds[0].1), ("client-2", Some(2)), "{holds:?}");
    assert_eq!(
        (holds[1].0, holds[1].1, holds[1].2),
        ("client-1", Some(1), 0),
        "{holds:?}"
    );
    // ... but the master granted token 1 first: token order holds.
    let order = run.result("token-order").expect("ran");
    assert_eq!(order.verdict, Verdict::Valid, "{}", order.explanation);
    assert!(history.holds()[1].master_grant.expect("shown").seq < history.holds()[0].granted.seq);

    // The built-in lock refuses the grant whose validity ran out, and gives the key back.
    let run = run_scenario(&scenario, None).expect("the world runs");
    let history = OpHistory::new(&run.history);
    assert!(history.holds().iter().all(|h| h.grant.validity_ms > 0));
    let refused = run.history.events().iter().any(|e| {
        e.node == "client-1"
            && matches!(&e.kind, lockstep::sim::EventKind::Op { op, data, .. }
                if op == "acquire" && data.to_string().contains("validity ran out"))
    });
    assert!(refused, "client-1's acquire failed with 'validity ran out'");
    assert_eq!(verdict(&run, "token-order"), Verdict::Valid);
}

/// A Redlock that forgets to subtract the time its acquisition round took: validity is
/// `ttl − drift` counted from the end of the round (a one-line mutant of the built-in).
struct RedlockWithoutElapsed {
    env: LockEnv,
}

impl RedlockWithoutElapsed {
    fn quorum(&self) -> usize {
        self.env.masters().len() / 2 + 1
    }

    async fn unlock_all(&self, key: &str, value: &str) -> usize {
        let requests = self.env.masters().iter().map(|link| {
            let mut eval = redis::cmd("EVAL");
            eval.arg(RELEASE_SCRIPT).arg(1).arg(key).arg(value);
            async move { link.query::<i64>(&eval).await }
        });
        let replies = futures_util::future::join_all(requests).await;
        replies.iter().filter(|r| matches!(r, Ok(1))).count()
    }
}

#[async_trait(?Send)]
impl LockClient for RedlockWithoutElapsed {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        let value = random_value(&self.env);
        let requests = self.env.masters().iter().map(|link| {
            let set = redis::cmd("SET")
                .arg(key)
                .arg(&value)
                .arg("NX")
                .arg("PX")
                .arg(ttl_ms)
                .clone();
            async move { link.query::<Option<String>>(&set).await }
        });
        let replies = futures_util::future::join_all(requests).await;
        let successes = replies.iter().filter(|r| matches!(r, Ok(Some(_)))).count();
        let drift_ms = ttl_ms / 100 + 2;
        // The bug: no `- elapsed`.
        let validity_ms = ttl_ms.saturating_sub(drift_ms);
        if successes >= self.quorum() {
            return Ok(Grant {
                key: key.to_string(),
                value,
                fencing_token: None,
                validity_ms,
                validity_from_ms: Some(self.env.monotonic_ms()),
            });
        }
        self.unlock_all(key, &value).await;
        Err(LockError::Busy)
    }

    async fn extend(&self, _grant: &Grant, _ttl_ms: u64) -> Result<Grant, LockError> {
        Err(LockError::Failed("no extension".into()))
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        Ok(self.unlock_all(&grant.key, &grant.value).await > 0)
    }
}

/// Five masters across regions (20–80 ms one way), no fault at all.
const REDLOCK_WAN: &str = r#"
name = "redlock-wan"
description = "Redlock over five masters with cross-region latencies, no faults"
seed = 5
duration_ms = 20000

[network]
min_latency_ms = 20
max_latency_ms = 80

[topology]
masters = 5
clients = 2
resource = "fenced"

[lock]
algorithm = "redlock"
ttl_ms = 1000
# A round trip takes 40-160 ms: the default 50 ms request timeout would time most requests out.
request_timeout_ms = 200
connect_timeout_ms = 200

[workload]
iterations = 3
work_ms = [50, 150]
acquire_retry_ms = 50
"#;

#[test]
fn a_redlock_that_forgets_its_acquisition_time_lies_about_its_lease() {
    let scenario = Scenario::from_str(REDLOCK_WAN, "test").expect("parses");

    // The built-in Redlock never claims more than the masters hold.
    let run = run_scenario(&scenario, None).expect("the world runs");
    let lease = run.result("lease-validity").expect("ran");
    assert_eq!(lease.verdict, Verdict::Valid, "{}", lease.explanation);
    assert!(
        run.results.iter().all(|r| r.verdict != Verdict::Invalid),
        "{:#?}",
        run.results
    );

    // The mutant, same seed, same network: every other checker is satisfied, lease-validity is not.
    let factory: LockFactory = Rc::new(|env| Rc::new(RedlockWithoutElapsed { env }) as Rc<dyn LockClient>);
    let run = run_with_lock(&scenario, None, factory).expect("the world runs");
    let lease = run.result("lease-validity").expect("ran");
    assert_eq!(lease.verdict, Verdict::Invalid, "{}", lease.explanation);
    assert!(
        lease.explanation.contains("masters' lease ended at"),
        "{}",
        lease.explanation
    );
    for checker in ["mutual-exclusion", "stale-write", "lost-update"] {
        assert_eq!(verdict(&run, checker), Verdict::Valid, "{checker}: {:#?}", run.results);
    }
}

/// One master without persistence crashes at 0.5 s under client-1's lease and comes back at
/// `restart_ms`; client-2 retries until it gets the lock.
fn crash_under_a_lease(restart_ms: u64) -> Scenario {
    let source = format!(
        r#"
name = "crash-under-a-lease"
description = "the one master crashes under client-1's lease and restarts at {restart_ms} ms"
seed = 1
duration_ms = 8000

[network]
min_latency_ms = 1
max_latency_ms = 1

[topology]
masters = 1
resource = "unfenced"
persistence = "none"

[lock]
algorithm = "token-release"
ttl_ms = 2000

[workload]
iterations = 1
acquire_retry_ms = 100

[[client]]
name = "client-1"
start_ms = 0
work_ms = 1500

[[client]]
name = "client-2"
start_ms = 200
work_ms = 100

[[fault]]
at_ms = 500
kind = "crash"
node = "redis-1"

[[fault]]
at_ms = {restart_ms}
kind = "restart"
node = "redis-1"
"#
    );
    Scenario::from_str(&source, "test").expect("parses")
}

#[test]
fn a_copy_lost_in_a_crash_lasts_until_the_master_runs_again() {
    // Back after the TTL: nobody could take the key while the master was down, so client-1's
    // claim (until ~2 s) stayed inside the lease although its copy vanished at 0.5 s.
    let run = run_scenario(&crash_under_a_lease(3_000), None).expect("the world runs");
    let lease = run.result("lease-validity").expect("ran");
    assert_eq!(lease.verdict, Verdict::Valid, "{}", lease.explanation);
    assert_eq!(verdict(&run, "mutual-exclusion"), Verdict::Valid);
    let holds = OpHistory::new(&run.history).holds().len();
    assert_eq!(holds, 2, "client-2 got the lock after the restart");

    // Back at once: client-2 takes the key at 0.6 s while client-1 still claims it.
    let run = run_scenario(&crash_under_a_lease(600), None).expect("the world runs");
    let lease = run.result("lease-validity").expect("ran");
    assert_eq!(lease.verdict, Verdict::Invalid, "{}", lease.explanation);
    assert!(
        lease.explanation.contains("masters' lease ended at 0."),
        "{}",
        lease.explanation
    );
    assert_eq!(verdict(&run, "mutual-exclusion"), Verdict::Invalid);
}

/// Redlock over three masters; redis-3 is down from the start until 5 s, so client-1's grant
/// holds redis-1 and redis-2; redis-1's wall clock then jumps 5 s forward and its copy expires.
/// client-2 takes the lock after 5 s, through redis-3 too.
const DOWN_AT_THE_GRANT: &str = r#"
name = "down-at-the-grant"
description = "a master down when the grant is given counts as holding a copy until it is back"
seed = 1
duration_ms = 8000

[network]
min_latency_ms = 1
max_latency_ms = 1

[topology]
masters = 3
resource = "unfenced"
persistence = "none"

[lock]
algorithm = "redlock"
ttl_ms = 2000

[workload]
iterations = 1
acquire_retry_ms = 100

[[client]]
name = "client-1"
start_ms = 10
work_ms = 1500

# Talks to redis-3 once it is back, which shows when it ran again.
[[client]]
name = "client-2"
start_ms = 5100
work_ms = 100

[[fault]]
at_ms = 0
kind = "crash"
node = "redis-3"

[[fault]]
at_ms = 500
kind = "clock-jump"
node = "redis-1"
delta_ms = 5000

[[fault]]
at_ms = 5000
kind = "restart"
node = "redis-3"
"#;

#[test]
fn a_master_down_at_the_grant_holds_it_until_it_runs_again() {
    // A competitor needs two of three masters: redis-1 (its copy expired at 0.5 s) and redis-3,
    // which grants nothing until 5 s. client-1's claim (until ~2 s) stayed inside the lease.
    let scenario = Scenario::from_str(DOWN_AT_THE_GRANT, "test").expect("parses");
    let run = run_scenario(&scenario, None).expect("the world runs");
    let history = OpHistory::new(&run.history);
    assert_eq!(history.holds().len(), 2);
    let lease = run.result("lease-validity").expect("ran");
    assert_eq!(lease.verdict, Verdict::Valid, "{}", lease.explanation);
}
