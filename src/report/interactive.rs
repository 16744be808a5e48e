//! The raw history of a run and its interactive timeline, as Jepsen's store keeps them.
//!
//! - [`history_jsonl`]: `history.jsonl`, one event a line in its canonical JSON — exactly the
//!   lines the history digest is computed over, so [`digest_of_jsonl`] recomputes the run's
//!   digest from the file alone (other tools can read and verify it).
//! - [`timeline_html`]: `timeline.html`, a page holding one run's data (inline, as a JSON block)
//!   that the report's one viewer — [`VIEWER_JS`] and [`VIEWER_CSS`], written once at the root
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
use crate::history::OpHistory;
use lockstep_sim::{Event, EventKind, Phase};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// `history.jsonl`: every event's canonical JSON line, each followed by `\n`.
pub fn history_jsonl(events: &[Event]) -> String {
    let mut out = String::new();
    for event in events {
        out.push_str(&event.canonical_json());
        out.push('\n');
    }
    out
}

/// Reads a `history.jsonl` back: each non-empty line parsed as an event. Errors name the line.
pub fn read_jsonl(text: &str) -> Result<Vec<Event>, String> {
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
    /// `read`, `fault`, `pause`, `resumed`, `note`.
    k: &'static str,
    /// Short label.
    t: String,
    /// Details shown on hover: (field, value) pairs.
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
}

fn seconds(at_us: u64) -> String {
    format!("{:.3} s", at_us as f64 / 1e6)
}

/// A JSON value as a short text (strings without quotes).
fn short(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn readings(prefix: &str, e: &Event) -> Vec<(String, String)> {
    vec![
        (
            format!("{prefix} at"),
            format!("{} (event #{})", seconds(e.at_us), e.seq),
        ),
        (format!("{prefix} wall clock"), format!("{} ms", e.wall_ms)),
        (format!("{prefix} monotonic clock"), format!("{} ms", e.monotonic_ms)),
    ]
}

/// The fields of an event's kind (its JSON without the common fields), as details.
fn kind_details(e: &Event) -> Vec<(String, String)> {
    let value = serde_json::to_value(&e.kind).unwrap_or(Value::Null);
    match value {
        Value::Object(map) => map
            .into_iter()
            .filter(|(k, _)| k != "type")
            .map(|(k, v)| (k, short(&v)))
            .collect(),
        _ => Vec::new(),
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
fn page_data(title: &str, subtitle: &str, history: &OpHistory<'_>) -> PageData {
    let events = history.history().events();
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
            ops.push(op_item(lane_of(&invoke.node), invoke, done, op, data));
        }
        for i in std::iter::once(operation.invoke).chain(operation.completion) {
            in_operation[i] = true;
        }
    }
    let mut items: Vec<Item> = steps
        .iter()
        .zip(&in_operation)
        .filter(|(_, claimed)| !**claimed)
        .map(|(step, _)| mark_item(lane_of(&step.event.node), step.event))
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
    PageData {
        title: title.to_string(),
        subtitle: subtitle.to_string(),
        end_us,
        lanes,
        rows,
        items,
    }
}

fn op_item(lane: usize, invoke: &Event, done: Option<&Event>, op: &str, data: &Value) -> (usize, u64, u64, Item) {
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
    d.extend(readings("invoke", invoke));
    if let Some(done) = done {
        d.extend(readings("completion", done));
        d.push((
            "took".to_string(),
            format!("{:.3} ms", done.at_us.saturating_sub(invoke.at_us) as f64 / 1e3),
        ));
    }
    let mut label = op.to_string();
    for (prefix, value) in [("invoke", Some(data)), ("completion", completion_data)] {
        if let Some(Value::Object(map)) = value {
            for (k, v) in map {
                d.push((format!("{prefix} {k}"), short(v)));
                if prefix == "completion" && (k == "token" || k == "value") && !v.is_null() {
                    label.push_str(&format!(" {k}={}", short(v)));
                }
            }
        } else if let Some(v) = value.filter(|v| !v.is_null()) {
            d.push((format!("{prefix} data"), short(v)));
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

fn mark_item(lane: usize, e: &Event) -> Item {
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
        EventKind::Fault { fault } => {
            let value = serde_json::to_value(fault).unwrap_or(Value::Null);
            let kind = value.get("kind").map_or_else(String::new, short);
            match value.get("duration_ms").and_then(Value::as_u64) {
                Some(ms) if kind == "pause" => (
                    "pause",
                    format!("paused {ms} ms"),
                    e.at_us.saturating_add(ms.saturating_mul(1000)),
                ),
                _ => ("fault", kind, e.at_us),
            }
        }
        EventKind::Resumed => ("resumed", "resumed".to_string(), e.at_us),
        EventKind::Note { text } => ("note", text.clone(), e.at_us),
        EventKind::Op { op, .. } => ("note", op.clone(), e.at_us),
    };
    let mut d = vec![("event".to_string(), format!("{label} on {}", e.node))];
    d.extend(
        readings("at", e)
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

/// The viewer's script, written once at the root of a report as [`VIEWER_JS_FILE`]: it reads a
/// timeline page's data block and draws it (an SVG, hover, zoom). Written for lockstep (no library).
pub const VIEWER_JS: &str = include_str!("viewer.js");

/// The viewer's style sheet, written once at the root of a report as [`VIEWER_CSS_FILE`].
pub const VIEWER_CSS: &str = include_str!("viewer.css");

/// The viewer's file names, at the root of the report directory.
pub const VIEWER_JS_FILE: &str = "viewer.js";
/// See [`VIEWER_JS_FILE`].
pub const VIEWER_CSS_FILE: &str = "viewer.css";

/// `timeline.html` of one run's typed `history` (its operations as [`OpHistory`] pairs them):
/// `title` names it, `subtitle` says what it shows (its verdicts). `root` is the path from the page's directory to the report's root, ending in `/` (`../../`
/// for `runs/NAME/`): the page loads the viewer ([`VIEWER_JS_FILE`], [`VIEWER_CSS_FILE`]) from
/// there and holds only its own data, inline (nothing is fetched: the page works from disk).
/// Five lines: the page is data, the viewer is written once.
pub fn timeline_html(title: &str, subtitle: &str, history: &OpHistory<'_>, root: &str) -> String {
    let data = page_data(title, subtitle, history);
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

/// The one line under a run's title: seed, digest, and each checker's verdict.
pub fn subtitle(s: &super::ScenarioReport) -> String {
    let mut text = format!("{} · seed {}", s.file, s.seed);
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
pub type PutFile<'a> = dyn FnMut(&str, &[u8]) -> Result<(), String> + 'a;

/// The path from the directory `rel_dir` (relative to the report's root, `/`-separated) back to
/// the root, ending in `/`: `../../` for `runs/NAME`.
pub fn path_to_root(rel_dir: &str) -> String {
    "../".repeat(rel_dir.split('/').filter(|part| !part.is_empty()).count())
}

/// Writes `runs/NAME/history.jsonl` and `runs/NAME/timeline.html` into the report directory
/// `dir` (through `put`, which writes a file given its path relative to `dir`) for every
/// scenario of `report` with a history in `histories`, and, when it wrote any, the viewer the
/// pages load ([`VIEWER_JS_FILE`], [`VIEWER_CSS_FILE`]) once at the root. Returns the names
/// written.
pub fn write_runs(
    report: &super::Report,
    histories: &BTreeMap<String, lockstep_sim::History>,
    dir: &std::path::Path,
    put: &mut PutFile,
) -> Result<std::collections::BTreeSet<String>, String> {
    let mut written = std::collections::BTreeSet::new();
    for s in &report.scenarios {
        let Some(history) = histories.get(&s.name) else {
            continue;
        };
        let rel = format!("runs/{}", super::slug(&s.name));
        std::fs::create_dir_all(dir.join(&rel)).map_err(|e| format!("cannot create {rel}/: {e}"))?;
        put(
            &format!("{rel}/history.jsonl"),
            history_jsonl(history.events()).as_bytes(),
        )?;
        put(
            &format!("{rel}/timeline.html"),
            timeline_html(&s.name, &subtitle(s), &OpHistory::new(history), &path_to_root(&rel)).as_bytes(),
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
        h.push(3_000, "client-1", 7, 3, op(Phase::Ok, json!({"token": 42})));
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
        let page = timeline_html("demo", "mutual-exclusion valid", &OpHistory::new(&h), "../../");
        // The command's `</script>` argument is escaped in the data block, and reads back.
        let block = data_text(&page);
        assert!(!block.contains('<') && block.contains("GET \\u003c/script\\u003e"));
        let data = page_data("demo", "mutual-exclusion valid", &OpHistory::new(&h));
        let parsed: Value = serde_json::from_str(block).unwrap();
        assert_eq!(parsed, serde_json::to_value(&data).unwrap());
        let op = data.items.iter().find(|i| i.k == "ok").unwrap();
        assert_eq!((op.s, op.e, op.t.as_str()), (1_000, 3_000, "acquire token=42"));
        let details: BTreeMap<_, _> = op.d.iter().cloned().collect();
        assert_eq!(details["invoke wall clock"], "5 ms");
        assert_eq!(details["completion monotonic clock"], "3 ms");
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
        let data = page_data("demo", "", &OpHistory::new(&h));
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
        let page = timeline_html("demo", "", &OpHistory::new(&h), "../../");
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
    fn the_path_to_the_root_climbs_one_level_per_directory() {
        assert_eq!(path_to_root("runs/kleppmann-gc-pause"), "../../");
        assert_eq!(path_to_root("runs/x/"), "../../");
        assert_eq!(path_to_root("a"), "../");
        assert_eq!(path_to_root(""), "");
    }
}
