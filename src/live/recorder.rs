//! The live run's history: one [`History`] stamped with lockstep's own real clock.
//!
//! Every event is stamped when lockstep sees it — a request when it is written to a client's
//! stdin, an answer when its line is read, a server command when the server executes it — with
//! the real monotonic time since the run began (`at_us`), and the reading of the node's own
//! clock (scenario offset and drift, plus any jumps) as `wall_ms` / `monotonic_ms`. The servers
//! run on one thread, so stamping at push time keeps true time non-decreasing along `seq`.
//!
//! The history itself sits behind a mutex ([`SharedHistory`]) so that `lockstep serve`'s signal
//! watchdog, on another thread, can still write it out when the serving thread is stuck in a
//! long command.
//!
//! **A cap** ([`HistoryCap`], `serve`'s `--history-max-mb` / `--history-max-events`): once the
//! events kept reach the cap (their estimated size in memory, or their count), further events are
//! dropped — counted, with the time of the first dropped one — except faults, which are always
//! kept (a plan is finite). [`SharedHistory::finish`] then appends one `dropped` note saying how
//! many were dropped and from when. `live` runs have no cap: their adapters' steps bound them.
//!
//! **Test labels** (`serve`): a command `ECHO lockstep:test:NAME` (or `CLIENT SETNAME NAME`)
//! labels its connection; the recorder appends, after the command, a note on the server naming
//! the test and the connection (`label_note`), so the history says which test ran from there.
//!
//! This is the one place of lockstep that reads `std::time` for a run: live runs are real time
//! and not reproducible; the fault plan's seed is kept, the history's digest is not.

use lockstep_sim::clock::NodeClock;
use lockstep_sim::{EventKind, History, Phase};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The argument prefix of `ECHO` that labels a connection with a test's name.
pub const TEST_MARKER: &str = "lockstep:test:";

/// The text of the `dropped` summary note starts with this.
pub const DROPPED_NOTE: &str = "dropped ";

/// The prefix of the note a label given out of band (`LOCKSTEP LABEL`, `POST /label`,
/// [`super::control`]) records; the test's name follows, then [`CONTROL_LABEL_SUFFIX`].
pub const CONTROL_LABEL_NOTE: &str = "test ";

/// The end of a control label's note (tells it from the notes in-band labels leave).
pub const CONTROL_LABEL_SUFFIX: &str = " (control)";

/// The name a control label's note carries, if `text` is one.
pub fn control_label(text: &str) -> Option<&str> {
    text.strip_prefix(CONTROL_LABEL_NOTE)?
        .strip_suffix(CONTROL_LABEL_SUFFIX)
        .filter(|n| !n.is_empty())
}

/// The text of a test label note starts with this.
pub const LABEL_NOTE: &str = "test ";

/// How much history a recorder keeps (`None`: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryCap {
    /// The most events kept.
    pub events_max: Option<u64>,
    /// The most bytes the kept events take in memory (estimated, [`event_bytes`]).
    pub bytes_max: Option<u64>,
}

/// The shared recorder of one live run (single-threaded; its history can be read from another
/// thread through [`LiveRecorder::shared`]).
#[derive(Clone)]
pub struct LiveRecorder(Rc<Inner>);

struct Inner {
    shared: SharedHistory,
    clocks: std::cell::RefCell<BTreeMap<String, Rc<NodeClock>>>,
    /// Told each test label's name as it is recorded ([`LiveRecorder::watch_labels`]).
    label_watch: std::cell::RefCell<Option<tokio::sync::mpsc::UnboundedSender<String>>>,
}

/// The part of a recorder other threads may hold: the history, its cap, and true time's origin.
#[derive(Clone)]
pub struct SharedHistory(Arc<Shared>);

struct Shared {
    start: OnceLock<Instant>,
    /// Real wall time at true time 0, ms since the Unix epoch: read at creation, read again
    /// (and true time 0 put on a whole millisecond) by [`LiveRecorder::start`].
    epoch_ms: AtomicI64,
    state: Mutex<State>,
}

struct State {
    history: History,
    cap: HistoryCap,
    bytes: u64,
    /// Events dropped past the cap, their estimated bytes, and the true time of the first.
    dropped: u64,
    dropped_bytes: u64,
    first_dropped_us: Option<u64>,
    finished: bool,
}

impl LiveRecorder {
    /// A recorder whose true time stands at 0 until [`Self::start`], with no cap.
    pub fn new() -> Self {
        Self::with_cap(HistoryCap::default())
    }

    /// A recorder that keeps at most `cap` of history.
    pub fn with_cap(cap: HistoryCap) -> Self {
        let epoch_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        LiveRecorder(Rc::new(Inner {
            shared: SharedHistory(Arc::new(Shared {
                start: OnceLock::new(),
                epoch_ms: AtomicI64::new(epoch_ms),
                state: Mutex::new(State {
                    history: History::new(),
                    cap,
                    bytes: 0,
                    dropped: 0,
                    dropped_bytes: 0,
                    first_dropped_us: None,
                    finished: false,
                }),
            })),
            clocks: std::cell::RefCell::new(BTreeMap::new()),
            label_watch: std::cell::RefCell::new(None),
        }))
    }

    /// The names of the test labels recorded from now on (in-band and out of band), as they are
    /// recorded (`lockstep serve`'s faults timed from a test's start).
    pub(crate) fn watch_labels(&self) -> tokio::sync::mpsc::UnboundedReceiver<String> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        *self.0.label_watch.borrow_mut() = Some(tx);
        rx
    }

    /// The history, for another thread.
    pub fn shared(&self) -> SharedHistory {
        self.0.shared.clone()
    }

    /// Real microseconds since the run began (0 before it began).
    pub(crate) fn now_us(&self) -> u64 {
        self.0.shared.now_us()
    }

    /// Makes now true time 0 (once every adapter is ready). Events before it are stamped 0.
    ///
    /// The wall clocks are re-based on the real wall time of this moment, with true time 0 put
    /// back on the last whole millisecond: a node's wall reading is then the real
    /// `floor(ms since the epoch)`, never behind it. (Read at creation instead, every reading
    /// lagged by the time adapters took to get ready: a client comparing `PXAT now+10000` with
    /// `PTTL` saw more than 10,000 ms left.)
    pub fn start(&self) {
        let shared = &self.0.shared.0;
        if shared.start.get().is_some() {
            return;
        }
        // The instant first: the wall time read after it is a few µs later, so the clocks may run
        // those µs ahead of real time, never behind.
        let now = Instant::now();
        let real = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        // To the nanosecond: an origin put up to a microsecond late (whole microseconds) let the
        // clocks read a millisecond behind real time for that microsecond after each tick.
        let past_ms = Duration::from_nanos(u64::from(real.subsec_nanos() % 1_000_000));
        let origin = now.checked_sub(past_ms).unwrap_or(now);
        let epoch_ms = i64::try_from(real.as_millis()).unwrap_or(i64::MAX);
        shared.epoch_ms.store(epoch_ms, Ordering::Release);
        for clock in self.0.clocks.borrow().values() {
            clock.set_epoch_ms(epoch_ms);
        }
        let _ = shared.start.set(origin);
    }

    /// Gives `node` a clock: real time plus `offset_ms`, running at `1 + drift_ppm / 1e6`.
    pub(crate) fn add_clock(&self, node: &str, offset_ms: i64, drift_ppm: i64) -> Rc<NodeClock> {
        let clock = Rc::new(NodeClock::new(
            self.0.shared.epoch_ms(),
            offset_ms,
            drift_ppm.max(-999_999),
        ));
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
            None => self.0.shared.epoch_ms() + (now / 1000) as i64,
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

    /// Appends an event at the current real time; returns its `seq` (the one it would have had
    /// when the cap dropped it).
    pub fn record(&self, node: &str, kind: EventKind) -> u64 {
        let clock = self.clock(node);
        let mut state = self.0.shared.lock();
        let last = state.history.events().last().map_or(0, |e| e.at_us);
        let now = self.now_us().max(last);
        let (wall, mono) = match &clock {
            Some(c) => (c.wall_ms(now), c.monotonic_ms(now)),
            None => (self.0.shared.epoch_ms() + (now / 1000) as i64, (now / 1000) as i64),
        };
        let label = test_label(&kind).map(|name| label_note(name, &kind));
        if let Some(watch) = self.0.label_watch.borrow().as_ref() {
            let name = match &kind {
                EventKind::Note { text } if node == "world" => control_label(text),
                _ => test_label(&kind),
            };
            if let Some(name) = name {
                let _ = watch.send(name.to_string());
            }
        }
        let seq = state.push(now, node, wall, mono, kind);
        if let Some(text) = label {
            state.push(now, node, wall, mono, EventKind::Note { text });
        }
        seq
    }

    /// A fresh operation id.
    pub(crate) fn next_op_id(&self) -> u64 {
        self.0.shared.lock().history.next_op_id()
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
        self.0.shared.lock().history.clone()
    }
}

impl Default for LiveRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedHistory {
    /// The state; a thread that panicked while holding it left a history still worth writing.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Real wall time at true time 0, ms since the Unix epoch.
    fn epoch_ms(&self) -> i64 {
        self.0.epoch_ms.load(Ordering::Acquire)
    }

    /// Real microseconds since the run began (0 before it began).
    pub fn now_us(&self) -> u64 {
        self.0.start.get().map_or(0, |s| s.elapsed().as_micros() as u64)
    }

    /// Ends the history, once: appends a note from `world` with `text` and, when the cap dropped
    /// events, the `dropped` note; returns the history (taken: later events are not kept) and
    /// how many events were dropped. A second call returns `None`.
    pub fn finish(&self, text: &str) -> Option<(History, u64)> {
        let mut state = self.lock();
        if state.finished {
            return None;
        }
        state.finished = true;
        let last = state.history.events().last().map_or(0, |e| e.at_us);
        let now = self.now_us().max(last);
        let (wall, mono) = (self.epoch_ms() + (now / 1000) as i64, (now / 1000) as i64);
        // Past the cap: the end notes are kept all the same (two events).
        let end = EventKind::Note { text: text.to_string() };
        state.history.push(now, "world", wall, mono, end);
        if state.dropped > 0 {
            let text = dropped_note(&state);
            state.history.push(now, "world", wall, mono, EventKind::Note { text });
        }
        let dropped = state.dropped;
        Some((std::mem::take(&mut state.history), dropped))
    }
}

impl State {
    /// Appends an event unless the cap is reached (faults are always kept).
    fn push(&mut self, at_us: u64, node: &str, wall: i64, mono: i64, kind: EventKind) -> u64 {
        let len = self.history.len() as u64;
        if self.finished {
            return len;
        }
        let bytes = event_bytes(node, &kind);
        let full = self.cap.events_max.is_some_and(|max| len >= max)
            || self
                .cap
                .bytes_max
                .is_some_and(|max| self.bytes.saturating_add(bytes) > max);
        if full && !matches!(kind, EventKind::Fault { .. }) {
            self.dropped += 1;
            self.dropped_bytes = self.dropped_bytes.saturating_add(bytes);
            self.first_dropped_us.get_or_insert(at_us);
            return len;
        }
        self.bytes = self.bytes.saturating_add(bytes);
        self.history.push(at_us, node, wall, mono, kind)
    }
}

/// The `dropped` note: how many events the cap dropped, their size, from when, and the cap.
fn dropped_note(state: &State) -> String {
    let cap = match (state.cap.events_max, state.cap.bytes_max) {
        (Some(e), Some(b)) => format!("{e} events or {} MiB", b / (1024 * 1024)),
        (Some(e), None) => format!("{e} events"),
        (None, Some(b)) => format!("{} MiB", b / (1024 * 1024)),
        (None, None) => "none".to_string(),
    };
    format!(
        "{DROPPED_NOTE}{} events (about {} MiB) from {:.3} s on: the history reached its cap ({cap}; faults were \
         kept); raise --history-max-mb / --history-max-events to keep more",
        state.dropped,
        state.dropped_bytes / (1024 * 1024),
        state.first_dropped_us.unwrap_or(0) as f64 / 1e6
    )
}

/// The test name an `ECHO lockstep:test:NAME` (or `CLIENT SETNAME NAME`) command carries, if
/// `kind` is one.
pub fn test_label(kind: &EventKind) -> Option<&str> {
    let EventKind::Command { args, .. } = kind else {
        return None;
    };
    match &args[..] {
        [echo, arg] if echo.eq_ignore_ascii_case("echo") => arg.strip_prefix(TEST_MARKER),
        // A connection named per test labels it too (the marker's prefix, if any, left out).
        [client, sub, name] if client.eq_ignore_ascii_case("client") && sub.eq_ignore_ascii_case("setname") => {
            Some(name.strip_prefix(TEST_MARKER).unwrap_or(name)).filter(|n| !n.is_empty())
        }
        _ => None,
    }
}

/// The note that labels a connection: `test NAME (conn N, client C)`.
fn label_note(name: &str, kind: &EventKind) -> String {
    let (conn, client) = match kind {
        EventKind::Command { conn, client, .. } => (*conn, client.as_deref().unwrap_or("?")),
        _ => (0, "?"),
    };
    format!("{LABEL_NOTE}{name} (conn {conn}, client {client})")
}

/// An estimate of the memory one event takes in the history, bytes: the event itself and each
/// of its texts (with an allocation's overhead).
pub fn event_bytes(node: &str, kind: &EventKind) -> u64 {
    const EVENT: usize = std::mem::size_of::<lockstep_sim::Event>();
    const STRING: usize = std::mem::size_of::<String>() + 16;
    let text = |s: &str| s.len() + 16;
    let body = match kind {
        EventKind::Command {
            args,
            reply,
            effects,
            client,
            ..
        } => {
            args.iter().map(|a| text(a) + STRING).sum::<usize>()
                + text(reply)
                + client.as_deref().map_or(0, text)
                + effects.len() * 256
                + effects.iter().map(|e| text(&e.key)).sum::<usize>()
        }
        EventKind::Op { op, data, .. } => text(op) + data.to_string().len() * 2,
        EventKind::Expired { key } => text(key),
        EventKind::ResourceWrite { client, key, .. } | EventKind::ResourceRead { client, key, .. } => {
            text(client) + text(key)
        }
        EventKind::Note { text: t } => text(t),
        EventKind::Fault { .. } => 128,
        EventKind::Resumed => 0,
    };
    (EVENT + text(node) + body) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real_ms() -> i64 {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
    }

    #[test]
    fn a_nodes_wall_clock_reads_the_real_wall_time_however_late_the_run_starts() {
        let rec = LiveRecorder::new();
        let clocked = rec.add_clock("m1", 0, 0);
        // Adapters take their time to get ready: the wall clocks must not lag by it.
        std::thread::sleep(Duration::from_millis(40));
        let starting = Instant::now();
        rec.start();
        // The time between the two clocks' reads in `start` (a thread descheduled there under
        // load, which may cross milliseconds) is at most how long `start` took.
        let ahead_ms = i64::try_from(starting.elapsed().as_millis()).unwrap_or(i64::MAX) + 1;
        for _ in 0..2_000 {
            let before = real_ms();
            let (plain, own) = (rec.wall_ms("nobody"), clocked.wall_ms(rec.now_us()));
            let after = real_ms();
            // Never behind; ahead by at most that.
            for wall in [plain, own] {
                assert!(
                    before <= wall && wall <= after + ahead_ms,
                    "{before} <= {wall} <= {after} + {ahead_ms}"
                );
            }
        }
    }
}
