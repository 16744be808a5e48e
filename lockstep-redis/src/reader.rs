//! Reading RESP commands from a client's bytes, as Redis reads its clients' queries
//! (`processMultibulkBuffer` in Redis' `networking.c`), with Redis' limits and error texts: the
//! framing of the one server loop ([`crate::server`]), for the simulated servers, `lockstep live`
//! and `lockstep serve` alike.
//!
//! The bytes may come from any local process, so a declared length is a claim, not a size to
//! allocate: [`CommandReader`] keeps only the bytes that actually arrived (the buffer grows as
//! they do), refuses a bulk length above [`PROTO_MAX_BULK_LEN`] or a garbage one with
//! `ERR Protocol error: invalid bulk length`, a multibulk count above [`MULTIBULK_MAX`] or a garbage
//! one with `ERR Protocol error: invalid multibulk length`, and a length line longer than
//! [`PROTO_INLINE_MAX_SIZE`] with `too big mbulk count string` / `too big bulk count string`.
//! How much a connection may hold at once is for the server's caller to bound; it reads
//! [`CommandReader::buffered`].
//!
//! Like Redis: a non-positive multibulk count (`*0`, `*-1`, `*-10`) is skipped, the number is
//! parsed as Redis' `string2ll` does (no sign but `-`, no leading zero, no blank), the byte after a
//! length line's `\r` is skipped without looking at it, and so are the two bytes after a bulk
//! payload. A line that does not start with `*` is an inline command, split as Redis splits it
//! (quotes and escapes included); the reference decoder it is tested against
//! ([`super::decode_command`]) refuses inline commands.
//!
//! Arguments are copied out of the query buffer: a value kept in the keyspace must not pin the
//! (possibly much larger) buffer it arrived in, or memory would no longer be what the limits count.

use super::codec::printable;
use super::syntax::parse_ll as string2ll;
use bytes::{Buf, Bytes, BytesMut};

/// The longest bulk string a client may declare: Redis' `proto-max-bulk-len` default, 512 MB.
pub const PROTO_MAX_BULK_LEN: usize = 512 * 1024 * 1024;

/// The most elements a command may declare: 1,048,576, the bound of Redis up to 6.2 (Redis 7
/// accepts up to `INT_MAX`; lockstep keeps the lower one, see `docs/redis-differences.md`).
pub const MULTIBULK_MAX: usize = 1024 * 1024;

/// The longest length line (`*N` or `$N`) Redis waits for before it gives up: `PROTO_INLINE_MAX_SIZE`.
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;

/// A query buffer emptied with more capacity than this is given back (Redis shrinks idle query
/// buffers too): one burst must not keep its memory for the rest of the run.
const IDLE_CAPACITY_MAX: usize = 64 * 1024;

/// Splits an inline command line into arguments as Redis's `sdssplitargs` does; `None` for
/// unbalanced quotes (or a closing quote not followed by a space).
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        loop {
            if in_double {
                let c = *line.get(i)?;
                if c == b'\\' && i + 3 < line.len() && line[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex(line[i + 2]), line.get(i + 3).and_then(|c| hex(*c))) {
                        current.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < line.len() {
                    let e = line[i + 1];
                    current.push(match e {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                    i += 2;
                    continue;
                }
                if c == b'"' {
                    // The closing quote must be followed by a space or the end.
                    if line.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
                        return None;
                    }
                    i += 1;
                    break;
                }
                current.push(c);
                i += 1;
            } else if in_single {
                let c = *line.get(i)?;
                if c == b'\\' && line.get(i + 1) == Some(&b'\'') {
                    current.push(b'\'');
                    i += 2;
                    continue;
                }
                if c == b'\'' {
                    if line.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
                        return None;
                    }
                    i += 1;
                    break;
                }
                current.push(c);
                i += 1;
            } else {
                match line.get(i) {
                    None => break,
                    Some(c) if c.is_ascii_whitespace() => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(&c) => current.push(c),
                }
                i += 1;
            }
        }
        args.push(Bytes::from(current));
    }
}

/// Reads commands from a client's bytes, one at a time, as they arrive.
#[derive(Debug, Default)]
pub struct CommandReader {
    /// Bytes received and not yet consumed.
    buf: BytesMut,
    /// Elements of the current command still to read (0: between commands).
    remaining: usize,
    /// The length of the element whose payload is awaited, once its `$N` line is read.
    bulk_len: Option<usize>,
    /// How far the length line at the front of `buf` was searched for its `\r` already, so that
    /// a line arriving a byte at a time is not searched again from its start each time.
    scanned: usize,
    /// The elements of the current command read so far.
    args: Vec<Bytes>,
    /// Their payload bytes.
    args_bytes: usize,
    /// The capacity the buffer is given back when it is emptied with much more.
    initial_capacity: usize,
}

impl CommandReader {
    /// An empty reader.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty reader whose buffer starts with room for `bytes` (a server reading its socket
    /// straight into [`Self::input_mut`] reads up to that much at once).
    pub fn with_capacity(bytes: usize) -> Self {
        CommandReader {
            buf: BytesMut::with_capacity(bytes),
            initial_capacity: bytes,
            ..Self::default()
        }
    }

    /// The query buffer itself, for a reader of a stream to append to (`read_buf`): what is
    /// appended is read as if [`Self::push`]ed.
    pub fn input_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Appends bytes that arrived: the buffer grows by what is given, never by a declared length.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The bytes this reader holds: unconsumed input, plus the elements already read of a command
    /// still arriving (their payload and their handles). A host bounds it through
    /// [`crate::server::ConnectionBudget`] (`lockstep live`'s link: 64 MiB per connection).
    pub fn buffered(&self) -> usize {
        self.buf.len() + self.args_bytes + self.args.len() * std::mem::size_of::<Bytes>()
    }

    /// The capacity of the query buffer itself (for tests: it follows what arrived).
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The next complete command, `Ok(None)` when more bytes are needed, or a protocol error with
    /// Redis' reply text (`ERR Protocol error: ...`), after which the connection is to be closed
    /// (the reader's state is then meaningless).
    pub fn next_command(&mut self) -> Result<Option<Vec<Bytes>>, String> {
        let found = self.parse();
        if self.buf.is_empty() && self.buf.capacity() > IDLE_CAPACITY_MAX {
            self.buf = BytesMut::with_capacity(self.initial_capacity);
        }
        found
    }

    /// An inline command (`processInlineBuffer`): one line, split as `sdssplitargs` splits it
    /// (spaces between arguments; double quotes with `\\n`, `\\r`, `\\t`, `\\b`, `\\a`,
    /// `\\xHH` escapes; single quotes with `\\'`). `Some(vec![])` for an empty line (skipped).
    fn inline(&mut self) -> Result<Option<Vec<Bytes>>, String> {
        let Some(newline) = self.buf.iter().position(|&b| b == b'\n') else {
            if self.buf.len() > PROTO_INLINE_MAX_SIZE {
                return Err("ERR Protocol error: too big inline request".to_string());
            }
            return Ok(None);
        };
        let mut line = &self.buf[..newline];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        let args = split_args(line).ok_or_else(|| "ERR Protocol error: unbalanced quotes in request".to_string());
        self.buf.advance(newline + 1);
        self.scanned = 0;
        args.map(Some)
    }

    fn parse(&mut self) -> Result<Option<Vec<Bytes>>, String> {
        loop {
            if self.remaining == 0 {
                let Some(&first) = self.buf.first() else {
                    return Ok(None);
                };
                if first != b'*' {
                    match self.inline()? {
                        Some(args) if args.is_empty() => continue,
                        Some(args) => return Ok(Some(args)),
                        None => return Ok(None),
                    }
                }
                let Some((line_end, next)) = self.line() else {
                    if self.buf.len() > PROTO_INLINE_MAX_SIZE {
                        return Err("ERR Protocol error: too big mbulk count string".to_string());
                    }
                    return Ok(None);
                };
                let count = match string2ll(&self.buf[1..line_end]) {
                    Some(n) if n <= MULTIBULK_MAX as i64 => n,
                    _ => return Err("ERR Protocol error: invalid multibulk length".to_string()),
                };
                self.buf.advance(next);
                self.scanned = 0;
                if count <= 0 {
                    // Redis skips empty and negative multibulk counts.
                    continue;
                }
                self.remaining = count as usize;
                // No capacity from the count: the vector grows with the elements that arrive.
                self.args = Vec::new();
                self.args_bytes = 0;
            }
            while self.remaining > 0 {
                let len = match self.bulk_len {
                    Some(len) => len,
                    None => {
                        let Some((line_end, next)) = self.line() else {
                            if self.buf.len() > PROTO_INLINE_MAX_SIZE {
                                return Err("ERR Protocol error: too big bulk count string".to_string());
                            }
                            return Ok(None);
                        };
                        if self.buf[0] != b'$' {
                            return Err(format!(
                                "ERR Protocol error: expected '$', got '{}'",
                                printable(self.buf[0])
                            ));
                        }
                        let len = match string2ll(&self.buf[1..line_end]) {
                            Some(n) if (0..=PROTO_MAX_BULK_LEN as i64).contains(&n) => n as usize,
                            _ => return Err("ERR Protocol error: invalid bulk length".to_string()),
                        };
                        self.buf.advance(next);
                        self.scanned = 0;
                        self.bulk_len = Some(len);
                        len
                    }
                };
                // The payload and the two bytes after it (not checked, as in Redis).
                if self.buf.len() < len + 2 {
                    return Ok(None);
                }
                self.args.push(Bytes::copy_from_slice(&self.buf[..len]));
                self.buf.advance(len + 2);
                self.args_bytes += len;
                self.bulk_len = None;
                self.remaining -= 1;
            }
            self.args_bytes = 0;
            return Ok(Some(std::mem::take(&mut self.args)));
        }
    }
}

impl CommandReader {
    /// Where the length line at the front of the buffer ends, as Redis finds it: the first `\r`,
    /// once the byte after it has arrived. Returns (index of the `\r`, index after the line).
    fn line(&mut self) -> Option<(usize, usize)> {
        let Some(at) = self.buf[self.scanned..].iter().position(|&b| b == b'\r') else {
            self.scanned = self.buf.len();
            return None;
        };
        let cr = self.scanned + at;
        // Found: the search stops here until the byte after the `\r` arrives.
        self.scanned = cr;
        (cr + 1 < self.buf.len()).then_some((cr, cr + 2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode_command;
    use proptest::prelude::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    /// Every command of `input`, fed in pieces of `piece` bytes, and the error that ended it, if any.
    fn read_all(input: &[u8], piece: usize) -> (Vec<Vec<Bytes>>, Option<String>) {
        let mut reader = CommandReader::new();
        let mut commands = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            reader.push(chunk);
            loop {
                match reader.next_command() {
                    Ok(Some(args)) => commands.push(args),
                    Ok(None) => break,
                    Err(e) => return (commands, Some(e)),
                }
            }
        }
        (commands, None)
    }

    #[test]
    fn commands_are_read_across_any_split() {
        let input =
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*0\r\n*-1\r\n*-10\r\n*1\r\n$4\r\nPING\r\n*2\r\n$0\r\n\r\n$4\r\na\r\nb\r\n";
        for piece in 1..input.len() {
            let (commands, error) = read_all(input, piece);
            assert_eq!(error, None, "piece {piece}");
            assert_eq!(
                commands,
                vec![vec![b("GET"), b("k")], vec![b("PING")], vec![b(""), b("a\r\nb")]],
                "piece {piece}"
            );
        }
    }

    #[test]
    fn redis_refusals_and_their_texts() {
        let cases: &[(&[u8], &str)] = &[
            (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4294967296\r\n", "invalid bulk length"),
            (b"*1\r\n$536870913\r\n", "invalid bulk length"),
            (b"*1\r\n$-1\r\n", "invalid bulk length"),
            (b"*1\r\n$-5\r\n", "invalid bulk length"),
            (b"*1\r\n$3x\r\nabc\r\n", "invalid bulk length"),
            (b"*1\r\n$+3\r\nabc\r\n", "invalid bulk length"),
            (b"*1\r\n$03\r\nabc\r\n", "invalid bulk length"),
            (b"*1\r\n$\r\n", "invalid bulk length"),
            (b"*1\r\n$99999999999999999999\r\n", "invalid bulk length"),
            (b"*1048577\r\n", "invalid multibulk length"),
            (b"*20000000\r\n", "invalid multibulk length"),
            (b"*x\r\n", "invalid multibulk length"),
            (b"*\r\n", "invalid multibulk length"),
            (b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", "expected '$', got 'f'"),
            (b"*1\r\n:3\r\n", "expected '$', got ':'"),
            (b"\"unbalanced\r\n", "unbalanced quotes in request"),
        ];
        for (input, want) in cases {
            let (_, error) = read_all(input, input.len());
            assert_eq!(
                error,
                Some(format!("ERR Protocol error: {want}")),
                "input {:?}",
                String::from_utf8_lossy(input)
            );
        }
        // Inline commands, as `redis-cli` and `telnet` send them.
        let (commands, error) = read_all(b"PING\r\n\r\nSET k \"a b\\x41\\n\" 'c\\'d'\nGET k\r\n", 5);
        assert!(error.is_none(), "{error:?}");
        let want: Vec<Vec<&[u8]>> = vec![vec![b"PING"], vec![b"SET", b"k", b"a bA\n", b"c'd"], vec![b"GET", b"k"]];
        assert_eq!(
            commands,
            want.iter()
                .map(|c| c.iter().map(|a| Bytes::copy_from_slice(a)).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        );
        // 512 MB exactly is a valid length: the reader waits for the payload.
        let (commands, error) = read_all(b"*1\r\n$536870912\r\nabc", 64);
        assert!(commands.is_empty() && error.is_none());
    }

    #[test]
    fn a_length_line_without_its_end_is_refused_past_64_kib() {
        // The line's whole 64 KiB (with its `*`) is still waited for, one byte more is not.
        let mut input = b"*".to_vec();
        input.extend(std::iter::repeat_n(b'1', PROTO_INLINE_MAX_SIZE - 1));
        let (_, error) = read_all(&input, 4096);
        assert_eq!(error, None, "64 KiB is still waited for");
        input.push(b'1');
        let (_, error) = read_all(&input, 4096);
        assert_eq!(error.as_deref(), Some("ERR Protocol error: too big mbulk count string"));
        let mut input = b"*1\r\n$".to_vec();
        input.extend(std::iter::repeat_n(b'1', PROTO_INLINE_MAX_SIZE));
        let (_, error) = read_all(&input, 4096);
        assert_eq!(error.as_deref(), Some("ERR Protocol error: too big bulk count string"));
    }

    #[test]
    fn a_huge_declared_length_allocates_nothing_for_it() {
        let mut reader = CommandReader::new();
        reader.push(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n");
        assert_eq!(reader.next_command(), Ok(None));
        for _ in 0..100 {
            reader.push(&[b'x'; 1000]);
            assert_eq!(reader.next_command(), Ok(None));
        }
        // What arrived (100 kB) and the two arguments, not the 512 MB declared.
        assert!(reader.buffered() < 110_000, "{}", reader.buffered());
        assert!(reader.capacity() < 300_000, "{}", reader.capacity());
        let mut reader = CommandReader::new();
        reader.push(b"*1048576\r\n");
        assert_eq!(reader.next_command(), Ok(None));
        assert!(reader.args.capacity() == 0 && reader.buffered() == 0);
    }

    #[test]
    fn string2ll_is_redis_strict() {
        for (s, want) in [
            ("0", Some(0)),
            ("7", Some(7)),
            ("-7", Some(-7)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("-9223372036854775809", None),
            ("-0", None),
            ("007", None),
            ("+7", None),
            (" 7", None),
            ("7 ", None),
            ("", None),
            ("-", None),
        ] {
            assert_eq!(string2ll(s.as_bytes()), want, "{s:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        /// Well-formed commands read as the simulated servers' decoder reads them, in any split.
        #[test]
        fn agrees_with_the_simulated_decoder(
            commands in prop::collection::vec(prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20), 1..5), 1..5),
            piece in 1usize..40,
        ) {
            let mut wire = BytesMut::new();
            for args in &commands {
                let reply = crate::Reply::Array(Some(
                    args.iter().map(|a| crate::Reply::bulk(Bytes::copy_from_slice(a))).collect(),
                ));
                crate::encode_reply(&reply, &mut wire);
            }
            let (ours, error) = read_all(&wire, piece);
            prop_assert_eq!(error, None);
            let mut sim = Vec::new();
            while let Ok(Some(args)) = decode_command(&mut wire) {
                sim.push(args);
            }
            prop_assert_eq!(ours, sim);
        }

        /// Any bytes: no panic, a command or a wait or a protocol error, and never more held than
        /// what arrived (plus the handles of the arguments read).
        #[test]
        fn any_bytes_are_read_or_refused_within_what_arrived(
            input in prop::collection::vec(any::<u8>(), 0..300),
            piece in 1usize..50,
        ) {
            let mut reader = CommandReader::new();
            let mut fed = 0;
            for chunk in input.chunks(piece) {
                reader.push(chunk);
                fed += chunk.len();
                let result = loop {
                    match reader.next_command() {
                        Ok(Some(_)) => continue,
                        other => break other,
                    }
                };
                prop_assert!(reader.buffered() <= fed * (1 + std::mem::size_of::<Bytes>()));
                if let Err(e) = result {
                    prop_assert!(e.starts_with("ERR Protocol error: "), "{}", e);
                    break;
                }
            }
        }
    }
}
