//! The mutation-suite catalogue (`mutants/catalogue.toml`): correct parent locks and their
//! deliberately buggy mutants, each mutant its parent's scenario with some `[lock]` keys replaced.
//!
//! The catalogue names each parent's scenario file (relative to the catalogue) and the fault
//! kinds explored for it; each mutant names its parent, what it breaks, its source, and a `lock`
//! table whose keys replace the parent's `[lock]` keys (a sub-table such as `release` replaces the
//! parent's whole sub-table). The mutant's scenario is the parent's TOML with that replacement,
//! resolved by the scenario front end like any file: a mutant that is not a valid lock is an error
//! naming the catalogue and the mutant. What the suite does with them is in `crate::app::mutants`.

use super::{read_limited, ScenarioError, MAX_FILE_BYTES};
use crate::model::Scenario;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One correct lock of the suite.
#[derive(Debug, Clone)]
pub struct Parent {
    /// Its name in the catalogue.
    pub name: String,
    /// Its scenario file.
    pub file: PathBuf,
    /// The scenario (the exploration template).
    pub scenario: Scenario,
    /// The fault kinds explored for it (a subset of the generated kinds).
    pub kinds: Vec<String>,
    /// The largest generated latency, ms, when the catalogue sets one.
    pub latency_ms_max: Option<u64>,
}

/// One deliberately buggy lock.
#[derive(Debug, Clone)]
pub struct Mutant {
    /// Its name.
    pub name: String,
    /// Its parent's name.
    pub parent: String,
    /// What the bug breaks.
    pub breaks: String,
    /// Where the bug class comes from.
    pub source: String,
    /// The `[lock]` keys it replaces, as TOML (for display).
    pub change: String,
    /// The parent's scenario with the change.
    pub scenario: Scenario,
}

/// The whole suite.
#[derive(Debug, Clone)]
pub struct Catalogue {
    /// The parents, in catalogue order.
    pub parents: Vec<Parent>,
    /// The mutants, in catalogue order.
    pub mutants: Vec<Mutant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalogue {
    #[serde(default)]
    parent: Vec<RawParent>,
    #[serde(default)]
    mutant: Vec<RawMutant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParent {
    name: String,
    file: String,
    kinds: Vec<String>,
    latency_ms_max: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMutant {
    name: String,
    parent: String,
    breaks: String,
    source: String,
    lock: toml::Table,
}

fn read_text(path: &Path) -> Result<String, ScenarioError> {
    let shown = path.display().to_string();
    let bytes = read_limited(path, MAX_FILE_BYTES).map_err(|m| ScenarioError::file(&shown, m))?;
    String::from_utf8(bytes).map_err(|e| ScenarioError::file(&shown, format!("file is not valid UTF-8: {e}")))
}

/// Loads the catalogue at `path`: every parent's scenario file and every mutant.
pub fn load(path: &Path) -> Result<Catalogue, ScenarioError> {
    let shown = path.display().to_string();
    let raw: RawCatalogue =
        toml::from_str(&read_text(path)?).map_err(|e| ScenarioError::file(&shown, e.message().to_string()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut parents = Vec::new();
    let mut texts = Vec::new();
    let bad = |m: String| ScenarioError::file(&shown, m);
    let mut seen = std::collections::BTreeSet::new();
    for (kind, name) in raw
        .parent
        .iter()
        .map(|p| ("parent", &p.name))
        .chain(raw.mutant.iter().map(|m| ("mutant", &m.name)))
    {
        if name.trim().is_empty() {
            return Err(bad(format!("a {kind} has an empty `name`")));
        }
        if !seen.insert((kind, name.clone())) {
            return Err(bad(format!("two {kind}s are named `{name}`")));
        }
    }
    if raw.mutant.is_empty() {
        // A mutation score over no mutant would be a gate over nothing.
        return Err(bad("no [[mutant]]: the catalogue must name at least one".to_string()));
    }
    for p in raw.parent {
        if p.file.contains("..") || Path::new(&p.file).is_absolute() {
            return Err(ScenarioError::file(
                &shown,
                format!(
                    "parent `{}`: file must be relative to the catalogue, without `..`",
                    p.name
                ),
            ));
        }
        if let Some(kind) = p
            .kinds
            .iter()
            .find(|k| !crate::model::GENERATED_KINDS.contains(&k.as_str()))
        {
            return Err(ScenarioError::file(
                &shown,
                format!("parent `{}`: unknown fault kind `{kind}`", p.name),
            ));
        }
        let file = dir.join(&p.file);
        let text = read_text(&file)?;
        let scenario = Scenario::from_str(&text, &file.display().to_string())?;
        texts.push((p.name.clone(), text));
        parents.push(Parent {
            name: p.name,
            file,
            scenario,
            kinds: p.kinds,
            latency_ms_max: p.latency_ms_max,
        });
    }
    let mut mutants = Vec::new();
    for m in raw.mutant {
        let Some((_, text)) = texts.iter().find(|(name, _)| *name == m.parent) else {
            return Err(ScenarioError::file(
                &shown,
                format!("mutant `{}`: no parent `{}`", m.name, m.parent),
            ));
        };
        let origin = format!("{shown} (mutant `{}`)", m.name);
        let mut table: toml::Table = toml::from_str(text).map_err(|e| ScenarioError::file(&origin, e.to_string()))?;
        let lock = table
            .entry("lock")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let toml::Value::Table(lock) = lock {
            // A mutant identical to its parent would be "survived" by construction.
            if m.lock.iter().all(|(key, value)| lock.get(key) == Some(value)) {
                return Err(bad(format!(
                    "mutant `{}`: `lock` changes nothing of parent `{}`'s [lock]",
                    m.name, m.parent
                )));
            }
            for (key, value) in &m.lock {
                lock.insert(key.clone(), value.clone());
            }
        }
        table.insert("name".into(), toml::Value::String(format!("mutant-{}", m.name)));
        table.insert("description".into(), toml::Value::String(m.breaks.clone()));
        let merged = toml::to_string(&table).map_err(|e| ScenarioError::file(&origin, e.to_string()))?;
        let scenario = Scenario::from_str(&merged, &origin)?;
        let change = toml::to_string(&m.lock).unwrap_or_default().trim().replace('\n', "; ");
        mutants.push(Mutant {
            name: m.name,
            parent: m.parent,
            breaks: m.breaks,
            source: m.source,
            change,
            scenario,
        });
    }
    Ok(Catalogue { parents, mutants })
}
