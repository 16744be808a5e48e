//! Hostile review, round two: inputs of at most 1 MiB that used to abort the process by running
//! it out of memory (or block it forever), each now bad input naming its field, or a run that
//! stays within its limits. Every run here is under a 2 GiB address-space limit
//! ([`common::lockstep_limited`]) and must exit with exactly 0, 1 or 2.

use std::path::Path;
use std::time::Duration;

use crate::common;
use common::{lockstep_limited, LimitedRun, TempPath};

pub(crate) const MIB: u64 = 1 << 20;

/// A fresh, empty temporary directory for one test.
fn temp(name: &str) -> TempPath {
    TempPath::dir("hostile-limits", name)
}

/// Runs the binary under the memory limit, in the crate's directory, for at most `secs`.
pub(crate) fn run_limited(args: &[&str], secs: u64) -> LimitedRun {
    let run = lockstep_limited(Path::new(env!("CARGO_MANIFEST_DIR")), args, Duration::from_secs(secs));
    eprintln!(
        "{args:?}: exit {}, peak {} MiB, {:.1} s",
        run.code,
        run.peak_rss_bytes / MIB,
        run.elapsed.as_secs_f64()
    );
    run
}

/// Writes `text` to `dir/name` and returns the path as a string.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    assert!(
        text.len() as u64 <= MIB,
        "{name}: inputs stay within a scenario file's 1 MiB"
    );
    path.display().to_string()
}

/// `lockstep run FILE` of a file that must be refused: exit 2, quickly, the message naming
/// `position` (`file:line:col: field `f``) and containing `words`.
fn refused(file: &str, position: &str, words: &[&str]) {
    let run = run_limited(&["run", file], 60);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains(position), "`{position}` missing: {}", run.stderr);
    for w in words {
        assert!(run.stderr.contains(w), "`{w}` missing: {}", run.stderr);
    }
    assert!(run.peak_rss_bytes < 512 * MIB, "peak {} MiB", run.peak_rss_bytes / MIB);
}

const HEAD: &str = r#"name = "hostile"
description = "hostile limits"
duration_ms = 1000

[lock]
algorithm = "token-release"
"#;

#[test]
fn client_tables_past_the_node_limit_are_refused_naming_the_first_one_over() {
    let dir = temp("clients");
    // 40,000 tables in 1 MiB: the limit of 1,000 clients used to apply to `topology.clients` only.
    let tables: String = (0..40_000).map(|i| format!("[[client]]\nname=\"c{i}\"\n")).collect();
    let file = write(&dir, "clients.toml", &format!("{HEAD}{tables}"));
    // The 1001st table: HEAD has 6 lines, each table 2.
    refused(
        &file,
        &format!("{file}:2007:1: field `client[1000]`"),
        &["40000 [[client]] tables: at most 1000 clients"],
    );
}

#[test]
fn master_tables_and_replicas_past_the_server_limit_are_refused() {
    let dir = temp("masters");
    let tables: String = (0..30_000)
        .map(|i| format!("[[topology.master]]\nname=\"m{i}\"\n"))
        .collect();
    let file = write(&dir, "masters.toml", &format!("{HEAD}{tables}"));
    refused(
        &file,
        &format!("{file}:2007:1: field `topology.master[1000]`"),
        &["30000 [[topology.master]] tables: at most 1000 Redis servers"],
    );

    // Replicas are servers too: 100 masters of 16 replicas are 1,700.
    let generated = write(
        &dir,
        "replicas.toml",
        &format!("{HEAD}\n[topology]\nmasters = 100\nreplicas = 16\n"),
    );
    refused(
        &generated,
        &format!("{generated}:10:1: field `topology.replicas`"),
        &["1003 Redis servers (masters and their replicas): at most 1000"],
    );
    let tables: String = (0..100)
        .map(|i| format!("[[topology.master]]\nname=\"m{i}\"\nreplicas = 16\n"))
        .collect();
    let listed = write(&dir, "listed.toml", &format!("{HEAD}{tables}"));
    // The 59th master (index 58) makes 59 × 17 = 1,003 servers; its `replicas` is on line 7 + 3 × 58 + 2.
    refused(
        &listed,
        &format!("{listed}:183:1: field `topology.master[58].replicas`"),
        &["master `m58` makes 1003 Redis servers"],
    );
}

#[test]
fn clients_times_masters_past_the_link_limit_are_refused() {
    let dir = temp("links");
    // A thousand clients of a thousand masters: a million connections, tens of gigabytes.
    let file = write(
        &dir,
        "links.toml",
        &format!("{HEAD}\n[topology]\nmasters = 1000\nclients = 1000\n").replace("token-release", "redlock"),
    );
    refused(
        &file,
        &format!("{file}:10:1: field `topology.clients`"),
        &["more than 10000 client task × master pairs"],
    );
    // Tasks count: 700 clients of 16 tasks, one master.
    let clients: String = (0..700).map(|i| format!("[[client]]\nname=\"c{i}\"\n")).collect();
    let tasks = write(
        &dir,
        "tasks.toml",
        &format!("{HEAD}\n[workload]\ntasks = 16\n\n{clients}"),
    );
    // The 626th client (index 625) takes the pairs past 10,000: 626 × 16 = 10,016.
    refused(
        &tasks,
        &format!("{tasks}:{}:1: field `client[625]`", 11 + 2 * 625),
        &["more than 10000"],
    );
}

#[test]
fn keys_and_values_past_their_limits_are_refused() {
    let dir = temp("keys");
    let key = "k".repeat(500_000);
    let file = write(&dir, "key.toml", &format!("{HEAD}key = \"{key}\"\n"));
    refused(
        &file,
        &format!("{file}:7:1: field `lock.key`"),
        &["is 500000 bytes long: a key has at most 4096"],
    );
    let file = write(
        &dir,
        "resource-key.toml",
        &format!("{HEAD}\n[workload]\nkey = \"{}\"\n", "r".repeat(5_000)),
    );
    refused(&file, &format!("{file}:9:1: field `workload.key`"), &["at most 4096"]);
    let file = write(
        &dir,
        "node.toml",
        &format!("{HEAD}\n[[client]]\nname = \"{}\"\n", "n".repeat(300)),
    );
    refused(&file, &format!("{file}:9:1: field `client[0].name`"), &["at most 255"]);

    let script = |body: &str| {
        format!(
            "name = \"hostile\"\ndescription = \"hostile limits\"\nduration_ms = 1000\n\n[lock]\nalgorithm = \"script\"\nkey = \"{}\"\n{body}",
            "k".repeat(3_000)
        )
    };
    // `{key}` twice: 6,000 bytes, a key of at most 4 KiB.
    let file = write(
        &dir,
        "wait.toml",
        &script("wait = \"blpop\"\nwait_key = \"{key}{key}\"\n"),
    );
    refused(
        &file,
        &format!("{file}:9:1: field `lock.wait_key`"),
        &["expands to up to 6000 bytes"],
    );
    // 22 `{key}`s of 3,000 bytes: 66,000 bytes sent on every attempt; the 22nd crosses 64 KiB.
    let words = vec!["\"{key}\""; 22].join(", ");
    let file = write(
        &dir,
        "command.toml",
        &script(&format!("\n[lock.acquire]\ncommand = [\"SET\", {words}]\n")),
    );
    refused(
        &file,
        &format!("{file}:10:"),
        &["field `lock.acquire.command[22]`", "66003 bytes", "at most 65536"],
    );
    // A script longer than 64 KiB.
    let file = write(
        &dir,
        "lua.toml",
        &script(&format!(
            "\n[lock.release]\nlua = \"return '{}'\"\n",
            "x".repeat(70_000)
        )),
    );
    refused(
        &file,
        &format!("{file}:10:1: field `lock.release.lua`"),
        &["the script is 70009 bytes: at most 65536"],
    );
}

/// A script lock whose acquire is `acquire` (a `[lock.acquire]` body), retried every
/// `retry_ms` for `duration_ms`; nobody ever gets the lock, as the file expects.
fn failing_script_lock(name: &str, acquire: &str, duration_ms: u64, retry_ms: u64, extra: &str) -> String {
    format!(
        r#"name = "{name}"
description = "a script lock whose acquire always fails"
seed = 1
duration_ms = {duration_ms}
{extra}
[topology]
masters = 1
clients = 2

[lock]
algorithm = "script"
ttl_ms = 1000

[lock.acquire]
{acquire}

[workload]
until_ms = {duration_ms}
acquire_retry_ms = {retry_ms}

[expect]
progress = "invalid"
"#
    )
}

/// An acquire that sends 60 KB (`SET key <60 KB> XX` on a key that does not exist) and fails.
fn big_value_acquire() -> String {
    format!(
        "command = [\"SET\", \"{{key}}\", \"{}\", \"XX\"]\nsuccess = \"ok\"",
        "v".repeat(60_000)
    )
}

#[test]
fn a_run_sending_big_values_stops_at_the_history_byte_cap() {
    let dir = temp("bytes");
    // 60 KB on every attempt, every millisecond or so: the 1,000,000-event cap is far away, the
    // default cap of 256 MiB of text is reached after about 4,400 attempts.
    let file = write(
        &dir,
        "big.toml",
        &failing_script_lock("big-values", &big_value_acquire(), 60_000, 1, ""),
    );
    let run = run_limited(&["run", "--quiet", &file], 600);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    for words in [
        file.as_str(),
        "cap of 268435456 bytes",
        "history_bytes_max",
        "use shorter keys, values and scripts",
    ] {
        assert!(run.stdout.contains(words), "`{words}` missing: {}", run.stdout);
    }
    assert!(run.peak_rss_bytes < MIB << 10, "peak {} MiB", run.peak_rss_bytes / MIB);

    // Under the gate it is that scenario's error (exit 1); the others still run.
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    write(
        &scenarios,
        "big.toml",
        &failing_script_lock(
            "big-values",
            &big_value_acquire(),
            60_000,
            1,
            "history_bytes_max = 4000000\n",
        ),
    );
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/kleppmann-gc-pause.toml"),
        scenarios.join("kleppmann-gc-pause.toml"),
    )
    .unwrap();
    let report = dir.join("report");
    let run = run_limited(
        &[
            "ci",
            scenarios.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--quiet",
        ],
        600,
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).unwrap()).unwrap();
    let rows = json["scenarios"].as_array().unwrap();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    assert_eq!(row("big-values")["status"], "error", "{}", row("big-values"));
    assert!(
        row("big-values")["error"]
            .as_str()
            .unwrap_or_default()
            .contains("cap of 4000000 bytes"),
        "{}",
        row("big-values")
    );
    assert_eq!(row("kleppmann-gc-pause")["status"], "pass");

    // Under explore it is the seed's error.
    let run = run_limited(
        &["explore", scenarios.join("big.toml").to_str().unwrap(), "--seeds", "1"],
        600,
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("error on seed 0") && run.stdout.contains("cap of 4000000 bytes"),
        "{}",
        run.stdout
    );
}

/// Every event of the history file at `path`, as JSON.
fn history(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_megabyte_script_error_on_every_attempt_is_cut_in_the_history() {
    let dir = temp("lua-error");
    // It used to peak at 3.3 GB over 20 simulated seconds; 2 seconds show the same.
    let file = write(
        &dir,
        "error.toml",
        &failing_script_lock("lua-error", "lua = \"error(string.rep('x', 1000000))\"", 2_000, 5, ""),
    );
    let history_file = dir.join("history.jsonl");
    let run = run_limited(
        &["run", "--quiet", &file, "--history", history_file.to_str().unwrap()],
        600,
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.peak_rss_bytes < 256 * MIB, "peak {} MiB", run.peak_rss_bytes / MIB);
    let events = history(&history_file);
    let replies: Vec<&str> = events.iter().filter_map(|e| e["reply"].as_str()).collect();
    assert!(replies.len() > 100, "{}", replies.len());
    let longest = replies.iter().map(|r| r.len()).max().unwrap_or_default();
    assert!(longest <= 4096, "{longest}");
    assert!(
        replies
            .iter()
            .any(|r| r.starts_with("-ERR user_script:1: xxx") && r.ends_with(" bytes)")),
        "{:?}",
        replies.iter().find(|r| r.starts_with('-'))
    );
    for event in &events {
        if let Some(error) = event["data"]["error"].as_str() {
            assert!(error.len() <= 4096, "{}", error.len());
        }
    }
}

#[test]
fn scripts_storing_or_allocating_without_bound_meet_the_memory_limits() {
    let dir = temp("lua-memory");
    // Ten megabytes more on every attempt, under a new key: the master refuses writes past its
    // 64 MiB `maxmemory`, as Redis does.
    let store = "lua = \"local n = redis.call('incr', KEYS[1] .. ':n') redis.call('set', KEYS[1] .. ':' .. n, string.rep('x', 10000000)) return 0\"";
    let file = write(&dir, "store.toml", &failing_script_lock("store", store, 20_000, 5, ""));
    let history_file = dir.join("store.jsonl");
    let run = run_limited(
        &["run", "--quiet", &file, "--history", history_file.to_str().unwrap()],
        600,
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.peak_rss_bytes < 512 * MIB, "peak {} MiB", run.peak_rss_bytes / MIB);
    let oom = history(&history_file)
        .iter()
        .filter(|e| {
            e["reply"]
                .as_str()
                .is_some_and(|r| r.starts_with("-OOM command not allowed when used memory > 'maxmemory'. script: "))
        })
        .count();
    assert!(oom > 100, "{oom} OOM replies");

    // A script that asks for a gigabyte fails with Lua's `not enough memory`.
    let file = write(
        &dir,
        "rep.toml",
        &failing_script_lock("rep", "lua = \"return string.rep('x', 1e9)\"", 2_000, 500, ""),
    );
    let history_file = dir.join("rep.jsonl");
    let run = run_limited(
        &["run", "--quiet", &file, "--history", history_file.to_str().unwrap()],
        600,
    );
    // Nobody gets the lock (the script's bound stops it for the run), as the scenario expects.
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("nobody ever got it"), "{}", run.stdout);
    assert!(run.peak_rss_bytes < 512 * MIB, "peak {} MiB", run.peak_rss_bytes / MIB);
    assert!(
        history(&history_file).iter().any(|e| e["reply"]
            .as_str()
            .is_some_and(|r| r.starts_with("-ERR not enough memory script: "))),
        "no `not enough memory` reply"
    );
}

/// A script-lock scenario whose release script is the file `lua_file` names.
fn with_lua_file(name: &str) -> String {
    format!(
        "name = \"lua-file\"\ndescription = \"a script file\"\nduration_ms = 1000\n\n[lock]\nalgorithm = \"script\"\n\n[lock.release]\nlua_file = \"{name}\"\n"
    )
}

#[test]
fn lua_files_are_read_as_scenario_files_are() {
    let dir = temp("lua-file");
    let scenario = |script: &str| write(&dir, &format!("{script}.toml"), &with_lua_file(script));
    let at = |file: &str| format!("{file}:9:1: field `lock.release.lua_file`");

    // A FIFO used to block the load forever.
    let fifo = dir.join("fifo.lua");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let file = scenario("fifo.lua");
    refused(&file, &at(&file), &["not a regular file"]);

    // A link to /dev/zero used to read until memory ran out.
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.lua")).unwrap();
    let file = scenario("zero.lua");
    refused(&file, &at(&file), &["not a regular file"]);

    // A directory, a missing file.
    std::fs::create_dir(dir.join("dir.lua")).unwrap();
    let file = scenario("dir.lua");
    refused(&file, &at(&file), &["not a regular file"]);
    let file = scenario("missing.lua");
    refused(&file, &at(&file), &["cannot read script file", "No such file"]);

    // Too big: past 64 KiB, and far past it (a link to a 3 MiB file).
    std::fs::write(dir.join("big.lua"), format!("return '{}'", "x".repeat(100_000))).unwrap();
    let file = scenario("big.lua");
    refused(
        &file,
        &at(&file),
        &["100009 bytes, larger than the limit of 65536 bytes"],
    );
    std::fs::write(dir.join("huge.bin"), vec![b'-'; 3 << 20]).unwrap();
    std::os::unix::fs::symlink(dir.join("huge.bin"), dir.join("huge.lua")).unwrap();
    let file = scenario("huge.lua");
    refused(&file, &at(&file), &["larger than the limit of 65536 bytes"]);

    // Not UTF-8; not Lua.
    std::fs::write(dir.join("binary.lua"), [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let file = scenario("binary.lua");
    refused(&file, &at(&file), &["is not valid UTF-8"]);
    std::fs::write(dir.join("syntax.lua"), "return 1\nlocal = = 2\n").unwrap();
    let file = scenario("syntax.lua");
    let script = dir.join("syntax.lua").display().to_string();
    refused(
        &file,
        &format!("{script}:2: field `lock.release.lua_file`"),
        &["Lua syntax error"],
    );

    // The same file named by many steps: 17 × 64 KiB is past the 1 MiB of scripts a file may hold.
    std::fs::write(dir.join("max.lua"), format!("return '{}'", "y".repeat(65_000))).unwrap();
    let steps = vec!["{ lua_file = \"max.lua\" }"; 17].join(", ");
    let file = write(
        &dir,
        "many.toml",
        &with_lua_file("max.lua").replace("lua_file = \"max.lua\"", &format!("steps = [{steps}]")),
    );
    refused(
        &file,
        &format!("{file}:9:"),
        &["field `lock.release.steps[16].lua_file`", "at most 1048576 in all"],
    );
}

#[test]
fn settings_that_would_have_no_effect_or_no_sense_are_refused() {
    let dir = temp("validation");
    let file = write(
        &dir,
        "lag.toml",
        &format!("{HEAD}\n[topology]\nmasters = 2\nreplication_lag_ms = 50\n"),
    );
    refused(
        &file,
        &format!("{file}:10:1: field `topology.replication_lag_ms`"),
        &["no master has replicas"],
    );
    let file = write(
        &dir,
        "failover.toml",
        &format!("{HEAD}\n[topology]\nfailover_after_ms = 500\n"),
    );
    refused(
        &file,
        &format!("{file}:9:1: field `topology.failover_after_ms`"),
        &["no master has replicas"],
    );
    let file = write(
        &dir,
        "latency.toml",
        &format!(
            "{HEAD}\n[[fault]]\nat_ms = 10\nkind = \"latency\"\na = \"client-1\"\nb = \"redis-1\"\nlatency_ms = 50\nmax_latency_ms = 10\n"
        ),
    );
    refused(
        &file,
        &format!("{file}:14:1: field `fault[0].max_latency_ms`"),
        &["10 is below latency_ms (50)"],
    );
    let file = write(
        &dir,
        "progress.toml",
        &format!("{HEAD}\n[expect]\nprogress = \"unknown\"\n"),
    );
    refused(
        &file,
        &format!("{file}:9:1: field `expect.progress`"),
        &["`unknown` is not an expectation of progress"],
    );
}
