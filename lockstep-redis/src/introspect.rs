//! Commands that describe the server from the command table ([`super::table`]): `COMMAND`,
//! `COMMAND COUNT|INFO|DOCS|LIST|GETKEYS`, and the `HELP` subcommands; also `LASTSAVE`.
//!
//! `COMMAND INFO` answers Redis 7's ten fields per command (name, arity, flags, first key, last
//! key, step, ACL categories, tips, key specs, subcommands), with ACL categories, tips and key
//! specs empty (the table keeps none). `COMMAND DOCS` answers each command's group and nothing
//! of Redis's documentation text.

use super::keyspace::Keyspace;
use super::reply::Reply;
use super::spec::CommandSpec;
use bytes::Bytes;

fn info_of(spec: &CommandSpec, fullname: &str) -> Reply {
    let (first, last, step) = spec.keys.legacy();
    Reply::Array(Some(vec![
        Reply::bulk(fullname.to_string()),
        Reply::Integer(i64::from(spec.arity)),
        Reply::Array(Some(
            spec.flags
                .names()
                .into_iter()
                .map(|n| Reply::Status(n.to_string()))
                .collect(),
        )),
        Reply::Integer(first),
        Reply::Integer(last),
        Reply::Integer(step),
        Reply::Array(Some(Vec::new())),
        Reply::Array(Some(Vec::new())),
        Reply::Array(Some(Vec::new())),
        Reply::Array(Some(
            spec.subcommands
                .iter()
                .map(|s| info_of(s, &format!("{fullname}|{}", s.name)))
                .collect(),
        )),
    ]))
}

/// `COMMAND`: every command's `COMMAND INFO`.
pub(crate) fn command_all(rows: &[CommandSpec]) -> Reply {
    Reply::Array(Some(rows.iter().map(|c| info_of(c, c.name)).collect()))
}

/// `COMMAND COUNT`.
pub(crate) fn command_count(rows: &[CommandSpec]) -> Reply {
    Reply::Integer(rows.len() as i64)
}

/// The row of `rows` named `name` (any case).
fn row<'a>(rows: &'a [CommandSpec], name: &[u8]) -> Option<&'a CommandSpec> {
    rows.iter().find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
}

/// The row `name` names: a command, or `container|sub`.
fn find<'a>(rows: &'a [CommandSpec], name: &[u8]) -> Option<(&'a CommandSpec, String)> {
    let text = String::from_utf8_lossy(name).to_ascii_lowercase();
    match text.split_once('|') {
        None => row(rows, name).map(|c| (c, c.name.to_string())),
        Some((container, sub)) => {
            let c = row(rows, container.as_bytes())?;
            let s = c.subcommands.iter().find(|s| s.name == sub)?;
            Some((s, format!("{}|{}", c.name, s.name)))
        }
    }
}

/// `COMMAND INFO [name...]`: nil for an unknown name; every command without names.
pub(crate) fn command_info(rows: &[CommandSpec], args: &[Bytes]) -> Reply {
    if args.len() == 2 {
        return command_all(rows);
    }
    Reply::Array(Some(
        args[2..]
            .iter()
            .map(|n| find(rows, n).map_or(Reply::nil(), |(s, full)| info_of(s, &full)))
            .collect(),
    ))
}

fn docs_of(spec: &CommandSpec) -> Reply {
    let mut doc = vec![Reply::bulk("group"), Reply::bulk(spec.group.name())];
    if !spec.subcommands.is_empty() {
        doc.push(Reply::bulk("subcommands"));
        doc.push(Reply::Array(Some(
            spec.subcommands
                .iter()
                .flat_map(|s| [Reply::bulk(format!("{}|{}", spec.name, s.name)), docs_of(s)])
                .collect(),
        )));
    }
    Reply::Array(Some(doc))
}

/// `COMMAND DOCS [name...]`: name and documentation pairs (unknown names are left out).
pub(crate) fn command_docs(rows: &[CommandSpec], args: &[Bytes]) -> Reply {
    let specs: Vec<&CommandSpec> = if args.len() == 2 {
        rows.iter().collect()
    } else {
        args[2..].iter().filter_map(|n| row(rows, n)).collect()
    };
    Reply::Array(Some(
        specs
            .into_iter()
            .flat_map(|s| [Reply::bulk(s.name), docs_of(s)])
            .collect(),
    ))
}

/// `COMMAND LIST [FILTERBY MODULE name|ACLCAT cat|PATTERN pattern]`.
pub(crate) fn command_list(rows: &[CommandSpec], args: &[Bytes]) -> Reply {
    let pattern = match &args[2..] {
        [] => None,
        [by, kind, value] if by.eq_ignore_ascii_case(b"filterby") => {
            if kind.eq_ignore_ascii_case(b"pattern") {
                Some(value.clone())
            } else if kind.eq_ignore_ascii_case(b"module") || kind.eq_ignore_ascii_case(b"aclcat") {
                return Reply::Array(Some(Vec::new()));
            } else {
                return Reply::error(super::syntax::SYNTAX);
            }
        }
        _ => return Reply::error(super::syntax::SYNTAX),
    };
    let mut names = Vec::new();
    for c in rows {
        names.push(c.name.to_string());
        for s in c.subcommands {
            names.push(format!("{}|{}", c.name, s.name));
        }
    }
    Reply::Array(Some(
        names
            .into_iter()
            .filter(|n| {
                pattern
                    .as_ref()
                    .is_none_or(|p| super::admin::glob_match(p, n.as_bytes()))
            })
            .map(Reply::bulk)
            .collect(),
    ))
}

/// `COMMAND GETKEYS command arg...`: the keys of that command line, by the table.
pub(crate) fn command_getkeys(rows: &[CommandSpec], args: &[Bytes]) -> Reply {
    let line = &args[2..];
    let found = row(rows, &line[0]).and_then(|c| {
        if c.subcommands.is_empty() {
            Some(c)
        } else {
            let sub = line.get(1)?;
            c.subcommands
                .iter()
                .find(|s| s.name.as_bytes().eq_ignore_ascii_case(sub))
        }
    });
    let Some(spec) = found else {
        return Reply::error("ERR Invalid command specified");
    };
    if !spec.arity_ok(line.len()) {
        return Reply::error("ERR Invalid number of arguments specified for command");
    }
    let keys = spec.key_positions(line);
    // The sharded pub/sub commands' channels are key specs flagged `not_key` (for cluster
    // routing only): redis-server 7.0's GETKEYS leaves them out.
    let not_keys = spec.flags.has(super::spec::Flags::PUBSUB);
    if keys.is_empty() || not_keys {
        return Reply::error("ERR The command has no key arguments");
    }
    Reply::Array(Some(
        keys.into_iter().map(|i| Reply::Bulk(Some(line[i].clone()))).collect(),
    ))
}

fn help(lines: &[&str]) -> Reply {
    Reply::Array(Some(lines.iter().map(|l| Reply::Status((*l).to_string())).collect()))
}

pub(crate) fn command_help(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    help(&[
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "HELP",
        "    Print this help.",
    ])
}

pub(crate) fn object_help(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    help(&[
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Print this help.",
    ])
}

pub(crate) fn script_help(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    help(&[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "EXISTS <sha1> [<sha1> ...]",
        "FLUSH [ASYNC|SYNC]",
        "KILL",
        "LOAD <script>",
        "HELP",
    ])
}

pub(crate) fn function_help(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    help(&[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "DELETE <LIBRARY NAME>",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "FLUSH [ASYNC|SYNC]",
        "KILL",
        "STATS",
        "DUMP",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "HELP",
    ])
}

/// `LASTSAVE`: the server never saved; Redis answers its start time then, here the epoch.
pub(crate) fn lastsave(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    Reply::Integer(0)
}

/// `SAVE`: `OK`. lockstep's Redis keeps no RDB file: the data set lives as long as the run (and
/// `serve --durable` keeps its writes by its own log), so there is nothing more to write.
pub(crate) fn save(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    Reply::ok()
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: refused with the text Redis gives when it cannot
/// shut down. A client does not end a lockstep run: the run (or `serve`, on SIGINT/SIGTERM) ends
/// itself and writes its history.
pub(crate) fn shutdown(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    Reply::error("ERR Errors trying to SHUTDOWN. Check logs.")
}

/// `MEMORY USAGE key [SAMPLES count]`: the bytes the key counts for in `used_memory` (its name,
/// value and per-key overhead, as lockstep counts them), or nil without the key.
pub(crate) fn memory_usage(ks: &mut Keyspace, args: &[Bytes], now: i64) -> Reply {
    match &args[3..] {
        [] => {}
        [opt, n] if opt.eq_ignore_ascii_case(b"samples") => {
            if super::syntax::parse_ll(n).is_none() {
                return Reply::error(super::syntax::NOT_INTEGER);
            }
        }
        _ => return Reply::error(super::syntax::SYNTAX),
    }
    match ks.lookup(&args[2], now) {
        None => Reply::nil(),
        Some(entry) => {
            Reply::Integer((args[2].len() + super::keyspace::ENTRY_OVERHEAD_BYTES + entry.value.used_bytes()) as i64)
        }
    }
}

pub(crate) fn memory_help(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    help(&[
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP",
        "    Print this help.",
    ])
}

/// `CLUSTER ...`: lockstep's Redis runs without cluster support, as a redis-server started
/// without `cluster-enabled`.
pub(crate) fn cluster(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    Reply::error("ERR This instance has cluster support disabled")
}
