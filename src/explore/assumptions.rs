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
//!   pauses) and, with fencing at the resource, stale-write, lost-update and token-order;
//!   `ownership` and `spurious-loss` under every plan, and `liveness` under every plan that
//!   keeps the masters' keys (a gone holder's key expires within its lease by the master's clock).
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

use super::generate::ExploreCase;
use super::kinds::{Effect, StopKind};
use crate::checker::CheckerName;
use crate::explore::kinds::GenFault;
use crate::model::fault::FaultProfile;
use crate::model::units::seconds_of_ms as seconds;
use crate::model::{AlgorithmSpec, Fencing, Scenario, WorkMode};
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
    /// A clock drifted beyond the allowance (a client's wall clock stepping is not one: a correct
    /// lock times itself with a monotonic clock).
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
    /// The clients' connect timeout (to the masters and to the resource), ms: a connection
    /// attempt whose packets are dropped waits that long.
    pub connect_timeout_ms: u64,
    /// The release deletes whatever is there (a late release is dangerous).
    pub release_unsafe: bool,
    /// The lock renews its lease while the work runs (a watchdog). Its contract: the work
    /// holds the lock while renewals succeed, and stops at the first that fails (the abort
    /// signal) — so a lossy link to a master costs one lost renewal, not a run of them: a
    /// lock that keeps working after its renewals failed breaks that promise (issue 42).
    pub renews: bool,
    /// The lock refuses a grant whose validity ran out (it computes and re-checks it).
    pub refuses_slow_rounds: bool,
    /// Writes carry fencing tokens the resource checks.
    pub fenced: bool,
    /// The master that hands out fencing tokens, when fenced.
    pub fencing_master: Option<String>,
    /// The masters the lock uses.
    pub masters: Vec<String>,
    /// Masters whose keys survive a restart (`appendfsync always`).
    pub durable_masters: BTreeSet<String>,
    /// How the fencing counter's master persists its writes, when fenced: a stop that loses
    /// them starts the counter again, however long the master stays down.
    pub fencing_persistence: Option<Persistence>,
    /// The masters (of the lock, or the fencing counter's) whose Sentinel promotes a replica
    /// once they have been unreachable this long, ms (`failover_after_ms` with replicas).
    pub failover_after_ms: BTreeMap<String, u64>,
    /// The replicas of the masters the lock uses (one of them is promoted by a failover).
    pub replicas: BTreeMap<String, Vec<String>>,
    /// The client names.
    pub clients: Vec<String>,
    /// The resource's node name.
    pub resource: String,
}

/// How many requests in a row a link that loses `rate_ppm` of its messages plausibly loses over
/// a run of about a thousand requests (at least one): the `k` with `rate^k × 1000 ≈ 1`. A 1 % loss
/// rate gives 2, 10 % gives 3, 50 % gives 10; a link that loses everything, a thousand.
fn losses_in_a_row(rate_ppm: u32) -> u64 {
    const REQUESTS: f64 = 1_000.0;
    let rate = f64::from(rate_ppm.min(1_000_000)) / 1e6;
    if rate <= 0.0 {
        return 1;
    }
    if rate >= 1.0 {
        return REQUESTS as u64;
    }
    ((REQUESTS.ln() / -rate.ln()).ceil() as u64).clamp(1, REQUESTS as u64)
}

impl Assumptions {
    /// The assumptions of `template`'s lock.
    pub fn of(template: &Scenario) -> Assumptions {
        let lock = &template.lock;
        let ttl_ms = lock.ttl_ms;
        let all_masters: Vec<String> = template.masters.iter().map(|m| m.name.clone()).collect();
        let claims = lock.algorithm.claims(ttl_ms, all_masters.len());
        let crate::model::LockClaims {
            drift_factor,
            refuses_slow_rounds: refuses,
            computes_validity,
            masters_used: used,
            renewal_ms,
            release_unsafe,
        } = claims;
        // A Rust lock's declared drift factor is what its validity allows for.
        let drift_factor = lock.rust_drift_factor.unwrap_or(drift_factor);
        let drift_allowance_ms = if drift_factor > 0.0 {
            (ttl_ms as f64 * drift_factor).floor() as u64 + 2
        } else {
            0
        };
        let masters: Vec<String> = all_masters.iter().take(used.max(1)).cloned().collect();
        let work_max_ms = match template.workload.work {
            WorkMode::Fixed => template
                .clients
                .iter()
                .map(|c| c.effective_work_ms(&template.workload).max())
                .max()
                .unwrap_or(0),
            // The work fills the validity it was told but its last `margin_ms`: whatever the
            // TTL, a pause of the holder longer than the margin outlasts the validity (a lock
            // without validity arithmetic counts its TTL from its reply, up to a request
            // timeout after the key's).
            WorkMode::UntilValidity { margin_ms } => {
                let late_ms = if computes_validity { 0 } else { lock.request_timeout_ms };
                ttl_ms
                    .saturating_sub(drift_allowance_ms)
                    .saturating_sub(margin_ms.saturating_sub(late_ms))
            }
        };
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
        let own_tokens = lock.rust_tokens;
        let fenced = (lock.fencing == Fencing::Incr || script_tokens || own_tokens.is_some())
            && template.resource != FencingMode::Unfenced;
        let fencing_master = match own_tokens {
            // A Rust lock's own counter: token-order judges its tokens whether or not the
            // resource checks them, so a stop that loses increments is a broken assumption then too.
            Some(crate::model::LockTokens::Counter) => Some(lock.fencing_master.clone()),
            // Nothing the faults do makes them repeat.
            Some(_) => None,
            None => if script_tokens {
                masters.first().cloned()
            } else {
                Some(lock.fencing_master.clone())
            }
            .filter(|_| fenced),
        };
        let fencing_persistence = fencing_master.as_ref().map(|m| template.master_setup(m).persistence);
        let failover_after_ms = masters
            .iter()
            .chain(fencing_master.iter())
            .filter_map(|m| {
                let setup = template.master_setup(m);
                setup
                    .failover_after_ms
                    .filter(|_| setup.replicas > 0)
                    .map(|after| (m.clone(), after))
            })
            .collect();
        let replicas = masters.iter().map(|m| (m.clone(), template.replicas_of(m))).collect();
        Assumptions {
            algorithm: lock.algorithm.name().to_string(),
            ttl_ms,
            drift_allowance_ms,
            drift_ppm_max,
            lease_left_ms,
            budget_ms,
            master_timeout_ms: lock.request_timeout_ms,
            resource_timeout_ms: template.workload.resource_timeout_ms,
            connect_timeout_ms: lock.connect_timeout_ms,
            release_unsafe,
            renews: renewal_ms.is_some(),
            refuses_slow_rounds: refuses,
            fenced,
            fencing_master,
            masters,
            durable_masters,
            fencing_persistence,
            failover_after_ms,
            replicas,
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

    /// The Sentinel's `failover_after_ms` for `node`, when being unreachable `unreachable_ms` (a
    /// stop or a pause) lets it promote a replica (within a margin: it checks once a step).
    fn fails_over(&self, node: &str, unreachable_ms: u64) -> Option<u64> {
        self.failover_after_ms
            .get(node)
            .copied()
            .filter(|after_ms| unreachable_ms.saturating_add(MARGIN_MS) >= *after_ms)
    }

    /// "redis-1 is paused 2.000 s: its Sentinel fails it over to a replica after 1.500 s".
    fn failover_text(node: &str, how: &str, after_ms: u64) -> String {
        format!(
            "{node} {how}: its Sentinel fails it over to a replica after {} (what the replica had not received is lost)",
            seconds(after_ms)
        )
    }

    /// The master whose key may vanish early under `effect`, and why, in the whole `plan`.
    fn key_loss(&self, effect: &Effect, plan: &PlanView) -> Option<(String, String)> {
        // A restart without `appendfsync always` loses the key; held down for a TTL and the drift
        // allowance it is harmless: the master grants nothing while down and returns after every
        // lease claimed before its crash (a lease claimed while it was down holds no copy there).
        // Unless a Sentinel promotes a replica meanwhile: the replica serves at once, with what
        // it had received.
        let harmless_ms = self.ttl_ms.saturating_add(self.drift_allowance_ms);
        match *effect {
            Effect::Stop { node, down_ms, .. } if self.is_master(node) => {
                if let Some(after_ms) = self.fails_over(node, down_ms) {
                    let how = format!("is down {}", seconds(down_ms));
                    return Some((node.to_string(), Self::failover_text(node, &how, after_ms)));
                }
                let held_down = down_ms >= harmless_ms && plan.stopped_once.contains(node);
                (!self.durable_masters.contains(node) && !held_down).then(|| {
                    (
                        node.to_string(),
                        format!("{node} restarts after {} without persistence", seconds(down_ms)),
                    )
                })
            }
            Effect::Failover { node } if self.is_master(node) => {
                // Expiries replicate as absolute times: a promoted replica whose wall clock runs
                // ahead expires the key early, even with every write replicated.
                let ahead = self.replicas.get(node).into_iter().flatten().find_map(|r| {
                    plan.forward_ms.get(r).map(|ms| {
                        format!(", and {r}'s wall clock runs {ms} ms ahead: promoted, it expires the key early")
                    })
                });
                Some((
                    node.to_string(),
                    format!("{node} fails over to a replica{}", ahead.unwrap_or_default()),
                ))
            }
            // A pause is harmless to the keys, unless it lasts long enough for a failover.
            Effect::Freeze { node, length_ms, .. } if self.is_master(node) => {
                self.fails_over(node, length_ms).map(|after_ms| {
                    let how = format!("is paused {}", seconds(length_ms));
                    (node.to_string(), Self::failover_text(node, &how, after_ms))
                })
            }
            // Forward clock steps add up: see `forward_jumps`.
            _ => None,
        }
    }

    /// How `effect` makes the fencing counter's master lose increments, if it does. Unlike the
    /// lock's key, the counter must outlive every lease: held down however long, a master that
    /// restarts without them counts again from where its persistence left it, and tokens repeat.
    fn counter_loss(&self, effect: &Effect) -> Option<String> {
        let master = self.fencing_master.as_deref()?;
        let persistence = self.fencing_persistence?;
        let stop = |kind: &str, down_ms: u64, loses: bool| {
            if let Some(after_ms) = self.fails_over(master, down_ms) {
                let how = format!("is down {}", seconds(down_ms));
                return Some(Self::failover_text(master, &how, after_ms));
            }
            loses.then(|| format!("{master} restarts after a {kind} without the fencing counter's latest increments"))
        };
        match *effect {
            Effect::Stop { node, down_ms, how, .. } if node == master => match how {
                StopKind::Crash => stop("crash", down_ms, persistence == Persistence::None),
                StopKind::PowerLoss => stop("power loss", down_ms, persistence != Persistence::AofAlways),
                StopKind::Shutdown => stop("shutdown", down_ms, persistence == Persistence::None),
            },
            Effect::Failover { node, .. } if node == master => Some(format!("{master} fails over to a replica")),
            Effect::Freeze { node, length_ms, .. } if node == master => {
                self.fails_over(master, length_ms).map(|after_ms| {
                    let how = format!("is paused {}", seconds(length_ms));
                    Self::failover_text(master, &how, after_ms)
                })
            }
            _ => None,
        }
    }

    /// The drift of the clocks over a TTL, ms: the fastest-drifting client's and `master`'s
    /// (rounded up), as `effects` set them. It draws on the same allowance as `master`'s forward
    /// steps: the lock subtracts one drift allowance for both.
    fn drift_use_ms(&self, effects: &[Effect], master: &str) -> u64 {
        let (mut client_ppm, mut master_ppm) = (0u64, 0u64);
        for effect in effects {
            if let Effect::Drift { node, drift_ppm } = *effect {
                if self.is_client(node) {
                    client_ppm = client_ppm.max(drift_ppm.unsigned_abs());
                } else if node == master {
                    master_ppm = master_ppm.max(drift_ppm.unsigned_abs());
                }
            }
        }
        ((client_ppm + master_ppm) * self.ttl_ms).div_ceil(1_000_000)
    }

    /// The per-client delay `effect` can put into one turn, ms.
    fn delays(&self, effect: &Effect) -> Vec<(String, u64)> {
        let master_cost = |ms: u64| {
            if self.release_unsafe {
                ms
            } else {
                ms.min(self.master_timeout_ms.max(self.connect_timeout_ms))
            }
        };
        // What a delay of `ms` on the link `a`–`b` costs the client on it; `drops`: the link
        // loses messages (a partition, loss) rather than delaying them: a request or connection
        // attempt lost waits its whole timeout, however short the cut.
        let link = |a: &str, b: &str, ms: u64, drops: bool| -> Vec<(String, u64)> {
            let (client, server) = if self.is_client(a) { (a, b) } else { (b, a) };
            if !self.is_client(client) {
                return Vec::new();
            }
            if server == self.resource {
                let lost_ms = self.resource_timeout_ms.max(self.connect_timeout_ms);
                vec![(client.to_string(), if drops { ms.max(lost_ms) } else { ms })]
            } else if self.is_master(server) {
                let lost_ms = self.master_timeout_ms.max(self.connect_timeout_ms);
                vec![(
                    client.to_string(),
                    master_cost(if drops { ms.max(lost_ms) } else { ms }),
                )]
            } else {
                Vec::new()
            }
        };
        match *effect {
            Effect::Freeze { node, length_ms, .. } if self.is_client(node) => vec![(node.to_string(), length_ms)],
            Effect::Freeze { node, length_ms, .. } if self.is_master(node) => self
                .clients
                .iter()
                .map(|c| (c.clone(), master_cost(length_ms)))
                .collect(),
            // A paused resource answers nobody: every client's request to it waits the pause out.
            Effect::Freeze { node, length_ms, .. } if node == self.resource => {
                self.clients.iter().map(|c| (c.clone(), length_ms)).collect()
            }
            Effect::Held { a, b, length_ms } => link(a, b, length_ms, false),
            Effect::Cut { a, b, length_ms } => link(a, b, length_ms, true),
            // A lost reply: the client waits its whole request timeout (on the resource, its
            // resource timeout: a holder stuck there outlives its lease), once per reply lost.
            Effect::RepliesLost { server, client, count } => link(client, server, 0, true)
                .into_iter()
                .map(|(client, ms)| (client, ms.saturating_mul(u64::from(count))))
                .collect(),
            // A lossy link drops some messages for the rest of the run: as many lost requests
            // in a row as the rate makes likely over a run (`losses_in_a_row`), each waiting its
            // whole timeout, as for a partition.
            // A renewing lock's holder stops at its first failed renewal: on a master's link,
            // one lost request is all a turn waits (the acquisition's retries come before the
            // grant; a later loss ends the work).
            Effect::Loss { a, b, rate_ppm } => {
                let in_a_row = if self.renews && (self.is_master(a) || self.is_master(b)) {
                    1
                } else {
                    losses_in_a_row(rate_ppm)
                };
                link(a, b, 0, true)
                    .into_iter()
                    .map(|(client, ms)| (client, ms.saturating_mul(in_a_row)))
                    .collect()
            }
            Effect::Latency { a, b, latency_ms } => {
                let master_link = self.is_master(a) || self.is_master(b);
                if master_link && self.refused(latency_ms) {
                    Vec::new()
                } else {
                    link(a, b, 2 * latency_ms, false)
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
        let effects: Vec<Effect> = present.iter().flat_map(|f| f.effects()).collect();
        // Timing: per client, pauses and delays summed (latencies: the largest per link).
        let mut load: BTreeMap<String, u64> = BTreeMap::new();
        let mut latency: BTreeMap<(String, String), u64> = BTreeMap::new();
        for effect in &effects {
            if let Effect::Latency { a, b, .. } = *effect {
                for (client, ms) in self.delays(effect) {
                    let slot = latency.entry((client, format!("{a}|{b}"))).or_default();
                    *slot = (*slot).max(ms);
                }
                continue;
            }
            for (client, ms) in self.delays(effect) {
                *load.entry(client).or_default() += ms;
            }
        }
        // A write delayed past the resource timeout lands after its holder released.
        for effect in &effects {
            let (a, b, delay_ms) = match *effect {
                Effect::Freeze { node, length_ms, .. } => {
                    if node == self.resource && length_ms > self.resource_timeout_ms {
                        broken.push(Broken {
                            assumption: Assumption::Timing,
                            detail: format!(
                                "the resource pauses {} > the clients' timeout {}: a write lands after its holder released",
                                seconds(length_ms),
                                seconds(self.resource_timeout_ms)
                            ),
                        });
                    }
                    continue;
                }
                Effect::Held { a, b, length_ms } | Effect::Cut { a, b, length_ms } => (a, b, length_ms),
                Effect::Latency { a, b, latency_ms } => (a, b, 2 * latency_ms),
                _ => continue,
            };
            let client = if self.is_client(a) { a } else { b };
            if (a == self.resource || b == self.resource) && delay_ms > self.resource_timeout_ms {
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
        for effect in &effects {
            match *effect {
                Effect::Drift { node, drift_ppm } if drift_ppm.abs() > self.drift_ppm_max => {
                    broken.push(Broken {
                        assumption: Assumption::Clock,
                        detail: format!(
                            "{node} drifts {drift_ppm} ppm, beyond the {} ppm the drift allowance ({} ms) covers",
                            self.drift_ppm_max, self.drift_allowance_ms
                        ),
                    });
                }
                // A client's wall clock stepping breaks nothing a correct lock relies on: a
                // correct lock times itself with a monotonic clock, so a lock that reads the wall
                // clock and fails when it steps has a bug (the `validity-wall-clock` class), not a
                // broken assumption.
                _ => {}
            }
        }
        // Masters losing the key early.
        let mut lost: BTreeMap<String, String> = BTreeMap::new();
        let plan = PlanView::of(&effects);
        for effect in &effects {
            if let Some((node, why)) = self.key_loss(effect, &plan) {
                lost.entry(node).or_insert(why);
            }
        }
        // A master's clock stepped forward past the allowance, in one step or in several.
        for (node, forward_ms) in plan.forward_ms {
            if !self.is_master(&node) {
                continue;
            }
            if forward_ms > self.drift_allowance_ms {
                lost.entry(node.clone())
                    .or_insert_with(|| format!("{node}'s wall clock steps forward {forward_ms} ms in all"));
                continue;
            }
            // Within the allowance alone, but the drift of the clocks draws on it too (a key
            // expiring early on a fast master, read by a slow client).
            let drift_ms = self.drift_use_ms(&effects, &node);
            if forward_ms + drift_ms > self.drift_allowance_ms {
                broken.push(Broken {
                    assumption: Assumption::Clock,
                    detail: format!(
                        "{node}'s wall clock steps forward {forward_ms} ms and the clocks drift {drift_ms} ms over a \
                         TTL: {} ms in all, beyond the {} ms drift allowance",
                        forward_ms + drift_ms,
                        self.drift_allowance_ms
                    ),
                });
            }
        }
        let mut counter: Vec<String> = effects.iter().filter_map(|e| self.counter_loss(e)).collect();
        // Several pauses or stops back to back make one long absence for the Sentinel.
        for (node, longest_ms) in unreachable_ms(&effects) {
            let Some(after_ms) = self.fails_over(&node, longest_ms) else {
                continue;
            };
            let why = Self::failover_text(&node, &format!("is unreachable for {}", seconds(longest_ms)), after_ms);
            if self.is_master(&node) {
                lost.entry(node.clone()).or_insert_with(|| why.clone());
            }
            if self.fencing_master.as_deref() == Some(node.as_str()) && counter.is_empty() {
                counter.push(why);
            }
        }
        if lost.is_empty() && !counter.is_empty() {
            broken.push(Broken {
                assumption: Assumption::Masters,
                detail: format!(
                    "the fencing counter's master loses increments ({}): fencing tokens may repeat",
                    counter.join("; ")
                ),
            });
        }
        let fencing_lost = !counter.is_empty() || self.fencing_master.as_ref().is_some_and(|f| lost.contains_key(f));
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

    /// The checkers a correct lock satisfies under a plan that breaks `broken`. `ownership` and
    /// `spurious-loss` are timing-free (a correct lock only ever changes its own grant's key, and
    /// never reports a loss after its own release nor hands out an expired grant, whatever the
    /// faults), so they are promised under every plan.
    ///
    /// `liveness` is promised unless the plan breaks `masters`: a holder that pauses, crashes or
    /// is cut off must not lock the others out past its lease (its key expires by the master's
    /// own clock, however long the holder stays away), and a clock that drifts or steps moves
    /// the master's expiries with the clock the checker judges them by; stretches of
    /// unavailability with a fault in effect are excused by the checker itself. A master that
    /// restarts, loses power or fails over changes its keys without commands (a key restored
    /// from its persistence, a replica's copy promoted), which the checker does not follow.
    pub fn promised(&self, broken: &[Broken]) -> Vec<CheckerName> {
        let liveness = (!broken.iter().any(|b| b.assumption == Assumption::Masters)).then_some(CheckerName::Liveness);
        if broken.iter().any(|b| b.assumption != Assumption::Timing) {
            return [CheckerName::Ownership, CheckerName::SpuriousLoss]
                .into_iter()
                .chain(liveness)
                .collect();
        }
        if broken.is_empty() {
            return CheckerName::ALL.to_vec();
        }
        let mut promised = vec![
            CheckerName::LeaseValidity,
            CheckerName::Ownership,
            CheckerName::SpuriousLoss,
        ];
        if self.fenced {
            promised.extend([
                CheckerName::StaleWrite,
                CheckerName::LostUpdate,
                CheckerName::TokenOrder,
            ]);
        }
        promised.extend(liveness);
        promised
    }

    /// `case` brought inside the hard assumptions (clocks, masters); see the [module](self) docs.
    /// A fault that would make a master lose the key becomes what its kind says
    /// ([`GenFault::without_key_loss`]); strengths are clamped through the one strength each kind
    /// has ([`GenFault::scale_magnitude`]).
    pub fn bound(&self, mut case: ExploreCase) -> ExploreCase {
        let plan = PlanView::of(&case.faults.iter().flat_map(GenFault::effects).collect::<Vec<_>>());
        for fault in case.faults.iter_mut() {
            // A failover is kept as drawn (issue 42: the profile generates every kind the
            // deployment can suffer): it breaks the masters assumption, under which only
            // `ownership` is promised — what a failover may still show of the lock's own bugs.
            let fails_over = fault.effects().iter().any(|e| matches!(e, Effect::Failover { .. }));
            let loses = !fails_over
                && fault
                    .effects()
                    .iter()
                    .any(|e| self.key_loss(e, &plan).is_some() || self.counter_loss(e).is_some());
            if loses {
                // No master may lose the key early: a quick restart becomes a pause of that master
                // as long as its downtime (forward clock steps are bounded below, all together).
                if let Some(kept) = fault.without_key_loss(&self.resource) {
                    *fault = kept;
                }
            }
            if let Some(limit) = self.strength_limit(fault) {
                fault.scale_magnitude(limit);
            }
        }
        // The pauses and stops of a master a Sentinel watches share what its `failover_after_ms`
        // leaves: back to back, they are one absence.
        for (node, after_ms) in &self.failover_after_ms {
            let absences = case
                .faults
                .iter()
                .filter(|f| absence_of(f) == Some(node.as_str()))
                .count() as u64;
            let each_ms = (after_ms.saturating_sub(2 * MARGIN_MS) / absences.max(1)).max(1);
            for fault in case.faults.iter_mut() {
                if absence_of(fault) == Some(node.as_str()) {
                    fault.scale_magnitude(|v| v.min(each_ms));
                }
            }
        }
        // Forward steps of a master's clock add up, and share the allowance with the drift of
        // the clocks (as clamped above): keep their sum within what the drift leaves.
        let effects: Vec<Effect> = case.faults.iter().flat_map(GenFault::effects).collect();
        let drift_ms: BTreeMap<String, u64> = self
            .masters
            .iter()
            .map(|m| (m.clone(), self.drift_use_ms(&effects, m)))
            .collect();
        drop(effects);
        let mut forward_ms: BTreeMap<String, u64> = BTreeMap::new();
        for fault in case.faults.iter_mut() {
            let stepped = fault.effects().iter().find_map(|e| match *e {
                Effect::ClockStep { node, delta_ms } if delta_ms > 0 && self.is_master(node) => Some(node.to_string()),
                _ => None,
            });
            if let Some(node) = stepped {
                let used = forward_ms
                    .entry(node.clone())
                    .or_insert_with(|| drift_ms.get(node.as_str()).copied().unwrap_or(0));
                let left = self.drift_allowance_ms.saturating_sub(*used);
                fault.scale_magnitude(|v| v.min(left));
                *used += fault.magnitude();
            }
        }
        case
    }

    /// How the profile clamps a fault's strength, by what it does (`None`: it does not): a hold
    /// or cut of a resource link within the resource timeout (a write delayed longer lands after
    /// its holder released), a resource latency within half of it, drift within what the
    /// allowance covers, and — for a lock that re-checks its validity — a master latency either
    /// short or so long that every round through it is refused.
    fn strength_limit(&self, fault: &GenFault) -> Option<Box<dyn Fn(u64) -> u64>> {
        let resource_max_ms = self
            .resource_timeout_ms
            .saturating_sub(MARGIN_MS.min(self.resource_timeout_ms / 2));
        let on_resource = |a: &str, b: &str| a == self.resource || b == self.resource;
        let snaps = self.refuses_slow_rounds && self.master_timeout_ms > 2 * self.refused_latency_ms();
        let (short, long) = (self.short_latency_ms(), self.refused_latency_ms());
        let drift_max = self.drift_ppm_max.unsigned_abs();
        fault.effects().iter().find_map(|e| -> Option<Box<dyn Fn(u64) -> u64>> {
            match *e {
                Effect::Held { a, b, .. } | Effect::Cut { a, b, .. } if on_resource(a, b) => {
                    Some(Box::new(move |v| v.min(resource_max_ms).max(1)))
                }
                Effect::Latency { a, b, .. } if on_resource(a, b) => {
                    Some(Box::new(move |v| v.min(resource_max_ms / 2)))
                }
                Effect::Drift { .. } => Some(Box::new(move |v| v.min(drift_max))),
                Effect::Latency { a, b, .. } if snaps && (self.is_master(a) || self.is_master(b)) => {
                    Some(Box::new(move |v| {
                        if v > short && v < long {
                            if v - short < long - v {
                                short
                            } else {
                                long
                            }
                        } else {
                            v
                        }
                    }))
                }
                _ => None,
            }
        })
    }
}

/// The node a fault makes unreachable, when that is all it does (a pause, a crash, a power
/// loss): what a Sentinel's `failover_after_ms` is shared among.
fn absence_of(fault: &GenFault) -> Option<&str> {
    match fault.effects().as_slice() {
        [Effect::Freeze { node, .. }] | [Effect::Stop { node, .. }] => Some(*node),
        _ => None,
    }
}

/// What a fault's effect means depends on the rest of the plan: the masters only one stop
/// stops (a second stop may restart the master early: a restart of a running server is
/// immediate), and how far each node's wall clock is stepped forward in all.
struct PlanView {
    stopped_once: BTreeSet<String>,
    forward_ms: BTreeMap<String, u64>,
}

impl PlanView {
    fn of(effects: &[Effect]) -> PlanView {
        PlanView {
            stopped_once: stopped_once(effects),
            forward_ms: forward_jumps(effects),
        }
    }
}

/// The sum of each node's forward wall-clock steps, ms.
fn forward_jumps(effects: &[Effect]) -> BTreeMap<String, u64> {
    let mut sums: BTreeMap<String, u64> = BTreeMap::new();
    for effect in effects {
        if let Effect::ClockStep { node, delta_ms } = *effect {
            if delta_ms > 0 {
                *sums.entry(node.to_string()).or_default() += delta_ms.unsigned_abs();
            }
        }
    }
    sums
}

/// The longest time each node is unreachable (paused or stopped) without a break, ms: the
/// Sentinel's view of the plan. Pauses and stops that overlap or touch are one absence.
fn unreachable_ms(effects: &[Effect]) -> BTreeMap<String, u64> {
    let mut spans: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for effect in effects {
        let (node, from_ms, length_ms) = match *effect {
            Effect::Freeze { node, at_ms, length_ms } => (node, at_ms, length_ms),
            Effect::Stop {
                node, at_ms, down_ms, ..
            } => (node, at_ms, down_ms),
            _ => continue,
        };
        spans
            .entry(node.to_string())
            .or_default()
            .push((from_ms, from_ms.saturating_add(length_ms)));
    }
    spans
        .into_iter()
        .map(|(node, mut spans)| {
            spans.sort_unstable();
            let (mut longest, mut current) = (0u64, None::<(u64, u64)>);
            for (from, to) in spans {
                current = match current {
                    Some((start, end)) if from <= end => Some((start, end.max(to))),
                    _ => Some((from, to)),
                };
                if let Some((start, end)) = current {
                    longest = longest.max(end - start);
                }
            }
            (node, longest)
        })
        .collect()
}

/// The masters exactly one stop of the plan stops (a crash, a power loss, one master's turn in
/// a rolling restart).
fn stopped_once(effects: &[Effect]) -> BTreeSet<String> {
    let mut stops: BTreeMap<&str, usize> = BTreeMap::new();
    for effect in effects {
        if let Effect::Stop { node, .. } = *effect {
            *stops.entry(node).or_default() += 1;
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
    use crate::explore::kinds::{ClockJump, Crash, Drift, Failover, Hold, Loss, Partition, Pause};

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
        let short = case(vec![GenFault::Pause(Pause {
            at_ms: 10,
            node: "client-1".into(),
            duration_ms: 1_000,
        })]);
        assert!(a.classify(&short).is_empty());
        assert_eq!(a.promised(&[]).len(), CheckerName::ALL.len());
        let long = case(vec![GenFault::Pause(Pause {
            at_ms: 10,
            node: "client-1".into(),
            duration_ms: 1_600,
        })]);
        let broken = a.classify(&long);
        assert_eq!(broken.len(), 1);
        assert_eq!(broken[0].assumption, Assumption::Timing);
        assert!(broken[0]
            .detail
            .starts_with("client-1: pauses and delays of 1.600 s > validity budget 1.550 s"));
        // A paused holder must still not lock the others out past its lease.
        assert_eq!(
            a.promised(&broken),
            vec![
                CheckerName::LeaseValidity,
                CheckerName::Ownership,
                CheckerName::SpuriousLoss,
                CheckerName::Liveness
            ]
        );
        // Nor a clock beyond the allowance: the masters expire keys by their own clocks.
        let clock = [Broken {
            assumption: Assumption::Clock,
            detail: String::new(),
        }];
        assert_eq!(
            a.promised(&clock),
            vec![CheckerName::Ownership, CheckerName::SpuriousLoss, CheckerName::Liveness]
        );
    }

    #[test]
    fn a_paused_resource_delays_every_holder_and_a_long_pause_breaks_timing() {
        let a = Assumptions::of(&template("algorithm = \"token-release\""));
        let pause = |ms| {
            case(vec![GenFault::Pause(Pause {
                at_ms: 10,
                node: "resource".into(),
                duration_ms: ms,
            })])
        };
        // Within the resource timeout: a delay like any other.
        assert!(a.classify(&pause(a.resource_timeout_ms)).is_empty());
        // Past it: the write lands after its holder released (seen on default explorations
        // as "breaks no assumption" before this rule).
        let broken = a.classify(&pause(3_344));
        assert!(broken.iter().all(|b| b.assumption == Assumption::Timing), "{broken:?}");
        assert!(
            broken
                .iter()
                .any(|b| b.detail.starts_with("the resource pauses 3.344 s")),
            "{broken:?}"
        );
        assert!(!a.promised(&broken).contains(&CheckerName::MutualExclusion));
    }

    #[test]
    fn heavy_loss_costs_several_timeouts_in_a_row() {
        assert_eq!(losses_in_a_row(0), 1);
        assert_eq!(losses_in_a_row(10_000), 2);
        assert_eq!(losses_in_a_row(100_000), 3);
        assert_eq!(losses_in_a_row(500_000), 10);
        assert_eq!(losses_in_a_row(1_000_000), 1_000);
        let a = Assumptions::of(&template("algorithm = \"token-release\""));
        let loss = |rate_ppm| {
            case(vec![GenFault::Loss(Loss {
                at_ms: 10,
                a: "client-1".into(),
                b: "resource".into(),
                rate_ppm,
            })])
        };
        assert!(a.classify(&loss(1_000)).is_empty());
        let broken = a.classify(&loss(800_000));
        assert!(broken.iter().any(|b| b.assumption == Assumption::Timing), "{broken:?}");
    }

    #[test]
    fn master_delays_cost_a_timeout_except_for_an_unconditional_release() {
        let hold = case(vec![GenFault::Hold(Hold {
            at_ms: 0,
            a: "client-1".into(),
            b: "redis-1".into(),
            length_ms: 5_000,
        })]);
        assert!(Assumptions::of(&template("algorithm = \"token-release\""))
            .classify(&hold)
            .is_empty());
        let naive = Assumptions::of(&template("algorithm = \"naive\""));
        assert_eq!(naive.classify(&hold)[0].assumption, Assumption::Timing);
    }

    #[test]
    fn no_master_may_lose_the_key_early_but_one_held_down_for_a_ttl_loses_nothing() {
        let a = Assumptions::of(&template("algorithm = \"redlock\""));
        let crash = |node: &str, down_ms: u64| {
            GenFault::Crash(Crash {
                at_ms: 100,
                node: node.into(),
                down_ms,
            })
        };
        // One quick restart: a grant holding exactly a quorum loses a copy on a master that is
        // up again at once, and a competitor can gather a quorum.
        let quick = case(vec![crash("redis-1", 10)]);
        let broken = a.classify(&quick);
        assert_eq!(broken[0].assumption, Assumption::Masters);
        assert_eq!(
            a.promised(&broken),
            vec![CheckerName::Ownership, CheckerName::SpuriousLoss]
        );
        // The profile makes it a pause of that master as long as its downtime.
        let bounded = a.bound(quick);
        assert!(a.classify(&bounded).is_empty(), "{:?}", a.classify(&bounded));
        assert_eq!(
            bounded.faults[0],
            GenFault::Pause(Pause {
                at_ms: 100,
                node: "redis-1".into(),
                duration_ms: 10
            })
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
            GenFault::Crash(Crash {
                at_ms: 700,
                node: "redis-1".into(),
                down_ms: held_ms,
            }),
        ]);
        assert_eq!(a.classify(&twice)[0].assumption, Assumption::Masters);
        // Two forward steps of a master's clock, each within the allowance, add up past it
        // (mutants' slow-link parent, seed 345); the profile keeps their sum within it.
        let step = |at_ms: u64| {
            GenFault::ClockJump(ClockJump {
                at_ms,
                node: "redis-1".into(),
                delta_ms: a.drift_allowance_ms as i64,
            })
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
            GenFault::Drift(Drift {
                at_ms: 0,
                node: "redis-1".into(),
                drift_ppm: 9_000,
            }),
            GenFault::ClockJump(ClockJump {
                at_ms: 0,
                node: "client-1".into(),
                delta_ms: -900,
            }),
        ]);
        // The drift breaks the clock assumption; the client's wall-clock step does not (a lock
        // that times itself with the wall clock and fails when it steps has a bug).
        let broken = a.classify(&wild);
        assert_eq!(broken.iter().filter(|b| b.assumption == Assumption::Clock).count(), 1);
        assert!(broken[0].detail.starts_with("redis-1 drifts 9000 ppm"), "{broken:?}");
        assert!(a.classify(&a.bound(wild)).is_empty());
    }

    /// A template of `topology`, `lock` and `workload` lines, 2 clients.
    fn scenario(topology: &str, lock: &str, workload: &str) -> Scenario {
        let source = format!(
            "name = \"t\"\ndescription = \"t\"\nduration_ms = 5000\n[topology]\nclients = 2\n{topology}\n[lock]\nttl_ms = 2000\n\
             {lock}\n[workload]\nuntil_ms = 4000\n{workload}\n"
        );
        Scenario::from_str(&source, "<test>").expect("a valid template")
    }

    fn pause(node: &str, duration_ms: u64) -> GenFault {
        GenFault::Pause(Pause {
            at_ms: 500,
            node: node.into(),
            duration_ms,
        })
    }

    #[test]
    fn a_holder_working_until_its_validity_has_only_the_margin_left() {
        // The built-in Redlock with `work = "until-validity"`: a 1.45 s pause of the holder once
        // "broke no assumption" (the budget was sized by work_ms, 100 ms by default) and the
        // mutual-exclusion violation it caused was called an implementation bug.
        let a = Assumptions::of(&scenario(
            "masters = 5",
            "algorithm = \"redlock\"",
            "work = \"until-validity\"\nvalidity_margin_ms = 300",
        ));
        assert_eq!(a.lease_left_ms, 300);
        assert_eq!(a.budget_ms, 300 - 2 * 50 - MARGIN_MS);
        let broken = a.classify(&case(vec![pause("client-1", 1_450)]));
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert_eq!(broken[0].assumption, Assumption::Timing);
        assert!(a.classify(&case(vec![pause("client-1", 100)])).is_empty());
        // A lock without validity arithmetic counts its TTL from its reply: a request timeout
        // less of the margin is left.
        let none = Assumptions::of(&scenario(
            "masters = 1",
            "algorithm = \"script\"\nvalidity = \"none\"",
            "work = \"until-validity\"\nvalidity_margin_ms = 300",
        ));
        assert_eq!(none.lease_left_ms, 300 - 50);
    }

    #[test]
    fn a_fencing_counter_is_lost_however_long_its_master_stays_down() {
        let a = Assumptions::of(&scenario(
            "masters = 1\nresource = \"fenced\"",
            "algorithm = \"token-release\"\nfencing = \"incr\"",
            "work_ms = 100",
        ));
        let crash = case(vec![GenFault::Crash(Crash {
            at_ms: 100,
            node: "redis-1".into(),
            down_ms: 3_000,
        })]);
        // Held down past every lease, the key is harmless; the INCR counter starts again.
        let broken = a.classify(&crash);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert_eq!(broken[0].assumption, Assumption::Masters);
        assert!(broken[0].detail.contains("fencing counter"), "{}", broken[0].detail);
        assert_eq!(
            a.promised(&broken),
            vec![CheckerName::Ownership, CheckerName::SpuriousLoss]
        );
        let bounded = a.bound(crash);
        assert_eq!(
            bounded.faults,
            vec![GenFault::Pause(Pause {
                at_ms: 100,
                node: "redis-1".into(),
                duration_ms: 3_000
            })]
        );
        assert!(a.classify(&bounded).is_empty());
        // Unfenced, the same crash is inside the assumptions.
        let unfenced = Assumptions::of(&scenario(
            "masters = 1",
            "algorithm = \"token-release\"",
            "work_ms = 100",
        ));
        assert!(unfenced
            .classify(&case(vec![GenFault::Crash(Crash {
                at_ms: 100,
                node: "redis-1".into(),
                down_ms: 3_000,
            })]))
            .is_empty());
        // With `appendfsync always` the counter survives.
        let durable = Assumptions::of(&scenario(
            "resource = \"fenced\"\n[[topology.master]]\nname = \"redis-1\"\npersistence = \"aof-always\"",
            "algorithm = \"token-release\"\nfencing = \"incr\"",
            "work_ms = 100",
        ));
        assert!(durable
            .classify(&case(vec![GenFault::Crash(Crash {
                at_ms: 100,
                node: "redis-1".into(),
                down_ms: 10,
            })]))
            .is_empty());
    }

    #[test]
    fn a_master_pause_long_enough_for_a_failover_breaks_the_masters_assumption() {
        let a = Assumptions::of(&scenario(
            "resource = \"fenced\"\n[[topology.master]]\nname = \"redis-1\"\nreplicas = 1\nreplication_lag_ms = 200\nfailover_after_ms = 1000",
            "algorithm = \"token-release\"\nfencing = \"incr\"",
            "work_ms = 100",
        ));
        assert_eq!(a.failover_after_ms.get("redis-1"), Some(&1_000));
        let long = case(vec![pause("redis-1", 1_200)]);
        let broken = a.classify(&long);
        assert!(
            broken
                .iter()
                .any(|b| b.assumption == Assumption::Masters && b.detail.contains("Sentinel")),
            "{broken:?}"
        );
        assert_eq!(
            a.promised(&broken),
            vec![CheckerName::Ownership, CheckerName::SpuriousLoss]
        );
        // The profile keeps master pauses clear of the failover.
        let bounded = a.bound(long);
        assert_eq!(bounded.faults, vec![pause("redis-1", 1_000 - 2 * MARGIN_MS)]);
        assert!(!a.classify(&bounded).iter().any(|b| b.assumption == Assumption::Masters));
        // A crash held down for a TTL is harmless without a Sentinel; with one, the replica
        // serves meanwhile.
        let crash = case(vec![GenFault::Crash(Crash {
            at_ms: 500,
            node: "redis-1".into(),
            down_ms: 5_000,
        })]);
        assert!(a.classify(&crash).iter().any(|b| b.detail.contains("Sentinel")));
        let bounded = a.bound(crash);
        assert_eq!(bounded.faults, vec![pause("redis-1", 1_000 - 2 * MARGIN_MS)]);
        // Two pauses back to back are one absence (seed 17 of
        // tests/fixtures/false-alarms/failover-fenced.toml, 600 ms Sentinel: 389 ms at 1.978 s
        // and 500 ms at 2.203 s, 725 ms unreachable); the profile splits what the Sentinel leaves.
        let two = case(vec![
            GenFault::Pause(Pause {
                at_ms: 1_978,
                node: "redis-1".into(),
                duration_ms: 700,
            }),
            GenFault::Pause(Pause {
                at_ms: 2_203,
                node: "redis-1".into(),
                duration_ms: 800,
            }),
        ]);
        assert!(a
            .classify(&two)
            .iter()
            .any(|b| b.detail.contains("unreachable for 1.025 s")));
        let bounded = a.bound(two);
        assert!(
            bounded.faults.iter().all(
                |f| matches!(f, GenFault::Pause(Pause { duration_ms, .. }) if *duration_ms == (1_000 - 2 * MARGIN_MS) / 2)
            ),
            "{:?}",
            bounded.faults
        );
        assert!(!a.classify(&bounded).iter().any(|b| b.assumption == Assumption::Masters));
    }

    #[test]
    fn a_failover_to_a_replica_whose_clock_runs_ahead_says_so() {
        let a = Assumptions::of(&scenario(
            "[[topology.master]]\nname = \"redis-1\"\nreplicas = 1\nreplication_lag_ms = 50",
            "algorithm = \"token-release\"",
            "work_ms = 100",
        ));
        let failover = GenFault::Failover(Failover {
            at_ms: 2_000,
            node: "redis-1".into(),
        });
        let plain = a.classify(&case(vec![failover.clone()]));
        assert_eq!(plain.len(), 1, "{plain:?}");
        assert_eq!(plain[0].assumption, Assumption::Masters);
        assert!(
            plain[0].detail.contains("redis-1 fails over to a replica)"),
            "{}",
            plain[0].detail
        );
        // Redis replicates expiries as absolute times: the promoted replica judges the key by
        // its own clock (scenarios/replica-clock-failover.toml).
        let ahead = a.classify(&case(vec![
            GenFault::ClockJump(ClockJump {
                at_ms: 1_000,
                node: "redis-1-replica-1".into(),
                delta_ms: 9_000,
            }),
            failover,
        ]));
        assert_eq!(ahead.len(), 1, "{ahead:?}");
        assert!(
            ahead[0]
                .detail
                .contains("redis-1-replica-1's wall clock runs 9000 ms ahead: promoted, it expires the key early"),
            "{}",
            ahead[0].detail
        );
    }

    #[test]
    fn forward_steps_and_drift_share_the_drift_allowance() {
        // Seed 820 of bug-extend-no-owner-check-safe: the master's clock stepped forward by the
        // whole allowance (102 ms of a 10 s TTL) and a client drifted -5000 ppm (50 ms over the
        // TTL): each within the allowance, together 152 ms past it.
        let a = Assumptions::of(&template("algorithm = \"redlock\""));
        assert_eq!(a.drift_allowance_ms, 22);
        let faults = vec![
            GenFault::ClockJump(ClockJump {
                at_ms: 100,
                node: "redis-1".into(),
                delta_ms: 22,
            }),
            GenFault::Drift(Drift {
                at_ms: 0,
                node: "client-1".into(),
                drift_ppm: -5_000,
            }),
        ];
        let broken = a.classify(&case(faults.clone()));
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert_eq!(broken[0].assumption, Assumption::Clock);
        assert!(broken[0].detail.contains("32 ms in all"), "{}", broken[0].detail);
        // The profile leaves the step what the drift does not use: 22 − 10 ms.
        let bounded = a.bound(case(faults));
        assert!(
            matches!(bounded.faults[0], GenFault::ClockJump(ClockJump { delta_ms: 12, .. })),
            "{:?}",
            bounded.faults
        );
        assert!(a.classify(&bounded).is_empty());
    }

    #[test]
    fn a_dropped_request_waits_its_whole_timeout_however_short_the_cut() {
        // Seed 98 of mutants/parents/slow-link.toml (3 s connect timeout): a 25 ms one-way
        // partition from client-2 to the resource caught its first connection attempt, which
        // waited 3 s; its hold ran 1.4 s past its validity. A partition was charged its length.
        let a = Assumptions::of(&scenario(
            "masters = 1",
            "algorithm = \"token-release\"\nrequest_timeout_ms = 3000\nconnect_timeout_ms = 3000",
            "work_ms = [50, 300]\nresource_timeout_ms = 50",
        ));
        let cut = |a: &str, b: &str| {
            GenFault::Partition(Partition {
                at_ms: 374,
                a: a.into(),
                b: b.into(),
                length_ms: 25,
                oneway: true,
            })
        };
        let broken = a.classify(&case(vec![cut("client-2", "resource")]));
        assert!(
            broken
                .iter()
                .any(|b| b.detail.starts_with("client-2: pauses and delays of 3.000 s")),
            "{broken:?}"
        );
        // So does a lost renewal on a lossy master link (a watchdog waits for it, writing on).
        let lossy = GenFault::Loss(Loss {
            at_ms: 0,
            a: "client-1".into(),
            b: "redis-1".into(),
            rate_ppm: 20_000,
        });
        assert!(!a.classify(&case(vec![lossy])).is_empty());
        // A hold only delays: 25 ms.
        let hold = GenFault::Hold(Hold {
            at_ms: 374,
            a: "client-2".into(),
            b: "resource".into(),
            length_ms: 25,
        });
        assert!(a.classify(&case(vec![hold])).is_empty());
    }
}
