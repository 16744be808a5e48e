//! [`LockEnv`]: what a lock client is given to work with — its node's view of the world and
//! nothing more.
//!
//! A lock runs on a client node, so it sees what software on that node sees: the node's own
//! wall and monotonic clocks (which drift, and the wall clock jumps), sleeps and timeouts
//! counted on those clocks, the node's seeded random stream, tasks spawned on the node (frozen
//! with it by a pause), and one reconnecting link per Redis master. It cannot read true time,
//! touch the pause gate or write into the history: the world keeps those, and the workload
//! records every lock call itself.

use crate::model::ClockKind;
use lockstep_sim::node::LocalTimeout;
use lockstep_sim::{Node, RedisLink};
use rand::RngCore;
use std::cell::RefMut;
use std::future::Future;

/// What a lock client is built from: the client node's clocks, sleeps, random stream and task
/// spawning, and its links to the masters. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LockEnv {
    node: Node,
    masters: Vec<RedisLink>,
    fencing_master: usize,
}

impl LockEnv {
    /// The context of a lock client on `node`, with one link per master (in topology order)
    /// and the index in `masters` of the master that issues fencing tokens.
    pub fn new(node: &Node, masters: Vec<RedisLink>, fencing_master: usize) -> Self {
        LockEnv {
            node: node.clone(),
            masters,
            fencing_master,
        }
    }

    /// The client node's name.
    pub fn name(&self) -> &str {
        self.node.name()
    }

    /// The node's wall clock, ms since the Unix epoch. Drifts, and jumps with clock-jump faults.
    pub fn wall_ms(&self) -> i64 {
        self.node.wall_ms()
    }

    /// The node's monotonic clock, ms. Drifts, never jumps.
    pub fn monotonic_ms(&self) -> i64 {
        self.node.monotonic_ms()
    }

    /// The reading of the node's `clock`, ms.
    pub fn now_ms(&self, clock: ClockKind) -> i64 {
        match clock {
            ClockKind::Monotonic => self.monotonic_ms(),
            ClockKind::Wall => self.wall_ms(),
        }
    }

    /// Sleeps `local_ms` milliseconds as counted by the node's clock rate.
    pub async fn sleep_local_ms(&self, local_ms: u64) {
        self.node.sleep_local_ms(local_ms).await
    }

    /// Runs `future` with a deadline of `local_ms` by the node's clock rate.
    pub async fn timeout_local_ms<F: Future>(&self, local_ms: u64, future: F) -> Result<F::Output, LocalTimeout> {
        self.node.timeout_local_ms(local_ms, future).await
    }

    /// The lock's seeded random stream (do not hold it across an `.await`): the node's side
    /// stream, apart from the workload's, so that what a lock draws never shifts the schedule.
    pub fn rng(&self) -> RefMut<'_, impl RngCore> {
        self.node.side_rng()
    }

    /// Spawns a task on the node (a background extender, say): a pause of the node freezes it
    /// too. Abort it through the returned handle.
    pub fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        self.node.spawn(future)
    }

    /// One reconnecting link per master, in topology order.
    pub fn masters(&self) -> &[RedisLink] {
        &self.masters
    }

    /// The index in [`masters`](Self::masters) of the master that issues fencing tokens.
    pub fn fencing_master(&self) -> usize {
        self.fencing_master
    }

    /// The link to the master that issues fencing tokens, if there is one.
    pub(crate) fn fencing_link(&self) -> Option<&RedisLink> {
        self.masters.get(self.fencing_master)
    }

    /// The node itself, for the crate's own machinery (`using`'s keep-alive task); never handed
    /// to lock code.
    pub(crate) fn node(&self) -> &Node {
        &self.node
    }
}
