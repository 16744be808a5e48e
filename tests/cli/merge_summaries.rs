//! `lockstep merge` over exploration summaries, through the binary (issue 13, finding 3): the
//! shards of one run merge into the unsharded outcome; a summary given twice, overlapping seed
//! ranges and summaries of different runs are refused (exit 2, naming both files); summaries of
//! older builds (no run identity) merge with a warning, unless identical. A guided strategy
//! (anchored, mixed) shards (issue 53): each shard a process of its own, deterministic, merged
//! into the gate, which fails when a shard is missing; summaries of different strategies never
//! merge as one run; bounded shards merge, their assumption counts added up; `--shard` alone
//! explores as the whole run would (guided).

use lockstep::explore::summary::ExploreSummary;
use std::path::{Path, PathBuf};

use crate::common;
use common::lockstep_in as lockstep;

fn temp(name: &str) -> common::TempPath {
    common::TempPath::dir("merge", name)
}

/// `lockstep explore` of the standard template with `args`, its summary written to `dir/file`.
/// Random placement: each seed's case depends on the seed alone, so shards reproduce the whole
/// run seed for seed (guided placement feeds coverage forward from earlier seeds).
fn explore(dir: &Path, file: &str, args: &[&str]) -> ExploreSummary {
    explore_with(dir, file, &["--strategy", "random"], args)
}

/// `lockstep explore` with `strategy` (the strategy's own flags) and `args`.
fn explore_with(dir: &Path, file: &str, strategy: &[&str], args: &[&str]) -> ExploreSummary {
    let mut all = vec!["explore", "--quiet"];
    all.extend_from_slice(strategy);
    all.extend_from_slice(&["--shrink", "0", "--jobs", "1", "--summary", file]);
    all.extend_from_slice(args);
    let (code, out, err) = lockstep(dir, &all);
    assert!(code == 0 || code == 1, "{out}\n{err}");
    read(&dir.join(file))
}

fn read(path: &Path) -> ExploreSummary {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_shards_of_one_run_merge_into_the_unsharded_outcome() {
    let dir = temp("shards");
    let whole = explore(&dir, "whole.json", &["--seeds", "6"]);
    let one = explore(&dir, "one.json", &["--seeds", "6", "--shard", "1/2"]);
    let two = explore(&dir, "two.json", &["--seeds", "6", "--shard", "2/2"]);
    assert_eq!((one.seeds_run, two.seeds_run), (3, 3));
    let run = |s: &ExploreSummary| s.run.clone().expect("a run identity").run_id;
    assert_eq!(run(&one), run(&whole));
    assert_eq!(run(&two), run(&whole));
    let (code, out, err) = lockstep(&dir, &["merge", "two.json", "one.json", "--out", "merged.json"]);
    assert_eq!(code, if whole.is_clean() { 0 } else { 1 }, "{out}\n{err}");
    assert!(out.contains("seeds run: 6"), "{out}");
    assert!(!err.contains("warning"), "{err}");
    let merged = read(&dir.join("merged.json"));
    assert_eq!(merged.seeds_run, 6);
    assert_eq!(merged.outcome_digest(), whole.outcome_digest());
    assert_eq!(merged.run.as_ref().unwrap().spans.len(), 2);

    // Disjoint seed ranges are shards too, and a merged summary merges on.
    explore(&dir, "low.json", &["--seed-range", "6..9"]);
    explore(&dir, "high.json", &["--seed-range", "9..12"]);
    let (code, out, err) = lockstep(
        &dir,
        &["merge", "merged.json", "high.json", "low.json", "--out", "all.json"],
    );
    assert!(code == 0 || code == 1, "{out}\n{err}");
    assert_eq!(read(&dir.join("all.json")).seeds_run, 12);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_summary_given_twice_or_overlapping_another_is_refused() {
    let dir = temp("twice");
    explore(&dir, "one.json", &["--seeds", "4", "--shard", "1/2"]);
    std::fs::copy(dir.join("one.json"), dir.join("copy.json")).unwrap();
    let (code, out, err) = lockstep(&dir, &["merge", "one.json", "one.json"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("twice") && err.contains("shard 1/2"), "{err}");
    assert!(out.is_empty(), "{out}");
    let (code, _, err) = lockstep(&dir, &["merge", "one.json", "copy.json", "--out", "m.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("one.json") && err.contains("copy.json"), "{err}");
    assert!(!dir.join("m.json").exists());

    // A shard and the whole run, or seed ranges that share seeds.
    explore(&dir, "whole.json", &["--seeds", "4"]);
    let (code, _, err) = lockstep(&dir, &["merge", "whole.json", "one.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("share seeds"), "{err}");
    explore(&dir, "range.json", &["--seed-range", "3..5"]);
    let (code, _, err) = lockstep(&dir, &["merge", "whole.json", "range.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("seeds 3..5") && err.contains("seeds 0..4"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shards_of_different_runs_are_refused_naming_both_files() {
    let dir = temp("mixed");
    explore(&dir, "a.json", &["--seeds", "4", "--shard", "1/2"]);
    explore(&dir, "b.json", &["--seeds", "4", "--shard", "2/2", "--faults-max", "1"]);
    explore(
        &dir,
        "c.json",
        &["--seeds", "4", "--shard", "2/2", "--algorithm", "naive"],
    );
    for other in ["b.json", "c.json"] {
        let (code, out, err) = lockstep(&dir, &["merge", "a.json", other]);
        assert_eq!(code, 2, "{out}\n{err}");
        assert!(
            err.contains("another run") && err.contains("a.json") && err.contains(other),
            "{err}"
        );
    }
    let (_, _, err) = lockstep(&dir, &["merge", "a.json", "c.json"]);
    assert!(
        err.contains("explore-naive") && err.contains("explore-token-release"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn summaries_without_a_run_identity_merge_with_a_warning_unless_identical() {
    let dir = temp("old");
    explore(&dir, "one.json", &["--seeds", "4", "--shard", "1/2"]);
    explore(&dir, "two.json", &["--seeds", "4", "--shard", "2/2"]);
    for name in ["one", "two"] {
        let mut value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap()).unwrap();
        value.as_object_mut().unwrap().remove("run").expect("a run field");
        std::fs::write(dir.join(format!("old-{name}.json")), value.to_string()).unwrap();
    }
    let (code, out, err) = lockstep(&dir, &["merge", "old-one.json", "old-two.json"]);
    assert!(code == 0 || code == 1, "{out}\n{err}");
    assert!(out.contains("seeds run: 4"), "{out}");
    assert!(err.contains("warning") && err.contains("no run identity"), "{err}");
    let (code, _, err) = lockstep(&dir, &["merge", "old-one.json", "old-one.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("same summary"), "{err}");
    let (code, _, err) = lockstep(&dir, &["merge", "old-one.json", "two.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("old-one.json") && err.contains("no run identity"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A shipped bug pair, explored with default flags (guided) as shards.
const BUG: &str = "scenarios/bug-release-no-owner-check.toml";
const SAFE: &str = "scenarios/bug-release-no-owner-check-safe.toml";

/// `lockstep explore FILE --seeds SEEDS --shard K/N` with default flags as a CI job runs it: its
/// own process, in its own directory, writing `shard-K.json` and `shard-K.jsonl` there. Returns the
/// exit code and the directory.
fn guided_shard(dir: &Path, name: &str, file: &str, seeds: &str, shard: &str, more: &[&str]) -> (i32, PathBuf) {
    let job = dir.join(name);
    std::fs::create_dir_all(&job).unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let k = shard.split('/').next().unwrap();
    let (summary, jsonl) = (format!("shard-{k}.json"), format!("shard-{k}.jsonl"));
    let mut args = vec![
        "explore",
        file.to_str().unwrap(),
        "--seeds",
        seeds,
        "--shard",
        shard,
        "--shrink",
        "0",
        "--jobs",
        "2",
        "--quiet",
        "--summary",
        &summary,
        "--jsonl",
        &jsonl,
    ];
    args.extend_from_slice(more);
    let (code, out, err) = lockstep(&job, &args);
    assert!(code == 0 || code == 1, "{shard}: {out}\n{err}");
    (code, job)
}

/// Issue 53: a guided exploration (the default `mixed`) shards: each shard is its own process
/// with its own corpus over its own seeds, deterministic from the range, K and N (the same shard
/// twice gives the same summary and the same per-seed records); `merge` unites them — signatures,
/// coverage growth, bug groups, the first bug seed and the seeds to it over the whole range — and
/// is the gate: the bug lock's merge fails, its twin's passes, and a merge missing a shard fails.
#[test]
fn shards_of_a_guided_exploration_run_apart_and_merge_into_the_gate() {
    let dir = temp("guided");
    let collect = |root: &Path, prefix: &str| -> Vec<PathBuf> {
        (1..=4)
            .map(|k| root.join(format!("{prefix}-{k}")).join(format!("shard-{k}.json")))
            .collect()
    };
    for k in 1..=4 {
        guided_shard(&dir, &format!("bug-{k}"), BUG, "40", &format!("{k}/4"), &[]);
        // The twin under lost packets only: a guided exploration that finds nothing at all.
        guided_shard(
            &dir,
            &format!("safe-{k}"),
            SAFE,
            "40",
            &format!("{k}/4"),
            &["--kinds", "loss"],
        );
    }
    let bug_parts: Vec<ExploreSummary> = collect(&dir, "bug").iter().map(|p| read(p)).collect();
    for part in &bug_parts {
        assert_eq!(part.seeds_run, 10);
        assert_eq!(part.strategy().map(|s| s.name()), Some("mixed"));
        assert!(
            part.coverage.as_ref().is_some_and(|c| !c.first_seen.is_empty()),
            "a shard lists its signatures"
        );
    }
    // The same shard again, in another directory: the same outcome and the same records.
    let (_, again) = guided_shard(&dir, "again-2", BUG, "40", "2/4", &[]);
    assert_eq!(
        read(&again.join("shard-2.json")).outcome_digest(),
        bug_parts[1].outcome_digest()
    );
    let records = |job: &Path| {
        let text = std::fs::read_to_string(job.join("shard-2.jsonl")).unwrap();
        let mut lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        lines.sort_by_key(|l| l["seed"].as_u64());
        lines
    };
    assert_eq!(records(&again), records(&dir.join("bug-2")));

    let args = |files: &[PathBuf], out: &str| -> Vec<String> {
        let mut all = vec!["merge".to_string()];
        all.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
        all.extend(["--out".to_string(), out.to_string()]);
        all
    };
    let run = |all: Vec<String>| {
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        lockstep(&dir, &all)
    };
    // The bug lock: the merge finds the bug (exit 1) and counts the seeds to it over 0..40.
    let (code, out, err) = run(args(&collect(&dir, "bug"), "bug.json"));
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(!err.contains("warning"), "{err}");
    let merged = read(&dir.join("bug.json"));
    assert_eq!(merged.seeds_run, 40);
    let first = merged.first_bug_seed.expect("the bug lock's merge holds a bug seed");
    assert_eq!(merged.seeds_to_first_bug, Some(first + 1), "{out}");
    assert!(
        out.contains(&format!(
            "seeds to the first implementation bug: {} (seed {first})",
            first + 1
        )),
        "{out}"
    );
    let smallest = bug_parts.iter().filter_map(|p| p.first_bug_seed).min();
    assert_eq!(Some(first), smallest);
    // Groups: every shard's classes, counts added.
    let mut classes: std::collections::BTreeMap<String, u64> = Default::default();
    for part in &bug_parts {
        for c in &part.bug_groups.classes {
            *classes.entry(c.class.describe()).or_default() += c.seeds;
        }
    }
    let merged_classes: std::collections::BTreeMap<String, u64> = merged
        .bug_groups
        .classes
        .iter()
        .map(|c| (c.class.describe(), c.seeds))
        .collect();
    assert!(!merged_classes.is_empty());
    assert_eq!(merged_classes, classes);
    // Coverage: the signatures united (no more than the shards' sum), the growth over the range.
    let coverage = merged.coverage.expect("merged coverage");
    let sum: u64 = bug_parts
        .iter()
        .map(|p| p.coverage.as_ref().unwrap().signatures_distinct)
        .sum();
    let most = bug_parts
        .iter()
        .map(|p| p.coverage.as_ref().unwrap().signatures_distinct)
        .max()
        .unwrap();
    assert!(coverage.signatures_distinct <= sum && coverage.signatures_distinct >= most);
    assert_eq!(coverage.growth.last(), Some(&(40, coverage.signatures_distinct)));
    assert_eq!(coverage.growth.first().map(|g| g.0), Some(32));
    // The twin (lost packets only): every shard merged, nothing found, the gate passes.
    let (code, out, err) = run(args(&collect(&dir, "safe"), "safe.json"));
    assert_eq!(code, 0, "{out}\n{err}");
    // A shard missing: the gate fails, naming what is missing.
    let (code, out, err) = run(args(&collect(&dir, "safe")[..3], "part.json"));
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("only shards 1, 2, 3 of 4 merged"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn summaries_of_different_strategies_do_not_merge_and_bounded_shards_do() {
    let dir = temp("strategies");
    explore(&dir, "random.json", &["--seeds", "4", "--shard", "1/2"]);
    let bounded_one = explore_with(&dir, "b1.json", &["--bounded"], &["--seeds", "4", "--shard", "1/2"]);
    let bounded_two = explore_with(&dir, "b2.json", &["--bounded"], &["--seeds", "4", "--shard", "2/2"]);
    let whole = explore_with(&dir, "bw.json", &["--bounded"], &["--seeds", "4"]);
    let strategy = |s: &ExploreSummary| s.run.as_ref().and_then(|r| r.strategy).map(|s| s.name());
    assert_eq!(strategy(&bounded_one), Some("bounded"));
    assert_eq!(strategy(&read(&dir.join("random.json"))), Some("random"));
    // Without --strategy, a shard explores as the whole run would: guided (issue 53).
    let default_shard = explore_with(&dir, "d.json", &[], &["--seeds", "4", "--shard", "1/2"]);
    assert_eq!(strategy(&default_shard), Some("mixed"));
    let unsharded = explore_with(&dir, "u.json", &[], &["--seeds", "4"]);
    assert_eq!(strategy(&unsharded), Some("mixed"));
    let (code, out, err) = lockstep(&dir, &["merge", "random.json", "b2.json"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("strategy bounded") && err.contains("with random") && err.contains("different strategies"),
        "{err}"
    );
    // Bounded placement is random placement: its shards merge into the whole run, assumption
    // counts included.
    let (code, out, err) = lockstep(&dir, &["merge", "b2.json", "b1.json", "--out", "bm.json"]);
    // The exit code `explore --bounded` gives: 1 only for an implementation bug.
    assert_eq!(
        code,
        if whole.is_clean_against_reference() { 0 } else { 1 },
        "{out}\n{err}"
    );
    let merged = read(&dir.join("bm.json"));
    assert_eq!(merged.outcome_digest(), whole.outcome_digest());
    let counts = merged.assumptions.expect("bounded counts");
    let parts = [&bounded_one, &bounded_two].map(|s| s.assumptions.clone().expect("bounded counts"));
    assert_eq!(
        counts.seeds_in_bounds,
        parts[0].seeds_in_bounds + parts[1].seeds_in_bounds
    );
    assert_eq!(Some(counts), whole.assumptions);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_summary_with_a_malformed_span_is_bad_input() {
    let dir = temp("span");
    explore(&dir, "one.json", &["--seeds", "4", "--shard", "1/2"]);
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("one.json")).unwrap()).unwrap();
    value["run"]["spans"][0]["shard_index"] = serde_json::json!(0);
    std::fs::write(dir.join("bad.json"), value.to_string()).unwrap();
    let (code, _, err) = lockstep(&dir, &["merge", "bad.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.json") && err.contains("run.spans"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_exploration_shard_without_seeds_is_bad_input() {
    let dir = temp("empty-shard");
    let (code, out, err) = lockstep(&dir, &["explore", "--seeds", "3", "--shard", "4/4", "--quiet"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("--shard 4/4") && err.contains("0..3"), "{err}");
    assert!(!out.contains("seeds run"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

mod fuzz {
    //! `merge` over summaries with random seed spans: it accepts exactly the spans that share
    //! no seed, and never panics on any span.
    use super::*;
    use lockstep::report::merge::{merge_texts, Merged};
    use proptest::prelude::*;
    use std::sync::OnceLock;

    /// One real summary, as JSON.
    fn summary() -> &'static serde_json::Value {
        static JSON: OnceLock<serde_json::Value> = OnceLock::new();
        JSON.get_or_init(|| {
            let dir = temp("fuzz");
            explore(&dir, "s.json", &["--seeds", "2"]);
            let value = serde_json::from_str(&std::fs::read_to_string(dir.join("s.json")).unwrap()).unwrap();
            let _ = std::fs::remove_dir_all(&dir);
            value
        })
    }

    fn with_span(start: u64, end: u64, index: u64, count: u64) -> String {
        let mut value = summary().clone();
        value["run"]["spans"] = serde_json::json!([
            {"seeds_start": start, "seeds_end": end, "shard_index": index, "shard_count": count}
        ]);
        value.to_string()
    }

    fn seeds(start: u64, end: u64, index: u64, count: u64) -> Vec<u64> {
        (start..end).filter(|s| (s - start) % count == index - 1).collect()
    }

    fn small_span() -> impl Strategy<Value = (u64, u64, u64, u64)> {
        (0u64..30, 0u64..30, 1u64..6)
            .prop_flat_map(|(a, b, count)| (Just(a.min(b)), Just(a.max(b)), 1..=count, Just(count)))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn merge_accepts_exactly_the_spans_that_share_no_seed(a in small_span(), b in small_span()) {
            let texts = [
                (PathBuf::from("a.json"), with_span(a.0, a.1, a.2, a.3)),
                (PathBuf::from("b.json"), with_span(b.0, b.1, b.2, b.3)),
            ];
            let shared = seeds(a.0, a.1, a.2, a.3).iter().any(|s| seeds(b.0, b.1, b.2, b.3).contains(s));
            match merge_texts(&texts, None) {
                Ok(Merged::Summaries(merged, _) | Merged::Partial(merged, _)) => {
                    prop_assert!(!shared, "merged overlapping spans {a:?} {b:?}");
                    prop_assert_eq!(merged.run.unwrap().spans.len(), 2);
                }
                Ok(_) => prop_assert!(false, "summaries merged into a report"),
                Err(e) => {
                    prop_assert!(shared, "refused disjoint spans {a:?} {b:?}: {e}");
                    prop_assert!(e.contains("a.json") && e.contains("b.json"), "{e}");
                }
            }
        }

        #[test]
        fn merge_never_panics_on_any_span(
            a in (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
            b in (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
        ) {
            let texts = [
                (PathBuf::from("a.json"), with_span(a.0, a.1, a.2, a.3)),
                (PathBuf::from("b.json"), with_span(b.0, b.1, b.2, b.3)),
            ];
            let _ = merge_texts(&texts, None);
        }
    }
}
