//! Client-side connections: a reconnecting redis-rs connection with timeouts.
//!
//! The simulated TCP ([`crate::wire`]) never retransmits: a segment dropped by a partition or by loss leaves the
//! connection silently dead. A real client notices through its timeouts and reconnects; so does
//! [`RedisLink`]. Every request runs under a timeout measured by the node's own clock. A timeout
//! or a broken connection drops the connection (the next request reconnects) and is reported as
//! [`LinkError::Unknown`]: the request may or may not have been applied, which is exactly what a
//! history's `info` records.
//!
//! A link names a host; when that host names a replication group (see
//! [`crate::deployment::Directory`]), the link connects to the group's current master, as a
//! Sentinel-aware client does: before each request it checks that its connection still goes to
//! the current master and reconnects otherwise, and a `READONLY` error reply (a demoted master)
//! drops the connection too.
//!
//! **Reconnect backoff.** A client that keeps reconnecting to a server it is cut off from would
//! fill a day-long run's history with failed connects (the simulator it first ran on, turmoil
//! 0.7.2, even ran out of ephemeral ports that way). Real clients back off instead (ioredis' `retryStrategy`,
//! redis-py's `Retry` with exponential backoff), so after `BACKOFF_AFTER_FAILURES`
//! consecutive failed connects a link waits — doubling from 100 ms up to
//! `BACKOFF_MAX_MS` of true time — before it tries again; a request in the meantime fails at
//! once, certainly not sent. The threshold is high enough that no shipped scenario reaches it,
//! and the bound keeps a day-long partition to a few thousand attempts.

use crate::node::Node;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, FromRedisValue, RedisConnectionInfo};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

/// Why a request over a [`RedisLink`] did not give a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// No connection could be made; the request was certainly not sent.
    #[error("cannot connect to {host}: {reason}")]
    Connect {
        /// The host.
        host: String,
        /// Why.
        reason: String,
    },
    /// The request was sent but no reply came (timeout or broken connection): it may have been
    /// applied.
    #[error("no reply from {host}: {reason}")]
    Unknown {
        /// The host.
        host: String,
        /// Why.
        reason: String,
    },
    /// The server answered with an error reply.
    #[error("{host} replied with an error: {message}")]
    Server {
        /// The host.
        host: String,
        /// The error text.
        message: String,
    },
}

impl LinkError {
    /// Whether the request may have been applied although no success was seen.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, LinkError::Unknown { .. })
    }
}

/// Timeouts of a [`RedisLink`], in ms of the client's own clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkTimeouts {
    /// How long a connect may take.
    pub connect_timeout_ms: u64,
    /// How long a request may wait for its reply.
    pub request_timeout_ms: u64,
}

impl Default for LinkTimeouts {
    fn default() -> Self {
        LinkTimeouts {
            connect_timeout_ms: 100,
            request_timeout_ms: 50,
        }
    }
}

struct LinkInner {
    node: Node,
    host: String,
    port: u16,
    timeouts: RefCell<LinkTimeouts>,
    connection: RefCell<Option<MultiplexedConnection>>,
    /// The server the connection goes to.
    connected_to: RefCell<Option<String>>,
    /// Connects that failed since the last one that succeeded.
    connect_failures: Cell<u32>,
    /// True time (µs) before which no new connect is tried, once backing off.
    next_connect_us: Cell<u64>,
}

/// Consecutive failed connects after which a link starts to back off.
pub(crate) const BACKOFF_AFTER_FAILURES: u32 = 1_000;

/// The longest wait between two connects of a backing-off link, ms of true time.
pub(crate) const BACKOFF_MAX_MS: u64 = 30_000;

/// The wait before the next connect after `failures` consecutive failures, ms (0: none).
fn backoff_ms(failures: u32) -> u64 {
    if failures < BACKOFF_AFTER_FAILURES {
        return 0;
    }
    let doublings = (failures - BACKOFF_AFTER_FAILURES).min(16);
    (100u64 << doublings).min(BACKOFF_MAX_MS)
}

/// A reconnecting connection from a client node to one server (a Redis master or the resource).
#[derive(Clone)]
pub struct RedisLink {
    inner: Rc<LinkInner>,
}

impl std::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLink")
            .field("host", &self.inner.host)
            .field("port", &self.inner.port)
            .finish()
    }
}

impl RedisLink {
    /// A link from `node` to `host:port`. Nothing is connected until the first request.
    pub fn new(node: &Node, host: &str, port: u16, timeouts: LinkTimeouts) -> Self {
        RedisLink {
            inner: Rc::new(LinkInner {
                node: node.clone(),
                host: host.to_string(),
                port,
                timeouts: RefCell::new(timeouts),
                connection: RefCell::new(None),
                connected_to: RefCell::new(None),
                connect_failures: Cell::new(0),
                next_connect_us: Cell::new(0),
            }),
        }
    }

    /// The server's host name.
    pub fn host(&self) -> &str {
        &self.inner.host
    }

    /// The server the link would connect to now (the current master when the host names a
    /// replication group).
    pub fn target(&self) -> String {
        self.inner.node.resolve(&self.inner.host)
    }

    /// Changes the timeouts for later requests.
    pub fn set_timeouts(&self, timeouts: LinkTimeouts) {
        *self.inner.timeouts.borrow_mut() = timeouts;
    }

    /// The current timeouts.
    pub fn timeouts(&self) -> LinkTimeouts {
        *self.inner.timeouts.borrow()
    }

    /// Drops the current connection; the next request reconnects.
    pub(crate) fn disconnect(&self) {
        self.inner.connection.borrow_mut().take();
        self.inner.connected_to.borrow_mut().take();
    }

    async fn connect(&self) -> Result<MultiplexedConnection, LinkError> {
        let target = self.target();
        if self.inner.connected_to.borrow().as_deref() != Some(target.as_str()) {
            // The group's master moved: follow it.
            self.disconnect();
        }
        if let Some(conn) = self.inner.connection.borrow().as_ref() {
            return Ok(conn.clone());
        }
        let node = &self.inner.node;
        let host = self.inner.host.clone();
        let connect_error = |reason: String| LinkError::Connect {
            host: host.clone(),
            reason,
        };
        let now_us = node.true_time_us();
        if now_us < self.inner.next_connect_us.get() {
            return Err(connect_error(format!(
                "reconnect backoff after {} failed connects",
                self.inner.connect_failures.get()
            )));
        }
        let timeout_ms = self.timeouts().connect_timeout_ms;
        let setup = async {
            let stream = node
                .connect(target.as_str(), self.inner.port)
                .await
                .map_err(|e| connect_error(e.to_string()))?;
            // redis-rs' own timeouts run on true time; ours run on the node's clock instead.
            let config = AsyncConnectionConfig::new()
                .set_response_timeout(None)
                .set_connection_timeout(None);
            // redis-rs ties the connection's driver to the lifetime of the info it was built from.
            static INFO: std::sync::OnceLock<RedisConnectionInfo> = std::sync::OnceLock::new();
            let info = INFO.get_or_init(RedisConnectionInfo::default);
            MultiplexedConnection::new_with_config(info, stream, config)
                .await
                .map_err(|e| connect_error(e.to_string()))
        };
        let connected = node
            .timeout_local_ms(timeout_ms, setup)
            .await
            .map_err(|e| connect_error(e.to_string()))
            .and_then(|setup| setup);
        let (conn, driver) = match connected {
            Ok(connected) => {
                self.inner.connect_failures.set(0);
                connected
            }
            Err(e) => {
                let failures = self.inner.connect_failures.get().saturating_add(1);
                self.inner.connect_failures.set(failures);
                let wait_us = backoff_ms(failures).saturating_mul(1_000);
                self.inner
                    .next_connect_us
                    .set(node.true_time_us().saturating_add(wait_us));
                return Err(e);
            }
        };
        node.spawn(driver);
        *self.inner.connection.borrow_mut() = Some(conn.clone());
        *self.inner.connected_to.borrow_mut() = Some(target);
        Ok(conn)
    }

    /// Runs `request` on the connection (connecting first if needed) under the request timeout.
    pub async fn run<T, F, Fut>(&self, request: F) -> Result<T, LinkError>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        let conn = self.connect().await?;
        let timeout_ms = self.timeouts().request_timeout_ms;
        let host = self.inner.host.clone();
        match self.inner.node.timeout_local_ms(timeout_ms, request(conn)).await {
            Err(timeout) => {
                self.disconnect();
                Err(LinkError::Unknown {
                    host,
                    reason: timeout.to_string(),
                })
            }
            Ok(Err(e)) if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() => {
                self.disconnect();
                Err(LinkError::Unknown {
                    host,
                    reason: e.to_string(),
                })
            }
            Ok(Err(e)) => {
                let message = server_error_text(&e);
                if message.starts_with("READONLY") {
                    // A demoted master: ask for the current one on the next request.
                    self.disconnect();
                }
                Err(LinkError::Server { host, message })
            }
            Ok(Ok(value)) => Ok(value),
        }
    }

    /// Sends one command and converts its reply.
    pub async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, LinkError> {
        self.run(|mut conn| async move { cmd.query_async::<T>(&mut conn).await })
            .await
    }
}

/// The error text as the server sent it (`ERR ...`, `NOSCRIPT ...`).
fn server_error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod backoff_tests {
    use super::*;

    #[test]
    fn backoff_starts_at_the_threshold_doubles_and_is_capped() {
        assert_eq!(backoff_ms(0), 0);
        assert_eq!(backoff_ms(BACKOFF_AFTER_FAILURES - 1), 0);
        assert_eq!(backoff_ms(BACKOFF_AFTER_FAILURES), 100);
        assert_eq!(backoff_ms(BACKOFF_AFTER_FAILURES + 1), 200);
        assert_eq!(backoff_ms(BACKOFF_AFTER_FAILURES + 20), BACKOFF_MAX_MS);
        assert_eq!(backoff_ms(u32::MAX), BACKOFF_MAX_MS);
    }

    #[test]
    fn a_day_long_outage_makes_a_few_thousand_attempts() {
        // Count the attempts one link makes in a day of failing, connecting as fast as a request
        // every millisecond would.
        let day_ms: u64 = 86_400_000;
        let (mut at_ms, mut failures) = (0u64, 0u32);
        while at_ms < day_ms {
            failures += 1;
            at_ms += backoff_ms(failures).max(1);
        }
        // A few thousand: the history of a day-long partition stays small.
        assert!(failures < 4_000, "{failures} connects a day");
    }
}
