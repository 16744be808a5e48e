//! Testing your own lock implementation with lockstep, in plain `cargo test`.
//!
//! `MyLock` is what a team might have written: `SET key value NX PX ttl` to acquire and a Lua
//! compare-and-delete to release. Implement [`LockClient`] for it, and any scenario runs it
//! instead of a built-in algorithm. The tests below pin what it does under Kleppmann's pause:
//! like every lease-based lock it cannot stop a paused client, and with fencing the resource
//! stays safe anyway.
//!
//! Everything comes from `lockstep::prelude`: the lock gets a [`LockEnv`] — its node's clocks,
//! sleeps, seeded random stream and one link per Redis master — and nothing of the world beyond.
//!
//! Run: `cargo run --example custom_lock`, or `cargo test --example custom_lock`.

use lockstep::prelude::*;
use std::path::Path;
use std::rc::Rc;

/// A user's lock: one master, SET NX PX, compare-and-delete release, no extension.
struct MyLock {
    env: LockEnv,
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
        match self.env.masters()[0].query::<Option<String>>(&set).await? {
            Some(_) => Ok(Grant {
                key: key.to_string(),
                value,
                fencing_token: None,
                validity_ms: ttl_ms,
                validity_from_ms: None,
            }),
            None => Err(LockError::Busy),
        }
    }

    async fn extend(&self, _grant: &Grant, _ttl_ms: u64) -> Result<Grant, LockError> {
        Err(LockError::Failed("MyLock does not extend".into()))
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

fn run_my_lock(file: &str) -> ScenarioRun {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(file);
    let scenario = Scenario::from_file(&path).expect("a valid scenario");
    let factory: LockFactory = Rc::new(|env| Rc::new(MyLock { env }));
    run_with_lock(&scenario, None, factory).expect("the world runs")
}

fn main() {
    for file in ["kleppmann-gc-pause.toml", "kleppmann-gc-pause-fenced.toml"] {
        let run = run_my_lock(file);
        println!("{file}:");
        for result in &run.results {
            println!(
                "  {:<18} {:<8} {}",
                result.checker,
                result.verdict.name(),
                result.explanation
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn my_lock_cannot_stop_a_paused_client() {
        let run = run_my_lock("kleppmann-gc-pause.toml");
        assert_eq!(run.verdict("mutual-exclusion"), Some(Verdict::Invalid));
        assert_eq!(run.verdict("lost-update"), Some(Verdict::Invalid));
    }

    #[test]
    fn my_lock_without_faults_is_safe() {
        let run = run_my_lock("baseline-token-release.toml");
        assert_eq!(run.verdict("mutual-exclusion"), Some(Verdict::Valid));
        assert_eq!(run.verdict("lost-update"), Some(Verdict::Valid));
    }
}
