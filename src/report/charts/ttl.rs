//! The TTL trade-off chart: two aligned panels over one log-scale TTL axis (100 ms to 60 s) —
//! above, the share of seeds with a safety violation; below, the mean time per run the lock was
//! unavailable — each with its own y axis, so no two curves share a plot and no crossing point
//! means anything. The workload and the fault profile are stated on the chart: the cliff where
//! the TTL falls below the critical section's length comes from the workload, not from Redis.

use super::svg::{wrap, Anchor, Font, Svg};
use super::{number, ticks};
use crate::explore::sweep::TtlSweep;

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const PANEL: f64 = 200.0;
const GAP: f64 = 46.0;
/// Violations and failures, in the verdict colour of `invalid` everywhere.
const RED: &str = crate::report::headline::verdict_colour(crate::model::Verdict::Invalid);
const BLUE: &str = "#3465a4";
const DOT: f64 = 5.0;

/// The TTL axis's range, ms: from 100 ms to 60 s, widened to hold every point.
fn range_ms(s: &TtlSweep) -> (f64, f64) {
    let lo = s.points.iter().map(|p| p.ttl_ms).min().unwrap_or(100).clamp(1, 100) as f64;
    let hi = s.points.iter().map(|p| p.ttl_ms).max().unwrap_or(60_000).max(60_000) as f64;
    (lo, hi)
}

/// A TTL as people write it: `100 ms`, `1 s`, `1.5 s`, `60 s`.
fn ttl_label(ms: f64) -> String {
    if ms >= 1_000.0 {
        format!("{} s", number(ms / 1_000.0))
    } else {
        format!("{} ms", number(ms))
    }
}

/// The workload and fault profile, in words.
fn workload(s: &TtlSweep) -> String {
    let p = &s.profile;
    let template = crate::model::Algorithm::from_name(&s.algorithm).and_then(|algorithm| {
        crate::scenario::standard::standard_template(
            algorithm,
            crate::model::Fencing::None,
            lockstep_sim::FencingMode::Unfenced,
            1,
        )
        .ok()
    });
    let work = template.as_ref().map_or(String::new(), |t| {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let work = if t.workload.work_ms.min() == t.workload.work_ms.max() {
            format!("{} ms", t.workload.work_ms.min())
        } else {
            format!("{}–{} ms", t.workload.work_ms.min(), t.workload.work_ms.max())
        };
        format!(
            "{} on {} take the lock in turn for {work} of work each, for {} s of each {} s run \
             (unavailability is counted within the run, so it levels off once a stuck lock outlasts the run)",
            plural(t.clients.len(), "client"),
            plural(t.masters.len(), "master"),
            number(t.workload.until_ms.unwrap_or(t.duration_ms) as f64 / 1e3),
            number(t.duration_ms as f64 / 1e3)
        )
    });
    format!(
        "Workload ({}): {work}. Faults: {} (at most {} per seed; pauses up to {} ms, partitions up to {} ms), \
         at fixed times, not aimed at the TTL. A TTL shorter than the work itself expires under every \
         holder: that, not Redis, makes the cliff on the left.",
        s.template,
        p.kinds.join(" + "),
        p.faults_max,
        p.pause_ms_max,
        p.window_ms_max
    )
}

fn height(lines: usize) -> f64 {
    40.0 + 17.0 * lines as f64 + 18.0 + PANEL + GAP + PANEL + 60.0
}

/// Draws the TTL trade-off of `s`.
pub fn draw(s: &TtlSweep) -> Svg {
    let text = wrap(&workload(s), 12.5, false, WIDTH - 40.0);
    let mut svg = Svg::new(WIDTH as u32, height(text.len()).ceil() as u32);
    let title = format!("The TTL trade-off: {}, {} seeds per TTL", s.algorithm, s.seeds);
    svg.text((16.0, 26.0), &title, Font::new(18.0).bold(), None);
    for (i, line) in text.iter().enumerate() {
        svg.text(
            (16.0, 48.0 + 17.0 * i as f64),
            line,
            Font::new(12.5).color("#444"),
            None,
        );
    }
    let top1 = 40.0 + 17.0 * text.len() as f64 + 24.0;
    let top2 = top1 + PANEL + GAP;
    let (lo, hi) = range_ms(s);
    let plot_w = WIDTH - LEFT - RIGHT;
    // Markers are kept inside: the axis is inset by a marker's radius at both ends.
    let x_of =
        |ms: f64| LEFT + DOT + 4.0 + (ms.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()) * (plot_w - 2.0 * (DOT + 4.0));

    let rates: Vec<(f64, f64, String)> = s
        .points
        .iter()
        .map(|p| {
            (
                p.ttl_ms as f64,
                p.violation_rate * 100.0,
                format!(
                    "TTL {}: {} of {} seeds violated safety ({:.0} %), {} of them mutual exclusion",
                    ttl_label(p.ttl_ms as f64),
                    p.seeds_violating,
                    p.seeds_run,
                    p.violation_rate * 100.0,
                    p.mutual_exclusion_violations
                ),
            )
        })
        .collect();
    let max_unavail_s = s.points.iter().map(|p| p.mean_unavailable_ms / 1e3).fold(0.0, f64::max);
    let unavail: Vec<(f64, f64, String)> = s
        .points
        .iter()
        .map(|p| {
            (
                p.ttl_ms as f64,
                p.mean_unavailable_ms / 1e3,
                format!(
                    "TTL {}: the lock was free while someone waited for {:.0} ms per run on average ({:.1} % of the time); acquire latency p50 {} ms, p99 {} ms",
                    ttl_label(p.ttl_ms as f64),
                    p.mean_unavailable_ms,
                    p.unavailability * 100.0,
                    p.acquire_latency_p50_ms.map_or("-".to_string(), |v| v.to_string()),
                    p.acquire_latency_p99_ms.map_or("-".to_string(), |v| v.to_string())
                ),
            )
        })
        .collect();
    panel(
        &mut svg,
        top1,
        "seeds with a safety violation",
        100.0,
        &|v| format!("{} %", number(v)),
        &rates,
        RED,
        &x_of,
    );
    panel(
        &mut svg,
        top2,
        "mean unavailability per run (lock free while someone waited)",
        max_unavail_s.max(0.1) * 1.1,
        &|v| format!("{} s", number(v)),
        &unavail,
        BLUE,
        &x_of,
    );
    // The shared TTL axis, under the lower panel; grid lines through both.
    let bottom = top2 + PANEL;
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v < lo - 1e-9 || v > hi + 1e-9 {
                continue;
            }
            let x = x_of(v);
            if v < hi && x_of(hi) - x < 40.0 {
                continue;
            }
            for top in [top1, top2] {
                svg.line(
                    (x, top),
                    (x, top + PANEL),
                    "stroke=\"#000\" stroke-opacity=\"0.08\"",
                    None,
                );
            }
            svg.line((x, bottom), (x, bottom + 5.0), "stroke=\"#444\"", None);
            svg.text(
                (x, bottom + 19.0),
                &ttl_label(v),
                Font::new(12.0).anchor(Anchor::Middle),
                None,
            );
        }
        decade *= 10.0;
    }
    if (hi - 60_000.0).abs() < 1.0 {
        let x = x_of(hi);
        svg.line((x, bottom), (x, bottom + 5.0), "stroke=\"#444\"", None);
        svg.text(
            (x, bottom + 19.0),
            &ttl_label(hi),
            Font::new(12.0).anchor(Anchor::Middle),
            None,
        );
    }
    svg.text(
        (LEFT + plot_w / 2.0, bottom + 42.0),
        "lock TTL (log scale)",
        Font::new(13.0).anchor(Anchor::Middle),
        None,
    );
    svg
}

#[allow(clippy::too_many_arguments)]
fn panel(
    svg: &mut Svg,
    top: f64,
    title: &str,
    y_max: f64,
    y_label: &dyn Fn(f64) -> String,
    points: &[(f64, f64, String)],
    col: &str,
    x_of: &dyn Fn(f64) -> f64,
) {
    let plot_w = WIDTH - LEFT - RIGHT;
    // Inset by a marker's radius so 0 % and 100 % markers are whole.
    let inset = DOT + 3.0;
    let y_of = |v: f64| top + PANEL - inset - v / y_max * (PANEL - 2.0 * inset);
    svg.rect(LEFT, top, plot_w, PANEL, "fill=\"#fafafa\" stroke=\"#999\"", None);
    svg.text((LEFT + 6.0, top - 7.0), title, Font::new(13.0).bold().color(col), None);
    for v in ticks(y_max, 5) {
        let y = y_of(v);
        svg.line(
            (LEFT, y),
            (LEFT + plot_w, y),
            "stroke=\"#000\" stroke-opacity=\"0.08\"",
            None,
        );
        svg.line((LEFT - 5.0, y), (LEFT, y), "stroke=\"#444\"", None);
        svg.text(
            (LEFT - 8.0, y + 4.0),
            &y_label(v),
            Font::new(12.0).anchor(Anchor::End),
            None,
        );
    }
    let line: Vec<(f64, f64)> = points.iter().map(|(x, y, _)| (x_of(*x), y_of(*y))).collect();
    svg.polyline(&line, &format!("stroke=\"{col}\" stroke-width=\"2.5\""), None);
    for ((x, y), (_, v, tip)) in line.iter().zip(points) {
        svg.circle((*x, *y), DOT, &format!("fill=\"{col}\""), Some(tip));
        let label = y_label((*v * 10.0).round() / 10.0);
        // Above the marker, or below it near the top.
        let ly = if *y - top < 22.0 { y + 17.0 } else { y - 9.0 };
        svg.text(
            (*x, ly),
            &label,
            Font::new(11.0).color("#333").anchor(Anchor::Middle).halo(),
            None,
        );
    }
}
