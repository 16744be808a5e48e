//! Fault plans from a seed: swarm testing over proptest strategies.
//!
//! For each seed, [`case_strategy`] first chooses which fault kinds are on and how strong they
//! are (swarm testing, as in TigerBeetle's VOPR: a run with only pauses finds what a run with
//! every fault at once would drown), then places that many faults in time. Because it is a
//! proptest [`Strategy`], users can write `proptest!` tests over fault plans and get proptest's
//! shrinking, and `explore` shrinks failing seeds with the very same value trees.
//!
//! A generated fault is a [`GenFault`]: windows (a partition, a held link, a crash) carry their
//! own length, so shrinking removes or shortens a window as one fault. Each kind — its fields,
//! its strategy, its expansion into the sim's faults ([`GenFault::expand`]) — lives in one file
//! of [`super::kinds`]; [`ExploreCase::plan`] builds the world's [`FaultPlan`] from the
//! expansions.
//!
//! Why not generate the sim's faults directly: a window is one generated value that becomes two
//! faults (`partition` + `heal`, `crash` + `restart`, a rolling restart's `shutdown`/`restart`
//! pairs), and the proptest value trees, the order of their draws and the shrinker's steps are
//! built on that shape. Generating fault pairs instead would draw, shrink and serialize
//! differently, and change every committed exploration digest. The windows stay in the
//! explorer; what a world fault *is* (its fields, check and describe) lives only in the sim.
//!
//! Opt-in kinds ([`crate::model::fault::OPT_IN_KINDS`]) are not among the default kinds, and
//! their strategies exist only when they are switched on, so the other kinds draw what they always
//! drew for a given seed. Kinds a template cannot use (a failover without replicas, a power
//! loss without `aof-everysec`, a rolling restart of one master) generate nothing, so the cases
//! of templates without them are the same as before those kinds existed.
//!
//! Lock-aware mode aims faults where locks break: pauses that straddle a lease expiry (lengths
//! around the TTL), clock jumps on masters of half to twice the TTL (inside a validity window),
//! and short partitions between clients and masters while clients acquire (each kind's file
//! says how it is aimed).

use lockstep_sim::{FaultPlan, ScheduledFault, Seed};
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::{Deserialize, Serialize};

/// [`crate::explore::kinds::GenFault`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::kinds::GenFault`; removed in 0.3.0"
)]
pub type GenFault = crate::explore::kinds::GenFault;
/// [`crate::explore::kinds::Spike`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::kinds::Spike`; removed in 0.3.0"
)]
pub type Spike = crate::explore::kinds::Spike;
/// [`crate::explore::kinds::Topology`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::kinds::Topology`; removed in 0.3.0"
)]
pub type Topology = crate::explore::kinds::Topology;
/// [`crate::model::fault::FaultProfile`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::model::fault::FaultProfile`; removed in 0.3.0"
)]
pub type FaultProfile = crate::model::fault::FaultProfile;
/// [`crate::model::fault::PlacementStrategy`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::model::fault::PlacementStrategy`; removed in 0.3.0"
)]
pub type PlacementStrategy = crate::model::fault::PlacementStrategy;
/// [`crate::model::fault::DEFAULT_KINDS`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::model::fault::DEFAULT_KINDS`; removed in 0.3.0"
)]
pub const DEFAULT_KINDS: &[&str] = crate::model::fault::DEFAULT_KINDS;
/// [`crate::model::fault::GENERATED_KINDS`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::model::fault::GENERATED_KINDS`; removed in 0.3.0"
)]
pub const GENERATED_KINDS: &[&str] = crate::model::fault::GENERATED_KINDS;

/// What one seed explores: how many of the template's clients take part, and the faults.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExploreCase {
    /// The first `clients` clients of the template run.
    pub clients: usize,
    /// The faults.
    pub faults: Vec<crate::explore::kinds::GenFault>,
    /// A generated workload shape (anchored and mixed strategies only; `None`: the template's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<WorkloadShape>,
}

impl ExploreCase {
    /// The world's fault plan: every fault expanded, dropping those that name absent clients.
    pub fn plan(&self, present: &[String]) -> FaultPlan {
        let mut faults: Vec<ScheduledFault> = self
            .faults
            .iter()
            .filter(|f| f.nodes().iter().all(|n| present.iter().any(|p| p == n)))
            .flat_map(crate::explore::kinds::GenFault::expand)
            .collect();
        faults.sort_by_key(|f| f.at_ms);
        FaultPlan::new(faults)
    }
}

/// The workload shape a seed runs with (drawn and applied by `explore::anchors`).
///
/// Bounds: 2 to 4 clients; think time 0 to TTL/2; critical sections `[lo, hi]` with `lo` between
/// 1 ms and `hi`, and `hi` inside the lock's contract by default — one of W/10, W/4, W/2, W with
/// W half the validity the lock claims after its safety margins
/// (`anchors::ShapeBounds::contract`) — or, with `explore --overrun-shapes`, one of TTL/10,
/// TTL/2, TTL, 3/2 × TTL (`anchors::ShapeBounds::overrun`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WorkloadShape {
    /// How many clients run.
    pub clients: usize,
    /// Pause between iterations, ms.
    pub think_ms: u64,
    /// Shortest critical section, ms.
    pub work_ms_min: u64,
    /// Longest critical section, ms.
    pub work_ms_max: u64,
}

/// The strategy of one seed's case: a swarm of kinds, then faults of those kinds in time.
pub fn case_strategy(
    topo: &crate::explore::kinds::Topology,
    profile: &crate::model::fault::FaultProfile,
) -> BoxedStrategy<ExploreCase> {
    let kinds: Vec<BoxedStrategy<crate::explore::kinds::GenFault>> = match super::kinds::Draw::new(topo, profile) {
        Some(draw) => profile
            .kinds
            .iter()
            .filter_map(|k| crate::explore::kinds::GenFault::strategy(k, &draw))
            .collect(),
        None => Vec::new(),
    };
    let client_count = topo.clients.len().max(1);
    let faults_max = profile.faults_max;
    if kinds.is_empty() || faults_max == 0 {
        return Just(ExploreCase {
            clients: client_count,
            faults: Vec::new(),
            shape: None,
        })
        .boxed();
    }
    let kind_count = kinds.len();
    let kinds = std::rc::Rc::new(kinds);
    // Swarm: a non-empty subset of the kinds is on for this seed.
    proptest::sample::subsequence((0..kind_count).collect::<Vec<_>>(), 1..=kind_count)
        .prop_flat_map(move |on| {
            let chosen: Vec<BoxedStrategy<crate::explore::kinds::GenFault>> =
                on.iter().map(|&i| kinds[i].clone()).collect();
            let faults = proptest::collection::vec(Union::new(chosen), 1..=faults_max);
            // Every client takes part; `explore`'s shrinker tries fewer clients on its own, since a
            // proptest range would start from a random count rather than the template's.
            (faults, Just(client_count))
        })
        .prop_map(|(faults, clients)| ExploreCase {
            clients,
            faults,
            shape: None,
        })
        .boxed()
}

/// The proptest runner of `seed`: a ChaCha stream derived from it, so the case is fixed by the
/// seed alone.
fn runner_for(seed: u64) -> TestRunner {
    let bytes = Seed(seed).derive_bytes("explore/case");
    TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// The value tree of `seed`'s case (its `current()` is the case; it shrinks).
pub fn case_tree(seed: u64, strategy: &BoxedStrategy<ExploreCase>) -> Box<dyn ValueTree<Value = ExploreCase>> {
    let mut runner = runner_for(seed);
    // The strategies above never filter, so generation cannot be rejected.
    strategy
        .new_tree(&mut runner)
        .expect("fault-plan strategies never reject a case")
}
