//! The stream value ([`Stream`]): entries by id, consumer groups with their pending entries and
//! consumers, and what they cost (`t_stream.rs` holds the commands). Nothing here knows the
//! keyspace.

use super::cost::ITEM_OVERHEAD_BYTES;
use super::reply::Reply;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Entries per radix-tree node (Redis's `stream-node-max-entries` default).
pub(crate) const NODE_MAX_ENTRIES: usize = 100;
/// What an entry costs besides its fields and values (its id and listpack bookkeeping).
pub(crate) const ENTRY_COST_BYTES: usize = 16;
/// What a consumer group, a consumer or a pending entry costs besides its name.
pub(crate) const GROUP_COST_BYTES: usize = 64;

/// `ERR Invalid stream ID specified as stream command argument`.
pub(crate) const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// A stream entry id: milliseconds and sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence part.
    pub seq: u64,
}

impl StreamId {
    /// `0-0`.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The greatest id.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The next id; `None` after the greatest.
    pub fn next(self) -> Option<StreamId> {
        if self.seq < u64::MAX {
            Some(StreamId {
                ms: self.ms,
                seq: self.seq + 1,
            })
        } else if self.ms < u64::MAX {
            Some(StreamId {
                ms: self.ms + 1,
                seq: 0,
            })
        } else {
            None
        }
    }

    /// The previous id; `None` before `0-0`.
    pub fn prev(self) -> Option<StreamId> {
        if self.seq > 0 {
            Some(StreamId {
                ms: self.ms,
                seq: self.seq - 1,
            })
        } else if self.ms > 0 {
            Some(StreamId {
                ms: self.ms - 1,
                seq: u64::MAX,
            })
        } else {
            None
        }
    }

    pub(crate) fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    pub(crate) fn reply(self) -> Reply {
        Reply::bulk(self.to_string())
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// One entry of a group's pending entries list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEntry {
    /// The consumer it was last delivered to.
    pub consumer: Bytes,
    /// When it was last delivered, wall ms.
    pub delivery_time_ms: i64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    /// When it was last seen (created, read, claimed), wall ms.
    pub seen_time_ms: i64,
    /// The ids of its pending entries (the entries themselves are the group's).
    pub pending: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// The last id delivered to the group's consumers.
    pub last_delivered: StreamId,
    /// The logical read counter of the last delivered entry; `None` when unknown.
    pub entries_read: Option<u64>,
    /// The pending entries list.
    pub pending: BTreeMap<StreamId, PendingEntry>,
    /// The consumers, by name.
    pub consumers: BTreeMap<Bytes, Consumer>,
}

/// A radix-tree node of Redis's stream: which entries it held, for approximate trimming.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// The last id appended to it (maybe deleted since).
    pub(crate) last: StreamId,
    /// Its entries not deleted.
    pub(crate) live: usize,
    /// Every entry appended to it, deleted ones included.
    pub(crate) total: usize,
}

/// A stream value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    pub(crate) entries: BTreeMap<StreamId, Vec<(Bytes, Bytes)>>,
    pub(crate) last_id: StreamId,
    pub(crate) entries_added: u64,
    pub(crate) max_deleted_id: StreamId,
    pub(crate) first_id: StreamId,
    pub(crate) groups: BTreeMap<Bytes, Group>,
    /// The nodes by their first (master) id.
    pub(crate) nodes: BTreeMap<StreamId, Node>,
    /// The entries' part of [`Stream::used_bytes`], kept up to date.
    pub(crate) entry_bytes: usize,
}

pub(crate) fn entry_cost(fields: &[(Bytes, Bytes)]) -> usize {
    ENTRY_COST_BYTES
        + fields
            .iter()
            .map(|(f, v)| f.len() + v.len() + ITEM_OVERHEAD_BYTES)
            .sum::<usize>()
}

impl Stream {
    /// The bytes it counts for in [`Keyspace::used_bytes`]: each entry's fields and values with
    /// `ITEM_OVERHEAD_BYTES` per pair and a fixed cost per entry, and a fixed cost plus the
    /// name per group and consumer and a fixed cost per pending entry.
    ///
    /// [`Keyspace::used_bytes`]: crate::Keyspace::used_bytes
    pub fn used_bytes(&self) -> usize {
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| {
                GROUP_COST_BYTES
                    + name.len()
                    + g.pending.len() * ITEM_OVERHEAD_BYTES
                    + g.consumers.keys().map(|c| GROUP_COST_BYTES + c.len()).sum::<usize>()
            })
            .sum();
        self.entry_bytes + groups
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no entry (an empty stream is still a key, unlike an empty list).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The last generated id.
    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    /// The entries in id order, each with its field-value pairs in the order they were given.
    pub fn entries(&self) -> impl Iterator<Item = (StreamId, &[(Bytes, Bytes)])> {
        self.entries.iter().map(|(id, fields)| (*id, fields.as_slice()))
    }

    /// The consumer groups by name.
    pub fn groups(&self) -> &BTreeMap<Bytes, Group> {
        &self.groups
    }

    /// Appends an entry with id `id` (greater than the last id: the caller checked).
    pub(crate) fn append(&mut self, id: StreamId, fields: Vec<(Bytes, Bytes)>) {
        self.entry_bytes += entry_cost(&fields);
        self.entries.insert(id, fields);
        match self.nodes.last_entry() {
            Some(mut node) if node.get().total < NODE_MAX_ENTRIES => {
                let node = node.get_mut();
                node.last = id;
                node.live += 1;
                node.total += 1;
            }
            _ => {
                self.nodes.insert(
                    id,
                    Node {
                        last: id,
                        live: 1,
                        total: 1,
                    },
                );
            }
        }
        self.entries_added += 1;
        self.last_id = id;
        if self.entries.len() == 1 {
            self.first_id = id;
        }
    }

    /// Removes entry `id` (from its node too, which goes when emptied if `drop_node`).
    pub(crate) fn remove_entry(&mut self, id: StreamId, drop_node: bool) -> bool {
        let Some(fields) = self.entries.remove(&id) else {
            return false;
        };
        self.entry_bytes -= entry_cost(&fields);
        if let Some((&master, node)) = self.nodes.range_mut(..=id).next_back() {
            node.live -= 1;
            if node.live == 0 && drop_node {
                self.nodes.remove(&master);
            }
        }
        true
    }

    /// The first entry not deleted (`first_id` after a deletion).
    pub(crate) fn refresh_first_id(&mut self) {
        self.first_id = self.entries.keys().next().copied().unwrap_or(StreamId::MIN);
    }

    /// `XDEL`'s deletion of one entry.
    pub(crate) fn delete(&mut self, id: StreamId) -> bool {
        if !self.remove_entry(id, true) {
            return false;
        }
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        true
    }

    /// Redis's `streamTrim`: whole nodes first; with `approx`, only whole nodes.
    pub(crate) fn trim(&mut self, trim: &Trim) -> u64 {
        let mut deleted: u64 = 0;
        // Each round removes the first node or ends: O(removed) per call, as in Redis.
        while let Some((&master, node)) = self.nodes.first_key_value() {
            let node = node.clone();
            if let Strategy::MaxLen(max) = trim.strategy {
                if self.entries.len() as u64 <= max {
                    break;
                }
            }
            let live = node.live as u64;
            if trim.limit > 0 && deleted + live > trim.limit {
                break;
            }
            let remove_node = match trim.strategy {
                Strategy::MaxLen(max) => self.entries.len() as u64 - live >= max,
                Strategy::MinId(min) => node.last < min,
            };
            let ids: Vec<StreamId> = self.entries.range(master..=node.last).map(|(id, _)| *id).collect();
            if remove_node {
                for id in ids {
                    self.remove_entry(id, false);
                }
                self.nodes.remove(&master);
                deleted += live;
                continue;
            }
            if trim.approx {
                break;
            }
            for id in ids {
                let stop = match trim.strategy {
                    Strategy::MaxLen(max) => self.entries.len() as u64 <= max,
                    Strategy::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                self.remove_entry(id, false);
                deleted += 1;
            }
            break;
        }
        if deleted > 0 {
            self.refresh_first_id();
        }
        deleted
    }

    /// Whether the ids from `start` on may hold a deleted entry (`streamRangeHasTombstones`
    /// with no end).
    pub(crate) fn range_has_tombstones(&self, start: StreamId) -> bool {
        if self.entries.is_empty() || self.max_deleted_id.is_zero() || self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// The logical read counter of `id` when it can be known
    /// (`streamEstimateDistanceFromFirstEverEntry`).
    pub(crate) fn estimate_entries_read(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.entries.is_empty() && id <= self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        }
        if id > self.last_id {
            return None;
        }
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            let len = self.entries.len() as u64;
            if id < self.first_id {
                return Some(self.entries_added - len);
            } else if id == self.first_id {
                return Some(self.entries_added - len + 1);
            }
        }
        None
    }

    /// A group's lag, when it can be known.
    pub(crate) fn lag(&self, group: &Group) -> Option<i64> {
        // Signed, as Redis computes it: a group told it read more than was added (`ENTRIESREAD`,
        // `XSETID ... ENTRIESADDED`) has a negative lag.
        let lag = |read: u64| (self.entries_added as i64).wrapping_sub(read as i64);
        if self.entries_added == 0 {
            return Some(0);
        }
        if let Some(read) = group.entries_read {
            if !self.range_has_tombstones(group.last_delivered) {
                return Some(lag(read));
            }
        }
        self.estimate_entries_read(group.last_delivered).map(lag)
    }
}

impl Stream {
    /// How many nodes Redis's radix tree of the stream's nodes has (`rax->numnodes`): the tree
    /// of their 16-byte big-endian master ids, compressed as `rax.c` compresses it (a chain
    /// of single children is one node; a branching node holds one byte per child, and the rest
    /// of a child's edge is a node of its own).
    pub(crate) fn radix_tree_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self
            .nodes
            .keys()
            .map(|id| {
                let mut k = [0u8; 16];
                k[..8].copy_from_slice(&id.ms.to_be_bytes());
                k[8..].copy_from_slice(&id.seq.to_be_bytes());
                k
            })
            .collect();
        if keys.is_empty() {
            return 1;
        }
        rax_nodes(&keys, 0, true)
    }
}

/// The length of the prefix all of `keys` (sorted) share from `depth` on.
pub(crate) fn common_prefix(keys: &[[u8; 16]], depth: usize) -> usize {
    let (first, last) = (&keys[0], &keys[keys.len() - 1]);
    (depth..16).take_while(|&i| first[i] == last[i]).count()
}

/// The rax nodes under a vertex at `depth` holding `keys` (sorted, distinct, non-empty): the
/// vertex's own node included.
pub(crate) fn rax_nodes(keys: &[[u8; 16]], depth: usize, root: bool) -> usize {
    if depth == 16 {
        return 1;
    }
    let shared = common_prefix(keys, depth);
    if shared > 0 && root {
        // The head is one compressed node down to the first branching.
        return 1 + rax_nodes(keys, depth + shared, false);
    }
    let mut total = 1;
    let mut start = 0;
    while start < keys.len() {
        let byte = keys[start][depth];
        let end = start + keys[start..].iter().take_while(|k| k[depth] == byte).count();
        let group = &keys[start..end];
        let rest = common_prefix(group, depth + 1);
        if rest > 0 {
            total += 1;
        }
        total += rax_nodes(group, depth + 1 + rest, false);
        start = end;
    }
    total
}

/// A trimming strategy.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Strategy {
    MaxLen(u64),
    MinId(StreamId),
}

/// `XADD`'s and `XTRIM`'s trimming arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Trim {
    pub(crate) strategy: Strategy,
    pub(crate) approx: bool,
    /// At most this many entries removed (0: no limit).
    pub(crate) limit: u64,
}
