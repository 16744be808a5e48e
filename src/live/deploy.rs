//! The servers of a live run or of `lockstep serve`, deployed from a scenario: its masters (with
//! their replicas and replication groups, or real `redis-server`s), the fenced resource, one
//! loopback listener per client per server, and the ticker that drives their clocks (active
//! expiry, fsync, restarts, replication) every millisecond.

use super::link::{self, Link};
use super::recorder::LiveRecorder;
use super::replication::LiveReplication;
use super::server::Server;
use super::{buffers, free_port, sub_seed, LiveError};
use crate::run::RESOURCE_NODE;
use crate::scenario::Scenario;
use lockstep_sim::redis::replication::Replication;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// The deployed servers.
pub struct Servers {
    /// Every server by name: masters, replicas and the resource.
    pub servers: BTreeMap<String, Rc<Server>>,
    /// The servers clients reach, in the order their ports are given: the masters in file order
    /// (a replica is reached through its group's address once promoted), then the resource.
    pub order: Vec<String>,
    /// The replication bookkeeping, shared by every group's servers (as in the simulation).
    pub repl: Rc<RefCell<Replication>>,
}

/// Builds the scenario's servers. With `redis_server`, each master without replicas is a real
/// `redis-server` from that binary, on the next port of `next_port` (or a free one).
pub fn servers(
    scenario: &Scenario,
    rec: &LiveRecorder,
    redis_server: Option<&str>,
    next_port: &mut Option<u16>,
) -> Result<Servers, LiveError> {
    let mut servers: BTreeMap<String, Rc<Server>> = BTreeMap::new();
    let mut order = Vec::new();
    let repl = Rc::new(RefCell::new(Replication::default()));
    for m in &scenario.masters {
        let setup = scenario.master_setup(&m.name);
        let replicas = scenario.replicas_of(&m.name);
        if !replicas.is_empty() && redis_server.is_none() {
            let replica_setup = lockstep_sim::MasterSetup {
                clock: lockstep_sim::ClockSpec {
                    offset_ms: setup.replica_offset_ms,
                    drift_ppm: 0,
                },
                ..setup.clone()
            };
            for replica in &replicas {
                let server = Server::member(replica, replica_setup.clone(), rec, Some(repl.clone()));
                servers.insert(replica.clone(), server);
            }
            repl.borrow_mut()
                .add_group(&m.name, &replicas, setup.replication_lag_ms, setup.failover_after_ms);
            servers.insert(m.name.clone(), Server::member(&m.name, setup, rec, Some(repl.clone())));
            order.push(m.name.clone());
            continue;
        }
        let server = match redis_server {
            None => Server::master(&m.name, setup, rec),
            Some(binary) => {
                let port = match *next_port {
                    Some(p) => {
                        *next_port = Some(p.saturating_add(1));
                        p
                    }
                    None => free_port()?,
                };
                Server::real_master(&m.name, setup, rec, binary, port).map_err(LiveError::Unsupported)?
            }
        };
        servers.insert(m.name.clone(), server);
        order.push(m.name.clone());
    }
    servers.insert(
        RESOURCE_NODE.to_string(),
        Server::resource(RESOURCE_NODE, scenario.resource, rec),
    );
    order.push(RESOURCE_NODE.to_string());
    Ok(Servers { servers, order, repl })
}

/// One listener per client per server (in [`Servers::order`]), on consecutive ports from
/// `next_port` or free ones; the addresses by `(client, server)`. `port_flag` names the option
/// that chose the ports (for the message when one is taken).
pub async fn links(
    scenario: &Scenario,
    deployed: &Servers,
    next_port: &mut Option<u16>,
    port_flag: &str,
) -> Result<(Vec<Rc<Link>>, BTreeMap<(String, String), String>), LiveError> {
    let mut links = Vec::new();
    let mut addresses = BTreeMap::new();
    // What the run's connections may hold, over all links (a flooding local process must not
    // take the run's memory: `buffers`).
    let run_buffers = buffers::RunBuffers::new(buffers::Limits::default());
    for client in &scenario.clients {
        for server in &deployed.order {
            let port = next_port.unwrap_or(0);
            let listener = link::bind(port).await.map_err(|e| LiveError::Port {
                port,
                reason: e.to_string(),
                hint: if port == 0 {
                    String::new()
                } else {
                    format!(" (the port is in use: pass another {port_flag}, or leave it out to use free ports)")
                },
            })?;
            *next_port = next_port.map(|p| p.saturating_add(1));
            let seed = sub_seed(scenario.seed, &format!("link/{}/{server}", client.name));
            let link = link::serve(
                listener,
                &client.name,
                deployed.servers[server].clone(),
                seed,
                run_buffers.clone(),
            )
            .map_err(|e| LiveError::Port {
                port,
                reason: e.to_string(),
                hint: String::new(),
            })?;
            addresses.insert((client.name.clone(), server.clone()), link.addr.to_string());
            links.push(link);
        }
    }
    Ok((links, addresses))
}

/// Ticks every server (restarts due, active expiry, fsync) and the replication every
/// millisecond, until aborted.
pub(crate) fn spawn_ticker(
    servers: &BTreeMap<String, Rc<Server>>,
    replication: &Rc<LiveReplication>,
    rec: &LiveRecorder,
) -> tokio::task::JoinHandle<()> {
    let servers: Vec<Rc<Server>> = servers.values().cloned().collect();
    let (replication, rec) = (replication.clone(), rec.clone());
    tokio::task::spawn_local(async move {
        let mut interval = tokio::time::interval(Duration::from_millis(1));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            interval.tick().await;
            for s in &servers {
                s.tick_restart();
                s.tick();
            }
            replication.tick(rec.now_us());
        }
    })
}
