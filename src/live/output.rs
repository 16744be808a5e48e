//! What live runs add up to: the frequency of each verdict over `--runs N` (`live.json`), and
//! the rendering seam — [`Render`], implemented in `report::live` — through which the
//! application layer hands its runs to the renderers without importing them.

use super::{LiveOptions, LiveRun};
use crate::checker;
use crate::emit::shell_word;
use crate::model::Verdict;
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// How live runs are shown and written (implemented by `report::live::Renderer`).
pub trait Render {
    /// The console text of one run (`index` of `runs`); `quiet`: verdicts only.
    fn run(&self, path: &Path, scenario: &Scenario, run: &LiveRun, index: u32, runs: u32, quiet: bool) -> String;
    /// The console text of the verdict frequencies.
    fn summary(&self, summary: &LiveSummary) -> String;
    /// Checks, before any run, that the report directory `out` can be written.
    fn check_out(&self, out: &Path) -> Result<(), String>;
    /// Checks, before anything runs, that the single output file `file` (`--history`) can be
    /// written: not a directory, not a symbolic link.
    fn check_file(&self, file: &Path) -> Result<(), String>;
    /// Writes one output file atomically (a killed run leaves no half file).
    fn write_file(&self, file: &Path, bytes: &[u8]) -> Result<(), String>;
    /// Writes the report directory `out`, with what the caller adds (`extra`), all of it at
    /// once: nothing is written into `out` after the report is in place.
    fn write(
        &self,
        out: &Path,
        path: &Path,
        scenario: &Scenario,
        runs: &[(LiveRun, f64)],
        summary: &LiveSummary,
        extra: &ReportExtra,
    ) -> Result<(), String>;
}

/// What a caller adds to a live report directory besides the live runs (`lockstep serve`:
/// `serve.json`, and its notes at the top of `summary.md`), built with the rest of the report
/// before it is swapped in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportExtra {
    /// Further files at the top of the report: a plain file name and its contents.
    pub files: Vec<(String, Vec<u8>)>,
    /// Markdown put at the very top of `summary.md`.
    pub summary_head: String,
    /// HTML put at the top of `index.html` (before the live banner).
    pub index_head: String,
}

/// What `live.json` says: the verdict frequencies over the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveSummary {
    /// Always `true`: this came from real processes in real time.
    pub live: bool,
    /// A sentence saying what that means.
    pub note: String,
    /// The scenario's name.
    pub scenario: String,
    /// The file.
    pub file: String,
    /// The fault plan's seed.
    pub seed: u64,
    /// The adapter command.
    pub client: String,
    /// What each client's adapter drives, as the adapters said (first run).
    pub adapters: BTreeMap<String, String>,
    /// Runs made.
    pub runs: u32,
    /// Runs in which every expectation held.
    pub runs_as_expected: u32,
    /// Per checker: how often each verdict came out (`valid`, `invalid`, `unknown`).
    pub verdicts: BTreeMap<String, BTreeMap<String, u32>>,
    /// Per checker: the scenario's expectation.
    pub expected: BTreeMap<String, Verdict>,
    /// The command that repeats the runs.
    pub rerun: String,
}

impl LiveSummary {
    /// Whether every run met every expectation.
    pub(crate) fn all_as_expected(&self) -> bool {
        self.runs_as_expected == self.runs
    }

    /// How many runs gave `verdict` for `checker`.
    pub fn count(&self, checker: &str, verdict: Verdict) -> u32 {
        self.verdicts
            .get(checker)
            .and_then(|m| m.get(verdict.name()))
            .copied()
            .unwrap_or(0)
    }
}

/// The verdict frequencies over `runs`.
pub(crate) fn summarize(
    path: &Path,
    scenario: &Scenario,
    options: &LiveOptions,
    runs: &[(LiveRun, f64)],
) -> LiveSummary {
    let mut verdicts: BTreeMap<String, BTreeMap<String, u32>> = BTreeMap::new();
    for name in checker::NAMES {
        let counts = verdicts.entry(name.to_string()).or_default();
        for v in [Verdict::Valid, Verdict::Invalid, Verdict::Unknown] {
            counts.insert(v.name().to_string(), 0);
        }
    }
    for (run, _) in runs {
        for r in &run.results {
            *verdicts
                .entry(r.checker.clone())
                .or_default()
                .entry(r.verdict.name().to_string())
                .or_default() += 1;
        }
    }
    let file = path.display().to_string();
    LiveSummary {
        live: true,
        note: "live run: real client processes against servers on 127.0.0.1 in real time; not reproducible \
               (the fault plan and its seed are), so verdicts are counted over the runs"
            .to_string(),
        scenario: scenario.name.clone(),
        file: file.clone(),
        seed: scenario.seed,
        client: options.client.clone(),
        adapters: runs.first().map(|(r, _)| r.adapters.clone()).unwrap_or_default(),
        runs: runs.len() as u32,
        runs_as_expected: runs.iter().filter(|(r, _)| r.as_expected()).count() as u32,
        verdicts,
        expected: scenario.expect.clone(),
        rerun: format!(
            "lockstep live {} --client {} --runs {}",
            shell_word(&file),
            shell_word(&options.client),
            runs.len()
        ),
    }
}
