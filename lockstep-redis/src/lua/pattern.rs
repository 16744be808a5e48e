//! Lua 5.1's string patterns (`string.find`, `string.match`, `string.gmatch`, `string.gsub`),
//! matched in Rust so that their work counts against a script's instruction budget.
//!
//! Lua's own matcher is a C function: the VM's instruction hook does not fire inside it, and a
//! backtracking pattern (`('a'):rep(1e5):find('.-.-.-.-b')`) runs for hours. This one follows
//! the semantics of the Lua 5.1 reference manual (§5.4.1 "Patterns", and §5.4's entries for the
//! four functions) as Lua 5.1 implements them: classes in the C locale, `%z`, `%b`, `%f`,
//! position captures, back-references, `^` anchoring `find`/`match`/`gsub` (in `gmatch` it is a
//! plain character), a pattern ending at its first `\0` (plain `find` compares the whole
//! pattern), `init` clamped to the subject's length, an empty `gmatch` match stepping one byte,
//! and `gsub`'s `%x` in a replacement string standing for `x`. Every step of the matcher (a
//! pattern item tried at a position, a character counted by an expansion or `%b`) costs one unit
//! of the script's budget; past it the script is stopped as a runaway loop is.
//!
//! Differences: recursion deeper than [`MAX_MATCH_DEPTH`] pattern items raises
//! `pattern too complex` (Lua 5.2's error; Lua 5.1 recurses until the C stack overflows);
//! argument errors always name the function by its library name (`bad argument #1 to 'find'`),
//! where Lua names it as the calling code does.

use super::{double_to_long_long, lua_error, RunState, LUA_MEMORY_LIMIT};
use mlua::{Lua, MultiValue, Value};

/// Lua 5.1's `LUA_MAXCAPTURES`.
const MAX_CAPTURES: usize = 32;
/// The deepest recursion of the matcher (one level per quantified item or capture).
pub(super) const MAX_MATCH_DEPTH: usize = 200;
/// The characters that make `find` match a pattern rather than search for the plain string.
const SPECIALS: &[u8] = b"^$*+?.([%-";

/// Why a match stopped.
pub(super) enum Stop {
    /// A Lua error with this message (a malformed pattern, a bad capture).
    Error(String),
    /// The script's budget ran out.
    Budget,
}

impl From<String> for Stop {
    fn from(s: String) -> Self {
        Stop::Error(s)
    }
}

#[derive(Clone, Copy)]
enum CapLen {
    Unfinished,
    Position,
    Len(usize),
}

/// One capture's value.
enum Capture<'a> {
    Bytes(&'a [u8]),
    /// A position capture, 1-based.
    Position(usize),
}

struct Matcher<'a> {
    src: &'a [u8],
    pat: &'a [u8],
    level: usize,
    captures: [(usize, CapLen); MAX_CAPTURES],
    /// Steps left before the budget runs out.
    left: u64,
    /// Steps taken.
    used: u64,
    depth: usize,
}

type Step<T> = Result<T, Stop>;

impl<'a> Matcher<'a> {
    fn new(src: &'a [u8], pat: &'a [u8], left: u64) -> Self {
        // Lua 5.1 reads a pattern as a C string.
        let pat = &pat[..pat.iter().position(|&c| c == 0).unwrap_or(pat.len())];
        Matcher {
            src,
            pat,
            level: 0,
            captures: [(0, CapLen::Unfinished); MAX_CAPTURES],
            left,
            used: 0,
            depth: 0,
        }
    }

    fn step(&mut self, n: u64) -> Step<()> {
        if self.left < n {
            self.used += self.left;
            self.left = 0;
            return Err(Stop::Budget);
        }
        self.left -= n;
        self.used += n;
        Ok(())
    }

    /// The pattern byte at `p`, `0` past the end (as C's terminator).
    fn pc(&self, p: usize) -> u8 {
        self.pat.get(p).copied().unwrap_or(0)
    }

    /// The index just past the single-character item at `p`.
    fn class_end(&self, mut p: usize) -> Step<usize> {
        let c = self.pc(p);
        p += 1;
        if c == b'%' {
            if p >= self.pat.len() {
                return Err(Stop::Error("malformed pattern (ends with '%')".into()));
            }
            return Ok(p + 1);
        }
        if c == b'[' {
            if self.pc(p) == b'^' {
                p += 1;
            }
            // The first character of a set is never its end (`[]]`, `[^]]`).
            loop {
                if p >= self.pat.len() {
                    return Err(Stop::Error("malformed pattern (missing ']')".into()));
                }
                let c = self.pat[p];
                p += 1;
                if c == b'%' && p < self.pat.len() {
                    p += 1;
                }
                if self.pc(p) == b']' {
                    break;
                }
            }
            return Ok(p + 1);
        }
        Ok(p)
    }

    /// Whether `c` is in the set `pat[p..=ec]` (`pat[p] == '['`, `pat[ec] == ']'`).
    fn match_set(&self, c: u8, mut p: usize, ec: usize) -> bool {
        let mut found = true;
        if self.pc(p + 1) == b'^' {
            found = false;
            p += 1;
        }
        p += 1;
        while p < ec {
            if self.pat[p] == b'%' {
                p += 1;
                if match_class(c, self.pc(p)) {
                    return found;
                }
            } else if self.pc(p + 1) == b'-' && p + 2 < ec {
                if self.pat[p] <= c && c <= self.pat[p + 2] {
                    return found;
                }
                p += 2;
            } else if self.pat[p] == c {
                return found;
            }
            p += 1;
        }
        !found
    }

    /// Whether the byte at `s` matches the single-character item `pat[p..ep]`.
    fn single_match(&self, s: usize, p: usize, ep: usize) -> bool {
        let Some(&c) = self.src.get(s) else {
            return false;
        };
        match self.pat[p] {
            b'.' => true,
            b'%' => match_class(c, self.pc(p + 1)),
            b'[' => self.match_set(c, p, ep - 1),
            other => other == c,
        }
    }

    /// Matches `pat[p..]` at `src[s..]`: the end of the match.
    fn do_match(&mut self, s: usize, p: usize) -> Step<Option<usize>> {
        if self.depth >= MAX_MATCH_DEPTH {
            return Err(Stop::Error("pattern too complex".into()));
        }
        self.depth += 1;
        let out = self.match_here(s, p);
        self.depth -= 1;
        out
    }

    fn match_here(&mut self, mut s: usize, mut p: usize) -> Step<Option<usize>> {
        loop {
            self.step(1)?;
            if p >= self.pat.len() {
                return Ok(Some(s));
            }
            match self.pat[p] {
                b'(' => {
                    return if self.pc(p + 1) == b')' {
                        self.start_capture(s, p + 2, CapLen::Position)
                    } else {
                        self.start_capture(s, p + 1, CapLen::Unfinished)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'%' if self.pc(p + 1) == b'b' => match self.match_balance(s, p + 2)? {
                    Some(e) => {
                        s = e;
                        p += 4;
                        continue;
                    }
                    None => return Ok(None),
                },
                b'%' if self.pc(p + 1) == b'f' => {
                    p += 2;
                    if self.pc(p) != b'[' {
                        return Err(Stop::Error("missing '[' after '%f' in pattern".into()));
                    }
                    let ep = self.class_end(p)?;
                    let previous = if s == 0 { 0 } else { self.src[s - 1] };
                    let current = self.src.get(s).copied().unwrap_or(0);
                    if !self.match_set(previous, p, ep - 1) && self.match_set(current, p, ep - 1) {
                        p = ep;
                        continue;
                    }
                    return Ok(None);
                }
                b'%' if self.pc(p + 1).is_ascii_digit() => match self.match_capture(s, self.pc(p + 1))? {
                    Some(e) => {
                        s = e;
                        p += 2;
                        continue;
                    }
                    None => return Ok(None),
                },
                b'$' if p + 1 == self.pat.len() => {
                    return Ok((s == self.src.len()).then_some(s));
                }
                _ => {}
            }
            let ep = self.class_end(p)?;
            let matched = self.single_match(s, p, ep);
            match self.pc(ep) {
                b'?' => {
                    if matched {
                        if let Some(e) = self.do_match(s + 1, ep + 1)? {
                            return Ok(Some(e));
                        }
                    }
                    p = ep + 1;
                }
                b'*' => return self.max_expand(s, p, ep),
                b'+' => {
                    return if matched {
                        self.max_expand(s + 1, p, ep)
                    } else {
                        Ok(None)
                    }
                }
                b'-' => return self.min_expand(s, p, ep),
                _ => {
                    if !matched {
                        return Ok(None);
                    }
                    s += 1;
                    p = ep;
                }
            }
        }
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Step<Option<usize>> {
        let mut i = 0;
        while self.single_match(s + i, p, ep) {
            self.step(1)?;
            i += 1;
        }
        loop {
            if let Some(e) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(e));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> Step<Option<usize>> {
        loop {
            if let Some(e) = self.do_match(s, ep + 1)? {
                return Ok(Some(e));
            }
            if !self.single_match(s, p, ep) {
                return Ok(None);
            }
            s += 1;
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: CapLen) -> Step<Option<usize>> {
        if self.level >= MAX_CAPTURES {
            return Err(Stop::Error("too many captures".into()));
        }
        self.captures[self.level] = (s, what);
        self.level += 1;
        let out = self.do_match(s, p)?;
        if out.is_none() {
            self.level -= 1;
        }
        Ok(out)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Step<Option<usize>> {
        let Some(l) = (0..self.level)
            .rev()
            .find(|&l| matches!(self.captures[l].1, CapLen::Unfinished))
        else {
            return Err(Stop::Error("invalid pattern capture".into()));
        };
        self.captures[l].1 = CapLen::Len(s - self.captures[l].0);
        let out = self.do_match(s, p)?;
        if out.is_none() {
            self.captures[l].1 = CapLen::Unfinished;
        }
        Ok(out)
    }

    fn match_balance(&mut self, s: usize, p: usize) -> Step<Option<usize>> {
        if p + 1 >= self.pat.len() {
            return Err(Stop::Error("unbalanced pattern".into()));
        }
        let (open, close) = (self.pat[p], self.pat[p + 1]);
        if self.src.get(s) != Some(&open) {
            return Ok(None);
        }
        let mut depth = 1usize;
        let mut i = s + 1;
        while i < self.src.len() {
            self.step(1)?;
            let c = self.src[i];
            if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(Some(i + 1));
                }
            } else if c == open {
                depth += 1;
            }
            i += 1;
        }
        Ok(None)
    }

    fn match_capture(&mut self, s: usize, digit: u8) -> Step<Option<usize>> {
        let l = usize::from(digit).wrapping_sub(usize::from(b'1'));
        if l >= self.level {
            return Err(Stop::Error("invalid capture index".into()));
        }
        let (start, len) = self.captures[l];
        let len = match len {
            CapLen::Unfinished => return Err(Stop::Error("invalid capture index".into())),
            CapLen::Position => return Ok(None),
            CapLen::Len(len) => len,
        };
        self.step(len as u64 / 8)?;
        let end = s.saturating_add(len);
        Ok((end <= self.src.len() && self.src[start..start + len] == self.src[s..end]).then_some(end))
    }

    /// Capture `i` of the last match `s..e` (the whole match when there are no captures).
    fn capture(&self, i: usize, s: usize, e: usize) -> Step<Capture<'a>> {
        if i >= self.level {
            return if i == 0 {
                Ok(Capture::Bytes(&self.src[s..e]))
            } else {
                Err(Stop::Error("invalid capture index".into()))
            };
        }
        match self.captures[i] {
            (_, CapLen::Unfinished) => Err(Stop::Error("unfinished capture".into())),
            (start, CapLen::Position) => Ok(Capture::Position(start + 1)),
            (start, CapLen::Len(len)) => Ok(Capture::Bytes(&self.src[start..start + len])),
        }
    }

    /// Every capture of the last match (or the match `s..e` itself when there is none and
    /// `whole`).
    fn captures(&self, s: usize, e: usize, whole: bool) -> Step<Vec<Capture<'a>>> {
        let n = if self.level == 0 && whole { 1 } else { self.level };
        (0..n).map(|i| self.capture(i, s, e)).collect()
    }
}

/// C's `isalpha` and friends in the C locale, for the class letter `class` (`%a`, `%A`, ...);
/// any other character matches itself.
fn match_class(c: u8, class: u8) -> bool {
    let matched = match class.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        // C's isspace also counts the vertical tab.
        b's' => matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return class == c,
    };
    if class.is_ascii_uppercase() {
        !matched
    } else {
        matched
    }
}

// ---------------------------------------------------------------------------------------------
// The Lua functions
// ---------------------------------------------------------------------------------------------

pub(super) fn type_name(args: &MultiValue, i: usize) -> &'static str {
    match args.get(i) {
        None => "no value",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::Error(_) | Value::LightUserData(_) | Value::UserData(_)) => "userdata",
        Some(v) => v.type_name(),
    }
}

pub(super) fn bad_argument(lua: &Lua, i: usize, fname: &str, why: &str) -> mlua::Error {
    lua_error(lua, format!("bad argument #{} to '{fname}' ({why})", i + 1))
}

/// `luaL_checklstring`: a string, or a number converted to one.
pub(super) fn check_string(lua: &Lua, args: &MultiValue, i: usize, fname: &str) -> mlua::Result<mlua::String> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v @ (Value::Integer(_) | Value::Number(_))) => lua
            .coerce_string(v.clone())?
            .ok_or_else(|| bad_argument(lua, i, fname, "string expected, got number")),
        _ => Err(bad_argument(
            lua,
            i,
            fname,
            &format!("string expected, got {}", type_name(args, i)),
        )),
    }
}

/// `luaL_optinteger`: `default` when absent or nil, else a number (or a string convertible to
/// one), truncated as x86-64 does it.
pub(super) fn opt_integer(lua: &Lua, args: &MultiValue, i: usize, fname: &str, default: i64) -> mlua::Result<i64> {
    match args.get(i) {
        None | Some(Value::Nil) => Ok(default),
        Some(v) => match lua.coerce_number(v.clone())? {
            Some(n) => Ok(double_to_long_long(n)),
            None => Err(bad_argument(
                lua,
                i,
                fname,
                &format!("number expected, got {}", type_name(args, i)),
            )),
        },
    }
}

/// Lua 5.1's `posrelat`.
fn relative_position(pos: i64, len: usize) -> i64 {
    let pos = if pos < 0 {
        pos.saturating_add(len as i64 + 1)
    } else {
        pos
    };
    pos.max(0)
}

fn capture_values(lua: &Lua, captures: Vec<Capture<'_>>) -> mlua::Result<Vec<Value>> {
    captures
        .into_iter()
        .map(|c| match c {
            Capture::Bytes(b) => lua.create_string(b).map(Value::String),
            Capture::Position(p) => Ok(Value::Number(p as f64)),
        })
        .collect()
}

/// Runs `f` with the steps left in the script's budget and charges what it used; a budget
/// that ran out stops the script.
fn metered<T>(lua: &Lua, state: &RunState, f: impl FnOnce(u64) -> (Step<T>, u64)) -> mlua::Result<T> {
    let (out, used) = f(state.left());
    state.charge(used)?;
    match out {
        Ok(v) => Ok(v),
        Err(Stop::Error(e)) => Err(lua_error(lua, e)),
        Err(Stop::Budget) => Err(state.kill()),
    }
}

/// `string.find` (`find`) and `string.match`.
pub(super) fn find(lua: &Lua, args: MultiValue, state: &RunState, find: bool) -> mlua::Result<MultiValue> {
    let fname = if find { "find" } else { "match" };
    let s = check_string(lua, &args, 0, fname)?;
    let p = check_string(lua, &args, 1, fname)?;
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    let init = relative_position(opt_integer(lua, &args, 2, fname, 1)?, src.len()) - 1;
    let init = init.clamp(0, src.len() as i64) as usize;
    let c_pattern = &pat[..pat.iter().position(|&c| c == 0).unwrap_or(pat.len())];
    let plain = matches!(args.get(3), Some(v) if !matches!(v, Value::Nil | Value::Boolean(false)));
    if find && (plain || !c_pattern.iter().any(|c| SPECIALS.contains(c))) {
        // A plain search for the whole pattern (Lua compares all of its bytes here).
        let found = metered(lua, state, |left| {
            let (hay, needle): (&[u8], &[u8]) = (&src[init..], &pat);
            // Charged by the bytes compared, and stopped once they are more than the budget has
            // left (issue 48: a search for a long missing needle in 30 MB compared for minutes
            // before it was charged).
            let limit = left.saturating_mul(8);
            let mut compared = 0u64;
            let mut at = None;
            if needle.is_empty() {
                at = Some(0);
            } else if needle.len() <= hay.len() {
                for i in 0..=hay.len() - needle.len() {
                    let same = hay[i..].iter().zip(needle).take_while(|(a, b)| a == b).count();
                    compared += same as u64 + 1;
                    if same == needle.len() {
                        at = Some(i);
                        break;
                    }
                    if compared > limit {
                        return (Err(Stop::Budget), compared / 8 + 1);
                    }
                }
            }
            (Ok(at), compared / 8 + 1)
        })?;
        return Ok(match found {
            Some(at) => MultiValue::from_iter([
                Value::Number((init + at + 1) as f64),
                Value::Number((init + at + pat.len()) as f64),
            ]),
            None => MultiValue::from_iter([Value::Nil]),
        });
    }
    let found = metered(lua, state, |left| {
        let mut m = Matcher::new(&src, &pat, left);
        let (anchor, start) = if m.pc(0) == b'^' { (true, 1) } else { (false, 0) };
        let mut s1 = init;
        let out = loop {
            m.level = 0;
            match m.do_match(s1, start) {
                Ok(Some(e)) => {
                    break m.captures(s1, e, !find).map(|c| Some((s1, e, c)));
                }
                Ok(None) => {}
                Err(stop) => break Err(stop),
            }
            s1 += 1;
            if anchor || s1 > src.len() {
                break Ok(None);
            }
        };
        let used = m.used;
        (out, used)
    })?;
    let Some((s1, e, captures)) = found else {
        return Ok(MultiValue::from_iter([Value::Nil]));
    };
    let mut out = Vec::new();
    if find {
        out.push(Value::Number((s1 + 1) as f64));
        out.push(Value::Number(e as f64));
    }
    out.extend(capture_values(lua, captures)?);
    Ok(MultiValue::from_iter(out))
}

/// `string.gmatch`: checks and converts the arguments, and returns the iterator the sandbox's
/// helper makes (registry name `factory`), which calls [`gmatch_step`].
pub(super) fn gmatch(lua: &Lua, args: MultiValue, factory: &str) -> mlua::Result<Value> {
    let s = check_string(lua, &args, 0, "gmatch")?;
    let p = check_string(lua, &args, 1, "gmatch")?;
    lua.named_registry_value::<mlua::Function>(factory)?.call((s, p))
}

/// One step of a `string.gmatch` iterator: `gmatch_step(s, p)` checks and converts the
/// arguments (returning them), `gmatch_step(s, p, pos)` finds the next match from byte `pos`
/// and returns where the next search starts and the captures, or nothing.
pub(super) fn gmatch_step(lua: &Lua, args: MultiValue, state: &RunState) -> mlua::Result<MultiValue> {
    let s = check_string(lua, &args, 0, "gmatch")?;
    let p = check_string(lua, &args, 1, "gmatch")?;
    let Some(pos) = args.get(2) else {
        return Ok(MultiValue::from_iter([Value::String(s), Value::String(p)]));
    };
    let pos = match pos {
        Value::Number(n) => *n as usize,
        Value::Integer(i) => *i as usize,
        _ => 0,
    };
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    let found = metered(lua, state, |left| {
        let mut m = Matcher::new(&src, &pat, left);
        let mut at = pos;
        let out = loop {
            if at > src.len() {
                break Ok(None);
            }
            m.level = 0;
            match m.do_match(at, 0) {
                Ok(Some(e)) => {
                    let next = if e == at { e + 1 } else { e };
                    break m.captures(at, e, true).map(|c| Some((next, c)));
                }
                Ok(None) => at += 1,
                Err(stop) => break Err(stop),
            }
        };
        let used = m.used;
        (out, used)
    })?;
    let Some((next, captures)) = found else {
        return Ok(MultiValue::new());
    };
    let mut out = vec![Value::Number(next as f64)];
    out.extend(capture_values(lua, captures)?);
    Ok(MultiValue::from_iter(out))
}

/// `string.gsub`.
pub(super) fn gsub(lua: &Lua, args: MultiValue, state: &RunState) -> mlua::Result<MultiValue> {
    let s = check_string(lua, &args, 0, "gsub")?;
    let p = check_string(lua, &args, 1, "gsub")?;
    let src_bytes = s.as_bytes();
    let src: &[u8] = &src_bytes;
    // `luaL_optint`: an `int`.
    let max_n = opt_integer(lua, &args, 3, "gsub", src.len() as i64 + 1)? as i32 as i64;
    let repl = args.get(2).cloned().unwrap_or(Value::Nil);
    let repl_text = match &repl {
        Value::String(_) | Value::Integer(_) | Value::Number(_) => {
            lua.coerce_string(repl.clone())?.map(|r| r.as_bytes().to_vec())
        }
        Value::Function(_) | Value::Table(_) => None,
        _ => return Err(bad_argument(lua, 2, "gsub", "string/function/table expected")),
    };
    let pat_bytes = p.as_bytes();
    let mut m = Matcher::new(src, &pat_bytes, state.left());
    let (anchor, start) = if m.pc(0) == b'^' { (true, 1) } else { (false, 0) };
    let mut out: Vec<u8> = Vec::new();
    let mut n: i64 = 0;
    let mut at = 0usize;
    // Charges the steps taken so far and renews the matcher's allowance (a replacement
    // function runs Lua code, which counts on its own).
    let settle = |m: &mut Matcher<'_>| -> mlua::Result<()> {
        let used = std::mem::take(&mut m.used);
        state.charge(used)?;
        m.left = state.left();
        Ok(())
    };
    let stopped = |m: &mut Matcher<'_>, stop: Stop| -> mlua::Error {
        if let Err(e) = settle(m) {
            return e;
        }
        match stop {
            Stop::Error(e) => lua_error(lua, e),
            Stop::Budget => state.kill(),
        }
    };
    while n < max_n {
        m.level = 0;
        let e = match m.do_match(at, start) {
            Ok(e) => e,
            Err(stop) => return Err(stopped(&mut m, stop)),
        };
        if let Some(e) = e {
            n += 1;
            match &repl_text {
                Some(text) => {
                    let mut i = 0;
                    while i < text.len() {
                        let c = text[i];
                        if c != b'%' {
                            out.push(c);
                        } else {
                            i += 1;
                            // Lua 5.1 reads the string's terminator after a final `%`.
                            let d = text.get(i).copied().unwrap_or(0);
                            if !d.is_ascii_digit() {
                                out.push(d);
                            } else if d == b'0' {
                                out.extend_from_slice(&src[at..e]);
                            } else {
                                match m.capture(usize::from(d - b'1'), at, e) {
                                    Ok(Capture::Bytes(b)) => out.extend_from_slice(b),
                                    Ok(Capture::Position(p)) => out.extend_from_slice(p.to_string().as_bytes()),
                                    Err(stop) => return Err(stopped(&mut m, stop)),
                                }
                            }
                        }
                        i += 1;
                    }
                }
                None => {
                    let value = match &repl {
                        Value::Table(t) => {
                            let key = match m.capture(0, at, e) {
                                Ok(c) => capture_values(lua, vec![c])?,
                                Err(stop) => return Err(stopped(&mut m, stop)),
                            };
                            settle(&mut m)?;
                            t.get::<Value>(key.into_iter().next().unwrap_or(Value::Nil))?
                        }
                        Value::Function(f) => {
                            let captures = match m.captures(at, e, true) {
                                Ok(c) => capture_values(lua, c)?,
                                Err(stop) => return Err(stopped(&mut m, stop)),
                            };
                            settle(&mut m)?;
                            let value = f.call::<Value>(MultiValue::from_iter(captures))?;
                            m.left = state.left();
                            value
                        }
                        _ => Value::Nil,
                    };
                    match value {
                        Value::Nil | Value::Boolean(false) => out.extend_from_slice(&src[at..e]),
                        Value::String(r) => out.extend_from_slice(&r.as_bytes()),
                        v @ (Value::Integer(_) | Value::Number(_)) => {
                            if let Some(r) = lua.coerce_string(v)? {
                                out.extend_from_slice(&r.as_bytes());
                            }
                        }
                        other => {
                            let name = type_name(&MultiValue::from_iter([other]), 0);
                            return Err(lua_error(lua, format!("invalid replacement value (a {name})")));
                        }
                    }
                }
            }
            if out.len() > LUA_MEMORY_LIMIT {
                return Err(mlua::Error::MemoryError("not enough memory".into()));
            }
        }
        match e {
            Some(e) if e > at => at = e,
            _ if at < src.len() => {
                out.push(src[at]);
                at += 1;
            }
            _ => break,
        }
        if anchor {
            break;
        }
    }
    out.extend_from_slice(&src[at..]);
    m.used += out.len() as u64 / 8;
    settle(&mut m)?;
    Ok(MultiValue::from_iter([
        Value::String(lua.create_string(&out)?),
        Value::Number(n as f64),
    ]))
}

/// `string.rep`: refused at once when the result could not fit in the VM's memory, and
/// charged by the bytes it makes.
pub(super) fn rep(lua: &Lua, args: MultiValue, state: &RunState) -> mlua::Result<mlua::String> {
    let s = check_string(lua, &args, 0, "rep")?;
    let n = match args.get(1) {
        None | Some(Value::Nil) => {
            return Err(bad_argument(
                lua,
                1,
                "rep",
                &format!("number expected, got {}", type_name(&args, 1)),
            ))
        }
        Some(_) => opt_integer(lua, &args, 1, "rep", 0)?,
    };
    let bytes = s.as_bytes();
    if n <= 0 || bytes.is_empty() {
        return lua.create_string("");
    }
    let total = (bytes.len() as u128) * (n as u128);
    if total > (LUA_MEMORY_LIMIT.saturating_sub(lua.used_memory())) as u128 {
        return Err(mlua::Error::MemoryError("not enough memory".into()));
    }
    state.charge(total as u64 / 8 + 1)?;
    lua.create_string(bytes.repeat(n as usize))
}
