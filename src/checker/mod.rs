//! Checkers: judges of a run that read only its history.
//!
//! Each checker answers [`Verdict::Valid`], [`Verdict::Invalid`] or [`Verdict::Unknown`] (it
//! cannot decide from this history), with a one-line explanation and, when invalid, a witness: the
//! events that prove it. Checkers judge the system under test; they never panic on its bugs.

use lockstep_sim::{Event, History};
use serde::{Deserialize, Serialize};

/// A checker's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The property held.
    Valid,
    /// The property was violated; the witness proves it.
    Invalid,
    /// The history does not decide it.
    Unknown,
}

impl Verdict {
    /// `valid`, `invalid` or `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::Unknown => "unknown",
        }
    }
}

/// One checker's result on one history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The checker's name (`mutual-exclusion`, ...).
    pub checker: String,
    /// The verdict.
    pub verdict: Verdict,
    /// One line saying why.
    pub explanation: String,
    /// The events that prove a violation (empty when valid).
    pub witness: Vec<Event>,
}

/// A property of histories.
pub trait Checker {
    /// The checker's name as used in scenario files and reports (`mutual-exclusion`, ...).
    fn name(&self) -> &'static str;
    /// Judges `history`.
    fn check(&self, history: &History) -> CheckResult;
}
