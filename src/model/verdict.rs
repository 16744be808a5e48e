//! A checker's answer about one history.

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
