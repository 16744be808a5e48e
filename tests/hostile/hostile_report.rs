//! A hostile review of the report directory, over the binary: `--report OUT` replaces only a
//! directory lockstep wrote (every entry listed in its manifest), never deletes a file it did
//! not write, swaps the new report in with one atomic exchange, and writes its other files
//! (`--summary`, `--history`) readable by all. Exit codes are exactly 0, 1 or 2.

use std::path::{Path, PathBuf};

use crate::common;
use crate::hostile::tree;
use common::lockstep_in;

fn lockstep(args: &[&str]) -> (i32, String, String) {
    lockstep_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// A fresh, empty temporary directory for one test.
fn temp(name: &str) -> common::TempPath {
    common::TempPath::dir("hostile-report", name)
}

fn shipped(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
        .display()
        .to_string()
}

fn s(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

/// `lockstep ci` of one shipped scenario into `out`: the exit code and standard error.
fn ci(out: &Path) -> (i32, String) {
    let (code, stdout, stderr) = lockstep(&["ci", &shipped("kleppmann-gc-pause.toml"), "--report", s(out), "--quiet"]);
    (code, format!("{stdout}{stderr}"))
}

/// What `mkdir d; echo '{"hello":1}' > d/report.json; echo precious > d/keep.txt` (and a
/// subfolder) leaves: a directory with a `report.json` that lockstep did not write.
fn foreign_dir(dir: &Path) -> PathBuf {
    let d = dir.join("d");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("report.json"), "{\"hello\":1}\n").unwrap();
    std::fs::write(d.join("keep.txt"), "precious\n").unwrap();
    std::fs::write(d.join("sub/deeper.txt"), "also mine\n").unwrap();
    d
}

fn assert_foreign_dir_intact(d: &Path) {
    assert_eq!(std::fs::read_to_string(d.join("keep.txt")).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_to_string(d.join("sub/deeper.txt")).unwrap(),
        "also mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("report.json")).unwrap(),
        "{\"hello\":1}\n"
    );
}

#[test]
fn ci_refuses_a_directory_whose_report_json_it_did_not_write_and_deletes_nothing() {
    let dir = temp("ci-foreign");
    let d = foreign_dir(&dir);
    let before = tree(&dir);
    let (code, text) = ci(&d);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!("{}: not replacing", d.display())),
        "names the directory: {text}"
    );
    assert!(
        text.contains(&format!("{} was not written by lockstep", d.join("keep.txt").display())),
        "names the file: {text}"
    );
    assert_foreign_dir_intact(&d);
    // Nothing written beside it either (no staging directory left).
    assert_eq!(tree(&dir), before);
}

#[test]
fn merge_report_refuses_a_directory_whose_report_json_it_did_not_write() {
    let dir = temp("merge-foreign");
    let shard = dir.join("shard");
    let (code, text) = ci(&shard);
    assert_eq!(code, 0, "{text}");
    let d = foreign_dir(&dir);
    let before = tree(&dir);
    let (code, stdout, stderr) = lockstep(&["merge", s(&shard.join("report.json")), "--report", s(&d)]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("keep.txt") && stderr.contains("not written by lockstep"),
        "{stderr}"
    );
    assert_foreign_dir_intact(&d);
    assert_eq!(tree(&dir), before);
}

#[cfg(unix)]
#[test]
fn a_report_json_linked_to_a_file_outside_is_refused_and_the_target_untouched() {
    let dir = temp("link");
    let victim = dir.join("passwd");
    std::fs::write(&victim, "root:x:0:0\n").unwrap();
    let d = dir.join("d");
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::symlink(&victim, d.join("report.json")).unwrap();
    let (code, text) = ci(&d);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!(
            "{} was not written by lockstep",
            d.join("report.json").display()
        )),
        "{text}"
    );
    assert!(d.join("report.json").is_symlink());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:x:0:0\n");
    // OUT itself a link to a directory: refused, what it points to untouched.
    let target = dir.join("target");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("mine"), "x").unwrap();
    let link = dir.join("out-link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (code, text) = ci(&link);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("symbolic link"), "{text}");
    assert_eq!(tree(&target), ["mine"]);
}

#[cfg(unix)]
#[test]
fn a_listed_file_that_became_a_link_or_an_extra_file_makes_a_report_unreplaceable() {
    let dir = temp("tampered");
    let out = dir.join("out");
    let (code, text) = ci(&out);
    assert_eq!(code, 0, "{text}");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();

    // An extra file, deep inside.
    let extra = out.join("charts/notes.txt");
    std::fs::write(&extra, "mine").unwrap();
    let (code, text) = ci(&out);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!("{} was not written by lockstep", extra.display())) && text.contains("not listed"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&extra).unwrap(), "mine");
    std::fs::remove_file(&extra).unwrap();

    // A listed file replaced by a link.
    std::fs::remove_file(out.join("summary.md")).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("summary.md")).unwrap();
    let (code, text) = ci(&out);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("summary.md was not written by lockstep") && text.contains("is now a symbolic link"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    std::fs::remove_file(out.join("summary.md")).unwrap();

    // A manifest that is not lockstep's.
    let manifest = out.join("manifest.json");
    let real = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, real.replace("lockstep-report-manifest", "something-else")).unwrap();
    let (code, text) = ci(&out);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("manifest.json was not written by lockstep"), "{text}");
    // A manifest reaching outside its directory.
    let outside: serde_json::Value = serde_json::from_str(&real).unwrap();
    let mut outside = outside;
    outside["files"].as_array_mut().unwrap().push("../victim".into());
    std::fs::write(&manifest, serde_json::to_string(&outside).unwrap()).unwrap();
    let (code, text) = ci(&out);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("not a path inside the directory"), "{text}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

    // Restored (a missing listed file is fine): replaced again.
    std::fs::write(&manifest, &real).unwrap();
    let (code, text) = ci(&out);
    assert_eq!(code, 0, "{text}");
    assert!(out.join("summary.md").is_file());
}

/// The manifest of the report in `out`, checked against what is there: every entry listed with
/// its kind, the manifest included.
fn checked_manifest(out: &Path) -> serde_json::Value {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], "lockstep-report-manifest");
    assert_eq!(manifest["schema_version"], 1);
    assert_eq!(manifest["tool"]["name"], "lockstep");
    let names = |key: &str| -> Vec<String> {
        let list = manifest[key].as_array().unwrap();
        list.iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    let (files, dirs) = (names("files"), names("dirs"));
    let mut listed: Vec<String> = files.iter().chain(&dirs).cloned().collect();
    listed.sort();
    assert_eq!(tree(out), listed, "the manifest lists exactly what is there");
    for dir in &dirs {
        assert!(out.join(dir).is_dir() && !out.join(dir).is_symlink(), "{dir}");
    }
    assert!(files.contains(&"manifest.json".to_string()) && files.contains(&"report.json".to_string()));
    manifest
}

#[test]
fn a_second_run_replaces_its_own_earlier_report() {
    let dir = temp("again");
    let out = dir.join("out");
    let (code, text) = ci(&out);
    assert_eq!(code, 0, "{text}");
    let first = checked_manifest(&out);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        first["run_id"], report["run_id"],
        "the manifest carries the run identity"
    );
    assert!(first["dirs"].as_array().unwrap().iter().any(|d| d == "charts"));
    // A different scenario: the old report's files go, the new one's come.
    let (code, stdout, stderr) = lockstep(&[
        "ci",
        &shipped("kleppmann-gc-pause-fenced.toml"),
        "--report",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    checked_manifest(&out);
    assert!(!out.join("charts/timeline-kleppmann-gc-pause.svg").exists());
    assert!(out.join("charts/timeline-kleppmann-gc-pause-fenced.svg").is_file());
    // Nothing hidden is left beside it.
    assert_eq!(
        tree(&dir).iter().filter(|p| p.starts_with('.')).count(),
        0,
        "{:?}",
        tree(&dir)
    );
    // An empty directory is a fine OUT too.
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, text) = ci(&empty);
    assert_eq!(code, 0, "{text}");
    checked_manifest(&empty);
}

#[cfg(unix)]
#[test]
fn the_earlier_report_is_exchanged_out_and_removed_entry_by_entry() {
    use std::os::unix::fs::MetadataExt;
    let dir = temp("exchange");
    let out = dir.join("out");
    let (code, text) = ci(&out);
    assert_eq!(code, 0, "{text}");
    // Held open: the old report's directory, to see what became of it after the next run.
    let old = std::fs::File::open(&out).unwrap();
    let old_ino = old.metadata().unwrap().ino();
    let old_manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    let (code, text) = ci(&out);
    assert_eq!(code, 0, "{text}");
    let new = std::fs::metadata(&out).unwrap();
    assert_ne!(new.ino(), old_ino, "OUT is a new directory");
    // The old directory was removed (no link to it remains anywhere), not left renamed away.
    assert_eq!(old.metadata().unwrap().nlink(), 0, "the old report's directory is gone");
    // The new report has its own manifest (same run: same listing, written anew).
    checked_manifest(&out);
    let new_manifest = std::fs::metadata(out.join("manifest.json")).unwrap();
    assert_eq!(new_manifest.mode() & 0o777, 0o644);
    assert_eq!(
        std::fs::read_to_string(out.join("manifest.json")).unwrap(),
        old_manifest
    );
    assert_eq!(new.mode() & 0o777, 0o755);
    // Nothing left beside it: the old report was not renamed away and kept.
    let beside: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, ["out"], "{:?}", tree(&dir));
}

#[test]
fn a_file_lockstep_adds_to_a_report_is_recorded_and_the_report_stays_replaceable() {
    // What `live --report` does (`live.json` beside the report) and the harness (its
    // `counterexamples/`): files written into a report directory after it was swapped in.
    let dir = temp("added");
    let out = dir.join("out");
    let (code, text) = ci(&out);
    assert_eq!(code, 0, "{text}");
    lockstep::report::write_atomic(&out.join("live.json"), b"{}").unwrap();
    lockstep::report::write_atomic(&out.join("counterexamples/x.toml"), b"# x").unwrap();
    let manifest = checked_manifest(&out);
    assert!(manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "counterexamples/x.toml"));
    assert!(manifest["dirs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "counterexamples"));
    let (code, text) = ci(&out);
    assert_eq!(code, 0, "{text}");
    assert!(!out.join("live.json").exists() && !out.join("counterexamples").exists());
    checked_manifest(&out);
}

#[test]
fn a_stale_old_report_beside_out_with_a_foreign_file_keeps_that_file() {
    let dir = temp("stale-foreign");
    let out = dir.join("out");
    let (code, text) = ci(&out);
    assert_eq!(code, 0, "{text}");
    // An earlier report a killed run had exchanged out, into which a file of someone's slipped.
    let stale = dir.join(".out.new.abc123");
    let (code, text) = ci(&stale);
    assert_eq!(code, 0, "{text}");
    std::fs::write(stale.join("keep.txt"), "mine").unwrap();
    // And one whose every entry is lockstep's.
    let clean = dir.join(".out.old.def456");
    let (code, text) = ci(&clean);
    assert_eq!(code, 0, "{text}");
    let (code, text) = ci(&out);
    assert_eq!(code, 0, "{text}");
    assert_eq!(std::fs::read_to_string(stale.join("keep.txt")).unwrap(), "mine");
    assert!(stale.join("manifest.json").is_file(), "left whole, recognisable");
    assert!(!clean.exists(), "{:?}", tree(&dir));
}

#[cfg(unix)]
#[test]
fn summary_and_history_files_are_readable_by_all() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp("modes");
    let history = dir.join("h.jsonl");
    let (code, stdout, stderr) = lockstep(&["run", &shipped("kleppmann-gc-pause.toml"), "--history", s(&history)]);
    assert!(code == 0 || code == 1, "{stdout}{stderr}");
    let summary = dir.join("s.json");
    let (code, stdout, stderr) = lockstep(&[
        "explore",
        "--seeds",
        "2",
        "--jobs",
        "1",
        "--quiet",
        "--summary",
        s(&summary),
    ]);
    assert!(code == 0 || code == 1, "{stdout}{stderr}");
    for file in [&history, &summary] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{}: {mode:o}", file.display());
    }
    // Rewritten over an existing private file: readable by all too.
    std::fs::set_permissions(&summary, std::fs::Permissions::from_mode(0o600)).unwrap();
    lockstep::report::write_atomic(&summary, b"{}").unwrap();
    assert_eq!(std::fs::metadata(&summary).unwrap().permissions().mode() & 0o777, 0o644);
}
