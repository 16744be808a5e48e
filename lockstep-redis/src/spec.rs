//! The types of the command table ([`super::table`]): a row ([`CommandSpec`]) with its flags,
//! key positions, lease effect, group and handler, and the helpers the rows are written with.
//! The rows are in `commands.rs`; the look-ups over them in `table.rs`.

use super::db::Db;
use super::keyspace::Keyspace;
use super::reply::Reply;
use bytes::Bytes;

/// A command's flags, as Redis's command table names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Flags(pub(crate) u32);

impl Flags {
    /// No flag.
    pub const EMPTY: Flags = Flags(0);
    /// `write`: changes data; a replica refuses it with `READONLY`.
    pub const WRITE: Flags = Flags(1);
    /// `readonly`: reads data only.
    pub const READONLY: Flags = Flags(1 << 1);
    /// `denyoom`: may grow memory, refused over `maxmemory`.
    pub const DENYOOM: Flags = Flags(1 << 2);
    /// `noscript`: not callable from a script.
    pub const NOSCRIPT: Flags = Flags(1 << 3);
    /// `blocking`: may block the connection until a key is ready or a timeout passes.
    pub const BLOCKING: Flags = Flags(1 << 4);
    /// `pubsub`: a publish/subscribe command.
    pub const PUBSUB: Flags = Flags(1 << 5);
    /// `admin`: a server administration command.
    pub const ADMIN: Flags = Flags(1 << 6);
    /// `fast`: O(1) or O(log n).
    pub const FAST: Flags = Flags(1 << 7);
    /// `loading`: allowed while the dataset loads.
    pub const LOADING: Flags = Flags(1 << 8);
    /// `stale`: allowed on a replica with stale data.
    pub const STALE: Flags = Flags(1 << 9);
    /// `may-replicate`: may propagate to replicas though not flagged `write` (`PUBLISH`).
    pub const MAY_REPLICATE: Flags = Flags(1 << 10);
    /// `movablekeys`: the key positions depend on the arguments ([`KeySpec::Numkeys`]).
    pub const MOVABLEKEYS: Flags = Flags(1 << 11);
    /// `no-multi`: not allowed inside `MULTI`.
    pub const NO_MULTI: Flags = Flags(1 << 12);
    /// `allow-busy`: allowed while a script runs.
    pub const ALLOW_BUSY: Flags = Flags(1 << 13);
    /// `no-auth`: allowed before authentication.
    pub const NO_AUTH: Flags = Flags(1 << 14);

    /// Every flag with its Redis name, in the order `COMMAND INFO` lists them.
    pub const NAMES: [(Flags, &'static str); 15] = [
        (Flags::WRITE, "write"),
        (Flags::READONLY, "readonly"),
        (Flags::DENYOOM, "denyoom"),
        (Flags::ADMIN, "admin"),
        (Flags::PUBSUB, "pubsub"),
        (Flags::NOSCRIPT, "noscript"),
        (Flags::BLOCKING, "blocking"),
        (Flags::LOADING, "loading"),
        (Flags::STALE, "stale"),
        (Flags::NO_MULTI, "no_multi"),
        (Flags::ALLOW_BUSY, "allow_busy"),
        (Flags::NO_AUTH, "no_auth"),
        (Flags::FAST, "fast"),
        (Flags::MAY_REPLICATE, "may_replicate"),
        (Flags::MOVABLEKEYS, "movablekeys"),
    ];

    /// Both sets of flags.
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    /// Whether every flag of `other` is set.
    pub const fn has(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The flags' Redis names.
    pub fn names(self) -> Vec<&'static str> {
        Flags::NAMES
            .iter()
            .filter(|(f, _)| self.has(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

/// Where a command's keys are among its arguments (`args[0]` is the name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySpec {
    /// No keys.
    None,
    /// Redis's legacy triple: the first key's index, the last's (negative counts from the end:
    /// -1 is the last argument) and the step between keys.
    Range {
        /// The first key's index.
        first: i32,
        /// The last key's index (negative: from the end).
        last: i32,
        /// The step between keys.
        step: i32,
    },
    /// The argument at `at` counts the keys, which follow it (`EVAL`, `FCALL`, `ZUNION`,
    /// `LMPOP`...; `at` is 2 for `EVAL script numkeys key...`).
    Numkeys {
        /// The index of the key count.
        at: usize,
    },
    /// The keys follow the `STREAMS` keyword, half of the remaining arguments (`XREAD`).
    Streams,
    /// `SORT`: the key at 1, and the argument after the last `STORE` (`LIMIT` skips two
    /// arguments, `BY` and `GET` one). `COMMAND INFO` says 1, 1, 1, as Redis does.
    Sort,
}

impl KeySpec {
    /// The legacy `(first, last, step)` triple `COMMAND INFO` answers (0, 0, 0 for movable keys).
    pub fn legacy(self) -> (i64, i64, i64) {
        match self {
            KeySpec::Range { first, last, step } => (i64::from(first), i64::from(last), i64::from(step)),
            KeySpec::Sort => (1, 1, 1),
            _ => (0, 0, 0),
        }
    }

    /// The indexes of the keys in `args` (the whole command, name first); out-of-range or
    /// unparsable positions give none.
    pub fn positions(self, args: &[impl AsRef<[u8]>]) -> Vec<usize> {
        let argc = args.len() as i64;
        match self {
            KeySpec::None => Vec::new(),
            KeySpec::Range { first, last, step } => {
                let first = i64::from(first);
                let last = if last < 0 {
                    argc + i64::from(last)
                } else {
                    i64::from(last)
                };
                let step = i64::from(step).max(1);
                let mut out = Vec::new();
                let mut i = first;
                while i <= last.min(argc - 1) && i >= 1 {
                    out.push(i as usize);
                    i += step;
                }
                out
            }
            KeySpec::Numkeys { at } => {
                let Some(n) = args
                    .get(at)
                    .and_then(|a| super::syntax::parse_ll(a.as_ref()))
                    .and_then(|n| usize::try_from(n).ok())
                else {
                    return Vec::new();
                };
                (at + 1..(at + 1).saturating_add(n).min(args.len())).collect()
            }
            KeySpec::Streams => {
                let Some(kw) = args.iter().position(|a| a.as_ref().eq_ignore_ascii_case(b"streams")) else {
                    return Vec::new();
                };
                let rest = args.len() - kw - 1;
                (kw + 1..kw + 1 + rest / 2).collect()
            }
            KeySpec::Sort => {
                if args.len() < 2 {
                    return Vec::new();
                }
                let mut store = None;
                let mut j = 2;
                while j < args.len() {
                    let a = args[j].as_ref();
                    if a.eq_ignore_ascii_case(b"limit") {
                        j += 2;
                    } else if a.eq_ignore_ascii_case(b"by") || a.eq_ignore_ascii_case(b"get") {
                        j += 1;
                    } else if a.eq_ignore_ascii_case(b"store") && j + 1 < args.len() {
                        store = Some(j + 1);
                        j += 1;
                    }
                    j += 1;
                }
                std::iter::once(1).chain(store).collect()
            }
        }
    }
}

/// Where a TTL comes from when a command stores a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlSource {
    /// `SET`'s options (`EX`, `PX`, `EXAT`, `PXAT`, `KEEPTTL`; none: no TTL).
    SetOptions,
    /// The stored key has no TTL (`SETNX`, `GETSET`, `MSET`).
    Clears,
    /// A relative TTL at argument `at`, in units of `unit_ms` ms (`SETEX`: 2, 1000; `PSETEX`: 2, 1).
    Relative {
        /// The argument's index.
        at: usize,
        /// Milliseconds per unit.
        unit_ms: i64,
    },
}

/// When a value-storing command stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreCondition {
    /// Always (or as its options say, for `SET`: `NX`, `XX`).
    Options,
    /// Only when the key is absent (`SETNX`, `MSETNX`): a lock acquisition.
    IfAbsent,
}

/// What a command does to a key's lease: the part of its meaning a lock's history reader needs.
/// The server records what each command actually did ([`lockstep_history::history::KeyEffect`]); this says
/// what a command *can* do, for histories of a real server where only the text is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseEffect {
    /// Nothing: a read, or a write that cannot create or end a string lock's lease by itself.
    None,
    /// Stores the string at argument `value_at` in the key at argument 1.
    SetsValue {
        /// The value's index.
        value_at: usize,
        /// Where the TTL comes from.
        ttl: TtlSource,
        /// When it stores.
        when: StoreCondition,
    },
    /// Deletes the keys it names.
    Deletes,
    /// Sets the key's expiry from argument 2: relative or absolute, in units of `unit_ms`.
    SetsExpiry {
        /// Milliseconds per unit (1000 for `EXPIRE`, 1 for `PEXPIRE`).
        unit_ms: i64,
        /// Whether the time is absolute (Unix time: `EXPIREAT`, `PEXPIREAT`).
        absolute: bool,
    },
    /// May set or clear the key's expiry by its options (`GETEX`).
    GetEx,
    /// Removes the key's expiry (`PERSIST`).
    Persists,
    /// Writes a hash field named by argument 2 (`HSET`, `HINCRBY`...): a hash lock's holder.
    WritesField,
    /// Deletes hash fields (`HDEL`).
    DeletesField,
    /// Moves or copies a key's whole state to another key or database (`RENAME`, `COPY`,
    /// `MOVE`, `SWAPDB`, `FLUSHDB`...): only the server's recorded effects tell what happened.
    Moves,
    /// Runs a script or function: only its text (when seen) or the server's effects tell.
    RunsScript,
}

/// A command's group, as `COMMAND DOCS` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// Strings.
    String,
    /// Keys of any type.
    Generic,
    /// Lists.
    List,
    /// Hashes.
    Hash,
    /// Sets.
    Set,
    /// Sorted sets.
    SortedSet,
    /// Bitmaps.
    Bitmap,
    /// Streams.
    Stream,
    /// HyperLogLogs.
    HyperLogLog,
    /// Scripting and functions.
    Scripting,
    /// Publish/subscribe.
    PubSub,
    /// Transactions.
    Transactions,
    /// Connections.
    Connection,
    /// The server.
    Server,
}

impl Group {
    /// Redis's name for the group.
    pub fn name(self) -> &'static str {
        match self {
            Group::String => "string",
            Group::Generic => "generic",
            Group::List => "list",
            Group::Hash => "hash",
            Group::Set => "set",
            Group::SortedSet => "sorted-set",
            Group::Bitmap => "bitmap",
            Group::Stream => "stream",
            Group::HyperLogLog => "hyperloglog",
            Group::Scripting => "scripting",
            Group::PubSub => "pubsub",
            Group::Transactions => "transactions",
            Group::Connection => "connection",
            Group::Server => "server",
        }
    }
}

/// A handler over the selected database's keyspace at the node's wall clock `now_ms`
/// (`args[0]` is the name; the arity has been checked).
pub type KeysHandler = fn(&mut Keyspace, &[Bytes], i64) -> Reply;
/// A handler over every database and the pub/sub state (lockstep's own commands only).
pub(crate) type DbHandler = fn(&mut Db, &[Bytes], i64) -> Reply;

/// How a command runs. A command [`register`](crate::table::register)ed from outside the crate
/// runs on the keyspace ([`Handler::Keys`]).
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Handler {
    /// On the selected database (callable from scripts unless `noscript`).
    Keys(KeysHandler),
    /// On the whole data set (databases, channels).
    #[allow(private_interfaces)]
    Db(DbHandler),
    /// By the engine itself: connection state, transactions, scripting, configuration.
    Engine,
    /// By the server loop (blocking, `WAIT`, `CLIENT KILL`...): the engine answers what it
    /// answers inside `MULTI`.
    Server(KeysHandler),
}

/// One row of the table.
#[derive(Clone, Copy)]
pub struct CommandSpec {
    /// The name, lower case (a subcommand's own name, without its container's).
    pub name: &'static str,
    /// Redis's arity: the argument count including the name; negative means at least `-arity`.
    pub arity: i32,
    /// Its flags.
    pub flags: Flags,
    /// Where its keys are.
    pub keys: KeySpec,
    /// What it can do to a key's lease.
    pub lease: LeaseEffect,
    /// Its group.
    pub group: Group,
    /// How it runs.
    pub handler: Handler,
    /// A container's subcommands (`CONFIG GET`...); empty for a plain command.
    pub subcommands: &'static [CommandSpec],
}

impl std::fmt::Debug for CommandSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandSpec")
            .field("name", &self.name)
            .field("arity", &self.arity)
            .field("flags", &self.flags.names())
            .field("keys", &self.keys)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl CommandSpec {
    /// Whether the command always writes (`write`).
    pub fn is_write(&self) -> bool {
        self.flags.has(Flags::WRITE)
    }

    /// Whether a script may call it.
    pub fn scriptable(&self) -> bool {
        !self.flags.has(Flags::NOSCRIPT)
    }

    /// Whether `argc` arguments (the name included) satisfy the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let arity = i64::from(self.arity);
        !((arity > 0 && argc != arity) || argc < -arity)
    }

    /// The indexes of its keys in `args`.
    pub fn key_positions(&self, args: &[impl AsRef<[u8]>]) -> Vec<usize> {
        self.keys.positions(args)
    }
}

/// Builds a row (the table is long: one line each).
pub const fn row(
    name: &'static str,
    arity: i32,
    flags: Flags,
    keys: KeySpec,
    lease: LeaseEffect,
    group: Group,
    handler: Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        lease,
        group,
        handler,
        subcommands: &[],
    }
}

/// A container command (`CONFIG`, `CLIENT`...): its rows are its subcommands.
pub(crate) const fn container(name: &'static str, group: Group, subcommands: &'static [CommandSpec]) -> CommandSpec {
    CommandSpec {
        name,
        arity: -2,
        flags: Flags(0),
        keys: KeySpec::None,
        lease: LeaseEffect::None,
        group,
        handler: Handler::Engine,
        subcommands,
    }
}

/// The single key at argument 1 (most commands).
pub(crate) const K1: KeySpec = KeySpec::Range {
    first: 1,
    last: 1,
    step: 1,
};
/// Every argument from 1 a key (`DEL`, `EXISTS`, `MGET`...).
pub(crate) const KALL: KeySpec = KeySpec::Range {
    first: 1,
    last: -1,
    step: 1,
};
/// Keys at 1 and 2 (`RENAME`, `LMOVE`, `COPY`, `SMOVE`...).
pub(crate) const K12: KeySpec = KeySpec::Range {
    first: 1,
    last: 2,
    step: 1,
};
/// Every argument from 1 but the last (`BLPOP key... timeout`).
pub(crate) const KALL_BUT_LAST: KeySpec = KeySpec::Range {
    first: 1,
    last: -2,
    step: 1,
};
/// Every other argument from 1 (`MSET k v k v`).
pub(crate) const KPAIRS: KeySpec = KeySpec::Range {
    first: 1,
    last: -1,
    step: 2,
};
