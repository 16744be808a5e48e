//! The fault generator's vocabulary: which kinds it can generate and how strong they may be.
//!
//! The generator itself (proptest strategies over a template's topology) lives in the explorer;
//! the scenario front end checks an `[explore]` block's `kinds` against [`GENERATED_KINDS`].
//!
//! [`DEFAULT_KINDS`] are the kinds on when none are named: every generated kind but the
//! [`OPT_IN_KINDS`], which are switched on by name (`--kinds drop-reply`), so the plans of the
//! default kind set — and every committed exploration digest — stay what they were before they
//! existed.

use serde::{Deserialize, Serialize};

/// The one list of the fault kinds the explorer generates: each kind's module and type under
/// `explore::kinds`, its name, and its one-line description; the default kinds first, then the
/// opt-in ones. It hands the list to the macro it is given (`generated_kinds!(callback)`): here
/// it makes [`GENERATED_KINDS`] and [`OPT_IN_KINDS`], in `explore::kinds` the registry of the
/// kinds themselves (`GenFault` and its dispatch), so the names are written once.
///
/// A kind added after the explorer's first digests were committed is opt-in, so that a seed's
/// plan under the default kinds stays what it was.
macro_rules! generated_kinds {
    ($callback:ident) => {
        $callback! {
            default {
                /// Freeze a node.
                pause::Pause = "pause",
                /// Step a node's wall clock.
                clock_jump::ClockJump = "clock-jump",
                /// Change a node's clock rate.
                drift::Drift = "drift",
                /// Cut a link for a while.
                partition::Partition = "partition",
                /// Hold every message on a link for a while (delayed packets).
                hold::Hold = "hold",
                /// Set a link's latency.
                latency::Latency = "latency",
                /// Make a link lossy.
                loss::Loss = "loss",
                /// Crash a Redis server and restart it later (with what its persistence kept).
                crash::Crash = "crash",
                /// Cut a Redis server's power (unsynced AOF writes are lost) and restart it later.
                power_loss::PowerLoss = "power-loss",
                /// Force a failover of a master's replication group.
                failover::Failover = "failover",
                /// Shut down and restart every master in turn.
                rolling_restart::RollingRestart = "rolling-restart",
            }
            opt_in {
                /// A server runs a client's next requests and loses their replies.
                drop_reply::DropReply = "drop-reply",
                /// Step a replica's wall clock ahead, then fail its group over to it.
                replica_clock::ReplicaClock = "replica-clock",
            }
        }
    };
}
pub(crate) use generated_kinds;

/// Makes the name lists from [`generated_kinds`]'s list.
macro_rules! kind_names {
    (
        default { $($(#[$d:meta])* $dm:ident::$dk:ident = $dn:literal,)* }
        opt_in { $($(#[$o:meta])* $om:ident::$ok:ident = $on:literal,)* }
    ) => {
        /// The fault kinds the generator knows (what `--kinds` and `[explore] kinds` accept): the
        /// default kinds, then the [`OPT_IN_KINDS`] (read from the one list, `generated_kinds!`).
        pub const GENERATED_KINDS: &[&str] = &[$($dn,)* $($on,)*];

        /// The kinds switched on by name only, last in [`GENERATED_KINDS`]: a kind added after the
        /// explorer's first digests were committed is one of them, so that a seed's plan under the
        /// default kinds stays what it was.
        pub const OPT_IN_KINDS: &[&str] = &[$($on,)*];
    };
}
generated_kinds!(kind_names);

/// The kinds on when none are named: [`GENERATED_KINDS`] without the [`OPT_IN_KINDS`].
pub const DEFAULT_KINDS: &[&str] = GENERATED_KINDS.split_at(GENERATED_KINDS.len() - OPT_IN_KINDS.len()).0;

/// Which fault kinds may be switched on, and their upper strengths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultProfile {
    /// Kinds that may be on (a subset is chosen per seed).
    pub kinds: Vec<String>,
    /// At most this many faults per seed.
    pub faults_max: usize,
    /// Longest pause, ms (lock-aware: 2 × TTL).
    pub pause_ms_max: u64,
    /// Largest clock jump, ms (either way).
    pub jump_ms_max: i64,
    /// Largest drift, ppm (either way).
    pub drift_ppm_max: i64,
    /// Longest partition / hold / crash window, ms.
    pub window_ms_max: u64,
    /// Largest fixed latency, ms.
    pub latency_ms_max: u64,
    /// Largest loss rate, ppm.
    pub loss_ppm_max: u32,
    /// Aim faults where locks break.
    pub lock_aware: bool,
    /// Where faults are placed in time: at random (the default here, and what every committed
    /// exploration used), relative to the lock's own events, or both (see `explore::anchors`).
    pub strategy: PlacementStrategy,
}

/// How the explorer places faults in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementStrategy {
    /// Uniformly over the run (swarm testing over proptest strategies).
    #[default]
    Random,
    /// Relative to the events of a first, fault-free run (acquisitions, replies, grants,
    /// renewals, validity ends, reads, writes, releases), with a generated workload shape.
    Anchored,
    /// Seed by seed, anchored or random (half each), with coverage feedback.
    Mixed,
}

impl PlacementStrategy {
    /// Every strategy, in the order `--strategy` lists them.
    pub const ALL: [PlacementStrategy; 3] = [
        PlacementStrategy::Anchored,
        PlacementStrategy::Random,
        PlacementStrategy::Mixed,
    ];

    /// The name `--strategy` takes.
    pub const fn name(self) -> &'static str {
        match self {
            PlacementStrategy::Random => "random",
            PlacementStrategy::Anchored => "anchored",
            PlacementStrategy::Mixed => "mixed",
        }
    }
}

impl std::str::FromStr for PlacementStrategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PlacementStrategy::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown strategy `{s}` (known: anchored, random, mixed)"))
    }
}

impl Default for FaultProfile {
    fn default() -> Self {
        FaultProfile {
            kinds: DEFAULT_KINDS.iter().map(|k| k.to_string()).collect(),
            faults_max: 4,
            pause_ms_max: 20_000,
            jump_ms_max: 20_000,
            drift_ppm_max: 100_000,
            window_ms_max: 5_000,
            latency_ms_max: 200,
            loss_ppm_max: 20_000,
            lock_aware: false,
            strategy: PlacementStrategy::Random,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_kinds_are_every_generated_kind_but_the_opt_in_ones() {
        assert!(GENERATED_KINDS.ends_with(OPT_IN_KINDS));
        assert_eq!(DEFAULT_KINDS.len() + OPT_IN_KINDS.len(), GENERATED_KINDS.len());
        assert!(OPT_IN_KINDS.contains(&"drop-reply"));
        assert!(!DEFAULT_KINDS.iter().any(|k| OPT_IN_KINDS.contains(k)));
    }
}
