//! A simulated Redis server: a pure, synchronous command engine with Lua scripting.
//!
//! [`RedisEngine`] models one Redis 7.2 master without persistence: a single database (`SELECT 0`
//! only), string keys with millisecond expiry on the node's own wall clock (passed in with every
//! call, so clock jumps affect expiry exactly as they would on a real node), a minimal list type
//! (`LPUSH`/`RPUSH`/`LPOP`/`RPOP`/`LLEN`, `BLPOP`), hashes (`HSET`/`HGET`/`HDEL`/`HEXISTS`/
//! `HINCRBY`/`HGETALL`, fields in insertion order), `EVAL`/`EVALSHA`/`SCRIPT` on an embedded Lua
//! 5.1, `MULTI`/`EXEC`/`DISCARD`/`WATCH`/`UNWATCH`, and `PUBLISH`/`SUBSCRIBE`/`UNSUBSCRIBE` — the
//! commands Redis-based lock clients send. Replies and error texts match Redis 7.2 for that
//! subset. [`codec`] frames commands and replies in RESP2 with `redis-protocol`.
//!
//! Connection state lives in a [`ClientSession`] per connection; the engine keeps who watches
//! which key and who subscribes to which channel. Published messages are collected for the server
//! to push ([`RedisEngine::take_pushes`]). `BLPOP` never blocks in the engine (it answers a nil
//! array on empty lists, as inside `MULTI`); the server (`crate::master`) blocks the connection.
//!
//! Nothing here performs I/O, reads system time or iterates a hash map: the same commands at the
//! same times always give the same replies.
//!
//! Left out: RESP3 (`HELLO 3` answers `NOPROTO`), inline commands, other data types and
//! commands, pattern subscriptions, replication, persistence (the keyspace can be snapshotted
//! with [`RedisEngine::keyspace`] and put back with [`RedisEngine::restore`]), eviction (memory is
//! capped as with `maxmemory` and the `noeviction` policy, see [`MemoryPool`] and
//! [`RedisEngine::set_maxmemory`]),
//! ACLs/`AUTH` (any credentials are accepted), cluster mode, keyspace notifications, `BUSY` (a
//! runaway script is stopped by an instruction budget instead, see [`EngineConfig`]; `SCRIPT KILL`
//! therefore always answers `NOTBUSY`), the Lua debugger (`SCRIPT DEBUG NO` is accepted,
//! `YES`/`SYNC` are refused), `SCRIPT HELP`, `FUNCTION`, and the `#!lua` shebang. `DBSIZE` counts
//! keys that are expired but not reclaimed yet, as Redis does; but a simulated master reclaims
//! them sooner (see [`RedisEngine::expire_due`]).
//!
//! The engine is checked command for command against a real `redis-server` by
//! `sim/tests/conformance.rs`. Every known difference, deliberate or not, is in the table of
//! `docs/redis-differences.md`; the ones of the framing and of scripting are also in the docs
//! of [`codec`] and of the Lua module (`lua.rs`).

mod admin;
pub mod codec;
mod command;
mod function;
mod keyspace;
mod lua;
mod memory;
mod reply;
mod resp3;
mod session;
mod syntax;

pub use codec::{decode_command, encode_reply};
pub use command::{blocking_timeout_ms, is_write_command, EngineConfig, RedisEngine};
pub use keyspace::{Entry, Keyspace, Value, DATABASES};
pub use lua::sha1_hex;
pub(crate) use lua::WorldLua;
pub use memory::{MemoryPool, DEFAULT_MAXMEMORY_BYTES, DEFAULT_WORLD_MEMORY_BYTES, OOM_ERROR};
pub use reply::Reply;
pub use resp3::ReplyEncoder;
pub use session::ClientSession;
pub use syntax::parse_ll;
