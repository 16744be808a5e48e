//! `watchdog`'s settings: the renewal period, a third of the TTL unless written (Redisson's
//! watchdog renews every `lockWatchdogTimeout / 3`). The client is `crate::lock::watchdog`.

use super::{KeyError, LockClaims, LockKeys, Preset};
use serde::Serialize;

/// The watchdog's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WatchdogSpec {
    /// Extension period, ms, by the client's clock (`WatchdogSpec::default_period_ms` unless
    /// written; > 0).
    pub extend_every_ms: u64,
}

impl WatchdogSpec {
    /// The extension period when none is written: a third of the TTL. The one place this rule
    /// is written; 0 for a TTL under 3 ms, which [`Preset::resolve`] refuses.
    pub(crate) fn default_period_ms(ttl_ms: u64) -> u64 {
        ttl_ms / 3
    }
}

impl Preset for WatchdogSpec {
    fn preset(ttl_ms: u64) -> Self {
        WatchdogSpec {
            extend_every_ms: WatchdogSpec::default_period_ms(ttl_ms).max(1),
        }
    }

    fn resolve(keys: &LockKeys, ttl_ms: u64) -> Result<Self, KeyError> {
        let extend_every_ms = match keys.extend_every_ms {
            Some(every) => every,
            None => match WatchdogSpec::default_period_ms(ttl_ms) {
                0 => {
                    return Err(KeyError::new(
                        "ttl_ms",
                        format!(
                            "{ttl_ms} is too short for a watchdog: the default extend_every_ms (ttl_ms / 3) would be 0"
                        ),
                    ))
                }
                every => every,
            },
        };
        Ok(WatchdogSpec { extend_every_ms })
    }

    fn write(&self, ttl_ms: u64, keys: &mut LockKeys) {
        // The default period is left implicit: it may be 0 for short TTLs, which a written
        // value may not be.
        if self.extend_every_ms != WatchdogSpec::default_period_ms(ttl_ms) {
            keys.extend_every_ms = Some(self.extend_every_ms);
        }
    }

    fn claims(&self, _ttl_ms: u64, _masters: usize) -> LockClaims {
        LockClaims {
            renewal_ms: Some(self.extend_every_ms),
            ..LockClaims::single_master()
        }
    }

    fn at_ttl(&mut self, ttl_ms: u64) {
        self.extend_every_ms = WatchdogSpec::default_period_ms(ttl_ms).max(1);
    }
}
