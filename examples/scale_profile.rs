//! Runs one node-scaling world of `lockstep bench` (see `lockstep::bench::scaling_world`) and
//! prints its cost per history event, to profile it:
//! `cargo run --release --example scale_profile -- clients 200 [runs]` (`masters` for the
//! Redlock world; `kleppmann` runs Kleppmann's pause N times, `standard` the bench's standard Redlock world).
use lockstep::bench::{scaling_shapes, scaling_world, world_cost};

// The allocator of the `lockstep` binary, so that the figures match `lockstep bench`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let shape = args.get(1).map_or("clients", String::as_str);
    let nodes: usize = args.get(2).map_or(Ok(200), |n| n.parse())?;
    if shape == "kleppmann" {
        // Kleppmann's pause as shipped, run `nodes` times (default 200) in one process.
        let scenario = lockstep::scenario::Scenario::from_str(
            include_str!("../scenarios/kleppmann-gc-pause.toml"),
            "scenarios/kleppmann-gc-pause.toml",
        )?;
        let runs = args.get(2).map_or(Ok(200), |n| n.parse())?;
        let mut cheapest_us = f64::INFINITY;
        for _ in 0..runs {
            cheapest_us = cheapest_us.min(world_cost(&scenario)?.wall_us);
        }
        println!("kleppmann: cheapest of {runs} runs {:.2} ms", cheapest_us / 1e3);
        return Ok(());
    }
    if shape == "standard" {
        // The bench's standard Redlock world (its floor line), run `nodes` times (default 200).
        let mut scenario = lockstep::scenario::standard::standard_template(
            lockstep::model::Algorithm::Redlock,
            lockstep::model::Fencing::Incr,
            lockstep_sim::FencingMode::Fenced,
            1,
        )?;
        scenario.workload.until_ms = Some(scenario.duration_ms);
        let mut cheapest_us = f64::INFINITY;
        for _ in 0..nodes {
            cheapest_us = cheapest_us.min(world_cost(&scenario)?.wall_us);
        }
        println!("standard: cheapest of {nodes} runs {:.2} ms", cheapest_us / 1e3);
        return Ok(());
    }
    let ((m1, c1), (m2, c2)) = scaling_shapes(nodes);
    let scenario = match shape {
        "masters" => scaling_world("redlock", m2, c2, 1)?,
        _ => scaling_world("token-release", m1, c1, 1)?,
    };
    // Optionally several runs in one process (as the bench does), each printed.
    let runs: usize = args.get(3).map_or(Ok(1), |n| n.parse())?;
    for _ in 0..runs {
        let cost = world_cost(&scenario)?;
        println!(
            "{shape} {nodes}: {} events, {:.1} µs/event (analysis {:.1})",
            cost.events,
            cost.per_event_us(),
            cost.analysis_us / cost.events as f64
        );
    }
    Ok(())
}
