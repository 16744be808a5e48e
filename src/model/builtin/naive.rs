//! `naive`'s settings: none. What it promises: one master, and a release that deletes
//! whatever lock is there (the client is `crate::lock::naive`).

use super::{KeyError, LockClaims, LockKeys, Preset};
use serde::Serialize;

/// The naive lock has no settings of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct NaiveSpec {}

impl Preset for NaiveSpec {
    fn preset(_ttl_ms: u64) -> Self {
        NaiveSpec {}
    }

    fn resolve(_keys: &LockKeys, _ttl_ms: u64) -> Result<Self, KeyError> {
        Ok(NaiveSpec {})
    }

    fn write(&self, _ttl_ms: u64, _keys: &mut LockKeys) {}

    fn claims(&self, _ttl_ms: u64, _masters: usize) -> LockClaims {
        LockClaims {
            release_unsafe: true,
            ..LockClaims::single_master()
        }
    }
}
