//! The Redis masters of a turmoil simulation: how to install them, the faults the driver applies
//! to them, and the history they record.

use crate::recording::{OpRecorder, Recording};
use crate::server::{Server, StopKind};
use lockstep::checker::{CheckResult, Checker, MutualExclusion};
use lockstep_sim::clock::check_drift_ppm;
use lockstep_sim::{ClockSpec, EventKind, Fault, History, Persistence, WorldConfig};
use std::collections::BTreeMap;
use std::rc::Rc;
use turmoil::Sim;

/// What the builder or a fault call refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A fault named a host that is not one of the Redis masters.
    #[error("`{name}` is not a Redis host of this simulation (hosts: {})", known.join(", "))]
    UnknownHost {
        /// The name given.
        name: String,
        /// The Redis hosts, in definition order.
        known: Vec<String>,
    },
    /// Two masters with one name.
    #[error("Redis host `{name}` is defined twice")]
    DuplicateHost {
        /// The name.
        name: String,
    },
    /// A clock that would not be a clock.
    #[error("clock of `{node}`: drift_ppm {reason}")]
    BadDrift {
        /// The node.
        node: String,
        /// Why.
        reason: String,
    },
    /// No master at all.
    #[error("no Redis host: call masters(n) or master(name) before install")]
    NoHosts,
}

/// Settings of the Redis masters, before they are installed in a [`Sim`].
#[derive(Debug, Clone)]
pub struct RedisHostsBuilder {
    masters: Vec<String>,
    clocks: BTreeMap<String, ClockSpec>,
    persistence: Persistence,
    epoch_ms: i64,
}

impl Default for RedisHostsBuilder {
    fn default() -> Self {
        RedisHostsBuilder {
            masters: Vec::new(),
            clocks: BTreeMap::new(),
            persistence: Persistence::None,
            epoch_ms: WorldConfig::default().epoch_ms,
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

    /// Gives node `node` (a master, or a service node whose operations are recorded) the clock
    /// `spec`: wall-clock offset from true time and drift. Nodes without one read true time.
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

    /// Steps node `node`'s wall clock by `delta_ms` (negative: backwards); a master's keys
    /// expire by its wall clock, so a jump forward expires them early.
    pub fn jump_clock(&self, sim: &mut Sim<'_>, node: &str, delta_ms: i64) {
        self.record_fault(
            sim,
            node,
            Fault::ClockJump {
                node: node.to_string(),
                delta_ms,
            },
        );
        self.recording.clock(node).jump(delta_ms);
        if let Some(server) = self.servers.get(node) {
            server.wake();
        }
    }

    /// Sets node `node`'s clock rate error from now on, keeping its readings continuous.
    pub fn set_drift(&self, sim: &mut Sim<'_>, node: &str, drift_ppm: i64) -> Result<(), Error> {
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
        if let Some(server) = self.servers.get(node) {
            server.wake();
        }
        Ok(())
    }

    /// Drops every message between hosts `a` and `b` (`Sim::partition`), recorded as a fault.
    pub fn partition(&self, sim: &mut Sim<'_>, a: &str, b: &str) {
        self.record_fault(
            sim,
            "net",
            Fault::Partition {
                a: a.to_string(),
                b: b.to_string(),
                oneway: false,
            },
        );
        sim.partition(a, b);
    }

    /// Restores the link between `a` and `b` (`Sim::repair`), recorded as a fault.
    pub fn repair(&self, sim: &mut Sim<'_>, a: &str, b: &str) {
        self.record_fault(
            sim,
            "net",
            Fault::Heal {
                a: a.to_string(),
                b: b.to_string(),
                oneway: false,
            },
        );
        sim.repair(a, b);
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
        crate::mutual_exclusion(&self.history())
    }

    /// Every lockstep checker's verdict on the history so far, in report order.
    pub fn check_all(&self) -> Vec<CheckResult> {
        crate::check_all(&self.history())
    }
}

/// The `mutual-exclusion` checker over `history`.
pub(crate) fn mutual_exclusion(history: &History) -> CheckResult {
    MutualExclusion.check(&lockstep::history::OpHistory::new(history))
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
            let mut conn = crate::connect("redis").await?;
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
