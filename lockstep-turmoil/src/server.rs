//! One Redis master as a turmoil host: lockstep's engine, the node's clock, its persistence, and
//! the software turmoil starts (and starts again after a `bounce`).
//!
//! The server's state lives outside turmoil's host runtime, in the [`Server`] the host's software
//! factory shares: turmoil drops every task of a host when it crashes it, and calls the factory
//! again when it bounces it, and the keyspace must outlive the one and be judged by persistence at
//! the other. What a stop keeps is what lockstep's deployment keeps (`lockstep_sim::deployment`):
//! with `none` nothing (the host restarts empty), with `aof-always` everything acknowledged, with
//! `aof-everysec` everything on a process crash and, on a power loss, what the last fsync (every
//! second of the node's monotonic clock) had written. The script cache never survives a stop.
//!
//! Connections are served by lockstep's one server loop ([`lockstep_sim::redis::server::RedisServer`],
//! generic over the stream: here `turmoil::net::TcpStream`), through [`TurmoilHost`], this
//! crate's [`RedisHost`]: the node's clocks over turmoil's time, sleeping by the node's clock rate
//! on the host's (simulated) tokio timer, and recording into the run's history. Each start of the
//! software makes a fresh `RedisServer` over the kept engine: the sessions and blocked clients of
//! the old process went with it.
//!
//! Active expiry runs in its own task of the host: it sleeps by the node's clock rate until the
//! first key's expiry on the node's wall clock, and is woken early by every command and every
//! clock fault (a wall-clock jump forward expires keys at once). Each expired key is recorded
//! (`expired`), as each command is with its reply.

use crate::recording::Recording;
use lockstep_sim::clock::NodeClock;
use lockstep_sim::redis::server::{ConnectionOptions, LocalFuture, RecordedCommand, RedisHost, RedisServer};
use lockstep_sim::redis::{EngineConfig, Keyspace, RedisEngine};
use lockstep_sim::{EventKind, Persistence, REDIS_PORT};
use std::cell::{Cell, RefCell};
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;

/// Parts per million.
const PPM: i128 = 1_000_000;

pub(crate) use lockstep_sim::deployment::StopKind;

/// One Redis master's state, shared by its turmoil software and the driver's fault calls.
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) clock: Rc<NodeClock>,
    pub(crate) engine: Rc<RefCell<RedisEngine>>,
    pub(crate) persistence: Persistence,
    pub(crate) recording: Recording,
    /// Whether its process runs, as lockstep knows it (a crash through turmoil alone is seen at
    /// the next start).
    running: Cell<bool>,
    /// How many times turmoil started its software.
    starts: Cell<u64>,
    /// The keyspace as of the last fsync (`aof-everysec`), and the monotonic ms of that fsync.
    synced: RefCell<Keyspace>,
    last_fsync_mono_ms: Cell<i64>,
    /// Wakes the expiry task: a command ran or the clock moved.
    wake: Notify,
    next_conn: Cell<u64>,
}

impl Server {
    pub(crate) fn new(name: &str, clock: Rc<NodeClock>, persistence: Persistence, recording: Recording) -> Self {
        Server {
            name: name.to_string(),
            clock,
            engine: Rc::new(RefCell::new(RedisEngine::new(EngineConfig::default()))),
            persistence,
            recording,
            running: Cell::new(false),
            starts: Cell::new(0),
            synced: RefCell::new(Keyspace::new()),
            last_fsync_mono_ms: Cell::new(0),
            wake: Notify::new(),
            next_conn: Cell::new(0),
        }
    }

    /// Whether its process runs, as far as lockstep knows.
    pub(crate) fn is_running(&self) -> bool {
        self.running.get()
    }

    fn note(&self, text: String) {
        self.recording.record(&self.name, EventKind::Note { text });
    }

    /// Wakes the expiry task (a command changed the keyspace, or the clock moved).
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// `aof-everysec`: the fsyncs due since the last one, done now (nothing changed the keyspace
    /// since the last command, which caught up before it ran, but expiries).
    fn fsync_catch_up(&self) {
        if self.persistence != Persistence::AofEverysec || !self.running.get() {
            return;
        }
        let mono = self.clock.monotonic_ms(self.recording.now_us());
        let last = self.last_fsync_mono_ms.get();
        if mono - last >= 1_000 {
            *self.synced.borrow_mut() = self.engine.borrow().keyspace().clone();
            self.last_fsync_mono_ms.set(last + (mono - last) / 1_000 * 1_000);
        }
    }

    /// Stops the process: its memory becomes what its persistence mode kept; the script cache
    /// and the sessions go with the process.
    pub(crate) fn stop(&self, kind: StopKind) {
        if !self.running.get() {
            return;
        }
        self.fsync_catch_up();
        self.running.set(false);
        let kept = self
            .persistence
            .kept_after(kind, self.engine.borrow().keyspace(), &self.synced.borrow());
        let mut engine = self.engine.borrow_mut();
        engine.reset();
        engine.restore(kept);
    }

    /// The software turmoil runs on the host, from each (re)start: it listens on
    /// [`REDIS_PORT`], runs active expiry, and serves every connection with lockstep's server
    /// loop.
    pub(crate) async fn run(self: Rc<Self>) -> turmoil::Result {
        self.started();
        let redis = RedisServer::new(TurmoilHost(self.clone()), self.engine.clone(), None);
        let listener = turmoil::net::TcpListener::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), REDIS_PORT)).await?;
        tokio::task::spawn_local(self.clone().expire_loop(redis.clone()));
        loop {
            let (stream, addr) = listener.accept().await?;
            let conn = self.next_conn.get() + 1;
            self.next_conn.set(conn);
            let peer = turmoil::reverse_lookup(addr.ip()).unwrap_or_else(|| addr.ip().to_string());
            let redis = redis.clone();
            tokio::task::spawn_local(async move {
                // How the connection ended changes nothing for the server: a broken stream is
                // a client gone.
                let _ = redis
                    .serve_connection(stream, conn, &peer, ConnectionOptions::default())
                    .await;
            });
        }
    }

    /// Bookkeeping of a (re)start, on the software's first poll (inside a tick, where turmoil's
    /// time can be read; the factory itself runs where it cannot).
    fn started(&self) {
        let starts = self.starts.get() + 1;
        self.starts.set(starts);
        if starts > 1 && self.running.get() {
            // turmoil bounced the host without the driver telling lockstep: a crash now.
            self.stop(StopKind::Crash);
            self.note("restarted by turmoil without a crash seen by lockstep-turmoil: handled as a crash now".into());
        }
        self.running.set(true);
        *self.synced.borrow_mut() = self.engine.borrow().keyspace().clone();
        self.last_fsync_mono_ms
            .set(self.clock.monotonic_ms(self.recording.now_us()));
        if starts > 1 {
            let keys = self.engine.borrow().keyspace().len();
            self.note(format!(
                "started again (persistence {}): {keys} keys",
                self.persistence.name()
            ));
        }
    }

    /// Active expiry: sleeps by the node's clock until its first key is due on its wall clock
    /// (or a command or a clock fault wakes it), then expires what is due.
    async fn expire_loop(self: Rc<Self>, redis: Rc<RedisServer<TurmoilHost>>) {
        loop {
            redis.expire_due();
            let first_ms = self
                .engine
                .borrow()
                .keyspace()
                .iter()
                .filter_map(|(_, entry)| entry.expire_at_ms)
                .min();
            let Some(first_ms) = first_ms else {
                self.wake.notified().await;
                continue;
            };
            // A key expires once the wall clock reads past its expiry: at first_ms + 1.
            let now_us = self.recording.now_us();
            let mono_us = self.clock.monotonic_us(now_us);
            let base_ms = self.clock.wall_ms(now_us) - self.clock.monotonic_ms(now_us);
            let target_mono_us = (first_ms.saturating_add(1).saturating_sub(base_ms)).saturating_mul(1_000);
            let local_us = target_mono_us.saturating_sub(mono_us).max(1) as u64;
            tokio::select! {
                biased;
                _ = self.wake.notified() => {}
                _ = sleep_local_us(&self.clock, local_us) => {}
            }
        }
    }
}

/// A Redis master's node as lockstep's server loop sees it: its clocks over turmoil's time, its
/// sleeps on the host's simulated timer, its history.
pub(crate) struct TurmoilHost(Rc<Server>);

impl RedisHost for TurmoilHost {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn wall_ms(&self) -> i64 {
        self.0.clock.wall_ms(self.0.recording.now_us())
    }

    fn monotonic_ms(&self) -> i64 {
        self.0.clock.monotonic_ms(self.0.recording.now_us())
    }

    fn true_time_us(&self) -> u64 {
        self.0.recording.now_us()
    }

    fn sleep_local_ms(&self, local_ms: u64) -> LocalFuture<()> {
        let clock = self.0.clock.clone();
        Box::pin(async move { sleep_local_us(&clock, local_ms.saturating_mul(1_000)).await })
    }

    fn record(&self, event: EventKind) {
        self.0.recording.record(&self.0.name, event);
    }

    /// Every command as every host records it, with the name of the host that sent it.
    fn record_command(&self, command: RecordedCommand<'_>) {
        self.0.recording.record(&self.0.name, command.event());
    }

    /// Catches up the `aof-everysec` fsyncs, and wakes the expiry task: the command may give a
    /// key an earlier expiry (the task runs once the command is done: one thread).
    fn before_command(&self) {
        self.0.fsync_catch_up();
        self.0.wake();
    }
}

/// Sleeps until `local_us` µs have passed by `clock`'s rate (rounded up: never early by it).
pub(crate) async fn sleep_local_us(clock: &NodeClock, local_us: u64) {
    let rate = PPM + i128::from(clock.drift_ppm());
    let true_us = (i128::from(local_us) * PPM + rate - 1) / rate;
    tokio::time::sleep(Duration::from_micros(u64::try_from(true_us).unwrap_or(u64::MAX))).await;
}
