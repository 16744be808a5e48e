//! What a kind is drawn from: the template's topology, and the contexts the explorer's
//! placements hand a kind — at random ([`Draw`]), aimed at an anchor ([`Aim`]) or at one of the
//! lock's operations ([`OperationAim`]), on the bounded-exhaustive grid ([`Grid`]).
//!
//! The contexts carry what every kind shares and was computed before a kind was chosen (the
//! nodes, the instant, the lengths sized by the TTL), so that each kind draws exactly what it
//! drew when all of them lived in one function: the draws a placement makes before choosing the
//! kind stay with the placement, the kind's own draws with the kind, in the order they were.

use crate::model::fault::FaultProfile;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The nodes and timings a plan is generated for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Master names.
    pub masters: Vec<String>,
    /// Client names (the template's, in order).
    pub clients: Vec<String>,
    /// The resource's name.
    pub resource: String,
    /// The run's duration, ms.
    pub duration_ms: u64,
    /// The lock's TTL, ms.
    pub ttl_ms: u64,
    /// Every replica's name (crash targets besides the masters).
    pub replicas: Vec<String>,
    /// Masters that run `aof-everysec` (where a power loss loses more than a crash).
    pub everysec: Vec<String>,
    /// Masters with replicas (what a failover can target).
    pub replicated: Vec<String>,
    /// The lock client's per-request timeout, ms (a latency spike is sized by it).
    pub request_timeout_ms: u64,
    /// The network's one-way delays, smallest and largest, ms (what a spike returns to).
    pub network_latency_ms: (u64, u64),
}

impl Topology {
    /// Faults start in the first four fifths of the run (something must happen after them), ms.
    pub(crate) fn horizon_ms(&self) -> u64 {
        (self.duration_ms * 4 / 5).max(1)
    }
}

/// A uniform choice among `names`.
pub(crate) fn pick(names: &[String]) -> BoxedStrategy<String> {
    proptest::sample::select(names.to_vec()).boxed()
}

/// A uniform choice among `names` from `rng` (`None`: there are none).
pub fn pick_one<'a>(rng: &mut ChaCha8Rng, names: &'a [String]) -> Option<&'a String> {
    (!names.is_empty()).then(|| &names[rng.random_range(0..names.len())])
}

/// Offsets, ms, for "just before" and "just after" an anchor.
pub const NEAR_MS: [u64; 4] = [1, 5, 20, 100];

/// A duration sized by the TTL: short, around the TTL, or past the validity left.
pub(crate) fn aimed_length(rng: &mut ChaCha8Rng, ttl: u64, left_ms: Option<u64>) -> u64 {
    match (rng.random_range(0..4u8), left_ms) {
        (0, _) => rng.random_range(1..=(ttl / 10).max(1)),
        (1, Some(left)) => left + NEAR_MS[rng.random_range(0..NEAR_MS.len())],
        _ => rng.random_range((ttl / 2).max(1)..=(2 * ttl).max(2)),
    }
}

/// What a kind's random strategy is drawn from (`generate::case_strategy`).
pub struct Draw<'a> {
    /// The template's nodes and timings.
    pub topo: &'a Topology,
    /// The strengths allowed, and whether faults are aimed where locks break.
    pub profile: &'a FaultProfile,
    /// When a fault starts: `0..horizon`, true ms.
    pub at: std::ops::Range<u64>,
    /// The lock's TTL, at least 2 ms.
    pub ttl_ms: u64,
    /// The clients.
    pub clients: Vec<String>,
    /// The masters.
    pub masters: Vec<String>,
    /// The clients, then the masters.
    pub everyone: Vec<String>,
    /// The masters, then the resource.
    pub servers: Vec<String>,
    /// The longest window (partition, hold, downtime), at least 1 ms.
    pub window_ms_max: u64,
}

impl<'a> Draw<'a> {
    /// The context of `topo` under `profile`; `None` without a client or a master (no kind
    /// draws anything then).
    pub fn new(topo: &'a Topology, profile: &'a FaultProfile) -> Option<Draw<'a>> {
        let clients = topo.clients.clone();
        let masters = topo.masters.clone();
        let mut everyone = clients.clone();
        everyone.extend(masters.iter().cloned());
        let mut servers = masters.clone();
        servers.push(topo.resource.clone());
        if clients.is_empty() || masters.is_empty() {
            return None;
        }
        Some(Draw {
            topo,
            profile,
            at: 0..topo.horizon_ms(),
            ttl_ms: topo.ttl_ms.max(2),
            clients,
            masters,
            everyone,
            servers,
            window_ms_max: profile.window_ms_max.max(1),
        })
    }
}

/// What a fault aimed at an anchor of the fault-free run is drawn from (`anchors::aimed_fault`):
/// the instant and the nodes the anchor involves, already drawn.
pub struct Aim<'a> {
    /// The template's nodes and timings.
    pub topo: &'a Topology,
    /// The strengths allowed.
    pub profile: &'a FaultProfile,
    /// When: just before, just after or after the anchor, true ms.
    pub at_ms: u64,
    /// The lock's TTL, at least 2 ms.
    pub ttl_ms: u64,
    /// The anchor's client (or one at random).
    pub client: String,
    /// The anchor's master (or one at random).
    pub master: String,
    /// The server the anchor's request went to: a master, or the resource.
    pub server: String,
    /// How long the client's validity has left at `at_ms`, if the fault-free run says.
    pub left_ms: Option<u64>,
}

impl Aim<'_> {
    /// A duration sized by the TTL: short, around the TTL, or past the validity left.
    pub fn length(&self, rng: &mut ChaCha8Rng) -> u64 {
        aimed_length(rng, self.ttl_ms, self.left_ms)
    }

    /// The anchor's client (half the time), its master, or a replica (the resource without one).
    pub(crate) fn any_node(&self, rng: &mut ChaCha8Rng) -> String {
        match rng.random_range(0..4u8) {
            0 | 1 => self.client.clone(),
            2 => self.master.clone(),
            _ => pick_one(rng, &self.topo.replicas)
                .cloned()
                .unwrap_or_else(|| self.topo.resource.clone()),
        }
    }
}

/// What a fault aimed at one of the lock's operations is drawn from (`anchors::operation_fault`):
/// the operation's client, the server it talks to, and when its lease and key run out.
pub struct OperationAim<'a> {
    /// The template's nodes and timings.
    pub topo: &'a Topology,
    /// The lock's TTL, at least 2 ms.
    pub ttl_ms: u64,
    /// The operation's client.
    pub client: String,
    /// A master the operation sent a command to (or one at random).
    pub server: String,
    /// The operation's invoke, true ms.
    pub start_ms: u64,
    /// The instants that cut the operation into gaps (its invoke, each command, its
    /// completion, just after it), sorted.
    pub cuts: Vec<u64>,
    /// When the lease the operation works on runs out, true ms.
    pub lease_end_ms: u64,
    /// When its key expires on the master, true ms.
    pub key_expiry_ms: u64,
}

impl OperationAim<'_> {
    /// An instant inside the operation: in one of the gaps between its invoke, its commands and
    /// its completion (between a check and the command that acts on it, between the masters of
    /// a quorum), after the gap's first instant (what happens at that instant already happened).
    pub(crate) fn inside_ms(&self, rng: &mut ChaCha8Rng) -> u64 {
        let i = rng.random_range(0..self.cuts.len() - 1);
        let (from, to) = (self.cuts[i], self.cuts[i + 1]);
        if to > from + 1 {
            rng.random_range(from + 1..to)
        } else {
            to
        }
    }

    /// How long a stall starting at `at_ms` lasts: until just after the lease's key expired (1
    /// or 20 ms past it: before a competitor's next try, so the stalled client's next command
    /// finds the key absent), or past the lease's end by a quarter, half or whole TTL (a
    /// competitor has taken the key, and often released it again).
    pub(crate) fn past_lease_ms(&self, rng: &mut ChaCha8Rng, at_ms: u64) -> u64 {
        let ttl = self.ttl_ms;
        let until_ms = match rng.random_range(0..5u8) {
            0 => self.key_expiry_ms + 1,
            1 => self.key_expiry_ms + 20,
            2 => self.lease_end_ms + ttl / 4,
            3 => self.lease_end_ms + ttl / 2,
            _ => self.lease_end_ms + ttl,
        };
        until_ms.saturating_sub(at_ms).max(1)
    }

    /// A duration sized by the TTL: short or around the TTL.
    pub fn length(&self, rng: &mut ChaCha8Rng) -> u64 {
        aimed_length(rng, self.ttl_ms, None)
    }
}

/// One instant of the bounded-exhaustive grid (`exhaustive::single_faults`): the anchor's client
/// and master.
pub struct Grid<'a> {
    /// The instant, true ms.
    pub at_ms: u64,
    /// The lock's TTL, at least 2 ms.
    pub ttl_ms: u64,
    /// The anchor's client (or the first).
    pub client: &'a str,
    /// The anchor's master (or the first).
    pub master: &'a str,
    /// Every replica of the template.
    pub replicas: &'a [String],
}
