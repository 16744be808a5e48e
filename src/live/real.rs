//! Real `redis-server` processes instead of lockstep's engine (`lockstep live --redis-server
//! PATH`): one per master, on 127.0.0.1, in its own process group, with the master's persistence
//! mode (`none`: `--save "" --appendonly no`; `aof-everysec` / `aof-always`: `--appendonly yes`
//! with that `appendfsync`) and its own data directory, removed at the end.
//!
//! A crash or power loss is SIGKILL of the process group; a shutdown is SIGTERM (Redis flushes
//! its AOF and exits); a restart starts the same command on the same port and waits until it
//! accepts connections. The server's clock is the machine's: clock faults on masters are refused.
//! lockstep does not see inside a real server: its commands and expiries are not in the history.

use lockstep_sim::Persistence;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One real Redis server.
pub(crate) struct RealRedis {
    binary: String,
    port: u16,
    dir: PathBuf,
    persistence: Persistence,
    child: Option<Child>,
}

impl RealRedis {
    /// Starts `binary` on 127.0.0.1:`port` for master `name`.
    pub fn start(binary: &str, name: &str, port: u16, persistence: Persistence) -> Result<Self, String> {
        let dir = std::env::temp_dir().join(format!("lockstep-live-{}-{name}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut real = RealRedis {
            binary: binary.to_string(),
            port,
            dir,
            persistence,
            child: None,
        };
        real.spawn()?;
        Ok(real)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn spawn(&mut self) -> Result<(), String> {
        let mut cmd = Command::new(&self.binary);
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""]);
        cmd.arg("--dir").arg(&self.dir);
        match self.persistence {
            Persistence::None => {
                cmd.args(["--appendonly", "no"]);
            }
            Persistence::AofEverysec => {
                cmd.args(["--appendonly", "yes", "--appendfsync", "everysec"]);
            }
            Persistence::AofAlways => {
                cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
            }
        }
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // Tied to lockstep: a SIGKILLed lockstep leaves no redis-server behind.
        let mut child =
            super::process::spawn_tied(cmd).map_err(|e| format!("cannot start redis-server `{}`: {e}", self.binary))?;
        super::process::register(child.id() as i32);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                self.child = Some(child);
                return Ok(());
            }
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                return Err(format!(
                    "redis-server `{}` on port {} exited ({status}): {}",
                    self.binary,
                    self.port,
                    err.trim()
                ));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err(format!(
                    "redis-server `{}` did not listen on port {} within 5 s",
                    self.binary, self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops it: SIGKILL (`clean == false`) or SIGTERM and a wait for its exit.
    pub fn stop(&mut self, clean: bool) {
        let Some(mut child) = self.child.take() else { return };
        let pgid = child.id() as i32;
        if clean {
            // SAFETY: kill(2) on the process group we created.
            unsafe {
                libc::kill(-pgid, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        // SAFETY: as above.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = child.wait();
        super::process::unregister(pgid);
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop(false);
        self.spawn()
    }

    /// Freezes (SIGSTOP) or thaws (SIGCONT) it.
    pub(crate) fn set_paused(&self, paused: bool) {
        if let Some(child) = &self.child {
            let signal = if paused { libc::SIGSTOP } else { libc::SIGCONT };
            // SAFETY: as above.
            unsafe {
                libc::kill(-(child.id() as i32), signal);
            }
        }
    }
}

impl Drop for RealRedis {
    fn drop(&mut self) {
        self.stop(false);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
