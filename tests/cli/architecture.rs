//! The import graph follows the data, one way (see `docs/layout.md`).
//!
//! Two rules, checked by reading the source (no build needed):
//! 1. **No import cycle between files of a crate** (`src/`, `sim/src/`, `lockstep-redis/src/`,
//!    `lockstep-history/src/`). An edge is a path
//!    written `crate::…` or `super::…` in a file's code, resolved to the file that defines that
//!    module. A parent's `mod`/`pub use child::…` declaration of its own submodule is a
//!    declaration, not a dependency, and makes no edge.
//! 2. **No import against the flow** in `src/` and in `sim/src/`: each top-level module sits on
//!    a floor and a file may only name modules on its own floor or below. In `src/`: model →
//!    scenario front end → world (locks, workload, recorder) → history → checkers → application →
//!    report → CLI. In `sim/src/` (the engine): seeds, clocks and timers → the network, pauses and
//!    the machines → nodes and the component hooks → Redis' hosts on nodes → the accept loops →
//!    the resource and the Redis deployment → the world.
//! 3. **The crates stand on floors too**: `lockstep-history` (the vocabulary) → `lockstep-redis`
//!    → `lockstep-sim` → `lockstep` → `lockstep-turmoil`; a crate depends on lower crates
//!    only, so lockstep's Redis never depends on the engine.
//!
//! Test modules (`#[cfg(test)]` at the end of a file) and comments are ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floor of each top-level module of `src/` (`lib.rs` and `prelude.rs` only re-export).
const FLOORS: &[(&str, u8)] = &[
    ("model", 0),
    ("emit", 0),
    ("scenario", 1),
    ("lock", 2),
    ("workload", 2),
    ("ops", 2),
    ("history", 3),
    ("checker", 4),
    ("liveness", 4),
    ("app", 5),
    ("explore", 5),
    ("bench", 5),
    ("run", 5),
    ("gate", 5),
    ("live", 5),
    ("report", 6),
    ("harness", 7),
    ("main", 7),
];

/// Files that only re-export (the crate roots' facades): they may name any floor.
const FACADES: &[&str] = &["lib", "prelude"];

/// The floor of each top-level module of `sim/src/`, the engine (`lib.rs` only re-exports: the
/// engine's own files name `lockstep_history::…` and `lockstep_redis::…`, never the root's
/// re-exports of them).
const SIM_FLOORS: &[(&str, u8)] = &[
    ("seed", 0),
    ("clock", 0),
    ("timer", 0),
    ("wire", 1),
    ("pause", 1),
    ("machine", 1),
    ("node", 2),
    ("component", 2),
    ("redis", 3),
    ("serve", 4),
    ("resource", 5),
    ("deployment", 5),
    ("world", 6),
];

/// Test files of `sim/src/` that a `#[path]` attribute includes (not part of the graph).
const SIM_TEST_FILES: &[&str] = &["wire_tests"];

/// The floor of each crate of the workspace (its directory and its package name).
const CRATE_FLOORS: &[(&str, &str, u8)] = &[
    ("lockstep-history", "lockstep-history", 0),
    ("lockstep-redis", "lockstep-redis", 1),
    ("sim", "lockstep-sim", 2),
    (".", "lockstep", 3),
    ("lockstep-turmoil", "lockstep-turmoil", 4),
];

/// One source file: its module path (`checker::mutual_exclusion`; `a/mod.rs` is `a`) and its code without
/// comments and without the trailing test module.
struct SourceFile {
    module: Vec<String>,
    code: String,
    path: PathBuf,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file: comment lines dropped, cut at a `#[cfg(test)]` followed by a `mod`.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or("");
            let is_mod =
                next.starts_with("mod ") || next.starts_with("pub mod ") || next.starts_with("pub(crate) mod ");
            // An inline test module ends the file's code; `#[cfg(test)] mod tests;` names a
            // test-only file, skipped by `load`.
            if is_mod && next.contains('{') {
                break;
            }
        }
        if trimmed.starts_with("//") {
            continue;
        }
        // Drop a trailing line comment (good enough: `//` inside strings is rare in imports).
        let code = match trimmed.find(" //") {
            Some(at) => &trimmed[..at],
            None => trimmed,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

fn load(root: &Path) -> Vec<SourceFile> {
    let mut paths = Vec::new();
    rust_files(root, &mut paths);
    // Files declared `#[cfg(test)] mod name;` are test code: not part of the graph.
    let mut test_only: BTreeSet<PathBuf> = BTreeSet::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("readable source");
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for pair in lines.windows(2) {
            if pair[0].starts_with("#[cfg(test)]") {
                if let Some(name) = pair[1].strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                    let dir = if path
                        .file_name()
                        .is_some_and(|f| f == "mod.rs" || f == "lib.rs" || f == "main.rs")
                    {
                        path.parent().expect("parent").to_path_buf()
                    } else {
                        path.with_extension("")
                    };
                    test_only.insert(dir.join(format!("{name}.rs")));
                    test_only.insert(dir.join(name).join("mod.rs"));
                }
            }
        }
    }
    paths
        .into_iter()
        .filter(|path| !test_only.contains(path))
        .map(|path| {
            let rel = path.strip_prefix(root).expect("under root");
            let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            let last = module.pop().expect("file name");
            let stem = last.trim_end_matches(".rs").to_string();
            if stem != "mod" {
                module.push(stem);
            }
            let text = std::fs::read_to_string(&path).expect("readable source");
            SourceFile {
                module,
                code: code_of(&text),
                path,
            }
        })
        .collect()
}

/// Every module path a file's code names, made absolute (`use a::{b, c::D}` groups give one
/// path per member): written `crate::…`, `super::…` or `self::…`, or bare through one of the
/// file's own child modules (`expect::run_status` in `run/mod.rs` names `run::expect`). A
/// re-export of a child (`pub use child::…`) and its `mod` line are declarations, not uses.
fn referenced_paths(file: &SourceFile, children: &[String]) -> Vec<Vec<String>> {
    let mut found = referenced_anchored(file);
    let code = file.code.as_str();
    for child in children {
        let needle = format!("{child}::");
        let mut start = 0;
        while let Some(pos) = code[start..].find(&needle) {
            let at = start + pos;
            start = at + needle.len();
            if let Some(prev) = code[..at].chars().last() {
                if prev.is_alphanumeric() || prev == '_' || prev == ':' {
                    continue;
                }
            }
            let line_start = code[..at].rfind('\n').map_or(0, |i| i + 1);
            let before = code[line_start..at].trim();
            if before.starts_with("pub use") || before.starts_with("pub(crate) use") {
                continue; // a re-export of the child: a declaration
            }
            collect_paths(file.module.clone(), &code[at..], &mut found);
        }
    }
    found
}

/// The paths of [`referenced_paths`] written `crate::…`, `super::…` or `self::…`.
fn referenced_anchored(file: &SourceFile) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let code = file.code.as_str();
    for anchor in ["crate::", "super::", "self::"] {
        let mut start = 0;
        while let Some(pos) = code[start..].find(anchor) {
            let at = start + pos;
            start = at + anchor.len();
            // Must start a path (not `mycrate::` nor the second `super::` of `super::super::`).
            if let Some(prev) = code[..at].chars().last() {
                if prev.is_alphanumeric() || prev == '_' || prev == ':' {
                    continue;
                }
            }
            // `super` of module `a::b` is `a` (a `mod.rs` file's module path has no `mod`).
            let mut base: Vec<String> = Vec::new();
            if anchor == "super::" {
                base = file.module.clone();
                base.pop();
            }
            if anchor == "self::" {
                base = file.module.clone();
            }
            let mut rest = &code[at + anchor.len()..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            collect_paths(base, rest, &mut found);
        }
    }
    found
}

/// Reads `ident::ident::…` from `rest` after `prefix`; a `{…}` group adds each member.
fn collect_paths(prefix: Vec<String>, rest: &str, found: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut rest = rest;
    loop {
        let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if ident.is_empty() || ident == "self" {
            break;
        }
        path.push(ident.clone());
        rest = &rest[ident.len()..];
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    if let Some(group) = rest.strip_prefix('{') {
        // Members up to the matching brace, split at top-level commas.
        let mut depth = 0usize;
        let mut member = String::new();
        let mut members = Vec::new();
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    members.push(std::mem::take(&mut member));
                    continue;
                }
                _ => {}
            }
            member.push(c);
        }
        members.push(member);
        for m in members {
            collect_paths(path.clone(), m.trim(), found);
        }
        return;
    }
    if !path.is_empty() {
        found.push(path);
    }
}

/// The file (index) defining the longest prefix of `path`.
fn resolve(files: &[SourceFile], path: &[String]) -> Option<usize> {
    (1..=path.len())
        .rev()
        .find_map(|len| files.iter().position(|f| f.module == path[..len]))
}

/// The names of `file`'s child modules (files one level below its module).
fn children(files: &[SourceFile], file: &SourceFile) -> Vec<String> {
    files
        .iter()
        .filter(|f| f.module.len() == file.module.len() + 1 && f.module.starts_with(&file.module))
        .filter_map(|f| f.module.last().cloned())
        .collect()
}

/// The import graph between files: with `bare`, paths through child modules count too.
fn graph(files: &[SourceFile], bare: bool) -> BTreeMap<usize, BTreeSet<usize>> {
    let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (i, file) in files.iter().enumerate() {
        let paths = match bare {
            true => referenced_paths(file, &children(files, file)),
            false => referenced_anchored(file),
        };
        for path in paths {
            if let Some(j) = resolve(files, &path) {
                // A module's own root (lib.rs / main.rs, module path []) is never a target.
                if j != i && !files[j].module.is_empty() {
                    edges.entry(i).or_default().insert(j);
                }
            }
        }
    }
    edges
}

/// Strongly connected components with more than one file (Tarjan).
fn cycles(n: usize, edges: &BTreeMap<usize, BTreeSet<usize>>) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a BTreeMap<usize, BTreeSet<usize>>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        let targets: Vec<usize> = s.edges.get(&v).map(|t| t.iter().copied().collect()).unwrap_or_default();
        for w in targets {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().expect("non-empty stack");
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The import cycles among `files`: any cycle of `crate::`/`super::`/`self::` paths, and any
/// cycle through files of two top-level modules once bare child paths count too (a module's
/// `mod.rs` calling into its own children while they use its items is one unit; a circle from
/// one top-level module into another and back is not).
fn cycle_report(files: &[SourceFile]) -> Vec<String> {
    let name = |c: &[usize]| -> Vec<String> { c.iter().map(|&i| files[i].path.display().to_string()).collect() };
    let anchored = cycles(files.len(), &graph(files, false));
    let mut out: Vec<String> = anchored
        .iter()
        .map(|c| format!("import cycle among {} files: {}", c.len(), name(c).join(", ")))
        .collect();
    for c in cycles(files.len(), &graph(files, true)) {
        if anchored.contains(&c) {
            continue;
        }
        let tops: BTreeSet<&str> = c
            .iter()
            .filter_map(|&i| files[i].module.first().map(String::as_str))
            .collect();
        if tops.len() > 1 {
            out.push(format!(
                "import cycle across modules {} ({} files): {}",
                tops.into_iter().collect::<Vec<_>>().join(", "),
                c.len(),
                name(&c).join(", ")
            ));
        }
    }
    out
}

fn root_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The cycles between top-level modules (a module is all its files), every path form counted.
fn module_cycle_report(files: &[SourceFile]) -> Vec<String> {
    let tops: Vec<String> = files
        .iter()
        .filter_map(|f| f.module.first().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index = |f: &SourceFile| f.module.first().and_then(|t| tops.iter().position(|x| x == t));
    let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (from, targets) in graph(files, true) {
        for to in targets {
            if let (Some(a), Some(b)) = (index(&files[from]), index(&files[to])) {
                if a != b {
                    edges.entry(a).or_default().insert(b);
                }
            }
        }
    }
    cycles(tops.len(), &edges)
        .into_iter()
        .map(|c| {
            let names: Vec<&str> = c.iter().map(|&i| tops[i].as_str()).collect();
            format!("modules import each other: {}", names.join(" <-> "))
        })
        .collect()
}

#[test]
fn no_import_cycle_between_modules() {
    for dir in ["src", "sim/src", "lockstep-redis/src", "lockstep-history/src"] {
        let files = load(&root_dir().join(dir));
        let problems = module_cycle_report(&files);
        assert!(problems.is_empty(), "{dir}: {}", problems.join("\n"));
    }
}

#[test]
fn no_import_cycle_between_files_of_src() {
    let files = load(&root_dir().join("src"));
    let problems = cycle_report(&files);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_import_cycle_between_files_of_sim() {
    for dir in ["sim/src", "lockstep-redis/src", "lockstep-history/src"] {
        let files = load(&root_dir().join(dir));
        let problems = cycle_report(&files);
        assert!(problems.is_empty(), "{dir}: {}", problems.join("\n"));
    }
}

/// Every import of `files` against the flow of `floors`. `strict`: a path to no module of the
/// floors (an item or module the crate root re-exports) is reported too.
fn flow_report(files: &[SourceFile], floors: &[(&str, u8)], skip: &[&str], strict: bool) -> Vec<String> {
    let floor_of = |top: &str| floors.iter().find(|(name, _)| *name == top).map(|(_, f)| *f);
    let mut problems = Vec::new();
    for file in files {
        let top = file.module.first().map(String::as_str).unwrap_or("lib");
        if FACADES.contains(&top) || skip.contains(&top) {
            continue;
        }
        let Some(own) = floor_of(top) else {
            problems.push(format!("{}: module `{top}` has no floor", file.path.display()));
            continue;
        };
        for path in referenced_anchored(file) {
            let Some(target) = path.first() else { continue };
            if FACADES.contains(&target.as_str()) {
                problems.push(format!(
                    "{}: imports through the facade `crate::{target}`",
                    file.path.display()
                ));
                continue;
            }
            match floor_of(target) {
                Some(floor) if floor > own => problems.push(format!(
                    "{}: `{}` (floor {own}) imports `crate::{}` (floor {floor}): against the flow",
                    file.path.display(),
                    top,
                    path.join("::")
                )),
                Some(_) => {}
                None if strict => problems.push(format!(
                    "{}: imports `crate::{}`, which the crate root re-exports: name the module or crate it is from",
                    file.path.display(),
                    path.join("::")
                )),
                None => {} // an item of the crate root (a macro or re-export); not a module
            }
        }
    }
    problems
}

#[test]
fn imports_follow_the_flow_in_src() {
    let files = load(&root_dir().join("src"));
    let problems = flow_report(&files, FLOORS, &[], false);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn imports_follow_the_flow_in_sim() {
    let files = load(&root_dir().join("sim/src"));
    let problems = flow_report(&files, SIM_FLOORS, SIM_TEST_FILES, true);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The `lockstep*` crates a manifest's `[dependencies]` names (not its dev-dependencies).
fn lockstep_dependencies(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut found = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && line.starts_with("lockstep") {
            let name: String = line
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            found.push(name);
        }
    }
    found
}

#[test]
fn crates_depend_on_lower_crates_only() {
    let mut problems = Vec::new();
    for (dir, name, own) in CRATE_FLOORS {
        let manifest = std::fs::read_to_string(root_dir().join(dir).join("Cargo.toml")).expect("manifest");
        for dep in lockstep_dependencies(&manifest) {
            match CRATE_FLOORS.iter().find(|(_, n, _)| *n == dep) {
                Some((_, _, floor)) if floor < own => {}
                Some((_, _, floor)) => problems.push(format!("{name} (floor {own}) depends on {dep} (floor {floor})")),
                None => problems.push(format!("{name} depends on {dep}, which has no floor in CRATE_FLOORS")),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The rule can fail: lockstep's Redis naming the engine would be against the flow.
    assert_eq!(
        lockstep_dependencies("[dependencies]\nlockstep-sim.workspace = true\n[dev-dependencies]\nlockstep-x = 1\n"),
        ["lockstep-sim"]
    );
}

#[test]
fn the_checker_finds_a_planted_cycle() {
    // The rule itself must be able to fail: two files naming each other form a cycle.
    let files = vec![
        SourceFile {
            module: vec!["a".into()],
            code: "use crate::b::Thing;\n".into(),
            path: "a.rs".into(),
        },
        SourceFile {
            module: vec!["b".into()],
            code: "use crate::a::Other;\n".into(),
            path: "b.rs".into(),
        },
        SourceFile {
            module: vec!["c".into()],
            code: "use crate::a::Other;\n".into(),
            path: "c.rs".into(),
        },
    ];
    let problems = cycle_report(&files);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("a.rs") && problems[0].contains("b.rs") && !problems[0].contains("c.rs"));
}

#[test]
fn the_checker_sees_a_circle_through_a_parents_bare_child_path() {
    // `a/mod.rs` calls `helper::go()` (its child, a bare path), `a/helper.rs` uses `crate::b`,
    // and `b` uses `crate::a`: a circle across modules a and b, invisible to `crate::` paths.
    let file = |module: &[&str], code: &str| SourceFile {
        module: module.iter().map(|m| m.to_string()).collect(),
        code: code.into(),
        path: module.join("/").into(),
    };
    let files = vec![
        file(
            &["a"],
            "pub mod helper;\npub use helper::Go;\npub fn run() { helper::go(); }\n",
        ),
        file(&["a", "helper"], "use crate::b::Thing;\n"),
        file(&["b"], "use crate::a::run;\n"),
    ];
    let problems = cycle_report(&files);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("across modules a, b"), "{problems:?}");
    // A re-export alone is a declaration: no circle.
    let files = vec![
        file(&["a"], "pub mod helper;\npub use helper::Go;\n"),
        file(&["a", "helper"], "use crate::b::Thing;\n"),
        file(&["b"], "use crate::a::run;\n"),
    ];
    assert!(cycle_report(&files).is_empty());
}

/// What only the application layer may call: anything that builds or runs a world.
const SIMULATION_ENTRY_POINTS: &[&str] = &[
    "World::new",
    "run_scenario",
    "run_with_lock",
    "run_guarded",
    "explore_with_lock",
    "explore::explore",
    "crate::app::",
];

#[test]
fn nothing_under_report_runs_a_simulation() {
    let files = load(&root_dir().join("src/report"));
    let mut problems = Vec::new();
    for file in &files {
        for name in SIMULATION_ENTRY_POINTS {
            if file.code.contains(name) {
                problems.push(format!("{} names `{name}`", file.path.display()));
            }
        }
    }
    assert!(problems.is_empty(), "report/ must only render: {}", problems.join("; "));
}

#[test]
fn main_only_parses_arguments_and_prints() {
    let main = std::fs::read_to_string(root_dir().join("src/main.rs")).expect("src/main.rs");
    let lines = main.lines().count();
    assert!(
        lines <= 300,
        "src/main.rs has {lines} lines; the CLI belongs in app/ and report/ (limit 300)"
    );
}

/// The longest a source file may be without being named, with its one job, in docs/layout.md.
const LONG_FILE_LINES: usize = 600;

#[test]
fn every_long_file_is_named_with_its_job_in_the_layout() {
    let layout = std::fs::read_to_string(root_dir().join("docs/layout.md")).expect("docs/layout.md");
    let start = layout.find("<!-- long files begin -->").expect("the begin marker");
    let end = layout.find("<!-- long files end -->").expect("the end marker");
    let table = &layout[start..end];
    let mut missing = Vec::new();
    let mut named = 0;
    for dir in [
        "src",
        "sim/src",
        "lockstep-redis/src",
        "lockstep-history/src",
        "lockstep-turmoil/src",
    ] {
        let mut paths = Vec::new();
        rust_files(&root_dir().join(dir), &mut paths);
        for path in paths {
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            if name == "tests" || name.ends_with("_tests") {
                continue;
            }
            let lines = std::fs::read_to_string(&path).expect("readable source").lines().count();
            let rel = path
                .strip_prefix(root_dir())
                .expect("in the repository")
                .to_string_lossy()
                .into_owned();
            if lines > LONG_FILE_LINES {
                named += 1;
                if !table.contains(&format!("| `{rel}` | ")) {
                    missing.push(format!("{rel} ({lines} lines)"));
                }
            }
        }
    }
    assert!(named > 0, "the walk found the long files");
    // And the table names no file that is gone or has become short.
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let rel = row.split('`').nth(1).unwrap_or_default();
        let lines = std::fs::read_to_string(root_dir().join(rel)).map(|t| t.lines().count());
        if !lines.as_ref().is_ok_and(|n| *n > LONG_FILE_LINES) {
            missing.push(format!("{rel}: in the table, but {lines:?} lines: take it out"));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/layout.md's table of files over {LONG_FILE_LINES} lines (split a file, or name its one job there):\n{}",
        missing.join("\n")
    );
}
