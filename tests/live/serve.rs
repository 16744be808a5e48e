//! `lockstep serve` as a client's test suite uses it: the binary started on loopback, real TCP
//! clients speaking RESP2 and RESP3, a scenario's faults applied at their times, the history
//! written when it stops — and redis-py's own lock tests, unmodified, passing against it.
//!
//! The redis-py suite comes from the package's sdist, which `.ci/run` downloads and unpacks under
//! `target/peer-suites/` (or where `LOCKSTEP_REDIS_PY_SUITE` says). Without it the test is ignored
//! with the reason (build.rs), except under `CI=true`, where it runs and fails. The other libraries'
//! suites are in `peers.rs`.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A running `lockstep serve`: its addresses by server name, read from its banner.
pub(crate) struct Serve {
    pub(crate) child: Child,
    stdout: BufReader<std::process::ChildStdout>,
    addresses: Vec<(String, String)>,
    pub(crate) banner: String,
}

impl Serve {
    /// Spawned, not run to its end: the test talks to its servers while it serves, then stops it
    /// with a signal.
    pub(crate) fn start(args: &[&str]) -> Serve {
        let mut child = common::command(["serve"].iter().chain(args))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut banner = String::new();
        let mut addresses = Vec::new();
        loop {
            let mut line = String::new();
            let n = stdout.read_line(&mut line).expect("serve's stdout");
            if n == 0 {
                let mut err = String::new();
                let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
                panic!("serve stopped before serving:\n{banner}\n{err}");
            }
            banner.push_str(&line);
            let words: Vec<&str> = line.split_whitespace().collect();
            if let [name, addr, ..] = words[..] {
                if addr.starts_with("127.0.0.1:") {
                    addresses.push((name.to_string(), addr.to_string()));
                }
            }
            if line.starts_with("serving ") {
                break;
            }
        }
        Serve {
            child,
            stdout,
            addresses,
            banner,
        }
    }

    pub(crate) fn addr(&self, server: &str) -> &str {
        &self
            .addresses
            .iter()
            .find(|(name, _)| name == server)
            .unwrap_or_else(|| panic!("{server} in the banner:\n{}", self.banner))
            .1
    }

    /// Sends `signal` (or waits for `--duration-ms`) and returns the exit code and the rest of
    /// stdout.
    pub(crate) fn stop(mut self, signal: Option<i32>) -> (i32, String) {
        if let Some(signal) = signal {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(self.child.id() as i32, signal) };
        }
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).expect("serve's stdout");
        let status = self.child.wait().expect("serve exits");
        (status.code().unwrap_or(-1), rest)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A RESP connection that writes commands and reads one reply's raw bytes.
pub(crate) struct Conn(pub(crate) TcpStream);

impl Conn {
    pub(crate) fn open(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).expect("connects");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        Conn(stream)
    }

    /// Sends one command and returns the reply's bytes (everything that arrives until a pause).
    pub(crate) fn call(&mut self, args: &[&str]) -> String {
        self.send(args);
        self.read_reply()
    }

    /// Sends one command.
    fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.0.write_all(out.as_bytes()).expect("writes");
    }

    /// The bytes that arrive next (waiting up to 10 s for the first), until a pause.
    fn read_reply(&mut self) -> String {
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        let n = self.0.read(&mut buf).expect("a reply");
        reply.extend_from_slice(&buf[..n]);
        // Short replies arrive in one read on loopback; a longer one may take a second.
        self.0
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        while let Ok(n) = self.0.read(&mut buf) {
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&buf[..n]);
        }
        self.0.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        String::from_utf8_lossy(&reply).into_owned()
    }
}

#[test]
fn serve_speaks_resp2_and_resp3_and_writes_its_history_on_sigint() {
    let history = common::TempPath::unused("serve", "history.jsonl");
    let serve = Serve::start(&["--masters", "2", "--history", &history.display().to_string()]);
    assert!(serve.banner.contains("2 masters"), "{}", serve.banner);
    let mut resp2 = Conn::open(serve.addr("redis-1"));
    assert_eq!(resp2.call(&["SET", "lock", "v1", "NX", "PX", "100000"]), "+OK\r\n");
    assert_eq!(resp2.call(&["GET", "lock"]), "$2\r\nv1\r\n");
    assert_eq!(resp2.call(&["GET", "none"]), "$-1\r\n");
    let mut resp3 = Conn::open(serve.addr("redis-1"));
    let hello = resp3.call(&["HELLO", "3"]);
    assert!(
        hello.starts_with("%7\r\n") && hello.contains("proto\r\n:3\r\n"),
        "{hello:?}"
    );
    assert_eq!(resp3.call(&["GET", "none"]), "_\r\n");
    assert_eq!(resp3.call(&["GET", "lock"]), "$2\r\nv1\r\n");
    let info = resp3.call(&["INFO", "server"]);
    assert!(info.starts_with('=') && info.contains("arch_bits:64"), "{info:?}");
    // The second master is another server: the key is not there.
    assert_eq!(Conn::open(serve.addr("redis-2")).call(&["EXISTS", "lock"]), ":0\r\n");

    let (code, rest) = serve.stop(Some(libc::SIGINT));
    assert_eq!(code, 0, "{rest}");
    assert!(
        rest.contains("stopped (SIGINT)") && rest.contains("written to"),
        "{rest}"
    );
    let lines = std::fs::read_to_string(&*history).expect("the history was written");
    assert!(
        lines
            .lines()
            .any(|l| l.contains("\"SET\"") && l.contains("\"lock\"") && l.contains("+OK")),
        "{lines}"
    );
    assert!(lines.contains("serve end (SIGINT)"), "{lines}");
}

#[test]
fn serve_applies_the_fault_plan_of_a_scenario_file() {
    let dir = common::TempPath::dir("serve", "faults");
    let file = dir.join("jump.toml");
    std::fs::write(
        &file,
        r#"
name = "serve-clock-jump"
description = "A master whose wall clock steps a minute forward 400 ms after the start."
seed = 7
duration_ms = 2000
[topology]
masters = 1
resource = "unfenced"
[lock]
algorithm = "naive"
ttl_ms = 1000
[[client]]
name = "app"
[[fault]]
at_ms = 400
kind = "clock-jump"
node = "redis-1"
delta_ms = 60000
"#,
    )
    .expect("writes the scenario");
    let history = dir.join("history.jsonl");
    let serve = Serve::start(&[
        &file.display().to_string(),
        "--duration-ms",
        "1200",
        "--history",
        &history.display().to_string(),
    ]);
    let started = Instant::now();
    assert!(
        serve.banner.contains("1 fault planned, from 400 ms"),
        "{}",
        serve.banner
    );
    let mut conn = Conn::open(serve.addr("redis-1"));
    assert_eq!(conn.call(&["SET", "lock", "v1", "PX", "30000"]), "+OK\r\n");
    assert_eq!(conn.call(&["GET", "lock"]), "$2\r\nv1\r\n");
    // After the jump, the master's clock is past the key's expiry: a 30 s lease is gone at once.
    std::thread::sleep(Duration::from_millis(700).saturating_sub(started.elapsed()));
    assert_eq!(conn.call(&["GET", "lock"]), "$-1\r\n");
    let (code, rest) = serve.stop(None);
    assert_eq!(code, 0, "{rest}");
    assert!(
        rest.contains("stopped (--duration-ms)") && rest.contains("1 fault applied"),
        "{rest}"
    );
    let lines = std::fs::read_to_string(&history).expect("the history was written");
    assert!(lines.contains("clock-jump") || lines.contains("ClockJump"), "{lines}");
}

#[test]
fn serve_refuses_faults_that_need_a_client_process_and_bad_flags() {
    let dir = common::TempPath::dir("serve", "refusals");
    let file = dir.join("pause.toml");
    std::fs::write(
        &file,
        "name = \"p\"\ndescription = \"d\"\nseed = 1\nduration_ms = 1000\n[topology]\nmasters = 1\n\
         [lock]\nalgorithm = \"naive\"\nttl_ms = 100\n[[client]]\nname = \"app\"\n\
         [[fault]]\nat_ms = 10\nkind = \"pause\"\nnode = \"app\"\nduration_ms = 50\n",
    )
    .expect("writes the scenario");
    let (code, _, err) = common::lockstep_in(&dir, &["serve", &file.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("fault[0]") && err.contains("runs no clients"), "{err}");
    let (code, _, err) = common::lockstep_in(&dir, &["serve", "--masters", "0"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = common::lockstep_in(&dir, &["serve", "--port", "65535", "--masters", "3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--port 65535") && err.contains("65535"), "{err}");
}

/// `BLPOP`/`BRPOP` with a timeout block for it on `serve` (Redis waits; lockstep's own loop used to
/// answer nil at once), and a push from another connection wakes them early, longest-blocked
/// first.
#[test]
fn serve_blocks_blpop_and_brpop_for_their_timeout_and_wakes_them_on_a_push() {
    let serve = Serve::start(&["--masters", "1"]);
    let addr = serve.addr("redis-1").to_string();
    let mut blocked = Conn::open(&addr);
    let started = Instant::now();
    assert_eq!(blocked.call(&["BLPOP", "k", "2"]), "*-1\r\n");
    let waited = started.elapsed();
    eprintln!("BLPOP k 2 on serve answered after {:.3} s", waited.as_secs_f64());
    assert!(
        waited >= Duration::from_millis(1990) && waited < Duration::from_millis(4000),
        "{waited:?}"
    );
    let started = Instant::now();
    assert_eq!(blocked.call(&["BRPOP", "k", "1.5"]), "*-1\r\n");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1490) && waited < Duration::from_millis(3500),
        "{waited:?}"
    );

    // Two clients block on `k`; one push of two elements serves both, the oldest first.
    let mut second = Conn::open(&addr);
    let mut pusher = Conn::open(&addr);
    let started = Instant::now();
    blocked.send(&["BLPOP", "k", "10"]);
    std::thread::sleep(Duration::from_millis(100));
    second.send(&["BRPOP", "k", "10"]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(pusher.call(&["RPUSH", "k", "a", "b", "c"]), ":3\r\n");
    assert_eq!(blocked.read_reply(), "*2\r\n$1\r\nk\r\n$1\r\na\r\n");
    assert_eq!(second.read_reply(), "*2\r\n$1\r\nk\r\n$1\r\nc\r\n");
    let woken = started.elapsed();
    eprintln!("BLPOP k 10 woken by RPUSH after {:.3} s", woken.as_secs_f64());
    assert!(woken < Duration::from_secs(3), "{woken:?}");
    assert_eq!(pusher.call(&["LPOP", "k"]), "$1\r\nb\r\n");
    // Inside MULTI a blocking pop never blocks: nil at once.
    assert_eq!(blocked.call(&["MULTI"]), "+OK\r\n");
    assert_eq!(blocked.call(&["BLPOP", "none", "5"]), "+QUEUED\r\n");
    let started = Instant::now();
    assert_eq!(blocked.call(&["EXEC"]), "*1\r\n*-1\r\n");
    assert!(started.elapsed() < Duration::from_secs(1));
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    assert_eq!(code, 0, "{rest}");
}

/// A subscriber receives a `PUBLISH` on `serve`, in RESP2 and in RESP3 (`HELLO 3`: a `>` push),
/// and a `PSUBSCRIBE`r receives it as a `pmessage`.
/// `QUIT` answers `+OK` and the server closes the connection (npm redlock's suite quits its
/// clients), and `UNLINK` deletes as `DEL` does (pottery's fixtures unlink their keys).
#[test]
fn serve_closes_the_connection_after_quit_and_unlinks_keys() {
    let serve = Serve::start(&["--masters", "1"]);
    let mut conn = Conn::open(serve.addr("redis-1"));
    assert_eq!(conn.call(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(conn.call(&["UNLINK", "k", "none"]), ":1\r\n");
    assert_eq!(conn.call(&["QUIT"]), "+OK\r\n");
    let mut rest = Vec::new();
    conn.0.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let closed = conn.0.read_to_end(&mut rest);
    assert!(
        closed.is_ok() && rest.is_empty(),
        "the server closed the connection: {closed:?} {rest:?}"
    );
}

#[test]
fn serve_delivers_publish_to_subscribers_in_resp2_and_resp3_and_to_patterns() {
    let history = common::TempPath::unused("serve", "pubsub.jsonl");
    let serve = Serve::start(&["--masters", "1", "--history", &history.display().to_string()]);
    let addr = serve.addr("redis-1").to_string();
    let mut resp2 = Conn::open(&addr);
    assert_eq!(
        resp2.call(&["SUBSCRIBE", "unlock"]),
        "*3\r\n$9\r\nsubscribe\r\n$6\r\nunlock\r\n:1\r\n"
    );
    // Subscribed mode (RESP2): only pub/sub commands and PING.
    assert!(resp2.call(&["GET", "k"]).starts_with("-ERR Can't execute 'get'"));
    let mut resp3 = Conn::open(&addr);
    assert!(resp3.call(&["HELLO", "3"]).starts_with("%7\r\n"));
    assert_eq!(
        resp3.call(&["SUBSCRIBE", "unlock"]),
        ">3\r\n$9\r\nsubscribe\r\n$6\r\nunlock\r\n:1\r\n"
    );
    let mut pattern = Conn::open(&addr);
    assert_eq!(
        pattern.call(&["PSUBSCRIBE", "un*"]),
        "*3\r\n$10\r\npsubscribe\r\n$3\r\nun*\r\n:1\r\n"
    );
    let mut publisher = Conn::open(&addr);
    assert_eq!(publisher.call(&["PUBLISH", "unlock", "go"]), ":3\r\n");
    assert_eq!(publisher.call(&["PUBLISH", "other", "x"]), ":0\r\n");
    assert_eq!(
        resp2.read_reply(),
        "*3\r\n$7\r\nmessage\r\n$6\r\nunlock\r\n$2\r\ngo\r\n"
    );
    assert_eq!(
        resp3.read_reply(),
        ">3\r\n$7\r\nmessage\r\n$6\r\nunlock\r\n$2\r\ngo\r\n"
    );
    assert_eq!(
        pattern.read_reply(),
        "*4\r\n$8\r\npmessage\r\n$3\r\nun*\r\n$6\r\nunlock\r\n$2\r\ngo\r\n"
    );
    assert_eq!(
        resp2.call(&["UNSUBSCRIBE"]),
        "*3\r\n$11\r\nunsubscribe\r\n$6\r\nunlock\r\n:0\r\n"
    );
    assert_eq!(resp2.call(&["GET", "k"]), "$-1\r\n");
    let (code, rest) = serve.stop(Some(libc::SIGINT));
    assert_eq!(code, 0, "{rest}");
    let lines = std::fs::read_to_string(&*history).expect("the history was written");
    assert!(
        lines.lines().any(|l| l.contains("\"PUBLISH\"") && l.contains(":3")),
        "{lines}"
    );
}

/// How many of redis-py 8.1.0's sync and asyncio lock tests pass against `serve`, in either
/// protocol: the figure docs/serve.md shows (`# 92 passed`), which `tests/cli/docs_sh.rs` holds
/// to this constant. The suite and pytest are pinned (.ci/run), so the count is exact.
pub(crate) const REDIS_PY_LOCK_TESTS_PASSED: u32 = 92;

#[test]
#[cfg_attr(
    lockstep_no_redis_py_suite,
    ignore = "redis-py's test suite (LOCKSTEP_REDIS_PY_SUITE, an unpacked sdist) or pytest with pytest-asyncio \
              is not installed (.ci/run installs them)"
)]
fn redis_py_lock_tests_pass_unmodified_against_serve() {
    let suite = crate::peers::suite_dir("LOCKSTEP_REDIS_PY_SUITE", "redis-8.1.0");
    crate::peers::require(
        suite.join("tests/test_lock.py").is_file(),
        &format!("redis-py 8.1.0's unpacked sdist ({})", suite.display()),
    );
    let python = crate::peers::peer_python();
    crate::peers::require(
        Command::new(&python)
            .args(["-c", "import pytest, pytest_asyncio"])
            .output()
            .is_ok_and(|o| o.status.success()),
        &format!("pytest with pytest-asyncio in {}", python.display()),
    );
    let serve = Serve::start(&[]);
    let url = format!("redis://{}/0", serve.addr("redis-1"));
    // Both protocols: redis-py 8 negotiates RESP3 by default.
    for protocol in [None, Some("2")] {
        let mut args = vec![
            "-m",
            "pytest",
            "tests/test_lock.py",
            "tests/test_asyncio/test_lock.py",
            "--redis-url",
            &url,
            "-q",
            "-p",
            "no:cacheprovider",
        ];
        if let Some(p) = protocol {
            args.extend(["--protocol", p]);
        }
        let out = Command::new(&python)
            .args(&args)
            .current_dir(&suite)
            .output()
            .expect("pytest runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let summary = stdout.lines().last().unwrap_or_default().to_string();
        assert!(
            out.status.success()
                && summary.contains(" passed")
                && !summary.contains("failed")
                && !summary.contains("error"),
            "redis-py's lock tests (protocol {protocol:?}) against lockstep serve: {summary}\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let passed: u32 = summary
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_default();
        assert_eq!(
            passed, REDIS_PY_LOCK_TESTS_PASSED,
            "the sync and asyncio lock tests (protocol {protocol:?}): {summary}"
        );
    }
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    assert_eq!(code, 0, "{rest}");
}

/// Sends `commands` in one pipeline and reads their replies, one line each (`$N` bulk replies
/// are read with their body).
fn pipeline(conn: &mut Conn, commands: &[Vec<String>]) -> Vec<String> {
    let mut out = String::new();
    for args in commands {
        out.push_str(&format!("*{}\r\n", args.len()));
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
    }
    conn.0.write_all(out.as_bytes()).expect("writes");
    let mut reader = BufReader::new(conn.0.try_clone().expect("clone"));
    (0..commands.len())
        .map(|_| {
            let mut line = String::new();
            reader.read_line(&mut line).expect("a reply");
            if line.starts_with('$') && !line.starts_with("$-1") {
                let mut body = String::new();
                reader.read_line(&mut body).expect("a bulk body");
                line.push_str(&body);
            }
            line
        })
        .collect()
}

#[test]
fn serve_survives_a_flood_of_scripts_and_stops_runaway_built_ins() {
    let history = common::TempPath::unused("serve", "scripts.jsonl");
    let serve = Serve::start(&["--masters", "1", "--history", &history.display().to_string()]);
    let mut conn = Conn::open(serve.addr("redis-1"));
    let release = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;
    let loaded = conn.call(&["SCRIPT", "LOAD", release]);
    let sha = loaded.lines().nth(1).expect("a SHA").to_string();
    // 20,000 SCRIPT LOADs: mlua panicked at about 8,000, and every script command after it.
    let loads: Vec<Vec<String>> = (0..20_000)
        .map(|i| vec!["SCRIPT".into(), "LOAD".into(), format!("return {i}")])
        .collect();
    let replies = pipeline(&mut conn, &loads);
    let refused = replies
        .iter()
        .filter(|r| r.starts_with("-ERR script cache full"))
        .count();
    assert_eq!(
        refused + replies.iter().filter(|r| r.starts_with("$40")).count(),
        20_000
    );
    assert!(refused > 0, "the cache is bounded");
    // Another connection's release still runs.
    let mut other = Conn::open(serve.addr("redis-1"));
    assert_eq!(other.call(&["SET", "lock", "tok"]), "+OK\r\n");
    assert_eq!(other.call(&["EVALSHA", &sha, "1", "lock", "tok"]), ":1\r\n");
    assert!(other
        .call(&["EVAL", "return 'new'", "0"])
        .starts_with("-ERR script cache full"));
    assert_eq!(other.call(&["SCRIPT", "FLUSH"]), "+OK\r\n");
    // Work inside built-ins is bounded: an error reply, then the next script runs.
    for script in [
        "local s = string.rep('a', 1e5) return string.find(s, '.-.-.-.-b')",
        "while true do local s = string.rep('x', 2^20) end",
        "while true do pcall(string.rep, 'x', 2^30) end",
    ] {
        let started = std::time::Instant::now();
        let reply = other.call(&["EVAL", script, "0"]);
        let seconds = started.elapsed().as_secs_f64();
        eprintln!("{seconds:.2} s: {script}");
        assert!(
            reply.starts_with("-ERR Script killed: exceeded instruction budget"),
            "{script}: {reply}"
        );
        assert!(seconds < 30.0, "{script}: {seconds} s");
        assert_eq!(other.call(&["EVAL", "return 1", "0"]), ":1\r\n");
    }
    let peak_kb: u64 = std::fs::read_to_string(format!("/proc/{}/status", serve.child.id()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0);
    eprintln!("serve's peak RSS: {peak_kb} kB");
    let (code, rest) = serve.stop(Some(libc::SIGTERM));
    assert_eq!(code, 0, "{rest}");
    assert!(
        std::fs::read_to_string(&*history).is_ok_and(|h| h.contains("serve end")),
        "{rest}"
    );
}
