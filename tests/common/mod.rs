//! Helpers shared by several integration-test crates: running the binary as a user does, and a
//! user lock with a bug. Each test crate uses only some of them.
#![allow(dead_code)]

use async_trait::async_trait;
use lockstep::lock::{LockClient, LockError};
use lockstep::ops::Grant;
use std::path::Path;
use std::process::Command;

/// Runs the binary in `cwd`; returns (exit code, stdout, stderr). A panic or a signal fails: every
/// exit code must be 0, 1 or 2.
pub fn lockstep_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .current_dir(cwd)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("the binary runs");
    let code = out.status.code().unwrap_or(-1);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        [0, 1, 2].contains(&code),
        "exit code {code} for {args:?}\n{stdout}\n{stderr}"
    );
    (code, stdout, stderr)
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
