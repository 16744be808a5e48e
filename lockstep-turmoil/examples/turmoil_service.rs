//! A service under turmoil that takes a redis-rs lock against lockstep's Redis, with a fault, and
//! lockstep's verdict on what happened.
//!
//! Two replicas of an "invoice worker" service (turmoil clients `worker-1`, `worker-2`) each take
//! the lock `invoices` with `SET key token NX PX ttl`, work under it, and release it with a
//! token-checked Lua script. Redis is one lockstep master (`redis`). A fault schedule applies one
//! fault as soon as `worker-1` holds the lock (a `when_holds` trigger: no driver-loop code); the
//! run is judged by lockstep's `mutual-exclusion` checker:
//!
//! - `none`: no fault, the lock is safe;
//! - `clock-jump`: the master's wall clock jumps 30 s forward: the key expires at once, `worker-2`
//!   gets the lock while `worker-1` still works under it;
//! - `crash`: the master crashes and comes back empty (persistence `none`) 300 ms later: the same,
//!   the classic.
//!
//! Run: `cargo run -p lockstep-turmoil --example turmoil_service [none|clock-jump|crash] [seed]
//! [report-dir]` (with a directory, the run's report is written there: open its `index.html`).

#[path = "common/redis_lock.rs"]
mod redis_lock;

use lockstep_turmoil::{fault, FaultSchedule, OpRecorder, RedisHosts, Verdict};
use redis_lock::{release, try_acquire};
use std::time::Duration;

/// The lock's key.
const KEY: &str = "invoices";
/// The lock's TTL.
const TTL_MS: u64 = 5_000;
/// How long a worker works under the lock.
const WORK_MS: u64 = 1_500;
/// A worker: starts after `start_ms`, retries every 100 ms until it gets the lock, works, releases.
async fn worker(rec: OpRecorder, start_ms: u64) -> turmoil::Result {
    tokio::time::sleep(Duration::from_millis(start_ms)).await;
    for attempt in 0..200 {
        let token = format!("{}-{attempt}", rec.node());
        if let Some(grant) = try_acquire(&rec, KEY, TTL_MS, &token).await {
            tokio::time::sleep(Duration::from_millis(WORK_MS)).await;
            release(&rec, &grant).await;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("{} never got the lock", rec.node()).into())
}

/// Runs the service with `kind` (`none`, `clock-jump` or `crash`) applied while `worker-1` holds
/// the lock; the verdict, its explanation and the history's digest. With `report`, the run's
/// report is written to that directory.
fn run(kind: &str, seed: u64, report: Option<&str>) -> Result<(Verdict, String, String), Box<dyn std::error::Error>> {
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(60))
        .build();
    let hosts = RedisHosts::builder()
        .master("redis")
        .run_name(&format!("turmoil-service-{kind}"), seed)
        .install(&mut sim)?;
    sim.client("worker-1", worker(hosts.recorder("worker-1"), 0));
    sim.client("worker-2", worker(hosts.recorder("worker-2"), 200));
    let schedule = match kind {
        "none" => FaultSchedule::new(),
        "clock-jump" => FaultSchedule::new().when_holds("worker-1", KEY, fault::clock_jump("redis", 30_000)),
        "crash" => FaultSchedule::new()
            .when_holds("worker-1", KEY, fault::crash("redis"))
            .then_after_ms(300, fault::restart("redis")),
        other => return Err(format!("unknown fault `{other}` (none, clock-jump, crash)").into()),
    };
    hosts.schedule(&sim, schedule)?;
    hosts.run(&mut sim)?;
    if let Some(dir) = report {
        hosts.report(dir)?;
    }
    let result = hosts.verdict();
    Ok((result.verdict, result.explanation, hosts.history().digest()))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let faults: Vec<&str> = match args.first() {
        Some(fault) => vec![fault.as_str()],
        None => vec!["none", "clock-jump", "crash"],
    };
    let seed = match args.get(1) {
        Some(seed) => seed.parse().map_err(|e| format!("seed `{seed}`: {e}"))?,
        None => 1,
    };
    let report = args.get(2).map(String::as_str);
    if report.is_some() && faults.len() > 1 {
        return Err("a report directory takes one fault (none, clock-jump or crash)".into());
    }
    for fault in faults {
        let (verdict, explanation, digest) = run(fault, seed, report)?;
        println!(
            "{fault}: mutual-exclusion {verdict:?}: {explanation} (history digest {})",
            &digest[..16]
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_is_safe_without_faults_and_unsafe_with_each_fault() {
        assert_eq!(run("none", 1, None).map(|r| r.0).ok(), Some(Verdict::Valid));
        assert_eq!(run("clock-jump", 1, None).map(|r| r.0).ok(), Some(Verdict::Invalid));
        assert_eq!(run("crash", 1, None).map(|r| r.0).ok(), Some(Verdict::Invalid));
        assert!(run("flood", 1, None).is_err());
    }
}
