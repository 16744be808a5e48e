//! Live runs: a scenario in real time against unmodified lock clients in any language, as real
//! processes (`lockstep live FILE --client CMD`).
//!
//! The scenario's masters (lockstep's Redis engine: the same commands, Lua, expiry, persistence
//! and crash semantics) and its fenced resource are served on 127.0.0.1, each with its own clock
//! (real monotonic time plus the scenario's offset and drift, stepped by clock faults). Each
//! client is the user's command, started in its own process group with its name and the server
//! addresses in its environment; lockstep drives it one workload step at a time over a JSON-lines
//! protocol on its stdin and stdout ([`protocol`], documented in `docs/live.md`). Faults come from
//! the scenario's plan at their real times: SIGSTOP/SIGCONT pauses, server clock jumps, crashes and
//! restarts, network faults on each client↔server link ([`faults`]). Replicas are live servers
//! too, replicating after the scenario's lag and promoted by the Sentinel or a `failover` fault
//! with the simulation's rules; a promotion re-points the clients' address for the master to the
//! promoted replica ([`replication`]). The merged history has the same event shapes as a simulated
//! run's, so the same checkers judge it.
//!
//! Any local process can reach the ports and outlive lockstep: the servers read RESP as Redis does,
//! with its limits ([`resp`]), bound what every connection and the whole run buffer
//! ([`buffers`]), and every process lockstep starts dies with it, SIGKILL included ([`process`]).
//!
//! **Real time is the deliberate exception to determinism**: this module (and only it) reads
//! `std::time` and waits on tokio's real timers. Live runs are not reproducible; the fault plan
//! and its seed are. `--runs N` repeats a scenario and reports how often each verdict came out.
//!
//! Floor: application. It uses the scenario, lock-op vocabulary, checkers, timeline and report
//! types; nothing below imports it.

pub mod attribution;
pub mod buffers;
pub mod control;
pub mod control_http;
pub mod deploy;
pub mod driver;
pub mod fakeclock;
pub mod faults;
pub mod grants;
pub mod junit_in;
pub mod link;
pub mod output;
pub mod process;
pub mod protocol;
pub mod real;
pub mod recorder;
pub mod replication;
pub mod resp;
pub mod serve;
pub mod serve_notes;
pub mod server;

use crate::checker::{self, CheckResult};
use crate::model::Verdict;
use crate::run::{Mismatch, RESOURCE_NODE};
use crate::scenario::Scenario;
use driver::{Driver, DriverError, LivePlan};
use lockstep_sim::{EventKind, History};
use process::{ClientProcess, ProcessError};
use protocol::{parse_hello, Request};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use recorder::LiveRecorder;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// Why a live run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The scenario cannot run live (a refused fault, ...).
    #[error("{0}")]
    Unsupported(String),
    /// A setting of the scenario cannot run live; `field` (dotted) names it.
    #[error("field `{field}`: {message}")]
    Refused {
        /// The field, e.g. `topology.master[0].replicas` or `fault[2]`.
        field: String,
        /// Why.
        message: String,
    },
    /// A port could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {reason}{hint}")]
    Port {
        /// The port (0: a free one).
        port: u16,
        /// The OS error.
        reason: String,
        /// What to do about it.
        hint: String,
    },
    /// A client process misbehaved.
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// An adapter broke the protocol.
    #[error("{0}")]
    Protocol(String),
    /// The runtime could not be built.
    #[error("runtime: {0}")]
    Runtime(String),
}

impl LiveError {
    /// The message, positioned in the scenario file `file` (`file:line:column: field ...`) when
    /// it is about a setting.
    pub(crate) fn located(&self, file: &Path) -> String {
        match self {
            LiveError::Refused { field, message } => {
                crate::scenario::ScenarioError::at_field(file, field, message.clone()).to_string()
            }
            other => other.to_string(),
        }
    }
}

impl From<DriverError> for LiveError {
    fn from(e: DriverError) -> Self {
        match e {
            DriverError::Process(p) => LiveError::Process(p),
            garbage => LiveError::Protocol(garbage.to_string()),
        }
    }
}

/// How to run a scenario live.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// The command started for every client (through `sh -c`).
    pub client: String,
    /// Per-client commands overriding `client`.
    pub client_for: BTreeMap<String, String>,
    /// The first port to listen on (then consecutive ones); `None`: free ports.
    pub base_port: Option<u16>,
    /// How long an adapter may take for one step, ms (time stopped by a pause excluded).
    pub step_timeout_ms: u64,
    /// How long an adapter may take to say hello, ms.
    pub start_timeout_ms: u64,
    /// Copy the adapters' stderr to lockstep's stderr.
    pub echo_stderr: bool,
    /// Serve the masters with real `redis-server` processes (this binary) instead of the engine.
    pub redis_server: Option<String>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            client: String::new(),
            client_for: BTreeMap::new(),
            base_port: None,
            step_timeout_ms: 5_000,
            start_timeout_ms: 20_000,
            echo_stderr: false,
            redis_server: None,
        }
    }
}

/// One live run.
#[derive(Debug, Clone)]
pub struct LiveRun {
    /// The scenario's name.
    pub name: String,
    /// The fault plan's seed (the scenario's).
    pub seed: u64,
    /// The merged history.
    pub history: History,
    /// One result per checker, in [`checker::NAMES`] order.
    pub results: Vec<CheckResult>,
    /// Expectations that did not hold.
    pub mismatches: Vec<Mismatch>,
    /// What each adapter said it drives, by client.
    pub adapters: BTreeMap<String, String>,
    /// Whether every client finished before the scenario's duration ran out.
    pub clients_finished: bool,
    /// When the run ended, ms.
    pub end_ms: u64,
    /// The loopback addresses served, by `client->server`.
    pub addresses: BTreeMap<String, String>,
    /// Replies in which the server failed a client's command on one of lockstep's own bounds
    /// (a script stopped by the instruction budget, the Lua memory cap, a full script cache;
    /// [`lockstep_sim::redis::server_failure`]), counted by what failed. Any makes the run
    /// not as expected: its verdicts judge a server that broke, not the lock.
    pub server_failures: BTreeMap<String, u64>,
}

/// The name under which a run with server failures is listed in its mismatches.
pub const SERVER_FAILURE_CHECK: &str = "server";

/// The server failures among the replies `history` holds, counted by what failed.
fn server_failures(history: &History) -> BTreeMap<String, u64> {
    let mut failures = BTreeMap::new();
    for event in history.events() {
        if let EventKind::Command {
            reply, client: Some(_), ..
        } = &event.kind
        {
            if let Some(what) = reply.strip_prefix('-').and_then(lockstep_sim::redis::server_failure) {
                *failures.entry(what.to_string()).or_insert(0) += 1;
            }
        }
    }
    failures
}

impl LiveRun {
    /// The verdict of `checker`.
    pub fn verdict(&self, checker: &str) -> Option<Verdict> {
        self.results.iter().find(|r| r.checker == checker).map(|r| r.verdict)
    }

    /// Whether every expectation held (a server failing a command on its own bounds is a
    /// mismatch: [`LiveRun::server_failures`]).
    pub fn as_expected(&self) -> bool {
        self.mismatches.is_empty()
    }
}

/// Checks that `scenario` can run live at all (with real `redis-server`s when `real_redis`);
/// the error says why not.
pub(crate) fn check_supported(scenario: &Scenario, real_redis: bool) -> Result<(), LiveError> {
    let faketime = fakeclock::find().is_some();
    // The live driver runs the basic turn (one read, fixed work, one write, one task per
    // client): a file that asks for more would be judged against a workload it did not run.
    let defaults = crate::model::WorkloadSpec::defaults();
    let workload = &scenario.workload;
    let tasks = workload.tasks.is_some() || scenario.clients.iter().any(|c| c.tasks.is_some_and(|t| t != 1));
    for (field, differs) in [
        ("workload.work", workload.work != defaults.work),
        (
            "workload.refuse_write_after_validity",
            workload.refuse_write_after_validity != defaults.refuse_write_after_validity,
        ),
        (
            "workload.reads_per_turn",
            workload.reads_per_turn != defaults.reads_per_turn,
        ),
        (
            "workload.writes_per_turn",
            workload.writes_per_turn != defaults.writes_per_turn,
        ),
        ("workload.tasks", tasks),
    ] {
        if differs {
            return Err(LiveError::Refused {
                field: field.to_string(),
                message: "live runs drive one task per client through one read, fixed work and one write per \
                          turn; leave it at its default for `lockstep live`"
                    .to_string(),
            });
        }
    }
    for client in &scenario.clients {
        for (field, value) in [("drift_ppm", client.drift_ppm), ("offset_ms", client.offset_ms)] {
            if value != 0 && !faketime {
                return Err(LiveError::Unsupported(format!(
                    "client {} has {field} = {value}: a client's wall clock is set and skewed through \
                     libfaketime, which is not installed (apt-get install faketime, or set LOCKSTEP_LIBFAKETIME)",
                    client.name
                )));
            }
        }
    }
    check_servers(scenario, real_redis)
}

/// Checks that `scenario`'s servers and fault plan can be deployed live (with real
/// `redis-server`s when `real_redis`): the part of [`check_supported`] that `lockstep serve`
/// shares.
pub(crate) fn check_servers(scenario: &Scenario, real_redis: bool) -> Result<(), LiveError> {
    let clients: Vec<String> = scenario.clients.iter().map(|c| c.name.clone()).collect();
    let masters: Vec<String> = scenario.masters.iter().map(|m| m.name.clone()).collect();
    let faketime = fakeclock::find().is_some();
    let mut redis = Vec::new();
    let mut replicated = Vec::new();
    for (i, name) in masters.iter().enumerate() {
        redis.push(name.clone());
        let replicas = scenario.replicas_of(name);
        if replicas.is_empty() {
            continue;
        }
        if real_redis {
            return Err(LiveError::Refused {
                field: format!("topology.master[{i}].replicas"),
                message: format!(
                    "master {name} has replicas, which lockstep cannot deploy with --redis-server (a real \
                     redis-server's replication is not driven by the scenario's lag and Sentinel); leave \
                     --redis-server out to run replicas on lockstep's servers"
                ),
            });
        }
        replicated.push(name.clone());
        redis.extend(replicas.iter().cloned());
        replicated.extend(replicas);
    }
    let nodes = faults::LiveNodes {
        clients: &clients,
        redis: &redis,
        replicated: &replicated,
        resource: RESOURCE_NODE,
    };
    for (i, f) in scenario.faults.faults.iter().enumerate() {
        if real_redis {
            if let lockstep_sim::Fault::ClockJump { node, .. } | lockstep_sim::Fault::Drift { node, .. } = &f.fault {
                if masters.contains(node) {
                    return Err(LiveError::Unsupported(format!(
                        "the {} fault at {} ms cannot run with --redis-server: a real redis-server reads the \
                         machine's clock (leave --redis-server out to use lockstep's servers, whose clocks jump)",
                        f.fault.kind(),
                        f.at_ms
                    )));
                }
            }
        }
        if let Some(why) = faults::refusal(&f.fault, &nodes, faketime) {
            return Err(LiveError::Refused {
                field: format!("fault[{i}]"),
                message: format!("the {} fault at {} ms cannot run live: {why}", f.fault.kind(), f.at_ms),
            });
        }
    }
    Ok(())
}

/// A seed for one purpose of one run.
fn sub_seed(seed: u64, purpose: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{seed}/{purpose}").as_bytes());
    u64::from_le_bytes(digest[..8].try_into().unwrap_or([0; 8]))
}

/// The wall-clock guard of a script in `lockstep serve` (its default, `--script-guard-ms`) and
/// `lockstep live`, in milliseconds: Redis' `busy-reply-threshold`
/// (`lockstep_sim::redis::set_wall_guard`).
pub const SCRIPT_GUARD_MS: u64 = 5_000;

/// Runs `scenario` once, live. Builds its own single-threaded tokio runtime.
pub fn run_live(scenario: &Scenario, options: &LiveOptions) -> Result<LiveRun, LiveError> {
    check_supported(scenario, options.redis_server.is_some())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LiveError::Runtime(e.to_string()))?;
    let local = tokio::task::LocalSet::new();
    // The servers of a live run answer in real time on this thread: a script is stopped past
    // Redis' `busy-reply-threshold` (never in a simulation, see
    // `lockstep_sim::redis::set_wall_guard`).
    lockstep_sim::redis::set_wall_guard(Some(std::time::Duration::from_millis(SCRIPT_GUARD_MS)));
    local.block_on(&runtime, run_async(scenario, options))
}

struct Started {
    drivers: Vec<Driver>,
    adapters: BTreeMap<String, String>,
    client_clocks: BTreeMap<String, Rc<fakeclock::FakeClock>>,
}

/// Whether `client` needs a faked wall clock: an initial offset or drift, or a clock fault in
/// the plan.
fn needs_fake_clock(scenario: &Scenario, client: &crate::model::ClientSpec) -> bool {
    client.offset_ms != 0
        || client.drift_ppm != 0
        || scenario.faults.faults.iter().any(|f| {
            matches!(&f.fault, lockstep_sim::Fault::ClockJump { node, .. } | lockstep_sim::Fault::Drift { node, .. }
                if *node == client.name)
        })
}

/// How many `restart` faults the plan holds for `client`.
fn restarts_of(scenario: &Scenario, client: &str) -> u32 {
    scenario
        .faults
        .faults
        .iter()
        .filter(|f| matches!(&f.fault, lockstep_sim::Fault::Restart { node } if node == client))
        .count() as u32
}

async fn start_clients(
    scenario: &Scenario,
    options: &LiveOptions,
    rec: &LiveRecorder,
    addresses: &BTreeMap<(String, String), String>,
) -> Result<Started, LiveError> {
    let masters: Vec<String> = scenario.masters.iter().map(|m| m.name.clone()).collect();
    let fencing_master = masters
        .iter()
        .position(|m| *m == scenario.lock.fencing_master)
        .unwrap_or(0);
    let mut processes = Vec::new();
    let mut client_clocks = BTreeMap::new();
    for client in &scenario.clients {
        let addr = |server: &str| {
            addresses
                .get(&(client.name.clone(), server.to_string()))
                .cloned()
                .unwrap_or_default()
        };
        let lock = &scenario.lock;
        rec.add_clock(&client.name, client.offset_ms, client.drift_ppm);
        let mut env: Vec<(String, String)> = vec![
            ("LOCKSTEP_CLIENT".into(), client.name.clone()),
            (
                "LOCKSTEP_MASTERS".into(),
                masters.iter().map(|m| addr(m)).collect::<Vec<_>>().join(","),
            ),
            ("LOCKSTEP_MASTER_NAMES".into(), masters.join(",")),
            ("LOCKSTEP_RESOURCE".into(), addr(RESOURCE_NODE)),
            ("LOCKSTEP_ALGORITHM".into(), lock.algorithm.name().to_string()),
            ("LOCKSTEP_FENCING".into(), lock.fencing.name().to_string()),
            ("LOCKSTEP_FENCING_MASTER".into(), fencing_master.to_string()),
            ("LOCKSTEP_TTL_MS".into(), lock.ttl_ms.to_string()),
            (
                "LOCKSTEP_REQUEST_TIMEOUT_MS".into(),
                lock.request_timeout_ms.to_string(),
            ),
            (
                "LOCKSTEP_CONNECT_TIMEOUT_MS".into(),
                lock.connect_timeout_ms.to_string(),
            ),
            (
                "LOCKSTEP_RESOURCE_TIMEOUT_MS".into(),
                scenario.workload.resource_timeout_ms.to_string(),
            ),
            (
                "LOCKSTEP_SEED".into(),
                sub_seed(scenario.seed, &client.name).to_string(),
            ),
        ];
        if let crate::model::AlgorithmSpec::Redlock(redlock) = &lock.algorithm {
            env.extend([
                ("LOCKSTEP_RETRY_COUNT".to_string(), redlock.retry_count.to_string()),
                (
                    "LOCKSTEP_RETRY_DELAY_MS".to_string(),
                    redlock.retry_delay_ms.to_string(),
                ),
                (
                    "LOCKSTEP_RETRY_JITTER_MS".to_string(),
                    redlock.retry_jitter_ms.to_string(),
                ),
                ("LOCKSTEP_DRIFT_FACTOR".to_string(), redlock.drift_factor.to_string()),
            ]);
        }
        if needs_fake_clock(scenario, client) {
            let library = fakeclock::find()
                .ok_or_else(|| LiveError::Unsupported(format!("{}: libfaketime is not installed", client.name)))?;
            // One directory per run: runs in parallel threads of one process must not share files.
            static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("lockstep-live-{}-{run}-clocks", std::process::id()));
            let clock = fakeclock::FakeClock::new(&dir, &client.name, client.offset_ms, client.drift_ppm)
                .map_err(|e| LiveError::Unsupported(format!("{}: cannot write its clock file: {e}", client.name)))?;
            env.extend(clock.env(&library));
            client_clocks.insert(client.name.clone(), Rc::new(clock));
        }
        let command = options.client_for.get(&client.name).unwrap_or(&options.client);
        processes.push(ClientProcess::spawn(&client.name, command, &env, options.echo_stderr)?);
    }
    let mut adapters = BTreeMap::new();
    let mut drivers = Vec::new();
    for (mut process, client) in processes.into_iter().zip(&scenario.clients) {
        let line = process
            .recv("its hello line", options.start_timeout_ms)
            .await
            .map_err(LiveError::Process)?;
        let hello = parse_hello(&line).map_err(|reason| {
            LiveError::Protocol(format!(
                "{}: the adapter's first line is not a hello: {reason}: {line:?}",
                client.name
            ))
        })?;
        adapters.insert(client.name.clone(), hello.hello.clone());
        let plan = LivePlan {
            turn: crate::workload::ClientPlan::of(scenario, client),
            step_timeout_ms: options.step_timeout_ms,
            deadline_ms: scenario.duration_ms,
            restarts: restarts_of(scenario, &client.name),
            start_timeout_ms: options.start_timeout_ms,
        };
        drivers.push(Driver {
            process,
            rec: rec.clone(),
            plan,
            rng: ChaCha8Rng::seed_from_u64(sub_seed(scenario.seed, &format!("{}/work", client.name))),
            fake_clock: client_clocks.get(&client.name).cloned(),
            restarts_done: 0,
            ran_out_of_time: false,
        });
    }
    Ok(Started {
        drivers,
        adapters,
        client_clocks,
    })
}

/// A free port on 127.0.0.1 (bound and released: another process could take it meanwhile).
fn free_port() -> Result<u16, LiveError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| LiveError::Port {
        port: 0,
        reason: e.to_string(),
        hint: String::new(),
    })?;
    listener.local_addr().map(|a| a.port()).map_err(|e| LiveError::Port {
        port: 0,
        reason: e.to_string(),
        hint: String::new(),
    })
}

async fn run_async(scenario: &Scenario, options: &LiveOptions) -> Result<LiveRun, LiveError> {
    let rec = LiveRecorder::new();
    let mut next_port = options.base_port;
    let deployed = deploy::servers(scenario, &rec, options.redis_server.as_deref(), &mut next_port)?;
    let (links, addresses) = deploy::links(scenario, &deployed, &mut next_port, "--base-port").await?;
    let deploy::Servers { servers, repl, .. } = deployed;

    let Started {
        drivers,
        adapters,
        client_clocks,
    } = start_clients(scenario, options, &rec, &addresses).await?;

    // True time 0: the clients' faked clocks hold the scenario's offsets, and drift from here.
    rec.start();
    for client in &scenario.clients {
        if let Some(clock) = client_clocks.get(&client.name) {
            let _ = clock.start_run(client.offset_ms);
        }
    }
    rec.record(
        "world",
        EventKind::Note {
            text: format!("live start seed={} (real time: not reproducible)", scenario.seed),
        },
    );
    let replication = Rc::new(replication::LiveReplication::new(repl, servers.clone(), links.clone()));
    let ticker = deploy::spawn_ticker(&servers, &replication, &rec);
    let targets = Rc::new(faults::Targets {
        clients: drivers
            .iter()
            .map(|d| (d.process.name().to_string(), d.process.control()))
            .collect(),
        servers: servers.clone(),
        links: links.clone(),
        client_clocks,
        replication,
    });
    let fault_task = tokio::task::spawn_local(faults::run_plan(rec.clone(), targets.clone(), scenario.faults.clone()));

    let mut handles = Vec::new();
    for mut driver in drivers {
        handles.push(tokio::task::spawn_local(async move {
            let result = driver.run().await;
            (driver, result)
        }));
    }

    // Wait for every client, or the scenario's duration.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(scenario.duration_ms);
    let mut finished: Vec<Option<Driver>> = Vec::new();
    let mut error: Option<LiveError> = None;
    let mut clients_finished = true;
    for handle in handles {
        let abort = handle.abort_handle();
        match tokio::time::timeout_at(deadline, handle).await {
            Ok(Ok((driver, result))) => {
                if let Err(e) = result {
                    error.get_or_insert(e.into());
                }
                clients_finished &= !driver.ran_out_of_time;
                finished.push(Some(driver));
            }
            Ok(Err(join)) => {
                error.get_or_insert(LiveError::Protocol(format!("a client driver failed: {join}")));
                finished.push(None);
            }
            Err(_) => {
                // Out of time: the driver (and with it the process) is dropped.
                abort.abort();
                clients_finished = false;
                finished.push(None);
            }
        }
        if error.is_some() {
            break;
        }
    }
    fault_task.abort();
    ticker.abort();
    // Resume whoever is still stopped, then ask everyone to quit.
    for control in targets.clients.values() {
        if control.is_paused() {
            control.resume();
        }
    }
    let end_ms = rec.now_us() / 1000;
    rec.record(
        "world",
        EventKind::Note {
            text: format!("end clients_finished={clients_finished}"),
        },
    );
    for mut driver in finished.into_iter().flatten() {
        driver
            .process
            .shutdown(&Request::Quit.to_line(), Duration::from_millis(500));
    }
    drop(targets);
    if let Some(e) = error {
        return Err(e);
    }

    let history = rec.history();
    let ops = crate::history::OpHistory::new(&history);
    let mut results: Vec<CheckResult> = checker::check_all(&ops);
    let mut mismatches = crate::run::expect::mismatches(&scenario.expect, &results);
    // As in a simulated run: clients that wanted the lock and never got it make the safety
    // verdicts vacuous, a `progress` failure (judged with the other checkers' results).
    let (liveness, mismatch) = crate::run::expect::judge_liveness(&scenario.expect, &ops);
    mismatches.extend(mismatch);
    results.extend(liveness);
    let server_failures = server_failures(&history);
    if !server_failures.is_empty() {
        mismatches.push(Mismatch {
            checker: SERVER_FAILURE_CHECK.to_string(),
            expected: Verdict::Valid,
            actual: Verdict::Invalid,
        });
    }
    Ok(LiveRun {
        server_failures,
        name: scenario.name.clone(),
        seed: scenario.seed,
        history,
        results,
        mismatches,
        adapters,
        clients_finished,
        end_ms,
        addresses: addresses
            .into_iter()
            .map(|((c, s), a)| (format!("{c}->{s}"), a))
            .collect(),
    })
}

/// `lockstep live`'s arguments.
#[derive(Debug, Clone, clap::Args)]
#[command(
    about = "Run a scenario live: real lock clients (any language, via an adapter) against servers on \
             127.0.0.1 in real time. Exit 0: as expected in every run; 1: not; 2: bad input or adapter"
)]
pub struct LiveArgs {
    /// The scenario file (see `scenarios/live/`).
    pub file: PathBuf,
    /// The adapter command started for every client, through `sh -c` (e.g. `python3
    /// examples/live/redis_py_adapter.py`).
    #[arg(long)]
    pub client: String,
    /// A different command for one client: `NAME=CMD` (repeatable).
    #[arg(long = "client-for", value_name = "NAME=CMD")]
    pub client_for: Vec<String>,
    /// Repeat the run N times and report how often each verdict came out.
    #[arg(long, default_value_t = 1)]
    pub runs: u32,
    /// Listen on consecutive ports from this one, 1 to 65535 (default: free ports). Always
    /// 127.0.0.1.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub base_port: Option<u16>,
    /// How long an adapter may take for one step, ms (time stopped by a pause does not count).
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..))]
    pub step_timeout_ms: u64,
    /// Write the report (report.json, summary.md, junit.xml, charts, index.html, live.json) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Serve the masters with real `redis-server` processes from this binary (server clock faults
    /// are then refused; commands and expiries inside the servers are not recorded).
    #[arg(long, value_name = "PATH")]
    pub redis_server: Option<String>,
    /// Write the last run's history here, one JSON event per line.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Print only the verdicts, not the timeline.
    #[arg(long, short)]
    pub quiet: bool,
    /// Copy the adapters' stderr to lockstep's stderr.
    #[arg(long)]
    pub verbose: bool,
}

/// Runs `lockstep live`: [`Outcome::Held`](crate::run::expect::Outcome) when every run was as expected
/// (exit 0), not held when some run differed from the scenario's expectations (exit 1); an
/// error is bad input or a misbehaving adapter (exit 2; the message says which), mapped to exit
/// codes by `app::error` as every command's are.
pub fn main(args: &LiveArgs, render: &dyn output::Render) -> Result<crate::run::expect::Outcome, crate::app::AppError> {
    let held = run_command(args, render).map_err(crate::app::AppError::BadInput)?;
    Ok(crate::run::expect::Outcome::held_if(held))
}

/// `lockstep live` itself: whether every run was as expected, or why it could not run.
fn run_command(args: &LiveArgs, render: &dyn output::Render) -> Result<bool, String> {
    let scenario = Scenario::from_file_live(&args.file).map_err(|e| e.to_string())?;
    let mut client_for = BTreeMap::new();
    for entry in &args.client_for {
        let Some((name, cmd)) = entry.split_once('=') else {
            return Err(format!("--client-for expects NAME=CMD, got {entry:?}"));
        };
        if !scenario.clients.iter().any(|c| c.name == name) {
            return Err(format!(
                "--client-for names {name:?}, which is not a client of the scenario"
            ));
        }
        if client_for.insert(name.to_string(), cmd.to_string()).is_some() {
            return Err(format!(
                "--client-for names {name:?} twice: give one command per client"
            ));
        }
    }
    if args.runs == 0 {
        return Err("--runs must be at least 1".to_string());
    }
    check_supported(&scenario, args.redis_server.is_some()).map_err(|e| e.located(&args.file))?;
    crate::app::files::check_outputs_spare_inputs(
        std::slice::from_ref(&args.file),
        &[("--history", args.history.as_deref())],
        &[("--report", args.report.as_deref())],
    )
    .map_err(|e| e.to_string())?;
    if let Some(out) = &args.report {
        render.check_out(out)?;
    }
    if let Some(file) = &args.history {
        render.check_file(file)?;
    }
    if let Some(base) = args.base_port {
        // One port per client per master and the resource, and one per real redis-server.
        let servers = scenario.masters.len() as u64 + 1;
        let real = if args.redis_server.is_some() {
            scenario.masters.len() as u64
        } else {
            0
        };
        let needed = scenario.clients.len() as u64 * servers + real;
        let ports = u64::from(u16::MAX); // 1..=65535
        if u64::from(base) + needed - 1 > ports {
            let advice = match ports.checked_sub(needed) {
                Some(room) => format!("pass a base port of at most {}", room + 1),
                None => "no base port fits: leave --base-port out to use free ports".to_string(),
            };
            return Err(format!(
                "--base-port {base}: this scenario needs {needed} consecutive ports, which run past 65535; {advice}"
            ));
        }
    }
    let options = LiveOptions {
        client: args.client.clone(),
        client_for,
        base_port: args.base_port,
        step_timeout_ms: args.step_timeout_ms,
        echo_stderr: args.verbose,
        redis_server: args.redis_server.clone(),
        ..LiveOptions::default()
    };
    let mut runs = Vec::new();
    for i in 0..args.runs {
        let started = std::time::Instant::now();
        let run = run_live(&scenario, &options).map_err(|e| e.located(&args.file))?;
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        crate::emit::stdout(&render.run(&args.file, &scenario, &run, i, args.runs, args.quiet || args.runs > 1))?;
        runs.push((run, wall_ms));
    }
    if let (Some(file), Some((run, _))) = (&args.history, runs.last()) {
        let lines: String = run.history.events().iter().map(|e| e.canonical_json() + "\n").collect();
        render.write_file(file, lines.as_bytes())?;
    }
    let summary = output::summarize(&args.file, &scenario, &options, &runs);
    if args.runs > 1 {
        crate::emit::stdout(&render.summary(&summary))?;
    }
    if let Some(out) = &args.report {
        render.write(
            out,
            &args.file,
            &scenario,
            &runs,
            &summary,
            &output::ReportExtra::default(),
        )?;
        crate::emit::stdout(&format!("   report: {}\n", out.display()))?;
    }
    Ok(summary.all_as_expected())
}

/// Loads a scenario and runs it live once (for tests and library users).
pub fn run_file(path: &Path, options: &LiveOptions) -> Result<LiveRun, String> {
    let scenario = Scenario::from_file_live(path).map_err(|e| e.to_string())?;
    run_live(&scenario, options).map_err(|e| e.located(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(history: &mut History, client: Option<&str>, reply: &str) {
        history.push(
            0,
            "redis-1",
            0,
            0,
            EventKind::Command {
                conn: 1,
                args: vec!["EVALSHA".into()],
                reply: reply.into(),
                effects: Vec::new(),
                client: client.map(str::to_string),
            },
        );
    }

    #[test]
    fn replies_failed_by_the_servers_bounds_are_counted_and_named() {
        let mut history = History::new();
        command(&mut history, Some("c1"), ":1");
        command(
            &mut history,
            Some("c1"),
            "-ERR Script killed: exceeded instruction budget of 100000000",
        );
        command(
            &mut history,
            Some("c2"),
            "-ERR Script killed: exceeded instruction budget of 100000000",
        );
        command(
            &mut history,
            Some("c2"),
            "-ERR Error running script abc, not enough memory ",
        );
        // Redis' own errors are the lock's business, and the replication stream no client's.
        command(
            &mut history,
            Some("c1"),
            "-NOSCRIPT No matching script. Please use EVAL.",
        );
        command(
            &mut history,
            Some("c1"),
            "-OOM command not allowed when used memory > 'maxmemory'.",
        );
        command(
            &mut history,
            None,
            "-ERR Script killed: exceeded instruction budget of 1",
        );
        let failures = server_failures(&history);
        assert_eq!(
            failures,
            BTreeMap::from([
                ("a script past the Lua memory cap".to_string(), 1),
                ("a script stopped by the instruction budget".to_string(), 2),
            ])
        );
        let mut clean = History::new();
        command(&mut clean, Some("c1"), "-ERR user_script:1: boom");
        assert!(server_failures(&clean).is_empty());
    }
}
