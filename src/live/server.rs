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
//! `HELLO 2` (clients send them while connecting). `WAIT` blocks the connection in the one server
//! loop ([`lockstep_sim::redis::server`]), as on the simulated master.
//!
//! Replicas are servers of the same kind sharing one [`Replication`] with their master (the
//! simulation's bookkeeping, [`lockstep_sim::redis::replication`]): a command runs as the
//! server's role says ([`lockstep_sim::redis::master::execute_member`]: a replica answers writes with
//! `READONLY`, a master with replicas publishes each command's effects and each expiry), a stop
//! drops what was not yet delivered and a start resynchronises; [`super::replication`] delivers the
//! stream after its lag, runs the Sentinel and promotes. Left out: replicas behind real
//! `redis-server`s.

use super::real::RealRedis;
use super::recorder::LiveRecorder;
use bytes::Bytes;
use lockstep_history::history::{bound_text, MAX_EVENT_ARG_BYTES};
use lockstep_sim::clock::NodeClock;
use lockstep_sim::redis::replication::Replication;
use lockstep_sim::redis::server::{Control, LocalFuture, RecordedCommand, RedisHost, RedisServer};
use lockstep_sim::redis::{EngineConfig, Keyspace, RedisEngine, Reply};
use lockstep_sim::resource::FencedStore;
use lockstep_sim::{DelayClock, EventKind, FencingMode, MasterSetup, Persistence};
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

/// The resource's minimal `INFO` reply.
const INFO: &str = "# Server\r\nredis_version:7.2.0\r\nredis_mode:standalone\r\n# Persistence\r\nloading:0\r\n";

/// How a server stops (the rule of what survives is the simulation's own).
pub use lockstep_sim::deployment::StopKind;

enum Kind {
    Master(Box<MasterState>),
    Resource { store: RefCell<FencedStore> },
}

struct MasterState {
    engine: Rc<RefCell<RedisEngine>>,
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

/// A live server as the host of the one Redis server loop ([`lockstep_sim::redis::server`]): its clock
/// read at the run's real time, tokio's sleeps, its pause, and the run's history (commands
/// recorded as every host records them, [`RecordedCommand::event`]).
#[derive(Clone)]
pub struct LiveHost {
    name: String,
    clock: Rc<NodeClock>,
    rec: LiveRecorder,
    server: Weak<Server>,
}

impl RedisHost for LiveHost {
    fn name(&self) -> &str {
        &self.name
    }

    fn wall_ms(&self) -> i64 {
        self.clock.wall_ms(self.rec.now_us())
    }

    fn monotonic_ms(&self) -> i64 {
        self.clock.monotonic_ms(self.rec.now_us())
    }

    fn true_time_us(&self) -> u64 {
        self.rec.now_us()
    }

    fn sleep_local_ms(&self, local_ms: u64) -> LocalFuture<()> {
        let real_us = self.clock.local_to_sim_us(local_ms.saturating_mul(1_000));
        Box::pin(tokio::time::sleep(std::time::Duration::from_micros(real_us)))
    }

    fn record(&self, event: EventKind) {
        self.rec.record(&self.name, event);
    }

    fn record_command(&self, c: RecordedCommand<'_>) {
        self.rec.record(&self.name, c.event());
    }

    fn is_paused(&self) -> bool {
        self.server.upgrade().is_some_and(|s| s.is_paused())
    }

    fn control(&self, _conn: u64, _peer: &str, args: &[Bytes]) -> Option<Control> {
        let controller = self.server.upgrade()?.control.borrow().as_ref()?.upgrade()?;
        controller.command(&self.name, args)
    }
}

/// What answers the control commands of `lockstep serve` ([`super::control::Controller`]).
pub trait ControlCommands {
    /// The control command `args` sent to server `node`, answered; `None`: not one.
    fn command(self: Rc<Self>, node: &str, args: &[Bytes]) -> Option<Control>;
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
    /// The Redis server lockstep serves (not for the resource or a real `redis-server`).
    redis: Option<Rc<RedisServer<LiveHost>>>,
    /// `lockstep serve`'s controller, which answers the test's control commands
    /// ([`super::control`]); weak: it holds the servers.
    control: RefCell<Option<Weak<dyn ControlCommands>>>,
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
        Self::build(name, setup, rec, repl, None)
    }

    fn build(
        name: &str,
        setup: MasterSetup,
        rec: &LiveRecorder,
        repl: Option<Rc<RefCell<Replication>>>,
        real: Option<RealRedis>,
    ) -> Rc<Self> {
        let clock = rec.add_clock(name, setup.clock.offset_ms, setup.clock.drift_ppm);
        let engine = Rc::new(RefCell::new(RedisEngine::new(EngineConfig::default())));
        Rc::new_cyclic(|me| {
            let redis = real.is_none().then(|| {
                let host = LiveHost {
                    name: name.to_string(),
                    clock: clock.clone(),
                    rec: rec.clone(),
                    server: me.clone(),
                };
                RedisServer::new(host, engine.clone(), repl.clone())
            });
            Server {
                name: name.to_string(),
                clock,
                rec: rec.clone(),
                kind: Kind::Master(Box::new(MasterState {
                    engine,
                    setup,
                    synced: RefCell::new(Keyspace::new()),
                    last_fsync_mono_ms: Cell::new(0),
                    stopped_at: Cell::new(None),
                    restart_pending: Cell::new(false),
                    real: real.map(RefCell::new),
                    repl,
                })),
                running: Cell::new(true),
                paused: Cell::new(false),
                generation: Cell::new(0),
                next_conn: Cell::new(0),
                redis,
                control: RefCell::new(None),
            }
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
        Ok(Self::build(name, setup, rec, None, Some(real)))
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
            redis: None,
            control: RefCell::new(None),
        })
    }

    /// Lets `controller` answer the control commands sent to this server (`lockstep serve`).
    pub fn set_control(&self, controller: Weak<dyn ControlCommands>) {
        *self.control.borrow_mut() = Some(controller);
    }

    /// The Redis server lockstep serves here (`None`: the resource, or a real `redis-server`).
    pub fn redis(&self) -> Option<&Rc<RedisServer<LiveHost>>> {
        self.redis.as_ref()
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
            if let Some(redis) = &self.redis {
                redis.expire_due();
            }
            if setup.persistence == Persistence::AofEverysec {
                let mono = self.monotonic_ms();
                if mono - last_fsync_mono_ms.get() >= 1000 {
                    last_fsync_mono_ms.set(mono);
                    *synced.borrow_mut() = engine.borrow().keyspace().clone();
                }
            }
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

    /// Records an event of this server.
    pub(crate) fn record(&self, event: EventKind) {
        self.rec.record(&self.name, event);
    }

    /// Executes one command of the resource from `peer`, records it, and returns the reply (a
    /// Redis server's commands are served by [`Self::redis`]).
    pub(crate) fn execute_resource(&self, peer: &str, args: &[Bytes]) -> Reply {
        match &self.kind {
            Kind::Resource { store } => resource_command(&self.rec, &self.name, store, peer, args),
            Kind::Master(_) => Reply::error("ERR internal: a Redis server's commands go through its connection loop"),
        }
    }

    /// The server as a host of the server loop (for the resource's connections).
    pub(crate) fn host(self: &Rc<Self>) -> LiveHost {
        LiveHost {
            name: self.name.clone(),
            clock: self.clock.clone(),
            rec: self.rec.clone(),
            server: Rc::downgrade(self),
        }
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
            let kept = setup
                .persistence
                .kept_after(kind, engine.borrow().keyspace(), &synced.borrow());
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
                // A client may name a key of many megabytes: kept as the history keeps an argument.
                bound_text(key, MAX_EVENT_ARG_BYTES);
            }
            rec.record(node, event);
        }),
    }
}
