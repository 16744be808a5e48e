//! What the `lockstep ci` gate ran, as plain results: each scenario file's run with its
//! judgement, each `[explore]` block's summary with its judgement, and the TTL sweep. Produced
//! by `crate::app::ci`; `report/` builds the report from it.

use crate::explore::summary::ExploreSummary;
use crate::explore::sweep::TtlSweep;
use crate::explore::Shard;
use crate::model::fault::FaultProfile;
use crate::run::expect::Status;
use crate::run::ScenarioRun;
use crate::scenario::{ExploreExpect, Scenario};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

/// One scenario file's explicit run.
#[derive(Debug, Clone)]
pub struct ScenarioOutcome {
    /// The file, as given.
    pub path: PathBuf,
    /// The scenario.
    pub scenario: Scenario,
    /// The run, or why the world could not run it.
    pub run: Result<ScenarioRun, String>,
    /// How its expectations came out (`Error` when it could not run).
    pub status: Status,
    /// Wall milliseconds the run took (not deterministic).
    pub wall_ms: f64,
}

/// One scenario file's `[explore]` block, explored.
#[derive(Debug, Clone)]
pub struct ExplorationOutcome {
    /// The file, as given.
    pub path: PathBuf,
    /// The seeds of the whole exploration (a shard runs some of them).
    pub seeds: Range<u64>,
    /// The shard that ran (`None`: all seeds).
    pub shard: Option<Shard>,
    /// The generator's profile.
    pub profile: FaultProfile,
    /// What each checker is expected to find.
    pub expect: BTreeMap<String, ExploreExpect>,
    /// What the seeds found.
    pub summary: ExploreSummary,
    /// How its expectations came out.
    pub status: Status,
}

/// Everything the gate ran, in input order.
#[derive(Debug, Clone)]
pub struct CiRun {
    /// The run's identity: a digest of its inputs and options (see `crate::app::ci::run_identity`).
    pub run_id: String,
    /// The shard this run covers.
    pub shard: Option<Shard>,
    /// With a shard: the whole set it was cut from (what `merge` checks the shards cover).
    pub shard_set: Option<ShardSet>,
    /// The scenario runs of this shard.
    pub scenarios: Vec<ScenarioOutcome>,
    /// The explorations.
    pub explorations: Vec<ExplorationOutcome>,
    /// The TTL sweep, when asked for (and this is shard 1 or unsharded).
    pub ttl_sweep: Option<TtlSweep>,
    /// Wall seconds the whole run took (not deterministic).
    pub wall_s: f64,
}

/// The whole set of a sharded `lockstep ci` run, as each of its shards records it: what its
/// shards must cover between them, exactly (checked by `lockstep merge`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardSet {
    /// Scenario runs over all the shards (each scenario file runs in one shard).
    pub scenarios: u64,
    /// Explorations (each shard runs its share of every one's seeds).
    pub explorations: u64,
    /// SHA-256 (hex) of the scenario runs' identities (file and name), sorted.
    pub digest: String,
}

impl ShardSet {
    /// The set of the scenario runs identified by `rows` (file, name) and of `explorations`.
    pub fn of<'a>(rows: impl IntoIterator<Item = (&'a str, &'a str)>, explorations: u64) -> ShardSet {
        let mut ids: Vec<(&str, &str)> = rows.into_iter().collect();
        ids.sort_unstable();
        ShardSet {
            scenarios: ids.len() as u64,
            explorations,
            digest: Self::digest(&ids),
        }
    }

    /// SHA-256 over sorted (file, name) pairs, each part length-prefixed.
    fn digest(ids: &[(&str, &str)]) -> String {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        for (file, name) in ids {
            for part in [file, name] {
                hash.update((part.len() as u64).to_le_bytes());
                hash.update(part.as_bytes());
            }
        }
        hex::encode(hash.finalize())
    }
}
