//! Checkers: judges of a run that read only its typed history ([`OpHistory`]).
//!
//! Each checker answers [`Verdict::Valid`], [`Verdict::Invalid`] or [`Verdict::Unknown`] (it
//! cannot decide from this history), with a one-line explanation and, when invalid, a witness: the
//! events that prove it. Checkers judge the system under test; they never panic on its bugs.
//!
//! Eight checkers: `mutual-exclusion`, `stale-write`, `lost-update` and `token-order` judge the
//! clients' and the resource's operations; `lease-validity` compares each grant's claimed validity
//! with the lease the masters held (read by `crate::history::lease`); `ownership` judges the
//! masters' own key effects (who changed whose key); `spurious-loss` judges what the lock told its
//! holder (a loss reported after the holder's own release, a grant with no validity left);
//! `liveness` judges whether anyone was locked out past the lease (a gone holder's key outliving
//! it, or a long unavailability with no fault in effect). Whether a run made progress at all (a
//! vacuous run) is not a checker's verdict: the run's judgement (`crate::run`) decides it.
//!
//! The registry: every checker has a [`CheckerName`]; [`CheckerName::ALL`] lists them in report
//! order, `check_all` runs them all over one [`OpHistory`]. The list is written once, in
//! `crate::model::checker_registry!` (beside the scenario's expectations, which name checkers
//! and sit below this module): adding a checker is one file implementing [`Checker`] plus one
//! line there.

use crate::history::OpHistory;
use lockstep_sim::Event;
use serde::{Deserialize, Serialize};

/// [`crate::model::Verdict`], under its old path.
#[deprecated(since = "0.1.0", note = "moved to `lockstep::model::Verdict`; removed in 0.3.0")]
pub type Verdict = crate::model::Verdict;

/// One checker's result on one history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The checker's name (`mutual-exclusion`, ...).
    pub checker: String,
    /// The verdict.
    pub verdict: crate::model::Verdict,
    /// One line saying why.
    pub explanation: String,
    /// The events that prove a violation (empty when valid).
    pub witness: Vec<Event>,
}

impl CheckResult {
    /// `checker`'s judgement: `verdict`, why, and the events that prove a violation.
    pub fn new(
        checker: CheckerName,
        verdict: crate::model::Verdict,
        explanation: String,
        witness: Vec<Event>,
    ) -> CheckResult {
        CheckResult {
            checker: checker.as_str().to_string(),
            verdict,
            explanation,
            witness,
        }
    }
}

/// A property of histories.
pub trait Checker {
    /// The checker's name.
    fn name(&self) -> CheckerName;
    /// Judges `history`.
    fn check(&self, history: &OpHistory<'_>) -> CheckResult;
}

/// Generates the checkers' modules, [`CheckerName`] and its tables from the registry of
/// checkers (`crate::model::checker_registry!`, the one list of them).
macro_rules! checkers {
    ($($module:ident $variant:ident $name:literal,)*) => {
        $(
            #[doc = concat!("`", $name, "`.")]
            pub mod $module;
            pub use $module::$variant;
        )*

        /// The name of a checker, as used in scenario files and reports.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum CheckerName {
            $(
                #[doc = concat!("`", $name, "`: see [`", stringify!($module), "`].")]
                #[serde(rename = $name)]
                $variant,
            )*
        }

        /// The checkers' names, in [`CheckerName::ALL`] order ([`crate::model::CHECKERS`], made
        /// from the same registry).
        pub const NAMES: &[&str] = crate::model::CHECKERS;

        impl CheckerName {
            /// Every checker, in the order reports list them.
            pub const ALL: [CheckerName; NAMES.len()] = [$(CheckerName::$variant,)*];

            /// Its name, as scenario files and reports write it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(CheckerName::$variant => $name,)*
                }
            }

            /// The checker itself.
            pub fn checker(self) -> &'static dyn Checker {
                match self {
                    $(CheckerName::$variant => &$variant,)*
                }
            }
        }
    };
}
crate::model::checker_registry!(checkers);

impl std::fmt::Display for CheckerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a checker's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown checker `{0}` (checkers: {names})", names = NAMES.join(", "))]
pub struct UnknownChecker(pub String);

impl std::str::FromStr for CheckerName {
    type Err = UnknownChecker;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        CheckerName::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
            .ok_or_else(|| UnknownChecker(name.to_string()))
    }
}

/// Every checker's result on `history`, in [`CheckerName::ALL`] order.
pub(crate) fn check_all(history: &OpHistory<'_>) -> Vec<CheckResult> {
    CheckerName::ALL.iter().map(|c| c.checker().check(history)).collect()
}

/// Every checker, in [`CheckerName::ALL`] order (the registry's, which [`NAMES`] lists).
pub fn all() -> Vec<&'static dyn Checker> {
    CheckerName::ALL.iter().map(|c| c.checker()).collect()
}

/// The checker called `name` (one of [`NAMES`]), if there is one.
#[cfg(test)]
pub(crate) fn by_name(name: &str) -> Option<&'static dyn Checker> {
    name.parse::<CheckerName>().ok().map(CheckerName::checker)
}

pub(crate) use crate::model::units::seconds;

/// A grant's value shortened for one-line explanations (the witness keeps it whole).
pub(crate) fn grant_text(value: &str) -> &str {
    crate::model::units::short_value(value)
}

/// `token 3`, or `no token`.
pub(crate) fn token_text(token: Option<u64>) -> String {
    match token {
        Some(t) => format!("token {t}"),
        None => "no token".to_string(),
    }
}

/// `1 grant`, `2 grants`: `n` and the noun, plural unless `n` is 1.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Clones `events` into a witness: in `seq` order, each event once.
pub(crate) fn witness(events: &[&Event]) -> Vec<Event> {
    let mut out: Vec<Event> = events.iter().map(|e| (*e).clone()).collect();
    out.sort_by_key(|e| e.seq);
    out.dedup_by_key(|e| e.seq);
    out
}

#[cfg(test)]
pub(crate) mod testkit {
    //! The history testkit, and what the checkers' tests add to it.

    pub(crate) use crate::history::testkit::*;

    /// The `seq`s of a result's witness.
    pub(crate) fn seqs(result: &super::CheckResult) -> Vec<u64> {
        result.witness.iter().map(|e| e.seq).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_match_checkers() {
        let names: Vec<&str> = all().iter().map(|c| c.name().as_str()).collect();
        assert_eq!(
            names,
            [
                "mutual-exclusion",
                "stale-write",
                "lost-update",
                "token-order",
                "lease-validity",
                "ownership",
                "spurious-loss",
                "liveness"
            ]
        );
        assert_eq!(names, NAMES);
        for name in NAMES {
            assert_eq!(by_name(name).map(|c| c.name().as_str()), Some(*name));
            let typed: CheckerName = name.parse().expect("a checker's name");
            assert_eq!(typed.as_str(), *name);
            assert_eq!(typed.to_string(), *name);
            assert_eq!(serde_json::to_value(typed).unwrap(), serde_json::json!(name));
        }
        assert!(by_name("linearizable").is_none());
        assert_eq!(
            "linearizable".parse::<CheckerName>(),
            Err(UnknownChecker("linearizable".to_string()))
        );
        assert_eq!(CheckerName::ALL.map(CheckerName::as_str), *NAMES);
    }

    #[test]
    fn every_checker_names_itself_in_its_result() {
        let raw = testkit::kleppmann(false).0;
        let history = OpHistory::new(&raw);
        for checker in all() {
            assert_eq!(checker.check(&history).checker, checker.name().as_str());
        }
        let names: Vec<String> = check_all(&history).into_iter().map(|r| r.checker).collect();
        assert_eq!(names, NAMES);
    }

    #[test]
    fn the_kleppmann_story_verdicts() {
        let verdicts = |fenced| -> Vec<crate::model::Verdict> {
            let history = testkit::kleppmann(fenced).0;
            check_all(&OpHistory::new(&history)).iter().map(|r| r.verdict).collect()
        };
        use crate::model::Verdict::*;
        // The hand-built story records no master commands nor validity instants: lease-validity,
        // ownership and liveness cannot judge it; nobody reports a loss.
        assert_eq!(
            verdicts(false),
            [Invalid, Invalid, Invalid, Valid, Unknown, Unknown, Valid, Unknown]
        );
        assert_eq!(
            verdicts(true),
            [Invalid, Valid, Valid, Valid, Unknown, Unknown, Valid, Unknown]
        );
    }

    #[test]
    fn random_histories_never_panic() {
        use crate::ops::{names, to_data, AcquireInvoke, Grant, GrantRef, WriteInvoke};
        use lockstep_sim::Phase;
        use serde_json::json;

        // xorshift64: deterministic and dependency-free.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let nodes = ["client-1", "client-2", "client-3"];
        let keys = ["lock", "counter", "other"];
        let ops = [
            names::ACQUIRE,
            names::EXTEND,
            names::RELEASE,
            names::READ,
            names::WRITE,
            names::ABORT,
        ];
        let phases = [Phase::Invoke, Phase::Ok, Phase::Fail, Phase::Info];
        // Which verdicts each checker reached: the histories must exercise valid and invalid.
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let mut b = testkit::Builder::new();
            let mut t = 0;
            for _ in 0..next(60) {
                t += next(3) * 1_000;
                let node = nodes[next(3) as usize];
                let key = keys[next(3) as usize].to_string();
                let value = format!("v{}", next(4));
                let token = [None, Some(next(5)), Some(u64::MAX)][next(3) as usize];
                // Mostly well-formed ops in the workload's shapes, some junk in any shape.
                let (op, phase, data) = match next(9) {
                    0 => (
                        names::ACQUIRE,
                        Phase::Invoke,
                        to_data(&AcquireInvoke { key, ttl_ms: 10 }),
                    ),
                    1 | 2 => (
                        names::ACQUIRE,
                        Phase::Ok,
                        to_data(&Grant {
                            key,
                            value,
                            fencing_token: token,
                            validity_ms: 5,
                            validity_from_ms: None,
                        }),
                    ),
                    3 => (
                        [names::RELEASE, names::ABORT][next(2) as usize],
                        Phase::Invoke,
                        to_data(&GrantRef {
                            key,
                            value,
                            fencing_token: token,
                            value_sent: None,
                        }),
                    ),
                    4 => {
                        // A write invoke, usually followed by the resource's record of it.
                        let write = WriteInvoke {
                            key,
                            value: next(4) as i64 - 1,
                            fencing_token: token,
                        };
                        let id = next(10);
                        b.op(t, node, id, Phase::Invoke, names::WRITE, to_data(&write));
                        if next(3) != 0 {
                            let accepted = next(4) != 0;
                            b.resource_write(t, node, &write.key, write.value, token, accepted, 0);
                        }
                        continue;
                    }
                    5 => {
                        let junk = [json!({ "key": [key] }), serde_json::Value::Null, json!("x")];
                        (
                            ops[next(6) as usize],
                            phases[next(4) as usize],
                            junk[next(3) as usize].clone(),
                        )
                    }
                    7 => {
                        // A master command changing a key: its value, its expiry, or both.
                        let state = |n: u64| (n < 4).then(|| (["v0", "v1", "v2", "v3"][n as usize], 1_000 + n as i64));
                        let (before, after) = (state(next(6)), state(next(6)));
                        b.command(t, "redis-1", &["EVAL"], &[(keys[0], before, after)]);
                        continue;
                    }
                    _ => {
                        let accepted = next(3) != 0;
                        let value = [0, 1, 2, 3, i64::MIN, i64::MAX][next(6) as usize];
                        b.resource_write(t, node, &key, value, token, accepted, next(9));
                        continue;
                    }
                };
                let id = next(10);
                b.op(t, node, id, phase, op, data);
            }
            let raw = b.build();
            let history = OpHistory::new(&raw);
            for checker in all() {
                let result = checker.check(&history);
                let seqs: Vec<u64> = result.witness.iter().map(|e| e.seq).collect();
                assert!(seqs.windows(2).all(|w| w[0] < w[1]), "witness out of order: {seqs:?}");
                assert_eq!(
                    result.verdict == crate::model::Verdict::Invalid,
                    !result.witness.is_empty()
                );
                seen.insert((checker.name(), result.verdict));
            }
        }
        // Random op histories carry no master commands: lease-validity has its own tests, and so
        // has liveness (its key lives need commands from the clients that acquire).
        for name in CheckerName::ALL
            .into_iter()
            .filter(|&c| c != CheckerName::LeaseValidity && c != CheckerName::Liveness)
        {
            assert!(
                seen.contains(&(name, crate::model::Verdict::Invalid)),
                "{name} never invalid: {seen:?}"
            );
            assert!(
                seen.contains(&(name, crate::model::Verdict::Valid)),
                "{name} never valid: {seen:?}"
            );
        }
    }

    #[test]
    fn helpers_format() {
        assert_eq!(seconds(10_502_999), "10.502 s");
        assert_eq!(seconds(0), "0.000 s");
        assert_eq!(token_text(Some(3)), "token 3");
        assert_eq!(token_text(None), "no token");
        assert_eq!(count(1, "grant", "grants"), "1 grant");
        assert_eq!(count(0, "grant", "grants"), "0 grants");
    }
}
