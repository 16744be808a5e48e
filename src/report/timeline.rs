//! The data a timeline chart draws, read from a run's history: one lane per client and per
//! master, lock grants as bars with their tokens, pauses, key expiries, resource writes accepted
//! or rejected, clock jumps and other faults, and the first violation.
//!
//! It is stored in `report.json`, so charts can be drawn again from a report alone (after a
//! merge of shards, say) without the history. It reads the typed history ([`OpHistory`]): the
//! grant bars are its holds.

use crate::checker::{CheckerName, Verdict};
use crate::history::{OpHistory, OpName, StepKind};
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

impl TimelineData {
    /// The timeline of `run` of `scenario`, whose history is `history`.
    pub fn from_history(scenario: &Scenario, run: &ScenarioRun, history: &OpHistory<'_>) -> TimelineData {
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
        let end_us = history.end_us().max(1_000);
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
        // Grants of clients with a lane, labelled by token or by their number among them.
        let mut grant_count = 0u64;
        for hold in history.holds() {
            let Some(lane) = lane_of(hold.process) else { continue };
            grant_count += 1;
            let start_us = hold.start_us();
            data.grants.push(GrantBar {
                lane,
                start_us,
                end_us: hold.end_us_or(end_us).max(start_us),
                token: hold.grant.fencing_token,
                label: match hold.grant.fencing_token {
                    Some(t) => format!("token {t}"),
                    None => format!("grant {grant_count}"),
                },
                open: !hold.given_up(),
            });
        }
        let mut crashed: BTreeMap<usize, u64> = BTreeMap::new();
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
                StepKind::Fault(fault) => {
                    let first = fault.nodes().into_iter().find_map(lane_of);
                    let Some(lane) = first else { continue };
                    match fault {
                        Fault::Pause { duration_ms, .. } => data.pauses.push(Span {
                            lane,
                            start_us: at_us,
                            end_us: at_us + duration_ms * 1_000,
                            label: fault.short_label(),
                        }),
                        Fault::ClockJump { .. } => data.clock_jumps.push(Mark {
                            lane,
                            at_us,
                            label: fault.short_label(),
                        }),
                        Fault::Crash { .. } => {
                            crashed.insert(lane, at_us);
                        }
                        Fault::Restart { .. } => {
                            let start = crashed.remove(&lane).unwrap_or(at_us);
                            data.down.push(Span {
                                lane,
                                start_us: start,
                                end_us: at_us,
                                label: "down (crashed)".to_string(),
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
        data.violation = violation(run, history, &lane_of, end_us, &data.grants);
        data
    }
}

/// The first violation: mutual exclusion first (the overlap of the two holds), else the first
/// invalid checker (the span of its witness).
fn violation(
    run: &ScenarioRun,
    history: &OpHistory<'_>,
    lane_of: &dyn Fn(&str) -> Option<usize>,
    end_us: u64,
    bars: &[GrantBar],
) -> Option<Violation> {
    let mutual_exclusion = CheckerName::MutualExclusion.as_str();
    let result = run
        .results
        .iter()
        .find(|r| r.checker == mutual_exclusion && r.verdict == Verdict::Invalid)
        .or_else(|| run.results.iter().find(|r| r.verdict == Verdict::Invalid))?;
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
                label: crate::timeline::line(step).unwrap_or_default(),
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
