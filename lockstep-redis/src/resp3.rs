//! The protocol a connection speaks, RESP2 or RESP3, and the encoding of the engine's replies in
//! it.
//!
//! The engine produces RESP2-shaped [`Reply`]s. A connection that sent a successful `HELLO 3`
//! speaks RESP3 from then on (`HELLO 2` switches back); [`ReplyEncoder`] keeps that per connection
//! and writes each reply in the connection's protocol, as Redis' `addReply*` functions do:
//! * the nil bulk string and the nil array become RESP3's null (`_`);
//! * the replies that are maps in RESP3 (`HELLO`, `HGETALL`, `CONFIG GET`) are written as maps
//!   (`%`), their flat `[field, value, ...]` pairs becoming the map's entries;
//! * `INFO` and `CLIENT LIST`/`CLIENT INFO` are verbatim strings (`=`, format `txt`);
//! * pub/sub messages and `SUBSCRIBE`/`UNSUBSCRIBE` confirmations are pushes (`>`).
//!
//! Left out (listed in docs/redis-differences.md): inside `EXEC` and script replies only the nulls
//! change (Redis would also write a queued `HGETALL` as a map); RESP3 doubles, booleans, sets and
//! big numbers never occur, as no supported command answers them.

use super::codec::encode_reply;
use super::reply::Reply;
use bytes::BytesMut;

/// Encodes a connection's replies in the protocol it negotiated with `HELLO`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplyEncoder {
    resp3: bool,
}

/// How a command's top-level reply is written in RESP3.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Plain,
    Map,
    Verbatim,
    Push,
    /// `[field, value]` pairs (`HRANDFIELD ... WITHVALUES`).
    Pairs,
}

impl ReplyEncoder {
    /// A RESP2 connection (every connection starts so).
    pub fn new() -> Self {
        Self::default()
    }

    #[cfg(test)]
    /// Whether the connection speaks RESP3.
    pub(crate) fn is_resp3(&self) -> bool {
        self.resp3
    }

    /// Writes the reply to the command `args` and, when the command was a successful `HELLO`,
    /// switches to the protocol it answered (the reply itself is already in the new protocol, as
    /// in Redis).
    pub fn encode(&mut self, args: &[bytes::Bytes], reply: &Reply, out: &mut BytesMut) {
        let name = command_name(args);
        if name == "hello" {
            if let Some(proto) = hello_protocol(reply) {
                self.resp3 = proto == 3;
            }
        }
        if !self.resp3 {
            encode_reply(reply, out);
            return;
        }
        // Sorted-set replies carry doubles and pairs in RESP3.
        if super::t_zset::encode_resp3(args, reply, out) {
            return;
        }
        let shape = match name.as_str() {
            "hello" | "hgetall" => Shape::Map,
            "hrandfield" if args.len() == 4 => Shape::Pairs,
            "config" if is_sub(args, "get") => Shape::Map,
            "info" => Shape::Verbatim,
            "client" if is_sub(args, "list") || is_sub(args, "info") => Shape::Verbatim,
            "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" | "ssubscribe" | "sunsubscribe" => Shape::Push,
            _ => Shape::Plain,
        };
        encode_shaped(reply, shape, out);
    }

    /// Writes a message pushed to the connection (a pub/sub message).
    pub(crate) fn encode_push(&self, reply: &Reply, out: &mut BytesMut) {
        if self.resp3 {
            encode_shaped(reply, Shape::Push, out);
        } else {
            encode_reply(reply, out);
        }
    }
}

fn command_name(args: &[bytes::Bytes]) -> String {
    args.first()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .unwrap_or_default()
}

fn is_sub(args: &[bytes::Bytes], sub: &str) -> bool {
    args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(sub.as_bytes()))
}

/// The `proto` field of a successful `HELLO` reply.
fn hello_protocol(reply: &Reply) -> Option<i64> {
    let Reply::Array(Some(items)) = reply else {
        return None;
    };
    items.chunks(2).find_map(|pair| match pair {
        [Reply::Bulk(Some(field)), Reply::Integer(proto)] if field.as_ref() == b"proto" => Some(*proto),
        _ => None,
    })
}

fn encode_shaped(reply: &Reply, shape: Shape, out: &mut BytesMut) {
    match (reply, shape) {
        (Reply::Array(Some(items)), Shape::Map) if items.len() % 2 == 0 => {
            out.extend_from_slice(format!("%{}\r\n", items.len() / 2).as_bytes());
            for item in items {
                encode_resp3(item, out);
            }
        }
        (Reply::Array(Some(items)), Shape::Push) => {
            out.extend_from_slice(format!(">{}\r\n", items.len()).as_bytes());
            for item in items {
                encode_resp3(item, out);
            }
        }
        (Reply::Array(Some(items)), Shape::Pairs) if items.len() % 2 == 0 => {
            out.extend_from_slice(format!("*{}\r\n", items.len() / 2).as_bytes());
            for pair in items.chunks(2) {
                out.extend_from_slice(b"*2\r\n");
                pair.iter().for_each(|item| encode_resp3(item, out));
            }
        }
        (Reply::Bulk(Some(text)), Shape::Verbatim) => {
            out.extend_from_slice(format!("={}\r\ntxt:", text.len() + 4).as_bytes());
            out.extend_from_slice(text);
            out.extend_from_slice(b"\r\n");
        }
        _ => encode_resp3(reply, out),
    }
}

/// A reply in RESP3 with RESP2's shapes: only the nulls differ.
fn encode_resp3(reply: &Reply, out: &mut BytesMut) {
    match reply {
        Reply::Bulk(None) | Reply::Array(None) => out.extend_from_slice(b"_\r\n"),
        Reply::Array(Some(items)) => {
            out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
            for item in items {
                encode_resp3(item, out);
            }
        }
        other => encode_reply(other, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    fn encoded(enc: &mut ReplyEncoder, cmd: &[&str], reply: &Reply) -> String {
        let mut out = BytesMut::new();
        enc.encode(&args(cmd), reply, &mut out);
        String::from_utf8(out.to_vec()).unwrap()
    }

    fn hello(proto: i64) -> Reply {
        Reply::Array(Some(vec![
            Reply::bulk("server"),
            Reply::bulk("redis"),
            Reply::bulk("proto"),
            Reply::Integer(proto),
        ]))
    }

    #[test]
    fn hrandfield_with_values_answers_pairs_in_resp3() {
        let mut enc = ReplyEncoder::new();
        encoded(&mut enc, &["HELLO", "3"], &hello(3));
        let flat = Reply::Array(Some(["f1", "v1", "f2", "v2"].into_iter().map(Reply::bulk).collect()));
        assert_eq!(
            encoded(&mut enc, &["HRANDFIELD", "h", "2", "WITHVALUES"], &flat),
            "*2\r\n*2\r\n$2\r\nf1\r\n$2\r\nv1\r\n*2\r\n$2\r\nf2\r\n$2\r\nv2\r\n"
        );
        let names = Reply::Array(Some(vec![Reply::bulk("f1")]));
        assert_eq!(
            encoded(&mut enc, &["HRANDFIELD", "h", "1"], &names),
            "*1\r\n$2\r\nf1\r\n"
        );
    }

    #[test]
    fn hello_3_switches_the_connection_to_resp3_and_hello_2_back() {
        let mut enc = ReplyEncoder::new();
        assert_eq!(encoded(&mut enc, &["GET", "k"], &Reply::nil()), "$-1\r\n");
        // A refused HELLO changes nothing.
        assert_eq!(
            encoded(
                &mut enc,
                &["HELLO", "4"],
                &Reply::error("NOPROTO unsupported protocol version")
            ),
            "-NOPROTO unsupported protocol version\r\n"
        );
        assert!(!enc.is_resp3());
        assert_eq!(
            encoded(&mut enc, &["hello", "3"], &hello(3)),
            "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n"
        );
        assert!(enc.is_resp3());
        assert_eq!(encoded(&mut enc, &["GET", "k"], &Reply::nil()), "_\r\n");
        assert_eq!(
            encoded(
                &mut enc,
                &["EVAL", "x", "0"],
                &Reply::Array(Some(vec![Reply::Integer(1), Reply::nil()]))
            ),
            "*2\r\n:1\r\n_\r\n"
        );
        assert_eq!(encoded(&mut enc, &["INFO"], &Reply::bulk("a:1")), "=7\r\ntxt:a:1\r\n");
        assert_eq!(
            encoded(
                &mut enc,
                &["CONFIG", "GET", "maxmemory"],
                &Reply::Array(Some(vec![Reply::bulk("maxmemory"), Reply::bulk("0")]))
            ),
            "%1\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"
        );
        let mut out = BytesMut::new();
        enc.encode_push(
            &Reply::Array(Some(vec![Reply::bulk("message"), Reply::bulk("c"), Reply::bulk("m")])),
            &mut out,
        );
        assert_eq!(&out[..], b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n");
        assert_eq!(
            encoded(&mut enc, &["HELLO", "2"], &hello(2)),
            "*4\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:2\r\n"
        );
        assert_eq!(encoded(&mut enc, &["GET", "k"], &Reply::nil()), "$-1\r\n");
    }
}
