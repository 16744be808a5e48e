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
//!   how far from flat it is. Each row also runs bare turmoil with as many idle hosts for as
//!   long, and splits the cost into turmoil's own per-tick cost (it links every pair of hosts
//!   and scans every link for every host on every tick: cubic in the hosts per tick) and ours.
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
pub const SCALING_NODES: [usize; 6] = [3, 12, 25, 50, 100, 200];

/// (masters, clients) of the two worlds with `nodes` nodes (the resource is one): one master
/// and many clients; many Redlock masters and two clients (one when there are only three nodes).
pub fn scaling_shapes(nodes: usize) -> ((usize, usize), (usize, usize)) {
    let nodes = nodes.max(3);
    let redlock_clients = if nodes > 3 { 2 } else { 1 };
    ((1, nodes - 2), (nodes - 1 - redlock_clients, redlock_clients))
}

/// A world of `clients` clients and `masters` masters (one client per master beyond the first
/// is not needed: Redlock's clients talk to every master), 2 simulated seconds.
pub fn scaling_world(algorithm: &str, masters: usize, clients: usize, tick_ms: u64) -> anyhow::Result<Scenario> {
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

/// A stopwatch of the CPU time the current thread runs (Linux: `/proc/thread-self/schedstat`),
/// or of wall time where the system does not say. CPU time is what a run costs on a machine
/// shared with other work; a simulation runs on one thread.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch {
    wall: Instant,
    cpu_us: Option<f64>,
}

/// This thread's CPU time so far, µs.
fn thread_cpu_us() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e3)
}

impl Stopwatch {
    /// Starts.
    pub fn start() -> Self {
        Stopwatch {
            wall: Instant::now(),
            cpu_us: thread_cpu_us(),
        }
    }

    /// µs since the start: CPU time when both readings exist, else wall time.
    pub fn elapsed_us(&self) -> f64 {
        match (self.cpu_us, thread_cpu_us()) {
            (Some(from), Some(to)) => to - from,
            _ => self.wall.elapsed().as_secs_f64() * 1e6,
        }
    }

    /// Whether it counts CPU time.
    pub fn is_cpu(&self) -> bool {
        self.cpu_us.is_some()
    }
}

/// What one run of a scaling world cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorldCost {
    /// µs of the whole run (the simulation and the checkers), CPU time ([`Stopwatch`]).
    pub wall_us: f64,
    /// µs of the analysis after the simulation (typed history, checkers, liveness, digest).
    pub analysis_us: f64,
    /// History events.
    pub events: usize,
    /// True ms simulated.
    pub sim_ms: u64,
}

impl WorldCost {
    /// µs per history event.
    pub fn per_event_us(&self) -> f64 {
        self.wall_us / self.events.max(1) as f64
    }
}

/// Runs `scenario` once and measures it.
pub fn world_cost(scenario: &Scenario) -> anyhow::Result<WorldCost> {
    let start = Stopwatch::start();
    let run = run_scenario(scenario, None)?;
    let wall_us = start.elapsed_us();
    // The analysis again, alone, to tell its share (run_scenario already did it once).
    let start = Stopwatch::start();
    let ops = crate::history::OpHistory::new(&run.history);
    std::hint::black_box(crate::checker::check_all(&ops));
    std::hint::black_box(crate::liveness::of(&ops));
    std::hint::black_box(run.history.digest());
    let analysis_us = start.elapsed_us();
    Ok(WorldCost {
        wall_us,
        analysis_us,
        events: run.history.events().len().max(1),
        sim_ms: run.end.at_ms,
    })
}

/// µs (CPU time, [`Stopwatch`]) bare turmoil takes to step `hosts` idle hosts for `sim_ms` at `tick_ms`: its own
/// per-tick cost, which a world of as many hosts pays whatever its software does. turmoil 0.7.2
/// links every pair of hosts and, on every tick, scans every link once for every running host
/// (`Topology::deliver_messages`) and reads the clock once per link (`Topology::tick_by`): that
/// is hosts³ per tick, hosts² per history event when events grow with the hosts.
pub fn bare_turmoil_us(hosts: usize, sim_ms: u64, tick_ms: u64) -> anyhow::Result<f64> {
    let start = Stopwatch::start();
    bare_turmoil(hosts, sim_ms, tick_ms)?;
    Ok(start.elapsed_us())
}

/// One row of the node-scaling figure: the two worlds of `nodes` nodes, and bare turmoil with
/// as many hosts for as long as the longer of them.
pub fn scaling_row(nodes: usize, tick_ms: u64) -> anyhow::Result<(WorldCost, WorldCost, f64)> {
    let ((m1, c1), (m2, c2)) = scaling_shapes(nodes);
    let clients = world_cost(&scaling_world("token-release", m1, c1, tick_ms)?)?;
    let masters = world_cost(&scaling_world("redlock", m2, c2, tick_ms)?)?;
    let bare_us = bare_turmoil_us(nodes, clients.sim_ms.max(masters.sim_ms), tick_ms)?;
    Ok((clients, masters, bare_us))
}

/// The node-scaling figure: per-event cost as the number of nodes grows, split into turmoil's
/// own per-tick cost (bare turmoil with as many idle hosts) and the rest (our software, tokio
/// running it, the checkers).
fn node_scaling(tick_ms: u64) -> anyhow::Result<String> {
    let what = if Stopwatch::start().is_cpu() {
        "CPU µs per history event"
    } else {
        "wall µs per history event"
    };
    let mut out = format!(
        "  node scaling ({what}, 2 simulated s; flat = linear cost). turmoil = bare turmoil stepping as many \
         idle hosts as long\n    (turmoil 0.7.2 links every pair of hosts and scans every link for every host on \
         every tick: hosts³ per tick); ours = the rest\n    (our software, tokio running it, the checkers): \
         total − turmoil, within the noise of both once turmoil dominates.\n"
    );
    out.push_str(
        "            clients (1 master, fenced)                   | masters (Redlock, 2 clients)\n    \
         nodes   events    total (× smallest) turmoil    ours |  events    total (× smallest) turmoil    ours\n",
    );
    let mut first: Option<[f64; 2]> = None;
    for nodes in SCALING_NODES {
        let (clients, masters, bare_us) = scaling_row(nodes, tick_ms)?;
        // (per event, turmoil's share in %, ours per event: "≈0" when bare turmoil alone took
        // as long, i.e. ours is below the noise of the two measurements).
        let split = |w: &WorldCost| {
            let share = 100.0 * bare_us.min(w.wall_us) / w.wall_us.max(1e-9);
            let ours_us = (w.wall_us - bare_us) / w.events as f64;
            let ours = if ours_us > 0.0 {
                format!("{ours_us:.1}")
            } else {
                "≈0".to_string()
            };
            (w.per_event_us(), share, ours)
        };
        let (ct, cs, co) = split(&clients);
        let (mt, ms, mo) = split(&masters);
        let [ct0, mt0] = *first.get_or_insert([ct, mt]);
        let times = |x: f64, x0: f64| x / x0.max(1e-9);
        out.push_str(&format!(
            "    {nodes:>5} {:>8} {ct:>8.1} ({:>9.1}×) {cs:>6.0}% {co:>7} | {:>7} {mt:>8.1} ({:>9.1}×) {ms:>6.0}% {mo:>7}\n",
            clients.events,
            times(ct, ct0),
            masters.events,
            times(mt, mt0),
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
