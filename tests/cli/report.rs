//! Reports: report.json against its JSON Schema, junit.xml, the charts (SVG and PNG), the
//! Markdown and HTML, shard merging, the TTL trade-off data, and the example report in
//! `reports/example` (its history digests must be reproduced on this machine).

use lockstep::app::ci::{run_ci, CiOptions};
use lockstep::app::files::load_inputs;
use lockstep::app::sweep::{ttl_sweep, SweepOptions};
use lockstep::explore::{explore, ExploreConfig, Shard};
use lockstep::report::charts::Chart;
use lockstep::report::{write_report, Report, Status};
use lockstep::run::run_scenario;
use lockstep::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common;

/// The command that regenerates the example report (also in docs/ci.md).
const REGENERATE: &str = "cargo run --release -- ci scenarios --report reports/example --ttl-sweep --no-timings";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn temp_dir(name: &str) -> common::TempPath {
    common::TempPath::unused("report", name)
}

/// A small TTL sweep: the two ends of the default range.
fn small_sweep() -> SweepOptions {
    SweepOptions {
        ttls_ms: vec![200, 3_000],
        seeds: 48,
        ..SweepOptions::default()
    }
}

/// One report shared by the tests: the Kleppmann pair, a wrong expectation (so something
/// fails), the exploration scenario, and a small TTL sweep.
fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        let dir = root().join("scenarios");
        let mut inputs = load_inputs(&[
            dir.join("kleppmann-gc-pause.toml"),
            dir.join("kleppmann-gc-pause-fenced.toml"),
            dir.join("explore-token-release-pause-crash.toml"),
        ])
        .expect("the shipped scenarios load");
        let mut wrong = inputs[0].1.clone();
        wrong.name = "kleppmann-wrong-expectation".to_string();
        wrong
            .expect
            .insert("stale-write".into(), lockstep::model::Verdict::Valid);
        inputs.push((dir.join("kleppmann-gc-pause.toml"), wrong));
        let options = CiOptions {
            ttl_sweep: Some(small_sweep()),
            ..CiOptions::default()
        };
        Report::build(&run_ci(&inputs, &options).expect("the gate runs"))
    })
}

fn schema_check(json: &serde_json::Value) -> Result<(), String> {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("docs/report-schema.json")).unwrap()).unwrap();
    let id = schema["$id"].as_str().unwrap().to_string();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource(&id, schema).unwrap();
    let index = compiler.compile(&id, &mut schemas).map_err(|e| e.to_string())?;
    schemas.validate(json, index).map_err(|e| format!("{e:#}"))
}

#[test]
fn report_json_parses_against_its_schema_and_round_trips() {
    let report = report();
    let text = report.to_json();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    schema_check(&value).unwrap();
    assert_eq!(value["format"], "lockstep-report");
    assert_eq!(value["schema_version"], 1);
    assert_eq!(value["tool"]["version"], env!("CARGO_PKG_VERSION"));
    let back = Report::from_json(&text, "report.json").unwrap();
    assert_eq!(&back, report);

    // A field the schema does not know, a wrong version: errors that say so.
    let mut extra = value.clone();
    extra["surprise"] = serde_json::json!(1);
    assert!(schema_check(&extra).is_err());
    assert!(Report::from_json(&extra.to_string(), "x.json").is_err());
    let mut old = value.clone();
    old["schema_version"] = serde_json::json!(99);
    let err = Report::from_json(&old.to_string(), "old.json").unwrap_err();
    assert!(
        err.contains("old.json") && err.contains("schema_version") && err.contains("99"),
        "{err}"
    );
    let err = Report::from_json("{\"format\": 3}", "f.json").unwrap_err();
    assert!(err.contains("f.json") && err.contains("format"), "{err}");
    assert!(Report::from_json("not json", "n.json")
        .unwrap_err()
        .contains("n.json:1:"));
}

#[test]
fn the_report_holds_verdicts_witnesses_faults_liveness_and_digests() {
    let report = report();
    assert!(!report.ok, "the wrong expectation must fail the gate");
    assert_eq!(report.exit_code(), 1);
    assert_eq!(report.totals.failed, 1);
    let k = report
        .scenarios
        .iter()
        .find(|s| s.name == "kleppmann-gc-pause")
        .unwrap();
    assert_eq!(k.status, Status::Pass);
    assert_eq!(k.seed, 1);
    assert_eq!(k.faults.len(), 1);
    assert_eq!(k.faults[0].fault.kind(), "pause");
    let me = &k.checks[0];
    assert_eq!(me.checker, "mutual-exclusion");
    assert!(!me.witness.is_empty());
    let history = k.history.as_ref().unwrap();
    assert_eq!(history.digest.len(), 64);
    let live = k.liveness.unwrap();
    assert!(live.acquires >= 2 && live.held_ms > 0, "{live:?}");
    assert_eq!(k.replay, "lockstep run ".to_string() + &k.file + " --seed 1");
    let t = k.timeline.as_ref().unwrap();
    assert_eq!(t.lanes.len(), 3);
    assert_eq!(t.pauses.len(), 1);
    assert_eq!(t.writes.len(), 2);
    assert!(t.writes.iter().all(|w| w.accepted));
    let v = t.violation.as_ref().unwrap();
    assert_eq!(v.checker, "mutual-exclusion");
    // The overlap: from client-2's grant to its release, a second or so after 10 s.
    assert!(v.start_us > 10_000_000 && v.end_us < 12_000_000, "{v:?}");
    let fenced = report
        .scenarios
        .iter()
        .find(|s| s.name == "kleppmann-gc-pause-fenced")
        .unwrap();
    let writes = &fenced.timeline.as_ref().unwrap().writes;
    assert_eq!(writes.iter().filter(|w| !w.accepted).count(), 1, "{writes:?}");

    let wrong = report
        .scenarios
        .iter()
        .find(|s| s.name == "kleppmann-wrong-expectation")
        .unwrap();
    assert_eq!(wrong.status, Status::Fail);

    let e = &report.explorations[0];
    assert!(!e.status.is_failure(), "{:#?}", e.checks);
    assert!(e
        .checks
        .iter()
        .filter(|c| c.expected.is_some())
        .all(|c| c.status == Status::Pass));
    assert_eq!(e.summary.seeds_run, 80);
    assert!(e.checks.iter().any(|c| c.invalid_seeds > 0 && c.replay.is_some()));
    assert_eq!(e.outcome_digest.len(), 64);
    assert!(report.ttl_sweep.is_some());
}

#[test]
fn junit_xml_is_valid_with_one_case_per_scenario_and_checker() {
    let report = report();
    let xml = lockstep::report::junit::junit_xml(report).unwrap();
    let parsed = quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit XML");
    let suites = report.scenarios.len() + report.explorations.len();
    assert_eq!(parsed.test_suites.len(), suites);
    let cases: usize = parsed.test_suites.iter().map(|s| s.test_cases.len()).sum();
    assert_eq!(cases, lockstep::checker::NAMES.len() * suites);
    assert_eq!(parsed.tests, lockstep::checker::NAMES.len() * suites);
    assert_eq!(parsed.failures, 1);
    assert_eq!(parsed.errors, 0);
    // Checks without an expectation are skipped, not passes; every case has a time.
    let all: Vec<&quick_junit::TestCase> = parsed.test_suites.iter().flat_map(|s| s.test_cases.iter()).collect();
    let skipped = all
        .iter()
        .filter(|c| matches!(c.status, quick_junit::TestCaseStatus::Skipped { .. }))
        .count();
    assert!(
        report.totals.unchecked > 0,
        "the fixture has checks without expectation"
    );
    assert_eq!(skipped as u64, report.totals.unchecked);
    let successes = all
        .iter()
        .filter(|c| matches!(c.status, quick_junit::TestCaseStatus::Success { .. }))
        .count();
    assert_eq!(successes as u64, report.totals.passed);
    assert!(all.iter().all(|c| c.time.is_some()), "a test case without time");
    assert!(xml.contains("<skipped"), "{xml}");
    assert!(all
        .iter()
        .any(|c| c.time.is_some_and(|t| t > std::time::Duration::ZERO)));
    let failure = all
        .iter()
        .find(|c| matches!(c.status, quick_junit::TestCaseStatus::NonSuccess { .. }))
        .unwrap();
    assert_eq!(failure.name.as_str(), "stale-write");
    let quick_junit::TestCaseStatus::NonSuccess {
        message, description, ..
    } = &failure.status
    else {
        panic!("not a failure")
    };
    assert!(message.as_ref().unwrap().contains("expects valid"));
    let description = description.as_ref().unwrap();
    assert!(description.contains("ACCEPTED write") && description.contains("replay: lockstep run"));
}

fn decode_png(bytes: &[u8]) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut pixels).expect("PNG pixels");
    // Not blank: some pixels are dark (text, bars).
    assert!(pixels.iter().filter(|&&p| p < 100).count() > 1_000);
    (info.width, info.height)
}

#[test]
fn every_chart_type_renders_to_svg_and_png() {
    let report = report();
    let charts = lockstep::report::charts::all(report);
    let mut kinds = std::collections::BTreeSet::new();
    for (stem, chart) in &charts {
        kinds.insert(match chart {
            Chart::Timeline(_) => "timeline",
            Chart::TtlTradeoff(_) => "ttl",
            Chart::Exploration(_) => "exploration",
        });
        let svg = chart.svg().unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("</svg>") && svg.contains("<text"),
            "{stem}"
        );
        // Marks carry tooltips.
        assert!(svg.matches("<title>").count() >= 3, "{stem}");
        let png = chart.png().unwrap();
        assert!(!png.is_empty());
        assert_eq!(decode_png(&png), chart.size(), "{stem}");
    }
    assert_eq!(kinds.len(), 3, "{kinds:?}");
}

#[test]
fn the_report_directory_is_written_atomically_and_completely() {
    let report = report();
    let out = temp_dir("dir");
    let written = write_report(report, &out).unwrap();
    for name in ["report.json", "summary.md", "junit.xml", "index.html"] {
        assert!(std::fs::metadata(out.join(name)).unwrap().len() > 0, "{name}");
    }
    assert!(written.len() >= 4 + 2 * 6, "{written:?}");
    // No temporary file is left behind.
    let leftovers: Vec<_> = walk(&out)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let first_row = md
        .lines()
        .find(|l| l.starts_with("| ") && l.contains("| `kleppmann"))
        .unwrap();
    assert!(
        first_row.contains("kleppmann-wrong-expectation"),
        "unexpected first: {first_row}"
    );
    assert!(md.contains("stale-write is invalid but expected valid"));
    assert!(
        first_row.contains("UNEXPECTED") && first_row.contains("🔴 invalid ❗ expected valid"),
        "{first_row}"
    );
    assert!(
        md.contains("3 unsafe as expected · 1 safe as expected · 1 unexpected"),
        "{md}"
    );
    assert!(md.contains("lockstep run "));
    assert!(md.contains("## The TTL trade-off"));

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("href=\"summary.md\""));
    // The pair the scenario declares (`compare_with`) is shown side by side.
    assert!(
        html.contains("<h3 id=\"pair-kleppmann-gc-pause\">kleppmann-gc-pause and kleppmann-gc-pause-fenced</h3>"),
        "no pair"
    );
    // Evidence and replay commands, as in summary.md.
    assert!(html.contains("<h2 id=\"evidence\">Evidence</h2>") && html.contains("ACCEPTED write"));
    assert!(html.contains("Replay: <code>lockstep run "));
    assert!(html.contains("href=\"report.json\"") && html.contains("href=\"junit.xml\""));
    // Self-contained: nothing is loaded from elsewhere.
    for bad in ["<img", "<script src", "<link", "http://", "https://"] {
        let outside_svg_ns = html.replace("http://www.w3.org/2000/svg", "");
        assert!(!outside_svg_ns.contains(bad), "index.html refers outside: {bad}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn an_unwritable_report_directory_is_a_clear_error() {
    let file = temp_dir("file");
    std::fs::write(&file, "not a directory").unwrap();
    let err = lockstep::report::prepare_out(&file).unwrap_err();
    assert!(err.contains("not a directory"), "{err}");
    let err = lockstep::report::prepare_out(&file.join("below")).unwrap_err();
    assert!(err.contains("cannot create"), "{err}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn sharded_reports_merge_into_the_unsharded_outcome() {
    let path = root().join("scenarios/explore-token-release-pause-crash.toml");
    let mut scenario = Scenario::from_file(&path).unwrap();
    scenario.explore.as_mut().unwrap().seeds = 24;
    let inputs = vec![(path.clone(), scenario.clone())];
    let whole = Report::build(&run_ci(&inputs, &CiOptions::default()).unwrap());
    let parts: Vec<(String, Report)> = (1..=3)
        .map(|index| {
            let options = CiOptions {
                shard: Some(Shard { index, count: 3 }),
                ..CiOptions::default()
            };
            let part = Report::build(&run_ci(&inputs, &options).unwrap());
            // Through JSON, as in CI.
            let text = part.to_json();
            (
                format!("shard-{index}.json"),
                Report::from_json(&text, "shard").unwrap(),
            )
        })
        .collect();
    // The scenario ran in shard 1 only; every shard explored a third of the seeds.
    assert_eq!(parts[0].1.scenarios.len(), 1);
    assert_eq!(parts[1].1.scenarios.len(), 0);
    assert_eq!(parts[1].1.explorations[0].summary.seeds_run, 8);
    let merged = Report::merge(&parts).unwrap();
    assert_eq!(
        merged.explorations[0].outcome_digest,
        whole.explorations[0].outcome_digest
    );
    assert_eq!(merged.explorations[0].checks, whole.explorations[0].checks);
    assert_eq!(merged.explorations[0].shards, None);
    assert_eq!(
        merged.scenarios,
        whole
            .scenarios
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.wall_ms = parts[0].1.scenarios[0].wall_ms;
                s
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(merged.ok, whole.ok);
    assert_eq!(merged.merged_from, 3);
    schema_check(&serde_json::to_value(&merged).unwrap()).unwrap();

    // A missing shard, a repeated shard: errors.
    let err = Report::merge(&parts[..2]).unwrap_err();
    assert!(err.contains("shards 1, 2 of 3"), "{err}");
    let twice = vec![parts[0].clone(), parts[0].clone(), parts[1].clone(), parts[2].clone()];
    assert!(Report::merge(&twice).is_err());
}

#[test]
fn the_ttl_sweep_shows_fewer_violations_and_more_unavailability_at_longer_ttls() {
    let sweep = ttl_sweep(&small_sweep()).unwrap();
    let (short, long) = (&sweep.points[0], &sweep.points[1]);
    assert_eq!((short.ttl_ms, long.ttl_ms), (200, 3_000));
    assert!(short.seeds_run == 48 && long.seeds_run == 48);
    assert!(
        short.violation_rate > long.violation_rate + 0.3,
        "violation rate {} at 200 ms vs {} at 3 s",
        short.violation_rate,
        long.violation_rate
    );
    assert!(
        long.mean_unavailable_ms > short.mean_unavailable_ms * 1.5,
        "unavailability {} ms at 200 ms vs {} ms at 3 s",
        short.mean_unavailable_ms,
        long.mean_unavailable_ms
    );
    assert_eq!(short.errors + long.errors, 0);
    // Deterministic: the same sweep gives the same outcome.
    let again = ttl_sweep(&small_sweep()).unwrap();
    assert_eq!(again.points[1].outcome_digest, long.outcome_digest);
}

/// `reports/example/report.json` is committed; CI runs this test, so every machine must
/// reproduce the same history digests from the same scenario files.
#[test]
fn the_committed_example_report_reproduces_its_history_digests() {
    let path = root().join("reports/example/report.json");
    let text = std::fs::read_to_string(&path).expect("reports/example/report.json is committed");
    let example = Report::from_json(&text, "reports/example/report.json")
        .unwrap_or_else(|e| panic!("{e}\nregenerate it with: {REGENERATE}"));
    assert!(example.ok, "the example report must pass its own gate");
    assert!(
        example.ttl_sweep.is_some(),
        "the example report shows the TTL trade-off"
    );
    let shipped = load_inputs(&[root().join("scenarios")]).unwrap();
    assert_eq!(
        example.scenarios.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        shipped.iter().map(|(_, s)| s.name.clone()).collect::<Vec<_>>(),
        "the example report must cover exactly the shipped scenarios; regenerate it with: {REGENERATE}"
    );
    let mut mismatches = Vec::new();
    for s in &example.scenarios {
        let scenario = Scenario::from_file(&root().join(&s.file)).unwrap();
        let run = run_scenario(&scenario, Some(s.seed)).unwrap();
        let committed = &s.history.as_ref().unwrap().digest;
        if &run.digest != committed {
            mismatches.push(format!(
                "{} (seed {}): {} now, {} committed",
                s.name, s.seed, run.digest, committed
            ));
        }
    }
    for e in &example.explorations {
        let scenario = Scenario::from_file(&root().join(&e.file)).unwrap();
        let spec = scenario.explore.clone().unwrap();
        let mut template = scenario;
        template.explore = None;
        let config = ExploreConfig {
            seeds: e.seeds.start..e.seeds.end,
            profile: spec.profile(),
            ..ExploreConfig::default()
        };
        let digest = lockstep::report::outcome_digest(&explore(&template, &config));
        if digest != e.outcome_digest {
            mismatches.push(format!(
                "exploration {}: {digest} now, {} committed",
                e.name, e.outcome_digest
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "history digests differ from reports/example (determinism across machines, or a change of \
         the simulation or the scenarios):\n  {}\nregenerate it with: {REGENERATE}",
        mismatches.join("\n  ")
    );
}

/// The verdict cells of index.html are coloured by verdict: each verdict has its own class and
/// colour, and a cell's class is its verdict's.
#[test]
fn verdict_colours_differ_by_verdict() {
    use lockstep::model::Verdict;
    use lockstep::report::headline::{verdict_colour, verdict_css};
    let verdicts = [Verdict::Valid, Verdict::Invalid, Verdict::Unknown];
    let colours: std::collections::BTreeSet<_> = verdicts.iter().map(|v| verdict_colour(*v)).collect();
    let classes: std::collections::BTreeSet<_> = verdicts.iter().map(|v| verdict_css(*v)).collect();
    assert_eq!((colours.len(), classes.len()), (3, 3));
    let html = lockstep::report::html::index(report(), &Default::default());
    for v in verdicts {
        // The style sheet gives the class the verdict's colour.
        assert!(
            html.contains(&format!(".{}{{color:{}", verdict_css(v), verdict_colour(v))),
            "{v:?}"
        );
    }
    // The fenced run's stale-write is valid, the unfenced one's invalid: different classes.
    let row = |name: &str| {
        html.lines()
            .find(|l| l.contains(&format!(">{name}</a>")) && l.starts_with("<tr"))
            .unwrap_or_else(|| panic!("no row {name}"))
            .to_string()
    };
    assert!(row("kleppmann-gc-pause").contains("<td class=\"v-invalid\""));
    assert!(row("kleppmann-gc-pause-fenced").contains("<td class=\"v-valid\""));
    // The terminal colours differ too.
    let styles: std::collections::BTreeSet<String> = verdicts
        .iter()
        .map(|v| format!("{}", lockstep::report::console::verdict_style(*v)))
        .collect();
    assert_eq!(styles.len(), 3);
}

/// `history.jsonl` of every run is in the report directory, and reading it back gives the run's
/// history digest; its interactive timeline is there too, drawn by the report's one viewer.
#[test]
fn history_jsonl_in_the_report_replays_to_the_runs_digest() {
    let path = root().join("scenarios/kleppmann-gc-pause.toml");
    let inputs = load_inputs(&[path]).unwrap();
    let ci = run_ci(&inputs, &CiOptions::default()).unwrap();
    let report = Report::build(&ci);
    let out = temp_dir("histories");
    lockstep::report::write_report_with(&report, &out, &lockstep::app::ci::histories(&ci)).unwrap();
    let run = out.join("runs/kleppmann-gc-pause");
    let text = std::fs::read_to_string(run.join("history.jsonl")).unwrap();
    let digest = lockstep::report::interactive::digest_of_jsonl(&text).unwrap();
    let h = report.scenarios[0].history.as_ref().unwrap();
    assert_eq!(digest, h.digest);
    assert_eq!(text.lines().count() as u64, h.events);
    // The same digest as a fresh replay of the file.
    let replay = run_scenario(&inputs[0].1, None).unwrap();
    assert_eq!(digest, replay.digest);
    let page = std::fs::read_to_string(run.join("timeline.html")).unwrap();
    assert!(page.contains("id=\"timeline-data\"") && page.contains("monotonic clock"));
    for bad in ["http://", "https://"] {
        assert!(!page.contains(bad), "{bad}");
    }
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("href=\"runs/kleppmann-gc-pause/timeline.html\""));
    let _ = std::fs::remove_dir_all(&out);
}

/// The attribute `name="…"` of every element in `page` that has it.
fn attribute_values(page: &str, name: &str) -> Vec<String> {
    let key = format!("{name}=\"");
    page.match_indices(&key)
        .map(|(at, _)| {
            let rest = &page[at + key.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// The timeline viewer is written once, at the root of the report directory; every run's
/// `timeline.html` loads it by a relative path that resolves to that file (so the page works
/// opened from disk), holds its own data inline, and none of the viewer's code.
#[test]
fn every_timeline_loads_the_one_viewer_at_the_root() {
    let paths = ["kleppmann-gc-pause", "kleppmann-gc-pause-fenced"].map(|n| root().join(format!("scenarios/{n}.toml")));
    let inputs = load_inputs(&paths).unwrap();
    let ci = run_ci(&inputs, &CiOptions::default()).unwrap();
    let report = Report::build(&ci);
    let out = temp_dir("viewer");
    lockstep::report::write_report_with(&report, &out, &lockstep::app::ci::histories(&ci)).unwrap();
    let viewer_js = std::fs::read_to_string(out.join("viewer.js")).unwrap();
    assert_eq!(viewer_js, lockstep::report::interactive::VIEWER_JS);
    assert!(out.join("viewer.css").is_file());
    // Exactly one viewer.js in the whole directory.
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut all = Vec::new();
    files(&out, &mut all);
    let viewers: Vec<_> = all.iter().filter(|p| p.file_name().unwrap() == "viewer.js").collect();
    assert_eq!(viewers, [&out.join("viewer.js")]);
    let pages: Vec<_> = all
        .iter()
        .filter(|p| p.file_name().unwrap() == "timeline.html")
        .collect();
    assert_eq!(pages.len(), 2);
    let root_js = out.join("viewer.js").canonicalize().unwrap();
    let root_css = out.join("viewer.css").canonicalize().unwrap();
    for page_path in pages {
        let page = std::fs::read_to_string(page_path).unwrap();
        let dir = page_path.parent().unwrap();
        let scripts = attribute_values(&page, "src");
        let sheets = attribute_values(&page, "href");
        assert_eq!(scripts.len(), 1, "{}", page_path.display());
        assert_eq!(sheets.len(), 1, "{}", page_path.display());
        assert_eq!(dir.join(&scripts[0]).canonicalize().unwrap(), root_js);
        assert_eq!(dir.join(&sheets[0]).canonicalize().unwrap(), root_css);
        // None of the viewer inline: no line of it, no style sheet.
        for line in viewer_js.lines().map(str::trim).filter(|l| l.len() > 20) {
            assert!(
                !page.contains(line),
                "{} inlines viewer code: {line}",
                page_path.display()
            );
        }
        assert!(!page.contains("<style"));
        // Its own data, inline, as JSON the viewer parses.
        let open = "<script type=\"application/json\" id=\"timeline-data\">";
        let start = page.find(open).unwrap() + open.len();
        let block = &page[start..start + page[start..].find("</script>").unwrap()];
        let data: serde_json::Value = serde_json::from_str(block).unwrap();
        assert!(!data["items"].as_array().unwrap().is_empty());
    }
    // A report without histories (a merged one) has no runs and no viewer.
    let bare = temp_dir("viewer-bare");
    write_report(&report, &bare).unwrap();
    assert!(!bare.join("viewer.js").exists() && !bare.join("runs").exists());
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&bare);
}

/// A lease-validity violation is drawn over the stretch the client believed a lease the masters
/// no longer held — from the lease's end to when the belief ended — not over the lease itself.
#[test]
fn a_lease_validity_band_covers_the_belief_past_the_lease_not_the_lease() {
    let file = root().join("scenarios/bug-extend-no-owner-check-safe.toml");
    let inputs = load_inputs(std::slice::from_ref(&file)).expect("the scenario loads");
    let report = Report::build(&run_ci(&inputs, &CiOptions::default()).expect("the gate runs"));
    let timeline = report.scenarios[0].timeline.as_ref().expect("a timeline");
    let band = timeline.violation.as_ref().expect("the lease-validity violation");
    assert_eq!(band.checker, "lease-validity");
    // The master's clock jump expires the key at 3.001 s; client-1 gives the grant up when its
    // renewal fails at 5.619 s.
    assert_eq!((band.start_us / 1_000, band.end_us / 1_000), (3_001, 5_619), "{band:?}");
}

/// `summary.md` rendered as CommonMark with GFM tables (as a CI job summary is): names and replay
/// commands holding backticks, pipes and angle brackets read back exactly, inside code, in their
/// table cells.
#[test]
fn the_markdown_summary_renders_names_and_commands_exactly() {
    use pulldown_cmark::{html, Options, Parser};
    let mut report = report().clone();
    let name = "<my-lock-standard-fenced>";
    let replay = "lockstep run `x.toml` | tee \"a b\"";
    report.scenarios[0].name = name.to_string();
    report.scenarios[0].replay = replay.to_string();
    let markdown = lockstep::report::markdown::summary(&report);
    let mut rendered = String::new();
    html::push_html(&mut rendered, Parser::new_ext(&markdown, Options::ENABLE_TABLES));
    let escaped = |t: &str| t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    assert!(
        rendered.contains(&format!("<td><code>{}</code></td>", escaped(name))),
        "the name as code in its cell:\n{rendered}"
    );
    assert!(
        rendered.contains(&format!("<code>{}</code>", escaped(replay))),
        "the replay command as code:\n{rendered}"
    );
    // Every table row has as many cells as the header: no pipe broke a row.
    for table in rendered.split("<table>").skip(1) {
        let table = &table[..table.find("</table>").expect("the table ends")];
        let head = &table[..table.find("</thead>").expect("a header")];
        let header = head.matches("<th>").count() + head.matches("<th ").count();
        for row in table.split("<tr>").skip(2) {
            assert_eq!(row.matches("<td").count(), header, "{row}");
        }
    }
    assert!(!rendered.contains("&amp;lt;"), "nothing escaped twice:\n{rendered}");
}
