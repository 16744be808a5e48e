//! The `struct` library of Redis scripts (Roberto Ierusalimschy's `struct`, as Redis 7.0 ships
//! it): `struct.pack(fmt, ...)`, `struct.unpack(fmt, data [, init])`, `struct.size(fmt)`, in
//! Rust so that its work counts against a script's instruction budget.
//!
//! Written from the library's documented format (<http://www.inf.puc-rio.br/~roberto/struct/>)
//! and from the replies of redis-server 7.0.15 (x86-64: `long` and `size_t` are 8 bytes, the
//! native order little-endian, the largest alignment 8): `<` and `>` set the byte order, `!n`
//! the alignment (`!` alone: 8), `b`/`B`, `h`/`H`, `l`/`L`, `T`, `i[n]`/`I[n]` (n up to 32,
//! default 4) integers, `f`/`d` floats, `c[n]` characters (`c0`: the whole string when packing,
//! the previous number's count when unpacking), `s` a zero-terminated string, `x` a padding
//! byte, spaces ignored. Numbers are converted to integers as C casts them on x86-64, and only
//! the low 8 bytes of a wider integer carry a value (the rest are zero), as the library does;
//! its error texts are Redis'.

use super::pattern::{bad_argument, check_string, opt_integer, type_name};
use super::{double_to_long_long, lua_error, RunState, BYTES_PER_UNIT, LUA_MEMORY_LIMIT};
use mlua::{Lua, MultiValue, Table, Value};
use std::rc::Rc;

/// The widest integer format (`MAXINTSIZE`).
const MAX_INT_SIZE: usize = 32;
/// The largest alignment `!` gives.
const MAX_ALIGN: usize = 8;
/// Units of the budget each item packed or unpacked costs, besides its bytes.
const VALUE_UNITS: u64 = 4;

/// The `struct` table (a plain table: the sandbox shows scripts a read-only view of it).
pub(super) fn module(lua: &Lua, state: &Rc<RunState>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let st = state.clone();
    t.raw_set(
        "pack",
        lua.create_function(move |lua, args: MultiValue| pack(lua, &args, &st))?,
    )?;
    let st = state.clone();
    t.raw_set(
        "unpack",
        lua.create_function(move |lua, args: MultiValue| unpack(lua, &args, &st))?,
    )?;
    let st = state.clone();
    t.raw_set(
        "size",
        lua.create_function(move |lua, args: MultiValue| size(lua, &args, &st))?,
    )?;
    Ok(t)
}

/// The format's state while it is read.
struct Format<'a> {
    fmt: &'a [u8],
    pos: usize,
    little: bool,
    align: usize,
}

/// One data option of a format: its letter and size.
struct Item {
    opt: u8,
    size: usize,
}

impl Format<'_> {
    /// A count after an option (`default` when there is none).
    fn number(&mut self, lua: &Lua, default: usize) -> mlua::Result<usize> {
        if !self.fmt.get(self.pos).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i64 = 0;
        while let Some(d) = self.fmt.get(self.pos).filter(|c| c.is_ascii_digit()) {
            let d = i64::from(d - b'0');
            if a > i64::from(i32::MAX) / 10 || a * 10 > i64::from(i32::MAX) - d {
                return Err(lua_error(lua, "integral size overflow".into()));
            }
            a = a * 10 + d;
            self.pos += 1;
        }
        Ok(a as usize)
    }

    /// The next data option, past the byte-order and alignment options; `None` at the end.
    fn next(&mut self, lua: &Lua, fname: &str) -> mlua::Result<Option<Item>> {
        loop {
            let Some(&opt) = self.fmt.get(self.pos) else {
                return Ok(None);
            };
            self.pos += 1;
            let size = match opt {
                b' ' => continue,
                b'>' => {
                    self.little = false;
                    continue;
                }
                b'<' => {
                    self.little = true;
                    continue;
                }
                b'!' => {
                    let a = self.number(lua, MAX_ALIGN)?;
                    if !a.is_power_of_two() {
                        return Err(lua_error(lua, format!("alignment {a} is not a power of 2")));
                    }
                    self.align = a;
                    continue;
                }
                b'b' | b'B' | b'x' => 1,
                b'h' | b'H' => 2,
                b'f' => 4,
                b'l' | b'L' | b'T' | b'd' => 8,
                b'c' => self.number(lua, 1)?,
                b'i' | b'I' => {
                    let n = self.number(lua, 4)?;
                    if n > MAX_INT_SIZE {
                        return Err(lua_error(
                            lua,
                            format!("integral size {n} is larger than limit of {MAX_INT_SIZE}"),
                        ));
                    }
                    n
                }
                b's' => 0,
                other => {
                    return Err(bad_argument(
                        lua,
                        0,
                        fname,
                        &format!("invalid format option '{}'", other as char),
                    ))
                }
            };
            return Ok(Some(Item { opt, size }));
        }
    }

    /// The padding before an item at `len` (`self.align` is a power of 2).
    fn padding(&self, len: usize, item: &Item) -> usize {
        if item.size == 0 || item.opt == b'c' {
            return 0;
        }
        let align = item.size.min(self.align);
        (align - (len & (align - 1))) & (align - 1)
    }
}

fn format_of(lua: &Lua, args: &MultiValue, fname: &str) -> mlua::Result<Vec<u8>> {
    Ok(check_string(lua, args, 0, fname)?.as_bytes().to_vec())
}

/// `(unsigned long)` of a Lua number as x86-64 computes it.
fn to_unsigned(n: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if n < 0.0 {
        double_to_long_long(n) as u64
    } else if n < TWO_63 {
        n as u64
    } else {
        (double_to_long_long(n - TWO_63) as u64) ^ (1 << 63)
    }
}

/// `struct.pack(fmt, ...)`.
fn pack(lua: &Lua, args: &MultiValue, state: &RunState) -> mlua::Result<mlua::String> {
    let fmt = format_of(lua, args, "pack")?;
    state.charge(fmt.len() as u64 / BYTES_PER_UNIT)?;
    let mut f = Format {
        fmt: &fmt,
        pos: 0,
        little: true,
        align: 1,
    };
    let mut out: Vec<u8> = Vec::new();
    let mut arg = 1;
    while let Some(item) = f.next(lua, "pack")? {
        state.charge(VALUE_UNITS)?;
        let pad = f.padding(out.len(), &item);
        out.resize(out.len() + pad, 0);
        match item.opt {
            b'x' => out.push(0),
            b'c' | b's' => {
                let s = check_string(lua, args, arg, "pack")?;
                arg += 1;
                let bytes = s.as_bytes();
                let mut n = item.size;
                if item.opt == b'c' {
                    if n == 0 {
                        n = bytes.len();
                    }
                    if bytes.len() < n {
                        return Err(bad_argument(lua, arg, "pack", "string too short"));
                    }
                } else {
                    n = bytes.len();
                }
                state.charge(n as u64 / BYTES_PER_UNIT)?;
                if out.len().saturating_add(n) > LUA_MEMORY_LIMIT {
                    return Err(mlua::Error::MemoryError("not enough memory".into()));
                }
                out.extend_from_slice(&bytes[..n]);
                if item.opt == b's' {
                    out.push(0);
                }
            }
            opt => {
                let n = match args.get(arg) {
                    Some(v) => lua.coerce_number(v.clone())?,
                    None => None,
                };
                let Some(n) = n else {
                    let got = if args.get(arg).is_none() {
                        "nil"
                    } else {
                        type_name(args, arg)
                    };
                    return Err(bad_argument(lua, arg, "pack", &format!("number expected, got {got}")));
                };
                arg += 1;
                let mut bytes: Vec<u8> = match opt {
                    b'f' => (n as f32).to_le_bytes().to_vec(),
                    b'd' => n.to_le_bytes().to_vec(),
                    _ => {
                        let value = if n < 0.0 {
                            double_to_long_long(n) as u64
                        } else {
                            to_unsigned(n)
                        };
                        let mut b = value.to_le_bytes().to_vec();
                        b.resize(item.size, 0);
                        b
                    }
                };
                if !f.little {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
        }
    }
    lua.create_string(&out)
}

/// `struct.unpack(fmt, data [, init])`.
fn unpack(lua: &Lua, args: &MultiValue, state: &RunState) -> mlua::Result<MultiValue> {
    let fmt = format_of(lua, args, "unpack")?;
    let data = check_string(lua, args, 1, "unpack")?;
    let data = data.as_bytes();
    let init = opt_integer(lua, args, 2, "unpack", 1)?;
    if init <= 0 {
        return Err(bad_argument(lua, 2, "unpack", "offset must be 1 or greater"));
    }
    state.charge(fmt.len() as u64 / BYTES_PER_UNIT)?;
    let mut pos = (init - 1) as usize;
    let mut f = Format {
        fmt: &fmt,
        pos: 0,
        little: true,
        align: 1,
    };
    let mut out: Vec<Value> = Vec::new();
    let too_short = || bad_argument(lua, 1, "unpack", "data string too short");
    while let Some(mut item) = f.next(lua, "unpack")? {
        state.charge(VALUE_UNITS)?;
        if out.len() >= 7990 {
            return Err(lua_error(lua, "stack overflow (too many results)".into()));
        }
        pos = pos.saturating_add(f.padding(pos, &item));
        if pos.saturating_add(item.size) > data.len() {
            return Err(too_short());
        }
        match item.opt {
            b'x' => {}
            b'c' => {
                if item.size == 0 {
                    let previous = match out.pop() {
                        Some(v) => lua.coerce_number(v)?,
                        None => None,
                    };
                    let Some(n) = previous else {
                        return Err(lua_error(lua, "format 'c0' needs a previous size".into()));
                    };
                    // `(size_t)` of a negative count is past any data.
                    item.size = if n < 0.0 { usize::MAX } else { n as usize };
                    if pos.saturating_add(item.size) > data.len() {
                        return Err(too_short());
                    }
                }
                state.charge(item.size as u64 / BYTES_PER_UNIT)?;
                out.push(Value::String(lua.create_string(&data[pos..pos + item.size])?));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&c| c == 0) else {
                    return Err(lua_error(lua, "unfinished string in data".into()));
                };
                state.charge(end as u64 / BYTES_PER_UNIT)?;
                out.push(Value::String(lua.create_string(&data[pos..pos + end])?));
                item.size = end + 1;
            }
            opt => {
                let mut bytes = data[pos..pos + item.size].to_vec();
                if !f.little {
                    bytes.reverse();
                }
                let n = match opt {
                    b'f' => f64::from(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
                    b'd' => f64::from_le_bytes(std::array::from_fn(|i| bytes[i])),
                    _ => {
                        // Only the low 8 bytes carry a value (`bytes` is little-endian now).
                        let mut value: u64 = 0;
                        for (i, b) in bytes.iter().enumerate().take(8) {
                            value |= u64::from(*b) << (8 * i);
                        }
                        let signed = opt.is_ascii_lowercase();
                        if signed && item.size < 8 {
                            let mask = u64::MAX << (item.size * 8 - 1);
                            if value & mask != 0 {
                                value |= mask;
                            }
                        }
                        if signed {
                            value as i64 as f64
                        } else {
                            value as f64
                        }
                    }
                };
                out.push(Value::Number(n));
            }
        }
        pos += item.size;
    }
    out.push(Value::Number((pos + 1) as f64));
    Ok(MultiValue::from_iter(out))
}

/// `struct.size(fmt)`.
fn size(lua: &Lua, args: &MultiValue, state: &RunState) -> mlua::Result<f64> {
    let fmt = format_of(lua, args, "size")?;
    state.charge(fmt.len() as u64 / BYTES_PER_UNIT)?;
    let mut f = Format {
        fmt: &fmt,
        pos: 0,
        little: true,
        align: 1,
    };
    let mut pos: usize = 0;
    while let Some(item) = f.next(lua, "size")? {
        if item.opt == b's' {
            return Err(bad_argument(lua, 0, "size", "option 's' has no fixed size"));
        }
        if item.opt == b'c' && item.size == 0 {
            return Err(bad_argument(lua, 0, "size", "option 'c0' has no fixed size"));
        }
        pos = pos.saturating_add(f.padding(pos, &item)).saturating_add(item.size);
    }
    Ok(pos as f64)
}
