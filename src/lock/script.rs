//! `script`: a lock algorithm described in the scenario file ([`ScriptSpec`]).
//!
//! One acquisition attempt: pick the value (fresh random, or the client's own name), read the
//! client's clock, run the acquire operation on each of the first `masters` masters at once,
//! count the successes, and compute the validity (none: the whole TTL; or
//! `ttl − elapsed − drift`, signed or wrapping). The lock is granted with at least `quorum`
//! successes and, when `validity_recheck` is on, a positive validity. Otherwise the lock is
//! released on every master where the acquisition took or may have taken effect
//! (`unlock_on_failure`; a master that refused holds someone else's lock) and, after `retry_delay_ms` plus a random
//! jitter below `retry_jitter_ms`, tried again up to `retry_count` times.
//!
//! An operation is a list of steps run in order on one master (a step is a command template
//! or an EVAL of a Lua script; each must see its success reply), retried as a whole after an
//! unknown outcome when `retries` says so. Extension needs a quorum of successes; release
//! reports whether any master released. With `value_storage = "lock-object"` extension and
//! release use the value of the object's latest acquisition rather than the grant's.
//!
//! The elapsed time of a retried acquisition counts from the attempt that reached the quorum,
//! or (`validity_from = "first-attempt"`) from the call's first attempt; the acquisition's and
//! the extension's re-checks are set apart (`acquire_recheck`, `extend_recheck`). `{now_ms}`
//! stands for the client's wall clock as each step leaves, so a script can judge expiry on it.
//!
//! Renewal and what a failed renewal does are answered to the workload through
//! [`LockClient::auto_extend`] (per grant: [`LockClient::auto_extend_for`], which with
//! `renew_grants = "first-attempt"` answers none for a grant a retry took),
//! [`LockClient::on_extend_failure`] and
//! [`LockClient::renewal_after_release`]; several tasks per client through
//! [`LockClient::tasks`] and [`LockClient::task_lock`].
//!
//! Between attempts the lock sleeps, or (`wait`) blocks in `BLPOP` on a list of the first master
//! over a connection of its own, or listens on a channel it subscribed to at the first failed
//! attempt: a push or a message from the releasing client ends the wait early (python-redis-lock's
//! signal list, Redisson's unlock notification).
//!
//! Not modelled: scripts cached with EVALSHA (every call carries the whole source, so a delayed
//! request never meets a `NOSCRIPT`), pipelining several steps in one round trip.

use super::{random_value, AutoExtend, ExtendFailure, LockClient, LockEnv, LockError};
use crate::model::{
    Arithmetic, Grant, OnRenewFailure, RenewGrants, Renewal, RenewalAfterRelease, ScriptAction, ScriptOp, ScriptSpec,
    Success, ValidityFrom, ValidityPolicy, ValuePolicy, ValueStorage, Wait,
};
use async_trait::async_trait;
use futures_util::future::join_all;
use futures_util::StreamExt;
use lockstep_sim::{LinkTimeouts, RedisLink, REDIS_PORT};
use rand::Rng;
use redis::aio::PubSub;
use redis::Value;
use std::cell::RefCell;
use std::rc::Rc;

/// An acquire call's subscription for `wait = "subscribe"`.
enum Subscription {
    /// Not tried yet (it is made at the call's first wait).
    NotYet,
    /// Subscribed until the call returns.
    Open(PubSub),
    /// The subscribe failed: the rest of the call sleeps between attempts.
    Failed,
}

/// The script lock of one client (or one task, when tasks do not share lock objects).
#[derive(Debug)]
pub(crate) struct ScriptLock {
    env: LockEnv,
    spec: Rc<ScriptSpec>,
    /// The value of the latest acquisition (used with `value_storage = "lock-object"`).
    stored_value: RefCell<Option<String>>,
    /// The connection `wait = "blpop"` blocks on (its own, so a blocked `BLPOP` holds up no
    /// other request), made at the first wait.
    wait_link: RefCell<Option<RedisLink>>,
    /// The values of live grants taken by a retry of the acquire call (not the first attempt):
    /// with `renew_grants = "first-attempt"` their renewal is never armed. Removed at release.
    retried_values: RefCell<std::collections::BTreeSet<String>>,
}

/// What one operation on one master did.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Every step saw its success reply; the fencing token a `token` step returned, if any.
    Success(Option<u64>),
    /// A step saw another reply (or a server error).
    Refused(String),
    /// No reply: the operation may have taken effect.
    Unknown(String),
    /// The operation certainly did not run (no connection).
    Failed(String),
}

/// The values placeholders stand for.
#[derive(Clone, Copy)]
struct Vars<'a> {
    key: &'a str,
    value: &'a str,
    ttl_ms: u64,
    token: Option<u64>,
    client: &'a str,
    /// The client's wall clock when the step is sent (set per step by [`ScriptLock::run_once`]).
    now_ms: i64,
}

/// Replaces the placeholders of `template` (checked at load time; an unknown one is kept as
/// written).
fn expand(template: &str, vars: &Vars<'_>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if let Some(after) = tail.strip_prefix('}') {
            out.push('}');
            rest = after;
            continue;
        }
        let Some(end) = tail.find('}') else {
            out.push_str(tail);
            rest = "";
            break;
        };
        let name = &tail[..=end];
        match name {
            "{key}" => out.push_str(vars.key),
            "{value}" => out.push_str(vars.value),
            "{ttl_ms}" => out.push_str(&vars.ttl_ms.to_string()),
            "{token}" => {
                if let Some(token) = vars.token {
                    out.push_str(&token.to_string());
                }
            }
            "{client}" => out.push_str(vars.client),
            "{now_ms}" => out.push_str(&vars.now_ms.to_string()),
            other => out.push_str(other),
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Whether `reply` is what `success` asks for.
fn is_success(success: Success, reply: &Value, value: &str) -> bool {
    match success {
        Success::Ok => matches!(reply, Value::Okay) || matches!(reply, Value::SimpleString(s) if s == "OK"),
        Success::NonNil => !matches!(reply, Value::Nil),
        Success::Nil => matches!(reply, Value::Nil),
        Success::One => matches!(reply, Value::Int(1)),
        Success::Positive => matches!(reply, Value::Int(n) if *n > 0),
        Success::Any => true,
        Success::Value => match reply {
            Value::BulkString(bytes) => bytes.as_slice() == value.as_bytes(),
            Value::SimpleString(s) => s == value,
            _ => false,
        },
        Success::Token => token_of(reply).is_some(),
    }
}

/// The fencing token a `token` step's reply carries: an integer above 0.
fn token_of(reply: &Value) -> Option<u64> {
    match reply {
        Value::Int(n) if *n > 0 => Some(*n as u64),
        _ => None,
    }
}

/// Whether a script's error reply says it was stopped by one of the simulated server's own bounds
/// (its Lua memory, its instruction budget, a real-time server's wall-clock guard:
/// `lockstep-redis/src/lua.rs`), not by the script's logic.
fn runs_into_a_server_bound(message: &str) -> bool {
    message.contains("not enough memory")
        || message.contains("exceeded instruction budget")
        || message.contains("Script killed: it ran past the wall-clock guard")
}

/// The bytes `reply` carries (its strings, and a few bytes per element), without copying it.
fn reply_bytes(reply: &Value) -> u64 {
    match reply {
        Value::BulkString(bytes) => bytes.len() as u64,
        Value::SimpleString(s) => s.len() as u64,
        Value::Array(items) | Value::Set(items) | Value::Push { data: items, .. } => {
            items.iter().fold(8, |sum, item| sum.saturating_add(reply_bytes(item)))
        }
        Value::Map(pairs) => pairs.iter().fold(8, |sum, (k, v)| {
            sum.saturating_add(reply_bytes(k)).saturating_add(reply_bytes(v))
        }),
        Value::VerbatimString { text, .. } => text.len() as u64,
        Value::Attribute { data, .. } => reply_bytes(data),
        Value::ServerError(e) => e.details().map_or(0, |d| d.len() as u64),
        _ => 8,
    }
}

fn describe(reply: &Value) -> String {
    match reply {
        Value::Nil => "nil".into(),
        Value::Int(n) => n.to_string(),
        Value::Okay => "OK".into(),
        Value::SimpleString(s) => s.clone(),
        Value::BulkString(bytes) => format!("{:?}", String::from_utf8_lossy(bytes)),
        other => format!("{other:?}"),
    }
}

impl ScriptLock {
    /// A script lock for the client of `env`, as `spec` describes it.
    pub fn new(env: LockEnv, spec: Rc<ScriptSpec>) -> Self {
        ScriptLock {
            env,
            spec,
            stored_value: RefCell::new(None),
            wait_link: RefCell::new(None),
            retried_values: RefCell::new(Default::default()),
        }
    }

    /// Waits up to `wait_ms` before the next attempt, as `wait` says. `subscription` is the
    /// acquire call's subscription (`wait = "subscribe"`), made at the first wait; that wait
    /// returns at once, so the next attempt runs right after subscribing.
    async fn wait_between(&self, vars: &Vars<'_>, wait_ms: u64, subscription: &mut Subscription) {
        match &self.spec.wait {
            Wait::Sleep => self.env.sleep_local_ms(wait_ms).await,
            Wait::Blpop { list } => self.blpop(&expand(list, vars), wait_ms).await,
            Wait::Subscribe { channel } => match subscription {
                Subscription::Open(pubsub) => {
                    // A message, or the end of the wait, whichever comes first; the messages
                    // that arrived during the attempt count too (they are queued).
                    let start_ms = self.env.monotonic_ms();
                    let waited = self.env.timeout_local_ms(wait_ms, pubsub.on_message().next()).await;
                    if matches!(waited, Ok(None)) {
                        // The stream ended: the subscription's connection closed (its master
                        // died, a reset). From now on it would end every wait at once and the
                        // call would retry without time passing, forever with `retry_count =
                        // -1`; so this wait is slept out and the rest of the call sleeps, as
                        // after a failed subscribe.
                        let waited_ms = (self.env.monotonic_ms() - start_ms).max(0) as u64;
                        self.env.sleep_local_ms(wait_ms.saturating_sub(waited_ms)).await;
                        *subscription = Subscription::Failed;
                    }
                }
                Subscription::NotYet => {
                    *subscription = match self.subscribe(&expand(channel, vars)).await {
                        Some(pubsub) => Subscription::Open(pubsub),
                        None => {
                            self.env.sleep_local_ms(wait_ms).await;
                            Subscription::Failed
                        }
                    };
                }
                // One failed subscribe per acquire call: the rest of the call sleeps (each
                // connect attempt costs a port, and a cut-off client would otherwise try one
                // per retry with no backoff).
                Subscription::Failed => self.env.sleep_local_ms(wait_ms).await,
            },
        }
    }

    /// `BLPOP list seconds` on the first master over the wait link; sleeps out the rest of the
    /// wait when the link fails at once (no connection, an error reply).
    async fn blpop(&self, list: &str, wait_ms: u64) {
        if wait_ms == 0 {
            return; // BLPOP's 0 would block forever.
        }
        let Some(first) = self.masters().first() else {
            return self.env.sleep_local_ms(wait_ms).await;
        };
        let link = self
            .wait_link
            .borrow_mut()
            .get_or_insert_with(|| RedisLink::new(self.env.node(), first.host(), REDIS_PORT, first.timeouts()))
            .clone();
        let base = first.timeouts();
        link.set_timeouts(LinkTimeouts {
            request_timeout_ms: base.request_timeout_ms.saturating_add(wait_ms),
            ..base
        });
        let start_ms = self.env.monotonic_ms();
        let seconds = format!("{}.{:03}", wait_ms / 1000, wait_ms % 1000);
        match link.query::<Value>(redis::cmd("BLPOP").arg(list).arg(seconds)).await {
            Err(e) if !e.outcome_unknown() => {
                let waited_ms = (self.env.monotonic_ms() - start_ms).max(0) as u64;
                self.env.sleep_local_ms(wait_ms.saturating_sub(waited_ms)).await;
            }
            _ => {}
        }
    }

    /// A connection to the first master subscribed to `channel`, or `None` when it cannot be
    /// made within the link's connect and request timeouts. Its reader task is spawned by
    /// redis-rs on the node's runtime (not gated by pauses: messages queue while the node is
    /// paused, which is what a socket buffer does).
    async fn subscribe(&self, channel: &str) -> Option<PubSub> {
        let first = self.masters().first()?;
        let target = first.target();
        let timeouts = first.timeouts();
        let connect = async {
            let stream = self.env.node().connect(target.as_str(), REDIS_PORT).await.ok()?;
            static INFO: std::sync::OnceLock<redis::RedisConnectionInfo> = std::sync::OnceLock::new();
            let info = INFO.get_or_init(redis::RedisConnectionInfo::default);
            let mut pubsub = PubSub::new(info, stream).await.ok()?;
            pubsub.subscribe(channel).await.ok()?;
            Some(pubsub)
        };
        self.env
            .timeout_local_ms(
                timeouts.connect_timeout_ms.saturating_add(timeouts.request_timeout_ms),
                connect,
            )
            .await
            .ok()
            .flatten()
    }

    /// The masters the lock uses.
    fn masters(&self) -> &[RedisLink] {
        let all = self.env.masters();
        &all[..self.spec.masters.min(all.len())]
    }

    fn now_ms(&self) -> i64 {
        self.env.now_ms(self.spec.clock)
    }

    /// The validity after `elapsed_ms`, and whether it counts as positive.
    /// When the validity it reports was computed — `None` for a lock that computes none
    /// (`validity = "none"`: it hands the holder the whole TTL and claims nothing about the
    /// masters' lease, so the lease-validity checker has nothing to judge).
    fn claimed_from(&self, computed_at_ms: i64) -> Option<i64> {
        (self.spec.validity != ValidityPolicy::None).then_some(computed_at_ms)
    }

    fn validity(&self, ttl_ms: u64, elapsed_ms: i64) -> (u64, bool) {
        match self.spec.validity {
            ValidityPolicy::None => (ttl_ms, true),
            ValidityPolicy::TtlMinusDrift => {
                let drift_ms = (ttl_ms as f64 * self.spec.drift_factor).floor() as i64 + 2;
                match self.spec.validity_arithmetic {
                    Arithmetic::Signed => {
                        let validity = (ttl_ms as i64).saturating_sub(elapsed_ms).saturating_sub(drift_ms);
                        (validity.max(0) as u64, validity > 0)
                    }
                    Arithmetic::Wrapping => {
                        let validity = ttl_ms.wrapping_sub(elapsed_ms as u64).wrapping_sub(drift_ms as u64);
                        (validity, validity > 0)
                    }
                }
            }
        }
    }

    /// The value extension and release use for `grant`.
    fn value_for(&self, grant: &Grant) -> String {
        match self.spec.value_storage {
            ValueStorage::Grant => grant.value.clone(),
            ValueStorage::LockObject => self
                .stored_value
                .borrow()
                .clone()
                .unwrap_or_else(|| grant.value.clone()),
        }
    }

    /// Runs `op` once on `link` from `node`: its steps in order. The replies' bytes count
    /// against the node's bound for the run ([`lockstep_sim::Node::carry_reply_bytes`]), and a
    /// script stopped by the simulated server's memory or instruction budget stops the lock
    /// ([`lockstep_sim::Node::stop_lock`]): each attempt of such a script would cost as much
    /// again. A stopped lock's steps fail without being sent.
    async fn run_once(node: &lockstep_sim::Node, link: &RedisLink, op: &ScriptOp, vars: &Vars<'_>) -> Outcome {
        let mut token = None;
        for (index, step) in op.steps.iter().enumerate() {
            // `{now_ms}`: the client's own wall clock as the step leaves (reading a clock draws
            // nothing from the run's random streams).
            let vars = &Vars {
                now_ms: node.wall_ms(),
                ..*vars
            };
            if let Err(e) = node.carry_reply_bytes(0) {
                return Outcome::Failed(format!("step {} on {}: {e}", index + 1, link.host()));
            }
            let mut cmd;
            match &step.action {
                ScriptAction::Command(words) => {
                    let mut words = words.iter().map(|w| expand(w, vars));
                    cmd = redis::cmd(&words.next().unwrap_or_default());
                    for word in words {
                        cmd.arg(word);
                    }
                }
                ScriptAction::Lua { source, keys, args, .. } => {
                    cmd = redis::cmd("EVAL");
                    cmd.arg(source.as_str()).arg(keys.len());
                    for key in keys {
                        cmd.arg(expand(key, vars));
                    }
                    for arg in args {
                        cmd.arg(expand(arg, vars));
                    }
                }
            }
            let result = link.query::<Value>(&cmd).await;
            // Replies only: an error text is cut where it is kept (the history), and a script
            // whose errors grow past the server's Lua memory stops the lock below.
            let carried = result.as_ref().map_or(0, reply_bytes);
            // The step ran, but its reply is not looked at: whether it took effect is unknown.
            if let Err(e) = node.carry_reply_bytes(carried) {
                return Outcome::Unknown(format!("step {} on {}: {e}", index + 1, link.host()));
            }
            match result {
                Ok(reply) if is_success(step.success, &reply, vars.value) => {
                    if step.success == Success::Token {
                        token = token_of(&reply);
                    }
                }
                Ok(reply) => {
                    return Outcome::Refused(format!(
                        "step {} on {}: reply {} is not {}",
                        index + 1,
                        link.host(),
                        describe(&reply),
                        step.success.name()
                    ))
                }
                Err(e) if e.outcome_unknown() => return Outcome::Unknown(e.to_string()),
                Err(lockstep_sim::LinkError::Server { message, .. }) => {
                    if runs_into_a_server_bound(&message) {
                        node.stop_lock(format!(
                            "the lock's script ran into the simulated server's bound ({message}) on {}: it would \
                             on every attempt, so the lock sends nothing more in this run",
                            link.host()
                        ));
                    }
                    return Outcome::Refused(format!("step {} on {}: {message}", index + 1, link.host()));
                }
                Err(e) => return Outcome::Failed(e.to_string()),
            }
        }
        Outcome::Success(token)
    }

    /// Runs `op` on `link`, retrying after an unknown outcome as `op.retries` says.
    async fn run_op(&self, link: &RedisLink, op: &ScriptOp, vars: &Vars<'_>) -> Outcome {
        let mut retries_left = op.retries;
        loop {
            let outcome = Self::run_once(self.env.node(), link, op, vars).await;
            if !matches!(outcome, Outcome::Unknown(_)) || retries_left == 0 {
                return outcome;
            }
            retries_left -= 1;
            self.env.sleep_local_ms(op.retry_delay_ms).await;
        }
    }

    /// Runs `op` on every master at once.
    async fn run_everywhere(&self, op: &ScriptOp, vars: &Vars<'_>) -> Vec<Outcome> {
        join_all(self.masters().iter().map(|link| self.run_op(link, op, vars))).await
    }

    fn vars<'a>(&'a self, key: &'a str, value: &'a str, ttl_ms: u64, token: Option<u64>) -> Vars<'a> {
        Vars {
            key,
            value,
            ttl_ms,
            token,
            client: self.env.name(),
            now_ms: 0,
        }
    }
}

fn count(outcomes: &[Outcome], pred: impl Fn(&Outcome) -> bool) -> usize {
    outcomes.iter().filter(|o| pred(o)).count()
}

fn succeeded(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Success(_))
}

#[async_trait(?Send)]
impl LockClient for ScriptLock {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        let spec = &self.spec;
        let mut attempt: i64 = 0;
        // `wait = "subscribe"`: held for the whole call, dropped (unsubscribed) on return.
        let mut subscription = Subscription::NotYet;
        // `validity_from = "first-attempt"` counts the elapsed time from here, across retries.
        let first_start_ms = self.now_ms();
        loop {
            let value = match spec.value {
                ValuePolicy::Random => random_value(&self.env),
                ValuePolicy::PerClient => self.env.name().to_string(),
            };
            let start_ms = match spec.validity_from {
                ValidityFrom::ThisAttempt => self.now_ms(),
                ValidityFrom::FirstAttempt => first_start_ms,
            };
            let vars = self.vars(key, &value, ttl_ms, None);
            let outcomes = self.run_everywhere(&spec.acquire, &vars).await;
            let successes = count(&outcomes, succeeded);
            let unknown = count(&outcomes, |o| matches!(o, Outcome::Unknown(_)));
            // The validity counts from this instant (recorded for the lease-validity checker).
            let computed_at_ms = self.env.monotonic_ms();
            let (validity_ms, positive) = self.validity(ttl_ms, self.now_ms() - start_ms);
            if successes >= spec.quorum && (positive || !spec.validity_recheck) {
                *self.stored_value.borrow_mut() = Some(value.clone());
                // Whether this grant came from a retry (a per-client value may come back on a
                // later first attempt: the latest grant of a value decides).
                if attempt > 0 {
                    self.retried_values.borrow_mut().insert(value.clone());
                } else {
                    self.retried_values.borrow_mut().remove(&value);
                }
                // A `token` step issued the token inside the lock (the largest over the masters).
                let fencing_token = outcomes
                    .iter()
                    .filter_map(|o| match o {
                        Outcome::Success(token) => *token,
                        _ => None,
                    })
                    .max();
                return Ok(Grant {
                    key: key.to_string(),
                    value,
                    fencing_token,
                    validity_ms,
                    validity_from_ms: self.claimed_from(computed_at_ms),
                });
            }
            let mut unlock_unknown = false;
            if spec.unlock_on_failure && successes + unknown > 0 {
                // Release where the acquisition took (or may have taken) effect; a master that
                // refused holds someone else's lock, not ours.
                let targets = self
                    .masters()
                    .iter()
                    .zip(&outcomes)
                    .filter(|(_, o)| matches!(o, Outcome::Success(_) | Outcome::Unknown(_)));
                let unlocked = join_all(targets.map(|(link, _)| self.run_op(link, &spec.release, &vars))).await;
                unlock_unknown = unlocked.iter().any(|o| matches!(o, Outcome::Unknown(_)));
            }
            let retries_left = spec.retry_count < 0 || attempt < spec.retry_count;
            if !retries_left {
                let masters = self.masters().len();
                return if successes == 0 && unknown == 0 {
                    let refusals: Vec<&str> = outcomes
                        .iter()
                        .filter_map(|o| match o {
                            Outcome::Failed(m) => Some(m.as_str()),
                            _ => None,
                        })
                        .collect();
                    if refusals.len() == masters {
                        Err(LockError::Failed(refusals.join("; ")))
                    } else {
                        Err(LockError::Busy)
                    }
                } else if unknown > 0 && (!spec.unlock_on_failure || unlock_unknown) {
                    Err(LockError::Unknown(format!(
                        "{successes} of {masters} masters locked, {unknown} unknown"
                    )))
                } else {
                    Err(LockError::Failed(format!(
                        "{successes} of {masters} masters locked (quorum {}), validity {} ms{}",
                        spec.quorum,
                        validity_ms,
                        if positive { "" } else { " (not positive)" }
                    )))
                };
            }
            attempt += 1;
            let jitter_ms = if spec.retry_jitter_ms == 0 {
                0
            } else {
                self.env.rng().random_range(0..spec.retry_jitter_ms)
            };
            self.wait_between(&vars, spec.retry_delay_ms.saturating_add(jitter_ms), &mut subscription)
                .await;
        }
    }

    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        let value = self.value_for(grant);
        let vars = self.vars(&grant.key, &value, ttl_ms, grant.fencing_token);
        let start_ms = self.now_ms();
        let outcomes = self.run_everywhere(&self.spec.extend, &vars).await;
        let successes = count(&outcomes, succeeded);
        let computed_at_ms = self.env.monotonic_ms();
        let (validity_ms, positive) = self.validity(ttl_ms, self.now_ms() - start_ms);
        if successes >= self.spec.quorum && (positive || !self.spec.extend_rechecks()) {
            return Ok(Grant {
                validity_ms,
                validity_from_ms: self.claimed_from(computed_at_ms),
                ..grant.clone()
            });
        }
        let masters = self.masters().len();
        if masters == 1 {
            match &outcomes[0] {
                Outcome::Unknown(m) => return Err(LockError::Unknown(m.clone())),
                Outcome::Failed(m) => return Err(LockError::Failed(m.clone())),
                Outcome::Refused(m) => return Err(LockError::Lost(m.clone())),
                Outcome::Success(_) => {}
            }
        }
        Err(LockError::Lost(format!(
            "extension confirmed by {successes} of {masters} masters (quorum {}), validity {validity_ms} ms",
            self.spec.quorum
        )))
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        self.retried_values.borrow_mut().remove(&grant.value);
        let value = self.value_for(grant);
        // `{ttl_ms}` is refused in release templates at load time.
        let vars = self.vars(&grant.key, &value, 0, grant.fencing_token);
        let outcomes = self.run_everywhere(&self.spec.release, &vars).await;
        if outcomes.iter().any(succeeded) {
            return Ok(true);
        }
        // Every master answered and none released: nothing was ours to delete.
        if let Some(first_error) = outcomes.iter().find_map(|o| match o {
            Outcome::Unknown(m) => Some(LockError::Unknown(m.clone())),
            _ => None,
        }) {
            return Err(first_error);
        }
        if outcomes.iter().all(|o| matches!(o, Outcome::Failed(_))) {
            if let Some(Outcome::Failed(m)) = outcomes.first() {
                return Err(LockError::Failed(m.clone()));
            }
        }
        Ok(false)
    }

    fn value_sent(&self, grant: &Grant) -> String {
        self.value_for(grant)
    }

    fn auto_extend(&self) -> Option<AutoExtend> {
        match self.spec.renewal {
            Renewal::None => None,
            Renewal::Every { interval_ms } => Some(AutoExtend::Every { interval_ms }),
            Renewal::BeforeExpiry { threshold_ms } => Some(AutoExtend::BeforeExpiry { threshold_ms }),
        }
    }

    fn auto_extend_for(&self, grant: &Grant) -> Option<AutoExtend> {
        let retried = self.retried_values.borrow().contains(&grant.value);
        match self.spec.renew_grants {
            RenewGrants::FirstAttempt if retried => None,
            _ => self.auto_extend(),
        }
    }

    fn on_extend_failure(&self) -> ExtendFailure {
        match self.spec.on_renew_failure {
            OnRenewFailure::Abort => ExtendFailure::Abort,
            OnRenewFailure::KeepWorking => ExtendFailure::KeepWorking,
            OnRenewFailure::KeepSchedule => ExtendFailure::KeepSchedule,
        }
    }

    fn renewal_after_release(&self) -> RenewalAfterRelease {
        self.spec.renewal_after_release
    }

    fn tasks(&self) -> u32 {
        self.spec.tasks
    }

    fn task_lock(&self) -> Option<Rc<dyn LockClient>> {
        (!self.spec.share_lock_object)
            .then(|| Rc::new(ScriptLock::new(self.env.clone(), self.spec.clone())) as Rc<dyn LockClient>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars<'static> {
        Vars {
            key: "lock",
            value: "v1",
            ttl_ms: 10_000,
            token: Some(7),
            client: "client-1",
            now_ms: 1_700_000_000_123,
        }
    }

    #[test]
    fn placeholders_expand() {
        assert_eq!(
            expand("{key}:{value}:{ttl_ms}:{token}:{client}:{now_ms}", &vars()),
            "lock:v1:10000:7:client-1:1700000000123"
        );
        assert_eq!(expand("{{key}} }}", &vars()), "{key} }");
        let no_token = Vars { token: None, ..vars() };
        assert_eq!(expand("t={token}", &no_token), "t=");
    }

    #[test]
    fn success_kinds() {
        assert!(is_success(Success::Ok, &Value::Okay, "v"));
        assert!(!is_success(Success::Ok, &Value::Nil, "v"));
        assert!(is_success(Success::Value, &Value::BulkString(b"v".to_vec()), "v"));
        assert!(!is_success(Success::Value, &Value::BulkString(b"w".to_vec()), "v"));
        assert!(is_success(Success::Positive, &Value::Int(2), "v"));
        assert!(!is_success(Success::One, &Value::Int(0), "v"));
        assert!(is_success(Success::Nil, &Value::Nil, "v"));
        assert!(is_success(Success::Token, &Value::Int(7), "v"));
        assert!(!is_success(Success::Token, &Value::Int(0), "v"));
        assert!(!is_success(Success::Token, &Value::Nil, "v"));
        assert_eq!(token_of(&Value::Int(7)), Some(7));
        for (kind, name) in Success::ALL {
            assert_eq!(Success::from_name(name), Some(kind));
            assert_eq!(kind.name(), name);
        }
    }
}
