//! Client wall clocks through libfaketime (Debian's `faketime` package): a client whose clock the
//! scenario sets (`offset_ms`), makes drift (`drift_ppm`, the `drift` fault) or jumps
//! (`clock-jump`) is started with libfaketime preloaded, reading its clock from a file that
//! lockstep rewrites (atomically) at every change: an offset in seconds and, with drift, a rate
//! (`+1.500 x1.000500`: libfaketime's "advanced" format, offset then `x` speed).
//!
//! libfaketime applies a rate to the time elapsed since *the process started* (its own start
//! reference), not since the file changed. So each rewrite compensates: with the model's offset
//! `o(t)` now at `t` (scenario offset, jumps, and drift accumulated since true time 0 at the
//! rates in force) and the process's start `s`, the file gets the offset `o(t) - (r - 1)(t - s)`
//! and the rate `r = 1 + drift_ppm / 1e6`, so the faked clock continues from `o(t)` at rate `r`
//! without a step. A restarted process (after a crash fault) has a new `s`: the file is rewritten
//! before it starts. Processes that the adapter itself forks later start their own reference, so
//! drift reaches only the adapter process (and what it execs), not its children.
//!
//! Only the wall clock is faked (`FAKETIME_DONT_FAKE_MONOTONIC=1`): a jump steps and drift skews
//! `Date.now()`, `time.time()` and `SystemTime::now()`, not the monotonic clock that timeouts use —
//! as an NTP step or a bad oscillator corrected by NTP slewing only the wall clock would. Not
//! supported: statically linked or setuid clients (the preload does not reach them). libfaketime
//! itself has limits: with the monotonic clock left real, Python's `time.sleep` fails with EINVAL
//! under it (the shipped adapters do not sleep).

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::Instant;

include!("faketime_paths.rs");

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
    /// The model's offset from real time at `base_at`, µs.
    base_offset_us: Cell<i64>,
    /// When `base_offset_us` held.
    base_at: Cell<Instant>,
    /// The rate error in force since `base_at`, ppm.
    drift_ppm: Cell<i64>,
    /// When the client's current process started (libfaketime's reference for the rate).
    process_start: Cell<Instant>,
}

/// Microseconds from `from` to `to` (negative when `to` is earlier).
fn micros_between(from: Instant, to: Instant) -> i64 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_micros() as i64,
        None => -(from.duration_since(to).as_micros() as i64),
    }
}

impl FakeClock {
    /// A clock file for `client` in `dir`, starting `offset_ms` from real time and running
    /// `drift_ppm` fast (negative: slow).
    pub fn new(dir: &Path, client: &str, offset_ms: i64, drift_ppm: i64) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let now = Instant::now();
        let clock = FakeClock {
            file: dir.join(format!("{client}.faketime")),
            base_offset_us: Cell::new(offset_ms.saturating_mul(1000)),
            base_at: Cell::new(now),
            drift_ppm: Cell::new(drift_ppm.max(-999_999)),
            process_start: Cell::new(now),
        };
        clock.write_at(now)?;
        Ok(clock)
    }

    /// The model's offset from real time at `at`, µs.
    fn offset_us_at(&self, at: Instant) -> i64 {
        let elapsed_us = micros_between(self.base_at.get(), at);
        self.base_offset_us.get() + (elapsed_us as i128 * self.drift_ppm.get() as i128 / 1_000_000) as i64
    }

    /// The file's text at `now`: libfaketime's offset (compensated for its rate reference, the
    /// process start) and, with drift, the rate.
    fn text_at(&self, now: Instant) -> String {
        let ppm = self.drift_ppm.get();
        let since_start_us = micros_between(self.process_start.get(), now);
        let file_offset_us = self.offset_us_at(now) - (since_start_us as i128 * ppm as i128 / 1_000_000) as i64;
        // Milliseconds, rounded to nearest.
        let ms = (file_offset_us + if file_offset_us < 0 { -500 } else { 500 }) / 1000;
        let sign = if ms < 0 { "-" } else { "+" };
        let offset = format!("{sign}{}.{:03}", ms.unsigned_abs() / 1000, ms.unsigned_abs() % 1000);
        if ppm == 0 {
            format!("{offset}\n")
        } else {
            let rate = 1_000_000 + ppm;
            format!("{offset} x{}.{:06}\n", rate / 1_000_000, rate % 1_000_000)
        }
    }

    fn write_at(&self, now: Instant) -> std::io::Result<()> {
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, self.text_at(now))?;
        std::fs::rename(&tmp, &self.file)
    }

    /// Re-bases the model at `now` (so that a change applies from now on).
    fn rebase(&self, now: Instant) {
        self.base_offset_us.set(self.offset_us_at(now));
        self.base_at.set(now);
    }

    /// Steps the client's wall clock by `delta_ms`.
    pub fn jump(&self, delta_ms: i64) -> std::io::Result<()> {
        let now = Instant::now();
        self.rebase(now);
        self.base_offset_us
            .set(self.base_offset_us.get() + delta_ms.saturating_mul(1000));
        self.write_at(now)
    }

    /// Sets the client's clock rate error to `drift_ppm` from now on (a `drift` fault).
    pub(crate) fn set_drift(&self, drift_ppm: i64) -> std::io::Result<()> {
        let now = Instant::now();
        self.rebase(now);
        self.drift_ppm.set(drift_ppm.max(-999_999));
        self.write_at(now)
    }

    /// True time 0 of the run: the scenario's offset holds now, and drift counts from here (as
    /// the simulated clock's does).
    pub(crate) fn start_run(&self, offset_ms: i64) -> std::io::Result<()> {
        let now = Instant::now();
        self.base_offset_us.set(offset_ms.saturating_mul(1000));
        self.base_at.set(now);
        self.write_at(now)
    }

    /// The client's process is being started (again): libfaketime's rate reference is now.
    pub(crate) fn process_started(&self) {
        let now = Instant::now();
        self.process_start.set(now);
        let _ = self.write_at(now);
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
        // The run's directory goes with its last clock (remove_dir fails while others remain).
        if let Some(dir) = self.file.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_holds_the_offset_in_seconds() {
        let dir = std::env::temp_dir().join(format!("lockstep-fakeclock-{}", std::process::id()));
        let clock = FakeClock::new(&dir, "c", 1500, 0).unwrap();
        assert_eq!(std::fs::read_to_string(&clock.file).unwrap(), "+1.500\n");
        clock.jump(-3000).unwrap();
        assert_eq!(std::fs::read_to_string(&clock.file).unwrap(), "-1.500\n");
        let env = clock.env(Path::new("/lib/f.so"));
        assert!(env.iter().any(|(k, v)| k == "LD_PRELOAD" && v == "/lib/f.so"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn drift_writes_a_rate_and_compensates_for_the_process_start() {
        let dir = std::env::temp_dir().join(format!("lockstep-fakeclock-drift-{}", std::process::id()));
        let clock = FakeClock::new(&dir, "d", 0, 500).unwrap();
        let t0 = clock.process_start.get();
        // 2 s after the process started, with the model at +3 s: libfaketime will add
        // 500 ppm × 2 s = 1 ms itself, so the file says 1 ms less.
        let at = t0 + std::time::Duration::from_secs(2);
        clock.base_offset_us.set(3_000_000);
        clock.base_at.set(at);
        assert_eq!(clock.text_at(at), "+2.999 x1.000500\n");
        // Slow clocks have a rate below 1; no drift writes no rate.
        clock.drift_ppm.set(-250);
        assert_eq!(clock.text_at(at), "+3.001 x0.999750\n");
        clock.drift_ppm.set(0);
        assert_eq!(clock.text_at(at), "+3.000\n");
        // The model keeps drifting from its base: 10 s at +1000 ppm is +10 ms.
        clock.drift_ppm.set(1000);
        assert_eq!(clock.offset_us_at(at + std::time::Duration::from_secs(10)), 3_010_000);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
