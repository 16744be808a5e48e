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

/// Whether `text` is a lockstep report (its `format` field says so).
fn is_report(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("format").and_then(|f| f.as_str()).map(|f| f == FORMAT))
        .unwrap_or(false)
}

/// Merges `texts` (file, content): all reports or all summaries. `report_dir`, when given,
/// must be a writable directory (checked first) and needs reports. Errors say which file and why.
pub fn merge_texts(texts: &[(PathBuf, String)], report_dir: Option<&Path>) -> Result<Merged, String> {
    let reports = texts.iter().filter(|(_, t)| is_report(t)).count();
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
