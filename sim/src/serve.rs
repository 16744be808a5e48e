//! A RESP server loop over the simulated network ([`crate::wire`]), shared by the Redis masters and the fenced
//! resource.
//!
//! Each accepted connection gets its own task, spawned through the node so that a pause freezes
//! it. Frames are decoded with `redis-protocol` (see [`crate::redis::codec`]); a malformed frame
//! gets a protocol error reply and the connection is closed, as Redis does, while the server keeps
//! serving every other connection.
//!
//! A handler answers at once ([`Handler`]) or, for blocking commands such as `WAIT`, may hand back
//! a future ([`DeferringHandler`], [`Response::Later`]): the connection waits for it before it
//! reads the next command, as a blocked Redis client does. A command may also answer several
//! replies ([`Response::Many`], as `SUBSCRIBE a b` does). A server with per-connection state
//! passes [`ConnectionHooks`]: it learns when a connection opens and closes, and can push replies
//! to it at any time (pub/sub messages), which are written while the connection waits for input.

use crate::history::EventKind;
use crate::machine::SoftwareResult;
use crate::node::Node;
use crate::redis::{decode_command, encode_reply, Reply, ReplyEncoder};
use crate::wire::SimStream as TcpStream;
use bytes::{Bytes, BytesMut};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// What a server does with one command: `(connection id, peer host name, args) -> reply`.
pub(crate) type Handler = Rc<dyn Fn(u64, &str, &[Bytes]) -> Reply>;

/// A reply now, or one that a blocking command gives later.
pub(crate) enum Response {
    /// The reply.
    Now(Reply),
    /// The reply, once the future completes (the connection reads nothing meanwhile).
    Later(Pin<Box<dyn Future<Output = Reply>>>),
    /// Several replies to one command, in order.
    Many(Vec<Reply>),
}

/// What a server with per-connection state learns about its connections.
#[derive(Clone)]
pub(crate) struct ConnectionHooks {
    /// A connection was accepted: returns the receiver of the replies pushed to it.
    pub open: Rc<dyn Fn(u64) -> mpsc::UnboundedReceiver<Reply>>,
    /// A connection ended (EOF, error, or protocol error).
    pub close: Rc<dyn Fn(u64)>,
}

/// What a server with blocking commands does with one command.
pub(crate) type DeferringHandler = Rc<dyn Fn(u64, &str, &[Bytes]) -> Response>;

/// Listens on `port` and serves RESP commands with `handler` until the host is crashed.
pub async fn serve(node: Node, port: u16, handler: Handler) -> SoftwareResult {
    let deferring: DeferringHandler = Rc::new(move |conn, peer, args| Response::Now(handler(conn, peer, args)));
    serve_deferring(node, port, deferring).await
}

/// Like [`serve`], with a handler that may answer later.
pub(crate) async fn serve_deferring(node: Node, port: u16, handler: DeferringHandler) -> SoftwareResult {
    serve_with_hooks(node, port, handler, None).await
}

/// Like [`serve_deferring`], with per-connection hooks.
pub(crate) async fn serve_with_hooks(
    node: Node,
    port: u16,
    handler: DeferringHandler,
    hooks: Option<ConnectionHooks>,
) -> SoftwareResult {
    let listener = node.bind(port)?;
    let next_conn = Rc::new(Cell::new(0u64));
    loop {
        let (stream, peer_name) = listener.accept().await?;
        let conn = next_conn.get() + 1;
        next_conn.set(conn);
        let handler = handler.clone();
        let server = node.clone();
        let hooks = hooks.clone();
        node.spawn(async move {
            let pushes = hooks.as_ref().map(|h| (h.open)(conn));
            // A connection ends on EOF or error; neither concerns the server as a whole.
            let _ = connection(&server, stream, conn, &peer_name, handler, pushes).await;
            if let Some(hooks) = hooks {
                (hooks.close)(conn);
            }
        });
    }
}

async fn connection(
    node: &Node,
    mut stream: TcpStream,
    conn: u64,
    peer: &str,
    handler: DeferringHandler,
    mut pushes: Option<mpsc::UnboundedReceiver<Reply>>,
) -> std::io::Result<()> {
    let mut input = BytesMut::with_capacity(4096);
    let mut output = BytesMut::with_capacity(4096);
    // RESP2 until a `HELLO 3`.
    let mut encoder = ReplyEncoder::new();
    loop {
        loop {
            match decode_command(&mut input) {
                Ok(Some(args)) => {
                    let (reply, more) = match handler(conn, peer, &args) {
                        Response::Now(reply) => (reply, Vec::new()),
                        Response::Many(mut replies) if !replies.is_empty() => {
                            let first = replies.remove(0);
                            (first, replies)
                        }
                        Response::Many(_) => continue,
                        Response::Later(future) => {
                            // Replies go out in order: send what is ready, then block.
                            if !output.is_empty() {
                                stream.write_all(&output).await?;
                                output.clear();
                            }
                            (future.await, Vec::new())
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
                    encoder.encode(&args, &reply, &mut output);
                    for reply in &more {
                        encoder.encode(&args, reply, &mut output);
                    }
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
        let read = match pushes.as_mut() {
            None => stream.read_buf(&mut input).await?,
            Some(pushes) => loop {
                tokio::select! {
                    biased;
                    Some(push) = pushes.recv() => {
                        encoder.encode_push(&push, &mut output);
                        stream.write_all(&output).await?;
                        output.clear();
                    }
                    read = stream.read_buf(&mut input) => break read?,
                }
            },
        };
        if read == 0 {
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
pub(crate) fn render_args(args: &[Bytes]) -> Vec<String> {
    args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}
