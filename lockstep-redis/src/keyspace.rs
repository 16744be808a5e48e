//! The keyspace of one simulated Redis node: keys, values and absolute expiry times.
//!
//! Expiry follows Redis 7 exactly: a key whose expiry is `t` (ms on the node's wall clock) is
//! logically expired once `now > t` (`keyIsExpired` in `db.c`); at `now == t` it is still
//! visible, with a `PTTL` of 0. Expired keys are invisible to every read ("lazy expiry") and are
//! reclaimed either on access or by [`Keyspace::remove_expired`] ("active expiry").
//!
//! Iteration is always in key order (`BTreeMap`), so nothing observable depends on hashing.

pub use super::stream::Stream;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::zset::ZSet;

/// A stored value. Strings are what locks use; the list type exists so that `WRONGTYPE` is
/// reachable and tested.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string value.
    String(Bytes),
    /// A list value (`LPUSH`, `RPUSH`, `LPOP`, `RPOP`, `LLEN`, `LRANGE`, `LMOVE`, ...). Never
    /// empty: an emptied list is deleted, as in Redis.
    List(VecDeque<Bytes>),
    /// A hash value (`HSET`, `HGET`, ...): fields in insertion order, as Redis keeps a small
    /// hash (listpack encoding). Never empty: an emptied hash is deleted, as in Redis.
    Hash(Vec<(Bytes, Bytes)>),
    /// A set value (`SADD`, `SREM`, `SMEMBERS`, ...): members in byte order, which is the order
    /// `SMEMBERS` answers in (Redis answers a small set in insertion order, an integer set in
    /// numeric order, a large one in hash order: clients may not rely on any). Never empty: an
    /// emptied set is deleted, as in Redis.
    Set(BTreeSet<Bytes>),
    /// A sorted set (`ZADD`, `ZRANGE`, `ZPOPMIN`, ...): members with a score each, ordered by
    /// score then member bytes, with an index by member ([`ZSet`], `t_zset.rs`). Never empty:
    /// an emptied sorted set is deleted, as in Redis.
    ZSet(ZSet),
    /// A stream value (`XADD`, `XRANGE`, `XREADGROUP`, ...): entries by id with their fields in
    /// the order given, the stream's last id and counters, and its consumer groups (see
    /// [`Stream`]). Unlike the other collections it may be empty and still exist (`XDEL` of
    /// every entry, `XGROUP CREATE ... MKSTREAM`), as in Redis.
    Stream(Stream),
}

pub(crate) use super::cost::{ENTRY_OVERHEAD_BYTES, ITEM_OVERHEAD_BYTES};

impl Value {
    /// The bytes this value counts for in [`Keyspace::used_bytes`]: a string's length; a list's
    /// elements, a hash's fields and values and a set's members, plus `ITEM_OVERHEAD_BYTES`
    /// each; a sorted set's members plus `ITEM_OVERHEAD_BYTES` and 8 (the score) each, kept
    /// by the [`ZSet`] so that reading it costs O(1).
    /// a stream's entries and groups as [`Stream::used_bytes`] counts them (field and value
    /// bytes with `ITEM_OVERHEAD_BYTES` per pair, and a small fixed cost per entry, group,
    /// consumer and pending entry).
    pub fn used_bytes(&self) -> usize {
        match self {
            Value::String(s) => s.len(),
            Value::List(items) => items.iter().map(|i| i.len() + ITEM_OVERHEAD_BYTES).sum(),
            Value::Hash(fields) => fields
                .iter()
                .map(|(f, v)| f.len() + v.len() + ITEM_OVERHEAD_BYTES)
                .sum(),
            Value::Set(members) => members.iter().map(|m| m.len() + ITEM_OVERHEAD_BYTES).sum(),
            Value::ZSet(z) => z.used_bytes(),
            Value::Stream(stream) => stream.used_bytes(),
        }
    }

    /// How many elements, fields or members it holds (1 for a string).
    pub(crate) fn len(&self) -> usize {
        match self {
            Value::String(_) => 1,
            Value::List(items) => items.len(),
            Value::Hash(fields) => fields.len(),
            Value::Set(members) => members.len(),
            Value::ZSet(z) => z.len(),
            Value::Stream(stream) => stream.len(),
        }
    }

    /// The name `TYPE` reports for this value (`string`, `list`, `hash`, `set`, `zset`, `stream`).
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
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
    pub(crate) fn is_expired_at(&self, now_ms: i64) -> bool {
        self.expire_at_ms.is_some_and(|t| now_ms > t)
    }
}

/// The number of databases (`SELECT 0` to `SELECT 15`, `CONFIG GET databases`).
pub const DATABASES: usize = 16;

/// All keys of one node, with an index of expiry times so that active expiry costs nothing when
/// no key is due. Cloning gives a snapshot (for persistence modes); equality compares contents.
///
/// A keyspace holds the node's [`DATABASES`] databases: its own entries are database 0, and
/// databases 1 to 15 are keyspaces of their own inside it (`Keyspace::db_mut`), made when
/// first written. The methods on keys (`get`, `insert`, `iter`, `len`, ...) are database 0's,
/// or the database's they are called on; [`Keyspace::used_bytes`], [`Keyspace::next_expiry_ms`],
/// `Keyspace::remove_expired` and equality cover them all, so a snapshot, a restore, active
/// expiry and the memory limit see every database. A node that only uses database 0 holds and
/// does exactly what it did before databases existed.
///
/// Every mutation also notes the key as *touched* (Redis' `signalModifiedKey`, which `WATCH`
/// observes): a write that stores, deletes (expiry included) or changes the TTL of a key, even to
/// the same value. `Keyspace::take_touched` drains the notes; they take no part in equality.
///
/// The keyspace also keeps an approximate count of the memory its data takes
/// ([`Keyspace::used_bytes`]), what Redis' `maxmemory` is compared with.
#[derive(Clone, Debug, Default)]
pub struct Keyspace {
    entries: BTreeMap<Bytes, Entry>,
    /// `(expire_at_ms, key)` for every entry that has a TTL.
    expiries: BTreeSet<(i64, Bytes)>,
    /// Keys modified since the last [`Keyspace::take_touched`].
    touched: BTreeSet<Bytes>,
    /// The sum of [`entry_bytes`] over the entries.
    used: usize,
    /// While a command runs ([`Keyspace::begin_journal`]): each key it changed, with a summary
    /// of its entry before the first change ([`Summary`]: O(1) for a list, set or other
    /// collection, so a push or pop on a long list costs no copy of it) and whether a collection
    /// was handed out for writing. `None` otherwise (expiry between commands, restores).
    /// Database 0's only: the history records what commands do to database 0.
    journal: Option<BTreeMap<Bytes, (Option<Summary>, bool)>>,
    /// Databases 1 to 15 that were ever written (their own `others` stay empty).
    others: BTreeMap<usize, Keyspace>,
    /// The state of the generator behind random choices (`SPOP`, `SRANDMEMBER`, `RANDOMKEY`...):
    /// deterministic, so the same commands give the same answers. Not part of equality.
    random_state: u64,
    /// Keys removed because they expired since [`Keyspace::take_expired_all`] (for keyspace
    /// notifications); `None` while nobody asks.
    expired_log: Option<Vec<Bytes>>,
    /// Databases `SWAPDB` exchanged since [`Keyspace::take_swapped`].
    swapped: Vec<(usize, usize)>,
    /// Keyspace events a handler raised beyond its command's own (a consumer a stream command
    /// created or deleted), drained after each command ([`Keyspace::take_raised`]).
    raised: Vec<(Bytes, &'static str)>,
}

/// One key a command changed: `(key, before, after)`, each `None` when absent or expired.
pub(crate) type KeyChange = (Bytes, Option<Summary>, Option<Summary>);

/// What the history needs of an entry: a string's value and a hash's fields whole (a lock's
/// holder is in them), any other type by its name and length only, and the expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) value: SummaryValue,
    pub(crate) expire_at_ms: Option<i64>,
}

/// A [`Summary`]'s value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SummaryValue {
    String(Bytes),
    Hash(Vec<(Bytes, Bytes)>),
    /// A list, set or other collection: its type and length.
    Collection(&'static str, usize),
}

impl Summary {
    fn of(entry: &Entry) -> Summary {
        let value = match &entry.value {
            Value::String(s) => SummaryValue::String(s.clone()),
            Value::Hash(fields) => SummaryValue::Hash(fields.clone()),
            other => SummaryValue::Collection(other.type_name(), other.len()),
        };
        Summary {
            value,
            expire_at_ms: entry.expire_at_ms,
        }
    }
}

/// What one entry counts for in [`Keyspace::used_bytes`].
fn entry_bytes(key: &[u8], value: &Value) -> usize {
    key.len() + ENTRY_OVERHEAD_BYTES + value.used_bytes()
}

impl PartialEq for Keyspace {
    fn eq(&self, other: &Self) -> bool {
        // Databases never written and databases emptied again are alike.
        fn filled(ks: &Keyspace) -> Vec<(usize, &Keyspace)> {
            ks.others
                .iter()
                .filter(|(_, db)| !db.entries.is_empty())
                .map(|(i, db)| (*i, db))
                .collect()
        }
        self.entries == other.entries
            && self.expiries == other.expiries
            && (self.others.is_empty() && other.others.is_empty() || filled(self) == filled(other))
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

    /// The memory the data takes, approximately: for every stored key (expired or not) of
    /// every database, its name, its value ([`Value::used_bytes`]) and
    /// `ENTRY_OVERHEAD_BYTES`. Kept up to date by every change, so reading it costs nothing.
    pub fn used_bytes(&self) -> usize {
        self.others
            .values()
            .fold(self.used, |sum, db| sum.saturating_add(db.used))
    }

    /// Database `index` (0 is this keyspace's own entries); `None` if it was never written.
    pub fn db(&self, index: usize) -> Option<&Keyspace> {
        if index == 0 {
            Some(self)
        } else {
            self.others.get(&index)
        }
    }

    /// Database `index` for commands that may write it, made empty if it was never written.
    /// `index` must be below [`DATABASES`] (the engine checks `SELECT`'s argument).
    pub(crate) fn db_mut(&mut self, index: usize) -> &mut Keyspace {
        if index == 0 {
            self
        } else {
            let logging = self.expired_log.is_some();
            self.others.entry(index).or_insert_with(|| Keyspace {
                expired_log: logging.then(Vec::new),
                ..Keyspace::default()
            })
        }
    }

    /// The databases that hold keys, with their index, in index order (database 0 first).
    pub(crate) fn databases(&self) -> impl Iterator<Item = (usize, &Keyspace)> {
        std::iter::once((0, self)).chain(self.others.iter().map(|(i, db)| (*i, db)))
    }

    /// `SWAPDB a b`: exchanges the contents of two databases in O(1) (their maps are swapped,
    /// not their keys). Who watches or waits on a key of either learns it from
    /// [`Keyspace::take_swapped`] (Redis's `touchAllWatchedKeysInDb` walks the watched keys, not
    /// the data); the history records no per-key effect for it.
    pub(crate) fn swap_dbs(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let (low, high) = (a.min(b), a.max(b));
        let mut taken = std::mem::take(self.db_mut(high));
        let target = self.db_mut(low);
        std::mem::swap(&mut target.entries, &mut taken.entries);
        std::mem::swap(&mut target.expiries, &mut taken.expiries);
        std::mem::swap(&mut target.used, &mut taken.used);
        *self.db_mut(high) = taken;
        self.swapped.push((low, high));
    }

    /// The databases `SWAPDB` exchanged since the last call.
    pub(crate) fn take_swapped(&mut self) -> Vec<(usize, usize)> {
        std::mem::take(&mut self.swapped)
    }

    /// `FLUSHALL`: removes every key of every database.
    pub(crate) fn clear_all(&mut self) {
        self.clear();
        for db in self.others.values_mut() {
            db.clear();
        }
    }

    /// Drains the keys modified since the last call in every database, as
    /// `(database, key)` in order.
    pub(crate) fn take_touched_all(&mut self) -> Vec<(usize, Bytes)> {
        let mut out: Vec<(usize, Bytes)> = self.take_touched().into_iter().map(|k| (0, k)).collect();
        for (i, db) in self.others.iter_mut() {
            out.extend(db.take_touched().into_iter().map(|k| (*i, k)));
        }
        out
    }

    /// Puts back keys drained by [`Keyspace::take_touched_all`] (`(database, key)`), for a
    /// caller that looked at what one command wrote.
    pub(crate) fn restore_touched(&mut self, keys: impl IntoIterator<Item = (usize, Bytes)>) {
        for (db, key) in keys {
            self.db_mut(db).touched.insert(key);
        }
    }

    /// Number of keys that are not expired at `now_ms`.
    pub(crate) fn live_len(&self, now_ms: i64) -> usize {
        let due = self.expiries.range(..(now_ms, Bytes::new())).count();
        self.entries.len() - due
    }

    /// The entry of `key` if it exists and is not expired at `now_ms`. Does not reclaim.
    pub(crate) fn peek(&self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.entries.get(key).filter(|e| !e.is_expired_at(now_ms))
    }

    /// The stored entry of `key`, expired or not.
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Like `Keyspace::peek`, but reclaims the key if it is expired (lazy expiry).
    pub fn lookup(&mut self, key: &[u8], now_ms: i64) -> Option<&Entry> {
        self.expire_if_needed(key, now_ms);
        self.entries.get(key)
    }

    /// Mutable access to the value of a live key, for a write: the key counts as touched (the
    /// expiry can only change through [`Keyspace::set_expire`], which keeps the index right).
    /// The caller reports how the value's [`Value::used_bytes`] changed with
    /// [`Keyspace::grew`] / [`Keyspace::shrank`] (measuring a list after each push would make
    /// pushes cost its length).
    pub(crate) fn value_mut(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Value> {
        self.expire_if_needed(key, now_ms);
        let stored_key = self.entries.get_key_value(key)?.0.clone();
        self.note_mutation(&stored_key);
        self.touched.insert(stored_key);
        self.entries.get_mut(key).map(|e| &mut e.value)
    }

    /// [`Keyspace::value_mut`] for a write Redis does not signal (no `signalModifiedKey`: a
    /// stream's consumer-group bookkeeping, `XREADGROUP`, `XACK`, `XCLAIM`, `XSETID`...): the
    /// change is journaled (the history and the replicas see it) but the key is not touched,
    /// so a `WATCH` on it does not abort `EXEC`.
    pub(crate) fn value_mut_unsignalled(&mut self, key: &[u8], now_ms: i64) -> Option<&mut Value> {
        self.expire_if_needed(key, now_ms);
        let stored_key = self.entries.get_key_value(key)?.0.clone();
        self.note_mutation(&stored_key);
        self.entries.get_mut(key).map(|e| &mut e.value)
    }

    /// A value changed through [`Keyspace::value_mut`] grew by `bytes`.
    pub(crate) fn grew(&mut self, bytes: usize) {
        self.used = self.used.saturating_add(bytes);
    }

    /// A value changed through [`Keyspace::value_mut`] shrank by `bytes`.
    pub(crate) fn shrank(&mut self, bytes: usize) {
        self.used = self.used.saturating_sub(bytes);
    }

    /// Drains the keys modified since the last call, in key order.
    pub(crate) fn take_touched(&mut self) -> BTreeSet<Bytes> {
        std::mem::take(&mut self.touched)
    }

    /// Stores `value` under `key` with the given expiry, replacing any previous entry and TTL.
    pub fn insert(&mut self, key: Bytes, value: Value, expire_at_ms: Option<i64>) {
        self.note(&key);
        if let Some(old) = self.entries.get(&key) {
            if let Some(t) = old.expire_at_ms {
                self.expiries.remove(&(t, key.clone()));
            }
            self.used = self.used.saturating_sub(entry_bytes(&key, &old.value));
        }
        if let Some(t) = expire_at_ms {
            self.expiries.insert((t, key.clone()));
        }
        self.touched.insert(key.clone());
        self.used = self.used.saturating_add(entry_bytes(&key, &value));
        self.entries.insert(key, Entry { value, expire_at_ms });
    }

    /// [`Keyspace::insert`] for a write Redis does not signal (a `BITFIELD` whose every write
    /// failed under `OVERFLOW FAIL` still makes or grows the string): journaled, not touched.
    pub(crate) fn insert_unsignalled(&mut self, key: Bytes, value: Value, expire_at_ms: Option<i64>) {
        let was_touched = self.touched.contains(&key);
        self.insert(key.clone(), value, expire_at_ms);
        if !was_touched {
            self.touched.remove(&key);
        }
    }

    /// Removes `key` (expired or not) and returns its entry.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        self.note(key);
        let (key, entry) = self.entries.remove_entry(key)?;
        if let Some(t) = entry.expire_at_ms {
            self.expiries.remove(&(t, key.clone()));
        }
        self.used = self.used.saturating_sub(entry_bytes(&key, &entry.value));
        self.touched.insert(key);
        Some(entry)
    }

    /// Sets or clears the expiry of an existing key. Returns `false` if the key is not stored.
    pub(crate) fn set_expire(&mut self, key: &[u8], expire_at_ms: Option<i64>) -> bool {
        let Some((stored_key, entry)) = self.entries.get_key_value(key) else {
            return false;
        };
        let (stored_key, old_expire_at_ms) = (stored_key.clone(), entry.expire_at_ms);
        self.note(&stored_key);
        self.touched.insert(stored_key.clone());
        if let Some(t) = old_expire_at_ms {
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

    /// The earliest expiry time of any key of any database, wall ms (a key is removed once the
    /// clock reads past it).
    pub fn next_expiry_ms(&self) -> Option<i64> {
        let own = self.expiries.first().map(|(t, _)| *t);
        self.others
            .values()
            .filter_map(|db| db.expiries.first().map(|(t, _)| *t))
            .fold(own, |min, t| Some(min.map_or(t, |m| m.min(t))))
    }

    /// Removes every key of every database that is expired at `now_ms` (expiry `< now_ms`)
    /// and returns database 0's in key order (what a master replicates as `DEL`s). Costs one
    /// index probe per database when nothing is due.
    pub(crate) fn remove_expired(&mut self, now_ms: i64) -> Vec<Bytes> {
        for db in self.others.values_mut() {
            db.remove_expired_here(now_ms);
        }
        self.remove_expired_here(now_ms)
    }

    /// [`Keyspace::remove_expired`] for this database alone.
    fn remove_expired_here(&mut self, now_ms: i64) -> Vec<Bytes> {
        let mut due: Vec<Bytes> = Vec::new();
        while let Some((t, _)) = self.expiries.first() {
            if *t >= now_ms {
                break;
            }
            if let Some((_, key)) = self.expiries.pop_first() {
                self.note(&key);
                if let Some(entry) = self.entries.remove(&key) {
                    self.used = self.used.saturating_sub(entry_bytes(&key, &entry.value));
                }
                self.touched.insert(key.clone());
                if let Some(log) = &mut self.expired_log {
                    log.push(key.clone());
                }
                due.push(key);
            }
        }
        due.sort();
        due
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        if self.journal.is_some() {
            let keys: Vec<Bytes> = self.entries.keys().cloned().collect();
            for key in &keys {
                self.note(key);
            }
        }
        self.touched.extend(self.entries.keys().cloned());
        self.entries.clear();
        self.expiries.clear();
        self.used = 0;
    }

    /// Every stored entry in key order, including logically expired ones.
    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &Entry)> {
        self.entries.iter()
    }

    /// [`Keyspace::used_bytes`] computed from scratch, every database (tests check the running
    /// count with it).
    #[cfg(test)]
    pub(crate) fn recount_used_bytes(&self) -> usize {
        let own: usize = self.entries.iter().map(|(k, e)| entry_bytes(k, &e.value)).sum();
        own + self.others.values().map(Keyspace::recount_used_bytes).sum::<usize>()
    }

    /// The next number of the keyspace's deterministic generator (SplitMix64).
    pub(crate) fn next_random(&mut self) -> u64 {
        self.random_state = self.random_state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.random_state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Starts noting what the next command changes ([`Keyspace::end_journal`]).
    pub(crate) fn begin_journal(&mut self) {
        self.journal = Some(BTreeMap::new());
    }

    /// Stops noting and returns every key whose logical state (value and expiry, as seen at
    /// `now_ms`: an expired entry counts as absent) differs from before the command, in key order.
    pub(crate) fn end_journal(&mut self, now_ms: i64) -> Vec<KeyChange> {
        let Some(journal) = self.journal.take() else {
            return Vec::new();
        };
        journal
            .into_iter()
            .filter_map(|(key, (before, mutated))| {
                let live = |at: Option<i64>| at.is_none_or(|t| now_ms <= t);
                let before = before.filter(|e| live(e.expire_at_ms));
                let after = self
                    .entries
                    .get(&key)
                    .filter(|e| !e.is_expired_at(now_ms))
                    .map(Summary::of);
                // A collection written in place may have changed without changing its length.
                let rewritten = mutated
                    && matches!(
                        after,
                        Some(Summary {
                            value: SummaryValue::Collection(..),
                            ..
                        })
                    );
                (before != after || rewritten).then_some((key, before, after))
            })
            .collect()
    }

    /// Notes `key`'s entry before its first change under a journal.
    fn note(&mut self, key: &[u8]) {
        if let Some(journal) = &mut self.journal {
            if !journal.contains_key(key) {
                let before = self.entries.get(key).map(Summary::of);
                journal.insert(Bytes::copy_from_slice(key), (before, false));
            }
        }
    }

    /// Notes that `key`'s value is handed out for writing in place.
    fn note_mutation(&mut self, key: &[u8]) {
        self.note(key);
        if let Some((_, mutated)) = self.journal.as_mut().and_then(|j| j.get_mut(key)) {
            *mutated = true;
        }
    }

    fn expire_if_needed(&mut self, key: &[u8], now_ms: i64) {
        if self.entries.get(key).is_some_and(|e| e.is_expired_at(now_ms)) {
            if let Some(log) = &mut self.expired_log {
                log.push(Bytes::copy_from_slice(key));
            }
            self.remove(key);
        }
    }

    /// Starts (or stops) noting the keys that expire, in every database.
    /// Raises keyspace event `event` on `key` (published when the classes ask for it).
    pub(crate) fn raise(&mut self, key: &[u8], event: &'static str) {
        self.raised.push((Bytes::copy_from_slice(key), event));
    }

    /// Drains the events raised by [`Keyspace::raise`] in this database.
    pub(crate) fn take_raised(&mut self) -> Vec<(Bytes, &'static str)> {
        std::mem::take(&mut self.raised)
    }

    pub(crate) fn log_expirations(&mut self, on: bool) {
        let log = |db: &mut Keyspace| db.expired_log = on.then(|| db.expired_log.take().unwrap_or_default());
        log(self);
        for db in self.others.values_mut() {
            log(db);
        }
    }

    /// Drains the keys that expired since the last call, with their database.
    pub(crate) fn take_expired_all(&mut self) -> Vec<(usize, Bytes)> {
        let mut out: Vec<(usize, Bytes)> = Vec::new();
        if let Some(log) = &mut self.expired_log {
            out.extend(log.drain(..).map(|k| (0, k)));
        }
        for (i, db) in &mut self.others {
            if let Some(log) = &mut db.expired_log {
                out.extend(log.drain(..).map(|k| (*i, k)));
            }
        }
        out
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

    #[test]
    fn databases_swap_expire_and_compare_as_a_whole() {
        let mut ks = Keyspace::new();
        ks.insert(Bytes::from_static(b"zero"), s("0"), None);
        ks.db_mut(3).insert(Bytes::from_static(b"three"), s("3"), Some(50));
        assert_eq!(ks.len(), 1, "len is database 0's");
        assert_eq!(ks.used_bytes(), ks.recount_used_bytes());
        assert_eq!(ks.next_expiry_ms(), Some(50));
        let snapshot = ks.clone();
        assert_eq!(snapshot, ks);
        ks.take_touched_all();
        ks.swap_dbs(3, 0);
        assert_eq!(ks.get(b"three").map(|e| e.expire_at_ms), Some(Some(50)));
        assert!(ks.db(3).is_some_and(|db| db.get(b"zero").is_some()));
        assert_ne!(snapshot, ks);
        // O(1): no key is touched one by one; the swap itself is reported.
        assert!(ks.take_touched_all().is_empty());
        assert_eq!(ks.take_swapped(), vec![(0, 3)]);
        ks.swap_dbs(0, 3);
        assert_eq!(snapshot, ks);
        // An emptied database equals one never written.
        ks.db_mut(5);
        assert_eq!(snapshot, ks);
        assert_eq!(
            ks.remove_expired(51),
            Vec::<Bytes>::new(),
            "only database 0's keys are returned"
        );
        assert_eq!(ks.db(3).map(Keyspace::len), Some(0));
        assert_eq!(ks.next_expiry_ms(), None);
        assert_eq!(ks.used_bytes(), ks.recount_used_bytes());
        ks.db_mut(2).insert(Bytes::from_static(b"two"), s("2"), None);
        ks.clear_all();
        assert_eq!(ks, Keyspace::new());
        assert_eq!(ks.used_bytes(), 0);
    }
}
