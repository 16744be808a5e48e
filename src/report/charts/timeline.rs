//! The timeline chart of one run: a lane per client and per Redis server that took part.
//!
//! On a client's lane, a bar per grant in the client's colour: solid while the masters held its
//! lease and its own clock said the grant was valid, pale with a dashed outline where the client
//! still acted as the holder after that (a belief, not a lock). On a server's lane, the lock
//! key's life in the colour of the client whose value it held, ending in a red ✕ labelled with
//! the cause when something other than the holder's release or the key's expiry ended it (a
//! delayed `DEL` from another client, an overwrite, a crash). Around them: pauses (grey),
//! servers down (dark red), promotions and other deployment events (blue diamonds), clock jumps,
//! other faults, resource writes, the first violation (a red band, its witness events ringed).
//! Labels are placed only where they do not overlap an earlier one on the same row; every mark
//! has a tooltip with the whole text. The legend lists the marks the chart uses.

use super::svg::{text_width, wrap, Anchor, Font, Svg};
use super::{number, ticks};
use crate::model::units::seconds_number as secs;
use crate::report::timeline::{KeyLife, LaneRole, TimelineData};

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 24.0;
const CLIENT_LANE: f64 = 64.0;
const SERVER_LANE: f64 = 50.0;

/// The clients' colours, in lane order (red is kept for violations and rejections).
const PALETTE: [&str; 8] = [
    "#3465a4", "#e08a00", "#4e9a06", "#8a4fb0", "#0a8f99", "#b5487a", "#6b7f1a", "#7a5c3a",
];
/// Violations and failures, in the verdict colour of `invalid` everywhere.
const RED: &str = crate::report::headline::verdict_colour(crate::model::Verdict::Invalid);
const GREEN: &str = "#2a9d3a";
const PAUSE: &str = "#8c8c8c";
const DOWN: &str = "#7b1e1e";
const EXPIRY: &str = "#e06c00";
const JUMP: &str = "#7a3fb0";
const NOTE: &str = "#1f5fbf";

fn color(lane: usize) -> &'static str {
    PALETTE[lane % PALETTE.len()]
}

/// The legend's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Held,
    Belief,
    KeyLife,
    ForeignEnd,
    Expired,
    Paused,
    Down,
    Note,
    WriteOk,
    WriteRejected,
    ClockJump,
    Fault,
    Violation,
    Witness,
}

impl Item {
    fn label(self) -> &'static str {
        match self {
            Item::Held => "client holds the lock (token)",
            Item::Belief => "client acts as holder, but its lease is gone",
            Item::KeyLife => "key set on the server (holder's colour)",
            Item::ForeignEnd => "key removed by another client or a crash",
            Item::Expired => "key expired",
            Item::Paused => "paused",
            Item::Down => "server down",
            Item::Note => "promotion / deployment event",
            Item::WriteOk => "write accepted",
            Item::WriteRejected => "write rejected",
            Item::ClockJump => "clock jump",
            Item::Fault => "other fault",
            Item::Violation => "violation",
            Item::Witness => "violation's witness event",
        }
    }
}

fn legend_items(t: &TimelineData) -> Vec<Item> {
    let mut items = vec![Item::Held];
    let mut add = |cond: bool, item| {
        if cond {
            items.push(item);
        }
    };
    add(belief_spans(t).iter().any(|b| b.2 > b.1), Item::Belief);
    add(!t.key_life.is_empty(), Item::KeyLife);
    add(t.key_life.iter().any(|k| k.foreign_end), Item::ForeignEnd);
    add(!t.expiries.is_empty(), Item::Expired);
    add(!t.pauses.is_empty(), Item::Paused);
    add(!t.down.is_empty(), Item::Down);
    add(!t.notes.is_empty(), Item::Note);
    add(t.writes.iter().any(|w| w.accepted), Item::WriteOk);
    add(t.writes.iter().any(|w| !w.accepted), Item::WriteRejected);
    add(!t.clock_jumps.is_empty(), Item::ClockJump);
    add(!t.faults.is_empty(), Item::Fault);
    add(t.violation.is_some(), Item::Violation);
    add(t.violation.as_ref().is_some_and(|v| !v.marks.is_empty()), Item::Witness);
    items
}

/// Legend rows: items with their x offsets.
fn legend_rows(items: &[Item]) -> Vec<Vec<(Item, f64)>> {
    let mut rows: Vec<Vec<(Item, f64)>> = vec![Vec::new()];
    let mut x = 20.0;
    for &item in items {
        let w = 34.0 + text_width(item.label(), 12.0, false) + 22.0;
        if x + w > WIDTH - 10.0 && x > 20.0 {
            rows.push(Vec::new());
            x = 20.0;
        }
        if let Some(r) = rows.last_mut() {
            r.push((item, x));
        }
        x += w;
    }
    rows
}

/// The subtitle lines: the violation's explanation, wrapped.
fn subtitle(t: &TimelineData) -> Vec<String> {
    match &t.violation {
        Some(v) => wrap(
            &format!("{} violated: {}", v.checker, v.explanation),
            13.0,
            false,
            WIDTH - 30.0,
        ),
        None => vec!["no violation".to_string()],
    }
}

/// The bars' segments past the lease: `(lane, from_us, to_us, why)` for each grant whose
/// client still acted as holder after its lease on the masters ended or its own validity ran
/// out.
fn belief_spans(t: &TimelineData) -> Vec<(usize, u64, u64, String)> {
    let masters = t.lanes.iter().filter(|l| l.role == LaneRole::Master).count().max(1);
    let need = masters / 2 + 1;
    t.grants
        .iter()
        .filter_map(|g| {
            let mut ends: Vec<u64> = t
                .key_life
                .iter()
                .filter(|k| k.holder == Some(g.lane) && k.label == g.label)
                .map(|k| k.end_us)
                .collect();
            ends.sort_unstable_by(|a, b| b.cmp(a));
            let lease_end = if t.key_life.is_empty() {
                None
            } else {
                Some(ends.get(need - 1).copied().unwrap_or(g.start_us))
            };
            let mut from = g.end_us;
            let mut why = String::new();
            if let Some(end) = lease_end.filter(|&e| e < from) {
                from = end;
                why = format!("the servers no longer held its key from {} s", secs(end));
            }
            if let Some(b) = g.believed_until_us.filter(|&b| b < from) {
                from = b;
                why = format!("its own validity ran out at {} s", secs(b));
            }
            (from < g.end_us).then(|| (g.lane, from.max(g.start_us), g.end_us, why))
        })
        .collect()
}

struct Layout {
    subtitle: Vec<String>,
    top: f64,
    lanes_y: Vec<(f64, f64)>,
    bottom: f64,
    legend: Vec<Vec<(Item, f64)>>,
    height: f64,
}

fn layout(t: &TimelineData) -> Layout {
    let subtitle = subtitle(t);
    let top = 40.0 + 18.0 * subtitle.len() as f64 + 12.0;
    let mut y = top;
    let lanes_y = t
        .lanes
        .iter()
        .map(|l| {
            let h = if l.role == LaneRole::Client {
                CLIENT_LANE
            } else {
                SERVER_LANE
            };
            let lane = (y, h);
            y += h;
            lane
        })
        .collect();
    let bottom = y;
    let legend = legend_rows(&legend_items(t));
    let height = bottom + 44.0 + 24.0 * legend.len() as f64 + 8.0;
    Layout {
        subtitle,
        top,
        lanes_y,
        bottom,
        legend,
        height,
    }
}

/// Occupied label extents per row, so labels never overlap.
#[derive(Default)]
struct Rows(Vec<(i64, f64, f64)>);

impl Rows {
    /// Claims `[x0, x1]` on row `row` if free.
    fn claim(&mut self, row: i64, x0: f64, x1: f64) -> bool {
        let free = self.0.iter().all(|&(r, a, b)| r != row || x1 + 4.0 < a || x0 > b + 4.0);
        if free {
            self.0.push((row, x0, x1));
        }
        free
    }
}

/// Draws the timeline of `t`.
pub fn draw(t: &TimelineData) -> Svg {
    let l = layout(t);
    let mut svg = Svg::new(WIDTH as u32, l.height.ceil() as u32);
    let end_s = (t.end_us as f64 / 1e6).max(0.001) * 1.04;
    let plot_w = WIDTH - LEFT - RIGHT;
    let x_of = |us: u64| LEFT + (us as f64 / 1e6) / end_s * plot_w;
    let lane_y = |lane: usize| l.lanes_y.get(lane).copied().unwrap_or((l.top, CLIENT_LANE));
    let mid = |lane: usize| {
        let (y, h) = lane_y(lane);
        y + h / 2.0
    };

    // Title and the violation, wrapped.
    svg.text((12.0, 26.0), &t.title, Font::new(17.0).bold(), Some(&t.title));
    let sub_color = if t.violation.is_some() { RED } else { GREEN };
    for (i, line) in l.subtitle.iter().enumerate() {
        svg.text(
            (12.0, 48.0 + 18.0 * i as f64),
            line,
            Font::new(13.0).color(sub_color),
            None,
        );
    }

    // Lanes.
    for (i, lane) in t.lanes.iter().enumerate() {
        let (y, h) = lane_y(i);
        let shade = match lane.role {
            LaneRole::Client => "#f4f6fb",
            LaneRole::Master => "#fbf5ec",
            LaneRole::Replica => "#f7f3fa",
        };
        svg.rect(LEFT, y, plot_w, h, &format!("fill=\"{shade}\""), None);
        svg.line((LEFT, y + h), (LEFT + plot_w, y + h), "stroke=\"#e2e2e2\"", None);
        let role = match lane.role {
            LaneRole::Client => "client",
            LaneRole::Master => "master",
            LaneRole::Replica => "replica",
        };
        let name_color = if lane.role == LaneRole::Client {
            color(i)
        } else {
            "#222"
        };
        svg.text(
            (LEFT - 10.0, y + h / 2.0 - 1.0),
            &lane.name,
            Font::new(13.0).bold().color(name_color).anchor(Anchor::End),
            Some(&format!("{} ({role})", lane.name)),
        );
        svg.text(
            (LEFT - 10.0, y + h / 2.0 + 14.0),
            role,
            Font::new(11.0).color("#777").anchor(Anchor::End),
            None,
        );
    }

    // Time axis.
    let axis_y = l.bottom;
    for v in ticks(end_s, 12) {
        let x = LEFT + v / end_s * plot_w;
        svg.line((x, l.top), (x, axis_y), "stroke=\"#000\" stroke-opacity=\"0.07\"", None);
        svg.line((x, axis_y), (x, axis_y + 5.0), "stroke=\"#444\"", None);
        svg.text(
            (x, axis_y + 18.0),
            &format!("{} s", number(v)),
            Font::new(12.0).anchor(Anchor::Middle),
            None,
        );
    }
    svg.line((LEFT, axis_y), (LEFT + plot_w, axis_y), "stroke=\"#444\"", None);
    svg.text(
        (LEFT + plot_w / 2.0, axis_y + 36.0),
        "true time (the simulation's clock; nodes' own clocks may differ)",
        Font::new(12.0).color("#555").anchor(Anchor::Middle),
        None,
    );

    // The violation, behind everything else.
    if let Some(v) = &t.violation {
        let (a, b) = (x_of(v.start_us), x_of(v.end_us).max(x_of(v.start_us) + 3.0));
        svg.rect(
            a,
            l.top,
            b - a,
            l.bottom - l.top,
            &format!("fill=\"{RED}\" fill-opacity=\"0.12\" stroke=\"{RED}\" stroke-opacity=\"0.6\""),
            Some(&format!(
                "{} violated from {} s to {} s: {}",
                v.checker,
                secs(v.start_us),
                secs(v.end_us),
                v.explanation
            )),
        );
    }

    let mut rows = Rows::default();
    // Servers down, pauses.
    for d in &t.down {
        let (y, h) = lane_y(d.lane);
        let (a, b) = (x_of(d.start_us), x_of(d.end_us));
        svg.rect(
            a,
            y + 3.0,
            (b - a).max(2.0),
            h - 6.0,
            &format!("fill=\"{DOWN}\" fill-opacity=\"0.30\""),
            Some(&format!("{}: {} s to {} s", d.label, secs(d.start_us), secs(d.end_us))),
        );
        let w = text_width(&d.label, 11.0, false);
        if rows.claim(d.lane as i64 * 10, a + 3.0, a + 3.0 + w) {
            svg.text((a + 3.0, y + 13.0), &d.label, Font::new(11.0).color(DOWN), None);
        }
    }
    for p in &t.pauses {
        let (y, h) = lane_y(p.lane);
        let (a, b) = (x_of(p.start_us), x_of(p.end_us.min(t.end_us)));
        svg.rect(
            a,
            y + 3.0,
            (b - a).max(2.0),
            h - 6.0,
            &format!("fill=\"{PAUSE}\" fill-opacity=\"0.30\""),
            Some(&format!("{}: {} s to {} s", p.label, secs(p.start_us), secs(p.end_us))),
        );
        let w = text_width(&p.label, 11.0, false);
        if b - a > w + 6.0 && rows.claim(p.lane as i64 * 10, a + 3.0, a + 3.0 + w) {
            svg.text((a + 3.0, y + 13.0), &p.label, Font::new(11.0).color("#555"), None);
        }
    }

    // What the clients believed: grant bars, solid while held, pale past the lease.
    let beliefs = belief_spans(t);
    for g in &t.grants {
        let c = mid(g.lane);
        let (a, b) = (x_of(g.start_us), x_of(g.end_us).max(x_of(g.start_us) + 2.0));
        let belief = beliefs
            .iter()
            .find(|s| s.0 == g.lane && s.2 == g.end_us && s.1 >= g.start_us);
        let solid_end = belief.map_or(b, |s| x_of(s.1));
        let tip = format!(
            "{}: {} held from {} s to {} s{}{}",
            t.lanes.get(g.lane).map_or("?", |l| l.name.as_str()),
            g.label,
            secs(g.start_us),
            secs(g.end_us),
            if g.open { " (never released)" } else { "" },
            g.believed_until_us.map_or(String::new(), |u| format!(
                "; by its own clock valid until {} s",
                secs(u)
            ))
        );
        let col = color(g.lane);
        svg.rect(
            a,
            c - 9.0,
            (solid_end - a).max(2.0),
            18.0,
            &format!("fill=\"{col}\""),
            Some(&tip),
        );
        if let Some((_, from, _, why)) = belief {
            let x = x_of(*from);
            svg.rect(
                x,
                c - 9.0,
                (b - x).max(1.0),
                18.0,
                &format!("fill=\"{col}\" fill-opacity=\"0.22\" stroke=\"{col}\" stroke-dasharray=\"4 3\""),
                Some(&format!("{tip}; from {} s only a belief: {why}", secs(*from))),
            );
        }
        let w = text_width(&g.label, 12.0, false);
        if solid_end - a > w + 8.0 {
            svg.text((a + 4.0, c + 4.0), &g.label, Font::new(12.0).color("#fff"), None);
        } else if b - a > w + 8.0 {
            svg.text((a + 4.0, c + 4.0), &g.label, Font::new(12.0).color(col), None);
        }
    }

    // What the servers held: the key's life.
    for k in &t.key_life {
        draw_key_life(&mut svg, t, k, &x_of, &lane_y, &mut rows);
    }

    // Expiries, deployment events, clock jumps, other faults.
    for m in &t.expiries {
        let (y, _) = lane_y(m.lane);
        let x = x_of(m.at_us);
        cross(
            &mut svg,
            (x, y + 11.0),
            5.0,
            EXPIRY,
            &format!("{} at {} s", m.label, secs(m.at_us)),
        );
    }
    for m in &t.notes {
        let (y, h) = lane_y(m.lane);
        let x = x_of(m.at_us);
        let cy = y + h - 12.0;
        svg.path(
            &format!("M{x:.1},{:.1} l6,6 l-6,6 l-6,-6 z", cy - 6.0),
            &format!("fill=\"{NOTE}\""),
            Some(&format!("{} s: {}", secs(m.at_us), m.label)),
        );
        let short = short_note(&m.label);
        let w = text_width(&short, 11.0, false);
        let (lx, anchor) = place(x, w, WIDTH - RIGHT);
        let x0 = if anchor == Anchor::Start { lx } else { lx - w };
        if rows.claim(m.lane as i64 * 10 + 3, x0, x0 + w) {
            svg.text((lx, cy + 4.0), &short, Font::new(11.0).color(NOTE).anchor(anchor), None);
        }
    }
    for m in &t.clock_jumps {
        let (y, h) = lane_y(m.lane);
        let x = x_of(m.at_us);
        svg.line(
            (x, y + 2.0),
            (x, y + h - 2.0),
            &format!("stroke=\"{JUMP}\" stroke-width=\"3\""),
            Some(&format!("{} s: {}", secs(m.at_us), m.label)),
        );
        let w = text_width(&m.label, 11.0, false);
        if rows.claim(m.lane as i64 * 10 + 1, x + 4.0, x + 4.0 + w) {
            svg.text((x + 4.0, y + 12.0), &m.label, Font::new(11.0).color(JUMP), None);
        }
    }
    for m in &t.faults {
        let (y, _) = lane_y(m.lane);
        let x = x_of(m.at_us);
        svg.circle(
            (x, y + 8.0),
            4.0,
            &format!("fill=\"{JUMP}\" fill-opacity=\"0.75\""),
            Some(&format!("{} s: {}", secs(m.at_us), m.label)),
        );
        let w = text_width(&m.label, 11.0, false);
        if rows.claim(m.lane as i64 * 10 + 1, x + 6.0, x + 6.0 + w) {
            svg.text((x + 6.0, y + 12.0), &m.label, Font::new(11.0).color(JUMP), None);
        }
    }

    // Writes at the resource, on the writer's lane, below its bar. Rejected writes get their
    // labels first; the rest only where they fit.
    let mut order: Vec<&crate::report::timeline::WriteMark> = t.writes.iter().collect();
    order.sort_by_key(|w| (w.accepted, w.at_us));
    for w in order {
        let (y, h) = lane_y(w.lane);
        let x = x_of(w.at_us);
        let cy = y + h - 15.0;
        let token = w.token.map_or(String::new(), |t| format!(" (token {t})"));
        let verdict = if w.accepted { "accepted" } else { "REJECTED" };
        let text = format!("write {}{token} {verdict}", w.value);
        let tip = format!("{} s: {text}", secs(w.at_us));
        let col = if w.accepted { GREEN } else { RED };
        if w.accepted {
            svg.path(
                &format!("M{x:.1},{:.1} l5,8 l-10,0 z", cy - 5.0),
                &format!("fill=\"{col}\""),
                Some(&tip),
            );
        } else {
            cross(&mut svg, (x, cy), 5.0, RED, &tip);
        }
        let tw = text_width(&text, 11.0, false);
        let (lx, anchor) = place(x, tw, WIDTH - RIGHT);
        let x0 = if anchor == Anchor::Start { lx } else { lx - tw };
        if rows.claim(w.lane as i64 * 10 + 2, x0, x0 + tw) {
            svg.text((lx, cy + 12.0), &text, Font::new(11.0).color(col).anchor(anchor), None);
        }
    }

    // The violation's witness events.
    if let Some(v) = &t.violation {
        for m in &v.marks {
            svg.circle(
                (x_of(m.at_us), mid(m.lane)),
                10.0,
                &format!("fill=\"none\" stroke=\"{RED}\" stroke-width=\"2\""),
                Some(&format!("witness of {}: {} s {}", v.checker, secs(m.at_us), m.label)),
            );
        }
    }

    // The legend.
    for (r, row) in l.legend.iter().enumerate() {
        let y = axis_y + 60.0 + 24.0 * r as f64;
        for &(item, x) in row {
            legend_mark(&mut svg, item, x, y);
            svg.text((x + 32.0, y + 4.0), item.label(), Font::new(12.0), None);
        }
    }
    svg
}

/// Where a label of width `w` goes beside a mark at `x`: right of it, or left near the edge.
fn place(x: f64, w: f64, right_edge: f64) -> (f64, Anchor) {
    if x + 8.0 + w > right_edge {
        (x - 8.0, Anchor::End)
    } else {
        (x + 8.0, Anchor::Start)
    }
}

/// A deployment note's short label: its text up to the first `:` or `;`.
fn short_note(text: &str) -> String {
    let cut = text.find([':', ';']).unwrap_or(text.len());
    text[..cut].replace('`', "").trim().to_string()
}

fn cross(svg: &mut Svg, (x, y): (f64, f64), r: f64, col: &str, tip: &str) {
    svg.path(
        &format!(
            "M{:.1},{:.1} l{d},{d} M{:.1},{:.1} l{d},-{d}",
            x - r,
            y - r,
            x - r,
            y + r,
            d = 2.0 * r
        ),
        &format!("stroke=\"{col}\" stroke-width=\"3\" fill=\"none\""),
        Some(tip),
    );
}

fn draw_key_life(
    svg: &mut Svg,
    t: &TimelineData,
    k: &KeyLife,
    x_of: &dyn Fn(u64) -> f64,
    lane_y: &dyn Fn(usize) -> (f64, f64),
    rows: &mut Rows,
) {
    let (y, h) = lane_y(k.lane);
    let c = y + h / 2.0;
    let (a, b) = (x_of(k.start_us), x_of(k.end_us).max(x_of(k.start_us) + 2.0));
    let col = k.holder.map_or("#888", color);
    let holder = k
        .holder
        .and_then(|h| t.lanes.get(h))
        .map_or(String::new(), |l| format!(" ({})", l.name));
    let server = t.lanes.get(k.lane).map_or("?", |l| l.name.as_str());
    let tip = format!(
        "{server} held the key for {}{holder} from {} s to {} s; {}",
        k.label,
        secs(k.start_us),
        secs(k.end_us),
        k.ended_by
    );
    svg.rect(
        a,
        c - 6.0,
        b - a,
        12.0,
        &format!("fill=\"{col}\" fill-opacity=\"0.55\" stroke=\"{col}\""),
        Some(&tip),
    );
    let label = format!("{}{holder}", k.label);
    let w = text_width(&label, 11.0, false);
    if b - a > w + 8.0 && rows.claim(k.lane as i64 * 10 + 5, a, a + w + 4.0) {
        svg.text((a + 4.0, c + 4.0), &label, Font::new(11.0).color("#111"), None);
    }
    if k.foreign_end {
        cross(svg, (b, c), 7.0, RED, &format!("{} s: {}", secs(k.end_us), k.ended_by));
        let w = text_width(&k.ended_by, 12.0, true);
        let (lx, anchor) = place(b, w, WIDTH - RIGHT);
        let x0 = if anchor == Anchor::Start { lx } else { lx - w };
        if rows.claim(k.lane as i64 * 10 + 6, x0, x0 + w) {
            svg.text(
                (lx, y + h - 5.0),
                &k.ended_by,
                Font::new(12.0).bold().color(RED).anchor(anchor),
                None,
            );
        }
    }
}

fn legend_mark(svg: &mut Svg, item: Item, x: f64, y: f64) {
    let tip = Some(item.label());
    match item {
        Item::Held => svg.rect(x, y - 5.0, 24.0, 10.0, &format!("fill=\"{}\"", PALETTE[0]), tip),
        Item::Belief => svg.rect(
            x,
            y - 5.0,
            24.0,
            10.0,
            &format!(
                "fill=\"{c}\" fill-opacity=\"0.22\" stroke=\"{c}\" stroke-dasharray=\"4 3\"",
                c = PALETTE[0]
            ),
            tip,
        ),
        Item::KeyLife => svg.rect(
            x,
            y - 5.0,
            24.0,
            10.0,
            &format!("fill=\"{c}\" fill-opacity=\"0.55\" stroke=\"{c}\"", c = PALETTE[1]),
            tip,
        ),
        Item::ForeignEnd => cross(svg, (x + 12.0, y), 6.0, RED, item.label()),
        Item::Expired => cross(svg, (x + 12.0, y), 5.0, EXPIRY, item.label()),
        Item::Paused => svg.rect(
            x,
            y - 8.0,
            24.0,
            16.0,
            &format!("fill=\"{PAUSE}\" fill-opacity=\"0.30\""),
            tip,
        ),
        Item::Down => svg.rect(
            x,
            y - 8.0,
            24.0,
            16.0,
            &format!("fill=\"{DOWN}\" fill-opacity=\"0.30\""),
            tip,
        ),
        Item::Note => svg.path(
            &format!("M{:.1},{:.1} l6,6 l-6,6 l-6,-6 z", x + 12.0, y - 6.0),
            &format!("fill=\"{NOTE}\""),
            tip,
        ),
        Item::WriteOk => svg.path(
            &format!("M{:.1},{:.1} l5,8 l-10,0 z", x + 12.0, y - 5.0),
            &format!("fill=\"{GREEN}\""),
            tip,
        ),
        Item::WriteRejected => cross(svg, (x + 12.0, y), 5.0, RED, item.label()),
        Item::ClockJump => svg.line(
            (x + 12.0, y - 9.0),
            (x + 12.0, y + 9.0),
            &format!("stroke=\"{JUMP}\" stroke-width=\"3\""),
            tip,
        ),
        Item::Fault => svg.circle(
            (x + 12.0, y),
            4.0,
            &format!("fill=\"{JUMP}\" fill-opacity=\"0.75\""),
            tip,
        ),
        Item::Violation => svg.rect(
            x,
            y - 8.0,
            24.0,
            16.0,
            &format!("fill=\"{RED}\" fill-opacity=\"0.15\" stroke=\"{RED}\" stroke-opacity=\"0.6\""),
            tip,
        ),
        Item::Witness => svg.circle(
            (x + 12.0, y),
            8.0,
            &format!("fill=\"none\" stroke=\"{RED}\" stroke-width=\"2\""),
            tip,
        ),
    }
}
