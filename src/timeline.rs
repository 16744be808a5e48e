//! A readable timeline of a run's key events: grants with their tokens, releases, lost locks,
//! pauses and resumptions, key expiries, clock jumps, crashes, and resource writes accepted or
//! rejected, and every fault in the sim's own words (`Fault::describe`). Connection set-up, retries of a busy lock and reads are left out. It reads the
//! typed history ([`OpHistory`]).

use crate::history::{LockOp, OpData, OpHistory, OpName, Step, StepKind};
use lockstep_sim::Phase;

fn seconds(at_us: u64) -> String {
    format!("{:>8.3}", at_us as f64 / 1e6)
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
                g.value.get(..8).unwrap_or(&g.value)
            ),
            (OpName::Acquire, Phase::Info, Some(OpData::Error(e))) => format!("acquire outcome unknown: {}", e.error),
            (OpName::Release, Phase::Invoke, _) => "releasing".to_string(),
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
    let mut out = String::from("    time(s)  node         event\n");
    for step in history.steps() {
        if let Some(text) = abort_line(history, step).or_else(|| line(step)) {
            out.push_str(&format!(
                "  {}  {:<11}  {}\n",
                seconds(step.event.at_us),
                step.event.node,
                text
            ));
        }
    }
    out
}
