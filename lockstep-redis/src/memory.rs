//! The memory limits of the simulated Redis servers: Redis' `maxmemory` with the `noeviction`
//! policy, per server, and one budget shared by every server of a world.
//!
//! A server's memory is its keyspace's approximate size ([`super::Keyspace::used_bytes`]: key
//! and value bytes plus a fixed overhead per key and per list element or hash field). Before a
//! command that may grow memory (Redis' `denyoom` flag: `SET`, `INCR`, `LPUSH`, `HSET`, ...) the
//! engine compares it with the limits; over either one it answers [`OOM_ERROR`] without running
//! the command, as Redis does when `maxmemory` is reached and nothing may be evicted. Commands
//! that free memory (`DEL`, `EXPIRE`, pops) always run.
//!
//! The world budget ([`MemoryPool`]) bounds what all the servers of a run hold together: a file
//! may ask for a thousand masters, and a thousand times a server's limit is more than a machine
//! has. The world opens a [`MemoryPool::scope`] while it builds its servers; every engine built
//! inside it shares that pool. The engines built elsewhere on one thread (`lockstep serve`'s and
//! `lockstep live`'s servers, which run on one thread, and tests) share that thread's unscoped
//! pool, capped at [`unscoped_memory_max`] ([`DEFAULT_UNSCOPED_MEMORY_BYTES`] unless the
//! embedding program sets another cap with [`set_unscoped_memory_max`]): whatever `CONFIG SET
//! maxmemory` says (`100gb`, or `0`, which means "no limit" in Redis), those servers together
//! never hold more.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default `maxmemory` of one simulated server: 64 MiB. Lock clients store a few keys of a
/// few dozen bytes each; the largest shipped scenario keeps well under 10 KB.
pub const DEFAULT_MAXMEMORY_BYTES: usize = 64 << 20;

/// The default budget shared by every server of a world: 512 MiB (eight servers full to their
/// own limit).
pub const DEFAULT_WORLD_MEMORY_BYTES: usize = 512 << 20;

/// The default cap of the engines built outside a world ([`set_unscoped_memory_max`]): 1 GiB
/// for all of a thread's, i.e. all the servers of one `lockstep serve` or `lockstep live`
/// process. Lock clients store a few keys of a few dozen bytes.
pub const DEFAULT_UNSCOPED_MEMORY_BYTES: usize = 1 << 30;

/// The cap of the engines built outside a world, read when a thread's unscoped pool is made.
static UNSCOPED_MEMORY_MAX: AtomicUsize = AtomicUsize::new(DEFAULT_UNSCOPED_MEMORY_BYTES);

/// Sets the cap on what the engines built outside a world ([`MemoryPool::scope`]) on one thread
/// may hold together, whatever their `maxmemory`; applies to the threads whose first such
/// engine is built after the call. Worlds are not affected (their budget is their own pool's).
pub fn set_unscoped_memory_max(bytes: usize) {
    UNSCOPED_MEMORY_MAX.store(bytes, Ordering::Relaxed);
}

/// The cap [`set_unscoped_memory_max`] set (default [`DEFAULT_UNSCOPED_MEMORY_BYTES`]).
pub fn unscoped_memory_max() -> usize {
    UNSCOPED_MEMORY_MAX.load(Ordering::Relaxed)
}

/// Redis' reply to a command refused because memory is over `maxmemory` (`shared.oomerr`).
pub const OOM_ERROR: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// The memory every server of a world holds together, and its limit.
#[derive(Debug)]
pub struct MemoryPool {
    max: Cell<usize>,
    used: Cell<usize>,
}

thread_local! {
    /// The pool engines built now join ([`MemoryPool::scope`]).
    static SCOPE: RefCell<Option<Rc<MemoryPool>>> = const { RefCell::new(None) };
    /// The pool of the engines built outside any scope on this thread, made with the first.
    static UNSCOPED: RefCell<Option<Rc<MemoryPool>>> = const { RefCell::new(None) };
}

impl MemoryPool {
    /// A pool of at most `max` bytes.
    pub fn new(max: usize) -> Rc<Self> {
        Rc::new(MemoryPool {
            max: Cell::new(max),
            used: Cell::new(0),
        })
    }

    /// The most its servers may hold together.
    pub fn max(&self) -> usize {
        self.max.get()
    }

    /// Changes the most its servers may hold together (a server already past it keeps what it
    /// holds; its commands that may grow memory are refused).
    pub fn set_max(&self, bytes: usize) {
        self.max.set(bytes);
    }

    /// What its servers hold now (as of their last command).
    pub fn used(&self) -> usize {
        self.used.get()
    }

    /// Runs `build` with `pool` as the pool of every engine built meanwhile (on this thread).
    pub fn scope<R>(pool: &Rc<MemoryPool>, build: impl FnOnce() -> R) -> R {
        let previous = SCOPE.with(|s| s.replace(Some(pool.clone())));
        // Put the previous scope back even if `build` panics.
        struct Restore(Option<Rc<MemoryPool>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                SCOPE.with(|s| *s.borrow_mut() = previous);
            }
        }
        let _restore = Restore(previous);
        build()
    }

    /// The pool of the scope this thread is in, or else the thread's unscoped pool (capped at
    /// [`unscoped_memory_max`]).
    pub(crate) fn current() -> Rc<MemoryPool> {
        SCOPE.with(|s| s.borrow().clone()).unwrap_or_else(Self::unscoped)
    }

    /// The pool every engine built outside a scope on this thread shares.
    pub fn unscoped() -> Rc<MemoryPool> {
        UNSCOPED.with(|u| {
            u.borrow_mut()
                .get_or_insert_with(|| MemoryPool::new(unscoped_memory_max()))
                .clone()
        })
    }
}

/// One engine's share of its pool: what it last reported, and its own limit.
#[derive(Debug)]
pub(crate) struct MemoryShare {
    pool: Rc<MemoryPool>,
    /// What this engine counts for in the pool.
    reported: usize,
    /// This engine's own limit (`maxmemory`; 0: none, as in Redis, so only the pool's).
    pub(crate) maxmemory: usize,
}

impl MemoryShare {
    /// A share of the current scope's pool ([`MemoryPool::current`]), with the default
    /// `maxmemory`.
    pub(crate) fn new() -> Self {
        MemoryShare {
            pool: MemoryPool::current(),
            reported: 0,
            maxmemory: DEFAULT_MAXMEMORY_BYTES,
        }
    }

    /// Reports that the engine now holds `used` bytes.
    pub(crate) fn report(&mut self, used: usize) {
        let total = self.pool.used.get().saturating_sub(self.reported).saturating_add(used);
        self.pool.used.set(total);
        self.reported = used;
    }

    /// The most bytes the engine may hold before commands that may grow memory are refused: its
    /// own `maxmemory`, or what the pool leaves it beside the other engines, whichever is less.
    /// A `maxmemory` of 0 is Redis' "no limit": only the pool's applies.
    pub(crate) fn limit(&self) -> usize {
        let others = self.pool.used.get().saturating_sub(self.reported);
        let own = if self.maxmemory == 0 {
            usize::MAX
        } else {
            self.maxmemory
        };
        own.min(self.pool.max.get().saturating_sub(others))
    }
}

impl Drop for MemoryShare {
    fn drop(&mut self) {
        self.report(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{sha1_hex, EngineConfig, RedisEngine, Reply};
    use bytes::Bytes;

    fn run(e: &mut RedisEngine, cmd: &[&str]) -> Reply {
        let args: Vec<Bytes> = cmd.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
        e.execute(&args, 1_000)
    }

    fn eval(e: &mut RedisEngine, script: &str, keys: &[&str]) -> Reply {
        let n = keys.len().to_string();
        let mut cmd = vec!["EVAL", script, n.as_str()];
        cmd.extend_from_slice(keys);
        run(e, &cmd)
    }

    fn oom() -> Reply {
        Reply::Error(OOM_ERROR.to_string())
    }

    fn ok() -> Reply {
        Reply::Status("OK".into())
    }

    #[test]
    fn the_used_memory_count_follows_every_write() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let script = "redis.call('rpush', KEYS[1], 'a', 'bb') redis.call('hset', 'h2', 'f', 'v') \
                      redis.call('set', 'k2', string.rep('x', 300)) return redis.call('lpop', KEYS[1])";
        let commands: &[&[&str]] = &[
            &["SET", "k", "value"],
            &["SET", "k", "a longer value"],
            &["INCR", "n"],
            &["INCRBY", "n", "1000000"],
            &["DECR", "n"],
            &["LPUSH", "l", "a", "bb", "ccc"],
            &["RPUSH", "l", "dddd"],
            &["LPOP", "l"],
            &["RPOP", "l", "2"],
            &["HSET", "h", "f1", "v1", "f2", "v2"],
            &["HSET", "h", "f1", "a longer v1"],
            &["HINCRBY", "h", "c", "5"],
            &["HINCRBY", "h", "c", "5000"],
            &["HDEL", "h", "f2", "nope"],
            &["PEXPIRE", "k", "10"],
            &["SET", "gone", "x", "PXAT", "500"],
            &["EXPIRE", "n", "-1"],
            &["DEL", "l", "missing"],
            &["EVAL", script, "1", "l2"],
            &["HDEL", "h", "f1", "c"],
            &["SADD", "s", "a", "bb", "ccc"],
            &["SADD", "s", "a", "dddd"],
            &["SREM", "s", "bb", "nope"],
            &["MSET", "k", "v", "m", "vvvv"],
            &["SELECT", "2"],
            &["SET", "k", "in db 2"],
            &["SWAPDB", "0", "2"],
            &["SREM", "s", "a", "ccc", "dddd"],
            &["FLUSHDB"],
            &["SELECT", "0"],
            &["FLUSHALL"],
            &["SET", "k", "again"],
        ];
        for cmd in commands {
            run(&mut e, cmd);
            assert_eq!(
                e.keyspace().used_bytes(),
                e.keyspace().recount_used_bytes(),
                "after {cmd:?}"
            );
        }
        e.expire_due(1_000_000);
        assert_eq!(e.keyspace().used_bytes(), e.keyspace().recount_used_bytes());
        assert!(e.used_memory() > 0);
        e.reset();
        assert_eq!(e.used_memory(), 0);
    }

    #[test]
    fn writes_over_maxmemory_answer_oom_and_frees_still_run() {
        let mut e = RedisEngine::new(EngineConfig::default());
        assert_eq!(e.maxmemory(), DEFAULT_MAXMEMORY_BYTES);
        e.set_maxmemory(1_000);
        let big = "x".repeat(2_000);
        // Below the limit a write runs, even one that takes memory past it (as in Redis).
        assert_eq!(run(&mut e, &["SET", "big", &big]), ok());
        assert!(e.used_memory() > 1_000);
        for cmd in [
            &["SET", "k", "v"][..],
            &["INCR", "n"],
            &["LPUSH", "l", "a"],
            &["RPUSH", "l", "a"],
            &["HSET", "h", "f", "v"],
            &["HINCRBY", "h", "f", "1"],
        ] {
            assert_eq!(run(&mut e, cmd), oom(), "{cmd:?}");
        }
        // Reads, TTL changes and deletions run.
        assert_eq!(
            run(&mut e, &["GET", "big"]),
            Reply::Bulk(Some(Bytes::from(big.clone())))
        );
        assert_eq!(run(&mut e, &["PEXPIRE", "big", "100000"]), Reply::Integer(1));
        assert_eq!(run(&mut e, &["EXISTS", "k"]), Reply::Integer(0));
        // Inside MULTI anything queued is refused, and EXEC then aborts.
        assert_eq!(run(&mut e, &["MULTI"]), ok());
        assert_eq!(run(&mut e, &["GET", "big"]), oom());
        assert_eq!(
            run(&mut e, &["EXEC"]),
            Reply::Error("EXECABORT Transaction discarded because of previous errors.".into())
        );
        assert_eq!(run(&mut e, &["DEL", "big"]), Reply::Integer(1));
        assert_eq!(e.used_memory(), 0);
        assert_eq!(run(&mut e, &["SET", "k", "v"]), ok());
    }

    #[test]
    fn an_exec_whose_transaction_grows_memory_is_aborted_once_over_the_limit() {
        let mut e = RedisEngine::new(EngineConfig::default());
        e.set_maxmemory(1_000);
        let (mut a, mut b) = (crate::ClientSession::new(1), crate::ClientSession::new(2));
        let args = |cmd: &[&str]| -> Vec<Bytes> { cmd.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect() };
        assert_eq!(e.execute_as(&mut a, &args(&["MULTI"]), 0), ok());
        assert_eq!(
            e.execute_as(&mut a, &args(&["SET", "k", "v"]), 0),
            Reply::Status("QUEUED".into())
        );
        // Another connection takes memory past the limit meanwhile.
        assert_eq!(
            e.execute_as(&mut b, &args(&["SET", "big", &"x".repeat(2_000)]), 0),
            ok()
        );
        assert_eq!(
            e.execute_as(&mut a, &args(&["EXEC"]), 0),
            Reply::Error(format!("EXECABORT Transaction discarded because of: {OOM_ERROR}"))
        );
        assert!(!a.in_multi());
        assert_eq!(e.execute_as(&mut a, &args(&["GET", "k"]), 0), Reply::Bulk(None));
        // A transaction that grows nothing runs.
        assert_eq!(e.execute_as(&mut a, &args(&["MULTI"]), 0), ok());
        assert_eq!(
            e.execute_as(&mut a, &args(&["EXEC"]), 0),
            Reply::Array(Some(Vec::new()))
        );
    }

    #[test]
    fn a_script_is_refused_writes_past_the_limit() {
        let mut e = RedisEngine::new(EngineConfig::default());
        e.set_maxmemory(100_000);
        // Each call stores 10 KB more: the script is stopped at the first write past the limit.
        let script = "for i = 1, 1000 do redis.call('set', KEYS[1] .. i, string.rep('x', 10000)) end return 1";
        let reply = eval(&mut e, script, &["blob:"]);
        assert_eq!(
            reply,
            Reply::Error(format!(
                "{OOM_ERROR} script: {}, on @user_script:1.",
                sha1_hex(script.as_bytes())
            ))
        );
        let used = e.used_memory();
        assert!((100_000..=100_000 + 10_000 + 200).contains(&used), "{used}");
        // redis.pcall sees the refusal as an error reply; deleting still works from a script.
        assert_eq!(
            eval(&mut e, "return redis.pcall('set', KEYS[1], 'v')", &["k"]),
            Reply::Error(OOM_ERROR.to_string())
        );
        assert_eq!(
            eval(&mut e, "return redis.call('del', KEYS[1])", &["blob:1"]),
            Reply::Integer(1)
        );
        assert!(!eval(&mut e, "return redis.call('get', KEYS[1])", &["blob:2"]).is_error());
    }

    #[test]
    fn the_lua_vm_is_capped_and_collected_after_a_big_script() {
        let mut e = RedisEngine::new(EngineConfig::default());
        for script in [
            "return string.rep('x', 1e9)",
            "local t = {} for i = 1, 1e7 do t[i] = i end return #t",
            "local s = 'z' while true do s = s .. s end",
        ] {
            let reply = eval(&mut e, script, &[]);
            // The table's loop runs millions of instructions over a heap past 16 MiB, each
            // charged by the heap since issue 48: the budget may stop it before the cap does.
            assert!(
                matches!(&reply, Reply::Error(m) if m.contains("not enough memory")
                    || (script.contains("t[i] = i") && m.contains("exceeded instruction budget"))),
                "{script}: {reply:?}"
            );
            // The script's garbage is not kept (Lua halves its concatenation buffer at each
            // collection, so a little more than the 4 MiB threshold may stay).
            assert!(e.lua_memory() < 16 << 20, "{script}: {}", e.lua_memory());
            assert_eq!(run(&mut e, &["PING"]), Reply::Status("PONG".into()));
        }
        // A big error text is a reply like any other (the history cuts it).
        let reply = eval(&mut e, "error(string.rep('e', 1000000))", &[]);
        assert!(
            matches!(&reply, Reply::Error(m) if m.len() > 1_000_000),
            "{}",
            reply.is_error()
        );
        assert_eq!(eval(&mut e, "return 1 + 1", &[]), Reply::Integer(2));
    }

    #[test]
    fn servers_of_one_pool_share_its_budget() {
        let pool = MemoryPool::new(3_000);
        let (mut a, mut b) = MemoryPool::scope(&pool, || {
            (
                RedisEngine::new(EngineConfig::default()),
                RedisEngine::new(EngineConfig::default()),
            )
        });
        assert_eq!(run(&mut a, &["SET", "k", &"a".repeat(2_500)]), ok());
        assert_eq!(run(&mut b, &["SET", "k", &"b".repeat(1_000)]), ok());
        assert!(pool.used() > 3_000);
        // Each is below its own maxmemory, but together they are over the budget.
        assert_eq!(run(&mut b, &["SET", "k2", "v"]), oom());
        assert_eq!(run(&mut a, &["SET", "k2", "v"]), oom());
        assert_eq!(run(&mut a, &["DEL", "k"]), Reply::Integer(1));
        assert_eq!(run(&mut b, &["SET", "k2", "v"]), ok());
        drop(b);
        assert_eq!(pool.used(), a.used_memory());
    }

    #[test]
    fn shares_add_up_in_their_pool_and_leave_it_when_dropped() {
        let pool = MemoryPool::new(100);
        let (mut a, mut b) = MemoryPool::scope(&pool, || (MemoryShare::new(), MemoryShare::new()));
        a.maxmemory = 80;
        b.maxmemory = 80;
        a.report(60);
        b.report(30);
        assert_eq!(pool.used(), 90);
        // a may hold 70 beside b's 30 (its own limit is 80); b 40 beside a's 60.
        assert_eq!(a.limit(), 70);
        assert_eq!(b.limit(), 40);
        a.report(10);
        assert_eq!(pool.used(), 40);
        assert_eq!(b.limit(), 80);
        drop(b);
        assert_eq!(pool.used(), 10);
        // Outside a scope: the thread's unscoped pool, not this one.
        let alone = MemoryShare::new();
        assert_eq!(alone.limit(), DEFAULT_MAXMEMORY_BYTES);
        assert_eq!(pool.used(), 10);
    }

    #[test]
    fn maxmemory_0_means_no_limit_but_the_process_cap_still_holds() {
        // Outside a world: this thread's unscoped pool, capped at 1 GiB unless the embedding
        // program says otherwise; 8 MiB here, to keep the test small.
        let pool = MemoryPool::unscoped();
        assert_eq!(pool.max(), DEFAULT_UNSCOPED_MEMORY_BYTES);
        pool.set_max(8 << 20);
        let mut a = RedisEngine::new(EngineConfig::default());
        let mut b = RedisEngine::new(EngineConfig::default());
        // Redis: 0 is "no limit", not 0 bytes.
        assert_eq!(run(&mut a, &["CONFIG", "SET", "maxmemory", "0"]), ok());
        assert_eq!(
            run(&mut a, &["CONFIG", "GET", "maxmemory"]),
            Reply::Array(Some(vec![Reply::bulk("maxmemory"), Reply::bulk("0")]))
        );
        assert_eq!(run(&mut a, &["SET", "k", "v"]), ok());
        assert_eq!(run(&mut a, &["SET", "k2", "v"]), ok());
        // `maxmemory 100gb` is accepted, but the servers of this thread together stop at the
        // cap.
        assert_eq!(run(&mut b, &["CONFIG", "SET", "maxmemory", "100gb"]), ok());
        assert_eq!(b.maxmemory(), 100 << 30);
        let chunk = "x".repeat(256 << 10);
        let fill = |e: &mut RedisEngine| {
            let mut stored = 0usize;
            loop {
                match run(e, &["SET", &format!("big{stored}"), &chunk]) {
                    Reply::Status(_) => stored += 1,
                    other => break (stored, other),
                }
                assert!(stored < 1_000, "never refused");
            }
        };
        let (on_a, refused) = fill(&mut a);
        assert_eq!(refused, oom());
        assert!(on_a > 20, "{on_a}");
        // A write below the limit runs even if it takes memory past it (as in Redis): `b`,
        // holding nothing, is below what `a` left it, and writes once.
        let (on_b, refused) = fill(&mut b);
        assert_eq!((on_b, refused), (1, oom()));
        let together = a.used_memory() + b.used_memory();
        assert!(
            (8 << 20..(8 << 20) + (512 << 10) + 1024).contains(&together),
            "{together}"
        );
        assert_eq!(pool.used(), together);
        // Freeing memory on one server makes room on the other.
        assert_eq!(run(&mut a, &["FLUSHALL"]), ok());
        assert_eq!(run(&mut b, &["SET", "again", &chunk]), ok());
        drop((a, b));
        assert_eq!(pool.used(), 0);
    }
}
