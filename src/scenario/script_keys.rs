//! The script lock's keys as one table, for `lockstep list` and the docs: what a user can write
//! under `[lock]` with `algorithm = "script"`, and in `[lock.acquire]`, `[lock.extend]`,
//! `[lock.release]`.

use crate::model::{Success, PLACEHOLDERS};

/// `(key, default, meaning)` of every script-lock key of `[lock]`.
pub const SCRIPT_LOCK_KEYS: &[(&str, &str, &str)] = &[
    ("masters", "1", "use the first N masters of the topology"),
    ("quorum", "masters/2+1", "successes needed; 1 <= quorum <= masters"),
    (
        "value",
        "random",
        "random (fresh per acquisition) | per-client (the client's name, every time)",
    ),
    (
        "value_storage",
        "grant",
        "grant | lock-object (extend/release use the object's latest value)",
    ),
    (
        "validity",
        "ttl-minus-drift",
        "none (the whole TTL) | ttl-minus-drift (ttl - elapsed - drift)",
    ),
    ("drift_factor", "0.01", "drift = ttl * factor + 2 ms; in [0, 1)"),
    (
        "clock",
        "monotonic",
        "the clock elapsed time is read from: monotonic | wall",
    ),
    (
        "validity_recheck",
        "true",
        "refuse a quorum whose validity is not positive (sets both re-checks below)",
    ),
    (
        "acquire_recheck",
        "validity_recheck",
        "the acquisition's re-check alone (must agree with validity_recheck when both are written)",
    ),
    (
        "extend_recheck",
        "validity_recheck",
        "the extension's re-check alone: refuse an extension whose validity is not positive",
    ),
    (
        "validity_from",
        "this-attempt",
        "where a retried acquisition counts elapsed time from: this-attempt | first-attempt (node-redlock #299)",
    ),
    (
        "validity_arithmetic",
        "signed",
        "signed | wrapping (unsigned: a negative validity wraps to a huge one)",
    ),
    (
        "retry_count",
        "0",
        "retries of a failed acquisition inside one acquire; -1 = forever",
    ),
    ("retry_delay_ms", "200", "delay between acquisition attempts"),
    ("retry_jitter_ms", "0", "random extra delay below this"),
    (
        "renew",
        "none",
        "none | every (extend_every_ms, default ttl/3) | before-expiry (extension_threshold_ms, default 500)",
    ),
    (
        "on_renew_failure",
        "abort",
        "abort (raise the abort signal: no write) | keep-working (renewal stops) | keep-schedule (renew on schedule, tell nobody)",
    ),
    (
        "renewal_after_release",
        "cancelled",
        "a renewal armed at the release: cancelled | runs-quietly | runs-and-reports (its failure reported as a lost lock; redis-semaphore #205)",
    ),
    (
        "renew_grants",
        "all",
        "which grants the renewal is armed for: all | first-attempt (a grant taken by a retry is never renewed); needs renew",
    ),
    (
        "unlock_on_failure",
        "true",
        "after a failed attempt, release where the acquire took or may have taken effect",
    ),
    (
        "tasks",
        "1",
        "concurrent tasks per client running the workload loop; 1..=16",
    ),
    (
        "share_lock_object",
        "true",
        "with tasks > 1: one lock object for all tasks (else one each)",
    ),
    (
        "wait",
        "sleep",
        "between attempts: sleep | blpop (BLPOP wait_key: a push wakes) | subscribe (a message on wait_key wakes); at most retry_delay_ms + jitter",
    ),
    (
        "wait_key",
        "{key}:signal",
        "the list (blpop) or channel (subscribe, default {key}:channel) waited on; a template",
    ),
];

/// `(key, meaning)` of an operation table (`[lock.acquire]`, `[lock.extend]`, `[lock.release]`).
pub const SCRIPT_OP_KEYS: &[(&str, &str)] = &[
    ("command", "a command template, e.g. [\"SET\", \"{key}\", \"{value}\", \"NX\", \"PX\", \"{ttl_ms}\"]"),
    ("lua", "an inline Lua script (sent with EVAL); syntax-checked at load time"),
    ("lua_file", "a Lua script file, relative to the scenario file (no `..`, not absolute)"),
    ("keys", "KEYS of the script, templates (default [\"{key}\"])"),
    ("args", "ARGV of the script, templates (default [\"{value}\", \"{ttl_ms}\"]; release [\"{value}\"])"),
    ("success", "the reply that counts as success (default: ok for an acquire command, positive for other commands, one for scripts)"),
    ("steps", "instead of one step: [{ command | lua | lua_file, keys, args, success }, ...], run in order, each must succeed"),
    ("retries", "retries of the whole operation after an unknown outcome (a timeout); default 0"),
    ("retry_delay_ms", "delay before such a retry; default 100"),
];

/// The script lock's reference as plain text (for `lockstep list`).
pub fn script_lock_help() -> String {
    let mut out = String::from("script lock ([lock] algorithm = \"script\"):\n");
    for (key, default, meaning) in SCRIPT_LOCK_KEYS {
        out.push_str(&format!("  {key:<20} {default:<16} {meaning}\n"));
    }
    out.push_str("  operations [lock.acquire] [lock.extend] [lock.release] (defaults: SET NX PX; compare-and-PEXPIRE; compare-and-delete):\n");
    for (key, meaning) in SCRIPT_OP_KEYS {
        out.push_str(&format!("    {key:<16} {meaning}\n"));
    }
    let names: Vec<&str> = Success::ALL.iter().map(|(_, n)| *n).collect();
    out.push_str(&format!("  success replies: {}\n", names.join(", ")));
    out.push_str(
        "    token: a positive integer that becomes the grant's fencing token (acquire only; the largest over the masters;\n      \
         not with fencing = \"incr\"), e.g. a script doing SET NX PX and INCR together issues it inside the lock\n",
    );
    out.push_str("  placeholders ({{ and }} are literal braces):\n");
    for (placeholder, meaning) in PLACEHOLDERS {
        out.push_str(&format!("    {placeholder:<10} {meaning}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_names_every_key() {
        let help = super::script_lock_help();
        for (key, _, _) in super::SCRIPT_LOCK_KEYS {
            assert!(help.contains(key), "{key}");
        }
        assert!(help.contains("{ttl_ms}") && help.contains("lua_file") && help.contains("positive"));
    }
}
