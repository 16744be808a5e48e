//! `redlock`: the Redlock algorithm over N independent masters, as specified on the Redis
//! documentation page "Distributed Locks with Redis" and implemented by node-redlock v5.
//!
//! One attempt: take the client's clock reading, send `SET key value NX PX ttl` to every master
//! at once (each under the per-node request timeout), count the successes, and compute
//! `validity = ttl − elapsed − (drift_factor × ttl + 2 ms)`. The lock is held only with a quorum
//! (N/2 + 1) and a positive validity; otherwise every master is unlocked and, after
//! `retry_delay_ms` plus a random jitter below `retry_jitter_ms`, the client tries again, up to
//! `retry_count` retries (−1: forever). Extension needs a quorum of compare-and-PEXPIRE
//! successes within the validity. The client times itself by its monotonic or its wall clock
//! (`clock = "wall"` shows why that is a bad idea when its clock jumps).
//!
//! Not modelled: node-redlock's per-resource multi-key locks and its event emitter.

use super::{single, AutoExtend, LockClient, LockEnv, LockError, RELEASE_SCRIPT};
use crate::model::{builtin::RedlockSpec, Grant};
use async_trait::async_trait;
use futures_util::future::join_all;
use rand::Rng;

/// The Redlock client.
#[derive(Debug)]
pub struct Redlock {
    env: LockEnv,
    config: RedlockSpec,
}

/// What one round over all masters achieved.
struct Round {
    successes: usize,
    unknown: usize,
    elapsed_ms: i64,
    /// The monotonic reading when the round ended (the validity counts from there).
    computed_at_ms: i64,
}

impl Redlock {
    /// A Redlock client over every master of `env`, with the settings of a scenario's `[lock]`
    /// table (or [`RedlockSpec::default`], node-redlock's).
    pub fn new(env: LockEnv, config: RedlockSpec) -> Self {
        Redlock { env, config }
    }

    /// N/2 + 1.
    pub fn quorum(&self) -> usize {
        self.env.masters().len() / 2 + 1
    }

    fn now_ms(&self) -> i64 {
        self.env.now_ms(self.config.clock)
    }

    /// `ttl − elapsed − (drift_factor × ttl + 2)`, which may be negative.
    pub fn validity_ms(&self, ttl_ms: u64, elapsed_ms: i64) -> i64 {
        let drift_ms = (ttl_ms as f64 * self.config.drift_factor).floor() as i64 + 2;
        ttl_ms as i64 - elapsed_ms - drift_ms
    }

    async fn lock_round(&self, key: &str, value: &str, ttl_ms: u64) -> Round {
        let start_ms = self.now_ms();
        let requests = self.env.masters().iter().map(|link| async move {
            link.query::<Option<String>>(redis::cmd("SET").arg(key).arg(value).arg("NX").arg("PX").arg(ttl_ms))
                .await
        });
        let replies = join_all(requests).await;
        let successes = replies.iter().filter(|r| matches!(r, Ok(Some(_)))).count();
        let unknown = replies
            .iter()
            .filter(|r| matches!(r, Err(e) if e.outcome_unknown()))
            .count();
        Round {
            successes,
            unknown,
            elapsed_ms: self.now_ms() - start_ms,
            computed_at_ms: self.env.monotonic_ms(),
        }
    }

    /// Unlocks every master; returns how many deleted our key and whether any outcome is unknown.
    async fn unlock_all(&self, grant: &Grant) -> (usize, bool) {
        let requests = self
            .env
            .masters()
            .iter()
            .map(|link| single::script(link, RELEASE_SCRIPT, grant, None));
        let replies = join_all(requests).await;
        let released = replies.iter().filter(|r| matches!(r, Ok(1))).count();
        let unknown = replies.iter().any(|r| matches!(r, Err(e) if e.outcome_unknown()));
        (released, unknown)
    }
}

#[async_trait(?Send)]
impl LockClient for Redlock {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        let env = &self.env;
        let mut attempt: i64 = 0;
        loop {
            let value = super::random_value(env);
            let round = self.lock_round(key, &value, ttl_ms).await;
            let validity_ms = self.validity_ms(ttl_ms, round.elapsed_ms);
            let mut grant = Grant {
                key: key.to_string(),
                value,
                fencing_token: None,
                validity_ms: validity_ms.max(0) as u64,
                validity_from_ms: Some(round.computed_at_ms),
            };
            if round.successes >= self.quorum() && validity_ms > 0 {
                return Ok(grant);
            }
            grant.validity_ms = 0;
            let (_, unlock_unknown) = self.unlock_all(&grant).await;
            let retries_left = self.config.retry_count < 0 || attempt < self.config.retry_count;
            if !retries_left {
                return if round.unknown > 0 && unlock_unknown {
                    Err(LockError::Unknown(format!(
                        "{} of {} masters locked, {} unknown, and the unlock did not confirm",
                        round.successes,
                        self.env.masters().len(),
                        round.unknown
                    )))
                } else if round.successes == 0 && round.unknown == 0 {
                    Err(LockError::Busy)
                } else {
                    Err(LockError::Failed(format!(
                        "{} of {} masters locked (quorum {}), validity {} ms",
                        round.successes,
                        self.env.masters().len(),
                        self.quorum(),
                        validity_ms
                    )))
                };
            }
            attempt += 1;
            let jitter_ms = if self.config.retry_jitter_ms == 0 {
                0
            } else {
                env.rng().random_range(0..self.config.retry_jitter_ms)
            };
            env.sleep_local_ms(self.config.retry_delay_ms.saturating_add(jitter_ms)).await;
        }
    }

    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        let start_ms = self.now_ms();
        let requests = self
            .env
            .masters()
            .iter()
            .map(|link| single::script(link, super::EXTEND_SCRIPT, grant, Some(ttl_ms)));
        let replies = join_all(requests).await;
        let successes = replies.iter().filter(|r| matches!(r, Ok(1))).count();
        let validity_ms = self.validity_ms(ttl_ms, self.now_ms() - start_ms);
        let computed_at_ms = self.env.monotonic_ms();
        if successes >= self.quorum() && validity_ms > 0 {
            Ok(Grant {
                validity_ms: validity_ms as u64,
                validity_from_ms: Some(computed_at_ms),
                ..grant.clone()
            })
        } else {
            Err(LockError::Lost(format!(
                "extension confirmed by {successes} of {} masters (quorum {}), validity {validity_ms} ms",
                self.env.masters().len(),
                self.quorum()
            )))
        }
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        let (released, _) = self.unlock_all(grant).await;
        Ok(released > 0)
    }

    fn auto_extend(&self) -> Option<AutoExtend> {
        self.config.auto_extend.then_some(AutoExtend::BeforeExpiry {
            threshold_ms: self.config.extension_threshold_ms,
        })
    }
}

impl super::BuildClient for crate::model::builtin::RedlockSpec {
    fn build_client(&self, env: LockEnv) -> std::rc::Rc<dyn LockClient> {
        std::rc::Rc::new(Redlock::new(env, *self))
    }
}
