//! One seed's result as a plain record: what `--jsonl` writes, one JSON line per seed, as the
//! seeds finish (see `docs/explore-jsonl.md`). Other tools read the stream; the summary does not
//! depend on it.
//!
//! Leaves out: writing (the application layer owns the file) and the summary's counts.

use super::generate::WorkloadShape;
use crate::explore::kinds::GenFault;
use crate::model::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The record format's version (the `v` field of every line).
pub(crate) const RECORD_VERSION: u32 = 1;

/// One lock's run of a seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockRun {
    /// The lock's name (a built-in algorithm's, or the user lock's).
    pub lock: String,
    /// Verdict per checker (empty when the run failed).
    pub verdicts: BTreeMap<String, Verdict>,
    /// The history's digest (`None` when the run failed).
    pub digest: Option<String>,
    /// Why the seed could not be judged (the world failed, or lock code panicked).
    pub error: Option<String>,
}

impl LockRun {
    /// A judged run.
    pub fn judged(lock: &str, verdicts: &[(String, Verdict)], digest: &str) -> Self {
        LockRun {
            lock: lock.to_string(),
            verdicts: verdicts.iter().cloned().collect(),
            digest: Some(digest.to_string()),
            error: None,
        }
    }

    /// A run that failed.
    pub fn failed(lock: &str, message: &str) -> Self {
        LockRun {
            lock: lock.to_string(),
            verdicts: BTreeMap::new(),
            digest: None,
            error: Some(message.to_string()),
        }
    }

    /// The checkers that answered invalid, in name order.
    pub fn invalid(&self) -> Vec<String> {
        self.verdicts
            .iter()
            .filter(|(_, v)| **v == Verdict::Invalid)
            .map(|(c, _)| c.clone())
            .collect()
    }
}

/// One seed: the generated case, the lock under test's run and, with the differential oracle,
/// the reference's run of the same case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRecord {
    /// `RECORD_VERSION`.
    pub v: u32,
    /// The template scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// How many of the template's clients ran.
    pub clients: usize,
    /// The distinct fault kinds of the plan, sorted.
    pub fault_kinds: Vec<String>,
    /// The generated fault plan (windows as one fault each, as the generator draws them).
    pub faults: Vec<GenFault>,
    /// The generated workload shape (guided explorations only; absent: the template's).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub shape: Option<WorkloadShape>,
    /// The lock under test.
    #[serde(flatten)]
    pub subject: LockRun,
    /// The reference lock's run (differential oracle only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reference: Option<LockRun>,
    /// Differential oracle only: the checkers invalid for the subject and not for the reference.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub only_subject: Option<Vec<String>>,
}

impl SeedRecord {
    /// The record as one line of JSON (no newline).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"v\":{RECORD_VERSION},\"error\":\"{e}\"}}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::kinds::Pause;

    #[test]
    fn a_record_is_one_line_and_reads_back() {
        let record = SeedRecord {
            v: RECORD_VERSION,
            scenario: "t".into(),
            seed: 7,
            clients: 2,
            fault_kinds: vec!["pause".into()],
            faults: vec![GenFault::Pause(Pause {
                at_ms: 10,
                node: "client-1".into(),
                duration_ms: 2_500,
            })],
            shape: None,
            subject: LockRun::judged("my-lock", &[("mutual-exclusion".into(), Verdict::Invalid)], "ab"),
            reference: Some(LockRun::failed("token-release", "boom")),
            only_subject: Some(vec![]),
        };
        let line = record.to_json_line();
        assert!(!line.contains('\n'));
        assert!(line.contains(r#""lock":"my-lock""#), "{line}");
        assert!(line.contains(r#""mutual-exclusion":"invalid""#), "{line}");
        let back: SeedRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, record);
        assert_eq!(back.subject.invalid(), vec!["mutual-exclusion".to_string()]);
    }
}
