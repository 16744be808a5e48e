//! The history: one ordered log of everything that happens in a run.
//!
//! Client operations follow Jepsen's model: an `invoke`, then `ok`, `fail`, or `info` (the
//! outcome is unknown, e.g. a timeout: a checker must treat it as possibly applied). Beside them
//! stand the commands each Redis master applied, key expiries, every write attempt at the fenced
//! resource, and every fault. Each event carries the true simulated time and the node's own
//! wall and monotonic readings.
//!
//! The order of events is the order in which they happened in the single-threaded simulation;
//! a checker that needs "the same instant" compares positions (`seq`), which respect causality
//! because a message takes at least one tick to cross the network.
//!
//! The digest is SHA-256 over each event's canonical JSON (serde_json, fields in declaration
//! order, maps sorted) followed by a newline: the same on every machine and Rust version.

use crate::fault::Fault;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::rc::Rc;

/// Where a client operation is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The operation started.
    Invoke,
    /// It completed and took effect.
    Ok,
    /// It completed and certainly did not take effect.
    Fail,
    /// Its outcome is unknown (a timeout, a lost connection): it may have taken effect.
    Info,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A client operation's invoke or completion. `data` is defined by the layer above (the lock
    /// algorithms); the world does not interpret it.
    Op {
        /// The operation's id, shared by its invoke and its completion.
        id: u64,
        /// Invoke, ok, fail or info.
        phase: Phase,
        /// The operation's name (`acquire`, `release`, `write`, ...).
        op: String,
        /// Free-form details (key, token, value, error text).
        data: serde_json::Value,
    },
    /// A Redis master applied a command (or rejected it with an error reply).
    Command {
        /// The connection it arrived on (per node, in accept order).
        conn: u64,
        /// The command and its arguments (lossy UTF-8).
        args: Vec<String>,
        /// A one-line rendering of the reply.
        reply: String,
    },
    /// A key expired on a master (active expiry at the exact millisecond of its wall clock).
    Expired {
        /// The key.
        key: String,
    },
    /// A write attempt at the fenced resource.
    ResourceWrite {
        /// The node the write came from.
        client: String,
        /// The key written.
        key: String,
        /// The value written.
        value: i64,
        /// The fencing token it carried, if any.
        token: Option<u64>,
        /// Whether the resource accepted it.
        accepted: bool,
        /// The key's version after the attempt.
        version: u64,
        /// The highest token accepted for this key before the attempt.
        highest_token_before: Option<u64>,
    },
    /// A read at the fenced resource.
    ResourceRead {
        /// The node the read came from.
        client: String,
        /// The key read.
        key: String,
        /// Its value, if it exists.
        value: Option<i64>,
        /// Its version (0 if never written).
        version: u64,
        /// The reader's fencing token, if any.
        token: Option<u64>,
        /// Whether the resource served it (a fenced resource refuses a stale token).
        accepted: bool,
    },
    /// A fault was applied.
    Fault {
        /// The fault, as planned.
        fault: Fault,
    },
    /// A paused node resumed.
    Resumed,
    /// A note from the world (start, end of run).
    Note {
        /// The text.
        text: String,
    },
}

/// One entry of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the history, from 0.
    pub seq: u64,
    /// True simulated time in microseconds since the run began.
    pub at_us: u64,
    /// The node where it happened (for faults: the node it targets, or `net`).
    pub node: String,
    /// The node's wall-clock reading, ms since the Unix epoch.
    pub wall_ms: i64,
    /// The node's monotonic reading, ms.
    pub monotonic_ms: i64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// The canonical one-line JSON the digest is computed over.
    pub fn canonical_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The ordered log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    events: Vec<Event>,
    next_op_id: u64,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an event and returns its `seq`.
    ///
    /// # Panics
    /// If `at_us` is earlier than the last event's: true time never goes backwards.
    pub fn push(&mut self, at_us: u64, node: &str, wall_ms: i64, monotonic_ms: i64, kind: EventKind) -> u64 {
        if let Some(last) = self.events.last() {
            assert!(
                at_us >= last.at_us,
                "history time went backwards: {at_us} < {} at seq {}",
                last.at_us,
                last.seq
            );
        }
        let seq = self.events.len() as u64;
        self.events.push(Event {
            seq,
            at_us,
            node: node.to_string(),
            wall_ms,
            monotonic_ms,
            kind,
        });
        seq
    }

    /// A fresh operation id.
    pub fn next_op_id(&mut self) -> u64 {
        self.next_op_id += 1;
        self.next_op_id
    }

    /// All events in order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing happened.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// SHA-256 over every event's canonical JSON plus `\n`, as lowercase hex.
    pub fn digest(&self) -> String {
        let mut hasher = Sha256::new();
        for event in &self.events {
            hasher.update(event.canonical_json().as_bytes());
            hasher.update(b"\n");
        }
        hex::encode(hasher.finalize())
    }

    /// The first position where two histories differ, with both events (`None` on that side when
    /// one history is a prefix of the other). `None` when they are identical.
    pub fn first_divergence<'a>(&'a self, other: &'a History) -> Option<(usize, Option<&'a Event>, Option<&'a Event>)> {
        let longest = self.events.len().max(other.events.len());
        (0..longest).find_map(|i| {
            let (a, b) = (self.events.get(i), other.events.get(i));
            (a != b).then_some((i, a, b))
        })
    }
}

/// A shared handle to the run's history (the simulation is single-threaded), with an optional
/// cap on the number of events it keeps.
///
/// The cap bounds a run's memory: once the history holds `events_max` events, further events are
/// counted but not kept, and [`HistoryHandle::overflowed`] says so; the world then stops the run
/// ([`crate::WorldError::HistoryFull`]). Below the cap nothing changes: the same events, in the
/// same order, with the same digest.
#[derive(Debug, Clone, Default)]
pub struct HistoryHandle(Rc<RefCell<Recording>>);

/// The history being recorded, and its cap.
#[derive(Debug, Default)]
struct Recording {
    history: History,
    /// The most events kept (`None`: no cap).
    events_max: Option<usize>,
    /// Events refused because the cap was reached.
    refused: u64,
}

impl HistoryHandle {
    /// A handle to a new, empty history without a cap.
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle to a new, empty history that keeps at most `events_max` events.
    pub fn with_cap(events_max: usize) -> Self {
        HistoryHandle(Rc::new(RefCell::new(Recording {
            events_max: Some(events_max),
            ..Recording::default()
        })))
    }

    /// Appends an event and returns its `seq`; see [`History::push`]. Once the cap is reached
    /// the event is refused (counted, not kept) and the `seq` it would have had is returned.
    pub fn push(&self, at_us: u64, node: &str, wall_ms: i64, monotonic_ms: i64, kind: EventKind) -> u64 {
        let mut recording = self.0.borrow_mut();
        let len = recording.history.len();
        if recording.events_max.is_some_and(|max| len >= max) {
            recording.refused += 1;
            return len as u64;
        }
        recording.history.push(at_us, node, wall_ms, monotonic_ms, kind)
    }

    /// Whether an event was refused because the history had reached its cap.
    pub fn overflowed(&self) -> bool {
        self.0.borrow().refused > 0
    }

    /// A fresh operation id.
    pub fn next_op_id(&self) -> u64 {
        self.0.borrow_mut().history.next_op_id()
    }

    /// A copy of the history so far.
    pub fn snapshot(&self) -> History {
        self.0.borrow().history.clone()
    }

    /// The history so far, moved out (the handle is left with an empty history and the same
    /// cap): at the end of a run, without the copy [`HistoryHandle::snapshot`] makes.
    pub fn take(&self) -> History {
        std::mem::take(&mut self.0.borrow_mut().history)
    }

    /// The number of events so far.
    pub fn len(&self) -> usize {
        self.0.borrow().history.len()
    }

    /// Whether nothing happened yet.
    pub fn is_empty(&self) -> bool {
        self.0.borrow().history.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(text: &str) -> EventKind {
        EventKind::Note { text: text.into() }
    }

    #[test]
    fn digest_is_stable_and_sensitive() {
        let mut a = History::new();
        a.push(0, "n1", 5, 0, note("start"));
        a.push(1_000, "n1", 6, 1, note("end"));
        let mut b = a.clone();
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.first_divergence(&b), None);
        b.push(2_000, "n1", 7, 2, note("more"));
        assert_ne!(a.digest(), b.digest());
        let (at, left, right) = a.first_divergence(&b).expect("they differ");
        assert_eq!(at, 2);
        assert!(left.is_none() && right.is_some());
        // The digest of an empty history is SHA-256 of nothing.
        assert_eq!(
            History::new().digest(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn a_capped_history_keeps_its_first_events_and_says_it_overflowed() {
        let capped = HistoryHandle::with_cap(2);
        let free = HistoryHandle::new();
        for (i, h) in [&capped, &free].into_iter().enumerate() {
            assert_eq!(h.push(0, "n", 0, 0, note("a")), 0, "handle {i}");
            assert_eq!(h.push(1, "n", 0, 0, note("b")), 1, "handle {i}");
            assert!(!h.overflowed(), "handle {i}: at the cap, nothing refused yet");
        }
        // Below the cap a capped history is the same history.
        assert_eq!(capped.snapshot().digest(), free.snapshot().digest());
        assert_eq!(capped.push(2, "n", 0, 0, note("c")), 2);
        assert_eq!(capped.push(3, "n", 0, 0, note("d")), 2);
        assert!(capped.overflowed());
        assert_eq!(capped.len(), 2);
        free.push(2, "n", 0, 0, note("c"));
        assert!(!free.overflowed());
        assert_eq!(free.len(), 3);
    }

    #[test]
    #[should_panic(expected = "history time went backwards")]
    fn time_never_goes_backwards() {
        let mut h = History::new();
        h.push(10, "n", 0, 0, note("a"));
        h.push(9, "n", 0, 0, note("b"));
    }
}
