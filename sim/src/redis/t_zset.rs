//! Sorted sets (`ZADD`, `ZRANGE`, `ZUNIONSTORE`, ...): the [`ZSet`] value and one handler per
//! Redis 7.0 sorted-set command, as Redis 7.0.15 answers them in RESP2.
//!
//! **What is modelled.** Every sorted-set command of Redis 7.0 ([`ZSET_COMMANDS`] lists them
//! with Redis' arity and flags): their argument parsing in Redis' order (so the same error wins
//! when several apply), their error texts, and their reply shapes in RESP2. Scores are written
//! the way Redis 7.0 writes doubles (`%.17g`, `inf`/`-inf`: `1.1` reads back as
//! `1.1000000000000001`), a score of `-0` is kept as `0` (as Redis' small encoding does), and
//! members are ordered by score, then by their bytes. An emptied sorted set is deleted. Sets
//! (`SADD`) count as sorted sets of score 1 for `ZUNION`/`ZINTER`/`ZDIFF` and their `STORE`
//! forms and `ZINTERCARD`, as in Redis. Writes go through the keyspace's mutation API
//! ([`Keyspace::value_mut`], [`Keyspace::insert`], [`Keyspace::remove`], with
//! [`Keyspace::grew`]/[`Keyspace::shrank`]), so lazy expiry, `WATCH` and the memory count see
//! them; a command that changes nothing does not touch its key.
//!
//! **Blocking forms.** [`bzpopmin`], [`bzpopmax`] and [`bzmpop`] never block: they answer what
//! Redis answers for them inside `MULTI` or a script (the first non-empty key popped, or a nil
//! array when every key is empty or missing), so a server that blocks connections serves them by
//! calling the handler again when one of the keys is written: a nil array means "still
//! blocked", anything else is the reply to send. Their timeout is checked first (and for
//! `BZMPOP` after `numkeys`, `MIN|MAX` and `COUNT`, as in Redis) with
//! [`super::command::blocking_timeout_ms`]; the server reads the timeout itself with that function.
//!
//! **Cost.** A [`ZSet`] keeps a `BTreeMap` from member to score and a `BTreeSet` of
//! `(score, member)`, so adding, removing, scoring and popping cost O(log n), a range by score
//! or by lex O(log n + k) for k answers. A `BTreeSet` cannot count what lies before an element,
//! so ranks cost O(log n + min(r, n − r)) for rank r (`ZRANK`, `ZREVRANK`, and the start of a
//! `ZRANGE`/`ZREMRANGEBYRANK` by index, walked from the nearer end) where Redis' skiplist takes
//! O(log n); counting a range (`ZCOUNT`, `ZLEXCOUNT`) costs O(log n + k). `ZRANDMEMBER` with a
//! count costs O(n + count). `ZSCAN` costs O(log n + count) per call.
//!
//! **Left out, or different.** RESP3 shapes: replies are RESP2's (scores as bulk strings, flat
//! `WITHSCORES` arrays, `ZPOPMIN key count` flat), since [`Reply`] has no double or nested form
//! per protocol. `OBJECT ENCODING` answers by the set's size now (`listpack` up to 128
//! members of up to 64 bytes, else `skiplist`), where Redis never converts back. Lex ranges on
//! a set whose scores differ (which Redis leaves unspecified) answer as Redis' small
//! (`listpack`) encoding does at every size. `ZRANDMEMBER` draws from a generator seeded by
//! the key, the set's size and the time, so calls in the same millisecond on the same set draw
//! alike; its order without repetition is random, not Redis'. `ZSCAN` of a set too big for
//! the small encoding walks members in byte order with a cursor made of a member's first
//! 8 bytes (members sharing them come in one answer); Redis walks its hash table. Hex scores
//! (`0x10`) are read as C's `strtod` reads them, decimal ones with Rust's correctly rounded
//! parser; `ZRANK ... WITHSCORE` (Redis 7.2) is not there, as in 7.0.

use super::admin::glob_match;
use super::command::blocking_timeout_ms;
use super::keyspace::{Keyspace, Value, ITEM_OVERHEAD_BYTES};
use super::lua::fmt_g;
use super::syntax::{parse_ll, NOT_INTEGER, SYNTAX};
use super::Reply;
use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{self, Excluded, Included, Unbounded};

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_FLOAT: &str = "ERR value is not a valid float";
const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";
const RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
const RANGE_NOT_LEX: &str = "ERR min or max not valid string range item";

/// What each member costs in [`Value::used_bytes`] besides its bytes and
/// [`ITEM_OVERHEAD_BYTES`]: its score.
const SCORE_BYTES: usize = 8;

/// Redis 7.0's `zset-max-listpack-entries` and `zset-max-listpack-value` defaults: up to these a
/// sorted set is `listpack`-encoded (`OBJECT ENCODING`, and `ZSCAN` answers it whole).
pub(crate) const LISTPACK_MAX_ENTRIES: usize = 128;
/// See [`LISTPACK_MAX_ENTRIES`].
pub(crate) const LISTPACK_MAX_VALUE: usize = 64;

/// The sorted-set commands of Redis 7.0 as `(name, arity, flags)`, as `COMMAND INFO` of
/// redis-server 7.0.15 reports them (arity negative: at least that many arguments, the name
/// included). The handler of each is the function of this module with the command's name.
pub(crate) const ZSET_COMMANDS: &[(&str, i32, &str)] = &[
    ("zadd", -4, "write denyoom fast"),
    ("zincrby", 4, "write denyoom fast"),
    ("zrem", -3, "write fast"),
    ("zcard", 2, "readonly fast"),
    ("zcount", 4, "readonly fast"),
    ("zlexcount", 4, "readonly fast"),
    ("zscore", 3, "readonly fast"),
    ("zmscore", -3, "readonly fast"),
    ("zrank", 3, "readonly fast"),
    ("zrevrank", 3, "readonly fast"),
    ("zrange", -4, "readonly"),
    ("zrangestore", -5, "write denyoom"),
    ("zrevrange", -4, "readonly"),
    ("zrangebyscore", -4, "readonly"),
    ("zrevrangebyscore", -4, "readonly"),
    ("zrangebylex", -4, "readonly"),
    ("zrevrangebylex", -4, "readonly"),
    ("zremrangebyrank", 4, "write"),
    ("zremrangebyscore", 4, "write"),
    ("zremrangebylex", 4, "write"),
    ("zpopmin", -2, "write fast"),
    ("zpopmax", -2, "write fast"),
    ("zmpop", -4, "write movablekeys"),
    ("bzpopmin", -3, "write noscript blocking fast"),
    ("bzpopmax", -3, "write noscript blocking fast"),
    ("bzmpop", -5, "write blocking movablekeys"),
    ("zrandmember", -2, "readonly"),
    ("zunion", -3, "readonly movablekeys"),
    ("zinter", -3, "readonly movablekeys"),
    ("zdiff", -3, "readonly movablekeys"),
    ("zunionstore", -4, "write denyoom movablekeys"),
    ("zinterstore", -4, "write denyoom movablekeys"),
    ("zdiffstore", -4, "write denyoom movablekeys"),
    ("zintercard", -3, "readonly movablekeys"),
    ("zscan", -3, "readonly"),
];

/// A score in the ordered index: an `f64` that is never NaN, ordered numerically (`-0` and
/// `0` are equal, as Redis compares them with `<` and `==`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Score(pub(crate) f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        // Scores are never NaN (every write rejects it), so this is a total order.
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// A sorted set: members with a score each, ordered by `(score, member bytes)`.
///
/// Two indexes that always agree: member → score (a `BTreeMap`) and the ordered set of
/// `(score, member)` (a `BTreeSet`), plus the members' total length for
/// [`Value::used_bytes`]. Scores are never NaN and never `-0` ([`ZSet::insert`] makes it `0`).
#[derive(Clone, Debug, Default)]
pub struct ZSet {
    scores: BTreeMap<Bytes, f64>,
    order: BTreeSet<(Score, Bytes)>,
    member_bytes: usize,
}

impl PartialEq for ZSet {
    fn eq(&self, other: &Self) -> bool {
        self.scores.len() == other.scores.len()
            && self
                .scores
                .iter()
                .zip(&other.scores)
                .all(|((m1, s1), (m2, s2))| m1 == m2 && s1.to_bits() == s2.to_bits())
    }
}

impl Eq for ZSet {}

/// One end of a range by score (`zslParseRange`): the score and whether it is excluded (`(`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ScoreRange {
    min: f64,
    min_ex: bool,
    max: f64,
    max_ex: bool,
}

impl ScoreRange {
    fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.min_ex || self.max_ex))
    }

    fn gte_min(&self, s: f64) -> bool {
        if self.min_ex {
            s > self.min
        } else {
            s >= self.min
        }
    }

    fn lte_max(&self, s: f64) -> bool {
        if self.max_ex {
            s < self.max
        } else {
            s <= self.max
        }
    }
}

/// One end of a range by lex (`zslParseLexRangeItem`): `-`, `+`, or `[m` / `(m`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum LexItem {
    /// `-`: before every member.
    Min,
    /// `+`: after every member.
    Max,
    /// `[m` (`false`) or `(m` (`true`: excluded).
    Value(Bytes, bool),
}

/// A range by lex: `min` and `max` items.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LexRange {
    min: LexItem,
    max: LexItem,
}

impl LexRange {
    fn is_empty(&self) -> bool {
        // sdscmplex of the two ends, the sentinels below and above everything.
        let rank = |i: &LexItem| match i {
            LexItem::Min => 0,
            LexItem::Value(..) => 1,
            LexItem::Max => 2,
        };
        let cmp = match (&self.min, &self.max) {
            (LexItem::Value(a, _), LexItem::Value(b, _)) => a.cmp(b),
            (a, b) => rank(a).cmp(&rank(b)),
        };
        let excluded = |i: &LexItem| !matches!(i, LexItem::Value(_, false));
        cmp == Ordering::Greater || (cmp == Ordering::Equal && (excluded(&self.min) || excluded(&self.max)))
    }

    fn gte_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexItem::Min => true,
            LexItem::Max => false,
            LexItem::Value(v, true) => m > v.as_ref(),
            LexItem::Value(v, false) => m >= v.as_ref(),
        }
    }

    fn lte_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexItem::Max => true,
            LexItem::Min => false,
            LexItem::Value(v, true) => m < v.as_ref(),
            LexItem::Value(v, false) => m <= v.as_ref(),
        }
    }
}

/// The smallest `f64` above `x` (`x` not NaN, not `+inf`).
fn next_up(x: f64) -> f64 {
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let bits = x.to_bits();
    f64::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}

impl ZSet {
    /// An empty sorted set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of members (`ZCARD`). O(1).
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there is no member.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The score of `member` (`ZSCORE`). O(log n).
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// What this set counts for in [`Value::used_bytes`]: each member's bytes,
    /// [`ITEM_OVERHEAD_BYTES`] and 8 for its score. O(1).
    pub fn used_bytes(&self) -> usize {
        self.member_bytes + self.len() * (ITEM_OVERHEAD_BYTES + SCORE_BYTES)
    }

    /// Sets `member`'s score (`-0` becomes `0`; `score` must not be NaN) and returns its
    /// previous score. O(log n).
    pub fn insert(&mut self, member: Bytes, score: f64) -> Option<f64> {
        debug_assert!(!score.is_nan());
        let score = if score == 0.0 { 0.0 } else { score };
        let old = self.scores.insert(member.clone(), score);
        match old {
            Some(old) => {
                self.order.remove(&(Score(old), member.clone()));
            }
            None => self.member_bytes += member.len(),
        }
        self.order.insert((Score(score), member));
        old
    }

    /// Removes `member` and returns its score. O(log n).
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let (member, score) = self.scores.remove_entry(member)?;
        self.member_bytes -= member.len();
        self.order.remove(&(Score(score), member));
        Some(score)
    }

    /// Removes and returns the lowest (`max` false) or highest member. O(log n).
    pub fn pop(&mut self, max: bool) -> Option<(Bytes, f64)> {
        let (Score(score), member) = if max {
            self.order.pop_last()?
        } else {
            self.order.pop_first()?
        };
        self.scores.remove(&member);
        self.member_bytes -= member.len();
        Some((member, score))
    }

    /// Every member with its score, lowest first (`ZRANGE key 0 -1`).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&Bytes, f64)> {
        self.order.iter().map(|(s, m)| (m, s.0))
    }

    /// Every member with its score in member byte order.
    pub fn iter_by_member(&self) -> impl Iterator<Item = (&Bytes, f64)> {
        self.scores.iter().map(|(m, s)| (m, *s))
    }

    /// The 0-based rank of `member`, lowest score first (`reverse`: highest first).
    /// O(log n + min(rank, n − rank)): counts from the nearer end.
    pub fn rank(&self, member: &[u8], reverse: bool) -> Option<usize> {
        let (key_member, score) = self.scores.get_key_value(member)?;
        let key = (Score(*score), key_member.clone());
        let mut below = self.order.range(..&key);
        let mut above = self.order.range((Excluded(&key), Unbounded));
        let mut i = 0;
        let forward = loop {
            if below.next().is_none() {
                break i;
            }
            if above.next().is_none() {
                break self.len() - 1 - i;
            }
            i += 1;
        };
        Some(if reverse { self.len() - 1 - forward } else { forward })
    }

    /// The members at ranks `start..=end` (lowest first, or highest first if `reverse`), both
    /// below `len()`, `start <= end`. O(log n + min(start, n − end) + k).
    fn by_rank(&self, start: usize, end: usize, reverse: bool) -> Vec<(Bytes, f64)> {
        let n = self.len();
        // Ranks from the lowest end.
        let (lo, hi) = if reverse {
            (n - 1 - end, n - 1 - start)
        } else {
            (start, end)
        };
        let take = hi - lo + 1;
        let mut out: Vec<(Bytes, f64)> = if lo <= n - 1 - hi {
            self.order
                .iter()
                .skip(lo)
                .take(take)
                .map(|(s, m)| (m.clone(), s.0))
                .collect()
        } else {
            let mut v: Vec<_> = self
                .order
                .iter()
                .rev()
                .skip(n - 1 - hi)
                .take(take)
                .map(|(s, m)| (m.clone(), s.0))
                .collect();
            v.reverse();
            v
        };
        if reverse {
            out.reverse();
        }
        out
    }

    /// The `(score, member)` bounds of the members whose score is in `range` (non-empty).
    fn score_bounds(range: &ScoreRange) -> Option<(Bound<(Score, Bytes)>, Bound<(Score, Bytes)>)> {
        if range.is_empty() {
            return None;
        }
        let low = if !range.min_ex {
            Included((Score(range.min), Bytes::new()))
        } else if range.min == f64::INFINITY {
            return None;
        } else {
            Included((Score(next_up(range.min)), Bytes::new()))
        };
        let high = if range.max_ex {
            Excluded((Score(range.max), Bytes::new()))
        } else if range.max == f64::INFINITY {
            Unbounded
        } else {
            Excluded((Score(next_up(range.max)), Bytes::new()))
        };
        // The range is not empty, so `low` is not above `high`; `low == high` (Included vs
        // Excluded) is an empty but valid range.
        Some((low, high))
    }

    /// The members whose score is in `range`, lowest first. O(log n) to start, O(1) a member.
    fn in_score_range<'a>(&'a self, range: &ScoreRange) -> impl DoubleEndedIterator<Item = (&'a Bytes, f64)> + 'a {
        Self::score_bounds(range)
            .map(|bounds| self.order.range(bounds))
            .into_iter()
            .flatten()
            .map(|(s, m)| (m, s.0))
    }

    /// The members in lex `range`, in set order (lowest score first), or highest first with
    /// `reverse`: as Redis' `zzlFirstInLexRange`/`zzlLastInLexRange` and the walk after it,
    /// which is the members in the range in byte order when all scores are equal (then
    /// O(log n) to start), and Redis' small encoding's answer otherwise (then O(n)).
    fn in_lex_range<'a>(&'a self, range: &LexRange, reverse: bool) -> Box<dyn Iterator<Item = (&'a Bytes, f64)> + 'a> {
        let (Some((Score(first), first_m)), Some((Score(last), last_m))) = (self.order.first(), self.order.last())
        else {
            return Box::new(std::iter::empty());
        };
        if range.is_empty() || !range.gte_min(last_m) || !range.lte_max(first_m) {
            return Box::new(std::iter::empty());
        }
        if first == last {
            let s = Score(*first);
            let low = match &range.min {
                LexItem::Min => Unbounded,
                LexItem::Max => return Box::new(std::iter::empty()),
                LexItem::Value(v, false) => Included((s, v.clone())),
                LexItem::Value(v, true) => Excluded((s, v.clone())),
            };
            let high = match &range.max {
                LexItem::Max => Unbounded,
                LexItem::Min => return Box::new(std::iter::empty()),
                LexItem::Value(v, false) => Included((s, v.clone())),
                LexItem::Value(v, true) => Excluded((s, v.clone())),
            };
            let it = self.order.range((low, high)).map(|(s, m)| (m, s.0));
            return if reverse { Box::new(it.rev()) } else { Box::new(it) };
        }
        let range = range.clone();
        if reverse {
            let mut it = self.order.iter().rev().skip_while({
                let range = range.clone();
                move |(_, m)| !range.lte_max(m)
            });
            let first = it.next().filter(|(_, m)| range.gte_min(m));
            let done = first.is_none();
            Box::new(
                first
                    .into_iter()
                    .chain(it.take_while(move |(_, m)| !done && range.gte_min(m)))
                    .map(|(s, m)| (m, s.0)),
            )
        } else {
            let mut it = self.order.iter().skip_while({
                let range = range.clone();
                move |(_, m)| !range.gte_min(m)
            });
            let first = it.next().filter(|(_, m)| range.lte_max(m));
            let done = first.is_none();
            Box::new(
                first
                    .into_iter()
                    .chain(it.take_while(move |(_, m)| !done && range.lte_max(m)))
                    .map(|(s, m)| (m, s.0)),
            )
        }
    }

    /// Whether Redis 7.0 with its default configuration keeps this set `listpack`-encoded.
    /// O(1) above 128 members, else O(n).
    pub fn is_listpack_sized(&self) -> bool {
        self.len() <= LISTPACK_MAX_ENTRIES && self.scores.keys().all(|m| m.len() <= LISTPACK_MAX_VALUE)
    }

    /// Checks that the two indexes and the byte count agree (tests).
    #[cfg(test)]
    fn check(&self) {
        assert_eq!(self.scores.len(), self.order.len());
        for (s, m) in &self.order {
            assert_eq!(self.scores.get(m).map(|x| x.to_bits()), Some(s.0.to_bits()));
        }
        assert_eq!(self.member_bytes, self.scores.keys().map(|m| m.len()).sum::<usize>());
    }
}

impl FromIterator<(Bytes, f64)> for ZSet {
    fn from_iter<I: IntoIterator<Item = (Bytes, f64)>>(iter: I) -> Self {
        let mut z = ZSet::new();
        for (m, s) in iter {
            z.insert(m, s);
        }
        z
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing.

/// C's `strtod` on `s` (no leading whitespace skipped: callers check it): the value and how many
/// bytes it read (0: no number), and whether it overflowed or underflowed to zero (`ERANGE`).
fn strtod(s: &[u8]) -> (f64, usize, bool) {
    let mut i = 0;
    let negative = match s.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = |v: f64| if negative { -v } else { v };
    let rest = &s[i..];
    let starts_ic = |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
    if starts_ic(b"infinity") {
        return (sign(f64::INFINITY), i + 8, false);
    }
    if starts_ic(b"inf") {
        return (sign(f64::INFINITY), i + 3, false);
    }
    if starts_ic(b"nan") {
        return (f64::NAN, i + 3, false);
    }
    if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        if let Some((v, used)) = strtod_hex(&rest[2..]) {
            return (sign(v), i + 2 + used, v.is_infinite());
        }
        // "0x" with no hex digit: strtod reads the "0".
        return (sign(0.0), i + 1, false);
    }
    let start = i;
    let digits = |j: &mut usize| {
        let from = *j;
        while s.get(*j).is_some_and(u8::is_ascii_digit) {
            *j += 1;
        }
        *j - from
    };
    let mut j = i;
    let int_digits = digits(&mut j);
    let mut frac_digits = 0;
    if s.get(j) == Some(&b'.') {
        let mut k = j + 1;
        frac_digits = digits(&mut k);
        if int_digits + frac_digits > 0 {
            j = k;
        }
    }
    if int_digits + frac_digits == 0 {
        return (0.0, 0, false);
    }
    if matches!(s.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(s.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        if digits(&mut k) > 0 {
            j = k;
        }
    }
    let text = std::str::from_utf8(&s[start..j]).unwrap_or("0");
    let v: f64 = text.parse().unwrap_or(0.0);
    let nonzero_digit = s[start..j]
        .iter()
        .take_while(|c| !matches!(c, b'e' | b'E'))
        .any(|c| (b'1'..=b'9').contains(c));
    let erange = v.is_infinite() || (v == 0.0 && nonzero_digit);
    (sign(v), j, erange)
}

/// The hex digits (and optional `.` fraction and `p` exponent) of a `0x` float: value, bytes read.
fn strtod_hex(s: &[u8]) -> Option<(f64, usize)> {
    let mut v = 0.0f64;
    let mut j = 0;
    let mut any = false;
    while let Some(d) = s.get(j).and_then(|c| (*c as char).to_digit(16)) {
        v = v * 16.0 + f64::from(d);
        j += 1;
        any = true;
    }
    if s.get(j) == Some(&b'.') {
        let mut k = j + 1;
        let mut scale = 1.0 / 16.0;
        let mut frac = false;
        while let Some(d) = s.get(k).and_then(|c| (*c as char).to_digit(16)) {
            v += f64::from(d) * scale;
            scale /= 16.0;
            k += 1;
            frac = true;
        }
        if any || frac {
            j = k;
            any = true;
        }
    }
    if !any {
        return None;
    }
    if matches!(s.get(j), Some(b'p' | b'P')) {
        let mut k = j + 1;
        let neg = match s.get(k) {
            Some(b'-') => {
                k += 1;
                true
            }
            Some(b'+') => {
                k += 1;
                false
            }
            _ => false,
        };
        let from = k;
        let mut e: i32 = 0;
        while let Some(d) = s.get(k).filter(|c| c.is_ascii_digit()) {
            e = e.saturating_mul(10).saturating_add(i32::from(d - b'0'));
            k += 1;
        }
        if k > from {
            v *= 2f64.powi(if neg { -e } else { e });
            j = k;
        }
    }
    Some((v, j))
}

/// A score as `ZADD`, `ZINCRBY` and `WEIGHTS` read it (`string2d` of Redis 7.0): the whole
/// argument a number, no leading space, not NaN, no overflow or underflow to zero.
pub(crate) fn parse_score(raw: &[u8]) -> Option<f64> {
    if raw.is_empty() || raw[0].is_ascii_whitespace() || raw[0] == 0x0b || raw[0] == 0x0c {
        return None;
    }
    let (v, used, erange) = strtod(raw);
    (used == raw.len() && !erange && !v.is_nan()).then_some(v)
}

/// One end of a score range (`zslParseRange`): `(` excludes; `strtod` must read the rest whole
/// (it skips leading space; an empty rest reads as 0); NaN is refused; overflow is not.
fn parse_range_end(raw: &[u8]) -> Option<(f64, bool)> {
    let (rest, ex) = match raw.first() {
        Some(b'(') => (&raw[1..], true),
        _ => (raw, false),
    };
    let skip = rest
        .iter()
        .take_while(|c| c.is_ascii_whitespace() || **c == 0x0b || **c == 0x0c)
        .count();
    let body = &rest[skip..];
    let (v, used, _) = strtod(body);
    if used == 0 {
        // Nothing read: strtod leaves the end at the start, so only an empty argument passes.
        return rest.is_empty().then_some((0.0, ex));
    }
    (used == body.len() && !v.is_nan()).then_some((v, ex))
}

/// A range by score, or `ERR min or max is not a float`.
fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Reply> {
    match (parse_range_end(min), parse_range_end(max)) {
        (Some((min, min_ex)), Some((max, max_ex))) => Ok(ScoreRange {
            min,
            min_ex,
            max,
            max_ex,
        }),
        _ => Err(Reply::error(RANGE_NOT_FLOAT)),
    }
}

fn parse_lex_item(raw: &Bytes) -> Option<LexItem> {
    match raw.first() {
        Some(b'+') if raw.len() == 1 => Some(LexItem::Max),
        Some(b'-') if raw.len() == 1 => Some(LexItem::Min),
        Some(b'(') => Some(LexItem::Value(raw.slice(1..), true)),
        Some(b'[') => Some(LexItem::Value(raw.slice(1..), false)),
        _ => None,
    }
}

/// A range by lex, or `ERR min or max not valid string range item`.
fn parse_lex_range(min: &Bytes, max: &Bytes) -> Result<LexRange, Reply> {
    match (parse_lex_item(min), parse_lex_item(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(Reply::error(RANGE_NOT_LEX)),
    }
}

/// `getLongFromObjectOrReply`: an integer, or `ERR value is not an integer or out of range`.
fn parse_long(raw: &[u8]) -> Result<i64, Reply> {
    parse_ll(raw).ok_or_else(|| Reply::error(NOT_INTEGER))
}

fn eq_ic(raw: &[u8], word: &str) -> bool {
    raw.eq_ignore_ascii_case(word.as_bytes())
}

/// A double as Redis 7.0 writes it in RESP2 (`%.17g`, `inf`, `-inf`).
pub(crate) fn score_reply(score: f64) -> Reply {
    Reply::bulk(fmt_g(score, 17))
}

// ---------------------------------------------------------------------------------------------
// Keyspace access.

/// The sorted set at `key` (`None` if there is no key), or the `WRONGTYPE` reply. Reclaims the
/// key if it expired (lazy expiry), as Redis' `lookupKeyRead`.
fn zset_of<'a>(ks: &'a mut Keyspace, key: &[u8], now: i64) -> Result<Option<&'a ZSet>, Reply> {
    match ks.lookup(key, now) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::ZSet(z) => Ok(Some(z)),
            _ => Err(Reply::error(WRONGTYPE)),
        },
    }
}

/// Runs `f` on the live sorted set at `key` as a write (the key counts as touched), keeps the
/// used-bytes count right and deletes the key if `f` emptied it. `None` if `key` holds no
/// sorted set. Callers check first that `f` will change something.
fn write_zset<R>(ks: &mut Keyspace, key: &[u8], now: i64, f: impl FnOnce(&mut ZSet) -> R) -> Option<R> {
    let (result, before, after, empty) = match ks.value_mut(key, now) {
        Some(Value::ZSet(z)) => {
            let before = z.used_bytes();
            let result = f(z);
            (result, before, z.used_bytes(), z.is_empty())
        }
        _ => return None,
    };
    if after >= before {
        ks.grew(after - before);
    } else {
        ks.shrank(before - after);
    }
    if empty {
        ks.remove(key);
    }
    Some(result)
}

/// Stores `result` at `dst` as a new key without TTL (Redis' `setKey`), or deletes `dst` if
/// `result` is empty; answers its size (`ZUNIONSTORE`, `ZRANGESTORE`, ...).
fn store(ks: &mut Keyspace, dst: &Bytes, result: ZSet, now: i64) -> Reply {
    let n = result.len() as i64;
    if result.is_empty() {
        if ks.lookup(dst, now).is_some() {
            ks.remove(dst);
        }
    } else {
        ks.insert(dst.clone(), Value::ZSet(result), None);
    }
    Reply::Integer(n)
}

/// Members (with their scores if `withscores`) as a flat RESP2 array.
fn members_reply<'a>(items: impl Iterator<Item = (&'a Bytes, f64)>, withscores: bool) -> Reply {
    let mut out = Vec::new();
    for (m, s) in items {
        out.push(Reply::bulk(m.clone()));
        if withscores {
            out.push(score_reply(s));
        }
    }
    Reply::Array(Some(out))
}

// ---------------------------------------------------------------------------------------------
// ZADD, ZINCRBY, ZREM, and the reads of one member.

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`
/// (<https://redis.io/commands/zadd/>): how many members were added (`CH`: added or changed),
/// or with `INCR` the new score (nil if `NX`/`XX`/`GT`/`LT` prevented it). O(k log n).
pub(crate) fn zadd(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zadd_generic(ks, args, now_ms, false)
}

/// `ZINCRBY key increment member` (<https://redis.io/commands/zincrby/>): `ZADD key INCR`.
pub(crate) fn zincrby(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zadd_generic(ks, args, now_ms, true)
}

fn zadd_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, zincrby: bool) -> Reply {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) = (false, false, false, false, false, zincrby);
    let mut idx = 2;
    if !zincrby {
        while let Some(opt) = args.get(idx) {
            match () {
                _ if eq_ic(opt, "nx") => nx = true,
                _ if eq_ic(opt, "xx") => xx = true,
                _ if eq_ic(opt, "gt") => gt = true,
                _ if eq_ic(opt, "lt") => lt = true,
                _ if eq_ic(opt, "ch") => ch = true,
                _ if eq_ic(opt, "incr") => incr = true,
                _ => break,
            }
            idx += 1;
        }
    }
    let elements = args.len() - idx;
    if elements == 0 || elements % 2 != 0 {
        return Reply::error(SYNTAX);
    }
    if nx && xx {
        return Reply::error("ERR XX and NX options at the same time are not compatible");
    }
    if (gt && nx) || (lt && nx) || (gt && lt) {
        return Reply::error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && elements > 2 {
        return Reply::error("ERR INCR option supports a single increment-element pair");
    }
    let mut pairs = Vec::with_capacity(elements / 2);
    for pair in args[idx..].chunks(2) {
        match parse_score(&pair[0]) {
            Some(s) => pairs.push((s, pair[1].clone())),
            None => return Reply::error(NOT_FLOAT),
        }
    }
    let key = &args[1];
    // What each pair does, worked out before any change (Redis' `zsetAdd` rules).
    let (mut added, mut updated) = (0i64, 0i64);
    let mut changes: Vec<(Bytes, f64)> = Vec::new();
    let mut incr_result: Option<f64> = None;
    {
        let existing = match zset_of(ks, key, now) {
            Err(e) => return e,
            Ok(None) if xx => None,
            Ok(z) => Some(z),
        };
        let Some(existing) = existing else {
            return if incr { Reply::nil() } else { Reply::Integer(0) };
        };
        // Members given twice see the first pair's effect.
        let mut pending: BTreeMap<Bytes, f64> = BTreeMap::new();
        for (score, member) in pairs {
            let current = pending
                .get(&member)
                .copied()
                .or_else(|| existing.and_then(|z| z.score(&member)));
            match current {
                Some(cur) => {
                    if nx {
                        continue;
                    }
                    let mut new = score;
                    if incr {
                        new += cur;
                        if new.is_nan() {
                            return Reply::error(NAN_SCORE);
                        }
                    }
                    if (lt && new >= cur) || (gt && new <= cur) {
                        continue;
                    }
                    incr_result = Some(new);
                    if new != cur {
                        updated += 1;
                        pending.insert(member.clone(), new);
                        changes.push((member, new));
                    }
                }
                None => {
                    if xx {
                        continue;
                    }
                    incr_result = Some(score);
                    added += 1;
                    pending.insert(member.clone(), score);
                    changes.push((member, score));
                }
            }
        }
    }
    if !changes.is_empty() {
        match ks.lookup(key, now) {
            None => ks.insert(key.clone(), Value::ZSet(changes.into_iter().collect()), None),
            Some(_) => {
                write_zset(ks, key, now, |z| {
                    for (m, s) in changes {
                        z.insert(m, s);
                    }
                });
            }
        }
    }
    if incr {
        incr_result.map_or_else(Reply::nil, score_reply)
    } else {
        Reply::Integer(if ch { added + updated } else { added })
    }
}

/// `ZREM key member [member ...]` (<https://redis.io/commands/zrem/>): how many were removed.
/// O(k log n).
pub(crate) fn zrem(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => return e,
        Ok(None) => return Reply::Integer(0),
        Ok(Some(z)) if !args[2..].iter().any(|m| z.score(m).is_some()) => return Reply::Integer(0),
        Ok(Some(_)) => {}
    }
    let removed = write_zset(ks, &args[1], now_ms, |z| {
        args[2..].iter().filter(|m| z.remove(m).is_some()).count()
    });
    Reply::Integer(removed.unwrap_or(0) as i64)
}

/// `ZCARD key` (<https://redis.io/commands/zcard/>). O(1).
pub(crate) fn zcard(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => Reply::Integer(z.map_or(0, |z| z.len() as i64)),
    }
}

/// `ZSCORE key member` (<https://redis.io/commands/zscore/>). O(log n).
pub(crate) fn zscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => z.and_then(|z| z.score(&args[2])).map_or_else(Reply::nil, score_reply),
    }
}

/// `ZMSCORE key member [member ...]` (<https://redis.io/commands/zmscore/>): a score or nil
/// each. O(k log n).
pub(crate) fn zmscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => Reply::Array(Some(
            args[2..]
                .iter()
                .map(|m| z.and_then(|z| z.score(m)).map_or_else(Reply::nil, score_reply))
                .collect(),
        )),
    }
}

/// `ZRANK key member` (<https://redis.io/commands/zrank/>): 0-based, lowest score first.
/// O(log n + min(r, n − r)).
pub(crate) fn zrank(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    rank_generic(ks, args, now_ms, false)
}

/// `ZREVRANK key member` (<https://redis.io/commands/zrevrank/>): highest score first.
pub(crate) fn zrevrank(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    rank_generic(ks, args, now_ms, true)
}

fn rank_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, reverse: bool) -> Reply {
    match zset_of(ks, &args[1], now) {
        Err(e) => e,
        Ok(z) => z
            .and_then(|z| z.rank(&args[2], reverse))
            .map_or_else(Reply::nil, |r| Reply::Integer(r as i64)),
    }
}

/// `ZCOUNT key min max` (<https://redis.io/commands/zcount/>). O(log n + k).
pub(crate) fn zcount(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let range = match parse_score_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => Reply::Integer(z.map_or(0, |z| z.in_score_range(&range).count() as i64)),
    }
}

/// `ZLEXCOUNT key min max` (<https://redis.io/commands/zlexcount/>). O(log n + k) when all
/// scores are equal.
pub(crate) fn zlexcount(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let range = match parse_lex_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match zset_of(ks, &args[1], now_ms) {
        Err(e) => e,
        Ok(z) => Reply::Integer(z.map_or(0, |z| z.in_lex_range(&range, false).count() as i64)),
    }
}

// ---------------------------------------------------------------------------------------------
// ZRANGE and its older forms.

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

/// The parsed range of a `ZRANGE`-family command.
enum RangeSpec {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// `zrangeGenericCommand` of Redis 7.0: `key_at` is the source key's index, the range ends
/// follow it, then the options. `store` is `ZRANGESTORE`'s destination.
fn zrange_generic(
    ks: &mut Keyspace,
    args: &[Bytes],
    now: i64,
    key_at: usize,
    store: Option<&Bytes>,
    mut rangetype: RangeType,
    mut reverse: Option<bool>,
) -> Reply {
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = key_at + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        let opt = &args[j];
        if store.is_none() && eq_ic(opt, "withscores") {
            withscores = true;
        } else if eq_ic(opt, "limit") && left >= 2 {
            offset = match parse_long(&args[j + 1]) {
                Ok(v) => v,
                Err(e) => return e,
            };
            limit = match parse_long(&args[j + 2]) {
                Ok(v) => v,
                Err(e) => return e,
            };
            j += 2;
        } else if reverse.is_none() && eq_ic(opt, "rev") {
            reverse = Some(true);
        } else if rangetype == RangeType::Auto && eq_ic(opt, "bylex") {
            rangetype = RangeType::Lex;
        } else if rangetype == RangeType::Auto && eq_ic(opt, "byscore") {
            rangetype = RangeType::Score;
        } else {
            return Reply::error(SYNTAX);
        }
        j += 1;
    }
    let reverse = reverse.unwrap_or(false);
    if rangetype == RangeType::Auto {
        rangetype = RangeType::Rank;
    }
    // Redis tells "LIMIT given" by the count not being -1.
    if limit != -1 && rangetype == RangeType::Rank {
        return Reply::error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    }
    if withscores && rangetype == RangeType::Lex {
        return Reply::error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    let (mut min_at, mut max_at) = (key_at + 1, key_at + 2);
    if reverse && rangetype != RangeType::Rank {
        std::mem::swap(&mut min_at, &mut max_at);
    }
    let spec = match rangetype {
        RangeType::Score => match parse_score_range(&args[min_at], &args[max_at]) {
            Ok(r) => RangeSpec::Score(r),
            Err(e) => return e,
        },
        RangeType::Lex => match parse_lex_range(&args[min_at], &args[max_at]) {
            Ok(r) => RangeSpec::Lex(r),
            Err(e) => return e,
        },
        _ => match (parse_long(&args[min_at]), parse_long(&args[max_at])) {
            (Ok(a), Ok(b)) => RangeSpec::Rank(a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        },
    };
    let z = match zset_of(ks, &args[key_at], now) {
        Err(e) => return e,
        Ok(None) => {
            return match store {
                Some(dst) => store_result(ks, dst, ZSet::new(), now),
                None => Reply::Array(Some(Vec::new())),
            }
        }
        Ok(Some(z)) => z,
    };
    let items: Vec<(Bytes, f64)> = match spec {
        RangeSpec::Rank(start, end) => match rank_span(z.len(), start, end) {
            Some((s, e)) => z.by_rank(s, e, reverse),
            None => Vec::new(),
        },
        RangeSpec::Score(range) => {
            if offset < 0 || (offset > 0 && offset as u64 >= z.len() as u64) {
                Vec::new()
            } else {
                let it = z.in_score_range(&range);
                let it: Box<dyn Iterator<Item = (&Bytes, f64)>> =
                    if reverse { Box::new(it.rev()) } else { Box::new(it) };
                limited(it, offset, limit)
            }
        }
        RangeSpec::Lex(range) => {
            if offset < 0 || (offset > 0 && offset as u64 >= z.len() as u64) {
                Vec::new()
            } else {
                limited(z.in_lex_range(&range, reverse), offset, limit)
            }
        }
    };
    match store {
        Some(dst) => {
            let result: ZSet = items.into_iter().collect();
            store_result(ks, dst, result, now)
        }
        None => members_reply(items.iter().map(|(m, s)| (m, *s)), withscores),
    }
}

fn store_result(ks: &mut Keyspace, dst: &Bytes, result: ZSet, now: i64) -> Reply {
    store(ks, dst, result, now)
}

/// `offset` answers skipped, then at most `limit` (negative: all the rest).
fn limited<'a>(it: impl Iterator<Item = (&'a Bytes, f64)>, offset: i64, limit: i64) -> Vec<(Bytes, f64)> {
    let it = it.skip(offset as usize).map(|(m, s)| (m.clone(), s));
    if limit < 0 {
        it.collect()
    } else {
        it.take(limit as usize).collect()
    }
}

/// Redis' index sanitizing for a set of `len`: negative counts from the end; `None` if empty.
fn rank_span(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len.saturating_add(start) } else { start };
    let mut end = if end < 0 { len.saturating_add(end) } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`
/// (<https://redis.io/commands/zrange/>). O(log n + k) by score or lex, by index
/// O(log n + min(start, n − stop) + k).
pub(crate) fn zrange(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Auto, None)
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`
/// (<https://redis.io/commands/zrangestore/>): the stored set's size; an empty result deletes
/// `dst`.
pub(crate) fn zrangestore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let dst = args[1].clone();
    zrange_generic(ks, args, now_ms, 2, Some(&dst), RangeType::Auto, None)
}

/// `ZREVRANGE key start stop [WITHSCORES]` (<https://redis.io/commands/zrevrange/>).
pub(crate) fn zrevrange(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Rank, Some(true))
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`
/// (<https://redis.io/commands/zrangebyscore/>).
pub(crate) fn zrangebyscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Score, Some(false))
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`
/// (<https://redis.io/commands/zrevrangebyscore/>).
pub(crate) fn zrevrangebyscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Score, Some(true))
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]` (<https://redis.io/commands/zrangebylex/>).
pub(crate) fn zrangebylex(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Lex, Some(false))
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`
/// (<https://redis.io/commands/zrevrangebylex/>).
pub(crate) fn zrevrangebylex(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zrange_generic(ks, args, now_ms, 1, None, RangeType::Lex, Some(true))
}

// ---------------------------------------------------------------------------------------------
// ZREMRANGEBY*.

/// `zremrangeGenericCommand`: parse the range, then the key (0 if missing).
fn zremrange_generic(ks: &mut Keyspace, args: &[Bytes], now: i64, rangetype: RangeType) -> Reply {
    let spec = match rangetype {
        RangeType::Score => match parse_score_range(&args[2], &args[3]) {
            Ok(r) => RangeSpec::Score(r),
            Err(e) => return e,
        },
        RangeType::Lex => match parse_lex_range(&args[2], &args[3]) {
            Ok(r) => RangeSpec::Lex(r),
            Err(e) => return e,
        },
        _ => match (parse_long(&args[2]), parse_long(&args[3])) {
            (Ok(a), Ok(b)) => RangeSpec::Rank(a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        },
    };
    let z = match zset_of(ks, &args[1], now) {
        Err(e) => return e,
        Ok(None) => return Reply::Integer(0),
        Ok(Some(z)) => z,
    };
    let doomed: Vec<Bytes> = match spec {
        RangeSpec::Rank(start, end) => match rank_span(z.len(), start, end) {
            Some((s, e)) => z.by_rank(s, e, false).into_iter().map(|(m, _)| m).collect(),
            None => Vec::new(),
        },
        RangeSpec::Score(range) => z.in_score_range(&range).map(|(m, _)| m.clone()).collect(),
        RangeSpec::Lex(range) => z.in_lex_range(&range, false).map(|(m, _)| m.clone()).collect(),
    };
    if doomed.is_empty() {
        return Reply::Integer(0);
    }
    write_zset(ks, &args[1], now, |z| {
        for m in &doomed {
            z.remove(m);
        }
    });
    Reply::Integer(doomed.len() as i64)
}

/// `ZREMRANGEBYRANK key start stop` (<https://redis.io/commands/zremrangebyrank/>).
/// O(log n + min(start, n − stop) + k log n).
pub(crate) fn zremrangebyrank(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zremrange_generic(ks, args, now_ms, RangeType::Rank)
}

/// `ZREMRANGEBYSCORE key min max` (<https://redis.io/commands/zremrangebyscore/>).
/// O((k + 1) log n).
pub(crate) fn zremrangebyscore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zremrange_generic(ks, args, now_ms, RangeType::Score)
}

/// `ZREMRANGEBYLEX key min max` (<https://redis.io/commands/zremrangebylex/>).
/// O((k + 1) log n) when all scores are equal.
pub(crate) fn zremrangebylex(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zremrange_generic(ks, args, now_ms, RangeType::Lex)
}

// ---------------------------------------------------------------------------------------------
// Pops.

/// How a pop answers (`genericZpopCommand`'s `emitkey`/`use_nested_array`, RESP2).
#[derive(Clone, Copy, PartialEq, Eq)]
enum PopShape {
    /// `ZPOPMIN`/`ZPOPMAX`: `[member, score, ...]`; a missing key: an empty array.
    Flat,
    /// `BZPOPMIN`/`BZPOPMAX`: `[key, member, score]`; nothing: a nil array.
    WithKey,
    /// `ZMPOP`/`BZMPOP`: `[key, [[member, score], ...]]`; nothing: a nil array.
    Nested,
}

/// Pops up to `count` members (`None`: one, Redis' `-1`) from the first of `keys` that holds a
/// sorted set, lowest (`max` false) or highest first. A key of another type first: `WRONGTYPE`.
/// O(k log n).
fn zpop_generic(ks: &mut Keyspace, keys: &[Bytes], now: i64, max: bool, count: Option<u64>, shape: PopShape) -> Reply {
    let mut found = None;
    for key in keys {
        match zset_of(ks, key, now) {
            Err(e) => return e,
            Ok(None) => continue,
            Ok(Some(_)) => {
                found = Some(key);
                break;
            }
        }
    }
    let Some(key) = found else {
        return match shape {
            PopShape::Flat => Reply::Array(Some(Vec::new())),
            _ => Reply::Array(None),
        };
    };
    if count == Some(0) {
        return Reply::Array(Some(Vec::new()));
    }
    let count = count.unwrap_or(1);
    let popped = write_zset(ks, key, now, |z| {
        let mut out = Vec::new();
        while (out.len() as u64) < count {
            match z.pop(max) {
                Some(p) => out.push(p),
                None => break,
            }
        }
        out
    })
    .unwrap_or_default();
    match shape {
        PopShape::Flat => Reply::Array(Some(
            popped
                .into_iter()
                .flat_map(|(m, s)| [Reply::bulk(m), score_reply(s)])
                .collect(),
        )),
        PopShape::WithKey => {
            let mut out = vec![Reply::bulk(key.clone())];
            out.extend(popped.into_iter().flat_map(|(m, s)| [Reply::bulk(m), score_reply(s)]));
            Reply::Array(Some(out))
        }
        PopShape::Nested => Reply::Array(Some(vec![
            Reply::bulk(key.clone()),
            Reply::Array(Some(
                popped
                    .into_iter()
                    .map(|(m, s)| Reply::Array(Some(vec![Reply::bulk(m), score_reply(s)])))
                    .collect(),
            )),
        ])),
    }
}

fn zpop_min_max(ks: &mut Keyspace, args: &[Bytes], now: i64, max: bool) -> Reply {
    if args.len() > 3 {
        return Reply::error(SYNTAX);
    }
    let count = match args.get(2) {
        None => None,
        Some(raw) => match parse_ll(raw).filter(|c| *c >= 0) {
            Some(c) => Some(c as u64),
            None => return Reply::error("ERR value is out of range, must be positive"),
        },
    };
    zpop_generic(ks, &args[1..2], now, max, count, PopShape::Flat)
}

/// `ZPOPMIN key [count]` (<https://redis.io/commands/zpopmin/>): `[member, score, ...]`,
/// lowest first. O(k log n).
pub(crate) fn zpopmin(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zpop_min_max(ks, args, now_ms, false)
}

/// `ZPOPMAX key [count]` (<https://redis.io/commands/zpopmax/>): highest first.
pub(crate) fn zpopmax(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zpop_min_max(ks, args, now_ms, true)
}

/// `ZMPOP`'s arguments from `numkeys_at` on: the keys, whether `MAX`, the count.
fn parse_mpop(args: &[Bytes], numkeys_at: usize) -> Result<(&[Bytes], bool, u64), Reply> {
    let positive = |raw: &[u8], msg: &str| parse_ll(raw).filter(|n| *n >= 1).ok_or_else(|| Reply::error(msg));
    let numkeys = positive(&args[numkeys_at], "ERR numkeys should be greater than 0")? as u64;
    let where_at = (numkeys_at as u64).saturating_add(numkeys).saturating_add(1);
    if where_at >= args.len() as u64 {
        return Err(Reply::error(SYNTAX));
    }
    let where_at = where_at as usize;
    let max = if eq_ic(&args[where_at], "min") {
        false
    } else if eq_ic(&args[where_at], "max") {
        true
    } else {
        return Err(Reply::error(SYNTAX));
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if count.is_none() && eq_ic(&args[j], "count") && more > 0 {
            j += 1;
            count = Some(positive(&args[j], "ERR count should be greater than 0")? as u64);
        } else {
            return Err(Reply::error(SYNTAX));
        }
        j += 1;
    }
    Ok((&args[numkeys_at + 1..where_at], max, count.unwrap_or(1)))
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]` (<https://redis.io/commands/zmpop/>):
/// `[key, [[member, score], ...]]` from the first non-empty key, or a nil array. O(k log n).
pub(crate) fn zmpop(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    match parse_mpop(args, 1) {
        Ok((keys, max, count)) => zpop_generic(ks, keys, now_ms, max, Some(count), PopShape::Nested),
        Err(e) => e,
    }
}

fn bzpop_min_max(ks: &mut Keyspace, args: &[Bytes], now: i64, max: bool) -> Reply {
    if let Err(e) = blocking_timeout_ms(&args[args.len() - 1]) {
        return e;
    }
    zpop_generic(ks, &args[1..args.len() - 1], now, max, None, PopShape::WithKey)
}

/// `BZPOPMIN key [key ...] timeout` (<https://redis.io/commands/bzpopmin/>), never blocking:
/// `[key, member, score]` from the first non-empty key, or a nil array (what Redis answers
/// inside `MULTI`; a server blocks the connection on it and calls again when a key is written).
pub(crate) fn bzpopmin(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    bzpop_min_max(ks, args, now_ms, false)
}

/// `BZPOPMAX key [key ...] timeout` (<https://redis.io/commands/bzpopmax/>): see [`bzpopmin`].
pub(crate) fn bzpopmax(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    bzpop_min_max(ks, args, now_ms, true)
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`
/// (<https://redis.io/commands/bzmpop/>), never blocking: [`zmpop`]'s answer, a nil array when
/// every key is empty. The timeout is checked after the other arguments, as in Redis.
pub(crate) fn bzmpop(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let (keys, max, count) = match parse_mpop(args, 2) {
        Ok(parsed) => parsed,
        Err(e) => return e,
    };
    if let Err(e) = blocking_timeout_ms(&args[1]) {
        return e;
    }
    zpop_generic(ks, keys, now_ms, max, Some(count), PopShape::Nested)
}

// ---------------------------------------------------------------------------------------------
// ZRANDMEMBER.

/// A small deterministic generator (SplitMix64).
struct SplitMix(u64);

impl SplitMix {
    fn seeded(key: &[u8], len: usize, now: i64) -> Self {
        // FNV-1a over the key, then the size and the time.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key
            .iter()
            .copied()
            .chain((len as u64).to_le_bytes())
            .chain(now.to_le_bytes())
        {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        SplitMix(h)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 11) as u128 * n as u128) >> 53) as usize
    }
}

/// `ZRANDMEMBER key [count [WITHSCORES]]` (<https://redis.io/commands/zrandmember/>): one
/// member (nil if no key), or `count` distinct members (negative: `-count` members, repeats
/// allowed). Deterministic: see the module doc. O(n + count) with a count, else O(n).
pub(crate) fn zrandmember(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let key = &args[1];
    if args.len() >= 3 {
        let Some(count) = parse_ll(&args[2]) else {
            return Reply::error(NOT_INTEGER);
        };
        if count == i64::MIN {
            return Reply::error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            );
        }
        let mut withscores = false;
        if args.len() > 4 || (args.len() == 4 && !eq_ic(&args[3], "withscores")) {
            return Reply::error(SYNTAX);
        } else if args.len() == 4 {
            withscores = true;
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
                return Reply::error("ERR value is out of range");
            }
        }
        let z = match zset_of(ks, key, now_ms) {
            Err(e) => return e,
            Ok(None) => return Reply::Array(Some(Vec::new())),
            Ok(Some(z)) => z,
        };
        if count == 0 {
            return Reply::Array(Some(Vec::new()));
        }
        let mut rng = SplitMix::seeded(key, z.len(), now_ms);
        let all: Vec<(&Bytes, f64)> = z.iter().collect();
        let picked: Vec<(&Bytes, f64)> = if count < 0 {
            (0..count.unsigned_abs()).map(|_| all[rng.below(all.len())]).collect()
        } else if count as u64 >= all.len() as u64 {
            all
        } else {
            // A partial Fisher-Yates shuffle.
            let mut all = all;
            let n = count as usize;
            for i in 0..n {
                let j = i + rng.below(all.len() - i);
                all.swap(i, j);
            }
            all.truncate(n);
            all
        };
        return members_reply(picked.into_iter(), withscores);
    }
    match zset_of(ks, key, now_ms) {
        Err(e) => e,
        Ok(None) => Reply::nil(),
        Ok(Some(z)) => {
            let mut rng = SplitMix::seeded(key, z.len(), now_ms);
            let i = rng.below(z.len());
            z.iter().nth(i).map_or_else(Reply::nil, |(m, _)| Reply::bulk(m.clone()))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD.

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// Adds `val` into `acc` as `zunionInterAggregate` does (a NaN sum becomes 0).
fn aggregate(acc: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *acc += val;
            if acc.is_nan() {
                *acc = 0.0;
            }
        }
        Aggregate::Min => *acc = acc.min(val),
        Aggregate::Max => *acc = acc.max(val),
    }
}

/// One input of a set operation: its members with scores (a set's members score 1).
enum Source<'a> {
    Missing,
    ZSet(&'a ZSet),
    Set(&'a BTreeSet<Bytes>),
}

impl Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::ZSet(z) => z.len(),
            Source::Set(s) => s.len(),
        }
    }

    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::ZSet(z) => z.score(m),
            Source::Set(s) => s.contains(m).then_some(1.0),
        }
    }

    fn members(&self) -> Box<dyn Iterator<Item = (&Bytes, f64)> + '_> {
        match self {
            Source::Missing => Box::new(std::iter::empty()),
            Source::ZSet(z) => Box::new(z.iter()),
            Source::Set(s) => Box::new(s.iter().map(|m| (m, 1.0))),
        }
    }
}

/// `zunionInterDiffGenericCommand` of Redis 7.0. `numkeys_at` is `numkeys`' index; `dst` the
/// `STORE` forms' destination; `name` the command's name for the `numkeys` error.
fn zsetop_generic(
    ks: &mut Keyspace,
    args: &[Bytes],
    now: i64,
    numkeys_at: usize,
    dst: Option<&Bytes>,
    op: SetOp,
    cardinality_only: bool,
    name: &str,
) -> Reply {
    let setnum = match parse_long(&args[numkeys_at]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if setnum < 1 {
        return Reply::Error(format!("ERR at least 1 input key is needed for '{name}' command"));
    }
    if setnum as u64 > (args.len() - numkeys_at - 1) as u64 {
        return Reply::error(SYNTAX);
    }
    let setnum = setnum as usize;
    let keys = &args[numkeys_at + 1..numkeys_at + 1 + setnum];
    // Look the keys up (reclaiming expired ones) and check their types before the options.
    for key in keys {
        match ks.lookup(key, now).map(|e| &e.value) {
            None | Some(Value::ZSet(_) | Value::Set(_)) => {}
            Some(_) => return Reply::error(WRONGTYPE),
        }
    }
    let mut weights = vec![1.0f64; setnum];
    let mut how = Aggregate::Sum;
    let (mut withscores, mut limit) = (false, 0i64);
    let mut j = numkeys_at + 1 + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        let opt = &args[j];
        if op != SetOp::Diff && !cardinality_only && remaining > setnum && eq_ic(opt, "weights") {
            for (i, w) in weights.iter_mut().enumerate() {
                match parse_score(&args[j + 1 + i]) {
                    Some(v) => *w = v,
                    None => return Reply::error("ERR weight value is not a float"),
                }
            }
            j += 1 + setnum;
        } else if op != SetOp::Diff && !cardinality_only && remaining >= 2 && eq_ic(opt, "aggregate") {
            let v = &args[j + 1];
            how = if eq_ic(v, "sum") {
                Aggregate::Sum
            } else if eq_ic(v, "min") {
                Aggregate::Min
            } else if eq_ic(v, "max") {
                Aggregate::Max
            } else {
                return Reply::error(SYNTAX);
            };
            j += 2;
        } else if dst.is_none() && !cardinality_only && eq_ic(opt, "withscores") {
            withscores = true;
            j += 1;
        } else if cardinality_only && remaining >= 2 && eq_ic(opt, "limit") {
            match parse_ll(&args[j + 1]).filter(|n| *n >= 0) {
                Some(n) => limit = n,
                None => return Reply::error("ERR LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return Reply::error(SYNTAX);
        }
    }
    let sources: Vec<Source> = keys
        .iter()
        .map(|k| match ks.peek(k, now).map(|e| &e.value) {
            Some(Value::ZSet(z)) => Source::ZSet(z),
            Some(Value::Set(s)) => Source::Set(s),
            _ => Source::Missing,
        })
        .collect();
    let mut order: Vec<usize> = (0..setnum).collect();
    let weighted = |i: usize, s: f64| {
        let v = weights[i] * s;
        if v.is_nan() {
            0.0
        } else {
            v
        }
    };
    let result: ZSet = match op {
        SetOp::Inter => {
            // Smallest first, as Redis sorts its inputs by size.
            order.sort_by_key(|&i| sources[i].len());
            if sources[order[0]].len() == 0 {
                ZSet::new()
            } else {
                let mut out = ZSet::new();
                let mut card = 0i64;
                'members: for (m, s) in sources[order[0]].members() {
                    let mut score = weighted(order[0], s);
                    for &i in &order[1..] {
                        match sources[i].score(m) {
                            Some(other) => aggregate(&mut score, weighted(i, other), how),
                            None => continue 'members,
                        }
                    }
                    if cardinality_only {
                        card += 1;
                        if limit != 0 && card >= limit {
                            break;
                        }
                        continue;
                    }
                    out.insert(m.clone(), score);
                }
                if cardinality_only {
                    return Reply::Integer(card);
                }
                out
            }
        }
        SetOp::Union => {
            order.sort_by_key(|&i| sources[i].len());
            let mut acc: BTreeMap<Bytes, f64> = BTreeMap::new();
            for &i in &order {
                for (m, s) in sources[i].members() {
                    let v = weighted(i, s);
                    match acc.get_mut(m) {
                        Some(cur) => aggregate(cur, v, how),
                        None => {
                            acc.insert(m.clone(), v);
                        }
                    }
                }
            }
            acc.into_iter().collect()
        }
        SetOp::Diff => {
            let mut out = ZSet::new();
            for (m, s) in sources[0].members() {
                if !sources[1..].iter().any(|src| src.score(m).is_some()) {
                    out.insert(m.clone(), s);
                }
            }
            out
        }
    };
    if cardinality_only {
        return Reply::Integer(0);
    }
    drop(sources);
    match dst {
        Some(dst) => store(ks, dst, result, now),
        None => members_reply(result.iter(), withscores),
    }
}

/// `ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
/// (<https://redis.io/commands/zunion/>). O(N log M) for N input members, M answers.
pub(crate) fn zunion(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zsetop_generic(ks, args, now_ms, 1, None, SetOp::Union, false, "zunion")
}

/// `ZINTER numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
/// (<https://redis.io/commands/zinter/>). O(N·K log M) for the smallest input's N members.
pub(crate) fn zinter(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zsetop_generic(ks, args, now_ms, 1, None, SetOp::Inter, false, "zinter")
}

/// `ZDIFF numkeys key [key ...] [WITHSCORES]` (<https://redis.io/commands/zdiff/>): the first
/// input's members in no other. O(N·K log M).
pub(crate) fn zdiff(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zsetop_generic(ks, args, now_ms, 1, None, SetOp::Diff, false, "zdiff")
}

/// `ZUNIONSTORE dst numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]`
/// (<https://redis.io/commands/zunionstore/>): the stored set's size; empty deletes `dst`.
pub(crate) fn zunionstore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let dst = args[1].clone();
    zsetop_generic(ks, args, now_ms, 2, Some(&dst), SetOp::Union, false, "zunionstore")
}

/// `ZINTERSTORE dst numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]`
/// (<https://redis.io/commands/zinterstore/>).
pub(crate) fn zinterstore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let dst = args[1].clone();
    zsetop_generic(ks, args, now_ms, 2, Some(&dst), SetOp::Inter, false, "zinterstore")
}

/// `ZDIFFSTORE dst numkeys key [key ...]` (<https://redis.io/commands/zdiffstore/>).
pub(crate) fn zdiffstore(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let dst = args[1].clone();
    zsetop_generic(ks, args, now_ms, 2, Some(&dst), SetOp::Diff, false, "zdiffstore")
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]` (<https://redis.io/commands/zintercard/>):
/// the intersection's size, counting stopped at `limit` (0: no limit).
pub(crate) fn zintercard(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    zsetop_generic(ks, args, now_ms, 1, None, SetOp::Inter, true, "zintercard")
}

// ---------------------------------------------------------------------------------------------
// ZSCAN.

/// `parseScanCursorOrReply`: C's `strtoul` of the whole argument (a sign allowed, `-n` wraps,
/// an empty argument is 0), or `ERR invalid cursor`.
fn parse_cursor(raw: &[u8]) -> Option<u64> {
    let (neg, digits) = match raw.first() {
        Some(b'-') => (true, &raw[1..]),
        Some(b'+') => (false, &raw[1..]),
        _ => (false, raw),
    };
    if raw.is_empty() {
        return Some(0);
    }
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// The cursor of `member`: its first 8 bytes, zero-padded, big-endian (order-preserving).
fn cursor_of(member: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = member.len().min(8);
    b[..n].copy_from_slice(&member[..n]);
    u64::from_be_bytes(b)
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]` (<https://redis.io/commands/zscan/>):
/// `[next cursor, [member, score, ...]]`. A set Redis keeps small (`listpack`) comes whole with
/// cursor 0; a larger one in member byte order, see the module doc. O(log n + count).
pub(crate) fn zscan(ks: &mut Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let Some(cursor) = parse_cursor(&args[2]) else {
        return Reply::error("ERR invalid cursor");
    };
    let z = match zset_of(ks, &args[1], now_ms) {
        Err(e) => return e,
        Ok(None) => {
            return Reply::Array(Some(vec![Reply::bulk("0"), Reply::Array(Some(Vec::new()))]));
        }
        Ok(Some(z)) => z,
    };
    let (mut count, mut pattern) = (10i64, None);
    let mut j = 3;
    while j < args.len() {
        let left = args.len() - j;
        if eq_ic(&args[j], "count") && left >= 2 {
            count = match parse_long(&args[j + 1]) {
                Ok(c) => c,
                Err(e) => return e,
            };
            if count < 1 {
                return Reply::error(SYNTAX);
            }
        } else if eq_ic(&args[j], "match") && left >= 2 {
            pattern = Some(&args[j + 1]).filter(|p| p.as_ref() != b"*");
        } else {
            return Reply::error(SYNTAX);
        }
        j += 2;
    }
    let matches = |m: &Bytes| pattern.is_none_or(|p| glob_match(p, m));
    let mut out = Vec::new();
    let mut next = 0u64;
    if z.is_listpack_sized() {
        for (m, s) in z.iter() {
            if matches(m) {
                out.push(Reply::bulk(m.clone()));
                out.push(score_reply(s));
            }
        }
    } else {
        let mut start = cursor.to_be_bytes().to_vec();
        while start.last() == Some(&0) {
            start.pop();
        }
        let mut taken = 0i64;
        let mut group = None;
        for (m, s) in z.scores.range::<[u8], _>((Included(start.as_slice()), Unbounded)) {
            let c = cursor_of(m);
            if taken >= count && group != Some(c) {
                next = c;
                break;
            }
            group = Some(c);
            taken += 1;
            if matches(m) {
                out.push(Reply::bulk(m.clone()));
                out.push(score_reply(*s));
            }
        }
    }
    Reply::Array(Some(vec![Reply::bulk(next.to_string()), Reply::Array(Some(out))]))
}
