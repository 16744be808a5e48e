//! The file as written: serde structures with every optional key optional, before defaults and
//! validation. Unknown keys are rejected here.

use crate::model::{
    Algorithm, Arithmetic, ClockKind, ExploreExpect, Fencing, OnRenewFailure, RenewGrants, RenewalAfterRelease,
    ValidityFrom, ValidityPolicy, ValuePolicy, ValueStorage, Verdict, WorkMs,
};
use lockstep_sim::{DelayClock, FencingMode, Persistence};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub name: Option<String>,
    pub description: Option<String>,
    pub seed: Option<SeedValue>,
    pub duration_ms: Option<u64>,
    pub tick_ms: Option<u64>,
    pub history_events_max: Option<u64>,
    pub history_bytes_max: Option<u64>,
    pub network: Option<RawNetwork>,
    pub topology: Option<RawTopology>,
    pub lock: Option<RawLock>,
    pub workload: Option<RawWorkload>,
    pub client: Option<Vec<RawClient>>,
    /// Checked table by table in `resolve`, so errors name the fault's own keys.
    pub fault: Option<Vec<toml::Table>>,
    pub expect: Option<BTreeMap<String, Verdict>>,
    pub explore: Option<RawExplore>,
    pub compare_with: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExplore {
    pub seeds: Option<u64>,
    pub kinds: Option<Vec<String>>,
    pub faults_max: Option<u64>,
    pub lock_aware: Option<bool>,
    pub strategy: Option<String>,
    pub expect: Option<BTreeMap<String, ExploreExpect>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNetwork {
    pub min_latency_ms: Option<u64>,
    pub max_latency_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTopology {
    pub masters: Option<u64>,
    pub master: Option<Vec<RawNode>>,
    pub clients: Option<u64>,
    pub resource: Option<FencingMode>,
    /// Deployment defaults for every master (see `RawDeployment`).
    pub persistence: Option<Persistence>,
    pub restart_delay_ms: Option<u64>,
    pub restart_delay_clock: Option<DelayClock>,
    pub replicas: Option<u32>,
    pub replica_offset_ms: Option<i64>,
    pub replication_lag_ms: Option<u64>,
    pub failover_after_ms: Option<u64>,
}

/// A master's deployment keys as written, on `[topology]` (defaults) or on one
/// `[[topology.master]]` (overrides).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct RawDeployment {
    pub persistence: Option<Persistence>,
    pub restart_delay_ms: Option<u64>,
    pub restart_delay_clock: Option<DelayClock>,
    pub replicas: Option<u32>,
    pub replica_offset_ms: Option<i64>,
    pub replication_lag_ms: Option<u64>,
    pub failover_after_ms: Option<u64>,
}

impl RawTopology {
    pub fn deployment(&self) -> RawDeployment {
        RawDeployment {
            persistence: self.persistence,
            restart_delay_ms: self.restart_delay_ms,
            restart_delay_clock: self.restart_delay_clock,
            replicas: self.replicas,
            replica_offset_ms: self.replica_offset_ms,
            replication_lag_ms: self.replication_lag_ms,
            failover_after_ms: self.failover_after_ms,
        }
    }
}

impl RawNode {
    pub fn deployment(&self) -> RawDeployment {
        RawDeployment {
            persistence: self.persistence,
            restart_delay_ms: self.restart_delay_ms,
            restart_delay_clock: self.restart_delay_clock,
            replicas: self.replicas,
            replica_offset_ms: self.replica_offset_ms,
            replication_lag_ms: self.replication_lag_ms,
            failover_after_ms: self.failover_after_ms,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNode {
    pub name: String,
    pub offset_ms: Option<i64>,
    pub drift_ppm: Option<i64>,
    pub persistence: Option<Persistence>,
    pub restart_delay_ms: Option<u64>,
    pub restart_delay_clock: Option<DelayClock>,
    pub replicas: Option<u32>,
    pub replica_offset_ms: Option<i64>,
    pub replication_lag_ms: Option<u64>,
    pub failover_after_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLock {
    pub algorithm: Algorithm,
    pub rust_lock: Option<String>,
    pub rust_tokens: Option<crate::model::LockTokens>,
    pub rust_drift_factor: Option<f64>,
    pub key: Option<String>,
    pub ttl_ms: Option<u64>,
    pub fencing: Option<Fencing>,
    pub fencing_master: Option<String>,
    pub request_timeout_ms: Option<u64>,
    pub connect_timeout_ms: Option<u64>,
    pub retry_count: Option<i64>,
    pub retry_delay_ms: Option<u64>,
    pub retry_jitter_ms: Option<u64>,
    pub drift_factor: Option<f64>,
    pub clock: Option<ClockKind>,
    pub extend_every_ms: Option<u64>,
    pub auto_extend: Option<bool>,
    pub extension_threshold_ms: Option<u64>,
    // The script lock's own keys (`algorithm = "script"`).
    pub masters: Option<u64>,
    pub quorum: Option<u64>,
    pub value: Option<ValuePolicy>,
    pub value_storage: Option<ValueStorage>,
    pub validity: Option<ValidityPolicy>,
    pub validity_recheck: Option<bool>,
    pub acquire_recheck: Option<bool>,
    pub extend_recheck: Option<bool>,
    pub validity_from: Option<ValidityFrom>,
    pub renewal_after_release: Option<RenewalAfterRelease>,
    pub renew_grants: Option<RenewGrants>,
    pub validity_arithmetic: Option<Arithmetic>,
    pub renew: Option<String>,
    pub on_renew_failure: Option<OnRenewFailure>,
    pub unlock_on_failure: Option<bool>,
    pub tasks: Option<u32>,
    pub share_lock_object: Option<bool>,
    pub wait: Option<String>,
    pub wait_key: Option<String>,
    pub acquire: Option<RawScriptOp>,
    pub extend: Option<RawScriptOp>,
    pub release: Option<RawScriptOp>,
}

/// One step of a script-lock operation as written: exactly one of `command`, `lua`, `lua_file`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScriptStep {
    pub command: Option<Vec<String>>,
    pub lua: Option<String>,
    pub lua_file: Option<String>,
    pub keys: Option<Vec<String>>,
    pub args: Option<Vec<String>>,
    pub success: Option<String>,
}

/// A script-lock operation (`[lock.acquire]`, `[lock.extend]`, `[lock.release]`): one step
/// written in the table itself, or `steps`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScriptOp {
    pub command: Option<Vec<String>>,
    pub lua: Option<String>,
    pub lua_file: Option<String>,
    pub keys: Option<Vec<String>>,
    pub args: Option<Vec<String>>,
    pub success: Option<String>,
    pub steps: Option<Vec<RawScriptStep>>,
    pub retries: Option<u32>,
    pub retry_delay_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub key: Option<String>,
    pub iterations: Option<u64>,
    pub until_ms: Option<u64>,
    pub work_ms: Option<WorkMs>,
    pub acquire_retry_ms: Option<u64>,
    pub think_ms: Option<u64>,
    pub resource_timeout_ms: Option<u64>,
    pub work: Option<RawWorkMode>,
    pub validity_margin_ms: Option<u64>,
    pub refuse_write_after_validity: Option<bool>,
    pub reads_per_turn: Option<u32>,
    pub writes_per_turn: Option<u32>,
    pub tasks: Option<u32>,
    pub share_lock_object: Option<bool>,
}

/// `work = ...` in `[workload]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum RawWorkMode {
    Fixed,
    UntilValidity,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClient {
    pub name: String,
    pub start_ms: Option<u64>,
    pub offset_ms: Option<i64>,
    pub drift_ppm: Option<i64>,
    pub iterations: Option<u64>,
    pub work_ms: Option<WorkMs>,
    pub tasks: Option<u32>,
}

/// A seed: a non-negative TOML integer, or a decimal string for seeds above `i64::MAX`.
#[derive(Debug, Clone, Copy)]
pub(super) struct SeedValue(pub u64);

impl<'de> Deserialize<'de> for SeedValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = SeedValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer, or a decimal string of one up to 18446744073709551615")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SeedValue, E> {
                Ok(SeedValue(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SeedValue, E> {
                u64::try_from(v)
                    .map(SeedValue)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SeedValue, E> {
                if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                    if let Ok(seed) = v.parse() {
                        return Ok(SeedValue(seed));
                    }
                }
                Err(E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}
