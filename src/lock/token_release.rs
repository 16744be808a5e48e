//! `token-release`: SET NX PX with a random value per acquisition; release and extension by Lua
//! scripts that first compare the stored value with ours.
//!
//! Safe against deleting another client's lock. Still unsafe against a pause past the TTL (the
//! holder does not know it lost the lock); that is what fencing is for. Uses the first master.

use super::{single, LockClient, LockEnv, LockError};
use crate::model::Grant;
use async_trait::async_trait;

/// The token-checked single-master lock.
#[derive(Debug)]
pub struct TokenRelease {
    env: LockEnv,
}

impl TokenRelease {
    /// A token-release lock on the first master of `env`.
    pub fn new(env: LockEnv) -> Self {
        TokenRelease { env }
    }

    fn link(&self) -> Result<&lockstep_sim::RedisLink, LockError> {
        single::first_master(&self.env)
    }
}

#[async_trait(?Send)]
impl LockClient for TokenRelease {
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        single::set_nx(self.link()?, &self.env, key, ttl_ms).await
    }

    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError> {
        single::extend_checked(self.link()?, &self.env, grant, ttl_ms).await
    }

    async fn release(&self, grant: &Grant) -> Result<bool, LockError> {
        single::release_checked(self.link()?, grant).await
    }
}

impl super::BuildClient for crate::model::builtin::TokenReleaseSpec {
    fn build_client(&self, env: LockEnv) -> std::rc::Rc<dyn LockClient> {
        std::rc::Rc::new(TokenRelease::new(env))
    }
}
