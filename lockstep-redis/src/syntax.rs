//! Argument parsing shared by the command modules: Redis' integer rule (`string2ll`) and the error
//! texts many commands share.

/// `ERR value is not an integer or out of range`.
pub(crate) const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// `ERR syntax error`.
pub(crate) const SYNTAX: &str = "ERR syntax error";

/// Redis' `string2ll`: an optional `-`, no `+`, no leading zeros, no spaces, fits in `i64`.
pub fn parse_ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if v > i64::MIN.unsigned_abs() {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

/// `WRONGTYPE Operation against a key holding the wrong kind of value`.
pub(crate) const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Whether `arg` is `name`, any case.
pub(crate) fn eq_ic(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

/// `ERR wrong number of arguments for 'NAME' command`.
pub(crate) fn arity_error(fullname: &str) -> super::reply::Reply {
    super::reply::Reply::Error(format!("ERR wrong number of arguments for '{fullname}' command"))
}

/// `ERR invalid expire time in 'NAME' command`.
pub(crate) fn invalid_expire(name: &str) -> super::reply::Reply {
    super::reply::Reply::Error(format!("ERR invalid expire time in '{name}' command"))
}

/// An error text on one line (Redis replaces CR and LF in error replies with spaces).
pub(crate) fn sanitize(s: String) -> String {
    if s.contains(['\r', '\n']) {
        s.replace(['\r', '\n'], " ")
    } else {
        s
    }
}

/// Redis's `string2ld`/`getLongDoubleFromObject` for the float arguments of `INCRBYFLOAT`,
/// `HINCRBYFLOAT`, scores...: a decimal or exponent form without surrounding spaces; NaN is not a
/// number. (`inf` parses, and the command decides what an infinity means.)
pub(crate) fn parse_double(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    if text.is_empty()
        || text.len() > 5000
        || text.starts_with(|c: char| c.is_ascii_whitespace())
        || text.ends_with(|c: char| c.is_ascii_whitespace())
    {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let v = match lower.trim_start_matches(['+', '-']) {
        "inf" | "infinity" => {
            if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        _ => text.parse::<f64>().ok()?,
    };
    (!v.is_nan()).then_some(v)
}

/// A float as `INCRBYFLOAT` and `HINCRBYFLOAT` answer it (Redis's `LD_STR_HUMAN`: fixed point,
/// no exponent, trailing zeros cut): the shortest text that reads back as the same `f64`.
pub(crate) fn human_double(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    format!("{v}")
}

/// A blocking command's timeout in seconds (`getTimeoutFromObjectOrReply` of Redis 7.0): a
/// float, rounded up to ms; 0 blocks forever; what does not fit in an `i64` of ms counts as
/// negative, as the x86-64 conversion makes it.
pub fn blocking_timeout_ms(raw: &[u8]) -> Result<i64, super::reply::Reply> {
    let parsed = std::str::from_utf8(raw)
        .ok()
        .filter(|s| !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_whitespace()))
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|v| !v.is_nan());
    let Some(seconds) = parsed else {
        return Err(super::reply::Reply::error("ERR timeout is not a float or out of range"));
    };
    // Whole seconds are exact (Redis reads a long double, whose 64-bit mantissa holds every
    // such timeout; an f64 would round 9223372036854775 s up past the range).
    if let Some(whole) = std::str::from_utf8(raw).ok().and_then(|s| s.parse::<i128>().ok()) {
        let ms = whole * 1000;
        // Past the range the x86-64 conversion gives LLONG_MIN: negative, as Redis 7.0 answers.
        if ms < 0 || ms > i128::from(i64::MAX) {
            return Err(super::reply::Reply::error("ERR timeout is negative"));
        }
        return Ok(ms as i64);
    }
    let ms = (seconds * 1000.0).ceil();
    let ms = if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&ms) {
        ms as i64
    } else {
        i64::MIN
    };
    if ms < 0 {
        return Err(super::reply::Reply::error("ERR timeout is negative"));
    }
    Ok(ms)
}

/// Whether `text` matches the glob `pattern` (`*`, `?`, `[abc]`, `[^a-z]`, `\` escapes), as
/// Redis' `stringmatchlen` (case-sensitive).
pub(crate) fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    // Backtracking point for the last `*`: (pattern index after it, text index it resumes at).
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    // Consecutive stars are one star.
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    let (matched, next) = class_match(pattern, p, text[t]);
                    if matched {
                        p = next;
                        t += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() && pattern[p + 1] == text[t] => {
                    p += 2;
                    t += 1;
                    continue;
                }
                // An escape of another character: no match here.
                b'\\' if p + 1 < pattern.len() => {}
                c if c == text[t] => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((after, resume)) => {
                p = after;
                t = resume + 1;
                star = Some((after, resume + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches `c` against the class that opens at `pattern[open] == '['`: whether it matched, and
/// the index after the class. An unclosed class runs to the end of the pattern, as in Redis.
fn class_match(pattern: &[u8], open: usize, c: u8) -> (bool, usize) {
    let mut i = open + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    while i < pattern.len() && pattern[i] != b']' {
        if pattern[i] == b'\\' && i + 1 < pattern.len() {
            matched |= pattern[i + 1] == c;
            i += 2;
        } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']' {
            let (lo, hi) = (pattern[i].min(pattern[i + 2]), pattern[i].max(pattern[i + 2]));
            matched |= (lo..=hi).contains(&c);
            i += 3;
        } else {
            matched |= pattern[i] == c;
            i += 1;
        }
    }
    // `i` is at the closing `]` (or the end of an unclosed class).
    (matched != negate, (i + 1).min(pattern.len()))
}

/// The most elements a random-pick command with a negative count (`SRANDMEMBER`, `HRANDFIELD`,
/// `ZRANDMEMBER key -N`) may answer: Redis builds any size its client asked for; here a
/// 10-byte command must not make the server allocate gigabytes (docs/redis-differences.md).
pub(crate) const RANDOM_REPLY_MAX: u64 = 1 << 20;
