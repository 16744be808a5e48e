//! The run told as text — the console's timeline (the chart's data is [`super::timeline`]): one
//! readable line per key event: grants with their tokens, extensions, releases (with the value
//! sent when it is not the grant's), lost locks, pauses and resumptions, key expiries, clock
//! jumps, crashes, resource writes accepted or rejected, and every fault in the sim's own words
//! (`Fault::describe`). Connection set-up, retries of a busy lock and reads are left out. It reads
//! the typed history ([`OpHistory`]).

use crate::history::{LockOp, OpData, OpHistory, OpName, Step, StepKind};
use crate::model::units::short_value as short;
use lockstep_sim::Phase;

/// A time for the timeline's first column: seconds, right-aligned.
fn seconds(at_us: u64) -> String {
    format!("{:>8}", crate::model::units::seconds_number(at_us))
}

fn token(t: Option<u64>) -> String {
    t.map_or("-".to_string(), |t| t.to_string())
}

/// One line for `step`, or `None` when it is not a key event.
pub fn line(step: &Step<'_>) -> Option<String> {
    let text = match &step.kind {
        StepKind::Op(op) => match (op.op, op.phase, &op.data) {
            (OpName::Acquire, Phase::Ok, Some(OpData::Granted(g))) => format!(
                "acquired \"{}\" token={} validity={} ms (value {})",
                g.key,
                token(g.fencing_token),
                g.validity_ms,
                short(&g.value)
            ),
            (OpName::Acquire, Phase::Info, Some(OpData::Error(e))) => format!("acquire outcome unknown: {}", e.error),
            (OpName::Release, Phase::Invoke, Some(OpData::Invoke(LockOp::Release(g)))) => match &g.value_sent {
                Some(sent) => format!(
                    "releasing with value {} — not this grant's ({})",
                    short(sent),
                    short(&g.value)
                ),
                None => "releasing".to_string(),
            },
            (OpName::Release, Phase::Invoke, _) => "releasing".to_string(),
            (OpName::Extend, Phase::Invoke, Some(OpData::Invoke(LockOp::Extend(e)))) if e.value_sent.is_some() => {
                format!(
                    "extending with value {} — not this grant's ({})",
                    short(e.value_sent.as_deref().unwrap_or_default()),
                    short(&e.value)
                )
            }
            (OpName::Extend, Phase::Ok, Some(OpData::Granted(g))) => {
                format!("extended \"{}\" validity={} ms", g.key, g.validity_ms)
            }
            (OpName::Release, Phase::Ok, Some(OpData::Released(r))) => {
                if r.released {
                    "released (a key was deleted)".to_string()
                } else {
                    "released (nothing to delete: the lock was already gone)".to_string()
                }
            }
            (OpName::Extend, Phase::Fail | Phase::Info, Some(OpData::Error(e))) => {
                format!("extension failed: {}", e.error)
            }
            (OpName::Abort, Phase::Info, _) => "lock lost: abort signal raised".to_string(),
            (OpName::Write, Phase::Invoke, Some(OpData::Invoke(LockOp::Write(w)))) => {
                format!("sends write value={} token={}", w.value, token(w.fencing_token))
            }
            (OpName::Write, Phase::Info, _) => "write outcome unknown".to_string(),
            (OpName::Write, Phase::Fail, Some(OpData::Error(e))) if e.is_holder_refusal() => {
                format!("write {}", e.error)
            }
            _ => return None,
        },
        StepKind::Expired(expiry) if !expiry.fencing_counter => format!("key \"{}\" expired", expiry.key),
        StepKind::ResourceWrite(w) => {
            let verdict = if w.accepted { "ACCEPTED" } else { "REJECTED" };
            format!(
                "{verdict} write value={} token={} from {}",
                w.value,
                token(w.token),
                w.client
            )
        }
        StepKind::Fault(fault) => fault.describe(),
        StepKind::Resumed => "resumed".to_string(),
        // Deployment events (delayed restarts, promotions, resynchronisations) on servers.
        StepKind::Note(text) if step.node() != "world" => text.to_string(),
        _ => return None,
    };
    Some(text)
}

/// What an abort meant for the holder's write: `step` is the abort's `info`. A write already
/// sent under the lost grant is not recalled by the signal; only a write not yet sent is
/// skipped.
fn abort_line(history: &OpHistory<'_>, step: &Step<'_>) -> Option<String> {
    let op = step
        .op()
        .filter(|op| op.op == OpName::Abort && op.phase == Phase::Info)?;
    let hold = history.holds().iter().find(|h| {
        h.process == step.node()
            && h.end.is_some_and(|end| {
                end.event.seq <= step.event.seq
                    && history.step(end.event.seq).and_then(Step::op).map(|o| o.id) == Some(op.id)
            })
    })?;
    let sent = hold
        .requests
        .iter()
        .map(|&i| history.operations()[i])
        .rfind(|o| o.name == OpName::Write);
    Some(match sent {
        None => "lock lost: abort signal raised; the write will be skipped".to_string(),
        Some(write) => {
            let sent_at = history.steps()[write.invoke].event.at_us;
            let done = write.completion.map(|i| history.steps()[i].event.seq);
            if done.is_none_or(|done| done > step.event.seq) {
                format!(
                    "lock lost: abort signal raised, but the write sent at {} s is still in flight",
                    seconds(sent_at).trim()
                )
            } else {
                format!(
                    "lock lost: abort signal raised (the write sent at {} s had already completed)",
                    seconds(sent_at).trim()
                )
            }
        }
    })
}

/// Why the resource stayed safe in a run where mutual exclusion was violated but no stale
/// write or lost update was found: fencing rejected a write, or no write under a lost grant
/// reached the resource at all.
pub fn why_resource_safe(history: &OpHistory<'_>) -> &'static str {
    if history.writes().iter().any(|w| !w.attempt.accepted) {
        "fencing rejected the stale write"
    } else {
        "no stale write reached the resource"
    }
}

/// The timeline as text, one line per key event.
pub fn text(history: &OpHistory<'_>) -> String {
    // A client that runs several tasks: each operation's lines name the task that ran it.
    let mut task_of_step: Vec<Option<u32>> = vec![None; history.steps().len()];
    for op in history.operations().iter().filter(|op| op.task.is_some()) {
        for i in std::iter::once(op.invoke).chain(op.completion) {
            if let Some(slot) = task_of_step.get_mut(i) {
                *slot = op.task;
            }
        }
    }
    let lines: Vec<(u64, String, String)> = history
        .steps()
        .iter()
        .enumerate()
        .filter_map(|(i, step)| {
            let text = abort_line(history, step).or_else(|| line(step))?;
            let actor = crate::history::holder_name(step.event.node.as_str(), task_of_step[i]);
            Some((step.event.at_us, actor, text))
        })
        .collect();
    let width = lines.iter().map(|(_, actor, _)| actor.len()).max().unwrap_or(0).max(11);
    let mut out = format!("    time(s)  {:<width$}  event\n", "node");
    for (at_us, actor, text) in lines {
        out.push_str(&format!("  {}  {actor:<width$}  {text}\n", seconds(at_us)));
    }
    out
}
