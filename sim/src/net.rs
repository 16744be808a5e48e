//! Client-side connections: a reconnecting redis-rs connection with timeouts.
//!
//! turmoil's TCP never retransmits: a segment dropped by a partition or by loss leaves the
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

use crate::node::Node;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, FromRedisValue, RedisConnectionInfo};
use std::cell::RefCell;
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
    pub fn disconnect(&self) {
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
        let timeout_ms = self.timeouts().connect_timeout_ms;
        let setup = async {
            let stream = turmoil::net::TcpStream::connect((target.as_str(), self.inner.port))
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
        let (conn, driver) = node
            .timeout_local_ms(timeout_ms, setup)
            .await
            .map_err(|e| connect_error(e.to_string()))??;
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
