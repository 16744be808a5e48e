//! The raw history of a run and its interactive timeline, as Jepsen's store keeps them.
//!
//! - [`history_jsonl`]: `history.jsonl`, one event a line in its canonical JSON — exactly the
//!   lines the history digest is computed over, so [`digest_of_jsonl`] recomputes the run's
//!   digest from the file alone (other tools can read and verify it).
//! - [`timeline_html`]: `timeline.html`, one self-contained page (inline CSS and JS, nothing
//!   loaded from elsewhere) drawing every node as a lane: each client operation as a bar from
//!   its invoke to its completion (ok, fail, info, or never completed), every other event (a
//!   command a master applied, a key expiry, a write at the resource, a fault) as a mark, a
//!   pause as a span. Hovering shows the operation's invoke and completion times, the node's
//!   wall and monotonic readings at both, and its values and tokens; dragging across the chart
//!   (or the mouse wheel, or the from/to fields) zooms on a time range.
//!
//! Leaves out: checker verdicts beyond the title line (they are in `index.html`), and any
//! rendering on the Rust side — the page draws itself from the data embedded in it.

use super::html::escape;
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

fn page_data(title: &str, subtitle: &str, events: &[Event]) -> PageData {
    let mut lanes: Vec<String> = Vec::new();
    for e in events {
        if !lanes.contains(&e.node) {
            lanes.push(e.node.clone());
        }
    }
    lanes.sort_by_key(|n| lane_rank(n)); // stable: first appearance within a group
    let lane_of = |node: &str| lanes.iter().position(|n| n == node).unwrap_or(0);
    let end_us = events.last().map_or(0, |e| e.at_us).max(1);
    let mut items = Vec::new();
    let mut open: BTreeMap<u64, &Event> = BTreeMap::new();
    let mut ops: Vec<(usize, u64, u64, Item)> = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::Op { id, phase, op, data } => {
                if *phase == Phase::Invoke {
                    open.insert(*id, e);
                    continue;
                }
                let Some(invoke) = open.remove(id) else { continue };
                ops.push(op_item(lane_of(&e.node), invoke, Some(e), op, data));
            }
            _ => items.push(mark_item(lane_of(&e.node), e)),
        }
    }
    for invoke in open.values() {
        if let EventKind::Op { op, data, .. } = &invoke.kind {
            ops.push(op_item(lane_of(&invoke.node), invoke, None, op, data));
        }
    }
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

/// The embedded data as a JavaScript literal that cannot end the `<script>` element.
fn script_json(data: &PageData) -> String {
    serde_json::to_string(data)
        .unwrap_or_else(|_| "{}".to_string())
        .replace("</", "<\\/")
        .replace("<!--", "<\\!--")
}

/// `timeline.html` of one run: `title` names it, `subtitle` says what it shows (its verdicts).
pub fn timeline_html(title: &str, subtitle: &str, events: &[Event]) -> String {
    let data = page_data(title, subtitle, events);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} — lockstep history</title>\
         <style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n<p class=\"sub\">{subtitle}</p>\n{CONTROLS}\n\
         <div id=\"chart\"></div><div id=\"tip\" hidden></div>\n<script>const DATA = {json};\n{SCRIPT}</script>\n</body></html>\n",
        title = escape(title),
        subtitle = escape(subtitle),
        json = script_json(&data),
    )
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:1em 2em;color:#222}\
h1{font-size:20px;margin:.2em 0}.sub{color:#555;margin:.2em 0 .8em}\
#controls{font-size:13px;margin-bottom:6px}#controls input{width:7em}#controls button{margin-left:4px}\
#chart{position:relative;user-select:none;border:1px solid #ddd}svg text{font-size:11px;fill:#222}\
.lane-bg{fill:#fafafa}.lane-bg.odd{fill:#f2f2f2}\
.ok{fill:#a6dba0;stroke:#1a7f37}.fail{fill:#f4b6b6;stroke:#cf222e}.info{fill:#ffe08a;stroke:#9a6700}\
.open{fill:#ddd;stroke:#777;stroke-dasharray:3 2}.pause{fill:#c9c3e6;stroke:#6f42c1;opacity:.75}\
.command{fill:#4a72b0}.expired{fill:#cf222e}.write-ok{fill:#1a7f37}.write-rejected{fill:#e36209}\
.read{fill:#0969da}.fault{fill:#6f42c1}.resumed{fill:#6f42c1}.note{fill:#888}\
.hl{stroke:#000!important;stroke-width:2px!important}\
#tip{position:fixed;background:#fff;border:1px solid #888;box-shadow:2px 2px 6px rgba(0,0,0,.2);padding:6px 8px;\
font-size:12px;max-width:520px;pointer-events:none;z-index:10}#tip table{border-collapse:collapse}\
#tip td{padding:1px 6px;vertical-align:top}#tip td:first-child{color:#555;white-space:nowrap}\
.legend span{display:inline-block;width:12px;height:10px;margin:0 4px 0 12px;vertical-align:middle;border:1px solid #888}";

const CONTROLS: &str = "<div id=\"controls\">from <input id=\"from\" type=\"number\" step=\"any\"> to \
<input id=\"to\" type=\"number\" step=\"any\"> ms <button id=\"apply\">zoom</button><button id=\"out\">zoom out</button>\
<button id=\"reset\">whole run</button> · drag across the chart to zoom on a range, wheel to zoom, hover for details\
<span class=\"legend\"><span class=\"ok\" style=\"background:#a6dba0\"></span>ok<span style=\"background:#f4b6b6\"></span>fail\
<span style=\"background:#ffe08a\"></span>info (unknown)<span style=\"background:#ddd\"></span>never completed\
<span style=\"background:#c9c3e6\"></span>paused<span style=\"background:#4a72b0\"></span>command\
<span style=\"background:#cf222e\"></span>expiry<span style=\"background:#1a7f37\"></span>write accepted\
<span style=\"background:#e36209\"></span>write rejected<span style=\"background:#6f42c1\"></span>fault</span></div>";

/// The page's script: draws `DATA` as an SVG, and handles hover and zoom. Written for this
/// page (no library).
const SCRIPT: &str = r#"
(function () {
  const NS = 'http://www.w3.org/2000/svg';
  const chart = document.getElementById('chart'), tip = document.getElementById('tip');
  const LEFT = 110, RIGHT = 20, TOP = 26, MARK = 14, ROW = 18;
  let view = [0, DATA.end_us];
  const laneY = [], laneH = [];
  let y = TOP;
  DATA.lanes.forEach((_, i) => { laneY.push(y); laneH.push(MARK + Math.max(1, DATA.rows[i]) * ROW + 6); y += laneH[i]; });
  const HEIGHT = y + 8;
  const fmt = us => (us / 1000).toLocaleString('en-US', {maximumFractionDigits: 3}) + ' ms';
  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function step(span) {
    const raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    return [1, 2, 5, 10].map(m => m * p).find(s => s >= raw);
  }
  function draw() {
    const width = Math.max(600, chart.clientWidth || 1200), W = width - LEFT - RIGHT;
    const [v0, v1] = view, k = W / (v1 - v0);
    const x = t => LEFT + (Math.min(Math.max(t, v0), v1) - v0) * k;
    chart.textContent = '';
    const svg = el('svg', {width, height: HEIGHT}, chart);
    DATA.lanes.forEach((name, i) => {
      el('rect', {x: 0, y: laneY[i], width, height: laneH[i], class: 'lane-bg' + (i % 2 ? ' odd' : '')}, svg);
      const t = el('text', {x: 6, y: laneY[i] + 16}, svg); t.textContent = name;
    });
    const s = step(v1 - v0);
    for (let t = Math.ceil(v0 / s) * s; t <= v1; t += s) {
      el('line', {x1: x(t), x2: x(t), y1: TOP - 4, y2: HEIGHT, stroke: '#ddd'}, svg);
      const l = el('text', {x: x(t) + 2, y: TOP - 8}, svg); l.textContent = fmt(t);
    }
    DATA.items.forEach((it, n) => {
      const end = it.e === 18446744073709552000 || it.e > DATA.end_us ? DATA.end_us : it.e;
      if (end < v0 || it.s > v1) return;
      const top = laneY[it.l];
      let shape;
      if (it.r >= 0) {
        const x0 = x(it.s), w = Math.max(2, x(end) - x0);
        shape = el('rect', {x: x0, y: top + MARK + it.r * ROW, width: w, height: ROW - 3, class: it.k}, svg);
        if (w > 40) {
          const t = el('text', {x: x0 + 3, y: top + MARK + it.r * ROW + 11, 'pointer-events': 'none'}, svg);
          t.textContent = it.t.length * 6 > w ? it.t.slice(0, Math.max(1, Math.floor(w / 6) - 1)) + '…' : it.t;
        }
      } else if (it.k === 'pause') {
        shape = el('rect', {x: x(it.s), y: top + 1, width: Math.max(2, x(end) - x(it.s)), height: laneH[it.l] - 2, class: 'pause'}, svg);
      } else {
        shape = el('rect', {x: x(it.s) - 1.5, y: top + 2, width: 3, height: MARK - 3, class: it.k}, svg);
      }
      shape.dataset.n = n;
    });
    svg.addEventListener('mousemove', hover);
    svg.addEventListener('mouseleave', () => { tip.hidden = true; });
    document.getElementById('from').value = (v0 / 1000).toFixed(3);
    document.getElementById('to').value = (v1 / 1000).toFixed(3);
    return {x, k, W};
  }
  let geo = draw();
  let lit = null;
  function hover(ev) {
    const n = ev.target.dataset && ev.target.dataset.n;
    if (lit && lit !== ev.target) lit.classList.remove('hl');
    if (n === undefined) { tip.hidden = true; return; }
    lit = ev.target; lit.classList.add('hl');
    const it = DATA.items[n];
    const rows = it.d.map(([k, v]) => '<tr><td>' + esc(k) + '</td><td>' + esc(v) + '</td></tr>').join('');
    tip.innerHTML = '<b>' + esc(it.t) + '</b><table>' + rows + '</table>';
    tip.hidden = false;
    const w = tip.offsetWidth, h = tip.offsetHeight;
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - w - 4) + 'px';
    tip.style.top = (ev.clientY + 14 + h > window.innerHeight ? ev.clientY - h - 10 : ev.clientY + 14) + 'px';
  }
  function esc(s) { return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }
  function zoom(a, b) {
    a = Math.max(0, a); b = Math.min(DATA.end_us, b);
    if (b - a >= 10) { view = [a, b]; geo = draw(); }
  }
  const timeAt = px => view[0] + (px - LEFT) / geo.k;
  let drag = null, band = null;
  chart.addEventListener('mousedown', ev => {
    const r = chart.getBoundingClientRect();
    drag = ev.clientX - r.left;
    band = document.createElement('div');
    band.style.cssText = 'position:absolute;top:0;bottom:0;background:rgba(9,105,218,.15);border:1px solid #0969da;pointer-events:none';
    band.style.left = drag + 'px'; band.style.width = '0px';
    chart.appendChild(band);
  });
  window.addEventListener('mousemove', ev => {
    if (drag === null) return;
    const px = ev.clientX - chart.getBoundingClientRect().left;
    band.style.left = Math.min(px, drag) + 'px'; band.style.width = Math.abs(px - drag) + 'px';
  });
  window.addEventListener('mouseup', ev => {
    if (drag === null) return;
    const px = ev.clientX - chart.getBoundingClientRect().left;
    const a = timeAt(Math.min(px, drag)), b = timeAt(Math.max(px, drag));
    drag = null; band.remove();
    if (Math.abs(b - a) * geo.k > 4) zoom(a, b);
  });
  chart.addEventListener('wheel', ev => {
    ev.preventDefault();
    const t = timeAt(ev.clientX - chart.getBoundingClientRect().left), f = ev.deltaY > 0 ? 1.25 : 0.8;
    zoom(t - (t - view[0]) * f, t + (view[1] - t) * f);
  }, {passive: false});
  document.getElementById('apply').onclick = () =>
    zoom(parseFloat(document.getElementById('from').value) * 1000, parseFloat(document.getElementById('to').value) * 1000);
  document.getElementById('out').onclick = () => { const m = (view[0] + view[1]) / 2, h = view[1] - view[0]; zoom(m - h, m + h); };
  document.getElementById('reset').onclick = () => zoom(0, DATA.end_us);
  window.addEventListener('resize', () => { geo = draw(); });
  const q = new URLSearchParams(location.hash.slice(1));
  if (q.has('from') && q.has('to')) zoom(parseFloat(q.get('from')) * 1000, parseFloat(q.get('to')) * 1000);
})();
"#;

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

/// Writes `runs/NAME/history.jsonl` and `runs/NAME/timeline.html` into the report directory
/// `dir` (through `put`, which writes a file given its path relative to `dir`) for every
/// scenario of `report` with a history in `histories`. Returns the names written.
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
            timeline_html(&s.name, &subtitle(s), history.events()).as_bytes(),
        )?;
        written.insert(s.name.clone());
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

    #[test]
    fn the_page_shows_operations_with_their_readings_and_cannot_be_broken_out_of() {
        let h = history();
        let page = timeline_html("demo", "mutual-exclusion valid", h.events());
        assert!(!page.contains("</script>\"") && page.contains("GET <\\/script>"));
        let data = page_data("demo", "", h.events());
        let op = data.items.iter().find(|i| i.k == "ok").unwrap();
        assert_eq!((op.s, op.e, op.t.as_str()), (1_000, 3_000, "acquire token=42"));
        let details: BTreeMap<_, _> = op.d.iter().cloned().collect();
        assert_eq!(details["invoke wall clock"], "5 ms");
        assert_eq!(details["completion monotonic clock"], "3 ms");
        assert_eq!(details["completion token"], "42");
        assert_eq!(data.lanes, ["client-1", "redis-1", "world"]);
        for bad in ["<script src", "<link", "http://", "https://"] {
            assert!(!page.replace("http://www.w3.org/2000/svg", "").contains(bad), "{bad}");
        }
    }
}
