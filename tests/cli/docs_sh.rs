//! The commands of the documentation run as a user types them. Every line of every
//! ```` ```sh ```` block in README.md and the guide (docs/) is either run here or covered by a
//! named test; a line that is neither fails [`every_sh_line_is_run_here_or_by_a_named_test`]
//! with its file and line, so a new command in the docs cannot go unrun.
//!
//! - **How a block runs.** In a fresh directory holding links to the repository's `scenarios/`
//!   and `examples/` (the inputs the commands name; what they write — `counterexamples/`,
//!   `reports/…`, `shard-2.json` — lands in that directory, never in the repository), the
//!   block's lockstep lines in order (`merge shard-*.json` reads the file the line before it
//!   wrote), each through `sh -c` with the binary under test first on `PATH` as `lockstep`: the
//!   shell expands the quotes, the glob and `$(command -v redis-server)` as it does for a user.
//! - **What is changed, and why**: [`SUBSTITUTIONS`], applied to every command and named in every
//!   failure message. Nothing else is changed.
//! - **What each command must give**: [`EXPECTED`], one entry per command as the docs write it
//!   (`cargo run --release --` read as `lockstep`): its exit code, the files it writes, and the
//!   phrases of its output that say what the text around it says. A lockstep command without an
//!   entry, or an entry no page has, fails.
//! - **Commands that need another language's library** (redis-py, node-redlock, a real
//!   `redis-server`) run in their own tests, ignored with the reason where build.rs found the tool
//!   missing and failing under `CI=true` (.ci/run installs them all), as `tests/live/live.rs`
//!   does. Live runs are real time: each is tried up to three times and passes at the first run
//!   that gives the documented outcome (docs/live.md measures 10 of 10).
//! - **Lines that are not lockstep commands**: `cargo test --workspace --all-targets` is CI itself
//!   (.ci/run's last line); an install line is covered when .ci/run installs the same ([`SETUP`]);
//!   a block run by another test says so just above its fence,
//!   `<!-- run by tests/live/serve.rs: FN -->`, and this file checks that `FN` is a test there that
//!   runs the block's test files, that .ci/run installs its pinned packages, and that a
//!   `# N passed` figure is a constant that test asserts.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, require};
use crate::docs_run::{blocks, documents, lockstep_args, rel, root, Block};

/// Explorations run at most this many seeds here.
const SEEDS_MAX: u64 = 100;
/// Live runs with `--runs` run at most this many.
const RUNS_MAX: u64 = 2;
/// `serve` runs this long (its `--duration-ms`, or in place of Ctrl-C).
const SERVE_MS: u64 = 2500;
/// One command may take this long before it is killed and the test fails.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// A change made to a documented command before it runs here.
struct Substitution {
    /// What changes.
    change: &'static str,
    /// Why the test cannot run it as written, and why the change keeps the point of the command.
    why: &'static str,
    /// Rewrites the command's words; true when it changed something.
    apply: fn(&mut Vec<String>, u16) -> bool,
}

/// Every change made to a documented command before it runs here: this table, and nothing else.
const SUBSTITUTIONS: &[Substitution] = &[
    Substitution {
        change: "`cargo run --release --` → `lockstep` (the binary under test, first on PATH)",
        why: "the test build is the binary under test; a release build costs minutes",
        apply: cargo_run,
    },
    Substitution {
        change: "`--seeds N` with N > 100 → `--seeds 100`",
        why: "thousands of seeds take minutes in the test build (10,000 of \
              redlock-crash-restart-delayed ≈ 10 s, 1,000 of baseline-token-release --against \
              naive ≈ 10 s); the first 100 hold every first failing seed the docs name (3, 9)",
        apply: seeds,
    },
    Substitution {
        change: "`explore` without `--seeds` or `--seed-range` gets `--seeds 100`",
        why: "the default is 1,000 seeds; see the line above",
        apply: explore_default_seeds,
    },
    Substitution {
        change: "`--runs N` with N > 2 → `--runs 2`",
        why: "each live run is about 2 s of real time; two still make the multi-run summary and report",
        apply: runs,
    },
    Substitution {
        change: "`serve` runs `--duration-ms 2500` (added, or in place of a longer one)",
        why: "serve runs until Ctrl-C; 2.5 s reaches the first fault of \
              examples/serve/flaky-master.toml (at 2000 ms), so a planned fault is applied",
        apply: serve_duration,
    },
    Substitution {
        change: "`--port P` → `--port F`, F the first of 4 consecutive ports found free",
        why: "a fixed port collides with other tests and the machine's own servers; the output \
              is checked for F, F+1, … where the docs show P, P+1, …",
        apply: port,
    },
];

fn cargo_run(words: &mut Vec<String>, _: u16) -> bool {
    let prefix = ["cargo", "run", "--release", "--"];
    if words.len() > prefix.len() && words.iter().zip(prefix).all(|(w, p)| w == p) {
        words.splice(0..prefix.len(), ["lockstep".to_string()]);
        return true;
    }
    false
}

/// The value after `flag`, as a number, with its index.
fn flag_number(words: &[String], flag: &str) -> Option<(usize, u64)> {
    let at = words.iter().position(|w| w == flag)? + 1;
    Some((at, words.get(at)?.parse().ok()?))
}

fn cap(words: &mut [String], flag: &str, max: u64) -> bool {
    match flag_number(words, flag) {
        Some((at, n)) if n > max => {
            words[at] = max.to_string();
            true
        }
        _ => false,
    }
}

fn subcommand(words: &[String]) -> &str {
    words.get(1).map(String::as_str).unwrap_or_default()
}

#[allow(clippy::ptr_arg)] // the signature of `Substitution::apply`
fn seeds(words: &mut Vec<String>, _: u16) -> bool {
    cap(words, "--seeds", SEEDS_MAX)
}

fn explore_default_seeds(words: &mut Vec<String>, _: u16) -> bool {
    let chosen = words.iter().any(|w| w == "--seeds" || w == "--seed-range");
    if subcommand(words) == "explore" && !chosen {
        words.extend(["--seeds".to_string(), SEEDS_MAX.to_string()]);
        return true;
    }
    false
}

#[allow(clippy::ptr_arg)] // the signature of `Substitution::apply`
fn runs(words: &mut Vec<String>, _: u16) -> bool {
    cap(words, "--runs", RUNS_MAX)
}

fn serve_duration(words: &mut Vec<String>, _: u16) -> bool {
    if subcommand(words) != "serve" {
        return false;
    }
    if words.iter().any(|w| w == "--duration-ms") {
        return cap(words, "--duration-ms", SERVE_MS);
    }
    words.extend(["--duration-ms".to_string(), SERVE_MS.to_string()]);
    true
}

#[allow(clippy::ptr_arg)] // the signature of `Substitution::apply`
fn port(words: &mut Vec<String>, free: u16) -> bool {
    match words.iter().position(|w| w == "--port") {
        Some(at) if at + 1 < words.len() => {
            words[at + 1] = free.to_string();
            true
        }
        _ => false,
    }
}

/// Splits a command line at unquoted blanks, keeping the quotes (the words are joined again for
/// `sh`), and drops a trailing `# comment`.
fn raw_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) => {
                word.push(c);
                if c == q {
                    quote = None;
                }
            }
            None if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            None => {
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                word.push(c);
            }
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    if let Some(comment) = words.iter().position(|w| w.starts_with('#')) {
        words.truncate(comment);
    }
    words
}

/// The command as it runs here, and the substitutions that changed it.
fn substitute(line: &str, free_port: u16) -> (String, Vec<String>) {
    let mut words = raw_words(line);
    let mut applied = Vec::new();
    for s in SUBSTITUTIONS {
        if (s.apply)(&mut words, free_port) {
            applied.push(format!("{} ({})", s.change, s.why));
        }
    }
    (words.join(" "), applied)
}

/// A documented command as this file keys it: `cargo run --release --` read as `lockstep`,
/// blanks collapsed, a trailing comment dropped.
fn normalize(line: &str) -> String {
    let mut words = raw_words(line);
    cargo_run(&mut words, 0);
    words.join(" ")
}

/// What a command needs besides the binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Needs {
    Nothing,
    RedisPy,
    NodeRedlock,
    NodeRedlockAndRedisServer,
}

/// What a documented command gives when run as [`SUBSTITUTIONS`] say.
struct Expected {
    /// The command as the docs write it (`lockstep …`; `cargo run --release -- …` matches too).
    command: &'static str,
    needs: Needs,
    /// Its exit code.
    code: i32,
    /// Paths it writes, relative to its directory (a directory must not be empty).
    writes: &'static [&'static str],
    /// Phrases its standard output contains: what the docs say it shows. `{port}` and
    /// `{port+N}` stand for the substituted port.
    says: &'static [&'static str],
    /// A file it writes and how many lines that file has.
    lines: Option<(&'static str, usize)>,
    /// It prints `replay: lockstep run FILE`; running that gives the violation back (exit 1).
    replay: bool,
}

const BASE: Expected = Expected {
    command: "",
    needs: Needs::Nothing,
    code: 0,
    writes: &[],
    says: &[],
    lines: None,
    replay: false,
};

/// Every lockstep command of the docs' ```` ```sh ```` blocks and what it must give here. The
/// comment on each entry is the claim of the page its phrases check.
const EXPECTED: &[Expected] = &[
    // README.md, docs/introduction.md: "Kleppmann's GC-pause scenario, with a timeline and the
    // verdicts" — every verdict as the file expects, so exit 0.
    Expected {
        command: "lockstep run scenarios/kleppmann-gc-pause.toml",
        says: &[
            "client-1     PAUSED for 15000 ms (GC / VM stall)",
            "mutual-exclusion   invalid  invalid   as expected",
            "Mutual exclusion was violated and the resource was damaged.",
        ],
        ..BASE
    },
    // docs/ci.md: the example report, generated from the shipped scenarios by one command.
    Expected {
        command: "lockstep ci scenarios --report reports/example --ttl-sweep --no-timings",
        writes: &[
            "reports/example/index.html",
            "reports/example/summary.md",
            "reports/example/report.json",
        ],
        says: &["PASS ", " 0 unexpected", "report: reports/example"],
        ..BASE
    },
    // docs/explore.md: "with --out [the counterexample is] written as a file to replay".
    Expected {
        command: "lockstep explore --algorithm naive --kinds pause --seeds 1000 --out counterexamples",
        code: 1,
        writes: &["counterexamples"],
        says: &[
            "exploration of explore-naive (naive)",
            "replay: lockstep run counterexamples/",
        ],
        replay: true,
        ..BASE
    },
    // docs/explore.md: a scenario file as the template.
    Expected {
        command: "lockstep explore scenarios/baseline-watchdog.toml --seeds 2000 --lock-aware",
        code: 1,
        says: &["exploration of baseline-watchdog (watchdog)", "seeds run: 100 "],
        ..BASE
    },
    // docs/explore.md: "run shard 2 of 4 and merge the shards' summaries afterwards" — a
    // quarter of the seeds, and the merge reads that shard's summary.
    Expected {
        command: "lockstep explore --algorithm redlock --shard 2/4 --summary shard-2.json",
        code: 1,
        writes: &["shard-2.json"],
        says: &["exploration of explore-redlock (redlock)", "seeds run: 25 "],
        ..BASE
    },
    Expected {
        command: "lockstep merge shard-*.json",
        code: 1,
        says: &["exploration of explore-redlock (redlock)", "seeds run: 25 "],
        ..BASE
    },
    // docs/ci.md: "Guided explorations over a CI matrix" — each job one guided shard (a quarter
    // of the seeds, its own corpus; it finds the bug in its seeds: exit 1), and the merge job's
    // gate over the four summaries: the bug found, the seeds to it counted over the whole range.
    Expected {
        command: "lockstep explore scenarios/bug-release-no-owner-check.toml --seeds 300 --shard 1/4 --summary \
                  shard-1.json",
        code: 1,
        writes: &["shard-1.json"],
        says: &[
            "exploration of bug-release-no-owner-check (script)",
            "seeds run: 25 ",
            "placement: mixed",
        ],
        ..BASE
    },
    Expected {
        command: "lockstep explore scenarios/bug-release-no-owner-check.toml --seeds 300 --shard 2/4 --summary \
                  shard-2.json",
        code: 1,
        writes: &["shard-2.json"],
        says: &[
            "exploration of bug-release-no-owner-check (script)",
            "seeds run: 25 ",
            "placement: mixed",
        ],
        ..BASE
    },
    Expected {
        command: "lockstep explore scenarios/bug-release-no-owner-check.toml --seeds 300 --shard 3/4 --summary \
                  shard-3.json",
        code: 1,
        writes: &["shard-3.json"],
        says: &[
            "exploration of bug-release-no-owner-check (script)",
            "seeds run: 25 ",
            "placement: mixed",
        ],
        ..BASE
    },
    Expected {
        command: "lockstep explore scenarios/bug-release-no-owner-check.toml --seeds 300 --shard 4/4 --summary \
                  shard-4.json",
        code: 1,
        writes: &["shard-4.json"],
        says: &[
            "exploration of bug-release-no-owner-check (script)",
            "seeds run: 25 ",
            "placement: mixed",
        ],
        ..BASE
    },
    Expected {
        command: "lockstep merge shard-1.json shard-2.json shard-3.json shard-4.json --out merged.json",
        code: 1,
        writes: &["merged.json"],
        says: &[
            "exploration of bug-release-no-owner-check (script)",
            "seeds run: 100 ",
            "placement: mixed",
            "seeds to the first implementation bug: 1 (seed 0)",
        ],
        ..BASE
    },
    // docs/deployment-faults.md: "Unsafe configurations": the table's first failing seeds (3, 9)
    // and what they shrink to (1 fault; 2 faults).
    Expected {
        command: "lockstep explore scenarios/redlock-crash-restart.toml --seeds 1000 --kinds \
                  crash,power-loss,rolling-restart",
        code: 1,
        says: &[
            "first failing seeds: 3 [mutual-exclusion",
            "shrunk seed 3 (mutual-exclusion): 3 -> 1 faults",
        ],
        ..BASE
    },
    Expected {
        command: "lockstep explore scenarios/single-master-failover.toml --seeds 1000 --kinds crash,failover",
        code: 1,
        says: &[
            "first failing seeds: 9 [mutual-exclusion",
            "shrunk seed 9 (mutual-exclusion): 2 -> 2 faults",
        ],
        ..BASE
    },
    // docs/deployment-faults.md: "Safe variants … no mutual-exclusion violation".
    Expected {
        command: "lockstep explore scenarios/redlock-crash-restart-delayed.toml --seeds 10000 --kinds \
                  crash,power-loss,rolling-restart",
        says: &["violating: 0 ", "mutual-exclusion         0 invalid"],
        ..BASE
    },
    Expected {
        command: "lockstep explore scenarios/redlock-crash-restart-aof-always.toml --seeds 10000 --kinds \
                  crash,power-loss,rolling-restart",
        says: &["violating: 0 ", "mutual-exclusion         0 invalid"],
        ..BASE
    },
    // docs/explore-jsonl.md: "one line of JSON per seed".
    Expected {
        command: "lockstep explore scenarios/baseline-token-release.toml --seeds 1000 --against naive \
                  --jsonl seeds.jsonl",
        says: &["exploration of baseline-token-release (token-release)"],
        lines: Some(("seeds.jsonl", SEEDS_MAX as usize)),
        ..BASE
    },
    // docs/live.md: "redis-py's Lock under Kleppmann's pause: mutual exclusion and the counter
    // both break" — as the file expects, so exit 0.
    Expected {
        command: "lockstep live scenarios/live/kleppmann-pause.toml --client 'python3 \
                  examples/live/redis_py_adapter.py'",
        needs: Needs::RedisPy,
        says: &[
            "redis-py",
            "mutual-exclusion   invalid  invalid   ✓",
            "lost-update        invalid  invalid   ✓",
            "result: as expected",
        ],
        ..BASE
    },
    // docs/live.md: "the lock still breaks, the resource rejects the stale write".
    Expected {
        command: "lockstep live scenarios/live/kleppmann-pause-fenced.toml --client 'python3 \
                  examples/live/redis_py_adapter.py'",
        needs: Needs::RedisPy,
        says: &[
            "mutual-exclusion   invalid  invalid   ✓",
            "resource     REJECTED write value=1 token=1 from client-1",
            "stale-write        valid    valid     ✓",
            "result: as expected",
        ],
        ..BASE
    },
    // docs/test-your-lock.md: the same run, with runs.
    Expected {
        command: "lockstep live scenarios/live/kleppmann-pause.toml --client 'python3 \
                  examples/live/redis_py_adapter.py' --runs 10",
        needs: Needs::RedisPy,
        says: &[
            "LIVE, 2 runs",
            "mutual-exclusion         0       2       0   invalid",
            "as expected in 2 of 2 runs",
        ],
        ..BASE
    },
    // docs/live.md: "node-redlock v5 over ioredis, ten runs, with a report directory".
    Expected {
        command: "lockstep live scenarios/live/kleppmann-pause.toml --client 'node \
                  examples/live/node/redlock_adapter.js' --runs 10 --report reports/live-node",
        needs: Needs::NodeRedlock,
        writes: &[
            "reports/live-node/index.html",
            "reports/live-node/live.json",
            "reports/live-node/summary.md",
        ],
        says: &[
            "node-redlock v5",
            "mutual-exclusion         0       2       0   invalid",
            "as expected in 2 of 2 runs",
            "report: reports/live-node",
        ],
        ..BASE
    },
    // docs/live.md: real redis-server masters, restarted by the fault plan.
    Expected {
        command: "lockstep live scenarios/live/redlock-restart.toml --client 'node \
                  examples/live/node/redlock_adapter.js' --redis-server \"$(command -v redis-server)\"",
        needs: Needs::NodeRedlockAndRedisServer,
        says: &[
            "redis-3      CRASHED",
            "redis-3      started",
            "mutual-exclusion   invalid  invalid   ✓",
            "result: as expected",
        ],
        ..BASE
    },
    // docs/serve.md: "One master on a free port …; the addresses are printed at start".
    Expected {
        command: "lockstep serve",
        says: &[
            "  redis-1    127.0.0.1:",
            "no faults planned",
            "stopped (--duration-ms) after",
        ],
        ..BASE
    },
    // docs/serve.md: "Three masters on 16379, 16380, 16381 (the fenced resource on 16382) …,
    // history kept".
    Expected {
        command: "lockstep serve --masters 3 --port 16379 --duration-ms 60000 --history serve-history.jsonl",
        writes: &["serve-history.jsonl"],
        says: &[
            "  redis-1    127.0.0.1:{port}",
            "  redis-2    127.0.0.1:{port+1}",
            "  redis-3    127.0.0.1:{port+2}",
            "  resource   127.0.0.1:{port+3}",
            "written to serve-history.jsonl",
        ],
        ..BASE
    },
    // docs/serve.md: "A scenario file's masters, … and fault plan" — its first fault applied.
    Expected {
        command: "lockstep serve examples/serve/flaky-master.toml --port 16379 --history serve-history.jsonl",
        writes: &["serve-history.jsonl"],
        says: &[
            "  redis-1    127.0.0.1:{port}",
            "4 faults planned, from 2000 ms after start",
            "1 fault applied",
        ],
        ..BASE
    },
    // docs/serve.md, docs/test-your-lock.md: "with a report directory … at the end".
    Expected {
        command: "lockstep serve examples/serve/flaky-master.toml --port 16379 --report serve-report",
        writes: &[
            "serve-report/index.html",
            "serve-report/summary.md",
            "serve-report/serve.json",
        ],
        says: &["1 fault applied", "report written to serve-report"],
        ..BASE
    },
];

/// The line that puts `lockstep` on the PATH (README.md, docs/introduction.md). Not run here (a
/// release build and an install into the user's ~/.cargo/bin):
/// [`the_install_line_installs_the_binary_the_docs_call_lockstep`] checks what it installs.
const INSTALL: &str = "cargo install --path .";

/// Issue 52: `cargo install --path .` at the repository's root installs a binary named
/// `lockstep`, the name every page's commands use: the root package's main binary is
/// `src/main.rs` and the package is named `lockstep` (its default binary).
#[test]
fn the_install_line_installs_the_binary_the_docs_call_lockstep() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let package = &manifest[manifest.find("\n[package]\n").expect("a root package")..];
    let package = &package[..package[1..].find("\n[").map_or(package.len(), |i| i + 1)];
    assert!(package.contains("\nname = \"lockstep\"\n"), "{package}");
    assert!(package.contains("\ndefault-run = \"lockstep\"\n"), "{package}");
    assert!(root().join("src/main.rs").is_file());
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let first = blocks(&readme).into_iter().find(|b| b.info == "sh").unwrap();
    let install = first.lines.iter().position(|l| l.trim() == INSTALL);
    let run = first.lines.iter().position(|l| l.trim().starts_with("lockstep "));
    assert!(
        install.is_some() && install < run,
        "the README's first commands put lockstep on the PATH before they call it: {:?}",
        first.lines
    );
}

/// Install lines the docs show, and what .ci/run runs to the same effect.
const SETUP: &[(&str, &[&str])] = &[(
    "pip install redis # or: (cd examples/live/node && npm ci)",
    &["pip install --quiet 'redis", "(cd examples/live/node && npm ci"],
)];

fn expected_for(line: &str) -> Option<&'static Expected> {
    let line = normalize(line);
    EXPECTED.iter().find(|e| normalize(e.command) == line)
}

/// A command line of a block: its line number in the page and its text, continuation lines
/// (`\` at the end) joined; blank lines and comments left out.
fn command_lines(block: &Block) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in block.lines.iter().enumerate() {
        let number = block.line + 1 + i;
        let (start, mut text) = pending.take().unwrap_or((number, String::new()));
        text.push_str(line.trim());
        if let Some(continued) = text.strip_suffix('\\') {
            pending = Some((start, format!("{} ", continued.trim_end())));
            continue;
        }
        if !text.is_empty() && !text.starts_with('#') {
            out.push((start, text));
        }
    }
    out
}

fn is_shell(block: &Block) -> bool {
    block.info == "sh" || block.info == "bash"
}

/// The `<!-- run by FILE: FN -->` marker just above a block's fence (blank lines between
/// allowed), as (FILE, FN).
fn run_by(text: &str, block: &Block) -> Option<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let above = lines[..block.line - 1].iter().rev().find(|l| !l.trim().is_empty())?;
    let inner = above.trim().strip_prefix("<!-- run by ")?.strip_suffix("-->")?;
    let (file, function) = inner.split_once(": ")?;
    Some((file.trim().to_string(), function.trim().to_string()))
}

/// A first port of `count` consecutive ports free on 127.0.0.1 now.
fn free_ports(count: u16) -> u16 {
    for _ in 0..100 {
        let first = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let base = first.local_addr().unwrap().port();
        if base.checked_add(count).is_none() {
            continue;
        }
        let rest: Vec<_> = (1..count)
            .map_while(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).ok())
            .collect();
        if rest.len() + 1 == usize::from(count) {
            return base;
        }
    }
    panic!("no {count} consecutive free ports on 127.0.0.1");
}

/// One run of a command line.
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

/// Runs `line` with `sh -c` in `dir`, `bin` first on PATH, in its own process group (killed with
/// everything in it past [`COMMAND_TIMEOUT`], which fails the test).
fn sh(dir: &Path, bin: &Path, line: &str) -> Outcome {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("sh starts");
    let (stdout, stderr) = common::drain_output(&mut child);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > COMMAND_TIMEOUT {
            // SAFETY: signalling the process group of our own child, not reaped yet.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "`{line}` ran longer than {COMMAND_TIMEOUT:?}\n{}\n{}",
                stdout.join().unwrap_or_default(),
                stderr.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        elapsed: start.elapsed(),
    }
}

/// `{port}` and `{port+N}` in a phrase, with the substituted port.
fn with_port(phrase: &str, port: u16) -> String {
    let mut out = phrase.replace("{port}", &port.to_string());
    for n in 1..10u16 {
        out = out.replace(&format!("{{port+{n}}}"), &(port + n).to_string());
    }
    out
}

/// What is wrong with an outcome, against its entry (empty when it is as documented).
fn check(entry: &Expected, outcome: &Outcome, dir: &Path, bin: &Path, port: u16) -> Vec<String> {
    let mut problems = Vec::new();
    if outcome.code != entry.code {
        problems.push(format!("exit {} where {} is documented", outcome.code, entry.code));
    }
    for path in entry.writes {
        let at = dir.join(path);
        let empty_dir = at.is_dir() && std::fs::read_dir(&at).map_or(true, |mut d| d.next().is_none());
        if !at.exists() || empty_dir {
            problems.push(format!("wrote no {path}"));
        }
    }
    for phrase in entry.says {
        let phrase = with_port(phrase, port);
        if !outcome.stdout.contains(&phrase) {
            problems.push(format!("printed no `{phrase}`"));
        }
    }
    if let Some((file, count)) = entry.lines {
        let got = std::fs::read_to_string(dir.join(file)).map_or(0, |t| t.lines().count());
        if got != count {
            problems.push(format!("{file} has {got} lines, not {count}"));
        }
    }
    if entry.replay {
        let replay = outcome
            .stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix("replay: "))
            .filter(|c| c.starts_with("lockstep run "));
        match replay {
            None => problems.push("printed no `replay: lockstep run FILE`".to_string()),
            Some(command) => {
                let again = sh(dir, bin, command);
                if again.code != 1 || !again.stdout.contains("UNEXPECTED:") {
                    problems.push(format!(
                        "its replay `{command}` did not give the violation back (exit {}):\n{}{}",
                        again.code, again.stdout, again.stderr
                    ));
                }
            }
        }
    }
    problems
}

/// A directory of links named `lockstep` to the binary under test, for PATH.
fn bin_dir(name: &str) -> common::TempPath {
    let bin = common::TempPath::dir("docs-sh-bin", name);
    std::os::unix::fs::symlink(common::BINARY, bin.join("lockstep")).expect("a link to the binary");
    bin
}

/// A fresh directory for one block, with the repository's inputs linked into it.
fn block_dir(name: &str) -> common::TempPath {
    let dir = common::TempPath::dir("docs-sh", name);
    for input in ["scenarios", "examples"] {
        std::os::unix::fs::symlink(root().join(input), dir.join(input)).expect("a link to the inputs");
    }
    dir
}

/// Runs every documented command whose entry needs `needs`, block by block, and fails with each
/// one that does not give what its entry says.
fn run_documented(needs: Needs) {
    let bin = bin_dir(&format!("{needs:?}"));
    let mut ran = Vec::new();
    let mut failures = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for block in blocks(&text)
            .iter()
            .filter(|b| is_shell(b) && run_by(&text, b).is_none())
        {
            let mut dir: Option<common::TempPath> = None;
            for (number, line) in command_lines(block) {
                let Some(entry) = expected_for(&line).filter(|e| e.needs == needs) else {
                    continue;
                };
                let at = format!("{}:{number}", rel(&doc));
                let stem = doc.file_stem().unwrap().to_string_lossy().into_owned();
                let dir = dir.get_or_insert_with(|| block_dir(&format!("{needs:?}-{stem}-{}", block.line)));
                let free = free_ports(4);
                let (command, applied) = substitute(&line, free);
                // Live runs are real time: the first of up to three that is as documented passes.
                let attempts = if command.starts_with("lockstep live ") { 3 } else { 1 };
                let mut reports = Vec::new();
                for _ in 0..attempts {
                    let outcome = sh(dir, &bin, &command);
                    let problems = check(entry, &outcome, dir, &bin, free);
                    if problems.is_empty() {
                        ran.push(format!("{at}: {:.1} s", outcome.elapsed.as_secs_f64()));
                        reports.clear();
                        break;
                    }
                    reports.push(format!(
                        "{}\n--- stdout\n{}--- stderr\n{}",
                        problems.join("; "),
                        outcome.stdout,
                        outcome.stderr
                    ));
                }
                if !reports.is_empty() {
                    failures.push(format!(
                        "{at}: `{line}`, run as `{command}` (substituted: {}):\n{}",
                        if applied.is_empty() {
                            "nothing".to_string()
                        } else {
                            applied.join("; ")
                        },
                        reports.join("\n")
                    ));
                }
            }
        }
    }
    eprintln!("ran {} documented commands:\n{}", ran.len(), ran.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let documented = EXPECTED.iter().filter(|e| e.needs == needs).count();
    assert!(
        ran.len() >= documented,
        "only {} of the {documented} commands that need {needs:?} ran",
        ran.len()
    );
}

#[test]
fn every_lockstep_command_in_the_docs_runs_as_documented() {
    run_documented(Needs::Nothing);
}

fn require_node_redlock() {
    require(
        "node-redlock (npm ci in examples/live/node)",
        Command::new("node")
            .current_dir(root().join("examples/live/node"))
            .args(["-e", "require('redlock'); require('ioredis')"]),
    );
}

#[test]
#[cfg_attr(
    lockstep_no_redis_py,
    ignore = "redis-py is not installed (pip install redis; .ci/run installs it)"
)]
fn the_docs_live_commands_with_redis_py_run_as_documented() {
    require("redis-py", Command::new("python3").args(["-c", "import redis"]));
    run_documented(Needs::RedisPy);
}

#[test]
#[cfg_attr(
    lockstep_no_node_redlock,
    ignore = "node-redlock is not installed (npm ci in examples/live/node; .ci/run does it)"
)]
fn the_docs_live_commands_with_node_redlock_run_as_documented() {
    require_node_redlock();
    run_documented(Needs::NodeRedlock);
}

#[test]
#[cfg_attr(
    any(lockstep_no_node_redlock, lockstep_no_redis_server),
    ignore = "node-redlock or redis-server is not installed (.ci/run installs both)"
)]
fn the_docs_live_command_with_real_redis_servers_runs_as_documented() {
    require_node_redlock();
    require("redis-server", Command::new("redis-server").arg("--version"));
    run_documented(Needs::NodeRedlockAndRedisServer);
}

/// The body of `fn name(` in `source`: from its signature to the first line that is `}`.
fn function_body<'a>(source: &'a str, name: &str) -> Option<&'a str> {
    let start = source.find(&format!("fn {name}("))?;
    let rest = &source[start..];
    Some(&rest[..rest.find("\n}\n").map_or(rest.len(), |end| end + 2)])
}

/// What is wrong with a block marked `<!-- run by FILE: FN -->`: FN is not a test in FILE, or
/// does not run the block's test files, or a pinned package is not what .ci/run installs, or a
/// `# N passed` figure is not a constant FN asserts.
fn covered_block_problems(block: &Block, file: &str, function: &str, ci: &str) -> Vec<String> {
    let Ok(source) = std::fs::read_to_string(root().join(file)) else {
        return vec![format!("the marker names {file}, which does not exist")];
    };
    let Some(body) = function_body(&source, function) else {
        return vec![format!("{file} has no fn {function}")];
    };
    let mut problems = Vec::new();
    let signature = &source[..source.find(&format!("fn {function}(")).unwrap()];
    if !signature
        .trim_end()
        .lines()
        .rev()
        .take(6)
        .any(|l| l.trim() == "#[test]")
    {
        problems.push(format!("{file}: fn {function} is not a #[test]"));
    }
    for (number, line) in command_lines(block) {
        let at = format!("line {number}");
        if let Some(args) = lockstep_args(&line) {
            let sub = args.first().map(String::as_str).unwrap_or_default();
            if !body.to_lowercase().contains(sub) {
                problems.push(format!("{at}: {function} does not start `lockstep {sub}`"));
            }
            continue;
        }
        for word in line.split_whitespace() {
            if word.contains("==") && !ci.contains(word) {
                problems.push(format!("{at}: .ci/run does not install {word}"));
            }
            if word.starts_with("tests/") && word.ends_with(".py") && !body.contains(word) {
                problems.push(format!("{at}: {function} does not run {word}"));
            }
        }
        if let Some((_, comment)) = line.split_once(" # ") {
            if let Some(figure) = comment.trim().strip_suffix(" passed") {
                let asserted = source.lines().filter_map(|l| {
                    let (name, value) = l.trim().strip_prefix("pub(crate) const ")?.split_once(": u32 = ")?;
                    Some((name.to_string(), value.trim_end_matches(';').to_string()))
                });
                let held = asserted
                    .into_iter()
                    .any(|(name, value)| value == figure.trim() && body.contains(&name));
                if !held {
                    problems.push(format!(
                        "{at}: `# {figure} passed` is not a `pub(crate) const NAME: u32 = {figure};` that \
                         {function} asserts (or say in the text that it was measured once)"
                    ));
                }
            }
        }
    }
    problems
}

fn collapse(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_sh_line_is_run_here_or_by_a_named_test() {
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    let ci_test = ci
        .lines()
        .rev()
        .find(|l| l.starts_with("cargo test"))
        .expect(".ci/run runs a `cargo test` command");
    let mut failures = Vec::new();
    let mut used = vec![false; EXPECTED.len()];
    let (mut run, mut covered) = (0, 0);
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for block in blocks(&text).iter().filter(|b| is_shell(b)) {
            if let Some((file, function)) = run_by(&text, block) {
                for problem in covered_block_problems(block, &file, &function, &ci) {
                    failures.push(format!("{}:{}: {problem}", rel(&doc), block.line));
                }
                covered += command_lines(block).len();
                continue;
            }
            for (number, line) in command_lines(block) {
                let at = format!("{}:{number}", rel(&doc));
                if lockstep_args(&line).is_some() {
                    let key = normalize(&line);
                    match EXPECTED.iter().position(|e| normalize(e.command) == key) {
                        Some(i) => {
                            used[i] = true;
                            run += 1;
                        }
                        None => failures.push(format!(
                            "{at}: `{line}` is run by no test: give it an entry in EXPECTED \
                             (tests/cli/docs_sh.rs) saying what it prints, writes and exits with"
                        )),
                    }
                } else if line.trim() == ci_test {
                    covered += 1; // CI itself: .ci/run's last line.
                } else if line.trim() == INSTALL {
                    covered += 1; // the_install_line_installs_the_binary_the_docs_call_lockstep
                } else if let Some((_, needles)) = SETUP.iter().find(|(l, _)| collapse(l) == collapse(&line)) {
                    for needle in needles.iter().filter(|n| !ci.contains(*n)) {
                        failures.push(format!("{at}: `{line}`: .ci/run no longer runs `{needle}`"));
                    }
                    covered += 1;
                } else {
                    failures.push(format!(
                        "{at}: `{line}` is neither a lockstep command (run here), nor .ci/run's \
                         test command, nor an install line .ci/run runs (SETUP), nor in a block \
                         marked `<!-- run by FILE: FN -->`"
                    ));
                }
            }
        }
    }
    for (entry, used) in EXPECTED.iter().zip(&used) {
        if !used {
            failures.push(format!("EXPECTED has `{}`, which no page shows", entry.command));
        }
    }
    assert!(
        run >= 20 && covered >= 5,
        "only {run} commands run and {covered} lines covered"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_substitutions_do_what_their_table_says() {
    let run = |line: &str| substitute(line, 40000).0;
    assert_eq!(
        run("cargo run --release -- explore --algorithm redlock --shard 2/4 --summary shard-2.json"),
        "lockstep explore --algorithm redlock --shard 2/4 --summary shard-2.json --seeds 100"
    );
    assert_eq!(
        run("lockstep explore x.toml --seeds 10000 --kinds crash"),
        "lockstep explore x.toml --seeds 100 --kinds crash"
    );
    assert_eq!(
        run("lockstep explore x.toml --seeds 3"),
        "lockstep explore x.toml --seeds 3"
    );
    assert_eq!(
        run("lockstep live f.toml --client 'python3  a.py' --runs 10"),
        "lockstep live f.toml --client 'python3  a.py' --runs 2"
    );
    assert_eq!(run("lockstep serve"), "lockstep serve --duration-ms 2500");
    assert_eq!(
        run("lockstep serve --masters 3 --port 16379 --duration-ms 60000"),
        "lockstep serve --masters 3 --port 40000 --duration-ms 2500"
    );
    assert_eq!(
        run("lockstep live f.toml --redis-server \"$(command -v redis-server)\""),
        "lockstep live f.toml --redis-server \"$(command -v redis-server)\""
    );
    assert_eq!(
        run("lockstep merge shard-*.json # a comment"),
        "lockstep merge shard-*.json"
    );
    assert_eq!(
        with_port("127.0.0.1:{port} and {port+3}", 40000),
        "127.0.0.1:40000 and 40003"
    );
    // A block's commands: continuations joined, comments and blanks dropped, line numbers kept.
    let block = Block {
        info: "sh".to_string(),
        line: 10,
        lines: [
            "# a comment",
            "lockstep live f.toml \\",
            "    --runs 10",
            "",
            "lockstep serve",
        ]
        .map(String::from)
        .to_vec(),
    };
    assert_eq!(
        command_lines(&block),
        [
            (12, "lockstep live f.toml --runs 10".to_string()),
            (15, "lockstep serve".to_string())
        ]
    );
    let text = "x\n<!-- run by tests/live/serve.rs: some_test -->\n\n```sh\nls\n```\n";
    let block = blocks(text).into_iter().next().unwrap();
    assert_eq!(
        run_by(text, &block),
        Some(("tests/live/serve.rs".to_string(), "some_test".to_string()))
    );
}
