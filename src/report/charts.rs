//! Charts, drawn with plotters as SVG and PNG from a [`Report`] alone.
//!
//! - a timeline per scenario ([`TimelineData`]): one lane per client and master, grants as bars
//!   labelled with their tokens, pauses shaded, key expiries, resource writes accepted or
//!   rejected, clock jumps, the violation highlighted;
//! - the TTL trade-off ([`TtlSweep`]): violation rate and mean unavailability against the TTL;
//! - an exploration summary per exploration: seeds violating each checker, and seeds per fault
//!   kind with how many of them violated something.
//!
//! Text is drawn with DejaVu Sans, compiled into the binary (the `dejavu` crate) and registered
//! with plotters' `ab_glyph` font backend, so PNGs render the same on machines without any
//! system font. SVGs name the `sans-serif` family and let the viewer render the text.

use super::sweep::TtlSweep;
use super::timeline::{LaneRole, TimelineData};
use super::{ExplorationReport, Report};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::sync::Once;

/// The font family every chart uses (registered from the embedded DejaVu Sans).
pub const FONT: &str = "sans-serif";

/// Registers the embedded fonts with plotters (once per process).
pub fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // DejaVu's TTFs are valid fonts: registration cannot fail; if it did, drawing text
        // would report the error.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// One chart of a report.
#[derive(Debug, Clone, Copy)]
pub enum Chart<'a> {
    /// A scenario's timeline.
    Timeline(&'a TimelineData),
    /// The TTL trade-off.
    TtlTradeoff(&'a TtlSweep),
    /// An exploration's summary.
    Exploration(&'a ExplorationReport),
}

/// Every chart of `report` with its file stem (see [`super::chart_stems`], which lists the
/// same charts in the same order).
pub fn all(report: &Report) -> Vec<(String, Chart<'_>)> {
    let mut charts = Vec::new();
    for s in &report.scenarios {
        if let Some(t) = &s.timeline {
            charts.push(Chart::Timeline(t));
        }
    }
    if let Some(sweep) = &report.ttl_sweep {
        charts.push(Chart::TtlTradeoff(sweep));
    }
    for e in &report.explorations {
        charts.push(Chart::Exploration(e));
    }
    super::chart_stems(report)
        .into_iter()
        .map(|(stem, _)| stem)
        .zip(charts)
        .collect()
}

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("drawing a chart: {e}")
}

fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&BLACK)
}

fn bold(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size, FontStyle::Bold).into_font()).color(&BLACK)
}

const GRANT: RGBColor = RGBColor(52, 101, 164);
const PAUSE: RGBColor = RGBColor(110, 110, 110);
const EXPIRY: RGBColor = RGBColor(230, 120, 0);
const ACCEPTED: RGBColor = RGBColor(30, 140, 50);
const REJECTED: RGBColor = RGBColor(200, 30, 40);
const JUMP: RGBColor = RGBColor(130, 50, 170);
const VIOLATION: RGBColor = RGBColor(220, 30, 30);
const DOWN: RGBColor = RGBColor(60, 60, 60);

impl Chart<'_> {
    /// Width and height in pixels.
    pub fn size(&self) -> (u32, u32) {
        match self {
            Chart::Timeline(t) => (1200, 130 + 56 * t.lanes.len().max(2) as u32 + 70),
            Chart::TtlTradeoff(_) => (1000, 560),
            Chart::Exploration(_) => (1200, 500),
        }
    }

    /// The chart as an SVG document.
    pub fn svg(&self) -> Result<String, String> {
        register_fonts();
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, self.size()).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(err)?;
        }
        Ok(out)
    }

    /// The chart as a PNG image (RGB, 8 bits).
    pub fn png(&self) -> Result<Vec<u8>, String> {
        register_fonts();
        let (w, h) = self.size();
        let mut pixels = vec![255u8; w as usize * h as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(err)?;
        }
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, w, h);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_compression(png::Compression::High);
            let mut writer = encoder.write_header().map_err(err)?;
            writer.write_image_data(&pixels).map_err(err)?;
            writer.finish().map_err(err)?;
        }
        Ok(out)
    }

    /// Draws the chart on `root`.
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        match self {
            Chart::Timeline(t) => draw_timeline(root, t),
            Chart::TtlTradeoff(s) => draw_ttl(root, s),
            Chart::Exploration(e) => draw_exploration(root, e),
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

fn draw_timeline<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, t: &TimelineData) -> Result<(), String> {
    let (width, height) = root.dim_in_pixel();
    let n = t.lanes.len().max(1);
    let nf = n as f64;
    // Room on the right for the labels of the last events.
    let end_s = (t.end_us as f64 / 1e6).max(0.001) * 1.1;
    root.draw(&Text::new(truncate(&t.title, 110), (12, 10), bold(17)))
        .map_err(err)?;
    if let Some(v) = &t.violation {
        let line = format!("{} violated: {}", v.checker, v.explanation);
        root.draw(&Text::new(truncate(&line, 150), (12, 36), font(13).color(&VIOLATION)))
            .map_err(err)?;
    } else {
        root.draw(&Text::new("no violation", (12, 36), font(13).color(&ACCEPTED)))
            .map_err(err)?;
    }
    let legend_h = 46;
    let main = root.margin(60, legend_h, 0, 0);
    let mut chart = ChartBuilder::on(&main)
        .margin_right(24)
        .margin_left(8)
        .x_label_area_size(40)
        .y_label_area_size(96)
        .build_cartesian_2d(0f64..end_s, 0f64..nf)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .y_labels(0)
        .x_desc("true time (s)")
        .x_label_style(font(13))
        .axis_desc_style(font(13))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(err)?;
    let area = chart.plotting_area();
    let center = |lane: usize| nf - lane as f64 - 0.5;
    let px_per_s = {
        let (a, _) = chart.backend_coord(&(0.0, 0.0));
        let (b, _) = chart.backend_coord(&(end_s, 0.0));
        (b - a).max(1) as f64 / end_s
    };
    // Lanes: shaded backgrounds and names.
    for (i, lane) in t.lanes.iter().enumerate() {
        let shade = match lane.role {
            LaneRole::Client => RGBColor(246, 248, 252),
            LaneRole::Master => RGBColor(252, 247, 240),
        };
        area.draw(&Rectangle::new(
            [(0.0, nf - i as f64 - 1.0), (end_s, nf - i as f64)],
            shade.filled(),
        ))
        .map_err(err)?;
        let (x, y) = chart.backend_coord(&(0.0, center(i)));
        let label = match lane.role {
            LaneRole::Client => lane.name.clone(),
            LaneRole::Master => format!("{} (master)", lane.name),
        };
        root.draw(&Text::new(
            truncate(&label, 16),
            (x - 8, y),
            font(13).pos(Pos::new(HPos::Right, VPos::Center)),
        ))
        .map_err(err)?;
    }
    // The violation, behind everything else.
    if let Some(v) = &t.violation {
        let (a, b) = (v.start_us as f64 / 1e6, v.end_us as f64 / 1e6);
        let b = b.max(a + 3.0 / px_per_s);
        area.draw(&Rectangle::new([(a, 0.0), (b, nf)], VIOLATION.mix(0.13).filled()))
            .map_err(err)?;
        area.draw(&Rectangle::new([(a, 0.0), (b, nf)], VIOLATION.mix(0.6).stroke_width(1)))
            .map_err(err)?;
    }
    // Master downtime and pauses.
    for d in &t.down {
        let c = center(d.lane);
        area.draw(&Rectangle::new(
            [(d.start_us as f64 / 1e6, c - 0.45), (d.end_us as f64 / 1e6, c + 0.45)],
            DOWN.mix(0.3).filled(),
        ))
        .map_err(err)?;
        area.draw(&Text::new(
            d.label.clone(),
            (d.start_us as f64 / 1e6, c + 0.42),
            font(11).color(&DOWN),
        ))
        .map_err(err)?;
    }
    for p in &t.pauses {
        let c = center(p.lane);
        let (a, b) = (p.start_us as f64 / 1e6, (p.end_us as f64 / 1e6).min(end_s));
        area.draw(&Rectangle::new(
            [(a, c - 0.45), (b, c + 0.45)],
            PAUSE.mix(0.28).filled(),
        ))
        .map_err(err)?;
        if (b - a) * px_per_s > 70.0 {
            area.draw(&Text::new(
                p.label.clone(),
                ((a + b) / 2.0, c - 0.3),
                font(12)
                    .color(&RGBColor(70, 70, 70))
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            ))
            .map_err(err)?;
        }
    }
    // Grants.
    for g in &t.grants {
        let c = center(g.lane);
        let (a, b) = (g.start_us as f64 / 1e6, g.end_us as f64 / 1e6);
        let b = b.max(a + 2.0 / px_per_s);
        let color = if g.open { GRANT.mix(0.55) } else { GRANT.mix(0.85) };
        area.draw(&Rectangle::new([(a, c - 0.14), (b, c + 0.14)], color.filled()))
            .map_err(err)?;
        let text_px = 7.5 * g.label.chars().count() as f64;
        if (b - a) * px_per_s > text_px + 6.0 {
            area.draw(&Text::new(
                g.label.clone(),
                (a + 3.0 / px_per_s, c),
                font(12).color(&WHITE).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        }
    }
    // Expiries, clock jumps, other faults.
    for m in &t.expiries {
        let c = center(m.lane);
        let x = m.at_us as f64 / 1e6;
        area.draw(&Cross::new((x, c), 7, EXPIRY.stroke_width(3))).map_err(err)?;
        if t.expiries.len() <= 12 {
            area.draw(&Text::new(
                "key expired".to_string(),
                (x + 6.0 / px_per_s, c + 0.2),
                font(12).color(&EXPIRY),
            ))
            .map_err(err)?;
        }
    }
    for m in &t.clock_jumps {
        let c = center(m.lane);
        let x = m.at_us as f64 / 1e6;
        area.draw(&PathElement::new(
            vec![(x, c - 0.48), (x, c + 0.48)],
            JUMP.stroke_width(3),
        ))
        .map_err(err)?;
        area.draw(&Text::new(
            m.label.clone(),
            (x + 5.0 / px_per_s, c + 0.42),
            font(12).color(&JUMP),
        ))
        .map_err(err)?;
    }
    for m in &t.faults {
        let c = center(m.lane);
        let x = m.at_us as f64 / 1e6;
        area.draw(&Circle::new((x, c - 0.3), 4, JUMP.mix(0.7).filled()))
            .map_err(err)?;
        if t.faults.len() <= 12 {
            area.draw(&Text::new(
                m.label.clone(),
                (x + 5.0 / px_per_s, c - 0.22),
                font(11).color(&JUMP),
            ))
            .map_err(err)?;
        }
    }
    // Writes at the resource, on the writer's lane.
    let label_writes = t.writes.len() <= 16;
    for w in &t.writes {
        let c = center(w.lane) - 0.27;
        let x = w.at_us as f64 / 1e6;
        if w.accepted {
            area.draw(&TriangleMarker::new((x, c), 7, ACCEPTED.filled()))
                .map_err(err)?;
        } else {
            area.draw(&Cross::new((x, c), 6, REJECTED.stroke_width(3)))
                .map_err(err)?;
        }
        if label_writes {
            let token = w.token.map_or(String::new(), |t| format!(" (token {t})"));
            let text = if w.accepted {
                format!("write {}{token} accepted", w.value)
            } else {
                format!("write {}{token} REJECTED", w.value)
            };
            let color = if w.accepted { ACCEPTED } else { REJECTED };
            // Near the right edge, the label goes to the left of its mark.
            let (lx, anchor) = if x > end_s * 0.75 {
                (x - 9.0 / px_per_s, HPos::Right)
            } else {
                (x + 7.0 / px_per_s, HPos::Left)
            };
            area.draw(&Text::new(
                text,
                (lx, c - 0.02),
                font(12).color(&color).pos(Pos::new(anchor, VPos::Top)),
            ))
            .map_err(err)?;
        }
    }
    if let Some(v) = &t.violation {
        for m in &v.marks {
            let c = center(m.lane);
            area.draw(&Circle::new((m.at_us as f64 / 1e6, c), 9, VIOLATION.stroke_width(2)))
                .map_err(err)?;
        }
    }
    drop(chart);
    // The legend.
    let y = height as i32 - 24;
    let mut x = 100;
    let items: [(&str, u8); 8] = [
        ("lock held (bar, token)", 0),
        ("paused", 1),
        ("key expired", 2),
        ("write accepted", 3),
        ("write rejected", 4),
        ("clock jump", 5),
        ("other fault", 6),
        ("violation", 7),
    ];
    for (label, kind) in items {
        match kind {
            0 => root
                .draw(&Rectangle::new([(x, y - 4), (x + 22, y + 4)], GRANT.mix(0.85).filled()))
                .map_err(err)?,
            1 => root
                .draw(&Rectangle::new([(x, y - 8), (x + 22, y + 8)], PAUSE.mix(0.28).filled()))
                .map_err(err)?,
            2 => root
                .draw(&Cross::new((x + 11, y), 6, EXPIRY.stroke_width(3)))
                .map_err(err)?,
            3 => root
                .draw(&TriangleMarker::new((x + 11, y), 7, ACCEPTED.filled()))
                .map_err(err)?,
            4 => root
                .draw(&Cross::new((x + 11, y), 6, REJECTED.stroke_width(3)))
                .map_err(err)?,
            5 => root
                .draw(&PathElement::new(
                    vec![(x + 11, y - 9), (x + 11, y + 9)],
                    JUMP.stroke_width(3),
                ))
                .map_err(err)?,
            6 => root
                .draw(&Circle::new((x + 11, y), 4, JUMP.mix(0.7).filled()))
                .map_err(err)?,
            _ => root
                .draw(&Rectangle::new(
                    [(x, y - 8), (x + 22, y + 8)],
                    VIOLATION.mix(0.2).filled(),
                ))
                .map_err(err)?,
        }
        root.draw(&Text::new(
            label,
            (x + 28, y),
            font(12).pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
        x += 40 + (label.chars().count() as i32) * 7;
    }
    let _ = width;
    Ok(())
}

fn draw_ttl<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, s: &TtlSweep) -> Result<(), String> {
    let max_ttl = s.points.iter().map(|p| p.ttl_ms).max().unwrap_or(1).max(1) as f64;
    let max_unavail = s
        .points
        .iter()
        .map(|p| p.mean_unavailable_ms)
        .fold(0.0, f64::max)
        .max(1.0);
    let max_rate = s
        .points
        .iter()
        .map(|p| p.violation_rate * 100.0)
        .fold(0.0, f64::max)
        .max(1.0);
    let caption = format!(
        "The TTL trade-off: {}, {} seeds per TTL, faults: {} (at most {})",
        s.algorithm,
        s.seeds,
        s.profile.kinds.join(" + "),
        s.profile.faults_max
    );
    let mut chart = ChartBuilder::on(root)
        .caption(caption, bold(17))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .right_y_label_area_size(76)
        .build_cartesian_2d(0f64..max_ttl * 1.05, 0f64..(max_rate * 1.15).min(100.0))
        .map_err(err)?
        .set_secondary_coord(0f64..max_ttl * 1.05, 0f64..max_unavail * 1.15);
    chart
        .configure_mesh()
        .x_desc("lock TTL (ms)")
        .y_desc("seeds with a safety violation (%)")
        .x_label_style(font(13))
        .y_label_style(font(13))
        .axis_desc_style(font(14))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(RGBColor(242, 242, 242))
        .draw()
        .map_err(err)?;
    chart
        .configure_secondary_axes()
        .y_desc("mean unavailability per run (ms)")
        .label_style(font(13))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .axis_desc_style(font(14))
        .draw()
        .map_err(err)?;
    let rate: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (p.ttl_ms as f64, p.violation_rate * 100.0))
        .collect();
    let unavail: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (p.ttl_ms as f64, p.mean_unavailable_ms))
        .collect();
    chart
        .draw_series(LineSeries::new(rate.clone(), VIOLATION.stroke_width(3)))
        .map_err(err)?
        .label("violation rate (left axis)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], VIOLATION.stroke_width(3)));
    chart
        .draw_series(rate.iter().map(|&p| Circle::new(p, 5, VIOLATION.filled())))
        .map_err(err)?;
    chart
        .draw_secondary_series(LineSeries::new(unavail.clone(), GRANT.stroke_width(3)))
        .map_err(err)?
        .label("mean unavailability (right axis)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], GRANT.stroke_width(3)));
    chart
        .draw_secondary_series(unavail.iter().map(|&p| Rectangle::new([p, p], GRANT.filled())))
        .map_err(err)?;
    chart
        .draw_secondary_series(unavail.iter().map(|&p| Circle::new(p, 5, GRANT.filled())))
        .map_err(err)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperMiddle)
        .label_font(font(13))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(180, 180, 180))
        .draw()
        .map_err(err)?;
    Ok(())
}

fn draw_exploration<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, e: &ExplorationReport) -> Result<(), String> {
    let s = &e.summary;
    let title = format!(
        "Exploration of {} ({}): {} seeds, {} violating, {} errors · faults: {}{}",
        e.name,
        e.algorithm,
        s.seeds_run,
        s.seeds_violating,
        s.errors,
        e.profile.kinds.join(", "),
        if e.profile.lock_aware { " (lock-aware)" } else { "" }
    );
    root.draw(&Text::new(truncate(&title, 120), (14, 10), bold(16)))
        .map_err(err)?;
    let body = root.margin(40, 0, 0, 0);
    let (width, _) = body.dim_in_pixel();
    let (left, right) = body.split_horizontally(width * 9 / 20);

    let names: Vec<String> = crate::checker::NAMES.iter().map(|n| n.to_string()).collect();
    let counts: Vec<u64> = names
        .iter()
        .map(|n| s.violations.get(n).copied().unwrap_or(0))
        .collect();
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    let mut chart = ChartBuilder::on(&left)
        .caption("seeds violating each checker", font(14))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d((0..names.len().max(1) - 1).into_segmented(), 0u64..(max + max / 5 + 1))
        .map_err(err)?;
    let labels = names.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(names.len())
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_label_style(font(12))
        .y_label_style(font(12))
        .y_desc("seeds")
        .axis_desc_style(font(13))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(counts.iter().enumerate().map(|(i, &v)| {
            let mut bar = Rectangle::new(
                [(SegmentValue::Exact(i), 0), (SegmentValue::Exact(i + 1), v)],
                VIOLATION.mix(0.8).filled(),
            );
            bar.set_margin(0, 0, 14, 14);
            bar
        }))
        .map_err(err)?;
    chart
        .draw_series(counts.iter().enumerate().map(|(i, &v)| {
            Text::new(
                v.to_string(),
                (SegmentValue::CenterOf(i), v),
                font(13).pos(Pos::new(HPos::Center, VPos::Bottom)),
            )
        }))
        .map_err(err)?;

    let kinds: Vec<(&String, &crate::explore::summary::KindCount)> = s.fault_kinds.iter().collect();
    let kmax = kinds.iter().map(|(_, c)| c.seeds).max().unwrap_or(0).max(1);
    let kind_names: Vec<String> = kinds.iter().map(|(k, _)| (*k).clone()).collect();
    let segments = kinds.len().max(1);
    let mut chart = ChartBuilder::on(&right)
        .caption("seeds per fault kind (grey) and of those, violating (red)", font(14))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d((0..segments - 1).into_segmented(), 0u64..(kmax + kmax / 5 + 1))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(segments)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => kind_names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_label_style(font(12))
        .y_label_style(font(12))
        .y_desc("seeds")
        .axis_desc_style(font(13))
        .draw()
        .map_err(err)?;
    let (rw, _) = right.dim_in_pixel();
    let seg_px = ((rw.saturating_sub(90)) / segments as u32).max(8);
    let half = seg_px / 2;
    let pad = (seg_px / 8).max(2);
    chart
        .draw_series(kinds.iter().enumerate().flat_map(|(i, (_, c))| {
            let mut all = Rectangle::new(
                [(SegmentValue::Exact(i), 0), (SegmentValue::Exact(i + 1), c.seeds)],
                RGBColor(150, 150, 150).filled(),
            );
            all.set_margin(0, 0, pad, half);
            let mut bad = Rectangle::new(
                [(SegmentValue::Exact(i), 0), (SegmentValue::Exact(i + 1), c.violating)],
                VIOLATION.mix(0.8).filled(),
            );
            bad.set_margin(0, 0, half, pad);
            [all, bad]
        }))
        .map_err(err)?;
    Ok(())
}
