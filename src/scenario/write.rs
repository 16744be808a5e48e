//! A scenario written back as an explicit TOML file.

use crate::model::{
    AlgorithmSpec, RenewGrants, Renewal, RenewalAfterRelease, Scenario, ScriptAction, ScriptSpec, ScriptStep,
    ValidityFrom, Wait, WorkMode, WorkMs,
};
use std::fmt::Write;

/// A TOML string literal.
fn quote(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// A TOML key: bare when it can be.
fn key(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        text.to_string()
    } else {
        quote(text)
    }
}

fn work(work: WorkMs) -> String {
    match work {
        WorkMs::Fixed(ms) => ms.to_string(),
        WorkMs::Range(min, max) => format!("[{min}, {max}]"),
    }
}

/// The scenario as TOML. Infallible: a value TOML cannot hold (an integer above `i64::MAX`) is
/// written as is and rejected when read back; seeds above `i64::MAX` are written as strings.
pub(super) fn to_toml(s: &Scenario) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(out, "name = {}", quote(&s.name));
    let _ = writeln!(out, "description = {}", quote(&s.description));
    if i64::try_from(s.seed).is_ok() {
        let _ = writeln!(out, "seed = {}", s.seed);
    } else {
        let _ = writeln!(out, "seed = \"{}\"", s.seed);
    }
    let _ = writeln!(out, "duration_ms = {}", s.duration_ms);
    let _ = writeln!(out, "tick_ms = {}", s.tick_ms);
    // Written only when set, so that the TOML (and the run identities hashed over it) of a file
    // without it stays as it was.
    if s.history_events_max != lockstep_sim::DEFAULT_HISTORY_EVENTS_MAX {
        let _ = writeln!(out, "history_events_max = {}", s.history_events_max);
    }
    if s.history_bytes_max != lockstep_sim::world::DEFAULT_HISTORY_BYTES_MAX {
        let _ = writeln!(out, "history_bytes_max = {}", s.history_bytes_max);
    }
    if let Some(other) = &s.compare_with {
        let _ = writeln!(out, "compare_with = {}", quote(other));
    }

    let _ = writeln!(out, "\n[network]");
    let _ = writeln!(out, "min_latency_ms = {}", s.network.min_latency_ms);
    let _ = writeln!(out, "max_latency_ms = {}", s.network.max_latency_ms);

    let _ = writeln!(out, "\n[topology]");
    let _ = writeln!(out, "resource = {}", quote(s.resource.name()));
    for master in &s.masters {
        let _ = writeln!(out, "\n[[topology.master]]");
        let _ = writeln!(out, "name = {}", quote(&master.name));
        let _ = writeln!(out, "offset_ms = {}", master.offset_ms);
        let _ = writeln!(out, "drift_ppm = {}", master.drift_ppm);
        // Deployment keys only when they differ from the defaults, so plain files stay plain.
        let d = s.master_setup(&master.name);
        if d.persistence != lockstep_sim::Persistence::None {
            let _ = writeln!(out, "persistence = {}", quote(d.persistence.name()));
        }
        if d.restart_delay_ms != 0 {
            let _ = writeln!(out, "restart_delay_ms = {}", d.restart_delay_ms);
        }
        if d.restart_delay_clock != lockstep_sim::DelayClock::Monotonic {
            let _ = writeln!(out, "restart_delay_clock = {}", quote(d.restart_delay_clock.name()));
        }
        if d.replicas != 0 {
            let _ = writeln!(out, "replicas = {}", d.replicas);
            let _ = writeln!(out, "replica_offset_ms = {}", d.replica_offset_ms);
            let _ = writeln!(out, "replication_lag_ms = {}", d.replication_lag_ms);
            if let Some(after) = d.failover_after_ms {
                let _ = writeln!(out, "failover_after_ms = {after}");
            }
        }
    }

    let l = &s.lock;
    let _ = writeln!(out, "\n[lock]");
    let _ = writeln!(out, "algorithm = {}", quote(l.algorithm.name()));
    if let Some(rust_lock) = &l.rust_lock {
        let _ = writeln!(out, "rust_lock = {}", quote(rust_lock));
        // What the Rust lock declared: only with it (a file without it would not load).
        if let Some(tokens) = l.rust_tokens {
            let _ = writeln!(out, "rust_tokens = {}", quote(tokens.name()));
        }
        if let Some(factor) = l.rust_drift_factor {
            let _ = writeln!(out, "rust_drift_factor = {}", toml::Value::Float(factor));
        }
    }
    let _ = writeln!(out, "key = {}", quote(&l.key));
    let _ = writeln!(out, "ttl_ms = {}", l.ttl_ms);
    let _ = writeln!(out, "fencing = {}", quote(l.fencing.name()));
    let _ = writeln!(out, "fencing_master = {}", quote(&l.fencing_master));
    let _ = writeln!(out, "request_timeout_ms = {}", l.request_timeout_ms);
    let _ = writeln!(out, "connect_timeout_ms = {}", l.connect_timeout_ms);
    let Some(keys) = l.algorithm.written_keys(l.ttl_ms) else {
        if let AlgorithmSpec::Script(script) = &l.algorithm {
            write_script(&mut out, script);
        }
        return finish(out, s);
    };
    write_lock_keys(&mut out, &keys);
    finish(out, s)
}

/// A built-in algorithm's keys of `[lock]` ([`crate::model::LockKeys`]), in their order; the
/// ones left unwritten take their defaults when read back.
fn write_lock_keys(out: &mut String, keys: &crate::model::LockKeys) {
    if let Some(v) = keys.retry_count {
        let _ = writeln!(out, "retry_count = {v}");
    }
    if let Some(v) = keys.retry_delay_ms {
        let _ = writeln!(out, "retry_delay_ms = {v}");
    }
    if let Some(v) = keys.retry_jitter_ms {
        let _ = writeln!(out, "retry_jitter_ms = {v}");
    }
    if let Some(v) = keys.drift_factor {
        let _ = writeln!(out, "drift_factor = {}", toml::Value::Float(v));
    }
    if let Some(v) = keys.clock {
        let _ = writeln!(out, "clock = {}", quote(v.name()));
    }
    if let Some(v) = keys.extend_every_ms {
        let _ = writeln!(out, "extend_every_ms = {v}");
    }
    if let Some(v) = keys.auto_extend {
        let _ = writeln!(out, "auto_extend = {v}");
    }
    if let Some(v) = keys.extension_threshold_ms {
        let _ = writeln!(out, "extension_threshold_ms = {v}");
    }
}

/// The script lock's keys of `[lock]` and its operation tables. Scripts read from files are
/// written inline, so the file stands alone.
fn write_script(out: &mut String, sc: &ScriptSpec) {
    let _ = writeln!(out, "masters = {}", sc.masters);
    let _ = writeln!(out, "quorum = {}", sc.quorum);
    let _ = writeln!(out, "value = {}", quote(sc.value.name()));
    let _ = writeln!(out, "value_storage = {}", quote(sc.value_storage.name()));
    let _ = writeln!(out, "validity = {}", quote(sc.validity.name()));
    let _ = writeln!(out, "drift_factor = {}", toml::Value::Float(sc.drift_factor));
    let _ = writeln!(out, "clock = {}", quote(sc.clock.name()));
    let _ = writeln!(out, "validity_recheck = {}", sc.validity_recheck);
    // The newer keys only when they are not the defaults, so files written before stay as they were.
    if let Some(extend) = sc.extend_recheck {
        let _ = writeln!(out, "extend_recheck = {extend}");
    }
    if sc.validity_from != ValidityFrom::ThisAttempt {
        let _ = writeln!(out, "validity_from = {}", quote(sc.validity_from.name()));
    }
    if sc.renewal_after_release != RenewalAfterRelease::Cancelled {
        let _ = writeln!(
            out,
            "renewal_after_release = {}",
            quote(sc.renewal_after_release.name())
        );
    }
    if sc.renew_grants != RenewGrants::All {
        let _ = writeln!(out, "renew_grants = {}", quote(sc.renew_grants.name()));
    }
    let _ = writeln!(out, "validity_arithmetic = {}", quote(sc.validity_arithmetic.name()));
    let _ = writeln!(out, "retry_count = {}", sc.retry_count);
    let _ = writeln!(out, "retry_delay_ms = {}", sc.retry_delay_ms);
    let _ = writeln!(out, "retry_jitter_ms = {}", sc.retry_jitter_ms);
    let _ = writeln!(out, "renew = {}", quote(sc.renewal.name()));
    match sc.renewal {
        Renewal::None => {}
        Renewal::Every { interval_ms } => {
            let _ = writeln!(out, "extend_every_ms = {interval_ms}");
        }
        Renewal::BeforeExpiry { threshold_ms } => {
            let _ = writeln!(out, "extension_threshold_ms = {threshold_ms}");
        }
    }
    let _ = writeln!(out, "on_renew_failure = {}", quote(sc.on_renew_failure.name()));
    // Stated where a counterexample shows it (issue 50): the clean-up is the script lock's
    // default, and its `DEL` after a failed acquisition is a path a library may never take.
    let _ = writeln!(
        out,
        "unlock_on_failure = {}{}",
        sc.unlock_on_failure,
        if sc.unlock_on_failure {
            "   # the default: a failed acquisition releases where it may have taken effect (Redlock's \
             clean-up); false for a library that never cleans up"
        } else {
            ""
        }
    );
    // Left implicit at their defaults, so that `[workload] tasks` (which may not be written with
    // them) round-trips.
    if sc.tasks != 1 || !sc.share_lock_object {
        let _ = writeln!(out, "tasks = {}", sc.tasks);
        let _ = writeln!(out, "share_lock_object = {}", sc.share_lock_object);
    }
    match &sc.wait {
        Wait::Sleep => {}
        Wait::Blpop { list: key } | Wait::Subscribe { channel: key } => {
            let _ = writeln!(out, "wait = {}", quote(sc.wait.name()));
            let _ = writeln!(out, "wait_key = {}", quote(key));
        }
    }
    for (name, op) in [
        ("acquire", &sc.acquire),
        ("extend", &sc.extend),
        ("release", &sc.release),
    ] {
        let _ = writeln!(out, "\n[lock.{name}]");
        let _ = writeln!(out, "retries = {}", op.retries);
        let _ = writeln!(out, "retry_delay_ms = {}", op.retry_delay_ms);
        let steps: Vec<String> = op.steps.iter().map(step).collect();
        let _ = writeln!(out, "steps = [\n  {},\n]", steps.join(",\n  "));
    }
}

fn list(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| quote(w)).collect();
    format!("[{}]", quoted.join(", "))
}

/// One step as an inline table.
fn step(step: &ScriptStep) -> String {
    let action = match &step.action {
        ScriptAction::Command(words) => format!("command = {}", list(words)),
        ScriptAction::Lua { source, keys, args, .. } => {
            format!("lua = {}, keys = {}, args = {}", quote(source), list(keys), list(args))
        }
    };
    format!("{{ {action}, success = {} }}", quote(step.success.name()))
}

/// Everything after `[lock]`.
fn finish(mut out: String, s: &Scenario) -> String {
    let w = &s.workload;
    let _ = writeln!(out, "\n[workload]");
    let _ = writeln!(out, "key = {}", quote(&w.key));
    if let Some(iterations) = w.iterations {
        let _ = writeln!(out, "iterations = {iterations}");
    }
    if let Some(until) = w.until_ms {
        let _ = writeln!(out, "until_ms = {until}");
    }
    if w.work == WorkMode::Fixed {
        let _ = writeln!(out, "work_ms = {}", work(w.work_ms));
    }
    let _ = writeln!(out, "acquire_retry_ms = {}", w.acquire_retry_ms);
    let _ = writeln!(out, "think_ms = {}", w.think_ms);
    let _ = writeln!(out, "resource_timeout_ms = {}", w.resource_timeout_ms);
    // The settings that use the grant, only when they differ from the defaults (so files written
    // before them read the same).
    if let WorkMode::UntilValidity { margin_ms } = w.work {
        let _ = writeln!(out, "work = {}", quote(w.work.name()));
        let _ = writeln!(out, "validity_margin_ms = {margin_ms}");
    }
    if w.refuse_write_after_validity {
        let _ = writeln!(out, "refuse_write_after_validity = true");
    }
    if w.reads_per_turn != 1 {
        let _ = writeln!(out, "reads_per_turn = {}", w.reads_per_turn);
    }
    if w.writes_per_turn != 1 {
        let _ = writeln!(out, "writes_per_turn = {}", w.writes_per_turn);
    }
    if let Some(tasks) = w.tasks {
        let _ = writeln!(out, "tasks = {}", tasks.tasks);
        let _ = writeln!(out, "share_lock_object = {}", tasks.share_lock_object);
    }

    for c in &s.clients {
        let _ = writeln!(out, "\n[[client]]");
        let _ = writeln!(out, "name = {}", quote(&c.name));
        let _ = writeln!(out, "start_ms = {}", c.start_ms);
        let _ = writeln!(out, "offset_ms = {}", c.offset_ms);
        let _ = writeln!(out, "drift_ppm = {}", c.drift_ppm);
        if let Some(iterations) = c.iterations {
            let _ = writeln!(out, "iterations = {iterations}");
        }
        if let Some(w) = c.work_ms {
            let _ = writeln!(out, "work_ms = {}", work(w));
        }
        if let Some(tasks) = c.tasks {
            let _ = writeln!(out, "tasks = {tasks}");
        }
    }

    for f in &s.faults.faults {
        let _ = writeln!(out, "\n[[fault]]");
        let _ = writeln!(out, "at_ms = {}", f.at_ms);
        let _ = writeln!(out, "kind = {}", quote(f.fault.kind()));
        match toml::Value::try_from(&f.fault) {
            Ok(toml::Value::Table(table)) => {
                for (key, value) in table.iter().filter(|(k, _)| k.as_str() != "kind") {
                    let _ = writeln!(out, "{key} = {value}");
                }
            }
            // Only an integer above i64::MAX gets here; keep the file readable and say so.
            _ => {
                let _ = writeln!(out, "# not representable in TOML: {:?}", f.fault);
            }
        }
    }

    if let Some(e) = &s.explore {
        let _ = writeln!(out, "\n[explore]");
        let _ = writeln!(out, "seeds = {}", e.seeds);
        let kinds: Vec<String> = e.kinds.iter().map(|k| quote(k)).collect();
        let _ = writeln!(out, "kinds = [{}]", kinds.join(", "));
        let _ = writeln!(out, "faults_max = {}", e.faults_max);
        let _ = writeln!(out, "lock_aware = {}", e.lock_aware);
        if let Some(strategy) = e.strategy {
            let _ = writeln!(out, "strategy = {}", quote(strategy.name()));
        }
        if !e.expect.is_empty() {
            let _ = writeln!(out, "\n[explore.expect]");
            for (checker, expected) in &e.expect {
                let _ = writeln!(out, "{} = {}", key(checker), quote(expected.name()));
            }
        }
    }

    if !s.expect.is_empty() {
        let _ = writeln!(out, "\n[expect]");
        for (checker, verdict) in &s.expect {
            let _ = writeln!(out, "{} = {}", key(checker), quote(verdict.name()));
        }
    }
    out
}
