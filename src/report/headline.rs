//! The headline of a report: whether the gate held, the counts, the scope (tool, schema,
//! shard, merge) and the failures worth a line each. Computed once from a [`Report`]; the CLI,
//! the Markdown summary and the HTML page all print this one model, so they cannot disagree.

use super::{ExplorationReport, Report, ScenarioReport, ShardInfo, Status, Totals};
use crate::model::Verdict;
use crate::scenario::LIVENESS;

/// How one row of a report (a scenario run or an exploration) came out, in the words of the
/// headline: what the lock did (unsafe / safe) and whether that was expected, kept apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RowOutcome {
    /// Some expectation did not hold, or the row could not run.
    Unexpected,
    /// A safety checker found a violation, as the row expects.
    UnsafeAsExpected,
    /// No safety checker found a violation, as the row expects.
    SafeAsExpected,
    /// Nothing was expected of the row (or it is decided when shards are merged).
    NoExpectation,
}

impl RowOutcome {
    /// The outcome of a scenario row.
    pub(crate) fn of_scenario(s: &ScenarioReport) -> RowOutcome {
        // Only expected verdicts count: a violation nobody stated an expectation for does not
        // make a row "unsafe as expected".
        let unsafe_ = s
            .checks
            .iter()
            .any(|c| c.checker != LIVENESS && c.verdict == Verdict::Invalid && c.status == Status::Pass);
        Self::judge(s.status, s.checks.iter().map(|c| c.status), unsafe_)
    }

    /// The outcome of an exploration row.
    pub(crate) fn of_exploration(e: &ExplorationReport) -> RowOutcome {
        let unsafe_ = e.checks.iter().any(|c| c.invalid_seeds > 0 && c.status == Status::Pass);
        Self::judge(e.status, e.checks.iter().map(|c| c.status), unsafe_)
    }

    fn judge(row: Status, mut checks: impl Iterator<Item = Status>, unsafe_: bool) -> RowOutcome {
        if row.is_failure() {
            RowOutcome::Unexpected
        } else if !checks.any(|c| c == Status::Pass) {
            RowOutcome::NoExpectation
        } else if unsafe_ {
            RowOutcome::UnsafeAsExpected
        } else {
            RowOutcome::SafeAsExpected
        }
    }

    /// `unexpected`, `unsafe as expected`, `safe as expected` or `no expectation`.
    pub fn words(self) -> &'static str {
        match self {
            RowOutcome::Unexpected => "unexpected",
            RowOutcome::UnsafeAsExpected => "unsafe as expected",
            RowOutcome::SafeAsExpected => "safe as expected",
            RowOutcome::NoExpectation => "no expectation",
        }
    }

    /// The CSS class of the outcome in `index.html`.
    pub fn css(self) -> &'static str {
        match self {
            RowOutcome::Unexpected => "o-unexpected",
            RowOutcome::UnsafeAsExpected => "o-unsafe",
            RowOutcome::SafeAsExpected => "o-safe",
            RowOutcome::NoExpectation => "o-none",
        }
    }
}

/// An exploration cell's verdict for one checker: invalid when some seed was, else unknown when
/// some seed could not be judged, else valid — the one rule of every renderer.
pub(crate) fn exploration_verdict(check: &super::ExploreCheckReport) -> Verdict {
    if check.invalid_seeds > 0 {
        Verdict::Invalid
    } else if check.unknown_seeds > 0 {
        Verdict::Unknown
    } else {
        Verdict::Valid
    }
}

/// The check an exploration's row tells about: the first that missed its expectation, else the
/// first that found violations, else the first.
pub(crate) fn exploration_row_check(e: &ExplorationReport) -> Option<&super::ExploreCheckReport> {
    e.checks
        .iter()
        .find(|c| c.status.is_failure())
        .or_else(|| e.checks.iter().find(|c| c.invalid_seeds > 0))
        .or_else(|| e.checks.first())
}

/// An exploration's classification by its lock's assumptions, in words (issue 52: it was in
/// report.json only): `by the lock's assumptions: no implementation bug (0 seeds); 34 violating
/// seeds outside them (plans broke masters in 46 seeds, timing in 43)`. `None` when the
/// exploration was not classified (with a reference lock, or bounded).
pub(crate) fn exploration_classification(e: &ExplorationReport) -> Option<String> {
    let c = e.summary.classified.as_ref()?;
    let bugs = if c.seeds_bug == 0 {
        "no implementation bug (0 seeds)".to_string()
    } else {
        format!(
            "IMPLEMENTATION BUG in {} seed{}",
            c.seeds_bug,
            if c.seeds_bug == 1 { "" } else { "s" }
        )
    };
    let mut broken: Vec<(&String, &u64)> = c.broken.iter().collect();
    broken.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let broken = broken
        .iter()
        .map(|(name, n)| format!("{name} in {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = format!(
        "by the lock's assumptions: {bugs}; {} violating seed{} outside them",
        c.seeds_violating_outside,
        if c.seeds_violating_outside == 1 { "" } else { "s" }
    );
    if !broken.is_empty() {
        text.push_str(&format!(" (plans broke {broken})"));
    }
    Some(text)
}

/// The command that replays an exploration's row: that of the first check that missed its
/// expectation and has one, else of the first check that has one.
pub(crate) fn exploration_replay(e: &ExplorationReport) -> Option<String> {
    e.checks
        .iter()
        .find(|c| c.status.is_failure() && c.replay.is_some())
        .or_else(|| e.checks.iter().find(|c| c.replay.is_some()))
        .and_then(|c| c.replay.clone())
}

/// The colour a verdict is drawn in, everywhere a verdict is shown: green for valid, red for
/// invalid, amber for unknown (the word is always shown beside it, so colour is never the
/// only sign).
pub const fn verdict_colour(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Valid => "#1a7f37",
        Verdict::Invalid => "#cf222e",
        Verdict::Unknown => "#9a6700",
    }
}

/// The CSS class of a verdict in `index.html` (`v-valid`, `v-invalid`, `v-unknown`).
pub fn verdict_css(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Valid => "v-valid",
        Verdict::Invalid => "v-invalid",
        Verdict::Unknown => "v-unknown",
    }
}

/// Whether a check met its expectation, in words: `as expected`, `UNEXPECTED`, `ERROR`, or
/// `no expectation`.
pub(crate) fn match_words(status: Status) -> &'static str {
    match status {
        Status::Pass => "as expected",
        Status::Fail => "UNEXPECTED",
        Status::Error => "ERROR",
        Status::Unchecked => "no expectation",
    }
}

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
    /// Rows (scenario runs and explorations) where a violation was found, as expected.
    pub unsafe_as_expected: u64,
    /// Rows where no violation was found, as expected.
    pub safe_as_expected: u64,
    /// Rows where some expectation did not hold (or that could not run).
    pub unexpected: u64,
    /// Rows with no expectation stated.
    pub no_expectation: u64,
    /// What the report leads with, when a counterexample is among its rows: the explorer's
    /// classification of the first such row (a failing one first), as `subject: lead`.
    pub lead: Option<String>,
}

/// The scenario rows in the order the tables show them (unexpected first, then by outcome), rows
/// of one file whose checks all came out alike grouped into one (a live report's ten runs of one
/// scenario are one row "×10"): each group's first row stands for it.
pub(crate) fn scenario_groups(report: &Report) -> Vec<Vec<&ScenarioReport>> {
    let mut rows: Vec<&ScenarioReport> = report.scenarios.iter().collect();
    rows.sort_by_key(|s| (RowOutcome::of_scenario(s), s.status));
    let key = |s: &ScenarioReport| {
        let checks: Vec<(String, Verdict, Status)> = s
            .checks
            .iter()
            .map(|c| (c.checker.clone(), c.verdict, c.status))
            .collect();
        (
            s.file.clone(),
            s.status,
            s.error.is_some(),
            s.classification.clone(),
            checks,
        )
    };
    let mut groups: Vec<Vec<&ScenarioReport>> = Vec::new();
    for row in rows {
        match groups.iter_mut().find(|g| key(g[0]) == key(row)) {
            Some(group) => group.push(row),
            None => groups.push(vec![row]),
        }
    }
    groups
}

/// The explanation a scenario row shows: the first failing check's, else the first invalid
/// verdict's, else the first check's.
///
/// A counterexample's row leads with the explorer's verdict and the checker it rests on
/// (`IMPLEMENTATION BUG on lease-validity: …`), that checker's explanation next, and the other
/// failing checkers after it, as following from it ([`super::verdict::Lead`]).
pub fn row_explanation(s: &ScenarioReport) -> String {
    if let Some(e) = &s.error {
        return e.clone();
    }
    let lead = super::verdict::Lead::of_scenario(s);
    let check = lead
        .as_ref()
        .and_then(|l| s.checks.iter().find(|c| c.checker == l.checker))
        .or_else(|| s.checks.iter().find(|c| c.status.is_failure()))
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
        match &lead {
            Some(lead) => {
                let mut line = format!("{} on {} — {text}", lead.words, lead.checker);
                if !lead.following.is_empty() {
                    line.push_str(&format!("; {}: {}", lead.following_words, lead.following.join(", ")));
                }
                line
            }
            None => text,
        }
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
            // No seed got the lock: the row fails with every check met (see `is_vacuous`).
            if let Some(vacuity) = e.summary.vacuity() {
                failures.push(Failure {
                    subject: subject.clone(),
                    explanation: vacuity,
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
        let outcomes = report
            .scenarios
            .iter()
            .map(RowOutcome::of_scenario)
            .chain(report.explorations.iter().map(RowOutcome::of_exploration));
        let (mut unsafe_, mut safe, mut unexpected, mut none) = (0, 0, 0, 0);
        for outcome in outcomes {
            *match outcome {
                RowOutcome::UnsafeAsExpected => &mut unsafe_,
                RowOutcome::SafeAsExpected => &mut safe,
                RowOutcome::Unexpected => &mut unexpected,
                RowOutcome::NoExpectation => &mut none,
            } += 1;
        }
        // A failing counterexample first, then any counterexample.
        let mut classified: Vec<&ScenarioReport> =
            report.scenarios.iter().filter(|s| s.classification.is_some()).collect();
        classified.sort_by_key(|s| !s.status.is_failure());
        let lead = classified
            .first()
            .and_then(|s| Some(format!("{}: {}", super::verdict::Lead::of_scenario(s)?.line(), s.name)))
            .or_else(|| {
                // Else an exploration whose violating seeds include implementation bugs.
                report.explorations.iter().find_map(|e| {
                    let (seed, lead) = super::verdict::Lead::of_exploration(e)?;
                    Some(format!("{}: exploration {} seed {seed}", lead.line(), e.name))
                })
            });
        Headline {
            lead,
            unsafe_as_expected: unsafe_,
            safe_as_expected: safe,
            unexpected,
            no_expectation: none,
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
        if self.totals.checks == 0 {
            "⚪"
        } else if self.ok {
            "✅"
        } else {
            "❌"
        }
    }

    /// `PASS`, `FAIL` or `EMPTY` (nothing was checked): the gate's result in a word (never a
    /// sign alone).
    pub fn word(&self) -> &'static str {
        if self.totals.checks == 0 {
            "EMPTY"
        } else if self.ok {
            "PASS"
        } else {
            "FAIL"
        }
    }

    /// The verdict in a few words: `Every expectation held`, or `F of N checks did not meet
    /// their expectation.`
    pub fn title(&self) -> String {
        if self.totals.checks == 0 {
            if self.shard.is_some() {
                "This shard checks nothing: the merged report is the gate".to_string()
            } else {
                "Nothing was checked: no scenario run and no exploration".to_string()
            }
        } else if self.ok {
            "Every expectation held".to_string()
        } else {
            format!(
                "{} of {} checks did not meet their expectation.",
                self.totals.failed, self.totals.checks
            )
        }
    }

    /// The rows counted by outcome: `U unsafe as expected · S safe as expected · X unexpected`
    /// (and `N without expectation` when there are such rows).
    pub fn outcomes(&self) -> String {
        let mut text = format!(
            "{} unsafe as expected · {} safe as expected · {} unexpected",
            self.unsafe_as_expected, self.safe_as_expected, self.unexpected
        );
        if self.no_expectation > 0 {
            text.push_str(&format!(" · {} without expectation", self.no_expectation));
        }
        text
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
    pub(crate) fn qualifiers(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(shard) = self.shard {
            out.push(format!("shard {}/{}", shard.index, shard.count));
        }
        if self.merged_from > 0 {
            out.push(format!("merged from {} reports", self.merged_from));
        }
        out
    }

    /// One line of counts: `N scenario runs, M explorations: U unsafe as expected · S safe as
    /// expected · X unexpected (C checks: P passed, F failed, U without expectation)`.
    pub fn counts(&self) -> String {
        let t = &self.totals;
        format!(
            "{} scenario runs, {} explorations: {} ({} checks: {} passed, {} failed, {} without expectation)",
            t.scenarios,
            t.explorations,
            self.outcomes(),
            t.checks,
            t.passed,
            t.failed,
            t.unchecked
        )
    }
}
