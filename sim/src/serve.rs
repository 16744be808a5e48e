//! Accept loops over the simulated network ([`crate::wire`]): the Redis masters' and the fenced
//! resource's. Each accepted connection gets its own task, spawned through the node so that a pause
//! freezes it, and is served by the one server loop ([`lockstep_redis::server`]): a Redis server's
//! connections by [`lockstep_redis::server::RedisServer::serve_connection`] (blocking commands, pub/sub
//! pushes, per-connection sessions), a simple handler's (the resource) by
//! [`lockstep_redis::server::serve_stream`]. A malformed frame gets a protocol error reply and the
//! connection is closed, as Redis does, while the server keeps serving every other connection.

use crate::machine::SoftwareResult;
use crate::node::Node;
use crate::redis::master::NodeHost;
use bytes::Bytes;
use lockstep_redis::server::{serve_stream, ConnectionOptions, RedisServer, Response};
use lockstep_redis::Reply;
use std::rc::Rc;

pub use lockstep_redis::server::{render_args, render_reply};

/// How the simulated servers serve a connection: Redis' framing, as every host; no budget; a
/// connection whose task a crash aborted is forgotten with its blocked commands (a restarted
/// server must not serve a client that died with its predecessor), as `lockstep live` forgets it.
fn simulated() -> ConnectionOptions {
    ConnectionOptions {
        forget_on_abort: true,
        ..ConnectionOptions::default()
    }
}

/// What a server does with one command: `(connection id, peer host name, args) -> reply`.
pub(crate) type Handler = Rc<dyn Fn(u64, &str, &[Bytes]) -> Reply>;

/// Listens on `port` and serves RESP commands with `handler` until the host is crashed.
pub async fn serve(node: Node, port: u16, handler: Handler) -> SoftwareResult {
    let listener = node.bind(port)?;
    let mut next_conn = 0u64;
    loop {
        let (stream, peer_name) = listener.accept().await?;
        next_conn += 1;
        let conn = next_conn;
        let handler = handler.clone();
        let host = NodeHost::new(node.clone(), None);
        node.spawn(async move {
            let answer = |args: &[Bytes]| Response::Now(handler(conn, &peer_name, args));
            // A connection ends on EOF or error; neither concerns the server as a whole.
            let _ = serve_stream(&host, stream, conn, &peer_name, &answer, None, &simulated()).await;
        });
    }
}

/// Listens on `port` and serves `server`'s connections until the host is crashed (connections are
/// numbered from 1 at every start).
pub(crate) async fn serve_redis(node: Node, port: u16, server: Rc<RedisServer<NodeHost>>) -> SoftwareResult {
    let listener = node.bind(port)?;
    let mut next_conn = 0u64;
    loop {
        let (stream, peer_name) = listener.accept().await?;
        next_conn += 1;
        let conn = next_conn;
        let server = server.clone();
        node.spawn(async move {
            // A connection ends on EOF or error; neither concerns the server as a whole.
            let _ = server.serve_connection(stream, conn, &peer_name, simulated()).await;
        });
    }
}
