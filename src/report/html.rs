//! `index.html`: one self-contained page (no external resource): the result and the headline
//! counts (unsafe as expected, safe as expected, unexpected), the scenario and exploration
//! tables — each verdict shown by its word and its colour, whether it met the expectation in a
//! column of its own — the evidence (witness excerpts) with the replay commands, links to
//! `summary.md`, `report.json`, `junit.xml` and each run's interactive timeline and raw history,
//! the pairs of runs scenarios declare (`compare_with`) side by side, and every chart embedded
//! as inline SVG.

use super::headline::{match_words, row_explanation, verdict_colour, verdict_css, RowOutcome};
use super::{chart_stems, slug, Headline, Report, ScenarioReport, Status};
use crate::checker::NAMES;
use crate::model::Verdict;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Escapes text for HTML and SVG, in content and in attribute values (either quote); control
/// characters XML does not allow are dropped. The one escaper of the report's markup.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// The SVG document without its XML declaration, to inline it.
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// The page's style sheet: the verdict classes take their colours from [`verdict_colour`].
fn style() -> String {
    let (valid, invalid, unknown) = (
        verdict_colour(Verdict::Valid),
        verdict_colour(Verdict::Invalid),
        verdict_colour(Verdict::Unknown),
    );
    format!(
        "body{{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2em auto;max-width:1260px;padding:0 1em;color:#222}}\
table{{border-collapse:collapse;margin:1em 0;font-size:14px}}th,td{{border:1px solid #ddd;padding:4px 8px;vertical-align:top}}\
th{{background:#f4f4f4;text-align:left}}code{{font-size:13px}}\
.v-valid{{color:{valid};background:#e9f6ec}}.v-invalid{{color:{invalid};background:#fdeaea;font-weight:600}}\
.v-unknown{{color:{unknown};background:#fff5d6}}td.v-valid,td.v-invalid,td.v-unknown{{white-space:nowrap}}\
.miss{{outline:3px solid #6f42c1;outline-offset:-3px}}.note{{display:block;font-size:12px;color:#555;font-weight:400}}\
.o-unexpected{{color:#fff;background:#6f42c1;font-weight:700}}.o-unsafe{{color:{invalid}}}.o-safe{{color:{valid}}}.o-none{{color:#666}}\
.badge{{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:700}}\
.pass{{background:{valid}}}.fail{{background:{invalid}}}\
.legend span{{padding:1px 6px;margin-right:8px;border-radius:3px}}\
pre{{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:12px}}details{{margin:.4em 0}}\
figure{{margin:1.5em 0;border:1px solid #eee;padding:8px}}figure svg{{max-width:100%;height:auto}}\
.pair{{display:flex;gap:12px;flex-wrap:wrap}}.pair figure{{flex:1 1 600px}}\
tr.why td{{border-top:none;font-size:13px;color:#333}}nav a{{margin-right:10px}}"
    )
}

/// The page. `svgs` maps each chart stem (see [`chart_stems`]) to its SVG.
pub fn index(report: &Report, svgs: &BTreeMap<String, String>) -> String {
    index_with(report, svgs, &BTreeSet::new())
}

/// The page, linking the interactive timeline and raw history of each scenario in `runs` (by
/// name; see [`super::interactive`]).
pub(crate) fn index_with(report: &Report, svgs: &BTreeMap<String, String>, runs: &BTreeSet<String>) -> String {
    let mut out = String::new();
    let headline = Headline::of(report);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockstep safety report</title>\
         <style>{}</style></head><body>\n<h1>lockstep safety report</h1>\n",
        style()
    );
    if let Some(lead) = &headline.lead {
        let _ = writeln!(out, "<p class=\"lead\"><b>{}</b></p>", escape(lead));
    }
    let (class, detail) = if headline.ok {
        (
            "pass",
            headline.detail().map_or_else(String::new, |d| format!(" — {d}")),
        )
    } else {
        ("fail", String::new())
    };
    let _ = writeln!(
        out,
        "<p><span class=\"badge {class}\">{}</span> <b>{}</b>{}</p>\n<p><b>{}</b></p>",
        headline.word(),
        escape(&headline.title()),
        escape(&detail),
        escape(&headline.outcomes())
    );
    let mut scope = headline.scope();
    for q in headline.qualifiers() {
        scope.push_str(&format!(" · {q}"));
    }
    let _ = writeln!(
        out,
        "<p>{} · files: <a href=\"summary.md\">summary.md</a> · <a href=\"report.json\">report.json</a> · \
         <a href=\"junit.xml\">junit.xml</a></p>",
        escape(&scope)
    );
    let _ = writeln!(
        out,
        "<p class=\"legend\">Verdicts: <span class=\"v-valid\">valid</span><span class=\"v-invalid\">invalid</span>\
         <span class=\"v-unknown\">unknown</span> · a <span class=\"miss\">framed</span> cell did not meet its expectation</p>"
    );

    // Every section has an anchor (`id` on its heading); the page opens with links to them.
    let mut sections = Vec::new();
    if !report.scenarios.is_empty() {
        sections.push(("scenarios", "Scenarios"));
    }
    if !report.explorations.is_empty() {
        sections.push(("explorations", "Explorations"));
    }
    let evidence_shown = report.scenarios.iter().flat_map(|s| &s.checks).any(|c| {
        c.status.is_failure() || (c.verdict == Verdict::Invalid && c.status == Status::Pass && !c.witness.is_empty())
    });
    if evidence_shown {
        sections.push(("evidence", "Evidence"));
    }
    if !pairs(report).is_empty() {
        sections.push(("compared-runs", "Compared runs"));
    }
    sections.push(("charts", "Charts"));
    let links: Vec<String> = sections
        .iter()
        .map(|(id, title)| format!("<a href=\"#{id}\">{title}</a>"))
        .collect();
    let _ = writeln!(out, "<nav>Sections: {}</nav>", links.join(""));
    if !report.scenarios.is_empty() {
        scenario_table(&mut out, report, runs);
    }
    if !report.explorations.is_empty() {
        exploration_table(&mut out, report);
    }
    evidence(&mut out, report);

    let mut shown = Vec::new();
    let pairs = pairs(report);
    if !pairs.is_empty() {
        out.push_str("<h2 id=\"compared-runs\">Compared runs</h2>\n");
    }
    for (a, b) in pairs {
        let stems = [format!("timeline-{}", slug(&a)), format!("timeline-{}", slug(&b))];
        if !stems.iter().all(|s| svgs.contains_key(s)) {
            continue;
        }
        let _ = writeln!(
            out,
            "<h3 id=\"pair-{}\">{} and {}</h3>\n<div class=\"pair\">",
            escape(&slug(&a)),
            escape(&a),
            escape(&b)
        );
        for stem in stems {
            let _ = writeln!(
                out,
                "<figure id=\"{stem}\">{}<figcaption>{stem}</figcaption></figure>",
                inline_svg(&svgs[&stem])
            );
            shown.push(stem);
        }
        out.push_str("</div>\n");
    }
    out.push_str("<h2 id=\"charts\">Charts</h2>\n");
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

/// The pairs of scenario runs shown side by side: each scenario that declares `compare_with`
/// another scenario of the report, once per pair, in report order.
pub fn pairs(report: &Report) -> Vec<(String, String)> {
    let names: BTreeSet<&str> = report.scenarios.iter().map(|s| s.name.as_str()).collect();
    let mut out: Vec<(String, String)> = Vec::new();
    for s in &report.scenarios {
        let Some(other) = &s.compare_with else { continue };
        let seen = out
            .iter()
            .any(|(a, b)| (a == other && *b == s.name) || (*a == s.name && b == other));
        if names.contains(other.as_str()) && *other != s.name && !seen {
            out.push((s.name.clone(), other.clone()));
        }
    }
    out
}

/// The cell of an outcome: its words in its colour.
fn outcome_cell(outcome: RowOutcome) -> String {
    format!("<td class=\"{}\">{}</td>", outcome.css(), outcome.words())
}

fn scenario_table(out: &mut String, report: &Report, runs: &BTreeSet<String>) {
    let _ = write!(
        out,
        "<h2 id=\"scenarios\">Scenarios</h2>\n<p>Each row's explanation and replay command are under it; \
         runs of one file that came out alike are one row (×N).</p>\n<table><tr><th>outcome</th><th>scenario</th>"
    );
    for name in NAMES {
        let _ = write!(out, "<th>{name}</th>");
    }
    let _ = writeln!(out, "<th>expectations</th></tr>");
    for group in super::headline::scenario_groups(report) {
        let s = group[0];
        let run_links = |s: &ScenarioReport| {
            let dir = format!("runs/{}", slug(&s.name));
            format!(
                "<a href=\"{dir}/timeline.html\">interactive timeline</a> · <a href=\"{dir}/history.jsonl\">history.jsonl</a>"
            )
        };
        let mut name = format!(
            "<a href=\"#timeline-{}\">{}</a>",
            escape(&slug(&s.name)),
            escape(&s.name)
        );
        if group.len() > 1 {
            let _ = write!(name, " <b>×{}</b>", group.len());
        }
        if runs.contains(&s.name) {
            let _ = write!(name, "<span class=\"note\">{}</span>", run_links(s));
        }
        for other in &group[1..] {
            let links = if runs.contains(&other.name) {
                format!(": {}", run_links(other))
            } else {
                String::new()
            };
            let _ = write!(name, "<span class=\"note\">{}{links}</span>", escape(&other.name));
        }
        let _ = write!(
            out,
            "<tr id=\"row-{}\">{}<td>{name}</td>",
            escape(&slug(&s.name)),
            outcome_cell(RowOutcome::of_scenario(s))
        );
        for checker in NAMES {
            match s.checks.iter().find(|c| c.checker == *checker) {
                Some(c) => {
                    let miss = if c.status.is_failure() { " miss" } else { "" };
                    let note = match (c.status, c.expected) {
                        (Status::Fail, Some(e)) => format!("<span class=\"note\">expected {}</span>", e.name()),
                        (Status::Unchecked, _) => "<span class=\"note\">no expectation</span>".to_string(),
                        _ => String::new(),
                    };
                    let _ = write!(
                        out,
                        "<td class=\"{}{miss}\" title=\"{}\">{}{note}</td>",
                        verdict_css(c.verdict),
                        escape(&format!("{}: {}", match_words(c.status), c.explanation)),
                        c.verdict.name()
                    );
                }
                None => out.push_str("<td>—</td>"),
            }
        }
        let _ = writeln!(
            out,
            "<td>{}</td></tr>\n<tr class=\"why\"><td></td><td colspan=\"{}\">{}{}</td></tr>",
            expectations_cell(s.status, s.checks.iter().map(|c| (c.checker.as_str(), c.status))),
            NAMES.len() + 2,
            escape(&row_explanation(s)),
            // A real-time run has nothing to replay: no command offered.
            if s.replay.is_empty() {
                String::new()
            } else {
                format!("<span class=\"note\">replay: <code>{}</code></span>", escape(&s.replay))
            }
        );
    }
    out.push_str("</table>\n");
}

/// The expectations column: `all N as expected`, the checks that missed, or `none stated`.
fn expectations_cell<'a>(row: Status, checks: impl Iterator<Item = (&'a str, Status)>) -> String {
    let checks: Vec<(&str, Status)> = checks.collect();
    if row == Status::Error {
        return "<b>ERROR</b>: could not run".to_string();
    }
    let missed: Vec<&str> = checks.iter().filter(|(_, s)| s.is_failure()).map(|(c, _)| *c).collect();
    let held = checks.iter().filter(|(_, s)| *s == Status::Pass).count();
    let none = checks.iter().filter(|(_, s)| *s == Status::Unchecked).count();
    let mut text = if !missed.is_empty() {
        format!("<b>UNEXPECTED</b>: {}", escape(&missed.join(", ")))
    } else if held > 0 {
        format!("all {held} as expected")
    } else {
        "none stated".to_string()
    };
    if none > 0 && held + missed.len() > 0 {
        let _ = write!(text, "<span class=\"note\">{none} without expectation</span>");
    }
    text
}

fn exploration_table(out: &mut String, report: &Report) {
    let _ = write!(
        out,
        "<h2 id=\"explorations\">Explorations</h2>\n<p>Each cell: the seeds on which the checker answered invalid.</p>\n\
         <table><tr><th>outcome</th><th>exploration</th><th>seeds</th>"
    );
    for name in NAMES {
        let _ = write!(out, "<th>{name}</th>");
    }
    out.push_str("<th>expectations</th></tr>\n");
    let mut rows: Vec<_> = report.explorations.iter().collect();
    rows.sort_by_key(|e| (RowOutcome::of_exploration(e), e.status));
    for e in rows {
        let _ = write!(
            out,
            "<tr>{}<td><a href=\"#explore-{}\">{}</a></td><td>{} of {}..{}</td>",
            outcome_cell(RowOutcome::of_exploration(e)),
            escape(&slug(&e.name)),
            escape(&e.name),
            e.summary.seeds_run,
            e.seeds.start,
            e.seeds.end
        );
        for checker in NAMES {
            match e.checks.iter().find(|c| c.checker == *checker) {
                Some(c) => {
                    let verdict = super::headline::exploration_verdict(c);
                    let miss = if c.status.is_failure() { " miss" } else { "" };
                    let note = match c.expected {
                        Some(x) => format!("<span class=\"note\">expected {}</span>", x.name()),
                        None => "<span class=\"note\">no expectation</span>".to_string(),
                    };
                    let _ = write!(
                        out,
                        "<td class=\"{}{miss}\" title=\"{}\">{} invalid{note}</td>",
                        verdict_css(verdict),
                        escape(&format!("{}: {}", match_words(c.status), c.explanation)),
                        c.invalid_seeds
                    );
                }
                None => out.push_str("<td>—</td>"),
            }
        }
        let replay = super::headline::exploration_replay(e).map_or_else(String::new, |r| {
            format!(
                "<span class=\"note\">replay of the first failing seed: <code>{}</code></span>",
                escape(&r)
            )
        });
        let mut why = super::headline::exploration_row_check(e)
            .map_or_else(String::new, |c| escape(&format!("{}: {}", c.checker, c.explanation)));
        if let Some(classified) = super::headline::exploration_classification(e) {
            let _ = write!(why, "<span class=\"note\">{}</span>", escape(&classified));
        }
        let mut expectations = expectations_cell(e.status, e.checks.iter().map(|c| (c.checker.as_str(), c.status)));
        if e.summary.errors > 0 {
            let _ = write!(
                expectations,
                "<span class=\"note\">{} seeds could not be judged</span>",
                e.summary.errors
            );
        }
        let _ = writeln!(
            out,
            "<td>{expectations}</td></tr>\n<tr class=\"why\"><td></td><td colspan=\"{}\">{why}{replay}</td></tr>",
            NAMES.len() + 3
        );
    }
    out.push_str("</table>\n");
}

/// The evidence: for every check that missed its expectation, then every violation found as
/// expected (not those nothing was expected of), its explanation, the witness events and the command that replays the run.
fn evidence(out: &mut String, report: &Report) {
    let mut items = Vec::new();
    for s in &report.scenarios {
        for c in &s.checks {
            let expected_violation = c.verdict == Verdict::Invalid && c.status == Status::Pass;
            if c.status.is_failure() || (expected_violation && !c.witness.is_empty()) {
                items.push((c.status.is_failure(), s, c));
            }
        }
    }
    if items.is_empty() {
        return;
    }
    // Failures first; within a scenario, the checker its headline names first (issue 52: a
    // counterexample's evidence began with mutual exclusion, not the checker of its verdict).
    let lead: Vec<Option<String>> = report
        .scenarios
        .iter()
        .map(|s| super::verdict::Lead::of_scenario(s).map(|l| l.checker))
        .collect();
    let rank = |s: &ScenarioReport, c: &str| {
        let at = report.scenarios.iter().position(|x| std::ptr::eq(x, s)).unwrap_or(0);
        (at, lead[at].as_deref() != Some(c))
    };
    items.sort_by_key(|(failed, s, c)| (!failed, rank(s, &c.checker)));
    out.push_str(
        "<h2 id=\"evidence\">Evidence</h2>\n<p>The events that prove each violation, and the command that replays the run.</p>\n",
    );
    for (failed, s, c) in items {
        let open = if failed { " open" } else { "" };
        let _ = writeln!(
            out,
            "<details{open}><summary><code>{}</code> · {} is <span class=\"{}\">{}</span> — {}</summary>",
            escape(&s.name),
            escape(&c.checker),
            verdict_css(c.verdict),
            c.verdict.name(),
            match_words(c.status)
        );
        let _ = writeln!(out, "<p>{}</p>", escape(&c.explanation));
        if !c.witness.is_empty() {
            let lines = super::junit::witness_lines(&c.witness).join("\n");
            let _ = writeln!(out, "<pre>{}</pre>", escape(&lines));
        }
        match s.replay.is_empty() {
            true => out.push_str("</details>\n"),
            false => {
                let _ = writeln!(out, "<p>Replay: <code>{}</code></p></details>", escape(&s.replay));
            }
        }
    }
}
