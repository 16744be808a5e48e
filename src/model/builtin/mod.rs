//! The registry of built-in lock algorithms: one line each in `builtin_locks!`, and one file
//! each here holding the algorithm's settings and what they mean (a [`Preset`]): their defaults
//! for a TTL, how they are read from and written back to a `[lock]` table's keys, what the lock
//! promises the explorer ([`LockClaims`]), how they follow a TTL sweep, and how many masters
//! the standard exploration template gives the lock.
//!
//! The algorithm itself — the client that sends the commands — lives in
//! `crate::lock::<module>` under the same module name, where it implements
//! `crate::lock::BuildClient` for the settings type. [`crate::model::Algorithm`] and
//! [`crate::model::AlgorithmSpec`] are generated from the registry, so the scenario front end,
//! the writer, `--algorithm`, `lockstep list`, the explorer's assumptions and the TTL sweep
//! follow the list and never match on an algorithm.
//!
//! The script lock (`algorithm = "script"`) is not a preset: its settings are a whole
//! description ([`crate::model::ScriptSpec`]) with a front end of its own.

mod naive;
mod redlock;
mod token_release;
mod watchdog;

pub use naive::NaiveSpec;
pub use redlock::RedlockSpec;
pub use token_release::TokenReleaseSpec;
pub use watchdog::WatchdogSpec;

use super::clock::ClockKind;
use std::fmt::Debug;

/// The registry of built-in locks, one line each: `module Variant SettingsType "name" "what it
/// does"`. `module` names both the settings' file here and the client's file in `crate::lock`;
/// `"name"` is what scenario files and `--algorithm` write. The order is the order of
/// [`crate::model::Algorithm::ALL`] (and of `lockstep list`).
///
/// Called with the name of a macro that takes the list (the enums in `model::lock`, the
/// clients in `crate::lock`).
macro_rules! builtin_locks {
    ($callback:ident) => {
        $callback! {
            naive Naive NaiveSpec "naive"
                "SET NX PX; release by a plain DEL (deletes whatever lock is there)",
            token_release TokenRelease TokenReleaseSpec "token-release"
                "SET NX PX with a random value; release by a Lua compare-and-delete",
            watchdog Watchdog WatchdogSpec "watchdog"
                "token-release plus a Lua compare-and-PEXPIRE every ttl/3 while the work runs",
            redlock Redlock RedlockSpec "redlock"
                "N independent masters, quorum N/2+1, validity = ttl - elapsed - drift",
        }
    };
}
pub(crate) use builtin_locks;

/// A built-in algorithm's settings, and what they mean outside the client.
pub trait Preset: Sized + Clone + PartialEq + Debug {
    /// Masters the standard exploration template gives this lock (Redlock's five; one for a
    /// single-master lock).
    const STANDARD_MASTERS: usize = 1;

    /// The settings a scenario file that names the algorithm and sets nothing else gets, for a
    /// TTL of `ttl_ms` (which may be too short for them: [`Preset::resolve`] refuses that).
    fn preset(ttl_ms: u64) -> Self;

    /// The settings `keys` describe for a TTL of `ttl_ms`; keys left unwritten take their
    /// defaults. Keys are range-checked beforehand ([`LockKeys::check`]); this refuses what
    /// only this algorithm cannot use.
    fn resolve(keys: &LockKeys, ttl_ms: u64) -> Result<Self, KeyError>;

    /// Writes the settings back into `keys` (which start at [`LockKeys::written_defaults`]) so
    /// that [`Preset::resolve`] gives them again. Defaults that depend on the TTL may be left
    /// unwritten.
    fn write(&self, ttl_ms: u64, keys: &mut LockKeys);

    /// What the lock promises, over `masters` masters with a TTL of `ttl_ms`.
    fn claims(&self, ttl_ms: u64, masters: usize) -> LockClaims;

    /// The settings for another TTL (a TTL sweep): margins and periods that are a share of the
    /// TTL follow it. By default, unchanged.
    fn at_ttl(&mut self, ttl_ms: u64) {
        let _ = ttl_ms;
    }
}

/// The `[lock]` keys the built-in algorithms share, as written (`None`: not written). Every key
/// is range-checked whatever the algorithm ([`LockKeys::check`]); each algorithm keeps only the
/// ones it has. A new setting is a field here and in the scenario front end's raw `[lock]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LockKeys {
    /// `retry_count`: retries after the first attempt; −1 retries forever.
    pub retry_count: Option<i64>,
    /// `retry_delay_ms`: delay between attempts.
    pub retry_delay_ms: Option<u64>,
    /// `retry_jitter_ms`: upper bound of the random extra delay.
    pub retry_jitter_ms: Option<u64>,
    /// `drift_factor`: clock drift allowance as a fraction of the TTL.
    pub drift_factor: Option<f64>,
    /// `clock`: the clock the client times itself with.
    pub clock: Option<ClockKind>,
    /// `extend_every_ms`: a renewal period.
    pub extend_every_ms: Option<u64>,
    /// `auto_extend`: extend while the work runs.
    pub auto_extend: Option<bool>,
    /// `extension_threshold_ms`: extend when less than this is left.
    pub extension_threshold_ms: Option<u64>,
}

impl LockKeys {
    /// What a written `[lock]` table starts from: Redlock's keys at their defaults, written for
    /// every built-in algorithm (the others ignore them), so files read the same whatever the
    /// algorithm.
    pub fn written_defaults() -> LockKeys {
        let r = RedlockSpec::default();
        LockKeys {
            retry_count: Some(r.retry_count),
            retry_delay_ms: Some(r.retry_delay_ms),
            retry_jitter_ms: Some(r.retry_jitter_ms),
            drift_factor: Some(r.drift_factor),
            clock: Some(r.clock),
            extend_every_ms: None,
            auto_extend: Some(r.auto_extend),
            extension_threshold_ms: Some(r.extension_threshold_ms),
        }
    }

    /// Range checks that hold whatever the algorithm, for a TTL of `ttl_ms`.
    pub fn check(&self, ttl_ms: u64) -> Result<(), KeyError> {
        let r = RedlockSpec::default();
        if let Some(retry_count) = self.retry_count.filter(|&n| n < -1) {
            return Err(KeyError::new(
                "retry_count",
                format!("{retry_count}: must be -1 (unlimited) or more"),
            ));
        }
        if let Some(drift_factor) = self.drift_factor.filter(|f| !(0.0..1.0).contains(f)) {
            return Err(KeyError::new(
                "drift_factor",
                format!("{drift_factor}: must be in [0, 1)"),
            ));
        }
        if let Some(every) = self.extend_every_ms.filter(|&every| every == 0 || every >= ttl_ms) {
            return Err(KeyError::new(
                "extend_every_ms",
                format!("{every}: must be above 0 and below ttl_ms ({ttl_ms})"),
            ));
        }
        let auto_extend = self.auto_extend.unwrap_or(r.auto_extend);
        let threshold_ms = self.extension_threshold_ms.unwrap_or(r.extension_threshold_ms);
        if auto_extend && threshold_ms >= ttl_ms {
            return Err(KeyError::new(
                "extension_threshold_ms",
                format!("{threshold_ms}: must be below ttl_ms ({ttl_ms}) when auto_extend is on"),
            ));
        }
        Ok(())
    }
}

/// A `[lock]` key a preset refuses, and why (the front end adds the file and line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// The key at fault (`ttl_ms`, `extend_every_ms`, …).
    pub key: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl KeyError {
    /// `key` is wrong: `message`.
    pub fn new(key: &'static str, message: impl Into<String>) -> KeyError {
        KeyError {
            key,
            message: message.into(),
        }
    }
}

/// What a lock promises, as the explorer's assumptions read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LockClaims {
    /// Clock drift allowance as a fraction of the TTL (0: none; 2 ms are added when above 0).
    pub drift_factor: f64,
    /// The lock refuses a grant whose validity ran out (it computes and re-checks it).
    pub refuses_slow_rounds: bool,
    /// The lock computes a validity from its own clock (else the grant's lease is its TTL,
    /// counted from the reply).
    pub computes_validity: bool,
    /// How many of the masters the lock uses (at least 1).
    pub masters_used: usize,
    /// How long the work may run between two renewals, ms, when the lock renews its lease.
    pub renewal_ms: Option<u64>,
    /// The release deletes whatever lock is there (not only its own).
    pub release_unsafe: bool,
}

impl LockClaims {
    /// A single-master lock that refuses slow rounds, never renews and releases only its own
    /// lock: the claims the others are written from.
    pub fn single_master() -> LockClaims {
        LockClaims {
            drift_factor: 0.0,
            refuses_slow_rounds: true,
            computes_validity: true,
            masters_used: 1,
            renewal_ms: None,
            release_unsafe: false,
        }
    }
}
