//! Assumption-bounded fault profiles: the faults a lock's safety argument tolerates, and, for any
//! generated plan, which of those assumptions it broke.
//!
//! A lease lock is safe only under assumptions (docs/assumptions.md gives them per algorithm):
//! every client finishes its turn — acquisition, work, writes landing at the resource — inside the
//! validity it was told; clocks drift no more than the lock allows for; no master loses a key
//! early (a restart without `aof-always` persistence before a TTL has passed, a wall clock
//! stepped forward, a failover). Not even one of a quorum lock's: a grant may hold exactly a
//! quorum of copies, and one copy lost on a master that is up again lets a competitor gather a
//! quorum. A master held down for a TTL (plus the drift allowance) loses nothing that matters:
//! while down it grants nothing, and it returns after every lease claimed across its crash. [`Assumptions::of`] reads them off a scenario
//! (algorithm, TTL, drift factor, work or renewal period, timeouts, quorum, persistence, fencing).
//!
//! - [`Assumptions::classify`] judges one plan statically, conservatively: it adds up, per client,
//!   the delays the plan can put into one turn (its pauses; holds, partitions and latencies on its
//!   links to the resource; on its links to the masters, at most a request timeout each, since a
//!   request that times out ends the operation — except for a lock whose release deletes
//!   unconditionally, where a late release is the danger) and compares them with the validity
//!   budget; it counts the masters whose key may vanish early; it checks drift and wall-clock
//!   steps against the drift allowance. Each broken assumption is a [`Broken`] with a sentence
//!   ("client-1: pauses and delays of 1.200 s > validity budget 0.800 s …").
//! - [`Assumptions::promised`] says which checkers a correct lock still satisfies under a plan:
//!   all of them when nothing is broken; when only the timing assumption is broken, the
//!   lease-validity checker (a correct lock never claims more than the masters hold, whatever the
//!   pauses) and, with fencing at the resource, stale-write, lost-update and token-order.
//! - [`Assumptions::bound`] is the profile's generator hook: it keeps a generated case inside the
//!   hard assumptions (a resource request delayed less than its timeout, so that no write lands
//!   after its holder gave up on it and released; drift within the allowance; no early key loss:
//!   a quick restart becomes a pause of that master as long as its downtime, a forward step
//!   shrinks to the allowance; a master latency of a lock that re-checks its validity either short or so long
//!   that every round through it is refused). Timing faults are kept as generated: plans that
//!   break timing are judged by what [`promised`](Assumptions::promised) leaves.
//!
//! Left out: replicas and failover (a single-master lock with replicas is out of its assumptions
//! at the first failover; the generator offers failover only to templates with replicas),
//! per-turn timing (the budget is per client over the whole run, which only over-approximates).

use super::generate::{ExploreCase, FaultProfile, GenFault};
use crate::checker::CheckerName;
use crate::model::{AlgorithmSpec, ClockKind, Fencing, Scenario, ValidityPolicy};
use lockstep_sim::{FencingMode, Persistence};
use std::collections::{BTreeMap, BTreeSet};

/// Slack kept between the budget and the validity, ms (ticks, message rounding).
const MARGIN_MS: u64 = 50;

/// Which assumption a plan broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Assumption {
    /// A client's pauses and delays may outlast the validity it was told.
    Timing,
    /// A clock drifted beyond the allowance, or a wall clock the lock times itself with stepped.
    Clock,
    /// More masters may lose the key early (restart without persistence, forward wall-clock step)
    /// than the lock tolerates.
    Masters,
}

impl Assumption {
    /// `timing`, `clock` or `masters`.
    pub fn name(self) -> &'static str {
        match self {
            Assumption::Timing => "timing",
            Assumption::Clock => "clock",
            Assumption::Masters => "masters",
        }
    }
}

/// One broken assumption, with the sentence that says how.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Broken {
    /// Which one.
    pub assumption: Assumption,
    /// How, e.g. "client-1: pauses and delays of 1.200 s > validity budget 0.800 s".
    pub detail: String,
}

/// A lock's assumptions, read off a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Assumptions {
    /// The algorithm's name.
    pub algorithm: String,
    /// The lock's TTL, ms.
    pub ttl_ms: u64,
    /// What the lock subtracts for drift, ms (0 when it subtracts nothing).
    pub drift_allowance_ms: u64,
    /// The largest drift, either way, of any node, ppm.
    pub drift_ppm_max: i64,
    /// The validity left at any point of a turn before its writes: TTL − drift allowance − the
    /// longest work (or, with renewal, the renewal period), ms.
    pub lease_left_ms: u64,
    /// What a client's pauses and delays may add up to: the lease left minus the resource's
    /// round trips and a margin, ms.
    pub budget_ms: u64,
    /// The clients' request timeout to the masters, ms.
    pub master_timeout_ms: u64,
    /// The clients' request timeout to the resource, ms: a write delayed longer lands after its
    /// holder gave up on it and released.
    pub resource_timeout_ms: u64,
    /// The release deletes whatever is there (a late release is dangerous).
    pub release_unsafe: bool,
    /// The lock refuses a grant whose validity ran out (it computes and re-checks it).
    pub refuses_slow_rounds: bool,
    /// The lock times its acquisition with the wall clock.
    pub wall_clock: bool,
    /// Writes carry fencing tokens the resource checks.
    pub fenced: bool,
    /// The master that hands out fencing tokens, when fenced.
    pub fencing_master: Option<String>,
    /// The masters the lock uses.
    pub masters: Vec<String>,
    /// Masters whose keys survive a restart (`appendfsync always`).
    pub durable_masters: BTreeSet<String>,
    /// The client names.
    pub clients: Vec<String>,
    /// The resource's node name.
    pub resource: String,
}

fn seconds(ms: u64) -> String {
    format!("{}.{:03} s", ms / 1_000, ms % 1_000)
}

impl Assumptions {
    /// The assumptions of `template`'s lock.
    pub fn of(template: &Scenario) -> Assumptions {
        let lock = &template.lock;
        let ttl_ms = lock.ttl_ms;
        let all_masters: Vec<String> = template.masters.iter().map(|m| m.name.clone()).collect();
        let (drift_factor, wall_clock, refuses, quorum_of, renewal_ms, release_unsafe) = match &lock.algorithm {
            AlgorithmSpec::Naive => (0.0, false, true, None, None, true),
            AlgorithmSpec::TokenRelease => (0.0, false, true, None, None, false),
            AlgorithmSpec::Watchdog(w) => (0.0, false, true, None, Some(w.extend_every_ms), false),
            AlgorithmSpec::Redlock(r) => (
                r.drift_factor,
                r.clock == ClockKind::Wall,
                true,
                Some((all_masters.len(), all_masters.len() / 2 + 1)),
                None,
                false,
            ),
            AlgorithmSpec::Script(s) => (
                if s.validity == ValidityPolicy::TtlMinusDrift {
                    s.drift_factor
                } else {
                    0.0
                },
                s.clock == ClockKind::Wall,
                s.validity == ValidityPolicy::TtlMinusDrift && s.validity_recheck,
                Some((s.masters.min(all_masters.len()), s.quorum)),
                match s.renewal {
                    crate::model::Renewal::Every { interval_ms } => Some(interval_ms),
                    _ => None,
                },
                false,
            ),
        };
        let drift_allowance_ms = if drift_factor > 0.0 {
            (ttl_ms as f64 * drift_factor).floor() as u64 + 2
        } else {
            0
        };
        let used = quorum_of.map_or(1, |(used, _)| used);
        let masters: Vec<String> = all_masters.iter().take(used.max(1)).cloned().collect();
        let work_max_ms = template
            .clients
            .iter()
            .map(|c| c.effective_work_ms(&template.workload).max())
            .max()
            .unwrap_or(0);
        let turn_ms = renewal_ms.map_or(work_max_ms, |period| period.min(work_max_ms));
        let lease_left_ms = ttl_ms.saturating_sub(drift_allowance_ms).saturating_sub(turn_ms);
        let budget_ms = lease_left_ms
            .saturating_sub(2 * template.workload.resource_timeout_ms)
            .saturating_sub(MARGIN_MS);
        // Drift the allowance covers: two clocks erring in opposite directions over a TTL; a
        // lock without an allowance gets what the checker's 2 ms tolerance covers.
        let drift_ppm_max = if drift_allowance_ms > 2 {
            ((drift_allowance_ms - 2) as f64 * 1e6 / ttl_ms.max(1) as f64 / 2.0) as i64
        } else {
            (1_000.0 * 1e6 / ttl_ms.max(1) as f64 / 1_000.0 / 2.0) as i64
        };
        let durable_masters = all_masters
            .iter()
            .filter(|m| {
                let setup = template.master_setup(m);
                setup.persistence == Persistence::AofAlways
            })
            .cloned()
            .collect();
        // Tokens come from INCR after the grant, or from the script lock's own acquire (then the
        // counter lives on the lock's first master).
        let script_tokens = matches!(&lock.algorithm, AlgorithmSpec::Script(s) if s.issues_tokens());
        let fenced = (lock.fencing == Fencing::Incr || script_tokens) && template.resource != FencingMode::Unfenced;
        let fencing_master = if script_tokens {
            masters.first().cloned()
        } else {
            Some(lock.fencing_master.clone())
        };
        Assumptions {
            algorithm: lock.algorithm.name().to_string(),
            ttl_ms,
            drift_allowance_ms,
            drift_ppm_max,
            lease_left_ms,
            budget_ms,
            master_timeout_ms: lock.request_timeout_ms,
            resource_timeout_ms: template.workload.resource_timeout_ms,
            release_unsafe,
            refuses_slow_rounds: refuses,
            wall_clock,
            fenced,
            fencing_master: fencing_master.filter(|_| fenced),
            masters,
            durable_masters,
            clients: template.clients.iter().map(|c| c.name.clone()).collect(),
            resource: crate::model::RESOURCE_NODE.to_string(),
        }
    }

    /// The generator's profile for `kinds`: faults up to about twice the TTL, latencies up to
    /// `latency_ms_max` (default: the standard profile's), drift up to twice what is tolerated
    /// ([`bound`](Self::bound) brings it back).
    pub fn profile(&self, kinds: &[String], latency_ms_max: Option<u64>) -> FaultProfile {
        let ttl = self.ttl_ms.max(1);
        FaultProfile {
            kinds: kinds.to_vec(),
            pause_ms_max: 2 * ttl,
            jump_ms_max: 2 * ttl as i64,
            drift_ppm_max: 2 * self.drift_ppm_max.max(1),
            window_ms_max: 2 * ttl,
            latency_ms_max: latency_ms_max.unwrap_or(FaultProfile::default().latency_ms_max),
            ..FaultProfile::default()
        }
    }

    fn is_client(&self, node: &str) -> bool {
        self.clients.iter().any(|c| c == node)
    }

    fn is_master(&self, node: &str) -> bool {
        self.masters.iter().any(|m| m == node)
    }

    /// A master latency short enough to fit the budget (one round trip).
    fn short_latency_ms(&self) -> u64 {
        self.budget_ms / 2
    }

    /// A master latency long enough that every round through it outlasts the TTL.
    fn refused_latency_ms(&self) -> u64 {
        self.ttl_ms + 2 * MARGIN_MS
    }

    /// Whether a latency `latency_ms` on a link to a master costs nothing: every round through it
    /// is refused by the validity re-check.
    fn refused(&self, latency_ms: u64) -> bool {
        self.refuses_slow_rounds && latency_ms >= self.refused_latency_ms() && self.master_timeout_ms > 2 * latency_ms
    }

    /// The masters whose key may vanish early under `fault`, and why.
    /// `stopped_once`: the masters that only `fault` stops in the whole plan (a second stop may
    /// restart the master early: a restart of a running server is immediate).
    fn key_loss(&self, fault: &GenFault, stopped_once: &BTreeSet<String>) -> Vec<(String, String)> {
        // A restart without `appendfsync always` loses the key; held down for a TTL and the drift
        // allowance it is harmless: the master grants nothing while down and returns after every
        // lease claimed before its crash (a lease claimed while it was down holds no copy there).
        let harmless_ms = self.ttl_ms.saturating_add(self.drift_allowance_ms);
        let early = |node: &str, down_ms: u64| {
            let held_down = down_ms >= harmless_ms && stopped_once.contains(node);
            (self.is_master(node) && !self.durable_masters.contains(node) && !held_down).then(|| {
                (
                    node.to_string(),
                    format!("{node} restarts after {} without persistence", seconds(down_ms)),
                )
            })
        };
        match fault {
            GenFault::Crash { node, down_ms, .. } | GenFault::PowerLoss { node, down_ms, .. } => {
                early(node, *down_ms).into_iter().collect()
            }
            GenFault::RollingRestart { down_ms, nodes, .. } => {
                nodes.iter().filter_map(|n| early(n, *down_ms)).collect()
            }
            GenFault::Failover { node, .. } if self.is_master(node) => {
                vec![(node.clone(), format!("{node} fails over to a replica"))]
            }
            // Forward clock steps add up: see `forward_jumps`.
            _ => Vec::new(),
        }
    }

    /// The per-client delay `fault` can put into one turn, ms.
    fn delays(&self, fault: &GenFault) -> Vec<(String, u64)> {
        let master_cost = |ms: u64| {
            if self.release_unsafe {
                ms
            } else {
                ms.min(self.master_timeout_ms)
            }
        };
        let link = |a: &str, b: &str, ms: u64| -> Vec<(String, u64)> {
            let (client, server) = if self.is_client(a) { (a, b) } else { (b, a) };
            if !self.is_client(client) {
                return Vec::new();
            }
            if server == self.resource {
                vec![(client.to_string(), ms)]
            } else if self.is_master(server) {
                vec![(client.to_string(), master_cost(ms))]
            } else {
                Vec::new()
            }
        };
        match fault {
            GenFault::Pause { node, duration_ms, .. } if self.is_client(node) => vec![(node.clone(), *duration_ms)],
            GenFault::Pause { node, duration_ms, .. } if self.is_master(node) => self
                .clients
                .iter()
                .map(|c| (c.clone(), master_cost(*duration_ms)))
                .collect(),
            GenFault::Hold { a, b, length_ms, .. } | GenFault::Partition { a, b, length_ms, .. } => {
                link(a, b, *length_ms)
            }
            GenFault::Latency { a, b, latency_ms, .. } => {
                let master_link = self.is_master(a) || self.is_master(b);
                if master_link && self.refused(*latency_ms) {
                    Vec::new()
                } else {
                    link(a, b, 2 * latency_ms)
                }
            }
            _ => Vec::new(),
        }
    }

    /// The assumptions `case` breaks (empty: the plan is inside them).
    pub fn classify(&self, case: &ExploreCase) -> Vec<Broken> {
        let mut broken = Vec::new();
        let present: Vec<&GenFault> = case
            .faults
            .iter()
            .filter(|f| {
                f.nodes()
                    .iter()
                    .all(|n| self.clients.iter().take(case.clients.max(1)).any(|c| c == n) || !self.is_client(n))
            })
            .collect();
        // Timing: per client, pauses and delays summed (latencies: the largest per link).
        let mut load: BTreeMap<String, u64> = BTreeMap::new();
        let mut latency: BTreeMap<(String, String), u64> = BTreeMap::new();
        for fault in &present {
            if let GenFault::Latency { a, b, .. } = fault {
                for (client, ms) in self.delays(fault) {
                    let slot = latency.entry((client, format!("{a}|{b}"))).or_default();
                    *slot = (*slot).max(ms);
                }
                continue;
            }
            for (client, ms) in self.delays(fault) {
                *load.entry(client).or_default() += ms;
            }
        }
        // A write delayed past the resource timeout lands after its holder released.
        for fault in &present {
            let (a, b, delay_ms) = match fault {
                GenFault::Hold { a, b, length_ms, .. } | GenFault::Partition { a, b, length_ms, .. } => {
                    (a, b, *length_ms)
                }
                GenFault::Latency { a, b, latency_ms, .. } => (a, b, 2 * latency_ms),
                _ => continue,
            };
            let client = if self.is_client(a) { a } else { b };
            if (*a == self.resource || *b == self.resource) && delay_ms > self.resource_timeout_ms {
                broken.push(Broken {
                    assumption: Assumption::Timing,
                    detail: format!(
                        "{client}: a resource request delayed {} > its timeout {}: the write lands after the holder released",
                        seconds(delay_ms),
                        seconds(self.resource_timeout_ms)
                    ),
                });
            }
        }
        for ((client, _), ms) in latency {
            *load.entry(client).or_default() += ms;
        }
        for (client, ms) in &load {
            if *ms > self.budget_ms {
                broken.push(Broken {
                    assumption: Assumption::Timing,
                    detail: format!(
                        "{client}: pauses and delays of {} > validity budget {} (lease left {} − resource round trips − margin)",
                        seconds(*ms),
                        seconds(self.budget_ms),
                        seconds(self.lease_left_ms)
                    ),
                });
            }
        }
        // Clocks.
        for fault in &present {
            match fault {
                GenFault::Drift { node, drift_ppm, .. } if drift_ppm.abs() > self.drift_ppm_max => {
                    broken.push(Broken {
                        assumption: Assumption::Clock,
                        detail: format!(
                            "{node} drifts {drift_ppm} ppm, beyond the {} ppm the drift allowance ({} ms) covers",
                            self.drift_ppm_max, self.drift_allowance_ms
                        ),
                    });
                }
                GenFault::ClockJump { node, delta_ms, .. }
                    if self.wall_clock && self.is_client(node) && delta_ms.unsigned_abs() > self.drift_allowance_ms =>
                {
                    broken.push(Broken {
                        assumption: Assumption::Clock,
                        detail: format!("{node}'s wall clock, which times the acquisition, steps {delta_ms} ms"),
                    });
                }
                _ => {}
            }
        }
        // Masters losing the key early.
        let mut lost: BTreeMap<String, String> = BTreeMap::new();
        let stopped_once = stopped_once(present.iter().copied());
        for fault in &present {
            for (node, why) in self.key_loss(fault, &stopped_once) {
                lost.entry(node).or_insert(why);
            }
        }
        // A master's clock stepped forward past the allowance, in one step or in several.
        for (node, forward_ms) in forward_jumps(present.iter().copied()) {
            if self.is_master(&node) && forward_ms > self.drift_allowance_ms {
                lost.entry(node.clone())
                    .or_insert_with(|| format!("{node}'s wall clock steps forward {forward_ms} ms in all"));
            }
        }
        let fencing_lost = self.fencing_master.as_ref().is_some_and(|f| lost.contains_key(f));
        // None may: a grant can hold exactly a quorum of copies (see the module docs).
        if !lost.is_empty() {
            let why: Vec<&str> = lost.values().map(String::as_str).collect();
            broken.push(Broken {
                assumption: Assumption::Masters,
                detail: format!(
                    "{} of {} masters may lose the key early ({}); none is tolerated{}",
                    lost.len(),
                    self.masters.len(),
                    why.join("; "),
                    if fencing_lost {
                        ", and the fencing counter's master is one"
                    } else {
                        ""
                    }
                ),
            });
        }
        broken
    }

    /// The checkers a correct lock satisfies under a plan that breaks `broken`.
    pub fn promised(&self, broken: &[Broken]) -> Vec<CheckerName> {
        if broken.iter().any(|b| b.assumption != Assumption::Timing) {
            return Vec::new();
        }
        if broken.is_empty() {
            return CheckerName::ALL.to_vec();
        }
        let mut promised = vec![CheckerName::LeaseValidity];
        if self.fenced {
            promised.extend([
                CheckerName::StaleWrite,
                CheckerName::LostUpdate,
                CheckerName::TokenOrder,
            ]);
        }
        promised
    }

    /// `case` brought inside the hard assumptions (clocks, masters); see the [module](self) docs.
    pub fn bound(&self, mut case: ExploreCase) -> ExploreCase {
        let stopped_once = stopped_once(case.faults.iter());
        for fault in case.faults.iter_mut() {
            if !self.key_loss(fault, &stopped_once).is_empty() {
                // No master may lose the key early: a quick restart becomes a pause of that master
                // as long as its downtime (forward clock steps are bounded below, all together).
                match fault {
                    GenFault::Crash { at_ms, node, down_ms } | GenFault::PowerLoss { at_ms, node, down_ms } => {
                        *fault = GenFault::Pause {
                            at_ms: *at_ms,
                            node: node.clone(),
                            duration_ms: *down_ms,
                        }
                    }
                    GenFault::RollingRestart { .. } => {
                        *fault = GenFault::Drift {
                            at_ms: 0,
                            node: self.resource.clone(),
                            drift_ppm: 0,
                        }
                    }
                    // A failover cannot be made harmless: it becomes a forward step of zero.
                    GenFault::Failover { at_ms, node } => {
                        *fault = GenFault::ClockJump {
                            at_ms: *at_ms,
                            node: node.clone(),
                            delta_ms: 0,
                        }
                    }
                    _ => {}
                }
            }
            let resource_max_ms = self
                .resource_timeout_ms
                .saturating_sub(MARGIN_MS.min(self.resource_timeout_ms / 2));
            match fault {
                GenFault::Hold { a, b, length_ms, .. } | GenFault::Partition { a, b, length_ms, .. }
                    if *a == self.resource || *b == self.resource =>
                {
                    *length_ms = (*length_ms).min(resource_max_ms).max(1);
                }
                GenFault::Latency { a, b, latency_ms, .. } if *a == self.resource || *b == self.resource => {
                    *latency_ms = (*latency_ms).min(resource_max_ms / 2);
                }
                GenFault::Drift { drift_ppm, .. } => {
                    *drift_ppm = (*drift_ppm).clamp(-self.drift_ppm_max, self.drift_ppm_max)
                }
                GenFault::ClockJump { node, delta_ms, .. } if self.wall_clock && self.is_client(node) => {
                    let allowance = self.drift_allowance_ms as i64;
                    *delta_ms = (*delta_ms).clamp(-allowance, allowance);
                }
                GenFault::Latency { a, b, latency_ms, .. }
                    if self.refuses_slow_rounds
                        && self.master_timeout_ms > 2 * self.refused_latency_ms()
                        && (self.is_master(a) || self.is_master(b)) =>
                {
                    let (short, long) = (self.short_latency_ms(), self.refused_latency_ms());
                    if *latency_ms > short && *latency_ms < long {
                        *latency_ms = if *latency_ms - short < long - *latency_ms {
                            short
                        } else {
                            long
                        };
                    }
                }
                _ => {}
            }
        }
        // Forward steps of a master's clock add up: keep their sum within the allowance.
        let mut forward_ms: BTreeMap<String, u64> = BTreeMap::new();
        for fault in case.faults.iter_mut() {
            if let GenFault::ClockJump { node, delta_ms, .. } = fault {
                if self.is_master(node) && *delta_ms > 0 {
                    let used = forward_ms.entry(node.clone()).or_default();
                    let left = self.drift_allowance_ms.saturating_sub(*used);
                    *delta_ms = (*delta_ms).min(left as i64);
                    *used += *delta_ms as u64;
                }
            }
        }
        case
    }
}

/// The sum of each node's forward wall-clock steps, ms.
fn forward_jumps<'a>(faults: impl Iterator<Item = &'a GenFault>) -> BTreeMap<String, u64> {
    let mut sums: BTreeMap<String, u64> = BTreeMap::new();
    for fault in faults {
        if let GenFault::ClockJump { node, delta_ms, .. } = fault {
            if *delta_ms > 0 {
                *sums.entry(node.clone()).or_default() += delta_ms.unsigned_abs();
            }
        }
    }
    sums
}

/// The masters exactly one fault of the plan stops (a crash, power loss or rolling restart).
fn stopped_once<'a>(faults: impl Iterator<Item = &'a GenFault>) -> BTreeSet<String> {
    let mut stops: BTreeMap<&str, usize> = BTreeMap::new();
    for fault in faults {
        if matches!(
            fault,
            GenFault::Crash { .. } | GenFault::PowerLoss { .. } | GenFault::RollingRestart { .. }
        ) {
            for node in fault.nodes() {
                *stops.entry(node).or_default() += 1;
            }
        }
    }
    stops
        .into_iter()
        .filter(|(_, n)| *n == 1)
        .map(|(node, _)| node.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(lock: &str) -> Scenario {
        let source = format!(
            "name = \"t\"\ndescription = \"t\"\nduration_ms = 5000\n[topology]\nmasters = 5\nclients = 2\n[lock]\nttl_ms = 2000\n{lock}\n\
             [workload]\nuntil_ms = 4000\nwork_ms = [50, 300]\n"
        );
        Scenario::from_str(&source, "<test>").expect("a valid template")
    }

    fn case(faults: Vec<GenFault>) -> ExploreCase {
        ExploreCase {
            clients: 2,
            faults,
            shape: None,
        }
    }

    #[test]
    fn a_pause_past_the_budget_breaks_timing_and_leaves_lease_validity() {
        let a = Assumptions::of(&template("algorithm = \"token-release\""));
        assert_eq!(a.lease_left_ms, 1_700);
        assert_eq!(a.budget_ms, 1_550);
        let short = case(vec![GenFault::Pause {
            at_ms: 10,
            node: "client-1".into(),
            duration_ms: 1_000,
        }]);
        assert!(a.classify(&short).is_empty());
        assert_eq!(a.promised(&[]).len(), CheckerName::ALL.len());
        let long = case(vec![GenFault::Pause {
            at_ms: 10,
            node: "client-1".into(),
            duration_ms: 1_600,
        }]);
        let broken = a.classify(&long);
        assert_eq!(broken.len(), 1);
        assert_eq!(broken[0].assumption, Assumption::Timing);
        assert!(broken[0]
            .detail
            .starts_with("client-1: pauses and delays of 1.600 s > validity budget 1.550 s"));
        assert_eq!(a.promised(&broken), vec![CheckerName::LeaseValidity]);
    }

    #[test]
    fn master_delays_cost_a_timeout_except_for_an_unconditional_release() {
        let hold = case(vec![GenFault::Hold {
            at_ms: 0,
            a: "client-1".into(),
            b: "redis-1".into(),
            length_ms: 5_000,
        }]);
        assert!(Assumptions::of(&template("algorithm = \"token-release\""))
            .classify(&hold)
            .is_empty());
        let naive = Assumptions::of(&template("algorithm = \"naive\""));
        assert_eq!(naive.classify(&hold)[0].assumption, Assumption::Timing);
    }

    #[test]
    fn no_master_may_lose_the_key_early_but_one_held_down_for_a_ttl_loses_nothing() {
        let a = Assumptions::of(&template("algorithm = \"redlock\""));
        let crash = |node: &str, down_ms: u64| GenFault::Crash {
            at_ms: 100,
            node: node.into(),
            down_ms,
        };
        // One quick restart: a grant holding exactly a quorum loses a copy on a master that is
        // up again at once, and a competitor can gather a quorum.
        let quick = case(vec![crash("redis-1", 10)]);
        let broken = a.classify(&quick);
        assert_eq!(broken[0].assumption, Assumption::Masters);
        assert!(a.promised(&broken).is_empty());
        // The profile makes it a pause of that master as long as its downtime.
        let bounded = a.bound(quick);
        assert!(a.classify(&bounded).is_empty(), "{:?}", a.classify(&bounded));
        assert_eq!(
            bounded.faults[0],
            GenFault::Pause {
                at_ms: 100,
                node: "redis-1".into(),
                duration_ms: 10
            }
        );
        // Held down for the TTL and the drift allowance, any number of masters lose nothing.
        let held_ms = a.ttl_ms + a.drift_allowance_ms;
        let held_down = case(vec![
            crash("redis-1", held_ms),
            crash("redis-2", held_ms),
            crash("redis-3", held_ms),
        ]);
        assert!(a.classify(&held_down).is_empty(), "{:?}", a.classify(&held_down));
        assert!(!a.classify(&case(vec![crash("redis-3", held_ms - 1)])).is_empty());
        // Stopped twice, the second stop's restart may start the master early (a restart of a
        // running server is immediate): a loss however long each stop.
        let twice = case(vec![
            crash("redis-1", held_ms),
            GenFault::Crash {
                at_ms: 700,
                node: "redis-1".into(),
                down_ms: held_ms,
            },
        ]);
        assert_eq!(a.classify(&twice)[0].assumption, Assumption::Masters);
        // Two forward steps of a master's clock, each within the allowance, add up past it
        // (mutants' slow-link parent, seed 345); the profile keeps their sum within it.
        let step = |at_ms: u64| GenFault::ClockJump {
            at_ms,
            node: "redis-1".into(),
            delta_ms: a.drift_allowance_ms as i64,
        };
        let steps = case(vec![step(100), step(200)]);
        assert_eq!(a.classify(&steps)[0].assumption, Assumption::Masters);
        let bounded = a.bound(steps);
        assert!(a.classify(&bounded).is_empty(), "{:?}", bounded.faults);
    }

    #[test]
    fn drift_and_wall_clock_steps_are_bounded_by_the_allowance() {
        let a = Assumptions::of(&template("algorithm = \"redlock\"\nclock = \"wall\""));
        assert_eq!(a.drift_allowance_ms, 22);
        assert_eq!(a.drift_ppm_max, 5_000);
        let wild = case(vec![
            GenFault::Drift {
                at_ms: 0,
                node: "redis-1".into(),
                drift_ppm: 9_000,
            },
            GenFault::ClockJump {
                at_ms: 0,
                node: "client-1".into(),
                delta_ms: -900,
            },
        ]);
        let broken = a.classify(&wild);
        assert_eq!(broken.iter().filter(|b| b.assumption == Assumption::Clock).count(), 2);
        assert!(a.classify(&a.bound(wild)).is_empty());
    }
}
