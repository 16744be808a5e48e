//! The lock under test: the settings every lock has ([`LockSpec`]: key, TTL, fencing, client
//! timeouts) and, in [`AlgorithmSpec`], the algorithm with its own settings — one definition,
//! read by the scenario front end, the runner and the built-in algorithms alike. The
//! algorithms are generated from the registry of built-in locks (`super::builtin`), the script
//! lock last.

use serde::{Deserialize, Serialize};
use std::fmt;

pub use super::builtin::{
    KeyError, LockClaims, LockKeys, NaiveSpec, Preset, RedlockSpec, TokenReleaseSpec, WatchdogSpec,
};
pub use super::clock::ClockKind;
use super::script::ScriptSpec;

/// Generates [`Algorithm`] and [`AlgorithmSpec`] from the registry of built-in locks
/// ([`super::builtin::builtin_locks!`]), with the script lock after them.
macro_rules! algorithms {
    ($($module:ident $variant:ident $spec:ident $name:literal $about:literal,)*) => {
        /// The lock algorithm under test, without its settings (the `algorithm` key of
        /// `[lock]`): the built-in algorithms of the registry, then the script lock.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Algorithm {
            $(
                #[doc = $about]
                #[serde(rename = $name)]
                $variant,
            )*
            /// A lock described in the scenario file: command templates or Lua scripts and knobs.
            #[serde(rename = "script")]
            Script,
        }

        impl Algorithm {
            /// Every algorithm, in the registry's order, the script lock last.
            pub const ALL: &'static [Algorithm] = &[$(Algorithm::$variant,)* Algorithm::Script];

            /// The built-in algorithms (what `--algorithm` accepts: a script lock comes from its
            /// file).
            pub const BUILT_IN: &'static [Algorithm] = &[$(Algorithm::$variant,)*];

            /// The name as written in scenario files (`token-release`, ...).
            pub fn name(&self) -> &'static str {
                match self {
                    $(Algorithm::$variant => $name,)*
                    Algorithm::Script => "script",
                }
            }

            /// What the algorithm does, in one line (`lockstep list`).
            pub fn about(&self) -> &'static str {
                match self {
                    $(Algorithm::$variant => $about,)*
                    Algorithm::Script => {
                        "described in the scenario file: command templates or Lua scripts, and knobs (see `lockstep list`)"
                    }
                }
            }

            /// Masters the standard exploration template gives the lock.
            pub fn standard_masters(&self) -> usize {
                match self {
                    $(Algorithm::$variant => <super::builtin::$spec as Preset>::STANDARD_MASTERS,)*
                    Algorithm::Script => 1,
                }
            }

            /// The settings `keys` describe for a TTL of `ttl_ms`, for a built-in algorithm
            /// (`None` for the script lock, which has a front end of its own).
            pub fn resolve(&self, keys: &LockKeys, ttl_ms: u64) -> Option<Result<AlgorithmSpec, KeyError>> {
                match self {
                    $(Algorithm::$variant => Some(<super::builtin::$spec as Preset>::resolve(keys, ttl_ms).map(AlgorithmSpec::$variant)),)*
                    Algorithm::Script => None,
                }
            }
        }

        /// An algorithm with its own settings.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(tag = "algorithm")]
        pub enum AlgorithmSpec {
            $(
                #[doc = $about]
                #[serde(rename = $name)]
                $variant(super::builtin::$spec),
            )*
            /// A lock described in the scenario file (see [`ScriptSpec`]).
            #[serde(rename = "script")]
            Script(Box<ScriptSpec>),
        }

        impl AlgorithmSpec {
            /// The algorithm, without its settings.
            pub fn kind(&self) -> Algorithm {
                match self {
                    $(AlgorithmSpec::$variant(_) => Algorithm::$variant,)*
                    AlgorithmSpec::Script(_) => Algorithm::Script,
                }
            }

            /// A built-in algorithm with its defaults for a TTL of `ttl_ms` ([`Preset::preset`])
            /// — what a scenario file that names it and sets nothing else gets. `None` for
            /// `script`, which needs its scripts.
            pub fn preset(algorithm: Algorithm, ttl_ms: u64) -> Option<AlgorithmSpec> {
                match algorithm {
                    $(Algorithm::$variant => Some(AlgorithmSpec::$variant(<super::builtin::$spec as Preset>::preset(ttl_ms))),)*
                    Algorithm::Script => None,
                }
            }

            /// What the lock promises over `masters` masters with a TTL of `ttl_ms`.
            pub fn claims(&self, ttl_ms: u64, masters: usize) -> LockClaims {
                match self {
                    $(AlgorithmSpec::$variant(spec) => spec.claims(ttl_ms, masters),)*
                    AlgorithmSpec::Script(script) => script.claims(ttl_ms, masters),
                }
            }

            /// Whether the lock renews its lease while the work runs.
            pub fn renews(&self) -> bool {
                match self {
                    $(AlgorithmSpec::$variant(spec) => spec.claims(0, 1).renewal_ms.is_some(),)*
                    AlgorithmSpec::Script(script) => script.renewal != super::script::Renewal::None,
                }
            }

            /// The same lock for a TTL of `ttl_ms` ([`Preset::at_ttl`]; a script lock unchanged).
            pub fn at_ttl(&mut self, ttl_ms: u64) {
                match self {
                    $(AlgorithmSpec::$variant(spec) => spec.at_ttl(ttl_ms),)*
                    AlgorithmSpec::Script(_) => {}
                }
            }

            /// The `[lock]` keys that give a built-in algorithm's settings back for a TTL of
            /// `ttl_ms` (`None` for the script lock, written by its own rules).
            pub fn written_keys(&self, ttl_ms: u64) -> Option<LockKeys> {
                let mut keys = LockKeys::written_defaults();
                match self {
                    $(AlgorithmSpec::$variant(spec) => spec.write(ttl_ms, &mut keys),)*
                    AlgorithmSpec::Script(_) => return None,
                }
                Some(keys)
            }
        }
    };
}
super::builtin::builtin_locks!(algorithms);

impl Algorithm {
    /// The algorithm of that name, if any.
    pub(crate) fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.iter().copied().find(|a| a.name() == name)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl AlgorithmSpec {
    /// The name as written in scenario files (`token-release`, ...).
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }
}

impl fmt::Display for AlgorithmSpec {
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

/// Where a Rust lock's own fencing tokens come from, as the lock declares it
/// (`lockstep::harness::Harness::tokens`; `[lock] rust_tokens` in a file it wrote). The lock's
/// grants carry the tokens themselves ([`Grant::fencing_token`](super::Grant)); lockstep adds
/// none (unlike `fencing = "incr"`). What the assumptions a plan is classified by need to know:
/// which fault can make the tokens repeat (docs/assumptions.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum LockTokens {
    /// A counter on the lock's fencing master (`[lock] fencing_master`, the first master by
    /// default), incremented by the lock's own acquisition: a stop that loses that master's
    /// latest writes (its persistence says which) or a failover makes tokens repeat — the
    /// lease's limit, not the lock's bug.
    Counter,
    /// A source no fault of the simulation makes repeat (a durable store outside the masters,
    /// a monotonic source): a repeated or decreasing token is always the lock's bug.
    Durable,
}

impl LockTokens {
    /// `counter` or `durable`.
    pub fn name(&self) -> &'static str {
        match self {
            LockTokens::Counter => "counter",
            LockTokens::Durable => "durable",
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
    /// Where the Rust lock's own fencing tokens come from, when it declared it issues them
    /// (`None`: it issues none, or did not say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rust_tokens: Option<LockTokens>,
    /// The clock-drift factor the Rust lock's validity computation allows for (as Redlock's
    /// `drift_factor`: it subtracts `factor × ttl + 2 ms`), when it declared one: the
    /// assumptions then use it in place of the template algorithm's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rust_drift_factor: Option<f64>,
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
