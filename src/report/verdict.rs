//! The verdict a report leads with (issue 43): for a counterexample `lockstep explore` wrote, the
//! classification the explorer reached — an IMPLEMENTATION BUG (a checker the lock promises under
//! the plan answered invalid) or an assumption broken (the plan broke one of the lock's
//! assumptions: the lease's limit, not a bug) — and the checker it rests on; the other failing
//! checkers follow from it and are listed after it. For a scenario whose violations are the ones
//! it expects, the verdict is "expected / as documented".
//!
//! The explorer states its classification in the counterexample file's header (the comment lines
//! `AssumptionNotes::lines` writes, see `crate::explore::shrink`); [`Classification::of_file`]
//! reads it back from there when the report is built, and the report keeps it
//! (`ScenarioReport::classification`) so a merged report leads with it too. Left out: re-deriving
//! the classification from the run (the explorer's generated faults are not in the file).

use super::{ScenarioReport, Status};
use crate::model::Verdict;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The first line of every counterexample file `lockstep explore` writes.
const COUNTEREXAMPLE_MARK: &str = "# Minimal counterexample written by `lockstep explore`.";

/// What the explorer concluded about a counterexample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Classification {
    /// `implementation-bug` (the lock promises `checker` under the plan) or `assumption-broken`.
    pub kind: String,
    /// The checker the verdict rests on: the one the explorer judged (and shrank for).
    pub checker: String,
    /// The assumptions the plan broke (`assumption-broken`), by name (`timing`, `clocks`…).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken: Vec<String>,
}

/// `implementation-bug`.
pub const IMPLEMENTATION_BUG: &str = "implementation-bug";
/// `assumption-broken`.
pub const ASSUMPTION_BROKEN: &str = "assumption-broken";

impl Classification {
    /// The classification stated in the header of the counterexample file at `path`, if it is
    /// one (anything unreadable, or not a counterexample, is `None`).
    pub fn of_file(path: &Path) -> Option<Classification> {
        let bytes = crate::scenario::read_limited(path, crate::scenario::MAX_FILE_BYTES).ok()?;
        Self::of_text(&String::from_utf8_lossy(&bytes))
    }

    /// The classification stated in a counterexample file's header comments.
    pub fn of_text(text: &str) -> Option<Classification> {
        let mut lines = text.lines().map(str::trim).take_while(|l| l.starts_with('#'));
        if lines.next()? != COUNTEREXAMPLE_MARK {
            return None;
        }
        let mut checker = None;
        for line in lines {
            let line = line.trim_start_matches('#').trim();
            if let Some(rest) = line.strip_prefix("Seed ") {
                // `Seed N violates CHECKER with LOCK…`
                checker = rest
                    .split_once(" violates ")
                    .and_then(|(_, r)| r.split_whitespace().next())
                    .map(str::to_string);
            } else if line.ends_with("so this is an IMPLEMENTATION BUG") {
                // `ALG promises CHECKER under this plan: …`
                let promised = line
                    .split_once(" promises ")
                    .and_then(|(_, r)| r.split_whitespace().next())
                    .map(str::to_string);
                return Some(Classification {
                    kind: IMPLEMENTATION_BUG.to_string(),
                    checker: promised.or(checker)?,
                    broken: Vec::new(),
                });
            } else if let Some((_, rest)) = line.split_once(" does not promise ") {
                // `ALG does not promise CHECKER under a plan that breaks A, B: outside …`
                let (judged, rest) = rest.split_once(" under a plan that breaks ")?;
                let names = rest.split_once(':').map_or(rest, |(n, _)| n);
                return Some(Classification {
                    kind: ASSUMPTION_BROKEN.to_string(),
                    checker: judged.trim().to_string(),
                    broken: names.split(", ").map(|n| n.trim().to_string()).collect(),
                });
            } else if line.starts_with("the workload outlives the lease") {
                return Some(Classification {
                    kind: ASSUMPTION_BROKEN.to_string(),
                    checker: checker?,
                    broken: vec!["the workload outlives the lease".to_string()],
                });
            }
        }
        None
    }

    /// The verdict in words: `IMPLEMENTATION BUG` or `assumption broken: timing`.
    pub fn words(&self) -> String {
        if self.kind == IMPLEMENTATION_BUG {
            "IMPLEMENTATION BUG".to_string()
        } else if self.broken.is_empty() {
            "assumption broken".to_string()
        } else {
            format!("assumption broken: {}", self.broken.join(", "))
        }
    }
}

/// How the checkers that follow from a counterexample's verdict are introduced.
pub const FOLLOWING: &str = "following from it";

/// The verdict a row leads with: its words, the checker it rests on, and the other failing (or
/// invalid) checkers, which follow from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    /// `IMPLEMENTATION BUG`, `assumption broken: timing`, or `expected / as documented`.
    pub words: String,
    /// The checker it rests on.
    pub checker: String,
    /// The other checkers that failed their expectation (or, as documented, answered invalid).
    pub following: Vec<String>,
    /// What `following` are: `following from it` (a counterexample's), or `also invalid, as
    /// expected` (as documented).
    pub following_words: &'static str,
}

impl Lead {
    /// The lead of a scenario row: its classification when it is a counterexample; `expected /
    /// as documented` when every expectation held and some checker answered invalid, as
    /// expected; else nothing (the row's own explanation says what failed).
    pub fn of_scenario(s: &ScenarioReport) -> Option<Lead> {
        if let Some(c) = &s.classification {
            let following = s
                .checks
                .iter()
                .filter(|k| k.checker != c.checker && (k.status.is_failure() || k.verdict == Verdict::Invalid))
                .map(|k| k.checker.clone())
                .collect();
            return Some(Lead {
                words: c.words(),
                checker: c.checker.clone(),
                following,
                following_words: FOLLOWING,
            });
        }
        if s.status.is_failure() {
            return None;
        }
        let mut invalid = s
            .checks
            .iter()
            .filter(|k| {
                k.verdict == Verdict::Invalid && k.status == Status::Pass && k.checker != crate::scenario::LIVENESS
            })
            .map(|k| k.checker.clone());
        let checker = invalid.next()?;
        Some(Lead {
            words: "expected / as documented".to_string(),
            checker,
            following: invalid.collect(),
            following_words: "also invalid, as expected",
        })
    }

    /// The lead of an exploration that found implementation bugs (the explorer classified a
    /// violating seed's plan as inside the lock's assumptions for a checker it violated): the
    /// smallest such seed's first promised checker, its other promised checkers following.
    pub fn of_exploration(e: &super::ExplorationReport) -> Option<(u64, Lead)> {
        let bounded = e.summary.assumptions.as_ref().or(e.summary.classified.as_ref())?;
        let bug = bounded.first_bugs.iter().min_by_key(|f| f.seed)?;
        let (checker, following) = bug.checkers.split_first()?;
        Some((
            bug.seed,
            Lead {
                words: "IMPLEMENTATION BUG".to_string(),
                checker: checker.clone(),
                following: following.to_vec(),
                following_words: "also promised and violated",
            },
        ))
    }

    /// The lead in one line: `IMPLEMENTATION BUG on lease-validity (following from it:
    /// mutual-exclusion, ownership)`.
    pub fn line(&self) -> String {
        let mut text = format!("{} on {}", self.words, self.checker);
        if !self.following.is_empty() {
            text.push_str(&format!(" ({}: {})", self.following_words, self.following.join(", ")));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUG: &str = "# Minimal counterexample written by `lockstep explore`.\n\
        # Seed 25 violates lease-validity with script; shrunk from 3 to 1 faults in 7 runs.\n\
        # Replay: lockstep run <this file>   (history digest 85be)\n\
        #\n\
        # assumptions of script (docs/assumptions.md), as `explore --bounded` classifies this plan:\n\
        #   fault 1 (pause of redis-1 for 160 ms at 12663 ms): breaks timing: client-1: …\n\
        #   script promises lease-validity under this plan: a correct lock keeps it, so this is an IMPLEMENTATION BUG\n\
        name = \"x\"\n";

    #[test]
    fn an_implementation_bug_is_read_with_the_promised_checker() {
        let c = Classification::of_text(BUG).unwrap();
        assert_eq!(c.kind, IMPLEMENTATION_BUG);
        assert_eq!(c.checker, "lease-validity");
        assert_eq!(c.words(), "IMPLEMENTATION BUG");
    }

    #[test]
    fn a_broken_assumption_is_read_with_its_names() {
        let text = "# Minimal counterexample written by `lockstep explore`.\n\
            # Seed 3 violates mutual-exclusion with redlock; shrunk from 2 to 1 faults in 4 runs.\n\
            #   redlock does not promise mutual-exclusion under a plan that breaks clocks, timing: outside the lock's \
            assumptions (the lease's limit), not an implementation bug\n";
        let c = Classification::of_text(text).unwrap();
        assert_eq!(
            (c.kind.as_str(), c.checker.as_str(), c.broken.clone()),
            (
                ASSUMPTION_BROKEN,
                "mutual-exclusion",
                vec!["clocks".to_string(), "timing".to_string()]
            )
        );
        assert_eq!(c.words(), "assumption broken: clocks, timing");
    }

    #[test]
    fn a_scenario_file_that_is_no_counterexample_has_no_classification() {
        assert_eq!(
            Classification::of_text("# Kleppmann's pause scenario\nname = \"k\"\n"),
            None
        );
        assert_eq!(Classification::of_text(&BUG.replace("IMPLEMENTATION BUG", "x")), None);
        assert_eq!(Classification::of_text(""), None);
    }
}
