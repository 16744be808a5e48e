//! Charts, drawn as SVG from a [`Report`] alone and rasterised to PNG from that same SVG.
//!
//! - a timeline per scenario ([`TimelineData`], drawn by [`timeline`]): what each client
//!   believed against what the Redis servers held, the faults and events that caused a failure,
//!   the first violation;
//! - the TTL trade-off ([`TtlSweep`], drawn by [`ttl`]): violation rate and unavailability in two
//!   aligned panels over a log-scale TTL axis;
//! - an exploration summary per exploration ([`exploration`]): seeds violating each checker,
//!   coloured by whether violations were expected, seeds per fault kind, seeds to the first
//!   failure.
//!
//! Every mark carries a `<title>` tooltip. Text is set in DejaVu Sans, compiled into the binary:
//! its metrics lay labels out, and the PNG is the SVG rendered by resvg with that font (see
//! [`svg`]), so both show the same text on machines without any system font.

pub mod exploration;
pub mod svg;
pub mod timeline;
pub mod ttl;

use super::timeline::TimelineData;
use super::{ExplorationReport, Report};
use crate::explore::sweep::TtlSweep;

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

impl Chart<'_> {
    /// Width and height in pixels.
    pub fn size(&self) -> (u32, u32) {
        self.draw().size()
    }

    /// The chart as an SVG document.
    pub fn svg(&self) -> Result<String, String> {
        Ok(self.draw().finish())
    }

    /// The chart as a PNG image (RGB, 8 bits): its SVG rendered by resvg (the `cli` feature's).
    #[cfg(feature = "cli")]
    pub fn png(&self) -> Result<Vec<u8>, String> {
        svg::png(&self.draw().finish())
    }

    /// Draws the chart.
    pub fn draw(&self) -> svg::Svg {
        match self {
            Chart::Timeline(t) => timeline::draw(t),
            Chart::TtlTradeoff(s) => ttl::draw(s),
            Chart::Exploration(e) => exploration::draw(e),
        }
    }
}

/// Tick positions for an axis from 0 to `max`: a step of 1, 2 or 5 × 10ⁿ giving at most
/// `most` intervals.
pub fn ticks(max: f64, most: usize) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let raw = max / most.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= max + step * 1e-9)
        .collect()
}

/// A number with as few decimals as it needs (at most 3).
pub fn number(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(2.3, 10).last().copied(), Some(2.0));
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(12.0), "12");
    }
}
