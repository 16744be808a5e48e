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
//!
//! The protected resource (what the lock guards) is lockstep's fenced store
//! ([`lockstep_sim::resource::FencedStore`], judged by the mode the builder gave: `unfenced`,
//! `fenced` or `strict`), kept in the recording and reached by [`OpRecorder::write`] and
//! [`OpRecorder::read`]: each call is a `write`/`read` operation of the service node and the
//! resource's judgement (`ResourceWrite`/`ResourceRead` on node `resource`), as lockstep's
//! workload records them, so `stale-write`, `lost-update` and `token-order` have their evidence.
//! Left out: the resource is not a turmoil host — a call reaches it at once, with no network
//! delay, partition or pause between the service and it.

use lockstep::history::{ReadInvoke, WriteOk};
use lockstep::ops::{AcquireInvoke, Grant, GrantRef, OpError, ReadOk, WriteInvoke};
use lockstep_sim::clock::NodeClock;
use lockstep_sim::redis::Reply;
use lockstep_sim::resource::FencedStore;
use lockstep_sim::{ClockSpec, Event, EventKind, FencingMode, History, Phase};
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
    /// The protected resource, and how it judges fencing tokens.
    resource: RefCell<FencedStore>,
    resource_mode: Cell<FencingMode>,
    /// The nodes recorders were made for, in order of first request.
    services: RefCell<Vec<String>>,
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
            resource: RefCell::new(FencedStore::new(FencingMode::Unfenced)),
            resource_mode: Cell::new(FencingMode::Unfenced),
            services: RefCell::new(Vec::new()),
        }))
    }

    /// Makes the protected resource an empty one judging by `mode`.
    pub(crate) fn set_resource(&self, mode: FencingMode) {
        *self.0.resource.borrow_mut() = FencedStore::new(mode);
        self.0.resource_mode.set(mode);
    }

    /// How the protected resource judges fencing tokens.
    pub fn resource_mode(&self) -> FencingMode {
        self.0.resource_mode.get()
    }

    /// The service nodes recorders were made for, in order of first request.
    pub fn services(&self) -> Vec<String> {
        self.0.services.borrow().clone()
    }

    /// Calls `f` with every event from position `from` on (without copying the history);
    /// returns the position after the last.
    pub(crate) fn scan_from(&self, from: usize, f: &mut dyn FnMut(&Event)) -> usize {
        let history = self.0.history.borrow();
        let events = history.events();
        for event in events.iter().skip(from) {
            f(event);
        }
        events.len()
    }

    /// Runs one resource command (`FWRITE key value [token]`, `FREAD key [token]`) from `node`
    /// against the resource, recording its judgement on node `resource`.
    fn resource_command(&self, node: &str, args: &[String]) -> Reply {
        let args: Vec<bytes::Bytes> = args.iter().map(|a| bytes::Bytes::from(a.clone())).collect();
        let mut judged = Vec::new();
        let reply = lockstep_sim::resource::execute(&self.0.resource, node, &args, &mut |event| judged.push(event));
        for event in judged {
            self.record(lockstep::scenario::RESOURCE_NODE, event);
        }
        reply
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

    /// A recorder of `node`'s lock operations (the node is listed among the services).
    pub fn recorder(&self, node: &str) -> OpRecorder {
        {
            let mut services = self.0.services.borrow_mut();
            if !services.iter().any(|s| s == node) {
                services.push(node.to_string());
            }
        }
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

    /// Writes `value` to the protected resource's `key` with `fencing_token` (the grant's, if
    /// the lock issues tokens), recorded as a `write` operation of this node and the resource's
    /// judgement. `Ok`: the key's version after the write; `Err`: the resource's refusal
    /// (`FENCED token … rejected: highest accepted is …`), recorded as the write's `fail`.
    pub fn write(&self, key: &str, value: i64, fencing_token: Option<u64>) -> Result<u64, String> {
        let invoke = WriteInvoke {
            key: key.to_string(),
            value,
            fencing_token,
        };
        let id = self.invoke("write", to_data(&invoke));
        let mut args = vec!["FWRITE".to_string(), key.to_string(), value.to_string()];
        args.extend(fencing_token.map(|t| t.to_string()));
        match self.recording.resource_command(&self.node, &args) {
            Reply::Integer(version) => {
                let version = version.max(0) as u64;
                self.complete(id, "write", Phase::Ok, to_data(&WriteOk { version }));
                Ok(version)
            }
            other => {
                let error = reply_error(other);
                self.failed(id, "write", &error, false);
                Err(error)
            }
        }
    }

    /// Reads the protected resource's `key` on behalf of the holder of `fencing_token`
    /// (a fenced resource refuses a token below the highest it has seen, and an accepted one
    /// raises it), recorded as a `read` operation and the resource's judgement. `Ok`: its value
    /// (`None` until written) and version; `Err`: the resource's refusal.
    pub fn read(&self, key: &str, fencing_token: Option<u64>) -> Result<ReadOk, String> {
        let invoke = ReadInvoke {
            key: key.to_string(),
            fencing_token,
        };
        let id = self.invoke("read", to_data(&invoke));
        let mut args = vec!["FREAD".to_string(), key.to_string()];
        args.extend(fencing_token.map(|t| t.to_string()));
        match self.recording.resource_command(&self.node, &args) {
            Reply::Array(Some(items)) if items.len() == 2 => {
                let value = match items[0] {
                    Reply::Integer(v) => Some(v),
                    _ => None,
                };
                let version = match items[1] {
                    Reply::Integer(v) => v.max(0) as u64,
                    _ => 0,
                };
                let ok = ReadOk { value, version };
                self.complete(id, "read", Phase::Ok, to_data(&ok));
                Ok(ok)
            }
            other => {
                let error = reply_error(other);
                self.failed(id, "read", &error, false);
                Err(error)
            }
        }
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

/// The text of a resource reply that is not the expected success.
fn reply_error(reply: Reply) -> String {
    match reply {
        Reply::Error(message) => message,
        other => format!("unexpected reply from the resource: {other:?}"),
    }
}

/// Op data as JSON (plain structs with string keys never fail to serialise).
fn to_data<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}
