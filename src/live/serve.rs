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
//! **Stopping.** Signals are watched on a thread of their own ([`watchdog`]), so a serving thread
//! stuck in a long command (a script looping inside a built-in) or flooded by a client cannot
//! delay them: the serving loop is told at once and normally stops within milliseconds; if it
//! has not taken over the writing within [`GRACE_MS`], the watchdog writes the history and the
//! report itself from the shared history and exits. **The history is capped**
//! (`--history-max-mb`, `--history-max-events`): past the cap events are dropped and a `dropped`
//! note says how many and from when ([`super::recorder`]).

use super::deploy;
use super::faults::{self, Targets};
use super::output::{LiveSummary, Render};
use super::recorder::{HistoryCap, LiveRecorder, SharedHistory};
use super::replication::LiveReplication;
use super::{grants, LiveError, LiveOptions, LiveRun};
use crate::app::{AppError, Outcome};
use crate::run::RESOURCE_NODE;
use crate::scenario::Scenario;
use lockstep_sim::{EventKind, History};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

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
}

/// The scenario `args` asks for.
fn scenario_of(args: &ServeArgs) -> Result<Scenario, AppError> {
    match &args.file {
        Some(path) => Scenario::from_file_live(path).map_err(|e| AppError::BadInput(e.to_string())),
        None => {
            // The standard template's deployment, with one client name (`app`): one port per
            // server. Its lock and workload are not used.
            let mut scenario = crate::explore::standard_template(
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
            Ok(scenario)
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
    let scenario = scenario_of(args)?;
    let shown = args
        .file
        .as_deref()
        .map_or_else(|| Path::new("lockstep serve").to_path_buf(), Path::to_path_buf);
    if let Some(why) = refusal(&scenario, &shown) {
        return Err(AppError::BadInput(why));
    }
    super::check_servers(&scenario, false).map_err(|e| AppError::BadInput(e.located(&shown)))?;
    let inputs: Vec<PathBuf> = args.file.iter().cloned().collect();
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
        let result = serve_thread(&scenario, args, &rec, stop).map_err(|e| AppError::BadInput(e.located(&shown)));
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
        let written = outputs.write(&rec.shared(), served.stopped_by, None);
        stop.finished.notify_one();
        crate::emit::stdout(&(written? + "\n")).map_err(AppError::Io)?;
        Ok(Outcome::Held)
    })
}

/// What a serve did, once stopped.
struct Served {
    /// Why it stopped.
    stopped_by: &'static str,
}

fn serve_thread(scenario: &Scenario, args: &ServeArgs, rec: &LiveRecorder, stop: &Stop) -> Result<Served, LiveError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LiveError::Runtime(e.to_string()))?;
    let local = tokio::task::LocalSet::new();
    // This thread serves every client: no script may hold it past the guard (never set in a
    // simulation, see `lockstep_sim::redis::set_wall_guard`).
    lockstep_sim::redis::set_wall_guard(Some(Duration::from_millis(args.script_guard_ms)));
    local.block_on(&runtime, serve_async(scenario, args, rec, stop))
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
        let code = match outputs.write(&shared, which, Some(&busy)) {
            Ok(text) => {
                let _ = crate::emit::stdout(&(text + "\n"));
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
    let fault_task = tokio::task::spawn_local(faults::run_plan(rec.clone(), targets.clone(), scenario.faults.clone()));
    crate::emit::stdout(&banner(scenario, &addresses, args.duration_ms))
        .map_err(|e| LiveError::Runtime(format!("cannot write to standard output: {e}")))?;

    let until = async {
        match args.duration_ms {
            Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            None => std::future::pending().await,
        }
    };
    let stopped_by = tokio::select! {
        biased;
        () = stop.signalled.notified() => stop.signal().unwrap_or("a signal"),
        () = until => "--duration-ms",
    };
    fault_task.abort();
    ticker.abort();
    drop(targets);
    Ok(Served { stopped_by })
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

impl Outputs<'_> {
    /// Ends the history (stopped by `stopped_by`; `busy`: why the watchdog writes it) and writes
    /// `--history` and `--report`; returns the closing line for the console.
    fn write(&self, shared: &SharedHistory, stopped_by: &str, busy: Option<&str>) -> Result<String, AppError> {
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
        if let Some(out) = &self.args.report {
            self.report(out, history, served_ms, stopped_by, dropped)?;
            text.push_str(&format!("; report written to {}", out.display()));
        }
        Ok(text)
    }

    /// Writes the report directory `out` of the served `history`.
    fn report(
        &self,
        out: &Path,
        history: History,
        served_ms: u64,
        stopped_by: &str,
        dropped: u64,
    ) -> Result<(), AppError> {
        let masters: Vec<String> = self
            .scenario
            .masters
            .iter()
            .flat_map(|m| std::iter::once(m.name.clone()).chain(self.scenario.replicas_of(&m.name)))
            .collect();
        let notes = ServeNotes::of(&history, stopped_by, served_ms, dropped);
        let inferred = grants::infer(&history, &masters);
        let commands = history
            .events()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Command { .. }))
            .count();
        drop(history);
        // The report's scenario: the served one, with the holders as its clients (one lane each)
        // and no expectations (they are a live run's, for its own workload).
        let mut scenario = self.scenario.clone();
        scenario.expect.clear();
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
        // No grant read off the commands: every safety verdict holds over an empty history, so
        // the report checked nothing and must not pass (issue 48: "✅ PASS — 0 checks passed"),
        // as `ci` fails a run in which no client got the lock.
        if inferred.grants == 0 {
            scenario
                .expect
                .insert(crate::scenario::LIVENESS.to_string(), crate::checker::Verdict::Valid);
            results.push(crate::checker::CheckResult {
                checker: crate::scenario::LIVENESS.to_string(),
                verdict: crate::checker::Verdict::Invalid,
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
        summary.rerun = match &self.args.file {
            Some(f) => format!(
                "lockstep serve {} --report OUT",
                crate::emit::shell_word(&f.display().to_string())
            ),
            None => format!("lockstep serve --masters {} --report OUT", self.args.masters),
        };
        // `serve.json` and the notes at the top of summary.md are built with the report and
        // swapped in with it (issue 48: written into OUT after the swap, concurrent serves mixed
        // one's notes with another's report).
        let extra = super::output::ReportExtra {
            files: vec![(
                "serve.json".to_string(),
                serde_json::to_string_pretty(&notes).unwrap_or_default().into_bytes(),
            )],
            summary_head: notes.markdown(inferred.grants),
        };
        self.render
            .write(out, self.shown, &scenario, &runs, &summary, &extra)
            .map_err(AppError::Io)?;
        Ok(())
    }
}

/// `serve.json`: how the serve ended, what the cap dropped, the test labels and the faults with
/// the tests they hit.
#[derive(Debug, Serialize)]
struct ServeNotes {
    stopped_by: String,
    served_ms: u64,
    /// Events the history cap dropped (0: none), and the `dropped` note.
    dropped_events: u64,
    dropped_note: Option<String>,
    /// Every test label, in order.
    tests: Vec<TestLabel>,
    /// Every fault applied, with the tests it hit.
    faults: Vec<FaultHit>,
}

#[derive(Debug, Serialize)]
struct TestLabel {
    test: String,
    at_ms: f64,
    server: String,
    conn: u64,
    client: Option<String>,
}

#[derive(Debug, Serialize)]
struct FaultHit {
    at_ms: f64,
    fault: String,
    /// Tests whose connections were labelled before the fault and sent a command after it, under
    /// that label.
    during: Vec<String>,
    /// The last test labelled before the fault, if any.
    last_test_before: Option<String>,
}

impl ServeNotes {
    fn of(history: &History, stopped_by: &str, served_ms: u64, dropped: u64) -> ServeNotes {
        let mut tests = Vec::new();
        let mut faults: Vec<(u64, FaultHit)> = Vec::new();
        // Per connection: its label (name, seq) and the seq of its last command.
        let mut current: BTreeMap<(String, u64), (String, u64, u64)> = BTreeMap::new();
        // Spans of a label's commands: (label seq, last command seq, name).
        let mut spans: Vec<(u64, u64, String)> = Vec::new();
        for e in history.events() {
            match &e.kind {
                EventKind::Command { conn, client, .. } => {
                    let key = (e.node.clone(), *conn);
                    if let Some(name) = super::recorder::test_label(&e.kind) {
                        if let Some((old, from, to)) = current.remove(&key) {
                            spans.push((from, to, old));
                        }
                        current.insert(key, (name.to_string(), e.seq, e.seq));
                        tests.push(TestLabel {
                            test: name.to_string(),
                            at_ms: e.at_us as f64 / 1000.0,
                            server: e.node.clone(),
                            conn: *conn,
                            client: client.clone(),
                        });
                    } else if let Some(label) = current.get_mut(&key) {
                        label.2 = e.seq;
                    }
                }
                EventKind::Fault { fault } => {
                    let last = tests.last().map(|t| t.test.clone());
                    faults.push((
                        e.seq,
                        FaultHit {
                            at_ms: e.at_us as f64 / 1000.0,
                            fault: format!("{} on {} ({})", fault.kind(), e.node, fault.short_label()),
                            during: Vec::new(),
                            last_test_before: last,
                        },
                    ));
                }
                _ => {}
            }
        }
        spans.extend(current.into_values().map(|(name, from, to)| (from, to, name)));
        for (from, to, name) in spans {
            let first = faults.partition_point(|(seq, _)| *seq <= from);
            for (seq, hit) in faults[first..].iter_mut() {
                if *seq > to {
                    break;
                }
                if !hit.during.contains(&name) {
                    hit.during.push(name.clone());
                }
            }
        }
        let dropped_note = history.events().iter().rev().find_map(|e| match &e.kind {
            EventKind::Note { text } if text.starts_with(super::recorder::DROPPED_NOTE) => Some(text.clone()),
            _ => None,
        });
        ServeNotes {
            stopped_by: stopped_by.to_string(),
            served_ms,
            dropped_events: dropped,
            dropped_note,
            tests,
            faults: faults.into_iter().map(|(_, f)| f).collect(),
        }
    }

    /// The serve's section at the top of `summary.md`.
    fn markdown(&self, grants: u64) -> String {
        let mut s = format!(
            "> **lockstep serve**, stopped by {} after {:.1} s: {} test label{}, {} fault{} applied, {} lock grant{} \
             read off the commands (judged by {}).\n",
            self.stopped_by,
            self.served_ms as f64 / 1000.0,
            self.tests.len(),
            if self.tests.len() == 1 { "" } else { "s" },
            self.faults.len(),
            if self.faults.len() == 1 { "" } else { "s" },
            grants,
            if grants == 1 { "" } else { "s" },
            grants::CHECKERS.join(" and "),
        );
        if let Some(note) = &self.dropped_note {
            s.push_str(&format!(">\n> **History incomplete**: {note}.\n"));
        }
        if !self.faults.is_empty() {
            s.push_str(">\n> Faults and the tests they hit:\n");
            for f in &self.faults {
                let during = match (&f.during[..], &f.last_test_before) {
                    ([], Some(last)) => format!("no labelled test running (last labelled before: {last})"),
                    ([], None) => "no labelled test".to_string(),
                    (d, _) => format!("during {}", d.join(", ")),
                };
                s.push_str(&format!("> - {:.3} s: {} — {during}\n", f.at_ms / 1000.0, f.fault));
            }
        }
        s
    }
}

/// What is served where: one line per address (`SERVER ADDRESS`, with the client name when the
/// file has several), the fault plan, and how to stop.
fn banner(scenario: &Scenario, addresses: &BTreeMap<(String, String), String>, duration_ms: Option<u64>) -> String {
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
