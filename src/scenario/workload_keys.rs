//! The `[workload]` keys as one table, for `lockstep list` and the docs: what each client does,
//! and the settings that make it use its grant.

/// `(key, default, meaning)` of every `[workload]` key.
pub const WORKLOAD_KEYS: &[(&str, &str, &str)] = &[
    ("key", "counter", "the resource key holding the counter"),
    (
        "iterations",
        "1",
        "iterations per client (unlimited when until_ms is set)",
    ),
    ("until_ms", "none", "start no iteration after this true time"),
    (
        "work_ms",
        "100",
        "work inside the critical section: fixed, or [min, max]",
    ),
    ("acquire_retry_ms", "100", "delay between failed acquire attempts; ≥ 1"),
    ("think_ms", "0", "pause between iterations"),
    (
        "resource_timeout_ms",
        "request_timeout",
        "per-request timeout of the resource connection",
    ),
    (
        "work",
        "fixed",
        "fixed (work_ms) | until-validity (until the grant's validity runs out, less the margin)",
    ),
    (
        "validity_margin_ms",
        "0",
        "with work = until-validity: stop this long before; < ttl_ms",
    ),
    (
        "refuse_write_after_validity",
        "false",
        "the holder refuses its own write once its validity ran out (a failed write)",
    ),
    ("reads_per_turn", "1", "reads at the start of a turn; 1..=100"),
    (
        "writes_per_turn",
        "1",
        "writes at the end of a turn (value + 1, + 2, ...); 0..=100",
    ),
    (
        "tasks",
        "1",
        "concurrent tasks per client, any algorithm; 1..=16 (also per [[client]])",
    ),
    (
        "share_lock_object",
        "true",
        "with tasks > 1: one lock object for all tasks (else one each)",
    ),
];

/// The `[workload]` reference as plain text (for `lockstep list`).
pub fn workload_help() -> String {
    let mut out = String::from("workload ([workload]; [[client]] may override iterations, work_ms, tasks):\n");
    for (key, default, meaning) in WORKLOAD_KEYS {
        out.push_str(&format!("  {key:<28} {default:<16} {meaning}\n"));
    }
    out.push_str("  with several tasks, invokes name their task and the checkers judge holds per task\n");
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_names_every_key() {
        let help = super::workload_help();
        for (key, _, _) in super::WORKLOAD_KEYS {
            assert!(help.contains(key), "{key}");
        }
    }
}
