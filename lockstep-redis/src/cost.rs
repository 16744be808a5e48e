//! What values cost in the keyspace's memory count ([`super::keyspace::Keyspace::used_bytes`]),
//! besides their bytes: shared by the keyspace and the collection types it holds.

/// What a key costs besides its name and value: Redis' dict entry, object header and expiry
/// slot, roughly.
pub(crate) const ENTRY_OVERHEAD_BYTES: usize = 64;

/// What each list element, hash field, set member, sorted-set member or stream field costs
/// besides its bytes (its listpack/quicklist/hashtable entry).
pub(crate) const ITEM_OVERHEAD_BYTES: usize = 16;
