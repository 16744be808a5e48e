//! `using()`: hold a lock for the length of a routine, keeping it alive and telling the routine
//! when it is lost — node-redlock's `using(resources, duration, routine)`.
//!
//! While the routine runs, a task on the client node extends the grant as the lock's
//! [`AutoExtend`] policy says (a watchdog period, or shortly before the validity runs out). When
//! an extension fails, the [`AbortSignal`] is raised and extension stops; the routine should
//! check `signal.aborted()` before each step that needs the lock — and must not trust it across
//! a pause, which is the whole point of fencing.

use super::{AutoExtend, ExtendFailure, LockClient, LockEnv, LockError};
use crate::model::op::{names, Grant, GrantRef};
use crate::model::RenewalAfterRelease;
use crate::ops::{to_data, Recorder};
use lockstep_sim::{Node, Phase};
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

/// Raised when the lock is known to be lost (node-redlock's `signal.aborted`). It also carries
/// the validity of the latest renewal, for a routine that watches its own validity.
#[derive(Debug, Clone, Default)]
pub struct AbortSignal {
    aborted: Rc<Cell<bool>>,
    renewed_until_ms: Rc<Cell<Option<i64>>>,
    renewal_stopped: Rc<Cell<bool>>,
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

    /// Says that the holder is stopping the renewal (to release the lock): a renewal in flight
    /// when its task is dropped is then recorded as ended with an unknown outcome (`info`) — its
    /// request was sent and may still land — rather than left without a completion. Call it
    /// before dropping (aborting) the [`keep_alive`] task.
    pub fn stop_renewal(&self) {
        self.renewal_stopped.set(true);
    }

    /// Whether [`Self::stop_renewal`] was called.
    pub fn renewal_stopped(&self) -> bool {
        self.renewal_stopped.get()
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
/// armed at that moment. A lock may say otherwise ([`LockClient::renewal_after_release`]): a
/// renewal whose timer is due when the holder stops it — its callback already queued, as when
/// the timer and the end of the work fall in the same instant, or both passed during a pause —
/// still runs, after the release (its callback yields to the work that was ready with it): it
/// finds the key gone, and its failure is reported as a lost lock or dropped quietly.
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
    let mut current = grant;
    if after_release == RenewalAfterRelease::Cancelled {
        loop {
            node.sleep_local_ms(wait_ms(policy, &current)).await;
            match renew(&node, &lock, current, ttl_ms, &signal, recorder.as_ref(), false).await {
                Some(renewed) => current = renewed,
                None => return,
            }
        }
    }
    // The renewal armed now: what the stop finds when it drops this task.
    let armed = Rc::new(RefCell::new(None));
    let _stop = StopGuard {
        armed: armed.clone(),
        node: node.clone(),
        lock: lock.clone(),
        ttl_ms,
        signal: signal.clone(),
        recorder: recorder.clone(),
    };
    loop {
        let wait = wait_ms(policy, &current);
        *armed.borrow_mut() = Some((node.monotonic_ms().saturating_add_unsigned(wait), current.clone()));
        node.sleep_local_ms(wait).await;
        // The timer fired: its callback runs after the work that became ready in the same
        // instant (a release that stops the renewal now still finds it due).
        tokio::task::yield_now().await;
        *armed.borrow_mut() = None;
        match renew(&node, &lock, current, ttl_ms, &signal, recorder.as_ref(), false).await {
            Some(renewed) => current = renewed,
            None => return,
        }
    }
}

/// How long to wait before renewing `current` (at least 1 ms).
fn wait_ms(policy: AutoExtend, current: &Grant) -> u64 {
    let wait_ms = match policy {
        AutoExtend::Every { interval_ms } => interval_ms,
        AutoExtend::BeforeExpiry { threshold_ms } => current.validity_ms.saturating_sub(threshold_ms),
    };
    wait_ms.max(1)
}

/// Dropped with the keep-alive task of a lock whose armed renewal outlives the stop: a renewal
/// due by then (its monotonic deadline passed) runs in a task of its own, after the release.
struct StopGuard {
    armed: Rc<RefCell<Option<(i64, Grant)>>>,
    node: Node,
    lock: Rc<dyn LockClient>,
    ttl_ms: u64,
    signal: AbortSignal,
    recorder: Option<Recorder>,
}

impl Drop for StopGuard {
    fn drop(&mut self) {
        let Some((due_ms, grant)) = self.armed.borrow_mut().take() else {
            return;
        };
        if due_ms > self.node.monotonic_ms() {
            return; // Not due: stopping clears the timer.
        }
        let (node, lock, ttl_ms, signal, recorder) = (
            self.node.clone(),
            self.lock.clone(),
            self.ttl_ms,
            self.signal.clone(),
            self.recorder.clone(),
        );
        drop(self.node.spawn(async move {
            renew(&node, &lock, grant, ttl_ms, &signal, recorder.as_ref(), true).await;
        }));
    }
}

/// One renewal of `current`, now: extend, record. The grant to renew next, or `None` when the
/// renewal stops. `stopped`: the holder stopped the renewal before it ran (it runs after the
/// release).
async fn renew(
    node: &Node,
    lock: &Rc<dyn LockClient>,
    current: Grant,
    ttl_ms: u64,
    signal: &AbortSignal,
    recorder: Option<&Recorder>,
    stopped: bool,
) -> Option<Grant> {
    let id = recorder.map(|rec| {
        let mut data = json!({ "key": current.key, "value": current.value, "fencing_token": current.fencing_token, "ttl_ms": ttl_ms });
        let sent = lock.value_sent(&current);
        if sent != current.value {
            data["value_sent"] = json!(sent);
        }
        rec.invoke(names::EXTEND, data)
    });
    // Dropped while the extension is in flight (the holder stopped the renewal to release):
    // its request was sent and may still land, so it ends as `info`, not without a completion.
    let in_flight = InFlight {
        done: Cell::new(false),
        recorder,
        id,
        signal,
    };
    let result = lock.extend(&current, ttl_ms).await;
    in_flight.done.set(true);
    if let (Some(rec), Some(id)) = (recorder, id) {
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
        // The renewal ran after the holder released: the lock knows it was released.
        Err(_) if stopped && lock.renewal_after_release() == RenewalAfterRelease::RunsQuietly => None,
        Err(e) if lock.on_extend_failure() == ExtendFailure::KeepWorking => {
            // The library ignores the failure: the work goes on, and nothing renews any more.
            let _ = e;
            None
        }
        // A renewal refused (the key is not ours any more) leaves nothing to renew: the schedule
        // ends, quietly (Redisson's watchdog drops a lock whose holder's field is gone).
        Err(LockError::Lost(_)) if lock.on_extend_failure() == ExtendFailure::KeepSchedule => None,
        // After an error the library says nothing and renews again on schedule, with the last
        // confirmed grant.
        Err(_) if lock.on_extend_failure() == ExtendFailure::KeepSchedule => (!stopped).then_some(current),
        Err(e) => {
            signal.abort();
            if let Some(rec) = recorder {
                let abort_id = rec.invoke(names::ABORT, to_data(&GrantRef::from(&current)));
                rec.complete(abort_id, names::ABORT, Phase::Info, json!({ "reason": e.to_string() }));
            }
            None
        }
    }
}

/// An extension in flight ([`renew`]): records it as ended with an unknown outcome when its
/// task is dropped before the reply, once the holder stopped the renewal
/// ([`AbortSignal::stop_renewal`]; a run that ends with a renewal in flight records nothing).
struct InFlight<'a> {
    done: Cell<bool>,
    recorder: Option<&'a Recorder>,
    id: Option<u64>,
    signal: &'a AbortSignal,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.done.get() || !self.signal.renewal_stopped() {
            return;
        }
        if let (Some(rec), Some(id)) = (self.recorder, self.id) {
            rec.complete(
                id,
                names::EXTEND,
                Phase::Info,
                json!({ "error": "the holder stopped the renewal while it was in flight: its outcome is unknown" }),
            );
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
    let output = routine(grant.clone(), signal.clone()).await;
    signal.stop_renewal();
    keeper.abort();
    // Best effort, as node-redlock: the lock may already be gone.
    let _ = lock.release(&grant).await;
    Ok(output)
}
