//! `token-release`'s settings: none. What it promises: one master, a release that deletes only
//! its own lock, no renewal (the client is `crate::lock::token_release`).

use super::{KeyError, LockClaims, LockKeys, Preset};
use serde::Serialize;

/// The token-release lock has no settings of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TokenReleaseSpec {}

impl Preset for TokenReleaseSpec {
    fn preset(_ttl_ms: u64) -> Self {
        TokenReleaseSpec {}
    }

    fn resolve(_keys: &LockKeys, _ttl_ms: u64) -> Result<Self, KeyError> {
        Ok(TokenReleaseSpec {})
    }

    fn write(&self, _ttl_ms: u64, _keys: &mut LockKeys) {}

    fn claims(&self, _ttl_ms: u64, _masters: usize) -> LockClaims {
        LockClaims::single_master()
    }
}
