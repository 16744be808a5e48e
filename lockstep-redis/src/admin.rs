//! The server's own commands that clients and their test suites send besides the data commands:
//! `KEYS`, `SCAN`, `TIME`, `OBJECT`, `INFO`, `CONFIG GET/SET/RESETSTAT`, `CLIENT LIST/INFO`, and
//! Redis' glob patterns (`stringmatchlen`) that `KEYS`, `SCAN MATCH` and `CONFIG GET` use.
//!
//! What they report is what this engine knows, in Redis 7.2's formats. Left out (and listed in
//! docs/redis-differences.md): `SCAN`'s cursor is a position in a fixed hash order of the keys,
//! not Redis' reverse-binary table cursor (the guarantees are the same: every key present for the
//! whole iteration is returned, some maybe twice); `OBJECT IDLETIME` is always 0 (no LRU clock);
//! `CLIENT LIST` lists only the asking connection (the engine does not see the others); `INFO`
//! has the sections and fields listed in [`info`], with `role:master`; `CONFIG` knows the
//! parameters of [`PARAMS`] and stores what is set, but only `maxmemory` changes behaviour.

use super::keyspace::{Keyspace, Value};
use super::reply::Reply;
use bytes::Bytes;
use std::collections::BTreeMap;

pub(crate) use super::syntax::glob_match;

/// `KEYS pattern`: the live keys matching, in key order.
pub(crate) fn keys(ks: &Keyspace, pattern: &[u8], now_ms: i64) -> Reply {
    Reply::Array(Some(
        ks.iter()
            .filter(|(k, e)| !e.is_expired_at(now_ms) && glob_match(pattern, k))
            .map(|(k, _)| Reply::Bulk(Some(k.clone())))
            .collect(),
    ))
}

/// A key's place in `SCAN`'s order: 64-bit FNV-1a, never 0 (0 is the cursor that starts and ends
/// an iteration).
fn scan_position(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h.max(1)
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub(crate) fn scan(ks: &Keyspace, args: &[Bytes], now_ms: i64) -> Reply {
    let Some(cursor) = parse_cursor(&args[1]) else {
        return Reply::error("ERR invalid cursor");
    };
    let mut pattern: Option<&Bytes> = None;
    let mut count: i64 = 10;
    let mut type_name: Option<String> = None;
    let mut i = 2;
    while i < args.len() {
        let Some(value) = args.get(i + 1) else {
            return Reply::error(super::syntax::SYNTAX);
        };
        if args[i].eq_ignore_ascii_case(b"match") {
            pattern = Some(value);
        } else if args[i].eq_ignore_ascii_case(b"count") {
            match super::syntax::parse_ll(value) {
                None => return Reply::error(super::syntax::NOT_INTEGER),
                Some(n) if n < 1 => return Reply::error(super::syntax::SYNTAX),
                Some(n) => count = n,
            }
        } else if args[i].eq_ignore_ascii_case(b"type") {
            type_name = Some(String::from_utf8_lossy(value).to_ascii_lowercase());
        } else {
            return Reply::error(super::syntax::SYNTAX);
        }
        i += 2;
    }
    let mut ordered: Vec<(u64, &Bytes)> = ks
        .iter()
        .filter(|(_, e)| !e.is_expired_at(now_ms))
        .map(|(k, _)| (scan_position(k), k))
        .filter(|(pos, _)| *pos >= cursor)
        .collect();
    ordered.sort();
    // COUNT is how many keys are visited, matching or not (as Redis' buckets, approximately).
    let take = usize::try_from(count).unwrap_or(usize::MAX);
    let next = ordered.get(take).map_or(0, |(pos, _)| *pos);
    let found = ordered
        .iter()
        .take(take)
        .filter(|(_, k)| pattern.is_none_or(|p| glob_match(p, k)))
        .filter(|(_, k)| {
            type_name
                .as_deref()
                .is_none_or(|t| ks.get(k).is_some_and(|e| e.value.type_name() == t))
        })
        .map(|(_, k)| Reply::Bulk(Some((*k).clone())))
        .collect();
    Reply::Array(Some(vec![Reply::bulk(next.to_string()), Reply::Array(Some(found))]))
}

/// `SSCAN`/`HSCAN`/`ZSCAN key cursor [MATCH pattern] [COUNT count]` over a collection's items
/// (each one or two replies: a member; a field and its value; a member and its score): the
/// cursor is the position of the next item, `MATCH` applies to an item's first part.
pub(crate) fn scan_items(items: Vec<Vec<Bytes>>, args: &[Bytes]) -> Reply {
    let Some(cursor) = parse_cursor(&args[0]) else {
        return Reply::error("ERR invalid cursor");
    };
    let mut pattern: Option<&Bytes> = None;
    let mut count: usize = 10;
    let mut i = 1;
    while i < args.len() {
        let Some(value) = args.get(i + 1) else {
            return Reply::error(super::syntax::SYNTAX);
        };
        if args[i].eq_ignore_ascii_case(b"match") {
            pattern = Some(value);
        } else if args[i].eq_ignore_ascii_case(b"count") {
            match super::syntax::parse_ll(value) {
                None => return Reply::error(super::syntax::NOT_INTEGER),
                Some(n) if n < 1 => return Reply::error(super::syntax::SYNTAX),
                Some(n) => count = usize::try_from(n).unwrap_or(usize::MAX),
            }
        } else {
            return Reply::error(super::syntax::SYNTAX);
        }
        i += 2;
    }
    let start = usize::try_from(cursor).unwrap_or(usize::MAX).min(items.len());
    // A small collection is answered whole in one call, as Redis answers a listpack.
    let end = if items.len() <= 128 {
        items.len()
    } else {
        start.saturating_add(count).min(items.len())
    };
    let next = if end >= items.len() { 0 } else { end };
    let found = items[start..end]
        .iter()
        .filter(|item| pattern.is_none_or(|p| glob_match(p, &item[0])))
        .flat_map(|item| item.iter().map(|b| Reply::Bulk(Some(b.clone()))))
        .collect();
    Reply::Array(Some(vec![Reply::bulk(next.to_string()), Reply::Array(Some(found))]))
}

/// A cursor as Redis reads it (`strtoull`): an optional sign and digits, a negative number
/// wrapping around; the empty string is 0; anything else (spaces included) is invalid.
fn parse_cursor(arg: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.is_empty() {
        return Some(0);
    }
    let (negative, digits) = match text.as_bytes()[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: u64 = digits.parse().ok()?;
    Some(if negative { value.wrapping_neg() } else { value })
}

/// `TIME`: the node's wall clock as `[seconds, microseconds]` (millisecond resolution here).
pub(crate) fn time(now_ms: i64) -> Reply {
    Reply::Array(Some(vec![
        Reply::bulk(now_ms.div_euclid(1000).to_string()),
        Reply::bulk((now_ms.rem_euclid(1000) * 1000).to_string()),
    ]))
}

/// Redis' shared integer objects (`OBJ_SHARED_INTEGERS`): `OBJECT REFCOUNT` answers `INT_MAX`.
const SHARED_INTEGERS: i64 = 10_000;

/// `OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key`, by Redis 7.2's encoding rules.
pub(crate) fn object(ks: &Keyspace, sub: &str, key: &[u8], now_ms: i64, limits: super::db::EncodingLimits) -> Reply {
    let Some(entry) = ks.peek(key, now_ms) else {
        return Reply::nil();
    };
    let int_value = |v: &Bytes| {
        std::str::from_utf8(v)
            .ok()
            .filter(|s| s.len() <= 20)
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|n| n.to_string().as_bytes() == v.as_ref())
    };
    match sub {
        "encoding" => Reply::bulk(match &entry.value {
            Value::String(v) if int_value(v).is_some() => "int",
            Value::String(v) if v.len() <= 44 => "embstr",
            Value::String(_) => "raw",
            // Redis 7.0 keeps every list in a quicklist (a plain listpack encoding came in 7.2).
            Value::List(_) => "quicklist",
            Value::Hash(fields)
                if fields.len() <= limits.hash_entries
                    && fields.iter().all(|(f, v)| f.len() <= limits.hash_value && v.len() <= limits.hash_value) =>
            {
                "listpack"
            }
            Value::Hash(_) => "hashtable",
            // Redis 7.0: an intset up to `set-max-intset-entries` integers, else a hashtable (by
            // the set's contents now, where Redis never converts back; 7.2 added listpack sets).
            Value::Set(members)
                if members.len() <= limits.set_intset_entries && members.iter().all(|m| int_value(m).is_some()) =>
            {
                "intset"
            }
            Value::Set(_) => "hashtable",
            // Redis 7.0: `zset-max-listpack-entries` and `-value` (128 and 64 by default; by the
            // set's contents now, where Redis never converts back).
            Value::ZSet(z) if z.fits_listpack(limits.zset_entries, limits.zset_value) => "listpack",
            Value::ZSet(_) => "skiplist",
            Value::Stream(_) => "stream",
        }),
        "refcount" => Reply::Integer(match &entry.value {
            Value::String(v) if int_value(v).is_some_and(|n| (0..SHARED_INTEGERS).contains(&n)) => i64::from(i32::MAX),
            _ => 1,
        }),
        "idletime" => Reply::Integer(0),
        _ => Reply::error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
    }
}

/// A `CONFIG` parameter: its name, default value, and whether `CONFIG SET` may change it.
struct Param {
    name: &'static str,
    default: &'static str,
    mutable: bool,
}

const fn param(name: &'static str, default: &'static str) -> Param {
    Param {
        name,
        default,
        mutable: true,
    }
}

/// The parameters `CONFIG GET` knows, with Redis 7.2's defaults (16 databases, no persistence
/// configured on the engine itself). `maxmemory` is the engine's own setting.
const PARAMS: &[Param] = &[
    param("maxmemory", "0"),
    param("maxmemory-policy", "noeviction"),
    param("appendonly", "no"),
    param("appendfsync", "everysec"),
    param("save", ""),
    Param {
        name: "databases",
        default: "16",
        mutable: false,
    },
    param("timeout", "0"),
    param("hz", "10"),
    param("maxclients", "10000"),
    param("notify-keyspace-events", ""),
    param("lua-time-limit", "5000"),
    param("busy-reply-threshold", "5000"),
    param("slowlog-log-slower-than", "10000"),
    param("slowlog-max-len", "128"),
    param("latency-tracking", "yes"),
    param("lazyfree-lazy-user-flush", "no"),
    param("hash-max-listpack-entries", "128"),
    param("hash-max-listpack-value", "64"),
    param("list-max-listpack-size", "-2"),
    // Encoding thresholds Redis's own tests set: accepted and reported; `OBJECT ENCODING` reads
    // the hash, set and sorted-set ones ([`super::db::EncodingLimits`]).
    param("list-compress-depth", "0"),
    param("set-max-intset-entries", "512"),
    param("zset-max-listpack-entries", "128"),
    param("zset-max-listpack-value", "64"),
    param("stream-node-max-bytes", "4096"),
    // Accepted and reported; HyperLogLogs turn dense past the default, 3,000 bytes (hll.rs).
    param("hll-sparse-max-bytes", "3000"),
    param("stream-node-max-entries", "100"),
    param("lazyfree-lazy-expire", "no"),
    param("lazyfree-lazy-server-del", "no"),
    param("lazyfree-lazy-eviction", "no"),
    param("maxmemory-samples", "5"),
    param("latency-monitor-threshold", "0"),
    param("client-query-buffer-limit", "1073741824"),
    param("min-replicas-to-write", "0"),
    param("lua-replicate-commands", "yes"),
    param("active-defrag-cycle-min", "1"),
    param("activedefrag", "no"),
    param("proto-max-bulk-len", "536870912"),
    // Accepted and reported: `RESTORE` checks every payload whole either way (t_dump.rs).
    param("sanitize-dump-payload", "no"),
    param("requirepass", ""),
    param("protected-mode", "no"),
    param("loglevel", "notice"),
    param("port", "6379"),
];

/// Redis 7.0's old names of parameters (`CONFIG SET` of either sets both).
const ALIASES: &[(&str, &str)] = &[
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
];

/// `CONFIG` state: what was set, over [`PARAMS`]' defaults.
#[derive(Debug, Default, Clone)]
pub(crate) struct ServerConfig {
    set: BTreeMap<&'static str, String>,
}

impl ServerConfig {
    /// `requirepass`: the `default` user's password, empty when none is set.
    pub(crate) fn requirepass(&self) -> &str {
        self.set.get("requirepass").map_or("", String::as_str)
    }

    /// `notify-keyspace-events` as set.
    pub(crate) fn notify_keyspace_events(&self) -> &str {
        self.set.get("notify-keyspace-events").map_or("", String::as_str)
    }

    /// The encoding thresholds as set.
    pub(crate) fn encoding_limits(&self) -> super::db::EncodingLimits {
        let number = |name: &str, default: usize| {
            self.set
                .get(name)
                .and_then(|v| v.parse::<i64>().ok())
                .map_or(default, |v| usize::try_from(v).unwrap_or(0))
        };
        let d = super::db::EncodingLimits::default();
        super::db::EncodingLimits {
            hash_entries: number("hash-max-listpack-entries", d.hash_entries),
            hash_value: number("hash-max-listpack-value", d.hash_value),
            set_intset_entries: number("set-max-intset-entries", d.set_intset_entries),
            zset_entries: number("zset-max-listpack-entries", d.zset_entries),
            zset_value: number("zset-max-listpack-value", d.zset_value),
        }
    }

    /// `CONFIG GET pattern [pattern ...]`: `[name, value, ...]`, each parameter once.
    pub(crate) fn get(&self, patterns: &[Bytes], maxmemory: usize) -> Reply {
        let mut out = Vec::new();
        let aliases = ALIASES
            .iter()
            .filter_map(|(alias, canonical)| PARAMS.iter().find(|p| p.name == *canonical).map(|p| (*alias, p)));
        let named_params = PARAMS.iter().map(|p| (p.name, p)).chain(aliases);
        for (shown, p) in named_params {
            // A name without glob characters is looked up as written and answered with the
            // caller's spelling, as Redis does; a pattern answers the parameter's own name.
            let named = patterns.iter().find(|pat| {
                let lower = pat.to_ascii_lowercase();
                if lower.iter().any(|c| b"*?[\\".contains(c)) {
                    glob_match(&lower, shown.as_bytes())
                } else {
                    lower == shown.as_bytes()
                }
            });
            if let Some(pat) = named {
                let value = match p.name {
                    "maxmemory" => maxmemory.to_string(),
                    "notify-keyspace-events" => super::notify::normalise(self.notify_keyspace_events()),
                    name => self.set.get(name).cloned().unwrap_or_else(|| p.default.to_string()),
                };
                let is_pattern = pat.iter().any(|c| b"*?[\\".contains(c));
                out.push(if is_pattern {
                    Reply::bulk(shown)
                } else {
                    Reply::Bulk(Some(pat.clone()))
                });
                out.push(Reply::bulk(value));
            }
        }
        Reply::Array(Some(out))
    }

    /// `CONFIG SET name value [name value ...]`: all or nothing. `Ok(Some(bytes))` carries a new
    /// `maxmemory` for the engine to apply.
    pub(crate) fn set(&mut self, pairs: &[Bytes]) -> Result<Option<usize>, Reply> {
        if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
            return Err(Reply::error("ERR wrong number of arguments for 'config|set' command"));
        }
        let mut staged: Vec<(&'static str, String)> = Vec::new();
        let mut maxmemory = None;
        for pair in pairs.chunks(2) {
            let name = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
            let name = ALIASES
                .iter()
                .find(|(alias, _)| *alias == name)
                .map_or(name, |(_, canonical)| (*canonical).to_string());
            let value = String::from_utf8_lossy(&pair[1]).into_owned();
            let Some(p) = PARAMS.iter().find(|p| p.name == name) else {
                return Err(Reply::Error(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                    name.replace(['\r', '\n'], " ")
                )));
            };
            let failed = |why: &str| {
                Reply::Error(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
                ))
            };
            if !p.mutable {
                return Err(failed("can't set immutable config"));
            }
            match p.name {
                "maxmemory" => match parse_memory(&value) {
                    Some(bytes) => maxmemory = Some(bytes),
                    None => return Err(failed("argument must be a memory value")),
                },
                // Eviction is not simulated: only the policy the engine has is accepted.
                "maxmemory-policy" if !value.eq_ignore_ascii_case("noeviction") => {
                    return Err(failed("only noeviction is simulated"));
                }
                "notify-keyspace-events" if !super::notify::valid(&value) => {
                    return Err(failed("Invalid event class character. Use 'Ag$lshzxeKEtmd'."));
                }
                "sanitize-dump-payload" if !["no", "yes", "clients"].iter().any(|v| value.eq_ignore_ascii_case(v)) => {
                    return Err(failed("argument(s) must be one of the following: no, yes, clients"));
                }
                _ if p.default.parse::<i64>().is_ok() && value.parse::<i64>().is_err() => {
                    return Err(failed("argument couldn't be parsed into an integer"));
                }
                _ => staged.push((p.name, value)),
            }
        }
        self.set.extend(staged);
        Ok(maxmemory)
    }
}

/// A memory value as `CONFIG SET` reads it: a number with an optional `b`, `k`, `kb`, `m`, `mb`,
/// `g` or `gb` unit (`k` = 1,000, `kb` = 1,024).
fn parse_memory(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let digits_end = lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len());
    let (number, unit) = lower.split_at(digits_end);
    let number: usize = number.parse().ok()?;
    let factor: usize = match unit {
        "" | "b" => 1,
        "k" => 1_000,
        "kb" => 1_024,
        "m" => 1_000_000,
        "mb" => 1_024 * 1_024,
        "g" => 1_000_000_000,
        "gb" => 1_024 * 1_024 * 1_024,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// What `INFO` reports about the engine.
pub(crate) struct InfoFacts {
    /// Every database that holds live keys: `(index, keys not expired, of those with a TTL)`.
    pub dbs: Vec<(usize, usize, usize)>,
    /// Bytes the keyspace takes.
    pub used_memory: usize,
    /// `maxmemory`.
    pub maxmemory: usize,
    /// Bytes the Lua VM holds.
    pub lua_memory: usize,
    /// Scripts in the `EVAL` script cache.
    pub cached_scripts: usize,
    /// Clients blocked in a blocking command (the server loop's count).
    pub blocked_clients: usize,
    /// Open connections (the server loop's count; 1 for an engine used on its own).
    pub connected_clients: usize,
    /// Per command (`name` or `container|sub`): calls, calls refused before running, calls that
    /// answered an error.
    pub command_stats: Vec<(String, [u64; 3])>,
    /// Error replies by code, in code order.
    pub error_stats: Vec<(String, u64)>,
    /// Every error reply since the last `CONFIG RESETSTAT`.
    pub total_error_replies: u64,
}

/// `INFO [section ...]`: the default sections (`server`, `clients`, `memory`, `persistence`,
/// `stats`, `replication`, `cpu`, `modules`, `errorstats`, `cluster`, `keyspace`); `all` and
/// `everything` give them all; an unknown section gives nothing.
pub(crate) fn info(sections: &[Bytes], facts: &InfoFacts) -> Reply {
    let wanted: Vec<String> = sections
        .iter()
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    // Redis 7.0: no argument and `default` give the default sections; `all` every section but
    // the modules' own; `everything` all of them; section names in any case, each once.
    let default = wanted.is_empty() || wanted.iter().any(|s| s == "default");
    let all = wanted.iter().any(|s| s == "all" || s == "everything");
    let blocks: [(&str, bool, String); 13] = [
        (
            "server",
            true,
            "redis_version:7.2.0\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\nos:lockstep simulated Redis\r\narch_bits:64\r\nmultiplexing_api:none\r\nprocess_id:1\r\nrun_id:0000000000000000000000000000000000000000\r\ntcp_port:6379\r\nhz:10\r\n".to_string(),
        ),
        (
            "clients",
            true,
            format!(
                "connected_clients:{}\r\nblocked_clients:{}\r\n",
                facts.connected_clients, facts.blocked_clients
            ),
        ),
        (
            "memory",
            true,
            format!(
                "used_memory:{}\r\nused_memory_lua:{}\r\nnumber_of_cached_scripts:{}\r\nmaxmemory:{}\r\nmaxmemory_policy:noeviction\r\n",
                facts.used_memory, facts.lua_memory, facts.cached_scripts, facts.maxmemory
            ),
        ),
        (
            "persistence",
            true,
            "loading:0\r\nrdb_changes_since_last_save:0\r\naof_enabled:0\r\n".to_string(),
        ),
        (
            "stats",
            true,
            format!(
                "expired_keys:0\r\nevicted_keys:0\r\nunexpected_error_replies:0\r\ntotal_error_replies:{}\r\n",
                facts.total_error_replies
            ),
        ),
        (
            "replication",
            true,
            "role:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n".to_string(),
        ),
        // The simulation spends no processor time of its own to report.
        (
            "cpu",
            true,
            "used_cpu_sys:0.000000\r\nused_cpu_user:0.000000\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n".to_string(),
        ),
        ("modules", true, String::new()),
        (
            "commandstats",
            false,
            facts
                .command_stats
                .iter()
                .map(|(name, [calls, rejected, failed])| {
                    format!("cmdstat_{name}:calls={calls},usec=0,usec_per_call=0.00,rejected_calls={rejected},failed_calls={failed}\r\n")
                })
                .collect(),
        ),
        (
            "errorstats",
            true,
            facts
                .error_stats
                .iter()
                .map(|(code, count)| format!("errorstat_{code}:count={count}\r\n"))
                .collect(),
        ),
        ("latencystats", false, String::new()),
        ("cluster", true, "cluster_enabled:0\r\n".to_string()),
        (
            "keyspace",
            true,
            facts
                .dbs
                .iter()
                .map(|(index, keys, expires)| format!("db{index}:keys={keys},expires={expires},avg_ttl=0\r\n"))
                .collect(),
        ),
    ];
    let mut text = String::new();
    for (name, in_default, body) in blocks {
        if all || (default && in_default) || wanted.iter().any(|w| w == name) {
            if !text.is_empty() {
                text.push_str("\r\n");
            }
            let mut title: Vec<char> = name.chars().collect();
            title[0] = title[0].to_ascii_uppercase();
            let title: String = title.into_iter().collect();
            let title = if name == "cpu" { "CPU".to_string() } else { title };
            text.push_str(&format!("# {title}\r\n"));
            text.push_str(&body);
        }
    }
    Reply::bulk(text)
}

/// One `CLIENT LIST` line for a connection, in Redis 7.2's field order.
pub(crate) fn client_line(session: &super::session::ClientSession, command: &str) -> String {
    let text = |v: &Option<Bytes>| {
        v.as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    format!(
        "id={} addr={} laddr={} fd=8 name={} age=0 idle=0 flags={} db={} sub={} psub={} ssub={} multi={} watch={} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={command} user=default redir=-1 resp={} lib-name={} lib-ver={}\n",
        session.id,
        session.addr.as_deref().unwrap_or("127.0.0.1:0"),
        session.laddr.as_deref().unwrap_or("127.0.0.1:6379"),
        text(&session.name),
        match (session.is_subscribed(), session.in_multi()) {
            (true, true) => "Px",
            (true, false) => "P",
            (false, true) => "x",
            (false, false) => "N",
        },
        session.db,
        session.subscriptions.len(),
        session.patterns.len(),
        session.shard_subscriptions.len(),
        session.multi.as_ref().map_or(-1, |q| q.len() as i64),
        session.watched.len(),
        if session.resp3 { 3 } else { 2 },
        text(&session.lib_name),
        text(&session.lib_ver),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_redis_stringmatch() {
        let m = |p: &str, t: &str| glob_match(p.as_bytes(), t.as_bytes());
        assert!(m("*", ""));
        assert!(m("*", "anything"));
        assert!(m("lock:*", "lock:a"));
        assert!(!m("lock:*", "lck:a"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hallo"));
        assert!(m("a\\*b", "a*b"));
        assert!(!m("a\\*b", "axb"));
        assert!(m("*a*b*", "xxaxxbxx"));
        assert!(!m("*a*b", "xxbxxa"));
        assert!(m("**", "x"));
        assert!(!m("a[", "a"));
    }

    #[test]
    fn memory_values_take_redis_units() {
        assert_eq!(parse_memory("100"), Some(100));
        assert_eq!(parse_memory("1kb"), Some(1024));
        assert_eq!(parse_memory("1K"), Some(1000));
        assert_eq!(parse_memory("2mb"), Some(2 * 1024 * 1024));
        assert_eq!(parse_memory("1x"), None);
        assert_eq!(parse_memory(""), None);
    }
}

#[cfg(test)]
mod engine_tests {
    use crate::{ClientSession, EngineConfig, RedisEngine, Reply};
    use bytes::Bytes;

    fn run(e: &mut RedisEngine, s: &mut ClientSession, cmd: &[&str]) -> Reply {
        let args: Vec<Bytes> = cmd.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect();
        e.execute_as(s, &args, 1_700_000_000_123)
    }

    fn bulks(words: &[&str]) -> Reply {
        Reply::Array(Some(words.iter().map(|w| Reply::bulk(w.to_string())).collect()))
    }

    #[test]
    fn introspection_commands_answer_as_redis_7_2() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let mut s = ClientSession::new(7);
        for (k, v) in [("lock:a", "1"), ("lock:b", "x"), ("other", "y")] {
            run(&mut e, &mut s, &["SET", k, v]);
        }
        run(&mut e, &mut s, &["PEXPIRE", "lock:b", "10000"]);
        assert_eq!(run(&mut e, &mut s, &["KEYS", "lock:*"]), bulks(&["lock:a", "lock:b"]));
        assert_eq!(run(&mut e, &mut s, &["TIME"]), bulks(&["1700000000", "123000"]));
        assert_eq!(
            run(&mut e, &mut s, &["OBJECT", "ENCODING", "lock:a"]),
            Reply::bulk("int")
        );
        assert_eq!(
            run(&mut e, &mut s, &["OBJECT", "ENCODING", "lock:b"]),
            Reply::bulk("embstr")
        );
        assert_eq!(
            run(&mut e, &mut s, &["OBJECT", "REFCOUNT", "lock:a"]),
            Reply::Integer(2147483647)
        );
        assert_eq!(run(&mut e, &mut s, &["OBJECT", "ENCODING", "none"]), Reply::nil());
        // SCAN visits every key once over its iteration, whatever COUNT is.
        let mut seen = Vec::new();
        let mut cursor = "0".to_string();
        loop {
            let Reply::Array(Some(parts)) = run(&mut e, &mut s, &["SCAN", &cursor, "COUNT", "1"]) else {
                panic!("SCAN answers a pair");
            };
            let (Reply::Bulk(Some(next)), Reply::Array(Some(keys))) = (&parts[0], &parts[1]) else {
                panic!("SCAN answers [cursor, keys]");
            };
            seen.extend(keys.iter().cloned());
            cursor = String::from_utf8_lossy(next).into_owned();
            if cursor == "0" {
                break;
            }
        }
        seen.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(Reply::Array(Some(seen)), bulks(&["lock:a", "lock:b", "other"]));
        let Reply::Array(Some(matched)) = run(&mut e, &mut s, &["SCAN", "0", "MATCH", "o*", "COUNT", "100"]) else {
            panic!()
        };
        assert_eq!(matched[1], bulks(&["other"]));
        assert_eq!(run(&mut e, &mut s, &["SCAN", "x"]), Reply::error("ERR invalid cursor"));
        // INFO has the fields clients parse.
        let Reply::Bulk(Some(info)) = run(&mut e, &mut s, &["INFO"]) else {
            panic!()
        };
        let info = String::from_utf8_lossy(&info).into_owned();
        for field in [
            "redis_version:7.2.0",
            "arch_bits:64",
            "cluster_enabled:0",
            "role:master",
            "db0:keys=3,expires=1",
        ] {
            assert!(info.contains(field), "{field} in {info}");
        }
        let Reply::Bulk(Some(server)) = run(&mut e, &mut s, &["INFO", "server"]) else {
            panic!()
        };
        assert!(!String::from_utf8_lossy(&server).contains("# Keyspace"));
        // CONFIG: GET by pattern, SET all or nothing, maxmemory applied.
        assert_eq!(
            run(&mut e, &mut s, &["CONFIG", "GET", "maxmemory-policy"]),
            bulks(&["maxmemory-policy", "noeviction"])
        );
        assert_eq!(
            run(&mut e, &mut s, &["CONFIG", "SET", "maxmemory", "1mb", "timeout", "5"]),
            Reply::ok()
        );
        assert_eq!(e.maxmemory(), 1024 * 1024);
        assert_eq!(
            run(&mut e, &mut s, &["CONFIG", "GET", "timeout"]),
            bulks(&["timeout", "5"])
        );
        assert!(run(&mut e, &mut s, &["CONFIG", "SET", "timeout", "9", "nosuch", "1"]).is_error());
        assert_eq!(
            run(&mut e, &mut s, &["CONFIG", "GET", "timeout"]),
            bulks(&["timeout", "5"])
        );
        assert!(run(&mut e, &mut s, &["CONFIG", "SET", "databases", "4"]).is_error());
        // CLIENT LIST shows the asking connection with its name and protocol.
        run(&mut e, &mut s, &["CLIENT", "SETNAME", "me"]);
        run(&mut e, &mut s, &["HELLO", "3"]);
        let Reply::Bulk(Some(line)) = run(&mut e, &mut s, &["CLIENT", "LIST"]) else {
            panic!()
        };
        let line = String::from_utf8_lossy(&line).into_owned();
        assert!(
            line.starts_with("id=7 ") && line.contains(" name=me ") && line.contains(" resp=3 "),
            "{line}"
        );
        // EVAL_RO reads but refuses writes.
        assert_eq!(
            run(
                &mut e,
                &mut s,
                &["EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "lock:b"]
            ),
            Reply::bulk("x")
        );
        let Reply::Error(refused) = run(
            &mut e,
            &mut s,
            &["EVAL_RO", "return redis.call('DEL', KEYS[1])", "1", "lock:b"],
        ) else {
            panic!("a write in EVAL_RO is refused")
        };
        assert!(
            refused.starts_with("ERR Write commands are not allowed from read-only scripts."),
            "{refused}"
        );
        assert_eq!(run(&mut e, &mut s, &["EXISTS", "lock:b"]), Reply::Integer(1));
        assert_eq!(run(&mut e, &mut s, &["WAIT", "0", "0"]), Reply::Integer(0));
    }
}
