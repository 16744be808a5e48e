//! What the builder, a fault call, the schedule, the driver or the report refuse: the crate's one
//! error type, below every module that returns it.

/// What the builder, a fault call, the schedule, the driver or the report refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A fault named a host that is not a host of the simulation.
    #[error("`{name}` is not a host of this simulation (hosts: {})", known.join(", "))]
    UnknownSimHost {
        /// The name given.
        name: String,
        /// The simulation's hosts and clients, in order.
        known: Vec<String>,
    },
    /// A clock fault on a node that is not a Redis host.
    #[error(
        "{kind} of `{node}`: clock faults apply to the Redis hosts only ({}); a service's software \
         sleeps and times out on turmoil's clock, which a clock fault does not move",
        masters.join(", ")
    )]
    ClockOfService {
        /// `clock-jump` or `drift`.
        kind: &'static str,
        /// The node named.
        node: String,
        /// The Redis hosts.
        masters: Vec<String>,
    },
    /// A fault kind this crate does not apply under turmoil.
    #[error("fault `{kind}` is not applied under turmoil: {reason}")]
    Unsupported {
        /// The kind.
        kind: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// A fault of the schedule does not fit the simulation (an unknown node, a node of the wrong
    /// kind).
    #[error("fault schedule: fault[{index}] ({kind}): {message}")]
    BadFault {
        /// Its position in the schedule.
        index: usize,
        /// Its kind.
        kind: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A fault that does not fit the simulation's nodes (a crash of a service, a link from a
    /// host to itself, a number out of range).
    #[error("fault `{kind}`: {message}")]
    Refused {
        /// Its kind.
        kind: &'static str,
        /// What is wrong (naming the field).
        message: String,
    },
    /// The schedule's text could not be read (the message names the table and key at fault).
    #[error("{0}")]
    Schedule(String),
    /// turmoil's step failed: a host's or a client's software returned an error.
    #[error("the simulation stopped at {at_ms} ms: {message}")]
    Sim {
        /// True ms of the step.
        at_ms: u64,
        /// turmoil's error.
        message: String,
    },
    /// The report directory could not be written.
    #[error("report: {0}")]
    Report(String),
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
