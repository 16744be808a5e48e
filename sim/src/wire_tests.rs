//! Unit tests of the simulated network on its own: no world, no runtime. Futures are polled by
//! hand with a no-op waker and time is moved with [`Wire::advance_to`], so each test states
//! exactly when a segment is due and what each end sees at every instant.

use super::*;
use futures_util::FutureExt;
use proptest::prelude::*;
use std::future::Future;
use std::pin::pin;
use tokio::io::AsyncWriteExt;

const PORT: u16 = 6379;
const LATENCY_US: u64 = 1_000;

/// A network of two hosts, `a` (clients) and `b` (a listener on [`PORT`]), with a fixed latency.
struct Net {
    wire: Wire,
    listener: SimListener,
}

/// What one read of an end found.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    /// Bytes (all that were buffered).
    Data(Vec<u8>),
    /// Nothing yet.
    Pending,
    /// End of stream (the peer sent FIN).
    Eof,
    /// The connection was reset.
    Reset,
}

fn poll_once<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

impl Net {
    fn new(seed: u64) -> Self {
        let wire = Wire::new(Seed(seed), LATENCY_US, LATENCY_US);
        wire.add_host("a");
        wire.add_host("b");
        let listener = wire.bind("b", PORT).expect("bind");
        Net { wire, listener }
    }

    fn now_us(&self) -> u64 {
        self.wire.lock().now_us
    }

    fn advance_by(&self, us: u64) {
        self.wire.advance_to(self.now_us() + us);
    }

    /// Opens a connection from `a` and accepts it on `b`: one one-way delay.
    fn open(&self) -> (SimStream, SimStream) {
        let mut connect = pin!(self.wire.connect("a", "b", PORT));
        assert!(
            poll_once(connect.as_mut()).is_pending(),
            "a connect waits for its SYN to arrive"
        );
        self.advance_by(LATENCY_US);
        let client = match poll_once(connect.as_mut()) {
            Poll::Ready(Ok(stream)) => stream,
            other => panic!("connect after one delay: {other:?}"),
        };
        let (server, peer) = self
            .listener
            .accept()
            .now_or_never()
            .expect("the connection waits in the backlog")
            .expect("accept");
        assert_eq!(peer, "a");
        (client, server)
    }

    /// Whether a connect from `a` is refused once its SYN has arrived.
    fn connect_is_refused(&self) -> bool {
        let mut connect = pin!(self.wire.connect("a", "b", PORT));
        let _ = poll_once(connect.as_mut());
        self.advance_by(LATENCY_US);
        matches!(poll_once(connect.as_mut()), Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused)
    }
}

fn send(stream: &mut SimStream, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes).now_or_never().expect("writes never wait")
}

/// Reads everything `stream` has now.
fn read(stream: &mut SimStream) -> Read {
    let mut data = Vec::new();
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        let mut buf = [0u8; 64];
        let mut read_buf = ReadBuf::new(&mut buf);
        match Pin::new(&mut *stream).poll_read(&mut cx, &mut read_buf) {
            Poll::Ready(Ok(())) if read_buf.filled().is_empty() => {
                return if data.is_empty() { Read::Eof } else { Read::Data(data) };
            }
            Poll::Ready(Ok(())) => data.extend_from_slice(read_buf.filled()),
            Poll::Ready(Err(e)) => {
                assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
                return if data.is_empty() { Read::Reset } else { Read::Data(data) };
            }
            Poll::Pending => {
                return if data.is_empty() {
                    Read::Pending
                } else {
                    Read::Data(data)
                }
            }
        }
    }
}

#[test]
fn bytes_arrive_after_their_latency_in_the_order_sent() {
    let net = Net::new(1);
    let (mut client, mut server) = net.open();
    send(&mut client, b"ab").unwrap();
    send(&mut client, b"cd").unwrap();
    net.advance_by(LATENCY_US - 1);
    assert_eq!(read(&mut server), Read::Pending, "nothing arrives before it is due");
    net.advance_by(1);
    assert_eq!(read(&mut server), Read::Data(b"abcd".to_vec()));
    send(&mut server, b"ok").unwrap();
    net.advance_by(LATENCY_US);
    assert_eq!(read(&mut client), Read::Data(b"ok".to_vec()));
    drop(client);
    net.advance_by(LATENCY_US);
    assert_eq!(read(&mut server), Read::Eof, "a close reaches the peer as FIN");
}

#[test]
fn a_one_way_partition_drops_one_direction_and_leaves_it_dead() {
    let net = Net::new(2);
    let (mut client, mut server) = net.open();
    net.wire.partition("a", "b", true, true);
    send(&mut client, b"lost").unwrap();
    send(&mut server, b"reply").unwrap();
    net.advance_by(10 * LATENCY_US);
    assert_eq!(read(&mut server), Read::Pending, "a → b is cut");
    assert_eq!(read(&mut client), Read::Data(b"reply".to_vec()), "b → a still carries");

    net.wire.partition("a", "b", true, false);
    send(&mut client, b"after").unwrap();
    net.advance_by(10 * LATENCY_US);
    assert_eq!(
        read(&mut server),
        Read::Pending,
        "no retransmission: a direction that lost a segment stays dead after the heal"
    );
    let (mut client2, mut server2) = net.open();
    send(&mut client2, b"new").unwrap();
    net.advance_by(LATENCY_US);
    assert_eq!(
        read(&mut server2),
        Read::Data(b"new".to_vec()),
        "a new connection crosses the healed link"
    );
}

#[test]
fn a_partition_both_ways_drops_both_directions_and_connects() {
    let net = Net::new(3);
    let (mut client, mut server) = net.open();
    net.wire.partition("a", "b", false, true);
    send(&mut client, b"x").unwrap();
    send(&mut server, b"y").unwrap();
    net.advance_by(10 * LATENCY_US);
    assert_eq!(read(&mut server), Read::Pending);
    assert_eq!(read(&mut client), Read::Pending);
    let mut connect = pin!(net.wire.connect("a", "b", PORT));
    let _ = poll_once(connect.as_mut());
    net.advance_by(10 * LATENCY_US);
    assert!(
        poll_once(connect.as_mut()).is_pending(),
        "a SYN into a partition is never answered"
    );
}

#[test]
fn a_held_link_keeps_everything_then_delivers_it_in_order_on_release() {
    let net = Net::new(4);
    let (mut client, mut server) = net.open();
    net.wire.hold("a", "b", true);
    send(&mut client, b"1").unwrap();
    send(&mut client, b"2").unwrap();
    send(&mut server, b"r").unwrap();
    net.advance_by(60 * LATENCY_US);
    assert_eq!(read(&mut server), Read::Pending, "held, not lost");
    assert_eq!(read(&mut client), Read::Pending, "a hold acts both ways");
    net.wire.hold("a", "b", false);
    assert_eq!(
        read(&mut server),
        Read::Data(b"12".to_vec()),
        "released at once, in order"
    );
    assert_eq!(read(&mut client), Read::Data(b"r".to_vec()));
    send(&mut client, b"3").unwrap();
    net.advance_by(LATENCY_US);
    assert_eq!(
        read(&mut server),
        Read::Data(b"3".to_vec()),
        "the connection lives on after a release"
    );
}

#[test]
fn loss_drops_segments_at_its_rate_and_by_the_seed_alone() {
    fn delivered(seed: u64, loss_ppm: u32) -> Vec<bool> {
        let net = Net::new(seed);
        let mut conns: Vec<(SimStream, SimStream)> = (0..200).map(|_| net.open()).collect();
        net.wire.set_loss("a", "b", loss_ppm);
        for (client, _) in &mut conns {
            send(client, b"x").unwrap();
        }
        net.advance_by(LATENCY_US);
        conns
            .iter_mut()
            .map(|(_, server)| match read(server) {
                Read::Data(bytes) => {
                    assert_eq!(bytes, b"x");
                    true
                }
                Read::Pending => false,
                other => panic!("a lost segment is silent, not {other:?}"),
            })
            .collect()
    }
    assert!(delivered(5, 0).iter().all(|d| *d), "no loss: everything arrives");
    assert!(
        delivered(5, 1_000_000).iter().all(|d| !*d),
        "total loss: nothing arrives"
    );
    let half = delivered(5, 500_000);
    let arrived = half.iter().filter(|d| **d).count();
    assert!(
        (60..=140).contains(&arrived),
        "about half of 200 arrive at 50 % loss: {arrived}"
    );
    assert_eq!(half, delivered(5, 500_000), "the same seed loses the same segments");
    assert_ne!(half, delivered(6, 500_000), "another seed loses others");
}

#[test]
fn a_crash_closes_the_sockets_resets_later_writes_and_refuses_connects() {
    let net = Net::new(7);
    let (mut client, server) = net.open();
    net.wire.crash("b");
    net.advance_by(LATENCY_US);
    assert_eq!(read(&mut client), Read::Eof, "the dead process's socket closed: FIN");
    send(&mut client, b"late").unwrap();
    // Its arrival answers RST, which takes one more delay back.
    net.advance_by(LATENCY_US);
    net.advance_by(LATENCY_US);
    assert_eq!(
        read(&mut client),
        Read::Reset,
        "bytes to a closed socket are answered with RST"
    );
    assert!(send(&mut client, b"again").is_err(), "a write after a reset fails");
    assert!(net.connect_is_refused(), "a crashed host listens on nothing");
    drop(server);
}

#[test]
fn a_connect_to_a_port_nobody_listens_on_is_refused() {
    let net = Net::new(8);
    drop(net.listener);
    let net = Net {
        listener: net.wire.bind("b", PORT + 1).expect("another port"),
        wire: net.wire,
    };
    assert!(net.connect_is_refused());
}

/// One step of a random schedule of traffic and link faults.
#[derive(Debug, Clone)]
enum Step {
    Send {
        from_client: bool,
        len: usize,
    },
    Partition {
        oneway: bool,
        client_to_server: bool,
        on: bool,
    },
    Hold {
        on: bool,
    },
    Loss {
        ppm: u32,
    },
    Latency {
        min_us: u64,
        max_us: u64,
    },
    Advance {
        us: u64,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (any::<bool>(), 1usize..16).prop_map(|(from_client, len)| Step::Send { from_client, len }),
        1 => (any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(oneway, client_to_server, on)| Step::Partition { oneway, client_to_server, on }),
        1 => any::<bool>().prop_map(|on| Step::Hold { on }),
        1 => prop_oneof![Just(0u32), 0u32..1_000_000].prop_map(|ppm| Step::Loss { ppm }),
        1 => (0u64..5_000, 0u64..5_000).prop_map(|(min_us, max_us)| Step::Latency { min_us, max_us }),
        3 => (0u64..5_000).prop_map(|us| Step::Advance { us }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the faults, each end receives a prefix of what the other sent, in order, with
    /// nothing duplicated or invented; and with no drop (no partition, no loss) everything
    /// arrives once holds are released.
    #[test]
    fn random_link_faults_never_reorder_duplicate_or_invent_bytes(
        seed in any::<u64>(),
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let net = Net::new(seed);
        let (mut client, mut server) = net.open();
        let mut sent = [Vec::new(), Vec::new()]; // [client → server, server → client]
        let mut got = [Vec::new(), Vec::new()];
        let mut counter = 0u8;
        let mut dropping_ever = false;
        for step in steps {
            match step {
                Step::Send { from_client, len } => {
                    let bytes: Vec<u8> = (0..len).map(|_| { counter = counter.wrapping_add(1); counter }).collect();
                    let (stream, dir) = if from_client { (&mut client, 0) } else { (&mut server, 1) };
                    send(stream, &bytes).unwrap();
                    sent[dir].extend_from_slice(&bytes);
                }
                Step::Partition { oneway, client_to_server, on } => {
                    dropping_ever |= on;
                    let (a, b) = if client_to_server { ("a", "b") } else { ("b", "a") };
                    net.wire.partition(a, b, oneway, on);
                }
                Step::Hold { on } => net.wire.hold("a", "b", on),
                Step::Loss { ppm } => {
                    dropping_ever |= ppm > 0;
                    net.wire.set_loss("a", "b", ppm);
                }
                Step::Latency { min_us, max_us } => net.wire.set_latency("a", "b", min_us, max_us),
                Step::Advance { us } => net.advance_by(us),
            }
            for (dir, stream) in [(1, &mut client), (0, &mut server)] {
                match read(stream) {
                    Read::Data(bytes) => got[dir].extend_from_slice(&bytes),
                    Read::Pending => {}
                    other => prop_assert!(false, "no close or reset was sent: {other:?}"),
                }
                prop_assert!(sent[dir].starts_with(&got[dir]), "dir {dir}: got {:?}, sent {:?}", got[dir], sent[dir]);
            }
        }
        net.wire.hold("a", "b", false);
        net.wire.partition("a", "b", false, false);
        net.wire.set_loss("a", "b", 0);
        net.advance_by(60_000_000);
        for (dir, stream) in [(1, &mut client), (0, &mut server)] {
            if let Read::Data(bytes) = read(stream) {
                got[dir].extend_from_slice(&bytes);
            }
            prop_assert!(sent[dir].starts_with(&got[dir]));
            if !dropping_ever {
                prop_assert_eq!(&got[dir], &sent[dir], "nothing was dropped, so everything arrives");
            }
        }
    }
}
