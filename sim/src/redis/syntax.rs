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
