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
//!
//! Settings that use the grant (each off by default, so a default plan is the loop above):
//! - [`WorkMode::UntilValidity`]: the work lasts until the grant's validity runs out, less a
//!   margin, by the client's monotonic clock (counted from where the lock computed the validity,
//!   or from the acquire's return when the lock did not say; a renewal before the work starts
//!   counts, one during it does not lengthen it);
//! - `refuse_write_after_validity`: just before each write the holder compares its monotonic
//!   clock with the validity (the latest renewal's, if any) and, once it has run out, refuses the
//!   write itself — recorded as a `write` that fails with `HOLDER_REFUSAL` — and writes no
//!   more this turn. Like the abort signal, a pause between the check and the write defeats it;
//! - `reads_per_turn` reads, then the work, then `writes_per_turn` writes of the value read plus
//!   1, plus 2, … back to back, each with the grant's fencing token;
//! - several concurrent tasks per client ([`ClientPlan::tasks`], or the lock's own
//!   [`LockClient::tasks`]), each running the whole loop with the client's one lock object or
//!   its own; each task's invokes name it (`"task": n`), so the history attributes holds to
//!   tasks.

use crate::lock::using::{keep_alive, AbortSignal};
use crate::lock::{LockClient, LockError};
use crate::model::op::{names, AcquireInvoke, Grant, GrantRef, OpError, ReadOk, WriteInvoke, HOLDER_REFUSAL};
use crate::model::{TasksSpec, WorkMode, WorkMs};
use crate::ops::{self, Recorder};
use lockstep_sim::{Node, Phase, ResourceClient, WriteOutcome};
use rand::Rng;
use serde_json::json;
use std::rc::Rc;

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
    /// How long the work lasts: `work_ms`, or until the validity runs out less a margin.
    pub work: WorkMode,
    /// Refuse a write once the holder's own validity has run out.
    pub refuse_write_after_validity: bool,
    /// Reads per turn (≥ 1).
    pub reads_per_turn: u32,
    /// Writes per turn.
    pub writes_per_turn: u32,
    /// Several tasks set by the workload (`None`: as the lock says).
    pub tasks: Option<TasksSpec>,
}

impl ClientPlan {
    /// What `client` of `scenario` does: its own start, iterations and work over the workload's.
    /// The one reading of a client's plan, for simulated and live runs alike.
    pub fn of(scenario: &crate::model::Scenario, client: &crate::model::ClientSpec) -> ClientPlan {
        ClientPlan {
            start_ms: client.start_ms,
            iterations: client.iterations.or(scenario.workload.iterations),
            until_ms: scenario.workload.until_ms,
            work_ms: client.work_ms.unwrap_or(scenario.workload.work_ms),
            acquire_retry_ms: scenario.workload.acquire_retry_ms,
            think_ms: scenario.workload.think_ms,
            lock_key: scenario.lock.key.clone(),
            ttl_ms: scenario.lock.ttl_ms,
            resource_key: scenario.workload.key.clone(),
            work: scenario.workload.work,
            refuse_write_after_validity: scenario.workload.refuse_write_after_validity,
            reads_per_turn: scenario.workload.reads_per_turn,
            writes_per_turn: scenario.workload.writes_per_turn,
            tasks: client.effective_tasks(&scenario.workload),
        }
    }
}

/// Makes another lock object for the same client (a task that does not share the client's).
pub(crate) type LockMaker = Rc<dyn Fn() -> Rc<dyn LockClient>>;

/// The grant a task holds, and until when (its monotonic clock, ms) it believes it valid.
struct Held {
    grant: Grant,
    /// Where the grant's validity ends, by the client's monotonic clock.
    valid_until_ms: i64,
}

impl Held {
    /// The end of the validity: the latest renewal's, else the grant's.
    fn valid_until_ms(&self, signal: &AbortSignal) -> i64 {
        signal.renewed_until_monotonic_ms().unwrap_or(self.valid_until_ms)
    }
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

/// One critical section under `held`: read (`reads_per_turn` times), work, write
/// (`writes_per_turn` times).
async fn critical_section(
    node: &Node,
    rec: &Recorder,
    resource: &ResourceClient,
    plan: &ClientPlan,
    held: &Held,
    signal: &AbortSignal,
) {
    let key = &plan.resource_key;
    let grant = &held.grant;
    let mut current = 0;
    for _ in 0..plan.reads_per_turn.max(1) {
        let id = rec.invoke(names::READ, json!({ "key": key, "fencing_token": grant.fencing_token }));
        current = match resource.read(key, grant.fencing_token).await {
            Ok((value, version)) => {
                rec.complete(id, names::READ, Phase::Ok, ops::to_data(&ReadOk { value, version }));
                value.unwrap_or(0)
            }
            Err(e) => {
                // Without the current value there is nothing safe to write.
                rec.complete_error(id, names::READ, &LockError::from(e));
                return;
            }
        };
    }
    match plan.work {
        WorkMode::Fixed => node.sleep_local_ms(sample_work_ms(node, plan.work_ms)).await,
        WorkMode::UntilValidity { margin_ms } => {
            let stop_ms = held.valid_until_ms(signal).saturating_sub_unsigned(margin_ms);
            let left_ms = stop_ms.saturating_sub(node.monotonic_ms());
            if left_ms > 0 {
                node.sleep_local_ms(left_ms as u64).await;
            }
        }
    }
    for k in 1..=i64::from(plan.writes_per_turn) {
        if signal.aborted() {
            return;
        }
        let write = WriteInvoke {
            key: key.clone(),
            value: current + k,
            fencing_token: grant.fencing_token,
        };
        if plan.refuse_write_after_validity {
            let over_ms = node.monotonic_ms().saturating_sub(held.valid_until_ms(signal));
            if over_ms >= 0 {
                let id = rec.invoke(names::WRITE, ops::to_data(&write));
                let error = format!("{HOLDER_REFUSAL}: its validity ran out {over_ms} ms ago by its own clock");
                rec.complete(id, names::WRITE, Phase::Fail, ops::to_data(&OpError { error }));
                return;
            }
        }
        write_once(rec, resource, &write).await;
    }
}

/// Sends one write and records it.
async fn write_once(rec: &Recorder, resource: &ResourceClient, write: &WriteInvoke) {
    let key = &write.key;
    let id = rec.invoke(names::WRITE, ops::to_data(write));
    match resource.write(key, write.value, write.fencing_token).await {
        Ok(WriteOutcome::Accepted { version }) => {
            rec.complete(id, names::WRITE, Phase::Ok, json!({ "version": version }));
        }
        Ok(WriteOutcome::Rejected { message }) => {
            rec.complete(id, names::WRITE, Phase::Fail, ops::to_data(&OpError { error: message }));
        }
        Err(e) => rec.complete_error(id, names::WRITE, &LockError::from(e)),
    }
}

/// Runs one client's loop to the end of its plan — in several concurrent tasks when the lock
/// says so ([`LockClient::tasks`]): each task runs the whole loop, with the same lock object or
/// its own ([`LockClient::task_lock`]). With one task nothing is spawned.
pub async fn run_client(node: Node, lock: Rc<dyn LockClient>, resource: ResourceClient, plan: ClientPlan) {
    run_client_with(node, lock, resource, plan, None).await
}

/// [`run_client`], where the plan may set the tasks itself ([`ClientPlan::tasks`]): then a task
/// that does not share the client's lock object gets one from `make_lock` (from the lock's own
/// [`LockClient::task_lock`] without one, else the shared object). With several tasks, task 1
/// is the client's own loop and each task's invokes name it.
pub async fn run_client_with(
    node: Node,
    lock: Rc<dyn LockClient>,
    resource: ResourceClient,
    plan: ClientPlan,
    make_lock: Option<LockMaker>,
) {
    node.sleep_true_ms(plan.start_ms).await;
    let (tasks, share) = match plan.tasks {
        Some(spec) => (spec.tasks.max(1), Some(spec.share_lock_object)),
        None => (lock.tasks().max(1), None),
    };
    let recorder = |task: u32| {
        if tasks > 1 {
            Recorder::for_task(&node, task)
        } else {
            Recorder::new(&node)
        }
    };
    let rec = recorder(1);
    let mut others = Vec::new();
    for task in 2..=tasks {
        let task_lock = match (share, &make_lock) {
            (Some(true), _) => lock.clone(),
            (Some(false), Some(make)) => make(),
            _ => lock.task_lock().unwrap_or_else(|| lock.clone()),
        };
        others.push(node.spawn(client_loop(
            node.clone(),
            recorder(task),
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
        let from_ms = grant.validity_from_ms.unwrap_or_else(|| node.monotonic_ms());
        let held = Held {
            valid_until_ms: from_ms.saturating_add_unsigned(grant.validity_ms),
            grant,
        };
        let grant = &held.grant;
        let signal = AbortSignal::new();
        let keeper = lock.auto_extend_for(grant).map(|policy| {
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
        critical_section(&node, &rec, &resource, &plan, &held, &signal).await;
        if let Some(keeper) = keeper {
            // A renewal in flight now ends as `info` (its request may still land).
            signal.stop_renewal();
            keeper.abort();
        }
        let sent = GrantRef::sent_with(grant, lock.value_sent(grant));
        let id = rec.invoke(names::RELEASE, ops::to_data(&sent));
        match lock.release(grant).await {
            Ok(released) => rec.complete(id, names::RELEASE, Phase::Ok, json!({ "released": released })),
            Err(e) => rec.complete_error(id, names::RELEASE, &e),
        }
        done += 1;
        if plan.think_ms > 0 {
            node.sleep_local_ms(plan.think_ms).await;
        }
    }
}
