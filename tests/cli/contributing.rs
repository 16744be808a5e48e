//! docs/contributing.md's table of what each extension touches (a Redis command, a checker, a
//! built-in lock, a generated fault kind, a world fault) stays true: every file it names exists,
//! and each registry it names is defined in the file it says, found by reading the sources.

use std::path::{Path, PathBuf};

const GUIDE: &str = "docs/contributing.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The rows of the table between the `extensions` markers: (what, files column, registry column).
fn rows() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(root().join(GUIDE)).expect(GUIDE);
    let start = text.find("<!-- extensions begin -->").expect("the begin marker");
    let end = text.find("<!-- extensions end -->").expect("the end marker");
    text[start..end]
        .lines()
        .filter(|l| l.starts_with("| a"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 3, "{GUIDE}: a row has three cells: {l}");
            (cells[0].to_string(), cells[1].to_string(), cells[2].to_string())
        })
        .collect()
}

/// The `code spans` of a cell.
fn spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

fn is_path(span: &str) -> bool {
    span.contains('/') && span.ends_with(".rs")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source files (of every crate) that define `name`: a `macro_rules!`, a static, a const or
/// an enum of that name.
fn defined_in(name: &str) -> Vec<String> {
    let name = name.trim_end_matches('!');
    let mut files = Vec::new();
    for dir in ["src", "sim/src", "lockstep-redis/src", "lockstep-history/src"] {
        rust_files(&root().join(dir), &mut files);
    }
    let needles = [
        format!("macro_rules! {name} "),
        format!("static {name}: "),
        format!("const {name}: "),
        format!("pub enum {name} "),
    ];
    let mut found: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            text.lines().any(|l| needles.iter().any(|n| l.contains(n.as_str())))
        })
        .map(|f| {
            f.strip_prefix(root())
                .expect("in the repository")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    found.sort();
    found
}

#[test]
fn each_extension_names_files_that_exist_and_the_file_of_its_registry() {
    let rows = rows();
    let kinds: Vec<&str> = rows.iter().map(|(what, _, _)| what.as_str()).collect();
    for kind in [
        "a Redis command",
        "a checker",
        "a built-in lock",
        "a generated fault kind",
        "a world fault",
    ] {
        assert!(
            kinds.contains(&kind),
            "{GUIDE}'s table has no row for {kind}: {kinds:?}"
        );
    }
    let mut problems = Vec::new();
    for (what, files, registry) in &rows {
        for path in spans(files).into_iter().chain(spans(registry)).filter(|s| is_path(s)) {
            if !path.contains("NAME") && !root().join(path).is_file() {
                problems.push(format!("{what}: `{path}` does not exist"));
            }
        }
        let registry_spans = spans(registry);
        let [name, file] = registry_spans[..] else {
            problems.push(format!("{what}: the registry cell is `NAME` in `FILE`: {registry}"));
            continue;
        };
        let defined = defined_in(name);
        if defined != [file.to_string()] {
            problems.push(format!(
                "{what}: `{name}` is defined in {defined:?}, the guide says `{file}`"
            ));
        }
        if !spans(files).contains(&file) {
            problems.push(format!(
                "{what}: the registry's file `{file}` is not among the files it touches"
            ));
        }
    }
    assert!(problems.is_empty(), "{GUIDE}:\n{}", problems.join("\n"));
}

#[test]
fn the_check_can_fail() {
    // A registry the guide placed in the wrong file is found elsewhere by the same search.
    assert_eq!(defined_in("checker_registry!"), ["src/model/expect.rs"]);
    assert_ne!(defined_in("builtin_locks!"), ["src/model/expect.rs"]);
    assert!(defined_in("no_such_registry!").is_empty());
}
