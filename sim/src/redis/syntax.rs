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
