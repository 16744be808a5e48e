//! `BITFIELD` and `BITFIELD_RO` (Redis's `bitops.c`): signed (`i1`..`i64`) and unsigned
//! (`u1`..`u63`) integers at any bit offset of a string, read with `GET`, written with `SET` and
//! `INCRBY` under the `OVERFLOW` mode in force (`WRAP`, `SAT`, or `FAIL`, which answers nil and
//! leaves the field alone).
//!
//! Written from the documentation (<https://redis.io/commands/bitfield/>,
//! <https://redis.io/commands/bitfield_ro/>) and behaviour observed on redis-server 7.0: every
//! operation is parsed before any runs (an error anywhere answers only the error), offsets take
//! the `#N` form (N times the type's width), fields are big-endian with bit 0 the most
//! significant bit of the first byte (as `SETBIT`), and a write grows the string with zero bytes
//! up to the last bit it touches, under the same size bound as `SETBIT`. A write that fails under
//! `OVERFLOW FAIL` still creates (or grows) the key, as Redis does.

use super::keyspace::{Keyspace, Value};
use super::reply::Reply;
use super::syntax::{eq_ic, parse_ll, NOT_INTEGER, SYNTAX};
use super::t_string::{string_of, MAX_STRING_BYTES};
use bytes::Bytes;

const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_OVERFLOW: &str = "ERR Invalid OVERFLOW type specified";
const RO_ONLY_GET: &str = "ERR BITFIELD_RO only supports the GET subcommand";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Get,
    Set(i64),
    IncrBy(i64),
}

#[derive(Clone, Copy, Debug)]
struct FieldOp {
    op: Op,
    signed: bool,
    bits: u32,
    offset: u64,
    overflow: Overflow,
}

/// `i8`, `u16`...: (signed, bits). Like Redis, the width is read up to a NUL byte.
fn field_type(raw: &[u8]) -> Result<(bool, u32), Reply> {
    let raw = raw.split(|b| *b == 0).next().unwrap_or_default();
    let signed = match raw.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(Reply::error(BAD_TYPE)),
    };
    match parse_ll(&raw[1..]) {
        Some(bits) if bits >= 1 && bits <= if signed { 64 } else { 63 } => Ok((signed, bits as u32)),
        _ => Err(Reply::error(BAD_TYPE)),
    }
}

/// A bit offset, `N` or `#N` (N fields of `bits` bits), bounded as `SETBIT`'s.
fn field_offset(raw: &[u8], bits: u32) -> Result<u64, Reply> {
    let err = || Reply::error(BAD_OFFSET);
    let (hash, digits) = match raw.split_first() {
        Some((b'#', rest)) => (true, rest),
        _ => (false, raw),
    };
    let mut offset = parse_ll(digits).ok_or_else(err)?;
    if hash {
        offset = offset.checked_mul(i64::from(bits)).ok_or_else(err)?;
    }
    if offset < 0 || (offset as u64) / 8 >= MAX_STRING_BYTES as u64 {
        return Err(err());
    }
    Ok(offset as u64)
}

/// Parses every operation (`args[2..]`), as Redis does before running any.
fn parse(args: &[Bytes]) -> Result<Vec<FieldOp>, Reply> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let remaining = args.len() - j - 1;
        let sub = &args[j];
        let kind = if eq_ic(sub, "get") && remaining >= 2 {
            Op::Get
        } else if eq_ic(sub, "set") && remaining >= 3 {
            Op::Set(0)
        } else if eq_ic(sub, "incrby") && remaining >= 3 {
            Op::IncrBy(0)
        } else if eq_ic(sub, "overflow") && remaining >= 1 {
            let mode = &args[j + 1];
            overflow = if eq_ic(mode, "wrap") {
                Overflow::Wrap
            } else if eq_ic(mode, "sat") {
                Overflow::Sat
            } else if eq_ic(mode, "fail") {
                Overflow::Fail
            } else {
                return Err(Reply::error(BAD_OVERFLOW));
            };
            j += 2;
            continue;
        } else {
            return Err(Reply::error(SYNTAX));
        };
        let (signed, bits) = field_type(&args[j + 1])?;
        let offset = field_offset(&args[j + 2], bits)?;
        let op = match kind {
            Op::Get => Op::Get,
            _ => {
                let v = parse_ll(&args[j + 3]).ok_or_else(|| Reply::error(NOT_INTEGER))?;
                if matches!(kind, Op::Set(_)) {
                    Op::Set(v)
                } else {
                    Op::IncrBy(v)
                }
            }
        };
        ops.push(FieldOp {
            op,
            signed,
            bits,
            offset,
            overflow,
        });
        j += if op == Op::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// The `bits` bits at `offset` as an unsigned number (bits past the end read as 0).
fn read_bits(s: &[u8], offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for i in 0..u64::from(bits) {
        let bit = offset + i;
        let on = s
            .get((bit / 8) as usize)
            .is_some_and(|b| b & (1 << (7 - (bit % 8))) != 0);
        v = (v << 1) | u64::from(on);
    }
    v
}

/// Writes the low `bits` bits of `v` at `offset` (the string is long enough).
fn write_bits(s: &mut [u8], offset: u64, bits: u32, v: u64) {
    for i in 0..u64::from(bits) {
        let bit = offset + i;
        let on = (v >> (u64::from(bits) - 1 - i)) & 1 == 1;
        let mask = 1u8 << (7 - (bit % 8));
        let byte = &mut s[(bit / 8) as usize];
        if on {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// A field's value as a number: sign-extended for a signed field.
fn decode(raw: u64, signed: bool, bits: u32) -> i128 {
    if signed && bits < 64 && raw & (1 << (bits - 1)) != 0 {
        i128::from(raw) - (1i128 << bits)
    } else if signed && bits == 64 {
        i128::from(raw as i64)
    } else {
        i128::from(raw)
    }
}

/// `value + incr` fitted into a signed field of `bits` bits: `(stored, overflowed)`. Out of the
/// type's range `WRAP` keeps the low bits and `SAT` the bound on the side Redis finds: it compares
/// `incr` with `max - value` and `min - value` computed in 64 bits, so a `SET` (`incr` 0) of a
/// value far enough below the range that `max - value` wraps saturates to the maximum, as
/// observed on redis-server 7.0 (`BITFIELD k OVERFLOW SAT SET i8 0 -9223372036854775808` stores
/// 127).
fn fit_signed(value: i64, incr: i64, bits: u32, mode: Overflow) -> (i64, bool) {
    let max = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let up = value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr);
    let down = !up && (value < min || (bits != 64 && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr));
    if !up && !down {
        return (value.wrapping_add(incr), false);
    }
    let fitted = match mode {
        Overflow::Sat if up => max,
        Overflow::Sat => min,
        _ => {
            let sum = (value as u64).wrapping_add(incr as u64);
            if bits == 64 {
                sum as i64
            } else {
                decode(sum & ((1u64 << bits) - 1), true, bits) as i64
            }
        }
    };
    (fitted, true)
}

/// `value + incr` fitted into an unsigned field of `bits` bits (at most 63): `(stored,
/// overflowed)`.
fn fit_unsigned(value: u64, incr: i64, bits: u32, mode: Overflow) -> (u64, bool) {
    let max = (1u64 << bits) - 1;
    let sum = i128::from(value) + i128::from(incr);
    if (0..=i128::from(max)).contains(&sum) {
        return (sum as u64, false);
    }
    let fitted = match mode {
        Overflow::Sat if sum > i128::from(max) => max,
        Overflow::Sat => 0,
        _ => value.wrapping_add(incr as u64) & max,
    };
    (fitted, true)
}

/// `BITFIELD key [GET type offset] [SET type offset value] [INCRBY type offset increment]
/// [OVERFLOW WRAP|SAT|FAIL] ...`.
pub(crate) fn bitfield(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    run(ks, args, now, false)
}

/// `BITFIELD_RO key [GET type offset] ...`.
pub(crate) fn bitfield_ro(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    run(ks, args, now, true)
}

fn run(ks: &mut Keyspace, args: &[Bytes], now: i64, read_only: bool) -> Reply {
    let ops = match parse(args) {
        Ok(ops) => ops,
        Err(e) => return e,
    };
    let highest = ops
        .iter()
        .filter(|o| o.op != Op::Get)
        .map(|o| o.offset + u64::from(o.bits) - 1)
        .max();
    // Redis refuses a write of `BITFIELD_RO` before it looks at the key.
    if read_only && highest.is_some() {
        return Reply::error(RO_ONLY_GET);
    }
    let current = match string_of(ks, &args[1], now) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let Some(highest) = highest else {
        let s = current.unwrap_or_default();
        let replies = ops
            .iter()
            .map(|o| Reply::Integer(decode(read_bits(&s, o.offset, o.bits), o.signed, o.bits) as i64))
            .collect();
        return Reply::Array(Some(replies));
    };
    let mut bytes = current.map(|v| v.to_vec()).unwrap_or_default();
    let need = (highest / 8 + 1) as usize;
    if bytes.len() < need {
        bytes.resize(need, 0);
    }
    let mut replies = Vec::with_capacity(ops.len());
    let mut wrote = false;
    for o in &ops {
        let raw = read_bits(&bytes, o.offset, o.bits);
        let old = decode(raw, o.signed, o.bits) as i64;
        let (value, incr, answer_old) = match o.op {
            Op::Get => {
                replies.push(Reply::Integer(old));
                continue;
            }
            Op::Set(v) => (v, 0, true),
            Op::IncrBy(by) => (old, by, false),
        };
        // `SET`'s value is taken as the field's kind of number: for an unsigned field a negative
        // value is a huge one (above every bound).
        let (new, overflowed) = if o.signed {
            fit_signed(value, incr, o.bits, o.overflow)
        } else {
            let (new, overflowed) = fit_unsigned(value as u64, incr, o.bits, o.overflow);
            (new as i64, overflowed)
        };
        if overflowed && o.overflow == Overflow::Fail {
            replies.push(Reply::Bulk(None));
            continue;
        }
        write_bits(&mut bytes, o.offset, o.bits, new as u64);
        wrote = true;
        replies.push(Reply::Integer(if answer_old { old } else { new }));
    }
    let ttl = ks.lookup(&args[1], now).and_then(|e| e.expire_at_ms);
    // Redis signals the key (and raises `setbit`) only when a field was written; the string it
    // made or grew for writes that all failed stays, unannounced.
    if wrote {
        ks.insert(args[1].clone(), Value::String(Bytes::from(bytes)), ttl);
    } else {
        ks.insert_unsignalled(args[1].clone(), Value::String(Bytes::from(bytes)), ttl);
    }
    Reply::Array(Some(replies))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_cmd(ks: &mut Keyspace, a: &[&str]) -> Reply {
        let args: Vec<Bytes> = a.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect();
        if a[0].eq_ignore_ascii_case("bitfield_ro") {
            bitfield_ro(ks, &args, 0)
        } else {
            bitfield(ks, &args, 0)
        }
    }

    fn ints(v: &[Option<i64>]) -> Reply {
        Reply::Array(Some(
            v.iter()
                .map(|x| match x {
                    Some(i) => Reply::Integer(*i),
                    None => Reply::Bulk(None),
                })
                .collect(),
        ))
    }

    fn value(ks: &mut Keyspace, key: &str) -> Vec<u8> {
        match string_of(ks, key.as_bytes(), 0) {
            Ok(Some(v)) => v.to_vec(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn get_set_and_incrby_signed_and_unsigned() {
        let mut ks = Keyspace::new();
        assert_eq!(
            run_cmd(
                &mut ks,
                &["BITFIELD", "k", "SET", "u8", "0", "255", "GET", "u8", "0", "GET", "i8", "0"]
            ),
            ints(&[Some(0), Some(255), Some(-1)])
        );
        assert_eq!(value(&mut ks, "k"), vec![0xff]);
        assert_eq!(
            run_cmd(
                &mut ks,
                &["BITFIELD", "k", "SET", "i5", "#1", "-3", "GET", "u5", "5", "GET", "u1", "0"]
            ),
            ints(&[Some(-4), Some(29), Some(1)])
        );
        assert_eq!(value(&mut ks, "k"), vec![0xff, 0b0100_0000]);
        assert_eq!(
            run_cmd(
                &mut ks,
                &["BITFIELD", "k", "INCRBY", "u2", "100", "1", "GET", "u2", "100"]
            ),
            ints(&[Some(1), Some(1)])
        );
        assert_eq!(value(&mut ks, "k").len(), 13);
        assert_eq!(
            run_cmd(
                &mut ks,
                &[
                    "BITFIELD",
                    "n",
                    "SET",
                    "i64",
                    "0",
                    "-9223372036854775808",
                    "GET",
                    "i64",
                    "0"
                ]
            ),
            ints(&[Some(0), Some(i64::MIN)])
        );
        assert_eq!(
            run_cmd(&mut ks, &["BITFIELD", "n", "GET", "u63", "1", "GET", "u63", "0"]),
            ints(&[Some(0), Some(1 << 62)])
        );
        assert_eq!(run_cmd(&mut ks, &["BITFIELD", "missing"]), ints(&[]));
        assert_eq!(
            run_cmd(&mut ks, &["BITFIELD_RO", "missing", "GET", "i8", "100"]),
            ints(&[Some(0)])
        );
        assert!(
            string_of(&mut ks, b"missing", 0).unwrap().is_none(),
            "GET creates nothing"
        );
    }

    #[test]
    fn overflow_modes_wrap_saturate_or_fail() {
        let mut ks = Keyspace::new();
        assert_eq!(
            run_cmd(
                &mut ks,
                &[
                    "BITFIELD", "k", "INCRBY", "u2", "0", "5", "OVERFLOW", "SAT", "INCRBY", "u2", "0", "5", "INCRBY",
                    "u2", "0", "-9", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "-1", "INCRBY", "u2", "0", "3"
                ]
            ),
            ints(&[Some(1), Some(3), Some(0), None, Some(3)])
        );
        assert_eq!(
            run_cmd(
                &mut ks,
                &[
                    "BITFIELD", "s", "SET", "i8", "0", "200", "OVERFLOW", "SAT", "SET", "i8", "0", "-200", "GET", "i8",
                    "0", "SET", "u8", "0", "-1", "GET", "u8", "0", "OVERFLOW", "WRAP", "SET", "u8", "0", "-1", "GET",
                    "u8", "0"
                ]
            ),
            ints(&[
                Some(0),
                Some(-56),
                Some(-128),
                Some(128),
                Some(255),
                Some(255),
                Some(255)
            ])
        );
        assert_eq!(
            run_cmd(
                &mut ks,
                &[
                    "BITFIELD",
                    "w",
                    "SET",
                    "i64",
                    "0",
                    "9223372036854775807",
                    "INCRBY",
                    "i64",
                    "0",
                    "1"
                ]
            ),
            ints(&[Some(0), Some(i64::MIN)])
        );
        // A failed write still makes the key, as Redis does.
        assert_eq!(
            run_cmd(
                &mut ks,
                &["BITFIELD", "f", "OVERFLOW", "FAIL", "SET", "i8", "8", "1000"]
            ),
            ints(&[None])
        );
        assert_eq!(value(&mut ks, "f"), vec![0, 0]);
        // ...without signalling it (no `setbit` event, no `WATCH` abort), as Redis.
        assert!(!ks.take_touched().contains(&b"f"[..]));
        run_cmd(&mut ks, &["BITFIELD", "f", "SET", "i8", "0", "1"]);
        assert!(ks.take_touched().contains(&b"f"[..]));
    }

    #[test]
    fn errors_are_redis_texts_and_come_before_any_write() {
        let mut ks = Keyspace::new();
        let err = |t: &str| Reply::error(t);
        for (cmd, want) in [
            (&["BITFIELD", "k", "GET", "u64", "0"][..], BAD_TYPE),
            (&["BITFIELD", "k", "GET", "i65", "0"], BAD_TYPE),
            (&["BITFIELD", "k", "GET", "x8", "0"], BAD_TYPE),
            (&["BITFIELD", "k", "GET", "i0", "0"], BAD_TYPE),
            (&["BITFIELD", "k", "GET", "i8", "-1"], BAD_OFFSET),
            (&["BITFIELD", "k", "GET", "i8", "#-1"], BAD_OFFSET),
            (&["BITFIELD", "k", "GET", "i8", "abc"], BAD_OFFSET),
            (&["BITFIELD", "k", "GET", "i8", "99999999999"], BAD_OFFSET),
            (&["BITFIELD", "k", "SET", "i8", "0", "x"], NOT_INTEGER),
            (&["BITFIELD", "k", "SET", "i8", "0"], SYNTAX),
            (&["BITFIELD", "k", "FOO"], SYNTAX),
            (&["BITFIELD", "k", "OVERFLOW", "maybe"], BAD_OVERFLOW),
            (&["BITFIELD", "k", "SET", "i8", "0", "1", "GET", "i8", "x"], BAD_OFFSET),
            (&["BITFIELD_RO", "k", "SET", "i8", "0", "1"], RO_ONLY_GET),
            (&["BITFIELD_RO", "k", "INCRBY", "i8", "0", "1"], RO_ONLY_GET),
        ] {
            assert_eq!(run_cmd(&mut ks, cmd), err(want), "{cmd:?}");
        }
        assert_eq!(ks.len(), 0, "nothing was written");
        ks.insert(Bytes::from_static(b"l"), Value::List(Default::default()), None);
        assert!(matches!(
            run_cmd(&mut ks, &["BITFIELD", "l", "GET", "i8", "0"]),
            Reply::Error(_)
        ));
    }

    #[test]
    fn fit_matches_the_documented_ranges_and_redis_s_saturation_side() {
        assert_eq!(fit_signed(127, 1, 8, Overflow::Wrap), (-128, true));
        assert_eq!(fit_signed(-128, -1, 8, Overflow::Wrap), (127, true));
        assert_eq!(fit_unsigned(255, 1, 8, Overflow::Wrap), (0, true));
        assert_eq!(fit_unsigned(0, -1, 8, Overflow::Wrap), (255, true));
        assert_eq!(fit_unsigned(0, -1, 8, Overflow::Sat), (0, true));
        assert_eq!(fit_unsigned(u64::MAX, 0, 8, Overflow::Sat), (255, true));
        assert_eq!(fit_signed(-1, 0, 1, Overflow::Sat), (-1, false));
        assert_eq!(fit_signed(1, 0, 1, Overflow::Sat), (0, true));
        assert_eq!(fit_signed(-200, 0, 8, Overflow::Sat), (-128, true));
        assert_eq!(fit_signed(i64::MIN, 0, 8, Overflow::Sat), (127, true));
        assert_eq!(fit_signed(i64::MAX, 1, 64, Overflow::Sat), (i64::MAX, true));
        assert_eq!(fit_signed(i64::MIN, -1, 64, Overflow::Wrap), (i64::MAX, true));
    }
}
