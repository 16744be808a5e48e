//! The raw history of a run and its interactive timeline, as Jepsen's store keeps them.
//!
//! - `history_jsonl`: `history.jsonl`, one event a line in its canonical JSON — exactly the
//!   lines the history digest is computed over, so [`digest_of_jsonl`] recomputes the run's
//!   digest from the file alone (other tools can read and verify it).
//! - `timeline_html`: `timeline.html`, a page holding one run's data (inline, as a JSON block)
//!   that the report's one viewer — [`VIEWER_JS`] and `VIEWER_CSS`, written once at the root
//!   of the report directory and loaded by a relative path — draws with every node as a lane:
//!   each client operation as a bar from its invoke to its completion (ok, fail, info, or never
//!   completed), every other event (a command a master applied, a key expiry, a write at the
//!   resource, a fault) as a mark, a pause as a span. Hovering shows the operation's invoke and
//!   completion times, the node's wall and monotonic readings at both, and its values and
//!   tokens; dragging across the chart (or the mouse wheel, or the from/to fields) zooms on a
//!   time range. Nothing is fetched and nothing comes from elsewhere: a report directory opened
//!   from disk (`file://`) works, as long as it is kept whole.
//!
//! Leaves out: checker verdicts beyond the title line (they are in `index.html`), and any
//! drawing on the Rust side — the viewer draws the page from the data embedded in it.

use super::html::escape;
use super::timeline::TimelineData;
use super::CheckReport;
use crate::checker::CheckerName;
use crate::history::OpHistory;
use crate::model::units::seconds;
use crate::model::Verdict;
use lockstep_sim::{Event, EventKind, Phase};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// `history.jsonl`: every event's canonical JSON line, each followed by `\n`.
pub(crate) fn history_jsonl(events: &[Event]) -> String {
    let mut out = String::new();
    for event in events {
        out.push_str(&event.canonical_json());
        out.push('\n');
    }
    out
}

/// Reads a `history.jsonl` back: each non-empty line parsed as an event. Errors name the line.
pub(crate) fn read_jsonl(text: &str) -> Result<Vec<Event>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("history.jsonl:{}: not an event: {e}", i + 1)))
        .collect()
}

/// The history digest of the events in a `history.jsonl` (SHA-256 over each event's canonical
/// JSON and `\n`, as `lockstep_sim::History::digest`): read back, the file gives the run's digest.
pub fn digest_of_jsonl(text: &str) -> Result<String, String> {
    let mut hash = Sha256::new();
    for event in read_jsonl(text)? {
        hash.update(event.canonical_json().as_bytes());
        hash.update(b"\n");
    }
    Ok(hex::encode(hash.finalize()))
}

/// One thing the page draws.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Item {
    /// Lane index.
    l: usize,
    /// Row within the lane (operations that overlap stack; -1: the marks' strip).
    r: i64,
    /// Start, true µs.
    s: u64,
    /// End, true µs (= start for a mark).
    e: u64,
    /// Class: `ok`, `fail`, `info`, `open`, `command`, `expired`, `write-ok`, `write-rejected`,
    /// `read`, `fault`, `pause`, `resumed`, `note`, `witness` (an event a violation rests on,
    /// labelled with its checker).
    k: &'static str,
    /// Short label.
    t: String,
    /// Details shown on hover: (field, value) pairs.
    d: Vec<(String, String)>,
}

/// A stretch drawn in a lane's state row — a client's hold of a grant (what it believed), the lock
/// key's life on a server (what was true), a server down — or, as the page's `violation`, across
/// every lane.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Band {
    /// Lane index (unused for the violation).
    l: usize,
    /// Start, true µs.
    s: u64,
    /// End, true µs.
    e: u64,
    /// Class: `hold`, `hold-open`, `key`, `key-foreign`, `down`, `violation`.
    k: &'static str,
    /// Short label.
    t: String,
    /// For a hold: when the client's own validity ran out, true µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    b: Option<u64>,
    /// For a violation that is no stretch of time (a stale write, a lost update, a key changed
    /// by another grant): the instants of its witness events, each drawn as a narrow band — the
    /// band covers its witness only, not the time between (issue 52).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    p: Vec<u64>,
    /// Details shown on hover.
    d: Vec<(String, String)>,
}

/// The data embedded in the page.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct PageData {
    title: String,
    subtitle: String,
    end_us: u64,
    lanes: Vec<String>,
    rows: Vec<i64>,
    items: Vec<Item>,
    bands: Vec<Band>,
    /// Every checker that answered invalid, as a band across every lane labelled with the
    /// checker: the timeline's first violation (its stretch as the PNG chart draws it) first,
    /// then each other invalid checker over the span of its witness.
    violations: Vec<Band>,
    /// The time range the page opens on: the first violation's, with a margin (issue 52: a
    /// counterexample opened on its whole 45 s run); the whole run is one click away.
    #[serde(skip_serializing_if = "Option::is_none")]
    focus: Option<[u64; 2]>,
}

/// A JSON value as a short text (strings without quotes); `None` for null, which is not shown.
fn short(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// An event's time and its node's clock readings, all in seconds since the run's start: a wall
/// clock reading relative to the run's wall-clock origin (`wall_origin_ms`: what a node with no
/// offset read at true time 0), so an offset or a jump shows as a difference from `at`.
fn readings(prefix: &str, e: &Event, wall_origin_ms: i64) -> Vec<(String, String)> {
    vec![
        (
            format!("{prefix} at"),
            format!("{} (event #{})", seconds(e.at_us), e.seq),
        ),
        (
            format!("{prefix} wall clock"),
            format!("{:.3} s", (e.wall_ms - wall_origin_ms) as f64 / 1e3),
        ),
        (
            format!("{prefix} monotonic clock"),
            format!("{:.3} s", e.monotonic_ms as f64 / 1e3),
        ),
    ]
}

/// The wall-clock reading of true time 0: the first `world` event's (which has no offset), else
/// the first event's.
fn wall_origin_ms(events: &[Event]) -> i64 {
    events
        .iter()
        .find(|e| e.node == "world")
        .or(events.first())
        .map_or(0, |e| e.wall_ms - (e.at_us / 1_000) as i64)
}

/// The fields of an event's kind (its JSON without the common fields and without nulls), as
/// details.
fn kind_details(e: &Event) -> Vec<(String, String)> {
    let value = serde_json::to_value(&e.kind).unwrap_or(Value::Null);
    match value {
        Value::Object(map) => map
            .into_iter()
            .filter(|(k, _)| k != "type")
            .filter_map(|(k, v)| Some((k, short(&v)?)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The holds, key lives and downtimes of the run's timeline data, on the page's lanes (matched
/// by name), and its first violation.
fn bands_of(timeline: &TimelineData, lanes: &[String]) -> (Vec<Band>, Option<Band>) {
    let lane = |i: usize| {
        let name = &timeline.lanes.get(i)?.name;
        lanes.iter().position(|l| l == name)
    };
    let name = |i: usize| timeline.lanes.get(i).map_or("?", |l| l.name.as_str());
    let mut bands = Vec::new();
    for g in &timeline.grants {
        let Some(l) = lane(g.lane) else { continue };
        let mut d = vec![
            (
                "hold".to_string(),
                format!("{} holds {} (what it believed)", name(g.lane), g.label),
            ),
            ("granted at".to_string(), seconds(g.start_us)),
            (
                "ended at".to_string(),
                match g.open {
                    true => format!("{} (never released)", seconds(g.end_us)),
                    false => seconds(g.end_us),
                },
            ),
        ];
        if let Some(b) = g.believed_until_us {
            d.push(("valid by its clock until".to_string(), seconds(b)));
        }
        bands.push(Band {
            l,
            s: g.start_us,
            e: g.end_us,
            k: if g.open { "hold-open" } else { "hold" },
            t: g.label.clone(),
            b: g.believed_until_us,
            p: Vec::new(),
            d,
        });
    }
    for k in &timeline.key_life {
        let Some(l) = lane(k.lane) else { continue };
        let holder = k.holder.map_or_else(|| "unknown".to_string(), |h| name(h).to_string());
        bands.push(Band {
            l,
            s: k.start_us,
            e: k.end_us,
            k: if k.foreign_end { "key-foreign" } else { "key" },
            t: k.label.clone(),
            b: None,
            p: Vec::new(),
            d: vec![
                ("key".to_string(), format!("held on {} (what was true)", name(k.lane))),
                ("value of".to_string(), format!("{holder} ({})", k.label)),
                ("set at".to_string(), seconds(k.start_us)),
                ("ended at".to_string(), format!("{}: {}", seconds(k.end_us), k.ended_by)),
            ],
        });
    }
    for span in &timeline.down {
        let Some(l) = lane(span.lane) else { continue };
        bands.push(Band {
            l,
            s: span.start_us,
            e: span.end_us,
            k: "down",
            t: span.label.clone(),
            b: None,
            p: Vec::new(),
            d: vec![
                ("down".to_string(), span.label.clone()),
                ("from".to_string(), seconds(span.start_us)),
                ("to".to_string(), seconds(span.end_us)),
            ],
        });
    }
    let violation = timeline.violation.as_ref().map(|v| Band {
        l: 0,
        s: v.start_us,
        e: v.end_us,
        k: "violation",
        t: format!("{} violated", v.checker),
        b: None,
        p: Vec::new(),
        d: vec![
            ("checker".to_string(), v.checker.clone()),
            ("from".to_string(), seconds(v.start_us)),
            ("to".to_string(), seconds(v.end_us)),
            ("why".to_string(), v.explanation.clone()),
        ],
    });
    (bands, violation)
}

/// A band per invalid check of `checks` not already drawn as `first` (the timeline's first
/// violation), over the span of its witness, and a `witness` mark per witness event on its lane,
/// labelled with the checker: every violation located, not only the first.
fn violations_of(
    first: Option<Band>,
    checks: &[CheckReport],
    lane_of: &dyn Fn(&str) -> usize,
    origin: i64,
) -> (Vec<Band>, Vec<Item>) {
    // A stretch of time is drawn as one: two holds at once (mutual exclusion), a belief past the
    // lease (lease validity). Any other violation is its witness events, each a narrow band.
    let stretch = |checker: &str| {
        checker == CheckerName::MutualExclusion.as_str() || checker == CheckerName::LeaseValidity.as_str()
    };
    let checker_of = |b: &Band| b.d.first().map(|(_, v)| v.clone()).unwrap_or_default();
    let first_checker = first.as_ref().map(checker_of);
    let point_band = |c: &CheckReport| -> Option<Band> {
        let mut points: Vec<u64> = c.witness.iter().map(|e| e.at_us).collect();
        points.sort_unstable();
        points.dedup();
        let (a, b) = (*points.first()?, *points.last()?);
        Some(Band {
            l: 0,
            s: a,
            e: b,
            k: "violation",
            t: format!("{} violated", c.checker),
            b: None,
            p: points,
            d: vec![
                ("checker".to_string(), c.checker.clone()),
                ("witness events at".to_string(), {
                    let at: Vec<String> = c.witness.iter().map(|e| seconds(e.at_us)).collect();
                    at.join(", ")
                }),
                ("why".to_string(), c.explanation.clone()),
            ],
        })
    };
    let invalid: Vec<&CheckReport> = checks.iter().filter(|c| c.verdict == Verdict::Invalid).collect();
    let mut bands: Vec<Band> = Vec::new();
    // The timeline's first violation first: as its stretch, or as its witness events.
    if let Some(f) = first {
        let check = invalid.iter().find(|c| Some(&c.checker) == first_checker.as_ref());
        match check {
            Some(c) if !stretch(&c.checker) => bands.extend(point_band(c)),
            _ => bands.push(f),
        }
    }
    let mut marks = Vec::new();
    for c in invalid {
        let drawn = bands.iter().any(|b| checker_of(b) == c.checker);
        if !drawn {
            bands.extend(point_band(c));
        }
        for e in &c.witness {
            let node = match &e.kind {
                EventKind::ResourceWrite { client, .. } | EventKind::ResourceRead { client, .. } => client.as_str(),
                _ => e.node.as_str(),
            };
            let event = mark_item(lane_of(node), e, origin);
            let mut d = vec![
                ("checker".to_string(), c.checker.clone()),
                ("why".to_string(), c.explanation.clone()),
            ];
            d.extend(event.d);
            marks.push(Item {
                k: "witness",
                t: format!("{}: {}", c.checker, event.t),
                e: e.at_us,
                d,
                ..event
            });
        }
    }
    (bands, marks)
}

/// A fault in a few words, naming its nodes: `pause client-2 15 s`, `crash redis-1`,
/// `clock-jump redis-1 +10 s`, `partition client-1 / redis-1`.
fn fault_label(fault: &lockstep_sim::Fault) -> String {
    let nodes = fault.nodes().join(" / ");
    let mut label = format!("{} {nodes}", fault.kind());
    match fault {
        lockstep_sim::Fault::Pause { duration_ms, .. } => label.push_str(&format!(" {}", seconds_ms(*duration_ms))),
        lockstep_sim::Fault::ClockJump { delta_ms, .. } => {
            let sign = if *delta_ms < 0 { "-" } else { "+" };
            label.push_str(&format!(" {sign}{}", seconds_ms(delta_ms.unsigned_abs())));
        }
        _ => {}
    }
    label.trim_end().to_string()
}

/// A length in ms as seconds when whole (`15 s`), else in ms (`1200 ms`).
fn seconds_ms(ms: u64) -> String {
    if ms.is_multiple_of(1_000) {
        format!("{} s", ms / 1_000)
    } else {
        format!("{ms} ms")
    }
}

/// The order of lanes: clients, then masters and replicas, the resource, then anything else
/// (`net`, `world`), each group in order of first appearance.
fn lane_rank(node: &str) -> u8 {
    if node.starts_with("client") {
        0
    } else if node == "resource" {
        2
    } else if node == "net" || node == "world" {
        3
    } else {
        1
    }
}

/// The page's data: operations as the typed history pairs them ([`OpHistory::operations`]:
/// invoke and completion by process and id, or open at the end), every other event — and an op
/// event no operation claims (an abort recorded alone, a completion without its invoke) — as a
/// mark.
fn page_data(
    title: &str,
    subtitle: &str,
    history: &OpHistory<'_>,
    timeline: Option<&TimelineData>,
    checks: &[CheckReport],
) -> PageData {
    let events = history.history().events();
    let origin = wall_origin_ms(events);
    let mut lanes: Vec<String> = Vec::new();
    for e in events {
        if !lanes.contains(&e.node) {
            lanes.push(e.node.clone());
        }
    }
    lanes.sort_by_key(|n| lane_rank(n)); // stable: first appearance within a group
    let lane_of = |node: &str| lanes.iter().position(|n| n == node).unwrap_or(0);
    let end_us = events.last().map_or(0, |e| e.at_us).max(1);
    let steps = history.steps();
    let mut in_operation = vec![false; steps.len()];
    let mut ops: Vec<(usize, u64, u64, Item)> = Vec::new();
    for operation in history.operations() {
        let invoke = steps[operation.invoke].event;
        let done = operation.completion.map(|i| steps[i].event);
        if let EventKind::Op { op, data, .. } = &invoke.kind {
            ops.push(op_item(lane_of(&invoke.node), invoke, done, op, data, origin));
        }
        for i in std::iter::once(operation.invoke).chain(operation.completion) {
            in_operation[i] = true;
        }
    }
    let mut items: Vec<Item> = steps
        .iter()
        .zip(&in_operation)
        .filter(|(_, claimed)| !**claimed)
        .map(|(step, _)| mark_item(lane_of(&step.event.node), step.event, origin))
        .collect();
    ops.sort_by_key(|(lane, s, e, _)| (*lane, *s, *e));
    // Overlapping operations of one lane stack in rows.
    let mut rows = vec![0i64; lanes.len()];
    let mut row_ends: Vec<Vec<u64>> = vec![Vec::new(); lanes.len()];
    for (lane, start, end, mut item) in ops {
        let ends = &mut row_ends[lane];
        let row = match ends.iter().position(|&x| x < start) {
            Some(r) => r,
            None => {
                ends.push(0);
                ends.len() - 1
            }
        };
        ends[row] = end.max(start + 1);
        item.r = row as i64;
        rows[lane] = rows[lane].max(row as i64 + 1);
        items.push(item);
    }
    let (bands, first) = timeline.map_or_else(|| (Vec::new(), None), |t| bands_of(t, &lanes));
    let (violations, witness) = violations_of(first, checks, &lane_of, origin);
    items.extend(witness);
    let focus = violations.first().map(|v| focus(v.s, v.e, end_us));
    PageData {
        title: title.to_string(),
        subtitle: subtitle.to_string(),
        end_us,
        lanes,
        rows,
        items,
        bands,
        violations,
        focus,
    }
}

/// The range a page opens on around a violation from `s` to `e` (true µs) of a run ending at
/// `end_us`: a quarter of its length on each side, at least 1% of the run and 5 ms, within
/// the run.
fn focus(s: u64, e: u64, end_us: u64) -> [u64; 2] {
    let pad = ((e - s.min(e)) / 4).max(end_us / 100).max(5_000);
    [s.saturating_sub(pad), e.saturating_add(pad).min(end_us)]
}

fn op_item(
    lane: usize,
    invoke: &Event,
    done: Option<&Event>,
    op: &str,
    data: &Value,
    origin: i64,
) -> (usize, u64, u64, Item) {
    let (kind, completion_data) = match done.map(|d| &d.kind) {
        Some(EventKind::Op { phase, data, .. }) => (
            match phase {
                Phase::Ok => "ok",
                Phase::Fail => "fail",
                _ => "info",
            },
            Some(data),
        ),
        _ => ("open", None),
    };
    let mut d = vec![
        ("operation".to_string(), format!("{op} on {}", invoke.node)),
        (
            "outcome".to_string(),
            match kind {
                "ok" => "ok: took effect",
                "fail" => "fail: certainly did not take effect",
                "info" => "info: outcome unknown (may have taken effect)",
                _ => "never completed before the run ended",
            }
            .to_string(),
        ),
    ];
    d.extend(readings("invoke", invoke, origin));
    if let Some(done) = done {
        d.extend(readings("completion", done, origin));
        d.push((
            "took".to_string(),
            format!("{:.3} ms", done.at_us.saturating_sub(invoke.at_us) as f64 / 1e3),
        ));
    }
    let mut label = op.to_string();
    for (prefix, value) in [("invoke", Some(data)), ("completion", completion_data)] {
        if let Some(Value::Object(map)) = value {
            for (k, v) in map {
                let Some(text) = short(v) else { continue };
                if prefix == "completion" && (k == "token" || k == "value") {
                    label.push_str(&format!(" {k}={text}"));
                }
                d.push((format!("{prefix} {k}"), text));
            }
        } else if let Some(text) = value.and_then(short) {
            d.push((format!("{prefix} data"), text));
        }
    }
    let end = done.map_or_else(|| invoke.at_us.max(1), |d| d.at_us);
    let item = Item {
        l: lane,
        r: 0,
        s: invoke.at_us,
        e: if done.is_none() { u64::MAX } else { end },
        k: kind,
        t: label,
        d,
    };
    (lane, invoke.at_us, if done.is_none() { u64::MAX } else { end }, item)
}

fn mark_item(lane: usize, e: &Event, origin: i64) -> Item {
    let (kind, label, end) = match &e.kind {
        EventKind::Command { args, reply, .. } => ("command", format!("{} → {reply}", args.join(" ")), e.at_us),
        EventKind::Expired { key } => ("expired", format!("{key} expired"), e.at_us),
        EventKind::ResourceWrite {
            value, token, accepted, ..
        } => (
            if *accepted { "write-ok" } else { "write-rejected" },
            format!(
                "write {value}{} {}",
                token.map_or(String::new(), |t| format!(" token {t}")),
                if *accepted { "accepted" } else { "rejected" }
            ),
            e.at_us,
        ),
        EventKind::ResourceRead { value, .. } => (
            "read",
            format!("read {}", value.map_or("nil".to_string(), |v| v.to_string())),
            e.at_us,
        ),
        EventKind::Fault { fault } => match fault {
            lockstep_sim::Fault::Pause { duration_ms, .. } => (
                "pause",
                fault_label(fault),
                e.at_us.saturating_add(duration_ms.saturating_mul(1000)),
            ),
            _ => ("fault", fault_label(fault), e.at_us),
        },
        EventKind::Resumed => ("resumed", "resumed".to_string(), e.at_us),
        EventKind::Note { text } => ("note", text.clone(), e.at_us),
        EventKind::Op { op, .. } => ("note", op.clone(), e.at_us),
    };
    let mut d = vec![("event".to_string(), format!("{label} on {}", e.node))];
    d.extend(
        readings("at", e, origin)
            .into_iter()
            .map(|(k, v)| (k.replacen("at ", "", 1), v)),
    );
    d.extend(kind_details(e));
    Item {
        l: lane,
        r: -1,
        s: e.at_us,
        e: end,
        k: kind,
        t: label,
        d,
    }
}

/// The page's data as the text of a `<script type="application/json">` element: JSON in which
/// `<`, `>` and `&` are escaped (`\u003c`…), so no string in it can end the element or open a
/// comment, and `JSON.parse` reads it back unchanged.
fn data_block(data: &PageData) -> String {
    serde_json::to_string(data)
        .unwrap_or_else(|_| "{}".to_string())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The viewer's script, written once at the root of a report as `VIEWER_JS_FILE`: it reads a
/// timeline page's data block and draws it (an SVG, hover, zoom). Written for lockstep (no library).
pub const VIEWER_JS: &str = include_str!("viewer.js");

/// The viewer's style sheet, written once at the root of a report as [`VIEWER_CSS_FILE`].
pub(crate) const VIEWER_CSS: &str = include_str!("viewer.css");

/// The viewer's file names, at the root of the report directory.
pub(crate) const VIEWER_JS_FILE: &str = "viewer.js";
/// See [`VIEWER_JS_FILE`].
pub(crate) const VIEWER_CSS_FILE: &str = "viewer.css";

/// `timeline.html` of one run's typed `history` (its operations as [`OpHistory`] pairs them) and
/// its `timeline` data (holds, key lives, downtimes and the first violation, as the PNG chart draws
/// them), when there is one:
/// `title` names it, `subtitle` says what it shows (its verdicts). `root` is the path from the page's directory to the report's root, ending in `/` (`../../`
/// for `runs/NAME/`): the page loads the viewer ([`VIEWER_JS_FILE`], [`VIEWER_CSS_FILE`]) from
/// there and holds only its own data, inline (nothing is fetched: the page works from disk).
/// Five lines: the page is data, the viewer is written once.
pub(crate) fn timeline_html(
    title: &str,
    subtitle: &str,
    history: &OpHistory<'_>,
    timeline: Option<&TimelineData>,
    checks: &[CheckReport],
    root: &str,
) -> String {
    let data = page_data(title, subtitle, history, timeline, checks);
    let root = escape(root);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} — lockstep history</title>\
         <link rel=\"stylesheet\" href=\"{root}{VIEWER_CSS_FILE}\"></head><body>\n\
         <h1>{title}</h1><p class=\"sub\">{subtitle}</p>\n\
         <div id=\"chart\">This page is drawn by {root}{VIEWER_JS_FILE}, the report's timeline viewer.</div><div id=\"tip\" hidden></div>\n\
         <script type=\"application/json\" id=\"timeline-data\">{json}</script>\
         <script src=\"{root}{VIEWER_JS_FILE}\"></script></body></html>\n",
        title = escape(title),
        subtitle = escape(subtitle),
        json = data_block(&data),
    )
}

/// The one line under a run's title: the verdict it leads with (a counterexample's
/// `IMPLEMENTATION BUG on CHECKER`, or `expected / as documented`: [`super::verdict::Lead`]),
/// seed, digest, and each checker's verdict.
pub(crate) fn subtitle(s: &super::ScenarioReport) -> String {
    let mut text = match super::verdict::Lead::of_scenario(s) {
        Some(lead) => format!("{} on {} · ", lead.words, lead.checker),
        None => String::new(),
    };
    text.push_str(&format!("{} · seed {}", s.file, s.seed));
    if let Some(h) = &s.history {
        text.push_str(&format!(
            " · {} events, digest {}",
            h.events,
            &h.digest[..16.min(h.digest.len())]
        ));
    }
    for c in &s.checks {
        text.push_str(&format!(" · {} {}", c.checker, c.verdict.name()));
    }
    text
}

/// Writes one file of the report directory, given its path relative to the directory.
pub(crate) type PutFile<'a> = dyn FnMut(&str, &[u8]) -> Result<(), String> + 'a;

/// The path from the directory `rel_dir` (relative to the report's root, `/`-separated) back to
/// the root, ending in `/`: `../../` for `runs/NAME`.
fn path_to_root(rel_dir: &str) -> String {
    "../".repeat(rel_dir.split('/').filter(|part| !part.is_empty()).count())
}

/// Writes `runs/NAME/history.jsonl` and `runs/NAME/timeline.html` into the report directory
/// (through `put`, which writes a file given its path relative to it, creating the directories
/// above it) for every
/// scenario of `report` with a history in `histories`, and, when it wrote any, the viewer the
/// pages load ([`VIEWER_JS_FILE`], [`VIEWER_CSS_FILE`]) once at the root. Returns the names
/// written.
pub(crate) fn write_runs(
    report: &super::Report,
    histories: &BTreeMap<String, lockstep_sim::History>,
    put: &mut PutFile,
) -> Result<std::collections::BTreeSet<String>, String> {
    let mut written = std::collections::BTreeSet::new();
    for s in &report.scenarios {
        let Some(history) = histories.get(&s.name) else {
            continue;
        };
        let rel = format!("runs/{}", super::slug(&s.name));
        put(
            &format!("{rel}/history.jsonl"),
            history_jsonl(history.events()).as_bytes(),
        )?;
        put(
            &format!("{rel}/timeline.html"),
            timeline_html(
                &s.name,
                &subtitle(s),
                &OpHistory::new(history),
                s.timeline.as_ref(),
                &s.checks,
                &path_to_root(&rel),
            )
            .as_bytes(),
        )?;
        written.insert(s.name.clone());
    }
    if !written.is_empty() {
        put(VIEWER_JS_FILE, VIEWER_JS.as_bytes())?;
        put(VIEWER_CSS_FILE, VIEWER_CSS.as_bytes())?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_sim::History;
    use serde_json::json;

    fn history() -> History {
        let mut h = History::new();
        let op = |phase, data: Value| EventKind::Op {
            id: 1,
            phase,
            op: "acquire".into(),
            data,
        };
        h.push(0, "world", 0, 0, EventKind::Note { text: "start".into() });
        h.push(1_000, "client-1", 5, 1, op(Phase::Invoke, json!({"key": "lock"})));
        h.push(
            3_000,
            "client-1",
            7,
            3,
            op(Phase::Ok, json!({"token": 42, "validity_from_ms": null})),
        );
        h.push(
            4_000,
            "redis-1",
            4,
            4,
            EventKind::Command {
                conn: 0,
                args: vec!["GET".into(), "</script>".into()],
                reply: "nil".into(),
                effects: Vec::new(),
                client: None,
            },
        );
        h
    }

    #[test]
    fn history_jsonl_reads_back_to_the_same_digest() {
        let h = history();
        let text = history_jsonl(h.events());
        assert_eq!(text.lines().count(), h.len());
        assert_eq!(digest_of_jsonl(&text).unwrap(), h.digest());
        assert_eq!(read_jsonl(&text).unwrap(), h.events());
        // A changed event changes the digest.
        assert_ne!(digest_of_jsonl(&text.replace("42", "43")).unwrap(), h.digest());
        assert!(digest_of_jsonl("{not json}\n").unwrap_err().contains("history.jsonl:1"));
    }

    /// The text of the page's data block.
    fn data_text(page: &str) -> &str {
        let open = "<script type=\"application/json\" id=\"timeline-data\">";
        let start = page.find(open).expect("a data block") + open.len();
        &page[start..start + page[start..].find("</script>").expect("the data block ends")]
    }

    #[test]
    fn the_page_shows_operations_with_their_readings_and_cannot_be_broken_out_of() {
        let h = history();
        let page = timeline_html(
            "demo",
            "mutual-exclusion valid",
            &OpHistory::new(&h),
            None,
            &[],
            "../../",
        );
        // The command's `</script>` argument is escaped in the data block, and reads back.
        let block = data_text(&page);
        assert!(!block.contains('<') && block.contains("GET \\u003c/script\\u003e"));
        let data = page_data("demo", "mutual-exclusion valid", &OpHistory::new(&h), None, &[]);
        let parsed: Value = serde_json::from_str(block).unwrap();
        assert_eq!(parsed, serde_json::to_value(&data).unwrap());
        let op = data.items.iter().find(|i| i.k == "ok").unwrap();
        assert_eq!((op.s, op.e, op.t.as_str()), (1_000, 3_000, "acquire token=42"));
        let details: BTreeMap<_, _> = op.d.iter().cloned().collect();
        // Seconds since the run's start: the world's first event read wall 0 at true time 0.
        assert_eq!(details["invoke wall clock"], "0.005 s");
        assert_eq!(details["completion monotonic clock"], "0.003 s");
        assert_eq!(details["completion token"], "42");
        // The invoke's own data, not the completion's again.
        assert_eq!(details["invoke key"], "lock");
        assert!(!details.contains_key("invoke token"));
        assert_eq!(data.lanes, ["client-1", "redis-1", "world"]);
        for bad in ["http://", "https://", "fetch("] {
            assert!(!page.contains(bad), "{bad}");
        }
    }

    #[test]
    fn operations_are_paired_as_the_typed_history_pairs_them_and_strays_stay_visible() {
        let mut h = history();
        let op = |id, phase, data: Value| EventKind::Op {
            id,
            phase,
            op: "release".into(),
            data,
        };
        // Id 7 on two processes: two operations. Id 9: a completion nobody invoked.
        h.push(5_000, "client-1", 9, 5, op(7, Phase::Invoke, json!({"key": "lock"})));
        h.push(5_000, "client-2", 9, 5, op(7, Phase::Invoke, json!({"key": "lock"})));
        h.push(6_000, "client-2", 10, 6, op(7, Phase::Ok, json!({"released": true})));
        h.push(7_000, "client-1", 11, 7, op(9, Phase::Ok, json!({"released": false})));
        let data = page_data("demo", "", &OpHistory::new(&h), None, &[]);
        let lane = |node: &str| data.lanes.iter().position(|n| n == node).unwrap();
        let release = |node: &str| {
            data.items
                .iter()
                .find(|i| i.l == lane(node) && i.r >= 0 && i.t.starts_with("release"))
                .unwrap()
        };
        assert_eq!((release("client-2").k, release("client-2").e), ("ok", 6_000));
        assert_eq!((release("client-1").k, release("client-1").e), ("open", u64::MAX));
        let stray = data.items.iter().find(|i| i.s == 7_000).unwrap();
        assert_eq!((stray.k, stray.r, stray.t.as_str()), ("note", -1, "release"));
    }

    #[test]
    fn the_page_loads_the_one_viewer_from_the_root_and_holds_none_of_it() {
        let h = history();
        let page = timeline_html("demo", "", &OpHistory::new(&h), None, &[], "../../");
        assert_eq!(page.matches("<script src=").count(), 1);
        assert!(page.contains("<script src=\"../../viewer.js\"></script>"));
        assert!(page.contains("<link rel=\"stylesheet\" href=\"../../viewer.css\">"));
        assert!(!page.contains("<style"));
        // The viewer's code is in viewer.js, not in the page; and it reads the page's block.
        for line in VIEWER_JS.lines().map(str::trim).filter(|l| l.len() > 20) {
            assert!(!page.contains(line), "the page inlines viewer code: {line}");
        }
        assert!(VIEWER_JS.contains("getElementById('timeline-data')"));
        assert!(!VIEWER_JS.contains("fetch(") && !VIEWER_JS.contains("DATA = {"));
        // The page stays a few lines: the data is its only bulk.
        assert_eq!(page.lines().count(), 5);
        // The data block precedes the viewer, which reads it as it loads.
        assert!(page.find("timeline-data").unwrap() < page.find("viewer.js\"></script>").unwrap());
    }

    #[test]
    fn holds_key_lives_and_the_violation_are_drawn_on_the_lanes_they_name_without_nulls() {
        use crate::report::timeline::{GrantBar, KeyLife, Lane, LaneRole, Violation};
        let h = history();
        // The chart data's lanes are clients and masters only: matched to the page's by name.
        let timeline = TimelineData {
            title: "demo".into(),
            end_us: 4_000,
            lanes: vec![
                Lane {
                    name: "redis-1".into(),
                    role: LaneRole::Master,
                },
                Lane {
                    name: "client-1".into(),
                    role: LaneRole::Client,
                },
            ],
            grants: vec![GrantBar {
                lane: 1,
                start_us: 3_000,
                end_us: 4_000,
                token: Some(42),
                label: "token 42".into(),
                open: true,
                believed_until_us: Some(3_500),
            }],
            pauses: Vec::new(),
            down: Vec::new(),
            key_life: vec![KeyLife {
                lane: 0,
                holder: Some(1),
                start_us: 2_000,
                end_us: 3_200,
                label: "token 42".into(),
                ended_by: "deleted by client-2's DEL".into(),
                foreign_end: true,
            }],
            notes: Vec::new(),
            expiries: Vec::new(),
            writes: Vec::new(),
            clock_jumps: Vec::new(),
            faults: Vec::new(),
            violation: Some(Violation {
                checker: "mutual-exclusion".into(),
                start_us: 3_200,
                end_us: 3_900,
                explanation: "two holders".into(),
                marks: Vec::new(),
            }),
        };
        let data = page_data("demo", "", &OpHistory::new(&h), Some(&timeline), &[]);
        let lane = |node: &str| data.lanes.iter().position(|n| n == node).unwrap();
        let hold = data.bands.iter().find(|b| b.k == "hold-open").expect("the hold");
        assert_eq!(
            (hold.l, hold.s, hold.e, hold.b),
            (lane("client-1"), 3_000, 4_000, Some(3_500))
        );
        let key = data
            .bands
            .iter()
            .find(|b| b.k == "key-foreign")
            .expect("the key's life");
        assert_eq!((key.l, key.s, key.e), (lane("redis-1"), 2_000, 3_200));
        assert!(key.d.iter().any(|(_, v)| v.contains("deleted by client-2's DEL")));
        let band = data.violations.first().expect("the violation");
        assert_eq!(
            (band.s, band.e, band.t.as_str()),
            (3_200, 3_900, "mutual-exclusion violated")
        );
        // No detail anywhere shows a raw null.
        let json = serde_json::to_string(&data).unwrap();
        assert!(!json.contains("\"null\"") && !json.contains(",\"null\"]"), "{json}");
        for item in &data.items {
            assert!(item.d.iter().all(|(_, v)| v != "null"), "{:?}", item.d);
        }
    }

    #[test]
    fn the_path_to_the_root_climbs_one_level_per_directory() {
        assert_eq!(path_to_root("runs/kleppmann-gc-pause"), "../../");
        assert_eq!(path_to_root("runs/x/"), "../../");
        assert_eq!(path_to_root("a"), "../");
        assert_eq!(path_to_root(""), "");
    }
}
