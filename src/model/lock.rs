//! The lock under test: the settings every lock has ([`LockSpec`]: key, TTL, fencing, client
//! timeouts) and, in [`AlgorithmSpec`], the algorithm with its own settings — one definition,
//! read by the scenario front end, the runner and the built-in algorithms alike.

use serde::{Deserialize, Serialize};
use std::fmt;

pub use super::clock::ClockKind;
use super::script::ScriptSpec;

/// The lock algorithm under test, without its settings (the `algorithm` key of `[lock]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// `SET NX PX` to acquire, plain `DEL` to release.
    Naive,
    /// `SET NX PX` with a random token; release only if the token still matches.
    TokenRelease,
    /// Token release plus a watchdog extending the TTL every `extend_every_ms`.
    Watchdog,
    /// Redlock over every master.
    Redlock,
    /// A lock described in the scenario file: command templates or Lua scripts and knobs.
    Script,
}

impl Algorithm {
    /// Every algorithm, in declaration order.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Naive,
        Algorithm::TokenRelease,
        Algorithm::Watchdog,
        Algorithm::Redlock,
        Algorithm::Script,
    ];

    /// The name as written in scenario files (`token-release`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::Naive => "naive",
            Algorithm::TokenRelease => "token-release",
            Algorithm::Watchdog => "watchdog",
            Algorithm::Redlock => "redlock",
            Algorithm::Script => "script",
        }
    }

    /// The algorithm of that name, if any.
    pub(crate) fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `name` may name a Rust lock (`[lock] rust_lock`, the harness): `[a-z0-9-]+`, at most
/// 64 characters, and not the name of a built-in algorithm (a replay must never mistake one for
/// the other).
pub(crate) fn is_valid_lock_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && Algorithm::from_name(name).is_none()
}

/// Where fencing tokens come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fencing {
    /// No tokens: writes to the resource carry none.
    #[default]
    None,
    /// `INCR` a counter on the fencing master after acquiring; the result is the token.
    Incr,
}

impl Fencing {
    /// Every source of tokens.
    pub const ALL: [Fencing; 2] = [Fencing::None, Fencing::Incr];

    /// `none` or `incr`.
    pub fn name(&self) -> &'static str {
        match self {
            Fencing::None => "none",
            Fencing::Incr => "incr",
        }
    }
}

/// The lock under test (every default resolved): what every lock has, and the algorithm with
/// its own settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockSpec {
    /// The algorithm and its settings.
    #[serde(flatten)]
    pub algorithm: AlgorithmSpec,
    /// The Redis key of the lock.
    pub key: String,
    /// Time to live, ms (> 0).
    pub ttl_ms: u64,
    /// Where fencing tokens come from.
    pub fencing: Fencing,
    /// The master that hands out fencing tokens (always names a master).
    pub fencing_master: String,
    /// Per-request timeout of the client's links to the masters, ms.
    pub request_timeout_ms: u64,
    /// Connection timeout of the client's links, ms.
    pub connect_timeout_ms: u64,
    /// The Rust lock (`lockstep::harness`) this scenario was run with, by name, in place of
    /// `algorithm`: written into counterexamples of a user's lock. Only the harness that
    /// supplies a lock of that name can run such a scenario; `lockstep run` refuses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rust_lock: Option<String>,
}

/// An algorithm with its own settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "algorithm", rename_all = "kebab-case")]
pub enum AlgorithmSpec {
    /// `SET NX PX`, release by a plain `DEL`; no settings of its own.
    Naive,
    /// `SET NX PX` with a random value, release by a compare-and-delete; no settings of its own.
    TokenRelease,
    /// Token release kept alive by a watchdog.
    Watchdog(WatchdogSpec),
    /// Redlock over every master.
    Redlock(RedlockSpec),
    /// A lock described in the scenario file (see [`ScriptSpec`]).
    Script(Box<ScriptSpec>),
}

impl AlgorithmSpec {
    /// The algorithm, without its settings.
    pub fn kind(&self) -> Algorithm {
        match self {
            AlgorithmSpec::Naive => Algorithm::Naive,
            AlgorithmSpec::TokenRelease => Algorithm::TokenRelease,
            AlgorithmSpec::Watchdog(_) => Algorithm::Watchdog,
            AlgorithmSpec::Redlock(_) => Algorithm::Redlock,
            AlgorithmSpec::Script(_) => Algorithm::Script,
        }
    }

    /// The name as written in scenario files (`token-release`, ...).
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// A built-in algorithm with its defaults for a TTL of `ttl_ms` — what a scenario file that
    /// names it and sets nothing else gets: `watchdog` renewing every
    /// [`WatchdogSpec::default_period_ms`] (at least 1 ms), `redlock` with node-redlock's
    /// defaults ([`RedlockSpec::default`]). `None` for `script`, which needs its scripts.
    pub fn preset(algorithm: Algorithm, ttl_ms: u64) -> Option<AlgorithmSpec> {
        Some(match algorithm {
            Algorithm::Naive => AlgorithmSpec::Naive,
            Algorithm::TokenRelease => AlgorithmSpec::TokenRelease,
            Algorithm::Watchdog => AlgorithmSpec::Watchdog(WatchdogSpec {
                extend_every_ms: WatchdogSpec::default_period_ms(ttl_ms).max(1),
            }),
            Algorithm::Redlock => AlgorithmSpec::Redlock(RedlockSpec::default()),
            Algorithm::Script => return None,
        })
    }
}

impl fmt::Display for AlgorithmSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The watchdog's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WatchdogSpec {
    /// Extension period, ms, by the client's clock ([`WatchdogSpec::default_period_ms`] unless
    /// written; > 0).
    pub extend_every_ms: u64,
}

impl WatchdogSpec {
    /// The extension period when none is written: a third of the TTL (Redisson's watchdog
    /// renews every `lockWatchdogTimeout / 3`). The one place this rule is written; 0 for a TTL
    /// under 3 ms, which the scenario front end refuses.
    pub(crate) fn default_period_ms(ttl_ms: u64) -> u64 {
        ttl_ms / 3
    }
}

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

impl LockSpec {
    /// The algorithm, without its settings.
    pub fn kind(&self) -> Algorithm {
        self.algorithm.kind()
    }

    /// The name of the lock that runs: the Rust lock's name when there is one, else the
    /// algorithm's.
    pub(crate) fn lock_name(&self) -> &str {
        self.rust_lock.as_deref().unwrap_or(self.algorithm.name())
    }

    /// The watchdog's settings, when the algorithm is the watchdog.
    pub fn watchdog(&self) -> Option<&WatchdogSpec> {
        match &self.algorithm {
            AlgorithmSpec::Watchdog(w) => Some(w),
            _ => None,
        }
    }

    /// Redlock's settings, when the algorithm is Redlock.
    pub fn redlock(&self) -> Option<&RedlockSpec> {
        match &self.algorithm {
            AlgorithmSpec::Redlock(r) => Some(r),
            _ => None,
        }
    }

    /// Where the grants' fencing tokens come from, in words for a header: `incr`, `none`, or
    /// `from the lock's script` when a script lock's acquire answers the token itself (its
    /// `fencing` is then `none`).
    pub(crate) fn fencing_shown(&self) -> &'static str {
        match self.script() {
            Some(script) if self.fencing == Fencing::None && script.issues_tokens() => "from the lock's script",
            _ => self.fencing.name(),
        }
    }

    /// The script lock's settings, when the algorithm is `script`.
    pub fn script(&self) -> Option<&ScriptSpec> {
        match &self.algorithm {
            AlgorithmSpec::Script(s) => Some(s),
            _ => None,
        }
    }
}
