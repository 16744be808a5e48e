//! The run's report and timeline: the same report directory `lockstep ci --report` writes for a
//! scenario (through `lockstep::report::write_external_report`), and the text timeline
//! `lockstep run` prints (`lockstep::report::narrative::text`).

use crate::error::Error;
use crate::hosts::RedisHosts;
use lockstep::history::OpHistory;
use lockstep::report::ExternalRun;
use lockstep_sim::EventKind;
use std::path::{Path, PathBuf};

impl RedisHosts {
    /// What the report says about this run, read from the builder and the history: its name and
    /// seed ([`crate::RedisHostsBuilder::run_name`]), the services that made recorders (one lane
    /// each), the Redis hosts, the faults applied, the TTL of the first `acquire`, `incr` fencing
    /// when a grant carried a token, and the resource's mode. Change what you like and pass it to
    /// [`RedisHosts::report_with`].
    pub fn describe(&self) -> ExternalRun {
        let history = self.history();
        let (name, seed) = self.run_name();
        let mut ttl_ms = 0;
        let mut fenced = false;
        for event in history.events() {
            if let EventKind::Op { op, data, .. } = &event.kind {
                if op == "acquire" {
                    if ttl_ms == 0 {
                        ttl_ms = data.get("ttl_ms").and_then(|t| t.as_u64()).unwrap_or(0);
                    }
                    fenced |= data.get("fencing_token").is_some_and(|t| !t.is_null());
                }
            }
        }
        ExternalRun {
            name: name.to_string(),
            description: "a service under turmoil against lockstep-turmoil's Redis hosts".to_string(),
            file: "turmoil".to_string(),
            seed,
            algorithm: "the service's lock".to_string(),
            fencing: if fenced { "incr" } else { "none" }.to_string(),
            resource: self.recording().resource_mode().name().to_string(),
            ttl_ms,
            clients: self.recording().services(),
            servers: self.names().to_vec(),
            faults: self.faults_applied(),
            replay: format!("the turmoil test that ran `{name}`, with rng_seed({seed})"),
            expect: Default::default(),
        }
    }

    /// Writes the run's report to directory `dir`, as `lockstep ci --report` writes one
    /// scenario's: `report.json`, `summary.md`, `junit.xml`, the timeline chart
    /// (`charts/*.svg`; no PNG copy: that is the `lockstep` command's), `index.html` and the
    /// run's interactive page, every checker's verdict on the history so far. A directory
    /// lockstep did not write is refused rather than replaced. Returns the paths of the files
    /// written.
    pub fn report(&self, dir: impl AsRef<Path>) -> Result<Vec<PathBuf>, Error> {
        self.report_with(dir, &self.describe())
    }

    /// [`RedisHosts::report`] with the description `run` (expectations included: a checker
    /// whose verdict differs from its expectation fails the report).
    pub fn report_with(&self, dir: impl AsRef<Path>, run: &ExternalRun) -> Result<Vec<PathBuf>, Error> {
        let history = self.history();
        let checks = crate::checks::check_all(&history);
        lockstep::report::write_external_report(run, &history, &checks, dir.as_ref()).map_err(Error::Report)
    }

    /// The run told as text, one line per event that matters (grants, releases, commands with
    /// their effect on the lock keys, expiries, faults, resource writes), as `lockstep run`
    /// prints a scenario's timeline.
    pub fn timeline_text(&self) -> String {
        lockstep::report::narrative::text(&OpHistory::new(&self.history()))
    }
}
