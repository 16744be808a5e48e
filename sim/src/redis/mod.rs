//! lockstep's Redis: a pure, synchronous command engine with Lua scripting (this module's
//! [`RedisEngine`]), the one server connection loop that serves it over any stream ([`server`]),
//! the simulated master on a node of the world ([`master`]) with its replication
//! ([`replication`]), and the reconnecting client link of the simulated clients ([`link`]).
//!
//! **The engine.** [`RedisEngine`] models one Redis 7.2 master without persistence: 16 databases (`SELECT`,
//! `SWAPDB`, `FLUSHDB`/`FLUSHALL`, `DBSIZE`; each connection's session holds its database, a
//! script runs in its caller's and may `SELECT` for itself), string keys with millisecond expiry
//! on the node's own wall clock (passed in with every call, so clock jumps affect expiry exactly
//! as they would on a real node), `MSET`/`MSETNX`/`MGET`, `DEL`/`UNLINK`, a minimal list type
//! (`LPUSH`/`RPUSH`/`LPOP`/`RPOP`/`LLEN`/`LRANGE`/`LMOVE`/`RPOPLPUSH`, `BLPOP`/`BRPOP`/`BLMOVE`/
//! `BRPOPLPUSH`), hashes (`HSET`/`HGET`/`HDEL`/`HEXISTS`/
//! `HINCRBY`/`HGETALL`, fields in insertion order), sets (`SADD`/`SREM`/`SMEMBERS`/`SISMEMBER`/
//! `SCARD`, members in byte order), `EVAL`/`EVALSHA`/`SCRIPT` on an embedded Lua 5.1, Redis 7
//! functions (`FUNCTION LOAD/LIST/DELETE/FLUSH`, `FCALL`/`FCALL_RO`, in `function.rs`),
//! `MULTI`/`EXEC`/`DISCARD`/`WATCH`/`UNWATCH`, `PUBLISH`/`SUBSCRIBE`/`UNSUBSCRIBE`/`PSUBSCRIBE`/`PUNSUBSCRIBE`, and `AUTH`
//! with `requirepass` (the `default` user only: `AUTH pass`, `AUTH default pass`, `HELLO ... AUTH
//! default pass`; until then other commands answer `NOAUTH`) — the commands Redis-based lock
//! clients and their test suites send, and `QUIT` (the server loop closes the connection after
//! its `+OK`). Replies and error texts match Redis 7.2 for that subset.
//!
//! **The protocol.** Commands arrive as RESP multibulks, read one of two ways (the server loop's
//! `Framing`): by [`CommandReader`] ([`reader`]: Redis' own limits and error texts, for
//! `lockstep live`, `lockstep serve` and turmoil hosts), or, in the simulated world, by
//! [`decode_command`] ([`codec`]: `redis-protocol`'s RESP2 decoder, whose buffering the history
//! digests pin). The engine answers RESP2-shaped [`Reply`]s; a connection speaks RESP2 until a
//! successful `HELLO 3` and RESP3 from then on (`HELLO 2` switches back). [`ReplyEncoder`]
//! (`resp3.rs`) keeps that per connection: RESP2 is written by [`encode_reply`] (`redis-protocol`'s
//! encoder), RESP3 by lockstep's own encoder — nulls as `_`, `HELLO`/`HGETALL`/`CONFIG GET` as
//! maps, `INFO` and `CLIENT LIST`/`INFO` as verbatim strings, pub/sub messages and `SUBSCRIBE`
//! confirmations as pushes. RESP3 doubles, booleans, sets and big numbers never occur (no
//! supported command answers them), and inside `EXEC` and script replies only the nulls change.
//!
//! A [`Keyspace`] holds all 16 databases, so a snapshot ([`RedisEngine::keyspace`]), a restore,
//! active expiry and the memory limit cover them all; the history's key effects
//! ([`RedisEngine::take_effects`]) and the replication stream (`crate::redis::replication`, which diffs
//! database 0) are database 0's, and a key expiring in another database is removed but not
//! returned by [`RedisEngine::expire_due`] (a replica gets other databases at a full sync).
//!
//! Connection state lives in a [`ClientSession`] per connection; the engine keeps who watches
//! which key and who subscribes to which channel. Published messages are collected for the server
//! to push (`RedisEngine::take_pushes`). `BLPOP`/`BRPOP`/`BLMOVE`/`BRPOPLPUSH` never block in the
//! engine (on empty lists they answer what they answer inside `MULTI`: a nil array for the pops,
//! a nil bulk for the moves); the server loop ([`crate::redis::server`]) blocks the
//! connection.
//!
//! Nothing here performs I/O, reads system time or iterates a hash map: the same commands at the
//! same times always give the same replies.
//!
//! Left out of the engine: inline commands, other data types and commands, replication (the
//! [`replication`] module copies each command's effects to replicas), persistence (the keyspace can be snapshotted with [`RedisEngine::keyspace`] and
//! put back with [`RedisEngine::restore`]), eviction (memory is capped as with `maxmemory` and
//! the `noeviction` policy, see [`MemoryPool`] and [`RedisEngine::maxmemory`]), ACL users
//! other than `default` (`ACL` itself; a connection that sent nothing before `requirepass` was
//! set must authenticate, where Redis decides when the connection is accepted), cluster mode,
//! keyspace notifications, `BUSY` (a runaway script is stopped by an instruction budget instead,
//! see [`EngineConfig`]; `SCRIPT KILL` and `FUNCTION KILL` therefore always answer `NOTBUSY`),
//! the Lua debugger (`SCRIPT DEBUG NO` is accepted, `YES`/`SYNC` are refused), `SCRIPT HELP`,
//! the `#!lua` shebang in `EVAL`, `FUNCTION DUMP/RESTORE/STATS`, and what `function.rs` lists
//! (a library's variables do not keep their values between calls). `DBSIZE` counts
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
mod commands;
mod function;
mod introspect;
mod keyspace;
pub mod link;
mod lua;
pub mod master;
mod memory;
mod notify;
pub mod reader;
pub mod replication;
mod reply;
mod resp3;
pub mod server;
mod session;
mod syntax;
mod t_generic;
mod t_hash;
mod t_list;
mod t_set;
mod t_stream;
mod t_string;
// The handlers are reached once the command table (issue 49) lists `t_zset::ZSET_COMMANDS`.
mod t_zset;
pub mod table;

pub use codec::{decode_command, encode_reply};
pub use command::{blocking_timeout_ms, is_write_command, EngineConfig, RedisEngine};
pub use keyspace::{Entry, Keyspace, Value, DATABASES};
pub(crate) use lua::WorldLua;
pub use lua::{server_failure, set_wall_guard, sha1_hex};
pub use memory::{
    set_unscoped_memory_max, unscoped_memory_max, MemoryPool, DEFAULT_MAXMEMORY_BYTES, DEFAULT_UNSCOPED_MEMORY_BYTES,
    DEFAULT_WORLD_MEMORY_BYTES, OOM_ERROR,
};
pub use reader::{CommandReader, MULTIBULK_MAX, PROTO_INLINE_MAX_SIZE, PROTO_MAX_BULK_LEN};
pub use reply::Reply;
pub use resp3::ReplyEncoder;
pub use session::{ClientSession, ReplyMode};
pub use syntax::parse_ll;
pub use t_stream::{Consumer, Group as StreamGroup, PendingEntry, Stream, StreamId};
pub use t_zset::ZSet;
