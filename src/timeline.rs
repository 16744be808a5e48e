//! A readable timeline of a run's key events: grants with their tokens, releases, lost locks,
//! pauses and resumptions, key expiries, clock jumps, crashes, and resource writes accepted or
//! rejected. Connection set-up, retries of a busy lock and reads are left out.

use crate::ops::{names, Grant, OpError, OpView};
use lockstep_sim::{Event, EventKind, Fault, History, Phase};

fn seconds(at_us: u64) -> String {
    format!("{:>8.3}", at_us as f64 / 1e6)
}

fn describe_fault(fault: &Fault) -> String {
    match fault {
        Fault::Pause { duration_ms, .. } => format!("PAUSED for {duration_ms} ms (GC / VM stall)"),
        Fault::ClockJump { delta_ms, .. } => format!("wall clock jumps {delta_ms:+} ms"),
        Fault::Drift { drift_ppm, .. } => format!("clock drift set to {drift_ppm:+} ppm"),
        Fault::Partition { a, b, oneway } => {
            format!("network partition {a} {} {b}", if *oneway { "->" } else { "<->" })
        }
        Fault::Heal { a, b, .. } => format!("network healed {a} <-> {b}"),
        Fault::Hold { a, b } => format!("network holds messages {a} <-> {b}"),
        Fault::Release { a, b } => format!("network releases held messages {a} <-> {b}"),
        Fault::Latency {
            a,
            b,
            latency_ms,
            max_latency_ms,
        } => match max_latency_ms {
            Some(max) => format!("latency {a} <-> {b} set to {latency_ms}..{max} ms"),
            None => format!("latency {a} <-> {b} set to {latency_ms} ms"),
        },
        Fault::Loss { a, b, rate_ppm } => format!("loss {a} <-> {b} set to {rate_ppm} ppm"),
        Fault::Crash { .. } => "CRASHED (memory lost; what its persistence kept survives)".to_string(),
        Fault::PowerLoss { .. } => "POWER LOSS (memory and unsynced AOF writes lost)".to_string(),
        Fault::Shutdown { .. } => "shut down cleanly".to_string(),
        Fault::Restart { .. } => "restart requested".to_string(),
        Fault::Failover { .. } => "FAILOVER forced".to_string(),
        // Faults without a special phrasing are named by their kind.
        #[allow(unreachable_patterns)]
        other => other.kind().replace('-', " "),
    }
}

fn token(t: Option<u64>) -> String {
    t.map_or("-".to_string(), |t| t.to_string())
}

/// One line for `event`, or `None` when it is not a key event.
pub fn describe(event: &Event) -> Option<String> {
    let text = match &event.kind {
        EventKind::Op { .. } => {
            let op = OpView::of(event)?;
            match (op.op, op.phase) {
                (names::ACQUIRE, Phase::Ok) => {
                    let g: Grant = op.decode()?;
                    format!(
                        "acquired \"{}\" token={} validity={} ms (value {})",
                        g.key,
                        token(g.fencing_token),
                        g.validity_ms,
                        &g.value[..g.value.len().min(8)]
                    )
                }
                (names::ACQUIRE, Phase::Info) => {
                    let e: OpError = op.decode()?;
                    format!("acquire outcome unknown: {}", e.error)
                }
                (names::RELEASE, Phase::Invoke) => "releasing".to_string(),
                (names::RELEASE, Phase::Ok) => {
                    let released = op.data.get("released")?.as_bool()?;
                    if released {
                        "released (a key was deleted)".to_string()
                    } else {
                        "released (nothing to delete: the lock was already gone)".to_string()
                    }
                }
                (names::EXTEND, Phase::Fail | Phase::Info) => {
                    let e: OpError = op.decode()?;
                    format!("extension failed: {}", e.error)
                }
                (names::ABORT, Phase::Info) => "lock lost: abort signal raised, write skipped".to_string(),
                (names::WRITE, Phase::Invoke) => {
                    let value = op.data.get("value")?.as_i64()?;
                    let t = op.data.get("fencing_token").and_then(|t| t.as_u64());
                    format!("sends write value={value} token={}", token(t))
                }
                (names::WRITE, Phase::Info) => "write outcome unknown".to_string(),
                _ => return None,
            }
        }
        EventKind::Expired { key } if !key.starts_with("lockstep:fence:") => format!("key \"{key}\" expired"),
        EventKind::ResourceWrite {
            client,
            value,
            token: t,
            accepted,
            ..
        } => {
            if *accepted {
                format!("ACCEPTED write value={value} token={} from {client}", token(*t))
            } else {
                format!("REJECTED write value={value} token={} from {client}", token(*t))
            }
        }
        EventKind::Fault { fault } => describe_fault(fault),
        EventKind::Resumed => "resumed".to_string(),
        // Deployment events (delayed restarts, promotions, resynchronisations) on servers.
        EventKind::Note { text } if event.node != "world" => text.clone(),
        _ => return None,
    };
    Some(text)
}

/// The timeline as text, one line per key event.
pub fn render(history: &History) -> String {
    let mut out = String::from("    time(s)  node         event\n");
    for event in history.events() {
        if let Some(text) = describe(event) {
            out.push_str(&format!("  {}  {:<11}  {}\n", seconds(event.at_us), event.node, text));
        }
    }
    out
}
