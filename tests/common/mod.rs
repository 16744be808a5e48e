//! Helpers shared by several integration-test crates: running the binary as a user does, and a
//! user lock with a bug. Each test crate uses only some of them.
#![allow(dead_code)]

use async_trait::async_trait;
use lockstep::lock::{LockClient, LockError};
use lockstep::ops::Grant;
use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// The binary under test. Every test runs it through this module: [`lockstep`], [`lockstep_in`],
/// [`Lockstep`] when it needs an environment variable or a standard output of its own, [`command`]
/// when it must spawn the process itself (to signal it, read its output while it runs or limit
/// it), and [`lockstep_limited`].
pub const BINARY: &str = env!("CARGO_BIN_EXE_lockstep");

/// The binary as a user runs it from the repository root, not started yet: `RUST_BACKTRACE=0`, so
/// that a panic's output is what a user sees. For a test that must own the process (send it a
/// signal, read its output while it runs, set limits before `exec`); the others use [`Lockstep`].
pub fn command<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Command {
    let mut command = Command::new(BINARY);
    command
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUST_BACKTRACE", "0");
    command
}

/// One run of the binary, to finish with [`Lockstep::run`]: from the repository root unless
/// [`Lockstep::cwd`] says otherwise, with the environment variables and standard output given.
pub struct Lockstep {
    command: Command,
    args: Vec<String>,
}

impl Lockstep {
    pub fn new<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Self {
        let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        Lockstep {
            command: command(&args),
            args: args.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        }
    }

    /// Runs in `dir` rather than the repository root.
    pub fn cwd(mut self, dir: &Path) -> Self {
        self.command.current_dir(dir);
        self
    }

    /// Sets the environment variable `key` for this run.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.command.env(key, value);
        self
    }

    /// Sends standard output there (a file, `/dev/full`) instead of capturing it: `run`'s stdout
    /// is then empty.
    pub fn stdout(mut self, to: impl Into<Stdio>) -> Self {
        self.command.stdout(to);
        self
    }

    /// Runs the binary to its end; returns (exit code, stdout, stderr). A panic or a signal fails:
    /// every exit code must be 0, 1 or 2.
    pub fn run(mut self) -> (i32, String, String) {
        let out = self.command.output().expect("the binary runs");
        let code = out.status.code().unwrap_or(-1);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        let args = &self.args;
        assert!(
            [0, 1, 2].contains(&code),
            "exit code {code} for {args:?}\n{stdout}\n{stderr}"
        );
        (code, stdout, stderr)
    }
}

/// Runs the binary in `cwd`; returns (exit code, stdout, stderr). A panic or a signal fails: every
/// exit code must be 0, 1 or 2.
pub fn lockstep_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    Lockstep::new(args).cwd(cwd).run()
}

/// Runs the binary from the repository root, as a user there would: [`lockstep_in`].
pub fn lockstep(args: &[&str]) -> (i32, String, String) {
    Lockstep::new(args).run()
}

/// A lock whose acquire panics: user code with a bug.
pub struct PanickingLock;

#[async_trait(?Send)]
impl LockClient for PanickingLock {
    async fn acquire(&self, _key: &str, _ttl_ms: u64) -> Result<Grant, LockError> {
        panic!("bug in user lock: acquire exploded");
    }
    async fn extend(&self, grant: &Grant, _ttl_ms: u64) -> Result<Grant, LockError> {
        Ok(grant.clone())
    }
    async fn release(&self, _grant: &Grant) -> Result<bool, LockError> {
        Ok(true)
    }
}

/// A path `lockstep-{what}-{pid}-{name}` under the system's temp directory, removed with
/// everything in it when dropped, so that a test run leaves nothing behind (one report of a
/// forty-minute run is 250 MB).
pub struct TempPath(std::path::PathBuf);

impl TempPath {
    /// A fresh, empty directory.
    pub fn dir(what: &str, name: &str) -> Self {
        let path = Self::unused(what, name);
        std::fs::create_dir_all(&path.0).expect("a temp directory");
        path
    }

    /// A path where nothing is (yet): for an output the test has the binary create.
    pub fn unused(what: &str, name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("lockstep-{what}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        let _ = std::fs::remove_file(&path);
        TempPath(path)
    }
}

impl std::ops::Deref for TempPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempPath {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The address-space limit [`lockstep_limited`] runs the binary under: 2 GiB. What an input of at
/// most 1 MiB makes a run take must fit well inside it.
pub const MEMORY_LIMIT_BYTES: u64 = 2 << 30;

/// A run of the binary under [`lockstep_limited`].
#[derive(Debug)]
pub struct LimitedRun {
    /// The exit code (0, 1 or 2: anything else fails the run).
    pub code: i32,
    /// What it printed.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
    /// Its peak resident memory (`ru_maxrss`), in bytes.
    pub peak_rss_bytes: u64,
    /// How long it took.
    pub elapsed: std::time::Duration,
}

/// Runs the binary in `cwd` as [`lockstep_in`] does, with its address space limited to
/// [`MEMORY_LIMIT_BYTES`] (`RLIMIT_AS`: an allocation past it fails, and Rust aborts the process)
/// and killed after `timeout`. A panic (101), an abort (134), a signal or the timeout fails: every
/// exit code must be 0, 1 or 2. Returns the run with its peak memory.
pub fn lockstep_limited(cwd: &Path, args: &[&str], timeout: std::time::Duration) -> LimitedRun {
    use std::os::unix::process::CommandExt;

    let mut command = command(args);
    command
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec the closure only calls `setrlimit`, which is
    // async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: MEMORY_LIMIT_BYTES as libc::rlim_t,
                rlim_max: MEMORY_LIMIT_BYTES as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = std::time::Instant::now();
    let mut child = command.spawn().expect("the binary runs");
    let pid = child.id() as libc::pid_t;
    let (stdout, stderr) = drain_output(&mut child);
    // Polled, so that the child is killed past `timeout` while it is still ours (not reaped: its
    // pid cannot have been reused).
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed `rusage` is a valid value for `wait4` to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut timed_out = false;
    loop {
        let flags = if timed_out { 0 } else { libc::WNOHANG };
        // SAFETY: `pid` is our child; `status` and `usage` are valid for writes.
        let waited = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
        if waited == pid {
            break;
        }
        if waited == -1 {
            let error = std::io::Error::last_os_error();
            assert_eq!(error.kind(), std::io::ErrorKind::Interrupted, "wait4: {error}");
            continue;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            // SAFETY: signalling our own child, not reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        } else {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    // The child is reaped by wait4: forget std's handle without waiting on it again.
    drop(child);
    let run = LimitedRun {
        code: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -libc::WTERMSIG(status)
        },
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        peak_rss_bytes: (usage.ru_maxrss as u64).saturating_mul(1024),
        elapsed: start.elapsed(),
    };
    assert!(
        !timed_out,
        "{args:?} ran longer than {timeout:?}\n{}\n{}",
        run.stdout, run.stderr
    );
    assert!(
        [0, 1, 2].contains(&run.code),
        "exit code {} (negative: killed by that signal) for {args:?} under a {} MiB limit, peak {} MiB\n{}\n{}",
        run.code,
        MEMORY_LIMIT_BYTES >> 20,
        run.peak_rss_bytes >> 20,
        run.stdout,
        run.stderr
    );
    run
}

/// Reads the child's stdout and stderr to their ends on two threads (so neither pipe fills and
/// blocks the child); join each for its text.
pub fn drain_output(
    child: &mut std::process::Child,
) -> (std::thread::JoinHandle<String>, std::thread::JoinHandle<String>) {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    (stdout, stderr)
}

/// Whether the tests run under CI (`CI=true` or `CI=1`): there a missing tool fails its test.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Fails, naming the tool, when `probe` (a command that succeeds only with the tool installed)
/// fails: build.rs ignores a test whose tool was missing at build time (except under `CI=true`),
/// so reaching here without it means CI lacks it or it went away since the build.
pub fn require(what: &str, probe: &mut Command) {
    let ok = probe.output().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{what} is not installed; .ci/run installs it{}",
        if in_ci() {
            ""
        } else {
            " (it was there when the tests were built: touch build.rs)"
        }
    );
}
