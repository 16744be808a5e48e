//! `lockstep bench`: what the simulator costs, measured side by side in one run.
//!
//! - **Event clock**: Kleppmann's pause (`scenarios/kleppmann-gc-pause.toml`, 40 simulated
//!   seconds, mostly idle) and the standard exploration profile, each run jumping over idle
//!   ticks (the default) and stepping every tick: steps taken against ticks covered, and CPU
//!   time both ways. The histories are the same (`tests/simulation/event_clock.rs`).
//! - **Floor**: the standard Redlock world (5 masters, 3 clients, the resource; no faults,
//!   clients always busy) against its own packets routed again by the bare network, with no
//!   Redis, client library, lock, history or checkers behind them (`floor`): CPU time of the
//!   world against CPU time of its traffic alone, on one thread.
//! - **Scaling**: the same exploration on 1 job and on all cores.
//! - **Scenarios per minute** on the standard exploration profile (10 simulated seconds,
//!   5 masters, 3 clients, generated faults), all cores.
//! - **Node scaling**: CPU time per history event of one fenced token-release world (one
//!   master, the resource, N clients, 2 simulated seconds) and of Redlock worlds with N
//!   masters, N from 3 to 1,000 nodes. Flat means linear cost; the column "×" shows how far
//!   from flat it is (against the 3-node world, run alternately with each row's world, so that
//!   a shared machine's noise weighs on both alike), and the analysis (checkers) is shown apart.
//!   A last line measures the goal in the shapes it is stated in: 3 to 1,000 clients on one
//!   lock, 3 to 200 Redlock masters.
//!
//! Wall time is read here to measure, never inside a simulation.

mod floor;

use crate::app::AppError;
use crate::explore::{explore, ExploreConfig};
use crate::model::{Algorithm, Fencing};
use crate::run::run_scenario;
use crate::scenario::standard::standard_template;
use crate::scenario::Scenario;
use lockstep_sim::{ClockWork, FencingMode};
use std::time::Instant;

/// Runs the three measurements and returns a printable report; a world that fails is a run
/// failure.
pub fn run(scenarios: u64, tick_ms: u64) -> Result<String, AppError> {
    measure(scenarios, tick_ms).map_err(|e| AppError::RunFailure(format!("{e:#}")))
}

fn measure(scenarios: u64, tick_ms: u64) -> anyhow::Result<String> {
    let mut out = String::new();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut world = standard_template(Algorithm::Redlock, Fencing::Incr, FencingMode::Fenced, tick_ms)?;
    // Keep the clients busy for the whole run, so the world is never idle.
    world.workload.until_ms = Some(world.duration_ms);
    out.push_str(&format!("lockstep bench (tick {tick_ms} ms, {cores} cores)\n"));
    out.push_str(&event_clock(tick_ms, scenarios)?);
    out.push_str(&floor_line(&world)?);
    let template = standard_template(Algorithm::Redlock, Fencing::None, FencingMode::Unfenced, tick_ms)?;
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

/// The standard Redlock world's traffic, recorded: its segments in the order sent, and the
/// world's settings (the seed gives a replay the same link delays).
pub fn recorded_traffic(
    scenario: &Scenario,
    seed: u64,
) -> anyhow::Result<(lockstep_sim::WorldConfig, Vec<lockstep_sim::SentSegment>)> {
    let (mut world, _) = crate::run::scenario_world(scenario, Some(seed), crate::run::builtin_lock(scenario))?;
    world.record_wire();
    world.run(&scenario.faults)?;
    Ok((world.config().clone(), world.take_wire_record()))
}

/// The floor: `scenario`'s world (the simulation and its checkers, [`run_scenario`]; and the
/// simulation alone) against its recorded traffic replayed by the bare network ([`floor`]), CPU
/// time, the cheapest of five runs each, alternating.
fn floor_line(scenario: &Scenario) -> anyhow::Result<String> {
    let (config, record) = recorded_traffic(scenario, 0)?;
    let (mut world_us, mut simulation_us, mut floor_us) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    let factory = crate::run::builtin_lock(scenario);
    for _ in 0..5 {
        let start = Stopwatch::start();
        run_scenario(scenario, Some(0))?;
        world_us = world_us.min(start.elapsed_us());
        // The same world without its analysis (typed history, checkers, digest), to tell the
        // simulation's share.
        let start = Stopwatch::start();
        std::hint::black_box(crate::run::history_with_lock(scenario, Some(0), factory.clone())?);
        simulation_us = simulation_us.min(start.elapsed_us());
        let start = Stopwatch::start();
        floor::replay(config.clone(), &record)?;
        floor_us = floor_us.min(start.elapsed_us());
    }
    let data = record
        .iter()
        .filter(|s| matches!(s.what, lockstep_sim::SegmentWhat::Data { .. }))
        .count();
    Ok(format!(
        "  floor: the standard Redlock world's {data} data segments ({} in all) routed again by the bare network, \
         nothing behind them: {:.2} ms CPU, against {:.2} ms for the world with its checkers: {:.2}x \
         (the simulation alone {:.2} ms, {:.2}x)\n",
        record.len(),
        floor_us / 1e3,
        world_us / 1e3,
        world_us / floor_us.max(1e-9),
        simulation_us / 1e3,
        simulation_us / floor_us.max(1e-9),
    ))
}

/// Kleppmann's pause, as shipped: 40 simulated seconds, most of them idle.
const KLEPPMANN: &str = include_str!("../../scenarios/kleppmann-gc-pause.toml");

/// One scenario run both ways: CPU µs (the cheapest of `repeats` runs) and the clock's work,
/// jumping over idle ticks and stepping every tick.
fn both_ways(scenario: &Scenario, repeats: usize) -> anyhow::Result<[(f64, ClockWork); 2]> {
    let mut out = [(0.0, ClockWork::default()); 2];
    for (i, step_every_tick) in [false, true].into_iter().enumerate() {
        let scenario = Scenario {
            step_every_tick,
            ..scenario.clone()
        };
        // The cheapest of a few runs: one run of a small world is a few milliseconds, which a
        // shared machine's noise (and the first run's cold caches) can double.
        let mut cheapest_us = f64::INFINITY;
        for _ in 0..repeats.max(1) {
            let start = Stopwatch::start();
            let run = run_scenario(&scenario, None)?;
            cheapest_us = cheapest_us.min(start.elapsed_us());
            out[i] = (cheapest_us, run.end.clock);
        }
    }
    Ok(out)
}

/// The event clock's figures: what jumping over idle ticks saves on a mostly idle story and on
/// the standard exploration profile.
fn event_clock(tick_ms: u64, scenarios: u64) -> anyhow::Result<String> {
    let mut kleppmann = Scenario::from_str(KLEPPMANN, "scenarios/kleppmann-gc-pause.toml")?;
    kleppmann.tick_ms = tick_ms;
    let [(jumped_us, jumped), (stepped_us, stepped)] = both_ways(&kleppmann, 5)?;
    let mut out = format!(
        "  event clock: kleppmann-gc-pause ({} simulated s): {} steps + {} jumps for {} ticks; {:.2} ms CPU, {:.2} ms stepping every tick ({:.1}x)\n",
        kleppmann.duration_ms / 1_000,
        jumped.steps,
        jumped.jumps,
        stepped.steps,
        jumped_us / 1e3,
        stepped_us / 1e3,
        stepped_us / jumped_us.max(1e-9),
    );
    // The standard exploration profile's first seeds, one at a time, both ways.
    let template = standard_template(Algorithm::Redlock, Fencing::None, FencingMode::Unfenced, tick_ms)?;
    let strategy = crate::explore::generate::case_strategy(
        &crate::explore::topology(&template),
        &crate::model::fault::FaultProfile::default(),
    );
    let (mut totals_us, mut steps, mut ticks) = ([0.0; 2], 0, 0);
    let seeds = scenarios.clamp(1, 40);
    for seed in 0..seeds {
        let case = crate::explore::generate::case_tree(seed, &strategy).current();
        let scenario = crate::explore::case_scenario(&template, &case, seed);
        let [(a_us, a), (b_us, b)] = both_ways(&scenario, 1)?;
        totals_us[0] += a_us;
        totals_us[1] += b_us;
        steps += a.steps;
        ticks += b.steps;
    }
    out.push_str(&format!(
        "  event clock: standard exploration profile ({seeds} seeds): {:.0}% of the ticks stepped; {:.1} vs {:.1} \
         scenarios/s on 1 job ({:.2}x)\n",
        100.0 * steps as f64 / ticks.max(1) as f64,
        seeds as f64 / (totals_us[0] / 1e6).max(1e-9),
        seeds as f64 / (totals_us[1] / 1e6).max(1e-9),
        totals_us[1] / totals_us[0].max(1e-9),
    ));
    Ok(out)
}

/// The node counts of the scaling figure.
pub(crate) const SCALING_NODES: [usize; 7] = [3, 12, 25, 50, 100, 200, 1_000];

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

/// A stopwatch of the CPU time the current thread runs (`CLOCK_THREAD_CPUTIME_ID`, nanosecond
/// resolution), or of wall time where the system does not say. CPU time is what a run costs on
/// a machine shared with other work; a simulation runs on one thread.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stopwatch {
    wall: Instant,
    cpu_us: Option<f64>,
}

/// This thread's CPU time so far, µs.
#[cfg(unix)]
fn thread_cpu_us() -> Option<f64> {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec to write to; the clock id is a constant the system knows.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (status == 0).then(|| now.tv_sec as f64 * 1e6 + now.tv_nsec as f64 / 1e3)
}

/// This thread's CPU time so far: not read on this system.
#[cfg(not(unix))]
fn thread_cpu_us() -> Option<f64> {
    None
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
    pub(crate) fn elapsed_us(&self) -> f64 {
        match (self.cpu_us, thread_cpu_us()) {
            (Some(from), Some(to)) => to - from,
            _ => self.wall.elapsed().as_secs_f64() * 1e6,
        }
    }

    /// Whether it counts CPU time.
    fn is_cpu(&self) -> bool {
        self.cpu_us.is_some()
    }
}

/// What one run of a scaling world cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorldCost {
    /// µs of the whole run (the simulation and the checkers), CPU time (`Stopwatch`).
    pub wall_us: f64,
    /// µs of the analysis after the simulation (typed history, checkers, liveness, digest).
    pub analysis_us: f64,
    /// History events.
    pub events: usize,
    /// Of them, commands the Redis servers ran: each a network round trip and the costly kind
    /// of event (the rest are cheap client and resource records).
    pub commands: usize,
    /// True ms simulated.
    pub sim_ms: u64,
}

impl WorldCost {
    /// µs per history event.
    pub fn per_event_us(&self) -> f64 {
        self.wall_us / self.events.max(1) as f64
    }

    /// µs per command the Redis servers ran.
    fn per_command_us(&self) -> f64 {
        self.wall_us / self.commands.max(1) as f64
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
        commands: run
            .history
            .events()
            .iter()
            .filter(|e| matches!(e.kind, lockstep_sim::EventKind::Command { .. }))
            .count(),
        sim_ms: run.end.at_ms,
    })
}

/// The cheapest of several runs of `world` and of `base`, run alternately: a shared machine's
/// noise comes and goes, and a ratio of two figures read minutes apart (or one read as the
/// cheapest of 10 runs, the other of 3) measures the machine as much as the worlds. Both run
/// the same number of times: at least 5, and small worlds until about 20,000 events have run (at
/// most 10 times); a big world's first run also pays for the memory the process touches for the
/// first time, which the cheapest of several leaves out.
fn paired_costs(base: &Scenario, world: &Scenario) -> anyhow::Result<(WorldCost, WorldCost)> {
    let (mut base_best, mut world_best) = (world_cost(base)?, world_cost(world)?);
    let repeats = (20_000 / world_best.events.max(1)).clamp(5, 10);
    for _ in 1..repeats {
        let cost = world_cost(base)?;
        if cost.wall_us < base_best.wall_us {
            base_best = cost;
        }
        let cost = world_cost(world)?;
        if cost.wall_us < world_best.wall_us {
            world_best = cost;
        }
    }
    Ok((base_best, world_best))
}

/// One column's figure at one size: the world and, measured alongside it, the column's
/// smallest world.
struct Paired {
    base: WorldCost,
    world: WorldCost,
}

impl Paired {
    fn of(base: &Scenario, world: &Scenario) -> anyhow::Result<Self> {
        let (base, world) = paired_costs(base, world)?;
        Ok(Paired { base, world })
    }

    /// Per-event cost against the base's.
    fn per_event_times(&self) -> f64 {
        self.world.per_event_us() / self.base.per_event_us().max(1e-9)
    }

    /// Per-command cost against the base's.
    fn per_command_times(&self) -> f64 {
        self.world.per_command_us() / self.base.per_command_us().max(1e-9)
    }

    /// One column group of the node-scaling table: events (`events_width` wide), the commands'
    /// share, µs per event and per command with their ratios, the analysis' µs per event.
    fn columns(&self, events_width: usize) -> String {
        let w = &self.world;
        format!(
            "{:>events_width$} {:>3.0}% {:>6.1} ({:>4.2}×) {:>6.1} ({:>4.2}×) {:>8.1}",
            w.events,
            100.0 * w.commands as f64 / w.events.max(1) as f64,
            w.per_event_us(),
            self.per_event_times(),
            w.per_command_us(),
            self.per_command_times(),
            w.analysis_us / w.events.max(1) as f64,
        )
    }
}

/// The two worlds of `nodes` nodes ([`scaling_shapes`]).
fn scaling_worlds(nodes: usize, tick_ms: u64) -> anyhow::Result<(Scenario, Scenario)> {
    let ((m1, c1), (m2, c2)) = scaling_shapes(nodes);
    Ok((
        scaling_world("token-release", m1, c1, tick_ms)?,
        scaling_world("redlock", m2, c2, tick_ms)?,
    ))
}

/// The node-scaling figure: per-event cost as the number of nodes grows, per command too (the
/// share of commands, the costly events, changes with the world's shape), and the analysis'
/// share. Each row's "×" is against the column's 3-node world, measured alongside that row.
fn node_scaling(tick_ms: u64) -> anyhow::Result<String> {
    let what = if Stopwatch::start().is_cpu() {
        "CPU µs"
    } else {
        "wall µs"
    };
    let mut out = format!(
        "  node scaling ({what} per history event and per Redis command, 2 simulated s; flat = linear cost;\n    \
         cmd = the commands' share of the events; analysis = the checkers' µs per event;\n    \
         × = against the column's 3-node world, run alternately with the row's)\n"
    );
    out.push_str(
        "            clients (1 master, fenced)                        | masters (Redlock, 2 clients)\n    \
         nodes  events cmd  per event (×)   per cmd (×)   analysis | events cmd  per event (×)   per cmd (×)   analysis\n",
    );
    let (base_clients, base_masters) = scaling_worlds(SCALING_NODES[0], tick_ms)?;
    for nodes in SCALING_NODES {
        let (clients_world, masters_world) = scaling_worlds(nodes, tick_ms)?;
        let clients = Paired::of(&base_clients, &clients_world)?;
        let masters = Paired::of(&base_masters, &masters_world)?;
        out.push_str(&format!(
            "    {nodes:>5} {} | {}\n",
            clients.columns(7),
            masters.columns(6)
        ));
    }
    out.push_str(&acceptance_shapes(tick_ms)?);
    Ok(out)
}

/// The scaling goal in the shapes it is stated in: per-event cost from 3 to 1,000 clients on
/// one lock (one master, fenced) and from 3 to 200 Redlock masters (2 clients), each pair run
/// alternately. (The table above starts lower, from 1 client and 1 master, worlds whose events
/// are mostly cheap client records.)
fn acceptance_shapes(tick_ms: u64) -> anyhow::Result<String> {
    let clients = Paired::of(
        &scaling_world("token-release", 1, 3, tick_ms)?,
        &scaling_world("token-release", 1, 1_000, tick_ms)?,
    )?;
    let masters = Paired::of(
        &scaling_world("redlock", 3, 2, tick_ms)?,
        &scaling_world("redlock", 200, 2, tick_ms)?,
    )?;
    Ok(format!(
        "    per event, 3 -> 1,000 clients on one lock: {:.1} -> {:.1} µs ({:.2}×); \
         3 -> 200 Redlock masters: {:.1} -> {:.1} µs ({:.2}×)\n",
        clients.base.per_event_us(),
        clients.world.per_event_us(),
        clients.per_event_times(),
        masters.base.per_event_us(),
        masters.world.per_event_us(),
        masters.per_event_times(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_sim::FaultPlan;

    /// The data segments of a recording: when, on which link, which way, how many bytes.
    fn data(record: &[lockstep_sim::SentSegment]) -> Vec<(u64, String, String, bool, usize)> {
        record
            .iter()
            .filter_map(|s| match s.what {
                lockstep_sim::SegmentWhat::Data { bytes } => {
                    Some((s.sent_us, s.client.clone(), s.server.clone(), s.from_client, bytes))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_floor_routes_the_same_packets_at_the_same_times() {
        let mut world = standard_template(Algorithm::Redlock, Fencing::Incr, FencingMode::Fenced, 1).unwrap();
        world.duration_ms = 2_000;
        world.workload.until_ms = Some(world.duration_ms);
        let (config, record) = recorded_traffic(&world, 3).unwrap();
        let sent = data(&record);
        assert!(sent.len() > 100, "a busy world sends plenty: {}", sent.len());
        let mut replay = floor::replay_world(config, &record).unwrap();
        replay.record_wire();
        replay.run(&FaultPlan::default()).unwrap();
        let again = data(&replay.take_wire_record());
        // The replay history holds no command, op or resource record: nothing behind the packets.
        assert!(replay
            .history()
            .events()
            .iter()
            .all(|e| matches!(e.kind, lockstep_sim::EventKind::Note { .. })));
        // Within one instant the replay's tasks may send in another order than the world's did;
        // the instants, links, directions and sizes are the same.
        let (mut sent, mut again) = (sent, again);
        sent.sort();
        again.sort();
        assert_eq!(again, sent);
    }

    #[test]
    fn a_paired_figure_measures_each_world_as_itself() {
        let (small, _) = scaling_worlds(3, 1).unwrap();
        let (bigger, _) = scaling_worlds(12, 1).unwrap();
        let paired = Paired::of(&small, &bigger).unwrap();
        // Each side is its own world (a run's history does not depend on the other's runs).
        assert_eq!(paired.base.events, world_cost(&small).unwrap().events);
        assert_eq!(paired.world.events, world_cost(&bigger).unwrap().events);
        assert!(paired.world.events > 2 * paired.base.events);
        let times = paired.per_event_times();
        let expected = paired.world.per_event_us() / paired.base.per_event_us();
        assert!(times.is_finite() && times > 0.0 && (times - expected).abs() < 1e-9);
    }

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
