//! Client processes: the user's command, started in its own process group, spoken to over its
//! stdin and stdout, paused with SIGSTOP/SIGCONT and killed with SIGKILL — always the whole group,
//! so that a shell wrapper and whatever the adapter starts go too.
//!
//! A crash fault kills the group (SIGKILL) and a restart starts the same command again, with the
//! same name and environment, in a new group (`ClientProcess::respawn`); the [`GroupControl`]
//! shared with the fault schedule follows the new group.
//!
//! Nothing is left behind: a `ClientProcess` kills its group when dropped (at the end of a run,
//! on an error, and while a panic unwinds), and SIGINT/SIGTERM to lockstep kill every group still
//! registered before lockstep exits. stdout is read by one thread per client and handed to the
//! run's (single) thread over a channel; stderr is kept (its last lines go into error messages)
//! and, with `echo`, copied to lockstep's stderr prefixed with the client's name.
//!
//! Not even when lockstep is killed with SIGKILL, which it cannot catch (Linux): every process it
//! starts (`spawn_tied`, also the real `redis-server`s) has `PR_SET_PDEATHSIG` = SIGKILL, so the
//! kernel kills it when lockstep goes; and a guardian process forked at the first registration
//! (`register`) learns every process group over a pipe and, when the pipe's write end closes
//! because lockstep is gone, kills the groups still registered — what an adapter started in its
//! group (a shell's children, a library's helpers) has no death signal of its own.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{mpsc, Arc, Mutex, Once, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// What went wrong with a client process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessError {
    /// The command could not be started at all.
    #[error("{client}: the client command `{command}` could not be started: {reason}")]
    Spawn {
        /// The client.
        client: String,
        /// The command.
        command: String,
        /// The OS error.
        reason: String,
    },
    /// The process exited (or closed its stdout) while lockstep waited for a line.
    #[error("{client}: the client process exited ({status}) while lockstep waited for {waiting_for}{stderr}")]
    Exited {
        /// The client.
        client: String,
        /// Its exit status, as far as known.
        status: String,
        /// What lockstep was waiting for.
        waiting_for: String,
        /// The last lines of its stderr, formatted for the message.
        stderr: String,
    },
    /// No line came within the step timeout (time the process spent stopped does not count).
    #[error("{client}: {waiting_for} did not come within {timeout_ms} ms (the adapter hangs, or does not flush stdout{hint}){stderr}")]
    Timeout {
        /// The client.
        client: String,
        /// What lockstep was waiting for.
        waiting_for: String,
        /// The timeout.
        timeout_ms: u64,
        /// How to give it more time, when an option sets it (`; a slower adapter needs a larger
        /// --step-timeout-ms`), or empty.
        hint: &'static str,
        /// The last lines of its stderr.
        stderr: String,
    },
    /// The process wrote a stdout line lockstep cannot take: longer than `LINE_BYTES_MAX`, or
    /// not UTF-8.
    #[error("{client}: while lockstep waited for {waiting_for}, the client wrote {what}")]
    BadOutput {
        /// The client.
        client: String,
        /// What lockstep was waiting for.
        waiting_for: String,
        /// What was wrong with the line.
        what: String,
    },
    /// Writing a request to the process's stdin failed.
    #[error("{client}: could not write to the client process: {reason}")]
    Write {
        /// The client.
        client: String,
        /// The OS error.
        reason: String,
    },
}

/// How many process groups can be registered at once.
const GROUP_SLOTS: usize = 256;

/// Process groups to kill if lockstep is interrupted (0: free slot).
static GROUPS: [AtomicI32; GROUP_SLOTS] = [const { AtomicI32::new(0) }; GROUP_SLOTS];
static HANDLERS: Once = Once::new();

extern "C" fn on_signal(signal: libc::c_int) {
    // Said before anything else: the user pressed Ctrl-C and should know what became of the run.
    let said: &[u8] = match signal {
        libc::SIGINT => {
            b"lockstep live: interrupted (SIGINT): the client processes are killed; no report or history is written\n"
        }
        libc::SIGTERM => {
            b"lockstep live: terminated (SIGTERM): the client processes are killed; no report or history is written\n"
        }
        _ => b"lockstep live: hung up (SIGHUP): the client processes are killed; no report or history is written\n",
    };
    // SAFETY: write(2) is async-signal-safe; the buffer is static.
    unsafe {
        libc::write(2, said.as_ptr().cast(), said.len());
    }
    for slot in &GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill(2) is async-signal-safe; a stale pgid at worst fails with ESRCH.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
    // SAFETY: _exit(2) is async-signal-safe.
    unsafe { libc::_exit(128 + signal) }
}

fn install_handlers() {
    HANDLERS.call_once(|| {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the handler only calls async-signal-safe functions.
            unsafe {
                libc::signal(signal, on_signal as *const () as libc::sighandler_t);
            }
        }
    });
}

/// Registers a process group to kill if lockstep is interrupted, or killed (the guardian).
pub(crate) fn register(pgid: i32) {
    install_handlers();
    tell_guardian(pgid, true);
    for slot in &GROUPS {
        if slot
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

/// Forgets a process group (it is gone).
pub(crate) fn unregister(pgid: i32) {
    tell_guardian(pgid, false);
    for slot in &GROUPS {
        let _ = slot.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// Starts `cmd` so that it dies with lockstep, even with lockstep killed by SIGKILL (Linux): the
/// child asks for SIGKILL when its parent dies (`PR_SET_PDEATHSIG`, kept across `exec`), and
/// exits at once if lockstep already died between the fork and that request (its parent is then
/// another process: the usual race fix).
///
/// The kernel sends that signal when the *thread* that forked the child ends, not the process, so
/// the fork happens on a thread that lives as long as the process (a dedicated spawner thread): the run's
/// thread could end before a child it started (a library user's thread), and tokio's blocking
/// threads end when idle.
pub(crate) fn spawn_tied(mut cmd: Command) -> std::io::Result<Child> {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before `exec`; prctl(2) and getppid(2) are
        // async-signal-safe, and nothing is allocated (an OS error is a plain code).
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    match spawner_thread() {
        Some(requests) => {
            let (reply_tx, reply_rx) = mpsc::channel();
            let Ok(queue) = requests.lock() else {
                return Err(std::io::Error::other("the spawner thread's queue is poisoned"));
            };
            let sent = queue.send((cmd, reply_tx));
            drop(queue);
            match sent {
                Ok(()) => reply_rx
                    .recv()
                    .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread is gone"))),
                Err(mpsc::SendError((mut cmd, _))) => cmd.spawn(),
            }
        }
        // No thread could be started: this one will do (its children die when it ends).
        None => cmd.spawn(),
    }
}

/// A command to start and where to answer with the child.
type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// The queue of the thread every tied process is forked from: started once, it never ends (the
/// sender held here is never dropped), so `PR_SET_PDEATHSIG` fires only when the process ends.
fn spawner_thread() -> Option<&'static Mutex<mpsc::Sender<SpawnRequest>>> {
    static SPAWNER: OnceLock<Option<Mutex<mpsc::Sender<SpawnRequest>>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<SpawnRequest>();
            std::thread::Builder::new()
                .name("lockstep-spawner".to_string())
                .spawn(move || {
                    for (mut cmd, reply) in rx {
                        let _ = reply.send(cmd.spawn());
                    }
                })
                .ok()
                .map(|_| Mutex::new(tx))
        })
        .as_ref()
}

/// The write end of the pipe to the guardian, once started (`None`: it could not be).
static GUARDIAN: OnceLock<Option<OwnedFd>> = OnceLock::new();

/// Tells the guardian that group `pgid` exists (`alive`) or is gone. Started on first use.
fn tell_guardian(pgid: i32, alive: bool) {
    if pgid <= 0 {
        return;
    }
    let guardian = if alive {
        GUARDIAN.get_or_init(start_guardian)
    } else {
        match GUARDIAN.get() {
            Some(guardian) => guardian,
            None => return,
        }
    };
    if let Some(fd) = guardian {
        let record = if alive { pgid } else { -pgid }.to_ne_bytes();
        // SAFETY: write(2) of 4 bytes from a live buffer to a descriptor we own. The pipe is
        // non-blocking and 4 bytes are written whole or not at all (less than PIPE_BUF): a full
        // pipe (a stopped guardian) costs a registration, never a stall of the run.
        unsafe {
            libc::write(fd.as_raw_fd(), record.as_ptr().cast(), record.len());
        }
    }
}

/// Forks the guardian: a process of lockstep's own that kills every process group still
/// registered once lockstep is gone, however it went. It learns the groups over a pipe, one
/// native-endian `i32` per note (positive: registered, negative: gone), and lockstep's end is the
/// pipe's end (the kernel closes the write end when the process dies, SIGKILL included).
#[cfg(target_os = "linux")]
fn start_guardian() -> Option<OwnedFd> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2(2) fills both descriptors, which we own from here. Close-on-exec keeps the
    // write end out of the adapters: one holding it would keep the guardian waiting.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    let [read_end, write_end] = fds;
    // SAFETY: the child runs `guardian`, which only makes async-signal-safe system calls, allocates
    // nothing and never returns: what other threads held at the fork does not matter.
    match unsafe { libc::fork() } {
        0 => unsafe { guardian(read_end) },
        -1 => {
            // SAFETY: closing the two descriptors pipe2 gave us.
            unsafe {
                libc::close(read_end);
                libc::close(write_end);
            }
            None
        }
        _ => {
            // SAFETY: fcntl(2) and close(2) on descriptors we own; the write end is handed to an
            // OwnedFd that is never dropped (a static).
            unsafe {
                libc::close(read_end);
                let flags = libc::fcntl(write_end, libc::F_GETFL);
                libc::fcntl(write_end, libc::F_SETFL, flags | libc::O_NONBLOCK);
                Some(OwnedFd::from_raw_fd(write_end))
            }
        }
    }
}

/// Without Linux's `pipe2`/death signal the guardian is not started (SIGINT/SIGTERM still kill
/// every group).
#[cfg(not(target_os = "linux"))]
fn start_guardian() -> Option<OwnedFd> {
    None
}

/// The guardian's life, in the forked child: only async-signal-safe calls, no allocation.
///
/// # Safety
/// Call only in a freshly forked child; it never returns.
#[cfg(target_os = "linux")]
unsafe fn guardian(read_end: libc::c_int) -> ! {
    // SAFETY (whole body): plain system calls on our own descriptors and fixed-size stack buffers.
    unsafe {
        // Its own session and no terminal signals: a Ctrl-C or a kill of lockstep's process group
        // must not take the guardian first (lockstep's handlers kill the groups then anyway).
        libc::setsid();
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE] {
            libc::signal(signal, libc::SIG_IGN);
        }
        // Hold nothing of lockstep's: not its listening sockets, not its pipes to the adapters
        // (their ends would stay open), not its terminal, not its working directory.
        close_all_but(read_end);
        libc::chdir(c"/".as_ptr());
        let mut groups = [0i32; GROUP_SLOTS];
        let mut buf = [0u8; 1024];
        let mut have = 0usize;
        loop {
            let n = libc::read(read_end, buf.as_mut_ptr().add(have).cast(), buf.len() - have);
            if n < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                break;
            }
            if n == 0 {
                break;
            }
            have += n as usize;
            let whole = have - have % 4;
            for record in buf[..whole].chunks_exact(4) {
                let pgid = i32::from_ne_bytes([record[0], record[1], record[2], record[3]]);
                if pgid > 0 {
                    if let Some(slot) = groups.iter_mut().find(|g| **g == 0) {
                        *slot = pgid;
                    }
                } else {
                    for slot in groups.iter_mut().filter(|g| **g == pgid.wrapping_neg()) {
                        *slot = 0;
                    }
                }
            }
            buf.copy_within(whole..have, 0);
            have -= whole;
        }
        // lockstep is gone: so go its groups (a stopped one too: SIGKILL needs no SIGCONT).
        for &pgid in &groups {
            if pgid > 0 {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        libc::_exit(0)
    }
}

/// Closes every descriptor but `keep`: close_range(2) (Linux 5.9), else one by one up to the
/// descriptor limit.
///
/// # Safety
/// Only in the guardian: it closes descriptors other code may think it owns.
#[cfg(target_os = "linux")]
unsafe fn close_all_but(keep: libc::c_int) {
    // SAFETY: system calls on descriptor numbers only.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 16) as libc::c_int
        } else {
            1024
        };
        let close_range = |from: libc::c_int, to: libc::c_uint| {
            if libc::syscall(libc::SYS_close_range, from as libc::c_uint, to, 0 as libc::c_uint) != 0 {
                for fd in from..(to.min(max as libc::c_uint) as libc::c_int).saturating_add(1) {
                    libc::close(fd);
                }
            }
        };
        if keep > 0 {
            close_range(0, (keep - 1) as libc::c_uint);
        }
        close_range(keep + 1, libc::c_uint::MAX);
    }
}

/// Sends `signal` to the process group `pgid`; whether it was delivered.
fn signal_group(pgid: i32, signal: libc::c_int) -> bool {
    // SAFETY: plain kill(2) on a process group we created.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// One read from a client's stdout: a line, a line it cannot take (why), or the end.
enum Line {
    Text(String),
    Bad(String),
    End,
}

/// How much of each kept stderr line an error message quotes, in characters.
const STDERR_LINE_CHARS: usize = 400;

/// The longest line read from a client (stdout answers and stderr alike): an adapter writing
/// without a newline must not grow lockstep's memory without bound.
pub(crate) const LINE_BYTES_MAX: usize = 1 << 20;

/// Reads one `\n`-terminated line of at most `max` bytes into `buf` (without the newline).
/// `Ok(false)` at the end of input; a longer line is read past and reported as `InvalidData`.
fn read_line_bounded(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<bool> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            if too_long {
                return Err(std::io::Error::new(ErrorKind::InvalidData, "too long"));
            }
            return Ok(!buf.is_empty());
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (&available[..at], Some(at + 1)),
            None => (available, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            if too_long {
                return Err(std::io::Error::new(ErrorKind::InvalidData, "too long"));
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(true);
        }
    }
}

/// One running client process.
pub(crate) struct ClientProcess {
    name: String,
    command: String,
    env: Vec<(String, String)>,
    echo: bool,
    child: Child,
    pgid: i32,
    stdin: Option<ChildStdin>,
    lines: UnboundedReceiver<Line>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    control: GroupControl,
}

/// Pauses, resumes, kills and asks to restart a client's process group; shared with the fault
/// schedule while the client's driver owns the process (and respawns it).
#[derive(Debug, Clone)]
pub struct GroupControl {
    pgid: Rc<Cell<i32>>,
    paused: Rc<Cell<bool>>,
    crashed: Rc<Cell<bool>>,
    restarts_requested: Rc<Cell<u32>>,
}

impl GroupControl {
    /// Stops the whole process group (SIGSTOP).
    pub fn pause(&self) -> bool {
        self.paused.set(true);
        signal_group(self.pgid.get(), libc::SIGSTOP)
    }

    /// Continues the process group (SIGCONT).
    pub(crate) fn resume(&self) -> bool {
        self.paused.set(false);
        signal_group(self.pgid.get(), libc::SIGCONT)
    }

    /// Whether a pause fault has it stopped.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.get()
    }

    /// Kills the whole process group (SIGKILL, a stopped one too): a crash fault. The driver
    /// notices, ends the request in flight as unknown, and waits for a restart.
    pub fn crash(&self) -> bool {
        self.paused.set(false);
        self.crashed.set(true);
        signal_group(self.pgid.get(), libc::SIGKILL)
    }

    /// Whether a crash fault killed the process (until it is started again).
    pub(crate) fn is_crashed(&self) -> bool {
        self.crashed.get()
    }

    /// A restart fault: kills the process if it still runs, and asks the driver to start the
    /// command again.
    pub(crate) fn request_restart(&self) {
        if !self.crashed.get() {
            self.crash();
        }
        self.restarts_requested.set(self.restarts_requested.get() + 1);
    }

    /// How many restarts the fault schedule has asked for so far.
    pub(crate) fn restarts_requested(&self) -> u32 {
        self.restarts_requested.get()
    }
}

/// What a started process is made of.
struct Started {
    child: Child,
    pgid: i32,
    stdin: Option<ChildStdin>,
    lines: UnboundedReceiver<Line>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

/// The number of stderr lines kept for error messages.
const STDERR_KEPT: usize = 12;

impl ClientProcess {
    /// Starts `command` with `sh -c` in a new process group, with `env` added to its environment.
    pub fn spawn(name: &str, command: &str, env: &[(String, String)], echo: bool) -> Result<Self, ProcessError> {
        let started = Self::start(name, command, env, echo)?;
        Ok(ClientProcess {
            name: name.to_string(),
            command: command.to_string(),
            env: env.to_vec(),
            echo,
            stdin: started.stdin,
            child: started.child,
            pgid: started.pgid,
            lines: started.lines,
            stderr: started.stderr,
            control: GroupControl {
                pgid: Rc::new(Cell::new(started.pgid)),
                paused: Rc::new(Cell::new(false)),
                crashed: Rc::new(Cell::new(false)),
                restarts_requested: Rc::new(Cell::new(0)),
            },
        })
    }

    /// Starts the command again after a crash: the old group is killed (if anything of it is
    /// left) and reaped, and the same command with the same environment runs in a new group,
    /// which the shared [`GroupControl`] now addresses.
    pub(crate) fn respawn(&mut self) -> Result<(), ProcessError> {
        self.kill();
        let started = Self::start(&self.name, &self.command, &self.env, self.echo)?;
        self.child = started.child;
        self.pgid = started.pgid;
        self.stdin = started.stdin;
        self.lines = started.lines;
        self.stderr = started.stderr;
        self.control.pgid.set(started.pgid);
        self.control.crashed.set(false);
        Ok(())
    }

    fn start(name: &str, command: &str, env: &[(String, String)], echo: bool) -> Result<Started, ProcessError> {
        install_handlers();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(command)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = spawn_tied(cmd).map_err(|e| ProcessError::Spawn {
            client: name.to_string(),
            command: command.to_string(),
            reason: e.to_string(),
        })?;
        let pgid = child.id() as i32;
        register(pgid);
        let (tx, rx) = unbounded_channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                let (mut reader, mut buf) = (BufReader::new(stdout), Vec::new());
                loop {
                    let line = match read_line_bounded(&mut reader, &mut buf, LINE_BYTES_MAX) {
                        Ok(false) => break,
                        Ok(true) => match String::from_utf8(std::mem::take(&mut buf)) {
                            Ok(text) => Line::Text(text),
                            Err(_) => Line::Bad("a line that is not valid UTF-8".to_string()),
                        },
                        Err(e) if e.kind() == ErrorKind::InvalidData => {
                            Line::Bad(format!("a line longer than {LINE_BYTES_MAX} bytes"))
                        }
                        Err(_) => break,
                    };
                    if tx.send(line).is_err() {
                        return;
                    }
                }
                let _ = tx.send(Line::End);
            });
        }
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(err) = child.stderr.take() {
            let kept = stderr.clone();
            let prefix = name.to_string();
            std::thread::spawn(move || {
                let (mut reader, mut buf) = (BufReader::new(err), Vec::new());
                // A line past the cap is kept as a note; invalid UTF-8 is shown lossily.
                loop {
                    let line = match read_line_bounded(&mut reader, &mut buf, LINE_BYTES_MAX) {
                        Ok(false) => break,
                        Ok(true) => String::from_utf8_lossy(&buf).into_owned(),
                        Err(e) if e.kind() == ErrorKind::InvalidData => {
                            format!("(a line longer than {LINE_BYTES_MAX} bytes, not kept)")
                        }
                        Err(_) => break,
                    };
                    if echo {
                        crate::emit::stderr_line(&format!("[{prefix}] {line}"));
                    }
                    if let Ok(mut kept) = kept.lock() {
                        if kept.len() == STDERR_KEPT {
                            kept.pop_front();
                        }
                        // An error message quotes these: a few hundred characters of each.
                        kept.push_back(match line.char_indices().nth(STDERR_LINE_CHARS) {
                            Some((at, _)) => format!("{}… ({} bytes)", &line[..at], line.len()),
                            None => line,
                        });
                    }
                }
            });
        }
        Ok(Started {
            stdin: child.stdin.take(),
            child,
            pgid,
            lines: rx,
            stderr,
        })
    }

    /// The client's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The last lines of its stderr, as `\n  stderr: ...` lines (empty when it wrote none).
    fn stderr_tail(&self) -> String {
        // Give the stderr thread a moment to catch up with a process that just died.
        std::thread::sleep(Duration::from_millis(50));
        let kept = self.stderr.lock().map(|k| k.clone()).unwrap_or_default();
        kept.iter().map(|l| format!("\n  stderr: {l}")).collect()
    }

    fn exit_status(&mut self) -> String {
        for _ in 0..20 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.to_string();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        "still running, stdout closed".to_string()
    }

    /// Writes one line to the process's stdin.
    pub fn send(&mut self, line: &str) -> Result<(), ProcessError> {
        let result = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(line.as_bytes()).and_then(|()| stdin.flush()),
            None => Err(std::io::Error::other("stdin closed")),
        };
        result.map_err(|e| ProcessError::Write {
            client: self.name.clone(),
            reason: e.to_string(),
        })
    }

    /// Waits for the next stdout line. `timeout_ms` counts only time the process was not
    /// stopped by a pause fault.
    pub async fn recv(&mut self, waiting_for: &str, timeout_ms: u64) -> Result<String, ProcessError> {
        let slice = Duration::from_millis(20);
        let mut active = Duration::ZERO;
        let mut last = Instant::now();
        loop {
            match tokio::time::timeout(slice, self.lines.recv()).await {
                Ok(Some(Line::Text(line))) => return Ok(line),
                Ok(Some(Line::Bad(what))) => {
                    return Err(ProcessError::BadOutput {
                        client: self.name.clone(),
                        waiting_for: waiting_for.to_string(),
                        what,
                    })
                }
                Ok(Some(Line::End)) | Ok(None) if self.control.is_crashed() => {
                    // Killed by a crash fault: no need to wait for its status or its stderr.
                    return Err(ProcessError::Exited {
                        client: self.name.clone(),
                        status: "killed by a crash fault".to_string(),
                        waiting_for: waiting_for.to_string(),
                        stderr: String::new(),
                    });
                }
                Ok(Some(Line::End)) | Ok(None) => {
                    return Err(ProcessError::Exited {
                        client: self.name.clone(),
                        status: self.exit_status(),
                        waiting_for: waiting_for.to_string(),
                        stderr: self.stderr_tail(),
                    })
                }
                Err(_) => {
                    let now = Instant::now();
                    if !self.control.is_paused() {
                        active += now - last;
                    }
                    last = now;
                    if active >= Duration::from_millis(timeout_ms) {
                        return Err(ProcessError::Timeout {
                            client: self.name.clone(),
                            waiting_for: waiting_for.to_string(),
                            timeout_ms,
                            hint: "",
                            stderr: self.stderr_tail(),
                        });
                    }
                }
            }
        }
    }

    /// The handle that pauses and resumes it.
    pub fn control(&self) -> GroupControl {
        self.control.clone()
    }

    /// Asks it to quit (closes stdin after `line`), waits up to `grace`, then kills the group.
    pub fn shutdown(&mut self, quit_line: &str, grace: Duration) {
        if self.control.is_paused() {
            self.control.resume();
        }
        let _ = self.send(quit_line);
        self.stdin = None;
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
    }

    /// Kills the whole group (SIGKILL) and reaps the child.
    pub fn kill(&mut self) {
        signal_group(self.pgid, libc::SIGKILL);
        let _ = self.child.wait();
        unregister(self.pgid);
    }
}

impl Drop for ClientProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::read_line_bounded;
    use std::io::{BufReader, ErrorKind};

    /// Every line of `input` read with a cap of `max` bytes and a tiny buffer (lines span reads).
    fn lines(input: &[u8], max: usize) -> Vec<Result<String, ErrorKind>> {
        let mut reader = BufReader::with_capacity(3, input);
        let (mut buf, mut out) = (Vec::new(), Vec::new());
        loop {
            match read_line_bounded(&mut reader, &mut buf, max) {
                Ok(false) => return out,
                Ok(true) => out.push(Ok(String::from_utf8(buf.clone()).unwrap())),
                Err(e) => out.push(Err(e.kind())),
            }
        }
    }

    #[test]
    fn lines_are_read_up_to_the_cap_and_a_longer_one_is_skipped_and_reported() {
        assert_eq!(
            lines(b"ab\r\ncd\n\nlast", 8),
            [Ok("ab".into()), Ok("cd".into()), Ok(String::new()), Ok("last".into())]
        );
        assert_eq!(
            lines(b"12345678\n123456789\nok\n", 8),
            [Ok("12345678".into()), Err(ErrorKind::InvalidData), Ok("ok".into())]
        );
        // No newline at all, past the cap: reported once, at the end, without holding it.
        assert_eq!(lines(&[b'x'; 100], 8), [Err(ErrorKind::InvalidData)]);
        assert!(lines(b"", 8).is_empty());
    }
}
