//! RESP2 framing on top of `redis-protocol`'s RESP2 decoder and encoder: the encoder writes every
//! RESP2 reply; the decoder ([`decode_command`]) is the reference the servers' own reader
//! ([`crate::CommandReader`], which every host reads with) is tested against.
//!
//! Differences from Redis' own reader, all deliberate:
//! * inline commands (`PING\r\n` typed into telnet) are not supported: any frame that does not
//!   start with `*` is a protocol error;
//! * the text of a protocol error is `ERR Protocol error: invalid RESP frame` for every frame the
//!   library rejects, where Redis names the exact fault (`invalid multibulk length`, ...); a
//!   command element that is not a bulk string gets Redis' own `expected '$', got 'X'`;
//! * Redis' size limits (1M arguments, 512 MB bulk strings) are not enforced.
//!
//! Like Redis, the two bytes after a bulk string's payload are skipped without checking that
//! they are CRLF.

use super::reply::Reply;
use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::encode::extend_encode;
use redis_protocol::resp2::types::BytesFrame;

/// Parses one command (an array of bulk strings) from the front of `buf`, consuming it.
///
/// `Ok(None)` means more bytes are needed (nothing is consumed). Empty arrays (`*0`) and nil
/// arrays (`*-1`) are skipped, as Redis does. `Err` is a protocol error with Redis' reply text
/// (`ERR Protocol error: ...`); after it the connection should be closed, as Redis does.
pub fn decode_command(buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, String> {
    loop {
        let Some(&first) = buf.first() else {
            return Ok(None);
        };
        if first != b'*' {
            return Err(format!("ERR Protocol error: expected '*', got '{}'", printable(first)));
        }
        let frame = match decode_bytes_mut(buf) {
            Ok(None) => return Ok(None),
            Ok(Some((frame, _consumed, _bytes))) => frame,
            Err(_) => return Err("ERR Protocol error: invalid RESP frame".to_string()),
        };
        match frame {
            BytesFrame::Null => continue,
            BytesFrame::Array(items) if items.is_empty() => continue,
            BytesFrame::Array(items) => {
                let mut args = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        BytesFrame::BulkString(b) => args.push(b),
                        BytesFrame::Null => return Err("ERR Protocol error: invalid bulk length".to_string()),
                        other => return Err(format!("ERR Protocol error: expected '$', got '{}'", kind_byte(&other))),
                    }
                }
                return Ok(Some(args));
            }
            other => return Err(format!("ERR Protocol error: expected '*', got '{}'", kind_byte(&other))),
        }
    }
}

/// Appends the RESP2 encoding of `reply` to `out`.
///
/// CR and LF inside status and error texts are replaced by spaces (they would corrupt the
/// stream; Redis sanitizes its error texts the same way).
pub fn encode_reply(reply: &Reply, out: &mut BytesMut) {
    match reply {
        // redis-protocol's RESP2 frames have a single null, which encodes as `$-1`; the nil
        // array is the one literal written here.
        Reply::Array(None) => out.extend_from_slice(b"*-1\r\n"),
        Reply::Array(Some(items)) if items.iter().any(contains_nil_array) => {
            out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
            for item in items {
                encode_reply(item, out);
            }
        }
        other => {
            let frame = to_frame(other);
            // Encoding into a growable BytesMut cannot fail: extend_encode reserves what
            // the frame needs first.
            let _ = extend_encode(out, &frame, false);
        }
    }
}

fn contains_nil_array(reply: &Reply) -> bool {
    match reply {
        Reply::Array(None) => true,
        Reply::Array(Some(items)) => items.iter().any(contains_nil_array),
        _ => false,
    }
}

fn to_frame(reply: &Reply) -> BytesFrame {
    match reply {
        Reply::Status(s) => BytesFrame::SimpleString(Bytes::from(sanitize(s).into_bytes())),
        Reply::Error(e) => BytesFrame::Error(sanitize(e).into()),
        Reply::Integer(i) => BytesFrame::Integer(*i),
        Reply::Bulk(None) | Reply::Array(None) => BytesFrame::Null,
        Reply::Bulk(Some(b)) => BytesFrame::BulkString(b.clone()),
        Reply::Array(Some(items)) => BytesFrame::Array(items.iter().map(to_frame).collect()),
    }
}

fn sanitize(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

fn kind_byte(frame: &BytesFrame) -> char {
    match frame {
        BytesFrame::SimpleString(_) => '+',
        BytesFrame::Error(_) => '-',
        BytesFrame::Integer(_) => ':',
        BytesFrame::BulkString(_) | BytesFrame::Null => '$',
        BytesFrame::Array(_) => '*',
    }
}

/// A byte as an error text shows it: printable ASCII as itself, anything else as `?` (a reply must
/// be UTF-8 without CR or LF).
pub(crate) fn printable(b: u8) -> char {
    if b.is_ascii_graphic() || b == b' ' {
        b as char
    } else {
        '?'
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn decodes_commands_and_waits_for_more_bytes() {
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI"[..]);
        assert_eq!(decode_command(&mut buf), Ok(Some(vec![b("GET"), b("k")])));
        assert_eq!(decode_command(&mut buf), Ok(None));
        assert_eq!(&buf[..], b"*1\r\n$4\r\nPI");
        buf.extend_from_slice(b"NG\r\n");
        assert_eq!(decode_command(&mut buf), Ok(Some(vec![b("PING")])));
        assert!(buf.is_empty());
        assert_eq!(decode_command(&mut buf), Ok(None));
    }

    #[test]
    fn skips_empty_and_nil_arrays() {
        let mut buf = BytesMut::from(&b"*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n"[..]);
        assert_eq!(decode_command(&mut buf), Ok(Some(vec![b("PING")])));
    }

    #[test]
    fn malformed_frames_are_protocol_errors() {
        let cases: &[(&[u8], &str)] = &[
            (b"*x\r\n", "ERR Protocol error: invalid RESP frame"),
            (b"*1\r\n$-5\r\n", "ERR Protocol error: invalid RESP frame"),
            (b"*1\r\n$3x\r\nabc\r\n", "ERR Protocol error: invalid RESP frame"),
            (b"*1\r\n!3\r\n", "ERR Protocol error: invalid RESP frame"),
            (b"*1\r\n:3\r\n", "ERR Protocol error: expected '$', got ':'"),
            (b"*1\r\n*0\r\n", "ERR Protocol error: expected '$', got '*'"),
            (b"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length"),
            (b"PING\r\n", "ERR Protocol error: expected '*', got 'P'"),
            (b"$3\r\nabc\r\n", "ERR Protocol error: expected '*', got '$'"),
        ];
        for (input, want) in cases {
            let mut buf = BytesMut::from(*input);
            assert_eq!(
                decode_command(&mut buf),
                Err(want.to_string()),
                "input {:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn encodes_every_reply_kind() {
        let cases: Vec<(Reply, &[u8])> = vec![
            (Reply::ok(), b"+OK\r\n"),
            (Reply::error("ERR x\r\ny"), b"-ERR x  y\r\n"),
            (Reply::Integer(-7), b":-7\r\n"),
            (Reply::nil(), b"$-1\r\n"),
            (Reply::bulk(b("")), b"$0\r\n\r\n"),
            (Reply::bulk(b("a\r\nb")), b"$4\r\na\r\nb\r\n"),
            (Reply::Array(None), b"*-1\r\n"),
            (Reply::Array(Some(vec![])), b"*0\r\n"),
            (
                Reply::Array(Some(vec![Reply::Integer(1), Reply::nil(), Reply::bulk(b("x"))])),
                b"*3\r\n:1\r\n$-1\r\n$1\r\nx\r\n",
            ),
            (
                Reply::Array(Some(vec![Reply::Array(Some(vec![Reply::Array(None)]))])),
                b"*1\r\n*1\r\n*-1\r\n",
            ),
        ];
        for (reply, want) in cases {
            let mut out = BytesMut::new();
            encode_reply(&reply, &mut out);
            assert_eq!(&out[..], want, "{reply:?}");
        }
    }

    #[test]
    fn round_trip_encode_decode() {
        // A command encoded as a reply array of bulk strings decodes back to the same args.
        let args = vec![
            b("SET"),
            b("k"),
            b("v\r\nwith crlf"),
            b(""),
            Bytes::from(vec![0u8, 255]),
        ];
        let mut out = BytesMut::new();
        encode_reply(
            &Reply::Array(Some(args.iter().cloned().map(Reply::bulk).collect())),
            &mut out,
        );
        encode_reply(&Reply::Array(Some(vec![Reply::bulk(b("PING"))])), &mut out);
        assert_eq!(decode_command(&mut out), Ok(Some(args)));
        assert_eq!(decode_command(&mut out), Ok(Some(vec![b("PING")])));
        assert_eq!(decode_command(&mut out), Ok(None));
    }
}
