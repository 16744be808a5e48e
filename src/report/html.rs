//! `index.html`: one self-contained page (no external resource): the result, the scenario and
//! exploration tables, links to `summary.md`, `report.json` and `junit.xml`, and every chart
//! embedded as inline SVG.

use super::headline::row_explanation;
use super::{chart_stems, Headline, Report, ScenarioReport};
use crate::checker::NAMES;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Escapes text for HTML.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The SVG document without its XML declaration, to inline it.
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2em auto;max-width:1260px;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:14px}th,td{border:1px solid #ddd;padding:4px 8px;vertical-align:top}\
th{background:#f4f4f4}code{font-size:13px}.ok{color:#1e8c32}.bad{color:#c81e28}\
figure{margin:1.5em 0;border:1px solid #eee;padding:8px}figure svg{max-width:100%;height:auto}\
.pair{display:flex;gap:12px;flex-wrap:wrap}.pair figure{flex:1 1 600px}";

/// The page. `svgs` maps each chart stem (see [`chart_stems`]) to its SVG.
pub fn index(report: &Report, svgs: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let headline = Headline::of(report);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockstep safety report</title>\
         <style>{STYLE}</style></head><body>\n<h1>lockstep safety report</h1>\n"
    );
    let class = if headline.ok { "ok" } else { "bad" };
    let detail = headline.detail().map_or_else(String::new, |d| format!(" — {d}"));
    let _ = writeln!(
        out,
        "<p class=\"{class}\"><b>{} {}</b>{detail}</p>",
        headline.mark(),
        headline.title()
    );
    let _ = writeln!(
        out,
        "<p>{} · <a href=\"summary.md\">summary.md</a> · <a href=\"report.json\">report.json</a> · \
         <a href=\"junit.xml\">junit.xml</a></p>",
        escape(&headline.scope())
    );

    if !report.scenarios.is_empty() {
        let _ = writeln!(out, "<h2>Scenarios</h2>\n<table><tr><th></th><th>scenario</th>");
        for name in NAMES {
            let _ = write!(out, "<th>{name}</th>");
        }
        let _ = writeln!(out, "<th>explanation</th><th>replay</th></tr>");
        let mut rows: Vec<&ScenarioReport> = report.scenarios.iter().collect();
        rows.sort_by_key(|s| s.status);
        for s in rows {
            let _ = write!(
                out,
                "<tr><td>{}</td><td><a href=\"#timeline-{}\">{}</a></td>",
                s.status.mark(),
                escape(&s.name),
                escape(&s.name)
            );
            for name in NAMES {
                match s.checks.iter().find(|c| c.checker == *name) {
                    Some(c) => {
                        let expected = match c.expected {
                            Some(e) if c.status.is_failure() => format!(" (expected {})", e.name()),
                            _ => String::new(),
                        };
                        let _ = write!(out, "<td>{} {}{}</td>", c.status.mark(), c.verdict.name(), expected);
                    }
                    None => out.push_str("<td>—</td>"),
                }
            }
            let _ = writeln!(
                out,
                "<td>{}</td><td><code>{}</code></td></tr>",
                escape(&row_explanation(s)),
                escape(&s.replay)
            );
        }
        out.push_str("</table>\n");
    }

    if !report.explorations.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Explorations</h2>\n<table><tr><th></th><th>exploration</th><th>seeds</th>"
        );
        for name in NAMES {
            let _ = write!(out, "<th>{name}</th>");
        }
        out.push_str("</tr>\n");
        for e in &report.explorations {
            let _ = write!(
                out,
                "<tr><td>{}</td><td><a href=\"#explore-{}\">{}</a></td><td>{}</td>",
                e.status.mark(),
                escape(&e.name),
                escape(&e.name),
                e.summary.seeds_run
            );
            for name in NAMES {
                match e.checks.iter().find(|c| c.checker == *name) {
                    Some(c) => {
                        let expected = c.expected.map_or(String::new(), |x| format!(" ({})", x.name()));
                        let _ = write!(
                            out,
                            "<td title=\"{}\">{} {} invalid{}</td>",
                            escape(&c.explanation),
                            c.status.mark(),
                            c.invalid_seeds,
                            expected
                        );
                    }
                    None => out.push_str("<td>—</td>"),
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }

    // Kleppmann's story side by side, when both runs are in the report.
    let pair = ["timeline-kleppmann-gc-pause", "timeline-kleppmann-gc-pause-fenced"];
    let mut shown = Vec::new();
    if pair.iter().all(|p| svgs.contains_key(*p)) {
        out.push_str("<h2>Kleppmann's pause: unfenced and fenced</h2>\n<div class=\"pair\">\n");
        for stem in pair {
            let _ = writeln!(
                out,
                "<figure id=\"{stem}\">{}<figcaption>{stem}</figcaption></figure>",
                inline_svg(&svgs[stem])
            );
            shown.push(stem.to_string());
        }
        out.push_str("</div>\n");
    }
    out.push_str("<h2>Charts</h2>\n");
    for (stem, title) in chart_stems(report) {
        if shown.contains(&stem) {
            continue;
        }
        if let Some(svg) = svgs.get(&stem) {
            let _ = writeln!(
                out,
                "<figure id=\"{}\"><h3>{}</h3>{}</figure>",
                escape(&stem),
                escape(&title),
                inline_svg(svg)
            );
        }
    }
    out.push_str("</body></html>\n");
    out
}
