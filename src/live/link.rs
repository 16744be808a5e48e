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
//! promoted replica ([`Link::repoint`]) and closes its open connections, as a failover does; the
//! connections opened afterwards reach the new master.

use super::server::Server;
use bytes::{Bytes, BytesMut};
use lockstep_sim::redis::{decode_command, encode_reply, ClientSession, Reply};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
    pub fn repoint(&self, server: Rc<Server>) {
        *self.server.borrow_mut() = server;
        self.reset_connections();
    }

    /// Resets every open connection (a server stop).
    pub fn reset_connections(&self) {
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

/// Makes a link on `listener` and serves it until the run ends.
pub fn serve(listener: TcpListener, client: &str, server: Rc<Server>, seed: u64) -> std::io::Result<Rc<Link>> {
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
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            if !l.server().is_running() {
                // A stopped server: the connection is refused (closed at once).
                drop(stream);
                continue;
            }
            let (tx, rx) = watch::channel(false);
            l.conns.borrow_mut().retain(|c| !c.is_closed() && !*c.borrow());
            l.conns.borrow_mut().push(tx);
            tokio::task::spawn_local(connection(l.clone(), stream, rx));
        }
    });
    Ok(link)
}

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

/// Copies bytes from `from` to `to` through one direction of `link`, with its faults.
fn pump(
    link: Rc<Link>,
    up: bool,
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    dead: Rc<Cell<bool>>,
    reset_tx: watch::Sender<bool>,
) -> (tokio::task::JoinHandle<()>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Bytes)>();
    let reader = {
        let link = link.clone();
        tokio::task::spawn_local(async move {
            let mut buf = BytesMut::with_capacity(4096);
            loop {
                buf.clear();
                match from.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let dir = if up { &link.up } else { &link.down };
                match enter(&link, dir, &dead) {
                    Entry::Pass(at) => {
                        if tx.send((at, buf.split().freeze())).is_err() {
                            return;
                        }
                    }
                    Entry::Drop => {}
                    Entry::Reset => {
                        let _ = reset_tx.send(true);
                        return;
                    }
                }
            }
        })
    };
    let writer = tokio::task::spawn_local(async move {
        while let Some((at, bytes)) = rx.recv().await {
            let dir = if up { &link.up } else { &link.down };
            deliver_when_due(dir, at).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
    });
    (reader, writer)
}

/// A connection to a master served by a real `redis-server` on `port`: bytes are relayed.
async fn proxy(link: Rc<Link>, stream: TcpStream, port: u16, mut closed: watch::Receiver<bool>) {
    let Ok(upstream) = TcpStream::connect(("127.0.0.1", port)).await else {
        return;
    };
    let _ = upstream.set_nodelay(true);
    let (client_rd, client_wr) = stream.into_split();
    let (server_rd, server_wr) = upstream.into_split();
    let dead = Rc::new(Cell::new(false));
    let (reset_tx, mut reset_rx) = watch::channel(false);
    let (up_read, up_write) = pump(link.clone(), true, client_rd, server_wr, dead.clone(), reset_tx.clone());
    let (down_read, down_write) = pump(link, false, server_rd, client_wr, dead, reset_tx.clone());
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

async fn connection(link: Rc<Link>, stream: TcpStream, closed: watch::Receiver<bool>) {
    if let Some(port) = link.server().real_port() {
        return proxy(link, stream, port, closed).await;
    }
    engine_connection(link, stream, closed).await
}

async fn engine_connection(link: Rc<Link>, stream: TcpStream, mut closed: watch::Receiver<bool>) {
    // The server this connection reaches, for its whole life (a promotion closes it).
    let server = link.server();
    let generation = server.generation();
    let conn = server.next_conn();
    let dead = Rc::new(Cell::new(false));
    let (mut rd, mut wr) = stream.into_split();
    let (up_tx, mut up_rx) = mpsc::unbounded_channel::<(Instant, Bytes)>();
    let (down_tx, mut down_rx) = mpsc::unbounded_channel::<(Instant, Bytes)>();
    let (reset_tx, mut reset_rx) = watch::channel(false);

    // Reader: socket → client→server direction.
    let reader = {
        let link = link.clone();
        let dead = dead.clone();
        let reset_tx = reset_tx.clone();
        tokio::task::spawn_local(async move {
            let mut buf = BytesMut::with_capacity(4096);
            loop {
                buf.clear();
                match rd.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                match enter(&link, &link.up, &dead) {
                    Entry::Pass(at) => {
                        if up_tx.send((at, buf.split().freeze())).is_err() {
                            return;
                        }
                    }
                    Entry::Drop => {}
                    Entry::Reset => {
                        let _ = reset_tx.send(true);
                        return;
                    }
                }
            }
        })
    };

    // Server: delivered chunks → commands → replies into the server→client direction.
    let server_task = {
        let link = link.clone();
        let dead = dead.clone();
        let reset_tx = reset_tx.clone();
        let server = server.clone();
        tokio::task::spawn_local(async move {
            let mut session = ClientSession::new(conn as i64);
            let mut input = BytesMut::with_capacity(4096);
            while let Some((at, chunk)) = up_rx.recv().await {
                deliver_when_due(&link.up, at).await;
                if dead.get() {
                    continue;
                }
                input.extend_from_slice(&chunk);
                let mut out = BytesMut::new();
                let mut close_after = false;
                loop {
                    match decode_command(&mut input) {
                        Ok(Some(args)) => {
                            while server.is_paused() {
                                tokio::time::sleep(Duration::from_millis(1)).await;
                            }
                            if !server.is_running() || server.generation() != generation {
                                let _ = reset_tx.send(true);
                                return;
                            }
                            let reply = server.execute(&mut session, &link.client, &args);
                            encode_reply(&reply, &mut out);
                        }
                        Ok(None) => break,
                        Err(protocol_error) => {
                            encode_reply(&Reply::Error(protocol_error), &mut out);
                            close_after = true;
                            break;
                        }
                    }
                }
                if !out.is_empty() {
                    match enter(&link, &link.down, &dead) {
                        Entry::Pass(at) => {
                            let _ = down_tx.send((at, out.freeze()));
                        }
                        Entry::Drop => {}
                        Entry::Reset => {
                            let _ = reset_tx.send(true);
                            return;
                        }
                    }
                }
                if close_after {
                    // Let the writer flush the error, then close, as Redis does.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    let _ = reset_tx.send(true);
                    return;
                }
            }
        })
    };

    // Writer: server→client direction → socket.
    let writer = {
        let link = link.clone();
        tokio::task::spawn_local(async move {
            while let Some((at, bytes)) = down_rx.recv().await {
                deliver_when_due(&link.down, at).await;
                if wr.write_all(&bytes).await.is_err() {
                    return;
                }
            }
        })
    };

    let reader_abort = reader.abort_handle();
    let server_abort = server_task.abort_handle();
    tokio::select! {
        biased;
        _ = closed.changed() => {}
        _ = reset_rx.changed() => {}
        _ = async {
            // The client closed its socket: what it sent is still in the network and arrives
            // (once a hold is released); then let the replies drain.
            let _ = reader.await;
            let _ = server_task.await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        } => {}
    }
    // Dropping the halves (inside the aborted tasks) closes the socket.
    reader_abort.abort();
    server_abort.abort();
    writer.abort();
}
