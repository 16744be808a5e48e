//! How a server's command becomes an event of the history: one way for every host (the
//! simulated masters, `lockstep live`/`serve`, turmoil hosts).
//!
//! A command is recorded with its arguments as lossy UTF-8, its reply rendered on one line
//! ([`crate::server::render_reply`]), the key effects it had and the peer that sent it. Long
//! arguments and replies are cut as the history cuts them (an argument after
//! [`MAX_EVENT_ARG_BYTES`], a reply after [`MAX_EVENT_TEXT_BYTES`], ending with `… (N bytes)`)
//! without rendering them whole first: a script may return or raise tens of megabytes, and a
//! live client may send values of many megabytes.

use crate::server::{render_reply, RecordedCommand};
use crate::Reply;
use lockstep_history::history::{bounded_lossy, cut_with_note, EventKind, MAX_EVENT_ARG_BYTES, MAX_EVENT_TEXT_BYTES};

impl RecordedCommand<'_> {
    /// The command as the history records it: cut as the history cuts long texts, with the
    /// peer that sent it (a `WAIT` or a blocking command too).
    pub fn event(self) -> EventKind {
        EventKind::Command {
            conn: self.conn,
            args: self
                .args
                .iter()
                .map(|a| bounded_lossy(a, MAX_EVENT_ARG_BYTES))
                .collect(),
            reply: render_reply_bounded(self.reply, MAX_EVENT_TEXT_BYTES),
            effects: self.effects,
            client: Some(self.peer.to_string()),
        }
    }
}

/// A command of the replication stream as a replica applied it: on connection 0, answered
/// `+OK`, from no client (the history cuts its long arguments when it keeps it).
pub fn replicated_command(args: Vec<String>) -> EventKind {
    EventKind::Command {
        conn: 0,
        args,
        reply: "+OK".to_string(),
        effects: Vec::new(),
        client: None,
    }
}

/// The length of `bytes` as lossy UTF-8 (`String::from_utf8_lossy(bytes).len()`), without
/// converting them.
fn lossy_len(bytes: &[u8]) -> usize {
    bytes
        .utf8_chunks()
        .map(|chunk| chunk.valid().len() + if chunk.invalid().is_empty() { 0 } else { 3 })
        .sum()
}

/// The length of [`render_reply`]'s text for `reply`, without rendering it.
fn rendered_len(reply: &Reply) -> usize {
    match reply {
        Reply::Status(s) | Reply::Error(s) => 1 + s.len(),
        Reply::Integer(i) => 1 + usize::from(*i < 0) + i.unsigned_abs().checked_ilog10().unwrap_or(0) as usize + 1,
        Reply::Bulk(None) | Reply::Array(None) => "(nil)".len(),
        Reply::Bulk(Some(b)) => 2 + lossy_len(b),
        Reply::Array(Some(items)) => {
            2 + items.iter().map(rendered_len).sum::<usize>() + 2 * items.len().saturating_sub(1)
        }
    }
}

/// Appends [`render_reply`]'s text for `reply` to `out`, stopping once `out` holds `room` bytes.
fn render_prefix(reply: &Reply, out: &mut String, room: usize) {
    if out.len() >= room {
        return;
    }
    match reply {
        Reply::Bulk(Some(b)) => {
            out.push('"');
            let take = b.len().min(room.saturating_sub(out.len()));
            out.push_str(&String::from_utf8_lossy(&b[..take]));
            out.push('"');
        }
        Reply::Array(Some(items)) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if out.len() >= room {
                    return;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                render_prefix(item, out, room);
            }
            out.push(']');
        }
        Reply::Status(s) | Reply::Error(s) if s.len() > room => {
            out.push(if matches!(reply, Reply::Status(_)) { '+' } else { '-' });
            let mut cut = room.min(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            out.push_str(&s[..cut]);
        }
        other => out.push_str(&render_reply(other)),
    }
}

/// [`render_reply`], cut to at most `max` bytes ending with `… (N bytes)` (`N`: the length of
/// the whole text) when it is longer.
pub fn render_reply_bounded(reply: &Reply, max: usize) -> String {
    let total = rendered_len(reply);
    if total <= max {
        return render_reply(reply);
    }
    let mut out = String::new();
    render_prefix(reply, &mut out, max);
    cut_with_note(&mut out, max, total);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn replies_render_as_before_until_they_are_too_long_and_then_are_cut() {
        let small = [
            Reply::Status("OK".into()),
            Reply::error("ERR no"),
            Reply::Integer(-42),
            Reply::Integer(0),
            Reply::Integer(i64::MIN),
            Reply::Integer(1_000_000),
            Reply::Bulk(None),
            Reply::Array(None),
            Reply::Bulk(Some(Bytes::from_static(b"a\xffb\xc3"))),
            Reply::Array(Some(vec![
                Reply::Bulk(Some(Bytes::from_static(b"k"))),
                Reply::Array(Some(vec![Reply::Integer(1), Reply::Bulk(None)])),
            ])),
            Reply::Array(Some(Vec::new())),
        ];
        for reply in &small {
            assert_eq!(rendered_len(reply), render_reply(reply).len(), "{reply:?}");
            assert_eq!(render_reply_bounded(reply, MAX_EVENT_TEXT_BYTES), render_reply(reply));
        }
        let big = [
            Reply::Error(format!("ERR {}", "e".repeat(1_000_000))),
            Reply::Bulk(Some(Bytes::from(vec![b'v'; 10_000_000]))),
            Reply::Array(Some(vec![Reply::Bulk(Some(Bytes::from(vec![0xff; 5_000]))); 1_000])),
        ];
        for reply in &big {
            let full = render_reply(reply);
            let cut = render_reply_bounded(reply, MAX_EVENT_TEXT_BYTES);
            assert!(cut.len() <= MAX_EVENT_TEXT_BYTES, "{}", cut.len());
            assert!(
                cut.ends_with(&format!("… ({} bytes)", full.len())),
                "{}",
                &cut[cut.len() - 40..]
            );
            let kept = cut.split('…').next().unwrap_or_default();
            assert!(full.starts_with(kept));
        }
    }

    #[test]
    fn every_host_records_a_command_one_way() {
        let ten_kib = Bytes::from(vec![b'v'; 10 * 1024]);
        let huge = Bytes::from(vec![b'w'; MAX_EVENT_ARG_BYTES + 1]);
        let args = [
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"k"),
            ten_kib.clone(),
            huge,
        ];
        let reply = Reply::Bulk(Some(Bytes::from(vec![b'r'; 5_000])));
        let event = RecordedCommand {
            conn: 3,
            peer: "client-1",
            args: &args,
            reply: &reply,
            effects: Vec::new(),
            blocking: true,
        }
        .event();
        let EventKind::Command {
            conn,
            args,
            reply,
            client,
            ..
        } = event
        else {
            panic!("not a command: {event:?}");
        };
        assert_eq!(conn, 3);
        // A 10 KiB value is kept whole, as a scenario's largest values are.
        assert_eq!(args[2].len(), 10 * 1024);
        // Past 64 KiB an argument is cut with its length said.
        assert!(args[3].len() <= MAX_EVENT_ARG_BYTES);
        assert!(
            args[3].ends_with(&format!("… ({} bytes)", MAX_EVENT_ARG_BYTES + 1)),
            "{}",
            &args[3][args[3].len() - 30..]
        );
        // A reply past 4 KiB likewise.
        assert!(reply.len() <= MAX_EVENT_TEXT_BYTES);
        assert!(reply.ends_with("… (5002 bytes)"), "{}", &reply[reply.len() - 30..]);
        // A blocking command names its client like any other.
        assert_eq!(client.as_deref(), Some("client-1"));
    }

    #[test]
    fn a_replicated_command_is_on_connection_zero_from_no_client() {
        let EventKind::Command {
            conn, reply, client, ..
        } = replicated_command(vec!["DEL".into(), "k".into()])
        else {
            panic!("not a command");
        };
        assert_eq!((conn, reply.as_str(), client), (0, "+OK", None));
    }
}
