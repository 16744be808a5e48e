//! `lockstep serve`: lockstep's Redis served on its own, on 127.0.0.1, for any client's own test
//! suite — with the faults of a scenario file, on purpose.
//!
//! The servers are a live run's ([`super::deploy`]): lockstep's Redis engine (RESP2 and RESP3,
//! Lua, expiry, persistence and crash semantics), replicas with their lag and Sentinel, the fenced
//! resource, each server with its own clock (the scenario's offset and drift, stepped by
//! `clock-jump` faults). What a live run adds — client processes and the workload — is left out:
//! the clients are whatever connects. A scenario file gives the masters, their deployment and the
//! fault plan, applied at its real times from the start; its `[[client]]` entries name sets of
//! ports (one per server), so that a `partition`, `hold`, `latency` or `loss` between a client
//! name and a master acts on the connections made to that client's ports. Faults that act on a
//! client process (its pause, crash, restart or clock) are refused: there is none.
//!
//! It runs until SIGINT or SIGTERM, or `--duration-ms`, then writes the history (every command
//! with its reply, expiry and fault; one JSON event per line) to `--history`, and with
//! `--report OUT` the report directory a live run writes (`report.json`, `summary.md`,
//! `index.html`, `runs/NAME/history.jsonl` and `timeline.html`, plus `serve.json`): the lock
//! operations the commands imply ([`super::grants`]) judged by the checkers that apply to them,
//! the faults at their times, and which test each fault hit — a client labels its connection
//! with `ECHO lockstep:test:NAME` ([`super::recorder::TEST_MARKER`]). Real time: nothing here is
//! reproducible but the fault plan.
//!
//! **Stopping.** Signals are watched on a thread of their own (`watchdog`), so a serving thread
//! stuck in a long command (a script looping inside a built-in) or flooded by a client cannot
//! delay them: the serving loop is told at once and normally stops within milliseconds; if it
//! has not taken over the writing within [`GRACE_MS`], the watchdog writes the history and the
//! report itself from the shared history and exits. **The history is capped**
//! (`--history-max-mb`, `--history-max-events`): past the cap events are dropped and a `dropped`
//! note says how many and from when ([`super::recorder`]).

use super::control::Controller;
use super::deploy;
use super::faults::{self, Targets};
use super::junit_in::CaseResult;
use super::output::{LiveSummary, Render};
use super::recorder::{HistoryCap, LiveRecorder, SharedHistory};
use super::replication::LiveReplication;
use super::serve_notes::{JunitNotes, ServeNotes, SuiteEnd, SuiteNotes};
use super::{grants, LiveError, LiveOptions, LiveRun};
use crate::app::AppError;
use crate::run::expect::Outcome;
use crate::run::RESOURCE_NODE;
use crate::scenario::Scenario;
use lockstep_sim::{EventKind, History};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

/// A fault timed from a test's start: the test's name and the fault, `at_ms` after its label.
pub type RelativeFault = (String, lockstep_sim::ScheduledFault);

/// The most masters `--masters` deploys.
pub(crate) const MASTERS_MAX: u16 = 64;

/// How long the serving thread has, after a signal, to take over writing the history before the
/// watchdog writes it itself, ms.
pub const GRACE_MS: u64 = 1_000;

/// `--history-max-mb`'s default: the history's estimated size in memory, MiB.
pub const HISTORY_MAX_MB: u64 = 128;

/// `--history-max-events`'s default.
pub const HISTORY_MAX_EVENTS: u64 = 250_000;

/// `lockstep serve`'s arguments.
#[derive(Debug, Clone, clap::Args)]
#[command(
    about = "Serve lockstep's simulated Redis on 127.0.0.1 for any client's own tests, with a scenario's \
             faults. Runs until SIGINT/SIGTERM or --duration-ms. Exit 0: stopped; 2: bad input"
)]
pub struct ServeArgs {
    /// A scenario file: its masters, replicas, clocks, persistence and fault plan (its clients name
    /// sets of ports; its lock, workload and expectations are not used). Without it: `--masters`
    /// masters and no faults.
    pub file: Option<PathBuf>,
    /// How many masters to serve without a scenario file (`redis-1`, `redis-2`, ...).
    #[arg(long, default_value_t = 1, conflicts_with = "file",
          value_parser = clap::value_parser!(u16).range(1..=i64::from(MASTERS_MAX)))]
    pub masters: u16,
    /// Listen on consecutive ports from this one (the masters in order, then the resource; per
    /// client of the file). Default: free ports, printed at start.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// Stop after this many ms (default: at SIGINT or SIGTERM).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub duration_ms: Option<u64>,
    /// Write the history here on exit, one JSON event per line.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Write a report directory here on exit, as `lockstep live --report` does: the history, the
    /// timeline (faults and test labels at their times), the checkers' verdicts over the lock
    /// operations the commands imply, and which test each fault hit (serve.json).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Keep at most this many MiB of history in memory (estimated); later events are dropped and
    /// counted (faults are always kept).
    #[arg(long, default_value_t = HISTORY_MAX_MB, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub history_max_mb: u64,
    /// Keep at most this many events of history; later events are dropped and counted.
    #[arg(long, default_value_t = HISTORY_MAX_EVENTS, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub history_max_events: u64,
    /// Stop a script still running after this many milliseconds of wall time (`ERR Script
    /// killed: it ran past the wall-clock guard`): every client is served from one thread, so
    /// no script may stall the others longer. A last resort behind the instruction budget,
    /// which stops runaway scripts first; Redis' own bound is `busy-reply-threshold` (5 s).
    #[arg(long, default_value_t = super::SCRIPT_GUARD_MS, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub script_guard_ms: u64,
    /// Let tests inject faults: `LOCKSTEP FAULT ...` on any master's connection, and the HTTP
    /// control endpoint on 127.0.0.1 (`POST /fault`, `POST /label`; its URL printed at start and
    /// given to the suite as `LOCKSTEP_CONTROL_URL`). `SHUTDOWN`, `DEBUG SLEEP`, `CLIENT PAUSE`,
    /// `CLIENT KILL`, `ROLE`, `FAILOVER` and `REPLICAOF NO ONE` are answered without it.
    #[arg(long)]
    pub control: bool,
    /// The HTTP control endpoint's port (default: a free one). Needs --control.
    #[arg(long, requires = "control", value_parser = clap::value_parser!(u16).range(1..))]
    pub control_port: Option<u16>,
    /// A master the test stopped (`SHUTDOWN`, `LOCKSTEP FAULT crash`, `POST /fault`) starts again
    /// this many ms later (after its restart delay).
    #[arg(long, default_value_t = super::control::RESTART_AFTER_MS, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub restart_after_ms: u64,
    /// A master the test stopped stays down until a `restart` fault.
    #[arg(long)]
    pub no_restart: bool,
    /// The JUnit XML file the suite writes (e.g. pytest's `--junitxml`, mocha's `mocha-junit-reporter`):
    /// read once it exits, for each test's result. Needs a suite after `--`.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// The test suite to run against the servers, after `--`: started once they listen, with
    /// `REDIS_URL`, `REDIS_HOST`, `REDIS_PORT`, `LOCKSTEP_REDIS_URLS` (every master),
    /// `LOCKSTEP_RESOURCE_URL` and with --control `LOCKSTEP_CONTROL_URL` set; serve stops when it
    /// exits, and the report's headline says its result beside lockstep's verdicts. Exit 1 when
    /// the suite failed or a safety checker is invalid.
    #[arg(last = true, value_name = "SUITE")]
    pub suite: Vec<String>,
}

impl ServeArgs {
    /// The control settings these arguments give.
    fn control_settings(&self) -> super::control::ControlSettings {
        super::control::ControlSettings {
            lockstep_commands: self.control,
            restart_after_ms: (!self.no_restart).then_some(self.restart_after_ms),
        }
    }
}

/// The scenario `args` asks for.
fn scenario_of(args: &ServeArgs) -> Result<(Scenario, Vec<RelativeFault>), AppError> {
    match &args.file {
        Some(path) => Scenario::from_file_serve(path).map_err(|e| AppError::BadInput(e.to_string())),
        None => {
            // The standard template's deployment, with one client name (`app`): one port per
            // server. Its lock and workload are not used.
            let mut scenario = crate::scenario::standard::standard_template(
                crate::model::Algorithm::Naive,
                crate::model::Fencing::None,
                lockstep_sim::FencingMode::Unfenced,
                1,
            )
            .map_err(|e| AppError::BadInput(format!("the built-in serve scenario: {e}")))?;
            scenario.name = "serve".to_string();
            scenario.clients.truncate(1);
            scenario.clients[0].name = "app".to_string();
            let first = scenario.masters[0].clone();
            let setup = scenario.master_setup(&first.name);
            scenario.masters.clear();
            scenario.deployment.clear();
            for i in 1..=args.masters {
                let mut master = first.clone();
                master.name = format!("redis-{i}");
                scenario.deployment.insert(master.name.clone(), setup.clone());
                scenario.masters.push(master);
            }
            Ok((scenario, Vec::new()))
        }
    }
}

/// Why `scenario` cannot be served (`None`: it can): a fault on a client process, or one a live
/// run refuses.
fn refusal(scenario: &Scenario, file: &Path) -> Option<String> {
    let clients: Vec<&str> = scenario.clients.iter().map(|c| c.name.as_str()).collect();
    for (i, f) in scenario.faults.faults.iter().enumerate() {
        // A node fault acts on its subject; on a client, that is its process.
        if let Some(node) = f.fault.subject().filter(|n| clients.contains(n)) {
            return Some(
                crate::scenario::ScenarioError::at_field(
                    file,
                    &format!("fault[{i}]"),
                    format!(
                        "the {} fault at {} ms acts on client {node}'s process, and `lockstep serve` runs no \
                         clients (use `lockstep live` to run one under faults)",
                        f.fault.kind(),
                        f.at_ms
                    ),
                )
                .to_string(),
            );
        }
    }
    None
}

/// Who writes the outputs: nobody yet, the serving thread, or the watchdog.
const WRITER_NONE: u8 = 0;
const WRITER_MAIN: u8 = 1;
const WRITER_WATCHDOG: u8 = 2;

/// What the serving thread and the signal watchdog share.
struct Stop {
    /// The signal received (`None` before one).
    signal: std::sync::Mutex<Option<&'static str>>,
    /// Tells the serving loop a signal arrived.
    signalled: tokio::sync::Notify,
    /// Tells the watchdog the serving thread has written everything (it may end).
    finished: tokio::sync::Notify,
    /// Which thread writes the outputs ([`WRITER_NONE`], ...): the first to claim it.
    writer: AtomicU8,
}

impl Stop {
    fn new() -> Self {
        Stop {
            signal: std::sync::Mutex::new(None),
            signalled: tokio::sync::Notify::new(),
            finished: tokio::sync::Notify::new(),
            writer: AtomicU8::new(WRITER_NONE),
        }
    }

    /// Claims the writing of the outputs for `who`; false when the other thread has it.
    fn claim(&self, who: u8) -> bool {
        self.writer
            .compare_exchange(WRITER_NONE, who, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    fn signal(&self) -> Option<&'static str> {
        *self.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs `lockstep serve`: prints the addresses, serves until stopped, writes the history and the
/// report.
pub fn main(args: &ServeArgs, render: &(dyn Render + Sync)) -> Result<Outcome, AppError> {
    let (scenario, relative) = scenario_of(args)?;
    let shown = args
        .file
        .as_deref()
        .map_or_else(|| Path::new("lockstep serve").to_path_buf(), Path::to_path_buf);
    // Faults timed from a test are checked as the plan's are.
    let mut checked = scenario.clone();
    checked.faults.faults.extend(relative.iter().map(|(_, f)| f.clone()));
    if let Some(why) = refusal(&checked, &shown) {
        return Err(AppError::BadInput(why));
    }
    super::check_servers(&checked, false).map_err(|e| AppError::BadInput(e.located(&shown)))?;
    if args.junit.is_some() && args.suite.is_empty() {
        return Err(AppError::BadInput(
            "--junit: there is no suite to read it from (give the suite's command after `--`)".to_string(),
        ));
    }
    // The suite's JUnit file is read after the outputs are written: no output may be it.
    let inputs: Vec<PathBuf> = args.file.iter().chain(args.junit.iter()).cloned().collect();
    crate::app::files::check_outputs_spare_inputs(
        &inputs,
        &[("--history", args.history.as_deref())],
        &[("--report", args.report.as_deref())],
    )?;
    if let Some(history) = &args.history {
        render.check_file(history).map_err(AppError::BadInput)?;
    }
    if let Some(out) = &args.report {
        render.check_out(out).map_err(AppError::BadInput)?;
    }
    if let Some(base) = args.port {
        let needed = scenario.clients.len() * (scenario.masters.len() + 1);
        if usize::from(base) + needed - 1 > usize::from(u16::MAX) {
            return Err(AppError::BadInput(format!(
                "--port {base}: {needed} consecutive ports are needed, which run past 65535"
            )));
        }
    }
    let rec = LiveRecorder::with_cap(HistoryCap {
        events_max: Some(args.history_max_events),
        bytes_max: Some(args.history_max_mb.saturating_mul(1024 * 1024)),
    });
    let stop = Stop::new();
    let outputs = Outputs {
        args,
        scenario: &scenario,
        shown: &shown,
        render,
    };
    std::thread::scope(|scope| {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let shared = rec.shared();
        let (stop, outputs) = (&stop, &outputs);
        scope.spawn(move || watchdog(stop, shared, outputs, ready_tx));
        // Signals are caught before anything is served: a client that starts at the banner can
        // stop the server cleanly at once.
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(AppError::RunFailure(e)),
            Err(_) => return Err(AppError::RunFailure("the signal watchdog did not start".to_string())),
        }
        let result =
            serve_thread(&scenario, &relative, args, &rec, stop).map_err(|e| AppError::BadInput(e.located(&shown)));
        let served = match result {
            Ok(served) => served,
            Err(e) => {
                stop.finished.notify_one();
                return Err(e);
            }
        };
        if !stop.claim(WRITER_MAIN) {
            // The watchdog is writing the outputs, and ends the process when done.
            loop {
                std::thread::park();
            }
        }
        let written = outputs.write(&rec.shared(), served.stopped_by, None, served.suite.as_ref());
        stop.finished.notify_one();
        let written = written?;
        crate::emit::stdout(&(written.text + "\n")).map_err(AppError::Io)?;
        // With a suite, serve is its gate: the suite's result and lockstep's verdicts.
        Ok(match &served.suite {
            Some(suite) => Outcome::held_if(suite.passed() && written.clean),
            None => Outcome::Held,
        })
    })
}

/// What a serve did, once stopped.
struct Served {
    /// Why it stopped.
    stopped_by: &'static str,
    /// How the suite ended, when serve ran one.
    suite: Option<SuiteEnd>,
}

fn serve_thread(
    scenario: &Scenario,
    relative: &[RelativeFault],
    args: &ServeArgs,
    rec: &LiveRecorder,
    stop: &Stop,
) -> Result<Served, LiveError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LiveError::Runtime(e.to_string()))?;
    let local = tokio::task::LocalSet::new();
    // This thread serves every client: no script may hold it past the guard (never set in a
    // simulation, see `lockstep_sim::redis::set_wall_guard`).
    lockstep_sim::redis::set_wall_guard(Some(Duration::from_millis(args.script_guard_ms)));
    local.block_on(&runtime, serve_async(scenario, relative, args, rec, stop))
}

/// Watches SIGINT and SIGTERM on its own thread and runtime, so that a busy serving thread
/// cannot delay them: tells the serving loop, then gives it [`GRACE_MS`] to take over the
/// writing; past that, writes the outputs from the shared history itself and ends the process.
fn watchdog(
    stop: &Stop,
    shared: SharedHistory,
    outputs: &Outputs<'_>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot start the signal watchdog: {e}")));
            return;
        }
    };
    runtime.block_on(async {
        let signals = signal(tokio::signal::unix::SignalKind::interrupt())
            .and_then(|i| Ok((i, signal(tokio::signal::unix::SignalKind::terminate())?)));
        let (mut sigint, mut sigterm) = match signals {
            Ok(s) => s,
            Err(e) => {
                let _ = ready.send(Err(e.to_string()));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        let which = tokio::select! {
            biased;
            () = stop.finished.notified() => return,
            _ = sigint.recv() => "SIGINT",
            _ = sigterm.recv() => "SIGTERM",
        };
        let signalled_at = std::time::Instant::now();
        *stop.signal.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(which);
        stop.signalled.notify_one();
        tokio::select! {
            biased;
            () = stop.finished.notified() => return,
            () = tokio::time::sleep(Duration::from_millis(GRACE_MS)) => {}
        }
        if !stop.claim(WRITER_WATCHDOG) {
            // The serving thread is writing: let it finish.
            stop.finished.notified().await;
            return;
        }
        let busy = format!(
            "the serving thread was still busy {} ms after it (a long command or script)",
            signalled_at.elapsed().as_millis()
        );
        let code = match outputs.write(&shared, which, Some(&busy), None) {
            Ok(written) => {
                let _ = crate::emit::stdout(&(written.text + "\n"));
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        };
        std::process::exit(code);
    });
}

async fn serve_async(
    scenario: &Scenario,
    relative: &[RelativeFault],
    args: &ServeArgs,
    rec: &LiveRecorder,
    stop: &Stop,
) -> Result<Served, LiveError> {
    let mut next_port = args.port;
    let deployed = deploy::servers(scenario, rec, None, &mut next_port)?;
    let (links, addresses) = deploy::links(scenario, &deployed, &mut next_port, "--port").await?;
    let deploy::Servers { servers, repl, .. } = deployed;

    rec.start();
    rec.record(
        "world",
        EventKind::Note {
            text: format!("serve start seed={} (real time: not reproducible)", scenario.seed),
        },
    );
    let replication = Rc::new(LiveReplication::new(repl, servers.clone(), links.clone()));
    let ticker = deploy::spawn_ticker(&servers, &replication, rec);
    let targets = Rc::new(Targets {
        clients: BTreeMap::new(),
        servers: servers.clone(),
        links,
        client_clocks: BTreeMap::new(),
        replication,
    });
    // The first client's address of each server: what the suite and `ROLE` are told.
    let first_client = scenario.clients.first().map(|c| c.name.clone()).unwrap_or_default();
    let served_at: BTreeMap<String, String> = addresses
        .iter()
        .filter(|((c, _), _)| *c == first_client)
        .map(|((_, server), addr)| (server.clone(), addr.clone()))
        .collect();
    let redis: Vec<String> = servers
        .keys()
        .filter(|n| n.as_str() != RESOURCE_NODE)
        .cloned()
        .collect();
    let replicated: Vec<String> = scenario
        .masters
        .iter()
        .filter(|m| !scenario.replicas_of(&m.name).is_empty())
        .flat_map(|m| std::iter::once(m.name.clone()).chain(scenario.replicas_of(&m.name)))
        .collect();
    let clients: Vec<String> = scenario.clients.iter().map(|c| c.name.clone()).collect();
    let controller = Controller::new(
        rec.clone(),
        targets.clone(),
        args.control_settings(),
        &redis,
        &replicated,
        &clients,
        served_at.clone(),
    );
    for server in servers.values() {
        let weak: std::rc::Weak<dyn super::server::ControlCommands> = Rc::downgrade(&controller) as _;
        server.set_control(weak);
    }
    let mut control_url = None;
    let http_task = if args.control {
        let (listener, url) = super::control_http::bind(args.control_port.unwrap_or(0))
            .await
            .map_err(|e| LiveError::Runtime(format!("--control-port: cannot listen on 127.0.0.1: {e}")))?;
        control_url = Some(url);
        Some(tokio::task::spawn_local(super::control_http::serve(
            listener,
            controller.clone(),
            served_at.clone(),
        )))
    } else {
        None
    };
    let fault_task = tokio::task::spawn_local(faults::run_plan(rec.clone(), targets.clone(), scenario.faults.clone()));
    let relative_task = tokio::task::spawn_local(run_relative(rec.clone(), controller.clone(), relative.to_vec()));
    crate::emit::stdout(&banner(scenario, &addresses, args.duration_ms, control_url.as_deref()))
        .map_err(|e| LiveError::Runtime(format!("cannot write to standard output: {e}")))?;

    let until = async {
        match args.duration_ms {
            Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            None => std::future::pending().await,
        }
    };
    let mut suite = match args.suite.split_first() {
        Some((program, rest)) => {
            let env = suite_env(scenario, &served_at, control_url.as_deref());
            let child = tokio::process::Command::new(program)
                .args(rest)
                .envs(env)
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| LiveError::Runtime(format!("cannot start the suite `{}`: {e}", args.suite.join(" "))))?;
            rec.record(
                "world",
                EventKind::Note {
                    text: format!("suite started: {}", args.suite.join(" ")),
                },
            );
            Some(child)
        }
        None => None,
    };
    let suite_exit = async {
        match suite.as_mut() {
            Some(child) => child.wait().await.ok(),
            None => std::future::pending().await,
        }
    };
    let (stopped_by, status) = tokio::select! {
        biased;
        () = stop.signalled.notified() => (stop.signal().unwrap_or("a signal"), None),
        () = until => ("--duration-ms", None),
        status = suite_exit => ("the suite exited", status),
    };
    let suite_end = suite.map(|_| {
        let end = SuiteEnd::of(status);
        rec.record(
            "world",
            EventKind::Note {
                text: format!("suite ended: {}", end.describe()),
            },
        );
        end
    });
    fault_task.abort();
    relative_task.abort();
    if let Some(task) = http_task {
        task.abort();
    }
    ticker.abort();
    drop(controller);
    drop(targets);
    Ok(Served {
        stopped_by,
        suite: suite_end,
    })
}

/// The environment the suite runs with: where the servers are.
fn suite_env(
    scenario: &Scenario,
    served_at: &BTreeMap<String, String>,
    control_url: Option<&str>,
) -> Vec<(String, String)> {
    let mut env = Vec::new();
    let urls: Vec<String> = scenario
        .masters
        .iter()
        .filter_map(|m| served_at.get(&m.name))
        .map(|a| format!("redis://{a}/0"))
        .collect();
    if let Some(first) = scenario.masters.first().and_then(|m| served_at.get(&m.name)) {
        env.push(("REDIS_URL".to_string(), format!("redis://{first}/0")));
        if let Some((host, port)) = first.rsplit_once(':') {
            env.push(("REDIS_HOST".to_string(), host.to_string()));
            env.push(("REDIS_PORT".to_string(), port.to_string()));
        }
    }
    env.push(("LOCKSTEP_REDIS_URLS".to_string(), urls.join(" ")));
    if let Some(resource) = served_at.get(RESOURCE_NODE) {
        env.push(("LOCKSTEP_RESOURCE_URL".to_string(), format!("redis://{resource}/0")));
    }
    if let Some(url) = control_url {
        env.push(("LOCKSTEP_CONTROL_URL".to_string(), url.to_string()));
    }
    env
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Result<tokio::signal::unix::Signal, LiveError> {
    tokio::signal::unix::signal(kind).map_err(|e| LiveError::Runtime(format!("cannot catch signals: {e}")))
}

/// Everything the outputs are written from, by whichever thread writes them.
struct Outputs<'a> {
    args: &'a ServeArgs,
    scenario: &'a Scenario,
    shown: &'a Path,
    render: &'a (dyn Render + Sync),
}

/// What [`Outputs::write`] did: the console's closing line, and whether lockstep's checkers
/// found nothing (`false` too when a safety checker is invalid; `true` without `--report`,
/// nothing judged).
struct Written {
    text: String,
    clean: bool,
}

impl Outputs<'_> {
    /// Ends the history (stopped by `stopped_by`; `busy`: why the watchdog writes it; `suite`:
    /// how the suite ended) and writes `--history` and `--report`.
    fn write(
        &self,
        shared: &SharedHistory,
        stopped_by: &str,
        busy: Option<&str>,
        suite: Option<&SuiteEnd>,
    ) -> Result<Written, AppError> {
        let served_ms = shared.now_us() / 1000;
        let end = match busy {
            Some(why) => format!("serve end ({stopped_by}; {why})"),
            None => format!("serve end ({stopped_by})"),
        };
        let Some((history, dropped)) = shared.finish(&end) else {
            return Err(AppError::RunFailure("the history was already written".to_string()));
        };
        let count = |kind: fn(&EventKind) -> bool| history.events().iter().filter(|e| kind(&e.kind)).count();
        let commands = count(|k| matches!(k, EventKind::Command { .. }));
        let faults = count(|k| matches!(k, EventKind::Fault { .. }));
        let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut text = format!(
            "stopped ({stopped_by}) after {:.1} s: {} served, {} applied",
            served_ms as f64 / 1000.0,
            plural(commands, "command", "commands"),
            plural(faults, "fault", "faults"),
        );
        if let Some(end) = suite {
            text.push_str(&format!(
                "; the suite {} ({})",
                if end.passed() { "passed" } else { "FAILED" },
                end.describe()
            ));
        }
        if dropped > 0 {
            text.push_str(&format!(
                "; {dropped} events dropped past the history cap (--history-max-mb {}, --history-max-events {})",
                self.args.history_max_mb, self.args.history_max_events
            ));
        }
        if let Some(path) = &self.args.history {
            let mut lines = String::new();
            for e in history.events() {
                lines.push_str(&e.canonical_json());
                lines.push('\n');
            }
            self.render.write_file(path, lines.as_bytes()).map_err(AppError::Io)?;
            drop(lines);
            text.push_str(&format!(
                "; history ({} events) written to {}",
                history.events().len(),
                path.display()
            ));
        }
        let mut clean = true;
        if let Some(out) = &self.args.report {
            let (headline, ok) = self.report(out, history, served_ms, stopped_by, dropped, suite)?;
            clean = ok;
            text.push_str(&format!("; report written to {}\n{headline}", out.display()));
        }
        Ok(Written { text, clean })
    }

    /// The suite's notes: its command, how it ended, and its JUnit file read.
    fn suite_notes(&self, end: &SuiteEnd) -> (SuiteNotes, Vec<super::junit_in::Case>) {
        let mut cases = Vec::new();
        let junit = self.args.junit.as_ref().map(|file| {
            let read = crate::scenario::read_limited(file, 64 * 1024 * 1024)
                .and_then(|b| String::from_utf8(b).map_err(|e| format!("not UTF-8: {e}")));
            match read {
                Ok(xml) => {
                    cases = super::junit_in::cases(&xml);
                    JunitNotes {
                        file: file.display().to_string(),
                        error: None,
                        tests: cases.len(),
                        failed: cases
                            .iter()
                            .filter(|c| matches!(c.result, CaseResult::Failed | CaseResult::Error))
                            .count(),
                        skipped: cases.iter().filter(|c| c.result == CaseResult::Skipped).count(),
                    }
                }
                Err(e) => JunitNotes {
                    file: file.display().to_string(),
                    error: Some(e),
                    tests: 0,
                    failed: 0,
                    skipped: 0,
                },
            }
        });
        let notes = SuiteNotes {
            command: self
                .args
                .suite
                .iter()
                .map(|w| crate::emit::shell_word(w))
                .collect::<Vec<_>>()
                .join(" "),
            end: end.clone(),
            junit,
        };
        (notes, cases)
    }

    /// Writes the report directory `out` of the served `history`; returns its headline and
    /// whether every safety checker held.
    fn report(
        &self,
        out: &Path,
        history: History,
        served_ms: u64,
        stopped_by: &str,
        dropped: u64,
        suite: Option<&SuiteEnd>,
    ) -> Result<(String, bool), AppError> {
        let masters: Vec<String> = self
            .scenario
            .masters
            .iter()
            .flat_map(|m| std::iter::once(m.name.clone()).chain(self.scenario.replicas_of(&m.name)))
            .collect();
        let inferred = grants::infer(&history, &masters);
        let commands = history
            .events()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Command { .. }))
            .count();
        // The report's scenario: the served one, with the holders as its clients (one lane per
        // test, see `grants`), and as its expectations the safety checkers it judges: a run whose
        // safety checker is invalid is never headlined PASS (issue 52).
        let mut scenario = self.scenario.clone();
        scenario.description = format!("{SERVED_DESCRIPTION} {}", scenario.description);
        scenario.expect = grants::CHECKERS
            .iter()
            .map(|c| (c.to_string(), crate::model::Verdict::Valid))
            .collect();
        if let Some(template) = scenario.clients.first().cloned() {
            if !inferred.holders.is_empty() {
                scenario.clients = inferred
                    .holders
                    .iter()
                    .map(|h| {
                        let mut c = template.clone();
                        c.name = h.clone();
                        c
                    })
                    .collect();
            }
        }
        let ops = crate::history::OpHistory::new(&inferred.history);
        let mut results: Vec<_> = crate::checker::check_all(&ops)
            .into_iter()
            .filter(|r| grants::CHECKERS.contains(&r.checker.as_str()))
            .collect();
        drop(ops);
        let clean = results.iter().all(|r| r.verdict != crate::model::Verdict::Invalid);
        let (suite_notes, cases) = match suite {
            Some(end) => {
                let (notes, cases) = self.suite_notes(end);
                (Some(notes), cases)
            }
            None => (None, Vec::new()),
        };
        let notes = ServeNotes::of(&history, stopped_by, served_ms, dropped, suite_notes, &results, &cases);
        drop(history);
        // No grant read off the commands: every safety verdict holds over an empty history, so
        // the report checked nothing and must not pass (issue 48: "✅ PASS — 0 checks passed"),
        // as `ci` fails a run in which no client got the lock.
        if inferred.grants == 0 {
            scenario
                .expect
                .insert(crate::scenario::LIVENESS.to_string(), crate::model::Verdict::Valid);
            results.push(crate::checker::CheckResult {
                checker: crate::scenario::LIVENESS.to_string(),
                verdict: crate::model::Verdict::Invalid,
                explanation: format!(
                    "no lock grant was read off the {} served: nothing was checked, the safety verdicts are \
                     vacuous (not a pass)",
                    match commands {
                        1 => "1 command".to_string(),
                        n => format!("{n} commands"),
                    }
                ),
                witness: Vec::new(),
            });
        }
        let client = "lockstep serve (any client that connected)".to_string();
        let server_failures = super::server_failures(&inferred.history);
        let headline = notes.headline(&results, inferred.grants);
        let grants = inferred.grants;
        let run = LiveRun {
            name: scenario.name.clone(),
            seed: scenario.seed,
            history: inferred.history,
            results,
            mismatches: Vec::new(),
            adapters: BTreeMap::from([("serve".to_string(), client.clone())]),
            clients_finished: true,
            end_ms: served_ms,
            addresses: BTreeMap::new(),
            server_failures,
        };
        let options = LiveOptions {
            client,
            ..LiveOptions::default()
        };
        let runs = [(run, served_ms as f64)];
        let mut summary: LiveSummary = super::output::summarize(self.shown, &scenario, &options, &runs);
        summary.note = "lockstep serve: any client's commands against servers on 127.0.0.1 in real time; the lock \
                        operations are read off the servers' commands (see serve.json); not reproducible"
            .to_string();
        // Real time: there is nothing to replay; the report offers none (issue 52).
        summary.rerun = String::new();
        // `serve.json` and the notes at the top of summary.md and index.html are built with the
        // report and swapped in with it (issue 48).
        let results = &runs[0].0.results;
        let extra = super::output::ReportExtra {
            files: vec![(
                "serve.json".to_string(),
                serde_json::to_string_pretty(&notes).unwrap_or_default().into_bytes(),
            )],
            summary_head: notes.markdown(results, grants),
            index_head: notes.html(results, grants),
        };
        self.render
            .write(out, self.shown, &scenario, &runs, &summary, &extra)
            .map_err(AppError::Io)?;
        Ok((headline, clean && suite.is_none_or(SuiteEnd::passed)))
    }
}

pub use crate::model::SERVED_DESCRIPTION;

/// Applies the faults timed from a test's start: each the first time its test is labelled, `at_ms`
/// after the label (recorded as a fault when it strikes; a refusal is a note).
async fn run_relative(rec: LiveRecorder, controller: Rc<Controller>, relative: Vec<RelativeFault>) {
    if relative.is_empty() {
        return;
    }
    let mut labels = rec.watch_labels();
    let mut fired = vec![false; relative.len()];
    while let Some(name) = labels.recv().await {
        for (i, (test, scheduled)) in relative.iter().enumerate() {
            let matches = name == *test
                || name
                    .strip_suffix(test.as_str())
                    .is_some_and(|head| head.ends_with([':', ' ', '.', '/', '#']));
            if fired[i] || !matches {
                continue;
            }
            fired[i] = true;
            let (rec, controller, fault, at_ms) = (
                rec.clone(),
                controller.clone(),
                scheduled.fault.clone(),
                scheduled.at_ms,
            );
            let test = test.clone();
            tokio::task::spawn_local(async move {
                tokio::time::sleep(Duration::from_millis(at_ms)).await;
                let injection = super::control::Injection {
                    fault,
                    restart_after_ms: Some(None),
                };
                if let Err(why) = controller.inject(&injection) {
                    rec.record(
                        "world",
                        EventKind::Note {
                            text: format!("fault after test {test} not applied: {why}"),
                        },
                    );
                }
            });
        }
    }
}

/// What is served where: one line per address (`SERVER ADDRESS`, with the client name when the
/// file has several), the fault plan, and how to stop.
fn banner(
    scenario: &Scenario,
    addresses: &BTreeMap<(String, String), String>,
    duration_ms: Option<u64>,
    control_url: Option<&str>,
) -> String {
    let masters = scenario.masters.len();
    let replicas: usize = scenario
        .masters
        .iter()
        .map(|m| scenario.replicas_of(&m.name).len())
        .sum();
    let mut text = format!(
        "lockstep serve: {masters} master{}{} (lockstep's simulated Redis 7.2, RESP2 and RESP3) and the fenced resource on 127.0.0.1\n",
        if masters == 1 { "" } else { "s" },
        match replicas {
            0 => String::new(),
            n => format!(" with {n} replica{}", if n == 1 { "" } else { "s" }),
        }
    );
    let several = scenario.clients.len() > 1;
    for client in &scenario.clients {
        for ((c, server), addr) in addresses.iter().filter(|((c, _), _)| *c == client.name) {
            let role = if server == RESOURCE_NODE {
                "  (FWRITE/FREAD)"
            } else {
                ""
            };
            match several {
                true => text.push_str(&format!("  {c}->{server:<10} {addr}{role}\n")),
                false => text.push_str(&format!("  {server:<10} {addr}{role}\n")),
            }
        }
    }
    if let Some(url) = control_url {
        text.push_str(&format!(
            "  control    {url}  (POST /fault, POST /label; LOCKSTEP FAULT on any master)\n"
        ));
    }
    let planned = scenario.faults.faults.len();
    text.push_str(&match planned {
        0 => "no faults planned\n".to_string(),
        n => format!(
            "{n} fault{} planned, from {} ms after start\n",
            if n == 1 { "" } else { "s" },
            scenario.faults.sorted().first().map_or(0, |f| f.at_ms)
        ),
    });
    text.push_str(&match duration_ms {
        Some(ms) => format!("serving for {ms} ms (or until SIGINT/SIGTERM)\n"),
        None => "serving until SIGINT (Ctrl-C) or SIGTERM\n".to_string(),
    });
    text
}
