//! A minimal connection loop over lockstep's engine, private to this crate.
//!
//! **To be replaced by the shared server loop** (issue 41, item 1: one Redis server loop in
//! `lockstep-sim`, generic over the stream, with a public host trait) once it lands: this one
//! exists only so that the turmoil hosts serve connections before it does.
//!
//! It reads commands with lockstep's codec ([`decode_command`]), runs each on the host's engine
//! in the connection's own [`ClientSession`] (name, `MULTI` queue, watched keys, protocol), and
//! writes each reply in the protocol the connection negotiated ([`ReplyEncoder`]: RESP2, or RESP3
//! after `HELLO 3`). A protocol error is answered, then the connection is closed, as Redis does.
//! Left out (the shared loop has them): blocking commands block (`BLPOP` on empty lists answers
//! a nil array at once, as inside `MULTI`), `SUBSCRIBE` and pushes of `PUBLISH`ed messages,
//! `WAIT`, and input limits.

use crate::server::Server;
use bytes::BytesMut;
use lockstep_sim::redis::{decode_command, ClientSession, Reply, ReplyEncoder};
use std::rc::Rc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Serves connection `conn` from `peer` on `server` until the client closes it, it breaks, or a
/// protocol error ends it.
pub(crate) async fn serve_connection<S>(server: Rc<Server>, mut stream: S, conn: u64, peer: String)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut session = ClientSession::new(conn as i64);
    let mut encoder = ReplyEncoder::new();
    let mut input = BytesMut::with_capacity(4096);
    let mut output = BytesMut::new();
    loop {
        let mut closing = false;
        loop {
            match decode_command(&mut input) {
                Ok(Some(args)) => {
                    let reply = server.execute(&mut session, &args, conn, &peer);
                    encoder.encode(&args, &reply, &mut output);
                }
                Ok(None) => break,
                Err(text) => {
                    encoder.encode(&[], &Reply::Error(text), &mut output);
                    closing = true;
                    break;
                }
            }
        }
        if !output.is_empty() {
            if stream.write_all(&output).await.is_err() {
                return;
            }
            output.clear();
        }
        if closing {
            let _ = stream.shutdown().await;
            return;
        }
        match stream.read_buf(&mut input).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}
