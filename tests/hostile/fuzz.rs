//! Fuzzing on stable Rust (proptest), bounded in time (a fixed number of cases each, a few
//! seconds in all): the scenario parser on random TOML-ish text and on mutations of the shipped
//! scenarios (never panics; every error names its origin), and `merge`'s input on random and
//! mutated `report.json` files (never panics; nothing is written outside OUT). The RESP codec is
//! fuzzed in `sim/tests/fuzz_codec.rs`.

use lockstep::app::ci::{run_ci, CiOptions};
use lockstep::app::files::load_inputs;
use lockstep::report::merge::{merge_texts, Merged};
use lockstep::report::{write_report, Report};
use lockstep::scenario::Scenario;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shipped scenario files' texts.
fn shipped() -> &'static Vec<String> {
    static TEXTS: OnceLock<Vec<String>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        paths.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
    })
}

/// A small real report (the Kleppmann pair), as JSON.
fn report_json() -> &'static String {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let dir = root().join("scenarios");
        let inputs = load_inputs(&[
            dir.join("kleppmann-gc-pause.toml"),
            dir.join("kleppmann-gc-pause-fenced.toml"),
        ])
        .unwrap();
        Report::build(&run_ci(&inputs, &CiOptions::default()).unwrap()).to_json()
    })
}

/// A text mutation: replace a byte range with a fragment, or cut the text.
#[derive(Debug, Clone)]
enum Edit {
    Replace { at: usize, len: usize, with: String },
    Truncate(usize),
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"".to_string()),
        Just("[".to_string()),
        Just("]]".to_string()),
        Just("=".to_string()),
        Just("\n[[fault]]\n".to_string()),
        Just("\n[lock]\n".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551615".to_string()),
        Just("9223372036854775807".to_string()),
        Just("1e400".to_string()),
        Just("nan".to_string()),
        Just("\"../../x\"".to_string()),
        Just("\"a/b\"".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("null".to_string()),
        Just("é\u{0}".to_string()),
        "[ -~]{0,12}",
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), 0usize..8, fragment()).prop_map(|(at, len, with)| Edit::Replace { at, len, with }),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ]
}

/// Applies `edit` at char boundaries.
fn apply(text: &mut String, edit: &Edit) {
    let boundary = |text: &String, i: usize| {
        let mut i = i % (text.len() + 1);
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    match edit {
        Edit::Replace { at, len, with } => {
            let start = boundary(text, *at);
            let end = boundary(text, (start + len).min(text.len()));
            text.replace_range(start..end.max(start), with);
        }
        Edit::Truncate(at) => {
            let at = boundary(text, *at);
            text.truncate(at);
        }
    }
}

/// Every path under `dir`, relative.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_parser_never_panics_on_random_text(text in "[ -~\n]{0,300}") {
        if let Err(e) = Scenario::from_str(&text, "fuzz.toml") {
            prop_assert_eq!(e.path, "fuzz.toml");
        }
    }

    #[test]
    fn the_parser_never_panics_on_mutated_scenarios(
        which in any::<prop::sample::Index>(),
        edits in proptest::collection::vec(edit(), 1..5),
    ) {
        let texts = shipped();
        let mut text = texts[which.index(texts.len())].clone();
        for e in &edits {
            apply(&mut text, e);
        }
        match Scenario::from_str(&text, "mutated.toml") {
            Err(e) => {
                prop_assert_eq!(&e.path, "mutated.toml");
                prop_assert!(!e.message.is_empty());
            }
            // What parses writes back to TOML that parses to the same scenario.
            Ok(s) => prop_assert_eq!(Scenario::from_str(&s.to_toml(), "again.toml").ok(), Some(s)),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn merge_never_panics_on_mutated_reports(edits in proptest::collection::vec(edit(), 1..4)) {
        let mut text = report_json().clone();
        for e in &edits {
            apply(&mut text, e);
        }
        let _ = merge_texts(&[(PathBuf::from("mutated.json"), text)], None);
    }
}

/// Hostile values put into a report's string fields.
fn hostile_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("../../../../evil".to_string()),
        Just("x/../../y".to_string()),
        Just("/etc/passwd".to_string()),
        Just("..".to_string()),
        Just(".".to_string()),
        Just(String::new()),
        Just("a\\b".to_string()),
        Just("kleppmann-gc-pause".to_string()),
        Just("<script>alert(1)</script>".to_string()),
        "[a-z0-9/.-]{1,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// Names and files replaced by hostile strings: merged and written to OUT, nothing lands
    /// outside OUT.
    #[test]
    fn merge_writes_nothing_outside_out(
        names in proptest::collection::vec(hostile_string(), 4),
    ) {
        let mut value: serde_json::Value = serde_json::from_str(report_json()).unwrap();
        for (i, scenario) in value["scenarios"].as_array_mut().unwrap().iter_mut().enumerate() {
            scenario["name"] = names[2 * i].clone().into();
            scenario["file"] = names[2 * i + 1].clone().into();
        }
        let base = std::env::temp_dir().join(format!("lockstep-fuzz-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let out = base.join("out");
        let text = value.to_string();
        if let Ok(Merged::Reports { report, .. }) = merge_texts(&[(PathBuf::from("hostile.json"), text)], Some(&out)) {
            write_report(&report, &out).unwrap();
        }
        for path in tree(&base) {
            prop_assert!(path.starts_with("out"), "{} written outside OUT", path.display());
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}
