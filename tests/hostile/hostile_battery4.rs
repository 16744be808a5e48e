//! The fourth hostile battery (issue 48): outputs never written through a link, no panic on a
//! large time limit, no script stalling a run or a server on work no instruction counts, no
//! leftover after a kill, live and serve reports built whole before they are swapped in, no
//! green merge over a set with a run missing, `--jsonl` renamed into place, and a report
//! renamed to a leftover's name kept. Every run of the binary is under the 2 GiB memory limit
//! of [`common::lockstep_limited`] (or, where the test must own the process, a limit of its own).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, LimitedRun, TempPath};

/// A fresh, empty temporary directory for one test.
fn temp(name: &str) -> TempPath {
    TempPath::dir("battery4", name)
}

/// Runs the binary under the memory limit, in the crate's directory, for at most `secs`.
fn run(args: &[&str], secs: u64) -> LimitedRun {
    let run = common::lockstep_limited(Path::new(env!("CARGO_MANIFEST_DIR")), args, Duration::from_secs(secs));
    eprintln!(
        "{args:?}: exit {}, peak {} MiB, {:.1} s",
        run.code,
        run.peak_rss_bytes >> 20,
        run.elapsed.as_secs_f64()
    );
    run
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

/// A small scenario file `dir/NAME.toml` of the token-release lock (a run takes milliseconds).
fn scenario(dir: &Path, name: &str) -> PathBuf {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!("name = \"{name}\"\ndescription = \"battery four\"\nduration_ms = 1000\n\n[lock]\nalgorithm = \"token-release\"\n"),
    )
    .unwrap();
    file
}

/// The hidden staging and old directories of `out` (`.OUT.new.*`, `.OUT.old.*`).
fn hidden_of(out: &Path) -> Vec<String> {
    let base = out.file_name().unwrap().to_string_lossy().into_owned();
    let mut names: Vec<String> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!(".{base}.new.")) || n.starts_with(&format!(".{base}.old.")))
        .collect();
    names.sort();
    names
}

// 1. `explore --out` through a symbolic link.

#[test]
fn explore_out_that_is_a_symbolic_link_is_refused_and_its_target_kept() {
    let dir = temp("out-link");
    let target = dir.join("v");
    std::fs::create_dir(&target).unwrap();
    let precious = target.join("explore-naive-seed-2-mutual-exclusion.toml");
    std::fs::write(&precious, "precious\n").unwrap();
    let link = dir.join("o");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let r = run(
        &[
            "explore",
            "-q",
            "--algorithm",
            "naive",
            "--seeds",
            "3",
            "--shrink",
            "1",
            "--jobs",
            "1",
            "--out",
            &s(&link),
        ],
        120,
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(&format!("--out {}", link.display())) && r.stderr.contains("symbolic link"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        1,
        "nothing written where the link points"
    );
}

// 2. A large time limit.

#[test]
fn time_limits_past_what_the_clock_holds_are_no_limit_not_a_panic() {
    let dir = temp("time-limits");
    let r = run(
        &[
            "explore",
            "-q",
            "--algorithm",
            "naive",
            "--seeds",
            "2",
            "--jobs",
            "1",
            "--shrink",
            "0",
            "--time-limit",
            "9223372036854775807",
        ],
        120,
    );
    assert!([0, 1].contains(&r.code), "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("overflow"), "{}", r.stderr);
    // One parent, one mutant, one seed each: seconds.
    let catalogue = one_parent_catalogue(
        &dir,
        "set-nx",
        r#"command = ["SET", "{key}", "{value}", "NX", "PX", "{ttl_ms}"]"#,
    );
    for limit in ["--time-limit", "--seed-time-limit"] {
        let r = run(
            &[
                "mutants",
                "--catalogue",
                &s(&catalogue),
                "--seeds",
                "1",
                "--jobs",
                "1",
                limit,
                "18446744073709551615",
            ],
            120,
        );
        assert!([0, 1].contains(&r.code), "{limit}: {}{}", r.stdout, r.stderr);
        assert!(!r.stderr.contains("overflow"), "{limit}: {}", r.stderr);
    }
}

/// A catalogue of one parent (the token-release lock as a script lock, whose acquire is
/// `acquire`, a `[lock.acquire]` body) and one mutant of it (a release without the owner check).
fn one_parent_catalogue(dir: &Path, name: &str, acquire: &str) -> PathBuf {
    let parent = dir.join(format!("{name}-parent.toml"));
    std::fs::write(
        &parent,
        format!(
            r#"name = "parent-{name}"
description = "battery four"
seed = 0
duration_ms = 2000
tick_ms = 5

[topology]
masters = 1
clients = 2
resource = "unfenced"

[lock]
algorithm = "script"
ttl_ms = 2000

[lock.acquire]
{acquire}
success = "ok"

[lock.release]
lua = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0'
args = ["{{value}}"]
success = "one"

[workload]
until_ms = 1500
work_ms = 50
acquire_retry_ms = 50
"#
        ),
    )
    .unwrap();
    let catalogue = dir.join(format!("{name}-catalogue.toml"));
    std::fs::write(
        &catalogue,
        format!(
            r#"[[parent]]
name = "{name}"
file = "{}"
kinds = ["pause"]

[[mutant]]
name = "{name}-release-no-owner-check"
parent = "{name}"
breaks = "a release without the owner check"
source = "battery four"
lock = {{ release = {{ command = ["DEL", "{{key}}"], success = "positive" }} }}
"#,
            parent.file_name().unwrap().to_string_lossy()
        ),
    )
    .unwrap();
    catalogue
}

// 3. Lua work nothing counted.

/// Scripts whose work no VM instruction counts (issue 48), each an acquire that never returns a
/// grant: the first ones charged by the work they do, the last one (`..` on 1 MB strings: the
/// VM's own, one instruction whatever the length) stopped only by a wall-clock bound.
const COUNTED: [(&str, &str); 8] = [
    (
        "loadstring",
        r#"local src = "return 1 " .. string.rep(" ", 1e6) while true do loadstring(src) end"#,
    ),
    (
        "collect",
        r#"local t = {} for i = 1, 2e5 do t[i] = {i} end while true do collectgarbage("collect") end"#,
    ),
    (
        "byte-char",
        r#"local s = string.rep("x", 7000) while true do local c = string.char(string.byte(s, 1, -1)) end"#,
    ),
    (
        "find",
        r#"local s = string.rep("a", 3e7) local n = string.rep("a", 1000) .. "b" while true do s:find(n, 1, true) end"#,
    ),
    (
        "concat-15mb",
        r#"local a = string.rep("x", 15e6) while true do local x = a .. "y" end"#,
    ),
    (
        "compare-15mb",
        r#"local a = string.rep("x", 15e6) local b = a .. "y" local c = a .. "z" while true do local x = b < c end"#,
    ),
    (
        "keys",
        r#"for i = 1, 3e5 do redis.call("set", "k" .. i, i) end while true do redis.call("keys", "*") end"#,
    ),
    (
        "lrange",
        r#"for i = 1, 2e5 do redis.call("rpush", "l", i) end while true do redis.call("lrange", "l", 0, -1) end"#,
    ),
];

/// `..` on strings of 1 MB: below the heap past which each instruction is charged by the heap,
/// so only a wall-clock bound (a time limit, a server's guard) stops it.
const UNCOUNTED: &str = r#"local a = string.rep("x", 1e6) while true do local x = a .. "y" end"#;

/// A scenario of one client whose acquire is the Lua `script` (one attempt).
fn script_scenario(dir: &Path, name: &str, script: &str) -> PathBuf {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            r#"name = "{name}"
description = "battery four: an acquire script doing work no instruction counts"
duration_ms = 2000

[topology]
masters = 1
clients = 1

[lock]
algorithm = "script"
ttl_ms = 1000
request_timeout_ms = 60000

[lock.acquire]
lua = '{script}'

[workload]
iterations = 1
acquire_retry_ms = 60000
"#
        ),
    )
    .unwrap();
    file
}

#[test]
fn run_stops_acquire_scripts_whose_work_no_instruction_counted() {
    let dir = temp("lua-run");
    let files: Vec<String> = COUNTED
        .iter()
        .map(|(name, lua)| s(&script_scenario(&dir, name, lua)))
        .collect();
    let mut args = vec!["run", "-q"];
    args.extend(files.iter().map(String::as_str));
    let r = run(&args, 300);
    // No client got the lock: vacuous runs, a failure; never a hang.
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let per_script = r.elapsed.as_secs_f64() / COUNTED.len() as f64;
    eprintln!(
        "{} scripts in {:.1} s: {per_script:.2} s a script",
        COUNTED.len(),
        r.elapsed.as_secs_f64()
    );
    assert!(per_script < 10.0, "{per_script} s a script");
}

#[test]
fn explore_time_limit_stops_a_script_inside_its_run() {
    let dir = temp("lua-explore");
    let file = script_scenario(&dir, "uncounted", UNCOUNTED);
    let r = run(
        &[
            "explore",
            &s(&file),
            "-q",
            "--seeds",
            "5",
            "--jobs",
            "1",
            "--shrink",
            "0",
            "--time-limit",
            "2",
        ],
        120,
    );
    assert!([0, 1].contains(&r.code), "{}{}", r.stdout, r.stderr);
    assert!(r.elapsed < Duration::from_secs(30), "took {:?}", r.elapsed);
}

#[test]
fn mutants_seed_time_limit_stops_a_script_inside_its_run() {
    let dir = temp("lua-mutants");
    let acquire = format!("lua = '{UNCOUNTED}'");
    let catalogue = one_parent_catalogue(&dir, "uncounted", &acquire);
    let r = run(
        &[
            "mutants",
            "--catalogue",
            &s(&catalogue),
            "--seeds",
            "1",
            "--jobs",
            "1",
            "--seed-time-limit",
            "2",
        ],
        120,
    );
    assert_eq!(r.code, 1, "timed out is not a pass: {}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("timed out") || r.stderr.contains("timed out"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert!(r.elapsed < Duration::from_secs(30), "took {:?}", r.elapsed);
}

/// `lockstep serve` with `args`, its first Redis server's address once it serves.
fn serve(args: &[&str]) -> (Child, String) {
    let mut child = common::command(["serve"].iter().chain(args))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut addr = None;
    loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).expect("serve's stdout") > 0,
            "serve stopped before serving"
        );
        let words: Vec<&str> = line.split_whitespace().collect();
        if let [_, a, ..] = words[..] {
            if a.starts_with("127.0.0.1:") && addr.is_none() {
                addr = Some(a.to_string());
            }
        }
        if line.starts_with("serving ") {
            break;
        }
    }
    // The rest of stdout is drained so that serve never blocks on it.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    (child, addr.expect("a server's address"))
}

/// Sends one command as RESP on a new connection, without waiting for the reply.
fn send(addr: &str, args: &[&str]) -> std::net::TcpStream {
    let mut conn = std::net::TcpStream::connect(addr).expect("connects");
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    conn.write_all(req.as_bytes()).expect("writes");
    conn
}

/// The first line of the reply on `conn` and how long it took from `since`; `None` past `wait`.
fn reply_line(conn: &mut std::net::TcpStream, since: Instant, wait: Duration) -> Option<(String, Duration)> {
    conn.set_read_timeout(Some(wait)).unwrap();
    let mut bytes = Vec::new();
    let mut byte = [0u8; 1];
    while !bytes.ends_with(b"\r\n") {
        match conn.read(&mut byte) {
            Ok(1) => bytes.push(byte[0]),
            _ => return None,
        }
    }
    Some((String::from_utf8_lossy(&bytes).trim_end().to_string(), since.elapsed()))
}

fn stop(mut child: Child) -> i32 {
    // SAFETY: signalling our own child, not reaped yet.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    child.wait().expect("serve exits").code().unwrap_or(-1)
}

#[test]
fn serve_answers_other_clients_while_a_script_does_work_no_instruction_counts() {
    let (child, addr) = serve(&["--script-guard-ms", "1000"]);
    for (name, script) in [COUNTED[6], ("concat-1mb", UNCOUNTED)] {
        let started = Instant::now();
        let mut busy = send(&addr, &["EVAL", script, "0"]);
        std::thread::sleep(Duration::from_millis(100));
        let mut other = send(&addr, &["PING"]);
        let pong = reply_line(&mut other, started, Duration::from_secs(20));
        let killed = reply_line(&mut busy, started, Duration::from_secs(20));
        eprintln!("{name}: PING {pong:?}, EVAL {killed:?}");
        let (pong, _) = pong.expect("another client's PING answered");
        assert_eq!(pong, "+PONG");
        let (killed, took) = killed.expect("the script answered");
        assert!(killed.starts_with("-ERR Script killed"), "{name}: {killed}");
        assert!(took < Duration::from_secs(10), "{name}: {took:?}");
    }
    assert_eq!(stop(child), 0);
}

// 4. A killed report leaves no leftover.

#[test]
fn a_report_killed_while_writing_a_file_leaves_nothing_the_next_run_cannot_remove() {
    use std::os::unix::process::CommandExt;
    let dir = temp("killed-writing");
    let inputs = dir.join("in");
    std::fs::create_dir(&inputs).unwrap();
    for name in ["a", "b"] {
        scenario(&inputs, name);
    }
    let out = dir.join("out");
    // A file size limit kills the run (SIGXFSZ) in the middle of writing a report file: after
    // the file was created, before it was whole — where a journal written after the file left
    // it unlisted.
    let mut command = common::command(["ci", &s(&inputs), "--report", &s(&out), "-q"]);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: between fork and exec the closure only calls `setrlimit`, which is
    // async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 4096,
                rlim_max: 4096,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let status = command.status().expect("runs");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGXFSZ), "{status:?}");
    let left = hidden_of(&out);
    assert_eq!(left.len(), 1, "the killed run's staging directory: {left:?}");
    let r = run(&["ci", &s(&inputs), "--report", &s(&out), "-q"], 120);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("still there"), "{}", r.stderr);
    assert_eq!(hidden_of(&out), Vec::<String>::new(), "the leftover was removed");
    assert!(out.join("report.json").is_file());
}

// 5. Live and serve reports built whole in staging.

#[test]
fn a_serve_report_is_built_whole_before_it_is_swapped_in() {
    let dir = temp("serve-staged");
    let out = dir.join("out");
    let (child, addr) = serve(&["--report", &s(&out)]);
    let mut conn = send(&addr, &["SET", "lock", "v1", "NX", "PX", "30000"]);
    assert_eq!(
        reply_line(&mut conn, Instant::now(), Duration::from_secs(10))
            .unwrap()
            .0,
        "+OK"
    );
    assert_eq!(stop(child), 0);
    // Everything in OUT was written in the staging directory, recorded in its journal as it was:
    // `serve.json` and the notes at the top of `summary.md` included (they were written into
    // OUT after the swap, where another run's report could be by then).
    let journal = std::fs::read_to_string(out.join(".lockstep-owner")).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    for file in manifest["files"].as_array().unwrap() {
        let file = file.as_str().unwrap();
        if file != ".lockstep-owner" {
            assert!(
                journal.contains(&format!("f {file}\n")),
                "{file} not built in staging:\n{journal}"
            );
        }
    }
    assert!(
        journal.contains("f serve.json\n") && journal.contains("f live.json\n"),
        "{journal}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.starts_with("> **lockstep serve**"), "{summary}");
    assert!(summary.contains("> **Live run**"), "{summary}");
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("<strong>Live run</strong>"));
}

#[test]
fn serve_reports_written_at_once_to_one_directory_are_each_whole() {
    let dir = temp("serve-concurrent");
    let out = dir.join("out");
    let children: Vec<(Child, String)> = (0..4)
        .map(|_| serve(&["--duration-ms", "1500", "--report", &s(&out)]))
        .collect();
    for (child, _) in children {
        let output = child.wait_with_output().expect("serve exits");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // The report in place is one run's: its summary's notes say how long that run served.
    let notes: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("serve.json")).unwrap()).unwrap();
    let served = format!("after {:.1} s", notes["served_ms"].as_u64().unwrap() as f64 / 1000.0);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains(&served), "{served}: {summary}");
    assert_eq!(summary.matches("> **lockstep serve**").count(), 1, "{summary}");
    assert_eq!(summary.matches("> **Live run**").count(), 1, "{summary}");
}

#[test]
fn a_serve_report_of_a_session_without_a_grant_is_not_a_pass() {
    let dir = temp("serve-vacuous");
    let out = dir.join("out");
    let (child, _) = serve(&["--duration-ms", "500", "--report", &s(&out)]);
    let output = child.wait_with_output().expect("serve exits");
    assert_eq!(output.status.code(), Some(0));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["ok"], false, "{report}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(!summary.contains("PASS"), "{summary}");
    assert!(summary.contains("vacuous"), "{summary}");
}

// 6. A merged gate over a set with a run missing.

#[test]
fn merge_refuses_shards_that_do_not_cover_the_set_they_were_cut_from() {
    let dir = temp("merge-set");
    let inputs = dir.join("in");
    std::fs::create_dir(&inputs).unwrap();
    for name in ["a", "b", "c"] {
        scenario(&inputs, name);
    }
    let (one, two) = (dir.join("one"), dir.join("two"));
    for (shard, out) in [("1/2", &one), ("2/2", &two)] {
        let r = run(&["ci", &s(&inputs), "--shard", shard, "--report", &s(out), "-q"], 120);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    }
    let (a, b) = (s(&one.join("report.json")), s(&two.join("report.json")));
    let r = run(&["merge", &a, &b], 60);
    assert_eq!(r.code, 0, "the whole set: {}{}", r.stdout, r.stderr);
    let original = std::fs::read_to_string(&a).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&original).unwrap();
    // A row deleted (and the totals made to agree, as a careful hand would).
    json["scenarios"].as_array_mut().unwrap().remove(0);
    json["totals"]["scenarios"] = serde_json::json!(json["totals"]["scenarios"].as_u64().unwrap() - 1);
    let mut rows = serde_json::from_str::<serde_json::Value>(&original).unwrap();
    let removed = rows["scenarios"].as_array_mut().unwrap().remove(0);
    for c in removed["checks"].as_array().unwrap() {
        let key = match c["status"].as_str().unwrap() {
            "pass" => "passed",
            "fail" | "error" => "failed",
            _ => "unchecked",
        };
        json["totals"]["checks"] = serde_json::json!(json["totals"]["checks"].as_u64().unwrap() - 1);
        json["totals"][key] = serde_json::json!(json["totals"][key].as_u64().unwrap() - 1);
    }
    std::fs::write(&a, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    let r = run(&["merge", &a, &b], 60);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(&a) && r.stderr.contains("share"), "{}", r.stderr);
    // The row kept, the totals changed.
    let mut json: serde_json::Value = serde_json::from_str(&original).unwrap();
    json["totals"]["passed"] = serde_json::json!(json["totals"]["passed"].as_u64().unwrap() + 1);
    std::fs::write(&a, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    let r = run(&["merge", &a, &b], 60);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(&a) && r.stderr.contains("totals"), "{}", r.stderr);
}

// 7. `--jsonl` renamed into place; a report renamed to a leftover's name.

#[test]
fn explore_jsonl_is_a_new_file_renamed_into_place_not_rewritten_through_a_hard_link() {
    let dir = temp("jsonl-link");
    let file = dir.join("seeds.jsonl");
    std::fs::write(&file, "keep\n").unwrap();
    let other = dir.join("other-name.jsonl");
    std::fs::hard_link(&file, &other).unwrap();
    let r = run(
        &[
            "explore",
            "-q",
            "--algorithm",
            "naive",
            "--seeds",
            "2",
            "--jobs",
            "1",
            "--shrink",
            "0",
            "--jsonl",
            &s(&file),
        ],
        120,
    );
    assert!([0, 1].contains(&r.code), "{}{}", r.stdout, r.stderr);
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        "keep\n",
        "the other name's file is untouched"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 2);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
}

#[test]
fn a_report_renamed_to_a_leftover_name_is_not_removed_by_the_next_run() {
    let dir = temp("renamed-report");
    let inputs = dir.join("in");
    std::fs::create_dir(&inputs).unwrap();
    scenario(&inputs, "a");
    let out = dir.join("out");
    let r = run(&["ci", &s(&inputs), "--report", &s(&out), "-q"], 120);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The user keeps the report under the documented leftover pattern.
    let kept = dir.join(".out.old.keep01");
    std::fs::rename(&out, &kept).unwrap();
    let files = |d: &Path| {
        let mut n: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    let before = files(&kept);
    for _ in 0..2 {
        let r = run(&["ci", &s(&inputs), "--report", &s(&out), "-q"], 120);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    }
    assert_eq!(files(&kept), before, "the user's report is whole");
    assert!(kept.join("report.json").is_file());
}
