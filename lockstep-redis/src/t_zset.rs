//! Sorted sets (`ZADD`, `ZRANGE`, `ZUNIONSTORE`, ...): the [`ZSet`] value and one handler per
//! Redis 7.0 sorted-set command, as Redis 7.0.15 answers them in RESP2.
//!
//! **What is modelled.** Every sorted-set command of Redis 7.0 ([`ZSET_COMMANDS`] lists them
//! with Redis' arity and flags): their argument parsing in Redis' order (so the same error wins
//! when several apply), their error texts, and their reply shapes in RESP2. Scores are written
//! the way Redis 7.0 writes doubles (`%.17g`, `inf`/`-inf`: `1.1` reads back as
//! `1.1000000000000001`), a score of `-0` is kept as `0` (as Redis' small encoding does), and
//! members are ordered by score, then by their bytes. An emptied sorted set is deleted. Sets
//! (`SADD`) count as sorted sets of score 1 for `ZUNION`/`ZINTER`/`ZDIFF` and their `STORE`
//! forms and `ZINTERCARD`, as in Redis. Writes go through the keyspace's mutation API
//! ([`Keyspace::value_mut`], [`Keyspace::insert`], [`Keyspace::remove`], with
//! [`Keyspace::grew`]/[`Keyspace::shrank`]), so lazy expiry, `WATCH` and the memory count see
//! them; a command that changes nothing does not touch its key.
//!
//! **Blocking forms.** [`bzpopmin`], [`bzpopmax`] and [`bzmpop`] never block: they answer what
//! Redis answers for them inside `MULTI` or a script (the first non-empty key popped, or a nil
//! array when every key is empty or missing), so they are the table's `Server` handlers as
//! `BLPOP`/`BLMPOP` are. A server loop blocks a connection whose reply is the nil array
//! (`Reply::Array(None)`, for all three) on the command's keys (`BZPOPMIN`/`BZPOPMAX`: every
//! argument but the first and the last; `BZMPOP`: `numkeys` at index 2) and, when one of them is
//! written, serves it by running the same arguments through the same handler again (or, for
//! `BZMPOP`, [`zmpop`] on `ZMPOP` + `args[2..]`, as `BLMPOP` is served by `LMPOP`): a nil array
//! means still blocked, anything else is the reply to send, already in the blocking command's
//! shape (`[key, member, score]`; `[key, [[member, score], ...]]`). Their timeout is checked
//! first (for `BZMPOP` after `numkeys`, `MIN|MAX` and `COUNT`, as in Redis) with
//! [`blocking_timeout_ms`], which the server uses to read it too.
//!
//! **Cost.** A [`ZSet`] keeps four indexes that every write updates: a `BTreeMap` from member
//! to score, a `BTreeSet` of `(score, member)` (ranges and iteration), a treap of the same keys
//! whose nodes know their subtree's size (ranks, as Redis' skiplist spans), and the members by
//! a hash (`ZSCAN`'s cursor). So adding, removing, scoring and popping cost O(log n); a rank
//! (`ZRANK`, `ZREVRANK`) O(log n); a range by index or by score O(log n + k) for k answers;
//! `ZCOUNT` O(log n) (the treap's bounds are expected ones; its priorities are a hash of the
//! member, so its shape is deterministic). Lex ranges cost O(log n + k) and `ZLEXCOUNT`
//! O(log n) when all scores are equal (the case Redis defines), O(n) otherwise. `ZRANDMEMBER`
//! costs O(log n) without a count, O(n + count) with one; `ZSCAN` O(log n + count) a call.
//!
//! **RESP3.** The handlers answer RESP2's shapes ([`Reply`] has no double and no per-protocol
//! nesting); [`encode_resp3`] writes a sorted-set command's reply as Redis 7.0 does for a
//! RESP3 connection (doubles, `[member, score]` pairs), for the connection's encoder to call.
//!
//! **Left out, or different.** RESP3 inside `EXEC` and script replies (RESP2 shapes there). `OBJECT ENCODING` answers by the set's contents now (`listpack` up to
//! `zset-max-listpack-entries` members of up to `zset-max-listpack-value` bytes, else
//! `skiplist`), where Redis never converts back; `ZSCAN` answers a set whole while it fits the
//! default thresholds (it does not see `CONFIG SET`), and walks a bigger one in the order of a
//! 64-bit hash of each member, its cursor the hash to go on from: Redis walks its hash table,
//! so the cursors differ but the guarantee is the same (every member present from the first
//! call to the last is answered). Lex ranges over differing scores (which Redis leaves
//! unspecified) answer as Redis' small (`listpack`) encoding does, at every size.
//! `ZRANDMEMBER` draws from the keyspace's deterministic generator
//! ([`Keyspace::next_random`]): which members, and their order when fewer than the whole set,
//! differ from Redis' (random there too); the whole set comes highest first, as in Redis. Hex
//! scores (`0x10`) are read as C's `strtod` reads them (exactly up to 13 hex digits), decimal
//! ones with Rust's correctly rounded parser. `ZRANK ... WITHSCORE` (Redis 7.2) is not there,
//! as in 7.0.

use super::admin::glob_match;
use super::keyspace::{Keyspace, Value};
use super::reply::Reply;
use super::syntax::blocking_timeout_ms;
use super::syntax::{eq_ic, parse_ll, NOT_INTEGER, SYNTAX, WRONGTYPE};
use super::zset::*;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{Included, Unbounded};

// ---------------------------------------------------------------------------------------------
// Keyspace access.

/// The sorted set at `key` (`None` if there is no key), or the `WRONGTYPE` reply. Reclaims the
/// key if it expired (lazy expiry), as Redis' `lookupKeyRead`.
fn zset_of<'a>(ks: &'a mut Keyspace, key: &[u8], now: i64) -> Result<Option<&'a ZSet>, Reply> {
    match ks.lookup(key, now) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::ZSet(z) => Ok(Some(z)),
            _ => Err(Reply::error(WRONGTYPE)),
        },
    }
}

/// Runs `f` on the live sorted set at `key` as a write (the key counts as touched), keeps the
/// used-bytes count right and deletes the key if `f` emptied it. `None` if `key` holds no
/// sorted set. Callers check first that `f` will change something.
fn write_zset<R>(ks: &mut Keyspace, key: &[u8], now: i64, f: impl FnOnce(&mut ZSet) -> R) -> Option<R> {
    let (result, before, after, empty) = match ks.value_mut(key, now) {
        Some(Value::ZSet(z)) => {
            let before = z.used_bytes();
            let result = f(z);
            (result, before, z.used_bytes(), z.is_empty())
        }
        _ => return None,
    };
    if after >= before {
        ks.grew(after - before);
    } else {
        ks.shrank(before - after);
    }
    if empty {
        ks.remove(key);
    }
    Some(result)
}

/// Stores `result` at `dst` as a new key without TTL (Redis' `setKey`), or deletes `dst` if
/// `result` is empty; answers its size (`ZUNIONSTORE`, `ZRANGESTORE`, ...).
fn store(ks: &mut Keyspace, dst: &Bytes, result: ZSet, now: i64) -> Reply {
    let n = result.len() as i64;
    if result.is_empty() {
        if ks.lookup(dst, now).is_some() {
            ks.remove(dst);
        }
    } else {
        ks.insert(dst.clone(), Value::ZSet(result), None);
    }
    Reply::Integer(n)
}

/// Members (with their scores if `withscores`) as a flat RESP2 array.
fn members_reply<'a>(items: impl Iterator<Item = (&'a Bytes, f64)>, withscores: bool) -> Reply {
    let mut out = Vec::new();
    for (m, s) in items {
        out.push(Reply::bulk(m.clone()));
        if withscores {
            out.push(score_reply(s));
        }
    }
    Reply::Array(Some(out))
}

// ---------------------------------------------------------------------------------------------
// ZADD, ZINCRBY, ZREM, and the reads of one member.

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`
/// (<https://redis.io/commands/zadd/>): how many members were added (`CH`: added or changed),
/// or with `INCR` the new score (nil if `NX`/`XX`/`GT`/`LT` prevented it). O(k log n).
pub(crate) fn zadd(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zadd_generic(ks, args, now_ms, false)
}

/// `ZINCRBY key increment member` (<https://redis.io/commands/zincrby/>): `ZADD key INCR`.
pub(crate) fn zincrby(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zadd_generic(ks, args, now_ms, true)
}

fn zadd_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, zincrby: bool) -> Reply {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) = (false, false, false, false, false, zincrby);
    let mut idx = 2;
    if !zincrby {
        while let Some(opt) = args.get(idx) {
            match () {
                _ if eq_ic(opt, "nx") => nx = true,
                _ if eq_ic(opt, "xx") => xx = true,
                _ if eq_ic(opt, "gt") => gt = true,
                _ if eq_ic(opt, "lt") => lt = true,
                _ if eq_ic(opt, "ch") => ch = true,
                _ if eq_ic(opt, "incr") => incr = true,
                _ => break,
            }
            idx += 1;
        }
    }
    let elements = args.len() - idx;
    if elements == 0 || !elements.is_multiple_of(2) {
        return Reply::error(SYNTAX);
    }
    if nx && xx {
        return Reply::error("ERR XX and NX options at the same time are not compatible");
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return Reply::error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && elements > 2 {
        return Reply::error("ERR INCR option supports a single increment-element pair");
    }
    let mut pairs = Vec::with_capacity(elements / 2);
    for pair in args[idx..].chunks(2) {
        match parse_score(&pair[0]) {
            Some(s) => pairs.push((s, pair[1].clone())),
            None => return Reply::error(NOT_FLOAT),
        }
    }
    let key = &args[1];
    // What each pair does, worked out before any change (Redis' `zsetAdd` rules).
    let (mut added, mut updated) = (0i64, 0i64);
    let mut changes: Vec<(Bytes, f64)> = Vec::new();
    let mut incr_result: Option<f64> = None;
    {
        let existing = match zset_of(ks, key, now) {
            Err(e) => return e,
            Ok(None) if xx => None,
            Ok(z) => Some(z),
        };
        let Some(existing) = existing else {
            return if incr { Reply::nil() } else { Reply::Integer(0) };
        };
        // Members given twice see the first pair's effect.
        let mut pending: BTreeMap<Bytes, f64> = BTreeMap::new();
        for (score, member) in pairs {
            let current = pending
                .get(&member)
                .copied()
                .or_else(|| existing.and_then(|z| z.score(&member)));
            match current {
                Some(cur) => {
                    if nx {
                        continue;
                    }
                    let mut new = score;
                    if incr {
                        new += cur;
                        if new.is_nan() {
                            return Reply::error(NAN_SCORE);
                        }
                    }
                    if (lt && new >= cur) || (gt && new <= cur) {
                        continue;
                    }
                    incr_result = Some(new);
                    if new != cur {
                        updated += 1;
                        pending.insert(member.clone(), new);
                        changes.push((member, new));
                    }
                }
                None => {
                    if xx {
                        continue;
                    }
                    incr_result = Some(score);
                    added += 1;
                    pending.insert(member.clone(), score);
                    changes.push((member, score));
                }
            }
        }
    }
    if !changes.is_empty() {
        match ks.lookup(key, now) {
            None => ks.insert(key.clone(), Value::ZSet(changes.into_iter().collect()), None),
            Some(_) => {
                write_zset(ks, key, now, |z| {
                    for (m, s) in changes {
                        z.insert(m, s);
                    }
                });
            }
        }
    }
    if incr {
        incr_result.map_or_else(Reply::nil, score_reply)
    } else {
        Reply::Integer(if ch { added + updated } else { added })
    }
}

/// `ZREM key member [member ...]` (<https://redis.io/commands/zrem/>): how many were removed.
/// O(k log n).
pub(crate) fn zrem(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => return e,
        Ok(None) => return Reply::Integer(0),
        Ok(Some(z)) if !args[2..].iter().any(|m| z.score(m).is_some()) => return Reply::Integer(0),
        Ok(Some(_)) => {}
    }
    let removed = write_zset(ks, &args[1], now_ms, |z| {
        args[2..].iter().filter(|m| z.remove(m).is_some()).count()
    });
    Reply::Integer(removed.unwrap_or(0) as i64)
}

/// `ZCARD key` (<https://redis.io/commands/zcard/>). O(1).
pub(crate) fn zcard(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => Reply::Integer(z.map_or(0, |z| z.len() as i64)),
    }
}

/// `ZSCORE key member` (<https://redis.io/commands/zscore/>). O(log n).
pub(crate) fn zscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => z.and_then(|z| z.score(&args[2])).map_or_else(Reply::nil, score_reply),
    }
}

/// `ZMSCORE key member [member ...]` (<https://redis.io/commands/zmscore/>): a score or nil
/// each. O(k log n).
pub(crate) fn zmscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => Reply::Array(Some(
            args[2..]
                .iter()
                .map(|m| z.and_then(|z| z.score(m)).map_or_else(Reply::nil, score_reply))
                .collect(),
        )),
    }
}

/// `ZRANK key member` (<https://redis.io/commands/zrank/>): 0-based, lowest score first.
/// O(log n).
pub(crate) fn zrank(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    rank_generic(ks, args, now_ms, false)
}

/// `ZREVRANK key member` (<https://redis.io/commands/zrevrank/>): highest score first.
pub(crate) fn zrevrank(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    rank_generic(ks, args, now_ms, true)
}

fn rank_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, reverse: bool) -> Reply {
    match zset_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(z) => z
            .and_then(|z| z.rank(&args[2], reverse))
            .map_or_else(Reply::nil, |r| Reply::Integer(r as i64)),
    }
}

/// `ZCOUNT key min max` (<https://redis.io/commands/zcount/>). O(log n).
pub(crate) fn zcount(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let range = match parse_score_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => Reply::Integer(z.map_or(0, |z| z.count_in_score_range(&range) as i64)),
    }
}

/// `ZLEXCOUNT key min max` (<https://redis.io/commands/zlexcount/>). O(log n) when all scores
/// are equal.
pub(crate) fn zlexcount(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let range = match parse_lex_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => Reply::Integer(z.map_or(0, |z| z.count_in_lex_range(&range) as i64)),
    }
}

// ---------------------------------------------------------------------------------------------
// ZRANGE and its older forms.

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

/// The parsed range of a `ZRANGE`-family command.
enum RangeSpec {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// `zrangeGenericCommand` of Redis 7.0: `key_at` is the source key's index, the range ends
/// follow it, then the options. `store` is `ZRANGESTORE`'s destination.
fn zrange_generic(
    ks: &mut Keyspace,
    args: &[Bytes],
    now: i64,
    key_at: usize,
    store: Option<&Bytes>,
    mut rangetype: RangeType,
    mut reverse: Option<bool>,
) -> Reply {
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = key_at + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        let opt = &args[j];
        if store.is_none() && eq_ic(opt, "withscores") {
            withscores = true;
        } else if eq_ic(opt, "limit") && left >= 2 {
            offset = match parse_long(&args[j + 1]) {
                Ok(v) => v,
                Err(e) => return e,
            };
            limit = match parse_long(&args[j + 2]) {
                Ok(v) => v,
                Err(e) => return e,
            };
            j += 2;
        } else if reverse.is_none() && eq_ic(opt, "rev") {
            reverse = Some(true);
        } else if rangetype == RangeType::Auto && eq_ic(opt, "bylex") {
            rangetype = RangeType::Lex;
        } else if rangetype == RangeType::Auto && eq_ic(opt, "byscore") {
            rangetype = RangeType::Score;
        } else {
            return Reply::error(SYNTAX);
        }
        j += 1;
    }
    let reverse = reverse.unwrap_or(false);
    if rangetype == RangeType::Auto {
        rangetype = RangeType::Rank;
    }
    // Redis tells "LIMIT given" by the count not being -1.
    if limit != -1 && rangetype == RangeType::Rank {
        return Reply::error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    }
    if withscores && rangetype == RangeType::Lex {
        return Reply::error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    let (mut min_at, mut max_at) = (key_at + 1, key_at + 2);
    if reverse && rangetype != RangeType::Rank {
        std::mem::swap(&mut min_at, &mut max_at);
    }
    let spec = match rangetype {
        RangeType::Score => match parse_score_range(&args[min_at], &args[max_at]) {
            Ok(r) => RangeSpec::Score(r),
            Err(e) => return e,
        },
        RangeType::Lex => match parse_lex_range(&args[min_at], &args[max_at]) {
            Ok(r) => RangeSpec::Lex(r),
            Err(e) => return e,
        },
        _ => match (parse_long(&args[min_at]), parse_long(&args[max_at])) {
            (Ok(a), Ok(b)) => RangeSpec::Rank(a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        },
    };
    let z = match zset_of(ks, &args[key_at], now) {
        Err(e) => return e,
        Ok(None) => {
            return match store {
                Some(dst) => store_result(ks, dst, ZSet::new(), now),
                None => Reply::Array(Some(Vec::new())),
            }
        }
        Ok(Some(z)) => z,
    };
    let items: Vec<(Bytes, f64)> = match spec {
        RangeSpec::Rank(start, end) => match rank_span(z.len(), start, end) {
            Some((s, e)) => z.by_rank(s, e, reverse),
            None => Vec::new(),
        },
        RangeSpec::Score(range) => {
            if offset < 0 || (offset > 0 && offset as u64 >= z.len() as u64) {
                Vec::new()
            } else {
                let it = z.in_score_range(&range);
                let it: Box<dyn Iterator<Item = (&Bytes, f64)>> =
                    if reverse { Box::new(it.rev()) } else { Box::new(it) };
                limited(it, offset, limit)
            }
        }
        RangeSpec::Lex(range) => {
            if offset < 0 || (offset > 0 && offset as u64 >= z.len() as u64) {
                Vec::new()
            } else {
                limited(z.in_lex_range(&range, reverse), offset, limit)
            }
        }
    };
    match store {
        Some(dst) => {
            let result: ZSet = items.into_iter().collect();
            store_result(ks, dst, result, now)
        }
        None => members_reply(items.iter().map(|(m, s)| (m, *s)), withscores),
    }
}

fn store_result(ks: &mut Keyspace, dst: &Bytes, result: ZSet, now: i64) -> Reply {
    store(ks, dst, result, now)
}

/// `offset` answers skipped, then at most `limit` (negative: all the rest).
fn limited<'a>(it: impl Iterator<Item = (&'a Bytes, f64)>, offset: i64, limit: i64) -> Vec<(Bytes, f64)> {
    let it = it.skip(offset as usize).map(|(m, s)| (m.clone(), s));
    if limit < 0 {
        it.collect()
    } else {
        it.take(limit as usize).collect()
    }
}

/// Redis' index sanitizing for a set of `len`: negative counts from the end; `None` if empty.
fn rank_span(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len.saturating_add(start) } else { start };
    let mut end = if end < 0 { len.saturating_add(end) } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`
/// (<https://redis.io/commands/zrange/>). O(log n + k) (by lex: when all scores are equal).
pub(crate) fn zrange(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Auto, None)
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`
/// (<https://redis.io/commands/zrangestore/>): the stored set's size; an empty result deletes
/// `dst`.
pub(crate) fn zrangestore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let dst = args[1].clone();
    zrange_generic(ks, args, now_ms, 2, Some(&dst), RangeType::Auto, None)
}

/// `ZREVRANGE key start stop [WITHSCORES]` (<https://redis.io/commands/zrevrange/>).
pub(crate) fn zrevrange(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Rank, Some(true))
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`
/// (<https://redis.io/commands/zrangebyscore/>).
pub(crate) fn zrangebyscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Score, Some(false))
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`
/// (<https://redis.io/commands/zrevrangebyscore/>).
pub(crate) fn zrevrangebyscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Score, Some(true))
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]` (<https://redis.io/commands/zrangebylex/>).
pub(crate) fn zrangebylex(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Lex, Some(false))
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`
/// (<https://redis.io/commands/zrevrangebylex/>).
pub(crate) fn zrevrangebylex(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Lex, Some(true))
}

// ---------------------------------------------------------------------------------------------
// ZREMRANGEBY*.

/// `zremrangeGenericCommand`: parse the range, then the key (0 if missing).
fn zremrange_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, rangetype: RangeType) -> Reply {
    let spec = match rangetype {
        RangeType::Score => match parse_score_range(&args[2], &args[3]) {
            Ok(r) => RangeSpec::Score(r),
            Err(e) => return e,
        },
        RangeType::Lex => match parse_lex_range(&args[2], &args[3]) {
            Ok(r) => RangeSpec::Lex(r),
            Err(e) => return e,
        },
        _ => match (parse_long(&args[2]), parse_long(&args[3])) {
            (Ok(a), Ok(b)) => RangeSpec::Rank(a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        },
    };
    let z = match zset_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => return Reply::Integer(0),
        Ok(Some(z)) => z,
    };
    let doomed: Vec<Bytes> = match spec {
        RangeSpec::Rank(start, end) => match rank_span(z.len(), start, end) {
            Some((s, e)) => z.by_rank(s, e, false).into_iter().map(|(m, _)| m).collect(),
            None => Vec::new(),
        },
        RangeSpec::Score(range) => z.in_score_range(&range).map(|(m, _)| m.clone()).collect(),
        RangeSpec::Lex(range) => z.in_lex_range(&range, false).map(|(m, _)| m.clone()).collect(),
    };
    if doomed.is_empty() {
        return Reply::Integer(0);
    }
    write_zset(ks, &args[1], now, |z| {
        for m in &doomed {
            z.remove(m);
        }
    });
    Reply::Integer(doomed.len() as i64)
}

/// `ZREMRANGEBYRANK key start stop` (<https://redis.io/commands/zremrangebyrank/>).
/// O((k + 1) log n).
pub(crate) fn zremrangebyrank(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zremrange_generic(ks, args, now_ms, RangeType::Rank)
}

/// `ZREMRANGEBYSCORE key min max` (<https://redis.io/commands/zremrangebyscore/>).
/// O((k + 1) log n).
pub(crate) fn zremrangebyscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zremrange_generic(ks, args, now_ms, RangeType::Score)
}

/// `ZREMRANGEBYLEX key min max` (<https://redis.io/commands/zremrangebylex/>).
/// O((k + 1) log n) when all scores are equal.
pub(crate) fn zremrangebylex(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zremrange_generic(ks, args, now_ms, RangeType::Lex)
}

// ---------------------------------------------------------------------------------------------
// Pops.

/// How a pop answers (`genericZpopCommand`'s `emitkey`/`use_nested_array`, RESP2).
#[derive(Clone, Copy, PartialEq, Eq)]
enum PopShape {
    /// `ZPOPMIN`/`ZPOPMAX`: `[member, score, ...]`; a missing key: an empty array.
    Flat,
    /// `BZPOPMIN`/`BZPOPMAX`: `[key, member, score]`; nothing: a nil array.
    WithKey,
    /// `ZMPOP`/`BZMPOP`: `[key, [[member, score], ...]]`; nothing: a nil array.
    Nested,
}

/// Pops up to `count` members (`None`: one, Redis' `-1`) from the first of `keys` that holds a
/// sorted set, lowest (`max` false) or highest first. A key of another type first: `WRONGTYPE`.
/// O(k log n).
fn zpop_generic(ks: &mut Keyspace, keys: &[Bytes], now: i64, max: bool, count: Option<u64>, shape: PopShape) -> Reply {
    let mut found = None;
    for key in keys {
        match zset_of(ks, key, now) {
            Err(e) => return e,
            Ok(None) => continue,
            Ok(Some(_)) => {
                found = Some(key);
                break;
            }
        }
    }
    let Some(key) = found else {
        return match shape {
            PopShape::Flat => Reply::Array(Some(Vec::new())),
            _ => Reply::Array(None),
        };
    };
    if count == Some(0) {
        return Reply::Array(Some(Vec::new()));
    }
    let count = count.unwrap_or(1);
    let popped = write_zset(ks, key, now, |z| {
        let mut out = Vec::new();
        while (out.len() as u64) < count {
            match z.pop(max) {
                Some(p) => out.push(p),
                None => break,
            }
        }
        out
    })
    .unwrap_or_default();
    match shape {
        PopShape::Flat => Reply::Array(Some(
            popped
                .into_iter()
                .flat_map(|(m, s)| [Reply::bulk(m), score_reply(s)])
                .collect(),
        )),
        PopShape::WithKey => {
            let mut out = vec![Reply::bulk(key.clone())];
            out.extend(popped.into_iter().flat_map(|(m, s)| [Reply::bulk(m), score_reply(s)]));
            Reply::Array(Some(out))
        }
        PopShape::Nested => Reply::Array(Some(vec![
            Reply::bulk(key.clone()),
            Reply::Array(Some(
                popped
                    .into_iter()
                    .map(|(m, s)| Reply::Array(Some(vec![Reply::bulk(m), score_reply(s)])))
                    .collect(),
            )),
        ])),
    }
}

fn zpop_min_max(ks: &mut Keyspace, args: &[Bytes], now: i64, max: bool) -> Reply {
    if args.len() > 3 {
        return Reply::error(SYNTAX);
    }
    let count = match args.get(2) {
        None => None,
        Some(raw) => match parse_ll(raw).filter(|c| *c >= 0) {
            Some(c) => Some(c as u64),
            None => return Reply::error("ERR value is out of range, must be positive"),
        },
    };
    zpop_generic(ks, &args[1..2], now, max, count, PopShape::Flat)
}

/// `ZPOPMIN key [count]` (<https://redis.io/commands/zpopmin/>): `[member, score, ...]`,
/// lowest first. O(k log n).
pub(crate) fn zpopmin(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zpop_min_max(ks, args, now_ms, false)
}

/// `ZPOPMAX key [count]` (<https://redis.io/commands/zpopmax/>): highest first.
pub(crate) fn zpopmax(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zpop_min_max(ks, args, now_ms, true)
}

/// `ZMPOP`'s arguments from `numkeys_at` on: the keys, whether `MAX`, the count.
fn parse_mpop(args: &[Bytes], numkeys_at: usize) -> Result<(&[Bytes], bool, u64), Reply> {
    let positive = |raw: &[u8], msg: &str| parse_ll(raw).filter(|n| *n >= 1).ok_or_else(|| Reply::error(msg));
    let numkeys = positive(&args[numkeys_at], "ERR numkeys should be greater than 0")? as u64;
    let where_at = (numkeys_at as u64).saturating_add(numkeys).saturating_add(1);
    if where_at >= args.len() as u64 {
        return Err(Reply::error(SYNTAX));
    }
    let where_at = where_at as usize;
    let max = if eq_ic(&args[where_at], "min") {
        false
    } else if eq_ic(&args[where_at], "max") {
        true
    } else {
        return Err(Reply::error(SYNTAX));
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if count.is_none() && eq_ic(&args[j], "count") && more > 0 {
            j += 1;
            count = Some(positive(&args[j], "ERR count should be greater than 0")? as u64);
        } else {
            return Err(Reply::error(SYNTAX));
        }
        j += 1;
    }
    Ok((&args[numkeys_at + 1..where_at], max, count.unwrap_or(1)))
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]` (<https://redis.io/commands/zmpop/>):
/// `[key, [[member, score], ...]]` from the first non-empty key, or a nil array. O(k log n).
pub(crate) fn zmpop(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match parse_mpop(args, 1) {
        Ok((keys, max, count)) => zpop_generic(ks, keys, now_ms, max, Some(count), PopShape::Nested),
        Err(e) => e,
    }
}

fn bzpop_min_max(ks: &mut Keyspace, args: &[Bytes], now: i64, max: bool) -> Reply {
    if let Err(e) = blocking_timeout_ms(&args[args.len() - 1]) {
        return e;
    }
    zpop_generic(ks, &args[1..args.len() - 1], now, max, None, PopShape::WithKey)
}

/// `BZPOPMIN key [key ...] timeout` (<https://redis.io/commands/bzpopmin/>), never blocking:
/// `[key, member, score]` from the first non-empty key, or a nil array (what Redis answers
/// inside `MULTI`; a server blocks the connection on it and calls again when a key is written).
pub(crate) fn bzpopmin(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    bzpop_min_max(ks, args, now_ms, false)
}

/// `BZPOPMAX key [key ...] timeout` (<https://redis.io/commands/bzpopmax/>): see [`bzpopmin`].
pub(crate) fn bzpopmax(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    bzpop_min_max(ks, args, now_ms, true)
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`
/// (<https://redis.io/commands/bzmpop/>), never blocking: [`zmpop`]'s answer, a nil array when
/// every key is empty. The timeout is checked after the other arguments, as in Redis.
pub(crate) fn bzmpop(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let (keys, max, count) = match parse_mpop(args, 2) {
        Ok(parsed) => parsed,
        Err(e) => return e,
    };
    if let Err(e) = blocking_timeout_ms(&args[1]) {
        return e;
    }
    zpop_generic(ks, keys, now_ms, max, Some(count), PopShape::Nested)
}

// ---------------------------------------------------------------------------------------------
// ZRANDMEMBER.

/// Uniform in `0..n` (`n > 0`) from the keyspace's deterministic generator.
fn random_below(ks: &mut Keyspace, n: usize) -> usize {
    (((ks.next_random() >> 11) as u128 * n as u128) >> 53) as usize
}

/// `ZRANDMEMBER key [count [WITHSCORES]]` (<https://redis.io/commands/zrandmember/>): one
/// member (nil if no key), or `count` distinct members (negative: `-count` members, repeats
/// allowed). Draws from the keyspace's generator ([`Keyspace::next_random`]), as `SRANDMEMBER`.
/// O(n + count) with a count, else O(n).
pub(crate) fn zrandmember(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let key = &args[1];
    if args.len() >= 3 {
        let Some(count) = parse_ll(&args[2]) else {
            return Reply::error(NOT_INTEGER);
        };
        if count == i64::MIN {
            return Reply::error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            );
        }
        let mut withscores = false;
        if args.len() > 4 || (args.len() == 4 && !eq_ic(&args[3], "withscores")) {
            return Reply::error(SYNTAX);
        } else if args.len() == 4 {
            withscores = true;
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
                return Reply::error("ERR value is out of range");
            }
        }
        let z = match zset_of(ks, key, now_ms) {
            Err(e) => return e,
            Ok(None) => return Reply::Array(Some(Vec::new())),
            Ok(Some(z)) => z,
        };
        if count == 0 {
            return Reply::Array(Some(Vec::new()));
        }
        let all: Vec<(Bytes, f64)> = z.iter().map(|(m, s)| (m.clone(), s)).collect();
        if count.unsigned_abs() > super::syntax::RANDOM_REPLY_MAX && count < 0 {
            return Reply::error("ERR value is out of range");
        }
        let picked: Vec<(Bytes, f64)> = if count < 0 {
            (0..count.unsigned_abs())
                .map(|_| all[random_below(ks, all.len())].clone())
                .collect()
        } else if count as u64 >= all.len() as u64 {
            // The whole set, highest first, as Redis answers it.
            let mut all = all;
            all.reverse();
            all
        } else {
            // A partial Fisher-Yates shuffle.
            let mut all = all;
            let n = count as usize;
            for i in 0..n {
                let j = i + random_below(ks, all.len() - i);
                all.swap(i, j);
            }
            all.truncate(n);
            all
        };
        return members_reply(picked.iter().map(|(m, s)| (m, *s)), withscores);
    }
    match zset_of(ks, key, now_ms) {
        Err(e) => e,
        Ok(None) => Reply::nil(),
        Ok(Some(z)) => {
            let len = z.len();
            let i = random_below(ks, len);
            match zset_of(ks, key, now_ms) {
                Ok(Some(z)) => z
                    .by_rank(i, i, false)
                    .pop()
                    .map_or_else(Reply::nil, |(m, _)| Reply::bulk(m)),
                _ => Reply::nil(),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD.

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// Adds `val` into `acc` as `zunionInterAggregate` does (a NaN sum becomes 0).
fn aggregate(acc: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *acc += val;
            if acc.is_nan() {
                *acc = 0.0;
            }
        }
        Aggregate::Min => *acc = acc.min(val),
        Aggregate::Max => *acc = acc.max(val),
    }
}

/// One input of a set operation: its members with scores (a set's members score 1).
enum Source<'a> {
    Missing,
    ZSet(&'a ZSet),
    Set(&'a BTreeSet<Bytes>),
}

impl Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::ZSet(z) => z.len(),
            Source::Set(s) => s.len(),
        }
    }

    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::ZSet(z) => z.score(m),
            Source::Set(s) => s.contains(m).then_some(1.0),
        }
    }

    fn members(&self) -> Box<dyn Iterator<Item = (&Bytes, f64)> + '_> {
        match self {
            Source::Missing => Box::new(std::iter::empty()),
            Source::ZSet(z) => Box::new(z.iter()),
            Source::Set(s) => Box::new(s.iter().map(|m| (m, 1.0))),
        }
    }
}

/// `zunionInterDiffGenericCommand` of Redis 7.0. `numkeys_at` is `numkeys`' index; `dst` the
/// `STORE` forms' destination.
fn zsetop_generic(
    ks: &mut Keyspace,
    args: &[Bytes],
    now: i64,
    numkeys_at: usize,
    dst: Option<&Bytes>,
    op: SetOp,
    cardinality_only: bool,
) -> Reply {
    // Redis names the command as `c->cmd->name` (lower case).
    let name = String::from_utf8_lossy(&args[0]).to_lowercase();
    let setnum = match parse_long(&args[numkeys_at]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if setnum < 1 {
        return Reply::Error(format!("ERR at least 1 input key is needed for '{name}' command"));
    }
    if setnum as u64 > (args.len() - numkeys_at - 1) as u64 {
        return Reply::error(SYNTAX);
    }
    let setnum = setnum as usize;
    let keys = &args[numkeys_at + 1..numkeys_at + 1 + setnum];
    // Look the keys up (reclaiming expired ones) and check their types before the options.
    for key in keys {
        match ks.lookup(key, now).map(|e| &e.value) {
            None | Some(Value::ZSet(_) | Value::Set(_)) => {}
            Some(_) => return Reply::error(WRONGTYPE),
        }
    }
    let mut weights = vec![1.0f64; setnum];
    let mut how = Aggregate::Sum;
    let (mut withscores, mut limit) = (false, 0i64);
    let mut j = numkeys_at + 1 + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        let opt = &args[j];
        if op != SetOp::Diff && !cardinality_only && remaining > setnum && eq_ic(opt, "weights") {
            for (i, w) in weights.iter_mut().enumerate() {
                match parse_score(&args[j + 1 + i]) {
                    Some(v) => *w = v,
                    None => return Reply::error("ERR weight value is not a float"),
                }
            }
            j += 1 + setnum;
        } else if op != SetOp::Diff && !cardinality_only && remaining >= 2 && eq_ic(opt, "aggregate") {
            let v = &args[j + 1];
            how = if eq_ic(v, "sum") {
                Aggregate::Sum
            } else if eq_ic(v, "min") {
                Aggregate::Min
            } else if eq_ic(v, "max") {
                Aggregate::Max
            } else {
                return Reply::error(SYNTAX);
            };
            j += 2;
        } else if dst.is_none() && !cardinality_only && eq_ic(opt, "withscores") {
            withscores = true;
            j += 1;
        } else if cardinality_only && remaining >= 2 && eq_ic(opt, "limit") {
            match parse_ll(&args[j + 1]).filter(|n| *n >= 0) {
                Some(n) => limit = n,
                None => return Reply::error("ERR LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return Reply::error(SYNTAX);
        }
    }
    let sources: Vec<Source> = keys
        .iter()
        .map(|k| match ks.peek(k, now).map(|e| &e.value) {
            Some(Value::ZSet(z)) => Source::ZSet(z),
            Some(Value::Set(s)) => Source::Set(s),
            _ => Source::Missing,
        })
        .collect();
    let mut order: Vec<usize> = (0..setnum).collect();
    let weighted = |i: usize, s: f64| {
        let v = weights[i] * s;
        if v.is_nan() {
            0.0
        } else {
            v
        }
    };
    let result: ZSet = match op {
        SetOp::Inter => {
            // Smallest first, as Redis sorts its inputs by size.
            order.sort_by_key(|&i| sources[i].len());
            if sources[order[0]].len() == 0 {
                ZSet::new()
            } else {
                let mut out = ZSet::new();
                let mut card = 0i64;
                'members: for (m, s) in sources[order[0]].members() {
                    let mut score = weighted(order[0], s);
                    for &i in &order[1..] {
                        match sources[i].score(m) {
                            Some(other) => aggregate(&mut score, weighted(i, other), how),
                            None => continue 'members,
                        }
                    }
                    if cardinality_only {
                        card += 1;
                        if limit != 0 && card >= limit {
                            break;
                        }
                        continue;
                    }
                    out.insert(m.clone(), score);
                }
                if cardinality_only {
                    return Reply::Integer(card);
                }
                out
            }
        }
        SetOp::Union => {
            order.sort_by_key(|&i| sources[i].len());
            let mut acc: BTreeMap<Bytes, f64> = BTreeMap::new();
            for &i in &order {
                for (m, s) in sources[i].members() {
                    let v = weighted(i, s);
                    match acc.get_mut(m) {
                        Some(cur) => aggregate(cur, v, how),
                        None => {
                            acc.insert(m.clone(), v);
                        }
                    }
                }
            }
            acc.into_iter().collect()
        }
        SetOp::Diff => {
            let mut out = ZSet::new();
            for (m, s) in sources[0].members() {
                if !sources[1..].iter().any(|src| src.score(m).is_some()) {
                    out.insert(m.clone(), s);
                }
            }
            out
        }
    };
    if cardinality_only {
        return Reply::Integer(0);
    }
    drop(sources);
    match dst {
        Some(dst) => store(ks, dst, result, now),
        None => members_reply(result.iter(), withscores),
    }
}

/// `ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
/// (<https://redis.io/commands/zunion/>). O(N log M) for N input members, M answers.
pub(crate) fn zunion(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zsetop_generic(ks, args, now_ms, 1, None, SetOp::Union, false)
}

/// `ZINTER numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
/// (<https://redis.io/commands/zinter/>). O(N·K log M) for the smallest input's N members.
pub(crate) fn zinter(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zsetop_generic(ks, args, now_ms, 1, None, SetOp::Inter, false)
}

/// `ZDIFF numkeys key [key ...] [WITHSCORES]` (<https://redis.io/commands/zdiff/>): the first
/// input's members in no other. O(N·K log M).
pub(crate) fn zdiff(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zsetop_generic(ks, args, now_ms, 1, None, SetOp::Diff, false)
}

/// `ZUNIONSTORE dst numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]`
/// (<https://redis.io/commands/zunionstore/>): the stored set's size; empty deletes `dst`.
pub(crate) fn zunionstore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let dst = args[1].clone();
    zsetop_generic(ks, args, now_ms, 2, Some(&dst), SetOp::Union, false)
}

/// `ZINTERSTORE dst numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]`
/// (<https://redis.io/commands/zinterstore/>).
pub(crate) fn zinterstore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let dst = args[1].clone();
    zsetop_generic(ks, args, now_ms, 2, Some(&dst), SetOp::Inter, false)
}

/// `ZDIFFSTORE dst numkeys key [key ...]` (<https://redis.io/commands/zdiffstore/>).
pub(crate) fn zdiffstore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let dst = args[1].clone();
    zsetop_generic(ks, args, now_ms, 2, Some(&dst), SetOp::Diff, false)
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]` (<https://redis.io/commands/zintercard/>):
/// the intersection's size, counting stopped at `limit` (0: no limit).
pub(crate) fn zintercard(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zsetop_generic(ks, args, now_ms, 1, None, SetOp::Inter, true)
}

// ---------------------------------------------------------------------------------------------
// ZSCAN.

/// `parseScanCursorOrReply`: C's `strtoul` of the whole argument (a sign allowed, `-n` wraps,
/// an empty argument is 0), or `ERR invalid cursor`.
fn parse_cursor(raw: &[u8]) -> Option<u64> {
    let (neg, digits) = match raw.first() {
        Some(b'-') => (true, &raw[1..]),
        Some(b'+') => (false, &raw[1..]),
        _ => (false, raw),
    };
    if raw.is_empty() {
        return Some(0);
    }
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]` (<https://redis.io/commands/zscan/>):
/// `[next cursor, [member, score, ...]]`. A set Redis keeps small (`listpack`) comes whole with
/// cursor 0; a larger one `count` members at a time in the order of a hash of the member, the
/// cursor being the hash to go on from (members sharing a hash come in one answer), so every
/// member present from the first call to the last is answered, as Redis guarantees.
/// O(log n + count).
pub(crate) fn zscan(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let Some(cursor) = parse_cursor(&args[2]) else {
        return Reply::error("ERR invalid cursor");
    };
    let z = match zset_of(ks, &args[1], now_ms) {
        Err(e) => return e,
        Ok(None) => {
            return Reply::Array(Some(vec![Reply::bulk("0"), Reply::Array(Some(Vec::new()))]));
        }
        Ok(Some(z)) => z,
    };
    let (mut count, mut pattern) = (10i64, None);
    let mut j = 3;
    while j < args.len() {
        let left = args.len() - j;
        if eq_ic(&args[j], "count") && left >= 2 {
            count = match parse_long(&args[j + 1]) {
                Ok(c) => c,
                Err(e) => return e,
            };
            if count < 1 {
                return Reply::error(SYNTAX);
            }
        } else if eq_ic(&args[j], "match") && left >= 2 {
            pattern = Some(&args[j + 1]).filter(|p| p.as_ref() != b"*");
        } else {
            return Reply::error(SYNTAX);
        }
        j += 2;
    }
    let matches = |m: &Bytes| pattern.is_none_or(|p| glob_match(p, m));
    let mut out = Vec::new();
    let mut next = 0u64;
    if z.is_listpack_sized() {
        for (m, s) in z.iter() {
            if matches(m) {
                out.push(Reply::bulk(m.clone()));
                out.push(score_reply(s));
            }
        }
    } else {
        let mut group = None;
        for (taken, (h, m)) in z
            .by_hash
            .range((Included((cursor, Bytes::new())), Unbounded))
            .enumerate()
        {
            if taken as i64 >= count && group != Some(*h) {
                next = *h;
                break;
            }
            group = Some(*h);
            if matches(m) {
                out.push(Reply::bulk(m.clone()));
                out.push(score_reply(z.score(m).unwrap_or_default()));
            }
        }
    }
    Reply::Array(Some(vec![Reply::bulk(next.to_string()), Reply::Array(Some(out))]))
}

// ---------------------------------------------------------------------------------------------
// RESP3.

/// Writes `reply`, the RESP2-shaped answer of the sorted-set command `args`, as Redis 7.0 writes
/// it to a RESP3 connection, and says whether it did: scores become doubles (`,1.5`, `,inf`),
/// `WITHSCORES` answers (`ZRANGE` and its older forms, `ZUNION`/`ZINTER`/`ZDIFF`,
/// `ZRANDMEMBER`) and `ZPOPMIN`/`ZPOPMAX` with a count become arrays of `[member, score]`
/// pairs, nils become `_`. `false` (nothing written) for another command, an error, or a reply
/// whose RESP3 form is its RESP2 one with RESP3 nulls (`ZCARD`, `ZRANK`, `ZSCAN`...): the
/// caller writes those as it writes any reply. For the connection's encoder
/// (the `ReplyEncoder` of `resp3.rs`), top-level replies only (inside `EXEC` they stay as they are).
pub(crate) fn encode_resp3(args: &[Bytes], reply: &Reply, out: &mut bytes::BytesMut) -> bool {
    let name = args
        .first()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .unwrap_or_default();
    let withscores = || args.iter().skip(2).any(|a| eq_ic(a, "withscores"));
    let shape = match name.as_str() {
        "zscore" | "zincrby" => Resp3::Score,
        "zadd" if zadd_has_incr(args) => Resp3::Score,
        "zmscore" => Resp3::Scores,
        "zrange" | "zrevrange" | "zrangebyscore" | "zrevrangebyscore" | "zunion" | "zinter" | "zdiff"
        | "zrandmember"
            if withscores() =>
        {
            Resp3::Pairs
        }
        "zpopmin" | "zpopmax" if args.len() == 3 => Resp3::Pairs,
        "zpopmin" | "zpopmax" => Resp3::Flat(0),
        "bzpopmin" | "bzpopmax" => Resp3::Flat(1),
        "zmpop" | "bzmpop" => Resp3::KeyPairs,
        _ => return false,
    };
    let bulk = |b: &Bytes, out: &mut bytes::BytesMut| {
        out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
        out.extend_from_slice(b);
        out.extend_from_slice(b"\r\n");
    };
    let double = |r: &Reply, out: &mut bytes::BytesMut| match r {
        Reply::Bulk(Some(text)) => {
            out.extend_from_slice(b",");
            out.extend_from_slice(text);
            out.extend_from_slice(b"\r\n");
        }
        _ => out.extend_from_slice(b"_\r\n"),
    };
    let array_len = |n: usize, out: &mut bytes::BytesMut| out.extend_from_slice(format!("*{n}\r\n").as_bytes());
    let pairs = |items: &[Reply], out: &mut bytes::BytesMut| -> bool {
        if !items.len().is_multiple_of(2) || !items.iter().all(|i| matches!(i, Reply::Bulk(Some(_)))) {
            return false;
        }
        array_len(items.len() / 2, out);
        for pair in items.chunks(2) {
            array_len(2, out);
            if let Reply::Bulk(Some(m)) = &pair[0] {
                bulk(m, out);
            }
            double(&pair[1], out);
        }
        true
    };
    match (shape, reply) {
        (_, Reply::Error(_)) => false,
        (Resp3::Score, Reply::Bulk(_)) => {
            double(reply, out);
            true
        }
        (Resp3::Scores, Reply::Array(Some(items))) => {
            array_len(items.len(), out);
            for item in items {
                double(item, out);
            }
            true
        }
        (Resp3::Pairs, Reply::Array(Some(items))) => {
            let mut buf = bytes::BytesMut::new();
            let done = pairs(items, &mut buf);
            if done {
                out.extend_from_slice(&buf);
            }
            done
        }
        (Resp3::Flat(keys), Reply::Array(Some(items))) if items.len() == keys + 2 => {
            array_len(items.len(), out);
            for item in &items[..keys + 1] {
                match item {
                    Reply::Bulk(Some(b)) => bulk(b, out),
                    _ => out.extend_from_slice(b"_\r\n"),
                }
            }
            double(&items[keys + 1], out);
            true
        }
        (Resp3::KeyPairs, Reply::Array(Some(items))) => match items.as_slice() {
            [Reply::Bulk(Some(key)), Reply::Array(Some(popped))] => {
                array_len(2, out);
                bulk(key, out);
                array_len(popped.len(), out);
                for pair in popped {
                    match pair {
                        Reply::Array(Some(mp)) if mp.len() == 2 => {
                            array_len(2, out);
                            match &mp[0] {
                                Reply::Bulk(Some(m)) => bulk(m, out),
                                _ => out.extend_from_slice(b"_\r\n"),
                            }
                            double(&mp[1], out);
                        }
                        _ => out.extend_from_slice(b"_\r\n"),
                    }
                }
                true
            }
            _ => false,
        },
        (_, Reply::Array(None)) => {
            out.extend_from_slice(b"_\r\n");
            true
        }
        _ => false,
    }
}

/// The RESP3 forms [`encode_resp3`] writes.
#[derive(Clone, Copy)]
enum Resp3 {
    /// One score, or a null.
    Score,
    /// An array of scores or nulls.
    Scores,
    /// A flat `[member, score, ...]` as an array of `[member, score]` pairs.
    Pairs,
    /// `[key]` (`1`) or nothing (`0`), then member and score.
    Flat(usize),
    /// `[key, [[member, score], ...]]`.
    KeyPairs,
}

/// Whether `ZADD`'s options (before the first score) include `INCR`.
fn zadd_has_incr(args: &[Bytes]) -> bool {
    args.iter()
        .skip(2)
        .take_while(|a| ["nx", "xx", "gt", "lt", "ch", "incr"].iter().any(|o| eq_ic(a, o)))
        .any(|a| eq_ic(a, "incr"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Handler = fn(&mut Keyspace, &[Bytes], i64) -> Reply;

    /// The handler of a sorted-set command, by name.
    fn handler(name: &str) -> Option<Handler> {
        Some(match name {
            "zadd" => zadd,
            "zincrby" => zincrby,
            "zrem" => zrem,
            "zcard" => zcard,
            "zcount" => zcount,
            "zlexcount" => zlexcount,
            "zscore" => zscore,
            "zmscore" => zmscore,
            "zrank" => zrank,
            "zrevrank" => zrevrank,
            "zrange" => zrange,
            "zrangestore" => zrangestore,
            "zrevrange" => zrevrange,
            "zrangebyscore" => zrangebyscore,
            "zrevrangebyscore" => zrevrangebyscore,
            "zrangebylex" => zrangebylex,
            "zrevrangebylex" => zrevrangebylex,
            "zremrangebyrank" => zremrangebyrank,
            "zremrangebyscore" => zremrangebyscore,
            "zremrangebylex" => zremrangebylex,
            "zpopmin" => zpopmin,
            "zpopmax" => zpopmax,
            "zmpop" => zmpop,
            "bzpopmin" => bzpopmin,
            "bzpopmax" => bzpopmax,
            "bzmpop" => bzmpop,
            "zrandmember" => zrandmember,
            "zunion" => zunion,
            "zinter" => zinter,
            "zdiff" => zdiff,
            "zunionstore" => zunionstore,
            "zinterstore" => zinterstore,
            "zdiffstore" => zdiffstore,
            "zintercard" => zintercard,
            "zscan" => zscan,
            _ => return None,
        })
    }

    /// Runs one command as the engine will: arity from [`ZSET_COMMANDS`], then the handler; a
    /// few other commands the cases need (`SET`, `SADD`, `EXISTS`, `TYPE`, `FLUSHALL`).
    fn exec(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
        let name = String::from_utf8_lossy(&args[0]).to_lowercase();
        if let Some(&(_, arity, _)) = ZSET_COMMANDS.iter().find(|(n, _, _)| *n == name) {
            let n = args.len() as i32;
            if (arity > 0 && n != arity) || (arity < 0 && n < -arity) {
                return Reply::Error(format!("ERR wrong number of arguments for '{name}' command"));
            }
            return handler(&name).expect("every listed command has a handler")(ks, args, now);
        }
        match name.as_str() {
            "flushall" => {
                ks.clear_all();
                Reply::ok()
            }
            "set" => {
                ks.insert(args[1].clone(), Value::String(args[2].clone()), None);
                Reply::ok()
            }
            "sadd" => {
                ks.insert(args[1].clone(), Value::Set(args[2..].iter().cloned().collect()), None);
                Reply::Integer(args.len() as i64 - 2)
            }
            "exists" => Reply::Integer(i64::from(ks.lookup(&args[1], now).is_some())),
            "type" => Reply::Status(
                ks.lookup(&args[1], now)
                    .map_or("none", |e| e.value.type_name())
                    .to_string(),
            ),
            other => panic!("no test command {other}"),
        }
    }

    /// Splits a case's command line on spaces; `""` is an empty argument.
    fn words(line: &str) -> Vec<Bytes> {
        line.split_whitespace()
            .map(|w| {
                if w == "\"\"" {
                    Bytes::new()
                } else {
                    Bytes::copy_from_slice(w.as_bytes())
                }
            })
            .collect()
    }

    /// A reply in the cases' notation: `1`, `"bulk"`, `nil`, `nil*`, `[a, b]`, `+OK`, `!ERR ...`.
    fn show(r: &Reply) -> String {
        match r {
            Reply::Status(s) => format!("+{s}"),
            Reply::Error(e) => format!("!{e}"),
            Reply::Integer(i) => i.to_string(),
            Reply::Bulk(None) => "nil".into(),
            Reply::Bulk(Some(b)) => format!("\"{}\"", String::from_utf8_lossy(b)),
            Reply::Array(None) => "nil*".into(),
            Reply::Array(Some(items)) => format!("[{}]", items.iter().map(show).collect::<Vec<_>>().join(", ")),
        }
    }

    fn run(ks: &mut Keyspace, line: &str) -> String {
        let reply = show(&exec(ks, &words(line), 1_000));
        check_all(ks);
        reply
    }

    /// Every sorted set's indexes agree, none is empty, and the byte count is right.
    fn check_all(ks: &Keyspace) {
        for (_, e) in ks.iter() {
            if let Value::ZSet(z) = &e.value {
                z.check();
                assert!(!z.is_empty(), "an empty sorted set was kept");
            }
        }
        assert_eq!(ks.used_bytes(), ks.recount_used_bytes());
    }

    fn replay(cases: &[(&str, &str)]) {
        let mut ks = Keyspace::new();
        for (line, want) in cases {
            assert_eq!(run(&mut ks, line), *want, "{line}");
        }
    }

    /// Each command's paths and errors, with the replies redis-server 7.0.15 gave for the same
    /// commands in the same order (recorded with a RESP2 client; `FLUSHALL` between groups;
    /// the blocking commands inside `MULTI`, where they do not block).
    #[test]
    fn answers_as_redis_7_0_15() {
        replay(REDIS_7_0_15);
    }

    const REDIS_7_0_15: &[(&str, &str)] = &[
        // ZADD: options, errors and their order
        ("zadd z 1 a 2 b 3 c", "3"),
        ("zadd z 1", "!ERR wrong number of arguments for 'zadd' command"),
        ("zadd z 1 a 2", "!ERR syntax error"),
        ("zadd z nx xx 1 a", "!ERR XX and NX options at the same time are not compatible"),
        ("zadd z nx gt 1 a", "!ERR GT, LT, and/or NX options at the same time are not compatible"),
        ("zadd z gt lt 1 a", "!ERR GT, LT, and/or NX options at the same time are not compatible"),
        ("zadd z lt nx 1 a", "!ERR GT, LT, and/or NX options at the same time are not compatible"),
        ("zadd z incr 1 a 2 b", "!ERR INCR option supports a single increment-element pair"),
        ("zadd z xx nx 1 a", "!ERR XX and NX options at the same time are not compatible"),
        ("zadd z abc a", "!ERR value is not a valid float"),
        ("zadd z 1 a abc b", "!ERR value is not a valid float"),
        ("zadd z nan a", "!ERR value is not a valid float"),
        ("zadd z 1e400 a", "!ERR value is not a valid float"),
        ("zadd z 1e-400 a", "!ERR value is not a valid float"),
        ("zadd z 1x a", "!ERR value is not a valid float"),
        ("zadd z 0x10 hex", "1"),
        ("zadd z 5e-324 tiny", "1"),
        ("zscore z tiny", "\"4.9406564584124654e-324\""),
        ("zscore z hex", "\"16\""),
        ("zadd z ch 1 a 5 b 3 c 4 d", "2"),
        ("zadd z nx 10 a 10 e", "1"),
        ("zadd z xx 20 a 20 f", "0"),
        ("zadd z xx ch 20 a 21 a", "1"),
        ("zrange z 0 -1 withscores", "[\"tiny\", \"4.9406564584124654e-324\", \"c\", \"3\", \"d\", \"4\", \"b\", \"5\", \"e\", \"10\", \"hex\", \"16\", \"a\", \"21\"]"),
        ("zadd z gt ch 1 a 30 b", "1"),
        ("zadd z lt ch 1 a 30 c", "1"),
        ("zadd z gt 7 newgt", "1"),
        ("zadd z xx incr 1 nosuch", "nil"),
        ("zadd z nx incr 1 a", "nil"),
        ("zadd z gt incr -1 a", "nil"),
        ("zadd z lt incr -1 a", "\"0\""),
        ("zadd z incr 2.5 a", "\"2.5\""),
        ("zadd z INCR +inf a", "\"inf\""),
        ("zadd z incr -inf a", "!ERR resulting score is not a number (NaN)"),
        ("zscore z a", "\"inf\""),
        ("zadd z 1 a 2 a", "0"),
        ("zscore z a", "\"2\""),
        ("zadd z ch 3 a 3 a 4 a", "2"),
        ("zcard z", "8"),
        ("zadd missing xx 1 a", "0"),
        ("zadd missing xx incr 1 a", "nil"),
        ("exists missing", "0"),
        ("zadd z -0 negzero", "1"),
        ("zscore z negzero", "\"0\""),
        ("zadd z 1.1 float", "1"),
        ("zscore z float", "\"1.1000000000000001\""),
        ("zadd z 3.0000000000000004 ulp", "1"),
        ("zscore z ulp", "\"3.0000000000000004\""),
        ("zadd z -inf ninf 1e308 big 123456789012345678 huge 0.1 tenth 1e-5 small 1e-4 small2 1e21 e21 1e16 e16", "8"),
        ("zrange z 0 -1 withscores", "[\"ninf\", \"-inf\", \"negzero\", \"0\", \"tiny\", \"4.9406564584124654e-324\", \"small\", \"1.0000000000000001e-05\", \"small2\", \"0.0001\", \"tenth\", \"0.10000000000000001\", \"float\", \"1.1000000000000001\", \"c\", \"3\", \"ulp\", \"3.0000000000000004\", \"a\", \"4\", \"d\", \"4\", \"newgt\", \"7\", \"e\", \"10\", \"hex\", \"16\", \"b\", \"30\", \"e16\", \"10000000000000000\", \"huge\", \"1.2345678901234568e+17\", \"e21\", \"1e+21\", \"big\", \"1e+308\"]"),
        ("type z", "+zset"),
        ("set s x", "+OK"),
        ("zadd s 1 a", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zadd s abc a", "!ERR value is not a valid float"),
        ("zincrby s 1 a", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zincrby s x a", "!ERR value is not a valid float"),
        ("zincrby z x a", "!ERR value is not a valid float"),
        ("zincrby z 1 newbie", "\"1\""),
        ("zincrby z -2.5 newbie", "\"-1.5\""),
        ("zincrby z inf infm", "\"inf\""),
        ("zincrby z -inf infm", "!ERR resulting score is not a number (NaN)"),
        ("zscore z infm", "\"inf\""),

        ("flushall", "+OK"),
        // ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK
        ("zadd z 1 a 2 b 3 c 3 d", "4"),
        ("zrem z a x b", "2"),
        ("zrem z x", "0"),
        ("zrem nosuch a", "0"),
        ("zcard z", "2"),
        ("zcard nosuch", "0"),
        ("zscore z c", "\"3\""),
        ("zscore z x", "nil"),
        ("zscore nosuch x", "nil"),
        ("zmscore z c x d", "[\"3\", nil, \"3\"]"),
        ("zmscore nosuch a b", "[nil, nil]"),
        ("zrank z c", "0"),
        ("zrank z d", "1"),
        ("zrevrank z c", "1"),
        ("zrevrank z d", "0"),
        ("zrank z x", "nil"),
        ("zrank nosuch x", "nil"),
        ("zrem z c d", "2"),
        ("exists z", "0"),
        ("set s x", "+OK"),
        ("zcard s", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zscore s a", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zmscore s a", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zrank s a", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zrem s a", "!WRONGTYPE Operation against a key holding the wrong kind of value"),

        ("flushall", "+OK"),
        // ordering by (score, member) and ranks
        ("zadd z 2 b 1 c 2 a 1 d -inf e +inf f 0 g", "7"),
        ("zrange z 0 -1 withscores", "[\"e\", \"-inf\", \"g\", \"0\", \"c\", \"1\", \"d\", \"1\", \"a\", \"2\", \"b\", \"2\", \"f\", \"inf\"]"),
        ("zrevrange z 0 -1 withscores", "[\"f\", \"inf\", \"b\", \"2\", \"a\", \"2\", \"d\", \"1\", \"c\", \"1\", \"g\", \"0\", \"e\", \"-inf\"]"),
        ("zrank z e", "0"),
        ("zrank z a", "4"),
        ("zrank z b", "5"),
        ("zrank z f", "6"),
        ("zrevrank z f", "0"),
        ("zrevrank z e", "6"),
        ("zrange z 2 3", "[\"c\", \"d\"]"),
        ("zrange z -3 -2", "[\"a\", \"b\"]"),
        ("zrange z -100 100", "[\"e\", \"g\", \"c\", \"d\", \"a\", \"b\", \"f\"]"),
        ("zrange z 5 2", "[]"),
        ("zrange z 7 10", "[]"),
        ("zrange z -1 -1", "[\"f\"]"),
        ("zrange z 0 0 rev", "[\"f\"]"),
        ("zrange z 1 3 rev withscores", "[\"b\", \"2\", \"a\", \"2\", \"d\", \"1\"]"),
        ("zrange z 0 -1 WITHSCORES rev", "[\"f\", \"inf\", \"b\", \"2\", \"a\", \"2\", \"d\", \"1\", \"c\", \"1\", \"g\", \"0\", \"e\", \"-inf\"]"),
        ("zrevrange z 1 2 withscores", "[\"b\", \"2\", \"a\", \"2\"]"),
        ("zrevrange z 1 2 withscores x", "!ERR syntax error"),
        ("zrange z a 1", "!ERR value is not an integer or out of range"),
        ("zrange z 0 b", "!ERR value is not an integer or out of range"),
        ("zrange nosuch 0 -1", "[]"),
        ("zrange z 0 -1 limit 1 2", "!ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"),
        ("zrange z 0 -1 limit 0 -1", "[\"e\", \"g\", \"c\", \"d\", \"a\", \"b\", \"f\"]"),
        ("zrange z 0 -1 limit 1", "!ERR syntax error"),
        ("zrange z 0 -1 withscores withscores", "[\"e\", \"-inf\", \"g\", \"0\", \"c\", \"1\", \"d\", \"1\", \"a\", \"2\", \"b\", \"2\", \"f\", \"inf\"]"),
        ("zrange z 0 -1 bylex rev withscores", "!ERR syntax error, WITHSCORES not supported in combination with BYLEX"),
        ("zrange z 0 -1 byscore bylex", "!ERR syntax error"),
        ("zrange z 0 -1 rev rev", "!ERR syntax error"),
        ("zrevrange z 0 -1 rev", "!ERR syntax error"),

        ("flushall", "+OK"),
        // ranges by score
        ("zadd z 1 a 2 b 3 c 4 d 5 e -inf n +inf p", "7"),
        ("zrangebyscore z 2 4", "[\"b\", \"c\", \"d\"]"),
        ("zrangebyscore z (2 4", "[\"c\", \"d\"]"),
        ("zrangebyscore z 2 (4", "[\"b\", \"c\"]"),
        ("zrangebyscore z (2 (4", "[\"c\"]"),
        ("zrangebyscore z (2 (3", "[]"),
        ("zrangebyscore z (2 (2", "[]"),
        ("zrangebyscore z 2 2", "[\"b\"]"),
        ("zrangebyscore z 4 2", "[]"),
        ("zrangebyscore z -inf +inf", "[\"n\", \"a\", \"b\", \"c\", \"d\", \"e\", \"p\"]"),
        ("zrangebyscore z (-inf (+inf", "[\"a\", \"b\", \"c\", \"d\", \"e\"]"),
        ("zrangebyscore z -inf -inf withscores", "[\"n\", \"-inf\"]"),
        ("zrangebyscore z +inf +inf withscores", "[\"p\", \"inf\"]"),
        ("zrangebyscore z (+inf +inf", "[]"),
        ("zrangebyscore z -inf (-inf", "[]"),
        ("zrangebyscore z 1e400 inf", "[\"p\"]"),
        ("zrangebyscore z (1e400 inf", "[]"),
        ("zrangebyscore z \"\" \"\"", "[]"),
        ("zrangebyscore z ( 5", "[\"a\", \"b\", \"c\", \"d\", \"e\"]"),
        ("zrangebyscore z a 5", "!ERR min or max is not a float"),
        ("zrangebyscore z 1 nan", "!ERR min or max is not a float"),
        ("zrangebyscore z 1 5 limit 1 2", "[\"b\", \"c\"]"),
        ("zrangebyscore z 1 5 limit 1 -1", "[\"b\", \"c\", \"d\", \"e\"]"),
        ("zrangebyscore z 1 5 limit -1 2", "[]"),
        ("zrangebyscore z 1 5 limit 0 0", "[]"),
        ("zrangebyscore z 1 5 limit 9 1", "[]"),
        ("zrangebyscore z 1 5 limit 6 1", "[]"),
        ("zrangebyscore z 1 5 limit x 1", "!ERR value is not an integer or out of range"),
        ("zrangebyscore z 1 5 withscores limit 2 10", "[\"c\", \"3\", \"d\", \"4\", \"e\", \"5\"]"),
        ("zrangebyscore z 1 5 rev", "!ERR syntax error"),
        ("zrangebyscore z 1 5 byscore", "!ERR syntax error"),
        ("zrangebyscore z 1 5 limit 1", "!ERR syntax error"),
        ("zrevrangebyscore z 4 2 withscores", "[\"d\", \"4\", \"c\", \"3\", \"b\", \"2\"]"),
        ("zrevrangebyscore z 2 4", "[]"),
        ("zrevrangebyscore z +inf -inf limit 1 3", "[\"e\", \"d\", \"c\"]"),
        ("zrevrangebyscore z (5 (1", "[\"d\", \"c\", \"b\"]"),
        ("zrange z 2 4 byscore", "[\"b\", \"c\", \"d\"]"),
        ("zrange z 4 2 byscore rev", "[\"d\", \"c\", \"b\"]"),
        ("zrange z (1 5 byscore limit 1 2 withscores", "[\"c\", \"3\", \"d\", \"4\"]"),
        ("zrange z 5 (1 byscore rev limit 1 2 withscores", "[\"d\", \"4\", \"c\", \"3\"]"),
        ("zcount z 2 4", "3"),
        ("zcount z (2 4", "2"),
        ("zcount z -inf +inf", "7"),
        ("zcount z 5 1", "0"),
        ("zcount z a 1", "!ERR min or max is not a float"),
        ("zcount nosuch 1 2", "0"),
        ("zcount nosuch a b", "!ERR min or max is not a float"),
        ("set s x", "+OK"),
        ("zcount s 1 2", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zcount s a 2", "!ERR min or max is not a float"),
        ("zrangebyscore s a 2", "!ERR min or max is not a float"),
        ("zrangebyscore s 1 2", "!WRONGTYPE Operation against a key holding the wrong kind of value"),

        ("flushall", "+OK"),
        // ranges by lex
        ("zadd z 0 a 0 b 0 c 0 d 0 e 0 f 0 g", "7"),
        ("zrangebylex z - +", "[\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\"]"),
        ("zrangebylex z - [c", "[\"a\", \"b\", \"c\"]"),
        ("zrangebylex z - (c", "[\"a\", \"b\"]"),
        ("zrangebylex z [aaa (g", "[\"b\", \"c\", \"d\", \"e\", \"f\"]"),
        ("zrangebylex z (b [e", "[\"c\", \"d\", \"e\"]"),
        ("zrangebylex z [b [b", "[\"b\"]"),
        ("zrangebylex z (b (b", "[]"),
        ("zrangebylex z [b (b", "[]"),
        ("zrangebylex z [e [b", "[]"),
        ("zrangebylex z + -", "[]"),
        ("zrangebylex z - -", "[]"),
        ("zrangebylex z + +", "[]"),
        ("zrangebylex z [ +", "[\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\"]"),
        ("zrangebylex z ( +", "[\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\"]"),
        ("zrangebylex z - [", "[]"),
        ("zrangebylex z a +", "!ERR min or max not valid string range item"),
        ("zrangebylex z - z", "!ERR min or max not valid string range item"),
        ("zrangebylex z -- +", "!ERR min or max not valid string range item"),
        ("zrangebylex z - ++", "!ERR min or max not valid string range item"),
        ("zrangebylex z - + limit 2 3", "[\"c\", \"d\", \"e\"]"),
        ("zrangebylex z - + limit 2 -1", "[\"c\", \"d\", \"e\", \"f\", \"g\"]"),
        ("zrangebylex z - + limit -1 2", "[]"),
        ("zrangebylex z - + withscores", "!ERR syntax error, WITHSCORES not supported in combination with BYLEX"),
        ("zrevrangebylex z + -", "[\"g\", \"f\", \"e\", \"d\", \"c\", \"b\", \"a\"]"),
        ("zrevrangebylex z [e (b", "[\"e\", \"d\", \"c\"]"),
        ("zrevrangebylex z - +", "[]"),
        ("zrevrangebylex z + - limit 1 2", "[\"f\", \"e\"]"),
        ("zrange z [b [e bylex", "[\"b\", \"c\", \"d\", \"e\"]"),
        ("zrange z [e [b bylex rev limit 1 5", "[\"d\", \"c\", \"b\"]"),
        ("zlexcount z - +", "7"),
        ("zlexcount z [b (e", "3"),
        ("zlexcount z (b +", "5"),
        ("zlexcount z b +", "!ERR min or max not valid string range item"),
        ("zlexcount nosuch - +", "0"),
        ("zlexcount nosuch x +", "!ERR min or max not valid string range item"),
        ("zadd m 1 b 2 a 3 d 0 c", "4"),
        ("zrangebylex m - +", "[\"c\", \"b\", \"a\", \"d\"]"),
        ("zrangebylex m [b +", "[\"c\", \"b\", \"a\", \"d\"]"),
        ("zrangebylex m - [b", "[]"),
        ("zrangebylex m (a [d", "[\"c\", \"b\", \"a\", \"d\"]"),
        ("zrangebylex m [c +", "[\"c\", \"b\", \"a\", \"d\"]"),
        ("zrevrangebylex m + [b", "[\"d\"]"),
        ("zrevrangebylex m [c -", "[\"a\", \"b\", \"c\"]"),
        ("zlexcount m [b +", "4"),

        ("flushall", "+OK"),
        // ZRANGESTORE
        ("zadd src 1 a 2 b 3 c 4 d", "4"),
        ("set dst x", "+OK"),
        ("zrangestore dst src 1 2", "2"),
        ("zrange dst 0 -1 withscores", "[\"b\", \"2\", \"c\", \"3\"]"),
        ("type dst", "+zset"),
        ("zrangestore dst src 2 3 byscore rev", "0"),
        ("zrangestore dst src 3 2 byscore rev", "2"),
        ("zrange dst 0 -1 withscores", "[\"b\", \"2\", \"c\", \"3\"]"),
        ("zrangestore dst src [b [c bylex", "2"),
        ("zrange dst 0 -1 withscores", "[\"b\", \"2\", \"c\", \"3\"]"),
        ("zrangestore dst src 5 6", "0"),
        ("exists dst", "0"),
        ("zrangestore dst src 0 -1", "4"),
        ("zrangestore dst nosuch 0 -1", "0"),
        ("exists dst", "0"),
        ("zrangestore dst src 0 -1 withscores", "!ERR syntax error"),
        ("zrangestore dst src 0 -1 limit 0 1", "!ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"),
        ("set s x", "+OK"),
        ("zrangestore dst s 0 -1", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zrangestore s src 0 0", "1"),
        ("type s", "+zset"),
        ("zrangestore src src 1 1", "1"),
        ("zrange src 0 -1 withscores", "[\"b\", \"2\"]"),

        ("flushall", "+OK"),
        // ZREMRANGEBY*
        ("zadd z 1 a 2 b 3 c 4 d 5 e", "5"),
        ("zremrangebyrank z 1 2", "2"),
        ("zrange z 0 -1", "[\"a\", \"d\", \"e\"]"),
        ("zremrangebyrank z 5 10", "0"),
        ("zremrangebyrank z -1 -1", "1"),
        ("zremrangebyrank z x 1", "!ERR value is not an integer or out of range"),
        ("zremrangebyrank nosuch 0 -1", "0"),
        ("zremrangebyrank nosuch x 1", "!ERR value is not an integer or out of range"),
        ("zrange z 0 -1", "[\"a\", \"d\"]"),
        ("zadd z 1 a 2 b 3 c 4 d 5 e", "3"),
        ("zremrangebyscore z (1 3", "2"),
        ("zremrangebyscore z 10 20", "0"),
        ("zremrangebyscore z a 20", "!ERR min or max is not a float"),
        ("zremrangebyscore nosuch 1 2", "0"),
        ("zrange z 0 -1", "[\"a\", \"d\", \"e\"]"),
        ("zremrangebyscore z -inf +inf", "3"),
        ("exists z", "0"),
        ("zadd z 0 a 0 b 0 c 0 d 0 e", "5"),
        ("zremrangebylex z [b (d", "2"),
        ("zremrangebylex z x +", "!ERR min or max not valid string range item"),
        ("zremrangebylex z + -", "0"),
        ("zrange z 0 -1", "[\"a\", \"d\", \"e\"]"),
        ("zremrangebylex z - +", "3"),
        ("exists z", "0"),
        ("set s x", "+OK"),
        ("zremrangebyrank s 0 1", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zremrangebyscore s 0 1", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zremrangebylex s - +", "!WRONGTYPE Operation against a key holding the wrong kind of value"),

        ("flushall", "+OK"),
        // pops
        ("zadd z 1 a 2 b 3 c 4 d 5 e", "5"),
        ("zpopmin z", "[\"a\", \"1\"]"),
        ("zpopmax z", "[\"e\", \"5\"]"),
        ("zpopmin z 2", "[\"b\", \"2\", \"c\", \"3\"]"),
        ("zpopmax z 0", "[]"),
        ("zpopmin z -1", "!ERR value is out of range, must be positive"),
        ("zpopmin z x", "!ERR value is out of range, must be positive"),
        ("zpopmin z 1 2", "!ERR syntax error"),
        ("zpopmin z 10", "[\"d\", \"4\"]"),
        ("exists z", "0"),
        ("zpopmin nosuch", "[]"),
        ("zpopmin nosuch 0", "[]"),
        ("zpopmax nosuch 3", "[]"),
        ("set s x", "+OK"),
        ("zpopmin s", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zpopmin s 0", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zadd z 1 a 2 b 3 c", "3"),
        ("zmpop 1 z min", "[\"z\", [[\"a\", \"1\"]]]"),
        ("zmpop 2 nosuch z max count 5", "[\"z\", [[\"c\", \"3\"], [\"b\", \"2\"]]]"),
        ("zmpop 1 z min", "nil*"),
        ("zmpop 0 z min", "!ERR numkeys should be greater than 0"),
        ("zmpop -1 z min", "!ERR numkeys should be greater than 0"),
        ("zmpop x z min", "!ERR numkeys should be greater than 0"),
        ("zmpop 1 z mid", "!ERR syntax error"),
        ("zmpop 2 z min", "!ERR syntax error"),
        ("zmpop 1 z min count", "!ERR syntax error"),
        ("zmpop 1 z min count 0", "!ERR count should be greater than 0"),
        ("zmpop 1 z min count -1", "!ERR count should be greater than 0"),
        ("zmpop 1 z min count 1 count 1", "!ERR syntax error"),
        ("zmpop 1 z min foo", "!ERR syntax error"),
        ("zmpop 2 nosuch s min", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zadd z 1 a 2 b", "2"),
        ("bzpopmin nosuch z 0", "[\"z\", \"a\", \"1\"]"),
        ("bzpopmax z 1.5", "[\"z\", \"b\", \"2\"]"),
        ("bzpopmin z 0", "nil*"),
        ("bzpopmin z 0", "nil*"),
        ("bzpopmin z -1", "!ERR timeout is negative"),
        ("bzpopmin z x", "!ERR timeout is not a float or out of range"),
        ("bzpopmin s 0", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zadd z 1 a 2 b 3 c", "3"),
        ("bzmpop 0 1 z max count 2", "[\"z\", [[\"c\", \"3\"], [\"b\", \"2\"]]]"),
        ("bzmpop 0 1 z min count 2", "[\"z\", [[\"a\", \"1\"]]]"),
        ("bzmpop 0 1 z min", "nil*"),
        ("bzmpop -1 1 z min", "!ERR timeout is negative"),
        ("bzmpop x 1 z min", "!ERR timeout is not a float or out of range"),
        ("bzmpop -1 0 z min", "!ERR numkeys should be greater than 0"),
        ("bzmpop 0 1 s min", "!WRONGTYPE Operation against a key holding the wrong kind of value"),

        ("flushall", "+OK"),
        // set operations
        ("zadd a 1 x 2 y 3 z", "3"),
        ("zadd b 4 y 5 z 6 w", "3"),
        ("sadd s y w v", "3"),
        ("zunion 2 a b withscores", "[\"x\", \"1\", \"w\", \"6\", \"y\", \"6\", \"z\", \"8\"]"),
        ("zunion 2 a b weights 2 3 withscores", "[\"x\", \"2\", \"y\", \"16\", \"w\", \"18\", \"z\", \"21\"]"),
        ("zunion 2 a b aggregate min withscores", "[\"x\", \"1\", \"y\", \"2\", \"z\", \"3\", \"w\", \"6\"]"),
        ("zunion 2 a b aggregate max withscores", "[\"x\", \"1\", \"y\", \"4\", \"z\", \"5\", \"w\", \"6\"]"),
        ("zunion 2 a b weights 1 -1 aggregate sum withscores", "[\"w\", \"-6\", \"y\", \"-2\", \"z\", \"-2\", \"x\", \"1\"]"),
        ("zunion 3 a b s withscores", "[\"v\", \"1\", \"x\", \"1\", \"w\", \"7\", \"y\", \"7\", \"z\", \"8\"]"),
        ("zunion 3 a nosuch s withscores", "[\"v\", \"1\", \"w\", \"1\", \"x\", \"1\", \"y\", \"3\", \"z\", \"3\"]"),
        ("zunion 2 a b", "[\"x\", \"w\", \"y\", \"z\"]"),
        ("zunion 0 a", "!ERR at least 1 input key is needed for 'zunion' command"),
        ("zunion -1 a", "!ERR at least 1 input key is needed for 'zunion' command"),
        ("zunion x a", "!ERR value is not an integer or out of range"),
        ("zunion 3 a b", "!ERR syntax error"),
        ("zunion 2 a b weights 1", "!ERR syntax error"),
        ("zunion 2 a b weights 1 x", "!ERR weight value is not a float"),
        ("zunion 2 a b weights 1 nan", "!ERR weight value is not a float"),
        ("zunion 2 a b aggregate avg", "!ERR syntax error"),
        ("zunion 2 a b aggregate", "!ERR syntax error"),
        ("zunion 2 a b withscores withscores", "[\"x\", \"1\", \"w\", \"6\", \"y\", \"6\", \"z\", \"8\"]"),
        ("zunion 2 a b limit 1", "!ERR syntax error"),
        ("set str x", "+OK"),
        ("zunion 2 a str", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zunion 2 a str weights x", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zinter 2 a b withscores", "[\"y\", \"6\", \"z\", \"8\"]"),
        ("zinter 2 a b weights 2 3 aggregate max withscores", "[\"y\", \"12\", \"z\", \"15\"]"),
        ("zinter 3 a b s withscores", "[\"y\", \"7\"]"),
        ("zinter 2 a nosuch withscores", "[]"),
        ("zinter 0 a", "!ERR at least 1 input key is needed for 'zinter' command"),
        ("zinter 2 a str", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zdiff 2 a b withscores", "[\"x\", \"1\"]"),
        ("zdiff 2 b s withscores", "[\"z\", \"5\"]"),
        ("zdiff 1 a", "[\"x\", \"y\", \"z\"]"),
        ("zdiff 2 nosuch a", "[]"),
        ("zdiff 2 a b weights 1 2", "!ERR syntax error"),
        ("zdiff 2 a b aggregate sum", "!ERR syntax error"),
        ("zdiff 0 a", "!ERR at least 1 input key is needed for 'zdiff' command"),
        ("zunionstore dst 2 a b", "4"),
        ("zrange dst 0 -1 withscores", "[\"x\", \"1\", \"w\", \"6\", \"y\", \"6\", \"z\", \"8\"]"),
        ("zunionstore dst 2 a b withscores", "!ERR syntax error"),
        ("zinterstore dst 2 a b weights 1 2", "2"),
        ("zrange dst 0 -1 withscores", "[\"y\", \"10\", \"z\", \"13\"]"),
        ("zinterstore dst 2 a nosuch", "0"),
        ("exists dst", "0"),
        ("zdiffstore dst 2 a b", "1"),
        ("zrange dst 0 -1 withscores", "[\"x\", \"1\"]"),
        ("zdiffstore dst 2 a a", "0"),
        ("exists dst", "0"),
        ("zunionstore dst 0 a", "!ERR at least 1 input key is needed for 'zunionstore' command"),
        ("zunionstore dst 2 a str", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zdiffstore dst 1 nosuch", "0"),
        ("zinterstore a 2 a b", "2"),
        ("zrange a 0 -1 withscores", "[\"y\", \"6\", \"z\", \"8\"]"),
        ("zintercard 2 a b", "2"),
        ("zintercard 2 b s", "2"),
        ("zintercard 2 b s limit 1", "1"),
        ("zintercard 2 b s limit 0", "2"),
        ("zintercard 2 b s limit -1", "!ERR LIMIT can't be negative"),
        ("zintercard 2 b s limit x", "!ERR LIMIT can't be negative"),
        ("zintercard 2 b s withscores", "!ERR syntax error"),
        ("zintercard 2 b s weights 1 1", "!ERR syntax error"),
        ("zintercard 0 b", "!ERR at least 1 input key is needed for 'zintercard' command"),
        ("zintercard 3 b s", "!ERR syntax error"),
        ("zintercard 2 b str", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zintercard 2 b nosuch", "0"),
        ("zadd inf1 +inf x -inf y", "2"),
        ("zadd inf2 -inf x +inf y", "2"),
        ("zunion 2 inf1 inf2 withscores", "[\"x\", \"0\", \"y\", \"0\"]"),
        ("zunion 2 inf1 inf2 weights 0 1 withscores", "[\"x\", \"-inf\", \"y\", \"inf\"]"),
        ("zinter 2 inf1 inf2 withscores", "[\"x\", \"0\", \"y\", \"0\"]"),
        ("zinter 2 inf1 inf2 aggregate min withscores", "[\"x\", \"-inf\", \"y\", \"-inf\"]"),

        ("flushall", "+OK"),
        // ZRANDMEMBER (the deterministic answers)
        ("zadd z 1 a 2 b 3 c", "3"),
        ("zrandmember nosuch", "nil"),
        ("zrandmember nosuch 5", "[]"),
        ("zrandmember nosuch -5 withscores", "[]"),
        ("zrandmember z 0", "[]"),
        ("zrandmember z 0 withscores", "[]"),
        ("zrandmember z 3 withscores", "[\"c\", \"3\", \"b\", \"2\", \"a\", \"1\"]"),
        ("zrandmember z 10", "[\"c\", \"b\", \"a\"]"),
        ("zrandmember z x", "!ERR value is not an integer or out of range"),
        ("zrandmember z 1 foo", "!ERR syntax error"),
        ("zrandmember z 1 withscores foo", "!ERR syntax error"),
        ("zrandmember z -9223372036854775808", "!ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"),
        ("zrandmember z 9223372036854775807", "[\"c\", \"b\", \"a\"]"),
        ("zrandmember z -9223372036854775807 withscores", "!ERR value is out of range"),
        ("zrandmember z 4611686018427387903 withscores", "[\"c\", \"3\", \"b\", \"2\", \"a\", \"1\"]"),
        ("zrandmember z 4611686018427387904 withscores", "!ERR value is out of range"),
        ("set s x", "+OK"),
        ("zrandmember s", "!WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("zrandmember s 1", "!WRONGTYPE Operation against a key holding the wrong kind of value"),

        ("flushall", "+OK"),
        // ZSCAN
        ("zadd z 1 a 2 b 3 c 10 abc", "4"),
        ("zscan z 0", "[\"0\", [\"a\", \"1\", \"b\", \"2\", \"c\", \"3\", \"abc\", \"10\"]]"),
        ("zscan z 0 match a*", "[\"0\", [\"a\", \"1\", \"abc\", \"10\"]]"),
        ("zscan z 0 count 1", "[\"0\", [\"a\", \"1\", \"b\", \"2\", \"c\", \"3\", \"abc\", \"10\"]]"),
        ("zscan z 0 count 0", "!ERR syntax error"),
        ("zscan z 0 count x", "!ERR value is not an integer or out of range"),
        ("zscan z 0 match", "!ERR syntax error"),
        ("zscan z 0 type zset", "!ERR syntax error"),
        ("zscan z x", "!ERR invalid cursor"),
        ("zscan z -1", "[\"0\", [\"a\", \"1\", \"b\", \"2\", \"c\", \"3\", \"abc\", \"10\"]]"),
        ("zscan z \"\"", "[\"0\", [\"a\", \"1\", \"b\", \"2\", \"c\", \"3\", \"abc\", \"10\"]]"),
        ("zscan z 18446744073709551616", "!ERR invalid cursor"),
        ("zscan nosuch 0", "[\"0\", []]"),
        ("zscan nosuch x", "!ERR invalid cursor"),
        ("set s x", "+OK"),
        ("zscan s 0", "!WRONGTYPE Operation against a key holding the wrong kind of value"),

        ("flushall", "+OK"),
        // more edge cases
        ("zadd z gt ch 5 a", "1"),
        ("zadd z lt ch 1 a 2 b", "2"),
        ("zadd z gt ch 2 a 1 b", "1"),
        ("zrange z 0 -1 withscores", "[\"a\", \"2\", \"b\", \"2\"]"),
        ("zadd z ch ch nx 3 c", "1"),
        ("zadd z XX CH GT 10 a 1 b 0 nosuch", "1"),
        ("zrange z 0 -1 withscores", "[\"b\", \"2\", \"c\", \"3\", \"a\", \"10\"]"),
        ("zmpop 9223372036854775807 z min", "!ERR syntax error"),
        ("zmpop 9223372036854775806 z min", "!ERR syntax error"),
        ("zunion 9223372036854775807 z", "!ERR syntax error"),
        ("zrange z 0 9223372036854775807", "[\"b\", \"c\", \"a\"]"),
        ("zrange z -9223372036854775808 -1", "[\"b\", \"c\", \"a\"]"),
        ("zremrangebyrank z -9223372036854775808 9223372036854775807", "3"),
        ("exists z", "0"),

        ("flushall", "+OK"),
        ("zadd src 1 a 2 b 3 c 4 d 5 e", "5"),
        ("zrangestore dst src [e [b bylex rev limit 1 2", "2"),
        ("zrange dst 0 -1 withscores", "[\"c\", \"3\", \"d\", \"4\"]"),
        ("zrangestore dst src +inf -inf byscore rev limit 1 10", "4"),
        ("zrange dst 0 -1 withscores", "[\"a\", \"1\", \"b\", \"2\", \"c\", \"3\", \"d\", \"4\"]"),
        ("zrangestore dst src (1 (5 byscore", "3"),
        ("zrange dst 0 -1", "[\"b\", \"c\", \"d\"]"),
        ("zrangebyscore src -inf +inf limit 0", "!ERR syntax error"),
        ("zrangebyscore src -inf +inf limit 0 1 limit 2 1", "[\"c\"]"),
        ("zrangebyscore src -inf +inf withscores withscores limit 1 1", "[\"b\", \"2\"]"),
        ("zrange src 0 -1 byscore", "[]"),
        ("zrange src (0 (1 byscore", "[]"),
        ("zrevrangebyscore src (5 -inf limit 0 2 withscores", "[\"d\", \"4\", \"c\", \"3\"]"),
        ("zrevrange src -2 -1", "[\"b\", \"a\"]"),
        ("zrevrange src 1 1000", "[\"d\", \"c\", \"b\", \"a\"]"),

        ("flushall", "+OK"),
        ("sadd s1 a b c", "3"),
        ("sadd s2 b c d", "3"),
        ("zadd z1 10 c 20 b", "2"),
        ("zinterstore out 3 s1 s2 z1", "2"),
        ("zrange out 0 -1 withscores", "[\"c\", \"12\", \"b\", \"22\"]"),
        ("zinterstore out 3 s1 s2 z1 weights 1 2 3", "2"),
        ("zrange out 0 -1 withscores", "[\"c\", \"33\", \"b\", \"63\"]"),
        ("zunionstore out 2 s1 s2", "4"),
        ("zrange out 0 -1 withscores", "[\"a\", \"1\", \"d\", \"1\", \"b\", \"2\", \"c\", \"2\"]"),
        ("zunionstore s1 2 s1 s2 aggregate max", "4"),
        ("type s1", "+zset"),
        ("zrange s1 0 -1 withscores", "[\"a\", \"1\", \"b\", \"1\", \"c\", \"1\", \"d\", \"1\"]"),
        ("zdiffstore out 2 z1 s2", "0"),
        ("zrange out 0 -1 withscores", "[]"),
        ("zintercard 3 s1 s2 z1 limit 1", "1"),
        ("zinter 2 z1 s2 weights inf 0 withscores", "[\"b\", \"inf\", \"c\", \"inf\"]"),
        ("zunion 2 z1 z1 weights -inf inf withscores", "[\"b\", \"0\", \"c\", \"0\"]"),
        ("zunion 1 z1 weights 0.5 withscores", "[\"c\", \"5\", \"b\", \"10\"]"),
        ("zunion 1 z1 weights 1e400 withscores", "!ERR weight value is not a float"),
        ("zunion 1 z1 weights 0x10 withscores", "[\"c\", \"160\", \"b\", \"320\"]"),
        ("zunion 1 z1 WEIGHTS 2 AGGREGATE MAX AGGREGATE MIN WITHSCORES", "[\"c\", \"20\", \"b\", \"40\"]"),
        ("zunion 1 z1 weights 1 weights 2 withscores", "[\"c\", \"20\", \"b\", \"40\"]"),

        ("flushall", "+OK"),
        ("zadd z 1 a", "1"),
        ("zincrby z 1e308 a", "\"1e+308\""),
        ("zincrby z 1e308 a", "\"inf\""),
        ("zincrby z -inf a", "!ERR resulting score is not a number (NaN)"),
        ("zadd z 1.5e-7 tiny 123.456 frac -0.0001 negfrac 100000000000000000000 big 9007199254740993 odd", "5"),
        ("zrange z 0 -1 withscores", "[\"negfrac\", \"-0.0001\", \"tiny\", \"1.4999999999999999e-07\", \"frac\", \"123.456\", \"odd\", \"9007199254740992\", \"big\", \"1e+20\", \"a\", \"inf\"]"),
        ("zscore z nope", "nil"),
        ("zmscore z a nope tiny", "[\"inf\", nil, \"1.4999999999999999e-07\"]"),
        ("zadd z 0 \"\"", "1"),
        ("zscore z \"\"", "\"0\""),
        ("zrank z \"\"", "1"),
        ("zrangebylex z - (a", "[]"),
        ("zrem z \"\"", "1"),
        ("zadd e 0 a 0 b 0 c", "3"),
        ("zrangebylex e [ [", "[]"),
        ("zrangebylex e ( (", "[]"),
        ("zrangebylex e ( [", "[]"),
        ("zrangebylex e [a (a", "[]"),
        ("zrangebylex e [b + limit 0 1", "[\"b\"]"),
        ("zrevrangebylex e + [b limit 0 1", "[\"c\"]"),
        ("zlexcount e [ +", "3"),
        ("zremrangebylex e ( [a", "1"),
        ("zrange e 0 -1", "[\"b\", \"c\"]"),
    ];

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn scores_parse_as_string2d_and_ranges_as_zslparserange() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"0x1p3"), Some(8.0));
        assert_eq!(parse_score(b"0x.8"), Some(0.5));
        assert_eq!(parse_score(b"1e5"), Some(100_000.0));
        assert_eq!(parse_score(b".5"), Some(0.5));
        assert_eq!(parse_score(b"5."), Some(5.0));
        assert_eq!(parse_score(b"0e-999"), Some(0.0));
        for bad in [
            "", " 1", "1 ", "nan", "-nan", "1e400", "-1e400", "1e-400", "1e", ".", "-", "0x", "infx", "1,5",
        ] {
            assert_eq!(parse_score(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(parse_range_end(b"(1"), Some((1.0, true)));
        assert_eq!(parse_range_end(b" 2"), Some((2.0, false)));
        assert_eq!(parse_range_end(b""), Some((0.0, false)));
        assert_eq!(parse_range_end(b"("), Some((0.0, true)));
        assert_eq!(parse_range_end(b"1e400"), Some((f64::INFINITY, false)));
        assert_eq!(parse_range_end(b" "), None);
        assert_eq!(parse_range_end(b"(nan"), None);
        assert_eq!(parse_cursor(b"+5"), Some(5));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b" 1"), None);
        assert_eq!(next_up(0.0), f64::from_bits(1));
        assert_eq!(next_up(-f64::from_bits(1)), 0.0);
        assert!(next_up(1.0) > 1.0 && next_up(-1.0) > -1.0);
        assert_eq!(next_up(f64::NEG_INFINITY), f64::MIN);
    }

    #[test]
    fn ordering_is_by_score_then_member_bytes() {
        let mut z = ZSet::new();
        for (m, s) in [
            ("b", 1.0),
            ("a", 1.0),
            ("c", f64::NEG_INFINITY),
            ("\u{ff}", 0.0),
            ("", 0.0),
            ("d", f64::INFINITY),
        ] {
            z.insert(b(m), s);
        }
        z.insert(b("neg0"), -0.0);
        assert_eq!(
            z.score(b"neg0").map(f64::to_bits),
            Some(0f64.to_bits()),
            "-0 is kept as 0"
        );
        let order: Vec<&[u8]> = z.iter().map(|(m, _)| m.as_ref()).collect();
        assert_eq!(order, [&b"c"[..], b"", b"neg0", "\u{ff}".as_bytes(), b"a", b"b", b"d"]);
        assert_eq!(z.rank(b"c", false), Some(0));
        assert_eq!(z.rank(b"d", true), Some(0));
        assert_eq!(z.rank(b"a", false), Some(4));
        assert_eq!(z.rank(b"x", false), None);
        assert_eq!(z.pop(true), Some((b("d"), f64::INFINITY)));
        assert_eq!(z.pop(false), Some((b("c"), f64::NEG_INFINITY)));
        z.check();
    }

    #[test]
    fn writes_account_bytes_touch_only_when_they_change_and_see_expiry() {
        let mut ks = Keyspace::new();
        assert_eq!(run(&mut ks, "zadd z 1 ab 2 c"), "2");
        assert_eq!(
            ks.used_bytes(),
            1 + super::super::keyspace::ENTRY_OVERHEAD_BYTES + 3 + 2 * (super::super::cost::ITEM_OVERHEAD_BYTES + 8)
        );
        ks.take_touched();
        for no_op in [
            "zadd z nx 5 ab",
            "zadd z xx 1 nosuch",
            "zadd z 1 ab",
            "zadd z gt 0 ab",
            "zrem z nosuch",
            "zremrangebyscore z 5 6",
            "zremrangebyrank z 5 6",
            "zremrangebylex z [x +",
            "zpopmin z 0",
            "zpopmin nosuch",
            "zrange z 0 -1",
            "zincrby nosuch x m",
        ] {
            run(&mut ks, no_op);
            assert!(ks.take_touched().is_empty(), "{no_op} touched its key");
        }
        run(&mut ks, "zincrby z 0 ab");
        assert!(ks.take_touched().is_empty(), "an unchanged score is no write");
        run(&mut ks, "zadd z 3 ab");
        assert_eq!(ks.take_touched().len(), 1);
        // An expired sorted set is gone for every command.
        ks.set_expire(b"z", Some(1_000));
        assert_eq!(show(&zcard(&mut ks, &words("zcard z"), 1_000)), "2");
        assert_eq!(show(&zcard(&mut ks, &words("zcard z"), 1_001)), "0");
        assert!(ks.is_empty());
        assert_eq!(show(&zadd(&mut ks, &words("zadd z 1 a"), 1_001)), "1");
        assert_eq!(ks.get(b"z").map(|e| e.expire_at_ms), Some(None));
        check_all(&ks);
    }

    #[test]
    fn store_commands_drop_the_ttl_and_replace_any_type() {
        let mut ks = Keyspace::new();
        run(&mut ks, "zadd src 1 a 2 b");
        ks.insert(b("dst"), Value::List(vec![b("x")].into()), Some(5_000));
        assert_eq!(run(&mut ks, "zunionstore dst 1 src"), "2");
        assert_eq!(ks.get(b"dst").map(|e| e.expire_at_ms), Some(None));
        assert_eq!(run(&mut ks, "type dst"), "+zset");
    }

    #[test]
    fn object_encoding_follows_redis_7_0_thresholds() {
        let mut z: ZSet = (0..128).map(|i| (Bytes::from(format!("m{i}")), f64::from(i))).collect();
        assert!(z.is_listpack_sized());
        z.insert(Bytes::from(vec![b'x'; 64]), 0.0);
        assert!(!z.is_listpack_sized(), "129 members");
        z.pop(false);
        assert!(z.is_listpack_sized());
        z.pop(false);
        z.insert(Bytes::from(vec![b'x'; 65]), 0.0);
        assert!(!z.is_listpack_sized(), "a member of 65 bytes");
        let mut ks = Keyspace::new();
        ks.insert(b("z"), Value::ZSet(z), None);
        let limits = super::super::db::EncodingLimits::default();
        let encoding = |ks: &Keyspace, key: &[u8], limits| super::super::admin::object(ks, "encoding", key, 0, limits);
        assert_eq!(encoding(&ks, b"z", limits), Reply::bulk("skiplist"));
        run(&mut ks, "zadd small 1 a");
        assert_eq!(encoding(&ks, b"small", limits), Reply::bulk("listpack"));
        let no_listpack = super::super::db::EncodingLimits {
            zset_entries: 0,
            ..limits
        };
        assert_eq!(encoding(&ks, b"small", no_listpack), Reply::bulk("skiplist"));
    }

    /// A big set (skiplist-sized): ranks, ranges and lex ranges from both ends.
    #[test]
    fn big_sets_rank_and_range_from_both_ends() {
        let mut ks = Keyspace::new();
        let mut args = vec![b("zadd"), b("z")];
        for i in 0..1000 {
            args.push(Bytes::from((i / 2).to_string()));
            args.push(Bytes::from(format!("m{i:04}")));
        }
        assert_eq!(zadd(&mut ks, &args, 0), Reply::Integer(1000));
        assert_eq!(run(&mut ks, "zrank z m0000"), "0");
        assert_eq!(run(&mut ks, "zrank z m0999"), "999");
        assert_eq!(run(&mut ks, "zrevrank z m0998"), "1");
        assert_eq!(run(&mut ks, "zrank z m0500"), "500");
        assert_eq!(run(&mut ks, "zrange z 998 -1"), "[\"m0998\", \"m0999\"]");
        assert_eq!(run(&mut ks, "zrange z 1 2 rev"), "[\"m0998\", \"m0997\"]");
        assert_eq!(run(&mut ks, "zrange z 500 501 rev"), "[\"m0499\", \"m0498\"]");
        assert_eq!(run(&mut ks, "zrange z 600 601"), "[\"m0600\", \"m0601\"]");
        assert_eq!(run(&mut ks, "zcount z (10 12"), "4");
        assert_eq!(
            run(&mut ks, "zrangebyscore z 499 +inf withscores"),
            "[\"m0998\", \"499\", \"m0999\", \"499\"]"
        );
        assert_eq!(run(&mut ks, "zremrangebyrank z 10 989"), "980");
        assert_eq!(run(&mut ks, "zcard z"), "20");
        // Lex on equal scores uses the index: the same answers as a walk.
        let mut args = vec![b("zadd"), b("lex")];
        for i in 0..500 {
            args.push(b("0"));
            args.push(Bytes::from(format!("k{i:03}")));
        }
        zadd(&mut ks, &args, 0);
        assert_eq!(run(&mut ks, "zlexcount lex [k100 (k200"), "100");
        assert_eq!(run(&mut ks, "zrangebylex lex (k497 +"), "[\"k498\", \"k499\"]");
        assert_eq!(
            run(&mut ks, "zrevrangebylex lex (k003 - limit 1 5"),
            "[\"k001\", \"k000\"]"
        );
        assert_eq!(run(&mut ks, "zremrangebylex lex [k010 +"), "490");
        assert_eq!(run(&mut ks, "zcard lex"), "10");
    }

    /// `ZSCAN` of a big set: every member once across the calls, members present throughout
    /// even when others are removed between calls, and `COUNT` honoured.
    #[test]
    fn zscan_walks_big_sets_whole() {
        let mut ks = Keyspace::new();
        let mut args = vec![b("zadd"), b("z")];
        for i in 0..300 {
            args.push(Bytes::from(i.to_string()));
            args.push(Bytes::from(format!("member:{i:03}")));
        }
        zadd(&mut ks, &args, 0);
        let mut cursor = b("0");
        let mut seen = BTreeSet::new();
        let mut calls = 0;
        loop {
            let reply = zscan(&mut ks, &[b("zscan"), b("z"), cursor.clone(), b("count"), b("7")], 0);
            let Reply::Array(Some(parts)) = reply else {
                panic!("{reply:?}")
            };
            let (Reply::Bulk(Some(next)), Reply::Array(Some(items))) = (&parts[0], &parts[1]) else {
                panic!("{parts:?}")
            };
            calls += 1;
            for pair in items.chunks(2) {
                let Reply::Bulk(Some(m)) = &pair[0] else { panic!() };
                assert!(seen.insert(m.clone()), "{m:?} twice");
                assert_eq!(
                    pair[1],
                    score_reply(ZSet::score(zset_of(&mut ks, b"z", 0).unwrap().unwrap(), m).unwrap())
                );
            }
            if calls == 5 {
                // Removing members already seen does not lose the others.
                zremrangebyscore(&mut ks, &[b("zremrangebyscore"), b("z"), b("0"), b("9")], 0);
            }
            if next.as_ref() == b"0" {
                break;
            }
            cursor = next.clone();
        }
        for i in 10..300 {
            assert!(
                seen.contains(format!("member:{i:03}").as_bytes()),
                "member:{i:03} not answered"
            );
        }
        assert!(calls > 30, "{calls} calls");
        let reply = zscan(
            &mut ks,
            &[
                b("zscan"),
                b("z"),
                b("0"),
                b("match"),
                b("*:29?"),
                b("count"),
                b("1000"),
            ],
            0,
        );
        assert_eq!(show(&reply).matches("member:29").count(), 10);
    }

    #[test]
    fn zrandmember_draws_members_of_the_set() {
        let mut ks = Keyspace::new();
        run(&mut ks, "zadd z 1 a 2 b 3 c 4 d 5 e");
        for now in 0..50 {
            let one = show(&zrandmember(&mut ks, &words("zrandmember z"), now));
            assert!(
                ["\"a\"", "\"b\"", "\"c\"", "\"d\"", "\"e\""].contains(&one.as_str()),
                "{one}"
            );
        }
        let Reply::Array(Some(distinct)) = zrandmember(&mut ks, &words("zrandmember z 3 withscores"), 7) else {
            panic!()
        };
        assert_eq!(distinct.len(), 6);
        let members: BTreeSet<_> = distinct.iter().step_by(2).map(show).collect();
        assert_eq!(members.len(), 3);
        let Reply::Array(Some(repeats)) = zrandmember(&mut ks, &words("zrandmember z -100"), 7) else {
            panic!()
        };
        assert_eq!(repeats.len(), 100);
        assert_eq!(
            repeats.iter().map(show).collect::<BTreeSet<_>>().len(),
            5,
            "100 draws of 5 see all"
        );
        let mut again = Keyspace::new();
        run(&mut again, "zadd z 1 a 2 b 3 c 4 d 5 e");
        for now in 0..50 {
            zrandmember(&mut again, &words("zrandmember z"), now);
        }
        zrandmember(&mut again, &words("zrandmember z 3 withscores"), 7);
        assert_eq!(
            zrandmember(&mut again, &words("zrandmember z -100"), 7),
            Reply::Array(Some(repeats)),
            "the same commands draw the same"
        );
    }

    #[test]
    fn commands_table_lists_every_handler() {
        for (name, arity, flags) in ZSET_COMMANDS {
            assert!(handler(name).is_some(), "{name}");
            assert!(*arity != 0 && !flags.is_empty());
            assert_eq!(flags.contains("write"), !flags.contains("readonly"), "{name}");
        }
        assert_eq!(ZSET_COMMANDS.len(), 35);
    }

    /// RESP3 as redis-server 7.0.15 wrote it after `HELLO 3` for the same commands (recorded
    /// raw); what [`encode_resp3`] leaves to the caller is written as RESP2 (no null occurs).
    #[test]
    fn resp3_forms_are_redis_7_0_15s() {
        let cases: &[(&str, &[u8])] = &[
        ("zadd z 1.5 a 2 b -inf c 3 d", b":4\r\n"),
        ("zadd z incr 1 a", b",2.5\r\n"),
        ("zadd z xx incr 1 nosuch", b"_\r\n"),
        ("zadd z 1 incr", b":1\r\n"),
        ("zscore z a", b",2.5\r\n"),
        ("zscore z nosuch", b"_\r\n"),
        ("zincrby z 1 b", b",3\r\n"),
        ("zmscore z a nosuch c", b"*3\r\n,2.5\r\n_\r\n,-inf\r\n"),
        ("zrange z 0 -1 withscores", b"*5\r\n*2\r\n$1\r\nc\r\n,-inf\r\n*2\r\n$4\r\nincr\r\n,1\r\n*2\r\n$1\r\na\r\n,2.5\r\n*2\r\n$1\r\nb\r\n,3\r\n*2\r\n$1\r\nd\r\n,3\r\n"),
        ("zrange z 0 -1", b"*5\r\n$1\r\nc\r\n$4\r\nincr\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nd\r\n"),
        ("zrevrange z 0 1 withscores", b"*2\r\n*2\r\n$1\r\nd\r\n,3\r\n*2\r\n$1\r\nb\r\n,3\r\n"),
        ("zrangebyscore z -inf +inf withscores", b"*5\r\n*2\r\n$1\r\nc\r\n,-inf\r\n*2\r\n$4\r\nincr\r\n,1\r\n*2\r\n$1\r\na\r\n,2.5\r\n*2\r\n$1\r\nb\r\n,3\r\n*2\r\n$1\r\nd\r\n,3\r\n"),
        ("zrandmember z 10 withscores", b"*5\r\n*2\r\n$1\r\nd\r\n,3\r\n*2\r\n$1\r\nb\r\n,3\r\n*2\r\n$1\r\na\r\n,2.5\r\n*2\r\n$4\r\nincr\r\n,1\r\n*2\r\n$1\r\nc\r\n,-inf\r\n"),
        ("zunion 1 z withscores", b"*5\r\n*2\r\n$1\r\nc\r\n,-inf\r\n*2\r\n$4\r\nincr\r\n,1\r\n*2\r\n$1\r\na\r\n,2.5\r\n*2\r\n$1\r\nb\r\n,3\r\n*2\r\n$1\r\nd\r\n,3\r\n"),
        ("zpopmin z", b"*2\r\n$1\r\nc\r\n,-inf\r\n"),
        ("zpopmax z 1", b"*1\r\n*2\r\n$1\r\nd\r\n,3\r\n"),
        ("zpopmin nosuch", b"*0\r\n"),
        ("zpopmin z 0", b"*0\r\n"),
        ("zmpop 1 z min", b"*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$4\r\nincr\r\n,1\r\n"),
        ("zmpop 1 nosuch min", b"_\r\n"),
        ("zadd z 1 x 2 y", b":2\r\n"),
        ("bzpopmin z 0", b"*3\r\n$1\r\nz\r\n$1\r\nx\r\n,1\r\n"),
        ("zmpop 1 z max count 5", b"*2\r\n$1\r\nz\r\n*3\r\n*2\r\n$1\r\nb\r\n,3\r\n*2\r\n$1\r\na\r\n,2.5\r\n*2\r\n$1\r\ny\r\n,2\r\n"),
        ("zcard z", b":0\r\n"),
        ("zscan z 0", b"*2\r\n$1\r\n0\r\n*0\r\n"),

        ];
        let mut ks = Keyspace::new();
        for (line, want) in cases {
            let args = words(line);
            let reply = exec(&mut ks, &args, 0);
            let mut out = bytes::BytesMut::new();
            if !encode_resp3(&args, &reply, &mut out) {
                super::super::codec::encode_reply(&reply, &mut out);
            }
            assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(want), "{line}");
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Add(u8, i8),
        Incr(u8, i8),
        Rem(u8),
        Pop(bool),
        RemRank(i8, i8),
        RemScore(i8, i8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..24, -5i8..5).prop_map(|(m, s)| Op::Add(m, s)),
            (0u8..24, -3i8..3).prop_map(|(m, s)| Op::Incr(m, s)),
            (0u8..24).prop_map(Op::Rem),
            any::<bool>().prop_map(Op::Pop),
            (-30i8..30, -30i8..30).prop_map(|(a, b)| Op::RemRank(a, b)),
            (-6i8..6, -6i8..6).prop_map(|(a, b)| Op::RemScore(a, b)),
        ]
    }

    proptest! {
        /// Whatever the writes, the two indexes agree, the byte count is right, ranks are
        /// positions in the order, and the commands answer what a sorted `Vec` model says.
        #[test]
        fn the_two_indexes_always_agree(ops in proptest::collection::vec(op(), 1..80)) {
            let mut ks = Keyspace::new();
            let mut model: BTreeMap<Bytes, f64> = BTreeMap::new();
            let member = |m: u8| Bytes::from(format!("m{m}"));
            for op in ops {
                let args: Vec<String> = match &op {
                    Op::Add(m, s) => vec!["zadd".into(), "z".into(), s.to_string(), format!("m{m}")],
                    Op::Incr(m, s) => vec!["zincrby".into(), "z".into(), (f64::from(*s) / 2.0).to_string(), format!("m{m}")],
                    Op::Rem(m) => vec!["zrem".into(), "z".into(), format!("m{m}")],
                    Op::Pop(max) => vec![if *max { "zpopmax" } else { "zpopmin" }.into(), "z".into()],
                    Op::RemRank(a, b) => vec!["zremrangebyrank".into(), "z".into(), a.to_string(), b.to_string()],
                    Op::RemScore(a, b) => vec!["zremrangebyscore".into(), "z".into(), a.to_string(), b.to_string()],
                };
                let args: Vec<Bytes> = args.into_iter().map(Bytes::from).collect();
                exec(&mut ks, &args, 0);
                // The model.
                let mut sorted: Vec<(f64, Bytes)> = model.iter().map(|(m, s)| (*s, m.clone())).collect();
                sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
                match op {
                    Op::Add(m, s) => { model.insert(member(m), f64::from(s)); }
                    Op::Incr(m, s) => { *model.entry(member(m)).or_insert(0.0) += f64::from(s) / 2.0; }
                    Op::Rem(m) => { model.remove(&member(m)); }
                    Op::Pop(max) => {
                        let victim = if max { sorted.last() } else { sorted.first() };
                        if let Some((_, m)) = victim { model.remove(m); }
                    }
                    Op::RemRank(a, b) => {
                        if let Some((s, e)) = rank_span(sorted.len(), i64::from(a), i64::from(b)) {
                            for (_, m) in &sorted[s..=e] { model.remove(m); }
                        }
                    }
                    Op::RemScore(a, b) => {
                        for (s, m) in &sorted {
                            if *s >= f64::from(a) && *s <= f64::from(b) { model.remove(m); }
                        }
                    }
                }
                check_all(&ks);
                let got: BTreeMap<Bytes, f64> = match ks.get(b"z") {
                    None => BTreeMap::new(),
                    Some(e) => match &e.value {
                        Value::ZSet(z) => {
                            for (i, (m, _)) in z.iter().enumerate() {
                                prop_assert_eq!(z.rank(m, false), Some(i));
                                prop_assert_eq!(z.rank(m, true), Some(z.len() - 1 - i));
                            }
                            z.iter_by_member().map(|(m, s)| (m.clone(), s)).collect()
                        }
                        other => panic!("{other:?}"),
                    },
                };
                prop_assert_eq!(&got, &model);
            }
        }
    }
}
