//! # lockstep-redis: lockstep's Redis
//!
//! A pure, synchronous command engine with Lua scripting ([`RedisEngine`]), the one server
//! connection loop that serves it over any stream ([`server`]: [`server::RedisServer`] and the
//! [`server::RedisHost`] trait a host implements), its replication bookkeeping
//! ([`replication`]) and the directory of which server is each group's master ([`directory`]).
//!
//! **What it needs from a host.** This crate depends on no simulation engine. Everything
//! a server needs from where it runs is the [`server::RedisHost`] trait: the node's wall and
//! monotonic clocks, sleeping by the node's clock, pauses, and recording into the history. The
//! events it records and the key effects of commands are the history's types, from the shared
//! crate `lockstep-history` (with the stop flag a Lua script checks); nothing else is shared.
//! Its hosts: the simulated master on a node of lockstep's world and the reconnecting client link
//! (`lockstep_sim::redis::master`, `lockstep_sim::redis::link`), `lockstep live`/`serve`, and
//! turmoil hosts (`lockstep-turmoil`). `lockstep_sim::redis` re-exports this whole crate, so the
//! paths `lockstep_sim::redis::…` keep working.
//!
//! **The engine.** [`RedisEngine`] models one Redis 7.0 master without persistence: 16 databases,
//! Redis 7.0's data commands (strings and bitmaps, keys, lists, hashes, sets, sorted sets
//! ([`ZSet`]), streams with consumer groups ([`Stream`])), `EVAL`/`EVALSHA`/`SCRIPT` on an
//! embedded Lua 5.1 and Redis 7 functions (`function.rs`), transactions, pub/sub with keyspace
//! notifications (`notify.rs`), `AUTH` with `requirepass`, and the connection and server
//! commands clients and test suites send. Every command is a row of one command table
//! ([`table`], rows in `commands.rs`, handlers by type in `t_string.rs`, `t_generic.rs`,
//! `t_list.rs`, `t_hash.rs`, `t_set.rs`, `t_zset.rs`, `t_stream.rs`, `t_sort.rs`, `t_dump.rs`):
//! its arity, flags, key positions, what it can do to a key's lease, and its handler; dispatch,
//! `COMMAND`, the history's lease reader and the grant recogniser read the same rows. Keys expire at
//! millisecond precision on the node's own wall clock (passed in with every call, so clock jumps
//! affect expiry exactly as they would on a real node). Replies and error texts match Redis 7.0
//! (7.2 where older lock clients' texts were modelled); docs/redis-commands.md lists the commands
//! and docs/redis-differences.md every known difference.
//!
//! **The protocol.** Commands arrive as RESP multibulks, read by [`CommandReader`] ([`reader`]:
//! Redis' own limits and error texts) on every host: the simulated masters, `lockstep live`,
//! `lockstep serve` and turmoil hosts ([`decode_command`], `redis-protocol`'s RESP2 decoder in
//! [`codec`], is kept as the reference the reader is tested against). The engine answers RESP2-shaped [`Reply`]s; a connection speaks RESP2 until a
//! successful `HELLO 3` and RESP3 from then on (`HELLO 2` switches back). [`ReplyEncoder`]
//! (`resp3.rs`) keeps that per connection: RESP2 is written by [`encode_reply`] (`redis-protocol`'s
//! encoder), RESP3 by lockstep's own encoder — nulls as `_`, `HELLO`/`HGETALL`/`CONFIG GET` as
//! maps, `INFO` and `CLIENT LIST`/`INFO` as verbatim strings, pub/sub messages and `SUBSCRIBE`
//! confirmations as pushes, sorted-set scores as doubles (`t_zset::encode_resp3`); inside `EXEC`
//! and script replies only the nulls change.
//!
//! A [`Keyspace`] holds all 16 databases, so a snapshot ([`RedisEngine::keyspace`]), a restore,
//! active expiry and the memory limit cover them all; the history's key effects
//! ([`RedisEngine::take_effects`]) and the replication stream (`crate::replication`, which diffs
//! database 0) are database 0's, and a key expiring in another database is removed but not
//! returned by [`RedisEngine::expire_due`] (a replica gets other databases at a full sync).
//!
//! Connection state lives in a [`ClientSession`] per connection; the engine keeps who watches
//! which key and who subscribes to which channel. Published messages are collected for the server
//! to push (`RedisEngine::take_pushes`). `BLPOP`/`BRPOP`/`BLMOVE`/`BRPOPLPUSH` never block in the
//! engine (on empty lists they answer what they answer inside `MULTI`: a nil array for the pops,
//! a nil bulk for the moves); the server loop ([`crate::server`]) blocks the
//! connection.
//!
//! Nothing here performs I/O, reads system time or iterates a hash map: the same commands at the
//! same times always give the same replies.
//!
//! Left out of the engine: inline commands (the server loop's reader reads them), the commands
//! the command table does not list, replication (the
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

#![warn(missing_docs)]

mod admin;
pub mod codec;
mod command;
mod commands;
mod cost;
mod db;
pub mod directory;
mod function;
mod hll;
mod introspect;
mod keyspace;
mod lua;
pub mod lua_syntax;
mod memory;
mod notify;
pub mod reader;
pub mod record;
pub mod replication;
mod reply;
mod resp3;
pub mod server;
mod session;
mod spec;
mod stream;
mod syntax;
mod t_bitfield;
mod t_client;
mod t_dump;
mod t_generic;
mod t_hash;
mod t_hll;
mod t_list;
mod t_pubsub;
mod t_set;
mod t_sort;
mod t_stream;
mod t_string;
mod t_zset;
pub mod table;
mod zset;

pub use codec::{decode_command, encode_reply};
pub use command::{is_write_command, EngineConfig, RedisEngine};
pub use keyspace::{Entry, Keyspace, Value, DATABASES};
pub use lua::WorldLua;
pub use lua::{server_failure, set_wall_guard, sha1_hex};
pub use memory::{
    set_unscoped_memory_max, unscoped_memory_max, MemoryPool, DEFAULT_MAXMEMORY_BYTES, DEFAULT_UNSCOPED_MEMORY_BYTES,
    DEFAULT_WORLD_MEMORY_BYTES, OOM_ERROR,
};
pub use reader::{CommandReader, MULTIBULK_MAX, PROTO_INLINE_MAX_SIZE, PROTO_MAX_BULK_LEN};
pub use reply::Reply;
pub use resp3::ReplyEncoder;
pub use session::{ClientSession, ReplyMode};
pub use stream::{Consumer, Group as StreamGroup, PendingEntry, Stream, StreamId};
pub use syntax::blocking_timeout_ms;
pub use syntax::parse_ll;
pub use zset::ZSet;
