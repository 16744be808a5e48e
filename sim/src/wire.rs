//! The simulated network: TCP-like connections between named nodes, with per-link delay, loss,
//! partitions and holds, all drawn from the run's seed.
//!
//! **What it models.** A connection is opened with a SYN that crosses the network and is
//! accepted by the listening node or refused (no listener on that port, a crashed process); the
//! connecting end learns the answer as soon as the SYN arrives (a connect costs one one-way
//! delay, not a round trip: the timing the shipped scenarios were written against); bytes travel as segments, each delayed by its link's latency and delivered in the
//! order they were sent on their connection; a close sends FIN (the peer reads end of stream),
//! bytes sent to a closed or crashed endpoint are answered with RST (the peer's next read or
//! write fails with `ConnectionReset`). A process crash closes every socket of the node, as the
//! kernel does when a process dies, and stops its listeners.
//!
//! **Faults.** A partitioned link (both ways, or one way) drops what it carries; a dropped
//! segment leaves its connection silently dead in that direction (nothing after it is
//! delivered), because the simulated TCP never retransmits — a real client notices through its
//! timeouts, as [`crate::redis::link::RedisLink`] does. A held link keeps every segment until it is
//! released, then delivers them in order. A link's latency can be fixed or bounded, and a loss
//! rate drops each segment with that probability.
//!
//! **Delay.** Each segment's one-way delay is `min + (max − min) · min(1, X)`, X exponential with
//! mean 1/5, so most delays are short and a few reach the maximum, the shape of real network
//! delay (the curve of turmoil, the simulator lockstep ran on before this module). Delivery happens at the world's
//! step boundaries; the next segment's due time is one of the deadlines the world's event clock
//! jumps to (`Wire::next_due_us`). Each direction of each link draws its delays and losses from a ChaCha stream
//! of its own (`network/FROM/TO` of the run's seed): what one client sends never shifts the draws
//! of another client's link, so two locks compared on one seed meet the same network wherever
//! their own traffic does not differ.
//!
//! **Cost.** Sending and delivering a segment cost O(log n) in the segments in flight; links are
//! stored only once a fault names them. Nothing here scans every node or every link, so the cost
//! of an event does not grow with the size of the world.
//!
//! **What it leaves out.** No retransmission, congestion, flow control or window (buffers are
//! unbounded), no half-open detection by keepalive, no ports on the client side, no IP
//! addresses: nodes are named.
//!
//! The state sits behind an `Arc<Mutex<_>>` because redis-rs requires its streams to be `Send`;
//! a simulation runs on one thread, so the lock is never contended.

use bytes::{Buf, BytesMut};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::seed::Seed;

/// A node's index in the network.
pub(crate) type HostId = u32;

/// The two ends of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The end that connected.
    Client,
    /// The end that accepted.
    Server,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Server => 1,
        }
    }

    fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// What a segment carries.
#[derive(Debug)]
enum Payload {
    /// Open a connection to a port of the receiving node.
    Syn { port: u16 },
    /// Bytes.
    Data(Vec<u8>),
    /// The sender will send nothing more.
    Fin,
    /// The connection is refused or reset.
    Rst,
}

/// What a recorded segment carried ([`SentSegment`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentWhat {
    /// The connect (a SYN) to this port of the accepting node.
    Connect {
        /// The port.
        port: u16,
    },
    /// Bytes.
    Data {
        /// How many.
        bytes: usize,
    },
    /// A FIN: the sender will send nothing more.
    Close,
    /// A refusal or reset.
    Reset,
}

/// One segment as a node sent it, recorded by the network once asked
/// ([`crate::World::record_wire`]): what a replay needs to route the same packets again, with
/// no Redis, client library or history behind them (`lockstep bench`'s floor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentSegment {
    /// True time it was sent, µs.
    pub sent_us: u64,
    /// Its connection, numbered in the order connects began.
    pub conn: u64,
    /// The node that opened the connection.
    pub client: String,
    /// The node that accepted it.
    pub server: String,
    /// Whether the connecting end sent it.
    pub from_client: bool,
    /// What it carried.
    pub what: SegmentWhat,
}

/// A [`SentSegment`] as the network keeps it while recording (hosts by index).
#[derive(Debug, Clone, Copy)]
struct Sent {
    sent_us: u64,
    conn: u64,
    from: HostId,
    to: HostId,
    to_side: Side,
    what: SegmentWhat,
}

#[derive(Debug)]
struct Segment {
    at_us: u64,
    seq: u64,
    from: HostId,
    to: HostId,
    conn: u64,
    /// The end the segment is for.
    to_side: Side,
    payload: Payload,
}

// The heap pops the earliest delivery first; among equal instants, the segment sent first.
impl PartialEq for Segment {
    fn eq(&self, other: &Self) -> bool {
        (self.at_us, self.seq) == (other.at_us, other.seq)
    }
}
impl Eq for Segment {}
impl PartialOrd for Segment {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Segment {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at_us, other.seq).cmp(&(self.at_us, self.seq))
    }
}

/// The state of one connect, as the connecting end sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handshake {
    Pending,
    Established,
    Refused,
}

#[derive(Debug)]
struct Endpoint {
    host: HostId,
    /// Bytes received and not read yet.
    rx: BytesMut,
    /// The peer sent FIN.
    rx_eof: bool,
    /// The peer sent RST.
    reset: bool,
    /// This end is closed (dropped, crashed, or a connect abandoned).
    closed: bool,
    /// This end sent FIN.
    write_shut: bool,
    /// A segment towards this end was dropped: nothing more is delivered to it.
    dead: bool,
    /// When the last segment towards this end is due (segments of a connection keep their order).
    last_at_us: u64,
    /// The send order of the last segment delivered to this end (the self-check that a
    /// connection's bytes arrive in the order sent).
    last_arrived_seq: Option<u64>,
    waker: Option<Waker>,
}

impl Endpoint {
    fn new(host: HostId) -> Self {
        Endpoint {
            host,
            rx: BytesMut::new(),
            rx_eof: false,
            reset: false,
            closed: false,
            write_shut: false,
            dead: false,
            last_at_us: 0,
            last_arrived_seq: None,
            waker: None,
        }
    }

    fn wake(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

#[derive(Debug)]
struct Conn {
    ends: [Endpoint; 2],
    handshake: Handshake,
}

#[derive(Debug)]
struct Listener {
    id: u64,
    backlog: std::collections::VecDeque<u64>,
    waker: Option<Waker>,
}

/// The faults set on one direction of a link.
#[derive(Debug, Clone, Copy, Default)]
struct LinkState {
    partitioned: bool,
    held: bool,
    /// `(min, max)` delay in µs, replacing the default.
    latency_us: Option<(u64, u64)>,
    loss_ppm: u32,
}

struct WireState {
    now_us: u64,
    /// The run's seed: each link direction draws delays and losses from a stream of its own
    /// (`network/FROM/TO`), so one client's traffic never shifts another link's draws — two locks
    /// compared on one seed meet the same network wherever their traffic does not differ.
    seed: Seed,
    /// The streams drawn so far, per direction.
    rngs: BTreeMap<(HostId, HostId), ChaCha8Rng>,
    default_latency_us: (u64, u64),
    names: Vec<String>,
    ids: BTreeMap<String, HostId>,
    /// Faults per direction `(from, to)`; absent: a healthy link.
    links: BTreeMap<(HostId, HostId), LinkState>,
    listeners: BTreeMap<(HostId, u16), Listener>,
    conns: BTreeMap<u64, Conn>,
    in_flight: BinaryHeap<Segment>,
    /// Segments kept by a held link, per unordered pair, in the order they were due.
    held: BTreeMap<(HostId, HostId), Vec<Segment>>,
    next_seq: u64,
    next_conn: u64,
    next_listener: u64,
    /// Every segment sent, once recording is on ([`Wire::record`]).
    sent: Option<Vec<Sent>>,
}

impl WireState {
    fn link(&self, from: HostId, to: HostId) -> LinkState {
        self.links.get(&(from, to)).copied().unwrap_or_default()
    }

    fn link_mut(&mut self, from: HostId, to: HostId) -> &mut LinkState {
        self.links.entry((from, to)).or_default()
    }

    /// The random stream of the direction `from → to`.
    fn rng(&mut self, from: HostId, to: HostId) -> &mut ChaCha8Rng {
        let (seed, names) = (self.seed, &self.names);
        self.rngs.entry((from, to)).or_insert_with(|| {
            let name = |id: HostId| names.get(id as usize).map_or("?", String::as_str);
            seed.stream(&format!("network/{}/{}", name(from), name(to)))
        })
    }

    fn delay_us(&mut self, from: HostId, to: HostId) -> u64 {
        let (min_us, max_us) = self.link(from, to).latency_us.unwrap_or(self.default_latency_us);
        if max_us <= min_us {
            return min_us;
        }
        // Exponential with rate 5 by inversion; `1 - u` is in (0, 1], so the logarithm is finite.
        let u: f64 = self.rng(from, to).random();
        let x = (-(1.0 - u).ln() / 5.0).min(1.0);
        min_us + ((max_us - min_us) as f64 * x) as u64
    }

    /// Sends a segment from `side` of `conn` (or a SYN) towards the other side.
    fn send(&mut self, from: HostId, to: HostId, conn: u64, to_side: Side, payload: Payload) {
        if let Some(sent) = self.sent.as_mut() {
            let what = match &payload {
                Payload::Syn { port } => SegmentWhat::Connect { port: *port },
                Payload::Data(bytes) => SegmentWhat::Data { bytes: bytes.len() },
                Payload::Fin => SegmentWhat::Close,
                Payload::Rst => SegmentWhat::Reset,
            };
            sent.push(Sent {
                sent_us: self.now_us,
                conn,
                from,
                to,
                to_side,
                what,
            });
        }
        let link = self.link(from, to);
        let lost =
            link.partitioned || (link.loss_ppm > 0 && self.rng(from, to).random_range(0..1_000_000u32) < link.loss_ppm);
        if lost {
            self.kill_direction(conn, to_side);
            return;
        }
        let mut at_us = self.now_us.saturating_add(self.delay_us(from, to));
        if let Some(end) = self.conns.get_mut(&conn).map(|c| &mut c.ends[to_side.index()]) {
            if end.dead {
                return;
            }
            at_us = at_us.max(end.last_at_us);
            end.last_at_us = at_us;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight.push(Segment {
            at_us,
            seq,
            from,
            to,
            conn,
            to_side,
            payload,
        });
    }

    fn kill_direction(&mut self, conn: u64, to_side: Side) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.ends[to_side.index()].dead = true;
        }
    }

    /// Delivers every segment due by now.
    fn deliver_due(&mut self) {
        while self.in_flight.peek().is_some_and(|s| s.at_us <= self.now_us) {
            let Some(segment) = self.in_flight.pop() else { break };
            let link = self.link(segment.from, segment.to);
            if link.partitioned {
                self.kill_direction(segment.conn, segment.to_side);
            } else if link.held {
                let pair = (segment.from.min(segment.to), segment.from.max(segment.to));
                self.held.entry(pair).or_default().push(segment);
            } else {
                self.arrive(segment);
            }
        }
    }

    fn arrive(&mut self, segment: Segment) {
        let Segment {
            at_us,
            seq,
            from,
            to,
            conn,
            to_side,
            payload,
        } = segment;
        // The simulator checks itself: nothing arrives before it is due.
        assert!(
            at_us <= self.now_us,
            "simulator invariant: a segment due at {at_us} µs arrived at {} µs",
            self.now_us
        );
        if let Payload::Syn { port } = payload {
            return self.arrive_syn(to, conn, port);
        }
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let end = &mut c.ends[to_side.index()];
        if end.dead {
            return;
        }
        // The simulator checks itself: a connection's segments arrive in the order they were sent.
        assert!(
            end.last_arrived_seq.is_none_or(|last| last < seq),
            "simulator invariant: connection {conn} delivered segment {seq} after {:?}",
            end.last_arrived_seq
        );
        end.last_arrived_seq = Some(seq);
        match payload {
            Payload::Syn { .. } => {}
            Payload::Data(bytes) => {
                if end.closed {
                    self.send(to, from, conn, to_side.other(), Payload::Rst);
                } else {
                    end.rx.extend_from_slice(&bytes);
                    end.wake();
                }
            }
            Payload::Fin => {
                end.rx_eof = true;
                end.wake();
            }
            Payload::Rst => {
                if c.handshake == Handshake::Pending {
                    c.handshake = Handshake::Refused;
                }
                end.reset = true;
                end.wake();
            }
        }
        self.forget_if_done(conn);
    }

    /// A SYN arrives. The answer reaches the connecting end at once (see the module doc: the
    /// handshake costs one one-way delay).
    fn arrive_syn(&mut self, to: HostId, conn: u64, port: u16) {
        let Some(c) = self.conns.get_mut(&conn) else {
            // The connecting process gave up and forgot the connection.
            return;
        };
        let Some(listener) = self.listeners.get_mut(&(to, port)) else {
            c.handshake = Handshake::Refused;
            c.ends[Side::Client.index()].wake();
            self.forget_if_done(conn);
            return;
        };
        c.ends[Side::Server.index()] = Endpoint::new(to);
        c.handshake = Handshake::Established;
        c.ends[Side::Client.index()].wake();
        listener.backlog.push_back(conn);
        if let Some(waker) = listener.waker.take() {
            waker.wake();
        }
    }

    /// Closes one end: FIN to the peer unless already sent.
    fn close(&mut self, conn: u64, side: Side) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let end = &mut c.ends[side.index()];
        if end.closed {
            return;
        }
        end.closed = true;
        let (from, to) = (end.host, c.ends[side.other().index()].host);
        let send_fin = !std::mem::replace(&mut c.ends[side.index()].write_shut, true);
        if send_fin && c.handshake == Handshake::Established {
            self.send(from, to, conn, side.other(), Payload::Fin);
        }
        self.forget_if_done(conn);
    }

    /// Forgets a connection once both ends are closed and nothing is in flight to it that could
    /// matter (late segments to a forgotten connection are ignored, as a closed socket's are).
    fn forget_if_done(&mut self, conn: u64) {
        if self.conns.get(&conn).is_some_and(|c| c.ends.iter().all(|e| e.closed)) {
            self.conns.remove(&conn);
        }
    }
}

/// The network of one world. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Wire {
    state: Arc<Mutex<WireState>>,
}

impl Wire {
    /// A network whose links delay each segment by `min_latency_us..=max_latency_us`.
    pub(crate) fn new(seed: Seed, min_latency_us: u64, max_latency_us: u64) -> Self {
        Wire {
            state: Arc::new(Mutex::new(WireState {
                now_us: 0,
                seed,
                rngs: BTreeMap::new(),
                default_latency_us: (min_latency_us, max_latency_us),
                names: Vec::new(),
                ids: BTreeMap::new(),
                links: BTreeMap::new(),
                listeners: BTreeMap::new(),
                conns: BTreeMap::new(),
                in_flight: BinaryHeap::new(),
                held: BTreeMap::new(),
                next_seq: 0,
                next_conn: 0,
                next_listener: 0,
                sent: None,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, WireState> {
        // One thread: a poisoned lock only means a panic is already unwinding the run.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds a node named `name` (idempotent).
    pub(crate) fn add_host(&self, name: &str) -> HostId {
        let mut state = self.lock();
        if let Some(id) = state.ids.get(name) {
            return *id;
        }
        let id = state.names.len() as HostId;
        state.names.push(name.to_string());
        state.ids.insert(name.to_string(), id);
        id
    }

    fn id(&self, name: &str) -> Option<HostId> {
        self.lock().ids.get(name).copied()
    }

    /// Moves the network's time to `now_us` and delivers what is due by then.
    pub(crate) fn advance_to(&self, now_us: u64) {
        let mut state = self.lock();
        state.now_us = state.now_us.max(now_us);
        state.deliver_due();
    }

    /// When the next segment in flight is due, true µs (held segments wait for their release, a
    /// fault).
    pub(crate) fn next_due_us(&self) -> Option<u64> {
        self.lock().in_flight.peek().map(|s| s.at_us)
    }

    /// Records every segment sent from now on (kept until [`Wire::take_record`]).
    pub(crate) fn record(&self) {
        self.lock().sent.get_or_insert_with(Vec::new);
    }

    /// The segments recorded so far, in the order they were sent; recording goes on.
    pub(crate) fn take_record(&self) -> Vec<SentSegment> {
        let mut state = self.lock();
        let sent = state.sent.as_mut().map(std::mem::take).unwrap_or_default();
        let name = |id: HostId| state.names.get(id as usize).cloned().unwrap_or_default();
        sent.into_iter()
            .map(|s| {
                let from_client = s.to_side == Side::Server;
                let (client, server) = if from_client { (s.from, s.to) } else { (s.to, s.from) };
                SentSegment {
                    sent_us: s.sent_us,
                    conn: s.conn,
                    client: name(client),
                    server: name(server),
                    from_client,
                    what: s.what,
                }
            })
            .collect()
    }

    /// Drops what `a` sends to `b` (and what `b` sends to `a` unless `oneway`).
    pub(crate) fn partition(&self, a: &str, b: &str, oneway: bool, partitioned: bool) {
        self.set_link(a, b, !oneway, |link| link.partitioned = partitioned);
    }

    /// Holds (or, with `held == false`, releases in order) what travels between `a` and `b`.
    pub(crate) fn hold(&self, a: &str, b: &str, held: bool) {
        self.set_link(a, b, true, |link| link.held = held);
        if held {
            return;
        }
        let (Some(a), Some(b)) = (self.id(a), self.id(b)) else {
            return;
        };
        let mut state = self.lock();
        let kept = state.held.remove(&(a.min(b), a.max(b))).unwrap_or_default();
        let now_us = state.now_us;
        for mut segment in kept {
            segment.at_us = segment.at_us.max(now_us);
            state.in_flight.push(segment);
        }
        state.deliver_due();
    }

    /// Fixes the delay between `a` and `b` (both ways) to `min_us..=max_us`.
    pub(crate) fn set_latency(&self, a: &str, b: &str, min_us: u64, max_us: u64) {
        self.set_link(a, b, true, |link| link.latency_us = Some((min_us, max_us.max(min_us))));
    }

    /// Drops each segment between `a` and `b` (both ways) with probability `rate_ppm / 10⁶`.
    pub(crate) fn set_loss(&self, a: &str, b: &str, rate_ppm: u32) {
        self.set_link(a, b, true, |link| link.loss_ppm = rate_ppm);
    }

    fn set_link(&self, a: &str, b: &str, both_ways: bool, change: impl Fn(&mut LinkState)) {
        let (Some(a), Some(b)) = (self.id(a), self.id(b)) else {
            return;
        };
        let mut state = self.lock();
        change(state.link_mut(a, b));
        if both_ways {
            change(state.link_mut(b, a));
        }
    }

    /// The process on `name` died: every socket it had is closed and its listeners are gone.
    pub(crate) fn crash(&self, name: &str) {
        let Some(host) = self.id(name) else {
            return;
        };
        let mut state = self.lock();
        let listeners: Vec<(HostId, u16)> = state.listeners.keys().filter(|(h, _)| *h == host).copied().collect();
        for key in listeners {
            if let Some(listener) = state.listeners.remove(&key) {
                // Accepted by the kernel, never by the process: reset.
                for conn in listener.backlog {
                    state.close(conn, Side::Server);
                }
            }
        }
        let ends: Vec<(u64, Side)> = state
            .conns
            .iter()
            .flat_map(|(id, c)| {
                [Side::Client, Side::Server]
                    .into_iter()
                    .filter(move |side| c.ends[side.index()].host == host && !c.ends[side.index()].closed)
                    .map(move |side| (*id, side))
            })
            .collect();
        for (conn, side) in ends {
            state.close(conn, side);
        }
    }

    /// Opens a connection from `from` to `to:port`.
    pub(crate) async fn connect(&self, from: &str, to: &str, port: u16) -> io::Result<SimStream> {
        let (Some(from), Some(to)) = (self.id(from), self.id(to)) else {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no host named `{to}`")));
        };
        let conn = {
            let mut state = self.lock();
            let conn = state.next_conn;
            state.next_conn += 1;
            // The accepting end exists once the SYN arrives; until then it counts as closed, so an
            // abandoned connect whose SYN was lost is forgotten at once.
            let mut server_end = Endpoint::new(to);
            server_end.closed = true;
            state.conns.insert(
                conn,
                Conn {
                    ends: [Endpoint::new(from), server_end],
                    handshake: Handshake::Pending,
                },
            );
            state.send(from, to, conn, Side::Server, Payload::Syn { port });
            conn
        };
        // Until the handshake ends, dropping this (a connect timeout) abandons the connection.
        let stream = SimStream {
            wire: self.clone(),
            conn,
            side: Side::Client,
        };
        std::future::poll_fn(|cx| {
            let mut state = self.lock();
            let Some(c) = state.conns.get_mut(&conn) else {
                return Poll::Ready(Err(refused()));
            };
            match c.handshake {
                Handshake::Established => Poll::Ready(Ok(())),
                Handshake::Refused => Poll::Ready(Err(refused())),
                Handshake::Pending => {
                    c.ends[0].waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await?;
        Ok(stream)
    }

    /// Listens on `port` of `host`.
    pub(crate) fn bind(&self, host: &str, port: u16) -> io::Result<SimListener> {
        let Some(host) = self.id(host) else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no host named `{host}`"),
            ));
        };
        let mut state = self.lock();
        if state.listeners.contains_key(&(host, port)) {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("port {port} is in use"),
            ));
        }
        let id = state.next_listener;
        state.next_listener += 1;
        state.listeners.insert(
            (host, port),
            Listener {
                id,
                backlog: Default::default(),
                waker: None,
            },
        );
        Ok(SimListener {
            wire: self.clone(),
            host,
            port,
            id,
        })
    }
}

fn refused() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, "connection refused")
}

/// A listening socket. Dropping it stops listening.
pub struct SimListener {
    wire: Wire,
    host: HostId,
    port: u16,
    id: u64,
}

impl SimListener {
    /// The next connection, with the name of the node that opened it.
    pub async fn accept(&self) -> io::Result<(SimStream, String)> {
        std::future::poll_fn(|cx| {
            let mut state = self.wire.lock();
            let state = &mut *state;
            let Some(listener) = state
                .listeners
                .get_mut(&(self.host, self.port))
                .filter(|l| l.id == self.id)
            else {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::NotConnected, "listener closed")));
            };
            match listener.backlog.pop_front() {
                Some(conn) => {
                    let peer = state
                        .conns
                        .get(&conn)
                        .map(|c| state.names[c.ends[0].host as usize].clone())
                        .unwrap_or_default();
                    Poll::Ready(Ok((
                        SimStream {
                            wire: self.wire.clone(),
                            conn,
                            side: Side::Server,
                        },
                        peer,
                    )))
                }
                None => {
                    listener.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}

impl Drop for SimListener {
    fn drop(&mut self) {
        let mut state = self.wire.lock();
        if state
            .listeners
            .get(&(self.host, self.port))
            .is_some_and(|l| l.id == self.id)
        {
            if let Some(listener) = state.listeners.remove(&(self.host, self.port)) {
                for conn in listener.backlog {
                    state.close(conn, Side::Server);
                }
            }
        }
    }
}

/// One end of a simulated connection: `AsyncRead + AsyncWrite`, so redis-rs and tokio's I/O
/// helpers run over it unchanged.
pub struct SimStream {
    wire: Wire,
    conn: u64,
    side: Side,
}

impl std::fmt::Debug for SimStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimStream")
            .field("conn", &self.conn)
            .field("side", &self.side)
            .finish()
    }
}

fn reset() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, "connection reset by peer")
}

impl AsyncRead for SimStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut state = self.wire.lock();
        let Some(c) = state.conns.get_mut(&self.conn) else {
            return Poll::Ready(Err(reset()));
        };
        let end = &mut c.ends[self.side.index()];
        if !end.rx.is_empty() {
            let n = end.rx.len().min(buf.remaining());
            buf.put_slice(&end.rx[..n]);
            end.rx.advance(n);
            return Poll::Ready(Ok(()));
        }
        if end.reset {
            return Poll::Ready(Err(reset()));
        }
        if end.rx_eof || end.closed {
            return Poll::Ready(Ok(()));
        }
        end.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl AsyncWrite for SimStream {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut state = self.wire.lock();
        let Some(c) = state.conns.get(&self.conn) else {
            return Poll::Ready(Err(reset()));
        };
        let end = &c.ends[self.side.index()];
        if end.reset {
            return Poll::Ready(Err(reset()));
        }
        if end.write_shut || end.closed {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "write after shutdown")));
        }
        let (from, to) = (end.host, c.ends[self.side.other().index()].host);
        state.send(from, to, self.conn, self.side.other(), Payload::Data(buf.to_vec()));
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut state = self.wire.lock();
        let Some(c) = state.conns.get_mut(&self.conn) else {
            return Poll::Ready(Ok(()));
        };
        let end = &mut c.ends[self.side.index()];
        if !std::mem::replace(&mut end.write_shut, true) && !end.closed {
            let (from, to) = (end.host, c.ends[self.side.other().index()].host);
            state.send(from, to, self.conn, self.side.other(), Payload::Fin);
        }
        Poll::Ready(Ok(()))
    }
}

impl Drop for SimStream {
    fn drop(&mut self) {
        let mut state = self.wire.lock();
        state.close(self.conn, self.side);
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
