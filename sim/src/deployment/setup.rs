//! The settings of one master's deployment: persistence, restart policy, replicas, failover.
//! What each setting does is in the docs of [`crate::deployment`].

use crate::clock::ClockSpec;
use lockstep_redis::Keyspace;
use serde::{Deserialize, Serialize};

/// How a master persists its writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Persistence {
    /// No persistence: every stop loses everything.
    #[default]
    None,
    /// AOF with `appendfsync everysec`: a power loss loses the writes since the last fsync.
    AofEverysec,
    /// AOF with `appendfsync always`: nothing acknowledged is lost.
    AofAlways,
}

impl Persistence {
    /// Every mode.
    pub const ALL: [Persistence; 3] = [Persistence::None, Persistence::AofEverysec, Persistence::AofAlways];

    /// The name as written in scenario files.
    pub fn name(&self) -> &'static str {
        match self {
            Persistence::None => "none",
            Persistence::AofEverysec => "aof-everysec",
            Persistence::AofAlways => "aof-always",
        }
    }

    /// The keyspace a server restarts with after stopping by `stop`, given what it held when it
    /// stopped (`live`) and what its last once-a-second fsync wrote (`synced`): nothing without
    /// persistence; with `aof-everysec`, the synced keyspace after a power loss and everything
    /// otherwise (a crashed process's unsynced writes are still in the machine's page cache, a
    /// clean shutdown fsyncs); with `aof-always`, everything. The one rule every host of
    /// lockstep's Redis applies: the simulation, live and serve runs, turmoil hosts.
    pub fn kept_after(self, stop: StopKind, live: &Keyspace, synced: &Keyspace) -> Keyspace {
        match (self, stop) {
            (Persistence::None, _) => Keyspace::new(),
            (Persistence::AofEverysec, StopKind::PowerLoss) => synced.clone(),
            (Persistence::AofEverysec | Persistence::AofAlways, _) => live.clone(),
        }
    }
}

/// How a server process stops; what survives it is [`Persistence::kept_after`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopKind {
    /// The process dies; the machine keeps its page cache.
    Crash,
    /// The machine loses power: AOF writes not yet fsynced are lost too.
    PowerLoss,
    /// A clean stop.
    Shutdown,
}

/// The clock a delayed restart is timed by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DelayClock {
    /// The node's monotonic clock (never jumps).
    #[default]
    Monotonic,
    /// The node's wall clock (a jump forward cuts the delay short).
    Wall,
}

impl DelayClock {
    /// `monotonic` or `wall`.
    pub fn name(&self) -> &'static str {
        match self {
            DelayClock::Monotonic => "monotonic",
            DelayClock::Wall => "wall",
        }
    }
}

/// One master's deployment: its clock, persistence, restart policy, replicas and failover.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MasterSetup {
    /// The master's clock.
    pub clock: ClockSpec,
    /// How it persists writes (its replicas use the same mode).
    pub persistence: Persistence,
    /// After a stop, a restart waits until this many ms have passed since the stop; 0: none.
    pub restart_delay_ms: u64,
    /// The clock that times the restart delay.
    pub restart_delay_clock: DelayClock,
    /// How many replicas (named `<master>-replica-<i>`, from 1).
    pub replicas: u32,
    /// The replicas' wall-clock offset from true time, ms.
    pub replica_offset_ms: i64,
    /// True ms between a write on the master and its application on the replicas.
    pub replication_lag_ms: u64,
    /// Promote a replica once the master has been unreachable this long (true ms); `None`: only
    /// a `failover` fault promotes.
    pub failover_after_ms: Option<u64>,
}

/// The name of replica `index` (from 1) of `master`.
pub fn replica_name(master: &str, index: u32) -> String {
    format!("{master}-replica-{index}")
}
