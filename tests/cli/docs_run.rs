//! The documentation runs as written: every example in README.md and the guide (docs/, every
//! `.md` under it) is executed or parsed, and every link in them resolves.
//!
//! - An output block (a ```` ```text ```` block whose first line is `$ cargo run --release -- ARGS`
//!   or `$ lockstep ARGS`) runs the binary with ARGS from the repository root and its stdout must
//!   be the rest of the block. Two wildcards keep wall-clock figures out of the comparison, as
//!   `trycmd` does: a line `...` matches any number of lines, and `[..]` inside a line matches any
//!   text.
//! - Every other block that looks like output (info string `text`, `console`, `output` or none)
//!   must be marked as not generated: its info string carries the word `illustrative`
//!   (```` ```text illustrative ````). A figure that drifts is then either caught or admitted.
//! - Every `lockstep` command in a ```` ```sh ```` block (written `cargo run --release -- ARGS` or
//!   `lockstep ARGS`) must parse — subcommand, flags and values — with the binary's own parser
//!   (`LOCKSTEP_PARSE_ONLY`: parse, then exit without running), and every scenario file or
//!   directory it names must exist. `docs_sh.rs` then runs each of them, with bounded seeds,
//!   runs and durations, and checks its exit code, files and what it prints.
//! - Every relative link (`[text](path)`, `![alt](path)`) names a file that exists, and its
//!   `#anchor`, if any, a heading of that file (GitHub's and mdBook's slugs).
//! - The guide is an mdBook (`docs/book.toml`, `src = "."`) whose `SUMMARY.md` lists every page,
//!   and the README is its front page: short, with the test command CI runs (`.ci/run`) first.

use std::path::{Path, PathBuf};

use crate::common;
use common::Lockstep;

pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every `.md` file under docs/, in a fixed order.
pub(crate) fn documents() -> Vec<PathBuf> {
    let mut docs = Vec::new();
    markdown_under(&root().join("docs"), &mut docs);
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("docs/").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            markdown_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// A path as the failure messages show it: from the repository root.
pub(crate) fn rel(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// A fenced block: its info string (`text`, `sh`, ...), its first line's number, its lines.
pub(crate) struct Block {
    pub(crate) info: String,
    pub(crate) line: usize,
    pub(crate) lines: Vec<String>,
}

pub(crate) fn blocks(text: &str) -> Vec<Block> {
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
pub(crate) fn lockstep_args(line: &str) -> Option<Vec<String>> {
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
                failures.push(format!("{}:{}: `{command}` printed:\n{stdout}", rel(&doc), block.line));
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
                let at = format!("{}:{}", rel(&doc), block.line + offset + 1);
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

/// Info strings of blocks that look like output: what a reader takes for a command's output.
fn looks_like_output(info: &str) -> bool {
    ["", "text", "console", "output"].contains(&info.split_whitespace().next().unwrap_or(""))
}

/// Whether a block is marked as not generated by a command the tests run.
fn is_illustrative(info: &str) -> bool {
    info.split_whitespace().any(|w| w == "illustrative")
}

/// Whether a block is one [`every_output_block_is_what_the_command_prints`] runs.
fn is_checked(block: &Block) -> bool {
    block.info == "text"
        && block
            .lines
            .first()
            .and_then(|l| l.strip_prefix("$ "))
            .is_some_and(|c| lockstep_args(c).is_some())
}

#[test]
fn every_output_like_block_is_checked_or_marked_illustrative() {
    let mut failures = Vec::new();
    let (mut checked, mut marked) = (0, 0);
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for block in blocks(&text).iter().filter(|b| looks_like_output(&b.info)) {
            if is_checked(block) {
                checked += 1;
            } else if is_illustrative(&block.info) {
                marked += 1;
            } else {
                failures.push(format!(
                    "{}:{}: a ```{} block that no test runs: start it with `$ lockstep ARGS` (its \
                     output is then compared) or mark it ```text illustrative",
                    rel(&doc),
                    block.line,
                    block.info
                ));
            }
        }
    }
    assert!(checked >= 5, "only {checked} checked output blocks");
    assert!(marked >= 1, "the illustrative marker is in use ({marked})");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The anchor a heading gets, as GitHub and mdBook make it: lower case, letters, digits, `-` and
/// `_` kept, blanks made `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_lowercase().next().unwrap_or(c)),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// Every anchor of a Markdown text: its headings' slugs (a repeated one numbered `-1`, `-2`, as
/// GitHub does) and explicit `id="..."` / `name="..."` anchors.
fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(heading) = line.strip_prefix('#') {
            let base = slug(heading.trim_start_matches('#'));
            let mut name = base.clone();
            let mut n = 0;
            while out.contains(&name) {
                n += 1;
                name = format!("{base}-{n}");
            }
            out.push(name);
        }
        for attr in ["id=\"", "name=\""] {
            let mut rest = line;
            while let Some(at) = rest.find(attr) {
                rest = &rest[at + attr.len()..];
                if let Some(end) = rest.find('"') {
                    out.push(rest[..end].to_string());
                }
            }
        }
    }
    out
}

/// The targets of the inline links and images of a Markdown text, with their line numbers:
/// outside fenced blocks and code spans.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Code spans are not links: drop the text between pairs of backticks.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split_whitespace().next().unwrap_or("").to_string();
            out.push((i + 1, target));
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let at = format!("{}:{line}: ({target})", rel(&doc));
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(path)
            };
            checked += 1;
            if !file.exists() {
                failures.push(format!("{at}: no such file"));
                continue;
            }
            // The guide is a book built from docs/ alone: a link out of it breaks there (issue
            // 52). Name such a file in code font (`reports/example/index.html`) instead.
            let docs = root().join("docs").canonicalize().unwrap();
            let inside = file.canonicalize().is_ok_and(|f| f.starts_with(&docs));
            if doc.starts_with(root().join("docs")) && !inside {
                failures.push(format!(
                    "{at}: leaves docs/, and so breaks in the built book: name the file in code font"
                ));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if file.extension().is_some_and(|e| e == "md") {
                let target_text = std::fs::read_to_string(&file).unwrap();
                if !anchors(&target_text).iter().any(|a| a == anchor) {
                    failures.push(format!("{at}: no heading of {} has the anchor #{anchor}", rel(&file)));
                }
            }
        }
    }
    assert!(checked >= 50, "only {checked} relative links found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_guide_is_a_book_whose_summary_lists_every_page() {
    let book = std::fs::read_to_string(root().join("docs/book.toml")).expect("docs/book.toml");
    assert!(
        book.lines().any(|l| l.replace(' ', "") == "src=\".\""),
        "docs/book.toml keeps the pages where they are: src = \".\""
    );
    let summary = std::fs::read_to_string(root().join("docs/SUMMARY.md")).expect("docs/SUMMARY.md");
    let listed: Vec<String> = links(&summary).into_iter().map(|(_, t)| t).collect();
    let mut missing = Vec::new();
    for doc in documents().iter().skip(1) {
        let page = doc.strip_prefix(root().join("docs")).unwrap().display().to_string();
        if page != "SUMMARY.md" && !listed.contains(&page) {
            missing.push(page);
        }
    }
    assert!(missing.is_empty(), "docs/SUMMARY.md does not list {missing:?}");
}

/// The pages SUMMARY.md lists under its `# NAME` part, in order.
fn summary_part(name: &str) -> Vec<String> {
    let summary = std::fs::read_to_string(root().join("docs/SUMMARY.md")).unwrap();
    let part = summary
        .split("\n# ")
        .find(|p| p.starts_with(&format!("{name}\n")))
        .unwrap_or_else(|| panic!("docs/SUMMARY.md has no `# {name}` part"));
    links(part).into_iter().map(|(_, t)| t).collect()
}

/// Issue 52: the task pages are what a user reads to get a job done — under 12,000 words in
/// all (they were 30,000, with internals and history among them); reference pages hold the rest.
#[test]
fn the_task_pages_stay_under_twelve_thousand_words() {
    let pages = summary_part("Tasks");
    assert!(pages.len() >= 4, "{pages:?}");
    let counts: Vec<(String, usize)> = pages
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(root().join("docs").join(p)).unwrap();
            (p.clone(), text.split_whitespace().count())
        })
        .collect();
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    assert!(total < 12_000, "the task pages have {total} words: {counts:?}");
}

/// Issue 52: one order of the pages everywhere. SUMMARY.md is the source; the README's list of
/// the guide and the introduction's "How this guide is organised" name every page in its order.
#[test]
fn the_readme_and_the_introduction_list_the_pages_in_the_summary_s_order() {
    let summary: Vec<String> = ["Tasks", "Reference"].iter().flat_map(|p| summary_part(p)).collect();
    let listed = |file: &str, heading: &str, prefix: &str| -> Vec<String> {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        let at = text.find(heading).unwrap_or_else(|| panic!("{file} has no {heading}"));
        let section = &text[at + heading.len()..];
        let section = &section[..section.find("\n#").unwrap_or(section.len())];
        let mut pages: Vec<String> = Vec::new();
        for (_, target) in links(section) {
            let page = target
                .split('#')
                .next()
                .unwrap_or("")
                .trim_start_matches(prefix)
                .to_string();
            if page.ends_with(".md") && page != "SUMMARY.md" && page != "introduction.md" && !pages.contains(&page) {
                pages.push(page);
            }
        }
        pages
    };
    assert_eq!(
        listed("README.md", "## The guide", "docs/"),
        summary,
        "README.md's list of the guide"
    );
    assert_eq!(
        listed("docs/introduction.md", "## How this guide is organised", ""),
        summary,
        "docs/introduction.md's order of the guide"
    );
}

#[test]
fn the_readme_is_a_front_page_whose_test_command_is_what_ci_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md is a front page: {lines} lines (the rest belongs in docs/)"
    );
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let command = ci
        .lines()
        .rev()
        .find(|l| l.starts_with("cargo test"))
        .expect(".ci/run runs a `cargo test` command");
    let first = blocks(&readme)
        .into_iter()
        .find(|b| b.info == "sh")
        .expect("the README opens with a ```sh block of commands");
    assert!(
        first.lines.iter().any(|l| l.trim() == command),
        "the README's first commands include `{command}`, the command .ci/run runs"
    );
    assert!(
        first.lines.iter().any(|l| lockstep_args(l).is_some()),
        "the README's first commands include a lockstep run"
    );
}

#[test]
fn links_and_anchors_are_read_as_github_reads_them() {
    assert_eq!(
        slug("The assumption-bounded profile (`--bounded`)"),
        "the-assumption-bounded-profile---bounded"
    );
    assert_eq!(slug("Exploration: finding failures"), "exploration-finding-failures");
    assert_eq!(anchors("# A\n```\n# not a heading\n```\n## A\n"), ["a", "a-1"]);
    assert_eq!(
        links("see [x](a.md#b) and `[y](not-a-link)` and ![z](c.png)"),
        [(1, "a.md#b".to_string()), (1, "c.png".to_string())]
    );
    assert!(looks_like_output("text") && looks_like_output("") && !looks_like_output("sh"));
    assert!(is_illustrative("text illustrative") && !is_illustrative("text"));
    // An output block without its command is neither run nor marked: the rule rejects it.
    let block = |info: &str, first: &str| Block {
        info: info.to_string(),
        line: 1,
        lines: vec![first.to_string()],
    };
    assert!(is_checked(&block("text", "$ lockstep run x.toml")));
    assert!(!is_checked(&block("text", "exploration of x")));
    assert!(!is_checked(&block("text", "$ ls")));
    assert!(!is_checked(&block("text illustrative", "$ lockstep run x.toml")));
    // The first column of a table after a given line.
    assert_eq!(
        table_column(
            "x\n| field | type |\n|---|---|\n| `v` | integer |\n| `seed` | integer |\n\nmore",
            "| field |"
        ),
        ["v", "seed"]
    );
}

/// The first cells of the rows of the first table after the line `after` in `text`.
fn table_column(text: &str, after: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with(after))
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|l| l.trim_matches('|').split('|').next())
        .map(|c| c.trim().trim_matches('`').to_string())
        .collect()
}

#[test]
fn the_jsonl_page_lists_exactly_the_fields_a_line_has() {
    let page = std::fs::read_to_string(root().join("docs/explore-jsonl.md")).unwrap();
    let mut documented = table_column(&page, "| field |");
    documented.sort();
    let jsonl = common::TempPath::unused("docs-jsonl", "seeds.jsonl");
    let args = [
        "explore",
        "--algorithm",
        "token-release",
        "--seeds",
        "1",
        "--shrink",
        "0",
        "--against",
        "naive",
        "--jsonl",
    ];
    let (_, _, stderr) = Lockstep::new(args.iter().copied().chain([jsonl.to_str().unwrap()])).run();
    let text = std::fs::read_to_string(&*jsonl).unwrap_or_else(|e| panic!("no JSON lines ({e}): {stderr}"));
    let line: serde_json::Value = serde_json::from_str(text.lines().next().expect("one line")).unwrap();
    let mut written: Vec<String> = line.as_object().expect("an object").keys().cloned().collect();
    written.sort();
    assert_eq!(
        documented, written,
        "docs/explore-jsonl.md's table lists the fields `--jsonl` writes (with a reference lock)"
    );
}
