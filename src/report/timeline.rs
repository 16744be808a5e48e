//! The data a timeline chart draws, read from a run's history: one lane per client and per Redis
//! server that took part (masters, then their replicas; servers with nothing to show are left
//! out), what each client believed (its grants as bars with their tokens, and until when its
//! own clock said the grant was valid), what the servers held (the lock key's life on each of
//! them, and what ended it: an expiry, a release, another client's `DEL`, a crash), pauses,
//! servers down, key expiries, resource writes accepted or rejected, clock jumps, other faults,
//! deployment events (a replica's promotion) and the first violation.
//!
//! It is stored in `report.json`, so charts can be drawn again from a report alone (after a
//! merge of shards, say) without the history. It reads the typed history ([`OpHistory`]): the
//! grant bars are its holds, the servers' key lives its [`key_life`] view (what each server
//! held, read with the lease reader's command table); this module only puts them on lanes and
//! words.

use crate::checker::CheckerName;
use crate::history::key_life::{self, KeyLifeEnd, NodeStop};
use crate::history::lease::ClockTracks;
use crate::history::{OpHistory, OpName, StepKind};
use crate::model::units::short_value as short;
use crate::model::Verdict;
use crate::run::ScenarioRun;
use crate::scenario::Scenario;
use lockstep_sim::{Fault, Phase};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a lane stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneRole {
    /// A client node.
    Client,
    /// A Redis master.
    Master,
    /// A replica of a master (it may be promoted).
    Replica,
}

/// One lane of the chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lane {
    /// The node's name.
    pub name: String,
    /// Client or master.
    pub role: LaneRole,
}

/// A lock grant held from `start_us` to `end_us` by the client of lane `lane`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantBar {
    /// Index into `lanes`.
    pub lane: usize,
    /// The acquire's ok, true µs.
    pub start_us: u64,
    /// The release invoke, the abort, the client's next acquire, or the end of the history.
    pub end_us: u64,
    /// The fencing token, when the algorithm issued one.
    pub token: Option<u64>,
    /// The bar's label (`token 2`, or `grant 1` without tokens).
    pub label: String,
    /// No release or abort ended it.
    pub open: bool,
    /// When the client's own validity for the grant (the last one it was told, at the grant
    /// or at an extension) ran out by its clock, in true µs; `None` when not known.
    #[serde(default)]
    pub believed_until_us: Option<u64>,
}

/// The lock key's life on one server: set with one value until something ended it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyLife {
    /// The server's lane.
    pub lane: usize,
    /// The lane of the client whose value the key held, when known.
    pub holder: Option<usize>,
    /// Set, true µs.
    pub start_us: u64,
    /// Ended (or the end of the history), true µs.
    pub end_us: u64,
    /// The holder's grant label (`token 2`, `grant 1`), or the value.
    pub label: String,
    /// What ended it (`expired`, `released by client-1`, `deleted by client-1's DEL`, …).
    pub ended_by: String,
    /// Whether what ended it was not the holder's own release nor its expiry: another client's
    /// deletion, an overwrite, a crash. The chart marks those.
    pub foreign_end: bool,
}

/// A stretch of time on one lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Span {
    /// Index into `lanes`.
    pub lane: usize,
    /// Start, true µs.
    pub start_us: u64,
    /// End, true µs.
    pub end_us: u64,
    /// What it is.
    pub label: String,
}

/// An instant on one lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mark {
    /// Index into `lanes`.
    pub lane: usize,
    /// When, true µs.
    pub at_us: u64,
    /// What happened.
    pub label: String,
}

/// A write attempt that reached the resource, drawn on the writing client's lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteMark {
    /// Index into `lanes`.
    pub lane: usize,
    /// When the resource judged it, true µs.
    pub at_us: u64,
    /// The value written.
    pub value: i64,
    /// The token it carried.
    pub token: Option<u64>,
    /// Whether the resource accepted it.
    pub accepted: bool,
}

/// The first violation, highlighted across every lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Violation {
    /// The checker that found it (`mutual-exclusion` first when several did).
    pub checker: String,
    /// Start of the highlighted stretch, true µs.
    pub start_us: u64,
    /// Its end.
    pub end_us: u64,
    /// The checker's explanation.
    pub explanation: String,
    /// The witness events that fall on a lane.
    pub marks: Vec<Mark>,
}

/// Everything a timeline chart draws.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineData {
    /// The chart's title.
    pub title: String,
    /// The time axis ends here, true µs.
    pub end_us: u64,
    /// Clients first, then masters.
    pub lanes: Vec<Lane>,
    /// Lock grants.
    pub grants: Vec<GrantBar>,
    /// Pauses (GC / VM stalls).
    pub pauses: Vec<Span>,
    /// Servers down between a crash (or power loss, shutdown) and its restart.
    pub down: Vec<Span>,
    /// The lock key's life on each server.
    #[serde(default)]
    pub key_life: Vec<KeyLife>,
    /// Deployment events on servers (a promotion, a resynchronisation), short label first.
    #[serde(default)]
    pub notes: Vec<Mark>,
    /// Key expiries on masters.
    pub expiries: Vec<Mark>,
    /// Resource writes.
    pub writes: Vec<WriteMark>,
    /// Clock jumps.
    pub clock_jumps: Vec<Mark>,
    /// Other faults (partitions, holds, latency, loss, drift).
    pub faults: Vec<Mark>,
    /// The first violation, if any.
    pub violation: Option<Violation>,
}

impl TimelineData {
    /// The timeline of `run` of `scenario`, whose history is `history`.
    pub(crate) fn from_history(scenario: &Scenario, run: &ScenarioRun, history: &OpHistory<'_>) -> TimelineData {
        let clients: Vec<&str> = scenario.clients.iter().map(|c| c.name.as_str()).collect();
        let masters: Vec<&str> = scenario.masters.iter().map(|m| m.name.as_str()).collect();
        // A served run ran no lock of lockstep's: its title says what ran, not the file's unused
        // lock settings (issue 52).
        let title = if scenario.description.starts_with(crate::model::SERVED_DESCRIPTION) {
            format!(
                "{} · served in real time by lockstep serve · {} lane{} (one per test)",
                scenario.name,
                scenario.clients.len(),
                if scenario.clients.len() == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "{} · {} · fencing {} · resource {} · TTL {} ms · seed {}",
                scenario.name,
                scenario.lock.algorithm.name(),
                scenario.lock.fencing_shown(),
                scenario.resource.name(),
                scenario.lock.ttl_ms,
                run.seed
            )
        };
        Self::of_parts(title, &clients, &masters, &run.results, history)
    }

    /// The timeline of a history titled `title`: a lane for each of `clients`, then each of
    /// `masters` (with the servers named after it, its replicas) and any other server seen; the
    /// violation drawn is that of the first invalid result of `results` (mutual exclusion
    /// first).
    pub(crate) fn of_parts(
        title: String,
        clients: &[&str],
        masters: &[&str],
        results: &[crate::checker::CheckResult],
        history: &OpHistory<'_>,
    ) -> TimelineData {
        let mut lanes: Vec<Lane> = clients
            .iter()
            .map(|c| Lane {
                name: c.to_string(),
                role: LaneRole::Client,
            })
            .collect();
        // Servers: each master, then the servers named after it (its replicas), then any other.
        let mut servers: Vec<&str> = Vec::new();
        for step in history.steps() {
            let node = step.event.node.as_str();
            let server_event = matches!(
                step.kind,
                StepKind::Command { .. } | StepKind::Expired(_) | StepKind::Note(_) | StepKind::Fault(_)
            );
            if server_event
                && !clients.contains(&node)
                && !["net", "world", "resource"].contains(&node)
                && !servers.contains(&node)
            {
                servers.push(node);
            }
        }
        for m in masters {
            lanes.push(Lane {
                name: m.to_string(),
                role: LaneRole::Master,
            });
            let prefix = format!("{m}-");
            for s in servers.iter().filter(|s| s.starts_with(&prefix)) {
                lanes.push(Lane {
                    name: s.to_string(),
                    role: LaneRole::Replica,
                });
            }
        }
        for s in &servers {
            if !lanes.iter().any(|l| l.name == *s) {
                lanes.push(Lane {
                    name: s.to_string(),
                    role: LaneRole::Master,
                });
            }
        }
        let index: BTreeMap<String, usize> = lanes.iter().enumerate().map(|(i, l)| (l.name.clone(), i)).collect();
        let lane_of = |node: &str| index.get(node).copied();
        let end_us = history.end_us().max(1_000);
        let mut data = TimelineData {
            title,
            end_us,
            lanes: lanes.clone(),
            grants: Vec::new(),
            pauses: Vec::new(),
            down: Vec::new(),
            key_life: Vec::new(),
            notes: Vec::new(),
            expiries: Vec::new(),
            writes: Vec::new(),
            clock_jumps: Vec::new(),
            faults: Vec::new(),
            violation: None,
        };
        // Grants of clients with a lane, labelled by token or by their number among them.
        let mut grant_count = 0u64;
        // Every node's clock, read in one pass over the history the first time a grant needs one.
        let mut clocks: Option<ClockTracks> = None;
        let mut by_value: BTreeMap<&str, (usize, String)> = BTreeMap::new();
        for hold in history.holds() {
            let Some(lane) = lane_of(hold.process) else { continue };
            grant_count += 1;
            let start_us = hold.start_us();
            let label = match hold.grant.fencing_token {
                Some(t) => format!("token {t}"),
                None => format!("grant {grant_count}"),
            };
            let believed_until_us = hold.beliefs.last().and_then(|belief| {
                clocks
                    .get_or_insert_with(|| ClockTracks::of(history))
                    .node(hold.process)
                    .true_us_at(belief.believed_until_monotonic_ms())
            });
            by_value.insert(hold.grant.value.as_str(), (lane, label.clone()));
            data.grants.push(GrantBar {
                lane,
                start_us,
                end_us: hold.end_us_or(end_us).max(start_us),
                token: hold.grant.fencing_token,
                label,
                open: !hold.given_up(),
                believed_until_us,
            });
        }
        data.key_life = key_lives(history, &lane_of, &by_value, end_us);
        let mut crashed: BTreeMap<usize, (u64, String)> = BTreeMap::new();
        for step in history.steps() {
            let at_us = step.event.at_us;
            match &step.kind {
                StepKind::Expired(expiry) if !expiry.fencing_counter => {
                    if let Some(lane) = lane_of(step.node()) {
                        data.expiries.push(Mark {
                            lane,
                            at_us,
                            label: format!("\"{}\" expired", expiry.key),
                        });
                    }
                }
                StepKind::ResourceWrite(write) => {
                    if let Some(lane) = lane_of(write.client) {
                        data.writes.push(WriteMark {
                            lane,
                            at_us,
                            value: write.value,
                            token: write.token,
                            accepted: write.accepted,
                        });
                    }
                }
                StepKind::Note(text) => {
                    if let Some(lane) = lane_of(step.node()).filter(|&l| lanes[l].role != LaneRole::Client) {
                        data.notes.push(Mark {
                            lane,
                            at_us,
                            label: text.to_string(),
                        });
                    }
                }
                StepKind::Fault(fault) => {
                    let first = fault.nodes().into_iter().find_map(lane_of);
                    let Some(lane) = first else { continue };
                    match fault {
                        Fault::Pause { duration_ms, .. } => data.pauses.push(Span {
                            lane,
                            start_us: at_us,
                            end_us: at_us.saturating_add(duration_ms.saturating_mul(1_000)),
                            label: fault.short_label(),
                        }),
                        Fault::ClockJump { .. } => data.clock_jumps.push(Mark {
                            lane,
                            at_us,
                            label: fault.short_label(),
                        }),
                        Fault::Crash { .. } | Fault::PowerLoss { .. } | Fault::Shutdown { .. } => {
                            let what = match fault {
                                Fault::Crash { .. } => "down (crashed)",
                                Fault::PowerLoss { .. } => "down (power loss)",
                                _ => "down (shut down)",
                            };
                            crashed.insert(lane, (at_us, what.to_string()));
                        }
                        Fault::Restart { .. } => {
                            let (start, label) = crashed
                                .remove(&lane)
                                .unwrap_or_else(|| (at_us, "down (crashed)".to_string()));
                            data.down.push(Span {
                                lane,
                                start_us: start,
                                end_us: at_us,
                                label,
                            });
                        }
                        other => data.faults.push(Mark {
                            lane,
                            at_us,
                            label: other.short_label(),
                        }),
                    }
                }
                _ => {}
            }
        }
        for (lane, (start, label)) in crashed {
            data.down.push(Span {
                lane,
                start_us: start,
                end_us,
                label,
            });
        }
        data.grants.sort_by_key(|g| (g.start_us, g.lane));
        data.down.sort_by_key(|d| (d.start_us, d.lane));
        data.violation = violation(results, history, &lane_of, end_us, &data.grants);
        data.drop_empty_server_lanes();
        data
    }

    /// Leaves out the server lanes on which nothing is drawn, renumbering the others.
    fn drop_empty_server_lanes(&mut self) {
        let mut used = vec![false; self.lanes.len()];
        let mut mark = |lane: usize| {
            if let Some(u) = used.get_mut(lane) {
                *u = true;
            }
        };
        self.grants.iter().for_each(|g| mark(g.lane));
        self.pauses.iter().chain(&self.down).for_each(|s| mark(s.lane));
        self.key_life.iter().for_each(|k| mark(k.lane));
        self.notes
            .iter()
            .chain(&self.expiries)
            .chain(&self.clock_jumps)
            .chain(&self.faults)
            .for_each(|m| mark(m.lane));
        self.writes.iter().for_each(|w| mark(w.lane));
        if let Some(v) = &self.violation {
            v.marks.iter().for_each(|m| mark(m.lane));
        }
        for (i, lane) in self.lanes.iter().enumerate() {
            if lane.role == LaneRole::Client {
                used[i] = true;
            }
        }
        let mut new_index = vec![0usize; self.lanes.len()];
        let mut next = 0;
        for (i, &u) in used.iter().enumerate() {
            new_index[i] = next;
            if u {
                next += 1;
            }
        }
        let map = |lane: &mut usize| *lane = new_index.get(*lane).copied().unwrap_or(*lane);
        self.grants.iter_mut().for_each(|g| map(&mut g.lane));
        self.pauses
            .iter_mut()
            .chain(&mut self.down)
            .for_each(|s| map(&mut s.lane));
        for k in &mut self.key_life {
            map(&mut k.lane);
            if let Some(h) = k.holder.as_mut() {
                map(h);
            }
        }
        self.notes
            .iter_mut()
            .chain(&mut self.expiries)
            .chain(&mut self.clock_jumps)
            .chain(&mut self.faults)
            .for_each(|m| map(&mut m.lane));
        self.writes.iter_mut().for_each(|w| map(&mut w.lane));
        if let Some(v) = &mut self.violation {
            v.marks.iter_mut().for_each(|m| map(&mut m.lane));
        }
        let mut i = 0;
        self.lanes.retain(|_| {
            i += 1;
            used[i - 1]
        });
    }
}

/// The lock key's lives on the servers that have a lane, as the history reads them
/// ([`key_life::key_lives`]): each on its server's lane, labelled by its holder's grant
/// (`by_value`: each value's client lane and grant label) or by its value, and what ended it in
/// words. Lives still set at the end run to `end_us`. Every process that holds a grant or sends a
/// command is a client, with a lane: the view's senders and holders, named, are the lanes'.
fn key_lives(
    history: &OpHistory<'_>,
    lane_of: &dyn Fn(&str) -> Option<usize>,
    by_value: &BTreeMap<&str, (usize, String)>,
    end_us: u64,
) -> Vec<KeyLife> {
    let mut lives: Vec<KeyLife> = key_life::key_lives(history)
        .into_iter()
        .filter_map(|life| {
            let lane = lane_of(life.node)?;
            let holder = by_value.get(life.value);
            let holder_lane = holder.map(|h| h.0);
            let (ended_by, foreign_end) = match &life.end {
                KeyLifeEnd::Released { by } => (format!("released by {by}"), false),
                KeyLifeEnd::Deleted {
                    by,
                    command,
                    from_script,
                } => {
                    let what = if *from_script { "script" } else { command.as_str() };
                    let by_words = match by {
                        Some(s) => format!("deleted by {s}'s {what}"),
                        None => format!("deleted by a {what}"),
                    };
                    // A script read from its text is another's when its sender's lane is not
                    // the holder's (neither known: not).
                    let foreign = !*from_script || by.and_then(lane_of) != holder_lane;
                    (by_words, foreign)
                }
                KeyLifeEnd::Overwritten { by: Some(s) } => (format!("overwritten by {s}"), true),
                KeyLifeEnd::Overwritten { by: None } => ("overwritten".to_string(), true),
                KeyLifeEnd::Expired => ("expired".to_string(), false),
                KeyLifeEnd::Stopped(how) => {
                    let n = life.node;
                    let what = match how {
                        NodeStop::Crash => format!("{n} crashed (key kept only if persisted)"),
                        NodeStop::PowerLoss => format!("{n} lost power (key kept only if synced)"),
                        NodeStop::Shutdown => format!("{n} shut down (key kept only if persisted)"),
                    };
                    (what, true)
                }
                KeyLifeEnd::Alive => ("still set at the end".to_string(), false),
            };
            Some(KeyLife {
                lane,
                holder: holder_lane,
                start_us: life.start_us,
                end_us: match life.end {
                    KeyLifeEnd::Alive => end_us.max(life.start_us),
                    _ => life.end_us,
                },
                label: holder.map_or_else(|| format!("value {}", short(life.value)), |h| h.1.clone()),
                ended_by,
                foreign_end,
            })
        })
        .collect();
    lives.sort_by_key(|l| (l.start_us, l.lane));
    lives
}

/// The first violation: mutual exclusion first (the overlap of the two holds), else the first
/// invalid checker (the span of its witness).
fn violation(
    results: &[crate::checker::CheckResult],
    history: &OpHistory<'_>,
    lane_of: &dyn Fn(&str) -> Option<usize>,
    end_us: u64,
    bars: &[GrantBar],
) -> Option<Violation> {
    let mutual_exclusion = CheckerName::MutualExclusion.as_str();
    let result = results
        .iter()
        .find(|r| r.checker == mutual_exclusion && r.verdict == Verdict::Invalid)
        .or_else(|| results.iter().find(|r| r.verdict == Verdict::Invalid))?;
    let witness = &result.witness;
    let first = witness.first()?.at_us;
    let last = witness.last()?.at_us;
    let (start_us, end_us) = if result.checker == mutual_exclusion {
        // The overlap of the two holds whose grants the witness names.
        let held: Vec<&GrantBar> = witness
            .iter()
            .filter(|e| {
                let op = history.step(e.seq).and_then(|s| s.op());
                op.is_some_and(|o| o.op == OpName::Acquire && o.phase == Phase::Ok)
            })
            .filter_map(|e| {
                let lane = lane_of(&e.node)?;
                bars.iter().find(|b| b.lane == lane && b.start_us == e.at_us)
            })
            .collect();
        if held.len() >= 2 {
            let start = held.iter().map(|b| b.start_us).max().unwrap_or(first);
            let end = held.iter().map(|b| b.end_us).min().unwrap_or(end_us);
            (start, end.max(start))
        } else {
            (first, last)
        }
    } else if result.checker == CheckerName::LeaseValidity.as_str() {
        // What was wrong is the client's belief after the masters' lease ended: the stretch from
        // the lease's end (the witness's last event) to when the belief ended (its validity ran
        // out, or the client gave the grant up first). Before it, the lease was still there.
        let bar = witness.iter().find_map(|e| {
            let lane = lane_of(&e.node)?;
            bars.iter().find(|b| b.lane == lane && b.start_us == e.at_us)
        });
        match bar {
            Some(b) => {
                let until = b.believed_until_us.unwrap_or(b.end_us).min(b.end_us);
                (last, until.max(last))
            }
            None => (first, last),
        }
    } else {
        (first, last)
    };
    let marks = witness
        .iter()
        .filter_map(|e| {
            let step = history.step(e.seq)?;
            let node = match &step.kind {
                StepKind::ResourceWrite(write) => write.client,
                _ => step.node(),
            };
            Some(Mark {
                lane: lane_of(node)?,
                at_us: e.at_us,
                label: crate::report::narrative::line(step).unwrap_or_default(),
            })
        })
        .collect();
    Some(Violation {
        checker: result.checker.clone(),
        start_us,
        end_us,
        explanation: result.explanation.clone(),
        marks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::testkit::Builder;

    /// A grant's value on `redis-1` ended by a script called by its SHA, on a server that records
    /// key effects (a live run of a real library): the key's life ends at that command, not at
    /// its TTL — as the ownership checker reads it.
    #[test]
    fn a_release_by_evalsha_ends_the_key_where_the_server_says_it_did() {
        let mut b = Builder::new();
        b.command_from(
            500,
            "redis-1",
            Some("client-1"),
            &["SET", "lock", "v1", "NX", "PX", "10000"],
            &[("lock", None, Some(("v1", 1_700_000_010_000)))],
        );
        b.acquire(1_000, 3_000, "client-1", "lock", "v1", None);
        b.command_from(
            1_140_000,
            "redis-1",
            Some("client-1"),
            &["EVALSHA", "3f1a0b6c9d2e4f5a6b7c8d9e0f1a2b3c4d5e6f70", "1", "lock", "v1"],
            &[("lock", Some(("v1", 1_700_000_010_000)), None)],
        );
        b.release(1_150_000, 1_200_000, "client-1", "lock", "v1", None);
        // Someone else's DEL of a later value: a foreign end.
        b.command_from(
            1_300_000,
            "redis-1",
            Some("client-2"),
            &["SET", "lock", "v2", "NX", "PX", "10000"],
            &[("lock", None, Some(("v2", 1_700_000_011_300)))],
        );
        b.acquire(1_310_000, 1_400_000, "client-2", "lock", "v2", None);
        b.command_from(
            1_500_000,
            "redis-1",
            Some("client-1"),
            &["DEL", "lock"],
            &[("lock", Some(("v2", 1_700_000_011_300)), None)],
        );
        let history = b.build();
        let ops = OpHistory::new(&history);
        let lanes = ["client-1", "client-2", "redis-1"];
        let lane_of = |node: &str| lanes.iter().position(|n| *n == node);
        let by_value: BTreeMap<&str, (usize, String)> =
            [("v1", (0, "grant 1".to_string())), ("v2", (1, "grant 2".to_string()))].into();
        let lives = key_lives(&ops, &lane_of, &by_value, 2_000_000);
        let shown: Vec<(u64, u64, &str, &str, bool)> = lives
            .iter()
            .map(|l| {
                (
                    l.start_us,
                    l.end_us,
                    l.label.as_str(),
                    l.ended_by.as_str(),
                    l.foreign_end,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (500, 1_140_000, "grant 1", "released by client-1", false),
                (1_300_000, 1_500_000, "grant 2", "deleted by client-1's DEL", true),
            ]
        );
    }
}
