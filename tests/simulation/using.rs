//! `using()`: the lock stays alive through a long routine, and a pause past the TTL raises the
//! abort signal.

use lockstep::lock::using::using;
use lockstep::lock::{token_release::TokenRelease, LockClient, LockEnv};
use lockstep::sim::{
    ClockSpec, EventKind, Fault, FaultPlan, LinkTimeouts, RedisLink, ScheduledFault, World, WorldConfig, REDIS_PORT,
};
use std::cell::RefCell;
use std::rc::Rc;

/// Runs one client that holds "lock" (TTL 1 s) through a 3 s routine; returns whether the abort
/// signal was raised and how many extensions the master applied.
fn hold_through_routine(pause: Option<(u64, u64)>) -> (bool, usize) {
    let mut world = World::new(WorldConfig {
        seed: 3,
        duration_ms: 20_000,
        ..WorldConfig::default()
    })
    .unwrap();
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    let aborted: Rc<RefCell<Option<bool>>> = Rc::default();
    let out = aborted.clone();
    world
        .add_client("client-1", ClockSpec::default(), move |node| async move {
            let links = vec![RedisLink::new(&node, "redis-1", REDIS_PORT, LinkTimeouts::default())];
            let env = LockEnv::new(&node, links, 0);
            let lock: Rc<dyn LockClient> = Rc::new(TokenRelease::new(env.clone()));
            let routine_env = env.clone();
            let result = using(lock, &env, "lock", 1_000, 300, |_grant, signal| async move {
                routine_env.sleep_local_ms(3_000).await;
                signal.aborted()
            })
            .await;
            *out.borrow_mut() = result.ok();
        })
        .unwrap();
    let plan = FaultPlan::new(
        pause
            .map(|(at_ms, duration_ms)| ScheduledFault {
                at_ms,
                fault: Fault::Pause {
                    node: "client-1".into(),
                    duration_ms,
                },
            })
            .into_iter()
            .collect(),
    );
    world.run(&plan).unwrap();
    let extensions = world
        .history()
        .events()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Command { args, reply, .. } if args[0] == "EVAL" && args[1].contains("pexpire") && reply == ":1"))
        .count();
    let aborted = aborted.borrow().expect("the routine ran");
    (aborted, extensions)
}

#[test]
fn the_lock_is_extended_through_a_long_routine() {
    let (aborted, extensions) = hold_through_routine(None);
    assert!(!aborted);
    // Extended 300 ms before each expiry: at about 0.7, 1.4, 2.1 and 2.8 s.
    assert_eq!(extensions, 4);
}

#[test]
fn a_pause_past_the_ttl_raises_the_abort_signal() {
    let (aborted, extensions) = hold_through_routine(Some((200, 2_000)));
    assert!(aborted, "the extension after the pause finds the key gone");
    assert_eq!(extensions, 0);
}
