//! The command engine: Redis 7 command semantics over a [`Keyspace`], plus Lua scripting.
//!
//! Every reply and error text of the supported subset is Redis 7.2's, including argument-parsing
//! order (which error wins when several apply). Time is the node's wall clock passed to each
//! call, in ms since the Unix epoch; keys store absolute expiry times on that clock, so a wall
//! clock jump forwards expires keys at once and a jump backwards extends them.

use super::db::Db;
use super::function::Functions;
use super::keyspace::Keyspace;
use super::lua::{ScriptRuntime, WorldLua};
use super::memory::{MemoryShare, OOM_ERROR};
use super::reply::Reply;
use super::session::{ClientSession, ReplyMode};
use super::syntax::{arity_error, eq_ic, parse_ll, sanitize, NOT_INTEGER, SYNTAX};
use super::table::{self, CommandSpec, Flags, Handler};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
const NOAUTH: &str = "NOAUTH Authentication required.";
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// Engine settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// Lua VM instructions a script may execute before it is stopped with
    /// `ERR Script killed: exceeded instruction budget of N` (a deterministic stand-in for
    /// Redis' `busy-reply-threshold`). Default 100 000 000.
    pub lua_instruction_budget: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            lua_instruction_budget: 100_000_000,
        }
    }
}

/// A pure, synchronous Redis: keyspace and script cache, on a Lua VM it may share with the
/// other engines of its world. No I/O, no system time.
///
/// The engine holds a Lua VM and is therefore neither `Send` nor `Sync`.
pub struct RedisEngine {
    config: EngineConfig,
    db: Db,
    scripts: ScriptRuntime,
    session: ClientSession,
    /// `FUNCTION` libraries (a restart forgets them: they are not in the keyspace snapshot).
    functions: Functions,
    /// The compiled libraries of `functions`, cached apart from `EVAL`'s scripts: `SCRIPT
    /// FLUSH` leaves them, `FUNCTION FLUSH` frees them (as in Redis).
    function_scripts: ScriptRuntime,
    /// Watched `(database, key)` -> ids of the sessions watching it.
    watchers: BTreeMap<(usize, Bytes), BTreeSet<i64>>,
    /// Sessions whose watched keys were touched since their `WATCH` (`CLIENT_DIRTY_CAS`).
    dirty: BTreeSet<i64>,
    /// `maxmemory`, and this engine's share of its world's memory budget.
    memory: MemoryShare,
    /// What the last command did to each key it changed ([`RedisEngine::take_effects`]).
    effects: Vec<lockstep_history::history::KeyEffect>,
    /// `CONFIG SET` values (a restart forgets them, as Redis forgets what was not written to its
    /// config file).
    server_config: super::admin::ServerConfig,
    /// The flags of the cached scripts that declared them in a `#!lua` line, by SHA.
    script_shebangs: BTreeMap<String, ScriptFlags>,
    /// How many clients the server has blocked (for `INFO clients`).
    blocked_clients: usize,
    /// Open connections, as the server loop last reported them (`INFO clients`).
    connected_clients: usize,
    /// `INFO commandstats`: per command, calls, refusals and errors.
    command_stats: BTreeMap<(&'static str, Option<&'static str>), [u64; 3]>,
    /// `INFO errorstats`: error replies by their code (the first word), at most
    /// [`ERROR_CODES_MAX`] codes; and every error reply.
    error_stats: BTreeMap<String, u64>,
    total_error_replies: u64,
    /// Keys written since the server last asked ([`RedisEngine::take_touched`]).
    touched_since: Vec<(usize, Bytes)>,
    /// Whether more than [`TOUCHED_KEPT_MAX`] were written since.
    touched_overflowed: bool,
}

/// The most written keys the engine keeps for [`RedisEngine::take_touched`].
const TOUCHED_KEPT_MAX: usize = 65_536;

/// The error codes `INFO errorstats` keeps apart (Redis 7.0's `ERROR_STATS_NUMBER`).
const ERROR_CODES_MAX: usize = 128;

impl std::fmt::Debug for RedisEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisEngine")
            .field("config", &self.config)
            .field("keyspace", &self.db.ks)
            .finish_non_exhaustive()
    }
}

impl RedisEngine {
    /// An empty engine with a Lua VM of its own.
    pub fn new(config: EngineConfig) -> Self {
        let lua = WorldLua::new(config.lua_instruction_budget);
        Self::with_lua(config, lua)
    }

    /// An empty engine whose scripts run on `lua`, the VM of its world (each engine keeps its
    /// own script cache). `lua`'s instruction budget is `config`'s.
    pub fn with_lua(config: EngineConfig, lua: WorldLua) -> Self {
        debug_assert_eq!(lua.budget(), config.lua_instruction_budget);
        let function_scripts = ScriptRuntime::new(lua.clone());
        let scripts = ScriptRuntime::new(lua);
        RedisEngine {
            config,
            db: Db::default(),
            scripts,
            function_scripts,
            session: ClientSession::new(1),
            functions: Functions::default(),
            watchers: BTreeMap::new(),
            dirty: BTreeSet::new(),
            memory: MemoryShare::new(),
            effects: Vec::new(),
            server_config: super::admin::ServerConfig::default(),
            touched_since: Vec::new(),
            touched_overflowed: false,
            blocked_clients: 0,
            connected_clients: 1,
            command_stats: BTreeMap::new(),
            error_stats: BTreeMap::new(),
            total_error_replies: 0,
            script_shebangs: BTreeMap::new(),
        }
    }

    /// What the last command ([`RedisEngine::execute_as`]) did to each key it changed: the
    /// key's value and expiry before and after, for the history (an ownership checker reads them).
    /// Taken once; empty after a read or a refused command.
    pub fn take_effects(&mut self) -> Vec<lockstep_history::history::KeyEffect> {
        std::mem::take(&mut self.effects)
    }

    #[cfg(test)]
    /// Sets `maxmemory`: once the keyspace holds more than `bytes`
    /// ([`Keyspace::used_bytes`]), commands that may grow it answer
    /// `OOM command not allowed when used memory > 'maxmemory'.` (Redis' `noeviction` policy).
    /// The default is [`super::DEFAULT_MAXMEMORY_BYTES`]; the engine also shares the budget of
    /// the world it was built in ([`super::MemoryPool`]).
    pub(crate) fn set_maxmemory(&mut self, bytes: usize) {
        self.memory.maxmemory = bytes;
    }

    /// The `maxmemory` setting, in bytes.
    pub fn maxmemory(&self) -> usize {
        self.memory.maxmemory
    }

    /// The memory the keyspace takes, approximately ([`Keyspace::used_bytes`]).
    pub fn used_memory(&self) -> usize {
        self.db.ks.used_bytes()
    }

    #[cfg(test)]
    /// The memory the Lua VM holds, in bytes (at most 64 MiB; a VM left holding more than 4 MiB
    /// over what it held after its last collection by a script is collected right after it).
    /// The VM is the world's: every engine of a world gives the same figure.
    pub(crate) fn lua_memory(&self) -> usize {
        self.scripts.used_memory()
    }

    /// Whether memory is over `maxmemory` or the world's budget: commands that may grow it are
    /// refused.
    fn out_of_memory(&self) -> bool {
        self.db.ks.used_bytes() > self.memory.limit()
    }

    /// Tells the world's budget what the keyspace takes now.
    fn report_memory(&mut self) {
        self.memory.report(self.db.ks.used_bytes());
    }

    /// Executes one command (`args[0]` is the name, case-insensitive) at the node's wall clock
    /// `now_wall_ms`, as the engine's default client session.
    pub fn execute(&mut self, args: &[Bytes], now_wall_ms: i64) -> Reply {
        let mut session = std::mem::take(&mut self.session);
        let reply = self.execute_as(&mut session, args, now_wall_ms);
        self.session = session;
        reply
    }

    /// Executes one command on behalf of the connection whose state is `session`.
    ///
    /// Inside `MULTI` a command is queued (`+QUEUED`), or refused (which makes `EXEC` answer
    /// `EXECABORT`). `SUBSCRIBE`/`UNSUBSCRIBE`, which may answer several replies, and the
    /// restrictions of subscribed mode are in `RedisEngine::execute_conn`.
    pub fn execute_as(&mut self, session: &mut ClientSession, args: &[Bytes], now_wall_ms: i64) -> Reply {
        self.db.ks.begin_journal();
        let reply = self.execute_one(session, args, now_wall_ms);
        self.count_call(args, &reply);
        self.notify_expired();
        self.effects = self
            .db
            .ks
            .end_journal(now_wall_ms)
            .into_iter()
            .map(|(key, before, after)| key_effect(&key, before.as_ref(), after.as_ref()))
            .collect();
        self.note_touched();
        self.report_memory();
        reply
    }

    /// Executes one command of a connection and returns every reply it gives: one, except for
    /// `SUBSCRIBE`/`UNSUBSCRIBE` (one per channel). In subscribed mode (RESP2) only those,
    /// `PING` (answered `["pong", msg]`), `QUIT` and `RESET` are allowed. Messages published
    /// meanwhile are collected by [`RedisEngine::take_pushes`].
    pub(crate) fn execute_conn(&mut self, session: &mut ClientSession, args: &[Bytes], now_wall_ms: i64) -> Vec<Reply> {
        let name = args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .unwrap_or_default();
        if let Some(refusal) = self.auth_refusal(session, args) {
            return vec![refusal];
        }
        let is_pubsub = matches!(
            name.as_str(),
            "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" | "ssubscribe" | "sunsubscribe"
        );
        if is_pubsub && !session.in_multi() {
            if let Lookup::Arity(fullname) = lookup(args) {
                return vec![arity_error(&fullname)];
            }
            return match name.as_str() {
                "subscribe" => self.subscribe(session, &args[1..]),
                "unsubscribe" => self.unsubscribe(session, &args[1..]),
                "psubscribe" => self.psubscribe(session, &args[1..]),
                "ssubscribe" => self.ssubscribe(session, &args[1..]),
                "sunsubscribe" => self.sunsubscribe(session, &args[1..]),
                _ => self.punsubscribe(session, &args[1..]),
            };
        }
        // Subscribed mode restricts RESP2 connections only (Redis 7 lets RESP3 ones run anything).
        let subscribed = session.is_subscribed();
        if subscribed && !session.resp3 && !session.in_multi() {
            match lookup(args) {
                // Redis checks memory before the subscribed-mode restriction.
                Lookup::Found(spec, _) if spec.flags.has(Flags::DENYOOM) && self.out_of_memory() => {
                    return vec![Reply::error(OOM_ERROR)];
                }
                Lookup::Found(_, fullname) if fullname == "ping" => {
                    let msg = args.get(1).cloned().unwrap_or_default();
                    return vec![Reply::Array(Some(vec![Reply::bulk("pong"), Reply::Bulk(Some(msg))]))];
                }
                Lookup::Found(_, fullname) if fullname != "quit" && fullname != "reset" => {
                    return vec![Reply::Error(sanitize(format!(
                        "ERR Can't execute '{fullname}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
                    )))];
                }
                _ => {}
            }
        }
        vec![self.execute_as(session, args, now_wall_ms)]
    }

    /// Drains the messages published since the last call: `(session id, push)` in order.
    pub(crate) fn take_pushes(&mut self) -> Vec<(i64, Reply)> {
        std::mem::take(&mut self.db.outbox)
    }

    /// Forgets a closed connection: its watched keys and its subscriptions.
    pub(crate) fn forget_session(&mut self, session: &mut ClientSession) {
        self.unwatch(session);
        for channel in std::mem::take(&mut session.subscriptions) {
            self.leave_channel(&channel, session.id);
        }
        for pattern in std::mem::take(&mut session.patterns) {
            leave(&mut self.db.patterns, &pattern, session.id);
        }
        for channel in std::mem::take(&mut session.shard_subscriptions) {
            leave(&mut self.db.shard_channels, &channel, session.id);
        }
        session.multi = None;
        session.multi_error = false;
    }

    fn subscribe(&mut self, session: &mut ClientSession, channels: &[Bytes]) -> Vec<Reply> {
        channels
            .iter()
            .map(|channel| {
                if session.subscriptions.insert(channel.clone()) {
                    self.db.channels.entry(channel.clone()).or_default().insert(session.id);
                }
                pubsub_reply("subscribe", Some(channel.clone()), session.subscription_count())
            })
            .collect()
    }

    fn unsubscribe(&mut self, session: &mut ClientSession, channels: &[Bytes]) -> Vec<Reply> {
        let channels: Vec<Bytes> = if channels.is_empty() {
            session.subscriptions.iter().cloned().collect()
        } else {
            channels.to_vec()
        };
        if channels.is_empty() {
            return vec![pubsub_reply("unsubscribe", None, session.subscription_count())];
        }
        channels
            .into_iter()
            .map(|channel| {
                if session.subscriptions.remove(&channel) {
                    self.leave_channel(&channel, session.id);
                }
                pubsub_reply("unsubscribe", Some(channel), session.subscription_count())
            })
            .collect()
    }

    /// `PSUBSCRIBE pattern...`: messages published to channels matching a pattern (Redis' glob,
    /// [`super::admin::glob_match`]) are pushed as `pmessage`s.
    fn psubscribe(&mut self, session: &mut ClientSession, patterns: &[Bytes]) -> Vec<Reply> {
        patterns
            .iter()
            .map(|pattern| {
                if session.patterns.insert(pattern.clone()) {
                    self.db.patterns.entry(pattern.clone()).or_default().insert(session.id);
                }
                pubsub_reply("psubscribe", Some(pattern.clone()), session.subscription_count())
            })
            .collect()
    }

    fn punsubscribe(&mut self, session: &mut ClientSession, patterns: &[Bytes]) -> Vec<Reply> {
        let patterns: Vec<Bytes> = if patterns.is_empty() {
            session.patterns.iter().cloned().collect()
        } else {
            patterns.to_vec()
        };
        if patterns.is_empty() {
            return vec![pubsub_reply("punsubscribe", None, session.subscription_count())];
        }
        patterns
            .into_iter()
            .map(|pattern| {
                if session.patterns.remove(&pattern) {
                    leave(&mut self.db.patterns, &pattern, session.id);
                }
                pubsub_reply("punsubscribe", Some(pattern), session.subscription_count())
            })
            .collect()
    }

    /// `SSUBSCRIBE shardchannel...` (<https://redis.io/commands/ssubscribe/>): shard channels
    /// are a namespace apart from the others; each confirmation counts the shard channels only.
    fn ssubscribe(&mut self, session: &mut ClientSession, channels: &[Bytes]) -> Vec<Reply> {
        channels
            .iter()
            .map(|channel| {
                if session.shard_subscriptions.insert(channel.clone()) {
                    self.db
                        .shard_channels
                        .entry(channel.clone())
                        .or_default()
                        .insert(session.id);
                }
                pubsub_reply("ssubscribe", Some(channel.clone()), session.shard_subscriptions.len())
            })
            .collect()
    }

    /// `SUNSUBSCRIBE [shardchannel...]`: all of them without arguments (`[sunsubscribe, nil, 0]`
    /// when there are none).
    fn sunsubscribe(&mut self, session: &mut ClientSession, channels: &[Bytes]) -> Vec<Reply> {
        let channels: Vec<Bytes> = if channels.is_empty() {
            session.shard_subscriptions.iter().cloned().collect()
        } else {
            channels.to_vec()
        };
        if channels.is_empty() {
            return vec![pubsub_reply("sunsubscribe", None, session.shard_subscriptions.len())];
        }
        channels
            .into_iter()
            .map(|channel| {
                if session.shard_subscriptions.remove(&channel) {
                    leave(&mut self.db.shard_channels, &channel, session.id);
                }
                pubsub_reply("sunsubscribe", Some(channel), session.shard_subscriptions.len())
            })
            .collect()
    }

    fn leave_channel(&mut self, channel: &Bytes, id: i64) {
        leave(&mut self.db.channels, channel, id);
    }

    /// `NOAUTH` for a command of a connection that has not authenticated while `requirepass`
    /// is set (`processCommand` checks it after the name and the arity, before anything else);
    /// `EXEC` also discards the transaction. `AUTH`, `HELLO` and `QUIT` are always allowed.
    fn auth_refusal(&mut self, session: &mut ClientSession, args: &[Bytes]) -> Option<Reply> {
        let password_set = !self.server_config.requirepass().is_empty();
        if *session.authenticated.get_or_insert(!password_set) || !password_set {
            session.authenticated = Some(true);
            return None;
        }
        let Lookup::Found(_, fullname) = lookup(args) else {
            return None;
        };
        if ["auth", "hello", "quit"].contains(&fullname.as_str()) {
            return None;
        }
        if fullname == "exec" {
            session.multi = None;
            session.multi_error = false;
            self.unwatch(session);
            return Some(Reply::Error(format!(
                "EXECABORT Transaction discarded because of: {NOAUTH}"
            )));
        }
        session.flag_transaction();
        Some(Reply::error(NOAUTH))
    }

    /// `AUTH [username] password`: only the `default` user exists, with `requirepass` as its
    /// password (none: any password is accepted, but the one-argument form is an error).
    fn auth(&self, session: &mut ClientSession, args: &[Bytes]) -> Reply {
        let password = self.server_config.requirepass();
        match args.len() {
            2 if password.is_empty() => Reply::error(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ),
            2 | 3 => {
                if check_credentials(args.get(2).map(|_| &args[1]), args[args.len() - 1].as_ref(), password) {
                    session.authenticated = Some(true);
                    Reply::ok()
                } else {
                    Reply::error(WRONGPASS)
                }
            }
            _ => Reply::error(SYNTAX),
        }
    }

    fn unwatch(&mut self, session: &mut ClientSession) {
        for key in std::mem::take(&mut session.watched) {
            if let Some(ids) = self.watchers.get_mut(&key) {
                ids.remove(&session.id);
                if ids.is_empty() {
                    self.watchers.remove(&key);
                }
            }
        }
        self.dirty.remove(&session.id);
    }

    /// Marks the sessions watching a key touched by the last command (`touchWatchedKey`).
    fn note_touched(&mut self) {
        // `SWAPDB`: every watcher of a key of either database, and every blocked client, may
        // see another value now (Redis's `touchAllWatchedKeysInDb` and `scanDatabaseForReadyKeys`).
        for (a, b) in self.db.ks.take_swapped() {
            for ((db, _), ids) in &self.watchers {
                if *db == a || *db == b {
                    self.dirty.extend(ids.iter().copied());
                }
            }
            self.touched_overflowed = true;
        }
        let touched = self.db.ks.take_touched_all();
        for key in &touched {
            if let Some(ids) = self.watchers.get(key) {
                self.dirty.extend(ids.iter().copied());
            }
        }
        // For the server's blocked clients: the keys that may have become ready. Bounded for an
        // engine nobody drains (then the server looks at every blocked client once).
        if self.touched_since.len() + touched.len() > TOUCHED_KEPT_MAX {
            self.touched_since.clear();
            self.touched_overflowed = true;
        } else {
            self.touched_since.extend(touched);
        }
    }

    /// The `(database, key)`s written since the last call (in order, maybe repeated), or `None`
    /// when more were written than the engine keeps: then any key may have changed.
    pub(crate) fn take_touched(&mut self) -> Option<Vec<(usize, Bytes)>> {
        let touched = std::mem::take(&mut self.touched_since);
        (!std::mem::take(&mut self.touched_overflowed)).then_some(touched)
    }

    /// For the server loop: how to block an `XREAD`/`XREADGROUP ... BLOCK ms` that found
    /// nothing in database `db` (the command to run again and the timeout in ms).
    pub(crate) fn stream_block_plan(
        &mut self,
        db: usize,
        args: &[Bytes],
        now_wall_ms: i64,
    ) -> Option<(Vec<Bytes>, i64)> {
        super::t_stream::xread_block_args(self.db.ks.db_mut(db), args, now_wall_ms)
    }

    /// Counts a command of a connection for `INFO commandstats` (Redis counts a command it knows:
    /// an arity error as rejected, an error reply as failed).
    fn count_call(&mut self, args: &[Bytes], reply: &Reply) {
        match reply {
            Reply::Error(e) => self.count_error(e),
            // Each error inside `EXEC`'s reply was an error reply of its own command.
            Reply::Array(Some(items)) if args.first().is_some_and(|a| eq_ic(a, "exec")) => {
                for item in items {
                    if let Reply::Error(e) = item {
                        self.count_error(e);
                    }
                }
            }
            _ => {}
        }
        // On every command of every simulation: no allocation once a command was counted.
        let Some(spec) = args.first().and_then(|name| table::command(name)) else {
            return;
        };
        let sub = match spec.subcommands {
            [] => None,
            subs => match args.get(1).and_then(|a| subs.iter().find(|s| eq_ic(a, s.name))) {
                Some(sub) => Some(sub),
                None => return,
            },
        };
        let row = sub.unwrap_or(spec);
        let counts = self.command_stats.entry((spec.name, sub.map(|s| s.name))).or_default();
        if !row.arity_ok(args.len()) {
            counts[1] += 1;
        } else {
            counts[0] += 1;
            if matches!(reply, Reply::Error(_)) {
                counts[2] += 1;
            }
        }
    }

    /// Counts an error reply under its code, its first word (Redis's `afterErrorReply`; `lower
    /// case` counts as `lower`). A client can invent codes (`redis.error_reply` in a script):
    /// past [`ERROR_CODES_MAX`] codes new ones are counted in the total only, and a code is cut
    /// at 128 bytes.
    fn count_error(&mut self, text: &str) {
        self.total_error_replies += 1;
        let code = text.split(' ').next().unwrap_or("");
        let code = &code[..code.floor_char_boundary(128)];
        if let Some(count) = self.error_stats.get_mut(code) {
            *count += 1;
        } else if self.error_stats.len() < ERROR_CODES_MAX {
            self.error_stats.insert(code.to_string(), 1);
        }
    }

    /// Publishes the `expired` events of the keys that expired (when `notify-keyspace-events` has
    /// `x`).
    fn notify_expired(&mut self) {
        if self.db.notify != 0 {
            let expired = self.db.ks.take_expired_all();
            super::notify::expired_events(&mut self.db, &expired);
        }
    }

    /// The server loop's count of blocked clients, for `INFO clients`.
    pub(crate) fn set_blocked_clients(&mut self, count: usize, connected: usize) {
        self.blocked_clients = count;
        self.connected_clients = connected.max(1);
    }

    /// Executes `args` as the engine's default session, in database `db`.
    pub(crate) fn execute_in(&mut self, db: usize, args: &[Bytes], now_wall_ms: i64) -> Reply {
        let saved = std::mem::replace(&mut self.session.db, db);
        let reply = self.execute(args, now_wall_ms);
        self.session.db = saved;
        reply
    }

    fn exec(&mut self, session: &mut ClientSession, now: i64) -> Reply {
        let Some(queued) = session.multi.take() else {
            return Reply::error("ERR EXEC without MULTI");
        };
        let failed = std::mem::take(&mut session.multi_error);
        let dirty = self.dirty.contains(&session.id);
        self.unwatch(session);
        if failed {
            return Reply::error("EXECABORT Transaction discarded because of previous errors.");
        }
        if dirty {
            return Reply::Array(None);
        }
        let replies = queued.iter().map(|cmd| self.execute_one(session, cmd, now)).collect();
        Reply::Array(Some(replies))
    }

    fn execute_one(&mut self, session: &mut ClientSession, args: &[Bytes], now_wall_ms: i64) -> Reply {
        self.db.selected = session.db;
        if let Some(refusal) = self.auth_refusal(session, args) {
            return refusal;
        }
        let looked_up = lookup(args);
        // `rejectCommand` on EXEC: the transaction (if any) is discarded.
        if matches!(&looked_up, Lookup::Arity(n) if n == "exec") {
            session.multi = None;
            session.multi_error = false;
            self.unwatch(session);
            return Reply::error(
                "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command",
            );
        }
        // `maxmemory` (`processCommand`): over it, a command that may grow memory is refused; so
        // is anything queued inside MULTI, and an EXEC whose transaction holds such a command
        // (which discards the transaction).
        if let Lookup::Found(spec, fullname) = &looked_up {
            let queues = session.in_multi() && !["exec", "discard"].contains(&fullname.as_str());
            let grows = spec.flags.has(Flags::DENYOOM)
                || queues
                || (fullname == "exec"
                    && session.multi.as_ref().is_some_and(|queued| {
                        queued
                            .iter()
                            .any(|cmd| matches!(lookup(cmd), Lookup::Found(s, _) if s.flags.has(Flags::DENYOOM)))
                    }));
            if grows && self.out_of_memory() {
                if fullname == "exec" {
                    session.multi = None;
                    session.multi_error = false;
                    self.unwatch(session);
                    return Reply::Error(format!("EXECABORT Transaction discarded because of: {OOM_ERROR}"));
                }
                session.flag_transaction();
                return Reply::error(OOM_ERROR);
            }
        }
        if session.in_multi() {
            let control = matches!(&looked_up, Lookup::Found(_, n) if ["exec", "discard", "multi", "watch", "quit"].contains(&n.as_str()));
            if !control {
                let refusal = match &looked_up {
                    Lookup::Found(spec, _) if spec.flags.has(Flags::NO_MULTI) => {
                        Some(Reply::error("ERR Command not allowed inside a transaction"))
                    }
                    Lookup::Found(..) => None,
                    Lookup::UnknownCommand => Some(unknown_command(args)),
                    Lookup::UnknownSubcommand => Some(unknown_subcommand(args)),
                    Lookup::Arity(fullname) => Some(arity_error(fullname)),
                };
                if let Some(refusal) = refusal {
                    session.multi_error = true;
                    return refusal;
                }
                if let Some(queue) = session.multi.as_mut() {
                    queue.push(args.to_vec());
                }
                return Reply::Status("QUEUED".to_string());
            }
        }
        let (spec, fullname) = match looked_up {
            Lookup::Found(spec, fullname) => (spec, fullname),
            Lookup::UnknownCommand => return unknown_command(args),
            Lookup::UnknownSubcommand => return unknown_subcommand(args),
            Lookup::Arity(fullname) => return arity_error(&fullname),
        };
        let now = now_wall_ms;
        match fullname.as_str() {
            "multi" => match session.multi {
                Some(_) => Reply::error("ERR MULTI calls can not be nested"),
                None => {
                    session.multi = Some(Vec::new());
                    Reply::ok()
                }
            },
            "exec" => self.exec(session, now),
            "discard" => match session.multi.take() {
                None => Reply::error("ERR DISCARD without MULTI"),
                Some(_) => {
                    session.multi_error = false;
                    self.unwatch(session);
                    Reply::ok()
                }
            },
            "watch" if session.in_multi() => Reply::error("ERR WATCH inside MULTI is not allowed"),
            "watch" => {
                for key in &args[1..] {
                    let watched = (session.db, key.clone());
                    if !session.watched.contains(&watched) {
                        session.watched.push(watched.clone());
                        self.watchers.entry(watched).or_default().insert(session.id);
                    }
                }
                Reply::ok()
            }
            "select" => match super::t_generic::db_index(&args[1]) {
                Ok(index) => {
                    session.db = index;
                    self.db.selected = index;
                    Reply::ok()
                }
                Err(e) => e,
            },
            "auth" => self.auth(session, args),
            // The server closes the connection after this reply (`crate::server`); inside
            // `MULTI` too, as Redis 7 does not queue it.
            "quit" => Reply::ok(),
            "unwatch" => {
                self.unwatch(session);
                Reply::ok()
            }
            // Redis refuses it in a transaction (a client that may not block).
            "ssubscribe" => Reply::error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"),
            "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" | "sunsubscribe" => {
                Reply::error("ERR SUBSCRIBE and UNSUBSCRIBE inside MULTI are not supported by this simulated server")
            }
            "hello" => hello(session, args, self.server_config.requirepass()),
            "client|id" => Reply::Integer(session.id),
            "client|getname" => Reply::Bulk(session.name.clone()),
            "client|setname" => match valid_client_attr(&args[2]) {
                true => {
                    session.name = (!args[2].is_empty()).then(|| args[2].clone());
                    Reply::ok()
                }
                false => Reply::error("ERR Client names cannot contain spaces, newlines or special characters."),
            },
            "client|setinfo" => client_setinfo(session, args),
            "client|reply" => {
                let mode = if eq_ic(&args[2], "on") {
                    ReplyMode::On
                } else if eq_ic(&args[2], "off") {
                    ReplyMode::Off
                } else if eq_ic(&args[2], "skip") {
                    ReplyMode::Skip
                } else {
                    return Reply::error(SYNTAX);
                };
                session.reply_mode = mode;
                Reply::ok()
            }
            "client|no-evict" | "client|no-touch" => {
                if eq_ic(&args[2], "on") || eq_ic(&args[2], "off") {
                    Reply::ok()
                } else {
                    Reply::error(SYNTAX)
                }
            }
            // `RESET`: the connection as new (its id kept), answered `+RESET`.
            "reset" => {
                self.forget_session(session);
                let fresh = ClientSession {
                    addr: session.addr.take(),
                    laddr: session.laddr.take(),
                    ..ClientSession::new(session.id)
                };
                *session = fresh;
                self.db.selected = 0;
                Reply::Status("RESET".to_string())
            }
            "command" => super::introspect::command_all(table::commands()),
            "command|count" => super::introspect::command_count(table::commands()),
            "command|info" => super::introspect::command_info(table::commands(), args),
            "command|docs" => super::introspect::command_docs(table::commands(), args),
            "command|list" => super::introspect::command_list(table::commands(), args),
            "command|getkeys" => super::introspect::command_getkeys(table::commands(), args),
            "function|stats" => Reply::Array(Some(vec![
                Reply::bulk("running_script"),
                Reply::nil(),
                Reply::bulk("engines"),
                Reply::Array(Some(vec![
                    Reply::bulk("LUA"),
                    Reply::Array(Some(vec![
                        Reply::bulk("libraries_count"),
                        Reply::Integer(self.functions.library_count() as i64),
                        Reply::bulk("functions_count"),
                        Reply::Integer(self.functions.function_count() as i64),
                    ])),
                ])),
            ])),
            // Only the asking connection: the engine does not see the others.
            "client|list" | "client|info" => Reply::bulk(super::admin::client_line(session, &fullname)),
            "config|get" => self.server_config.get(&args[2..], self.memory.maxmemory),
            "config|set" => match self.server_config.set(&args[2..]) {
                Ok(maxmemory) => {
                    if let Some(bytes) = maxmemory {
                        self.memory.maxmemory = bytes;
                    }
                    self.db.limits = self.server_config.encoding_limits();
                    self.db.notify = super::notify::classes(self.server_config.notify_keyspace_events());
                    self.db.ks.log_expirations(super::notify::wants_expired(self.db.notify));
                    Reply::ok()
                }
                Err(refusal) => refusal,
            },
            "config|resetstat" => {
                self.command_stats.clear();
                self.error_stats.clear();
                self.total_error_replies = 0;
                Reply::ok()
            }
            "config|rewrite" => Reply::error("ERR The server is running without a config file"),
            "info" => super::admin::info(
                &args[1..],
                &super::admin::InfoFacts {
                    dbs: self
                        .db
                        .ks
                        .databases()
                        .map(|(index, db)| {
                            let expires = db
                                .iter()
                                .filter(|(_, e)| e.expire_at_ms.is_some() && !e.is_expired_at(now))
                                .count();
                            (index, db.live_len(now), expires)
                        })
                        .filter(|(_, keys, _)| *keys > 0)
                        .collect(),
                    used_memory: self.db.ks.used_bytes(),
                    maxmemory: self.memory.maxmemory,
                    lua_memory: self.scripts.used_memory(),
                    cached_scripts: self.scripts.cached(),
                    blocked_clients: self.blocked_clients,
                    connected_clients: self.connected_clients,
                    error_stats: self.error_stats.iter().map(|(code, n)| (code.clone(), *n)).collect(),
                    total_error_replies: self.total_error_replies,
                    command_stats: self
                        .command_stats
                        .iter()
                        .map(|((name, sub), counts)| {
                            (
                                sub.map_or_else(|| (*name).to_string(), |sub| format!("{name}|{sub}")),
                                *counts,
                            )
                        })
                        .collect(),
                },
            ),
            // The engine alone has no replicas: none acknowledges. A server with replicas answers
            // `WAIT` itself (it blocks until enough acknowledge or the timeout passes).
            "wait" => match (parse_ll(&args[1]), parse_ll(&args[2])) {
                (Some(_), Some(timeout_ms)) if timeout_ms < 0 => Reply::error("ERR timeout is negative"),
                (Some(_), Some(_)) => Reply::Integer(0),
                _ => Reply::error(NOT_INTEGER),
            },
            "eval" => self.eval(args, now, false, false),
            "evalsha" => self.eval(args, now, true, false),
            "eval_ro" => self.eval(args, now, false, true),
            "evalsha_ro" => self.eval(args, now, true, true),
            "fcall" => self.fcall(args, now, false),
            "fcall_ro" => self.fcall(args, now, true),
            "function|load" => self.function_load(args),
            "function|dump" => Reply::Bulk(Some(super::function::dump(&self.functions.codes()))),
            "function|restore" => self.function_restore(args),
            "function|list" => self.functions.list(&args[2..]),
            // A function always runs to its end before the next command is read.
            "function|kill" => Reply::error("NOTBUSY No scripts in execution right now."),
            "function|delete" => self.functions.delete(&args[2]),
            "function|flush" => match args.get(2) {
                Some(mode) if args.len() > 3 || !(eq_ic(mode, "sync") || eq_ic(mode, "async")) => {
                    if args.len() > 3 {
                        Reply::Error(sanitize(format!(
                            "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
                            truncated(&args[1], 128)
                        )))
                    } else {
                        Reply::error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
                    }
                }
                _ => {
                    self.functions = Functions::default();
                    self.function_scripts.flush();
                    Reply::ok()
                }
            },
            "script|load" => match script_shebang(&args[2]).map(|flags| (flags, self.scripts.load(&args[2]))) {
                Err(e) => e,
                Ok((flags, Ok(sha))) => {
                    if let Some(flags) = flags {
                        self.script_shebangs.insert(sha.clone(), flags);
                    }
                    Reply::bulk(sha)
                }
                Ok((_, Err(e))) => Reply::Error(e),
            },
            "script|exists" => Reply::Array(Some(
                args[2..]
                    .iter()
                    .map(|sha| {
                        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
                        Reply::Integer(i64::from(self.scripts.contains(&sha)))
                    })
                    .collect(),
            )),
            "script|flush" => {
                let ok = args.len() == 2 || (args.len() == 3 && (eq_ic(&args[2], "sync") || eq_ic(&args[2], "async")));
                if !ok {
                    return Reply::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
                }
                self.scripts.flush();
                self.script_shebangs.clear();
                Reply::ok()
            }
            // A script always runs to its end before the next command is read.
            "script|kill" => Reply::error("NOTBUSY No scripts in execution right now."),
            // The Lua debugger is not modelled; `NO` (the default) is accepted.
            "script|debug" => {
                if eq_ic(&args[2], "no") {
                    Reply::ok()
                } else if eq_ic(&args[2], "yes") || eq_ic(&args[2], "sync") {
                    Reply::error("ERR SCRIPT DEBUG is not supported by this simulated server")
                } else {
                    Reply::error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
                }
            }
            _ => exec_data(&mut self.db, spec, args, now),
        }
    }

    /// Removes and returns, in key order, every key that is expired at `now_wall_ms` (active
    /// expiry). With Redis' rule a key expires once `now > expire_at`, so this removes exactly
    /// the keys with `expire_at < now_wall_ms` — the ones no command can see any more. Costs one
    /// index probe when nothing is due.
    pub fn expire_due(&mut self, now_wall_ms: i64) -> Vec<Bytes> {
        let due = self.db.ks.remove_expired(now_wall_ms);
        self.notify_expired();
        self.note_touched();
        if !due.is_empty() {
            self.report_memory();
        }
        due
    }

    /// Restart with empty state (a crash without persistence): keyspace, script cache and the
    /// default session are all fresh (the Lua VM is the world's; nothing of a script run stays
    /// in it).
    pub fn reset(&mut self) {
        self.db = Db::default();
        self.scripts.flush();
        self.function_scripts.flush();
        self.functions = Functions::default();
        self.session = ClientSession::new(1);
        self.watchers.clear();
        self.dirty.clear();
        self.server_config = super::admin::ServerConfig::default();
        self.report_memory();
    }

    /// The keyspace (clone it for a snapshot).
    pub fn keyspace(&self) -> &Keyspace {
        &self.db.ks
    }

    /// Replaces the keyspace (restore from a snapshot, or a replica applying its stream). The
    /// script cache is untouched; a watched key whose entry differs counts as touched.
    pub fn restore(&mut self, mut ks: Keyspace) {
        ks.take_touched_all();
        for ((db, key), ids) in &self.watchers {
            if self.db.ks.db(*db).and_then(|d| d.get(key)) != ks.db(*db).and_then(|d| d.get(key)) {
                self.dirty.extend(ids.iter().copied());
            }
        }
        self.db.ks = ks;
        // Any key may differ now: the server's blocked clients are all looked at.
        self.touched_overflowed = true;
        self.report_memory();
    }

    #[cfg(test)]
    /// Number of keys not expired at `now_wall_ms`.
    pub(crate) fn key_count(&self, now_wall_ms: i64) -> usize {
        self.db.ks.live_len(now_wall_ms)
    }

    /// The configuration the engine was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// `EVAL`/`EVALSHA`, or their `_RO` forms (`read_only`: a write command called by the script
    /// is refused).
    fn eval(&mut self, args: &[Bytes], now: i64, by_sha: bool, read_only: bool) -> Reply {
        if by_sha && args[1].len() != 40 {
            return Reply::error(NOSCRIPT);
        }
        let Some(numkeys) = parse_ll(&args[2]) else {
            return Reply::error(NOT_INTEGER);
        };
        let available = (args.len() - 3) as i64;
        if numkeys > available {
            return Reply::error("ERR Number of keys can't be greater than number of args");
        }
        if numkeys < 0 {
            return Reply::error("ERR Number of keys can't be negative");
        }
        let (sha, shebang) = if by_sha {
            let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
            if !self.scripts.contains(&sha) {
                return Reply::error(NOSCRIPT);
            }
            let shebang = self.script_shebangs.get(&sha).copied();
            (sha, shebang)
        } else {
            let shebang = match script_shebang(&args[1]) {
                Ok(shebang) => shebang,
                Err(e) => return e,
            };
            match self.scripts.load(&args[1]) {
                Ok(sha) => {
                    if let Some(flags) = shebang {
                        self.script_shebangs.insert(sha.clone(), flags);
                    }
                    (sha, shebang)
                }
                Err(e) => return Reply::Error(e),
            }
        };
        // A script that declares its flags runs by them: `no-writes` as `EVAL_RO`; without
        // `allow-oom` (or `no-writes`) it is refused whole over `maxmemory`.
        let read_only = read_only || shebang.is_some_and(|f| f.no_writes);
        if shebang.is_some_and(|f| !f.allow_oom && !f.no_writes) && self.out_of_memory() {
            return Reply::error(OOM_ERROR);
        }
        let split = 3 + numkeys as usize;
        self.db.memory_limit = self.memory.limit();
        self.scripts.run(
            &sha,
            &args[3..split],
            &args[split..],
            &mut self.db,
            now,
            if read_only {
                exec_from_read_only_script
            } else {
                exec_from_script
            },
        )
    }
}

impl RedisEngine {
    /// `FUNCTION LOAD [REPLACE] code`: parses the shebang, runs the library's code (with only
    /// `redis.register_function` and its few companions reachable, on data of its own) and
    /// stores what it registered.
    fn function_load(&mut self, args: &[Bytes]) -> Reply {
        let prepared = match self.functions.prepare(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let sha = match self
            .function_scripts
            .load_counted(prepared.wrapper.as_bytes(), prepared.code.len())
        {
            Ok(sha) => sha,
            Err(wrapped) => {
                // Compiled alone, the library's code gives Redis' own compile error.
                let text = match self.function_scripts.load(prepared.body.as_bytes()) {
                    Err(e) => e,
                    Ok(_) => wrapped,
                };
                let text = text
                    .replace("Error compiling script (new function)", "Error compiling function")
                    .replace("user_script:", "user_function:");
                return Reply::Error(text);
            }
        };
        let mut scratch = Db::default();
        let argv = [Bytes::from_static(b"load"), Bytes::new()];
        let registered = self
            .function_scripts
            .run(&sha, &[], &argv, &mut scratch, 0, exec_from_script);
        if let Reply::Error(_) = registered {
            let Reply::Error(text) = super::function::rewrite_error(registered, &sha, "", true) else {
                return Reply::error("ERR No functions registered");
            };
            return Reply::Error(format!("ERR Error registering functions: {text}"));
        }
        self.functions.install(prepared, registered)
    }

    /// `FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]`: every library of a `FUNCTION DUMP`
    /// payload, all or none.
    fn function_restore(&mut self, args: &[Bytes]) -> Reply {
        if args.len() > 4 {
            return Reply::error(
                "ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP.",
            );
        }
        let policy = match args.get(3) {
            None => "append",
            Some(p) if eq_ic(p, "append") => "append",
            Some(p) if eq_ic(p, "replace") => "replace",
            Some(p) if eq_ic(p, "flush") => "flush",
            Some(_) => {
                return Reply::error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
            }
        };
        let Some(codes) = super::function::undump(&args[2]) else {
            return Reply::error("ERR payload version or checksum are wrong");
        };
        let before = self.functions.clone();
        if policy == "flush" {
            self.functions = Functions::default();
        }
        for code in codes {
            let mut load = vec![Bytes::from_static(b"FUNCTION"), Bytes::from_static(b"LOAD")];
            if policy == "replace" {
                load.push(Bytes::from_static(b"REPLACE"));
            }
            load.push(code);
            if let Reply::Error(e) = self.function_load(&load) {
                self.functions = before;
                // Redis 7.0.15 names the library without quotes here (`FUNCTION LOAD` quotes it).
                let e = match e
                    .strip_prefix("ERR Library '")
                    .and_then(|r| r.split_once("' already exists"))
                {
                    Some((name, rest)) => format!("ERR Library {name} already exists{rest}"),
                    None => e,
                };
                return Reply::Error(e);
            }
        }
        Reply::ok()
    }

    /// `FCALL`/`FCALL_RO function numkeys key... arg...`.
    fn fcall(&mut self, args: &[Bytes], now: i64, read_only: bool) -> Reply {
        let Some((library, function)) = self.functions.find(&args[1]) else {
            return Reply::error("ERR Function not found");
        };
        let Some(numkeys) = parse_ll(&args[2]) else {
            return Reply::error("ERR Bad number of keys provided");
        };
        if numkeys > (args.len() - 3) as i64 {
            return Reply::error("ERR Number of keys can't be greater than number of args");
        }
        if numkeys < 0 {
            return Reply::error("ERR Number of keys can't be negative");
        }
        let no_writes = function.no_writes();
        if read_only && !no_writes {
            return Reply::error("ERR Can not execute a script with write flag using *_ro command.");
        }
        let (wrapper, name) = (library.wrapper.clone(), function.name.clone());
        let sha = match self.function_scripts.load(wrapper.as_bytes()) {
            Ok(sha) => sha,
            Err(e) => return Reply::Error(e),
        };
        let split = 3 + numkeys as usize;
        let mut argv = args[split..].to_vec();
        argv.push(Bytes::from_static(b"call"));
        argv.push(Bytes::copy_from_slice(name.as_bytes()));
        self.db.memory_limit = self.memory.limit();
        let reply = self.function_scripts.run(
            &sha,
            &args[3..split],
            &argv,
            &mut self.db,
            now,
            if no_writes {
                exec_from_read_only_script
            } else {
                exec_from_script
            },
        );
        super::function::rewrite_error(reply, &sha, &name, false)
    }
}

// ---------------------------------------------------------------------------------------------
// Dispatch (the rows are in `commands.rs`, their types in `table.rs`)
// ---------------------------------------------------------------------------------------------

/// Whether the command named `name` (any case) always writes, by the table's `write` flag. Scripts
/// are not flagged: whether one writes shows only when it runs.
pub fn is_write_command(name: &[u8]) -> bool {
    table::command(name).is_some_and(CommandSpec::is_write)
}

enum Lookup {
    Found(&'static CommandSpec, String),
    UnknownCommand,
    UnknownSubcommand,
    Arity(String),
}

fn lookup(args: &[Bytes]) -> Lookup {
    let Some(first) = args.first() else {
        return Lookup::UnknownCommand;
    };
    let Some(spec) = table::command(first) else {
        return Lookup::UnknownCommand;
    };
    // A container that also runs alone (`COMMAND`) has arity -1.
    let (spec, fullname) = if spec.subcommands.is_empty() || (args.len() == 1 && spec.arity == -1) {
        (spec, spec.name.to_string())
    } else {
        if args.len() == 1 {
            return Lookup::Arity(spec.name.to_string());
        }
        match spec.subcommands.iter().find(|s| eq_ic(&args[1], s.name)) {
            Some(sub) => (sub, format!("{}|{}", spec.name, sub.name)),
            None => return Lookup::UnknownSubcommand,
        }
    };
    if !spec.arity_ok(args.len()) {
        return Lookup::Arity(fullname);
    }
    Lookup::Found(spec, fullname)
}

/// [`OOM_ERROR`] as a script-level refusal (with its code, which `push_error_text` keeps).
const OOM_REFUSAL: &str = "-OOM command not allowed when used memory > 'maxmemory'.";

/// Runs a command for `redis.call`; `Err` is the script-level refusal text (Redis'
/// `scriptCall`), which the caller turns into an `ERR ...` error table.
fn exec_from_script(db: &mut Db, args: &[Bytes], now: i64) -> Result<Reply, &'static str> {
    match lookup(args) {
        Lookup::UnknownCommand | Lookup::UnknownSubcommand => Err("Unknown Redis command called from script"),
        Lookup::Arity(_) => Err("Wrong number of args calling Redis command from script"),
        Lookup::Found(spec, _) if !spec.scriptable() => Err("This Redis command is not allowed from script"),
        // `scriptVerifyOOM`. Redis checks only a script's first write, against the state when
        // the script started, and lets a script that wrote once write on past the limit; here
        // every call that may grow memory is checked, so a script cannot fill a server without
        // bound (see docs/redis-differences.md).
        Lookup::Found(spec, _) if spec.flags.has(Flags::DENYOOM) && db.ks.used_bytes() > db.memory_limit => {
            Err(OOM_REFUSAL)
        }
        // `xreadCommand`: a script may not block.
        Lookup::Found(_, fullname)
            if (fullname == "xread" || fullname == "xreadgroup") && args.iter().any(|a| eq_ic(a, "block")) =>
        {
            Ok(Reply::Error(format!(
                "ERR {fullname} command is not allowed with BLOCK option from scripts"
            )))
        }
        Lookup::Found(spec, _) => Ok(exec_data(db, spec, args, now)),
    }
}

/// [`exec_from_script`] for `EVAL_RO`/`EVALSHA_RO`: commands flagged `write` or `may-replicate`
/// (`PUBLISH`) are refused (Redis' `scriptVerifyWriteCommandAllow`).
fn exec_from_read_only_script(db: &mut Db, args: &[Bytes], now: i64) -> Result<Reply, &'static str> {
    match lookup(args) {
        Lookup::Found(spec, _) if spec.scriptable() && (spec.is_write() || spec.flags.has(Flags::MAY_REPLICATE)) => {
            Err("Write commands are not allowed from read-only scripts.")
        }
        _ => exec_from_script(db, args, now),
    }
}

/// Runs a data command by its row's handler (the arity has been checked). Commands the engine
/// answers itself are not data commands.
fn exec_data(db: &mut Db, spec: &CommandSpec, args: &[Bytes], now: i64) -> Reply {
    if db.notify == 0 {
        let reply = run_handler(db, spec, args, now);
        // Events a handler raised are for notifications only: nobody asks for them now.
        let selected = db.selected;
        db.ks.db_mut(selected).take_raised();
        return reply;
    }
    // Keyspace notifications: the keys this command wrote, apart from those written before it
    // in the same `EXEC` or script (put back after).
    let earlier = db.ks.take_touched_all();
    // For `new` events: which of the command's keys existed before it (in the selected
    // database; a key the command writes in another one, `MOVE`/`COPY ... DB`, was absent there).
    let selected = db.selected;
    let existed: Vec<Bytes> = if super::notify::wants_new(db.notify) {
        let here = db.ks.db(selected);
        spec.key_positions(args)
            .into_iter()
            .filter_map(|i| args.get(i))
            .filter(|k| here.is_some_and(|d| d.get(k).is_some()))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    let reply = run_handler(db, spec, args, now);
    let written = db.ks.take_touched_all();
    db.ks.restore_touched(earlier.iter().chain(&written).cloned());
    if !matches!(reply, Reply::Error(_)) {
        let created: Vec<&(usize, Bytes)> = written
            .iter()
            .filter(|(index, key)| !(*index == selected && existed.contains(key)))
            .collect();
        super::notify::command_events(db, spec, args, &written, &created);
    }
    reply
}

fn run_handler(db: &mut Db, spec: &CommandSpec, args: &[Bytes], now: i64) -> Reply {
    match spec.handler {
        Handler::Keys(handler) | Handler::Server(handler) => {
            let selected = db.selected;
            handler(db.ks.db_mut(selected), args, now)
        }
        Handler::Db(handler) => handler(db, args, now),
        Handler::Engine => unknown_command(args),
    }
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/// Whether `user` (the `default` one when `None`) may log in with `password`: the `default`
/// user has `requirepass` as its password, or takes any password while none is set.
fn check_credentials(user: Option<&Bytes>, password: &[u8], requirepass: &str) -> bool {
    user.is_none_or(|u| u.as_ref() == b"default") && (requirepass.is_empty() || password == requirepass.as_bytes())
}

/// The flags a script declares in its Redis 7 shebang line (`#!lua flags=no-writes,allow-oom`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ScriptFlags {
    no_writes: bool,
    allow_oom: bool,
}

/// Reads an `EVAL` script's shebang line: `None` without one; errors as Redis 7.0 words them.
fn script_shebang(body: &[u8]) -> Result<Option<ScriptFlags>, Reply> {
    let Some(rest) = body.strip_prefix(b"#!") else {
        return Ok(None);
    };
    let line = rest.split(|b| *b == b'\n').next().unwrap_or_default();
    let words = super::reader::split_args(line).unwrap_or_default();
    let engine = words
        .first()
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .unwrap_or_default();
    if engine != "lua" {
        return Err(Reply::Error(sanitize(format!(
            "ERR Unexpected engine in script shebang: {engine}"
        ))));
    }
    let mut flags = ScriptFlags::default();
    for word in &words[1..] {
        let word = String::from_utf8_lossy(word);
        let Some(list) = word.strip_prefix("flags=") else {
            return Err(Reply::Error(sanitize(format!(
                "ERR Unknown lua shebang option: {word}"
            ))));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            match flag {
                "no-writes" => flags.no_writes = true,
                "allow-oom" => flags.allow_oom = true,
                "allow-stale" | "no-cluster" | "allow-cross-slot-keys" => {}
                other => {
                    return Err(Reply::Error(sanitize(format!(
                        "ERR Unexpected flag in script shebang: {other}"
                    ))))
                }
            }
        }
    }
    Ok(Some(flags))
}

/// Removes session `id` from the subscribers of `name` (a channel or a pattern).
fn leave(subscribers: &mut BTreeMap<Bytes, BTreeSet<i64>>, name: &Bytes, id: i64) {
    if let Some(ids) = subscribers.get_mut(name) {
        ids.remove(&id);
        if ids.is_empty() {
            subscribers.remove(name);
        }
    }
}

/// A pub/sub confirmation: `[kind, channel, subscription count]`.
fn pubsub_reply(kind: &'static str, channel: Option<Bytes>, count: usize) -> Reply {
    Reply::Array(Some(vec![
        Reply::bulk(kind),
        Reply::Bulk(channel),
        Reply::Integer(count as i64),
    ]))
}

/// `HELLO [protover [AUTH username password] [SETNAME name]]` (`helloCommand`: the version,
/// then the options, then the credentials, then whether the connection may go on).
fn hello(session: &mut ClientSession, args: &[Bytes], requirepass: &str) -> Reply {
    let mut next = 1;
    // The protocol asked for (applied once every option is valid); none keeps the current one.
    let mut resp3 = session.resp3;
    if args.len() >= 2 {
        next = 2;
        match parse_ll(&args[1]) {
            None => return Reply::error("ERR Protocol version is not an integer or out of range"),
            Some(2) => resp3 = false,
            Some(3) => resp3 = true,
            Some(_) => return Reply::error("NOPROTO unsupported protocol version"),
        }
    }
    let mut setname = None;
    let mut credentials = None;
    let mut j = next;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq_ic(&args[j], "auth") && more >= 2 {
            credentials = Some((&args[j + 1], &args[j + 2]));
            j += 2;
        } else if eq_ic(&args[j], "setname") && more >= 1 {
            setname = Some(args[j + 1].clone());
            j += 1;
        } else {
            return Reply::Error(sanitize(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[j])
            )));
        }
        j += 1;
    }
    if let Some((user, password)) = credentials {
        if !check_credentials(Some(user), password, requirepass) {
            return Reply::error(WRONGPASS);
        }
        session.authenticated = Some(true);
    }
    if session.authenticated == Some(false) {
        return Reply::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        );
    }
    if let Some(name) = setname {
        if !valid_client_attr(&name) {
            return Reply::error("ERR Client names cannot contain spaces, newlines or special characters.");
        }
        session.name = (!name.is_empty()).then_some(name);
    }
    session.resp3 = resp3;
    let s = |v: &'static str| Reply::bulk(Bytes::from_static(v.as_bytes()));
    Reply::Array(Some(vec![
        s("server"),
        s("redis"),
        s("version"),
        s("7.2.0"),
        s("proto"),
        Reply::Integer(if session.resp3 { 3 } else { 2 }),
        s("id"),
        Reply::Integer(session.id),
        s("mode"),
        s("standalone"),
        s("role"),
        s("master"),
        s("modules"),
        Reply::Array(Some(vec![])),
    ]))
}

fn client_setinfo(session: &mut ClientSession, args: &[Bytes]) -> Reply {
    let attr = &args[2];
    let value = &args[3];
    let is_name = eq_ic(attr, "lib-name");
    if !is_name && !eq_ic(attr, "lib-ver") {
        return Reply::Error(sanitize(format!(
            "ERR Unrecognized option '{}'",
            String::from_utf8_lossy(attr)
        )));
    }
    if !valid_client_attr(value) {
        return Reply::Error(sanitize(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            String::from_utf8_lossy(attr)
        )));
    }
    let slot = if is_name {
        &mut session.lib_name
    } else {
        &mut session.lib_ver
    };
    *slot = (!value.is_empty()).then(|| value.clone());
    Reply::ok()
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Redis' `validateClientAttr`: printable ASCII without spaces.
fn valid_client_attr(v: &[u8]) -> bool {
    v.iter().all(|c| (b'!'..=b'~').contains(c))
}

fn truncated(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&b[..b.len().min(max)]).into_owned()
}

fn unknown_command(args: &[Bytes]) -> Reply {
    let name = args.first().map(|n| truncated(n, 128)).unwrap_or_default();
    let mut listed: Vec<u8> = Vec::new();
    for arg in args.iter().skip(1) {
        if listed.len() >= 128 {
            break;
        }
        let room = 128 - listed.len();
        listed.push(b'\'');
        listed.extend_from_slice(&arg[..arg.len().min(room)]);
        listed.extend_from_slice(b"' ");
    }
    Reply::Error(sanitize(format!(
        "ERR unknown command '{name}', with args beginning with: {}",
        String::from_utf8_lossy(&listed)
    )))
}

fn unknown_subcommand(args: &[Bytes]) -> Reply {
    let sub = args.get(1).map(|s| truncated(s, 128)).unwrap_or_default();
    let container = args
        .first()
        .map(|c| String::from_utf8_lossy(c).to_ascii_uppercase())
        .unwrap_or_default();
    Reply::Error(sanitize(format!(
        "ERR unknown subcommand '{sub}'. Try {container} HELP."
    )))
}

/// A keyspace change as the history records it (values cut as the history cuts arguments).
fn key_effect(
    key: &[u8],
    before: Option<&super::keyspace::Summary>,
    after: Option<&super::keyspace::Summary>,
) -> lockstep_history::history::KeyEffect {
    use super::keyspace::SummaryValue;
    use lockstep_history::history::{bounded_lossy, KeyState, MAX_EVENT_ARG_BYTES};
    let state = |summary: &super::keyspace::Summary| {
        let (value, fields) = match &summary.value {
            SummaryValue::String(v) => (Some(bounded_lossy(v, MAX_EVENT_ARG_BYTES)), Vec::new()),
            SummaryValue::Hash(pairs) => (
                None,
                pairs
                    .iter()
                    .map(|(f, _)| bounded_lossy(f, MAX_EVENT_ARG_BYTES))
                    .collect(),
            ),
            SummaryValue::Collection(..) => (None, Vec::new()),
        };
        KeyState {
            value,
            fields,
            expire_at_ms: summary.expire_at_ms,
        }
    };
    lockstep_history::history::KeyEffect {
        key: bounded_lossy(key, MAX_EVENT_ARG_BYTES),
        before: before.map(state),
        after: after.map(state),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sha1_hex;

    fn args(cmd: &[&str]) -> Vec<Bytes> {
        cmd.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect()
    }
    fn st(s: &str) -> Reply {
        Reply::Status(s.to_string())
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
    fn nil() -> Reply {
        Reply::Bulk(None)
    }
    fn arr(items: Vec<Reply>) -> Reply {
        Reply::Array(Some(items))
    }

    /// Runs `(now, command, expected reply)` rows in order on one engine.
    fn check(engine: &mut RedisEngine, rows: &[(i64, &[&str], Reply)]) {
        for (i, (now, cmd, want)) in rows.iter().enumerate() {
            let got = engine.execute(&args(cmd), *now);
            assert_eq!(&got, want, "row {i}: {cmd:?} at t={now}");
        }
    }

    const NOT_INT: &str = "ERR value is not an integer or out of range";
    const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

    #[test]
    fn parse_ll_is_string2ll() {
        let ok: &[(&str, i64)] = &[
            ("0", 0),
            ("1", 1),
            ("-1", -1),
            ("9223372036854775807", i64::MAX),
            ("-9223372036854775808", i64::MIN),
        ];
        for (s, v) in ok {
            assert_eq!(parse_ll(s.as_bytes()), Some(*v), "{s}");
        }
        for s in [
            "",
            "-",
            "+1",
            "01",
            "-0",
            " 1",
            "1 ",
            "1.0",
            "9223372036854775808",
            "-9223372036854775809",
            "abc",
            "100000000000000000000",
        ] {
            assert_eq!(parse_ll(s.as_bytes()), None, "{s:?}");
        }
    }

    #[test]
    fn save_and_shutdown_are_refused_inside_multi_and_move_reads_its_index_as_redis() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 1_000;
        let not_in_multi = err("ERR Command not allowed inside a transaction");
        check(
            &mut e,
            &[
                (t, &["SAVE"], st("OK")),
                (
                    t,
                    &["SHUTDOWN", "NOSAVE"],
                    err("ERR Errors trying to SHUTDOWN. Check logs."),
                ),
                (t, &["MULTI"], st("OK")),
                (t, &["SET", "k", "v"], st("QUEUED")),
                (t, &["SAVE"], not_in_multi.clone()),
                (t, &["SHUTDOWN"], not_in_multi),
                (
                    t,
                    &["EXEC"],
                    err("EXECABORT Transaction discarded because of previous errors."),
                ),
                (t, &["GET", "k"], Reply::nil()),
                (t, &["SET", "k", "v"], st("OK")),
                (t, &["MOVE", "k", "notanumber"], err(NOT_INT)),
                (
                    t,
                    &["MOVE", "k", "99999999999"],
                    err("ERR value is out of range, value must between -2147483648 and 2147483647"),
                ),
                (t, &["MOVE", "k", "16"], err("ERR DB index is out of range")),
                (t, &["MOVE", "k", "1"], Reply::Integer(1)),
            ],
        );
    }

    #[test]
    fn errorstats_count_error_replies_by_their_first_word_and_resetstat_clears_them() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 1_000;
        for cmd in [
            &["EVAL", "return redis.error_reply('MY_CODE custom')", "0"][..],
            &["EVAL", "return redis.error_reply('MY_CODE again')", "0"],
            &["NOSUCH"],
            &["SET", "k", "v"],
            &["LPUSH", "k", "x"],
        ] {
            e.execute(&args(cmd), t);
        }
        let info = |e: &mut RedisEngine, section: &str| match e.execute(&args(&["INFO", section]), t) {
            Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("{other:?}"),
        };
        let stats = info(&mut e, "errorstats");
        assert!(stats.contains("errorstat_ERR:count=1\r\n"), "{stats}");
        assert!(stats.contains("errorstat_MY_CODE:count=2\r\n"), "{stats}");
        assert!(stats.contains("errorstat_WRONGTYPE:count=1\r\n"), "{stats}");
        assert!(info(&mut e, "stats").contains("total_error_replies:4\r\n"));
        // A client inventing codes cannot grow the table without bound.
        for i in 0..1_000 {
            e.execute(&args(&["EVAL", &format!("return redis.error_reply('C{i} x')"), "0"]), t);
        }
        assert_eq!(
            info(&mut e, "errorstats").matches("errorstat_").count(),
            super::ERROR_CODES_MAX
        );
        assert!(info(&mut e, "stats").contains("total_error_replies:1004\r\n"));
        e.execute(&args(&["CONFIG", "RESETSTAT"]), t);
        assert!(!info(&mut e, "errorstats").contains("errorstat_"));
    }

    #[test]
    fn connection_and_generic_commands() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 1_000;
        check(
            &mut e,
            &[
                (t, &["PING"], st("PONG")),
                (t, &["ping", "hi"], bulk("hi")),
                (
                    t,
                    &["PING", "a", "b"],
                    err("ERR wrong number of arguments for 'ping' command"),
                ),
                (t, &["ECHO", "x"], bulk("x")),
                (t, &["echo"], err("ERR wrong number of arguments for 'echo' command")),
                (t, &["SELECT", "0"], st("OK")),
                (t, &["SELECT", "16"], err("ERR DB index is out of range")),
                (t, &["SELECT", "-1"], err("ERR DB index is out of range")),
                (t, &["SELECT", "x"], err(NOT_INT)),
                (
                    t,
                    &["SELECT", "99999999999"],
                    err("ERR value is out of range, value must between -2147483648 and 2147483647"),
                ),
                (
                    t,
                    &["foo", "bar", "baz"],
                    err("ERR unknown command 'foo', with args beginning with: 'bar' 'baz' "),
                ),
                (
                    t,
                    &["FOO"],
                    err("ERR unknown command 'FOO', with args beginning with: "),
                ),
                (
                    t,
                    &["foo", "a\r\nb"],
                    err("ERR unknown command 'foo', with args beginning with: 'a  b' "),
                ),
                (t, &["GET"], err("ERR wrong number of arguments for 'get' command")),
                (
                    t,
                    &["get", "a", "b"],
                    err("ERR wrong number of arguments for 'get' command"),
                ),
                (t, &["DEL"], err("ERR wrong number of arguments for 'del' command")),
                (t, &["HELLO", "4"], err("NOPROTO unsupported protocol version")),
                (
                    t,
                    &["HELLO", "x"],
                    err("ERR Protocol version is not an integer or out of range"),
                ),
                (t, &["HELLO", "2", "FOO"], err("ERR Syntax error in HELLO option 'FOO'")),
                (
                    t,
                    &["HELLO", "2", "AUTH", "default", "pw", "SETNAME", "me"],
                    arr(vec![
                        bulk("server"),
                        bulk("redis"),
                        bulk("version"),
                        bulk("7.2.0"),
                        bulk("proto"),
                        int(2),
                        bulk("id"),
                        int(1),
                        bulk("mode"),
                        bulk("standalone"),
                        bulk("role"),
                        bulk("master"),
                        bulk("modules"),
                        arr(vec![]),
                    ]),
                ),
                (t, &["CLIENT", "GETNAME"], bulk("me")),
                (
                    t,
                    &["client", "setname", "a b"],
                    err("ERR Client names cannot contain spaces, newlines or special characters."),
                ),
                (t, &["CLIENT", "SETNAME", "worker-1"], st("OK")),
                (t, &["CLIENT", "GETNAME"], bulk("worker-1")),
                (t, &["CLIENT", "SETNAME", ""], st("OK")),
                (t, &["CLIENT", "GETNAME"], nil()),
                (t, &["CLIENT", "ID"], int(1)),
                (t, &["CLIENT", "SETINFO", "lib-name", "redis-rs"], st("OK")),
                (t, &["CLIENT", "SETINFO", "LIB-VER", "1.0.0"], st("OK")),
                (
                    t,
                    &["CLIENT", "SETINFO", "lib-name", "a b"],
                    err("ERR lib-name cannot contain spaces, newlines or special characters."),
                ),
                (
                    t,
                    &["CLIENT", "SETINFO", "foo", "x"],
                    err("ERR Unrecognized option 'foo'"),
                ),
                (
                    t,
                    &["CLIENT", "SETINFO", "lib-name"],
                    err("ERR wrong number of arguments for 'client|setinfo' command"),
                ),
                (
                    t,
                    &["client", "nope"],
                    err("ERR unknown subcommand 'nope'. Try CLIENT HELP."),
                ),
                (
                    t,
                    &["CLIENT"],
                    err("ERR wrong number of arguments for 'client' command"),
                ),
                (
                    t,
                    &["SCRIPT", "nope"],
                    err("ERR unknown subcommand 'nope'. Try SCRIPT HELP."),
                ),
                (
                    t,
                    &["SCRIPT", "LOAD"],
                    err("ERR wrong number of arguments for 'script|load' command"),
                ),
                (
                    t,
                    &["SCRIPT", "FLUSH", "x"],
                    err("ERR SCRIPT FLUSH only support SYNC|ASYNC option"),
                ),
                (t, &["SCRIPT", "FLUSH", "ASYNC"], st("OK")),
                (t, &["SET", "a", "1"], st("OK")),
                (t, &["SET", "b", "2"], st("OK")),
                (t, &["DBSIZE"], int(2)),
                (t, &["FLUSHALL", "x"], err("ERR syntax error")),
                (t, &["FLUSHALL", "SYNC"], st("OK")),
                (t, &["DBSIZE"], int(0)),
            ],
        );
        assert_eq!(
            e.session,
            ClientSession {
                id: 1,
                name: None,
                lib_name: Some(Bytes::from_static(b"redis-rs")),
                lib_ver: Some(Bytes::from_static(b"1.0.0")),
                authenticated: Some(true),
                ..ClientSession::default()
            }
        );
    }

    #[test]
    fn getdel_expiretime_and_flushdb_behave_as_redis_documents_them() {
        // From the Redis command reference (GETDEL, EXPIRETIME, PEXPIRETIME, FLUSHDB).
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 1_000;
        check(
            &mut e,
            &[
                (t, &["GETDEL", "k"], nil()),
                (t, &["SET", "k", "v", "PX", "2400"], st("OK")),
                (t, &["PEXPIRETIME", "k"], int(3_400)),
                (t, &["EXPIRETIME", "k"], int(3)),
                (t, &["GETDEL", "k"], bulk("v")),
                (t, &["EXISTS", "k"], int(0)),
                (t, &["PEXPIRETIME", "k"], int(-2)),
                (t, &["SET", "k", "v"], st("OK")),
                (t, &["EXPIRETIME", "k"], int(-1)),
                (t, &["LPUSH", "l", "x"], int(1)),
                (t, &["GETDEL", "l"], err(WT)),
                (
                    t,
                    &["GETDEL"],
                    err("ERR wrong number of arguments for 'getdel' command"),
                ),
                (t, &["FLUSHDB", "x"], err("ERR syntax error")),
                (t, &["FLUSHDB", "ASYNC"], st("OK")),
                (t, &["DBSIZE"], int(0)),
            ],
        );
    }

    #[test]
    fn sessions_are_per_connection_with_execute_as() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let mut a = ClientSession::new(7);
        let mut b = ClientSession::new(8);
        e.execute_as(&mut a, &args(&["CLIENT", "SETNAME", "a"]), 0);
        assert_eq!(e.execute_as(&mut a, &args(&["CLIENT", "GETNAME"]), 0), bulk("a"));
        assert_eq!(e.execute_as(&mut b, &args(&["CLIENT", "GETNAME"]), 0), nil());
        assert_eq!(e.execute_as(&mut b, &args(&["CLIENT", "ID"]), 0), int(8));
        assert_eq!(e.execute(&args(&["CLIENT", "GETNAME"]), 0), nil());
    }

    #[test]
    fn set_options_and_errors() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 1_000;
        check(
            &mut e,
            &[
                (t, &["GET", "k"], nil()),
                (t, &["SET", "k"], err("ERR wrong number of arguments for 'set' command")),
                (t, &["SET", "k", "v"], st("OK")),
                (t, &["GET", "k"], bulk("v")),
                (t, &["GET", "K"], nil()),
                (t, &["SET", "k", "v2", "NX"], nil()),
                (t, &["SET", "k", "v2", "xx"], st("OK")),
                (t, &["GET", "k"], bulk("v2")),
                (t, &["SET", "k2", "v", "XX"], nil()),
                (t, &["SET", "k2", "v", "NX"], st("OK")),
                (t, &["SET", "k", "v", "NX", "XX"], err("ERR syntax error")),
                (t, &["SET", "k", "v", "XX", "NX"], err("ERR syntax error")),
                (t, &["SET", "k", "v", "NX", "NX"], nil()),
                (t, &["SET", "k", "v", "EX", "10", "PX", "100"], err("ERR syntax error")),
                (
                    t,
                    &["SET", "k", "v", "PX", "100", "EXAT", "10"],
                    err("ERR syntax error"),
                ),
                (t, &["SET", "k", "v", "KEEPTTL", "PX", "100"], err("ERR syntax error")),
                (t, &["SET", "k", "v", "PX", "100", "KEEPTTL"], err("ERR syntax error")),
                (t, &["SET", "k", "v", "EX"], err("ERR syntax error")),
                (t, &["SET", "k", "v", "FOO"], err("ERR syntax error")),
                (
                    t,
                    &["SET", "k", "v", "EX", "0"],
                    err("ERR invalid expire time in 'set' command"),
                ),
                (
                    t,
                    &["SET", "k", "v", "PX", "-1"],
                    err("ERR invalid expire time in 'set' command"),
                ),
                (
                    t,
                    &["SET", "k", "v", "EXAT", "0"],
                    err("ERR invalid expire time in 'set' command"),
                ),
                (t, &["SET", "k", "v", "EX", "abc"], err(NOT_INT)),
                (t, &["SET", "k", "v", "PX", "1.5"], err(NOT_INT)),
                (
                    t,
                    &["SET", "k", "v", "EX", "9223372036854775807"],
                    err("ERR invalid expire time in 'set' command"),
                ),
                (
                    t,
                    &["SET", "k", "v", "PX", "9223372036854775807"],
                    err("ERR invalid expire time in 'set' command"),
                ),
                // A failed SET changes nothing.
                (t, &["GET", "k"], bulk("v2")),
                (t, &["PTTL", "k"], int(-1)),
                (t, &["SET", "k", "v", "EX", "10", "EX", "20"], st("OK")),
                (t, &["PTTL", "k"], int(20_000)),
                (t, &["TTL", "k"], int(20)),
                (t, &["SET", "k", "v", "PX", "100"], st("OK")),
                (t, &["PTTL", "k"], int(100)),
                (t, &["TTL", "k"], int(0)),
                (t, &["SET", "k", "v", "PX", "1500"], st("OK")),
                (t, &["TTL", "k"], int(2)),
                (t, &["SET", "k", "v", "px", "1499"], st("OK")),
                (t, &["TTL", "k"], int(1)),
                (t, &["SET", "k", "w", "KEEPTTL"], st("OK")),
                (t, &["PTTL", "k"], int(1499)),
                (t, &["GET", "k"], bulk("w")),
                (t, &["SET", "k", "w"], st("OK")),
                (t, &["PTTL", "k"], int(-1)),
                (t, &["SET", "k", "v", "EXAT", "2"], st("OK")),
                (t, &["PTTL", "k"], int(1_000)),
                (t, &["SET", "k", "v", "PXAT", "1500", "XX"], st("OK")),
                (t, &["PTTL", "k"], int(500)),
                (t, &["SET", "k", "v", "PXAT", "1000"], st("OK")),
                (t, &["PTTL", "k"], int(0)),
                (t, &["SET", "k", "v", "PXAT", "999"], st("OK")),
                (t, &["GET", "k"], nil()),
                // GET option
                (t, &["SET", "g", "1"], st("OK")),
                (t, &["SET", "g", "2", "GET"], bulk("1")),
                (t, &["SET", "g", "3", "NX", "GET"], bulk("2")),
                (t, &["GET", "g"], bulk("2")),
                (t, &["SET", "g", "4", "XX", "GET", "PX", "100"], bulk("2")),
                (t, &["PTTL", "g"], int(100)),
                (t, &["SET", "m", "x", "XX", "GET"], nil()),
                (t, &["GET", "m"], nil()),
                (t, &["SET", "m", "x", "NX", "GET"], nil()),
                (t, &["GET", "m"], bulk("x")),
                (t, &["LPUSH", "list", "a"], int(1)),
                (t, &["SET", "list", "x", "GET"], err(WT)),
                (
                    t,
                    &["SET", "list", "x", "GET", "EX", "0"],
                    err("ERR invalid expire time in 'set' command"),
                ),
                (t, &["TYPE", "list"], st("list")),
                (t, &["SET", "list", "x"], st("OK")),
                (t, &["TYPE", "list"], st("string")),
                (t, &["TYPE", "nope"], st("none")),
            ],
        );
    }

    #[test]
    fn del_exists_incr_and_lists() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 5;
        check(
            &mut e,
            &[
                (t, &["SET", "a", "1"], st("OK")),
                (t, &["SET", "b", "1"], st("OK")),
                (t, &["EXISTS", "a", "a", "b", "c"], int(3)),
                (t, &["DEL", "a", "b", "b", "c"], int(2)),
                (t, &["EXISTS", "a"], int(0)),
                (t, &["INCR", "n"], int(1)),
                (t, &["INCRBY", "n", "10"], int(11)),
                (t, &["DECR", "n"], int(10)),
                (t, &["DECRBY", "n", "5"], int(5)),
                (t, &["INCRBY", "n", "-10"], int(-5)),
                (t, &["GET", "n"], bulk("-5")),
                (t, &["INCRBY", "n", "x"], err(NOT_INT)),
                (t, &["INCRBY", "n", "+1"], err(NOT_INT)),
                (t, &["SET", "s", "v"], st("OK")),
                (t, &["INCR", "s"], err(NOT_INT)),
                (t, &["SET", "s", " 1"], st("OK")),
                (t, &["INCR", "s"], err(NOT_INT)),
                (t, &["SET", "big", "9223372036854775807"], st("OK")),
                (t, &["INCR", "big"], err("ERR increment or decrement would overflow")),
                (t, &["SET", "small", "-9223372036854775808"], st("OK")),
                (t, &["DECR", "small"], err("ERR increment or decrement would overflow")),
                (
                    t,
                    &["DECRBY", "n", "-9223372036854775808"],
                    err("ERR decrement would overflow"),
                ),
                (t, &["SET", "c", "1", "PX", "5000"], st("OK")),
                (t, &["INCR", "c"], int(2)),
                (t, &["PTTL", "c"], int(5000)),
                (t, &["LPUSH", "l", "a", "b"], int(2)),
                (t, &["RPUSH", "l", "c"], int(3)),
                (t, &["LLEN", "l"], int(3)),
                (t, &["LLEN", "nope"], int(0)),
                (t, &["GET", "l"], err(WT)),
                (t, &["INCR", "l"], err(WT)),
                (t, &["LPUSH", "s", "x"], err(WT)),
                (t, &["LLEN", "s"], err(WT)),
                (t, &["LPOP", "s"], err(WT)),
                (
                    t,
                    &["LPOP", "l", "1", "2"],
                    err("ERR wrong number of arguments for 'lpop' command"),
                ),
                (
                    t,
                    &["LPOP", "l", "-1"],
                    err("ERR value is out of range, must be positive"),
                ),
                (t, &["LPOP", "l", "0"], arr(vec![])),
                (t, &["LPOP", "l"], bulk("b")),
                (t, &["RPOP", "l"], bulk("c")),
                (t, &["RPOP", "l", "5"], arr(vec![bulk("a")])),
                (t, &["EXISTS", "l"], int(0)),
                (t, &["LPOP", "l"], nil()),
                (t, &["LPOP", "l", "2"], Reply::Array(None)),
            ],
        );
    }

    #[test]
    fn lmove_rpoplpush_blmove_and_lrange() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 5;
        let syntax = || err("ERR syntax error");
        check(
            &mut e,
            &[
                (t, &["LMOVE", "a", "b", "LEFT", "RIGHT"], nil()),
                (t, &["LMOVE", "a", "b", "up", "RIGHT"], syntax()),
                (t, &["LMOVE", "a", "b", "left", "down"], syntax()),
                (
                    t,
                    &["LMOVE", "a", "b", "LEFT"],
                    err("ERR wrong number of arguments for 'lmove' command"),
                ),
                (
                    t,
                    &["RPOPLPUSH", "a"],
                    err("ERR wrong number of arguments for 'rpoplpush' command"),
                ),
                (
                    t,
                    &["BLMOVE", "a", "b", "LEFT", "RIGHT"],
                    err("ERR wrong number of arguments for 'blmove' command"),
                ),
                (
                    t,
                    &["BRPOPLPUSH", "a", "b"],
                    err("ERR wrong number of arguments for 'brpoplpush' command"),
                ),
                (
                    t,
                    &["LRANGE", "a", "0"],
                    err("ERR wrong number of arguments for 'lrange' command"),
                ),
                // The ends are parsed before the timeout, the timeout before the key.
                (t, &["BLMOVE", "a", "b", "up", "RIGHT", "x"], syntax()),
                (
                    t,
                    &["BLMOVE", "a", "b", "left", "right", "x"],
                    err("ERR timeout is not a float or out of range"),
                ),
                (
                    t,
                    &["BLMOVE", "a", "b", "left", "right", "-1"],
                    err("ERR timeout is negative"),
                ),
                (
                    t,
                    &["BRPOPLPUSH", "a", "b", "x"],
                    err("ERR timeout is not a float or out of range"),
                ),
                // Nothing to move: a nil bulk (the server blocks on it; the engine never does).
                (t, &["BLMOVE", "a", "b", "LEFT", "RIGHT", "0"], nil()),
                (t, &["BRPOPLPUSH", "a", "b", "0"], nil()),
                (t, &["SET", "s", "v"], st("OK")),
                (t, &["LMOVE", "s", "b", "LEFT", "RIGHT"], err(WT)),
                (t, &["BLMOVE", "s", "b", "LEFT", "RIGHT", "0"], err(WT)),
                (t, &["LRANGE", "s", "0", "1"], err(WT)),
                // A missing source answers nil whatever the destination holds.
                (t, &["LMOVE", "a", "s", "LEFT", "RIGHT"], nil()),
                (t, &["RPUSH", "a", "1", "2", "3"], int(3)),
                (t, &["LMOVE", "a", "s", "LEFT", "RIGHT"], err(WT)),
                (t, &["BLMOVE", "a", "s", "LEFT", "RIGHT", "0"], err(WT)),
                (
                    t,
                    &["LRANGE", "a", "0", "-1"],
                    arr(vec![bulk("1"), bulk("2"), bulk("3")]),
                ),
                // The same key rotates.
                (t, &["RPOPLPUSH", "a", "a"], bulk("3")),
                (
                    t,
                    &["LRANGE", "a", "0", "-1"],
                    arr(vec![bulk("3"), bulk("1"), bulk("2")]),
                ),
                (t, &["LMOVE", "a", "a", "left", "left"], bulk("3")),
                (t, &["LMOVE", "a", "b", "RIGHT", "RIGHT"], bulk("2")),
                (t, &["BLMOVE", "a", "b", "LEFT", "LEFT", "0"], bulk("3")),
                (t, &["LRANGE", "b", "0", "-1"], arr(vec![bulk("3"), bulk("2")])),
                // The emptied source is deleted.
                (t, &["BRPOPLPUSH", "a", "b", "0"], bulk("1")),
                (t, &["EXISTS", "a"], int(0)),
                (
                    t,
                    &["LRANGE", "b", "0", "-1"],
                    arr(vec![bulk("1"), bulk("3"), bulk("2")]),
                ),
                (t, &["RPUSH", "one", "x"], int(1)),
                (t, &["RPOPLPUSH", "one", "one"], bulk("x")),
                (t, &["LRANGE", "one", "0", "-1"], arr(vec![bulk("x")])),
                // LRANGE's indexes.
                (t, &["LRANGE", "b", "x", "1"], err(NOT_INT)),
                (t, &["LRANGE", "nope", "0", "x"], err(NOT_INT)),
                (t, &["LRANGE", "nope", "0", "1"], arr(vec![])),
                (
                    t,
                    &["LRANGE", "b", "-100", "100"],
                    arr(vec![bulk("1"), bulk("3"), bulk("2")]),
                ),
                (t, &["LRANGE", "b", "-2", "-1"], arr(vec![bulk("3"), bulk("2")])),
                (t, &["LRANGE", "b", "1", "1"], arr(vec![bulk("3")])),
                (t, &["LRANGE", "b", "5", "1"], arr(vec![])),
                (t, &["LRANGE", "b", "1", "0"], arr(vec![])),
                (t, &["LRANGE", "b", "-1", "-2"], arr(vec![])),
                (t, &["LRANGE", "b", "3", "9223372036854775807"], arr(vec![])),
                (t, &["LRANGE", "b", "-9223372036854775808", "0"], arr(vec![bulk("1")])),
            ],
        );
        assert_eq!(e.keyspace().used_bytes(), e.keyspace().recount_used_bytes());
        // Inside MULTI the blocking forms answer at once: nil bulks, BLPOP a nil array.
        let mut s = ClientSession::new(1);
        let mut run = |cmd: &[&str]| e.execute_as(&mut s, &args(cmd), t);
        assert_eq!(run(&["MULTI"]), st("OK"));
        assert_eq!(run(&["BLMOVE", "q", "b", "LEFT", "RIGHT", "0"]), st("QUEUED"));
        assert_eq!(run(&["BRPOPLPUSH", "q", "b", "0"]), st("QUEUED"));
        assert_eq!(run(&["BLPOP", "q", "0"]), st("QUEUED"));
        assert_eq!(run(&["EXEC"]), arr(vec![nil(), nil(), Reply::Array(None)]));
        // Scripts may not call them (Redis 7.0 flags them `noscript`, as BLPOP).
        let Reply::Error(e1) = e.execute(
            &args(&["EVAL", "return redis.call('blmove','q','b','left','left',0)", "0"]),
            t,
        ) else {
            panic!("BLMOVE in a script must fail");
        };
        assert!(
            e1.starts_with("ERR This Redis command is not allowed from script"),
            "{e1}"
        );
    }

    #[test]
    fn hashes() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 5;
        check(
            &mut e,
            &[
                (
                    t,
                    &["HSET", "h", "a"],
                    err("ERR wrong number of arguments for 'hset' command"),
                ),
                (t, &["HSET", "h", "a", "1", "b", "2", "a", "3"], int(2)),
                (
                    t,
                    &["HGETALL", "h"],
                    arr(vec![bulk("a"), bulk("3"), bulk("b"), bulk("2")]),
                ),
                (t, &["HGET", "h", "a"], bulk("3")),
                (t, &["HGET", "h", "z"], nil()),
                (t, &["HEXISTS", "h", "b"], int(1)),
                (t, &["HINCRBY", "h", "a", "x"], err(NOT_INT)),
                (t, &["HINCRBY", "h", "n", "-4"], int(-4)),
                (t, &["HSET", "h", "s", "x"], int(1)),
                (t, &["HINCRBY", "h", "s", "1"], err("ERR hash value is not an integer")),
                (
                    t,
                    &["HINCRBY", "h", "a", "9223372036854775807"],
                    err("ERR increment or decrement would overflow"),
                ),
                (t, &["TYPE", "h"], st("hash")),
                (t, &["GET", "h"], err(WT)),
                (t, &["HDEL", "h", "a", "b", "s", "zz"], int(3)),
                (t, &["HDEL", "h", "n"], int(1)),
                (t, &["EXISTS", "h"], int(0)),
                (t, &["HGETALL", "h"], arr(vec![])),
                (t, &["SET", "s", "v"], st("OK")),
                (t, &["HGET", "s", "a"], err(WT)),
                (t, &["HSET", "s", "a", "1"], err(WT)),
                (
                    t,
                    &["EVAL", "return redis.call('hincrby', KEYS[1], 'c', 2)", "1", "r"],
                    int(2),
                ),
            ],
        );
    }

    #[test]
    fn transactions_and_watch() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let (mut s1, mut s2) = (ClientSession::new(1), ClientSession::new(2));
        let run = |e: &mut RedisEngine, s: &mut ClientSession, cmd: &[&str]| e.execute_as(s, &args(cmd), 5);
        assert_eq!(run(&mut e, &mut s1, &["EXEC"]), err("ERR EXEC without MULTI"));
        assert_eq!(run(&mut e, &mut s1, &["MULTI"]), st("OK"));
        assert_eq!(run(&mut e, &mut s1, &["SET", "k", "1"]), st("QUEUED"));
        assert_eq!(run(&mut e, &mut s1, &["INCR", "k"]), st("QUEUED"));
        assert_eq!(run(&mut e, &mut s1, &["EXEC"]), arr(vec![st("OK"), int(2)]));
        // A write by another session, even of the same value, aborts the watcher's EXEC.
        assert_eq!(run(&mut e, &mut s1, &["WATCH", "k"]), st("OK"));
        assert_eq!(run(&mut e, &mut s2, &["SET", "k", "2"]), st("OK"));
        assert_eq!(run(&mut e, &mut s1, &["MULTI"]), st("OK"));
        assert_eq!(run(&mut e, &mut s1, &["GET", "k"]), st("QUEUED"));
        assert_eq!(run(&mut e, &mut s1, &["EXEC"]), Reply::Array(None));
        // Reads and failed writes do not.
        assert_eq!(run(&mut e, &mut s1, &["WATCH", "k"]), st("OK"));
        assert_eq!(run(&mut e, &mut s2, &["SET", "k", "3", "NX"]), nil());
        assert_eq!(run(&mut e, &mut s2, &["GET", "k"]), bulk("2"));
        assert_eq!(run(&mut e, &mut s1, &["MULTI"]), st("OK"));
        assert_eq!(run(&mut e, &mut s1, &["GET", "k"]), st("QUEUED"));
        assert_eq!(run(&mut e, &mut s1, &["EXEC"]), arr(vec![bulk("2")]));
        // Expiry touches a watched key.
        assert_eq!(run(&mut e, &mut s1, &["SET", "t", "v", "PX", "10"]), st("OK"));
        assert_eq!(run(&mut e, &mut s1, &["WATCH", "t"]), st("OK"));
        assert_eq!(e.expire_due(100), vec![Bytes::from_static(b"t")]);
        assert_eq!(run(&mut e, &mut s1, &["MULTI"]), st("OK"));
        assert_eq!(run(&mut e, &mut s1, &["EXEC"]), Reply::Array(None));
        // A refused command makes EXEC abort.
        assert_eq!(run(&mut e, &mut s1, &["MULTI"]), st("OK"));
        assert_eq!(
            run(&mut e, &mut s1, &["GET"]),
            err("ERR wrong number of arguments for 'get' command")
        );
        assert_eq!(
            run(&mut e, &mut s1, &["EXEC"]),
            err("EXECABORT Transaction discarded because of previous errors.")
        );
        assert_eq!(run(&mut e, &mut s1, &["DISCARD"]), err("ERR DISCARD without MULTI"));
        assert!(e.watchers.is_empty() && e.dirty.is_empty());
    }

    #[test]
    fn sharded_subscriptions_in_the_engine_multi_and_scripts() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let mut sub = ClientSession::new(7);
        assert_eq!(
            e.execute_conn(&mut sub, &args(&["SSUBSCRIBE", "a", "b", "a"]), 0),
            vec![
                arr(vec![bulk("ssubscribe"), bulk("a"), int(1)]),
                arr(vec![bulk("ssubscribe"), bulk("b"), int(2)]),
                arr(vec![bulk("ssubscribe"), bulk("a"), int(2)]),
            ]
        );
        assert_eq!(sub.subscription_count(), 0);
        assert!(sub.is_subscribed());
        assert_eq!(e.execute(&args(&["SPUBLISH", "a", "m"]), 0), int(1));
        assert_eq!(e.execute(&args(&["PUBLISH", "a", "m"]), 0), int(0));
        assert_eq!(
            e.take_pushes(),
            vec![(7, arr(vec![bulk("smessage"), bulk("a"), bulk("m")]))]
        );
        // From a script too.
        assert_eq!(
            e.execute(&args(&["EVAL", "return redis.call('spublish', 'b', 'x')", "0"]), 0),
            int(1)
        );
        assert_eq!(e.take_pushes().len(), 1);
        assert_eq!(
            e.execute(&args(&["PUBSUB", "SHARDCHANNELS", "a", "b"]), 0),
            err("ERR unknown subcommand or wrong number of arguments for 'SHARDCHANNELS'. Try PUBSUB HELP.")
        );
        assert_eq!(
            e.execute(&args(&["PUBSUB", "CHANNELS", "a", "b"]), 0),
            err("ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.")
        );
        assert_eq!(
            e.execute_conn(&mut sub, &args(&["SUNSUBSCRIBE", "b", "q"]), 0),
            vec![
                arr(vec![bulk("sunsubscribe"), bulk("b"), int(1)]),
                arr(vec![bulk("sunsubscribe"), bulk("q"), int(1)]),
            ]
        );
        e.forget_session(&mut sub);
        assert_eq!(e.execute(&args(&["SPUBLISH", "a", "m"]), 0), int(0));
        assert_eq!(
            e.execute(&args(&["PUBSUB", "SHARDNUMSUB", "a"]), 0),
            arr(vec![bulk("a"), int(0)])
        );
        // Inside MULTI: queued, refused by EXEC as Redis refuses it.
        let mut tx = ClientSession::new(9);
        e.execute_conn(&mut tx, &args(&["MULTI"]), 0);
        assert_eq!(
            e.execute_conn(&mut tx, &args(&["SSUBSCRIBE", "m"]), 0),
            vec![st("QUEUED")]
        );
        assert_eq!(
            e.execute_conn(&mut tx, &args(&["EXEC"]), 0),
            vec![arr(vec![err(
                "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"
            )])]
        );
        // CLIENT KILL/PAUSE inside a transaction: the engine's answers.
        e.execute_conn(&mut tx, &args(&["MULTI"]), 0);
        e.execute_conn(&mut tx, &args(&["CLIENT", "KILL", "ID", "12"]), 0);
        e.execute_conn(&mut tx, &args(&["CLIENT", "KILL", "1.2.3.4:5"]), 0);
        e.execute_conn(&mut tx, &args(&["CLIENT", "PAUSE", "10", "WRITE"]), 0);
        e.execute_conn(&mut tx, &args(&["CLIENT", "UNPAUSE"]), 0);
        assert_eq!(
            e.execute_conn(&mut tx, &args(&["EXEC"]), 0),
            vec![arr(vec![int(0), err("ERR No such client"), st("OK"), st("OK")])]
        );
    }

    #[test]
    fn publish_and_subscribe() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let (mut sub, mut publisher) = (ClientSession::new(7), ClientSession::new(8));
        assert_eq!(
            e.execute_conn(&mut sub, &args(&["SUBSCRIBE", "c", "d"]), 0),
            vec![
                arr(vec![bulk("subscribe"), bulk("c"), int(1)]),
                arr(vec![bulk("subscribe"), bulk("d"), int(2)])
            ]
        );
        assert_eq!(e.execute_as(&mut publisher, &args(&["PUBLISH", "c", "m"]), 0), int(1));
        assert_eq!(
            e.take_pushes(),
            vec![(7, arr(vec![bulk("message"), bulk("c"), bulk("m")]))]
        );
        assert!(e.execute_conn(&mut sub, &args(&["GET", "c"]), 0)[0].is_error());
        e.forget_session(&mut sub);
        assert_eq!(e.execute_as(&mut publisher, &args(&["PUBLISH", "c", "m"]), 0), int(0));
        assert!(e.take_pushes().is_empty());
    }

    #[test]
    fn blocking_timeouts() {
        use crate::syntax::blocking_timeout_ms;
        assert_eq!(blocking_timeout_ms(b"0"), Ok(0));
        assert_eq!(blocking_timeout_ms(b"0.0011"), Ok(2));
        assert_eq!(blocking_timeout_ms(b"1.5"), Ok(1500));
        // 9223372036854775 s is 9223372036854775000 ms: in range (an f64 rounds it past it).
        assert_eq!(blocking_timeout_ms(b"9223372036854775"), Ok(9_223_372_036_854_775_000));
        for bad in [&b"x"[..], b"", b" 1", b"nan"] {
            assert_eq!(
                blocking_timeout_ms(bad),
                Err(err("ERR timeout is not a float or out of range"))
            );
        }
        for negative in [&b"-1"[..], b"1e400", b"inf", b"9999999999999999"] {
            assert_eq!(blocking_timeout_ms(negative), Err(err("ERR timeout is negative")));
        }
    }

    #[test]
    fn expire_family() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 10_000;
        check(
            &mut e,
            &[
                (t, &["PEXPIRE", "k", "100"], int(0)),
                (t, &["PTTL", "k"], int(-2)),
                (t, &["TTL", "k"], int(-2)),
                (t, &["SET", "k", "v"], st("OK")),
                (t, &["PTTL", "k"], int(-1)),
                (t, &["TTL", "k"], int(-1)),
                (t, &["PEXPIRE", "k", "abc"], err(NOT_INT)),
                (t, &["PEXPIRE", "k", "100", "FOO"], err("ERR Unsupported option FOO")),
                (
                    t,
                    &["PEXPIRE", "k", "100", "NX", "XX"],
                    err("ERR NX and XX, GT or LT options at the same time are not compatible"),
                ),
                (
                    t,
                    &["PEXPIRE", "k", "100", "GT", "LT"],
                    err("ERR GT and LT options at the same time are not compatible"),
                ),
                (t, &["PEXPIRE", "k", "100", "XX"], int(0)),
                (t, &["PEXPIRE", "k", "100", "GT"], int(0)),
                (t, &["PEXPIRE", "k", "500", "LT"], int(1)),
                (t, &["PTTL", "k"], int(500)),
                (t, &["PEXPIRE", "k", "100", "NX"], int(0)),
                (t, &["PEXPIRE", "k", "400", "GT"], int(0)),
                (t, &["PEXPIRE", "k", "600", "gt"], int(1)),
                (t, &["PEXPIRE", "k", "700", "LT"], int(0)),
                (t, &["PEXPIRE", "k", "300", "LT", "XX"], int(1)),
                (t, &["PTTL", "k"], int(300)),
                (t, &["EXPIRE", "k", "5"], int(1)),
                (t, &["TTL", "k"], int(5)),
                (t, &["PTTL", "k"], int(5000)),
                (
                    t,
                    &["EXPIRE", "k", "9223372036854775807"],
                    err("ERR invalid expire time in 'expire' command"),
                ),
                (
                    t,
                    &["PEXPIRE", "k", "9223372036854775807"],
                    err("ERR invalid expire time in 'pexpire' command"),
                ),
                (t, &["EXPIREAT", "k", "20"], int(1)),
                (t, &["PTTL", "k"], int(10_000)),
                (t, &["PEXPIREAT", "k", "15000"], int(1)),
                (t, &["PTTL", "k"], int(5_000)),
                (t, &["PERSIST", "k"], int(1)),
                (t, &["PERSIST", "k"], int(0)),
                (t, &["PERSIST", "nope"], int(0)),
                (t, &["PTTL", "k"], int(-1)),
                // A non-positive relative TTL, or an absolute time not in the future, deletes.
                (t, &["PEXPIRE", "k", "0"], int(1)),
                (t, &["EXISTS", "k"], int(0)),
                (t, &["SET", "k", "v"], st("OK")),
                (t, &["PEXPIRE", "k", "-5"], int(1)),
                (t, &["GET", "k"], nil()),
                (t, &["SET", "k", "v"], st("OK")),
                (t, &["PEXPIREAT", "k", "10000"], int(1)),
                (t, &["GET", "k"], nil()),
                (t, &["SET", "k", "v"], st("OK")),
                (t, &["EXPIRE", "k", "-1", "LT"], int(1)),
                (t, &["EXISTS", "k"], int(0)),
            ],
        );
    }

    #[test]
    fn expiry_at_the_exact_millisecond() {
        // Redis' rule (db.c keyIsExpired: `now > when`): SET PX 100 at t=1000 gives an expiry
        // of 1100; the key is still there at 1100 (PTTL 0) and gone at 1101.
        let mut e = RedisEngine::new(EngineConfig::default());
        check(
            &mut e,
            &[
                (1000, &["SET", "k", "v", "PX", "100"], st("OK")),
                (1000, &["PTTL", "k"], int(100)),
                (1099, &["PTTL", "k"], int(1)),
                (1099, &["GET", "k"], bulk("v")),
                (1100, &["PTTL", "k"], int(0)),
                (1100, &["GET", "k"], bulk("v")),
                (1100, &["EXISTS", "k"], int(1)),
                (1101, &["GET", "k"], nil()),
                (1101, &["PTTL", "k"], int(-2)),
                (1101, &["EXISTS", "k"], int(0)),
            ],
        );
        assert!(e.keyspace().is_empty());
    }

    #[test]
    fn active_expiry_returns_due_keys_in_key_order() {
        let mut e = RedisEngine::new(EngineConfig::default());
        check(
            &mut e,
            &[
                (1000, &["SET", "b", "v", "PX", "100"], st("OK")),
                (1000, &["SET", "a", "v", "PX", "100"], st("OK")),
                (1000, &["SET", "c", "v", "PX", "50"], st("OK")),
                (1000, &["SET", "d", "v"], st("OK")),
            ],
        );
        assert!(e.expire_due(1050).is_empty());
        assert_eq!(e.key_count(1051), 3);
        assert_eq!(e.expire_due(1051), vec![Bytes::from_static(b"c")]);
        assert!(e.expire_due(1100).is_empty());
        assert_eq!(
            e.expire_due(1101),
            vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")]
        );
        assert_eq!(e.key_count(1101), 1);
        assert_eq!(e.execute(&args(&["DBSIZE"]), 1101), int(1));
    }

    #[test]
    fn wall_clock_jumps_move_expiry() {
        let mut e = RedisEngine::new(EngineConfig::default());
        check(
            &mut e,
            &[
                (1_000, &["SET", "lock", "tok", "PX", "30000"], st("OK")),
                // The node's clock jumps back: the lock lives longer in real time.
                (500, &["PTTL", "lock"], int(30_500)),
                // The node's clock jumps forward past the expiry: gone at once.
                (61_000, &["GET", "lock"], nil()),
                (61_000, &["SET", "lock", "other", "NX", "PX", "30000"], st("OK")),
            ],
        );
        // Active expiry after a forward jump.
        e.execute(&args(&["SET", "x", "1", "PX", "10"]), 61_000);
        assert_eq!(
            e.expire_due(1_000_000),
            vec![Bytes::from_static(b"lock"), Bytes::from_static(b"x")]
        );
    }

    #[test]
    fn reset_and_restore() {
        let mut e = RedisEngine::new(EngineConfig::default());
        e.execute(&args(&["SET", "k", "v", "PX", "100"]), 0);
        let load = e.execute(&args(&["SCRIPT", "LOAD", "return 1"]), 0);
        let snapshot = e.keyspace().clone();
        e.reset();
        assert!(e.keyspace().is_empty());
        assert_eq!(e.execute(&args(&["GET", "k"]), 0), nil());
        let Reply::Bulk(Some(sha)) = load else {
            panic!("SCRIPT LOAD gave {load:?}");
        };
        let sha = String::from_utf8_lossy(&sha).into_owned();
        assert_eq!(
            e.execute(&args(&["EVALSHA", &sha, "0"]), 0),
            err("NOSCRIPT No matching script. Please use EVAL.")
        );
        e.restore(snapshot.clone());
        assert_eq!(e.keyspace(), &snapshot);
        assert_eq!(e.execute(&args(&["PTTL", "k"]), 0), int(100));
    }

    #[test]
    fn no_panic_on_odd_input() {
        let mut e = RedisEngine::new(EngineConfig::default());
        assert_eq!(
            e.execute(&[], 0),
            err("ERR unknown command '', with args beginning with: ")
        );
        let junk = vec![Bytes::from(vec![0xff, 0xfe]), Bytes::from(vec![0u8; 300])];
        assert!(e.execute(&junk, 0).is_error());
        for cmd in [
            &["SET", "k", "v", "EX", "-9223372036854775808"][..],
            &["PEXPIRE", "k", "-9223372036854775808"],
            &["EXPIRE", "k", "-9223372036854775808"],
            &["PEXPIREAT", "k", "9223372036854775807"],
            &["INCRBY", "k", "9223372036854775807"],
            &["EVAL", "return 1", "9223372036854775807"],
            &["EVAL", "return 1", "-9223372036854775808"],
            &["SWAPDB", "9223372036854775807", "-9223372036854775808"],
            &["SELECT", "2147483647"],
            &["FUNCTION", "LOAD", "#!lua name=\u{e9}\n"],
            &["FUNCTION", "LOAD", "#!\u{e9}\u{e9}\u{e9} name=x\n"],
            &["FUNCTION", "LOAD", "#!lua name=loop\nwhile true do end"],
            &[
                "FUNCTION",
                "LOAD",
                "#!lua name=esc\nend redis.register_function('f', function() end) local function g()",
            ],
            &[
                "FUNCTION",
                "LOAD",
                "#!lua name=l\nredis.register_function('f', function(k, a) return redis.call('fcall', 'f', 0) end)",
            ],
            &["FCALL", "f", "9223372036854775807"],
            &["FCALL", "f", "0"],
            &["FUNCTION", "LIST", "LIBRARYNAME", "[", "WITHCODE"],
            &["AUTH", "\u{e9}", "\u{e9}"],
        ] {
            let _ = e.execute(&args(cmd), i64::MAX);
            let _ = e.execute(&args(cmd), i64::MIN);
            let _ = e.execute(&args(cmd), 0);
        }
        let _ = e.expire_due(i64::MIN);
        let _ = e.expire_due(i64::MAX);
    }

    #[test]
    fn sets_and_their_wrongtype_interplay() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 1_000;
        check(
            &mut e,
            &[
                (t, &["SADD", "s", "b", "a", "c"], int(3)),
                (t, &["SADD", "s", "a"], int(0)),
                (t, &["SMEMBERS", "s"], arr(vec![bulk("a"), bulk("b"), bulk("c")])),
                (t, &["SISMEMBER", "s", "a"], int(1)),
                (t, &["SISMEMBER", "s", "z"], int(0)),
                (t, &["SCARD", "s"], int(3)),
                (t, &["TYPE", "s"], st("set")),
                (t, &["GET", "s"], err(WT)),
                (t, &["LPUSH", "s", "x"], err(WT)),
                (t, &["SREM", "s", "a", "z"], int(1)),
                (t, &["SREM", "nokey", "a"], int(0)),
                (t, &["SCARD", "nokey"], int(0)),
                (t, &["SMEMBERS", "nokey"], arr(vec![])),
                (t, &["SISMEMBER", "nokey", "a"], int(0)),
                (t, &["SET", "str", "v"], st("OK")),
                (t, &["SADD", "str", "a"], err(WT)),
                (t, &["SREM", "str", "a"], err(WT)),
                (t, &["SMEMBERS", "str"], err(WT)),
                (t, &["SISMEMBER", "str", "a"], err(WT)),
                (t, &["SCARD", "str"], err(WT)),
                (
                    t,
                    &["SADD", "s"],
                    err("ERR wrong number of arguments for 'sadd' command"),
                ),
                // Redis 7.0: a set of strings is a hashtable (7.2 added small listpack sets).
                (t, &["OBJECT", "ENCODING", "s"], bulk("hashtable")),
                (t, &["SADD", "n", "1", "2"], int(2)),
                (t, &["OBJECT", "ENCODING", "n"], bulk("intset")),
                (t, &["PEXPIRE", "s", "100"], int(1)),
                (t + 100, &["SCARD", "s"], int(2)),
                (t + 101, &["SCARD", "s"], int(0)),
                (t + 101, &["EXISTS", "s"], int(0)),
                (t, &["SREM", "n", "1", "2"], int(2)),
                (t, &["EXISTS", "n"], int(0)),
                (t, &["SADD", "d", "x"], int(1)),
                (t, &["DEL", "d"], int(1)),
                (
                    t,
                    &["EVAL", "return redis.call('sadd', KEYS[1], ARGV[1])", "1", "l", "m"],
                    int(1),
                ),
                (
                    t,
                    &["EVAL", "return redis.call('smembers', KEYS[1])", "1", "l"],
                    arr(vec![bulk("m")]),
                ),
            ],
        );
        assert_eq!(e.keyspace().used_bytes(), e.keyspace().recount_used_bytes());
    }

    #[test]
    fn unlink_is_del_and_quit_answers_ok_even_inside_multi() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 1_000;
        check(
            &mut e,
            &[
                (t, &["MSET", "a", "1", "b", "2"], st("OK")),
                (t, &["UNLINK", "a", "b", "none"], int(2)),
                (t, &["EXISTS", "a", "b"], int(0)),
                (
                    t,
                    &["UNLINK"],
                    err("ERR wrong number of arguments for 'unlink' command"),
                ),
                (t, &["QUIT"], st("OK")),
                (t, &["QUIT", "extra"], st("OK")),
                (
                    t,
                    &["EVAL", "return redis.call('QUIT')", "0"],
                    err("ERR This Redis command is not allowed from script script: b4c03afa57e9a938dacc85ed3050f6c4fa7750b1, on @user_script:1."),
                ),
                // Not queued: the server closes the connection after this reply.
                (t, &["MULTI"], st("OK")),
                (t, &["QUIT"], st("OK")),
            ],
        );
        assert!(is_write_command(b"unlink"));
    }

    #[test]
    fn mset_mget_msetnx() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 1_000;
        check(
            &mut e,
            &[
                (t, &["SET", "e", "1", "EX", "100"], st("OK")),
                (t, &["MSET", "a", "1", "e", "2"], st("OK")),
                (t, &["TTL", "e"], int(-1)),
                (
                    t,
                    &["MSET", "a"],
                    err("ERR wrong number of arguments for 'mset' command"),
                ),
                (
                    t,
                    &["MSET", "a", "1", "b"],
                    err("ERR wrong number of arguments for 'mset' command"),
                ),
                (t, &["SADD", "s", "x"], int(1)),
                (
                    t,
                    &["MGET", "a", "nokey", "e", "s"],
                    arr(vec![bulk("1"), nil(), bulk("2"), nil()]),
                ),
                (t, &["MSETNX", "a", "9", "c", "3"], int(0)),
                (t, &["GET", "c"], nil()),
                (t, &["MSETNX", "c", "3", "d", "4"], int(1)),
                (t, &["MGET", "c", "d"], arr(vec![bulk("3"), bulk("4")])),
                (t, &["MGET"], err("ERR wrong number of arguments for 'mget' command")),
            ],
        );
    }

    #[test]
    fn databases_are_separate_per_connection_and_script() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let (mut a, mut b) = (ClientSession::new(1), ClientSession::new(2));
        let t = 1_000;
        let run = |e: &mut RedisEngine, s: &mut ClientSession, cmd: &[&str]| e.execute_as(s, &args(cmd), t);
        assert_eq!(run(&mut e, &mut a, &["SET", "k", "zero"]), st("OK"));
        assert_eq!(run(&mut e, &mut a, &["SELECT", "1"]), st("OK"));
        assert_eq!(run(&mut e, &mut a, &["GET", "k"]), nil());
        assert_eq!(run(&mut e, &mut a, &["SET", "k", "one", "PX", "50"]), st("OK"));
        assert!(e.take_effects().is_empty(), "only database 0 is in the history");
        assert_eq!(run(&mut e, &mut a, &["DBSIZE"]), int(1));
        assert_eq!(run(&mut e, &mut b, &["GET", "k"]), bulk("zero"));
        assert_eq!(run(&mut e, &mut b, &["DBSIZE"]), int(1));
        // A script runs in its caller's database; its SELECT is its own.
        assert_eq!(
            run(
                &mut e,
                &mut a,
                &[
                    "EVAL",
                    "local x = redis.call('get','k') redis.call('select','0') return {x, redis.call('get','k')}",
                    "0"
                ]
            ),
            arr(vec![bulk("one"), bulk("zero")])
        );
        assert_eq!(run(&mut e, &mut a, &["GET", "k"]), bulk("one"));
        // WATCH is per database.
        assert_eq!(run(&mut e, &mut b, &["WATCH", "k"]), st("OK"));
        assert_eq!(run(&mut e, &mut a, &["SET", "k", "one-again"]), st("OK"));
        assert_eq!(run(&mut e, &mut b, &["MULTI"]), st("OK"));
        assert_eq!(run(&mut e, &mut b, &["GET", "k"]), st("QUEUED"));
        assert_eq!(run(&mut e, &mut b, &["EXEC"]), arr(vec![bulk("zero")]));
        assert_eq!(run(&mut e, &mut b, &["WATCH", "k"]), st("OK"));
        assert_eq!(run(&mut e, &mut a, &["SWAPDB", "0", "1"]), st("OK"));
        assert_eq!(run(&mut e, &mut b, &["MULTI"]), st("OK"));
        assert_eq!(run(&mut e, &mut b, &["GET", "k"]), st("QUEUED"));
        assert_eq!(run(&mut e, &mut b, &["EXEC"]), Reply::Array(None));
        assert_eq!(run(&mut e, &mut b, &["GET", "k"]), bulk("one-again"));
        assert_eq!(run(&mut e, &mut a, &["GET", "k"]), bulk("zero"));
        // The snapshot holds every database; expiry reaches them all.
        let snapshot = e.keyspace().clone();
        assert_eq!(run(&mut e, &mut a, &["FLUSHDB"]), st("OK"));
        assert_eq!(run(&mut e, &mut b, &["DBSIZE"]), int(1));
        assert_eq!(run(&mut e, &mut a, &["DBSIZE"]), int(0));
        e.restore(snapshot);
        assert_eq!(run(&mut e, &mut a, &["GET", "k"]), bulk("zero"));
        assert_eq!(run(&mut e, &mut b, &["PEXPIRE", "k", "10"]), int(1));
        assert_eq!(e.keyspace().next_expiry_ms(), Some(t + 10));
        assert_eq!(e.expire_due(t + 11), vec![Bytes::from_static(b"k")]);
        assert_eq!(run(&mut e, &mut b, &["SELECT", "2"]), st("OK"));
        assert_eq!(run(&mut e, &mut b, &["SET", "y", "1", "PX", "10"]), st("OK"));
        assert_eq!(e.keyspace().next_expiry_ms(), Some(t + 10));
        assert!(
            e.expire_due(t + 11).is_empty(),
            "keys expiring outside database 0 are not replicated"
        );
        assert_eq!(e.keyspace().db(2).map(Keyspace::len), Some(0), "but they are removed");
        assert_eq!(run(&mut e, &mut a, &["FLUSHDB"]), st("OK"));
        assert_eq!(run(&mut e, &mut a, &["SET", "x", "1"]), st("OK"));
        assert_eq!(
            run(&mut e, &mut a, &["INFO", "keyspace"]),
            bulk("# Keyspace\r\ndb1:keys=1,expires=0,avg_ttl=0\r\n")
        );
        assert_eq!(run(&mut e, &mut a, &["FLUSHALL"]), st("OK"));
        assert_eq!(run(&mut e, &mut a, &["DBSIZE"]), int(0));
        assert_eq!(e.keyspace(), &Keyspace::new());
        for (cmd, want) in [
            (&["SWAPDB", "0", "16"][..], "ERR DB index is out of range"),
            (&["SWAPDB", "x", "1"][..], "ERR invalid first DB index"),
            (&["SWAPDB", "0", "x"][..], "ERR invalid second DB index"),
            (&["SWAPDB", "-1", "0"][..], "ERR DB index is out of range"),
        ] {
            assert_eq!(run(&mut e, &mut a, cmd), err(want), "{cmd:?}");
        }
        assert_eq!(
            run(&mut e, &mut a, &["CONFIG", "GET", "databases"]),
            arr(vec![bulk("databases"), bulk("16")])
        );
    }

    #[test]
    fn auth_with_requirepass() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let (mut a, mut b, mut c) = (ClientSession::new(1), ClientSession::new(2), ClientSession::new(3));
        let t = 1_000;
        let run = |e: &mut RedisEngine, s: &mut ClientSession, cmd: &[&str]| e.execute_as(s, &args(cmd), t);
        let no_password = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
        let wrongpass = "WRONGPASS invalid username-password pair or user is disabled.";
        assert_eq!(run(&mut e, &mut a, &["AUTH", "x"]), err(no_password));
        assert_eq!(run(&mut e, &mut a, &["AUTH", "default", "x"]), st("OK"));
        assert_eq!(run(&mut e, &mut a, &["AUTH", "someone", "x"]), err(wrongpass));
        assert_eq!(run(&mut e, &mut a, &["AUTH", "a", "b", "c"]), err("ERR syntax error"));
        assert_eq!(run(&mut e, &mut a, &["CONFIG", "SET", "requirepass", "pw"]), st("OK"));
        assert_eq!(
            run(&mut e, &mut a, &["GET", "k"]),
            nil(),
            "a connection that was in stays in"
        );
        assert_eq!(run(&mut e, &mut b, &["GET", "k"]), err(NOAUTH));
        assert_eq!(
            run(&mut e, &mut b, &["nosuch"]),
            err("ERR unknown command 'nosuch', with args beginning with: ")
        );
        assert_eq!(
            run(&mut e, &mut b, &["GET"]),
            err("ERR wrong number of arguments for 'get' command")
        );
        assert_eq!(
            run(&mut e, &mut b, &["EXEC"]),
            err("EXECABORT Transaction discarded because of: NOAUTH Authentication required.")
        );
        assert_eq!(
            e.execute_conn(&mut b, &args(&["SUBSCRIBE", "ch"]), t),
            vec![err(NOAUTH)]
        );
        assert_eq!(run(&mut e, &mut b, &["HELLO", "3"]), err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
        assert_eq!(
            run(&mut e, &mut b, &["HELLO", "3", "AUTH", "default", "no"]),
            err(wrongpass)
        );
        assert_eq!(run(&mut e, &mut b, &["AUTH", "wrong"]), err(wrongpass));
        assert_eq!(run(&mut e, &mut b, &["AUTH", "other", "pw"]), err(wrongpass));
        assert_eq!(run(&mut e, &mut b, &["AUTH", "pw"]), st("OK"));
        assert_eq!(run(&mut e, &mut b, &["GET", "k"]), nil());
        assert!(matches!(
            run(&mut e, &mut c, &["HELLO", "2", "AUTH", "default", "pw"]),
            Reply::Array(Some(_))
        ));
        assert_eq!(run(&mut e, &mut c, &["GET", "k"]), nil());
        assert_eq!(run(&mut e, &mut a, &["CONFIG", "SET", "requirepass", ""]), st("OK"));
        let mut d = ClientSession::new(4);
        assert_eq!(run(&mut e, &mut d, &["GET", "k"]), nil());
    }

    #[test]
    fn functions_load_list_call_delete() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let t = 1_000;
        let lib = "#!lua name=mylib\nredis.register_function('echo1', function(keys, args) return args[1] end)\n\
                   redis.register_function{function_name='ro', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}}\n\
                   redis.register_function('setit', function(keys, args)\n return redis.call('set', keys[1], args[1]) end)\n\
                   redis.register_function('bad', function(keys, args)\n return undefined_x end)";
        let list_row = |with_code: bool| {
            let f = |name: &str, flags: Vec<Reply>| {
                arr(vec![
                    bulk("name"),
                    bulk(name),
                    bulk("description"),
                    nil(),
                    bulk("flags"),
                    arr(flags),
                ])
            };
            let mut row = vec![
                bulk("library_name"),
                bulk("mylib"),
                bulk("engine"),
                bulk("LUA"),
                bulk("functions"),
                arr(vec![
                    f("echo1", vec![]),
                    f("ro", vec![st("no-writes")]),
                    f("setit", vec![]),
                    f("bad", vec![]),
                ]),
            ];
            if with_code {
                row.extend([bulk("library_code"), bulk(lib)]);
            }
            arr(vec![arr(row)])
        };
        check(
            &mut e,
            &[
                (t, &["FUNCTION", "LOAD", lib], bulk("mylib")),
                (t, &["FUNCTION", "LOAD", lib], err("ERR Library 'mylib' already exists")),
                (t, &["FUNCTION", "LOAD", "REPLACE", lib], bulk("mylib")),
                (t, &["FCALL", "echo1", "0", "hello"], bulk("hello")),
                (t, &["FCALL", "setit", "1", "k", "v"], st("OK")),
                (t, &["FCALL", "ro", "1", "k"], bulk("v")),
                (t, &["FCALL_RO", "ro", "1", "k"], bulk("v")),
                (t, &["FCALL_RO", "setit", "1", "k", "v"], err("ERR Can not execute a script with write flag using *_ro command.")),
                (t, &["FCALL", "nosuch", "0"], err("ERR Function not found")),
                (t, &["FCALL", "echo1", "x"], err("ERR Bad number of keys provided")),
                (t, &["FCALL", "echo1", "2", "a"], err("ERR Number of keys can't be greater than number of args")),
                (t, &["FCALL", "echo1", "-1"], err("ERR Number of keys can't be negative")),
                (
                    t,
                    &["FCALL", "bad", "0"],
                    err("ERR user_function:7: Script attempted to access nonexistent global variable 'undefined_x' script: bad, on @user_function:7."),
                ),
                (t, &["FUNCTION", "LIST"], list_row(false)),
                (t, &["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "my*"], list_row(true)),
                (t, &["FUNCTION", "LIST", "LIBRARYNAME", "my"], arr(vec![])),
                (t, &["FUNCTION", "LIST", "x"], err("ERR Unknown argument x")),
                (
                    t,
                    &["FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('echo1', function() end)"],
                    err("ERR Function echo1 already exists"),
                ),
                (
                    t,
                    &["FUNCTION", "LOAD", "#!lua name=x\nlocal a = undefined_global"],
                    err("ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'undefined_global'"),
                ),
                (
                    t,
                    &["FUNCTION", "LOAD", "#!lua name=x\nredis.call('set','a','1')"],
                    err("ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"),
                ),
                (t, &["FUNCTION", "LOAD", "#!lua name=x\nreturn 1"], err("ERR No functions registered")),
                (
                    t,
                    &["FUNCTION", "LOAD", "#!lua name=x\nfoo("],
                    err("ERR Error compiling function: user_function:2: unexpected symbol near '<eof>'"),
                ),
                (
                    t,
                    &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', 1)"],
                    err("ERR Error registering functions: ERR second argument to redis.register_function must be a function"),
                ),
                (
                    t,
                    &["FUNCTION", "LOAD", "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={'bad'}}"],
                    err("ERR Error registering functions: ERR unknown flag given"),
                ),
                (
                    t,
                    &["FUNCTION", "LOAD", "#!lua name=x\nx = 1"],
                    err("ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"),
                ),
                (t, &["EVAL", "return redis.call('fcall', 'echo1', 0)", "0"], Reply::Error(format!(
                    "ERR This Redis command is not allowed from script script: {}, on @user_script:1.",
                    sha1_hex(b"return redis.call('fcall', 'echo1', 0)")
                ))),
                (t, &["FUNCTION", "DELETE", "nosuch"], err("ERR Library not found")),
                (t, &["FUNCTION", "DELETE", "mylib"], st("OK")),
                (t, &["FCALL", "echo1", "0"], err("ERR Function not found")),
                (t, &["FUNCTION", "LOAD", lib], bulk("mylib")),
                (t, &["FUNCTION", "FLUSH", "x"], err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")),
                (t, &["FUNCTION", "FLUSH", "SYNC"], st("OK")),
                (t, &["FUNCTION", "LIST"], arr(vec![])),
            ],
        );
    }
}
