//! Redis's own test suite against `lockstep serve`: Redis 7.0.15's Tcl tests (Debian's `redis`
//! source package, `tests/unit/`), unit by unit, in external-server mode, compared test by test
//! with the tests that pass against redis-server 7.0.15.
//!
//! `.ci/run` fetches the source package with `apt-get source` into `target/redis-suite/` (or where
//! `LOCKSTEP_REDIS_SUITE` says) and links its `src/redis-cli` and `src/redis-server` to the
//! system's. Without it (or without `tclsh`) a test is ignored with the reason (build.rs); under
//! `CI=true` it runs and fails, naming what is missing.
//!
//! Each unit runs as
//! `tclsh tests/test_helper.tcl --host 127.0.0.1 --port P --single unit/U --clients 1 --durable
//! --timeout 15 --tags -needs:debug --tags -needs:repl --tags -needs:config-maxmemory --tags
//! -needs:save` against a fresh `lockstep serve --masters 1` (no faults). `--durable` turns an
//! error outside an assertion into a failed test (or a failed `start_server` block) instead of
//! ending the unit, so that one missing command costs its own tests, not the rest of the unit;
//! `--timeout 15` ends a unit that waits 15 s for a reply that never comes (the longest test takes
//! 3.5 s against redis-server).
//!
//! The expectation of each unit is `tests/data/redis-suite/UNIT.txt` (`type/list` is
//! `type_list.txt`): one line per test that passes against redis-server 7.0.15, in the suite's
//! order, `pass<TAB>name` when it passes against serve too, `gap<TAB>name<TAB>reason` when it
//! does not yet (the reason as measured: serve's error, or why it did not run). The test fails
//! when a `pass` test does not pass (a regression), and when a `gap` test passes (the file must
//! stay true: regenerate it). To regenerate every file from a run against both servers (a fresh
//! redis-server on a free port, then serve):
//! `LOCKSTEP_REDIS_SUITE_BLESS=1 cargo test --test live redis_suite -- --test-threads 1`.

use crate::common;
use crate::peers::require;
use crate::serve::Serve;

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The suite's version: what the expectation files were measured with.
const SUITE: &str = "Redis 7.0.15's tests/unit (Debian redis 5:7.0.15-1~deb12u10)";

/// A unit's whole run is killed past this (its own `--timeout` ends it sooner when it hangs).
const UNIT_LIMIT: Duration = Duration::from_secs(300);

/// The suite's own `--timeout`: seconds without a test's outcome before it ends the unit.
const HANG_S: u32 = 15;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The unpacked source package: `LOCKSTEP_REDIS_SUITE`, else `target/redis-suite/redis-7.0.15`.
fn suite_dir() -> PathBuf {
    std::env::var_os("LOCKSTEP_REDIS_SUITE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/redis-suite/redis-7.0.15"))
}

fn blessing() -> bool {
    std::env::var("LOCKSTEP_REDIS_SUITE_BLESS").is_ok_and(|v| v == "1" || v == "true")
}

/// What the suite's test server printed, in order (`TERM=dumb`: no colours).
#[derive(Debug, Clone, PartialEq)]
enum Event {
    /// `[ok]: NAME (N ms)`.
    Ok(String),
    /// `[err]: NAME in tests/unit/U.tcl` and its message.
    Err(String, String),
    /// An error outside any test (`--durable`): the rest of its `start_server` block did not run.
    Block(String),
    /// `[exception]`: the unit ended there.
    Exception(String),
    /// `[TIMEOUT]`: no progress for `--timeout` seconds while this test ran; the unit ended.
    Timeout(String),
}

/// One line of a message, cleaned for a one-line reason: whitespace collapsed, an assertion's
/// `(context: ...)` left out, at most 160 characters.
fn one_line(text: &str) -> String {
    // An assertion's Tcl context names the suite's path on this machine: not kept.
    let text = text.split(" (context: ").next().unwrap_or(text);
    let words: Vec<&str> = text.split_whitespace().collect();
    let line = words.join(" ");
    match line.char_indices().nth(160) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// The message of an `[err]`'s detail lines. For an error that is not an assertion the suite
/// prints the error with its first 10 characters cut, then the whole of it (the first line of
/// Tcl's `errorInfo`): the whole one is kept.
fn message(lines: &[&str]) -> String {
    let lines: Vec<&str> = lines.iter().map(|l| l.trim()).filter(|l| !l.is_empty()).collect();
    match lines.as_slice() {
        [] => "(no message)".to_string(),
        [cut, whole, ..] if !cut.is_empty() && whole.ends_with(cut) => one_line(whole),
        [first, ..] => one_line(first),
    }
}

/// Parses the test server's output.
fn parse(output: &str) -> Vec<Event> {
    let lines: Vec<&str> = output.lines().collect();
    let mut events = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        // The detail lines of an `[err]` or `[exception]`: up to the next status line.
        let mut details = Vec::new();
        let mut j = i + 1;
        while j < lines.len() && !lines[j].starts_with('[') && !lines[j].starts_with("*** ") {
            details.push(lines[j]);
            j += 1;
        }
        if let Some(rest) = line.strip_prefix("[ok]: ") {
            let name = match rest.rfind(" (") {
                Some(at) if rest.ends_with(" ms)") => &rest[..at],
                _ => rest,
            };
            events.push(Event::Ok(name.to_string()));
        } else if let Some(rest) = line.strip_prefix("[err]: ") {
            match rest.rfind(" in tests/") {
                Some(at) => events.push(Event::Err(rest[..at].to_string(), message(&details))),
                None => {
                    let mut all = vec![rest];
                    all.extend(&details);
                    events.push(Event::Block(message(&all)));
                }
            }
            i = j;
            continue;
        } else if let Some(rest) = line.strip_prefix("[exception]: ") {
            let rest = rest.strip_prefix("Executing test client: ").unwrap_or(rest);
            events.push(Event::Exception(one_line(rest.trim_end_matches('.'))));
            i = j;
            continue;
        } else if line.starts_with("[TIMEOUT]") {
            let running = lines
                .get(i + 1)
                .and_then(|l| l.split_once("(IN PROGRESS) "))
                .map_or("", |(_, name)| name);
            events.push(Event::Timeout(running.trim().to_string()));
        }
        i += 1;
    }
    events
}

/// One run of a unit against one server.
struct Run {
    events: Vec<Event>,
    seconds: f64,
    output: String,
}

impl Run {
    fn passed(&self) -> HashMap<&str, usize> {
        let mut counts = HashMap::new();
        for e in &self.events {
            if let Event::Ok(name) = e {
                *counts.entry(name.as_str()).or_default() += 1;
            }
        }
        counts
    }

    fn count(&self, f: impl Fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|e| f(e)).count()
    }

    fn summary(&self) -> String {
        format!(
            "{} passed, {} failed, {} blocks stopped{} in {:.1} s",
            self.count(|e| matches!(e, Event::Ok(_))),
            self.count(|e| matches!(e, Event::Err(..))),
            self.count(|e| matches!(e, Event::Block(_))),
            match self
                .events
                .iter()
                .find(|e| matches!(e, Event::Exception(_) | Event::Timeout(_)))
            {
                Some(Event::Exception(why)) => format!(", ended by an exception ({why})"),
                Some(Event::Timeout(test)) => format!(", ended by a timeout in {test:?}"),
                _ => String::new(),
            },
            self.seconds
        )
    }

    fn tail(&self) -> String {
        let lines: Vec<&str> = self.output.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }
}

/// A free loopback port (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Runs `unit` against the server on 127.0.0.1:`port`. `slot` gives the suite's own test server
/// a port range of its own (units run at the same time in this process).
fn run_unit(unit: &str, port: u16, slot: usize) -> Run {
    let dir = common::TempPath::dir("redis-suite", &unit.replace('/', "_"));
    let out_path = dir.join("output.txt");
    let out = std::fs::File::create(&out_path).expect("creates the output file");
    let err = out.try_clone().expect("clones the output file");
    let port = port.to_string();
    let baseport = (20_000 + 64 * (slot + 1)).to_string();
    let single = format!("unit/{unit}");
    let mut command = Command::new("tclsh");
    command
        .args(["tests/test_helper.tcl", "--host", "127.0.0.1", "--port", &port])
        .args([
            "--single",
            &single,
            "--clients",
            "1",
            "--durable",
            "--timeout",
            &HANG_S.to_string(),
        ])
        .args(["--baseport", &baseport])
        .args(["--tags", "-needs:debug", "--tags", "-needs:repl"])
        .args(["--tags", "-needs:config-maxmemory", "--tags", "-needs:save"])
        .current_dir(suite_dir())
        .env("TERM", "dumb")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        // Its own process group: the suite starts a test client of its own, killed with it.
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn().expect("tclsh starts");
    loop {
        if child.try_wait().expect("waits for tclsh").is_some() {
            break;
        }
        if started.elapsed() > UNIT_LIMIT {
            // SAFETY: kill(2) on the process group of our own child, not reaped yet.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The test client, if the test server left it behind.
    // SAFETY: kill(2) on our child's process group; ESRCH when it is gone.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let seconds = started.elapsed().as_secs_f64();
    let output = String::from_utf8_lossy(&std::fs::read(&out_path).unwrap_or_default()).into_owned();
    Run {
        events: parse(&output),
        seconds,
        output,
    }
}

/// Runs `unit` against a fresh `lockstep serve`; a crash of serve is named in its events.
fn run_on_serve(unit: &str, slot: usize) -> Run {
    let mut serve = Serve::start(&["--masters", "1"]);
    let port: u16 = serve
        .addr("redis-1")
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .expect("a port in the banner");
    let mut run = run_unit(unit, port, slot);
    if let Ok(Some(status)) = serve.child.try_wait() {
        let mut err = String::new();
        let _ = serve.child.stderr.take().map(|mut e| e.read_to_string(&mut err));
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
        // A C assertion names its file by this machine's path: from the file name on.
        let last = match last.contains("Assertion") {
            true => last.rsplit('/').next().unwrap_or(last),
            false => last,
        };
        // In place of the suite's own exception (it could not connect any more).
        let at = run
            .events
            .iter()
            .position(|e| matches!(e, Event::Exception(_)))
            .unwrap_or(run.events.len());
        run.events.truncate(at);
        run.events.push(Event::Exception(one_line(&format!(
            "lockstep serve died ({status}): {last}"
        ))));
    } else {
        let (code, rest) = serve.stop(Some(libc::SIGTERM));
        assert_eq!(code, 0, "lockstep serve's exit after {unit}: {rest}");
    }
    run
}

/// Runs `unit` against a fresh redis-server on a free port (for blessing).
fn run_on_redis_server(unit: &str, slot: usize) -> Run {
    let redis_server = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string());
    let port = free_port();
    let mut server = Command::new(&redis_server)
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{redis_server} starts: {e}"));
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "redis-server did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = run_unit(unit, port, slot);
    let _ = server.kill();
    let _ = server.wait();
    run
}

/// One line of an expectation file.
#[derive(Debug)]
struct Expected {
    name: String,
    /// `None`: passes against serve; else why not.
    gap: Option<String>,
}

fn expectation_path(unit: &str) -> PathBuf {
    repo()
        .join("tests/data/redis-suite")
        .join(format!("{}.txt", unit.replace('/', "_")))
}

fn read_expectation(unit: &str) -> Vec<Expected> {
    let path = expectation_path(unit);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let fields: Vec<&str> = l.split('\t').collect();
            match fields.as_slice() {
                ["pass", name] => Expected {
                    name: name.to_string(),
                    gap: None,
                },
                ["gap", name, why] => Expected {
                    name: name.to_string(),
                    gap: Some(why.to_string()),
                },
                _ => panic!(
                    "{}: not `pass<TAB>name` or `gap<TAB>name<TAB>reason`: {l:?}",
                    path.display()
                ),
            }
        })
        .collect()
}

/// Why a test did not pass on serve: its own failure at `at` (an index into serve's events), or,
/// when it did not run, what stopped the run from `from` (just after the test before it that ran)
/// to the next test that ran — a block, then maybe the unit: which of them held this test is not
/// printed.
fn gap_reason(serve: &Run, at: Option<usize>, from: usize) -> String {
    match at.map(|i| &serve.events[i]) {
        Some(Event::Err(_, why)) => return why.clone(),
        Some(_) => return "passed fewer times than against redis-server".to_string(),
        None => {}
    }
    let to = serve.events[from..]
        .iter()
        .position(|e| matches!(e, Event::Ok(_) | Event::Err(..)))
        .map_or(serve.events.len(), |i| from + i);
    let mut stops: Vec<String> = Vec::new();
    for e in &serve.events[from..to] {
        let stop = match e {
            Event::Block(why) => format!("a block stopped at {why}"),
            Event::Exception(why) => format!("the unit ended at {why}"),
            Event::Timeout(test) => format!("the unit ended in a hang in {test:?}"),
            _ => continue,
        };
        if !stops.contains(&stop) {
            stops.push(stop);
        }
    }
    match stops.is_empty() {
        true => "not run".to_string(),
        false => format!("not run: {}", stops.join("; then ")),
    }
}

/// Tests that the suite leaves out by a condition of its own, when the run shows nothing that
/// stopped them: (name, why).
const CONDITIONS: &[(&str, &str)] = &[(
    "trim on SET with big value",
    "not run: the suite runs it only when INFO's mem_allocator is jemalloc (serve names no allocator)",
)];

/// Writes `unit`'s expectation file from a redis-server run and a serve run.
fn bless(unit: &str, redis: &Run, serve: &Run) {
    let mut lines = Vec::new();
    let mut gaps = 0;
    // Serve's events are read along redis-server's tests, in order: `from` is just past the last
    // one matched.
    let mut from = 0;
    for event in &redis.events {
        let Event::Ok(name) = event else { continue };
        let at = serve.events[from..]
            .iter()
            .position(|e| matches!(e, Event::Ok(x) | Event::Err(x, _) if x == name))
            .map(|i| from + i);
        if let Some(Event::Ok(_)) = at.map(|i| &serve.events[i]) {
            lines.push(format!("pass\t{name}"));
        } else {
            gaps += 1;
            let why = match at {
                None if serve.events.iter().any(|e| matches!(e, Event::Timeout(t) if t == name)) => {
                    format!("hangs: no reply within the suite's --timeout ({HANG_S} s); the unit ends there")
                }
                _ => gap_reason(serve, at, from),
            };
            let why = match CONDITIONS.iter().find(|(n, _)| n == name) {
                Some((_, condition)) if why == "not run" => condition.to_string(),
                _ => why,
            };
            lines.push(format!("gap\t{name}\t{}", why.replace('\t', " ")));
        }
        if let Some(i) = at {
            from = i + 1;
        }
    }
    let passes = lines.len() - gaps;
    let header = format!(
        "# {SUITE}: tests/unit/{unit}.tcl against lockstep serve.\n\
         # One line per test that passes against redis-server 7.0.15, in the suite's order:\n\
         #   pass<TAB>name            passes against serve too (failing is a regression)\n\
         #   gap<TAB>name<TAB>reason  does not pass against serve yet, and why (as measured)\n\
         # Written by `LOCKSTEP_REDIS_SUITE_BLESS=1 cargo test --test live redis_suite -- --test-threads 1`\n\
         # (tests/live/redis_suite.rs): regenerate rather than edit (a reason a run cannot tell goes in CONDITIONS there).\n\
         # redis-server 7.0.15: {}\n\
         # lockstep serve: {}\n\
         # {passes} of {} pass against serve\n",
        redis.summary(),
        serve.summary(),
        lines.len()
    );
    let path = expectation_path(unit);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("creates tests/data/redis-suite");
    std::fs::write(&path, format!("{header}{}\n", lines.join("\n"))).expect("writes the expectation");
    let extra = serve.count(|e| matches!(e, Event::Ok(_))) - passes;
    eprintln!(
        "{unit}: wrote {} — redis-server {}; serve {}; {passes} of {} pass on serve{}",
        path.display(),
        redis.summary(),
        serve.summary(),
        lines.len(),
        match extra {
            0 => String::new(),
            n => format!(" ({n} more pass on serve only, not listed)"),
        }
    );
}

/// Runs `unit` against serve and compares it with its expectation file (or writes the file when
/// blessing).
fn check_unit(unit: &str, slot: usize) {
    let suite = suite_dir();
    require(
        suite.join("tests/test_helper.tcl").is_file() && suite.join("src/redis-cli").exists(),
        &format!(
            "Redis 7.0.15's test suite (Debian's redis source package, unpacked with src/redis-cli linked: {})",
            suite.display()
        ),
    );
    require(
        Command::new("tclsh")
            .stdin(Stdio::null())
            .arg("/dev/null")
            .output()
            .is_ok_and(|o| o.status.success()),
        "tclsh (Debian's tcl)",
    );
    if blessing() {
        let redis = run_on_redis_server(unit, slot);
        let serve = run_on_serve(unit, slot);
        bless(unit, &redis, &serve);
        return;
    }
    let expected = read_expectation(unit);
    let (regressions, now_passing, serve) = compare(unit, &expected, run_on_serve(unit, slot));
    assert!(
        regressions.is_empty(),
        "redis suite {unit}: {} tests that passed against lockstep serve no longer pass:\n  {}\n\
         (serve: {})\n{}",
        regressions.len(),
        regressions.join("\n  "),
        serve.summary(),
        serve.tail()
    );
    assert!(
        now_passing.is_empty(),
        "redis suite {unit}: {} tests listed as gaps in {} now pass against lockstep serve — regenerate the file \
         (LOCKSTEP_REDIS_SUITE_BLESS=1 cargo test --test live redis_suite -- --test-threads 1) and update \
         docs/redis-differences.md:\n  {}",
        now_passing.len(),
        expectation_path(unit).display(),
        now_passing.join("\n  ")
    );
}

/// One run of `unit` against serve compared with `expected`: the regressions (name: why), the
/// gaps that passed (name (listed: why)), and the run.
fn compare(unit: &str, expected: &[Expected], serve: Run) -> (Vec<String>, Vec<String>, Run) {
    let mut got = serve.passed();
    let expected_passes = expected.iter().filter(|e| e.gap.is_none()).count();
    eprintln!(
        "redis suite {unit}: lockstep serve {} ({} of {} expected: {expected_passes} pass, {} gaps)",
        serve.summary(),
        got.values().sum::<usize>(),
        expected.len(),
        expected.len() - expected_passes
    );
    // By name (a name may repeat: counted).
    let mut regressions = Vec::new();
    let mut now_passing = Vec::new();
    for e in expected {
        let left = got.entry(e.name.as_str()).or_default();
        match (&e.gap, *left > 0) {
            (None, true) | (Some(_), false) => {}
            (None, false) => {
                let why = serve
                    .events
                    .iter()
                    .find_map(|ev| match ev {
                        Event::Err(n, why) if *n == e.name => Some(why.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "did not run".to_string());
                regressions.push(format!("{}: {why}", e.name));
            }
            (Some(why), true) => now_passing.push(format!("{} (listed: {why})", e.name)),
        }
        *left = left.saturating_sub(1);
    }
    let extra: Vec<&&str> = got.iter().filter(|(_, n)| **n > 0).map(|(name, _)| name).collect();
    if !extra.is_empty() {
        eprintln!("redis suite {unit}: passing on serve and not in the file (passes on serve only?): {extra:?}");
    }
    (regressions, now_passing, serve)
}

macro_rules! units {
    ($($slot:literal $test:ident $unit:literal,)*) => {$(
        #[test]
        #[cfg_attr(
            lockstep_no_redis_suite,
            ignore = "Redis 7.0.15's test suite (Debian's redis source package) or tclsh is not installed \
                      (.ci/run; LOCKSTEP_REDIS_SUITE)"
        )]
        fn $test() {
            check_unit($unit, $slot);
        }
    )*};
}

units! {
    0 redis_suite_type_incr "type/incr",
    1 redis_suite_type_string "type/string",
    2 redis_suite_expire "expire",
    3 redis_suite_keyspace "keyspace",
    4 redis_suite_type_list "type/list",
    5 redis_suite_type_hash "type/hash",
    6 redis_suite_type_set "type/set",
    7 redis_suite_type_zset "type/zset",
    8 redis_suite_scripting "scripting",
    9 redis_suite_functions "functions",
    10 redis_suite_multi "multi",
    11 redis_suite_pubsub "pubsub",
    12 redis_suite_info_command "info-command",
    13 redis_suite_protocol "protocol",
    14 redis_suite_bitfield "bitfield",
}

#[test]
fn the_suites_output_is_read_test_by_test() {
    let output = "\
[ok]: INCR against non existing key (0 ms)
[err]: SETNX target key missing in tests/unit/type/string.tcl
n command 'setnx', with args beginning with: 'novar' 'foobared'
ERR unknown command 'setnx', with args beginning with: 'novar' 'foobared'
    while executing
[ignore]: INCR can modify objects in-place: Tag: needs:debug denied
[err]: Check encoding in tests/unit/type/list.tcl
Expected 'quicklist' to equal or match 'listpack'
[err]: nown option or number of arguments for CONFIG SET - 'list-compress-depth'
ERR Unknown option or number of arguments for CONFIG SET - 'list-compress-depth'
[ok]: Name (with parens) (12 ms)
[TIMEOUT]: clients state report follows.
sock55 => (IN PROGRESS) Keyspace notifications: we are able to mask events
[exception]: Executing test client: couldn't open socket: connection refused.
couldn't open socket: connection refused
    while executing
";
    assert_eq!(
        parse(output),
        vec![
            Event::Ok("INCR against non existing key".into()),
            Event::Err(
                "SETNX target key missing".into(),
                "ERR unknown command 'setnx', with args beginning with: 'novar' 'foobared'".into()
            ),
            Event::Err(
                "Check encoding".into(),
                "Expected 'quicklist' to equal or match 'listpack'".into()
            ),
            Event::Block("ERR Unknown option or number of arguments for CONFIG SET - 'list-compress-depth'".into()),
            Event::Ok("Name (with parens)".into()),
            Event::Timeout("Keyspace notifications: we are able to mask events".into()),
            Event::Exception("couldn't open socket: connection refused".into()),
        ]
    );
}
