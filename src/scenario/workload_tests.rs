//! Parsing and validation of the workload settings that use the grant: work mode and margin,
//! refusal after validity, reads and writes per turn, tasks per client.

use super::{Scenario, ScenarioError};
use crate::model::{TasksSpec, WorkMode, WorkMs, WorkloadSpec};

const MINIMAL: &str = r#"
name = "minimal"
description = "defaults everywhere"
[lock]
algorithm = "watchdog"
"#;

fn parse(source: &str) -> Scenario {
    match Scenario::from_str(source, "test.toml") {
        Ok(s) => s,
        Err(e) => panic!("unexpected error: {e}\n{source}"),
    }
}

fn parse_err(source: &str) -> ScenarioError {
    match Scenario::from_str(source, "test.toml") {
        Ok(s) => panic!("expected an error, parsed {s:?}\n{source}"),
        Err(e) => e,
    }
}

/// Asserts the error's field, its line (the first line starting with `prefix`) and a part of
/// its message.
#[track_caller]
fn assert_error(source: &str, field: &str, prefix: &str, message: &str) {
    let err = parse_err(source);
    let line = source
        .lines()
        .position(|l| l.trim_start().starts_with(prefix))
        .map(|i| i + 1);
    assert_eq!(err.field.as_deref(), Some(field), "field of: {err}");
    assert_eq!(err.line, line, "line of: {err}");
    assert!(err.column.is_some(), "column of: {err}");
    assert_eq!(err.path, "test.toml");
    assert!(err.to_string().contains(message), "{err}");
}

#[test]
fn defaults_are_todays_workload() {
    let s = parse(MINIMAL);
    assert_eq!(s.workload, WorkloadSpec::defaults());
    assert_eq!(s.workload.work, WorkMode::Fixed);
    assert!(!s.workload.refuse_write_after_validity);
    assert_eq!((s.workload.reads_per_turn, s.workload.writes_per_turn), (1, 1));
    assert_eq!(s.workload.tasks, None);
    assert!(s.clients.iter().all(|c| c.effective_tasks(&s.workload).is_none()));
}

#[test]
fn every_setting_parses_and_round_trips() {
    let source = format!(
        "{MINIMAL}[workload]\nwork = \"until-validity\"\nvalidity_margin_ms = 250\n\
         refuse_write_after_validity = true\nreads_per_turn = 3\nwrites_per_turn = 0\ntasks = 4\n\
         share_lock_object = false\n[[client]]\nname = \"a\"\ntasks = 2\n[[client]]\nname = \"b\"\n"
    );
    let s = parse(&source);
    let w = &s.workload;
    assert_eq!(w.work, WorkMode::UntilValidity { margin_ms: 250 });
    assert!(w.refuse_write_after_validity);
    assert_eq!((w.reads_per_turn, w.writes_per_turn), (3, 0));
    let four = TasksSpec {
        tasks: 4,
        share_lock_object: false,
    };
    assert_eq!(w.tasks, Some(four));
    // A client's own count keeps the workload's sharing.
    assert_eq!(
        s.clients[0].effective_tasks(w),
        Some(TasksSpec {
            tasks: 2,
            share_lock_object: false
        })
    );
    assert_eq!(s.clients[1].effective_tasks(w), Some(four));
    let text = s.to_toml();
    assert!(!text.contains("work_ms"), "{text}");
    assert_eq!(parse(&text), s);

    // A client's count alone shares the one lock object, as the script lock's default does.
    let s = parse(&format!("{MINIMAL}[[client]]\nname = \"a\"\ntasks = 3\n"));
    assert_eq!(
        s.clients[0].effective_tasks(&s.workload),
        Some(TasksSpec {
            tasks: 3,
            share_lock_object: true
        })
    );
    assert_eq!(parse(&s.to_toml()), s);
}

#[test]
fn script_lock_tasks_still_round_trip() {
    let source = format!(
        "{}\ntasks = 2\nshare_lock_object = false\n",
        MINIMAL.replace("\"watchdog\"", "\"script\"")
    );
    let s = parse(&source);
    assert_eq!(s.workload.tasks, None);
    assert_eq!(parse(&s.to_toml()), s);
    // The script lock at its task defaults with workload tasks: no conflict once written back.
    let s = parse(&format!(
        "{}[workload]\ntasks = 2\n",
        MINIMAL.replace("\"watchdog\"", "\"script\"")
    ));
    assert_eq!(parse(&s.to_toml()), s);
}

#[test]
fn bad_values_name_file_line_and_field() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "[workload]\nvalidity_margin_ms = 10\n",
            "workload.validity_margin_ms",
            "validity_margin_ms",
            "only used with work = \"until-validity\"",
        ),
        (
            "[workload]\nwork = \"until-validity\"\nwork_ms = 10\n",
            "workload.work_ms",
            "work_ms",
            "not used with work = \"until-validity\"",
        ),
        (
            "[workload]\nwork = \"until-validity\"\nvalidity_margin_ms = 10000\n",
            "workload.validity_margin_ms",
            "validity_margin_ms",
            "must be below lock.ttl_ms (10000)",
        ),
        (
            "[workload]\nreads_per_turn = 0\n",
            "workload.reads_per_turn",
            "reads_per_turn",
            "must be between 1 and 100",
        ),
        (
            "[workload]\nwrites_per_turn = 101\n",
            "workload.writes_per_turn",
            "writes_per_turn",
            "must be between 0 and 100",
        ),
        (
            "[workload]\ntasks = 0\n",
            "workload.tasks",
            "tasks",
            "must be between 1 and 16",
        ),
        (
            "[workload]\ntasks = 17\n",
            "workload.tasks",
            "tasks",
            "must be between 1 and 16",
        ),
        (
            "[workload]\nwork = \"until-validity\"\n[[client]]\nname = \"a\"\nwork_ms = 5\n",
            "client[0].work_ms",
            "work_ms",
            "not used with workload.work = \"until-validity\"",
        ),
        (
            "[[client]]\nname = \"a\"\ntasks = 99\n",
            "client[0].tasks",
            "tasks",
            "must be between 1 and 16",
        ),
    ];
    for (extra, field, prefix, message) in cases {
        assert_error(&format!("{MINIMAL}{extra}"), field, prefix, message);
    }
    // An unknown mode is a serde error on the key.
    let err = parse_err(&format!("{MINIMAL}[workload]\nwork = \"forever\"\n"));
    assert_eq!(err.field.as_deref(), Some("workload.work"), "{err}");
    assert!(err.to_string().contains("until-validity"), "{err}");
}

#[test]
fn tasks_are_written_in_one_place() {
    let script = MINIMAL.replace("\"watchdog\"", "\"script\"");
    let both = format!("{script}tasks = 2\n[workload]\ntasks = 3\n");
    let err = parse_err(&both);
    assert_eq!(err.field.as_deref(), Some("workload.tasks"), "{err}");
    assert!(err.to_string().contains("also set by `lock.tasks`"), "{err}");
    let share = format!("{script}share_lock_object = false\n[workload]\nshare_lock_object = true\n");
    assert_eq!(parse_err(&share).field.as_deref(), Some("workload.share_lock_object"));
    let share_only = format!("{script}tasks = 2\n[workload]\nshare_lock_object = true\n");
    assert!(parse_err(&share_only)
        .to_string()
        .contains("write `lock.share_lock_object`"));
    let client = format!("{script}tasks = 2\n[[client]]\nname = \"a\"\ntasks = 3\n");
    assert_eq!(parse_err(&client).field.as_deref(), Some("client[0].tasks"));
}

#[test]
fn a_fixed_work_range_still_works_with_the_other_settings() {
    let s = parse(&format!(
        "{MINIMAL}[workload]\nwork_ms = [10, 20]\nreads_per_turn = 2\nrefuse_write_after_validity = true\n"
    ));
    assert_eq!(s.workload.work, WorkMode::Fixed);
    assert_eq!(s.workload.work_ms, WorkMs::Range(10, 20));
    assert_eq!(parse(&s.to_toml()), s);
}
