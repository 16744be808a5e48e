//! Running one scenario: scenario → seeded world (masters deployed with their persistence,
//! restart delay, replicas and failover) → history → checkers → verdicts compared with the
//! scenario's expectations ([`expect`]), and the plain results of the gate ([`gate`](crate::gate)).
//!
//! This module sits beside the application layer (`crate::app`) on the same floor: the app
//! orchestrates many runs; `report/` may read the results defined here (never run them).

pub mod expect;
pub mod guard;

use crate::checker::{self, CheckResult, CheckerName};
use crate::history::OpHistory;
use crate::lock::{self, LockClient, LockEnv};
use crate::model::Verdict;
use crate::scenario::Scenario;
use crate::workload::{self, ClientPlan};
use lockstep_sim::{
    ClockSpec, History, LinkTimeouts, RedisLink, ResourceClient, RunEnd, World, WorldError, REDIS_PORT,
};
use std::rc::Rc;

/// The name of the resource node in every scenario.
pub const RESOURCE_NODE: &str = "resource";

/// Builds the lock client of one client node. The built-in algorithms come from
/// [`lock::build`]; a user passes their own to [`run_with_lock`].
pub type LockFactory = Rc<dyn Fn(LockEnv) -> Rc<dyn LockClient>>;

/// The [`LockFactory`] of a user's lock: `make` builds one lock object per client node from the
/// node's [`LockEnv`]. For [`run_with_lock`] and
/// [`Harness::with_factory`](crate::harness::Harness::with_factory).
pub fn lock_factory<L, F>(make: F) -> LockFactory
where
    L: LockClient + 'static,
    F: Fn(LockEnv) -> L + 'static,
{
    Rc::new(move |env| Rc::new(make(env)) as Rc<dyn LockClient>)
}

pub use expect::Mismatch;
use expect::Status;

/// What a run says about safety, in one word: the lock held, or it failed and the resource
/// was (or was not) damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Safety {
    /// Mutual exclusion was not found violated.
    Held,
    /// Mutual exclusion was violated, yet no stale write or lost update reached the resource
    /// (fencing rejected the stale write).
    ViolatedResourceSafe,
    /// Mutual exclusion was violated and the resource was damaged.
    ViolatedResourceDamaged,
}

/// Everything one run produced.
#[derive(Debug, Clone)]
pub struct ScenarioRun {
    /// The scenario's name.
    pub name: String,
    /// The seed actually used.
    pub seed: u64,
    /// How the run ended.
    pub end: RunEnd,
    /// The history.
    pub history: History,
    /// The history's digest.
    pub digest: String,
    /// One result per checker, in [`checker::NAMES`] order.
    pub results: Vec<CheckResult>,
    /// Expectations that did not hold.
    pub mismatches: Vec<Mismatch>,
    /// The liveness verdict (`expect::liveness_check`): present when the run is vacuous
    /// (clients wanted the lock, nobody got it) or the scenario expects one.
    pub liveness: Option<CheckResult>,
}

impl ScenarioRun {
    /// The verdict of `checker` (`None` if it did not run).
    pub fn verdict(&self, checker: &str) -> Option<Verdict> {
        self.results.iter().find(|r| r.checker == checker).map(|r| r.verdict)
    }

    /// The result of `checker`.
    pub fn result(&self, checker: &str) -> Option<&CheckResult> {
        self.results.iter().find(|r| r.checker == checker)
    }

    /// Every check of the run: the checkers' results, then the liveness verdict when present.
    pub fn checks(&self) -> impl Iterator<Item = &CheckResult> {
        self.results.iter().chain(self.liveness.as_ref())
    }

    /// Whether no client ever got the lock it wanted (every safety verdict is vacuous).
    pub fn is_vacuous(&self) -> bool {
        self.liveness.as_ref().is_some_and(|l| l.verdict == Verdict::Invalid)
    }

    /// Whether every expectation held.
    pub fn as_expected(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// How `checker`'s verdict compares with what `scenario` expects of it.
    pub fn status(&self, scenario: &Scenario, checker: &str) -> Status {
        match self.checks().find(|r| r.checker == checker).map(|r| r.verdict) {
            Some(actual) => expect::verdict(expect::expected(&scenario.expect, checker), actual),
            None => Status::Unchecked,
        }
    }

    /// Whether the lock held, and if not whether the resource stayed safe.
    pub fn safety(&self) -> Safety {
        let invalid = |name: &str| self.verdict(name) == Some(Verdict::Invalid);
        if !invalid(CheckerName::MutualExclusion.as_str()) {
            Safety::Held
        } else if invalid(CheckerName::StaleWrite.as_str()) || invalid(CheckerName::LostUpdate.as_str()) {
            Safety::ViolatedResourceDamaged
        } else {
            Safety::ViolatedResourceSafe
        }
    }
}

/// Runs `scenario` with the built-in algorithm it names. `seed` overrides the file's seed.
pub fn run_scenario(scenario: &Scenario, seed: Option<u64>) -> Result<ScenarioRun, WorldError> {
    run_with_lock(scenario, seed, builtin_lock(scenario))
}

/// The factory of the built-in lock `scenario` names (its `[lock]` settings).
pub fn builtin_lock(scenario: &Scenario) -> LockFactory {
    let spec = scenario.lock.clone();
    Rc::new(move |env| lock::build(&spec, env))
}

/// What a build without `--cfg tokio_unstable` is told (see [`require_tokio_unstable`]).
pub(crate) const TOKIO_UNSTABLE_HELP: &str = "lockstep needs `--cfg tokio_unstable`: without it tokio's scheduler \
     is not seeded and runs are not deterministic (the same seed may give another history). Add to \
     .cargo/config.toml of your crate or workspace:\n    [build]\n    rustflags = [\"--cfg\", \"tokio_unstable\"]\n\
     or build with RUSTFLAGS=\"--cfg tokio_unstable\" (then rebuild: the flag changes every crate)";

/// An error unless this build has `--cfg tokio_unstable` (`enabled`: `cfg!(tokio_unstable)`).
///
/// Rust flags apply to every crate of a build, so lockstep compiled without the flag means
/// tokio was too: the world then cannot seed tokio's scheduler, and a seed no longer
/// decides the run. Checked where a user's lock runs ([`run_with_lock`], and the harness)
/// instead of running non-deterministically.
pub(crate) fn require_tokio_unstable(enabled: bool) -> Result<(), WorldError> {
    if enabled {
        Ok(())
    } else {
        Err(WorldError::Config {
            field: "rustflags",
            reason: TOKIO_UNSTABLE_HELP.to_string(),
        })
    }
}

/// Runs `scenario` with a user-supplied lock algorithm. An error (naming the fix) when the
/// build lacks `--cfg tokio_unstable` (`require_tokio_unstable`).
pub fn run_with_lock(scenario: &Scenario, seed: Option<u64>, factory: LockFactory) -> Result<ScenarioRun, WorldError> {
    let (mut world, used_seed) = scenario_world(scenario, seed, factory)?;
    let end = world.run(&scenario.faults)?;
    let history = world.take_history();
    let ops = OpHistory::new(&history);
    let results: Vec<CheckResult> = checker::check_all(&ops);
    let mut mismatches = expect::mismatches(&scenario.expect, &results);
    let (liveness, mismatch) = expect::judge_liveness(&scenario.expect, &ops);
    mismatches.extend(mismatch);
    Ok(ScenarioRun {
        liveness,
        name: scenario.name.clone(),
        seed: used_seed,
        end,
        digest: history.digest(),
        history,
        results,
        mismatches,
    })
}

/// The history of `scenario` with `factory`'s lock (`seed` overrides the file's): the run alone,
/// without the checkers or the digest, for what only reads the history (an exploration aiming
/// its faults at a fault-free run's operations).
pub fn history_with_lock(scenario: &Scenario, seed: Option<u64>, factory: LockFactory) -> Result<History, WorldError> {
    let (mut world, _) = scenario_world(scenario, seed, factory)?;
    world.run(&scenario.faults)?;
    Ok(world.take_history())
}

/// The world of `scenario` with `factory`'s lock, built and not run yet, with the seed it uses
/// (`seed` overrides the file's). An error (naming the fix) when the build lacks
/// `--cfg tokio_unstable` (`require_tokio_unstable`).
pub fn scenario_world(
    scenario: &Scenario,
    seed: Option<u64>,
    factory: LockFactory,
) -> Result<(World, u64), WorldError> {
    require_tokio_unstable(cfg!(tokio_unstable))?;
    let mut config = scenario.world_config();
    if let Some(seed) = seed {
        config.seed = seed;
    }
    let used_seed = config.seed;
    let mut world = World::new(config)?;
    for master in &scenario.masters {
        // Persistence, restart delay, replicas and failover as the topology says; clients name
        // the master, and their links follow its group to whichever server is master now.
        world.add_master_with(&master.name, &scenario.master_setup(&master.name))?;
    }
    world.add_resource(RESOURCE_NODE, scenario.resource, ClockSpec::default())?;
    let master_names: Vec<String> = scenario.masters.iter().map(|m| m.name.clone()).collect();
    let fencing_master = master_names
        .iter()
        .position(|m| *m == scenario.lock.fencing_master)
        .unwrap_or(0);
    let timeouts = LinkTimeouts {
        connect_timeout_ms: scenario.lock.connect_timeout_ms,
        request_timeout_ms: scenario.lock.request_timeout_ms,
    };
    let resource_timeouts = LinkTimeouts {
        connect_timeout_ms: scenario.lock.connect_timeout_ms,
        request_timeout_ms: scenario.workload.resource_timeout_ms,
    };
    for client in &scenario.clients {
        let plan = ClientPlan::of(scenario, client);
        let factory = factory.clone();
        let master_names = master_names.clone();
        let lock_spec = scenario.lock.clone();
        world.add_client(
            &client.name,
            ClockSpec {
                offset_ms: client.offset_ms,
                drift_ppm: client.drift_ppm,
            },
            move |node| async move {
                let masters = master_names
                    .iter()
                    .map(|m| RedisLink::new(&node, m, REDIS_PORT, timeouts))
                    .collect();
                let env = LockEnv::new(&node, masters, fencing_master);
                let lock = lock::with_fencing(&lock_spec, &env, factory(env.clone()));
                let resource = ResourceClient::new(&node, RESOURCE_NODE, resource_timeouts);
                // A task with its own lock object (`[workload] tasks`) gets one built like the first.
                let make_lock: workload::LockMaker =
                    Rc::new(move || lock::with_fencing(&lock_spec, &env, factory(env.clone())));
                workload::run_client_with(node, lock, resource, plan, Some(make_lock)).await;
            },
        )?;
    }
    Ok((world, used_seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_without_tokio_unstable_is_told_how_to_set_it() {
        let err = require_tokio_unstable(false).unwrap_err().to_string();
        assert!(err.contains("--cfg tokio_unstable"), "{err}");
        assert!(err.contains(r#"rustflags = ["--cfg", "tokio_unstable"]"#), "{err}");
        assert!(err.contains("RUSTFLAGS"), "{err}");
        // This repository sets it in .cargo/config.toml: its own runs pass the check.
        const { assert!(cfg!(tokio_unstable)) };
        assert!(require_tokio_unstable(cfg!(tokio_unstable)).is_ok());
    }
}
