//! The script lock (`algorithm = "script"`): a lock algorithm written in the scenario file —
//! acquire, extend and release as Redis command templates or Lua scripts, and the knobs that
//! real lock libraries differ on (value policy, quorum, validity arithmetic, retries, renewal,
//! unlock on failure). Plain data: the scenario front end fills it in (scripts already read from
//! their files and syntax-checked), `crate::lock::script` runs it.

use serde::Serialize;

use super::clock::ClockKind;

/// The placeholders a command template, a script's `keys` or its `args` may contain, with what
/// each becomes. `{{` and `}}` stand for literal braces.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("{key}", "the lock's key"),
    ("{value}", "the lock value of this acquisition (see `value`)"),
    ("{ttl_ms}", "the TTL asked for, ms"),
    (
        "{token}",
        "the grant's fencing token, or empty without one (extend and release only: tokens are taken after the grant)",
    ),
    ("{client}", "the client node's name"),
    (
        "{now_ms}",
        "the client's own wall-clock reading when the step is sent, ms since the Unix epoch (a lock that judges expiry on the client's clock)",
    ),
];

/// The default release: a compare-and-delete (`KEYS[1]` = key, `ARGV[1]` = value).
pub(crate) const RELEASE_LUA: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;

/// The default extension: a compare-and-PEXPIRE (`ARGV[2]` = TTL, ms).
pub(crate) const EXTEND_LUA: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#;

/// The script lock's settings (every default resolved).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScriptSpec {
    /// Takes the lock on one master.
    pub acquire: ScriptOp,
    /// Extends it on one master.
    pub extend: ScriptOp,
    /// Gives it up on one master.
    pub release: ScriptOp,
    /// Where lock values come from.
    pub value: ValuePolicy,
    /// Where the lock object keeps the value it extends and releases with.
    pub value_storage: ValueStorage,
    /// How many masters the lock uses: the first `masters` of the topology (≥ 1).
    pub masters: usize,
    /// How many of them must succeed (1 ≤ quorum ≤ masters).
    pub quorum: usize,
    /// How the client computes the validity of a grant.
    pub validity: ValidityPolicy,
    /// Clock drift allowance as a fraction of the TTL, in [0, 1) (2 ms are added).
    pub drift_factor: f64,
    /// Which clock times the acquisition.
    pub clock: ClockKind,
    /// Refuse an acquisition whose validity is not positive (the post-quorum re-check; the
    /// `acquire_recheck` key, or `validity_recheck` for both operations).
    pub validity_recheck: bool,
    /// Refuse an extension whose validity is not positive, when it differs from
    /// [`validity_recheck`](Self::validity_recheck) (`None`: the same; the `extend_recheck` key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extend_recheck: Option<bool>,
    /// Where a retried acquisition counts its elapsed time from.
    #[serde(skip_serializing_if = "ValidityFrom::is_this_attempt")]
    pub validity_from: ValidityFrom,
    /// Which grants the renewal is armed for: every grant, or only those taken on the acquire
    /// call's first attempt.
    #[serde(skip_serializing_if = "RenewGrants::is_all")]
    pub renew_grants: RenewGrants,
    /// What stopping the renewal at the release does to a renewal already armed.
    #[serde(skip_serializing_if = "RenewalAfterRelease::is_cancelled")]
    pub renewal_after_release: RenewalAfterRelease,
    /// How `ttl − elapsed − drift` is computed.
    pub validity_arithmetic: Arithmetic,
    /// Retries of a failed acquisition inside one acquire call; −1 retries forever.
    pub retry_count: i64,
    /// Delay between acquisition attempts, ms.
    pub retry_delay_ms: u64,
    /// Upper bound of a random extra delay, ms (0: none, and no random draw).
    pub retry_jitter_ms: u64,
    /// Whether and when the lock is renewed while the work runs.
    pub renewal: Renewal,
    /// What a failed renewal does to the work.
    pub on_renew_failure: OnRenewFailure,
    /// After a failed acquisition attempt, release on every master (so partial locks do not
    /// linger until their TTL).
    pub unlock_on_failure: bool,
    /// Concurrent tasks per client running the workload loop (≥ 1).
    pub tasks: u32,
    /// With several tasks: they share this one lock object (else each gets its own).
    pub share_lock_object: bool,
    /// How a failed attempt waits for the next one: a plain sleep (the default), or a wait
    /// that a signal from the releasing client ends early.
    #[serde(skip_serializing_if = "Wait::is_sleep")]
    pub wait: Wait,
}

/// How a failed acquisition attempt waits before the next one. The wait lasts at most
/// `retry_delay_ms` + jitter in every case; a signal ends it early.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Wait {
    /// Sleep (polling).
    Sleep,
    /// `BLPOP list timeout` on the lock's first master, over a connection of its own: a push
    /// onto the list (by the release script) wakes the waiter (python-redis-lock).
    Blpop {
        /// The list, a template (placeholders as in commands).
        list: String,
    },
    /// `SUBSCRIBE channel` on the lock's first master, over a connection of its own held for the
    /// whole acquire call: a message (published by the release script) wakes the waiter
    /// (Redisson's unlock notification). The attempt right after subscribing runs at once, so a
    /// release between the failed attempt and the subscription is not missed.
    Subscribe {
        /// The channel, a template.
        channel: String,
    },
}

impl Wait {
    /// Whether this is the default (a plain sleep).
    fn is_sleep(&self) -> bool {
        matches!(self, Wait::Sleep)
    }

    /// The name in scenario files (`wait = ...`).
    pub fn name(&self) -> &'static str {
        match self {
            Wait::Sleep => "sleep",
            Wait::Blpop { .. } => "blpop",
            Wait::Subscribe { .. } => "subscribe",
        }
    }
}

/// One lock operation on one master: steps run in order, each must succeed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScriptOp {
    /// The steps (at least one).
    pub steps: Vec<ScriptStep>,
    /// Retries of the whole operation after an unknown outcome (a timeout).
    pub retries: u32,
    /// Delay before such a retry, ms.
    pub retry_delay_ms: u64,
}

/// One round trip: a command or a script, and the reply that counts as success.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScriptStep {
    /// What is sent.
    pub action: ScriptAction,
    /// The reply that counts as success.
    pub success: Success,
}

/// What a step sends.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScriptAction {
    /// A command template: each word may hold placeholders.
    Command(Vec<String>),
    /// A Lua script sent with EVAL (the whole source every time).
    Lua {
        /// The script's source.
        source: String,
        /// `KEYS`, templates.
        keys: Vec<String>,
        /// `ARGV`, templates.
        args: Vec<String>,
    },
}

/// The reply that counts as success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Success {
    /// `+OK`.
    Ok,
    /// Anything but nil.
    NonNil,
    /// Nil.
    Nil,
    /// The integer 1.
    One,
    /// An integer above 0.
    Positive,
    /// Any reply that is not an error.
    Any,
    /// A string equal to the lock value (`GET` finding our own value).
    Value,
    /// An integer above 0 that becomes the grant's fencing token (acquire only): a script that
    /// takes the lock and increments a counter in one step issues the token inside the lock.
    Token,
}

impl Success {
    /// Every kind, with its name in scenario files.
    pub const ALL: [(Success, &'static str); 8] = [
        (Success::Ok, "ok"),
        (Success::NonNil, "non-nil"),
        (Success::Nil, "nil"),
        (Success::One, "one"),
        (Success::Positive, "positive"),
        (Success::Any, "any"),
        (Success::Value, "value"),
        (Success::Token, "token"),
    ];

    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        Success::ALL
            .iter()
            .find(|(s, _)| s == self)
            .map_or("any", |(_, name)| name)
    }

    /// The kind of that name.
    pub(crate) fn from_name(name: &str) -> Option<Success> {
        Success::ALL.iter().find(|(_, n)| *n == name).map(|(s, _)| *s)
    }
}

impl ScriptSpec {
    /// Whether an extension whose validity is not positive is refused.
    pub fn extend_rechecks(&self) -> bool {
        self.extend_recheck.unwrap_or(self.validity_recheck)
    }

    /// Whether the acquire operation issues the grant's fencing token (a step whose success
    /// reply is `token`).
    pub fn issues_tokens(&self) -> bool {
        self.acquire.steps.iter().any(|s| s.success == Success::Token)
    }

    /// What the described lock promises over `masters` masters with a TTL of `ttl_ms`: its
    /// drift allowance and re-check when it computes `ttl − elapsed − drift`, the masters it
    /// uses, and its renewal.
    pub fn claims(&self, ttl_ms: u64, masters: usize) -> super::builtin::LockClaims {
        let drift = self.validity == ValidityPolicy::TtlMinusDrift;
        super::builtin::LockClaims {
            drift_factor: if drift { self.drift_factor } else { 0.0 },
            refuses_slow_rounds: drift && self.validity_recheck,
            computes_validity: self.validity != ValidityPolicy::None,
            masters_used: (self.masters.min(masters)).max(1),
            renewal_ms: match self.renewal {
                Renewal::Every { interval_ms } => Some(interval_ms),
                // Renewed when less than the threshold is left: a turn is at most the TTL less
                // the threshold (the validity is never more than the TTL).
                Renewal::BeforeExpiry { threshold_ms } => Some(ttl_ms.saturating_sub(threshold_ms)),
                Renewal::None => None,
            },
            release_unsafe: false,
        }
    }
}

/// Where lock values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValuePolicy {
    /// 20 fresh random bytes (hex) per acquisition from the client's seeded stream.
    Random,
    /// The client's name, the same for every acquisition (a host or process id).
    PerClient,
}

impl ValuePolicy {
    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            ValuePolicy::Random => "random",
            ValuePolicy::PerClient => "per-client",
        }
    }
}

/// Where the lock object keeps the value it extends and releases with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValueStorage {
    /// With each grant: a task extends and releases its own acquisition.
    Grant,
    /// In the lock object, overwritten by each acquisition: tasks sharing the object see the
    /// latest value, not their own.
    LockObject,
}

impl ValueStorage {
    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            ValueStorage::Grant => "grant",
            ValueStorage::LockObject => "lock-object",
        }
    }
}

/// How the client computes a grant's validity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValidityPolicy {
    /// None: the grant claims the whole TTL and nothing is re-checked.
    None,
    /// `ttl − elapsed − (drift_factor × ttl + 2 ms)`, elapsed on `clock`.
    TtlMinusDrift,
}

impl ValidityPolicy {
    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            ValidityPolicy::None => "none",
            ValidityPolicy::TtlMinusDrift => "ttl-minus-drift",
        }
    }
}

/// How the validity arithmetic treats a result below zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arithmetic {
    /// Signed: a negative validity stays negative (and the re-check refuses it).
    Signed,
    /// Unsigned and wrapping: a negative validity becomes a huge positive one.
    Wrapping,
}

impl Arithmetic {
    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            Arithmetic::Signed => "signed",
            Arithmetic::Wrapping => "wrapping",
        }
    }
}

/// Whether and when the lock is renewed while the work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Renewal {
    /// Never.
    None,
    /// Every `interval_ms` by the client's clock (a watchdog).
    Every {
        /// The period, ms (0 < period < TTL).
        interval_ms: u64,
    },
    /// When less than `threshold_ms` of validity is left.
    BeforeExpiry {
        /// The margin, ms (< TTL).
        threshold_ms: u64,
    },
}

impl Renewal {
    /// The name in scenario files (`renew = ...`).
    pub fn name(&self) -> &'static str {
        match self {
            Renewal::None => "none",
            Renewal::Every { .. } => "every",
            Renewal::BeforeExpiry { .. } => "before-expiry",
        }
    }
}

/// What a failed renewal does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnRenewFailure {
    /// Raise the abort signal: the work stops before its next write.
    Abort,
    /// Ignore it: renewal stops, the work goes on and writes.
    KeepWorking,
    /// Keep the renewal schedule without telling the holder: after an error the next renewal comes
    /// on time (with the last grant that was confirmed); a renewal refused because the lock is not
    /// ours any more ends it (Redisson's watchdog). The work goes on and writes.
    KeepSchedule,
}

impl OnRenewFailure {
    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            OnRenewFailure::Abort => "abort",
            OnRenewFailure::KeepWorking => "keep-working",
            OnRenewFailure::KeepSchedule => "keep-schedule",
        }
    }
}

/// Where a retried acquisition counts the elapsed time of its validity from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValidityFrom {
    /// The start of the attempt that reached the quorum (the Redlock algorithm).
    #[default]
    ThisAttempt,
    /// The start of the acquire call's first attempt: after retries the lock counts the time of
    /// the earlier, failed attempts against a lease it has just taken, and may call a fresh lock
    /// expired (node-redlock #169/#299).
    FirstAttempt,
}

impl ValidityFrom {
    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            ValidityFrom::ThisAttempt => "this-attempt",
            ValidityFrom::FirstAttempt => "first-attempt",
        }
    }

    fn is_this_attempt(&self) -> bool {
        *self == ValidityFrom::ThisAttempt
    }
}

/// Which grants the lock arms its renewal for (`renew_grants`, with `renew`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RenewGrants {
    /// Every grant, whichever attempt of the acquire call took it.
    #[default]
    All,
    /// Only a grant taken on the acquire call's first attempt: a grant taken by a retry (after
    /// another client held the lock) is never renewed, so a critical section longer than the
    /// TTL outlives it (a lock library that arms its renewal in the first attempt's success
    /// path only).
    FirstAttempt,
}

impl RenewGrants {
    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            RenewGrants::All => "all",
            RenewGrants::FirstAttempt => "first-attempt",
        }
    }

    fn is_all(&self) -> bool {
        *self == RenewGrants::All
    }
}

/// What becomes of a renewal already armed (its timer set) when the holder stops the renewal to
/// release the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RenewalAfterRelease {
    /// Stopping cancels it (nothing is sent after the release).
    #[default]
    Cancelled,
    /// It still runs, after the release; its failure is not reported (the lock knows it was
    /// released: redis-semaphore's fix, #206).
    RunsQuietly,
    /// It still runs, after the release, and its failure — the key is gone — is reported to the
    /// holder as a lost lock (redis-semaphore #205).
    RunsAndReports,
}

impl RenewalAfterRelease {
    /// The name in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            RenewalAfterRelease::Cancelled => "cancelled",
            RenewalAfterRelease::RunsQuietly => "runs-quietly",
            RenewalAfterRelease::RunsAndReports => "runs-and-reports",
        }
    }

    fn is_cancelled(&self) -> bool {
        *self == RenewalAfterRelease::Cancelled
    }
}
