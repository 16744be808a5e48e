//! Hash commands (Redis's `t_hash.c`): `HSET`/`HMSET`, `HSETNX`, `HGET`, `HMGET`, `HGETALL`,
//! `HKEYS`, `HVALS`, `HLEN`, `HEXISTS`, `HSTRLEN`, `HDEL`, `HINCRBY`, `HINCRBYFLOAT`,
//! `HRANDFIELD` and `HSCAN`.
//!
//! A hash keeps its fields in insertion order, as Redis keeps a small hash (listpack), which is
//! also the order the history's key effects list a hash lock's holders in. Field lookups are
//! linear (Redis's listpack is too; its hashtable for big hashes is O(1)): see
//! docs/redis-differences.md. Texts follow Redis 7.0's documentation and observed replies.

use super::keyspace::{Keyspace, Value, ITEM_OVERHEAD_BYTES};
use super::reply::Reply;
use super::syntax::{arity_error, human_double, parse_double, parse_ll, NOT_INTEGER, WRONGTYPE};
use bytes::Bytes;

/// The fields of the hash at `key` (`None` if there is no key), or the `WRONGTYPE` reply.
pub(crate) fn hash_of<'a>(
    ks: &'a mut Keyspace,
    key: &[u8],
    now: i64,
) -> Result<Option<&'a Vec<(Bytes, Bytes)>>, Reply> {
    match ks.lookup(key, now) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Hash(fields) => Ok(Some(fields)),
            _ => Err(Reply::error(WRONGTYPE)),
        },
    }
}

/// The fields of the hash at `key` for a write, created if missing; `None` means `WRONGTYPE`.
pub(crate) fn hash_for_write<'a>(ks: &'a mut Keyspace, key: &Bytes, now: i64) -> Option<&'a mut Vec<(Bytes, Bytes)>> {
    if ks.lookup(key, now).is_none() {
        ks.insert(key.clone(), Value::Hash(Vec::new()), None);
    }
    match ks.value_mut(key, now) {
        Some(Value::Hash(fields)) => Some(fields),
        _ => None,
    }
}

pub(crate) fn hset(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    if args.len() % 2 == 1 {
        return arity_error("hset");
    }
    if hash_of(ks, &args[1], now).is_err() {
        return Reply::error(WRONGTYPE);
    }
    let Some(fields) = hash_for_write(ks, &args[1], now) else {
        return Reply::error(WRONGTYPE);
    };
    let mut created = 0;
    let (mut grown, mut shrunk) = (0, 0);
    for pair in args[2..].chunks(2) {
        match fields.iter_mut().find(|(k, _)| *k == pair[0]) {
            Some((_, v)) => {
                shrunk += v.len();
                grown += pair[1].len();
                *v = pair[1].clone();
            }
            None => {
                grown += pair[0].len() + pair[1].len() + ITEM_OVERHEAD_BYTES;
                fields.push((pair[0].clone(), pair[1].clone()));
                created += 1;
            }
        }
    }
    ks.shrank(shrunk);
    ks.grew(grown);
    Reply::Integer(created)
}

pub(crate) fn hdel(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match hash_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => return Reply::Integer(0),
        Ok(Some(fields)) if !args[2..].iter().any(|f| fields.iter().any(|(k, _)| k == f)) => return Reply::Integer(0),
        Ok(Some(_)) => {}
    }
    let mut deleted = 0;
    let mut now_empty = false;
    let mut shrunk = 0;
    if let Some(Value::Hash(fields)) = ks.value_mut(&args[1], now) {
        for field in &args[2..] {
            if let Some(i) = fields.iter().position(|(k, _)| k == field) {
                let (f, v) = fields.remove(i);
                shrunk += f.len() + v.len() + ITEM_OVERHEAD_BYTES;
                deleted += 1;
            }
        }
        now_empty = fields.is_empty();
    }
    ks.shrank(shrunk);
    if now_empty {
        ks.remove(&args[1]);
    }
    Reply::Integer(deleted)
}

pub(crate) fn hincrby(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let Some(by) = parse_ll(&args[3]) else {
        return Reply::error(NOT_INTEGER);
    };
    let current = match hash_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(fields) => fields.and_then(|f| f.iter().find(|(k, _)| *k == args[2]).map(|(_, v)| v.clone())),
    };
    let current = match current {
        None => 0,
        Some(v) => match parse_ll(&v) {
            Some(n) => n,
            None => return Reply::error("ERR hash value is not an integer"),
        },
    };
    let Some(new) = current.checked_add(by) else {
        return Reply::error("ERR increment or decrement would overflow");
    };
    let Some(fields) = hash_for_write(ks, &args[1], now) else {
        return Reply::error(WRONGTYPE);
    };
    let text = Bytes::from(new.to_string());
    let (grown, shrunk) = match fields.iter_mut().find(|(k, _)| *k == args[2]) {
        Some((_, v)) => (text.len(), std::mem::replace(v, text).len()),
        None => {
            let grown = args[2].len() + text.len() + ITEM_OVERHEAD_BYTES;
            fields.push((args[2].clone(), text));
            (grown, 0)
        }
    };
    ks.shrank(shrunk);
    ks.grew(grown);
    Reply::Integer(new)
}

pub(crate) fn hget(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match hash_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(fields) => Reply::Bulk(fields.and_then(|f| f.iter().find(|(k, _)| *k == args[2]).map(|(_, v)| v.clone()))),
    }
}

pub(crate) fn hexists(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match hash_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(fields) => Reply::Integer(i64::from(fields.is_some_and(|f| f.iter().any(|(k, _)| *k == args[2])))),
    }
}

pub(crate) fn hgetall(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match hash_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(fields) => Reply::Array(Some(
            fields
                .into_iter()
                .flatten()
                .flat_map(|(k, v)| [Reply::Bulk(Some(k.clone())), Reply::Bulk(Some(v.clone()))])
                .collect(),
        )),
    }
}

/// `HMGET key field...`.
pub(crate) fn hmget(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match hash_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(fields) => Reply::Array(Some(
            args[2..]
                .iter()
                .map(|f| Reply::Bulk(fields.and_then(|fs| fs.iter().find(|(k, _)| k == f).map(|(_, v)| v.clone()))))
                .collect(),
        )),
    }
}

pub(crate) fn hlen(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match hash_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(fields) => Reply::Integer(fields.map_or(0, |f| f.len() as i64)),
    }
}

fn hash_column(ks: &mut Keyspace, args: &[Bytes], now: i64, values: bool) -> Reply {
    match hash_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(fields) => Reply::Array(Some(
            fields
                .into_iter()
                .flatten()
                .map(|(k, v)| Reply::Bulk(Some(if values { v.clone() } else { k.clone() })))
                .collect(),
        )),
    }
}

pub(crate) fn hkeys(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    hash_column(ks, args, now, false)
}

pub(crate) fn hvals(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    hash_column(ks, args, now, true)
}

/// `HSTRLEN key field`.
pub(crate) fn hstrlen(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match hash_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(fields) => Reply::Integer(
            fields
                .and_then(|f| f.iter().find(|(k, _)| *k == args[2]).map(|(_, v)| v.len() as i64))
                .unwrap_or(0),
        ),
    }
}

/// `HMSET key field value...`: `HSET` answering `+OK`.
pub(crate) fn hmset(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    if args.len() % 2 == 1 {
        return arity_error("hmset");
    }
    match hset(ks, args, now) {
        Reply::Integer(_) => Reply::ok(),
        other => other,
    }
}

/// `HSETNX key field value`: 1 when the field was new.
pub(crate) fn hsetnx(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match hash_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(Some(fields)) if fields.iter().any(|(k, _)| *k == args[2]) => Reply::Integer(0),
        Ok(_) => hset(ks, args, now),
    }
}

/// `HINCRBYFLOAT key field increment`.
pub(crate) fn hincrbyfloat(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    const NOT_FLOAT: &str = "ERR value is not a valid float";
    let Some(by) = parse_double(&args[3]) else {
        return Reply::error(NOT_FLOAT);
    };
    if !by.is_finite() {
        return Reply::error("ERR value is NaN or Infinity");
    }
    let current = match hash_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(fields) => fields.and_then(|f| f.iter().find(|(k, _)| *k == args[2]).map(|(_, v)| v.clone())),
    };
    let current = match current {
        None => 0.0,
        Some(v) => match parse_double(&v).filter(|v| v.is_finite()) {
            Some(n) => n,
            None => return Reply::error("ERR hash value is not a float"),
        },
    };
    let new = current + by;
    if !new.is_finite() {
        return Reply::error("ERR increment would produce NaN or Infinity");
    }
    let text = Bytes::from(human_double(new));
    let set = [
        Bytes::from_static(b"hset"),
        args[1].clone(),
        args[2].clone(),
        text.clone(),
    ];
    hset(ks, &set, now);
    Reply::Bulk(Some(text))
}

/// `HRANDFIELD key [count [WITHVALUES]]`: fields picked by the keyspace's generator; a negative
/// count may repeat fields.
pub(crate) fn hrandfield(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let with_values = match args.get(3) {
        None => false,
        Some(w) if w.eq_ignore_ascii_case(b"withvalues") && args.len() == 4 => true,
        Some(_) => return Reply::error(super::syntax::SYNTAX),
    };
    let count = match args.get(2) {
        None => None,
        Some(raw) => match parse_ll(raw) {
            Some(n) if n > -(i64::MAX / 2) && n < i64::MAX / 2 => Some(n),
            Some(_) => return Reply::error("ERR value is out of range"),
            None => return Reply::error(NOT_INTEGER),
        },
    };
    let fields = match hash_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => {
            return if count.is_some() {
                Reply::Array(Some(Vec::new()))
            } else {
                Reply::nil()
            }
        }
        Ok(Some(f)) => f.clone(),
    };
    let emit = |out: &mut Vec<Reply>, (k, v): &(Bytes, Bytes)| {
        out.push(Reply::Bulk(Some(k.clone())));
        if with_values {
            out.push(Reply::Bulk(Some(v.clone())));
        }
    };
    match count {
        None => {
            let i = (ks.next_random() as usize) % fields.len();
            Reply::Bulk(Some(fields[i].0.clone()))
        }
        Some(n) if n >= 0 => {
            let n = (n as usize).min(fields.len());
            let mut idx: Vec<usize> = (0..fields.len()).collect();
            for i in 0..n {
                let j = i + (ks.next_random() as usize) % (idx.len() - i);
                idx.swap(i, j);
            }
            let mut out = Vec::new();
            for &i in &idx[..n] {
                emit(&mut out, &fields[i]);
            }
            Reply::Array(Some(out))
        }
        Some(n) => {
            if n.unsigned_abs() > super::syntax::RANDOM_REPLY_MAX {
                return Reply::error("ERR value is out of range");
            }
            let mut out = Vec::new();
            for _ in 0..n.unsigned_abs() {
                let i = (ks.next_random() as usize) % fields.len();
                emit(&mut out, &fields[i]);
            }
            Reply::Array(Some(out))
        }
    }
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`.
pub(crate) fn hscan(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let fields = match hash_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(f) => f.cloned().unwrap_or_default(),
    };
    super::admin::scan_items(fields.into_iter().map(|(k, v)| vec![k, v]).collect(), &args[2..])
}
