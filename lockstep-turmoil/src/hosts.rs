//! The Redis masters of a turmoil simulation: how to install them, the faults the driver applies
//! to them (one by one, or a [`FaultSchedule`] applied by [`RedisHosts::step`]), and the history
//! they record.
//!
//! What a fault does here, in turmoil's terms: `crash`/`power-loss`/`shutdown` stop the host's
//! software (`Sim::crash`) after giving the master what its persistence keeps; `restart` starts
//! it again (`Sim::bounce`); `partition`/`heal` are `Sim::partition`/`repair` (`oneway`:
//! `partition_oneway`/`repair_oneway`); `hold`/`release` are `Sim::hold`/`release`; `pause`
//! holds every link of the host (`Sim::hold` with every other host) for its duration, then
//! releases them. `clock-jump` and `drift` change a Redis host's clock (its expiry and its
//! sleeps run on it); they are refused on any other node, whose software sleeps on turmoil's
//! clock and which a clock fault would not reach. `latency`, `loss`, `failover` and `drop-reply`
//! are refused (see [`Error::Unsupported`]).

use crate::error::Error;
use crate::recording::{OpRecorder, Recording};
use crate::schedule::{FaultSchedule, Trigger};
use crate::server::{Server, StopKind};
use lockstep::checker::CheckResult;
use lockstep_history::fault::check_drift_ppm;
use lockstep_sim::{
    ClockSpec, EventKind, Fault, FaultTargets, FencingMode, History, Persistence, Phase, Role, ScheduledFault,
    WorldConfig,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::rc::Rc;
use turmoil::Sim;

/// Settings of the Redis masters, before they are installed in a [`Sim`].
#[derive(Debug, Clone)]
pub struct RedisHostsBuilder {
    masters: Vec<String>,
    clocks: BTreeMap<String, ClockSpec>,
    persistence: Persistence,
    epoch_ms: i64,
    resource: FencingMode,
    run_name: String,
    seed: u64,
}

impl Default for RedisHostsBuilder {
    fn default() -> Self {
        RedisHostsBuilder {
            masters: Vec::new(),
            clocks: BTreeMap::new(),
            persistence: Persistence::None,
            epoch_ms: WorldConfig::default().epoch_ms,
            resource: FencingMode::Unfenced,
            run_name: "turmoil-run".to_string(),
            seed: 0,
        }
    }
}

impl RedisHostsBuilder {
    /// Adds `count` masters named `redis-1`, `redis-2`, … (numbered on from those added
    /// before).
    pub fn masters(mut self, count: usize) -> Self {
        let first = self.masters.len() + 1;
        self.masters
            .extend((first..first + count).map(|i| format!("redis-{i}")));
        self
    }

    /// Adds one master named `name` (its turmoil host name).
    pub fn master(mut self, name: &str) -> Self {
        self.masters.push(name.to_string());
        self
    }

    /// Gives node `node` the clock `spec`: wall-clock offset from true time and drift. Nodes
    /// without one read true time. On a master it is the clock the master expires keys and
    /// sleeps by; on a service node it is only what its [`OpRecorder`] reads
    /// ([`OpRecorder::wall_ms`], [`OpRecorder::monotonic_ms`]): the service's own sleeps and
    /// timeouts run on turmoil's clock.
    pub fn clock(mut self, node: &str, spec: ClockSpec) -> Self {
        self.clocks.insert(node.to_string(), spec);
        self
    }

    /// How every master persists its writes (default: `none`, a stopped master comes back
    /// empty).
    pub fn persistence(mut self, persistence: Persistence) -> Self {
        self.persistence = persistence;
        self
    }

    /// The wall-clock reading, ms since the Unix epoch, of a clock without offset at true time 0
    /// (default: lockstep's worlds' epoch, 2026-01-01). turmoil's own epoch (the real time by
    /// default) is not read: the same seed gives the same history whenever it runs.
    pub fn epoch_ms(mut self, epoch_ms: i64) -> Self {
        self.epoch_ms = epoch_ms;
        self
    }

    /// How the protected resource ([`OpRecorder::write`], [`OpRecorder::read`]) judges fencing
    /// tokens (default: `unfenced`, every write accepted).
    pub fn resource(mut self, mode: FencingMode) -> Self {
        self.resource = mode;
        self
    }

    /// The run's name and the turmoil seed it ran with, as its report shows them
    /// ([`RedisHosts::report`]; default `turmoil-run`, seed 0). turmoil does not tell its seed:
    /// give the one passed to `Builder::rng_seed`.
    pub fn run_name(mut self, name: &str, seed: u64) -> Self {
        self.run_name = name.to_string();
        self.seed = seed;
        self
    }

    /// Registers every master as a turmoil host of `sim` that listens on port 6379 and serves
    /// lockstep's Redis engine, and returns the handle to their faults and their history.
    pub fn install(self, sim: &mut Sim<'_>) -> Result<RedisHosts, Error> {
        if self.masters.is_empty() {
            return Err(Error::NoHosts);
        }
        for (node, spec) in &self.clocks {
            check_drift_ppm(spec.drift_ppm).map_err(|reason| Error::BadDrift {
                node: node.clone(),
                reason,
            })?;
        }
        let recording = Recording::new(self.epoch_ms);
        recording.set_resource(self.resource);
        for (node, spec) in &self.clocks {
            recording.set_clock(node, *spec);
        }
        let mut servers = BTreeMap::new();
        for name in &self.masters {
            let server = Rc::new(Server::new(
                name,
                recording.clock(name),
                self.persistence,
                recording.clone(),
            ));
            if servers.insert(name.clone(), server.clone()).is_some() {
                return Err(Error::DuplicateHost { name: name.clone() });
            }
            sim.host(name.as_str(), move || server.clone().run());
        }
        Ok(RedisHosts {
            recording,
            servers,
            names: self.masters,
            driver: RefCell::new(Driver::default()),
            run: (self.run_name, self.seed),
        })
    }
}

/// The Redis masters installed in a turmoil [`Sim`]: the faults the test driver applies to them
/// (between two `Sim::step`s), the recorders of the services' operations, the history, and
/// lockstep's verdicts on it.
///
/// Apply faults through these methods rather than `Sim::crash`/`Sim::bounce` directly: they
/// record the fault and give the master the memory its persistence mode keeps. (A bounce done
/// by turmoil alone is still seen when the host starts again, and handled as a crash then.)
#[derive(Debug)]
pub struct RedisHosts {
    recording: Recording,
    servers: BTreeMap<String, Rc<Server>>,
    names: Vec<String>,
    driver: RefCell<Driver>,
    /// The run's name and seed, for its report.
    run: (String, u64),
}

/// The schedule in force and what the driver keeps between steps.
#[derive(Debug, Default)]
struct Driver {
    /// The schedule's faults (index = position).
    planned: Vec<crate::schedule::PlannedFault>,
    /// Faults due at a time: (true µs, order of arrival, what).
    due: BTreeSet<(u64, u64, Due)>,
    arrivals: u64,
    /// `when_holds` faults still armed, by index; with the grant (op id) each last fired on.
    armed: BTreeMap<usize, Option<u64>>,
    /// Current holds read from the history: (node, key) → the acquire's op id.
    holds: BTreeMap<(String, String), u64>,
    /// How far the history has been read.
    cursor: usize,
    /// Links partitioned through these methods (both directions: (a, b) and (b, a)), to cut
    /// again when a pause's hold is released.
    partitioned: BTreeSet<(String, String)>,
}

/// What is due at a time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// The schedule's fault of that index.
    Planned(usize),
    /// The end of a pause of that host.
    Unpause(String),
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl RedisHosts {
    /// Starts the builder.
    pub fn builder() -> RedisHostsBuilder {
        RedisHostsBuilder::default()
    }

    /// The masters' host names, in definition order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The run's recording (history and clocks), to share with the services.
    pub fn recording(&self) -> Recording {
        self.recording.clone()
    }

    /// A recorder of service node `node`'s lock operations.
    pub fn recorder(&self, node: &str) -> OpRecorder {
        self.recording.recorder(node)
    }

    fn server(&self, name: &str) -> Result<&Rc<Server>, Error> {
        self.servers.get(name).ok_or_else(|| Error::UnknownHost {
            name: name.to_string(),
            known: self.names.clone(),
        })
    }

    /// Records `fault` at the driver's time (`sim.elapsed()`), on `node`'s clock.
    fn record_fault(&self, sim: &Sim<'_>, node: &str, fault: Fault) {
        self.recording.advance_to(sim.elapsed().as_micros() as u64);
        self.recording.record(node, EventKind::Fault { fault });
    }

    /// Crashes master `name`'s process (`Sim::crash`): it keeps what its persistence mode
    /// keeps on a process crash. It stays down until [`RedisHosts::restart`].
    pub fn crash(&self, sim: &mut Sim<'_>, name: &str) -> Result<(), Error> {
        self.stop(sim, name, StopKind::Crash)
    }

    /// Stops master `name` cleanly (`Sim::crash` after a clean shutdown: with AOF nothing is
    /// lost). It stays down until [`RedisHosts::restart`].
    pub fn shutdown(&self, sim: &mut Sim<'_>, name: &str) -> Result<(), Error> {
        self.stop(sim, name, StopKind::Shutdown)
    }

    /// Cuts master `name`'s power: like a crash, and with `aof-everysec` the writes since the
    /// last fsync are lost too.
    pub fn power_loss(&self, sim: &mut Sim<'_>, name: &str) -> Result<(), Error> {
        self.stop(sim, name, StopKind::PowerLoss)
    }

    fn stop(&self, sim: &mut Sim<'_>, name: &str, kind: StopKind) -> Result<(), Error> {
        let server = self.server(name)?;
        let node = name.to_string();
        let fault = match kind {
            StopKind::PowerLoss => Fault::PowerLoss { node },
            StopKind::Shutdown => Fault::Shutdown { node },
            _ => Fault::Crash { node },
        };
        self.record_fault(sim, name, fault);
        server.stop(kind);
        sim.crash(name);
        Ok(())
    }

    /// Starts master `name` again (`Sim::bounce`): a stopped one with what it kept, a running one
    /// after a clean shutdown (with `none`: empty).
    pub fn restart(&self, sim: &mut Sim<'_>, name: &str) -> Result<(), Error> {
        let server = self.server(name)?;
        self.record_fault(sim, name, Fault::Restart { node: name.to_string() });
        server.stop(StopKind::Shutdown);
        sim.bounce(name);
        Ok(())
    }

    /// A clock fault's node must be a Redis host (see [`Error::ClockOfService`]).
    fn clock_node(&self, kind: &'static str, node: &str) -> Result<&Rc<Server>, Error> {
        self.servers.get(node).ok_or_else(|| Error::ClockOfService {
            kind,
            node: node.to_string(),
            masters: self.names.clone(),
        })
    }

    /// Steps Redis host `node`'s wall clock by `delta_ms` (negative: backwards); a master's keys
    /// expire by its wall clock, so a jump forward expires them early. Refused on any other node
    /// ([`Error::ClockOfService`]): a service sleeps on turmoil's clock.
    pub fn jump_clock(&self, sim: &mut Sim<'_>, node: &str, delta_ms: i64) -> Result<(), Error> {
        let server = self.clock_node("clock-jump", node)?.clone();
        self.record_fault(
            sim,
            node,
            Fault::ClockJump {
                node: node.to_string(),
                delta_ms,
            },
        );
        self.recording.clock(node).jump(delta_ms);
        server.wake();
        Ok(())
    }

    /// Sets Redis host `node`'s clock rate error from now on, keeping its readings continuous.
    /// Refused on any other node ([`Error::ClockOfService`]).
    pub fn set_drift(&self, sim: &mut Sim<'_>, node: &str, drift_ppm: i64) -> Result<(), Error> {
        let server = self.clock_node("drift", node)?.clone();
        check_drift_ppm(drift_ppm).map_err(|reason| Error::BadDrift {
            node: node.to_string(),
            reason,
        })?;
        self.record_fault(
            sim,
            node,
            Fault::Drift {
                node: node.to_string(),
                drift_ppm,
            },
        );
        let now = self.recording.now_us();
        self.recording.clock(node).set_drift(now, drift_ppm);
        server.wake();
        Ok(())
    }

    /// Drops every message between hosts `a` and `b` (`Sim::partition`), recorded as a fault.
    pub fn partition(&self, sim: &mut Sim<'_>, a: &str, b: &str) -> Result<(), Error> {
        self.apply(sim, &crate::schedule::fault::partition(a, b))
    }

    /// Restores the link between `a` and `b` (`Sim::repair`), recorded as a fault.
    pub fn repair(&self, sim: &mut Sim<'_>, a: &str, b: &str) -> Result<(), Error> {
        self.apply(sim, &crate::schedule::fault::heal(a, b))
    }

    /// Pauses host `node` (a Redis host, a service, any host of the simulation) for
    /// `duration_ms`: every link between it and every other host is held (`Sim::hold`), so
    /// nothing it sends arrives and nothing sent to it is delivered, until, `duration_ms` later,
    /// [`RedisHosts::step`] releases them (`Sim::release`: what was held is delivered then) —
    /// as a stopped process's messages would be when it resumes. Recorded as lockstep's
    /// `pause` fault. Left out: turmoil cannot freeze a host's runtime, so the paused host's own
    /// timers still fire (a Redis host still expires keys by its clock; a service's sleep still
    /// ends); the release comes only from [`RedisHosts::step`] or [`RedisHosts::run`].
    pub fn pause(&self, sim: &mut Sim<'_>, node: &str, duration_ms: u64) -> Result<(), Error> {
        self.apply(sim, &crate::schedule::fault::pause(node, duration_ms))
    }

    /// The run's name and seed, as given to [`RedisHostsBuilder::run_name`].
    pub fn run_name(&self) -> (&str, u64) {
        (&self.run.0, self.run.1)
    }

    /// The names of the simulation's hosts and clients (turmoil registers a link between every
    /// two of them), in turmoil's order, and the Redis hosts.
    pub fn sim_hosts(&self, sim: &Sim<'_>) -> Vec<String> {
        let mut ips: Vec<IpAddr> = Vec::new();
        sim.links(|links| {
            for link in links {
                let (a, b) = link.pair();
                for ip in [a, b] {
                    if !ips.contains(&ip) {
                        ips.push(ip);
                    }
                }
            }
        });
        let mut names: Vec<String> = ips.into_iter().filter_map(|ip| sim.reverse_lookup(ip)).collect();
        for master in &self.names {
            if !names.contains(master) {
                names.push(master.clone());
            }
        }
        names
    }

    /// The roles of the simulation's nodes, for [`Fault::check`]: the Redis hosts are masters,
    /// every other host a client.
    fn targets(&self, sim: &Sim<'_>) -> SimTargets {
        let mut roles = BTreeMap::new();
        let order = self.sim_hosts(sim);
        for name in &order {
            let role = match self.servers.contains_key(name) {
                true => Role::Master,
                false => Role::Client,
            };
            roles.insert(name.clone(), role);
        }
        SimTargets { roles, order }
    }

    /// Checks `fault` against the simulation: every node it names a host of it, of a kind it
    /// applies to, a kind this crate applies.
    pub fn check_fault(&self, sim: &Sim<'_>, fault: &Fault) -> Result<(), Error> {
        let reason = match fault {
            Fault::Latency { .. } => Some("set turmoil's link latencies with `Sim::set_link_latency` instead"),
            Fault::Loss { .. } => Some("turmoil's message loss (`Sim::set_link_fail_rate`) drops single messages of a stream, which lockstep's model does not"),
            Fault::Failover { .. } => Some("the Redis hosts have no replicas"),
            Fault::DropReply { .. } => Some("the Redis hosts do not drop replies"),
            _ => None,
        };
        if let Some(reason) = reason {
            return Err(Error::Unsupported {
                kind: fault.kind(),
                reason,
            });
        }
        let targets = self.targets(sim);
        fault.validate(&targets).map_err(|e| match e {
            lockstep_sim::FaultError::UnknownNode { node, known, .. } => Error::UnknownSimHost { name: node, known },
            other => Error::Refused {
                kind: fault.kind(),
                message: format!("{}: {other}", other.field()),
            },
        })?;
        match fault {
            Fault::ClockJump { node, .. } => self.clock_node("clock-jump", node).map(|_| ()),
            Fault::Drift { node, .. } => self.clock_node("drift", node).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// Applies `fault` now (between two `Sim::step`s), recorded in the history: what each kind
    /// does is in the `hosts` module docs. Refused, with nothing applied or recorded, when it
    /// does not fit the simulation ([`RedisHosts::check_fault`]).
    pub fn apply(&self, sim: &mut Sim<'_>, fault: &Fault) -> Result<(), Error> {
        self.check_fault(sim, fault)?;
        match fault {
            Fault::Crash { node } => self.crash(sim, node),
            Fault::PowerLoss { node } => self.power_loss(sim, node),
            Fault::Shutdown { node } => self.shutdown(sim, node),
            Fault::Restart { node } => self.restart(sim, node),
            Fault::ClockJump { node, delta_ms } => self.jump_clock(sim, node, *delta_ms),
            Fault::Drift { node, drift_ppm } => self.set_drift(sim, node, *drift_ppm),
            Fault::Partition { a, b, oneway } => {
                self.record_fault(sim, "net", fault.clone());
                let mut driver = self.driver.borrow_mut();
                driver.partitioned.insert((a.clone(), b.clone()));
                if *oneway {
                    sim.partition_oneway(a.as_str(), b.as_str());
                } else {
                    driver.partitioned.insert((b.clone(), a.clone()));
                    sim.partition(a.as_str(), b.as_str());
                }
                Ok(())
            }
            Fault::Heal { a, b, oneway } => {
                self.record_fault(sim, "net", fault.clone());
                let mut driver = self.driver.borrow_mut();
                driver.partitioned.remove(&(a.clone(), b.clone()));
                if *oneway {
                    sim.repair_oneway(a.as_str(), b.as_str());
                } else {
                    driver.partitioned.remove(&(b.clone(), a.clone()));
                    sim.repair(a.as_str(), b.as_str());
                }
                Ok(())
            }
            Fault::Hold { a, b } => {
                self.record_fault(sim, "net", fault.clone());
                sim.hold(a.as_str(), b.as_str());
                Ok(())
            }
            Fault::Release { a, b } => {
                self.record_fault(sim, "net", fault.clone());
                sim.release(a.as_str(), b.as_str());
                self.cut_again(sim, &[(a.clone(), b.clone())]);
                Ok(())
            }
            Fault::Pause { node, duration_ms } => {
                self.record_fault(sim, node, fault.clone());
                for other in self.sim_hosts(sim).iter().filter(|h| *h != node) {
                    sim.hold(node.as_str(), other.as_str());
                }
                let until_us = self
                    .recording
                    .advance_to(sim.elapsed().as_micros() as u64)
                    .saturating_add(duration_ms.saturating_mul(1_000));
                self.driver.borrow_mut().push(until_us, Due::Unpause(node.clone()));
                Ok(())
            }
            Fault::Latency { .. } | Fault::Loss { .. } | Fault::Failover { .. } | Fault::DropReply { .. } => Ok(()),
        }
    }

    /// Cuts again the links of `pairs` partitioned through these methods (a release makes a
    /// link healthy in turmoil, partition or not).
    fn cut_again(&self, sim: &Sim<'_>, pairs: &[(String, String)]) {
        let driver = self.driver.borrow();
        for (a, b) in pairs {
            match (
                driver.partitioned.contains(&(a.clone(), b.clone())),
                driver.partitioned.contains(&(b.clone(), a.clone())),
            ) {
                (true, true) => sim.partition(a.as_str(), b.as_str()),
                (true, false) => sim.partition_oneway(a.as_str(), b.as_str()),
                (false, true) => sim.partition_oneway(b.as_str(), a.as_str()),
                (false, false) => {}
            }
        }
    }

    /// Ends the pause of `node`: releases its links (what was held is delivered), records
    /// that it resumed.
    fn unpause(&self, sim: &mut Sim<'_>, node: &str) {
        self.recording.advance_to(sim.elapsed().as_micros() as u64);
        let others: Vec<String> = self.sim_hosts(sim).into_iter().filter(|h| h != node).collect();
        for other in &others {
            sim.release(node, other.as_str());
        }
        let pairs: Vec<(String, String)> = others.into_iter().map(|o| (node.to_string(), o)).collect();
        self.cut_again(sim, &pairs);
        self.recording.record(node, EventKind::Resumed);
    }

    /// Puts `schedule` in force (replacing any before it), its times counted from the start of
    /// the simulation and its triggers armed from now: [`RedisHosts::step`] applies it. Call it
    /// once the hosts and clients are registered: every fault is checked against them now
    /// ([`RedisHosts::check_fault`]), and a trigger's node must be one of them. The error names
    /// the fault at fault by its position.
    pub fn schedule(&self, sim: &Sim<'_>, schedule: FaultSchedule) -> Result<(), Error> {
        let hosts = self.sim_hosts(sim);
        for (index, planned) in schedule.faults().iter().enumerate() {
            let named = |e: Error| Error::BadFault {
                index,
                kind: planned.fault.kind(),
                message: e.to_string(),
            };
            self.check_fault(sim, &planned.fault).map_err(named)?;
            match &planned.trigger {
                Trigger::WhileHolds { node, .. } if !hosts.contains(node) => {
                    return Err(named(Error::UnknownSimHost {
                        name: node.clone(),
                        known: hosts.clone(),
                    }))
                }
                Trigger::After { fault, .. } if *fault >= index => {
                    return Err(named(Error::Schedule(format!(
                        "`after` names fault {fault}, not an earlier one"
                    ))))
                }
                _ => {}
            }
        }
        let mut driver = self.driver.borrow_mut();
        driver.planned = schedule.faults().to_vec();
        // The ends of pauses under way stay due; the old schedule's faults go.
        driver.due.retain(|(_, _, due)| matches!(due, Due::Unpause(_)));
        driver.armed.clear();
        for (index, planned) in schedule.faults().iter().enumerate() {
            match &planned.trigger {
                Trigger::At { at_ms } => driver.push(at_ms.saturating_mul(1_000), Due::Planned(index)),
                Trigger::WhileHolds { .. } => {
                    driver.armed.insert(index, None);
                }
                Trigger::After { .. } => {}
            }
        }
        Ok(())
    }

    /// Applies what is due now: the schedule's faults whose time has come or whose trigger
    /// holds, the ends of pauses, and what follows them at once (`after_ms = 0`).
    fn apply_due(&self, sim: &mut Sim<'_>) -> Result<(), Error> {
        let now_us = self.recording.advance_to(sim.elapsed().as_micros() as u64);
        self.read_holds();
        loop {
            let next = {
                let mut driver = self.driver.borrow_mut();
                let fired = driver.fire_triggers(now_us);
                for index in fired {
                    driver.push(now_us, Due::Planned(index));
                }
                match driver.due.first().cloned() {
                    Some(entry) if entry.0 <= now_us => {
                        driver.due.remove(&entry);
                        Some(entry.2)
                    }
                    _ => None,
                }
            };
            let Some(due) = next else { return Ok(()) };
            match due {
                Due::Unpause(node) => self.unpause(sim, &node),
                Due::Planned(index) => {
                    let fault = self.driver.borrow().planned[index].fault.clone();
                    self.apply(sim, &fault).map_err(|e| Error::BadFault {
                        index,
                        kind: fault.kind(),
                        message: e.to_string(),
                    })?;
                    let mut driver = self.driver.borrow_mut();
                    let followers: Vec<(usize, u64)> = driver
                        .planned
                        .iter()
                        .enumerate()
                        .filter_map(|(i, p)| match p.trigger {
                            Trigger::After { fault, after_ms } if fault == index => Some((i, after_ms)),
                            _ => None,
                        })
                        .collect();
                    for (i, after_ms) in followers {
                        driver.push(now_us.saturating_add(after_ms.saturating_mul(1_000)), Due::Planned(i));
                    }
                }
            }
        }
    }

    /// Reads the history recorded since the last call: who holds which lock key now.
    fn read_holds(&self) {
        let mut driver = self.driver.borrow_mut();
        let from = driver.cursor;
        let mut holds = std::mem::take(&mut driver.holds);
        let cursor = self.recording.scan_from(from, &mut |event| {
            let EventKind::Op { id, phase, op, data } = &event.kind else {
                return;
            };
            let Some(key) = data.get("key").and_then(|k| k.as_str()) else {
                return;
            };
            let slot = (event.node.clone(), key.to_string());
            match (op.as_str(), phase) {
                ("acquire", Phase::Ok) => {
                    holds.insert(slot, *id);
                }
                ("release" | "abort", Phase::Invoke) => {
                    holds.remove(&slot);
                }
                _ => {}
            }
        });
        driver.holds = holds;
        driver.cursor = cursor;
    }

    /// One step of the simulation with the schedule applied: what is due before it, `Sim::step`,
    /// what is due after it. `Ok(true)` once every client has finished (as `Sim::step`).
    pub fn step(&self, sim: &mut Sim<'_>) -> Result<bool, Error> {
        self.apply_due(sim)?;
        let done = sim.step().map_err(|e| Error::Sim {
            at_ms: sim.elapsed().as_millis() as u64,
            message: e.to_string(),
        })?;
        self.apply_due(sim)?;
        Ok(done)
    }

    /// Steps the simulation with the schedule applied until every client has finished
    /// (`while !hosts.step(&mut sim)? {}`).
    pub fn run(&self, sim: &mut Sim<'_>) -> Result<(), Error> {
        while !self.step(sim)? {}
        Ok(())
    }

    /// The faults recorded so far, at their true ms (what a report lists as the run's plan).
    pub fn faults_applied(&self) -> Vec<ScheduledFault> {
        let mut faults = Vec::new();
        self.recording.scan_from(0, &mut |event| {
            if let EventKind::Fault { fault } = &event.kind {
                faults.push(ScheduledFault {
                    at_ms: event.at_us / 1_000,
                    fault: fault.clone(),
                });
            }
        });
        faults
    }

    /// Whether master `name`'s process runs, as lockstep knows it.
    pub fn is_running(&self, name: &str) -> Result<bool, Error> {
        Ok(self.server(name)?.is_running())
    }

    /// The keys master `name` holds now (expired ones not yet reclaimed included), in order.
    pub fn keys(&self, name: &str) -> Result<Vec<String>, Error> {
        Ok(self
            .server(name)?
            .engine
            .borrow()
            .keyspace()
            .iter()
            .map(|(key, _)| String::from_utf8_lossy(key).into_owned())
            .collect())
    }

    /// A copy of the history so far: every command with its reply, every expiry, every fault,
    /// and the services' operations.
    pub fn history(&self) -> History {
        self.recording.history()
    }

    /// The `mutual-exclusion` checker's verdict on the history so far.
    pub fn verdict(&self) -> CheckResult {
        crate::checks::mutual_exclusion(&self.history())
    }

    /// Every lockstep checker's verdict on the history so far, in report order.
    pub fn check_all(&self) -> Vec<CheckResult> {
        crate::checks::check_all(&self.history())
    }
}

impl Driver {
    fn push(&mut self, at_us: u64, due: Due) {
        self.arrivals += 1;
        self.due.insert((at_us, self.arrivals, due));
    }

    /// The armed `when_holds` faults whose node holds their key now (once armed at
    /// `not_before_ms`): each fires once, or once per grant (`each`).
    fn fire_triggers(&mut self, now_us: u64) -> Vec<usize> {
        let mut fired = Vec::new();
        let mut disarmed = Vec::new();
        for (&index, last) in self.armed.iter_mut() {
            let Trigger::WhileHolds {
                node,
                key,
                not_before_ms,
                each,
            } = &self.planned[index].trigger
            else {
                continue;
            };
            if now_us < not_before_ms.saturating_mul(1_000) {
                continue;
            }
            let Some(&grant) = self.holds.get(&(node.clone(), key.clone())) else {
                continue;
            };
            if *last == Some(grant) {
                continue;
            }
            *last = Some(grant);
            fired.push(index);
            if !each {
                disarmed.push(index);
            }
        }
        for index in disarmed {
            self.armed.remove(&index);
        }
        fired
    }
}

/// The simulation's nodes as [`Fault::check`] reads them.
struct SimTargets {
    roles: BTreeMap<String, Role>,
    order: Vec<String>,
}

impl FaultTargets for SimTargets {
    fn role(&self, node: &str) -> Option<Role> {
        self.roles.get(node).copied()
    }

    fn is_replicated(&self, _node: &str) -> bool {
        false
    }

    fn node_names(&self) -> Vec<String> {
        self.order.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_builder_refuses_what_would_not_run() {
        let mut sim = turmoil::Builder::new().rng_seed(1).build();
        assert_eq!(RedisHosts::builder().install(&mut sim).err(), Some(Error::NoHosts));
        let mut sim = turmoil::Builder::new().rng_seed(1).build();
        let slow = ClockSpec {
            offset_ms: 0,
            drift_ppm: -1_000_000,
        };
        let err = RedisHosts::builder()
            .masters(1)
            .clock("redis-1", slow)
            .install(&mut sim)
            .expect_err("a clock that stands still");
        assert!(
            err.to_string()
                .starts_with("clock of `redis-1`: drift_ppm -1000000 ppm would stop"),
            "{err}"
        );
        let mut sim = turmoil::Builder::new().rng_seed(1).build();
        let err = RedisHosts::builder()
            .master("redis")
            .master("redis")
            .install(&mut sim)
            .expect_err("twice");
        assert_eq!(err, Error::DuplicateHost { name: "redis".into() });
    }

    #[test]
    fn faults_name_known_hosts_only() {
        let mut sim = turmoil::Builder::new().rng_seed(1).build();
        let hosts = RedisHosts::builder().masters(2).install(&mut sim).expect("two masters");
        assert_eq!(hosts.names(), ["redis-1", "redis-2"]);
        let err = hosts.crash(&mut sim, "redis-9").expect_err("no such host");
        assert_eq!(
            err.to_string(),
            "`redis-9` is not a Redis host of this simulation (hosts: redis-1, redis-2)"
        );
        assert!(hosts.set_drift(&mut sim, "redis-1", -2_000_000).is_err());
        // Nothing was recorded for the refused faults.
        assert!(hosts.history().is_empty());
    }

    /// What a stopped master keeps, by persistence mode and kind of stop: `a` is written at once,
    /// `b` at 1.5 s (after the `aof-everysec` fsync at 1 s of the master's clock), the stop comes
    /// at 1.7 s.
    fn kept_after(persistence: Persistence, power_loss: bool) -> Vec<String> {
        let mut sim = turmoil::Builder::new().rng_seed(5).build();
        let hosts = RedisHosts::builder()
            .master("redis")
            .persistence(persistence)
            .install(&mut sim)
            .expect("one master");
        sim.client("writer", async {
            let mut conn = crate::client::connect("redis").await?;
            let _: () = redis::cmd("SET").arg("a").arg(1).query_async(&mut conn).await?;
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            let _: () = redis::cmd("SET").arg("b").arg(2).query_async(&mut conn).await?;
            Ok(())
        });
        while sim.elapsed() < Duration::from_millis(1_700) {
            sim.step().expect("the simulation runs");
        }
        assert_eq!(hosts.keys("redis").ok(), Some(vec!["a".to_string(), "b".to_string()]));
        if power_loss {
            hosts.power_loss(&mut sim, "redis").expect("a master");
        } else {
            hosts.crash(&mut sim, "redis").expect("a master");
        }
        assert_eq!(hosts.is_running("redis").ok(), Some(false));
        hosts.restart(&mut sim, "redis").expect("a master");
        sim.step().expect("the simulation runs");
        assert_eq!(hosts.is_running("redis").ok(), Some(true));
        hosts.keys("redis").expect("a master")
    }

    #[test]
    fn a_stopped_master_keeps_what_its_persistence_kept() {
        assert!(kept_after(Persistence::None, false).is_empty());
        assert_eq!(kept_after(Persistence::AofEverysec, false), ["a", "b"]);
        assert_eq!(kept_after(Persistence::AofEverysec, true), ["a"]);
        assert_eq!(kept_after(Persistence::AofAlways, true), ["a", "b"]);
    }
}
