//! The rows of the command table ([`super::table`]): every command lockstep's Redis answers, by
//! group, with Redis 7.0's arity and flags (from `COMMAND INFO` of redis-server 7.0) and what it
//! can do to a key's lease.
//!
//! Adding a command is one row here and its handler in its type's file (`t_string.rs`,
//! `t_list.rs`...); dispatch, `COMMAND`, the history's lease reader and the grant recogniser all
//! read the row.

use super::spec::Handler::{Db as D, Engine as E, Keys as K, Server as S};
use super::spec::LeaseEffect as L;
use super::spec::{
    container, row, CommandSpec, Flags, Group as G, KeySpec, StoreCondition, TtlSource, K1, K12, KALL, KALL_BUT_LAST,
    KPAIRS,
};
use super::t_pubsub::{
    echo, ping, publish, pubsub_channels, pubsub_help, pubsub_numpat, pubsub_numsub, pubsub_shardchannels,
    pubsub_shardnumsub, spublish,
};
use super::{
    introspect, t_bitfield as bf, t_client as client, t_dump as dump, t_generic as gen, t_hash as hash, t_hll as hll,
    t_list as list, t_set as set, t_sort as sort, t_stream as xs, t_string as st, t_zset as z,
};

/// The union of `list`.
const fn f(list: &[Flags]) -> Flags {
    let mut acc = Flags::EMPTY;
    let mut i = 0;
    while i < list.len() {
        acc = acc.with(list[i]);
        i += 1;
    }
    acc
}

const W: Flags = Flags::WRITE;
const R: Flags = Flags::READONLY;
const M: Flags = Flags::DENYOOM;
const FA: Flags = Flags::FAST;
const NS: Flags = Flags::NOSCRIPT;
const B: Flags = Flags::BLOCKING;
const P: Flags = Flags::PUBSUB;
const A: Flags = Flags::ADMIN;
const LO: Flags = Flags::LOADING;
const ST: Flags = Flags::STALE;
const MR: Flags = Flags::MAY_REPLICATE;
const MK: Flags = Flags::MOVABLEKEYS;
const AB: Flags = Flags::ALLOW_BUSY;
const NA: Flags = Flags::NO_AUTH;
const NM: Flags = Flags::NO_MULTI;
const NK: KeySpec = KeySpec::None;
const N2: KeySpec = KeySpec::Numkeys { at: 2 };
const N1: KeySpec = KeySpec::Numkeys { at: 1 };
const K2: KeySpec = KeySpec::Range {
    first: 2,
    last: 2,
    step: 1,
};
const K2ALL: KeySpec = KeySpec::Range {
    first: 2,
    last: -1,
    step: 1,
};
const K1ALL: KeySpec = KALL;
const NONE: L = L::None;
const SET_OPTIONS: L = L::SetsValue {
    value_at: 2,
    ttl: TtlSource::SetOptions,
    when: StoreCondition::Options,
};
const SET_IF_ABSENT: L = L::SetsValue {
    value_at: 2,
    ttl: TtlSource::Clears,
    when: StoreCondition::IfAbsent,
};
const SET_CLEARING: L = L::SetsValue {
    value_at: 2,
    ttl: TtlSource::Clears,
    when: StoreCondition::Options,
};
const fn set_with_ttl(unit_ms: i64) -> L {
    L::SetsValue {
        value_at: 3,
        ttl: TtlSource::Relative { at: 2, unit_ms },
        when: StoreCondition::Options,
    }
}
const fn expiry(unit_ms: i64, absolute: bool) -> L {
    L::SetsExpiry { unit_ms, absolute }
}

/// Every row, by group.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    // ---- strings (t_string.rs)
    row("get", 2, f(&[R, FA]), K1, NONE, G::String, K(st::get)),
    row("set", -3, f(&[W, M]), K1, SET_OPTIONS, G::String, K(st::set)),
    row("setnx", 3, f(&[W, M, FA]), K1, SET_IF_ABSENT, G::String, K(st::setnx)),
    row("setex", 4, f(&[W, M]), K1, set_with_ttl(1000), G::String, K(st::setex)),
    row("psetex", 4, f(&[W, M]), K1, set_with_ttl(1), G::String, K(st::psetex)),
    row("getset", 3, f(&[W, M, FA]), K1, SET_CLEARING, G::String, K(st::getset)),
    row("getex", -2, f(&[W, FA]), K1, L::GetEx, G::String, K(st::getex)),
    row("getdel", 2, f(&[W, FA]), K1, L::Deletes, G::String, K(st::getdel)),
    row("mget", -2, f(&[R, FA]), K1ALL, NONE, G::String, K(st::mget)),
    row("mset", -3, f(&[W, M]), KPAIRS, SET_CLEARING, G::String, K(st::mset)),
    row(
        "msetnx",
        -3,
        f(&[W, M]),
        KPAIRS,
        SET_IF_ABSENT,
        G::String,
        K(st::msetnx),
    ),
    row("incr", 2, f(&[W, M, FA]), K1, NONE, G::String, K(st::incr)),
    row("decr", 2, f(&[W, M, FA]), K1, NONE, G::String, K(st::decr)),
    row("incrby", 3, f(&[W, M, FA]), K1, NONE, G::String, K(st::incrby)),
    row("decrby", 3, f(&[W, M, FA]), K1, NONE, G::String, K(st::decrby)),
    row(
        "incrbyfloat",
        3,
        f(&[W, M, FA]),
        K1,
        NONE,
        G::String,
        K(st::incrbyfloat),
    ),
    row("append", 3, f(&[W, M]), K1, NONE, G::String, K(st::append)),
    row("strlen", 2, f(&[R, FA]), K1, NONE, G::String, K(st::strlen)),
    row("setrange", 4, f(&[W, M]), K1, NONE, G::String, K(st::setrange)),
    row("getrange", 4, f(&[R]), K1, NONE, G::String, K(st::getrange)),
    row("substr", 4, f(&[R]), K1, NONE, G::String, K(st::getrange)),
    row("lcs", -3, f(&[R]), K12, NONE, G::String, K(st::lcs)),
    // ---- bitmaps (t_string.rs)
    row("setbit", 4, f(&[W, M]), K1, NONE, G::Bitmap, K(st::setbit)),
    row("getbit", 3, f(&[R, FA]), K1, NONE, G::Bitmap, K(st::getbit)),
    row("bitcount", -2, f(&[R]), K1, NONE, G::Bitmap, K(st::bitcount)),
    row("bitpos", -3, f(&[R]), K1, NONE, G::Bitmap, K(st::bitpos)),
    row("bitop", -4, f(&[W, M]), K2ALL, NONE, G::Bitmap, K(st::bitop)),
    // ---- BITFIELD (t_bitfield.rs)
    row("bitfield", -2, f(&[W, M]), K1, NONE, G::Bitmap, K(bf::bitfield)),
    row("bitfield_ro", -2, f(&[R, FA]), K1, NONE, G::Bitmap, K(bf::bitfield_ro)),
    // ---- HyperLogLog (t_hll.rs)
    row("pfadd", -2, f(&[W, M, FA]), K1, NONE, G::HyperLogLog, K(hll::pfadd)),
    row("pfcount", -2, f(&[R]), K1ALL, NONE, G::HyperLogLog, K(hll::pfcount)),
    row("pfmerge", -2, f(&[W, M]), K1ALL, NONE, G::HyperLogLog, K(hll::pfmerge)),
    row("pfdebug", 3, f(&[W, M, A]), K2, NONE, G::HyperLogLog, K(hll::pfdebug)),
    row("pfselftest", 1, f(&[A]), NK, NONE, G::HyperLogLog, K(hll::pfselftest)),
    // ---- keys (t_generic.rs)
    row("del", -2, f(&[W]), K1ALL, L::Deletes, G::Generic, K(gen::del)),
    row("unlink", -2, f(&[W, FA]), K1ALL, L::Deletes, G::Generic, K(gen::del)),
    row("exists", -2, f(&[R, FA]), K1ALL, NONE, G::Generic, K(gen::exists)),
    row("touch", -2, f(&[R, FA]), K1ALL, NONE, G::Generic, K(gen::exists)),
    row("type", 2, f(&[R, FA]), K1, NONE, G::Generic, K(gen::type_of)),
    row(
        "expire",
        -3,
        f(&[W, FA]),
        K1,
        expiry(1000, false),
        G::Generic,
        K(gen::expire),
    ),
    row(
        "pexpire",
        -3,
        f(&[W, FA]),
        K1,
        expiry(1, false),
        G::Generic,
        K(gen::pexpire),
    ),
    row(
        "expireat",
        -3,
        f(&[W, FA]),
        K1,
        expiry(1000, true),
        G::Generic,
        K(gen::expireat),
    ),
    row(
        "pexpireat",
        -3,
        f(&[W, FA]),
        K1,
        expiry(1, true),
        G::Generic,
        K(gen::pexpireat),
    ),
    row("ttl", 2, f(&[R, FA]), K1, NONE, G::Generic, K(gen::ttl)),
    row("pttl", 2, f(&[R, FA]), K1, NONE, G::Generic, K(gen::pttl)),
    row("expiretime", 2, f(&[R, FA]), K1, NONE, G::Generic, K(gen::expiretime)),
    row("pexpiretime", 2, f(&[R, FA]), K1, NONE, G::Generic, K(gen::pexpiretime)),
    row("persist", 2, f(&[W, FA]), K1, L::Persists, G::Generic, K(gen::persist)),
    row("rename", 3, f(&[W]), K12, L::Moves, G::Generic, K(gen::rename)),
    row("renamenx", 3, f(&[W, FA]), K12, L::Moves, G::Generic, K(gen::renamenx)),
    row("copy", -3, f(&[W, M]), K12, L::Moves, G::Generic, D(gen::copy)),
    row("move", 3, f(&[W, FA]), K1, L::Moves, G::Generic, D(gen::move_key)),
    row("randomkey", 1, f(&[R]), NK, NONE, G::Generic, K(gen::randomkey)),
    row("keys", 2, f(&[R]), NK, NONE, G::Generic, K(gen::keys)),
    row("scan", -2, f(&[R]), NK, NONE, G::Generic, K(gen::scan)),
    row("dbsize", 1, f(&[R, FA]), NK, NONE, G::Server, K(gen::dbsize)),
    row("select", 2, f(&[LO, ST, FA]), NK, NONE, G::Connection, D(gen::select)),
    row("swapdb", 3, f(&[W, FA]), NK, L::Moves, G::Server, D(gen::swapdb)),
    row("flushdb", -1, f(&[W]), NK, L::Moves, G::Server, D(gen::flushdb)),
    row("flushall", -1, f(&[W]), NK, L::Moves, G::Server, D(gen::flushall)),
    // `SORT ... STORE` and `RESTORE` write a key whole (t_sort.rs, t_dump.rs).
    row(
        "sort",
        -2,
        f(&[W, M, MK]),
        KeySpec::Sort,
        L::Moves,
        G::Generic,
        K(sort::sort),
    ),
    row("sort_ro", -2, f(&[R, MK]), K1, NONE, G::Generic, K(sort::sort_ro)),
    row("dump", 2, f(&[R]), K1, NONE, G::Generic, K(dump::dump)),
    row("restore", -4, f(&[W, M]), K1, L::Moves, G::Generic, K(dump::restore)),
    container(
        "object",
        G::Generic,
        &[
            row("encoding", 3, f(&[R]), K2, NONE, G::Generic, D(gen::object_encoding)),
            row("refcount", 3, f(&[R]), K2, NONE, G::Generic, D(gen::object_refcount)),
            row("idletime", 3, f(&[R]), K2, NONE, G::Generic, D(gen::object_idletime)),
            row("freq", 3, f(&[R]), K2, NONE, G::Generic, D(gen::object_freq)),
            row(
                "help",
                2,
                f(&[LO, ST]),
                NK,
                NONE,
                G::Generic,
                K(introspect::object_help),
            ),
        ],
    ),
    // ---- lists (t_list.rs)
    row("lpush", -3, f(&[W, M, FA]), K1, NONE, G::List, K(list::lpush)),
    row("rpush", -3, f(&[W, M, FA]), K1, NONE, G::List, K(list::rpush)),
    row("lpushx", -3, f(&[W, M, FA]), K1, NONE, G::List, K(list::lpushx)),
    row("rpushx", -3, f(&[W, M, FA]), K1, NONE, G::List, K(list::rpushx)),
    row("lpop", -2, f(&[W, FA]), K1, NONE, G::List, K(list::lpop)),
    row("rpop", -2, f(&[W, FA]), K1, NONE, G::List, K(list::rpop)),
    row("lmpop", -4, f(&[W, MK]), N1, NONE, G::List, K(list::lmpop)),
    row("llen", 2, f(&[R, FA]), K1, NONE, G::List, K(list::llen)),
    row("lindex", 3, f(&[R]), K1, NONE, G::List, K(list::lindex)),
    row("lrange", 4, f(&[R]), K1, NONE, G::List, K(list::lrange)),
    row("lpos", -3, f(&[R]), K1, NONE, G::List, K(list::lpos)),
    row("lset", 4, f(&[W, M]), K1, NONE, G::List, K(list::lset)),
    row("linsert", 5, f(&[W, M]), K1, NONE, G::List, K(list::linsert)),
    row("lrem", 4, f(&[W]), K1, NONE, G::List, K(list::lrem)),
    row("ltrim", 4, f(&[W]), K1, NONE, G::List, K(list::ltrim)),
    row("lmove", 5, f(&[W, M]), K12, NONE, G::List, K(list::lmove_command)),
    row("rpoplpush", 3, f(&[W, M]), K12, NONE, G::List, K(list::rpoplpush)),
    // Redis 7.0 flags the blocking forms `noscript`.
    row(
        "blpop",
        -3,
        f(&[W, NS, B]),
        KALL_BUT_LAST,
        NONE,
        G::List,
        S(list::blpop),
    ),
    row(
        "brpop",
        -3,
        f(&[W, NS, B]),
        KALL_BUT_LAST,
        NONE,
        G::List,
        S(list::brpop),
    ),
    row("blmove", 6, f(&[W, M, NS, B]), K12, NONE, G::List, S(list::blmove)),
    row(
        "brpoplpush",
        4,
        f(&[W, M, NS, B]),
        K12,
        NONE,
        G::List,
        S(list::brpoplpush),
    ),
    row(
        "blmpop",
        -5,
        f(&[W, B, MK]),
        KeySpec::Numkeys { at: 2 },
        NONE,
        G::List,
        S(list::blmpop),
    ),
    // ---- hashes (t_hash.rs)
    row("hset", -4, f(&[W, M, FA]), K1, L::WritesField, G::Hash, K(hash::hset)),
    row("hmset", -4, f(&[W, M, FA]), K1, L::WritesField, G::Hash, K(hash::hmset)),
    row(
        "hsetnx",
        4,
        f(&[W, M, FA]),
        K1,
        L::WritesField,
        G::Hash,
        K(hash::hsetnx),
    ),
    row("hget", 3, f(&[R, FA]), K1, NONE, G::Hash, K(hash::hget)),
    row("hmget", -3, f(&[R, FA]), K1, NONE, G::Hash, K(hash::hmget)),
    row("hgetall", 2, f(&[R]), K1, NONE, G::Hash, K(hash::hgetall)),
    row("hkeys", 2, f(&[R]), K1, NONE, G::Hash, K(hash::hkeys)),
    row("hvals", 2, f(&[R]), K1, NONE, G::Hash, K(hash::hvals)),
    row("hlen", 2, f(&[R, FA]), K1, NONE, G::Hash, K(hash::hlen)),
    row("hexists", 3, f(&[R, FA]), K1, NONE, G::Hash, K(hash::hexists)),
    row("hstrlen", 3, f(&[R, FA]), K1, NONE, G::Hash, K(hash::hstrlen)),
    row("hdel", -3, f(&[W, FA]), K1, L::DeletesField, G::Hash, K(hash::hdel)),
    row(
        "hincrby",
        4,
        f(&[W, M, FA]),
        K1,
        L::WritesField,
        G::Hash,
        K(hash::hincrby),
    ),
    row(
        "hincrbyfloat",
        4,
        f(&[W, M, FA]),
        K1,
        L::WritesField,
        G::Hash,
        K(hash::hincrbyfloat),
    ),
    row("hrandfield", -2, f(&[R]), K1, NONE, G::Hash, K(hash::hrandfield)),
    row("hscan", -3, f(&[R]), K1, NONE, G::Hash, K(hash::hscan)),
    // ---- sets (t_set.rs)
    row("sadd", -3, f(&[W, M, FA]), K1, NONE, G::Set, K(set::sadd)),
    row("srem", -3, f(&[W, FA]), K1, NONE, G::Set, K(set::srem)),
    row("smembers", 2, f(&[R]), K1, NONE, G::Set, K(set::smembers)),
    row("sismember", 3, f(&[R, FA]), K1, NONE, G::Set, K(set::sismember)),
    row("smismember", -3, f(&[R, FA]), K1, NONE, G::Set, K(set::smismember)),
    row("scard", 2, f(&[R, FA]), K1, NONE, G::Set, K(set::scard)),
    row("spop", -2, f(&[W, FA]), K1, NONE, G::Set, K(set::spop)),
    row("srandmember", -2, f(&[R]), K1, NONE, G::Set, K(set::srandmember)),
    row("smove", 4, f(&[W, FA]), K12, NONE, G::Set, K(set::smove)),
    row("sinter", -2, f(&[R]), K1ALL, NONE, G::Set, K(set::sinter)),
    row("sunion", -2, f(&[R]), K1ALL, NONE, G::Set, K(set::sunion)),
    row("sdiff", -2, f(&[R]), K1ALL, NONE, G::Set, K(set::sdiff)),
    row("sinterstore", -3, f(&[W, M]), K1ALL, NONE, G::Set, K(set::sinterstore)),
    row("sunionstore", -3, f(&[W, M]), K1ALL, NONE, G::Set, K(set::sunionstore)),
    row("sdiffstore", -3, f(&[W, M]), K1ALL, NONE, G::Set, K(set::sdiffstore)),
    row("sintercard", -3, f(&[R, MK]), N1, NONE, G::Set, K(set::sintercard)),
    row("sscan", -3, f(&[R]), K1, NONE, G::Set, K(set::sscan)),
    // ---- sorted sets (t_zset.rs)
    row("zadd", -4, f(&[W, M, FA]), K1, NONE, G::SortedSet, K(z::zadd)),
    row("zincrby", 4, f(&[W, M, FA]), K1, NONE, G::SortedSet, K(z::zincrby)),
    row("zrem", -3, f(&[W, FA]), K1, NONE, G::SortedSet, K(z::zrem)),
    row("zcard", 2, f(&[R, FA]), K1, NONE, G::SortedSet, K(z::zcard)),
    row("zcount", 4, f(&[R, FA]), K1, NONE, G::SortedSet, K(z::zcount)),
    row("zlexcount", 4, f(&[R, FA]), K1, NONE, G::SortedSet, K(z::zlexcount)),
    row("zscore", 3, f(&[R, FA]), K1, NONE, G::SortedSet, K(z::zscore)),
    row("zmscore", -3, f(&[R, FA]), K1, NONE, G::SortedSet, K(z::zmscore)),
    row("zrank", 3, f(&[R, FA]), K1, NONE, G::SortedSet, K(z::zrank)),
    row("zrevrank", 3, f(&[R, FA]), K1, NONE, G::SortedSet, K(z::zrevrank)),
    row("zrange", -4, f(&[R]), K1, NONE, G::SortedSet, K(z::zrange)),
    row(
        "zrangestore",
        -5,
        f(&[W, M]),
        K12,
        NONE,
        G::SortedSet,
        K(z::zrangestore),
    ),
    row("zrevrange", -4, f(&[R]), K1, NONE, G::SortedSet, K(z::zrevrange)),
    row(
        "zrangebyscore",
        -4,
        f(&[R]),
        K1,
        NONE,
        G::SortedSet,
        K(z::zrangebyscore),
    ),
    row(
        "zrevrangebyscore",
        -4,
        f(&[R]),
        K1,
        NONE,
        G::SortedSet,
        K(z::zrevrangebyscore),
    ),
    row("zrangebylex", -4, f(&[R]), K1, NONE, G::SortedSet, K(z::zrangebylex)),
    row(
        "zrevrangebylex",
        -4,
        f(&[R]),
        K1,
        NONE,
        G::SortedSet,
        K(z::zrevrangebylex),
    ),
    row(
        "zremrangebyrank",
        4,
        f(&[W]),
        K1,
        NONE,
        G::SortedSet,
        K(z::zremrangebyrank),
    ),
    row(
        "zremrangebyscore",
        4,
        f(&[W]),
        K1,
        NONE,
        G::SortedSet,
        K(z::zremrangebyscore),
    ),
    row(
        "zremrangebylex",
        4,
        f(&[W]),
        K1,
        NONE,
        G::SortedSet,
        K(z::zremrangebylex),
    ),
    row("zpopmin", -2, f(&[W, FA]), K1, NONE, G::SortedSet, K(z::zpopmin)),
    row("zpopmax", -2, f(&[W, FA]), K1, NONE, G::SortedSet, K(z::zpopmax)),
    row("zmpop", -4, f(&[W, MK]), N1, NONE, G::SortedSet, K(z::zmpop)),
    row(
        "bzpopmin",
        -3,
        f(&[W, NS, B, FA]),
        KALL_BUT_LAST,
        NONE,
        G::SortedSet,
        S(z::bzpopmin),
    ),
    row(
        "bzpopmax",
        -3,
        f(&[W, NS, B, FA]),
        KALL_BUT_LAST,
        NONE,
        G::SortedSet,
        S(z::bzpopmax),
    ),
    row("bzmpop", -5, f(&[W, B, MK]), N2, NONE, G::SortedSet, S(z::bzmpop)),
    row("zrandmember", -2, f(&[R]), K1, NONE, G::SortedSet, K(z::zrandmember)),
    row("zunion", -3, f(&[R, MK]), N1, NONE, G::SortedSet, K(z::zunion)),
    row("zinter", -3, f(&[R, MK]), N1, NONE, G::SortedSet, K(z::zinter)),
    row("zdiff", -3, f(&[R, MK]), N1, NONE, G::SortedSet, K(z::zdiff)),
    row(
        "zunionstore",
        -4,
        f(&[W, M, MK]),
        N2,
        L::Moves,
        G::SortedSet,
        K(z::zunionstore),
    ),
    row(
        "zinterstore",
        -4,
        f(&[W, M, MK]),
        N2,
        L::Moves,
        G::SortedSet,
        K(z::zinterstore),
    ),
    row(
        "zdiffstore",
        -4,
        f(&[W, M, MK]),
        N2,
        L::Moves,
        G::SortedSet,
        K(z::zdiffstore),
    ),
    row("zintercard", -3, f(&[R, MK]), N1, NONE, G::SortedSet, K(z::zintercard)),
    row("zscan", -3, f(&[R]), K1, NONE, G::SortedSet, K(z::zscan)),
    // ---- streams (t_stream.rs)
    row("xadd", -5, f(&[W, M, FA]), K1, NONE, G::Stream, K(xs::xadd)),
    row("xlen", 2, f(&[R, FA]), K1, NONE, G::Stream, K(xs::xlen)),
    row("xrange", -4, f(&[R]), K1, NONE, G::Stream, K(xs::xrange)),
    row("xrevrange", -4, f(&[R]), K1, NONE, G::Stream, K(xs::xrevrange)),
    row("xdel", -3, f(&[W, FA]), K1, NONE, G::Stream, K(xs::xdel)),
    row("xtrim", -4, f(&[W]), K1, NONE, G::Stream, K(xs::xtrim)),
    row("xsetid", -3, f(&[W, M, FA]), K1, NONE, G::Stream, K(xs::xsetid)),
    // The server loop blocks them when `BLOCK` finds nothing (`t_stream::xread_block_args`).
    row(
        "xread",
        -4,
        f(&[R, B, MK]),
        KeySpec::Streams,
        NONE,
        G::Stream,
        S(xs::xread),
    ),
    row(
        "xreadgroup",
        -7,
        f(&[W, B, MK]),
        KeySpec::Streams,
        NONE,
        G::Stream,
        S(xs::xreadgroup),
    ),
    row("xack", -4, f(&[W, FA]), K1, NONE, G::Stream, K(xs::xack)),
    row("xpending", -3, f(&[R]), K1, NONE, G::Stream, K(xs::xpending)),
    row("xclaim", -6, f(&[W, FA]), K1, NONE, G::Stream, K(xs::xclaim)),
    row("xautoclaim", -6, f(&[W, FA]), K1, NONE, G::Stream, K(xs::xautoclaim)),
    container(
        "xgroup",
        G::Stream,
        &[
            row("create", -5, f(&[W, M]), K2, NONE, G::Stream, K(xs::xgroup_create)),
            row("setid", -5, f(&[W]), K2, NONE, G::Stream, K(xs::xgroup_setid)),
            row("destroy", 4, f(&[W]), K2, NONE, G::Stream, K(xs::xgroup_destroy)),
            row(
                "createconsumer",
                5,
                f(&[W, M]),
                K2,
                NONE,
                G::Stream,
                K(xs::xgroup_createconsumer),
            ),
            row(
                "delconsumer",
                5,
                f(&[W]),
                K2,
                NONE,
                G::Stream,
                K(xs::xgroup_delconsumer),
            ),
            row("help", 2, f(&[LO, ST]), NK, NONE, G::Stream, K(xs::xgroup_help)),
        ],
    ),
    container(
        "xinfo",
        G::Stream,
        &[
            row("stream", -3, f(&[R]), K2, NONE, G::Stream, K(xs::xinfo_stream)),
            row("groups", 3, f(&[R]), K2, NONE, G::Stream, K(xs::xinfo_groups)),
            row("consumers", 4, f(&[R]), K2, NONE, G::Stream, K(xs::xinfo_consumers)),
            row("help", 2, f(&[LO, ST]), NK, NONE, G::Stream, K(xs::xinfo_help)),
        ],
    ),
    // ---- scripting (the engine; lua.rs, function.rs)
    row("eval", -3, f(&[NS, ST, SK, MK]), N2, L::RunsScript, G::Scripting, E),
    row("evalsha", -3, f(&[NS, ST, SK, MK]), N2, L::RunsScript, G::Scripting, E),
    row(
        "eval_ro",
        -3,
        f(&[NS, ST, SK, MK, R]),
        N2,
        L::RunsScript,
        G::Scripting,
        E,
    ),
    row(
        "evalsha_ro",
        -3,
        f(&[NS, ST, SK, MK, R]),
        N2,
        L::RunsScript,
        G::Scripting,
        E,
    ),
    row("fcall", -3, f(&[NS, ST, SK, MK]), N2, L::RunsScript, G::Scripting, E),
    row(
        "fcall_ro",
        -3,
        f(&[NS, ST, SK, MK, R]),
        N2,
        L::RunsScript,
        G::Scripting,
        E,
    ),
    container(
        "script",
        G::Scripting,
        &[
            row("load", 3, f(&[NS, ST]), NK, NONE, G::Scripting, E),
            row("exists", -3, f(&[NS]), NK, NONE, G::Scripting, E),
            row("flush", -2, f(&[NS]), NK, NONE, G::Scripting, E),
            row("kill", 2, f(&[NS, AB]), NK, NONE, G::Scripting, E),
            row("debug", 3, f(&[NS]), NK, NONE, G::Scripting, E),
            row(
                "help",
                2,
                f(&[LO, ST]),
                NK,
                NONE,
                G::Scripting,
                K(introspect::script_help),
            ),
        ],
    ),
    container(
        "function",
        G::Scripting,
        &[
            row("load", -3, f(&[W, M, NS]), NK, NONE, G::Scripting, E),
            row("list", -2, f(&[NS]), NK, NONE, G::Scripting, E),
            row("delete", 3, f(&[W, NS]), NK, NONE, G::Scripting, E),
            row("flush", -2, f(&[W, NS]), NK, NONE, G::Scripting, E),
            row("kill", 2, f(&[NS, AB]), NK, NONE, G::Scripting, E),
            row("stats", 2, f(&[NS, AB]), NK, NONE, G::Scripting, E),
            row("dump", 2, f(&[NS]), NK, NONE, G::Scripting, E),
            row("restore", -3, f(&[W, M, NS]), NK, NONE, G::Scripting, E),
            row(
                "help",
                2,
                f(&[LO, ST]),
                NK,
                NONE,
                G::Scripting,
                K(introspect::function_help),
            ),
        ],
    ),
    // ---- pub/sub (the engine and the server loop)
    row("publish", 3, f(&[P, LO, ST, FA, MR]), NK, NONE, G::PubSub, D(publish)),
    row("subscribe", -2, f(&[P, NS, LO, ST]), NK, NONE, G::PubSub, E),
    row("unsubscribe", -1, f(&[P, NS, LO, ST]), NK, NONE, G::PubSub, E),
    row("psubscribe", -2, f(&[P, NS, LO, ST]), NK, NONE, G::PubSub, E),
    row("punsubscribe", -1, f(&[P, NS, LO, ST]), NK, NONE, G::PubSub, E),
    // Sharded pub/sub (https://redis.io/docs/interact/pubsub/#sharded-pubsub): the channels are
    // "keys" for cluster routing (Redis's key specs flag them `not_key`).
    row("ssubscribe", -2, f(&[P, NS, LO, ST]), K1ALL, NONE, G::PubSub, E),
    row("sunsubscribe", -1, f(&[P, NS, LO, ST]), K1ALL, NONE, G::PubSub, E),
    row("spublish", 3, f(&[P, LO, ST, FA]), K1, NONE, G::PubSub, D(spublish)),
    container(
        "pubsub",
        G::PubSub,
        &[
            row("channels", -2, f(&[P, LO, ST]), NK, NONE, G::PubSub, D(pubsub_channels)),
            row("numsub", -2, f(&[P, LO, ST]), NK, NONE, G::PubSub, D(pubsub_numsub)),
            row("numpat", 2, f(&[P, LO, ST]), NK, NONE, G::PubSub, D(pubsub_numpat)),
            row(
                "shardchannels",
                -2,
                f(&[P, LO, ST]),
                NK,
                NONE,
                G::PubSub,
                D(pubsub_shardchannels),
            ),
            row(
                "shardnumsub",
                -2,
                f(&[P, LO, ST]),
                NK,
                NONE,
                G::PubSub,
                D(pubsub_shardnumsub),
            ),
            row("help", 2, f(&[LO, ST]), NK, NONE, G::PubSub, D(pubsub_help)),
        ],
    ),
    // ---- transactions (the engine)
    row("multi", 1, f(&[NS, LO, ST, FA, AB]), NK, NONE, G::Transactions, E),
    row("exec", 1, f(&[NS, LO, ST, SK]), NK, NONE, G::Transactions, E),
    row("discard", 1, f(&[NS, LO, ST, FA, AB]), NK, NONE, G::Transactions, E),
    row("watch", -2, f(&[NS, LO, ST, FA, AB]), K1ALL, NONE, G::Transactions, E),
    row("unwatch", 1, f(&[NS, LO, ST, FA, AB]), NK, NONE, G::Transactions, E),
    // ---- connection (the engine)
    row("ping", -1, f(&[FA]), NK, NONE, G::Connection, K(ping)),
    row("echo", 2, f(&[FA]), NK, NONE, G::Connection, K(echo)),
    row("hello", -1, f(&[NS, LO, ST, FA, NA, AB]), NK, NONE, G::Connection, E),
    row("auth", -2, f(&[NS, LO, ST, FA, NA, AB]), NK, NONE, G::Connection, E),
    row("quit", -1, f(&[NS, LO, ST, FA, NA, AB]), NK, NONE, G::Connection, E),
    row("reset", 1, f(&[NS, LO, ST, FA, NA, AB]), NK, NONE, G::Connection, E),
    container(
        "client",
        G::Connection,
        &[
            row("id", 2, f(&[NS, LO, ST]), NK, NONE, G::Connection, E),
            row("getname", 2, f(&[NS, LO, ST]), NK, NONE, G::Connection, E),
            row("setname", 3, f(&[NS, LO, ST]), NK, NONE, G::Connection, E),
            row("setinfo", 4, f(&[NS, LO, ST]), NK, NONE, G::Connection, E),
            row("list", -2, f(&[A, NS, LO, ST]), NK, NONE, G::Connection, E),
            row("info", 2, f(&[NS, LO, ST]), NK, NONE, G::Connection, E),
            row("reply", 3, f(&[NS, LO, ST]), NK, NONE, G::Connection, E),
            row("no-evict", 3, f(&[A, NS, LO, ST]), NK, NONE, G::Connection, E),
            row("no-touch", 3, f(&[NS, LO, ST]), NK, NONE, G::Connection, E),
            // By the server loop, which knows the blocked clients; inside `MULTI` none is.
            row(
                "unblock",
                -3,
                f(&[A, NS, LO, ST]),
                NK,
                NONE,
                G::Connection,
                S(gen::client_unblock_queued),
            ),
            // By the server loop, which knows the connections; inside `MULTI` the engine sees
            // no other connection (`KILL` matches none) and the loop applies `PAUSE`/`UNPAUSE`
            // after the `EXEC`.
            row(
                "kill",
                -3,
                f(&[A, NS, LO, ST]),
                NK,
                NONE,
                G::Connection,
                S(client::client_kill_queued),
            ),
            row(
                "pause",
                -3,
                f(&[A, NS, LO, ST]),
                NK,
                NONE,
                G::Connection,
                S(client::client_pause_queued),
            ),
            row(
                "unpause",
                2,
                f(&[A, NS, LO, ST]),
                NK,
                NONE,
                G::Connection,
                S(client::client_unpause_queued),
            ),
            row("help", 2, f(&[LO, ST]), NK, NONE, G::Connection, K(client::client_help)),
        ],
    ),
    // ---- server (the engine; admin.rs, introspect.rs)
    row("info", -1, f(&[NS, LO, ST]), NK, NONE, G::Server, E),
    row("time", 1, f(&[LO, ST, FA]), NK, NONE, G::Server, K(gen::time)),
    row(
        "lastsave",
        1,
        f(&[LO, ST, FA]),
        NK,
        NONE,
        G::Server,
        K(introspect::lastsave),
    ),
    row("save", 1, f(&[A, NS, NM]), NK, NONE, G::Server, K(introspect::save)),
    row(
        "shutdown",
        -1,
        f(&[A, NS, LO, ST, NM, AB]),
        NK,
        NONE,
        G::Server,
        K(introspect::shutdown),
    ),
    row("wait", 3, f(&[NS]), NK, NONE, G::Generic, E),
    // Cluster mode is left out: the command exists (scripts may not call it) and says so.
    row(
        "cluster",
        -2,
        f(&[NS, LO, ST]),
        NK,
        NONE,
        G::Server,
        K(introspect::cluster),
    ),
    container(
        "memory",
        G::Server,
        &[
            row("usage", -3, f(&[R]), K2, NONE, G::Server, K(introspect::memory_usage)),
            row("help", 2, f(&[LO, ST]), NK, NONE, G::Server, K(introspect::memory_help)),
        ],
    ),
    container(
        "config",
        G::Server,
        &[
            row("get", -3, f(&[A, NS, LO, ST]), NK, NONE, G::Server, E),
            row("set", -4, f(&[A, NS, LO, ST]), NK, NONE, G::Server, E),
            row("resetstat", 2, f(&[A, NS, LO, ST]), NK, NONE, G::Server, E),
            row("rewrite", 2, f(&[A, NS, LO, ST]), NK, NONE, G::Server, E),
        ],
    ),
    CommandSpec {
        arity: -1,
        flags: f(&[LO, ST]),
        ..container(
            "command",
            G::Server,
            &[
                row("count", 2, f(&[LO, ST]), NK, NONE, G::Server, E),
                row("info", -2, f(&[LO, ST]), NK, NONE, G::Server, E),
                row("docs", -2, f(&[LO, ST]), NK, NONE, G::Server, E),
                row("list", -2, f(&[LO, ST]), NK, NONE, G::Server, E),
                row("getkeys", -3, f(&[LO, ST]), NK, NONE, G::Server, E),
                row(
                    "help",
                    2,
                    f(&[LO, ST]),
                    NK,
                    NONE,
                    G::Server,
                    K(introspect::command_help),
                ),
            ],
        )
    },
];

/// `skip_slowlog`-like flags Redis sets that the table keeps no bit for.
const SK: Flags = Flags::EMPTY;
