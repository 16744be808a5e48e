//! Set commands (Redis's `t_set.c`): `SADD`, `SREM`, `SMEMBERS`, `SISMEMBER`, `SMISMEMBER`,
//! `SCARD`, `SPOP`, `SRANDMEMBER`, `SMOVE`, the algebra (`SINTER`, `SUNION`, `SDIFF`, their
//! `STORE` forms, `SINTERCARD`) and `SSCAN`.
//!
//! A set is a `BTreeSet`: O(log n) membership, members answered in byte order (Redis answers a
//! small set in insertion order, an integer set in numeric order and a large one in hash order;
//! clients may rely on none). Random choices (`SPOP`, `SRANDMEMBER`) come from the keyspace's
//! own generator ([`Keyspace::next_random`]), so the same commands give the same answers. Texts
//! follow Redis 7.0's documentation and observed replies.

use super::keyspace::{Keyspace, Value, ITEM_OVERHEAD_BYTES};
use super::reply::Reply;
use super::syntax::{eq_ic, parse_ll, NOT_INTEGER, SYNTAX, WRONGTYPE};
use bytes::Bytes;
use std::collections::BTreeSet;

/// The members of the set at `key` (`None` if there is no key), or the `WRONGTYPE` reply.
pub(crate) fn set_of<'a>(ks: &'a mut Keyspace, key: &[u8], now: i64) -> Result<Option<&'a BTreeSet<Bytes>>, Reply> {
    match ks.lookup(key, now) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Set(members) => Ok(Some(members)),
            _ => Err(Reply::error(WRONGTYPE)),
        },
    }
}

/// `SADD key member [member ...]`: how many members were new.
pub(crate) fn sadd(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match set_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => ks.insert(args[1].clone(), Value::Set(BTreeSet::new()), None),
        // Nothing new: the key is not written (not touched for `WATCH`, no effect recorded).
        Ok(Some(members)) if args[2..].iter().all(|m| members.contains(m)) => return Reply::Integer(0),
        Ok(Some(_)) => {}
    }
    let mut added = 0;
    let mut grown = 0;
    if let Some(Value::Set(members)) = ks.value_mut(&args[1], now) {
        for member in &args[2..] {
            if members.insert(member.clone()) {
                added += 1;
                grown += member.len() + ITEM_OVERHEAD_BYTES;
            }
        }
    }
    ks.grew(grown);
    Reply::Integer(added)
}

/// `SREM key member [member ...]`: how many members were removed; an emptied set is deleted.
pub(crate) fn srem(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match set_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => return Reply::Integer(0),
        // Nothing to remove: the key is not written (not touched for `WATCH`).
        Ok(Some(members)) if !args[2..].iter().any(|m| members.contains(m)) => return Reply::Integer(0),
        Ok(Some(_)) => {}
    }
    let (mut removed, mut shrunk, mut now_empty) = (0, 0, false);
    if let Some(Value::Set(members)) = ks.value_mut(&args[1], now) {
        for member in &args[2..] {
            if members.remove(member) {
                removed += 1;
                shrunk += member.len() + ITEM_OVERHEAD_BYTES;
            }
        }
        now_empty = members.is_empty();
    }
    ks.shrank(shrunk);
    if now_empty {
        ks.remove(&args[1]);
    }
    Reply::Integer(removed)
}

pub(crate) fn smembers(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match set_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(members) => Reply::Array(Some(
            members
                .into_iter()
                .flatten()
                .map(|m| Reply::Bulk(Some(m.clone())))
                .collect(),
        )),
    }
}

pub(crate) fn sismember(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match set_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(members) => Reply::Integer(i64::from(members.is_some_and(|m| m.contains(&args[2])))),
    }
}

/// `SMISMEMBER key member...`: 1 or 0 for each.
pub(crate) fn smismember(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match set_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(members) => Reply::Array(Some(
            args[2..]
                .iter()
                .map(|m| Reply::Integer(i64::from(members.is_some_and(|s| s.contains(m)))))
                .collect(),
        )),
    }
}

pub(crate) fn scard(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match set_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(members) => Reply::Integer(members.map_or(0, |m| m.len() as i64)),
    }
}

/// Removes `members` from the set at `key` (deleting it when emptied).
fn remove_members(ks: &mut Keyspace, key: &Bytes, members: &[Bytes], now: i64) {
    let (mut shrunk, mut empty) = (0, false);
    if let Some(Value::Set(set)) = ks.value_mut(key, now) {
        for m in members {
            if set.remove(m) {
                shrunk += m.len() + ITEM_OVERHEAD_BYTES;
            }
        }
        empty = set.is_empty();
    }
    ks.shrank(shrunk);
    if empty {
        ks.remove(key);
    }
}

/// `n` distinct members of `set` picked by the keyspace's generator (all of them if fewer).
fn pick_distinct(ks: &mut Keyspace, set: &BTreeSet<Bytes>, n: usize) -> Vec<Bytes> {
    let all: Vec<&Bytes> = set.iter().collect();
    if n >= all.len() {
        return all.into_iter().cloned().collect();
    }
    // A partial Fisher-Yates shuffle over the indexes.
    let mut idx: Vec<usize> = (0..all.len()).collect();
    for i in 0..n {
        let j = i + (ks.next_random() as usize) % (idx.len() - i);
        idx.swap(i, j);
    }
    idx[..n].iter().map(|&i| all[i].clone()).collect()
}

/// `SPOP key [count]`.
pub(crate) fn spop(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    if args.len() > 3 {
        return Reply::error(SYNTAX);
    }
    let count = match args.get(2) {
        None => None,
        Some(raw) => match parse_ll(raw) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => return Reply::error("ERR value is out of range, must be positive"),
        },
    };
    let set = match set_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => {
            return if count.is_some() {
                Reply::Array(Some(Vec::new()))
            } else {
                Reply::nil()
            }
        }
        Ok(Some(s)) => s.clone(),
    };
    let picked = pick_distinct(ks, &set, count.unwrap_or(1));
    if count != Some(0) {
        remove_members(ks, &args[1], &picked, now);
    }
    match count {
        None => Reply::Bulk(picked.into_iter().next()),
        Some(_) => Reply::Array(Some(picked.into_iter().map(|m| Reply::Bulk(Some(m))).collect())),
    }
}

/// `SRANDMEMBER key [count]`: a negative count may repeat members.
pub(crate) fn srandmember(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    if args.len() > 3 {
        return Reply::error(SYNTAX);
    }
    let count = match args.get(2) {
        None => None,
        Some(raw) => match parse_ll(raw) {
            Some(n) if n > -(i64::MAX / 2) => Some(n),
            Some(_) => return Reply::error("ERR value is out of range"),
            None => return Reply::error(NOT_INTEGER),
        },
    };
    let set = match set_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => {
            return if count.is_some() {
                Reply::Array(Some(Vec::new()))
            } else {
                Reply::nil()
            }
        }
        Ok(Some(s)) => s.clone(),
    };
    match count {
        None => Reply::Bulk(pick_distinct(ks, &set, 1).into_iter().next()),
        Some(n) if n >= 0 => Reply::Array(Some(
            pick_distinct(ks, &set, n as usize)
                .into_iter()
                .map(|m| Reply::Bulk(Some(m)))
                .collect(),
        )),
        Some(n) => {
            let all: Vec<&Bytes> = set.iter().collect();
            let n = n.unsigned_abs();
            if n > super::syntax::RANDOM_REPLY_MAX {
                return Reply::error("ERR value is out of range");
            }
            let n = n as usize;
            let mut out = Vec::with_capacity(n.min(1 << 20));
            for _ in 0..n {
                let i = (ks.next_random() as usize) % all.len();
                out.push(Reply::Bulk(Some(all[i].clone())));
            }
            Reply::Array(Some(out))
        }
    }
}

/// `SMOVE source destination member`: 1 when moved.
pub(crate) fn smove(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (src, dst, member) = (&args[1], &args[2], &args[3]);
    let in_src = match set_of(ks, src, now) {
        Err(e) => return e,
        Ok(s) => s.is_some_and(|s| s.contains(member)),
    };
    if let Err(e) = set_of(ks, dst, now) {
        return e;
    }
    if !in_src {
        return Reply::Integer(0);
    }
    if src == dst {
        return Reply::Integer(1);
    }
    remove_members(ks, src, std::slice::from_ref(member), now);
    let add = [Bytes::from_static(b"sadd"), dst.clone(), member.clone()];
    sadd(ks, &add, now);
    Reply::Integer(1)
}

/// The sets at `keys` (a missing key is an empty set), or `WRONGTYPE`.
fn sets_at(ks: &mut Keyspace, keys: &[Bytes], now: i64) -> Result<Vec<BTreeSet<Bytes>>, Reply> {
    keys.iter()
        .map(|k| set_of(ks, k, now).map(|s| s.cloned().unwrap_or_default()))
        .collect()
}

#[derive(Clone, Copy)]
enum Algebra {
    Inter,
    Union,
    Diff,
}

fn combine(sets: Vec<BTreeSet<Bytes>>, op: Algebra) -> BTreeSet<Bytes> {
    let mut it = sets.into_iter();
    let Some(mut acc) = it.next() else {
        return BTreeSet::new();
    };
    for s in it {
        match op {
            Algebra::Inter => acc.retain(|m| s.contains(m)),
            Algebra::Union => acc.extend(s),
            Algebra::Diff => acc.retain(|m| !s.contains(m)),
        }
    }
    acc
}

fn algebra(ks: &mut Keyspace, keys: &[Bytes], now: i64, op: Algebra) -> Result<BTreeSet<Bytes>, Reply> {
    Ok(combine(sets_at(ks, keys, now)?, op))
}

fn members_reply(set: BTreeSet<Bytes>) -> Reply {
    Reply::Array(Some(set.into_iter().map(|m| Reply::Bulk(Some(m))).collect()))
}

fn store(ks: &mut Keyspace, dst: &Bytes, set: BTreeSet<Bytes>) -> Reply {
    let n = set.len() as i64;
    if set.is_empty() {
        ks.remove(dst);
    } else {
        ks.insert(dst.clone(), Value::Set(set), None);
    }
    Reply::Integer(n)
}

pub(crate) fn sinter(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    algebra(ks, &args[1..], now, Algebra::Inter).map_or_else(|e| e, members_reply)
}

pub(crate) fn sunion(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    algebra(ks, &args[1..], now, Algebra::Union).map_or_else(|e| e, members_reply)
}

pub(crate) fn sdiff(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    algebra(ks, &args[1..], now, Algebra::Diff).map_or_else(|e| e, members_reply)
}

fn store_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, op: Algebra) -> Reply {
    match algebra(ks, &args[2..], now, op) {
        Ok(set) => store(ks, &args[1], set),
        Err(e) => e,
    }
}

pub(crate) fn sinterstore(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    store_generic(ks, args, now, Algebra::Inter)
}

pub(crate) fn sunionstore(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    store_generic(ks, args, now, Algebra::Union)
}

pub(crate) fn sdiffstore(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    store_generic(ks, args, now, Algebra::Diff)
}

/// `SINTERCARD numkeys key... [LIMIT limit]`.
pub(crate) fn sintercard(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let numkeys = match parse_ll(&args[1]) {
        Some(n) if n > 0 => n as usize,
        _ => return Reply::error("ERR numkeys should be greater than 0"),
    };
    if args.len() < 2 + numkeys {
        return Reply::error("ERR Number of keys can't be greater than number of args");
    }
    let mut limit = 0usize;
    match &args[2 + numkeys..] {
        [] => {}
        [opt, n] if eq_ic(opt, "limit") => match parse_ll(n) {
            Some(n) if n >= 0 => limit = n as usize,
            _ => return Reply::error("ERR LIMIT can't be negative"),
        },
        _ => return Reply::error(SYNTAX),
    }
    match algebra(ks, &args[2..2 + numkeys], now, Algebra::Inter) {
        Ok(set) => Reply::Integer(if limit == 0 { set.len() } else { set.len().min(limit) } as i64),
        Err(e) => e,
    }
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`: members in order; the cursor is the
/// position of the next member.
pub(crate) fn sscan(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let set = match set_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(s) => s.cloned().unwrap_or_default(),
    };
    super::admin::scan_items(set.into_iter().map(|m| vec![m]).collect(), &args[2..])
}
