//! Lua scripting (`EVAL`, `EVALSHA`, `SCRIPT`) on an embedded Lua 5.1, as Redis embeds it.
//!
//! What is modelled (Redis 7.2 behaviour):
//! * scripts are compiled as chunk `@user_script` and cached by the SHA1 of their body;
//! * globals `KEYS` and `ARGV`; `redis.call`, `redis.pcall`, `redis.error_reply`,
//!   `redis.status_reply`, `redis.sha1hex`, `redis.log` (a no-op after Redis' argument checks),
//!   `redis.setresp(2)`, `redis.set_repl`, `redis.replicate_commands`, the `LOG_*`/`REPL_*`
//!   constants and `REDIS_VERSION`/`REDIS_VERSION_NUM`;
//! * Redis' reply conversions both ways (nil bulk -> `false`, status -> `{ok=..}`, error ->
//!   `{err=..}`, numbers truncated to integers as x86-64 does it (NaN and out-of-range numbers
//!   become `-9223372036854775808`), arrays stop at the first nil, ...), and Redis' `%.17g`
//!   rendering of Lua numbers passed as command arguments;
//! * Redis 7 error texts: a `redis.call` error or a runtime error aborts the script with
//!   `<error> script: <sha>, on @user_script:<line>.` (e.g.
//!   `ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: ...`),
//!   compile errors answer `ERR Error compiling script (new function): user_script:1: ...`;
//! * reading an undefined global is an error; the globals, the libraries, `getmetatable(_G)`
//!   and the string metatable are read-only as Redis 7.0's readonly-table flag makes them (an
//!   assignment raises `user_script:N: Attempt to modify a readonly table`; `rawset`,
//!   `setmetatable`, `table.insert`/`remove`/`sort` raise it without a position); Lua's `pcall`
//!   returns the `err` text of Redis error tables, as Redis' own `pcall` replacement does;
//!   `math.random`/`math.randomseed` are Redis' `lrand48`, one sequence continued from script
//!   to script (seeded once, when the VM is made), as in Redis 7;
//! * `cjson`, `cmsgpack` and `struct` as Redis 7.0 ships them (lua-cjson 2.1.0, lua-cmsgpack
//!   0.4.0, `struct`), written in Rust ([`cjson`], [`cmsgpack`], [`lstruct`]), and Lua's
//!   `coroutine`.
//!
//! Deliberate differences from Redis (`docs/redis-differences.md` has the full table):
//! * `math.random`'s sequence is the world's VM's (Redis: the process'), so it depends on the
//!   scripts the world ran before, all of them decided by the run's seed; `cjson`'s settings
//!   start from the defaults at every script (Redis keeps them in the VM);
//! * a script is stopped after `lua_instruction_budget` Lua VM instructions (checked every
//!   `min(budget, 10000)` instructions, counted from the start of the script, so where it stops
//!   depends on nothing but the script) and answers
//!   `ERR Script killed: exceeded instruction budget of N`, where Redis would keep running it and
//!   answer `BUSY` to other clients until `SCRIPT KILL`/`SHUTDOWN NOSAVE`. The budget cannot be
//!   dodged with `pcall`/`xpcall`. Writes the script made before it was stopped stay (as with
//!   any script error in Redis). Work inside library functions, where Lua's hook does not
//!   fire, is charged to the same budget: pattern matching runs on lockstep's own Lua 5.1
//!   matcher ([`pattern`]), a unit per step; `string.rep`/`upper`/`lower`/`reverse`/`sub`/
//!   `format`, `table.concat`, `tonumber`, `redis.sha1hex` and `redis.call`'s arguments a unit
//!   per 8 bytes, `table.sort`/`insert`/`remove`/`maxn` by elements, a caught error 2,000
//!   units ([`install_builtins`]). The VM's own `..` and string comparison are one instruction
//!   each (bounded by the memory cap);
//! * the script cache holds at most [`SCRIPT_CACHE_SCRIPTS_MAX`] scripts and
//!   [`SCRIPT_CACHE_BYTES_MAX`] bytes of bodies per VM (Redis: unbounded); past either a new
//!   script is refused with `ERR script cache full: ...`. The compiled functions live in a Lua
//!   table, not in Rust handles (mlua's reference stack holds 8,000);
//! * one Lua VM per world, shared by all of its servers (Redis has one per server; see
//!   [`WorldLua`]): each server keeps its own script cache (`SCRIPT LOAD`/`EXISTS`/`FLUSH`,
//!   `EVALSHA`'s `NOSCRIPT`, a restart emptying it are per server), a body cached by several
//!   servers is compiled once, and every run gets a fresh sandbox, so a script sees what it
//!   would see on a VM of its own, except what belongs to the whole VM: its memory is the
//!   world's (`INFO`'s `used_memory_lua`, `gcinfo()`, `collectgarbage('count')` give the same
//!   figure on every server of a world, and the cap below is the world's), `collectgarbage`
//!   settings a script changes hold for the whole world's VM, and a `__gc` finalizer (of a
//!   `newproxy(true)` userdata) runs whenever the world's VM collects it, which may be during
//!   another server's script (its `redis.call` then reaches that server). All of it is
//!   deterministic: a VM is never shared across worlds or threads;
//! * the VM's memory is capped at 64 MiB (Redis has no cap): an allocation past it fails the
//!   script with `not enough memory` (`string.rep('x', 1e9)` is an error reply, not an abort),
//!   and a VM left holding more than 4 MiB over what it held after its last collection is
//!   garbage-collected at once after a script, so the garbage of one big script is not kept;
//! * the sandbox is built from Lua rather than Redis' patched interpreter: every script run gets
//!   a fresh environment table, and `redis`, `string`, `math`, `table`, `bit`, `cjson`,
//!   `cmsgpack`, `struct` and `coroutine` are read-only views of the real tables, so one
//!   script cannot break the next; a table is read-only when its metatable's `__metatable` is
//!   one of the helper's marks (`readonly_marks`), which the Rust wrappers of `rawset`,
//!   `setmetatable` and `table.*` check. `rawget`/`pairs` on the views see nothing. `load`,
//!   `print`, `dofile`, `loadfile`, `os`, `io`, `debug` and `package` are not available;
//!   `loadstring` refuses bytecode; making a coroutine costs [`COROUTINE_UNITS`] (the hook's
//!   count restarts in every thread);
//! * only RESP2 is spoken: `redis.setresp(3)` raises an error, and `{map=..}`/`{set=..}` reply
//!   tables are treated as plain arrays; replies nested deeper than 128 levels become
//!   `ERR reached lua stack limit`;
//! * `tostring` of an error object that is a function/table/userdata renders as its type name
//!   (Lua prints an address, which would not be deterministic); an error table without an `err`
//!   field (`error({})`) answers `ERR Error running script: error object without 'err' field`
//!   (Redis would dereference NULL); no `#!lua` shebang support;
//! * errors that `redis.call` and the other `redis.*` helpers raise travel as mlua error
//!   userdata, not as Lua tables: the final reply, `redis.pcall` and `pcall` are exactly Redis',
//!   but a user `xpcall` handler receives that userdata where Redis passes an `{err=..}` table;
//! * as in any Lua, `tostring(t)` of a table/function and `pairs` over tables keyed by tables or
//!   functions depend on memory addresses; scripts that want deterministic output must not use
//!   them (the lock scripts do not).

use super::reply::Reply;
use bytes::Bytes;
use mlua::{ChunkMode, Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};
use std::any::TypeId;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// Deepest Lua table nesting converted to a reply.
const MAX_REPLY_DEPTH: usize = 128;
/// Lua heap cap per VM, hence per world: a script that allocates more fails with
/// `not enough memory`.
pub(crate) const LUA_MEMORY_LIMIT: usize = 64 << 20;
/// A VM holding more than this over what it held after its last collection is collected at
/// once after a script (a VM running the lock scripts holds about 45 KB).
const LUA_COLLECT_ABOVE: usize = 4 << 20;
/// The chunk name Redis gives scripts.
const USER_SCRIPT: &str = "@user_script";
/// The chunk name of [`HELPER_LUA`].
const HELPER_CHUNK_NAME: &str = "=lockstep_redis_lib";

/// Whether an error reply (its text, without the leading `-`) is one of lockstep's own bounds
/// failing a command, where a real Redis would have run it: what failed, named. A run whose
/// clients got such replies met a limit of the simulated server, not a behaviour of Redis'.
pub fn server_failure(error: &str) -> Option<&'static str> {
    let error = error.strip_prefix('-').unwrap_or(error);
    if error.starts_with("ERR Script killed: exceeded instruction budget") {
        Some("a script stopped by the instruction budget")
    } else if error.starts_with(WALL_GUARD_KILLED) {
        Some("a script stopped by the wall-clock guard of a real-time server")
    } else if error.starts_with(STOPPED_KILLED) {
        Some("a script stopped with its run, from outside the simulation")
    } else if error.starts_with("ERR script cache full") {
        Some("the script cache full")
    } else if error.starts_with("ERR Lua VM unavailable") {
        Some("the Lua VM unavailable")
    } else if error.starts_with("ERR ") && error.contains("not enough memory") {
        Some("a script past the Lua memory cap")
    } else if error.starts_with("ERR ") && error.contains("pattern too complex") {
        Some("a script's pattern past the recursion bound")
    } else {
        None
    }
}

/// Lowercase hex SHA1 of `data`, as `SCRIPT LOAD` and `redis.sha1hex` compute it.
pub fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

/// A Redis error table raised from Rust (`luaPushError` + `luaError`): its text becomes the
/// `err` field the message handler builds. Raised as an mlua external error because a Rust
/// callback cannot raise a Lua table; the callbacks stay C functions so that a
/// `return redis.call(...)` keeps the caller's frame (and line) on the stack, as in Redis.
#[derive(Debug)]
struct RaisedError(String);

impl std::fmt::Display for RaisedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RaisedError {}

fn raise<T>(text: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::external(RaisedError(text.into())))
}

mod cjson;
mod cmsgpack;
mod lstruct;
mod pattern;

/// The start of the reply to a script stopped by the wall-clock guard of a real-time server
/// ([`set_wall_guard`]).
const WALL_GUARD_KILLED: &str = "ERR Script killed: it ran past the wall-clock guard";
/// The start of the reply to a script stopped because its run was stopped from outside the
/// simulation ([`crate::stop`]).
const STOPPED_KILLED: &str = "ERR Script killed: the run was stopped";

thread_local! {
    /// The wall-clock guard of the scripts run on this thread ([`set_wall_guard`]): none in a
    /// simulation.
    static WALL_GUARD: Cell<Option<std::time::Duration>> = const { Cell::new(None) };
}

/// Sets, for the scripts run on this thread from now on, a wall-clock guard: a script still
/// running `limit` after it started is stopped with `ERR Script killed: it ran past the
/// wall-clock guard of N ms`, checked by the same hook as the instruction budget (every
/// `HOOK_EVERY` instructions, and by the built-ins that charge the budget). Redis' own answer
/// to a long script is wall time too (`busy-reply-threshold`, 5 s, after which other clients get
/// `BUSY`), and a real-time server (`lockstep serve`, `lockstep live`'s servers) serves every
/// client from one thread: a script that does work no budget counts (the VM's own `..` and `<`
/// on long strings) must not stall them all. It is a last resort behind the budget, never set in
/// a simulation, whose scripts stop on counted work only and where a wall clock would break
/// determinism; `None` removes it.
pub fn set_wall_guard(limit: Option<std::time::Duration>) {
    WALL_GUARD.with(|g| g.set(limit));
}

/// What the hook checks between budget checks: every this many VM instructions, whether the
/// run was stopped from outside ([`crate::stop`]) or ran past its wall-clock guard. The budget
/// itself is still checked every `min(budget, 10000)` instructions, so where a runaway script
/// stops does not change.
const HOOK_EVERY: u64 = 100;

/// Above this heap, each VM instruction is charged besides as if it handled
/// [`HEAP_BYTES_PER_UNIT`]-th of the heap (issue 48). The VM's own `..` and `<` copy and compare
/// whole strings in one instruction, and no hook can see which instruction runs or on what: a
/// loop of `a .. 'x'` or `a < b` over 15 MB strings ran for days on a budget of instructions.
/// With the heap small (a lock script's VM holds some 50 KB) nothing changes.
const LARGE_HEAP: u64 = 16 << 20;

/// See [`LARGE_HEAP`]: with the default budget, a loop of `..` or `<` on the longest strings
/// the memory cap allows stops within seconds (measured: 1–3 s), and a script holding 32 MB
/// runs some 3,000 instructions (a script's heap is rarely past 16 MB: Redis replies and
/// arguments are what fill it).
const HEAP_BYTES_PER_UNIT: u64 = 1024;

/// Why a run was stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Kill {
    /// The instruction budget ran out.
    #[default]
    Budget,
    /// The run was stopped from outside the simulation (`explore --time-limit`, `mutants
    /// --seed-time-limit`): the world stops at its next step, and the run counts for nothing.
    Stopped,
    /// The wall-clock guard of a real-time server passed ([`set_wall_guard`]).
    WallGuard(std::time::Duration),
}

/// Per-run state shared with the hook and the Rust functions exposed to Lua.
#[derive(Default)]
struct RunState {
    /// Budget units spent: VM instructions, and the work of the built-ins that charge it
    /// ([`RunState::charge`]).
    executed: Cell<u64>,
    exceeded: Cell<bool>,
    /// Why the run was stopped, once [`Self::exceeded`].
    killed_by: Cell<Kill>,
    budget: Cell<u64>,
    /// `math.random`'s generator: carried from script to script (seeded once, when the VM is
    /// made), as Redis 7 does.
    rand48: Cell<u64>,
    /// `cjson`'s settings, back to their defaults at every run.
    cjson: Cell<cjson::Config>,
    /// When the run's wall-clock guard passes (a real-time server's only, [`set_wall_guard`]).
    deadline: Cell<Option<(std::time::Instant, std::time::Duration)>>,
}

/// Bytes a built-in may copy or compare for one unit of the instruction budget: a VM
/// instruction costs a few nanoseconds, as does copying a few bytes.
const BYTES_PER_UNIT: u64 = 8;

impl RunState {
    fn begin(&self, budget: u64) {
        self.executed.set(0);
        self.exceeded.set(false);
        self.killed_by.set(Kill::Budget);
        self.budget.set(budget);
        self.cjson.set(cjson::Config::default());
        let guard = WALL_GUARD.with(Cell::get);
        self.deadline
            .set(guard.and_then(|limit| Some((std::time::Instant::now().checked_add(limit)?, limit))));
    }

    /// Whether the run must stop for a reason other than its budget: stopped from outside
    /// ([`crate::stop`]), or past its wall-clock guard. Sets [`Self::killed_by`].
    fn interrupted(&self) -> bool {
        if lockstep_history::stop::requested() {
            self.killed_by.set(Kill::Stopped);
            return true;
        }
        match self.deadline.get() {
            Some((at, limit)) if std::time::Instant::now() >= at => {
                self.killed_by.set(Kill::WallGuard(limit));
                true
            }
            _ => false,
        }
    }

    /// Budget units left to the run.
    fn left(&self) -> u64 {
        self.budget.get().saturating_sub(self.executed.get())
    }

    /// Spends `units` of the run's budget on work done inside a built-in (the instruction hook
    /// does not fire inside C or Rust functions); past the budget the script is stopped.
    fn charge(&self, units: u64) -> mlua::Result<()> {
        let executed = self.executed.get().saturating_add(units);
        self.executed.set(executed);
        if self.exceeded.get() || executed >= self.budget.get() || (units > 0 && self.interrupted()) {
            return Err(self.kill());
        }
        Ok(())
    }

    /// Stops the run: the error that unwinds the script (`pcall` cannot keep it).
    fn kill(&self) -> mlua::Error {
        self.exceeded.set(true);
        mlua::Error::runtime("Script killed: instruction budget")
    }

    /// `redisSrand48`.
    fn seed(&self, seed: i32) {
        self.rand48.set(((seed as u32 as u64) << 16) | 0x330E);
    }

    /// `redisLrand48`: the classic 48-bit LCG, 31 output bits.
    fn next(&self) -> i64 {
        let x = self.rand48.get().wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB) & ((1u64 << 48) - 1);
        self.rand48.set(x);
        (x >> 17) as i64
    }
}

struct Vm {
    lua: Lua,
    run: Function,
    set_dispatch: Function,
    handler: Function,
    /// Every script some server of the world has cached, compiled once: SHA -> how many
    /// servers cache it and its body's size. A server's own cache ([`ScriptRuntime`]) holds
    /// their SHAs; a body is compiled again only once no server caches it.
    compiled: BTreeMap<String, Compiled>,
    /// The compiled functions, SHA -> function, in a Lua table: a function held from Rust
    /// takes a slot of mlua's reference stack, which Lua 5.1 caps at 8,000 slots (mlua panics
    /// past it), so the cache keeps none there.
    cache: Table,
    /// The body bytes of the scripts in [`Vm::compiled`].
    cached_bytes: usize,
    state: Rc<RunState>,
    /// The data type `redis.call`/`redis.pcall` were made for: they are made on the first run
    /// (the data's type is the caller's) and stay, instead of being made and destroyed around
    /// every run.
    dispatch_for: Option<TypeId>,
    /// Lua VM instructions a script may execute.
    budget: u64,
    /// The VM is collected at once when a script leaves it holding more than this
    /// ([`LUA_COLLECT_ABOVE`] over what it held after its last collection).
    collect_above: usize,
}

/// A script compiled in the world's VM (the function is in [`Vm::cache`]): how many servers
/// cache it, and its body's size.
struct Compiled {
    holders: usize,
    body_bytes: usize,
}

/// The most scripts one Lua VM caches (for all the servers of a world; a live server has a VM
/// of its own). Redis caches without a limit; a lock caches two or three.
pub(crate) const SCRIPT_CACHE_SCRIPTS_MAX: usize = 10_000;
/// The most script body bytes one Lua VM caches: their compiled code stays well inside
/// [`LUA_MEMORY_LIMIT`] (Lua 5.1 code takes at most about four times its source), leaving
/// the rest to the scripts' runs.
pub(crate) const SCRIPT_CACHE_BYTES_MAX: usize = 4 << 20;

/// The reply to a `SCRIPT LOAD` or `EVAL` of a new script past the cache's bounds.
fn cache_full_error() -> String {
    format!(
        "ERR script cache full: lockstep caches at most {SCRIPT_CACHE_SCRIPTS_MAX} scripts and {} MiB of \
         script bodies per Lua VM (SCRIPT FLUSH empties it)",
        SCRIPT_CACHE_BYTES_MAX >> 20
    )
}

/// What `redis.call`/`redis.pcall` work on while a script runs, lent to the VM (its app data)
/// for the run: the data, the wall time of the run, the command table.
struct Dispatch<D> {
    data: D,
    now_ms: i64,
    exec: ScriptCall<D>,
}

/// What `redis.call` runs: a command against the keyspace at the wall time `now_ms`; `Err` is the
/// script-level refusal text (Redis' `scriptCall`), which becomes an `ERR ...` error table. The
/// engine passes its command table in, so scripting and the table do not name each other.
pub(crate) type ScriptCall<D> = fn(&mut D, &[Bytes], i64) -> Result<Reply, &'static str>;

/// The Lua VM of one world, shared by every server of that world: made on the first script
/// (or the first `INFO`), so a world that runs none makes none.
///
/// One VM per world rather than per server: a world of 200 masters otherwise built 200 VMs
/// and every `EVAL` ran in a different, cold one. Nothing of a run stays in the VM for the
/// next one to see (a fresh sandbox environment per run, `cjson`'s settings reset, the
/// instruction count restarted), and each server keeps its own script cache
/// (`ScriptRuntime`), so a server sees what it would see with a VM of its own, except what
/// is a property of the whole VM: its memory (`used_memory_lua`, `gcinfo`,
/// `collectgarbage('count')`, the memory cap), its garbage collector (`collectgarbage`
/// settings, when a `newproxy` userdata's `__gc` runs) and `math.random`'s sequence, which
/// continues across the world's scripts as Redis 7's continues across a server's. An `Rc`: a world runs on one thread,
/// and a VM is never shared across worlds, so a world depends on nothing but its seed. An
/// engine made alone ([`RedisEngine::new`](super::RedisEngine::new): `lockstep live`'s
/// servers, tests) has a VM of its own.
#[derive(Clone)]
pub struct WorldLua(Rc<RefCell<LuaSlot>>);

struct LuaSlot {
    budget: u64,
    /// `None` until the first use; the error reply if the VM could not be made.
    vm: Option<Result<Vm, String>>,
}

impl WorldLua {
    /// A world's VM, with the instruction budget of its scripts; made on first use.
    pub fn new(budget: u64) -> Self {
        WorldLua(Rc::new(RefCell::new(LuaSlot { budget, vm: None })))
    }

    /// The instruction budget of a script.
    pub fn budget(&self) -> u64 {
        self.0.borrow().budget
    }
}

impl LuaSlot {
    fn vm(&mut self) -> Result<&mut Vm, String> {
        let budget = self.budget;
        self.vm
            .get_or_insert_with(|| Vm::new(budget).map_err(|e| format!("ERR Lua VM unavailable: {e}")))
            .as_mut()
            .map_err(|e| e.clone())
    }
}

/// The largest script body [`ScriptRuntime`] remembers with its SHA.
const LAST_LOADED_BYTES_MAX: usize = 16 * 1024;

/// One server's scripting: its script cache, compiled in its world's VM ([`WorldLua`]).
pub(crate) struct ScriptRuntime {
    lua: WorldLua,
    /// This server's script cache: the SHAs of its scripts (compiled once in the world's VM,
    /// [`Vm::cache`], shared with the other servers of the world that cache the same body).
    scripts: BTreeSet<String>,
    /// The body [`ScriptRuntime::load`] saw last and its SHA: a lock sends the same script over
    /// and over, and comparing its bytes costs a fraction of hashing them again.
    last_loaded: Option<(Vec<u8>, String)>,
}

impl ScriptRuntime {
    /// An empty script cache on the VM `lua`.
    pub(crate) fn new(lua: WorldLua) -> Self {
        ScriptRuntime {
            lua,
            scripts: BTreeSet::new(),
            last_loaded: None,
        }
    }

    /// The memory the world's Lua VM holds, in bytes.
    pub(crate) fn used_memory(&self) -> usize {
        self.lua.0.borrow_mut().vm().map_or(0, |vm| vm.lua.used_memory())
    }

    /// How many scripts this server has cached (`INFO`'s `number_of_cached_scripts`).
    pub(crate) fn cached(&self) -> usize {
        self.scripts.len()
    }

    /// Whether a script with this (lowercase) SHA is cached.
    pub(crate) fn contains(&self, sha: &str) -> bool {
        self.scripts.contains(sha)
    }

    /// Empties the script cache (`SCRIPT FLUSH`, a restart).
    pub(crate) fn flush(&mut self) {
        if self.scripts.is_empty() {
            return;
        }
        let scripts = std::mem::take(&mut self.scripts);
        // Not borrowed: no script runs while a server flushes or restarts.
        let Ok(mut slot) = self.lua.0.try_borrow_mut() else {
            return;
        };
        let Some(Ok(vm)) = slot.vm.as_mut() else {
            return;
        };
        for sha in &scripts {
            if let Some(c) = vm.compiled.get_mut(sha) {
                c.holders -= 1;
                if c.holders == 0 {
                    vm.cached_bytes -= c.body_bytes;
                    vm.compiled.remove(sha);
                    // Setting a field to nil allocates nothing; a failure would only leave the
                    // function until the next load of the body overwrites it.
                    let _ = vm.cache.raw_set(sha.as_str(), Value::Nil);
                }
            }
        }
    }

    /// Compiles and caches `body` (if not cached yet); returns its SHA or the error reply text.
    pub(crate) fn load(&mut self, body: &[u8]) -> Result<String, String> {
        self.load_counted(body, body.len())
    }

    /// [`ScriptRuntime::load`], counting `counted_bytes` against the cache's byte bound (a
    /// function library's wrapper counts for the library's own code, not the wrapper's
    /// boilerplate around it).
    pub(crate) fn load_counted(&mut self, body: &[u8], counted_bytes: usize) -> Result<String, String> {
        let sha = match &self.last_loaded {
            Some((seen, sha)) if seen.as_slice() == body => sha.clone(),
            _ => {
                let sha = sha1_hex(body);
                // Lock scripts are a few hundred bytes; a huge body is not kept twice.
                if body.len() <= LAST_LOADED_BYTES_MAX {
                    self.last_loaded = Some((body.to_vec(), sha.clone()));
                }
                sha
            }
        };
        if self.scripts.contains(&sha) {
            return Ok(sha);
        }
        let mut slot = self.lua.0.borrow_mut();
        let vm = slot.vm()?;
        if let Some(c) = vm.compiled.get_mut(&sha) {
            c.holders += 1;
            self.scripts.insert(sha.clone());
            return Ok(sha);
        }
        if vm.compiled.len() >= SCRIPT_CACHE_SCRIPTS_MAX
            || vm.cached_bytes.saturating_add(counted_bytes) > SCRIPT_CACHE_BYTES_MAX
        {
            return Err(cache_full_error());
        }
        // A Redis 7 shebang line (`#!lua flags=...`) is the engine's, not Lua's: compiled as a
        // comment (same length, so line numbers hold); the SHA stays the whole body's.
        let commented;
        let source: &[u8] = if body.starts_with(b"#!") {
            let mut copy = body.to_vec();
            copy[..2].copy_from_slice(b"--");
            commented = copy;
            &commented
        } else {
            body
        };
        let compiled = vm
            .lua
            .load(source)
            .set_name(USER_SCRIPT)
            .set_mode(ChunkMode::Text)
            .into_function();
        match compiled {
            Ok(f) => {
                if let Err(e) = vm.cache.raw_set(sha.as_str(), f) {
                    return Err(format!(
                        "ERR Error compiling script (new function): {}",
                        lua_error_message(&e)
                    ));
                }
                vm.compiled.insert(
                    sha.clone(),
                    Compiled {
                        holders: 1,
                        body_bytes: counted_bytes,
                    },
                );
                vm.cached_bytes += counted_bytes;
                self.scripts.insert(sha.clone());
                Ok(sha)
            }
            Err(e) => Err(format!(
                "ERR Error compiling script (new function): {}",
                lua_error_message(&e)
            )),
        }
    }

    /// Runs the cached script `sha` against the data `ks` at `now_ms`; `redis.call` runs commands with
    /// `exec`.
    pub(crate) fn run<D: Default + 'static>(
        &mut self,
        sha: &str,
        keys: &[Bytes],
        argv: &[Bytes],
        ks: &mut D,
        now_ms: i64,
        exec: ScriptCall<D>,
    ) -> Reply {
        if !self.scripts.contains(sha) {
            return Reply::error("NOSCRIPT No matching script. Please use EVAL.");
        }
        let mut slot = self.lua.0.borrow_mut();
        let budget = slot.budget;
        let vm = match slot.vm() {
            Ok(vm) => vm,
            Err(e) => return Reply::Error(e),
        };
        let func = match vm.cache.raw_get::<Function>(sha) {
            Ok(func) => func,
            Err(e) => return Reply::Error(format!("ERR Error running script {sha}, {}", lua_error_message(&e))),
        };
        // The data is lent to the VM for the run and taken back after it, whatever happened.
        vm.lua.set_app_data(Dispatch {
            data: std::mem::take(ks),
            now_ms,
            exec,
        });
        let outcome = (|| {
            vm.begin_run::<D>()?;
            let bytes = keys
                .iter()
                .chain(argv)
                .map(|a| lua_string_bytes(a.len()))
                .sum::<usize>();
            let (keys, argv) = with_cap_lifted_if_safe(&vm.lua, bytes + 2 * LUA_TABLE_BYTES, || {
                Ok::<_, mlua::Error>((string_table(&vm.lua, keys)?, string_table(&vm.lua, argv)?))
            })?;
            let (ok, value) = vm.run.call::<(bool, Value)>((func, keys, argv, &vm.handler))?;
            if vm.state.exceeded.get() {
                return Ok(Reply::Error(match vm.state.killed_by.get() {
                    Kill::Budget => format!("ERR Script killed: exceeded instruction budget of {budget}"),
                    Kill::Stopped => {
                        format!("{STOPPED_KILLED} from outside the simulation (a wall-clock limit of the exploration)")
                    }
                    Kill::WallGuard(limit) => format!(
                        "{WALL_GUARD_KILLED} of {} ms of a real-time server (lockstep serve / live; Redis would \
                         answer BUSY to other clients meanwhile)",
                        limit.as_millis()
                    ),
                }));
            }
            if ok {
                Ok(lua_to_reply(&value, 0))
            } else {
                Ok(script_error_reply(&vm.lua, sha, &value))
            }
        })();
        if let Some(lent) = vm.lua.remove_app_data::<Dispatch<D>>() {
            *ks = lent.data;
        }
        // The garbage of a big script is not kept until the VM's next allocations (a script may
        // leave 60 MB). Measured from what the VM held after its last collection, so that a
        // world whose servers cache many scripts is not collected after every script.
        if vm.lua.used_memory() > vm.collect_above {
            let _ = vm.lua.gc_collect();
            vm.collect_above = vm.lua.used_memory().saturating_add(LUA_COLLECT_ABOVE);
        }
        match outcome {
            Ok(reply) => reply,
            Err(e) => Reply::Error(format!("ERR Error running script {sha}, {}", lua_error_message(&e))),
        }
    }
}

impl Drop for ScriptRuntime {
    /// The world's VM forgets the scripts only this server cached.
    fn drop(&mut self) {
        self.flush();
    }
}

impl Vm {
    fn new(budget: u64) -> mlua::Result<Vm> {
        let lua = Lua::new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH, LuaOptions::default())?;
        // A failure to cap memory only loses the cap.
        let _ = lua.set_memory_limit(LUA_MEMORY_LIMIT);
        let state = Rc::new(RunState::default());
        state.seed(0);

        let st = state.clone();
        let sha1hex = lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return raise("ERR wrong number of arguments");
            }
            if let Some(Value::String(s)) = args.front() {
                st.charge(s.as_bytes().len() as u64 / BYTES_PER_UNIT)?;
            }
            let bytes = match args.front() {
                Some(Value::String(s)) => s.as_bytes().to_vec(),
                Some(v @ (Value::Integer(_) | Value::Number(_))) => lua
                    .coerce_string(v.clone())?
                    .map(|s| s.as_bytes().to_vec())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            Ok(sha1_hex(&bytes))
        })?;
        let error_reply = lua.create_function(|lua, args: MultiValue| match single_string(&args) {
            Some(s) => {
                let buf = if s.starts_with('-') { s } else { format!("-{s}") };
                err_table(lua, &push_error_text(&buf))
            }
            None => err_table(lua, "ERR wrong number or type of arguments"),
        })?;
        let status_reply = lua.create_function(|lua, args: MultiValue| match args.front() {
            Some(Value::String(s)) if args.len() == 1 => {
                let t = lua.create_table()?;
                t.raw_set("ok", s.clone())?;
                Ok(Value::Table(t))
            }
            _ => err_table(lua, "ERR wrong number or type of arguments"),
        })?;
        let log = lua.create_function(|lua, args: MultiValue| {
            if args.len() < 2 {
                return raise("ERR redis.log() requires two arguments or more.");
            }
            let level = args.front().cloned().map(|v| lua.coerce_number(v));
            let Some(Ok(Some(level))) = level else {
                return raise("ERR First argument must be a number (log level).");
            };
            if !(0..=3).contains(&(level as i64)) || level <= -1.0 {
                return raise("ERR Invalid debug level.");
            }
            Ok(())
        })?;
        let setresp = lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return raise("ERR redis.setresp() requires one argument.");
            }
            let v = args.front().cloned().map(|v| lua.coerce_number(v));
            match v {
                Some(Ok(Some(n))) if n as i64 == 2 => Ok(()),
                Some(Ok(Some(n))) if n as i64 == 3 => raise("ERR RESP3 is not supported by this simulated server."),
                _ => raise("ERR RESP version must be 2 or 3."),
            }
        })?;
        let set_repl = lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return raise("ERR redis.set_repl() requires two arguments.");
            }
            let flags = args
                .front()
                .cloned()
                .and_then(|v| lua.coerce_number(v).ok().flatten())
                .unwrap_or(0.0) as i64;
            if !(0..=3).contains(&flags) {
                return raise("ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
            }
            Ok(())
        })?;
        let st = state.clone();
        let random = lua.create_function(move |lua, args: MultiValue| {
            const MAX: i64 = 2_147_483_647;
            let r = (st.next() % MAX) as f64 / MAX as f64;
            match args.len() {
                0 => Ok(r),
                1 => {
                    let u = check_int(lua, &args, 0, "random")?;
                    if u < 1 {
                        return Err(mlua::Error::runtime("bad argument #1 to 'random' (interval is empty)"));
                    }
                    Ok((r * u as f64).floor() + 1.0)
                }
                2 => {
                    let l = check_int(lua, &args, 0, "random")?;
                    let u = check_int(lua, &args, 1, "random")?;
                    if l > u {
                        return Err(mlua::Error::runtime("bad argument #2 to 'random' (interval is empty)"));
                    }
                    Ok((r * (u - l + 1) as f64).floor() + l as f64)
                }
                _ => Err(mlua::Error::runtime("wrong number of arguments")),
            }
        })?;
        let st = state.clone();
        let randomseed = lua.create_function(move |lua, args: MultiValue| {
            st.seed(check_int(lua, &args, 0, "randomseed")? as i32);
            Ok(())
        })?;
        let st = state.clone();
        let budget_exceeded = lua.create_function(move |_, ()| Ok(st.exceeded.get()))?;
        let error_text = lua.create_function(|lua, v: Value| match v {
            Value::Error(e) => Ok(Value::String(
                lua.create_string(raised_text(&e).unwrap_or_else(|| lua_error_message(&e)))?,
            )),
            other => Ok(other),
        })?;

        let builtins = install_builtins(&lua, &state)?;

        let ctl: Table = helper_chunk(&lua)?.call((
            builtins,
            sha1hex,
            error_reply,
            status_reply,
            log,
            setresp,
            set_repl,
            random,
            randomseed,
            budget_exceeded,
            error_text,
        ))?;
        lua.set_named_registry_value(GMATCH_FACTORY, ctl.get::<Function>("make_gmatch")?)?;
        let run: Function = ctl.get("run")?;
        let set_dispatch: Function = ctl.get("set_dispatch")?;
        let handler = lua.create_function(error_handler)?;

        let cache = lua.create_table()?;
        let collect_above = lua.used_memory().saturating_add(LUA_COLLECT_ABOVE);
        Ok(Vm {
            lua,
            run,
            set_dispatch,
            handler,
            compiled: BTreeMap::new(),
            cache,
            cached_bytes: 0,
            state,
            dispatch_for: None,
            budget,
            collect_above,
        })
    }

    /// Starts a script run on data of type `D`: a fresh [`RunState`], `redis.call` for `D`, and
    /// the instruction count of the budget hook restarted. Lua counts down to the next hook
    /// call across runs, so without the restart where a runaway script is stopped would depend
    /// on the instructions of the scripts the VM ran before it, on a world's VM other servers'
    /// scripts; with it, it depends on nothing but the script. Setting the hook is what
    /// restarts Lua's count.
    fn begin_run<D: 'static>(&mut self) -> mlua::Result<()> {
        self.state.begin(self.budget);
        self.make_dispatch::<D>()?;
        let budget = self.budget;
        let every = budget.clamp(1, 10_000);
        // The hook fires every `fine` instructions to look for a stop from outside or a passed
        // wall-clock guard; the budget is counted and checked every `every`, as it always was.
        let fine = if every.is_multiple_of(HOOK_EVERY) {
            HOOK_EVERY
        } else {
            every
        };
        let since = Cell::new(0u64);
        let st = self.state.clone();
        self.lua
            .set_global_hook(HookTriggers::new().every_nth_instruction(fine as u32), move |lua, _| {
                if st.exceeded.get() || st.interrupted() {
                    st.exceeded.set(true);
                    return Err(mlua::Error::runtime("Script killed: instruction budget"));
                }
                // A large heap: each instruction may copy or compare strings of its size.
                let heap = lua.used_memory() as u64;
                if heap > LARGE_HEAP {
                    let executed = st
                        .executed
                        .get()
                        .saturating_add(fine.saturating_mul(heap / HEAP_BYTES_PER_UNIT));
                    st.executed.set(executed);
                    if executed >= budget {
                        st.exceeded.set(true);
                        return Err(mlua::Error::runtime("Script killed: instruction budget"));
                    }
                }
                let counted = since.get() + fine;
                if counted < every {
                    since.set(counted);
                    return Ok(VmState::Continue);
                }
                since.set(0);
                let executed = st.executed.get().saturating_add(every);
                st.executed.set(executed);
                if executed >= budget {
                    st.exceeded.set(true);
                    return Err(mlua::Error::runtime("Script killed: instruction budget"));
                }
                Ok(VmState::Continue)
            })
    }

    /// Makes `redis.call` and `redis.pcall` for data of type `D`, unless they are made already.
    /// They reach the data through the VM's app data ([`Dispatch`]), lent only while a script
    /// runs.
    fn make_dispatch<D: 'static>(&mut self) -> mlua::Result<()> {
        if self.dispatch_for == Some(TypeId::of::<D>()) {
            return Ok(());
        }
        // A command's arguments are copied out of the VM: charged by their bytes.
        let charge = |state: &RunState, args: &MultiValue| {
            let bytes: usize = args
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.as_bytes().len(),
                    _ => 0,
                })
                .sum();
            state.charge(bytes as u64 / BYTES_PER_UNIT)
        };
        let st = self.state.clone();
        let call = self.lua.create_function(move |lua, args: MultiValue| {
            charge(&st, &args)?;
            match dispatch::<D>(lua, args, &st)? {
                Ok(value) => Ok(value),
                Err(text) => raise(text),
            }
        })?;
        let st = self.state.clone();
        let pcall = self.lua.create_function(move |lua, args: MultiValue| {
            charge(&st, &args)?;
            match dispatch::<D>(lua, args, &st)? {
                Ok(value) => Ok(value),
                Err(text) => err_table(lua, &text),
            }
        })?;
        self.set_dispatch.call::<()>((call, pcall))?;
        self.dispatch_for = Some(TypeId::of::<D>());
        Ok(())
    }
}

thread_local! {
    /// [`HELPER_LUA`] compiled and dumped by the first VM of the thread: every VM after it loads
    /// this bytecode instead of parsing the source, which was two fifths of making a VM (a
    /// thread runs world after world, each making one). The dump keeps the debug information (chunk name, lines), so
    /// the loaded chunk is the compiled one.
    static HELPER_BYTECODE: OnceCell<Vec<u8>> = const { OnceCell::new() };
}

/// [`HELPER_LUA`] as a function of `lua`, always loaded from the thread's bytecode. The first
/// VM of a thread does not compile it itself: parsing leaves garbage and interned strings
/// behind, and that VM would then hold more memory (`used_memory_lua`, `gcinfo`) and collect
/// at other moments than the VMs after it, so a world's figures would depend on whether it was
/// the first world its thread ran (`explore --jobs`). Compiled in a scratch state instead.
fn helper_chunk(lua: &Lua) -> mlua::Result<Function> {
    HELPER_BYTECODE.with(|bytecode| {
        let bytes = match bytecode.get() {
            Some(bytes) => bytes,
            None => {
                let scratch = Lua::new_with(StdLib::NONE, LuaOptions::default())?;
                let chunk = scratch
                    .load(HELPER_LUA)
                    .set_name(HELPER_CHUNK_NAME)
                    .set_mode(ChunkMode::Text)
                    .into_function()?;
                bytecode.get_or_init(|| chunk.dump(false))
            }
        };
        lua.load(bytes.as_slice())
            .set_name(HELPER_CHUNK_NAME)
            .set_mode(ChunkMode::Binary)
            .into_function()
    })
}

/// The registry name of the helper's `make_gmatch`.
const GMATCH_FACTORY: &str = "lockstep.make_gmatch";

/// How a wrapped C library function is charged to the budget.
#[derive(Clone, Copy)]
enum Cost {
    /// By the bytes of its first argument (a string).
    Input,
    /// By the bytes of its first result (a string).
    Output,
    /// By the length of its first argument (a table), times this many units an element.
    Elements(u64),
    /// By how many values it returns (`unpack`, `string.byte`: up to Lua's 8,000 a call;
    /// `string.char` is charged by its arguments, see [`install_builtins`]).
    Results,
    /// By the bytes of its first argument (source text), times [`COMPILE_UNITS_PER_BYTE`]:
    /// `loadstring`.
    Compile,
    /// By the heap the VM holds, a unit a byte, when it collects (`collectgarbage()`,
    /// `'collect'`, `'step'`): a collection marks and sweeps all of it, a few nanoseconds a
    /// byte.
    Collect,
    /// Nothing: wrapped for the read-only check only (`rawset`, `setmetatable`,
    /// `getmetatable`).
    Free,
    /// [`COROUTINE_UNITS`]: a coroutine's last instructions escape the hook's count.
    Coroutine,
}

/// What making a coroutine costs: the instructions of its last, partial hook period, which the
/// hook never counts (each thread counts from its start).
const COROUTINE_UNITS: u64 = HOOK_EVERY;

/// The error a write to a read-only table raises from a library function (no position, as
/// Redis' patched C functions raise it).
const READONLY_ERROR: &str = "Attempt to modify a readonly table";

/// Whether `v` is a read-only table of the sandbox: its metatable's `__metatable` is one of the
/// marks the helper put in `marks`.
fn is_readonly(marks: &Table, v: Option<&Value>) -> bool {
    let Some(Value::Table(t)) = v else {
        return false;
    };
    let Some(mt) = t.metatable() else {
        return false;
    };
    match mt.raw_get::<Value>("__metatable") {
        Ok(m @ Value::Table(_)) => !matches!(
            marks.raw_get::<Value>(m),
            Ok(Value::Nil | Value::Boolean(false)) | Err(_)
        ),
        _ => false,
    }
}

/// Units `loadstring` costs per byte of source: Lua's lexer and parser spend tens of
/// nanoseconds a byte, several instructions' worth (issue 48: a loop compiling a 1 MB source
/// ran for minutes on a budget of VM instructions).
const COMPILE_UNITS_PER_BYTE: u64 = 8;

/// The most values a C function may push at once (Lua 5.1's `LUAI_MAXCSTACK`).
const LUA_RESULTS_MAX: i32 = 8000;

/// Units a value returned or taken by `unpack`, `string.byte` or `string.char` costs: each
/// crosses into Rust and back, some 80 ns (measured), a dozen instructions' worth.
const VALUE_UNITS: u64 = 16;

/// Units each element of a `redis.call` reply costs: the command's own work, which grows with
/// what it returns (`KEYS *`, `SMEMBERS`, `LRANGE 0 -1`), and the element made into a Lua
/// value in a table — some 3 µs in all (measured over 200,000–300,000 elements), hundreds of
/// instructions' worth; its bytes are charged besides, a unit per [`BYTES_PER_UNIT`].
const REPLY_ELEMENT_UNITS: u64 = 256;

/// Replaces the library functions whose work depends on their arguments' size with versions
/// that charge the run's budget for it (the instruction hook does not fire inside C
/// functions): pattern matching and `string.rep` are Rust ([`pattern`]), charging every step;
/// the others stay Lua's C functions, called through a Rust function that charges by the
/// bytes or elements they handle. Returns what the helper chunk needs (`gmatch_step`).
/// Installed in the real `string` and `table` tables, which the string metatable (`s:rep()`)
/// and the sandbox's read-only views both reach.
fn install_builtins(lua: &Lua, state: &Rc<RunState>) -> mlua::Result<Table> {
    let globals = lua.globals();
    let string: Table = globals.get("string")?;
    let table: Table = globals.get("table")?;
    let coroutine: Table = globals.get("coroutine")?;
    // Filled by the helper: the marks of read-only tables (see `is_readonly`).
    let marks = lua.create_table()?;
    let st = state.clone();
    string.set(
        "rep",
        lua.create_function(move |lua, args: MultiValue| pattern::rep(lua, args, &st))?,
    )?;
    let st = state.clone();
    string.set(
        "find",
        lua.create_function(move |lua, args: MultiValue| pattern::find(lua, args, &st, true))?,
    )?;
    let st = state.clone();
    string.set(
        "match",
        lua.create_function(move |lua, args: MultiValue| pattern::find(lua, args, &st, false))?,
    )?;
    let st = state.clone();
    string.set(
        "gsub",
        lua.create_function(move |lua, args: MultiValue| pattern::gsub(lua, args, &st))?,
    )?;
    string.set(
        "gmatch",
        lua.create_function(|lua, args: MultiValue| pattern::gmatch(lua, args, GMATCH_FACTORY))?,
    )?;
    for (lib, name, cost) in [
        (&string, "upper", Cost::Input),
        (&string, "lower", Cost::Input),
        (&string, "reverse", Cost::Input),
        (&string, "sub", Cost::Input),
        (&string, "format", Cost::Output),
        (&table, "concat", Cost::Output),
        // Sorting n elements compares about n log n times.
        (&table, "sort", Cost::Elements(24)),
        (&table, "insert", Cost::Elements(1)),
        (&table, "remove", Cost::Elements(1)),
        (&globals, "tonumber", Cost::Input),
        (&string, "byte", Cost::Results),
        (&globals, "unpack", Cost::Results),
        (&globals, "loadstring", Cost::Compile),
        (&globals, "collectgarbage", Cost::Collect),
        (&globals, "rawset", Cost::Free),
        (&globals, "setmetatable", Cost::Free),
        (&globals, "getmetatable", Cost::Free),
        (&coroutine, "create", Cost::Coroutine),
        (&coroutine, "wrap", Cost::Coroutine),
    ] {
        let original: Function = lib.get(name)?;
        let st = state.clone();
        let marks = marks.clone();
        let guarded = matches!(name, "rawset" | "setmetatable" | "insert" | "remove" | "sort");
        let wrapped = lua.create_function(move |lua, args: MultiValue| {
            if guarded && is_readonly(&marks, args.front()) {
                return Err(mlua::Error::runtime(READONLY_ERROR));
            }
            // Charged before the work where its size is known, so that the work a budget cannot
            // pay for is never done.
            match (cost, args.front()) {
                (Cost::Input, Some(Value::String(s))) => st.charge(s.as_bytes().len() as u64 / BYTES_PER_UNIT)?,
                (Cost::Elements(k), Some(Value::Table(t))) => st.charge((t.raw_len() as u64).saturating_mul(k))?,
                (Cost::Compile, Some(Value::String(s))) => {
                    st.charge((s.as_bytes().len() as u64).saturating_mul(COMPILE_UNITS_PER_BYTE))?
                }
                (Cost::Collect, None | Some(Value::Nil)) => st.charge(lua.used_memory() as u64)?,
                (Cost::Collect, Some(Value::String(option))) if ["collect", "step"].contains(&&*option.to_str()?) => {
                    st.charge(lua.used_memory() as u64)?
                }
                (Cost::Coroutine, _) => st.charge(COROUTINE_UNITS)?,
                // Also called by the helper while the VM is made, with no run (nor budget).
                (Cost::Free, _) => {}
                _ => st.charge(0)?,
            }
            // Lua 5.1's `unpack` computes its count in a C `int`: a range such as
            // `unpack(t, -2, 2147483647)` overflows it and trips an assertion that aborts the
            // whole process. Redis patched it to refuse; so does this, before Lua sees it.
            if name == "unpack" {
                let int_at = |k: usize| match args.get(k) {
                    Some(Value::Integer(n)) => Some(*n as i128),
                    Some(Value::Number(f)) if f.is_finite() => Some(*f as i128),
                    _ => None,
                };
                let first = int_at(1).unwrap_or(1);
                let last = match int_at(2) {
                    Some(last) => last,
                    None => match args.front() {
                        Some(Value::Table(t)) => t.raw_len() as i128,
                        _ => 0,
                    },
                };
                if last - first + 1 > i128::from(LUA_RESULTS_MAX) {
                    return Err(lua_error(lua, "too many results to unpack".to_string()));
                }
            }
            let mut out = original.call::<MultiValue>(args).map_err(|e| c_error(lua, name, e))?;
            // The marks of the sandbox's read-only tables that Redis shows as no metatable.
            if name == "getmetatable" {
                if let Some(m @ Value::Table(_)) = out.front() {
                    if let Ok(Value::String(kind)) = marks.raw_get::<Value>(m.clone()) {
                        if kind.as_bytes().as_ref() == b"hidden" {
                            out = MultiValue::from_iter([Value::Nil]);
                        }
                    }
                }
            }
            match (cost, out.front()) {
                (Cost::Output, Some(Value::String(s))) => st.charge(s.as_bytes().len() as u64 / BYTES_PER_UNIT)?,
                (Cost::Results, _) => st.charge((out.len() as u64).saturating_mul(VALUE_UNITS))?,
                _ => {}
            }
            Ok(out)
        })?;
        lib.set(name, wrapped)?;
    }
    // `string.char` in Rust, charged by its arguments: called through a Rust wrapper, Lua's
    // own would need its arguments twice on the stack (8,000 slots), and fail on half as many.
    let st = state.clone();
    string.set(
        "char",
        lua.create_function(move |lua, args: MultiValue| {
            st.charge((args.len() as u64).saturating_mul(VALUE_UNITS))?;
            let mut bytes = Vec::with_capacity(args.len());
            for i in 0..args.len() {
                let c = check_int(lua, &args, i, "char").map_err(|e| lua_error(lua, lua_error_message(&e)))?;
                if !(0..=255).contains(&c) {
                    return Err(lua_error(
                        lua,
                        format!("bad argument #{} to 'char' (invalid value)", i + 1),
                    ));
                }
                bytes.push(c as u8);
            }
            lua.create_string(&bytes)
        })?,
    )?;
    let st = state.clone();
    table.set(
        "maxn",
        lua.create_function(move |lua, args: MultiValue| {
            let Some(Value::Table(t)) = args.front() else {
                let got = match args.front() {
                    None => "no value",
                    Some(v) => v.type_name(),
                };
                return Err(lua_error(
                    lua,
                    format!("bad argument #1 to 'maxn' (table expected, got {got})"),
                ));
            };
            let (mut max, mut entries) = (0f64, 0u64);
            for pair in t.clone().pairs::<Value, Value>() {
                let (key, _) = pair?;
                entries += 1;
                match key {
                    Value::Number(n) if n > max => max = n,
                    Value::Integer(i) if i as f64 > max => max = i as f64,
                    _ => {}
                }
            }
            st.charge(entries)?;
            Ok(max)
        })?,
    )?;
    let builtins = lua.create_table()?;
    builtins.raw_set("readonly_marks", marks)?;
    builtins.raw_set("cjson", cjson::module(lua, state)?)?;
    builtins.raw_set("cmsgpack", cmsgpack::module(lua, state)?)?;
    builtins.raw_set("struct", lstruct::module(lua, state)?)?;
    let st = state.clone();
    builtins.raw_set(
        "gmatch_step",
        lua.create_function(move |lua, args: MultiValue| pattern::gmatch_step(lua, args, &st))?,
    )?;
    // Raising and catching an error costs far more than an instruction (mlua builds the
    // error and its traceback): a loop of caught errors is charged for it.
    let st = state.clone();
    builtins.raw_set(
        "caught",
        lua.create_function(move |_, ()| st.charge(CAUGHT_ERROR_UNITS))?,
    )?;
    Ok(builtins)
}

/// What `pcall` or `xpcall` catching an error costs the budget: about what raising one takes,
/// in instructions.
const CAUGHT_ERROR_UNITS: u64 = 2_000;

/// An error of a C library function called from Rust: Lua names the function `?` and gives
/// no position, as its caller is not Lua code; named and positioned as a direct call would be.
fn c_error(lua: &Lua, name: &str, e: mlua::Error) -> mlua::Error {
    match e {
        // An error that already has a position came from Lua code the function called (a
        // `table.sort` comparator): it passes through unchanged, as it would in Lua.
        // mlua appends a traceback; Lua's message is what comes before it.
        mlua::Error::RuntimeError(m) => {
            let m = m.split("\nstack traceback:").next().unwrap_or_default();
            // An error the VM itself raises while a C function runs (`luaG_runerror`: `rawset`'s
            // `table index is nil`, `table.sort`'s `attempt to compare ...`) has no position.
            if has_position(m) || m.starts_with("table index is ") || m.starts_with("attempt to ") {
                return mlua::Error::runtime(m);
            }
            // Lua names a function only when Lua code called it (`pcall(string.upper)`: `?`).
            let prefix = caller_prefix(lua);
            let m = match m.split_once(" to '?'") {
                Some((head, tail)) if head.starts_with("bad argument #") && !prefix.is_empty() => {
                    format!("{head} to '{name}'{tail}")
                }
                _ => m.to_string(),
            };
            mlua::Error::runtime(format!("{prefix}{m}"))
        }
        other => other,
    }
}

/// Whether an error message starts with a Lua position (`user_script:3: `).
fn has_position(message: &str) -> bool {
    let Some((source, rest)) = message.split_once(':') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    !source.contains(' ') && digits > 0 && rest[digits..].starts_with(": ")
}

/// `luaL_checkint` for argument `i` (0-based) of `fname`.
fn check_int(lua: &Lua, args: &MultiValue, i: usize, fname: &str) -> mlua::Result<i64> {
    let v = args.get(i).cloned().unwrap_or(Value::Nil);
    let type_name = if i < args.len() { v.type_name() } else { "no value" };
    match lua.coerce_number(v)? {
        Some(n) => Ok(n as i64),
        None => Err(mlua::Error::runtime(format!(
            "bad argument #{} to '{fname}' (number expected, got {type_name})",
            i + 1
        ))),
    }
}

/// Body of `redis.call`/`redis.pcall`: runs the command on the data lent for the run
/// ([`Dispatch`]) and converts the reply; `Err(text)` is a Redis error (a command error reply or
/// a script-level refusal) as its `err` text.
fn dispatch<D: 'static>(lua: &Lua, args: MultiValue, state: &RunState) -> mlua::Result<Result<Value, String>> {
    if args.is_empty() {
        return Ok(Err(
            "ERR Please specify at least one argument for this redis lib call".to_string()
        ));
    }
    let mut argv = Vec::with_capacity(args.len());
    for v in args.iter() {
        match v {
            Value::String(s) => argv.push(Bytes::copy_from_slice(&s.as_bytes())),
            Value::Integer(i) => argv.push(Bytes::from(fmt_g(*i as f64, 17))),
            Value::Number(n) => argv.push(Bytes::from(fmt_g(*n, 17))),
            _ => {
                return Ok(Err(
                    "ERR Lua redis lib command arguments must be strings or integers".to_string()
                ))
            }
        }
    }
    let reply = {
        // Lent and not borrowed: a script runs. Borrowed: a command `redis.call` runs called it.
        let Ok(Some(mut lent)) = lua.try_app_data_mut::<Dispatch<D>>() else {
            return Ok(Err("ERR redis.call/pcall recursive call detected".to_string()));
        };
        let (now_ms, exec) = (lent.now_ms, lent.exec);
        exec(&mut lent.data, &argv, now_ms)
    };
    match reply {
        Err(refusal) => Ok(Err(push_error_text(refusal))),
        Ok(Reply::Error(e)) => Ok(Err(push_error_text(&format!("-{e}")))),
        Ok(reply) => {
            // The reply is charged by its size before it is made into Lua values (issue 48: a
            // loop of `KEYS *` over 300,000 keys ran for minutes on a budget of instructions).
            state.charge(reply_units(&reply))?;
            Ok(Ok(with_cap_lifted_if_safe(lua, lua_bytes(&reply), || {
                reply_to_lua(lua, &reply)
            })?))
        }
    }
}

/// What a `redis.call` reply costs the budget: [`REPLY_ELEMENT_UNITS`] an element of an array
/// (nested ones included), and a unit per [`BYTES_PER_UNIT`] bytes of its strings. A small
/// reply (a lock script's `GET`, `SET`, `PEXPIRE`) costs nothing.
fn reply_units(reply: &Reply) -> u64 {
    fn walk(reply: &Reply, elements: &mut u64, bytes: &mut u64) {
        match reply {
            Reply::Integer(_) | Reply::Bulk(None) | Reply::Array(None) => {}
            Reply::Bulk(Some(b)) => *bytes += b.len() as u64,
            Reply::Status(s) | Reply::Error(s) => *bytes += s.len() as u64,
            Reply::Array(Some(items)) => {
                *elements += items.len() as u64;
                for item in items {
                    walk(item, elements, bytes);
                }
            }
        }
    }
    let (mut elements, mut bytes) = (0, 0);
    walk(reply, &mut elements, &mut bytes);
    elements.saturating_mul(REPLY_ELEMENT_UNITS) + bytes / BYTES_PER_UNIT
}

/// What a Lua table costs at most besides its array slots: its header and the hash part of
/// the few named fields a reply table has.
const LUA_TABLE_BYTES: usize = 256;

/// What a Lua string of `len` bytes costs at most in the heap, with its slot in a table.
fn lua_string_bytes(len: usize) -> usize {
    len.saturating_add(64)
}

/// The most the Lua values of `reply` ([`reply_to_lua`]) can add to the heap.
fn lua_bytes(reply: &Reply) -> usize {
    match reply {
        Reply::Integer(_) | Reply::Bulk(None) | Reply::Array(None) => 0,
        Reply::Bulk(Some(b)) => lua_string_bytes(b.len()),
        Reply::Status(s) | Reply::Error(s) => LUA_TABLE_BYTES + lua_string_bytes(s.len() + 16),
        // The array part grows by doubling as items are added: at most twice the final size.
        Reply::Array(Some(items)) => items
            .iter()
            .map(|item| lua_bytes(item).saturating_add(32))
            .fold(LUA_TABLE_BYTES, usize::saturating_add),
    }
}

/// Runs `f`, which adds at most `bytes` to the Lua heap, with the VM's memory cap lifted when
/// those bytes cannot reach it. With a cap, mlua makes every call that may allocate through a
/// protected call, which itself allocates a closure; without one it calls the Lua API directly.
/// The outcome is the same, since no allocation could have failed: the string table doubling
/// as it grows is bounded by what the heap holds already (one pointer per string), hence the
/// margin of the heap's own size.
fn with_cap_lifted_if_safe<R>(lua: &Lua, bytes: usize, f: impl FnOnce() -> R) -> R {
    let used = lua.used_memory();
    if used.saturating_mul(2).saturating_add(bytes) >= LUA_MEMORY_LIMIT || lua.set_memory_limit(0).is_err() {
        return f();
    }
    let out = f();
    let _ = lua.set_memory_limit(LUA_MEMORY_LIMIT);
    out
}

/// The `xpcall` message handler: Redis' `__redis__err__handler`. It turns the error into an
/// `{err=..}` table and records the line of the nearest `@user_script` frame (Redis looks two
/// or three levels up, which is the same frame for everything a script can call).
fn error_handler(lua: &Lua, err: Value) -> mlua::Result<Table> {
    let t = match err {
        Value::Table(t) => t,
        Value::Error(e) if raised_text(&e).is_some() => {
            let t = lua.create_table()?;
            t.raw_set("err", raised_text(&e).unwrap_or_default())?;
            t
        }
        other => {
            let t = lua.create_table()?;
            t.raw_set("err", format!("ERR {}", display_value(lua, &other)))?;
            t
        }
    };
    let mut level = 1;
    while level < 10_000 {
        let Some((is_user, line)) = lua.inspect_stack(level, |d| {
            (d.source().source.as_deref() == Some(USER_SCRIPT), d.current_line())
        }) else {
            break;
        };
        if is_user {
            if let Some(line) = line {
                t.raw_set("source", USER_SCRIPT)?;
                t.raw_set("line", line as i64)?;
            }
            break;
        }
        level += 1;
    }
    Ok(t)
}

/// `luaL_where(L, 1)` for a function of the sandbox: the position (`user_script:3: `) of the
/// code that called it, skipping the sandbox's own Lua frames, or nothing when that is a C
/// function (`pcall`).
fn caller_prefix(lua: &Lua) -> String {
    for level in 1..10_000 {
        let frame = lua.inspect_stack(level, |d| {
            let source = d.source();
            (
                source.source.as_deref() == Some(HELPER_CHUNK_NAME),
                source.what == "C",
                source.short_src.map(|s| s.into_owned()),
                d.current_line(),
            )
        });
        match frame {
            None => break,
            Some((true, ..)) => continue,
            Some((false, false, Some(src), Some(line))) if line > 0 => return format!("{src}:{line}: "),
            Some(_) => break,
        }
    }
    String::new()
}

/// A Lua runtime error raised by a function of the sandbox, positioned as Lua's `luaL_error`.
fn lua_error(lua: &Lua, message: String) -> mlua::Error {
    mlua::Error::runtime(format!("{}{message}", caller_prefix(lua)))
}

/// The reply for a script that raised `value` (after the handler ran).
fn script_error_reply(lua: &Lua, sha: &str, value: &Value) -> Reply {
    let Value::Table(t) = value else {
        let msg = display_value(lua, value);
        let msg: String = msg.chars().take(100).collect();
        return Reply::Error(format!("ERR Error running script {sha}, {msg} "));
    };
    let field = |name: &str| -> Option<String> {
        match t.raw_get::<Value>(name).ok()? {
            v @ (Value::String(_) | Value::Integer(_) | Value::Number(_)) => Some(display_value(lua, &v)),
            _ => None,
        }
    };
    let Some(msg) = field("err") else {
        return Reply::error("ERR Error running script: error object without 'err' field");
    };
    match (field("source"), field("line")) {
        (Some(source), Some(line)) => Reply::Error(format!("{msg} script: {sha}, on {source}:{line}.")),
        _ => Reply::Error(msg),
    }
}

/// Redis reply -> Lua value (`redisProtocolToLuaType`), for non-error replies.
fn reply_to_lua(lua: &Lua, reply: &Reply) -> mlua::Result<Value> {
    Ok(match reply {
        Reply::Status(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", s.as_str())?;
            Value::Table(t)
        }
        Reply::Error(e) => err_table(lua, &push_error_text(&format!("-{e}")))?,
        Reply::Integer(i) => Value::Number(*i as f64),
        Reply::Bulk(Some(b)) => Value::String(lua.create_string(b)?),
        Reply::Bulk(None) | Reply::Array(None) => Value::Boolean(false),
        Reply::Array(Some(items)) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}

/// Lua value -> Redis reply (`luaReplyToRedisReply`, RESP2).
fn lua_to_reply(value: &Value, depth: usize) -> Reply {
    match value {
        Value::String(s) => Reply::Bulk(Some(Bytes::copy_from_slice(&s.as_bytes()))),
        Value::Boolean(true) => Reply::Integer(1),
        Value::Integer(i) => Reply::Integer(*i),
        Value::Number(n) => Reply::Integer(double_to_long_long(*n)),
        Value::Table(t) => table_to_reply(t, depth),
        _ => Reply::Bulk(None),
    }
}

/// C's `(long long)` of a double as x86-64 computes it (`cvttsd2si`): truncation toward zero, and
/// `LLONG_MIN` for NaN and for anything out of range (C leaves that undefined; Redis on ARM
/// would saturate instead).
fn double_to_long_long(n: f64) -> i64 {
    // ±2^63 are exact doubles; everything in [-2^63, 2^63) truncates into range, NaN is outside.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
        n as i64
    } else {
        i64::MIN
    }
}

fn table_to_reply(t: &Table, depth: usize) -> Reply {
    if depth >= MAX_REPLY_DEPTH {
        return Reply::error("ERR reached lua stack limit");
    }
    let get = |k: &str| t.raw_get::<Value>(k).unwrap_or(Value::Nil);
    if let Value::String(s) = get("err") {
        return Reply::Error(s.to_string_lossy());
    }
    if let Value::String(s) = get("ok") {
        return Reply::Status(s.to_string_lossy().replace(['\r', '\n'], " "));
    }
    match get("double") {
        Value::Integer(i) => return Reply::bulk(fmt_g(i as f64, 17)),
        Value::Number(n) => return Reply::bulk(fmt_g(n, 17)),
        _ => {}
    }
    if let Value::String(s) = get("big_number") {
        return Reply::bulk(s.to_string_lossy().replace(['\r', '\n'], " "));
    }
    let mut items = Vec::new();
    for i in 1usize.. {
        let v = t.raw_get::<Value>(i).unwrap_or(Value::Nil);
        if v.is_nil() {
            break;
        }
        items.push(lua_to_reply(&v, depth + 1));
    }
    Reply::Array(Some(items))
}

/// `luaPushErrorBuff`: `-CODE msg` keeps its code, anything else gets `ERR`.
fn push_error_text(buf: &str) -> String {
    let (code, msg) = match buf.strip_prefix('-') {
        Some(rest) => match rest.find(' ') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => ("ERR", rest),
        },
        None => ("ERR", buf),
    };
    format!("{code} {}", msg.trim_matches(['\r', '\n']))
}

fn err_table(lua: &Lua, text: &str) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set("err", text)?;
    Ok(Value::Table(t))
}

fn string_table(lua: &Lua, items: &[Bytes]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(t)
}

fn single_string(args: &MultiValue) -> Option<String> {
    match args.front() {
        Some(Value::String(s)) if args.len() == 1 => Some(s.to_string_lossy()),
        _ => None,
    }
}

/// `tostring` of an error value, deterministic.
fn display_value(lua: &Lua, v: &Value) -> String {
    match v {
        Value::Nil => "nil".to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::String(s) => s.to_string_lossy(),
        Value::Integer(_) | Value::Number(_) => lua
            .coerce_string(v.clone())
            .ok()
            .flatten()
            .map(|s| s.to_string_lossy())
            .unwrap_or_default(),
        Value::Error(e) => raised_text(e).unwrap_or_else(|| lua_error_message(e)),
        other => other.type_name().to_string(),
    }
}

/// The text of a [`RaisedError`] inside an mlua error, if it is one.
fn raised_text(e: &mlua::Error) -> Option<String> {
    match e {
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => raised_text(cause),
        mlua::Error::ExternalError(inner) => inner.downcast_ref::<RaisedError>().map(|r| r.0.clone()),
        _ => None,
    }
}

/// The innermost message of an mlua error, without mlua's decorations.
fn lua_error_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::MemoryError(_) => "not enough memory".to_string(),
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => lua_error_message(cause),
        mlua::Error::ExternalError(inner) => inner.to_string(),
        other => other.to_string(),
    }
}

/// C's `%.<prec>g` for a double (what Redis and Lua use to print numbers).
pub(crate) fn fmt_g(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let p = prec.max(1);
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        format!(
            "{}e{}{:02}",
            strip_fraction_zeros(mantissa),
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        )
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_fraction_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// The Lua half of the sandbox. Receives the Rust functions as chunk arguments and returns the
/// control functions `run` and `set_dispatch`. It only uses locals and upvalues, so scripts
/// cannot affect it through globals.
const HELPER_LUA: &str = r#"
local builtins, sha1hex, error_reply, status_reply, log, setresp, set_repl, random, randomseed,
      budget_exceeded, error_text = ...
local G = _G
local type, error, rawget, rawset, setmetatable, getmetatable, setfenv, getfenv =
      type, error, rawget, rawset, setmetatable, getmetatable, setfenv, getfenv
local raw_pcall, raw_xpcall, raw_loadstring = pcall, xpcall, loadstring

local current_env = nil

local redis = {
  sha1hex = sha1hex, error_reply = error_reply, status_reply = status_reply,
  log = log, setresp = setresp, set_repl = set_repl,
  replicate_commands = function() return true end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  REDIS_VERSION = '7.2.0', REDIS_VERSION_NUM = 459264,
}
math.random = random
math.randomseed = randomseed

-- string.gmatch (Rust, sim/src/redis/lua/pattern.rs) returns the iterator this makes: the state
-- of an iteration lives in Lua, where the memory cap counts it.
local gmatch_step, caught = builtins.gmatch_step, builtins.caught
local function make_gmatch(s, p)
  local pos = 0
  local function take(next_pos, ...)
    if next_pos then pos = next_pos end
    return ...
  end
  return function() return take(gmatch_step(s, p, pos)) end
end

-- pcall/xpcall: Redis' pcall returns the text of error tables; neither may swallow a budget kill.
local KILLED = 'Script killed: instruction budget exceeded'
local function pcall_done(ok, ...)
  if budget_exceeded() then error(KILLED, 0) end
  if ok then return true, ... end
  caught()
  local e = error_text((...))
  if type(e) == 'table' then
    local m = rawget(e, 'err')
    if type(m) == 'string' or type(m) == 'number' then return false, m end
  end
  return false, e
end
local function xpcall_done(ok, ...)
  if budget_exceeded() then error(KILLED, 0) end
  if not ok then caught() end
  return ok, ...
end

local base = {
  assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs,
  rawequal = rawequal, rawget = rawget, rawset = rawset, select = select,
  setmetatable = setmetatable, getmetatable = getmetatable, tonumber = tonumber,
  tostring = tostring, type = type, unpack = unpack, gcinfo = gcinfo,
  collectgarbage = collectgarbage, newproxy = newproxy, _VERSION = _VERSION,
  setfenv = setfenv,
}
base.pcall = function(...) return pcall_done(raw_pcall(...)) end
base.xpcall = function(f, h) return xpcall_done(raw_xpcall(f, h)) end
base.loadstring = function(s, name)
  if type(s) == 'string' and s:byte(1) == 27 then return nil, 'bytecode loading is disabled' end
  local f, e = raw_loadstring(s, name)
  if f then setfenv(f, current_env) end
  return f, e
end
base.getfenv = function(f)
  if f == nil then f = 1 end
  if type(f) == 'number' and f > 0 then f = f + 1 end
  local e = getfenv(f)
  if e == G then return current_env end
  return e
end

-- LuaBitOp's `bit` library (Redis ships it), on 32-bit two's-complement integers, written
-- from its documented semantics (bitop.luajit.org/api.html).
local bit = {}
do
  local W = 4294967296
  local function tobit(x)
    x = math.floor(x + 0.5) % W
    if x >= 2147483648 then x = x - W end
    return x
  end
  local function u(x) return tobit(x) % W end
  local function fold(f, a, ...)
    local r = u(a)
    for i = 1, select('#', ...) do
      local b, out, p = u((select(i, ...))), 0, 1
      local x = r
      for _ = 1, 32 do
        local xa, xb = x % 2, b % 2
        if f(xa, xb) then out = out + p end
        x, b, p = (x - xa) / 2, (b - xb) / 2, p * 2
      end
      r = out
    end
    return tobit(r)
  end
  bit.tobit = tobit
  bit.bnot = function(x) return tobit(-1 - tobit(x)) end
  bit.band = function(...) return fold(function(a, b) return a == 1 and b == 1 end, ...) end
  bit.bor = function(...) return fold(function(a, b) return a == 1 or b == 1 end, ...) end
  bit.bxor = function(...) return fold(function(a, b) return a ~= b end, ...) end
  bit.lshift = function(x, n) return tobit(u(x) * 2 ^ (u(n) % 32)) end
  bit.rshift = function(x, n) return tobit(math.floor(u(x) / 2 ^ (u(n) % 32))) end
  bit.arshift = function(x, n) return tobit(math.floor(tobit(x) / 2 ^ (u(n) % 32))) end
  bit.rol = function(x, n)
    n = u(n) % 32
    local v = u(x)
    return tobit((v * 2 ^ n) % W + math.floor(v / 2 ^ (32 - n)))
  end
  bit.ror = function(x, n) return bit.rol(x, 32 - u(n) % 32) end
  bit.bswap = function(x)
    local v, r = u(x), 0
    for _ = 1, 4 do
      r = r * 256 + v % 256
      v = math.floor(v / 256)
    end
    return tobit(r)
  end
  bit.tohex = function(x, n)
    n = n == nil and 8 or tobit(n)
    local upper = n < 0
    if upper then n = -n end
    if n > 8 or n < 0 then n = 8 end
    local v, digits = u(x), upper and '0123456789ABCDEF' or '0123456789abcdef'
    local out = ''
    for _ = 1, n do
      local d = v % 16
      out = string.sub(digits, d + 1, d + 1) .. out
      v = (v - d) / 16
    end
    return out
  end
end

-- Read-only tables, as Redis 7.0's readonly-table flag makes them: a write to one, by
-- assignment, `rawset`, `setmetatable` or `table.insert`/`remove`/`sort`, raises
-- 'Attempt to modify a readonly table'. A table is read-only when its metatable's
-- __metatable is one of the marks in `readonly_marks` (the Rust wrappers of `rawset`,
-- `setmetatable` and `table.*` look there); `getmetatable` shows `hidden` marks as nil.
local RO = 'Attempt to modify a readonly table'
local function ro_newindex() error(RO, 2) end
local marks = builtins.readonly_marks
local LIB_MARK, ENV_MT_VIEW, STRING_MT_VIEW = {}, {}, {}
local function missing_global(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
setmetatable(LIB_MARK, {__newindex = ro_newindex, __metatable = LIB_MARK})
local function view(t)
  return setmetatable({}, {__index = t, __newindex = ro_newindex, __metatable = LIB_MARK})
end
local string_view = view(string)
local globals = {
  redis = view(redis), string = string_view, math = view(math), table = view(table),
  bit = view(bit), cjson = view(builtins.cjson), cmsgpack = view(builtins.cmsgpack),
  struct = view(builtins.struct), coroutine = view(coroutine),
}
for k, v in pairs(base) do globals[k] = v end
setmetatable(globals, {__index = missing_global})
-- What getmetatable(_G) and getmetatable('') show: read-only views.
setmetatable(ENV_MT_VIEW, {
  __index = view({__index = missing_global, __newindex = ro_newindex}),
  __newindex = ro_newindex, __metatable = LIB_MARK,
})
setmetatable(STRING_MT_VIEW, {
  __index = {__index = string_view}, __newindex = ro_newindex, __metatable = LIB_MARK,
})
local smt = getmetatable('')
if smt then smt.__metatable = STRING_MT_VIEW end
marks[LIB_MARK] = 'hidden'
marks[ENV_MT_VIEW] = true
marks[STRING_MT_VIEW] = true
local vars_mt = {__index = globals}

local function run(f, keys, argv, handler)
  local vars = setmetatable({KEYS = keys, ARGV = argv}, vars_mt)
  local env = setmetatable({}, {__index = vars, __newindex = ro_newindex, __metatable = ENV_MT_VIEW})
  vars._G = env
  current_env = env
  setfenv(f, env)
  return raw_xpcall(f, handler)
end

return {
  run = run,
  set_dispatch = function(call, pcall) redis.call = call; redis.pcall = pcall end,
  make_gmatch = make_gmatch,
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EngineConfig, RedisEngine};

    const RELEASE: &str =
        r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;
    const EXTEND: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#;

    fn args(cmd: &[&str]) -> Vec<Bytes> {
        cmd.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect()
    }
    fn run(e: &mut RedisEngine, cmd: &[&str]) -> Reply {
        e.execute(&args(cmd), 1_000)
    }
    /// EVAL `script` with `keys` then `argv`.
    fn eval(e: &mut RedisEngine, script: &str, keys: &[&str], argv: &[&str]) -> Reply {
        let n = keys.len().to_string();
        let mut cmd = vec!["EVAL", script, n.as_str()];
        cmd.extend_from_slice(keys);
        cmd.extend_from_slice(argv);
        run(e, &cmd)
    }
    fn err(s: &str) -> Reply {
        Reply::Error(s.to_string())
    }
    fn int(i: i64) -> Reply {
        Reply::Integer(i)
    }
    fn bulk(s: &str) -> Reply {
        Reply::Bulk(Some(Bytes::copy_from_slice(s.as_bytes())))
    }
    fn arr(items: Vec<Reply>) -> Reply {
        Reply::Array(Some(items))
    }
    /// Redis 7's suffix for an error raised by a script.
    fn raised(msg: &str, script: &str, line: u32) -> Reply {
        Reply::Error(format!(
            "{msg} script: {}, on @user_script:{line}.",
            sha1_hex(script.as_bytes())
        ))
    }

    #[test]
    fn fmt_g_matches_printf() {
        let cases: &[(f64, usize, &str)] = &[
            (100.0, 17, "100"),
            (-3.0, 17, "-3"),
            (0.5, 17, "0.5"),
            (0.1, 17, "0.10000000000000001"),
            (0.1, 14, "0.1"),
            (1e20, 17, "1e+20"),
            (1e16, 17, "10000000000000000"),
            (1e17, 17, "1e+17"),
            (1.5e-5, 17, "1.5e-05"),
            (0.0001, 14, "0.0001"),
            (1152921504606846976.0, 17, "1.152921504606847e+18"),
            (123456789012.0, 14, "123456789012"),
            (0.0, 17, "0"),
        ];
        for (x, p, want) in cases {
            assert_eq!(fmt_g(*x, *p), *want, "{x} %.{p}g");
        }
    }

    #[test]
    fn lrand48_matches_glibc() {
        let st = RunState::default();
        st.seed(0);
        assert_eq!([st.next(), st.next(), st.next()], [366850414, 1610402240, 206956554]);
    }

    #[test]
    fn push_error_text_like_redis() {
        assert_eq!(push_error_text("-ERR syntax error"), "ERR syntax error");
        assert_eq!(push_error_text("-WRONGTYPE Operation"), "WRONGTYPE Operation");
        assert_eq!(push_error_text("-oops"), "ERR oops");
        assert_eq!(push_error_text("plain text\r\n"), "ERR plain text");
    }

    #[test]
    fn lock_scripts_by_eval() {
        let mut e = RedisEngine::new(EngineConfig::default());
        assert_eq!(run(&mut e, &["SET", "lock", "tok", "PX", "10000"]), Reply::ok());
        // Mismatching token: nothing happens.
        assert_eq!(eval(&mut e, EXTEND, &["lock"], &["other", "50000"]), int(0));
        assert_eq!(run(&mut e, &["PTTL", "lock"]), int(10_000));
        assert_eq!(eval(&mut e, RELEASE, &["lock"], &["other"]), int(0));
        assert_eq!(run(&mut e, &["GET", "lock"]), bulk("tok"));
        // Matching token.
        assert_eq!(eval(&mut e, EXTEND, &["lock"], &["tok", "50000"]), int(1));
        assert_eq!(run(&mut e, &["PTTL", "lock"]), int(50_000));
        assert_eq!(eval(&mut e, RELEASE, &["lock"], &["tok"]), int(1));
        assert_eq!(run(&mut e, &["GET", "lock"]), Reply::nil());
        // Missing key.
        assert_eq!(eval(&mut e, RELEASE, &["lock"], &["tok"]), int(0));
        assert_eq!(eval(&mut e, EXTEND, &["lock"], &["tok", "100"]), int(0));
        assert_eq!(run(&mut e, &["EXISTS", "lock"]), int(0));
    }

    #[test]
    fn unpack_of_an_overflowing_range_is_refused_not_an_abort() {
        let mut e = RedisEngine::new(EngineConfig::default());
        for script in [
            "return {unpack({1,2,3}, -2, 2147483647)}",
            "return {unpack({1,2,3}, 0, 2147483647)}",
            "return {unpack({1,2,3}, -2147483648, -2)}",
        ] {
            let Reply::Error(text) = eval(&mut e, script, &[], &[]) else {
                panic!("{script} answered")
            };
            assert!(text.contains("too many results to unpack"), "{text}");
        }
        assert_eq!(
            eval(&mut e, "return {unpack({1,2,3}, 2)}", &[], &[]),
            Reply::Array(Some(vec![int(2), int(3)]))
        );
    }

    #[test]
    fn the_bit_library_is_luabitops() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let cases = [
            ("return bit.band(0x12345678, 0xff)", 0x78),
            ("return bit.bor(1, 2, 4)", 7),
            ("return bit.bxor(0xff, 0x0f)", 0xf0),
            ("return bit.bnot(0)", -1),
            ("return bit.tobit(0xffffffff)", -1),
            ("return bit.lshift(1, 31)", i64::from(i32::MIN)),
            ("return bit.rshift(-1, 28)", 15),
            ("return bit.arshift(-256, 4)", -16),
            ("return bit.rol(0x12345678, 8)", 0x34567812),
            ("return bit.bswap(0x12345678)", 0x78563412),
        ];
        for (script, want) in cases {
            assert_eq!(eval(&mut e, script, &[], &[]), int(want), "{script}");
        }
        assert_eq!(
            eval(&mut e, "return bit.tohex(65535, -4)", &[], &[]),
            Reply::bulk("FFFF")
        );
        assert_eq!(eval(&mut e, "return bit.tohex(-1)", &[], &[]), Reply::bulk("ffffffff"));
        assert_eq!(
            eval(&mut e, "return bit.tohex(65535, -2147483648)", &[], &[]),
            Reply::bulk("0000FFFF")
        );
    }

    #[test]
    fn script_kill_and_debug() {
        let mut e = RedisEngine::new(EngineConfig::default());
        assert_eq!(
            run(&mut e, &["SCRIPT", "KILL"]),
            err("NOTBUSY No scripts in execution right now.")
        );
        assert_eq!(run(&mut e, &["SCRIPT", "DEBUG", "no"]), Reply::ok());
        assert_eq!(
            run(&mut e, &["SCRIPT", "DEBUG", "maybe"]),
            err("ERR Use SCRIPT DEBUG YES/SYNC/NO")
        );
        assert!(run(&mut e, &["SCRIPT", "DEBUG", "YES"]).is_error());
        assert_eq!(
            run(&mut e, &["SCRIPT", "DEBUG"]),
            err("ERR wrong number of arguments for 'script|debug' command")
        );
        assert_eq!(
            run(&mut e, &["SCRIPT", "KILL", "x"]),
            err("ERR wrong number of arguments for 'script|kill' command")
        );
        assert_eq!(
            run(&mut e, &["EVAL", "return redis.pcall('script', 'kill')", "0"]),
            err("ERR This Redis command is not allowed from script")
        );
    }

    #[test]
    fn lock_scripts_by_evalsha_and_script_commands() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let release_sha = sha1_hex(RELEASE.as_bytes());
        let extend_sha = sha1_hex(EXTEND.as_bytes());
        assert_eq!(
            run(&mut e, &["EVALSHA", &release_sha, "1", "lock", "tok"]),
            err("NOSCRIPT No matching script. Please use EVAL.")
        );
        assert_eq!(run(&mut e, &["SCRIPT", "LOAD", RELEASE]), bulk(&release_sha));
        assert_eq!(run(&mut e, &["SCRIPT", "LOAD", EXTEND]), bulk(&extend_sha));
        assert_eq!(
            run(
                &mut e,
                &[
                    "SCRIPT",
                    "EXISTS",
                    &release_sha,
                    &"f".repeat(40),
                    &extend_sha.to_uppercase()
                ]
            ),
            arr(vec![int(1), int(0), int(1)])
        );
        run(&mut e, &["SET", "lock", "tok", "PX", "10000"]);
        assert_eq!(run(&mut e, &["EVALSHA", &extend_sha, "1", "lock", "bad", "1"]), int(0));
        assert_eq!(
            run(&mut e, &["EVALSHA", &extend_sha, "1", "lock", "tok", "20000"]),
            int(1)
        );
        assert_eq!(run(&mut e, &["PTTL", "lock"]), int(20_000));
        assert_eq!(run(&mut e, &["EVALSHA", &release_sha, "1", "lock", "bad"]), int(0));
        assert_eq!(
            run(&mut e, &["EVALSHA", &release_sha.to_uppercase(), "1", "lock", "tok"]),
            int(1)
        );
        assert_eq!(run(&mut e, &["EXISTS", "lock"]), int(0));
        assert_eq!(run(&mut e, &["SCRIPT", "FLUSH"]), Reply::ok());
        assert_eq!(
            run(&mut e, &["EVALSHA", &release_sha, "1", "lock", "tok"]),
            err("NOSCRIPT No matching script. Please use EVAL.")
        );
        assert_eq!(
            run(&mut e, &["EVALSHA", "abc", "x"]),
            err("NOSCRIPT No matching script. Please use EVAL.")
        );
        // EVAL caches the script for EVALSHA.
        assert_eq!(eval(&mut e, "return 7", &[], &[]), int(7));
        let sha = sha1_hex(b"return 7");
        assert_eq!(run(&mut e, &["EVALSHA", &sha, "0"]), int(7));
        assert_eq!(
            run(&mut e, &["EVAL", "return 1", "2", "a"]),
            err("ERR Number of keys can't be greater than number of args")
        );
        assert_eq!(
            run(&mut e, &["EVAL", "return 1", "-1"]),
            err("ERR Number of keys can't be negative")
        );
        assert_eq!(
            run(&mut e, &["EVAL", "return 1", "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            run(&mut e, &["EVALSHA", &sha, "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            run(&mut e, &["EVAL", "return 1"]),
            err("ERR wrong number of arguments for 'eval' command")
        );
    }

    /// Two engines of one world, on one VM.
    fn world_pair(budget: u64) -> (RedisEngine, RedisEngine) {
        let config = EngineConfig {
            lua_instruction_budget: budget,
        };
        let lua = WorldLua::new(budget);
        (
            RedisEngine::with_lua(config.clone(), lua.clone()),
            RedisEngine::with_lua(config, lua),
        )
    }

    #[test]
    fn servers_sharing_a_vm_keep_their_own_script_caches() {
        let (mut a, mut b) = world_pair(EngineConfig::default().lua_instruction_budget);
        let sha = sha1_hex(RELEASE.as_bytes());
        let noscript = err("NOSCRIPT No matching script. Please use EVAL.");
        assert_eq!(run(&mut a, &["SCRIPT", "LOAD", RELEASE]), bulk(&sha));
        // Loaded on `a` only.
        assert_eq!(run(&mut b, &["SCRIPT", "EXISTS", &sha]), arr(vec![int(0)]));
        assert_eq!(run(&mut b, &["EVALSHA", &sha, "1", "lock", "tok"]), noscript);
        run(&mut a, &["SET", "lock", "tok"]);
        run(&mut b, &["SET", "lock", "tok"]);
        // Each runs on its own keyspace.
        assert_eq!(run(&mut a, &["EVALSHA", &sha, "1", "lock", "tok"]), int(1));
        assert_eq!(run(&mut b, &["GET", "lock"]), bulk("tok"));
        assert_eq!(eval(&mut b, RELEASE, &["lock"], &["tok"]), int(1));
        assert_eq!(run(&mut b, &["SCRIPT", "EXISTS", &sha]), arr(vec![int(1)]));
        // A flush or a restart empties one server's cache, not the other's.
        assert_eq!(run(&mut a, &["SCRIPT", "FLUSH"]), Reply::ok());
        assert_eq!(run(&mut a, &["EVALSHA", &sha, "1", "lock", "tok"]), noscript);
        assert_eq!(run(&mut b, &["EVALSHA", &sha, "1", "lock", "tok"]), int(0));
        b.reset();
        assert_eq!(run(&mut b, &["EVALSHA", &sha, "1", "lock", "tok"]), noscript);
        // Compiled again once no server caches it.
        assert_eq!(eval(&mut a, RELEASE, &["lock"], &["tok"]), int(0));
        drop(a);
        assert_eq!(eval(&mut b, RELEASE, &["lock"], &["tok"]), int(0));
        // The VM is the world's: both report its memory.
        let (a, b) = world_pair(1_000);
        assert_eq!(a.lua_memory(), b.lua_memory());
    }

    #[test]
    fn what_belongs_to_the_whole_vm_is_the_worlds() {
        let (mut a, mut b) = world_pair(EngineConfig::default().lua_instruction_budget);
        // Memory figures are the world VM's.
        assert_eq!(a.lua_memory(), b.lua_memory());
        let used = eval(&mut a, "return collectgarbage('count') * 1024", &[], &[]);
        assert!(
            matches!(used, Reply::Integer(n) if n as usize <= a.lua_memory()),
            "{used:?}"
        );
        // A finalizer left by `a`'s script runs when the world's VM collects it: here during
        // `b`'s script, whose data its `redis.call` reaches.
        let leave =
            "local u = newproxy(true) getmetatable(u).__gc = function() redis.call('set', 'gc', 'ran') end return 1";
        assert_eq!(eval(&mut a, leave, &[], &[]), int(1));
        let collect = "collectgarbage() return redis.call('get', 'gc')";
        assert_eq!(eval(&mut b, collect, &[], &[]), bulk("ran"));
        assert_eq!(run(&mut a, &["GET", "gc"]), Reply::nil());
    }

    #[test]
    fn every_world_of_a_thread_starts_with_the_same_vm() {
        // The first VM of a thread (this test's) holds what the ones after it hold: a world's
        // Lua memory does not depend on the worlds its thread ran before.
        let figures: Vec<(usize, usize)> = (0..3)
            .map(|_| {
                let (mut a, _b) = world_pair(1_000);
                let fresh = a.lua_memory();
                eval(&mut a, RELEASE, &["lock"], &["tok"]);
                (fresh, a.lua_memory())
            })
            .collect();
        assert!(figures.iter().all(|f| *f == figures[0]), "{figures:?}");
    }

    #[test]
    fn where_a_runaway_script_stops_depends_only_on_the_script() {
        // Counts the `redis.call`s a runaway script makes before it is stopped.
        const RUNAWAY: &str = "while true do redis.call('incr', 'n') end";
        let stopped_after = |e: &mut RedisEngine| {
            run(e, &["DEL", "n"]);
            let killed = eval(e, RUNAWAY, &[], &[]);
            assert_eq!(killed, err("ERR Script killed: exceeded instruction budget of 25000"));
            run(e, &["GET", "n"])
        };
        let (mut a, mut b) = world_pair(25_000);
        let alone = stopped_after(&mut a);
        for warm_up in [1, 7, 333, 4_321] {
            // Another server's scripts of any length, and this one's, move nothing.
            let script = format!("local s = 0 for i = 1, {warm_up} do s = s + i end return 1");
            assert_eq!(eval(&mut b, &script, &[], &[]), int(1));
            assert_eq!(stopped_after(&mut a), alone, "after {warm_up} on the other server");
            assert_eq!(eval(&mut a, &script, &[], &[]), int(1));
            assert_eq!(stopped_after(&mut a), alone, "after {warm_up} on this server");
        }
    }

    #[test]
    fn lua_to_resp_conversions() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let cases: Vec<(&str, Reply)> = vec![
            ("return 3.99", int(3)),
            ("return -3.99", int(-3)),
            // x86-64's `(long long)`: NaN and anything outside [-2^63, 2^63) give i64::MIN.
            ("return 2^63", int(i64::MIN)),
            ("return -2^63", int(i64::MIN)),
            ("return 2^62", int(1 << 62)),
            ("return 0/0", int(i64::MIN)),
            ("return 1e300", int(i64::MIN)),
            ("return 42", int(42)),
            ("return true", int(1)),
            ("return false", Reply::nil()),
            ("return nil", Reply::nil()),
            ("return", Reply::nil()),
            ("return 'x'", bulk("x")),
            ("return function() end", Reply::nil()),
            (
                "return {1, 'a', {2, false}, nil, 5}",
                arr(vec![int(1), bulk("a"), arr(vec![int(2), Reply::nil()])]),
            ),
            ("return {}", arr(vec![])),
            ("return {ok='fine'}", Reply::Status("fine".into())),
            ("return {err='BAD thing'}", err("BAD thing")),
            ("return {err='x', ok='y'}", err("x")),
            ("return {1, {err='inner'}}", arr(vec![int(1), err("inner")])),
            ("return redis.error_reply('My Error')", err("My Error")),
            ("return redis.error_reply('oops')", err("ERR oops")),
            ("return redis.error_reply('-WRONGTYPE bad')", err("WRONGTYPE bad")),
            (
                "return redis.error_reply(1)",
                err("ERR wrong number or type of arguments"),
            ),
            ("return redis.status_reply('PONG')", Reply::Status("PONG".into())),
            (
                "return redis.status_reply()",
                err("ERR wrong number or type of arguments"),
            ),
            (
                "return redis.sha1hex('')",
                bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709"),
            ),
            ("return {double=1.5}", bulk("1.5")),
            ("math.randomseed(0) return math.random(100)", int(18)),
            (
                "math.randomseed(0) return {math.random(100), math.random(1, 6)}",
                arr(vec![int(18), int(5)]),
            ),
            ("local s = 0 for i = 1, 1000 do s = s + i end return s", int(500500)),
            ("return string.format('%d-%s', 7, 'x') .. ('ab'):upper()", bulk("7-xAB")),
            ("return table.concat({'a','b'}, ',')", bulk("a,b")),
            ("local f = loadstring('return 5'); return f()", int(5)),
            ("return loadstring(string.dump(function() end))", Reply::nil()),
            (
                "return type(os)",
                err(&format!(
                    "ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: {}, on @user_script:1.",
                    sha1_hex(b"return type(os)")
                )),
            ),
        ];
        for (script, want) in cases {
            assert_eq!(eval(&mut e, script, &[], &[]), want, "{script}");
        }
    }

    #[test]
    fn resp_to_lua_conversions_and_redis_call() {
        let mut e = RedisEngine::new(EngineConfig::default());
        run(&mut e, &["SET", "str", "v"]);
        run(&mut e, &["RPUSH", "list", "a", "b"]);
        let cases: Vec<(&str, Reply)> = vec![
            (
                "return {KEYS[1], ARGV[1], #KEYS, #ARGV}",
                arr(vec![bulk("str"), bulk("a1"), int(1), int(2)]),
            ),
            ("return redis.call('get', 'missing') == false", int(1)),
            ("return type(redis.call('get', 'missing'))", bulk("boolean")),
            ("return redis.call('get', KEYS[1])", bulk("v")),
            ("return redis.call('SET', 'new', 'x')", Reply::ok()),
            ("return redis.call('set', 'new', 'x').ok", bulk("OK")),
            ("return redis.call('incr', 'cnt')", int(1)),
            ("return redis.call('incrby', 'cnt', 41)", int(42)),
            ("return type(redis.call('incr', 'cnt'))", bulk("number")),
            ("return redis.call('lpop', 'list', 5)", arr(vec![bulk("a"), bulk("b")])),
            ("return redis.call('lpop', 'list', 5) == false", int(1)),
            (
                "redis.call('set', 'num', 100); return redis.call('get', 'num')",
                bulk("100"),
            ),
            (
                "redis.call('set', 'num', 1.5); return redis.call('get', 'num')",
                bulk("1.5"),
            ),
            ("return redis.call('ping')", Reply::Status("PONG".into())),
            (
                "return redis.pcall('incr', KEYS[1])",
                err("ERR value is not an integer or out of range"),
            ),
            (
                "return redis.pcall('incr', KEYS[1]).err",
                bulk("ERR value is not an integer or out of range"),
            ),
            (
                "return redis.pcall('rpush', KEYS[1], 'x')",
                err("WRONGTYPE Operation against a key holding the wrong kind of value"),
            ),
            (
                "return redis.pcall('get')",
                err("ERR Wrong number of args calling Redis command from script"),
            ),
            (
                "return redis.pcall('nosuch')",
                err("ERR Unknown Redis command called from script"),
            ),
            (
                "return redis.pcall('client', 'nope')",
                err("ERR Unknown Redis command called from script"),
            ),
            (
                "return redis.pcall('eval', 'return 1', '0')",
                err("ERR This Redis command is not allowed from script"),
            ),
            (
                "return redis.pcall('script', 'flush')",
                err("ERR This Redis command is not allowed from script"),
            ),
            (
                "return redis.pcall()",
                err("ERR Please specify at least one argument for this redis lib call"),
            ),
            (
                "return redis.pcall('get', {})",
                err("ERR Lua redis lib command arguments must be strings or integers"),
            ),
            (
                "return redis.pcall('get', nil)",
                err("ERR Lua redis lib command arguments must be strings or integers"),
            ),
            (
                "local ok, e = pcall(redis.call, 'incr', KEYS[1]); return {tostring(ok), e}",
                arr(vec![bulk("false"), bulk("ERR value is not an integer or out of range")]),
            ),
            ("local ok, e = pcall(error, 'x'); return e", bulk("x")),
            (
                "local ok, e = pcall(function() local t = nil; return t.x end); return e",
                bulk("user_script:1: attempt to index local 't' (a nil value)"),
            ),
            ("redis.log(redis.LOG_WARNING, 'hello'); return 1", int(1)),
            ("return redis.setresp(2)", Reply::nil()),
            ("return redis.REDIS_VERSION", bulk("7.2.0")),
        ];
        for (script, want) in cases {
            assert_eq!(eval(&mut e, script, &["str"], &["a1", "a2"]), want, "{script}");
        }
    }

    #[test]
    fn script_errors_match_redis_7() {
        let mut e = RedisEngine::new(EngineConfig::default());
        run(&mut e, &["SET", "str", "v"]);
        run(&mut e, &["RPUSH", "list", "a"]);
        let cases: Vec<(&str, &str, u32)> = vec![
            (
                "return redis.call('incr', KEYS[1])",
                "ERR value is not an integer or out of range",
                1,
            ),
            (
                "return redis.call('get', 'list')",
                "WRONGTYPE Operation against a key holding the wrong kind of value",
                1,
            ),
            (
                "local a = 1\nlocal b = 2\nreturn redis.call('incr', KEYS[1])",
                "ERR value is not an integer or out of range",
                3,
            ),
            (
                "return redis.call('nosuch')",
                "ERR Unknown Redis command called from script",
                1,
            ),
            (
                "return redis.call()",
                "ERR Please specify at least one argument for this redis lib call",
                1,
            ),
            (
                "return redis.call('get', true)",
                "ERR Lua redis lib command arguments must be strings or integers",
                1,
            ),
            ("error('boom')", "ERR user_script:1: boom", 1),
            ("\nerror('boom', 0)", "ERR boom", 2),
            ("error({err='CUSTOM failure'})", "CUSTOM failure", 1),
            ("error(redis.error_reply('MY err'))", "MY err", 1),
            (
                "return nil + 1",
                "ERR user_script:1: attempt to perform arithmetic on a nil value",
                1,
            ),
            (
                "local t = nil\nreturn t.x",
                "ERR user_script:2: attempt to index local 't' (a nil value)",
                2,
            ),
            (
                "return undefined_fn()",
                "ERR user_script:1: Script attempted to access nonexistent global variable 'undefined_fn'",
                1,
            ),
            ("x = 1", "ERR user_script:1: Attempt to modify a readonly table", 1),
            (
                "redis.call = nil",
                "ERR user_script:1: Attempt to modify a readonly table",
                1,
            ),
            (
                "string.len = nil",
                "ERR user_script:1: Attempt to modify a readonly table",
                1,
            ),
            ("return redis.sha1hex()", "ERR wrong number of arguments", 1),
            (
                "redis.log('x', 'y')",
                "ERR First argument must be a number (log level).",
                1,
            ),
            ("redis.log(9, 'y')", "ERR Invalid debug level.", 1),
            (
                "return math.random(0)",
                "ERR bad argument #1 to 'random' (interval is empty)",
                1,
            ),
            (
                "return redis.setresp(3)",
                "ERR RESP3 is not supported by this simulated server.",
                1,
            ),
            ("return pcall(function() error({err='T x'}) end)", "", 0),
        ];
        for (script, msg, line) in cases {
            let got = eval(&mut e, script, &["str"], &[]);
            if line == 0 {
                // pcall returns false + the err text: the reply is the nil for `false`.
                assert_eq!(got, Reply::nil(), "{script}");
            } else {
                assert_eq!(got, raised(msg, script, line), "{script}");
            }
            // The engine keeps serving after every failed script.
            assert_eq!(run(&mut e, &["GET", "str"]), bulk("v"), "after {script}");
        }
        // A script cannot break the next one.
        assert_eq!(
            eval(&mut e, "return redis.call('get', KEYS[1])", &["str"], &[]),
            bulk("v")
        );
        // As in Redis 7.0, the globals are read-only to `rawset` too.
        let trick = "rawset(_G, 'y', 1) return y";
        assert_eq!(
            eval(&mut e, trick, &[], &[]),
            err(&format!(
                "ERR Attempt to modify a readonly table script: {}, on @user_script:1.",
                sha1_hex(trick.as_bytes())
            ))
        );
        let probe = "return y";
        assert_eq!(
            eval(&mut e, probe, &[], &[]),
            raised(
                "ERR user_script:1: Script attempted to access nonexistent global variable 'y'",
                probe,
                1
            )
        );
        // getfenv(0) gives the run's own environment, not the real globals.
        let escape = "local g = getfenv(0); g.string = nil; return g == _G";
        assert_eq!(
            eval(&mut e, escape, &[], &[]),
            raised("ERR user_script:1: Attempt to modify a readonly table", escape, 1)
        );
        assert_eq!(eval(&mut e, "return getfenv(0) == _G", &[], &[]), int(1));
        assert_eq!(eval(&mut e, "return string.len('ab')", &[], &[]), int(2));
        // The string metatable shows as a read-only table (Redis 7.0: `{__index = string}`).
        assert_eq!(eval(&mut e, "return getmetatable('')", &[], &[]), arr(vec![]));
    }

    #[test]
    fn compile_errors() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let got = eval(&mut e, "return +", &[], &[]);
        assert_eq!(
            got,
            err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'")
        );
        let got = run(&mut e, &["SCRIPT", "LOAD", "local x ="]);
        assert_eq!(
            got,
            err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'")
        );
        let bytecode = "\x1bLua";
        assert!(matches!(eval(&mut e, bytecode, &[], &[]), Reply::Error(m)
            if m.starts_with("ERR Error compiling script (new function): ")));
        assert_eq!(run(&mut e, &["PING"]), Reply::Status("PONG".into()));
    }

    #[test]
    fn runaway_scripts_are_stopped_by_the_budget() {
        let mut e = RedisEngine::new(EngineConfig {
            lua_instruction_budget: 100_000,
        });
        run(&mut e, &["SET", "k", "v"]);
        let killed = err("ERR Script killed: exceeded instruction budget of 100000");
        for script in [
            "while true do end",
            "while true do pcall(function() while true do end end) end",
            "while true do xpcall(function() while true do end end, function(e) return e end) end",
            "local function f() return f() end return f()",
            "redis.call('set', 'k', 'w') while true do redis.call('get', 'k') end",
            "while true do local ok = pcall(redis.call, 'get', 'k') end",
        ] {
            assert_eq!(eval(&mut e, script, &[], &[]), killed, "{script}");
            assert!(matches!(run(&mut e, &["GET", "k"]), Reply::Bulk(Some(_))));
        }
        // Writes made before the kill stay, as with any script error.
        assert_eq!(run(&mut e, &["GET", "k"]), bulk("w"));
        // The budget is per script run.
        for _ in 0..3 {
            assert_eq!(
                eval(
                    &mut e,
                    "local s = 0 for i = 1, 1000 do s = s + i end return s",
                    &[],
                    &[]
                ),
                int(500500)
            );
        }
    }

    #[test]
    fn twenty_thousand_script_loads_leave_every_script_command_answering() {
        // mlua keeps a Rust-held function in a slot of a stack Lua 5.1 caps at 8,000: a cache
        // holding its functions there panicked at about that many scripts, and every script
        // command after it.
        let mut e = RedisEngine::new(EngineConfig::default());
        let release_sha = sha1_hex(RELEASE.as_bytes());
        assert_eq!(run(&mut e, &["SCRIPT", "LOAD", RELEASE]), bulk(&release_sha));
        let full = err(&cache_full_error());
        let mut refused = 0;
        for i in 0..20_000 {
            let body = format!("return {i}");
            match run(&mut e, &["SCRIPT", "LOAD", &body]) {
                Reply::Bulk(Some(sha)) => assert_eq!(sha, sha1_hex(body.as_bytes()).as_bytes()),
                other => {
                    assert_eq!(other, full, "load {i}");
                    refused += 1;
                }
            }
        }
        assert_eq!(refused, 20_000 - (SCRIPT_CACHE_SCRIPTS_MAX - 1));
        // Every cached script runs, by EVALSHA and by EVAL; a new body is refused.
        run(&mut e, &["SET", "lock", "tok"]);
        assert_eq!(run(&mut e, &["EVALSHA", &release_sha, "1", "lock", "tok"]), int(1));
        let last = sha1_hex(format!("return {}", SCRIPT_CACHE_SCRIPTS_MAX - 2).as_bytes());
        assert_eq!(
            run(&mut e, &["EVALSHA", &last, "0"]),
            int(SCRIPT_CACHE_SCRIPTS_MAX as i64 - 2)
        );
        assert_eq!(eval(&mut e, "return 0", &[], &[]), int(0));
        assert_eq!(eval(&mut e, "return 'new'", &[], &[]), full);
        assert_eq!(run(&mut e, &["SCRIPT", "EXISTS", &release_sha]), arr(vec![int(1)]));
        // SCRIPT FLUSH empties the cache.
        assert_eq!(run(&mut e, &["SCRIPT", "FLUSH"]), Reply::ok());
        assert_eq!(eval(&mut e, "return 'new'", &[], &[]), bulk("new"));
        assert_eq!(run(&mut e, &["SCRIPT", "LOAD", RELEASE]), bulk(&release_sha));
    }

    #[test]
    fn the_script_cache_is_bounded_by_its_bodies_bytes() {
        let (mut a, mut b) = world_pair(EngineConfig::default().lua_instruction_budget);
        let big = |i: usize| format!("return {i} --{}", "x".repeat(1 << 20));
        // Three bodies of a little over 1 MiB fit in the 4 MiB; a fourth does not, on either
        // server of the world (they share the VM), but a body cached already is shared.
        for i in 0..3 {
            assert!(matches!(
                run(&mut a, &["SCRIPT", "LOAD", &big(i)]),
                Reply::Bulk(Some(_))
            ));
        }
        assert_eq!(run(&mut b, &["SCRIPT", "LOAD", &big(4)]), err(&cache_full_error()));
        assert!(matches!(
            run(&mut b, &["SCRIPT", "LOAD", &big(0)]),
            Reply::Bulk(Some(_))
        ));
        assert_eq!(eval(&mut b, &big(0), &[], &[]), int(0));
        assert_eq!(eval(&mut b, "return 1", &[], &[]), int(1));
        assert_eq!(run(&mut a, &["SCRIPT", "FLUSH"]), Reply::ok());
        assert_eq!(eval(&mut b, &big(4), &[], &[]), int(4));
    }

    #[test]
    fn work_inside_built_ins_counts_against_the_budget() {
        let mut e = RedisEngine::new(EngineConfig {
            lua_instruction_budget: 10_000_000,
        });
        let killed = err("ERR Script killed: exceeded instruction budget of 10000000");
        for script in [
            // Each call is refused at once (the result could not fit in the VM's memory), but
            // the loop is not: the instructions count.
            "while true do pcall(string.rep, 'x', 2^30) end",
            "while true do local s = string.rep('x', 2^20) end",
            "while true do local s = ('x'):rep(2^20) end",
            // Backtracking: about 1e20 steps in Lua's matcher.
            "local s = string.rep('a', 1e5) return string.find(s, '.-.-.-.-b')",
            "local s = string.rep('a', 1e5) while true do pcall(string.find, s, '.-.-.-.-b') end",
            "local s = string.rep('a', 1e5) return s:match('(.*)(.*)(.*)b')",
            "local s = string.rep('a', 1e5) return s:gsub('.-.-.-b', 'x')",
            "local s = string.rep('a', 1e5) for w in s:gmatch('.-.-.-b') do end",
            "local s = string.rep('(', 1e5) return s:find('%b()')",
            // Linear work per call, with few instructions between calls.
            "local s = string.rep('a', 1e6) while true do s:find('b', 1, true) end",
            "local s = string.rep('a', 1e6) while true do local t = s:upper() end",
            "local s = string.rep('a', 1e6) while true do local t = string.format('%s', s) end",
            "local s = string.rep('a', 1e6) while true do local t = table.concat({s, s}) end",
            "local s = string.rep('a', 1e6) while true do redis.sha1hex(s) end",
            "local s = string.rep('a', 1e6) while true do redis.call('get', s) end",
            "local t = {} for i = 1, 1e5 do t[i] = i end while true do table.sort(t) end",
            "local t = {} for i = 1, 1e5 do t[i] = i end while true do table.insert(t, 1, 0) table.remove(t, 1) end",
            "local s = string.rep('a', 1e6) while true do local t = s:gsub('a', 'b') end",
        ] {
            let started = std::time::Instant::now();
            assert_eq!(eval(&mut e, script, &[], &[]), killed, "{script}");
            let seconds = started.elapsed().as_secs_f64();
            eprintln!("{seconds:.3} s: {script}");
            assert!(seconds < 10.0, "{script}: {seconds} s");
            // The VM stays usable.
            assert_eq!(
                eval(&mut e, "return string.rep('ab', 2)", &[], &[]),
                bulk("abab"),
                "{script}"
            );
        }
        // Where a script is stopped depends only on the script: twice the same count.
        let count =
            "local n = 0 local s = string.rep('a', 100) while true do s:find('.-b') redis.call('incr', 'n') end";
        let mut counts = Vec::new();
        for _ in 0..2 {
            run(&mut e, &["DEL", "n"]);
            assert_eq!(eval(&mut e, count, &[], &[]), killed);
            counts.push(run(&mut e, &["GET", "n"]));
        }
        assert_eq!(counts[0], counts[1]);
        assert!(matches!(&counts[0], Reply::Bulk(Some(_))), "{counts:?}");
    }

    /// Issue 48: work no instruction counted, each in one `EVAL`, stopped by the default budget
    /// in about a second or two (they ran for minutes, or hours).
    #[test]
    fn work_the_issue_48_battery_found_uncounted_is_charged() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let killed = err("ERR Script killed: exceeded instruction budget of 100000000");
        // 300,000 keys, a set and a list of 200,000 elements.
        let fill = "for i = 1, 300000 do redis.call('set', 'k' .. i, i) end \
                    for i = 1, 200000 do redis.call('sadd', 's', i) redis.call('rpush', 'l', i) end return 1";
        assert_eq!(eval(&mut e, fill, &[], &[]), int(1));
        for script in [
            "local src = 'return 1 ' .. string.rep(' ', 1e6) while true do loadstring(src) end",
            "local t = {} for i = 1, 2e5 do t[i] = {i} end while true do collectgarbage('collect') end",
            "local t = {} for i = 1, 2e5 do t[i] = {i} end while true do collectgarbage() end",
            "local s = string.rep('x', 7000) while true do local c = string.char(string.byte(s, 1, -1)) end",
            "local t = {} for i = 1, 7000 do t[i] = 65 end while true do local c = string.char(unpack(t)) end",
            "local t = {} for i = 1, 7000 do t[i] = i end while true do local n = select('#', unpack(t)) end",
            "local src = string.rep('x = 1 ', 2e5) while true do loadstring(src) end",
            "local s = string.rep('a', 3e7) local n = string.rep('a', 1000) .. 'b' while true do s:find(n, 1, true) end",
            "local s = string.rep('a', 3e7) local n = string.rep('a', 1000) .. 'b' return s:find(n)",
            "while true do redis.call('keys', '*') end",
            "while true do redis.call('smembers', 's') end",
            "while true do redis.call('lrange', 'l', 0, -1) end",
            // The VM's own `..` and `<`, over a heap past `LARGE_HEAP`.
            "local a = string.rep('x', 15e6) local b = a .. 'y' local c = a .. 'z' while true do local x = b < c end",
            "local a = string.rep('x', 15e6) while true do local x = a .. 'y' end",
        ] {
            let started = std::time::Instant::now();
            assert_eq!(eval(&mut e, script, &[], &[]), killed, "{script}");
            let seconds = started.elapsed().as_secs_f64();
            eprintln!("{seconds:.3} s: {script}");
            assert!(seconds < 10.0, "{script}: {seconds} s");
        }
    }

    /// Issue 48: the VM's own `..` and `<` on long strings are one instruction each, whatever
    /// their length; a run stopped from outside (`explore --time-limit`, `mutants
    /// --seed-time-limit`) and a real-time server's wall-clock guard stop such a script at once.
    #[test]
    fn a_stop_from_outside_and_the_wall_guard_reach_inside_a_script() {
        let long = [
            "local a = string.rep('x', 15e6) local b = a .. 'y' local c = a .. 'z' while true do local x = b < c end",
            "local a = string.rep('x', 15e6) while true do local x = a .. 'y' end",
        ];
        for script in long {
            let mut e = RedisEngine::new(EngineConfig::default());
            let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let _stop = lockstep_history::stop::stop_when(flag.clone());
            let timer = {
                let flag = flag.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                    flag.store(true, std::sync::atomic::Ordering::Relaxed);
                })
            };
            let started = std::time::Instant::now();
            let Reply::Error(reply) = eval(&mut e, script, &[], &[]) else {
                panic!("{script}: not an error");
            };
            let seconds = started.elapsed().as_secs_f64();
            eprintln!("stopped from outside: {seconds:.3} s: {script}");
            timer.join().unwrap();
            assert!(reply.starts_with(STOPPED_KILLED), "{reply}");
            assert_eq!(
                server_failure(&reply),
                Some("a script stopped with its run, from outside the simulation")
            );
            assert!(seconds < 5.0, "{script}: {seconds} s");
        }
        for script in long {
            let mut e = RedisEngine::new(EngineConfig::default());
            set_wall_guard(Some(std::time::Duration::from_millis(300)));
            let started = std::time::Instant::now();
            let reply = eval(&mut e, script, &[], &[]);
            set_wall_guard(None);
            let seconds = started.elapsed().as_secs_f64();
            eprintln!("wall guard: {seconds:.3} s: {script}");
            let Reply::Error(reply) = reply else {
                panic!("{script}: not an error");
            };
            assert!(reply.starts_with(WALL_GUARD_KILLED), "{reply}");
            assert!(reply.contains("300 ms"), "{reply}");
            assert!(server_failure(&reply).is_some(), "{reply}");
            assert!(seconds < 5.0, "{script}: {seconds} s");
            // The guard is the thread's setting: without it, scripts stop on the budget alone.
            assert_eq!(eval(&mut e, "return 1", &[], &[]), int(1));
        }
    }

    #[test]
    fn the_bounds_failures_are_named() {
        // Budgets large enough for each script to reach the bound it is about first.
        for (budget, script, what) in [
            (
                100_000,
                "while true do end",
                "a script stopped by the instruction budget",
            ),
            (
                100_000,
                "return string.rep('x', 1e9)",
                "a script past the Lua memory cap",
            ),
            (
                200_000_000,
                // Few instructions once the heap is large (each is charged by it past 16 MB).
                "local t = {} local s = string.rep('x', 1e6) for i = 1, 1e3 do t[i] = s .. i end",
                "a script past the Lua memory cap",
            ),
            (
                100_000,
                "return string.find(string.rep('a', 300), string.rep('a?', 300))",
                "a script's pattern past the recursion bound",
            ),
        ] {
            let mut e = RedisEngine::new(EngineConfig {
                lua_instruction_budget: budget,
            });
            let Reply::Error(reply) = eval(&mut e, script, &[], &[]) else {
                panic!("{script}: not an error");
            };
            assert_eq!(server_failure(&format!("-{reply}")), Some(what), "{script}: {reply}");
        }
        assert_eq!(server_failure(&cache_full_error()), Some("the script cache full"));
        for redis_error in [
            "ERR user_script:1: boom script: 0, on @user_script:1.",
            "OOM command not allowed when used memory > 'maxmemory'.",
            "NOSCRIPT No matching script. Please use EVAL.",
        ] {
            assert_eq!(server_failure(redis_error), None, "{redis_error}");
        }
    }

    #[test]
    fn patterns_match_lua_5_1() {
        // Replies of Redis 7.0.15 (Lua 5.1), taken with redis-cli.
        let mut e = RedisEngine::new(EngineConfig::default());
        let cases: Vec<(&str, Reply)> = vec![
            ("return {string.find('hello world', 'l+')}", arr(vec![int(3), int(4)])),
            ("return {string.find('hello', '', 10)}", arr(vec![int(6), int(5)])),
            ("return {string.find('a.b', '.', 1, true)}", arr(vec![int(2), int(2)])),
            (
                "return {string.find('key:123:x', '(%a+):(%d+)')}",
                arr(vec![int(1), int(7), bulk("key"), bulk("123")]),
            ),
            (
                "return {string.match('  trim me  ', '^%s*(.-)%s*$')}",
                arr(vec![bulk("trim me")]),
            ),
            ("return {string.match('hello', '()ll()')}", arr(vec![int(3), int(5)])),
            ("return {string.match('f(a(b)c)d', '%b()')}", arr(vec![bulk("(a(b)c)")])),
            (
                "return {string.match('THE quick', '%f[%a]%a+', 4)}",
                arr(vec![bulk("quick")]),
            ),
            ("return {string.match('abcabc', '(abc)%1')}", arr(vec![bulk("abc")])),
            ("return {string.match(']', '[]]')}", arr(vec![bulk("]")])),
            ("return {string.match('aaab', 'a-b')}", arr(vec![bulk("aaab")])),
            ("return {string.find('a\0b', '%z')}", arr(vec![int(2), int(2)])),
            (
                "return string.gsub('hello world', '(%w+)', '<%1>')",
                bulk("<hello> <world>"),
            ),
            ("return string.gsub('abc', '', '-')", bulk("-a-b-c-")),
            ("return string.gsub('hello', 'l', {l='L'})", bulk("heLLo")),
            (
                "return string.gsub('hello', '(h)(e)', function(a, b) return b .. a end)",
                bulk("ehllo"),
            ),
            ("return string.gsub('abc', 'b', '%x')", bulk("axc")),
            ("return string.gsub('hello world', '()o', '%1')", bulk("hell5 w8rld")),
            (
                "local t = {} for w in string.gmatch('abc', 'a*') do t[#t+1] = '[' .. w .. ']' end return t",
                arr(vec![bulk("[a]"), bulk("[]"), bulk("[]"), bulk("[]")]),
            ),
            (
                "local t = {} for w in string.gmatch('^a^b', '^%a') do t[#t+1] = w end return t",
                arr(vec![bulk("^a"), bulk("^b")]),
            ),
            (
                "return string.find('abc', '%')",
                err("ERR user_script:1: malformed pattern (ends with '%')"),
            ),
            (
                "return string.gsub('abc', 'a', true)",
                err("ERR user_script:1: bad argument #3 to 'gsub' (string/function/table expected)"),
            ),
            (
                "return string.upper()",
                err("ERR user_script:1: bad argument #1 to 'upper' (string expected, got no value)"),
            ),
            (
                "local ok, e = pcall(string.format, '%d', 'x') return e",
                bulk("bad argument #2 to '?' (number expected, got string)"),
            ),
            (
                "local ok, e = pcall(function() return string.find('a', '%') end) return e",
                bulk("user_script:1: malformed pattern (ends with '%')"),
            ),
            ("return table.maxn({1, 2, [10] = 3})", int(10)),
        ];
        for (script, want) in cases {
            let want = match want {
                Reply::Error(m) => raised(&m, script, 1),
                other => other,
            };
            assert_eq!(eval(&mut e, script, &[], &[]), want, "{script}");
        }
    }

    #[test]
    fn deep_and_self_referencing_tables_do_not_crash() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let mut reply = eval(&mut e, "local t = {} t[1] = t return t", &[], &[]);
        let mut depth = 0;
        while let Reply::Array(Some(mut items)) = reply {
            assert_eq!(items.len(), 1);
            reply = items.remove(0);
            depth += 1;
        }
        assert_eq!(depth, MAX_REPLY_DEPTH);
        assert_eq!(reply, err("ERR reached lua stack limit"));
        let big = eval(&mut e, "return string.rep('x', 1024 * 1024 * 1024)", &[], &[]);
        assert!(big.is_error(), "{big:?}");
        assert_eq!(run(&mut e, &["PING"]), Reply::Status("PONG".into()));
    }

    /// Redis 7.0's `cjson` (replies checked against redis-server 7.0.15).
    #[test]
    fn cjson_matches_redis_7_0() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let cases: Vec<(&str, Reply)> = vec![
            ("return cjson.encode({1,2,3})", bulk("[1,2,3]")),
            ("return cjson.encode({})", bulk("{}")),
            (
                "return cjson.encode({a={b={1,false,cjson.null}}})",
                bulk(r#"{"a":{"b":[1,false,null]}}"#),
            ),
            ("return cjson.encode({[1]=1,[3]=3})", bulk("[1,null,3]")),
            ("return cjson.encode({[1.5]=1})", bulk(r#"{"1.5":1}"#)),
            ("return cjson.encode(1/3)", bulk("0.33333333333333")),
            ("return cjson.encode(2^53)", bulk("9.007199254741e+15")),
            ("return cjson.encode(-0)", bulk("-0")),
            (
                r#"return cjson.encode('a"b\\/\1\127\255')"#,
                Reply::Bulk(Some(Bytes::from_static(b"\"a\\\"b\\\\\\/\\u0001\\u007f\xff\""))),
            ),
            ("return cjson.encode(nil)", bulk("null")),
            (
                "cjson.encode_invalid_numbers(true) return cjson.encode({0/0, 1/0, -1/0})",
                bulk("[nan,inf,-inf]"),
            ),
            (
                "cjson.encode_invalid_numbers('null') return cjson.encode({0/0})",
                bulk("[null]"),
            ),
            (
                "cjson.encode_sparse_array(true) return cjson.encode({[1]=1,[11]=3})",
                bulk(r#"{"1":1,"11":3}"#),
            ),
            (
                "return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')",
                bulk("0 -5000 -1 0.0003 1023.2 0"),
            ),
            (
                r#"return cjson.decode('"\\u00e9\\ud83d\\ude00\\n\\/"')"#,
                bulk("é😀\n/"),
            ),
            (r#"return cjson.decode('{"a":{"b":[1,2]},"a2":true}').a.b[2]"#, int(2)),
            ("return tostring(cjson.decode('null') == cjson.null)", bulk("true")),
            ("return tostring(cjson.decode('[null]')[1] == cjson.null)", bulk("true")),
            (
                "return {cjson.decode('0x10'), cjson.decode('-0x10'), cjson.decode('+1')}",
                arr(vec![int(16), int(-16), int(1)]),
            ),
            ("return tostring(cjson.decode('Infinity'))", bulk("inf")),
            // Invalid UTF-8 passes through both ways, as lua-cjson does.
            (
                r#"return tostring(cjson.decode('"\255\254"') == '\255\254')"#,
                bulk("true"),
            ),
            (
                "return {cjson.encode_sparse_array()}",
                arr(vec![Reply::nil(), int(2), int(10)]),
            ),
            ("return {cjson.encode_max_depth(5)}", arr(vec![int(5)])),
            // The settings are the script's: back to the defaults at every run.
            (
                "return {cjson.encode_max_depth(), cjson.encode_keep_buffer()}",
                arr(vec![int(1000), int(1)]),
            ),
            ("return cjson.new().encode({1})", bulk("[1]")),
            (
                "return {cjson._NAME, cjson._VERSION}",
                arr(vec![bulk("cjson"), bulk("2.1.0")]),
            ),
        ];
        for (script, want) in cases {
            assert_eq!(eval(&mut e, script, &[], &[]), want, "{script}");
        }
        let errors = [
            (
                "return cjson.encode({[1]=1,[20]=3})",
                "Cannot serialise table: excessively sparse array",
            ),
            (
                "return cjson.encode(function() end)",
                "Cannot serialise function: type not supported",
            ),
            (
                "return cjson.encode({[true]=1})",
                "Cannot serialise boolean: table key must be a number or string",
            ),
            (
                "return cjson.encode(0/0)",
                "Cannot serialise number: must not be NaN or Inf",
            ),
            (
                "return cjson.encode()",
                "bad argument #1 to 'encode' (expected 1 argument)",
            ),
            (
                "local t = {} t.x = t return cjson.encode(t)",
                "Cannot serialise, excessive nesting (1001)",
            ),
            (
                "cjson.encode_max_depth(2) return cjson.encode({{{1}}})",
                "Cannot serialise, excessive nesting (3)",
            ),
            (
                "return cjson.encode_max_depth(0)",
                "bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
            ),
            (
                "return cjson.encode_number_precision(15)",
                "bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)",
            ),
            (
                "return cjson.encode_invalid_numbers('x')",
                "bad argument #1 to 'encode_invalid_numbers' (invalid option 'x')",
            ),
            (
                "return cjson.encode_max_depth(1, 2)",
                "bad argument #2 to 'encode_max_depth' (found too many arguments)",
            ),
            (
                "return cjson.decode('[1,]')",
                "Expected value but found T_ARR_END at character 4",
            ),
            (
                r#"return cjson.decode('{"a" 1}')"#,
                "Expected colon but found T_NUMBER at character 6",
            ),
            (
                "return cjson.decode('{1:2}')",
                "Expected object key string but found T_NUMBER at character 2",
            ),
            (
                "return cjson.decode('[1 2]')",
                "Expected comma or array end but found T_NUMBER at character 4",
            ),
            (
                "return cjson.decode('falsey')",
                "Expected the end but found invalid token at character 6",
            ),
            (
                "return cjson.decode('')",
                "Expected value but found T_END at character 1",
            ),
            (
                "return cjson.decode('-')",
                "Expected value but found invalid number at character 1",
            ),
            (
                r#"return cjson.decode('"abc')"#,
                "Expected value but found unexpected end of string at character 5",
            ),
            (
                r#"return cjson.decode('"\\x"')"#,
                "Expected value but found invalid escape code at character 2",
            ),
            (
                r#"return cjson.decode('"\\ud83d"')"#,
                "Expected value but found invalid unicode escape code at character 2",
            ),
            (
                "return cjson.decode('a\\0')",
                "JSON parser does not support UTF-16 or UTF-32",
            ),
            (
                "cjson.decode_invalid_numbers(false) return cjson.decode('0x10')",
                "Expected value but found invalid number at character 1",
            ),
            (
                "cjson.decode_max_depth(2) return cjson.decode('[[[1]]]')",
                "Found too many nested data structures (3) at character 3",
            ),
            (
                "return cjson.decode({})",
                "bad argument #1 to 'decode' (string expected, got table)",
            ),
            // Hostile nesting: an error at lockstep's cap, whatever the setting says.
            (
                "return cjson.decode(string.rep('[', 1000000))",
                "Found too many nested data structures (1001) at character 1001",
            ),
            (
                "cjson.decode_max_depth(2000000) return cjson.decode(string.rep('{\"a\":', 1000000))",
                "Found too many nested data structures (1001) at character 5001",
            ),
            (
                "cjson.encode_max_depth(2000000) local t = {} t.x = t return cjson.encode(t)",
                "Cannot serialise, excessive nesting (1001)",
            ),
        ];
        for (script, msg) in errors {
            assert_eq!(
                eval(&mut e, script, &[], &[]),
                raised(&format!("ERR user_script:1: {msg}"), script, 1),
                "{script}"
            );
        }
        // Under pcall, a library error has no position (lua-cjson's luaL_error names its caller).
        let script = "local ok, e = pcall(cjson.decode, '[') return e";
        assert_eq!(
            eval(&mut e, script, &[], &[]),
            bulk("Expected value but found T_END at character 2")
        );
    }

    /// Redis 7.0's `cmsgpack` (replies checked against redis-server 7.0.15).
    #[test]
    fn cmsgpack_matches_redis_7_0() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let hex = "local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end ";
        let cases: Vec<(&str, &str)> = vec![
            ("cmsgpack.pack(0.1)", "cb3fb999999999999a"),
            ("cmsgpack.pack(-1099511627776)", "d3ffffff0000000000"),
            ("cmsgpack.pack({})", "90"),
            ("cmsgpack.pack(1.5, 2^63, 3.4e38, -0)", "ca3fc00000ca5f000000cb47eff933c78cdfad00"),
            (
                "cmsgpack.pack(127, 128, 255, 256, 65535, 65536, 2^32 - 1, 2^32)",
                "7fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000",
            ),
            (
                "cmsgpack.pack(-32, -33, -128, -129, -32768, -32769, -2^31, -2^31 - 1)",
                "e0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffff",
            ),
            ("cmsgpack.pack(nil, true, false, function() end, cjson.null)", "c0c3c2c0c0"),
            ("cmsgpack.pack({1, 2, nil, 4})", "83010102020404"),
            ("cmsgpack.pack({a = 1})", "81a16101"),
            ("cmsgpack.pack(string.rep('x', 32)):sub(1, 3)", "d92078"),
            ("cmsgpack.pack(string.rep('x', 256)):sub(1, 4)", "da010078"),
            ("cmsgpack.pack(string.rep('x', 65536)):sub(1, 6)", "db0001000078"),
            // A circular table packs as 16 levels of copies, then nil.
            (
                "(function() local a = {x = nil, y = 5} local b = {x = a} a['x'] = b return cmsgpack.pack(a) end)()",
                "82a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a178c0",
            ),
            ("(function() local t = {} for i = 1, 1000 do t = {t} end return cmsgpack.pack(t) end)()", "91919191919191919191919191919191c0"),
        ];
        for (expr, want) in cases {
            let script = format!("{hex}return hex({expr})");
            assert_eq!(eval(&mut e, &script, &[], &[]), bulk(want), "{expr}");
        }
        let round_trip = r#"
            local big = {} for i = 1, 70000 do big[i] = i end
            local map = {} for i = 1, 1000 do map[tostring(i)] = i end
            local t = {s = string.rep('x', 70000), d = 0.1, n = -3147483648, a = big, m = map, b = false}
            local u = cmsgpack.unpack(cmsgpack.pack(t))
            assert(u.s == t.s and u.d == 0.1 and u.n == -3147483648 and #u.a == 70000 and u.a[70000] == 70000)
            assert(u.m['1000'] == 1000 and u.b == false)
            local packed = cmsgpack.pack('a', 'b', 'c')
            local o1, x = cmsgpack.unpack_one(packed)
            local o2, y, z = cmsgpack.unpack_limit(packed, 2, o1)
            return {o1, x, o2, y, z, select('#', cmsgpack.unpack(packed)), cmsgpack.unpack_one('')}
        "#;
        assert_eq!(
            eval(&mut e, round_trip, &[], &[]),
            arr(vec![int(2), bulk("a"), int(-1), bulk("b"), bulk("c"), int(3), int(-1)])
        );
        let errors = [
            ("return cmsgpack.unpack(string.char(0xc1))", "ERR user_script:1: Bad data format in input."),
            ("return cmsgpack.unpack(string.char(0xc4, 1, 97))", "ERR user_script:1: Bad data format in input."),
            ("return cmsgpack.unpack(string.char(0xcc))", "ERR user_script:1: Missing bytes in input."),
            ("return cmsgpack.unpack(string.char(0x81, 0xc0, 1))", "ERR table index is nil"),
            ("return cmsgpack.pack()", "ERR user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)"),
            (
                "return cmsgpack.unpack_one(string.char(1), -1)",
                "ERR user_script:1: Invalid request to unpack with offset of -1 and limit of 1.",
            ),
            (
                "return cmsgpack.unpack_one(string.char(1), 2)",
                "ERR user_script:1: Start offset 2 greater than input length 1.",
            ),
            // Hostile headers: 2^32 elements, a 4 GB string, with three bytes behind them.
            (
                "return cmsgpack.unpack(string.char(0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3))",
                "ERR user_script:1: Missing bytes in input.",
            ),
            (
                "return cmsgpack.unpack(string.char(0xdf, 0xff, 0xff, 0xff, 0xff, 1, 2, 3))",
                "ERR user_script:1: Missing bytes in input.",
            ),
            (
                "return cmsgpack.unpack(string.char(0xdb, 0xff, 0xff, 0xff, 0xff, 1, 2, 3))",
                "ERR user_script:1: Missing bytes in input.",
            ),
            (
                "return cmsgpack.unpack(string.rep(string.char(0x91), 1000000) .. string.char(1))",
                "ERR user_script:1: stack overflow (in function mp_decode_to_lua_array)",
            ),
            (
                "return cmsgpack.unpack(string.rep(string.char(1), 10000))",
                "ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
            ),
        ];
        for (script, msg) in errors {
            assert_eq!(eval(&mut e, script, &[], &[]), raised(msg, script, 1), "{script}");
        }
    }

    /// Redis 7.0's `struct` (replies checked against redis-server 7.0.15).
    #[test]
    fn struct_matches_redis_7_0() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let hex = "local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end ";
        for (expr, want) in [
            ("struct.pack('>I2', 258)", "0102"),
            ("struct.pack('<i4', -2)", "feffffff"),
            ("struct.pack('!2bh', 1, 2)", "01000200"),
            ("struct.pack('!bd', 1, 2)", "01000000000000000000000000000040"),
            ("struct.pack('!4 b x i', 1, 2)", "0100000002000000"),
            (
                "struct.pack('>i4', 1.9) .. struct.pack('>i4', -1.9)",
                "00000001ffffffff",
            ),
            (
                "struct.pack('>I8', 2^64) .. struct.pack('>I2', -1)",
                "0000000000000000ffff",
            ),
            ("struct.pack('>i17', -1)", "000000000000000000ffffffffffffffff"),
            ("struct.pack('c0s', 'ab', 'c')", "61626300"),
            ("struct.pack('>d', 0.1)", "3fb999999999999a"),
        ] {
            let script = format!("{hex}return hex({expr})");
            assert_eq!(eval(&mut e, &script, &[], &[]), bulk(want), "{expr}");
        }
        let cases: Vec<(&str, Reply)> = vec![
            (
                "return {struct.unpack('bBhHlLT', struct.pack('bBhHlLT', -1, 255, -2, 65535, -3, 4, 5))}",
                arr(vec![
                    int(-1),
                    int(255),
                    int(-2),
                    int(65535),
                    int(-3),
                    int(4),
                    int(5),
                    int(31),
                ]),
            ),
            ("return {struct.unpack('Bc0', '\\2abc')}", arr(vec![bulk("ab"), int(4)])),
            ("return {struct.unpack('s', 'ab\\0cd')}", arr(vec![bulk("ab"), int(4)])),
            (
                "return {struct.unpack('>i3', '\\255\\255\\254')}",
                arr(vec![int(-2), int(4)]),
            ),
            ("return {struct.unpack('b', 'ab', 2)}", arr(vec![int(98), int(3)])),
            (
                "return {struct.size('!i!2h'), struct.size('!8bd'), struct.size('>iIhHbBlLfdTc3x')}",
                arr(vec![int(6), int(16), int(54)]),
            ),
        ];
        for (script, want) in cases {
            assert_eq!(eval(&mut e, script, &[], &[]), want, "{script}");
        }
        for (script, msg) in [
            (
                "return struct.pack('q', 1)",
                "bad argument #1 to 'pack' (invalid format option 'q')",
            ),
            (
                "return struct.pack('i', 'x')",
                "bad argument #2 to 'pack' (number expected, got string)",
            ),
            (
                "return struct.pack('i')",
                "bad argument #2 to 'pack' (number expected, got nil)",
            ),
            (
                "return struct.pack('c5', 'abc')",
                "bad argument #3 to 'pack' (string too short)",
            ),
            ("return struct.pack('!3i', 1)", "alignment 3 is not a power of 2"),
            (
                "return struct.pack('i33', 1)",
                "integral size 33 is larger than limit of 32",
            ),
            ("return struct.pack('c99999999999', 'x')", "integral size overflow"),
            (
                "return struct.unpack('>I2', 'a')",
                "bad argument #2 to 'unpack' (data string too short)",
            ),
            (
                "return struct.unpack('>I2', 'abc', 0)",
                "bad argument #3 to 'unpack' (offset must be 1 or greater)",
            ),
            ("return struct.unpack('c0', 'abc')", "format 'c0' needs a previous size"),
            (
                "return struct.unpack('bc0', '\\255ab')",
                "bad argument #2 to 'unpack' (data string too short)",
            ),
            ("return struct.unpack('s', 'abc')", "unfinished string in data"),
            (
                "return struct.size('s')",
                "bad argument #1 to 'size' (option 's' has no fixed size)",
            ),
            (
                "return struct.size('c0')",
                "bad argument #1 to 'size' (option 'c0' has no fixed size)",
            ),
        ] {
            assert_eq!(
                eval(&mut e, script, &[], &[]),
                raised(&format!("ERR user_script:1: {msg}"), script, 1),
                "{script}"
            );
        }
        let trick = "struct.pack = function() return 1 end";
        assert_eq!(
            eval(&mut e, trick, &[], &[]),
            raised("ERR user_script:1: Attempt to modify a readonly table", trick, 1)
        );
    }

    /// The libraries charge the budget by what they handle: a table holding the same long
    /// string many times cannot be encoded for free.
    #[test]
    fn cjson_and_cmsgpack_charge_the_budget() {
        let mut e = RedisEngine::new(EngineConfig {
            lua_instruction_budget: 100_000,
        });
        let killed = err("ERR Script killed: exceeded instruction budget of 100000");
        let fill = "local s = string.rep('x', 100000) local t = {} for i = 1, 100 do t[i] = s end ";
        for call in [
            "return #cjson.encode(t)",
            "return #cmsgpack.pack(t)",
            "return #cjson.decode(cjson.encode(s .. s .. s .. s .. s .. s .. s .. s .. s .. s .. s))",
        ] {
            let script = format!("{fill}{call}");
            assert_eq!(eval(&mut e, &script, &[], &[]), killed, "{call}");
        }
        // The output is capped by the VM's memory cap, whatever the budget.
        let mut e = RedisEngine::new(EngineConfig {
            lua_instruction_budget: u64::MAX / 2,
        });
        let script = "local s = string.rep('\\1', 20000000) return #cjson.encode(s)";
        let reply = eval(&mut e, script, &[], &[]);
        assert!(
            matches!(&reply, Reply::Error(m) if m.contains("not enough memory")),
            "{reply:?}"
        );
    }

    /// Redis 7.0's readonly tables: the suite's "Try trick" scripts get Redis' answers.
    #[test]
    fn readonly_tricks_answer_as_redis_7_0() {
        let mut e = RedisEngine::new(EngineConfig::default());
        // Written by the VM (assignment): positioned.
        for script in [
            "local g = getmetatable(_G) g.__index = {}",
            "redis = function() return 1 end",
            "_G = {}",
            "KEYS = {}",
            "redis.call = function() return 1 end",
            "cjson.encode = function() return 1 end",
            "cmsgpack.pack = function() return 1 end",
            "bit.lshift = function() return 1 end",
            "string.x = 1",
            "getmetatable('').__index = function() return 1 end",
            "getmetatable('').__index.x = 1",
        ] {
            assert_eq!(
                eval(&mut e, script, &[], &[]),
                raised("ERR user_script:1: Attempt to modify a readonly table", script, 1),
                "{script}"
            );
        }
        // Written by a library function: no position, as Redis' patched C functions.
        for script in [
            "setmetatable(_G, {})",
            "rawset(_G, 'x', 1)",
            "rawset(redis, 'x', 1)",
            "setmetatable(cjson, {})",
            "table.insert(redis, 1)",
            "rawset(getmetatable(''), '__index', 1)",
        ] {
            assert_eq!(
                eval(&mut e, script, &[], &[]),
                raised("ERR Attempt to modify a readonly table", script, 1),
                "{script}"
            );
        }
        // The basic types: no metatable, or a read-only one.
        for script in [
            "getmetatable(nil).__index = 1",
            "getmetatable(123.222).__index = 1",
            "getmetatable(true).__index = 1",
            "getmetatable(function() return 1 end).__index = 1",
            "getmetatable(coroutine.create(function() return 1 end)).__index = 1",
        ] {
            assert_eq!(
                eval(&mut e, script, &[], &[]),
                raised("ERR user_script:1: attempt to index a nil value", script, 1),
                "{script}"
            );
        }
        let views = "return {type(getmetatable(_G)), type(getmetatable(redis)), type(getmetatable('')), tostring(getmetatable('').__index == string)}";
        assert_eq!(
            eval(&mut e, views, &[], &[]),
            arr(vec![bulk("table"), bulk("nil"), bulk("table"), bulk("true")])
        );
        // Lua's own errors inside `rawset` have no position, as in Redis.
        for (script, msg) in [
            ("rawset({}, nil, 1)", "ERR table index is nil"),
            ("rawset({}, 0/0, 1)", "ERR table index is NaN"),
            ("table.sort({3, 1, 'x'})", "ERR attempt to compare string with number"),
        ] {
            assert_eq!(eval(&mut e, script, &[], &[]), raised(msg, script, 1), "{script}");
        }
        // Plain tables are untouched; a protected metatable of the script's own is Lua's.
        let own =
            "local t = setmetatable({}, {__metatable = 1}) rawset(t, 'a', 2) return {t.a, pcall(setmetatable, t, {})}";
        assert_eq!(
            eval(&mut e, own, &[], &[]),
            arr(vec![int(2), Reply::nil(), bulk("cannot change a protected metatable")])
        );
        // The same tricks in a function library.
        for (body, want) in [
            ("setmetatable(_G, {})", "ERR Attempt to modify a readonly table"),
            (
                "local g = getmetatable(_G) g.__index = {}",
                "ERR user_function:3: Attempt to modify a readonly table",
            ),
        ] {
            let code =
                format!("#!lua name=trick\nredis.register_function('trick', function(KEYS, ARGV)\n {body} \nend)");
            assert_eq!(run(&mut e, &["FUNCTION", "LOAD", "REPLACE", &code]), bulk("trick"));
            assert_eq!(
                run(&mut e, &["FCALL", "trick", "0"]),
                err(&format!("{want} script: trick, on @user_function:3."))
            );
        }
    }

    /// `math.random` continues from script to script (Redis 7), from the same start in every
    /// VM: a world's scripts draw the same numbers run after run.
    #[test]
    fn random_numbers_continue_across_scripts() {
        let draw = |e: &mut RedisEngine| eval(e, "return tostring(math.random())", &[], &[]);
        let mut a = RedisEngine::new(EngineConfig::default());
        let mut b = RedisEngine::new(EngineConfig::default());
        let first = draw(&mut a);
        let second = draw(&mut a);
        assert_ne!(first, second);
        assert_eq!(draw(&mut b), first);
        assert_eq!(draw(&mut b), second);
        let seeded = "math.randomseed(7) return math.random(1000)";
        assert_eq!(eval(&mut a, seeded, &[], &[]), eval(&mut b, seeded, &[], &[]));
    }

    /// A coroutine's loop is stopped by the budget like any other.
    #[test]
    fn coroutines_are_counted_by_the_budget() {
        let mut e = RedisEngine::new(EngineConfig {
            lua_instruction_budget: 100_000,
        });
        let killed = err("ERR Script killed: exceeded instruction budget of 100000");
        for script in [
            "coroutine.wrap(function() while true do end end)()",
            "local co = coroutine.create(function() while true do end end) local ok = coroutine.resume(co) while true do end",
            "while true do coroutine.wrap(function() for i = 1, 80 do end end)() end",
            "local co = coroutine.create(function() while true do end end) return {coroutine.resume(co)}",
        ] {
            assert_eq!(eval(&mut e, script, &[], &[]), killed, "{script}");
        }
        let ok = "local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2 end) return {co(1), co(5)}";
        assert_eq!(eval(&mut e, ok, &[], &[]), arr(vec![int(2), int(10)]));
    }
}
