//! Measures the world's cost against its bare step loop.
//!
//! The world: 5 masters, 3 clients looping over SET NX PX / EVAL compare-and-delete / a resource
//! write, and the fenced resource (9 nodes). Bare: a world whose one client only sleeps, stepped
//! for the same simulated time. Prints simulated seconds per wall second for both and their ratio.
//!
//! Run: `cargo run --release -p lockstep-sim --example overhead [simulated_seconds] [runs]`.
//! Wall time is read here only to measure; nothing inside a simulation reads it.

use lockstep_sim::{
    ClockSpec, FaultPlan, FencingMode, LinkTimeouts, RedisLink, ResourceClient, World, WorldConfig, REDIS_PORT,
};
use rand::Rng;
use std::time::Instant;

const MASTERS: [&str; 5] = ["redis-1", "redis-2", "redis-3", "redis-4", "redis-5"];
const RELEASE: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;

fn world_run(seed: u64, sim_ms: u64) -> usize {
    let mut world = World::new(WorldConfig {
        seed,
        duration_ms: sim_ms,
        ..WorldConfig::default()
    })
    .unwrap();
    for m in MASTERS {
        world.add_master(m, ClockSpec::default()).unwrap();
    }
    world
        .add_resource("resource", FencingMode::Fenced, ClockSpec::default())
        .unwrap();
    for c in ["client-1", "client-2", "client-3"] {
        world
            .add_client(c, ClockSpec::default(), |node| async move {
                let links: Vec<RedisLink> = MASTERS
                    .iter()
                    .map(|m| RedisLink::new(&node, m, REDIS_PORT, LinkTimeouts::default()))
                    .collect();
                let resource = ResourceClient::new(&node, "resource", LinkTimeouts::default());
                let mut token = 0u64;
                loop {
                    let value: u64 = node.rng().random();
                    for link in &links {
                        let _ = link
                            .query::<Option<String>>(
                                redis::cmd("SET").arg("lock").arg(value).arg("NX").arg("PX").arg(1_000),
                            )
                            .await;
                    }
                    token += 1;
                    let _ = resource.write("counter", token as i64, Some(token)).await;
                    node.sleep_local_ms(100).await;
                    for link in &links {
                        let _ = link
                            .query::<i64>(redis::cmd("EVAL").arg(RELEASE).arg(1).arg("lock").arg(value))
                            .await;
                    }
                    node.sleep_local_ms(50).await;
                }
            })
            .unwrap();
    }
    world.run(&FaultPlan::default()).unwrap();
    world.history().len()
}

fn bare_run(sim_ms: u64) {
    let mut world = World::new(WorldConfig {
        seed: 1,
        duration_ms: sim_ms + 1_000,
        ..WorldConfig::default()
    })
    .unwrap();
    world
        .add_client("driver", ClockSpec::default(), move |node| async move {
            node.sleep_local_ms(sim_ms).await;
        })
        .unwrap();
    world.run(&FaultPlan::default()).unwrap();
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sim_s: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(30);
    let runs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let sim_ms = sim_s * 1_000;
    let start = Instant::now();
    let mut events = 0;
    for seed in 0..runs {
        events += world_run(seed, sim_ms);
    }
    let world_wall = start.elapsed().as_secs_f64();
    let start = Instant::now();
    for _ in 0..runs {
        bare_run(sim_ms);
    }
    let bare_wall = start.elapsed().as_secs_f64();
    let total_sim_s = (sim_s * runs) as f64;
    println!("simulated: {runs} runs x {sim_s} s, 9 nodes, 1 thread");
    println!(
        "world:  {:>8.1} simulated s per wall s ({} events, {:.0} events/s)",
        total_sim_s / world_wall,
        events,
        events as f64 / world_wall
    );
    println!(
        "bare:   {:>8.1} simulated s per wall s (the step loop alone)",
        total_sim_s / bare_wall
    );
    println!(
        "ratio:  {:>8.2}x (world cost / bare step loop cost)",
        world_wall / bare_wall
    );
}
