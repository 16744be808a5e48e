//! `redlock`'s settings, with node-redlock v5's defaults, and what Redlock promises: a quorum
//! of every master, a validity less a drift allowance, and — with `auto_extend` —
//! node-redlock's `using()` renewal. The client is `crate::lock::redlock`.

use super::{KeyError, LockClaims, LockKeys, Preset};
use crate::model::clock::ClockKind;
use serde::Serialize;

/// Redlock's settings (the defaults are node-redlock v5's).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RedlockSpec {
    /// Retries after the first attempt; −1 retries forever.
    pub retry_count: i64,
    /// Delay between attempts, ms.
    pub retry_delay_ms: u64,
    /// Upper bound of the random extra delay, ms.
    pub retry_jitter_ms: u64,
    /// Clock drift allowance as a fraction of the TTL, in [0, 1) (2 ms are added).
    pub drift_factor: f64,
    /// Which clock the client times itself with.
    pub clock: ClockKind,
    /// Extend automatically while the work runs (node-redlock's `using()`).
    pub auto_extend: bool,
    /// Extend when less than this much validity is left, ms.
    pub extension_threshold_ms: u64,
}

impl Default for RedlockSpec {
    /// node-redlock v5's defaults.
    fn default() -> Self {
        RedlockSpec {
            retry_count: 10,
            retry_delay_ms: 200,
            retry_jitter_ms: 100,
            drift_factor: 0.01,
            clock: ClockKind::Monotonic,
            auto_extend: false,
            extension_threshold_ms: 500,
        }
    }
}

impl Preset for RedlockSpec {
    const STANDARD_MASTERS: usize = 5;

    fn preset(_ttl_ms: u64) -> Self {
        RedlockSpec::default()
    }

    fn resolve(keys: &LockKeys, _ttl_ms: u64) -> Result<Self, KeyError> {
        let d = RedlockSpec::default();
        Ok(RedlockSpec {
            retry_count: keys.retry_count.unwrap_or(d.retry_count),
            retry_delay_ms: keys.retry_delay_ms.unwrap_or(d.retry_delay_ms),
            retry_jitter_ms: keys.retry_jitter_ms.unwrap_or(d.retry_jitter_ms),
            drift_factor: keys.drift_factor.unwrap_or(d.drift_factor),
            clock: keys.clock.unwrap_or(d.clock),
            auto_extend: keys.auto_extend.unwrap_or(d.auto_extend),
            extension_threshold_ms: keys.extension_threshold_ms.unwrap_or(d.extension_threshold_ms),
        })
    }

    fn write(&self, _ttl_ms: u64, keys: &mut LockKeys) {
        keys.retry_count = Some(self.retry_count);
        keys.retry_delay_ms = Some(self.retry_delay_ms);
        keys.retry_jitter_ms = Some(self.retry_jitter_ms);
        keys.drift_factor = Some(self.drift_factor);
        keys.clock = Some(self.clock);
        keys.auto_extend = Some(self.auto_extend);
        keys.extension_threshold_ms = Some(self.extension_threshold_ms);
    }

    fn claims(&self, ttl_ms: u64, masters: usize) -> LockClaims {
        LockClaims {
            drift_factor: self.drift_factor,
            masters_used: masters.max(1),
            // node-redlock's `using()` extends when less than the threshold is left.
            renewal_ms: self
                .auto_extend
                .then(|| ttl_ms.saturating_sub(self.extension_threshold_ms)),
            ..LockClaims::single_master()
        }
    }

    fn at_ttl(&mut self, ttl_ms: u64) {
        self.extension_threshold_ms = self.extension_threshold_ms.min(ttl_ms / 2);
    }
}
