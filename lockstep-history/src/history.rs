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
//!
//! Texts are bounded as they are recorded: a reply or an operation's error text longer than
//! [`MAX_EVENT_TEXT_BYTES`], and a command argument or an expired key longer than
//! [`MAX_EVENT_ARG_BYTES`], keep their beginning, cut to end with `… (N bytes)`. A recording handle
//! may also cap the history's events and its bytes of text ([`HistoryHandle::with_caps`]).

use crate::fault::Fault;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::rc::Rc;

/// The longest reply (`Command::reply`) or operation error text (an `Op`'s `data.error`) an
/// event keeps: a script's `error()` may carry megabytes, on every attempt.
pub const MAX_EVENT_TEXT_BYTES: usize = 4096;

/// The longest command argument (`Command::args`) or expired key an event keeps: the largest
/// value a scenario may send (a script lock's step is at most 64 KiB) is kept whole; what a
/// script made bigger, or the replication stream copies of it, is cut.
pub const MAX_EVENT_ARG_BYTES: usize = 65_536;

/// Cuts `text` to at most `max` bytes in all, its end replaced by `… (N bytes)` with `N` its
/// length before; a text of at most `max` bytes is left alone (so cutting twice changes
/// nothing).
pub fn bound_text(text: &mut String, max: usize) {
    if text.len() > max {
        let total = text.len();
        cut_with_note(text, max, total);
    }
}

/// `bytes` as lossy UTF-8, as [`bound_text`] would leave it (`N`: the number of bytes), without
/// converting more than `max` bytes.
pub fn bounded_lossy(bytes: &[u8], max: usize) -> String {
    let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned();
    if bytes.len() > max || text.len() > max {
        cut_with_note(&mut text, max, bytes.len());
    }
    text
}

/// Cuts `text` so that with `… (total bytes)` appended it has at most `max` bytes.
pub fn cut_with_note(text: &mut String, max: usize, total: usize) {
    let note = format!("… ({total} bytes)");
    let mut cut = max.saturating_sub(note.len()).min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&note);
}

/// Bounds the texts of `kind` (see the module's documentation).
fn bound_event(kind: &mut EventKind) {
    match kind {
        EventKind::Command { args, reply, .. } => {
            for arg in args.iter_mut() {
                bound_text(arg, MAX_EVENT_ARG_BYTES);
            }
            bound_text(reply, MAX_EVENT_TEXT_BYTES);
        }
        EventKind::Op { data, .. } => {
            if let Some(serde_json::Value::String(error)) = data.get_mut("error") {
                bound_text(error, MAX_EVENT_TEXT_BYTES);
            }
        }
        EventKind::Expired { key } => bound_text(key, MAX_EVENT_ARG_BYTES),
        _ => {}
    }
}

/// The bytes of text an event carries, what [`HistoryHandle::with_caps`] counts: its node's
/// name, and its strings (an operation's name and data, a command's arguments, reply and key
/// effects, keys, notes). The fixed part of an event is not counted (the number of events bounds it).
pub fn text_bytes(node: &str, kind: &EventKind) -> usize {
    fn json(value: &serde_json::Value) -> usize {
        match value {
            serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => 8,
            serde_json::Value::String(s) => s.len(),
            serde_json::Value::Array(items) => items.iter().map(json).sum(),
            serde_json::Value::Object(map) => map.iter().map(|(k, v)| k.len() + json(v)).sum(),
        }
    }
    node.len()
        + match kind {
            EventKind::Op { op, data, .. } => op.len() + json(data),
            EventKind::Command {
                args,
                reply,
                effects,
                client,
                ..
            } => {
                let state = |s: &Option<KeyState>| {
                    s.as_ref().map_or(0, |s| {
                        8 + s.value.as_ref().map_or(0, String::len) + s.fields.iter().map(String::len).sum::<usize>()
                    })
                };
                args.iter().map(String::len).sum::<usize>()
                    + reply.len()
                    + client.as_ref().map_or(0, String::len)
                    + effects
                        .iter()
                        .map(|e| e.key.len() + state(&e.before) + state(&e.after))
                        .sum::<usize>()
            }
            EventKind::Expired { key } => key.len(),
            EventKind::ResourceWrite { client, key, .. } | EventKind::ResourceRead { client, key, .. } => {
                client.len() + key.len()
            }
            EventKind::Fault { fault } => fault.nodes().iter().map(|n| n.len()).sum(),
            EventKind::Resumed => 0,
            EventKind::Note { text } => text.len(),
        }
}

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
        /// What the command did to each key it changed: its state before and after (empty for
        /// reads, refused commands, and histories recorded before effects were).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        effects: Vec<KeyEffect>,
        /// The node that sent it (the connection's peer); `None` for the replication stream and
        /// histories recorded before senders were.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<String>,
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

/// A key's state on a server at one instant, as a command saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyState {
    /// A string's value (lossy UTF-8); `None` for other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A hash's field names, in the hash's order (a hash lock's owners); empty for other types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// Its absolute expiry on the server's wall clock, ms (`None`: no TTL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_at_ms: Option<i64>,
}

/// What one command did to one key: its state before and after (`None`: absent or expired).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyEffect {
    /// The key (lossy UTF-8).
    pub key: String,
    /// Before the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<KeyState>,
    /// After it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<KeyState>,
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

    /// Appends an event and returns its `seq`. Its long texts are cut first (see the module's
    /// documentation).
    ///
    /// # Panics
    /// If `at_us` is earlier than the last event's: true time never goes backwards.
    pub fn push(&mut self, at_us: u64, node: &str, wall_ms: i64, monotonic_ms: i64, mut kind: EventKind) -> u64 {
        bound_event(&mut kind);
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
        // Each event's canonical JSON line is written into one reused buffer, handed to the
        // hasher a block at a time: the same bytes as `canonical_json` and a newline per event,
        // without a string per event or a hasher call per JSON token.
        const BLOCK_BYTES: usize = 64 * 1024;
        let mut hasher = Sha256::new();
        let mut block = Vec::with_capacity(BLOCK_BYTES + 4 * 1024);
        for event in &self.events {
            // Serialising plain data with string keys into a vector cannot fail.
            let _ = serde_json::to_writer(&mut block, event);
            block.push(b'\n');
            if block.len() >= BLOCK_BYTES {
                hasher.update(&block);
                block.clear();
            }
        }
        hasher.update(&block);
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

/// A shared handle to the run's history (the simulation is single-threaded), with optional caps
/// on the number of events it keeps and on their bytes of text ([`text_bytes`]).
///
/// The caps bound a run's memory: once the history holds `events_max` events, or an event would
/// take its text past `bytes_max` bytes, further events are counted but not kept, and
/// [`HistoryHandle::overflow`] says which cap was reached; the world then stops the run
/// (`lockstep_sim::WorldError::HistoryFull`). Below the caps nothing changes: the same events, in the
/// same order, with the same digest.
#[derive(Debug, Clone, Default)]
pub struct HistoryHandle(Rc<RefCell<Recording>>);

/// Which cap of a [`HistoryHandle`] refused an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryCap {
    /// The number of events.
    Events,
    /// The bytes of text.
    Bytes,
}

/// The history being recorded, and its caps.
#[derive(Debug, Default)]
struct Recording {
    history: History,
    /// The most events kept (`None`: no cap).
    events_max: Option<usize>,
    /// The most bytes of text kept (`None`: no cap).
    bytes_max: Option<usize>,
    /// The bytes of text of the events kept.
    bytes: usize,
    /// Events refused because a cap was reached.
    refused: u64,
    /// The cap that refused the first of them.
    full: Option<HistoryCap>,
}

impl HistoryHandle {
    #[cfg(test)]
    /// A handle to a new, empty history without a cap.
    pub fn new() -> Self {
        Self::default()
    }

    #[cfg(test)]
    /// A handle to a new, empty history that keeps at most `events_max` events.
    pub fn with_cap(events_max: usize) -> Self {
        HistoryHandle(Rc::new(RefCell::new(Recording {
            events_max: Some(events_max),
            ..Recording::default()
        })))
    }

    /// A handle to a new, empty history that keeps at most `events_max` events, and events
    /// whose texts come to at most `bytes_max` bytes in all ([`text_bytes`]).
    pub fn with_caps(events_max: usize, bytes_max: usize) -> Self {
        HistoryHandle(Rc::new(RefCell::new(Recording {
            events_max: Some(events_max),
            bytes_max: Some(bytes_max),
            ..Recording::default()
        })))
    }

    /// Appends an event and returns its `seq`; see [`History::push`]. Once a cap is reached
    /// the event is refused (counted, not kept) and the `seq` it would have had is returned.
    pub fn push(&self, at_us: u64, node: &str, wall_ms: i64, monotonic_ms: i64, mut kind: EventKind) -> u64 {
        let mut recording = self.0.borrow_mut();
        let len = recording.history.len();
        let refuse = |recording: &mut Recording, cap: HistoryCap| {
            recording.refused += 1;
            recording.full.get_or_insert(cap);
            len as u64
        };
        if recording.events_max.is_some_and(|max| len >= max) {
            return refuse(&mut recording, HistoryCap::Events);
        }
        let mut bytes = 0;
        if let Some(max) = recording.bytes_max {
            bound_event(&mut kind);
            bytes = text_bytes(node, &kind);
            if recording.bytes.saturating_add(bytes) > max {
                return refuse(&mut recording, HistoryCap::Bytes);
            }
        }
        recording.bytes += bytes;
        recording.history.push(at_us, node, wall_ms, monotonic_ms, kind)
    }

    #[cfg(test)]
    /// Whether an event was refused because the history had reached a cap.
    pub fn overflowed(&self) -> bool {
        self.0.borrow().refused > 0
    }

    /// The cap that refused an event, if one did (the first one reached).
    pub fn overflow(&self) -> Option<HistoryCap> {
        self.0.borrow().full
    }

    #[cfg(test)]
    /// The bytes of text of the events kept so far ([`text_bytes`]; counted only with a byte
    /// cap).
    pub fn text_bytes(&self) -> usize {
        self.0.borrow().bytes
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
        let mut recording = self.0.borrow_mut();
        recording.bytes = 0;
        std::mem::take(&mut recording.history)
    }

    #[cfg(test)]
    /// The number of events so far.
    fn len(&self) -> usize {
        self.0.borrow().history.len()
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
        // The digest is SHA-256 over each event's canonical JSON line, as documented.
        let mut lines = Sha256::new();
        for event in a.events() {
            lines.update(event.canonical_json().as_bytes());
            lines.update(b"\n");
        }
        assert_eq!(a.digest(), hex::encode(lines.finalize()));
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

    fn command(arg: String, reply: String) -> EventKind {
        EventKind::Command {
            conn: 1,
            args: vec!["SET".into(), arg],
            reply,
            effects: Vec::new(),
            client: None,
        }
    }

    #[test]
    fn a_history_with_a_byte_cap_stops_keeping_events_past_it() {
        let capped = HistoryHandle::with_caps(1_000, 10_000);
        let big = "v".repeat(4_000);
        assert_eq!(capped.push(0, "n", 0, 0, command(big.clone(), "+OK".into())), 0);
        assert_eq!(capped.push(1, "n", 0, 0, command(big.clone(), "+OK".into())), 1);
        assert_eq!(capped.overflow(), None);
        assert_eq!(capped.text_bytes(), 2 * (1 + 3 + 4_000 + 3));
        // A third would take the text past 10,000 bytes: refused, and the cap is named.
        assert_eq!(capped.push(2, "n", 0, 0, command(big, "+OK".into())), 2);
        assert_eq!(capped.overflow(), Some(HistoryCap::Bytes));
        assert!(capped.overflowed());
        assert_eq!(capped.len(), 2);
        // The events cap, when it is the one reached, is named as such.
        let few = HistoryHandle::with_caps(1, 10_000);
        few.push(0, "n", 0, 0, note("a"));
        few.push(1, "n", 0, 0, note("b"));
        assert_eq!(few.overflow(), Some(HistoryCap::Events));
    }

    #[test]
    fn long_texts_are_cut_with_their_length() {
        let mut h = History::new();
        let reply = format!("-ERR {}", "x".repeat(1_000_000));
        let arg = "é".repeat(40_000);
        h.push(0, "n", 0, 0, command(arg.clone(), reply.clone()));
        h.push(
            1,
            "n",
            0,
            0,
            EventKind::Op {
                id: 1,
                phase: Phase::Fail,
                op: "acquire".into(),
                data: serde_json::json!({ "error": reply.clone(), "key": "k" }),
            },
        );
        let EventKind::Command { args, reply: kept, .. } = &h.events()[0].kind else {
            panic!("a command")
        };
        assert!(kept.len() <= MAX_EVENT_TEXT_BYTES, "{}", kept.len());
        assert!(
            kept.starts_with("-ERR xxx") && kept.ends_with("… (1000005 bytes)"),
            "{kept}"
        );
        // 80,000 bytes of two-byte characters: cut at a character boundary.
        assert!(args[1].len() <= MAX_EVENT_ARG_BYTES);
        assert!(
            args[1].ends_with("é… (80000 bytes)"),
            "{}",
            &args[1][args[1].len() - 30..]
        );
        let EventKind::Op { data, .. } = &h.events()[1].kind else {
            panic!("an op")
        };
        let error = data["error"].as_str().unwrap_or_default();
        assert!(error.len() <= MAX_EVENT_TEXT_BYTES && error.ends_with("(1000005 bytes)"));
        assert_eq!(data["key"], "k");
        // Cutting is idempotent, and short texts are untouched.
        let mut again = kept.clone();
        bound_text(&mut again, MAX_EVENT_TEXT_BYTES);
        assert_eq!(&again, kept);
        let mut short = "short".to_string();
        bound_text(&mut short, 5);
        assert_eq!(short, "short");
        assert_eq!(bounded_lossy(b"ab\xffc", 100), String::from_utf8_lossy(b"ab\xffc"));
        assert_eq!(
            bounded_lossy(&[b'z'; 100], 50),
            format!("{}… (100 bytes)", "z".repeat(35))
        );
    }

    #[test]
    #[should_panic(expected = "history time went backwards")]
    fn time_never_goes_backwards() {
        let mut h = History::new();
        h.push(10, "n", 0, 0, note("a"));
        h.push(9, "n", 0, 0, note("b"));
    }
}
