//! Redis 7 functions: `FUNCTION LOAD [REPLACE]`, `FUNCTION LIST [WITHCODE] [LIBRARYNAME
//! pattern]`, `FUNCTION DELETE`, `FUNCTION FLUSH`, and `FCALL`/`FCALL_RO`, on the engine's Lua
//! VM (see the Lua module, `lua.rs`).
//!
//! A library is Lua code that starts with a shebang, `#!lua name=<library>`, and registers its
//! functions with `redis.register_function('name', function(keys, args) ... end)` or the table
//! form `redis.register_function{function_name=.., callback=.., flags={..}, description=..}`
//! (documented at <https://redis.io/docs/latest/develop/interact/programmability/functions-intro/>).
//! What is modelled, with Redis 7's replies and error texts (checked against `redis-server` by
//! `sim/tests/conformance.rs`): the shebang's parsing and its errors; loading runs the library
//! with only `redis.register_function`, `redis.log`, the `LOG_*` levels and `REDIS_VERSION*`
//! reachable (anything else is a nonexistent global, as in Redis); the registration errors; a
//! function called by `FCALL` sees the scripting sandbox of `EVAL` without `KEYS`/`ARGV`, gets
//! its keys and arguments as its two parameters, and fails with `... script: <function>, on
//! @user_function:<line>.`; `no-writes` functions refuse writes and are the only ones
//! `FCALL_RO` runs; a function name is unique across libraries.
//!
//! How: the engine has no separate Lua state per library. A library is kept as its code, and
//! run as a script ([`wrapper`]) that defines `redis.register_function`, runs the library's code
//! in an environment of its own (the code keeps its line numbers: the shebang's line becomes the
//! wrapper's first line), and then either returns what was registered (`FUNCTION LOAD`) or calls
//! the function asked for (`FCALL`). Error texts are put back into Redis' words (`user_function`,
//! the function's name instead of the script's SHA).
//!
//! Left out (docs/redis-differences.md): a library's code runs again at every `FCALL`, so a
//! library-level variable does not keep its value from one call to the next (in Redis it
//! does); functions are not in the keyspace snapshot, so a restart forgets them even with
//! persistence, and they are not replicated; `FUNCTION DUMP`/`RESTORE`/`STATS`/`KILL`/`HELP`;
//! the `allow-oom`/`allow-stale`/`no-cluster` flags are listed but change nothing;
//! `FUNCTION LIST` lists libraries in name order (Redis: hash order), as arrays in RESP3 too
//! (Redis: maps).

use super::admin::glob_match;
use super::reply::Reply;
use bytes::Bytes;
use std::collections::BTreeMap;

/// The flags `redis.register_function` accepts.
const FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// One registered function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FunctionInfo {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) flags: Vec<String>,
}

impl FunctionInfo {
    /// Whether the function was registered with the `no-writes` flag.
    pub(crate) fn no_writes(&self) -> bool {
        self.flags.iter().any(|f| f == "no-writes")
    }
}

/// One loaded library.
#[derive(Clone, Debug)]
pub(crate) struct Library {
    /// The code as loaded, shebang included (`FUNCTION LIST WITHCODE`).
    code: Bytes,
    /// The script that runs it ([`wrapper`]).
    pub(crate) wrapper: String,
    /// Its functions, in registration order.
    functions: Vec<FunctionInfo>,
}

/// The libraries of one server, by name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Functions {
    libraries: BTreeMap<String, Library>,
}

/// What `FUNCTION LOAD` parsed before running anything: the library's name and its wrapper.
pub(crate) struct Prepared {
    pub(crate) name: String,
    pub(crate) code: Bytes,
    pub(crate) wrapper: String,
    /// The library's code without the shebang line (its first line left empty), compiled
    /// alone to report a compile error with Redis' text.
    pub(crate) body: String,
}

impl Functions {
    /// How many libraries are loaded.
    pub(crate) fn library_count(&self) -> usize {
        self.libraries.len()
    }

    /// How many functions the loaded libraries register.
    pub(crate) fn function_count(&self) -> usize {
        self.libraries.values().map(|l| l.functions.len()).sum()
    }

    /// The library and function registered as `name`.
    pub(crate) fn find(&self, name: &[u8]) -> Option<(&Library, &FunctionInfo)> {
        self.libraries.values().find_map(|lib| {
            lib.functions
                .iter()
                // Redis 7.0 looks functions up without regard to case.
                .find(|f| f.name.as_bytes().eq_ignore_ascii_case(name))
                .map(|f| (lib, f))
        })
    }

    /// `FUNCTION LOAD [REPLACE] code`, up to running the code: the options, the shebang, the
    /// name, and whether the library exists.
    pub(crate) fn prepare(&self, args: &[Bytes]) -> Result<Prepared, Reply> {
        let code = &args[args.len() - 1];
        let mut replace = false;
        for opt in &args[2..args.len() - 1] {
            if opt.eq_ignore_ascii_case(b"replace") {
                replace = true;
            } else {
                return Err(Reply::Error(format!(
                    "ERR Unknown option given: {}",
                    clean(&String::from_utf8_lossy(opt))
                )));
            }
        }
        let text = String::from_utf8_lossy(code).into_owned();
        let Some(rest) = text.strip_prefix("#!") else {
            return Err(Reply::error("ERR Missing library metadata"));
        };
        let Some(newline) = rest.find('\n') else {
            return Err(Reply::error("ERR Invalid library metadata"));
        };
        let (shebang, body) = rest.split_at(newline);
        // Redis splits the whole line, `#!` included, with `sdssplitargs`: any ASCII space
        // separates (a line ending in CRLF names the library without its CR), quotes group, and
        // the engine is the first word without its `#!` (`#! name=x` names the engine '').
        let line = format!("#!{shebang}");
        let Some(parts) = super::reader::split_args(line.as_bytes()) else {
            return Err(Reply::error("ERR Invalid library metadata"));
        };
        let parts: Vec<String> = parts.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
        let mut words = parts.iter().map(String::as_str);
        let engine = words.next().map_or("", |w| w.strip_prefix("#!").unwrap_or(w));
        let mut name: Option<&str> = None;
        for word in words {
            match word.get(..5) {
                Some(prefix) if prefix.eq_ignore_ascii_case("name=") => {
                    if name.is_some() {
                        return Err(Reply::error(
                            "ERR Invalid metadata value, name argument was given multiple times",
                        ));
                    }
                    name = Some(&word[5..]);
                }
                _ => {
                    return Err(Reply::Error(format!(
                        "ERR Invalid metadata value given: {}",
                        clean(word)
                    )))
                }
            }
        }
        let Some(name) = name else {
            return Err(Reply::error("ERR Library name was not given"));
        };
        if !valid_name(name) {
            return Err(Reply::error(
                "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
            ));
        }
        if !engine.eq_ignore_ascii_case("lua") {
            return Err(Reply::Error(format!("ERR Engine '{}' not found", clean(engine))));
        }
        if !replace && self.libraries.contains_key(name) {
            return Err(Reply::Error(format!("ERR Library '{name}' already exists")));
        }
        Ok(Prepared {
            name: name.to_string(),
            code: code.clone(),
            wrapper: wrapper(body),
            body: body.to_string(),
        })
    }

    /// Stores a library whose code ran: `registered` is what the wrapper returned in `load`
    /// mode. Checks that it registered something and that no other library has its functions.
    pub(crate) fn install(&mut self, prepared: Prepared, registered: Reply) -> Reply {
        let Reply::Array(Some(rows)) = registered else {
            return Reply::error("ERR No functions registered");
        };
        let mut functions = Vec::new();
        for row in rows {
            let Reply::Array(Some(items)) = row else {
                continue;
            };
            let text = |i: usize| match items.get(i) {
                Some(Reply::Bulk(Some(b))) => String::from_utf8_lossy(b).into_owned(),
                _ => String::new(),
            };
            functions.push(FunctionInfo {
                name: text(0),
                description: (text(1) == "1").then(|| text(2)),
                flags: (3..items.len()).map(text).collect(),
            });
        }
        if functions.is_empty() {
            return Reply::error("ERR No functions registered");
        }
        for f in &functions {
            let taken = self
                .libraries
                .iter()
                .any(|(lib, l)| *lib != prepared.name && l.functions.iter().any(|g| g.name == f.name));
            if taken {
                return Reply::Error(format!("ERR Function {} already exists", f.name));
            }
        }
        let name = prepared.name.clone();
        self.libraries.insert(
            prepared.name,
            Library {
                code: prepared.code,
                wrapper: prepared.wrapper,
                functions,
            },
        );
        Reply::bulk(name)
    }

    /// `FUNCTION DELETE name`.
    pub(crate) fn delete(&mut self, name: &[u8]) -> Reply {
        match self.libraries.remove(String::from_utf8_lossy(name).as_ref()) {
            Some(_) => Reply::ok(),
            None => Reply::error("ERR Library not found"),
        }
    }

    /// The code of every library, in name order (`FUNCTION DUMP`).
    pub(crate) fn codes(&self) -> Vec<Bytes> {
        self.libraries.values().map(|l| l.code.clone()).collect()
    }

    /// `FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern]` (`options` follow `LIST`).
    pub(crate) fn list(&self, options: &[Bytes]) -> Reply {
        let (mut with_code, mut pattern): (bool, Option<&Bytes>) = (false, None);
        let mut i = 0;
        while i < options.len() {
            let opt = &options[i];
            if opt.eq_ignore_ascii_case(b"withcode") && !with_code {
                with_code = true;
            } else if opt.eq_ignore_ascii_case(b"libraryname") && pattern.is_none() {
                let Some(p) = options.get(i + 1) else {
                    return Reply::error("ERR library name argument was not given");
                };
                pattern = Some(p);
                i += 1;
            } else {
                return Reply::Error(format!("ERR Unknown argument {}", clean(&String::from_utf8_lossy(opt))));
            }
            i += 1;
        }
        let s = |v: &str| Reply::bulk(Bytes::copy_from_slice(v.as_bytes()));
        let libraries = self
            .libraries
            .iter()
            .filter(|(name, _)| pattern.is_none_or(|p| glob_match(p, name.as_bytes())))
            .map(|(name, lib)| {
                let functions = lib
                    .functions
                    .iter()
                    .map(|f| {
                        Reply::Array(Some(vec![
                            s("name"),
                            s(&f.name),
                            s("description"),
                            Reply::Bulk(f.description.as_deref().map(|d| Bytes::copy_from_slice(d.as_bytes()))),
                            s("flags"),
                            // Status strings in RESP2 (a set in RESP3), as Redis answers them.
                            Reply::Array(Some(f.flags.iter().map(|flag| Reply::Status(flag.clone())).collect())),
                        ]))
                    })
                    .collect();
                let mut out = vec![
                    s("library_name"),
                    s(name),
                    s("engine"),
                    s("LUA"),
                    s("functions"),
                    Reply::Array(Some(functions)),
                ];
                if with_code {
                    out.push(s("library_code"));
                    out.push(Reply::Bulk(Some(lib.code.clone())));
                }
                Reply::Array(Some(out))
            })
            .collect();
        Reply::Array(Some(libraries))
    }
}

/// Redis' `functionsVerifyName`: letters, digits and underscores, at least one.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// An argument echoed in an error, on one line.
fn clean(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

/// What a library's wrapper returns in `load` mode, or the function's reply in `call` mode
/// (the last two `ARGV` entries are the mode and the function's name; the wrapper removes
/// them before the function sees its arguments).
///
/// The wrapper's first line defines everything and opens the function that holds the library's
/// code, so the code keeps its line numbers; `__lockstep_` names cannot meet a library's. The
/// library's environment (and its load-time `redis`) are read-only as the sandbox's globals
/// are: their metatables show the sandbox's mark (`getmetatable(_G)`), so that `rawset` and
/// `setmetatable` refuse them with `Attempt to modify a readonly table`, as Redis 7.0 does.
pub(crate) fn wrapper(body: &str) -> String {
    let prologue = r#"local __lockstep_keys, __lockstep_args = KEYS, ARGV
local __lockstep_n = #__lockstep_args
local __lockstep_mode, __lockstep_fname = __lockstep_args[__lockstep_n - 1], __lockstep_args[__lockstep_n]
__lockstep_args[__lockstep_n] = nil __lockstep_args[__lockstep_n - 1] = nil
local __lockstep_outer, __lockstep_redis, __lockstep_error, __lockstep_type = _G, redis, error, type
local __lockstep_pcall, __lockstep_tostring, __lockstep_select = pcall, tostring, select
local __lockstep_pairs, __lockstep_ipairs = pairs, ipairs
local __lockstep_fns, __lockstep_order, __lockstep_loadredis = {}, {}, {}
local __lockstep_state = {loading = true}
local __lockstep_flagset = {}
for _, f in __lockstep_ipairs({ {FLAGS} }) do __lockstep_flagset[f] = true end
local function __lockstep_fail(msg) __lockstep_error({err = 'ERR ' .. msg}) end
local function __lockstep_register(...)
  local n = __lockstep_select('#', ...)
  local name, cb, flags, desc
  if n == 1 then
    local t = ...
    if __lockstep_type(t) ~= 'table' then
      __lockstep_fail('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
    end
    for k, v in __lockstep_pairs(t) do
      if k == 'function_name' then
        if __lockstep_type(v) ~= 'string' then __lockstep_fail('function_name argument given to redis.register_function must be a string') end
        name = v
      elseif k == 'callback' then
        if __lockstep_type(v) ~= 'function' then __lockstep_fail('callback argument given to redis.register_function must be a function') end
        cb = v
      elseif k == 'flags' then
        if __lockstep_type(v) ~= 'table' then __lockstep_fail('flags argument to redis.register_function must be a table representing function flags') end
        flags = v
      elseif k == 'description' then
        if __lockstep_type(v) ~= 'string' then __lockstep_fail('description argument given to redis.register_function must be a string') end
        desc = v
      else
        __lockstep_fail('unknown argument given to redis.register_function')
      end
    end
    if name == nil then __lockstep_fail('redis.register_function must get a function name argument') end
    if cb == nil then __lockstep_fail('redis.register_function must get a callback argument') end
  elseif n == 2 then
    name, cb = ...
    local nt = __lockstep_type(name)
    if nt ~= 'string' and nt ~= 'number' then __lockstep_fail('first argument to redis.register_function must be a string') end
    if __lockstep_type(cb) ~= 'function' then __lockstep_fail('second argument to redis.register_function must be a function') end
    name = __lockstep_tostring(name)
  else
    __lockstep_fail('wrong number of arguments to redis.register_function')
  end
  if not __lockstep_state.loading then __lockstep_fail('redis.register_function can only be called on FUNCTION LOAD command') end
  if name == '' or name:find('[^%w_]') then
    __lockstep_fail('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
  end
  if __lockstep_fns[name] then __lockstep_fail('Function already exists in the library') end
  local list = {}
  for _, f in __lockstep_ipairs(flags or {}) do
    if __lockstep_type(f) ~= 'string' or not __lockstep_flagset[f] then __lockstep_fail('unknown flag given') end
    list[#list + 1] = f
  end
  __lockstep_fns[name] = {cb = cb, desc = desc, flags = list}
  __lockstep_order[#__lockstep_order + 1] = name
end
local __lockstep_loadtable = {
  register_function = __lockstep_register, log = __lockstep_redis.log,
  LOG_DEBUG = __lockstep_redis.LOG_DEBUG, LOG_VERBOSE = __lockstep_redis.LOG_VERBOSE,
  LOG_NOTICE = __lockstep_redis.LOG_NOTICE, LOG_WARNING = __lockstep_redis.LOG_WARNING,
  REDIS_VERSION = __lockstep_redis.REDIS_VERSION, REDIS_VERSION_NUM = __lockstep_redis.REDIS_VERSION_NUM,
}
local __lockstep_get = function(k) return __lockstep_outer[k] end
local __lockstep_env = {}
local __lockstep_index_env, __lockstep_index_redis, __lockstep_readonly = loadstring([[
local state, loadtable, loadredis, env, get, pcall, error, tostring = ...
local function missing(k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 3)
end
return function(_, k)
  if state.loading then
    if k == 'redis' then return loadredis end
  elseif k == '_G' then
    return env
  elseif k ~= 'KEYS' and k ~= 'ARGV' then
    local ok, v = pcall(get, k)
    if ok and v ~= nil then return v end
  end
  missing(k)
end, function(_, k)
  local v = loadtable[k]
  if v == nil then missing(k) end
  return v
end, function() error('Attempt to modify a readonly table', 2) end
]], '=lockstep_function')(__lockstep_state, __lockstep_loadtable, __lockstep_loadredis, __lockstep_env, __lockstep_get, __lockstep_pcall, __lockstep_error, __lockstep_tostring)
local __lockstep_ro = getmetatable(_G)
setmetatable(__lockstep_loadredis, {__index = __lockstep_index_redis, __newindex = __lockstep_readonly, __metatable = __lockstep_ro})
setmetatable(__lockstep_env, {__index = __lockstep_index_env, __newindex = __lockstep_readonly, __metatable = __lockstep_ro})
local __lockstep_lib = function()"#;
    let flags: Vec<String> = FLAGS.iter().map(|f| format!("'{f}'")).collect();
    let prologue = prologue.replace("{FLAGS}", &flags.join(", ")).replace('\n', " ");
    let epilogue = r#"
end
setfenv(__lockstep_lib, __lockstep_env)
__lockstep_lib()
__lockstep_state.loading = false
if __lockstep_mode == 'load' then
  local out = {}
  for i, name in __lockstep_ipairs(__lockstep_order) do
    local f = __lockstep_fns[name]
    local row = {name, f.desc and '1' or '0', f.desc or ''}
    for _, flag in __lockstep_ipairs(f.flags) do row[#row + 1] = flag end
    out[i] = row
  end
  return out
end
local f = __lockstep_fns[__lockstep_fname]
if f == nil then return __lockstep_redis.error_reply('ERR Function not found') end
return f.cb(__lockstep_keys, __lockstep_args)
"#;
    format!("{prologue}{body}{epilogue}")
}

/// Puts a script's error reply into a function's words: `user_script` becomes
/// `user_function`, and the script's SHA the function's name (`what`). `strip_position` drops
/// the `script: ..., on ...` part (load errors have none).
pub(crate) fn rewrite_error(reply: Reply, sha: &str, what: &str, strip_position: bool) -> Reply {
    let Reply::Error(text) = reply else {
        return reply;
    };
    let marker = format!(" script: {sha}, on @user_script:");
    let text = match (text.find(&marker), strip_position) {
        (Some(at), true) => text[..at].to_string(),
        (Some(at), false) => format!(
            "{} script: {what}, on @user_function:{}",
            &text[..at],
            &text[at + marker.len()..]
        ),
        (None, _) => text.replace(sha, what),
    };
    Reply::Error(text.replace("user_script:", "user_function:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn shebangs_parse_as_redis_parses_them() {
        let f = Functions::default();
        let err = |code: &str| match f.prepare(&[b("FUNCTION"), b("LOAD"), b(code)]) {
            Err(Reply::Error(e)) => e,
            Err(other) => panic!("{other:?}"),
            Ok(p) => format!("ok {}", p.name),
        };
        assert_eq!(err("return 1"), "ERR Missing library metadata");
        assert_eq!(err("#!lua name=q"), "ERR Invalid library metadata");
        assert_eq!(err("#!lua\nreturn 1"), "ERR Library name was not given");
        assert_eq!(
            err("#!lua name=x foo=bar\n"),
            "ERR Invalid metadata value given: foo=bar"
        );
        assert_eq!(
            err("#!lua name=w name=v\n"),
            "ERR Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(err("#!js name=x\n"), "ERR Engine 'js' not found");
        assert!(err("#!lua name=bad-name!\n").starts_with("ERR Library names can only contain"));
        assert_eq!(err("#!LUA  NAME=w  \nx"), "ok w");
        assert_eq!(
            match f.prepare(&[b("FUNCTION"), b("LOAD"), b("foo"), b("#!lua name=x\n")]) {
                Err(Reply::Error(e)) => e,
                _ => String::new(),
            },
            "ERR Unknown option given: foo"
        );
    }

    #[test]
    fn errors_are_put_in_function_words() {
        let sha = "0123";
        let got = rewrite_error(
            Reply::error("ERR user_script:6: boom script: 0123, on @user_script:6."),
            sha,
            "f",
            false,
        );
        assert_eq!(
            got,
            Reply::error("ERR user_function:6: boom script: f, on @user_function:6.")
        );
        let got = rewrite_error(
            Reply::error("ERR user_script:2: boom script: 0123, on @user_script:2."),
            sha,
            "f",
            true,
        );
        assert_eq!(got, Reply::error("ERR user_function:2: boom"));
    }
}

/// `FUNCTION DUMP`'s payload: lockstep's own format (Redis's is an RDB fragment), a version, each
/// library's code with its length, and a checksum, so `FUNCTION RESTORE` refuses a payload it did
/// not make. `DUMP_MAGIC` then for each library a 4-byte big-endian length and the code, then
/// 8 bytes of FNV-1a over all that.
const DUMP_MAGIC: &[u8] = b"LKSF\x01";

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The payload of `codes`.
pub(crate) fn dump(codes: &[Bytes]) -> Bytes {
    let mut out = DUMP_MAGIC.to_vec();
    for code in codes {
        out.extend_from_slice(&u32::try_from(code.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(code);
    }
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_be_bytes());
    Bytes::from(out)
}

/// The libraries' code in a payload of [`dump`], or `None` when it is not one.
pub(crate) fn undump(payload: &[u8]) -> Option<Vec<Bytes>> {
    let (body, sum) = payload.split_at_checked(payload.len().checked_sub(8)?)?;
    if fnv1a(body).to_be_bytes() != sum || !body.starts_with(DUMP_MAGIC) {
        return None;
    }
    let mut rest = &body[DUMP_MAGIC.len()..];
    let mut codes = Vec::new();
    while !rest.is_empty() {
        let (len, tail) = rest.split_at_checked(4)?;
        let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
        let (code, tail) = tail.split_at_checked(len)?;
        codes.push(Bytes::copy_from_slice(code));
        rest = tail;
    }
    Some(codes)
}

#[cfg(test)]
mod dump_tests {
    use crate::{EngineConfig, RedisEngine, Reply};
    use bytes::Bytes;

    fn run(e: &mut RedisEngine, args: &[&[u8]]) -> Reply {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        e.execute(&args, 0)
    }

    #[test]
    fn thousands_of_small_libraries_load_and_script_flush_leaves_them() {
        let mut e = RedisEngine::new(EngineConfig::default());
        for i in 0..2_000 {
            let code = format!("#!lua name=lib{i}\nredis.register_function('f{i}', function() return {i} end)");
            assert_eq!(
                run(&mut e, &[b"FUNCTION", b"LOAD", code.as_bytes()]),
                Reply::bulk(format!("lib{i}")),
                "library {i}"
            );
        }
        assert_eq!(run(&mut e, &[b"SCRIPT", b"FLUSH"]), Reply::ok());
        assert_eq!(run(&mut e, &[b"FCALL", b"f1999", b"0"]), Reply::Integer(1999));
        assert_eq!(run(&mut e, &[b"FUNCTION", b"FLUSH"]), Reply::ok());
        let code = "#!lua name=again\nredis.register_function('g', function() return 1 end)";
        assert_eq!(
            run(&mut e, &[b"FUNCTION", b"LOAD", code.as_bytes()]),
            Reply::bulk("again")
        );
    }

    #[test]
    fn function_dump_restores_all_or_nothing_by_policy() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let lib = |name: &str, reply: &str| {
            format!("#!lua name={name}\nredis.register_function('{name}', function() return '{reply}' end)")
        };
        assert!(!matches!(
            run(&mut e, &[b"FUNCTION", b"LOAD", lib("a", "one").as_bytes()]),
            Reply::Error(_)
        ));
        let Reply::Bulk(Some(payload)) = run(&mut e, &[b"FUNCTION", b"DUMP"]) else {
            panic!("a payload")
        };
        assert_eq!(run(&mut e, &[b"FUNCTION", b"FLUSH"]), Reply::ok());
        assert_eq!(run(&mut e, &[b"FUNCTION", b"RESTORE", &payload]), Reply::ok());
        assert_eq!(run(&mut e, &[b"FCALL", b"A", b"0"]), Reply::bulk("one"));
        // APPEND (the default) refuses a library that exists; REPLACE replaces it.
        assert_eq!(
            run(&mut e, &[b"FUNCTION", b"LOAD", b"REPLACE", lib("a", "two").as_bytes()]),
            Reply::bulk("a")
        );
        // Named without quotes here, as Redis 7.0 does (`FUNCTION LOAD` quotes it).
        assert_eq!(
            run(&mut e, &[b"FUNCTION", b"RESTORE", &payload]),
            Reply::error("ERR Library a already exists")
        );
        assert_eq!(run(&mut e, &[b"FCALL", b"a", b"0"]), Reply::bulk("two"));
        assert_eq!(
            run(&mut e, &[b"FUNCTION", b"RESTORE", &payload, b"REPLACE"]),
            Reply::ok()
        );
        assert_eq!(run(&mut e, &[b"FCALL", b"a", b"0"]), Reply::bulk("one"));
        // A payload it did not make, or a flipped byte, changes nothing.
        let mut bad = payload.to_vec();
        bad[6] ^= 1;
        for payload in [&b"bad_payload"[..], &bad] {
            assert_eq!(
                run(&mut e, &[b"FUNCTION", b"RESTORE", payload, b"FLUSH"]),
                Reply::error("ERR payload version or checksum are wrong")
            );
        }
        assert_eq!(run(&mut e, &[b"FCALL", b"a", b"0"]), Reply::bulk("one"));
    }

    #[test]
    fn the_engine_is_the_first_word_of_the_shebang_even_when_empty() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let load = |e: &mut RedisEngine, code: &str| run(e, &[b"FUNCTION", b"LOAD", code.as_bytes()]);
        let body = "\nredis.register_function('f', function() return 1 end)";
        assert_eq!(
            load(&mut e, &format!("#! name=x{body}")),
            Reply::error("ERR Engine '' not found")
        );
        assert_eq!(
            load(&mut e, &format!("#!lua{body}")),
            Reply::error("ERR Library name was not given")
        );
        assert_eq!(load(&mut e, &format!("#!lua  name=x{body}")), Reply::bulk("x"));
    }
}
