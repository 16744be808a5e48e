//! The standard exploration template: what `lockstep explore` (and the harness, the sweep and
//! the TTL chart) explores when no scenario file is given — a built-in lock in 10 simulated
//! seconds with 3 clients looping on one lock, 5 masters for Redlock and 1 otherwise.
//!
//! Left out: a script lock (it has no standard form: `--lock FILE` puts its scenario file's lock
//! into this template, `crate::app::exploration`).

use crate::scenario::Scenario;

/// What every standard template shares — the run, the clients, the TTL and the workload — as a
/// scenario file would write it: the lock, its fencing, the resource, the tick and the name are
/// set as values by [`standard_template`].
const STANDARD_BASE: &str = r#"
name = "explore-standard"
description = "The standard exploration profile."
seed = 0
duration_ms = 10000

[topology]
masters = 1
clients = 3

[lock]
algorithm = "naive"
ttl_ms = 2000

[workload]
until_ms = 9000
work_ms = [50, 500]
acquire_retry_ms = 50
"#;

/// The standard exploration template for `algorithm`: 10 simulated seconds, 3 clients, 5 masters
/// for Redlock (1 otherwise), a 2 s TTL, clients looping until 9 s — the built-in algorithm with
/// its defaults ([`crate::model::AlgorithmSpec::preset`]), `fencing` tokens, a `resource` of that mode and a
/// scheduler step of `tick_ms` (1 to 10,000). A script lock has no standard form (it needs its
/// scenario file: `--lock FILE`).
pub fn standard_template(
    algorithm: crate::model::Algorithm,
    fencing: crate::model::Fencing,
    resource: lockstep_sim::FencingMode,
    tick_ms: u64,
) -> Result<Scenario, crate::scenario::ScenarioError> {
    const ORIGIN: &str = "<standard template>";
    let refuse = |message: String| crate::scenario::ScenarioError::file(ORIGIN, message);
    let masters = algorithm.standard_masters();
    let base = match masters {
        1 => Scenario::from_str(STANDARD_BASE, ORIGIN)?,
        _ => Scenario::from_str(
            &STANDARD_BASE.replacen("masters = 1", &format!("masters = {masters}"), 1),
            ORIGIN,
        )?,
    };
    if tick_ms == 0 || tick_ms > base.duration_ms {
        return Err(refuse(format!(
            "tick_ms {tick_ms}: must be between 1 and the run's {} ms",
            base.duration_ms
        )));
    }
    let spec = crate::model::AlgorithmSpec::preset(algorithm, base.lock.ttl_ms).ok_or_else(|| {
        refuse(format!(
            "`{algorithm}` has no standard form: a script lock is explored from its scenario file (--lock FILE)"
        ))
    })?;
    let mut template = base;
    template.name = format!("explore-{algorithm}");
    template.description =
        format!("The standard exploration profile: {algorithm}, {masters} master(s), 3 clients, 10 s.");
    template.tick_ms = tick_ms;
    template.resource = resource;
    template.lock.fencing = fencing;
    template.lock.algorithm = spec;
    Ok(template)
}

/// The standard template of the unfenced token-release lock, 1 ms ticks: what unit tests of the
/// explorer's front ends start from.
#[cfg(test)]
pub(crate) fn token_release_unfenced() -> Scenario {
    standard_template(
        crate::model::Algorithm::TokenRelease,
        crate::model::Fencing::None,
        lockstep_sim::FencingMode::Unfenced,
        1,
    )
    .expect("the standard template of a built-in lock builds")
}

#[cfg(test)]
mod tests {
    use super::standard_template;
    use crate::model::{Algorithm, Fencing};
    use crate::scenario::Scenario;
    use lockstep_sim::FencingMode;

    /// The standard template as it was written before it became a value: the choices formatted
    /// into a scenario file and parsed back. The value must be exactly what that gave.
    fn by_text(algorithm: &str, fencing: &str, resource: &str, tick_ms: u64) -> Scenario {
        let masters = if algorithm == "redlock" { 5 } else { 1 };
        let source = format!(
            "name = \"explore-{algorithm}\"\ndescription = \"The standard exploration profile: {algorithm}, \
             {masters} master(s), 3 clients, 10 s.\"\nseed = 0\nduration_ms = 10000\ntick_ms = {tick_ms}\n\
             [topology]\nmasters = {masters}\nclients = 3\nresource = \"{resource}\"\n\
             [lock]\nalgorithm = \"{algorithm}\"\nttl_ms = 2000\nfencing = \"{fencing}\"\n\
             [workload]\nuntil_ms = 9000\nwork_ms = [50, 500]\nacquire_retry_ms = 50\n"
        );
        Scenario::from_str(&source, "<standard template>").expect("the written template parses")
    }

    #[test]
    fn the_standard_template_as_a_value_is_the_one_its_file_form_gave() {
        for algorithm in [
            Algorithm::Naive,
            Algorithm::TokenRelease,
            Algorithm::Watchdog,
            Algorithm::Redlock,
        ] {
            for fencing in Fencing::ALL {
                for resource in FencingMode::ALL {
                    for tick_ms in [1, 7] {
                        let value = standard_template(algorithm, fencing, resource, tick_ms).unwrap();
                        let text = by_text(algorithm.name(), fencing.name(), resource.name(), tick_ms);
                        assert_eq!(value, text, "{algorithm} {fencing:?} {resource:?} tick {tick_ms}");
                        assert_eq!(value.to_toml(), text.to_toml());
                    }
                }
            }
        }
        assert!(standard_template(Algorithm::Script, Fencing::None, FencingMode::Unfenced, 1).is_err());
        assert!(standard_template(Algorithm::Naive, Fencing::None, FencingMode::Unfenced, 0).is_err());
        assert!(standard_template(Algorithm::Naive, Fencing::None, FencingMode::Unfenced, 10_001).is_err());
    }

    /// What the registry of built-in locks promises every entry, a new one included: a scenario
    /// file naming it gets its preset, its settings survive the writer at several TTLs, the
    /// standard template runs it and its clients take the lock, and the explorer's claims and
    /// the sweep's TTL rule stay inside the lock's own bounds.
    #[test]
    fn every_built_in_lock_is_whole() {
        use crate::model::{AlgorithmSpec, LockKeys};
        assert!(!Algorithm::BUILT_IN.is_empty());
        assert_eq!(
            Algorithm::ALL.len(),
            Algorithm::BUILT_IN.len() + 1,
            "the script lock comes last"
        );
        for &algorithm in Algorithm::BUILT_IN {
            for ttl_ms in [30, 2_000, 30_000] {
                let preset = AlgorithmSpec::preset(algorithm, ttl_ms).expect("a built-in has a preset");
                let resolved = algorithm
                    .resolve(&LockKeys::default(), ttl_ms)
                    .expect("a built-in resolves");
                assert_eq!(
                    resolved,
                    Ok(preset.clone()),
                    "{algorithm} at {ttl_ms} ms: unwritten keys give the preset"
                );
                let mut template = standard_template(algorithm, Fencing::Incr, FencingMode::Fenced, 1).unwrap();
                template.lock.ttl_ms = ttl_ms;
                template.lock.algorithm = preset.clone();
                let back = Scenario::from_str(&template.to_toml(), "<round trip>").unwrap();
                assert_eq!(
                    back.lock, template.lock,
                    "{algorithm} at {ttl_ms} ms survives the writer"
                );
                let claims = preset.claims(ttl_ms, 5);
                assert!((1..=5).contains(&claims.masters_used), "{algorithm}: {claims:?}");
                assert!((0.0..1.0).contains(&claims.drift_factor), "{algorithm}: {claims:?}");
                assert_eq!(preset.renews(), claims.renewal_ms.is_some(), "{algorithm}");
                let mut swept = preset.clone();
                swept.at_ttl(ttl_ms * 2);
                assert_eq!(swept.kind(), algorithm);
            }
            let template = standard_template(algorithm, Fencing::Incr, FencingMode::Fenced, 1).unwrap();
            assert_eq!(template.masters.len(), algorithm.standard_masters());
            let run = crate::run::run_scenario(&template, Some(1)).expect("the standard template runs");
            let ops = crate::history::OpHistory::new(&run.history);
            assert!(!ops.holds().is_empty(), "{algorithm}: no client ever took the lock");
        }
    }
}
