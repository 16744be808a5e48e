//! The history of a turmoil run: one [`History`] stamped with turmoil's simulated time and each
//! node's own clock, and the recorder a service uses to log its lock operations into it.
//!
//! True time is turmoil's: inside a host or a client, `turmoil::sim_elapsed()` (which includes
//! the progress made inside the current tick); outside the simulation (the test driver between
//! two `Sim::step`s), the `Sim::elapsed()` the driver's call passed in. turmoil runs the hosts of
//! one step one after the other, each from the step's start, so a host can read a time earlier
//! than the one the host before it last read: every reading is raised to the latest one seen, so
//! true time never goes backwards along the history (an event may be stamped up to one tick late).
//!
//! Each node (a Redis host or a service) reads its own clock ([`NodeClock`]: offset, drift and
//! jumps over that true time, as in lockstep's worlds); a node without a clock of its own gets an
//! exact one (offset 0, drift 0) on first use.

use lockstep::ops::{AcquireInvoke, Grant, GrantRef, OpError};
use lockstep_sim::clock::NodeClock;
use lockstep_sim::{ClockSpec, EventKind, History, Phase};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

/// The shared recording of one turmoil run: its history and every node's clock. Cheap to
/// clone (a handle); single-threaded, as turmoil's simulation is.
#[derive(Clone)]
pub struct Recording(Rc<Inner>);

struct Inner {
    epoch_ms: i64,
    history: RefCell<History>,
    clocks: RefCell<BTreeMap<String, Rc<NodeClock>>>,
    /// The latest true time read, µs: no reading goes below it.
    latest_us: Cell<u64>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("epoch_ms", &self.0.epoch_ms)
            .field("events", &self.0.history.borrow().len())
            .finish_non_exhaustive()
    }
}

impl Recording {
    /// An empty recording whose clocks read `epoch_ms` (ms since the Unix epoch) plus their
    /// offset at true time 0.
    pub fn new(epoch_ms: i64) -> Self {
        Recording(Rc::new(Inner {
            epoch_ms,
            history: RefCell::new(History::new()),
            clocks: RefCell::new(BTreeMap::new()),
            latest_us: Cell::new(0),
        }))
    }

    /// Gives `node` the clock `spec` describes, replacing any it had.
    ///
    /// # Panics
    /// If `spec.drift_ppm <= -1_000_000` (checked by the builder before it gets here).
    pub(crate) fn set_clock(&self, node: &str, spec: ClockSpec) -> Rc<NodeClock> {
        let clock = Rc::new(NodeClock::new(self.0.epoch_ms, spec.offset_ms, spec.drift_ppm));
        self.0.clocks.borrow_mut().insert(node.to_string(), clock.clone());
        clock
    }

    /// `node`'s clock (an exact one, made now, if it had none).
    pub fn clock(&self, node: &str) -> Rc<NodeClock> {
        if let Some(clock) = self.0.clocks.borrow().get(node) {
            return clock.clone();
        }
        self.set_clock(node, ClockSpec::default())
    }

    /// True time now, µs: turmoil's simulated time inside the simulation, else the latest time
    /// seen (raised to `driver_us` when the driver passes `Sim::elapsed()`); never below a time
    /// read before.
    pub fn now_us(&self) -> u64 {
        self.advance_to(turmoil::sim_elapsed().map_or(0, |d| d.as_micros() as u64))
    }

    /// Raises true time to at least `at_us` (the driver's `Sim::elapsed()`); returns true time.
    pub(crate) fn advance_to(&self, at_us: u64) -> u64 {
        let now = self.0.latest_us.get().max(at_us);
        self.0.latest_us.set(now);
        now
    }

    /// `node`'s wall-clock reading now, ms since the Unix epoch.
    pub fn wall_ms(&self, node: &str) -> i64 {
        let now = self.now_us();
        self.clock(node).wall_ms(now)
    }

    /// `node`'s monotonic-clock reading now, ms.
    pub fn monotonic_ms(&self, node: &str) -> i64 {
        let now = self.now_us();
        self.clock(node).monotonic_ms(now)
    }

    /// Appends an event of `node` at true time now, with `node`'s clock readings; returns its
    /// `seq`. Long texts are cut as [`History::push`] cuts them.
    pub fn record(&self, node: &str, kind: EventKind) -> u64 {
        let now = self.now_us();
        let clock = self.clock(node);
        self.0
            .history
            .borrow_mut()
            .push(now, node, clock.wall_ms(now), clock.monotonic_ms(now), kind)
    }

    /// A fresh operation id (shared by every node, as in lockstep's worlds).
    pub fn next_op_id(&self) -> u64 {
        self.0.history.borrow_mut().next_op_id()
    }

    /// A copy of the history so far.
    pub fn history(&self) -> History {
        self.0.history.borrow().clone()
    }

    /// A recorder of `node`'s lock operations.
    pub fn recorder(&self, node: &str) -> OpRecorder {
        OpRecorder {
            recording: self.clone(),
            node: node.to_string(),
        }
    }
}

/// Logs one service node's lock operations in lockstep's vocabulary (`lockstep::ops`), so that
/// lockstep's checkers read them: an `invoke`, then `ok`, `fail` or `info` (outcome unknown)
/// with the same id. The node name is the process the checkers name (`client-1`).
#[derive(Clone, Debug)]
pub struct OpRecorder {
    recording: Recording,
    node: String,
}

impl OpRecorder {
    /// The node whose operations this records.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The node's wall-clock reading now, ms since the Unix epoch.
    pub fn wall_ms(&self) -> i64 {
        self.recording.wall_ms(&self.node)
    }

    /// The node's monotonic-clock reading now, ms.
    pub fn monotonic_ms(&self) -> i64 {
        self.recording.monotonic_ms(&self.node)
    }

    /// Records an invoke of `op` with `data`; returns the operation's id.
    pub fn invoke(&self, op: &str, data: serde_json::Value) -> u64 {
        let id = self.recording.next_op_id();
        self.complete(id, op, Phase::Invoke, data);
        id
    }

    /// Records the completion (`phase`: ok, fail or info) of operation `id`.
    pub fn complete(&self, id: u64, op: &str, phase: Phase, data: serde_json::Value) {
        self.recording.record(
            &self.node,
            EventKind::Op {
                id,
                phase,
                op: op.to_string(),
                data,
            },
        );
    }

    /// `acquire` invoke: the lock `key`, asked for `ttl_ms`.
    pub fn acquire(&self, key: &str, ttl_ms: u64) -> u64 {
        self.invoke(
            "acquire",
            to_data(&AcquireInvoke {
                key: key.to_string(),
                ttl_ms,
            }),
        )
    }

    /// `acquire` ok: the lock was granted.
    pub fn acquired(&self, id: u64, grant: &Grant) {
        self.complete(id, "acquire", Phase::Ok, to_data(grant));
    }

    /// `release` invoke of `grant`.
    pub fn release(&self, grant: &Grant) -> u64 {
        self.invoke("release", to_data(&GrantRef::from(grant)))
    }

    /// `release` ok: whether the masters still held the grant's value (a `false` is a release
    /// that found the lock gone or taken).
    pub fn released(&self, id: u64, released: bool) {
        self.complete(id, "release", Phase::Ok, serde_json::json!({ "released": released }));
    }

    /// Operation `id` (`op`) failed: it certainly took no effect (`outcome_unknown: false`,
    /// recorded as `fail`), or it may have (`true`, recorded as `info`: a timeout, a lost
    /// connection).
    pub fn failed(&self, id: u64, op: &str, error: &str, outcome_unknown: bool) {
        let phase = if outcome_unknown { Phase::Info } else { Phase::Fail };
        self.complete(
            id,
            op,
            phase,
            to_data(&OpError {
                error: error.to_string(),
            }),
        );
    }
}

/// Op data as JSON (plain structs with string keys never fail to serialise).
fn to_data<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}
