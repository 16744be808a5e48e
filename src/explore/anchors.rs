//! Event-anchored fault placement: faults aimed at the lock's own events.
//!
//! A first, fault-free run of the template records where the lock does something
//! ([`record`]): each acquisition's start, every master's reply, the quorum (the masters' grant),
//! the client's grant, each renewal, the end of each claimed validity, every read and write and
//! the resource's judgement of it, each release and abort, and each key expiry. [`anchored_case`]
//! then places a seed's faults relative to those anchors — just before one, just after one, or
//! inside the window up to the next — on the nodes the anchor involves (its client, the master
//! or the resource it talks to, a replica) or on any node of a kind, with every fault kind:
//! pauses (aimed at one request: "pause between this request and the next", "pause until past
//! the validity end"), clock jumps and drift on clients (their wall clock), masters and replicas,
//! partitions, holds aimed at one request (a release held past the TTL), latency, loss, crashes,
//! power loss, failover, rolling restarts and lost replies (`drop-reply`, always on here when the
//! profile is the default kind set). Strengths are sized by the TTL (and, for a pause aimed at a
//! validity end, by the time left until it), not by the random profile's absolute maxima.
//!
//! Operation aims ([`operation_case`]): two anchored seeds in three aim at one of the lock's
//! *operations* ([`OpWindow`]: an acquisition, extension or release, with the master commands
//! its client sent and the lease it works on) in the seed's own fault-free run — a stall of the
//! client or of its link from inside (or just after) the operation until just after its key
//! expired or past the lease's end (an acquisition
//! that outlives its TTL, a release whose check and delete straddle the key's expiry, an
//! extension after the key changed hands), a client clock step inside it, a latency spike over
//! its request. Operations last milliseconds, so these are aimed at the seed's own run (the
//! seed sets the workload's draws), recorded by the worker before the seed runs.
//!
//! After its operation aims, such a seed tries aims at what *outlives* an operation
//! ([`late_case_try`]): a release's or an extension's request delayed until it lands inside the
//! same client's next grant (a value reused across grants is deleted or extended by an
//! operation that already ended), and a pause of a renewing holder from just before its
//! release until past its next renewal (the renewal timer and the release due together).
//!
//! Last, such a seed tries delays aimed *between two steps* of an operation that takes several
//! round trips to one master ([`step_case_try`], module `steps`): a latency spike or a hold of the
//! client's link, or a pause of the client, from the moment the master applied one step, delaying
//! the next by up to just under the request timeout — every round trip still succeeds, but another
//! client's whole turn fits between the steps (a fencing token taken by an `INCR` before the
//! `SET NX`, a `GET` before the `DEL`).
//!
//! Every draw comes from the seed's own ChaCha stream (`explore/anchored`), so the case is fixed
//! by the seed and the template. What is left out: anchors of a run *with* faults (a fault moves
//! every later event; anchors are from the fault-free run only), and anchors inside the Redis
//! servers beyond the commands they apply.
//!
//! The generated workload shape ([`WorkloadShape`]) varies how many clients run, their think time
//! and their critical-section length, drawn per seed within stated bounds ([`ShapeBounds`]); it
//! only applies to a template whose clients loop over a shared workload (no scripted per-client
//! work or iteration counts), because a scripted story depends on its own timing. By default a
//! shape respects the lock's contract ([`ShapeBounds::contract`]): its critical sections stay
//! well inside the validity the lock claims, so that a fault-free run of any shape is safe for a
//! correct lock and every violation the search finds needs a fault. Shapes whose work outlives
//! the lease ([`ShapeBounds::overrun`], `explore --overrun-shapes`) are drawn only when asked for:
//! what they find without a fault is a property of the shape, not of the lock. A template that
//! works `until-validity` keeps that mode (its work is the validity the lock claims, less the
//! margin); the shape then sets the clients and the think time only. A lock that renews
//! ([`renews`]) promises to hold its lease as long as the work lasts, so its contract shapes
//! include critical sections of one and three TTLs (half the shapes run past W): a renewal that
//! lapses on some grant (one a retry took, say) shows without any fault of its own.

mod steps;
pub use steps::{step_case_try, step_delay_max_ms, step_gaps, StepGap, STEP_ATTEMPTS};

/// [`crate::explore::generate::WorkloadShape`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::generate::WorkloadShape`; removed in 0.3.0"
)]
pub type WorkloadShape = crate::explore::generate::WorkloadShape;
use super::generate::ExploreCase;
use super::kinds::pick_one as pick;
use crate::explore::kinds::GenFault;
use crate::explore::kinds::Topology;
use crate::model::fault::FaultProfile;
use crate::model::fault::DEFAULT_KINDS;
/// [`crate::explore::kinds::NEAR_MS`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::kinds::NEAR_MS`; removed in 0.3.0"
)]
pub const NEAR_MS: [u64; 4] = crate::explore::kinds::NEAR_MS;
use super::kinds::{Aim, OperationAim};
use crate::history::{OpHistory, OpName, StepKind};
use crate::scenario::{Scenario, WorkMs};
use lockstep_sim::{Phase, Seed};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// What happened at an anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnchorKind {
    /// A client began acquiring the lock (its `acquire` invoke).
    AcquireStart,
    /// A master applied a command (and replied).
    MasterReply,
    /// The masters granted the lock (for Redlock, the quorum's last SET).
    Quorum,
    /// The client received its grant (its `acquire` ok).
    Grant,
    /// A renewal succeeded (an `extend` ok).
    Renewal,
    /// The validity the client was told ran out (true time, by its grant's belief).
    ValidityEnd,
    /// A client sent a read to the resource.
    Read,
    /// A client sent a write to the resource.
    Write,
    /// The resource judged a write.
    WriteJudged,
    /// A client began releasing.
    Release,
    /// A client gave up the critical section (an `abort`).
    Abort,
    /// A key expired on a master.
    Expiry,
}

/// One event of the fault-free run a fault can be aimed at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Anchor {
    /// True time, ms.
    pub at_ms: u64,
    /// What happened.
    pub kind: AnchorKind,
    /// The client involved (for a master's reply: the client whose operation was in progress).
    pub client: Option<String>,
    /// The server involved: the master, or the resource.
    pub server: Option<String>,
}

/// The anchors of one fault-free run, in time order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchors {
    /// Every anchor, sorted by time.
    pub list: Vec<Anchor>,
    /// The lock's operations (acquisitions, extensions, releases), in invoke order.
    #[serde(default)]
    pub operations: Vec<OpWindow>,
}

/// Which of the lock's operations a window is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockOpKind {
    /// An acquisition (every attempt, granted or not).
    Acquire,
    /// An extension.
    Extend,
    /// A release.
    Release,
}

/// One lock operation of the fault-free run: from its invoke to its completion, with the master
/// commands its client sent meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OpWindow {
    /// The client that ran it.
    pub client: String,
    /// Which operation.
    pub op: LockOpKind,
    /// True time of its invoke, ms.
    pub start_ms: u64,
    /// True time of its completion, ms (its invoke's when it never completed).
    pub end_ms: u64,
    /// Each master command the client sent during it: when the master applied it (true ms)
    /// and which master.
    pub commands: Vec<(u64, String)>,
    /// Whether it succeeded (a granted acquisition, a renewal that held, a release that
    /// deleted).
    #[serde(default)]
    pub ok: bool,
    /// When the lease the operation works on ran out by what its holder was told (true ms):
    /// the one it produced (a grant, an extension) or the one it gives up (a release); `None`
    /// when the operation belongs to no grant (a failed acquisition).
    #[serde(default)]
    pub lease_end_ms: Option<u64>,
    /// When a master last set or extended the key of that lease (true ms): the key expires a
    /// TTL later unless something else changes it.
    #[serde(default)]
    pub key_set_ms: Option<u64>,
    /// Which of [`commands`](Self::commands) set up a connection (`CLIENT SETINFO`, `HELLO`,
    /// `AUTH`, `SELECT`) rather than act for the lock: not steps of the operation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handshakes: Vec<usize>,
}

impl OpWindow {
    /// The instants that cut the operation into gaps: its invoke, each command's application,
    /// its completion.
    fn cuts(&self) -> Vec<u64> {
        let mut cuts = vec![self.start_ms];
        cuts.extend(self.commands.iter().map(|(at, _)| *at));
        cuts.push(self.end_ms.max(self.start_ms));
        // And just after it: the client's next step (a renewal due, the work) not yet taken.
        cuts.push(self.end_ms.max(self.start_ms) + crate::explore::kinds::NEAR_MS[1]);
        cuts.sort_unstable();
        cuts
    }
}

/// The template without faults: what [`record`] runs.
pub fn fault_free(template: &Scenario) -> Scenario {
    let mut scenario = template.clone();
    scenario.faults = lockstep_sim::FaultPlan::new(Vec::new());
    scenario.expect.clear();
    scenario.explore = None;
    scenario
}

/// Runs the template without faults with `lock` (the exploration's subject) and reads its
/// anchors.
pub fn record(template: &Scenario, lock: &super::subject::PreparedLock) -> Result<Anchors, String> {
    let history = lock.history(&fault_free(template))?;
    Ok(of_history(&OpHistory::new(&history)))
}

/// The anchors of a history.
fn of_history(ops: &OpHistory<'_>) -> Anchors {
    let mut list = Vec::new();
    let mut open_client: Option<String> = None;
    let mut last_server: std::collections::BTreeMap<String, String> = Default::default();
    for step in ops.steps() {
        let at_ms = step.event.at_us / 1_000;
        let node = step.event.node.clone();
        let mut push = |kind, client: Option<String>, server: Option<String>| {
            list.push(Anchor {
                at_ms,
                kind,
                client,
                server,
            })
        };
        match &step.kind {
            StepKind::Op(op) => {
                let client = Some(node.clone());
                let server = last_server.get(&node).cloned();
                match (op.op, op.phase) {
                    (OpName::Acquire, Phase::Invoke) => push(AnchorKind::AcquireStart, client, server),
                    (OpName::Acquire, Phase::Ok) => push(AnchorKind::Grant, client, server),
                    (OpName::Extend, Phase::Ok) => push(AnchorKind::Renewal, client, server),
                    (OpName::Read, Phase::Invoke) => push(AnchorKind::Read, client, Some(super::RESOURCE_NODE.into())),
                    (OpName::Write, Phase::Invoke) => {
                        push(AnchorKind::Write, client, Some(super::RESOURCE_NODE.into()))
                    }
                    (OpName::Release, Phase::Invoke) => push(AnchorKind::Release, client, server),
                    (OpName::Abort, _) => push(AnchorKind::Abort, client, server),
                    _ => {}
                }
                if op.phase == Phase::Invoke {
                    open_client = Some(node.clone());
                }
            }
            StepKind::Command { conn, .. } if *conn != 0 => {
                if let Some(client) = &open_client {
                    last_server.insert(client.clone(), node.clone());
                }
                push(AnchorKind::MasterReply, open_client.clone(), Some(node.clone()));
            }
            StepKind::Expired(expiry) if !expiry.fencing_counter => push(AnchorKind::Expiry, None, Some(node.clone())),
            StepKind::ResourceWrite(w) => push(AnchorKind::WriteJudged, Some(w.client.to_string()), Some(node.clone())),
            _ => {}
        }
    }
    for hold in ops.holds() {
        let client = Some(hold.process.to_string());
        if let Some(grant) = hold.master_grant {
            list.push(Anchor {
                at_ms: grant.at_us / 1_000,
                kind: AnchorKind::Quorum,
                client: client.clone(),
                server: Some(grant.node.clone()),
            });
        }
        for belief in &hold.beliefs {
            list.push(Anchor {
                at_ms: belief.event.at_us / 1_000 + belief.validity_ms,
                kind: AnchorKind::ValidityEnd,
                client: client.clone(),
                server: None,
            });
        }
    }
    list.sort();
    list.dedup();
    Anchors {
        list,
        operations: operations_of(ops),
    }
}

/// The lock operations of a history, with the master commands each one's client sent while it
/// ran.
fn operations_of(ops: &OpHistory<'_>) -> Vec<OpWindow> {
    let steps = ops.steps();
    // Per client: when a master last set or extended its key (its last successful acquisition's
    // or extension's last command).
    let mut key_set: std::collections::BTreeMap<&str, u64> = Default::default();
    ops.operations()
        .iter()
        .filter_map(|operation| {
            let op = match operation.name {
                OpName::Acquire => LockOpKind::Acquire,
                OpName::Extend => LockOpKind::Extend,
                OpName::Release => LockOpKind::Release,
                _ => return None,
            };
            let last = operation.completion.unwrap_or(operation.invoke);
            let sent: Vec<(u64, String, bool)> = steps[operation.invoke..=last]
                .iter()
                .filter_map(|step| match &step.kind {
                    StepKind::Command {
                        conn,
                        client: Some(client),
                        args,
                        ..
                    } if *conn != 0 && *client == operation.process => Some((
                        step.event.at_us / 1_000,
                        step.event.node.clone(),
                        steps::is_handshake(args),
                    )),
                    _ => None,
                })
                .collect();
            let handshakes: Vec<usize> = (0..sent.len()).filter(|&i| sent[i].2).collect();
            let commands: Vec<(u64, String)> = sent.into_iter().map(|(at, node, _)| (at, node)).collect();
            let start_ms = steps[operation.invoke].event.at_us / 1_000;
            let end_ms = steps[last].event.at_us / 1_000;
            // The holder's grant spanning the operation, and the latest validity it was told by
            // the operation's end.
            let lease_end_ms = ops
                .holds()
                .iter()
                .filter(|h| {
                    h.process == operation.process
                        && h.start_us() / 1_000 <= end_ms
                        && h.end.is_none_or(|e| e.event.at_us / 1_000 >= start_ms)
                })
                .flat_map(|h| h.beliefs.iter().filter(|b| b.event.at_us / 1_000 <= end_ms))
                .map(|b| (b.event.at_us / 1_000).saturating_add(b.validity_ms))
                .max();
            let ok = ops.outcome(operation) == crate::history::Outcome::Ok;
            let last_command_ms = commands.iter().map(|(at, _)| *at).max();
            if ok && op != LockOpKind::Release {
                if let Some(at) = last_command_ms {
                    key_set.insert(operation.process, at);
                }
            }
            Some(OpWindow {
                client: operation.process.to_string(),
                op,
                start_ms,
                end_ms,
                commands,
                ok,
                lease_end_ms,
                key_set_ms: lease_end_ms.and(key_set.get(operation.process).copied()),
                handshakes,
            })
        })
        .collect()
}

/// Whether the template's workload can be reshaped: clients loop over the shared workload, with
/// no scripted per-client work or iteration counts.
pub(crate) fn shape_applies(template: &Scenario) -> bool {
    template.workload.iterations.is_none()
        && !template.clients.is_empty()
        && template
            .clients
            .iter()
            .all(|c| c.work_ms.is_none() && c.iterations.is_none())
}

/// Slack, ms, between a contract shape's critical sections and the validity left after the
/// lock's margins (ticks, message rounding, the release).
pub(crate) const SHAPE_MARGIN_MS: u64 = 50;

/// The bounds workload shapes are drawn within: the think time (0 to TTL/2), and the longest
/// critical section of a shape, one of four [`work_ms_choices`](Self::work_ms_choices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeBounds {
    /// The lock's TTL, ms.
    pub ttl_ms: u64,
    /// The longest critical section of a shape is one of these, ms.
    pub work_ms_choices: [u64; 4],
    /// Whether the shapes may outlive the lease (`--overrun-shapes`).
    pub overrun: bool,
}

impl ShapeBounds {
    /// Shapes inside `template`'s lock's contract (the default): the longest critical section is
    /// one of W/10, W/4, W/2 and W, where W is half the validity the lock claims after its safety
    /// margins — the TTL less the lock's drift allowance, the two resource round trips of a turn
    /// (read and write, each up to the resource timeout) and `SHAPE_MARGIN_MS`. For the
    /// standard template (TTL 2 s, resource timeout 50 ms) W is 925 ms (914 ms for Redlock,
    /// whose drift allowance is 22 ms).
    ///
    /// A lock that renews its lease while the work runs (a watchdog, a script lock's `renew`,
    /// Redlock's `auto_extend`) claims validity for as long as it renews: its contract covers
    /// critical sections longer than the TTL, and those are the shapes that exercise its renewal
    /// (W/4, W, TTL and 3 × TTL).
    pub fn contract(template: &Scenario) -> ShapeBounds {
        let ttl_ms = template.lock.ttl_ms;
        let w = contract_work_ms_max(template);
        let work_ms_choices = if renews(template) {
            [w / 4, w, ttl_ms, ttl_ms.saturating_mul(3)]
        } else {
            [w / 10, w / 4, w / 2, w]
        };
        ShapeBounds {
            ttl_ms,
            work_ms_choices: work_ms_choices.map(|ms| ms.max(1)),
            overrun: false,
        }
    }

    /// Shapes that may outlive the lease (`explore --overrun-shapes`): the longest critical
    /// section is one of TTL/10, TTL/2, TTL and 3/2 × TTL (the shapes lockstep drew by default
    /// before: a fault-free run of the longer ones violates every lease lock).
    pub fn overrun(template: &Scenario) -> ShapeBounds {
        let ttl = template.lock.ttl_ms.max(10);
        ShapeBounds {
            ttl_ms: template.lock.ttl_ms,
            work_ms_choices: [ttl / 10, ttl / 2, ttl, ttl * 3 / 2].map(|ms| ms.max(1)),
            overrun: true,
        }
    }

    /// The bounds in a sentence (the summary's coverage lines).
    pub fn describe(&self) -> String {
        let longest = self.work_ms_choices.iter().max().copied().unwrap_or(1);
        if self.overrun {
            format!(
                "overrun shapes (--overrun-shapes): critical sections up to {longest} ms against a {} ms TTL; \
                 a violation without a fault is the shape's, not the lock's",
                self.ttl_ms
            )
        } else if longest > self.ttl_ms {
            format!(
                "inside the lock's contract: critical sections up to {longest} ms, kept alive by the lock's renewal \
                 (TTL {} ms)",
                self.ttl_ms
            )
        } else {
            format!(
                "inside the lock's contract: critical sections up to {longest} ms (half the validity left after the \
                 lock's margins; TTL {} ms)",
                self.ttl_ms
            )
        }
    }
}

/// Whether `template`'s lock renews its lease while the work runs.
pub fn renews(template: &Scenario) -> bool {
    template.lock.algorithm.renews()
}

/// The longest critical section of a contract shape of `template`, ms: half the validity its
/// lock claims after its margins (see [`ShapeBounds::contract`]).
fn contract_work_ms_max(template: &Scenario) -> u64 {
    let a = super::assumptions::Assumptions::of(template);
    let left = template
        .lock
        .ttl_ms
        .saturating_sub(a.drift_allowance_ms)
        .saturating_sub(2 * template.workload.resource_timeout_ms)
        .saturating_sub(SHAPE_MARGIN_MS);
    (left / 2).max(1)
}

/// Draws a workload shape from `rng` within `bounds`: 2 to 4 clients, think time 0 to TTL/2,
/// critical sections `[lo, hi]` with `hi` one of the bounds' four choices and `lo` between 1 ms
/// and `hi`.
pub fn draw_shape(rng: &mut ChaCha8Rng, bounds: &ShapeBounds) -> crate::explore::generate::WorkloadShape {
    let ttl = bounds.ttl_ms.max(10);
    let clients = rng.random_range(2..=4usize);
    let think_ms = rng.random_range(0..=ttl / 2);
    let work_ms_max = bounds.work_ms_choices[rng.random_range(0..4usize)].max(1);
    let work_ms_min = rng.random_range(1..=work_ms_max);
    crate::explore::generate::WorkloadShape {
        clients,
        think_ms,
        work_ms_min,
        work_ms_max,
    }
}

/// Applies a shape to a scenario: its clients (cloned from the first, renamed `client-N`, when
/// more are needed), think time and critical-section lengths (which a template working
/// `until-validity` does not use: its work stays the validity the lock claims, less the margin).
pub(crate) fn apply_shape(scenario: &mut Scenario, shape: &crate::explore::generate::WorkloadShape) {
    let Some(first) = scenario.clients.first().cloned() else {
        return;
    };
    let taken: Vec<String> = scenario.node_names();
    let mut n = 1;
    while scenario.clients.len() < shape.clients {
        let name = format!("client-{n}");
        n += 1;
        if taken.contains(&name) || scenario.clients.iter().any(|c| c.name == name) {
            continue;
        }
        let mut client = first.clone();
        client.name = name;
        scenario.clients.push(client);
    }
    scenario.clients.truncate(shape.clients.max(1));
    scenario.workload.think_ms = shape.think_ms;
    scenario.workload.work_ms = WorkMs::Range(shape.work_ms_min, shape.work_ms_max.max(shape.work_ms_min));
}

/// The kinds anchored placement draws: the profile's, and, when the profile holds every default
/// kind, the opt-in kinds that say so (`drop-reply`: the opt-in exists to keep random
/// placement's digests, which anchored placement does not share).
fn kinds_of(profile: &FaultProfile) -> Vec<String> {
    let mut kinds = profile.kinds.clone();
    if DEFAULT_KINDS.iter().all(|k| kinds.iter().any(|p| p == k)) {
        for extra in GenFault::anchored_with_defaults() {
            if !kinds.iter().any(|k| k == extra) {
                kinds.push(extra.to_string());
            }
        }
    }
    kinds
}

/// The instant a fault is placed at, relative to anchor `i`: just before, just after, or inside
/// the window up to the next anchor.
fn place(rng: &mut ChaCha8Rng, anchors: &[Anchor], i: usize, horizon_ms: u64) -> u64 {
    let at = anchors[i].at_ms;
    let near = crate::explore::kinds::NEAR_MS[rng.random_range(0..crate::explore::kinds::NEAR_MS.len())];
    let t = match rng.random_range(0..3u8) {
        0 => at.saturating_sub(near),
        1 => at + near,
        _ => {
            let next = anchors.get(i + 1).map_or(at + 1_000, |a| a.at_ms);
            if next > at + 1 {
                rng.random_range(at..next)
            } else {
                at
            }
        }
    };
    t.min(horizon_ms.saturating_sub(1))
}

/// The next validity end of `client` after `at_ms`, if the fault-free run had one.
fn validity_end_after(anchors: &[Anchor], client: Option<&String>, at_ms: u64) -> Option<u64> {
    anchors
        .iter()
        .find(|a| a.kind == AnchorKind::ValidityEnd && a.at_ms >= at_ms && a.client.as_ref() == client)
        .map(|a| a.at_ms)
}

/// One fault of `kind` aimed at anchor `i` (the kind draws it: [`GenFault::aim`]); `None` when
/// the topology has no node for it.
pub(crate) fn aimed_fault(
    rng: &mut ChaCha8Rng,
    kind: &str,
    topo: &Topology,
    profile: &FaultProfile,
    anchors: &[Anchor],
    i: usize,
) -> Option<GenFault> {
    let horizon_ms = topo.horizon_ms();
    let anchor = &anchors[i];
    let at_ms = place(rng, anchors, i, horizon_ms);
    let client = anchor
        .client
        .clone()
        .filter(|c| topo.clients.contains(c))
        .or_else(|| pick(rng, &topo.clients).cloned())?;
    let master = anchor
        .server
        .clone()
        .filter(|s| topo.masters.contains(s))
        .or_else(|| pick(rng, &topo.masters).cloned())?;
    // The server the anchor's request went to (a master, or the resource).
    let server = anchor.server.clone().unwrap_or_else(|| master.clone());
    let left_ms = validity_end_after(anchors, Some(&client), at_ms).map(|end| end.saturating_sub(at_ms));
    let aim = Aim {
        topo,
        profile,
        at_ms,
        ttl_ms: topo.ttl_ms.max(2),
        client,
        master,
        server,
        left_ms,
    };
    GenFault::aim(kind, rng, &aim)
}

/// Draws 1 to `faults_max` faults aimed at the anchors, from `rng` (more faults are rarer).
fn aimed_faults(rng: &mut ChaCha8Rng, topo: &Topology, profile: &FaultProfile, anchors: &Anchors) -> Vec<GenFault> {
    let kinds = kinds_of(profile);
    if anchors.list.is_empty() || kinds.is_empty() || profile.faults_max == 0 {
        return Vec::new();
    }
    let mut count = 1;
    while count < profile.faults_max && rng.random_bool(0.4) {
        count += 1;
    }
    let mut faults = Vec::new();
    // A bounded number of draws: kinds the topology cannot use draw nothing.
    for _ in 0..count * 4 {
        if faults.len() == count {
            break;
        }
        let i = rng.random_range(0..anchors.list.len());
        let kind = &kinds[rng.random_range(0..kinds.len())];
        if let Some(fault) = aimed_fault(rng, kind, topo, profile, &anchors.list, i) {
            faults.push(fault);
        }
    }
    faults
}

/// One fault aimed *at one of the lock's operations* of the fault-free run (`window`), of
/// `kind` (see [`GenFault::operation_draw_kinds`]; the kind draws it: [`GenFault::aim_at_operation`]): where the
/// bugs of a lock's own steps show — a stall of the client or of its link from inside the
/// operation until its key expired or past its lease (an acquisition that outlived its TTL, a
/// release whose check and delete straddle the key's expiry, a renewal that re-creates an
/// expired key), a client clock step inside it, a latency spike over its request.
fn operation_fault(rng: &mut ChaCha8Rng, kind: &str, topo: &Topology, window: &OpWindow) -> Option<GenFault> {
    let horizon_ms = topo.horizon_ms();
    let ttl = topo.ttl_ms.max(2);
    if !topo.clients.contains(&window.client) || window.start_ms >= horizon_ms {
        return None;
    }
    let server = if window.commands.is_empty() {
        pick(rng, &topo.masters)?.clone()
    } else {
        window.commands[rng.random_range(0..window.commands.len())].1.clone()
    };
    // The lease the operation works on (a TTL from its end when it has none: a refused
    // acquisition, whose competitor's lease is about that long).
    let lease_end_ms = window
        .lease_end_ms
        .unwrap_or(window.end_ms + ttl)
        .min(window.end_ms.saturating_add(3 * ttl));
    // The key expires a TTL after a master last set it (or, unknown, about when the lease ends).
    let key_expiry_ms = window.key_set_ms.map_or(lease_end_ms, |at| at + ttl);
    let aim = OperationAim {
        topo,
        ttl_ms: ttl,
        client: window.client.clone(),
        server,
        start_ms: window.start_ms,
        cuts: window.cuts(),
        lease_end_ms,
        key_expiry_ms,
    };
    GenFault::aim_at_operation(kind, rng, &aim)
}

/// Whether `seed`'s anchored case aims at one of the lock's operations (two seeds in three,
/// when the profile allows an operation kind), decided from a stream of its own
/// (`explore/operation`) so that the other seeds draw exactly the anchored cases they drew
/// before. Such a case is aimed at the seed's *own* fault-free run ([`operation_case`]): the
/// seed sets the workload's draws, and an operation lasts milliseconds, so only the seed's own
/// run says when it happens.
pub fn aims_at_operation(seed: u64, profile: &FaultProfile) -> bool {
    let allowed = GenFault::operation_draw_kinds()
        .iter()
        .any(|k| profile.kinds.iter().any(|p| p == k));
    allowed && profile.faults_max > 0 && Seed(seed).stream("explore/operation").random_bool(2.0 / 3.0)
}

/// The faults of an operation-aimed case: one fault aimed at one of the lock's operations of
/// the seed's own fault-free run (`anchors`, see `operation_fault`) — an operation kind first
/// (acquisitions outnumber the rest), then one of its successful windows three times in four —
/// plus, with probability 0.3, an aimed fault of any kind (bugs that need two faults to
/// coincide). Empty when the run had no operation to aim at.
pub fn operation_case(seed: u64, topo: &Topology, profile: &FaultProfile, anchors: &Anchors) -> Vec<GenFault> {
    operation_case_try(seed, 0, topo, profile, anchors)
}

/// The `attempt`-th operation-aimed case of `seed` ([`operation_case`] is attempt 0): another
/// operation, window and stall length on the same fault-free run, each attempt from a stream of
/// its own (`explore/operation/aim/{attempt}`), so attempt 0 stays what it always was (issue 42:
/// a renewal-timing bug needs a stall of the right length, and one draw per seed seldom has it).
pub fn operation_case_try(
    seed: u64,
    attempt: u64,
    topo: &Topology,
    profile: &FaultProfile,
    anchors: &Anchors,
) -> Vec<GenFault> {
    let mut rng = match attempt {
        0 => Seed(seed).stream("explore/operation/aim"),
        n => Seed(seed).stream(&format!("explore/operation/aim/{n}")),
    };
    let kinds: Vec<&str> = GenFault::operation_draw_kinds()
        .into_iter()
        .filter(|k| profile.kinds.iter().any(|p| p == k))
        .collect();
    if anchors.operations.is_empty() || kinds.is_empty() || profile.faults_max == 0 {
        return Vec::new();
    }
    // Only operations whose lease ends early enough for what follows it (a competitor's turn,
    // the stalled client's next step) to happen before the run ends.
    let ttl = topo.ttl_ms.max(2);
    let in_time: Vec<&OpWindow> = anchors
        .operations
        .iter()
        .filter(|w| w.lease_end_ms.unwrap_or(w.end_ms + ttl).saturating_add(ttl) <= topo.duration_ms)
        .collect();
    let mut present: Vec<LockOpKind> = in_time.iter().map(|w| w.op).collect();
    present.sort();
    present.dedup();
    if present.is_empty() {
        return Vec::new();
    }
    for _ in 0..8 {
        let op = present[rng.random_range(0..present.len())];
        let want_ok = rng.random_bool(0.75);
        let mut windows: Vec<&OpWindow> = in_time
            .iter()
            .copied()
            .filter(|w| w.op == op && w.ok == want_ok)
            .collect();
        if windows.is_empty() {
            windows = in_time.iter().copied().filter(|w| w.op == op).collect();
        }
        let window = windows[rng.random_range(0..windows.len())];
        let kind = kinds[rng.random_range(0..kinds.len())];
        // A release reads no clock a correct or buggy lock depends on: a step there is wasted.
        if op == LockOpKind::Release && GenFault::wasted_on_release(kind) {
            continue;
        }
        let Some(fault) = operation_fault(&mut rng, kind, topo, window) else {
            continue;
        };
        let mut faults = vec![fault];
        if profile.faults_max > 1 && rng.random_bool(0.3) {
            let mut one = profile.clone();
            one.faults_max = 1;
            faults.extend(aimed_faults(&mut rng, topo, &one, anchors));
        }
        return faults;
    }
    Vec::new()
}

/// How many aims an operation-aimed seed tries at a request or a timer that outlives its
/// operation ([`late_case_try`]), after its operation aims ([`operation_case_try`]).
pub const LATE_ATTEMPTS: u64 = 2;

/// The `attempt`-th aim of `seed` at what outlives one of the lock's operations in the seed's
/// own fault-free run (issue 42), from a stream of its own (`explore/operation/late/{attempt}`,
/// so that no earlier draw moves). Two shapes, each aimed where a correct lock is indifferent
/// and a buggy one is not:
///
/// - **a late request**: a latency spike over a release's or an extension's request to one
///   master, short enough that the client's retry or its next operation goes through at the
///   usual speed, long enough that the request lands inside the client's *next* grant (between
///   that grant and its release, allowing for the timeout the request itself costs). A lock
///   that reuses a value across acquisitions has its next grant deleted (a late compare-and-
///   delete) or extended by an operation that already ended; a lock with a fresh value per
///   grant finds another value and changes nothing.
/// - **a pause straddling a release and a renewal timer**: a pause of a renewing holder from
///   just before its release until past the renewal its timer schedules next, so that both are
///   due when it resumes (redis-semaphore #205: the renewal armed before the release runs after
///   it; a correct lock reports nothing).
///
/// Empty when the run has nothing to aim at (no client with a later grant, no renewing holder).
pub fn late_case_try(
    seed: u64,
    attempt: u64,
    topo: &Topology,
    profile: &FaultProfile,
    anchors: &Anchors,
) -> Vec<GenFault> {
    use super::kinds::{Latency, Pause, Spike};
    let mut rng = Seed(seed).stream(&format!("explore/operation/late/{attempt}"));
    let allowed = |kind: &str| profile.kinds.iter().any(|k| k == kind);
    if profile.faults_max == 0 {
        return Vec::new();
    }
    let horizon_ms = topo.horizon_ms();
    let timeout_ms = topo.request_timeout_ms.max(1);
    let ops = &anchors.operations;
    let ours = |w: &OpWindow| {
        topo.clients.contains(&w.client) && w.start_ms > crate::explore::kinds::NEAR_MS[1] && w.start_ms < horizon_ms
    };
    // Late requests: a release or an extension, then the same client's next grant and the end
    // of that grant's turn (its next release, or the lease's end).
    let mut late: Vec<(&OpWindow, u64, u64)> = Vec::new();
    // Straddles: a renewing holder's release, and when its renewal timer fires next.
    let mut straddles: Vec<(&OpWindow, u64)> = Vec::new();
    for (i, w) in ops.iter().enumerate() {
        if !ours(w) || w.op == LockOpKind::Acquire {
            continue;
        }
        let later = &ops[i + 1..];
        let same = |o: &&OpWindow| o.client == w.client;
        if allowed("latency") {
            let next_grant = later.iter().filter(same).find(|o| o.op == LockOpKind::Acquire && o.ok);
            if let Some(grant) = next_grant {
                let turn_end_ms = later
                    .iter()
                    .filter(same)
                    .find(|o| o.op == LockOpKind::Release && o.start_ms >= grant.end_ms)
                    .map(|o| o.start_ms)
                    .or(grant.lease_end_ms)
                    .unwrap_or(grant.end_ms + topo.ttl_ms);
                late.push((w, grant.end_ms, turn_end_ms));
            }
        }
        if allowed("pause") && w.op == LockOpKind::Release {
            // The holder's renewals before this release (since its last acquisition).
            let renewals: Vec<u64> = ops[..i]
                .iter()
                .rev()
                .filter(|o| o.client == w.client)
                .take_while(|o| o.op == LockOpKind::Extend)
                .map(|o| o.start_ms)
                .collect();
            if let Some(&last) = renewals.first() {
                let grant_ms = ops[..i]
                    .iter()
                    .rev()
                    .find(|o| o.client == w.client && o.op == LockOpKind::Acquire && o.ok)
                    .map_or(0, |o| o.end_ms);
                let period_ms = match renewals.get(1) {
                    Some(&before) => last.saturating_sub(before),
                    None => last.saturating_sub(grant_ms),
                }
                .max(1);
                let mut next_ms = last + period_ms;
                while next_ms <= w.start_ms {
                    next_ms += period_ms;
                }
                straddles.push((w, next_ms));
            }
        }
    }
    let shapes = [!late.is_empty(), !straddles.is_empty()];
    let available: Vec<usize> = (0..2).filter(|&s| shapes[s]).collect();
    let Some(&shape) = available.get(rng.random_range(0..available.len().max(1))) else {
        return Vec::new();
    };
    if shape == 0 {
        let (w, grant_ms, turn_end_ms) = late[rng.random_range(0..late.len())];
        let server = match w.commands.len() {
            0 => pick(&mut rng, &topo.masters).cloned(),
            n => Some(w.commands[rng.random_range(0..n)].1.clone()),
        };
        let Some(server) = server else {
            return Vec::new();
        };
        let at_ms = w
            .start_ms
            .saturating_sub(crate::explore::kinds::NEAR_MS[rng.random_range(0..2usize)]);
        // The request's own timeout (and a retry's delay) moves the next grant later than the
        // fault-free run had it.
        let from_ms = grant_ms + 2 * timeout_ms + crate::explore::kinds::NEAR_MS[3];
        let lands_ms = if turn_end_ms > from_ms {
            rng.random_range(from_ms..turn_end_ms)
        } else {
            from_ms
        };
        let (min_latency_ms, max_latency_ms) = topo.network_latency_ms;
        return vec![Latency {
            at_ms,
            a: w.client.clone(),
            b: server,
            latency_ms: lands_ms.saturating_sub(at_ms).max(timeout_ms + 1),
            spike: Some(Spike {
                length_ms: rng.random_range(1..=timeout_ms),
                min_latency_ms,
                max_latency_ms,
            }),
        }
        .into()];
    }
    let (w, next_ms) = straddles[rng.random_range(0..straddles.len())];
    let at_ms = w
        .start_ms
        .saturating_sub(crate::explore::kinds::NEAR_MS[rng.random_range(0..3usize)]);
    let past_ms = crate::explore::kinds::NEAR_MS[rng.random_range(0..crate::explore::kinds::NEAR_MS.len())];
    vec![Pause {
        at_ms,
        node: w.client.clone(),
        duration_ms: (next_ms + past_ms).saturating_sub(at_ms).max(1),
    }
    .into()]
}

/// The anchored case of `seed`: faults aimed at the anchors, every client of the template.
pub fn anchored_case(seed: u64, topo: &Topology, profile: &FaultProfile, anchors: &Anchors) -> ExploreCase {
    let mut rng = Seed(seed).stream("explore/anchored");
    ExploreCase {
        clients: topo.clients.len().max(1),
        faults: aimed_faults(&mut rng, topo, profile, anchors),
        shape: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::kinds::{ClockJump, Hold, Latency, Pause};

    fn template() -> Scenario {
        crate::scenario::standard::standard_template(
            crate::model::Algorithm::TokenRelease,
            crate::model::Fencing::None,
            lockstep_sim::FencingMode::Unfenced,
            1,
        )
        .unwrap()
    }

    #[test]
    fn a_fault_free_run_has_the_lock_events_as_anchors() {
        let anchors = record(&template(), &super::super::LockRef::Template.prepare()).unwrap();
        for kind in [
            AnchorKind::AcquireStart,
            AnchorKind::MasterReply,
            AnchorKind::Grant,
            AnchorKind::ValidityEnd,
            AnchorKind::Write,
            AnchorKind::WriteJudged,
            AnchorKind::Release,
        ] {
            assert!(anchors.list.iter().any(|a| a.kind == kind), "no {kind:?} anchor");
        }
        assert!(anchors.list.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn anchored_cases_are_fixed_by_the_seed_and_aim_at_the_anchors() {
        let template = template();
        let topo = super::super::topology(&template);
        let anchors = record(&template, &super::super::LockRef::Template.prepare()).unwrap();
        let profile = FaultProfile::default();
        let a = anchored_case(7, &topo, &profile, &anchors);
        assert_eq!(a, anchored_case(7, &topo, &profile, &anchors));
        assert!(!a.faults.is_empty());
        let kinds: std::collections::BTreeSet<&str> = (0..200)
            .flat_map(|seed| anchored_case(seed, &topo, &profile, &anchors).faults)
            .map(|f| f.kind())
            .collect();
        for kind in [
            "pause",
            "clock-jump",
            "drift",
            "hold",
            "drop-reply",
            "partition",
            "latency",
        ] {
            assert!(kinds.contains(kind), "{kind} never drawn: {kinds:?}");
        }
    }

    #[test]
    fn operation_aims_stall_step_or_spike_inside_the_lock_operations() {
        let template = template();
        let topo = super::super::topology(&template);
        let anchors = record(&template, &super::super::LockRef::Template.prepare()).unwrap();
        let profile = FaultProfile::default();
        assert!(anchors
            .operations
            .iter()
            .any(|w| w.op == LockOpKind::Acquire && w.ok && w.lease_end_ms.is_some() && !w.commands.is_empty()));
        assert!(anchors.operations.iter().any(|w| w.op == LockOpKind::Release && w.ok));
        // Inside one of the client's operations, or just after it.
        let inside = |client: &str, at_ms: u64| {
            anchors
                .operations
                .iter()
                .filter(|w| {
                    w.client == client && w.start_ms <= at_ms && at_ms <= w.end_ms + crate::explore::kinds::NEAR_MS[1]
                })
                .map(|w| w.lease_end_ms.unwrap_or(w.end_ms + topo.ttl_ms))
                .min()
        };
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..300 {
            let faults = operation_case(seed, &topo, &profile, &anchors);
            assert_eq!(faults, operation_case(seed, &topo, &profile, &anchors));
            let Some(first) = faults.first() else { continue };
            kinds.insert(first.kind());
            match first {
                GenFault::Pause(Pause {
                    at_ms,
                    node,
                    duration_ms,
                }) => {
                    let lease_end_ms = inside(node, *at_ms).expect("a pause inside one of its client's operations");
                    assert!(at_ms + duration_ms > lease_end_ms, "{first:?} ends before the lease");
                }
                GenFault::Hold(Hold { at_ms, a, .. }) => assert!(inside(a, *at_ms).is_some(), "{first:?}"),
                GenFault::ClockJump(ClockJump { at_ms, node, .. }) => {
                    assert!(inside(node, *at_ms).is_some(), "{first:?}")
                }
                GenFault::Latency(Latency { spike, latency_ms, .. }) => {
                    assert!(spike.is_some() && *latency_ms > topo.request_timeout_ms, "{first:?}")
                }
                other => panic!("not an operation aim: {other:?}"),
            }
        }
        assert_eq!(
            kinds,
            ["clock-jump", "hold", "latency", "pause"].into_iter().collect(),
            "every operation kind is drawn"
        );
    }

    /// Issue 42: the aims at what outlives an operation. On a file whose client releases and
    /// acquires again, a latency spike over its release's request, shorter than the request
    /// timeout, landing inside the next grant (allowing for the timeout it costs); on a renewing
    /// holder's file, a pause from just before its release until past its next renewal.
    #[test]
    fn late_aims_land_a_request_in_the_next_grant_or_straddle_a_release_and_a_renewal() {
        let scenario = |name: &str| {
            let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
            Scenario::from_file(std::path::Path::new(&path)).unwrap()
        };
        let profile = FaultProfile::default();
        let lock = super::super::LockRef::Template.prepare();
        // Value reuse: client-1 releases at about 3 s and is granted again at once.
        let template = scenario("bug-value-reuse-release-retry");
        let topo = super::super::topology(&template);
        let anchors = record(&fault_free(&template), &lock).unwrap();
        let ops = &anchors.operations;
        let mut landed = 0;
        for seed in 0..40 {
            for attempt in 0..LATE_ATTEMPTS {
                let faults = late_case_try(seed, attempt, &topo, &profile, &anchors);
                assert_eq!(faults, late_case_try(seed, attempt, &topo, &profile, &anchors));
                let [GenFault::Latency(Latency {
                    at_ms,
                    a,
                    latency_ms,
                    spike: Some(spike),
                    ..
                })] = faults.as_slice()
                else {
                    panic!("not one latency spike: {faults:?}");
                };
                assert!(spike.length_ms <= topo.request_timeout_ms, "{faults:?}");
                let (sent, lands) = (*at_ms, at_ms + latency_ms);
                // Sent with one of the client's releases, landing while its next grant holds.
                let release = ops
                    .iter()
                    .position(|w| &w.client == a && w.op == LockOpKind::Release && w.start_ms.abs_diff(sent) <= 5)
                    .expect("aimed at a release");
                let next = ops[release..]
                    .iter()
                    .find(|w| &w.client == a && w.op == LockOpKind::Acquire && w.ok)
                    .expect("a next grant");
                assert!(lands > next.end_ms + topo.request_timeout_ms, "{faults:?}");
                assert!(lands <= next.lease_end_ms.unwrap(), "{faults:?}");
                landed += 1;
            }
        }
        assert_eq!(landed, 80);
        // A renewing holder: a pause from before its release past its next renewal.
        let template = scenario("bug-renewal-races-release");
        let topo = super::super::topology(&template);
        let anchors = record(&fault_free(&template), &lock).unwrap();
        let ops = &anchors.operations;
        let mut straddled = 0;
        for seed in 0..40 {
            let faults = late_case_try(seed, 0, &topo, &profile, &anchors);
            let [GenFault::Pause(Pause {
                at_ms,
                node,
                duration_ms,
            })] = faults.as_slice()
            else {
                panic!("not one pause: {faults:?}");
            };
            // Just before one of the node's releases, which renewals preceded.
            let release = ops
                .iter()
                .position(|w| &w.client == node && w.op == LockOpKind::Release && w.start_ms > *at_ms)
                .expect("a release after the pause starts");
            assert!(ops[release].start_ms - at_ms <= 20, "{faults:?}");
            let renewals: Vec<u64> = ops[..release]
                .iter()
                .filter(|w| &w.client == node && w.op == LockOpKind::Extend)
                .map(|w| w.start_ms)
                .collect();
            let last = *renewals.last().expect("renewals before the release");
            let before = renewals.len().checked_sub(2).map_or_else(
                || {
                    ops[..release]
                        .iter()
                        .find(|w| &w.client == node && w.ok)
                        .unwrap()
                        .end_ms
                },
                |i| renewals[i],
            );
            // Resumes past the renewal due next, within a period of it.
            let mut due = last + (last - before);
            while due <= ops[release].start_ms {
                due += last - before;
            }
            let resumes = at_ms + duration_ms;
            assert!(
                resumes > due && resumes <= due + crate::explore::kinds::NEAR_MS[3],
                "{faults:?} (due {due})"
            );
            straddled += 1;
        }
        assert_eq!(straddled, 40);
    }

    /// Issue 50 item 3: a renewing lock's contract covers critical sections of several TTLs (it
    /// promises to renew), drawn for some seeds and not all; a lock that does not renew keeps
    /// its sections inside half its validity.
    #[test]
    fn renewing_templates_draw_multi_ttl_sections_and_others_do_not() {
        let renewing = crate::scenario::standard::standard_template(
            crate::model::Algorithm::Watchdog,
            crate::model::Fencing::None,
            lockstep_sim::FencingMode::Unfenced,
            1,
        )
        .unwrap();
        assert!(renews(&renewing) && shape_applies(&renewing));
        let plain = template();
        assert!(!renews(&plain));
        let mut rng = Seed(11).stream("test");
        for (scenario, multi_ttl) in [(&renewing, true), (&plain, false)] {
            let ttl_ms = scenario.lock.ttl_ms;
            let bounds = ShapeBounds::contract(scenario);
            let draws: Vec<crate::explore::generate::WorkloadShape> =
                (0..200).map(|_| draw_shape(&mut rng, &bounds)).collect();
            let beyond = draws.iter().filter(|s| s.work_ms_max >= 2 * ttl_ms).count();
            let inside = draws
                .iter()
                .filter(|s| s.work_ms_max <= contract_work_ms_max(scenario))
                .count();
            assert!(draws.iter().all(|s| s.work_ms_max <= 3 * ttl_ms));
            if multi_ttl {
                assert!(
                    beyond >= 20 && inside >= 20,
                    "{beyond} multi-TTL, {inside} inside of 200"
                );
                assert!(bounds.describe().contains("kept alive by the lock's renewal"));
            } else {
                assert_eq!((beyond, inside), (0, 200));
            }
        }
    }

    #[test]
    fn shapes_stay_within_their_bounds_and_apply_to_looping_templates_only() {
        let mut rng = Seed(3).stream("test");
        let overrun = ShapeBounds::overrun(&template());
        let contract = ShapeBounds::contract(&template());
        assert_eq!(overrun.work_ms_choices, [200, 1_000, 2_000, 3_000]);
        // TTL 2000 − 2 × 50 ms resource timeout − 50 ms margin, halved.
        assert_eq!(contract.work_ms_choices, [92, 231, 462, 925]);
        for (bounds, longest) in [(overrun, 3_000), (contract, 925)] {
            for _ in 0..100 {
                let shape = draw_shape(&mut rng, &bounds);
                assert!((2..=4).contains(&shape.clients));
                assert!(shape.think_ms <= 1_000);
                assert!(
                    shape.work_ms_min >= 1 && shape.work_ms_min <= shape.work_ms_max && shape.work_ms_max <= longest
                );
            }
        }
        let mut scenario = template();
        assert!(shape_applies(&scenario));
        apply_shape(
            &mut scenario,
            &crate::explore::generate::WorkloadShape {
                clients: 4,
                think_ms: 10,
                work_ms_min: 5,
                work_ms_max: 9,
            },
        );
        assert_eq!(scenario.clients.len(), 4);
        let names: std::collections::BTreeSet<_> = scenario.clients.iter().map(|c| c.name.clone()).collect();
        assert_eq!(names.len(), 4);
        let scripted =
            Scenario::from_file(std::path::Path::new("scenarios/bug-release-check-then-delete.toml")).unwrap();
        assert!(!shape_applies(&scripted));
    }
}
