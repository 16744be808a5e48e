//! Fencing tokens by INCR: after any algorithm grants the lock, the client takes a token from
//! an INCR on a counter key on one chosen master, and sends it with every write.
//!
//! The token is only as good as that master: if it restarts empty, tokens start again from 1
//! (the token-order checker sees it). If the INCR fails, the lock is released and the acquire
//! fails, so no grant is ever used without a token.

use super::{LockClient, LockError};
use crate::model::Grant;
use async_trait::async_trait;
use lockstep_sim::RedisLink;
use std::rc::Rc;

/// The prefix of every fencing-token counter key (`lockstep:fence:{lock key}`).
pub(crate) const COUNTER_KEY_PREFIX: &str = "lockstep:fence:";

/// Whether `key` is a fencing-token counter key rather than a lock's key.
pub(crate) fn is_counter_key(key: &str) -> bool {
    key.starts_with(COUNTER_KEY_PREFIX)
}

/// Wraps an algorithm so that every grant carries a fencing token.
pub(crate) struct IncrFencing {
    inner: Rc<dyn LockClient>,
    link: RedisLink,
}

impl IncrFencing {
    /// Fences `inner` with tokens from INCR on `link`.
    pub fn new(inner: Rc<dyn LockClient>, link: RedisLink) -> Self {
        IncrFencing { inner, link }
    }

    /// The counter key for a lock key.
    fn counter_key(lock_key: &str) -> String {
        format!("{COUNTER_KEY_PREFIX}{lock_key}")
    }
}

#[async_trait(?Send)]
impl LockClient for IncrFencing {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        let grant = self.inner.acquire(key, ttl_ms).await?;
        match self
            .link
            .query::<u64>(redis::cmd("INCR").arg(Self::counter_key(key)))
            .await
        {
            Ok(token) => Ok(Grant {
                fencing_token: Some(token),
                ..grant
            }),
            Err(e) => {
                // Best effort: a grant without a token must not be used, so give it back.
                let _ = self.inner.release(&grant).await;
                Err(LockError::Failed(format!("no fencing token: {e}")))
            }
        }
    }

    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        self.inner.extend(grant, ttl_ms).await
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        self.inner.release(grant).await
    }

    fn value_sent(&self, grant: &Grant) -> String {
        self.inner.value_sent(grant)
    }

    fn auto_extend(&self) -> Option<super::AutoExtend> {
        self.inner.auto_extend()
    }

    fn auto_extend_for(&self, grant: &Grant) -> Option<super::AutoExtend> {
        self.inner.auto_extend_for(grant)
    }

    fn on_extend_failure(&self) -> super::ExtendFailure {
        self.inner.on_extend_failure()
    }

    fn renewal_after_release(&self) -> crate::model::RenewalAfterRelease {
        self.inner.renewal_after_release()
    }

    fn tasks(&self) -> u32 {
        self.inner.tasks()
    }

    fn task_lock(&self) -> Option<Rc<dyn LockClient>> {
        let inner = self.inner.task_lock()?;
        Some(Rc::new(IncrFencing::new(inner, self.link.clone())))
    }
}
