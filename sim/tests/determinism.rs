//! Determinism: the same seed gives the same history digest, every time, on any thread; different
//! seeds give different histories.
//!
//! The world is busy on purpose: 5 masters, 3 clients looping over SET NX PX and an EVAL
//! compare-and-delete, random latencies, and a seeded plan of pauses, clock jumps and
//! partitions.

use lockstep_sim::{
    ClockSpec, Fault, FaultPlan, LinkTimeouts, RedisLink, ScheduledFault, Seed, World, WorldConfig, REDIS_PORT,
};
use rand::Rng;

const MASTERS: [&str; 5] = ["redis-1", "redis-2", "redis-3", "redis-4", "redis-5"];
const CLIENTS: [&str; 3] = ["client-1", "client-2", "client-3"];
const RELEASE: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;

fn plan_for(seed: u64) -> FaultPlan {
    let mut rng = Seed(seed).stream("faults");
    let mut faults = Vec::new();
    for _ in 0..rng.random_range(2..6) {
        let at_ms = rng.random_range(0..2_500);
        let client = CLIENTS[rng.random_range(0..CLIENTS.len())].to_string();
        let master = MASTERS[rng.random_range(0..MASTERS.len())].to_string();
        let fault = match rng.random_range(0..4) {
            0 => Fault::Pause {
                node: client,
                duration_ms: rng.random_range(10..1_500),
            },
            1 => Fault::ClockJump {
                node: master,
                delta_ms: rng.random_range(-2_000..2_000),
            },
            2 => Fault::Partition {
                a: client,
                b: master,
                oneway: rng.random_bool(0.5),
            },
            _ => Fault::Heal {
                a: client,
                b: master,
                oneway: false,
            },
        };
        faults.push(ScheduledFault { at_ms, fault });
    }
    FaultPlan::new(faults)
}

fn busy_world_digest(seed: u64) -> String {
    let mut world = World::new(WorldConfig {
        seed,
        duration_ms: 3_000,
        min_latency_ms: 1,
        max_latency_ms: 20,
        ..WorldConfig::default()
    })
    .unwrap();
    for m in MASTERS {
        world.add_master(m, ClockSpec::default()).unwrap();
    }
    for (i, c) in CLIENTS.iter().enumerate() {
        world
            .add_client(
                c,
                ClockSpec {
                    offset_ms: i as i64 * 7,
                    drift_ppm: i as i64 * 150 - 150,
                },
                |node| async move {
                    let links: Vec<RedisLink> = MASTERS
                        .iter()
                        .map(|m| RedisLink::new(&node, m, REDIS_PORT, LinkTimeouts::default()))
                        .collect();
                    for round in 0..40u64 {
                        let value: u64 = node.rng().random();
                        for link in &links {
                            let _ = link
                                .query::<Option<String>>(
                                    redis::cmd("SET").arg("lock").arg(value).arg("NX").arg("PX").arg(300),
                                )
                                .await;
                        }
                        let hold_ms = node.rng().random_range(5..60);
                        node.sleep_local_ms(hold_ms).await;
                        for link in &links {
                            let _ = link
                                .query::<i64>(redis::cmd("EVAL").arg(RELEASE).arg(1).arg("lock").arg(value))
                                .await;
                        }
                        node.sleep_local_ms(round % 7).await;
                    }
                },
            )
            .unwrap();
    }
    world.run(&plan_for(seed)).unwrap();
    let history = world.history();
    assert!(
        history.len() > 100,
        "seed {seed}: the world was not busy ({} events)",
        history.len()
    );
    history.digest()
}

const SEEDS: u64 = 200;

#[test]
fn the_same_seed_gives_the_same_digest_twice_and_on_two_threads() {
    let first: Vec<String> = (0..SEEDS).map(busy_world_digest).collect();
    let second: Vec<String> = (0..SEEDS).map(busy_world_digest).collect();
    for seed in 0..SEEDS as usize {
        assert_eq!(first[seed], second[seed], "seed {seed} diverged between two runs");
    }
    // Two threads at once, each running half of the seeds in the opposite order.
    let (evens, odds) = std::thread::scope(|scope| {
        let evens = scope.spawn(|| {
            (0..SEEDS)
                .rev()
                .step_by(2)
                .map(|s| (s, busy_world_digest(s)))
                .collect::<Vec<_>>()
        });
        let odds = scope.spawn(|| {
            (0..SEEDS)
                .step_by(2)
                .map(|s| (s, busy_world_digest(s)))
                .collect::<Vec<_>>()
        });
        (evens.join().unwrap(), odds.join().unwrap())
    });
    for (seed, digest) in evens.into_iter().chain(odds) {
        assert_eq!(first[seed as usize], digest, "seed {seed} diverged on another thread");
    }
    // Different seeds, different histories.
    let mut unique = first.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), first.len(), "two seeds gave the same history");
}
