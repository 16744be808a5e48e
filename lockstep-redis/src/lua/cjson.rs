//! The `cjson` library of Redis scripts (lua-cjson 2.1.0 as Redis 7.0 ships it), in Rust so
//! that its work counts against a script's instruction budget.
//!
//! Written from the lua-cjson manual (<https://kyne.com.au/~mark/software/lua-cjson-manual.html>)
//! and from the replies of redis-server 7.0.15: `encode`, `decode`, `null` (a NULL light
//! userdata), `new`, `_NAME`/`_VERSION`, and the settings `encode_sparse_array`,
//! `encode_max_depth`, `decode_max_depth`, `encode_number_precision`, `encode_keep_buffer`,
//! `encode_invalid_numbers` and `decode_invalid_numbers`, with their defaults, their argument
//! checks and their error texts. Numbers are written with `%.14g` (the precision setting),
//! strings with `"`, `\`, `/`, the control characters and DEL escaped and every other byte as
//! is (no UTF-8 check either way, as lua-cjson), a table whose keys are all positive integers
//! is an array (`null` in its holes, unless it is excessively sparse), any other non-empty
//! table an object, the empty table `{}`. Decoding follows lua-cjson's tokens, its
//! `strtod` numbers (hexadecimal, `inf` and `nan` while `decode_invalid_numbers` is on) and its
//! `Expected <what> but found <token> at character <n>` errors.
//!
//! Differences: the settings are the script's (they start from the defaults at every script;
//! in Redis they stay in the VM until changed), and `new` returns a table of the same
//! functions sharing them; nesting is capped at [`DEPTH_CAP`] levels whatever the depth
//! settings say (Redis' lua-cjson stops near 2,600 when Lua's C stack is full); the output of
//! `encode` is capped at the VM's memory cap (`not enough memory`).

use super::pattern::{bad_argument, check_string, type_name};
use super::{fmt_g, lua_error, RunState, BYTES_PER_UNIT, LUA_MEMORY_LIMIT};
use mlua::{LightUserData, Lua, MultiValue, Table, Value};
use std::rc::Rc;

/// Deepest nesting `encode` and `decode` handle, whatever `encode_max_depth` and
/// `decode_max_depth` allow: each level is a Rust frame and holds a Lua reference.
pub(super) const DEPTH_CAP: i64 = 1000;

/// Units of the budget each value encoded or decoded costs, besides its bytes.
const VALUE_UNITS: u64 = 4;

/// `encode_invalid_numbers`' setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum InvalidNumbers {
    Off,
    On,
    Null,
}

/// lua-cjson's settings, for one script run.
#[derive(Clone, Copy, Debug)]
pub(super) struct Config {
    sparse_convert: bool,
    sparse_ratio: i64,
    sparse_safe: i64,
    encode_max_depth: i64,
    decode_max_depth: i64,
    precision: usize,
    keep_buffer: bool,
    encode_invalid: InvalidNumbers,
    decode_invalid: bool,
}

impl Default for Config {
    /// lua-cjson's defaults, as Redis 7.0 reports them.
    fn default() -> Self {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            precision: 14,
            keep_buffer: true,
            encode_invalid: InvalidNumbers::Off,
            decode_invalid: true,
        }
    }
}

/// `cjson.null`.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// The `cjson` table (a plain table: the sandbox shows scripts a read-only view of it).
pub(super) fn module(lua: &Lua, state: &Rc<RunState>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let st = state.clone();
    t.raw_set(
        "encode",
        lua.create_function(move |lua, args: MultiValue| encode(lua, &args, &st))?,
    )?;
    let st = state.clone();
    t.raw_set(
        "decode",
        lua.create_function(move |lua, args: MultiValue| decode(lua, &args, &st))?,
    )?;
    for name in [
        "encode_sparse_array",
        "encode_max_depth",
        "decode_max_depth",
        "encode_number_precision",
        "encode_keep_buffer",
        "encode_invalid_numbers",
        "decode_invalid_numbers",
    ] {
        let st = state.clone();
        t.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| setting(lua, &args, &st, name))?,
        )?;
    }
    let st = state.clone();
    t.raw_set("new", lua.create_function(move |lua, ()| module(lua, &st))?)?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

fn too_many(lua: &Lua, args: &MultiValue, max: usize, name: &str) -> mlua::Result<()> {
    if args.len() > max {
        return Err(bad_argument(lua, max, name, "found too many arguments"));
    }
    Ok(())
}

/// A boolean-or-option argument (`true`/`false`/`'on'`/`'off'`, and `'null'` where allowed);
/// `None` when absent.
fn option(lua: &Lua, args: &MultiValue, i: usize, name: &str, options: &[&str]) -> mlua::Result<Option<usize>> {
    let text = match args.get(i) {
        None | Some(Value::Nil) => return Ok(None),
        Some(Value::Boolean(b)) => return Ok(Some(usize::from(*b))),
        Some(Value::String(s)) => s.to_string_lossy(),
        Some(v @ (Value::Number(_) | Value::Integer(_))) => lua
            .coerce_string(v.clone())?
            .map(|s| s.to_string_lossy())
            .unwrap_or_default(),
        Some(_) => {
            return Err(bad_argument(
                lua,
                i,
                name,
                &format!("string expected, got {}", type_name(args, i)),
            ))
        }
    };
    match options.iter().position(|o| *o == text) {
        Some(k) => Ok(Some(k)),
        None => Err(bad_argument(lua, i, name, &format!("invalid option '{text}'"))),
    }
}

/// An integer argument in `min..=max`; `None` when absent.
fn integer(lua: &Lua, args: &MultiValue, i: usize, name: &str, min: i64, max: i64) -> mlua::Result<Option<i64>> {
    let v = match args.get(i) {
        None | Some(Value::Nil) => return Ok(None),
        Some(v) => v.clone(),
    };
    let Some(n) = lua.coerce_number(v)? else {
        return Err(bad_argument(
            lua,
            i,
            name,
            &format!("number expected, got {}", type_name(args, i)),
        ));
    };
    let n = if n.is_finite() { n.trunc() } else { f64::NAN };
    if !(n >= min as f64 && n <= max as f64) {
        return Err(bad_argument(
            lua,
            i,
            name,
            &format!("expected integer between {min} and {max}"),
        ));
    }
    Ok(Some(n as i64))
}

/// The settings' functions: each sets what it is given and returns the setting.
fn setting(lua: &Lua, args: &MultiValue, state: &RunState, name: &str) -> mlua::Result<MultiValue> {
    const INT_MAX: i64 = i32::MAX as i64;
    let mut cfg = state.cjson.get();
    let out: Vec<Value> = match name {
        "encode_sparse_array" => {
            too_many(lua, args, 3, name)?;
            if let Some(k) = option(lua, args, 0, name, &["off", "on"])? {
                cfg.sparse_convert = k == 1;
            }
            if let Some(n) = integer(lua, args, 1, name, 0, INT_MAX)? {
                cfg.sparse_ratio = n;
            }
            if let Some(n) = integer(lua, args, 2, name, 0, INT_MAX)? {
                cfg.sparse_safe = n;
            }
            vec![
                Value::Boolean(cfg.sparse_convert),
                Value::Number(cfg.sparse_ratio as f64),
                Value::Number(cfg.sparse_safe as f64),
            ]
        }
        "encode_max_depth" | "decode_max_depth" => {
            too_many(lua, args, 1, name)?;
            let slot = if name == "encode_max_depth" {
                &mut cfg.encode_max_depth
            } else {
                &mut cfg.decode_max_depth
            };
            if let Some(n) = integer(lua, args, 0, name, 1, INT_MAX)? {
                *slot = n;
            }
            vec![Value::Number(*slot as f64)]
        }
        "encode_number_precision" => {
            too_many(lua, args, 1, name)?;
            if let Some(n) = integer(lua, args, 0, name, 1, 14)? {
                cfg.precision = n as usize;
            }
            vec![Value::Number(cfg.precision as f64)]
        }
        "encode_keep_buffer" | "decode_invalid_numbers" => {
            too_many(lua, args, 1, name)?;
            let slot = if name == "encode_keep_buffer" {
                &mut cfg.keep_buffer
            } else {
                &mut cfg.decode_invalid
            };
            if let Some(k) = option(lua, args, 0, name, &["off", "on"])? {
                *slot = k == 1;
            }
            vec![Value::Boolean(*slot)]
        }
        _ => {
            too_many(lua, args, 1, name)?;
            if let Some(k) = option(lua, args, 0, name, &["off", "on", "null"])? {
                cfg.encode_invalid = [InvalidNumbers::Off, InvalidNumbers::On, InvalidNumbers::Null][k];
            }
            vec![match cfg.encode_invalid {
                InvalidNumbers::Off => Value::Boolean(false),
                InvalidNumbers::On => Value::Boolean(true),
                InvalidNumbers::Null => Value::String(lua.create_string("null")?),
            }]
        }
    };
    state.cjson.set(cfg);
    Ok(MultiValue::from_iter(out))
}

/// The error a value too large for the VM's memory raises.
fn out_of_memory() -> mlua::Error {
    mlua::Error::MemoryError("not enough memory".into())
}

struct Encoder<'a> {
    lua: &'a Lua,
    state: &'a RunState,
    cfg: Config,
    out: Vec<u8>,
}

impl Encoder<'_> {
    fn fail(&self, message: String) -> mlua::Error {
        lua_error(self.lua, message)
    }

    fn number(&mut self, n: f64) -> mlua::Result<()> {
        if !n.is_finite() {
            match self.cfg.encode_invalid {
                InvalidNumbers::Off => return Err(self.fail("Cannot serialise number: must not be NaN or Inf".into())),
                InvalidNumbers::Null => self.out.extend_from_slice(b"null"),
                InvalidNumbers::On => self.out.extend_from_slice(if n.is_nan() {
                    b"nan"
                } else if n > 0.0 {
                    b"inf"
                } else {
                    b"-inf"
                }),
            }
            return Ok(());
        }
        self.out.extend_from_slice(fmt_g(n, self.cfg.precision).as_bytes());
        Ok(())
    }

    fn string(&mut self, s: &[u8]) -> mlua::Result<()> {
        self.state.charge(s.len() as u64 / BYTES_PER_UNIT)?;
        if self.out.len().saturating_add(s.len()) > LUA_MEMORY_LIMIT {
            return Err(out_of_memory());
        }
        self.out.push(b'"');
        for (i, &c) in s.iter().enumerate() {
            match c {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                8 => self.out.extend_from_slice(b"\\b"),
                12 => self.out.extend_from_slice(b"\\f"),
                0..=31 | 127 => self.out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
                _ => self.out.push(c),
            }
            if i % 4096 == 4095 && self.out.len() > LUA_MEMORY_LIMIT {
                return Err(out_of_memory());
            }
        }
        self.out.push(b'"');
        Ok(())
    }

    fn value(&mut self, v: &Value, depth: i64) -> mlua::Result<()> {
        self.state.charge(VALUE_UNITS)?;
        if self.out.len() > LUA_MEMORY_LIMIT {
            return Err(out_of_memory());
        }
        match v {
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => self.out.extend_from_slice(b"null"),
            Value::Boolean(b) => self.out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Integer(i) => self.number(*i as f64)?,
            Value::Number(n) => self.number(*n)?,
            Value::String(s) => self.string(&s.as_bytes())?,
            Value::Table(t) => self.table(t, depth + 1)?,
            other => {
                let name = match other {
                    Value::Function(_) => "function",
                    Value::Thread(_) => "thread",
                    _ => "userdata",
                };
                return Err(self.fail(format!("Cannot serialise {name}: type not supported")));
            }
        }
        Ok(())
    }

    /// lua-cjson's array test: the largest key when every key is a positive integer (0 for
    /// the empty table), `None` for an object.
    fn array_length(&mut self, t: &Table) -> mlua::Result<Option<f64>> {
        let (mut max, mut items) = (0f64, 0f64);
        for pair in t.pairs::<Value, Value>() {
            let (k, _) = pair?;
            self.state.charge(VALUE_UNITS)?;
            let n = match k {
                Value::Number(n) => n,
                Value::Integer(i) => i as f64,
                _ => return Ok(None),
            };
            if !(n >= 1.0 && n.floor() == n) {
                return Ok(None);
            }
            max = max.max(n);
            items += 1.0;
        }
        let cfg = self.cfg;
        if cfg.sparse_ratio > 0 && max > items * cfg.sparse_ratio as f64 && max > cfg.sparse_safe as f64 {
            if !cfg.sparse_convert {
                return Err(self.fail("Cannot serialise table: excessively sparse array".into()));
            }
            return Ok(None);
        }
        Ok(Some(max))
    }

    fn table(&mut self, t: &Table, depth: i64) -> mlua::Result<()> {
        if depth > self.cfg.encode_max_depth.min(DEPTH_CAP) {
            return Err(self.fail(format!("Cannot serialise, excessive nesting ({depth})")));
        }
        match self.array_length(t)? {
            Some(len) if len > 0.0 => {
                self.out.push(b'[');
                let mut i = 1f64;
                while i <= len {
                    if i > 1.0 {
                        self.out.push(b',');
                    }
                    let v: Value = t.raw_get(i)?;
                    self.value(&v, depth)?;
                    i += 1.0;
                }
                self.out.push(b']');
            }
            _ => {
                self.out.push(b'{');
                let mut first = true;
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    if !first {
                        self.out.push(b',');
                    }
                    first = false;
                    match &k {
                        Value::String(s) => self.string(&s.as_bytes())?,
                        Value::Number(_) | Value::Integer(_) => {
                            let n = match k {
                                Value::Integer(i) => i as f64,
                                Value::Number(n) => n,
                                _ => 0.0,
                            };
                            self.out.push(b'"');
                            self.number(n)?;
                            self.out.push(b'"');
                        }
                        other => {
                            let name = match other {
                                Value::Boolean(_) => "boolean",
                                Value::Table(_) => "table",
                                Value::Function(_) => "function",
                                Value::Thread(_) => "thread",
                                _ => "userdata",
                            };
                            return Err(
                                self.fail(format!("Cannot serialise {name}: table key must be a number or string"))
                            );
                        }
                    }
                    self.out.push(b':');
                    self.value(&v, depth)?;
                }
                self.out.push(b'}');
            }
        }
        Ok(())
    }
}

/// `cjson.encode(value)`.
fn encode(lua: &Lua, args: &MultiValue, state: &RunState) -> mlua::Result<mlua::String> {
    if args.len() != 1 {
        return Err(bad_argument(lua, 0, "encode", "expected 1 argument"));
    }
    let mut e = Encoder {
        lua,
        state,
        cfg: state.cjson.get(),
        out: Vec::new(),
    };
    e.value(&args[0], 0)?;
    state.charge(e.out.len() as u64 / BYTES_PER_UNIT)?;
    lua.create_string(&e.out)
}

/// A token of lua-cjson's grammar.
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    /// A malformed token: what was wrong with it.
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Num(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(why) => why,
        }
    }
}

/// C's `strtod` on the start of `s`: the number and how many bytes it took (0: none).
pub(super) fn strtod(s: &[u8]) -> (f64, usize) {
    let mut i = 0;
    let negative = match s.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let sign = if negative { -1.0 } else { 1.0 };
    let rest = &s[i..];
    let starts = |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
    if starts(b"infinity") {
        return (sign * f64::INFINITY, i + 8);
    }
    if starts(b"inf") {
        return (sign * f64::INFINITY, i + 3);
    }
    if starts(b"nan") {
        let mut end = i + 3;
        if s.get(end) == Some(&b'(') {
            let close = s[end + 1..]
                .iter()
                .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'));
            if let Some(k) = close {
                if s[end + 1 + k] == b')' {
                    end += k + 2;
                }
            }
        }
        let nan = if negative { -f64::NAN } else { f64::NAN };
        return (nan, end);
    }
    if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        let (mut mantissa, mut exp, mut digits, mut j) = (0f64, 0i64, 0usize, 2);
        let mut seen_point = false;
        while j < rest.len() {
            let c = rest[j];
            if c == b'.' && !seen_point {
                seen_point = true;
            } else if let Some(d) = (c as char).to_digit(16) {
                mantissa = mantissa * 16.0 + d as f64;
                digits += 1;
                if seen_point {
                    exp -= 4;
                }
            } else {
                break;
            }
            j += 1;
        }
        if digits > 0 {
            if j < rest.len() && (rest[j] | 0x20) == b'p' {
                let (e, took) = exponent(&rest[j + 1..]);
                if took > 0 {
                    exp = exp.saturating_add(e);
                    j += 1 + took;
                }
            }
            let value = mantissa * 2f64.powi(exp.clamp(-4000, 4000) as i32);
            return (sign * value, i + j);
        }
        // Only the `0` is a number.
        return (sign * 0.0, i + 1);
    }
    let mut j = 0;
    let int_digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    j += int_digits;
    let mut frac_digits = 0;
    if rest.get(j) == Some(&b'.') {
        frac_digits = rest[j + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if int_digits + frac_digits > 0 {
            j += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return (0.0, 0);
    }
    if j < rest.len() && (rest[j] | 0x20) == b'e' {
        let (_, took) = exponent(&rest[j + 1..]);
        if took > 0 {
            j += 1 + took;
        }
    }
    let text = std::str::from_utf8(&rest[..j]).unwrap_or("0");
    let text = text.strip_suffix('.').unwrap_or(text);
    let value: f64 = text.parse().unwrap_or(0.0);
    (sign * value, i + j)
}

/// An exponent's `[+-]digits`: its value (saturated) and its length (0: none).
fn exponent(s: &[u8]) -> (i64, usize) {
    let (negative, start) = match s.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let digits = s[start..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return (0, 0);
    }
    let mut e: i64 = 0;
    for c in &s[start..start + digits] {
        e = e.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    (if negative { -e } else { e }, start + digits)
}

struct Decoder<'a> {
    lua: &'a Lua,
    state: &'a RunState,
    cfg: Config,
    s: &'a [u8],
    pos: usize,
    depth: i64,
}

impl Decoder<'_> {
    fn fail(&self, message: String) -> mlua::Error {
        lua_error(self.lua, message)
    }

    /// The next token and the (1-based) character its error names.
    fn next(&mut self) -> (Token, usize) {
        while self.pos < self.s.len() && matches!(self.s[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        let at = start + 1;
        let Some(&c) = self.s.get(start) else {
            return (Token::End, at);
        };
        let single = match c {
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b':' => Some(Token::Colon),
            b',' => Some(Token::Comma),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, at);
        }
        if c == b'"' {
            return self.string();
        }
        let rest = &self.s[start..];
        let starts_ci = |w: &[u8]| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w);
        let number_start = c == b'-' || c.is_ascii_digit();
        let invalid_start = c == b'+' || starts_ci(b"inf") || starts_ci(b"nan");
        if number_start || (self.cfg.decode_invalid && invalid_start) {
            if !self.cfg.decode_invalid && invalid_number(rest) {
                return (Token::Error("invalid number"), at);
            }
            let (n, took) = strtod(rest);
            if took == 0 {
                return (Token::Error("invalid number"), at);
            }
            self.pos += took;
            return (Token::Num(n), at);
        }
        for (word, token) in [
            (&b"true"[..], Token::Bool(true)),
            (b"false", Token::Bool(false)),
            (b"null", Token::Null),
        ] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return (token, at);
            }
        }
        (Token::Error("invalid token"), at)
    }

    /// A string token, the opening quote at `self.pos`.
    fn string(&mut self) -> (Token, usize) {
        let open = self.pos + 1;
        let mut out = Vec::new();
        let mut i = self.pos + 1;
        loop {
            let Some(&c) = self.s.get(i) else {
                self.pos = i;
                return (Token::Error("unexpected end of string"), i + 1);
            };
            match c {
                b'"' => break,
                b'\\' => {
                    let escape_at = i + 1;
                    let Some(&e) = self.s.get(i + 1) else {
                        self.pos = i;
                        return (Token::Error("invalid escape code"), escape_at);
                    };
                    let simple = match e {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(8),
                        b'f' => Some(12),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        _ => None,
                    };
                    if let Some(b) = simple {
                        out.push(b);
                        i += 2;
                    } else if e == b'u' {
                        match unicode_escape(&self.s[i..]) {
                            Some((cp, took)) => {
                                let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                                let mut buf = [0u8; 4];
                                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                                i += took;
                            }
                            None => {
                                self.pos = i;
                                return (Token::Error("invalid unicode escape code"), escape_at);
                            }
                        }
                    } else {
                        self.pos = i;
                        return (Token::Error("invalid escape code"), escape_at);
                    }
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        self.pos = i + 1;
        (Token::Str(out), open)
    }

    /// Enters an object or array opened at character `at`.
    fn descend(&mut self, at: usize) -> mlua::Result<()> {
        self.depth += 1;
        if self.depth > self.cfg.decode_max_depth.min(DEPTH_CAP) {
            return Err(self.fail(format!(
                "Found too many nested data structures ({}) at character {at}",
                self.depth
            )));
        }
        Ok(())
    }

    fn expected(&self, what: &str, token: &Token, at: usize) -> mlua::Error {
        self.fail(format!("Expected {what} but found {} at character {at}", token.name()))
    }

    fn value(&mut self, token: Token, at: usize) -> mlua::Result<Value> {
        self.state.charge(VALUE_UNITS)?;
        Ok(match token {
            Token::Str(b) => Value::String(self.lua.create_string(&b)?),
            Token::Num(n) => Value::Number(n),
            Token::Bool(b) => Value::Boolean(b),
            Token::Null => null(),
            Token::ObjBegin => Value::Table(self.object(at)?),
            Token::ArrBegin => Value::Table(self.array(at)?),
            other => return Err(self.expected("value", &other, at)),
        })
    }

    fn object(&mut self, at: usize) -> mlua::Result<Table> {
        self.descend(at)?;
        let t = self.lua.create_table()?;
        let (mut token, mut at) = self.next();
        if matches!(token, Token::ObjEnd) {
            self.depth -= 1;
            return Ok(t);
        }
        loop {
            let Token::Str(key) = token else {
                return Err(self.expected("object key string", &token, at));
            };
            let (colon, colon_at) = self.next();
            if !matches!(colon, Token::Colon) {
                return Err(self.expected("colon", &colon, colon_at));
            }
            let (v, v_at) = self.next();
            let v = self.value(v, v_at)?;
            t.raw_set(self.lua.create_string(&key)?, v)?;
            let (after, after_at) = self.next();
            match after {
                Token::ObjEnd => break,
                Token::Comma => (token, at) = self.next(),
                other => return Err(self.expected("comma or object end", &other, after_at)),
            }
        }
        self.depth -= 1;
        Ok(t)
    }

    fn array(&mut self, at: usize) -> mlua::Result<Table> {
        self.descend(at)?;
        let t = self.lua.create_table()?;
        let (mut token, mut at) = self.next();
        if matches!(token, Token::ArrEnd) {
            self.depth -= 1;
            return Ok(t);
        }
        let mut i = 1i64;
        loop {
            let v = self.value(token, at)?;
            t.raw_set(i, v)?;
            i += 1;
            let (after, after_at) = self.next();
            match after {
                Token::ArrEnd => break,
                Token::Comma => (token, at) = self.next(),
                other => return Err(self.expected("comma or array end", &other, after_at)),
            }
        }
        self.depth -= 1;
        Ok(t)
    }
}

/// What lua-cjson refuses while `decode_invalid_numbers` is off: a leading `+`, a hexadecimal
/// number, a leading zero, `inf`, `nan`.
fn invalid_number(s: &[u8]) -> bool {
    let mut p = s;
    if p.first() == Some(&b'+') {
        return true;
    }
    if p.first() == Some(&b'-') {
        p = &p[1..];
    }
    match p.first() {
        Some(b'0') => matches!(p.get(1), Some(c) if (c | 0x20) == b'x' || c.is_ascii_digit()),
        Some(c) if c.is_ascii_digit() => false,
        _ => {
            let ci = |w: &[u8]| p.len() >= w.len() && p[..w.len()].eq_ignore_ascii_case(w);
            ci(b"inf") || ci(b"nan")
        }
    }
}

/// A `\uXXXX` escape (and the low half after a high surrogate) at the start of `s`: the code
/// point and the bytes taken.
fn unicode_escape(s: &[u8]) -> Option<(u32, usize)> {
    let hex4 = |b: &[u8]| -> Option<u32> {
        if b.len() < 4 {
            return None;
        }
        let text = std::str::from_utf8(&b[..4]).ok()?;
        if !text.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(text, 16).ok()
    };
    let high = hex4(s.get(2..)?)?;
    match high {
        0xDC00..=0xDFFF => None,
        0xD800..=0xDBFF => {
            if s.get(6) != Some(&b'\\') || s.get(7) != Some(&b'u') {
                return None;
            }
            let low = hex4(s.get(8..)?)?;
            if !(0xDC00..=0xDFFF).contains(&low) {
                return None;
            }
            Some((0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), 12))
        }
        cp => Some((cp, 6)),
    }
}

/// `cjson.decode(text)`.
fn decode(lua: &Lua, args: &MultiValue, state: &RunState) -> mlua::Result<Value> {
    if args.len() != 1 {
        return Err(bad_argument(lua, 0, "decode", "expected 1 argument"));
    }
    let text = check_string(lua, args, 0, "decode")?;
    let bytes = text.as_bytes();
    state.charge(bytes.len() as u64 / BYTES_PER_UNIT)?;
    if bytes.len() >= 2 && (bytes[0] == 0 || bytes[1] == 0) {
        return Err(lua_error(lua, "JSON parser does not support UTF-16 or UTF-32".into()));
    }
    let mut d = Decoder {
        lua,
        state,
        cfg: state.cjson.get(),
        s: &bytes,
        pos: 0,
        depth: 0,
    };
    let (token, at) = d.next();
    let v = d.value(token, at)?;
    let (end, end_at) = d.next();
    if !matches!(end, Token::End) {
        return Err(d.expected("the end", &end, end_at));
    }
    Ok(v)
}
