//! Live runs end to end: real adapter processes against lockstep's servers on 127.0.0.1.
//!
//! The Kleppmann cases drive the real libraries (redis-py's `Lock`, node-redlock v5 over ioredis)
//! through the adapters in `examples/live/`; `.ci/run` installs both. Without them a developer
//! machine lists those tests as ignored, with the reason (build.rs probes for each tool); under
//! `CI=true` nothing is ignored and a missing library fails the test.
//! Live runs are real time: each case is run three times and must come out as expected in at least
//! two (in practice every run does; see docs/live.md for the measured frequencies).
//!
//! The other tests use tiny shell adapters and need nothing installed: a command that does not
//! start, an adapter that answers garbage or nothing, a port in use, a fault that cannot run live,
//! loopback-only listeners, no process left behind, and a client crashed and restarted. Client
//! clock faults need libfaketime (ignored without it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;
use common::{in_ci, lockstep, require, Lockstep};

fn temp_dir(name: &str) -> common::TempPath {
    common::TempPath::dir("live", name)
}

fn require_redis_py() {
    require("redis-py", Command::new("python3").args(["-c", "import redis"]))
}

fn require_node_redlock() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live/node");
    require(
        "node-redlock (npm ci in examples/live/node)",
        Command::new("node")
            .current_dir(&dir)
            .args(["-e", "require('redlock'); require('ioredis')"]),
    )
}

const PYTHON: &str = "python3 examples/live/redis_py_adapter.py";
const NODE: &str = "node examples/live/node/redlock_adapter.js";

/// Runs `file` live `runs` times with `client`, writing the report; returns live.json.
fn live_report(name: &str, file: &str, client: &str, runs: u32) -> serde_json::Value {
    let out = temp_dir(name);
    let runs_arg = runs.to_string();
    let report = out.join("report");
    let (code, stdout, stderr) = lockstep(&[
        "live",
        file,
        "--client",
        client,
        "--runs",
        &runs_arg,
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(code == 0 || code == 1, "exit {code}\n{stdout}\n{stderr}");
    for f in ["report.json", "summary.md", "junit.xml", "index.html", "live.json"] {
        assert!(report.join(f).exists(), "{f} missing\n{stdout}");
    }
    let summary_md = std::fs::read_to_string(report.join("summary.md")).unwrap();
    assert!(summary_md.starts_with("> **Live run**"), "{summary_md}");
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(
        index.contains("<strong>Live run</strong>"),
        "index.html is not marked live"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("live.json")).unwrap()).unwrap();
    assert_eq!(json["live"], true);
    json
}

fn count(summary: &serde_json::Value, checker: &str, verdict: &str) -> u64 {
    summary["verdicts"][checker][verdict].as_u64().unwrap_or(0)
}

fn assert_kleppmann(summary: &serde_json::Value, fenced: bool, runs: u64) {
    let at_least = runs - 1;
    let text = serde_json::to_string_pretty(summary).unwrap();
    assert!(count(summary, "mutual-exclusion", "invalid") >= at_least, "{text}");
    if fenced {
        assert!(count(summary, "stale-write", "valid") >= at_least, "{text}");
        assert!(count(summary, "lost-update", "valid") >= at_least, "{text}");
        assert!(count(summary, "token-order", "valid") >= at_least, "{text}");
    } else {
        assert!(count(summary, "stale-write", "invalid") >= at_least, "{text}");
        assert!(count(summary, "lost-update", "invalid") >= at_least, "{text}");
    }
    assert!(summary["runs_as_expected"].as_u64().unwrap() >= at_least, "{text}");
}

#[test]
#[cfg_attr(
    lockstep_no_redis_py,
    ignore = "redis-py is not installed (pip install redis; .ci/run installs it)"
)]
fn redis_py_lock_breaks_under_a_pause_and_fencing_saves_the_resource() {
    require_redis_py();
    let s = live_report("py", "scenarios/live/kleppmann-pause.toml", PYTHON, 3);
    assert!(s["adapters"]["client-1"].as_str().unwrap().contains("redis-py"), "{s}");
    assert_kleppmann(&s, false, 3);
    let s = live_report("py-fenced", "scenarios/live/kleppmann-pause-fenced.toml", PYTHON, 3);
    assert_kleppmann(&s, true, 3);
}

#[test]
#[cfg_attr(
    lockstep_no_node_redlock,
    ignore = "node or node-redlock is not installed (npm ci in examples/live/node; .ci/run does it)"
)]
fn node_redlock_breaks_under_a_pause_and_fencing_saves_the_resource() {
    require_node_redlock();
    let s = live_report("node", "scenarios/live/kleppmann-pause.toml", NODE, 3);
    assert!(
        s["adapters"]["client-1"].as_str().unwrap().contains("node-redlock"),
        "{s}"
    );
    assert_kleppmann(&s, false, 3);
    let s = live_report("node-fenced", "scenarios/live/kleppmann-pause-fenced.toml", NODE, 3);
    assert_kleppmann(&s, true, 3);
}

/// A one-client scenario that ends after 1.2 s.
fn tiny_scenario(dir: &Path, extra: &str) -> PathBuf {
    tiny_scenario_lasting(dir, extra, 1200)
}

/// A one-client scenario that ends after `duration_ms`.
fn tiny_scenario_lasting(dir: &Path, extra: &str, duration_ms: u64) -> PathBuf {
    let path = dir.join("tiny.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"live-tiny\"\ndescription = \"tiny\"\nduration_ms = {duration_ms}\n[topology]\nmasters = 1\n[lock]\nalgorithm = \
             \"token-release\"\nttl_ms = 500\n[workload]\niterations = 1\nacquire_retry_ms = 50\n\
             [[client]]\nname = \"client-1\"\n{extra}"
        ),
    )
    .unwrap();
    path
}

/// A shell adapter: starts a background `sleep` in its group (its pid written to `pidfile`),
/// says hello, then answers every request with `answer` (`{id}` is replaced by the request id).
fn sh_adapter(dir: &Path, pidfile: &Path, answer: &str) -> String {
    let script = dir.join("adapter.sh");
    let body = format!(
        "#!/bin/sh\nsleep 300 &\necho $! >> '{pid}'\necho '{{\"hello\":\"shell test adapter\"}}'\n\
         while read -r line; do\n  id=$(echo \"$line\" | sed -n 's/.*\"id\":\\([0-9]*\\).*/\\1/p')\n  \
         [ -z \"$id\" ] && exit 0\n  echo '{answer}' | sed \"s/{{id}}/$id/\"\ndone\n",
        pid = pidfile.display(),
    );
    std::fs::write(&script, body).unwrap();
    format!("sh {}", script.display())
}

fn pids(pidfile: &Path) -> Vec<i32> {
    std::fs::read_to_string(pidfile)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn alive(pid: i32) -> bool {
    // A zombie is dead for our purposes; /proc/PID/stat's third field says which.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next()
                .unwrap_or("");
            state != "Z"
        })
        .unwrap_or(false)
}

fn assert_all_dead(pidfile: &Path) {
    let pids = pids(pidfile);
    assert!(!pids.is_empty(), "the adapter never started");
    let deadline = Instant::now() + Duration::from_secs(3);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for p in pids {
        assert!(!alive(p), "process {p} started by the adapter outlived the run");
    }
}

#[test]
fn a_run_that_runs_out_of_time_leaves_no_process_behind() {
    let dir = temp_dir("leftover");
    let file = tiny_scenario(&dir, "");
    let pidfile = dir.join("pids");
    let client = sh_adapter(&dir, &pidfile, r#"{"id":{id},"status":"busy"}"#);
    let (code, out, err) = lockstep(&["live", file.to_str().unwrap(), "--client", &client]);
    assert!(code == 0 || code == 1, "{out}{err}");
    assert!(out.contains("duration ran out"), "{out}");
    assert_all_dead(&pidfile);
}

#[test]
fn an_adapter_that_answers_garbage_is_named_and_killed() {
    let dir = temp_dir("garbage");
    let file = tiny_scenario(&dir, "");
    let pidfile = dir.join("pids");
    let client = sh_adapter(&dir, &pidfile, "this is not json");
    let (code, out, err) = lockstep(&["live", file.to_str().unwrap(), "--client", &client]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("client-1") && err.contains("not valid"), "{err}");
    assert!(err.contains("this is not json"), "{err}");
    assert_all_dead(&pidfile);
}

#[test]
fn an_adapter_that_answers_nothing_times_out_per_step() {
    let dir = temp_dir("silent");
    let file = tiny_scenario(&dir, "");
    let pidfile = dir.join("pids");
    let script = dir.join("silent.sh");
    std::fs::write(
        &script,
        format!(
            "sleep 300 &\necho $! >> '{}'\necho '{{\"hello\":\"silent\"}}'\nexec cat > /dev/null\n",
            pidfile.display()
        ),
    )
    .unwrap();
    let client = format!("sh {}", script.display());
    let started = Instant::now();
    let (code, out, err) = lockstep(&[
        "live",
        file.to_str().unwrap(),
        "--client",
        &client,
        "--step-timeout-ms",
        "300",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("the answer to acquire (request 1) did not come within 300 ms")
            && err.contains("a larger --step-timeout-ms"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_all_dead(&pidfile);
}

#[test]
fn a_client_command_that_does_not_start_is_a_clear_error() {
    let dir = temp_dir("nostart");
    let file = tiny_scenario(&dir, "");
    let (code, out, err) = lockstep(&[
        "live",
        file.to_str().unwrap(),
        "--client",
        "/nonexistent/lock-adapter --flag",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("client-1") && err.contains("exited") && err.contains("hello"),
        "{err}"
    );
    assert!(err.contains("nonexistent"), "the shell's message is shown: {err}");
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = temp_dir("port");
    let file = tiny_scenario(&dir, "");
    let (code, out, err) = lockstep(&["live", file.to_str().unwrap(), "--client", "true", "--base-port", &port]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && err.contains("in use"),
        "{err}"
    );
}

#[test]
fn a_fault_that_cannot_run_live_is_refused_before_anything_starts() {
    let dir = temp_dir("refused");
    // Drift on a client needs libfaketime too: refused when it is not there.
    let drift = tiny_scenario(
        &dir,
        "[[fault]]\nat_ms = 100\nkind = \"drift\"\nnode = \"client-1\"\ndrift_ppm = 1000\n",
    );
    let (code, _, err) = Lockstep::new(["live", drift.to_str().unwrap(), "--client", "true"])
        .env("LOCKSTEP_LIBFAKETIME", "/nonexistent/libfaketime.so.1")
        .run();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("drift") && err.contains("client-1") && err.contains("libfaketime"),
        "{err}"
    );
    // So does a client's drift_ppm.
    let skewed = tiny_scenario(&dir, "drift_ppm = 500\n");
    let (code, _, err) = Lockstep::new(["live", skewed.to_str().unwrap(), "--client", "true"])
        .env("LOCKSTEP_LIBFAKETIME", "/nonexistent/libfaketime.so.1")
        .run();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("drift_ppm = 500") && err.contains("libfaketime"), "{err}");
    // A power loss is a server's fault, live too: the scenario names the field.
    let power = tiny_scenario(
        &dir,
        "[[fault]]\nat_ms = 100\nkind = \"power-loss\"\nnode = \"client-1\"\n",
    );
    let (code, out, err) = lockstep(&["live", power.to_str().unwrap(), "--client", "true"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("fault[0].node") && err.contains("client-1"), "{err}");

    // A client clock jump needs libfaketime: refused when it is not there.
    let jump = tiny_scenario(
        &dir,
        "[[fault]]\nat_ms = 100\nkind = \"clock-jump\"\nnode = \"client-1\"\ndelta_ms = 1000\n",
    );
    let (code, _, err) = Lockstep::new(["live", jump.to_str().unwrap(), "--client", "true"])
        .env("LOCKSTEP_LIBFAKETIME", "/nonexistent/libfaketime.so.1")
        .run();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("clock-jump") && err.contains("libfaketime"), "{err}");
}

/// Listening TCP sockets of this process: (local address hex, port).
fn own_listeners() -> Vec<String> {
    let mut inodes = Vec::new();
    for fd in std::fs::read_dir("/proc/self/fd").into_iter().flatten().flatten() {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            let t = target.to_string_lossy().into_owned();
            if let Some(inode) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                inodes.push(inode.to_string());
            }
        }
    }
    let mut out = Vec::new();
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        for line in std::fs::read_to_string(table).unwrap_or_default().lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 9 && cols[3] == "0A" && inodes.iter().any(|i| i == cols[9]) {
                out.push(cols[1].to_string());
            }
        }
    }
    out
}

#[test]
fn live_servers_listen_on_loopback_only() {
    let dir = temp_dir("loopback");
    let file = tiny_scenario(&dir, "");
    let pidfile = dir.join("pids");
    let client = sh_adapter(&dir, &pidfile, r#"{"id":{id},"status":"busy"}"#);
    let options = lockstep::live::LiveOptions {
        client,
        ..lockstep::live::LiveOptions::default()
    };
    let handle = std::thread::spawn(move || lockstep::live::run_file(&file, &options));
    let mut seen = Vec::new();
    while !handle.is_finished() {
        seen.extend(own_listeners());
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = handle.join().unwrap().expect("the run works");
    assert!(!seen.is_empty(), "no listener was seen during the run");
    for local in &seen {
        // 0100007F is 127.0.0.1 in /proc's little-endian hex.
        assert!(local.starts_with("0100007F:"), "a live run listened on {local}");
    }
    for addr in run.addresses.values() {
        assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    }
    assert_all_dead(&pidfile);
}

/// The Rust adapter (`examples/live/rust_adapter.rs`, the `lockstep-live-adapter` binary).
fn rust_adapter() -> Option<PathBuf> {
    Some(PathBuf::from(env!("CARGO_BIN_EXE_lockstep-live-adapter")))
}

#[test]
fn the_rust_adapter_gives_the_simulated_verdicts_on_every_live_scenario() {
    let Some(adapter) = rust_adapter() else { return };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/live");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let options = lockstep::live::LiveOptions {
        client: adapter.display().to_string(),
        ..lockstep::live::LiveOptions::default()
    };
    for file in files {
        let scenario = lockstep::scenario::Scenario::from_file_live(&file).unwrap();
        let simulated = match lockstep::run::run_scenario(&scenario, None) {
            Ok(simulated) => simulated,
            Err(e) => {
                // Client crashes are live-only: the simulation refuses them, naming the field;
                // the live run must then meet the file's [expect] on its own.
                let e = e.to_string();
                assert!(
                    e.contains("live runs only") && e.contains("`node`"),
                    "{}: {e}",
                    file.display()
                );
                let met = (0..2).any(|_| {
                    lockstep::live::run_live(&scenario, &options)
                        .expect("the live run works")
                        .as_expected()
                });
                assert!(met, "{}: the live run does not meet [expect]", file.display());
                continue;
            }
        };
        assert!(
            simulated.as_expected(),
            "{}: the simulation disagrees with [expect]",
            file.display()
        );
        // Real time: two tries at agreeing (every run agrees in practice).
        let mut last = String::new();
        let agreed = (0..2).any(|_| {
            let live = lockstep::live::run_live(&scenario, &options).expect("the live run works");
            let differs: Vec<String> = simulated
                .results
                .iter()
                // A live adapter does not report the instant it computed its validity (the
                // protocol has no such field), so lease-validity is `unknown` live by design.
                .filter(|r| r.checker != "lease-validity")
                .filter(|r| live.verdict(&r.checker) != Some(r.verdict))
                .map(|r| {
                    format!(
                        "{}: simulated {:?}, live {:?}",
                        r.checker,
                        r.verdict,
                        live.verdict(&r.checker)
                    )
                })
                .collect();
            last = differs.join("; ");
            differs.is_empty()
        });
        assert!(agreed, "{}: {last}", file.display());
    }
}

/// The real `redis-server` to test `--redis-server` with (`REDIS_SERVER` or the one on PATH); the
/// test is ignored where build.rs found none, so here it must run.
fn redis_server() -> Option<String> {
    let binary = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string());
    let ok = Command::new(&binary)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "redis-server ({binary}) is not installed; .ci/run installs it{}",
        match in_ci() {
            true => "",
            false => " (it was there when the tests were built: touch build.rs)",
        }
    );
    Some(binary)
}

/// redis-server processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(needle)
            && text.contains("redis-server")
            && entry.file_name().to_string_lossy().parse::<u32>().is_ok()
        {
            let pid: i32 = entry.file_name().to_string_lossy().parse().unwrap();
            if alive(pid) {
                found.push(text);
            }
        }
    }
    found
}

#[test]
#[cfg_attr(
    lockstep_no_redis_server,
    ignore = "redis-server is not installed (apt-get install redis-server, or REDIS_SERVER=PATH)"
)]
fn real_redis_servers_crash_restart_and_are_gone_afterwards() {
    let Some(binary) = redis_server() else { return };
    let Some(adapter) = rust_adapter() else { return };
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/live/redlock-restart.toml");
    let scenario = lockstep::scenario::Scenario::from_file(&file).unwrap();
    let options = lockstep::live::LiveOptions {
        client: adapter.display().to_string(),
        redis_server: Some(binary),
        ..lockstep::live::LiveOptions::default()
    };
    let agreed = (0..2).any(|_| {
        let run = lockstep::live::run_live(&scenario, &options).expect("the live run works");
        run.verdict("mutual-exclusion") == Some(lockstep::model::Verdict::Invalid)
    });
    assert!(
        agreed,
        "a real redis-server restarted empty must let a second quorum form"
    );
    let marker = format!("lockstep-live-{}-", std::process::id());
    let deadline = Instant::now() + Duration::from_secs(3);
    while !processes_mentioning(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        processes_mentioning(&marker),
        Vec::<String>::new(),
        "redis-server left behind"
    );
    // A clock fault on a real server is refused.
    let jump = lockstep::scenario::Scenario::from_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/live/redlock-clock-jump.toml"),
    )
    .unwrap();
    let err = lockstep::live::run_live(&jump, &options).unwrap_err().to_string();
    assert!(err.contains("--redis-server") && err.contains("clock"), "{err}");
}

#[test]
fn an_interrupted_live_run_kills_its_clients() {
    let dir = temp_dir("sigint");
    let file = tiny_scenario_lasting(&dir, "", 60_000);
    let pidfile = dir.join("pids");
    let client = sh_adapter(&dir, &pidfile, r#"{"id":{id},"status":"busy"}"#);
    // Spawned, not run to its end: the test interrupts it (SIGINT) while its adapter runs.
    let mut child = common::command(["live", file.to_str().unwrap(), "--client", &client])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids(&pidfile).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!pids(&pidfile).is_empty(), "the adapter never started");
    std::thread::sleep(Duration::from_millis(200));
    // SIGINT, as Ctrl-C would send it.
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    assert!(!status.success(), "an interrupted run does not succeed");
    assert_all_dead(&pidfile);
}

#[test]
#[cfg_attr(
    lockstep_no_faketime,
    ignore = "libfaketime is not installed (apt-get install faketime, then touch build.rs)"
)]
fn client_wall_clocks_are_set_and_jumped_through_libfaketime() {
    assert!(
        lockstep::live::fakeclock::find().is_some(),
        "libfaketime was found when the tests were built and is gone now: touch build.rs to rebuild"
    );
    let dir = temp_dir("faketime");
    // client-1's wall clock starts 1e6 s ahead and jumps another 1e6 s at 0.3 s.
    let file = tiny_scenario_lasting(
        &dir,
        "offset_ms = 1000000000\n[[fault]]\nat_ms = 300\nkind = \"clock-jump\"\nnode = \"client-1\"\ndelta_ms = \
         1000000000\n",
        1000,
    );
    let script = dir.join("clock.sh");
    std::fs::write(
        &script,
        "echo \"{\\\"hello\\\":\\\"$(date +%s)\\\"}\"\nwhile read -r line; do\n  id=$(echo \"$line\" | sed -n \
         's/.*\"id\":\\([0-9]*\\).*/\\1/p')\n  [ -z \"$id\" ] && exit 0\n  echo \"{\\\"id\\\":$id,\\\"status\\\":\\\"busy\\\",\\\"error\\\":\\\"$(date +%s)\\\"}\"\ndone\n",
    )
    .unwrap();
    let options = lockstep::live::LiveOptions {
        client: format!("sh {}", script.display()),
        ..lockstep::live::LiveOptions::default()
    };
    let run = lockstep::live::run_file(&file, &options).expect("the run works");
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let hello: i64 = run.adapters["client-1"].parse().unwrap();
    assert!((hello - now_s - 1_000_000).abs() < 100, "hello at {hello}, now {now_s}");
    let times: Vec<i64> = run
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            lockstep::sim::EventKind::Op { data, .. } => data["error"]
                .as_str()
                .and_then(|t| t.strip_prefix("busy: "))
                .and_then(|t| t.parse().ok()),
            _ => None,
        })
        .collect();
    assert!(
        times.first().is_some_and(|t| (t - now_s - 1_000_000).abs() < 100),
        "{times:?}"
    );
    assert!(
        times.last().is_some_and(|t| (t - now_s - 2_000_000).abs() < 100),
        "{times:?}"
    );
}

/// The first op completion of `client` whose error mentions `needle`, and the `at_us` of the
/// first event matching `pred`.
fn first_at(run: &lockstep::live::LiveRun, pred: impl Fn(&lockstep::sim::Event) -> bool) -> Option<u64> {
    run.history.events().iter().find(|e| pred(e)).map(|e| e.at_us)
}

fn is_fault(e: &lockstep::sim::Event, kind: &str, node: &str) -> bool {
    matches!(&e.kind, lockstep::sim::EventKind::Fault { fault } if fault.kind() == kind && e.node == node)
}

fn is_grant(e: &lockstep::sim::Event, client: &str) -> bool {
    e.node == client
        && matches!(&e.kind, lockstep::sim::EventKind::Op { op, phase, .. }
            if op == "acquire" && *phase == lockstep::sim::Phase::Ok)
}

#[test]
fn a_crashed_client_is_killed_restarted_and_its_request_in_flight_is_unknown() {
    let dir = temp_dir("crash");
    // Killed at 0.3 s while it hangs on its first request; started again at 0.5 s.
    let file = tiny_scenario(
        &dir,
        "[[fault]]\nat_ms = 300\nkind = \"crash\"\nnode = \"client-1\"\n\
         [[fault]]\nat_ms = 500\nkind = \"restart\"\nnode = \"client-1\"\n",
    );
    let pidfile = dir.join("pids");
    let marker = dir.join("started-once");
    // The first process hangs on every request; the restarted one answers busy.
    let script = dir.join("crashy.sh");
    std::fs::write(
        &script,
        format!(
            "sleep 300 &\necho $! >> '{pids}'\necho $$ >> '{pids}'\n\
             if [ ! -e '{marker}' ]; then touch '{marker}'; echo '{{\"hello\":\"first\"}}'; exec cat > /dev/null; fi\n\
             echo '{{\"hello\":\"second\"}}'\n\
             while read -r line; do\n  id=$(echo \"$line\" | sed -n 's/.*\"id\":\\([0-9]*\\).*/\\1/p')\n  \
             [ -z \"$id\" ] && exit 0\n  echo \"{{\\\"id\\\":$id,\\\"status\\\":\\\"busy\\\"}}\"\ndone\n",
            pids = pidfile.display(),
            marker = marker.display(),
        ),
    )
    .unwrap();
    let options = lockstep::live::LiveOptions {
        client: format!("sh {}", script.display()),
        ..lockstep::live::LiveOptions::default()
    };
    let run = lockstep::live::run_file(&file, &options).expect("the run works");
    assert_eq!(run.adapters["client-1"], "first");
    let crash = first_at(&run, |e| is_fault(e, "crash", "client-1")).expect("the crash is an event");
    let restart = first_at(&run, |e| is_fault(e, "restart", "client-1")).expect("the restart is an event");
    assert!((290_000..400_000).contains(&crash), "crash at {crash} us");
    assert!(restart > crash);
    // The hung acquire ended as an unknown outcome at the crash.
    let unknown = run.history.events().iter().find(|e| {
        matches!(&e.kind, lockstep::sim::EventKind::Op { op, phase, data, .. }
            if op == "acquire" && *phase == lockstep::sim::Phase::Info
                && data["error"].as_str().is_some_and(|t| t.contains("killed")))
    });
    let unknown = unknown.expect("the request in flight is unknown");
    assert!(unknown.at_us >= crash && unknown.at_us < restart, "{unknown:?}");
    // The restarted process said hello, and the workload went on with it.
    let hello = first_at(
        &run,
        |e| matches!(&e.kind, lockstep::sim::EventKind::Note { text } if text == "process restarted: second"),
    )
    .expect("the restart is noted");
    assert!(hello >= restart);
    let busy_after = run.history.events().iter().any(|e| {
        e.at_us > hello
            && matches!(&e.kind, lockstep::sim::EventKind::Op { op, data, .. }
                if op == "acquire" && data["error"].as_str() == Some("busy"))
    });
    assert!(busy_after, "no acquire after the restart");
    // Both generations (and what they started) are gone.
    assert_eq!(pids(&pidfile).len(), 4, "two processes, each with a sleep");
    assert_all_dead(&pidfile);
}

/// Runs scenarios/live/client-crash.toml with `client` and checks its story: the holder is
/// killed, its key expires after the TTL, client-2 gets the lock, nothing unsafe happens.
fn assert_client_crash_story(client: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/live/client-crash.toml");
    let options = lockstep::live::LiveOptions {
        client: client.to_string(),
        ..lockstep::live::LiveOptions::default()
    };
    let run = lockstep::live::run_file(&file, &options).expect("the run works");
    assert!(run.as_expected(), "{:?}", run.mismatches);
    assert_eq!(run.verdict("mutual-exclusion"), Some(lockstep::model::Verdict::Valid));
    let first = first_at(&run, |e| is_grant(e, "client-1")).expect("client-1 got the lock");
    let crash = first_at(&run, |e| is_fault(e, "crash", "client-1")).unwrap();
    let second = first_at(&run, |e| is_grant(e, "client-2")).expect("client-2 got the lock");
    // The TTL (1 s from the grant) is what the crash costs: client-2 waits for the expiry.
    let ttl_us = 1_000_000;
    assert!(crash > first);
    assert!(
        second >= first + ttl_us - 50_000 && second < first + ttl_us + 400_000,
        "client-2 got the lock {} ms after client-1",
        (second - first) / 1000
    );
    let ops = lockstep::history::OpHistory::new(&run.history);
    let live = lockstep::liveness::of(&ops);
    eprintln!(
        "{client}: client-2 got the lock {} ms after client-1; {} ms without a holder while a client waited",
        (second - first) / 1000,
        live.unavailable_ms
    );
    // client-2 waits from 0.1 s to the expiry at about 1 s: about one TTL without a holder.
    assert!(
        (700..=1_400).contains(&live.unavailable_ms),
        "unavailable for {} ms",
        live.unavailable_ms
    );
    // The restarted client-1 finished its workload with a new grant.
    assert_eq!(
        run.history.events().iter().filter(|e| is_grant(e, "client-1")).count(),
        2
    );
    assert!(run.clients_finished);
}

#[test]
fn a_holder_killed_mid_critical_section_costs_one_ttl_and_nothing_unsafe() {
    let Some(adapter) = rust_adapter() else { return };
    assert_client_crash_story(&adapter.display().to_string());
    // The simulation refuses a client crash, naming the file, line and field.
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/live/client-crash.toml");
    let err = lockstep::scenario::Scenario::from_file(&file).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("fault[0].node"), "{err}");
    assert!(err.line.is_some(), "{err}");
    assert!(err.to_string().contains("live runs only"), "{err}");
}

#[test]
#[cfg_attr(
    lockstep_no_redis_py,
    ignore = "redis-py is not installed (pip install redis; .ci/run installs it)"
)]
fn redis_py_survives_a_holder_crash_after_one_ttl() {
    require_redis_py();
    assert_client_crash_story(PYTHON);
}

#[test]
#[cfg_attr(
    lockstep_no_faketime,
    ignore = "libfaketime is not installed (apt-get install faketime, then touch build.rs)"
)]
fn client_clock_drift_runs_through_libfaketime() {
    assert!(
        lockstep::live::fakeclock::find().is_some(),
        "libfaketime is not installed{}",
        match in_ci() {
            true => "; .ci/run installs it",
            false => ": it was found when the tests were built and is gone now (touch build.rs)",
        }
    );
    let dir = temp_dir("drift");
    // client-1's wall clock runs 20 % fast, then from 1 s on 20 % slow.
    let file = tiny_scenario_lasting(
        &dir,
        "drift_ppm = 200000\n[[fault]]\nat_ms = 1000\nkind = \"drift\"\nnode = \"client-1\"\ndrift_ppm = -200000\n",
        2000,
    );
    let script = dir.join("clock.py");
    std::fs::write(
        &script,
        "import json, sys, time\nprint(json.dumps({'hello': 'clock'}), flush=True)\nfor line in sys.stdin:\n    \
         req = json.loads(line)\n    if 'id' not in req:\n        break\n    print(json.dumps({'id': req['id'], \
         'status': 'busy', 'error': '%.6f %.6f' % (time.time(), time.monotonic())}), flush=True)\n",
    )
    .unwrap();
    let options = lockstep::live::LiveOptions {
        client: format!("python3 {}", script.display()),
        ..lockstep::live::LiveOptions::default()
    };
    let run = lockstep::live::run_file(&file, &options).expect("the run works");
    // (true time s, wall s, monotonic s) as the adapter read them.
    let readings: Vec<(f64, f64, f64)> = run
        .history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            lockstep::sim::EventKind::Op { data, .. } => {
                let text = data["error"].as_str()?.strip_prefix("busy: ")?;
                let (wall, mono) = text.split_once(' ')?;
                Some((e.at_us as f64 / 1e6, wall.parse().ok()?, mono.parse().ok()?))
            }
            _ => None,
        })
        .collect();
    assert!(readings.len() > 20, "{readings:?}");
    // The wall clock's gain over the monotonic clock, from the first reading.
    let (_, w0, m0) = readings[0];
    let gain = |r: &(f64, f64, f64)| (r.1 - w0) - (r.2 - m0);
    let slope = |from: f64, to: f64| {
        let inside: Vec<&(f64, f64, f64)> = readings.iter().filter(|r| r.0 >= from && r.0 <= to).collect();
        let (a, b) = (inside[0], inside[inside.len() - 1]);
        (gain(b) - gain(a)) / (b.2 - a.2)
    };
    let fast = slope(0.1, 0.9);
    let slow = slope(1.1, 1.9);
    assert!((fast - 0.2).abs() < 0.03, "fast slope {fast}: {readings:?}");
    assert!((slow + 0.2).abs() < 0.03, "slow slope {slow}: {readings:?}");
    // No step where the rate changes: the gain peaks near 0.2 s at 1 s.
    let peak = readings.iter().map(gain).fold(f64::MIN, f64::max);
    assert!((peak - 0.2).abs() < 0.03, "peak gain {peak}");
}

#[test]
fn workload_settings_the_live_driver_does_not_run_are_refused_by_name() {
    // Without the refusal, `lockstep live` would judge the file's [expect] against a workload it
    // did not run (one read, fixed work, one write, one task).
    for (file, field) in [
        ("workload-tasks-overlap.toml", "workload.tasks"),
        (
            "workload-refuse-write-after-validity.toml",
            "workload.refuse_write_after_validity",
        ),
        ("workload-until-validity-drift.toml", "workload.work"),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(file);
        let (code, out, err) = lockstep(&["live", path.to_str().unwrap(), "--client", "true"]);
        assert_eq!(code, 2, "{file}: {out}{err}");
        assert!(err.contains(field), "{file}: {err}");
    }
}

/// The notes of `run`'s history on `node`.
fn notes_on(run: &lockstep::live::LiveRun, node: &str) -> Vec<String> {
    run.history
        .events()
        .iter()
        .filter(|e| e.node == node)
        .filter_map(|e| match &e.kind {
            lockstep::sim::EventKind::Note { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Failover with asynchronous replication, live: the master acknowledges client-1's SET and
/// crashes before replicating it, the Sentinel promotes the replica, every client's address for
/// the master follows it, and client-2 acquires too. The Rust adapter in most of five runs (the
/// agreement with the simulation is checked with every live scenario above), redis-py in most of
/// three.
#[test]
fn a_failover_to_a_lagging_replica_loses_the_lock_live() {
    let Some(adapter) = rust_adapter() else { return };
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/live/failover.toml");
    let scenario = lockstep::scenario::Scenario::from_file_live(&file).unwrap();
    let options = lockstep::live::LiveOptions {
        client: adapter.display().to_string(),
        ..lockstep::live::LiveOptions::default()
    };
    let runs = 5;
    let mut lost = 0;
    for _ in 0..runs {
        let run = lockstep::live::run_live(&scenario, &options).expect("the live run works");
        // The promotion is in the history in the simulation's words, on the promoted replica.
        let notes = notes_on(&run, "redis-1-replica-1");
        assert!(
            notes
                .iter()
                .any(|n| n
                    .starts_with("promoted to master of `redis-1` by the sentinel: `redis-1` unreachable for 400 ms")),
            "{notes:?}"
        );
        if run.verdict("mutual-exclusion") == Some(lockstep::model::Verdict::Invalid) && run.as_expected() {
            lost += 1;
        }
    }
    assert!(lost >= runs - 1, "the lock was lost in {lost} of {runs} runs");
    // The same story through redis-py, where it is installed (build.rs; always under CI=true).
    if cfg!(not(lockstep_no_redis_py)) {
        require_redis_py();
        let s = live_report("py-failover", "scenarios/live/failover.toml", PYTHON, 3);
        let text = serde_json::to_string_pretty(&s).unwrap();
        assert!(count(&s, "mutual-exclusion", "invalid") >= 2, "{text}");
        assert!(count(&s, "lost-update", "invalid") >= 2, "{text}");
    }
}

/// A `failover` fault promotes at once, with the master still running: its open connections are
/// closed and the clients reach the promoted replica, which never saw the key. What cannot run
/// live with replicas is refused at its line and field.
#[test]
fn a_forced_failover_repoints_the_clients_and_unsupported_replica_settings_are_refused() {
    let Some(adapter) = rust_adapter() else { return };
    let dir = temp_dir("forced-failover");
    let file = dir.join("forced.toml");
    let body = |faults: &str| {
        format!(
            "name = \"live-forced-failover\"\ndescription = \"forced\"\nduration_ms = 6000\n[topology]\n\
             resource = \"unfenced\"\n[[topology.master]]\nname = \"redis-1\"\nreplicas = 1\n\
             replication_lag_ms = 1000\n[lock]\nalgorithm = \"token-release\"\nttl_ms = 3000\n\
             request_timeout_ms = 500\n[workload]\niterations = 1\nacquire_retry_ms = 50\n\
             [[client]]\nname = \"client-1\"\nstart_ms = 0\nwork_ms = 800\n[[client]]\nname = \"client-2\"\n\
             start_ms = 400\nwork_ms = 100\n{faults}"
        )
    };
    std::fs::write(
        &file,
        body("[[fault]]\nat_ms = 200\nkind = \"failover\"\nnode = \"redis-1\"\n"),
    )
    .unwrap();
    let scenario = lockstep::scenario::Scenario::from_file_live(&file).unwrap();
    let simulated = lockstep::run::run_scenario(&scenario, None).unwrap();
    let options = lockstep::live::LiveOptions {
        client: adapter.display().to_string(),
        ..lockstep::live::LiveOptions::default()
    };
    let mut last = String::new();
    let agreed = (0..2).any(|_| {
        let live = lockstep::live::run_live(&scenario, &options).expect("the live run works");
        let notes = notes_on(&live, "redis-1-replica-1");
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("promoted to master of `redis-1` forced by a failover fault")),
            "{notes:?}"
        );
        last = format!("{:?} vs simulated {:?}", live.results, simulated.results);
        simulated
            .results
            .iter()
            .filter(|r| r.checker != "lease-validity")
            .all(|r| live.verdict(&r.checker) == Some(r.verdict))
    });
    assert!(agreed, "{last}");
    assert_eq!(
        simulated
            .results
            .iter()
            .find(|r| r.checker == "mutual-exclusion")
            .unwrap()
            .verdict,
        lockstep::model::Verdict::Invalid
    );

    // A partition of a client's link to a replicated master: the live link follows the group.
    std::fs::write(
        &file,
        body("[[fault]]\nat_ms = 200\nkind = \"partition\"\na = \"client-1\"\nb = \"redis-1\"\n"),
    )
    .unwrap();
    let (code, out, err) = lockstep(&["live", file.to_str().unwrap(), "--client", "true"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("forced.toml:") && err.contains("field `fault[0]`") && err.contains("replication group"),
        "{err}"
    );
    // Replicas behind real redis-servers.
    std::fs::write(&file, body("")).unwrap();
    let (code, out, err) = lockstep(&[
        "live",
        file.to_str().unwrap(),
        "--client",
        "true",
        "--redis-server",
        "/nonexistent/redis-server",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("forced.toml:")
            && err.contains("field `topology.master[0].replicas`")
            && err.contains("--redis-server"),
        "{err}"
    );
}

#[test]
fn a_live_run_in_which_nobody_gets_the_lock_is_not_a_pass() {
    let dir = temp_dir("vacuous");
    let file = tiny_scenario(&dir, "");
    let pidfile = dir.join("pids");
    let client = sh_adapter(&dir, &pidfile, r#"{"id":{id},"status":"busy"}"#);
    let (code, out, err) = lockstep(&["live", file.to_str().unwrap(), "--client", &client]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("progress") && out.contains("vacuous"), "{out}");
    assert!(out.contains("UNEXPECTED: progress is invalid"), "{out}");
    assert_all_dead(&pidfile);
}

#[test]
fn an_adapter_line_too_long_or_not_utf8_is_named_not_buffered() {
    let dir = temp_dir("long-line");
    let file = tiny_scenario(&dir, "");
    for (command, words) in [
        // 2 MiB without a newline, then one: past the 1 MiB cap.
        (
            "head -c 2097152 /dev/zero | tr '\\0' x; echo; sleep 30",
            "a line longer than 1048576 bytes",
        ),
        ("printf '\\377\\376\\n'; sleep 30", "a line that is not valid UTF-8"),
    ] {
        let started = Instant::now();
        let (code, out, err) = lockstep(&["live", file.to_str().unwrap(), "--client", command]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains("client-1") && err.contains(words), "{err}");
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}

#[test]
fn a_base_port_whose_ports_run_past_65535_is_refused_with_the_count() {
    let dir = temp_dir("base-port");
    let file = tiny_scenario(&dir, "");
    let (code, out, err) = lockstep(&[
        "live",
        file.to_str().unwrap(),
        "--client",
        "true",
        "--base-port",
        "65535",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    // One client, one master and the resource: 2 ports.
    assert!(
        err.contains("--base-port 65535: this scenario needs 2 consecutive ports") && err.contains("at most 65534"),
        "{err}"
    );
}

#[test]
fn live_flags_that_would_misbehave_are_refused() {
    let dir = temp_dir("live-flags");
    let file = tiny_scenario(&dir, "");
    let f = file.to_str().unwrap();
    let (code, _, err) = lockstep(&["live", f, "--client", "true", "--step-timeout-ms", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--step-timeout-ms"), "{err}");
    // Port 0 is "any free port", and the ports after it are privileged: leave the flag out instead.
    let (code, _, err) = lockstep(&["live", f, "--client", "true", "--base-port", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--base-port"), "{err}");
    let (code, _, err) = lockstep(&[
        "live",
        f,
        "--client",
        "true",
        "--client-for",
        "client-1=a",
        "--client-for",
        "client-1=b",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--client-for names \"client-1\" twice"), "{err}");
    // An output that is the scenario file itself.
    let (code, _, err) = lockstep(&["live", f, "--client", "true", "--history", f]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("would overwrite that input"), "{err}");
    assert!(std::fs::read_to_string(&file).unwrap().contains("[lock]"));
}
