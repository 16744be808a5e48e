//! The sorted-set value ([`ZSet`]): members with scores, ordered by score then member bytes,
//! with the indexes that make its operations O(log n), and the parsing of scores and ranges the
//! sorted-set commands share (`t_zset.rs` holds the commands). Nothing here knows the keyspace.

use super::cost::ITEM_OVERHEAD_BYTES;
use super::lua::fmt_g;
use super::reply::Reply;
use super::syntax::{parse_ll, NOT_INTEGER};
use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{self, Excluded, Included, Unbounded};

pub(crate) const NOT_FLOAT: &str = "ERR value is not a valid float";
pub(crate) const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";
pub(crate) const RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
pub(crate) const RANGE_NOT_LEX: &str = "ERR min or max not valid string range item";

/// What each member costs in [`Value::used_bytes`] besides its bytes and
/// [`ITEM_OVERHEAD_BYTES`]: its score.
pub(crate) const SCORE_BYTES: usize = 8;

/// Redis 7.0's `zset-max-listpack-entries` and `zset-max-listpack-value` defaults: up to these a
/// sorted set is `listpack`-encoded (`OBJECT ENCODING`, and `ZSCAN` answers it whole).
pub(crate) const LISTPACK_MAX_ENTRIES: usize = 128;
/// See [`LISTPACK_MAX_ENTRIES`].
pub(crate) const LISTPACK_MAX_VALUE: usize = 64;

/// The sorted-set commands of Redis 7.0 as `(name, arity, flags)`, as `COMMAND INFO` of
/// redis-server 7.0.15 reports them (arity negative: at least that many arguments, the name
/// included). The handler of each is the function of this module with the command's name.
#[cfg(test)]
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

/// "No node" in a [`RankIndex`].
pub(crate) const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub(crate) struct RankNode {
    pub(crate) key: (Score, Bytes),
    pub(crate) priority: u64,
    pub(crate) left: u32,
    pub(crate) right: u32,
    /// Nodes in this subtree, this one included.
    pub(crate) size: u32,
}

/// The `(score, member)` keys again, in a treap whose nodes know their subtree's size, so that
/// a key's rank and the key at a rank cost O(log n) (expected; priorities are a hash of the
/// member, so the shape is deterministic). Nodes live in an arena, freed slots reused.
#[derive(Clone, Debug)]
pub(crate) struct RankIndex {
    pub(crate) nodes: Vec<RankNode>,
    pub(crate) free: Vec<u32>,
    pub(crate) root: u32,
}

impl Default for RankIndex {
    fn default() -> Self {
        RankIndex {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
        }
    }
}

impl RankIndex {
    pub(crate) fn size(&self, t: u32) -> usize {
        if t == NIL {
            0
        } else {
            self.nodes[t as usize].size as usize
        }
    }

    pub(crate) fn fix(&mut self, t: u32) {
        let n = &self.nodes[t as usize];
        let size = 1 + self.size(n.left) + self.size(n.right);
        self.nodes[t as usize].size = size as u32;
    }

    /// Joins two treaps, every key of `a` below every key of `b`.
    pub(crate) fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].priority > self.nodes[b as usize].priority {
            let joined = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = joined;
            self.fix(a);
            a
        } else {
            let joined = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = joined;
            self.fix(b);
            b
        }
    }

    /// Splits `t` into the keys below `key` and the others.
    pub(crate) fn split(&mut self, t: u32, key: &(Score, Bytes)) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.nodes[t as usize].key < *key {
            let (l, r) = self.split(self.nodes[t as usize].right, key);
            self.nodes[t as usize].right = l;
            self.fix(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.nodes[t as usize].left, key);
            self.nodes[t as usize].left = r;
            self.fix(t);
            (l, t)
        }
    }

    /// Adds `key` (not present). O(log n).
    pub(crate) fn insert(&mut self, key: (Score, Bytes)) {
        let node = RankNode {
            priority: scan_hash(&key.1),
            key,
            left: NIL,
            right: NIL,
            size: 1,
        };
        let at = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let key = self.nodes[at as usize].key.clone();
        let (l, r) = self.split(self.root, &key);
        let l = self.merge(l, at);
        self.root = self.merge(l, r);
    }

    /// Removes `key` if present. O(log n).
    pub(crate) fn remove(&mut self, key: &(Score, Bytes)) {
        self.root = self.remove_at(self.root, key);
    }

    pub(crate) fn remove_at(&mut self, t: u32, key: &(Score, Bytes)) -> u32 {
        if t == NIL {
            return NIL;
        }
        match key.cmp(&self.nodes[t as usize].key) {
            Ordering::Less => {
                let l = self.remove_at(self.nodes[t as usize].left, key);
                self.nodes[t as usize].left = l;
                self.fix(t);
                t
            }
            Ordering::Greater => {
                let r = self.remove_at(self.nodes[t as usize].right, key);
                self.nodes[t as usize].right = r;
                self.fix(t);
                t
            }
            Ordering::Equal => {
                let (l, r) = (self.nodes[t as usize].left, self.nodes[t as usize].right);
                let joined = self.merge(l, r);
                self.nodes[t as usize].key = (Score(0.0), Bytes::new());
                self.free.push(t);
                joined
            }
        }
    }

    /// How many keys are below `key` (`inclusive`: or equal to it). O(log n).
    pub(crate) fn count_below(&self, key: &(Score, Bytes), inclusive: bool) -> usize {
        let (mut t, mut count) = (self.root, 0);
        while t != NIL {
            let n = &self.nodes[t as usize];
            if n.key < *key || (inclusive && n.key == *key) {
                count += self.size(n.left) + 1;
                t = n.right;
            } else {
                t = n.left;
            }
        }
        count
    }

    /// The key at 0-based rank `i`. O(log n).
    pub(crate) fn select(&self, mut i: usize) -> Option<&(Score, Bytes)> {
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t as usize];
            let left = self.size(n.left);
            match i.cmp(&left) {
                Ordering::Less => t = n.left,
                Ordering::Equal => return Some(&n.key),
                Ordering::Greater => {
                    i -= left + 1;
                    t = n.right;
                }
            }
        }
        None
    }

    /// Keys in `bounds` (of the ordered index). O(log n).
    pub(crate) fn count_in(&self, bounds: &OrderBounds) -> usize {
        let start = match &bounds.0 {
            Included(k) => self.count_below(k, false),
            Excluded(k) => self.count_below(k, true),
            Unbounded => 0,
        };
        let end = match &bounds.1 {
            Included(k) => self.count_below(k, true),
            Excluded(k) => self.count_below(k, false),
            Unbounded => self.size(self.root),
        };
        end.saturating_sub(start)
    }
}

/// A sorted set: members with a score each, ordered by `(score, member bytes)`.
///
/// Two indexes that always agree: member → score (a `BTreeMap`) and the ordered set of
/// `(score, member)` (a `BTreeSet`), plus the members by a hash for `ZSCAN` and the members'
/// total length for [`Value::used_bytes`]. Scores are never NaN and never `-0` ([`ZSet::insert`] makes it `0`).
///
/// [`Value::used_bytes`]: crate::Value::used_bytes
#[derive(Clone, Debug, Default)]
pub struct ZSet {
    pub(crate) scores: BTreeMap<Bytes, f64>,
    pub(crate) order: BTreeSet<(Score, Bytes)>,
    /// `(scan_hash(member), member)`: the order `ZSCAN` walks a big set in, so that its
    /// cursor (a hash) stays valid whatever is added or removed between calls.
    pub(crate) by_hash: BTreeSet<(u64, Bytes)>,
    /// The keys of `order` again, for ranks in O(log n).
    pub(crate) ranks: RankIndex,
    pub(crate) member_bytes: usize,
}

/// The position of `member` in `ZSCAN`'s walk: FNV-1a, mixed (SplitMix64's finalizer).
pub(crate) fn scan_hash(member: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in member {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
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
    pub(crate) min: f64,
    pub(crate) min_ex: bool,
    pub(crate) max: f64,
    pub(crate) max_ex: bool,
}

impl ScoreRange {
    pub(crate) fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.min_ex || self.max_ex))
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
    pub(crate) min: LexItem,
    pub(crate) max: LexItem,
}

impl LexRange {
    pub(crate) fn is_empty(&self) -> bool {
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

    pub(crate) fn gte_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexItem::Min => true,
            LexItem::Max => false,
            LexItem::Value(v, true) => m > v.as_ref(),
            LexItem::Value(v, false) => m >= v.as_ref(),
        }
    }

    pub(crate) fn lte_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexItem::Max => true,
            LexItem::Min => false,
            LexItem::Value(v, true) => m < v.as_ref(),
            LexItem::Value(v, false) => m <= v.as_ref(),
        }
    }
}

/// The smallest `f64` above `x` (`x` not NaN, not `+inf`).
pub(crate) fn next_up(x: f64) -> f64 {
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let bits = x.to_bits();
    f64::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}

/// A range of the ordered index.
pub(crate) type OrderBounds = (Bound<(Score, Bytes)>, Bound<(Score, Bytes)>);

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
    /// `ITEM_OVERHEAD_BYTES` and 8 for its score. O(1).
    ///
    /// [`Value::used_bytes`]: crate::Value::used_bytes
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
                let key = (Score(old), member.clone());
                self.ranks.remove(&key);
                self.order.remove(&key);
            }
            None => {
                self.member_bytes += member.len();
                self.by_hash.insert((scan_hash(&member), member.clone()));
            }
        }
        self.ranks.insert((Score(score), member.clone()));
        self.order.insert((Score(score), member));
        old
    }

    /// Removes `member` and returns its score. O(log n).
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let (member, score) = self.scores.remove_entry(member)?;
        self.member_bytes -= member.len();
        self.by_hash.remove(&(scan_hash(&member), member.clone()));
        let key = (Score(score), member);
        self.ranks.remove(&key);
        self.order.remove(&key);
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
        self.by_hash.remove(&(scan_hash(&member), member.clone()));
        self.ranks.remove(&(Score(score), member.clone()));
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

    /// The 0-based rank of `member`, lowest score first (`reverse`: highest first). O(log n).
    pub fn rank(&self, member: &[u8], reverse: bool) -> Option<usize> {
        let (key_member, score) = self.scores.get_key_value(member)?;
        let forward = self.ranks.count_below(&(Score(*score), key_member.clone()), false);
        Some(if reverse { self.len() - 1 - forward } else { forward })
    }

    /// The members at ranks `start..=end` (lowest first, or highest first if `reverse`), both
    /// below `len()`, `start <= end`. O(log n + k).
    pub(crate) fn by_rank(&self, start: usize, end: usize, reverse: bool) -> Vec<(Bytes, f64)> {
        let n = self.len();
        // Ranks from the lowest end.
        let (lo, hi) = if reverse {
            (n - 1 - end, n - 1 - start)
        } else {
            (start, end)
        };
        let Some(first) = self.ranks.select(lo) else {
            return Vec::new();
        };
        let mut out: Vec<(Bytes, f64)> = self
            .order
            .range(first..)
            .take(hi - lo + 1)
            .map(|(s, m)| (m.clone(), s.0))
            .collect();
        if reverse {
            out.reverse();
        }
        out
    }

    /// How many members have a score in `range`. O(log n).
    pub(crate) fn count_in_score_range(&self, range: &ScoreRange) -> usize {
        Self::score_bounds(range).map_or(0, |bounds| self.ranks.count_in(&bounds))
    }

    /// The `(score, member)` bounds of the members whose score is in `range` (non-empty).
    pub(crate) fn score_bounds(range: &ScoreRange) -> Option<OrderBounds> {
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
    pub(crate) fn in_score_range<'a>(
        &'a self,
        range: &ScoreRange,
    ) -> impl DoubleEndedIterator<Item = (&'a Bytes, f64)> + 'a {
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
    pub(crate) fn in_lex_range<'a>(
        &'a self,
        range: &LexRange,
        reverse: bool,
    ) -> Box<dyn Iterator<Item = (&'a Bytes, f64)> + 'a> {
        let bounds = match self.lex_plan(range) {
            LexPlan::Empty => return Box::new(std::iter::empty()),
            LexPlan::Bounds(bounds) => bounds,
            LexPlan::Walk => return self.lex_walk(range.clone(), reverse),
        };
        let it = self.order.range(bounds).map(|(s, m)| (m, s.0));
        if reverse {
            Box::new(it.rev())
        } else {
            Box::new(it)
        }
    }

    /// How many members [`ZSet::in_lex_range`] answers: O(log n) when all scores are equal.
    pub(crate) fn count_in_lex_range(&self, range: &LexRange) -> usize {
        match self.lex_plan(range) {
            LexPlan::Empty => 0,
            LexPlan::Bounds(bounds) => self.ranks.count_in(&bounds),
            LexPlan::Walk => self.lex_walk(range.clone(), false).count(),
        }
    }

    /// How to answer a lex range: nothing, the ordered index's bounds (all scores equal), or
    /// the small encoding's walk (scores differ).
    pub(crate) fn lex_plan(&self, range: &LexRange) -> LexPlan {
        let (Some((Score(first), first_m)), Some((Score(last), last_m))) = (self.order.first(), self.order.last())
        else {
            return LexPlan::Empty;
        };
        if range.is_empty() || !range.gte_min(last_m) || !range.lte_max(first_m) {
            return LexPlan::Empty;
        }
        if first != last {
            return LexPlan::Walk;
        }
        let s = Score(*first);
        let low = match &range.min {
            LexItem::Min => Unbounded,
            LexItem::Max => return LexPlan::Empty,
            LexItem::Value(v, false) => Included((s, v.clone())),
            LexItem::Value(v, true) => Excluded((s, v.clone())),
        };
        let high = match &range.max {
            LexItem::Max => Unbounded,
            LexItem::Min => return LexPlan::Empty,
            LexItem::Value(v, false) => Included((s, v.clone())),
            LexItem::Value(v, true) => Excluded((s, v.clone())),
        };
        LexPlan::Bounds((low, high))
    }

    /// Redis' small-encoding answer to a lex range over differing scores (`range` not empty):
    /// from the first member (last if `reverse`) inside the range's near end, while members
    /// stay inside its far end. O(n).
    pub(crate) fn lex_walk<'a>(
        &'a self,
        range: LexRange,
        reverse: bool,
    ) -> Box<dyn Iterator<Item = (&'a Bytes, f64)> + 'a> {
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

    /// Whether Redis 7.0 keeps this set `listpack`-encoded under `zset-max-listpack-entries`
    /// `max_entries` and `zset-max-listpack-value` `max_value` (judged by the contents now).
    /// O(1) above `max_entries` members, else O(n).
    pub fn fits_listpack(&self, max_entries: usize, max_value: usize) -> bool {
        self.len() <= max_entries && self.scores.keys().all(|m| m.len() <= max_value)
    }

    /// [`ZSet::fits_listpack`] with Redis 7.0's defaults (128 members of up to 64 bytes).
    pub fn is_listpack_sized(&self) -> bool {
        self.fits_listpack(LISTPACK_MAX_ENTRIES, LISTPACK_MAX_VALUE)
    }

    /// Checks that the two indexes and the byte count agree (tests).
    #[cfg(test)]
    pub(crate) fn check(&self) {
        assert_eq!(self.scores.len(), self.order.len());
        assert_eq!(self.scores.len(), self.by_hash.len());
        for (h, m) in &self.by_hash {
            assert!(self.scores.contains_key(m));
            assert_eq!(*h, scan_hash(m));
        }
        for (s, m) in &self.order {
            assert_eq!(self.scores.get(m).map(|x| x.to_bits()), Some(s.0.to_bits()));
        }
        assert_eq!(self.member_bytes, self.scores.keys().map(|m| m.len()).sum::<usize>());
        assert_eq!(self.ranks.size(self.ranks.root), self.order.len());
        for (i, key) in self.order.iter().enumerate() {
            assert_eq!(self.ranks.select(i), Some(key));
            assert_eq!(self.ranks.count_below(key, false), i);
        }
        assert_eq!(self.ranks.nodes.len() - self.ranks.free.len(), self.order.len());
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
pub(crate) fn strtod(s: &[u8]) -> (f64, usize, bool) {
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
pub(crate) fn strtod_hex(s: &[u8]) -> Option<(f64, usize)> {
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
pub(crate) fn parse_range_end(raw: &[u8]) -> Option<(f64, bool)> {
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
pub(crate) fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Reply> {
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

pub(crate) fn parse_lex_item(raw: &Bytes) -> Option<LexItem> {
    match raw.first() {
        Some(b'+') if raw.len() == 1 => Some(LexItem::Max),
        Some(b'-') if raw.len() == 1 => Some(LexItem::Min),
        Some(b'(') => Some(LexItem::Value(raw.slice(1..), true)),
        Some(b'[') => Some(LexItem::Value(raw.slice(1..), false)),
        _ => None,
    }
}

/// A range by lex, or `ERR min or max not valid string range item`.
pub(crate) fn parse_lex_range(min: &Bytes, max: &Bytes) -> Result<LexRange, Reply> {
    match (parse_lex_item(min), parse_lex_item(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(Reply::error(RANGE_NOT_LEX)),
    }
}

/// `getLongFromObjectOrReply`: an integer, or `ERR value is not an integer or out of range`.
pub(crate) fn parse_long(raw: &[u8]) -> Result<i64, Reply> {
    parse_ll(raw).ok_or_else(|| Reply::error(NOT_INTEGER))
}

/// A double as Redis 7.0 writes it in RESP2 (`%.17g`, `inf`, `-inf`).
pub(crate) fn score_reply(score: f64) -> Reply {
    Reply::bulk(fmt_g(score, 17))
}

/// How [`ZSet::in_lex_range`] answers a range ([`ZSet::lex_plan`]).
pub(crate) enum LexPlan {
    Empty,
    Bounds(OrderBounds),
    Walk,
}
