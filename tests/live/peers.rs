//! Other lock libraries' own test suites, unmodified, against `lockstep serve` — each compared,
//! test by test, with what the same suite gives against a real redis-server.
//!
//! | suite | from | how it finds its server |
//! |---|---|---|
//! | python-redis-lock 4.0.1, all of `tests/` | its sdist (PyPI) | starts `redis-server --unixsocket PATH` itself per test: `tests/live/peers/redis-server`, first on `PATH`, serves `lockstep serve` there instead |
//! | pottery 3.0.1, its lock tests (`test_redlock.py`, `test_aioredlock.py`, `test_nextid.py`, `test_aionextid.py`) | its sdist (PyPI) | 127.0.0.1:6379, databases 1–5 (named in the tests); the `redis`/`aioredis` fixtures its sdist leaves out come from `tests/live/peers/pottery_fixtures.py` |
//! | npm `redlock` 4.1.0, `test.js` | its registry tarball, devDependencies installed | 127.0.0.1:6379, databases 0–3 (client defaults; no variable) |
//!
//! npm `redlock` 4.2.0's tarball ships no test file (4.1.0's is the last 4.x that does, and 4.2.0
//! changed dependencies, docs and `EVALSHA` only), so the 4.x suite that can be fetched from the
//! registry is 4.1.0's. redis-py's lock tests run beside these in `serve.rs`.
//!
//! `.ci/run` fetches and unpacks them under `target/peer-suites/` (each place can be overridden:
//! `LOCKSTEP_REDIS_LOCK_SUITE`, `LOCKSTEP_POTTERY_SUITE`, `LOCKSTEP_NODE_REDLOCK_SUITE`) and
//! installs their pinned test dependencies in `target/peer-suites/venv` (`LOCKSTEP_PEER_PYTHON`)
//! and the tarball's `node_modules`. Without them a test is ignored with the reason (build.rs);
//! under `CI=true` it runs and fails, naming what is missing.
//!
//! Each test asserts that the suite ran whole (as many tests as against redis-server, as many
//! skipped) and that every test that failed is named below: one that fails against redis-server
//! too (`REAL_FAILURES`), one whose outcome depends on timing against either server (`FLAKY`),
//! or a difference lockstep has not closed yet (`GAPS`, each a row in docs/redis-differences.md).
//! A listed test that passes is reported, not failed. The counts against redis-server 7.0.15 were
//! measured on this project's 2-core machine with the same pinned packages.

use crate::common;
use crate::serve::{in_ci, Serve};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Two suites name 127.0.0.1:6379 themselves: they take turns.
static PORT_6379: Mutex<()> = Mutex::new(());

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The peer suites' directory `var` names, or its default place under `target/peer-suites/`.
pub(crate) fn suite_dir(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/peer-suites").join(default))
}

/// The Python that has the suites' pinned packages: `LOCKSTEP_PEER_PYTHON`, else the venv
/// `.ci/run` makes, else `python3`.
pub(crate) fn peer_python() -> PathBuf {
    if let Some(p) = std::env::var_os("LOCKSTEP_PEER_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = repo().join("target/peer-suites/venv/bin/python");
    match venv.is_file() {
        true => venv,
        false => PathBuf::from("python3"),
    }
}

/// Fails with what is missing: under CI (where build.rs ignores nothing) or when a tool found at
/// build time is gone.
pub(crate) fn require(ok: bool, what: &str) {
    assert!(
        ok,
        "{what} is missing; .ci/run installs it{}",
        match in_ci() {
            true => " (CI=true: a missing suite fails)",
            false => " (it was there when the tests were built: touch build.rs)",
        }
    );
}

fn python_has(modules: &str) -> bool {
    Command::new(peer_python())
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Outcomes of one suite run.
#[derive(Debug, Default)]
struct Outcome {
    passed: u32,
    failed: u32,
    skipped: u32,
    /// Failed or errored tests, by the runner's name.
    failures: BTreeSet<String>,
    /// Tests that errored because the server the suite started itself did not say it was ready
    /// within the suite's own 2 s (python-redis-lock): the machine was busy, not a difference.
    slow_starts: BTreeSet<String>,
    seconds: f64,
    output: String,
}

/// What a suite gives against redis-server, and the failures that are allowed against serve.
struct Expected {
    suite: &'static str,
    passed: u32,
    failed: u32,
    skipped: u32,
    /// Failing against redis-server too: (name, why).
    real_failures: &'static [(&'static str, &'static str)],
    /// Passing or failing by timing against either server: (name or `prefix*`, why).
    flaky: &'static [(&'static str, &'static str)],
    /// Failing against lockstep serve only, not closed yet: (name, why) — each a row in
    /// docs/redis-differences.md.
    gaps: &'static [(&'static str, &'static str)],
    /// How many tests may not run at all because a listed gap stops the suite (0: it must run
    /// whole).
    not_run: u32,
}

impl Expected {
    /// Asserts `got` against these counts and names; prints what a listed test did.
    fn check(&self, got: &Outcome) {
        let summary = format!(
            "{}: {} passed, {} failed, {} skipped in {:.0} s against lockstep serve \
             (redis-server: {} passed, {} failed, {} skipped)",
            self.suite, got.passed, got.failed, got.skipped, got.seconds, self.passed, self.failed, self.skipped
        );
        eprintln!("{summary}");
        let total = self.passed + self.failed + self.skipped;
        let ran = got.passed + got.failed + got.skipped;
        assert!(
            ran <= total && ran + self.not_run >= total,
            "{summary}: {ran} tests ran, {total} expected{}\n{}",
            match self.not_run {
                0 => String::new(),
                n => format!(" (up to {n} not run after a listed gap)"),
            },
            tail(&got.output)
        );
        if self.not_run > 0 && ran == total {
            eprintln!("{}: the suite now runs whole (set not_run to 0)", self.suite);
        }
        assert_eq!(got.skipped, self.skipped, "{summary}\n{}", tail(&got.output));
        // A listed name ending in `*` stands for every name that starts with the rest.
        let listed = |name: &str, list: &[(&str, &str)]| {
            list.iter()
                .any(|(n, _)| *n == name || n.strip_suffix('*').is_some_and(|p| name.starts_with(p)))
        };
        let unexpected: Vec<&String> = got
            .failures
            .iter()
            .filter(|n| !listed(n, self.real_failures) && !listed(n, self.flaky) && !listed(n, self.gaps))
            .collect();
        assert!(
            unexpected.is_empty(),
            "{summary}: failing and not listed: {unexpected:#?}\n{}",
            tail(&got.output)
        );
        assert_eq!(
            (got.failures.len() + got.slow_starts.len()) as u32,
            got.failed,
            "{summary}: the failures' names were not all read\n{}",
            tail(&got.output)
        );
        assert!(
            got.slow_starts.len() <= 3,
            "{summary}: the server was not ready within 2 s for {} tests: {:#?}",
            got.slow_starts.len(),
            got.slow_starts
        );
        for name in &got.slow_starts {
            eprintln!(
                "{}: the server started too slowly for {name} (a busy machine; not counted)",
                self.suite
            );
        }
        for (name, why) in self.gaps {
            if !got.failures.contains(*name) {
                eprintln!(
                    "{}: listed as a gap and now passing (remove it): {name} ({why})",
                    self.suite
                );
            }
        }
    }
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(80)..].join("\n")
}

/// Runs suite `name`'s `command` to its end (killed after `limit`), with stdout and stderr in one
/// text.
fn run_suite(name: &str, mut command: Command, limit: Duration) -> (Option<i32>, String, f64) {
    // One directory per suite: the tests run at the same time in this process.
    let dir = common::TempPath::dir("peers", name);
    let out_path = dir.join("output.txt");
    let out = std::fs::File::create(&out_path).expect("creates the output file");
    let err = out.try_clone().expect("clones the output file");
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("the suite's runner starts");
    let code = loop {
        if let Some(status) = child.try_wait().expect("waits for the suite") {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let seconds = started.elapsed().as_secs_f64();
    let output = String::from_utf8_lossy(&std::fs::read(&out_path).unwrap_or_default()).into_owned();
    (code, output, seconds)
}

/// pytest's outcome from `-q -rfE` output: the closing counts line and the FAILED/ERROR names.
fn pytest_outcome(output: String, seconds: f64) -> Outcome {
    let mut got = Outcome {
        seconds,
        ..Outcome::default()
    };
    for line in output.lines() {
        for prefix in ["FAILED ", "ERROR "] {
            if let Some(rest) = line.strip_prefix(prefix) {
                let (name, message) = rest.split_once(" - ").unwrap_or((rest, ""));
                let name = name.trim().to_string();
                match prefix == "ERROR " && message.contains("eady to accept connections") {
                    true => got.slow_starts.insert(name),
                    false => got.failures.insert(name),
                };
            }
        }
    }
    // "1 failed, 177 passed, 2 warnings in 347.73s (0:05:47)", maybe between '=' rules.
    let closing = output
        .lines()
        .rev()
        .find(|l| l.contains(" in ") && (l.contains(" passed") || l.contains(" failed") || l.contains(" error")))
        .unwrap_or_default();
    let counts = closing.trim_matches(|c| c == '=' || c == ' ');
    let counts = counts.rsplit_once(" in ").map_or(counts, |(c, _)| c);
    for part in counts.split(", ") {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next(), words.next()) else {
            continue;
        };
        let n: u32 = n.parse().unwrap_or(0);
        match what {
            "passed" => got.passed += n,
            "failed" | "error" | "errors" => got.failed += n,
            "skipped" => got.skipped += n,
            _ => {}
        }
    }
    got.output = output;
    got
}

/// A free port is needed where a suite names its own: say who holds it if not.
fn port_free(port: u16) {
    let ok = std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
    assert!(
        ok,
        "127.0.0.1:{port} is in use (a redis-server?): this suite names 127.0.0.1:6379 itself, so lockstep \
         serve must listen there; stop what holds it"
    );
}

// python-redis-lock 4.0.1 against redis-server 7.0.15 (its conftest starts one per test): 178
// passed with 4 workers in 105 s; one at a time, 177 and 178 passed in two runs (348 s, 404 s),
// the one that moved being a `test_signal_expiration` case.
const REDIS_LOCK: Expected = Expected {
    suite: "python-redis-lock 4.0.1",
    passed: 178,
    failed: 0,
    skipped: 0,
    real_failures: &[],
    flaky: &[(
        "tests/test_redis_lock.py::test_signal_expiration[*",
        "checks that the signal key is gone exactly `signal_expire` ms after the lock set its PEXPIRE, \
         with nothing to spare (failed once in 2 runs against redis-server, 1000 ms, reset_all)",
    )],
    gaps: &[],
    not_run: 0,
};

#[test]
#[cfg_attr(
    lockstep_no_redis_lock_suite,
    ignore = "python-redis-lock's suite or its packages are not installed (.ci/run; LOCKSTEP_REDIS_LOCK_SUITE)"
)]
fn python_redis_lock_suite_passes_unmodified_against_serve() {
    let suite = suite_dir("LOCKSTEP_REDIS_LOCK_SUITE", "python_redis_lock-4.0.1");
    require(
        suite.join("tests/test_redis_lock.py").is_file(),
        &format!("python-redis-lock 4.0.1's unpacked sdist ({})", suite.display()),
    );
    require(
        python_has("pytest, xdist, redis, process_tests, gevent, eventlet, django, django_redis"),
        &format!(
            "python-redis-lock's test packages (pytest, pytest-xdist, redis, process-tests, gevent, eventlet, Django, \
             django-redis) in {}",
            peer_python().display()
        ),
    );
    // The suite starts `redis-server` from PATH: ours serves lockstep's Redis.
    let shims = repo().join("tests/live/peers");
    let path = std::env::join_paths(
        std::iter::once(shims).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("PATH joins");
    let mut pytest = Command::new(peer_python());
    pytest
        .args([
            "-m",
            "pytest",
            "-q",
            "-rfE",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:asyncio",
        ])
        // Four workers (pytest-xdist): its tests mostly sleep, each with a server of its own;
        // 105 s instead of 404 s against redis-server, with the same outcomes.
        .args(["-n", "4"])
        .current_dir(&suite)
        .env("COLUMNS", "1000")
        .env("LOCKSTEP_PEER_PYTHON", peer_python())
        .env("PATH", path)
        .env("LOCKSTEP_BIN", common::BINARY)
        .env("PYTHONPATH", "src:tests")
        .env("DJANGO_SETTINGS_MODULE", "test_project.settings");
    let (_, output, seconds) = run_suite("python-redis-lock", pytest, Duration::from_secs(900));
    REDIS_LOCK.check(&pytest_outcome(output, seconds));
}

/// pottery's lock tests, the files this test runs.
const POTTERY_FILES: &[&str] = &[
    "tests/test_redlock.py",
    "tests/test_aioredlock.py",
    "tests/test_nextid.py",
    "tests/test_aionextid.py",
];

// pottery 3.0.1's lock tests against redis-server 7.0.15 on 127.0.0.1:6379: 94 passed, 1 failed
// in 10 s (its whole suite: 323 passed, 3 failed, all three the repr tests below).
const POTTERY: Expected = Expected {
    suite: "pottery 3.0.1 lock tests",
    passed: 94,
    failed: 1,
    skipped: 0,
    real_failures: &[(
        "tests/test_redlock.py::TestRedlock::test_releaseunlockedlock_repr",
        "expects redis-py 4's repr of a connection; redis-py 8 prints more fields",
    )],
    flaky: &[],
    gaps: &[],
    not_run: 0,
};

#[test]
#[cfg_attr(
    lockstep_no_pottery_suite,
    ignore = "pottery's suite or its packages are not installed (.ci/run; LOCKSTEP_POTTERY_SUITE)"
)]
fn pottery_lock_tests_pass_unmodified_against_serve() {
    let suite = suite_dir("LOCKSTEP_POTTERY_SUITE", "pottery-3.0.1");
    require(
        suite.join("tests/test_redlock.py").is_file(),
        &format!("pottery 3.0.1's unpacked sdist ({})", suite.display()),
    );
    require(
        python_has("pytest, pytest_asyncio, redis, mmh3"),
        &format!(
            "pytest, pytest-asyncio, redis-py and mmh3 in {}",
            peer_python().display()
        ),
    );
    let _port = PORT_6379.lock().unwrap_or_else(|e| e.into_inner());
    port_free(6379);
    let serve = Serve::start(&["--masters", "1", "--port", "6379"]);
    let mut pytest = Command::new(peer_python());
    pytest
        .args([
            "-m",
            "pytest",
            "-q",
            "-rfE",
            "-p",
            "no:cacheprovider",
            "-p",
            "pottery_fixtures",
        ])
        .args([
            "-o",
            "asyncio_mode=auto",
            "-o",
            "asyncio_default_fixture_loop_scope=function",
        ])
        .args(POTTERY_FILES)
        .current_dir(&suite)
        .env("COLUMNS", "1000")
        .env("PYTHONPATH", repo().join("tests/live/peers"))
        .env("LOCKSTEP_POTTERY_REDIS_URL", "redis://localhost:6379/1");
    let (_, output, seconds) = run_suite("pottery", pytest, Duration::from_secs(600));
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    POTTERY.check(&pytest_outcome(output, seconds));
    assert_eq!(code, 0, "{rest}");
}

// npm redlock 4.1.0's test.js against redis-server 7.0.15 on 127.0.0.1:6379: 216 passing in 22 s.
const NODE_REDLOCK: Expected = Expected {
    suite: "npm redlock 4.1.0",
    passed: 216,
    failed: 0,
    skipped: 0,
    real_failures: &[],
    flaky: &[],
    gaps: &[],
    not_run: 0,
};

/// mocha's outcome from its JSON reporter.
fn mocha_outcome(output: String, seconds: f64) -> Outcome {
    let mut got = Outcome {
        seconds,
        ..Outcome::default()
    };
    let json = output
        .find("{\n  \"stats\"")
        .and_then(|at| {
            serde_json::Deserializer::from_str(&output[at..])
                .into_iter::<serde_json::Value>()
                .next()
        })
        .and_then(Result::ok);
    if let Some(json) = json {
        let n = |k: &str| json["stats"][k].as_u64().unwrap_or(0) as u32;
        got.passed = n("passes");
        got.failed = n("failures");
        got.skipped = n("pending");
        for f in json["failures"].as_array().into_iter().flatten() {
            got.failures
                .insert(f["fullTitle"].as_str().unwrap_or_default().to_string());
        }
    }
    got.output = output;
    got
}

#[test]
#[cfg_attr(
    lockstep_no_node_redlock_suite,
    ignore = "npm redlock's suite (its tarball with devDependencies) or node is not installed (.ci/run; \
              LOCKSTEP_NODE_REDLOCK_SUITE)"
)]
fn node_redlock_suite_passes_unmodified_against_serve() {
    let suite = suite_dir("LOCKSTEP_NODE_REDLOCK_SUITE", "redlock-4.1.0");
    require(
        suite.join("test.js").is_file() && suite.join("node_modules/mocha/bin/mocha").is_file(),
        &format!(
            "npm redlock 4.1.0's unpacked tarball with its devDependencies ({})",
            suite.display()
        ),
    );
    let _port = PORT_6379.lock().unwrap_or_else(|e| e.into_inner());
    port_free(6379);
    let serve = Serve::start(&["--masters", "1", "--port", "6379"]);
    let mut mocha = Command::new("node");
    mocha
        .args(["node_modules/mocha/bin/mocha", "--reporter", "json", "--exit"])
        .current_dir(&suite);
    let (_, output, seconds) = run_suite("node-redlock", mocha, Duration::from_secs(600));
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    NODE_REDLOCK.check(&mocha_outcome(output, seconds));
    assert_eq!(code, 0, "{rest}");
}
