//! The headline of a report: whether the gate held, the counts, the scope (tool, schema,
//! shard, merge) and the failures worth a line each. Computed once from a [`Report`]; the CLI,
//! the Markdown summary and the HTML page all print this one model, so they cannot disagree.

use super::{Report, ScenarioReport, ShardInfo, Status, Totals};
use crate::checker::Verdict;

/// One failure worth a headline line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What failed: a scenario's name, or `exploration NAME`.
    pub subject: String,
    /// Why, in one line.
    pub explanation: String,
    /// The command that replays it, when there is one.
    pub replay: Option<String>,
}

/// The headline of a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headline {
    /// Whether every expectation held.
    pub ok: bool,
    /// The counts.
    pub totals: Totals,
    /// `lockstep VERSION`.
    pub tool: String,
    /// The report schema version.
    pub schema_version: u32,
    /// The shard the report covers.
    pub shard: Option<ShardInfo>,
    /// How many reports were merged into it (0: not a merge).
    pub merged_from: u64,
    /// Failed scenario rows, then failed exploration checks and explorations with unjudged seeds.
    pub failures: Vec<Failure>,
}

/// The explanation a scenario row shows: the first failing check's, else the first invalid
/// verdict's, else the first check's.
pub fn row_explanation(s: &ScenarioReport) -> String {
    if let Some(e) = &s.error {
        return e.clone();
    }
    let check = s
        .checks
        .iter()
        .find(|c| c.status.is_failure())
        .or_else(|| s.checks.iter().find(|c| c.verdict == Verdict::Invalid))
        .or_else(|| s.checks.first());
    check.map_or_else(String::new, |c| {
        let mut text = format!("{}: {}", c.checker, c.explanation);
        if c.status == Status::Fail {
            if let Some(expected) = c.expected {
                text = format!(
                    "{} is {} but expected {} — {}",
                    c.checker,
                    c.verdict.name(),
                    expected.name(),
                    c.explanation
                );
            }
        }
        text
    })
}

impl Headline {
    /// The headline of `report`.
    pub fn of(report: &Report) -> Headline {
        let mut failures: Vec<Failure> = report
            .scenarios
            .iter()
            .filter(|s| s.status.is_failure())
            .map(|s| Failure {
                subject: s.name.clone(),
                explanation: row_explanation(s),
                replay: Some(s.replay.clone()),
            })
            .collect();
        for e in report.explorations.iter().filter(|e| e.status.is_failure()) {
            let subject = format!("exploration {}", e.name);
            for c in e.checks.iter().filter(|c| c.status.is_failure()) {
                failures.push(Failure {
                    subject: subject.clone(),
                    explanation: format!("{}: {}", c.checker, c.explanation),
                    replay: None,
                });
            }
            if e.summary.errors > 0 {
                failures.push(Failure {
                    subject,
                    explanation: format!("{} seeds could not be judged", e.summary.errors),
                    replay: None,
                });
            }
        }
        Headline {
            ok: report.ok,
            totals: report.totals,
            tool: format!("{} {}", report.tool.name, report.tool.version),
            schema_version: report.schema_version,
            shard: report.shard,
            merged_from: report.merged_from,
            failures,
        }
    }

    /// ✅ or ❌.
    pub fn mark(&self) -> &'static str {
        if self.ok {
            "✅"
        } else {
            "❌"
        }
    }

    /// The verdict in a few words: `Every expectation held`, or `F of N checks did not meet
    /// their expectation.`
    pub fn title(&self) -> String {
        if self.ok {
            "Every expectation held".to_string()
        } else {
            format!(
                "{} of {} checks did not meet their expectation.",
                self.totals.failed, self.totals.checks
            )
        }
    }

    /// What follows the title when the gate held: the passed and unchecked counts.
    pub fn detail(&self) -> Option<String> {
        self.ok.then(|| {
            format!(
                "{} checks passed, {} without expectation.",
                self.totals.passed, self.totals.unchecked
            )
        })
    }

    /// `lockstep V · report schema S · N scenario runs · M explorations`.
    pub fn scope(&self) -> String {
        format!(
            "{} · report schema {} · {} scenario runs · {} explorations",
            self.tool, self.schema_version, self.totals.scenarios, self.totals.explorations
        )
    }

    /// The scope's qualifiers: `shard K/N`, `merged from N reports`.
    pub fn qualifiers(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(shard) = self.shard {
            out.push(format!("shard {}/{}", shard.index, shard.count));
        }
        if self.merged_from > 0 {
            out.push(format!("merged from {} reports", self.merged_from));
        }
        out
    }

    /// One line of counts: `N scenario runs, M explorations: P checks passed, F failed, U
    /// without expectation`.
    pub fn counts(&self) -> String {
        let t = &self.totals;
        format!(
            "{} scenario runs, {} explorations: {} checks passed, {} failed, {} without expectation",
            t.scenarios, t.explorations, t.passed, t.failed, t.unchecked
        )
    }
}
