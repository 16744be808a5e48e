//! What a reader of a report directory sees first and follows (issue 43): merged shard reports
//! carry every run's history and interactive timeline, as an unsharded run's report does; a
//! report leads with its verdict; the interactive timeline labels every fault and violation;
//! tables group repeated rows and anchor every section.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::{self, lockstep};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A directory of scenario files for a small gate: the Kleppmann pair and the exploration
/// scenario cut to `seeds` seeds (so that two shards each explore some).
fn small_scenarios(name: &str, seeds: u64) -> common::TempPath {
    let dir = common::TempPath::dir("report-views", name);
    for file in ["kleppmann-gc-pause.toml", "kleppmann-gc-pause-fenced.toml"] {
        std::fs::copy(root().join("scenarios").join(file), dir.join(file)).unwrap();
    }
    let explore = std::fs::read_to_string(root().join("scenarios/explore-token-release-pause-crash.toml")).unwrap();
    assert!(
        explore.contains("\nseeds = 80\n"),
        "the exploration scenario's seed count moved"
    );
    std::fs::write(
        dir.join("explore-token-release-pause-crash.toml"),
        explore.replace("\nseeds = 80\n", &format!("\nseeds = {seeds}\n")),
    )
    .unwrap();
    dir
}

/// Every file under `dir`, relative to it, `/`-separated.
fn files_under(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.insert(rel);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

/// The links from `index.html` to a run's interactive timeline.
fn timeline_links(dir: &Path) -> Vec<String> {
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    html.match_indices("href=\"runs/")
        .map(|(at, _)| {
            let rest = &html[at + 6..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .filter(|link| link.ends_with("/timeline.html"))
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect()
}

fn ci(dir: &Path, out: &Path, shard: Option<&str>) {
    let mut args = vec![
        "ci",
        dir.to_str().unwrap(),
        "--report",
        out.to_str().unwrap(),
        "--quiet",
    ];
    if let Some(shard) = shard {
        args.extend(["--shard", shard]);
    }
    let (code, stdout, stderr) = lockstep(&args);
    assert!(code == 0 || code == 1, "ci {shard:?}: exit {code}\n{stdout}\n{stderr}");
}

/// Issue 43, item 5: `lockstep ci --shard 1/2`, `--shard 2/2` and `lockstep merge --report`
/// give the same per-run files (`runs/NAME/history.jsonl`, `runs/NAME/timeline.html`, the
/// viewer) and the same timeline links in `index.html` as one unsharded `lockstep ci`.
#[test]
fn merged_shard_reports_carry_every_runs_history_and_timeline() {
    let scenarios = small_scenarios("merge", 6);
    let whole = common::TempPath::unused("report-views", "whole");
    ci(&scenarios, &whole, None);
    let shards: Vec<common::TempPath> = (1..=2)
        .map(|k| {
            let out = common::TempPath::unused("report-views", &format!("shard-{k}"));
            ci(&scenarios, &out, Some(&format!("{k}/2")));
            out
        })
        .collect();
    let merged = common::TempPath::unused("report-views", "merged");
    let (code, stdout, stderr) = lockstep(&[
        "merge",
        shards[0].join("report.json").to_str().unwrap(),
        shards[1].join("report.json").to_str().unwrap(),
        "--report",
        merged.to_str().unwrap(),
    ]);
    assert!(code == 0 || code == 1, "merge: exit {code}\n{stdout}\n{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");

    let per_run = |dir: &Path| -> BTreeSet<String> {
        files_under(dir)
            .into_iter()
            .filter(|f| f.starts_with("runs/") || f.starts_with("viewer."))
            .collect()
    };
    let expected = per_run(&whole);
    assert_eq!(
        expected.iter().filter(|f| f.ends_with("/history.jsonl")).count(),
        3,
        "{expected:?}"
    );
    assert_eq!(per_run(&merged), expected);
    // Each history reads back to the digest the merged report states for its run.
    for name in [
        "kleppmann-gc-pause",
        "kleppmann-gc-pause-fenced",
        "explore-token-release-pause-crash",
    ] {
        let a = std::fs::read(whole.join(format!("runs/{name}/history.jsonl"))).unwrap();
        let b = std::fs::read(merged.join(format!("runs/{name}/history.jsonl"))).unwrap();
        assert!(a == b, "{name}: the merged history differs from the unsharded one");
    }
    let links = timeline_links(&whole);
    assert_eq!(links.len(), 3, "{links:?}");
    assert_eq!(timeline_links(&merged), links);
    // The exploration's explanation is under its table too, not in a column.
    let md = std::fs::read_to_string(merged.join("summary.md")).unwrap();
    assert!(!md.contains("| explanation |"), "{md}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("- `explore-token-release-pause-crash`: ")),
        "{md}"
    );
    // The whole directories: the same files but for the shard-only ones.
    let all_whole = files_under(&whole);
    let all_merged = files_under(&merged);
    assert_eq!(
        all_merged,
        all_whole,
        "{:?}",
        all_merged.symmetric_difference(&all_whole).collect::<Vec<_>>()
    );
}

/// A history that does not read back to its run's digest is left out of the merge, with a
/// warning naming the file: a shard directory is data, and a timeline must be of its run.
#[test]
fn a_tampered_shard_history_is_left_out_of_the_merge_with_a_warning() {
    let scenarios = small_scenarios("tampered", 2);
    let shards: Vec<common::TempPath> = (1..=2)
        .map(|k| {
            let out = common::TempPath::unused("report-views", &format!("tampered-{k}"));
            ci(&scenarios, &out, Some(&format!("{k}/2")));
            out
        })
        .collect();
    let history = shards
        .iter()
        .map(|s| s.join("runs/kleppmann-gc-pause/history.jsonl"))
        .find(|p| p.exists())
        .expect("one shard ran kleppmann-gc-pause");
    let text = std::fs::read_to_string(&history).unwrap();
    let cut: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
    std::fs::write(&history, cut).unwrap();
    let merged = common::TempPath::unused("report-views", "tampered-merged");
    let (code, _, stderr) = lockstep(&[
        "merge",
        shards[0].join("report.json").to_str().unwrap(),
        shards[1].join("report.json").to_str().unwrap(),
        "--report",
        merged.to_str().unwrap(),
    ]);
    assert!(code == 0 || code == 1, "{stderr}");
    assert!(
        stderr.contains("history.jsonl") && stderr.contains("not this run's history"),
        "{stderr}"
    );
    assert!(!merged.join("runs/kleppmann-gc-pause").exists());
    assert!(merged.join("runs/kleppmann-gc-pause-fenced/timeline.html").exists());
}

/// The data block of a run's `timeline.html` (what the viewer draws), parsed.
fn timeline_data(out: &Path, run: &str) -> serde_json::Value {
    let page = std::fs::read_to_string(out.join(format!("runs/{run}/timeline.html"))).unwrap();
    let start = page.find("id=\"timeline-data\">").unwrap() + "id=\"timeline-data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

/// The labels (`t`) of the page's items of class `k`.
fn labels(data: &serde_json::Value, key: &str, class: &str) -> Vec<String> {
    data[key]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["k"] == class)
        .map(|i| i["t"].as_str().unwrap().to_string())
        .collect()
}

/// A text the viewer placed, as `tests/data/viewer-labels.js` prints it.
#[derive(serde::Deserialize, Debug)]
struct Placed {
    x: f64,
    y: f64,
    text: String,
    class: String,
}

/// One drawing of a timeline page.
#[derive(serde::Deserialize, Debug)]
struct Drawing {
    width: f64,
    height: f64,
    from: f64,
    to: f64,
    texts: Vec<Placed>,
}

/// The page `run` of the report `out` as the report's viewer draws it at `width` px — as it
/// opens, then after "whole run" — run under node in a stand-in DOM. `None` without node
/// (outside CI; `.ci/run` installs it).
fn drawings(out: &Path, run: &str, width: u32) -> Option<Vec<Drawing>> {
    let output = std::process::Command::new("node")
        .arg(root().join("tests/data/viewer-labels.js"))
        .arg(out.join(format!("runs/{run}/timeline.html")))
        .arg(out.join("viewer.js"))
        .arg(width.to_string())
        .output();
    let output = match output {
        Ok(o) => o,
        Err(e) if !common::in_ci() => {
            eprintln!("node is not installed ({e}): the label boxes of {run} are not checked");
            return None;
        }
        Err(e) => panic!("node is not installed ({e}); .ci/run installs it"),
    };
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    Some(
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

/// Issue 52, item 3: every label of a timeline page (lane names, times, violations, faults,
/// pauses, bars) lies inside the chart and overlaps no other, by the viewer's own measure of a
/// text (`textWidth`: .62 em a glyph, .68 bold; ascent .8 em, descent .22 em), as the page
/// opens and on the whole run, wide and narrow; and the violation labels are whole. Returns the
/// drawings (opened, whole run) at 1200 px.
fn assert_labels_fit(out: &Path, run: &str) -> Option<Vec<Drawing>> {
    let mut kept = None;
    for width in [1200, 700] {
        let drawings = drawings(out, run, width)?;
        for (view, d) in ["opened", "whole run"].iter().zip(&drawings) {
            let boxes: Vec<(f64, f64, f64, f64, &Placed)> = d
                .texts
                .iter()
                .map(|t| {
                    let (size, em) = match t.class.as_str() {
                        "violation-label" => (11.0, 0.68),
                        "fault-label" | "band-label" | "test-label" => (10.0, 0.62),
                        _ => (11.0, 0.62),
                    };
                    let w = t.text.chars().count() as f64 * size * em;
                    (t.x, t.y - 0.8 * size, t.x + w, t.y + 0.22 * size, t)
                })
                .collect();
            for (x0, y0, x1, y1, t) in &boxes {
                assert!(
                    *x0 >= 0.0 && *y0 >= 0.0 && *x1 <= d.width + 0.01 && *y1 <= d.height + 0.01,
                    "{run} ({view}, {width} px): {t:?} runs outside the {} × {} chart",
                    d.width,
                    d.height
                );
            }
            for (i, a) in boxes.iter().enumerate() {
                for b in &boxes[i + 1..] {
                    let apart = a.2 <= b.0 + 0.01 || b.2 <= a.0 + 0.01 || a.3 <= b.1 + 0.01 || b.3 <= a.1 + 0.01;
                    assert!(apart, "{run} ({view}, {width} px): {:?} overlaps {:?}", a.4, b.4);
                }
            }
            if *view == "whole run" {
                for t in d.texts.iter().filter(|t| t.class == "violation-label") {
                    assert!(
                        t.text.ends_with(" violated"),
                        "{run}: a violation label cut short: {t:?}"
                    );
                }
            }
        }
        kept.get_or_insert(drawings);
    }
    kept
}

/// Issue 43, item 4: the interactive timeline labels every fault at its time — the 15 s pause of
/// Kleppmann's scenario, the partitions, a clock jump, a crash — and marks every violation with
/// its checker, the stale write and the lost update located on the timeline as well as the
/// overlap of the two holds.
#[test]
fn the_interactive_timeline_labels_every_fault_and_every_violation() {
    let dir = common::TempPath::dir("report-views", "timeline-in");
    for file in [
        "kleppmann-gc-pause.toml",
        "redlock-clock-jump.toml",
        "redlock-crash-restart.toml",
    ] {
        std::fs::copy(root().join("scenarios").join(file), dir.join(file)).unwrap();
    }
    let out = common::TempPath::unused("report-views", "timeline-out");
    ci(&dir, &out, None);

    let k = timeline_data(&out, "kleppmann-gc-pause");
    assert_eq!(labels(&k, "items", "pause"), ["pause client-1 15 s"]);
    let violations = labels(&k, "violations", "violation");
    assert_eq!(
        violations,
        [
            "mutual-exclusion violated",
            "stale-write violated",
            "lost-update violated"
        ],
        "every invalid checker is a band, the first the overlap of the holds"
    );
    let witness = labels(&k, "items", "witness");
    for checker in ["mutual-exclusion", "stale-write", "lost-update"] {
        assert!(
            witness.iter().any(|w| w.starts_with(&format!("{checker}: "))),
            "no witness mark of {checker}: {witness:?}"
        );
    }
    // The stale write is located at the write the resource accepted from the paused client.
    let stale: Vec<&serde_json::Value> = k["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["k"] == "witness" && i["t"].as_str().unwrap().starts_with("stale-write: write"))
        .collect();
    assert!(!stale.is_empty(), "{witness:?}");
    let lanes: Vec<&str> = k["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        stale
            .iter()
            .any(|i| lanes[i["l"].as_u64().unwrap() as usize] == "client-1"),
        "the stale write is drawn on the writer's lane"
    );

    let jump = timeline_data(&out, "redlock-clock-jump");
    let faults = labels(&jump, "items", "fault");
    assert!(faults.iter().any(|f| f.starts_with("clock-jump redis-")), "{faults:?}");
    assert!(
        faults.iter().any(|f| f.starts_with("partition ") && f.contains(" / ")),
        "{faults:?}"
    );
    assert_eq!(labels(&jump, "violations", "violation").len(), 3);

    let crash = timeline_data(&out, "redlock-crash-restart");
    let faults = labels(&crash, "items", "fault");
    assert!(faults.iter().any(|f| f.starts_with("crash redis-")), "{faults:?}");
    assert!(faults.iter().any(|f| f.starts_with("restart redis-")), "{faults:?}");

    // Issue 52: each violation's band covers its witness only — the overlap of the two holds;
    // the stale write and the lost update at their witness events, not the run between — and
    // the page opens on the first violation, its labels placed apart and inside the chart.
    let bands = k["violations"].as_array().unwrap();
    assert_eq!(
        (bands[0]["s"].as_u64(), bands[0]["e"].as_u64()),
        (Some(10_037_000), Some(11_053_000))
    );
    assert!(bands[0].get("p").is_none(), "{}", bands[0]);
    assert_eq!(
        bands[1]["p"],
        serde_json::json!([11_000, 10_037_000, 11_051_000, 16_003_000])
    );
    assert_eq!(bands[2]["p"], serde_json::json!([16_003_000]));
    let focus = k["focus"].as_array().expect("a focus");
    let focus: Vec<u64> = focus.iter().map(|v| v.as_u64().unwrap()).collect();
    assert!(
        focus[0] < 10_037_000 && focus[1] > 11_053_000 && focus[1] - focus[0] < 2_000_000,
        "{focus:?}"
    );
    if let Some(drawn) = assert_labels_fit(&out, "kleppmann-gc-pause") {
        assert_eq!(
            (drawn[0].from, drawn[0].to),
            (focus[0] as f64 / 1e6, focus[1] as f64 / 1e6)
        );
        assert_eq!((drawn[1].from, drawn[1].to), (0.0, 16.009));
        let labels: Vec<&str> = drawn[1]
            .texts
            .iter()
            .filter(|t| t.class == "violation-label")
            .map(|t| t.text.as_str())
            .collect();
        assert_eq!(
            labels,
            [
                "mutual-exclusion violated",
                "stale-write violated",
                "lost-update violated"
            ]
        );
    }
    assert_labels_fit(&out, "redlock-clock-jump");
    assert_labels_fit(&out, "redlock-crash-restart");

    // The viewer draws what the data says: every violation band, fault labels, witness marks.
    let viewer = std::fs::read_to_string(out.join("viewer.js")).unwrap();
    for needle in ["DATA.violations", "'fault-label'", "'witness'"] {
        assert!(viewer.contains(needle), "viewer.js does not draw {needle}");
    }
}

/// Issue 43, item 3: a counterexample the explorer classified as an implementation bug is
/// reported leading with that verdict and the checker it rests on — the first line of `lockstep
/// run`, of `lockstep ci`'s output, of summary.md and of index.html — the other failing checkers
/// listed after it as following from it; a scenario whose violations are the documented ones
/// says so.
#[test]
fn a_counterexample_report_leads_with_the_explorers_verdict() {
    let cx = common::TempPath::dir("report-views", "cx");
    let (code, stdout, stderr) = lockstep(&[
        "explore",
        root()
            .join("scenarios/bug-release-no-owner-check.toml")
            .to_str()
            .unwrap(),
        "--bounded",
        "--seeds",
        "40",
        "--out",
        cx.to_str().unwrap(),
    ]);
    assert!(code == 1, "explore: exit {code}\n{stdout}\n{stderr}");
    assert!(stdout.contains("IMPLEMENTATION BUG"), "{stdout}");
    let file = std::fs::read_dir(&*cx)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "toml"))
        .expect("a counterexample file");
    // The explorer shrinks the first bug seed for the promised checker nearest the cause: a
    // plain-DEL release deletes another grant's key (ownership), and lease-validity and mutual
    // exclusion follow from it.
    let checker = "ownership";
    assert!(
        file.to_string_lossy().ends_with(&format!("-{checker}.toml")),
        "{file:?}"
    );
    let lead = format!("IMPLEMENTATION BUG on {checker} (following from it: mutual-exclusion, lease-validity)");

    let (_, run, _) = lockstep(&["run", file.to_str().unwrap(), "--quiet"]);
    assert_eq!(run.lines().next(), Some(lead.as_str()), "{run}");

    std::fs::copy(
        root().join("scenarios/kleppmann-gc-pause.toml"),
        cx.join("kleppmann-gc-pause.toml"),
    )
    .unwrap();
    let out = common::TempPath::unused("report-views", "cx-report");
    let (code, gate, stderr) = lockstep(&["ci", cx.to_str().unwrap(), "--report", out.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 1, "{gate}\n{stderr}");
    let first = gate.lines().next().unwrap();
    assert!(first.contains(&lead), "{gate}");
    // The failure line rests on the promised checker, the others after it.
    let failure = gate.lines().find(|l| l.contains("UNEXPECTED")).unwrap();
    assert!(
        failure.contains(&format!(
            "IMPLEMENTATION BUG on {checker} — {checker} is invalid but expected valid"
        )) && failure.ends_with("following from it: mutual-exclusion, lease-validity"),
        "{failure}"
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let md_first = md.lines().filter(|l| !l.is_empty()).nth(1).unwrap();
    assert!(
        md_first.starts_with(&format!("**IMPLEMENTATION BUG on {checker}")),
        "{md}"
    );
    assert!(md.contains("expected / as documented on mutual-exclusion"), "{md}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let h1 = html.find("</h1>").unwrap();
    assert!(
        html[h1..]
            .trim_start_matches("</h1>")
            .trim_start()
            .starts_with(&format!("<p class=\"lead\"><b>IMPLEMENTATION BUG on {checker}")),
        "{}",
        &html[h1..h1 + 300]
    );
    // The classification is part of the report: a merge of it leads with it too.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let classified: Vec<&serde_json::Value> = report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s.get("classification"))
        .collect();
    assert_eq!(classified.len(), 1);
    assert_eq!(classified[0]["kind"], "implementation-bug");
    assert_eq!(classified[0]["checker"], checker);
    // Issue 52: the evidence starts with the checker the headline names; the counterexample's
    // timeline says its verdict, opens on its first violation and keeps its three violation
    // labels apart and whole.
    let evidence = &html[html.find("<h2 id=\"evidence\">").expect("evidence")..];
    let first = evidence.find("<details").unwrap();
    assert!(
        evidence[first..].starts_with("<details open><summary><code>") && {
            let line = &evidence[first..first + evidence[first..].find('\n').unwrap()];
            line.contains(&format!("· {checker} is"))
        },
        "{}",
        &evidence[..600.min(evidence.len())]
    );
    let name = file.file_stem().unwrap().to_str().unwrap();
    let run = report["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s.get("classification").is_some())
        .map(|s| s["name"].as_str().unwrap().to_string())
        .unwrap_or_else(|| name.to_string());
    let page = std::fs::read_to_string(out.join(format!("runs/{run}/timeline.html"))).unwrap();
    assert!(
        page.contains(&format!("<p class=\"sub\">IMPLEMENTATION BUG on {checker} · ")),
        "{}",
        &page[..400.min(page.len())]
    );
    let data = timeline_data(&out, &run);
    assert_eq!(
        data["violations"].as_array().unwrap().len(),
        3,
        "{}",
        data["violations"]
    );
    assert!(data["focus"].is_array(), "the page opens on the first violation");
    assert_labels_fit(&out, &run);
}

/// Issue 43, item 6: a report whose rows repeat (a live report's ten runs of one scenario) shows
/// one row "×10" in index.html and summary.md, the explanation under the row (not in a narrow
/// column), and every section of index.html has an anchor the page links to.
#[test]
fn repeated_rows_are_grouped_explanations_sit_under_rows_and_sections_are_anchored() {
    use lockstep::app::ci::{run_ci, CiOptions};
    use lockstep::app::files::load_inputs;
    use lockstep::report::{html, markdown, Report};
    let inputs = load_inputs(&[
        root().join("scenarios/kleppmann-gc-pause.toml"),
        root().join("scenarios/kleppmann-gc-pause-fenced.toml"),
    ])
    .unwrap();
    let mut report = Report::build(&run_ci(&inputs, &CiOptions::default()).unwrap());
    let run = report.scenarios[0].clone();
    for i in 2..=10 {
        let mut again = run.clone();
        again.name = format!("{}-live-run-{i}", run.name);
        report.scenarios.push(again);
    }
    report.finish();
    let page = html::index(&report, &Default::default());
    let table = &page[page.find("<h2 id=\"scenarios\">").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr id=\"row-").count(), 2, "{table}");
    assert!(table.contains("kleppmann-gc-pause</a> <b>×10</b>"), "{table}");
    assert!(
        table.contains("kleppmann-gc-pause-live-run-10"),
        "the grouped runs are still named"
    );
    // The explanation is a row of its own under its row, spanning the table.
    assert!(
        !table.contains("<th>explanation</th>") && !table.contains("<th>replay</th>"),
        "{table}"
    );
    assert_eq!(
        table
            .matches(&format!(
                "<tr class=\"why\"><td></td><td colspan=\"{}\">",
                lockstep::checker::CheckerName::ALL.len() + 2
            ))
            .count(),
        2,
        "{table}"
    );
    assert!(table.contains("replay: <code>lockstep run "), "{table}");
    // Every section heading has an id, and the page links to each.
    for h2 in page.split("<h2").skip(1) {
        let id = h2
            .strip_prefix(" id=\"")
            .and_then(|r| r.split('"').next())
            .unwrap_or_else(|| panic!("a section without an anchor: <h2{}", &h2[..40.min(h2.len())]));
        assert!(page.contains(&format!("<a href=\"#{id}\">")), "no link to #{id}");
    }
    assert!(
        page.matches("<h2 id=").count() >= 4,
        "scenarios, evidence, compared runs, charts"
    );

    let md = markdown::summary(&report);
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("`kleppmann"))
        .collect();
    assert_eq!(rows.len(), 2, "{md}");
    assert!(rows.iter().any(|r| r.contains("`kleppmann-gc-pause` ×10")), "{md}");
    assert!(!md.contains("| explanation |"), "{md}");
    assert!(
        md.lines().any(
            |l| l.starts_with("- `kleppmann-gc-pause` (×10; also `kleppmann-gc-pause-live-run-2`")
                && l.contains("expected / as documented on mutual-exclusion")
        ),
        "{md}"
    );
}

/// Issue 43, item 3, for an exploration: a `lockstep ci` exploration whose violating seeds the
/// explorer classified as implementation bugs leads the report with that verdict and the
/// promised checker of the smallest such seed (the issue's "implementation bug on lease-validity
/// and ownership"), not with mutual-exclusion.
#[test]
fn an_exploration_that_finds_an_implementation_bug_leads_the_report_with_it() {
    let dir = common::TempPath::dir("report-views", "explore-bug");
    let text = std::fs::read_to_string(root().join("scenarios/bug-release-no-owner-check.toml")).unwrap();
    assert!(!text.contains("[explore]"));
    std::fs::write(
        dir.join("bug-release-no-owner-check.toml"),
        format!("{text}\n[explore]\nseeds = 60\n"),
    )
    .unwrap();
    let out = common::TempPath::unused("report-views", "explore-bug-out");
    let (_, gate, stderr) = lockstep(&[
        "ci",
        dir.to_str().unwrap(),
        "--report",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let lead = "IMPLEMENTATION BUG on lease-validity (also promised and violated: ownership): \
                exploration bug-release-no-owner-check seed 18";
    assert_eq!(gate.lines().next(), Some(lead), "{gate}\n{stderr}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains(&format!("**{lead}**")), "{md}");
}
