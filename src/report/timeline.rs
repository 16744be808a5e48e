//! The data a timeline chart draws, read from a run's history: one lane per client and per
//! master, lock grants as bars with their tokens, pauses, key expiries, resource writes accepted
//! or rejected, clock jumps and other faults, and the first violation.
//!
//! It is stored in `report.json`, so charts can be drawn again from a report alone (after a
//! merge of shards, say) without the history.

use crate::checker::Verdict;
use crate::ops::{names, Grant, GrantRef, OpView};
use crate::run::ScenarioRun;
use crate::scenario::Scenario;
use lockstep_sim::{EventKind, Fault, Phase};
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
    /// Masters down between a crash and its restart.
    pub down: Vec<Span>,
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

fn short_ms(ms: i64) -> String {
    if ms % 1000 == 0 {
        format!("{:+} s", ms / 1000)
    } else {
        format!("{ms:+} ms")
    }
}

impl TimelineData {
    /// The timeline of `run` of `scenario`.
    pub fn of(scenario: &Scenario, run: &ScenarioRun) -> TimelineData {
        let mut lanes: Vec<Lane> = scenario
            .clients
            .iter()
            .map(|c| Lane {
                name: c.name.clone(),
                role: LaneRole::Client,
            })
            .collect();
        lanes.extend(scenario.masters.iter().map(|m| Lane {
            name: m.name.clone(),
            role: LaneRole::Master,
        }));
        let index: BTreeMap<String, usize> = lanes.iter().enumerate().map(|(i, l)| (l.name.clone(), i)).collect();
        let lane_of = |node: &str| index.get(node).copied();
        let events = run.history.events();
        let end_us = events.last().map_or(0, |e| e.at_us).max(1_000);
        let mut data = TimelineData {
            title: format!(
                "{} · {} · fencing {} · resource {} · TTL {} ms · seed {}",
                scenario.name,
                scenario.lock.algorithm.name(),
                scenario.lock.fencing.name(),
                scenario.resource.name(),
                scenario.lock.ttl_ms,
                run.seed
            ),
            end_us,
            lanes: lanes.clone(),
            grants: Vec::new(),
            pauses: Vec::new(),
            down: Vec::new(),
            expiries: Vec::new(),
            writes: Vec::new(),
            clock_jumps: Vec::new(),
            faults: Vec::new(),
            violation: None,
        };
        // Open grants per client: (lane, start, token, value, label).
        let mut open: BTreeMap<usize, (u64, Option<u64>, String, String)> = BTreeMap::new();
        let mut grant_count = 0u64;
        let mut crashed: BTreeMap<usize, u64> = BTreeMap::new();
        let close =
            |data: &mut TimelineData, lane: usize, g: (u64, Option<u64>, String, String), at: u64, open: bool| {
                data.grants.push(GrantBar {
                    lane,
                    start_us: g.0,
                    end_us: at.max(g.0),
                    token: g.1,
                    label: g.3,
                    open,
                });
            };
        for event in events {
            match &event.kind {
                EventKind::Op { .. } => {
                    let Some(op) = OpView::of(event) else { continue };
                    let Some(lane) = lane_of(&event.node) else { continue };
                    match (op.op, op.phase) {
                        (names::ACQUIRE, Phase::Ok) => {
                            let Some(g) = op.decode::<Grant>() else { continue };
                            if let Some(prev) = open.remove(&lane) {
                                close(&mut data, lane, prev, event.at_us, true);
                            }
                            grant_count += 1;
                            let label = match g.fencing_token {
                                Some(t) => format!("token {t}"),
                                None => format!("grant {grant_count}"),
                            };
                            open.insert(lane, (event.at_us, g.fencing_token, g.value, label));
                        }
                        (names::ACQUIRE, Phase::Invoke) => {
                            if let Some(prev) = open.remove(&lane) {
                                close(&mut data, lane, prev, event.at_us, true);
                            }
                        }
                        (names::RELEASE, Phase::Invoke) | (names::ABORT, _) => {
                            let value = op.decode::<GrantRef>().map(|g| g.value);
                            let matches = open
                                .get(&lane)
                                .is_some_and(|g| value.as_ref().is_none_or(|v| *v == g.2));
                            if matches {
                                if let Some(g) = open.remove(&lane) {
                                    close(&mut data, lane, g, event.at_us, false);
                                }
                            }
                        }
                        _ => {}
                    }
                }
                EventKind::Expired { key } if !key.starts_with("lockstep:fence:") => {
                    if let Some(lane) = lane_of(&event.node) {
                        data.expiries.push(Mark {
                            lane,
                            at_us: event.at_us,
                            label: format!("\"{key}\" expired"),
                        });
                    }
                }
                EventKind::ResourceWrite {
                    client,
                    value,
                    token,
                    accepted,
                    ..
                } => {
                    if let Some(lane) = lane_of(client) {
                        data.writes.push(WriteMark {
                            lane,
                            at_us: event.at_us,
                            value: *value,
                            token: *token,
                            accepted: *accepted,
                        });
                    }
                }
                EventKind::Fault { fault } => {
                    let first = fault.nodes().into_iter().find_map(lane_of);
                    let Some(lane) = first else { continue };
                    match fault {
                        Fault::Pause { duration_ms, .. } => data.pauses.push(Span {
                            lane,
                            start_us: event.at_us,
                            end_us: event.at_us + duration_ms * 1_000,
                            label: format!("paused {}", short_ms(*duration_ms as i64).trim_start_matches('+')),
                        }),
                        Fault::ClockJump { delta_ms, .. } => data.clock_jumps.push(Mark {
                            lane,
                            at_us: event.at_us,
                            label: format!("clock {}", short_ms(*delta_ms)),
                        }),
                        Fault::Crash { .. } => {
                            crashed.insert(lane, event.at_us);
                        }
                        Fault::Restart { .. } => {
                            let start = crashed.remove(&lane).unwrap_or(event.at_us);
                            data.down.push(Span {
                                lane,
                                start_us: start,
                                end_us: event.at_us,
                                label: "down (crashed)".to_string(),
                            });
                        }
                        other => data.faults.push(Mark {
                            lane,
                            at_us: event.at_us,
                            label: other.kind().to_string(),
                        }),
                    }
                }
                _ => {}
            }
        }
        for (lane, g) in std::mem::take(&mut open) {
            close(&mut data, lane, g, end_us, true);
        }
        for (lane, start) in crashed {
            data.down.push(Span {
                lane,
                start_us: start,
                end_us,
                label: "down (crashed)".to_string(),
            });
        }
        data.grants.sort_by_key(|g| (g.start_us, g.lane));
        data.down.sort_by_key(|d| (d.start_us, d.lane));
        data.violation = violation(run, &lane_of, end_us, &data.grants);
        data
    }
}

/// The first violation: mutual exclusion first (the overlap of the two holds), else the first
/// invalid checker (the span of its witness).
fn violation(
    run: &ScenarioRun,
    lane_of: &dyn Fn(&str) -> Option<usize>,
    end_us: u64,
    bars: &[GrantBar],
) -> Option<Violation> {
    let result = run
        .results
        .iter()
        .find(|r| r.checker == crate::checker::mutual_exclusion::NAME && r.verdict == Verdict::Invalid)
        .or_else(|| run.results.iter().find(|r| r.verdict == Verdict::Invalid))?;
    let witness = &result.witness;
    let first = witness.first()?.at_us;
    let last = witness.last()?.at_us;
    let (start_us, end_us) = if result.checker == crate::checker::mutual_exclusion::NAME {
        // The overlap of the two holds whose grants the witness names.
        let held: Vec<&GrantBar> = witness
            .iter()
            .filter(|e| OpView::of(e).is_some_and(|o| o.op == names::ACQUIRE && o.phase == Phase::Ok))
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
    } else {
        (first, last)
    };
    let marks = witness
        .iter()
        .filter_map(|e| {
            let node = match &e.kind {
                EventKind::ResourceWrite { client, .. } => client.as_str(),
                _ => e.node.as_str(),
            };
            Some(Mark {
                lane: lane_of(node)?,
                at_us: e.at_us,
                label: crate::timeline::describe(e).unwrap_or_default(),
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
