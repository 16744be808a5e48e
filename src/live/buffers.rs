//! What the connections of one live run hold in memory, and the limits on it.
//!
//! Any local process can connect to a live run's ports, so what a connection buffers is counted
//! as it arrives and bounded: per connection, what its client sent and the server has not yet
//! executed (bytes in the link, the query buffer, the arguments of a command still arriving:
//! `super::resp::QUERY_BUFFER_MAX`) and the replies not yet written to its socket
//! (`super::resp::OUTPUT_BUFFER_MAX`); over the whole run, the sum of both over every connection
//! (`super::resp::RUN_BUFFER_MAX`), past which the connection holding the most is closed — the
//! flooding one, not a lock client with a few bytes in flight; and the number of connections
//! (`super::resp::MAX_CONNECTIONS`). A closed connection is just closed: nothing of it reaches
//! the history, and the run goes on.
//!
//! Everything here lives on the run's single thread (the servers run in one `LocalSet`).

use super::resp::{MAX_CONNECTIONS, OUTPUT_BUFFER_MAX, QUERY_BUFFER_MAX, RUN_BUFFER_MAX};
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use tokio::sync::Notify;

/// The limits of one run (the constants of [`super::resp`] unless a test shrinks them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Client→server bytes one connection may hold.
    pub query: usize,
    /// Server→client bytes one connection may hold.
    pub output: usize,
    /// Bytes all connections may hold together.
    pub run: usize,
    /// Connections open at once.
    pub connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            query: QUERY_BUFFER_MAX,
            output: OUTPUT_BUFFER_MAX,
            run: RUN_BUFFER_MAX,
            connections: MAX_CONNECTIONS,
        }
    }
}

/// The connections of one run and what they hold.
#[derive(Debug)]
pub struct RunBuffers {
    limits: Limits,
    conns: RefCell<Vec<Weak<ConnBuffers>>>,
    total: Cell<usize>,
}

impl RunBuffers {
    /// No connection yet, with `limits`.
    pub fn new(limits: Limits) -> Rc<Self> {
        Rc::new(RunBuffers {
            limits,
            conns: RefCell::new(Vec::new()),
            total: Cell::new(0),
        })
    }

    /// A new connection's account, or `None` when the run already serves
    /// [`Limits::connections`] connections (the caller refuses it, as Redis' `maxclients` does).
    pub fn open(self: &Rc<Self>) -> Option<Rc<ConnBuffers>> {
        let mut conns = self.conns.borrow_mut();
        conns.retain(|c| c.strong_count() > 0);
        if conns.len() >= self.limits.connections {
            return None;
        }
        let conn = Rc::new(ConnBuffers {
            run: self.clone(),
            link_up: Cell::new(0),
            query: Cell::new(0),
            down: Cell::new(0),
            over: Cell::new(false),
            wake: Notify::new(),
        });
        conns.push(Rc::downgrade(&conn));
        Some(conn)
    }

    #[cfg(test)]
    /// What every open connection holds, bytes.
    pub(crate) fn total(&self) -> usize {
        self.total.get()
    }

    /// Past the run's limit: closes the connections holding the most until the others fit.
    fn enforce(&self) {
        if self.total.get() <= self.limits.run {
            return;
        }
        let conns: Vec<Rc<ConnBuffers>> = self.conns.borrow().iter().filter_map(Weak::upgrade).collect();
        // Connections already being closed still count in `total` until they are gone; they are
        // not closed twice, and the others are judged without them.
        let mut kept: usize = conns.iter().filter(|c| !c.over.get()).map(|c| c.held()).sum();
        while kept > self.limits.run {
            let Some(largest) = conns.iter().filter(|c| !c.over.get()).max_by_key(|c| c.held()) else {
                break;
            };
            kept -= largest.held();
            largest.close();
        }
    }
}

/// What one connection holds. Dropped with the connection, it gives its bytes back to the run.
#[derive(Debug)]
pub struct ConnBuffers {
    run: Rc<RunBuffers>,
    /// Client→server bytes read from the socket and not yet taken by the server (or, for a real
    /// `redis-server`, not yet written to it).
    link_up: Cell<usize>,
    /// The server's query buffer for this connection (see [`super::resp::CommandReader::buffered`]).
    query: Cell<usize>,
    /// Server→client bytes not yet written to the socket.
    down: Cell<usize>,
    /// Past a limit: the connection is to be closed.
    over: Cell<bool>,
    wake: Notify,
}

impl ConnBuffers {
    fn held(&self) -> usize {
        self.link_up.get() + self.query.get() + self.down.get()
    }

    fn set(&self, cell: &Cell<usize>, value: usize) {
        let total = self.run.total.get() - cell.get() + value;
        cell.set(value);
        self.run.total.set(total);
    }

    /// Checks the limits after a growth; `false`: the connection is to be closed.
    fn check(&self) -> bool {
        let limits = &self.run.limits;
        if self.link_up.get() + self.query.get() > limits.query || self.down.get() > limits.output {
            self.close();
        }
        self.run.enforce();
        !self.over.get()
    }

    /// `n` client→server bytes entered the link; `false`: over a limit, close the connection.
    pub(crate) fn add_up(&self, n: usize) -> bool {
        self.set(&self.link_up, self.link_up.get() + n);
        self.check()
    }

    /// `n` client→server bytes left the link.
    pub(crate) fn sub_up(&self, n: usize) {
        self.set(&self.link_up, self.link_up.get().saturating_sub(n));
    }

    /// The query buffer now holds `n` bytes; `false`: over a limit, close the connection.
    pub(crate) fn set_query(&self, n: usize) -> bool {
        let grew = n > self.query.get();
        self.set(&self.query, n);
        !grew || self.check()
    }

    /// `n` server→client bytes were queued; `false`: over a limit, close the connection.
    pub(crate) fn add_down(&self, n: usize) -> bool {
        self.set(&self.down, self.down.get() + n);
        self.check()
    }

    /// `n` server→client bytes were written (or dropped).
    pub(crate) fn sub_down(&self, n: usize) {
        self.set(&self.down, self.down.get().saturating_sub(n));
    }

    /// Whether `more` reply bytes, on top of what is queued, would pass the output limit.
    pub(crate) fn output_full(&self, more: usize) -> bool {
        self.down.get() + more > self.run.limits.output
    }

    /// Marks the connection to be closed and wakes [`Self::closed`].
    pub fn close(&self) {
        self.over.set(true);
        self.wake.notify_one();
    }

    /// Completes once the connection is to be closed for what it holds (also when the run's limit
    /// picked it).
    pub async fn closed(&self) {
        while !self.over.get() {
            self.wake.notified().await;
        }
    }
}

impl Drop for ConnBuffers {
    fn drop(&mut self) {
        self.run.total.set(self.run.total.get().saturating_sub(self.held()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Rc<RunBuffers> {
        RunBuffers::new(Limits {
            query: 100,
            output: 50,
            run: 150,
            connections: 3,
        })
    }

    #[test]
    fn a_connection_past_its_own_limits_is_closed() {
        let run = small();
        let a = run.open().unwrap();
        assert!(a.add_up(60));
        assert!(a.set_query(40));
        assert!(!a.add_up(1), "61 + 40 > 100");
        let b = run.open().unwrap();
        assert!(b.add_down(50));
        assert!(b.output_full(1));
        assert!(!b.add_down(1));
    }

    #[test]
    fn past_the_run_limit_the_largest_connection_is_closed() {
        let run = small();
        let (a, b, c) = (run.open().unwrap(), run.open().unwrap(), run.open().unwrap());
        assert!(run.open().is_none(), "three connections at most");
        assert!(a.add_up(10));
        assert!(b.add_up(90));
        // c's 60 bytes make 160 > 150: b, the largest, is closed, not c.
        assert!(c.add_up(60));
        assert!(b.over.get() && !a.over.get() && !c.over.get());
        assert_eq!(run.total(), 160);
        drop(b);
        assert_eq!(run.total(), 70);
        assert!(run.open().is_some(), "a closed connection frees its slot");
        a.sub_up(10);
        c.sub_up(60);
        assert_eq!(run.total(), 0);
    }
}
