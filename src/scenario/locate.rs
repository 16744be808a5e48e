//! Positions in the source: dotted field paths, their spans (from toml's span-preserving
//! document), and byte offsets turned into lines and columns.

use std::fmt;
use std::ops::Range;
use toml::de::{DeTable, DeValue};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seg {
    /// A table key.
    Key(String),
    /// An array element (0-based).
    Index(usize),
}

/// A field path, e.g. `fault[2].node`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FieldPath(pub Vec<Seg>);

impl FieldPath {
    /// The path of dotted keys.
    pub fn keys(keys: &[&str]) -> Self {
        FieldPath(keys.iter().map(|k| Seg::Key((*k).to_string())).collect())
    }

    /// `table[index]`.
    pub fn item(table: &str, index: usize) -> Self {
        FieldPath(vec![Seg::Key(table.to_string()), Seg::Index(index)])
    }

    /// This path followed by `key`.
    pub fn key(&self, key: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(key.to_string()));
        FieldPath(segs)
    }

    /// This path without its last step.
    pub fn parent(&self) -> Option<Self> {
        if self.0.is_empty() {
            None
        } else {
            Some(FieldPath(self.0[..self.0.len() - 1].to_vec()))
        }
    }
}

fn is_bare_key(key: &str) -> bool {
    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    if is_bare_key(key) {
                        f.write_str(key)?;
                    } else {
                        write!(f, "{}", toml::Value::String(key.clone()))?;
                    }
                }
                Seg::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// One key or array element of the document.
#[derive(Debug, Clone)]
struct Entry {
    path: FieldPath,
    /// The key's span (none for array elements).
    key: Option<Range<usize>>,
    /// The value's span (a table header for tables written as `[header]`).
    value: Range<usize>,
}

/// Every key and element of a document with its span.
#[derive(Debug, Clone, Default)]
pub(super) struct Locator {
    entries: Vec<Entry>,
}

impl Locator {
    /// Indexes `source`; a document with syntax errors is indexed as far as toml recovers it.
    pub fn new(source: &str) -> Self {
        let (doc, _errors) = DeTable::parse_recoverable(source);
        let mut locator = Locator::default();
        locator.walk_table(&FieldPath::default(), doc.get_ref(), 0);
        locator
    }

    fn walk_table(&mut self, path: &FieldPath, table: &DeTable<'_>, depth: usize) {
        // Scenario files are shallow; the bound only keeps pathological input cheap.
        if depth > 16 {
            return;
        }
        for (key, value) in table.iter() {
            let child = path.key(key.get_ref());
            self.entries.push(Entry {
                path: child.clone(),
                key: Some(key.span()),
                value: value.span(),
            });
            self.walk_value(&child, value.get_ref(), depth + 1);
        }
    }

    fn walk_value(&mut self, path: &FieldPath, value: &DeValue<'_>, depth: usize) {
        match value {
            DeValue::Table(table) => self.walk_table(path, table, depth),
            DeValue::Array(items) => {
                if depth > 16 {
                    return;
                }
                for (index, item) in items.iter().enumerate() {
                    let mut segs = path.0.clone();
                    segs.push(Seg::Index(index));
                    let child = FieldPath(segs);
                    self.entries.push(Entry {
                        path: child.clone(),
                        key: None,
                        value: item.span(),
                    });
                    self.walk_value(&child, item.get_ref(), depth + 1);
                }
            }
            _ => {}
        }
    }

    /// The field an error span points at: the deepest key or value with exactly that span (an
    /// array of tables and its first element share the first header), else the smallest value
    /// span containing it.
    pub(crate) fn field_at(&self, span: &Range<usize>) -> Option<FieldPath> {
        if let Some(entry) = self
            .entries
            .iter()
            .filter(|e| e.key.as_ref() == Some(span) || &e.value == span)
            .max_by_key(|e| e.path.0.len())
        {
            return Some(entry.path.clone());
        }
        self.entries
            .iter()
            .filter(|e| e.value.start <= span.start && span.end <= e.value.end && e.value.start < e.value.end)
            .min_by_key(|e| e.value.end - e.value.start)
            .map(|e| e.path.clone())
    }

    /// The path of the last key named `name` written before byte `before`.
    pub(crate) fn preceding_key(&self, name: &str, before: usize) -> Option<FieldPath> {
        self.entries
            .iter()
            .filter(|e| matches!(e.path.0.last(), Some(Seg::Key(k)) if k == name))
            .filter_map(|e| e.key.as_ref().map(|k| (k.start, e)))
            .filter(|(start, _)| *start < before)
            .max_by_key(|(start, _)| *start)
            .map(|(_, e)| e.path.clone())
    }

    /// Where `path` is written: its key, or for an array element its value (the `[[header]]`).
    fn span_of(&self, path: &FieldPath) -> Option<Range<usize>> {
        self.entries
            .iter()
            .find(|e| &e.path == path)
            .map(|e| e.key.clone().unwrap_or_else(|| e.value.clone()))
    }

    /// Where the value of `path` is written.
    pub(crate) fn value_span_of(&self, path: &FieldPath) -> Option<Range<usize>> {
        self.entries.iter().find(|e| &e.path == path).map(|e| e.value.clone())
    }

    /// The span of `path`, or of its nearest written ancestor.
    pub(crate) fn nearest_span(&self, path: &FieldPath) -> Option<Range<usize>> {
        let mut current = Some(path.clone());
        while let Some(p) = current {
            if p.0.is_empty() {
                return None;
            }
            if let Some(span) = self.span_of(&p) {
                return Some(span);
            }
            current = p.parent();
        }
        None
    }
}

/// The 1-based line and column (in characters) of byte `offset` in `source`.
pub(super) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}
