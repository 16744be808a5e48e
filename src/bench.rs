//! `lockstep bench`: what the simulator costs, measured side by side in one run.
//!
//! - **Overhead**: simulated seconds per wall second of the standard Redlock world (5 masters,
//!   3 clients, the resource; no faults) against bare turmoil stepping the same number of idle
//!   hosts for the same simulated time, on one thread.
//! - **Scaling**: the same exploration on 1 job and on all cores.
//! - **Scenarios per minute** on the standard exploration profile (10 simulated seconds,
//!   5 masters, 3 clients, generated faults), all cores.
//!
//! Wall time is read here to measure, never inside a simulation.

use crate::app::AppError;
use crate::explore::{explore, standard_template, ExploreConfig};
use crate::run::run_scenario;
use std::time::{Duration, Instant};

fn bare_turmoil(hosts: usize, sim_ms: u64, tick_ms: u64) -> anyhow::Result<()> {
    let mut sim = turmoil::Builder::new()
        .rng_seed(1)
        .tick_duration(Duration::from_millis(tick_ms))
        .simulation_duration(Duration::from_millis(sim_ms + 1_000))
        .build();
    for i in 0..hosts.saturating_sub(1) {
        sim.host(format!("idle-{i}"), || async {
            std::future::pending::<()>().await;
            Ok(())
        });
    }
    sim.client("driver", async move {
        tokio::time::sleep(Duration::from_millis(sim_ms)).await;
        Ok(())
    });
    sim.run().map_err(|e| anyhow::anyhow!("bare turmoil failed: {e}"))
}

/// Runs the three measurements and returns a printable report; a world that fails is a run
/// failure.
pub fn run(scenarios: u64, tick_ms: u64) -> Result<String, AppError> {
    measure(scenarios, tick_ms).map_err(|e| AppError::RunFailure(format!("{e:#}")))
}

fn measure(scenarios: u64, tick_ms: u64) -> anyhow::Result<String> {
    let mut out = String::new();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut world = standard_template("redlock", "incr", "fenced", tick_ms)?;
    // Keep the clients busy for the whole run, so the world is never idle.
    world.workload.until_ms = Some(world.duration_ms);
    let runs = 5u64;
    let start = Instant::now();
    let mut sim_ms = 0;
    for seed in 0..runs {
        let run = run_scenario(&world, Some(seed))?;
        sim_ms += run.end.at_ms;
    }
    let world_wall = start.elapsed().as_secs_f64();
    let hosts = world.masters.len() + world.clients.len() + 1;
    let start = Instant::now();
    for _ in 0..runs {
        bare_turmoil(hosts, sim_ms / runs, tick_ms)?;
    }
    let bare_wall = start.elapsed().as_secs_f64();
    let sim_s = sim_ms as f64 / 1_000.0;
    out.push_str(&format!("lockstep bench (tick {tick_ms} ms, {cores} cores)\n"));
    out.push_str(&format!(
        "  overhead: world {:.1} simulated s/wall s, bare turmoil ({hosts} idle hosts) {:.1}: ratio {:.2}x\n",
        sim_s / world_wall,
        sim_s / bare_wall,
        world_wall / bare_wall
    ));
    let template = standard_template("redlock", "none", "unfenced", tick_ms)?;
    let mut config = ExploreConfig {
        seeds: 0..scenarios,
        jobs: 1,
        ..ExploreConfig::default()
    };
    let one = explore(&template, &config);
    config.jobs = cores;
    let all = explore(&template, &config);
    out.push_str(&format!(
        "  scaling: 1 job {:.2} scenarios/s, {} jobs {:.2} scenarios/s: {:.2}x\n",
        one.throughput.scenarios_per_s,
        cores,
        all.throughput.scenarios_per_s,
        all.throughput.scenarios_per_s / one.throughput.scenarios_per_s.max(1e-9)
    ));
    out.push_str(&format!(
        "  standard exploration profile (10 simulated s, 5 masters, 3 clients, generated faults): {:.0} scenarios/minute on {} jobs ({:.1} simulated s/wall s)\n",
        all.throughput.scenarios_per_s * 60.0,
        cores,
        all.throughput.sim_s_per_wall_s
    ));
    Ok(out)
}
