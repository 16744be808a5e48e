//! The live run's history: one [`History`] stamped with lockstep's own real clock.
//!
//! Every event is stamped when lockstep sees it — a request when it is written to a client's
//! stdin, an answer when its line is read, a server command when the server executes it — with
//! the real monotonic time since the run began (`at_us`), and the reading of the node's own
//! clock (scenario offset and drift, plus any jumps) as `wall_ms` / `monotonic_ms`. Everything
//! runs on one thread, so stamping at push time keeps true time non-decreasing along `seq`.
//!
//! This is the one place of lockstep that reads `std::time` for a run: live runs are real time
//! and not reproducible; the fault plan's seed is kept, the history's digest is not.

use lockstep_sim::clock::NodeClock;
use lockstep_sim::{EventKind, History, Phase};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The shared recorder of one live run (single-threaded).
#[derive(Clone)]
pub struct LiveRecorder(Rc<Inner>);

struct Inner {
    start: std::cell::Cell<Option<Instant>>,
    epoch_ms: i64,
    history: RefCell<History>,
    clocks: RefCell<BTreeMap<String, Rc<NodeClock>>>,
}

impl LiveRecorder {
    /// A recorder whose true time stands at 0 until [`Self::start`].
    pub fn new() -> Self {
        let epoch_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        LiveRecorder(Rc::new(Inner {
            start: std::cell::Cell::new(None),
            epoch_ms,
            history: RefCell::new(History::new()),
            clocks: RefCell::new(BTreeMap::new()),
        }))
    }

    /// Real microseconds since the run began (0 before it began).
    pub(crate) fn now_us(&self) -> u64 {
        self.0.start.get().map_or(0, |s| s.elapsed().as_micros() as u64)
    }

    /// Makes now true time 0 (once every adapter is ready). Events before it are stamped 0.
    pub fn start(&self) {
        if self.0.start.get().is_none() {
            self.0.start.set(Some(Instant::now()));
        }
    }

    /// Gives `node` a clock: real time plus `offset_ms`, running at `1 + drift_ppm / 1e6`.
    pub(crate) fn add_clock(&self, node: &str, offset_ms: i64, drift_ppm: i64) -> Rc<NodeClock> {
        let clock = Rc::new(NodeClock::new(self.0.epoch_ms, offset_ms, drift_ppm.max(-999_999)));
        self.0.clocks.borrow_mut().insert(node.to_string(), clock.clone());
        clock
    }

    /// `node`'s clock, if it has one.
    pub fn clock(&self, node: &str) -> Option<Rc<NodeClock>> {
        self.0.clocks.borrow().get(node).cloned()
    }

    /// `node`'s wall-clock reading now (real wall time when the node has no clock of its own).
    pub fn wall_ms(&self, node: &str) -> i64 {
        let now = self.now_us();
        match self.clock(node) {
            Some(c) => c.wall_ms(now),
            None => self.0.epoch_ms + (now / 1000) as i64,
        }
    }

    /// `node`'s monotonic reading now.
    pub fn monotonic_ms(&self, node: &str) -> i64 {
        let now = self.now_us();
        match self.clock(node) {
            Some(c) => c.monotonic_ms(now),
            None => (now / 1000) as i64,
        }
    }

    /// Appends an event at the current real time; returns its `seq`.
    pub fn record(&self, node: &str, kind: EventKind) -> u64 {
        let mut history = self.0.history.borrow_mut();
        let last = history.events().last().map_or(0, |e| e.at_us);
        let now = self.now_us().max(last);
        let (wall, mono) = match self.clock(node) {
            Some(c) => (c.wall_ms(now), c.monotonic_ms(now)),
            None => (self.0.epoch_ms + (now / 1000) as i64, (now / 1000) as i64),
        };
        history.push(now, node, wall, mono, kind)
    }

    /// A fresh operation id.
    pub(crate) fn next_op_id(&self) -> u64 {
        self.0.history.borrow_mut().next_op_id()
    }

    /// Records an operation event.
    pub fn op(&self, node: &str, id: u64, phase: Phase, op: &str, data: serde_json::Value) -> u64 {
        self.record(
            node,
            EventKind::Op {
                id,
                phase,
                op: op.to_string(),
                data,
            },
        )
    }

    /// A copy of the history so far.
    pub fn history(&self) -> History {
        self.0.history.borrow().clone()
    }
}

impl Default for LiveRecorder {
    fn default() -> Self {
        Self::new()
    }
}
