//! Liveness figures of a run, read from its history: how long clients wait for the lock, and
//! how long the lock sits free while someone waits for it.
//!
//! An *acquire episode* starts at a client's first `acquire` invoke after its previous release
//! (or its start) and ends at the `acquire` ok; its length is the acquire latency. The lock is
//! *unavailable* while no client holds it (holds as the mutual-exclusion checker defines them:
//! from acquire ok to the release invoke or abort) and at least one client is in an episode.
//! Safety violations make holds overlap; that never counts as unavailability.
//!
//! It reads the typed history ([`OpHistory`]): an operation's name and phase decide, whatever its
//! data (a malformed grant still ends a wait).

use crate::history::{OpHistory, OpName};
use lockstep_sim::Phase;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A run's liveness figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Liveness {
    /// Every completed acquire episode's latency, ms (true time).
    pub acquire_latencies_ms: Vec<u64>,
    /// Episodes that never got the lock.
    pub acquires_abandoned: u64,
    /// Time nobody held the lock while someone waited, ms.
    pub unavailable_ms: u64,
    /// Time at least one client held the lock, ms.
    pub held_ms: u64,
}

/// Computes the liveness figures of `history`.
pub fn of(history: &OpHistory<'_>) -> Liveness {
    // Keyed by (client, task): two tasks of one client wait and hold on their own. Only an
    // invoke names its task; a completion is the task of its invoke (same op id).
    type Actor<'h> = (&'h str, Option<u32>);
    let mut waiting_since: BTreeMap<Actor<'_>, u64> = BTreeMap::new();
    let mut holding: BTreeMap<Actor<'_>, u64> = BTreeMap::new();
    let mut invoked_by: BTreeMap<(&str, u64), Option<u32>> = BTreeMap::new();
    let mut out = Liveness::default();
    let mut last_us = 0u64;
    let mut account = |now_us: u64, holders: usize, waiters: usize, out: &mut Liveness| {
        let span_ms = now_us.saturating_sub(last_us) / 1_000;
        if holders > 0 {
            out.held_ms += span_ms;
        } else if waiters > 0 {
            out.unavailable_ms += span_ms;
        }
        // Keep the remainder below a millisecond from being lost between events.
        last_us = now_us - now_us.saturating_sub(last_us) % 1_000;
    };
    for step in history.steps() {
        let at_us = step.event.at_us;
        account(at_us, holding.len(), waiting_since.len(), &mut out);
        // A live run's crash (or restart) of a client kills its process: it holds nothing more.
        if let crate::history::StepKind::Fault(
            lockstep_sim::Fault::Crash { node } | lockstep_sim::Fault::Restart { node },
        ) = &step.kind
        {
            holding.retain(|(process, _), _| *process != node.as_str());
        }
        let Some(op) = step.op() else { continue };
        let process = step.node();
        let task = if op.phase == Phase::Invoke {
            invoked_by.insert((process, op.id), op.task);
            op.task
        } else {
            invoked_by.remove(&(process, op.id)).flatten()
        };
        let actor = (process, task);
        match (op.op, op.phase) {
            (OpName::Acquire, Phase::Invoke) => {
                waiting_since.entry(actor).or_insert(at_us);
            }
            (OpName::Acquire, Phase::Ok) => {
                if let Some(since) = waiting_since.remove(&actor) {
                    out.acquire_latencies_ms.push((at_us - since) / 1_000);
                }
                holding.insert(actor, at_us);
            }
            (OpName::Release, Phase::Invoke) | (OpName::Abort, _) => {
                holding.remove(&actor);
            }
            _ => {}
        }
    }
    out.acquires_abandoned = waiting_since.len() as u64;
    out
}

/// Percentile `p` (0–100) of `sorted` by nearest rank; `None` when empty.
pub(crate) fn percentile(sorted: &[u64], p: u64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p.min(100) as usize * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{names, to_data, AcquireInvoke, Grant};
    use lockstep_sim::{EventKind, History};

    fn op(h: &mut History, at_ms: u64, node: &str, id: u64, op: &str, phase: Phase, data: serde_json::Value) {
        h.push(
            at_ms * 1_000,
            node,
            0,
            0,
            EventKind::Op {
                id,
                phase,
                op: op.into(),
                data,
            },
        );
    }

    #[test]
    fn latency_and_unavailability_of_a_simple_handover() {
        let inv = to_data(&AcquireInvoke {
            key: "lock".into(),
            ttl_ms: 100,
        });
        let grant = |v: &str| {
            to_data(&Grant {
                key: "lock".into(),
                value: v.into(),
                fencing_token: None,
                validity_ms: 100,
                validity_from_ms: None,
            })
        };
        let mut h = History::new();
        op(&mut h, 0, "a", 1, names::ACQUIRE, Phase::Invoke, inv.clone());
        op(&mut h, 10, "a", 1, names::ACQUIRE, Phase::Ok, grant("x"));
        op(&mut h, 20, "b", 2, names::ACQUIRE, Phase::Invoke, inv.clone());
        op(&mut h, 50, "a", 3, names::RELEASE, Phase::Invoke, serde_json::json!({}));
        op(&mut h, 80, "b", 2, names::ACQUIRE, Phase::Ok, grant("y"));
        op(&mut h, 90, "b", 4, names::RELEASE, Phase::Invoke, serde_json::json!({}));
        let l = of(&OpHistory::new(&h));
        assert_eq!(l.acquire_latencies_ms, vec![10, 60]);
        // Free from 0 to 10 with a waits, and from 50 to 80 with b waiting.
        assert_eq!(l.unavailable_ms, 40);
        assert_eq!(l.held_ms, 50);
        assert_eq!(l.acquires_abandoned, 0);
        assert_eq!(percentile(&[10, 60], 50), Some(10));
        assert_eq!(percentile(&[10, 60], 99), Some(60));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn two_tasks_of_one_client_wait_and_hold_on_their_own() {
        let inv = |task: u32| serde_json::json!({"key": "lock", "ttl_ms": 100, "task": task});
        let grant = |v: &str| {
            to_data(&Grant {
                key: "lock".into(),
                value: v.into(),
                fencing_token: None,
                validity_ms: 100,
                validity_from_ms: None,
            })
        };
        let mut h = History::new();
        // Task 1 holds from 10 to 90; task 2 waits from 20, gets it at 40 (a lock object shared
        // by both), releases at 60.
        op(&mut h, 0, "a", 1, names::ACQUIRE, Phase::Invoke, inv(1));
        op(&mut h, 10, "a", 1, names::ACQUIRE, Phase::Ok, grant("x"));
        op(&mut h, 20, "a", 2, names::ACQUIRE, Phase::Invoke, inv(2));
        op(&mut h, 40, "a", 2, names::ACQUIRE, Phase::Ok, grant("x"));
        op(
            &mut h,
            60,
            "a",
            3,
            names::RELEASE,
            Phase::Invoke,
            serde_json::json!({"task": 2}),
        );
        op(
            &mut h,
            90,
            "a",
            4,
            names::RELEASE,
            Phase::Invoke,
            serde_json::json!({"task": 1}),
        );
        let l = of(&OpHistory::new(&h));
        // Task 2's wait is its own (20 ms), not merged into task 1's episode.
        assert_eq!(l.acquire_latencies_ms, vec![10, 20]);
        // Task 2's release does not end task 1's hold: held from 10 to 90.
        assert_eq!(l.held_ms, 80);
        assert_eq!(l.unavailable_ms, 10);
    }
}
