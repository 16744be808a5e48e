//! The one Redis server: a connection loop generic over the stream and over the host it runs on.
//!
//! The simulated masters (`lockstep_sim::redis::master`, over `lockstep_sim::wire`'s simulated TCP), `lockstep live`
//! and `lockstep serve` (over real loopback TCP, behind their fault layer) all serve their
//! connections here, and so can any other host whose streams are `AsyncRead + AsyncWrite + Unpin`
//! (a turmoil host, whose `turmoil::net::TcpStream` is one, with tokio's simulated time). What
//! differs between hosts is the [`RedisHost`] trait: the node's wall and monotonic clocks, sleeping
//! by the node's clock rate, pause, and recording into the history.
//!
//! A [`RedisServer`] owns the command engine ([`crate::RedisEngine`]: the command table,
//! scripting, `MULTI`/`WATCH`), its part in a replication group, and its connections; one call of
//! [`RedisServer::serve_connection`] serves one accepted stream until it ends:
//! * framing: commands are read by [`crate::CommandReader`] (Redis' limits and error texts),
//!   on every host; a protocol error is answered, then the connection is shut, as Redis does; replies are written
//!   in RESP2, or RESP3 after a `HELLO 3` ([`crate::ReplyEncoder`]);
//! * a [`ClientSession`] per connection (name, transaction, watched keys, subscriptions, protocol);
//! * blocking commands: `BLPOP`/`BRPOP` on empty lists, and `BLMOVE`/`BRPOPLPUSH` on a missing
//!   source, block the connection (it reads nothing
//!   meanwhile, as a blocked Redis client) until a push by any connection serves it — right after
//!   the pushing command, the longest-blocked client first, as Redis does — or until its timeout
//!   runs out on the node's wall clock (checked when a sleep by the node's clock rate ends: no
//!   polling); a served `BLMOVE` runs its `LMOVE`, whose push may in turn serve clients blocked on
//!   the destination; `WAIT numreplicas timeout` blocks until enough replicas acknowledged or the timeout
//!   ran out on the node's monotonic clock (0: forever);
//! * pub/sub: `SUBSCRIBE`/`PSUBSCRIBE`/`SSUBSCRIBE` confirmations and `PUBLISH`ed/`SPUBLISH`ed
//!   messages are pushed to the subscribed connections while they wait for input (RESP2 arrays,
//!   or RESP3 `>` pushes);
//! * the connections: `CLIENT LIST` of them all (with the peer address a host gives,
//!   [`ConnectionOptions::addr`], or `<peer>:<conn>`), `CLIENT KILL` (a killed connection is
//!   closed as if it quit; one that kills itself gets its reply first), `CLIENT PAUSE`/`UNPAUSE`
//!   (held commands wait on the node's clock, [`Response::Hold`]), `MONITOR` (every other
//!   connection's commands fed to it as Redis writes them);
//! * commands a host answers itself ([`RedisHost::control`]: `lockstep serve`'s `SHUTDOWN`,
//!   `DEBUG SLEEP`, `LOCKSTEP FAULT`, ...), recorded like any other;
//! * replication roles: a replica refuses writes with [`READONLY_ERROR`], a master with replicas
//!   publishes each command's effects (see [`execute_member`]);
//! * input limits: [`ConnectionOptions`] lets a host bound what a connection holds (its query
//!   buffer, its replies not yet written) and end a connection whose server stopped.
//!
//! Every command is recorded with its reply through [`RedisHost::record_command`]; expired keys
//! are reclaimed before each command and recorded too. Spawning is the caller's: it accepts
//! connections on its own listener and spawns each [`RedisServer::serve_connection`] as its
//! runtime does (a simulated node behind its pause gate, a `LocalSet` task in a live run).
//!
//! Left out: a client that disconnects while blocked stays blocked until its timeout in the
//! simulation (Redis would unblock it at once); hosts that set [`ConnectionOptions::forget_on_abort`]
//! forget it when its task is aborted.

use crate::replication::{diff, Effect, MemberRole, Replication};
use crate::spec::Flags;
use crate::t_client::{parse_kill, parse_pause, paused_by_write_pause, ClientKind, KillCandidate, PauseKind};
use crate::{
    blocking_timeout_ms, encode_reply, is_write_command, ClientSession, CommandReader, RedisEngine, Reply,
    ReplyEncoder, ReplyMode,
};
use bytes::{Bytes, BytesMut};
use lockstep_history::history::{EventKind, KeyEffect};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// The error a replica gives a write.
pub const READONLY_ERROR: &str = "READONLY You can't write against a read only replica.";

/// The bytes a connection reads from its stream at most at once, until a larger command grows
/// its buffer.
const READ_CAPACITY: usize = 4096;

/// A boxed future of the host's runtime (everything here runs on one thread).
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// What a Redis server needs from the node it runs on: its clocks, sleeping by its clock rate, its
/// pause, and its history. Implemented by the simulated nodes, by `lockstep live`/`serve`'s servers,
/// and by any host outside this crate (a turmoil host).
pub trait RedisHost: 'static {
    /// The node's name, as the replication group and the history know it.
    fn name(&self) -> &str;
    /// The node's wall clock, ms since the Unix epoch (expiry, blocking timeouts).
    fn wall_ms(&self) -> i64;
    /// The node's monotonic clock, ms (`WAIT` timeouts).
    fn monotonic_ms(&self) -> i64;
    /// The run's true time, µs (replication stream timestamps).
    fn true_time_us(&self) -> u64;
    /// A future that completes once `local_ms` ms have passed by the node's clock rate.
    fn sleep_local_ms(&self, local_ms: u64) -> LocalFuture<()>;
    /// Records an event of this node (an expiry, a note).
    fn record(&self, event: EventKind);
    /// Records a command with its reply.
    fn record_command(&self, command: RecordedCommand<'_>);
    /// Called as each command arrives, before it runs (the simulated deployment files the
    /// server's next deadline again).
    fn before_command(&self) {}
    /// Whether the node is paused: a connection runs no command while it is (it sleeps 1 ms at a
    /// time). A host whose pause freezes its tasks answers `false`.
    fn is_paused(&self) -> bool {
        false
    }
    /// Whether the reply to the next command from `peer` is to be lost (the simulation's
    /// `drop-reply` fault): the command runs, its reply is never written, the connection answers
    /// nothing more.
    fn drops_reply_to(&self, _peer: &str) -> bool {
        false
    }
    /// A command the host answers itself instead of the engine (`lockstep serve`'s control
    /// commands: `SHUTDOWN`, `DEBUG SLEEP`, `ROLE`, `LOCKSTEP FAULT`, ...), outside `MULTI`:
    /// its reply, and what to wait for before sending it. The server records the command with
    /// that reply. `None` (every simulated host): the engine runs it.
    fn control(&self, _conn: u64, _peer: &str, _args: &[Bytes]) -> Option<Control> {
        None
    }
}

/// A command a host answered itself ([`RedisHost::control`]).
pub struct Control {
    /// The reply.
    pub reply: Reply,
    /// Sent once this completes (a `DEBUG SLEEP`); `None`: at once.
    pub after: Option<LocalFuture<()>>,
}

/// A command to record, with its reply.
#[derive(Debug)]
pub struct RecordedCommand<'a> {
    /// The connection.
    pub conn: u64,
    /// Who sent it (the peer name the caller gave the connection).
    pub peer: &'a str,
    /// The command.
    pub args: &'a [Bytes],
    /// Its reply (for `SUBSCRIBE a b`: the array of its replies).
    pub reply: &'a Reply,
    /// What it did to the keys it changed.
    pub effects: Vec<KeyEffect>,
    /// A `WAIT`, or a blocking command that blocked (its reply came later than its arrival).
    /// Every host records it like any other command ([`RecordedCommand::event`]).
    pub blocking: bool,
}

/// What a server does with one command: a reply now, one later, or several.
pub enum Response {
    /// The reply.
    Now(Reply),
    /// The reply, once the future completes (the connection reads nothing meanwhile).
    Later(LocalFuture<Reply>),
    /// Several replies to one command, in order.
    Many(Vec<Reply>),
    /// The reply, then the connection is closed (a client that `CLIENT KILL`ed itself).
    Close(Reply),
    /// Not now: once the future completes, the command is handed to the handler again (a
    /// `CLIENT PAUSE` holds it; the connection reads nothing meanwhile, so replies stay in order).
    Hold(LocalFuture<()>),
}

/// What a host bounds of one connection (`lockstep live`/`serve` count every byte a connection
/// holds, see `src/live/buffers.rs`).
pub trait ConnectionBudget {
    /// The connection's query buffer now holds `bytes`; `false`: close the connection (no reply).
    fn query_held(&self, bytes: usize) -> bool;
    /// `bytes` of replies wait to be written; `false`: close the connection.
    fn output_held(&self, bytes: usize) -> bool;
}

/// How a connection's bytes are cut into commands. Every host reads with [`CommandReader`]
/// (Redis' limits and error texts, arguments copied out of the buffer); the simulated servers'
/// own decoder is gone (the re-pin of 0.1.x, see CHANGELOG.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Framing {
    /// [`CommandReader`].
    #[default]
    Redis,
    /// Formerly [`crate::decode_command`] over one growing buffer; now read as [`Framing::Redis`].
    #[deprecated(since = "0.1.0", note = "every host reads with `Framing::Redis`; removed in 0.3.0")]
    Simulated,
}

/// How a host serves one connection. The default: Redis framing, no budget, never stopped.
#[derive(Clone, Default)]
pub struct ConnectionOptions {
    /// How commands are read (one way: [`Framing::Redis`]).
    pub framing: Framing,
    /// Checked before each command: `false` ends the connection (its server stopped).
    pub alive: Option<Rc<dyn Fn() -> bool>>,
    /// The connection's byte budget.
    pub budget: Option<Rc<dyn ConnectionBudget>>,
    /// Whether a connection whose task is dropped before it ended (aborted) is forgotten: its
    /// session, subscriptions and blocked commands (every host in lockstep sets it: a crashed
    /// server's clients died with it). Without it a blocked client of an aborted task stays
    /// queued.
    pub forget_on_abort: bool,
    /// A future that completes once the client hung up (its input ended): a blocked command
    /// is then abandoned and the connection ends, as Redis frees a blocked client whose socket
    /// closed. Without it (the simulation) a blocked connection notices nothing until it answers.
    pub hangup: Option<Rc<dyn Fn() -> LocalFuture<()>>>,
    /// The peer's socket address (`ip:port`), which `CLIENT LIST` shows as `addr=` and
    /// `CLIENT KILL ADDR` matches; without it (a simulated connection) `<peer>:<conn>`, the
    /// peer's node name and the connection id.
    pub addr: Option<String>,
    /// The local socket address the connection reached (`laddr=`); without it `127.0.0.1:6379`.
    pub laddr: Option<String>,
}

impl ConnectionOptions {
    fn is_alive(&self) -> bool {
        self.alive.as_ref().is_none_or(|alive| alive())
    }

    fn query_fits(&self, bytes: usize) -> bool {
        self.budget.as_ref().is_none_or(|b| b.query_held(bytes))
    }

    fn output_fits(&self, bytes: usize) -> bool {
        self.budget.as_ref().is_none_or(|b| b.output_held(bytes))
    }
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionEnd {
    /// The client closed its side (EOF).
    InputEnded,
    /// A protocol error was answered and the write side shut: the caller may linger to let the
    /// client read it before closing.
    ProtocolError,
    /// Past a limit of its [`ConnectionBudget`]: to be closed without more.
    OverLimit,
    /// Its server stopped ([`ConnectionOptions::alive`]).
    Stopped,
    /// A reply was dropped (`drop-reply`) and the client then closed its side.
    ReplyDropped,
    /// The client sent `QUIT`: its `+OK` was written and the write side shut, as after a
    /// protocol error (the caller may linger the same way).
    Quit,
    /// `CLIENT KILL` closed it (another client's, or its own after its reply was written).
    Killed,
}

/// Serves RESP commands read from `stream` with `handler` until the stream ends: the loop of every
/// server (a Redis server's through [`RedisServer::serve_connection`]; a simple handler's, such as
/// the fenced resource's, directly). `pushes` are replies pushed to the connection at any time
/// (pub/sub messages), written while it waits for input.
pub async fn serve_stream<S, H>(
    host: &H,
    mut stream: S,
    conn: u64,
    peer: &str,
    handler: &dyn Fn(&[Bytes]) -> Response,
    mut pushes: Option<&mut mpsc::UnboundedReceiver<Reply>>,
    options: &ConnectionOptions,
) -> std::io::Result<ConnectionEnd>
where
    S: AsyncRead + AsyncWrite + Unpin,
    H: RedisHost + ?Sized,
{
    // `options.framing` has one reading left: Redis'.
    let mut input = CommandReader::with_capacity(READ_CAPACITY);
    let mut output = BytesMut::with_capacity(READ_CAPACITY);
    // RESP2 until a `HELLO 3`.
    let mut encoder = ReplyEncoder::new();
    loop {
        loop {
            match input.next_command() {
                Ok(Some(args)) => {
                    while host.is_paused() {
                        host.sleep_local_ms(1).await;
                    }
                    if !options.is_alive() {
                        return Ok(ConnectionEnd::Stopped);
                    }
                    let response = loop {
                        match handler(&args) {
                            Response::Hold(until) => {
                                // Replies go out in order: send what is ready, then wait.
                                if !output.is_empty() {
                                    stream.write_all(&output).await?;
                                    output.clear();
                                }
                                match &options.hangup {
                                    None => until.await,
                                    Some(hangup) => {
                                        tokio::select! {
                                            biased;
                                            _ = until => {}
                                            _ = hangup() => return Ok(ConnectionEnd::InputEnded),
                                        }
                                    }
                                }
                            }
                            response => break response,
                        }
                    };
                    let (reply, more) = match response {
                        Response::Hold(_) => continue,
                        Response::Close(reply) => {
                            encoder.encode(&args, &reply, &mut output);
                            stream.write_all(&output).await?;
                            stream.shutdown().await?;
                            return Ok(ConnectionEnd::Killed);
                        }
                        Response::Now(reply) => (reply, Vec::new()),
                        Response::Many(mut replies) if !replies.is_empty() => {
                            let first = replies.remove(0);
                            (first, replies)
                        }
                        Response::Many(_) => continue,
                        Response::Later(future) => {
                            // Replies go out in order: send what is ready, then block.
                            if !output.is_empty() {
                                stream.write_all(&output).await?;
                                output.clear();
                            }
                            match &options.hangup {
                                None => (future.await, Vec::new()),
                                Some(hangup) => {
                                    tokio::select! {
                                        biased;
                                        reply = future => (reply, Vec::new()),
                                        _ = hangup() => return Ok(ConnectionEnd::InputEnded),
                                    }
                                }
                            }
                        }
                    };
                    if host.drops_reply_to(peer) {
                        host.record(EventKind::Note {
                            text: format!(
                                "reply dropped (drop-reply): `{}` from {peer} on connection {conn} ran, its reply {} is lost; the connection answers nothing more",
                                render_args(&args).join(" "),
                                render_reply(&reply)
                            ),
                        });
                        if !output.is_empty() {
                            stream.write_all(&output).await?;
                        }
                        ignore_the_rest(stream).await?;
                        return Ok(ConnectionEnd::ReplyDropped);
                    }
                    encoder.encode(&args, &reply, &mut output);
                    for reply in &more {
                        encoder.encode(&args, reply, &mut output);
                    }
                    if args.first().is_some_and(|name| name.eq_ignore_ascii_case(b"quit")) && reply == Reply::ok() {
                        // Redis answers `QUIT` and closes the connection once the reply is out.
                        stream.write_all(&output).await?;
                        stream.shutdown().await?;
                        return Ok(ConnectionEnd::Quit);
                    }
                    if !options.output_fits(output.len()) {
                        // Replies the client does not read (or a pipeline of huge ones).
                        return Ok(ConnectionEnd::OverLimit);
                    }
                }
                Ok(None) => break,
                Err(protocol_error) => {
                    encode_reply(&Reply::Error(protocol_error), &mut output);
                    stream.write_all(&output).await?;
                    stream.shutdown().await?;
                    return Ok(ConnectionEnd::ProtocolError);
                }
            }
        }
        if !options.query_fits(input.buffered()) {
            return Ok(ConnectionEnd::OverLimit);
        }
        if !output.is_empty() {
            stream.write_all(&output).await?;
            output.clear();
        }
        let read = match pushes.as_mut() {
            None => stream.read_buf(input.input_mut()).await?,
            Some(pushes) => loop {
                tokio::select! {
                    biased;
                    Some(push) = pushes.recv() => {
                        encoder.encode_push(&push, &mut output);
                        stream.write_all(&output).await?;
                        output.clear();
                    }
                    read = stream.read_buf(input.input_mut()) => break read?,
                }
            },
        };
        if read == 0 {
            return Ok(ConnectionEnd::InputEnded);
        }
        // Checked before the commands run, as Redis checks its query buffer after a read.
        if !options.query_fits(input.buffered()) {
            return Ok(ConnectionEnd::OverLimit);
        }
    }
}

/// Reads and ignores what arrives on a connection whose replies are lost, until the peer closes it.
async fn ignore_the_rest<S: AsyncRead + Unpin>(mut stream: S) -> std::io::Result<()> {
    let mut sink = BytesMut::with_capacity(READ_CAPACITY);
    while stream.read_buf(&mut sink).await? > 0 {
        sink.clear();
    }
    Ok(())
}

/// A one-line rendering of a reply for the history and timelines.
pub fn render_reply(reply: &Reply) -> String {
    match reply {
        Reply::Status(s) => format!("+{s}"),
        Reply::Error(e) => format!("-{e}"),
        Reply::Integer(i) => format!(":{i}"),
        Reply::Bulk(None) | Reply::Array(None) => "(nil)".to_string(),
        Reply::Bulk(Some(b)) => format!("\"{}\"", String::from_utf8_lossy(b)),
        Reply::Array(Some(items)) => {
            let inner: Vec<String> = items.iter().map(render_reply).collect();
            format!("[{}]", inner.join(", "))
        }
    }
}

/// Lossy UTF-8 renderings of command arguments.
pub fn render_args(args: &[Bytes]) -> Vec<String> {
    args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}

/// One open connection of a server.
struct Conn {
    session: ClientSession,
    pushes: mpsc::UnboundedSender<Reply>,
    /// Which opening of this connection id it is (a restarted simulated server numbers its
    /// connections from 1 again).
    serial: u64,
    /// Closes the connection (`CLIENT KILL`); taken when sent.
    kill: Option<oneshot::Sender<()>>,
    /// When it opened, on the node's monotonic clock (`CLIENT KILL MAXAGE`).
    opened_ms: i64,
}

/// A client blocked in `BLPOP`/`BRPOP`/`BLMOVE`/`BRPOPLPUSH`.
struct Blocked {
    id: u64,
    /// Its connection (the id `CLIENT ID` answers, which `CLIENT UNBLOCK` names).
    conn: u64,
    /// The serial of its connection's opening.
    serial: u64,
    /// The database it blocked in.
    db: usize,
    /// The type a key must hold to serve it (`list`, `zset`).
    wants: &'static str,
    keys: Vec<Bytes>,
    /// Each key's first position in `keys` (a client is served from its first ready key).
    positions: BTreeMap<Bytes, usize>,
    /// What serves it once one of its keys holds a list.
    serve: Serve,
    wake: oneshot::Sender<Reply>,
}

/// How a blocked client is served.
enum Serve {
    /// `BLPOP`/`BRPOP`: this pop (`LPOP` or `RPOP`) on the ready key, answered as
    /// `[key, element]`.
    Pop(&'static [u8]),
    /// `BLMOVE`/`BRPOPLPUSH`: this whole `LMOVE` command (its source is the one key), answered
    /// with its reply, as Redis 7.2 re-runs the command (a destination of the wrong type then
    /// answers `WRONGTYPE` and the element stays).
    Move(Vec<Bytes>),
    /// `BLMPOP`: this non-blocking command (`LMPOP` over all its keys), answered with its reply.
    Rerun(Vec<Bytes>),
}

/// The connections of one server and its blocked clients, oldest (lowest id) first, indexed by
/// the keys they wait on: a write wakes only the clients of the keys it wrote, as Redis's
/// `blocking_keys` dictionary does.
#[derive(Default)]
struct Conns {
    open: BTreeMap<u64, Conn>,
    blocked: BTreeMap<u64, Blocked>,
    /// `(database, key)` -> the ids of the clients blocked on it.
    waiting: BTreeMap<(usize, Bytes), BTreeSet<u64>>,
    next_blocked_id: u64,
    next_serial: u64,
    /// The connections that sent `MONITOR`: every other command is fed to them.
    monitors: BTreeSet<u64>,
}

impl Conns {
    /// Removes blocked client `id` and its index entries.
    fn unblock(&mut self, id: u64) -> Option<Blocked> {
        let blocked = self.blocked.remove(&id)?;
        for key in blocked.positions.keys() {
            let slot = (blocked.db, key.clone());
            if let Some(ids) = self.waiting.get_mut(&slot) {
                ids.remove(&id);
                if ids.is_empty() {
                    self.waiting.remove(&slot);
                }
            }
        }
        Some(blocked)
    }
}

/// One Redis server (a master, or a replica of one): the engine, its replication group, its
/// connections and blocked clients, on host `H`.
pub struct RedisServer<H: RedisHost> {
    host: H,
    engine: Rc<RefCell<RedisEngine>>,
    repl: Option<Rc<RefCell<Replication>>>,
    conns: RefCell<Conns>,
    /// `CLIENT PAUSE`: until when (the node's monotonic clock, ms) and what it holds.
    pause: std::cell::Cell<Option<(i64, PauseKind)>>,
}

impl<H: RedisHost> RedisServer<H> {
    /// A server on `host` running `engine`, a member of the replication group `repl` when given
    /// (a master or a replica as `repl` says; without it, a master without replicas).
    pub fn new(host: H, engine: Rc<RefCell<RedisEngine>>, repl: Option<Rc<RefCell<Replication>>>) -> Rc<Self> {
        Rc::new(RedisServer {
            host,
            engine,
            repl,
            conns: RefCell::new(Conns::default()),
            pause: std::cell::Cell::new(None),
        })
    }

    /// The host.
    pub fn host(&self) -> &H {
        &self.host
    }

    /// The engine.
    pub fn engine(&self) -> &Rc<RefCell<RedisEngine>> {
        &self.engine
    }

    /// How many connections are open (what the server knows of: aborted ones it kept included).
    pub fn open_connections(&self) -> usize {
        self.conns.borrow().open.len()
    }

    /// How many clients are blocked in `BLPOP`/`BRPOP`/`BLMOVE`/`BRPOPLPUSH`.
    pub fn blocked_clients(&self) -> usize {
        self.conns.borrow().blocked.len()
    }

    /// Tells the engine how many clients are blocked and connected (`INFO clients`).
    fn report_blocked(&self) {
        let (count, connected) = {
            let conns = self.conns.borrow();
            (conns.blocked.len(), conns.open.len())
        };
        if let Ok(mut engine) = self.engine.try_borrow_mut() {
            engine.set_blocked_clients(count, connected);
        }
    }

    /// Serves one accepted connection, id `conn` (unique among the open ones), from `peer`, until
    /// it ends. The caller spawns it on its runtime.
    pub async fn serve_connection<S>(
        self: Rc<Self>,
        stream: S,
        conn: u64,
        peer: &str,
        options: ConnectionOptions,
    ) -> std::io::Result<ConnectionEnd>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let addr = options.addr.clone().unwrap_or_else(|| format!("{peer}:{conn}"));
        let (mut pushes, serial, killed) = self.open(conn, addr, options.laddr.clone());
        let mut guard = ForgetOnDrop {
            server: self.clone(),
            conn,
            serial,
            armed: options.forget_on_abort,
        };
        let handler = |args: &[Bytes]| self.command(conn, serial, peer, args);
        // `CLIENT KILL` by another connection: the stream is dropped (closed) wherever the
        // connection was, a blocked command or a pause included, and forgotten below as if the
        // client had quit.
        let end = tokio::select! {
            biased;
            Ok(()) = killed => Ok(ConnectionEnd::Killed),
            end = serve_stream(&self.host, stream, conn, peer, &handler, Some(&mut pushes), &options) => end,
        };
        guard.armed = false;
        self.close(conn, serial);
        end
    }

    /// A connection was accepted: its session, and the receiver of the replies pushed to it.
    fn open(
        &self,
        conn: u64,
        addr: String,
        laddr: Option<String>,
    ) -> (mpsc::UnboundedReceiver<Reply>, u64, oneshot::Receiver<()>) {
        let (pushes, received) = mpsc::unbounded_channel();
        let (kill, killed) = oneshot::channel();
        let mut conns = self.conns.borrow_mut();
        conns.next_serial += 1;
        let serial = conns.next_serial;
        let fresh = Conn {
            session: ClientSession {
                addr: Some(addr),
                laddr,
                ..ClientSession::new(conn as i64)
            },
            pushes,
            serial,
            kill: Some(kill),
            opened_ms: self.host.monotonic_ms(),
        };
        if let Some(mut stale) = conns.open.insert(conn, fresh) {
            self.engine.borrow_mut().forget_session(&mut stale.session);
        }
        (received, serial, killed)
    }

    /// A connection ended: its session and its blocked command are forgotten (unless the id was
    /// opened again since).
    fn close(&self, conn: u64, serial: u64) {
        let gone = {
            let mut conns = self.conns.borrow_mut();
            let ids: Vec<u64> = conns
                .blocked
                .values()
                .filter(|b| b.serial == serial)
                .map(|b| b.id)
                .collect();
            for id in ids {
                conns.unblock(id);
            }
            match conns.open.get(&conn) {
                Some(c) if c.serial == serial => {
                    conns.monitors.remove(&conn);
                    conns.open.remove(&conn)
                }
                _ => None,
            }
        };
        if let Some(mut gone) = gone {
            self.engine.borrow_mut().forget_session(&mut gone.session);
        }
    }

    /// The server's role for the command it runs.
    fn role(&self) -> MemberRole {
        match &self.repl {
            Some(repl) => repl.borrow().member_role(self.host.name()),
            None => MemberRole {
                is_master: true,
                has_replicas: false,
            },
        }
    }

    /// Removes every key due at the node's current wall time and records each expiry; a master
    /// with replicas replicates each as a `DEL`.
    pub fn expire_due(&self) {
        let expired = self.engine.borrow_mut().expire_due(self.host.wall_ms());
        // Keyspace notifications of the expiries (any database) go out now, not at the next
        // command.
        self.deliver_pushes();
        if expired.is_empty() {
            return;
        }
        for key in &expired {
            self.host.record(EventKind::Expired {
                key: String::from_utf8_lossy(key).into_owned(),
            });
        }
        if let Some(repl) = &self.repl {
            publish_expired(repl, self.host.name(), expired, self.host.true_time_us());
        }
    }

    fn record(&self, conn: u64, peer: &str, args: &[Bytes], reply: &Reply, effects: Vec<KeyEffect>, blocking: bool) {
        self.host.record_command(RecordedCommand {
            conn,
            peer,
            args,
            reply,
            effects,
            blocking,
        });
        self.feed_monitors(conn, peer, args);
    }

    /// `MONITOR`: the command `args` of connection `conn`, as Redis feeds it to every monitoring
    /// connection but the sender: `+SECONDS.MICROS [DB ADDR] "name" "arg" ...` (each argument
    /// quoted, `"` `\` and control bytes escaped; documented at redis.io/commands/monitor).
    fn feed_monitors(&self, conn: u64, peer: &str, args: &[Bytes]) {
        let conns = self.conns.borrow();
        if conns.monitors.is_empty() {
            return;
        }
        let (db, addr) = conns.open.get(&conn).map_or((0, peer.to_string()), |c| {
            (c.session.db, c.session.addr.clone().unwrap_or_else(|| peer.to_string()))
        });
        let ms = self.host.wall_ms();
        let mut line = format!(
            "{}.{:06} [{db} {addr}]",
            ms.div_euclid(1000),
            ms.rem_euclid(1000) * 1000
        );
        for a in args {
            line.push_str(" \"");
            for &b in a.iter() {
                match b {
                    b'"' => line.push_str("\\\""),
                    b'\\' => line.push_str("\\\\"),
                    b'\n' => line.push_str("\\n"),
                    b'\r' => line.push_str("\\r"),
                    b'\t' => line.push_str("\\t"),
                    0x20..=0x7e => line.push(b as char),
                    _ => line.push_str(&format!("\\x{b:02x}")),
                }
            }
            line.push('"');
        }
        for id in &conns.monitors {
            if *id != conn {
                if let Some(c) = conns.open.get(id) {
                    let _ = c.pushes.send(Reply::Status(line.clone()));
                }
            }
        }
    }

    /// One command of connection `conn` from `peer`.
    fn command(self: &Rc<Self>, conn: u64, serial: u64, peer: &str, args: &[Bytes]) -> Response {
        self.host.before_command();
        self.report_blocked();
        self.expire_due();
        let name = args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .unwrap_or_default();
        // Inside MULTI, WAIT is queued like any command (and answers at once in EXEC).
        let in_multi = self
            .conns
            .borrow()
            .open
            .get(&conn)
            .is_some_and(|c| c.session.in_multi());
        // A pause holds `WAIT` and `CLIENT UNBLOCK` too (every command under `ALL`).
        if let Some(hold) = self.paused_hold(conn, &name, args) {
            return hold;
        }
        if name == "wait" && !in_multi {
            return self.wait(conn, peer, args);
        }
        if name == "monitor" && !in_multi && args.len() == 1 {
            self.conns.borrow_mut().monitors.insert(conn);
            let reply = Reply::ok();
            self.record(conn, peer, args, &reply, Vec::new(), false);
            return Response::Now(reply);
        }
        if !in_multi {
            if let Some(Control { reply, after }) = self.host.control(conn, peer, args) {
                self.record(conn, peer, args, &reply, Vec::new(), false);
                return match after {
                    None => Response::Now(reply),
                    Some(wait) => Response::Later(Box::pin(async move {
                        wait.await;
                        reply
                    })),
                };
            }
        }
        let client_sub = |sub: &[u8]| name == "client" && args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(sub));
        if client_sub(b"unblock") && !in_multi && (3..=4).contains(&args.len()) {
            let reply = self.client_unblock(args);
            self.record(conn, peer, args, &reply, Vec::new(), false);
            return Response::Now(reply);
        }
        if client_sub(b"kill") && !in_multi && args.len() >= 3 {
            let (reply, me) = self.client_kill(conn, args);
            self.record(conn, peer, args, &reply, Vec::new(), false);
            return if me {
                Response::Close(reply)
            } else {
                Response::Now(reply)
            };
        }
        if client_sub(b"pause") && !in_multi && args.len() >= 3 {
            let reply = match parse_pause(args) {
                Ok((timeout_ms, kind)) => {
                    self.pause_for(timeout_ms, kind);
                    Reply::ok()
                }
                Err(e) => e,
            };
            self.record(conn, peer, args, &reply, Vec::new(), false);
            return Response::Now(reply);
        }
        if client_sub(b"unpause") && !in_multi && args.len() == 2 {
            self.pause.set(None);
            let reply = Reply::ok();
            self.record(conn, peer, args, &reply, Vec::new(), false);
            return Response::Now(reply);
        }
        if client_sub(b"list") && !in_multi {
            if let Some(reply) = self.client_list(conn, args) {
                self.record(conn, peer, args, &reply, Vec::new(), false);
                return Response::Now(reply);
            }
        }
        // `CLIENT PAUSE`/`UNPAUSE` queued in a transaction take effect once its `EXEC` ran.
        let queued_pauses: Vec<Vec<Bytes>> = if name == "exec" {
            self.conns
                .borrow()
                .open
                .get(&conn)
                .and_then(|c| c.session.multi.as_ref())
                .map(|queue| {
                    queue
                        .iter()
                        .filter(|cmd| {
                            cmd.first().is_some_and(|n| n.eq_ignore_ascii_case(b"client"))
                                && cmd.get(1).is_some_and(|s| {
                                    s.eq_ignore_ascii_case(b"pause") || s.eq_ignore_ascii_case(b"unpause")
                                })
                        })
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        // Read once for the command: its role decides how it runs and what is kept of it.
        let role = self.role();
        let is_master = role.is_master;
        let mut session = self
            .conns
            .borrow_mut()
            .open
            .get_mut(&conn)
            .map(|c| std::mem::take(&mut c.session))
            .unwrap_or_else(|| ClientSession::new(conn as i64));
        // The command's key effects are taken right after it runs, before blocked clients are
        // served; a replica keeps no client write (it refuses or undoes them), so none are kept.
        let mut effects = Vec::new();
        let engine = &self.engine;
        let replies = execute_as_member(
            role,
            self.repl.as_deref(),
            self.host.name(),
            engine,
            &mut session,
            &name,
            &|| self.host.true_time_us(),
            &mut |session| {
                let replies = engine.borrow_mut().execute_conn(session, args, self.host.wall_ms());
                effects = engine.borrow_mut().take_effects();
                replies
            },
            &mut || self.serve_blocked_and_pushes(),
        );
        if !is_master {
            effects.clear();
        }
        if matches!(replies.as_slice(), [Reply::Array(Some(_))]) {
            for cmd in &queued_pauses {
                if cmd[1].eq_ignore_ascii_case(b"unpause") {
                    self.pause.set(None);
                } else if let Ok((timeout_ms, kind)) = parse_pause(cmd) {
                    self.pause_for(timeout_ms, kind);
                }
            }
        }
        // The reply of a blocking command that found nothing (the engine never blocks).
        let empty = match name.as_str() {
            "blpop" | "brpop" => Some(Reply::Array(None)),
            "blmove" | "brpoplpush" => Some(Reply::nil()),
            "blmpop" | "bzpopmin" | "bzpopmax" | "bzmpop" | "xread" | "xreadgroup" => Some(Reply::Array(None)),
            _ => None,
        };
        let blocks = is_master && !session.in_multi() && empty.is_some_and(|e| replies == [e]);
        let db = session.db;
        // `CLIENT REPLY OFF|SKIP`: no reply to it, then none (OFF) or none to the next command
        // (SKIP). The command still runs and is recorded.
        let sets_reply_mode = name == "client" && args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"reply"));
        // Subscription confirmations are pushed, not replied: Redis sends them regardless.
        let pushes = matches!(
            name.as_str(),
            "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" | "ssubscribe" | "sunsubscribe"
        );
        let silenced = if pushes {
            false
        } else if sets_reply_mode {
            session.reply_mode != ReplyMode::On
        } else {
            match session.reply_mode {
                ReplyMode::On => false,
                ReplyMode::Off => true,
                ReplyMode::Skip => {
                    session.reply_mode = ReplyMode::On;
                    true
                }
            }
        };
        if let Some(c) = self.conns.borrow_mut().open.get_mut(&conn) {
            c.session = session;
        }
        // `XREAD`/`XREADGROUP` block only with `BLOCK ms`, served by the command again with `$`
        // fixed at the stream's last id now.
        let stream_plan = if blocks && (name == "xread" || name == "xreadgroup") {
            self.engine
                .borrow_mut()
                .stream_block_plan(db, args, self.host.wall_ms())
        } else {
            None
        };
        let blocks = blocks && (stream_plan.is_some() || !(name == "xread" || name == "xreadgroup"));
        if blocks {
            let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
            let mut timeout_ms = None;
            let (keys, serve) = match name.as_str() {
                "xread" | "xreadgroup" => {
                    let (rerun, block_ms) = stream_plan.unwrap_or_default();
                    timeout_ms = Some(block_ms);
                    let keys = crate::table::resolve(args)
                        .map(|spec| spec.key_positions(args).into_iter().map(|i| args[i].clone()).collect())
                        .unwrap_or_default();
                    (keys, Serve::Rerun(rerun))
                }
                // Served by the non-blocking form over all their keys: `LMPOP`/`ZMPOP` for the
                // `M` forms, the same arguments again for `BZPOPMIN`/`BZPOPMAX` (their handler
                // never blocks and answers `[key, member, score]`).
                "blmpop" | "bzmpop" | "bzpopmin" | "bzpopmax" => {
                    let keys = crate::table::resolve(args)
                        .map(|spec| spec.key_positions(args).into_iter().map(|i| args[i].clone()).collect())
                        .unwrap_or_default();
                    let rerun = match name.as_str() {
                        "blmpop" | "bzmpop" => {
                            let mut m = vec![Bytes::from_static(if name == "blmpop" { b"LMPOP" } else { b"ZMPOP" })];
                            m.extend_from_slice(&args[2..]);
                            m
                        }
                        _ => args.to_vec(),
                    };
                    (keys, Serve::Rerun(rerun))
                }
                "blpop" => (args[1..args.len() - 1].to_vec(), Serve::Pop(b"LPOP")),
                "brpop" => (args[1..args.len() - 1].to_vec(), Serve::Pop(b"RPOP")),
                "blmove" => (
                    vec![arg(1)],
                    Serve::Move(vec![Bytes::from_static(b"LMOVE"), arg(1), arg(2), arg(3), arg(4)]),
                ),
                _ => (
                    vec![arg(1)],
                    Serve::Move(vec![
                        Bytes::from_static(b"LMOVE"),
                        arg(1),
                        arg(2),
                        Bytes::from_static(b"RIGHT"),
                        Bytes::from_static(b"LEFT"),
                    ]),
                ),
            };
            return self.block(conn, serial, peer, args, db, keys, serve, timeout_ms);
        }
        if silenced && !blocks {
            let recorded = match <[Reply; 1]>::try_from(replies) {
                Ok([reply]) => reply,
                Err(replies) => Reply::Array(Some(replies)),
            };
            self.record(conn, peer, args, &recorded, effects, false);
            return Response::Many(Vec::new());
        }
        match <[Reply; 1]>::try_from(replies) {
            Ok([reply]) => {
                self.record(conn, peer, args, &reply, effects, false);
                Response::Now(reply)
            }
            Err(replies) => {
                self.record(conn, peer, args, &Reply::Array(Some(replies.clone())), effects, false);
                Response::Many(replies)
            }
        }
    }

    /// `CLIENT PAUSE timeout kind`: a pause until `timeout_ms` from now on the node's monotonic
    /// clock. A pause already running is only lengthened, and `ALL` is not weakened to `WRITE`
    /// (as Redis's `pauseClients` keeps the later end and the stronger kind).
    fn pause_for(&self, timeout_ms: i64, kind: PauseKind) {
        let end = self.host.monotonic_ms().saturating_add(timeout_ms);
        let next = match self.pause.get() {
            Some((old_end, old_kind)) if old_end > self.host.monotonic_ms() => (old_end.max(end), old_kind.max(kind)),
            _ => (end, kind),
        };
        self.pause.set(Some(next));
    }

    /// The pause running now, if any (an ended one is forgotten).
    fn pause_now(&self) -> Option<PauseKind> {
        match self.pause.get() {
            Some((end, kind)) if end > self.host.monotonic_ms() => Some(kind),
            Some(_) => {
                self.pause.set(None);
                None
            }
            None => None,
        }
    }

    /// While a `CLIENT PAUSE` holds the command (every command for `ALL`; for `WRITE` the ones
    /// Redis lists, an `EXEC` of any of them included): a future that completes when the pause
    /// has ended or was lifted, polled every ms of the node's clock (as `WAIT` is), so a
    /// simulation pauses in simulated time.
    fn paused_hold(self: &Rc<Self>, conn: u64, name: &str, args: &[Bytes]) -> Option<Response> {
        let kind = self.pause_now()?;
        let holds = match kind {
            PauseKind::All => true,
            PauseKind::Write => {
                let writes = |cmd: &[Bytes]| {
                    crate::table::resolve(cmd).is_some_and(|spec| {
                        paused_by_write_pause(
                            spec.name,
                            spec.flags.has(Flags::WRITE) || spec.flags.has(Flags::MAY_REPLICATE),
                        )
                    })
                };
                if name == "exec" {
                    self.conns
                        .borrow()
                        .open
                        .get(&conn)
                        .and_then(|c| c.session.multi.as_ref())
                        .is_some_and(|queue| queue.iter().any(|cmd| writes(cmd)))
                } else {
                    writes(args)
                }
            }
        };
        if !holds {
            return None;
        }
        let server = self.clone();
        Some(Response::Hold(Box::pin(async move {
            while server.pause_now().is_some() {
                server.host.sleep_local_ms(1).await;
            }
        })))
    }

    /// `CLIENT KILL ...`: closes the connections it names, oldest (lowest id) first; the reply,
    /// and whether the asking connection is among them (it is closed after its reply).
    fn client_kill(&self, me: u64, args: &[Bytes]) -> (Reply, bool) {
        let filter = match parse_kill(args) {
            Ok(filter) => filter,
            Err(e) => return (e, false),
        };
        let now = self.host.monotonic_ms();
        let mut conns = self.conns.borrow_mut();
        let mut killed = 0;
        let mut kill_me = false;
        for (id, c) in conns.open.iter_mut() {
            let session = &c.session;
            let kind = if session.is_subscribed() && !session.resp3 {
                ClientKind::PubSub
            } else {
                ClientKind::Normal
            };
            let candidate = KillCandidate {
                id: session.id,
                addr: session.addr.as_deref().unwrap_or("127.0.0.1:0"),
                laddr: session.laddr.as_deref().unwrap_or("127.0.0.1:6379"),
                kind,
                age_s: (now - c.opened_ms) / 1000,
                is_me: *id == me,
            };
            if !filter.matches(&candidate) {
                continue;
            }
            if *id == me {
                kill_me = true;
                killed += 1;
            } else if c.kill.take().is_some_and(|kill| kill.send(()).is_ok()) {
                killed += 1;
            }
        }
        (filter.reply(killed), kill_me)
    }

    /// `CLIENT LIST [TYPE type] [ID id...]`: a line per open connection, by id; `None` for the
    /// engine to answer (a syntax it reports).
    fn client_list(&self, me: u64, args: &[Bytes]) -> Option<Reply> {
        let mut kind = None;
        let mut ids: Option<BTreeSet<i64>> = None;
        match args.get(2) {
            None => {}
            Some(opt) if opt.eq_ignore_ascii_case(b"type") && args.len() == 4 => {
                let t = &args[3];
                kind = Some(if t.eq_ignore_ascii_case(b"normal") {
                    ClientKind::Normal
                } else if t.eq_ignore_ascii_case(b"pubsub") {
                    ClientKind::PubSub
                } else if t.eq_ignore_ascii_case(b"master") {
                    ClientKind::Master
                } else if t.eq_ignore_ascii_case(b"replica") || t.eq_ignore_ascii_case(b"slave") {
                    ClientKind::Replica
                } else {
                    return Some(Reply::Error(format!(
                        "ERR Unknown client type '{}'",
                        String::from_utf8_lossy(t).replace(['\r', '\n'], " ")
                    )));
                });
            }
            Some(opt) if opt.eq_ignore_ascii_case(b"id") && args.len() > 3 => {
                let mut set = BTreeSet::new();
                for a in &args[3..] {
                    match crate::parse_ll(a) {
                        Some(id) if id > 0 => {
                            set.insert(id);
                        }
                        _ => return Some(Reply::error("ERR Invalid client ID")),
                    }
                }
                ids = Some(set);
            }
            Some(_) => return Some(Reply::error("ERR syntax error")),
        }
        let conns = self.conns.borrow();
        let mut text = String::new();
        for (id, c) in &conns.open {
            let session = &c.session;
            let this_kind = if session.is_subscribed() && !session.resp3 {
                ClientKind::PubSub
            } else {
                ClientKind::Normal
            };
            if kind.is_some_and(|k| k != this_kind) || ids.as_ref().is_some_and(|ids| !ids.contains(&session.id)) {
                continue;
            }
            let cmd = if *id == me { "client|list" } else { "NULL" };
            text.push_str(&crate::admin::client_line(session, cmd));
        }
        Some(Reply::bulk(text))
    }

    /// `CLIENT UNBLOCK client-id [TIMEOUT|ERROR]`: wakes that client's blocking command as if its
    /// timeout passed, or with an `UNBLOCKED` error; 1 when it was blocked, else 0.
    fn client_unblock(&self, args: &[Bytes]) -> Reply {
        let Some(id) = crate::parse_ll(&args[2]) else {
            return Reply::error("ERR value is not an integer or out of range");
        };
        let with_error = match args.get(3) {
            None => false,
            Some(a) if a.eq_ignore_ascii_case(b"timeout") => false,
            Some(a) if a.eq_ignore_ascii_case(b"error") => true,
            Some(_) => return Reply::error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
        };
        let mut conns = self.conns.borrow_mut();
        let found = conns
            .blocked
            .values()
            .find(|b| i64::try_from(b.conn) == Ok(id))
            .map(|b| b.id);
        let Some(blocked) = found.and_then(|b| conns.unblock(b)) else {
            return Reply::Integer(0);
        };
        drop(conns);
        let reply = if with_error {
            Reply::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
        } else {
            Reply::Array(None)
        };
        let _ = blocked.wake.send(reply);
        Reply::Integer(1)
    }

    /// `WAIT numreplicas timeout`.
    fn wait(self: &Rc<Self>, conn: u64, peer: &str, args: &[Bytes]) -> Response {
        let reply_now = |reply: Reply| {
            self.record(conn, peer, args, &reply, Vec::new(), true);
            Response::Now(reply)
        };
        if args.len() != 3 {
            return reply_now(Reply::error("ERR wrong number of arguments for 'wait' command"));
        }
        if !self
            .repl
            .as_ref()
            .is_none_or(|r| r.borrow().is_master(self.host.name()))
        {
            return reply_now(Reply::error("ERR WAIT cannot be used with replica instances."));
        }
        let parse = |b: &Bytes| std::str::from_utf8(b).ok().and_then(|s| s.parse::<i64>().ok());
        let (Some(want), Some(timeout_ms)) = (parse(&args[1]), parse(&args[2])) else {
            return reply_now(Reply::error("ERR value is not an integer or out of range"));
        };
        if timeout_ms < 0 {
            return reply_now(Reply::error("ERR timeout is negative"));
        }
        let target = self.repl.as_ref().map(|r| r.borrow().offset(self.host.name()));
        let acked = {
            let server = self.clone();
            move || match (&server.repl, target) {
                (Some(r), Some(target)) => r.borrow().acked_count(server.host.name(), target) as i64,
                _ => 0,
            }
        };
        let now = acked();
        if now >= want {
            return reply_now(Reply::Integer(now));
        }
        let server = self.clone();
        let peer = peer.to_string();
        let args = args.to_vec();
        Response::Later(Box::pin(async move {
            let start = server.host.monotonic_ms();
            loop {
                server.host.sleep_local_ms(1).await;
                let acked = acked();
                if acked >= want || (timeout_ms > 0 && server.host.monotonic_ms() - start >= timeout_ms) {
                    let reply = Reply::Integer(acked);
                    server.record(conn, &peer, &args, &reply, Vec::new(), true);
                    return reply;
                }
            }
        }))
    }

    /// Hands the head (or tail) of a non-empty list to each blocked client that waits on it,
    /// oldest client first (each tries its keys in argument order), then delivers published
    /// messages. Only the clients blocked on a key written since the last pass are looked at
    /// ([`RedisEngine::take_touched`]): a command costs nothing for the clients it cannot wake.
    fn serve_blocked_and_pushes(&self) {
        let now = self.host.wall_ms();
        let mut conns = self.conns.borrow_mut();
        let mut touched = self.engine.borrow_mut().take_touched();
        while !conns.blocked.is_empty() {
            // Each candidate with the written keys it waits on (all its keys when the engine
            // lost count).
            let mut candidates: BTreeMap<u64, Vec<Bytes>> = BTreeMap::new();
            match &touched {
                None => {
                    for b in conns.blocked.values() {
                        candidates.insert(b.id, b.keys.clone());
                    }
                }
                Some(keys) => {
                    for slot in keys {
                        for id in conns.waiting.get(slot).into_iter().flatten() {
                            candidates.entry(*id).or_default().push(slot.1.clone());
                        }
                    }
                }
            }
            let mut moved = false;
            for (id, mut keys) in candidates {
                let Some(blocked) = conns.blocked.get(&id) else {
                    continue;
                };
                keys.sort_by_key(|k| blocked.positions.get(k).copied().unwrap_or(usize::MAX));
                let db = blocked.db;
                let ready = keys.into_iter().find(|key| {
                    self.engine
                        .borrow()
                        .keyspace()
                        .db(db)
                        .and_then(|d| d.peek(key, now))
                        .is_some_and(|e| e.value.type_name() == blocked.wants)
                });
                let Some(key) = ready else {
                    continue;
                };
                let reply = match &blocked.serve {
                    Serve::Pop(pop) => {
                        let popped =
                            self.engine
                                .borrow_mut()
                                .execute_in(db, &[Bytes::from_static(pop), key.clone()], now);
                        Reply::Array(Some(vec![Reply::Bulk(Some(key)), popped]))
                    }
                    Serve::Move(lmove) => {
                        let reply = self.engine.borrow_mut().execute_in(db, lmove, now);
                        moved = matches!(reply, Reply::Bulk(Some(_)));
                        reply
                    }
                    Serve::Rerun(command) => {
                        let reply = self.engine.borrow_mut().execute_in(db, command, now);
                        // Nothing for it yet (a stream written but with nothing new after its
                        // id): it stays blocked.
                        if reply == Reply::Array(None) {
                            continue;
                        }
                        reply
                    }
                };
                if let Some(blocked) = conns.unblock(id) {
                    let _ = blocked.wake.send(reply);
                }
                if moved {
                    break;
                }
            }
            if !moved {
                break;
            }
            // The push onto the destination may serve a client queued before this one (Redis
            // signals the destination ready and serves it in the same pass): look again from
            // the oldest, at every key written so far.
            match (touched.as_mut(), self.engine.borrow_mut().take_touched()) {
                (Some(keys), Some(more)) => keys.extend(more),
                _ => touched = None,
            }
        }
        for (id, push) in self.engine.borrow_mut().take_pushes() {
            if let Some(conn) = u64::try_from(id).ok().and_then(|id| conns.open.get(&id)) {
                let _ = conn.pushes.send(push);
            }
        }
    }

    /// Delivers the messages published since the last delivery (keyspace notifications of
    /// expiries, between commands).
    fn deliver_pushes(&self) {
        let Ok(mut engine) = self.engine.try_borrow_mut() else {
            return;
        };
        let pushes = engine.take_pushes();
        drop(engine);
        if pushes.is_empty() {
            return;
        }
        let conns = self.conns.borrow();
        for (id, push) in pushes {
            if let Some(conn) = u64::try_from(id).ok().and_then(|id| conns.open.get(&id)) {
                let _ = conn.pushes.send(push);
            }
        }
    }

    /// `BLPOP`/`BRPOP` that found every list empty, or `BLMOVE`/`BRPOPLPUSH` that found no
    /// source: blocks on `keys` until served or timed out (a timeout answers a nil array for
    /// all four, as Redis 7 does).
    #[allow(clippy::too_many_arguments)]
    fn block(
        self: &Rc<Self>,
        conn: u64,
        serial: u64,
        peer: &str,
        args: &[Bytes],
        db: usize,
        keys: Vec<Bytes>,
        serve: Serve,
        timeout_ms: Option<i64>,
    ) -> Response {
        // `BLMPOP`/`BZMPOP timeout numkeys ...` name their timeout first, the others last.
        let timeout_at = if args[0].eq_ignore_ascii_case(b"blmpop") || args[0].eq_ignore_ascii_case(b"bzmpop") {
            1
        } else {
            args.len() - 1
        };
        let timeout_ms = timeout_ms.unwrap_or_else(|| blocking_timeout_ms(&args[timeout_at]).unwrap_or(0));
        let (wake, woken) = oneshot::channel();
        // Every blocking command times out with a null array, `BLMOVE` too (redis-server 7.0).
        let timed_out = Reply::Array(None);
        let id = {
            let mut c = self.conns.borrow_mut();
            c.next_blocked_id += 1;
            let id = c.next_blocked_id;
            let mut positions = BTreeMap::new();
            for (i, key) in keys.iter().enumerate() {
                positions.entry(key.clone()).or_insert(i);
            }
            for key in positions.keys() {
                c.waiting.entry((db, key.clone())).or_default().insert(id);
            }
            c.blocked.insert(
                id,
                Blocked {
                    id,
                    conn,
                    serial,
                    db,
                    wants: match args[0].to_ascii_lowercase().as_slice() {
                        [b'b', b'z', ..] => "zset",
                        [b'x', ..] => "stream",
                        _ => "list",
                    },
                    keys,
                    positions,
                    serve,
                    wake,
                },
            );
            id
        };
        let server = self.clone();
        let peer = peer.to_string();
        let args = args.to_vec();
        Response::Later(Box::pin(async move {
            let host = &server.host;
            let deadline_ms = host.wall_ms().saturating_add(timeout_ms);
            let mut woken = woken;
            let reply = loop {
                let remaining_ms = deadline_ms - host.wall_ms();
                if timeout_ms > 0 && remaining_ms <= 0 {
                    server.conns.borrow_mut().unblock(id);
                    break timed_out;
                }
                let timer = async {
                    if timeout_ms > 0 {
                        host.sleep_local_ms(remaining_ms as u64).await;
                    } else {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    biased;
                    served = &mut woken => break served.unwrap_or(timed_out),
                    _ = timer => {}
                }
            };
            server.record(conn, &peer, &args, &reply, Vec::new(), true);
            reply
        }))
    }
}

/// Forgets an aborted connection (when [`ConnectionOptions::forget_on_abort`]): its session and
/// its blocked commands.
struct ForgetOnDrop<H: RedisHost> {
    server: Rc<RedisServer<H>>,
    conn: u64,
    serial: u64,
    armed: bool,
}

impl<H: RedisHost> Drop for ForgetOnDrop<H> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let current = self
            .server
            .conns
            .borrow()
            .open
            .get(&self.conn)
            .is_some_and(|c| c.serial == self.serial);
        if current {
            self.server.close(self.conn, self.serial);
        }
    }
}

/// Runs one command (`name`, lower case) of a connection on server `node` as its role in `repl`
/// says. A replica answers a write with [`READONLY_ERROR`] without running it (flagging an open
/// transaction), runs anything else (a script) and undoes it with `READONLY` if it wrote; a master
/// with replicas publishes the command's effects at true time `now_us()`. `run` executes the
/// command on `engine`; `settle` runs after a command that is kept (the server serves blocked
/// clients and pushes there), before its effects are taken.
#[allow(clippy::too_many_arguments)]
pub fn execute_member(
    repl: &RefCell<Replication>,
    node: &str,
    engine: &RefCell<RedisEngine>,
    session: &mut ClientSession,
    name: &str,
    now_us: &dyn Fn() -> u64,
    run: &mut dyn FnMut(&mut ClientSession) -> Vec<Reply>,
    settle: &mut dyn FnMut(),
) -> Vec<Reply> {
    let role = repl.borrow().member_role(node);
    execute_as_member(role, Some(repl), node, engine, session, name, now_us, run, settle)
}

/// [`execute_member`] for a server whose `role` the caller has read already.
#[allow(clippy::too_many_arguments)]
fn execute_as_member(
    MemberRole {
        is_master,
        has_replicas,
    }: MemberRole,
    repl: Option<&RefCell<Replication>>,
    node: &str,
    engine: &RefCell<RedisEngine>,
    session: &mut ClientSession,
    name: &str,
    now_us: &dyn Fn() -> u64,
    run: &mut dyn FnMut(&mut ClientSession) -> Vec<Reply>,
    settle: &mut dyn FnMut(),
) -> Vec<Reply> {
    if !is_master {
        if is_write_command(name.as_bytes()) {
            session.flag_transaction();
            return vec![Reply::error(READONLY_ERROR)];
        }
        // Scripts and anything else: run, and undo it if it wrote.
        let before = engine.borrow().keyspace().clone();
        let replies = run(session);
        if *engine.borrow().keyspace() != before {
            engine.borrow_mut().restore(before);
            return vec![Reply::error(READONLY_ERROR)];
        }
        settle();
        replies
    } else if let (true, Some(repl)) = (has_replicas, repl) {
        let before = engine.borrow().keyspace().clone();
        let replies = run(session);
        settle();
        let effects = diff(&before, engine.borrow().keyspace());
        if !effects.is_empty() {
            repl.borrow_mut().publish(node, effects, now_us());
        }
        replies
    } else {
        let replies = run(session);
        settle();
        replies
    }
}

/// Replicates keys that expired on master `node` (`expired`) as `DEL`s at true time `now_us`,
/// when it has replicas.
pub fn publish_expired(repl: &RefCell<Replication>, node: &str, expired: Vec<Bytes>, now_us: u64) {
    let publish = repl.borrow().has_replicas(node);
    if publish {
        let effects = expired.into_iter().map(|key| Effect { key, entry: None }).collect();
        repl.borrow_mut().publish(node, effects, now_us);
    }
}

#[cfg(test)]
mod tests {
    //! The loop on tokio's own (paused) clock through a host written as any crate outside this one
    //! would write it: in-memory streams, a wall clock at a fixed epoch plus tokio's time.

    use super::*;
    use crate::EngineConfig;
    use tokio::io::DuplexStream;
    use tokio::time::{Duration, Instant};

    /// A host on tokio's clock, recording commands as text.
    struct TokioHost {
        start: Instant,
        log: Rc<RefCell<Vec<String>>>,
    }

    impl RedisHost for TokioHost {
        fn name(&self) -> &str {
            "redis-t"
        }
        fn wall_ms(&self) -> i64 {
            1_700_000_000_000 + self.start.elapsed().as_millis() as i64
        }
        fn monotonic_ms(&self) -> i64 {
            self.start.elapsed().as_millis() as i64
        }
        fn true_time_us(&self) -> u64 {
            self.start.elapsed().as_micros() as u64
        }
        fn sleep_local_ms(&self, local_ms: u64) -> LocalFuture<()> {
            Box::pin(tokio::time::sleep(Duration::from_millis(local_ms)))
        }
        fn record(&self, event: EventKind) {
            self.log.borrow_mut().push(format!("{event:?}"));
        }
        fn record_command(&self, c: RecordedCommand<'_>) {
            self.log.borrow_mut().push(format!(
                "{} {} -> {}",
                c.conn,
                render_args(c.args).join(" "),
                render_reply(c.reply)
            ));
        }
    }

    fn run(test: impl std::future::Future<Output = ()>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        tokio::task::LocalSet::new().block_on(&rt, test);
    }

    fn server() -> (Rc<RedisServer<TokioHost>>, Rc<RefCell<Vec<String>>>) {
        let log = Rc::new(RefCell::new(Vec::new()));
        let host = TokioHost {
            start: Instant::now(),
            log: log.clone(),
        };
        let engine = Rc::new(RefCell::new(RedisEngine::new(EngineConfig::default())));
        (RedisServer::new(host, engine, None), log)
    }

    /// Opens connection `conn` to `server`.
    fn connect(server: &Rc<RedisServer<TokioHost>>, conn: u64) -> DuplexStream {
        let (client, end) = tokio::io::duplex(64 * 1024);
        let server = server.clone();
        tokio::task::spawn_local(async move {
            let _ = server
                .serve_connection(end, conn, "client", ConnectionOptions::default())
                .await;
        });
        client
    }

    async fn send(stream: &mut DuplexStream, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        stream.write_all(out.as_bytes()).await.expect("writes");
    }

    /// The next write of the server, whole (each batch of replies is one write).
    async fn reply(stream: &mut DuplexStream) -> String {
        let mut buf = vec![0u8; 64 * 1024];
        let n = stream.read(&mut buf).await.expect("reads");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    async fn call(stream: &mut DuplexStream, args: &[&str]) -> String {
        send(stream, args).await;
        reply(stream).await
    }

    #[test]
    fn client_unblock_wakes_a_blocked_client_as_a_timeout_or_with_an_error() {
        run(async {
            let (server, _log) = server();
            let mut blocked = connect(&server, 5);
            let mut admin = connect(&server, 6);
            assert_eq!(
                call(&mut admin, &["CLIENT", "UNBLOCK", "5"]).await,
                ":0\r\n",
                "not blocked"
            );
            send(&mut blocked, &["BLPOP", "l", "0"]).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(call(&mut admin, &["CLIENT", "UNBLOCK", "5"]).await, ":1\r\n");
            assert_eq!(reply(&mut blocked).await, "*-1\r\n");
            send(&mut blocked, &["BLMOVE", "l", "m", "LEFT", "LEFT", "0"]).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(call(&mut admin, &["CLIENT", "UNBLOCK", "5", "TIMEOUT"]).await, ":1\r\n");
            assert_eq!(
                reply(&mut blocked).await,
                "*-1\r\n",
                "BLMOVE times out with a null array"
            );
            send(&mut blocked, &["BLPOP", "l", "0"]).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(
                call(&mut admin, &["CLIENT", "UNBLOCK", "5", "NOW"]).await,
                "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"
            );
            assert_eq!(
                call(&mut admin, &["CLIENT", "UNBLOCK", "x"]).await,
                "-ERR value is not an integer or out of range\r\n"
            );
            assert_eq!(call(&mut admin, &["CLIENT", "UNBLOCK", "5", "ERROR"]).await, ":1\r\n");
            assert_eq!(
                reply(&mut blocked).await,
                "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
            );
            assert_eq!(server.blocked_clients(), 0);
            // Still a working connection, served by the next push.
            send(&mut blocked, &["BLPOP", "l", "0"]).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(call(&mut admin, &["LPUSH", "l", "foo"]).await, ":1\r\n");
            assert_eq!(reply(&mut blocked).await, "*2\r\n$1\r\nl\r\n$3\r\nfoo\r\n");
        });
    }

    #[test]
    fn blpop_and_brpop_block_for_their_timeout_and_wake_on_a_push_oldest_first() {
        run(async {
            let (server, log) = server();
            let mut a = connect(&server, 1);
            let mut b = connect(&server, 2);
            let mut pusher = connect(&server, 3);
            let started = Instant::now();
            assert_eq!(call(&mut a, &["BLPOP", "k", "2"]).await, "*-1\r\n");
            assert_eq!(started.elapsed(), Duration::from_millis(2000));
            let started = Instant::now();
            assert_eq!(call(&mut a, &["BRPOP", "k", "0.25"]).await, "*-1\r\n");
            assert_eq!(started.elapsed(), Duration::from_millis(250));

            let started = Instant::now();
            send(&mut a, &["BLPOP", "k", "10"]).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            send(&mut b, &["BRPOP", "k", "10"]).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(server.blocked_clients(), 2);
            assert_eq!(call(&mut pusher, &["RPUSH", "k", "x", "y", "z"]).await, ":3\r\n");
            assert_eq!(reply(&mut a).await, "*2\r\n$1\r\nk\r\n$1\r\nx\r\n");
            assert_eq!(reply(&mut b).await, "*2\r\n$1\r\nk\r\n$1\r\nz\r\n");
            assert_eq!(started.elapsed(), Duration::from_millis(300));
            assert_eq!(call(&mut pusher, &["LPOP", "k"]).await, "$1\r\ny\r\n");
            assert_eq!(server.blocked_clients(), 0);
            let log = log.borrow();
            assert!(log.iter().any(|l| l == "1 BLPOP k 2 -> (nil)"), "{log:?}");
            assert!(log.iter().any(|l| l == "2 BRPOP k 10 -> [\"k\", \"z\"]"), "{log:?}");
        });
    }

    #[test]
    fn sorted_set_stream_and_other_database_blocks_wake_only_on_their_own_keys() {
        run(async {
            let (server, _log) = server();
            let mut z = connect(&server, 1);
            let mut x = connect(&server, 2);
            let mut other_db = connect(&server, 3);
            let mut writer = connect(&server, 4);
            send(&mut z, &["BZPOPMIN", "zk", "10"]).await;
            send(&mut x, &["XREAD", "BLOCK", "10000", "STREAMS", "xk", "$"]).await;
            assert_eq!(call(&mut other_db, &["SELECT", "1"]).await, "+OK\r\n");
            send(&mut other_db, &["BLPOP", "lk", "10"]).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(server.blocked_clients(), 3);
            // Writes to other keys, another type at the key, or the key in another database
            // wake nobody.
            assert_eq!(call(&mut writer, &["SET", "unrelated", "v"]).await, "+OK\r\n");
            assert_eq!(call(&mut writer, &["RPUSH", "lk", "in-db-0"]).await, ":1\r\n");
            assert_eq!(call(&mut writer, &["SADD", "zk", "m"]).await, ":1\r\n");
            assert_eq!(server.blocked_clients(), 3);
            assert_eq!(call(&mut writer, &["DEL", "zk"]).await, ":1\r\n");
            assert_eq!(call(&mut writer, &["ZADD", "zk", "2", "b", "1", "a"]).await, ":2\r\n");
            assert_eq!(reply(&mut z).await, "*3\r\n$2\r\nzk\r\n$1\r\na\r\n$1\r\n1\r\n");
            assert_eq!(
                call(&mut writer, &["XADD", "xk", "1-1", "f", "v"]).await,
                "$3\r\n1-1\r\n"
            );
            assert_eq!(
                reply(&mut x).await,
                "*1\r\n*2\r\n$2\r\nxk\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
            );
            assert_eq!(server.blocked_clients(), 1);
            assert_eq!(call(&mut writer, &["SELECT", "1"]).await, "+OK\r\n");
            assert_eq!(call(&mut writer, &["RPUSH", "lk", "in-db-1"]).await, ":1\r\n");
            assert_eq!(reply(&mut other_db).await, "*2\r\n$2\r\nlk\r\n$7\r\nin-db-1\r\n");
            assert_eq!(server.blocked_clients(), 0);
        });
    }

    #[test]
    fn bzmpop_in_resp3_times_out_with_a_null_and_wakes_with_pairs() {
        run(async {
            let (server, _log) = server();
            let mut a = connect(&server, 1);
            let mut w = connect(&server, 2);
            let hello = call(&mut a, &["HELLO", "3"]).await;
            assert!(hello.starts_with('%'), "{hello}");
            assert_eq!(call(&mut a, &["BZMPOP", "0.01", "1", "z", "MIN"]).await, "_\r\n");
            send(&mut a, &["BZMPOP", "5", "2", "z", "z2", "MAX", "COUNT", "2"]).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(
                call(&mut w, &["ZADD", "z2", "1", "a", "2", "b", "3", "c"]).await,
                ":3\r\n"
            );
            assert_eq!(
                reply(&mut a).await,
                "*2\r\n$2\r\nz2\r\n*2\r\n*2\r\n$1\r\nc\r\n,3\r\n*2\r\n$1\r\nb\r\n,2\r\n"
            );
        });
    }

    #[test]
    fn blmove_blocks_for_its_timeout_and_wakes_on_a_push_to_its_source_moving_the_element() {
        run(async {
            let (server, log) = server();
            let mut a = connect(&server, 1);
            let mut b = connect(&server, 2);
            let mut pusher = connect(&server, 3);
            let started = Instant::now();
            assert_eq!(
                call(&mut a, &["BLMOVE", "k", "d", "LEFT", "RIGHT", "0.5"]).await,
                "*-1\r\n"
            );
            assert_eq!(started.elapsed(), Duration::from_millis(500));
            assert_eq!(call(&mut a, &["BRPOPLPUSH", "k", "d", "0.25"]).await, "*-1\r\n");
            assert_eq!(server.blocked_clients(), 0);

            // b waits on the destination, a on the source: the push to the source serves a,
            // whose move to the destination then serves b.
            let started = Instant::now();
            send(&mut b, &["BLPOP", "d", "10"]).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            send(&mut a, &["BLMOVE", "k", "d", "RIGHT", "LEFT", "10"]).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(server.blocked_clients(), 2);
            assert_eq!(call(&mut pusher, &["RPUSH", "k", "x", "y"]).await, ":2\r\n");
            assert_eq!(reply(&mut a).await, "$1\r\ny\r\n");
            assert_eq!(reply(&mut b).await, "*2\r\n$1\r\nd\r\n$1\r\ny\r\n");
            assert_eq!(started.elapsed(), Duration::from_millis(200));
            assert_eq!(server.blocked_clients(), 0);

            // BRPOPLPUSH moves the tail to the head of the destination.
            send(&mut a, &["BRPOPLPUSH", "e", "d", "10"]).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(call(&mut pusher, &["RPUSH", "d", "z"]).await, ":1\r\n");
            assert_eq!(call(&mut pusher, &["LPUSH", "e", "1", "2"]).await, ":2\r\n");
            assert_eq!(reply(&mut a).await, "$1\r\n1\r\n");
            assert_eq!(
                call(&mut pusher, &["LRANGE", "d", "0", "-1"]).await,
                "*2\r\n$1\r\n1\r\n$1\r\nz\r\n"
            );
            assert_eq!(
                call(&mut pusher, &["LRANGE", "e", "0", "-1"]).await,
                "*1\r\n$1\r\n2\r\n"
            );
            assert_eq!(
                call(&mut pusher, &["LRANGE", "k", "0", "-1"]).await,
                "*1\r\n$1\r\nx\r\n"
            );

            // A destination of the wrong type: the woken client gets WRONGTYPE, the element stays.
            assert_eq!(call(&mut pusher, &["SET", "str", "v"]).await, "+OK\r\n");
            send(&mut a, &["BLMOVE", "f", "str", "LEFT", "LEFT", "10"]).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(server.blocked_clients(), 1);
            assert_eq!(call(&mut pusher, &["RPUSH", "f", "w"]).await, ":1\r\n");
            assert_eq!(
                reply(&mut a).await,
                "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
            );
            assert_eq!(call(&mut pusher, &["LLEN", "f"]).await, ":1\r\n");
            assert_eq!(server.blocked_clients(), 0);

            // Inside MULTI it answers at once.
            assert_eq!(call(&mut a, &["MULTI"]).await, "+OK\r\n");
            assert_eq!(
                call(&mut a, &["BLMOVE", "none", "d", "LEFT", "LEFT", "0"]).await,
                "+QUEUED\r\n"
            );
            assert_eq!(call(&mut a, &["EXEC"]).await, "*1\r\n$-1\r\n");
            let log = log.borrow();
            assert!(
                log.iter().any(|l| l == "1 BLMOVE k d RIGHT LEFT 10 -> \"y\""),
                "{log:?}"
            );
        });
    }

    #[test]
    fn publish_reaches_subscribers_in_resp2_and_resp3_and_pattern_subscribers() {
        run(async {
            let (server, _log) = server();
            let mut resp2 = connect(&server, 1);
            let mut resp3 = connect(&server, 2);
            let mut pattern = connect(&server, 3);
            let mut publisher = connect(&server, 4);
            assert_eq!(
                call(&mut resp2, &["SUBSCRIBE", "ch"]).await,
                "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
            );
            assert!(call(&mut resp3, &["HELLO", "3"]).await.starts_with("%7\r\n"));
            assert_eq!(
                call(&mut resp3, &["SUBSCRIBE", "ch"]).await,
                ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
            );
            // RESP3 connections may run any command while subscribed.
            assert_eq!(call(&mut resp3, &["GET", "k"]).await, "_\r\n");
            assert_eq!(
                call(&mut pattern, &["PSUBSCRIBE", "c?", "z*"]).await,
                "*3\r\n$10\r\npsubscribe\r\n$2\r\nc?\r\n:1\r\n*3\r\n$10\r\npsubscribe\r\n$2\r\nz*\r\n:2\r\n"
            );
            assert_eq!(call(&mut publisher, &["PUBLISH", "ch", "hi"]).await, ":3\r\n");
            assert_eq!(
                reply(&mut resp2).await,
                "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
            );
            assert_eq!(
                reply(&mut resp3).await,
                ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
            );
            assert_eq!(
                reply(&mut pattern).await,
                "*4\r\n$8\r\npmessage\r\n$2\r\nc?\r\n$2\r\nch\r\n$2\r\nhi\r\n"
            );
            assert_eq!(
                call(&mut pattern, &["PUNSUBSCRIBE"]).await,
                "*3\r\n$12\r\npunsubscribe\r\n$2\r\nc?\r\n:1\r\n*3\r\n$12\r\npunsubscribe\r\n$2\r\nz*\r\n:0\r\n"
            );
            assert_eq!(call(&mut publisher, &["PUBLISH", "ch", "again"]).await, ":2\r\n");
            // A closed subscriber receives nothing more and counts no more.
            drop(resp2);
            tokio::time::sleep(Duration::from_millis(1)).await;
            assert_eq!(call(&mut publisher, &["PUBLISH", "ch", "late"]).await, ":1\r\n");
            assert_eq!(server.open_connections(), 3);
        });
    }

    #[test]
    fn a_protocol_error_is_answered_then_the_connection_is_shut() {
        run(async {
            let (server, _log) = server();
            let mut raw = connect(&server, 1);
            raw.write_all(b"*1\r\n$4\r\nPING\r\n*1\r\n$x\r\n")
                .await
                .expect("writes");
            let mut all = Vec::new();
            raw.read_to_end(&mut all).await.expect("reads to the end");
            assert_eq!(
                String::from_utf8_lossy(&all),
                "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"
            );
        });
    }

    #[test]
    fn wait_without_replicas_blocks_for_its_timeout() {
        run(async {
            let (server, _log) = server();
            let mut c = connect(&server, 1);
            let started = Instant::now();
            assert_eq!(call(&mut c, &["WAIT", "1", "300"]).await, ":0\r\n");
            assert!(
                started.elapsed() >= Duration::from_millis(300),
                "{:?}",
                started.elapsed()
            );
            assert_eq!(call(&mut c, &["WAIT", "0", "300"]).await, ":0\r\n");
        });
    }

    /// Whether the server closed the client's stream (a read gives EOF).
    async fn closed(stream: &mut DuplexStream) -> bool {
        let mut buf = vec![0u8; 1024];
        matches!(stream.read(&mut buf).await, Ok(0) | Err(_))
    }

    #[test]
    fn sharded_pub_sub_is_a_namespace_of_its_own() {
        run(async {
            let (server, _log) = server();
            let mut sub = connect(&server, 1);
            let mut publisher = connect(&server, 2);
            assert_eq!(
                call(&mut sub, &["SUBSCRIBE", "c"]).await,
                "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"
            );
            // The count is of shard channels only.
            assert_eq!(
                call(&mut sub, &["SSUBSCRIBE", "c"]).await,
                "*3\r\n$10\r\nssubscribe\r\n$1\r\nc\r\n:1\r\n"
            );
            assert_eq!(call(&mut publisher, &["SPUBLISH", "c", "m"]).await, ":1\r\n");
            assert_eq!(reply(&mut sub).await, "*3\r\n$8\r\nsmessage\r\n$1\r\nc\r\n$1\r\nm\r\n");
            assert_eq!(call(&mut publisher, &["PUBLISH", "c", "n"]).await, ":1\r\n");
            assert_eq!(reply(&mut sub).await, "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nn\r\n");
            assert_eq!(
                call(&mut publisher, &["PUBSUB", "SHARDNUMSUB", "c", "d"]).await,
                "*4\r\n$1\r\nc\r\n:1\r\n$1\r\nd\r\n:0\r\n"
            );
            assert_eq!(
                call(&mut publisher, &["PUBSUB", "SHARDCHANNELS", "c*"]).await,
                "*1\r\n$1\r\nc\r\n"
            );
            // Subscribed mode after the ordinary channel is left, while a shard one is kept.
            assert_eq!(
                call(&mut sub, &["UNSUBSCRIBE"]).await,
                "*3\r\n$11\r\nunsubscribe\r\n$1\r\nc\r\n:0\r\n"
            );
            assert!(call(&mut sub, &["GET", "k"])
                .await
                .starts_with("-ERR Can't execute 'get'"));
            assert_eq!(
                call(&mut sub, &["SUNSUBSCRIBE"]).await,
                "*3\r\n$12\r\nsunsubscribe\r\n$1\r\nc\r\n:0\r\n"
            );
            assert_eq!(call(&mut sub, &["GET", "k"]).await, "$-1\r\n");
            assert_eq!(call(&mut publisher, &["PUBSUB", "SHARDCHANNELS"]).await, "*0\r\n");
            // RESP3: confirmations and messages are pushes.
            let mut three = connect(&server, 3);
            assert!(call(&mut three, &["HELLO", "3"]).await.starts_with('%'));
            assert_eq!(
                call(&mut three, &["SSUBSCRIBE", "r"]).await,
                ">3\r\n$10\r\nssubscribe\r\n$1\r\nr\r\n:1\r\n"
            );
            assert_eq!(call(&mut publisher, &["SPUBLISH", "r", "x"]).await, ":1\r\n");
            assert_eq!(
                reply(&mut three).await,
                ">3\r\n$8\r\nsmessage\r\n$1\r\nr\r\n$1\r\nx\r\n"
            );
            // A closed connection leaves its shard channels.
            drop(three);
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(call(&mut publisher, &["SPUBLISH", "r", "x"]).await, ":0\r\n");
        });
    }

    #[test]
    fn client_kill_closes_connections_as_if_they_quit() {
        run(async {
            let (server, _log) = server();
            let mut admin = connect(&server, 1);
            let mut sub = connect(&server, 2);
            let mut blocked = connect(&server, 3);
            let mut tx = connect(&server, 4);
            assert_eq!(
                call(&mut sub, &["SUBSCRIBE", "c"]).await,
                "*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"
            );
            send(&mut blocked, &["BLPOP", "l", "0"]).await;
            assert_eq!(call(&mut tx, &["MULTI"]).await, "+OK\r\n");
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(server.blocked_clients(), 1);
            // CLIENT LIST shows every connection with its address: `<peer>:<conn>` here.
            let list = call(&mut admin, &["CLIENT", "LIST"]).await;
            assert!(list.contains("id=2 addr=client:2 "), "{list}");
            assert!(list.contains("flags=P "), "{list}");
            assert_eq!(call(&mut admin, &["CLIENT", "KILL", "TYPE", "pubsub"]).await, ":1\r\n");
            assert!(closed(&mut sub).await);
            assert_eq!(call(&mut admin, &["PUBLISH", "c", "m"]).await, ":0\r\n");
            assert_eq!(call(&mut admin, &["CLIENT", "KILL", "client:3"]).await, "+OK\r\n");
            assert!(closed(&mut blocked).await);
            assert_eq!(server.blocked_clients(), 0);
            assert_eq!(
                call(&mut admin, &["CLIENT", "KILL", "client:3"]).await,
                "-ERR No such client\r\n"
            );
            assert_eq!(call(&mut admin, &["CLIENT", "KILL", "ID", "4"]).await, ":1\r\n");
            assert!(closed(&mut tx).await);
            assert_eq!(server.open_connections(), 1);
            // SKIPME yes (the default) spares the asking connection; no: its reply, then closed.
            assert_eq!(call(&mut admin, &["CLIENT", "KILL", "TYPE", "normal"]).await, ":0\r\n");
            assert_eq!(
                call(&mut admin, &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"]).await,
                ":1\r\n"
            );
            assert!(closed(&mut admin).await);
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(server.open_connections(), 0);
        });
    }

    #[test]
    fn client_pause_holds_commands_in_order_until_it_ends_on_the_hosts_clock() {
        run(async {
            let (server, _log) = server();
            let mut admin = connect(&server, 1);
            let mut other = connect(&server, 2);
            let start = Instant::now();
            assert_eq!(call(&mut admin, &["CLIENT", "PAUSE", "100", "WRITE"]).await, "+OK\r\n");
            // Reads go on; a write waits, and what follows it on the connection too.
            assert_eq!(call(&mut other, &["GET", "k"]).await, "$-1\r\n");
            send(&mut other, &["SET", "k", "v"]).await;
            send(&mut other, &["GET", "k"]).await;
            assert_eq!(reply(&mut other).await, "+OK\r\n$1\r\nv\r\n");
            assert!(start.elapsed() >= Duration::from_millis(100));
            // UNPAUSE lifts it at once; ALL holds every command.
            assert_eq!(call(&mut admin, &["CLIENT", "PAUSE", "10000"]).await, "+OK\r\n");
            send(&mut other, &["PING"]).await;
            assert!(
                tokio::time::timeout(Duration::from_millis(50), reply(&mut other))
                    .await
                    .is_err(),
                "held"
            );
            // Redis holds every client under ALL, `CLIENT UNPAUSE` too: the test lifts it.
            server.pause.set(None);
            assert_eq!(reply(&mut other).await, "+PONG\r\n");
            // In a transaction: queued, applied after EXEC.
            assert_eq!(call(&mut admin, &["MULTI"]).await, "+OK\r\n");
            assert_eq!(
                call(&mut admin, &["CLIENT", "PAUSE", "50", "WRITE"]).await,
                "+QUEUED\r\n"
            );
            assert_eq!(call(&mut admin, &["EXEC"]).await, "*1\r\n+OK\r\n");
            let paused_at = Instant::now();
            assert_eq!(call(&mut other, &["INCR", "n"]).await, ":1\r\n");
            assert!(paused_at.elapsed() >= Duration::from_millis(50));
            assert_eq!(
                call(&mut admin, &["CLIENT", "PAUSE", "10", "MAYBE"]).await,
                "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n"
            );
        });
    }
}
