//! Hostile input to `lockstep live`: any local process can connect to a live run's ports and can
//! outlive it, so neither may take lockstep down or be left behind.
//!
//! Each case runs the binary on a one-client scenario whose adapter (the Rust adapter, behind a
//! shell wrapper) first writes the ports it was given and then waits for a go-file: the test
//! attacks the master with a plain TCP client writing raw bytes, checks what it gets back, then
//! lets the lock client run and checks that the run finishes normally (exit 0, verdicts as
//! expected), within a 2 GiB address-space limit, with nothing of the attack in the history. The
//! SIGKILL cases kill lockstep while an adapter that ignores its stdin runs. Nothing external is
//! needed (no redis-py, no node).
//!
//! The RESP reader is also fuzzed in-process: mutated commands with huge declared lengths,
//! truncations and random bytes give a command, a wait or a protocol error, never a panic, and
//! never an allocation beyond what arrived (a counting allocator watches).

use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

// ---------------------------------------------------------------------------------------------
// A counting allocator: the largest single allocation requested on the current thread while
// tracking is on (thread-local, so parallel tests do not disturb each other).

struct Counting;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: an allocation during thread teardown must not panic.
    let _ = TRACKING.try_with(|on| {
        if on.get() {
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the bookkeeping touches
// only const-initialised thread-locals (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the largest allocation it made on this thread.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    TRACKING.with(|t| t.set(true));
    let out = f();
    TRACKING.with(|t| t.set(false));
    (out, LARGEST.with(Cell::get))
}

// ---------------------------------------------------------------------------------------------
// A live run of the binary with a lock client that waits for the test.

const ADDRESS_SPACE_LIMIT: u64 = 2 << 30;

struct Live {
    child: std::process::Child,
    dir: common::TempPath,
    master: String,
    resource: String,
    stdout: Option<std::thread::JoinHandle<String>>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

/// How the run ended.
struct Ended {
    code: Option<i32>,
    signal: Option<i32>,
    /// Peak resident set size of lockstep (and the adapters it reaped), KiB.
    max_rss_kib: i64,
    stdout: String,
    stderr: String,
    history: String,
}

fn scenario(dir: &Path, duration_ms: u64) -> PathBuf {
    let path = dir.join("hostile.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"live-hostile\"\ndescription = \"hostile clients\"\nduration_ms = {duration_ms}\n[topology]\n\
             masters = 1\n[lock]\nalgorithm = \"token-release\"\nttl_ms = 2000\n[workload]\niterations = 2\n\
             acquire_retry_ms = 50\n[[client]]\nname = \"client-1\"\n"
        ),
    )
    .unwrap();
    path
}

/// Starts `lockstep live` with `client` under the address-space limit; `client` is a shell
/// script body that may use `$PORTS` (write the addresses there) and `$GO` (wait for it).
fn start(name: &str, client_body: &str, duration_ms: u64) -> Live {
    let dir = common::TempPath::dir("hostile-live", name);
    let file = scenario(&dir, duration_ms);
    let script = dir.join("adapter.sh");
    let body = client_body
        .replace("$PORTS", &dir.join("ports").display().to_string())
        .replace("$GO", &dir.join("go").display().to_string())
        .replace("$PIDS", &dir.join("pids").display().to_string())
        .replace("$ADAPTER", env!("CARGO_BIN_EXE_lockstep-live-adapter"));
    std::fs::write(&script, body).unwrap();
    let history = dir.join("history.jsonl");
    // Spawned here rather than run by `common::lockstep`: the test attacks the run while it is
    // under way, SIGKILLs it, reaps it with `wait4` for its peak memory and looks for its
    // guardian among its children, under an address-space limit set before `exec`.
    let mut cmd = common::command(["live", file.to_str().unwrap(), "--client"]);
    cmd.arg(format!("exec sh {}", script.display()))
        .arg("--history")
        .arg(&history)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit(2) is async-signal-safe; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: ADDRESS_SPACE_LIMIT,
                rlim_max: ADDRESS_SPACE_LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("the binary starts");
    let collect = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    let mut live = Live {
        child,
        dir,
        master: String::new(),
        resource: String::new(),
        stdout: Some(stdout),
        stderr: Some(stderr),
    };
    let ports = live.dir.join("ports");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&ports).unwrap_or_default();
        if let Some((masters, resource)) = text.trim().split_once(' ') {
            live.master = masters.split(',').next().unwrap().to_string();
            live.resource = resource.to_string();
            break;
        }
        assert!(Instant::now() < deadline, "the adapter never wrote its ports");
        assert!(live.running(), "lockstep ended before the adapter started");
        std::thread::sleep(Duration::from_millis(20));
    }
    live
}

/// The wrapper around the Rust adapter: ports, then wait for the go-file.
const WAITING_ADAPTER: &str =
    "echo \"$LOCKSTEP_MASTERS $LOCKSTEP_RESOURCE\" > '$PORTS.tmp' && mv '$PORTS.tmp' '$PORTS'\n\
     while [ ! -e '$GO' ]; do sleep 0.02; done\nexec '$ADAPTER'\n";

impl Live {
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Whether lockstep still runs (not even a zombie).
    fn running(&self) -> bool {
        alive(self.pid())
    }

    /// Lets the lock client run, and waits for lockstep's end.
    fn finish(mut self) -> Ended {
        std::fs::write(self.dir.join("go"), "").unwrap();
        self.wait(Duration::from_secs(60))
    }

    fn wait(&mut self, timeout: Duration) -> Ended {
        let deadline = Instant::now() + timeout;
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value for wait4(2) to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: wait4(2) on our own child.
            let reaped = unsafe { libc::wait4(self.pid(), &mut status, libc::WNOHANG, &mut usage) };
            if reaped == self.pid() {
                break;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("lockstep live did not end within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let (code, signal) = if libc::WIFEXITED(status) {
            (Some(libc::WEXITSTATUS(status)), None)
        } else {
            (None, libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)))
        };
        Ended {
            code,
            signal,
            max_rss_kib: usage.ru_maxrss,
            stdout: self.stdout.take().unwrap().join().unwrap(),
            stderr: self.stderr.take().unwrap().join().unwrap(),
            history: std::fs::read_to_string(self.dir.join("history.jsonl")).unwrap_or_default(),
        }
    }
}

impl Ended {
    /// Exit 0: the run finished and came out as the scenario expects; not a signal, not a panic.
    fn assert_normal(&self) {
        assert_eq!(
            (self.code, self.signal),
            (Some(0), None),
            "lockstep did not end normally\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        assert!(self.stdout.contains("mutual-exclusion"), "{}", self.stdout);
        let history = &self.history;
        assert!(history.contains("\"acquire\""), "the lock client ran:\n{history}");
    }

    /// Whether any command event of the history has `args[0]` `name` and `args[1]` `key`.
    fn has_command(&self, name: &str, key: &str) -> bool {
        self.history.lines().any(|line| {
            let event: serde_json::Value = serde_json::from_str(line).unwrap();
            event["type"] == "command"
                && event.pointer("/args").and_then(|a| a.as_array()).is_some_and(|a| {
                    a.first()
                        .and_then(|v| v.as_str())
                        .is_some_and(|n| n.eq_ignore_ascii_case(name))
                        && a.get(1).and_then(|v| v.as_str()) == Some(key)
                })
        })
    }
}

// ---------------------------------------------------------------------------------------------
// A raw client.

/// What a connection got back after `payload` was written (as far as the server let it).
struct Outcome {
    /// Bytes written before the server cut the connection (or all of them).
    written: usize,
    /// Whether a write failed: the server closed the connection while the client still sent.
    cut: bool,
    /// Every byte received until the end of the connection.
    received: Vec<u8>,
    /// Whether the connection ended (EOF or reset) within the wait.
    closed: bool,
}

/// Writes `head`, then `body_len` bytes of `fill` in 64 KiB writes, reading concurrently; stops
/// at the first failed write. Waits up to `wait` for the end of the connection.
fn attack(addr: &str, head: &[u8], fill: u8, body_len: usize, wait: Duration) -> Outcome {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut reading = stream.try_clone().unwrap();
    let ended = Arc::new(AtomicBool::new(false));
    let reader = {
        let ended = ended.clone();
        std::thread::spawn(move || {
            reading.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
            let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
            let deadline = Instant::now() + wait;
            loop {
                match reading.read(&mut buf) {
                    Ok(0) => break (got, true),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                        if Instant::now() > deadline {
                            break (got, false);
                        }
                    }
                    Err(_) => break (got, true),
                }
                if !got.is_empty() {
                    ended.store(true, Ordering::SeqCst);
                }
            }
        })
    };
    let mut written = 0;
    let mut cut = stream.write_all(head).is_err();
    if !cut {
        written = head.len();
        let chunk = vec![fill; 64 * 1024];
        while written - head.len() < body_len {
            let n = chunk.len().min(body_len - (written - head.len()));
            if stream.write_all(&chunk[..n]).is_err() {
                cut = true;
                break;
            }
            written += n;
            if ended.load(Ordering::SeqCst) && written > head.len() + (16 << 20) {
                // The server answered long ago; it has shown it is not buffering what follows.
                break;
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Write);
    let (received, closed) = reader.join().unwrap();
    Outcome {
        written,
        cut,
        received,
        closed,
    }
}

/// Sends `request` on a new connection and reads until `want` bytes came (or 5 s passed).
fn request(addr: &str, request: &[u8], want: usize) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream.write_all(request).unwrap();
    let mut got = vec![0u8; want];
    let _ = stream.read_exact(&mut got);
    got
}

/// Whether the server ended the connection (EOF or reset) — not just silent for 50 ms.
fn server_ended(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf = [0u8; 64];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => panic!("unexpected reply {}", text(&buf[..n])),
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned()
}

// ---------------------------------------------------------------------------------------------
// The cases.

#[test]
fn a_4_gb_bulk_length_is_refused_with_redis_error_and_the_run_goes_on() {
    let live = start("4gb", WAITING_ADAPTER, 10_000);
    let master = live.master.clone();
    let out = attack(
        &master,
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4294967296\r\n",
        b'x',
        256 << 20,
        Duration::from_secs(10),
    );
    assert_eq!(
        text(&out.received),
        "-ERR Protocol error: invalid bulk length\r\n",
        "the reply to a 4 GB bulk length"
    );
    assert!(out.closed, "the connection is closed after the error");
    assert!(live.running(), "lockstep survives");
    // The master still serves, and so does the resource.
    assert_eq!(request(&master, b"*1\r\n$4\r\nPING\r\n", 7), b"+PONG\r\n");
    // A multibulk count past the bound and garbage lengths, each on its own connection.
    for (head, want) in [
        (
            &b"*2000000000\r\n"[..],
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (b"*1\r\n$-7\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$12ab\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\nfoo\r\n", "-ERR Protocol error: expected '$', got 'f'\r\n"),
    ] {
        let out = attack(&master, head, b'x', 0, Duration::from_secs(5));
        assert_eq!(text(&out.received), want, "{}", text(head));
        assert!(out.closed);
    }
    let ended = live.finish();
    ended.assert_normal();
    assert!(!ended.has_command("set", "k"), "the refused SET is not in the history");
    assert!(
        !ended.history.contains("4294967296"),
        "nothing of the attack is in the history"
    );
    eprintln!("peak RSS of lockstep: {} MiB", ended.max_rss_kib / 1024);
    assert!(ended.max_rss_kib < 256 * 1024, "peak RSS {} KiB", ended.max_rss_kib);
}

#[test]
fn a_query_buffer_flood_is_cut_off() {
    let live = start("flood", WAITING_ADAPTER, 10_000);
    let master = live.master.clone();
    // 100 MB of a length line that never ends: Redis gives up after 64 KiB.
    let out = attack(&master, b"*", b'1', 100 << 20, Duration::from_secs(10));
    assert_eq!(
        text(&out.received),
        "-ERR Protocol error: too big mbulk count string\r\n"
    );
    assert!(out.closed);
    let out = attack(&master, b"*1\r\n$", b'1', 100 << 20, Duration::from_secs(10));
    assert_eq!(
        text(&out.received),
        "-ERR Protocol error: too big bulk count string\r\n"
    );
    // A valid 100 MB bulk string: past the 64 MiB query buffer the connection is closed, without
    // a reply (as Redis past client-query-buffer-limit), long before the 100 MB are sent.
    let started = Instant::now();
    let out = attack(
        &master,
        b"*3\r\n$3\r\nSET\r\n$1\r\nf\r\n$100000000\r\n",
        b'x',
        100_000_000,
        Duration::from_secs(20),
    );
    assert!(
        out.cut && out.closed,
        "the connection is cut: wrote {} bytes",
        out.written
    );
    assert!(out.received.is_empty(), "no reply: {}", text(&out.received));
    assert!(
        out.written < 100_000_000 && out.written >= 63 << 20,
        "cut at {} bytes: at the 64 MiB query buffer (less a write in flight)",
        out.written
    );
    eprintln!("100 MB bulk cut after {} bytes in {:?}", out.written, started.elapsed());
    assert!(live.running(), "lockstep survives");
    assert_eq!(request(&master, b"*1\r\n$4\r\nPING\r\n", 7), b"+PONG\r\n");
    let ended = live.finish();
    ended.assert_normal();
    assert!(!ended.has_command("set", "f"));
    eprintln!("peak RSS of lockstep: {} MiB", ended.max_rss_kib / 1024);
    assert!(ended.max_rss_kib < 512 * 1024, "peak RSS {} KiB", ended.max_rss_kib);
}

#[test]
fn many_connections_together_are_held_to_the_run_limit() {
    let live = start("run-limit", WAITING_ADAPTER, 10_000);
    let master = live.master.clone();
    // Five connections, each with 59 MB of a 60 MB bulk (under the 64 MiB per connection):
    // together past the run's 256 MiB, so the one holding the most is closed; the others stay.
    let mut conns = Vec::new();
    for i in 0..5 {
        let mut s = TcpStream::connect(&master).unwrap();
        s.write_all(format!("*3\r\n$3\r\nSET\r\n$2\r\nr{i}\r\n$60000000\r\n").as_bytes())
            .unwrap();
        let chunk = vec![b'y'; 1_000_000];
        let mut sent = 0;
        while sent < 59 {
            if s.write_all(&chunk).is_err() {
                break;
            }
            sent += 1;
        }
        conns.push(s);
    }
    // The writes above returned once lockstep had read nearly all of them, so the limit has been
    // passed; give the closed connection's end a moment to arrive, then some more for any other.
    let mut closed = vec![false; conns.len()];
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut settle: Option<Instant> = None;
    while settle.is_none_or(|at| Instant::now() < at) && Instant::now() < deadline {
        for (s, closed) in conns.iter_mut().zip(closed.iter_mut()) {
            if !*closed && server_ended(s) {
                *closed = true;
            }
        }
        if settle.is_none() && closed.iter().any(|c| *c) {
            settle = Some(Instant::now() + Duration::from_millis(500));
        }
    }
    let closed = closed.iter().filter(|c| **c).count();
    assert_eq!(closed, 1, "exactly the largest connection is closed");
    assert!(live.running());
    drop(conns);
    let ended = live.finish();
    ended.assert_normal();
    eprintln!("peak RSS of lockstep: {} MiB", ended.max_rss_kib / 1024);
    assert!(ended.max_rss_kib < 1024 * 1024, "peak RSS {} KiB", ended.max_rss_kib);
}

/// Mutated RESP, deterministic: valid commands with a length replaced, bytes flipped, inserted or
/// cut.
fn mutated_inputs(seed: u64, count: usize) -> Vec<Vec<u8>> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let bases: [&[u8]; 5] = [
        b"*3\r\n$3\r\nSET\r\n$4\r\nfuzz\r\n$5\r\nvalue\r\n",
        b"*2\r\n$3\r\nGET\r\n$4\r\nfuzz\r\n",
        b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n",
        b"*5\r\n$3\r\nSET\r\n$4\r\nfuzz\r\n$1\r\nv\r\n$2\r\nPX\r\n$3\r\n100\r\n",
        b"*3\r\n$6\r\nFWRITE\r\n$4\r\nfuzz\r\n$1\r\n1\r\n",
    ];
    let lengths: [&[u8]; 8] = [
        b"4294967296",
        b"536870913",
        b"9223372036854775807",
        b"99999999999999999999",
        b"-1",
        b"-2147483648",
        b"1048577",
        b"0x10",
    ];
    (0..count)
        .map(|_| {
            let mut input = bases[rng.random_range(0..bases.len())].to_vec();
            for _ in 0..rng.random_range(1..4) {
                match rng.random_range(0..5) {
                    0 => {
                        // Replace the number after a '*' or '$'.
                        let marks: Vec<usize> = (0..input.len())
                            .filter(|&i| input[i] == b'*' || input[i] == b'$')
                            .collect();
                        if let Some(&at) = marks.get(rng.random_range(0..marks.len().max(1))) {
                            let end = (at + 1..input.len())
                                .find(|&i| input[i] == b'\r')
                                .unwrap_or(input.len());
                            let with = lengths[rng.random_range(0..lengths.len())];
                            input.splice(at + 1..end, with.iter().copied());
                        }
                    }
                    1 if !input.is_empty() => {
                        let at = rng.random_range(0..input.len());
                        input[at] = rng.random();
                    }
                    2 => {
                        let at = rng.random_range(0..=input.len());
                        let bytes: Vec<u8> = (0..rng.random_range(1..8)).map(|_| rng.random()).collect();
                        input.splice(at..at, bytes);
                    }
                    3 => {
                        let at = rng.random_range(0..=input.len());
                        input.truncate(at);
                    }
                    _ => {
                        let again = input.clone();
                        input.extend_from_slice(&again);
                    }
                }
            }
            input
        })
        .collect()
}

/// Checks that `bytes` is a sequence of whole RESP2 replies; returns their first bytes and
/// whether the last one is a protocol error.
fn replies(bytes: &[u8]) -> Result<Vec<String>, String> {
    fn one(b: &[u8], at: &mut usize, out: &mut Vec<String>) -> Result<(), String> {
        let end = (*at..b.len().saturating_sub(1))
            .find(|&i| b[i] == b'\r' && b[i + 1] == b'\n')
            .ok_or("a reply without its CRLF")?;
        let line = &b[*at..end];
        *at = end + 2;
        let (&kind, rest) = line.split_first().ok_or("an empty line")?;
        let rest = std::str::from_utf8(rest).map_err(|_| "not UTF-8")?;
        match kind {
            b'+' | b'-' | b':' => out.push(format!("{}{}", kind as char, rest)),
            b'$' => {
                let n: i64 = rest.parse().map_err(|_| "a bad bulk length")?;
                if n >= 0 {
                    *at += n as usize + 2;
                    if *at > b.len() {
                        return Err("a truncated bulk".into());
                    }
                }
                out.push("$".into());
            }
            b'*' => {
                let n: i64 = rest.parse().map_err(|_| "a bad array length")?;
                for _ in 0..n.max(0) {
                    one(b, at, &mut Vec::new())?;
                }
                out.push("*".into());
            }
            other => return Err(format!("a reply starting with {:?}", other as char)),
        }
        Ok(())
    }
    let (mut at, mut out) = (0, Vec::new());
    while at < bytes.len() {
        one(bytes, &mut at, &mut out)?;
    }
    Ok(out)
}

#[test]
fn mutated_resp_over_tcp_gets_replies_or_a_protocol_error_and_the_run_goes_on() {
    let live = start("tcp-fuzz", WAITING_ADAPTER, 10_000);
    let started = Instant::now();
    let inputs = mutated_inputs(7, 150);
    let mut errors = 0;
    for (i, input) in inputs.iter().enumerate() {
        let addr = if i % 3 == 2 { &live.resource } else { &live.master };
        let out = attack(addr, input, 0, 0, Duration::from_secs(5));
        assert!(out.closed, "input {i} {:?}: the connection did not end", text(input));
        let got = replies(&out.received)
            .unwrap_or_else(|e| panic!("input {i} {:?}: {e} in {:?}", text(input), text(&out.received)));
        // A protocol error ends the connection: nothing comes after it.
        if let Some(at) = got.iter().position(|r| r.starts_with("-ERR Protocol error")) {
            assert_eq!(at, got.len() - 1, "input {i}: replies after a protocol error: {got:?}");
            errors += 1;
        }
    }
    eprintln!(
        "{} mutated inputs, {errors} protocol errors, in {:?}",
        inputs.len(),
        started.elapsed()
    );
    assert!(errors > 20, "the mutations reach the protocol errors");
    assert!(live.running());
    live.finish().assert_normal();
}

// ---------------------------------------------------------------------------------------------
// SIGKILL of lockstep.

/// An adapter that ignores its stdin: it records its own pid and two children's, says hello, and
/// waits forever (its children are in its process group, without a death signal of their own).
const DEAF_ADAPTER: &str = "echo $$ >> '$PIDS'\nsleep 1000 &\necho $! >> '$PIDS'\n\
     echo \"$LOCKSTEP_MASTERS $LOCKSTEP_RESOURCE\" > '$PORTS.tmp' && mv '$PORTS.tmp' '$PORTS'\n\
     echo '{\"hello\":\"deaf\"}'\nsleep 1000 &\necho $! >> '$PIDS'\nwait\n";

fn pids(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Alive and not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next()
            .unwrap_or("");
        state != "Z"
    })
}

fn wait_for_pids(live: &Live, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pids = pids(&live.dir);
        if pids.len() >= n {
            return pids;
        }
        assert!(Instant::now() < deadline, "the adapter did not start its children");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to `within` for every pid of `pids` to be gone; returns those still alive.
fn survivors(pids: &[i32], within: Duration) -> Vec<i32> {
    let deadline = Instant::now() + within;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn sigkill(pid: i32) {
    // SAFETY: kill(2) of a process this test started (or of lockstep's guardian).
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// lockstep's children running lockstep's own binary: the guardian (a fork, never an exec).
fn guardians_of(pid: i32) -> Vec<i32> {
    let binary = std::fs::canonicalize(common::BINARY).unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let ppid: i32 = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if ppid == pid && std::fs::read_link(entry.path().join("exe")).is_ok_and(|exe| exe == binary) {
            found.push(child);
        }
    }
    found
}

#[test]
fn a_sigkilled_live_run_takes_its_adapters_and_their_children_with_it() {
    let mut live = start("sigkill", DEAF_ADAPTER, 60_000);
    let pids = wait_for_pids(&live, 3);
    assert!(pids.iter().all(|&p| alive(p)));
    // Let lockstep read the hello and send its first request, which the adapter never answers.
    std::thread::sleep(Duration::from_millis(300));
    let killed = Instant::now();
    sigkill(live.pid());
    let ended = live.wait(Duration::from_secs(10));
    assert_eq!(ended.signal, Some(libc::SIGKILL));
    let left = survivors(&pids, Duration::from_secs(2));
    for &p in &left {
        sigkill(p);
    }
    assert!(
        left.is_empty(),
        "processes {left:?} of the adapter outlived a SIGKILLed lockstep"
    );
    eprintln!("adapter group gone {:?} after the SIGKILL", killed.elapsed());
}

#[test]
fn without_the_guardian_the_adapter_itself_still_dies_by_its_death_signal() {
    let mut live = start("pdeathsig", DEAF_ADAPTER, 60_000);
    let pids = wait_for_pids(&live, 3);
    std::thread::sleep(Duration::from_millis(300));
    let guardians = guardians_of(live.pid());
    assert_eq!(guardians.len(), 1, "one guardian process: {guardians:?}");
    sigkill(guardians[0]);
    sigkill(live.pid());
    let _ = live.wait(Duration::from_secs(10));
    // The adapter's own process (`$$`, lockstep's direct child after `exec`) has the death signal.
    let left = survivors(&pids[..1], Duration::from_secs(2));
    // Its children had only the guardian: clean them up here.
    for &p in &pids {
        sigkill(p);
    }
    assert!(
        left.is_empty(),
        "the adapter process {left:?} outlived a SIGKILLed lockstep"
    );
}

// ---------------------------------------------------------------------------------------------
// The RESP reader, fuzzed in-process.

/// Feeds `input` in pieces of `piece` bytes: every result is a command, a wait or a protocol error.
fn feed(input: &[u8], piece: usize) -> Result<usize, String> {
    let mut reader = lockstep::live::resp::CommandReader::new();
    let mut commands = 0;
    for chunk in input.chunks(piece.max(1)) {
        reader.push(chunk);
        loop {
            match reader.next_command() {
                Ok(Some(args)) => {
                    assert!(!args.is_empty());
                    commands += 1;
                }
                Ok(None) => break,
                Err(e) => {
                    assert!(e.starts_with("ERR Protocol error: "), "{e}");
                    return Err(e);
                }
            }
        }
        assert!(reader.buffered() <= input.len() * 40 + 64, "{} held", reader.buffered());
    }
    Ok(commands)
}

#[test]
fn the_reader_allocates_for_what_arrived_never_for_what_is_declared() {
    let (result, largest) =
        largest_allocation(|| feed(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\nxxxxxxxxxxxxxxxxxxxx", 7));
    assert_eq!(result, Ok(0), "512 MB is a valid length: the reader waits");
    assert!(
        largest < 4096,
        "largest allocation {largest} bytes for a 512 MB declaration"
    );
    let (result, largest) = largest_allocation(|| feed(b"*1048576\r\n$1\r\na\r\n", 3));
    assert_eq!(result, Ok(0));
    assert!(
        largest < 4096,
        "largest allocation {largest} bytes for 1M declared elements"
    );
}

#[test]
fn deterministic_mutations_are_read_or_refused_within_what_arrived() {
    for (i, input) in mutated_inputs(11, 3000).iter().enumerate() {
        let piece = 1 + i % 17;
        let (_, largest) = largest_allocation(|| feed(input, piece));
        assert!(
            largest <= 64 * 1024 + 4 * input.len(),
            "input {i} {:?}: an allocation of {largest} bytes",
            text(input)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Arbitrary bytes behind a command start, and huge or garbage declared lengths: no panic, a
    /// command, a wait or a protocol error, and no allocation beyond a small multiple of the input.
    #[test]
    fn arbitrary_resp_is_read_or_refused(
        prefix in prop::sample::select(vec![&b""[..], &b"*"[..], &b"*2\r\n"[..], &b"*1\r\n$"[..], &b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$"[..]]),
        length in prop::sample::select(vec!["4294967296", "536870912", "536870913", "18446744073709551616", "-1", "-0", "+5", "05", "5", "0", "1048576", "1048577", ""]),
        tail in prop::collection::vec(any::<u8>(), 0..200),
        piece in 1usize..64,
    ) {
        let mut input = prefix.to_vec();
        input.extend_from_slice(length.as_bytes());
        input.extend_from_slice(b"\r\n");
        input.extend_from_slice(&tail);
        let (_, largest) = largest_allocation(|| feed(&input, piece));
        prop_assert!(largest <= 64 * 1024 + 4 * input.len(), "an allocation of {} bytes", largest);
    }
}
