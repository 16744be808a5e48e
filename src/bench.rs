//! `lockstep bench`: what the simulator costs, measured side by side in one run.
//!
//! - **Overhead**: simulated seconds per wall second of the standard Redlock world (5 masters,
//!   3 clients, the resource; no faults) against bare turmoil stepping the same number of idle
//!   hosts for the same simulated time, on one thread.
//! - **Scaling**: the same exploration on 1 job and on all cores.
//! - **Scenarios per minute** on the standard exploration profile (10 simulated seconds,
//!   5 masters, 3 clients, generated faults), all cores.
//! - **Node scaling**: wall time per history event of one fenced token-release world (one
//!   master, the resource, N clients, 2 simulated seconds) and of Redlock worlds with N
//!   masters, N from 3 to 200 nodes. Flat means linear cost; the column "× smallest" shows
//!   how far from flat it is.
//!
//! Wall time is read here to measure, never inside a simulation.

use crate::app::AppError;
use crate::explore::{explore, standard_template, ExploreConfig};
use crate::run::run_scenario;
use crate::scenario::Scenario;
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
    out.push_str(&node_scaling(tick_ms)?);
    Ok(out)
}

/// The node counts of the scaling figure.
const SCALING_NODES: [usize; 6] = [3, 12, 25, 50, 100, 200];

/// (masters, clients) of the two worlds with `nodes` nodes (the resource is one): one master
/// and many clients; many Redlock masters and two clients (one when there are only three nodes).
fn scaling_shapes(nodes: usize) -> ((usize, usize), (usize, usize)) {
    let nodes = nodes.max(3);
    let redlock_clients = if nodes > 3 { 2 } else { 1 };
    ((1, nodes - 2), (nodes - 1 - redlock_clients, redlock_clients))
}

/// A world of `clients` clients and `masters` masters (one client per master beyond the first
/// is not needed: Redlock's clients talk to every master), 2 simulated seconds.
fn scaling_world(algorithm: &str, masters: usize, clients: usize, tick_ms: u64) -> anyhow::Result<Scenario> {
    let fencing = if algorithm == "redlock" {
        ""
    } else {
        "fencing = \"incr\"\n"
    };
    let resource = if algorithm == "redlock" { "unfenced" } else { "fenced" };
    let source = format!(
        r#"
name = "scale-{algorithm}-{masters}m-{clients}c"
description = "bench: node scaling"
seed = 1
duration_ms = 2000
tick_ms = {tick_ms}

[topology]
masters = {masters}
clients = {clients}
resource = "{resource}"

[lock]
algorithm = "{algorithm}"
ttl_ms = 1000
{fencing}
[workload]
until_ms = 2000
work_ms = [5, 20]
acquire_retry_ms = 20
"#
    );
    Ok(Scenario::from_str(&source, "<bench scaling world>")?)
}

/// Wall µs per history event of one run of `scenario`, and its event count.
fn cost_per_event(scenario: &Scenario) -> anyhow::Result<(f64, usize)> {
    let start = Instant::now();
    let run = run_scenario(scenario, None)?;
    let wall_us = start.elapsed().as_secs_f64() * 1e6;
    let events = run.history.events().len().max(1);
    Ok((wall_us / events as f64, events))
}

/// The node-scaling figure: per-event cost as the number of nodes grows.
fn node_scaling(tick_ms: u64) -> anyhow::Result<String> {
    let mut out = String::from("  node scaling (wall µs per history event, 2 simulated s; flat = linear cost):\n");
    out.push_str("    nodes  clients (1 master, fenced)        masters (Redlock, 2 clients)\n");
    let mut first: Option<(f64, f64)> = None;
    for nodes in SCALING_NODES {
        let ((m1, c1), (m2, c2)) = scaling_shapes(nodes);
        let clients = cost_per_event(&scaling_world("token-release", m1, c1, tick_ms)?)?;
        let masters = cost_per_event(&scaling_world("redlock", m2, c2, tick_ms)?)?;
        let (c0, m0) = *first.get_or_insert((clients.0, masters.0));
        out.push_str(&format!(
            "    {nodes:>5}  {:>7.1} µs ({:>6} events, {:>5.1}× smallest)  {:>7.1} µs ({:>6} events, {:>5.1}× smallest)\n",
            clients.0,
            clients.1,
            clients.0 / c0.max(1e-9),
            masters.0,
            masters.1,
            masters.0 / m0.max(1e-9),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scaling_world_is_a_valid_scenario_of_the_stated_size() {
        for nodes in SCALING_NODES {
            let ((m1, c1), (m2, c2)) = scaling_shapes(nodes);
            let clients = scaling_world("token-release", m1, c1, 1).unwrap();
            assert_eq!(clients.masters.len() + clients.clients.len() + 1, nodes);
            let masters = scaling_world("redlock", m2, c2, 1).unwrap();
            assert_eq!(masters.masters.len() + masters.clients.len() + 1, nodes);
        }
    }
}
