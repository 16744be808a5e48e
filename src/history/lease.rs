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
//! [`ClockTrack::true_us_range`] bounds the true instant at which it read a given value: the
//! clock's rate is constant between its drift changes (the `drift` faults of the node, which state
//! the new rate), it starts at 0 at true time 0 (the simulator's clocks), and every reading is
//! the floor of the microsecond clock; every instant consistent with all the readings of that
//! stretch is inside the range (a sound bound, not a guess). [`ClockTrack::true_us_at`] is the
//! older point estimate (interpolated, after the last event extrapolated at the rate seen over
//! the node's last second), kept for display: from millisecond readings its rate can be off by
//! a thousand ppm, which over the seconds after a client's last event is milliseconds.
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

use super::{Hold, OpHistory, StepKind};
use lockstep_sim::{Event, Fault};
use std::collections::{BTreeMap, BTreeSet};

/// Whether a master's one-line reply says the command took effect.
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
        let point = self.true_us_at(monotonic_ms)?;
        // The stretch that holds the value: the last one whose first reading is not above it.
        let k = self
            .stretches
            .iter()
            .rposition(|s| k_first_reading(&self.samples, s).is_none_or(|m| m <= monotonic_ms))
            .unwrap_or(0);
        let stretch = self.stretches[k];
        let end = self.stretches.get(k + 1).map_or(self.samples.len(), |s| s.first);
        // The drift fault's own event, recorded by the node at the instant of the change, opens
        // the stretch (the reading is continuous there). A value read within a millisecond of a
        // change is bounded with the rate of the stretch its reading falls in: the error is the
        // rate difference over that millisecond, well under a microsecond.
        let samples = &self.samples[stretch.first.min(end)..end];
        let exact_origin = k == 0;
        if samples.is_empty() && !exact_origin {
            return Some((point, point));
        }
        let Some((rate_min, rate_max)) = rate_bounds(samples, stretch.drift_ppm, exact_origin) else {
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
    by_node: BTreeMap<&'h str, ClockTrack>,
}

impl<'h> ClockTracks<'h> {
    /// The clock of every node of `history`.
    pub fn of(history: &OpHistory<'h>) -> Self {
        // The same reading as [`ClockTrack::of`], for every node at once.
        let mut by_node: BTreeMap<&'h str, ClockTrack> = BTreeMap::new();
        let fresh = || ClockTrack {
            samples: Vec::new(),
            stretches: vec![Stretch {
                first: 0,
                drift_ppm: None,
            }],
        };
        for step in history.steps() {
            if let StepKind::Fault(Fault::Drift { node, drift_ppm }) = step.kind {
                let track = by_node.entry(node.as_str()).or_insert_with(fresh);
                track.stretches.push(Stretch {
                    first: track.samples.len(),
                    drift_ppm: Some(*drift_ppm),
                });
            }
            let event: &'h Event = step.event;
            by_node
                .entry(event.node.as_str())
                .or_insert_with(fresh)
                .samples
                .push((event.at_us, event.monotonic_ms));
        }
        ClockTracks { by_node }
    }

    /// The clock of `node` (without samples when it has no event), as [`ClockTrack::of`] reads it.
    pub fn node(&self, node: &str) -> &ClockTrack {
        static NO_SAMPLES: ClockTrack = ClockTrack {
            samples: Vec::new(),
            stretches: Vec::new(),
        };
        self.by_node.get(node).unwrap_or(&NO_SAMPLES)
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
        let mut by_node: BTreeMap<&'h str, Vec<Downtime>> = BTreeMap::new();
        let mut serves_clients: BTreeSet<&'h str> = BTreeSet::new();
        let mut replicates: BTreeSet<&'h str> = BTreeSet::new();
        let mut end_us = 0;
        for step in history.steps() {
            let event: &'h Event = step.event;
            end_us = end_us.max(event.at_us);
            match step.kind {
                StepKind::Fault(
                    Fault::Crash { node, .. } | Fault::PowerLoss { node, .. } | Fault::Shutdown { node },
                ) => {
                    let spans = by_node.entry(node.as_str()).or_default();
                    if spans.last().is_none_or(|span| span.up_us.is_some()) {
                        spans.push(Downtime {
                            from_us: event.at_us,
                            up_us: None,
                            as_replica: false,
                        });
                    }
                }
                StepKind::Command { conn, .. } => {
                    if conn != 0 {
                        serves_clients.insert(event.node.as_str());
                    } else {
                        replicates.insert(event.node.as_str());
                    }
                    if let Some(span) = by_node
                        .get_mut(event.node.as_str())
                        .and_then(|s| s.last_mut())
                        .filter(|span| span.up_us.is_none())
                    {
                        span.up_us = Some(event.at_us);
                        span.as_replica = conn == 0;
                    }
                }
                _ => {}
            }
        }
        by_node.retain(|node, _| serves_clients.contains(node) || !replicates.contains(node));
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

/// The requests of a grant at the masters: command steps on client connections whose arguments
/// carry the key and the value (`value`'s grants → (step index, succeeded)).
fn requests_by_value<'a>(history: &'a OpHistory<'_>) -> BTreeMap<&'a str, Vec<(usize, bool)>> {
    let mut by_value: BTreeMap<&'a str, Vec<(usize, bool)>> = BTreeMap::new();
    for hold in history.holds() {
        by_value.entry(hold.grant.value.as_str()).or_default();
    }
    for (i, step) in history.steps().iter().enumerate() {
        let StepKind::Command { conn, args, reply, .. } = step.kind else {
            continue;
        };
        if conn == 0 {
            continue;
        }
        for arg in args.iter().skip(1) {
            if let Some(list) = by_value.get_mut(arg.as_str()) {
                list.push((i, reply_succeeded(reply)));
                break;
            }
        }
    }
    by_value
}

/// Sets every hold's [`Hold::master_grant`].
pub(crate) fn find_master_grants(history: &mut OpHistory<'_>) {
    let by_value = requests_by_value(history);
    let mut grants = Vec::with_capacity(history.holds.len());
    for hold in &history.holds {
        let since = hold
            .acquire
            .map_or(0, |op| history.steps[history.operations[op].invoke].event.seq);
        let requests = by_value
            .get(hold.grant.value.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        // Sets for membership: a grant reaches every master, so lists made this quadratic in them.
        let mut reached: BTreeSet<&str> = BTreeSet::new();
        let mut succeeded: Vec<&Event> = Vec::new();
        let mut succeeded_on: BTreeSet<&str> = BTreeSet::new();
        for &(i, ok) in requests {
            let step = &history.steps[i];
            let seq = step.event.seq;
            let carries_key = matches!(step.kind, StepKind::Command { args, .. } if args.contains(&hold.grant.key));
            if seq <= since || seq >= hold.granted.seq || !carries_key {
                continue;
            }
            let node = step.event.node.as_str();
            reached.insert(node);
            if ok && succeeded_on.insert(node) {
                succeeded.push(step.event);
            }
        }
        grants.push(succeeded.get(majority(reached.len()) - 1).copied());
    }
    for (hold, grant) in history.holds.iter_mut().zip(grants) {
        hold.master_grant = grant;
    }
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
    pub held: Vec<(&'h str, u64, LeaseEnd<'h>)>,
}

impl<'h> Lease<'h> {
    /// When the lease held on a majority of the reached masters ended: its earliest and latest
    /// possible true times (µs), and the event that ended it, if one did.
    pub(crate) fn majority_end(&self) -> (u64, u64, Option<&'h Event>) {
        let need = majority(self.reached);
        if self.held.len() < need {
            return (0, 0, None);
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

/// Hash commands that write a field: on the lock key with the grant's field, they put (or keep)
/// the grant on the key.
const HASH_WRITES: &[&str] = &["HSET", "HSETNX", "HINCRBY", "HINCRBYFLOAT", "HMSET"];

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
    /// Commands that leave the lock key as it is: reads, and writes of other keys (a fencing
    /// counter, an unlock message, a signal list).
    const NEUTRAL: &'static [&'static str] = &[
        "get", "exists", "hexists", "hget", "hgetall", "hlen", "hkeys", "hvals", "pttl", "ttl", "type", "strlen",
        "mget", "time", "publish", "incr", "incrby", "decr", "decrby", "lpush", "rpush", "lpop", "rpop", "llen",
    ];

    fn read(script: &str) -> ScriptEffect {
        let text = script.to_ascii_lowercase();
        let quoted = |word: &str| text.contains(&format!("\"{word}\"")) || text.contains(&format!("'{word}'"));
        let mut effect = ScriptEffect::default();
        let mut ms = false;
        let mut seconds = false;
        for name in called_commands(&text) {
            match name {
                "set" | "setnx" | "getset" => {
                    effect.creates = true;
                    if quoted("px") {
                        ms = true;
                    } else if quoted("ex") {
                        seconds = true;
                    } else if !quoted("keepttl") {
                        effect.persists = true;
                    }
                }
                "psetex" => (effect.creates, ms) = (true, true),
                "setex" => (effect.creates, seconds) = (true, true),
                "hset" | "hsetnx" | "hincrby" | "hincrbyfloat" | "hmset" => effect.creates = true,
                "pexpire" => ms = true,
                "expire" => seconds = true,
                "del" | "unlink" | "getdel" | "hdel" => effect.deletes = true,
                name if Self::NEUTRAL.contains(&name) => {}
                _ => effect.unknown = true,
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
/// conventional success.
fn nil_acquires(history: &OpHistory<'_>, hold: &Hold<'_>, since: u64, ident: Ident<'_>) -> bool {
    let key = hold.grant.key.as_str();
    let mut last: BTreeMap<&str, &str> = BTreeMap::new();
    for step in history
        .steps()
        .iter()
        .filter(|s| s.event.seq > since && s.event.seq < hold.granted.seq)
    {
        let StepKind::Command { conn, args, reply, .. } = step.kind else {
            continue;
        };
        let is_eval = args.first().is_some_and(|a| a.eq_ignore_ascii_case("EVAL"));
        if conn == 0 || !is_eval || args.len() < 2 {
            continue;
        }
        let on_key = args.iter().skip(2).any(|a| a == key);
        let carries = args.iter().skip(2).any(|a| ident.matches(a));
        if on_key && carries && ScriptEffect::read(&args[1]).acquires() {
            last.insert(step.event.node.as_str(), reply);
        }
    }
    let nil = last.values().filter(|r| **r == "(nil)").count();
    let conventional = last.values().filter(|r| reply_succeeded(r)).count();
    nil > conventional
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
    let since = hold
        .acquire
        .map_or(0, |op| history.steps()[history.operations()[op].invoke].event.seq);
    let nil_success = nil_acquires(history, hold, since, ident);
    let mut reached: BTreeSet<&'h str> = BTreeSet::new();
    let mut copies: BTreeMap<&'h str, Copy<'h>> = BTreeMap::new();
    // Copies whose lease has not ended yet. Once the grant is given (no copy is made after it)
    // and none is left, nothing later can change the lease: the walk stops there instead of
    // reading the rest of the history for every grant.
    let mut open = 0usize;
    let natural = |node: &'h str, copy: &Copy<'h>| match copy.expiry_ms {
        // The latest instant the master's clock can have reached the expiry: a lock is only
        // charged with a lie the readings prove.
        Some(ms) => clocks
            .node(node)
            .true_us_range(ms)
            .map_or(LeaseEnd::NotBefore(copy.since_us), |(_, latest_us)| {
                LeaseEnd::At(latest_us, None)
            }),
        None => LeaseEnd::NotBefore(copy.since_us),
    };
    for step in history.steps().iter().filter(|s| s.event.seq > since) {
        let event = step.event;
        if open == 0 && event.seq >= hold.granted.seq {
            break;
        }
        let node = event.node.as_str();
        match &step.kind {
            &StepKind::Command { conn, args, reply, .. } => {
                if let Some(copy) = copies.get_mut(node).filter(|c| c.end.is_none() && c.doubt_us.is_some()) {
                    copy.up_again_us.get_or_insert(event.at_us);
                }
                if args.len() < 2 || !args.iter().skip(1).any(|a| a == key) {
                    continue;
                }
                let name = args[0].to_ascii_uppercase();
                let carries = args.iter().skip(1).any(|a| ident.matches(a));
                let ok = reply_succeeded(reply);
                let before_grant = event.seq < hold.granted.seq;
                if carries && conn != 0 && before_grant {
                    reached.insert(node);
                }
                let held = copies.get(node).is_some_and(|c| c.end.is_none());
                let own_value = args.get(2).is_some_and(|v| v == value);
                // A hash command on the lock key naming the grant's field.
                let own_field = args[1] == key && args.get(2).is_some_and(|f| ident.matches(f));
                let acquires = ok && before_grant && !held;
                match name.as_str() {
                    "SET" if own_value && acquires => {
                        open += 1;
                        copies.insert(
                            node,
                            Copy {
                                since_us: event.at_us,
                                expiry_ms: set_ttl_ms(args).map(|ttl| event.monotonic_ms + ttl),
                                ..Copy::default()
                            },
                        );
                    }
                    // A renewal by `SET key <own value> XX PX ttl` (or any successful SET of the
                    // grant's value on a key holding it): the TTL is the new one. `KEEPTTL`
                    // keeps it; neither leaves the key without one.
                    "SET" if own_value && ok && held && !args.iter().any(|a| a.eq_ignore_ascii_case("KEEPTTL")) => {
                        let expiry_ms = set_ttl_ms(args).map(|ttl| event.monotonic_ms + ttl);
                        copies.get_mut(node).expect("held").expiry_ms = expiry_ms;
                    }
                    // Our own value again without effect (a refused `SET NX` retry, a `KEEPTTL`), or
                    // on a key that no longer holds the grant (a re-creation revives no lease).
                    "SET" if own_value => {}
                    "SET" | "GETSET" | "SETNX" if ok && held => {
                        // Another value: ours was gone by then. After a crash it was lost with
                        // the process, but nobody could take the key before the master ran
                        // again: the lease lasted until then (or its expiry, if earlier).
                        let copy = copies.get(node).expect("held");
                        let end = match (copy.up_again_us, natural(node, copy)) {
                            (Some(up_us), LeaseEnd::At(expiry_us, _)) if expiry_us < up_us => {
                                LeaseEnd::At(expiry_us, None)
                            }
                            (Some(up_us), _) => LeaseEnd::At(up_us, Some(event)),
                            (None, _) => LeaseEnd::At(event.at_us, Some(event)),
                        };
                        copies.get_mut(node).expect("held").end = Some(end);
                        open -= 1;
                    }
                    // A hash lock's acquisition by plain commands: the field is written (an
                    // existing field of the grant's name is the grant's too); a `PEXPIRE`
                    // gives it its TTL.
                    name if HASH_WRITES.contains(&name)
                        && own_field
                        && !reply.starts_with('-')
                        && before_grant
                        && !held
                        && conn != 0 =>
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
                    "PEXPIRE" | "EXPIRE" if ok && held => {
                        let n: Option<i64> = args.get(2).and_then(|a| a.parse().ok());
                        let ms = if name == "EXPIRE" { n.map(|s| s * 1_000) } else { n };
                        if let Some(copy) = copies.get_mut(node) {
                            copy.expiry_ms = ms.map(|ms| event.monotonic_ms + ms);
                        }
                    }
                    "PERSIST" if ok && held => {
                        copies.get_mut(node).expect("held").expiry_ms = None;
                    }
                    // The key deleted, or the grant's field of a hash lock.
                    "DEL" | "UNLINK" | "GETDEL" | "HDEL" if ok && held && (name != "HDEL" || own_field) => {
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
                    "EVAL" if carries => {
                        let script = ScriptEffect::read(&args[1]);
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
                        } else if before_grant && conn != 0 && (script.acquires() || script.unknown) {
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
            StepKind::Expired(expiry) if expiry.key == key => {
                if let Some(copy) = copies.get_mut(node).filter(|c| c.end.is_none()) {
                    copy.end = Some(LeaseEnd::At(event.at_us, Some(event)));
                    open -= 1;
                }
            }
            StepKind::Fault(fault) => {
                let Some(copy) = copies.get_mut(node).filter(|c| c.end.is_none()) else {
                    continue;
                };
                match fault {
                    Fault::Crash { .. } | Fault::PowerLoss { .. } | Fault::Shutdown { .. } => {
                        copy.doubt_us.get_or_insert(event.at_us);
                    }
                    Fault::ClockJump { delta_ms, .. } => {
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
    let mut held: Vec<(&'h str, u64, LeaseEnd<'h>)> = copies
        .into_iter()
        .map(|(node, copy)| {
            let end = match (copy.end, copy.doubt_us) {
                (Some(end), _) => end,
                (None, Some(doubt)) => LeaseEnd::NotBefore(doubt),
                (None, None) => natural(node, &copy),
            };
            (node, copy.since_us, end)
        })
        .collect();
    let granted_us = hold.granted.at_us;
    for (node, up_us) in downtimes.down_at(granted_us) {
        if reached.insert(node) {
            let end = match up_us {
                Some(up_us) => LeaseEnd::At(up_us, None),
                None => LeaseEnd::NotBefore(downtimes.end_us.max(granted_us)),
            };
            held.push((node, granted_us, end));
        }
    }
    Lease {
        reached: reached.len(),
        held,
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
