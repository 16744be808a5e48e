//! List commands (Redis's `t_list.c`): both ends (`LPUSH`, `RPUSH`, `LPUSHX`, `RPUSHX`, `LPOP`,
//! `RPOP`, `LMPOP`), moves (`LMOVE`, `RPOPLPUSH`), reads (`LLEN`, `LINDEX`, `LRANGE`, `LPOS`) and
//! the middle (`LSET`, `LINSERT`, `LREM`, `LTRIM`). The blocking forms (`BLPOP`, `BRPOP`,
//! `BLMOVE`, `BRPOPLPUSH`, `BLMPOP`) answer here what they answer inside `MULTI` (nothing
//! found: a nil); the server loop blocks the connection on that nil.
//!
//! A list is a `VecDeque`: O(1) at both ends, O(n) in the middle, as Redis's quicklist. Texts
//! follow Redis 7.0's documentation and observed replies. `OBJECT ENCODING` is inferred from the
//! size (`listpack` / `quicklist`); `list-max-listpack-size` and `list-compress-depth` are
//! accepted by `CONFIG SET` and change nothing.

use super::keyspace::{Keyspace, Value, ITEM_OVERHEAD_BYTES};
use super::reply::Reply;
use super::syntax::{arity_error, eq_ic, parse_ll, NOT_INTEGER, SYNTAX, WRONGTYPE};
use bytes::Bytes;
use std::collections::VecDeque;

pub(crate) fn push(ks: &mut Keyspace, args: &[Bytes], now: i64, left: bool) -> Reply {
    let key = &args[1];
    match ks.lookup(key, now).map(|e| matches!(e.value, Value::List(_))) {
        Some(false) => return Reply::error(WRONGTYPE),
        Some(true) => {}
        None => ks.insert(key.clone(), Value::List(VecDeque::new()), None),
    }
    let mut added = 0;
    let len = match ks.value_mut(key, now) {
        Some(Value::List(list)) => {
            for v in &args[2..] {
                added += v.len() + ITEM_OVERHEAD_BYTES;
                if left {
                    list.push_front(v.clone());
                } else {
                    list.push_back(v.clone());
                }
            }
            list.len()
        }
        _ => return Reply::error(WRONGTYPE),
    };
    ks.grew(added);
    Reply::Integer(len as i64)
}

pub(crate) fn pop(ks: &mut Keyspace, args: &[Bytes], now: i64, left: bool, name: &str) -> Reply {
    if args.len() > 3 {
        return arity_error(name);
    }
    let count = match args.get(2) {
        None => None,
        Some(raw) => match parse_ll(raw).filter(|c| *c >= 0) {
            Some(c) => Some(c as usize),
            None => return Reply::error("ERR value is out of range, must be positive"),
        },
    };
    let key = &args[1];
    match ks.lookup(key, now).map(|e| matches!(e.value, Value::List(_))) {
        None => {
            return match count {
                Some(_) => Reply::Array(None),
                None => Reply::nil(),
            }
        }
        Some(false) => return Reply::error(WRONGTYPE),
        Some(true) if count == Some(0) => return Reply::Array(Some(Vec::new())),
        Some(true) => {}
    }
    let mut removed = 0;
    let (reply, now_empty) = match ks.value_mut(key, now) {
        None => return Reply::nil(),
        Some(Value::List(list)) => {
            let mut take = || {
                let item = if left { list.pop_front() } else { list.pop_back() };
                if let Some(item) = &item {
                    removed += item.len() + ITEM_OVERHEAD_BYTES;
                }
                item
            };
            let reply = match count {
                None => Reply::Bulk(take()),
                Some(n) => {
                    let mut items = Vec::new();
                    while items.len() < n {
                        match take() {
                            Some(v) => items.push(Reply::Bulk(Some(v))),
                            None => break,
                        }
                    }
                    Reply::Array(Some(items))
                }
            };
            (reply, list.is_empty())
        }
        Some(_) => return Reply::error(WRONGTYPE),
    };
    ks.shrank(removed);
    if now_empty {
        ks.remove(key);
    }
    reply
}

/// `LEFT` or `RIGHT`, any case (`getListPositionFromObjectOrReply`): `Some(true)` for the
/// left end, `None` for anything else (a syntax error).
pub(crate) fn list_end(raw: &[u8]) -> Option<bool> {
    if raw.eq_ignore_ascii_case(b"left") {
        Some(true)
    } else if raw.eq_ignore_ascii_case(b"right") {
        Some(false)
    } else {
        None
    }
}

/// `LMOVE` (<https://redis.io/commands/lmove/>): pops the left (`from_left`) or right end of
/// list `src` and pushes it onto the left (`to_left`) or right end of `dst`, replying with the
/// element. As `lmoveGenericCommand`: a missing source answers nil whatever `dst` holds; the
/// destination's type is checked only when there is an element to move; `src == dst` rotates
/// the list (a one-element list stays). An emptied source is deleted; a missing destination is
/// created.
pub(crate) fn lmove(ks: &mut Keyspace, src: &Bytes, dst: &Bytes, from_left: bool, to_left: bool, now: i64) -> Reply {
    match ks.lookup(src, now).map(|e| matches!(e.value, Value::List(_))) {
        None => return Reply::nil(),
        Some(false) => return Reply::error(WRONGTYPE),
        Some(true) => {}
    }
    let same = src == dst;
    if !same {
        match ks.lookup(dst, now).map(|e| matches!(e.value, Value::List(_))) {
            Some(false) => return Reply::error(WRONGTYPE),
            Some(true) => {}
            None => ks.insert(dst.clone(), Value::List(VecDeque::new()), None),
        }
    }
    let (item, src_empty) = match ks.value_mut(src, now) {
        Some(Value::List(list)) => {
            let item = if from_left { list.pop_front() } else { list.pop_back() };
            (item, list.is_empty())
        }
        _ => (None, false),
    };
    let Some(item) = item else {
        // Unreachable (a stored list is never empty); undo the destination made above.
        if !same
            && ks
                .peek(dst, now)
                .is_some_and(|e| e.value == Value::List(VecDeque::new()))
        {
            ks.remove(dst);
        }
        return Reply::nil();
    };
    let bytes = item.len() + ITEM_OVERHEAD_BYTES;
    ks.shrank(bytes);
    if src_empty && !same {
        ks.remove(src);
    }
    if let Some(Value::List(list)) = ks.value_mut(dst, now) {
        if to_left {
            list.push_front(item.clone());
        } else {
            list.push_back(item.clone());
        }
        ks.grew(bytes);
    }
    Reply::Bulk(Some(item))
}

/// `LRANGE key start stop` (`lrangeCommand`): both indexes parsed first, then the key; negative
/// indexes count from the end, out-of-range ones are clamped.
pub(crate) fn lrange(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (Some(start), Some(stop)) = (parse_ll(&args[2]), parse_ll(&args[3])) else {
        return Reply::error(NOT_INTEGER);
    };
    let list = match ks.lookup(&args[1], now) {
        None => return Reply::Array(Some(Vec::new())),
        Some(e) => match &e.value {
            Value::List(list) => list,
            _ => return Reply::error(WRONGTYPE),
        },
    };
    let len = list.len() as i64;
    let start = if start < 0 { start + len } else { start }.max(0);
    let stop = if stop < 0 { stop + len } else { stop }.min(len - 1);
    if start > stop || start >= len {
        return Reply::Array(Some(Vec::new()));
    }
    Reply::Array(Some(
        list.iter()
            .skip(start as usize)
            .take((stop - start + 1) as usize)
            .map(|v| Reply::Bulk(Some(v.clone())))
            .collect(),
    ))
}

/// The list at `key`: `Ok(None)` when absent, `Err` (`WRONGTYPE`) for another type.
fn list_of<'a>(ks: &'a mut Keyspace, key: &[u8], now: i64) -> Result<Option<&'a VecDeque<Bytes>>, Reply> {
    match ks.lookup(key, now) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::List(l) => Ok(Some(l)),
            _ => Err(Reply::error(WRONGTYPE)),
        },
    }
}

pub(crate) fn lpush(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    push(ks, args, now, true)
}

pub(crate) fn rpush(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    push(ks, args, now, false)
}

/// `LPUSHX`/`RPUSHX`: push only onto an existing list; 0 when there is none.
fn pushx(ks: &mut Keyspace, args: &[Bytes], now: i64, left: bool) -> Reply {
    match list_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(None) => Reply::Integer(0),
        Ok(Some(_)) => push(ks, args, now, left),
    }
}

pub(crate) fn lpushx(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    pushx(ks, args, now, true)
}

pub(crate) fn rpushx(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    pushx(ks, args, now, false)
}

pub(crate) fn lpop(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    pop(ks, args, now, true, "lpop")
}

pub(crate) fn rpop(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    pop(ks, args, now, false, "rpop")
}

pub(crate) fn llen(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match list_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(l) => Reply::Integer(l.map_or(0, |l| l.len() as i64)),
    }
}

/// A list index (negative from the end) as a position, if inside a list of `len`.
fn position(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if index < 0 { len + index } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

/// `LINDEX key index`.
pub(crate) fn lindex(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let Some(index) = parse_ll(&args[2]) else {
        return Reply::error(NOT_INTEGER);
    };
    match list_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(None) => Reply::nil(),
        Ok(Some(l)) => Reply::Bulk(position(index, l.len()).map(|i| l[i].clone())),
    }
}

/// `LSET key index element`.
pub(crate) fn lset(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let Some(index) = parse_ll(&args[2]) else {
        return Reply::error(NOT_INTEGER);
    };
    let at = match list_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => return Reply::error("ERR no such key"),
        Ok(Some(l)) => match position(index, l.len()) {
            Some(i) => i,
            None => return Reply::error("ERR index out of range"),
        },
    };
    let mut delta = (0, 0);
    if let Some(Value::List(l)) = ks.value_mut(&args[1], now) {
        delta = (args[3].len(), l[at].len());
        l[at] = args[3].clone();
    }
    ks.grew(delta.0);
    ks.shrank(delta.1);
    Reply::ok()
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 without the pivot, 0 without
/// the key.
pub(crate) fn linsert(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let after = if eq_ic(&args[2], "after") {
        true
    } else if eq_ic(&args[2], "before") {
        false
    } else {
        return Reply::error(SYNTAX);
    };
    let at = match list_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => return Reply::Integer(0),
        Ok(Some(l)) => match l.iter().position(|e| *e == args[3]) {
            Some(i) => i + usize::from(after),
            None => return Reply::Integer(-1),
        },
    };
    let mut len = 0;
    if let Some(Value::List(l)) = ks.value_mut(&args[1], now) {
        l.insert(at, args[4].clone());
        len = l.len();
    }
    ks.grew(args[4].len() + ITEM_OVERHEAD_BYTES);
    Reply::Integer(len as i64)
}

/// `LREM key count element`: removes up to `count` (from the head; negative from the tail; 0
/// all) equal elements.
pub(crate) fn lrem(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let Some(count) = parse_ll(&args[2]) else {
        return Reply::error(NOT_INTEGER);
    };
    match list_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => return Reply::Integer(0),
        Ok(Some(_)) => {}
    }
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs() as usize
    };
    let (mut removed, mut shrunk, mut empty) = (0usize, 0usize, false);
    if let Some(Value::List(l)) = ks.value_mut(&args[1], now) {
        let mut kept: VecDeque<Bytes> = VecDeque::with_capacity(l.len());
        let items: Vec<Bytes> = if count < 0 {
            l.drain(..).rev().collect()
        } else {
            l.drain(..).collect()
        };
        for item in items {
            if removed < limit && item == args[3] {
                removed += 1;
                shrunk += item.len() + ITEM_OVERHEAD_BYTES;
            } else if count < 0 {
                kept.push_front(item);
            } else {
                kept.push_back(item);
            }
        }
        *l = kept;
        empty = l.is_empty();
    }
    ks.shrank(shrunk);
    if empty {
        ks.remove(&args[1]);
    }
    Reply::Integer(removed as i64)
}

/// `LTRIM key start stop`: keeps only the range.
pub(crate) fn ltrim(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (Some(start), Some(stop)) = (parse_ll(&args[2]), parse_ll(&args[3])) else {
        return Reply::error(NOT_INTEGER);
    };
    let len = match list_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => return Reply::ok(),
        Ok(Some(l)) => l.len() as i64,
    };
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop }.min(len - 1);
    let (mut shrunk, mut empty) = (0usize, false);
    if let Some(Value::List(l)) = ks.value_mut(&args[1], now) {
        if start > stop || start >= len {
            shrunk = l.iter().map(|e| e.len() + ITEM_OVERHEAD_BYTES).sum();
            l.clear();
        } else {
            for _ in 0..start {
                if let Some(e) = l.pop_front() {
                    shrunk += e.len() + ITEM_OVERHEAD_BYTES;
                }
            }
            let keep = (stop - start + 1) as usize;
            shrunk += l
                .iter()
                .skip(keep)
                .map(|e| e.len() + ITEM_OVERHEAD_BYTES)
                .sum::<usize>();
            l.truncate(keep);
        }
        empty = l.is_empty();
    }
    ks.shrank(shrunk);
    if empty {
        ks.remove(&args[1]);
    }
    Reply::ok()
}

/// `LPOS key element [RANK rank] [COUNT num] [MAXLEN len]`.
pub(crate) fn lpos(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (mut rank, mut count, mut maxlen) = (1i64, None::<i64>, 0i64);
    let mut j = 3;
    while j < args.len() {
        let Some(value) = args.get(j + 1) else {
            return Reply::error(SYNTAX);
        };
        let Some(n) = parse_ll(value) else {
            return Reply::error(NOT_INTEGER);
        };
        if eq_ic(&args[j], "rank") {
            if n == 0 || n == i64::MIN {
                return Reply::error(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                );
            }
            rank = n;
        } else if eq_ic(&args[j], "count") {
            if n < 0 {
                return Reply::error("ERR COUNT can't be negative");
            }
            count = Some(n);
        } else if eq_ic(&args[j], "maxlen") {
            if n < 0 {
                return Reply::error("ERR MAXLEN can't be negative");
            }
            maxlen = n;
        } else {
            return Reply::error(SYNTAX);
        }
        j += 2;
    }
    let list = match list_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => {
            return if count.is_some() {
                Reply::Array(Some(Vec::new()))
            } else {
                Reply::nil()
            }
        }
        Ok(Some(l)) => l,
    };
    let want = match count {
        Some(0) => usize::MAX,
        Some(n) => n as usize,
        None => 1,
    };
    let len = list.len();
    let scan = if maxlen == 0 { len } else { (maxlen as usize).min(len) };
    let mut skip = rank.unsigned_abs() as usize - 1;
    let mut found = Vec::new();
    let indexes: Box<dyn Iterator<Item = usize>> = if rank > 0 {
        Box::new(0..scan)
    } else {
        Box::new((len - scan..len).rev())
    };
    for i in indexes {
        if list[i] == args[2] {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            found.push(Reply::Integer(i as i64));
            if found.len() >= want {
                break;
            }
        }
    }
    match count {
        Some(_) => Reply::Array(Some(found)),
        None => found.into_iter().next().unwrap_or(Reply::nil()),
    }
}

/// `LMPOP numkeys key... LEFT|RIGHT [COUNT count]`: pops from the first non-empty list,
/// answering `[key, [elements]]`, or a nil array.
pub(crate) fn lmpop(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    mpop_generic(ks, &args[1..], now)
}

/// `LMPOP`'s arguments after its name (`BLMPOP`'s after its timeout).
pub(crate) fn mpop_generic(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let numkeys = match parse_ll(&args[0]) {
        Some(n) if n > 0 => n as usize,
        _ => return Reply::error("ERR numkeys should be greater than 0"),
    };
    if args.len() < numkeys + 2 {
        return Reply::error(SYNTAX);
    }
    let keys = &args[1..1 + numkeys];
    let Some(left) = list_end(&args[1 + numkeys]) else {
        return Reply::error(SYNTAX);
    };
    let mut count = 1i64;
    let rest = &args[2 + numkeys..];
    match rest {
        [] => {}
        [opt, n] if eq_ic(opt, "count") => match parse_ll(n) {
            Some(n) if n > 0 => count = n,
            _ => return Reply::error("ERR count should be greater than 0"),
        },
        _ => return Reply::error(SYNTAX),
    }
    for key in keys {
        match list_of(ks, key, now) {
            Err(e) => return e,
            Ok(None) => continue,
            Ok(Some(_)) => {
                let pop_args = [Bytes::from_static(b"pop"), key.clone(), Bytes::from(count.to_string())];
                let popped = pop(ks, &pop_args, now, left, "lmpop");
                return Reply::Array(Some(vec![Reply::Bulk(Some(key.clone())), popped]));
            }
        }
    }
    Reply::Array(None)
}

/// `BLPOP`/`BRPOP key... timeout` without blocking: `[key, element]` from the first non-empty
/// list, else a nil array.
fn bpop(ks: &mut Keyspace, args: &[Bytes], now: i64, left: bool) -> Reply {
    if let Err(e) = super::syntax::blocking_timeout_ms(&args[args.len() - 1]) {
        return e;
    }
    let name = if left { "lpop" } else { "rpop" };
    for key in &args[1..args.len() - 1] {
        match list_of(ks, key, now) {
            Err(e) => return e,
            Ok(None) => continue,
            Ok(Some(_)) => {
                let popped = pop(ks, &[Bytes::from(name), key.clone()], now, left, name);
                return Reply::Array(Some(vec![Reply::Bulk(Some(key.clone())), popped]));
            }
        }
    }
    Reply::Array(None)
}

pub(crate) fn blpop(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    bpop(ks, args, now, true)
}

pub(crate) fn brpop(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    bpop(ks, args, now, false)
}

pub(crate) fn lmove_command(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match (list_end(&args[3]), list_end(&args[4])) {
        (Some(from_left), Some(to_left)) => lmove(ks, &args[1], &args[2], from_left, to_left, now),
        _ => Reply::error(SYNTAX),
    }
}

pub(crate) fn rpoplpush(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    lmove(ks, &args[1], &args[2], false, true, now)
}

/// `BLMOVE src dst from to timeout` without blocking: the ends, then the timeout, then the
/// source's type; a nil bulk when the source is missing.
pub(crate) fn blmove(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (Some(from_left), Some(to_left)) = (list_end(&args[3]), list_end(&args[4])) else {
        return Reply::error(SYNTAX);
    };
    if let Err(e) = super::syntax::blocking_timeout_ms(&args[5]) {
        return e;
    }
    lmove(ks, &args[1], &args[2], from_left, to_left, now)
}

/// `BRPOPLPUSH src dst timeout` without blocking.
pub(crate) fn brpoplpush(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    if let Err(e) = super::syntax::blocking_timeout_ms(&args[3]) {
        return e;
    }
    lmove(ks, &args[1], &args[2], false, true, now)
}

/// `BLMPOP timeout numkeys key... LEFT|RIGHT [COUNT count]` without blocking.
pub(crate) fn blmpop(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    if let Err(e) = super::syntax::blocking_timeout_ms(&args[1]) {
        return e;
    }
    mpop_generic(ks, &args[2..], now)
}
