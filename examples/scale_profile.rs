//! Runs one node-scaling world of `lockstep bench` (see `lockstep::bench::scaling_world`) and
//! prints its cost per history event, to profile it:
//! `cargo run --release --example scale_profile -- clients 200 [bare]` (`masters` for the
//! Redlock world, `bare` for bare turmoil alone; `bare` also steps bare turmoil with as many hosts, to split off its cost).
use lockstep::bench::{bare_turmoil_us, scaling_shapes, scaling_world, world_cost};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let shape = args.get(1).map_or("clients", String::as_str);
    let nodes: usize = args.get(2).map_or(Ok(200), |n| n.parse())?;
    let bare = args.get(3).is_some_and(|a| a == "bare");
    if shape == "bare" {
        // Bare turmoil alone (to time it under `perf stat`), 2 simulated seconds.
        let bare_us = bare_turmoil_us(nodes, 2_000, 1)?;
        println!("bare {nodes}: {:.0} ms", bare_us / 1e3);
        return Ok(());
    }
    let ((m1, c1), (m2, c2)) = scaling_shapes(nodes);
    let scenario = match shape {
        "masters" => scaling_world("redlock", m2, c2, 1)?,
        _ => scaling_world("token-release", m1, c1, 1)?,
    };
    let cost = world_cost(&scenario)?;
    let per_event = |us: f64| us / cost.events as f64;
    print!(
        "{shape} {nodes}: {} events, {:.1} µs/event (analysis {:.1})",
        cost.events,
        cost.per_event_us(),
        per_event(cost.analysis_us)
    );
    if bare {
        let bare_us = bare_turmoil_us(nodes, cost.sim_ms, 1)?;
        print!(
            ", bare turmoil {:.1}, ours {:.1}",
            per_event(bare_us),
            per_event(cost.wall_us - bare_us)
        );
    }
    println!();
    Ok(())
}
