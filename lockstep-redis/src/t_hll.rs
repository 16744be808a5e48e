//! HyperLogLog commands (Redis's `hyperloglog.c`): `PFADD`, `PFCOUNT` (one key, with the cached
//! cardinality written back as Redis does, or the union of several), `PFMERGE`, `PFDEBUG`
//! (`GETREG`, `DECODE`, `ENCODING`, `TODENSE`) and `PFSELFTEST`, over string values in Redis's
//! format ([`super::hll`]).
//!
//! From <https://redis.io/commands/pfadd/>, /pfcount/, /pfmerge/, /pfdebug/, /pfselftest/ and
//! behaviour observed on redis-server 7.0: a string that is not a HyperLogLog answers
//! `WRONGTYPE Key is not a valid HyperLogLog string value.`, one whose sparse runs do not cover
//! exactly 16,384 registers `INVALIDOBJ Corrupted HLL object detected`. `PFMERGE` raises the
//! keyspace event `pfadd`, as Redis does; `PFCOUNT` updating the cache raises none.

use super::hll;
use super::keyspace::{Keyspace, Value};
use super::reply::Reply;
use super::syntax::{eq_ic, WRONGTYPE};
use bytes::Bytes;

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

/// The HyperLogLog at `key`: `Ok(None)` when absent.
fn hll_of(ks: &mut Keyspace, key: &[u8], now: i64) -> Result<Option<Vec<u8>>, Reply> {
    match ks.lookup(key, now) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::String(s) if hll::is_hll(s) => Ok(Some(s.to_vec())),
            Value::String(_) => Err(Reply::error(NOT_HLL)),
            _ => Err(Reply::error(WRONGTYPE)),
        },
    }
}

/// Stores `value` at `key`, keeping its TTL.
fn store(ks: &mut Keyspace, key: &Bytes, value: Vec<u8>, now: i64) {
    let ttl = ks.lookup(key, now).and_then(|e| e.expire_at_ms);
    ks.insert(key.clone(), Value::String(Bytes::from(value)), ttl);
}

/// `PFADD key [element ...]`: 1 if a register changed (or the key was made), else 0.
pub(crate) fn pfadd(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let (mut value, mut updated) = match hll_of(ks, &args[1], now) {
        Ok(Some(v)) => (v, false),
        Ok(None) => (hll::new_sparse(), true),
        Err(e) => return e,
    };
    for element in &args[2..] {
        match hll::add(&mut value, element) {
            Ok(changed) => updated |= changed,
            Err(hll::Corrupt) => {
                // Redis changes the value in place: the elements added before the one that
                // found the corruption stay, without a signal or a fresh cache flag.
                if updated {
                    if let Some(Value::String(s)) = ks.value_mut_unsignalled(&args[1], now) {
                        let (old, new) = (s.len(), value.len());
                        *s = Bytes::from(value);
                        ks.grew(new.saturating_sub(old));
                        ks.shrank(old.saturating_sub(new));
                    }
                }
                return Reply::error(CORRUPT);
            }
        }
    }
    if updated {
        hll::invalidate_cache(&mut value);
        store(ks, &args[1], value, now);
    }
    Reply::Integer(i64::from(updated))
}

/// `PFCOUNT key [key ...]`.
pub(crate) fn pfcount(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    if args.len() > 2 {
        let mut union = vec![0u8; hll::REGISTERS];
        for key in &args[1..] {
            let merged = match ks.lookup(key, now).map(|e| &e.value) {
                None => Ok(()),
                Some(Value::String(s)) if hll::is_hll(s) => hll::max_into(s, &mut union),
                Some(Value::String(_)) => return Reply::error(NOT_HLL),
                Some(_) => return Reply::error(WRONGTYPE),
            };
            if merged.is_err() {
                return Reply::error(CORRUPT);
            }
        }
        return Reply::Integer(hll::estimate(&union) as i64);
    }
    let mut value = match hll_of(ks, &args[1], now) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::Integer(0),
        Err(e) => return e,
    };
    if let Some(card) = hll::cached(&value) {
        return Reply::Integer(card as i64);
    }
    let Ok(card) = hll::count(&value) else {
        return Reply::error(CORRUPT);
    };
    // Redis writes the fresh count into the header (and signals the key, without an event).
    hll::set_cache(&mut value, card);
    if let Some(Value::String(s)) = ks.value_mut(&args[1], now) {
        *s = Bytes::from(value);
    }
    Reply::Integer(card as i64)
}

/// `PFMERGE destkey [sourcekey ...]`: the destination (itself a source) gets every register's
/// maximum; it is dense if a source was.
pub(crate) fn pfmerge(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let mut max = vec![0u8; hll::REGISTERS];
    let mut dense = false;
    for key in &args[1..] {
        match hll_of(ks, key, now) {
            Ok(None) => {}
            Ok(Some(v)) => {
                dense |= v[4] == hll::DENSE;
                if hll::max_into(&v, &mut max).is_err() {
                    return Reply::error(CORRUPT);
                }
            }
            Err(e) => return e,
        }
    }
    let mut dest = match hll_of(ks, &args[1], now) {
        Ok(Some(v)) => v,
        _ => hll::new_sparse(),
    };
    if dense && dest[4] == hll::SPARSE && hll::to_dense(&mut dest).is_err() {
        return Reply::error(CORRUPT);
    }
    for (i, r) in max.iter().enumerate() {
        if *r > 0 && hll::set_register(&mut dest, i, *r).is_err() {
            return Reply::error(CORRUPT);
        }
    }
    hll::invalidate_cache(&mut dest);
    store(ks, &args[1], dest, now);
    Reply::ok()
}

/// `PFDEBUG GETREG|DECODE|ENCODING|TODENSE key`.
pub(crate) fn pfdebug(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    let sub = &args[1];
    let mut value = match hll_of(ks, &args[2], now) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::error("ERR The specified key does not exist"),
        Err(e) => return e,
    };
    let sparse = value[4] == hll::SPARSE;
    if eq_ic(sub, "getreg") || eq_ic(sub, "todense") {
        if sparse {
            if hll::to_dense(&mut value).is_err() {
                return Reply::error(CORRUPT);
            }
            // Redis converts in place without signalling the key.
            if let Some(Value::String(s)) = ks.value_mut_unsignalled(&args[2], now) {
                let grew = value.len().saturating_sub(s.len());
                *s = Bytes::from(value.clone());
                ks.grew(grew);
            }
        }
        if eq_ic(sub, "todense") {
            return Reply::Integer(i64::from(sparse));
        }
        let regs = hll::dense_registers(&value);
        return Reply::Array(Some(regs.into_iter().map(|r| Reply::Integer(i64::from(r))).collect()));
    }
    if eq_ic(sub, "decode") {
        if !sparse {
            return Reply::error("ERR HLL encoding is not sparse");
        }
        return Reply::bulk(hll::decode_sparse(&value));
    }
    if eq_ic(sub, "encoding") {
        return Reply::Status(if sparse { "sparse" } else { "dense" }.into());
    }
    Reply::error(format!(
        "ERR Unknown PFDEBUG subcommand '{}'",
        String::from_utf8_lossy(sub)
    ))
}

/// `PFSELFTEST`: lockstep's own checks of its HyperLogLog ([`hll::self_test`]).
pub(crate) fn pfselftest(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    match hll::self_test() {
        Ok(()) => Reply::ok(),
        Err(e) => Reply::error(format!("ERR {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ks: &mut Keyspace, a: &[&[u8]]) -> Reply {
        let args: Vec<Bytes> = a.iter().map(|s| Bytes::copy_from_slice(s)).collect();
        let handler = match a[0] {
            b"PFADD" => pfadd,
            b"PFCOUNT" => pfcount,
            b"PFMERGE" => pfmerge,
            b"PFDEBUG" => pfdebug,
            _ => pfselftest,
        };
        handler(ks, &args, 0)
    }

    fn add_all(ks: &mut Keyspace, key: &str, items: impl Iterator<Item = String>) {
        let items: Vec<String> = items.collect();
        for chunk in items.chunks(1000) {
            let mut a: Vec<&[u8]> = vec![b"PFADD", key.as_bytes()];
            a.extend(chunk.iter().map(|s| s.as_bytes()));
            run(ks, &a);
        }
    }

    fn get(ks: &mut Keyspace, key: &str) -> Vec<u8> {
        match ks.lookup(key.as_bytes(), 0).map(|e| &e.value) {
            Some(Value::String(s)) => s.to_vec(),
            _ => Vec::new(),
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Counts and bytes observed on redis-server 7.0.15 for the same adds.
    #[test]
    fn counts_and_bytes_are_redis_s() {
        let mut ks = Keyspace::new();
        assert_eq!(run(&mut ks, &[b"PFADD", b"e"]), Reply::Integer(1));
        assert_eq!(get(&mut ks, "e"), hex("48594c4c0100000000000000000000807fff"));
        assert_eq!(run(&mut ks, &[b"PFADD", b"e"]), Reply::Integer(0));
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"e"]), Reply::Integer(0));
        run(&mut ks, &[b"PFADD", b"x", b"hello"]);
        assert_eq!(get(&mut ks, "x"), hex("48594c4c01000000000000000000008063ff805bfe"));
        assert_eq!(
            run(&mut ks, &[b"PFDEBUG", b"DECODE", b"x"]),
            Reply::bulk("Z:9216 v:1,1 Z:7167")
        );
        add_all(&mut ks, "a", (b'a'..=b'z').map(|c| (c as char).to_string()));
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"a"]), Reply::Integer(25));
        add_all(&mut ks, "n", (0..1000).map(|i| i.to_string()));
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"n"]), Reply::Integer(1001));
        assert_eq!(
            run(&mut ks, &[b"PFDEBUG", b"ENCODING", b"n"]),
            Reply::Status("sparse".into())
        );
        add_all(&mut ks, "m", (0..100_000).map(|i| i.to_string()));
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"m"]), Reply::Integer(99565));
        assert_eq!(
            run(&mut ks, &[b"PFDEBUG", b"ENCODING", b"m"]),
            Reply::Status("dense".into())
        );
        assert_eq!(get(&mut ks, "m").len(), hll::DENSE_SIZE);
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"a", b"n", b"m"]), Reply::Integer(99586));
        assert_eq!(run(&mut ks, &[b"PFMERGE", b"u", b"a", b"n"]), Reply::ok());
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"u"]), Reply::Integer(1025));
        assert_eq!(get(&mut ks, "u").len(), 1967);
    }

    #[test]
    fn cache_is_written_by_pfcount_and_invalidated_by_a_change() {
        let mut ks = Keyspace::new();
        run(&mut ks, &[b"PFADD", b"h", b"a", b"b", b"c"]);
        assert_eq!(get(&mut ks, "h")[15], 0x80);
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"h"]), Reply::Integer(3));
        assert_eq!(get(&mut ks, "h")[8..16], [3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(run(&mut ks, &[b"PFADD", b"h", b"a"]), Reply::Integer(0));
        assert_eq!(get(&mut ks, "h")[15], 0);
        assert_eq!(run(&mut ks, &[b"PFADD", b"h", b"1", b"2"]), Reply::Integer(1));
        assert_eq!(get(&mut ks, "h")[15], 0x80);
    }

    #[test]
    fn sparse_and_dense_agree_and_todense_converts() {
        let mut ks = Keyspace::new();
        for round in 0..50 {
            let items: Vec<String> = (0..round * 7).map(|i| format!("{round}:{i}")).collect();
            run(&mut ks, &[b"PFADD", b"d"]);
            assert_eq!(run(&mut ks, &[b"PFDEBUG", b"TODENSE", b"d"]), Reply::Integer(1));
            assert_eq!(run(&mut ks, &[b"PFDEBUG", b"TODENSE", b"d"]), Reply::Integer(0));
            add_all(&mut ks, "s", items.iter().cloned());
            add_all(&mut ks, "d", items.into_iter());
            assert_eq!(run(&mut ks, &[b"PFCOUNT", b"s"]), run(&mut ks, &[b"PFCOUNT", b"d"]));
            let Reply::Array(Some(a)) = run(&mut ks, &[b"PFDEBUG", b"GETREG", b"d"]) else {
                panic!("GETREG answers registers");
            };
            assert_eq!(a.len(), hll::REGISTERS);
            ks.remove(b"s");
            ks.remove(b"d");
        }
        assert_eq!(run(&mut ks, &[b"PFSELFTEST"]), Reply::ok());
    }

    #[test]
    fn wrong_types_and_corrupted_values_are_refused() {
        let mut ks = Keyspace::new();
        ks.insert(
            Bytes::from_static(b"s"),
            Value::String(Bytes::from_static(b"hello")),
            None,
        );
        ks.insert(Bytes::from_static(b"l"), Value::List(Default::default()), None);
        for cmd in [
            &[&b"PFADD"[..], b"s", b"x"][..],
            &[b"PFCOUNT", b"s"],
            &[b"PFMERGE", b"d", b"s"],
        ] {
            assert_eq!(run(&mut ks, cmd), Reply::error(NOT_HLL));
        }
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"l"]), Reply::error(WRONGTYPE));
        run(&mut ks, &[b"PFADD", b"h", b"a", b"b", b"c"]);
        let mut v = get(&mut ks, "h");
        v.extend_from_slice(b"hello");
        ks.insert(Bytes::from_static(b"h"), Value::String(Bytes::from(v)), None);
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"h"]), Reply::error(CORRUPT));
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"h", b"h"]), Reply::error(CORRUPT));
        assert_eq!(run(&mut ks, &[b"PFDEBUG", b"GETREG", b"h"]), Reply::error(CORRUPT));
        let mut dense = hll::new_sparse();
        hll::to_dense(&mut dense).unwrap();
        dense.pop();
        ks.insert(Bytes::from_static(b"d"), Value::String(Bytes::from(dense)), None);
        assert_eq!(run(&mut ks, &[b"PFCOUNT", b"d"]), Reply::error(NOT_HLL));
    }

    /// Any bytes a client stores answer a reply, never a panic.
    #[test]
    fn fuzzed_values_never_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut ks = Keyspace::new();
        for round in 0..3000 {
            ks.remove(b"h");
            let items: Vec<String> = (0..next() % 200).map(|i| format!("{round}-{i}")).collect();
            add_all(&mut ks, "h", items.into_iter());
            if next() % 3 == 0 {
                run(&mut ks, &[b"PFDEBUG", b"TODENSE", b"h"]);
            }
            let mut v = get(&mut ks, "h");
            for _ in 0..1 + next() % 5 {
                let pos = (next() as usize) % (v.len() + 2);
                let byte = next() as u8;
                if pos < v.len() {
                    v[pos] = byte;
                } else if next() % 2 == 0 {
                    v.push(byte);
                } else {
                    v.truncate(pos.min(v.len()).saturating_sub(1 + (next() % 40) as usize));
                }
            }
            ks.insert(Bytes::from_static(b"h"), Value::String(Bytes::from(v)), None);
            let extra = round.to_string();
            for cmd in [
                &[&b"PFCOUNT"[..], b"h"][..],
                &[b"PFCOUNT", b"h", b"h"],
                &[b"PFADD", b"h", extra.as_bytes(), b"a", b"b"],
                &[b"PFMERGE", b"m", b"h"],
                &[b"PFDEBUG", b"DECODE", b"h"],
                &[b"PFDEBUG", b"GETREG", b"h"],
                &[b"PFCOUNT", b"h"],
            ] {
                run(&mut ks, cmd);
            }
        }
    }
}
