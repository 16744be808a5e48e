//! The `cmsgpack` library of Redis scripts (lua-cmsgpack 0.4.0 as Redis 7.0 ships it), in Rust
//! so that its work counts against a script's instruction budget.
//!
//! Written from the MessagePack specification
//! (<https://github.com/msgpack/msgpack/blob/master/spec.md>) and from the replies of
//! redis-server 7.0.15: `pack(...)` writes each argument in turn (integral numbers in the
//! smallest integer format that holds them when they fit an int64, others as a float32 when
//! that is exact, else a float64; strings as fixstr/str8/str16/str32; a table whose keys are
//! exactly `1..n` as an array, any other as a map in `next` order; tables nested 16 deep and
//! values of other types as nil, so a circular table packs as 16 levels of copies);
//! `unpack(s)` returns every object of `s`, `unpack_one(s [, offset])` and
//! `unpack_limit(s, limit [, offset])` the offset after what they read (-1 at the end) before
//! it. Binary and extension formats are refused as lua-cmsgpack 0.4.0 refuses them
//! (`Bad data format in input.`), as is `0xc1`; a truncated input is `Missing bytes in input.`
//! A header's count is never trusted for an allocation: an array claiming 2^32 elements stops
//! at the end of its bytes.
//!
//! Difference: unpacking stops at [`UNPACK_DEPTH_CAP`] levels of nesting with Lua's
//! `stack overflow` error (Redis' stops where Lua's C stack is full, deeper).

use super::pattern::{bad_argument, check_string, opt_integer};
use super::{lua_error, RunState, BYTES_PER_UNIT, LUA_MEMORY_LIMIT};
use mlua::{Lua, MultiValue, Table, Value};
use std::rc::Rc;

/// lua-cmsgpack's `LUACMSGPACK_MAX_NESTING`: tables deeper than this pack as nil.
const PACK_MAX_NESTING: usize = 16;
/// The deepest nesting `unpack` decodes (each level is a Rust frame and a Lua reference).
pub(super) const UNPACK_DEPTH_CAP: usize = 1000;
/// The most values one call returns (Lua's C stack holds 8,000).
const RESULTS_MAX: usize = 7990;
/// Units of the budget each value packed or unpacked costs, besides its bytes.
const VALUE_UNITS: u64 = 4;

/// The `cmsgpack` table (a plain table: the sandbox shows scripts a read-only view of it).
pub(super) fn module(lua: &Lua, state: &Rc<RunState>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let st = state.clone();
    t.raw_set(
        "pack",
        lua.create_function(move |lua, args: MultiValue| pack(lua, &args, &st))?,
    )?;
    for (name, mode) in [
        ("unpack", Mode::All),
        ("unpack_one", Mode::One),
        ("unpack_limit", Mode::Limit),
    ] {
        let st = state.clone();
        t.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| unpack(lua, &args, &st, name, mode))?,
        )?;
    }
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}

fn out_of_memory() -> mlua::Error {
    mlua::Error::MemoryError("not enough memory".into())
}

struct Packer<'a> {
    state: &'a RunState,
    out: Vec<u8>,
}

impl Packer<'_> {
    fn number(&mut self, n: f64) {
        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
        if n.floor() == n && (-TWO_63..TWO_63).contains(&n) {
            let i = n as i64;
            let out = &mut self.out;
            if i >= 0 {
                if i < 128 {
                    out.push(i as u8);
                } else if i < 256 {
                    out.extend_from_slice(&[0xcc, i as u8]);
                } else if i < 65536 {
                    out.push(0xcd);
                    out.extend_from_slice(&(i as u16).to_be_bytes());
                } else if i < 1 << 32 {
                    out.push(0xce);
                    out.extend_from_slice(&(i as u32).to_be_bytes());
                } else {
                    out.push(0xcf);
                    out.extend_from_slice(&(i as u64).to_be_bytes());
                }
            } else if i >= -32 {
                out.push(i as i8 as u8);
            } else if i >= -128 {
                out.extend_from_slice(&[0xd0, i as i8 as u8]);
            } else if i >= -32768 {
                out.push(0xd1);
                out.extend_from_slice(&(i as i16).to_be_bytes());
            } else if i >= -(1 << 31) {
                out.push(0xd2);
                out.extend_from_slice(&(i as i32).to_be_bytes());
            } else {
                out.push(0xd3);
                out.extend_from_slice(&i.to_be_bytes());
            }
        } else if (n as f32) as f64 == n {
            self.out.push(0xca);
            self.out.extend_from_slice(&(n as f32).to_be_bytes());
        } else {
            self.out.push(0xcb);
            self.out.extend_from_slice(&n.to_be_bytes());
        }
    }

    fn header(&mut self, len: usize, fix: u8, fix_max: usize, small: u8, large: u8) {
        if len < fix_max {
            self.out.push(fix | len as u8);
        } else if len < 65536 {
            self.out.push(small);
            self.out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            self.out.push(large);
            self.out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }

    fn string(&mut self, s: &[u8]) -> mlua::Result<()> {
        self.state.charge(s.len() as u64 / BYTES_PER_UNIT)?;
        if self.out.len().saturating_add(s.len()) > LUA_MEMORY_LIMIT {
            return Err(out_of_memory());
        }
        let len = s.len();
        if len < 32 {
            self.out.push(0xa0 | len as u8);
        } else if len < 256 {
            self.out.extend_from_slice(&[0xd9, len as u8]);
        } else if len < 65536 {
            self.out.push(0xda);
            self.out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            self.out.push(0xdb);
            self.out.extend_from_slice(&(len as u32).to_be_bytes());
        }
        self.out.extend_from_slice(s);
        Ok(())
    }

    fn value(&mut self, v: &Value, level: usize) -> mlua::Result<()> {
        self.state.charge(VALUE_UNITS)?;
        if self.out.len() > LUA_MEMORY_LIMIT {
            return Err(out_of_memory());
        }
        match v {
            Value::Boolean(b) => self.out.push(if *b { 0xc3 } else { 0xc2 }),
            Value::Integer(i) => self.number(*i as f64),
            Value::Number(n) => self.number(*n),
            Value::String(s) => self.string(&s.as_bytes())?,
            Value::Table(t) if level < PACK_MAX_NESTING => self.table(t, level)?,
            _ => self.out.push(0xc0),
        }
        Ok(())
    }

    /// lua-cmsgpack's array test: every key a positive integer, as many keys as the largest.
    fn array_length(&mut self, t: &Table) -> mlua::Result<Option<usize>> {
        let (mut max, mut count) = (0f64, 0usize);
        let mut array = true;
        for pair in t.pairs::<Value, Value>() {
            let (k, _) = pair?;
            self.state.charge(VALUE_UNITS)?;
            count += 1;
            let n = match k {
                Value::Number(n) => n,
                Value::Integer(i) => i as f64,
                _ => {
                    array = false;
                    continue;
                }
            };
            if !(n > 0.0 && n.floor() == n) {
                array = false;
                continue;
            }
            max = max.max(n);
        }
        Ok((array && max == count as f64).then_some(count))
    }

    fn table(&mut self, t: &Table, level: usize) -> mlua::Result<()> {
        match self.array_length(t)? {
            Some(len) => {
                self.header(len, 0x90, 16, 0xdc, 0xdd);
                for i in 1..=len {
                    let v: Value = t.raw_get(i)?;
                    self.value(&v, level + 1)?;
                }
            }
            None => {
                let mut count = 0usize;
                for pair in t.pairs::<Value, Value>() {
                    pair?;
                    count += 1;
                }
                self.header(count, 0x80, 16, 0xde, 0xdf);
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    self.value(&k, level + 1)?;
                    self.value(&v, level + 1)?;
                }
            }
        }
        Ok(())
    }
}

/// `cmsgpack.pack(...)`.
fn pack(lua: &Lua, args: &MultiValue, state: &RunState) -> mlua::Result<mlua::String> {
    if args.is_empty() {
        return Err(lua_error(
            lua,
            "bad argument #0 to 'pack' (MessagePack pack needs input.)".into(),
        ));
    }
    let mut p = Packer { state, out: Vec::new() };
    for v in args.iter() {
        p.value(v, 0)?;
    }
    state.charge(p.out.len() as u64 / BYTES_PER_UNIT)?;
    lua.create_string(&p.out)
}

#[derive(Clone, Copy)]
enum Mode {
    All,
    One,
    Limit,
}

/// Why unpacking stopped.
enum Bad {
    Missing,
    Format,
    /// Nested deeper than [`UNPACK_DEPTH_CAP`].
    Deep,
    Lua(mlua::Error),
}

impl From<mlua::Error> for Bad {
    fn from(e: mlua::Error) -> Self {
        Bad::Lua(e)
    }
}

struct Unpacker<'a> {
    lua: &'a Lua,
    state: &'a RunState,
    s: &'a [u8],
    pos: usize,
}

impl<'a> Unpacker<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        if self.s.len() - self.pos < n {
            return Err(Bad::Missing);
        }
        let s: &'a [u8] = self.s;
        let out = &s[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn uint(&mut self, n: usize) -> Result<u64, Bad> {
        Ok(self.take(n)?.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn string(&mut self, len: usize) -> Result<Value, Bad> {
        let bytes = self.take(len)?;
        Ok(Value::String(self.lua.create_string(bytes)?))
    }

    fn array(&mut self, len: usize, depth: usize) -> Result<Value, Bad> {
        let t = self.lua.create_table()?;
        for i in 1..=len {
            // Every element takes a byte at least: a count past the input's end stops here.
            if self.pos >= self.s.len() {
                return Err(Bad::Missing);
            }
            let v = self.value(depth + 1)?;
            t.raw_set(i, v)?;
        }
        Ok(Value::Table(t))
    }

    fn map(&mut self, len: usize, depth: usize) -> Result<Value, Bad> {
        let t = self.lua.create_table()?;
        for _ in 0..len {
            if self.pos >= self.s.len() {
                return Err(Bad::Missing);
            }
            let k = self.value(depth + 1)?;
            let v = self.value(depth + 1)?;
            match k {
                Value::Nil => return Err(Bad::Lua(mlua::Error::runtime("table index is nil"))),
                Value::Number(n) if n.is_nan() => return Err(Bad::Lua(mlua::Error::runtime("table index is NaN"))),
                k => t.raw_set(k, v)?,
            }
        }
        Ok(Value::Table(t))
    }

    fn value(&mut self, depth: usize) -> Result<Value, Bad> {
        if depth > UNPACK_DEPTH_CAP {
            return Err(Bad::Deep);
        }
        self.state.charge(VALUE_UNITS)?;
        let c = self.take(1)?[0];
        Ok(match c {
            0x00..=0x7f => Value::Number(f64::from(c)),
            0x80..=0x8f => self.map(usize::from(c & 0x0f), depth)?,
            0x90..=0x9f => self.array(usize::from(c & 0x0f), depth)?,
            0xa0..=0xbf => self.string(usize::from(c & 0x1f))?,
            0xc0 => Value::Nil,
            0xc2 => Value::Boolean(false),
            0xc3 => Value::Boolean(true),
            0xca => Value::Number(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => Value::Number(f64::from_bits(self.uint(8)?)),
            0xcc => Value::Number(self.uint(1)? as f64),
            0xcd => Value::Number(self.uint(2)? as f64),
            0xce => Value::Number(self.uint(4)? as f64),
            // lua-cmsgpack reads a uint64 as a signed one.
            0xcf => Value::Number(self.uint(8)? as i64 as f64),
            0xd0 => Value::Number(f64::from(self.uint(1)? as u8 as i8)),
            0xd1 => Value::Number(f64::from(self.uint(2)? as u16 as i16)),
            0xd2 => Value::Number(f64::from(self.uint(4)? as u32 as i32)),
            0xd3 => Value::Number(self.uint(8)? as i64 as f64),
            0xd9 => {
                let n = self.uint(1)? as usize;
                self.string(n)?
            }
            0xda => {
                let n = self.uint(2)? as usize;
                self.string(n)?
            }
            0xdb => {
                let n = self.uint(4)? as usize;
                self.string(n)?
            }
            0xdc => {
                let n = self.uint(2)? as usize;
                self.array(n, depth)?
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                self.array(n, depth)?
            }
            0xde => {
                let n = self.uint(2)? as usize;
                self.map(n, depth)?
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                self.map(n, depth)?
            }
            0xe0..=0xff => Value::Number(f64::from(c as i8)),
            _ => return Err(Bad::Format),
        })
    }
}

/// `cmsgpack.unpack`, `unpack_one` and `unpack_limit`.
fn unpack(lua: &Lua, args: &MultiValue, state: &RunState, name: &str, mode: Mode) -> mlua::Result<MultiValue> {
    let s = check_string(lua, args, 0, name)?;
    let bytes = s.as_bytes();
    let (limit, offset) = match mode {
        Mode::All => (0, 0),
        Mode::One => (1, opt_integer(lua, args, 1, name, 0)?),
        Mode::Limit => {
            if matches!(args.get(1), None | Some(Value::Nil)) {
                return Err(bad_argument(lua, 1, name, "number expected, got no value"));
            }
            (opt_integer(lua, args, 1, name, 0)?, opt_integer(lua, args, 2, name, 0)?)
        }
    };
    let len = bytes.len();
    if offset < 0 || limit < 0 {
        return Err(lua_error(
            lua,
            format!("Invalid request to unpack with offset of {offset} and limit of {len}."),
        ));
    }
    if offset as u64 > len as u64 {
        return Err(lua_error(
            lua,
            format!("Start offset {offset} greater than input length {len}."),
        ));
    }
    state.charge((len - offset as usize) as u64 / BYTES_PER_UNIT)?;
    let mut u = Unpacker {
        lua,
        state,
        s: &bytes,
        pos: offset as usize,
    };
    let mut out = Vec::new();
    while u.pos < len && (limit == 0 || (out.len() as i64) < limit) {
        if out.len() >= RESULTS_MAX {
            return Err(lua_error(
                lua,
                "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)".into(),
            ));
        }
        match u.value(0) {
            Ok(v) => out.push(v),
            Err(Bad::Missing) => return Err(lua_error(lua, "Missing bytes in input.".into())),
            Err(Bad::Format) => return Err(lua_error(lua, "Bad data format in input.".into())),
            Err(Bad::Deep) => {
                return Err(lua_error(
                    lua,
                    "stack overflow (in function mp_decode_to_lua_array)".into(),
                ))
            }
            Err(Bad::Lua(e)) => return Err(e),
        }
    }
    if limit > 0 {
        let next = if u.pos >= len { -1.0 } else { u.pos as f64 };
        out.insert(0, Value::Number(next));
    }
    Ok(MultiValue::from_iter(out))
}
