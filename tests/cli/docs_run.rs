//! The documentation runs as written: every example in README.md and docs/*.md is executed.
//!
//! - An output block (a ```` ```text ```` block whose first line is `$ cargo run --release -- ARGS`
//!   or `$ lockstep ARGS`) runs the binary with ARGS from the repository root and its stdout must
//!   be the rest of the block. Two wildcards keep wall-clock figures out of the comparison, as
//!   `trycmd` does: a line `...` matches any number of lines, and `[..]` inside a line matches any
//!   text.
//! - Every `lockstep` command in a ```` ```sh ```` block (written `cargo run --release -- ARGS` or
//!   `lockstep ARGS`) must parse — subcommand, flags and values — with the binary's own parser
//!   (`LOCKSTEP_PARSE_ONLY`: parse, then exit without running), and every scenario file or
//!   directory it names must exist. Running them all would take an hour (explorations of
//!   thousands of seeds, live runs of other languages' libraries); their output is not shown.

use std::path::{Path, PathBuf};

use crate::common;
use common::Lockstep;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, in a fixed order.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

/// A fenced block: its info string (`text`, `sh`, ...), its first line's number, its lines.
struct Block {
    info: String,
    line: usize,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(fence) = trimmed.strip_prefix("```") {
            match open.take() {
                Some(block) => out.push(block),
                None => {
                    open = Some(Block {
                        info: fence.trim().to_string(),
                        line: i + 1,
                        lines: Vec::new(),
                    })
                }
            }
            continue;
        }
        if let Some(block) = &mut open {
            block.lines.push(line.to_string());
        }
    }
    out
}

/// The lockstep arguments of a command line written `cargo run --release -- ARGS` or
/// `lockstep ARGS` (shell operators, redirections and comments cut off), or `None`.
fn lockstep_args(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    let rest = line
        .strip_prefix("cargo run --release -- ")
        .or_else(|| line.strip_prefix("lockstep "))?;
    let end = [" | ", " && ", " > ", " 2>", " ; ", " #"]
        .iter()
        .filter_map(|op| rest.find(op))
        .min()
        .unwrap_or(rest.len());
    Some(shell_words(&rest[..end]))
}

/// Splits a command line as a shell would for the simple cases the docs use: whitespace
/// separates words, and single or double quotes keep a word whole.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Whether `actual` is what `expected` shows (`...` lines and `[..]` wildcards).
fn matches(expected: &[&str], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => (0..=actual.len()).any(|skip| matches(rest, &actual[skip..])),
        Some((first, rest)) => match actual.split_first() {
            Some((line, more)) => line_matches(first, line) && matches(rest, more),
            None => false,
        },
    }
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let (expected, actual) = (expected.trim_end(), actual.trim_end());
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let mut at = 0;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            if !actual.starts_with(part) {
                return false;
            }
            at = part.len();
        } else if i == parts.len() - 1 {
            return actual.len() >= at + part.len() && actual[at..].ends_with(part);
        } else {
            match actual[at..].find(part) {
                Some(found) => at += found + part.len(),
                None => return false,
            }
        }
    }
    true
}

fn trim_trailing_blank(mut lines: Vec<&str>) -> Vec<&str> {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines
}

#[test]
fn every_output_block_is_what_the_command_prints() {
    let mut ran = 0;
    let mut failures = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for block in blocks(&text).iter().filter(|b| b.info == "text") {
            let Some(command) = block.lines.first().and_then(|l| l.strip_prefix("$ ")) else {
                continue;
            };
            let Some(args) = lockstep_args(command) else {
                continue;
            };
            let (_, stdout, _) = Lockstep::new(&args).run();
            let expected = trim_trailing_blank(block.lines[1..].iter().map(String::as_str).collect());
            let actual = trim_trailing_blank(stdout.lines().collect());
            if !matches(&expected, &actual) {
                failures.push(format!(
                    "{}:{}: `{command}` printed:\n{stdout}",
                    doc.display(),
                    block.line
                ));
            }
            ran += 1;
        }
    }
    assert!(ran >= 2, "only {ran} output blocks found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Flags whose value is an output (it need not exist yet).
const OUTPUT_FLAGS: &[&str] = &["--out", "--report", "--summary", "--jsonl", "--history"];

#[test]
fn every_command_in_the_docs_parses_and_names_files_that_exist() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let shell = |b: &&Block| ["sh", "bash", "console", ""].contains(&b.info.as_str());
        for block in blocks(&text).iter().filter(shell) {
            // Lines continued with a backslash are one command.
            let joined = block.lines.join("\n").replace("\\\n", " ");
            for (offset, line) in joined.lines().enumerate() {
                let Some(args) = lockstep_args(line) else {
                    continue;
                };
                let at = format!("{}:{}", doc.display(), block.line + offset + 1);
                let (code, _, stderr) = Lockstep::new(&args).env("LOCKSTEP_PARSE_ONLY", "1").run();
                if code != 0 {
                    failures.push(format!("{at}: `{line}`: {stderr}"));
                }
                for (i, arg) in args.iter().enumerate() {
                    let is_output = i > 0 && OUTPUT_FLAGS.contains(&args[i - 1].as_str());
                    let names_file = arg.starts_with("scenarios/") || arg.starts_with("mutants/");
                    if names_file && !is_output && !arg.contains('*') && !root().join(arg).exists() {
                        failures.push(format!("{at}: `{line}` names {arg}, which does not exist"));
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} commands found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_wildcards_match_what_they_say() {
    assert!(line_matches(
        "throughput: [..] scenarios/s",
        "throughput: 12.5 scenarios/s"
    ));
    assert!(!line_matches(
        "throughput: [..] scenarios/s",
        "throughput: 12.5 seeds/s"
    ));
    assert!(matches(&["a", "...", "d"], &["a", "b", "c", "d"]));
    assert!(matches(&["a", "...", "d"], &["a", "d"]));
    assert!(!matches(&["a", "d"], &["a", "b", "d"]));
    assert_eq!(
        lockstep_args("cargo run --release -- run x.toml | head"),
        Some(vec!["run".to_string(), "x.toml".to_string()])
    );
    assert_eq!(
        shell_words("live f.toml --client 'python3 a.py' -q"),
        ["live", "f.toml", "--client", "python3 a.py", "-q"]
    );
}
