//! The exploration chart: a wrapped title; on the left, per checker, the seeds on which it
//! found a violation, coloured by what the exploration expected (violations expected: amber;
//! none expected: red when some were found; no expectation: grey), with the count and the
//! seeds it took to the first failure; on the right, per fault kind, the seeds whose plan had
//! it and how many of those violated something, as labelled horizontal bars.

use super::svg::{text_width, wrap, Anchor, Font, Svg};
use crate::model::ExploreExpect;
use crate::report::ExplorationReport;

const WIDTH: f64 = 1200.0;
const ROW: f64 = 40.0;
const AMBER: &str = "#e08a00";
/// Violations and failures, in the verdict colour of `invalid` everywhere.
const RED: &str = crate::report::headline::verdict_colour(crate::model::Verdict::Invalid);
const GREY: &str = "#9a9a9a";
const LIGHT: &str = "#c8c8c8";
const DARK: &str = "#555";

fn title(e: &ExplorationReport) -> String {
    let s = &e.summary;
    format!(
        "Exploration of {} ({}): {} seeds, {} violating, {} errors · faults: {}{} (at most {} per seed)",
        e.name,
        e.algorithm,
        s.seeds_run,
        s.seeds_violating,
        s.errors,
        e.profile.kinds.join(", "),
        if e.profile.lock_aware { ", lock-aware" } else { "" },
        e.profile.faults_max
    )
}

/// Draws the summary of exploration `e`.
pub fn draw(e: &ExplorationReport) -> Svg {
    let s = &e.summary;
    let title = wrap(&title(e), 16.0, true, WIDTH - 30.0);
    let checks = &e.checks;
    let kinds: Vec<(&String, &crate::explore::summary::KindCount)> = s.fault_kinds.iter().collect();
    let rows = checks.len().max(kinds.len()).max(1);
    let top = 30.0 + 22.0 * title.len() as f64 + 40.0;
    let height = top + ROW * rows as f64 + 70.0;
    let mut svg = Svg::new(WIDTH as u32, height.ceil() as u32);
    for (i, line) in title.iter().enumerate() {
        svg.text((14.0, 26.0 + 22.0 * i as f64), line, Font::new(16.0).bold(), None);
    }
    let run = s.seeds_run.max(1) as f64;

    // Left: checkers.
    let (l0, l1) = (140.0, 560.0);
    svg.text(
        (14.0, top - 14.0),
        &format!("seeds on which each checker found a violation (of {})", s.seeds_run),
        Font::new(14.0).bold(),
        None,
    );
    for (i, c) in checks.iter().enumerate() {
        let y = top + ROW * i as f64;
        let (col, meaning) = match c.expected {
            Some(ExploreExpect::SomeInvalid) => (AMBER, "violations expected"),
            Some(ExploreExpect::NoneInvalid) if c.invalid_seeds > 0 => (RED, "none expected: unexpected"),
            Some(ExploreExpect::NoneInvalid) => (GREY, "none expected, none found"),
            None => (GREY, "no expectation"),
        };
        svg.text(
            (l0 - 8.0, y + 15.0),
            &c.checker,
            Font::new(12.5).anchor(Anchor::End),
            Some(&c.explanation),
        );
        let w = (l1 - l0) * c.invalid_seeds as f64 / run;
        svg.rect(l0, y + 3.0, l1 - l0, 16.0, "fill=\"#f2f2f2\"", None);
        let tip = format!("{}: {} ({meaning})", c.checker, c.explanation);
        svg.rect(
            l0,
            y + 3.0,
            w.max(if c.invalid_seeds > 0 { 2.0 } else { 0.0 }),
            16.0,
            &format!("fill=\"{col}\""),
            Some(&tip),
        );
        svg.text(
            (l0 + w + 5.0, y + 16.0),
            &c.invalid_seeds.to_string(),
            Font::new(12.5)
                .bold()
                .color(if c.invalid_seeds > 0 { col } else { "#555" }),
            None,
        );
        let first = c.first_failing.as_ref().map_or(meaning.to_string(), |f| {
            let nth = f.seed.saturating_sub(e.seeds.start) + 1;
            format!("{meaning} · first failure: seed {} ({nth} seeds in)", f.seed)
        });
        svg.text((l0, y + 33.0), &first, Font::new(11.0).color("#555"), None);
    }
    // The colour key.
    let key_y = top + ROW * rows as f64 + 26.0;
    let mut x = 14.0;
    for (col, label) in [
        (AMBER, "violations expected"),
        (RED, "violations not expected (an unexpected result)"),
        (GREY, "no expectation"),
        (LIGHT, "seeds whose plan had the fault kind"),
        (DARK, "of those, seeds violating any checker"),
    ] {
        svg.rect(x, key_y - 10.0, 22.0, 12.0, &format!("fill=\"{col}\""), Some(label));
        svg.text((x + 28.0, key_y), label, Font::new(12.0), None);
        x += 28.0 + text_width(label, 12.0, false) + 24.0;
    }

    // Right: fault kinds.
    let (r0, r1) = (760.0, WIDTH - 70.0);
    svg.text(
        (640.0, top - 14.0),
        "seeds per fault kind, and of those, violating",
        Font::new(14.0).bold(),
        None,
    );
    let kmax = kinds.iter().map(|(_, c)| c.seeds).max().unwrap_or(1).max(1) as f64;
    for (i, (kind, c)) in kinds.iter().enumerate() {
        let y = top + ROW * i as f64;
        svg.text((r0 - 8.0, y + 18.0), kind, Font::new(12.5).anchor(Anchor::End), None);
        let w_all = (r1 - r0) * c.seeds as f64 / kmax;
        let w_bad = (r1 - r0) * c.violating as f64 / kmax;
        svg.rect(
            r0,
            y + 2.0,
            w_all,
            13.0,
            &format!("fill=\"{LIGHT}\""),
            Some(&format!("{}: {} seeds had it in their plan", kind, c.seeds)),
        );
        svg.text(
            (r0 + w_all + 5.0, y + 13.0),
            &c.seeds.to_string(),
            Font::new(11.5).color("#555"),
            None,
        );
        svg.rect(
            r0,
            y + 17.0,
            w_bad.max(if c.violating > 0 { 2.0 } else { 0.0 }),
            13.0,
            &format!("fill=\"{DARK}\""),
            Some(&format!(
                "{}: {} of its {} seeds violated something",
                kind, c.violating, c.seeds
            )),
        );
        svg.text(
            (r0 + w_bad + 5.0, y + 28.0),
            &format!("{} violating", c.violating),
            Font::new(11.5).color(DARK),
            None,
        );
    }
    svg
}
