//! The world's promises, tested end to end through real redis-rs clients: clocks, pauses,
//! expiry by each node's own wall clock, the fenced resource over the network, bad input.

use lockstep_sim::EventKind;
use lockstep_sim::{
    ClockSpec, Fault, FaultPlan, FencingMode, LinkTimeouts, Node, RedisLink, ResourceClient, ScheduledFault, World,
    WorldConfig, WriteOutcome, REDIS_PORT,
};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn fixed_latency_world(seed: u64) -> World {
    World::new(WorldConfig {
        seed,
        duration_ms: 60_000,
        min_latency_ms: 2,
        max_latency_ms: 2,
        ..WorldConfig::default()
    })
    .expect("valid config")
}

fn link(node: &Node, host: &str, request_timeout_ms: u64) -> RedisLink {
    RedisLink::new(
        node,
        host,
        REDIS_PORT,
        LinkTimeouts {
            connect_timeout_ms: 1_000,
            request_timeout_ms,
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

#[test]
fn a_real_redis_rs_client_runs_every_command_over_simulated_tcp() {
    let mut world = fixed_latency_world(1);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    let replies: Rc<RefCell<Vec<String>>> = Rc::default();
    let out = replies.clone();
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            let redis = link(&node, "redis-1", 1_000);
            let push = |s: String| out.borrow_mut().push(s);
            push(format!("{:?}", redis.query::<String>(&redis::cmd("PING")).await));
            push(format!(
                "{:?}",
                redis.query::<String>(redis::cmd("ECHO").arg("hi")).await
            ));
            let set = |args: &[&str]| {
                let mut c = redis::cmd("SET");
                for a in args {
                    c.arg(*a);
                }
                c
            };
            push(format!(
                "{:?}",
                redis
                    .query::<Option<String>>(&set(&["k", "v1", "NX", "PX", "10000"]))
                    .await
            ));
            push(format!(
                "{:?}",
                redis
                    .query::<Option<String>>(&set(&["k", "v2", "NX", "PX", "10000"]))
                    .await
            ));
            push(format!(
                "{:?}",
                redis
                    .query::<Option<String>>(&set(&["k", "v3", "XX", "GET", "KEEPTTL"]))
                    .await
            ));
            push(format!(
                "{:?}",
                redis.query::<Option<String>>(redis::cmd("GET").arg("k")).await
            ));
            push(format!(
                "{:?}",
                redis.query::<i64>(redis::cmd("PTTL").arg("k")).await.map(|t| t > 9_000)
            ));
            push(format!("{:?}", redis.query::<i64>(redis::cmd("TTL").arg("k")).await));
            push(format!(
                "{:?}",
                redis.query::<i64>(redis::cmd("EXISTS").arg("k").arg("nope")).await
            ));
            push(format!(
                "{:?}",
                redis.query::<i64>(redis::cmd("PEXPIRE").arg("k").arg(500)).await
            ));
            let release =
                r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;
            push(format!(
                "{:?}",
                redis
                    .query::<i64>(redis::cmd("EVAL").arg(release).arg(1).arg("k").arg("wrong"))
                    .await
            ));
            let sha: String = redis
                .query(redis::cmd("SCRIPT").arg("LOAD").arg(release))
                .await
                .unwrap();
            push(format!(
                "{:?}",
                redis
                    .query::<Vec<i64>>(redis::cmd("SCRIPT").arg("EXISTS").arg(&sha))
                    .await
            ));
            push(format!(
                "{:?}",
                redis
                    .query::<i64>(redis::cmd("EVALSHA").arg(&sha).arg(1).arg("k").arg("v3"))
                    .await
            ));
            push(format!("{:?}", redis.query::<i64>(redis::cmd("INCR").arg("n")).await));
            push(format!(
                "{:?}",
                redis.query::<i64>(redis::cmd("INCRBY").arg("n").arg(41)).await
            ));
            push(format!("{:?}", redis.query::<i64>(redis::cmd("DEL").arg("n")).await));
            push(format!(
                "{:?}",
                redis.query::<String>(redis::cmd("SCRIPT").arg("FLUSH")).await
            ));
            push(format!(
                "{:?}",
                redis.query::<i64>(redis::cmd("EVALSHA").arg(&sha).arg(0)).await
            ));
            push(format!(
                "{:?}",
                redis.query::<String>(redis::cmd("NOSUCH").arg("x")).await
            ));
        })
        .unwrap();
    let end = world.run(&FaultPlan::default()).unwrap();
    assert!(end.clients_finished);
    let got = replies.borrow().clone();
    let expected = [
        r#"Ok("PONG")"#,
        r#"Ok("hi")"#,
        r#"Ok(Some("OK"))"#,
        "Ok(None)",
        r#"Ok(Some("v1"))"#,
        r#"Ok(Some("v3"))"#,
        "Ok(true)",
        "Ok(10)",
        "Ok(1)",
        "Ok(1)",
        "Ok(0)",
        "Ok([1])",
        "Ok(1)",
        "Ok(1)",
        "Ok(42)",
        "Ok(1)",
        r#"Ok("OK")"#,
    ];
    assert_eq!(&got[..expected.len()], &expected[..], "all: {got:#?}");
    assert!(got[17].contains("NOSCRIPT"), "{}", got[17]);
    assert!(got[18].contains("unknown command"), "{}", got[18]);
    // The master logged what redis-rs sent while connecting, and every command after it.
    let history = world.history();
    let commands: Vec<String> = history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Command { args, .. } => Some(args[0].to_ascii_uppercase()),
            _ => None,
        })
        .collect();
    assert!(commands.contains(&"EVALSHA".to_string()));
    assert!(commands.iter().filter(|c| *c == "SET").count() >= 3);
}

#[test]
fn a_wall_clock_jump_expires_a_key_on_that_node_only() {
    let mut world = fixed_latency_world(2);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    world.add_master("redis-2", ClockSpec::default()).unwrap();
    let seen: Rc<RefCell<Vec<i64>>> = Rc::default();
    let out = seen.clone();
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            let (r1, r2) = (link(&node, "redis-1", 1_000), link(&node, "redis-2", 1_000));
            for r in [&r1, &r2] {
                let _: Option<String> = r
                    .query(redis::cmd("SET").arg("lock").arg("v").arg("NX").arg("PX").arg(10_000))
                    .await
                    .unwrap();
            }
            sleep_until_true_ms(&node, 1_100).await;
            for r in [&r1, &r2] {
                let exists = r.query(redis::cmd("EXISTS").arg("lock")).await.unwrap();
                out.borrow_mut().push(exists);
            }
        })
        .unwrap();
    let plan = FaultPlan::new(vec![at(
        1_000,
        Fault::ClockJump {
            node: "redis-1".into(),
            delta_ms: 15_000,
        },
    )]);
    world.run(&plan).unwrap();
    assert_eq!(*seen.borrow(), vec![0, 1], "redis-1 expired the key, redis-2 kept it");
    let history = world.history();
    let expiry = history
        .events()
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Expired { key } if key == "lock"))
        .expect("an expiry is logged");
    assert_eq!(expiry.node, "redis-1");
    assert_eq!(expiry.at_us, 1_001_000, "at once: in the first step after the jump");
}

/// Runs a master whose clock drifts by `drift_ppm`, sets a key with a 1000 ms TTL on it, and
/// returns the SET and expiry events' (true µs, master wall ms).
fn set_then_expire(drift_ppm: i64) -> ((u64, i64), (u64, i64)) {
    let mut world = fixed_latency_world(3);
    world
        .add_master(
            "redis-1",
            ClockSpec {
                offset_ms: 0,
                drift_ppm,
            },
        )
        .unwrap();
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            let r = link(&node, "redis-1", 1_000);
            let _: Option<String> = r
                .query(redis::cmd("SET").arg("k").arg("v").arg("PX").arg(1_000))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(2_000)).await;
        })
        .unwrap();
    world.run(&FaultPlan::default()).unwrap();
    let history = world.history();
    let set = history
        .events()
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Command { args, .. } if args[0] == "SET"))
        .expect("SET applied");
    let expired = history
        .events()
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Expired { .. }))
        .expect("the key expired");
    ((set.at_us, set.wall_ms), (expired.at_us, expired.wall_ms))
}

#[test]
fn keys_expire_at_the_exact_millisecond_of_the_nodes_clock() {
    // As in Redis (`keyIsExpired`: now > when), a key is alive at its deadline's millisecond
    // (PTTL 0) and gone in the next one.
    let ((set_us, set_wall), (exp_us, exp_wall)) = set_then_expire(0);
    assert_eq!(
        exp_wall,
        set_wall + 1_001,
        "expiry at the exact ms of the master's clock"
    );
    assert_eq!(exp_us - set_us, 1_001_000);
    // redis-1's clock runs 10 % fast: its wall clock advances 1.1 ms per 1 ms step, so the key
    // expires in the first step whose reading passes the deadline, after 910-911 true ms.
    let ((set_us, set_wall), (exp_us, exp_wall)) = set_then_expire(100_000);
    assert!(
        (set_wall + 1_001..set_wall + 1_003).contains(&exp_wall),
        "expired at wall {} for a deadline of {}",
        exp_wall,
        set_wall + 1_000
    );
    let true_ms = (exp_us - set_us) / 1_000;
    assert!((910..=911).contains(&true_ms), "{true_ms} true ms on a clock 10 % fast");
}

#[test]
fn a_paused_client_reads_its_reply_and_fires_its_timers_only_after_resuming() {
    let mut world = fixed_latency_world(4);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    let ticks: Rc<RefCell<Vec<u64>>> = Rc::default();
    let reply_at: Rc<RefCell<Option<u64>>> = Rc::default();
    let timer_at: Rc<RefCell<Option<u64>>> = Rc::default();
    let (t, r, tm) = (ticks.clone(), reply_at.clone(), timer_at.clone());
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            let redis = link(&node, "redis-1", 60_000);
            let _: String = redis.query(&redis::cmd("PING")).await.unwrap();
            // A counter task: it must not run while the node is frozen.
            let counter_node = node.clone();
            node.spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    t.borrow_mut().push(counter_node.true_time_us() / 1_000);
                }
            });
            // A timer due at true 5 s, inside the pause.
            let timer_node = node.clone();
            node.spawn(async move {
                sleep_until_true_ms(&timer_node, 5_000).await;
                *tm.borrow_mut() = Some(timer_node.true_time_us() / 1_000);
            });
            sleep_until_true_ms(&node, 1_000).await;
            // Sent at 1000 ms; the reply is in flight (2 ms each way) when the pause starts.
            let _: String = redis.query(&redis::cmd("PING")).await.unwrap();
            *r.borrow_mut() = Some(node.true_time_us() / 1_000);
            sleep_until_true_ms(&node, 16_500).await;
        })
        .unwrap();
    let plan = FaultPlan::new(vec![at(
        1_002,
        Fault::Pause {
            node: "c".into(),
            duration_ms: 15_000,
        },
    )]);
    world.run(&plan).unwrap();
    let reply_ms = reply_at.borrow().expect("the reply was read");
    assert!(
        reply_ms >= 16_002,
        "reply read at {reply_ms} ms, before the pause ended"
    );
    let timer_ms = timer_at.borrow().expect("the timer fired");
    assert!(timer_ms >= 16_002, "timer fired at {timer_ms} ms, inside the pause");
    let ticks = ticks.borrow();
    assert!(ticks.iter().any(|&ms| ms < 1_002), "the counter ran before the pause");
    assert!(ticks.iter().any(|&ms| ms >= 16_002), "the counter ran after the pause");
    let during: Vec<_> = ticks.iter().filter(|&&ms| (1_003..16_002).contains(&ms)).collect();
    assert!(during.is_empty(), "the counter ran during the pause at {during:?}");
    let history = world.history();
    let resumed = history
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Resumed))
        .expect("the resumption is logged");
    assert_eq!(resumed.at_us, 16_002_000);
}

#[test]
fn the_resource_judges_tokens_over_the_network() {
    for (mode, expected) in [
        (FencingMode::Unfenced, vec![true, true, true]),
        (FencingMode::Fenced, vec![true, false, true]),
        (FencingMode::Strict, vec![true, false, true]),
    ] {
        let mut world = fixed_latency_world(5);
        world.add_resource("resource", mode, ClockSpec::default()).unwrap();
        let outcomes: Rc<RefCell<Vec<bool>>> = Rc::default();
        #[allow(clippy::type_complexity)]
        let read: Rc<RefCell<Option<(Option<i64>, u64)>>> = Rc::default();
        let (out, rd) = (outcomes.clone(), read.clone());
        world
            .add_client("c", ClockSpec::default(), move |node| async move {
                let resource = ResourceClient::new(&node, "resource", LinkTimeouts::default());
                // The lesson's example: 33 accepted, 32 rejected, 34 accepted.
                for (value, token) in [(1, 33), (2, 32), (3, 34)] {
                    let outcome = resource.write("k", value, Some(token)).await.unwrap();
                    out.borrow_mut().push(matches!(outcome, WriteOutcome::Accepted { .. }));
                }
                *rd.borrow_mut() = Some(resource.read("k", None).await.unwrap());
            })
            .unwrap();
        world.run(&FaultPlan::default()).unwrap();
        assert_eq!(*outcomes.borrow(), expected, "mode {mode:?}");
        let accepted = expected.iter().filter(|a| **a).count() as u64;
        assert_eq!(*read.borrow(), Some((Some(3), accepted)), "mode {mode:?}");
        let attempts = world
            .history()
            .events()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::ResourceWrite { .. }))
            .count();
        assert_eq!(attempts, 3, "every attempt is recorded, accepted or not");
    }
}

#[test]
fn bad_input_gets_a_clear_error_and_the_server_keeps_serving() {
    let mut world = fixed_latency_world(6);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    let replies: Rc<RefCell<Vec<String>>> = Rc::default();
    let out = replies.clone();
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            // A malformed frame on a raw connection: a bulk length that is not a number.
            let mut raw = node.connect("redis-1", REDIS_PORT).await.unwrap();
            raw.write_all(b"*1\r\n$abc\r\nPING\r\n").await.unwrap();
            let mut buf = vec![0u8; 256];
            let n = raw.read(&mut buf).await.unwrap();
            out.borrow_mut().push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let redis = link(&node, "redis-1", 1_000);
            let attempts = [
                redis::cmd("FOO").arg("a").clone(),
                redis::cmd("GET").clone(),
                redis::cmd("EVAL").arg("return nil + 1").arg(0).clone(),
                redis::cmd("EVAL").arg("while true do end").arg(0).clone(),
                redis::cmd("PING").clone(),
            ];
            for cmd in attempts {
                let reply = redis.query::<redis::Value>(&cmd).await;
                out.borrow_mut().push(format!("{reply:?}"));
            }
        })
        .unwrap();
    world.run(&FaultPlan::default()).unwrap();
    let got = replies.borrow();
    assert!(got[0].starts_with("-ERR Protocol error"), "{}", got[0]);
    assert!(got[1].contains("unknown command"), "{}", got[1]);
    assert!(
        got[2].contains("wrong number of arguments for 'get' command"),
        "{}",
        got[2]
    );
    assert!(got[3].contains("ERR") && got[3].contains("arithmetic"), "{}", got[3]);
    assert!(got[4].contains("ERR"), "the runaway script is stopped: {}", got[4]);
    assert!(got[5].contains("PONG"), "the server still serves: {}", got[5]);
}

#[test]
fn faults_naming_unknown_nodes_are_rejected_before_the_run() {
    let mut world = fixed_latency_world(7);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    world.add_client("c", ClockSpec::default(), |_node| async {}).unwrap();
    let plan = FaultPlan::new(vec![at(10, Fault::Crash { node: "c".into() })]);
    let err = world.run(&plan).unwrap_err().to_string();
    assert!(err.contains("only Redis masters"), "{err}");
    let plan = FaultPlan::new(vec![at(
        10,
        Fault::Pause {
            node: "ghost".into(),
            duration_ms: 1,
        },
    )]);
    let err = world.run(&plan).unwrap_err().to_string();
    assert!(err.contains("unknown node `ghost`"), "{err}");
}

#[test]
fn a_crashed_master_restarts_empty() {
    let mut world = fixed_latency_world(8);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    let seen: Rc<RefCell<Vec<String>>> = Rc::default();
    let out = seen.clone();
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            let r = link(&node, "redis-1", 200);
            let _: Option<String> = r.query(redis::cmd("SET").arg("k").arg("v")).await.unwrap();
            sleep_until_true_ms(&node, 1_500).await;
            // The old connection died with the process; the link reconnects on a later request.
            for _ in 0..5 {
                match r.query::<Option<String>>(redis::cmd("GET").arg("k")).await {
                    Ok(v) => {
                        out.borrow_mut().push(format!("{v:?}"));
                        break;
                    }
                    Err(e) => out.borrow_mut().push(format!("err:{}", e.outcome_unknown())),
                }
            }
        })
        .unwrap();
    let plan = FaultPlan::new(vec![
        at(1_000, Fault::Crash { node: "redis-1".into() }),
        at(1_200, Fault::Restart { node: "redis-1".into() }),
    ]);
    world.run(&plan).unwrap();
    let seen = seen.borrow();
    assert_eq!(
        seen.last().map(String::as_str),
        Some("None"),
        "restarted empty: {seen:?}"
    );
}

#[test]
fn a_latency_fault_sets_a_range_per_link() {
    let mut world = fixed_latency_world(9);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    let rtts: Rc<RefCell<Vec<u64>>> = Rc::default();
    let out = rtts.clone();
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            let r = link(&node, "redis-1", 10_000);
            let _: String = r.query(&redis::cmd("PING")).await.unwrap();
            sleep_until_true_ms(&node, 100).await;
            for _ in 0..30 {
                let start = node.true_time_us();
                let _: String = r.query(&redis::cmd("PING")).await.unwrap();
                out.borrow_mut().push((node.true_time_us() - start) / 1_000);
            }
        })
        .unwrap();
    let plan = FaultPlan::new(vec![at(
        50,
        Fault::Latency {
            a: "c".into(),
            b: "redis-1".into(),
            latency_ms: 30,
            max_latency_ms: Some(60),
        },
    )]);
    world.run(&plan).unwrap();
    let rtts = rtts.borrow();
    assert!(rtts.iter().all(|&ms| (60..=122).contains(&ms)), "round trips {rtts:?}");
    assert!(
        rtts.iter().min() != rtts.iter().max(),
        "delays vary within the range: {rtts:?}"
    );
}

#[test]
fn a_dropped_reply_leaves_the_set_applied_while_the_client_times_out() {
    let mut world = fixed_latency_world(21);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    let seen: Rc<RefCell<Vec<String>>> = Rc::default();
    let out = seen.clone();
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            let r = link(&node, "redis-1", 200);
            // Connect first, so that the dropped reply is the SET's.
            let _: String = r.query(&redis::cmd("PING")).await.unwrap();
            sleep_until_true_ms(&node, 100).await;
            let set = redis::cmd("SET")
                .arg("k")
                .arg("v")
                .arg("NX")
                .arg("PX")
                .arg(10_000)
                .clone();
            match r.query::<Option<String>>(&set).await {
                Ok(v) => out.borrow_mut().push(format!("ok:{v:?}")),
                Err(e) => out.borrow_mut().push(format!("unknown:{}", e.outcome_unknown())),
            }
            // The link reconnects; the server answers the new connection.
            let again = r.query::<Option<String>>(&set).await;
            out.borrow_mut().push(format!("{again:?}"));
            let got = r.query::<Option<String>>(redis::cmd("GET").arg("k")).await;
            out.borrow_mut().push(format!("{got:?}"));
        })
        .unwrap();
    let plan = FaultPlan::new(vec![at(
        50,
        Fault::DropReply {
            node: "redis-1".into(),
            client: Some("c".into()),
            count: 1,
        },
    )]);
    let end = world.run(&plan).unwrap();
    assert!(end.clients_finished);
    let seen = seen.borrow();
    assert_eq!(seen[0], "unknown:true", "the client saw a timeout: {seen:?}");
    assert_eq!(seen[1], "Ok(None)", "NX refused: the first SET did apply: {seen:?}");
    assert_eq!(seen[2], "Ok(Some(\"v\"))", "{seen:?}");
    let keyspace = world.keyspace("redis-1").unwrap();
    assert!(
        keyspace.iter().any(|(k, _)| &k[..] == b"k"),
        "the key is set on the server"
    );
    // The history has the fault, the SET as the server ran it, then the lost reply.
    let history = world.history();
    let events = history.events();
    let fault_at = events
        .iter()
        .position(|e| {
            matches!(
                &e.kind,
                EventKind::Fault {
                    fault: Fault::DropReply { .. }
                }
            )
        })
        .expect("the fault is logged");
    assert_eq!(events[fault_at].node, "redis-1");
    let set_at = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::Command { args, reply, .. } if args[0] == "SET" && reply == "+OK"))
        .expect("the SET ran");
    assert!(set_at > fault_at);
    match &events[set_at + 1].kind {
        EventKind::Note { text } => {
            assert!(
                text.starts_with("reply dropped (drop-reply): `SET k v NX PX 10000` from c"),
                "{text}"
            );
            assert!(text.contains("+OK"), "{text}");
        }
        other => panic!("expected the lost reply's note, got {other:?}"),
    }
    let drops = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Note { text } if text.starts_with("reply dropped")))
        .count();
    assert_eq!(drops, 1, "count = 1 drops one reply");
}

#[test]
fn a_drop_reply_fault_is_checked_against_the_roles() {
    let mut world = fixed_latency_world(22);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    world.add_client("c", ClockSpec::default(), |_node| async {}).unwrap();
    let drop = |node: &str, client: Option<&str>, count: u32| {
        FaultPlan::new(vec![at(
            10,
            Fault::DropReply {
                node: node.into(),
                client: client.map(String::from),
                count,
            },
        )])
    };
    let err = world.validate_plan(&drop("c", None, 1)).unwrap_err().to_string();
    assert!(
        err.contains(
            "field `node`: only a server (a master, a replica or the resource) drops replies; `c` is a client"
        ),
        "{err}"
    );
    let err = world
        .validate_plan(&drop("redis-1", Some("redis-1"), 1))
        .unwrap_err()
        .to_string();
    assert!(err.contains("field `client`"), "{err}");
    let err = world
        .validate_plan(&drop("redis-1", Some("ghost"), 1))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("field `client`: unknown node `ghost` (nodes: redis-1, c)"),
        "{err}"
    );
    let err = world.validate_plan(&drop("redis-1", None, 0)).unwrap_err().to_string();
    assert!(err.contains("field `count`"), "{err}");
    world.validate_plan(&drop("redis-1", Some("c"), 2)).unwrap();
    let err = world.run(&drop("c", Some("c"), 1)).unwrap_err().to_string();
    assert!(err.contains("drops replies"), "{err}");
}

#[test]
fn the_resource_can_lose_a_reply_too_and_the_write_stands() {
    let mut world = fixed_latency_world(23);
    world
        .add_resource("resource", FencingMode::Fenced, ClockSpec::default())
        .unwrap();
    let seen: Rc<RefCell<Vec<String>>> = Rc::default();
    let out = seen.clone();
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            let timeouts = LinkTimeouts {
                connect_timeout_ms: 1_000,
                request_timeout_ms: 200,
            };
            let resource = ResourceClient::new(&node, "resource", timeouts);
            let _ = resource.read("k", None).await.unwrap();
            sleep_until_true_ms(&node, 100).await;
            let first = resource.write("k", 1, Some(5)).await;
            out.borrow_mut()
                .push(format!("{:?}", first.map_err(|e| e.outcome_unknown())));
            let read = resource.read("k", None).await;
            out.borrow_mut().push(format!("{read:?}"));
        })
        .unwrap();
    // No `client`: whichever client's request comes first.
    let plan = FaultPlan::new(vec![at(
        50,
        Fault::DropReply {
            node: "resource".into(),
            client: None,
            count: 1,
        },
    )]);
    world.run(&plan).unwrap();
    let seen = seen.borrow();
    assert_eq!(seen[0], "Err(true)", "outcome unknown: {seen:?}");
    assert_eq!(seen[1], "Ok((Some(1), 1))", "the write was applied: {seen:?}");
}

/// A 60-second world of `seed` and `tick_ms` with one client, whose software gets its node and
/// a list to record true times in; returns the times it recorded and how the clock got there.
fn timed_client<F, Fut>(seed: u64, tick_ms: u64, skip_idle: bool, software: F) -> (Vec<u64>, lockstep_sim::RunEnd)
where
    F: FnOnce(Node, Rc<RefCell<Vec<u64>>>) -> Fut + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let mut w = World::new(WorldConfig {
        seed,
        duration_ms: 60_000,
        tick_ms,
        skip_idle,
        ..WorldConfig::default()
    })
    .expect("valid config");
    let readings: Rc<RefCell<Vec<u64>>> = Rc::default();
    let out = readings.clone();
    w.add_client("client", ClockSpec::default(), move |node| software(node, out))
        .unwrap();
    let end = w.run(&FaultPlan::default()).unwrap();
    let readings = readings.borrow().clone();
    (readings, end)
}

/// A client that waits 40 simulated seconds: first through its node (a timer the world knows),
/// then on the runtime directly (one it does not), recording the true time after each; `tick_ms`
/// sets the step.
fn long_idle_sleeps(skip_idle: bool, tick_ms: u64) -> (Vec<u64>, lockstep_sim::RunEnd) {
    timed_client(3, tick_ms, skip_idle, |node, out| async move {
        node.sleep_local_ms(20_000).await;
        out.borrow_mut().push(node.true_time_us());
        tokio::time::sleep(Duration::from_micros(20_000_500)).await;
        out.borrow_mut().push(node.true_time_us());
    })
}

/// How many times [`periodic_wakes`]' client wakes.
const WAKES: u64 = 5;

/// A client that wakes `WAKES` times, a simulated second apart, through its node's timer (one
/// the world knows), and records the true time of each wake.
fn periodic_wakes(skip_idle: bool) -> (Vec<u64>, lockstep_sim::RunEnd) {
    timed_client(4, 1, skip_idle, |node, out| async move {
        for _ in 0..WAKES {
            node.sleep_local_ms(1_000).await;
            out.borrow_mut().push(node.true_time_us());
        }
    })
}

#[test]
fn a_step_that_ran_tasks_is_followed_by_a_jump_when_no_timer_fired_at_its_end() {
    let (stepped, every_tick) = periodic_wakes(false);
    let (jumped, skipping) = periodic_wakes(true);
    assert_eq!(jumped, stepped, "the same wakes either way");
    assert_eq!(jumped.len() as u64, WAKES);
    assert_eq!(skipping.at_ms, every_tick.at_ms);
    // The first step, then per wake the step whose end its timer fires at and the step that runs
    // the task: the task arms its next timer a second ahead, so nothing is left ready at that
    // step's end and the world jumps at once instead of stepping an idle tick first.
    assert_eq!(skipping.clock.steps, 1 + 2 * WAKES, "{:?}", skipping.clock);
    assert_eq!(
        skipping.clock.steps + skipping.clock.ticks_skipped,
        every_tick.clock.steps,
        "every tick is either stepped or skipped"
    );
}

#[test]
fn idle_time_is_jumped_over_and_every_timer_still_fires_in_the_tick_it_falls_in() {
    for tick_ms in [1, 3] {
        let (stepped, every_tick) = long_idle_sleeps(false, tick_ms);
        let (jumped, skipping) = long_idle_sleeps(true, tick_ms);
        assert_eq!(jumped, stepped, "tick {tick_ms}: the same readings either way");
        assert_eq!(skipping.at_ms, every_tick.at_ms);
        // 40 s of idle time: a few steps instead of one per tick.
        assert_eq!(every_tick.clock.steps, every_tick.at_ms / tick_ms);
        assert!(skipping.clock.steps < 10, "tick {tick_ms}: {:?}", skipping.clock);
        assert_eq!(
            skipping.clock.steps + skipping.clock.ticks_skipped,
            every_tick.clock.steps,
            "every tick is either stepped or skipped"
        );
        // The runtime timer nobody registered stopped a jump where it fired.
        assert!(skipping.clock.jumps_stopped >= 1, "{:?}", skipping.clock);
    }
    // The reading after the unregistered sleep is the end of the tick it fell in.
    let (readings, _) = long_idle_sleeps(true, 3);
    assert_eq!(readings[1] % 3_000, 0, "{readings:?}");
    assert!(readings[1] >= readings[0] + 20_000_500, "{readings:?}");
}

/// Sends one command on a raw simulated connection and returns the next write of the server (one
/// segment: the replies of one batch, or one push).
async fn raw_call(stream: &mut lockstep_sim::SimStream, args: &[&str]) -> String {
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream.write_all(out.as_bytes()).await.unwrap();
    raw_read(stream).await
}

async fn raw_read(stream: &mut lockstep_sim::SimStream) -> String {
    let mut buf = vec![0u8; 4096];
    let n = stream.read(&mut buf).await.unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn publish_reaches_subscribers_in_resp2_and_resp3_and_by_pattern_and_blpop_blocks_for_its_timeout() {
    let mut world = fixed_latency_world(8);
    world.add_master("redis-1", ClockSpec::default()).unwrap();
    let got: Rc<RefCell<Vec<String>>> = Rc::default();
    let out = got.clone();
    world
        .add_client("c", ClockSpec::default(), move |node| async move {
            let push = |s: String| out.borrow_mut().push(s);
            let mut resp2 = node.connect("redis-1", REDIS_PORT).await.unwrap();
            push(raw_call(&mut resp2, &["SUBSCRIBE", "ch"]).await);
            let mut resp3 = node.connect("redis-1", REDIS_PORT).await.unwrap();
            raw_call(&mut resp3, &["HELLO", "3"]).await;
            push(raw_call(&mut resp3, &["SUBSCRIBE", "ch"]).await);
            let mut pattern = node.connect("redis-1", REDIS_PORT).await.unwrap();
            push(raw_call(&mut pattern, &["PSUBSCRIBE", "c*"]).await);
            let mut publisher = node.connect("redis-1", REDIS_PORT).await.unwrap();
            push(raw_call(&mut publisher, &["PUBLISH", "ch", "hi"]).await);
            push(raw_read(&mut resp2).await);
            push(raw_read(&mut resp3).await);
            push(raw_read(&mut pattern).await);
            let started_ms = node.wall_ms();
            push(raw_call(&mut publisher, &["BLPOP", "k", "2"]).await);
            push(format!("{}", node.wall_ms() - started_ms));
        })
        .unwrap();
    world.run(&FaultPlan::default()).unwrap();
    let got = got.borrow();
    assert_eq!(
        got[..7],
        [
            "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
            ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
            "*3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:1\r\n",
            ":3\r\n",
            "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
            ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
            "*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$2\r\nhi\r\n",
        ]
    );
    assert_eq!(got[7], "*-1\r\n");
    // 2 s blocked on the server, plus 2 ms of latency each way.
    let waited_ms: i64 = got[8].parse().unwrap();
    assert!((2000..=2010).contains(&waited_ms), "{waited_ms}");
}
