//! What the masters did with a grant: when its acquisition took effect on a majority of the
//! masters it reached (the master's grant), and until when they actually held its lease.
//!
//! The masters' side of a grant is read from their `Command` events: every command on a client
//! connection (not the replication stream) whose arguments carry the grant's key and value is one
//! of its requests. The masters it *reached* are the nodes that applied at least one of them; a
//! majority is more than half of those. The acquisition took effect on a master at its first
//! successful request (a reply other than an error, `(nil)` or `:0`) before the acquire `ok`;
//! the master's grant is the success that completes a majority.
//!
//! The lease on one master runs from the acquisition that put the grant on the key — a
//! successful `SET key value … PX|EX ttl`, or for a hash lock (Redisson's `RLock`) the owner's
//! field written into the key (`HSET`/`HSETNX`/`HINCRBY key field …`, or a script doing it,
//! usually with a `PEXPIRE key ttl`) — until the first of: its expiry (the master's clock
//! reaching the TTL set by the latest successful `SET`, `PEXPIRE`, or script that sets one while
//! the key holds the grant, converted to true time by that master's clock rate and wall-clock
//! jumps), an `Expired` event for the key, another value set on the key, or a deletion the
//! holder did not ask for (a `DEL` before the holder gave the grant up). The holder's own
//! deletion (a compare-and-delete carrying the value, or any deletion after its release or
//! abort) does not end the lease early: the lease is what the masters would have held.
//!
//! A renewal is anything that sets a new TTL while the key holds the grant: `PEXPIRE`/`EXPIRE`,
//! a script that does it, and a successful `SET key <the grant's value> … PX|EX ttl` (`XX` or
//! not: it succeeded on a key holding the grant's value, so it replaced the TTL; `KEEPTTL` keeps
//! it, and without either the key no longer expires). The same `SET` on a key that no longer
//! holds the grant re-creates the lock: the lease it had ended, and nothing revives it.
//!
//! **The grant's identity** (`Ident`) is the value its acquire `ok` records. A hash lock writes
//! a field *named after* it: the Redisson model's field is `{value}:1` (Redisson's own is
//! `UUID:threadId`), so an argument equal to the value, or the value followed by `:` and a
//! suffix, carries the grant. A value that is a prefix of another (`client-1`, `client-10`) is
//! told apart by that colon.
//!
//! **Scripts** are read from their text (`ScriptEffect`): the Redis commands they call say
//! whether they may put the grant on the key (`SET`, `HSET`, `HINCRBY`, …), set a TTL
//! (`PEXPIRE`, `SET … PX`: the TTL is the script's last integer argument), or delete it (`DEL`,
//! `HDEL`, …); reads and commands on other keys (a fencing counter's `INCR`, an unlock message's
//! `PUBLISH`) change nothing. Whether the script's writing branch ran is read from its reply:
//! lock scripts answer `0` or nil when they did nothing — except an acquisition that answers
//! nil when it took the lock (Redisson's, which answers the other holder's remaining TTL
//! otherwise). The grant's own acquire `ok` decides which convention its lock uses: when the
//! last acquisition script of the grant's acquire on each master answered nil more often than
//! anything else (`nil_acquires`), nil is that lock's success and an integer its refusal.
//!
//! A crash, power loss or shutdown of the master leaves the lease in doubt until the key's
//! next expiry (it survived) or another value set (it was lost with the process; while the master
//! was down nobody could take the key, so that copy's lease lasted until the first command the
//! master served again, or its expiry if earlier: a sound upper bound of the restart, so a lock
//! is charged only with a lie the history proves). A command carrying the grant whose effect this
//! reader does not know (a script calling a command it does not know) leaves the lease's end
//! unknown.
//!
//! Clocks: a node's monotonic reading is known, to the millisecond, at each of its events.
//! `ClockTrack::true_us_range` bounds the true instant at which it read a given value: the
//! clock's rate is constant between its drift changes (the `drift` faults of the node, which state
//! the new rate), it starts at 0 at true time 0 (the simulator's clocks), and every reading is
//! the floor of the microsecond clock; every instant consistent with all the readings of that
//! stretch is inside the range (a sound bound, not a guess). `ClockTrack::true_us_at` is the
//! older point estimate (interpolated, after the last event extrapolated at the rate seen over
//! the node's last second), kept for display: from millisecond readings its rate can be off by
//! a thousand ppm, which over the seconds after a client's last event is milliseconds.
//!
//! **Cost.** The history is read once, when the [`OpHistory`] is built (`find_master_grants`),
//! into an index: every node by a small number, and for each grant's
//! lock key the steps that can change a lease on it — the commands carrying the key after their
//! name, its expiries, every stop and clock jump, and for each stop the first command its node
//! served after it. A grant's walk reads only its key's steps, from its acquire until all its
//! copies ended, with its per-node state in vectors; a command's name is read once, a script
//! text once however many commands carry it, a clock stretch's rate once however many values are
//! placed in it. At many masters the walk used to read every step in that span, every other
//! client's command on every master included, comparing node names in maps at each.
//!
//! Left out: replicas and failover (a lease is held by the masters the client reached; a promoted
//! replica that received the key is not counted), `PXAT`/`EXAT` and scripts cached with
//! `EVALSHA` (no text to read: the lease's end becomes unknown), another holder's script
//! acquisition ending a copy lost in a crash (only another value `SET` on the key shows that:
//! the copy stays in doubt, an unknown rather than a false verdict), and which key a script's
//! command touches or which branch of it ran beyond its reply: a script that may both delete and
//! set a TTL (a release that also expires a signal list, a renewal that deletes when its compare
//! fails) is read as a release once the holder gave the grant up and as a renewal before; one that
//! only sets a TTL is read as setting the lock key's.

use super::{Hold, OpHistory, Step, StepKind};
use lockstep_sim::redis::table::TtlSource;
use lockstep_sim::{Event, Fault};
use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, DefaultHasher};

/// Whether a master's one-line reply says the command took effect (the lease reader's reading,
/// and the key-life view's: [`super::key_life`]).
pub(crate) fn reply_succeeded(reply: &str) -> bool {
    !(reply.starts_with('-') || reply == "(nil)" || reply == ":0")
}

/// One node's monotonic clock as the history shows it: `(true µs, monotonic ms)` at each of its
/// events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClockTrack {
    samples: Vec<(u64, i64)>,
    /// The stretches of constant rate: where each starts in `samples`, and
    /// its rate when a drift fault stated it (ppm).
    stretches: Vec<Stretch>,
}

/// A stretch of a node's clock with one rate.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stretch {
    /// Index of its first sample in [`ClockTrack::samples`].
    first: usize,
    /// The rate error a drift fault set (`None`: the node's initial rate, not in the history).
    drift_ppm: Option<i64>,
}

impl ClockTrack {
    /// The clock of `node` in `history`.
    pub fn of(history: &OpHistory<'_>, node: &str) -> ClockTrack {
        let mut samples = Vec::new();
        let mut stretches = vec![Stretch {
            first: 0,
            drift_ppm: None,
        }];
        for step in history.steps() {
            if let StepKind::Fault(Fault::Drift {
                node: drifting,
                drift_ppm,
            }) = step.kind
            {
                if drifting == node {
                    stretches.push(Stretch {
                        first: samples.len(),
                        drift_ppm: Some(*drift_ppm),
                    });
                }
            }
            if step.event.node == node {
                samples.push((step.event.at_us, step.event.monotonic_ms));
            }
        }
        ClockTrack { samples, stretches }
    }

    /// The earliest and latest true instants (µs) at which the node's monotonic clock can have
    /// reached `monotonic_ms`, given every reading of the stretch of constant rate that holds that
    /// value (see the [module](self) docs); `None` without any event of the node.
    ///
    /// Each reading `m` at true `t` says the microsecond clock was in `[m, m + 1)` ms at `t`; the
    /// rate is the one a drift fault set, else (the initial rate) what the readings allow for a
    /// clock that read 0 at true 0. When the readings contradict that model (a history from real
    /// processes), the range falls back to the point estimate of [`true_us_at`](Self::true_us_at).
    pub(crate) fn true_us_range(&self, monotonic_ms: i64) -> Option<(u64, u64)> {
        self.true_us_range_with(monotonic_ms, |k| self.stretch_rates(k))
    }

    /// The readings of stretch `k`.
    fn stretch_samples(&self, k: usize) -> &[(u64, i64)] {
        let end = self.stretches.get(k + 1).map_or(self.samples.len(), |s| s.first);
        &self.samples[self.stretches[k].first.min(end)..end]
    }

    /// The bounds of stretch `k`'s rate ([`rate_bounds`]). They do not depend on the value
    /// sought: [`ClockTracks`] reads them once per stretch instead of once per value.
    fn stretch_rates(&self, k: usize) -> Option<(f64, f64)> {
        rate_bounds(self.stretch_samples(k), self.stretches[k].drift_ppm, k == 0)
    }

    /// [`true_us_range`](Self::true_us_range), with the rate bounds of stretch `k` given by
    /// `rates(k)`.
    fn true_us_range_with(&self, monotonic_ms: i64, rates: impl Fn(usize) -> Option<(f64, f64)>) -> Option<(u64, u64)> {
        let point = self.true_us_at(monotonic_ms)?;
        // The stretch that holds the value: the last one whose first reading is not above it.
        let k = self
            .stretches
            .iter()
            .rposition(|s| k_first_reading(&self.samples, s).is_none_or(|m| m <= monotonic_ms))
            .unwrap_or(0);
        // The drift fault's own event, recorded by the node at the instant of the change, opens
        // the stretch (the reading is continuous there). A value read within a millisecond of a
        // change is bounded with the rate of the stretch its reading falls in: the error is the
        // rate difference over that millisecond, well under a microsecond.
        let samples = self.stretch_samples(k);
        let exact_origin = k == 0;
        if samples.is_empty() && !exact_origin {
            return Some((point, point));
        }
        let Some((rate_min, rate_max)) = rates(k) else {
            return Some((point, point));
        };
        let target_us = monotonic_ms as f64 * 1_000.0;
        let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
        let mut constrain = |t_us: u64, reading_lo_us: f64, reading_hi_us: f64| {
            // The local time from the reading to the target, and the true time it takes.
            let (d_lo, d_hi) = (target_us - reading_hi_us, target_us - reading_lo_us);
            let early = if d_lo >= 0.0 { d_lo / rate_max } else { d_lo / rate_min };
            let late = if d_hi >= 0.0 { d_hi / rate_min } else { d_hi / rate_max };
            lo = lo.max(t_us as f64 + early);
            hi = hi.min(t_us as f64 + late);
        };
        if exact_origin {
            constrain(0, 0.0, 0.0);
        }
        for &(t_us, m) in samples {
            constrain(t_us, m as f64 * 1_000.0, m as f64 * 1_000.0 + 1_000.0);
        }
        if !(lo <= hi && lo.is_finite() && hi.is_finite()) {
            return Some((point, point));
        }
        Some((lo.floor().max(0.0) as u64, hi.ceil() as u64))
    }

    /// The true time (µs) at which the node's monotonic clock reads `monotonic_ms`; `None`
    /// without any event of the node.
    pub(crate) fn true_us_at(&self, monotonic_ms: i64) -> Option<u64> {
        let samples = &self.samples;
        let &(first_us, first_ms) = samples.first()?;
        let after = samples.partition_point(|&(_, m)| m < monotonic_ms);
        let at = if after == 0 {
            let back_us = (first_ms - monotonic_ms).max(0) as u64 * 1_000;
            first_us.saturating_sub(back_us)
        } else if let Some(&(t1, m1)) = samples.get(after) {
            let (t0, m0) = samples[after - 1];
            let span_ms = (m1 - m0).max(1) as u128;
            t0 + ((t1 - t0) as u128 * (monotonic_ms - m0) as u128 / span_ms) as u64
        } else {
            let &(last_us, last_ms) = samples.last()?;
            // The rate over (about) the last second of readings.
            let from = samples
                .partition_point(|&(t, _)| t + 1_000_000 < last_us)
                .min(samples.len() - 1);
            let (ref_us, ref_ms) = samples[from];
            let (span_us, span_ms) = (last_us - ref_us, last_ms - ref_ms);
            let ahead_ms = (monotonic_ms - last_ms) as u128;
            let ahead_us = if span_us >= 100_000 && span_ms > 0 {
                ahead_ms * span_us as u128 / span_ms as u128
            } else {
                ahead_ms * 1_000
            };
            last_us.saturating_add(ahead_us.min(u64::MAX as u128) as u64)
        };
        Some(at)
    }
}

/// The first reading of `stretch`, if it has one.
fn k_first_reading(samples: &[(u64, i64)], stretch: &Stretch) -> Option<i64> {
    samples.get(stretch.first).map(|&(_, m)| m)
}

/// The bounds of a stretch's rate (local µs per true µs): exact (to a microsecond per second,
/// the simulator's rounding) when a drift fault stated it, else what the readings allow — from
/// the origin (the clock read 0 at true 0) when `exact_origin`, else between the first and last
/// reading. `None` when the readings do not bound it (too short a stretch) or contradict it.
fn rate_bounds(samples: &[(u64, i64)], drift_ppm: Option<i64>, exact_origin: bool) -> Option<(f64, f64)> {
    if let Some(ppm) = drift_ppm {
        let rate = 1.0 + ppm as f64 / 1e6;
        return Some((rate - 1e-6, rate + 1e-6));
    }
    let (mut rate_min, mut rate_max) = (0.0f64, f64::INFINITY);
    if exact_origin {
        for &(t_us, m) in samples.iter().filter(|&&(t, _)| t > 0) {
            rate_min = rate_min.max(m as f64 * 1_000.0 / t_us as f64);
            rate_max = rate_max.min((m + 1) as f64 * 1_000.0 / t_us as f64);
        }
    } else if let (Some(&(t0, m0)), Some(&(t1, m1))) = (samples.first(), samples.last()) {
        if t1 > t0 {
            let span_us = (t1 - t0) as f64;
            rate_min = ((m1 - m0 - 1) as f64 * 1_000.0 / span_us).max(0.0);
            rate_max = (m1 - m0 + 1) as f64 * 1_000.0 / span_us;
        }
    }
    (rate_min > 0.0 && rate_max.is_finite() && rate_min <= rate_max).then_some((rate_min, rate_max))
}

/// Every node's [`ClockTrack`], read in one pass over the history (reading one node's track
/// alone walks the whole history: doing so for each node and each grant made the analysis grow
/// with the square of the nodes).
#[derive(Debug, Clone, Default)]
pub struct ClockTracks<'h> {
    by_node: BTreeMap<&'h str, TrackedClock>,
}

/// One node's clock, with the rate bounds of its stretches once they were needed.
#[derive(Debug, Clone)]
struct TrackedClock {
    track: ClockTrack,
    /// [`ClockTrack::stretch_rates`] of each stretch: a lease's end on a master is bounded once
    /// per grant, and reading the rate anew each time read all the master's samples once more.
    rates: OnceCell<Vec<Option<(f64, f64)>>>,
}

impl<'h> ClockTracks<'h> {
    /// The clock of every node of `history`.
    pub fn of(history: &OpHistory<'h>) -> Self {
        // The same reading as [`ClockTrack::of`], for every node at once, by the node table's
        // indices (a map keyed by name cost a string comparison per look-up and event).
        let nodes = &history.lease_index.nodes;
        let mut tracks: Vec<Option<ClockTrack>> = vec![None; nodes.len()];
        let fresh = || ClockTrack {
            samples: Vec::new(),
            stretches: vec![Stretch {
                first: 0,
                drift_ppm: None,
            }],
        };
        for (i, step) in history.steps().iter().enumerate() {
            if let StepKind::Fault(Fault::Drift { node, drift_ppm }) = step.kind {
                let track = tracks[nodes.interned(node)].get_or_insert_with(fresh);
                track.stretches.push(Stretch {
                    first: track.samples.len(),
                    drift_ppm: Some(*drift_ppm),
                });
            }
            let event: &'h Event = step.event;
            tracks[nodes.of_step(i)]
                .get_or_insert_with(fresh)
                .samples
                .push((event.at_us, event.monotonic_ms));
        }
        let by_node = tracks
            .into_iter()
            .enumerate()
            .filter_map(|(id, track)| {
                let track = track?;
                Some((
                    nodes.name(id),
                    TrackedClock {
                        track,
                        rates: OnceCell::new(),
                    },
                ))
            })
            .collect();
        ClockTracks { by_node }
    }

    /// The clock of `node` (without samples when it has no event), as [`ClockTrack::of`] reads it.
    pub fn node(&self, node: &str) -> &ClockTrack {
        static NO_SAMPLES: ClockTrack = ClockTrack {
            samples: Vec::new(),
            stretches: Vec::new(),
        };
        self.by_node.get(node).map_or(&NO_SAMPLES, |clock| &clock.track)
    }

    /// [`ClockTrack::true_us_range`] of `node`'s clock, each stretch's rate bounds read once.
    pub(crate) fn true_us_range(&self, node: &str, monotonic_ms: i64) -> Option<(u64, u64)> {
        let Some(clock) = self.by_node.get(node) else {
            return self.node(node).true_us_range(monotonic_ms);
        };
        let track = &clock.track;
        let rates = clock
            .rates
            .get_or_init(|| (0..track.stretches.len()).map(|k| track.stretch_rates(k)).collect());
        track.true_us_range_with(monotonic_ms, |k| rates[k])
    }
}

/// One stop of a server.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Downtime {
    /// When it stopped (a crash, power loss or shutdown), µs.
    from_us: u64,
    /// When it served a command again, µs (`None`: never, in the history).
    up_us: Option<u64>,
    /// Its first command after the stop came from a replication stream.
    as_replica: bool,
}

/// When each server was down: from a crash, power loss or shutdown until the first command it
/// served again (a sound upper bound of its restart), for the servers clients talk to: nodes that
/// served a command on a client connection, or never one of a replication stream (a master down
/// from the start serves nothing; a replica applies its master's stream). A server whose first
/// command after a stop came from a replication stream came back as a replica (a failover
/// happened meanwhile): it held no master's share of any lease then, and that downtime is left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Downtimes<'h> {
    by_node: BTreeMap<&'h str, Vec<Downtime>>,
    /// The history's last instant, µs.
    end_us: u64,
}

impl<'h> Downtimes<'h> {
    /// The downtimes of every server of `history`, in one pass.
    pub fn of(history: &OpHistory<'h>) -> Self {
        // By the node table's indices: sets keyed by name cost string comparisons per command.
        let nodes = &history.lease_index.nodes;
        let mut spans_of: Vec<Vec<Downtime>> = vec![Vec::new(); nodes.len()];
        let mut serves_clients = vec![false; nodes.len()];
        let mut replicates = vec![false; nodes.len()];
        let mut end_us = 0;
        for (i, step) in history.steps().iter().enumerate() {
            let event: &'h Event = step.event;
            end_us = end_us.max(event.at_us);
            match step.kind {
                StepKind::Fault(
                    Fault::Crash { node, .. } | Fault::PowerLoss { node, .. } | Fault::Shutdown { node },
                ) => {
                    let spans = &mut spans_of[nodes.interned(node)];
                    if spans.last().is_none_or(|span| span.up_us.is_some()) {
                        spans.push(Downtime {
                            from_us: event.at_us,
                            up_us: None,
                            as_replica: false,
                        });
                    }
                }
                StepKind::Command { conn, .. } => {
                    let node = nodes.of_step(i);
                    if conn != 0 {
                        serves_clients[node] = true;
                    } else {
                        replicates[node] = true;
                    }
                    if let Some(span) = spans_of[node].last_mut().filter(|span| span.up_us.is_none()) {
                        span.up_us = Some(event.at_us);
                        span.as_replica = conn == 0;
                    }
                }
                _ => {}
            }
        }
        let by_node = spans_of
            .into_iter()
            .enumerate()
            .filter(|(node, spans)| !spans.is_empty() && (serves_clients[*node] || !replicates[*node]))
            .map(|(node, spans)| (nodes.name(node), spans))
            .collect();
        Downtimes { by_node, end_us }
    }

    /// The servers down at `at_us`, each with when it served again (`None`: never, in the
    /// history).
    fn down_at(&self, at_us: u64) -> Vec<(&'h str, Option<u64>)> {
        self.by_node
            .iter()
            .filter_map(|(node, spans)| {
                spans
                    .iter()
                    .find(|span| span.from_us <= at_us && span.up_us.is_none_or(|up| up > at_us))
                    .filter(|span| !span.as_replica)
                    .map(|span| (*node, span.up_us))
            })
            .collect()
    }
}

/// The majority of `reached` masters.
fn majority(reached: usize) -> usize {
    reached / 2 + 1
}

/// What the lease reader needs of a history, read once when the [`OpHistory`] is built (see
/// [`find_master_grants`]) so that each grant reads only the steps that can matter to it.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeaseIndex<'h> {
    nodes: NodeTable<'h>,
    touching: Touching,
}

impl LeaseIndex<'_> {
    /// The node of step `i`, as a small index (the same for every step of one node).
    pub(crate) fn node_of_step(&self, i: usize) -> usize {
        self.nodes.of_step(i)
    }
}

/// Every node the history names, by a small index: the reader keeps its per-node state in
/// vectors, where maps keyed by name cost a string comparison per look-up.
#[derive(Debug, Clone, Default)]
struct NodeTable<'h> {
    /// The names, by index (given in order of first mention).
    names: Vec<&'h str>,
    /// The indices, by name.
    by_name: BTreeMap<&'h str, usize>,
    /// Each index's position in name order: what the reader returns follows the order of maps
    /// keyed by name, as it always did.
    rank: Vec<usize>,
    /// The index of each step's node (`steps[i].event.node`).
    of_step: Vec<u32>,
}

impl<'h> NodeTable<'h> {
    /// The nodes of `steps`: each event's, and the ones a stop or drift fault names.
    fn of(steps: &[Step<'h>]) -> Self {
        // Interned by hash: looked up once per event and never iterated (indices follow the
        // order of first mention), where a map ordered by name compared strings all the way
        // down its tree.
        let mut ids: HashMap<&'h str, u32, BuildHasherDefault<DefaultHasher>> = HashMap::default();
        let mut names: Vec<&'h str> = Vec::new();
        let mut intern = |name: &'h str| {
            *ids.entry(name).or_insert_with(|| {
                names.push(name);
                u32::try_from(names.len() - 1).expect("fewer than 2^32 nodes")
            })
        };
        let mut of_step = Vec::with_capacity(steps.len());
        for step in steps {
            if let StepKind::Fault(
                Fault::Crash { node, .. }
                | Fault::PowerLoss { node, .. }
                | Fault::Shutdown { node }
                | Fault::Drift { node, .. },
            ) = step.kind
            {
                intern(node);
            }
            let event: &'h Event = step.event;
            of_step.push(intern(&event.node));
        }
        let by_name: BTreeMap<&'h str, usize> = names.iter().enumerate().map(|(id, name)| (*name, id)).collect();
        let mut rank = vec![0; names.len()];
        for (position, &id) in by_name.values().enumerate() {
            rank[id] = position;
        }
        NodeTable {
            names,
            by_name,
            rank,
            of_step,
        }
    }

    /// How many nodes there are.
    fn len(&self) -> usize {
        self.names.len()
    }

    /// The name of node `id`.
    fn name(&self, id: usize) -> &'h str {
        self.names[id]
    }

    /// The index of `name`, if the history names it.
    fn id(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The index of a node the table interned (an event's, or a stop or drift fault's).
    fn interned(&self, name: &str) -> usize {
        self.id(name).expect("the node table names every node of its history")
    }

    /// The node of step `i`.
    fn of_step(&self, i: usize) -> usize {
        self.of_step[i] as usize
    }
}

/// A few strings to find among commands' arguments (the grants' keys, or their values):
/// sorted, with a mask of their lengths that rules most arguments out (a command's name, its
/// options, a script's text) without comparing a byte.
#[derive(Debug, Clone, Default)]
struct Needles {
    sorted: Vec<String>,
    /// Bit `min(len, 63)` set for each length present.
    lengths: u64,
}

impl Needles {
    fn new(strings: impl IntoIterator<Item = String>) -> Self {
        let mut sorted: Vec<String> = strings.into_iter().collect();
        sorted.sort();
        sorted.dedup();
        let lengths = sorted.iter().fold(0, |mask, s| mask | Self::length_bit(s));
        Needles { sorted, lengths }
    }

    fn length_bit(s: &str) -> u64 {
        1 << s.len().min(63)
    }

    fn len(&self) -> usize {
        self.sorted.len()
    }

    /// The position of `s` among them, if it is one.
    fn find(&self, s: &str) -> Option<usize> {
        if self.lengths & Self::length_bit(s) == 0 {
            return None;
        }
        self.sorted.binary_search_by(|needle| needle.as_str().cmp(s)).ok()
    }
}

/// What a command can do to a lock key, read once from lockstep's command table
/// ([`lockstep_sim::redis::table`], the one place that knows commands by name); the key-life view
/// ([`super::key_life`]) reads it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommandName {
    /// Stores a string value (`SET`, `SETNX`, `SETEX`, `PSETEX`, `GETSET`, `MSET`...): the
    /// argument holding it, where its TTL comes from, and whether it is `SET` itself (whose
    /// options say `NX`/`XX`/`KEEPTTL`).
    Store {
        value_at: usize,
        ttl: TtlSource,
    },
    /// Writes a hash field (`HSET`, `HINCRBY`...).
    HashWrite,
    /// Sets the expiry from argument 2, in units of `unit_ms`, relative or absolute.
    Expiry {
        unit_ms: i64,
        absolute: bool,
    },
    Persist,
    /// Deletes the keys it names (`DEL`, `UNLINK`, `GETDEL`).
    Delete,
    HDel,
    /// An `EVAL`, or an `EVALSHA` of a body seen in an `EVAL` or `SCRIPT LOAD`, with its script's
    /// effect ([`Touching::scripts`] index).
    Eval(u32),
    /// A script whose text was not read: an `FCALL`, an `EVALSHA` of a body never seen, or an
    /// `EVAL` named without its arguments ([`CommandName::of`]). Its effects, when the server
    /// recorded them, are read instead.
    Script,
    /// One that does nothing to a lease by its name (or that the table does not know).
    Other,
}

impl CommandName {
    /// The name of the command `args` (at least the name and one argument); an `EVAL`'s script
    /// is read once per distinct text (`scripts`, with its index by text in `memo`, and by SHA1
    /// in `shas` for the `EVALSHA`s that run it).
    fn read<'a>(
        args: &'a [String],
        memo: &mut BTreeMap<&'a str, u32>,
        shas: &mut BTreeMap<String, u32>,
        scripts: &mut Vec<ScriptEffect>,
    ) -> Self {
        let name = args[0].as_str();
        if name.eq_ignore_ascii_case("EVAL") || name.eq_ignore_ascii_case("EVAL_RO") {
            return CommandName::Eval(script_index(&args[1], memo, shas, scripts));
        }
        if name.eq_ignore_ascii_case("EVALSHA") || name.eq_ignore_ascii_case("EVALSHA_RO") {
            if let Some(&script) = shas.get(&args[1].to_ascii_lowercase()) {
                return CommandName::Eval(script);
            }
        }
        CommandName::of(name)
    }

    /// The command called `name`, without its arguments, by the command table: a script
    /// (`EVAL`, `EVALSHA`, `FCALL`) is [`CommandName::Script`], its text unread.
    pub(crate) fn of(name: &str) -> Self {
        use lockstep_sim::redis::table::{self, LeaseEffect};
        let Some(spec) = table::command(name.as_bytes()) else {
            return CommandName::Other;
        };
        match spec.lease {
            LeaseEffect::SetsValue { value_at, ttl, .. } => CommandName::Store { value_at, ttl },
            LeaseEffect::WritesField => CommandName::HashWrite,
            LeaseEffect::SetsExpiry { unit_ms, absolute } => CommandName::Expiry { unit_ms, absolute },
            LeaseEffect::Persists => CommandName::Persist,
            LeaseEffect::Deletes => CommandName::Delete,
            LeaseEffect::DeletesField => CommandName::HDel,
            LeaseEffect::RunsScript => CommandName::Script,
            LeaseEffect::None | LeaseEffect::GetEx | LeaseEffect::Moves => CommandName::Other,
        }
    }

    /// Whether it sets a string key's value: on a key holding another value, that value is gone.
    pub(crate) fn sets_value(self) -> bool {
        matches!(self, CommandName::Store { .. })
    }

    /// The argument holding the value it stores (2 for `SET key value`, 3 for `SETEX key s value`).
    pub(crate) fn value_at(self) -> usize {
        match self {
            CommandName::Store { value_at, .. } => value_at,
            _ => 2,
        }
    }

    /// Whether it deletes the keys it names (`DEL`, `UNLINK`, `GETDEL`; `HDEL` deletes a field).
    pub(crate) fn deletes_key(self) -> bool {
        matches!(self, CommandName::Delete)
    }

    /// Whether it runs a script (`EVAL`, `EVALSHA`, `FCALL`).
    pub(crate) fn runs_script(self) -> bool {
        matches!(self, CommandName::Eval(_) | CommandName::Script)
    }
}

/// The index of `body`'s effect in `scripts`, read once per distinct text; its SHA1 is noted in
/// `shas` for the `EVALSHA`s that run it.
fn script_index<'a>(
    body: &'a str,
    memo: &mut BTreeMap<&'a str, u32>,
    shas: &mut BTreeMap<String, u32>,
    scripts: &mut Vec<ScriptEffect>,
) -> u32 {
    *memo.entry(body).or_insert_with(|| {
        scripts.push(ScriptEffect::read(body));
        let index = u32::try_from(scripts.len() - 1).expect("fewer than 2^32 scripts");
        shas.insert(lockstep_sim::redis::sha1_hex(body.as_bytes()), index);
        index
    })
}

/// How a step can matter to a lease on a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Touch {
    /// A command carrying the key among its arguments (after its name).
    Command(CommandName),
    /// The key expired.
    Expired,
    /// A crash, power loss or shutdown ([`Touching::up_again_us`] index).
    Stop(u32),
    /// A clock jump.
    ClockJump,
}

/// A step that can matter to a lease on a key (12 bytes: an index is listed for nearly every
/// event of a world of many masters).
#[derive(Debug, Clone, Copy)]
struct KeyStep {
    /// Its index in [`OpHistory::steps`].
    step: u32,
    touch: Touch,
}

impl KeyStep {
    fn step(&self) -> usize {
        self.step as usize
    }
}

/// For each lock key, the steps that can change a lease on it, in history order: the commands
/// carrying the key among their arguments, its expiries, and every stop and clock jump (a fault
/// matters to whichever copy its node holds). A grant's walk reads only these: reading every step
/// read, at many masters, the other clients' commands on every master too.
#[derive(Debug, Clone, Default)]
struct Touching {
    keys: Needles,
    /// Per key (its [`Needles`] position).
    lists: Vec<Vec<KeyStep>>,
    /// For each stop, when its node served its first command after it (of any key, on any
    /// connection): a copy left in doubt by the stop was lost no later than that.
    up_again_us: Vec<Option<u64>>,
    /// The effect of each distinct script text.
    scripts: Vec<ScriptEffect>,
}

impl Touching {
    /// The steps that can matter to leases on `keys`.
    fn of(steps: &[Step<'_>], nodes: &NodeTable<'_>, keys: Needles) -> Self {
        let mut lists: Vec<Vec<KeyStep>> = vec![Vec::new(); keys.len()];
        let mut up_again_us = Vec::new();
        let (mut memo, mut shas, mut scripts) = (BTreeMap::new(), BTreeMap::new(), Vec::new());
        // The stops of each node whose first command after them is yet to come.
        let mut awaiting: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        for (i, step) in steps.iter().enumerate() {
            let index = u32::try_from(i).expect("fewer than 2^32 events");
            match step.kind {
                StepKind::Command { args, .. } => {
                    for stop in awaiting[nodes.of_step(i)].drain(..) {
                        up_again_us[stop] = Some(step.event.at_us);
                    }
                    // A script loaded for `EVALSHA`: its text is read like an `EVAL`'s.
                    if args.len() == 3 && args[0].eq_ignore_ascii_case("SCRIPT") && args[1].eq_ignore_ascii_case("LOAD")
                    {
                        script_index(&args[2], &mut memo, &mut shas, &mut scripts);
                    }
                    let mut name = None;
                    for arg in args.iter().skip(1) {
                        let Some(key) = keys.find(arg) else {
                            continue;
                        };
                        if lists[key].last().is_some_and(|last| last.step() == i) {
                            continue;
                        }
                        let name =
                            *name.get_or_insert_with(|| CommandName::read(args, &mut memo, &mut shas, &mut scripts));
                        lists[key].push(KeyStep {
                            step: index,
                            touch: Touch::Command(name),
                        });
                    }
                }
                StepKind::Expired(expiry) => {
                    if let Some(key) = keys.find(expiry.key) {
                        lists[key].push(KeyStep {
                            step: index,
                            touch: Touch::Expired,
                        });
                    }
                }
                StepKind::Fault(fault) => {
                    let touch = match fault {
                        Fault::Crash { .. } | Fault::PowerLoss { .. } | Fault::Shutdown { .. } => {
                            let stop = up_again_us.len();
                            up_again_us.push(None);
                            awaiting[nodes.of_step(i)].push(stop);
                            Touch::Stop(u32::try_from(stop).expect("fewer than 2^32 stops"))
                        }
                        Fault::ClockJump { .. } => Touch::ClockJump,
                        _ => continue,
                    };
                    for list in &mut lists {
                        list.push(KeyStep { step: index, touch });
                    }
                }
                _ => {}
            }
        }
        Touching {
            keys,
            lists,
            up_again_us,
            scripts,
        }
    }
}

/// The requests of the grants at the masters: command steps on client connections whose
/// arguments carry a grant's value (for each of `values`, (step index, succeeded), in history
/// order).
fn requests_by_value(history: &OpHistory<'_>, values: &Needles) -> Vec<Vec<(usize, bool)>> {
    let mut by_value: Vec<Vec<(usize, bool)>> = vec![Vec::new(); values.len()];
    for (i, step) in history.steps().iter().enumerate() {
        let StepKind::Command { conn, args, reply, .. } = step.kind else {
            continue;
        };
        if conn == 0 {
            continue;
        }
        if let Some(value) = args.iter().skip(1).find_map(|arg| values.find(arg)) {
            by_value[value].push((i, reply_succeeded(reply)));
        }
    }
    by_value
}

/// Reads the history's [`LeaseIndex`], and sets every hold's [`Hold::master_grant`].
pub(crate) fn find_master_grants(history: &mut OpHistory<'_>) {
    let nodes = NodeTable::of(&history.steps);
    let keys = Needles::new(history.holds.iter().map(|hold| hold.grant.key.clone()));
    let touching = Touching::of(&history.steps, &nodes, keys);
    history.lease_index = LeaseIndex { nodes, touching };
    let grants = master_grants(history);
    for (hold, grant) in history.holds.iter_mut().zip(grants) {
        hold.master_grant = grant;
    }
}

/// Each hold's [`Hold::master_grant`].
fn master_grants<'h>(history: &OpHistory<'h>) -> Vec<Option<&'h Event>> {
    let nodes = &history.lease_index.nodes;
    let values = Needles::new(history.holds.iter().map(|hold| hold.grant.value.clone()));
    let by_value = requests_by_value(history, &values);
    // Which grant last counted each node as reached, and as succeeded (its index + 1): sets
    // by node index, reused from grant to grant.
    let mut reached_by = vec![0usize; nodes.len()];
    let mut succeeded_by = vec![0usize; nodes.len()];
    let mut grants = Vec::with_capacity(history.holds.len());
    for (h, hold) in history.holds.iter().enumerate() {
        let mark = h + 1;
        let since = hold
            .acquire
            .map_or(0, |op| history.steps[history.operations[op].invoke].event.seq);
        let requests = values.find(&hold.grant.value).map_or(&[][..], |v| &by_value[v]);
        // Requests are in history order: those of this acquire are one stretch of them.
        let first = requests.partition_point(|&(i, _)| history.steps[i].event.seq <= since);
        let mut reached = 0usize;
        let mut succeeded: Vec<&Event> = Vec::new();
        for &(i, ok) in &requests[first..] {
            let step = &history.steps[i];
            if step.event.seq >= hold.granted.seq {
                break;
            }
            let carries_key = matches!(step.kind, StepKind::Command { args, .. } if args.contains(&hold.grant.key));
            if !carries_key {
                continue;
            }
            let node = nodes.of_step(i);
            if reached_by[node] != mark {
                reached_by[node] = mark;
                reached += 1;
            }
            if ok && succeeded_by[node] != mark {
                succeeded_by[node] = mark;
                succeeded.push(step.event);
            }
        }
        grants.push(succeeded.get(majority(reached) - 1).copied());
    }
    grants
}

/// How the lease on one master ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LeaseEnd<'h> {
    /// At this true time (µs), by this event (`None`: its natural expiry, computed).
    At(u64, Option<&'h Event>),
    /// Not before this true time (µs); when exactly, the history does not show.
    NotBefore(u64),
}

impl LeaseEnd<'_> {
    /// The earliest it can have been.
    fn earliest_us(&self) -> u64 {
        match *self {
            LeaseEnd::At(us, _) | LeaseEnd::NotBefore(us) => us,
        }
    }

    /// The latest it can have been (`u64::MAX`: unknown).
    fn latest_us(&self) -> u64 {
        match *self {
            LeaseEnd::At(us, _) => us,
            LeaseEnd::NotBefore(_) => u64::MAX,
        }
    }
}

/// The lease a grant held on its masters.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease<'h> {
    /// The masters the grant's requests reached.
    pub reached: usize,
    /// On each master where the acquisition took effect: when it did, and how the lease ended.
    /// A copy put there after the grant (a late request of the acquisition) starts then.
    pub held: Vec<(&'h str, u64, LeaseEnd<'h>)>,
    /// When the grant was told to its holder (true time, µs).
    pub granted_us: u64,
}

impl<'h> Lease<'h> {
    /// When the lease held on a majority of the reached masters ended: its earliest and latest
    /// possible true times (µs), and the event that ended it, if one did.
    pub(crate) fn majority_end(&self) -> (u64, u64, Option<&'h Event>) {
        let need = majority(self.reached);
        if self.held.len() < need {
            return (0, 0, None);
        }
        if self.held.iter().any(|&(_, since_us, _)| since_us > self.granted_us) {
            return self.majority_end_with_late_copies(need);
        }
        let mut by_earliest: Vec<&LeaseEnd<'h>> = self.held.iter().map(|(_, _, e)| e).collect();
        by_earliest.sort_by_key(|e| std::cmp::Reverse(e.earliest_us()));
        let mut latest: Vec<u64> = self.held.iter().map(|(_, _, e)| e.latest_us()).collect();
        latest.sort_by_key(|&us| std::cmp::Reverse(us));
        let end = by_earliest[need - 1];
        let event = match end {
            LeaseEnd::At(_, event) => *event,
            LeaseEnd::NotBefore(_) => None,
        };
        (end.earliest_us(), latest[need - 1], event)
    }
}

impl<'h> Lease<'h> {
    /// [`Lease::majority_end`] when a copy started after the grant: a late request of the
    /// grant's own acquisition (the client's acquire sent it to every master, a quorum answered
    /// without this one, its link slow or held) landed on a master whose key was free, and put
    /// the holder's value there; the holder's renewals, carrying the same value, renew it. While
    /// it holds no competitor can take the key on that master, so it counts — from the moment it
    /// landed, never before: the lease ends at the first instant fewer than `need` copies hold.
    fn majority_end_with_late_copies(&self, need: usize) -> (u64, u64, Option<&'h Event>) {
        let first_gap = |end_of: fn(&LeaseEnd<'h>) -> u64| -> Option<(u64, &LeaseEnd<'h>)> {
            let mut ends: Vec<&LeaseEnd<'h>> = self.held.iter().map(|(_, _, e)| e).collect();
            ends.sort_by_key(|e| end_of(e));
            ends.into_iter().map(|e| (end_of(e), e)).find(|&(t, _)| {
                let holding = self
                    .held
                    .iter()
                    .filter(|&&(_, since_us, ref end)| since_us <= t && end_of(end) > t)
                    .count();
                holding < need
            })
        };
        let Some((earliest_us, end)) = first_gap(LeaseEnd::earliest_us) else {
            return (0, 0, None);
        };
        let latest_us = first_gap(LeaseEnd::latest_us).map_or(u64::MAX, |(t, _)| t);
        let event = match end {
            LeaseEnd::At(_, event) => *event,
            LeaseEnd::NotBefore(_) => None,
        };
        (earliest_us, latest_us.max(earliest_us), event)
    }
}

/// The state of one master's copy of the grant's key while the reader walks the history.
#[derive(Default)]
struct Copy<'h> {
    since_us: u64,
    /// The master's monotonic reading at which the key expires (`None`: no TTL known).
    expiry_ms: Option<i64>,
    /// A crash left the copy in doubt since this time.
    doubt_us: Option<u64>,
    /// The first command the master served after that crash: it was running again by then.
    up_again_us: Option<u64>,
    end: Option<LeaseEnd<'h>>,
}

/// The grant's identity on the masters: its value, or a hash field named after it (see the
/// [module](self) docs).
#[derive(Debug, Clone, Copy)]
struct Ident<'a>(&'a str);

impl Ident<'_> {
    /// Whether `arg` carries the grant: the value itself, or the value, `:` and a suffix.
    fn matches(&self, arg: &str) -> bool {
        arg == self.0 || arg.strip_prefix(self.0).is_some_and(|rest| rest.starts_with(':'))
    }
}

/// What a script (an `EVAL`'s text) may do to the lock key, read from the Redis commands it calls
/// (`redis.call("name", …)` or `redis.pcall`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ScriptEffect {
    /// It may put the grant on the key: `SET`-like or a hash field write.
    creates: bool,
    /// It may make the key a plain string without a TTL (`SET` without `PX`/`EX`).
    persists: bool,
    /// The unit of the TTL it sets (ms per unit: 1 for `PEXPIRE`/`PX`, 1,000 for `EXPIRE`/`EX`).
    ttl_unit_ms: Option<i64>,
    /// It may delete the key or the grant's field.
    deletes: bool,
    /// It calls a command whose effect on the key this reader does not know.
    unknown: bool,
}

impl ScriptEffect {
    /// Reads what a script may do from the commands it calls, each by its row of the command
    /// table: reads and writes that cannot make or end a string lock's lease leave the lock key
    /// as it is (a fencing counter, an unlock message, a signal list); commands that move keys,
    /// set an absolute expiry (computed inside the script) or that the table lacks are unknown.
    fn read(script: &str) -> ScriptEffect {
        use lockstep_sim::redis::table::{self, LeaseEffect, TtlSource};
        let text = script.to_ascii_lowercase();
        let quoted = |word: &str| text.contains(&format!("\"{word}\"")) || text.contains(&format!("'{word}'"));
        let mut effect = ScriptEffect::default();
        let mut ms = false;
        let mut seconds = false;
        for name in called_commands(&text) {
            let Some(spec) = table::command(name.as_bytes()) else {
                effect.unknown = true;
                continue;
            };
            match spec.lease {
                LeaseEffect::SetsValue {
                    ttl: TtlSource::Relative { unit_ms, .. },
                    ..
                } => {
                    effect.creates = true;
                    if unit_ms == 1 {
                        ms = true;
                    } else {
                        seconds = true;
                    }
                }
                LeaseEffect::SetsValue { .. } => {
                    effect.creates = true;
                    if quoted("px") {
                        ms = true;
                    } else if quoted("ex") {
                        seconds = true;
                    } else if !quoted("keepttl") {
                        effect.persists = true;
                    }
                }
                LeaseEffect::WritesField => effect.creates = true,
                LeaseEffect::SetsExpiry {
                    unit_ms: 1,
                    absolute: false,
                } => ms = true,
                LeaseEffect::SetsExpiry { absolute: false, .. } => seconds = true,
                LeaseEffect::Deletes | LeaseEffect::DeletesField => effect.deletes = true,
                LeaseEffect::Persists => effect.persists = true,
                LeaseEffect::None => {}
                LeaseEffect::SetsExpiry { absolute: true, .. }
                | LeaseEffect::GetEx
                | LeaseEffect::Moves
                | LeaseEffect::RunsScript => effect.unknown = true,
            }
        }
        effect.ttl_unit_ms = if ms {
            Some(1)
        } else if seconds {
            Some(1_000)
        } else {
            None
        };
        effect
    }

    /// Whether it may be an acquisition: it may put the grant on the key and deletes nothing (a
    /// hash lock's release also writes the field: `HINCRBY key field -1`, then `DEL`).
    fn acquires(&self) -> bool {
        self.creates && !self.deletes
    }

    /// The TTL it set, ms: its last integer argument, in its unit.
    fn ttl_ms(&self, args: &[String]) -> Option<i64> {
        let unit = self.ttl_unit_ms?;
        let n: i64 = args.last()?.parse().ok()?;
        Some(n.saturating_mul(unit))
    }
}

/// The names of the Redis commands a script's (lower-cased) text calls, in order.
fn called_commands(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    for (at, _) in text.match_indices("call(") {
        let rest = text[at + "call(".len()..].trim_start();
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let rest = &rest[1..];
        if let Some(end) = rest.find(quote) {
            names.push(&rest[..end]);
        }
    }
    names
}

/// Whether the grant's lock answers nil when an acquisition script took the lock (see the
/// [module](self) docs): over its acquire (`since` to the grant), the last script on each master
/// that carried the grant and may create it answered nil more often than it answered a
/// conventional success. `touching` lists the steps that can matter to the grant's key.
fn nil_acquires(
    history: &OpHistory<'_>,
    touching: (&Touching, &[KeyStep]),
    hold: &Hold<'_>,
    since: u64,
    ident: Ident<'_>,
) -> bool {
    let (touching, list) = touching;
    let (steps, nodes) = (history.steps(), &history.lease_index.nodes);
    let key = hold.grant.key.as_str();
    // Each node's last such reply, by node index (allocated at the first one).
    let mut last: Vec<Option<&str>> = Vec::new();
    let first = list.partition_point(|ks| steps[ks.step()].event.seq <= since);
    for ks in &list[first..] {
        let step = &steps[ks.step()];
        if step.event.seq >= hold.granted.seq {
            break;
        }
        // Every script carrying the key after its name is listed: an `EVAL` on the key is one.
        let Touch::Command(CommandName::Eval(script)) = ks.touch else {
            continue;
        };
        let StepKind::Command { conn, args, reply, .. } = step.kind else {
            continue;
        };
        if conn == 0 || args.len() < 2 {
            continue;
        }
        let on_key = args.iter().skip(2).any(|a| a == key);
        let carries = args.iter().skip(2).any(|a| ident.matches(a));
        if on_key && carries && touching.scripts[script as usize].acquires() {
            if last.is_empty() {
                last = vec![None; nodes.len()];
            }
            last[nodes.of_step(ks.step())] = Some(reply);
        }
    }
    let nil = last.iter().flatten().filter(|r| **r == "(nil)").count();
    let conventional = last.iter().flatten().filter(|r| reply_succeeded(r)).count();
    nil > conventional
}

/// The TTL, ms from the command, that a value-storing command sets (`None`: none), by where the
/// table says it comes from; `wall_ms` is the master's wall clock then (for `PXAT`/`EXAT`).
pub(crate) fn store_ttl_ms(args: &[String], ttl: TtlSource, wall_ms: i64) -> Option<i64> {
    match ttl {
        TtlSource::Clears => None,
        TtlSource::Relative { at, unit_ms } => args.get(at)?.parse::<i64>().ok().map(|n| n.saturating_mul(unit_ms)),
        TtlSource::SetOptions => set_ttl_ms(args).or_else(|| {
            let at = args
                .iter()
                .position(|a| a.eq_ignore_ascii_case("PXAT") || a.eq_ignore_ascii_case("EXAT"))?;
            let n: i64 = args.get(at + 1)?.parse().ok()?;
            let unit = if args[at].eq_ignore_ascii_case("EXAT") {
                1_000
            } else {
                1
            };
            Some(n.saturating_mul(unit).saturating_sub(wall_ms))
        }),
    }
}

/// The TTL a `SET … PX|EX n` sets, ms.
fn set_ttl_ms(args: &[String]) -> Option<i64> {
    let at = args
        .iter()
        .position(|a| a.eq_ignore_ascii_case("PX") || a.eq_ignore_ascii_case("EX"))?;
    let n: i64 = args.get(at + 1)?.parse().ok()?;
    Some(if args[at].eq_ignore_ascii_case("EX") {
        n * 1_000
    } else {
        n
    })
}

/// Each master's copy of a grant, by node index (a map keyed by name cost a string comparison
/// per look-up, on every step of the walk).
struct Copies<'h> {
    /// Each node's position in `copies` (`u32::MAX`: none).
    slot: Vec<u32>,
    copies: Vec<(usize, Copy<'h>)>,
}

impl<'h> Copies<'h> {
    fn new(nodes: usize) -> Self {
        Copies {
            slot: vec![u32::MAX; nodes],
            copies: Vec::new(),
        }
    }

    fn get(&self, node: usize) -> Option<&Copy<'h>> {
        let slot = *self.slot.get(node)?;
        self.copies.get(slot as usize).map(|(_, copy)| copy)
    }

    fn get_mut(&mut self, node: usize) -> Option<&mut Copy<'h>> {
        let slot = *self.slot.get(node)?;
        self.copies.get_mut(slot as usize).map(|(_, copy)| copy)
    }

    /// Puts `copy` on `node`, in place of the one it had.
    fn insert(&mut self, node: usize, copy: Copy<'h>) {
        match self.get_mut(node) {
            Some(old) => *old = copy,
            None => {
                self.slot[node] = u32::try_from(self.copies.len()).expect("fewer than 2^32 copies");
                self.copies.push((node, copy));
            }
        }
    }
}

/// The lease of `hold` on the masters; see the [module](self) docs. `clocks` are the history's
/// ([`ClockTracks::of`]).
///
/// A master that was down when the grant was given counts as reached and holding a copy until it
/// served again: while down it could grant the key to nobody (Redlock's argument for a crashed
/// master kept down for a TTL), so a competitor needed a majority without it.
pub fn lease<'h>(
    history: &OpHistory<'h>,
    hold: &Hold<'h>,
    clocks: &ClockTracks<'_>,
    downtimes: &Downtimes<'h>,
) -> Lease<'h> {
    let (key, value) = (hold.grant.key.as_str(), hold.grant.value.as_str());
    let ident = Ident(value);
    let (steps, nodes) = (history.steps(), &history.lease_index.nodes);
    // The steps that can matter to a lease on the key (read anew for a hold of another history).
    let own = &history.lease_index.touching;
    let other;
    let (touching, list) = match own.keys.find(key) {
        Some(k) => (own, own.lists[k].as_slice()),
        None => {
            other = Touching::of(steps, nodes, Needles::new([key.to_string()]));
            (&other, other.lists[0].as_slice())
        }
    };
    let since = hold
        .acquire
        .map_or(0, |op| steps[history.operations()[op].invoke].event.seq);
    let nil_success = nil_acquires(history, (touching, list), hold, since, ident);
    // The masters reached, by node index, and how many.
    let mut reached = vec![false; nodes.len()];
    let mut reached_count = 0usize;
    let mut copies = Copies::new(nodes.len());
    // Copies whose lease has not ended yet. Once the grant is given (no copy is made after it)
    // and none is left, nothing later can change the lease: the walk stops there instead of
    // reading the rest of the history for every grant.
    let mut open = 0usize;
    let natural = |node: usize, copy: &Copy<'h>| match copy.expiry_ms {
        // The latest instant the master's clock can have reached the expiry: a lock is only
        // charged with a lie the readings prove.
        Some(ms) => clocks
            .true_us_range(nodes.name(node), ms)
            .map_or(LeaseEnd::NotBefore(copy.since_us), |(_, latest_us)| {
                LeaseEnd::At(latest_us, None)
            }),
        None => LeaseEnd::NotBefore(copy.since_us),
    };
    let first = list.partition_point(|ks| steps[ks.step()].event.seq <= since);
    for ks in &list[first..] {
        let step = &steps[ks.step()];
        let event = step.event;
        if open == 0 && event.seq >= hold.granted.seq {
            break;
        }
        let node = nodes.of_step(ks.step());
        match (&step.kind, ks.touch) {
            (
                &StepKind::Command {
                    conn,
                    args,
                    reply,
                    effects,
                    ..
                },
                Touch::Command(name),
            ) => {
                let carries = args.iter().skip(1).any(|a| ident.matches(a));
                // What the server recorded the command did to the lock key (simulated and served
                // histories; a real server's records none).
                let recorded = effects.iter().find(|e| e.key == key);
                let ok = reply_succeeded(reply);
                let before_grant = event.seq < hold.granted.seq;
                if carries && conn != 0 && before_grant && !std::mem::replace(&mut reached[node], true) {
                    reached_count += 1;
                }
                let held = copies.get(node).is_some_and(|c| c.end.is_none());
                let own_value = args.get(name.value_at()).is_some_and(|v| v == value);
                // A hash command on the lock key naming the grant's field.
                let own_field = args[1] == key && args.get(2).is_some_and(|f| ident.matches(f));
                let acquires = ok && before_grant && !held;
                // A late request of the grant's own acquisition (sent before the grant, answered
                // by a quorum without it) that lands on a master where the grant never held the
                // key, while the holder still holds: it puts the holder's value there, and the
                // holder's renewals renew it. See [`late_acquisition`].
                let late_acquires =
                    ok && !before_grant && copies.get(node).is_none() && conn != 0 && event.seq < hold.end_seq();
                match name {
                    CommandName::Store { ttl, .. } if own_value && (acquires || late_acquires) => {
                        open += 1;
                        copies.insert(
                            node,
                            Copy {
                                since_us: event.at_us,
                                expiry_ms: store_ttl_ms(args, ttl, event.wall_ms).map(|ttl| event.monotonic_ms + ttl),
                                ..Copy::default()
                            },
                        );
                    }
                    // A renewal by `SET key <own value> XX PX ttl` (or any successful SET of the
                    // grant's value on a key holding it): the TTL is the new one. `KEEPTTL`
                    // keeps it; neither leaves the key without one.
                    CommandName::Store { ttl, .. }
                        if own_value && ok && held && !args.iter().any(|a| a.eq_ignore_ascii_case("KEEPTTL")) =>
                    {
                        let expiry_ms = store_ttl_ms(args, ttl, event.wall_ms).map(|ttl| event.monotonic_ms + ttl);
                        copies.get_mut(node).expect("held").expiry_ms = expiry_ms;
                    }
                    // Our own value again without effect (a refused `SET NX` retry, a `KEEPTTL`), or
                    // on a key that no longer holds the grant (a re-creation revives no lease).
                    CommandName::Store { .. } if own_value => {}
                    name if name.sets_value() && ok && held => {
                        // Another value: ours was gone by then. After a crash it was lost with
                        // the process, but nobody could take the key before the master ran
                        // again: the lease lasted until then (or its expiry, if earlier).
                        let copy = copies.get(node).expect("held");
                        let end = match copy.up_again_us {
                            Some(up_us) => match natural(node, copy) {
                                LeaseEnd::At(expiry_us, _) if expiry_us < up_us => LeaseEnd::At(expiry_us, None),
                                _ => LeaseEnd::At(up_us, Some(event)),
                            },
                            None => LeaseEnd::At(event.at_us, Some(event)),
                        };
                        copies.get_mut(node).expect("held").end = Some(end);
                        open -= 1;
                    }
                    // A hash lock's acquisition by plain commands: the field is written (an
                    // existing field of the grant's name is the grant's too); a `PEXPIRE`
                    // gives it its TTL.
                    CommandName::HashWrite
                        if own_field && !reply.starts_with('-') && before_grant && !held && conn != 0 =>
                    {
                        open += 1;
                        copies.insert(
                            node,
                            Copy {
                                since_us: event.at_us,
                                ..Copy::default()
                            },
                        );
                    }
                    CommandName::Expiry { unit_ms, absolute } if ok && held => {
                        let n: Option<i64> = args.get(2).and_then(|a| a.parse().ok());
                        // An absolute time is on the master's wall clock: what is left of it then.
                        let ms = n.map(|n| {
                            let ms = n.saturating_mul(unit_ms);
                            if absolute {
                                ms.saturating_sub(event.wall_ms)
                            } else {
                                ms
                            }
                        });
                        if let Some(copy) = copies.get_mut(node) {
                            copy.expiry_ms = ms.map(|ms| event.monotonic_ms + ms);
                        }
                    }
                    CommandName::Persist if ok && held => {
                        copies.get_mut(node).expect("held").expiry_ms = None;
                    }
                    // The key deleted, or the grant's field of a hash lock.
                    name if (name.deletes_key() || name == CommandName::HDel)
                        && ok
                        && held
                        && (name != CommandName::HDel || own_field) =>
                    {
                        let own = event.seq >= hold.end_seq() && hold.given_up();
                        let copy = copies.get(node).expect("held");
                        let end = if own {
                            natural(node, copy)
                        } else {
                            LeaseEnd::At(event.at_us, Some(event))
                        };
                        copies.get_mut(node).expect("held").end = Some(end);
                        open -= 1;
                    }
                    // A script whose text this reader cannot read whole (an `FCALL`, an `EVALSHA` of
                    // a body never seen, one calling a command the table marks unknown, such as a
                    // `PEXPIREAT` computed from `TIME`): what the server recorded it did.
                    CommandName::Script | CommandName::Eval(_)
                        if recorded.is_some()
                            && match name {
                                CommandName::Eval(script) => touching.scripts[script as usize].unknown,
                                _ => true,
                            } =>
                    {
                        let Some(effect) = recorded else { continue };
                        let ours = |state: &lockstep_sim::KeyState| {
                            state.value.as_deref() == Some(value) || state.fields.iter().any(|f| ident.matches(f))
                        };
                        let expiry_of = |state: &lockstep_sim::KeyState| {
                            state
                                .expire_at_ms
                                .map(|at| event.monotonic_ms + at.saturating_sub(event.wall_ms))
                        };
                        if held {
                            let copy = copies.get_mut(node).expect("held");
                            match &effect.after {
                                // Still ours: a renewal (or a write that kept the key).
                                Some(after) if ours(after) => copy.expiry_ms = expiry_of(after),
                                // Deleted by a script carrying the grant: our release; the lease is
                                // what the masters would have held.
                                None if carries => {
                                    copy.end = Some(natural(node, copy));
                                    open -= 1;
                                }
                                // Deleted or overwritten by another: ended then.
                                _ => {
                                    copy.end = Some(LeaseEnd::At(event.at_us, Some(event)));
                                    open -= 1;
                                }
                            }
                        } else if (before_grant || late_acquires)
                            && conn != 0
                            && effect.after.as_ref().is_some_and(ours)
                        {
                            let expiry_ms = effect.after.as_ref().and_then(expiry_of);
                            open += 1;
                            copies.insert(
                                node,
                                Copy {
                                    since_us: event.at_us,
                                    expiry_ms,
                                    ..Copy::default()
                                },
                            );
                        }
                    }
                    CommandName::Eval(script) if carries => {
                        let script = touching.scripts[script as usize];
                        // Whether the script's writing branch ran (see the module docs).
                        let took_effect = if nil_success && before_grant && script.acquires() {
                            reply == "(nil)"
                        } else {
                            ok
                        };
                        if !took_effect {
                            continue;
                        }
                        if held {
                            let copy = copies.get_mut(node).expect("held");
                            // A script that may both delete and set a TTL (a release that also
                            // expires a signal list; a renewal that deletes when its compare
                            // fails) is read by what the holder was doing: a release once it
                            // gave the grant up, a renewal before.
                            let given_up = event.seq >= hold.end_seq() && hold.given_up();
                            if script.deletes && (script.ttl_unit_ms.is_none() || given_up) {
                                // Our compare-and-delete: the lease is what the masters would
                                // have held.
                                copy.end = Some(natural(node, copy));
                                open -= 1;
                            } else if script.ttl_unit_ms.is_some() {
                                copy.expiry_ms = script.ttl_ms(args).map(|ms| event.monotonic_ms + ms);
                            } else if script.persists || script.unknown {
                                copy.expiry_ms = None;
                            }
                        } else if (before_grant || late_acquires) && conn != 0 && (script.acquires() || script.unknown)
                        {
                            // An acquisition: its TTL when the script sets one (and the reader
                            // knows all it does), else held with its end unknown.
                            let expiry_ms = script
                                .ttl_ms(args)
                                .filter(|_| !script.unknown)
                                .map(|ms| event.monotonic_ms + ms);
                            open += 1;
                            copies.insert(
                                node,
                                Copy {
                                    since_us: event.at_us,
                                    expiry_ms,
                                    ..Copy::default()
                                },
                            );
                        }
                    }
                    _ => {}
                }
            }
            (StepKind::Expired(_), Touch::Expired) => {
                if let Some(copy) = copies.get_mut(node).filter(|c| c.end.is_none()) {
                    copy.end = Some(LeaseEnd::At(event.at_us, Some(event)));
                    open -= 1;
                }
            }
            (StepKind::Fault(fault), touch) => {
                let Some(copy) = copies.get_mut(node).filter(|c| c.end.is_none()) else {
                    continue;
                };
                match (fault, touch) {
                    // The first stop while held leaves the copy in doubt; the first command
                    // the master served after it says it was running again by then.
                    (Fault::Crash { .. } | Fault::PowerLoss { .. } | Fault::Shutdown { .. }, Touch::Stop(stop))
                        if copy.doubt_us.is_none() =>
                    {
                        copy.doubt_us = Some(event.at_us);
                        copy.up_again_us = touching.up_again_us[stop as usize];
                    }
                    (Fault::ClockJump { delta_ms, .. }, _) => {
                        if let Some(expiry) = copy.expiry_ms.as_mut() {
                            *expiry -= *delta_ms;
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    // In node name order, as the copies were always listed.
    copies.copies.sort_unstable_by_key(|&(node, _)| nodes.rank[node]);
    let mut held: Vec<(&'h str, u64, LeaseEnd<'h>)> = copies
        .copies
        .into_iter()
        .map(|(node, copy)| {
            let end = match (copy.end, copy.doubt_us) {
                (Some(end), _) => end,
                (None, Some(doubt)) => LeaseEnd::NotBefore(doubt),
                (None, None) => natural(node, &copy),
            };
            (nodes.name(node), copy.since_us, end)
        })
        .collect();
    let granted_us = hold.granted.at_us;
    // Servers the history does not name (downtimes read from another history).
    let mut unnamed: BTreeSet<&'h str> = BTreeSet::new();
    for (node, up_us) in downtimes.down_at(granted_us) {
        let newly_reached = match nodes.id(node) {
            Some(id) => !std::mem::replace(&mut reached[id], true),
            None => unnamed.insert(node),
        };
        if newly_reached {
            reached_count += 1;
            let end = match up_us {
                Some(up_us) => LeaseEnd::At(up_us, None),
                None => LeaseEnd::NotBefore(downtimes.end_us.max(granted_us)),
            };
            held.push((node, granted_us, end));
        }
    }
    Lease {
        reached: reached_count,
        held,
        granted_us,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::testkit;
    use lockstep_sim::clock::NodeClock;
    use lockstep_sim::History;

    /// A track of `clock`'s readings at `times_us`, with a drift change (recorded as the node's
    /// own event) at `drift_at`.
    fn track(clock: &NodeClock, times_us: &[u64], drift_at: Option<(u64, i64)>) -> ClockTrack {
        let mut samples = Vec::new();
        let mut stretches = vec![Stretch {
            first: 0,
            drift_ppm: None,
        }];
        for &t in times_us {
            if let Some((at, ppm)) = drift_at.filter(|&(at, _)| at == t) {
                clock.set_drift(at, ppm);
                stretches.push(Stretch {
                    first: samples.len(),
                    drift_ppm: Some(ppm),
                });
            }
            samples.push((t, clock.monotonic_ms(t)));
        }
        ClockTrack { samples, stretches }
    }

    /// The first true µs at which `clock` reads `ms` (its rate no longer changes).
    fn truth_us(clock: &NodeClock, ms: i64) -> u64 {
        let (mut lo, mut hi) = (0u64, 100_000_000u64);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if clock.monotonic_us(mid) >= ms * 1_000 {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// Appends an event given as its JSON kind (the history file's shape), at true `at_us`, on a
    /// node whose clocks read true time (monotonic ms = true ms).
    fn push(history: &mut History, at_us: u64, node: &str, kind: serde_json::Value) -> u64 {
        let kind: lockstep_sim::EventKind = serde_json::from_value(kind).expect("an event kind");
        let ms = (at_us / 1_000) as i64;
        history.push(at_us, node, 1_767_225_600_000 + ms, ms, kind)
    }

    fn command(history: &mut History, at_ms: u64, args: &[&str], reply: &str) -> u64 {
        let kind = serde_json::json!({ "type": "command", "conn": 1, "args": args, "reply": reply });
        push(history, at_ms * 1_000, "redis-1", kind)
    }

    fn op(history: &mut History, at_ms: u64, id: u64, phase: &str, op: &str, data: serde_json::Value) -> u64 {
        let kind = serde_json::json!({ "type": "op", "id": id, "phase": phase, "op": op, "data": data });
        push(history, at_ms * 1_000, "client-1", kind)
    }

    /// The end of the lease of the history's only grant: (earliest, latest) µs.
    fn lease_end(history: &History) -> (u64, u64) {
        let ops = OpHistory::new(history);
        let (clocks, downtimes) = (ClockTracks::of(&ops), Downtimes::of(&ops));
        let lease = lease(&ops, &ops.holds()[0], &clocks, &downtimes);
        let (earliest, latest, _) = lease.majority_end();
        (earliest, latest)
    }

    /// Redisson's scripts, as `scenarios/libraries/redisson-rlock.toml` writes them.
    const HASH_ACQUIRE: &str = "if redis.call(\"exists\", KEYS[1]) == 0 or redis.call(\"hexists\", KEYS[1], ARGV[1]) == 1 then\n  redis.call(\"hincrby\", KEYS[1], ARGV[1], 1)\n  redis.call(\"pexpire\", KEYS[1], ARGV[2])\n  return nil\nend\nreturn redis.call(\"pttl\", KEYS[1])\n";
    const HASH_EXTEND: &str = "if redis.call(\"hexists\", KEYS[1], ARGV[1]) == 0 then return 0 end\nredis.call(\"pexpire\", KEYS[1], ARGV[2])\nreturn 1\n";
    const HASH_RELEASE: &str = "if redis.call(\"hexists\", KEYS[1], ARGV[1]) == 0 then return nil end\nif redis.call(\"hincrby\", KEYS[1], ARGV[1], -1) > 0 then return 0 end\nredis.call(\"del\", KEYS[1])\nredis.call(\"publish\", KEYS[2], \"0\")\nreturn 1\n";

    #[test]
    fn a_copy_put_by_a_late_acquire_request_holds_the_lease_from_when_it_landed() {
        // Three masters reached before the grant at 0.2 s (need 2): redis-2 until 8.6 s, redis-3
        // until 7.5 s. The acquisition's request to redis-1 landed late, at 4.9 s, on a free key
        // and was renewed until 8.6 s: from 4.9 s on two copies hold until 8.6 s.
        let copy = |node, since_ms: u64, end_ms: u64| (node, since_ms * 1_000, LeaseEnd::At(end_ms * 1_000, None));
        let late = Lease {
            reached: 2,
            held: vec![
                copy("redis-1", 4_900, 8_619),
                copy("redis-2", 10, 8_611),
                copy("redis-3", 9, 7_510),
            ],
            granted_us: 200_000,
        };
        // Once: 7.510 s, the late copy not counted.
        assert_eq!(late.majority_end(), (8_611_000, 8_611_000, None));
        // The late copy covers no gap before it landed: redis-2's copy ended at 4.0 s, before it.
        let gap = Lease {
            held: vec![
                copy("redis-1", 4_900, 8_619),
                copy("redis-2", 10, 4_000),
                copy("redis-3", 9, 7_510),
            ],
            ..late.clone()
        };
        assert_eq!(gap.majority_end(), (4_000_000, 4_000_000, None));
        // A late copy's end in doubt: the earliest is known, the latest is not.
        let doubt = Lease {
            held: vec![
                ("redis-1", 4_900_000, LeaseEnd::NotBefore(6_000_000)),
                copy("redis-2", 10, 8_611),
                copy("redis-3", 9, 7_510),
            ],
            ..late.clone()
        };
        assert_eq!(doubt.majority_end(), (7_510_000, 8_611_000, None));
        // Without a late copy, the reading is the one it always was: the need-th latest end.
        let on_time = Lease {
            held: vec![copy("redis-2", 10, 8_611), copy("redis-3", 9, 7_510)],
            ..late
        };
        assert_eq!(on_time.majority_end(), (7_510_000, 7_510_000, None));
    }

    #[test]
    fn a_grant_is_carried_by_its_value_or_a_hash_field_named_after_it() {
        let ident = Ident("client-1");
        assert!(ident.matches("client-1"));
        assert!(ident.matches("client-1:1"));
        assert!(ident.matches("client-1:thread-7"));
        assert!(!ident.matches("client-10"));
        assert!(!ident.matches("client-10:1"));
        assert!(!ident.matches("lockstep:fence:client-1"));
    }

    #[test]
    fn scripts_are_read_from_the_commands_they_call() {
        let acquire = ScriptEffect::read(HASH_ACQUIRE);
        assert!(acquire.acquires() && !acquire.unknown, "{acquire:?}");
        assert_eq!(acquire.ttl_unit_ms, Some(1));
        let extend = ScriptEffect::read(HASH_EXTEND);
        assert!(!extend.creates && !extend.deletes && !extend.unknown && extend.ttl_unit_ms == Some(1));
        // A hash release writes the field (a decrement) and deletes: not an acquisition.
        let release = ScriptEffect::read(HASH_RELEASE);
        assert!(release.deletes && release.creates && !release.acquires() && !release.unknown);
        // node-redlock's extension sets the value again with PX; the TTL is the last argument.
        let set_px = ScriptEffect::read("if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\nredis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])\nreturn 1");
        assert_eq!(
            set_px.ttl_ms(&[
                "EVAL".into(),
                "...".into(),
                "1".into(),
                "lock".into(),
                "v".into(),
                "2000".into()
            ]),
            Some(2_000)
        );
        assert!(!set_px.persists);
        assert!(ScriptEffect::read("return redis.call('set', KEYS[1], ARGV[1])").persists);
        assert_eq!(
            ScriptEffect::read("redis.call('expire', KEYS[1], 3)").ttl_ms(&["3".into()]),
            Some(3_000)
        );
        // The fencing counter of a script that issues tokens is another key.
        let fenced = ScriptEffect::read("if redis.call(\"set\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[2]) then\n  return redis.call(\"incr\", KEYS[2])\nend\nreturn 0");
        assert!(fenced.acquires() && !fenced.unknown && fenced.ttl_unit_ms == Some(1));
        assert!(ScriptEffect::read("return redis.call('rename', KEYS[1], KEYS[2])").unknown);
    }

    /// client-1 takes a Redisson-like hash lock (the script answers nil when it took it, the
    /// other holder's PTTL when it did not), extends it at 5 s, and releases at 6 s.
    fn hash_lock(extend_reply: &str) -> History {
        let mut h = History::new();
        op(
            &mut h,
            0,
            1,
            "invoke",
            "acquire",
            serde_json::json!({ "key": "lock", "ttl_ms": 10_000 }),
        );
        command(
            &mut h,
            2,
            &["EVAL", HASH_ACQUIRE, "1", "lock", "client-1:1", "10000"],
            "(nil)",
        );
        let grant = serde_json::json!({ "key": "lock", "value": "client-1", "fencing_token": null, "validity_ms": 9_880, "validity_from_ms": 4 });
        op(&mut h, 4, 1, "ok", "acquire", grant.clone());
        op(
            &mut h,
            5_000,
            2,
            "invoke",
            "extend",
            serde_json::json!({ "key": "lock", "value": "client-1", "fencing_token": null, "ttl_ms": 10_000 }),
        );
        command(
            &mut h,
            5_002,
            &["EVAL", HASH_EXTEND, "1", "lock", "client-1:1", "10000"],
            extend_reply,
        );
        let mut renewed = grant;
        renewed["validity_from_ms"] = 5_004.into();
        op(&mut h, 5_004, 2, "ok", "extend", renewed);
        op(
            &mut h,
            6_000,
            3,
            "invoke",
            "release",
            serde_json::json!({ "key": "lock", "value": "client-1", "fencing_token": null }),
        );
        command(
            &mut h,
            6_002,
            &[
                "EVAL",
                HASH_RELEASE,
                "2",
                "lock",
                "redisson_lock__channel:lock",
                "client-1:1",
            ],
            ":1",
        );
        op(
            &mut h,
            6_004,
            3,
            "ok",
            "release",
            serde_json::json!({ "released": true }),
        );
        h
    }

    #[test]
    fn a_hash_locks_lease_is_its_keys_ttl_while_it_holds_the_field() {
        // Read by the old reader: no request carried the value (the field is `client-1:1`), so no
        // master held the grant and its lease "ended at 0.000 s".
        let (earliest, latest) = lease_end(&hash_lock(":1"));
        // Extended at 5.002 s for 10 s; the holder's own release does not end it early.
        assert_eq!((earliest, latest), (15_002_000, 15_002_000));
        // An extension that found the field gone (`:0`) extended nothing: the acquisition's TTL.
        assert_eq!(lease_end(&hash_lock(":0")), (10_002_000, 10_002_000));
    }

    #[test]
    fn a_script_that_deletes_or_renews_is_read_by_what_the_holder_was_doing() {
        // A renewal that deletes the key when its compare fails: while the holder holds the
        // grant, its success (`:1`) is a renewal, not a release.
        const RENEW_OR_DELETE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end\nredis.call('del', KEYS[1])\nreturn 0";
        let mut h = History::new();
        op(
            &mut h,
            0,
            1,
            "invoke",
            "acquire",
            serde_json::json!({ "key": "lock", "ttl_ms": 2_000 }),
        );
        command(&mut h, 2, &["SET", "lock", "v1", "NX", "PX", "2000"], "+OK");
        let grant = serde_json::json!({ "key": "lock", "value": "v1", "fencing_token": null, "validity_ms": 1_996, "validity_from_ms": 4 });
        op(&mut h, 4, 1, "ok", "acquire", grant);
        command(
            &mut h,
            1_000,
            &["EVAL", RENEW_OR_DELETE, "1", "lock", "v1", "2000"],
            ":1",
        );
        assert_eq!(lease_end(&h), (3_000_000, 3_000_000));
    }

    #[test]
    fn a_refused_hash_acquisition_holds_nothing() {
        // client-1's first attempt is refused (the PTTL of another holder's lock, an integer
        // reply), its second takes the lock: the lease starts at the second.
        let mut h = History::new();
        op(
            &mut h,
            0,
            1,
            "invoke",
            "acquire",
            serde_json::json!({ "key": "lock", "ttl_ms": 10_000 }),
        );
        command(
            &mut h,
            2,
            &["EVAL", HASH_ACQUIRE, "1", "lock", "client-1:1", "10000"],
            ":4000",
        );
        command(
            &mut h,
            3_000,
            &["EVAL", HASH_ACQUIRE, "1", "lock", "client-1:1", "10000"],
            "(nil)",
        );
        let grant = serde_json::json!({ "key": "lock", "value": "client-1", "fencing_token": null, "validity_ms": 9_880, "validity_from_ms": 3_002 });
        op(&mut h, 3_002, 1, "ok", "acquire", grant);
        assert_eq!(lease_end(&h), (13_000_000, 13_000_000));
    }

    #[test]
    fn a_set_xx_px_of_the_grants_value_renews_the_lease() {
        let mut h = History::new();
        op(
            &mut h,
            0,
            1,
            "invoke",
            "acquire",
            serde_json::json!({ "key": "lock", "ttl_ms": 2_000 }),
        );
        command(&mut h, 2, &["SET", "lock", "v1", "NX", "PX", "2000"], "+OK");
        let grant = serde_json::json!({ "key": "lock", "value": "v1", "fencing_token": null, "validity_ms": 1_996, "validity_from_ms": 4 });
        op(&mut h, 4, 1, "ok", "acquire", grant);
        command(&mut h, 1_500, &["SET", "lock", "v1", "XX", "PX", "2000"], "+OK");
        assert_eq!(lease_end(&h), (3_500_000, 3_500_000));
        // Refused (the key no longer held the value: `XX` found nothing), it renews nothing.
        let mut refused = History::new();
        op(
            &mut refused,
            0,
            1,
            "invoke",
            "acquire",
            serde_json::json!({ "key": "lock", "ttl_ms": 2_000 }),
        );
        command(&mut refused, 2, &["SET", "lock", "v1", "NX", "PX", "2000"], "+OK");
        let grant = serde_json::json!({ "key": "lock", "value": "v1", "fencing_token": null, "validity_ms": 1_996, "validity_from_ms": 4 });
        op(&mut refused, 4, 1, "ok", "acquire", grant);
        command(&mut refused, 1_500, &["SET", "lock", "v1", "XX", "PX", "2000"], "(nil)");
        assert_eq!(lease_end(&refused), (2_002_000, 2_002_000));
    }

    #[test]
    fn seed_61_a_deadline_past_the_last_reading_is_bounded_not_extrapolated() {
        // client-3 of explore seed 61 (token-release, bounded): a -243 ppm drift from 4.788 s,
        // then its last readings; the lock's deadline reads 10741 ms, 1.7 s after the last one.
        let clock = NodeClock::new(0, 0, 0);
        let mut times: Vec<u64> = (1..40).map(|k| k * 120_000).collect();
        times.push(4_788_000);
        times.extend([
            8_230_000, 8_234_000, 8_236_000, 8_238_000, 8_241_000, 8_320_000, 8_322_000, 8_324_000, 8_327_000,
            8_329_000, 8_738_000, 8_740_000, 8_742_000, 8_745_000, 8_750_000, 9_048_000, 9_050_000, 9_052_000,
        ]);
        let track = track(&clock, &times, Some((4_788_000, -243)));
        let truth = truth_us(&clock, 10_741);
        assert_eq!(truth, 10_742_447);
        let (earliest, latest) = track.true_us_range(10_741).expect("readings");
        assert!(
            earliest <= truth && truth <= latest,
            "{earliest}..{latest} misses {truth}"
        );
        assert!(latest - earliest < 100, "{earliest}..{latest}");
        // The point estimate (rate over the last second of millisecond readings) is 2.6 ms late:
        // past the master's lease end (10.743 s) by more than the checker's 2 ms tolerance.
        let point = track.true_us_at(10_741).expect("readings");
        assert!(point > 10_743_000 + 2_000, "{point}");
    }

    #[test]
    fn an_initial_rate_is_bounded_from_the_clock_starting_at_zero() {
        let clock = NodeClock::new(0, 0, 300);
        let times: Vec<u64> = (1..50).map(|k| k * 97_000 + k % 3).collect();
        let track = track(&clock, &times, None);
        for ms in [2_000, 4_751, 7_000] {
            let truth = truth_us(&clock, ms);
            let (earliest, latest) = track.true_us_range(ms).expect("readings");
            assert!(
                earliest <= truth && truth <= latest,
                "{ms}: {earliest}..{latest} misses {truth}"
            );
            assert!(latest - earliest <= 2_000, "{ms}: {earliest}..{latest}");
        }
    }

    #[test]
    fn readings_that_contradict_the_model_fall_back_to_the_point_estimate() {
        // A real process's clock does not read 0 at true time 0.
        let track = ClockTrack {
            samples: vec![(0, 5_000_000), (1_000_000, 5_001_000), (2_000_000, 5_002_000)],
            stretches: vec![Stretch {
                first: 0,
                drift_ppm: None,
            }],
        };
        let point = track.true_us_at(5_003_000).expect("readings");
        assert_eq!(track.true_us_range(5_003_000), Some((point, point)));
    }

    #[test]
    fn every_clock_read_in_one_pass_is_the_clock_read_alone() {
        for fenced in [false, true] {
            let (history, _) = testkit::kleppmann(fenced);
            let ops = OpHistory::new(&history);
            let clocks = ClockTracks::of(&ops);
            let nodes: BTreeSet<&str> = history.events().iter().map(|e| e.node.as_str()).collect();
            assert!(nodes.len() >= 3, "{nodes:?}");
            for node in nodes {
                let alone = ClockTrack::of(&ops, node);
                assert!(!alone.samples.is_empty());
                assert_eq!(clocks.node(node), &alone, "{node}");
            }
            assert_eq!(clocks.node("nobody"), &ClockTrack::default());
            assert_eq!(clocks.node("nobody").true_us_at(5), None);
        }
    }
}
