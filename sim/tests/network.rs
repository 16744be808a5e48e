//! The simulated network (`lockstep_sim::wire`), end to end through nodes: a connect costs one
//! one-way delay, bytes keep their order, a refused or unknown target is an error, a partition
//! swallows a SYN and kills a connection that lost a segment, a hold delivers everything in order
//! at its release, a crash closes the peer's connection, and the delays come from the seed.

use lockstep_sim::{ClockSpec, Fault, FaultPlan, Node, ScheduledFault, World, WorldConfig, REDIS_PORT};
use std::cell::RefCell;
use std::io::ErrorKind;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PORT: u16 = 7000;

type Log = Rc<RefCell<Vec<String>>>;

fn world(seed: u64, min_latency_ms: u64, max_latency_ms: u64) -> World {
    World::new(WorldConfig {
        seed,
        duration_ms: 10_000,
        min_latency_ms,
        max_latency_ms,
        ..WorldConfig::default()
    })
    .expect("valid config")
}

fn at(at_ms: u64, fault: Fault) -> ScheduledFault {
    ScheduledFault { at_ms, fault }
}

fn ms(node: &Node) -> u64 {
    node.true_time_us() / 1_000
}

async fn sleep_until_ms(node: &Node, at_ms: u64) {
    let now_us = node.true_time_us();
    if now_us < at_ms * 1_000 {
        tokio::time::sleep(Duration::from_micros(at_ms * 1_000 - now_us)).await;
    }
}

/// Node `server` accepts connections on [`PORT`] for `serve_ms` and logs what each reads, with
/// the true ms, until the peer closes or the connection fails.
fn add_echo_logger(world: &mut World, log: &Log, serve_ms: u64) {
    let log = log.clone();
    world
        .add_client("server", ClockSpec::default(), move |node| async move {
            let listener = node.bind(PORT).expect("bind");
            let accepting = async {
                loop {
                    let (mut stream, peer) = listener.accept().await.expect("accept");
                    log.borrow_mut().push(format!("{} accepted {peer}", ms(&node)));
                    let log = log.clone();
                    let reader = node.clone();
                    node.spawn(async move {
                        let mut buf = vec![0u8; 64];
                        loop {
                            match stream.read(&mut buf).await {
                                Ok(0) => {
                                    log.borrow_mut().push(format!("{} eof", ms(&reader)));
                                    return;
                                }
                                Ok(n) => log.borrow_mut().push(format!(
                                    "{} read {}",
                                    ms(&reader),
                                    String::from_utf8_lossy(&buf[..n])
                                )),
                                Err(e) => {
                                    log.borrow_mut().push(format!("{} error {:?}", ms(&reader), e.kind()));
                                    return;
                                }
                            }
                        }
                    });
                }
            };
            let _ = node.timeout_local_ms(serve_ms, accepting).await;
        })
        .expect("server");
}

fn lines(log: &Log) -> Vec<String> {
    log.borrow().clone()
}

#[test]
fn a_connect_costs_one_way_and_bytes_arrive_in_order_after_the_delay() {
    let mut w = world(1, 3, 3);
    let log: Log = Rc::default();
    add_echo_logger(&mut w, &log, 100);
    let out = log.clone();
    w.add_client("client", ClockSpec::default(), move |node| async move {
        sleep_until_ms(&node, 10).await;
        let mut stream = node.connect("server", PORT).await.expect("connect");
        out.borrow_mut().push(format!("{} connected", ms(&node)));
        for word in ["a", "b", "c"] {
            stream.write_all(word.as_bytes()).await.expect("write");
        }
        sleep_until_ms(&node, 30).await;
        drop(stream);
    })
    .unwrap();
    w.run(&FaultPlan::default()).unwrap();
    // The SYN sent at 10 ms arrives 3 ms later, when the connect completes (one one-way delay);
    // the bytes written then arrive together, in order, 3 ms after; the close (FIN) at 30 ms is
    // read as EOF at 33 ms.
    assert_eq!(
        lines(&log),
        ["13 connected", "13 accepted client", "16 read abc", "33 eof"],
        "{:?}",
        lines(&log)
    );
}

#[test]
fn a_refused_or_unknown_target_is_an_error() {
    let mut w = world(1, 2, 2);
    let log: Log = Rc::default();
    let out = log.clone();
    w.add_client("client", ClockSpec::default(), move |node| async move {
        let refused = node.connect("other", PORT).await.unwrap_err();
        out.borrow_mut().push(format!("{} {:?}", ms(&node), refused.kind()));
        let unknown = node.connect("nowhere", PORT).await.unwrap_err();
        out.borrow_mut().push(format!("{} {:?}", ms(&node), unknown.kind()));
    })
    .unwrap();
    w.add_client("other", ClockSpec::default(), |_| async {}).unwrap();
    w.run(&FaultPlan::default()).unwrap();
    assert_eq!(
        lines(&log),
        [
            format!("3 {:?}", ErrorKind::ConnectionRefused),
            format!("3 {:?}", ErrorKind::NotFound)
        ]
    );
}

#[test]
fn a_partition_swallows_a_syn_and_kills_a_connection_that_lost_a_segment() {
    let mut w = world(1, 2, 2);
    let log: Log = Rc::default();
    add_echo_logger(&mut w, &log, 400);
    let out = log.clone();
    w.add_client("client", ClockSpec::default(), move |node| async move {
        let mut before = node.connect("server", PORT).await.expect("connect");
        before.write_all(b"1").await.unwrap();
        sleep_until_ms(&node, 100).await;
        // Partitioned from 100 to 200 ms: this segment is lost, and so is the connection.
        before.write_all(b"2").await.unwrap();
        let syn = node.timeout_local_ms(50, node.connect("server", PORT)).await;
        out.borrow_mut()
            .push(format!("{} connect during partition: {}", ms(&node), syn.is_err()));
        sleep_until_ms(&node, 250).await;
        before.write_all(b"3").await.unwrap();
        let mut after = node.connect("server", PORT).await.expect("connect after heal");
        after.write_all(b"4").await.unwrap();
        sleep_until_ms(&node, 300).await;
    })
    .unwrap();
    let plan = FaultPlan {
        faults: vec![
            at(
                100,
                Fault::Partition {
                    a: "client".into(),
                    b: "server".into(),
                    oneway: false,
                },
            ),
            at(
                200,
                Fault::Heal {
                    a: "client".into(),
                    b: "server".into(),
                    oneway: false,
                },
            ),
        ],
    };
    w.run(&plan).unwrap();
    let got = lines(&log);
    assert!(got.contains(&"5 read 1".to_string()), "{got:?}");
    assert!(
        got.iter().any(|l| l.ends_with("connect during partition: true")),
        "{got:?}"
    );
    // "2" was dropped, so "3" on the same connection never arrives; "4" on a new one does.
    assert!(
        !got.iter().any(|l| l.contains("read 2") || l.contains("read 3")),
        "{got:?}"
    );
    assert!(got.iter().any(|l| l.contains("read 4")), "{got:?}");
    assert_eq!(got.iter().filter(|l| l.contains("accepted")).count(), 2, "{got:?}");
}

#[test]
fn a_hold_delivers_everything_at_its_release_in_order() {
    let mut w = world(1, 2, 2);
    let log: Log = Rc::default();
    add_echo_logger(&mut w, &log, 400);
    w.add_client("client", ClockSpec::default(), move |node| async move {
        let mut stream = node.connect("server", PORT).await.expect("connect");
        sleep_until_ms(&node, 50).await;
        for word in ["x", "y", "z"] {
            stream.write_all(word.as_bytes()).await.unwrap();
            node.sleep_local_ms(10).await;
        }
        sleep_until_ms(&node, 300).await;
    })
    .unwrap();
    let (a, b) = ("client".to_string(), "server".to_string());
    let plan = FaultPlan {
        faults: vec![
            at(
                40,
                Fault::Hold {
                    a: a.clone(),
                    b: b.clone(),
                },
            ),
            at(200, Fault::Release { a, b }),
        ],
    };
    w.run(&plan).unwrap();
    let got = lines(&log);
    assert!(got.contains(&"201 read xyz".to_string()), "{got:?}");
}

#[test]
fn a_crashed_servers_connections_are_closed_and_it_refuses_until_restarted() {
    let mut w = world(1, 2, 2);
    w.add_master("redis-1", ClockSpec::default()).unwrap();
    let log: Log = Rc::default();
    let out = log.clone();
    w.add_client("client", ClockSpec::default(), move |node| async move {
        let mut stream = node.connect("redis-1", REDIS_PORT).await.expect("connect");
        let mut buf = vec![0u8; 64];
        // Crashed at 50 ms: the kernel closes its sockets, the client reads EOF 2 ms later.
        let n = stream.read(&mut buf).await.expect("read");
        out.borrow_mut().push(format!("{} read {n}", ms(&node)));
        let refused = node.connect("redis-1", REDIS_PORT).await.unwrap_err();
        out.borrow_mut().push(format!("{} {:?}", ms(&node), refused.kind()));
        sleep_until_ms(&node, 150).await;
        let mut again = node.connect("redis-1", REDIS_PORT).await.expect("restarted");
        again.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
        let n = again.read(&mut buf).await.expect("reply");
        out.borrow_mut()
            .push(format!("{} {}", ms(&node), String::from_utf8_lossy(&buf[..n]).trim()));
    })
    .unwrap();
    let plan = FaultPlan {
        faults: vec![
            at(50, Fault::Crash { node: "redis-1".into() }),
            at(100, Fault::Restart { node: "redis-1".into() }),
        ],
    };
    w.run(&plan).unwrap();
    assert_eq!(
        lines(&log),
        [
            "52 read 0".to_string(),
            format!("54 {:?}", ErrorKind::ConnectionRefused),
            "156 +PONG".to_string()
        ]
    );
}

/// The true ms at which each of 20 one-byte messages arrived.
fn arrival_times(seed: u64) -> Vec<String> {
    let mut w = world(seed, 1, 40);
    let log: Log = Rc::default();
    add_echo_logger(&mut w, &log, 2_000);
    w.add_client("client", ClockSpec::default(), move |node| async move {
        let mut stream = node.connect("server", PORT).await.expect("connect");
        for _ in 0..20 {
            stream.write_all(b".").await.unwrap();
            node.sleep_local_ms(5).await;
        }
        sleep_until_ms(&node, 1_000).await;
    })
    .unwrap();
    w.run(&FaultPlan::default()).unwrap();
    lines(&log)
}

#[test]
fn delays_come_from_the_seed_and_never_reorder_a_connection() {
    let one = arrival_times(7);
    assert_eq!(one, arrival_times(7), "same seed, same arrivals");
    assert_ne!(one, arrival_times(8), "another seed, other delays");
    let bytes: usize = one
        .iter()
        .filter_map(|l| l.split_once(" read ").map(|(_, data)| data.len()))
        .sum();
    assert_eq!(bytes, 20, "{one:?}");
    let times: Vec<u64> = one
        .iter()
        .filter(|l| l.contains(" read "))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{one:?}");
}
