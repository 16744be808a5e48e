//! `using()`: hold a lock for the length of a routine, keeping it alive and telling the routine
//! when it is lost — node-redlock's `using(resources, duration, routine)`.
//!
//! While the routine runs, a task on the client node extends the grant as the lock's
//! [`AutoExtend`] policy says (a watchdog period, or shortly before the validity runs out). When
//! an extension fails, the [`AbortSignal`] is raised and extension stops; the routine should
//! check `signal.aborted()` before each step that needs the lock — and must not trust it across
//! a pause, which is the whole point of fencing.

use super::{AutoExtend, ExtendFailure, LockClient, LockEnv, LockError, RenewalAfterRelease};
use crate::model::op::{names, Grant, GrantRef};
use crate::ops::{to_data, Recorder};
use lockstep_sim::{Node, Phase};
use serde_json::json;
use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;

/// Raised when the lock is known to be lost (node-redlock's `signal.aborted`). It also carries
/// the validity of the latest renewal, for a routine that watches its own validity.
#[derive(Debug, Clone, Default)]
pub struct AbortSignal {
    aborted: Rc<Cell<bool>>,
    renewed_until_ms: Rc<Cell<Option<i64>>>,
}

impl AbortSignal {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the lock was lost.
    pub fn aborted(&self) -> bool {
        self.aborted.get()
    }

    /// Raises the signal.
    pub fn abort(&self) {
        self.aborted.set(true);
    }

    /// Notes a renewal: the grant is now valid until this monotonic reading of the client, ms.
    pub fn renewed(&self, until_monotonic_ms: i64) {
        self.renewed_until_ms.set(Some(until_monotonic_ms));
    }

    /// Until when (the client's monotonic clock, ms) the latest renewal made the grant valid;
    /// `None` before any renewal.
    pub(crate) fn renewed_until_monotonic_ms(&self) -> Option<i64> {
        self.renewed_until_ms.get()
    }
}

/// Keeps `grant` alive under `policy` until the task is dropped or an extension fails (then
/// raises `signal`). With a recorder, every extension and the abort are recorded as operations.
/// `node` is the client node (it times the waits); the workload passes its own, [`using`] the
/// one inside its [`LockEnv`].
///
/// Dropping the task (the holder stops the renewal to release the lock) cancels the renewal
/// armed at that moment, unless the lock says otherwise
/// ([`LockClient::renewal_after_release`]): then each renewal runs in a task of its own, which
/// the stop does not reach — it is sent after the release, finds the key gone, and its failure
/// is reported as a lost lock or dropped quietly.
pub async fn keep_alive(
    node: Node,
    lock: Rc<dyn LockClient>,
    policy: AutoExtend,
    grant: Grant,
    ttl_ms: u64,
    signal: AbortSignal,
    recorder: Option<Recorder>,
) {
    let after_release = lock.renewal_after_release();
    // Set when this task is dropped: the holder stopped the renewal.
    let stopped = Rc::new(Cell::new(false));
    let _stop = StopGuard(stopped.clone());
    let mut current = grant;
    loop {
        let turn = renewal_turn(
            node.clone(),
            lock.clone(),
            policy,
            current,
            ttl_ms,
            signal.clone(),
            recorder.clone(),
            stopped.clone(),
        );
        let next = if after_release == RenewalAfterRelease::Cancelled {
            turn.await
        } else {
            // Armed in a task of its own: dropping this one does not cancel it.
            node.spawn(turn).await.ok().flatten()
        };
        match next {
            Some(renewed) => current = renewed,
            None => return,
        }
    }
}

/// Marks the renewal stopped when the keep-alive task is dropped.
struct StopGuard(Rc<Cell<bool>>);

impl Drop for StopGuard {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// One renewal of `current`: wait as `policy` says, extend, record. The grant to renew next, or
/// `None` when the renewal stops.
#[allow(clippy::too_many_arguments)]
async fn renewal_turn(
    node: Node,
    lock: Rc<dyn LockClient>,
    policy: AutoExtend,
    current: Grant,
    ttl_ms: u64,
    signal: AbortSignal,
    recorder: Option<Recorder>,
    stopped: Rc<Cell<bool>>,
) -> Option<Grant> {
    let wait_ms = match policy {
        AutoExtend::Every { interval_ms } => interval_ms,
        AutoExtend::BeforeExpiry { threshold_ms } => current.validity_ms.saturating_sub(threshold_ms),
    };
    node.sleep_local_ms(wait_ms.max(1)).await;
    let id = recorder.as_ref().map(|rec| {
        let mut data = json!({ "key": current.key, "value": current.value, "fencing_token": current.fencing_token, "ttl_ms": ttl_ms });
        let sent = lock.value_sent(&current);
        if sent != current.value {
            data["value_sent"] = json!(sent);
        }
        rec.invoke(names::EXTEND, data)
    });
    let result = lock.extend(&current, ttl_ms).await;
    if let (Some(rec), Some(id)) = (&recorder, id) {
        match &result {
            Ok(renewed) => rec.complete(id, names::EXTEND, Phase::Ok, to_data(renewed)),
            Err(e) => rec.complete_error(id, names::EXTEND, e),
        }
    }
    match result {
        Ok(renewed) => {
            let from_ms = renewed.validity_from_ms.unwrap_or_else(|| node.monotonic_ms());
            signal.renewed(from_ms.saturating_add_unsigned(renewed.validity_ms));
            Some(renewed)
        }
        // A renewal that ran after the holder stopped it: the lock knows it released the key.
        Err(_) if stopped.get() && lock.renewal_after_release() == RenewalAfterRelease::RunsQuietly => None,
        Err(e) if lock.on_extend_failure() == ExtendFailure::KeepWorking => {
            // The library ignores the failure: the work goes on, and nothing renews any more.
            let _ = e;
            None
        }
        // The library says nothing and renews again on schedule, with the last confirmed grant.
        Err(_) if lock.on_extend_failure() == ExtendFailure::KeepSchedule && !stopped.get() => Some(current),
        Err(_) if lock.on_extend_failure() == ExtendFailure::KeepSchedule => None,
        Err(e) => {
            signal.abort();
            if let Some(rec) = &recorder {
                let abort_id = rec.invoke(names::ABORT, to_data(&GrantRef::from(&current)));
                rec.complete(abort_id, names::ABORT, Phase::Info, json!({ "reason": e.to_string() }));
            }
            None
        }
    }
}

/// Acquires `key` for `ttl_ms`, runs `routine(grant, signal)` while keeping the lock alive
/// (by the lock's own policy, or by extending `threshold_ms` before expiry when it has none),
/// then releases it. Returns the routine's output; the release's outcome is not waited on for
/// errors (a lost lock is already reported through the signal).
pub async fn using<T, F, Fut>(
    lock: Rc<dyn LockClient>,
    env: &LockEnv,
    key: &str,
    ttl_ms: u64,
    threshold_ms: u64,
    routine: F,
) -> Result<T, LockError>
where
    F: FnOnce(Grant, AbortSignal) -> Fut,
    Fut: Future<Output = T>,
{
    let grant = lock.acquire(key, ttl_ms).await?;
    let signal = AbortSignal::new();
    let policy = lock.auto_extend().unwrap_or(AutoExtend::BeforeExpiry { threshold_ms });
    let keeper = env.spawn(keep_alive(
        env.node().clone(),
        lock.clone(),
        policy,
        grant.clone(),
        ttl_ms,
        signal.clone(),
        None,
    ));
    let output = routine(grant.clone(), signal).await;
    keeper.abort();
    // Best effort, as node-redlock: the lock may already be gone.
    let _ = lock.release(&grant).await;
    Ok(output)
}
