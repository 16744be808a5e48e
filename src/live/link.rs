//! Links: one loopback listener per (client, server) pair, and the network faults applied to the
//! bytes that cross it.
//!
//! Every client gets its own port for every server, so the server knows who is talking (the
//! resource records the writer by name, as in the simulation) and a fault can cut one link only.
//! lockstep owns both ends: the bytes read from the client's socket go through the link's
//! client→server direction into the server's command loop, and the replies through the
//! server→client direction back to the socket — there is no second TCP hop.
//!
//! Per direction: `latency` delays every chunk (order kept); `hold` keeps chunks until `release`;
//! `partition` silently drops them and leaves the connection dead — nothing more crosses it, like
//! a TCP connection that lost a segment in the simulated network — until the client opens a new one (which
//! stays silent while the partition lasts); `loss` resets a connection with the given
//! probability per chunk. A stopped server resets its connections and closes new ones at once.
//! Everything binds to 127.0.0.1.
//!
//! A link to a replicated master is the client's address for the replication group (named after
//! the master it was defined with), as a Sentinel-aware client's: a promotion re-points it to the
//! promoted replica (`Link::repoint`) and closes its open connections, as a failover does; the
//! connections opened afterwards reach the new master.
//!
//! A connection to a server lockstep serves is served by the one server loop of the simulation
//! ([`lockstep_sim::redis::server`], over an in-memory stream behind the link's faults): the same
//! framing, blocking commands (`BLPOP`/`BRPOP` block for their timeout and wake on a push, `WAIT`
//! blocks on the replicas), pub/sub pushes (RESP2 and RESP3), sessions and scripting.
//!
//! Any local process can connect, so nothing here trusts what a client declares: commands are
//! read by [`lockstep_sim::redis::CommandReader`] (Redis' limits and error texts; a protocol error
//! is answered, then the connection closes), and every byte a connection holds — in the link, in
//! the query buffer, in replies not yet written — is counted by [`super::buffers`] as it arrives;
//! past a limit the connection is closed and the run goes on.

use super::buffers::{ConnBuffers, RunBuffers};
use super::resp::MAX_CLIENTS_REPLY;
use super::server::Server;
use bytes::Bytes;
use lockstep_sim::redis::server::{
    serve_stream, ConnectionBudget, ConnectionEnd, ConnectionOptions, Framing, LocalFuture, Response,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

/// The fault state of one direction of a link.
#[derive(Debug, Default)]
pub struct Direction {
    /// Chunks are dropped and the connection goes dead.
    pub partitioned: Cell<bool>,
    /// Chunks wait for a release.
    pub held: Cell<bool>,
    /// Fixed delay per chunk, ms.
    pub latency_ms: Cell<u64>,
    /// Probability per chunk that the connection is reset, parts per million.
    pub loss_ppm: Cell<u32>,
}

/// One client's link to one server.
pub struct Link {
    /// The client.
    pub client: String,
    /// The server the client knows: the master's name (the replication group's).
    pub group: String,
    /// The server its connections reach now (the group's current master).
    server: RefCell<Rc<Server>>,
    /// client → server.
    pub up: Direction,
    /// server → client.
    pub down: Direction,
    /// The listening address.
    pub addr: SocketAddr,
    rng: RefCell<ChaCha8Rng>,
    /// Close signals of the open connections.
    conns: RefCell<Vec<watch::Sender<bool>>>,
}

impl Link {
    /// The direction from `from` to the other end.
    pub fn direction(&self, from: &str) -> &Direction {
        if from == self.client {
            &self.up
        } else {
            &self.down
        }
    }

    /// The server new connections reach.
    pub fn server(&self) -> Rc<Server> {
        self.server.borrow().clone()
    }

    /// Re-points the link to `server` (a promoted replica) and closes its open connections.
    pub(crate) fn repoint(&self, server: Rc<Server>) {
        *self.server.borrow_mut() = server;
        self.reset_connections();
    }

    /// Resets every open connection (a server stop).
    pub(crate) fn reset_connections(&self) {
        for tx in self.conns.borrow_mut().drain(..) {
            let _ = tx.send(true);
        }
    }

    fn lose(&self, dir: &Direction) -> bool {
        let ppm = dir.loss_ppm.get();
        ppm > 0 && self.rng.borrow_mut().random_range(0..1_000_000u32) < ppm
    }
}

/// Binds the listener of a link on 127.0.0.1 (`port` 0: a free port).
pub async fn bind(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port)).await
}

/// Makes a link on `listener` and serves it until the run ends; its connections count against
/// the run's `buffers`.
pub fn serve(
    listener: TcpListener,
    client: &str,
    server: Rc<Server>,
    seed: u64,
    buffers: Rc<RunBuffers>,
) -> std::io::Result<Rc<Link>> {
    let link = Rc::new(Link {
        client: client.to_string(),
        group: server.name().to_string(),
        server: RefCell::new(server),
        up: Direction::default(),
        down: Direction::default(),
        addr: listener.local_addr()?,
        rng: RefCell::new(ChaCha8Rng::seed_from_u64(seed)),
        conns: RefCell::new(Vec::new()),
    });
    let l = link.clone();
    tokio::task::spawn_local(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of file descriptors, most likely: the pending connection stays queued
                    // and accept fails again at once, so wait instead of spinning the run's thread.
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            if !l.server().is_running() {
                // A stopped server: the connection is refused (closed at once).
                drop(stream);
                continue;
            }
            let Some(account) = buffers.open() else {
                // As Redis past `maxclients`: the error, then the connection is closed.
                let _ = stream.try_write(MAX_CLIENTS_REPLY);
                drop(stream);
                continue;
            };
            let (tx, rx) = watch::channel(false);
            l.conns.borrow_mut().retain(|c| !c.is_closed() && !*c.borrow());
            l.conns.borrow_mut().push(tx);
            tokio::task::spawn_local(connection(l.clone(), stream, rx, account));
        }
    });
    Ok(link)
}

/// How long the accept loop waits after a failed accept.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// The most bytes read from a socket at once: a chunk of the link.
const CHUNK_BYTES: usize = 16 * 1024;

/// How long a connection closed after a protocol error lingers: its error reply is written and
/// the write side shut, and what the client still sends is read and thrown away, so that the
/// client reads the error before the socket is closed (closing a socket with unread input resets
/// it, and a reset can destroy the reply in the client's kernel before the client reads it).
const LINGER: Duration = Duration::from_secs(1);

/// Waits until `at`, and then while `dir` is held.
async fn deliver_when_due(dir: &Direction, at: Instant) {
    let now = Instant::now();
    if at > now {
        tokio::time::sleep(at - now).await;
    }
    while dir.held.get() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// What happens to a chunk entering a direction.
enum Entry {
    Pass(Instant),
    Drop,
    Reset,
}

fn enter(link: &Link, dir: &Direction, dead: &Cell<bool>) -> Entry {
    if dead.get() {
        return Entry::Drop;
    }
    if dir.partitioned.get() {
        dead.set(true);
        return Entry::Drop;
    }
    if link.lose(dir) {
        return Entry::Reset;
    }
    Entry::Pass(Instant::now() + Duration::from_millis(dir.latency_ms.get()))
}

/// One direction of a connection: its link, which way it goes, and the state its two ends share.
struct Pump {
    link: Rc<Link>,
    /// client → server (`true`) or server → client.
    up: bool,
    /// Set once a partition cut the connection: nothing more crosses it, either way.
    dead: Rc<Cell<bool>>,
    /// Signalled to reset the connection (a fault, a limit).
    reset_tx: watch::Sender<bool>,
    account: Rc<ConnBuffers>,
    /// Told once `from` reached its end (the client hung up).
    hangup: Option<watch::Sender<bool>>,
    /// Once set, what arrives is read and thrown away (a connection closing after an error).
    closing: Option<Rc<Cell<bool>>>,
}

impl Pump {
    fn direction(&self) -> &Direction {
        if self.up {
            &self.link.up
        } else {
            &self.link.down
        }
    }

    fn add(&self, n: usize) -> bool {
        if self.up {
            self.account.add_up(n)
        } else {
            self.account.add_down(n)
        }
    }

    fn sub(&self, n: usize) {
        if self.up {
            self.account.sub_up(n)
        } else {
            self.account.sub_down(n)
        }
    }

    fn closing(&self) -> bool {
        self.closing.as_ref().is_some_and(|c| c.get())
    }
}

/// Copies bytes from `from` to `to` through one direction of a link, with its faults — the one
/// pump of every connection (relayed to a real `redis-server`, or served by the server loop):
/// a reader task takes each chunk through the direction's faults (partition, loss) and counts it
/// against the connection's account (past a limit the connection is reset); a writer task
/// delivers it once due (latency, hold) and, once `from` ended and everything was delivered,
/// shuts `to`'s write side.
fn pump<R, W>(pump: Pump, mut from: R, mut to: W) -> (tokio::task::JoinHandle<()>, tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + 'static,
    W: AsyncWrite + Unpin + 'static,
{
    let pump = Rc::new(pump);
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Bytes)>();
    let reader = {
        let pump = pump.clone();
        tokio::task::spawn_local(async move {
            let mut buf = vec![0u8; CHUNK_BYTES];
            loop {
                let n = match from.read(&mut buf).await {
                    Ok(0) | Err(_) => {
                        if let Some(hangup) = &pump.hangup {
                            let _ = hangup.send(true);
                        }
                        return;
                    }
                    Ok(n) => n,
                };
                if pump.closing() {
                    continue;
                }
                match enter(&pump.link, pump.direction(), &pump.dead) {
                    Entry::Pass(at) => {
                        if !pump.add(n) {
                            let _ = pump.reset_tx.send(true);
                            return;
                        }
                        if tx.send((at, Bytes::copy_from_slice(&buf[..n]))).is_err() {
                            pump.sub(n);
                            if pump.closing() {
                                continue;
                            }
                            return;
                        }
                    }
                    Entry::Drop => {}
                    Entry::Reset => {
                        let _ = pump.reset_tx.send(true);
                        return;
                    }
                }
            }
        })
    };
    let writer = tokio::task::spawn_local(async move {
        while let Some((at, bytes)) = rx.recv().await {
            deliver_when_due(pump.direction(), at).await;
            if pump.dead.get() {
                pump.sub(bytes.len());
                continue;
            }
            let written = to.write_all(&bytes).await.is_ok();
            pump.sub(bytes.len());
            if !written {
                return;
            }
        }
        // `from` ended: so does what `to` is told.
        let _ = to.shutdown().await;
    });
    (reader, writer)
}

/// A connection to a master served by a real `redis-server` on `port`: bytes are relayed.
async fn proxy(
    link: Rc<Link>,
    stream: TcpStream,
    port: u16,
    mut closed: watch::Receiver<bool>,
    account: Rc<ConnBuffers>,
) {
    let Ok(upstream) = TcpStream::connect(("127.0.0.1", port)).await else {
        return;
    };
    let _ = upstream.set_nodelay(true);
    let (client_rd, client_wr) = stream.into_split();
    let (server_rd, server_wr) = upstream.into_split();
    let dead = Rc::new(Cell::new(false));
    let (reset_tx, mut reset_rx) = watch::channel(false);
    let direction = |up: bool| Pump {
        link: link.clone(),
        up,
        dead: dead.clone(),
        reset_tx: reset_tx.clone(),
        account: account.clone(),
        hangup: None,
        closing: None,
    };
    let (up_read, up_write) = pump(direction(true), client_rd, server_wr);
    let (down_read, down_write) = pump(direction(false), server_rd, client_wr);
    let aborts = [
        up_read.abort_handle(),
        up_write.abort_handle(),
        down_read.abort_handle(),
        down_write.abort_handle(),
    ];
    tokio::select! {
        biased;
        _ = closed.changed() => {}
        _ = reset_rx.changed() => {}
        _ = account.closed() => {}
        _ = async {
            // Either side closed: deliver what is in flight, then close both.
            tokio::select! {
                biased;
                _ = up_read => { let _ = up_write.await; }
                _ = down_read => { let _ = down_write.await; }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        } => {}
    }
    for a in aborts {
        a.abort();
    }
}

async fn connection(link: Rc<Link>, stream: TcpStream, closed: watch::Receiver<bool>, account: Rc<ConnBuffers>) {
    if let Some(port) = link.server().real_port() {
        return proxy(link, stream, port, closed, account).await;
    }
    engine_connection(link, stream, closed, account).await
}

/// How the server side of an engine connection ended.
enum ServerEnd {
    /// The client's input ended (it closed its socket): the replies drain.
    InputEnded,
    /// A protocol error: its reply is queued, the connection is to be closed after it.
    CloseAfterReply,
    /// The connection is reset (a fault, a server stop, a limit); `reset_tx` was signalled.
    Reset,
}

/// The connection's byte account as the server loop's budget: what its query buffer holds, and
/// whether its replies still fit.
struct Budget(Rc<ConnBuffers>);

impl ConnectionBudget for Budget {
    fn query_held(&self, bytes: usize) -> bool {
        self.0.set_query(bytes)
    }

    fn output_held(&self, bytes: usize) -> bool {
        !self.0.output_full(bytes)
    }
}

/// A connection to a server lockstep serves: the socket's bytes cross the link's faults into an
/// in-memory stream, on whose other end the one server loop ([`lockstep_sim::redis::server`]) serves them
/// (blocking commands, pub/sub pushes, scripting — exactly as in the simulation); its replies cross
/// back the same way.
async fn engine_connection(
    link: Rc<Link>,
    stream: TcpStream,
    mut closed: watch::Receiver<bool>,
    account: Rc<ConnBuffers>,
) {
    // The server this connection reaches, for its whole life (a promotion closes it).
    let server = link.server();
    let generation = server.generation();
    let conn = server.next_conn();
    // What `CLIENT LIST` shows and `CLIENT KILL ADDR|LADDR` matches: the real sockets' addresses.
    let addr = stream.peer_addr().ok().map(|a| a.to_string());
    let laddr = stream.local_addr().ok().map(|a| a.to_string());
    let dead = Rc::new(Cell::new(false));
    // After a protocol error: what the client still sends is read and thrown away.
    let closing = Rc::new(Cell::new(false));
    let (rd, wr) = stream.into_split();
    let (reset_tx, mut reset_rx) = watch::channel(false);
    // Set once the client's socket reached its end (a blocked command is then abandoned).
    let (hangup_tx, hangup_rx) = watch::channel(false);
    // The link's end and the server loop's end of the connection.
    let (link_end, loop_end) = tokio::io::duplex(CHUNK_BYTES);
    let (from_server, to_server) = tokio::io::split(link_end);

    // Client → server: the socket's bytes, counted as they arrive (nothing is allocated for
    // what a command declares), into the server loop's input once due; the client's hang-up is
    // told to the server loop (a blocked command is then abandoned).
    let (mut reader, delivery) = pump(
        Pump {
            link: link.clone(),
            up: true,
            dead: dead.clone(),
            reset_tx: reset_tx.clone(),
            account: account.clone(),
            hangup: Some(hangup_tx),
            closing: Some(closing.clone()),
        },
        rd,
        to_server,
    );

    // Server: the one server loop on the other end of the in-memory stream.
    let mut server_task = {
        let server = server.clone();
        let account = account.clone();
        let closing = closing.clone();
        let reset_tx = reset_tx.clone();
        let peer = link.client.clone();
        tokio::task::spawn_local(async move {
            let alive = {
                let server = server.clone();
                Rc::new(move || server.is_running() && server.generation() == generation)
            };
            let hangup: Rc<dyn Fn() -> LocalFuture<()>> = Rc::new(move || {
                let mut hung_up = hangup_rx.clone();
                Box::pin(async move {
                    if hung_up.wait_for(|ended| *ended).await.is_err() {
                        // The reader is gone without a hang-up: the connection is being torn down.
                        std::future::pending::<()>().await;
                    }
                })
            });
            let options = ConnectionOptions {
                framing: Framing::Redis,
                alive: Some(alive),
                budget: Some(Rc::new(Budget(account))),
                forget_on_abort: true,
                hangup: Some(hangup),
                addr,
                laddr,
            };
            let end = match server.redis() {
                Some(redis) => redis.clone().serve_connection(loop_end, conn, &peer, options).await,
                None => {
                    let host = server.host();
                    let answer = |args: &[Bytes]| Response::Now(server.execute_resource(&peer, args));
                    serve_stream(&host, loop_end, conn, &peer, &answer, None, &options).await
                }
            };
            match end {
                Ok(ConnectionEnd::InputEnded | ConnectionEnd::ReplyDropped) => ServerEnd::InputEnded,
                Ok(ConnectionEnd::ProtocolError | ConnectionEnd::Quit | ConnectionEnd::Killed) => {
                    // From now on the reader throws the client's bytes away.
                    closing.set(true);
                    ServerEnd::CloseAfterReply
                }
                Ok(ConnectionEnd::OverLimit | ConnectionEnd::Stopped) | Err(_) => {
                    let _ = reset_tx.send(true);
                    ServerEnd::Reset
                }
            }
        })
    };

    // Server → client: the server loop's replies, counted as they are queued, to the socket;
    // once the server side is done, the socket's write side is shut (the client reads the end
    // after the last reply).
    let (replies, mut writer) = pump(
        Pump {
            link: link.clone(),
            up: false,
            dead,
            reset_tx: reset_tx.clone(),
            account: account.clone(),
            hangup: None,
            closing: None,
        },
        from_server,
        wr,
    );

    let aborts = [
        reader.abort_handle(),
        delivery.abort_handle(),
        server_task.abort_handle(),
        replies.abort_handle(),
        writer.abort_handle(),
    ];
    let end = tokio::select! {
        biased;
        _ = closed.changed() => None,
        _ = reset_rx.changed() => None,
        _ = account.closed() => None,
        end = &mut server_task => end.ok(),
    };
    match end {
        Some(ServerEnd::InputEnded) => {
            // The client closed its socket: what it sent was still in the network and arrived
            // (once a hold was released); let the replies drain.
            let _ = tokio::time::timeout(Duration::from_millis(20), &mut writer).await;
        }
        Some(ServerEnd::CloseAfterReply) => {
            let deadline = tokio::time::Instant::now() + LINGER;
            let _ = tokio::time::timeout_at(deadline, &mut writer).await;
            let _ = tokio::time::timeout_at(deadline, &mut reader).await;
        }
        Some(ServerEnd::Reset) | None => {}
    }
    // Dropping the halves (inside the aborted tasks) closes the socket.
    for a in aborts {
        a.abort();
    }
}
