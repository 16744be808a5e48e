//! The workload: what each client does in a loop, and the history it leaves.
//!
//! Each iteration: acquire the lock (retrying every `acquire_retry_ms` while it is busy) → read
//! the counter at the resource → work for `work_ms` (fixed or drawn from a range with the
//! client's seeded stream) → write the value read plus one, with the grant's fencing token →
//! release. Algorithms that keep their lock alive ([`crate::lock::AutoExtend`]) get a background
//! task that extends it while the work runs; when an extension fails the task raises the abort
//! signal, and the workload skips its write, like node-redlock's `signal.aborted`. The signal is
//! checked just before the write — the lesson's point is that a pause can still fall between that
//! check and the write.
//!
//! Every lock call and resource call is recorded as an operation (see [`crate::ops`]), so a
//! user-written [`LockClient`] is judged exactly like the built-ins.

use crate::lock::using::{keep_alive, AbortSignal};
use crate::lock::LockClient;
use crate::model::op::{names, AcquireInvoke, Grant, GrantRef, OpError, ReadOk, WriteInvoke};
use crate::model::WorkMs;
use crate::ops::{self, Recorder};
use lockstep_sim::{Node, Phase, ResourceClient, WriteOutcome};
use rand::Rng;
use serde_json::json;
use std::rc::Rc;
use std::time::Duration;

/// What one client does.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientPlan {
    /// True time at which the client starts, ms.
    pub start_ms: u64,
    /// Iterations to run (`None`: until `until_ms`).
    pub iterations: Option<u64>,
    /// No iteration starts after this true time, ms.
    pub until_ms: Option<u64>,
    /// How long the critical section's work takes, by the client's clock.
    pub work_ms: WorkMs,
    /// Delay between failed acquire attempts, by the client's clock.
    pub acquire_retry_ms: u64,
    /// Delay between iterations, by the client's clock.
    pub think_ms: u64,
    /// The lock's key.
    pub lock_key: String,
    /// The lock's TTL.
    pub ttl_ms: u64,
    /// The counter's key at the resource.
    pub resource_key: String,
}

fn sample_work_ms(node: &Node, work: WorkMs) -> u64 {
    match work {
        WorkMs::Fixed(ms) => ms,
        WorkMs::Range(min, max) => node.rng().random_range(min..=max.max(min)),
    }
}

fn until_passed(node: &Node, plan: &ClientPlan) -> bool {
    plan.until_ms
        .is_some_and(|until| node.true_time_us() >= until.saturating_mul(1_000))
}

/// Acquires with retries; `None` when `until_ms` passed first.
async fn acquire(node: &Node, rec: &Recorder, lock: &dyn LockClient, plan: &ClientPlan) -> Option<Grant> {
    loop {
        if until_passed(node, plan) {
            return None;
        }
        let id = rec.invoke(
            names::ACQUIRE,
            ops::to_data(&AcquireInvoke {
                key: plan.lock_key.clone(),
                ttl_ms: plan.ttl_ms,
            }),
        );
        match lock.acquire(&plan.lock_key, plan.ttl_ms).await {
            Ok(grant) => {
                rec.complete(id, names::ACQUIRE, Phase::Ok, ops::to_data(&grant));
                return Some(grant);
            }
            Err(e) => {
                rec.complete_error(id, names::ACQUIRE, &e);
                node.sleep_local_ms(plan.acquire_retry_ms.max(1)).await;
            }
        }
    }
}

/// One critical section under `grant`: read, work, write.
async fn critical_section(
    node: &Node,
    rec: &Recorder,
    resource: &ResourceClient,
    plan: &ClientPlan,
    grant: &Grant,
    signal: &AbortSignal,
) {
    let key = &plan.resource_key;
    let id = rec.invoke(names::READ, json!({ "key": key, "fencing_token": grant.fencing_token }));
    let current = match resource.read(key, grant.fencing_token).await {
        Ok((value, version)) => {
            rec.complete(id, names::READ, Phase::Ok, ops::to_data(&ReadOk { value, version }));
            value.unwrap_or(0)
        }
        Err(e) => {
            // Without the current value there is nothing safe to write.
            rec.complete_link_error(id, names::READ, &e);
            return;
        }
    };
    node.sleep_local_ms(sample_work_ms(node, plan.work_ms)).await;
    if signal.aborted() {
        return;
    }
    let write = WriteInvoke {
        key: key.clone(),
        value: current + 1,
        fencing_token: grant.fencing_token,
    };
    let id = rec.invoke(names::WRITE, ops::to_data(&write));
    match resource.write(key, write.value, write.fencing_token).await {
        Ok(WriteOutcome::Accepted { version }) => {
            rec.complete(id, names::WRITE, Phase::Ok, json!({ "version": version }));
        }
        Ok(WriteOutcome::Rejected { message }) => {
            rec.complete(id, names::WRITE, Phase::Fail, ops::to_data(&OpError { error: message }));
        }
        Err(e) => rec.complete_link_error(id, names::WRITE, &e),
    }
}

/// Runs one client's loop to the end of its plan — in several concurrent tasks when the lock
/// says so ([`LockClient::tasks`]): each task runs the whole loop, with the same lock object or
/// its own ([`LockClient::task_lock`]). With one task nothing is spawned.
pub async fn run_client(node: Node, lock: Rc<dyn LockClient>, resource: ResourceClient, plan: ClientPlan) {
    tokio::time::sleep(Duration::from_millis(plan.start_ms)).await;
    let rec = Recorder::new(&node);
    let tasks = lock.tasks().max(1);
    let mut others = Vec::new();
    for _ in 1..tasks {
        let task_lock = lock.task_lock().unwrap_or_else(|| lock.clone());
        others.push(node.spawn(client_loop(
            node.clone(),
            rec.clone(),
            task_lock,
            resource.clone(),
            plan.clone(),
        )));
    }
    client_loop(node, rec, lock, resource, plan).await;
    for task in others {
        let _ = task.await;
    }
}

/// One task's loop: acquire, critical section, release, think — to the end of the plan.
async fn client_loop(node: Node, rec: Recorder, lock: Rc<dyn LockClient>, resource: ResourceClient, plan: ClientPlan) {
    let mut done = 0u64;
    loop {
        let iterations_left = match plan.iterations {
            Some(n) => done < n,
            None => plan.until_ms.is_some(),
        };
        if !iterations_left || until_passed(&node, &plan) {
            return;
        }
        let Some(grant) = acquire(&node, &rec, lock.as_ref(), &plan).await else {
            return;
        };
        let signal = AbortSignal::new();
        let keeper = lock.auto_extend().map(|policy| {
            node.spawn(keep_alive(
                node.clone(),
                lock.clone(),
                policy,
                grant.clone(),
                plan.ttl_ms,
                signal.clone(),
                Some(rec.clone()),
            ))
        });
        critical_section(&node, &rec, &resource, &plan, &grant, &signal).await;
        if let Some(keeper) = keeper {
            keeper.abort();
        }
        let id = rec.invoke(names::RELEASE, ops::to_data(&GrantRef::from(&grant)));
        match lock.release(&grant).await {
            Ok(released) => rec.complete(id, names::RELEASE, Phase::Ok, json!({ "released": released })),
            Err(e) => rec.complete_error(id, names::RELEASE, &e),
        }
        done += 1;
        if plan.think_ms > 0 {
            node.sleep_local_ms(plan.think_ms).await;
        }
    }
}
