//! # lockstep-turmoil: lockstep's Redis inside a turmoil simulation
//!
//! Rust services are often tested under [turmoil](https://docs.rs/turmoil) (tokio-rs' simulated
//! network and time). This crate runs lockstep's simulated Redis masters as turmoil hosts, so a
//! service under turmoil can take its Redis lock against a Redis that misbehaves as lockstep's
//! do, and lockstep's checkers judge what happened:
//!
//! - each master is a turmoil host listening on port 6379 (`turmoil::net::TcpListener`) that
//!   serves lockstep's engine ([`lockstep_sim::redis::RedisEngine`]: the command table, Lua
//!   scripting, expiry by the node's own wall clock);
//! - every Redis host reads its own clock ([`lockstep_sim::clock::NodeClock`]: offset, drift,
//!   jumps) over turmoil's simulated time;
//! - faults are data: a [`FaultSchedule`] of lockstep's faults (the `[[fault]]` kinds of a scenario
//!   file, also read from such tables: [`FaultSchedule::from_toml`]), each at a time, at the first
//!   (or each) grant of a lock key to a service node, or after another fault; [`RedisHosts::step`]
//!   (or [`RedisHosts::run`]) applies it between two turmoil steps, with lockstep's persistence
//!   semantics (`none`: a crashed master comes back empty), and records each fault. A `pause`
//!   holds every link of a host for its duration; clock faults apply to the Redis hosts only (a
//!   service sleeps on turmoil's clock) and are refused on any other node;
//! - one [`lockstep_sim::History`] records every command with its reply, every expiry, every
//!   fault, and the operations the service logs with an [`OpRecorder`] (lockstep's vocabulary:
//!   `acquire`, `release`, and the protected resource's `read`/`write`: [`OpRecorder::write`]);
//!   [`RedisHosts::verdict`] runs the `mutual-exclusion` checker over it,
//!   [`RedisHosts::check_all`] every checker;
//! - [`RedisHosts::report`] writes the report directory `lockstep ci --report` writes for a
//!   scenario (`report.json`, `summary.md`, the timeline chart, `index.html`),
//!   [`RedisHosts::timeline_text`] is the text timeline.
//!
//! ```no_run
//! use lockstep_turmoil::{fault, FaultSchedule, RedisHosts};
//! let mut sim = turmoil::Builder::new().rng_seed(7).build();
//! let hosts = RedisHosts::builder().masters(1).run_name("my-service", 7).install(&mut sim)?;
//! let recorder = hosts.recorder("worker-1");
//! sim.client("worker-1", async move {
//!     let mut redis = lockstep_turmoil::connect("redis-1").await?;
//!     // ... the service's lock, logging acquire/release with `recorder` ...
//!     # let _ = (&mut redis, recorder);
//!     Ok(())
//! });
//! hosts.schedule(
//!     &sim,
//!     FaultSchedule::new()
//!         .when_holds("worker-1", "invoices", fault::crash("redis-1"))
//!         .then_after_ms(300, fault::restart("redis-1")),
//! )?;
//! hosts.run(&mut sim)?;
//! println!("{:?}", hosts.verdict().verdict);
//! hosts.report("target/turmoil-report")?;
//! # Ok::<(), lockstep_turmoil::Error>(())
//! ```
//!
//! Determinism: with `turmoil::Builder::rng_seed` the same seed gives the same history (and
//! digest) on every run; the clocks count from a fixed epoch ([`RedisHostsBuilder::epoch_ms`]),
//! not from turmoil's, which is the real time by default. `--cfg tokio_unstable` is not required
//! (this crate never builds a lockstep world, which does), but turmoil seeds its hosts' tokio
//! schedulers from `rng_seed` only with it: see [`TOKIO_UNSTABLE`].
//!
//! Dependencies: `lockstep` without its `cli` feature — none of the `lockstep` command's
//! (clap, resvg, indicatif, anstream); a report's charts are SVG only.
//!
//! turmoil stays out of lockstep's own simulations: `lockstep-sim` does not depend on it; only
//! this crate does.
//!
//! Connections are served by lockstep's one server loop (`lockstep_sim::redis::server`, the same as the
//! simulated masters', `live`'s and `serve`'s): RESP2/RESP3, `MULTI`/`WATCH`, scripting, blocking
//! `BLPOP`/`BRPOP` (timeouts on the node's wall clock) and pub/sub delivery.
//!
//! Left out: replicas, failover and `WAIT` (one group per master, no replication), restart delays
//! (a restart starts the master at once), freezing a host's runtime (turmoil cannot: a pause
//! holds the host's links, its timers still fire), the `latency`, `loss`, `failover` and
//! `drop-reply` faults. A client crash is not modelled (turmoil crashes hosts, and the services
//! are usually turmoil clients). The resource is in-process, not a turmoil host. See also
//! `docs/turmoil.md`.

#![warn(missing_docs)]

mod checks;
mod client;
mod error;
mod hosts;
mod recording;
mod report;
mod schedule;
mod server;

pub use checks::{check_all, mutual_exclusion};
pub use client::{connect, connect_with};
pub use error::Error;
pub use hosts::{RedisHosts, RedisHostsBuilder};
pub use lockstep::ops::ReadOk;
pub use lockstep::report::ExternalRun;
pub use lockstep_sim::{Fault, FencingMode, ScheduledFault};
pub use schedule::{fault, FaultSchedule, PlannedFault, Trigger};

/// Whether this build has `--cfg tokio_unstable`. lockstep-turmoil does not need it (it never
/// builds a lockstep world, the one thing of lockstep's that requires it), but turmoil uses it
/// to seed each host's tokio scheduler from `Builder::rng_seed`: without it, a `tokio::select!`
/// (in your service, in redis-rs) with more than one branch ready picks one at random, so the
/// same seed can give another history. Set it in `.cargo/config.toml` (`[build] rustflags =
/// ["--cfg", "tokio_unstable"]`) for same-seed-same-history runs.
pub const TOKIO_UNSTABLE: bool = cfg!(tokio_unstable);

/// docs/turmoil.md, whose Rust example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../docs/turmoil.md")]
pub struct TurmoilGuide;
pub use lockstep::checker::CheckResult;
pub use lockstep::model::Verdict;
pub use lockstep::ops::Grant;
pub use lockstep_sim::{ClockSpec, History, Persistence};
pub use recording::{OpRecorder, Recording};
