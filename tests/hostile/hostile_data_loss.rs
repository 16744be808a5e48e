//! Issue 40's data-loss cases, over the binary under a memory limit: a failed write into a report
//! directory lists nothing (so a file the user later puts at that name survives the next
//! report), a hidden directory merely named like a leftover (`.OUT.new.XXXXXX`) is never removed
//! (only one holding lockstep's own owner marker is), and no output is written through a link,
//! over an input of any flag, or twice to one path.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common;
use crate::hostile::tree;
use common::{lockstep_limited, LimitedRun};

/// A fresh, empty temporary directory for one test.
fn temp(name: &str) -> common::TempPath {
    common::TempPath::dir("hostile-data-loss", name)
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

/// The binary in `cwd` under the memory limit, killed after two minutes.
fn limited(cwd: &Path, args: &[&str]) -> LimitedRun {
    lockstep_limited(cwd, args, Duration::from_secs(120))
}

/// `lockstep ci -q` of one shipped scenario into `out`.
fn ci(cwd: &Path, out: &Path) -> LimitedRun {
    limited(
        cwd,
        &["ci", "-q", &shipped("kleppmann-gc-pause.toml"), "--report", s(out)],
    )
}

#[test]
fn a_failed_write_into_a_report_lists_nothing_and_the_user_s_file_later_put_there_survives() {
    let dir = temp("failed-write");
    let out = dir.join("r");
    let first = ci(&dir, &out);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    // A name of 250 bytes is a valid file name, but the temporary file beside it
    // (`.NAME.XXXXXX.tmp`) is not: the write fails (ENAMETOOLONG), after the name was recorded.
    let name = "n".repeat(250);
    let history = out.join(&name);
    let failed = limited(
        &dir,
        &[
            "run",
            "-q",
            &shipped("kleppmann-gc-pause.toml"),
            "--history",
            s(&history),
        ],
    );
    assert_eq!(failed.code, 2, "{}{}", failed.stdout, failed.stderr);
    assert!(!history.exists());
    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(!manifest.contains(&name), "a name never written is listed:\n{manifest}");
    // The user puts a file of their own there: the next report refuses the directory, naming
    // it, and removes nothing.
    std::fs::write(&history, "mine\n").unwrap();
    let before = tree(&out);
    let second = ci(&dir, &out);
    assert_eq!(second.code, 2, "{}{}", second.stdout, second.stderr);
    assert!(
        second.stderr.contains(&name) && second.stderr.contains("was not written by lockstep"),
        "{}",
        second.stderr
    );
    assert_eq!(std::fs::read_to_string(&history).unwrap(), "mine\n");
    assert_eq!(tree(&out), before);
    // A write that succeeds is listed, and the report stays replaceable by the next one.
    std::fs::remove_file(&history).unwrap();
    let ok = out.join("h.jsonl");
    let run = limited(
        &dir,
        &["run", "-q", &shipped("kleppmann-gc-pause.toml"), "--history", s(&ok)],
    );
    assert!(run.code == 0 || run.code == 1, "{}{}", run.stdout, run.stderr);
    assert!(std::fs::read_to_string(out.join("manifest.json"))
        .unwrap()
        .contains("\"h.jsonl\""));
    let third = ci(&dir, &out);
    assert_eq!(third.code, 0, "{}{}", third.stdout, third.stderr);
    assert!(!ok.exists());
}

/// A manifest in lockstep's format listing `files` (and `dirs`): what anyone can write.
fn forged_manifest(dir: &Path, dirs: &[&str], files: &[&str]) {
    let mut files: Vec<&str> = files.iter().copied().chain(["manifest.json"]).collect();
    files.sort();
    let manifest = serde_json::json!({
        "format": "lockstep-report-manifest",
        "schema_version": 1,
        "tool": {"name": "lockstep", "version": env!("CARGO_PKG_VERSION")},
        "dirs": dirs,
        "files": files,
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
}

/// Copies the directory `from` to `to`, files and directories (what `cp -r` does).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_directory_merely_named_like_a_leftover_is_never_removed() {
    let dir = temp("leftover-names");
    let out = dir.join("r");
    let first = ci(&dir, &out);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    // The user's backup, named like a staging directory (six alphanumerics), no manifest.
    let backup = dir.join(".r.new.backup");
    std::fs::create_dir_all(backup.join("sub")).unwrap();
    std::fs::write(backup.join("keep.txt"), "mine\n").unwrap();
    std::fs::write(backup.join("sub/deeper.txt"), "also mine\n").unwrap();
    // One with a forged manifest listing everything in it.
    let forged = dir.join(".r.old.forged");
    std::fs::create_dir_all(forged.join("charts")).unwrap();
    std::fs::write(forged.join("report.json"), "mine\n").unwrap();
    std::fs::write(forged.join("charts/x.svg"), "mine\n").unwrap();
    forged_manifest(&forged, &["charts"], &["charts/x.svg", "report.json"]);
    // A copy of a real report (its owner marker names the directory it was made in, not this one).
    let copied = dir.join(".r.new.copied");
    copy_dir(&out, &copied);
    // And one lockstep did make (a report written there, as a killed run's exchanged-out
    // report is): removed, so the marker does not stop the cleaning of lockstep's own.
    let own = dir.join(".r.old.lsmade");
    let made = ci(&dir, &own);
    assert_eq!(made.code, 0, "{}{}", made.stdout, made.stderr);
    let (backup_tree, forged_tree, copied_tree) = (tree(&backup), tree(&forged), tree(&copied));
    let second = ci(&dir, &out);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert_eq!(tree(&backup), backup_tree);
    assert_eq!(
        std::fs::read_to_string(backup.join("sub/deeper.txt")).unwrap(),
        "also mine\n"
    );
    assert_eq!(tree(&forged), forged_tree);
    assert_eq!(std::fs::read_to_string(forged.join("report.json")).unwrap(), "mine\n");
    assert_eq!(tree(&copied), copied_tree);
    assert!(!own.exists(), "lockstep's own leftover is removed: {:?}", tree(&dir));
    // What is left is named, not silently kept.
    for kept in [&backup, &forged, &copied] {
        assert!(second.stderr.contains(s(kept)), "{}", second.stderr);
    }
}

#[cfg(unix)]
#[test]
fn no_output_is_written_through_a_link_over_an_input_or_twice_to_one_path() {
    let dir = temp("links-inputs");
    // `--jsonl LINK`: refused; the link's target is not truncated.
    let target = dir.join("precious.txt");
    std::fs::write(&target, "precious\n").unwrap();
    let link = dir.join("seeds.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let explore = |extra: &[&str]| {
        let mut args = vec!["explore", "--seeds", "1", "--jobs", "1", "--quiet", "--shrink", "0"];
        args.extend_from_slice(extra);
        limited(&dir, &args)
    };
    let run = explore(&["--jsonl", s(&link)]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("--jsonl") && run.stderr.contains("symbolic link"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    assert!(link.is_symlink());
    // `--against F` is an input: no output may be F.
    let scenario = dir.join("f.toml");
    std::fs::copy(shipped("baseline-token-release.toml"), &scenario).unwrap();
    let original = std::fs::read_to_string(&scenario).unwrap();
    for flag in ["--jsonl", "--summary"] {
        let run = explore(&["--against", s(&scenario), flag, s(&scenario)]);
        assert_eq!(run.code, 2, "{flag}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(flag) && run.stderr.contains("would overwrite that input"),
            "{}",
            run.stderr
        );
        assert_eq!(std::fs::read_to_string(&scenario).unwrap(), original);
    }
    // Two outputs at one path (spelled two ways): refused, naming both flags; nothing written.
    let both = dir.join("both.json");
    let other_spelling = dir.join(".").join("both.json");
    let run = explore(&["--jsonl", s(&both), "--summary", s(&other_spelling)]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("--jsonl") && run.stderr.contains("--summary") && run.stderr.contains("same path"),
        "{}",
        run.stderr
    );
    assert!(!both.exists());
    // The same rule for every subcommand: `live`'s history inside its report directory,
    // refused before any server starts or client runs.
    let report = dir.join("out");
    let run = limited(
        &dir,
        &[
            "live",
            &shipped("live/client-crash.toml"),
            "--client",
            "true",
            "--report",
            s(&report),
            "--history",
            s(&report.join("h.jsonl")),
        ],
    );
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("--history") && run.stderr.contains("is inside --report"),
        "{}",
        run.stderr
    );
    assert!(!report.exists());
}
