//! A RESP server loop over turmoil's simulated TCP, shared by the Redis masters and the fenced
//! resource.
//!
//! Each accepted connection gets its own task, spawned through the node so that a pause freezes
//! it. Frames are decoded with `redis-protocol` (see [`crate::redis::codec`]); a malformed frame
//! gets a protocol error reply and the connection is closed, as Redis does, while the server keeps
//! serving every other connection.
//!
//! A handler answers at once ([`Handler`]) or, for blocking commands such as `WAIT`, may hand back
//! a future ([`DeferringHandler`], [`Response::Later`]): the connection waits for it before it
//! reads the next command, as a blocked Redis client does.

use crate::history::EventKind;
use crate::node::Node;
use crate::redis::{decode_command, encode_reply, Reply};
use bytes::{Bytes, BytesMut};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil::net::{TcpListener, TcpStream};

/// What a server does with one command: `(connection id, peer host name, args) -> reply`.
pub type Handler = Rc<dyn Fn(u64, &str, &[Bytes]) -> Reply>;

/// A reply now, or one that a blocking command gives later.
pub enum Response {
    /// The reply.
    Now(Reply),
    /// The reply, once the future completes (the connection reads nothing meanwhile).
    Later(Pin<Box<dyn Future<Output = Reply>>>),
}

/// What a server with blocking commands does with one command.
pub type DeferringHandler = Rc<dyn Fn(u64, &str, &[Bytes]) -> Response>;

/// Listens on `port` and serves RESP commands with `handler` until the host is crashed.
pub async fn serve(node: Node, port: u16, handler: Handler) -> turmoil::Result {
    let deferring: DeferringHandler = Rc::new(move |conn, peer, args| Response::Now(handler(conn, peer, args)));
    serve_deferring(node, port, deferring).await
}

/// Like [`serve`], with a handler that may answer later.
pub async fn serve_deferring(node: Node, port: u16, handler: DeferringHandler) -> turmoil::Result {
    let listener = TcpListener::bind(("0.0.0.0", port)).await?;
    let next_conn = Rc::new(Cell::new(0u64));
    loop {
        let (stream, peer) = listener.accept().await?;
        let conn = next_conn.get() + 1;
        next_conn.set(conn);
        let peer_name = turmoil::reverse_lookup(peer.ip()).unwrap_or_else(|| peer.ip().to_string());
        let handler = handler.clone();
        let server = node.clone();
        node.spawn(async move {
            // A connection ends on EOF or error; neither concerns the server as a whole.
            let _ = connection(&server, stream, conn, &peer_name, handler).await;
        });
    }
}

async fn connection(
    node: &Node,
    mut stream: TcpStream,
    conn: u64,
    peer: &str,
    handler: DeferringHandler,
) -> std::io::Result<()> {
    let mut input = BytesMut::with_capacity(4096);
    let mut output = BytesMut::with_capacity(4096);
    loop {
        loop {
            match decode_command(&mut input) {
                Ok(Some(args)) => {
                    let reply = match handler(conn, peer, &args) {
                        Response::Now(reply) => reply,
                        Response::Later(future) => {
                            // Replies go out in order: send what is ready, then block.
                            if !output.is_empty() {
                                stream.write_all(&output).await?;
                                output.clear();
                            }
                            future.await
                        }
                    };
                    if node.drops_reply_to(peer) {
                        node.record(EventKind::Note {
                            text: format!(
                                "reply dropped (drop-reply): `{}` from {peer} on connection {conn} ran, its reply {} is lost; the connection answers nothing more",
                                render_args(&args).join(" "),
                                render_reply(&reply)
                            ),
                        });
                        if !output.is_empty() {
                            stream.write_all(&output).await?;
                        }
                        return ignore_the_rest(stream).await;
                    }
                    encode_reply(&reply, &mut output);
                }
                Ok(None) => break,
                Err(protocol_error) => {
                    encode_reply(&Reply::Error(protocol_error), &mut output);
                    stream.write_all(&output).await?;
                    stream.shutdown().await?;
                    return Ok(());
                }
            }
        }
        if !output.is_empty() {
            stream.write_all(&output).await?;
            output.clear();
        }
        if stream.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
    }
}

/// Reads and ignores what arrives on a connection whose replies are lost, until the peer closes it.
async fn ignore_the_rest(mut stream: TcpStream) -> std::io::Result<()> {
    let mut sink = BytesMut::with_capacity(4096);
    while stream.read_buf(&mut sink).await? > 0 {
        sink.clear();
    }
    Ok(())
}

/// A one-line rendering of a reply for the history and timelines.
pub fn render_reply(reply: &Reply) -> String {
    match reply {
        Reply::Status(s) => format!("+{s}"),
        Reply::Error(e) => format!("-{e}"),
        Reply::Integer(i) => format!(":{i}"),
        Reply::Bulk(None) | Reply::Array(None) => "(nil)".to_string(),
        Reply::Bulk(Some(b)) => format!("\"{}\"", String::from_utf8_lossy(b)),
        Reply::Array(Some(items)) => {
            let inner: Vec<String> = items.iter().map(render_reply).collect();
            format!("[{}]", inner.join(", "))
        }
    }
}

/// Lossy UTF-8 renderings of command arguments.
pub fn render_args(args: &[Bytes]) -> Vec<String> {
    args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}
