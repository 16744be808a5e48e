//! What a generated fault does to the deployment, in the few terms a lock's safety argument is
//! about: a node frozen, a server stopped, a link held, cut, slowed or lossy, a clock stepped or
//! drifting, a master failed over. The assumption-bounded profile (`explore::assumptions`)
//! judges plans by these, never by kind: one kind may do several of them (a rolling restart
//! stops every master in turn).
//!
//! Left out: what a fault does to clients' view of time beyond their clocks, and lost replies
//! (`drop-reply` has no effect here: a lost reply is what a correct lock is built to survive).

use lockstep_sim::{Fault, ScheduledFault};

/// How a server stops (what its persistence keeps decides what it loses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopKind {
    /// A crash: what was not written to disk is lost.
    Crash,
    /// A power loss: what was not fsynced is lost too.
    PowerLoss,
    /// A clean shutdown: an append-only file keeps everything.
    Shutdown,
}

impl StopKind {
    /// Stopping `node` this way at `at_ms`, and its restart `down_ms` later: the world's faults.
    pub fn window(self, at_ms: u64, node: &str, down_ms: u64) -> [ScheduledFault; 2] {
        let node = node.to_string();
        let stop = match self {
            StopKind::Crash => Fault::Crash { node: node.clone() },
            StopKind::PowerLoss => Fault::PowerLoss { node: node.clone() },
            StopKind::Shutdown => Fault::Shutdown { node: node.clone() },
        };
        [
            ScheduledFault { at_ms, fault: stop },
            ScheduledFault {
                at_ms: at_ms + down_ms,
                fault: Fault::Restart { node },
            },
        ]
    }
}

/// One thing a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect<'a> {
    /// `node` stops answering from `at_ms` for `length_ms`, its state kept (a pause).
    Freeze {
        /// The node.
        node: &'a str,
        /// From, true ms.
        at_ms: u64,
        /// How long.
        length_ms: u64,
    },
    /// Redis server `node` stops at `at_ms` and starts again `down_ms` later.
    Stop {
        /// The server.
        node: &'a str,
        /// When it stops, true ms.
        at_ms: u64,
        /// How long it stays down.
        down_ms: u64,
        /// How it stops.
        how: StopKind,
    },
    /// The link `a`–`b` holds its messages for `length_ms` and then delivers them.
    Held {
        /// One side.
        a: &'a str,
        /// The other.
        b: &'a str,
        /// How long.
        length_ms: u64,
    },
    /// The link `a`–`b` drops its messages for `length_ms` (a request lost waits its whole
    /// timeout, however short the cut).
    Cut {
        /// One side.
        a: &'a str,
        /// The other.
        b: &'a str,
        /// How long.
        length_ms: u64,
    },
    /// The link `a`–`b` delays every message by `latency_ms`.
    Latency {
        /// One side.
        a: &'a str,
        /// The other.
        b: &'a str,
        /// The one-way delay, ms.
        latency_ms: u64,
    },
    /// The link `a`–`b` loses `rate_ppm` of its messages from now on.
    Loss {
        /// One side.
        a: &'a str,
        /// The other.
        b: &'a str,
        /// Per-message loss probability, ppm.
        rate_ppm: u32,
    },
    /// `node`'s wall clock steps by `delta_ms`.
    ClockStep {
        /// The node.
        node: &'a str,
        /// The step, ms (forward when positive).
        delta_ms: i64,
    },
    /// `node`'s clock runs `drift_ppm` fast (or slow).
    Drift {
        /// The node.
        node: &'a str,
        /// The rate error, ppm.
        drift_ppm: i64,
    },
    /// Master `node`'s group fails over to a replica.
    Failover {
        /// The group (its original master's name).
        node: &'a str,
    },
    /// Server `server` runs `client`'s next `count` commands and loses their replies: the
    /// client waits out its request timeout for each (the connection answers nothing more).
    RepliesLost {
        /// The server (a master, a replica or the resource).
        server: &'a str,
        /// The client whose replies are lost.
        client: &'a str,
        /// How many.
        count: u32,
    },
}
