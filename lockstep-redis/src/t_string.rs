//! String commands (Redis's `t_string.c`): `GET`, `SET` and its older forms (`SETNX`, `SETEX`,
//! `PSETEX`, `GETSET`), `GETEX`, `GETDEL`, `MGET`/`MSET`/`MSETNX`, the counters (`INCR`...
//! `INCRBYFLOAT`), `APPEND`, `STRLEN`, `SETRANGE`, `GETRANGE`/`SUBSTR`, and the bit commands
//! (`SETBIT`, `GETBIT`, `BITCOUNT`, `BITPOS`, `BITOP`), and `LCS`.
//!
//! Reply and error texts, and which error wins when several apply, follow Redis 7.0's
//! documentation (redis.io/commands) and behaviour observed on redis-server 7.0. Strings are
//! byte strings up to `proto-max-bulk-len` (512 MB). `LCS` is here; `BITFIELD` is in
//! `t_bitfield.rs`. Left out: Redis's integer and embedded-string encodings (values are stored
//! as bytes; `OBJECT ENCODING` infers the encoding Redis would report).

use super::keyspace::{Keyspace, Value};
use super::reply::Reply;
use super::syntax::{
    arity_error, eq_ic, human_double, invalid_expire, parse_double, parse_ll, NOT_INTEGER, SYNTAX, WRONGTYPE,
};
use bytes::Bytes;

/// The largest string `SETRANGE`/`APPEND`/`SETBIT` may make: lockstep's per-connection query
/// bound (64 MiB), not Redis's 512 MB `proto-max-bulk-len` — a short command must not make the
/// server allocate half a gigabyte (docs/redis-differences.md).
pub(crate) const MAX_STRING_BYTES: usize = 64 * 1024 * 1024;
const TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// The string at `key`: `Ok(None)` when absent, `Err` (`WRONGTYPE`) for another type.
pub(crate) fn string_of(ks: &mut Keyspace, key: &[u8], now: i64) -> Result<Option<Bytes>, Reply> {
    match ks.lookup(key, now) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err(Reply::error(WRONGTYPE)),
        },
    }
}

/// Stores `value` at `key`, keeping its TTL (a counter, `APPEND`, `SETRANGE`).
fn overwrite_keeping_ttl(ks: &mut Keyspace, key: &Bytes, value: Bytes, now: i64) {
    let ttl = ks.lookup(key, now).and_then(|e| e.expire_at_ms);
    ks.insert(key.clone(), Value::String(value), ttl);
}

pub(crate) fn get(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match string_of(ks, &args[1], now) {
        Ok(v) => Reply::Bulk(v),
        Err(e) => e,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExpireKind {
    Ex,
    Px,
    ExAt,
    PxAt,
}

pub(crate) fn expire_kind(opt: &[u8]) -> Option<ExpireKind> {
    if eq_ic(opt, "ex") {
        Some(ExpireKind::Ex)
    } else if eq_ic(opt, "px") {
        Some(ExpireKind::Px)
    } else if eq_ic(opt, "exat") {
        Some(ExpireKind::ExAt)
    } else if eq_ic(opt, "pxat") {
        Some(ExpireKind::PxAt)
    } else {
        None
    }
}

/// An expiry option's absolute time in ms, or the error (`name` names the command in it).
fn expire_at_ms(kind: ExpireKind, raw: &[u8], now: i64, name: &str) -> Result<i64, Reply> {
    let Some(mut ms) = parse_ll(raw) else {
        return Err(Reply::error(NOT_INTEGER));
    };
    let seconds = matches!(kind, ExpireKind::Ex | ExpireKind::ExAt);
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(invalid_expire(name));
    }
    if seconds {
        ms *= 1000;
    }
    if matches!(kind, ExpireKind::Ex | ExpireKind::Px) {
        match ms.checked_add(now) {
            Some(at) => ms = at,
            None => return Err(invalid_expire(name)),
        }
    }
    if ms <= 0 {
        return Err(invalid_expire(name));
    }
    Ok(ms)
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`, parsed like Redis's
/// `parseExtendedStringArgumentsOrReply` (repeating the same option is allowed).
pub(crate) fn set(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut expire: Option<(ExpireKind, &Bytes)> = None;
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j];
        let next = args.get(j + 1);
        let kind = expire.map(|(k, _)| k);
        let expire_option =
            |want: ExpireKind| -> bool { !keepttl && (kind.is_none() || kind == Some(want)) && next.is_some() };
        if eq_ic(opt, "nx") && !xx {
            nx = true;
        } else if eq_ic(opt, "xx") && !nx {
            xx = true;
        } else if eq_ic(opt, "get") {
            get = true;
        } else if eq_ic(opt, "keepttl") && kind.is_none() {
            keepttl = true;
        } else if let (Some(want), Some(value)) = (expire_kind(opt), next) {
            if !expire_option(want) {
                return Reply::error(SYNTAX);
            }
            expire = Some((want, value));
            j += 1;
        } else {
            return Reply::error(SYNTAX);
        }
        j += 1;
    }
    let expire_at = match expire {
        None => None,
        Some((kind, raw)) => match expire_at_ms(kind, raw, now, "set") {
            Ok(at) => Some(at),
            Err(e) => return e,
        },
    };
    let key = &args[1];
    let old = ks.lookup(key, now).map(|e| {
        (
            match &e.value {
                Value::String(s) => Some(s.clone()),
                _ => None,
            },
            e.expire_at_ms,
        )
    });
    let old_value = match &old {
        Some((Some(s), _)) => Some(s.clone()),
        Some((None, _)) if get => return Reply::error(WRONGTYPE),
        _ => None,
    };
    let found = old.is_some();
    if (nx && found) || (xx && !found) {
        return if get { Reply::Bulk(old_value) } else { Reply::nil() };
    }
    let ttl = match (keepttl, &old) {
        (true, Some((_, t))) => *t,
        _ => expire_at,
    };
    ks.insert(key.clone(), Value::String(args[2].clone()), ttl);
    if get {
        Reply::Bulk(old_value)
    } else {
        Reply::ok()
    }
}

/// `SETNX key value`: 1 when it stored (the key was absent), else 0.
pub(crate) fn setnx(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    if ks.lookup(&args[1], now).is_some() {
        return Reply::Integer(0);
    }
    ks.insert(args[1].clone(), Value::String(args[2].clone()), None);
    Reply::Integer(1)
}

fn setex_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, kind: ExpireKind, name: &str) -> Reply {
    match expire_at_ms(kind, &args[2], now, name) {
        Ok(at) => {
            ks.insert(args[1].clone(), Value::String(args[3].clone()), Some(at));
            Reply::ok()
        }
        Err(e) => e,
    }
}

/// `SETEX key seconds value`.
pub(crate) fn setex(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    setex_generic(ks, args, now, ExpireKind::Ex, "setex")
}

/// `PSETEX key milliseconds value`.
pub(crate) fn psetex(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    setex_generic(ks, args, now, ExpireKind::Px, "psetex")
}

/// `GETSET key value`: the old string, and the new value without a TTL.
pub(crate) fn getset(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let old = match string_of(ks, &args[1], now) {
        Ok(v) => v,
        Err(e) => return e,
    };
    ks.insert(args[1].clone(), Value::String(args[2].clone()), None);
    Reply::Bulk(old)
}

/// `GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]`.
pub(crate) fn getex(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    enum Change {
        Keep,
        Persist,
        At(ExpireKind, Bytes),
    }
    let mut change = Change::Keep;
    let mut j = 2;
    while j < args.len() {
        let opt = &args[j];
        let next = args.get(j + 1);
        let unset = matches!(change, Change::Keep);
        if eq_ic(opt, "persist") && unset {
            change = Change::Persist;
        } else if let (Some(kind), Some(raw), true) = (expire_kind(opt), next, unset) {
            change = Change::At(kind, raw.clone());
            j += 1;
        } else {
            return Reply::error(SYNTAX);
        }
        j += 1;
    }
    let at = match &change {
        Change::At(kind, raw) => match expire_at_ms(*kind, raw, now, "getex") {
            Ok(at) => Some(at),
            Err(e) => return e,
        },
        _ => None,
    };
    let value = match string_of(ks, &args[1], now) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::nil(),
        Err(e) => return e,
    };
    match change {
        Change::Keep => {}
        Change::Persist => {
            if ks.lookup(&args[1], now).is_some_and(|e| e.expire_at_ms.is_some()) {
                ks.set_expire(&args[1], None);
            }
        }
        Change::At(..) => {
            let at = at.unwrap_or(now);
            if at <= now {
                ks.remove(&args[1]);
            } else {
                ks.set_expire(&args[1], Some(at));
            }
        }
    }
    Reply::Bulk(Some(value))
}

/// `GETDEL key`: GET, then DEL when there was a string.
pub(crate) fn getdel(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match string_of(ks, &args[1], now) {
        Ok(Some(v)) => {
            ks.remove(&args[1]);
            Reply::Bulk(Some(v))
        }
        Ok(None) => Reply::nil(),
        Err(e) => e,
    }
}

/// `MGET key...`: nil for a missing key or another type.
pub(crate) fn mget(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    Reply::Array(Some(
        args[1..]
            .iter()
            .map(|key| match ks.lookup(key, now).map(|e| &e.value) {
                Some(Value::String(s)) => Reply::Bulk(Some(s.clone())),
                _ => Reply::nil(),
            })
            .collect(),
    ))
}

fn mset_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, nx: bool) -> Reply {
    if args.len().is_multiple_of(2) {
        return arity_error(if nx { "msetnx" } else { "mset" });
    }
    if nx && args[1..].chunks(2).any(|pair| ks.lookup(&pair[0], now).is_some()) {
        return Reply::Integer(0);
    }
    for pair in args[1..].chunks(2) {
        ks.insert(pair[0].clone(), Value::String(pair[1].clone()), None);
    }
    if nx {
        Reply::Integer(1)
    } else {
        Reply::ok()
    }
}

/// `MSET key value [key value ...]`.
pub(crate) fn mset(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    mset_generic(ks, args, now, false)
}

/// `MSETNX key value [key value ...]`: all or none, only if every key is absent.
pub(crate) fn msetnx(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    mset_generic(ks, args, now, true)
}

/// Adds `by` to the integer at `key` (`incrDecrCommand`).
pub(crate) fn incr_by(ks: &mut Keyspace, key: &Bytes, by: i64, now: i64) -> Reply {
    let current = match string_of(ks, key, now) {
        Err(e) => return e,
        Ok(None) => 0,
        Ok(Some(s)) => match parse_ll(&s) {
            Some(v) => v,
            None => return Reply::error(NOT_INTEGER),
        },
    };
    let Some(new) = current.checked_add(by) else {
        return Reply::error("ERR increment or decrement would overflow");
    };
    overwrite_keeping_ttl(ks, key, Bytes::from(new.to_string()), now);
    Reply::Integer(new)
}

pub(crate) fn incr(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    incr_by(ks, &args[1], 1, now)
}

pub(crate) fn decr(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    incr_by(ks, &args[1], -1, now)
}

pub(crate) fn incrby(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match parse_ll(&args[2]) {
        None => Reply::error(NOT_INTEGER),
        Some(by) => incr_by(ks, &args[1], by, now),
    }
}

pub(crate) fn decrby(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match parse_ll(&args[2]) {
        None => Reply::error(NOT_INTEGER),
        Some(i64::MIN) => Reply::error("ERR decrement would overflow"),
        Some(by) => incr_by(ks, &args[1], -by, now),
    }
}

/// `INCRBYFLOAT key increment`: the new value as Redis's human-readable float.
pub(crate) fn incrbyfloat(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    const NOT_FLOAT: &str = "ERR value is not a valid float";
    let current = match string_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => 0.0,
        Ok(Some(s)) => match parse_double(&s).filter(|v| v.is_finite()) {
            Some(v) => v,
            None => return Reply::error(NOT_FLOAT),
        },
    };
    // An infinite increment parses; its sum is what Redis refuses.
    let Some(by) = parse_double(&args[2]) else {
        return Reply::error(NOT_FLOAT);
    };
    let new = current + by;
    if !new.is_finite() {
        return Reply::error("ERR increment would produce NaN or Infinity");
    }
    let text = Bytes::from(human_double(new));
    overwrite_keeping_ttl(ks, &args[1], text.clone(), now);
    Reply::Bulk(Some(text))
}

/// `APPEND key value`: the new length.
pub(crate) fn append(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let old = match string_of(ks, &args[1], now) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let Some(old) = old else {
        ks.insert(args[1].clone(), Value::String(args[2].clone()), None);
        return Reply::Integer(args[2].len() as i64);
    };
    if old.len() + args[2].len() > MAX_STRING_BYTES {
        return Reply::error(TOO_BIG);
    }
    let mut joined = Vec::with_capacity(old.len() + args[2].len());
    joined.extend_from_slice(&old);
    joined.extend_from_slice(&args[2]);
    let len = joined.len();
    overwrite_keeping_ttl(ks, &args[1], Bytes::from(joined), now);
    Reply::Integer(len as i64)
}

/// `STRLEN key`.
pub(crate) fn strlen(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match string_of(ks, &args[1], now) {
        Ok(v) => Reply::Integer(v.map_or(0, |v| v.len() as i64)),
        Err(e) => e,
    }
}

/// `SETRANGE key offset value`: the new length (zero bytes pad a gap).
pub(crate) fn setrange(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let Some(offset) = parse_ll(&args[2]) else {
        return Reply::error(NOT_INTEGER);
    };
    if offset < 0 {
        return Reply::error("ERR offset is out of range");
    }
    let old = match string_of(ks, &args[1], now) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let value = &args[3];
    let old_len = old.as_ref().map_or(0, |o| o.len());
    if value.is_empty() {
        return Reply::Integer(old_len as i64);
    }
    let offset = offset as u64;
    if offset + value.len() as u64 > MAX_STRING_BYTES as u64 {
        return Reply::error(TOO_BIG);
    }
    let offset = offset as usize;
    let mut bytes = old.map(|o| o.to_vec()).unwrap_or_default();
    if bytes.len() < offset + value.len() {
        bytes.resize(offset + value.len(), 0);
    }
    bytes[offset..offset + value.len()].copy_from_slice(value);
    let len = bytes.len();
    overwrite_keeping_ttl(ks, &args[1], Bytes::from(bytes), now);
    Reply::Integer(len as i64)
}

/// `GETRANGE key start end` (and its old name `SUBSTR`): both ends inclusive, negative from the
/// end.
pub(crate) fn getrange(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (Some(start), Some(end)) = (parse_ll(&args[2]), parse_ll(&args[3])) else {
        return Reply::error(NOT_INTEGER);
    };
    let s = match string_of(ks, &args[1], now) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::bulk(""),
        Err(e) => return e,
    };
    if start < 0 && end < 0 && start > end {
        return Reply::bulk("");
    }
    let len = s.len() as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { (len + end).max(0) } else { end }.min(len - 1);
    if len == 0 || start > end {
        return Reply::bulk("");
    }
    Reply::Bulk(Some(s.slice(start as usize..=end as usize)))
}

/// A bit offset (`SETBIT`/`GETBIT`): 0 to 2^32 - 1.
fn bit_offset(raw: &[u8]) -> Result<usize, Reply> {
    match parse_ll(raw) {
        Some(o) if (0..(1i64 << 32)).contains(&o) && (o as usize) / 8 < MAX_STRING_BYTES => Ok(o as usize),
        _ => Err(Reply::error("ERR bit offset is not an integer or out of range")),
    }
}

/// `SETBIT key offset value`: the bit's old value.
pub(crate) fn setbit(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let offset = match bit_offset(&args[2]) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let on = match args[3].as_ref() {
        b"1" => true,
        b"0" => false,
        _ => return Reply::error("ERR bit is not an integer or out of range"),
    };
    let mut bytes = match string_of(ks, &args[1], now) {
        Ok(v) => v.map(|v| v.to_vec()).unwrap_or_default(),
        Err(e) => return e,
    };
    let byte = offset / 8;
    if bytes.len() <= byte {
        bytes.resize(byte + 1, 0);
    }
    let mask = 1u8 << (7 - (offset % 8));
    let old = bytes[byte] & mask != 0;
    if on {
        bytes[byte] |= mask;
    } else {
        bytes[byte] &= !mask;
    }
    overwrite_keeping_ttl(ks, &args[1], Bytes::from(bytes), now);
    Reply::Integer(i64::from(old))
}

/// `GETBIT key offset`.
pub(crate) fn getbit(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let offset = match bit_offset(&args[2]) {
        Ok(o) => o,
        Err(e) => return e,
    };
    match string_of(ks, &args[1], now) {
        Ok(v) => {
            let bit = v
                .and_then(|v| v.get(offset / 8).copied())
                .is_some_and(|b| b & (1 << (7 - (offset % 8))) != 0);
            Reply::Integer(i64::from(bit))
        }
        Err(e) => e,
    }
}

/// A `start end [BYTE|BIT]` range over `len` bytes: the inclusive bit range, or `None` if empty.
fn bit_range(args: &[Bytes], len: usize) -> Result<Option<(u64, u64)>, Reply> {
    let (Some(start), Some(end)) = (parse_ll(&args[0]), parse_ll(&args[1])) else {
        return Err(Reply::error(NOT_INTEGER));
    };
    let bits = match args.get(2) {
        None => false,
        Some(u) if eq_ic(u, "bit") => true,
        Some(u) if eq_ic(u, "byte") => false,
        Some(_) => return Err(Reply::error(SYNTAX)),
    };
    let total = if bits { len as i64 * 8 } else { len as i64 };
    let start = if start < 0 { (total + start).max(0) } else { start };
    let end = if end < 0 { (total + end).max(0) } else { end }.min(total - 1);
    if total == 0 || start > end {
        return Ok(None);
    }
    Ok(Some(if bits {
        (start as u64, end as u64)
    } else {
        (start as u64 * 8, end as u64 * 8 + 7)
    }))
}

fn bit_at(bytes: &[u8], bit: u64) -> bool {
    bytes[(bit / 8) as usize] & (1 << (7 - (bit % 8))) != 0
}

/// `BITCOUNT key [start end [BYTE|BIT]]`.
pub(crate) fn bitcount(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    if args.len() == 3 || args.len() > 5 {
        return Reply::error(SYNTAX);
    }
    let s = match string_of(ks, &args[1], now) {
        Ok(v) => v.unwrap_or_default(),
        Err(e) => return e,
    };
    let range = if args.len() > 2 {
        match bit_range(&args[2..], s.len()) {
            Ok(r) => r,
            Err(e) => return e,
        }
    } else if s.is_empty() {
        None
    } else {
        Some((0, s.len() as u64 * 8 - 1))
    };
    let Some((from, to)) = range else {
        return Reply::Integer(0);
    };
    let count = (from..=to).filter(|b| bit_at(&s, *b)).count();
    Reply::Integer(count as i64)
}

/// `BITPOS key bit [start [end [BYTE|BIT]]]`.
pub(crate) fn bitpos(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let want = match args[2].as_ref() {
        b"1" => true,
        b"0" => false,
        _ => return Reply::error("ERR The bit argument must be 1 or 0."),
    };
    if args.len() > 6 {
        return Reply::error(SYNTAX);
    }
    let s = match string_of(ks, &args[1], now) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::Integer(if want { -1 } else { 0 }),
        Err(e) => return e,
    };
    let end_given = args.len() > 4;
    let mut range_args: Vec<Bytes> = args[3..].to_vec();
    if range_args.is_empty() {
        range_args.push(Bytes::from_static(b"0"));
    }
    if range_args.len() == 1 {
        range_args.push(Bytes::from_static(b"-1"));
    }
    let range = match bit_range(&range_args, s.len()) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let Some((from, to)) = range else {
        return Reply::Integer(-1);
    };
    match (from..=to).find(|b| bit_at(&s, *b) == want) {
        Some(b) => Reply::Integer(b as i64),
        // Looking for a clear bit past the string's end without an explicit end: the first bit
        // after it (the string is padded with zeros on the right).
        None if !want && !end_given => Reply::Integer(to as i64 + 1),
        None => Reply::Integer(-1),
    }
}

/// `BITOP AND|OR|XOR|NOT destkey key...`: the destination's length.
pub(crate) fn bitop(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let op = &args[1];
    let (and, or, xor, not) = (eq_ic(op, "and"), eq_ic(op, "or"), eq_ic(op, "xor"), eq_ic(op, "not"));
    if !(and || or || xor || not) {
        return Reply::error(SYNTAX);
    }
    if not && args.len() != 4 {
        return Reply::error("ERR BITOP NOT must be called with a single source key.");
    }
    let mut sources = Vec::new();
    for key in &args[3..] {
        match string_of(ks, key, now) {
            Ok(v) => sources.push(v.unwrap_or_default()),
            Err(e) => return e,
        }
    }
    let len = sources.iter().map(Bytes::len).max().unwrap_or(0);
    let mut out = vec![0u8; len];
    for (i, byte) in out.iter_mut().enumerate() {
        let at = |s: &Bytes| s.get(i).copied().unwrap_or(0);
        *byte = if not {
            !at(&sources[0])
        } else {
            let mut acc = at(&sources[0]);
            for s in &sources[1..] {
                acc = if and {
                    acc & at(s)
                } else if or {
                    acc | at(s)
                } else {
                    acc ^ at(s)
                };
            }
            acc
        };
    }
    if len == 0 {
        ks.remove(&args[2]);
    } else {
        ks.insert(args[2].clone(), Value::String(Bytes::from(out)), None);
    }
    Reply::Integer(len as i64)
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`: the longest common subsequence
/// of two strings (missing keys are empty), its length, or its matching ranges (from the end, as
/// Redis 7.0 reports them), by the classic dynamic-programming table and Redis's backtrack.
pub(crate) fn lcs(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (mut len_only, mut idx, mut with_len, mut min_len) = (false, false, false, 0usize);
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j];
        if eq_ic(opt, "len") {
            len_only = true;
        } else if eq_ic(opt, "idx") {
            idx = true;
        } else if eq_ic(opt, "withmatchlen") {
            with_len = true;
        } else if eq_ic(opt, "minmatchlen") && j + 1 < args.len() {
            match parse_ll(&args[j + 1]) {
                Some(n) => min_len = usize::try_from(n).unwrap_or(0),
                None => return Reply::error(NOT_INTEGER),
            }
            j += 1;
        } else {
            return Reply::error(SYNTAX);
        }
        j += 1;
    }
    let mut text = |key: &Bytes| match ks.lookup(key, now).map(|e| &e.value) {
        None => Ok(Bytes::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(Reply::error("ERR The specified keys must contain string values")),
    };
    let (a, b) = match (text(&args[1]), text(&args[2])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    if len_only && idx {
        return Reply::error("ERR If you want both the length and indexes, please just use IDX.");
    }
    let (alen, blen) = (a.len(), b.len());
    // Redis refuses a table past `proto-max-bulk-len`; lockstep past the same 64 MiB it bounds
    // strings by.
    if (alen as u128 + 1) * (blen as u128 + 1) * 4 > MAX_STRING_BYTES as u128 {
        return Reply::error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let width = blen + 1;
    let mut table = vec![0u32; (alen + 1) * width];
    for i in 1..=alen {
        for k in 1..=blen {
            table[i * width + k] = if a[i - 1] == b[k - 1] {
                table[(i - 1) * width + k - 1] + 1
            } else {
                table[(i - 1) * width + k].max(table[i * width + k - 1])
            };
        }
    }
    let total = table[alen * width + blen] as usize;
    if len_only {
        return Reply::Integer(total as i64);
    }
    let mut result = vec![0u8; total];
    let mut at = total;
    let (mut i, mut k) = (alen, blen);
    let mut matches = Vec::new();
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0, 0, 0);
    while i > 0 && k > 0 {
        let mut emit = false;
        if a[i - 1] == b[k - 1] {
            result[at - 1] = a[i - 1];
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (i - 1, i - 1, k - 1, k - 1);
            } else if a_start == i && b_start == k {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            at -= 1;
            i -= 1;
            k -= 1;
        } else {
            if table[(i - 1) * width + k] > table[i * width + k - 1] {
                i -= 1;
            } else {
                k -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        if emit {
            let match_len = a_end - a_start + 1;
            if min_len == 0 || match_len >= min_len {
                let mut m = vec![
                    Reply::Array(Some(vec![Reply::Integer(a_start as i64), Reply::Integer(a_end as i64)])),
                    Reply::Array(Some(vec![Reply::Integer(b_start as i64), Reply::Integer(b_end as i64)])),
                ];
                if with_len {
                    m.push(Reply::Integer(match_len as i64));
                }
                matches.push(Reply::Array(Some(m)));
            }
            a_start = alen;
        }
    }
    if idx {
        return Reply::Array(Some(vec![
            Reply::bulk("matches"),
            Reply::Array(Some(matches)),
            Reply::bulk("len"),
            Reply::Integer(total as i64),
        ]));
    }
    Reply::Bulk(Some(Bytes::from(result)))
}

#[cfg(test)]
mod tests {
    use crate::{EngineConfig, RedisEngine, Reply};
    use bytes::Bytes;

    fn run(e: &mut RedisEngine, args: &[&str]) -> Reply {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
        e.execute(&args, 0)
    }

    #[test]
    fn a_short_command_cannot_make_the_server_allocate_gigabytes() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let too_big = Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        assert_eq!(run(&mut e, &["SETRANGE", "s", "536870000", "x"]), too_big);
        assert!(matches!(
            run(&mut e, &["SETBIT", "b", "4294967295", "1"]),
            Reply::Error(_)
        ));
        run(&mut e, &["SET", "a", "x"]);
        assert!(matches!(run(&mut e, &["SADD", "set", "m"]), Reply::Integer(1)));
        assert_eq!(
            run(&mut e, &["SRANDMEMBER", "set", "-4000000000"]),
            Reply::error("ERR value is out of range")
        );
        assert_eq!(run(&mut e, &["HSET", "h", "f", "v"]), Reply::Integer(1));
        assert_eq!(
            run(&mut e, &["HRANDFIELD", "h", "-4000000000"]),
            Reply::error("ERR value is out of range")
        );
        assert_eq!(run(&mut e, &["ZADD", "z", "1", "m"]), Reply::Integer(1));
        assert_eq!(
            run(&mut e, &["ZRANDMEMBER", "z", "-4000000000"]),
            Reply::error("ERR value is out of range")
        );
        assert!(matches!(run(&mut e, &["SRANDMEMBER", "set", "-3"]), Reply::Array(Some(v)) if v.len() == 3));
    }

    #[test]
    fn lcs_as_the_redis_documentation_shows_it() {
        let mut e = RedisEngine::new(EngineConfig::default());
        run(&mut e, &["MSET", "key1", "ohmytext", "key2", "mynewtext"]);
        assert_eq!(run(&mut e, &["LCS", "key1", "key2"]), Reply::bulk("mytext"));
        assert_eq!(run(&mut e, &["LCS", "key1", "key2", "LEN"]), Reply::Integer(6));
        let pair = |a: i64, b: i64| Reply::Array(Some(vec![Reply::Integer(a), Reply::Integer(b)]));
        let m = |a: (i64, i64), b: (i64, i64), len: Option<i64>| {
            let mut v = vec![pair(a.0, a.1), pair(b.0, b.1)];
            v.extend(len.map(Reply::Integer));
            Reply::Array(Some(v))
        };
        assert_eq!(
            run(&mut e, &["LCS", "key1", "key2", "IDX"]),
            Reply::Array(Some(vec![
                Reply::bulk("matches"),
                Reply::Array(Some(vec![m((4, 7), (5, 8), None), m((2, 3), (0, 1), None)])),
                Reply::bulk("len"),
                Reply::Integer(6),
            ]))
        );
        assert_eq!(
            run(
                &mut e,
                &["LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"]
            ),
            Reply::Array(Some(vec![
                Reply::bulk("matches"),
                Reply::Array(Some(vec![m((4, 7), (5, 8), Some(4))])),
                Reply::bulk("len"),
                Reply::Integer(6),
            ]))
        );
        assert!(matches!(
            run(&mut e, &["LCS", "key1", "key2", "LEN", "IDX"]),
            Reply::Error(_)
        ));
    }
}
