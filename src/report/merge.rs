//! `lockstep merge` as data: sharded results read back and combined — `report.json` files of
//! `lockstep ci --shard` runs into one [`Report`] (judged again on all seeds), or the JSON
//! summaries of sharded explorations into one [`ExploreSummary`]. Nothing is run.

use super::{prepare_out, Report, FORMAT};
use crate::explore::summary::ExploreSummary;
use std::path::{Path, PathBuf};

/// What the inputs merged into.
#[derive(Debug, Clone)]
pub enum Merged {
    /// Reports: the merged report, and how many files it came from.
    Reports {
        /// The merged report.
        report: Box<Report>,
        /// Files merged.
        parts: usize,
    },
    /// Exploration summaries.
    Summaries(Box<ExploreSummary>),
}

/// Whether `value` is a lockstep report (its `format` field says so).
fn is_report(value: &serde_json::Value) -> bool {
    value.get("format").and_then(|f| f.as_str()) == Some(FORMAT)
}

/// Merges `texts` (file, content): all reports or all summaries. `report_dir`, when given,
/// must be a writable directory (checked first) and needs reports. Errors say which file and why
/// (a file that is not JSON at all says so, with the position).
pub fn merge_texts(texts: &[(PathBuf, String)], report_dir: Option<&Path>) -> Result<Merged, String> {
    let mut reports = 0;
    for (file, text) in texts {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("{}:{}:{}: not valid JSON: {e}", file.display(), e.line(), e.column()))?;
        reports += usize::from(is_report(&value));
    }
    if reports == texts.len() {
        if let Some(dir) = report_dir {
            prepare_out(dir)?;
        }
        let mut parts = Vec::new();
        for (path, text) in texts {
            let origin = path.display().to_string();
            let report = Report::from_json(text, &origin)?;
            parts.push((origin, report));
        }
        let report = Report::merge(&parts)?;
        return Ok(Merged::Reports {
            report: Box::new(report),
            parts: parts.len(),
        });
    }
    if reports > 0 {
        return Err("cannot merge report.json files with exploration summaries".to_string());
    }
    if report_dir.is_some() {
        return Err("--report needs report.json files (written by `lockstep ci`)".to_string());
    }
    let mut merged = ExploreSummary::default();
    for (file, text) in texts {
        let part: ExploreSummary = serde_json::from_str(text).map_err(|e| {
            format!(
                "{}:{}:{}: not an exploration summary: {e}",
                file.display(),
                e.line(),
                e.column()
            )
        })?;
        merged.merge(&part);
    }
    Ok(Merged::Summaries(Box::new(merged)))
}
