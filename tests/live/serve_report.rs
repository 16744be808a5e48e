//! `lockstep serve --report`, test labels, and stopping: the report directory a serve run
//! writes (history, timeline naming the faults and the test labels at their times, verdicts
//! over the lock operations read off the commands, which test each fault hit), SIGTERM ending
//! `serve` promptly with its outputs written even while a script keeps the server busy, and the
//! history cap saying what it dropped.

use super::serve::{Conn, Serve};
use crate::common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// A scenario of one master whose clock jumps a minute forward at `jump_at_ms`.
fn jump_scenario(dir: &std::path::Path, jump_at_ms: u64) -> std::path::PathBuf {
    let file = dir.join("jump.toml");
    std::fs::write(
        &file,
        format!(
            r#"
name = "serve-report-jump"
description = "One master whose wall clock steps a minute forward."
seed = 11
duration_ms = 5000
[topology]
masters = 1
resource = "unfenced"
[lock]
algorithm = "naive"
ttl_ms = 1000
[[client]]
name = "app"
[[fault]]
at_ms = {jump_at_ms}
kind = "clock-jump"
node = "redis-1"
delta_ms = 60000
"#
        ),
    )
    .expect("writes the scenario");
    file
}

/// The one `runs/NAME/` directory of a report.
fn run_dir(report: &std::path::Path) -> std::path::PathBuf {
    let runs: Vec<_> = std::fs::read_dir(report.join("runs"))
        .expect("the report has runs/")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// Sends SIGTERM to `serve` and returns the exit code, the rest of stdout, and how long it took
/// to exit after the signal.
fn sigterm(serve: Serve) -> (i32, String, Duration) {
    let signalled = Instant::now();
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    (code, rest, signalled.elapsed())
}

#[test]
fn serve_report_names_the_fault_at_its_time_and_the_test_it_hit() {
    let dir = common::TempPath::dir("serve-report", "labels");
    let file = jump_scenario(&dir, 400);
    let report = dir.join("report");
    let serve = Serve::start(&[&file.display().to_string(), "--report", &report.display().to_string()]);
    let started = Instant::now();
    let mut a = Conn::open(serve.addr("redis-1"));
    let test = "tests/test_lock.py::test_lock_survives_a_clock_jump";
    let marker = format!("lockstep:test:{test}");
    // The marker is answered as Redis answers an ECHO.
    assert_eq!(a.call(&["ECHO", &marker]), format!("${}\r\n{marker}\r\n", marker.len()));
    assert_eq!(a.call(&["SET", "lock", "v1", "NX", "PX", "30000"]), "+OK\r\n");
    // The jump at 400 ms expires the 30 s lease at once: another connection gets the lock while
    // the first grant is still valid by true time — a mutual-exclusion violation.
    std::thread::sleep(Duration::from_millis(700).saturating_sub(started.elapsed()));
    assert_eq!(a.call(&["GET", "lock"]), "$-1\r\n");
    let mut b = Conn::open(serve.addr("redis-1"));
    assert_eq!(b.call(&["SET", "lock", "v2", "NX", "PX", "30000"]), "+OK\r\n");
    let (code, rest, took) = sigterm(serve);
    assert_eq!(code, 0, "{rest}");
    assert!(
        rest.contains("stopped (SIGTERM)") && rest.contains("report written to"),
        "{rest}"
    );
    assert!(took < Duration::from_secs(3), "SIGTERM to exit took {took:?}");

    let run = run_dir(&report);
    let history = std::fs::read_to_string(run.join("history.jsonl")).expect("history.jsonl");
    let note = format!("test {test} (conn");
    assert!(history.contains(&note), "the label note is in the history:\n{history}");
    assert!(history.contains("\"inferred\":true"), "{history}");
    let timeline = std::fs::read_to_string(run.join("timeline.html")).expect("timeline.html");
    assert!(timeline.contains(&note), "the timeline shows the label");
    // The fault at its time: the event's true time is 400 ms after the start, or a little later.
    let fault_line = history
        .lines()
        .find(|l| l.contains("\"type\":\"fault\""))
        .expect("the fault is in the history");
    let event: serde_json::Value = serde_json::from_str(fault_line).expect("an event");
    let at_us = event["at_us"].as_u64().expect("at_us");
    assert!((400_000..600_000).contains(&at_us), "{fault_line}");
    // The page's data: the fault as a mark named `clock-jump` at its time (µs since the start).
    // Its label names the kind and the node it struck (`clock-jump redis-1 +…`).
    let mark = format!("\"s\":{at_us},\"e\":{at_us},\"k\":\"fault\",\"t\":\"clock-jump ");
    assert!(
        timeline.contains(&mark),
        "the timeline names the fault at its time: {mark}"
    );

    let notes: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("serve.json")).expect("serve.json")).expect("json");
    assert_eq!(notes["stopped_by"], "SIGTERM", "{notes}");
    assert_eq!(notes["tests"][0]["test"], test, "{notes}");
    let fault = &notes["faults"][0];
    assert!(
        fault["fault"]
            .as_str()
            .is_some_and(|f| f.starts_with("clock-jump on redis-1")),
        "{notes}"
    );
    assert_eq!(fault["during"], serde_json::json!([test]), "{notes}");
    let summary = std::fs::read_to_string(report.join("summary.md")).expect("summary.md");
    assert!(summary.contains(&format!("during {test}")), "{summary}");

    // The two grants overlap in true time: mutual exclusion is judged invalid.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).expect("report.json")).expect("json");
    let checks = json["scenarios"][0]["checks"].as_array().expect("checks");
    let verdict = |name: &str| {
        checks
            .iter()
            .find(|c| c["checker"] == name)
            .map(|c| c["verdict"].as_str().unwrap_or_default().to_string())
    };
    assert_eq!(verdict("mutual-exclusion").as_deref(), Some("invalid"), "{checks:?}");
    assert_eq!(verdict("ownership").as_deref(), Some("valid"), "{checks:?}");
}

#[test]
fn serve_report_judges_a_clean_lock_valid_on_duration() {
    // No fault: a lock taken, released by compare-and-delete, taken again by another connection.
    let dir = common::TempPath::dir("serve-report", "clean");
    let report = dir.join("report");
    let serve = Serve::start(&["--duration-ms", "3000", "--report", &report.display().to_string()]);
    let mut a = Conn::open(serve.addr("redis-1"));
    let mut b = Conn::open(serve.addr("redis-1"));
    assert_eq!(a.call(&["SET", "lock", "v1", "NX", "PX", "30000"]), "+OK\r\n");
    assert_eq!(b.call(&["SET", "lock", "v2", "NX", "PX", "30000"]), "$-1\r\n");
    let release = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    assert_eq!(a.call(&["EVAL", release, "1", "lock", "v1"]), ":1\r\n");
    assert_eq!(b.call(&["SET", "lock", "v2", "NX", "PX", "30000"]), "+OK\r\n");
    let (code, rest) = serve.stop(None);
    assert_eq!(code, 0, "{rest}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).expect("report.json")).expect("json");
    let checks = json["scenarios"][0]["checks"].as_array().expect("checks").clone();
    for name in ["mutual-exclusion", "ownership"] {
        let check = checks.iter().find(|c| c["checker"] == name).expect(name);
        assert_eq!(check["verdict"], "valid", "{checks:?}");
    }
    let summary = std::fs::read_to_string(report.join("summary.md")).expect("summary.md");
    assert!(summary.contains("2 lock grants read off the commands"), "{summary}");
}

#[test]
fn sigterm_ends_serve_with_its_history_while_a_script_keeps_it_busy() {
    let dir = common::TempPath::dir("serve-report", "busy");
    let history = dir.join("history.jsonl");
    let report = dir.join("report");
    let serve = Serve::start(&[
        "--history",
        &history.display().to_string(),
        "--report",
        &report.display().to_string(),
    ]);
    let mut conn = Conn::open(serve.addr("redis-1"));
    assert_eq!(conn.call(&["SET", "lock", "v1", "NX", "PX", "30000"]), "+OK\r\n");
    // A backtracking match inside a built-in: Lua's instruction count does not see it, so it
    // keeps the serving thread busy for far longer than the test waits.
    let script =
        "local s = string.rep('a', 40) return string.find(s, string.rep('a?', 40) .. string.rep('a', 40) .. 'b')";
    let mut busy = Conn::open(serve.addr("redis-1"));
    let eval = format!("*3\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n0\r\n", script.len());
    busy.0.write_all(eval.as_bytes()).expect("writes");
    std::thread::sleep(Duration::from_millis(300));
    let (code, rest, took) = sigterm(serve);
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains("stopped (SIGTERM)"), "{rest}");
    // The grace the serving thread gets (1 s), and the writing.
    assert!(took < Duration::from_secs(4), "SIGTERM to exit took {took:?}");
    eprintln!(
        "SIGTERM to exit, serving thread busy in a script: {} ms",
        took.as_millis()
    );
    let lines = std::fs::read_to_string(&history).expect("the history was written");
    assert!(lines.contains("\"SET\",\"lock\",\"v1\""), "{lines}");
    assert!(lines.contains("serve end (SIGTERM"), "{lines}");
    assert!(run_dir(&report).join("timeline.html").is_file());
    let mut reply = Vec::new();
    let _ = busy.0.read_to_end(&mut reply);
}

#[test]
fn serve_caps_its_history_and_says_what_it_dropped() {
    let dir = common::TempPath::dir("serve-report", "cap");
    let history = dir.join("history.jsonl");
    let report = dir.join("report");
    let serve = Serve::start(&[
        "--history",
        &history.display().to_string(),
        "--report",
        &report.display().to_string(),
        "--history-max-events",
        "1000",
    ]);
    let mut conn = Conn::open(serve.addr("redis-1"));
    // 20,000 pipelined PINGs: every reply read back.
    const PINGS: usize = 20_000;
    let batch = "*1\r\n$4\r\nPING\r\n".repeat(PINGS);
    // Written from another thread while the replies are read here: neither side's buffers fill.
    let mut writer = conn.0.try_clone().expect("a second handle");
    let writing = std::thread::spawn(move || writer.write_all(batch.as_bytes()));
    let expected = "+PONG\r\n".len() * PINGS;
    let mut got = 0;
    let mut buf = vec![0u8; 64 * 1024];
    while got < expected {
        let n = conn.0.read(&mut buf).expect("replies");
        assert!(n > 0, "the server closed after {got} bytes");
        got += n;
    }
    writing.join().expect("the writer").expect("writes");
    let (code, rest, took) = sigterm(serve);
    assert_eq!(code, 0, "{rest}");
    assert!(took < Duration::from_secs(3), "SIGTERM to exit took {took:?}");
    assert!(rest.contains("events dropped past the history cap"), "{rest}");
    let lines: Vec<String> = std::fs::read_to_string(&history)
        .expect("the history was written")
        .lines()
        .map(str::to_string)
        .collect();
    // The cap, plus the end note and the `dropped` note.
    assert!(lines.len() <= 1002, "{} events", lines.len());
    let dropped = lines.last().expect("a last event");
    let event: serde_json::Value = serde_json::from_str(dropped).expect("an event");
    let text = event["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("dropped ") && text.contains(" events ") && text.contains(" s on"),
        "{dropped}"
    );
    let count: u64 = text["dropped ".len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(count >= (PINGS as u64) - 1000, "{text}");
    let notes: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("serve.json")).expect("serve.json")).expect("json");
    assert_eq!(notes["dropped_events"], count, "{notes}");
    let summary = std::fs::read_to_string(report.join("summary.md")).expect("summary.md");
    assert!(summary.contains("History incomplete"), "{summary}");
}
