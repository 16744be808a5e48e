//! `Harness::bounded` (the public API's `explore --bounded`): a user's correct single-master lock
//! explored inside the standard template lock's assumptions shows no implementation bug, while
//! the same lock forgetting to subtract its acquisition time from the validity is caught — its
//! grants claim a lease the master does not hold, under plans that broke no assumption — and the
//! shrunk counterexample is one of those seeds, for lease-validity.

use lockstep::prelude::*;

/// `SET NX PX`, compare-and-PEXPIRE, compare-and-delete; the validity counted from the request
/// (`subtract_elapsed`), or — the bug — the whole TTL counted from the reply.
struct SingleMaster {
    env: LockEnv,
    subtract_elapsed: bool,
}

impl SingleMaster {
    fn grant(&self, key: &str, value: String, ttl_ms: u64, start_ms: i64) -> Result<Grant, LockError> {
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
        Ok(Grant {
            key: key.to_string(),
            value,
            fencing_token: None,
            validity_ms,
            validity_from_ms: Some(now_ms),
        })
    }
}

#[async_trait(?Send)]
impl LockClient for SingleMaster {
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
            Some(_) => self.grant(key, value, ttl_ms, start_ms),
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
            1 => self.grant(&grant.key, grant.value.clone(), ttl_ms, start_ms),
            _ => Err(LockError::Lost("the key holds another value".into())),
        }
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        let eval = redis::cmd("EVAL")
            .arg(RELEASE_SCRIPT)
            .arg(1)
            .arg(&grant.key)
            .arg(&grant.value)
            .clone();
        Ok(self.env.masters()[0].query::<i64>(&eval).await? == 1)
    }
}

fn harness(name: &str, subtract_elapsed: bool) -> Harness {
    Harness::new(name, move |env| SingleMaster { env, subtract_elapsed })
        .explore_standard(30)
        .bounded()
        .jobs(2)
        .shrink(1, 40)
}

#[test]
fn a_correct_user_lock_shows_no_implementation_bug_under_its_assumptions() {
    let run = harness("single-master", true).run().expect("the harness runs");
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
    let run = harness("no-elapsed", false).run().expect("the harness runs");
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
