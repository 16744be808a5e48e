//! Lock algorithms: the [`LockClient`] trait users implement, and the built-in algorithms.
//!
//! A lock client runs inside a simulated client node. It is built from a [`LockEnv`]: the
//! node's own clocks, sleeps and timeouts on local time, its seeded random stream, and
//! reconnecting redis-rs connections to the simulated masters ([`RedisLink`]) — never true time,
//! the pause gate or the history. It does not record anything itself: the workload wraps every
//! call in the history's invoke/ok/fail/info events (see `crate::ops`), so a user-written lock
//! is judged exactly like the built-in ones.
//!
//! Built-ins, one file each: [`naive`] (SET NX PX, release by plain DEL), [`token_release`]
//! (release by a Lua compare-and-delete), [`watchdog`] (token-release plus automatic extension),
//! [`redlock`] (N independent masters), and [`script`]: a lock described in the scenario file
//! (command templates or Lua scripts and the knobs real libraries differ on). Fencing (`fencing = "incr"`) wraps any of them: see
//! [`fencing`]. [`using::using`] holds a lock for the length of a routine with automatic
//! extension and an abort signal, like node-redlock's `using()`.

mod env;
pub mod fencing;
pub mod script;
pub mod using;

/// [`crate::model::RenewalAfterRelease`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::model::RenewalAfterRelease`; removed in 0.3.0"
)]
pub type RenewalAfterRelease = crate::model::RenewalAfterRelease;
use crate::model::{AlgorithmSpec, Fencing, Grant, LockSpec};
use async_trait::async_trait;
pub use env::LockEnv;
use lockstep_sim::{LinkError, RedisLink};
use rand::RngCore;
use std::rc::Rc;

/// The Lua compare-and-delete that releases a lock only if it still holds our value.
pub const RELEASE_SCRIPT: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;

/// The Lua compare-and-PEXPIRE that extends a lock only if it still holds our value.
pub const EXTEND_SCRIPT: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#;

/// Why a lock operation did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// Another client holds the lock; we certainly do not.
    #[error("lock is busy")]
    Busy,
    /// The lock is not ours (any more): an extension or release found another value or none.
    #[error("lock lost: {0}")]
    Lost(String),
    /// The operation certainly had no effect (e.g. no connection could be made).
    #[error("failed: {0}")]
    Failed(String),
    /// The operation may or may not have taken effect (a timeout after sending).
    #[error("outcome unknown: {0}")]
    Unknown(String),
}

impl From<LinkError> for LockError {
    fn from(e: LinkError) -> Self {
        if e.outcome_unknown() {
            LockError::Unknown(e.to_string())
        } else {
            LockError::Failed(e.to_string())
        }
    }
}

impl LockError {
    /// Whether the operation may have taken effect (recorded as `info`, not `fail`).
    pub(crate) fn outcome_unknown(&self) -> bool {
        matches!(self, LockError::Unknown(_))
    }
}

impl crate::ops::OpFailure for LockError {
    fn outcome_unknown(&self) -> bool {
        LockError::outcome_unknown(self)
    }
}

/// How a lock is kept alive while the work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoExtend {
    /// Extend every `interval_ms` (a watchdog).
    Every {
        /// The period, by the client's clock.
        interval_ms: u64,
    },
    /// Extend when less than `threshold_ms` of validity is left (node-redlock's `using()`).
    BeforeExpiry {
        /// The margin, by the client's clock.
        threshold_ms: u64,
    },
}

/// A distributed lock algorithm, as seen by the workload. Implement it to test your own lock.
///
/// Methods take `&self`: a client may be extended by a background task while the workload
/// holds it; use `RefCell` for state. Nothing here is `Send`: a simulation runs on one thread.
#[async_trait(?Send)]
pub trait LockClient {
    /// Tries once (or as the algorithm's own retry policy says) to take `key` for `ttl_ms`.
    async fn acquire(&self, key: &str, ttl_ms: u64) -> Result<Grant, LockError>;
    /// Extends `grant` to `ttl_ms` from now; returns the grant with its new validity.
    async fn extend(&self, grant: &Grant, ttl_ms: u64) -> Result<Grant, LockError>;
    /// Gives `grant` up. `Ok(true)` if a key was deleted.
    async fn release(&self, grant: &Grant) -> Result<bool, LockError>;
    /// The value this lock sends to the masters to extend or release `grant`: the grant's own
    /// (the default), or, for a lock object that keeps one value for every acquisition, the
    /// value it holds now. The workload records it when it differs, so a release with another
    /// grant's value shows in the history.
    fn value_sent(&self, grant: &Grant) -> String {
        grant.value.clone()
    }
    /// Whether the workload should keep the lock alive automatically while the work runs.
    fn auto_extend(&self) -> Option<AutoExtend> {
        None
    }
    /// Whether the workload should keep `grant` alive while the work runs: by default what
    /// [`auto_extend`](Self::auto_extend) says for every grant. A lock that arms its renewal for
    /// some grants only (the script lock's `renew_grants = "first-attempt"`: not for a grant a
    /// retry took) answers per grant.
    fn auto_extend_for(&self, grant: &Grant) -> Option<AutoExtend> {
        let _ = grant;
        self.auto_extend()
    }
    /// What a failed automatic extension does to the work (by default: abort it).
    fn on_extend_failure(&self) -> ExtendFailure {
        ExtendFailure::Abort
    }
    /// What becomes of a renewal already armed when the holder stops the renewal to release
    /// the lock (by default it is cancelled: nothing is sent after the release).
    fn renewal_after_release(&self) -> crate::model::RenewalAfterRelease {
        crate::model::RenewalAfterRelease::Cancelled
    }
    /// How many concurrent tasks of the client run the workload loop with this lock (1 by
    /// default).
    fn tasks(&self) -> u32 {
        1
    }
    /// The lock object another task of the client uses: `None` (the default) shares this one.
    fn task_lock(&self) -> Option<Rc<dyn LockClient>> {
        None
    }
}

/// What a failed automatic extension does to the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExtendFailure {
    /// Raise the abort signal: the work stops before its next write (node-redlock's
    /// `signal.aborted`).
    #[default]
    Abort,
    /// Ignore it: extension stops and the work goes on, writes included.
    KeepWorking,
    /// Say nothing and keep the schedule: after an error (a timeout, no connection) the next
    /// extension comes on time, with the last grant that was confirmed; an extension refused
    /// because the lock is not ours any more ([`LockError::Lost`]) ends the schedule. The work
    /// goes on, writes included.
    KeepSchedule,
}

/// A fresh random lock value (20 bytes as hex) from the node's seeded stream.
pub fn random_value(env: &LockEnv) -> String {
    let mut bytes = [0u8; 20];
    env.rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// A built-in algorithm's client, built from its settings: implemented in the algorithm's file
/// (`crate::lock::<module>`) for its settings type (`crate::model::builtin`).
pub trait BuildClient {
    /// The client for one node.
    fn build_client(&self, env: LockEnv) -> Rc<dyn LockClient>;
}

/// Declares the built-in algorithms' client modules and builds their clients, from the
/// registry (`crate::model::builtin`).
macro_rules! clients {
    ($($module:ident $variant:ident $spec:ident $name:literal $about:literal,)*) => {
        $(
            #[doc = $about]
            pub mod $module;
        )*

        /// Builds the algorithm `spec` names for one client (without fencing: see
        /// `with_fencing`, which the runner applies to built-in and user-written locks alike).
        pub fn build(spec: &LockSpec, env: LockEnv) -> Rc<dyn LockClient> {
            match &spec.algorithm {
                $(AlgorithmSpec::$variant(settings) => settings.build_client(env),)*
                AlgorithmSpec::Script(settings) => Rc::new(script::ScriptLock::new(env, Rc::new((**settings).clone()))),
            }
        }
    };
}
crate::model::builtin::builtin_locks!(clients);

/// Wraps `inner` with INCR fencing tokens when `spec` asks for `fencing = "incr"`.
pub(crate) fn with_fencing(spec: &LockSpec, env: &LockEnv, inner: Rc<dyn LockClient>) -> Rc<dyn LockClient> {
    match (spec.fencing, env.fencing_link()) {
        (Fencing::Incr, Some(link)) => Rc::new(fencing::IncrFencing::new(inner, link.clone())),
        _ => inner,
    }
}

/// The random value, ttl and validity arithmetic shared by the single-master algorithms.
pub(crate) mod single {
    use super::*;

    /// The master a single-master algorithm uses: the first one.
    pub(crate) fn first_master(env: &LockEnv) -> Result<&RedisLink, LockError> {
        env.masters()
            .first()
            .ok_or_else(|| LockError::Failed("no master configured".into()))
    }

    /// `SET key value NX PX ttl` on `link`; a grant when the reply is OK.
    pub async fn set_nx(link: &RedisLink, env: &LockEnv, key: &str, ttl_ms: u64) -> Result<Grant, LockError> {
        let value = random_value(env);
        let start_ms = env.monotonic_ms();
        let reply: Option<String> = link
            .query(redis::cmd("SET").arg(key).arg(&value).arg("NX").arg("PX").arg(ttl_ms))
            .await?;
        match reply {
            Some(_) => {
                let now_ms = env.monotonic_ms();
                let elapsed_ms = (now_ms - start_ms).max(0) as u64;
                let grant = Grant {
                    key: key.to_string(),
                    value,
                    fencing_token: None,
                    validity_ms: ttl_ms.saturating_sub(elapsed_ms),
                    validity_from_ms: Some(now_ms),
                };
                if grant.validity_ms == 0 {
                    // The lease ran out while the reply travelled: not a grant. Give back what
                    // was taken (best effort: the key has most likely expired already).
                    let _ = release_checked(link, &grant).await;
                    return Err(LockError::Failed(format!(
                        "validity ran out: the SET took {elapsed_ms} ms of the {ttl_ms} ms TTL"
                    )));
                }
                Ok(grant)
            }
            None => Err(LockError::Busy),
        }
    }

    /// Runs a compare-and-X script for `grant` with EVAL; returns the script's integer reply.
    ///
    /// EVAL rather than EVALSHA-then-EVAL: a request delayed in the network must carry the whole
    /// script, or a `NOSCRIPT` reply to a stale EVALSHA would make a release look safe for the
    /// wrong reason.
    pub async fn script(
        link: &RedisLink,
        source: &'static str,
        grant: &Grant,
        extra_arg: Option<u64>,
    ) -> Result<i64, LockError> {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(source).arg(1).arg(&grant.key).arg(&grant.value);
        if let Some(extra) = extra_arg {
            cmd.arg(extra);
        }
        Ok(link.query::<i64>(&cmd).await?)
    }

    /// Extends `grant` with the compare-and-PEXPIRE script.
    pub async fn extend_checked(
        link: &RedisLink,
        env: &LockEnv,
        grant: &Grant,
        ttl_ms: u64,
    ) -> Result<Grant, LockError> {
        let start_ms = env.monotonic_ms();
        match script(link, EXTEND_SCRIPT, grant, Some(ttl_ms)).await? {
            1 => {
                let now_ms = env.monotonic_ms();
                let elapsed_ms = (now_ms - start_ms).max(0) as u64;
                let validity_ms = ttl_ms.saturating_sub(elapsed_ms);
                if validity_ms == 0 {
                    return Err(LockError::Lost(format!(
                        "validity ran out: the extension took {elapsed_ms} ms of the {ttl_ms} ms TTL"
                    )));
                }
                Ok(Grant {
                    validity_ms,
                    validity_from_ms: Some(now_ms),
                    ..grant.clone()
                })
            }
            _ => Err(LockError::Lost(format!("{} no longer holds our value", link.host()))),
        }
    }

    /// Releases `grant` with the compare-and-delete script.
    pub async fn release_checked(link: &RedisLink, grant: &Grant) -> Result<bool, LockError> {
        Ok(script(link, RELEASE_SCRIPT, grant, None).await? == 1)
    }
}
