//! `SORT` and `SORT_RO` (Redis's `sort.c`), written from the documentation
//! (<https://redis.io/commands/sort/>, <https://redis.io/commands/sort_ro/>) and replies observed
//! from redis-server 7.0:
//!
//! `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
//! [STORE destination]` sorts the elements of a list, set or sorted set, numerically (each
//! element, or the value `BY` names, read as a double: `ERR One or more scores can't be
//! converted into double` otherwise; equal scores by the elements' bytes) or with `ALPHA` by
//! bytes (Redis's `strcoll` under the C locale). The options are read first (`ERR syntax error`,
//! `LIMIT`'s integers), then the key (`WRONGTYPE`); the last `BY`, `LIMIT` and `STORE` win.
//!
//! * A pattern substitutes the element for its first `*` and names a string key, or a hash field
//!   after `->` (`weight_*->w`); a key that is missing or of another type reads as nothing (a
//!   `BY` score of 0 or a missing `ALPHA` value sorting first; a nil `GET`). `GET #` is the
//!   element itself; a `GET` pattern without `*` reads nothing.
//! * A `BY` pattern without `*` (`BY nosort`, any constant) skips sorting: a list keeps its
//!   order and a sorted set its score order, both reversed by `DESC`. A set is answered in its
//!   members' byte order, which is also what Redis forces for a set under `STORE` or in a script
//!   (so a script's or a replica's reply does not depend on the set's hash order).
//! * `STORE` writes the reply as a list (nil `GET`s as empty strings) and answers its length;
//!   an empty result deletes the destination. Either way the key counts as written (a `WATCH`
//!   on it fails, a client blocked on it wakes).
//!
//! Sorting is a stable `O(n log n)` sort over the loaded elements (with a `BY` pattern, one key
//! look-up per element), as Redis's; the elements are copied once.

use super::keyspace::{Keyspace, Value};
use super::reply::Reply;
use super::syntax::{eq_ic, parse_ll, NOT_INTEGER, SYNTAX, WRONGTYPE};
use super::zset::strtod;
use bytes::{Bytes, BytesMut};
use std::cmp::Ordering;

/// `ERR One or more scores can't be converted into double`.
const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// `SORT key [options...]` (may `STORE`).
pub(crate) fn sort(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    sort_generic(ks, args, now, true)
}

/// `SORT_RO key [options...]`: `SORT` without `STORE`.
pub(crate) fn sort_ro(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    sort_generic(ks, args, now, false)
}

/// The options of one `SORT`.
struct Options<'a> {
    by: Option<&'a [u8]>,
    dont_sort: bool,
    limit: Option<(i64, i64)>,
    gets: Vec<&'a [u8]>,
    desc: bool,
    alpha: bool,
    store: Option<&'a Bytes>,
}

fn parse_options(args: &[Bytes], may_store: bool) -> Result<Options<'_>, Reply> {
    let mut o = Options {
        by: None,
        dont_sort: false,
        limit: None,
        gets: Vec::new(),
        desc: false,
        alpha: false,
        store: None,
    };
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if eq_ic(a, "asc") {
            o.desc = false;
        } else if eq_ic(a, "desc") {
            o.desc = true;
        } else if eq_ic(a, "alpha") {
            o.alpha = true;
        } else if eq_ic(a, "limit") && left >= 2 {
            let start = parse_ll(&args[j + 1]).ok_or_else(|| Reply::error(NOT_INTEGER))?;
            let count = parse_ll(&args[j + 2]).ok_or_else(|| Reply::error(NOT_INTEGER))?;
            o.limit = Some((start, count));
            j += 2;
        } else if may_store && eq_ic(a, "store") && left >= 1 {
            o.store = Some(&args[j + 1]);
            j += 1;
        } else if eq_ic(a, "by") && left >= 1 {
            let pattern = &args[j + 1][..];
            // A constant pattern means "do not sort", and stays so whatever `BY` follows.
            if !pattern.contains(&b'*') {
                o.dont_sort = true;
            }
            o.by = Some(pattern);
            j += 1;
        } else if eq_ic(a, "get") && left >= 1 {
            o.gets.push(&args[j + 1][..]);
            j += 1;
        } else {
            return Err(Reply::error(SYNTAX));
        }
        j += 1;
    }
    Ok(o)
}

/// What `pattern` names for `element`: the element itself for `#`; otherwise the string key the
/// pattern makes by putting the element in place of its first `*`, or the hash field after `->`.
/// `None` when there is no `*`, no such key, or a key of another type.
fn lookup_by_pattern(ks: &mut Keyspace, pattern: &[u8], element: &Bytes, now: i64) -> Option<Bytes> {
    if pattern == b"#" {
        return Some(element.clone());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let after = &pattern[star + 1..];
    // `->` after the `*` with something after it names a field.
    let (postfix, field) = match after.windows(2).position(|w| w == b"->") {
        Some(at) if at + 2 < after.len() => (&after[..at], Some(&after[at + 2..])),
        _ => (after, None),
    };
    let mut key = BytesMut::with_capacity(star + element.len() + postfix.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    let entry = ks.lookup(&key, now)?;
    match (&entry.value, field) {
        (Value::String(s), None) => Some(s.clone()),
        (Value::Hash(fields), Some(f)) => fields.iter().find(|(k, _)| k[..] == *f).map(|(_, v)| v.clone()),
        _ => None,
    }
}

/// A sort weight read as Redis reads it (`strtod` over the whole value: leading spaces allowed,
/// an empty value is 0, no trailing bytes, no overflow, not NaN).
fn sort_score(raw: &[u8]) -> Option<f64> {
    let skip = raw
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .count();
    if raw.is_empty() {
        return Some(0.0);
    }
    let (v, used, erange) = strtod(&raw[skip..]);
    (used > 0 && skip + used == raw.len() && !erange && !v.is_nan()).then_some(v)
}

/// The key of one element in the sort.
enum Weight {
    Score(f64),
    Text(Option<Bytes>),
}

fn sort_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, may_store: bool) -> Reply {
    let o = match parse_options(args, may_store) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let (limit_start, limit_count) = o.limit.unwrap_or((0, -1));
    // The range of the answer, as Redis clamps it.
    let clamp = |len: usize| -> (i64, i64) {
        let len = len as i64;
        let mut start = limit_start.max(0);
        let mut end = if limit_count < 0 {
            len - 1
        } else {
            start.saturating_add(limit_count) - 1
        };
        if start >= len {
            start = len - 1;
            end = len - 2;
        }
        if end >= len {
            end = len - 1;
        }
        (start, end)
    };
    // Load the elements; a sorted set or list not sorted only needs its range.
    let mut elements: Vec<Bytes> = match ks.lookup(&args[1], now).map(|e| &e.value) {
        None => Vec::new(),
        Some(Value::List(items)) => {
            if o.dont_sort && o.desc {
                items.iter().rev().cloned().collect()
            } else {
                items.iter().cloned().collect()
            }
        }
        Some(Value::Set(members)) => members.iter().cloned().collect(),
        Some(Value::ZSet(z)) if o.dont_sort => {
            let (start, end) = clamp(z.len());
            if start > end {
                Vec::new()
            } else {
                let picked = z.by_rank(start as usize, end as usize, o.desc);
                let out = picked.into_iter().map(|(m, _)| m).collect();
                return finish(ks, now, &o, out);
            }
        }
        Some(Value::ZSet(z)) => z.iter().map(|(m, _)| m.clone()).collect(),
        Some(_) => return Reply::error(WRONGTYPE),
    };
    if !o.dont_sort {
        let mut weighted: Vec<(Weight, Bytes)> = Vec::with_capacity(elements.len());
        for element in elements.drain(..) {
            let looked = match o.by {
                Some(pattern) => lookup_by_pattern(ks, pattern, &element, now),
                None => None,
            };
            let weight = if o.alpha {
                Weight::Text(if o.by.is_some() { looked } else { None })
            } else {
                let raw: &[u8] = match (&o.by, &looked) {
                    (Some(_), Some(v)) => v,
                    (Some(_), None) => b"0",
                    (None, _) => &element,
                };
                match sort_score(raw) {
                    Some(v) => Weight::Score(v),
                    None => return Reply::error(NOT_DOUBLE),
                }
            };
            weighted.push((weight, element));
        }
        let by_pattern = o.by.is_some();
        weighted.sort_by(|(wa, a), (wb, b)| {
            let cmp = match (wa, wb) {
                (Weight::Score(x), Weight::Score(y)) => {
                    x.partial_cmp(y).unwrap_or(Ordering::Equal).then_with(|| a.cmp(b))
                }
                // A missing `BY` value sorts first; equal values keep their order.
                (Weight::Text(x), Weight::Text(y)) if by_pattern => x.cmp(y),
                _ => a.cmp(b),
            };
            if o.desc {
                cmp.reverse()
            } else {
                cmp
            }
        });
        elements = weighted.into_iter().map(|(_, e)| e).collect();
    }
    let (start, end) = clamp(elements.len());
    if start > end {
        elements.clear();
    } else {
        elements.truncate(end as usize + 1);
        elements.drain(..start as usize);
    }
    finish(ks, now, &o, elements)
}

/// The answer over the elements picked, in order: with `GET`s, what each pattern names; stored
/// as a list under `STORE`.
fn finish(ks: &mut Keyspace, now: i64, o: &Options<'_>, elements: Vec<Bytes>) -> Reply {
    let output: Vec<Option<Bytes>> = if o.gets.is_empty() {
        elements.into_iter().map(Some).collect()
    } else {
        let mut out = Vec::with_capacity(elements.len().saturating_mul(o.gets.len()));
        for element in &elements {
            for pattern in &o.gets {
                out.push(lookup_by_pattern(ks, pattern, element, now));
            }
        }
        out
    };
    match o.store {
        None => Reply::Array(Some(output.into_iter().map(Reply::Bulk).collect())),
        Some(dst) => {
            let n = output.len() as i64;
            if output.is_empty() {
                if ks.lookup(dst, now).is_some() {
                    ks.remove(dst);
                }
            } else {
                let list = output.into_iter().map(Option::unwrap_or_default).collect();
                ks.insert(dst.clone(), Value::List(list), None);
            }
            Reply::Integer(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{ClientSession, EngineConfig, RedisEngine, Reply};
    use bytes::Bytes;

    fn args(a: &[&str]) -> Vec<Bytes> {
        a.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    fn run(e: &mut RedisEngine, c: &mut ClientSession, a: &[&str]) -> Reply {
        e.execute_as(c, &args(a), 0)
    }

    fn strings(r: &Reply) -> Vec<String> {
        match r {
            Reply::Array(Some(items)) => items
                .iter()
                .map(|i| match i {
                    Reply::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
                    Reply::Bulk(None) => "(nil)".to_string(),
                    other => format!("{other:?}"),
                })
                .collect(),
            other => vec![format!("{other:?}")],
        }
    }

    fn setup() -> (RedisEngine, ClientSession) {
        let mut e = RedisEngine::new(EngineConfig::default());
        let mut c = ClientSession::new(1);
        for cmd in [
            &["RPUSH", "l", "1", "3", "2"][..],
            &["SADD", "s", "c", "a", "b"],
            &["ZADD", "z", "3", "a", "1", "b", "2", "c"],
            &["HSET", "h1", "f", "10"],
            &["HSET", "h2", "f", "5"],
            &["HSET", "h3", "f", "7"],
            &["SET", "w_1", "abc"],
            &["SET", "n_1", "30"],
            &["SET", "n_2", "10"],
            &["SET", "n_3", "20"],
        ] {
            run(&mut e, &mut c, cmd);
        }
        (e, c)
    }

    #[test]
    fn sorts_numerically_alphabetically_and_by_patterns() {
        let (mut e, mut c) = setup();
        let mut check = |a: &[&str], want: &[&str]| {
            assert_eq!(strings(&run(&mut e, &mut c, a)), want, "{a:?}");
        };
        check(&["SORT", "l"], &["1", "2", "3"]);
        check(&["SORT", "l", "DESC"], &["3", "2", "1"]);
        check(&["SORT", "l", "asc", "desc"], &["3", "2", "1"]);
        check(&["SORT", "s", "ALPHA"], &["a", "b", "c"]);
        check(&["SORT", "z", "ALPHA", "DESC", "LIMIT", "0", "1"], &["c"]);
        check(&["SORT", "l", "LIMIT", "1", "-1"], &["2", "3"]);
        check(&["SORT", "l", "LIMIT", "-5", "2"], &["1", "2"]);
        check(&["SORT", "l", "LIMIT", "5", "1"], &[]);
        check(&["SORT", "l", "LIMIT", "0", "0"], &[]);
        check(&["SORT", "l", "BY", "n_*"], &["2", "3", "1"]);
        check(&["SORT", "l", "BY", "h*->f"], &["2", "3", "1"]);
        check(&["SORT", "l", "BY", "h*->f", "ALPHA", "DESC"], &["3", "2", "1"]);
        // A missing `ALPHA` weight sorts first.
        check(&["SORT", "l", "BY", "w_*", "ALPHA"], &["3", "2", "1"]);
        check(
            &[
                "SORT", "l", "BY", "h*->f", "GET", "h*->f", "GET", "#", "GET", "nokey*", "GET", "x",
            ],
            &[
                "5", "2", "(nil)", "(nil)", "7", "3", "(nil)", "(nil)", "10", "1", "(nil)", "(nil)",
            ],
        );
        check(&["SORT", "missing"], &[]);
        check(&["SORT_RO", "l", "BY", "n_*", "DESC"], &["1", "3", "2"]);
    }

    #[test]
    fn by_a_constant_keeps_the_stored_order() {
        let (mut e, mut c) = setup();
        let mut check = |a: &[&str], want: &[&str]| {
            assert_eq!(strings(&run(&mut e, &mut c, a)), want, "{a:?}");
        };
        check(&["SORT", "l", "BY", "nosort"], &["1", "3", "2"]);
        check(&["SORT", "l", "BY", "nosort", "DESC"], &["2", "3", "1"]);
        check(&["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "0", "2"], &["2", "3"]);
        check(&["SORT", "l", "BY", "nosort", "BY", "n_*"], &["1", "3", "2"]);
        check(&["SORT", "z", "BY", "nosort"], &["b", "c", "a"]);
        check(&["SORT", "z", "BY", "nosort", "LIMIT", "1", "1"], &["c"]);
        check(&["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "1"], &["c"]);
        check(&["SORT", "s", "BY", "nosort", "DESC"], &["a", "b", "c"]);
        check(
            &["SORT", "s", "BY", "_", "GET", "#", "GET", "_:*"],
            &["a", "(nil)", "b", "(nil)", "c", "(nil)"],
        );
    }

    #[test]
    fn errors_follow_redis() {
        let (mut e, mut c) = setup();
        run(&mut e, &mut c, &["SET", "str", "x"]);
        run(&mut e, &mut c, &["RPUSH", "bad", "1", "x"]);
        let err = |t: &str| Reply::Error(t.to_string());
        assert_eq!(run(&mut e, &mut c, &["SORT", "str"]), err(super::WRONGTYPE));
        assert_eq!(run(&mut e, &mut c, &["SORT", "str", "foo"]), err(super::SYNTAX));
        assert_eq!(
            run(&mut e, &mut c, &["SORT", "str", "LIMIT", "a", "1"]),
            err(super::NOT_INTEGER)
        );
        assert_eq!(run(&mut e, &mut c, &["SORT", "l", "LIMIT", "1"]), err(super::SYNTAX));
        assert_eq!(run(&mut e, &mut c, &["SORT_RO", "l", "STORE", "x"]), err(super::SYNTAX));
        assert_eq!(run(&mut e, &mut c, &["SORT", "bad"]), err(super::NOT_DOUBLE));
        assert_eq!(run(&mut e, &mut c, &["SORT", "l", "BY", "w_*"]), err(super::NOT_DOUBLE));
        assert_eq!(strings(&run(&mut e, &mut c, &["SORT", "bad", "ALPHA"])), ["1", "x"]);
        run(&mut e, &mut c, &["RPUSH", "spaced", "", " 5", "2"]);
        assert_eq!(strings(&run(&mut e, &mut c, &["SORT", "spaced"])), ["", "2", " 5"]);
        run(&mut e, &mut c, &["RPUSH", "blank", "  "]);
        assert_eq!(run(&mut e, &mut c, &["SORT", "blank"]), err(super::NOT_DOUBLE));
    }

    #[test]
    fn store_writes_a_list_or_deletes_the_destination() {
        let (mut e, mut c) = setup();
        run(&mut e, &mut c, &["SET", "dst", "old"]);
        run(&mut e, &mut c, &["EXPIRE", "dst", "100"]);
        assert_eq!(
            run(
                &mut e,
                &mut c,
                &["SORT", "l", "BY", "n_*", "GET", "nokey*", "STORE", "x", "STORE", "dst"]
            ),
            Reply::Integer(3)
        );
        assert_eq!(run(&mut e, &mut c, &["TYPE", "dst"]), Reply::Status("list".into()));
        assert_eq!(run(&mut e, &mut c, &["TTL", "dst"]), Reply::Integer(-1));
        assert_eq!(
            strings(&run(&mut e, &mut c, &["LRANGE", "dst", "0", "-1"])),
            ["", "", ""]
        );
        assert_eq!(run(&mut e, &mut c, &["EXISTS", "x"]), Reply::Integer(0));
        assert_eq!(run(&mut e, &mut c, &["SORT", "l", "STORE", "l"]), Reply::Integer(3));
        assert_eq!(
            strings(&run(&mut e, &mut c, &["LRANGE", "l", "0", "-1"])),
            ["1", "2", "3"]
        );
        assert_eq!(
            run(&mut e, &mut c, &["SORT", "missing", "STORE", "dst"]),
            Reply::Integer(0)
        );
        assert_eq!(run(&mut e, &mut c, &["EXISTS", "dst"]), Reply::Integer(0));
        // A `WATCH` on the destination fails even when the result is empty.
        run(&mut e, &mut c, &["RPUSH", "foo", "bar"]);
        run(&mut e, &mut c, &["WATCH", "foo"]);
        run(&mut e, &mut c, &["SORT", "emptylist", "STORE", "foo"]);
        run(&mut e, &mut c, &["MULTI"]);
        run(&mut e, &mut c, &["PING"]);
        assert_eq!(run(&mut e, &mut c, &["EXEC"]), Reply::Array(None));
        assert_eq!(
            run(
                &mut e,
                &mut c,
                &["COMMAND", "GETKEYS", "SORT", "l", "LIMIT", "0", "1", "GET", "store", "STORE", "d"]
            ),
            Reply::Array(Some(vec![Reply::bulk("l"), Reply::bulk("d")]))
        );
    }

    #[test]
    fn store_raises_sortstore_or_del() {
        let (mut e, mut c) = setup();
        let mut sub = ClientSession::new(9);
        run(&mut e, &mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
        e.execute_conn(&mut sub, &args(&["PSUBSCRIBE", "__keyspace@0__:*"]), 0);
        e.take_pushes();
        run(&mut e, &mut c, &["SET", "gone_1", "1"]);
        run(&mut e, &mut c, &["PEXPIRE", "gone_1", "1"]);
        e.take_pushes();
        e.execute_as(&mut c, &args(&["SORT", "l", "BY", "gone_*", "STORE", "dst"]), 10);
        run(&mut e, &mut c, &["SORT", "missing", "STORE", "dst"]);
        run(&mut e, &mut c, &["SORT", "l"]);
        let events: Vec<String> = e
            .take_pushes()
            .into_iter()
            .filter_map(|(_, push)| match push {
                Reply::Array(Some(items)) => match (items.get(2), items.get(3)) {
                    (Some(Reply::Bulk(Some(ch))), Some(Reply::Bulk(Some(ev)))) => Some(format!(
                        "{} {}",
                        String::from_utf8_lossy(ch),
                        String::from_utf8_lossy(ev)
                    )),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert_eq!(
            events,
            // The pattern's key that expired is not SORT's write (the engine reports expirations
            // after the command).
            [
                "__keyspace@0__:dst sortstore",
                "__keyspace@0__:gone_1 expired",
                "__keyspace@0__:dst del"
            ]
        );
    }

    #[test]
    fn scripts_get_sets_in_byte_order() {
        let (mut e, mut c) = setup();
        run(&mut e, &mut c, &["SADD", "myset", "1", "2", "3", "4", "10"]);
        let r = run(
            &mut e,
            &mut c,
            &["EVAL", "return redis.call('sort',KEYS[1],'desc')", "1", "myset"],
        );
        assert_eq!(strings(&r), ["10", "4", "3", "2", "1"]);
        run(&mut e, &mut c, &["SADD", "letters", "b", "aa", "a", "azz"]);
        let r = run(
            &mut e,
            &mut c,
            &["EVAL", "return redis.call('sort',KEYS[1],'by','_')", "1", "letters"],
        );
        assert_eq!(strings(&r), ["a", "aa", "azz", "b"]);
    }
}
