//! Differential conformance: the simulated Redis master against a real `redis-server`.
//!
//! # What it does
//!
//! Seeded proptest strategies generate command sequences over the subset the simulated master
//! supports (see [`command`]): `SET` with every option combination (and malformed ones), `GET`,
//! `DEL`, `EXISTS`, the `EXPIRE` family with `NX|XX|GT|LT`, `PTTL`/`TTL`, `INCR`/`INCRBY`/`DECR`,
//! `LPUSH`/`RPUSH`/`LPOP`/`RPOP`/`LLEN`/`LMOVE`/`RPOPLPUSH`/`LRANGE` and `BLPOP`/`BLMOVE`/
//! `BRPOPLPUSH` (never blocking long), the hash commands
//! (`HSET`/`HGET`/`HDEL`/`HEXISTS`/`HINCRBY`/`HGETALL`), `MULTI`/`EXEC`/`DISCARD`/`WATCH`/`UNWATCH`
//! (`EXEC` replies are compared command by command, with the `PTTL` tolerance), `PUBLISH`,
//! `EVAL`/`EVALSHA`/`SCRIPT` with the lock scripts (a Redisson-style hash lock among them) and Lua
//! scripts that exercise `redis.call`/`redis.pcall`, error and status replies and the nil/false
//! conversions ([`SCRIPTS`]), the set commands (`SADD`/`SREM`/`SMEMBERS`/`SISMEMBER`/`SCARD`),
//! `MSET`/`MSETNX`/`MGET`, databases (`SELECT`/`SWAPDB`/`FLUSHDB`/`DBSIZE`), plus wrong
//! arities, unknown commands and subcommands (`AUTH`, `FUNCTION` and `FCALL` among them). The
//! fixed cases of [`FIXED`] cover `FUNCTION LOAD/LIST/DELETE/FLUSH`, `FCALL`/`FCALL_RO`, `AUTH`
//! without a password, scripts and transactions across databases; [`MULTI_CONN`] covers
//! `requirepass` (which needs connections opened after it is set). Keys and
//! values come from small alphabets so that commands interact.
//!
//! A second test, [`several_connections_agree_with_redis_server`], runs the fixed cases of
//! [`MULTI_CONN`] over three raw connections to each server and compares the RESP bytes every
//! connection received after each step: `SUBSCRIBE` delivery and subscribed mode, `BLPOP` and
//! `BLMOVE`/`BRPOPLPUSH` woken by another connection (oldest blocked client first; a move
//! serving the destination's waiters; a wrong-type destination) and timing out on the server's clock,
//! `WATCH` invalidated by another connection and by expiry.
//!
//! Every sequence runs twice through the same redis-rs code ([`run_pipeline`]: one pipeline with
//! `ignore_errors`, so every reply and every error comes back as a [`redis::Value`]):
//! * against the simulated master, inside one [`World`] per chunk of sequences, from a client
//!   node over turmoil TCP ([`RedisLink::run`]);
//! * against a real `redis-server` started by the test on a free loopback port with a temporary
//!   directory ([`RedisServer`]), over real tokio TCP in its own thread and runtime. It runs with
//!   its 16 databases, like the simulated master, and without persistence.
//!
//! Each sequence starts in database 0 from `FLUSHALL` + `SCRIPT FLUSH` + `FUNCTION FLUSH`. The replies are compared one by one,
//! exactly, except for what `docs/redis-differences.md` lists as normalised here:
//! `PTTL`/`TTL` replies that are both non-negative may differ by [`PTTL_TOLERANCE_MS`] /
//! [`TTL_TOLERANCE_S`].
//!
//! # Time
//!
//! The two servers have different clocks (the simulated one starts at 2026-01-01), so absolute
//! times are generated as offsets from a per-sequence *base*: the first whole second after "now"
//! on that side (the real server's `TIME`; the simulated client's wall clock, which is the
//! master's). `{ms+N}` / `{s+N}` in a printed sequence are `base*1000 + N` / `base + N`.
//! Generated times keep clear of every boundary a few seconds of skew could cross: relative
//! TTLs are multiples of 10 s (distinct within a sequence, so `GT`/`LT` never compare two equal
//! relative expiries set at slightly different instants), future absolute times are
//! `base + 10k s + 5 s`, past ones at least 5 s back. No key expires by the passage of time
//! while a sequence runs, and nothing sleeps.
//!
//! # When it fails
//!
//! It prints the seed, the sequence index, the command, both replies, the sequence, and a
//! shrunk version as a [`REGRESSIONS`] entry; reproduce one sequence with
//! `LOCKSTEP_CONFORMANCE_SEED=<seed> LOCKSTEP_CONFORMANCE_ONLY=<index>`. Fixed differences are
//! kept in [`REGRESSIONS`], which run first. `LOCKSTEP_CONFORMANCE_CASES` changes the number
//! of sequences (default [`DEFAULT_CASES`]); `LOCKSTEP_CONFORMANCE_COVERAGE=1` (with
//! `--nocapture`) prints the replies seen per command and every distinct error text.
//!
//! Without `redis-server` on the `PATH` (or at `$REDIS_SERVER`) the test says so and passes,
//! except under `CI=true`, where it fails.

use lockstep_sim::redis::sha1_hex;
use lockstep_sim::{ClockSpec, FaultPlan, LinkTimeouts, Node, RedisLink, World, WorldConfig, REDIS_PORT};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::{BoxedStrategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Generated sequences per run.
const DEFAULT_CASES: usize = 5_000;
/// The default seed.
const DEFAULT_SEED: u64 = 0x10c4_57e9_c0f0_2026;
/// Sequences per simulated world (bounds the history each world keeps).
const SEQUENCES_PER_WORLD: usize = 500;
/// How far apart two non-negative `PTTL` replies may be: the sub-second part of the two bases
/// (< 1 s) plus the time a sequence takes.
const PTTL_TOLERANCE_MS: i64 = 1_500;
/// How far apart two non-negative `TTL` replies may be (see [`PTTL_TOLERANCE_MS`]).
const TTL_TOLERANCE_S: i64 = 1;
/// Most shrink steps for one failing sequence.
const SHRINK_BUDGET: usize = 400;

// ---------------------------------------------------------------------------------------------
// Sequences
// ---------------------------------------------------------------------------------------------

/// One argument of a command as generated: resolved against a side's base time before sending.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Arg {
    /// Sent as is.
    Lit(String),
    /// `base * 1000 + offset`, an absolute Unix time in ms.
    AtMs(i64),
    /// `base + offset`, an absolute Unix time in seconds.
    AtS(i64),
}

impl Arg {
    fn resolve(&self, base_s: i64) -> String {
        match self {
            Arg::Lit(s) => s.clone(),
            Arg::AtMs(off) => (base_s * 1000 + off).to_string(),
            Arg::AtS(off) => (base_s + off).to_string(),
        }
    }

    /// The regression-table spelling: a Rust string literal.
    fn literal(&self) -> String {
        match self {
            Arg::Lit(s) => format!("{s:?}"),
            Arg::AtMs(off) => format!("\"{{ms{off:+}}}\""),
            Arg::AtS(off) => format!("\"{{s{off:+}}}\""),
        }
    }

    /// Parses the regression-table spelling (without the quotes).
    fn parse(s: &str) -> Arg {
        let at = |prefix: &str| {
            s.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix('}'))
                .and_then(|n| n.parse::<i64>().ok())
        };
        if let Some(off) = at("{ms") {
            Arg::AtMs(off)
        } else if let Some(off) = at("{s") {
            Arg::AtS(off)
        } else {
            Arg::Lit(s.to_string())
        }
    }
}

impl std::fmt::Display for Arg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Arg::Lit(s) if s.is_empty() || s.contains([' ', '\n', '"']) => write!(f, "{s:?}"),
            Arg::Lit(s) => f.write_str(s),
            Arg::AtMs(off) => write!(f, "{{ms{off:+}}}"),
            Arg::AtS(off) => write!(f, "{{s{off:+}}}"),
        }
    }
}

type Cmd = Vec<Arg>;
type Sequence = Vec<Cmd>;

fn show(cmd: &[Arg]) -> String {
    cmd.iter().map(Arg::to_string).collect::<Vec<_>>().join(" ")
}

/// A generated token: an [`Arg`], or a relative TTL of `m * 10` s to be made unique.
#[derive(Clone, Debug)]
enum Tok {
    Arg(Arg),
    /// A relative TTL of `m * 10 s`, in seconds (`secs`) or ms.
    Rel {
        m: u32,
        secs: bool,
    },
    /// The SHA of the `n`-th (modulo) script body sent earlier in the sequence by `EVAL` or
    /// `SCRIPT LOAD`, so that `EVALSHA` mostly finds something; in upper case if `upper`.
    SeenSha {
        n: usize,
        upper: bool,
    },
}

fn lit(s: impl Into<String>) -> Tok {
    Tok::Arg(Arg::Lit(s.into()))
}

/// Makes the relative TTLs of a sequence pairwise distinct (see the module docs) and turns the
/// tokens into arguments.
fn finalize(raw: Vec<Vec<Tok>>) -> Sequence {
    let mut used = BTreeSet::new();
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(raw.len());
    for cmd in raw {
        let cmd: Cmd = cmd
            .into_iter()
            .map(|tok| match tok {
                Tok::Arg(a) => a,
                Tok::Rel { mut m, secs } => {
                    while !used.insert(m) {
                        m += 1;
                    }
                    let v = if secs { u64::from(m) * 10 } else { u64::from(m) * 10_000 };
                    Arg::Lit(v.to_string())
                }
                Tok::SeenSha { n, upper } => {
                    let body = seen
                        .get(n % seen.len().max(1))
                        .map_or(SCRIPTS[n % SCRIPTS.len()], |s| s);
                    let sha = sha(body);
                    Arg::Lit(if upper { sha.to_ascii_uppercase() } else { sha })
                }
            })
            .collect();
        let word = |i: usize| match cmd.get(i) {
            Some(Arg::Lit(s)) => Some(s.as_str()),
            _ => None,
        };
        let body = match (word(0), word(1)) {
            (Some(c), Some(body)) if c.eq_ignore_ascii_case("eval") => Some(body),
            (Some(c), Some(sub)) if c.eq_ignore_ascii_case("script") && sub.eq_ignore_ascii_case("load") => word(2),
            _ => None,
        };
        if let Some(body) = body {
            seen.push(body.to_string());
        }
        out.push(cmd);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Alphabets
// ---------------------------------------------------------------------------------------------

const KEYS: &[&str] = &["a", "b", "c"];

/// Values; the numeric ones are harmless as TTLs (they delete, fail, or last 100 000 s).
const VALUES: &[&str] = &[
    "v1",
    "010",
    "-0",
    "+5",
    "\u{e9}t\u{e9}",
    "a\r\nb",
    "v2",
    "0",
    "-7",
    "100000",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    " 1",
    "",
    "x y",
];

const DELTAS: &[&str] = &[
    "1",
    "-1",
    "100",
    "0",
    "9223372036854775807",
    "-9223372036854775808",
    "x",
    "",
    "+1",
    " 2",
    "1.0",
];

/// Relative TTLs that are not a plain future time.
const BAD_RELATIVE: &[&str] = &[
    "0",
    "-1",
    "-10000",
    "abc",
    "1.5",
    "",
    " 10",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775",
    "9000000000000000",
];

/// Absolute times far in the past on both clocks, or invalid. (A valid time far in the future,
/// like `PEXPIREAT k 9223372036854775807`, would give `PTTL`s as far apart as the two clocks.)
const BAD_ABSOLUTE_MS: &[&str] = &["0", "1", "-1", "1000", "abc", ""];
/// [`BAD_ABSOLUTE_MS`] in seconds, and one that overflows when converted to ms.
const BAD_ABSOLUTE_S: &[&str] = &["0", "1", "-1", "1000", "abc", "", "9223372036854775807"];

const RELEASE: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;
const EXTEND: &str =
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#;

/// Lua scripts: the lock scripts, and the conversions and errors of Redis' scripting.
const SCRIPTS: &[&str] = &[
    RELEASE,
    EXTEND,
    r#"return redis.call("set",KEYS[1],ARGV[1],"NX","PX",ARGV[2])"#,
    r#"return redis.call("set",KEYS[1],ARGV[1],"GET")"#,
    r#"return redis.call("get",KEYS[1])"#,
    r#"return redis.call("incr",KEYS[1])"#,
    r#"return redis.pcall("incr",KEYS[1])"#,
    r#"return {redis.call("incrby",KEYS[1],ARGV[1])}"#,
    r#"return redis.call("expire",KEYS[1],ARGV[1])"#,
    r#"return redis.call("exists",KEYS[1],KEYS[2])"#,
    r#"return redis.call("del",unpack(KEYS))"#,
    r#"return redis.call("type",KEYS[1])"#,
    r#"return redis.status_reply(redis.call("type",KEYS[1]).ok)"#,
    r#"return redis.call("lpop",KEYS[1])"#,
    r#"return redis.call("hset",KEYS[1],"f",ARGV[1])"#,
    r#"return redis.call("hgetall",KEYS[1])"#,
    r#"return redis.call("hincrby",KEYS[1],"f",ARGV[1])"#,
    r#"return redis.call("publish",KEYS[1],ARGV[1])"#,
    r#"return redis.call("blpop",KEYS[1],0)"#,
    r#"return redis.call("watch",KEYS[1])"#,
    r#"return redis.call("multi")"#,
    // Redisson-style reentrant lock: a hash of holder -> count.
    r#"if redis.call("exists",KEYS[1]) == 0 or redis.call("hexists",KEYS[1],ARGV[1]) == 1 then redis.call("hincrby",KEYS[1],ARGV[1],1) redis.call("pexpire",KEYS[1],100000) return nil end return redis.call("pttl",KEYS[1]) > 0"#,
    r#"if redis.call("hexists",KEYS[1],ARGV[1]) == 0 then return nil end local n = redis.call("hincrby",KEYS[1],ARGV[1],-1) if n > 0 then return 0 end redis.call("del",KEYS[1]) redis.call("publish",KEYS[1],"unlocked") return 1"#,
    r#"return redis.call("ping")"#,
    r#"return redis.call("get",KEYS[1]) == false"#,
    r#"return type(redis.call("get",KEYS[1]))"#,
    r#"local r = redis.pcall("get",KEYS[1]) if type(r) == "table" then return r.err end return r"#,
    r#"local t = redis.call("pttl",KEYS[1]) if t < 0 then return t end return math.floor((t + 2500) / 5000)"#,
    r#"redis.call("set",KEYS[1],3.5) return redis.call("get",KEYS[1])"#,
    r#"redis.call("set",KEYS[1],ARGV[1]) return redis.call("incr",KEYS[1])"#,
    r#"return redis.call("get",KEYS[1],"extra")"#,
    r#"return redis.pcall("get")"#,
    r#"return redis.call("nosuch")"#,
    r#"return redis.pcall("eval","return 1",0)"#,
    r#"return redis.call()"#,
    r#"return redis.call("get",{})"#,
    r#"local ok, e = pcall(redis.call,"incr",KEYS[1]) return {tostring(ok), e}"#,
    r#"return redis.error_reply("My error")"#,
    r#"return redis.error_reply("-CODE detail")"#,
    r#"return redis.status_reply("FINE")"#,
    r#"return {err="CUSTOM bad"}"#,
    r#"return {ok="fine"}"#,
    r#"return {1,"two",false,4}"#,
    r#"return {1,nil,3}"#,
    r#"return {1,{2,{3,"x"}},{err="inner"}}"#,
    r#"return {double=1.5}"#,
    "return 3.99",
    "return -2.5",
    "return true",
    "return false",
    "return nil",
    "return",
    "return #KEYS + #ARGV",
    "return {KEYS[1], ARGV[1]}",
    "return tonumber(ARGV[1])",
    "math.randomseed(7) return {math.random(100), math.random(1, 6), math.random()}",
    "return redis.sha1hex(ARGV[1] or '')",
    r#"return string.format("%d-%s", 7, "x") .. tostring(nil)"#,
    r#"error("boom")"#,
    r#"error("boom", 0)"#,
    r#"error({err="MYERR custom"})"#,
    "error(redis.error_reply('WRAPPED err'))",
    "return undefined_var",
    "x = 5",
    "local a = 1\nlocal b = nil\nreturn b.x",
    "return nil + 1",
    "return +",
    "local x =",
    "while true do break end return 'loop'",
    "return 1e20",
    "return 0/0",
    "return -0.5",
    "return {1e20, -1e20, 2^53}",
    r#"redis.call("set",KEYS[1],1/0) return redis.call("get",KEYS[1])"#,
    r#"redis.call("set",KEYS[1],100) return redis.call("get",KEYS[1])"#,
    r#"redis.call("set",KEYS[1],-0.0) return redis.call("get",KEYS[1])"#,
    r#"redis.call("set",KEYS[1],0.1) return redis.call("get",KEYS[1])"#,
    r#"return redis.call("set",KEYS[1],ARGV[1],"EX",ARGV[2])"#,
    r#"return redis.call("echo",ARGV[1])"#,
    r#"return redis.call("select",ARGV[1])"#,
    r#"return redis.call("exists",unpack(ARGV))"#,
    r#"return redis.call("get",KEYS[1]) .. "x""#,
    r#"redis.call("set",KEYS[1],"written") error("after write")"#,
    r#"redis.call("set",KEYS[1],"written") return redis.call("incr",KEYS[1])"#,
    r#"return tostring(redis.call("pttl",KEYS[1]) > 0)"#,
    r#"return {ok="a\r\nb"}"#,
    r#"return {redis.pcall("nosuch"), redis.status_reply("S"), redis.call("ping")}"#,
    r#"return {pcall(redis.call, "nosuch")}"#,
    r#"local t = redis.pcall("incr",KEYS[1]) return type(t)"#,
    r#"return redis.error_reply("")"#,
    r#"return redis.error_reply("-")"#,
    r#"return redis.error_reply("line\nbreak")"#,
    "return redis.error_reply(5)",
    "return redis.status_reply(5)",
    "return redis.status_reply('')",
    "return redis.error_reply()",
    "error(123)",
    "error()",
    "return pcall(error, {err='X y'})",
    "redis.log(redis.LOG_NOTICE, 'conformance') return 1",
    "return redis.log(redis.LOG_WARNING)",
    "return redis.sha1hex(1)",
    "return redis.sha1hex()",
    "return redis.setresp(2)",
    "return redis.setresp(9)",
    "return redis.REDIS_VERSION_NUM >= 0x070000",
    "return string.rep('x', 3) .. #ARGV",
    "return KEYS[3]",
    "return {ARGV[1], nil, ARGV[2]}",
    "return tostring(ARGV[1] == KEYS[1])",
    "local n = tonumber(ARGV[1]) if n then return n * 2 end return 'nan'",
];

fn sha(script: &str) -> String {
    sha1_hex(script.as_bytes())
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

fn pick(items: &'static [&'static str]) -> BoxedStrategy<Tok> {
    select(items).prop_map(lit).boxed()
}

/// A command or option name, sometimes in lower or mixed case.
fn name(s: &'static str) -> BoxedStrategy<Tok> {
    let lower = s.to_ascii_lowercase();
    let mixed: String = s
        .chars()
        .enumerate()
        .map(|(i, c)| if i % 2 == 0 { c.to_ascii_lowercase() } else { c })
        .collect();
    prop_oneof![8 => Just(lit(s)), 1 => Just(lit(lower)), 1 => Just(lit(mixed))].boxed()
}

fn key() -> BoxedStrategy<Tok> {
    pick(KEYS)
}

fn value() -> BoxedStrategy<Tok> {
    pick(VALUES)
}

/// A relative TTL, in seconds or ms.
fn relative(secs: bool) -> BoxedStrategy<Tok> {
    prop_oneof![
        8 => (1u32..=12).prop_map(move |m| Tok::Rel { m, secs }),
        2 => pick(BAD_RELATIVE),
    ]
    .boxed()
}

/// An absolute time, in seconds or ms.
fn absolute(secs: bool) -> BoxedStrategy<Tok> {
    let at = move |n: i64| {
        Tok::Arg(if secs {
            Arg::AtS(n * 10 + 5 * n.signum())
        } else {
            Arg::AtMs(n * 10_000 + 5_000 * n.signum())
        })
    };
    prop_oneof![
        6 => (0i64..=6).prop_map(move |n| at(n + 1)),
        2 => (1i64..=3).prop_map(move |n| at(-n)),
        1 => pick(if secs { BAD_ABSOLUTE_S } else { BAD_ABSOLUTE_MS }),
    ]
    .boxed()
}

fn cmd_of(parts: Vec<Vec<Tok>>) -> Vec<Tok> {
    parts.into_iter().flatten().collect()
}

fn set_option() -> BoxedStrategy<Vec<Tok>> {
    prop_oneof![
        3 => name("NX").prop_map(|t| vec![t]),
        3 => name("XX").prop_map(|t| vec![t]),
        3 => name("GET").prop_map(|t| vec![t]),
        2 => name("KEEPTTL").prop_map(|t| vec![t]),
        3 => (name("EX"), relative(true)).prop_map(|(a, b)| vec![a, b]),
        3 => (name("PX"), relative(false)).prop_map(|(a, b)| vec![a, b]),
        2 => (name("EXAT"), absolute(true)).prop_map(|(a, b)| vec![a, b]),
        2 => (name("PXAT"), absolute(false)).prop_map(|(a, b)| vec![a, b]),
        1 => pick(&["FOO", "EX", "PX", "", "NXX"]).prop_map(|t| vec![t]),
    ]
    .boxed()
}

fn set_command() -> BoxedStrategy<Vec<Tok>> {
    (name("SET"), key(), value(), vec(set_option(), 0..=3))
        .prop_map(|(n, k, v, opts)| cmd_of(vec![vec![n, k, v], opts.concat()]))
        .boxed()
}

fn expire_option() -> BoxedStrategy<Tok> {
    prop_oneof![
        3 => name("NX"),
        3 => name("XX"),
        3 => name("GT"),
        3 => name("LT"),
        1 => pick(&["FOO", ""]),
    ]
    .boxed()
}

fn expire_command() -> BoxedStrategy<Vec<Tok>> {
    let when = prop_oneof![
        3 => (name("PEXPIRE"), relative(false)),
        2 => (name("EXPIRE"), relative(true)),
        3 => (name("PEXPIREAT"), absolute(false)),
        2 => (name("EXPIREAT"), absolute(true)),
    ];
    (when, key(), vec(expire_option(), 0..=2))
        .prop_map(|((n, t), k, opts)| cmd_of(vec![vec![n, k, t], opts]))
        .boxed()
}

fn key_command() -> BoxedStrategy<Vec<Tok>> {
    let n = prop_oneof![
        4 => name("GET"),
        4 => name("PTTL"),
        2 => name("TTL"),
        2 => name("INCR"),
        1 => name("DECR"),
        1 => name("TYPE"),
        1 => name("PERSIST"),
        1 => name("LLEN"),
        1 => name("GETDEL"),
    ];
    (n, key()).prop_map(|(n, k)| vec![n, k]).boxed()
}

fn multi_key_command() -> BoxedStrategy<Vec<Tok>> {
    (prop_oneof![name("DEL"), name("EXISTS")], vec(key(), 1..=3))
        .prop_map(|(n, ks)| cmd_of(vec![vec![n], ks]))
        .boxed()
}

fn incrby_command() -> BoxedStrategy<Vec<Tok>> {
    (
        prop_oneof![3 => name("INCRBY"), 1 => name("DECRBY")],
        key(),
        pick(DELTAS),
    )
        .prop_map(|(n, k, d)| vec![n, k, d])
        .boxed()
}

fn list_command() -> BoxedStrategy<Vec<Tok>> {
    prop_oneof![
        (prop_oneof![name("LPUSH"), name("RPUSH")], key(), vec(value(), 1..=2))
            .prop_map(|(n, k, vs)| cmd_of(vec![vec![n, k], vs])),
        (
            prop_oneof![name("LPOP"), name("RPOP")],
            key(),
            proptest::option::of(pick(&["0", "1", "2", "-1", "x"]))
        )
            .prop_map(|(n, k, c)| cmd_of(vec![vec![n, k], c.into_iter().collect()])),
        (name("LMOVE"), key(), key(), list_end(), list_end()).prop_map(|(n, s, d, f, t)| vec![n, s, d, f, t]),
        (name("RPOPLPUSH"), key(), key()).prop_map(|(n, s, d)| vec![n, s, d]),
        (name("LRANGE"), key(), list_index(), list_index()).prop_map(|(n, k, a, b)| vec![n, k, a, b]),
    ]
    .boxed()
}

/// An end of a list for `LMOVE`/`BLMOVE`, now and then a bad one.
fn list_end() -> BoxedStrategy<Tok> {
    prop_oneof![4 => name("LEFT"), 4 => name("RIGHT"), 1 => pick(&["up", ""])].boxed()
}

/// An `LRANGE` index.
fn list_index() -> BoxedStrategy<Tok> {
    pick(&[
        "0",
        "1",
        "-1",
        "-2",
        "2",
        "100",
        "-100",
        "x",
        "9223372036854775807",
        "-9223372036854775808",
    ])
}

const FIELDS: &[&str] = &["f", "g", "h"];

fn hash_command() -> BoxedStrategy<Vec<Tok>> {
    let field = || pick(FIELDS);
    prop_oneof![
        4 => (name("HSET"), key(), vec((field(), value()), 1..=3), proptest::option::weighted(0.1, field()))
            .prop_map(|(n, k, pairs, odd)| {
                let flat = pairs.into_iter().flat_map(|(f, v)| [f, v]).collect();
                cmd_of(vec![vec![n, k], flat, odd.into_iter().collect()])
            }),
        3 => (prop_oneof![name("HGET"), name("HEXISTS")], key(), field()).prop_map(|(n, k, f)| vec![n, k, f]),
        2 => (name("HDEL"), key(), vec(field(), 1..=3)).prop_map(|(n, k, fs)| cmd_of(vec![vec![n, k], fs])),
        2 => (name("HINCRBY"), key(), field(), pick(DELTAS)).prop_map(|(n, k, f, d)| vec![n, k, f, d]),
        2 => (name("HGETALL"), key()).prop_map(|(n, k)| vec![n, k]),
    ]
    .boxed()
}

/// Transactions on one connection: `WATCH` sees this connection's own writes too.
/// Set members: a few short words and numbers, so that sets overlap and some are intsets.
const MEMBERS: &[&str] = &["m", "n", "o", "1", "2"];

/// The set commands (`SMEMBERS` is compared as a set, see [`agree`]).
fn sets_command() -> BoxedStrategy<Vec<Tok>> {
    let member = || pick(MEMBERS);
    prop_oneof![
        4 => (name("SADD"), key(), vec(member(), 1..=3)).prop_map(|(n, k, ms)| cmd_of(vec![vec![n, k], ms])),
        2 => (name("SREM"), key(), vec(member(), 1..=3)).prop_map(|(n, k, ms)| cmd_of(vec![vec![n, k], ms])),
        2 => (name("SISMEMBER"), key(), member()).prop_map(|(n, k, m)| vec![n, k, m]),
        2 => (prop_oneof![name("SMEMBERS"), name("SCARD")], key()).prop_map(|(n, k)| vec![n, k]),
    ]
    .boxed()
}

/// `MSET`/`MSETNX` (with an odd argument now and then) and `MGET`.
fn mset_command() -> BoxedStrategy<Vec<Tok>> {
    prop_oneof![
        3 => (prop_oneof![3 => name("MSET"), 1 => name("MSETNX")], vec((key(), value()), 1..=3), proptest::option::weighted(0.1, key()))
            .prop_map(|(n, pairs, odd)| {
                let flat = pairs.into_iter().flat_map(|(k, v)| [k, v]).collect();
                cmd_of(vec![vec![n], flat, odd.into_iter().collect()])
            }),
        2 => (name("MGET"), vec(key(), 1..=3)).prop_map(|(n, ks)| cmd_of(vec![vec![n], ks])),
    ]
    .boxed()
}

/// Databases: `SELECT`, `SWAPDB`, `FLUSHDB` (the sequence goes on in the database it selected;
/// every sequence starts in database 0). Not `DBSIZE`: it counts keys expired but not reclaimed
/// yet, which the simulated master reclaims sooner (docs/redis-differences.md); the fixed cases
/// have it where no key expired.
fn database_command() -> BoxedStrategy<Vec<Tok>> {
    let index = || pick(&["0", "1", "2", "15", "16", "-1", "x"]);
    prop_oneof![
        4 => pick(&["0", "1", "2"]).prop_map(|i| vec![lit("SELECT"), i]),
        2 => (index(), index()).prop_map(|(a, b)| vec![lit("SWAPDB"), a, b]),
        1 => Just(vec![lit("FLUSHDB")]),
    ]
    .boxed()
}

fn transaction_command() -> BoxedStrategy<Vec<Tok>> {
    prop_oneof![
        3 => Just(vec![lit("MULTI")]),
        3 => Just(vec![lit("EXEC")]),
        1 => Just(vec![lit("DISCARD")]),
        2 => (name("WATCH"), vec(key(), 1..=2)).prop_map(|(n, ks)| cmd_of(vec![vec![n], ks])),
        1 => Just(vec![lit("UNWATCH")]),
        1 => (name("PUBLISH"), key(), value()).prop_map(|(n, k, v)| vec![n, k, v]),
    ]
    .boxed()
}

/// `BLPOP` that never blocks long: an element is there, the timeout is bad, or it is 10 ms.
fn blpop_command() -> BoxedStrategy<Vec<Tok>> {
    (
        name("BLPOP"),
        vec(key(), 1..=2),
        pick(&["0.01", "x", "-1", "", "1e400"]),
    )
        .prop_map(|(n, ks, t)| cmd_of(vec![vec![n], ks, vec![t]]))
        .boxed()
}

/// `BLMOVE`/`BRPOPLPUSH` that never block long, as [`blpop_command`].
fn blmove_command() -> BoxedStrategy<Vec<Tok>> {
    let timeout = || pick(&["0.01", "x", "-1", "", "1e400"]);
    prop_oneof![
        (name("BLMOVE"), key(), key(), list_end(), list_end(), timeout())
            .prop_map(|(n, s, d, f, t, w)| vec![n, s, d, f, t, w]),
        (name("BRPOPLPUSH"), key(), key(), timeout()).prop_map(|(n, s, d, w)| vec![n, s, d, w]),
    ]
    .boxed()
}

fn misc_command() -> BoxedStrategy<Vec<Tok>> {
    prop_oneof![
        Just(vec![lit("PING")]),
        value().prop_map(|v| vec![lit("PING"), v]),
        value().prop_map(|v| vec![lit("ECHO"), v]),
        pick(&["0", "1", "x", "-1", "16"]).prop_map(|v| vec![lit("SELECT"), v]),
    ]
    .boxed()
}

/// Wrong arities, unknown commands and subcommands. The arguments are never numbers, so nothing
/// here sets a TTL.
fn junk_command() -> BoxedStrategy<Vec<Tok>> {
    let names: &'static [&'static str] = &[
        "GET",
        "SET",
        "DEL",
        "EXISTS",
        "PEXPIRE",
        "PEXPIREAT",
        "EXPIRE",
        "PTTL",
        "TTL",
        "INCR",
        "INCRBY",
        "DECRBY",
        "EVAL",
        "EVALSHA",
        "SCRIPT",
        "PERSIST",
        "HSET",
        "HGET",
        "HDEL",
        "HINCRBY",
        "HGETALL",
        "BLPOP",
        "PUBLISH",
        "WATCH",
        "MULTI",
        "EXEC",
        "TYPE",
        "LPUSH",
        "LPOP",
        "LMOVE",
        "BLMOVE",
        "RPOPLPUSH",
        "BRPOPLPUSH",
        "LRANGE",
        "ECHO",
        "FLUSHALL",
        "FLUSHDB",
        "GETDEL",
        "NOSUCH",
        "GETT",
        "",
        " GET",
        "FOO\r\nBAR",
        "\u{e9}",
        LONG_NAME,
        "SELECT",
        "PING",
        "SADD",
        "SREM",
        "SMEMBERS",
        "SISMEMBER",
        "SCARD",
        "MSET",
        "MSETNX",
        "MGET",
        "SWAPDB",
        "AUTH",
        "FCALL",
        "FCALL_RO",
        "FUNCTION",
    ];
    let word: &'static [&'static str] = &[
        "a", "b", "x", "NX", "GET", "KEEPTTL", "LOAD", "EXISTS", "FLUSH", "KILL", "", "LIST", "DELETE", "REPLACE",
    ];
    (pick(names), vec(pick(word), 0..=4))
        .prop_map(|(n, args)| cmd_of(vec![vec![n], args]))
        .boxed()
}

/// An unknown command name longer than the 128 characters Redis quotes.
const LONG_NAME: &str = "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\
                         XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX";

fn script() -> BoxedStrategy<&'static str> {
    prop_oneof![3 => select(&[RELEASE, EXTEND][..]), 7 => select(SCRIPTS)].boxed()
}

fn script_arg() -> BoxedStrategy<Tok> {
    prop_oneof![4 => value(), 2 => key(), 2 => relative(false)].boxed()
}

/// `numkeys keys... args...`, with a bad `numkeys` now and then.
fn script_tail() -> BoxedStrategy<Vec<Tok>> {
    (
        0usize..=2,
        vec(key(), 2),
        vec(script_arg(), 0..=3),
        proptest::option::weighted(0.1, pick(&["-1", "x", "5", "", "01"])),
    )
        .prop_map(|(n, keys, args, bad)| {
            let numkeys = bad.unwrap_or_else(|| lit(n.to_string()));
            cmd_of(vec![vec![numkeys], keys[..n].to_vec(), args])
        })
        .boxed()
}

fn sha_arg() -> BoxedStrategy<Tok> {
    prop_oneof![
        6 => (0usize..8).prop_map(|n| Tok::SeenSha { n, upper: false }),
        1 => (0usize..8).prop_map(|n| Tok::SeenSha { n, upper: true }),
        2 => script().prop_map(|s| lit(sha(s))),
        2 => pick(&["0123456789012345678901234567890123456789", "abc", ""]),
    ]
    .boxed()
}

fn eval_command() -> BoxedStrategy<Vec<Tok>> {
    prop_oneof![
        3 => (name("EVAL"), script(), script_tail())
            .prop_map(|(n, s, tail)| cmd_of(vec![vec![n, lit(s)], tail])),
        2 => (name("EVALSHA"), sha_arg(), script_tail())
            .prop_map(|(n, s, tail)| cmd_of(vec![vec![n, s], tail])),
        1 => (name("EVAL_RO"), script(), script_tail())
            .prop_map(|(n, s, tail)| cmd_of(vec![vec![n, lit(s)], tail])),
        1 => (name("EVALSHA_RO"), sha_arg(), script_tail())
            .prop_map(|(n, s, tail)| cmd_of(vec![vec![n, s], tail])),
    ]
    .boxed()
}

fn script_command() -> BoxedStrategy<Vec<Tok>> {
    prop_oneof![
        4 => (name("LOAD"), script()).prop_map(|(n, s)| vec![lit("SCRIPT"), n, lit(s)]),
        3 => (name("EXISTS"), vec(sha_arg(), 1..=3))
            .prop_map(|(n, shas)| cmd_of(vec![vec![lit("SCRIPT"), n], shas])),
        1 => (name("FLUSH"), proptest::option::of(pick(&["SYNC", "async", "NOW"])))
            .prop_map(|(n, o)| cmd_of(vec![vec![lit("SCRIPT"), n], o.into_iter().collect()])),
        // Never `SCRIPT DEBUG x`: Redis refuses it while replies are pending, as in a pipeline.
        1 => prop_oneof![
            pick(&["KILL", "NOPE", "DEBUG", "HELP!"]).prop_map(|s| vec![lit("SCRIPT"), s]),
            Just(vec![lit("SCRIPT"), lit("DEBUG"), lit("NO"), lit("x")]),
            Just(vec![lit("SCRIPT"), lit("KILL"), lit("x")]),
        ],
    ]
    .boxed()
}

/// What clients and test suites ask a server about itself: `KEYS` and `SCAN` (compared as sets,
/// see [`agree`]), `OBJECT`, `CONFIG GET` of settings both servers share, `WAIT` without
/// replicas, `TIME` (compared by shape).
fn introspection_command() -> BoxedStrategy<Vec<Tok>> {
    let pattern = || pick(&["*", "a*", "?", "[ab]", "[^a]", "\\a", "x*", "*b*"]);
    prop_oneof![
        3 => (name("KEYS"), pattern()).prop_map(|(n, p)| vec![n, p]),
        2 => Just(vec![lit("SCAN"), lit("0"), lit("COUNT"), lit("1000")]),
        2 => pattern().prop_map(|p| vec![lit("SCAN"), lit("0"), lit("MATCH"), p, lit("COUNT"), lit("1000")]),
        1 => pick(&["string", "list", "hash", "set", "zset"])
            .prop_map(|t| vec![lit("SCAN"), lit("0"), lit("COUNT"), lit("1000"), lit("TYPE"), t]),
        1 => prop_oneof![
            // A cursor the server did not hand out is implementation-defined (Redis masks it
            // with its table size): only invalid ones and the start are compared.
            pick(&["x", " 1", ""]).prop_map(|c| vec![lit("SCAN"), c]),
            Just(vec![lit("SCAN"), lit("0"), lit("COUNT"), lit("0")]),
            Just(vec![lit("SCAN"), lit("0"), lit("MATCH")]),
            Just(vec![lit("SCAN"), lit("0"), lit("NOPE"), lit("1")]),
        ],
        3 => (pick(&["ENCODING", "REFCOUNT", "encoding"]), key()).prop_map(|(s, k)| vec![lit("OBJECT"), s, k]),
        1 => pick(&["maxmemory-policy", "databases", "timeout", "notify-keyspace-events", "nosuch", "DATABASES"])
            .prop_map(|p| vec![lit("CONFIG"), lit("GET"), p]),
        1 => prop_oneof![
            Just(vec![lit("WAIT"), lit("0"), lit("0")]),
            Just(vec![lit("WAIT"), lit("0"), lit("-1")]),
            Just(vec![lit("WAIT"), lit("x"), lit("0")]),
            Just(vec![lit("WAIT"), lit("0")]),
        ],
        1 => Just(vec![lit("TIME")]),
    ]
    .boxed()
}

fn command() -> BoxedStrategy<Vec<Tok>> {
    prop_oneof![
        20 => set_command(),
        12 => expire_command(),
        16 => key_command(),
        5 => multi_key_command(),
        5 => incrby_command(),
        3 => list_command(),
        2 => misc_command(),
        4 => junk_command(),
        20 => eval_command(),
        5 => script_command(),
        8 => hash_command(),
        5 => transaction_command(),
        1 => blpop_command(),
        1 => blmove_command(),
        3 => introspection_command(),
        6 => sets_command(),
        3 => mset_command(),
        2 => database_command(),
    ]
    .boxed()
}

fn sequence() -> BoxedStrategy<Sequence> {
    vec(command(), 10..=40).prop_map(finalize).boxed()
}

/// The runner that generates sequence `index` of a run with `seed`: each sequence has its own
/// seeded stream, so one can be regenerated (and shrunk) alone.
fn runner_for(seed: u64, index: usize) -> TestRunner {
    let mut bytes = [0u8; 32];
    let mut x = seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for chunk in bytes.chunks_mut(8) {
        // splitmix64
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn generate(seed: u64, index: usize) -> Sequence {
    sequence()
        .new_tree(&mut runner_for(seed, index))
        .expect("sequence strategy")
        .current()
}

// ---------------------------------------------------------------------------------------------
// Regression cases
// ---------------------------------------------------------------------------------------------

/// Shrunk sequences on which the two servers once disagreed, kept as permanent cases: `(what
/// it caught, commands)`. `{ms+N}` / `{s+N}` are absolute times relative to the sequence's base.
const REGRESSIONS: &[(&str, &[&[&str]])] = &[
    (
        "SCRIPT KILL and SCRIPT DEBUG were unknown subcommands",
        &[
            &["SCRIPT", "KILL"],
            &["SCRIPT", "DEBUG"],
            &["SCRIPT", "KILL", "x"],
            &["SCRIPT", "DEBUG", "NO", "x"],
        ],
    ),
    (
        "reading an undefined global lacked Redis' `user_script:1: ` position",
        &[&["EVAL", "return undefined_var", "0"]],
    ),
    (
        "a Lua number at or above 2^63 became i64::MAX; x86-64 Redis answers i64::MIN",
        &[
            &["EVAL", "return tonumber(ARGV[1])", "0", "9223372036854775807"],
            &["SET", "a", "9223372036854775806"],
            &["EVAL", "return redis.call(\"incr\",KEYS[1])", "1", "a"],
            &["EVAL", "return 0/0", "0"],
        ],
    ),
    (
        "SELECT with a number outside `int` has its own error",
        &[&[
            "EVAL",
            "return redis.call(\"select\",ARGV[1])",
            "0",
            "9223372036854775807",
        ]],
    ),
    (
        "SET with a past EXAT/PXAT leaves nothing visible (DBSIZE itself is a documented difference)",
        &[
            &["SET", "a", "v1", "EXAT", "{s-15}"],
            &["SET", "b", "v1", "PXAT", "{ms-15000}", "GET"],
            &["EXISTS", "a", "b"],
            &["PTTL", "a"],
            &["SET", "c", "v1", "PXAT", "{ms+15000}"],
            &["PTTL", "c"],
            &["TTL", "c"],
        ],
    ),
];

/// A library with one function of each kind, for [`FIXED`].
const LIB: &str = "#!lua name=mylib\nredis.register_function('echo1', function(keys, args) return args[1] end)";
const LIB_RO: &str = "#!lua name=rolib\nredis.register_function{function_name='ro', callback=function(keys, args)\n  return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}";
const LIB_W: &str = "#!lua name=wlib\nlocal function set(keys, args)\n  return redis.call('set', keys[1], args[1])\nend\nredis.register_function('setit', set)\nredis.register_function('bad', function(keys, args)\n  return undefined_x\nend)\nredis.register_function('sel', function(keys, args)\n  redis.call('select', args[1])\n  return redis.call('get', keys[1])\nend)";

/// Fixed cases for the commands of issue 41 (sets, `MSET`/`MGET`, databases, `AUTH` without a
/// password, functions), run first like [`REGRESSIONS`]: `(what, commands)`.
const FIXED: &[(&str, &[&[&str]])] = &[
    (
        "LMOVE/RPOPLPUSH/BLMOVE/BRPOPLPUSH/LRANGE: moves, rotations, errors, MULTI, scripts",
        &[
            &["LMOVE", "a", "b", "LEFT", "RIGHT"],
            &["LMOVE", "a", "b", "up", "RIGHT"],
            &["LMOVE", "a", "b", "left", "down"],
            &["BLMOVE", "a", "b", "up", "RIGHT", "x"],
            &["BLMOVE", "a", "b", "left", "right", "x"],
            &["BLMOVE", "a", "b", "left", "right", "-1"],
            &["BRPOPLPUSH", "a", "b", "x"],
            &["BRPOPLPUSH", "a", "b", "-0.5"],
            &["LMOVE", "a", "b"],
            &["LMOVE", "a", "b", "LEFT", "RIGHT", "x"],
            &["BLMOVE", "a", "b", "LEFT", "RIGHT"],
            &["RPOPLPUSH", "a"],
            &["BRPOPLPUSH", "a", "b"],
            &["LRANGE", "a", "0"],
            &["SET", "s", "v"],
            &["LMOVE", "s", "b", "LEFT", "RIGHT"],
            &["BLMOVE", "s", "b", "LEFT", "RIGHT", "0"],
            &["BRPOPLPUSH", "s", "b", "0"],
            &["LMOVE", "a", "s", "LEFT", "RIGHT"],
            &["RPUSH", "a", "1", "2", "3"],
            &["LMOVE", "a", "s", "LEFT", "RIGHT"],
            &["BLMOVE", "a", "s", "LEFT", "RIGHT", "0"],
            &["RPOPLPUSH", "a", "a"],
            &["LRANGE", "a", "0", "-1"],
            &["LMOVE", "a", "a", "left", "left"],
            &["LMOVE", "a", "b", "RIGHT", "RIGHT"],
            &["BLMOVE", "a", "b", "LEFT", "LEFT", "0"],
            &["BRPOPLPUSH", "a", "b", "0"],
            &["EXISTS", "a"],
            &["LRANGE", "b", "0", "-1"],
            &["LRANGE", "b", "x", "1"],
            &["LRANGE", "nope", "0", "x"],
            &["LRANGE", "nope", "0", "1"],
            &["LRANGE", "s", "0", "1"],
            &["LRANGE", "b", "-100", "100"],
            &["LRANGE", "b", "-2", "-1"],
            &["LRANGE", "b", "5", "1"],
            &["LRANGE", "b", "-1", "-2"],
            &["LRANGE", "b", "0", "9223372036854775807"],
            &["LRANGE", "b", "-9223372036854775808", "0"],
            &["MULTI"],
            &["BLMOVE", "q", "b", "LEFT", "RIGHT", "0"],
            &["BRPOPLPUSH", "q", "b", "0"],
            &["BLPOP", "q", "0"],
            &["BLMOVE", "b", "q", "LEFT", "RIGHT", "0"],
            &["EXEC"],
            &["LRANGE", "q", "0", "-1"],
            &["EVAL", "return redis.call('lmove',KEYS[1],KEYS[2],'right','left')", "2", "b", "q"],
            &["EVAL", "return redis.call('rpoplpush',KEYS[1],KEYS[2])", "2", "b", "q"],
            &["EVAL", "return redis.pcall('blmove',KEYS[1],KEYS[2],'left','left',0)", "2", "b", "q"],
            &["EVAL", "return redis.pcall('brpoplpush',KEYS[1],KEYS[2],0)", "2", "b", "q"],
            &["LRANGE", "q", "0", "-1"],
            &["TYPE", "q"],
        ],
    ),
    (
        "BITFIELD/BITFIELD_RO and HyperLogLog: types, #offsets, overflow modes, errors; PF* bytes and counts",
        &[
            &["BITFIELD", "bf", "SET", "i8", "0", "-100", "GET", "u8", "0", "INCRBY", "u4", "#3", "20"],
            &["BITFIELD", "bf", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-100", "OVERFLOW", "FAIL", "INCRBY", "u2", "1", "5"],
            &["BITFIELD", "bf", "SET", "u8", "0", "-1", "OVERFLOW", "SAT", "SET", "u8", "8", "-1", "SET", "i64", "64", "-9223372036854775808"],
            &["BITFIELD", "bf", "INCRBY", "i64", "64", "-1", "GET", "u63", "1", "GET", "i1", "#200"],
            &["GET", "bf"],
            &["BITFIELD_RO", "bf", "GET", "i16", "#2", "GET", "u3", "100000"],
            &["BITFIELD_RO", "bf", "SET", "i8", "0", "1"],
            &["BITFIELD", "bf", "GET", "u64", "0"],
            &["BITFIELD", "bf", "GET", "i8", "#-1"],
            &["BITFIELD", "bf", "OVERFLOW", "nope"],
            &["BITFIELD", "bf", "SET", "i8", "0"],
            &["BITFIELD", "bf", "SET", "i8", "0", "1.5"],
            &["BITFIELD", "bf"],
            &["BITFIELD", "fail", "OVERFLOW", "FAIL", "SET", "i4", "20", "100"],
            &["GET", "fail"],
            &["PFADD", "h"],
            &["GET", "h"],
            &["PFADD", "h", "a", "b", "c", "a"],
            &["PFADD", "h", "a"],
            &["PFCOUNT", "h"],
            &["GET", "h"],
            &["PFADD", "g", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"],
            &["PFCOUNT", "h", "g", "missing"],
            &["PFMERGE", "u", "h", "g"],
            &["PFCOUNT", "u"],
            &["GET", "u"],
            &["PFDEBUG", "DECODE", "u"],
            &["PFDEBUG", "ENCODING", "u"],
            &["PFDEBUG", "TODENSE", "u"],
            &["PFDEBUG", "TODENSE", "u"],
            &["PFDEBUG", "DECODE", "u"],
            &["PFDEBUG", "NOPE", "u"],
            &["PFDEBUG", "ENCODING", "missing"],
            &["PFMERGE", "g", "u"],
            &["STRLEN", "g"],
            &["PFCOUNT", "g"],
            &["SET", "s", "not an hll"],
            &["PFADD", "s", "x"],
            &["PFCOUNT", "s"],
            &["LPUSH", "l", "x"],
            &["PFCOUNT", "l"],
            &["PFMERGE", "h", "l"],
            &["APPEND", "h", "junk"],
            &["PFCOUNT", "h"],
            &["PFADD", "h", "zz"],
        ],
    ),
    (
        "SORT and SORT_RO: options, patterns, STORE, errors, Lua; DUMP/RESTORE's checks",
        &[
            &["RPUSH", "l", "5", "3", "10", "1", "3.5", "-2", "0x10", "inf"],
            &["RPUSH", "la", "b", "a", "C", "aa", "", "10"],
            &["SADD", "s", "b", "a", "c"],
            &["ZADD", "z", "5", "a", "1", "b", "3", "c", "3", "d"],
            &["MSET", "w_5", "50", "w_3", "30", "w_10", "-1", "w_1", "x"],
            &["HSET", "h_5", "f", "2"],
            &["HSET", "h_3", "f", "1"],
            &["SORT", "l"],
            &["SORT", "l", "DESC", "LIMIT", "2", "3"],
            &["SORT", "l", "LIMIT", "-3", "-5"],
            &["SORT", "l", "LIMIT", "100", "2"],
            &["SORT", "la"],
            &["SORT", "la", "ALPHA", "DESC", "LIMIT", "1", "2"],
            &["SORT", "s", "ALPHA"],
            &["SORT", "z", "ALPHA"],
            &["SORT", "z", "BY", "nosort", "DESC"],
            &["SORT", "z", "BY", "nosort", "LIMIT", "1", "2"],
            &["SORT", "l", "BY", "nosort", "DESC"],
            &["SORT", "l", "BY", "w_*"],
            &["SORT", "l", "BY", "h_*->f", "GET", "#", "GET", "h_*->f", "GET", "w_*", "GET", "nosuch"],
            &["SORT", "l", "BY", "h_*->f", "GET", "w_*", "STORE", "dst"],
            &["LRANGE", "dst", "0", "-1"],
            &["SORT", "nosuch", "STORE", "dst"],
            &["EXISTS", "dst"],
            &["SORT", "l", "BY"],
            &["SORT", "l", "LIMIT", "0", "1.5"],
            &["SORT", "w_5"],
            &["SORT_RO", "la", "ALPHA", "GET", "#", "LIMIT", "0", "2"],
            &["SORT_RO", "l", "STORE", "x"],
            &["EVAL", "return redis.call('sort',KEYS[1],'by','_','get','#','get','_:*')", "1", "s"],
            &["COMMAND", "GETKEYS", "SORT", "l", "GET", "store", "STORE", "d"],
            &["DUMP", "nosuch"],
            &["RESTORE", "l", "0", "abc"],
            &["RESTORE", "n", "-5", "abc"],
            &["RESTORE", "n", "x", "abc"],
            &["RESTORE", "n", "0", "abc"],
            &["RESTORE", "n", "0", "abc", "FREQ", "256"],
            &["RESTORE", "n", "0", "abc", "IDLETIME", "1", "FREQ", "1"],
            &["RESTORE", "n", "0", "abc", "REPLACE", "ABSTTL", "IDLETIME", "10"],
        ],
    ),
    (
        "sets: replies, WRONGTYPE both ways, arities, emptied sets deleted, Lua",
        &[
            &["SADD", "s", "b", "a", "c"],
            &["SADD", "s", "a"],
            &["SMEMBERS", "s"],
            &["SISMEMBER", "s", "a"],
            &["SISMEMBER", "s", "z"],
            &["SCARD", "s"],
            &["SREM", "s", "a", "z"],
            &["SCARD", "s"],
            &["TYPE", "s"],
            &["GET", "s"],
            &["LPUSH", "s", "x"],
            &["HSET", "s", "f", "v"],
            &["SET", "str", "v"],
            &["SADD", "str", "a"],
            &["SREM", "str", "a"],
            &["SMEMBERS", "str"],
            &["SISMEMBER", "str", "a"],
            &["SCARD", "str"],
            &["SADD", "s"],
            &["SREM", "s"],
            &["SISMEMBER", "s"],
            &["SCARD"],
            &["SMEMBERS"],
            &["SMEMBERS", "s", "t"],
            &["SREM", "s", "b", "c"],
            &["EXISTS", "s"],
            &["SCARD", "nokey"],
            &["SMEMBERS", "nokey"],
            &["SREM", "nokey", "a"],
            &["SADD", "n", "1", "2", "3"],
            &["OBJECT", "ENCODING", "n"],
            &["PEXPIRE", "n", "100000"],
            &["TTL", "n"],
            &["SCAN", "0", "TYPE", "set"],
            &["DEL", "n"],
            &["EVAL", "return redis.call('sadd',KEYS[1],ARGV[1],ARGV[2])", "1", "l", "m", "m"],
            &["EVAL", "return redis.call('smembers',KEYS[1])", "1", "l"],
            &["EVAL_RO", "return redis.call('sadd',KEYS[1],ARGV[1])", "1", "l", "x"],
            &["EVAL_RO", "return redis.call('sismember',KEYS[1],ARGV[1])", "1", "l", "m"],
            &["MULTI"],
            &["SADD", "t", "x"],
            &["SCARD", "t"],
            &["EXEC"],
        ],
    ),
    (
        "MSET/MSETNX/MGET: TTLs cleared, WRONGTYPE keys read as nil, arities",
        &[
            &["SET", "e", "1", "EX", "100"],
            &["MSET", "a", "1", "e", "2"],
            &["TTL", "e"],
            &["MSET", "a"],
            &["MSET", "a", "1", "b"],
            &["SADD", "s", "x"],
            &["MGET", "a", "nokey", "e", "s"],
            &["MSETNX", "a", "9", "c", "3"],
            &["GET", "c"],
            &["MSETNX", "c", "3", "d", "4"],
            &["MGET", "c", "d"],
            &["MSETNX", "c"],
            &["MGET"],
            &["MSET", "s", "now-a-string"],
            &["TYPE", "s"],
        ],
    ),
    (
        "databases: SELECT, SWAPDB, FLUSHDB, FLUSHALL; scripts and MULTI in the caller's database",
        &[
            &["SET", "k", "zero"],
            &["SELECT", "1"],
            &["GET", "k"],
            &["SET", "k", "one"],
            &["DBSIZE"],
            &["KEYS", "*"],
            &["EVAL", "local x = redis.call('get','k') redis.call('select','0') return {x, redis.call('get','k')}", "0"],
            &["GET", "k"],
            &["MULTI"],
            &["SELECT", "2"],
            &["SET", "q", "1"],
            &["EXEC"],
            &["GET", "q"],
            &["DBSIZE"],
            &["SWAPDB", "0", "2"],
            &["DBSIZE"],
            &["GET", "k"],
            &["SELECT", "0"],
            &["GET", "q"],
            &["SWAPDB", "0", "0"],
            &["SWAPDB", "0", "16"],
            &["SWAPDB", "x", "1"],
            &["SWAPDB", "0", "x"],
            &["SWAPDB", "-1", "0"],
            &["SWAPDB", "0"],
            &["SELECT", "16"],
            &["SELECT", "-1"],
            &["SELECT", "15"],
            &["SET", "last", "x"],
            &["FLUSHDB"],
            &["DBSIZE"],
            &["SELECT", "1"],
            &["DBSIZE"],
            &["FLUSHALL"],
            &["DBSIZE"],
            &["CONFIG", "GET", "databases"],
            &["EVAL", "return redis.call('select','16')", "0"],
            &["EVAL", "return redis.call('swapdb','0','1')", "0"],
        ],
    ),
    (
        "AUTH and HELLO AUTH without a password set",
        &[
            &["AUTH", "x"],
            &["AUTH", "default", "x"],
            &["AUTH", "someone", "x"],
            &["AUTH", "a", "b", "c"],
            &["AUTH"],
            &["HELLO", "2", "AUTH", "someone", "x"],
            &["EVAL", "return redis.call('auth','x')", "0"],
            &["MULTI"],
            &["AUTH", "default", "x"],
            &["EXEC"],
        ],
    ),
    (
        "FUNCTION LOAD/LIST/DELETE/FLUSH and FCALL/FCALL_RO",
        &[
            &["FUNCTION", "LOAD", LIB],
            &["FUNCTION", "LOAD", LIB],
            &["FUNCTION", "LOAD", "REPLACE", LIB],
            &["FUNCTION", "LOAD", "REPLACE", "REPLACE", LIB],
            &["FUNCTION", "LOAD", "NOPE", LIB],
            &["FCALL", "echo1", "0", "hello"],
            &["FCALL", "echo1", "1", "k", "hello"],
            &["FCALL", "nosuch", "0"],
            &["FCALL", "nosuch", "x"],
            &["FCALL", "echo1", "x"],
            &["FCALL", "echo1", "2", "a"],
            &["FCALL", "echo1", "-1"],
            &["FCALL_RO", "echo1", "0"],
            &["FUNCTION", "LIST"],
            &["FUNCTION", "LIST", "WITHCODE"],
            &["FUNCTION", "LIST", "LIBRARYNAME", "my*"],
            &["FUNCTION", "LIST", "LIBRARYNAME", "my"],
            &["FUNCTION", "LIST", "LIBRARYNAME"],
            &["FUNCTION", "LIST", "WITHCODE", "WITHCODE"],
            &["FUNCTION", "LIST", "x"],
            &["FUNCTION", "LOAD", LIB_RO],
            &["SET", "k", "v"],
            &["FCALL_RO", "ro", "1", "k"],
            &["FCALL", "ro", "1", "k"],
            &["FUNCTION", "LIST", "LIBRARYNAME", "rolib"],
            &["FUNCTION", "LOAD", LIB_W],
            &["FCALL", "setit", "1", "k", "new"],
            &["GET", "k"],
            &["FCALL_RO", "setit", "1", "k", "v"],
            &["FCALL", "bad", "0"],
            &["SELECT", "3"],
            &["SET", "k", "three"],
            &["SELECT", "0"],
            &["FCALL", "sel", "1", "k", "3"],
            &["GET", "k"],
            &["MULTI"],
            &["FCALL", "echo1", "0", "queued"],
            &["EXEC"],
            &["EVAL", "return redis.call('fcall','echo1',0)", "0"],
            &["FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('echo1', function() end)"],
            &["FUNCTION", "DELETE", "nosuch"],
            &["FUNCTION", "DELETE"],
            &["FUNCTION", "DELETE", "mylib"],
            &["FCALL", "echo1", "0"],
            &["FUNCTION", "FLUSH", "x"],
            &["FUNCTION", "FLUSH", "ASYNC", "x"],
            &["FUNCTION", "FLUSH", "SYNC"],
            &["FUNCTION", "LIST"],
            &["FUNCTION"],
            &["FUNCTION", "NOSUCH"],
            &["FUNCTION", "LOAD"],
        ],
    ),
    (
        "FUNCTION LOAD errors: shebang, names, registration, the load-time sandbox",
        &[
            &["FUNCTION", "LOAD", "return 1"],
            &["FUNCTION", "LOAD", "#!lua name=q"],
            &["FUNCTION", "LOAD", "#!lua\nreturn 1"],
            &["FUNCTION", "LOAD", "#!lua name=x\nreturn 1"],
            &["FUNCTION", "LOAD", "#!lua name=x\nfoo("],
            &["FUNCTION", "LOAD", "#!lua name=x\nlocal a = undefined_global"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f')"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', 1)"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() end, 3)"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() end) redis.register_function('f', function() end)"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f-!', function() end)"],
            &["FUNCTION", "LOAD", "#!js name=x\n"],
            &["FUNCTION", "LOAD", "#!lua name=x foo=bar\n"],
            &["FUNCTION", "LOAD", "#!lua name=w name=v\nredis.register_function('h', function() end)"],
            &["FUNCTION", "LOAD", "#!lua name=\nredis.register_function('h', function() end)"],
            &["FUNCTION", "LOAD", "#!lua name=bad-name!\nredis.register_function('f', function() end)"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={'bad'}}"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, foo=1}"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{callback=function() end}"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='f'}"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.call('set','a','1')"],
            &["FUNCTION", "LOAD", "#!lua name=x\nerror('boom')"],
            &["FUNCTION", "LOAD", "#!lua name=x\nx = 1"],
            &["FUNCTION", "LOAD", "#!lua name=x\nlocal s = string.len('x')"],
            &["FUNCTION", "LOAD", "#!lua name=x\nredis.log(redis.LOG_WARNING, 'loading') redis.register_function('f', function() return redis.REDIS_VERSION ~= nil end)"],
            &["FCALL", "f", "0"],
            &["FUNCTION", "LOAD", "#!LUA  NAME=y  \nredis.register_function('g', function(keys, args) return {keys[1], args[1], #keys, #args} end)"],
            &["FCALL", "g", "2", "a", "b", "c"],
            &["FUNCTION", "LOAD", "#!lua name=z\nredis.register_function('e', function() error('boom') end) redis.register_function('w', function() x = 1 end) redis.register_function('k', function() return KEYS end)"],
            &["FCALL", "e", "0"],
            &["FCALL", "w", "0"],
            &["FCALL", "k", "0"],
        ],
    ),
    (
        "Sharded pub/sub and CLIENT KILL/PAUSE/UNPAUSE: what one connection sees (issue 49)",
        &[
            &["SPUBLISH", "ch", "m"],
            &["SPUBLISH", "ch"],
            &["PUBSUB", "SHARDCHANNELS"],
            &["PUBSUB", "SHARDCHANNELS", "c*"],
            &["PUBSUB", "SHARDCHANNELS", "c*", "x"],
            &["PUBSUB", "CHANNELS", "c*", "x"],
            &["PUBSUB", "SHARDNUMSUB"],
            &["PUBSUB", "SHARDNUMSUB", "a", "b"],
            &["PUBSUB", "HELP"],
            &["PUBSUB", "HELP", "x"],
            &["COMMAND", "GETKEYS", "SSUBSCRIBE", "a", "b"],
            &["COMMAND", "GETKEYS", "SPUBLISH", "a", "m"],
            &["EVAL", "return redis.call('spublish', 'ch', 'x')", "0"],
            &["EVAL", "return redis.call('ssubscribe', 'ch')", "0"],
            &["CLIENT", "KILL", "ID", "999999"],
            &["CLIENT", "KILL", "ID", "abc"],
            &["CLIENT", "KILL", "ID", "0"],
            &["CLIENT", "KILL", "TYPE", "foo"],
            &["CLIENT", "KILL", "TYPE", "pubsub"],
            &["CLIENT", "KILL", "TYPE", "master"],
            &["CLIENT", "KILL", "TYPE", "replica"],
            &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"],
            &["CLIENT", "KILL", "SKIPME", "maybe"],
            &["CLIENT", "KILL", "ID", "1", "ADDR"],
            &["CLIENT", "KILL", "USER", "nobody"],
            &["CLIENT", "KILL", "1.2.3.4:5"],
            &["CLIENT", "KILL", "ADDR", "1.2.3.4:5"],
            &["CLIENT", "KILL", "LADDR", "1.2.3.4:5"],
            &["CLIENT", "KILL"],
            &["CLIENT", "PAUSE"],
            &["CLIENT", "PAUSE", "abc"],
            &["CLIENT", "PAUSE", "-1"],
            &["CLIENT", "PAUSE", "10", "foo"],
            &["CLIENT", "PAUSE", "10", "WRITE", "x"],
            &["CLIENT", "PAUSE", "0", "WRITE"],
            &["CLIENT", "UNPAUSE"],
            &["CLIENT", "UNPAUSE", "x"],
            &["MULTI"],
            &["CLIENT", "KILL", "ID", "999999"],
            &["CLIENT", "KILL", "1.2.3.4:5"],
            &["CLIENT", "PAUSE", "0"],
            &["CLIENT", "UNPAUSE"],
            &["EXEC"],
        ],
    ),
];

/// The cases that run before the generated sequences: [`REGRESSIONS`], then [`FIXED`].
fn fixed_cases() -> impl Iterator<Item = &'static (&'static str, &'static [&'static [&'static str]])> {
    REGRESSIONS.iter().chain(FIXED)
}

fn regression_sequences() -> Vec<Sequence> {
    fixed_cases()
        .map(|(_, cmds)| {
            cmds.iter()
                .map(|cmd| cmd.iter().map(|a| Arg::parse(a)).collect())
                .collect()
        })
        .collect()
}

fn regression_literal(what: &str, seq: &Sequence) -> String {
    let mut out = format!("    (\n        {what:?},\n        &[\n");
    for cmd in seq {
        let args: Vec<String> = cmd.iter().map(Arg::literal).collect();
        out.push_str(&format!("            &[{}],\n", args.join(", ")));
    }
    out.push_str("        ],\n    ),\n");
    out
}

// ---------------------------------------------------------------------------------------------
// Running a sequence (the same redis-rs code on both sides)
// ---------------------------------------------------------------------------------------------

fn pipeline(seq: &Sequence, base_s: i64) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    for cmd in seq {
        let mut c = redis::Cmd::new();
        for arg in cmd {
            c.arg(arg.resolve(base_s));
        }
        pipe.add_command(c);
    }
    pipe.ignore_errors();
    pipe
}

/// Sends one pipeline; every reply, errors included, comes back as a value.
async fn run_pipeline(mut conn: MultiplexedConnection, pipe: redis::Pipeline) -> redis::RedisResult<Vec<Value>> {
    if pipe.is_empty() {
        return Ok(Vec::new());
    }
    pipe.query_async::<Vec<Value>>(&mut conn).await
}

/// Leaves any transaction, watch and database of the previous sequence, then empties the
/// server (keys, scripts, functions).
fn reset_pipeline() -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.cmd("DISCARD")
        .cmd("UNWATCH")
        .cmd("SELECT")
        .arg("0")
        .cmd("FLUSHALL")
        .cmd("SCRIPT")
        .arg("FLUSH")
        .cmd("FUNCTION")
        .arg("FLUSH")
        .ignore_errors();
    pipe
}

/// Whether the replies to [`reset_pipeline`] say the server is empty.
fn reset_ok<E>(replies: &Result<Vec<Value>, E>) -> bool {
    replies
        .as_ref()
        .is_ok_and(|r| r.len() == 6 && r[1..].iter().all(|v| *v == Value::Okay))
}

/// The first whole second at or after `ms`.
fn base_second(ms: i64) -> i64 {
    (ms + 999).div_euclid(1000)
}

/// Runs the sequences against one simulated master per chunk of [`SEQUENCES_PER_WORLD`].
fn run_simulated(seqs: &[Sequence], seed: u64) -> Vec<Vec<Value>> {
    let mut all = Vec::with_capacity(seqs.len());
    for (chunk_index, chunk) in seqs.chunks(SEQUENCES_PER_WORLD).enumerate() {
        let mut world = World::new(WorldConfig {
            seed: seed ^ chunk_index as u64,
            duration_ms: 24 * 3_600_000,
            min_latency_ms: 1,
            max_latency_ms: 1,
            ..WorldConfig::default()
        })
        .expect("valid world config");
        world.add_master("redis-1", ClockSpec::default()).expect("add master");
        let out: Rc<RefCell<Vec<Vec<Value>>>> = Rc::default();
        let results = out.clone();
        let chunk = chunk.to_vec();
        world
            .add_client("conformance", ClockSpec::default(), move |node: Node| async move {
                let link = RedisLink::new(
                    &node,
                    "redis-1",
                    REDIS_PORT,
                    LinkTimeouts {
                        connect_timeout_ms: 10_000,
                        request_timeout_ms: 60_000,
                    },
                );
                for seq in &chunk {
                    let reset = link.run(|conn| run_pipeline(conn, reset_pipeline())).await;
                    assert!(reset_ok(&reset), "simulated reset: {reset:?}");
                    // The master's wall clock is the client's: same epoch, no offset, no drift.
                    let base_s = base_second(node.wall_ms());
                    let pipe = pipeline(seq, base_s);
                    let replies = link.run(|conn| run_pipeline(conn, pipe)).await;
                    results.borrow_mut().push(replies.expect("simulated pipeline"));
                }
            })
            .expect("add client");
        let end = world.run(&FaultPlan::default()).expect("world runs");
        assert!(end.clients_finished, "the simulated run did not finish");
        all.append(&mut out.borrow_mut());
    }
    all
}

/// A `redis-server` process on a free loopback port, killed (and its directory removed) on drop.
struct RedisServer {
    child: Child,
    dir: PathBuf,
    port: u16,
    version: String,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl RedisServer {
    /// Starts the server; `None` if the binary is not installed.
    fn start() -> Option<RedisServer> {
        let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string());
        let version = match Command::new(&bin).arg("--version").output() {
            Ok(out) => String::from_utf8_lossy(&out.stdout).trim().to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => panic!("cannot run {bin}: {e}"),
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let dir = std::env::temp_dir().join(format!("lockstep-conformance-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        let child = Command::new(&bin)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&dir)
            .args(["--logfile", "redis.log"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        let server = RedisServer {
            child,
            dir,
            port,
            version,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server.answers_ping() {
            assert!(
                Instant::now() < deadline,
                "redis-server on port {port} did not answer PING; see {}",
                server.dir.join("redis.log").display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }

    fn answers_ping(&self) -> bool {
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }
}

/// A redis-rs connection to the real server, with its own tokio runtime (real time, real TCP).
struct RealClient {
    runtime: tokio::runtime::Runtime,
    conn: MultiplexedConnection,
}

impl RealClient {
    fn connect(port: u16) -> RealClient {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let conn = runtime
            .block_on(async {
                redis::Client::open(format!("redis://127.0.0.1:{port}"))?
                    .get_multiplexed_async_connection()
                    .await
            })
            .expect("connect to redis-server");
        RealClient { runtime, conn }
    }

    fn run(&mut self, seqs: &[Sequence]) -> Vec<Vec<Value>> {
        let conn = self.conn.clone();
        self.runtime.block_on(async move {
            let mut all = Vec::with_capacity(seqs.len());
            for seq in seqs {
                let reset = run_pipeline(conn.clone(), reset_pipeline()).await;
                assert!(reset_ok(&reset), "real reset: {reset:?}");
                let time: Vec<i64> = redis::cmd("TIME").query_async(&mut conn.clone()).await.expect("TIME");
                let base_s = time[0] + i64::from(time[1] > 0);
                let replies = run_pipeline(conn.clone(), pipeline(seq, base_s)).await;
                all.push(replies.expect("real pipeline"));
            }
            all
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Comparing
// ---------------------------------------------------------------------------------------------

/// Whether two replies to `cmd` agree, after the documented normalisation.
fn agree(cmd: &[Arg], sim: &Value, real: &Value) -> bool {
    let tolerance = match cmd.first() {
        Some(Arg::Lit(n)) if n.eq_ignore_ascii_case("pttl") => PTTL_TOLERANCE_MS,
        Some(Arg::Lit(n)) if n.eq_ignore_ascii_case("ttl") => TTL_TOLERANCE_S,
        _ => 0,
    };
    let is = |name: &str| matches!(cmd.first(), Some(Arg::Lit(n)) if n.eq_ignore_ascii_case(name));
    // Key order is the servers' hash order: keys are compared as sets.
    let sorted = |items: &[Value]| {
        let mut items: Vec<String> = items.iter().map(render).collect();
        items.sort();
        items
    };
    match (sim, real) {
        (Value::Int(a), Value::Int(b)) if tolerance > 0 && *a >= 0 && *b >= 0 => a.abs_diff(*b) <= tolerance as u64,
        (Value::Array(a), Value::Array(b)) if is("keys") || is("smembers") => sorted(a) == sorted(b),
        (Value::Array(a), Value::Array(b)) if is("scan") && a.len() == 2 && b.len() == 2 => match (&a[1], &b[1]) {
            (Value::Array(x), Value::Array(y)) => a[0] == b[0] && sorted(x) == sorted(y),
            _ => sim == real,
        },
        // An unshared object's reference count: Redis also counts references held by queued
        // commands' arguments.
        (Value::Int(1), Value::Int(n)) if is("object") && *n >= 1 && *n < i64::from(i32::MAX) => true,
        // Redis 7.2 (the engine's model) encodes small lists as listpacks, 7.0 as quicklists.
        (Value::BulkString(a), Value::BulkString(b)) if is("object") && a == b"listpack" && b == b"quicklist" => true,
        // Redis 7.2 encodes small sets of strings as listpacks, 7.0 as hash tables.
        (Value::BulkString(a), Value::BulkString(b)) if is("object") && a == b"listpack" && b == b"hashtable" => true,
        // Different clocks: `[seconds, microseconds]`, both numbers.
        (Value::Array(a), Value::Array(b)) if is("time") => {
            let numeric = |v: &[Value]| {
                v.len() == 2
                    && v.iter()
                        .all(|x| matches!(x, Value::BulkString(d) if !d.is_empty() && d.iter().all(u8::is_ascii_digit)))
            };
            numeric(a) && numeric(b)
        }
        _ => sim == real,
    }
}

fn render(v: &Value) -> String {
    match v {
        Value::Nil => "(nil)".to_string(),
        Value::Int(i) => format!("(integer) {i}"),
        Value::BulkString(b) => format!("{:?}", String::from_utf8_lossy(b)),
        Value::SimpleString(s) => format!("+{s}"),
        Value::Okay => "+OK".to_string(),
        Value::ServerError(e) => format!("(error) {} {}", e.code(), e.details().unwrap_or("")),
        Value::Array(items) => format!("[{}]", items.iter().map(render).collect::<Vec<_>>().join(", ")),
        other => format!("{other:?}"),
    }
}

/// The first disagreement of one sequence: `(command index, simulated, real)`. The replies in
/// an `EXEC` array are compared as replies to the commands queued since `MULTI`.
fn first_mismatch(seq: &Sequence, sim: &[Value], real: &[Value]) -> Option<(usize, String, String)> {
    let missing = Value::SimpleString("<no reply>".to_string());
    let is = |cmd: &[Arg], name: &str| matches!(cmd.first(), Some(Arg::Lit(n)) if n.eq_ignore_ascii_case(name));
    let mut queued: Option<Vec<&[Arg]>> = None;
    (0..seq.len().max(sim.len()).max(real.len())).find_map(|i| {
        let (s, r) = (sim.get(i).unwrap_or(&missing), real.get(i).unwrap_or(&missing));
        let cmd = seq.get(i).map_or(&[][..], |c| &c[..]);
        let agreed = match (&queued, s, r) {
            (Some(cmds), Value::Array(a), Value::Array(b)) if is(cmd, "exec") => {
                a.len() == b.len() && (0..a.len()).all(|j| agree(cmds.get(j).copied().unwrap_or(&[]), &a[j], &b[j]))
            }
            _ => agree(cmd, s, r),
        };
        if is(cmd, "multi") && *s == Value::Okay {
            queued = Some(Vec::new());
        } else if is(cmd, "exec") || is(cmd, "discard") {
            queued = None;
        } else if let (Some(cmds), Value::SimpleString(q)) = (queued.as_mut(), s) {
            if q == "QUEUED" {
                cmds.push(cmd);
            }
        }
        (!agreed).then(|| (i, render(s), render(r)))
    })
}

/// What the sequences exercised: replies per command and kind, and every distinct error text
/// (with the script SHA cut off), in a deterministic order.
fn coverage(seqs: &[Sequence], replies: &[Vec<Value>]) -> String {
    use std::collections::BTreeMap;
    let mut kinds: BTreeMap<(String, &str), usize> = BTreeMap::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    for (seq, got) in seqs.iter().zip(replies) {
        for (cmd, v) in seq.iter().zip(got) {
            let name = cmd
                .first()
                .map_or_else(String::new, |a| a.to_string().to_ascii_uppercase());
            let kind = match v {
                Value::Nil => "nil",
                Value::Int(_) => "integer",
                Value::BulkString(_) => "bulk",
                Value::Okay | Value::SimpleString(_) => "status",
                Value::Array(_) => "array",
                Value::ServerError(e) => {
                    let text = format!("{} {}", e.code(), e.details().unwrap_or(""));
                    let end = [" script: ", ", with args"]
                        .iter()
                        .filter_map(|cut| text.find(cut))
                        .min()
                        .unwrap_or(text.len());
                    let text = text[..end].to_string();
                    *errors.entry(text).or_default() += 1;
                    "error"
                }
                _ => "other",
            };
            *kinds.entry((name, kind)).or_default() += 1;
        }
    }
    let mut out = String::from("replies by command and kind:\n");
    for ((name, kind), n) in &kinds {
        out.push_str(&format!("  {n:>7}  {name:.40} -> {kind}\n"));
    }
    out.push_str(&format!("{} distinct error texts:\n", errors.len()));
    for (text, n) in &errors {
        out.push_str(&format!("  {n:>7}  {text:.160}\n"));
    }
    out
}

fn env_u64(name: &str) -> Option<u64> {
    let raw = std::env::var(name).ok()?;
    let parsed = match raw.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => raw.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={raw} is not a number")))
}

/// Shrinks failing sequence `index` with proptest's value tree, re-running both sides, then
/// drops the commands the failure does not need.
fn shrink(seed: u64, index: usize, real: &mut RealClient) -> Sequence {
    let mut tree = sequence()
        .new_tree(&mut runner_for(seed, index))
        .expect("sequence strategy");
    let mut fails = |seq: &Sequence| {
        let sim = run_simulated(std::slice::from_ref(seq), seed);
        let got = real.run(std::slice::from_ref(seq));
        first_mismatch(seq, &sim[0], &got[0]).is_some()
    };
    let mut smallest = tree.current();
    let mut steps = 0;
    if !tree.simplify() {
        return smallest;
    }
    while steps < SHRINK_BUDGET {
        steps += 1;
        let candidate = tree.current();
        if fails(&candidate) {
            smallest = candidate;
            if !tree.simplify() {
                break;
            }
        } else if !tree.complicate() {
            break;
        }
    }
    // The strategy keeps at least 10 commands; drop any command the failure does not need.
    for i in (0..smallest.len()).rev() {
        let mut candidate = smallest.clone();
        candidate.remove(i);
        if fails(&candidate) {
            smallest = candidate;
        }
    }
    smallest
}

#[test]
#[cfg_attr(
    lockstep_no_redis_server,
    ignore = "redis-server is not installed (apt-get install redis-server, or REDIS_SERVER=PATH)"
)]
fn simulated_master_agrees_with_redis_server() {
    let Some(server) = RedisServer::start() else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "redis-server is not installed, and CI=true: install it (apt-get install redis-server)"
        );
        eprintln!("SKIPPED: redis-server is not installed (apt-get install redis-server); conformance not checked");
        return;
    };
    let seed = env_u64("LOCKSTEP_CONFORMANCE_SEED").unwrap_or(DEFAULT_SEED);
    let cases = env_u64("LOCKSTEP_CONFORMANCE_CASES").map_or(DEFAULT_CASES, |n| n as usize);
    let only = env_u64("LOCKSTEP_CONFORMANCE_ONLY").map(|i| i as usize);
    eprintln!(
        "conformance against {} on port {}, seed={seed:#x}",
        server.version, server.port
    );

    let started = Instant::now();
    let regressions = regression_sequences();
    let indices: Vec<usize> = match only {
        Some(i) => vec![i],
        None => (0..cases).collect(),
    };
    let generated: Vec<Sequence> = indices.iter().map(|&i| generate(seed, i)).collect();
    let mut seqs = regressions.clone();
    seqs.extend(generated.iter().cloned());
    let commands: usize = generated.iter().map(Vec::len).sum();
    let generated_in = started.elapsed();

    // The real server in its own thread, the simulation in this one. The scope joins the thread
    // even if the simulation panics, so `server` is only dropped (killed) after its last use.
    let port = server.port;
    let (sim_replies, (mut real_client, real_replies)) = std::thread::scope(|scope| {
        let real = scope.spawn(|| {
            let mut client = RealClient::connect(port);
            let replies = client.run(&seqs);
            (client, replies)
        });
        let sim = run_simulated(&seqs, seed);
        (sim, real.join().expect("real-server thread"))
    });
    let ran_in = started.elapsed();

    let mut failures = Vec::new();
    for (n, seq) in seqs.iter().enumerate() {
        if let Some(found) = first_mismatch(seq, &sim_replies[n], &real_replies[n]) {
            failures.push((n, found));
        }
    }
    eprintln!(
        "{} regression sequences, {} generated sequences, {commands} commands (average {:.1}); \
         generated in {generated_in:?}, ran in {ran_in:?}; {} disagree",
        regressions.len(),
        generated.len(),
        commands as f64 / generated.len().max(1) as f64,
        failures.len()
    );
    if std::env::var_os("LOCKSTEP_CONFORMANCE_COVERAGE").is_some() {
        eprintln!("{}", coverage(&seqs, &real_replies));
    }
    if failures.is_empty() {
        drop(server);
        return;
    }

    let mut report = String::new();
    for (shown, (n, (i, sim, real))) in failures.iter().enumerate() {
        let seq = &seqs[*n];
        let label = if *n < regressions.len() {
            format!("fixed case #{n} ({})", fixed_cases().nth(*n).map_or("", |c| c.0))
        } else {
            let index = indices[*n - regressions.len()];
            format!(
                "sequence #{index} (reproduce: LOCKSTEP_CONFORMANCE_SEED={seed:#x} LOCKSTEP_CONFORMANCE_ONLY={index} \
                 cargo test -p lockstep-sim --test conformance)"
            )
        };
        report.push_str(&format!(
            "\n{label}\n  command #{i}: {}\n  simulated: {sim}\n  real:      {real}\n",
            seq.get(*i).map_or_else(String::new, |c| show(c))
        ));
        if shown < 3 {
            report.push_str("  sequence:\n");
            for (j, cmd) in seq.iter().enumerate() {
                report.push_str(&format!("    {j:>2}: {}\n", show(cmd)));
            }
            if *n >= regressions.len() {
                let shrunk = shrink(seed, indices[*n - regressions.len()], &mut real_client);
                report.push_str("  shrunk, as a REGRESSIONS entry:\n");
                report.push_str(&regression_literal("TODO: what it caught", &shrunk));
            }
        }
    }
    drop(server);
    panic!(
        "{} of {} sequences disagree with the real redis-server (seed={seed:#x}):{report}",
        failures.len(),
        seqs.len()
    );
}

// ---------------------------------------------------------------------------------------------
// Several connections: pub/sub, blocking pops, WATCH across clients
// ---------------------------------------------------------------------------------------------

/// One step of a multi-connection case: send a command on a connection, or let time pass.
#[derive(Clone, Copy)]
enum Step {
    /// Send the command (space-separated words) on connection `.0`.
    Send(usize, &'static str),
    /// Let this many ms pass (real time on the real server, simulated time in the world).
    Sleep(u64),
    /// Close connection `.0` and open a new one in its place (a connection opened while
    /// `requirepass` is set must authenticate).
    Reconnect(usize),
}

/// How long after each step the bytes every connection received are collected.
const SETTLE_MS: u64 = 100;
/// Connections per case.
const CONNS: usize = 3;

/// Cases that need several connections. After each step, the raw RESP bytes each connection
/// received are compared exactly.
const MULTI_CONN: &[(&str, &[Step])] = &[
    (
        "PUBLISH reaches subscribers; subscribed mode; UNSUBSCRIBE",
        &[
            Step::Send(0, "SUBSCRIBE ch"),
            Step::Send(2, "SUBSCRIBE ch other"),
            Step::Send(1, "PUBLISH ch hello"),
            Step::Send(1, "PUBLISH other x"),
            Step::Send(1, "PUBLISH nobody x"),
            Step::Send(0, "PING"),
            Step::Send(0, "PING hi"),
            Step::Send(0, "GET a"),
            Step::Send(0, "UNSUBSCRIBE ch"),
            Step::Send(0, "UNSUBSCRIBE"),
            Step::Send(1, "PUBLISH ch again"),
            Step::Send(0, "GET a"),
            Step::Send(1, "EVAL return(redis.call('publish',KEYS[1],ARGV[1])) 1 other from-lua"),
            Step::Send(2, "UNSUBSCRIBE other"),
            Step::Send(1, "PUBLISH other y"),
            Step::Send(2, "SUBSCRIBE"),
            Step::Send(1, "PUBLISH a"),
        ],
    ),
    (
        "BLPOP is woken by a push from another connection; oldest blocked client first",
        &[
            Step::Send(0, "BLPOP q 0"),
            Step::Send(1, "RPUSH q a b"),
            Step::Send(1, "LLEN q"),
            Step::Send(0, "BLPOP none q 0"),
            Step::Send(0, "BLPOP f 0"),
            Step::Send(2, "BLPOP g f 0"),
            Step::Send(1, "LPUSH f x y z"),
            Step::Send(1, "LLEN f"),
            Step::Send(1, "LPOP f 5"),
            Step::Send(0, "BLPOP s 0"),
            Step::Send(1, "MULTI"),
            Step::Send(1, "RPUSH s 1"),
            Step::Send(1, "RPUSH s 2"),
            Step::Send(1, "EXEC"),
            Step::Send(1, "LPOP s"),
            Step::Send(1, "SET str v"),
            Step::Send(0, "BLPOP str 0"),
            Step::Send(0, "BLPOP q -1"),
            Step::Send(0, "BLPOP q x"),
        ],
    ),
    (
        "BLPOP times out on the server's clock",
        &[
            Step::Send(0, "BLPOP q 0.5"),
            // Steps settle 100 ms each: LLEN's step ends near 350 ms, well before the 0.5 s
            // timeout, which then falls inside the 700 ms sleep (real Redis may fire it up to
            // 100 ms late; a step ending at the deadline made the case timing-dependent).
            Step::Sleep(50),
            Step::Send(1, "LLEN q"),
            Step::Sleep(700),
            Step::Send(1, "RPUSH q late"),
            Step::Send(0, "LPOP q"),
        ],
    ),
    (
        "BLMOVE/BRPOPLPUSH are woken by a push to the source; the move serves the destination's waiters",
        &[
            Step::Send(0, "BLPOP d 0"),
            Step::Send(1, "BLMOVE k d RIGHT LEFT 0"),
            Step::Send(2, "RPUSH k x y"),
            Step::Send(2, "LRANGE k 0 -1"),
            Step::Send(2, "LLEN d"),
            Step::Send(0, "BRPOPLPUSH e d 0"),
            Step::Send(2, "RPUSH d z"),
            Step::Send(2, "LPUSH e 1 2"),
            Step::Send(2, "LRANGE d 0 -1"),
            Step::Send(2, "LRANGE e 0 -1"),
            Step::Send(2, "SET str v"),
            Step::Send(1, "BLMOVE f str LEFT LEFT 0"),
            Step::Send(2, "RPUSH f w"),
            Step::Send(2, "LRANGE f 0 -1"),
            Step::Send(1, "BLMOVE g g LEFT RIGHT 0"),
            Step::Send(2, "RPUSH g 1 2 3"),
            Step::Send(2, "LRANGE g 0 -1"),
            Step::Send(0, "BLMOVE str d LEFT LEFT 0"),
            Step::Send(0, "BLMOVE q d LEFT x 0"),
            Step::Send(0, "BRPOPLPUSH q d -1"),
        ],
    ),
    (
        "BLMOVE and BRPOPLPUSH time out on the server's clock",
        &[
            Step::Send(0, "BLMOVE q d LEFT RIGHT 0.5"),
            // As BLPOP's timeout case: the deadline falls inside the sleep.
            Step::Sleep(50),
            Step::Send(1, "LLEN q"),
            Step::Sleep(700),
            Step::Send(1, "RPUSH q late"),
            Step::Send(0, "LRANGE d 0 -1"),
            Step::Send(0, "BRPOPLPUSH q2 d 0.5"),
            Step::Sleep(50),
            Step::Send(1, "LLEN q2"),
            Step::Sleep(700),
            Step::Send(1, "EXISTS d"),
        ],
    ),
    (
        "WATCH sees writes by other connections, and expiry",
        &[
            Step::Send(0, "WATCH k"),
            Step::Send(1, "SET k 1"),
            Step::Send(0, "MULTI"),
            Step::Send(0, "SET k 2"),
            Step::Send(0, "EXEC"),
            Step::Send(0, "GET k"),
            Step::Send(0, "WATCH k"),
            Step::Send(1, "GET k"),
            Step::Send(1, "SET other 1"),
            Step::Send(0, "MULTI"),
            Step::Send(0, "INCR k"),
            Step::Send(0, "EXEC"),
            Step::Send(0, "SET t v PX 300"),
            Step::Send(0, "WATCH t"),
            Step::Sleep(600),
            Step::Send(0, "MULTI"),
            Step::Send(0, "SET u 1"),
            Step::Send(0, "EXEC"),
            Step::Send(0, "GET u"),
            Step::Send(0, "WATCH h"),
            Step::Send(1, "HSET h f v"),
            Step::Send(0, "MULTI"),
            Step::Send(0, "HGET h f"),
            Step::Send(0, "EXEC"),
            Step::Send(0, "WATCH h"),
            Step::Send(1, "HSET h f v"),
            Step::Send(0, "UNWATCH"),
            Step::Send(0, "MULTI"),
            Step::Send(0, "HGET h f"),
            Step::Send(0, "EXEC"),
            Step::Send(1, "WATCH k"),
            Step::Send(1, "MULTI"),
            Step::Send(1, "DISCARD"),
            Step::Send(0, "SET k 9"),
            Step::Send(1, "MULTI"),
            Step::Send(1, "GET k"),
            Step::Send(1, "EXEC"),
        ],
    ),
    (
        "databases are per connection; SWAPDB and FLUSHALL reach other connections and WATCH",
        &[
            Step::Send(0, "SELECT 1"),
            Step::Send(0, "SET k one"),
            Step::Send(1, "GET k"),
            Step::Send(1, "SET k zero"),
            Step::Send(2, "SELECT 1"),
            Step::Send(2, "WATCH k"),
            Step::Send(1, "SWAPDB 0 1"),
            Step::Send(2, "MULTI"),
            Step::Send(2, "GET k"),
            Step::Send(2, "EXEC"),
            Step::Send(0, "GET k"),
            Step::Send(1, "GET k"),
            Step::Send(1, "EVAL redis.call('select',1)return(redis.call('dbsize')) 0"),
            Step::Send(1, "SET other 1"),
            Step::Send(0, "FLUSHDB"),
            Step::Send(0, "DBSIZE"),
            Step::Send(1, "DBSIZE"),
            Step::Send(2, "SELECT 3"),
            Step::Send(2, "SADD s a b"),
            Step::Send(2, "WATCH s"),
            Step::Send(1, "FLUSHALL"),
            Step::Send(2, "MULTI"),
            Step::Send(2, "SCARD s"),
            Step::Send(2, "EXEC"),
            Step::Send(2, "DBSIZE"),
        ],
    ),
    (
        "requirepass: NOAUTH until AUTH, WRONGPASS, connections already in stay in",
        &[
            Step::Send(0, "PING"),
            Step::Send(1, "PING"),
            Step::Send(2, "PING"),
            Step::Send(0, "AUTH x"),
            Step::Send(0, "AUTH default x"),
            Step::Send(0, "CONFIG SET requirepass pw"),
            Step::Send(1, "GET k"),
            Step::Reconnect(2),
            Step::Send(2, "GET k"),
            Step::Send(2, "GET"),
            Step::Send(2, "NOSUCH"),
            Step::Send(2, "MULTI"),
            Step::Send(2, "EXEC"),
            Step::Send(2, "SUBSCRIBE ch"),
            Step::Send(2, "EVAL return(1) 0"),
            Step::Send(2, "HELLO 2"),
            Step::Send(2, "HELLO 2 AUTH default wrong"),
            Step::Send(2, "AUTH wrong"),
            Step::Send(2, "AUTH other pw"),
            Step::Send(2, "AUTH default pw extra"),
            Step::Send(2, "AUTH pw"),
            Step::Send(2, "GET k"),
            Step::Reconnect(2),
            Step::Send(2, "AUTH default pw"),
            Step::Send(2, "SET k v"),
            Step::Send(0, "CONFIG SET requirepass "),
            Step::Reconnect(2),
            Step::Send(2, "GET k"),
            Step::Send(2, "AUTH pw"),
        ],
    ),
    (
        "Sharded pub/sub: its own namespace, smessage, counts of shard subscriptions (issue 49)",
        &[
            Step::Send(0, "SUBSCRIBE ch"),
            Step::Send(0, "SSUBSCRIBE ch sh"),
            Step::Send(0, "SSUBSCRIBE ch"),
            Step::Send(2, "SSUBSCRIBE sh"),
            Step::Send(1, "SPUBLISH ch hello"),
            Step::Send(1, "PUBLISH ch plain"),
            Step::Send(1, "SPUBLISH sh both"),
            // One match: Redis lists channels in its dict's order, lockstep in byte order.
            Step::Send(1, "PUBSUB SHARDCHANNELS s*"),
            Step::Send(1, "PUBSUB SHARDNUMSUB ch sh none"),
            Step::Send(1, "PUBSUB NUMSUB ch sh"),
            Step::Send(0, "GET a"),
            Step::Send(0, "PING"),
            Step::Send(0, "UNSUBSCRIBE"),
            Step::Send(0, "GET a"),
            Step::Send(0, "SUNSUBSCRIBE sh none"),
            Step::Send(0, "SUNSUBSCRIBE"),
            Step::Send(0, "SUNSUBSCRIBE"),
            Step::Send(0, "GET a"),
            Step::Send(1, "EVAL return(redis.call('spublish',KEYS[1],ARGV[1])) 1 sh from-lua"),
            Step::Send(1, "MULTI"),
            Step::Send(1, "SSUBSCRIBE x"),
            Step::Send(1, "EXEC"),
            Step::Send(2, "HELLO 3"),
            Step::Send(1, "SPUBLISH sh resp3"),
            Step::Send(2, "SUNSUBSCRIBE"),
        ],
    ),
    (
        "CLIENT KILL TYPE closes connections; CLIENT PAUSE holds commands in order (issue 49)",
        &[
            Step::Send(0, "SUBSCRIBE ch"),
            Step::Send(1, "CLIENT KILL TYPE pubsub"),
            Step::Send(1, "PUBLISH ch x"),
            Step::Reconnect(0),
            // (Counts of `TYPE normal` differ: the real server has the harness's connections.)
            Step::Send(2, "PSUBSCRIBE c*"),
            Step::Send(1, "CLIENT KILL TYPE pubsub SKIPME no"),
            Step::Reconnect(2),
            // Pauses long enough for the steps inside them on a loaded machine.
            Step::Send(1, "CLIENT PAUSE 1500 WRITE"),
            Step::Send(0, "GET k"),
            Step::Send(0, "SET k v"),
            Step::Send(0, "GET k"),
            Step::Send(2, "PUBLISH ch y"),
            Step::Sleep(1500),
            Step::Send(1, "GET k"),
            Step::Send(1, "CLIENT PAUSE 5000 WRITE"),
            Step::Send(0, "INCR n"),
            Step::Send(1, "CLIENT UNPAUSE"),
            // ALL holds every command, `CLIENT UNPAUSE` too (Redis 7.0).
            Step::Send(1, "CLIENT PAUSE 1500 ALL"),
            Step::Send(0, "GET k"),
            Step::Send(2, "CLIENT UNPAUSE"),
            Step::Sleep(1500),
            Step::Send(1, "PING"),
        ],
    ),
];

/// RESP2 encoding of a command given as space-separated words.
fn encode_words(cmd: &str) -> Vec<u8> {
    let words: Vec<&str> = cmd.split(' ').collect();
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n{w}\r\n", w.len()).as_bytes());
    }
    out
}

/// `(step, connection, bytes received)` for every non-empty read, in order.
type Transcript = Vec<(usize, usize, String)>;

fn run_multi_real(port: u16, steps: &[Step]) -> Transcript {
    let mut reset = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    reset.write_all(&encode_words("FLUSHALL")).expect("write");
    let mut buf = [0u8; 5];
    reset.read_exact(&mut buf).expect("FLUSHALL reply");
    let mut conns: Vec<std::net::TcpStream> = (0..CONNS)
        .map(|_| {
            let s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
            s.set_read_timeout(Some(Duration::from_millis(5))).expect("timeout");
            s
        })
        .collect();
    let mut transcript = Transcript::new();
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Send(c, cmd) => conns[*c].write_all(&encode_words(cmd)).expect("write"),
            Step::Sleep(ms) => std::thread::sleep(Duration::from_millis(*ms)),
            Step::Reconnect(c) => {
                let s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
                s.set_read_timeout(Some(Duration::from_millis(5))).expect("timeout");
                conns[*c] = s;
            }
        }
        std::thread::sleep(Duration::from_millis(SETTLE_MS));
        for (c, conn) in conns.iter_mut().enumerate() {
            let mut got = Vec::new();
            let mut chunk = [0u8; 4096];
            while let Ok(n) = conn.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&chunk[..n]);
            }
            if !got.is_empty() {
                transcript.push((i, c, String::from_utf8_lossy(&got).into_owned()));
            }
        }
    }
    transcript
}

fn run_multi_simulated(steps: &'static [Step]) -> Transcript {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut world = World::new(WorldConfig {
        seed: 7,
        duration_ms: 3_600_000,
        min_latency_ms: 1,
        max_latency_ms: 1,
        ..WorldConfig::default()
    })
    .expect("valid world config");
    world.add_master("redis-1", ClockSpec::default()).expect("add master");
    let out: Rc<RefCell<Transcript>> = Rc::default();
    let transcript = out.clone();
    world
        .add_client("conformance", ClockSpec::default(), move |node: Node| async move {
            let mut conns = Vec::new();
            for _ in 0..CONNS {
                let stream = node.connect("redis-1", REDIS_PORT).await.expect("connect");
                conns.push(stream);
            }
            for (i, step) in steps.iter().enumerate() {
                match step {
                    Step::Send(c, cmd) => conns[*c].write_all(&encode_words(cmd)).await.expect("write"),
                    Step::Sleep(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
                    Step::Reconnect(c) => conns[*c] = node.connect("redis-1", REDIS_PORT).await.expect("connect"),
                }
                tokio::time::sleep(Duration::from_millis(SETTLE_MS)).await;
                for (c, conn) in conns.iter_mut().enumerate() {
                    let mut got = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(1), conn.read(&mut chunk)).await {
                        if n == 0 {
                            break;
                        }
                        got.extend_from_slice(&chunk[..n]);
                    }
                    if !got.is_empty() {
                        transcript
                            .borrow_mut()
                            .push((i, c, String::from_utf8_lossy(&got).into_owned()));
                    }
                }
            }
        })
        .expect("add client");
    let end = world.run(&FaultPlan::default()).expect("world runs");
    assert!(end.clients_finished, "the simulated run did not finish");
    let t = out.borrow().clone();
    t
}

#[test]
#[cfg_attr(
    lockstep_no_redis_server,
    ignore = "redis-server is not installed (apt-get install redis-server, or REDIS_SERVER=PATH)"
)]
fn several_connections_agree_with_redis_server() {
    let Some(server) = RedisServer::start() else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "redis-server is not installed, and CI=true");
        eprintln!("SKIPPED: redis-server is not installed; multi-connection conformance not checked");
        return;
    };
    let mut failures = String::new();
    for (what, steps) in MULTI_CONN {
        let real = run_multi_real(server.port, steps);
        let sim = run_multi_simulated(steps);
        if real != sim {
            failures.push_str(&format!("\n{what}:\n"));
            let show = |t: &Transcript| {
                t.iter()
                    .map(|(i, c, b)| format!("    step {i} ({}) conn {c}: {b:?}\n", step_text(&steps[*i])))
                    .collect::<String>()
            };
            failures.push_str(&format!("  simulated:\n{}  real:\n{}", show(&sim), show(&real)));
        }
    }
    drop(server);
    assert!(failures.is_empty(), "multi-connection cases disagree:{failures}");
}

fn step_text(step: &Step) -> String {
    match step {
        Step::Send(c, cmd) => format!("{c}: {cmd}"),
        Step::Sleep(ms) => format!("sleep {ms} ms"),
        Step::Reconnect(c) => format!("{c}: reconnect"),
    }
}
