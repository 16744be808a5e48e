//! A simulated node as its own software sees it: its name, its clocks, its pause gate, its
//! random stream, and a way to log into the history.
//!
//! Code running on a node (a lock client, a Redis master) only ever reads time through its
//! [`Node`]: `wall_ms()` jumps with the node's wall clock, `monotonic_ms()` never jumps, and
//! `sleep_local_ms()` sleeps by the node's own rate. Tasks must be spawned with [`Node::spawn`]
//! so that a pause freezes them too.
//!
//! The world applies the faults that concern one node only through `Node::apply_fault`: a
//! pause closes its gate, a clock jump or drift change moves its clock, a `drop-reply` arms the
//! replies its server is to lose (see [`lockstep_history::fault`]).

use crate::clock::NodeClock;
use crate::machine::TaskSet;
use crate::pause::{PauseGate, TrueTime};
use crate::wire::{SimListener, SimStream, Wire};
use lockstep_history::fault::{Fault, ReplyDrops};
use lockstep_history::history::{EventKind, HistoryHandle};
use lockstep_redis::directory::Directory;
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, RefCell, RefMut};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

struct NodeInner {
    name: String,
    clock: NodeClock,
    gate: PauseGate,
    time: TrueTime,
    history: HistoryHandle,
    rng: RefCell<ChaCha8Rng>,
    side_rng: RefCell<ChaCha8Rng>,
    directory: Directory,
    reply_drops: ReplyDrops,
    tasks: TaskSet,
    wire: Wire,
    /// The monotonic reading of the last event this node recorded (the self-check that it
    /// never goes backwards).
    last_monotonic_ms: Cell<i64>,
    /// Bytes of the replies to this node's lock commands so far ([`Node::carry_reply_bytes`]).
    reply_bytes: Cell<u64>,
    /// Why this node's lock sends nothing more in this run ([`Node::stop_lock`]), if so.
    lock_stopped: RefCell<Option<String>>,
}

/// The most bytes the replies to one node's lock commands may carry in one run: 16 MiB. A
/// lock's replies are a few bytes each (`OK`, `1`, a token, a value of at most 255 bytes); a
/// lock script that answers megabytes on every attempt would make the run's cost grow without
/// bound (every retry builds, sends and reads the reply again). Past it the lock sends nothing
/// more and its operations fail, naming the cause (see [`Node::carry_reply_bytes`]).
pub const MAX_LOCK_REPLY_BYTES_PER_NODE: u64 = 16 << 20;

/// A node's lock replies carried more than [`MAX_LOCK_REPLY_BYTES_PER_NODE`] in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the replies to this client's lock commands carried {0} bytes in this run, more than the {max} allowed: \
     a lock's replies are a few bytes each; the lock sends nothing more in this run",
    max = MAX_LOCK_REPLY_BYTES_PER_NODE
)]
pub struct RepliesTooLarge(pub u64);

/// A handle to one simulated node. Cheap to clone; not `Send` (a simulation runs on one thread).
#[derive(Clone)]
pub struct Node {
    inner: Rc<NodeInner>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("name", &self.inner.name).finish()
    }
}

/// The local time ran out before the future completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("timed out after {0} ms by the node's clock")]
pub struct LocalTimeout(pub u64);

impl Node {
    pub(crate) fn new(
        name: &str,
        clock: NodeClock,
        time: TrueTime,
        history: HistoryHandle,
        (rng, side_rng): (ChaCha8Rng, ChaCha8Rng),
        directory: Directory,
        wire: Wire,
    ) -> Self {
        wire.add_host(name);
        Node {
            inner: Rc::new(NodeInner {
                name: name.to_string(),
                clock,
                gate: PauseGate::new(time.clone()),
                time,
                history,
                rng: RefCell::new(rng),
                side_rng: RefCell::new(side_rng),
                directory,
                reply_drops: ReplyDrops::default(),
                tasks: TaskSet::default(),
                wire,
                last_monotonic_ms: Cell::new(i64::MIN),
                reply_bytes: Cell::new(0),
                lock_stopped: RefCell::new(None),
            }),
        }
    }

    /// The node's name (also its host name in the simulated network).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// True simulated time in µs (what no node can read; for the history and the world).
    pub fn true_time_us(&self) -> u64 {
        self.inner.time.now_us()
    }

    /// The node's wall clock, ms since the Unix epoch. Jumps with clock-jump faults.
    pub fn wall_ms(&self) -> i64 {
        self.inner.clock.wall_ms(self.true_time_us())
    }

    /// The node's monotonic clock in ms. Drifts, never jumps.
    pub fn monotonic_ms(&self) -> i64 {
        self.inner.clock.monotonic_ms(self.true_time_us())
    }

    /// The node's clock (to apply faults).
    pub fn clock(&self) -> &NodeClock {
        &self.inner.clock
    }

    /// The server a client should talk to for `host`: the current master of the replication
    /// group named `host` (as a Sentinel-aware client asks Sentinel), or `host` itself.
    pub fn resolve(&self, host: &str) -> String {
        self.inner.directory.resolve(host)
    }

    /// Applies the part of `fault` that concerns this node alone (a pause, a clock jump, a drift
    /// change, replies to drop); other faults change nothing here.
    pub(crate) fn apply_fault(&self, fault: &Fault) {
        match fault {
            Fault::Pause { duration_ms, .. } => self.inner.gate.pause_for_us(duration_ms.saturating_mul(1_000)),
            Fault::ClockJump { delta_ms, .. } => self.inner.clock.jump(*delta_ms),
            Fault::Drift { drift_ppm, .. } => self.inner.clock.set_drift(self.true_time_us(), *drift_ppm),
            _ => self.inner.reply_drops.arm(fault),
        }
    }

    /// Whether the reply this server is about to send to `client` is lost (a `drop-reply` fault);
    /// counts it if so.
    pub(crate) fn drops_reply_to(&self, client: &str) -> bool {
        self.inner.reply_drops.take(client)
    }

    /// The node's pause gate.
    pub(crate) fn gate(&self) -> &PauseGate {
        &self.inner.gate
    }

    /// Whether the node is frozen now.
    pub fn is_paused(&self) -> bool {
        self.inner.gate.is_paused()
    }

    /// The node's own random stream (derived from the run's seed and the node's name).
    pub fn rng(&self) -> RefMut<'_, ChaCha8Rng> {
        self.inner.rng.borrow_mut()
    }

    /// The node's second random stream (`node/NAME/side`), independent of [`Self::rng`]: for a
    /// part of the software whose draws must not shift the other part's. lockstep's lock clients
    /// draw their values and jitter here, so a client's workload draws the same work times
    /// whatever lock it runs — a subject and its reference meet the same schedule.
    pub fn side_rng(&self) -> RefMut<'_, ChaCha8Rng> {
        self.inner.side_rng.borrow_mut()
    }

    /// Appends an event stamped with the true time and this node's readings. Returns its `seq`.
    pub fn record(&self, kind: EventKind) -> u64 {
        let at_us = self.true_time_us();
        let monotonic_ms = self.inner.clock.monotonic_ms(at_us);
        // The simulator checks itself: a node's monotonic clock never reads less than it did.
        assert!(
            monotonic_ms >= self.inner.last_monotonic_ms.get(),
            "simulator invariant: {}'s monotonic clock went from {} ms to {monotonic_ms} ms",
            self.inner.name,
            self.inner.last_monotonic_ms.get()
        );
        self.inner.last_monotonic_ms.set(monotonic_ms);
        self.inner.history.push(
            at_us,
            &self.inner.name,
            self.inner.clock.wall_ms(at_us),
            monotonic_ms,
            kind,
        )
    }

    /// Counts `bytes` of replies to this node's lock commands into the run's total (saturating):
    /// `Err` once the total is past [`MAX_LOCK_REPLY_BYTES_PER_NODE`] (call with 0 to ask before
    /// sending). A lock that gets `Err` sends nothing more: the bound keeps what one run costs
    /// independent of what a lock's script answers.
    pub fn carry_reply_bytes(&self, bytes: u64) -> Result<(), String> {
        let total = self.inner.reply_bytes.get().saturating_add(bytes);
        self.inner.reply_bytes.set(total);
        if total > MAX_LOCK_REPLY_BYTES_PER_NODE {
            self.stop_lock(RepliesTooLarge(total).to_string());
        }
        match self.lock_stopped() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Stops this node's lock for the rest of the run: it sends nothing more, and every
    /// operation fails with `why` (the first reason is kept). For a lock whose every attempt
    /// would cost without bound (a script that answers megabytes, or runs into the simulated
    /// server's memory or instruction budget on each attempt).
    pub fn stop_lock(&self, why: String) {
        self.inner.lock_stopped.borrow_mut().get_or_insert(why);
    }

    /// Why this node's lock was stopped ([`Node::stop_lock`]), if it was.
    pub fn lock_stopped(&self) -> Option<String> {
        self.inner.lock_stopped.borrow().clone()
    }

    /// A fresh operation id for [`EventKind::Op`].
    pub fn next_op_id(&self) -> u64 {
        self.inner.history.next_op_id()
    }

    /// Spawns a task on this node, behind its pause gate.
    pub fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let handle = tokio::task::spawn_local(self.inner.gate.gate(future));
        self.inner.tasks.push(handle.abort_handle());
        handle
    }

    /// The tasks this node has spawned (a crash aborts them).
    pub(crate) fn tasks(&self) -> TaskSet {
        self.inner.tasks.clone()
    }

    /// Opens a connection from this node to `host:port` over the simulated network (see
    /// [`crate::wire`]). Fails with `ConnectionRefused` when nothing listens there, `NotFound`
    /// for an unknown host; waits forever when the SYN is lost (callers put a timeout on it).
    pub async fn connect(&self, host: &str, port: u16) -> std::io::Result<SimStream> {
        self.inner.wire.connect(&self.inner.name, host, port).await
    }

    /// Listens on `port` of this node.
    pub fn bind(&self, port: u16) -> std::io::Result<SimListener> {
        self.inner.wire.bind(&self.inner.name, port)
    }

    /// Sleeps `local_ms` milliseconds as counted by this node's clock rate.
    pub async fn sleep_local_ms(&self, local_ms: u64) {
        let true_us = self.inner.clock.local_to_sim_us(local_ms.saturating_mul(1_000));
        self.inner.time.sleep(Duration::from_micros(true_us)).await;
    }

    /// Sleeps `true_ms` milliseconds of true time (a start offset written in true time: no clock
    /// of the node is involved).
    pub async fn sleep_true_ms(&self, true_ms: u64) {
        self.inner.time.sleep(Duration::from_millis(true_ms)).await;
    }

    /// Runs `future` with a deadline of `local_ms` by this node's clock rate.
    pub async fn timeout_local_ms<F: Future>(&self, local_ms: u64, future: F) -> Result<F::Output, LocalTimeout> {
        let true_us = self.inner.clock.local_to_sim_us(local_ms.saturating_mul(1_000));
        self.inner
            .time
            .timeout(Duration::from_micros(true_us), future)
            .await
            .map_err(|_| LocalTimeout(local_ms))
    }
}
