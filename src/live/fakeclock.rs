//! Client wall clocks through libfaketime (Debian's `faketime` package): a client whose clock the
//! scenario sets (`offset_ms`) or jumps (`clock-jump`) is started with libfaketime preloaded,
//! reading its offset from a file that lockstep rewrites (atomically) at every jump.
//!
//! Only the wall clock is faked (`FAKETIME_DONT_FAKE_MONOTONIC=1`): a jump steps `Date.now()`,
//! `time.time()` and `SystemTime::now()`, not the monotonic clock that timeouts use — as an NTP
//! step or an operator would. Not supported: drift (a rate) on a client, and statically linked or
//! setuid clients (the preload does not reach them). libfaketime itself has limits: with the
//! monotonic clock left real, Python's `time.sleep` fails with EINVAL under it (the shipped
//! adapters do not sleep).

use std::cell::Cell;
use std::path::{Path, PathBuf};

/// Where libfaketime usually is; `LOCKSTEP_LIBFAKETIME` overrides.
const CANDIDATES: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
];

/// The libfaketime library, if installed.
pub fn find() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("LOCKSTEP_LIBFAKETIME") {
        let path = PathBuf::from(path);
        return path.exists().then_some(path);
    }
    CANDIDATES.iter().map(PathBuf::from).find(|p| p.exists())
}

/// One client's faked wall clock.
#[derive(Debug)]
pub struct FakeClock {
    file: PathBuf,
    offset_ms: Cell<i64>,
}

impl FakeClock {
    /// A clock file for `client` in `dir`, starting `offset_ms` from real time.
    pub fn new(dir: &Path, client: &str, offset_ms: i64) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let clock = FakeClock {
            file: dir.join(format!("{client}.faketime")),
            offset_ms: Cell::new(offset_ms),
        };
        clock.write()?;
        Ok(clock)
    }

    fn write(&self) -> std::io::Result<()> {
        let ms = self.offset_ms.get();
        let sign = if ms < 0 { "-" } else { "+" };
        let text = format!("{sign}{}.{:03}\n", ms.unsigned_abs() / 1000, ms.unsigned_abs() % 1000);
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.file)
    }

    /// Steps the client's wall clock by `delta_ms`.
    pub fn jump(&self, delta_ms: i64) -> std::io::Result<()> {
        self.offset_ms.set(self.offset_ms.get() + delta_ms);
        self.write()
    }

    /// The environment that makes a process read this clock.
    pub fn env(&self, library: &Path) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), library.display().to_string()),
            ("FAKETIME_TIMESTAMP_FILE".into(), self.file.display().to_string()),
            ("FAKETIME_NO_CACHE".into(), "1".into()),
            ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
        ]
    }
}

impl Drop for FakeClock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_holds_the_offset_in_seconds() {
        let dir = std::env::temp_dir().join(format!("lockstep-fakeclock-{}", std::process::id()));
        let clock = FakeClock::new(&dir, "c", 1500).unwrap();
        assert_eq!(std::fs::read_to_string(&clock.file).unwrap(), "+1.500\n");
        clock.jump(-3000).unwrap();
        assert_eq!(std::fs::read_to_string(&clock.file).unwrap(), "-1.500\n");
        let env = clock.env(Path::new("/lib/f.so"));
        assert!(env.iter().any(|(k, v)| k == "LD_PRELOAD" && v == "/lib/f.so"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
