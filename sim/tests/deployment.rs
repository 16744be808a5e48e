//! Deployment faults end to end: what each persistence mode keeps through a crash, a power loss
//! and a clean shutdown; restart delays timed by the monotonic or the wall clock; asynchronous
//! replication with absolute expiry times; `WAIT`; Sentinel-like failover with clients following
//! the new master; and the demotion of the old one.

use lockstep_sim::{
    ClockSpec, DelayClock, Fault, FaultPlan, LinkTimeouts, MasterSetup, Node, Persistence, RedisLink, ScheduledFault,
    World, WorldConfig, READONLY_ERROR, REDIS_PORT,
};
use lockstep_sim::{Event, EventKind};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

fn world(seed: u64, duration_ms: u64) -> World {
    World::new(WorldConfig {
        seed,
        duration_ms,
        min_latency_ms: 2,
        max_latency_ms: 2,
        ..WorldConfig::default()
    })
    .expect("valid config")
}

fn link(node: &Node, host: &str) -> RedisLink {
    RedisLink::new(
        node,
        host,
        REDIS_PORT,
        LinkTimeouts {
            connect_timeout_ms: 100,
            request_timeout_ms: 100,
        },
    )
}

async fn sleep_until_true_ms(node: &Node, at_ms: u64) {
    let now_us = node.true_time_us();
    if now_us < at_ms * 1_000 {
        tokio::time::sleep(Duration::from_micros(at_ms * 1_000 - now_us)).await;
    }
}

fn at(at_ms: u64, fault: Fault) -> ScheduledFault {
    ScheduledFault { at_ms, fault }
}

fn set(key: &str, value: &str) -> redis::Cmd {
    let mut c = redis::cmd("SET");
    c.arg(key).arg(value).arg("PX").arg(100_000);
    c
}

fn notes(history: &[Event], node: &str) -> Vec<(u64, String)> {
    history
        .iter()
        .filter(|e| e.node == node)
        .filter_map(|e| match &e.kind {
            EventKind::Note { text } => Some((e.at_us / 1_000, text.clone())),
            _ => None,
        })
        .collect()
}

/// Writes `a` at 100 ms and `b` at 1 500 ms (the first fsync of `aof-everysec` falls at 1 000 ms),
/// stops the master with `stop` at 1 600 ms and restarts it at 1 700 ms; returns which keys it
/// came back with.
fn survivors(persistence: Persistence, stop: fn(String) -> Fault) -> Vec<String> {
    let mut w = world(3, 3_000);
    w.add_master_with(
        "redis-1",
        &MasterSetup {
            persistence,
            ..MasterSetup::default()
        },
    )
    .unwrap();
    w.add_client("c", ClockSpec::default(), |node| async move {
        let r = link(&node, "redis-1");
        sleep_until_true_ms(&node, 100).await;
        r.query::<()>(&set("a", "1")).await.unwrap();
        sleep_until_true_ms(&node, 1_500).await;
        r.query::<()>(&set("b", "2")).await.unwrap();
        sleep_until_true_ms(&node, 2_500).await;
    })
    .unwrap();
    let plan = FaultPlan::new(vec![
        at(1_600, stop("redis-1".into())),
        at(1_700, Fault::Restart { node: "redis-1".into() }),
    ]);
    w.run(&plan).unwrap();
    assert!(w.is_running("redis-1"));
    let keyspace = w.keyspace("redis-1").unwrap();
    keyspace
        .iter()
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .collect()
}

#[test]
fn each_persistence_mode_keeps_what_it_promises() {
    let crash = |node| Fault::Crash { node };
    let power = |node| Fault::PowerLoss { node };
    let shutdown = |node| Fault::Shutdown { node };
    let both = vec!["a".to_string(), "b".to_string()];
    let none: Vec<String> = vec![];
    assert_eq!(survivors(Persistence::None, crash), none, "no persistence: empty");
    assert_eq!(survivors(Persistence::None, power), none);
    assert_eq!(survivors(Persistence::None, shutdown), none, "nothing to load from");
    assert_eq!(
        survivors(Persistence::AofEverysec, crash),
        both,
        "a process crash keeps the AOF written to the OS"
    );
    assert_eq!(
        survivors(Persistence::AofEverysec, power),
        vec!["a".to_string()],
        "a power loss loses the write after the last fsync (1 000 ms)"
    );
    assert_eq!(survivors(Persistence::AofEverysec, shutdown), both);
    assert_eq!(survivors(Persistence::AofAlways, crash), both);
    assert_eq!(
        survivors(Persistence::AofAlways, power),
        both,
        "fsync before each reply"
    );
    assert_eq!(survivors(Persistence::AofAlways, shutdown), both);
}

/// Crashes a master at 1 000 ms, asks for a restart at 1 100 ms, with a 5 000 ms delay on
/// `clock`; `jump_ms` steps its wall clock at 2 000 ms. Returns when it came back (true ms).
fn restarted_at(clock: DelayClock, jump_ms: i64) -> u64 {
    let mut w = world(4, 8_000);
    w.add_master_with(
        "redis-1",
        &MasterSetup {
            restart_delay_ms: 5_000,
            restart_delay_clock: clock,
            ..MasterSetup::default()
        },
    )
    .unwrap();
    w.add_client("c", ClockSpec::default(), |node| async move {
        sleep_until_true_ms(&node, 7_000).await;
    })
    .unwrap();
    let mut faults = vec![
        at(1_000, Fault::Crash { node: "redis-1".into() }),
        at(1_100, Fault::Restart { node: "redis-1".into() }),
    ];
    if jump_ms != 0 {
        faults.push(at(
            2_000,
            Fault::ClockJump {
                node: "redis-1".into(),
                delta_ms: jump_ms,
            },
        ));
    }
    w.run(&FaultPlan::new(faults)).unwrap();
    let notes = notes(w.history().events(), "redis-1");
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[0].0, 1_100);
    assert!(
        notes[0].1.contains("4900 ms of the 5000 ms restart delay left"),
        "{notes:?}"
    );
    assert!(notes[1].1.starts_with("restarted"), "{notes:?}");
    notes[1].0
}

#[test]
fn a_delayed_restart_waits_on_its_clock_and_a_wall_clock_jump_cuts_it_short() {
    assert_eq!(restarted_at(DelayClock::Monotonic, 0), 6_000);
    assert_eq!(restarted_at(DelayClock::Wall, 0), 6_000);
    assert_eq!(
        restarted_at(DelayClock::Monotonic, 10_000),
        6_000,
        "the monotonic clock ignores the jump"
    );
    assert_eq!(
        restarted_at(DelayClock::Wall, 10_000),
        2_000,
        "the wall-clock timer is cut short by the +10 s jump"
    );
}

#[test]
fn replication_ships_absolute_expiry_and_the_replicas_clock_decides() {
    let mut w = world(5, 12_000);
    w.add_master_with(
        "redis-1",
        &MasterSetup {
            replicas: 1,
            replication_lag_ms: 100,
            // The replica's wall clock is 4 s ahead of the master's.
            replica_offset_ms: 4_000,
            ..MasterSetup::default()
        },
    )
    .unwrap();
    let waits: Rc<RefCell<Vec<String>>> = Rc::default();
    let out = waits.clone();
    w.add_client("c", ClockSpec::default(), move |node| async move {
        let r = link(&node, "redis-1");
        r.set_timeouts(LinkTimeouts {
            connect_timeout_ms: 100,
            request_timeout_ms: 2_000,
        });
        sleep_until_true_ms(&node, 1_000).await;
        let mut c = redis::cmd("SET");
        c.arg("k").arg("v").arg("PX").arg(10_000);
        r.query::<()>(&c).await.unwrap();
        // The replica acknowledges after the 100 ms lag.
        let n: i64 = r.query(redis::cmd("WAIT").arg(1).arg(1_000)).await.unwrap();
        out.borrow_mut().push(format!("{n} at {}", node.true_time_us() / 1_000));
        // Nobody can reach two replicas: WAIT returns what it has at its timeout.
        let n: i64 = r.query(redis::cmd("WAIT").arg(2).arg(300)).await.unwrap();
        out.borrow_mut().push(format!("{n} at {}", node.true_time_us() / 1_000));
        // A replica refuses writes.
        let direct = link(&node, "redis-1-replica-1");
        let e = direct.query::<()>(&set("x", "1")).await.unwrap_err();
        out.borrow_mut().push(e.to_string());
        sleep_until_true_ms(&node, 11_500).await;
    })
    .unwrap();
    w.run(&FaultPlan::default()).unwrap();
    let waits = waits.borrow();
    assert_eq!(waits[0], "1 at 1111", "{waits:?}");
    assert_eq!(waits[1], "1 at 1415", "{waits:?}");
    assert!(waits[2].contains(READONLY_ERROR), "{waits:?}");
    let history = w.history();
    let events = history.events();
    let applied: Vec<(&str, u64, &[String])> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Command { conn: 0, args, .. } => Some((e.node.as_str(), e.at_us / 1_000, args.as_slice())),
            _ => None,
        })
        .collect();
    let set_on_master = events
        .iter()
        .find(|e| e.node == "redis-1" && matches!(&e.kind, EventKind::Command { args, .. } if args[0] == "SET"))
        .expect("the master ran the SET");
    let set_ms = set_on_master.at_us / 1_000;
    assert_eq!(set_ms, 1_008, "after connecting");
    let expire_at = set_on_master.wall_ms + 10_000;
    assert_eq!(applied.len(), 2, "{applied:?}");
    assert_eq!(applied[0].0, "redis-1-replica-1");
    assert_eq!(applied[0].1, set_ms + 100, "applied after the 100 ms lag");
    assert_eq!(
        applied[0].2,
        &[
            "SET".to_string(),
            "k".into(),
            "v".into(),
            "PXAT".into(),
            expire_at.to_string()
        ]
    );
    let expired: Vec<(&str, u64)> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Expired { .. }))
        .map(|e| (e.node.as_str(), e.at_us / 1_000))
        .collect();
    // The replica's clock reads 4 s ahead: the same absolute time comes 4 s earlier there. The
    // master's own expiry is replicated as a DEL too, which the replica has nothing left to apply
    // to (it is logged all the same).
    assert_eq!(
        expired,
        vec![("redis-1-replica-1", set_ms + 6_001), ("redis-1", set_ms + 10_001)],
        "{expired:?}"
    );
    assert_eq!(applied[1].2, &["DEL".to_string(), "k".into()]);
    assert_eq!(applied[1].1, set_ms + 10_101);
}

/// One master with a replica and a 1 s replication lag; `a` takes a key at ~100 ms; the master
/// crashes at 500 ms, before replicating it.
fn failover_world(seed: u64, failover_after_ms: Option<u64>) -> (World, Rc<RefCell<Vec<String>>>) {
    let mut w = world(seed, 6_000);
    w.add_master_with(
        "redis-1",
        &MasterSetup {
            replicas: 1,
            replication_lag_ms: 1_000,
            failover_after_ms,
            ..MasterSetup::default()
        },
    )
    .unwrap();
    let seen: Rc<RefCell<Vec<String>>> = Rc::default();
    let out = seen.clone();
    w.add_client("a", ClockSpec::default(), move |node| async move {
        let r = link(&node, "redis-1");
        sleep_until_true_ms(&node, 100).await;
        let mut c = set("lock", "a");
        c.arg("NX");
        let got: Option<String> = r.query(&c).await.unwrap();
        out.borrow_mut().push(format!("a {got:?} on {}", r.target()));
        sleep_until_true_ms(&node, 2_000).await;
        // The same link, by the group's name: it now reaches the promoted replica.
        let mut c = set("lock", "b");
        c.arg("NX");
        let got = r.query::<Option<String>>(&c).await;
        out.borrow_mut().push(format!("b {got:?} on {}", r.target()));
        sleep_until_true_ms(&node, 4_000).await;
    })
    .unwrap();
    (w, seen)
}

#[test]
fn the_sentinel_promotes_a_replica_that_never_saw_the_lock_and_clients_follow() {
    let (mut w, seen) = failover_world(6, Some(1_000));
    let plan = FaultPlan::new(vec![
        at(500, Fault::Crash { node: "redis-1".into() }),
        at(3_000, Fault::Restart { node: "redis-1".into() }),
    ]);
    w.run(&plan).unwrap();
    let seen = seen.borrow();
    assert_eq!(
        *seen,
        vec![
            "a Some(\"OK\") on redis-1".to_string(),
            "b Ok(Some(\"OK\")) on redis-1-replica-1".to_string(),
        ],
        "the lock is granted twice"
    );
    assert_eq!(
        w.masters_now().get("redis-1").map(String::as_str),
        Some("redis-1-replica-1")
    );
    let history = w.history();
    let promoted = notes(history.events(), "redis-1-replica-1");
    assert_eq!(promoted[0].0, 1_500, "unreachable from 500 ms, promoted 1 000 ms later");
    assert!(
        promoted[0]
            .1
            .starts_with("promoted to master of `redis-1` by the sentinel: `redis-1` unreachable for 1000 ms"),
        "{promoted:?}"
    );
    // The old master comes back as a replica and copies the new master's keyspace.
    let old = notes(history.events(), "redis-1");
    assert_eq!(old.len(), 1, "{old:?}");
    assert!(
        old[0]
            .1
            .starts_with("full resynchronisation from `redis-1-replica-1`: 1 key(s)"),
        "{old:?}"
    );
    let lock = w.keyspace("redis-1").unwrap();
    let values: Vec<_> = lock.iter().map(|(_, e)| format!("{:?}", e.value)).collect();
    assert_eq!(values, vec!["String(b\"b\")".to_string()]);
}

#[test]
fn without_a_sentinel_a_failover_fault_forces_the_promotion() {
    let (mut w, seen) = failover_world(7, None);
    let plan = FaultPlan::new(vec![
        at(500, Fault::Crash { node: "redis-1".into() }),
        at(1_800, Fault::Failover { node: "redis-1".into() }),
    ]);
    w.run(&plan).unwrap();
    let seen = seen.borrow();
    assert_eq!(seen[1], "b Ok(Some(\"OK\")) on redis-1-replica-1", "{seen:?}");
    let promoted = notes(w.history().events(), "redis-1-replica-1");
    assert_eq!(promoted[0].0, 1_800);
    assert!(promoted[0].1.contains("forced by a failover fault"), "{promoted:?}");
}

#[test]
fn without_failover_the_client_waits_for_the_master() {
    let (mut w, seen) = failover_world(8, None);
    let plan = FaultPlan::new(vec![at(500, Fault::Crash { node: "redis-1".into() })]);
    w.run(&plan).unwrap();
    let seen = seen.borrow();
    assert!(
        seen[1].starts_with("b Err(") && seen[1].ends_with("on redis-1"),
        "{seen:?}"
    );
}

#[test]
fn a_forced_failover_demotes_a_running_master_and_its_clients_follow() {
    let mut w = world(9, 3_000);
    w.add_master_with(
        "redis-1",
        &MasterSetup {
            replicas: 2,
            replication_lag_ms: 10,
            ..MasterSetup::default()
        },
    )
    .unwrap();
    let seen: Rc<RefCell<Vec<String>>> = Rc::default();
    let out = seen.clone();
    w.add_client("c", ClockSpec::default(), move |node| async move {
        let r = link(&node, "redis-1");
        let pinned = RedisLink::new(&node, "redis-1-replica-1", REDIS_PORT, LinkTimeouts::default());
        r.query::<()>(&set("k", "1")).await.unwrap();
        sleep_until_true_ms(&node, 1_000).await;
        let got = r.query::<i64>(redis::cmd("INCR").arg("n")).await;
        out.borrow_mut().push(format!("{got:?} on {}", r.target()));
        let got = pinned.query::<Option<String>>(redis::cmd("GET").arg("k")).await;
        out.borrow_mut().push(format!("{got:?}"));
        let old = RedisLink::new(&node, "redis-1-replica-2", REDIS_PORT, LinkTimeouts::default());
        let got = old.query::<i64>(redis::cmd("INCR").arg("n")).await;
        out.borrow_mut().push(format!("{:?}", got.map_err(|e| e.to_string())));
    })
    .unwrap();
    let plan = FaultPlan::new(vec![at(500, Fault::Failover { node: "redis-1".into() })]);
    w.run(&plan).unwrap();
    let seen = seen.borrow();
    assert_eq!(seen[0], "Ok(1) on redis-1-replica-1", "{seen:?}");
    assert_eq!(seen[1], "Ok(Some(\"1\"))", "the promoted replica had the key: {seen:?}");
    assert!(seen[2].contains("READONLY"), "{seen:?}");
    assert!(!w.is_running("nobody"));
    assert!(w.is_running("redis-1"), "the old master runs on, demoted");
}

#[test]
fn deployment_faults_are_checked_before_the_run() {
    let mut w = world(10, 1_000);
    w.add_master("redis-1", ClockSpec::default()).unwrap();
    w.add_client("c", ClockSpec::default(), |_node| async {}).unwrap();
    let err = w
        .run(&FaultPlan::new(vec![at(
            10,
            Fault::Failover { node: "redis-1".into() },
        )]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "field `node`: a failover needs a master with replicas (or one of its replicas); `redis-1` is a master"
        ),
        "{err}"
    );
    let err = w
        .run(&FaultPlan::new(vec![at(10, Fault::PowerLoss { node: "c".into() })]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("only Redis masters and replicas"), "{err}");
    let mut w = world(11, 1_000);
    let err = w
        .add_master_with(
            "redis-1",
            &MasterSetup {
                failover_after_ms: Some(100),
                ..MasterSetup::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("no replica to promote"), "{err}");
}
