//! `watchdog`: `token-release` plus automatic extension every `extend_every_ms` (ttl/3 by
//! default) while the work runs, like Redisson's watchdog.
//!
//! When an extension fails the watchdog stops and the workload sees the loss through its abort
//! signal (node-redlock's `signal.aborted`). It narrows the pause window but cannot close it: a
//! pause longer than the TTL also freezes the watchdog.

use super::{token_release::TokenRelease, AutoExtend, LockClient, LockEnv, LockError};
use crate::model::Grant;
use async_trait::async_trait;

/// The token-release lock kept alive by a watchdog.
#[derive(Debug)]
pub struct Watchdog {
    inner: TokenRelease,
    extend_every_ms: u64,
}

impl Watchdog {
    /// A watchdog lock on the first master of `env`, extending every `extend_every_ms`.
    pub fn new(env: LockEnv, extend_every_ms: u64) -> Self {
        Watchdog {
            inner: TokenRelease::new(env),
            extend_every_ms: extend_every_ms.max(1),
        }
    }
}

#[async_trait(?Send)]
impl LockClient for Watchdog {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        self.inner.acquire(key, ttl_ms).await
    }

    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        self.inner.extend(grant, ttl_ms).await
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        self.inner.release(grant).await
    }

    fn auto_extend(&self) -> Option<AutoExtend> {
        Some(AutoExtend::Every {
            interval_ms: self.extend_every_ms,
        })
    }
}

impl super::BuildClient for crate::model::builtin::WatchdogSpec {
    fn build_client(&self, env: LockEnv) -> std::rc::Rc<dyn LockClient> {
        std::rc::Rc::new(Watchdog::new(env, self.extend_every_ms))
    }
}
