//! `lockstep ci` and `lockstep merge` as CI runs them: exit codes, the files written, bad input
//! reported before anything runs.

use std::path::Path;

use crate::common;

use common::lockstep;

fn temp(name: &str) -> common::TempPath {
    common::TempPath::unused("ci", name)
}

fn shipped(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name)).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn exit_0_when_every_expectation_holds_and_the_report_is_complete() {
    let out = temp("ok");
    let (code, stdout, stderr) = lockstep(&[
        "ci",
        "scenarios/kleppmann-gc-pause.toml",
        "scenarios/kleppmann-gc-pause-fenced.toml",
        "--report",
        s(&out),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("PASS 2 scenario runs"), "{stdout}");
    assert!(
        stdout.contains("2 unsafe as expected · 0 safe as expected · 0 unexpected"),
        "{stdout}"
    );
    // Piped, not a terminal: no colour codes.
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
    for run in [
        "runs/kleppmann-gc-pause/history.jsonl",
        "runs/kleppmann-gc-pause/timeline.html",
        "viewer.js",
        "viewer.css",
    ] {
        assert!(out.join(run).is_file(), "{run} missing");
    }
    for file in [
        "report.json",
        "summary.md",
        "junit.xml",
        "index.html",
        "charts/timeline-kleppmann-gc-pause.svg",
        "charts/timeline-kleppmann-gc-pause.png",
        "charts/timeline-kleppmann-gc-pause-fenced.png",
    ] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
}

#[test]
fn exit_1_when_an_expectation_fails_with_the_replay_command() {
    let dir = temp("wrong");
    std::fs::create_dir_all(&dir).unwrap();
    let wrong = shipped("kleppmann-gc-pause.toml").replace("lost-update = \"invalid\"", "lost-update = \"valid\"");
    std::fs::write(dir.join("wrong.toml"), wrong).unwrap();
    let out = temp("wrong-out");
    let (code, stdout, stderr) = lockstep(&["ci", s(&dir), "--report", s(&out), "--quiet"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("lost-update is invalid but expected valid"), "{stdout}");
    assert!(stdout.contains("replay: lockstep run"), "{stdout}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("UNEXPECTED") && md.contains("**missed**: lost-update"),
        "{md}"
    );
}

#[test]
fn exit_1_when_an_exploration_misses_its_expectation() {
    let dir = temp("explore-wrong");
    std::fs::create_dir_all(&dir).unwrap();
    let source = shipped("explore-token-release-pause-crash.toml")
        .replace("seeds = 80", "seeds = 12")
        .replace("stale-write = \"none-invalid\"", "stale-write = \"some-invalid\"");
    std::fs::write(dir.join("x.toml"), source).unwrap();
    let out = temp("explore-wrong-out");
    let (code, stdout, stderr) = lockstep(&["ci", s(&dir), "--report", s(&out), "--quiet"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("exploration explore-token-release-pause-crash: stale-write"),
        "{stdout}"
    );
}

/// Issue 52: an exploration whose four expectations all held is "as expected" in `ci`'s
/// progress (it was "no expectation"), and its classification by the lock's assumptions is in
/// summary.md and index.html, not only in report.json.
#[test]
fn an_explorations_progress_line_and_rows_say_what_held_and_how_seeds_were_classified() {
    let dir = temp("explore-held");
    std::fs::create_dir_all(&dir).unwrap();
    let name = "explore-token-release-pause-crash.toml";
    std::fs::write(dir.join(name), shipped(name)).unwrap();
    let out = temp("explore-held-out");
    let (code, stdout, stderr) = lockstep(&["ci", s(&dir), "--report", s(&out)]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "ci: as expected (4 checkers without expectation) exploration explore-token-release-pause-crash (80 seeds"
        ),
        "{stderr}"
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    for (what, text) in [("summary.md", &md), ("index.html", &html)] {
        assert!(
            text.contains("assumptions: no implementation bug (0 seeds); ")
                && text.contains(" violating seeds outside them (plans broke "),
            "{what}: {text}"
        );
    }
}

#[test]
fn exit_2_on_bad_input_before_anything_runs() {
    // A file that does not parse: the error names the file and the field.
    let dir = temp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = shipped("kleppmann-gc-pause.toml").replace("[expect]", "[explore]\nkinds = [\"meteor\"]\n\n[expect]");
    std::fs::write(dir.join("bad.toml"), bad).unwrap();
    let out = temp("bad-out");
    let (code, stdout, stderr) = lockstep(&["ci", s(&dir), "--report", s(&out)]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("bad.toml") && stderr.contains("explore.kinds") && stderr.contains("meteor"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is written on bad input");

    // A missing file.
    let (code, _, stderr) = lockstep(&["ci", "scenarios/nope.toml", "--report", s(&out)]);
    assert_eq!(code, 2);
    assert!(stderr.contains("nope.toml"), "{stderr}");

    // An unwritable report directory: a clear error, before any scenario runs.
    let file = temp("a-file");
    std::fs::write(&file, "x").unwrap();
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = lockstep(&["ci", "scenarios", "--report", s(&file.join("out"))]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("report directory") && stderr.contains("cannot create"),
        "{stderr}"
    );
    assert!(!stderr.contains("ci: "), "a scenario ran: {stderr}");
    assert!(started.elapsed().as_secs() < 30);
    let (code, _, stderr) = lockstep(&["ci", "scenarios", "--report", s(&file)]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not a directory"), "{stderr}");

    // A bad option.
    let (code, _, _) = lockstep(&["ci", "scenarios", "--report", s(&out), "--shard", "3/2"]);
    assert_eq!(code, 2);
}

#[test]
fn shards_merge_into_one_report_and_a_missing_shard_is_bad_input() {
    let dir = temp("shards");
    std::fs::create_dir_all(&dir).unwrap();
    let source = shipped("explore-token-release-pause-crash.toml").replace("seeds = 80", "seeds = 16");
    std::fs::write(dir.join("x.toml"), source).unwrap();
    let mut jsons = Vec::new();
    // The shards' reports live as long as their guards.
    let mut shard_outs = Vec::new();
    for k in 1..=2 {
        let out = temp(&format!("shard-{k}"));
        let shard = format!("{k}/2");
        let (code, stdout, stderr) = lockstep(&["ci", s(&dir), "--report", s(&out), "--shard", &shard, "-q"]);
        // A shard cannot decide `some-invalid` alone: it never fails on it.
        assert_eq!(code, 0, "{stdout}{stderr}");
        jsons.push(out.join("report.json"));
        shard_outs.push(out);
    }
    let merged = temp("merged");
    let merged_json = temp("merged.json");
    let (code, stdout, stderr) = lockstep(&[
        "merge",
        s(&jsons[0]),
        s(&jsons[1]),
        "--report",
        s(&merged),
        "--out",
        s(&merged_json),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(merged.join("index.html").is_file() && merged.join("junit.xml").is_file());
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&merged_json).unwrap()).unwrap();
    assert_eq!(report["merged_from"], 2);
    assert_eq!(report["explorations"][0]["summary"]["seeds_run"], 16);

    let (code, _, stderr) = lockstep(&["merge", s(&jsons[0])]);
    assert_eq!(code, 2);
    assert!(stderr.contains("shards 1 of 2"), "{stderr}");
    // A report and an exploration summary do not mix.
    let summary = temp("summary.json");
    std::fs::write(&summary, "{}").unwrap();
    let (code, _, stderr) = lockstep(&["merge", s(&jsons[0]), s(&summary)]);
    assert_eq!(code, 2, "{stderr}");
}

/// Issue 53: `lockstep ci --shard` with an `[explore]` block that names a guided strategy: every
/// shard explores its seeds guided, and the merge of the shards' reports judges the block's
/// expectations on all seeds (a bug lock's `some-invalid`, found by the shards together).
#[test]
fn a_guided_explore_block_shards_under_ci_and_its_merge_is_the_gate() {
    let dir = temp("guided-shards");
    std::fs::create_dir_all(&dir).unwrap();
    let source = shipped("bug-release-no-owner-check.toml")
        + "\n[explore]\nseeds = 40\nstrategy = \"mixed\"\n\n[explore.expect]\nownership = \"some-invalid\"\n";
    std::fs::write(dir.join("x.toml"), source).unwrap();
    let mut jsons = Vec::new();
    let mut shard_outs = Vec::new();
    for k in 1..=2 {
        let out = temp(&format!("guided-shard-{k}"));
        let shard = format!("{k}/2");
        let (code, stdout, stderr) = lockstep(&["ci", s(&dir), "--report", s(&out), "--shard", &shard, "-q"]);
        assert!(code == 0 || code == 1, "{stdout}{stderr}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
        let summary = &report["explorations"][0]["summary"];
        assert_eq!(summary["coverage"]["strategy"], "mixed", "{summary}");
        assert_eq!(summary["run"]["strategy"], "mixed", "{summary}");
        assert_eq!(summary["seeds_run"], 20);
        jsons.push(out.join("report.json"));
        shard_outs.push(out);
    }
    let merged_json = temp("guided-merged.json");
    let (code, stdout, stderr) = lockstep(&["merge", s(&jsons[0]), s(&jsons[1]), "--out", s(&merged_json)]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&merged_json).unwrap()).unwrap();
    let summary = &report["explorations"][0]["summary"];
    assert_eq!(summary["seeds_run"], 40);
    assert!(
        summary["violations"]["ownership"].as_u64().unwrap_or(0) > 0,
        "{summary}"
    );
    assert!(summary["first_bug_seed"].is_u64(), "{summary}");
    let (code, _, stderr) = lockstep(&["merge", s(&jsons[1])]);
    assert_eq!(code, 2, "a missing shard: {stderr}");
}
