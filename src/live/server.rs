//! The servers of a live run: lockstep's Redis engine (the same command table, Lua scripting and
//! expiry as in the simulation) and the fenced resource, each with its own clock, executing
//! commands that arrive over real loopback TCP (see [`super::link`]).
//!
//! A master reads its wall clock — real monotonic time plus the scenario's offset and drift,
//! stepped by `clock-jump` faults — for every command and for active expiry (every millisecond),
//! so server clock faults need neither root nor libfaketime. Every command is recorded with its
//! reply, every expiry and every resource read and write, exactly as the simulated servers do.
//!
//! Process faults: `crash`, `power-loss` and `shutdown` stop a master (its connections are reset;
//! new ones are closed at once) and keep what its persistence mode keeps (`none`: nothing;
//! `aof-always`: everything; `aof-everysec`: everything on a crash or shutdown, the keyspace of the
//! last whole second on a power loss); `restart` starts it again once its restart delay has passed
//! by the chosen clock. A `pause` of a server freezes its command processing.
//!
//! Added for real client libraries: the resource answers `CLIENT`, `SELECT`, `PING`, `INFO` and
//! `HELLO 2` (clients send them while connecting). `WAIT` blocks the connection here
//! ([`Server::wait`]), as the simulated master does.
//!
//! Replicas are servers of the same kind sharing one [`Replication`] with their master (the
//! simulation's bookkeeping, [`lockstep_sim::deployment::replication`]): a command runs as the
//! server's role says ([`lockstep_sim::master::execute_member`]: a replica answers writes with
//! `READONLY`, a master with replicas publishes each command's effects and each expiry), a stop
//! drops what was not yet delivered and a start resynchronises; [`super::replication`] delivers the
//! stream after its lag, runs the Sentinel and promotes. Left out: replicas behind real
//! `redis-server`s.

use super::real::RealRedis;
use super::recorder::LiveRecorder;
use bytes::Bytes;
use lockstep_sim::clock::NodeClock;
use lockstep_sim::master::{execute_member, publish_expired};
use lockstep_sim::redis::{ClientSession, EngineConfig, Keyspace, RedisEngine, Reply};
use lockstep_sim::replication::Replication;
use lockstep_sim::resource::FencedStore;
use lockstep_sim::serve::render_reply;
use lockstep_sim::{DelayClock, EventKind, FencingMode, KeyEffect, MasterSetup, Persistence};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The resource's minimal `INFO` reply.
const INFO: &str = "# Server\r\nredis_version:7.2.0\r\nredis_mode:standalone\r\n# Persistence\r\nloading:0\r\n";

/// How a server stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopKind {
    /// The process dies.
    Crash,
    /// The machine dies: unsynced AOF writes are lost too.
    PowerLoss,
    /// A clean stop.
    Shutdown,
}

enum Kind {
    Master(Box<MasterState>),
    Resource { store: RefCell<FencedStore> },
}

struct MasterState {
    engine: RefCell<RedisEngine>,
    setup: MasterSetup,
    /// The keyspace at the last whole-second fsync (`aof-everysec`).
    synced: RefCell<Keyspace>,
    last_fsync_mono_ms: Cell<i64>,
    /// (wall, monotonic) when it last stopped.
    stopped_at: Cell<Option<(i64, i64)>>,
    restart_pending: Cell<bool>,
    /// A real `redis-server` serving this master instead of the engine.
    real: Option<RefCell<RealRedis>>,
    /// The replication group it belongs to (shared with the other members), if it has replicas.
    repl: Option<Rc<RefCell<Replication>>>,
}

/// One live server.
pub struct Server {
    name: String,
    clock: Rc<NodeClock>,
    rec: LiveRecorder,
    kind: Kind,
    running: Cell<bool>,
    paused: Cell<bool>,
    /// Bumped on every stop: connections of an older generation are dead.
    generation: Cell<u64>,
    next_conn: Cell<u64>,
}

impl Server {
    /// A Redis master deployed as `setup` says.
    pub fn master(name: &str, setup: MasterSetup, rec: &LiveRecorder) -> Rc<Self> {
        Self::member(name, setup, rec, None)
    }

    /// A Redis server deployed as `setup` says (its clock is `setup.clock`), a member of the
    /// replication group `repl` when given (a master or a replica, as `repl` says).
    pub fn member(
        name: &str,
        setup: MasterSetup,
        rec: &LiveRecorder,
        repl: Option<Rc<RefCell<Replication>>>,
    ) -> Rc<Self> {
        let clock = rec.add_clock(name, setup.clock.offset_ms, setup.clock.drift_ppm);
        Rc::new(Server {
            name: name.to_string(),
            clock,
            rec: rec.clone(),
            kind: Kind::Master(Box::new(MasterState {
                engine: RefCell::new(RedisEngine::new(EngineConfig::default())),
                setup,
                synced: RefCell::new(Keyspace::new()),
                last_fsync_mono_ms: Cell::new(0),
                stopped_at: Cell::new(None),
                restart_pending: Cell::new(false),
                real: None,
                repl,
            })),
            running: Cell::new(true),
            paused: Cell::new(false),
            generation: Cell::new(0),
            next_conn: Cell::new(0),
        })
    }

    /// A master served by a real `redis-server` (`binary`) on 127.0.0.1:`port`.
    pub(crate) fn real_master(
        name: &str,
        setup: MasterSetup,
        rec: &LiveRecorder,
        binary: &str,
        port: u16,
    ) -> Result<Rc<Self>, String> {
        let real = RealRedis::start(binary, name, port, setup.persistence)?;
        let server = Self::master(name, setup, rec);
        let Ok(mut server) = Rc::try_unwrap(server) else {
            return Err("internal: a new server is shared".into());
        };
        if let Kind::Master(master) = &mut server.kind {
            master.real = Some(RefCell::new(real));
        }
        Ok(Rc::new(server))
    }

    /// The port of the real `redis-server` behind this master, if there is one.
    pub(crate) fn real_port(&self) -> Option<u16> {
        match &self.kind {
            Kind::Master(master) => master.real.as_ref().map(|r| r.borrow().port()),
            Kind::Resource { .. } => None,
        }
    }

    /// The fenced resource judging by `mode`.
    pub fn resource(name: &str, mode: FencingMode, rec: &LiveRecorder) -> Rc<Self> {
        let clock = rec.add_clock(name, 0, 0);
        Rc::new(Server {
            name: name.to_string(),
            clock,
            rec: rec.clone(),
            kind: Kind::Resource {
                store: RefCell::new(FencedStore::new(mode)),
            },
            running: Cell::new(true),
            paused: Cell::new(false),
            generation: Cell::new(0),
            next_conn: Cell::new(0),
        })
    }

    /// The server's node name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its clock.
    pub fn clock(&self) -> &Rc<NodeClock> {
        &self.clock
    }

    /// Whether it is running.
    pub(crate) fn is_running(&self) -> bool {
        self.running.get()
    }

    /// Whether a pause fault has it frozen.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.get()
    }

    /// Freezes or thaws it.
    pub(crate) fn set_paused(&self, paused: bool) {
        self.paused.set(paused);
        if let Kind::Master(master) = &self.kind {
            if let Some(real) = &master.real {
                real.borrow().set_paused(paused);
            }
        }
    }

    /// The current generation (changes when the server stops).
    pub fn generation(&self) -> u64 {
        self.generation.get()
    }

    /// A fresh connection id.
    pub(crate) fn next_conn(&self) -> u64 {
        let c = self.next_conn.get() + 1;
        self.next_conn.set(c);
        c
    }

    fn wall_ms(&self) -> i64 {
        self.clock.wall_ms(self.rec.now_us())
    }

    fn monotonic_ms(&self) -> i64 {
        self.clock.monotonic_ms(self.rec.now_us())
    }

    /// Active expiry, and the `aof-everysec` fsync: called every millisecond.
    pub fn tick(&self) {
        if !self.running.get() || self.paused.get() {
            return;
        }
        if let Kind::Master(master) = &self.kind {
            let MasterState {
                engine,
                setup,
                synced,
                last_fsync_mono_ms,
                real,
                ..
            } = &**master;
            if real.is_some() {
                return;
            }
            self.expire_due(engine, master.repl.as_deref());
            if setup.persistence == Persistence::AofEverysec {
                let mono = self.monotonic_ms();
                if mono - last_fsync_mono_ms.get() >= 1000 {
                    last_fsync_mono_ms.set(mono);
                    *synced.borrow_mut() = engine.borrow().keyspace().clone();
                }
            }
        }
    }

    fn expire_due(&self, engine: &RefCell<RedisEngine>, repl: Option<&RefCell<Replication>>) {
        let expired = engine.borrow_mut().expire_due(self.wall_ms());
        if expired.is_empty() {
            return;
        }
        for key in &expired {
            self.rec
                .record(&self.name, EventKind::Expired { key: history_arg(key) });
        }
        if let Some(repl) = repl {
            publish_expired(repl, &self.name, expired, self.rec.now_us());
        }
    }

    /// Running and not paused: what the Sentinel and the replication stream can reach.
    pub fn reachable(&self) -> bool {
        self.is_running() && !self.is_paused()
    }

    /// The engine of a master or replica served by lockstep (not the resource, not a real
    /// `redis-server`).
    pub fn engine(&self) -> Option<&RefCell<RedisEngine>> {
        match &self.kind {
            Kind::Master(master) if master.real.is_none() => Some(&master.engine),
            _ => None,
        }
    }

    /// Records a note on this server.
    pub fn note(&self, text: String) {
        self.rec.record(&self.name, EventKind::Note { text });
    }

    /// Records a command of the replication stream applied on this replica (connection 0).
    pub(crate) fn record_stream_command(&self, args: Vec<String>) {
        self.rec.record(
            &self.name,
            EventKind::Command {
                conn: 0,
                args: args.into_iter().map(clip).collect(),
                reply: "+OK".to_string(),
                effects: Vec::new(),
                client: None,
            },
        );
    }

    /// Executes one command from `peer` on connection `conn`, records it, and returns the reply.
    pub(crate) fn execute(&self, session: &mut ClientSession, peer: &str, args: &[Bytes]) -> Reply {
        match &self.kind {
            Kind::Master(master) => {
                let engine = &master.engine;
                self.expire_due(engine, master.repl.as_deref());
                let name = args
                    .first()
                    .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
                    .unwrap_or_default();
                // A replica keeps no client write (it refuses or undoes it): its effects are dropped.
                let keeps_writes = master.repl.as_deref().is_none_or(|r| r.borrow().is_master(&self.name));
                let reply = if let Some(repl) = &master.repl {
                    // As its role says: a replica refuses writes, a master replicates them.
                    let mut replies = execute_member(
                        repl,
                        &self.name,
                        engine,
                        session,
                        &name,
                        &|| self.rec.now_us(),
                        &mut |session| vec![engine.borrow_mut().execute_as(session, args, self.wall_ms())],
                        &mut || {},
                    );
                    replies.pop().unwrap_or(Reply::Array(None))
                } else {
                    engine.borrow_mut().execute_as(session, args, self.wall_ms())
                };
                let effects = Some(engine.borrow_mut().take_effects())
                    .filter(|_| keeps_writes)
                    .unwrap_or_default();
                self.record_command(session, peer, args, &reply, effects);
                reply
            }
            Kind::Resource { store } => resource_command(&self.rec, &self.name, store, peer, args),
        }
    }

    /// Whether `args` is a well-formed `WAIT` to a master, which [`Server::wait`] answers (it
    /// blocks the connection; anything else about it the engine answers at once).
    pub(crate) fn blocks_on_wait(&self, args: &[Bytes]) -> bool {
        let int = |b: &Bytes| std::str::from_utf8(b).ok().and_then(|s| s.parse::<i64>().ok());
        matches!(&self.kind, Kind::Master(m) if m.real.is_none())
            && args.len() == 3
            && args[0].eq_ignore_ascii_case(b"wait")
            && int(&args[1]).is_some()
            && int(&args[2]).is_some_and(|t| t >= 0)
    }

    /// `WAIT numreplicas timeout`: blocks until that many replicas acknowledged every write this
    /// master made before it, or the timeout (ms; 0 = none) passed, and answers how many did.
    /// Without replicas none ever does. A replica refuses it, as Redis does.
    pub async fn wait(&self, peer: &str, session: &mut ClientSession, args: &[Bytes]) -> Reply {
        let Kind::Master(master) = &self.kind else {
            return self.execute(session, peer, args);
        };
        let int = |b: &Bytes| {
            std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or(0)
        };
        let (want, timeout_ms) = (int(&args[1]), int(&args[2]));
        let reply = match &master.repl {
            Some(repl) if !repl.borrow().is_master(&self.name) => {
                Reply::error("ERR WAIT cannot be used with replica instances.")
            }
            repl => {
                let target = repl.as_ref().map(|r| r.borrow().offset(&self.name));
                let acked = || match (repl, target) {
                    (Some(r), Some(t)) => r.borrow().acked_count(&self.name, t) as i64,
                    _ => 0,
                };
                let start = tokio::time::Instant::now();
                loop {
                    let n = acked();
                    let timed_out = timeout_ms > 0 && start.elapsed().as_millis() >= timeout_ms as u128;
                    if n >= want || timed_out {
                        break Reply::Integer(n);
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            }
        };
        self.record_command(session, peer, args, &reply, Vec::new());
        reply
    }

    /// Records a command `peer` sent on `session`'s connection, its reply and its key effects.
    fn record_command(
        &self,
        session: &ClientSession,
        peer: &str,
        args: &[Bytes],
        reply: &Reply,
        effects: Vec<KeyEffect>,
    ) {
        self.rec.record(
            &self.name,
            EventKind::Command {
                conn: session.id as u64,
                args: args.iter().map(|a| history_arg(a)).collect(),
                reply: clip(render_reply(reply)),
                effects,
                client: Some(peer.to_string()),
            },
        );
    }

    /// Stops the server as `kind` says; its memory becomes what its persistence kept.
    pub fn stop(&self, kind: StopKind) {
        if !self.running.get() {
            return;
        }
        self.running.set(false);
        self.generation.set(self.generation.get() + 1);
        if let Kind::Master(master) = &self.kind {
            let MasterState {
                engine,
                setup,
                synced,
                stopped_at,
                restart_pending,
                real,
                ..
            } = &**master;
            stopped_at.set(Some((self.wall_ms(), self.monotonic_ms())));
            restart_pending.set(false);
            if let Some(real) = real {
                real.borrow_mut().stop(kind == StopKind::Shutdown);
                return;
            }
            let kept = match (setup.persistence, kind) {
                (Persistence::None, _) => Keyspace::new(),
                (Persistence::AofEverysec, StopKind::PowerLoss) => synced.borrow().clone(),
                (Persistence::AofEverysec | Persistence::AofAlways, _) => engine.borrow().keyspace().clone(),
            };
            engine.borrow_mut().reset();
            engine.borrow_mut().restore(kept);
            if let Some(repl) = &master.repl {
                repl.borrow_mut().on_stop(&self.name);
            }
        }
    }

    /// Ms of the restart delay still to wait (0: it may start).
    fn delay_left_ms(&self) -> u64 {
        let Kind::Master(master) = &self.kind else {
            return 0;
        };
        let MasterState { setup, stopped_at, .. } = &**master;
        let Some((wall, mono)) = stopped_at.get() else {
            return 0;
        };
        let elapsed = match setup.restart_delay_clock {
            DelayClock::Monotonic => self.monotonic_ms() - mono,
            DelayClock::Wall => self.wall_ms() - wall,
        };
        (i128::from(setup.restart_delay_ms) - i128::from(elapsed)).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// Starts a stopped server now or once its restart delay has passed (see [`Self::tick_restart`]);
    /// a running one is shut down cleanly and started again.
    pub(crate) fn request_start(&self) {
        if self.running.get() {
            self.stop(StopKind::Shutdown);
        }
        let left = self.delay_left_ms();
        if left == 0 {
            self.start();
        } else if let Kind::Master(master) = &self.kind {
            let MasterState {
                setup, restart_pending, ..
            } = &**master;
            restart_pending.set(true);
            self.rec.record(
                &self.name,
                EventKind::Note {
                    text: format!(
                        "restart delayed: {left} ms of the {} ms restart delay left by its {} clock",
                        setup.restart_delay_ms,
                        setup.restart_delay_clock.name()
                    ),
                },
            );
        }
    }

    /// Starts a server whose delayed restart is due; called every millisecond.
    pub(crate) fn tick_restart(&self) {
        if let Kind::Master(master) = &self.kind {
            let MasterState { restart_pending, .. } = &**master;
            if restart_pending.get() && !self.running.get() && self.delay_left_ms() == 0 {
                restart_pending.set(false);
                self.start();
            }
        }
    }

    fn start(&self) {
        if let Kind::Master(master) = &self.kind {
            if let Some(real) = &master.real {
                // Blocks this thread until the server listens (tens of ms).
                if let Err(e) = real.borrow_mut().restart() {
                    self.rec.record(&self.name, EventKind::Note { text: e });
                    return;
                }
            }
        }
        self.running.set(true);
        if let Kind::Master(master) = &self.kind {
            let MasterState {
                engine,
                synced,
                last_fsync_mono_ms,
                ..
            } = &**master;
            last_fsync_mono_ms.set(self.monotonic_ms());
            *synced.borrow_mut() = engine.borrow().keyspace().clone();
            if let Some(repl) = &master.repl {
                repl.borrow_mut().on_start(&self.name);
            }
        }
        self.rec.record(
            &self.name,
            EventKind::Note {
                text: "started".to_string(),
            },
        );
    }
}

/// The longest argument, key or reply an event keeps, bytes: the history stays in memory for
/// the whole run, and a client may send values of many megabytes (a lock client sends keys,
/// tokens and scripts of a few hundred bytes).
pub(crate) const HISTORY_TEXT_MAX: usize = 4096;

/// An argument as a command event shows it: lossy UTF-8, cut after [`HISTORY_TEXT_MAX`] bytes
/// with its length said (`…(N bytes)`), without converting what is cut.
fn history_arg(arg: &[u8]) -> String {
    if arg.len() <= HISTORY_TEXT_MAX {
        return String::from_utf8_lossy(arg).into_owned();
    }
    format!(
        "{}…({} bytes)",
        String::from_utf8_lossy(&arg[..HISTORY_TEXT_MAX]),
        arg.len()
    )
}

/// A rendered reply cut as [`history_arg`] cuts an argument.
fn clip(mut text: String) -> String {
    if text.len() <= HISTORY_TEXT_MAX {
        return text;
    }
    let len = text.len();
    let mut at = HISTORY_TEXT_MAX;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text.push_str(&format!("…({len} bytes)"));
    text
}

/// The resource's commands, served exactly as the simulated resource serves them
/// ([`lockstep_sim::resource::execute`]), with the writer named by the link it came in on; live
/// clients also send `INFO` and `HELLO` while connecting.
fn resource_command(rec: &LiveRecorder, node: &str, store: &RefCell<FencedStore>, peer: &str, args: &[Bytes]) -> Reply {
    let name = args
        .first()
        .and_then(|a| std::str::from_utf8(a).ok())
        .map(|s| s.to_ascii_uppercase())
        .unwrap_or_default();
    match name.as_str() {
        "INFO" => Reply::bulk(INFO),
        "HELLO" => Reply::Error("NOPROTO this server speaks RESP2 only".into()),
        _ => lockstep_sim::resource::execute(store, peer, args, &mut |mut event| {
            if let EventKind::ResourceWrite { key, .. } | EventKind::ResourceRead { key, .. } = &mut event {
                *key = clip(std::mem::take(key));
            }
            rec.record(node, event);
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::{clip, history_arg, HISTORY_TEXT_MAX};

    #[test]
    fn long_history_texts_are_cut_with_their_length() {
        assert_eq!(history_arg(b"lock"), "lock");
        let long = vec![b'x'; HISTORY_TEXT_MAX + 10];
        let shown = history_arg(&long);
        assert!(shown.starts_with(&"x".repeat(HISTORY_TEXT_MAX)));
        assert!(shown.ends_with(&format!("…({} bytes)", HISTORY_TEXT_MAX + 10)));
        // A cut inside a character backs off to its start.
        let text = format!("{}é{}", "a".repeat(HISTORY_TEXT_MAX - 1), "b".repeat(100));
        let cut = clip(text.clone());
        assert!(
            cut.starts_with(&"a".repeat(HISTORY_TEXT_MAX - 1)) && !cut.contains('é'),
            "{cut}"
        );
        assert!(cut.ends_with(&format!("…({} bytes)", text.len())));
        assert_eq!(clip("+OK".to_string()), "+OK");
    }
}
