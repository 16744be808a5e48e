//! Issue 42: the seeds to the first implementation bug, which `lockstep explore` prints in its
//! console summary, are also fields of the summary JSON (`--summary FILE`, the `summary` of
//! `--json` and of report.json): `first_bug_seed` and `seeds_to_first_bug`, equal to what the
//! console says; a shard (whose count is not the whole's) carries the seed only; a summary of an
//! older build, without them, still loads.

use lockstep::explore::ExploreSummary;

use crate::common;
use common::lockstep;

const BUG: &str = "scenarios/bug-release-no-owner-check.toml";
const SAFE: &str = "scenarios/bug-release-no-owner-check-safe.toml";

/// `explore BUG ARGS --shrink 0 --jobs 2 --summary FILE`: the console and the summary file.
fn explore_with_summary(name: &str, args: &[&str]) -> (String, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!("lockstep-first-bug-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("summary.json");
    let file_arg = file.to_str().unwrap().to_string();
    let mut all = vec!["explore", BUG];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--shrink", "0", "--jobs", "2", "--summary", &file_arg]);
    let (code, out, err) = lockstep(&all);
    assert_eq!(code, 1, "a bug lock fails its exploration: {out}{err}");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    std::fs::remove_dir_all(&dir).ok();
    (out, serde_json::from_str(&text).unwrap())
}

/// The console's "seeds to the first implementation bug: N (seed S)": `(N, S)`.
fn console_first_bug(out: &str) -> (u64, u64) {
    let line = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("seeds to the first implementation bug: "))
        .unwrap_or_else(|| panic!("no seeds-to-first-bug line: {out}"));
    let (count, rest) = line.split_once(" (seed ").unwrap();
    (count.parse().unwrap(), rest.trim_end_matches(')').parse().unwrap())
}

#[test]
fn the_summary_json_carries_the_seeds_to_the_first_bug_the_console_prints() {
    for (name, args) in [
        ("default", vec!["--seed-range", "5..100"]),
        ("against", vec!["--seed-range", "5..100", "--against", SAFE]),
    ] {
        let (out, summary) = explore_with_summary(name, &args);
        let (count, seed) = console_first_bug(&out);
        assert!((5..100).contains(&seed), "{name}: seed {seed}");
        // Counted from the range's start, up to and including the bug seed.
        assert_eq!(count, seed - 5 + 1, "{name}");
        assert!(count <= 95, "{name}: {count}");
        assert_eq!(summary["seeds_to_first_bug"].as_u64(), Some(count), "{name}: {summary}");
        assert_eq!(summary["first_bug_seed"].as_u64(), Some(seed), "{name}: {summary}");
    }
}

#[test]
fn a_shard_carries_the_first_bug_seed_without_a_count_and_old_summaries_load() {
    let (out, summary) = explore_with_summary("shard", &["--seeds", "60", "--shard", "1/2"]);
    let seed = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("first implementation-bug seed: "))
        .unwrap_or_else(|| panic!("no first-bug line: {out}"))
        .parse::<u64>()
        .unwrap();
    assert_eq!(summary["first_bug_seed"].as_u64(), Some(seed), "{summary}");
    assert!(summary.get("seeds_to_first_bug").is_none(), "{summary}");
    // Not part of the outcome: shards and the whole still agree on its digest.
    let mut parsed: ExploreSummary = serde_json::from_value(summary.clone()).unwrap();
    assert_eq!(parsed.first_bug_seed, Some(seed));
    let digest = parsed.outcome_digest();
    parsed.first_bug_seed = None;
    assert_eq!(parsed.outcome_digest(), digest);
    // A summary written before the fields existed loads, without them.
    let mut old = summary;
    old.as_object_mut().unwrap().remove("first_bug_seed");
    let old: ExploreSummary = serde_json::from_value(old).unwrap();
    assert_eq!((old.first_bug_seed, old.seeds_to_first_bug), (None, None));
}

/// Issue 50, item 7: `--time-limit` keeps a reserve for the shrink once a bug seed is found. With
/// more seeds than the limit can run, the exploration stops a third of the limit early and the
/// first implementation-bug seed is shrunk (it used to explore to the limit and print "not
/// shrunk, the time limit ran out first").
#[test]
fn a_time_limit_keeps_a_reserve_for_shrinking_the_first_bug() {
    let (code, out, err) = lockstep(&[
        "explore",
        BUG,
        "--time-limit",
        "12",
        "--seeds",
        "1000000",
        "--jobs",
        "2",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("stopped by the time limit"), "{out}");
    assert!(!out.contains("not shrunk, the time limit ran out first"), "{out}");
    assert!(out.contains("shrunk seed "), "{out}");
}

/// Issue 50, item 6: a seed names a plan under one fault generator only. The summary, the console
/// and the counterexample say which; another version is refused, and so is merging two.
#[test]
fn the_generator_version_is_recorded_and_another_is_refused() {
    let version = lockstep::explore::GENERATOR_VERSION;
    let (out, json) = explore_with_summary("generator", &["--seeds", "3"]);
    assert_eq!(json["generator_version"], version, "{json}");
    assert!(out.contains(&format!("fault generator: v{version}")), "{out}");
    let (code, out, err) = lockstep(&[
        "explore",
        BUG,
        "--seeds",
        "1",
        "--generator-version",
        &(version + 1).to_string(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!("this build's fault generator is v{version}")),
        "{err}"
    );
    let (code, out, err) = lockstep(&[
        "explore",
        BUG,
        "--seeds",
        "1",
        "--shrink",
        "1",
        "--generator-version",
        &version.to_string(),
    ]);
    assert_eq!(code, 1, "this build's version is accepted: {out}{err}");
    assert!(out.contains(&format!("# Fault generator v{version}: seed ")), "{out}");
    // Two summaries of different generators do not merge.
    let dir = std::env::temp_dir().join(format!("lockstep-generator-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    let mut older = json.clone();
    older["generator_version"] = serde_json::json!(version + 7);
    std::fs::write(&a, serde_json::to_string(&json).unwrap()).unwrap();
    std::fs::write(&b, serde_json::to_string(&older).unwrap()).unwrap();
    let (code, out, err) = lockstep(&["merge", a.to_str().unwrap(), b.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains(&format!("fault generator v{}", version + 7)), "{err}");
}
