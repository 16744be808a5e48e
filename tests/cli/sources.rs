//! The project's citations resolve inside the repository.
//!
//! Scenario files and mutants open with a comment naming their source: a key such as `[K]` and,
//! usually, a quoted failure class such as "Client pause past the TTL", both cited next to
//! `docs/sources.md`. That page gives every key a heading that starts with the key
//! (`### [K] Kleppmann, …`) and every failure class a heading that is exactly its name
//! (`### Client pause past the TTL`). These tests hold the comments and the page to that
//! convention, and keep the project from citing files outside its repository.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The page every citation points to, relative to the repository root.
const SOURCES: &str = "docs/sources.md";

/// Paths outside the repository that must never be cited. Built with `concat!` so that this
/// file, which the walk also reads, does not contain them.
const OUTSIDE: [&str; 2] = [concat!("../", "sha", "red/"), concat!("sha", "red/", "literature")];

/// Every file under `dir` (recursively), sorted; `target` directories are skipped.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn files_under(rel: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(&root().join(rel), &mut out);
    out
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// The TOML files whose comments cite sources: scenarios (with `live/` and `libraries/`) and
/// mutants (the catalogue and its parents).
fn cited_toml_files() -> Vec<PathBuf> {
    let mut files = files_under("scenarios");
    files.extend(files_under("mutants"));
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    assert!(
        files.len() > 50,
        "the walk found the scenario and mutant files: {files:?}"
    );
    files
}

/// The paragraphs of a TOML file's full-line comments: consecutive `#` lines joined by a space,
/// so that a name wrapped over two lines reads whole. An empty `#` line or a line of TOML ends a
/// paragraph.
fn comment_paragraphs(text: &str) -> Vec<String> {
    let mut paragraphs = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let body = line.strip_prefix('#').map(str::trim).unwrap_or("");
        if body.is_empty() {
            if !current.is_empty() {
                paragraphs.push(current.join(" "));
                current.clear();
            }
        } else {
            current.push(body);
        }
    }
    if !current.is_empty() {
        paragraphs.push(current.join(" "));
    }
    paragraphs
}

/// A paragraph that cites a source: it names the sources page or says "Source:".
fn is_citation(paragraph: &str) -> bool {
    paragraph.contains(SOURCES) || paragraph.contains("Source:") || paragraph.contains("Sources:")
}

/// The key at the start of `s` if `s` starts with `[` and one to three capital letters closed
/// by `]` (`[K]`) or followed by ` in ` (`[D in docs/sources.md]`).
fn key_at(s: &str) -> Option<&str> {
    let inner = s.strip_prefix('[')?;
    let len = inner.bytes().take_while(u8::is_ascii_uppercase).count();
    if !(1..=3).contains(&len) {
        return None;
    }
    let rest = &inner[len..];
    (rest.starts_with(']') || rest.starts_with(" in ")).then(|| &inner[..len])
}

/// Every citation key in `text`: `[K]`, each of `[D][K]`, `[D in docs/sources.md]`.
fn keys_in(text: &str) -> Vec<String> {
    text.char_indices()
        .filter(|&(_, c)| c == '[')
        .filter_map(|(i, _)| key_at(&text[i..]))
        .map(String::from)
        .collect()
}

/// The failure classes a citation names: from the first mention of `docs/sources.md` on, every
/// quoted text that is followed by a key (`"Delayed write packet" [K]`), directly follows the
/// page (`docs/sources.md, "…"`) or is joined to another cited name by "and" (`… and "A master
/// restarts empty"`). Other quotations — titles, sentences quoted from a source — are not names.
fn section_names_in(paragraph: &str) -> Vec<String> {
    let Some(start) = paragraph.find(SOURCES) else {
        return Vec::new();
    };
    let cited = &paragraph[start..];
    let parts: Vec<&str> = cited.split('"').collect();
    let mut names = Vec::new();
    // Odd parts are quoted; the parts around one are the text before and after it.
    for i in (1..parts.len().saturating_sub(1)).step_by(2) {
        let (before, name, after) = (parts[i - 1], parts[i], parts[i + 1]);
        let followed_by_key = key_at(after.trim_start()).is_some();
        let after_page = before.ends_with(&format!("{SOURCES}, "));
        let joined = before.ends_with(" and ");
        if followed_by_key || after_page || joined {
            names.push(name.to_string());
        }
    }
    names
}

/// The headings of `docs/sources.md`: (keys, names). A heading that starts with `[X]` gives key
/// `X`; every heading's full text is a name.
fn sources_headings() -> (BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(root().join(SOURCES)).expect("docs/sources.md exists");
    let mut keys = BTreeSet::new();
    let mut names = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        if let Some(key) = key_at(heading).filter(|k| heading.starts_with(&format!("[{k}]"))) {
            keys.insert(key.to_string());
        }
        names.insert(heading.to_string());
    }
    (keys, names)
}

#[test]
fn no_file_cites_a_path_outside_the_repository() {
    let mut files = vec![root().join("README.md")];
    for dir in ["docs", "scenarios", "mutants", "src", "sim/src", "tests"] {
        files.extend(files_under(dir));
    }
    let mut offenders = Vec::new();
    let mut read = 0;
    for path in &files {
        let Ok(bytes) = std::fs::read(path) else { continue };
        // Binary files (charts, fixtures) are not prose.
        let Ok(text) = String::from_utf8(bytes) else { continue };
        read += 1;
        for (n, line) in text.lines().enumerate() {
            if OUTSIDE.iter().any(|needle| line.contains(needle)) {
                offenders.push(format!("{}:{}: {}", rel(path), n + 1, line.trim()));
            }
        }
    }
    assert!(read > 100, "the walk read the repository's text files ({read})");
    assert!(
        offenders.is_empty(),
        "cite {SOURCES} instead of a file outside the repository:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn every_cited_key_has_a_section_in_sources() {
    let (headings, _) = sources_headings();
    let mut cited = BTreeSet::new();
    let mut missing = Vec::new();
    for path in cited_toml_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        for paragraph in comment_paragraphs(&text).iter().filter(|p| is_citation(p)) {
            for key in keys_in(paragraph) {
                if !headings.contains(&key) {
                    missing.push(format!("{}: [{key}]", rel(&path)));
                }
                cited.insert(key);
            }
        }
    }
    // The parser found the citations (a broken parser must not pass vacuously).
    for key in ["K", "A", "D", "NR"] {
        assert!(cited.contains(key), "[{key}] is cited somewhere; found {cited:?}");
    }
    assert!(
        missing.is_empty(),
        "keys cited without a heading starting with `[X]` in {SOURCES} (headings: {headings:?}):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_cited_failure_class_is_a_heading_in_sources() {
    let (_, headings) = sources_headings();
    let mut cited = BTreeSet::new();
    let mut missing = Vec::new();
    for path in cited_toml_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        for paragraph in comment_paragraphs(&text) {
            for name in section_names_in(&paragraph) {
                if !headings.contains(&name) {
                    missing.push(format!("{}: \"{name}\"", rel(&path)));
                }
                cited.insert(name);
            }
        }
    }
    for name in [
        "Client pause past the TTL",
        "Release without a token check",
        "A master restarts empty",
    ] {
        assert!(cited.contains(name), "\"{name}\" is cited somewhere; found {cited:?}");
    }
    assert!(
        missing.is_empty(),
        "failure classes cited without a heading of that exact text in {SOURCES}:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_citing_scenario_names_the_sources_page() {
    // A "Source:" comment that cites a key must say where the key is explained.
    let mut missing = Vec::new();
    for path in cited_toml_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let paragraphs = comment_paragraphs(&text);
        let keyed = paragraphs.iter().any(|p| is_citation(p) && !keys_in(p).is_empty());
        if keyed && !paragraphs.iter().any(|p| p.contains(SOURCES)) {
            missing.push(rel(&path));
        }
    }
    assert!(
        missing.is_empty(),
        "cite keys next to {SOURCES}:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_parsers_read_the_conventions() {
    let paragraphs = comment_paragraphs(
        "# Title line.\n# Source: docs/sources.md, \"Redlock with a clock jump on one\n# master\" [K][A] \
         (\"a quote\") and \"Other class\" (x).\n#\n# [B] is not cited here.\nname = \"x\" # [C]\n",
    );
    assert_eq!(paragraphs.len(), 2, "{paragraphs:?}");
    assert_eq!(keys_in(&paragraphs[0]), ["K", "A"]);
    assert_eq!(keys_in("[D in docs/sources.md] [toml] [ABCD] [x]"), ["D"]);
    assert_eq!(
        section_names_in(&paragraphs[0]),
        ["Redlock with a clock jump on one master", "Other class"]
    );
    assert!(!is_citation(&paragraphs[1]));
    assert!(section_names_in("\"Title\" [D] docs/sources.md only").is_empty());
}
