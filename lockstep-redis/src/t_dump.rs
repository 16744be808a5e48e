//! `DUMP` and `RESTORE` (<https://redis.io/commands/dump/>, <https://redis.io/commands/restore/>),
//! with a serialized form of lockstep's own: not Redis's RDB bytes, so a payload moves between
//! lockstep nodes only (a Redis payload is refused, and Redis refuses lockstep's).
//!
//! The payload is `type byte, value, version (2 bytes, little-endian), CRC-64 (8 bytes,
//! little-endian, the Jones polynomial Redis uses, over everything before it)`: the same shape as
//! Redis's, with a version ([`DUMP_VERSION`]) no Redis has written. Lengths and counts are LEB128
//! varints; a string is its length then its bytes; a score is an `f64`'s 8 bytes. The value is
//! a string; a list's, set's or hash's count then items (a hash's fields in their order); a
//! sorted set's count then members with their score; a stream's entries (id, pairs), its last
//! id, entries-added count, largest deleted id, first id, and its consumer groups with their
//! pending entries and consumers.
//!
//! `RESTORE` checks the version and checksum first (`ERR DUMP payload version or checksum are
//! wrong`), then reads the value whole (`ERR Bad data format`: a truncated or over-long value, a
//! count larger than the bytes left, an empty list, set, hash or sorted set, a duplicate member
//! or field, a NaN score, stream entries out of order or a group's pending entries that do not
//! match its consumers'). No count is trusted for an allocation: each item takes at least one
//! byte, so nothing is reserved beyond the payload's own size. `sanitize-dump-payload` is
//! accepted and changes nothing: every payload is checked whole.

use super::keyspace::{Keyspace, Value};
use super::reply::Reply;
use super::stream::{Consumer, Group, PendingEntry, Stream, StreamId};
use super::syntax::{eq_ic, parse_ll, NOT_INTEGER, SYNTAX};
use super::zset::ZSet;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The payload version: Redis's RDB versions are small numbers (10 for 7.0); lockstep's is its
/// own, so neither accepts the other's payloads.
pub(crate) const DUMP_VERSION: u16 = 0x4C01;

const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";
const BAD_FORMAT: &str = "ERR Bad data format";

/// The largest stream counter a payload may hold.
const MAX_COUNTER: u64 = i64::MAX as u64;

const T_STRING: u8 = 0;
const T_LIST: u8 = 1;
const T_SET: u8 = 2;
const T_ZSET: u8 = 3;
const T_HASH: u8 = 4;
const T_STREAM: u8 = 5;

/// CRC-64 with the Jones polynomial (reflected `0x95AC9329AC4BC9B5`, initial value 0), bit by
/// bit.
fn crc64(data: &[u8]) -> u64 {
    const POLY: u64 = 0x95AC_9329_AC4B_C9B5;
    let mut crc: u64 = 0;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ POLY } else { crc >> 1 };
        }
    }
    crc
}

fn put_len(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_len(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// The payload of `value`.
pub(crate) fn serialize(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    match value {
        Value::String(s) => {
            out.push(T_STRING);
            put_bytes(&mut out, s);
        }
        Value::List(items) => {
            out.push(T_LIST);
            put_len(&mut out, items.len() as u64);
            for i in items {
                put_bytes(&mut out, i);
            }
        }
        Value::Set(members) => {
            out.push(T_SET);
            put_len(&mut out, members.len() as u64);
            for m in members {
                put_bytes(&mut out, m);
            }
        }
        Value::ZSet(z) => {
            out.push(T_ZSET);
            put_len(&mut out, z.len() as u64);
            for (m, score) in z.iter() {
                put_bytes(&mut out, m);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        Value::Hash(fields) => {
            out.push(T_HASH);
            put_len(&mut out, fields.len() as u64);
            for (f, v) in fields {
                put_bytes(&mut out, f);
                put_bytes(&mut out, v);
            }
        }
        Value::Stream(s) => {
            out.push(T_STREAM);
            put_len(&mut out, s.entries.len() as u64);
            for (id, pairs) in &s.entries {
                put_id(&mut out, *id);
                put_len(&mut out, pairs.len() as u64);
                for (f, v) in pairs {
                    put_bytes(&mut out, f);
                    put_bytes(&mut out, v);
                }
            }
            put_id(&mut out, s.last_id);
            put_len(&mut out, s.entries_added);
            put_id(&mut out, s.max_deleted_id);
            put_id(&mut out, s.first_id);
            put_len(&mut out, s.groups.len() as u64);
            for (name, g) in &s.groups {
                put_bytes(&mut out, name);
                put_id(&mut out, g.last_delivered);
                match g.entries_read {
                    None => out.push(0),
                    Some(n) => {
                        out.push(1);
                        put_len(&mut out, n);
                    }
                }
                put_len(&mut out, g.pending.len() as u64);
                for (id, p) in &g.pending {
                    put_id(&mut out, *id);
                    put_bytes(&mut out, &p.consumer);
                    put_i64(&mut out, p.delivery_time_ms);
                    put_len(&mut out, p.delivery_count);
                }
                put_len(&mut out, g.consumers.len() as u64);
                for (name, c) in &g.consumers {
                    put_bytes(&mut out, name);
                    put_i64(&mut out, c.seen_time_ms);
                }
            }
        }
    }
    out.extend_from_slice(&DUMP_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A reader over a payload's value: every read checks the bytes left.
struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

/// Any malformed value.
struct Bad;

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Result<u8, Bad> {
        let b = *self.data.get(self.at).ok_or(Bad)?;
        self.at += 1;
        Ok(b)
    }

    fn left(&self) -> usize {
        self.data.len() - self.at
    }

    fn len(&mut self) -> Result<u64, Bad> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return Err(Bad);
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Bad)
    }

    /// A count of items each taking at least `min_bytes`: never more than the bytes left allow.
    fn count(&mut self, min_bytes: usize) -> Result<usize, Bad> {
        let n = usize::try_from(self.len()?).map_err(|_| Bad)?;
        if n.saturating_mul(min_bytes) > self.left() {
            return Err(Bad);
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Result<Bytes, Bad> {
        let n = self.count(1)?;
        let b = Bytes::copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(b)
    }

    fn fixed8(&mut self) -> Result<[u8; 8], Bad> {
        let slice = self.data.get(self.at..self.at + 8).ok_or(Bad)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(slice);
        self.at += 8;
        Ok(a)
    }

    fn id(&mut self) -> Result<StreamId, Bad> {
        Ok(StreamId {
            ms: self.len()?,
            seq: self.len()?,
        })
    }
}

/// The value of a payload whose version and checksum are right (the footer already cut off).
fn deserialize(data: &[u8]) -> Result<Value, Bad> {
    let mut c = Cursor { data, at: 0 };
    let value = match c.byte()? {
        T_STRING => Value::String(c.bytes()?),
        T_LIST => {
            let n = c.count(1)?;
            let mut items = VecDeque::with_capacity(n);
            for _ in 0..n {
                items.push_back(c.bytes()?);
            }
            if items.is_empty() {
                return Err(Bad);
            }
            Value::List(items)
        }
        T_SET => {
            let n = c.count(1)?;
            let mut members = BTreeSet::new();
            for _ in 0..n {
                if !members.insert(c.bytes()?) {
                    return Err(Bad);
                }
            }
            if members.is_empty() {
                return Err(Bad);
            }
            Value::Set(members)
        }
        T_ZSET => {
            let n = c.count(9)?;
            let mut z = ZSet::new();
            for _ in 0..n {
                let member = c.bytes()?;
                let score = f64::from_le_bytes(c.fixed8()?);
                if score.is_nan() || z.insert(member, score).is_some() {
                    return Err(Bad);
                }
            }
            if z.is_empty() {
                return Err(Bad);
            }
            Value::ZSet(z)
        }
        T_HASH => {
            let n = c.count(2)?;
            let mut fields: Vec<(Bytes, Bytes)> = Vec::with_capacity(n);
            let mut seen = BTreeSet::new();
            for _ in 0..n {
                let (f, v) = (c.bytes()?, c.bytes()?);
                if !seen.insert(f.clone()) {
                    return Err(Bad);
                }
                fields.push((f, v));
            }
            if fields.is_empty() {
                return Err(Bad);
            }
            Value::Hash(fields)
        }
        T_STREAM => Value::Stream(stream(&mut c)?),
        _ => return Err(Bad),
    };
    if c.left() != 0 {
        return Err(Bad);
    }
    Ok(value)
}

fn stream(c: &mut Cursor<'_>) -> Result<Stream, Bad> {
    let mut s = Stream::default();
    let n = c.count(3)?;
    let mut previous: Option<StreamId> = None;
    for _ in 0..n {
        let id = c.id()?;
        if previous.is_some_and(|p| id <= p) {
            return Err(Bad);
        }
        previous = Some(id);
        let pairs_n = c.count(2)?;
        let mut pairs = Vec::with_capacity(pairs_n);
        for _ in 0..pairs_n {
            pairs.push((c.bytes()?, c.bytes()?));
        }
        if pairs.is_empty() {
            return Err(Bad);
        }
        s.append(id, pairs);
    }
    let last_id = c.id()?;
    let entries_added = c.len()?;
    let max_deleted_id = c.id()?;
    let first_id = c.id()?;
    // Counters stay within what `XSETID` and `XGROUP SETID` accept (signed 64 bits).
    if previous.is_some_and(|p| p > last_id) || entries_added < n as u64 || entries_added > MAX_COUNTER {
        return Err(Bad);
    }
    s.last_id = last_id;
    s.entries_added = entries_added;
    s.max_deleted_id = max_deleted_id;
    s.first_id = s.entries.keys().next().copied().unwrap_or(first_id);
    let groups_n = c.count(4)?;
    for _ in 0..groups_n {
        let name = c.bytes()?;
        let last_delivered = c.id()?;
        let entries_read = match c.byte()? {
            0 => None,
            1 => match c.len()? {
                n if n > MAX_COUNTER => return Err(Bad),
                n => Some(n),
            },
            _ => return Err(Bad),
        };
        let mut g = Group {
            last_delivered,
            entries_read,
            pending: BTreeMap::new(),
            consumers: BTreeMap::new(),
        };
        let pending_n = c.count(11)?;
        for _ in 0..pending_n {
            let id = c.id()?;
            let consumer = c.bytes()?;
            let delivery_time_ms = i64::from_le_bytes(c.fixed8()?);
            let delivery_count = c.len()?;
            if delivery_count > MAX_COUNTER {
                return Err(Bad);
            }
            let entry = PendingEntry {
                consumer,
                delivery_time_ms,
                delivery_count,
            };
            if g.pending.insert(id, entry).is_some() {
                return Err(Bad);
            }
        }
        let consumers_n = c.count(9)?;
        for _ in 0..consumers_n {
            let name = c.bytes()?;
            let seen_time_ms = i64::from_le_bytes(c.fixed8()?);
            let consumer = Consumer {
                seen_time_ms,
                pending: BTreeSet::new(),
            };
            if g.consumers.insert(name, consumer).is_some() {
                return Err(Bad);
            }
        }
        // Each pending entry belongs to a consumer of the group, which lists it.
        for (id, p) in &g.pending {
            g.consumers.get_mut(&p.consumer).ok_or(Bad)?.pending.insert(*id);
        }
        if s.groups.insert(name, g).is_some() {
            return Err(Bad);
        }
    }
    Ok(s)
}

/// The value a payload holds, or the error `RESTORE` answers.
pub(crate) fn load(payload: &[u8]) -> Result<Value, Reply> {
    if payload.len() < 10 {
        return Err(Reply::error(BAD_PAYLOAD));
    }
    let (body, crc) = payload.split_at(payload.len() - 8);
    let version = u16::from_le_bytes([body[body.len() - 2], body[body.len() - 1]]);
    let crc = u64::from_le_bytes(crc.try_into().map_err(|_| Reply::error(BAD_PAYLOAD))?);
    if version != DUMP_VERSION || crc64(body) != crc {
        return Err(Reply::error(BAD_PAYLOAD));
    }
    deserialize(&body[..body.len() - 2]).map_err(|Bad| Reply::error(BAD_FORMAT))
}

/// `DUMP key`: the payload, or nil for a missing key.
pub(crate) fn dump(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match ks.lookup(&args[1], now) {
        None => Reply::nil(),
        Some(e) => Reply::bulk(serialize(&e.value)),
    }
}

/// `RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]`:
/// the options first, then `BUSYKEY` without `REPLACE`, the TTL (ms; 0 none; a Unix time in ms
/// with `ABSTTL`), the payload. A TTL already past stores nothing (and deletes a replaced key).
/// `IDLETIME` and `FREQ` are checked and then ignored (lockstep keeps no LRU/LFU data).
pub(crate) fn restore(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (false, false);
    let mut j = 4;
    while j < args.len() {
        let more = j + 1 < args.len();
        if eq_ic(&args[j], "replace") {
            replace = true;
        } else if eq_ic(&args[j], "absttl") {
            absttl = true;
        } else if eq_ic(&args[j], "idletime") && more && !freq {
            match parse_ll(&args[j + 1]) {
                None => return Reply::error(NOT_INTEGER),
                Some(n) if n < 0 => return Reply::error("ERR Invalid IDLETIME value, must be >= 0"),
                Some(_) => idle = true,
            }
            j += 1;
        } else if eq_ic(&args[j], "freq") && more && !idle {
            match parse_ll(&args[j + 1]) {
                None => return Reply::error(NOT_INTEGER),
                Some(n) if !(0..=255).contains(&n) => {
                    return Reply::error("ERR Invalid FREQ value, must be >= 0 and <= 255")
                }
                Some(_) => freq = true,
            }
            j += 1;
        } else {
            return Reply::error(SYNTAX);
        }
        j += 1;
    }
    let key = &args[1];
    if !replace && ks.lookup(key, now).is_some() {
        return Reply::error("BUSYKEY Target key name already exists.");
    }
    let ttl = match parse_ll(&args[2]) {
        None => return Reply::error(NOT_INTEGER),
        Some(t) if t < 0 => return Reply::error("ERR Invalid TTL value, must be >= 0"),
        Some(t) => t,
    };
    let value = match load(&args[3]) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let existed = replace && ks.lookup(key, now).is_some();
    let expire_at = match ttl {
        0 => None,
        t if absttl => Some(t),
        t => Some(now.saturating_add(t)),
    };
    if expire_at.is_some_and(|t| t <= now) {
        if existed {
            ks.remove(key);
        }
        return Reply::ok();
    }
    ks.insert(key.clone(), value, expire_at);
    Reply::ok()
}

#[cfg(test)]
mod tests {
    use super::{load, BAD_FORMAT, BAD_PAYLOAD};
    use crate::{ClientSession, EngineConfig, RedisEngine, Reply, Value};
    use bytes::Bytes;

    fn args(a: &[&[u8]]) -> Vec<Bytes> {
        a.iter().map(|s| Bytes::copy_from_slice(s)).collect()
    }

    fn run(e: &mut RedisEngine, c: &mut ClientSession, a: &[&str], now: i64) -> Reply {
        let a: Vec<&[u8]> = a.iter().map(|s| s.as_bytes()).collect();
        e.execute_as(c, &args(&a), now)
    }

    fn dump(e: &mut RedisEngine, c: &mut ClientSession, key: &str) -> Bytes {
        match run(e, c, &["DUMP", key], 0) {
            Reply::Bulk(Some(b)) => b,
            other => panic!("DUMP {key}: {other:?}"),
        }
    }

    fn restore(
        e: &mut RedisEngine,
        c: &mut ClientSession,
        key: &str,
        ttl: &str,
        payload: &[u8],
        opts: &[&str],
        now: i64,
    ) -> Reply {
        let mut a: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), ttl.as_bytes(), payload];
        a.extend(opts.iter().map(|o| o.as_bytes()));
        e.execute_as(c, &args(&a), now)
    }

    fn setup() -> (RedisEngine, ClientSession) {
        let mut e = RedisEngine::new(EngineConfig::default());
        let mut c = ClientSession::new(1);
        for cmd in [
            &["SET", "str", "hello\r\n\0"][..],
            &["RPUSH", "list", "1", "", "three", "9223372036854775808"],
            &["SADD", "set", "b", "a", "10"],
            &["ZADD", "zset", "1.5", "a", "-inf", "b", "3", "c"],
            &["HSET", "hash", "z", "1", "a", "2", "m", ""],
            &["XADD", "stream", "1-1", "f", "v"],
            &["XADD", "stream", "2-0", "f", "w", "g", "x"],
            &["XADD", "stream", "3-0", "f", "y"],
            &["XDEL", "stream", "3-0"],
            &["XGROUP", "CREATE", "stream", "grp", "0"],
            &[
                "XREADGROUP",
                "GROUP",
                "grp",
                "alice",
                "COUNT",
                "1",
                "STREAMS",
                "stream",
                ">",
            ],
            &["XGROUP", "CREATECONSUMER", "stream", "grp", "bob"],
        ] {
            run(&mut e, &mut c, cmd, 0);
        }
        (e, c)
    }

    #[test]
    fn every_type_round_trips() {
        let (mut e, mut c) = setup();
        for key in ["str", "list", "set", "zset", "hash", "stream"] {
            let payload = dump(&mut e, &mut c, key);
            let copy = format!("{key}-copy");
            assert_eq!(
                restore(&mut e, &mut c, &copy, "0", &payload, &[], 0),
                Reply::ok(),
                "{key}"
            );
            let ks = e.keyspace();
            let (a, b) = (ks.get(key.as_bytes()), ks.get(copy.as_bytes()));
            match (a.map(|e| &e.value), b.map(|e| &e.value)) {
                // The radix-tree nodes are rebuilt from the entries (approximate trimming counts
                // them): everything else is the same.
                (Some(Value::Stream(x)), Some(Value::Stream(y))) => {
                    assert_eq!(
                        (
                            &x.entries,
                            x.last_id,
                            x.entries_added,
                            x.max_deleted_id,
                            x.first_id,
                            &x.groups
                        ),
                        (
                            &y.entries,
                            y.last_id,
                            y.entries_added,
                            y.max_deleted_id,
                            y.first_id,
                            &y.groups
                        )
                    );
                    assert_eq!(x.used_bytes(), y.used_bytes());
                }
                _ => assert_eq!(a, b, "{key}"),
            }
            assert_eq!(dump(&mut e, &mut c, &copy), payload, "{key}");
        }
        assert_eq!(run(&mut e, &mut c, &["DUMP", "missing"], 0), Reply::nil());
        assert_eq!(e.keyspace().used_bytes(), e.keyspace().recount_used_bytes());
    }

    #[test]
    fn ttl_busykey_and_options() {
        let (mut e, mut c) = setup();
        let p = dump(&mut e, &mut c, "str");
        let err = |t: &str| Reply::Error(t.to_string());
        assert_eq!(
            restore(&mut e, &mut c, "str", "0", &p, &[], 0),
            err("BUSYKEY Target key name already exists.")
        );
        assert_eq!(
            restore(&mut e, &mut c, "str", "-1", &p, &[], 0),
            err("BUSYKEY Target key name already exists.")
        );
        assert_eq!(
            restore(&mut e, &mut c, "n", "-1", &p, &[], 0),
            err("ERR Invalid TTL value, must be >= 0")
        );
        assert_eq!(restore(&mut e, &mut c, "n", "x", &p, &[], 0), err(super::NOT_INTEGER));
        assert_eq!(restore(&mut e, &mut c, "n", "0", &p, &["foo"], 0), err(super::SYNTAX));
        assert_eq!(
            restore(&mut e, &mut c, "n", "0", &p, &["idletime", "1", "freq", "2"], 0),
            err(super::SYNTAX)
        );
        assert_eq!(
            restore(&mut e, &mut c, "n", "0", &p, &["idletime", "-1"], 0),
            err("ERR Invalid IDLETIME value, must be >= 0")
        );
        assert_eq!(
            restore(&mut e, &mut c, "n", "0", &p, &["freq", "256"], 0),
            err("ERR Invalid FREQ value, must be >= 0 and <= 255")
        );
        assert_eq!(
            restore(&mut e, &mut c, "str", "0", &p, &["REPLACE", "IDLETIME", "5"], 0),
            Reply::ok()
        );
        assert_eq!(restore(&mut e, &mut c, "t", "1000", &p, &[], 5_000), Reply::ok());
        assert_eq!(run(&mut e, &mut c, &["PTTL", "t"], 5_000), Reply::Integer(1000));
        assert_eq!(
            restore(&mut e, &mut c, "a", "9000", &p, &["ABSTTL"], 5_000),
            Reply::ok()
        );
        assert_eq!(run(&mut e, &mut c, &["PTTL", "a"], 5_000), Reply::Integer(4000));
        // Already expired: nothing stored, and a replaced key is deleted.
        assert_eq!(
            restore(&mut e, &mut c, "gone", "100", &p, &["ABSTTL"], 5_000),
            Reply::ok()
        );
        assert_eq!(run(&mut e, &mut c, &["EXISTS", "gone"], 5_000), Reply::Integer(0));
        assert_eq!(
            restore(&mut e, &mut c, "a", "5000", &p, &["ABSTTL", "REPLACE"], 5_000),
            Reply::ok()
        );
        assert_eq!(run(&mut e, &mut c, &["EXISTS", "a"], 5_000), Reply::Integer(0));
        assert_eq!(
            run(&mut e, &mut c, &["CONFIG", "SET", "sanitize-dump-payload", "yes"], 0),
            Reply::ok()
        );
    }

    #[test]
    fn corrupted_and_foreign_payloads_are_refused() {
        let (mut e, mut c) = setup();
        let p = dump(&mut e, &mut c, "list");
        let err = |t: &str| Reply::Error(t.to_string());
        let mut flipped = p.to_vec();
        flipped[3] ^= 1;
        assert_eq!(restore(&mut e, &mut c, "n", "0", &flipped, &[], 0), err(BAD_PAYLOAD));
        assert_eq!(restore(&mut e, &mut c, "n", "0", b"xx", &[], 0), err(BAD_PAYLOAD));
        // Redis 7.0's DUMP of the string "1".
        let redis = b"\x00\xc0\x01\x0a\x00\x26\x78\xe7\xb6\xd1\x01\x11\xfc";
        assert_eq!(restore(&mut e, &mut c, "n", "0", redis, &[], 0), err(BAD_PAYLOAD));
        // A valid footer over a malformed value: an empty list, trailing bytes, a huge count.
        for body in [
            &b"\x01\x00"[..],
            b"\x00\x01ab",
            b"\x01\xff\xff\xff\xff\xff\xff\xff\xff\x7f",
            b"\x09",
        ] {
            let mut v = body.to_vec();
            v.extend_from_slice(&super::DUMP_VERSION.to_le_bytes());
            let crc = super::crc64(&v);
            v.extend_from_slice(&crc.to_le_bytes());
            assert_eq!(load(&v), Err(Reply::error(BAD_FORMAT)), "{body:?}");
        }
    }

    #[test]
    fn no_payload_panics() {
        let (mut e, mut c) = setup();
        let seeds: Vec<Vec<u8>> = ["str", "list", "set", "zset", "hash", "stream"]
            .iter()
            .map(|k| dump(&mut e, &mut c, k).to_vec())
            .collect();
        let mut state: u64 = 0x1234_5678;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        let mut accepted = 0;
        for round in 0..600 {
            let seed = &seeds[round % seeds.len()];
            let body_len = seed.len() - 10;
            let mut body = seed[..body_len].to_vec();
            match next() % 4 {
                0 => {
                    let at = next() as usize % body.len();
                    body[at] = next() as u8;
                }
                1 => body.truncate(next() as usize % body.len()),
                2 => {
                    let at = next() as usize % (body.len() + 1);
                    body.insert(at, next() as u8);
                }
                _ => body = (0..next() % 40).map(|_| next() as u8).collect(),
            }
            // Re-signed, so the value reader is what is tested (and an unsigned copy too).
            let raw = body.clone();
            body.extend_from_slice(&super::DUMP_VERSION.to_le_bytes());
            let crc = super::crc64(&body);
            body.extend_from_slice(&crc.to_le_bytes());
            for payload in [&body, &raw] {
                let r = restore(&mut e, &mut c, "fuzz", "0", payload, &["REPLACE"], 0);
                assert!(matches!(&r, Reply::Error(_)) || r == Reply::ok(), "{r:?}");
                if r == Reply::ok() {
                    accepted += 1;
                    // Whatever was accepted reads back and dumps again.
                    for cmd in [
                        &["TYPE", "fuzz"][..],
                        &["XINFO", "STREAM", "fuzz", "FULL"],
                        &["XINFO", "GROUPS", "fuzz"],
                        &["XPENDING", "fuzz", "grp", "-", "+", "10"],
                        &["XAUTOCLAIM", "fuzz", "grp", "carol", "0", "0-0"],
                        &["XREADGROUP", "GROUP", "grp", "dave", "STREAMS", "fuzz", ">"],
                        &["XADD", "fuzz", "*", "k", "v"],
                        &["XTRIM", "fuzz", "MAXLEN", "~", "1"],
                        &["SORT", "fuzz", "ALPHA"],
                        &["ZRANGE", "fuzz", "0", "-1", "WITHSCORES"],
                        &["HGETALL", "fuzz"],
                    ] {
                        run(&mut e, &mut c, cmd, 0);
                    }
                    let again = dump(&mut e, &mut c, "fuzz");
                    assert!(load(&again).is_ok());
                }
            }
        }
        assert!(accepted > 50, "the mutations keep some payloads valid: {accepted}");
        assert_eq!(e.keyspace().used_bytes(), e.keyspace().recount_used_bytes());
    }
}
