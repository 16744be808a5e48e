//! `summary.md`: the report as Markdown, fit for a CI job summary (`$GITHUB_STEP_SUMMARY`) or a
//! pull-request comment.
//!
//! A table of scenarios × checkers, each cell ✅ (the expectation held), ❌ (it did not, or the
//! run failed) or ⚠️ (no expectation, or decided when shards are merged), unexpected rows first;
//! each row with its one-line explanation and the command that replays it. The same for
//! explorations, then the TTL trade-off table, then the witnesses of what failed.

pub use super::headline::row_explanation;
use super::{Headline, Report, ScenarioReport, Status};
use crate::checker::NAMES;
use std::fmt::Write;

/// Escapes text for a Markdown table cell.
pub fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('\n', " ")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The Markdown summary of `report`.
pub fn summary(report: &Report) -> String {
    let mut out = String::new();
    let headline = Headline::of(report);
    let _ = writeln!(out, "# lockstep safety report\n");
    let _ = match headline.detail() {
        Some(detail) => writeln!(out, "**{} {}** — {detail}\n", headline.mark(), headline.title()),
        None => writeln!(out, "**{} {}**\n", headline.mark(), headline.title()),
    };
    let mut scope = headline.scope();
    for qualifier in headline.qualifiers() {
        let _ = write!(scope, " · {qualifier}");
    }
    let _ = writeln!(out, "{scope}\n");
    let _ = writeln!(
        out,
        "✅ the expectation held · ❌ it did not (or the run failed) · ⚠️ no expectation stated\n"
    );

    if !report.scenarios.is_empty() {
        let _ = writeln!(out, "## Scenarios\n");
        let _ = write!(out, "| | scenario |");
        for name in NAMES {
            let _ = write!(out, " {name} |");
        }
        let _ = writeln!(out, " explanation | replay |");
        let _ = write!(out, "|---|---|");
        for _ in NAMES {
            let _ = write!(out, "---|");
        }
        let _ = writeln!(out, "---|---|");
        let mut rows: Vec<&ScenarioReport> = report.scenarios.iter().collect();
        rows.sort_by_key(|s| s.status);
        for s in rows {
            let _ = write!(out, "| {} | `{}` |", s.status.mark(), s.name);
            for name in NAMES {
                match s.checks.iter().find(|c| c.checker == *name) {
                    Some(c) => {
                        let expected = match (c.status, c.expected) {
                            (Status::Fail, Some(e)) => format!(" (expected {})", e.name()),
                            _ => String::new(),
                        };
                        let _ = write!(out, " {} {}{} |", c.status.mark(), c.verdict.name(), expected);
                    }
                    None => {
                        let _ = write!(out, " — |");
                    }
                }
            }
            let _ = writeln!(out, " {} | `{}` |", cell(&row_explanation(s)), cell(&s.replay));
        }
        let _ = writeln!(out);
    }

    if !report.explorations.is_empty() {
        let _ = writeln!(out, "## Explorations\n");
        let _ = write!(out, "| | exploration | seeds |");
        for name in NAMES {
            let _ = write!(out, " {name} |");
        }
        let _ = writeln!(out, " explanation | replay |");
        let _ = write!(out, "|---|---|---|");
        for _ in NAMES {
            let _ = write!(out, "---|");
        }
        let _ = writeln!(out, "---|---|");
        let mut rows: Vec<_> = report.explorations.iter().collect();
        rows.sort_by_key(|e| e.status);
        for e in rows {
            let _ = write!(
                out,
                "| {} | `{}` | {} of {}..{} |",
                e.status.mark(),
                e.name,
                e.summary.seeds_run,
                e.seeds.start,
                e.seeds.end
            );
            for name in NAMES {
                match e.checks.iter().find(|c| c.checker == *name) {
                    Some(c) => {
                        let expected = c.expected.map_or(String::new(), |x| format!(" ({})", x.name()));
                        let _ = write!(out, " {} {} invalid{} |", c.status.mark(), c.invalid_seeds, expected);
                    }
                    None => {
                        let _ = write!(out, " — |");
                    }
                }
            }
            let check = e
                .checks
                .iter()
                .find(|c| c.status.is_failure())
                .or_else(|| e.checks.iter().find(|c| c.invalid_seeds > 0))
                .or_else(|| e.checks.first());
            let mut explanation = check.map_or_else(String::new, |c| format!("{}: {}", c.checker, c.explanation));
            if e.summary.errors > 0 {
                explanation = format!("{} seeds could not be judged; {explanation}", e.summary.errors);
            }
            let replay = check.and_then(|c| c.replay.clone()).unwrap_or_default();
            let replay = if replay.is_empty() {
                String::new()
            } else {
                format!("`{}`", cell(&replay))
            };
            let _ = writeln!(out, " {} | {} |", cell(&explanation), replay);
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
                    s.name,
                    c.checker,
                    c.verdict.name()
                );
                let _ = writeln!(out, "{}\n", cell(&c.explanation));
                let _ = writeln!(out, "```text");
                for line in super::junit::witness_lines(&c.witness) {
                    let _ = writeln!(out, "{line}");
                }
                let _ = writeln!(out, "```\n\nReplay: `{}`\n\n</details>\n", s.replay);
            }
        }
    }
    let _ = writeln!(
        out,
        "Charts and the full report: `index.html`, `report.json` (schema: docs/report-schema.md), `junit.xml`."
    );
    out
}
