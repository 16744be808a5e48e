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
//! The lease on one master runs from the successful `SET key value … PX|EX ttl` until the first
//! of: its expiry (the master's clock reaching the TTL set by the latest successful `SET`,
//! `PEXPIRE`, or compare-and-`PEXPIRE` script, converted to true time by that master's clock
//! rate and wall-clock jumps), an `Expired` event for the key, another value set on the key, or
//! a deletion the holder did not ask for (a `DEL` before the holder gave the grant up). The
//! holder's own deletion (a compare-and-delete carrying the value, or any deletion after its
//! release or abort) does not end the lease early: the lease is what the masters would have
//! held. A crash, power loss or shutdown of the master leaves the lease in doubt until the key's
//! next expiry (it survived) or another value set (it was lost with the process; while the master
//! was down nobody could take the key, so that copy's lease lasted until the first command the
//! master served again, or its expiry if earlier: a sound upper bound of the restart, so a lock
//! is charged only with a lie the history proves). A command carrying
//! the value whose effect this reader does not know (a script other than the compare-and-delete
//! and compare-and-`PEXPIRE` ones) leaves the lease's end unknown.
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
//! replica that received the key is not counted), and `PXAT`/`EXAT`/`KEEPTTL`.

use super::{Hold, OpHistory, StepKind};
use lockstep_sim::{Event, Fault};
use std::collections::{BTreeMap, BTreeSet};

/// Whether a master's one-line reply says the command took effect.
pub fn reply_succeeded(reply: &str) -> bool {
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
    pub fn true_us_range(&self, monotonic_ms: i64) -> Option<(u64, u64)> {
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
    pub fn true_us_at(&self, monotonic_ms: i64) -> Option<u64> {
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
    pub fn down_at(&self, at_us: u64) -> Vec<(&'h str, Option<u64>)> {
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
        let StepKind::Command { conn, args, reply } = step.kind else {
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
    pub fn earliest_us(&self) -> u64 {
        match *self {
            LeaseEnd::At(us, _) | LeaseEnd::NotBefore(us) => us,
        }
    }

    /// The latest it can have been (`u64::MAX`: unknown).
    pub fn latest_us(&self) -> u64 {
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
    pub fn majority_end(&self) -> (u64, u64, Option<&'h Event>) {
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
    let since = hold
        .acquire
        .map_or(0, |op| history.steps()[history.operations()[op].invoke].event.seq);
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
            &StepKind::Command { conn, args, reply } => {
                if let Some(copy) = copies.get_mut(node).filter(|c| c.end.is_none() && c.doubt_us.is_some()) {
                    copy.up_again_us.get_or_insert(event.at_us);
                }
                if args.len() < 2 || !args.iter().skip(1).any(|a| a == key) {
                    continue;
                }
                let name = args[0].to_ascii_uppercase();
                let carries = args.iter().skip(1).any(|a| a == value);
                let ok = reply_succeeded(reply);
                if carries && conn != 0 && event.seq < hold.granted.seq {
                    reached.insert(node);
                }
                let held = copies.get(node).is_some_and(|c| c.end.is_none());
                let script = args.get(1).map(|s| s.to_ascii_lowercase()).unwrap_or_default();
                let own_value = args.get(2).is_some_and(|v| v == value);
                match name.as_str() {
                    "SET" if ok && own_value && event.seq < hold.granted.seq && !held => {
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
                    // Our own value again (a retry after the grant): not another holder.
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
                    "PEXPIRE" | "EXPIRE" if ok && held => {
                        let n: Option<i64> = args.get(2).and_then(|a| a.parse().ok());
                        let ms = if name == "EXPIRE" { n.map(|s| s * 1_000) } else { n };
                        if let Some(copy) = copies.get_mut(node) {
                            copy.expiry_ms = ms.map(|ms| event.monotonic_ms + ms);
                        }
                    }
                    "DEL" | "UNLINK" | "GETDEL" if ok && held => {
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
                    "EVAL" if carries && ok && held => {
                        if script.contains("pexpire") {
                            let ttl: Option<i64> = args.last().and_then(|a| a.parse().ok());
                            if let Some(copy) = copies.get_mut(node) {
                                copy.expiry_ms = ttl.map(|ms| event.monotonic_ms + ms);
                            }
                        } else if script.contains("del") {
                            let copy = copies.get(node).expect("held");
                            let end = natural(node, copy);
                            copies.get_mut(node).expect("held").end = Some(end);
                            open -= 1;
                        } else {
                            let copy = copies.get_mut(node).expect("held");
                            copy.expiry_ms = None;
                        }
                    }
                    "EVAL" if carries && ok && !held && conn != 0 && event.seq < hold.granted.seq => {
                        // An acquisition by a script this reader does not know: held, end unknown.
                        open += 1;
                        copies.insert(
                            node,
                            Copy {
                                since_us: event.at_us,
                                ..Copy::default()
                            },
                        );
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
