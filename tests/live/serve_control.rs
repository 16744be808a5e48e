//! Faults the test chooses (`lockstep serve --control`): in-band commands (`LOCKSTEP FAULT`,
//! `SHUTDOWN`, `DEBUG SLEEP`, `ROLE`), the HTTP endpoint, faults timed from a test's start, a
//! label covering every connection of its client, holders told apart by value, and the suite run
//! by serve with its result in the report's headline — by hand over RESP, and from pytest and
//! mocha suites crashing the master while they hold the lock.

use super::serve::{Conn, Serve};
use crate::common;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The control endpoint's URL from serve's banner.
fn control_url(serve: &Serve) -> String {
    serve
        .banner
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("control"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("a control line in the banner:\n{}", serve.banner))
        .to_string()
}

/// One HTTP request to the endpoint: status and body.
fn http(url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connects to the control endpoint");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("writes");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("reads the response");
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("an HTTP response: {response:?}"));
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
    (status, body)
}

/// `serve.json` of a report.
fn serve_json(report: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(report.join("serve.json")).expect("serve.json");
    serde_json::from_str(&text).expect("serve.json is JSON")
}

/// The tests each fault of `notes` hit, by fault kind prefix (`crash`, `shutdown`, ...).
fn hits(notes: &serde_json::Value, kind: &str) -> Vec<Vec<String>> {
    notes["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .filter(|f| f["fault"].as_str().is_some_and(|t| t.starts_with(kind)))
        .map(|f| {
            f["during"]
                .as_array()
                .expect("during")
                .iter()
                .map(|t| t.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .collect()
}

/// Reads replies until the connection is reset or closed (a crashed master).
fn until_closed(conn: &mut Conn) {
    let mut buf = [0u8; 256];
    conn.0.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    while let Ok(n) = conn.0.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

#[test]
fn in_band_control_commands_strike_the_master_and_name_the_test_they_hit() {
    let report = common::TempPath::unused("serve-control", "report");
    let serve = Serve::start(&[
        "--masters",
        "1",
        "--control",
        "--restart-after-ms",
        "150",
        "--report",
        &report.display().to_string(),
    ]);
    let addr = serve.addr("redis-1").to_string();
    let mut conn = Conn::open(&addr);
    assert_eq!(conn.call(&["ROLE"]), "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n");
    assert!(conn
        .call(&["LOCKSTEP", "FAULT", "explode"])
        .starts_with("-ERR unknown fault kind `explode`"));
    assert!(
        conn.call(&["LOCKSTEP", "FAULT", "pause", "node=app", "duration_ms=5"])
            .contains("serve runs no clients"),
        "a fault on a client name is refused"
    );
    // The test labels itself, takes the lock and crashes the master it holds it on.
    assert!(conn
        .call(&["ECHO", "lockstep:test:test_inband_crash"])
        .contains("test_inband_crash"));
    assert_eq!(conn.call(&["SET", "lock", "mine", "NX", "PX", "10000"]), "+OK\r\n");
    assert_eq!(conn.call(&["LOCKSTEP", "FAULT", "crash"]), "+OK\r\n");
    until_closed(&mut conn);
    // The restart policy brings it back empty (no persistence); the reconnection is the test's.
    std::thread::sleep(Duration::from_millis(600));
    let mut again = Conn::open(&addr);
    assert_eq!(again.call(&["GET", "lock"]), "$-1\r\n");
    // Another client's grant while the first's validity runs: a mutual-exclusion violation.
    assert_eq!(again.call(&["SET", "lock", "theirs", "NX", "PX", "10000"]), "+OK\r\n");
    // DEBUG SLEEP stalls the master and answers when it ends.
    assert!(again.call(&["ECHO", "lockstep:test:test_sleep"]).contains("test_sleep"));
    let started = std::time::Instant::now();
    assert_eq!(again.call(&["DEBUG", "SLEEP", "0.3"]), "+OK\r\n");
    assert!(
        started.elapsed() >= Duration::from_millis(290),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(again.call(&["SHUTDOWN", "ABORT"]), "-ERR No shutdown in progress.\r\n");
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    assert_eq!(code, 0, "{rest}");
    let notes = serve_json(&report);
    assert_eq!(hits(&notes, "crash"), [["test_inband_crash"]], "{notes:#}");
    assert_eq!(hits(&notes, "pause"), [["test_sleep"]], "{notes:#}");
    assert_eq!(
        hits(&notes, "restart").len(),
        1,
        "the policy's restart is recorded: {notes:#}"
    );
    let rows = notes["per_test"].as_array().expect("per_test");
    let crash_row = rows.iter().find(|r| r["test"] == "test_inband_crash").expect("a row");
    assert_eq!(
        crash_row["violations"],
        serde_json::json!(["mutual-exclusion"]),
        "{notes:#}"
    );
    let summary = std::fs::read_to_string(report.join("summary.md")).expect("summary.md");
    assert!(summary.contains("lockstep: mutual-exclusion INVALID"), "{summary}");
    assert!(
        !summary.contains("✅ PASS"),
        "an invalid safety checker is never a pass:\n{summary}"
    );
    let index = std::fs::read_to_string(report.join("index.html")).expect("index.html");
    assert!(
        index.contains("test_inband_crash"),
        "index.html names the test the crash hit"
    );
    assert!(!index.contains("replay: <code>"), "a real-time run offers no replay");
    // The timeline: a lane per test, and the test labels drawn with their names.
    let run = std::fs::read_dir(report.join("runs"))
        .expect("runs/")
        .flatten()
        .next()
        .expect("a run")
        .path();
    let charts: String = std::fs::read_dir(report.join("charts"))
        .expect("charts/")
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    assert!(
        charts.contains("served in real time by lockstep serve") && !charts.contains("TTL 1000 ms"),
        "the chart's title says what ran, not the unused lock settings"
    );
    let drawn = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/viewer-labels.js"))
        .arg(run.join("timeline.html"))
        .arg(report.join("viewer.js"))
        .arg("1600")
        .output();
    match drawn {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let whole = text.lines().last().unwrap_or_default();
            assert!(
                whole.contains(r#""text":"test test_inband_crash","class":"test-label""#),
                "{whole}"
            );
            assert!(
                whole.contains(r#""text":"test_inband_crash""#),
                "a lane named after the test: {whole}"
            );
        }
        Err(e) => assert!(
            !super::serve::in_ci(),
            "node is not installed ({e}); .ci/run installs it"
        ),
    }
}

#[test]
fn lockstep_fault_is_refused_without_control_and_the_http_endpoint_injects_and_labels() {
    let plain = Serve::start(&["--masters", "1"]);
    let mut conn = Conn::open(plain.addr("redis-1"));
    assert!(conn
        .call(&["LOCKSTEP", "FAULT", "crash"])
        .starts_with("-ERR LOCKSTEP FAULT is disabled: start lockstep serve with --control"));
    drop(plain);

    let report = common::TempPath::unused("serve-control", "http");
    let serve = Serve::start(&[
        "--masters",
        "1",
        "--control",
        "--restart-after-ms",
        "100",
        "--report",
        &report.display().to_string(),
    ]);
    let url = control_url(&serve);
    let (status, body) = http(&url, "GET", "/", "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("redis-1"), "{body}");
    assert_eq!(http(&url, "POST", "/label", r#"{"test":"test_http_crash"}"#).0, 200);
    let mut conn = Conn::open(serve.addr("redis-1"));
    assert_eq!(conn.call(&["SET", "lock", "mine", "NX", "PX", "10000"]), "+OK\r\n");
    let (status, body) = http(&url, "POST", "/fault", r#"{"kind":"crash","node":"redis-1"}"#);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("redis-1 restarts in 100 ms"), "{body}");
    let (status, body) = http(&url, "POST", "/fault?kind=pause&node=ghost&duration_ms=5", "");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("ghost"), "{body}");
    assert_eq!(http(&url, "DELETE", "/fault", "").0, 405);
    assert_eq!(http(&url, "GET", "/nope", "").0, 404);
    std::thread::sleep(Duration::from_millis(400));
    let mut again = Conn::open(serve.addr("redis-1"));
    assert_eq!(again.call(&["SET", "lock", "theirs", "NX", "PX", "10000"]), "+OK\r\n");
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    assert_eq!(code, 0, "{rest}");
    let notes = serve_json(&report);
    assert_eq!(hits(&notes, "crash"), [["test_http_crash"]], "{notes:#}");
}

#[test]
fn a_fault_timed_from_a_test_strikes_after_its_label() {
    let dir = common::TempPath::dir("serve-control", "relative");
    let file = dir.join("relative.toml");
    std::fs::write(
        &file,
        r#"
name = "serve-relative"
description = "A pause timed from a test's label."
duration_ms = 60000
[topology]
masters = 1
[lock]
algorithm = "naive"
[[client]]
name = "app"
[[fault]]
after_test = "test_relative"
at_ms = 200
kind = "pause"
node = "redis-1"
duration_ms = 50
"#,
    )
    .expect("writes the scenario");
    let history = dir.join("history.jsonl");
    let serve = Serve::start(&[&file.display().to_string(), "--history", &history.display().to_string()]);
    assert!(serve.banner.contains("no faults planned"), "{}", serve.banner);
    let mut conn = Conn::open(serve.addr("redis-1"));
    std::thread::sleep(Duration::from_millis(300));
    conn.call(&["ECHO", "lockstep:test:tests/test_x.py::test_relative"]);
    std::thread::sleep(Duration::from_millis(500));
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    assert_eq!(code, 0, "{rest}");
    let events: Vec<serde_json::Value> = std::fs::read_to_string(&history)
        .expect("history")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let at = |pred: &dyn Fn(&serde_json::Value) -> bool| {
        events
            .iter()
            .find(|e| pred(e))
            .and_then(|e| e["at_us"].as_u64())
            .expect("the event")
    };
    let label = at(&|e| e["type"] == "command" && e["args"][0] == "ECHO");
    let fault = at(&|e| e["type"] == "fault");
    assert!(
        fault >= label + 200_000 && fault < label + 400_000,
        "the pause struck {} µs after the label",
        fault - label
    );
    // A relative fault outside serve is an error naming its field.
    let (code, _, err) = common::lockstep_in(&dir, &["run", &file.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("after_test"), "{err}");
}

#[test]
fn callers_sharing_a_connection_and_a_value_both_holding_are_a_mutual_exclusion_violation() {
    let report = common::TempPath::unused("serve-control", "shared");
    let serve = Serve::start(&["--masters", "1", "--report", &report.display().to_string()]);
    let mut conn = Conn::open(serve.addr("redis-1"));
    // Caller A takes the lock and renews it; a stall lets the key expire; caller B takes it with
    // the same value on the same connection; A's `SET … XX` renewal succeeds on B's key.
    assert_eq!(conn.call(&["SET", "lock", "process-1", "NX", "PX", "300"]), "+OK\r\n");
    assert_eq!(conn.call(&["SET", "lock", "process-1", "XX", "PX", "300"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(conn.call(&["SET", "lock", "process-1", "NX", "PX", "300"]), "+OK\r\n");
    assert_eq!(conn.call(&["SET", "lock", "process-1", "XX", "PX", "300"]), "+OK\r\n");
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    assert_eq!(code, 0, "{rest}");
    let summary = std::fs::read_to_string(report.join("summary.md")).expect("summary.md");
    // The old holder's renewal also acted on the new grant's key: ownership says so too.
    assert!(
        summary.contains("lockstep: mutual-exclusion, ownership INVALID"),
        "{summary}"
    );
}

#[test]
fn serve_runs_the_suite_and_its_failure_heads_the_report() {
    let dir = common::TempPath::dir("serve-control", "suite");
    let report = dir.join("report");
    let junit = dir.join("junit.xml");
    // The suite sees where the servers are, writes a JUnit file and fails.
    let script = format!(
        "test -n \"$REDIS_URL\" && test -n \"$REDIS_PORT\" && test -n \"$LOCKSTEP_CONTROL_URL\" || exit 9; \
         printf '<testsuite><testcase name=\"test_a\"/><testcase name=\"test_b\"><failure/></testcase></testsuite>' > {}; \
         exit 3",
        junit.display()
    );
    let (code, out, err) = common::lockstep_in(
        &dir,
        &[
            "serve",
            "--control",
            "--report",
            &report.display().to_string(),
            "--junit",
            &junit.display().to_string(),
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("the suite FAILED (exit 3)"), "{out}");
    let summary = std::fs::read_to_string(report.join("summary.md")).expect("summary.md");
    assert!(
        summary.contains("The suite FAILED (exit 3; 1 of 2 tests failed)"),
        "{summary}"
    );
    let index = std::fs::read_to_string(report.join("index.html")).expect("index.html");
    assert!(index.contains("The suite FAILED (exit 3"), "index.html says it too");
    let notes = serve_json(&report);
    assert_eq!(notes["suite"]["end"]["exit_code"], 3, "{notes:#}");
    assert_eq!(notes["per_test"][1]["result"], "failed", "{notes:#}");
    // --junit without a suite is bad input.
    let (code, _, err) = common::lockstep_in(&dir, &["serve", "--junit", "x.xml"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--junit"), "{err}");
}

/// A Python test file crashing the master while it holds the lock: in-band, then over HTTP.
const PYTEST_CRASH: &str = r#"
import json, os, time, urllib.request
import pytest, redis

@pytest.fixture
def r():
    c = redis.Redis.from_url(os.environ["REDIS_URL"])
    yield c
    c.close()

@pytest.fixture(autouse=True)
def lockstep_label(request, r):
    r.echo(f"lockstep:test:{request.node.name}")
    yield

def reconnecting(r, *args):
    for _ in range(50):
        try:
            return r.execute_command(*args)
        except redis.ConnectionError:
            time.sleep(0.05)
    raise AssertionError("the master did not come back")

def test_inband_crash(r):
    assert r.set("lock", "a", nx=True, px=10000)
    r.execute_command("LOCKSTEP", "FAULT", "crash", "restart_after_ms=100")
    time.sleep(0.3)
    assert reconnecting(r, "SET", "lock", "b", "NX", "PX", "10000")

def test_http_crash(r):
    assert r.set("lock2", "a", nx=True, px=10000)
    body = json.dumps({"kind": "crash", "node": "redis-1", "restart_after_ms": 100}).encode()
    req = urllib.request.Request(os.environ["LOCKSTEP_CONTROL_URL"] + "/fault", data=body, method="POST")
    assert urllib.request.urlopen(req).status == 200
    time.sleep(0.3)
    assert reconnecting(r, "SET", "lock2", "b", "NX", "PX", "10000")
"#;

#[test]
#[cfg_attr(
    lockstep_no_redis_py_suite,
    ignore = "pytest or redis-py is not installed in the peers' Python (.ci/run installs them)"
)]
fn a_pytest_suite_crashes_the_master_in_band_and_over_http_and_the_report_names_each_test() {
    let dir = common::TempPath::dir("serve-control", "pytest");
    std::fs::write(dir.join("test_crash.py"), PYTEST_CRASH).expect("writes the test");
    let report = dir.join("report");
    let junit = dir.join("junit.xml");
    let python = crate::peers::peer_python();
    let (code, out, err) = common::lockstep_in(
        &dir,
        &[
            "serve",
            "--control",
            "--report",
            &report.display().to_string(),
            "--junit",
            &junit.display().to_string(),
            "--",
            &python.display().to_string(),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_crash.py",
            "--junitxml",
            &junit.display().to_string(),
        ],
    );
    // The suite passes; lockstep finds the double grant each crash allowed.
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("the suite passed (exit 0)"), "{out}\n{err}");
    let notes = serve_json(&report);
    assert_eq!(
        hits(&notes, "crash"),
        [["test_inband_crash"], ["test_http_crash"]],
        "{notes:#}"
    );
    let rows = notes["per_test"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{notes:#}");
    for row in rows {
        assert_eq!(row["result"], "passed", "{notes:#}");
    }
    // The checker's witness is the first double grant: the in-band crash's.
    assert_eq!(
        rows[0]["violations"],
        serde_json::json!(["mutual-exclusion"]),
        "{notes:#}"
    );
}

/// The same in mocha, with ioredis.
const MOCHA_CRASH: &str = r#"
const Redis = require("ioredis");
const http = require("http");
const assert = require("assert");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let client;
before(() => { client = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 50, retryStrategy: () => 50 }); });
after(() => client.disconnect());
beforeEach(async function () { await client.echo(`lockstep:test:${this.currentTest.title}`); });
function post(path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(process.env.LOCKSTEP_CONTROL_URL + path, { method: "POST" }, (res) => { res.resume(); resolve(res.statusCode); });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}
describe("lock", function () {
  this.timeout(10000);
  it("crashes in band", async () => {
    assert.strictEqual(await client.set("lock", "a", "PX", 10000, "NX"), "OK");
    await client.call("LOCKSTEP", "FAULT", "crash", "restart_after_ms=100");
    await sleep(300);
    assert.strictEqual(await client.set("lock", "b", "PX", 10000, "NX"), "OK");
  });
  it("crashes over http", async () => {
    assert.strictEqual(await client.set("lock2", "a", "PX", 10000, "NX"), "OK");
    assert.strictEqual(await post("/fault", { kind: "crash", node: "redis-1", restart_after_ms: 100 }), 200);
    await sleep(300);
    assert.strictEqual(await client.set("lock2", "b", "PX", 10000, "NX"), "OK");
  });
});
"#;

#[test]
#[cfg_attr(
    any(lockstep_no_node_redlock_suite, lockstep_no_node_redlock),
    ignore = "mocha (npm redlock's suite's devDependencies) or ioredis (examples/live/node) is not installed (.ci/run)"
)]
fn a_mocha_suite_crashes_the_master_in_band_and_over_http_and_the_report_names_each_test() {
    let dir = common::TempPath::dir("serve-control", "mocha");
    std::fs::write(dir.join("crash.test.js"), MOCHA_CRASH).expect("writes the test");
    let report = dir.join("report");
    let suite = crate::peers::suite_dir("LOCKSTEP_NODE_REDLOCK_SUITE", "redlock-4.1.0");
    let mocha = suite.join("node_modules/mocha/bin/mocha");
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live/node/node_modules");
    let mut command = Command::new(common::BINARY);
    command
        .args([
            "serve",
            "--control",
            "--report",
            &report.display().to_string(),
            "--",
            "node",
            &mocha.display().to_string(),
            "--exit",
            "crash.test.js",
        ])
        .current_dir(&dir)
        .env("NODE_PATH", &modules);
    let output = command.output().expect("serve runs");
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("the suite passed (exit 0)"), "{out}\n{err}");
    let notes = serve_json(&report);
    assert_eq!(
        hits(&notes, "crash"),
        [["crashes in band"], ["crashes over http"]],
        "{notes:#}"
    );
}

#[test]
fn role_and_failover_answer_as_redis_on_a_serve_with_replicas() {
    let dir = common::TempPath::dir("serve-control", "replicas");
    let file = dir.join("replicas.toml");
    std::fs::write(
        &file,
        r#"
name = "serve-replicas"
description = "One master with one replica."
duration_ms = 60000
[topology]
resource = "unfenced"
[[topology.master]]
name = "redis-1"
replicas = 1
replication_lag_ms = 10
[lock]
algorithm = "naive"
[[client]]
name = "app"
"#,
    )
    .expect("writes the scenario");
    let history = dir.join("history.jsonl");
    let serve = Serve::start(&[&file.display().to_string(), "--history", &history.display().to_string()]);
    let mut conn = Conn::open(serve.addr("redis-1"));
    let role = conn.call(&["ROLE"]);
    assert!(role.starts_with("*3\r\n$6\r\nmaster\r\n"), "{role:?}");
    assert!(
        role.contains("*1\r\n*3\r\n$9\r\n127.0.0.1\r\n"),
        "one replica listed: {role:?}"
    );
    assert_eq!(
        conn.call(&["REPLICAOF", "127.0.0.1", "6379"])
            .lines()
            .next()
            .map(|l| l.starts_with("-ERR")),
        Some(true)
    );
    assert_eq!(conn.call(&["FAILOVER"]), "+OK\r\n");
    until_closed(&mut conn);
    std::thread::sleep(Duration::from_millis(200));
    // The group's address now leads to the promoted replica, a master.
    let mut again = Conn::open(serve.addr("redis-1"));
    assert!(again.call(&["ROLE"]).starts_with("*3\r\n$6\r\nmaster\r\n"));
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    assert_eq!(code, 0, "{rest}");
    let text = std::fs::read_to_string(&history).expect("history");
    assert!(
        text.contains(r#""kind":"failover""#),
        "the failover is a fault in the history"
    );
}

#[test]
fn monitor_feeds_every_other_connections_commands() {
    let serve = Serve::start(&["--masters", "1"]);
    let mut monitor = Conn::open(serve.addr("redis-1"));
    assert_eq!(monitor.call(&["MONITOR"]), "+OK\r\n");
    let mut other = Conn::open(serve.addr("redis-1"));
    assert_eq!(other.call(&["SET", "lock", "a \"b\"", "NX"]), "+OK\r\n");
    let mut buf = [0u8; 512];
    let n = monitor.0.read(&mut buf).expect("a monitor line");
    let line = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(line.starts_with('+'), "{line:?}");
    assert!(line.contains(r#"] "SET" "lock" "a \"b\"" "NX""#), "{line:?}");
    assert!(line.contains("[0 127.0.0.1:"), "{line:?}");
}
