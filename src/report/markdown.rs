//! `summary.md`: the report as Markdown, fit for a CI job summary (`$GITHUB_STEP_SUMMARY`) or a
//! pull-request comment.
//!
//! A headline counting the rows unsafe as expected, safe as expected and unexpected; a table of
//! scenarios × checkers, each cell the verdict in its word and colour (🟢 valid, 🔴 invalid,
//! 🟡 unknown — the word is always there, so no emoji font is needed), whether the expectations
//! held in a column of their own, unexpected rows first; each row with its one-line
//! explanation and the command that replays it. The same for explorations, then the TTL
//! trade-off table, then the witnesses of what failed.

/// [`crate::report::headline::row_explanation`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::report::headline::row_explanation`; removed in 0.3.0"
)]
pub fn row_explanation(s: &ScenarioReport) -> String {
    crate::report::headline::row_explanation(s)
}
use super::headline::RowOutcome;
use super::{Headline, Report, ScenarioReport, Status};
use crate::checker::NAMES;
use crate::model::Verdict;
use std::fmt::Write;

/// Escapes text for a Markdown table cell.
pub fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('\n', " ")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `text` as an inline code span fit for a table cell: a backtick fence longer than any run of
/// backticks inside (padded with a space when the text starts or ends with one), `|` escaped as
/// GFM tables need even inside code, line breaks as spaces — and nothing HTML-escaped, since a
/// code span shows its text literally.
pub fn code(text: &str) -> String {
    code_span(&text.replace(['\n', '\r'], " ").replace('|', "\\|"))
}

/// `text` between backtick fences longer than any run of backticks inside it.
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `text` as an inline code span outside a table (a list item): as [`code`], but `|` left as it
/// is (only a table cell needs it escaped; elsewhere the backslash would show).
fn inline_code(text: &str) -> String {
    code_span(&text.replace(['\n', '\r'], " "))
}

/// A fenced code block holding `lines`: its fence longer than any run of backticks inside.
fn code_block(info: &str, lines: &[String]) -> String {
    let longest = lines
        .iter()
        .flat_map(|l| l.split(|c| c != '`').map(str::len))
        .max()
        .unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    let mut out = format!("{fence}{info}\n");
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

/// A verdict with its colour: `🟢 valid`, `🔴 invalid`, `🟡 unknown`.
fn verdict_badge(verdict: Verdict) -> String {
    let dot = match verdict {
        Verdict::Valid => "🟢",
        Verdict::Invalid => "🔴",
        Verdict::Unknown => "🟡",
    };
    format!("{dot} {}", verdict.name())
}

/// A row's outcome: `**UNEXPECTED**`, `unsafe as expected`, `safe as expected`, `no expectation`.
fn outcome_words(outcome: RowOutcome) -> String {
    match outcome {
        RowOutcome::Unexpected => "❌ **UNEXPECTED**".to_string(),
        other => other.words().to_string(),
    }
}

/// The expectations column: `all N held`, `**missed**: checkers`, or `none stated`.
fn expectations<'a>(row: Status, checks: impl Iterator<Item = (&'a str, Status)>) -> String {
    let checks: Vec<(&str, Status)> = checks.collect();
    if row == Status::Error {
        return "**ERROR**: could not run".to_string();
    }
    let missed: Vec<&str> = checks.iter().filter(|(_, s)| s.is_failure()).map(|(c, _)| *c).collect();
    let held = checks.iter().filter(|(_, s)| *s == Status::Pass).count();
    let none = checks.iter().filter(|(_, s)| *s == Status::Unchecked).count();
    let mut text = if !missed.is_empty() {
        format!("**missed**: {}", missed.join(", "))
    } else if held > 0 {
        format!("all {held} held")
    } else {
        "none stated".to_string()
    };
    if none > 0 && held + missed.len() > 0 {
        text.push_str(&format!(" ({none} without)"));
    }
    text
}

/// The Markdown summary of `report`.
pub fn summary(report: &Report) -> String {
    let mut out = String::new();
    let headline = Headline::of(report);
    let _ = writeln!(out, "# lockstep safety report\n");
    if let Some(lead) = &headline.lead {
        let _ = writeln!(out, "**{}**\n", cell(lead));
    }
    let _ = match headline.detail() {
        Some(detail) => writeln!(
            out,
            "**{} {}: {}** — {detail}\n",
            headline.mark(),
            headline.word(),
            headline.title()
        ),
        None => writeln!(
            out,
            "**{} {}: {}**\n",
            headline.mark(),
            headline.word(),
            headline.title()
        ),
    };
    let _ = writeln!(out, "**{}**\n", headline.outcomes());
    let mut scope = headline.scope();
    for qualifier in headline.qualifiers() {
        let _ = write!(scope, " · {qualifier}");
    }
    let _ = writeln!(out, "{scope}\n");
    let _ = writeln!(
        out,
        "Cells: the checker's verdict (🟢 valid · 🔴 invalid · 🟡 unknown); ❗ marks a verdict that differs from the \
         expectation. The *expectations* column says whether the row's expectations held.\n"
    );

    if !report.scenarios.is_empty() {
        let _ = writeln!(out, "## Scenarios\n");
        let _ = write!(out, "| outcome | scenario |");
        for name in NAMES {
            let _ = write!(out, " {name} |");
        }
        let _ = writeln!(out, " expectations |");
        let _ = write!(out, "|---|---|");
        for _ in NAMES {
            let _ = write!(out, "---|");
        }
        let _ = writeln!(out, "---|");
        let groups = super::headline::scenario_groups(report);
        for group in &groups {
            let s = group[0];
            let times = if group.len() > 1 {
                format!(" ×{}", group.len())
            } else {
                String::new()
            };
            let _ = write!(
                out,
                "| {} | {}{times} |",
                outcome_words(RowOutcome::of_scenario(s)),
                code(&s.name)
            );
            for name in NAMES {
                match s.checks.iter().find(|c| c.checker == *name) {
                    Some(c) => {
                        let expected = match (c.status, c.expected) {
                            (Status::Fail, Some(e)) => format!(" ❗ expected {}", e.name()),
                            _ => String::new(),
                        };
                        let _ = write!(out, " {}{} |", verdict_badge(c.verdict), expected);
                    }
                    None => {
                        let _ = write!(out, " — |");
                    }
                }
            }
            let _ = writeln!(
                out,
                " {} |",
                expectations(s.status, s.checks.iter().map(|c| (c.checker.as_str(), c.status)))
            );
        }
        // Each row's explanation under the table, in the rows' order: a sentence, not a column.
        let _ = writeln!(out);
        for group in &groups {
            let s = group[0];
            let also = if group.len() > 1 {
                let names: Vec<String> = group[1..].iter().map(|o| inline_code(&o.name)).collect();
                format!(" (×{}; also {})", group.len(), names.join(", "))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "- {}{also}: {}{}",
                inline_code(&s.name),
                cell(&crate::report::headline::row_explanation(s)),
                // A real-time run has nothing to replay: no command offered.
                if s.replay.is_empty() {
                    String::new()
                } else {
                    format!(" — replay: {}", inline_code(&s.replay))
                }
            );
        }
        let _ = writeln!(out);
    }

    if !report.explorations.is_empty() {
        let _ = writeln!(out, "## Explorations\n");
        let _ = writeln!(
            out,
            "Cells: the seeds on which the checker answered invalid, coloured as a verdict.\n"
        );
        let _ = write!(out, "| outcome | exploration | seeds |");
        for name in NAMES {
            let _ = write!(out, " {name} |");
        }
        let _ = writeln!(out, " expectations |");
        let _ = write!(out, "|---|---|---|");
        for _ in NAMES {
            let _ = write!(out, "---|");
        }
        let _ = writeln!(out, "---|");
        let mut rows: Vec<_> = report.explorations.iter().collect();
        rows.sort_by_key(|e| (RowOutcome::of_exploration(e), e.status));
        for e in &rows {
            let _ = write!(
                out,
                "| {} | {} | {} of {}..{} |",
                outcome_words(RowOutcome::of_exploration(e)),
                code(&e.name),
                e.summary.seeds_run,
                e.seeds.start,
                e.seeds.end
            );
            for name in NAMES {
                match e.checks.iter().find(|c| c.checker == *name) {
                    Some(c) => {
                        let verdict = super::headline::exploration_verdict(c);
                        let dot = verdict_badge(verdict).chars().next().unwrap_or(' ');
                        let expected = match c.expected {
                            Some(x) if c.status.is_failure() => format!(" ❗ expected {}", x.name()),
                            Some(x) => format!(" ({})", x.name()),
                            None => String::new(),
                        };
                        let _ = write!(out, " {dot} {} invalid{} |", c.invalid_seeds, expected);
                    }
                    None => {
                        let _ = write!(out, " — |");
                    }
                }
            }
            let _ = writeln!(
                out,
                " {} |",
                expectations(e.status, e.checks.iter().map(|c| (c.checker.as_str(), c.status)))
            );
        }
        // Each row's explanation under the table, in the rows' order.
        let _ = writeln!(out);
        for e in &rows {
            let check = super::headline::exploration_row_check(e);
            let mut explanation = check.map_or_else(String::new, |c| format!("{}: {}", c.checker, c.explanation));
            if e.summary.errors > 0 {
                explanation = format!("{} seeds could not be judged; {explanation}", e.summary.errors);
            }
            let replay = super::headline::exploration_replay(e).map_or_else(String::new, |r| {
                format!(" — replay of the first failing seed: {}", inline_code(&r))
            });
            if let Some(classified) = super::headline::exploration_classification(e) {
                explanation = format!("{explanation} — {classified}");
            }
            let _ = writeln!(out, "- {}: {}{replay}", inline_code(&e.name), cell(&explanation));
            // Every class of implementation-bug seeds, not only the first bug's.
            for class in e.summary.bug_groups.in_order(&[]) {
                let _ = writeln!(
                    out,
                    "  - implementation-bug class {} — {} seed{}, first seed {}",
                    cell(&class.class.describe()),
                    class.seeds,
                    if class.seeds == 1 { "" } else { "s" },
                    class.first.seed
                );
            }
        }
        let _ = writeln!(out);
    }

    if let Some(sweep) = &report.ttl_sweep {
        let _ = writeln!(out, "## The TTL trade-off\n");
        let _ = writeln!(
            out,
            "{} (standard exploration template), {} seeds per TTL, faults: {} (at most {} per seed).\n",
            sweep.algorithm,
            sweep.seeds,
            sweep.profile.kinds.join(", "),
            sweep.profile.faults_max
        );
        let _ = writeln!(
            out,
            "| TTL (ms) | seeds violating | violation rate | mean unavailability per run (ms) | acquire p50 / p99 (ms) |"
        );
        let _ = writeln!(out, "|---:|---:|---:|---:|---:|");
        for p in &sweep.points {
            let _ = writeln!(
                out,
                "| {} | {} / {} | {:.0}% | {:.0} | {} / {} |",
                p.ttl_ms,
                p.seeds_violating,
                p.seeds_run,
                p.violation_rate * 100.0,
                p.mean_unavailable_ms,
                p.acquire_latency_p50_ms.map_or("-".into(), |v| v.to_string()),
                p.acquire_latency_p99_ms.map_or("-".into(), |v| v.to_string()),
            );
        }
        let _ = writeln!(out);
    }

    let failed: Vec<&ScenarioReport> = report.scenarios.iter().filter(|s| s.status.is_failure()).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "## Witnesses of unexpected results\n");
        for s in failed {
            for c in s.checks.iter().filter(|c| c.status.is_failure()) {
                let _ = writeln!(
                    out,
                    "<details><summary><code>{}</code> · {} is {}</summary>\n",
                    super::html::escape(&s.name),
                    c.checker,
                    c.verdict.name()
                );
                let _ = writeln!(out, "{}\n", cell(&c.explanation));
                out.push_str(&code_block("text", &super::junit::witness_lines(&c.witness)));
                match s.replay.is_empty() {
                    true => out.push_str("\n</details>\n\n"),
                    false => {
                        let _ = writeln!(out, "\nReplay: {}\n\n</details>\n", code(&s.replay));
                    }
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "Charts and the full report: `index.html`, `report.json` (schema: docs/report-schema.md), `junit.xml`."
    );
    out
}
