//! The keyspace of one simulated Redis node: keys, values and absolute expiry times.
//!
//! Expiry follows Redis 7 exactly: a key whose expiry is `t` (ms on the node's wall clock) is
//! logically expired once `now > t` (`keyIsExpired` in `db.c`); at `now == t` it is still
//! visible, with a `PTTL` of 0. Expired keys are invisible to every read ("lazy expiry") and are
//! reclaimed either on access or by [`Keyspace::remove_expired`] ("active expiry").
//!
//! Iteration is always in key order (`BTreeMap`), so nothing observable depends on hashing.

use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A stored value. Strings are what locks use; the list type exists so that `WRONGTYPE` is
/// reachable and tested.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string value.
    String(Bytes),
    /// A list value (`LPUSH`, `RPUSH`, `LPOP`, `RPOP`, `LLEN`). Never empty: an emptied list is
    /// deleted, as in Redis.
    List(VecDeque<Bytes>),
    /// A hash value (`HSET`, `HGET`, ...): fields in insertion order, as Redis keeps a small
    /// hash (listpack encoding). Never empty: an emptied hash is deleted, as in Redis.
    Hash(Vec<(Bytes, Bytes)>),
}

impl Value {
    /// The name `TYPE` reports for this value (`string`, `list`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
        }
    }
}

/// A key's value and its absolute expiry time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Absolute expiry on the node's wall clock, ms since the Unix epoch; `None` = no TTL.
    pub expire_at_ms: Option<i64>,
}

impl Entry {
    /// Whether this entry is logically expired at `now_ms` (Redis: `now > expire_at`).
    pub fn is_expired_at(&self, now_ms: i64) -> bool {
        self.expire_at_ms.is_some_and(|t| now_ms > t)
    }
}

/// All keys of one node, with an index of expiry times so that active expiry costs nothing when
/// no key is due. Cloning gives a snapshot (for persistence modes); equality compares contents.
///
/// Every mutation also notes the key as *touched* (Redis' `signalModifiedKey`, which `WATCH`
/// observes): a write that stores, deletes (expiry included) or changes the TTL of a key, even to
/// the same value. [`Keyspace::take_touched`] drains the notes; they take no part in equality.
#[derive(Clone, Debug, Default)]
pub struct Keyspace {
    entries: BTreeMap<Bytes, Entry>,
    /// `(expire_at_ms, key)` for every entry that has a TTL.
    expiries: BTreeSet<(i64, Bytes)>,
    /// Keys modified since the last [`Keyspace::take_touched`].
    touched: BTreeSet<Bytes>,
}

impl PartialEq for Keyspace {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries && self.expiries == other.expiries
    }
}

impl Eq for Keyspace {}

impl Keyspace {
    /// An empty keyspace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of stored keys, including keys that are logically expired but not yet reclaimed
    /// (what Redis' `DBSIZE` reports).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of keys that are not expired at `now_ms`.
    pub fn live_len(&self, now_ms: i64) -> usize {
        let due = self.expiries.range(..(now_ms, Bytes::new())).count();
        self.entries.len() - due
    }

    /// The entry of `key` if it exists and is not expired at `now_ms`. Does not reclaim.
    pub fn peek(&self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.entries.get(key).filter(|e| !e.is_expired_at(now_ms))
    }

    /// The stored entry of `key`, expired or not.
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Like [`Keyspace::peek`], but reclaims the key if it is expired (lazy expiry).
    pub fn lookup(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.expire_if_needed(key, now_ms);
        self.entries.get(key)
    }

    /// Mutable access to the value of a live key, for a write: the key counts as touched (the
    /// expiry can only change through [`Keyspace::set_expire`], which keeps the index right).
    pub fn value_mut(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Value> {
        self.expire_if_needed(key, now_ms);
        let stored_key = self.entries.get_key_value(key)?.0.clone();
        self.touched.insert(stored_key);
        self.entries.get_mut(key).map(|e| &mut e.value)
    }

    /// Drains the keys modified since the last call, in key order.
    pub fn take_touched(&mut self) -> BTreeSet<Bytes> {
        std::mem::take(&mut self.touched)
    }

    /// Stores `value` under `key` with the given expiry, replacing any previous entry and TTL.
    pub fn insert(&mut self, key: Bytes, value: Value, expire_at_ms: Option<i64>) {
        if let Some(old) = self.entries.get(&key) {
            if let Some(t) = old.expire_at_ms {
                self.expiries.remove(&(t, key.clone()));
            }
        }
        if let Some(t) = expire_at_ms {
            self.expiries.insert((t, key.clone()));
        }
        self.touched.insert(key.clone());
        self.entries.insert(key, Entry { value, expire_at_ms });
    }

    /// Removes `key` (expired or not) and returns its entry.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let (key, entry) = self.entries.remove_entry(key)?;
        if let Some(t) = entry.expire_at_ms {
            self.expiries.remove(&(t, key.clone()));
        }
        self.touched.insert(key);
        Some(entry)
    }

    /// Sets or clears the expiry of an existing key. Returns `false` if the key is not stored.
    pub fn set_expire(&mut self, key: &[u8], expire_at_ms: Option<i64>) -> bool {
        let Some((stored_key, entry)) = self.entries.get_key_value(key) else {
            return false;
        };
        let stored_key = stored_key.clone();
        self.touched.insert(stored_key.clone());
        if let Some(t) = entry.expire_at_ms {
            self.expiries.remove(&(t, stored_key.clone()));
        }
        if let Some(t) = expire_at_ms {
            self.expiries.insert((t, stored_key.clone()));
        }
        if let Some(entry) = self.entries.get_mut(&stored_key) {
            entry.expire_at_ms = expire_at_ms;
        }
        true
    }

    /// Removes every key that is expired at `now_ms` (expiry `< now_ms`) and returns them in
    /// key order. Costs one index probe when nothing is due.
    pub fn remove_expired(&mut self, now_ms: i64) -> Vec<Bytes> {
        let mut due: Vec<Bytes> = Vec::new();
        while let Some((t, _)) = self.expiries.first() {
            if *t >= now_ms {
                break;
            }
            if let Some((_, key)) = self.expiries.pop_first() {
                self.entries.remove(&key);
                self.touched.insert(key.clone());
                due.push(key);
            }
        }
        due.sort();
        due
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.touched.extend(self.entries.keys().cloned());
        self.entries.clear();
        self.expiries.clear();
    }

    /// Every stored entry in key order, including logically expired ones.
    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &Entry)> {
        self.entries.iter()
    }

    fn expire_if_needed(&mut self, key: &[u8], now_ms: i64) {
        if self.entries.get(key).is_some_and(|e| e.is_expired_at(now_ms)) {
            self.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::String(Bytes::copy_from_slice(v.as_bytes()))
    }

    #[test]
    fn expiry_index_follows_inserts_and_removals() {
        let mut ks = Keyspace::new();
        ks.insert(Bytes::from_static(b"b"), s("1"), Some(100));
        ks.insert(Bytes::from_static(b"a"), s("1"), Some(100));
        ks.insert(Bytes::from_static(b"c"), s("1"), Some(50));
        ks.insert(Bytes::from_static(b"c"), s("2"), None); // replaces TTL
        assert!(ks.set_expire(b"b", Some(200)));
        assert!(!ks.set_expire(b"zz", Some(1)));
        assert_eq!(ks.live_len(100), 3);
        assert_eq!(ks.live_len(101), 2);
        assert!(ks.remove_expired(100).is_empty());
        assert_eq!(ks.remove_expired(101), vec![Bytes::from_static(b"a")]);
        assert_eq!(ks.remove_expired(1_000), vec![Bytes::from_static(b"b")]);
        assert_eq!(ks.len(), 1);
        assert!(ks.remove_expired(i64::MAX).is_empty());
    }

    #[test]
    fn expired_keys_are_invisible_and_reclaimed_lazily() {
        let mut ks = Keyspace::new();
        ks.insert(Bytes::from_static(b"k"), s("v"), Some(10));
        assert!(ks.peek(b"k", 10).is_some());
        assert!(ks.peek(b"k", 11).is_none());
        assert_eq!(ks.len(), 1);
        assert!(ks.lookup(b"k", 11).is_none());
        assert_eq!(ks.len(), 0);
        assert_eq!(ks, Keyspace::new());
    }
}
