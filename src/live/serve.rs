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
//! with its reply, expiry and fault; one JSON event per line) to `--history`. Real time: nothing
//! here is reproducible but the fault plan.

use super::deploy;
use super::faults::{self, Targets};
use super::recorder::LiveRecorder;
use super::replication::LiveReplication;
use super::LiveError;
use crate::app::{AppError, Outcome};
use crate::run::RESOURCE_NODE;
use crate::scenario::Scenario;
use lockstep_sim::{EventKind, History};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// The most masters `--masters` deploys.
pub(crate) const MASTERS_MAX: u16 = 64;

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

/// What a serve did, once stopped.
pub(crate) struct Served {
    /// Everything that happened: commands, expiries, faults.
    pub history: History,
    /// How long it served, ms.
    pub served_ms: u64,
    /// Why it stopped.
    pub stopped_by: &'static str,
}

/// Runs `lockstep serve`: prints the addresses, serves until stopped, writes the history.
pub fn main(args: &ServeArgs, render: &dyn super::output::Render) -> Result<Outcome, AppError> {
    let scenario = scenario_of(args)?;
    let shown = args
        .file
        .as_deref()
        .map_or_else(|| Path::new("lockstep serve").to_path_buf(), Path::to_path_buf);
    if let Some(why) = refusal(&scenario, &shown) {
        return Err(AppError::BadInput(why));
    }
    super::check_servers(&scenario, false).map_err(|e| AppError::BadInput(e.located(&shown)))?;
    if let Some(history) = &args.history {
        let inputs: Vec<PathBuf> = args.file.iter().cloned().collect();
        crate::app::files::check_outputs_spare_inputs(&inputs, &[("--history", Some(history))], &[])?;
        render.check_file(history).map_err(AppError::BadInput)?;
    }
    if let Some(base) = args.port {
        let needed = scenario.clients.len() * (scenario.masters.len() + 1);
        if usize::from(base) + needed - 1 > usize::from(u16::MAX) {
            return Err(AppError::BadInput(format!(
                "--port {base}: {needed} consecutive ports are needed, which run past 65535"
            )));
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::RunFailure(e.to_string()))?;
    let local = tokio::task::LocalSet::new();
    let served = local
        .block_on(&runtime, serve_async(&scenario, args))
        .map_err(|e| AppError::BadInput(e.located(&shown)))?;
    let commands = served
        .history
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Command { .. }))
        .count();
    let faults = served
        .history
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Fault { .. }))
        .count();
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut text = format!(
        "stopped ({}) after {:.1} s: {} served, {} applied",
        served.stopped_by,
        served.served_ms as f64 / 1000.0,
        plural(commands, "command", "commands"),
        plural(faults, "fault", "faults"),
    );
    if let Some(path) = &args.history {
        let lines: String = served
            .history
            .events()
            .iter()
            .map(|e| e.canonical_json() + "\n")
            .collect();
        render.write_file(path, lines.as_bytes()).map_err(AppError::Io)?;
        text.push_str(&format!(
            "; history ({} events) written to {}",
            served.history.events().len(),
            path.display()
        ));
    }
    crate::emit::stdout(&(text + "\n")).map_err(AppError::Io)?;
    Ok(Outcome::Held)
}

async fn serve_async(scenario: &Scenario, args: &ServeArgs) -> Result<Served, LiveError> {
    let rec = LiveRecorder::new();
    let mut next_port = args.port;
    let deployed = deploy::servers(scenario, &rec, None, &mut next_port)?;
    let (links, addresses) = deploy::links(scenario, &deployed, &mut next_port, "--port").await?;
    let deploy::Servers { servers, repl, .. } = deployed;
    // Signals are caught before anything is announced: a client that starts at the banner can
    // stop the server cleanly at once.
    let mut sigint = signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut sigterm = signal(tokio::signal::unix::SignalKind::terminate())?;

    rec.start();
    rec.record(
        "world",
        EventKind::Note {
            text: format!("serve start seed={} (real time: not reproducible)", scenario.seed),
        },
    );
    let replication = Rc::new(LiveReplication::new(repl, servers.clone(), links.clone()));
    let ticker = deploy::spawn_ticker(&servers, &replication, &rec);
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
        _ = sigint.recv() => "SIGINT",
        _ = sigterm.recv() => "SIGTERM",
        () = until => "--duration-ms",
    };
    fault_task.abort();
    ticker.abort();
    let served_ms = rec.now_us() / 1000;
    rec.record(
        "world",
        EventKind::Note {
            text: format!("serve end ({stopped_by})"),
        },
    );
    drop(targets);
    Ok(Served {
        history: rec.history(),
        served_ms,
        stopped_by,
    })
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Result<tokio::signal::unix::Signal, LiveError> {
    tokio::signal::unix::signal(kind).map_err(|e| LiveError::Runtime(format!("cannot catch signals: {e}")))
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
