//! `naive`: SET NX PX to acquire, and a plain DEL to release.
//!
//! The lesson's unsafe release: if the lock expired while the holder worked and another client
//! took it, the DEL deletes the other client's lock, and a third client can then take it while
//! the second still believes it holds it. Extension is a plain PEXPIRE, unsafe for the same
//! reason. Uses the first master only.

use super::{single, LockClient, LockEnv, LockError};
use crate::model::Grant;
use async_trait::async_trait;

/// The naive single-master lock.
#[derive(Debug)]
pub struct Naive {
    env: LockEnv,
}

impl Naive {
    /// A naive lock on the first master of `env`.
    pub fn new(env: LockEnv) -> Self {
        Naive { env }
    }

    fn link(&self) -> Result<&lockstep_sim::RedisLink, LockError> {
        single::first_master(&self.env)
    }
}

#[async_trait(?Send)]
impl LockClient for Naive {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        single::set_nx(self.link()?, &self.env, key, ttl_ms).await
    }

    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        let start_ms = self.env.monotonic_ms();
        let extended: i64 = self
            .link()?
            .query(redis::cmd("PEXPIRE").arg(&grant.key).arg(ttl_ms))
            .await?;
        let now_ms = self.env.monotonic_ms();
        let elapsed_ms = (now_ms - start_ms).max(0) as u64;
        if extended == 1 && elapsed_ms < ttl_ms {
            Ok(Grant {
                validity_ms: ttl_ms - elapsed_ms,
                validity_from_ms: Some(now_ms),
                ..grant.clone()
            })
        } else if extended == 1 {
            Err(LockError::Lost(format!(
                "validity ran out: the extension took {elapsed_ms} ms of the {ttl_ms} ms TTL"
            )))
        } else {
            Err(LockError::Lost("the key is gone".into()))
        }
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        let deleted: i64 = self.link()?.query(redis::cmd("DEL").arg(&grant.key)).await?;
        Ok(deleted > 0)
    }
}

impl super::BuildClient for crate::model::builtin::NaiveSpec {
    fn build_client(&self, env: LockEnv) -> std::rc::Rc<dyn LockClient> {
        std::rc::Rc::new(Naive::new(env))
    }
}
