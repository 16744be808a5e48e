//! Commands on keys of any type (Redis's `db.c` and `expire.c`): `DEL`/`UNLINK`, `EXISTS`,
//! `TOUCH`, `TYPE`, the expiry commands (`EXPIRE`... `PEXPIREAT`, `TTL`... `PEXPIRETIME`,
//! `PERSIST`), `RENAME`/`RENAMENX`, `COPY`, `MOVE`, `RANDOMKEY`, `KEYS`, `SCAN`, `DBSIZE`, and the
//! database commands (`SELECT` from a script, `SWAPDB`, `FLUSHDB`, `FLUSHALL`).
//!
//! Texts and order of checks follow Redis 7.0's documentation and observed replies. Left out:
//! `DUMP`/`RESTORE` (no RDB serialisation), `OBJECT FREQ` under an LFU policy (no eviction),
//! `WAIT`'s replication (the server answers it), `MIGRATE`, `SORT`.

use super::db::Db;
use super::keyspace::{Keyspace, DATABASES};
use super::reply::Reply;
use super::syntax::{eq_ic, invalid_expire, parse_ll, sanitize, NOT_INTEGER, SYNTAX};
use bytes::Bytes;

/// `DEL key...` (and `UNLINK`, which Redis frees in the background: nothing to free later here).
pub(crate) fn del(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let mut n = 0;
    for key in &args[1..] {
        if ks.lookup(key, now).is_some() && ks.remove(key).is_some() {
            n += 1;
        }
    }
    Reply::Integer(n)
}

/// `EXISTS key...` (a key named twice counts twice) and `TOUCH key...`.
pub(crate) fn exists(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    Reply::Integer(args[1..].iter().filter(|k| ks.lookup(k, now).is_some()).count() as i64)
}

/// `TYPE key`.
pub(crate) fn type_of(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    Reply::Status(
        ks.lookup(&args[1], now)
            .map_or("none", |e| e.value.type_name())
            .to_string(),
    )
}

/// `EXPIRE`/`PEXPIRE`/`EXPIREAT`/`PEXPIREAT key t [NX|XX|GT|LT]` (`expireGenericCommand`).
fn expire_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, basetime: i64, seconds: bool, name: &str) -> Reply {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &args[3..] {
        if eq_ic(opt, "nx") {
            nx = true;
        } else if eq_ic(opt, "xx") {
            xx = true;
        } else if eq_ic(opt, "gt") {
            gt = true;
        } else if eq_ic(opt, "lt") {
            lt = true;
        } else {
            return Reply::Error(sanitize(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::error("ERR GT and LT options at the same time are not compatible");
    }
    let Some(mut when) = parse_ll(&args[2]) else {
        return Reply::error(NOT_INTEGER);
    };
    if seconds {
        match when.checked_mul(1000) {
            Some(ms) => when = ms,
            None => return invalid_expire(name),
        }
    }
    let Some(when) = when.checked_add(basetime) else {
        return invalid_expire(name);
    };
    let key = &args[1];
    let Some(current) = ks.lookup(key, now).map(|e| e.expire_at_ms) else {
        return Reply::Integer(0);
    };
    if (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c))
    {
        return Reply::Integer(0);
    }
    if when <= now {
        ks.remove(key);
    } else {
        ks.set_expire(key, Some(when));
    }
    Reply::Integer(1)
}

pub(crate) fn expire(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    expire_generic(ks, args, now, now, true, "expire")
}

pub(crate) fn pexpire(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    expire_generic(ks, args, now, now, false, "pexpire")
}

pub(crate) fn expireat(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    expire_generic(ks, args, now, 0, true, "expireat")
}

pub(crate) fn pexpireat(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    expire_generic(ks, args, now, 0, false, "pexpireat")
}

/// `ttlGenericCommand`: -2 without the key, -1 without an expiry, else the time left (`TTL`,
/// `PTTL`) or the absolute expiry (`EXPIRETIME`, `PEXPIRETIME`), seconds rounded.
fn ttl_generic(ks: &mut Keyspace, key: &[u8], now: i64, remaining: bool, ms: bool) -> Reply {
    match ks.lookup(key, now) {
        None => Reply::Integer(-2),
        Some(e) => match e.expire_at_ms {
            None => Reply::Integer(-1),
            Some(t) => {
                let v = if remaining { t.saturating_sub(now) } else { t }.max(0);
                Reply::Integer(if ms { v } else { (v + 500) / 1000 })
            }
        },
    }
}

pub(crate) fn ttl(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    ttl_generic(ks, &args[1], now, true, false)
}

pub(crate) fn pttl(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    ttl_generic(ks, &args[1], now, true, true)
}

pub(crate) fn expiretime(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    ttl_generic(ks, &args[1], now, false, false)
}

pub(crate) fn pexpiretime(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    ttl_generic(ks, &args[1], now, false, true)
}

/// `PERSIST key`: 1 when a TTL was removed.
pub(crate) fn persist(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match ks.lookup(&args[1], now).map(|e| e.expire_at_ms) {
        Some(Some(_)) => {
            ks.set_expire(&args[1], None);
            Reply::Integer(1)
        }
        _ => Reply::Integer(0),
    }
}

/// `RENAME`/`RENAMENX`: the value and its TTL move to the new name.
fn rename_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, nx: bool) -> Reply {
    let (src, dst) = (&args[1], &args[2]);
    if ks.lookup(src, now).is_none() {
        return Reply::error("ERR no such key");
    }
    if src == dst {
        return if nx { Reply::Integer(0) } else { Reply::ok() };
    }
    if nx && ks.lookup(dst, now).is_some() {
        return Reply::Integer(0);
    }
    let Some(entry) = ks.remove(src) else {
        return Reply::error("ERR no such key");
    };
    ks.insert(dst.clone(), entry.value, entry.expire_at_ms);
    if nx {
        Reply::Integer(1)
    } else {
        Reply::ok()
    }
}

pub(crate) fn rename(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    rename_generic(ks, args, now, false)
}

pub(crate) fn renamenx(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    rename_generic(ks, args, now, true)
}

/// A database index argument (`SELECT`, `MOVE`, `COPY ... DB`).
pub(crate) fn db_index(raw: &[u8]) -> Result<usize, Reply> {
    match parse_ll(raw).map(i32::try_from) {
        None => Err(Reply::error(NOT_INTEGER)),
        Some(Err(_)) => Err(Reply::error(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        )),
        Some(Ok(i)) => usize::try_from(i)
            .ok()
            .filter(|i| *i < DATABASES)
            .ok_or_else(|| Reply::error("ERR DB index is out of range")),
    }
}

/// `COPY source destination [DB index] [REPLACE]`: 1 when copied.
pub(crate) fn copy(db: &mut Db, args: &[Bytes], now: i64) -> Reply {
    let mut target = db.selected;
    let mut replace = false;
    let mut j = 3;
    while j < args.len() {
        if eq_ic(&args[j], "replace") {
            replace = true;
        } else if eq_ic(&args[j], "db") && j + 1 < args.len() {
            match db_index(&args[j + 1]) {
                Ok(i) => target = i,
                Err(e) => return e,
            }
            j += 1;
        } else {
            return Reply::error(SYNTAX);
        }
        j += 1;
    }
    let (src, dst) = (&args[1], &args[2]);
    if target == db.selected && src == dst {
        return Reply::error("ERR source and destination objects are the same");
    }
    let selected = db.selected;
    let Some(entry) = db.ks.db_mut(selected).lookup(src, now).cloned() else {
        return Reply::Integer(0);
    };
    let to = db.ks.db_mut(target);
    if to.lookup(dst, now).is_some() {
        if !replace {
            return Reply::Integer(0);
        }
        to.remove(dst);
    }
    to.insert(dst.clone(), entry.value, entry.expire_at_ms);
    Reply::Integer(1)
}

/// `MOVE key db`: 1 when moved (the key must be absent in the target).
pub(crate) fn move_key(db: &mut Db, args: &[Bytes], now: i64) -> Reply {
    let target = match db_index(&args[2]) {
        Ok(i) => i,
        Err(e) => return e,
    };
    if target == db.selected {
        return Reply::error("ERR source and destination objects are the same");
    }
    let selected = db.selected;
    if db.ks.db_mut(selected).lookup(&args[1], now).is_none() {
        return Reply::Integer(0);
    }
    if db.ks.db_mut(target).lookup(&args[1], now).is_some() {
        return Reply::Integer(0);
    }
    let Some(entry) = db.ks.db_mut(selected).remove(&args[1]) else {
        return Reply::Integer(0);
    };
    db.ks
        .db_mut(target)
        .insert(args[1].clone(), entry.value, entry.expire_at_ms);
    Reply::Integer(1)
}

/// `RANDOMKEY`: a live key (deterministic here: the one at a position derived from the clock and
/// the key count), or nil.
pub(crate) fn randomkey(ks: &mut Keyspace, _args: &[Bytes], now: i64) -> Reply {
    let live: Vec<Bytes> = ks
        .iter()
        .filter(|(_, e)| !e.is_expired_at(now))
        .map(|(k, _)| k.clone())
        .collect();
    if live.is_empty() {
        return Reply::nil();
    }
    let i = (now.unsigned_abs() as usize).wrapping_mul(2_654_435_761) % live.len();
    Reply::Bulk(Some(live[i].clone()))
}

pub(crate) fn keys(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    super::admin::keys(ks, &args[1], now)
}

pub(crate) fn scan(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    super::admin::scan(ks, args, now)
}

pub(crate) fn dbsize(ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    Reply::Integer(ks.len() as i64)
}

pub(crate) fn time(_ks: &mut Keyspace, _args: &[Bytes], now: i64) -> Reply {
    super::admin::time(now)
}

fn object(db: &mut Db, args: &[Bytes], now: i64, sub: &str) -> Reply {
    let (selected, limits) = (db.selected, db.limits);
    super::admin::object(db.ks.db_mut(selected), sub, &args[2], now, limits)
}

pub(crate) fn object_encoding(db: &mut Db, args: &[Bytes], now: i64) -> Reply {
    object(db, args, now, "encoding")
}

pub(crate) fn object_refcount(db: &mut Db, args: &[Bytes], now: i64) -> Reply {
    object(db, args, now, "refcount")
}

pub(crate) fn object_idletime(db: &mut Db, args: &[Bytes], now: i64) -> Reply {
    object(db, args, now, "idletime")
}

pub(crate) fn object_freq(db: &mut Db, args: &[Bytes], now: i64) -> Reply {
    object(db, args, now, "freq")
}

/// `SELECT` from a script: the script's database changes, not the connection's (Redis 7).
pub(crate) fn select(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    match db_index(&args[1]) {
        Ok(index) => {
            db.selected = index;
            Reply::ok()
        }
        Err(e) => e,
    }
}

/// `SWAPDB a b`.
pub(crate) fn swapdb(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    let parse = |raw: &[u8]| parse_ll(raw).and_then(|i| i32::try_from(i).ok());
    let (Some(a), Some(b)) = (parse(&args[1]), parse(&args[2])) else {
        return Reply::error(if parse(&args[1]).is_none() {
            "ERR invalid first DB index"
        } else {
            "ERR invalid second DB index"
        });
    };
    let index = |i: i32| usize::try_from(i).ok().filter(|i| *i < DATABASES);
    match (index(a), index(b)) {
        (Some(a), Some(b)) => {
            db.ks.swap_dbs(a, b);
            Reply::ok()
        }
        _ => Reply::error("ERR DB index is out of range"),
    }
}

fn flush_mode_ok(args: &[Bytes]) -> bool {
    args.len() == 1 || (args.len() == 2 && (eq_ic(&args[1], "sync") || eq_ic(&args[1], "async")))
}

pub(crate) fn flushdb(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    if !flush_mode_ok(args) {
        return Reply::error(SYNTAX);
    }
    let selected = db.selected;
    db.ks.db_mut(selected).clear();
    Reply::ok()
}

pub(crate) fn flushall(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    if !flush_mode_ok(args) {
        return Reply::error(SYNTAX);
    }
    db.ks.clear_all();
    Reply::ok()
}

/// `CLIENT UNBLOCK` run by the engine (inside `EXEC`): the server loop answers it otherwise, and
/// inside a transaction no client is blocked, so 0 after the same checks.
pub(crate) fn client_unblock_queued(_ks: &mut Keyspace, args: &[Bytes], _now: i64) -> Reply {
    if args.len() > 4 {
        return Reply::error("ERR syntax error");
    }
    if parse_ll(&args[2]).is_none() {
        return Reply::error(NOT_INTEGER);
    }
    match args.get(3) {
        Some(a) if !a.eq_ignore_ascii_case(b"timeout") && !a.eq_ignore_ascii_case(b"error") => {
            Reply::error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        }
        _ => Reply::Integer(0),
    }
}
